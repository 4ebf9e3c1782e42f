"""The Python tests: one folder per operator family (its sample calls and its tests), the tests that
run every family's samples through PyTorch's machinery here, and support.py.

Marker `needs_shared`: the test reads ../shared (the spec and the workload catalogue), which only the
CPU machines have; scripts/device-check.sh deselects these on the GPU machine with
`-m "not needs_shared"`."""

import sys
from pathlib import Path

# Each family's sample calls are imported by name (pool_samples, norm_samples, conv_samples,
# topk_samples) from any test.
for family in ("pool", "norm", "conv", "topk"):
    sys.path.insert(0, str(Path(__file__).parent / family))


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_shared: reads ../shared, present on the CPU machines only")
