#!/usr/bin/env bash
# Builds the host code with AddressSanitizer and UndefinedBehaviorSanitizer (CMake preset
# `sanitize`) and runs the CPU tests under them. Any finding stops its test binary with an error
# (-fno-sanitize-recover=all, and ASan's halt_on_error), so the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# detect_leaks=1: ASan's default on Linux, stated so that it stays on. The CPU tests never start the
# CUDA runtime; where a program does, the driver's allocations in cuInit are reported as leaks.
# protect_shadow_gap=0: the CUDA driver reserves addresses inside ASan's shadow gap, and with the gap
# protected every cudaMalloc fails on a machine with a GPU (google/sanitizers#629).
export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
cmake --preset sanitize
cmake --build --preset sanitize -j "$(nproc)"
ctest --preset sanitize -j "$(nproc)"
