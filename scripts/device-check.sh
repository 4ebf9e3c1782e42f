#!/usr/bin/env bash
# The one device call: GPU tests, Python tests, calibration, benchmark and report, on the C++ build
# made on the CPU machine and carried over (build/release: its tests and library file) and the
# Python package (scripts/device-env.sh installs it). Everything lands in $OUT/bundle.tar.gz and
# the benchmark results in bench/results/<gpu>/ of the copy there.
# Usage (from the repo root on the GPU machine): scripts/device-check.sh FAMILY [GPU_NAME]
# GPU_NAME (default: scripts/gpu-name.sh's name of the card) names the results folder.
# SOLOPS_COMMIT names the measured commit in the results; give it as a literal from the machine
# that holds the checkout (a copy's .git, as the device tool makes, can lag its working tree, and
# `$(git rev-parse ...)` in the command runs there). Without it the results name git's HEAD, marked
# "+modified" where the tracked sources differ from it (solops.bench.commit).
# SOLOPS_DIAGNOSE=1 adds compute-sanitizer over the GPU tests (SOLOPS_MEMCHECK_FILTER picks them)
# and an ncu profile of every row's kernels (logs/memcheck.log, logs/ncu.log).
# A family too large for one call splits: SOLOPS_SKIP_TESTS=1 (or SOLOPS_TESTS="gpu", say) runs only
# calibration, benchmark and report (and those tests); SOLOPS_BENCH_OPS="OpA OpB" benchmarks only those ops and SOLOPS_BENCH_WORKLOADS="id ..."
# only those workloads' rows (the other rows' earlier lines in bench/results/<gpu>/<family>.jsonl are
# kept); SOLOPS_SKIP_BENCH=1 leaves out the benchmark of
# every alternative (tests and variants only). SOLOPS_GPU_TEST_FILTER picks GPU tests (gtest
# filter).
# SOLOPS_VARIANT_TESTS="name=FILTER ..." runs the GPU tests matching FILTER on each named variant's
# library (its path from SOLOPS_VARIANTS), before any benchmark: a variant is kept only once they pass.
# SOLOPS_VARIANTS="name=path/libsolops.so ..." also benchmarks each of those libraries, ours only,
# on the same ops, into variants/<name>.jsonl of the bundle: an A/B of kernel variants in one
# call. Each stands in for the package's libsolops.so through LD_LIBRARY_PATH, so build each from a
# tree with every symbol the PyTorch extension calls: scripts/build-variants.sh builds them from
# branches and packs them into one file to carry.
# Compare them: python3 python/solops/bench/variants.py BUNDLE main NAME... (BUNDLE: $OUT/bundle.tar.gz
# as it comes back, or the folder it was unpacked into).
# The C++ build folder is more than one call carries: carrying $build/tests and the library file
# alone works, and the library's links are made again here. Carry .whl/ (scripts/fetch-wheels.sh)
# and, to save the device the package's build, build/wheel/ (`pip wheel --no-deps . -w build/wheel`).
set -uo pipefail
family=${1:?usage: scripts/device-check.sh FAMILY [GPU_NAME]}
gpu=${2:-$("$(dirname "$0")/gpu-name.sh")}
# The H200's report is the project's (docs/benchmarks.md); another card's goes beside it.
docs=docs
[ "$gpu" = h200 ] || docs=docs/$gpu
# The report's HTML page is generated output, not committed: it travels in the bundle only.
html=build/benchmarks-$gpu.html
out=${OUT:-/tmp/solops-out}
# Logs and variant results gather in a scratch folder and leave in one archive, $out/bundle.tar.gz:
# the device tool brings back only a few files from $OUT, and dropped loose logs and variants.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs=$work/logs
mkdir -p "$logs" "$out"
build=${SOLOPS_BUILD_DIR:-build/release}
# shellcheck source=scripts/device-env.sh
. "$(dirname "$0")/device-env.sh"
status=0
step() {  # step NAME COMMAND...: runs, logs, remembers failure, keeps going
  local name=$1; shift
  echo "=== $name: $*"
  "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  tail -n 15 "$logs/$name.log"
  echo "=== $name: exit $rc"
  [ $rc -eq 0 ] || status=1
}
diagnose() {  # like step, for tools some machines lack (ncu, compute-sanitizer): never fails the run
  local saved=$status
  step "$@"
  status=$saved
}
gpu_tests() {  # gpu_tests NAME FILTER, in parallel shards: the tests' time is mostly their
  # single-threaded CPU references. Each shard's log keeps every test's time (a shard cut short still
  # says which test it was in); the step's output is the failures, the slowest tests and the totals.
  local name=$1 filter=$2 shards=${SOLOPS_GPU_TEST_SHARDS:-$(nproc)} pids=() rc=0
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$build/tests/solops_gpu_tests" \
      --gtest_filter="$filter" >"$logs/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  cat "$logs/$name".*.log | grep -E '^\[  (FAILED|PASSED|SKIPPED) |^\[==========\]|Failure$' | sort | uniq -c
  echo "slowest tests:"
  cat "$logs/$name".*.log | grep -E '^\[       OK \]' | sed -E 's/.*\] (.*) \(([0-9]+) ms\)/\2 \1/' | sort -rn | head -15
  return $rc
}
variant_folder() {  # variant_folder NAME: a folder whose libsolops.so(.0) is the variant's library
  local variant
  for variant in ${SOLOPS_VARIANTS:-}; do
    if [ "${variant%%=*}" = "$1" ]; then
      mkdir -p "$work/$1-library"
      # The test binaries need libsolops.so.0, the package's extension libsolops.so.
      ln -sf "$PWD/${variant#*=}" "$work/$1-library/libsolops.so.0"
      ln -sf "$PWD/${variant#*=}" "$work/$1-library/libsolops.so"
      echo "$work/$1-library"
      return
    fi
  done
  echo "no library for variant $1 in SOLOPS_VARIANTS" >&2
  return 1
}
with_library() {  # with_library DIR COMMAND...: COMMAND with DIR's libsolops first (LD_LIBRARY_PATH is
  # searched before the run paths of the test binaries and of the extension)
  (export LD_LIBRARY_PATH="$1:$LD_LIBRARY_PATH" && shift && "$@")
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$logs/nvidia-smi.log" 2>&1
# SOLOPS_TESTS picks the test steps (default "cpu gpu python"); SOLOPS_SKIP_TESTS=1 runs none.
tests=${SOLOPS_TESTS-cpu gpu python}
[ "${SOLOPS_SKIP_TESTS:-0}" = 1 ] && tests=
case " $tests " in *" cpu "*) step cpu-tests "$build/tests/solops_cpu_tests" --gtest_brief=1 ;; esac
case " $tests " in *" gpu "*) step gpu-tests gpu_tests gpu-tests "${SOLOPS_GPU_TEST_FILTER:-*}" ;; esac
case " $tests " in
  *" python "*)
    # Every Python test but those marked needs_shared: they read ../shared, which only the CPU
    # machines have, and CI runs them there. In parallel where pytest-xdist is installed: most of
    # their time is torch.compile's, on the CPU.
    workers=()
    python3 -c "import xdist" 2>/dev/null && workers=(-n 8)
    step python-tests python3 -m pytest -q "${workers[@]}" -m "not needs_shared" tests/python ;;
esac
if [ "${SOLOPS_DIAGNOSE:-0}" = 1 ]; then
  # Out-of-bounds accesses of the kernels on the GPU tests' shapes, and hardware counters of
  # every catalogue row's kernels (clocks left alone, as the timing method does).
  diagnose memcheck compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$build/tests/solops_gpu_tests" --gtest_brief=1 --gtest_filter="${SOLOPS_MEMCHECK_FILTER:-*}"
  diagnose ncu ncu --clock-control none --kernel-name-base demangled --kernel-name regex:solops:: --csv --page details \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis python3 -m solops.bench.kernels --family "$family"
fi
for tests in ${SOLOPS_VARIANT_TESTS:-}; do
  name=${tests%%=*}
  folder=$(variant_folder "$name") || { status=1; continue; }
  step "variant-tests-$name" with_library "$folder" gpu_tests "variant-tests-$name.shard" "${tests#*=}"
done
mkdir -p "bench/results/$gpu"
if [ "${SOLOPS_SKIP_BENCH:-0}" != 1 ]; then
  step calibrate python3 -m solops.bench.calibrate --out "bench/results/$gpu/profile.json"
  # shellcheck disable=SC2086 # SOLOPS_BENCH_OPS and SOLOPS_BENCH_WORKLOADS are lists of names
  step bench python3 -m solops.bench.run --family "$family" ${SOLOPS_BENCH_OPS:+--ops $SOLOPS_BENCH_OPS} \
    ${SOLOPS_BENCH_WORKLOADS:+--workloads $SOLOPS_BENCH_WORKLOADS} \
    --out "bench/results/$gpu/$family.jsonl"
  step launch python3 -m solops.bench.launch --family "$family" --out "bench/results/$gpu/launch-$family.jsonl"
fi
for variant in ${SOLOPS_VARIANTS:-}; do
  mkdir -p "$work/variants"
  folder=$(variant_folder "${variant%%=*}") || { status=1; continue; }
  # shellcheck disable=SC2086 # SOLOPS_BENCH_OPS and SOLOPS_BENCH_WORKLOADS are lists of names
  step "variant-${variant%%=*}" with_library "$folder" python3 -m solops.bench.run \
    --family "$family" ${SOLOPS_BENCH_OPS:+--ops $SOLOPS_BENCH_OPS} \
    ${SOLOPS_BENCH_WORKLOADS:+--workloads $SOLOPS_BENCH_WORKLOADS} --impls solops \
    --out "$work/variants/${variant%%=*}.jsonl"
done
# The report is remade only from a run of the benchmark: a call of tests or variants alone need not
# carry the library it imports.
if [ "${SOLOPS_SKIP_BENCH:-0}" != 1 ]; then
  step report python3 -m solops.bench.report --results "bench/results/$gpu" --out "$docs" --html "$html"
fi
tar czf "$out/bundle.tar.gz" -C "$work" . -C "$PWD" "bench/results/$gpu" "$docs/benchmarks.md" "$html" 2>/dev/null
exit $status
