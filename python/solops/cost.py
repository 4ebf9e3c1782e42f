"""Roofline cost models, (flops, bytes) per call, from the library's own cost functions."""

import ctypes

from . import _native
from ._tensors import dtype_code


def _cost(kind, x_shape, dtype, params, *with_indices):
    cost = _native.Cost()
    name = _native.function_name(kind, params, prefix="cost.")
    _native.check(_native.pool_function(kind, params, "_cost")(
        len(x_shape), _native.shape_array(x_shape), dtype_code(dtype, name), ctypes.byref(params), *with_indices,
        ctypes.byref(cost)))
    return cost.flops, cost.bytes


def max_pool1d(x_shape, dtype, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    params = _native.pool1d_params(kernel_size, stride, padding, dilation, ceil_mode)
    return _cost("max", x_shape, dtype, params, int(bool(return_indices)))


def avg_pool1d(x_shape, dtype, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _cost("avg", x_shape, dtype, _native.pool1d_params(kernel_size, stride, padding, 1, ceil_mode,
                                                               count_include_pad))


def max_pool2d(x_shape, dtype, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    params = _native.pool2d_params(kernel_size, stride, padding, dilation, ceil_mode)
    return _cost("max", x_shape, dtype, params, int(bool(return_indices)))


def avg_pool2d(x_shape, dtype, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _cost("avg", x_shape, dtype, _native.pool2d_params(kernel_size, stride, padding, 1, ceil_mode,
                                                               count_include_pad, divisor_override))


def max_pool3d(x_shape, dtype, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    params = _native.pool3d_params(kernel_size, stride, padding, dilation, ceil_mode)
    return _cost("max", x_shape, dtype, params, int(bool(return_indices)))


def avg_pool3d(x_shape, dtype, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _cost("avg", x_shape, dtype, _native.pool3d_params(kernel_size, stride, padding, 1, ceil_mode,
                                                               count_include_pad, divisor_override))


def adaptive_max_pool2d(x_shape, dtype, output_size, return_indices=False):
    return _cost("max", x_shape, dtype, _native.adaptive_pool2d_params(output_size), int(bool(return_indices)))


def adaptive_avg_pool2d(x_shape, dtype, output_size):
    return _cost("avg", x_shape, dtype, _native.adaptive_pool2d_params(output_size))


def mean_pooling(x_shape, dtype, chunk_size, sequences=None, chunks=None):
    """Ragged mode when sequences and chunks (offsets [sequences + 1], indices [chunks, 2]) are given."""
    cost = _native.Cost()
    ragged = _native.ragged_sizes(sequences, chunks)
    _native.check(_native.lib.solops_mean_pooling_cost(
        len(x_shape), _native.shape_array(x_shape), dtype_code(dtype, "cost.mean_pooling"),
        ctypes.byref(_native.mean_pooling_params(chunk_size)), ctypes.byref(ragged) if ragged is not None else None,
        ctypes.byref(cost)))
    return cost.flops, cost.bytes


def _norm_cost(name, x_shape, dtype, params):
    cost = _native.Cost()
    _native.check(getattr(_native.lib, f"solops_{name}_cost")(
        len(x_shape), _native.shape_array(x_shape), dtype_code(dtype, "cost." + name), ctypes.byref(params),
        ctypes.byref(cost)))
    return cost.flops, cost.bytes


def rms_norm(x_shape, dtype, normalized_shape, eps=None):
    return _norm_cost("rms_norm", x_shape, dtype, _native.norm_params("rms_norm", normalized_shape, eps))


def layer_norm(x_shape, dtype, normalized_shape, eps=1e-5):
    return _norm_cost("layer_norm", x_shape, dtype, _native.norm_params("layer_norm", normalized_shape, eps))


def gemma_rms_norm(x_shape, dtype, normalized_shape, eps=1e-6):
    return _norm_cost("gemma_rms_norm", x_shape, dtype, _native.norm_params("gemma_rms_norm", normalized_shape, eps))


def fused_add_rms_norm(x_shape, dtype, eps=1e-6):
    return _norm_cost("fused_add_rms_norm", x_shape, dtype, _native.norm_params("fused_add_rms_norm", eps=eps))


def fused_add_layer_norm(x_shape, dtype, eps=1e-5):
    return _norm_cost("fused_add_layer_norm", x_shape, dtype, _native.norm_params("fused_add_layer_norm", eps=eps))


def ada_layer_norm(x_shape, dtype, eps=1e-5):
    return _norm_cost("ada_layer_norm", x_shape, dtype, _native.norm_params("ada_layer_norm", eps=eps))


def rms_norm_quant(x_shape, dtype, normalized_shape, eps=1e-6):
    return _norm_cost("rms_norm_quant", x_shape, dtype, _native.norm_params("rms_norm_quant", normalized_shape, eps))


def layer_norm_quant(x_shape, dtype, normalized_shape, eps=1e-5):
    return _norm_cost("layer_norm_quant", x_shape, dtype,
                      _native.norm_params("layer_norm_quant", normalized_shape, eps))


def group_rms_norm(x_shape, dtype, normalized_shape, eps=1e-6):
    return _norm_cost("group_rms_norm", x_shape, dtype, _native.norm_params("group_rms_norm", normalized_shape, eps))


def vector_norm(x_shape, dtype, ord=2, dim=None, keepdim=False):
    cost = _native.Cost()
    _native.check(_native.lib.solops_vector_norm_cost(
        len(x_shape), _native.shape_array(x_shape), dtype_code(dtype, "cost.vector_norm"),
        ctypes.byref(_native.vector_norm_params(ord, dim, keepdim)), ctypes.byref(cost)))
    return cost.flops, cost.bytes


def weight_norm(v_shape, dtype, dim=0):
    cost = _native.Cost()
    _native.check(_native.lib.solops_weight_norm_cost(
        len(v_shape), _native.shape_array(v_shape), dtype_code(dtype, "cost.weight_norm"),
        ctypes.byref(_native.weight_norm_params(dim)), ctypes.byref(cost)))
    return cost.flops, cost.bytes


def spectral_norm_power_iter(x_shape, dtype, n_iter=1, eps=1e-12):
    cost = _native.Cost()
    _native.check(_native.lib.solops_spectral_norm_power_iter_cost(
        len(x_shape), _native.shape_array(x_shape), dtype_code(dtype, "cost.spectral_norm_power_iter"),
        ctypes.byref(_native.spectral_norm_power_iter_params(x_shape, n_iter, eps)), ctypes.byref(cost)))
    return cost.flops, cost.bytes


def qk_norm(q_shape, k_shape, dtype, normalized_shape, eps=1e-6):
    cost = _native.Cost()
    _native.check(_native.lib.solops_qk_norm_cost(
        len(q_shape), _native.shape_array(q_shape), len(k_shape), _native.shape_array(k_shape),
        dtype_code(dtype, "cost.qk_norm"), ctypes.byref(_native.norm_params("qk_norm", normalized_shape, eps)),
        ctypes.byref(cost)))
    return cost.flops, cost.bytes


def rms_norm_backward(x_shape, dtype, normalized_shape):
    return _norm_cost("rms_norm_backward", x_shape, dtype, _native.norm_backward_params("rms_norm_backward",
                                                                                        normalized_shape))


def layer_norm_backward(x_shape, dtype, normalized_shape):
    return _norm_cost("layer_norm_backward", x_shape, dtype, _native.norm_backward_params("layer_norm_backward",
                                                                                          normalized_shape))
