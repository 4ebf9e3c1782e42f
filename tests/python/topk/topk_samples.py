"""One sample call of the top-k op, for the tests that run each op through PyTorch's machinery
(test_torch_integration.py): fakes, torch.compile, CUDA graphs, opcheck, errors. The query rows vary
and the keys with them: index_score [2, S, 4 * S + 3, 2], sliding windows [s - 2, 4 * s + 4), the
first of them shorter than topk."""

import torch

import solops
from support import Sample, random

TOPK = 8


def _inputs(size, device, dtype):
    query = torch.arange(size, device=device, dtype=torch.int32).repeat(2, 1)
    return random((2, size, 4 * size + 3, 2), device, dtype), query - 2, 4 * query + 4


SAMPLES = [
    Sample("topk_selector", _inputs, lambda scores, starts, ends: solops.topk_selector(scores, starts, ends, TOPK)),
]
