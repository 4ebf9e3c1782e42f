"""Parts of the benchmark report (solops.bench.report) on hand-written profiles. Needs neither
PyTorch nor a GPU: the module is loaded from its file, not through the solops package."""

import importlib.util
import json
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "python" / "solops" / "bench" / "report.py"
_SPEC = importlib.util.spec_from_file_location("solops_bench_report", _PATH)
report = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(report)


def test_copy_curve_lists_each_size_with_its_rate() -> None:
    profile = {"copy_kernel_by_size": [{"moved_bytes": 4 << 20, "bytes_per_s": 2.504e12},
                                       {"moved_bytes": 256 << 20, "bytes_per_s": 4.1e12}]}
    assert report.copy_curve_text(profile) == "TB/s by bytes read + written per call: 4 MiB 2.50, 256 MiB 4.10"


def test_copy_curve_of_a_profile_without_one() -> None:
    assert report.copy_curve_text({}) == "not measured in this profile"


CURVE = {"copy_kernel_by_size": [{"moved_bytes": 4 << 20, "bytes_per_s": 2e12},
                                 {"moved_bytes": 16 << 20, "bytes_per_s": 3e12}]}


def test_copy_rate_is_interpolated_on_the_log_of_the_size() -> None:
    assert report.copy_rate_at(CURVE, 8 << 20) == 2.5e12  # halfway between 4 and 16 MiB on a log scale
    assert report.copy_rate_at(CURVE, 4 << 20) == 2e12


def test_copy_rate_outside_the_curve_is_its_nearest_end() -> None:
    assert report.copy_rate_at(CURVE, 1 << 20) == 2e12
    assert report.copy_rate_at(CURVE, 1 << 30) == 3e12
    assert report.copy_rate_at({}, 8 << 20) is None


def test_the_memory_bar_measures_a_rows_min_bytes_where_it_has_them() -> None:
    # 8 MiB in 2 ms on the spec's roofline; the row must move 12 MiB (a tensor read twice), measured
    # against the copy's rate at 12 MiB.
    profile = dict(CURVE, memory_bytes_per_s=3e12, latency_floor_ms=0.001, cuda_core_f32_flops_per_s=1e14)
    record = {"family": "norm", "op": "BatchNormFwd", "workload": "large", "dtype": "f16", "impl": "solops",
              "flops": 1e6, "bytes": float(8 << 20), "median_ms": 2.0, "host_ms": 2.0, "correct": True}
    plain = report.build_rows([record], profile)[0]
    assert plain.copy_pct == pytest.approx(100.0 * (8 << 20) / 2e-3 / report.copy_rate_at(CURVE, 8 << 20))
    doubled = report.build_rows([dict(record, min_bytes=float(12 << 20))], profile)[0]
    assert doubled.copy_pct == pytest.approx(100.0 * (12 << 20) / 2e-3 / report.copy_rate_at(CURVE, 12 << 20))
    assert doubled.sol_ms == plain.sol_ms  # the roofline keeps the spec's bytes


def line(op: str, workload: str, impl: str, median_ms: float, host_ms: float, correct: bool = True) -> dict:
    return {"family": "pool", "op": op, "workload": workload, "dtype": "f16", "impl": impl, "flops": 1e6,
            "bytes": 1e6, "median_ms": median_ms, "host_ms": host_ms, "correct": correct}


# Short row, ours slower on the host than torch and over the short-row limit; long row, ours faster.
LINES = [line("MaxPool2dFwd", "small", "solops", 0.004, 0.120), line("MaxPool2dFwd", "small", "torch", 0.008, 0.020),
         line("MaxPool2dFwd", "small", "torch-compile", 0.005, 0.050),
         line("MaxPool2dFwd", "large", "solops", 0.040, 0.041), line("MaxPool2dFwd", "large", "torch", 0.060, 0.062),
         line("AvgPool2dFwd", "small", "solops", 0.003, 0.012), line("AvgPool2dFwd", "small", "torch", 0.006, 0.011,
                                                                     correct=False)]


def test_table_cells_show_device_and_host_time_of_ours_and_every_alternative() -> None:
    row = report.build_rows(LINES, None)[0]
    cells = dict(zip(report.TABLE_HEADER, report.table_cells(row)))
    assert cells["ours (ms, device / host)"] == "0.004 / 0.12"
    alternatives = cells["alternatives (ms, device / host, fastest first)"]
    assert alternatives == "torch-compile 0.005 / 0.05 · torch 0.008 / 0.02"
    mismatched = report.build_rows(LINES, None)[2]
    assert report.alternatives_text(mismatched) == "torch ✗ mismatch, host 0.011"


def test_eager_cost_counts_host_against_torch_and_lists_short_rows_over_the_limit() -> None:
    cost = report.eager_cost(report.build_rows(LINES, None))
    # The AvgPool row's torch mismatched: its host time is still what a caller pays, and compared.
    assert (cost.at_most_torch, cost.compared) == (1, 3)
    assert cost.short_rows == 2
    assert [(row.op, row.workload) for row in cost.short_over_limit] == [("MaxPool2dFwd", "small")]
    assert cost.ours_median_ms == 0.041
    assert cost.torch_median_ms == 0.020
    assert report.over_limit_by_op(cost) == ["MaxPool2dFwd (host µs): small f16 120"]
    assert report.eager_cost_notes(cost)[-1] == ("rows under 10 µs of device time whose solops host time is over "
                                                 "15 µs: 1/2")


def test_summary_counts_rows_whose_host_time_is_at_most_torchs() -> None:
    summary = report.summary_rows(report.build_rows(LINES, None))
    host = {cells[1]: cells[report.SUMMARY_HEADER.index("host ≤ torch")] for cells in summary}
    assert host == {"MaxPool2dFwd": "1/2", "AvgPool2dFwd": "0/1", "**all**": "1/3"}


def test_extra_rows_are_marked_and_left_out_of_the_summary() -> None:
    extra = [dict(entry, workload="decode", catalogue=False)
             for entry in (line("MaxPool2dFwd", "decode", "solops", 0.01, 0.02),
                           line("MaxPool2dFwd", "decode", "torch", 0.04, 0.05))]
    rows = report.build_rows(LINES + extra, None)
    workloads = [report.table_cells(row)[0] for row in rows]
    assert workloads == ["small", "large", "small", "decode (not in catalogue)"]
    summary = {cells[1]: cells[report.SUMMARY_HEADER.index("rows")] for cells in report.summary_rows(rows)}
    assert summary == {"MaxPool2dFwd": "2", "AvgPool2dFwd": "1", "**all**": "3"}


LAUNCH = [{"family": "pool", "op": "MaxPool2dFwd", "workload": "small", "dtype": "f16",
           "tensors": {"input": [2, 64, 55, 55]}, "solops_us": 6.0, "torch_us": 5.5, "ratio": 6.0 / 5.5,
           "calls": 1000, "repeats": 5, "error": None, "device": "NVIDIA H200", "commit": "abc", "date": "d"},
          {"family": "pool", "op": "AvgPool2dFwd", "workload": "small", "dtype": "bf16",
           "tensors": {"input": [2, 8, 8]}, "solops_us": 9.0, "torch_us": 6.0, "ratio": 1.5,
           "calls": 1000, "repeats": 5, "error": None, "device": "NVIDIA H200", "commit": "abc", "date": "d"},
          {"family": "pool", "op": "MaxPool1dFwd", "workload": "tiny", "dtype": "f16",
           "tensors": {"input": [2, 8]}, "solops_us": None, "torch_us": None, "ratio": None,
           "calls": 1000, "repeats": 5, "error": "raised SolopsError: bad", "device": "NVIDIA H200", "commit": "abc",
           "date": "d"}]


def test_launch_cells_mark_ops_within_the_goal() -> None:
    assert report.launch_cells(LAUNCH[0]) == ["MaxPool2dFwd", "small", "f16", "input 2×64×55×55", "6.00", "5.50",
                                              "1.09×", "✓"]
    assert report.launch_cells(LAUNCH[1])[-2:] == ["1.50×", "✗"]
    assert report.launch_cells(LAUNCH[2])[4:] == ["FAILED", "—", "—", "—"]
    assert report.launch_within_goal_text(LAUNCH) == "1/3 ops within 1.2× of PyTorch's launch cost"
    assert report.launch_problems(LAUNCH) == ["MaxPool1dFwd on tiny f16: raised SolopsError: bad"]


def test_launch_files_are_read_apart_from_the_benchmark_lines(tmp_path: Path) -> None:
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in LINES))
    (tmp_path / "launch-pool.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in LAUNCH))
    assert report.read_lines(tmp_path) == LINES
    assert report.read_launch_lines(tmp_path) == {"pool": LAUNCH}


def test_markdown_has_each_familys_eager_cost_and_launch_overhead() -> None:
    rows = report.build_rows(LINES, None)
    text = report.render_markdown(rows, LINES, None, {"pool": LAUNCH})
    assert text.index("## pool") < text.index("### Eager cost") < text.index("### Launch overhead")
    assert "  - MaxPool2dFwd (host µs): small f16 120\n" in text
    assert "| MaxPool2dFwd | small | f16 | input 2×64×55×55 | 6.00 | 5.50 | 1.09× | ✓ |" in text
    assert "- MaxPool1dFwd on tiny f16: raised SolopsError: bad" in text
    html_text = report.render_html(rows, LINES, None, {"pool": LAUNCH})
    assert "<h3>Launch overhead</h3>" in html_text
    assert "<li>MaxPool2dFwd (host µs): small f16 120</li>" in html_text
