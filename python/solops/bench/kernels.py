"""Runs solops once on every manifest row of a family, for a profiler to record its kernels.

    ncu --kernel-name regex:solops --section SpeedOfLight ... \\
        python -m solops.bench.kernels --family pool [--ops OP ...]

Each row's call runs twice: a warm-up (lazy loading, first-launch costs) and the call to profile
(`ncu --launch-skip-before-match` is not needed: profile every second kernel, or all of them).
Prints each row before its calls, so a profiler's report can be matched to the rows.
"""

import argparse
import importlib
import json
import sys
from pathlib import Path

import torch

from solops.bench import run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", required=True)
    parser.add_argument("--ops", nargs="+")
    parser.add_argument("--manifest", type=Path, default=Path("manifest/workloads.json"))
    args = parser.parse_args(argv)
    module = importlib.import_module(f"solops.bench.{args.family}")
    manifest = json.loads(args.manifest.read_text())
    ops = run.choose_ops(module, manifest, args.family, args.ops)
    for op, row in run.manifest_rows(manifest, args.family, ops, None):
        try:
            case = module.build_case(op, row, alternatives=[])
        except run.UnsupportedRow:
            continue
        print(f"{op} {row['workload']} {row['dtype']}", flush=True)
        for _ in range(2):
            case.impls[0].fn()
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
