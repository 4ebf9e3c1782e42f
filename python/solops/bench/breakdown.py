"""Which kernel of a call takes the time: every GPU activity of one call, ours and each alternative
named, with its median duration, timed as the benchmark times the whole call (L2 flushed before
every call; solops.bench.timing.activity_medians).

    python -m solops.bench.breakdown --family norm --ops OP ... [--workloads ID ...]
        [--impls NAME ...]

On the GPU machine, from the repo root, after `build=build/release; . scripts/device-env.sh` (as
scripts/device-check.sh sets up); a variant's library stands in for the package's when LD_LIBRARY_PATH names
a folder whose libsolops.so is that library (scripts/device-check.sh's variant_folder).

Unlike ncu, it runs torch-compile's kernels as they are timed (compiled and autotuned first, no
replays, clocks and caches as the benchmark leaves them). With TORCH_LOGS=output_code in the
environment, torch-compile's generated Triton source is printed too (stderr) as each row compiles;
it does not say which of its configs autotuning chose (TRITON_PRINT_AUTOTUNING=1 may; untried).
"""

import sys

from solops.bench import timing
from solops.bench.kernels import row_calls


def main(argv=None) -> int:
    for op, row, impl in row_calls(__doc__.split("\n")[0], argv):
        activities = timing.activity_medians(impl.fn)
        total = sum(us for _, us in activities)
        print(f"{op} {row['workload']} {row['dtype']} {impl.name}: {total:.2f} µs", flush=True)
        for name, us in activities:
            print(f"  {us:8.2f}  {name[:150]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
