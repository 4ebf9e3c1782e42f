"""The top-k family: topk_selector, the key selection of DeepSeek-V3.2's sparse attention (TileOPs'
TopkSelectorFwd, spec §5.1, §6.13), which PyTorch offers only as torch.topk over each row's window.

The op is torch.ops.solops.topk_selector, registered in C++ (src/torch/topk.cpp). Its fake
implementation below gives torch.compile the output, on symbolic sizes too, and applies the library's
rules at trace time (src/topk/topk_selector_rules.cpp).
"""

import torch

from ._eager import eager
from ._rules import (INT_MAX, check_dtype, check_float_dtype, check_known_dtype, check_shape, check_tensor, require,
                     shape_string)

# The public functions; solops/__init__.py exports every family's.
__all__ = ["topk_selector"]

_topk_selector = eager(torch.ops.solops.topk_selector.default)


def topk_selector(index_score, starts, ends, topk, sorted=False):
    """For every query row (b, s) and kv group g, the topk positions j of the highest
    index_score[b, s, j, g] in the row's window max(starts[b, s], 0) <= j < min(ends[b, s], S_kv):
    int32 [B, S, G, topk], absolute positions.

    index_score: float32, float16 or bfloat16 [B, S, S_kv, G], contiguous CUDA (G innermost). starts,
    ends: int32 [B, S], shared by the groups, or None (0 and S_kv). topk: 1 <= topk <= S_kv.
    Scores compare as floats with NaN above +inf and -0 equal to +0; equal scores rank by position,
    the lower first, so that the result is one set, the same on every run. A window of count < topk
    positions gives them all, then -1. sorted=False lists the positions in ascending order,
    sorted=True by score, descending (ties by position). Op: solops::topk_selector.
    """
    return _topk_selector(index_score, starts, ends, topk, sorted)


@torch.library.register_fake("solops::topk_selector")
def _(index_score, starts, ends, topk, sorted=False):
    # The binding's order: index_score's dtype, the shape rule, the windows' dtypes, then the op's checks.
    op = "topk_selector"
    check_known_dtype(op, "index_score", index_score)
    shape = index_score.shape
    require(index_score.dim() == 4, op, "index_score ", shape_string(shape), " must be 4-D [B, S, S_kv, G]")
    batch, queries, keys, groups = shape
    require(groups >= 1, op, "index_score ", shape_string(shape), " has G = 0 kv groups (only B and S may be 0)")
    require(keys <= INT_MAX, op, "index_score has S_kv = ", keys, " keys, more than int32 positions address (2^31 - 1)")
    require(topk >= 1, op, "topk = ", topk, " must be >= 1")
    require(topk <= keys, op, "topk = ", topk, " must be <= S_kv = ", keys)
    windows = [(name, window) for name, window in (("starts", starts), ("ends", ends)) if window is not None]
    for name, window in windows:
        check_known_dtype(op, name, window)
    check_tensor(op, "index_score", index_score)
    check_float_dtype(op, "index_score", index_score)
    for name, window in windows:
        check_tensor(op, name, window)
        check_dtype(op, name, window, torch.int32)
        check_shape(op, name, window, [batch, queries])
    return index_score.new_empty([batch, queries, groups, topk], dtype=torch.int32)
