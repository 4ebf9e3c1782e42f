"""GroupNorm's and InstanceNorm's rules and references on the CPU: the Python fakes against the C++ shape
rules on thousands of random calls, accepted and rejected alike, message for message; the float64
CPU references against PyTorch's functions (forward, the running statistics' update, and the
gradients through autograd, also of solops.group_norm and solops.instance_norm under
solops.reference.mode()); the backward ops' output_mask (what it leaves out, x contiguous or
channels_last; its default; what autograd asks for); forward and backward traced by torch.compile on
meta tensors; the cost models through the ops. The kernels are tested in test_group_norm_ops.py and the GPU tests."""

import math
import random

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import solops
from support import assert_fakes_agree_with_the_cpp_shape_rules
from test_norm_rules import cpu_inputs

DRAWS = 3000
_H = torch.float16


def _meta(shape, dtype=_H):
    return torch.empty(shape, device="meta", dtype=dtype)


class SpatialCalls:
    """Random calls of the GroupNorm and InstanceNorm ops: mostly valid, each shape rule broken now and then.
    The tensors the rules do not read (weights, statistics) are valid for the call: the C++ side on meta
    tensors runs the shape rules only (their other checks are norm_calls.py's bad calls)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def shape(self):
        rank = self.rng.choice([1, 2, 3, 3, 4, 4, 5])
        return [self.rng.choice([0, 1, 1, 2, 3, 4, 6, 8, 12]) for _ in range(rank)]

    def channels(self, x_shape, dtype=_H, chance=0.7):
        return _meta(x_shape[1:2] or [3], dtype) if self.rng.random() < chance else None

    def eps(self):
        return self.rng.choice([1e-5, 1e-5, 0.0, 1e-3, -1.0, math.inf, math.nan])

    def draw(self):
        x_shape = self.shape()
        x = _meta(x_shape)
        op = self.rng.choice(["group_norm", "group_norm_with_stats", "instance_norm", "instance_norm_with_stats",
                              "group_norm_backward", "instance_norm_backward"])
        channels = x_shape[1] if len(x_shape) > 1 else 4
        divisors = [g for g in range(1, channels + 1) if channels % g == 0]
        groups = self.rng.choice(divisors) if divisors and self.rng.random() < 0.8 else self.rng.choice([0, -1, 3, 5])
        if op in ("group_norm", "group_norm_with_stats"):
            return op, (x, groups, self.channels(x_shape), self.channels(x_shape), self.eps())
        if op in ("instance_norm", "instance_norm_with_stats"):
            use_input_stats = self.rng.random() < 0.7
            running = self.channels(x_shape, torch.float32, 0.5 if use_input_stats else 1.0)
            momentum = self.rng.choice([0.1, 0.1, 0.0, 1.0, math.nan, math.inf])
            return op, (x, running, running if running is None else _meta(running.shape, torch.float32),
                        self.channels(x_shape), self.channels(x_shape), use_input_stats, momentum, self.eps())
        batch = x_shape[0] if x_shape else 1
        stats = [_meta([batch, max(groups, 1) if op == "group_norm_backward" else channels], torch.float32)
                 for _ in range(2)]
        if op == "group_norm_backward":
            return op, (_meta(x_shape), x, groups, *stats, self.channels(x_shape), self.mask())
        return op, (_meta(x_shape), x, *stats, self.channels(x_shape), self.rng.random() < 0.7, self.mask())

    def mask(self):
        """A backward's output_mask: any of the four, now and then of the wrong length."""
        if self.rng.random() < 0.05:
            return [True] * self.rng.choice([0, 1, 3])
        return [self.rng.random() < 0.5, self.rng.random() < 0.5]


def test_fakes_agree_with_the_cpp_shape_rules_on_random_calls():
    assert_fakes_agree_with_the_cpp_shape_rules(SpatialCalls(seed=2).draw, DRAWS)


SHAPES = [((3, 6, 5, 4), 3), ((2, 4, 7), 4), ((1, 8, 3, 3, 2), 1), ((4, 6), 2), ((2, 6, 1), 6)]


@pytest.mark.parametrize("shape, groups", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_reference_is_pytorch(shape, groups, affine):
    x, weight, bias = cpu_inputs(shape, shape[1:2], shape[1:2])
    parameters = (weight, bias) if affine else (None, None)
    y, mean, rstd = solops.reference.run(torch.ops.solops.group_norm_with_stats, x, groups, *parameters, 1e-4)
    want, want_mean, want_rstd = torch.native_group_norm(x.double(), *(p.double() if affine else None
                                                                       for p in parameters),
                                                         shape[0], shape[1], math.prod(shape[2:]), groups, 1e-4)
    torch.testing.assert_close(y, want.float())
    torch.testing.assert_close(mean, want_mean.float())
    torch.testing.assert_close(rstd, want_rstd.float())
    torch.testing.assert_close(solops.reference.run(solops.group_norm, x, groups, *parameters, eps=1e-4),
                               F.group_norm(x, groups, *parameters, eps=1e-4))


@pytest.mark.parametrize("shape", [(3, 4, 5, 2), (2, 3, 7), (1, 2, 3, 3, 3), (4, 5, 0)])
@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm_reference_and_running_update_are_pytorch(shape, use_input_stats, affine):
    x, weight, bias, running_mean = cpu_inputs(shape, shape[1:2], shape[1:2], shape[1:2])
    running_var = torch.rand(shape[1], generator=torch.Generator().manual_seed(3)) + 0.5
    parameters = (weight, bias) if affine else (None, None)
    ours_mean, ours_var = running_mean.clone(), running_var.clone()
    got = solops.reference.run(solops.instance_norm, x, ours_mean, ours_var, *parameters, use_input_stats, 0.3, 1e-4)
    want_mean, want_var = running_mean.double(), running_var.double()
    want = F.instance_norm(x.double(), want_mean, want_var, *(p.double() if affine else None for p in parameters),
                           use_input_stats, 0.3, 1e-4)
    torch.testing.assert_close(got, want.float())
    torch.testing.assert_close(ours_mean, want_mean.float())
    torch.testing.assert_close(ours_var, want_var.float())


def test_instance_norm_reference_with_an_empty_batch_makes_running_statistics_nan():
    running_mean, running_var = torch.zeros(3), torch.ones(3)
    solops.reference.run(solops.instance_norm, torch.empty(0, 3, 4), running_mean, running_var)
    assert running_mean.isnan().all() and running_var.isnan().all()


def leaves(*tensors):
    return [t.detach().clone().requires_grad_() if t is not None else None for t in tensors]


def gradients(loss, tensors):
    loss.backward()
    return [t.grad for t in tensors if t is not None]


@pytest.mark.parametrize("shape, groups", SHAPES[:3])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_gradients_equal_pytorch(shape, groups, affine):
    x, dy, weight, bias = cpu_inputs(shape, shape, shape[1:2], shape[1:2], seed=1)
    parameters = (weight, bias) if affine else (None, None)
    mine = leaves(x, *parameters)
    want = leaves(x.double(), *(p.double() if affine else None for p in parameters))
    with solops.reference.mode():
        got = gradients((solops.group_norm(mine[0], groups, *mine[1:]) * dy).sum(), mine)
    expected = gradients((F.group_norm(want[0], groups, *want[1:]) * dy.double()).sum(), want)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.double(), e, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("shape", [(3, 4, 5, 2), (2, 3, 7)])
@pytest.mark.parametrize("use_input_stats, running", [(True, False), (True, True), (False, True)])
@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm_gradients_and_running_update_equal_pytorch(shape, use_input_stats, running, affine):
    x, dy, weight, bias, running_mean = cpu_inputs(shape, shape, shape[1:2], shape[1:2], shape[1:2], seed=2)
    running_var = torch.rand(shape[1], generator=torch.Generator().manual_seed(4)) + 0.5
    parameters = (weight, bias) if affine else (None, None)
    stats = (running_mean.clone(), running_var.clone()) if running else (None, None)
    want_stats = (running_mean.double(), running_var.double()) if running else (None, None)
    mine = leaves(x, *parameters)
    want = leaves(x.double(), *(p.double() if affine else None for p in parameters))
    with solops.reference.mode():
        y = solops.instance_norm(mine[0], *stats, *mine[1:], use_input_stats, 0.2, 1e-5)
        got = gradients((y * dy).sum(), mine)
    expected = gradients((F.instance_norm(want[0], *want_stats, *want[1:], use_input_stats, 0.2, 1e-5)
                          * dy.double()).sum(), want)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.double(), e, atol=1e-4, rtol=1e-4)
    for ours, theirs in zip(stats, want_stats):
        if ours is not None:
            torch.testing.assert_close(ours, theirs.float())


def backward_call(op, shape, weight, memory_format=torch.contiguous_format):
    """solops' public backward of `op` ("group_norm_backward": two groups) as a function of output_mask
    (None: its default), from the reference forward's statistics of random CPU inputs (x and grad_out in
    memory_format)."""
    x, dy = (t.contiguous(memory_format=memory_format) for t in cpu_inputs(shape, shape, seed=3))
    if op == "group_norm_backward":
        _, mean, rstd = solops.reference.run(torch.ops.solops.group_norm_with_stats, x, 2, weight, None, 1e-5)
        return lambda mask: solops.group_norm_backward(dy, x, 2, mean, rstd, weight, output_mask=mask)
    _, mean, rstd = solops.reference.run(torch.ops.solops.instance_norm_with_stats, x, None, None, weight, None, True,
                                         0.1, 1e-5)
    return lambda mask: solops.instance_norm_backward(dy, x, mean, rstd, weight, output_mask=mask)


BACKWARD_OPS = ["group_norm_backward", "instance_norm_backward"]


@pytest.mark.parametrize("op", BACKWARD_OPS)
@pytest.mark.parametrize("mask", [[True, True], [False, False], [True, False], [False, True]])
@pytest.mark.parametrize("shape, memory_format", [((3, 4, 5), torch.contiguous_format),
                                                  ((3, 4, 5, 2), torch.channels_last)])
def test_the_backward_computes_what_output_mask_asks_for(op, mask, shape, memory_format):
    # None where a gradient is not asked for; grad_x (in x's memory format) and the asked ones are the
    # full call's, bit for bit.
    weight = torch.randn(4, generator=torch.Generator().manual_seed(5))
    call = backward_call(op, shape, weight, memory_format)
    full, got = solops.reference.run(call, [True, True]), solops.reference.run(call, mask)
    assert got[0].is_contiguous(memory_format=memory_format)
    assert torch.equal(got[0], full[0])
    for asked, gradient, want in zip(mask, got[1:], full[1:]):
        assert (gradient is not None) == asked
        if asked:
            assert torch.equal(gradient, want)


@pytest.mark.parametrize("op", BACKWARD_OPS)
def test_the_default_output_mask_asks_for_the_parameter_gradients_with_a_weight(op):
    with_weight = solops.reference.run(backward_call(op, (2, 4, 3), torch.ones(4)), None)
    without = solops.reference.run(backward_call(op, (2, 4, 3), None), None)
    assert all(t is not None for t in with_weight)
    assert without[0] is not None and without[1:] == (None, None)
    # The fakes give the same outputs (the test_torch_integration samples trace both masks symbolically).
    meta = [_meta([2, 4, 3]), _meta([2, 4, 3]), _meta([2, 2], torch.float32), _meta([2, 2], torch.float32)]
    outputs = torch.ops.solops.group_norm_backward(*meta[:2], 2, *meta[2:], None, [False, True])
    assert outputs[1] is None and outputs[2].shape == (4,)


class BackwardMasks(TorchDispatchMode):
    """The output_mask of each GroupNorm and InstanceNorm backward op called."""

    def __init__(self):
        super().__init__()
        self.masks = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "solops" and func._opname in BACKWARD_OPS:
            self.masks.append(list(args[-1]))
        return func(*args, **(kwargs or {}))


# Which of weight and bias are given ("frozen": given, not requiring grad) and the mask autograd must ask for.
PARAMETERS = [((None, None), [False, False]), (("trained", "trained"), [True, True]),
              (("frozen", "trained"), [False, True]), ((None, "trained"), [False, True]),
              (("trained", "frozen"), [True, False]), (("trained", None), [True, False])]


@pytest.mark.parametrize("instance", [False, True])
@pytest.mark.parametrize("parameters, mask", PARAMETERS)
def test_autograd_asks_for_the_parameter_gradients_it_needs(instance, parameters, mask):
    # A norm without affine parameters (or with frozen ones) runs the backward without those gradients;
    # the gradients are still PyTorch's.
    shape = (2, 4, 5)
    x, dy, *values = cpu_inputs(shape, shape, shape[1:2], shape[1:2], seed=4)
    mine = [x.clone().requires_grad_()] + [None if kind is None else value.clone().requires_grad_(kind == "trained")
                                          for kind, value in zip(parameters, values)]
    want = [t if t is None else t.detach().double().requires_grad_(t.requires_grad) for t in mine]
    if want[1] is None and want[2] is not None:
        want[1] = torch.ones(shape[1], dtype=torch.float64)  # PyTorch's GroupNorm backward fails on a bias alone

    def norm(function, x, weight, bias):
        if instance:
            return function.instance_norm(x, None, None, weight, bias)
        return function.group_norm(x, 2, weight, bias)

    with solops.reference.mode(), BackwardMasks() as recorded:
        (norm(solops, *mine) * dy).sum().backward()
    assert recorded.masks == [mask]
    (norm(F, *want) * dy.double()).sum().backward()
    for got, expected in zip(mine, want):
        if got is not None:
            assert (got.grad is None) == (expected.grad is None)
            if got.grad is not None:
                torch.testing.assert_close(got.grad.double(), expected.grad, atol=1e-4, rtol=1e-4)


def test_statistics_are_not_differentiable():
    x = torch.randn(2, 4, 3, requires_grad=True)
    with solops.reference.mode():
        y, mean, rstd = torch.ops.solops.group_norm_with_stats(x, 2, None, None, 1e-5)
    assert y.requires_grad and not mean.requires_grad and not rstd.requires_grad


def test_torch_compile_traces_forward_and_backward():
    def loss(x, weight, bias):
        return (solops.group_norm(x, 2, weight, bias) * solops.instance_norm(x, None, None, weight, bias)).sum()

    inputs = [torch.empty(3, 4, 5, device="meta"), torch.empty(4, device="meta"), torch.empty(4, device="meta")]
    compiled = leaves(*inputs)
    torch._dynamo.reset()
    torch.compile(loss, fullgraph=True, backend="aot_eager")(*compiled).backward()
    assert [t.grad.shape for t in compiled] == [t.shape for t in inputs]


def test_cost_models_follow_the_spec():
    x, channel = torch.empty(8, 128, 32, 32, dtype=torch.float16), torch.empty(128, dtype=torch.float16)
    numel = x.numel()
    # Spec 2.9: 5 flops an element with the affine, 3 without; x read, y written, weight and bias read.
    assert solops.cost.of(solops.group_norm, x, 32, channel, channel) == (5 * numel, (2 * numel + 2 * 128) * 2)
    assert solops.cost.of(solops.group_norm, x, 32) == (3 * numel, 2 * numel * 2)
    # Spec 2.11 by the running statistics: both read (f32).
    stats = torch.empty(128)
    assert solops.cost.of(solops.instance_norm, x, stats, stats, use_input_stats=False) == (3 * numel,
                                                                                           2 * numel * 2 + 8 * 128)
    # Spec 2.10: 12 flops an element; grad_out, x, grad_x, the weight and both gradients, the [B, G] statistics.
    stats = torch.empty(8, 32)
    assert solops.cost.of(solops.group_norm_backward, x, x, 32, stats, stats, channel) == \
        (12 * numel, (3 * numel + 3 * 128) * 2 + 8 * 8 * 32)
    # The spec's formula whatever output_mask asks for: without a weight, neither gradient is asked for.
    assert solops.cost.of(solops.group_norm_backward, x, x, 32, stats, stats) == \
        (12 * numel, (3 * numel + 2 * 128) * 2 + 8 * 8 * 32)
