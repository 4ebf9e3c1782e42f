"""Pool family benchmark entries: MaxPool2dFwd, MaxPool2dIndicesFwd, AvgPool2dFwd.

Each manifest row becomes a run.Case: a random normal NCHW input (fixed seed, the row's dtype),
the solops call, the CPU reference, the cost model, the spec's tolerance (spec/ops.md 4.1-4.3)
and the alternatives:
    torch          F.max_pool2d / F.avg_pool2d, eager
    torch-compile  the same call under torch.compile (default mode, static shapes)
    cudnn          legacy cudnnPoolingForward (no indices, no dilation, no divisor override)
    flaggems       FlagGems' own pooling functions, called directly (no global aten patching)
"""

from functools import partial

import torch
import torch.nn.functional as F

import solops
from solops.bench import cudnn, run
from solops.bench.run import Case, Impl, UnsupportedRow

OPS = ("MaxPool2dFwd", "MaxPool2dIndicesFwd", "AvgPool2dFwd")

# Every tap is one compare-select or add in f32, on CUDA cores.
RATE_KIND = "cuda_core_f32"

# spec/ops.md 4.1 (f32 is the proposed 1e-5); max-pool values and indices are exact.
AVG_TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5}

# PyTorch's defaults for parameters a manifest row leaves out.
MAX_POOL_DEFAULTS = {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False}
AVG_POOL_DEFAULTS = {"stride": None, "padding": 0, "ceil_mode": False,
                     "count_include_pad": True, "divisor_override": None}


def present_alternatives() -> dict[str, str | None]:
    """Each alternative mapped to None when usable here, or to the reason it is absent."""
    present = {"torch": None, "torch-compile": None}
    present["cudnn"] = None if cudnn.load() is not None else "baseline library not built"
    try:
        run.import_flag_gems()
        present["flaggems"] = None
    except Exception as error:
        present["flaggems"] = f"import flag_gems failed: {run.describe_error(error)}"
    return present


def pool_params(op: str, row: dict) -> dict:
    """The F.* keyword arguments of a row: its params over PyTorch's defaults, lists as tuples."""
    defaults = AVG_POOL_DEFAULTS if op == "AvgPool2dFwd" else MAX_POOL_DEFAULTS
    params = dict(row["params"])
    if "kernel_size" not in params:
        raise ValueError("row has no kernel_size")
    unknown = set(params) - set(defaults) - {"kernel_size"}
    if unknown:
        # Ignoring a parameter would benchmark a different function than the row names.
        raise ValueError(f"unexpected params {sorted(unknown)}")
    merged = dict(defaults, **params)
    return {name: tuple(value) if isinstance(value, list) else value for name, value in merged.items()}


def pair(value) -> tuple[int, int]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


# ---- the functions each implementation computes ----------------------------------------------


def torch_function(op: str, params: dict):
    # A function defined here rather than a partial of F.*: torch.compile may skip frames that
    # start in torch's own files and run them eagerly; a function of ours is always traced.
    if op == "AvgPool2dFwd":

        def average_pool(x):
            return F.avg_pool2d(x, **params)

        return average_pool
    return_indices = op == "MaxPool2dIndicesFwd"

    def max_pool(x):
        return F.max_pool2d(x, **params, return_indices=return_indices)

    return max_pool


def solops_function(op: str, params: dict):
    if op == "AvgPool2dFwd":
        return partial(solops.avg_pool2d, **params)
    return partial(solops.max_pool2d, **params, return_indices=(op == "MaxPool2dIndicesFwd"))


def reference_function(op: str, params: dict):
    if op == "AvgPool2dFwd":
        return partial(solops.reference.avg_pool2d, **params)
    return partial(solops.reference.max_pool2d, **params, return_indices=(op == "MaxPool2dIndicesFwd"))


def cost(op: str, shape: list[int], dtype: torch.dtype, params: dict) -> tuple[float, float]:
    if op == "AvgPool2dFwd":
        return solops.cost.avg_pool2d(shape, dtype, **params)
    return solops.cost.max_pool2d(shape, dtype, **params, return_indices=(op == "MaxPool2dIndicesFwd"))


def flaggems_function(op: str, params: dict):
    flag_gems = run.import_flag_gems()
    if op == "AvgPool2dFwd":
        return partial(flag_gems.ops.avg_pool2d, **params)
    # FlagGems has only max_pool2d_with_indices (ATen's max_pool2d on CUDA calls the same op),
    # so the values-only row runs it too and keeps the values.
    with_indices = partial(flag_gems.ops.max_pool2d_with_indices, **params)
    if op == "MaxPool2dIndicesFwd":
        return with_indices
    return lambda x: with_indices(x)[0]


def cudnn_function(op: str, params: dict, x_shape: list[int]):
    """The cuDNN call, or a string saying why cuDNN cannot compute this op."""
    if op == "MaxPool2dIndicesFwd":
        return "cuDNN pooling returns no indices"
    if op == "AvgPool2dFwd" and params["divisor_override"] is not None:
        return "cuDNN pooling has no divisor override"
    if op != "AvgPool2dFwd" and pair(params["dilation"]) != (1, 1):
        return "cuDNN 2-D pooling has no dilation"
    if op == "AvgPool2dFwd":
        mode = cudnn.MODE_AVG_INCLUDE_PAD if params["count_include_pad"] else cudnn.MODE_AVG_EXCLUDE_PAD
    else:
        mode = cudnn.MODE_MAX
    # PyTorch's output size (ceil mode included); the correctness check decides whether cuDNN's
    # windows at that size compute PyTorch's function.
    meta_output = torch_function(op, params)(torch.empty(x_shape, device="meta"))
    kernel_size = pair(params["kernel_size"])
    stride = kernel_size if params["stride"] is None else pair(params["stride"])
    return partial(cudnn.pool2d, out_hw=tuple(meta_output.shape[2:]), mode=mode,
                   kernel_size=kernel_size, stride=stride, padding=pair(params["padding"]))


# ---- checks ----------------------------------------------------------------------------------


def check_exact(actual, reference) -> None:
    """Max pool: values (NaN positions included) and indices must match exactly."""
    torch.testing.assert_close(actual, reference, rtol=0, atol=0, equal_nan=True)


def check_average(dtype: torch.dtype):
    tolerance = AVG_TOLERANCE[dtype]
    return partial(torch.testing.assert_close, rtol=tolerance, atol=tolerance, equal_nan=True)


# ---- the case --------------------------------------------------------------------------------


def alternative_impl(name: str, op: str, params: dict, x: torch.Tensor) -> Impl:
    if name == "torch":
        return Impl(name, partial(torch_function(op, params), x))
    if name == "torch-compile":
        return Impl(name, partial(run.compile_for_benchmark(torch_function(op, params)), x))
    if name == "flaggems":
        return Impl(name, partial(flaggems_function(op, params), x))
    if name == "cudnn":
        function = cudnn_function(op, params, list(x.shape))
        if isinstance(function, str):
            return Impl(name, None, not_applicable=function)
        return Impl(name, partial(function, x))
    raise ValueError(f"unknown alternative {name}")


def build_case(op: str, row: dict, alternatives: list[str]) -> Case:
    dtype = run.torch_dtype(row["dtype"])
    shape = row["tensors"]["input"]
    if len(shape) != 4:
        raise UnsupportedRow(f"input {shape} is not NCHW")
    params = pool_params(op, row)
    x_cpu = run.random_normal(shape, dtype)
    x = x_cpu.cuda()
    flops, bytes_moved = cost(op, shape, dtype, params)
    impls = [Impl("solops", partial(solops_function(op, params), x))]
    impls += [alternative_impl(name, op, params, x) for name in alternatives]
    return Case(
        op=op,
        workload=row["workload"],
        dtype=row["dtype"],
        flops=float(flops),
        bytes=float(bytes_moved),
        rate_kind=RATE_KIND,
        reference=partial(reference_function(op, params), x_cpu),
        check=check_average(dtype) if op == "AvgPool2dFwd" else check_exact,
        impls=impls,
        page=row.get("reference"),
    )
