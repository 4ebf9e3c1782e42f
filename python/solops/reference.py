"""The CPU references (float64 accumulation), with the signatures of the ops, on CPU tensors."""

import ctypes

import torch

from . import _native
from ._tensors import describe


def _max(input, params, return_indices):
    name = _native.function_name("max", params, prefix="reference.")
    shape = _native.pool_output_shape("max", list(input.shape), params)
    y = torch.empty(shape, dtype=input.dtype)
    indices = torch.empty(shape, dtype=torch.int64)
    _native.check(getattr(_native.lib, _native.function_name("max", params, prefix="solops_reference_"))(
        ctypes.byref(describe(input, name)), ctypes.byref(describe(y, name)), ctypes.byref(describe(indices, name)),
        ctypes.byref(params)))
    return (y, indices) if return_indices else y


def _avg(input, params):
    name = _native.function_name("avg", params, prefix="reference.")
    y = torch.empty(_native.pool_output_shape("avg", list(input.shape), params), dtype=input.dtype)
    _native.check(getattr(_native.lib, _native.function_name("avg", params, prefix="solops_reference_"))(
        ctypes.byref(describe(input, name)), ctypes.byref(describe(y, name)), ctypes.byref(params)))
    return y


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max(input, _native.pool1d_params(kernel_size, stride, padding, dilation, ceil_mode), return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg(input, _native.pool1d_params(kernel_size, stride, padding, 1, ceil_mode, count_include_pad))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max(input, _native.pool2d_params(kernel_size, stride, padding, dilation, ceil_mode), return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg(input, _native.pool2d_params(kernel_size, stride, padding, 1, ceil_mode, count_include_pad,
                                             divisor_override))


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max(input, _native.pool3d_params(kernel_size, stride, padding, dilation, ceil_mode), return_indices)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg(input, _native.pool3d_params(kernel_size, stride, padding, 1, ceil_mode, count_include_pad,
                                             divisor_override))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _max(input, _native.adaptive_pool2d_params(output_size), return_indices)


def adaptive_avg_pool2d(input, output_size):
    return _avg(input, _native.adaptive_pool2d_params(output_size))


def mean_pooling(x, chunk_size, offsets=None, indices=None):
    """The ragged metadata is always checked."""
    name = "reference.mean_pooling"
    params = _native.mean_pooling_params(chunk_size)
    y = torch.empty(_native.mean_pooling_output_shape(list(x.shape), params, _native.metadata_sizes(offsets, indices)),
                    dtype=x.dtype)
    metadata = [ctypes.byref(describe(t, name)) if t is not None else None for t in (offsets, indices)]
    _native.check(_native.lib.solops_reference_mean_pooling(
        ctypes.byref(describe(x, name)), ctypes.byref(describe(y, name)), *metadata, ctypes.byref(params)))
    return y


def _norm(name, params, inputs, outputs):
    tensors = [ctypes.byref(describe(t, "reference." + name)) if t is not None else None for t in (*inputs, *outputs)]
    _native.check(getattr(_native.lib, f"solops_reference_{name}")(*tensors, ctypes.byref(params)))
    return outputs[0] if len(outputs) == 1 else outputs


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _norm("rms_norm", _native.norm_params("rms_norm", normalized_shape, eps), (input, weight),
                 (torch.empty_like(input),))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _norm("layer_norm", _native.norm_params("layer_norm", normalized_shape, eps), (input, weight, bias),
                 (torch.empty_like(input),))


def gemma_rms_norm(x, weight, eps=1e-6):
    return _norm("gemma_rms_norm", _native.norm_params("gemma_rms_norm", weight.shape, eps), (x, weight),
                 (torch.empty_like(x),))


def fused_add_rms_norm(x, residual, weight=None, eps=1e-6):
    """(output, residual_out)."""
    return _norm("fused_add_rms_norm", _native.norm_params("fused_add_rms_norm", eps=eps), (x, residual, weight),
                 (torch.empty_like(x), torch.empty_like(x)))


def fused_add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5):
    """(output, residual_out)."""
    return _norm("fused_add_layer_norm", _native.norm_params("fused_add_layer_norm", eps=eps),
                 (x, residual, weight, bias), (torch.empty_like(x), torch.empty_like(x)))


def ada_layer_norm(x, scale, shift, eps=1e-5):
    return _norm("ada_layer_norm", _native.norm_params("ada_layer_norm", eps=eps), (x, scale, shift),
                 (torch.empty_like(x),))


def _quant_outputs(x, normalized_shape):
    rows = x.shape[: x.dim() - len(_native.normalized_shape_tuple(normalized_shape))]
    return torch.empty(x.shape, dtype=torch.float8_e4m3fn), torch.empty(rows, dtype=torch.float32)


def rms_norm_quant(x, normalized_shape, weight=None, eps=1e-6):
    """(q, scale)."""
    return _norm("rms_norm_quant", _native.norm_params("rms_norm_quant", normalized_shape, eps), (x, weight),
                 _quant_outputs(x, normalized_shape))


def layer_norm_quant(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(q, scale)."""
    return _norm("layer_norm_quant", _native.norm_params("layer_norm_quant", normalized_shape, eps),
                 (x, weight, bias), _quant_outputs(x, normalized_shape))


def qk_norm(q, k, q_weight=None, k_weight=None, eps=1e-6, normalized_shape=None):
    """(q_out, k_out)."""
    if normalized_shape is None:
        weight = q_weight if q_weight is not None else k_weight
        normalized_shape = weight.shape if weight is not None else q.shape[-1:]
    return _norm("qk_norm", _native.norm_params("qk_norm", normalized_shape, eps), (q, k, q_weight, k_weight),
                 (torch.empty_like(q), torch.empty_like(k)))


def _stats(x, normalized_shape):
    return torch.empty(_native.norm_stats_shape(list(x.shape), normalized_shape), dtype=torch.float32)


def rms_norm_with_stats(input, normalized_shape, weight=None, eps=None):
    """(output, rstd): the forward and its per-row f32 rstd."""
    rstd = _stats(input, normalized_shape)
    return _norm("rms_norm_with_stats", _native.norm_params("rms_norm_with_stats", normalized_shape, eps),
                 (input, weight), (torch.empty_like(input), rstd))


def group_rms_norm(x, normalized_shape, weight=None, eps=1e-6):
    """(output, rstd)."""
    return _norm("group_rms_norm", _native.norm_params("group_rms_norm", normalized_shape, eps), (x, weight),
                 (torch.empty_like(x), _stats(x, normalized_shape)))


def vector_norm(x, ord=2, dim=None, keepdim=False):
    params = _native.vector_norm_params(ord, dim, keepdim)
    return _norm("vector_norm", params, (x,),
                 (torch.empty(_native.vector_norm_output_shape(list(x.shape), params), dtype=x.dtype),))


def weight_norm(v, g, dim=0):
    """(output, norm), norm f32 [n]."""
    return _norm("weight_norm", _native.weight_norm_params(dim), (v, g),
                 (torch.empty_like(v), torch.empty(_native.weight_norm_slices(list(v.shape), dim))))


def spectral_norm_power_iter(x, u, v, n_iter=1, eps=1e-12):
    """(sigma, u_out, v_out), float32."""
    outputs = tuple(torch.empty(shape, dtype=torch.float32) for shape in ((), x.shape[:1], x.shape[1:]))
    return _norm("spectral_norm_power_iter", _native.spectral_norm_power_iter_params(x.shape, n_iter, eps), (x, u, v),
                 outputs)


def layer_norm_with_stats(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(output, mean, rstd)."""
    return _norm("layer_norm_with_stats", _native.norm_params("layer_norm_with_stats", normalized_shape, eps),
                 (input, weight, bias), (torch.empty_like(input), _stats(input, normalized_shape),
                                         _stats(input, normalized_shape)))


def rms_norm_backward(grad_out, x, normalized_shape, rstd, weight=None):
    """(grad_x, grad_weight)."""
    grad_weight = torch.empty(_native.normalized_shape_tuple(normalized_shape), dtype=x.dtype)
    return _norm("rms_norm_backward", _native.norm_backward_params("rms_norm_backward", normalized_shape),
                 (grad_out, x, weight, rstd), (torch.empty_like(x), grad_weight))


def layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, weight=None):
    """(grad_x, grad_weight, grad_bias)."""
    shape = _native.normalized_shape_tuple(normalized_shape)
    return _norm("layer_norm_backward", _native.norm_backward_params("layer_norm_backward", normalized_shape),
                 (grad_out, x, weight, mean, rstd),
                 (torch.empty_like(x), torch.empty(shape, dtype=x.dtype), torch.empty(shape, dtype=x.dtype)))
