"""Roofline cost models, (flops, bytes) per call, from the library's own cost functions, through the
public functions: `cost.of(solops.max_pool2d, x, 3, stride=2)` is the cost of that call, x being
any tensor of the call's shape and dtype (a meta tensor costs nothing to make). Each op's model is
registered in C++ as torch.ops.solops_cost.<op> (same arguments, returning [flops, bytes]).
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map_only


class _CostMode(TorchDispatchMode):
    """Adds up the cost of every solops op called, and runs each on meta tensors."""

    def __init__(self):
        super().__init__()
        self.flops = 0.0
        self.bytes = 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace == "solops":
            cost = getattr(getattr(torch.ops.solops_cost, func._opname), func._overloadname)
            flops, moved = cost(*args, **kwargs)
            self.flops += flops
            self.bytes += moved
        return func(*args, **kwargs)


def of(function, *args, **kwargs):
    """(flops, bytes) of function(*args, **kwargs), every tensor argument moved to the meta device
    (shape and dtype kept): the sum over the solops ops it calls."""
    args, kwargs = tree_map_only(torch.Tensor, lambda t: t.to("meta"), (args, kwargs))
    with _CostMode() as costs:
        function(*args, **kwargs)
    return costs.flops, costs.bytes
