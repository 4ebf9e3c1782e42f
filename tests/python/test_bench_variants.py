"""The A/B comparison of variant libraries (solops.bench.variants) on hand-written results files.
Needs neither PyTorch nor a GPU: the module is loaded from its file, not through the solops package."""

import importlib.util
import json
import math
import tarfile
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "python" / "solops" / "bench" / "variants.py"
_SPEC = importlib.util.spec_from_file_location("solops_bench_variants", _PATH)
variants = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(variants)


def write(bundle: Path, name: str, rows: list[tuple[str, str, str, float, bool]]) -> None:
    (bundle / "variants").mkdir(exist_ok=True)
    lines = [json.dumps({"op": op, "workload": workload, "dtype": dtype, "impl": "solops", "median_ms": ms,
                         "correct": correct}) for op, workload, dtype, ms, correct in rows]
    # An alternative's line, as the runner writes beside ours: never counted.
    lines.append(json.dumps({"op": "RMSNormFwd", "workload": "a", "dtype": "bf16", "impl": "torch",
                             "median_ms": 0.001, "correct": True}))
    (bundle / "variants" / f"{name}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    write(tmp_path, "main", [("RMSNormFwd", "a", "bf16", 0.010, True), ("RMSNormFwd", "b", "bf16", 0.020, True),
                             ("LayerNormFwd", "a", "f16", 0.004, True), ("LayerNormFwd", "b", "f16", 0.008, True)])
    write(tmp_path, "new", [("RMSNormFwd", "a", "bf16", 0.009, True), ("RMSNormFwd", "b", "bf16", 0.022, True),
                            ("LayerNormFwd", "a", "f16", 0.004, False)])
    return tmp_path


def test_ratios_only_where_both_ran_correctly(bundle: Path) -> None:
    comparison = variants.read_variants(bundle, ["main", "new"])
    ratios = comparison.ratios("new")
    assert ratios == pytest.approx({("RMSNormFwd", "a", "bf16"): 0.9, ("RMSNormFwd", "b", "bf16"): 1.1})
    assert comparison.times[("LayerNormFwd", "a", "f16")] == [0.004, None]
    assert comparison.times[("LayerNormFwd", "b", "f16")] == [0.008, None]


def test_summary_counts_moves_past_the_threshold(bundle: Path) -> None:
    comparison = variants.read_variants(bundle, ["main", "new"])
    geomean = math.sqrt(0.9 * 1.1)
    assert comparison.summary("new", 0.05) == (
        f"new/main: geometric mean {geomean:.4f} over 2 rows, 1 faster and 1 slower by more than 5.0%")
    assert "0 faster and 0 slower" in comparison.summary("new", 0.2)


def test_table_has_a_line_a_row_with_times_and_ratios(bundle: Path) -> None:
    lines = variants.table(variants.read_variants(bundle, ["main", "new"])).splitlines()
    assert len(lines) == 5
    first = lines[1].split()
    assert first[:3] == ["RMSNormFwd", "a", "bf16"]
    assert [float(x) for x in first[3:]] == pytest.approx([10.0, 9.0, 0.9])
    assert lines[3].split()[3:] == ["4.00", "-", "-"]


def test_reads_the_bundle_archive_as_the_folder(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    # As scripts/device-check.sh packs it: tar czf bundle.tar.gz -C WORK . (members named ./...).
    archive = tmp_path_factory.mktemp("call") / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(bundle, arcname=".")
    assert variants.read_variants(archive, ["main", "new"]) == variants.read_variants(bundle, ["main", "new"])
    with pytest.raises(FileNotFoundError, match="variants/absent.jsonl"):
        variants.read_variants(archive, ["absent"])
