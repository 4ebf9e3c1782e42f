"""Compares the libraries of one A/B call (scripts/device-check.sh's SOLOPS_VARIANTS): each row's
time under every variant, its ratio to the first variant's, and their geometric mean.

    python -m solops.bench.variants BUNDLE main candidate [--changed 0.015]

Reads variants/<name>.jsonl (ours only, as the device call writes them) of BUNDLE: the call's
bundle.tar.gz as the device tool returns it, or the folder it was unpacked into. A row is
faster or slower where its ratio moves past --changed (the run-to-run spread of the decode rows
is about 1-2 %). Needs neither torch nor a GPU.
"""

import argparse
import json
import math
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

Row = tuple[str, str, str]  # op, workload, dtype


@dataclass
class Comparison:
    """Times (ms) of each row under each variant, in the order the variants were named."""

    names: list[str]
    times: dict[Row, list[float | None]]

    def ratios(self, name: str) -> dict[Row, float]:
        """Each row's time under `name` over its time under the first variant, where both ran."""
        k = self.names.index(name)
        return {row: t[k] / t[0] for row, t in self.times.items() if t[0] and t[k]}

    def summary(self, name: str, changed: float) -> str:
        ratios = list(self.ratios(name).values())
        if not ratios:
            return f"{name}/{self.names[0]}: no rows in common"
        geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        faster = sum(r < 1 - changed for r in ratios)
        slower = sum(r > 1 + changed for r in ratios)
        return (f"{name}/{self.names[0]}: geometric mean {geomean:.4f} over {len(ratios)} rows, "
                f"{faster} faster and {slower} slower by more than {changed:.1%}")


def results_text(bundle: Path, name: str) -> str:
    """variants/<name>.jsonl of the bundle, a folder or the archive (whose members start "./")."""
    if bundle.is_dir():
        return (bundle / "variants" / f"{name}.jsonl").read_text()
    with tarfile.open(bundle) as archive:
        wanted = f"variants/{name}.jsonl"
        for member in archive.getmembers():
            if os.path.normpath(member.name) == wanted:
                return archive.extractfile(member).read().decode()
    raise FileNotFoundError(f"{bundle} holds no {wanted}")


def read_variants(bundle: Path, names: list[str]) -> Comparison:
    """Our times from each variant's results file; a row a variant did not run, or ran
    incorrectly, has None."""
    times: dict[Row, list[float | None]] = {}
    for k, name in enumerate(names):
        for line in results_text(bundle, name).splitlines():
            result = json.loads(line)
            if result["impl"] != "solops":
                continue
            row = (result["op"], result["workload"], result["dtype"])
            slot = times.setdefault(row, [None] * len(names))
            slot[k] = result["median_ms"] if result.get("correct") else None
    return Comparison(names, times)


def table(comparison: Comparison) -> str:
    """One line a row: its times (µs) under every variant and each ratio to the first."""
    names = comparison.names
    width = max((len(" ".join(row)) for row in comparison.times), default=0)
    lines = [" " * width + "".join(f"{n:>10}" for n in names) + "".join(f"{n:>10}" for n in names[1:])]
    for row, times in comparison.times.items():
        cells = "".join(f"{t * 1e3:10.2f}" if t else f"{'-':>10}" for t in times)
        ratios = "".join(f"{t / times[0]:10.3f}" if t and times[0] else f"{'-':>10}" for t in times[1:])
        lines.append(f"{' '.join(row):<{width}}{cells}{ratios}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle", type=Path, help="the device call's bundle.tar.gz, or its unpacked folder")
    parser.add_argument("names", nargs="+", help="variants, the first the baseline")
    parser.add_argument("--changed", type=float, default=0.015, help="the ratio's move that counts")
    args = parser.parse_args()
    comparison = read_variants(args.bundle, args.names)
    print(table(comparison))
    for name in args.names[1:]:
        print(comparison.summary(name, args.changed))


if __name__ == "__main__":
    main()
