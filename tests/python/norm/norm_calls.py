"""Calls of the normalization ops that break one rule each, with a fragment of the error they must
raise. BAD_CALLS run twice with the same expectation: eagerly on CUDA tensors (the C++ checks,
test_norm_ops.py) and traced on fake CUDA tensors (the fakes, test_norm_rules.py, no GPU needed).
ALIASING_CALLS break the aliasing rule, which only the running op can see (fake tensors have no
memory)."""

import torch

import solops


def cuda(*shape, dtype=torch.float32):
    return torch.randn(shape, device="cuda").to(dtype)


def overlapping_halves():
    """x and residual [2, 64] sharing half of their rows in one buffer."""
    buffer = cuda(3, 64)
    return buffer[0:2], buffer[1:3]


BAD_CALLS = [
    (lambda: solops.rms_norm(cuda(2, 4095), (4096,)), "normalized_shape [4096] does not match the trailing dims"),
    (lambda: solops.layer_norm(cuda(8), (1, 8)), "has more dims than x"),
    (lambda: solops.rms_norm(cuda(2, 8), ()), "normalized_shape must be non-empty"),
    (lambda: solops.rms_norm(cuda(2, 8), (8,), cuda(4)), "weight: shape [4] must be [8]"),
    (lambda: solops.layer_norm(cuda(2, 8), (8,), None, cuda(2, 8)), "bias: shape [2, 8] must be [8]"),
    (lambda: solops.rms_norm(cuda(2, 8, dtype=torch.bfloat16), (8,), cuda(8)), "weight: dtype f32 must be bf16"),
    (lambda: solops.layer_norm(cuda(2, 8), (8,), eps=-1e-5), "eps = -1e-05 must be finite and >= 0"),
    (lambda: solops.fused_add_rms_norm(cuda(2, 8), cuda(2, 8), eps=-1.0), "eps = -1 must be"),
    (lambda: solops.rms_norm(cuda(2, 16)[:, ::2], (8,)), "x must be contiguous"),
    (lambda: solops.layer_norm(cuda(8, 2).t(), (8,)), "x must be contiguous"),
    (lambda: solops.rms_norm(torch.randn(2, 8), (8,)), "must be a CUDA tensor"),
    (lambda: solops.rms_norm(cuda(2, 8, dtype=torch.float64), (8,)), "float64"),
    (lambda: solops.fused_add_rms_norm(cuda(2, 8), cuda(1, 8)), "residual: shape [1, 8] must be [2, 8]"),
    (lambda: solops.rms_norm_quant(cuda(2, 4095), (4096,)), "rms_norm_quant: normalized_shape [4096] does not match"),
    (lambda: solops.layer_norm_quant(cuda(2, 8), (8,), cuda(8, dtype=torch.float16)), "weight: dtype f16 must be f32"),
    (lambda: solops.rms_norm_quant(cuda(2, 8), (8,), eps=-1.0), "eps = -1 must be"),
    (lambda: solops.layer_norm_quant(cuda(2, 8).to(torch.float8_e4m3fn), (8,)), "x: dtype fp8_e4m3 is not supported"),
    (lambda: solops.rms_norm_quant(torch.randn(2, 8), (8,)), "must be a CUDA tensor"),
    (lambda: solops.ada_layer_norm(cuda(2, 8), cuda(8), cuda(2, 8)), "scale: shape [8] must be [2, 8]"),
    (lambda: solops.ada_layer_norm(cuda(2, 8), cuda(2, 8), cuda(2, 8, dtype=torch.float16)),
     "shift: dtype f16 must be f32"),
    (lambda: solops.qk_norm(cuda(2, 4, 128), cuda(2, 1, 64), cuda(128)),
     "qk_norm: normalized_shape [128] does not match the trailing dims of x [2, 1, 64]"),
    (lambda: solops.qk_norm(cuda(2, 8), cuda(2, 8), cuda(8), cuda(4), normalized_shape=(8,)),
     "qk_norm (k): weight: shape [4] must be [8]"),
    (lambda: solops.qk_norm(cuda(2, 8), cuda(2, 8, dtype=torch.float16)), "qk_norm: k: dtype f16 must be f32"),
    (lambda: solops.qk_norm(cuda(2, 8), cuda(2, 8), eps=-1.0), "eps = -1 must be"),
    (lambda: solops.qk_norm(cuda(2, 8), cuda(2, 16)[:, ::2]), "x must be contiguous"),
    (lambda: solops.group_rms_norm(cuda(8), (8,)), "group_rms_norm: x [8] must have rank >= 2"),
    (lambda: solops.group_rms_norm(cuda(2, 3, 8), (3, 8)), "normalized_shape [3, 8] must be (D,)"),
    (lambda: solops.group_rms_norm(cuda(2, 3, 8), (8,), cuda(8)), "weight: shape [8] must be [3, 8]"),
    (lambda: solops.group_rms_norm(cuda(3, 8), (8,), cuda(3, 8, dtype=torch.float16)), "weight: dtype f16 must be f32"),
    (lambda: solops.group_rms_norm(cuda(3, 8), (8,), eps=-1.0), "eps = -1 must be"),
    (lambda: solops.group_rms_norm(torch.randn(3, 8), (8,)), "must be a CUDA tensor"),
    (lambda: solops.vector_norm(cuda(3, 8), 3), "vector_norm: ord = 3 is not supported"),
    (lambda: solops.vector_norm(cuda(3, 8), 2, 2), "dim 2 is out of range for x [3, 8]"),
    (lambda: solops.vector_norm(cuda(3, 8), 2, [1, -1]), "names dim 1 twice"),
    (lambda: solops.vector_norm(cuda(3, 16)[:, ::2]), "x must be contiguous"),
    (lambda: solops.vector_norm(cuda(3, 8, dtype=torch.float64)), "float64"),
    (lambda: solops.vector_norm(torch.randn(3, 8)), "must be a CUDA tensor"),
    (lambda: solops.weight_norm(cuda(3, 8), cuda(3), 2), "weight_norm: dim 2 is out of range for v [3, 8]"),
    (lambda: solops.weight_norm(cuda(3, 8), cuda(8), 0), "g [8] must hold 3 values"),
    (lambda: solops.weight_norm(cuda(3, 8), cuda(3, dtype=torch.float16)), "g: dtype f16 must be f32"),
    (lambda: solops.weight_norm(cuda(3, 16)[:, ::2], cuda(3)), "v must be contiguous"),
    (lambda: solops.weight_norm(torch.randn(3, 8), torch.randn(3)), "must be a CUDA tensor"),
    (lambda: solops.spectral_norm_power_iter(cuda(8), cuda(8), cuda(8)),
     "spectral_norm_power_iter: x [8] must have rank 2: the matrix W [O, I]"),
    (lambda: solops.spectral_norm_power_iter(cuda(3, 8), cuda(3), cuda(8), n_iter=-1), "n_iter = -1 must be >= 0"),
    (lambda: solops.spectral_norm_power_iter(cuda(3, 8), cuda(3), cuda(8), eps=float("nan")),
     "eps = nan must be >= 0 and not NaN"),
    (lambda: solops.spectral_norm_power_iter(cuda(3, 8), cuda(8), cuda(8)), "u: shape [8] must be [3]"),
    (lambda: solops.spectral_norm_power_iter(cuda(3, 8), cuda(3), cuda(8, dtype=torch.float16)),
     "v: dtype f16 must be f32"),
    (lambda: solops.spectral_norm_power_iter(cuda(3, 16)[:, ::2], cuda(3), cuda(8)), "x must be contiguous"),
    (lambda: solops.spectral_norm_power_iter(torch.randn(3, 8), torch.randn(3), torch.randn(8)),
     "must be a CUDA tensor"),
    (lambda: solops.batch_norm_inference(cuda(8), cuda(8), cuda(8)),
     "batch_norm_inference: x [8] must have rank >= 2: [B, C, *spatial]"),
    (lambda: solops.batch_norm_inference(cuda(2, 4), cuda(4), cuda(4), eps=-1.0), "eps = -1 must be finite and >= 0"),
    (lambda: solops.batch_norm_inference(cuda(2, 4), cuda(4), cuda(4), eps=float("inf")), "eps = inf must be finite"),
    (lambda: solops.batch_norm_inference(cuda(2, 4, 3), cuda(3), cuda(4)), "running_mean: shape [3] must be [4]"),
    (lambda: solops.batch_norm_inference(cuda(2, 4), cuda(4), cuda(4, dtype=torch.float16)),
     "running_var: dtype f16 must be f32"),
    (lambda: solops.batch_norm_inference(cuda(2, 4, dtype=torch.bfloat16), cuda(4), cuda(4),
                                         cuda(4, dtype=torch.bfloat16)), "weight: dtype bf16 must be f32"),
    (lambda: solops.batch_norm_inference(cuda(2, 4), cuda(4), cuda(4), None, cuda(2, 4)),
     "bias: shape [2, 4] must be [4]"),
    (lambda: solops.batch_norm_inference(cuda(2, 4), torch.randn(4), cuda(4)), "running_mean must be a CUDA tensor"),
    (lambda: solops.batch_norm_inference(cuda(2, 8, 4)[:, ::2], cuda(4), cuda(4)), "x must be contiguous"),
    (lambda: solops.batch_norm_inference(cuda(2, 4, dtype=torch.float64), cuda(4), cuda(4)), "float64"),
    (lambda: solops.batch_norm_inference(torch.randn(2, 4), torch.randn(4), torch.randn(4)), "must be a CUDA tensor"),
    (lambda: solops.rms_norm_backward(cuda(2, 8), cuda(2, 8), (8,), cuda(2, 1)), "rstd: shape [2, 1] must be [2]"),
    (lambda: solops.rms_norm_backward(cuda(2, 8), cuda(2, 8), (8,), cuda(2, dtype=torch.float16)),
     "rstd: dtype f16 must be f32"),
    (lambda: solops.layer_norm_backward(cuda(2, 4), cuda(2, 8), (8,), cuda(2), cuda(2)),
     "grad_out: shape [2, 4] must be [2, 8]"),
    (lambda: solops.layer_norm_backward(cuda(2, 8), cuda(2, 8), (4,), cuda(2), cuda(2)),
     "does not match the trailing dims"),
    # GroupNorm and InstanceNorm.
    (lambda: solops.group_norm(cuda(2, 6, 3), 4), "group_norm: the C = 6 channels of x [2, 6, 3] are not divisible by "
     "num_groups = 4"),
    (lambda: solops.group_norm(cuda(2, 4, 3), 0), "num_groups = 0 must be > 0"),
    (lambda: solops.group_norm(cuda(8), 1), "group_norm: x [8] must have rank >= 2: [B, C, *spatial]"),
    (lambda: solops.group_norm(cuda(2, 4, 3), 2, cuda(3)), "group_norm: weight: shape [3] must be [4]"),
    (lambda: solops.group_norm(cuda(2, 4, 3, dtype=torch.float16), 2, None, cuda(4)), "bias: dtype f32 must be f16"),
    (lambda: solops.group_norm(cuda(2, 4, 3), 2, eps=-1.0), "eps = -1 must be finite and >= 0"),
    (lambda: solops.group_norm(cuda(2, 4, 6)[:, :, ::2], 2), "x must be contiguous"),
    (lambda: solops.group_norm(cuda(2, 4, 3, dtype=torch.float64), 2), "float64"),
    (lambda: solops.group_norm(torch.randn(2, 4, 3), 2), "must be a CUDA tensor"),
    (lambda: solops.instance_norm(cuda(2, 4, 3), cuda(3), cuda(4)),
     "instance_norm: running_mean: shape [3] must be [4]"),
    (lambda: solops.instance_norm(cuda(2, 4, 3), cuda(4), cuda(4, dtype=torch.float16)),
     "running_var: dtype f16 must be f32"),
    (lambda: solops.instance_norm(cuda(2, 4, 3), cuda(4)), "running_mean and running_var must be given together"),
    (lambda: solops.instance_norm(cuda(2, 4, 3), use_input_stats=False),
     "use_input_stats=False normalizes by the running statistics: running_mean and running_var are required"),
    (lambda: solops.instance_norm(cuda(2, 4, 1, 1)), "x [2, 4, 1, 1] has one spatial element an instance"),
    (lambda: solops.instance_norm(cuda(2, 4)), "x [2, 4] has one spatial element an instance"),
    (lambda: solops.instance_norm(cuda(2, 4, 3), cuda(4), cuda(4), momentum=float("nan")),
     "momentum = nan must be finite"),
    (lambda: solops.instance_norm(cuda(2, 4, 3), weight=cuda(4, dtype=torch.bfloat16)),
     "weight: dtype bf16 must be f32"),
    (lambda: solops.group_norm_backward(cuda(2, 4, 3), cuda(2, 4, 3), 2, cuda(2, 4), cuda(2, 2)),
     "group_norm_backward: mean: shape [2, 4] must be [2, 2]"),
    (lambda: solops.group_norm_backward(cuda(2, 4, 3), cuda(2, 4, 3), 3, cuda(2, 3), cuda(2, 3)),
     "group_norm_backward: the C = 4 channels of x [2, 4, 3] are not divisible by num_groups = 3"),
    (lambda: solops.instance_norm_backward(cuda(2, 4, 3), cuda(2, 4, 3), cuda(2, 4), cuda(2, 2)),
     "instance_norm_backward: rstd: shape [2, 2] must be [2, 4]"),
    (lambda: solops.instance_norm_backward(cuda(2, 4, 2), cuda(2, 4, 3), cuda(2, 4), cuda(2, 4)),
     "grad_out: shape [2, 4, 2] must be [2, 4, 3]"),
]

ALIASING_CALLS = [
    (lambda: solops.fused_add_rms_norm_(*overlapping_halves()), "residual_out and x overlap in memory"),
    (lambda: (lambda x: solops.fused_add_layer_norm_(x, x))(cuda(2, 8)), "residual_out and x overlap in memory"),
]
