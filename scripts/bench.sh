#!/usr/bin/env bash
# Builds and installs solops (the C++ build for the cuDNN baseline, the package as README.md says),
# calibrates the GPU, benchmarks one operator family against every available alternative, renders
# the report and rewrites README.md's status block from the results.
# Usage: scripts/bench.sh FAMILY [GPU_NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
family=${1:?usage: scripts/bench.sh FAMILY [GPU_NAME], e.g. scripts/bench.sh pool}
gpu=${2:-$(scripts/gpu-name.sh)}
# The H200's report is the project's (docs/benchmarks.md); another card's goes beside it.
docs=docs
[ "$gpu" = h200 ] || docs=docs/$gpu
if [ -z "${SOLOPS_SKIP_BUILD:-}" ]; then
  cmake --preset release
  cmake --build --preset release -j "$(nproc)"
  python3 -m pip install --quiet .
fi
export PYTHONUNBUFFERED=1
mkdir -p "bench/results/$gpu"
python3 -m solops.bench.calibrate --out "bench/results/$gpu/profile.json"
python3 -m solops.bench.run --family "$family" --out "bench/results/$gpu/$family.jsonl"
python3 -m solops.bench.launch --family "$family" --out "bench/results/$gpu/launch-$family.jsonl"
python3 -m solops.bench.report --results "bench/results/$gpu" --out "$docs"
python3 -m solops.bench.status
