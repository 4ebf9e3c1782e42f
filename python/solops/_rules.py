"""The checks every family's fake implementations make at trace time, with the library's messages.

The fakes run on the sizes torch.compile traces with, which may be symbolic (SymInt): a rule on
sizes goes through torch._check, which raises on concrete values and leaves a runtime assertion on
symbolic ones instead of specializing the graph. Parameters (window sizes, eps, ...) are concrete.
Each rule is the one the C++ library applies when the op runs (src/<family>/*_rules.cpp); the CPU
tests compare the two on random shapes and parameters.
"""

import torch

INT_MAX = 2**31 - 1

DTYPE_NAMES = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float8_e4m3fn: "fp8_e4m3",
    torch.int32: "i32",
    torch.int64: "i64",
}
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def require(rule_holds, op, *message):
    """Raises RuntimeError("op: message") where the rule fails; a symbolic rule becomes a runtime
    assertion of the traced graph."""
    torch._check(rule_holds, lambda: f"{op}: " + "".join(str(part) for part in message))


def shape_string(shape):
    return "[" + ", ".join(str(size) for size in shape) + "]"


def dtype_name(dtype):
    return DTYPE_NAMES.get(dtype, str(dtype).removeprefix("torch."))


def is_strictly_channels_last(t):
    """channels_last (torch.channels_last, 4-D) and not also contiguous: as is_strictly_channels_last in
    src/core/check.cpp, where a tensor that is both is read as contiguous."""
    return t.dim() == 4 and not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last)


def check_tensor(op, name, t, channels_last=False):
    """A tensor the op's kernel reads or writes: contiguous (or channels_last, where the op allows it),
    and on a CUDA device (meta tensors stand for them)."""
    if channels_last:
        require(t.is_contiguous() or (t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last)), op, name,
                " must be contiguous (row-major, e.g. NCHW) or channels_last; other strided tensors are not ",
                "supported, make them contiguous first")
    else:
        require(t.is_contiguous(), op, name, " must be contiguous (row-major, e.g. NCHW); strided and channels-last",
                " tensors are not supported, make them contiguous first")
    require(t.device.type in ("cuda", "meta"), op, name, " must be a CUDA tensor, got a ", t.device.type.upper(),
            " tensor")


def check_known_dtype(op, name, t):
    """A dtype solops has a code for (the binding rejects any other before the op's own rules)."""
    require(t.dtype in DTYPE_NAMES, op, name, ": dtype ", dtype_name(t.dtype), " is not supported by solops")


def check_float_dtype(op, name, t):
    require(t.dtype in FLOAT_DTYPES, op, name, ": dtype ", dtype_name(t.dtype), " is not supported (f32, f16 or bf16)")


def check_dtype(op, name, t, dtype):
    require(t.dtype == dtype, op, name, ": dtype ", dtype_name(t.dtype), " must be ", dtype_name(dtype))


def check_product(op, what, shape):
    """checked_product: the sizes, zeros aside, multiply within int64 (an output whose shape the
    parameters set; a tensor's own sizes always do)."""
    product, empty = 1, False
    for size in shape:
        empty = empty or size == 0
        product = product * size if size != 0 else product
    require(product < 2**63, op, what, " ", shape_string(shape), ": its sizes multiply past the int64 range",
            " (zeros aside)" if empty else "")


def check_shape(op, name, t, shape):
    shape = list(shape)
    require(len(t.shape) == len(shape), op, name, ": shape ", shape_string(t.shape), " must be ", shape_string(shape))
    for size, expected in zip(t.shape, shape):
        require(size == expected, op, name, ": shape ", shape_string(t.shape), " must be ", shape_string(shape))


def per_axis(op, name, values, axes):
    """The bindings' reading of an int[axes] argument: one value for every axis, or one per axis."""
    values = list(values)
    require(len(values) in (1, axes), op, name, " must be an int or a list of ", axes, ", got ", len(values),
            " values")
    return values * axes if len(values) == 1 else values
