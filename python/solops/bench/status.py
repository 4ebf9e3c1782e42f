"""Writes the status block of README.md from the committed benchmark results.

    python3 -m solops.bench.status

One line per family and card (bench/results/<card>/<family>.jsonl), over the catalogue's rows (a
family's extra rows are left out): the ops measured out of the family's ops in
manifest/workloads.json, the rows where ours is correct, the geometric mean of the ratio against the
fastest correct alternative (computed as docs/benchmarks.md computes it, by solops.bench.report), the
rows at 1.00 or more, and the commit measured. The block sits between
BEGIN and END in README.md; nothing else of the file changes.
"""

import argparse
import json
import textwrap
from pathlib import Path

from solops.bench.report import build_rows, geomean, group, read_lines, times

BEGIN = "<!-- begin status: written by `python3 -m solops.bench.status` from bench/results; do not edit -->"
END = "<!-- end status -->"
# The project's card: its results come first and its report is docs/benchmarks.md (scripts/bench.sh).
MAIN_CARD = "h200"

HEADER = ["family", "card", "commit", "ops measured", "rows correct", "geomean ratio", "rows ≥ 1.00", "report"]


def short_commit(commit: str) -> str:
    """A full hash cut to the 7 digits the other results carry, a "+modified" mark kept."""
    name, plus, mark = commit.partition("+")
    return name[:7] + plus + mark


def report_path(card: str) -> str:
    return "docs/benchmarks.md" if card == MAIN_CARD else f"docs/{card}/benchmarks.md"


def family_line(card: str, family: str, rows: list, lines: list[dict], family_ops: list[str]) -> list[str]:
    """The table line of one family's rows and results lines on one card."""
    ratios = [row.ratio for row in rows if row.ratio is not None]
    correct = sum(1 for row in rows if row.ours_ms is not None)
    devices = ", ".join(sorted({line["device"] for line in lines}))
    commits = ", ".join(sorted({short_commit(line["commit"]) for line in lines}))
    report = report_path(card)
    return [family, devices, commits, f"{len({row.op for row in rows})} of {len(family_ops)}",
            f"{correct}/{len(rows)}", times(geomean(ratios)),
            f"{sum(1 for ratio in ratios if ratio >= 1.0)}/{len(rows)}", f"[{report}]({report})"]


def wrap(text: str, indent: str = "") -> str:
    return textwrap.fill(text, width=100, subsequent_indent=indent, break_on_hyphens=False)


def render(results_root: Path, manifest: dict) -> str:
    """The block, markers included."""
    family_ops: dict[str, list[str]] = {}
    for op in manifest["ops"]:
        family_ops.setdefault(op["family"], []).append(op["op"])
    cards = sorted((path.name for path in results_root.iterdir() if path.is_dir()),
                   key=lambda card: (card != MAIN_CARD, card))
    table: list[list[str]] = []
    measured: dict[str, set[str]] = {}
    for card in cards:
        lines = read_lines(results_root / card)
        rows_by_family = group([row for row in build_rows(lines, None) if row.catalogue], "family")
        for family, ops in family_ops.items():
            if family in rows_by_family:
                rows = rows_by_family[family]
                family_lines = [line for line in lines if line["family"] == family]
                table.append(family_line(card, family, rows, family_lines, ops))
                measured.setdefault(family, set()).update(row.op for row in rows)
    numeric = {"ops measured", "rows correct", "geomean ratio", "rows ≥ 1.00"}
    out = [BEGIN, "", wrap("Measured so far (ratio: the fastest correct alternative's device time over ours, so "
                            "above 1 ours is faster; the geometric mean is over the family's rows). What limits "
                            "each row, and what was tried: [docs/perf/](docs/perf/)."), "",
           "| " + " | ".join(HEADER) + " |",
           "| " + " | ".join("---:" if name in numeric else "---" for name in HEADER) + " |"]
    out += ["| " + " | ".join(cells) + " |" for cells in table]
    out.append("")
    out += [wrap(f"- {family}: " + ", ".join(f"`{op}`" for op in family_ops[family] if op in ops), "  ")
            for family, ops in measured.items()]
    out += ["", END]
    return "\n".join(out)


def replace_block(readme: str, block: str) -> str:
    """README text with the block between BEGIN and END replaced."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md: the status block's markers are missing; put {BEGIN!r} and {END!r} "
                         "where the block belongs")
    return readme[:start] + block + readme[end + len(END):]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=Path("bench/results"), help="one folder per card")
    parser.add_argument("--manifest", type=Path, default=Path("manifest/workloads.json"))
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    args = parser.parse_args()
    block = render(args.results, json.loads(args.manifest.read_text()))
    args.readme.write_text(replace_block(args.readme.read_text(), block))
    print(block)


if __name__ == "__main__":
    main()
