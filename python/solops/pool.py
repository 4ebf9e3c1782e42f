"""Pooling ops with torch.nn.functional's signatures (and mean_pooling, which PyTorch lacks).

The ops are torch.ops.solops.<op>, registered in C++ (src/torch/pool.cpp) with ATen's schemas: an
int window parameter broadcasts over the axes and an empty stride means the kernel's. Their fake
implementations below give torch.compile the outputs, on symbolic sizes too, and apply the
library's rules at trace time (src/pool/pool_rules.cpp, adaptive_pool2d.cpp, mean_pooling.cpp).
"""

import torch

from ._eager import eager
from ._rules import (INT_MAX, check_dtype, check_float_dtype, check_known_dtype, check_product, check_tensor, per_axis,
                     require, shape_string)

# The public functions; solops/__init__.py exports every family's.
__all__ = ["adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d",
           "max_pool2d", "max_pool3d", "mean_pooling", "prepare_chunk_indices"]

_ops = torch.ops.solops
_max_pool1d, _max_pool1d_with_indices = eager(_ops.max_pool1d.default), eager(_ops.max_pool1d_with_indices.default)
_max_pool2d, _max_pool2d_with_indices = eager(_ops.max_pool2d.default), eager(_ops.max_pool2d_with_indices.default)
_max_pool3d, _max_pool3d_with_indices = eager(_ops.max_pool3d.default), eager(_ops.max_pool3d_with_indices.default)
_avg_pool1d, _avg_pool2d = eager(_ops.avg_pool1d.default), eager(_ops.avg_pool2d.default)
_avg_pool3d = eager(_ops.avg_pool3d.default)
_adaptive_max_pool2d = eager(_ops.adaptive_max_pool2d.default)
_adaptive_max_pool2d_with_indices = eager(_ops.adaptive_max_pool2d_with_indices.default)
_adaptive_avg_pool2d = eager(_ops.adaptive_avg_pool2d.default)
_mean_pooling = eager(_ops.mean_pooling.default)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """F.max_pool1d (indices: int64 positions along L). Ops solops::max_pool1d(_with_indices)."""
    op = _max_pool1d_with_indices if return_indices else _max_pool1d
    return op(input, kernel_size, [] if stride is None else stride, padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """F.avg_pool1d. Op solops::avg_pool1d."""
    return _avg_pool1d(input, kernel_size, [] if stride is None else stride, padding, ceil_mode, count_include_pad)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """F.max_pool2d (indices: int64 in-plane positions h * W + w). Ops solops::max_pool2d(_with_indices)."""
    op = _max_pool2d_with_indices if return_indices else _max_pool2d
    return op(input, kernel_size, [] if stride is None else stride, padding, dilation, ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """F.avg_pool2d. Op solops::avg_pool2d."""
    return _avg_pool2d(input, kernel_size, [] if stride is None else stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """F.max_pool3d (indices: int64 (d * H + h) * W + w). Ops solops::max_pool3d(_with_indices)."""
    op = _max_pool3d_with_indices if return_indices else _max_pool3d
    return op(input, kernel_size, [] if stride is None else stride, padding, dilation, ceil_mode)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """F.avg_pool3d. Op solops::avg_pool3d."""
    return _avg_pool3d(input, kernel_size, [] if stride is None else stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


def _output_size(input, output_size):
    """F.adaptive_*_pool2d's output_size: an int, or a pair whose None entries keep the input's size."""
    if isinstance(output_size, int):
        return [output_size, output_size]
    # The common pair of sizes goes to the op as given: this runs on every eager call.
    if len(output_size) == 2:
        height, width = output_size
        if height is not None and width is not None:
            return output_size
    sizes = list(output_size)
    return [input.shape[axis - len(sizes)] if size is None else size for axis, size in enumerate(sizes)]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """F.adaptive_max_pool2d (indices: in-plane positions). Ops solops::adaptive_max_pool2d(_with_indices)."""
    op = _adaptive_max_pool2d_with_indices if return_indices else _adaptive_max_pool2d
    return op(input, _output_size(input, output_size))


def adaptive_avg_pool2d(input, output_size):
    """F.adaptive_avg_pool2d. Op solops::adaptive_avg_pool2d."""
    return _adaptive_avg_pool2d(input, _output_size(input, output_size))


def mean_pooling(x, chunk_size, offsets=None, indices=None, *, check_metadata=True):
    """Chunked mean along the sequence axis of x [B, S, H, D] (f32/f16/bf16, contiguous, CUDA).

    Uniform mode (no offsets/indices): output [B, ceil(S / chunk_size), H, D], the last chunk
    averaged over its real length. Ragged mode: int32 offsets [NS + 1] (sequence boundaries on the
    S axis, shared by every batch row) and int32 indices [NC, 2] of (sequence, chunk) pairs, as
    prepare_chunk_indices builds them; output [B, NC, H, D]. chunk_size: > 0, a multiple of 32.

    check_metadata (ragged mode): True copies offsets and indices to the host and synchronizes
    the stream to check them against the enumeration (RuntimeError on a mismatch; refused while a
    CUDA graph is being captured). False trusts them; a chunk they place outside x comes out NaN.
    Op: solops::mean_pooling.
    """
    return _mean_pooling(x, chunk_size, offsets, indices, check_metadata)


def prepare_chunk_indices(offsets, chunk_size):
    """The indices [NC, 2] (int32, on offsets' device) of every chunk of every sequence, sequence-major
    and in order: (s, k) for k < ceil(len_s / chunk_size); empty sequences have none."""
    lengths = (offsets[1:] - offsets[:-1]).long()
    counts = (lengths + chunk_size - 1) // chunk_size
    sequences = torch.repeat_interleave(torch.arange(counts.numel(), device=offsets.device), counts)
    first_chunks = torch.cumsum(counts, 0) - counts
    chunks = torch.arange(sequences.numel(), device=offsets.device) - torch.repeat_interleave(first_chunks, counts)
    return torch.stack([sequences, chunks], 1).to(torch.int32)


# ---- the fakes ---------------------------------------------------------------------------------

_LAYOUTS = {1: "2-D [C, L] or 3-D [N, C, L]", 2: "3-D [C, H, W] or 4-D [N, C, H, W]",
            3: "4-D [C, D, H, W] or 5-D [N, C, D, H, W]"}
_AXIS_NAMES = {1: ("L",), 2: ("H", "W"), 3: ("D", "H", "W")}


def _layout(op, x, spatial, layouts):
    """The [N, C, *spatial] or unbatched [C, *spatial] input (resolve_layout): the batch size, if any."""
    rank = x.dim()
    require(rank in (spatial + 1, spatial + 2), op, "input must be ", layouts, ", got ", rank, "-D ",
            shape_string(x.shape))
    for d in range(rank - spatial - 1, rank):
        require(x.shape[d] > 0, op, "input ", shape_string(x.shape), " has an empty dim ", d,
                " (only the batch dim may be 0)")


def _pooled_size(size, kernel, stride, pad, dilation, ceil_mode):
    out = (size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    # In ceil mode the last window must start inside the input or the left padding.
    return torch.sym_ite((out - 1) * stride >= size + pad, out - 1, out) if ceil_mode else out


def _axis_size(op, kind, size, kernel, stride, pad, dilation, ceil_mode, label, axis):
    """resolve_axis: one axis's parameters against its input size; its output size."""
    require(kernel >= 1, op, "kernel_size", label, " = ", kernel, " must be >= 1")
    require(stride >= 1, op, "stride", label, " = ", stride, " must be >= 1")
    require(dilation >= 1, op, "dilation", label, " = ", dilation, " must be >= 1")
    require(kind == "max" or dilation == 1, op, "dilation", label, " = ", dilation, ": avg-pool has no dilation (must be 1)")
    require(pad >= 0, op, "padding", label, " = ", pad, " must be >= 0")
    require(pad <= kernel // 2, op, "padding", label, " = ", pad, " must be at most half the kernel size (kernel_size",
            label, " = ", kernel, ")")
    require(kernel <= INT_MAX and stride <= INT_MAX and dilation <= INT_MAX and dilation * (kernel - 1) < INT_MAX, op,
            "window of axis ", axis, " is too large for 32-bit in-plane indexing")
    out = _pooled_size(size, kernel, stride, pad, dilation, ceil_mode)
    require(out > 0, op, "output size along ", axis, " would be ", out, ": the window (kernel ", kernel, ", dilation ",
            dilation, ") is larger than the padded input (", size, " + 2*", pad, ")")
    # Only windows that start in the left padding can miss the input: their first tap past it must
    # land inside.
    for o in range(-(-pad // stride)):
        start = o * stride - pad
        first_tap = (-start + dilation - 1) // dilation
        require((o >= out) | (start + first_tap * dilation < size), op, "window ", o, " along ", axis,
                " has no element inside the input (kernel ", kernel, ", dilation ", dilation, ", padding ", pad,
                ", input ", size, ")")
    return out


def _window_shape(op, kind, x, axes, kernel_size, stride, padding, dilation, ceil_mode, divisor_override=None):
    """The output shape of a 1-D to 3-D pool, with every rule the op applies before it runs."""
    kernel_size = per_axis(op, "kernel_size", kernel_size, axes)
    stride = per_axis(op, "stride", stride, axes) if len(stride) else kernel_size
    padding = per_axis(op, "padding", padding, axes)
    dilation = per_axis(op, "dilation", dilation, axes)
    check_known_dtype(op, "x", x)
    _layout(op, x, axes, _LAYOUTS[axes])
    labels = [""] if axes == 1 else [f"[{a}]" for a in range(axes)]
    spatial = x.shape[x.dim() - axes:]

    def plane_limit(sizes):
        # The input plane's limit comes first: it bounds every size the window rules compute with.
        plane = 1
        for size in sizes:
            plane = plane * size
        require(plane <= INT_MAX, op, "input ", shape_string(x.shape),
                " has planes of 2^31 or more elements: 32-bit in-plane indexing would overflow")

    plane_limit(spatial)
    out = [_axis_size(op, kind, size, *window, ceil_mode, label, axis)
           for size, *window, label, axis in zip(spatial, kernel_size, stride, padding, dilation, labels,
                                                 _AXIS_NAMES[axes])]
    plane_limit(out)
    shape = [*x.shape[: x.dim() - axes], *out]
    check_product(op, "output", shape)
    if kind == "avg" and divisor_override is not None:
        require(divisor_override != 0, op, "divisor_override must not be zero")
        require(-INT_MAX - 1 <= divisor_override <= INT_MAX, op, "divisor_override ", divisor_override,
                " does not fit in 32 bits")
    if kind == "avg" and axes == 3:
        # As PyTorch's avg_pool3d: every input size at least its kernel size.
        require((spatial[0] >= kernel_size[0]) & (spatial[1] >= kernel_size[1]) & (spatial[2] >= kernel_size[2]), op,
                "input (D ", spatial[0], ", H ", spatial[1], ", W ", spatial[2], ") is smaller than the kernel (",
                kernel_size[0], ", ", kernel_size[1], ", ", kernel_size[2], ") on some axis; avg_pool3d needs every ",
                "input size >= its kernel size, as PyTorch's does")
    _check_input(op, x)
    return shape


def _check_input(op, x):
    """validate_pool_tensors: the input the kernel reads."""
    check_tensor(op, "input", x)
    check_float_dtype(op, "input", x)


def _max_outputs(x, shape, with_indices):
    y = x.new_empty(shape)
    return (y, x.new_empty(shape, dtype=torch.int64)) if with_indices else y


def _register_window_fakes(axes):
    max_name, avg_name = f"max_pool{axes}d", f"avg_pool{axes}d"

    def max_fake(with_indices):
        def fake(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
            shape = _window_shape(max_name, "max", x, axes, kernel_size, stride, padding, dilation, ceil_mode)
            return _max_outputs(x, shape, with_indices)
        return fake

    torch.library.register_fake(f"solops::{max_name}", max_fake(False))
    torch.library.register_fake(f"solops::{max_name}_with_indices", max_fake(True))
    if axes == 1:
        @torch.library.register_fake(f"solops::{avg_name}")
        def _(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True):
            return x.new_empty(_window_shape(avg_name, "avg", x, 1, kernel_size, stride, padding, [1], ceil_mode))
    else:
        @torch.library.register_fake(f"solops::{avg_name}")
        def _(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True, divisor_override=None):
            return x.new_empty(_window_shape(avg_name, "avg", x, axes, kernel_size, stride, padding, [1], ceil_mode,
                                             divisor_override))


for _axes in (1, 2, 3):
    _register_window_fakes(_axes)


def _adaptive_shape(op, x, output_size):
    """resolve_adaptive_pool2d (its shape rule names the op adaptive_pool2d, as the C++ one does)."""
    output_size = per_axis(op, "output_size", output_size, 2)
    check_known_dtype(op, "x", x)
    rule = "adaptive_pool2d"
    _layout(rule, x, 2, _LAYOUTS[2])
    for axis, size in enumerate(output_size):
        require(size >= 1, rule, "output_size[", axis, "] = ", size, " must be >= 1")
    require((x.shape[-2] * x.shape[-1] <= INT_MAX) & (output_size[0] <= INT_MAX) & (output_size[1] <= INT_MAX)
            & (output_size[0] * output_size[1] <= INT_MAX), rule, "input ", shape_string(x.shape), " or output size (",
            output_size[0], ", ", output_size[1], ") has planes of 2^31 or more elements: 32-bit in-plane indexing ",
            "would overflow")
    shape = [*x.shape[:-2], *output_size]
    check_product(rule, "output", shape)
    _check_input(op, x)
    return shape


@torch.library.register_fake("solops::adaptive_max_pool2d")
def _(x, output_size):
    return _max_outputs(x, _adaptive_shape("adaptive_max_pool2d", x, output_size), False)


@torch.library.register_fake("solops::adaptive_max_pool2d_with_indices")
def _(x, output_size):
    return _max_outputs(x, _adaptive_shape("adaptive_max_pool2d", x, output_size), True)


@torch.library.register_fake("solops::adaptive_avg_pool2d")
def _(x, output_size):
    return x.new_empty(_adaptive_shape("adaptive_avg_pool2d", x, output_size))


_CHUNK_MULTIPLE = 32


def _mean_pooling_shape(x, chunk_size, offsets, indices):
    """resolve_mean_pooling, then the op's tensor checks."""
    op = "mean_pooling"
    check_known_dtype(op, "x", x)
    require(x.dim() == 4, op, "x must be 4-D [B, S, H, D], got ", x.dim(), "-D ", shape_string(x.shape))
    batch, seq_len, heads, head_dim = x.shape
    for d in range(1, 4):
        require(x.shape[d] > 0, op, "x ", shape_string(x.shape), " has an empty dim ", d, " (only the batch B may be 0)")
    require(chunk_size >= 1, op, "chunk_size = ", chunk_size, " must be >= 1")
    require(chunk_size % _CHUNK_MULTIPLE == 0, op, "chunk_size = ", chunk_size, " must be a multiple of ",
            _CHUNK_MULTIPLE)
    require(chunk_size <= INT_MAX, op, "chunk_size = ", chunk_size, " exceeds 2^31 - 1")
    require(heads * head_dim <= INT_MAX, op, "x ", shape_string(x.shape),
            " has tokens of H * D >= 2^31 elements: 32-bit in-token indexing would overflow")
    chunks = (seq_len + chunk_size - 1) // chunk_size
    if offsets is not None and indices is not None:
        # Ragged mode's sizes from the metadata's leading dims, as the binding reads them.
        sequences = offsets.shape[0] - 1 if offsets.dim() else -1
        listed = indices.shape[0] if indices.dim() else 0
        require(sequences >= 1, op, "offsets must hold NS + 1 >= 2 values (offsets[0] = 0 ... offsets[NS] = S), got ",
                sequences + 1)
        require(seq_len <= INT_MAX, op, "x has S = ", seq_len, " tokens, more than int32 offsets can address")
        most = chunks + sequences - 1
        require((listed >= chunks) & (listed <= most), op, "indices lists ", listed, " chunks, but ", sequences,
                " sequences of S = ", seq_len, " tokens in all make between ", chunks, " and ", most,
                " chunks of chunk_size ", chunk_size)
        chunks = listed
    check_product(op, "output", [batch, chunks, heads, head_dim])
    check_tensor(op, "x", x)
    check_float_dtype(op, "x", x)
    require((offsets is None) == (indices is None), op, "offsets and indices go together: pass both (ragged mode) or ",
            "neither (uniform mode), got only ", "offsets" if offsets is not None else "indices")
    if offsets is not None:
        check_tensor(op, "offsets", offsets)
        check_dtype(op, "offsets", offsets, torch.int32)
        require(offsets.dim() == 1, op, "offsets must be 1-D [NS + 1], got ", shape_string(offsets.shape))
        check_tensor(op, "indices", indices)
        check_dtype(op, "indices", indices, torch.int32)
        require(indices.dim() == 2 and indices.shape[1] == 2, op, "indices must be [NC, 2], got ",
                shape_string(indices.shape))
    return [batch, chunks, heads, head_dim]


@torch.library.register_fake("solops::mean_pooling")
def _(x, chunk_size, offsets=None, indices=None, check_metadata=True):
    # Ragged mode's output has indices.shape[0] chunks: the shape needs no metadata contents.
    return x.new_empty(_mean_pooling_shape(x, chunk_size, offsets, indices))
