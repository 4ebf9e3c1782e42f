"""The benchmark's check-then-time step (solops.bench.run.measure) on CPU callables, with the timing
functions replaced: what a mismatching, a raising and a correct implementation leave in the record."""

import pytest

torch = pytest.importorskip("torch")
from solops.bench import run  # noqa: E402


def case(check) -> run.Case:
    return run.Case(op="Op", workload="w", dtype="f16", flops=1.0, bytes=1.0, rate_kind="cuda_core_f32",
                    reference=lambda: torch.ones(2), check=check, impls=[])


def close(actual, expected) -> None:
    torch.testing.assert_close(actual, expected)


@pytest.fixture
def timed(monkeypatch) -> list[str]:
    """Which timing functions ran; device time 0.004 ms, host time 0.011 ms."""
    ran = []
    monkeypatch.setattr(run.timing, "device_time",
                        lambda fn, quick: ran.append("device") or run.timing.DeviceTime(0.004, 0.003, 0.005, 30))
    monkeypatch.setattr(run.timing, "host_inclusive_ms", lambda fn: ran.append("host") or 0.011)
    return ran


def test_a_mismatch_keeps_its_eager_cost_and_no_device_time(timed) -> None:
    line = run.measure(run.Impl("torch", lambda: torch.zeros(2)), case(close), torch.ones(2), quick=True)
    assert line["correct"] is False and line["error"].startswith("mismatch: ")
    assert line["host_ms"] == 0.011 and "median_ms" not in line
    assert timed == ["host"]


def test_an_implementation_that_raises_is_not_timed(timed) -> None:
    def raises():
        raise RuntimeError("no kernel")

    line = run.measure(run.Impl("torch", raises), case(close), torch.ones(2), quick=True)
    assert line == {"correct": False, "error": "raised RuntimeError: no kernel"}
    assert timed == []


def test_a_correct_result_is_timed_on_the_device_and_the_host(timed) -> None:
    line = run.measure(run.Impl("solops", lambda: torch.ones(2)), case(close), torch.ones(2), quick=True)
    assert (line["correct"], line["median_ms"], line["host_ms"]) == (True, 0.004, 0.011)
    assert timed == ["device", "host"]


def line(op: str, impl: str, ms: float) -> str:
    return run.json.dumps({"op": op, "workload": "w", "dtype": "f16", "impl": impl, "median_ms": ms})


def test_a_run_cut_short_keeps_the_earlier_lines_of_the_rows_it_did_not_reach(tmp_path) -> None:
    earlier = [line("A", "solops", 1.0), line("B", "solops", 2.0), line("B", "torch", 2.5), line("C", "solops", 3.0)]
    rerun = [("B", "w", "f16"), ("C", "w", "f16")]
    finished = {("B", "w", "f16"): [line("B", "solops", 1.5)]}
    merged = run.merged_lines(run.lines_by_row(earlier), rerun, finished)
    assert merged == [line("A", "solops", 1.0), line("B", "solops", 1.5), line("C", "solops", 3.0)]
    path = tmp_path / "conv.jsonl"
    run.write_lines(path, merged)
    assert path.read_text().splitlines() == merged and not (tmp_path / "conv.jsonl.partial").exists()


def test_a_skipped_row_leaves_no_line() -> None:
    earlier = [line("A", "solops", 1.0)]
    assert run.merged_lines(run.lines_by_row(earlier), [("A", "w", "f16")], {("A", "w", "f16"): []}) == []
