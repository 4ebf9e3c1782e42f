"""Renders the benchmark results as docs/benchmarks.md and a self-contained HTML page with charts.

    python -m solops.bench.report --results bench/results/h200 --out docs

The Markdown is committed; the HTML page is generated output and goes to build/ (git-ignored),
build/benchmarks-<results folder>.html unless --html names another path.

Reads every <family>.jsonl, every launch-<family>.jsonl (solops.bench.launch) and the device profile
(profile.json) in the results folder. Needs neither torch nor a GPU. Also holds the roofline
arithmetic, which run.py reuses.
"""

import argparse
import html
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

METHOD = ("device time = summed GPU activity (kernels, memcpy, memset) per call from the PyTorch "
          "profiler (CUPTI); L2 flushed by a 512 MiB device copy before every call; median of "
          "at least 30 calls after at least 3 calls and 25 ms of warm-up; every implementation "
          "checked against the reference before timing.")
HOST_METHOD = ("wall time per call of 100 back-to-back eager calls between two CUDA events, warm L2, "
               "garbage collection paused, median of 5 rounds (one round before 2026-12-06): "
               "launch overhead included, and whichever of host or device is slower sets the pace; "
               "shown after the device time as `device / host` (ms)")

# The eager-cost goals: a row whose device time is under SHORT_DEVICE_MS costs at most
# SHORT_HOST_MS of wall time per eager call, and the launch benchmark's solops / torch ratio is at
# most LAUNCH_RATIO_GOAL.
SHORT_DEVICE_MS = 0.010
SHORT_HOST_MS = 0.015
LAUNCH_RATIO_GOAL = 1.2
LAUNCH_FILE_PREFIX = "launch-"


# ---- roofline -----------------------------------------------------------------------------------


def compute_rate(profile: dict, rate_kind: str) -> float:
    """FLOP/s of a ceiling named "cuda_core_f32" or "gemm_<bf16|f16|tf32|f32>"."""
    if rate_kind == "cuda_core_f32":
        return profile["cuda_core_f32_flops_per_s"]
    if rate_kind.startswith("gemm_"):
        return profile["gemm_flops_per_s"][rate_kind.removeprefix("gemm_")]
    raise ValueError(f"unknown rate kind {rate_kind!r}")


def roofline(profile: dict, flops: float, bytes_moved: float, rate_kind: str) -> tuple[float, str]:
    """(SOL time in ms, bound): SOL = max(bytes / copy bandwidth, FLOPs / rate); `lat` when the
    SOL time is under the latency floor, else whichever term is larger (design/measure.md)."""
    memory_ms = bytes_moved / profile["memory_bytes_per_s"] * 1e3
    compute_ms = flops / compute_rate(profile, rate_kind) * 1e3
    sol_ms = max(memory_ms, compute_ms)
    if sol_ms < profile["latency_floor_ms"]:
        return sol_ms, "lat"
    return sol_ms, "mem" if memory_ms >= compute_ms else "comp"


def copy_rate_at(profile: dict, bytes_moved: float) -> float | None:
    """The copy kernel's bytes/s at `bytes_moved`, interpolated on the log of the size between the
    sizes calibration timed it at (the nearest end outside them); None for profiles without them."""
    curve = sorted((point["moved_bytes"], point["bytes_per_s"]) for point in profile.get("copy_kernel_by_size", []))
    if not curve:
        return None
    if bytes_moved <= curve[0][0]:
        return curve[0][1]
    for (size0, rate0), (size1, rate1) in zip(curve, curve[1:]):
        if bytes_moved <= size1:
            weight = math.log(bytes_moved / size0) / math.log(size1 / size0)
            return rate0 + weight * (rate1 - rate0)
    return curve[-1][1]


# ---- rows -------------------------------------------------------------------------------------


@dataclass
class Row:
    """One table row: an (op, workload, dtype) with ours and every alternative."""

    family: str
    op: str
    workload: str
    dtype: str
    ours: dict | None = None
    timed: list[dict] = field(default_factory=list)  # correct alternatives, fastest first
    mismatches: list[dict] = field(default_factory=list)
    not_applicable: list[dict] = field(default_factory=list)
    sol_ms: float | None = None
    bound: str | None = None
    copy_bytes_per_s: float | None = None  # the copy kernel's rate at our bytes (memory-bound rows)

    @property
    def catalogue(self) -> bool:
        """Whether the row is the catalogue's (not one of a family's extra rows)."""
        return all(line.get("catalogue", True) for line in [self.ours, *self.timed, *self.mismatches,
                                                            *self.not_applicable] if line is not None)

    @property
    def ours_ms(self) -> float | None:
        if self.ours is None or self.ours.get("correct") is not True:
            return None
        return self.ours["median_ms"]

    @property
    def ratio(self) -> float | None:
        if self.ours_ms is None or not self.timed:
            return None
        return self.timed[0]["median_ms"] / self.ours_ms

    def per_second(self, key: str) -> float | None:
        """Our achieved FLOP/s ("flops") or bytes/s ("bytes")."""
        if self.ours_ms is None:
            return None
        return self.ours[key] / (self.ours_ms * 1e-3)

    @property
    def sol_pct(self) -> float | None:
        if self.ours_ms is None or self.sol_ms is None:
            return None
        return 100.0 * self.sol_ms / self.ours_ms

    @property
    def moved_bytes(self) -> float:
        """The bytes a call must move: the record's min_bytes where it exceeds the roofline's."""
        return self.ours.get("min_bytes") or self.ours["bytes"]

    @property
    def copy_pct(self) -> float | None:
        """Our rate of moved_bytes as a share of what the copy kernel moves at the same bytes."""
        if self.ours_ms is None or self.copy_bytes_per_s is None:
            return None
        return 100.0 * self.moved_bytes / (self.ours_ms * 1e-3) / self.copy_bytes_per_s

    @property
    def ours_host_ms(self) -> float | None:
        return None if self.ours_ms is None else self.ours.get("host_ms")

    @property
    def torch_host_ms(self) -> float | None:
        """PyTorch eager's (the `torch` alternative's) host time: timed also where its result missed
        the spec's tolerance, since a caller pays it either way."""
        torch_line = next((line for line in [*self.timed, *self.mismatches] if line["impl"] == "torch"), None)
        return None if torch_line is None else torch_line.get("host_ms")

    @property
    def host_at_most_torch(self) -> bool | None:
        """Whether our eager call costs no more wall time than PyTorch eager's; None without both."""
        if self.ours_host_ms is None or self.torch_host_ms is None:
            return None
        return self.ours_host_ms <= self.torch_host_ms

    @property
    def page_ms(self) -> float | None:
        page = (self.ours or {}).get("page") or {}
        return page.get("ours_ms")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(text) for text in path.read_text().splitlines() if text.strip()]


def read_lines(results_dir: Path) -> list[dict]:
    """The benchmark's lines: every <family>.jsonl (the launch files are read by read_launch_lines)."""
    lines = []
    for path in sorted(results_dir.glob("*.jsonl")):
        if path.name.startswith(LAUNCH_FILE_PREFIX):
            continue
        for line in read_jsonl(path):
            line.setdefault("family", path.stem)
            lines.append(line)
    return lines


def read_launch_lines(results_dir: Path) -> dict[str, list[dict]]:
    """Each family's launch-overhead lines, from launch-<family>.jsonl."""
    return {path.stem.removeprefix(LAUNCH_FILE_PREFIX): read_jsonl(path)
            for path in sorted(results_dir.glob(f"{LAUNCH_FILE_PREFIX}*.jsonl"))}


def build_rows(lines: list[dict], profile: dict | None) -> list[Row]:
    """Rows in the order they first appear; a later line for the same impl replaces an earlier one."""
    rows: dict[tuple, Row] = {}
    latest: dict[tuple, dict] = {}
    for line in lines:
        key = (line["family"], line["op"], line["workload"], line["dtype"])
        rows.setdefault(key, Row(*key))
        latest[key + (line["impl"],)] = line
    for (*key, impl), line in latest.items():
        row = rows[tuple(key)]
        if impl == "solops":
            row.ours = line
        elif line.get("applicable") is False:
            row.not_applicable.append(line)
        elif line.get("correct") is True:
            row.timed.append(line)
        else:
            row.mismatches.append(line)
    for row in rows.values():
        row.timed.sort(key=lambda line: line["median_ms"])
        if profile is not None and row.ours is not None and row.ours.get("flops") is not None:
            row.sol_ms, row.bound = roofline(profile, row.ours["flops"], row.ours["bytes"],
                                             row.ours.get("rate_kind", "cuda_core_f32"))
            if row.bound == "mem":
                row.copy_bytes_per_s = copy_rate_at(profile, row.moved_bytes)
    return list(rows.values())


def group(rows: list[Row], attribute: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(getattr(row, attribute), []).append(row)
    return groups


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass
class EagerCost:
    """A family's eager cost: our host time against PyTorch eager's, and on the short rows."""

    at_most_torch: int  # rows where our host time is at most torch eager's
    compared: int  # rows with both host times
    short_rows: int  # rows whose device time (ours) is under SHORT_DEVICE_MS
    short_over_limit: list[Row]  # those of them whose host time is over SHORT_HOST_MS
    ours_median_ms: float | None
    torch_median_ms: float | None


def eager_cost(rows: list[Row]) -> EagerCost:
    flags = [row.host_at_most_torch for row in rows if row.host_at_most_torch is not None]
    short = [row for row in rows if row.ours_host_ms is not None and row.ours_ms < SHORT_DEVICE_MS]
    return EagerCost(
        at_most_torch=sum(flags),
        compared=len(flags),
        short_rows=len(short),
        short_over_limit=[row for row in short if row.ours_host_ms > SHORT_HOST_MS],
        ours_median_ms=median([row.ours_host_ms for row in rows if row.ours_host_ms is not None]),
        torch_median_ms=median([row.torch_host_ms for row in rows if row.torch_host_ms is not None]),
    )


# ---- formatting -------------------------------------------------------------------------------


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def us(value_ms: float | None) -> str:
    """A time given in ms, in µs."""
    return "—" if value_ms is None else f"{value_ms * 1e3:.3g}"


def times(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def number(value: float | None, scale: float, digits: int) -> str:
    return "—" if value is None else f"{value / scale:.{digits}f}"


def mhz(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0f} MHz"


def copy_curve_text(profile: dict) -> str:
    """The copy kernel's rate at each size it was measured at (profiles before it have none)."""
    curve = profile.get("copy_kernel_by_size")
    if not curve:
        return "not measured in this profile"
    points = ", ".join(f"{point['moved_bytes'] >> 20} MiB {point['bytes_per_s'] / 1e12:.2f}" for point in curve)
    return f"TB/s by bytes read + written per call: {points}"


def device_host(line: dict) -> str:
    """A result line's device and host times, "device / host" in ms."""
    return f"{ms(line['median_ms'])} / {ms(line.get('host_ms'))}"


def alternatives_text(row: Row) -> str:
    parts = [f"{line['impl']} {device_host(line)}" for line in row.timed]
    parts += [f"{line['impl']} ✗ mismatch" + (f", host {ms(line['host_ms'])}" if line.get("host_ms") else "")
              for line in row.mismatches]
    parts += [f"{line['impl']} n/a" for line in row.not_applicable]
    return " · ".join(parts) or "—"


# The mark of a family's extra rows (shapes beyond the catalogue) in the tables; the summaries leave
# them out.
NOT_IN_CATALOGUE = "(not in catalogue)"

TABLE_HEADER = ["workload", "dtype", "ratio", "ours (ms, device / host)",
                "alternatives (ms, device / host, fastest first)",
                "TFLOP/s", "SOL %", "bound", "TB/s", "% of copy", "page ours (ms)"]


def table_cells(row: Row) -> list[str]:
    ours = device_host(row.ours) if row.ours_ms is not None else "FAILED"
    sol_pct = "—" if row.sol_pct is None else f"{row.sol_pct:.0f}"
    copy_pct = "—" if row.copy_pct is None else f"{row.copy_pct:.0f}"
    workload = row.workload if row.catalogue else f"{row.workload} {NOT_IN_CATALOGUE}"
    return [workload, row.dtype, times(row.ratio), ours, alternatives_text(row),
            number(row.per_second("flops"), 1e12, 2), sol_pct, row.bound or "—",
            number(row.per_second("bytes"), 1e12, 2), copy_pct, ms(row.page_ms)]


def problems(rows: list[Row]) -> list[str]:
    """Why ours failed or an alternative was rejected, one sentence each."""
    notes = []
    for row in rows:
        failed = [row.ours] if row.ours is not None and row.ours.get("correct") is not True else []
        for line in failed + row.mismatches:
            error = (line.get("error") or "").replace("\n", " ").replace("|", "/")[:200]
            notes.append(f"{line['impl']} on {row.workload} {row.dtype}: {error}")
    return notes


def host_at_most_torch_text(rows: list[Row]) -> str:
    cost = eager_cost(rows)
    return f"{cost.at_most_torch}/{cost.compared}"


def summary_rows(rows: list[Row]) -> list[list[str]]:
    """Per op and per family, over the catalogue's rows."""
    table = []
    for family, family_rows in group([row for row in rows if row.catalogue], "family").items():
        for op, op_rows in group(family_rows, "op").items():
            ratios = [row.ratio for row in op_rows if row.ratio is not None]
            faster = sum(1 for ratio in ratios if ratio > 1.0)
            table.append([family, op, str(len(op_rows)), times(geomean(ratios)), f"{faster}/{len(ratios)}",
                          host_at_most_torch_text(op_rows)])
        ratios = [row.ratio for row in family_rows if row.ratio is not None]
        table.append([family, "**all**", str(len(family_rows)), times(geomean(ratios)),
                      f"{sum(1 for r in ratios if r > 1.0)}/{len(ratios)}", host_at_most_torch_text(family_rows)])
    return table


SUMMARY_HEADER = ["family", "op", "rows", "geomean ratio", "ours faster", "host ≤ torch"]


def eager_cost_notes(cost: EagerCost) -> list[str]:
    """The family's eager cost in sentences; the last one introduces over_limit_by_op's list."""
    return [
        f"solops' host time ≤ torch eager's: {cost.at_most_torch}/{cost.compared} rows",
        f"median host time: solops {us(cost.ours_median_ms)} µs, torch eager {us(cost.torch_median_ms)} µs",
        f"rows under {us(SHORT_DEVICE_MS)} µs of device time whose solops host time is over "
        f"{us(SHORT_HOST_MS)} µs: {len(cost.short_over_limit)}/{cost.short_rows}",
    ]


def over_limit_by_op(cost: EagerCost) -> list[str]:
    """The short rows whose host time is over the limit, one entry per op, with their host times."""
    by_op: dict[str, list[str]] = {}
    for row in cost.short_over_limit:
        by_op.setdefault(row.op, []).append(f"{row.workload} {row.dtype} {us(row.ours_host_ms)}")
    return [f"{op} (host µs): {', '.join(entries)}" for op, entries in by_op.items()]


def distinct(lines: list[dict], key: str) -> str:
    return ", ".join(sorted({str(line.get(key)) for line in lines})) or "—"


def header_facts(lines: list[dict], profile: dict | None) -> list[tuple[str, str]]:
    present: dict[str, set] = {}
    for line in lines:
        present.setdefault(line["family"], set()).update(line.get("present_alternatives") or [])
    facts = [
        ("Device", distinct(lines, "device")),
        ("Run date", distinct(lines, "date")),
        ("Commit", distinct(lines, "commit")),
        ("Method", METHOD),
        ("Host", HOST_METHOD),
        ("Ratio", "fastest correct alternative's device time / ours (> 1 means we are faster)"),
        ("Alternatives present", "; ".join(f"{family}: {', '.join(sorted(names)) or 'none'}"
                                           for family, names in present.items())),
    ]
    if profile is None:
        facts.append(("Ceilings", "no profile.json: SOL % and bound are not computed"))
        return facts
    bandwidth = profile["copy_bandwidth"]
    gemm = ", ".join(f"{name} {rate / 1e12:.0f}" for name, rate in profile["gemm_flops_per_s"].items())
    facts += [
        ("Ceilings", f"measured {profile['date']}, driver {profile.get('driver')}, torch "
                     f"{profile.get('torch')}, SM clock {mhz(profile.get('sm_clock_mhz'))} "
                     f"(max {mhz(profile.get('sm_clock_max_mhz'))})"),
        ("Memory", f"{profile['memory_bytes_per_s'] / 1e12:.2f} TB/s read + write "
                   f"(memcpy {bandwidth['memcpy_bytes_per_s'] / 1e12:.2f}, copy kernel "
                   f"{bandwidth['copy_kernel_bytes_per_s'] / 1e12:.2f}); the larger is the ceiling"),
        ("Copy kernel by size", copy_curve_text(profile)),
        ("Compute", f"CUDA-core f32 {profile['cuda_core_f32_flops_per_s'] / 1e12:.1f} TFLOP/s; "
                    f"dense GEMM 8192³ TFLOP/s: {gemm}"),
        ("Latency floor", f"{profile['latency_floor_ms'] * 1e3:.2f} µs (smallest real kernel); "
                          "SOL time under it is bound `lat`"),
        ("SOL", "SOL time = max(bytes / memory ceiling, FLOPs / compute ceiling); "
                "SOL % = SOL time / our time"),
        ("% of copy", "memory-bound rows: our TB/s over the copy kernel's at the same bytes read + "
                      "written (the size curve above, interpolated on the log of the size); the bytes are the "
                      "record's min_bytes where a row must move more than its roofline counts (a tensor larger "
                      "than the L2 read twice)"),
    ]
    return facts


# ---- launch overhead --------------------------------------------------------------------------

LAUNCH_HEADER = ["op", "workload", "dtype", "input", "solops (µs)", "torch (µs)", "solops / torch",
                 f"≤ {LAUNCH_RATIO_GOAL}×"]


def input_text(tensors: dict) -> str:
    """The row's first tensor, e.g. "x 1×4096"."""
    name, shape = next(iter(tensors.items()))
    return f"{name} {'×'.join(str(size) for size in shape)}"


def launch_cells(line: dict) -> list[str]:
    ratio = line.get("ratio")
    within = "—" if ratio is None else "✓" if ratio <= LAUNCH_RATIO_GOAL else "✗"
    solops_us = "FAILED" if line.get("error") else number(line["solops_us"], 1, 2)
    return [line["op"], line["workload"], line["dtype"], input_text(line["tensors"]), solops_us,
            number(line.get("torch_us"), 1, 2), times(ratio), within]


def launch_method(lines: list[dict]) -> str:
    return (f"{distinct(lines, 'calls')} back-to-back eager calls of each op on its smallest catalogue row "
            "(fewest bytes), solops and PyTorch's own op in turn; wall time per call (perf_counter around the "
            f"calls, one synchronize at the end), median of {distinct(lines, 'repeats')} repeats. Measured on "
            f"{distinct(lines, 'device')}, {distinct(lines, 'date')}, commit {distinct(lines, 'commit')}.")


def launch_problems(lines: list[dict]) -> list[str]:
    return [f"{line['op']} on {line['workload']} {line['dtype']}: {line['error']}"
            for line in lines if line.get("error")]


def launch_within_goal_text(lines: list[dict]) -> str:
    within = sum(1 for line in lines if line.get("ratio") is not None and line["ratio"] <= LAUNCH_RATIO_GOAL)
    return f"{within}/{len(lines)} ops within {LAUNCH_RATIO_GOAL}× of PyTorch's launch cost"


def families(rows_by_family: dict[str, list[Row]], launch: dict[str, list[dict]]) -> list[str]:
    """The benchmark's families, then any that has only a launch file."""
    return list(dict.fromkeys([*rows_by_family, *launch]))


# ---- Markdown ---------------------------------------------------------------------------------


def markdown_table(header: list[str], body: list[list[str]]) -> list[str]:
    numeric = {"ratio", "ours (ms, device / host)", "TFLOP/s", "SOL %", "TB/s", "% of copy", "page ours (ms)",
               "rows", "geomean ratio", "ours faster", "host ≤ torch", "solops (µs)", "torch (µs)",
               "solops / torch"}
    align = ["---:" if name in numeric else "---" for name in header]
    return ["| " + " | ".join(cells) + " |" for cells in [header, align] + body]


def render_markdown(rows: list[Row], lines: list[dict], profile: dict | None, launch: dict[str, list[dict]]) -> str:
    out = ["# Benchmarks", "", "Generated by `python -m solops.bench.report`; do not edit.", ""]
    out += [f"- **{name}**: {value}" for name, value in header_facts(lines, profile)]
    out += ["", "## Summary", ""] + markdown_table(SUMMARY_HEADER, summary_rows(rows))
    rows_by_family = group(rows, "family")
    for family in families(rows_by_family, launch):
        family_rows = rows_by_family.get(family, [])
        out += ["", f"## {family}"]
        if family_rows:
            cost = eager_cost(family_rows)
            out += ["", "### Eager cost", ""] + [f"- {note}" for note in eager_cost_notes(cost)]
            out += [f"  - {entry}" for entry in over_limit_by_op(cost)]
        if family in launch:
            out += ["", "### Launch overhead", "", launch_method(launch[family]), ""]
            out += markdown_table(LAUNCH_HEADER, [launch_cells(line) for line in launch[family]])
            notes = launch_problems(launch[family])
            if notes:
                out += [""] + [f"- {note}" for note in notes]
        for op, op_rows in group(family_rows, "op").items():
            out += ["", f"### {op}", ""]
            out += markdown_table(TABLE_HEADER, [table_cells(row) for row in op_rows])
            notes = problems(op_rows)
            if notes:
                out += [""] + [f"- {note}" for note in notes]
    return "\n".join(out) + "\n"


# ---- HTML -------------------------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; padding: 0 1.5em; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 10px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td:first-child { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.good { color: #1b5e20; font-weight: 600; } td.bad { color: #b71c1c; font-weight: 600; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; }
dt { font-weight: 600; } dd { margin: 0; }
.notes { color: #555; font-size: 12px; }
svg text { font: 11px system-ui, sans-serif; }
"""

TABLE_NUMERIC_COLUMNS = {2, 3, 5, 6, 8, 9, 10}
SUMMARY_NUMERIC_COLUMNS = {2, 3, 4, 5}
LAUNCH_NUMERIC_COLUMNS = {4, 5, 6}


def ratio_chart(rows: list[Row]) -> str:
    """Horizontal bars of each row's ratio on a log2 scale centred on 1× (right = we are faster)."""
    label_width, half_width, bar_height = 230, 230, 18
    logs = [abs(math.log2(row.ratio)) for row in rows if row.ratio is not None]
    span = max([1.0] + logs)
    centre = label_width + half_width
    height = bar_height * len(rows) + 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{centre + half_width + 60}" '
             f'height="{height}" role="img" aria-label="ratio per row">']
    for index, row in enumerate(rows):
        y = index * bar_height + 4
        label = html.escape(f"{row.workload} {row.dtype}")
        parts.append(f'<text x="{label_width - 8}" y="{y + 12}" text-anchor="end">{label}</text>')
        if row.ratio is None:
            parts.append(f'<text x="{centre + half_width + 8}" y="{y + 12}">—</text>')
            continue
        length = math.log2(row.ratio) / span * half_width
        x = centre + min(length, 0.0)
        colour = "#2e7d32" if row.ratio >= 1.0 else "#c62828"
        parts.append(f'<rect x="{x:.1f}" y="{y + 2}" width="{abs(length):.1f}" '
                     f'height="{bar_height - 6}" fill="{colour}"/>')
        # Values in their own column right of the chart, so long bars never cover a label.
        parts.append(f'<text x="{centre + half_width + 8}" y="{y + 12}">{times(row.ratio)}</text>')
    bottom = bar_height * len(rows) + 4
    parts.append(f'<line x1="{centre}" y1="0" x2="{centre}" y2="{bottom}" stroke="#555"/>')
    parts.append(f'<text x="{centre}" y="{bottom + 14}" text-anchor="middle">1×</text>')
    parts.append(f'<text x="{centre - 20}" y="{bottom + 14}" text-anchor="end">← alternative faster</text>')
    parts.append(f'<text x="{centre + 20}" y="{bottom + 14}">ours faster →</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def html_table(header: list[str], body: list[list[str]], numeric_columns: set[int],
               ratio_column: int | None) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{html.escape(name)}</th>" for name in header) + "</tr>"]
    for cells in body:
        row_html = []
        for column, cell in enumerate(cells):
            classes = ["num"] if column in numeric_columns else []
            if column == ratio_column and cell.endswith("×"):
                classes.append("good" if float(cell[:-1]) >= 1.0 else "bad")
            class_attribute = f' class="{" ".join(classes)}"' if classes else ""
            row_html.append(f"<td{class_attribute}>{html.escape(cell)}</td>")
        out.append("<tr>" + "".join(row_html) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def html_list(items: list[str], css_class: str | None = None, last_item_list: str = "") -> str:
    """A <ul> of the items; last_item_list (HTML) is nested in the last item."""
    class_attribute = f' class="{css_class}"' if css_class else ""
    entries = [f"<li>{html.escape(item)}" for item in items]
    entries[-1] += last_item_list
    return f"<ul{class_attribute}>" + "".join(entry + "</li>" for entry in entries) + "</ul>"


def render_html(rows: list[Row], lines: list[dict], profile: dict | None, launch: dict[str, list[dict]]) -> str:
    facts = "".join(f"<dt>{html.escape(name)}</dt><dd>{html.escape(value)}</dd>"
                    for name, value in header_facts(lines, profile))
    summary = [[cell.replace("**", "") for cell in cells] for cells in summary_rows(rows)]
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           "<title>solops benchmarks</title>", f"<style>{CSS}</style></head><body>",
           "<h1>solops benchmarks</h1>", f"<dl>{facts}</dl>",
           "<h2>Summary</h2>", html_table(SUMMARY_HEADER, summary, SUMMARY_NUMERIC_COLUMNS, ratio_column=3)]
    rows_by_family = group(rows, "family")
    for family in families(rows_by_family, launch):
        family_rows = rows_by_family.get(family, [])
        out.append(f"<h2>{html.escape(family)}</h2>")
        if family_rows:
            cost = eager_cost(family_rows)
            over_limit = over_limit_by_op(cost)
            out += ["<h3>Eager cost</h3>",
                    html_list(eager_cost_notes(cost), last_item_list=html_list(over_limit) if over_limit else "")]
        if family in launch:
            out += ["<h3>Launch overhead</h3>", f"<p>{html.escape(launch_method(launch[family]))}</p>",
                    html_table(LAUNCH_HEADER, [launch_cells(line) for line in launch[family]],
                               LAUNCH_NUMERIC_COLUMNS, ratio_column=None)]
            notes = launch_problems(launch[family])
            if notes:
                out.append(html_list(notes, "notes"))
        for op, op_rows in group(family_rows, "op").items():
            out.append(f"<h3>{html.escape(op)}</h3>")
            out.append(ratio_chart(op_rows))
            out.append(html_table(TABLE_HEADER, [table_cells(row) for row in op_rows],
                                  TABLE_NUMERIC_COLUMNS, ratio_column=2))
            notes = problems(op_rows)
            if notes:
                out.append(html_list(notes, "notes"))
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# ---- plain text -------------------------------------------------------------------------------


def render_text(rows: list[Row], launch: dict[str, list[dict]]) -> str:
    out = [f"{'op':<22} {'workload':<20} {'dtype':<5} {'ratio':>7} {'ours ms':>9}  best alternative"]
    for row in rows:
        best = f"{row.timed[0]['impl']} {ms(row.timed[0]['median_ms'])}" if row.timed else "—"
        ours = ms(row.ours_ms) if row.ours_ms is not None else "FAILED"
        out.append(f"{row.op:<22} {row.workload:<20} {row.dtype:<5} {times(row.ratio):>7} {ours:>9}  {best}")
    for cells in summary_rows(rows):
        out.append(f"geomean {cells[0]} {cells[1].replace('**', '')}: {cells[3]} ({cells[4]} faster)")
    for family, family_rows in group(rows, "family").items():
        out.append(f"eager {family}: " + "; ".join(eager_cost_notes(eager_cost(family_rows))))
    for family, launch_lines in launch.items():
        out.append(f"launch {family}: {launch_within_goal_text(launch_lines)}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=Path("bench/results/h200"))
    parser.add_argument("--out", type=Path, default=Path("docs"), help="folder of benchmarks.md")
    parser.add_argument("--html", type=Path, help="the HTML page (default build/benchmarks-<results folder>.html)")
    args = parser.parse_args()
    html_path = args.html or Path("build") / f"benchmarks-{args.results.name}.html"
    profile_path = args.results / "profile.json"
    profile = json.loads(profile_path.read_text()) if profile_path.exists() else None
    lines = read_lines(args.results)
    launch = read_launch_lines(args.results)
    rows = build_rows(lines, profile)
    args.out.mkdir(parents=True, exist_ok=True)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    (args.out / "benchmarks.md").write_text(render_markdown(rows, lines, profile, launch))
    html_path.write_text(render_html(rows, lines, profile, launch))
    print(render_text(rows, launch))
    print(f"wrote {args.out / 'benchmarks.md'} and {html_path}")


if __name__ == "__main__":
    main()
