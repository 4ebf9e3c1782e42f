"""Pooling ops with torch.nn.functional signatures (and mean_pooling, which PyTorch lacks),
registered as torch.ops.solops.*.

Each op runs a solops kernel through the C ABI on the current CUDA stream; the fake
implementations give torch.compile the output shapes without running anything.
"""

import ctypes
from typing import List, Optional, Tuple

import torch

from . import _native
from ._tensors import describe, stream_of


def _run(kind, name, x, params, shape, with_indices=False):
    """Allocates the outputs and runs solops_<kind>_pool<dims> on x's current stream."""
    y = torch.empty(shape, dtype=x.dtype, device=x.device)
    indices = torch.empty(shape, dtype=torch.int64, device=x.device) if with_indices else None
    outputs = [ctypes.byref(describe(y, name))]
    if kind == "max":
        outputs.append(ctypes.byref(describe(indices, name)) if with_indices else None)
    with torch.cuda.device(x.device if x.is_cuda else None):
        _native.check(_native.pool_function(kind, params)(
            ctypes.byref(describe(x, name)), *outputs, ctypes.byref(params), stream_of(x)))
    return (y, indices) if with_indices else y


def _fake(x, shape, with_indices=False):
    return (x.new_empty(shape), x.new_empty(shape, dtype=torch.int64)) if with_indices else x.new_empty(shape)


def _max1d(x, kernel_size, stride, padding, dilation, ceil_mode):
    params = _native.pool1d_params(kernel_size, stride, padding, dilation, ceil_mode)
    return params, _native.pool_output_shape("max", list(x.shape), params)


def _avg1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad):
    params = _native.pool1d_params(kernel_size, stride, padding, 1, ceil_mode, count_include_pad)
    return params, _native.pool_output_shape("avg", list(x.shape), params)


def _max2d(x, kernel_size, stride, padding, dilation, ceil_mode):
    params = _native.pool2d_params(kernel_size, stride, padding, dilation, ceil_mode)
    return params, _native.pool_output_shape("max", list(x.shape), params)


def _avg2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    params = _native.pool2d_params(kernel_size, stride, padding, 1, ceil_mode, count_include_pad, divisor_override)
    return params, _native.pool_output_shape("avg", list(x.shape), params)


@torch.library.custom_op("solops::max_pool1d", mutates_args=())
def _max_pool1d(x: torch.Tensor, kernel_size: int, stride: int, padding: int, dilation: int,
                ceil_mode: bool) -> torch.Tensor:
    return _run("max", "max_pool1d", x, *_max1d(x, kernel_size, stride, padding, dilation, ceil_mode))


@_max_pool1d.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    return _fake(x, _max1d(x, kernel_size, stride, padding, dilation, ceil_mode)[1])


@torch.library.custom_op("solops::max_pool1d_with_indices", mutates_args=())
def _max_pool1d_with_indices(x: torch.Tensor, kernel_size: int, stride: int, padding: int, dilation: int,
                             ceil_mode: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    return _run("max", "max_pool1d", x, *_max1d(x, kernel_size, stride, padding, dilation, ceil_mode), True)


@_max_pool1d_with_indices.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    return _fake(x, _max1d(x, kernel_size, stride, padding, dilation, ceil_mode)[1], True)


@torch.library.custom_op("solops::avg_pool1d", mutates_args=())
def _avg_pool1d(x: torch.Tensor, kernel_size: int, stride: int, padding: int, ceil_mode: bool,
                count_include_pad: bool) -> torch.Tensor:
    return _run("avg", "avg_pool1d", x, *_avg1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad))


@_avg_pool1d.register_fake
def _(x, kernel_size, stride, padding, ceil_mode, count_include_pad):
    return _fake(x, _avg1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad)[1])


@torch.library.custom_op("solops::max_pool2d", mutates_args=())
def _max_pool2d(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                dilation: List[int], ceil_mode: bool) -> torch.Tensor:
    return _run("max", "max_pool2d", x, *_max2d(x, kernel_size, stride, padding, dilation, ceil_mode))


@_max_pool2d.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    return _fake(x, _max2d(x, kernel_size, stride, padding, dilation, ceil_mode)[1])


@torch.library.custom_op("solops::max_pool2d_with_indices", mutates_args=())
def _max_pool2d_with_indices(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                             dilation: List[int], ceil_mode: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    return _run("max", "max_pool2d", x, *_max2d(x, kernel_size, stride, padding, dilation, ceil_mode), True)


@_max_pool2d_with_indices.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    return _fake(x, _max2d(x, kernel_size, stride, padding, dilation, ceil_mode)[1], True)


@torch.library.custom_op("solops::avg_pool2d", mutates_args=())
def _avg_pool2d(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int], ceil_mode: bool,
                count_include_pad: bool, divisor_override: Optional[int]) -> torch.Tensor:
    return _run("avg", "avg_pool2d", x,
                *_avg2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))


@_avg_pool2d.register_fake
def _(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return _fake(x, _avg2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)[1])


def _max3d(x, kernel_size, stride, padding, dilation, ceil_mode):
    params = _native.pool3d_params(kernel_size, stride, padding, dilation, ceil_mode)
    return params, _native.pool_output_shape("max", list(x.shape), params)


def _avg3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    params = _native.pool3d_params(kernel_size, stride, padding, 1, ceil_mode, count_include_pad, divisor_override)
    return params, _native.pool_output_shape("avg", list(x.shape), params)


@torch.library.custom_op("solops::max_pool3d", mutates_args=())
def _max_pool3d(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                dilation: List[int], ceil_mode: bool) -> torch.Tensor:
    return _run("max", "max_pool3d", x, *_max3d(x, kernel_size, stride, padding, dilation, ceil_mode))


@_max_pool3d.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    return _fake(x, _max3d(x, kernel_size, stride, padding, dilation, ceil_mode)[1])


@torch.library.custom_op("solops::max_pool3d_with_indices", mutates_args=())
def _max_pool3d_with_indices(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                             dilation: List[int], ceil_mode: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    return _run("max", "max_pool3d", x, *_max3d(x, kernel_size, stride, padding, dilation, ceil_mode), True)


@_max_pool3d_with_indices.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    return _fake(x, _max3d(x, kernel_size, stride, padding, dilation, ceil_mode)[1], True)


@torch.library.custom_op("solops::avg_pool3d", mutates_args=())
def _avg_pool3d(x: torch.Tensor, kernel_size: List[int], stride: List[int], padding: List[int], ceil_mode: bool,
                count_include_pad: bool, divisor_override: Optional[int]) -> torch.Tensor:
    return _run("avg", "avg_pool3d", x,
                *_avg3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))


@_avg_pool3d.register_fake
def _(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return _fake(x, _avg3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)[1])


def _adaptive(x, output_size):
    params = _native.adaptive_pool2d_params(output_size)
    return params, _native.pool_output_shape("max", list(x.shape), params)


# output_size travels as [h, w] with -1 for None (a custom op schema has no List[Optional[int]]).
def _sizes(output_size: List[int]):
    return [None if size < 0 else size for size in output_size]


@torch.library.custom_op("solops::adaptive_max_pool2d", mutates_args=())
def _adaptive_max_pool2d(x: torch.Tensor, output_size: List[int]) -> torch.Tensor:
    return _run("max", "adaptive_max_pool2d", x, *_adaptive(x, _sizes(output_size)))


@_adaptive_max_pool2d.register_fake
def _(x, output_size):
    return _fake(x, _adaptive(x, _sizes(output_size))[1])


@torch.library.custom_op("solops::adaptive_max_pool2d_with_indices", mutates_args=())
def _adaptive_max_pool2d_with_indices(x: torch.Tensor, output_size: List[int]) -> Tuple[torch.Tensor, torch.Tensor]:
    return _run("max", "adaptive_max_pool2d", x, *_adaptive(x, _sizes(output_size)), True)


@_adaptive_max_pool2d_with_indices.register_fake
def _(x, output_size):
    return _fake(x, _adaptive(x, _sizes(output_size))[1], True)


@torch.library.custom_op("solops::adaptive_avg_pool2d", mutates_args=())
def _adaptive_avg_pool2d(x: torch.Tensor, output_size: List[int]) -> torch.Tensor:
    return _run("avg", "adaptive_avg_pool2d", x, *_adaptive(x, _sizes(output_size)))


@_adaptive_avg_pool2d.register_fake
def _(x, output_size):
    return _fake(x, _adaptive(x, _sizes(output_size))[1])


def _size_list(output_size):
    sizes = _native.output_sizes(output_size)
    # A negative size would read as None: reject it here, as the library rejects sizes below 1.
    if any(size is not None and size < 1 for size in sizes):
        raise _native.SolopsError(_native.INVALID_ARGUMENT, f"output_size {tuple(sizes)}: sizes must be >= 1")
    return [-1 if size is None else int(size) for size in sizes]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d, computed by solops (indices: in-plane positions)."""
    if return_indices:
        return torch.ops.solops.adaptive_max_pool2d_with_indices(input, _size_list(output_size))
    return torch.ops.solops.adaptive_max_pool2d(input, _size_list(output_size))


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d, computed by solops."""
    return torch.ops.solops.adaptive_avg_pool2d(input, _size_list(output_size))


def _axis_values(value, name, axes):
    """A window parameter as its custom op takes it: an int for 1-D pools, a list per axis else."""
    return _native.single(value, name) if axes == 1 else list(_native.per_axis(value, name, axes))


def _window_args(axes, kernel_size, stride, padding):
    """kernel_size, stride (None or [] means kernel_size) and padding, as the custom ops take them."""
    kernel = _axis_values(kernel_size, "kernel_size", axes)
    stride = _axis_values(stride, "stride", axes) if _native.stride_given(stride) else kernel
    return kernel, stride, _axis_values(padding, "padding", axes)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool1d, computed by solops (indices are int64 positions along L)."""
    args = (*_window_args(1, kernel_size, stride, padding), _axis_values(dilation, "dilation", 1), bool(ceil_mode))
    if return_indices:
        return torch.ops.solops.max_pool1d_with_indices(input, *args)
    return torch.ops.solops.max_pool1d(input, *args)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """torch.nn.functional.avg_pool1d, computed by solops."""
    return torch.ops.solops.avg_pool1d(input, *_window_args(1, kernel_size, stride, padding), bool(ceil_mode),
                                       bool(count_include_pad))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool2d, computed by solops (indices are int64 in-plane positions)."""
    args = (*_window_args(2, kernel_size, stride, padding), _axis_values(dilation, "dilation", 2), bool(ceil_mode))
    if return_indices:
        return torch.ops.solops.max_pool2d_with_indices(input, *args)
    return torch.ops.solops.max_pool2d(input, *args)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d, computed by solops."""
    return torch.ops.solops.avg_pool2d(input, *_window_args(2, kernel_size, stride, padding), bool(ceil_mode),
                                       bool(count_include_pad), divisor_override)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool3d, computed by solops (indices: (d * H + h) * W + w)."""
    args = (*_window_args(3, kernel_size, stride, padding), _axis_values(dilation, "dilation", 3), bool(ceil_mode))
    if return_indices:
        return torch.ops.solops.max_pool3d_with_indices(input, *args)
    return torch.ops.solops.max_pool3d(input, *args)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool3d, computed by solops."""
    return torch.ops.solops.avg_pool3d(input, *_window_args(3, kernel_size, stride, padding), bool(ceil_mode),
                                       bool(count_include_pad), divisor_override)


def _mean_pooling_shape(x, chunk_size, offsets, indices):
    params = _native.mean_pooling_params(chunk_size)
    return _native.mean_pooling_output_shape(list(x.shape), params, _native.metadata_sizes(offsets, indices))


@torch.library.custom_op("solops::mean_pooling", mutates_args=())
def _mean_pooling(x: torch.Tensor, chunk_size: int, offsets: Optional[torch.Tensor], indices: Optional[torch.Tensor],
                  check_metadata: bool) -> torch.Tensor:
    name = "mean_pooling"
    y = torch.empty(_mean_pooling_shape(x, chunk_size, offsets, indices), dtype=x.dtype, device=x.device)
    metadata = [ctypes.byref(describe(t, name)) if t is not None else None for t in (offsets, indices)]
    params = _native.mean_pooling_params(chunk_size, check_metadata)
    with torch.cuda.device(x.device if x.is_cuda else None):
        _native.check(_native.lib.solops_mean_pooling(ctypes.byref(describe(x, name)), ctypes.byref(describe(y, name)),
                                                      *metadata, ctypes.byref(params), stream_of(x)))
    return y


@_mean_pooling.register_fake
def _(x, chunk_size, offsets, indices, check_metadata):
    # Ragged mode's output has indices.shape[0] chunks: the shape needs no metadata contents.
    return _fake(x, _mean_pooling_shape(x, chunk_size, offsets, indices))


def mean_pooling(x, chunk_size, offsets=None, indices=None, *, check_metadata=True):
    """Chunked mean along the sequence axis of x [B, S, H, D] (f32/f16/bf16, contiguous, CUDA).

    Uniform mode (no offsets/indices): output [B, ceil(S / chunk_size), H, D], the last chunk
    averaged over its real length. Ragged mode: int32 offsets [NS + 1] (sequence boundaries on the
    S axis, shared by every batch row) and int32 indices [NC, 2] of (sequence, chunk) pairs, as
    prepare_chunk_indices builds them; output [B, NC, H, D]. chunk_size: > 0, a multiple of 32.

    check_metadata (ragged mode): True copies offsets and indices to the host and synchronizes
    the stream to check them against the enumeration (SolopsError on a mismatch; refused while a
    CUDA graph is being captured). False trusts them; a chunk they place outside x comes out NaN.
    Op: torch.ops.solops.mean_pooling.
    """
    return torch.ops.solops.mean_pooling(x, int(chunk_size), offsets, indices, bool(check_metadata))


def prepare_chunk_indices(offsets, chunk_size):
    """The indices [NC, 2] (int32, on offsets' device) of every chunk of every sequence, sequence-major
    and in order: (s, k) for k < ceil(len_s / chunk_size); empty sequences have none."""
    lengths = (offsets[1:] - offsets[:-1]).long()
    counts = (lengths + chunk_size - 1) // chunk_size
    sequences = torch.repeat_interleave(torch.arange(counts.numel(), device=offsets.device), counts)
    first_chunks = torch.cumsum(counts, 0) - counts
    chunks = torch.arange(sequences.numel(), device=offsets.device) - torch.repeat_interleave(first_chunks, counts)
    return torch.stack([sequences, chunks], 1).to(torch.int32)
