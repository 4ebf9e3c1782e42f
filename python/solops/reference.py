"""The CPU references (float64 accumulation), with torch.nn.functional signatures, on CPU tensors."""

import ctypes

import torch

from . import _native
from ._tensors import describe


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    params = _native.pool2d_params(kernel_size, stride, padding, dilation, ceil_mode)
    shape = _native.pool2d_output_shape("max", list(input.shape), params)
    y = torch.empty(shape, dtype=input.dtype)
    indices = torch.empty(shape, dtype=torch.int64)
    _native.check(_native.lib.solops_reference_max_pool2d(
        ctypes.byref(describe(input, "reference.max_pool2d")), ctypes.byref(describe(y, "reference.max_pool2d")),
        ctypes.byref(describe(indices, "reference.max_pool2d")), ctypes.byref(params)))
    return (y, indices) if return_indices else y


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    params = _native.pool2d_params(kernel_size, stride, padding, 1, ceil_mode, count_include_pad, divisor_override)
    shape = _native.pool2d_output_shape("avg", list(input.shape), params)
    y = torch.empty(shape, dtype=input.dtype)
    _native.check(_native.lib.solops_reference_avg_pool2d(
        ctypes.byref(describe(input, "reference.avg_pool2d")), ctypes.byref(describe(y, "reference.avg_pool2d")),
        ctypes.byref(params)))
    return y
