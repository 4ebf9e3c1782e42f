"""Launch overhead: the wall time of back-to-back eager calls of each op of a family on its smallest
row (of the catalogue's and the family's extra rows), solops against PyTorch's own op (the family's
`torch` alternative).

    python -m solops.bench.launch --family pool --out bench/results/h200/launch-pool.jsonl

For each op: the row with the fewest bytes that the family can run, its inputs and calls
built by the family module's build_case (as the benchmark builds them), a warm-up, then CALLS
back-to-back calls of each, timed with perf_counter around the calls and one synchronize at the end;
solops and torch take turns for REPEATS rounds and the median of each is kept. One JSON line per op;
report.py renders them as each family's "Launch overhead" table. A row that fails writes a line
with its error and makes the run exit non-zero, after every op has run.

With --events, each op's calls are also profiled (torch.profiler, CPU side) and the host events of
one call are printed beneath its line, ours and torch's: the dispatcher's op, allocations, CUDA runtime
calls, with their count and µs per call (inflated by the profiler alike for both), to say where
the eager time goes.

The row choice and the timing loop need neither PyTorch nor the library (tests load this file on
the CPU); main and measure_op import them.
"""

import argparse
import contextlib
import gc
import importlib
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

CALLS = 1000
WARMUP_CALLS = 100
REPEATS = 5
# --events: the calls profiled for each implementation, and the costliest events printed.
EVENT_CALLS = 200
EVENTS_SHOWN = 12

# Bytes per element of the catalogue's dtype names.
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "fp8e4m3": 1, "i32": 4}


def row_bytes(row: dict) -> int:
    """Bytes of the tensors a row lists, each in its tensor_dtypes entry or else the row's
    dtype (the input dtype of "f16/f32")."""
    row_dtype = row["dtype"].partition("/")[0]
    total = 0
    for name, shape in row["tensors"].items():
        dtype = row.get("tensor_dtypes", {}).get(name, row_dtype)
        if dtype not in ELEMENT_BYTES:
            raise ValueError(f"{row['workload']}: tensor {name} has dtype {dtype!r}, "
                             f"not one of {sorted(ELEMENT_BYTES)}")
        total += ELEMENT_BYTES[dtype] * math.prod(shape)
    return total


def smallest_first(rows: Iterable[dict]) -> list[dict]:
    """The rows by bytes, fewest first; rows of equal bytes keep the catalogue's order."""
    return sorted(rows, key=row_bytes)


@contextlib.contextmanager
def collection_paused():
    """Garbage collection off inside the block, as timeit has it: a collection of the benchmark's own
    objects would be charged to whichever call happened to run then. (timing.py's eager time uses it
    too: this module needs no PyTorch, so it is the one both can import.)"""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def wall_us_per_call(fn: Callable, calls: int, synchronize: Callable[[], None]) -> float:
    """Wall µs per call of `calls` back-to-back fn() calls, synchronized before and once after."""
    with collection_paused():
        synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        synchronize()
        return (time.perf_counter() - start) / calls * 1e6


def median_wall_us(fns: dict[str, Callable], calls: int, repeats: int,
                   synchronize: Callable[[], None]) -> dict[str, float]:
    """Each function's median wall µs per call over `repeats` rounds. Every round times each
    function once, so a slow spell of the machine falls on all of them, and every other round runs
    them in reverse order, so none always runs first."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns.items())
    for repeat in range(repeats):
        for name, fn in order if repeat % 2 == 0 else reversed(order):
            samples[name].append(wall_us_per_call(fn, calls, synchronize))
    return {name: statistics.median(values) for name, values in samples.items()}


def host_events(fn: Callable, calls: int) -> list[tuple[str, float, float]]:
    """The CPU-side events of `calls` profiled fn() calls: (name, count per call, µs per call), the
    costliest first; events seen in fewer than half the calls are left out."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    events = [(event.key, event.count / calls, event.cpu_time_total / calls)
              for event in profiler.key_averages() if event.count * 2 >= calls]
    return sorted(events, key=lambda event: -event[2])


def launch_line(op: str, row: dict, solops_us: float | None, torch_us: float | None, facts: dict,
                error: str | None = None) -> dict:
    ratio = solops_us / torch_us if solops_us is not None and torch_us is not None else None
    return {"op": op, "workload": row["workload"], "dtype": row["dtype"], "tensors": row["tensors"],
            "solops_us": solops_us, "torch_us": torch_us, "ratio": ratio, "calls": CALLS, "repeats": REPEATS,
            "error": error, **facts}


def measure_op(module, op: str, rows: list[dict], facts: dict, events: bool = False) -> dict:
    """The launch line of op on the first of rows (smallest first) that the family can run; with
    `events`, the host events of each implementation's calls are printed too."""
    import torch

    from solops.bench import run

    skipped = []
    for row in rows:
        try:
            case = module.build_case(op, row, ["torch"])
        except run.UnsupportedRow as reason:
            skipped.append(f"{row['workload']} {row['dtype']}: {reason}")
            continue
        except Exception as error:
            return launch_line(op, row, None, None, facts, "building the case raised " + run.describe_error(error))
        impls = {impl.name: impl for impl in case.impls}
        if impls["torch"].fn is None:
            return launch_line(op, row, None, None, facts, "torch not applicable: " + impls["torch"].not_applicable)
        fns = {name: impl.fn for name, impl in impls.items()}
        try:
            for fn in fns.values():
                for _ in range(WARMUP_CALLS):
                    fn()
            times = median_wall_us(fns, CALLS, REPEATS, torch.cuda.synchronize)
            for name, fn in fns.items() if events else ():
                print(f"  {name}: host events per call (count, µs)")
                for key, count, us in host_events(fn, EVENT_CALLS)[:EVENTS_SHOWN]:
                    print(f"    {count:5.1f} {us:8.2f}  {key[:100]}")
        except Exception as error:
            return launch_line(op, row, None, None, facts, "raised " + run.describe_error(error))
        return launch_line(op, row, times["solops"], times["torch"], facts)
    return launch_line(op, rows[0], None, None, facts, "no row the family can run: " + "; ".join(skipped))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", required=True, help="pool, norm or conv")
    parser.add_argument("--out", type=Path, required=True, help="e.g. bench/results/h200/launch-pool.jsonl")
    parser.add_argument("--manifest", type=Path, default=Path("manifest/workloads.json"))
    parser.add_argument("--ops", nargs="+", help="only these ops, and only their lines in --out (default: every op)")
    parser.add_argument("--events", action="store_true", help="print each call's host events (torch.profiler)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from solops.bench import run

    module = importlib.import_module(f"solops.bench.{args.family}")
    manifest = json.loads(args.manifest.read_text())
    facts = dict(run.run_facts(), family=args.family)
    lines = []
    for op in run.choose_ops(module, manifest, args.family, args.ops):
        rows = smallest_first(row for _, row in run.family_rows(module, manifest, args.family, [op], None))
        line = measure_op(module, op, rows, facts, args.events)
        lines.append(line)
        head = f"{op:<28} {line['workload']:<22} {line['dtype']:<8}"
        if line["error"]:
            print(f"{head} FAILED: {line['error']}", flush=True)
        else:
            print(f"{head} solops {line['solops_us']:7.2f} µs  torch {line['torch_us']:7.2f} µs  "
                  f"ratio {line['ratio']:.2f}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    failures = sum(1 for line in lines if line["error"])
    print(f"wrote {args.out}; failures: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
