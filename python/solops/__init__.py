"""solops: fast, correct NN operators for NVIDIA Hopper, as torch custom ops (torch.ops.solops.*).

Loads the prebuilt libsolops.so through ctypes; nothing is compiled against PyTorch.
"""

from . import cost, reference
from ._native import SolopsError
from .norm import (ada_layer_norm, fused_add_layer_norm, fused_add_layer_norm_, fused_add_rms_norm, fused_add_rms_norm_,
                   gemma_rms_norm, group_rms_norm, layer_norm, layer_norm_backward, layer_norm_quant, qk_norm, rms_norm,
                   rms_norm_backward, rms_norm_quant, spectral_norm_power_iter, vector_norm, weight_norm)
from .pool import (adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d,
                   max_pool2d, max_pool3d, mean_pooling, prepare_chunk_indices)

__all__ = [
    "SolopsError", "ada_layer_norm", "adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "cost", "fused_add_layer_norm", "fused_add_layer_norm_", "fused_add_rms_norm", "fused_add_rms_norm_",
    "gemma_rms_norm", "group_rms_norm", "layer_norm", "layer_norm_backward", "layer_norm_quant", "max_pool1d",
    "max_pool2d", "max_pool3d", "mean_pooling", "prepare_chunk_indices", "qk_norm", "reference", "rms_norm",
    "rms_norm_backward", "rms_norm_quant", "spectral_norm_power_iter", "vector_norm", "weight_norm",
]
