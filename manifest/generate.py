#!/usr/bin/env python3
"""Writes manifest/workloads.json, the project's list of every op and workload x dtype row.

The catalogue (../shared/catalogue/workloads.json) groups dtypes under one workload entry and keeps
page-level detail (layouts, npu ids, alternatives). Tests and the benchmark want one flat row per
(op, workload, dtype) with only what is needed to build the call, so this script flattens it.
Output order is catalogue order (ops, then workloads, then dtypes as written), so regenerating an
unchanged catalogue gives a byte-identical file.

Usage: python3 manifest/generate.py [--catalogue PATH] [--output PATH]
"""

import argparse
import json
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CATALOGUE = os.path.join(REPO_ROOT, "..", "shared", "catalogue", "workloads.json")
DEFAULT_OUTPUT = os.path.join(REPO_ROOT, "manifest", "workloads.json")


def manifest_rows(workload):
    """One manifest row per dtype string of a catalogue workload ("f16/f32" stays one string)."""
    return [
        {
            "workload": workload["id"],
            "dtype": dtype,
            "tensors": workload["tensors"],
            # Per-tensor dtypes that differ from the row dtype (e.g. i32 offsets, f32 running stats).
            "tensor_dtypes": workload["tensor_dtypes"],
            "params": workload["params"],
            "dims": workload["dims"],
            "reference": workload["gpu"].get(dtype),
        }
        for dtype in workload["dtypes"]
    ]


def build_manifest(catalogue, source):
    return {
        "source": source,
        "ops": [
            {
                "op": op["op"],
                "family": op["family"],
                "rows": [row for workload in op["workloads"] for row in manifest_rows(workload)],
            }
            for op in catalogue["ops"]
        ],
    }


def render(manifest):
    return json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalogue", default=DEFAULT_CATALOGUE, help="catalogue workloads.json")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="manifest file to write")
    args = parser.parse_args(argv)

    with open(args.catalogue, encoding="utf-8") as f:
        catalogue = json.load(f)
    # Recorded relative to the repo root so the file does not depend on where the repo is checked out.
    source = os.path.relpath(os.path.abspath(args.catalogue), REPO_ROOT).replace(os.sep, "/")
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(render(build_manifest(catalogue, source)))


if __name__ == "__main__":
    main(sys.argv[1:])
