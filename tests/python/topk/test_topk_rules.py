"""The top-k op's rules on the CPU, as torch.compile meets them: the Python fake against the C++ shape
rule on thousands of random calls, accepted and rejected alike, message for message; every bad call of
topk_calls.py refused at trace time; the CPU reference under the spec's tie-aware check (§5.1) and,
where scores do not tie, position for position against torch.topk; the cost model."""

import random

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import solops
from solops.bench.topk import check_selection, window_top_values
from support import assert_fakes_agree_with_the_cpp_shape_rules
from topk_calls import BAD_CALLS

DRAWS = 3000


def _meta(shape, dtype=torch.float16):
    return torch.empty(shape, device="meta", dtype=dtype)


def draw_call(rng):
    """A random call: mostly valid, each shape rule broken now and then; windows well-formed or None."""
    shape = [rng.randint(0, 3), rng.randint(0, 5), rng.randint(1, 300), rng.randint(1, 3)]
    if rng.random() < 0.05:
        shape[3] = 0
    if rng.random() < 0.03:
        shape[2] = rng.choice([2**31, 2**31 - 1])
    if rng.random() < 0.05:
        shape = shape[:3] if rng.random() < 0.5 else shape + [2]
    keys = shape[2] if len(shape) > 2 else 1
    topk = rng.randint(1, min(keys, 5000)) if rng.random() < 0.8 else rng.choice([0, -1, keys + 1])
    windows = [_meta(shape[:2], torch.int32) if len(shape) >= 2 and rng.random() < 0.5 else None for _ in range(2)]
    return shape, (*windows, topk, rng.random() < 0.5)


def test_fake_agrees_with_the_cpp_shape_rule_on_random_calls():
    rng = random.Random(0)

    def draw():
        shape, args = draw_call(rng)
        return "topk_selector", (_meta(shape), *args)

    assert_fakes_agree_with_the_cpp_shape_rules(draw, DRAWS, rejected_share=10)


@pytest.mark.parametrize("call, fragment", BAD_CALLS, ids=[fragment for _, fragment in BAD_CALLS])
def test_bad_calls_are_refused_at_trace_time(call, fragment):
    with pytest.raises(RuntimeError) as error, FakeTensorMode():
        call()
    assert fragment in str(error.value)


def cpu_scores(shape, kind, dtype=torch.float32, seed=0):
    """Normal scores; "few": one of 16 values (-0 and +0 among them); "special": NaN of either sign,
    infinities and -0 among normal ones."""
    generator = torch.Generator().manual_seed(seed)
    if kind == "few":
        values = torch.tensor([-3, -2, -1.5, -1, -0.5, -0.0, 0.0, 0.25, 0.5, 1, 1.5, 2, 3, 4, 100, -100])
        return values[torch.randint(0, 16, shape, generator=generator)].to(dtype)
    scores = torch.randn(shape, generator=generator)
    if kind == "special":
        pick = torch.randint(0, 32, shape, generator=generator)
        for code, value in enumerate([float("nan"), -float("nan"), float("inf"), -float("inf"), -0.0]):
            scores[pick == code] = value
    return scores.to(dtype)


def cpu_windows(batch, queries, keys, seed=0):
    generator = torch.Generator().manual_seed(seed)
    bounds = torch.randint(-5, keys + 6, (2, batch, queries), generator=generator, dtype=torch.int32)
    return bounds[0], bounds[1]


@pytest.mark.parametrize("kind", ["normal", "few", "special"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("sorted", [False, True])
def test_reference_passes_the_spec_check(kind, dtype, sorted):
    for seed, (shape, topk) in enumerate([((2, 3, 50, 1), 7), ((1, 4, 33, 3), 33), ((3, 2, 200, 2), 1)]):
        scores = cpu_scores(shape, kind, dtype, seed)
        for starts, ends in [(None, None), cpu_windows(*shape[:3], seed)]:
            out = solops.reference.run(solops.topk_selector, scores, starts, ends, topk, sorted)
            assert out.dtype == torch.int32 and out.shape == (shape[0], shape[1], shape[3], topk)
            check_selection(scores, starts, ends, topk, out, window_top_values(scores, starts, ends, topk))


def test_reference_is_torch_topk_where_scores_do_not_tie():
    scores = cpu_scores((2, 3, 500, 2), "normal")
    want = torch.topk(scores, 40, dim=2).indices.permute(0, 1, 3, 2).int()
    assert torch.equal(solops.reference.run(solops.topk_selector, scores, None, None, 40, True), want)
    assert torch.equal(solops.reference.run(solops.topk_selector, scores, None, None, 40), want.sort(-1).values)


def test_cost_model_follows_the_spec():
    # Spec §5.1: a compare a score; the scores, starts and ends read, the int32 indexes written.
    scores, windows = torch.empty(1, 32768, 65536, 1), torch.empty(1, 32768, dtype=torch.int32)
    assert solops.cost.of(solops.topk_selector, scores, windows, windows, 2048) == (
        32768 * 65536, 32768 * 65536 * 4 + 32768 * 8 + 32768 * 2048 * 4)
