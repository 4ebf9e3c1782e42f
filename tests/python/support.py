"""What the Python tests share: the GPU skip, random inputs, and the sample calls' form."""

from dataclasses import dataclass, field
from typing import Callable

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="SKIPPED: no CUDA device on this machine; this test needs one")
# The sizes a sample's varying dim takes where one compiled graph must serve them all.
DYNAMIC_SIZES = (9, 16, 23, 40)


def random(shape, device="cuda", dtype=torch.float32, seed=0, positive=False):
    """Normal values from a fixed seed (or in [0.5, 1.5) when positive); meta tensors carry none."""
    if torch.device(device).type == "meta":
        return torch.empty(shape, device=device, dtype=dtype)
    generator = torch.Generator(device=device).manual_seed(seed)
    if positive:
        return (torch.rand(shape, generator=generator, device=device) + 0.5).to(dtype)
    return torch.randn(shape, generator=generator, device=device).to(dtype)


@dataclass(frozen=True)
class Sample:
    """One call of an op through its public function.

    inputs(size, device, dtype) makes the call's tensors, one dim of them `size` long (any size in
    DYNAMIC_SIZES gives a valid call); call(*tensors) returns its outputs. mutates: the call writes
    its inputs in place (its outputs are then those inputs).
    """

    op: str
    inputs: Callable
    call: Callable
    mutates: bool = field(default=False)

    def run(self, tensors):
        outputs = self.call(*tensors)
        return tensors if self.mutates else outputs


def registered_ops(namespace):
    """The names of every op registered in `namespace` (e.g. solops::max_pool2d -> max_pool2d)."""
    prefix = namespace + "::"
    return {name[len(prefix):] for name in torch._C._dispatch_get_all_op_names() if name.startswith(prefix)}


def flat(outputs):
    """An op's outputs as a list of tensors (None for an optional output it did not compute)."""
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def outcome(op, args):
    """The output shapes of op(*args) (None for an in-place op, and for an output not computed), or its
    error's message."""
    try:
        outputs = op(*args)
        return None if outputs is None else [None if t is None else tuple(t.shape) for t in flat(outputs)]
    except RuntimeError as error:
        return str(error).split("\n")[0]


def assert_fakes_agree_with_the_cpp_shape_rules(draw, draws, accepted_share=4, rejected_share=4):
    """draws calls from draw() -> (op, args), op "name" or "name.overload", each through the fake
    (torch.ops.solops) and the C++ shape rule (torch.ops.solops_reference): the same outputs or the same
    error. More than draws // accepted_share calls accepted and draws // rejected_share refused: both
    sides of every rule drawn often enough to matter."""
    accepted = rejected = 0
    for _ in range(draws):
        op, args = draw()
        name, _, overload = op.partition(".")
        fake = outcome(getattr(getattr(torch.ops.solops, name), overload or "default"), args)
        cpp = outcome(getattr(getattr(torch.ops.solops_reference, name), overload or "default"), args)
        described = [tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args]
        assert fake == cpp, f"{op} {described}"
        accepted += not isinstance(cpp, str)
        rejected += isinstance(cpp, str)
    assert accepted > draws // accepted_share and rejected > draws // rejected_share
