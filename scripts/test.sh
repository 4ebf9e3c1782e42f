#!/usr/bin/env bash
# Builds solops and runs every test: CPU tests always, GPU tests where a CUDA device exists
# (they skip with a message elsewhere), Python tests where PyTorch is importable.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${SOLOPS_PRESET:-release}
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" --output-on-failure
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest -q tests/python
