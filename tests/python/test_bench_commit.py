"""The results' commit field (solops.bench.commit): the caller's SOLOPS_COMMIT, else git's HEAD, marked
where the tracked sources differ from it. Needs neither PyTorch nor a GPU: the module is loaded from
its file, not through the solops package."""

import importlib.util
import subprocess
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "python" / "solops" / "bench" / "commit.py"
_SPEC = importlib.util.spec_from_file_location("solops_bench_commit", _PATH)
commit = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(commit)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SOLOPS_COMMIT", raising=False)
    git(tmp_path, "init", "-q")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "kernel.cu").write_text("// one\n")
    (tmp_path / "notes.md").write_text("notes\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return tmp_path


def test_head_where_the_sources_are_committed(repo: Path) -> None:
    (repo / "notes.md").write_text("other notes\n")  # not a source: the library it builds is HEAD's
    assert commit.measured_commit(str(repo)) == git(repo, "rev-parse", "HEAD")


def test_marked_where_the_sources_differ_from_head(repo: Path) -> None:
    (repo / "src" / "kernel.cu").write_text("// two\n")
    assert commit.measured_commit(str(repo)) == git(repo, "rev-parse", "HEAD") + "+modified"


def test_the_callers_commit_wins(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOLOPS_COMMIT", "abc1234")
    (repo / "src" / "kernel.cu").write_text("// two\n")
    assert commit.measured_commit(str(repo)) == "abc1234"


def test_unknown_outside_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOLOPS_COMMIT", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert commit.measured_commit(str(tmp_path)) == "unknown"
