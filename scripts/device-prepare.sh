#!/usr/bin/env bash
# On the CPU machine, before a device call: the C++ build (its test binaries and library travel),
# the package's wheel (build/wheel/, so that the GPU machine need not build it) and .whl/
# (scripts/fetch-wheels.sh). Prints the paths to name in the device call's carry; the call then
# runs scripts/device-check.sh FAMILY.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release
cmake --build --preset release -j "$(nproc)"
rm -rf build/wheel
python3 -m pip wheel --quiet --no-deps --no-build-isolation . -w build/wheel
scripts/fetch-wheels.sh >/dev/null
echo "carry: build/release/tests/solops_cpu_tests build/release/tests/solops_gpu_tests" \
  "build/release/libsolops.so.0.1.0 build/release/bench/cudnn build/wheel .whl"
