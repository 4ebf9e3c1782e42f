"""Normalization ops: rms_norm and layer_norm with the signatures of torch.nn.functional,
gemma_rms_norm and the fused add-norms as vLLM and FlashInfer users know them (x, residual, weight,
eps), the fused ones also in place (fused_add_rms_norm_, fused_add_layer_norm_), qk_norm (q, k,
q_weight, k_weight, eps) returning (q_out, k_out), ada_layer_norm (DiT's modulated LayerNorm),
weight_norm (torch._weight_norm, also returning the f32 norms), group_rms_norm (returning (output,
rstd)), the quantizing norms rms_norm_quant and layer_norm_quant, which return (q, scale): float8_e4m3fn
codes and one float32 scale per row, vector_norm (torch.linalg.vector_norm for ord 1 and 2) and
spectral_norm_power_iter (the power iteration of torch.nn.utils.spectral_norm, returning
(sigma, u, v)), batch_norm_inference (F.batch_norm with training=False) and batch_norm (F.batch_norm,
training included) with its backward, batch_norm_backward; group_norm and instance_norm with
F.group_norm's and F.instance_norm's signatures, differentiable (instance_norm updating running
statistics in place as PyTorch does), and their backward ops.

The ops are torch.ops.solops.<op>, registered in C++ (src/torch/norm.cpp). rms_norm and layer_norm
are differentiable: with grad enabled and an input that requires it they run the training forward
(rms_norm_with_stats, layer_norm_with_stats, which also return the per-row f32 rstd and mean), whose
backward, registered here, runs rms_norm_backward and layer_norm_backward, our backward kernels;
batch_norm in training likewise runs batch_norm_training_with_stats, whose backward runs
batch_norm_backward.
The fake implementations below give torch.compile the outputs, on symbolic sizes too, and apply the
library's rules at trace time (src/norm/norm_rules.cpp, vector_norm_rules.cpp,
spectral_norm_rules.cpp, batch_norm_inference_rules.cpp, batch_norm_rules.cpp, group_norm_rules.cpp).
"""

import math

import torch

from ._eager import eager
from ._rules import (INT_MAX, check_dtype, check_float_dtype, check_known_dtype, check_shape, check_tensor,
                     is_strictly_channels_last, require,
                     shape_string)

# The public functions; solops/__init__.py exports every family's.
__all__ = ["ada_layer_norm", "batch_norm", "batch_norm_backward", "batch_norm_inference", "fused_add_layer_norm",
           "fused_add_layer_norm_", "fused_add_rms_norm", "fused_add_rms_norm_", "gemma_rms_norm", "group_norm",
           "group_norm_backward", "group_rms_norm", "instance_norm", "instance_norm_backward", "layer_norm",
           "layer_norm_backward", "layer_norm_quant", "qk_norm", "rms_norm", "rms_norm_backward", "rms_norm_quant",
           "spectral_norm_power_iter", "vector_norm", "weight_norm"]

_ops = torch.ops.solops
_rms_norm, _rms_norm_with_stats = eager(_ops.rms_norm.default), eager(_ops.rms_norm_with_stats.default)
_layer_norm, _layer_norm_with_stats = eager(_ops.layer_norm.default), eager(_ops.layer_norm_with_stats.default)
_rms_norm_backward = eager(_ops.rms_norm_backward.default)
_layer_norm_backward = eager(_ops.layer_norm_backward.default)
_gemma_rms_norm, _group_rms_norm = eager(_ops.gemma_rms_norm.default), eager(_ops.group_rms_norm.default)
_fused_add_rms_norm = eager(_ops.fused_add_rms_norm.default)
_fused_add_rms_norm_ = eager(_ops.fused_add_rms_norm_.default)
_fused_add_layer_norm = eager(_ops.fused_add_layer_norm.default)
_fused_add_layer_norm_ = eager(_ops.fused_add_layer_norm_.default)
_ada_layer_norm, _qk_norm = eager(_ops.ada_layer_norm.default), eager(_ops.qk_norm.default)
_rms_norm_quant, _layer_norm_quant = eager(_ops.rms_norm_quant.default), eager(_ops.layer_norm_quant.default)
_vector_norm, _weight_norm = eager(_ops.vector_norm.default), eager(_ops.weight_norm.default)
_spectral_norm_power_iter = eager(_ops.spectral_norm_power_iter.default)
_batch_norm_inference = eager(_ops.batch_norm_inference.default)
_batch_norm_training = eager(_ops.batch_norm_training.default)
_batch_norm_backward = eager(_ops.batch_norm_backward.default)
_batch_norm_training_with_stats = eager(_ops.batch_norm_training_with_stats.default)


def _shape(normalized_shape):
    """torch.nn.functional's normalized_shape: an int or a sequence of ints."""
    return [normalized_shape] if isinstance(normalized_shape, int) else normalized_shape


def _needs_grad(input, weight, bias):
    """Whether a norm of input, weight and bias must run its differentiable op (spelled out rather
    than a loop over the tensors or a helper per tensor, and the grad mode asked last: this runs on
    every eager call)."""
    return ((input.requires_grad or weight is not None and weight.requires_grad
             or bias is not None and bias.requires_grad) and torch.is_grad_enabled())


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """F.rms_norm: input / sqrt(mean(input^2 over normalized_shape) + eps) * weight. eps=None is
    PyTorch's CUDA default, the float32 machine epsilon. Differentiable in input and weight.
    Ops: solops::rms_norm, or solops::rms_norm_with_stats when a gradient is needed."""
    # Spelled out as _needs_grad is: this runs on every eager call.
    if (input.requires_grad or weight is not None and weight.requires_grad) and torch.is_grad_enabled():
        return _rms_norm_with_stats(input, _shape(normalized_shape), weight, eps)[0]
    return _rms_norm(input, _shape(normalized_shape), weight, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """F.layer_norm: (input - mean) / sqrt(var + eps) * weight + bias, biased variance over the
    trailing normalized_shape dims. Differentiable in input, weight and bias.
    Ops: solops::layer_norm, or solops::layer_norm_with_stats when a gradient is needed."""
    if _needs_grad(input, weight, bias):
        return _layer_norm_with_stats(input, _shape(normalized_shape), weight, bias, eps)[0]
    return _layer_norm(input, _shape(normalized_shape), weight, bias, eps)


def rms_norm_backward(grad_out, x, normalized_shape, rstd, weight=None):
    """(grad_x, grad_weight) of RMSNorm from the forward's rstd (rms_norm_with_stats); grad_weight is
    computed even without a weight (the gradient a weight of ones would get). Op: solops::rms_norm_backward."""
    return _rms_norm_backward(grad_out, x, _shape(normalized_shape), rstd, weight)


def layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, weight=None):
    """(grad_x, grad_weight, grad_bias) of LayerNorm from the forward's mean and rstd
    (layer_norm_with_stats). Op: solops::layer_norm_backward."""
    return _layer_norm_backward(grad_out, x, _shape(normalized_shape), mean, rstd, weight)


def gemma_rms_norm(x, weight, eps=1e-6):
    """Gemma's RMSNorm over weight's dims (x's trailing dims): x / sqrt(mean(x^2) + eps) * (1 + weight),
    1 + weight formed in float32. Op: solops::gemma_rms_norm."""
    return _gemma_rms_norm(x, weight, eps)


def group_rms_norm(x, normalized_shape, weight=None, eps=1e-6):
    """Group RMSNorm (spec §2.19): x viewed as [..., G, D] (normalized_shape = (D,), x of rank >= 2),
    each length-D vector RMS-normalized and scaled by weight[g] (weight [G, D] = x.shape[-2:]). Returns
    (output, rstd), rstd the float32 1 / sqrt(mean(x^2) + eps) of each vector (x.shape[:-1]).
    Op: solops::group_rms_norm."""
    return _group_rms_norm(x, _shape(normalized_shape), weight, eps)


def vector_norm(x, ord=2, dim=None, keepdim=False):
    """torch.linalg.vector_norm(x, ord, dim, keepdim) for ord 1 and 2 (spec §2.22, 2.23; L1NormFwd,
    L2NormFwd): a reduction, dim None or [] reducing every dim (a 0-d result). f32 accumulation, one
    rounding to x's dtype (an f16 sum beyond 65504 is inf), NaN propagates, deterministic; no dtype=
    argument, no autograd. Op: solops::vector_norm."""
    if ord not in (1, 2):
        raise RuntimeError(f"vector_norm: ord = {ord} is not supported: L1NormFwd takes 1, L2NormFwd 2")
    return _vector_norm(x, int(ord), [] if dim is None else [dim] if isinstance(dim, int) else dim, keepdim)


def weight_norm(v, g, dim=0):
    """torch._weight_norm(v, g, dim) and the f32 norms: returns (v * (g / ||v||), norm), the L2 norm over
    every dim but dim, norm of shape [n] with n = v.shape[dim] (spec §2.20). dim = -1 is PyTorch's
    one norm of the whole tensor (spec §6.7; n = 1), not the last axis. g: n values, [n] or as
    nn.utils.weight_norm stores it ([1, .., n, .., 1]). No eps (a zero slice gives inf/NaN, as
    PyTorch), deterministic, no autograd. Op: solops::weight_norm."""
    return _weight_norm(v, g, dim)


def spectral_norm_power_iter(x, u, v, n_iter=1, eps=1e-12):
    """The power method of torch.nn.utils.spectral_norm on the matrix W = x [O, I] (float32, float16 or
    bfloat16, widened exactly; every step in float32): n_iter times v = normalize(W^T u), then
    u = normalize(W v), with normalize(a) = a / max(||a||_2, eps); then sigma = u^T (W v) (spec 2.21).
    u [O] and v [I] are float32 and left unchanged. Returns (sigma, u_out, v_out): float32, sigma 0-d;
    n_iter = 0 gives sigma of the given u and v, returned as they are. Not W / sigma (that is
    x / sigma). torch.nn.utils.parametrizations.spectral_norm updates u before v: its result is this op
    on x.T (contiguous) with u and v swapped (docs/api.md). Deterministic, no autograd.
    Op: solops::spectral_norm_power_iter."""
    return _spectral_norm_power_iter(x, u, v, n_iter, eps)


def batch_norm_inference(input, running_mean, running_var, weight=None, bias=None, eps=1e-5):
    """F.batch_norm(input, running_mean, running_var, weight, bias, training=False, eps=eps) (spec §2.7,
    §6.3): (input - running_mean) / sqrt(running_var + eps) * weight + bias for each channel (dim 1 of
    input [B, C, *spatial], rank >= 2), in float32 with one rounding to input's dtype. running_mean,
    running_var, weight and bias are [C] of float32 or input's dtype; weight and bias may be None (1 and
    0). The running statistics are only read; no autograd. Op: solops::batch_norm_inference, which takes
    the spec's order (x, weight, bias, running_mean, running_var, eps)."""
    return _batch_norm_inference(input, weight, bias, running_mean, running_var, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """F.batch_norm (spec §2.6, §2.7, §6.3): each channel (dim 1 of input [B, C, *spatial], rank >= 2)
    normalized by the batch's mean and biased variance (training) or by the running statistics (not
    training), then scaled by weight and shifted by bias; float32 arithmetic, one rounding to input's
    dtype. running_mean, running_var, weight and bias are [C] of float32 or input's dtype; weight and
    bias may be None (1 and 0). Training updates the running statistics, where given, in place as
    PyTorch does (momentum, the unbiased variance); nn.BatchNorm's momentum=None passes 1 /
    num_batches_tracked, as it does to F.batch_norm. Not training, both running statistics are needed.
    Differentiable in training (input, weight, bias). Ops: solops::batch_norm_training, or
    solops::batch_norm_training_with_stats when a gradient is needed; solops::batch_norm_inference."""
    if training:
        if _needs_grad(input, weight, bias):
            return _batch_norm_training_with_stats(input, weight, bias, running_mean, running_var, momentum, eps)[0]
        return _batch_norm_training(input, weight, bias, running_mean, running_var, momentum, eps)
    if running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var must be given when training=False")
    return _batch_norm_inference(input, weight, bias, running_mean, running_var, eps)


def batch_norm_backward(grad_out, input, save_mean, save_invstd, weight=None):
    """(grad_input, grad_weight, grad_bias) of training-mode batch norm (spec §2.8) from the forward's
    float32 save_mean and save_invstd (batch_norm_training_with_stats); the parameters' gradients in
    weight's dtype (float32 without a weight: those a weight of ones and a bias would get).
    Op: solops::batch_norm_backward."""
    return _batch_norm_backward(grad_out, input, weight, save_mean, save_invstd)


def fused_add_rms_norm(x, residual, weight=None, eps=1e-6):
    """Returns (output, residual_out): residual_out = x + residual (in x's dtype), output = RMSNorm of
    residual_out over the last dim, times weight. x and residual are left as they are; the in-place
    form is fused_add_rms_norm_. Op: solops::fused_add_rms_norm."""
    return _fused_add_rms_norm(x, residual, weight, eps)


def fused_add_rms_norm_(x, residual, weight=None, eps=1e-6):
    """In place, as vLLM's and FlashInfer's fused_add_rms_norm: residual becomes x + residual and x
    its RMSNorm; returns None. x and residual must not overlap. Op: solops::fused_add_rms_norm_."""
    _fused_add_rms_norm_(x, residual, weight, eps)


def fused_add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5):
    """Returns (output, residual_out) as fused_add_rms_norm, with LayerNorm (weight, bias) over the last
    dim. Op: solops::fused_add_layer_norm."""
    return _fused_add_layer_norm(x, residual, weight, bias, eps)


def fused_add_layer_norm_(x, residual, weight=None, bias=None, eps=1e-5):
    """In place: residual becomes x + residual and x its LayerNorm; returns None.
    Op: solops::fused_add_layer_norm_."""
    _fused_add_layer_norm_(x, residual, weight, bias, eps)


def ada_layer_norm(x, scale, shift, eps=1e-5):
    """AdaLayerNorm (DiT conditioning): scale * layer_norm(x over its last dim, no affine) + shift,
    scale and shift of x's shape and dtype, the arithmetic in float32. DiT's x_hat * (1 + scale) +
    shift is ada_layer_norm(x, 1 + scale, shift). Op: solops::ada_layer_norm."""
    return _ada_layer_norm(x, scale, shift, eps)


def rms_norm_quant(x, normalized_shape, weight=None, eps=1e-6):
    """RMSNorm (times weight) in float32, then per-row symmetric FP8 quantization: returns (q, scale)
    with scale = max(amax(|y|), 1e-12) / 448 per row (float32, x's leading dims) and
    q = float8_e4m3fn(y / scale), rounded to nearest even and saturating; q.float() * scale[..., None]
    dequantizes. Op: solops::rms_norm_quant."""
    return _rms_norm_quant(x, _shape(normalized_shape), weight, eps)


def layer_norm_quant(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """LayerNorm (weight, bias) in float32, then the per-row FP8 quantization of rms_norm_quant:
    returns (q, scale). Op: solops::layer_norm_quant."""
    return _layer_norm_quant(x, _shape(normalized_shape), weight, bias, eps)


def qk_norm(q, k, q_weight=None, k_weight=None, eps=1e-6, normalized_shape=None):
    """Qwen3-style QK-norm: (F.rms_norm(q, ns, q_weight, eps), F.rms_norm(k, ns, k_weight, eps)) in one
    call. normalized_shape defaults to the weights' shape, else to the last dim (the head dim); q and k
    may differ in their leading dims (GQA). Op: solops::qk_norm."""
    if normalized_shape is None:
        weight = q_weight if q_weight is not None else k_weight
        normalized_shape = weight.shape if weight is not None else q.shape[-1:]
    return _qk_norm(q, k, _shape(normalized_shape), q_weight, k_weight, eps)


# ---- autograd of rms_norm and layer_norm --------------------------------------------------------


# The statistics are auxiliary outputs: no gradient flows into them.
def _rms_setup_context(ctx, inputs, output):
    x, normalized_shape, weight, _ = inputs
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(x, weight, output[1])
    ctx.normalized_shape = normalized_shape


def _rms_norm_grad(ctx, grad_y, _grad_rstd):
    x, weight, rstd = ctx.saved_tensors
    # Autograd may hand a broadcast or strided gradient; the kernel reads dense rows.
    grad_x, grad_weight = _rms_norm_backward(grad_y.contiguous(), x, ctx.normalized_shape, rstd, weight)
    return grad_x, None, grad_weight if weight is not None else None, None


def _layer_setup_context(ctx, inputs, output):
    x, normalized_shape, weight, bias, _ = inputs
    ctx.mark_non_differentiable(output[1], output[2])
    ctx.save_for_backward(x, weight, output[1], output[2])
    ctx.normalized_shape = normalized_shape
    ctx.has_bias = bias is not None


def _layer_norm_grad(ctx, grad_y, _grad_mean, _grad_rstd):
    x, weight, mean, rstd = ctx.saved_tensors
    grad_x, grad_weight, grad_bias = _layer_norm_backward(grad_y.contiguous(), x, ctx.normalized_shape, mean, rstd,
                                                          weight)
    return grad_x, None, grad_weight if weight is not None else None, grad_bias if ctx.has_bias else None, None


torch.library.register_autograd("solops::rms_norm_with_stats", _rms_norm_grad, setup_context=_rms_setup_context)
torch.library.register_autograd("solops::layer_norm_with_stats", _layer_norm_grad,
                                setup_context=_layer_setup_context)


# ---- autograd of batch_norm in training --------------------------------------------------------


def _memory_format(x):
    """x's memory format as the BatchNorm, GroupNorm and InstanceNorm ops read it: channels_last where x
    is that and not also contiguous (is_strictly_channels_last), else contiguous."""
    return torch.channels_last if is_strictly_channels_last(x) else torch.contiguous_format


def _batch_norm_setup_context(ctx, inputs, output):
    x, weight, bias, *_ = inputs
    ctx.mark_non_differentiable(output[1], output[2])
    ctx.save_for_backward(x, weight, output[1], output[2])
    ctx.bias_dtype = bias.dtype if bias is not None else None


def _batch_norm_grad(ctx, grad_y, _grad_mean, _grad_invstd):
    x, weight, save_mean, save_invstd = ctx.saved_tensors
    # The op takes grad_out in x's memory format (channels_last x: channels_last grad_out).
    grad_y = grad_y.contiguous(memory_format=_memory_format(x))
    grad_x, grad_weight, grad_bias = _batch_norm_backward(grad_y, x, weight, save_mean, save_invstd)
    if ctx.bias_dtype is None:
        grad_bias = None
    elif grad_bias.dtype != ctx.bias_dtype:  # the op gives weight's dtype (f32 without one)
        grad_bias = grad_bias.to(ctx.bias_dtype)
    return grad_x, grad_weight if weight is not None else None, grad_bias, None, None, None, None


# torch.library.register_autograd refuses an op that mutates an input, since it cannot know how the
# mutation meets autograd. Here the mutated running statistics take no gradient and are saved for
# nothing, so the op gets the autograd kernel register_autograd makes for a functional op (an
# autograd.Function around the op, below autograd), registered directly.
_autograd_library = torch.library.Library("solops", "FRAGMENT")
_autograd_library.impl(
    "batch_norm_training_with_stats",
    torch._library.autograd.make_autograd_impl(
        _ops.batch_norm_training_with_stats.default,
        torch._library.autograd.Info(_batch_norm_grad, _batch_norm_setup_context)),
    "Autograd", with_keyset=True)


# ---- the fakes ---------------------------------------------------------------------------------


def _rows(op, x, normalized_shape):
    """resolve_rows: normalized_shape non-empty, without an empty dim, equal to x's trailing dims."""
    ns = shape_string(normalized_shape)
    require(len(normalized_shape) > 0, op, "normalized_shape must be non-empty")
    require(len(normalized_shape) <= x.dim(), op, "normalized_shape ", ns, " has more dims than x ",
            shape_string(x.shape))
    lead = x.dim() - len(normalized_shape)
    row_len = 1
    for d, size in enumerate(normalized_shape):
        require(size >= 1, op, "normalized_shape ", ns, " has an empty dim: every row needs at least one element")
        require(x.shape[lead + d] == size, op, "normalized_shape ", ns, " does not match the trailing dims of x ",
                shape_string(x.shape))
        row_len *= size
        require(row_len <= INT_MAX, op, "normalized_shape ", ns, " has 2^31 or more elements: rows are indexed in ",
                "32 bits")


def _eps(op, eps):
    require(eps is None or (math.isfinite(eps) and eps >= 0), op, "eps = ", f"{eps:g}" if eps is not None else eps,
            " must be finite and >= 0")


def _last_dim(op, x):
    require(x.dim() > 0, op, "x must have at least one dim (the normalized one), got a scalar")
    return [x.shape[-1]]


def _check_optional(op, name, t, dtype, shape):
    """A tensor the call may leave out: where given, on the device, of `dtype` and `shape`."""
    if t is not None:
        check_tensor(op, name, t)
        check_dtype(op, name, t, dtype)
        check_shape(op, name, t, shape)


def _check_rows(op, x, normalized_shape, eps, affine=(), affine_shape=None, rule=None):
    """A row norm's checks in the order the op makes them: the shape rule and eps (under the name of
    the shape function the binding calls, `rule`, by default the op's own), then x and the affine
    tensors (name, tensor) of the normalized shape (or affine_shape)."""
    rule = rule or op
    check_known_dtype(rule, "x", x)
    _rows(rule, x, normalized_shape)
    _eps(rule, eps)
    check_tensor(op, "x", x)
    check_float_dtype(op, "x", x)
    for name, t in affine:
        _check_optional(op, name, t, x.dtype, normalized_shape if affine_shape is None else affine_shape)


def _stats_shape(x, normalized_shape):
    return x.shape[: x.dim() - len(normalized_shape)]


@torch.library.register_fake("solops::rms_norm")
def _(x, normalized_shape, weight=None, eps=None):
    _check_rows("rms_norm", x, normalized_shape, eps, [("weight", weight)])
    return x.new_empty(x.shape)


@torch.library.register_fake("solops::rms_norm_with_stats")
def _(x, normalized_shape, weight=None, eps=None):
    _check_rows("rms_norm_with_stats", x, normalized_shape, eps, [("weight", weight)], rule="rms_norm")
    return x.new_empty(x.shape), x.new_empty(_stats_shape(x, normalized_shape), dtype=torch.float32)


@torch.library.register_fake("solops::layer_norm")
def _(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    _check_rows("layer_norm", x, normalized_shape, eps, [("weight", weight), ("bias", bias)])
    return x.new_empty(x.shape)


@torch.library.register_fake("solops::layer_norm_with_stats")
def _(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    _check_rows("layer_norm_with_stats", x, normalized_shape, eps, [("weight", weight), ("bias", bias)],
                rule="layer_norm")
    stats = _stats_shape(x, normalized_shape)
    return x.new_empty(x.shape), x.new_empty(stats, dtype=torch.float32), x.new_empty(stats, dtype=torch.float32)


@torch.library.register_fake("solops::gemma_rms_norm")
def _(x, weight, eps=1e-6):
    _check_rows("gemma_rms_norm", x, weight.shape, eps, [("weight", weight)])
    return x.new_empty(x.shape)


def _fused_add(op, x, residual, weight, bias, eps):
    """The fused add-norms' checks: the last dim normalized, residual of x's shape and dtype."""
    normalized_shape = _last_dim(op, x)
    _check_rows(op, x, normalized_shape, eps)
    _check_optional(op, "residual", residual, x.dtype, x.shape)
    _check_optional(op, "weight", weight, x.dtype, normalized_shape)
    _check_optional(op, "bias", bias, x.dtype, normalized_shape)


@torch.library.register_fake("solops::fused_add_rms_norm")
def _(x, residual, weight=None, eps=1e-6):
    _fused_add("fused_add_rms_norm", x, residual, weight, None, eps)
    return x.new_empty(x.shape), x.new_empty(x.shape)


@torch.library.register_fake("solops::fused_add_rms_norm_")
def _(x, residual, weight=None, eps=1e-6):
    _fused_add("fused_add_rms_norm", x, residual, weight, None, eps)


@torch.library.register_fake("solops::fused_add_layer_norm")
def _(x, residual, weight=None, bias=None, eps=1e-5):
    _fused_add("fused_add_layer_norm", x, residual, weight, bias, eps)
    return x.new_empty(x.shape), x.new_empty(x.shape)


@torch.library.register_fake("solops::fused_add_layer_norm_")
def _(x, residual, weight=None, bias=None, eps=1e-5):
    _fused_add("fused_add_layer_norm", x, residual, weight, bias, eps)


@torch.library.register_fake("solops::ada_layer_norm")
def _(x, scale, shift, eps=1e-5):
    op = "ada_layer_norm"
    _check_rows(op, x, _last_dim(op, x), eps, [("scale", scale), ("shift", shift)], affine_shape=x.shape)
    return x.new_empty(x.shape)


def _quant(op, x, normalized_shape, weight, bias, eps):
    _check_rows(op, x, normalized_shape, eps, [("weight", weight), ("bias", bias)])
    return (x.new_empty(x.shape, dtype=torch.float8_e4m3fn),
            x.new_empty(_stats_shape(x, normalized_shape), dtype=torch.float32))


@torch.library.register_fake("solops::rms_norm_quant")
def _(x, normalized_shape, weight=None, eps=1e-6):
    return _quant("rms_norm_quant", x, normalized_shape, weight, None, eps)


@torch.library.register_fake("solops::layer_norm_quant")
def _(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _quant("layer_norm_quant", x, normalized_shape, weight, bias, eps)


@torch.library.register_fake("solops::qk_norm")
def _(q, k, normalized_shape, q_weight=None, k_weight=None, eps=1e-6):
    op = "qk_norm"
    for name, t in (("q", q), ("k", k)):
        check_known_dtype(op, name, t)
        _rows(op, t, normalized_shape)
        _eps(op, eps)
    _check_rows("qk_norm (q)", q, normalized_shape, eps, [("weight", q_weight)])
    check_dtype(op, "k", k, q.dtype)
    _check_rows("qk_norm (k)", k, normalized_shape, eps, [("weight", k_weight)])
    return q.new_empty(q.shape), k.new_empty(k.shape)


@torch.library.register_fake("solops::group_rms_norm")
def _(x, normalized_shape, weight=None, eps=1e-6):
    op = "group_rms_norm"
    require(x.dim() >= 2, op, "x ", shape_string(x.shape), " must have rank >= 2: it is viewed as [..., G, D]")
    require(len(normalized_shape) == 1, op, "normalized_shape ", shape_string(normalized_shape),
            " must be (D,): each length-D vector is normalized on its own")
    require(x.shape[-2] <= INT_MAX, op, "x ", shape_string(x.shape), " has 2^31 or more groups: groups are indexed in ",
            "32 bits")
    _check_rows(op, x, normalized_shape, eps, [("weight", weight)], affine_shape=x.shape[-2:])
    return x.new_empty(x.shape), x.new_empty(x.shape[:-1], dtype=torch.float32)


def _reduced_shape(op, x, ord, dim, keepdim):
    """plan_vector_norm's rules and output shape: x's shape without the reduced dims (size 1 with keepdim)."""
    require(ord in (1, 2), op, "ord = ", ord, " is not supported: L1NormFwd takes 1, L2NormFwd 2")
    rank = x.dim()
    require(rank <= 8, op, "x ", shape_string(x.shape), " has more than 8 dims")
    reduced = [not dim] * rank
    for d in dim:
        require(-rank <= d < rank, op, "dim ", d, " is out of range for x ", shape_string(x.shape), " (rank ", rank, ")")
        wrapped = d + rank if d < 0 else d
        require(not reduced[wrapped], op, "dim ", shape_string(dim), " names dim ", wrapped, " twice")
        reduced[wrapped] = True
    return [1 if is_reduced else size for size, is_reduced in zip(x.shape, reduced) if keepdim or not is_reduced]


@torch.library.register_fake("solops::vector_norm")
def _(x, ord=2, dim=(), keepdim=False):
    op = "vector_norm"
    check_known_dtype(op, "x", x)
    shape = _reduced_shape(op, x, ord, dim, keepdim)
    check_tensor(op, "x", x)
    check_float_dtype(op, "x", x)
    return x.new_empty(shape)


@torch.library.register_fake("solops::weight_norm")
def _(v, g, dim=0):
    op = "weight_norm"
    check_known_dtype(op, "v", v)
    rank = v.dim()
    require(-1 <= dim < rank, op, "dim ", dim, " is out of range for v ", shape_string(v.shape), ": it must be in [0, ",
            rank, ") or -1 (the whole tensor)")
    if rank == 1 and dim == 0:
        # Each norm is one |v_i|: the rule sees v as a column [n, 1] reduced over its second dim.
        _reduced_shape(op, v.new_empty([v.shape[0], 1]), 2, [1], False)
    else:
        _reduced_shape(op, v, 2, [d for d in range(rank) if d != dim], False)
    slices = 1 if dim == -1 else v.shape[dim]
    check_tensor(op, "v", v)
    check_float_dtype(op, "v", v)
    check_tensor(op, "g", g)
    check_dtype(op, "g", g, v.dtype)
    spread = sum(1 for size in g.shape if size != 1)
    require((g.numel() == slices) & (spread <= 1), op, "g ", shape_string(g.shape), " must hold ", slices,
            " values along one dim (v.shape[dim], or 1 for dim -1): [n] or PyTorch's [1, .., n, .., 1]")
    return v.new_empty(v.shape), v.new_empty([slices], dtype=torch.float32)


@torch.library.register_fake("solops::spectral_norm_power_iter")
def _(x, u, v, n_iter=1, eps=1e-12):
    op = "spectral_norm_power_iter"
    check_known_dtype(op, "x", x)
    require(x.dim() == 2, op, "x ", shape_string(x.shape), " must have rank 2: the matrix W [O, I]")
    rows, cols = x.shape
    require(cols <= INT_MAX, op, "x ", shape_string(x.shape), " has rows of 2^31 or more elements: columns are ",
            "indexed in 32 bits")
    require(n_iter >= 0, op, "n_iter = ", n_iter, " must be >= 0")
    require(eps >= 0, op, "eps = ", f"{eps:g}", " must be >= 0 and not NaN")
    check_tensor(op, "x", x)
    check_float_dtype(op, "x", x)
    for name, t, shape in (("u", u, [rows]), ("v", v, [cols])):
        _check_optional(op, name, t, torch.float32, shape)
    return (x.new_empty([], dtype=torch.float32), x.new_empty([rows], dtype=torch.float32),
            x.new_empty([cols], dtype=torch.float32))


@torch.library.register_fake("solops::batch_norm_inference")
def _(x, weight, bias, running_mean, running_var, eps=1e-5):
    op = "batch_norm_inference"
    check_known_dtype(op, "x", x)
    require(x.dim() >= 2, op, "x ", shape_string(x.shape),
            " must have rank >= 2: [B, C, *spatial], the channels in dim 1 (as F.batch_norm)")
    _eps(op, eps)
    check_tensor(op, "x", x, channels_last=True)
    check_float_dtype(op, "x", x)
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        _check_channel(op, name, t, x)
    return _like_x(x)


# The [C] tensors' dtypes in batch_norm's messages.
from ._rules import dtype_name  # noqa: E402


def _batch_norm_channels(rule, x, eps, momentum=None):
    """resolve_batch_norm_training (momentum given) or resolve_batch_norm_backward: x of rank >= 2, eps,
    fewer than 2^31 values a channel; the training forward's momentum, and more than one value a
    channel unless x is empty."""
    require(x.dim() >= 2, rule, "x ", shape_string(x.shape),
            " must have rank >= 2: [B, C, *spatial], the channels in dim 1 (as F.batch_norm)")
    _eps(rule, eps)
    values = x.shape[0]
    for size in x.shape[2:]:
        values = values * size
    require(values <= INT_MAX, rule, "x ", shape_string(x.shape), " has 2^31 or more values a channel (B · ",
            "prod(spatial)): a channel's values are indexed in 32 bits")
    if momentum is not None:
        require(math.isfinite(momentum), rule, "momentum = ", f"{momentum:g}", " must be finite")
        require((values != 1) | (x.shape[1] == 0), rule, "x ", shape_string(x.shape), " has one value a channel ",
                "(B · prod(spatial) = 1): training needs more than one, as F.batch_norm")


def _like_x(x):
    """y or grad_x: x's shape and dtype in x's memory format, as the binding allocates them."""
    return torch.empty(x.shape, dtype=x.dtype, device=x.device, memory_format=_memory_format(x))


def _check_like_x(op, name, t, x):
    """check_like_x: a tensor of x's shape and dtype in x's memory format (grad_out)."""
    check_tensor(op, name, t, channels_last=True)
    check_dtype(op, name, t, x.dtype)
    check_shape(op, name, t, x.shape)
    require(t.is_contiguous(memory_format=_memory_format(x)), op, name, " must be in x's memory format (",
            "channels_last" if is_strictly_channels_last(x) else "contiguous", "): the kernels walk both with x's ",
            "offsets")


def _check_channel(op, name, t, x):
    """A [C] tensor of float32 or x's dtype, where given."""
    if t is not None:
        check_tensor(op, name, t)
        require(t.dtype in (torch.float32, x.dtype), op, name, ": dtype ", dtype_name(t.dtype), " must be f32 or x's ",
                "dtype ", dtype_name(x.dtype))
        check_shape(op, name, t, x.shape[1:2])


def _batch_norm_training_fake(op, x, weight, bias, running_mean, running_var, momentum, eps):
    """The binding's checks (x's dtype, the shape rule, the dtypes of the [C] tensors), then
    validate_batch_norm_training's."""
    rule = "batch_norm_training"
    check_known_dtype(op, "x", x)
    _batch_norm_channels(rule, x, eps, momentum)
    parameters = (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var))
    for name, t in parameters:
        if t is not None:
            check_known_dtype(op, name, t)
    check_tensor(rule, "x", x, channels_last=True)
    check_float_dtype(rule, "x", x)
    require((running_mean is None) == (running_var is None), rule,
            "running_mean and running_var must be given together (or neither)")
    for name, t in parameters[2:] + parameters[:2]:
        _check_channel(rule, name, t, x)
    return _like_x(x)


@torch.library.register_fake("solops::batch_norm_training")
def _(x, weight, bias, running_mean, running_var, momentum=0.1, eps=1e-5):
    return _batch_norm_training_fake("batch_norm_training", x, weight, bias, running_mean, running_var, momentum, eps)


@torch.library.register_fake("solops::batch_norm_training_with_stats")
def _(x, weight, bias, running_mean, running_var, momentum=0.1, eps=1e-5):
    y = _batch_norm_training_fake("batch_norm_training_with_stats", x, weight, bias, running_mean, running_var,
                                  momentum, eps)
    return y, x.new_empty(x.shape[1:2], dtype=torch.float32), x.new_empty(x.shape[1:2], dtype=torch.float32)


@torch.library.register_fake("solops::batch_norm_backward")
def _(grad_out, x, weight, save_mean, save_invstd):
    op = "batch_norm_backward"
    check_known_dtype(op, "x", x)
    _batch_norm_channels(op, x, 0.0)
    for name, t in (("weight", weight), ("grad_out", grad_out), ("save_mean", save_mean), ("save_invstd", save_invstd)):
        if t is not None:
            check_known_dtype(op, name, t)
    check_tensor(op, "x", x, channels_last=True)
    check_float_dtype(op, "x", x)
    _check_like_x(op, "grad_out", grad_out, x)
    _check_channel(op, "weight", weight, x)
    for name, t in (("save_mean", save_mean), ("save_invstd", save_invstd)):
        _check_optional(op, name, t, torch.float32, x.shape[1:2])
    parameter_dtype = torch.float32 if weight is None else weight.dtype
    return (_like_x(x), x.new_empty(x.shape[1:2], dtype=parameter_dtype),
            x.new_empty(x.shape[1:2], dtype=parameter_dtype))


def _backward(op, grad_out, x, normalized_shape, weight, stats):
    """validate_row_norm_backward's checks of the inputs; stats: (name, tensor) of the f32 statistics."""
    check_known_dtype(op, "x", x)
    _rows(op, x, normalized_shape)
    check_tensor(op, "x", x)
    check_float_dtype(op, "x", x)
    _check_optional(op, "grad_out", grad_out, x.dtype, x.shape)
    _check_optional(op, "weight", weight, x.dtype, normalized_shape)
    for name, t in stats:
        _check_optional(op, name, t, torch.float32, _stats_shape(x, normalized_shape))
    return x.new_empty(x.shape), x.new_empty(normalized_shape)


@torch.library.register_fake("solops::rms_norm_backward")
def _(grad_out, x, normalized_shape, rstd, weight=None):
    return _backward("rms_norm_backward", grad_out, x, normalized_shape, weight, [("rstd", rstd)])


@torch.library.register_fake("solops::layer_norm_backward")
def _(grad_out, x, normalized_shape, mean, rstd, weight=None):
    grad_x, grad_weight = _backward("layer_norm_backward", grad_out, x, normalized_shape, weight,
                                    [("mean", mean), ("rstd", rstd)])
    return grad_x, grad_weight, x.new_empty(normalized_shape)


# ---- GroupNorm and InstanceNorm (spec 2.9-2.12, 6.4) --------------------------------------------

_group_norm, _group_norm_with_stats = eager(_ops.group_norm.default), eager(_ops.group_norm_with_stats.default)
_instance_norm = eager(_ops.instance_norm.default)
_instance_norm_with_stats = eager(_ops.instance_norm_with_stats.default)
_group_norm_backward = eager(_ops.group_norm_backward.default)
_instance_norm_backward = eager(_ops.instance_norm_backward.default)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """F.group_norm: the C channels of input [B, C, *spatial] split into num_groups groups of consecutive
    channels, each (sample, group) normalized over its elements (biased variance, float32 statistics),
    then weight and bias per channel ([C], input's dtype; None: 1 and 0). Differentiable in input,
    weight and bias. Ops: solops::group_norm, or solops::group_norm_with_stats (which also returns the
    float32 mean and rstd [B, num_groups]) when a gradient is needed."""
    if _needs_grad(input, weight, bias):
        return _group_norm_with_stats(input, num_groups, weight, bias, eps)[0]
    return _group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """F.instance_norm: each (sample, channel) of input [B, C, *spatial] normalized over its spatial
    elements, then weight and bias per channel ([C], input's dtype). With use_input_stats, running_mean
    and running_var (float32 [C], both or neither) are updated in place as PyTorch updates them: by
    momentum towards the batch average of the instances' means and unbiased variances; without it the
    channels are normalized by them (required then). Differentiable in input, weight and bias.
    Ops: solops::instance_norm, or solops::instance_norm_with_stats (also returning the float32 mean
    and rstd [B, C] each instance was normalized with) when a gradient is needed."""
    if _needs_grad(input, weight, bias):
        return _InstanceNormFunction.apply(input, running_mean, running_var, weight, bias, use_input_stats, momentum,
                                           eps)
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def _output_mask(output_mask, weight):
    """The backward ops' mask of [grad_weight, grad_bias]: as given, else both where a weight is given
    and neither without one."""
    return [weight is not None] * 2 if output_mask is None else output_mask


def group_norm_backward(grad_out, x, num_groups, mean, rstd, weight=None, output_mask=None):
    """(grad_x, grad_weight, grad_bias) of GroupNorm from the forward's mean and rstd
    (group_norm_with_stats). output_mask: which of [grad_weight, grad_bias] to compute (ATen's
    output_mask for them; a gradient not asked for is None); None asks for both where a weight is
    given, for neither without one. Op: solops::group_norm_backward."""
    return _group_norm_backward(grad_out, x, num_groups, mean, rstd, weight, _output_mask(output_mask, weight))


def instance_norm_backward(grad_out, x, mean, rstd, weight=None, use_input_stats=True, output_mask=None):
    """(grad_x, grad_weight, grad_bias) of InstanceNorm from the statistics its forward normalized with
    (instance_norm_with_stats): of statistics taken from x with use_input_stats, else of the fixed
    running ones (no centring terms). output_mask as group_norm_backward's.
    Op: solops::instance_norm_backward."""
    return _instance_norm_backward(grad_out, x, mean, rstd, weight, use_input_stats, _output_mask(output_mask, weight))


def _group_setup_context(ctx, inputs, output):
    x, num_groups, weight, _, _ = inputs
    ctx.mark_non_differentiable(output[1], output[2])
    ctx.save_for_backward(x, weight, output[1], output[2])
    ctx.num_groups = num_groups


def _input_needs_grad(ctx, index):
    """ctx.needs_input_grad[index] of an op's autograd: the dispatcher leaves the trailing arguments
    that have their default values out of the call, and so out of needs_input_grad; those (None,
    numbers) need no gradient."""
    needs = ctx.needs_input_grad
    return index < len(needs) and needs[index]


def _group_norm_grad(ctx, grad_y, _grad_mean, _grad_rstd):
    x, weight, mean, rstd = ctx.saved_tensors
    # The op takes grad_out in x's memory format (channels_last x: channels_last grad_out). The parameter
    # gradients autograd needs: none for a GroupNorm without affine parameters (or frozen ones), which
    # then runs the grad_x kernel alone.
    grad_y = grad_y.contiguous(memory_format=_memory_format(x))
    mask = [_input_needs_grad(ctx, 2), _input_needs_grad(ctx, 3)]
    grad_x, grad_weight, grad_bias = _group_norm_backward(grad_y, x, ctx.num_groups, mean, rstd, weight, mask)
    return grad_x, None, grad_weight, grad_bias, None


torch.library.register_autograd("solops::group_norm_with_stats", _group_norm_grad, setup_context=_group_setup_context)


class _InstanceNormFunction(torch.autograd.Function):
    """instance_norm's autograd. Its training forward updates the running statistics in place, and
    torch.library.register_autograd takes functional ops only, so the formula is a Function here."""

    @staticmethod
    def forward(ctx, x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps):
        y, mean, rstd = _instance_norm_with_stats(x, running_mean, running_var, weight, bias, use_input_stats,
                                                  momentum, eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.use_input_stats = use_input_stats
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, weight, mean, rstd = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_y = grad_y.contiguous(memory_format=_memory_format(x))  # the op takes grad_out in x's memory format
        grad_x, grad_weight, grad_bias = _instance_norm_backward(grad_y, x, mean, rstd, weight, ctx.use_input_stats,
                                                                 [needs[3], needs[4]])
        return grad_x if needs[0] else None, None, None, grad_weight, grad_bias, None, None, None


def _groups(rule, x, num_groups, eps):
    """resolve_group_norm: x [B, C, *spatial], num_groups > 0 dividing C, each group indexable in 32 bits."""
    shape = shape_string(x.shape)
    require(x.dim() >= 2, rule, "x ", shape, " must have rank >= 2: [B, C, *spatial], the channels in dim 1 ",
            "(as F.group_norm)")
    require(num_groups > 0, rule, "num_groups = ", num_groups, " must be > 0")
    channels = x.shape[1]
    require(channels % num_groups == 0, rule, "the C = ", channels, " channels of x ", shape,
            " are not divisible by num_groups = ", num_groups)
    per_group = channels // num_groups
    group_len = per_group * math.prod(x.shape[2:])
    require((per_group <= INT_MAX) & (group_len <= INT_MAX), rule, "each group of x ", shape, " has C / G = ",
            per_group, " channels and (C / G) * S = ", group_len, " elements; both must be below 2^31: groups are ",
            "indexed in 32 bits")
    if eps is not None:
        _eps(rule, eps)


def _instances(rule, x, use_input_stats, momentum, eps):
    """resolve_instance_norm: x [B, C, *spatial], planes indexable in 32 bits, S != 1 with use_input_stats."""
    shape = shape_string(x.shape)
    require(x.dim() >= 2, rule, "x ", shape, " must have rank >= 2: [B, C, *spatial], the channels in dim 1 ",
            "(as F.instance_norm)")
    plane = math.prod(x.shape[2:])
    require(plane <= INT_MAX, rule, "each plane of x ", shape, " has S = ", plane, " elements, 2^31 or more: planes ",
            "are indexed in 32 bits")
    require((not use_input_stats) or plane != 1, rule, "x ", shape, " has one spatial element an instance: ",
            "use_input_stats needs more than one (as F.instance_norm)")
    _eps(rule, eps)
    require(math.isfinite(momentum), rule, "momentum = ", f"{momentum:g}", " must be finite")


def _group_norm_fake(op, x, num_groups, weight, bias, eps):
    check_known_dtype(op, "x", x)
    _groups("group_norm", x, num_groups, eps)
    check_tensor(op, "x", x, channels_last=True)
    check_float_dtype(op, "x", x)
    for name, t in (("weight", weight), ("bias", bias)):
        _check_optional(op, name, t, x.dtype, x.shape[1:2])
    return _like_x(x), x.new_empty([x.shape[0], num_groups], dtype=torch.float32)


@torch.library.register_fake("solops::group_norm")
def _(x, num_groups, weight=None, bias=None, eps=1e-5):
    return _group_norm_fake("group_norm", x, num_groups, weight, bias, eps)[0]


@torch.library.register_fake("solops::group_norm_with_stats")
def _(x, num_groups, weight=None, bias=None, eps=1e-5):
    y, stats = _group_norm_fake("group_norm_with_stats", x, num_groups, weight, bias, eps)
    return y, stats, stats.new_empty(stats.shape)


def _instance_norm_fake(op, x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps):
    check_known_dtype(op, "x", x)
    _instances("instance_norm", x, use_input_stats, momentum, eps)
    check_tensor(op, "x", x, channels_last=True)
    check_float_dtype(op, "x", x)
    require((running_mean is None) == (running_var is None), op,
            "running_mean and running_var must be given together (both or neither)")
    require(use_input_stats or running_mean is not None, op, "use_input_stats=False normalizes by the running ",
            "statistics: running_mean and running_var are required")
    channels = x.shape[1:2]
    for name, t, dtype in (("weight", weight, x.dtype), ("bias", bias, x.dtype),
                           ("running_mean", running_mean, torch.float32), ("running_var", running_var, torch.float32)):
        _check_optional(op, name, t, dtype, channels)
    return _like_x(x), x.new_empty(x.shape[:2], dtype=torch.float32)


@torch.library.register_fake("solops::instance_norm")
def _(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    return _instance_norm_fake("instance_norm", x, running_mean, running_var, weight, bias, use_input_stats, momentum,
                               eps)[0]


@torch.library.register_fake("solops::instance_norm_with_stats")
def _(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    y, stats = _instance_norm_fake("instance_norm_with_stats", x, running_mean, running_var, weight, bias,
                                   use_input_stats, momentum, eps)
    return y, stats, stats.new_empty(stats.shape)


def _spatial_backward_fake(op, grad_out, x, mean, rstd, weight, output_mask, groups, resolve):
    """validate_group_norm_backward's checks; `groups` is G (InstanceNorm: C). A parameter gradient
    output_mask does not ask for is None."""
    require(len(output_mask) == 2, op, "output_mask must have 2 elements ([grad_weight, grad_bias]), got ",
            len(output_mask))
    check_known_dtype(op, "x", x)
    resolve()
    check_tensor(op, "x", x, channels_last=True)
    check_float_dtype(op, "x", x)
    channels = x.shape[1:2]
    _check_like_x(op, "grad_out", grad_out, x)
    _check_optional(op, "weight", weight, x.dtype, channels)
    for name, t in (("mean", mean), ("rstd", rstd)):
        _check_optional(op, name, t, torch.float32, [x.shape[0], groups])
    return _like_x(x), *(x.new_empty(channels) if asked else None for asked in output_mask)


@torch.library.register_fake("solops::group_norm_backward")
def _(grad_out, x, num_groups, mean, rstd, weight, output_mask):
    op = "group_norm_backward"
    return _spatial_backward_fake(op, grad_out, x, mean, rstd, weight, output_mask, num_groups,
                                  lambda: _groups(op, x, num_groups, None))


@torch.library.register_fake("solops::instance_norm_backward")
def _(grad_out, x, mean, rstd, weight, use_input_stats, output_mask):
    op = "instance_norm_backward"
    channels = x.shape[1] if x.dim() >= 2 else 0
    return _spatial_backward_fake(op, grad_out, x, mean, rstd, weight, output_mask, channels,
                                  lambda: _instances(op, x, use_input_stats, 0.0, 0.0))
