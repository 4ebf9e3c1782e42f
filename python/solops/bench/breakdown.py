"""Which kernel of a call takes the time: every GPU activity of one call, ours and each alternative
named, with its median duration, timed as the benchmark times the whole call (L2 flushed before
every call; solops.bench.timing.activity_medians).

    python -m solops.bench.breakdown --family norm --ops OP ... [--workloads ID ...]
        [--impls NAME ...]

On the GPU machine, from the repo root, after `build=build/release; . scripts/device-env.sh` (as
scripts/device-check.sh sets up); SOLOPS_LIBRARY picks a variant's library.

Unlike ncu, it runs torch-compile's kernels as they are timed (compiled and autotuned first, no
replays, clocks and caches as the benchmark leaves them).
"""

import argparse
import importlib
import json
import sys
from pathlib import Path

from solops.bench import run, timing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", required=True)
    parser.add_argument("--ops", nargs="+")
    parser.add_argument("--workloads", nargs="+", help="only the rows of these workload ids")
    parser.add_argument("--impls", nargs="+", default=[], help="alternatives to break down after ours")
    parser.add_argument("--manifest", type=Path, default=Path("manifest/workloads.json"))
    args = parser.parse_args(argv)
    module = importlib.import_module(f"solops.bench.{args.family}")
    manifest = json.loads(args.manifest.read_text())
    ops = run.choose_ops(module, manifest, args.family, args.ops)
    alternatives = run.choose_alternatives(module, args.impls) if args.impls else []
    for op, row in run.manifest_rows(manifest, args.family, ops, args.workloads):
        try:
            case = module.build_case(op, row, alternatives=alternatives)
        except run.UnsupportedRow:
            continue
        for impl in case.impls:
            if impl.fn is None:
                continue
            activities = timing.activity_medians(impl.fn)
            total = sum(us for _, us in activities)
            print(f"{op} {row['workload']} {row['dtype']} {impl.name}: {total:.2f} µs", flush=True)
            for name, us in activities:
                print(f"  {us:8.2f}  {name[:150]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
