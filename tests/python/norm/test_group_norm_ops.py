"""solops.group_norm and solops.instance_norm as PyTorch users meet them, on the GPU: equal to
F.group_norm and F.instance_norm on random shapes (groups, affine on and off, running statistics
present and absent, f32/f16/bf16, N = 1, spatial size 1, channels_last refused by name), the running
statistics updated in place as PyTorch updates them, the gradients equal to PyTorch's, bitwise
deterministic, the backward's output_mask leaving parameter gradients out without changing the rest,
captured and replayed by CUDA graphs (running-statistics updates included), traced by
torch.compile, and bad calls refused before anything is written. Needs a CUDA device; skips loudly
without one."""

import math
import random

import pytest
import torch
import torch.nn.functional as F

import solops
from support import HAS_CUDA

if not HAS_CUDA:
    pytest.skip("SKIPPED: no CUDA device on this machine; these tests need one", allow_module_level=True)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Spec 2.9, 2.11 (forward) and 2.10, 2.12 (backward): atol = rtol.
FORWARD_TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}
BACKWARD_TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}


def random_input(shape, dtype, seed=0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=generator, device="cuda").to(dtype)


def close(got, want, tolerance):
    torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance, equal_nan=True)


def random_shapes(count, seed):
    """(shape, groups): N = 1 and spatial size 1 included, odd planes, long groups now and then."""
    rng = random.Random(seed)
    shapes = []
    for c in range(count):
        channels = rng.choice([1, 2, 3, 4, 6, 8, 16, 32, 64])
        spatial = [rng.choice([1, 2, 3, 5, 7, 8, 14, 28, 30, 32]) for _ in range(rng.randint(0, 3))]
        shape = (rng.choice([1, 2, 4, 8]), channels, *spatial)
        if c % 13 == 7:
            shape = (2, 8, 96, 96)  # groups of 36 K elements: read again each pass
        groups = rng.choice([g for g in range(1, shape[1] + 1) if shape[1] % g == 0])
        # F.group_norm refuses a batch of one value a group (ours returns the bias there).
        if shape[0] * shape[1] // groups * math.prod(shape[2:]) > 1:
            shapes.append((shape, groups))
    return shapes


GROUP_SHAPES = random_shapes(24, seed=1) + [((8, 128, 32, 32), 32), ((4, 256, 28, 28), 32), ((4, 128, 30, 30), 16)]
# F.instance_norm refuses one spatial element (with use_input_stats; the tests run both modes).
INSTANCE_SHAPES = [(shape, None) for shape, _ in random_shapes(16, seed=2) if math.prod(shape[2:]) > 1] + [
    ((8, 128, 32, 32), None), ((4, 64, 30, 30), None), ((1, 3, 2), None)]


def parameters(channels, dtype, affine, seed=3):
    if not affine:
        return None, None
    return random_input((channels,), dtype, seed), random_input((channels,), dtype, seed + 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, groups", GROUP_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_equals_pytorch(shape, groups, dtype, affine):
    x = random_input(shape, dtype)
    weight, bias = parameters(shape[1], dtype, affine)
    want = F.group_norm(x.float(), groups, *(p.float() if affine else None for p in (weight, bias)), 1e-5).to(dtype)
    close(solops.group_norm(x, groups, weight, bias), want, FORWARD_TOLERANCE[dtype])


def instance_case(shape, use_input_stats, running, seed=5):
    """running_mean and running_var (or None) for a call."""
    if not running:
        return None, None
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape[1], generator=generator, device="cuda"),
            torch.rand(shape[1], generator=generator, device="cuda") + 0.5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, _", INSTANCE_SHAPES)
@pytest.mark.parametrize("use_input_stats, running", [(True, False), (True, True), (False, True)])
@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm_and_its_running_update_equal_pytorch(shape, _, dtype, use_input_stats, running, affine):
    x = random_input(shape, dtype)
    weight, bias = parameters(shape[1], dtype, affine)
    running_mean, running_var = instance_case(shape, use_input_stats, running)
    theirs = (running_mean.clone(), running_var.clone()) if running else (None, None)
    want = F.instance_norm(x.float(), *theirs, *(p.float() if affine else None for p in (weight, bias)),
                           use_input_stats, 0.2, 1e-5).to(dtype)
    got = solops.instance_norm(x, running_mean, running_var, weight, bias, use_input_stats, 0.2, 1e-5)
    close(got, want, FORWARD_TOLERANCE[dtype])
    if running:
        torch.testing.assert_close(running_mean, theirs[0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(running_var, theirs[1], rtol=1e-5, atol=1e-5)


def leaves(*tensors):
    return [t.detach().clone().requires_grad_() if t is not None else None for t in tensors]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, groups", GROUP_SHAPES[::3])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_gradients_equal_pytorch(shape, groups, dtype, affine):
    x, dy = random_input(shape, dtype), random_input(shape, dtype, seed=9)
    mine = leaves(x, *parameters(shape[1], dtype, affine))
    want = leaves(x.float(), *(p.float() if p is not None else None for p in parameters(shape[1], dtype, affine)))
    (solops.group_norm(mine[0], groups, *mine[1:]) * dy).sum().backward()
    (F.group_norm(want[0], groups, *want[1:]) * dy.float()).sum().backward()
    tolerance = BACKWARD_TOLERANCE[dtype]
    sums = tolerance * max(1, x.numel() // shape[1]) ** 0.5  # parameter gradients sum B * S terms
    close(mine[0].grad, want[0].grad.to(dtype), tolerance)
    for got, expected in zip(mine[1:], want[1:]):
        if got is not None:
            torch.testing.assert_close(got.grad, expected.grad.to(dtype), rtol=tolerance, atol=sums)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, _", INSTANCE_SHAPES[::2])
@pytest.mark.parametrize("use_input_stats, running", [(True, False), (True, True), (False, True)])
def test_instance_norm_gradients_equal_pytorch(shape, _, dtype, use_input_stats, running):
    x, dy = random_input(shape, dtype), random_input(shape, dtype, seed=9)
    running_mean, running_var = instance_case(shape, use_input_stats, running)
    theirs = (running_mean.clone(), running_var.clone()) if running else (None, None)
    mine = leaves(x, *parameters(shape[1], dtype, True))
    want = leaves(x.float(), *(p.float() for p in parameters(shape[1], dtype, True)))
    (solops.instance_norm(mine[0], running_mean, running_var, *mine[1:], use_input_stats) * dy).sum().backward()
    (F.instance_norm(want[0], *theirs, *want[1:], use_input_stats) * dy.float()).sum().backward()
    tolerance = BACKWARD_TOLERANCE[dtype]
    sums = tolerance * max(1, x.numel() // shape[1]) ** 0.5
    close(mine[0].grad, want[0].grad.to(dtype), tolerance)
    for got, expected in zip(mine[1:], want[1:]):
        torch.testing.assert_close(got.grad, expected.grad.to(dtype), rtol=tolerance, atol=sums)
    if running:
        torch.testing.assert_close(running_mean, theirs[0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(running_var, theirs[1], rtol=1e-5, atol=1e-5)


def backward_of(instance, x, groups, weight):
    """solops' public backward from x's forward statistics, a function of (grad_out, output_mask)."""
    if instance:
        _, mean, rstd = torch.ops.solops.instance_norm_with_stats(x, None, None, weight, None, True, 0.1, 1e-5)
        return lambda dy, mask: solops.instance_norm_backward(dy, x, mean, rstd, weight, output_mask=mask)
    _, mean, rstd = torch.ops.solops.group_norm_with_stats(x, groups, weight, None, 1e-5)
    return lambda dy, mask: solops.group_norm_backward(dy, x, groups, mean, rstd, weight, output_mask=mask)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("instance, shape, groups", [(False, shape, groups) for shape, groups in GROUP_SHAPES[::3]] +
                         [(True, shape, None) for shape, _ in INSTANCE_SHAPES[::2]])
@pytest.mark.parametrize("affine", [True, False])
def test_output_mask_leaves_gradients_out_and_keeps_the_bits(instance, shape, groups, dtype, affine):
    # Each parameter gradient left out, and both (the grad_x kernel alone): None in its place, and the
    # full call's bits for the rest.
    x, dy = random_input(shape, dtype), random_input(shape, dtype, seed=9)
    backward = backward_of(instance, x, groups, parameters(shape[1], dtype, affine)[0])
    full = backward(dy, [True, True])
    for mask in ([False, False], [True, False], [False, True]):
        got = backward(dy, mask)
        assert torch.equal(got[0], full[0]), mask
        for asked, gradient, want in zip(mask, got[1:], full[1:]):
            assert (gradient is not None) == asked
            if asked:
                assert torch.equal(gradient, want), mask


def test_two_runs_give_the_same_bits():
    x = random_input((8, 64, 28, 28), torch.float32)
    weight, bias = parameters(64, torch.float32, True)
    outputs = []
    for _ in range(2):
        running_mean, running_var = instance_case(x.shape, True, True)
        xs = leaves(x, weight, bias)
        y = solops.group_norm(xs[0], 8, xs[1], xs[2])
        y.backward(torch.ones_like(y))
        z = solops.instance_norm(x, running_mean, running_var, weight, bias)
        outputs.append([y, *(t.grad for t in xs), z, running_mean, running_var])
    for first, second in zip(*outputs):
        assert torch.equal(first, second)


def test_cuda_graph_replays_the_running_update():
    x = random_input((4, 64, 30, 30), torch.float16)
    weight, bias = parameters(64, torch.float16, True)
    running_mean, running_var = instance_case(x.shape, True, True)
    start = (running_mean.clone(), running_var.clone())
    solops.instance_norm(x, running_mean.clone(), running_var.clone(), weight, bias)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph):
        captured = solops.instance_norm(x, running_mean, running_var, weight, bias)
    torch.cuda.current_stream().wait_stream(stream)
    running_mean.copy_(start[0])
    running_var.copy_(start[1])
    eager_mean, eager_var = start[0].clone(), start[1].clone()
    for _ in range(3):  # each replay updates the running statistics once more, as each eager call does
        graph.replay()
        eager = solops.instance_norm(x, eager_mean, eager_var, weight, bias)
    torch.cuda.synchronize()
    assert torch.equal(captured, eager)
    assert torch.equal(running_mean, eager_mean) and torch.equal(running_var, eager_var)


def test_torch_compile_trains_as_eager():
    def step(x, weight, bias, running_mean, running_var):
        y = solops.group_norm(x, 4, weight, bias) + solops.instance_norm(x, running_mean, running_var, weight, bias)
        return y.square().mean()

    x = random_input((2, 8, 6, 5), torch.float32)
    weight, bias = parameters(8, torch.float32, True)
    results = []
    for function in (step, torch.compile(step, fullgraph=True)):
        running_mean, running_var = instance_case(x.shape, True, True)
        xs = leaves(x, weight, bias)
        function(*xs, running_mean, running_var).backward()
        results.append([t.grad for t in xs] + [running_mean, running_var])
    for eager, compiled in zip(*results):
        torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-5)


def test_channels_last_is_refused_by_name():
    x = random_input((2, 8, 4, 4), torch.float16).to(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match="x must be contiguous"):
        solops.group_norm(x, 4)


@pytest.mark.parametrize("call", [
    lambda x, mean, var: solops.instance_norm(x, mean[:3], var),  # running_mean of the wrong length
    lambda x, mean, var: solops.instance_norm(x, mean, var.half()),  # running_var of the wrong dtype
    lambda x, mean, var: solops.instance_norm(x, mean, var, torch.ones(4, device="cuda", dtype=torch.float16)),
    lambda x, mean, var: solops.instance_norm(x[:, :, :1, :1], mean, var),  # one spatial element
])
def test_a_refused_call_leaves_the_running_statistics_untouched(call):
    x = random_input((2, 4, 3, 3), torch.float32)
    running_mean, running_var = instance_case(x.shape, True, True)
    before = (running_mean.clone(), running_var.clone())
    with pytest.raises(RuntimeError):
        call(x, running_mean, running_var)
    torch.cuda.synchronize()
    assert torch.equal(running_mean, before[0]) and torch.equal(running_var, before[1])
