"""solops: fast, correct NN operators for NVIDIA Hopper, as torch custom ops (torch.ops.solops.*).

Loads the prebuilt libsolops.so through ctypes; nothing is compiled against PyTorch.
"""

from . import cost, reference
from ._native import SolopsError
from .pool import (adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d,
                   max_pool2d, max_pool3d, mean_pooling, prepare_chunk_indices)

__all__ = [
    "SolopsError", "adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "cost", "max_pool1d", "max_pool2d", "max_pool3d", "mean_pooling", "prepare_chunk_indices", "reference",
]
