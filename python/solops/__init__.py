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

# The ops must be registered before the families' modules give them fakes.
from . import conv, cost, norm, pool, reference, topk  # noqa: E402
from .conv import *  # noqa: E402,F401,F403  (every family's __all__: its public functions)
from .norm import *  # noqa: E402,F401,F403
from .pool import *  # noqa: E402,F401,F403
from .topk import *  # noqa: E402,F401,F403

__all__ = ["cost", "reference", *conv.__all__, *norm.__all__, *pool.__all__, *topk.__all__]
