"""Benchmark runner: every manifest row of a family's implemented ops, ours and the alternatives,
checked against the reference and then timed, in one process with one method.

    python -m solops.bench.run --family pool [--ops OP ...] [--impls NAME ...]
                               [--out bench/results/h200/pool.jsonl] [--quick]

Writes one JSON line per (op, workload, dtype, impl). A solops result that raises or differs
from the reference makes the run exit non-zero, after everything has been written.

A family is a sibling module (solops.bench.pool, norm, topk, later conv) with:
    OPS                       the op names it implements, as in the manifest
    present_alternatives()    {name: None if usable, else why not} for its alternatives
    build_case(op, row, alternatives) -> Case   (raises UnsupportedRow for rows it cannot run)
and, optionally, EXTRA_ROWS: {op: [row, ...]} of shapes beyond the catalogue, in the manifest's row
format, each with "catalogue": False; they run after the manifest's rows, and their result lines say
"catalogue": false (the report marks them and leaves them out of its summaries).
The classes and helpers such modules share live here.
"""

import argparse
import datetime
import importlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from solops.bench import timing
from solops.bench.commit import measured_commit
from solops.bench.report import roofline

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
INPUT_SEED = 0


class UnsupportedRow(Exception):
    """A manifest row the family cannot run (e.g. a dtype string like "f16/f32")."""


@dataclass
class Impl:
    name: str  # "solops" or the alternative's name
    fn: Callable[[], Any] | None  # runs the op on the case's CUDA inputs; None = not applicable
    not_applicable: str = ""  # why fn is None


@dataclass
class Case:
    op: str
    workload: str
    dtype: str
    flops: float
    bytes: float
    rate_kind: str  # the compute ceiling in the device profile: "cuda_core_f32" or "gemm_<dtype>"
    reference: Callable[[], Any]  # the reference outputs, CPU tensors
    check: Callable[[Any, Any], None]  # (actual, reference) on CPU; raises on a mismatch
    impls: list[Impl]  # solops first
    page: dict | None = None  # the reference page's figures for this row, if any
    # The bytes a call must move where that exceeds the roofline's (a tensor read twice because it
    # cannot stay on chip); the memory bar (% of copy) measures against it. None: the roofline's.
    min_bytes: float | None = None
    catalogue: bool = True  # False: one of the family's EXTRA_ROWS


# ---- helpers shared by the family modules ----------------------------------------------------


def torch_dtype(name: str) -> torch.dtype:
    if name not in TORCH_DTYPES:
        raise UnsupportedRow(f"dtype {name!r} is not one of {sorted(TORCH_DTYPES)}")
    return TORCH_DTYPES[name]


def channels_last_run(variable: str) -> bool:
    """Whether the environment variable `variable` (a family's layout switch, e.g.
    SOLOPS_BENCH_CONV_LAYOUT) asks for a channels_last run: "channels_last", or "contiguous" (the
    default) for none; any other value stops the run."""
    layout = os.environ.get(variable, "contiguous")
    if layout not in ("contiguous", "channels_last"):
        raise SystemExit(f"{variable}={layout!r}: expected contiguous or channels_last")
    return layout == "channels_last"


def random_normal(shape, dtype: torch.dtype) -> torch.Tensor:
    """A CPU tensor of standard normal values from a fixed seed, rounded to dtype."""
    generator = torch.Generator().manual_seed(INPUT_SEED)
    return torch.randn(tuple(shape), generator=generator, dtype=torch.float32).to(dtype)


def row_case(op: str, row: dict, roofline_cost: tuple[float, float], rate_kind: str, reference, check,
             impls: list[Impl], min_bytes: float | None = None) -> Case:
    """The Case of one row (the manifest's, or one of the family's EXTRA_ROWS)."""
    flops, bytes_moved = roofline_cost
    return Case(op=op, workload=row["workload"], dtype=row["dtype"], flops=float(flops), bytes=float(bytes_moved),
                rate_kind=rate_kind, reference=reference, check=check, impls=impls, page=row.get("reference"),
                min_bytes=min_bytes, catalogue=row.get("catalogue", True))


def compile_for_benchmark(fn: Callable) -> Callable:
    """torch.compile default mode with static shapes (the `torch-compile` alternative).

    The dynamo cache is reset first: every case compiles the same Python function for another
    shape, and past the recompile limit dynamo would silently fall back to eager.
    fullgraph=True makes a graph break an error instead of a partly eager result.
    """
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False, fullgraph=True)


def import_failure(module: str, load: Callable[[], Any] | None = None) -> str | None:
    """None where `module` imports here (by load(), for a module that needs set-up first), else why it
    does not: the reason a family's present_alternatives gives for an absent alternative."""
    try:
        load() if load else importlib.import_module(module)
    except Exception as error:
        return f"import {module} failed: {describe_error(error)}"
    return None


def import_flag_gems():
    """flag_gems with its environment set for this machine (offline, vendor known)."""
    # Skips FlagGems' vendor detection, which otherwise shells out to every vendor's SMI tool.
    os.environ.setdefault("GEMS_VENDOR", "nvidia")
    # Its autotune cache is an SQLite file under this directory (default ~/.flaggems).
    os.environ.setdefault("FLAGGEMS_CACHE_DIR", "/tmp/flaggems-cache")
    return importlib.import_module("flag_gems")


# ---- running one case ----------------------------------------------------------------------


def to_cpu(outputs):
    """outputs on the CPU: a tensor, None (an optional output not computed) or a sequence of them."""
    if outputs is None:
        return None
    if isinstance(outputs, torch.Tensor):
        return outputs.cpu()
    return tuple(to_cpu(output) for output in outputs)


def describe_error(error: BaseException, limit: int = 400) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def measure(impl: Impl, case: Case, reference, quick: bool) -> dict:
    """Checks impl against the reference, then times it. The first call also compiles/tunes."""
    try:
        actual = to_cpu(impl.fn())
    except Exception as error:  # an alternative that raises is a mismatch, never dropped
        return {"correct": False, "error": "raised " + describe_error(error)}
    try:
        case.check(actual, reference)
    except Exception as error:
        line = {"correct": False, "error": "mismatch: " + describe_error(error)}
        # A wrong result is not timed on the device, but a caller pays its eager cost either way:
        # host_ms stays, for the comparison against torch eager.
        try:
            line["host_ms"] = timing.host_inclusive_ms(impl.fn)
        except Exception as timing_error:
            line["error"] += "; raised while timing " + describe_error(timing_error)
        return line
    del actual
    try:
        timed = timing.device_time(impl.fn, quick=quick)
        host_ms = timing.host_inclusive_ms(impl.fn)
    except Exception as error:
        return {"correct": False, "error": "raised while timing " + describe_error(error)}
    return {
        "correct": True,
        "median_ms": timed.median_ms,
        "min_ms": timed.min_ms,
        "p90_ms": timed.p90_ms,
        "calls": timed.calls,
        "host_ms": host_ms,
    }


def case_lines(case: Case, quick: bool, context: dict) -> list[dict]:
    sol_ms, bound = (None, None)
    if context["profile"] is not None:
        sol_ms, bound = roofline(context["profile"], case.flops, case.bytes, case.rate_kind)
    common = {
        "family": context["family"],
        "op": case.op,
        "workload": case.workload,
        "dtype": case.dtype,
        "catalogue": case.catalogue,
        "flops": case.flops,
        "bytes": case.bytes,
        **({"min_bytes": case.min_bytes} if case.min_bytes is not None else {}),
        "rate_kind": case.rate_kind,
        "sol_ms": sol_ms,
        "bound": bound,
        "device": context["device"],
        "commit": context["commit"],
        "date": context["date"],
        "present_alternatives": context["present_alternatives"],
    }
    try:
        reference = to_cpu(case.reference())
    except Exception as error:
        return [dict(common, impl="solops", correct=False, error="reference raised " + describe_error(error))]
    lines = []
    for impl in case.impls:
        line = dict(common, impl=impl.name, median_ms=None, min_ms=None, p90_ms=None, error=None)
        if impl.name == "solops":
            line["page"] = case.page
        if impl.fn is None:
            line.update(correct=None, applicable=False, error="not applicable: " + impl.not_applicable)
        else:
            line.update(measure(impl, case, reference, quick), applicable=True)
        lines.append(line)
    return lines


def build_failure_line(op: str, row: dict, context: dict, error: Exception) -> dict:
    return {
        "family": context["family"], "op": op, "workload": row["workload"], "dtype": row["dtype"],
        "catalogue": row.get("catalogue", True), "impl": "solops", "correct": False,
        "error": "building the case raised " + describe_error(error),
        "median_ms": None, "min_ms": None, "p90_ms": None, "device": context["device"],
        "commit": context["commit"], "date": context["date"],
        "present_alternatives": context["present_alternatives"],
    }


# ---- progress, results file, command line --------------------------------------------------


def progress_text(index: int, total: int, lines: list[dict]) -> str:
    ours = next((line for line in lines if line["impl"] == "solops"), None)
    first = lines[0]
    head = f"[{index:>3}/{total}] {first['op']:<22} {first['workload']:<20} {first['dtype']:<5}"
    if ours is None or ours.get("median_ms") is None:
        return f"{head} solops FAILED: {ours['error'] if ours else 'no result'}"
    text = f"{head} solops {ours['median_ms']:.4f} ms"
    timed = [line for line in lines if line["impl"] != "solops" and line.get("median_ms") is not None]
    if timed:
        best = min(timed, key=lambda line: line["median_ms"])
        ratio = best["median_ms"] / ours["median_ms"]
        text += f"  best {best['impl']} {best['median_ms']:.4f} ms  ratio {ratio:.2f}x"
    for line in lines:
        if line["impl"] != "solops" and line.get("correct") is False:
            text += f"\n        {line['impl']}: {line['error']}"
    return text


def run_facts() -> dict:
    """The device, the measured commit and the date, as every result line records them."""
    return {
        "device": torch.cuda.get_device_name(),
        "commit": measured_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def load_profile(path: Path) -> dict | None:
    if not path.exists():
        print(f"note: no device profile at {path}; sol_ms and bound are left empty "
              "(run python -m solops.bench.calibrate first)")
        return None
    return json.loads(path.read_text())


def manifest_rows(manifest: dict, family: str, ops: list[str], workloads: list[str] | None) -> list[tuple[str, dict]]:
    rows = []
    for entry in manifest["ops"]:
        if entry.get("family") == family and entry["op"] in ops:
            chosen = [row for row in entry["rows"] if workloads is None or row["workload"] in workloads]
            rows.extend((entry["op"], row) for row in chosen)
    return rows


def family_rows(module, manifest: dict, family: str, ops: list[str],
                workloads: list[str] | None) -> list[tuple[str, dict]]:
    """The manifest's rows of the ops, then the family module's EXTRA_ROWS of them."""
    rows = manifest_rows(manifest, family, ops, workloads)
    for op, extra in getattr(module, "EXTRA_ROWS", {}).items():
        if op in ops:
            rows.extend((op, row) for row in extra if workloads is None or row["workload"] in workloads)
    return rows


def choose_ops(module, manifest: dict, family: str, requested: list[str] | None) -> list[str]:
    in_manifest = [entry["op"] for entry in manifest["ops"] if entry.get("family") == family]
    skipped = [op for op in in_manifest if op not in module.OPS]
    if skipped:
        print(f"not implemented yet, skipped: {', '.join(skipped)}")
    if requested is None:
        return [op for op in in_manifest if op in module.OPS]
    unknown = [op for op in requested if op not in module.OPS]
    if unknown:
        raise SystemExit(f"not implemented in {family}: {', '.join(unknown)}")
    return requested


def choose_alternatives(module, requested: list[str] | None) -> list[str]:
    known = module.present_alternatives()
    unknown = sorted(set(requested or []) - set(known) - {"solops"})
    if unknown:
        raise SystemExit(f"unknown alternatives: {', '.join(unknown)} (known: {', '.join(known)})")
    present = []
    for name, why_absent in known.items():
        if why_absent is not None:
            print(f"alternative {name} absent: {why_absent}")
        elif requested is None or name in requested:
            present.append(name)
    return present


def row_key(fields: dict) -> tuple[str, str, str]:
    return fields["op"], fields["workload"], fields["dtype"]


def lines_by_row(lines: list[str]) -> dict[tuple[str, str, str], list[str]]:
    """A results file's lines grouped by row, in the file's order."""
    by_row: dict[tuple[str, str, str], list[str]] = {}
    for line in lines:
        by_row.setdefault(row_key(json.loads(line)), []).append(line)
    return by_row


def merged_lines(earlier_by_row: dict, rerun: list[tuple[str, str, str]], finished: dict) -> list[str]:
    """The results file while rows `rerun` run (so --ops and --workloads update in place): the earlier
    lines of the rows not re-run, then each re-run row's new lines once it has finished, else its
    earlier ones, so that a run cut short loses no row."""
    lines = [line for key, rows in earlier_by_row.items() if key not in rerun for line in rows]
    for key in rerun:
        lines += finished.get(key, earlier_by_row.get(key, []))
    return lines


def write_lines(path: Path, lines: list[str]) -> None:
    """Replaces the file at once (a run killed mid-write leaves the earlier file whole)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(line + "\n" for line in lines))
    os.replace(partial, path)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", required=True, help="pool, norm, conv or topk")
    parser.add_argument("--ops", nargs="+", help="only these ops (default: all implemented)")
    parser.add_argument("--workloads", nargs="+", help="only the rows of these workload ids (default: all)")
    parser.add_argument("--impls", nargs="+", help="only these alternatives (solops always runs)")
    parser.add_argument("--out", type=Path, help="default: bench/results/h200/<family>.jsonl")
    parser.add_argument("--manifest", type=Path, default=Path("manifest/workloads.json"))
    parser.add_argument("--profile", type=Path, help="device profile (default: next to --out)")
    parser.add_argument("--quick", action="store_true", help="time 30 calls instead of 100 ms")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = args.out or Path(f"bench/results/h200/{args.family}.jsonl")
    module = importlib.import_module(f"solops.bench.{args.family}")
    manifest = json.loads(args.manifest.read_text())
    ops = choose_ops(module, manifest, args.family, args.ops)
    alternatives = choose_alternatives(module, args.impls)
    context = {
        "family": args.family,
        **run_facts(),
        "present_alternatives": alternatives,
        "profile": load_profile(args.profile or out.parent / "profile.json"),
    }
    rows = family_rows(module, manifest, args.family, ops, args.workloads)
    print(f"{len(rows)} rows of {', '.join(ops)}; alternatives: {', '.join(alternatives) or 'none'}")

    failures = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    earlier = lines_by_row([line for line in out.read_text().splitlines() if line.strip()] if out.exists() else [])
    rerun = [(op, row["workload"], row["dtype"]) for op, row in rows]
    finished: dict[tuple[str, str, str], list[str]] = {}
    for index, ((op, row), key) in enumerate(zip(rows, rerun), start=1):
        try:
            case = module.build_case(op, row, alternatives)
        except UnsupportedRow as reason:
            print(f"[{index:>3}/{len(rows)}] {op} {row['workload']} {row['dtype']}: skipped ({reason})")
            finished[key] = []
            continue
        except Exception as error:  # e.g. the cost model rejecting the row: ours failed
            lines = [build_failure_line(op, row, context, error)]
        else:
            lines = case_lines(case, args.quick, context)
        finished[key] = [json.dumps(line) for line in lines]
        write_lines(out, merged_lines(earlier, rerun, finished))
        failures += sum(1 for line in lines if line["impl"] == "solops" and line["correct"] is not True)
        print(progress_text(index, len(rows), lines), flush=True)
    write_lines(out, merged_lines(earlier, rerun, finished))
    print(f"wrote {out}; solops failures: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    # Run the importable module's main, so that family modules (which import solops.bench.run)
    # and this runner share one copy of Case, Impl and UnsupportedRow.
    from solops.bench.run import main as module_main

    sys.exit(module_main())
