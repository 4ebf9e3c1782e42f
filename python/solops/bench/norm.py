"""Norm family benchmark entries: RMSNormFwd, LayerNormFwd, FusedAddRMSNormFwd,
FusedAddLayerNormFwd, GemmaRMSNormFwd, AdaLayerNormFwd, RMSNormQuantFwd, LayerNormQuantFwd,
QKNormFwd, GroupRMSNormFwd, RMSNormBwd and LayerNormBwd over the last dim of x [M, N] (QKNorm: k
has x's shape, spec 2.18; GroupRMSNorm: G = M, a weight of x's shape, spec 2.19), and the
vector-norm reductions L1NormFwd and L2NormFwd (spec 2.22, 2.23: the row's dim, default every dim;
alternatives torch.linalg.vector_norm on the f32 upcast, as the spec's reference, and its
torch.compile; tolerance fp32 1e-5, fp16/bf16 1e-2), and WeightNormFwd (spec 2.20: v = x, dim 0, g of
[M]; alternatives torch._weight_norm_interface with g as PyTorch stores it, [M, 1], the spec's
reference, and its torch.compile; tolerance output fp32 1e-5, fp16 1e-3, bf16 1.6e-2, norm rtol
1e-5), and SpectralNormPowerIterFwd (spec 2.21: W = x, u [O] and v [I] random normal f32 from the fixed
seed, n_iter 1 and eps 1e-12 unless the row gives them; alternatives the spec's formula, that is
torch.nn.utils.spectral_norm's power method and sigma, on x widened to f32 (F.normalize of torch.mv,
torch.vdot), and its torch.compile; tolerance sigma rtol 1e-4, u_out and v_out atol 1e-5, rtol 1e-4),
and BatchNormInferenceFwd (spec 2.7: x [B, C, *spatial] of the row's dtype; running_mean, weight and
bias random normal f32 [C], running_var uniform in [0.5, 1.5), eps 1e-5; alternatives
F.batch_norm(training=False), eager (cuDNN's inference kernel) and its torch.compile; tolerance fp32
1e-5, fp16 1e-3, bf16 1.6e-2), and GroupNormFwd / GroupNormBwd / InstanceNormFwd / InstanceNormBwd
(the GroupNorm and InstanceNorm block at the end of this file).

Each manifest row becomes a run.Case: random normal x (and residual, weight, bias; fixed seeds, the
row's dtype; AdaLayerNorm's scale and shift of x's shape), the solops call with the spec's eps
passed explicitly (1e-6 for the RMS norms, 1e-5 for the LayerNorms), the CPU reference, the cost
model, the spec's tolerance (spec/ops.md 2.1, 2.2, 2.3, 2.4, 2.5, 2.17, 2.18, 2.19; for the
quantizing norms' codes and scales 2.15) on every output, and the alternatives:
    torch          F.rms_norm / F.layer_norm; Gemma as Hugging Face writes it (f32 math, 1 + weight);
                   the fused add-norms as x + residual followed by the norm; QKNorm as F.rms_norm of
                   q and of k; AdaLayerNorm as the spec writes it (f32 scale * F.layer_norm +
                   shift); the quantizing norms as the f32 norm, its per-row amax scale, then
                   .to(torch.float8_e4m3fn); GroupRMSNorm as the spec writes it (f32 rstd of each
                   row, times the row's weight)
    torch-compile  the same functions under torch.compile (default mode, static shapes)
The backward rows (spec 2.13, 2.14) time the backward alone: grad_out, x, weight and the saved f32
statistics are made once (our training forward for solops, PyTorch's forward for torch), and the
outputs (grad_x, grad_weight[, grad_bias]) are checked against the CPU reference's, with the
parameter gradients' atol scaled by sqrt(M) (sums over M rows). Alternatives:
    torch          torch.ops.aten._fused_rms_norm_backward / native_layer_norm_backward, the kernels
                   autograd of F.rms_norm / F.layer_norm runs on CUDA
    torch-compile  the same aten calls under torch.compile
FlashInfer, Liger and vLLM are not installed on the H200 (design/gpu-machine.md); their wheels
are not carried yet.
BatchNormFwd in training and BatchNormBwd (spec 2.6, 2.8): build_batch_norm_training_case and
build_batch_norm_backward_case say what they time; alternatives torch (F.batch_norm, cuDNN's kernels
where PyTorch picks them) and torch-compile. Liger has no batch norm; FlagGems has one
(flag_gems.ops.batch_norm, forward and backward), not measured here yet. Rows whose x is larger than
the card's L2 record min_bytes (x read twice: docs/perf/norm.md).

SOLOPS_BENCH_NORM_LAYOUT=channels_last runs the 4-D rows of the spatial norms (BatchNormFwd,
BatchNormBwd, BatchNormInferenceFwd, GroupNormFwd, GroupNormBwd, InstanceNormFwd, InstanceNormBwd)
with x, and grad_out for the backward rows, channels_last for every implementation, and skips every
other row (the row norms, the other ops and the spatial norms' rows that are not 4-D): the comparison
a CNN user who keeps activations channels_last makes. Outputs are checked by value, whatever their
memory format (ours follow x's; PyTorch's CUDA GroupNorm and InstanceNorm return contiguous tensors).
Write such a run to its own --out file, outside the folder the report reads (every *.jsonl of
bench/results/<gpu>/): e.g. bench/results/<gpu>/channels_last/norm.jsonl, with --profile
bench/results/<gpu>/profile.json.
"""

from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

import solops
from solops.bench import run
from solops.bench.run import Case, Impl, UnsupportedRow


@dataclass(frozen=True)
class NormOp:
    name: str  # the solops function
    eps: float  # the spec's default, passed explicitly
    fused: bool = False
    bias: bool = False  # LayerNorms take a bias
    quant: bool = False  # returns (float8_e4m3fn codes, f32 row scales)
    modulation: bool = False  # weight and bias (AdaLayerNorm's scale and shift) have x's shape
    qk: bool = False  # two normalized inputs, each with its weight
    group: bool = False  # weight [G, D] = x's last two dims; returns (output, f32 rstd)


NORM_OPS = {
    "RMSNormFwd": NormOp("rms_norm", 1e-6),
    "LayerNormFwd": NormOp("layer_norm", 1e-5, bias=True),
    "FusedAddLayerNormFwd": NormOp("fused_add_layer_norm", 1e-5, fused=True, bias=True),
    "FusedAddRMSNormFwd": NormOp("fused_add_rms_norm", 1e-6, fused=True),
    "GemmaRMSNormFwd": NormOp("gemma_rms_norm", 1e-6),
    "AdaLayerNormFwd": NormOp("ada_layer_norm", 1e-5, bias=True, modulation=True),
    "RMSNormQuantFwd": NormOp("rms_norm_quant", 1e-6, quant=True),
    "LayerNormQuantFwd": NormOp("layer_norm_quant", 1e-5, bias=True, quant=True),
    "QKNormFwd": NormOp("qk_norm", 1e-6, qk=True),
    "GroupRMSNormFwd": NormOp("group_rms_norm", 1e-6, group=True),
}
BACKWARD_OPS = {
    "RMSNormBwd": NormOp("rms_norm", 1e-6),
    "LayerNormBwd": NormOp("layer_norm", 1e-5, bias=True),
}
REDUCTION_OPS = {"L1NormFwd": 1, "L2NormFwd": 2}  # the vector norm's ord
REDUCTION_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 1e-2, torch.float32: 1e-5}
WEIGHT_NORM_TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5}
BATCH_NORM_TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5}
BATCH_NORM_TRAINING_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}
OPS = (tuple(NORM_OPS) + tuple(BACKWARD_OPS) + tuple(REDUCTION_OPS)
       + ("WeightNormFwd", "SpectralNormPowerIterFwd", "BatchNormInferenceFwd", "BatchNormFwd", "BatchNormBwd")
       + ("GroupNormFwd", "GroupNormBwd", "InstanceNormFwd", "InstanceNormBwd"))
LAYOUT_VARIABLE = "SOLOPS_BENCH_NORM_LAYOUT"
# The ops whose 4-D rows a channels_last run takes: the norms over [B, C, *spatial] that accept it.
CHANNELS_LAST_OPS = ("BatchNormFwd", "BatchNormBwd", "BatchNormInferenceFwd", "GroupNormFwd", "GroupNormBwd",
                     "InstanceNormFwd", "InstanceNormBwd")

# Statistics and scaling are f32 arithmetic on CUDA cores.
RATE_KIND = "cuda_core_f32"

# spec/ops.md: atol = rtol per op and dtype.
TOLERANCE = {
    "RMSNormFwd": {torch.float16: 1e-2, torch.bfloat16: 1.6e-2, torch.float32: 1e-5},
    "LayerNormFwd": {torch.float16: 1e-3, torch.bfloat16: 1e-2, torch.float32: 1e-5},
    "FusedAddLayerNormFwd": {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5},
    "FusedAddRMSNormFwd": {torch.float16: 1e-2, torch.bfloat16: 1.6e-2, torch.float32: 1e-5},
    "GemmaRMSNormFwd": {torch.float16: 1e-2, torch.bfloat16: 1.6e-2, torch.float32: 1e-5},
    "AdaLayerNormFwd": {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5},
    "QKNormFwd": {torch.float16: 1e-2, torch.bfloat16: 1.6e-2, torch.float32: 1e-5},
    "GroupRMSNormFwd": {torch.float16: 1e-2, torch.bfloat16: 1.6e-2, torch.float32: 1e-5},
    "RMSNormBwd": {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4},
    "LayerNormBwd": {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4},
}


def present_alternatives() -> dict[str, str | None]:
    """Each alternative mapped to None when usable here, or to the reason it is absent."""
    present = {"torch": None, "torch-compile": None}
    present["liger"] = run.import_failure("liger_kernel.ops")  # Liger's Triton kernels; scripts/fetch-wheels.sh
    present["flaggems"] = run.import_failure("flag_gems", run.import_flag_gems)
    return present


def input_format(op_name: str, shape) -> torch.memory_format:
    """The memory format of the row's x (and grad_out): channels_last in a channels_last run
    (SOLOPS_BENCH_NORM_LAYOUT), which takes the 4-D rows of CHANNELS_LAST_OPS only, else contiguous."""
    if not run.channels_last_run(LAYOUT_VARIABLE):
        return torch.contiguous_format
    if op_name not in CHANNELS_LAST_OPS or len(shape) != 4:
        raise UnsupportedRow("channels_last runs take the 4-D rows of BatchNorm, GroupNorm and InstanceNorm only")
    return torch.channels_last


def random_tensor(shape, dtype: torch.dtype, stream: int, memory_format=torch.contiguous_format) -> torch.Tensor:
    """Standard normal values from the fixed seed plus `stream`, so x, residual, weight and bias differ."""
    generator = torch.Generator().manual_seed(run.INPUT_SEED + stream)
    return torch.randn(tuple(shape), generator=generator, dtype=torch.float32).to(dtype, memory_format=memory_format)


def quantize_rows(y: torch.Tensor, normalized_dims: int = 1):
    """Spec 2.15 on f32 y: scale = max(amax |y| of each row, 1e-12) / 448, q = (y / scale) cast to
    float8_e4m3fn. Returns (q, scale)."""
    scale = y.abs().flatten(-normalized_dims).amax(-1).clamp_min(1e-12) / 448
    return (y / scale.reshape(*scale.shape, *[1] * normalized_dims)).to(torch.float8_e4m3fn), scale


def check_quantized(actual, expected, y=None):
    """Spec 2.15: scales to rtol 1e-4; codes within one e4m3 step of the expected ones and at least
    99.9 % identical. Given y (the f32 values before quantization), codes at an exact tie (y / scale
    within 1e-5 of the midpoint of the two codes, where the f32 rounding of y and scale decides) do
    not count against the 99.9 %."""
    (q, scale), (want_q, want_scale) = actual, expected
    assert q.dtype == torch.float8_e4m3fn and scale.dtype == torch.float32, (q.dtype, scale.dtype)
    torch.testing.assert_close(scale, want_scale, rtol=1e-4, atol=0, equal_nan=True)
    codes, want_codes = q.view(torch.uint8).int(), want_q.view(torch.uint8).int()
    values, want_values = q.float(), want_q.float()
    differ = (codes != want_codes) & ~(torch.isnan(values) & torch.isnan(want_values))
    # Adjacent codes of one sign are adjacent values; +0 and -0 differ in the sign bit only.
    one_step = ((codes - want_codes).abs() <= 1) & ((codes ^ want_codes) & 0x80 == 0)
    zeros = (values == 0) & (want_values == 0)
    assert bool((~differ | one_step | zeros).all()), "a code is more than one e4m3 step from the expected one"
    if y is not None:
        rows = want_scale.double().reshape(*want_scale.shape, *[1] * (q.dim() - want_scale.dim()))
        middle = (values.double() + want_values.double()) / 2
        differ &= ~((y.double() / rows - middle).abs() <= 1e-5 * middle.abs())
    assert differ.sum().item() <= 1e-3 * q.numel(), f"{differ.sum().item()} of {q.numel()} codes differ (ties aside)"


def torch_function(op: NormOp):
    """The PyTorch formulation of the op, as a function of ours (so torch.compile traces it)."""
    if op.name == "ada_layer_norm":
        return lambda x, scale, shift: (
            scale.float() * F.layer_norm(x.float(), x.shape[-1:], None, None, op.eps) + shift.float()).to(x.dtype)
    if op.name == "rms_norm_quant":
        return lambda x, weight: quantize_rows(F.rms_norm(x.float(), weight.shape, weight.float(), op.eps))
    if op.name == "layer_norm_quant":
        return lambda x, weight, bias: quantize_rows(
            F.layer_norm(x.float(), weight.shape, weight.float(), bias.float(), op.eps))
    if op.name == "rms_norm":
        return lambda x, weight: F.rms_norm(x, weight.shape, weight, op.eps)
    if op.name == "layer_norm":
        return lambda x, weight, bias: F.layer_norm(x, weight.shape, weight, bias, op.eps)
    if op.name == "gemma_rms_norm":
        def gemma(x, weight):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + op.eps) * (1.0 + weight.float())).to(x.dtype)
        return gemma
    if op.name == "group_rms_norm":
        def group(x, weight):
            xf = x.float()
            rstd = torch.rsqrt(xf.pow(2).mean(-1) + op.eps)
            return (xf * rstd.unsqueeze(-1) * weight.float()).to(x.dtype), rstd
        return group
    if op.name == "qk_norm":
        return lambda q, k, q_weight, k_weight: (F.rms_norm(q, q_weight.shape, q_weight, op.eps),
                                                 F.rms_norm(k, k_weight.shape, k_weight, op.eps))
    if op.name == "fused_add_rms_norm":
        def fused_rms(x, residual, weight):
            summed = x + residual
            return F.rms_norm(summed, weight.shape, weight, op.eps), summed
        return fused_rms

    def fused_layer(x, residual, weight, bias):
        summed = x + residual
        return F.layer_norm(summed, weight.shape, weight, bias, op.eps), summed

    return fused_layer


def check_close(tolerance: float):
    return partial(torch.testing.assert_close, rtol=tolerance, atol=tolerance, equal_nan=True)


def check_with_rstd(tolerance: float):
    """GroupRMSNorm (spec 2.19) and WeightNorm (2.20): the output at the op's tolerance, the f32 rstd or
    norm to rtol 1e-5."""
    def check(actual, expected):
        check_close(tolerance)(actual[0], expected[0])
        torch.testing.assert_close(actual[1], expected[1], rtol=1e-5, atol=0, equal_nan=True)
    return check


def liger_function(op: NormOp):
    """Liger's kernel for the op as a function of ours, or None where Liger has none. Its default
    Triton implementations (the submodules; the package may swap in other backends): RMSNorm in its
    "llama" casting mode (f32 statistics, x * rstd rounded to x's dtype before the weight), Gemma as
    RMSNorm with offset 1 in its "gemma" mode (all in f32, one cast: spec 2.17), LayerNorm, and the
    fused add RMSNorm returning (output, x + residual) like ours; out of place, as ours."""
    if op.name in ("rms_norm", "gemma_rms_norm"):
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
        offset, mode = (1.0, "gemma") if op.name == "gemma_rms_norm" else (0.0, "llama")
        return lambda x, weight: LigerRMSNormFunction.apply(x, weight, op.eps, offset, mode, False)
    if op.name == "layer_norm":
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        return lambda x, weight, bias: LigerLayerNormFunction.apply(x, weight, bias, op.eps)
    if op.name == "fused_add_rms_norm":
        from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
        return lambda x, residual, weight: LigerFusedAddRMSNormFunction.apply(x, residual, weight, op.eps, 0.0,
                                                                              "llama", False)
    return None


def formulation_impl(name: str, what: str, function, *inputs) -> Impl:
    """torch and torch-compile run `function`, the PyTorch formulation of `what`; Liger has no kernel
    for it (callers with a Liger kernel take it first)."""
    if name == "torch":
        return Impl(name, partial(function, *inputs))
    if name == "torch-compile":
        return Impl(name, partial(run.compile_for_benchmark(function), *inputs))
    if name == "liger":
        return Impl(name, None, not_applicable=f"liger-kernel has no {what}")
    if name == "flaggems":
        return Impl(name, None, not_applicable=f"FlagGems has no {what}")
    raise ValueError(f"unknown alternative {name}")


def alternative_impl(name: str, op: NormOp, inputs: tuple) -> Impl:
    if name == "liger" and (function := liger_function(op)) is not None:
        return Impl(name, partial(function, *inputs))
    return formulation_impl(name, op.name, torch_function(op), *inputs)


def check_gradients(tolerance: float, rows: int):
    """grad_x at the spec's tolerance; the parameter gradients with atol scaled by sqrt(rows): those the
    implementation returns (None, or none at all, where the row asks for grad_x alone), against the
    reference's."""
    def check(actual, expected):
        check_close(tolerance)(actual[0], expected[0])
        for got, want in zip(actual[1:], expected[1:]):
            torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance * max(1, rows) ** 0.5, equal_nan=True)
    return check


def torch_backward(op: NormOp, dy, x, weight, bias):
    """PyTorch's backward kernel with the statistics of its own forward ([M, 1], as aten keeps them)."""
    ns = list(weight.shape)
    if op.name == "rms_norm":
        _, rstd = torch.ops.aten._fused_rms_norm(x, ns, weight, op.eps)
        return lambda: torch.ops.aten._fused_rms_norm_backward(dy, x, ns, rstd, weight, [True, True])
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, ns, weight, bias, op.eps)
    return lambda: torch.ops.aten.native_layer_norm_backward(dy, x, ns, mean, rstd, weight, bias, [True, True, True])


def build_backward_case(op_name: str, row: dict, alternatives: list[str], shape, dtype) -> Case:
    op = BACKWARD_OPS[op_name]
    ns = shape[-1:]
    cpu = [random_tensor(shape, dtype, 4), random_tensor(shape, dtype, 0), random_tensor(ns, dtype, 2)]
    dy, x, weight = (t.cuda() for t in cpu)
    bias = random_tensor(ns, dtype, 3).cuda() if op.bias else None
    if op.bias:
        _, mean, rstd = torch.ops.solops.layer_norm_with_stats(x, ns, weight, bias, op.eps)
        _, *cpu_stats = solops.reference.run(torch.ops.solops.layer_norm_with_stats, cpu[1], ns, cpu[2], None, op.eps)
        backward, stats = solops.layer_norm_backward, (mean, rstd)
    else:
        _, rstd = torch.ops.solops.rms_norm_with_stats(x, ns, weight, op.eps)
        _, *cpu_stats = solops.reference.run(torch.ops.solops.rms_norm_with_stats, cpu[1], ns, cpu[2], op.eps)
        backward, stats = solops.rms_norm_backward, (rstd,)
    cpu_args = (cpu[0], cpu[1], ns, *cpu_stats, cpu[2])
    impls = [Impl("solops", partial(backward, dy, x, ns, *stats, weight))] + [
        formulation_impl(name, f"{op.name} backward outside autograd", torch_backward(op, dy, x, weight, bias))
        for name in alternatives]
    rows = torch.Size(shape[:-1]).numel()
    return run.row_case(op_name, row, solops.cost.of(backward, *cpu_args), RATE_KIND,
                        partial(solops.reference.run, backward, *cpu_args),
                        check_gradients(TOLERANCE[op_name][dtype], rows), impls)


def build_reduction_case(op_name: str, row: dict, alternatives: list[str], shape, dtype) -> Case:
    ord, dim = REDUCTION_OPS[op_name], row["params"].get("dim")
    cpu = random_tensor(shape, dtype, 0)
    x = cpu.cuda()

    def torch_norm(x):
        return torch.linalg.vector_norm(x.float(), ord, dim).to(x.dtype)

    impls = [Impl("solops", partial(solops.vector_norm, x, ord, dim))] + [
        formulation_impl(name, "vector norm", torch_norm, x) for name in alternatives]
    return run.row_case(op_name, row, solops.cost.of(solops.vector_norm, cpu, ord, dim), RATE_KIND,
                        partial(solops.reference.run, solops.vector_norm, cpu, ord, dim),
                        check_close(REDUCTION_TOLERANCE[dtype]), impls)


def build_weight_norm_case(op_name: str, row: dict, alternatives: list[str], shape, dtype) -> Case:
    dim = row["params"].get("dim", 0)
    cpu_v, cpu_g = random_tensor(shape, dtype, 0), random_tensor(shape[dim:dim + 1], dtype, 1)
    v, g = cpu_v.cuda(), cpu_g.cuda()
    stored_g = g.view([size if d == dim else 1 for d, size in enumerate(shape)])

    def torch_weight_norm(v, stored_g):
        w, norm = torch._weight_norm_interface(v, stored_g, dim)
        return w, norm.flatten()

    impls = [Impl("solops", partial(solops.weight_norm, v, g, dim))] + [
        formulation_impl(name, "weight norm", torch_weight_norm, v, stored_g) for name in alternatives]
    return run.row_case(op_name, row, solops.cost.of(solops.weight_norm, cpu_v, cpu_g, dim), RATE_KIND,
                        partial(solops.reference.run, solops.weight_norm, cpu_v, cpu_g, dim),
                        check_with_rstd(WEIGHT_NORM_TOLERANCE[dtype]), impls)


def check_spectral_norm(actual, expected):
    """Spec 2.21: sigma to rtol 1e-4; u_out and v_out to atol 1e-5, rtol 1e-4."""
    torch.testing.assert_close(actual[0], expected[0], rtol=1e-4, atol=0, equal_nan=True)
    for got, want in zip(actual[1:], expected[1:]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)


def torch_spectral_norm(n_iter: int, eps: float):
    """The spec's formula: torch.nn.utils.spectral_norm's power method and sigma on W widened to f32."""
    def power_method(x, u, v):
        w = x.float()
        for _ in range(n_iter):
            v = F.normalize(torch.mv(w.t(), u), dim=0, eps=eps)
            u = F.normalize(torch.mv(w, v), dim=0, eps=eps)
        return torch.vdot(u, torch.mv(w, v)), u, v
    return power_method


def build_spectral_norm_case(op_name: str, row: dict, alternatives: list[str], shape, dtype) -> Case:
    if row["tensors"].get("normalized", shape[-1:]) != shape[-1:]:
        raise ValueError(f"normalized {row['tensors']['normalized']} is not x's last dim {shape[-1:]}")
    n_iter, eps = row["params"].get("n_iter", 1), row["params"].get("eps", 1e-12)
    cpu = (random_tensor(shape, dtype, 0), random_tensor(shape[:1], torch.float32, 1),
           random_tensor(shape[1:], torch.float32, 2))
    inputs = tuple(t.cuda() for t in cpu)
    impls = [Impl("solops", partial(solops.spectral_norm_power_iter, *inputs, n_iter, eps))] + [
        formulation_impl(name, "spectral norm power iteration", torch_spectral_norm(n_iter, eps), *inputs)
        for name in alternatives]
    return run.row_case(op_name, row, solops.cost.of(solops.spectral_norm_power_iter, *cpu, n_iter, eps), RATE_KIND,
                        partial(solops.reference.run, solops.spectral_norm_power_iter, *cpu, n_iter, eps),
                        check_spectral_norm, impls)


def build_batch_norm_case(op_name: str, row: dict, alternatives: list[str], shape, dtype, memory_format) -> Case:
    channels = shape[1:2]
    generator = torch.Generator().manual_seed(run.INPUT_SEED + 4)
    cpu = (random_tensor(shape, dtype, 0, memory_format), random_tensor(channels, torch.float32, 1),
           torch.rand(channels, generator=generator) + 0.5, random_tensor(channels, torch.float32, 2),
           random_tensor(channels, torch.float32, 3))
    inputs = tuple(t.cuda() for t in cpu)

    def torch_batch_norm(x, running_mean, running_var, weight, bias):
        return F.batch_norm(x, running_mean, running_var, weight, bias, training=False, eps=1e-5)

    impls = [Impl("solops", partial(solops.batch_norm_inference, *inputs))] + [
        formulation_impl(name, "batch norm", torch_batch_norm, *inputs) for name in alternatives]
    return run.row_case(op_name, row, solops.cost.of(solops.batch_norm_inference, *cpu), RATE_KIND,
                        partial(solops.reference.run, solops.batch_norm_inference, *cpu),
                        check_close(BATCH_NORM_TOLERANCE[dtype]), impls)


BATCH_NORM_MOMENTUM, BATCH_NORM_EPS = 0.1, 1e-5


def batch_norm_parameters(channels):
    """running_mean, running_var (uniform in [0.5, 1.5)), weight and bias: float32 [C] CPU tensors."""
    generator = torch.Generator().manual_seed(run.INPUT_SEED + 4)
    return (random_tensor(channels, torch.float32, 1), torch.rand(channels, generator=generator) + 0.5,
            random_tensor(channels, torch.float32, 2), random_tensor(channels, torch.float32, 3))


def larger_than_the_l2(nbytes: float) -> bool:
    return nbytes > torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size


def build_batch_norm_training_case(op_name: str, row: dict, alternatives: list[str], shape, dtype,
                                   memory_format) -> Case:
    """BatchNormFwd in training (spec 2.6): y and the running statistics' update (momentum 0.1, eps 1e-5),
    each call on its own copies of the running statistics, which every timed call updates again. Where x
    is larger than the L2 it must be read twice (statistics, then y): min_bytes counts that."""
    cpu_x = random_tensor(shape, dtype, 0, memory_format)
    cpu_parameters = batch_norm_parameters(shape[1:2])
    x, weight, bias = cpu_x.cuda(), cpu_parameters[2].cuda(), cpu_parameters[3].cuda()

    def running():
        return cpu_parameters[0].cuda(), cpu_parameters[1].cuda()

    def solops_call(mean, var):
        return solops.batch_norm(x, mean, var, weight, bias, True, BATCH_NORM_MOMENTUM, BATCH_NORM_EPS), mean, var

    def torch_batch_norm(x, mean, var, weight, bias):
        return F.batch_norm(x, mean, var, weight, bias, True, BATCH_NORM_MOMENTUM, BATCH_NORM_EPS), mean, var

    def reference():
        mean, var = cpu_parameters[0].clone(), cpu_parameters[1].clone()
        y = solops.reference.run(solops.batch_norm, cpu_x, mean, var, *cpu_parameters[2:], True, BATCH_NORM_MOMENTUM,
                                 BATCH_NORM_EPS)
        return y, mean, var

    impls = [Impl("solops", partial(solops_call, *running()))] + [
        formulation_impl(name, "training batch norm", torch_batch_norm, x, *running(), weight, bias)
        for name in alternatives]
    cost = solops.cost.of(solops.batch_norm, cpu_x, *cpu_parameters, True, BATCH_NORM_MOMENTUM, BATCH_NORM_EPS)
    x_bytes = cpu_x.numel() * cpu_x.element_size()
    min_bytes = cost[1] + x_bytes if larger_than_the_l2(x_bytes) else None
    return run.row_case(op_name, row, cost, RATE_KIND, reference, check_close(BATCH_NORM_TRAINING_TOLERANCE[dtype]),
                        impls, min_bytes)


def build_batch_norm_backward_case(op_name: str, row: dict, alternatives: list[str], shape, dtype,
                                   memory_format) -> Case:
    """BatchNormBwd (spec 2.8), the backward alone: grad_out and x random, the saved statistics of our
    training forward for solops; PyTorch's backward of its own forward for torch (the kernels autograd
    of F.batch_norm runs: cuDNN's where PyTorch picks it) and native_batch_norm_backward under
    torch.compile. grad_x at the spec's tolerance, the parameters' gradients (sums over a channel's L
    values) with atol scaled by sqrt(L). Where x is larger than the L2, x and grad_out must be read twice:
    min_bytes counts that."""
    cpu_dy, cpu_x = random_tensor(shape, dtype, 4, memory_format), random_tensor(shape, dtype, 0, memory_format)
    cpu_mean, cpu_var, cpu_weight, cpu_bias = batch_norm_parameters(shape[1:2])
    dy, x, weight, bias = cpu_dy.cuda(), cpu_x.cuda(), cpu_weight.cuda(), cpu_bias.cuda()
    _, save_mean, save_invstd = torch.ops.solops.batch_norm_training_with_stats(
        x, weight, bias, None, None, BATCH_NORM_MOMENTUM, BATCH_NORM_EPS)
    _, *cpu_stats = solops.reference.run(torch.ops.solops.batch_norm_training_with_stats, cpu_x, cpu_weight, cpu_bias,
                                         None, None, BATCH_NORM_MOMENTUM, BATCH_NORM_EPS)
    cpu_args = (cpu_dy, cpu_x, *cpu_stats, cpu_weight)
    leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
    y = F.batch_norm(leaves[0], cpu_mean.cuda(), cpu_var.cuda(), leaves[1], leaves[2], True, BATCH_NORM_MOMENTUM,
                     BATCH_NORM_EPS)
    _, native_mean, native_invstd = torch.ops.aten.native_batch_norm(x, weight, bias, None, None, True,
                                                                     BATCH_NORM_MOMENTUM, BATCH_NORM_EPS)

    def native_backward(dy, x, weight, mean, invstd):
        return torch.ops.aten.native_batch_norm_backward(dy, x, weight, None, None, mean, invstd, True, BATCH_NORM_EPS,
                                                         [True, True, True])

    def alternative(name):
        if name == "torch":
            return Impl(name, partial(torch.autograd.grad, y, leaves, dy, retain_graph=True))
        return formulation_impl(name, "batch norm backward", native_backward, dy, x, weight, native_mean,
                                native_invstd)

    impls = [Impl("solops", partial(solops.batch_norm_backward, dy, x, save_mean, save_invstd, weight))] + [
        alternative(name) for name in alternatives]
    cost = solops.cost.of(solops.batch_norm_backward, *cpu_args)
    x_bytes = cpu_x.numel() * cpu_x.element_size()
    min_bytes = cost[1] + 2 * x_bytes if larger_than_the_l2(x_bytes) else None
    return run.row_case(op_name, row, cost, RATE_KIND, partial(solops.reference.run, solops.batch_norm_backward,
                                                                *cpu_args),
                        check_gradients(BATCH_NORM_TRAINING_TOLERANCE[dtype], cpu_x.numel() // shape[1]), impls,
                        min_bytes)


def build_case(op_name: str, row: dict, alternatives: list[str]) -> Case:
    dtype = run.torch_dtype(row["dtype"])
    shape = row["tensors"]["x"]
    memory_format = input_format(op_name, shape)
    if op_name in REDUCTION_OPS:
        return build_reduction_case(op_name, row, alternatives, shape, dtype)
    if op_name == "WeightNormFwd":
        return build_weight_norm_case(op_name, row, alternatives, shape, dtype)
    if op_name == "SpectralNormPowerIterFwd":
        return build_spectral_norm_case(op_name, row, alternatives, shape, dtype)
    if op_name == "BatchNormInferenceFwd":
        return build_batch_norm_case(op_name, row, alternatives, shape, dtype, memory_format)
    if op_name == "BatchNormFwd":
        return build_batch_norm_training_case(op_name, row, alternatives, shape, dtype, memory_format)
    if op_name == "BatchNormBwd":
        return build_batch_norm_backward_case(op_name, row, alternatives, shape, dtype, memory_format)
    if op_name in SPATIAL_OPS:
        return build_spatial_case(op_name, row, alternatives, shape, dtype, memory_format)
    if row["tensors"].get("normalized", shape[-1:]) != shape[-1:]:
        raise ValueError(f"normalized {row['tensors']['normalized']} is not x's last dim {shape[-1:]}")
    if op_name in BACKWARD_OPS:
        return build_backward_case(op_name, row, alternatives, shape, dtype)
    op = NORM_OPS[op_name]
    row_len = shape[-1]
    cpu = [random_tensor(shape, dtype, 0)]
    if op.fused or op.qk:  # residual, or k
        cpu.append(random_tensor(shape, dtype, 1))
    affine_shape = shape if op.modulation else shape[-2:] if op.group else [row_len]
    cpu.append(random_tensor(affine_shape, dtype, 2))
    if op.bias or op.qk:  # bias, or k_weight
        cpu.append(random_tensor(affine_shape, dtype, 3))
    inputs = tuple(t.cuda() for t in cpu)
    function = getattr(solops, op.name)
    if op.fused or op.modulation or op.qk or op.name == "gemma_rms_norm":  # normalized over the last dim
        call = partial(function, eps=op.eps)
    else:
        def call(x, *affine):
            return function(x, [row_len], *affine, eps=op.eps)
    impls = [Impl("solops", partial(call, *inputs))] + [alternative_impl(name, op, inputs) for name in alternatives]
    if op.quant:
        check = check_quantized
    elif op.group:
        check = check_with_rstd(TOLERANCE[op_name][dtype])
    else:
        check = check_close(TOLERANCE[op_name][dtype])
    return run.row_case(op_name, row, solops.cost.of(call, *cpu), RATE_KIND, partial(solops.reference.run, call, *cpu),
                        check, impls)


# ---- GroupNorm and InstanceNorm (spec 2.9-2.12) ------------------------------------------------
# Rows: x [B, C, *spatial] of the row's dtype (random normal), GroupNorm's num_groups from the row,
# weight and bias (x's dtype, random normal) where the row has them, eps 1e-5. InstanceNorm's rows with
# running_mean / running_var (f32: normal means, variances uniform in [0.5, 1.5)) normalize by them
# (use_input_stats=False), as the reference library's rows run; its other rows by each instance's own
# statistics, with no running statistics. Tolerance: forward fp32 1e-5, fp16 1e-3, bf16 1.6e-2;
# backward fp32 1e-4, fp16 1e-2, bf16 2e-2, the parameter gradients' atol scaled by sqrt(B * S).
# The backward rows time the backward alone, from the statistics of the implementation's own forward
# (ours: the *_with_stats op), grad_out random normal; each implementation computes the gradients
# autograd would ask for: the parameters' with the affine, grad_x alone without (ours: output_mask
# [affine, affine]).
# Alternatives:
#     torch          F.group_norm / F.instance_norm; backward: aten.native_group_norm_backward (the
#                    kernels autograd of F.group_norm runs; without affine parameters only grad_x,
#                    which is all it can give), and for InstanceNorm autograd's backward of
#                    F.instance_norm (batch norm on the [1, B * C, S] view), timed by autograd.grad
#                    over a graph made once
#     torch-compile  the same under torch.compile (InstanceNorm's backward: the compiled forward's
#                    backward graph)
#     liger          LigerGroupNormFunction (GroupNorm with weight and bias; its backward through
#                    autograd.grad); no InstanceNorm
#     flaggems       flag_gems.ops.group_norm / group_norm_backward / instance_norm (ATen's signatures)
# With channels_last x (SOLOPS_BENCH_NORM_LAYOUT) every implementation gets x and grad_out so; the
# GroupNorm alternatives copy them to contiguous tensors where PyTorch does (aten's CUDA group norm
# kernels take no other layout): the forward's copy of x and the backward's of grad_out are timed, as
# a user pays them.

SPATIAL_OPS = ("GroupNormFwd", "GroupNormBwd", "InstanceNormFwd", "InstanceNormBwd")
SPATIAL_FORWARD_TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5}
SPATIAL_BACKWARD_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}
SPATIAL_EPS = 1e-5


@dataclass(frozen=True)
class SpatialRow:
    instance: bool
    groups: int  # GroupNorm's num_groups; InstanceNorm: C
    affine: bool
    running: bool  # InstanceNorm by its running statistics

    @property
    def use_input_stats(self) -> bool:
        return not self.running


def spatial_row(op_name: str, row: dict, shape) -> SpatialRow:
    instance = op_name.startswith("InstanceNorm")
    unknown = set(row["params"]) - ({"num_groups"} if not instance else set())
    if unknown:
        raise ValueError(f"unexpected params {sorted(unknown)}")
    groups = shape[1] if instance else row["params"]["num_groups"]
    return SpatialRow(instance, groups, "weight" in row["tensors"], "running_mean" in row["tensors"])


def spatial_inputs(r: SpatialRow, shape, dtype, memory_format):
    """CPU tensors: x (in memory_format), weight, bias (None without the affine), running_mean,
    running_var (None without)."""
    channels = shape[1:2]
    x = random_tensor(shape, dtype, 0, memory_format)
    weight, bias = (random_tensor(channels, dtype, 2), random_tensor(channels, dtype, 3)) if r.affine else (None, None)
    running_mean = running_var = None
    if r.running:
        generator = torch.Generator().manual_seed(run.INPUT_SEED + 5)
        running_mean = random_tensor(channels, torch.float32, 1)
        running_var = torch.rand(channels, generator=generator) + 0.5
    return x, weight, bias, running_mean, running_var


def cuda_or_none(*tensors):
    return tuple(t.cuda() if t is not None else None for t in tensors)


def spatial_forward_functions(r: SpatialRow):
    """(ours, PyTorch's): functions of (x, weight, bias, running_mean, running_var)."""
    if not r.instance:
        def ours(x, weight, bias, running_mean, running_var):
            return solops.group_norm(x, r.groups, weight, bias, SPATIAL_EPS)

        def theirs(x, weight, bias, running_mean, running_var):
            return F.group_norm(x, r.groups, weight, bias, SPATIAL_EPS)
        return ours, theirs

    def ours(x, weight, bias, running_mean, running_var):
        return solops.instance_norm(x, running_mean, running_var, weight, bias, r.use_input_stats, 0.1, SPATIAL_EPS)

    def theirs(x, weight, bias, running_mean, running_var):
        return F.instance_norm(x, running_mean, running_var, weight, bias, r.use_input_stats, 0.1, SPATIAL_EPS)
    return ours, theirs


def flaggems_spatial_forward(r: SpatialRow, x):
    """FlagGems' forward as a function of (x, weight, bias, running_mean, running_var), or why there is none."""
    ops = run.import_flag_gems().ops
    batch, channels, plane = x.shape[0], x.shape[1], x[0, 0].numel()
    if not r.instance:
        function = getattr(ops, "group_norm", None)
        if function is None:
            return "FlagGems has no group_norm"
        # It implements aten's native_group_norm, which F.group_norm calls on x made contiguous.
        return lambda x, weight, bias, _mean, _var: function(x.contiguous(), weight, bias, batch, channels, plane,
                                                             r.groups, SPATIAL_EPS)[0]
    function = getattr(ops, "instance_norm", None)
    if function is None:
        return "FlagGems has no instance_norm"
    return lambda x, weight, bias, mean, var: function(x, weight, bias, mean, var, r.use_input_stats, 0.1, SPATIAL_EPS,
                                                       False)


def spatial_forward_impl(name: str, r: SpatialRow, theirs, inputs) -> Impl:
    if name == "torch":
        return Impl(name, partial(theirs, *inputs))
    if name == "torch-compile":
        return Impl(name, partial(run.compile_for_benchmark(theirs), *inputs))
    if name == "liger":
        if r.instance or not r.affine:
            return Impl(name, None, not_applicable="liger-kernel's group norm takes weight and bias; it has no "
                                                   "instance norm")
        from liger_kernel.ops.group_norm import LigerGroupNormFunction
        x, weight, bias = inputs[:3]
        return Impl(name, partial(LigerGroupNormFunction.apply, x, weight, bias, x.shape[1], r.groups, SPATIAL_EPS))
    if name == "flaggems":
        function = flaggems_spatial_forward(r, inputs[0])
        if isinstance(function, str):
            return Impl(name, None, not_applicable=function)
        return Impl(name, partial(function, *inputs))
    raise ValueError(f"unknown alternative {name}")


def autograd_backward(forward, dy, x, weight, bias, *rest):
    """autograd's backward of forward(x, weight, bias, *rest) alone: the graph made once, retained."""
    leaves = [t.detach().requires_grad_() for t in (x, weight, bias) if t is not None]
    y = forward(leaves[0], *(leaves[1:] if weight is not None else [None, None]), *rest)
    return lambda: torch.autograd.grad(y, leaves, dy, retain_graph=True)


def spatial_backward_impl(name: str, r: SpatialRow, theirs, dy, inputs) -> Impl:
    x, weight, bias, running_mean, running_var = inputs
    batch, channels, plane = x.shape[0], x.shape[1], x[0, 0].numel()
    mask = [True, r.affine, r.affine]
    # aten's group norm kernels on CUDA take contiguous tensors only: F.group_norm's forward makes x
    # contiguous and saves that copy (saved_x), and its autograd makes grad_out contiguous before the
    # backward (a copy each where they are channels_last), as the torch and FlagGems calls below do.
    if name in ("torch", "torch-compile") and not r.instance:
        saved_x = x.contiguous()
        _, mean, rstd = torch.ops.aten.native_group_norm(saved_x, weight, bias, batch, channels, plane, r.groups,
                                                         SPATIAL_EPS)

        def group_backward(dy, x, mean, rstd, weight):
            grads = torch.ops.aten.native_group_norm_backward(dy.contiguous(), x, mean, rstd, weight, batch, channels,
                                                              plane, r.groups, mask)
            return tuple(g for g in grads if g is not None)
        function = group_backward if name == "torch" else run.compile_for_benchmark(group_backward)
        return Impl(name, partial(function, dy, saved_x, mean, rstd, weight))
    if name in ("torch", "torch-compile"):
        forward = theirs if name == "torch" else run.compile_for_benchmark(theirs)
        return Impl(name, autograd_backward(forward, dy, x, weight, bias, running_mean, running_var))
    if name == "liger":
        if r.instance or not r.affine:
            return Impl(name, None, not_applicable="liger-kernel's group norm takes weight and bias; it has no "
                                                   "instance norm")
        from liger_kernel.ops.group_norm import LigerGroupNormFunction

        def liger(x, weight, bias):
            return LigerGroupNormFunction.apply(x, weight, bias, channels, r.groups, SPATIAL_EPS)
        return Impl(name, autograd_backward(liger, dy, x, weight, bias))
    if name == "flaggems":
        ops = run.import_flag_gems().ops
        if r.instance:
            return Impl(name, None, not_applicable="FlagGems has no instance norm backward of its own")
        forward, backward = getattr(ops, "group_norm", None), getattr(ops, "group_norm_backward", None)
        if forward is None or backward is None:
            return Impl(name, None, not_applicable="FlagGems has no group_norm_backward")
        saved_x = x.contiguous()
        _, mean, rstd = forward(saved_x, weight, bias, batch, channels, plane, r.groups, SPATIAL_EPS)
        return Impl(name, lambda: tuple(g for g in backward(dy.contiguous(), saved_x, mean, rstd, weight, batch,
                                                            channels, plane, r.groups, mask) if g is not None))
    raise ValueError(f"unknown alternative {name}")


def build_spatial_case(op_name: str, row: dict, alternatives: list[str], shape, dtype, memory_format) -> Case:
    r = spatial_row(op_name, row, shape)
    cpu = spatial_inputs(r, shape, dtype, memory_format)
    inputs = cuda_or_none(*cpu)
    ours, theirs = spatial_forward_functions(r)
    if op_name.endswith("Fwd"):
        impls = [Impl("solops", partial(ours, *inputs))]
        impls += [spatial_forward_impl(name, r, theirs, inputs) for name in alternatives]
        return run.row_case(op_name, row, solops.cost.of(ours, *cpu), RATE_KIND,
                            partial(solops.reference.run, ours, *cpu), check_close(SPATIAL_FORWARD_TOLERANCE[dtype]),
                            impls)
    x, weight, bias, running_mean, running_var = cpu
    dy = random_tensor(shape, dtype, 4, memory_format)
    mask = [r.affine, r.affine]
    if r.instance:
        def forward_with_stats(x, weight, bias, running_mean, running_var):
            return torch.ops.solops.instance_norm_with_stats(x, running_mean, running_var, weight, bias,
                                                             r.use_input_stats, 0.1, SPATIAL_EPS)

        def backward(dy, x, mean, rstd, weight):
            return solops.instance_norm_backward(dy, x, mean, rstd, weight, r.use_input_stats, mask)
    else:
        def forward_with_stats(x, weight, bias, running_mean, running_var):
            return torch.ops.solops.group_norm_with_stats(x, r.groups, weight, bias, SPATIAL_EPS)

        def backward(dy, x, mean, rstd, weight):
            return solops.group_norm_backward(dy, x, r.groups, mean, rstd, weight, mask)
    _, *cpu_stats = solops.reference.run(forward_with_stats, *cpu)
    _, *stats = forward_with_stats(*inputs)
    cpu_args = (dy, x, *cpu_stats, weight)
    impls = [Impl("solops", partial(backward, dy.cuda(), inputs[0], *stats, inputs[1]))]
    impls += [spatial_backward_impl(name, r, theirs, dy.cuda(), inputs) for name in alternatives]
    return run.row_case(op_name, row, solops.cost.of(backward, *cpu_args), RATE_KIND,
                        partial(solops.reference.run, backward, *cpu_args),
                        check_gradients(SPATIAL_BACKWARD_TOLERANCE[dtype], x.numel() // shape[1]), impls)
