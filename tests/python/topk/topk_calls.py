"""Calls of the top-k op that break one rule each, with a fragment of the error they must raise. They
run twice with the same expectation: eagerly on CUDA tensors (the C++ checks, test_topk_ops.py) and
traced on fake CUDA tensors (the fake, test_topk_rules.py, no GPU needed)."""

import torch

import solops


def _t(*shape, dtype=torch.float32):
    return torch.randn(shape, device="cuda").to(dtype)


def _windows(*shape, dtype=torch.int32):
    return torch.zeros(shape, device="cuda", dtype=dtype)


BAD_CALLS = [
    (lambda: solops.topk_selector(_t(1, 4, 16, 1), None, None, 0), "topk_selector: topk = 0 must be >= 1"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 1), None, None, 17), "topk = 17 must be <= S_kv = 16"),
    (lambda: solops.topk_selector(_t(4, 16, 1), None, None, 2), "index_score [4, 16, 1] must be 4-D [B, S, S_kv, G]"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 0), None, None, 2), "has G = 0 kv groups"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 1, dtype=torch.float64), None, None, 2), "dtype float64"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 1, dtype=torch.int32), None, None, 2),
     "index_score: dtype i32 is not supported (f32, f16 or bf16)"),
    (lambda: solops.topk_selector(_t(1, 4, 2, 16).transpose(2, 3), None, None, 2), "index_score must be contiguous"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 1), _windows(4), None, 2), "starts: shape [4] must be [1, 4]"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 1), _windows(1, 4, dtype=torch.int64), None, 2),
     "starts: dtype i64 must be i32"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 1), None, _windows(1, 5), 2), "ends: shape [1, 5] must be [1, 4]"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 1), None, _windows(1, 4, dtype=torch.float32), 2),
     "ends: dtype f32 must be i32"),
    (lambda: solops.topk_selector(_t(1, 4, 16, 1), None, _windows(1, 4, dtype=torch.int8), 2),
     "ends: dtype int8 is not supported by solops"),
]
