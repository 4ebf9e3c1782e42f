"""The pooling ops' rules on the CPU, as torch.compile meets them: the Python fakes against the C++
shape rules on thousands of random calls, accepted and rejected alike, message for message; every
bad call of pool_calls.py refused at trace time; the CPU references and the cost models through the
same ops."""

import random

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import solops
from pool_calls import BAD_CALLS
from support import assert_fakes_agree_with_the_cpp_shape_rules

DRAWS = 3000


def draw_window_call(rng):
    """A random call of a 1-D to 3-D pool or an adaptive pool: mostly valid, each rule broken now and then."""
    dims = rng.choice([1, 2, 3])
    kind = rng.choice(["max", "max_with_indices", "avg"] + (["adaptive"] if dims == 2 else []))
    rank = dims + (rng.choice([0, 3]) if rng.random() < 0.05 else rng.choice([1, 2, 2]))
    shape = [rng.choice([0, 1, 2, 3, 31]) if rng.random() < 0.05 else rng.randint(1, 24) for _ in range(rank)]
    if rng.random() < 0.03 and rank >= 2:
        shape[-1] = rng.choice([2**31, 2**31 - 1, 70000])

    def per_axis(low, high, broken=0):
        count = rng.choice([1, dims, dims, dims]) if rng.random() < 0.97 else rng.choice([2, 4])
        return [rng.randint(broken if rng.random() < 0.05 else low, high) for _ in range(count)]

    if kind == "adaptive":
        name = rng.choice(["adaptive_max_pool2d", "adaptive_max_pool2d_with_indices", "adaptive_avg_pool2d"])
        sizes = [rng.randint(1, 9) if rng.random() < 0.95 else rng.randint(-1, 0)
                 for _ in range(rng.choice([2, 2, 2, 1, 3]))]
        return name, shape, (sizes,)
    kernel = per_axis(1, 7)
    stride = [] if rng.random() < 0.3 else per_axis(1, 5)
    padding = [rng.randint(0 if rng.random() < 0.97 else -1, k // 2 + (rng.random() < 0.1)) for k in kernel]
    ceil_mode = rng.random() < 0.5
    if kind.startswith("max"):
        name = f"max_pool{dims}d" + ("_with_indices" if kind == "max_with_indices" else "")
        return name, shape, (kernel, stride, padding, per_axis(1, 3), ceil_mode)
    name = f"avg_pool{dims}d"
    if dims == 1:
        return name, shape, (kernel, stride, padding, ceil_mode, rng.random() < 0.5)
    return name, shape, (kernel, stride, padding, ceil_mode, rng.random() < 0.5,
                         rng.choice([None, None, 0, 3, -2, 2**33]))


def draw_mean_pooling_call(rng):
    shape = [rng.randint(0, 3), rng.randint(1, 300), rng.randint(1, 4), rng.randint(1, 8)]
    if rng.random() < 0.05:
        shape = shape[:3]
    chunk_size = rng.choice([32, 64, 96, 48, 0])
    if rng.random() < 0.5:
        return "mean_pooling", shape, (chunk_size,)
    sequences, chunks = rng.randint(0, 5), rng.randint(0, 12)
    offsets = torch.empty([sequences + 1], dtype=torch.int32, device="meta")
    indices = torch.empty([chunks, 2], dtype=torch.int32, device="meta")
    return "mean_pooling", shape, (chunk_size, offsets, indices)


def test_fakes_agree_with_the_cpp_shape_rules_on_random_calls():
    rng = random.Random(0)
    draws = iter(range(DRAWS))

    def draw():
        name, shape, args = (draw_mean_pooling_call if next(draws) % 10 == 0 else draw_window_call)(rng)
        return name, (torch.empty(shape, dtype=torch.float16, device="meta"), *args)

    assert_fakes_agree_with_the_cpp_shape_rules(draw, DRAWS)


@pytest.mark.parametrize("call, fragment", BAD_CALLS, ids=[fragment for _, fragment in BAD_CALLS])
def test_bad_calls_are_refused_at_trace_time(call, fragment):
    with pytest.raises(RuntimeError) as error, FakeTensorMode():
        call()
    assert fragment in str(error.value)


def cpu_input(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dims, shape", [(1, (2, 3, 17)), (2, (2, 3, 11, 13)), (3, (2, 3, 5, 7, 9)), (2, (3, 9, 8))])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_references_are_pytorch_on_the_cpu(dims, shape, ceil_mode):
    x = cpu_input(shape)
    x.view(-1)[::13] = float("nan")
    x.view(-1)[3::17] = float("-inf")
    max_pool, avg_pool = getattr(solops, f"max_pool{dims}d"), getattr(solops, f"avg_pool{dims}d")
    got, got_indices = solops.reference.run(max_pool, x, 3, 2, 1, ceil_mode=ceil_mode, return_indices=True)
    want, want_indices = getattr(F, f"max_pool{dims}d")(x, 3, 2, 1, ceil_mode=ceil_mode, return_indices=True)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(got_indices, want_indices)
    x = cpu_input(shape, seed=1)
    torch.testing.assert_close(solops.reference.run(avg_pool, x, 3, 2, 1, ceil_mode, False),
                               getattr(F, f"avg_pool{dims}d")(x, 3, 2, 1, ceil_mode, False))
    if dims == 2:
        torch.testing.assert_close(solops.reference.run(solops.adaptive_avg_pool2d, x, (4, None)),
                                   F.adaptive_avg_pool2d(x, (4, None)))


def test_mean_pooling_reference_averages_each_chunk():
    x = cpu_input((2, 70, 3, 5))
    got = solops.reference.run(solops.mean_pooling, x, 32)
    want = torch.stack([x[:, 0:32].mean(1), x[:, 32:64].mean(1), x[:, 64:70].mean(1)], 1)
    torch.testing.assert_close(got, want)


def test_cost_models_count_taps_and_bytes():
    x = torch.empty(2, 3, 11, 13, dtype=torch.float16)
    outputs = 2 * 3 * 6 * 7
    assert solops.cost.of(solops.max_pool2d, x, 3, 2, 1) == (outputs * 9, (x.numel() + outputs) * 2)
    # Positions add eight bytes an output.
    assert solops.cost.of(solops.max_pool2d, x, 3, 2, 1, return_indices=True)[1] == (x.numel() + outputs) * 2 + 8 * outputs
