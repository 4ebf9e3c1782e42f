"""Pooling ops with torch.nn.functional signatures, registered as torch.ops.solops.*.

Each op runs a solops kernel through the C ABI on the current CUDA stream; the fake
implementations give torch.compile the output shapes without running anything.
"""

import ctypes
from typing import List, Optional, Tuple

import torch

from . import _native
from ._tensors import describe, stream_of


def _launch(function, *args):
    _native.check(function(*args))


def _output_shape(kind, x, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad=True,
                  divisor_override=None):
    params = _native.pool2d_params(kernel_size, stride, padding, dilation, ceil_mode, count_include_pad,
                                   divisor_override)
    return params, _native.pool2d_output_shape(kind, list(x.shape), params)


@torch.library.custom_op("solops::max_pool2d", mutates_args=())
def _max_pool2d(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                dilation: List[int], ceil_mode: bool) -> torch.Tensor:
    params, shape = _output_shape("max", x, kernel_size, stride, padding, dilation, ceil_mode)
    y = torch.empty(shape, dtype=x.dtype, device=x.device)
    with torch.cuda.device(x.device if x.is_cuda else None):
        _launch(_native.lib.solops_max_pool2d, ctypes.byref(describe(x, "max_pool2d")),
                ctypes.byref(describe(y, "max_pool2d")), None, ctypes.byref(params), stream_of(x))
    return y


@_max_pool2d.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    _, shape = _output_shape("max", x, kernel_size, stride, padding, dilation, ceil_mode)
    return x.new_empty(shape)


@torch.library.custom_op("solops::max_pool2d_with_indices", mutates_args=())
def _max_pool2d_with_indices(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                             dilation: List[int], ceil_mode: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    params, shape = _output_shape("max", x, kernel_size, stride, padding, dilation, ceil_mode)
    y = torch.empty(shape, dtype=x.dtype, device=x.device)
    indices = torch.empty(shape, dtype=torch.int64, device=x.device)
    with torch.cuda.device(x.device if x.is_cuda else None):
        _launch(_native.lib.solops_max_pool2d, ctypes.byref(describe(x, "max_pool2d")),
                ctypes.byref(describe(y, "max_pool2d")), ctypes.byref(describe(indices, "max_pool2d")),
                ctypes.byref(params), stream_of(x))
    return y, indices


@_max_pool2d_with_indices.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    _, shape = _output_shape("max", x, kernel_size, stride, padding, dilation, ceil_mode)
    return x.new_empty(shape), x.new_empty(shape, dtype=torch.int64)


@torch.library.custom_op("solops::avg_pool2d", mutates_args=())
def _avg_pool2d(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int], ceil_mode: bool,
                count_include_pad: bool, divisor_override: Optional[int]) -> torch.Tensor:
    params, shape = _output_shape("avg", x, kernel_size, stride, padding, 1, ceil_mode, count_include_pad,
                                  divisor_override)
    y = torch.empty(shape, dtype=x.dtype, device=x.device)
    with torch.cuda.device(x.device if x.is_cuda else None):
        _launch(_native.lib.solops_avg_pool2d, ctypes.byref(describe(x, "avg_pool2d")),
                ctypes.byref(describe(y, "avg_pool2d")), ctypes.byref(params), stream_of(x))
    return y


@_avg_pool2d.register_fake
def _(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    _, shape = _output_shape("avg", x, kernel_size, stride, padding, 1, ceil_mode, count_include_pad,
                             divisor_override)
    return x.new_empty(shape)


def _pair_list(value, name):
    return list(_native.pair(value, name))


def _stride_list(stride, kernel_size):
    """stride=None (or []) means kernel_size, as in torch.nn.functional."""
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        return _pair_list(kernel_size, "kernel_size")
    return _pair_list(stride, "stride")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool2d, computed by solops (indices are int64 in-plane positions)."""
    args = (_pair_list(kernel_size, "kernel_size"), _stride_list(stride, kernel_size),
            _pair_list(padding, "padding"), _pair_list(dilation, "dilation"), bool(ceil_mode))
    if return_indices:
        return torch.ops.solops.max_pool2d_with_indices(input, *args)
    return torch.ops.solops.max_pool2d(input, *args)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d, computed by solops."""
    return torch.ops.solops.avg_pool2d(input, _pair_list(kernel_size, "kernel_size"),
                                       _stride_list(stride, kernel_size), _pair_list(padding, "padding"),
                                       bool(ceil_mode), bool(count_include_pad), divisor_override)
