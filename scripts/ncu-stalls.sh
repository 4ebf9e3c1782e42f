#!/usr/bin/env bash
# Why a kernel is slow, on the GPU machine: ncu's stall reasons (average cycles a warp spends in
# each state per issued instruction), instructions executed, issue and warp activity, DRAM bytes,
# registers and launch shape of every kernel of the chosen rows, as CSV (--page raw). Made for one
# device call on a build carried from the CPU machine, as scripts/device-check.sh is.
# Usage (repo root): scripts/ncu-stalls.sh FAMILY OUT.csv --ops OP ... [--workloads ID ...]
#   [--impls ALT ...]   (the arguments after OUT.csv go to solops.bench.kernels)
# The package and .whl/ are installed as device-check.sh does; a variant's library
# (scripts/build-variants.sh) stands in for the package's when LD_LIBRARY_PATH names a folder whose
# libsolops.so is that library. With --impls every kernel is profiled (the alternatives' too); leave
# torch-compile out: ncu would profile every kernel of its autotuning.
# The rows before the CSV header ("ID", ...) are the runner's own lines. The metrics are the ones
# docs/perf/ quotes from ncu (DRAM %, issue-active, warps active, stall reasons).
set -uo pipefail
family=${1:?usage: scripts/ncu-stalls.sh FAMILY OUT.csv --ops OP ... [--workloads ID ...] [--impls ALT ...]}
out=${2:?usage: scripts/ncu-stalls.sh FAMILY OUT.csv --ops OP ...}
shift 2
build=${SOLOPS_BUILD_DIR:-build/release}
# shellcheck source=scripts/device-env.sh
. "$(dirname "$0")/device-env.sh"
metrics='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
metrics+=',gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed'
metrics+=',smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active'
metrics+=',smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum'
metrics+=',dram__bytes_read.sum,dram__bytes_write.sum,launch__registers_per_thread,launch__block_size,launch__grid_size'
kernels=(--kernel-name regex:solops::)
for argument in "$@"; do [ "$argument" = --impls ] && kernels=(); done
# Clocks left alone, as the timing method does; ncu invalidates the caches before each kernel.
ncu --clock-control none --kernel-name-base demangled "${kernels[@]}" --csv --page raw --metrics "$metrics" \
  python3 -m solops.bench.kernels --family "$family" "$@" >"$out"
