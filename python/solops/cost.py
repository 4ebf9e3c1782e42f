"""Roofline cost models, (flops, bytes) per call, from the library's own cost functions."""

import ctypes

from . import _native
from ._tensors import dtype_code


def max_pool2d(x_shape, dtype, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    params = _native.pool2d_params(kernel_size, stride, padding, dilation, ceil_mode)
    cost = _native.Cost()
    _native.check(_native.lib.solops_max_pool2d_cost(
        len(x_shape), _native.shape_array(x_shape), dtype_code(dtype, "cost.max_pool2d"), ctypes.byref(params),
        int(bool(return_indices)), ctypes.byref(cost)))
    return cost.flops, cost.bytes


def avg_pool2d(x_shape, dtype, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    params = _native.pool2d_params(kernel_size, stride, padding, 1, ceil_mode, count_include_pad, divisor_override)
    cost = _native.Cost()
    _native.check(_native.lib.solops_avg_pool2d_cost(
        len(x_shape), _native.shape_array(x_shape), dtype_code(dtype, "cost.avg_pool2d"), ctypes.byref(params),
        ctypes.byref(cost)))
    return cost.flops, cost.bytes
