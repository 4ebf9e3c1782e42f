"""The Python tests: one folder per operator family (its sample calls and its tests), the tests that
run every family's samples through PyTorch's machinery here, and support.py.

Marker `needs_shared`: the test reads ../shared (the spec and the workload catalogue), which only the
CPU machines have. Where ../shared is absent these tests skip, with the reason, so that README's test
command passes on a machine that has only the checkout (the GPU machine); under CI they run and fail
instead, since CI places ../shared beside the clone."""

import os
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[3] / "shared"

# Each family's sample calls are imported by name (pool_samples, norm_samples, conv_samples,
# topk_samples) from any test.
for family in ("pool", "norm", "conv", "topk"):
    sys.path.insert(0, str(Path(__file__).parent / family))


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_shared: reads ../shared, present on the CPU machines only")


def pytest_collection_modifyitems(config, items):
    if SHARED.is_dir() or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason=f"needs ../shared (the spec and the workload catalogue), not found at {SHARED}")
    for item in items:
        if "needs_shared" in item.keywords:
            item.add_marker(skip)
