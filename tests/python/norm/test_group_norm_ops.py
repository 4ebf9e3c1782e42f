"""solops.group_norm and solops.instance_norm as PyTorch users meet them, on the GPU: equal to
F.group_norm and F.instance_norm on random shapes (groups, affine on and off, running statistics
present and absent, f32/f16/bf16, N = 1, spatial size 1; other strided layouts than channels_last
refused by name), the running statistics updated in place as PyTorch updates them, the gradients equal
to PyTorch's, channels_last x with y and grad_x channels_last, the backward's output_mask leaving
parameter gradients out without changing the rest, bitwise deterministic in both layouts, captured and
replayed by CUDA graphs (running-statistics updates included), traced by torch.compile, and bad calls
refused before anything is written. Needs a CUDA device; skips loudly without one."""

import math
import random
import re

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
# channels_last x (4-D): the catalogue's shapes, odd C / G, C / G = 1, one-position rows, N = 1, groups
# wider than a block's threads.
CHANNELS_LAST_SHAPES = [((8, 128, 32, 32), 32), ((4, 256, 28, 28), 32), ((4, 128, 30, 30), 16), ((2, 9, 5, 7), 3),
                        ((1, 6, 1, 7), 6), ((2, 12, 4, 4), 12), ((3, 2100, 3, 5), 1)]
# The gradient tests' calls, (shape, groups, memory format of x and grad_out): a third of the random
# shapes contiguous, and the channels_last shapes.
CHANNELS_LAST_CASES = [(shape, groups, torch.channels_last) for shape, groups in CHANNELS_LAST_SHAPES]
GROUP_GRADIENT_CASES = [(shape, groups, torch.contiguous_format) for shape, groups in GROUP_SHAPES[::3]] + (
    CHANNELS_LAST_CASES)
INSTANCE_GRADIENT_CASES = [(shape, None, torch.contiguous_format) for shape, _ in INSTANCE_SHAPES[::2]] + (
    CHANNELS_LAST_CASES)
RUNNING_MODES = [(True, False), (True, True), (False, True)]  # (use_input_stats, running statistics)


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


def check_running_statistics(ours, theirs):
    for got, want in zip(ours, theirs):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, _", INSTANCE_SHAPES)
@pytest.mark.parametrize("use_input_stats, running", RUNNING_MODES)
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
        check_running_statistics((running_mean, running_var), theirs)


def leaves(*tensors):
    return [t.detach().clone().requires_grad_() if t is not None else None for t in tensors]


def in_format(t, memory_format):
    return t.contiguous(memory_format=memory_format)


def float_parameters(channels, dtype, affine):
    return [p.float() if p is not None else None for p in parameters(channels, dtype, affine)]


def assert_format(t, memory_format):
    assert t.is_contiguous(memory_format=memory_format)
    if memory_format == torch.channels_last:
        assert not t.is_contiguous()


def check_forward_and_gradients(y, expected, dy, mine, want, memory_format):
    """Our y against PyTorch's (f32) expected, then the gradients of (y * dy).sum() for the leaves `mine`
    against those of (expected * dy).sum() for `want`. Our y and grad_x come out in x's memory format
    (channels_last as BatchNorm's); PyTorch's CUDA F.group_norm and F.instance_norm make channels_last
    x contiguous first and return contiguous tensors: the values are compared, and the format is ours."""
    dtype = y.dtype
    assert_format(y, memory_format)
    close(y, expected.to(dtype), FORWARD_TOLERANCE[dtype])
    (y * dy).sum().backward()
    (expected * dy.float()).sum().backward()
    assert_format(mine[0].grad, memory_format)
    tolerance = BACKWARD_TOLERANCE[dtype]
    sums = tolerance * max(1, y.numel() // y.shape[1]) ** 0.5  # parameter gradients sum B * S terms
    close(mine[0].grad, want[0].grad.to(dtype), tolerance)
    for got, expected_parameter in zip(mine[1:], want[1:]):
        if got is not None:
            torch.testing.assert_close(got.grad, expected_parameter.grad.to(dtype), rtol=tolerance, atol=sums)


def random_x_and_grad_out(shape, dtype, memory_format):
    return tuple(in_format(random_input(shape, dtype, seed), memory_format) for seed in (0, 9))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, groups, memory_format", GROUP_GRADIENT_CASES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_and_its_gradients_equal_pytorch(shape, groups, memory_format, dtype, affine):
    x, dy = random_x_and_grad_out(shape, dtype, memory_format)
    mine = leaves(x, *parameters(shape[1], dtype, affine))
    want = leaves(x.float(), *float_parameters(shape[1], dtype, affine))
    y = solops.group_norm(mine[0], groups, *mine[1:])
    check_forward_and_gradients(y, F.group_norm(want[0], groups, *want[1:]), dy, mine, want, memory_format)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, _, memory_format", INSTANCE_GRADIENT_CASES)
@pytest.mark.parametrize("use_input_stats, running", RUNNING_MODES)
def test_instance_norm_and_its_gradients_equal_pytorch(shape, _, memory_format, dtype, use_input_stats, running):
    x, dy = random_x_and_grad_out(shape, dtype, memory_format)
    running_mean, running_var = instance_case(shape, use_input_stats, running)
    theirs = (running_mean.clone(), running_var.clone()) if running else (None, None)
    mine = leaves(x, *parameters(shape[1], dtype, True))
    want = leaves(x.float(), *float_parameters(shape[1], dtype, True))
    y = solops.instance_norm(mine[0], running_mean, running_var, *mine[1:], use_input_stats, 0.2, 1e-5)
    expected = F.instance_norm(want[0], *theirs, *want[1:], use_input_stats, 0.2, 1e-5)
    check_forward_and_gradients(y, expected, dy, mine, want, memory_format)
    if running:
        check_running_statistics((running_mean, running_var), theirs)


def backward_of(instance, x, groups, weight):
    """solops' public backward from x's forward statistics, a function of (grad_out, output_mask)."""
    if instance:
        _, mean, rstd = torch.ops.solops.instance_norm_with_stats(x, None, None, weight, None, True, 0.1, 1e-5)
        return lambda dy, mask: solops.instance_norm_backward(dy, x, mean, rstd, weight, output_mask=mask)
    _, mean, rstd = torch.ops.solops.group_norm_with_stats(x, groups, weight, None, 1e-5)
    return lambda dy, mask: solops.group_norm_backward(dy, x, groups, mean, rstd, weight, output_mask=mask)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("instance, shape, groups, memory_format",
                         [(False, *case) for case in GROUP_GRADIENT_CASES] +
                         [(True, *case) for case in INSTANCE_GRADIENT_CASES])
@pytest.mark.parametrize("affine", [True, False])
def test_output_mask_leaves_gradients_out_and_keeps_the_bits(instance, shape, groups, memory_format, dtype, affine):
    # Each parameter gradient left out, and both (the grad_x kernel alone): None in its place, and the
    # full call's bits for the rest, grad_x in x's memory format.
    x, dy = random_x_and_grad_out(shape, dtype, memory_format)
    backward = backward_of(instance, x, groups, parameters(shape[1], dtype, affine)[0])
    full = backward(dy, [True, True])
    for mask in ([False, False], [True, False], [False, True]):
        got = backward(dy, mask)
        assert_format(got[0], memory_format)
        assert torch.equal(got[0], full[0]), mask
        for asked, gradient, want in zip(mask, got[1:], full[1:]):
            assert (gradient is not None) == asked
            if asked:
                assert torch.equal(gradient, want), mask


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_two_runs_give_the_same_bits(memory_format):
    x, dy = random_x_and_grad_out((8, 64, 28, 28), torch.float32, memory_format)
    weight, bias = parameters(64, torch.float32, True)
    outputs = []
    for _ in range(2):
        running_mean, running_var = instance_case(x.shape, True, True)
        xs, zs = leaves(x, weight, bias), leaves(x, weight, bias)
        y = solops.group_norm(xs[0], 8, xs[1], xs[2])
        y.backward(dy)
        z = solops.instance_norm(zs[0], running_mean, running_var, zs[1], zs[2])
        z.backward(dy)
        outputs.append([y, *(t.grad for t in xs), z, *(t.grad for t in zs), running_mean, running_var])
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


def test_other_strided_input_is_refused_by_name():
    layouts = "x must be contiguous (row-major, e.g. NCHW) or channels_last; other strided tensors are not supported"
    x3d = random_input((2, 8, 3, 4, 4), torch.float16).to(memory_format=torch.channels_last_3d)
    sliced = random_input((2, 8, 4, 8), torch.float16)[:, :, :, ::2]
    for x in (x3d, sliced):
        with pytest.raises(RuntimeError, match=re.escape("group_norm: " + layouts)):
            solops.group_norm(x, 4)
        with pytest.raises(RuntimeError, match=re.escape("instance_norm: " + layouts)):
            solops.instance_norm(x)
    # grad_out must be in x's memory format.
    x = in_format(random_input((2, 8, 4, 4), torch.float16), torch.channels_last)
    stats = torch.ones(2, 4, device="cuda")
    with pytest.raises(RuntimeError, match=re.escape("grad_out must be in x's memory format (channels_last)")):
        solops.group_norm_backward(x.contiguous(), x, 4, stats, stats)


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
