"""The Python tests: one folder per operator family (its sample calls and its tests), the tests that
run every family's samples through PyTorch's machinery here, and support.py."""

import sys
from pathlib import Path

# Each family's sample calls are imported by name (pool_samples, norm_samples) from any test.
for family in ("pool", "norm"):
    sys.path.insert(0, str(Path(__file__).parent / family))
