"""Row-wise normalization ops, registered as torch.ops.solops.*: rms_norm and layer_norm with the
signatures of torch.nn.functional, gemma_rms_norm and the fused add-norms as vLLM and FlashInfer
users know them (x, residual, weight, eps), the fused ones also in place (fused_add_rms_norm_,
fused_add_layer_norm_), qk_norm (q, k, q_weight, k_weight, eps) returning (q_out, k_out),
ada_layer_norm (DiT's modulated LayerNorm), weight_norm (torch._weight_norm, also returning the f32
norms), group_rms_norm (returning (output, rstd)), the quantizing norms rms_norm_quant and
layer_norm_quant, which return (q, scale): float8_e4m3fn codes and one float32 scale per row, and
spectral_norm_power_iter (the power iteration of torch.nn.utils.spectral_norm, returning
(sigma, u, v)). rms_norm and layer_norm are differentiable: with grad enabled and an input that
requires it they run the training forward (rms_norm_with_stats, layer_norm_with_stats, which also
return the per-row f32 rstd and mean), whose registered backward runs rms_norm_backward and
layer_norm_backward, our backward kernels.

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


# ---- training forward and backward (spec §2.13, 2.14) ----------------------------------------------


def _training_outputs(x, name, normalized_shape, eps, stats):
    """The output (x's shape and dtype) and `stats` f32 per-row statistics; checks the shape rule."""
    _native.norm_output_shape(name, list(x.shape), _native.norm_params(name, normalized_shape, eps))
    stats_shape = _native.norm_stats_shape(list(x.shape), normalized_shape)
    return (x.new_empty(x.shape),) + tuple(x.new_empty(stats_shape, dtype=torch.float32) for _ in range(stats))


def _gradients(x, normalized_shape, parameters):
    """grad_x (x's shape and dtype) and `parameters` gradients of the normalized shape; checks the shape rule."""
    _native.norm_stats_shape(list(x.shape), normalized_shape)
    return (x.new_empty(x.shape),) + tuple(x.new_empty(list(normalized_shape)) for _ in range(parameters))


@torch.library.custom_op("solops::rms_norm_with_stats", mutates_args=())
def _rms_norm_with_stats(x: torch.Tensor, normalized_shape: List[int], weight: Optional[torch.Tensor],
                         eps: Optional[float]) -> Tuple[torch.Tensor, torch.Tensor]:
    outputs = _training_outputs(x, "rms_norm", normalized_shape, eps, 1)
    _call("rms_norm_with_stats", _native.norm_params("rms_norm_with_stats", normalized_shape, eps), (x, weight),
          outputs, x)
    return outputs


@_rms_norm_with_stats.register_fake
def _(x, normalized_shape, weight, eps):
    return _training_outputs(x, "rms_norm", normalized_shape, eps, 1)


@torch.library.custom_op("solops::group_rms_norm", mutates_args=())
def _group_rms_norm(x: torch.Tensor, normalized_shape: List[int], weight: Optional[torch.Tensor],
                    eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    outputs = _training_outputs(x, "group_rms_norm", normalized_shape, eps, 1)
    _call("group_rms_norm", _native.norm_params("group_rms_norm", normalized_shape, eps), (x, weight), outputs, x)
    return outputs


@_group_rms_norm.register_fake
def _(x, normalized_shape, weight, eps):
    return _training_outputs(x, "group_rms_norm", normalized_shape, eps, 1)


@torch.library.custom_op("solops::vector_norm", mutates_args=())
def _vector_norm(x: torch.Tensor, ord: int, dim: List[int], keepdim: bool) -> torch.Tensor:
    params = _native.vector_norm_params(ord, dim, keepdim)
    y = torch.empty(_native.vector_norm_output_shape(list(x.shape), params), dtype=x.dtype, device=x.device)
    # From the caching allocator (a CUDA graph's pool under capture): the op itself allocates nothing.
    elements = _native.vector_norm_workspace_elements(list(x.shape), params)
    workspace = torch.empty(elements, dtype=torch.float32, device=x.device) if elements else None
    _call("vector_norm", params, (x,), (y, workspace), x)
    return y


@_vector_norm.register_fake
def _(x, ord, dim, keepdim):
    return x.new_empty(_native.vector_norm_output_shape(list(x.shape), _native.vector_norm_params(ord, dim, keepdim)))


@torch.library.custom_op("solops::weight_norm", mutates_args=())
def _weight_norm(v: torch.Tensor, g: torch.Tensor, dim: int) -> Tuple[torch.Tensor, torch.Tensor]:
    params = _native.weight_norm_params(dim)
    y = torch.empty_like(v)
    norm = torch.empty(_native.weight_norm_slices(list(v.shape), dim), dtype=torch.float32, device=v.device)
    # From the caching allocator (a CUDA graph's pool under capture): the op itself allocates nothing.
    elements = _native.weight_norm_workspace_elements(list(v.shape), params)
    workspace = torch.empty(elements, dtype=torch.float32, device=v.device) if elements else None
    _call("weight_norm", params, (v, g), (y, norm, workspace), v)
    return y, norm


@_weight_norm.register_fake
def _(v, g, dim):
    return torch.empty_like(v), v.new_empty(_native.weight_norm_slices(list(v.shape), dim), dtype=torch.float32)


def _spectral_outputs(x, new):
    """sigma (0-d), u_out [O] and v_out [I], all f32; x is [O, I] once the shape rule accepts it."""
    return tuple(new(shape, dtype=torch.float32, device=x.device) for shape in ((), x.shape[:1], x.shape[1:]))


@torch.library.custom_op("solops::spectral_norm_power_iter", mutates_args=())
def _spectral_norm_power_iter(x: torch.Tensor, u: torch.Tensor, v: torch.Tensor, n_iter: int,
                              eps: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    params = _native.spectral_norm_power_iter_params(x.shape, n_iter, eps)
    # From the caching allocator (a CUDA graph's pool under capture): the op itself allocates nothing.
    elements = _native.spectral_norm_power_iter_workspace_elements(list(x.shape), params)
    workspace = torch.empty(elements, dtype=torch.float32, device=x.device) if elements else None
    outputs = _spectral_outputs(x, torch.empty)
    _call("spectral_norm_power_iter", params, (x, u, v), (*outputs, workspace), x)
    return outputs


@_spectral_norm_power_iter.register_fake
def _(x, u, v, n_iter, eps):
    _native.spectral_norm_power_iter_workspace_elements(list(x.shape),
                                                        _native.spectral_norm_power_iter_params(x.shape, n_iter, eps))
    return _spectral_outputs(x, x.new_empty)


@torch.library.custom_op("solops::layer_norm_with_stats", mutates_args=())
def _layer_norm_with_stats(x: torch.Tensor, normalized_shape: List[int], weight: Optional[torch.Tensor],
                           bias: Optional[torch.Tensor], eps: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    outputs = _training_outputs(x, "layer_norm", normalized_shape, eps, 2)
    _call("layer_norm_with_stats", _native.norm_params("layer_norm_with_stats", normalized_shape, eps),
          (x, weight, bias), outputs, x)
    return outputs


@_layer_norm_with_stats.register_fake
def _(x, normalized_shape, weight, bias, eps):
    return _training_outputs(x, "layer_norm", normalized_shape, eps, 2)


def _backward_workspace(name, x, normalized_shape):
    """The backward's f32 scratch for the parameter gradients' partials (None where none is needed)."""
    elements = _native.norm_backward_workspace_elements(name, list(x.shape), normalized_shape)
    return torch.empty(elements, dtype=torch.float32, device=x.device) if elements else None


@torch.library.custom_op("solops::rms_norm_backward", mutates_args=())
def _rms_norm_backward(grad_out: torch.Tensor, x: torch.Tensor, normalized_shape: List[int], rstd: torch.Tensor,
                       weight: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    outputs = _gradients(x, normalized_shape, 1)
    _call("rms_norm_backward", _native.norm_backward_params("rms_norm_backward", normalized_shape),
          (grad_out, x, weight, rstd), (*outputs, _backward_workspace("rms_norm_backward", x, normalized_shape)), x)
    return outputs


@_rms_norm_backward.register_fake
def _(grad_out, x, normalized_shape, rstd, weight):
    return _gradients(x, normalized_shape, 1)


@torch.library.custom_op("solops::layer_norm_backward", mutates_args=())
def _layer_norm_backward(grad_out: torch.Tensor, x: torch.Tensor, normalized_shape: List[int], mean: torch.Tensor,
                         rstd: torch.Tensor, weight: Optional[torch.Tensor]
                         ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    outputs = _gradients(x, normalized_shape, 2)
    _call("layer_norm_backward", _native.norm_backward_params("layer_norm_backward", normalized_shape),
          (grad_out, x, weight, mean, rstd),
          (*outputs, _backward_workspace("layer_norm_backward", x, normalized_shape)), x)
    return outputs


@_layer_norm_backward.register_fake
def _(grad_out, x, normalized_shape, mean, rstd, weight):
    return _gradients(x, normalized_shape, 2)


# The statistics are auxiliary outputs: no gradient flows into them.
def _rms_setup_context(ctx, inputs, output):
    x, normalized_shape, weight, _ = inputs
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(x, weight, output[1])
    ctx.normalized_shape = normalized_shape


def _rms_norm_grad(ctx, grad_y, _grad_rstd):
    x, weight, rstd = ctx.saved_tensors
    # Autograd may hand a broadcast or strided gradient; the kernel reads dense rows.
    grad_x, grad_weight = torch.ops.solops.rms_norm_backward(grad_y.contiguous(), x, ctx.normalized_shape, rstd,
                                                             weight)
    return grad_x, None, grad_weight if weight is not None else None, None


def _layer_setup_context(ctx, inputs, output):
    x, normalized_shape, weight, bias, _ = inputs
    ctx.mark_non_differentiable(output[1], output[2])
    ctx.save_for_backward(x, weight, output[1], output[2])
    ctx.normalized_shape = normalized_shape
    ctx.has_bias = bias is not None


def _layer_norm_grad(ctx, grad_y, _grad_mean, _grad_rstd):
    x, weight, mean, rstd = ctx.saved_tensors
    grad_x, grad_weight, grad_bias = torch.ops.solops.layer_norm_backward(grad_y.contiguous(), x,
                                                                          ctx.normalized_shape, mean, rstd, weight)
    return (grad_x, None, grad_weight if weight is not None else None, grad_bias if ctx.has_bias else None, None)


_rms_norm_with_stats.register_autograd(_rms_norm_grad, setup_context=_rms_setup_context)
_layer_norm_with_stats.register_autograd(_layer_norm_grad, setup_context=_layer_setup_context)


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


@torch.library.custom_op("solops::ada_layer_norm", mutates_args=())
def _ada_layer_norm(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, eps: float) -> torch.Tensor:
    params = _native.norm_params("ada_layer_norm", eps=eps)
    y = _new_output(x, "ada_layer_norm", params)
    _call("ada_layer_norm", params, (x, scale, shift), (y,), x)
    return y


@_ada_layer_norm.register_fake
def _(x, scale, shift, eps):
    return _fake_output(x, "ada_layer_norm", _native.norm_params("ada_layer_norm", eps=eps))


def _quant_outputs(x, name, params, new):
    """(q, scale): codes of x's shape, one scale per row (x's leading dims)."""
    shape = _native.norm_output_shape(name, list(x.shape), params)
    return (new(shape, dtype=torch.float8_e4m3fn, device=x.device),
            new(shape[: len(shape) - params.normalized_rank], dtype=torch.float32, device=x.device))


@torch.library.custom_op("solops::rms_norm_quant", mutates_args=())
def _rms_norm_quant(x: torch.Tensor, normalized_shape: List[int], weight: Optional[torch.Tensor],
                    eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    params = _native.norm_params("rms_norm_quant", normalized_shape, eps)
    q, scale = _quant_outputs(x, "rms_norm_quant", params, torch.empty)
    _call("rms_norm_quant", params, (x, weight), (q, scale), x)
    return q, scale


@_rms_norm_quant.register_fake
def _(x, normalized_shape, weight, eps):
    return _quant_outputs(x, "rms_norm_quant", _native.norm_params("rms_norm_quant", normalized_shape, eps),
                          x.new_empty)


@torch.library.custom_op("solops::layer_norm_quant", mutates_args=())
def _layer_norm_quant(x: torch.Tensor, normalized_shape: List[int], weight: Optional[torch.Tensor],
                      bias: Optional[torch.Tensor], eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    params = _native.norm_params("layer_norm_quant", normalized_shape, eps)
    q, scale = _quant_outputs(x, "layer_norm_quant", params, torch.empty)
    _call("layer_norm_quant", params, (x, weight, bias), (q, scale), x)
    return q, scale


@_layer_norm_quant.register_fake
def _(x, normalized_shape, weight, bias, eps):
    return _quant_outputs(x, "layer_norm_quant", _native.norm_params("layer_norm_quant", normalized_shape, eps),
                          x.new_empty)


@torch.library.custom_op("solops::qk_norm", mutates_args=())
def _qk_norm(q: torch.Tensor, k: torch.Tensor, normalized_shape: List[int], q_weight: Optional[torch.Tensor],
             k_weight: Optional[torch.Tensor], eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    params = _native.norm_params("qk_norm", normalized_shape, eps)
    # Outputs of the inputs' shapes: the op's validation then names the tensor (q or k) a rule fails on.
    q_out, k_out = (torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in (q, k))
    _call("qk_norm", params, (q, k, q_weight, k_weight), (q_out, k_out), q)
    return q_out, k_out


@_qk_norm.register_fake
def _(q, k, normalized_shape, q_weight, k_weight, eps):
    params = _native.norm_params("qk_norm", normalized_shape, eps)
    return _fake_output(q, "qk_norm", params), _fake_output(k, "qk_norm", params)


def _needs_grad(*tensors):
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """F.rms_norm: input / sqrt(mean(input^2 over normalized_shape) + eps) * weight. eps=None is
    PyTorch's CUDA default, the float32 machine epsilon. Differentiable in input and weight.
    Ops: torch.ops.solops.rms_norm, or rms_norm_with_stats when a gradient is needed."""
    shape = list(_native.normalized_shape_tuple(normalized_shape))
    eps = None if eps is None else float(eps)
    if _needs_grad(input, weight):
        return torch.ops.solops.rms_norm_with_stats(input, shape, weight, eps)[0]
    return torch.ops.solops.rms_norm(input, shape, weight, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """F.layer_norm: (input - mean) / sqrt(var + eps) * weight + bias, biased variance over the
    trailing normalized_shape dims. Differentiable in input, weight and bias.
    Ops: torch.ops.solops.layer_norm, or layer_norm_with_stats when a gradient is needed."""
    shape = list(_native.normalized_shape_tuple(normalized_shape))
    if _needs_grad(input, weight, bias):
        return torch.ops.solops.layer_norm_with_stats(input, shape, weight, bias, float(eps))[0]
    return torch.ops.solops.layer_norm(input, shape, weight, bias, float(eps))


def rms_norm_backward(grad_out, x, normalized_shape, rstd, weight=None):
    """(grad_x, grad_weight) of RMSNorm from the forward's rstd (rms_norm_with_stats); grad_weight is
    computed even without a weight (the gradient a weight of ones would get).
    Op: torch.ops.solops.rms_norm_backward."""
    return torch.ops.solops.rms_norm_backward(grad_out, x, list(_native.normalized_shape_tuple(normalized_shape)),
                                              rstd, weight)


def layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, weight=None):
    """(grad_x, grad_weight, grad_bias) of LayerNorm from the forward's mean and rstd
    (layer_norm_with_stats). Op: torch.ops.solops.layer_norm_backward."""
    return torch.ops.solops.layer_norm_backward(grad_out, x, list(_native.normalized_shape_tuple(normalized_shape)),
                                                mean, rstd, weight)


def gemma_rms_norm(x, weight, eps=1e-6):
    """Gemma's RMSNorm over weight's dims (x's trailing dims): x / sqrt(mean(x^2) + eps) * (1 + weight),
    1 + weight formed in float32. Op: torch.ops.solops.gemma_rms_norm."""
    return torch.ops.solops.gemma_rms_norm(x, weight, float(eps))


def group_rms_norm(x, normalized_shape, weight=None, eps=1e-6):
    """Group RMSNorm (spec §2.19): x viewed as [..., G, D] (normalized_shape = (D,), x of rank >= 2),
    each length-D vector RMS-normalized and scaled by weight[g] (weight [G, D] = x.shape[-2:]). Returns
    (output, rstd), rstd the float32 1 / sqrt(mean(x^2) + eps) of each vector (x.shape[:-1]).
    Op: torch.ops.solops.group_rms_norm."""
    return torch.ops.solops.group_rms_norm(x, list(_native.normalized_shape_tuple(normalized_shape)), weight,
                                           float(eps))


def vector_norm(x, ord=2, dim=None, keepdim=False):
    """torch.linalg.vector_norm(x, ord, dim, keepdim) for ord 1 and 2 (spec §2.22, 2.23; L1NormFwd,
    L2NormFwd): a reduction, dim None or [] reducing every dim (a 0-d result). f32 accumulation, one
    rounding to x's dtype (an f16 sum beyond 65504 is inf), NaN propagates, deterministic; no dtype=
    argument, no autograd. Op: torch.ops.solops.vector_norm."""
    dims = [] if dim is None else [dim] if isinstance(dim, int) else list(dim)
    # A non-integral ord (inf, 0.5) reaches the library as -1, which it rejects by name.
    return torch.ops.solops.vector_norm(x, int(ord) if float(ord).is_integer() else -1, dims, bool(keepdim))


def weight_norm(v, g, dim=0):
    """torch._weight_norm(v, g, dim) and the f32 norms: returns (v * (g / ||v||), norm), the L2 norm over
    every dim but dim, norm of shape [n] with n = v.shape[dim] (spec §2.20). dim = -1 is PyTorch's
    one norm of the whole tensor (spec §6.7; n = 1), not the last axis. g: n values, [n] or as
    nn.utils.weight_norm stores it ([1, .., n, .., 1]). No eps (a zero slice gives inf/NaN, as
    PyTorch), deterministic, no autograd. Op: torch.ops.solops.weight_norm."""
    return torch.ops.solops.weight_norm(v, g, int(dim))


def spectral_norm_power_iter(x, u, v, n_iter=1, eps=1e-12):
    """The power method of torch.nn.utils.spectral_norm on the matrix W = x [O, I] (float32, float16 or
    bfloat16, widened exactly; every step in float32): n_iter times v = normalize(W^T u), then
    u = normalize(W v), with normalize(a) = a / max(||a||_2, eps); then sigma = u^T (W v) (spec 2.21).
    u [O] and v [I] are float32 and left unchanged. Returns (sigma, u_out, v_out): float32, sigma 0-d;
    n_iter = 0 gives sigma of the given u and v, returned as they are. Not W / sigma (that is
    x / sigma). torch.nn.utils.parametrizations.spectral_norm updates u before v: its result is this op
    on x.T (contiguous) with u and v swapped (docs/api.md). Deterministic, no autograd.
    Op: torch.ops.solops.spectral_norm_power_iter."""
    return torch.ops.solops.spectral_norm_power_iter(x, u, v, int(n_iter), float(eps))


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


def ada_layer_norm(x, scale, shift, eps=1e-5):
    """AdaLayerNorm (DiT conditioning): scale * layer_norm(x over its last dim, no affine) + shift,
    scale and shift of x's shape and dtype, the arithmetic in float32. DiT's x_hat * (1 + scale) +
    shift is ada_layer_norm(x, 1 + scale, shift). Op: torch.ops.solops.ada_layer_norm."""
    return torch.ops.solops.ada_layer_norm(x, scale, shift, float(eps))


def rms_norm_quant(x, normalized_shape, weight=None, eps=1e-6):
    """RMSNorm (times weight) in float32, then per-row symmetric FP8 quantization: returns (q, scale)
    with scale = max(amax(|y|), 1e-12) / 448 per row (float32, x's leading dims) and
    q = float8_e4m3fn(y / scale), rounded to nearest even and saturating; q.float() * scale[..., None]
    dequantizes. Op: torch.ops.solops.rms_norm_quant."""
    return torch.ops.solops.rms_norm_quant(x, list(_native.normalized_shape_tuple(normalized_shape)), weight,
                                           float(eps))


def layer_norm_quant(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """LayerNorm (weight, bias) in float32, then the per-row FP8 quantization of rms_norm_quant:
    returns (q, scale). Op: torch.ops.solops.layer_norm_quant."""
    return torch.ops.solops.layer_norm_quant(x, list(_native.normalized_shape_tuple(normalized_shape)), weight, bias,
                                             float(eps))


def qk_norm(q, k, q_weight=None, k_weight=None, eps=1e-6, normalized_shape=None):
    """Qwen3-style QK-norm: (F.rms_norm(q, ns, q_weight, eps), F.rms_norm(k, ns, k_weight, eps)) in one
    call. normalized_shape defaults to the weights' shape, else to the last dim (the head dim); q and k
    may differ in their leading dims (GQA). Op: torch.ops.solops.qk_norm."""
    if normalized_shape is None:
        weight = q_weight if q_weight is not None else k_weight
        normalized_shape = weight.shape if weight is not None else q.shape[-1:]
    return torch.ops.solops.qk_norm(q, k, list(_native.normalized_shape_tuple(normalized_shape)), q_weight, k_weight,
                                    float(eps))
