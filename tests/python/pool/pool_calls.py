"""Calls of the pooling ops that break one rule each, with a fragment of the error they must raise.
They run twice with the same expectation: eagerly on CUDA tensors (the C++ checks, test_pool_ops.py)
and traced on fake CUDA tensors (the fakes, test_pool_rules.py, no GPU needed)."""

import torch

import solops


def _t(*shape, dtype=torch.float32):
    return torch.randn(shape, device="cuda").to(dtype)


BAD_CALLS = [
    (lambda: solops.max_pool2d(_t(8, 8), 2), "3-D [C, H, W] or 4-D"),
    (lambda: solops.avg_pool2d(_t(1, 1, 8, 8), 3, padding=2), "at most half"),
    (lambda: solops.max_pool2d(_t(1, 1, 4, 4), 7, padding=1), "larger than the padded"),
    (lambda: solops.max_pool2d(_t(1, 1, 8, 8), 2, stride=0), "stride[0] = 0"),
    (lambda: solops.max_pool2d(_t(1, 1, 8, 8), 2, stride=-2), "stride[0] = -2"),
    (lambda: solops.max_pool2d(_t(1, 1, 8, 8, dtype=torch.float64), 2), "dtype float64"),
    (lambda: solops.max_pool2d(_t(1, 1, 8, 8, dtype=torch.int32), 2), "dtype i32 is not supported (f32, f16 or bf16)"),
    (lambda: solops.max_pool2d(_t(1, 8, 8, 3).permute(0, 3, 1, 2), 2), "contiguous"),
    (lambda: solops.avg_pool2d(_t(1, 1, 8, 8), 2, divisor_override=0), "must not be zero"),
    (lambda: solops.max_pool2d(_t(1, 1, 8, 8), (2, 2, 2)), "kernel_size must be an int or a list of 2, got 3"),
    (lambda: solops.max_pool1d(_t(8), 2), "2-D [C, L] or 3-D [N, C, L]"),
    (lambda: solops.avg_pool1d(_t(1, 1, 8), 3, padding=2), "padding = 2 must be at most half"),
    (lambda: solops.max_pool1d(_t(1, 1, 8), 2, stride=0), "stride = 0 must be >= 1"),
    (lambda: solops.max_pool1d(_t(1, 1, 4), 7, padding=1), "larger than the padded"),
    (lambda: solops.max_pool1d(_t(1, 1, 8), (2, 2)), "kernel_size must be an int or a list of 1, got 2"),
    (lambda: solops.max_pool1d(_t(1, 1, 1), 2, 1, 1, dilation=2), "window 0 along L has no element"),
    (lambda: solops.adaptive_avg_pool2d(_t(7, 7), 1), "3-D [C, H, W] or 4-D"),
    (lambda: solops.max_pool3d(_t(1, 8, 8), 2), "4-D [C, D, H, W] or 5-D"),
    (lambda: solops.avg_pool3d(_t(1, 1, 4, 8, 8), (2, 2, 0)), "kernel_size[2] = 0"),
    (lambda: solops.avg_pool3d(_t(1, 1, 1, 8, 8), 2, padding=1), "smaller than the kernel"),
    (lambda: solops.adaptive_max_pool2d(_t(1, 2, 7, 7), 0), "output_size[0] = 0 must be >= 1"),
    (lambda: solops.max_pool2d(_t(0, 1, 0, 8), 2), "has an empty dim 2"),
    (lambda: solops.mean_pooling(_t(64, 4, 8), 32), "x must be 4-D [B, S, H, D]"),
    (lambda: solops.mean_pooling(_t(1, 64, 4, 8), 48), "must be a multiple of 32"),
    (lambda: solops.mean_pooling(_t(1, 64, 4, 8), 32, torch.tensor([0, 64], dtype=torch.int32, device="cuda")),
     "got only offsets"),
    (lambda: solops.mean_pooling(_t(1, 64, 4, 8), 32, torch.tensor([0, 64], device="cuda"),
                                 torch.tensor([[0, 0], [0, 1]], dtype=torch.int32, device="cuda")),
     "offsets: dtype i64 must be i32"),
    (lambda: solops.mean_pooling(_t(1, 64, 4, 8), 32, torch.tensor([0, 64], dtype=torch.int32, device="cuda"),
                                 torch.tensor([[0, 0], [0, 1], [0, 2]], dtype=torch.int32, device="cuda")),
     "indices lists 3 chunks, but 1 sequences"),
]
