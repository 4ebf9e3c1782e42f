"""The CPU references (float64 accumulation), the executable specification, through the public
functions: `reference.run(solops.max_pool2d, x_cpu, 3, stride=2)` computes what
`solops.max_pool2d(x, 3, stride=2)` computes, on CPU tensors. Each op's reference is registered in
C++ as torch.ops.solops_reference.<op> (same schema, CPU kernels; on meta tensors it gives the
outputs of the C++ shape rule); `mode()` routes the solops ops a function calls to them.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class _ReferenceMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "solops":
            func = getattr(getattr(torch.ops.solops_reference, func._opname), func._overloadname)
        return func(*args, **(kwargs or {}))


def mode():
    """A context in which torch.ops.solops.<op> runs torch.ops.solops_reference.<op>."""
    return _ReferenceMode()


def run(function, *args, **kwargs):
    """function(*args, **kwargs) (a public solops function, or any code calling solops ops) with every
    solops op replaced by its CPU reference."""
    with mode():
        return function(*args, **kwargs)
