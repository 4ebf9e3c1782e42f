"""One sample call of every convolution op and overload, for the tests that run each op through
PyTorch's machinery (test_torch_integration.py): fakes, torch.compile, CUDA graphs, opcheck, errors.
The input's last dim is the varying size; no other dim is 9, the first size compiled, which torch.compile
would give the same symbol."""

import solops
from support import Sample, random


def _conv(input_shape, weight_shape, bias=True):
    """An input of input_shape followed by `size`, a weight, and a bias of the weight's C_out."""
    def inputs(size, device, dtype):
        tensors = (random((*input_shape, size), device, dtype, seed=1), random(weight_shape, device, dtype, seed=2))
        return tensors + ((random(weight_shape[:1], device, dtype, seed=3),) if bias else ())
    return inputs


SAMPLES = [
    Sample("conv1d", _conv((2, 4), (6, 2, 3)), lambda x, w, b: solops.conv1d(x, w, b, stride=2, padding=1, groups=2)),
    Sample("conv1d.padding", _conv((2, 4), (6, 4, 4), bias=False),
           lambda x, w: solops.conv1d(x, w, padding="same", dilation=2)),
    Sample("conv2d", _conv((2, 4, 7), (8, 4, 3, 3)), lambda x, w, b: solops.conv2d(x, w, b, (2, 1), 1)),
    Sample("conv2d.padding", _conv((2, 4, 7), (8, 2, 2, 3)),
           lambda x, w, b: solops.conv2d(x, w, b, padding="same", groups=2)),
    Sample("conv3d", _conv((1, 2, 3, 5), (4, 2, 2, 3, 3)), lambda x, w, b: solops.conv3d(x, w, b, padding=(1, 0, 1))),
    Sample("conv3d.padding", _conv((1, 2, 3, 5), (4, 2, 2, 2, 3), bias=False),
           lambda x, w: solops.conv3d(x, w, padding="valid")),
    Sample("pointwise_conv2d", _conv((2, 8, 5), (16, 8, 1, 1)), lambda x, w, b: solops.pointwise_conv2d(x, w, b)),
    Sample("pointwise_conv2d.padding", _conv((2, 8, 5), (16, 8, 1, 1), bias=False),
           lambda x, w: solops.pointwise_conv2d(x, w, padding="valid")),
    Sample("depthwise_conv2d", _conv((1, 6, 7), (12, 1, 3, 3)),
           lambda x, w, b: solops.depthwise_conv2d(x, w, b, padding=1, groups=6)),
    Sample("depthwise_conv2d.padding", _conv((1, 6, 7), (6, 1, 3, 3), bias=False),
           lambda x, w: solops.depthwise_conv2d(x, w, padding="same", groups=6)),
    Sample("grouped_conv2d", _conv((1, 8, 6), (8, 2, 3, 3)),
           lambda x, w, b: solops.grouped_conv2d(x, w, b, padding=1, groups=4)),
    Sample("grouped_conv2d.padding", _conv((1, 8, 6), (16, 4, 3, 3), bias=False),
           lambda x, w: solops.grouped_conv2d(x, w, padding="same", groups=2)),
    Sample("dilated_conv2d", _conv((1, 4, 10), (4, 4, 3, 3)),
           lambda x, w, b: solops.dilated_conv2d(x, w, b, padding=2, dilation=2)),
    Sample("dilated_conv2d.padding", _conv((1, 4, 10), (4, 4, 3, 2), bias=False),
           lambda x, w: solops.dilated_conv2d(x, w, padding="same", dilation=(2, 3))),
    Sample("conv2d_bias_relu", _conv((2, 4, 7), (8, 4, 3, 3)),
           lambda x, w, b: solops.conv2d_bias_relu(x, w, b, padding=1)),
    Sample("conv2d_bias_relu.padding", _conv((2, 4, 7), (16, 4, 2, 2)),
           lambda x, w, b: solops.conv2d_bias_relu(x, w, b, padding="same")),
    # Depthwise with kW = 4: Mamba's short convolution.
    Sample("conv1d_causal", _conv((2, 4), (4, 1, 4)), lambda x, w, b: solops.conv1d_causal(x, w, b, groups=4)),
]
