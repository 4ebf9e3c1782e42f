"""Pool family benchmark entries: the 1-D, 2-D and 3-D sliding-window pools, the adaptive 2-D
pools (max, max with indices, avg) and mean pooling (MeanPoolingFwd, at the end of this file).

Each manifest row becomes a run.Case: a random normal NCL / NCHW input (fixed seed, the row's
dtype), the solops call, the CPU reference, the cost model, the spec's tolerance (spec/ops.md
4.1-4.3) and the alternatives:
    torch          F.max_pool{1,2,3}d / F.avg_pool{1,2,3}d / F.adaptive_*_pool2d, eager
    torch-compile  the same call under torch.compile (default mode, static shapes)
    cudnn          legacy cudnnPoolingForward (no indices, no dilation, no divisor override, no
                   adaptive bins; the baseline library has 2-D pooling only, so no 3-D rows);
                   1-D rows run as 2-D pools of one-row planes, as PyTorch's own 1-D pools do
    flaggems       FlagGems' own pooling functions where it has them, called directly (no global
                   aten patching)
"""

import itertools
import re
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

import solops
from solops.bench import cudnn, run
from solops.bench.run import Case, Impl, UnsupportedRow


@dataclass(frozen=True)
class PoolOp:
    kind: str  # "max" or "avg"
    dims: int  # spatial dims: 1, 2 or 3
    with_indices: bool = False
    adaptive: bool = False  # bins from output_size instead of a sliding window

    @property
    def name(self) -> str:  # the torch.nn.functional / solops function name
        return f"{'adaptive_' if self.adaptive else ''}{self.kind}_pool{self.dims}d"


POOL_OPS = {
    "MaxPool1dFwd": PoolOp("max", 1),
    "MaxPool1dIndicesFwd": PoolOp("max", 1, with_indices=True),
    "AvgPool1dFwd": PoolOp("avg", 1),
    "MaxPool2dFwd": PoolOp("max", 2),
    "MaxPool2dIndicesFwd": PoolOp("max", 2, with_indices=True),
    "AvgPool2dFwd": PoolOp("avg", 2),
    "MaxPool3dFwd": PoolOp("max", 3),
    "MaxPool3dIndicesFwd": PoolOp("max", 3, with_indices=True),
    "AvgPool3dFwd": PoolOp("avg", 3),
    "AdaptiveAvgPool2dFwd": PoolOp("avg", 2, adaptive=True),
    "AdaptiveMaxPool2dFwd": PoolOp("max", 2, adaptive=True),
    "AdaptiveMaxPool2dIndicesFwd": PoolOp("max", 2, with_indices=True, adaptive=True),
}
MEAN_POOLING = "MeanPoolingFwd"
OPS = (*POOL_OPS, MEAN_POOLING)

# Every tap is one compare-select or add in f32, on CUDA cores.
RATE_KIND = "cuda_core_f32"

# spec/ops.md 4.1 (f32 is the proposed 1e-5); max-pool values and indices are exact.
AVG_TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5}

# PyTorch's defaults for parameters a manifest row leaves out (avg_pool1d has no divisor_override).
MAX_POOL_DEFAULTS = {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False}
AVG_POOL_DEFAULTS = {"stride": None, "padding": 0, "ceil_mode": False, "count_include_pad": True}
AVG_POOL2D_DEFAULTS = dict(AVG_POOL_DEFAULTS, divisor_override=None)


def present_alternatives() -> dict[str, str | None]:
    """Each alternative mapped to None when usable here, or to the reason it is absent."""
    present = {"torch": None, "torch-compile": None}
    present["cudnn"] = None if cudnn.load() is not None else "baseline library not built"
    present["flaggems"] = run.import_failure("flag_gems", run.import_flag_gems)
    return present


def pool_params(op: PoolOp, row: dict) -> dict:
    """The F.* keyword arguments of a row: its params over PyTorch's defaults, lists as tuples."""
    if op.adaptive:
        if set(row["params"]) != {"output_size"}:
            raise ValueError(f"unexpected params {sorted(row['params'])}")
        size = row["params"]["output_size"]
        return {"output_size": tuple(size) if isinstance(size, list) else size}
    if op.kind == "max":
        defaults = MAX_POOL_DEFAULTS
    else:
        defaults = AVG_POOL_DEFAULTS if op.dims == 1 else AVG_POOL2D_DEFAULTS
    params = dict(row["params"])
    if "kernel_size" not in params:
        raise ValueError("row has no kernel_size")
    unknown = set(params) - set(defaults) - {"kernel_size"}
    if unknown:
        # Ignoring a parameter would benchmark a different function than the row names.
        raise ValueError(f"unexpected params {sorted(unknown)}")
    merged = dict(defaults, **params)
    return {name: tuple(value) if isinstance(value, list) else value for name, value in merged.items()}


def index_args(op: PoolOp) -> dict:
    return {"return_indices": op.with_indices} if op.kind == "max" else {}


# ---- the functions each implementation computes ----------------------------------------------


def torch_function(op: PoolOp, params: dict):
    # A function defined here rather than a partial of F.*: torch.compile may skip frames that
    # start in torch's own files and run them eagerly; a function of ours is always traced.
    function = getattr(F, op.name)
    extra = index_args(op)

    def pool(x):
        return function(x, **params, **extra)

    return pool


def solops_function(op: PoolOp, params: dict):
    return partial(getattr(solops, op.name), **params, **index_args(op))


def reference_function(op: PoolOp, params: dict):
    return partial(solops.reference.run, solops_function(op, params))


def cost(op: PoolOp, shape: list[int], dtype: torch.dtype, params: dict) -> tuple[float, float]:
    return solops.cost.of(solops_function(op, params), torch.empty(shape, dtype=dtype, device="meta"))


def per_axis(value, axes: int) -> tuple[int, ...]:
    """A window parameter as F.*pool*d takes it (an int or a sequence of one or `axes`), one per axis."""
    values = (value,) if isinstance(value, int) else tuple(value)
    return values * axes if len(values) == 1 else values


def flaggems_function(op: PoolOp, params: dict):
    """FlagGems' function, or a string saying why FlagGems cannot compute this op."""
    ops = run.import_flag_gems().ops
    if op.kind == "avg":
        function = getattr(ops, op.name, None)
        return partial(function, **params) if function else f"FlagGems has no {op.name}"
    # FlagGems has only max_pool*_with_indices (ATen's max_pool on CUDA calls the same op), so
    # the values-only row runs it too and keeps the values.
    function = getattr(ops, f"{op.name}_with_indices", None)
    if function is None:
        return f"FlagGems has no {op.name}_with_indices"
    with_indices = partial(function, **params)
    return with_indices if op.with_indices else (lambda x: with_indices(x)[0])


def cudnn_function(op: PoolOp, params: dict, x_shape: list[int]):
    """The cuDNN call, or a string saying why cuDNN cannot compute this op."""
    if op.adaptive:
        return "cuDNN pooling has no adaptive bins"
    if op.dims == 3:
        return "the cuDNN baseline has 2-D pooling only"
    if len(x_shape) != op.dims + 2:
        return "the cuDNN baseline takes batched input"
    if op.with_indices:
        return "cuDNN pooling returns no indices"
    if params.get("divisor_override") is not None:
        return "cuDNN pooling has no divisor override"
    if op.kind == "max" and set(per_axis(params["dilation"], op.dims)) != {1}:
        return "cuDNN pooling has no dilation"
    if op.kind == "avg":
        mode = cudnn.MODE_AVG_INCLUDE_PAD if params["count_include_pad"] else cudnn.MODE_AVG_EXCLUDE_PAD
    else:
        mode = cudnn.MODE_MAX
    # PyTorch's output size (ceil mode included); the correctness check decides whether cuDNN's
    # windows at that size compute PyTorch's function.
    out_shape = torch_function(op, params)(torch.empty(x_shape, device="meta"))
    out_shape = out_shape[0].shape if op.with_indices else out_shape.shape
    kernel_size = per_axis(params["kernel_size"], op.dims)
    stride = kernel_size if params["stride"] is None else per_axis(params["stride"], op.dims)
    padding = per_axis(params["padding"], op.dims)
    if op.dims == 1:  # one-row planes: (1, k) windows over [N, C, 1, L]
        pool2d = partial(cudnn.pool2d, out_hw=(1, out_shape[-1]), mode=mode, kernel_size=(1, *kernel_size),
                         stride=(1, *stride), padding=(0, *padding))
        return lambda x: pool2d(x.unsqueeze(2)).squeeze(2)
    return partial(cudnn.pool2d, out_hw=tuple(out_shape[2:]), mode=mode, kernel_size=kernel_size,
                   stride=stride, padding=padding)


# ---- checks ----------------------------------------------------------------------------------


def check_exact(actual, reference) -> None:
    """Max pool: values (NaN positions included) and indices must match exactly."""
    torch.testing.assert_close(actual, reference, rtol=0, atol=0, equal_nan=True)


def check_close(tolerance: float):
    return partial(torch.testing.assert_close, rtol=tolerance, atol=tolerance, equal_nan=True)


def check_average(dtype: torch.dtype):
    return check_close(AVG_TOLERANCE[dtype])


# ---- the case --------------------------------------------------------------------------------


def alternative_impl(name: str, op: PoolOp, params: dict, x: torch.Tensor) -> Impl:
    if name == "torch":
        return Impl(name, partial(torch_function(op, params), x))
    if name == "torch-compile":
        return Impl(name, partial(run.compile_for_benchmark(torch_function(op, params)), x))
    if name in ("flaggems", "cudnn"):
        function = flaggems_function(op, params) if name == "flaggems" else cudnn_function(op, params, list(x.shape))
        if isinstance(function, str):
            return Impl(name, None, not_applicable=function)
        return Impl(name, partial(function, x))
    raise ValueError(f"unknown alternative {name}")


def row_case(op_name: str, row: dict, roofline_cost: tuple[float, float], reference, check,
             impls: list[Impl]) -> Case:
    """The Case of one manifest row; every op of this family runs on CUDA cores."""
    return run.row_case(op_name, row, roofline_cost, RATE_KIND, reference, check, impls)


def build_case(op_name: str, row: dict, alternatives: list[str]) -> Case:
    if op_name == MEAN_POOLING:
        return build_mean_pooling_case(row, alternatives)
    op = POOL_OPS[op_name]
    dtype = run.torch_dtype(row["dtype"])
    shape = row["tensors"]["input"]
    if len(shape) not in (op.dims + 1, op.dims + 2):
        raise UnsupportedRow(f"input {shape} is not {['(N)CL', '(N)CHW', '(N)CDHW'][op.dims - 1]}")
    params = pool_params(op, row)
    x_cpu = run.random_normal(shape, dtype)
    x = x_cpu.cuda()
    impls = [Impl("solops", partial(solops_function(op, params), x))]
    impls += [alternative_impl(name, op, params, x) for name in alternatives]
    return row_case(op_name, row, cost(op, shape, dtype, params), partial(reference_function(op, params), x_cpu),
                    check_average(dtype) if op.kind == "avg" else check_exact, impls)


# ---- mean pooling (spec/ops.md 4.6) ------------------------------------------------------------
# Rows: x [B, S, H, D], chunk_size, and for ragged rows seq_lens (a list or "repeat(LEN, COUNT)"),
# from which offsets and indices are built; dtype "f16/f32" is the input / accumulation dtype.
# Ours runs with check_metadata=False: the metadata check is a device-to-host copy and a stream
# synchronisation, which a caller pays once per metadata, not per call.
#     torch          uniform: x.view(B, S / c, c, H, D).mean(2) (a short last chunk averaged apart);
#                    ragged: torch.segment_reduce in f32 over the token axis with the chunks'
#                    lengths, computed from offsets and indices inside the call
#     torch-compile  the same function under torch.compile
#     cudnn, flaggems  not applicable: neither has a chunked mean

# spec/ops.md 4.6 (proposed): atol = rtol = 1e-3 for f16 and f32, 1.6e-2 for bf16.
MEAN_POOLING_TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-3}


def seq_lens(value) -> list[int]:
    """A row's seq_lens: a list, or "repeat(LEN, COUNT)" for COUNT sequences of LEN tokens."""
    if isinstance(value, list):
        return [int(length) for length in value]
    match = re.fullmatch(r"repeat\((\d+),\s*(\d+)\)", value)
    if match is None:
        raise ValueError(f"unexpected seq_lens {value!r}")
    return [int(match[1])] * int(match[2])


def mean_pooling_dtype(name: str) -> torch.dtype:
    """The input dtype of "f16/f32" (input / accumulation); solops accumulates in f32 only."""
    dtype, _, accumulation = name.partition("/")
    if accumulation != "f32":
        raise UnsupportedRow(f"accumulation dtype {accumulation!r}: solops accumulates in f32")
    return run.torch_dtype(dtype)


def torch_mean_pooling(chunk_size: int):
    def pool(x, offsets=None, indices=None):
        if offsets is None:
            batch, seq_len, heads, head_dim = x.shape
            full = seq_len // chunk_size * chunk_size
            out = x[:, :full].view(batch, seq_len // chunk_size, chunk_size, heads, head_dim).mean(2)
            if full < seq_len:
                out = torch.cat([out, x[:, full:].mean(1, keepdim=True)], 1)
            return out
        offsets, sequences, chunks = offsets.long(), indices[:, 0].long(), indices[:, 1].long()
        starts = offsets[sequences] + chunks * chunk_size
        lengths = torch.minimum(starts + chunk_size, offsets[sequences + 1]) - starts
        # segment_reduce reduces the axis of lengths' last dim: one row of lengths per batch row. It
        # accumulates in the input dtype (f16 misses the f32-accumulation tolerance), so the sums
        # run in f32, as the rows ask, and round once.
        lengths = lengths.expand(x.shape[0], -1).contiguous()
        return torch.segment_reduce(x.float(), "mean", lengths=lengths, axis=1).to(x.dtype)

    return pool


def ragged_metadata(row: dict, chunk_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """CPU offsets and indices of a ragged row, checked against the row's tensor shapes."""
    offsets = torch.tensor([0, *itertools.accumulate(seq_lens(row["params"]["seq_lens"]))], dtype=torch.int32)
    indices = solops.prepare_chunk_indices(offsets, chunk_size)
    for name, tensor in (("offsets", offsets), ("indices", indices)):
        if list(tensor.shape) != row["tensors"][name]:
            raise ValueError(f"seq_lens make {name} {list(tensor.shape)}, the row says {row['tensors'][name]}")
    return offsets, indices


def mean_pooling_alternative(name: str, chunk_size: int, inputs: tuple) -> Impl:
    if name == "torch":
        return Impl(name, partial(torch_mean_pooling(chunk_size), *inputs))
    if name == "torch-compile":
        return Impl(name, partial(run.compile_for_benchmark(torch_mean_pooling(chunk_size)), *inputs))
    if name in ("cudnn", "flaggems"):
        return Impl(name, None, not_applicable=f"{name} has no chunked mean pooling")
    raise ValueError(f"unknown alternative {name}")


def build_mean_pooling_case(row: dict, alternatives: list[str]) -> Case:
    dtype = mean_pooling_dtype(row["dtype"])
    shape = row["tensors"]["x"]
    chunk_size = row["params"]["chunk_size"]
    x_cpu = run.random_normal(shape, dtype)
    metadata_cpu = ragged_metadata(row, chunk_size) if "seq_lens" in row["params"] else ()
    x = x_cpu.cuda()
    metadata = tuple(tensor.cuda() for tensor in metadata_cpu)
    impls = [Impl("solops", partial(solops.mean_pooling, x, chunk_size, *metadata, check_metadata=False))]
    impls += [mean_pooling_alternative(name, chunk_size, (x, *metadata)) for name in alternatives]
    return row_case(MEAN_POOLING, row, solops.cost.of(solops.mean_pooling, x_cpu, chunk_size, *metadata_cpu),
                    partial(solops.reference.run, solops.mean_pooling, x_cpu, chunk_size, *metadata_cpu),
                    check_close(MEAN_POOLING_TOLERANCE[dtype]), impls)
