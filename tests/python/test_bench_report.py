"""Parts of the benchmark report (solops.bench.report) on hand-written profiles. Needs neither
PyTorch nor a GPU: the module is loaded from its file, not through the solops package."""

import importlib.util
from pathlib import Path

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
