"""solops.topk_selector as PyTorch users meet it: equal to the CPU reference position for position
(the tie rule and the slot order included) and under the spec's tie-aware check against torch.topk's
values (§5.1), on full, decode-like, causal, short and empty windows, kv groups, f32, f16 and bf16, ties,
NaN and infinities, topk past the shared-memory path; two runs bitwise equal; clear errors on bad input
(topk_calls.py). Needs a CUDA device; skips loudly without one."""

import pytest
import torch

import solops
from solops.bench.topk import check_selection, window_top_values
from support import HAS_CUDA
from test_topk_rules import cpu_scores, cpu_windows
from topk_calls import BAD_CALLS

if not HAS_CUDA:
    pytest.skip("SKIPPED: no CUDA device on this machine; these tests need one", allow_module_level=True)

CASES = [
    # shape [B, S, S_kv, G], topk, scores, dtype, windows
    ((1, 64, 65536, 1), 2048, "normal", torch.float32, "full"),  # a catalogue row at reduced S
    ((1, 64, 65536, 1), 1024, "normal", torch.float32, "full"),
    ((1, 8, 131072, 1), 2048, "normal", torch.float32, "causal"),  # few long rows: clusters
    ((1, 300, 20000, 1), 2048, "normal", torch.bfloat16, "full"),  # a CTA a row, sampled floors, bf16 ties
    ((2, 33, 5000, 1), 100, "few", torch.bfloat16, "random"),
    ((1, 17, 4099, 3), 2048, "special", torch.float16, "random"),  # S_kv odd, G > 1: scalar loads
    ((1, 5, 9000, 1), 3000, "normal", torch.float32, "random"),  # topk past the buffered path
    ((1, 3, 7000, 1), 7000, "few", torch.float32, "full"),
]


def windows_of(kind, shape, device):
    batch, queries, keys, _ = shape
    if kind == "full":
        return None, None
    if kind == "causal":
        ends = torch.arange(queries, dtype=torch.int32).repeat(batch, 1) + (keys - queries + 1)
        return None, ends.to(device)
    starts, ends = cpu_windows(batch, queries, keys)
    return starts.to(device), ends.to(device)


@pytest.mark.parametrize("shape, topk, kind, dtype, windows", CASES)
@pytest.mark.parametrize("sorted", [False, True])
def test_kernel_is_the_reference(shape, topk, kind, dtype, windows, sorted):
    scores = cpu_scores(shape, kind, dtype)
    starts, ends = windows_of(windows, shape, "cpu")
    out = solops.topk_selector(scores.cuda(), *(None if t is None else t.cuda() for t in (starts, ends)), topk,
                               sorted)
    want = solops.reference.run(solops.topk_selector, scores, starts, ends, topk, sorted)
    assert torch.equal(out.cpu(), want)
    check_selection(scores, starts, ends, topk, out.cpu(), window_top_values(scores, starts, ends, topk))


def test_two_runs_are_bitwise_equal():
    scores = cpu_scores((1, 40, 20000, 2), "few").cuda()
    starts, ends = windows_of("random", (1, 40, 20000, 2), "cuda")
    first = solops.topk_selector(scores, starts, ends, 1500)
    assert torch.equal(first, solops.topk_selector(scores, starts, ends, 1500))


@pytest.mark.parametrize("call, fragment", BAD_CALLS, ids=[fragment for _, fragment in BAD_CALLS])
def test_bad_calls_are_refused_when_the_op_runs(call, fragment):
    with pytest.raises(RuntimeError) as error:
        call()
    assert fragment in str(error.value)
