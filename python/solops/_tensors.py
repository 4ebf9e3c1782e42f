"""torch.Tensor -> the C ABI's solops_tensor, without copying."""

import torch

from . import _native

_DTYPES = {
    torch.float32: 0,
    torch.float16: 1,
    torch.bfloat16: 2,
    torch.float8_e4m3fn: 3,
    torch.int32: 4,
    torch.int64: 5,
}


def dtype_code(dtype, op):
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise _native.SolopsError(
            _native.INVALID_ARGUMENT, f"{op}: dtype {dtype} is not supported by solops") from None


def describe(t, op):
    """A view of t for the C ABI: solops checks layout, device and dtype itself."""
    if t.device.type not in ("cuda", "cpu"):
        raise _native.SolopsError(_native.INVALID_ARGUMENT, f"{op}: tensors on {t.device} are not supported")
    c = _native.Tensor()
    c.data = t.data_ptr() or None
    c.dtype = dtype_code(t.dtype, op)
    c.rank = t.dim()
    if c.rank > _native.MAX_RANK:
        raise _native.SolopsError(_native.INVALID_ARGUMENT, f"{op}: rank {c.rank} exceeds {_native.MAX_RANK}")
    c.shape[: c.rank] = list(t.shape)
    c.strides[: c.rank] = list(t.stride())
    c.device = t.device.index if t.device.type == "cuda" else _native.CPU
    return c


def stream_of(t):
    """The handle of the current CUDA stream of t's device (None for CPU tensors)."""
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else None
