"""ctypes wrapper of the cuDNN pooling baseline (bench/cudnn/cudnn_pool.cpp).

The library is found via env SOLOPS_CUDNN_BASELINE, else under build/*/bench/cudnn/ in the
repository. Importing torch first matters: torch loads its own libcudnn.so.9 (9.19), and our
library's libcudnn.so.9 dependency then resolves to that already-loaded copy by soname, so the
baseline runs the same cuDNN as eager PyTorch rather than the system 9.14.
"""

import ctypes
import os
from functools import cache
from pathlib import Path

import torch

LIBRARY_NAME = "libsolops_cudnn_baseline.so"
REPO_ROOT = Path(__file__).resolve().parents[3]

# Modes and dtype codes of solops_cudnn_pool2d_forward (dtype codes are solops_dtype's).
MODE_MAX = 0
MODE_AVG_INCLUDE_PAD = 1
MODE_AVG_EXCLUDE_PAD = 2
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


def find_library() -> Path | None:
    configured = os.environ.get("SOLOPS_CUDNN_BASELINE")
    if configured:
        return Path(configured)
    for root in (Path.cwd(), REPO_ROOT):
        found = sorted(root.glob(f"build/*/bench/cudnn/{LIBRARY_NAME}"))
        if found:
            return found[0]
    return None


@cache
def load() -> ctypes.CDLL | None:
    """The baseline library with its signatures set, or None when it has not been built."""
    path = find_library()
    if path is None or not path.exists():
        return None
    torch.backends.cudnn.version()  # makes sure torch's libcudnn.so.9 is loaded first
    library = ctypes.CDLL(str(path))
    library.solops_cudnn_last_error.restype = ctypes.c_char_p
    library.solops_cudnn_last_error.argtypes = []
    library.solops_cudnn_version.restype = ctypes.c_int64
    library.solops_cudnn_version.argtypes = []
    library.solops_cudnn_pool2d_forward.restype = ctypes.c_int32
    library.solops_cudnn_pool2d_forward.argtypes = [ctypes.c_int32] * 14 + [ctypes.c_void_p] * 3
    return library


def version() -> int | None:
    """The cuDNN version the baseline actually runs (e.g. 91900), or None if not built."""
    library = load()
    return None if library is None else int(library.solops_cudnn_version())


def pool2d(x: torch.Tensor, out_hw: tuple[int, int], mode: int, kernel_size: tuple[int, int],
           stride: tuple[int, int], padding: tuple[int, int]) -> torch.Tensor:
    """cudnnPoolingForward on a contiguous NCHW CUDA tensor, on the current stream."""
    library = load()
    if library is None:
        raise RuntimeError(f"{LIBRARY_NAME} not found (set SOLOPS_CUDNN_BASELINE or build it)")
    if x.dim() != 4 or not x.is_contiguous() or x.dtype not in DTYPE_CODES:
        raise ValueError("cudnn baseline takes a contiguous 4-D f32/f16/bf16 tensor")
    n, c, in_h, in_w = x.shape
    y = torch.empty((n, c, *out_hw), dtype=x.dtype, device=x.device)
    status = library.solops_cudnn_pool2d_forward(
        mode, DTYPE_CODES[x.dtype], n, c, in_h, in_w, out_hw[0], out_hw[1],
        kernel_size[0], kernel_size[1], padding[0], padding[1], stride[0], stride[1],
        x.data_ptr(), y.data_ptr(), torch.cuda.current_stream(x.device).cuda_stream)
    if status != 0:
        raise RuntimeError("cudnn baseline: " + library.solops_cudnn_last_error().decode())
    return y
