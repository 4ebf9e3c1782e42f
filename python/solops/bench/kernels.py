"""Runs solops once on every row of a family (the manifest's and its extra rows), for a profiler to record
its kernels.

    ncu --kernel-name regex:solops --section SpeedOfLight ... \\
        python -m solops.bench.kernels --family pool [--ops OP ...] [--workloads ID ...]
        [--impls NAME ...]

Each row's call (ours, then each alternative named by --impls) runs twice: a warm-up (lazy
loading, first-launch costs) and the call to profile (`ncu --launch-skip-before-match` is not
needed: profile every second kernel, or all of them). With --impls, drop --kernel-name so that
the alternatives' kernels are profiled too, and leave torch-compile out: ncu would profile every
kernel of its compilation's autotuning.
Prints each row before its calls, so a profiler's report can be matched to the rows.
"""

import argparse
import importlib
import json
import sys
from pathlib import Path

import torch

from solops.bench import run


def row_calls(description: str, argv=None):
    """The command line of a family's rows (--family, --ops, --workloads, --impls, --manifest) and
    each chosen row's calls: (op, row, impl) for ours, then for each alternative named by --impls."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--family", required=True)
    parser.add_argument("--ops", nargs="+")
    parser.add_argument("--workloads", nargs="+", help="only the rows of these workload ids")
    parser.add_argument("--impls", nargs="+", default=[], help="alternatives to run after ours")
    parser.add_argument("--manifest", type=Path, default=Path("manifest/workloads.json"))
    args = parser.parse_args(argv)
    module = importlib.import_module(f"solops.bench.{args.family}")
    manifest = json.loads(args.manifest.read_text())
    ops = run.choose_ops(module, manifest, args.family, args.ops)
    alternatives = run.choose_alternatives(module, args.impls) if args.impls else []
    for op, row in run.family_rows(module, manifest, args.family, ops, args.workloads):
        try:
            case = module.build_case(op, row, alternatives=alternatives)
        except run.UnsupportedRow:
            continue
        for impl in case.impls:
            if impl.fn is not None:
                yield op, row, impl


def main(argv=None) -> int:
    for op, row, impl in row_calls(__doc__.split("\n")[0], argv):
        print(f"{op} {row['workload']} {row['dtype']} {impl.name}", flush=True)
        for _ in range(2):
            impl.fn()
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
