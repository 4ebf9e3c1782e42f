"""Convolution forward with torch.nn.functional's signatures (spec §3.0-3.9): conv1d, conv2d,
conv3d, the restricted 2-D ops (pointwise_conv2d, depthwise_conv2d, grouped_conv2d,
dilated_conv2d), conv2d_bias_relu and conv1d_causal.

The ops are torch.ops.solops.<op>, registered in C++ (src/torch/conv.cpp) with ATen's conv schemas:
an int parameter broadcasts over the axes, and a string padding ('valid' or 'same') goes to the
op's `.padding` overload, as aten::conv2d.padding. Their fake implementations below give
torch.compile the outputs, on symbolic sizes too, and apply the library's rules at trace time
(src/conv/conv_rules.cpp), in the order the binding meets them.
"""

import torch

from ._eager import eager
from ._rules import (INT_MAX, check_float_dtype, check_known_dtype, check_product, check_tensor, dtype_name,
                     is_strictly_channels_last, per_axis, require, shape_string)

# The public functions; solops/__init__.py exports every family's.
__all__ = ["conv1d", "conv1d_causal", "conv2d", "conv2d_bias_relu", "conv3d", "depthwise_conv2d", "dilated_conv2d",
           "grouped_conv2d", "pointwise_conv2d"]

_ops = torch.ops.solops


def _pair(name):
    packet = getattr(_ops, name)
    return eager(packet.default), eager(packet.padding)


_conv1d, _conv1d_padding = _pair("conv1d")
_conv2d, _conv2d_padding = _pair("conv2d")
_conv3d, _conv3d_padding = _pair("conv3d")
_pointwise_conv2d, _pointwise_conv2d_padding = _pair("pointwise_conv2d")
_depthwise_conv2d, _depthwise_conv2d_padding = _pair("depthwise_conv2d")
_grouped_conv2d, _grouped_conv2d_padding = _pair("grouped_conv2d")
_dilated_conv2d, _dilated_conv2d_padding = _pair("dilated_conv2d")
_conv2d_bias_relu, _conv2d_bias_relu_padding = _pair("conv2d_bias_relu")
_conv1d_causal = eager(_ops.conv1d_causal.default)

def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """F.conv1d: input [N, C_in, L] or [C_in, L], weight [C_out, C_in / groups, kW]; padding an int, a
    1-tuple, 'valid' or 'same'. Ops solops::conv1d, solops::conv1d.padding."""
    op = _conv1d_padding if isinstance(padding, str) else _conv1d
    return op(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """F.conv2d: input [N, C_in, H, W] or [C_in, H, W], contiguous or channels_last (the output then
    channels_last too); padding an int, a pair, 'valid' or 'same'. Ops solops::conv2d(.padding)."""
    op = _conv2d_padding if isinstance(padding, str) else _conv2d
    return op(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """F.conv3d: input [N, C_in, D, H, W] or [C_in, D, H, W]. Ops solops::conv3d(.padding)."""
    op = _conv3d_padding if isinstance(padding, str) else _conv3d
    return op(input, weight, bias, stride, padding, dilation, groups)


def pointwise_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv2d with a 1x1 kernel (PointwiseConv2d). Ops solops::pointwise_conv2d(.padding)."""
    op = _pointwise_conv2d_padding if isinstance(padding, str) else _pointwise_conv2d
    return op(input, weight, bias, stride, padding, dilation, groups)


def depthwise_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv2d with groups == C_in (DepthwiseConv2d; pass groups=C_in, as to F.conv2d). Ops
    solops::depthwise_conv2d(.padding)."""
    op = _depthwise_conv2d_padding if isinstance(padding, str) else _depthwise_conv2d
    return op(input, weight, bias, stride, padding, dilation, groups)


def grouped_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv2d with 1 < groups < C_in (GroupedConv2d). Ops solops::grouped_conv2d(.padding)."""
    op = _grouped_conv2d_padding if isinstance(padding, str) else _grouped_conv2d
    return op(input, weight, bias, stride, padding, dilation, groups)


def dilated_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv2d with a dilation other than 1 on some axis (DilatedConv2d). Ops
    solops::dilated_conv2d(.padding)."""
    op = _dilated_conv2d_padding if isinstance(padding, str) else _dilated_conv2d
    return op(input, weight, bias, stride, padding, dilation, groups)


def conv2d_bias_relu(input, weight, bias, stride=1, padding=0, dilation=1, groups=1):
    """F.relu(F.conv2d(input, weight, bias, ...)) in one pass: bias required, the ReLU in f32 after the
    bias and before the one rounding (relu(NaN) is NaN). Ops solops::conv2d_bias_relu(.padding)."""
    op = _conv2d_bias_relu_padding if isinstance(padding, str) else _conv2d_bias_relu
    return op(input, weight, bias, stride, padding, dilation, groups)


def conv1d_causal(input, weight, bias=None, stride=1, dilation=1, groups=1):
    """F.conv1d(F.pad(input, (dilation * (kW - 1), 0)), weight, bias, stride, 0, dilation, groups):
    output t sees inputs up to t * stride only; L_out = (L_in - 1) // stride + 1. Depthwise with
    kW <= 4 (groups = C_in = C_out, Mamba's short convolutions) runs a copy-shaped kernel. Op
    solops::conv1d_causal."""
    return _conv1d_causal(input, weight, bias, stride, dilation, groups)


# ---- the fakes ---------------------------------------------------------------------------------

_SPATIAL = {"conv1d": 1, "conv1d_causal": 1, "conv3d": 3}  # every other op is 2-D
_INPUT_LAYOUTS = {1: "2-D [C, L] or 3-D [N, C, L]", 2: "3-D [C, H, W] or 4-D [N, C, H, W]",
                  3: "4-D [C, D, H, W] or 5-D [N, C, D, H, W]"}
_WEIGHT_LAYOUTS = {1: "3-D [C_out, C_in / groups, kW]", 2: "4-D [C_out, C_in / groups, kH, kW]",
                   3: "5-D [C_out, C_in / groups, kD, kH, kW]"}
_AXIS_NAMES = {1: ("L",), 2: ("H", "W"), 3: ("D", "H", "W")}


def _device_name(t):
    return "cpu" if t.device.type == "cpu" else f"{t.device.type}:{t.device.index or 0}"


def _restriction(op, input_channels, groups, kernel, dilation, weight):
    """check_op_restriction: the rule each specialized op adds."""
    if op == "pointwise_conv2d":
        require((kernel[0] == 1) & (kernel[1] == 1), op, "the kernel must be 1x1, got ", kernel[0], "x", kernel[1],
                " (weight ", shape_string(weight.shape), ")")
    elif op == "depthwise_conv2d":
        require(groups == input_channels, op, "groups = ", groups, " must equal the input's ", input_channels,
                " channels (one group a channel)")
    elif op == "grouped_conv2d":
        require(groups > 1 and groups < input_channels, op, "groups = ", groups, " must be > 1 and < the input's ",
                input_channels, " channels (1 is conv2d, one a channel is depthwise_conv2d)")
    elif op == "dilated_conv2d":
        require(dilation[0] != 1 or dilation[1] != 1, op, "dilation (", dilation[0], ", ", dilation[1],
                ") must differ from 1 on some axis (else this is conv2d)")


def _output_shape(op, x, weight, bias, stride, padding, dilation, groups, mode):
    """resolve_conv: the output shape, with every rule the shape decides. mode: "explicit", "valid",
    "same" or "causal"."""
    spatial = _SPATIAL.get(op, 2)
    rank = x.dim()
    require(rank in (spatial + 1, spatial + 2), op, "input must be ", _INPUT_LAYOUTS[spatial], ", got ", rank, "-D ",
            shape_string(x.shape))
    require(weight.dim() == spatial + 2, op, "weight must be ", _WEIGHT_LAYOUTS[spatial], ", got ", weight.dim(),
            "-D ", shape_string(weight.shape))
    for d in range(rank - spatial - 1, rank):
        require(x.shape[d] > 0, op, "input ", shape_string(x.shape), " has an empty dim ", d,
                " (only the batch dim may be 0)")
    for d in range(weight.dim()):
        require(weight.shape[d] > 0, op, "weight ", shape_string(weight.shape), " has an empty dim ", d)
    in_plane = 1
    for size in x.shape[rank - spatial:]:
        in_plane = in_plane * size
    require(in_plane <= INT_MAX, op, "input ", shape_string(x.shape),
            " has planes of 2^31 or more elements: 32-bit in-plane indexing would overflow")
    weight_elements = 1
    for size in weight.shape:
        weight_elements = weight_elements * size
    require(weight_elements <= INT_MAX, op, "weight ", shape_string(weight.shape),
            " has 2^31 or more elements: 32-bit weight indexing would overflow")
    in_channels, out_channels = x.shape[rank - spatial - 1], weight.shape[0]
    require(groups >= 1, op, "groups = ", groups, " must be >= 1")
    require(in_channels % groups == 0, op, "groups = ", groups, " must divide the input's ", in_channels, " channels")
    require(out_channels % groups == 0, op, "groups = ", groups, " must divide the weight's ", out_channels,
            " output channels")
    require(in_channels // groups == weight.shape[1], op, "weight ", shape_string(weight.shape), " takes ",
            weight.shape[1], " input channels a group, but the input's ", in_channels, " channels in ", groups,
            " groups are ", in_channels // groups, " a group")
    kernel = weight.shape[2:]
    _restriction(op, in_channels, groups, kernel, dilation, weight)
    if op == "conv2d_bias_relu":
        require(bias is not None, op, "bias is required (relu(conv2d(input, weight) + bias))")
    if bias is not None:
        require((bias.dim() == 1) and (bias.shape[0] == out_channels), op, "bias: shape ", shape_string(bias.shape),
                " must be ", shape_string([out_channels]), " (one value an output channel)")
    labels = [""] if spatial == 1 else [f"[{a}]" for a in range(spatial)]
    out, out_plane = [], 1
    for a in range(spatial):
        label, axis = labels[a], _AXIS_NAMES[spatial][a]
        size, k, s, d = x.shape[rank - spatial + a], kernel[a], stride[a], dilation[a]
        require(s >= 1, op, "stride", label, " = ", s, " must be >= 1")
        require(d >= 1, op, "dilation", label, " = ", d, " must be >= 1")
        require(s <= INT_MAX and d <= INT_MAX, op, "stride", label, " and dilation", label,
                " must be below 2^31 (32-bit indexing)")
        if mode == "explicit":
            require(padding[a] >= 0, op, "padding", label, " = ", padding[a], " must be >= 0")
            require(padding[a] <= INT_MAX, op, "padding", label, " = ", padding[a],
                    " must be below 2^31 (32-bit indexing)")
        require(mode != "same" or s == 1, op, "padding='same' needs stride 1 on every axis, got stride", label, " = ",
                s)
        if mode == "causal":
            before, after = d * (k - 1), 0
        elif mode == "valid":
            before, after = 0, 0
        elif mode == "same":
            before = d * (k - 1) // 2
            after = d * (k - 1) - before
        else:
            before = after = padding[a]
        extent = size + before + after
        require(extent <= INT_MAX, op, "input ", axis, " = ", size, " padded by ", before, " + ", after,
                " is 2^31 or more: 32-bit indexing would overflow")
        window = d * (k - 1) + 1
        require(window <= extent, op, "output size along ", axis, " would be 0: the kernel spans ", window,
                " (dilation ", d, " * (", k, " - 1) + 1), more than the padded input (", size, " + ", before, " + ",
                after, ")")
        out.append((extent - window) // s + 1)
        out_plane = out_plane * out[-1]
        require(out_plane <= INT_MAX, op, "output planes would have 2^31 or more elements: 32-bit in-plane ",
                "indexing would overflow")
    shape = [*x.shape[: rank - spatial - 1], out_channels, *out]
    check_product(op, "output", shape)
    return shape


def _check_call(op, x, weight, bias):
    """validate_conv's tensor checks, in its order: the input, then the weight and bias (one device,
    the input's dtype, their layouts)."""
    channels_last = _SPATIAL.get(op, 2) == 2
    check_tensor(op, "input", x, channels_last)
    check_float_dtype(op, "input", x)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        require(t.device == x.device, op, name, " is on ", _device_name(t), " but the input on ", _device_name(x),
                ": every tensor of the call must be on one device")
        require(t.dtype == x.dtype, op, name, ": dtype ", dtype_name(t.dtype), " must be the input's, ",
                dtype_name(x.dtype))
        check_tensor(op, name, t, channels_last and name == "weight")


def _fake(op, x, weight, bias, stride, padding, dilation, groups, mode):
    """The binding's order: the per-axis parameters, x's dtype, the shape rule, the tensors' dtypes,
    then the op's own checks; the output in x's layout."""
    spatial = _SPATIAL.get(op, 2)
    stride = per_axis(op, "stride", stride, spatial)
    dilation = per_axis(op, "dilation", dilation, spatial)
    if mode == "explicit":
        padding = per_axis(op, "padding", padding, spatial)
    elif mode == "string":
        require(padding in ("valid", "same"), op, "padding = '", padding, "' must be 'valid' or 'same' (or sizes)")
        mode = padding
    check_known_dtype(op, "input", x)
    shape = _output_shape(op, x, weight, bias, stride, padding, dilation, groups, mode)
    check_known_dtype(op, "weight", weight)
    if bias is not None:
        check_known_dtype(op, "bias", bias)
    _check_call(op, x, weight, bias)
    if spatial == 2 and is_strictly_channels_last(x):
        return torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=torch.channels_last)
    return x.new_empty(shape)


def _register_fakes(op):
    @torch.library.register_fake(f"solops::{op}")
    def _(input, weight, bias=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
        return _fake(op, input, weight, bias, stride, padding, dilation, groups, "explicit")

    @torch.library.register_fake(f"solops::{op}.padding")
    def _(input, weight, bias=None, stride=(1,), padding="valid", dilation=(1,), groups=1):
        return _fake(op, input, weight, bias, stride, padding, dilation, groups, "string")


for _op in ("conv1d", "conv2d", "conv3d", "pointwise_conv2d", "depthwise_conv2d", "grouped_conv2d", "dilated_conv2d",
            "conv2d_bias_relu"):
    _register_fakes(_op)


@torch.library.register_fake("solops::conv1d_causal")
def _(input, weight, bias=None, stride=(1,), dilation=(1,), groups=1):
    return _fake("conv1d_causal", input, weight, bias, stride, None, dilation, groups, "causal")
