#!/usr/bin/env bash
# Builds and runs every test: the C++ library with its CPU and GPU tests (CMake preset; the GPU tests
# skip with a message where no CUDA device exists), then the Python package, installed as README.md
# says (`pip install ".[test]"`, against the PyTorch already installed), and its tests.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${SOLOPS_PRESET:-release}
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" --output-on-failure
python3 -m pip install --quiet ".[test]"
python3 -m pytest -q tests/python
