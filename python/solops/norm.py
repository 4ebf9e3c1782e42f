"""Row-wise normalization ops, registered as torch.ops.solops.*: rms_norm and layer_norm with the
signatures of torch.nn.functional, gemma_rms_norm and the fused add-norms as vLLM and FlashInfer
users know them (x, residual, weight, eps), the fused ones also in place (fused_add_rms_norm_,
fused_add_layer_norm_), and qk_norm (q, k, q_weight, k_weight, eps) returning (q_out, k_out).

Each op runs a solops kernel through the C ABI on the current CUDA stream; the fake implementations
give torch.compile the output shapes (and check the shape rule) without running anything.
"""

import ctypes
from typing import List, Optional, Tuple

import torch

from . import _native
from ._tensors import describe, stream_of


def _call(name, params, inputs, outputs, x):
    """Runs solops_<name> on x's device and current stream; absent inputs (None) pass as NULL."""
    tensors = [ctypes.byref(describe(t, name)) if t is not None else None for t in (*inputs, *outputs)]
    with torch.cuda.device(x.device if x.is_cuda else None):
        _native.check(getattr(_native.lib, f"solops_{name}")(*tensors, ctypes.byref(params), stream_of(x)))


def _new_output(x, name, params):
    return torch.empty(_native.norm_output_shape(name, list(x.shape), params), dtype=x.dtype, device=x.device)


def _fake_output(x, name, params):
    return x.new_empty(_native.norm_output_shape(name, list(x.shape), params))


@torch.library.custom_op("solops::rms_norm", mutates_args=())
def _rms_norm(x: torch.Tensor, normalized_shape: List[int], weight: Optional[torch.Tensor],
              eps: Optional[float]) -> torch.Tensor:
    params = _native.norm_params("rms_norm", normalized_shape, eps)
    y = _new_output(x, "rms_norm", params)
    _call("rms_norm", params, (x, weight), (y,), x)
    return y


@_rms_norm.register_fake
def _(x, normalized_shape, weight, eps):
    return _fake_output(x, "rms_norm", _native.norm_params("rms_norm", normalized_shape, eps))


@torch.library.custom_op("solops::layer_norm", mutates_args=())
def _layer_norm(x: torch.Tensor, normalized_shape: List[int], weight: Optional[torch.Tensor],
                bias: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    params = _native.norm_params("layer_norm", normalized_shape, eps)
    y = _new_output(x, "layer_norm", params)
    _call("layer_norm", params, (x, weight, bias), (y,), x)
    return y


@_layer_norm.register_fake
def _(x, normalized_shape, weight, bias, eps):
    return _fake_output(x, "layer_norm", _native.norm_params("layer_norm", normalized_shape, eps))


@torch.library.custom_op("solops::gemma_rms_norm", mutates_args=())
def _gemma_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    params = _native.norm_params("gemma_rms_norm", weight.shape, eps)
    y = _new_output(x, "gemma_rms_norm", params)
    _call("gemma_rms_norm", params, (x, weight), (y,), x)
    return y


@_gemma_rms_norm.register_fake
def _(x, weight, eps):
    return _fake_output(x, "gemma_rms_norm", _native.norm_params("gemma_rms_norm", weight.shape, eps))


def _fused_inputs(name, x, residual, weight, bias):
    return (x, residual, weight, bias) if name == "fused_add_layer_norm" else (x, residual, weight)


def _fused(name, x, residual, weight, bias, eps):
    params = _native.norm_params(name, eps=eps)
    output, residual_out = _new_output(x, name, params), _new_output(x, name, params)
    _call(name, params, _fused_inputs(name, x, residual, weight, bias), (output, residual_out), x)
    return output, residual_out


def _fused_in_place(name, x, residual, weight, bias, eps):
    _call(name, _native.norm_params(name, eps=eps), _fused_inputs(name, x, residual, weight, bias), (x, residual), x)


def _fused_fake(name, x, eps):
    params = _native.norm_params(name, eps=eps)
    return _fake_output(x, name, params), _fake_output(x, name, params)


@torch.library.custom_op("solops::fused_add_rms_norm", mutates_args=())
def _fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                        eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    return _fused("fused_add_rms_norm", x, residual, weight, None, eps)


@_fused_add_rms_norm.register_fake
def _(x, residual, weight, eps):
    return _fused_fake("fused_add_rms_norm", x, eps)


@torch.library.custom_op("solops::fused_add_rms_norm_", mutates_args=("x", "residual"))
def _fused_add_rms_norm_(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                         eps: float) -> None:
    _fused_in_place("fused_add_rms_norm", x, residual, weight, None, eps)


@_fused_add_rms_norm_.register_fake
def _(x, residual, weight, eps):
    _native.norm_output_shape("fused_add_rms_norm", list(x.shape), _native.norm_params("fused_add_rms_norm", eps=eps))


@torch.library.custom_op("solops::fused_add_layer_norm", mutates_args=())
def _fused_add_layer_norm(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                          bias: Optional[torch.Tensor], eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    return _fused("fused_add_layer_norm", x, residual, weight, bias, eps)


@_fused_add_layer_norm.register_fake
def _(x, residual, weight, bias, eps):
    return _fused_fake("fused_add_layer_norm", x, eps)


@torch.library.custom_op("solops::fused_add_layer_norm_", mutates_args=("x", "residual"))
def _fused_add_layer_norm_(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                           bias: Optional[torch.Tensor], eps: float) -> None:
    _fused_in_place("fused_add_layer_norm", x, residual, weight, bias, eps)


@_fused_add_layer_norm_.register_fake
def _(x, residual, weight, bias, eps):
    _native.norm_output_shape("fused_add_layer_norm", list(x.shape),
                              _native.norm_params("fused_add_layer_norm", eps=eps))


@torch.library.custom_op("solops::qk_norm", mutates_args=())
def _qk_norm(q: torch.Tensor, k: torch.Tensor, normalized_shape: List[int], q_weight: Optional[torch.Tensor],
             k_weight: Optional[torch.Tensor], eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    params = _native.norm_params("qk_norm", normalized_shape, eps)
    q_out, k_out = _new_output(q, "qk_norm", params), _new_output(k, "qk_norm", params)
    _call("qk_norm", params, (q, k, q_weight, k_weight), (q_out, k_out), q)
    return q_out, k_out


@_qk_norm.register_fake
def _(q, k, normalized_shape, q_weight, k_weight, eps):
    params = _native.norm_params("qk_norm", normalized_shape, eps)
    return _fake_output(q, "qk_norm", params), _fake_output(k, "qk_norm", params)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """F.rms_norm: input / sqrt(mean(input^2 over normalized_shape) + eps) * weight. eps=None is
    PyTorch's CUDA default, the float32 machine epsilon. Op: torch.ops.solops.rms_norm."""
    return torch.ops.solops.rms_norm(input, list(_native.normalized_shape_tuple(normalized_shape)), weight,
                                     None if eps is None else float(eps))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """F.layer_norm: (input - mean) / sqrt(var + eps) * weight + bias, biased variance over the
    trailing normalized_shape dims. Op: torch.ops.solops.layer_norm."""
    return torch.ops.solops.layer_norm(input, list(_native.normalized_shape_tuple(normalized_shape)), weight, bias,
                                       float(eps))


def gemma_rms_norm(x, weight, eps=1e-6):
    """Gemma's RMSNorm over weight's dims (x's trailing dims): x / sqrt(mean(x^2) + eps) * (1 + weight),
    1 + weight formed in float32. Op: torch.ops.solops.gemma_rms_norm."""
    return torch.ops.solops.gemma_rms_norm(x, weight, float(eps))


def fused_add_rms_norm(x, residual, weight=None, eps=1e-6):
    """Returns (output, residual_out): residual_out = x + residual (in x's dtype), output = RMSNorm of
    residual_out over the last dim, times weight. x and residual are left as they are; the in-place
    form is fused_add_rms_norm_. Op: torch.ops.solops.fused_add_rms_norm."""
    return torch.ops.solops.fused_add_rms_norm(x, residual, weight, float(eps))


def fused_add_rms_norm_(x, residual, weight=None, eps=1e-6):
    """In place, as vLLM's and FlashInfer's fused_add_rms_norm: residual becomes x + residual and x
    its RMSNorm; returns None. x and residual must not overlap. Op: torch.ops.solops.fused_add_rms_norm_."""
    torch.ops.solops.fused_add_rms_norm_(x, residual, weight, float(eps))


def fused_add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5):
    """Returns (output, residual_out) as fused_add_rms_norm, with LayerNorm (weight, bias) over the last
    dim. Op: torch.ops.solops.fused_add_layer_norm."""
    return torch.ops.solops.fused_add_layer_norm(x, residual, weight, bias, float(eps))


def fused_add_layer_norm_(x, residual, weight=None, bias=None, eps=1e-5):
    """In place: residual becomes x + residual and x its LayerNorm; returns None.
    Op: torch.ops.solops.fused_add_layer_norm_."""
    torch.ops.solops.fused_add_layer_norm_(x, residual, weight, bias, float(eps))


def qk_norm(q, k, q_weight=None, k_weight=None, eps=1e-6, normalized_shape=None):
    """Qwen3-style QK-norm: (F.rms_norm(q, ns, q_weight, eps), F.rms_norm(k, ns, k_weight, eps)) in one
    call. normalized_shape defaults to the weights' shape, else to the last dim (the head dim); q and k
    may differ in their leading dims (GQA). Op: torch.ops.solops.qk_norm."""
    if normalized_shape is None:
        weight = q_weight if q_weight is not None else k_weight
        normalized_shape = weight.shape if weight is not None else q.shape[-1:]
    return torch.ops.solops.qk_norm(q, k, list(_native.normalized_shape_tuple(normalized_shape)), q_weight, k_weight,
                                    float(eps))
