"""How the public functions call their ops in eager mode.

Calling `torch.ops.solops.<op>.<overload>(...)` (OpOverload.__call__) parses the arguments by the op's
schema in torch's generic operator path, which costs an eager call more than ATen's generated bindings
cost ATen's ops (docs/perf/binding.md). The same dispatcher call through the operator's handle
(torch._C._dispatch_call_boxed) skips that path's Python-side work; what runs is the same: the
dispatcher with its modes (TorchDispatchMode: solops.reference, solops.cost, FakeTensorMode),
autograd, the fakes and the kernels. Two things it does not do, for which the call goes through the
OpOverload as before: __torch_function__ (tensor subclasses and TorchFunctionModes that override it)
and torch.compile's tracing (Dynamo traces the OpOverload: is_compiling() is constant True there, so
the handle is never traced).
"""

import torch

# Private to PyTorch: where a version lacks it, the public functions call the OpOverloads.
_call_boxed = getattr(torch._C, "_dispatch_call_boxed", None)
_has_torch_function = torch._C._has_torch_function
_is_compiling = torch.compiler.is_compiling


def eager(overload):
    """A function of positional arguments that calls `overload` (a torch.ops OpOverload) as above."""
    if _call_boxed is None:
        return overload
    handle = overload._handle

    def call(*args):
        if _is_compiling() or _has_torch_function(args):
            return overload(*args)
        return _call_boxed(handle, *args)

    return call
