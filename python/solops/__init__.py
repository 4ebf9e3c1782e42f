"""solops: fast, correct NN operators for NVIDIA Hopper, as PyTorch ops (torch.ops.solops.*).

Importing the package loads its PyTorch extension (libsolops_torch.so, built against PyTorch's
stable C ABI), which registers every op from C++, and then the families' Python functions and
fake implementations. Errors in the ops raise RuntimeError with the library's message.
"""

from pathlib import Path

import torch


def _load_extension():
    # In the package's folder; an editable install (pip install -e .) keeps it beside the sources'
    # other path entry.
    for folder in __path__:
        library = Path(folder, "libsolops_torch.so")
        if library.exists():
            return torch.ops.load_library(library)
    raise ImportError(f"solops: libsolops_torch.so is in none of {list(__path__)}: install the package with "
                      "`pip install .` (README.md)")


_load_extension()

from . import cost, reference  # noqa: E402  (the ops must be registered first)
from .norm import (ada_layer_norm, batch_norm_inference, fused_add_layer_norm, fused_add_layer_norm_,  # noqa: E402
                   fused_add_rms_norm, fused_add_rms_norm_, gemma_rms_norm, group_rms_norm, layer_norm,
                   layer_norm_backward, layer_norm_quant, qk_norm, rms_norm, rms_norm_backward, rms_norm_quant,
                   spectral_norm_power_iter, vector_norm, weight_norm)
from .pool import (adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, avg_pool3d,  # noqa: E402
                   max_pool1d, max_pool2d, max_pool3d, mean_pooling, prepare_chunk_indices)
from .topk import topk_selector  # noqa: E402

__all__ = [
    "ada_layer_norm", "adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "batch_norm_inference", "cost", "fused_add_layer_norm", "fused_add_layer_norm_", "fused_add_rms_norm",
    "fused_add_rms_norm_", "gemma_rms_norm", "group_rms_norm", "layer_norm", "layer_norm_backward", "layer_norm_quant",
    "max_pool1d", "max_pool2d", "max_pool3d", "mean_pooling", "prepare_chunk_indices", "qk_norm", "reference",
    "rms_norm", "rms_norm_backward", "rms_norm_quant", "spectral_norm_power_iter", "topk_selector", "vector_norm",
    "weight_norm",
]
