"""The README's status block (solops.bench.status): what it makes of the committed results, and of
hand-written ones. Needs neither PyTorch nor a GPU: the modules are loaded from their files, not
through the solops package."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCH = REPO_ROOT / "python" / "solops" / "bench"


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# status.py imports the report by its package name: lend it the file's module while status loads.
_saved = sys.modules.get("solops.bench.report")
sys.modules["solops.bench.report"] = load("solops_bench_report", BENCH / "report.py")
try:
    status = load("solops_bench_status", BENCH / "status.py")
finally:
    if _saved is None:
        del sys.modules["solops.bench.report"]
    else:
        sys.modules["solops.bench.report"] = _saved


def test_the_readme_block_is_what_the_committed_results_give() -> None:
    manifest = json.loads((REPO_ROOT / "manifest" / "workloads.json").read_text())
    block = status.render(REPO_ROOT / "bench" / "results", manifest)
    readme = (REPO_ROOT / "README.md").read_text()
    assert status.replace_block(readme, block) == readme, (
        "README.md's status block is stale: run `python3 -m solops.bench.status` and commit the result")


def line(op: str, workload: str, impl: str, ms: float, correct: bool = True) -> str:
    return json.dumps({"op": op, "workload": workload, "dtype": "f16", "impl": impl, "median_ms": ms,
                       "correct": correct, "device": "NVIDIA H100 80GB HBM3", "commit": "0123456789abcdef+modified"})


@pytest.fixture
def results(tmp_path: Path) -> Path:
    card = tmp_path / "h100"
    card.mkdir()
    (card / "pool.jsonl").write_text("\n".join([
        line("MaxPool2dFwd", "a", "solops", 1.0), line("MaxPool2dFwd", "a", "torch", 2.0),  # ratio 2
        line("MaxPool2dFwd", "b", "solops", 2.0), line("MaxPool2dFwd", "b", "torch", 1.0),  # ratio 0.5
        line("AvgPool2dFwd", "c", "solops", 1.0, correct=False), line("AvgPool2dFwd", "c", "torch", 1.0),
    ]) + "\n")
    return tmp_path


MANIFEST = {"ops": [{"op": name, "family": "pool"} for name in ("MaxPool2dFwd", "AvgPool2dFwd", "MaxPool3dFwd")]}


def test_a_family_line_counts_ops_rows_and_ratios(results: Path) -> None:
    block = status.render(results, MANIFEST)
    # Geometric mean of 2 and 0.5 over the rows with a ratio; the row where ours failed has none.
    assert ("| pool | NVIDIA H100 80GB HBM3 | 0123456+modified | 2 of 3 | 2/3 | 1.00× | 1/3 | "
            "[docs/h100/benchmarks.md](docs/h100/benchmarks.md) |") in block.splitlines()
    assert "- pool: `MaxPool2dFwd`, `AvgPool2dFwd`" in block.splitlines()


def test_extra_rows_are_left_out_of_the_family_line(results: Path) -> None:
    before = status.render(results, MANIFEST)
    with (results / "h100" / "pool.jsonl").open("a") as lines:
        for impl, ms in (("solops", 1.0), ("torch", 3.0)):
            lines.write(json.dumps(dict(json.loads(line("MaxPool3dFwd", "decode", impl, ms)), catalogue=False)) + "\n")
    assert status.render(results, MANIFEST) == before


def test_only_the_block_between_the_markers_changes() -> None:
    readme = f"intro\n{status.BEGIN}\nold\n{status.END}\nset-up\n"
    block = f"{status.BEGIN}\nnew\n{status.END}"
    assert status.replace_block(readme, block) == f"intro\n{block}\nset-up\n"


def test_a_readme_without_the_markers_is_refused() -> None:
    with pytest.raises(SystemExit, match="markers are missing"):
        status.replace_block("intro\n", f"{status.BEGIN}\n{status.END}")
