"""Conv family benchmark entries: Conv1dFwd, Conv2dFwd, Conv3dFwd, PointwiseConv2d,
DepthwiseConv2d, GroupedConv2d, DilatedConv2d, Conv2dBiasRelu and Conv1dCausal (spec 3.0-3.9).

Each manifest row becomes a run.Case: random normal input, weight and bias (fixed seeds, the row's
dtype; the weight and bias of rows that leave them out from the row's dims: a 1x1 kernel for
PointwiseConv2d, one channel a group for DepthwiseConv2d, the kernel the workload's name gives for
Conv3dFwd), the solops call with the row's parameters, the CPU reference, the cost model, the
spec's tolerance (3.0: f16 1e-3, bf16 1.6e-2; the dilated f16 rows atol 2e-3, rtol 3e-3; f32 1e-4
against float64, 6.12) and the alternatives:
    torch            F.conv1d / conv2d / conv3d, eager (cuDNN; its bias is a separate add);
                     F.relu after it for Conv2dBiasRelu, F.pad on the left before it for Conv1dCausal
    torch-compile    the same function under torch.compile (default mode, static shapes)
    cudnn-benchmark  the torch function with torch.backends.cudnn.benchmark on: cuDNN's fastest
                     algorithm for the shape, found at the first (untimed) call
    causal-conv1d    causal_conv1d_fn of the causal-conv1d package, where it imports, for the
                     depthwise causal rows it computes (kW <= 4; no catalogue row is one)
    flaggems         FlagGems' own conv functions, called directly, where it has the op

SOLOPS_BENCH_CONV_LAYOUT=channels_last runs the 2-D rows with channels_last input and weight, for
every implementation (the output is then channels_last too), and skips the 1-D and 3-D rows: the
comparison a CNN user who feeds cuDNN channels_last makes. Write such a run to its own --out file,
outside the folder the report reads (every *.jsonl of bench/results/<gpu>/): e.g.
bench/results/<gpu>/channels_last/conv.jsonl, with --profile bench/results/<gpu>/profile.json.
SOLOPS_BENCH_NORM_LAYOUT is the norm family's switch (solops.bench.norm).
"""

import re
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

import solops
from solops.bench import run
from solops.bench.run import Case, Impl, UnsupportedRow


@dataclass(frozen=True)
class ConvOp:
    function: str  # the solops function
    spatial: int  # 1, 2 or 3


CONV_OPS = {
    "Conv1dFwd": ConvOp("conv1d", 1),
    "Conv2dFwd": ConvOp("conv2d", 2),
    "Conv3dFwd": ConvOp("conv3d", 3),
    "PointwiseConv2d": ConvOp("pointwise_conv2d", 2),
    "DepthwiseConv2d": ConvOp("depthwise_conv2d", 2),
    "GroupedConv2d": ConvOp("grouped_conv2d", 2),
    "DilatedConv2d": ConvOp("dilated_conv2d", 2),
    "Conv2dBiasRelu": ConvOp("conv2d_bias_relu", 2),
    "Conv1dCausal": ConvOp("conv1d_causal", 1),
}
OPS = tuple(CONV_OPS)

# spec/ops.md 3.0 (atol = rtol), 3.7's dilated f16 rows, and 6.12 (f32 in full f32).
TOLERANCE = {torch.float16: (1e-3, 1e-3), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float32: (1e-4, 1e-4)}
DILATED_F16_TOLERANCE = (2e-3, 3e-3)
CAUSAL_CONV1D_MAX_TAPS = 4
LAYOUT_VARIABLE = "SOLOPS_BENCH_CONV_LAYOUT"
PARAMS = ("stride", "padding", "dilation", "groups")


def present_alternatives() -> dict[str, str | None]:
    """Each alternative mapped to None when usable here, or to the reason it is absent."""
    present = {"torch": None, "torch-compile": None}
    present["cudnn-benchmark"] = None if torch.backends.cudnn.is_available() else "cuDNN is not available to torch"
    present["causal-conv1d"] = run.import_failure("causal_conv1d")  # Dao-AILab's CUDA kernels
    present["flaggems"] = run.import_failure("flag_gems", run.import_flag_gems)
    return present


@dataclass(frozen=True)
class RowCall:
    input: list[int]
    weight: list[int]
    bias: bool
    params: dict


def workload_kernel(workload: str) -> int:
    """The kernel size a Conv3dFwd row without a weight names ("k3", "3x3x3")."""
    match = re.search(r"k(\d+)|(\d+)x\d+x\d+", workload)
    if match is None:
        raise ValueError(f"no kernel size in workload {workload!r} and no weight")
    return int(match[1] or match[2])


def row_call(op_name: str, row: dict) -> RowCall:
    """The shapes and F.conv*d keyword arguments of a row."""
    op = CONV_OPS[op_name]
    tensors, params, dims = row["tensors"], dict(row["params"]), row["dims"]
    unknown = set(params) - set(PARAMS)
    if unknown:
        # Ignoring a parameter would benchmark a different function than the row names.
        raise ValueError(f"unexpected params {sorted(unknown)}")
    x = tensors.get("input", tensors.get("input_shape"))
    weight = tensors.get("weight", tensors.get("weight_shape"))
    if op_name == "DepthwiseConv2d":
        params["groups"] = x[1]
    if weight is None:
        groups = params.get("groups", 1)
        if op_name == "PointwiseConv2d":
            kernel = 1
        elif "kH" in dims:
            kernel = dims["kH"]
        else:
            kernel = workload_kernel(row["workload"])
        weight = [dims["C_out"], x[1] // groups, *[kernel] * op.spatial]
    if op_name == "Conv1dCausal":
        params.pop("padding", None)
    params = {name: tuple(value) if isinstance(value, list) else value for name, value in params.items()}
    return RowCall(list(x), list(weight), "bias" in tensors, params)


def random_tensor(shape, dtype: torch.dtype, stream: int) -> torch.Tensor:
    """0.25 * standard normal values (spec 3.0's draw: unit values make the sums of the widest rows so
    large that float32 accumulation alone, in any order, misses the f16 tolerance near zero) from the
    fixed seed plus `stream`, so input, weight and bias differ."""
    generator = torch.Generator().manual_seed(run.INPUT_SEED + stream)
    return (0.25 * torch.randn(tuple(shape), generator=generator, dtype=torch.float32)).to(dtype)


# ---- the functions each implementation computes ----------------------------------------------


def torch_function(op: ConvOp, params: dict):
    # A function defined here rather than a partial of F.*: torch.compile may skip frames that
    # start in torch's own files and run them eagerly; a function of ours is always traced.
    conv = getattr(F, f"conv{op.spatial}d")
    if op.function == "conv1d_causal":
        dilation = params.get("dilation", 1)
        dilation = dilation[0] if isinstance(dilation, tuple) else dilation

        def causal(x, weight, bias):
            return conv(F.pad(x, ((weight.shape[-1] - 1) * dilation, 0)), weight, bias, **params)

        return causal
    if op.function == "conv2d_bias_relu":

        def bias_relu(x, weight, bias):
            return F.relu(conv(x, weight, bias, **params))

        return bias_relu

    def plain(x, weight, bias):
        return conv(x, weight, bias, **params)

    return plain


def with_cudnn_benchmark(function):
    """function with torch.backends.cudnn.benchmark on for the call: cuDNN times its algorithms for
    the shape at the first call and keeps the fastest."""

    def call(*args):
        previous = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = True
        try:
            return function(*args)
        finally:
            torch.backends.cudnn.benchmark = previous

    return call


def causal_conv1d_function(op: ConvOp, call: RowCall):
    """causal_conv1d_fn, or a string saying why it cannot compute this row."""
    if op.function != "conv1d_causal":
        return "causal-conv1d has the causal 1-D convolution only"
    channels, out_channels = call.input[-2], call.weight[0]
    depthwise = call.params.get("groups", 1) == channels == out_channels
    plain = all(call.params.get(name, 1) in (1, (1,)) for name in ("stride", "dilation"))
    if not depthwise or not plain or call.weight[-1] > CAUSAL_CONV1D_MAX_TAPS:
        return f"causal-conv1d is depthwise, stride 1, dilation 1, kW <= {CAUSAL_CONV1D_MAX_TAPS}; this row is not"
    from causal_conv1d import causal_conv1d_fn

    return lambda x, weight, bias: causal_conv1d_fn(x, weight.squeeze(1), bias)


def flaggems_function(op: ConvOp, params: dict):
    """FlagGems' function in F.conv*d's argument order, or a string saying why FlagGems cannot compute this op."""
    if op.function in ("conv1d_causal", "conv2d_bias_relu"):
        return f"FlagGems has no {op.function}"
    function = getattr(run.import_flag_gems().ops, f"conv{op.spatial}d", None)
    if function is None:
        return f"FlagGems has no conv{op.spatial}d"
    arguments = [params.get(name, default) for name, default in zip(PARAMS, (1, 0, 1, 1))]
    return lambda x, weight, bias: function(x, weight, bias, *arguments)


def check_close(atol: float, rtol: float):
    return partial(torch.testing.assert_close, rtol=rtol, atol=atol, equal_nan=True)


def tolerance(op_name: str, dtype: torch.dtype, params: dict) -> tuple[float, float]:
    dilated = op_name == "DilatedConv2d" or params.get("dilation", 1) not in (1, (1,), (1, 1), (1, 1, 1))
    return DILATED_F16_TOLERANCE if dilated and dtype == torch.float16 else TOLERANCE[dtype]


def alternative_impl(name: str, op: ConvOp, call: RowCall, inputs: tuple) -> Impl:
    if name == "torch":
        return Impl(name, partial(torch_function(op, call.params), *inputs))
    if name == "torch-compile":
        return Impl(name, partial(run.compile_for_benchmark(torch_function(op, call.params)), *inputs))
    if name == "cudnn-benchmark":
        return Impl(name, partial(with_cudnn_benchmark(torch_function(op, call.params)), *inputs))
    if name in ("causal-conv1d", "flaggems"):
        function = causal_conv1d_function(op, call) if name == "causal-conv1d" else flaggems_function(op, call.params)
        if isinstance(function, str):
            return Impl(name, None, not_applicable=function)
        return Impl(name, partial(function, *inputs))
    raise ValueError(f"unknown alternative {name}")


def build_case(op_name: str, row: dict, alternatives: list[str]) -> Case:
    op = CONV_OPS[op_name]
    dtype = run.torch_dtype(row["dtype"])
    call = row_call(op_name, row)
    channels_last = run.channels_last_run(LAYOUT_VARIABLE)
    if channels_last and op.spatial != 2:
        raise UnsupportedRow("channels_last runs take the 2-D rows only")
    x_cpu = random_tensor(call.input, dtype, 0)
    weight_cpu = random_tensor(call.weight, dtype, 1)
    bias_cpu = random_tensor(call.weight[:1], dtype, 2) if call.bias else None
    if channels_last:
        x_cpu = x_cpu.to(memory_format=torch.channels_last)
        weight_cpu = weight_cpu.to(memory_format=torch.channels_last)
    cpu_inputs = (x_cpu, weight_cpu, bias_cpu)
    inputs = tuple(None if t is None else t.cuda() for t in cpu_inputs)
    solops_function = partial(getattr(solops, op.function), **call.params)
    impls = [Impl("solops", partial(solops_function, *inputs))]
    impls += [alternative_impl(name, op, call, inputs) for name in alternatives]
    rate_kind = "cuda_core_f32" if dtype == torch.float32 else f"gemm_{row['dtype']}"
    return run.row_case(op_name, row, solops.cost.of(solops_function, *cpu_inputs), rate_kind,
                        partial(solops.reference.run, solops_function, *cpu_inputs),
                        check_close(*tolerance(op_name, dtype, call.params)), impls)
