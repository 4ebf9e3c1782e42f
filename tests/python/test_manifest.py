"""manifest/workloads.json must list exactly the catalogue's ops and workload x dtype rows.

Runs without a GPU or torch: it only reads JSON and runs manifest/generate.py.
"""

import collections
import json
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.needs_shared

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
CATALOGUE_PATH = REPO_ROOT.parent / "shared" / "catalogue" / "workloads.json"
MANIFEST_PATH = REPO_ROOT / "manifest" / "workloads.json"
GENERATOR_PATH = REPO_ROOT / "manifest" / "generate.py"

EXPECTED_OP_COUNT = 50
POOL2D_OPS = ("MaxPool2dFwd", "MaxPool2dIndicesFwd", "AvgPool2dFwd")
EXPECTED_POOL2D_ROW_COUNT = 23


def load_json(path, what, hint):
    if not path.is_file():
        pytest.fail(f"{what} not found at {path}: {hint}", pytrace=False)
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def catalogue():
    return load_json(
        CATALOGUE_PATH,
        "workload catalogue",
        "the shared/ folder must sit beside the repository (<repo>/../shared)",
    )


@pytest.fixture(scope="module")
def manifest():
    return load_json(MANIFEST_PATH, "manifest", "run `python3 manifest/generate.py`")


def catalogue_rows(catalogue):
    """(op, workload id, dtype) -> catalogue workload entry, one key per table row."""
    return {
        (op["op"], workload["id"], dtype): workload
        for op in catalogue["ops"]
        for workload in op["workloads"]
        for dtype in workload["dtypes"]
    }


def manifest_keys(manifest):
    return [(op["op"], row["workload"], row["dtype"]) for op in manifest["ops"] for row in op["rows"]]


def manifest_rows(manifest):
    return {(op["op"], row["workload"], row["dtype"]): row for op in manifest["ops"] for row in op["rows"]}


def test_manifest_has_every_op_in_catalogue_order(catalogue, manifest):
    manifest_ops = [(op["op"], op["family"]) for op in manifest["ops"]]
    assert len(manifest_ops) == EXPECTED_OP_COUNT
    assert catalogue["counts"]["ops_union"] == EXPECTED_OP_COUNT
    assert manifest_ops == [(op["op"], op["family"]) for op in catalogue["ops"]]


def test_every_catalogue_row_is_in_manifest_unchanged(catalogue, manifest):
    rows = manifest_rows(manifest)
    for key, workload in catalogue_rows(catalogue).items():
        assert key in rows, f"catalogue row {key} is missing from the manifest"
        row = rows[key]
        assert row["tensors"] == workload["tensors"], key
        assert row["tensor_dtypes"] == workload["tensor_dtypes"], key
        assert row["params"] == workload["params"], key
        assert row["dims"] == workload["dims"], key
        assert row["reference"] == workload["gpu"].get(key[2]), key


def test_manifest_has_no_extra_or_duplicate_rows(catalogue, manifest):
    keys = manifest_keys(manifest)
    duplicates = [key for key, count in collections.Counter(keys).items() if count > 1]
    assert duplicates == []
    extra = set(keys) - set(catalogue_rows(catalogue))
    assert extra == set()


def test_row_counts_match_catalogue(catalogue, manifest):
    catalogue_counts = collections.Counter(op for op, _, _ in catalogue_rows(catalogue))
    manifest_counts = collections.Counter(op for op, _, _ in manifest_keys(manifest))
    assert manifest_counts == catalogue_counts
    assert sum(manifest_counts[op] for op in POOL2D_OPS) == EXPECTED_POOL2D_ROW_COUNT
    rows_with_gpu_figures = [row for row in manifest_rows(manifest).values() if row["reference"] is not None]
    assert len(rows_with_gpu_figures) == catalogue["counts"]["gpu_workload_rows"]


@pytest.mark.usefixtures("catalogue")  # fails with the clear message when the catalogue is missing
def test_manifest_is_what_generate_py_writes_now(tmp_path):
    regenerated = tmp_path / "workloads.json"
    subprocess.run(
        [sys.executable, str(GENERATOR_PATH), "--catalogue", str(CATALOGUE_PATH), "--output", str(regenerated)],
        check=True,
    )
    assert MANIFEST_PATH.read_bytes() == regenerated.read_bytes(), (
        "manifest/workloads.json is stale: run `python3 manifest/generate.py` and commit the result"
    )
