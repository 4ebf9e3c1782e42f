"""Renders the benchmark results as docs/benchmarks.md and a self-contained HTML page with charts.

    python -m solops.bench.report --results bench/results/h200 --out docs

The Markdown is committed; the HTML page is generated output and goes to build/ (git-ignored),
build/benchmarks-<results folder>.html unless --html names another path.

Reads every <family>.jsonl and the device profile (profile.json) in the results folder. Needs
neither torch nor a GPU. Also holds the roofline arithmetic, which run.py reuses.
"""

import argparse
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

METHOD = ("device time = summed GPU activity (kernels, memcpy, memset) per call from the PyTorch "
          "profiler (CUPTI); L2 flushed by a 512 MiB device copy before every call; median of "
          "at least 30 calls after at least 3 calls and 25 ms of warm-up; every implementation "
          "checked against the reference before timing.")


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
    def copy_pct(self) -> float | None:
        """Our bytes/s as a share of what the copy kernel moves at the same bytes."""
        achieved = self.per_second("bytes")
        if achieved is None or self.copy_bytes_per_s is None:
            return None
        return 100.0 * achieved / self.copy_bytes_per_s

    @property
    def page_ms(self) -> float | None:
        page = (self.ours or {}).get("page") or {}
        return page.get("ours_ms")


def read_lines(results_dir: Path) -> list[dict]:
    lines = []
    for path in sorted(results_dir.glob("*.jsonl")):
        for text in path.read_text().splitlines():
            if text.strip():
                line = json.loads(text)
                line.setdefault("family", path.stem)
                lines.append(line)
    return lines


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
                row.copy_bytes_per_s = copy_rate_at(profile, row.ours["bytes"])
    return list(rows.values())


def group(rows: list[Row], attribute: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(getattr(row, attribute), []).append(row)
    return groups


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


# ---- formatting -------------------------------------------------------------------------------


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


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


def alternatives_text(row: Row) -> str:
    parts = [f"{line['impl']} {ms(line['median_ms'])}" for line in row.timed]
    parts += [f"{line['impl']} ✗ mismatch" for line in row.mismatches]
    parts += [f"{line['impl']} n/a" for line in row.not_applicable]
    return " · ".join(parts) or "—"


TABLE_HEADER = ["workload", "dtype", "ratio", "ours (ms)", "alternatives (ms, fastest first)",
                "TFLOP/s", "SOL %", "bound", "TB/s", "% of copy", "page ours (ms)"]


def table_cells(row: Row) -> list[str]:
    ours = ms(row.ours_ms) if row.ours_ms is not None else "FAILED"
    sol_pct = "—" if row.sol_pct is None else f"{row.sol_pct:.0f}"
    copy_pct = "—" if row.copy_pct is None else f"{row.copy_pct:.0f}"
    return [row.workload, row.dtype, times(row.ratio), ours, alternatives_text(row),
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


def summary_rows(rows: list[Row]) -> list[list[str]]:
    table = []
    for family, family_rows in group(rows, "family").items():
        for op, op_rows in group(family_rows, "op").items():
            ratios = [row.ratio for row in op_rows if row.ratio is not None]
            faster = sum(1 for ratio in ratios if ratio > 1.0)
            table.append([family, op, str(len(op_rows)), times(geomean(ratios)), f"{faster}/{len(ratios)}"])
        ratios = [row.ratio for row in family_rows if row.ratio is not None]
        table.append([family, "**all**", str(len(family_rows)), times(geomean(ratios)),
                      f"{sum(1 for r in ratios if r > 1.0)}/{len(ratios)}"])
    return table


SUMMARY_HEADER = ["family", "op", "rows", "geomean ratio", "ours faster"]


def header_facts(lines: list[dict], profile: dict | None) -> list[tuple[str, str]]:
    def distinct(key: str) -> str:
        return ", ".join(sorted({str(line.get(key)) for line in lines})) or "—"

    present: dict[str, set] = {}
    for line in lines:
        present.setdefault(line["family"], set()).update(line.get("present_alternatives") or [])
    facts = [
        ("Device", distinct("device")),
        ("Run date", distinct("date")),
        ("Commit", distinct("commit")),
        ("Method", METHOD),
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
                      "written (the size curve above, interpolated on the log of the size)"),
    ]
    return facts


# ---- Markdown ---------------------------------------------------------------------------------


def markdown_table(header: list[str], body: list[list[str]]) -> list[str]:
    numeric = {"ratio", "ours (ms)", "TFLOP/s", "SOL %", "TB/s", "% of copy", "page ours (ms)", "rows",
               "geomean ratio", "ours faster"}
    align = ["---:" if name in numeric else "---" for name in header]
    return ["| " + " | ".join(cells) + " |" for cells in [header, align] + body]


def render_markdown(rows: list[Row], lines: list[dict], profile: dict | None) -> str:
    out = ["# Benchmarks", "", "Generated by `python -m solops.bench.report`; do not edit.", ""]
    out += [f"- **{name}**: {value}" for name, value in header_facts(lines, profile)]
    out += ["", "## Summary", ""] + markdown_table(SUMMARY_HEADER, summary_rows(rows))
    for family, family_rows in group(rows, "family").items():
        out += ["", f"## {family}"]
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
SUMMARY_NUMERIC_COLUMNS = {2, 3, 4}


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
               ratio_column: int) -> str:
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


def render_html(rows: list[Row], lines: list[dict], profile: dict | None) -> str:
    facts = "".join(f"<dt>{html.escape(name)}</dt><dd>{html.escape(value)}</dd>"
                    for name, value in header_facts(lines, profile))
    summary = [[cell.replace("**", "") for cell in cells] for cells in summary_rows(rows)]
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           "<title>solops benchmarks</title>", f"<style>{CSS}</style></head><body>",
           "<h1>solops benchmarks</h1>", f"<dl>{facts}</dl>",
           "<h2>Summary</h2>", html_table(SUMMARY_HEADER, summary, SUMMARY_NUMERIC_COLUMNS, ratio_column=3)]
    for family, family_rows in group(rows, "family").items():
        out.append(f"<h2>{html.escape(family)}</h2>")
        for op, op_rows in group(family_rows, "op").items():
            out.append(f"<h3>{html.escape(op)}</h3>")
            out.append(ratio_chart(op_rows))
            out.append(html_table(TABLE_HEADER, [table_cells(row) for row in op_rows],
                                  TABLE_NUMERIC_COLUMNS, ratio_column=2))
            notes = problems(op_rows)
            if notes:
                out.append('<ul class="notes">' + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# ---- plain text -------------------------------------------------------------------------------


def render_text(rows: list[Row]) -> str:
    out = [f"{'op':<22} {'workload':<20} {'dtype':<5} {'ratio':>7} {'ours ms':>9}  best alternative"]
    for row in rows:
        best = f"{row.timed[0]['impl']} {ms(row.timed[0]['median_ms'])}" if row.timed else "—"
        ours = ms(row.ours_ms) if row.ours_ms is not None else "FAILED"
        out.append(f"{row.op:<22} {row.workload:<20} {row.dtype:<5} {times(row.ratio):>7} {ours:>9}  {best}")
    for cells in summary_rows(rows):
        out.append(f"geomean {cells[0]} {cells[1].replace('**', '')}: {cells[3]} ({cells[4]} faster)")
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
    rows = build_rows(lines, profile)
    args.out.mkdir(parents=True, exist_ok=True)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    (args.out / "benchmarks.md").write_text(render_markdown(rows, lines, profile))
    html_path.write_text(render_html(rows, lines, profile))
    print(render_text(rows))
    print(f"wrote {args.out / 'benchmarks.md'} and {html_path}")


if __name__ == "__main__":
    main()
