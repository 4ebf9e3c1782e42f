"""Calls of the convolution ops that break one rule each, with a fragment of the error they must
raise. They run twice with the same expectation: eagerly on CUDA tensors (the C++ checks,
test_conv_ops.py) and traced on fake CUDA tensors (the fakes, test_conv_rules.py, no GPU needed)."""

import torch

import solops


def _t(*shape, dtype=torch.float32):
    return torch.randn(shape, device="cuda").to(dtype)


def _huge_row():
    """An input [1, 1, 2^31] that takes no memory: one element, expanded."""
    return _t(1, 1, 1, dtype=torch.float16).expand(1, 1, 2**31)


BAD_CALLS = [
    (lambda: solops.conv2d(_t(1, 6, 8, 8), _t(4, 3, 3, 3), groups=4), "groups = 4 must divide the input's 6 channels"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(6, 2, 3, 3), groups=4), "must divide the weight's 6 output channels"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 3, 3, 3)), "takes 3 input channels a group"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3), groups=0), "groups = 0 must be >= 1"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3, dtype=torch.float16)),
     "weight: dtype f16 must be the input's, f32"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3).cpu()), "weight is on cpu but the input on cuda:0"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3), _t(7)), "bias: shape [7] must be [8]"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3), _t(8, dtype=torch.bfloat16)),
     "bias: dtype bf16 must be the input's, f32"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3), stride=2, padding="same"),
     "padding='same' needs stride 1 on every axis"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3), padding="full"), "must be 'valid' or 'same'"),
    (lambda: solops.conv2d(_t(1, 4, 2, 9), _t(8, 4, 3, 3)), "output size along H would be 0"),
    (lambda: solops.conv1d(_huge_row(), _t(1, 1, 3, dtype=torch.float16)), "planes of 2^31 or more elements"),
    (lambda: solops.conv2d_bias_relu(_t(1, 4, 8, 8), _t(8, 4, 3, 3), None), "bias is required"),
    (lambda: solops.conv2d(_t(8, 8), _t(8, 4, 3, 3)), "input must be 3-D [C, H, W] or 4-D [N, C, H, W]"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3)), "weight must be 4-D [C_out, C_in / groups, kH, kW]"),
    (lambda: solops.conv3d(_t(4, 8, 8), _t(8, 4, 3, 3, 3)), "input must be 4-D [C, D, H, W] or 5-D"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3), stride=(1, 0)), "stride[1] = 0 must be >= 1"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3), padding=(0, -1)), "padding[1] = -1 must be >= 0"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3), padding=(1, 1, 1)),
     "padding must be an int or a list of 2, got 3 values"),
    (lambda: solops.conv1d(_t(1, 4, 8), _t(8, 4, 3), dilation=0), "dilation = 0 must be >= 1"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8, dtype=torch.int32), _t(8, 4, 3, 3, dtype=torch.int32)),
     "dtype i32 is not supported (f32, f16 or bf16)"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8, dtype=torch.float64), _t(8, 4, 3, 3)), "dtype float64"),
    (lambda: solops.conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3).transpose(2, 3)), "weight must be contiguous"),
    (lambda: solops.conv3d(_t(1, 4, 4, 4, 4).to(memory_format=torch.channels_last_3d), _t(8, 4, 3, 3, 3)),
     "strided and channels-last tensors are not supported"),
    (lambda: solops.pointwise_conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3)), "the kernel must be 1x1, got 3x3"),
    (lambda: solops.depthwise_conv2d(_t(1, 4, 8, 8), _t(8, 2, 3, 3), groups=2), "must equal the input's 4 channels"),
    (lambda: solops.grouped_conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3)), "groups = 1 must be > 1 and < the input's 4"),
    (lambda: solops.dilated_conv2d(_t(1, 4, 8, 8), _t(8, 4, 3, 3)), "must differ from 1 on some axis"),
    (lambda: solops.conv1d_causal(_t(1, 4, 8), _t(4, 1, 3), groups=4, stride=0), "stride = 0 must be >= 1"),
    (lambda: solops.conv1d_causal(_t(1, 4, 8), _t(4, 2, 3), groups=4), "takes 2 input channels a group"),
]
