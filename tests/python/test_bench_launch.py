"""The launch-overhead benchmark's row choice and timing loop (solops.bench.launch). Needs neither
PyTorch nor a GPU: the module is loaded from its file, not through the solops package, and the loop
runs plain functions with a stand-in for torch.cuda.synchronize."""

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "python" / "solops" / "bench" / "launch.py"
_SPEC = importlib.util.spec_from_file_location("solops_bench_launch", _PATH)
launch = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(launch)


def row(workload: str, dtype: str, tensors: dict, tensor_dtypes: dict | None = None) -> dict:
    return {"workload": workload, "dtype": dtype, "tensors": tensors, "tensor_dtypes": tensor_dtypes or {}}


def test_row_bytes_counts_every_tensor_in_its_own_dtype() -> None:
    assert launch.row_bytes(row("a", "bf16", {"x": [2, 3]})) == 12
    # "f16/f32" is the input dtype / accumulation dtype; offsets are i32 by tensor_dtypes.
    assert launch.row_bytes(row("b", "f16/f32", {"x": [4, 8], "offsets": [5]}, {"offsets": "i32"})) == 64 + 20


def test_row_bytes_rejects_an_unknown_dtype() -> None:
    with pytest.raises(ValueError, match="c: tensor x has dtype 'f64'"):
        launch.row_bytes(row("c", "f64", {"x": [2]}))


def test_smallest_first_orders_by_bytes_and_keeps_the_catalogues_order_on_ties() -> None:
    rows = [row("large", "f16", {"x": [64, 64]}), row("small-f32", "f32", {"x": [8, 8]}),
            row("small-f16", "f16", {"x": [8, 16]}), row("smallest", "bf16", {"x": [8, 8]})]
    assert [r["workload"] for r in launch.smallest_first(rows)] == ["smallest", "small-f32", "small-f16", "large"]


def test_wall_time_loop_synchronizes_once_before_and_once_after_the_calls() -> None:
    events = []
    microseconds = launch.wall_us_per_call(lambda: events.append("call"), 3, lambda: events.append("sync"))
    assert events == ["sync", "call", "call", "call", "sync"]
    assert microseconds > 0


def test_the_functions_take_turns_each_first_in_every_other_round() -> None:
    order = []
    fns = {"solops": lambda: order.append("solops"), "torch": lambda: order.append("torch")}
    times = launch.median_wall_us(fns, calls=2, repeats=3, synchronize=lambda: None)
    solops_first, torch_first = ["solops"] * 2 + ["torch"] * 2, ["torch"] * 2 + ["solops"] * 2
    assert order == solops_first + torch_first + solops_first
    assert set(times) == {"solops", "torch"} and all(value > 0 for value in times.values())


def test_launch_line_has_the_ratio_of_solops_to_torch() -> None:
    facts = {"family": "pool", "device": "NVIDIA H200", "commit": "abc", "date": "d"}
    catalogue_row = row("small", "f16", {"input": [2, 8]})
    line = launch.launch_line("MaxPool1dFwd", catalogue_row, 6.0, 4.0, facts)
    assert (line["workload"], line["dtype"], line["tensors"], line["ratio"]) == ("small", "f16", {"input": [2, 8]}, 1.5)
    assert line["error"] is None and line["commit"] == "abc"
    failed = launch.launch_line("MaxPool1dFwd", catalogue_row, None, None, facts, "raised X")
    assert (failed["ratio"], failed["error"]) == (None, "raised X")
