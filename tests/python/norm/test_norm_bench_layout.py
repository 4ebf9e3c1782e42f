"""The norm benchmark's layout switch (solops.bench.norm, SOLOPS_BENCH_NORM_LAYOUT), on the CPU: a
channels_last run keeps the 4-D manifest rows of BatchNorm, GroupNorm and InstanceNorm and skips every
other row before making any tensor; the rows it keeps send x (and grad_out) to the device channels_last,
for ours and the alternatives alike (the meta device stands in for CUDA here), and their reference
gives the values of the contiguous run's, which the checks compare whatever the memory formats."""

import json
from pathlib import Path

import pytest
import torch

from solops.bench import norm, run

MANIFEST = Path(__file__).resolve().parents[3] / "manifest" / "workloads.json"
CHANNELS_LAST_SKIP = "channels_last runs take the 4-D rows of BatchNorm, GroupNorm and InstanceNorm only"


def norm_rows():
    manifest = json.loads(MANIFEST.read_text())
    return [(entry["op"], row) for entry in manifest["ops"] if entry["op"] in norm.OPS for row in entry["rows"]]


def kept(op, row):
    return op in norm.CHANNELS_LAST_OPS and len(row["tensors"]["x"]) == 4


def smallest_kept_row(op):
    return min((row for name, row in norm_rows() if name == op and kept(name, row)),
               key=lambda row: torch.Size(row["tensors"]["x"]).numel())


@pytest.fixture
def layout(monkeypatch):
    """Sets SOLOPS_BENCH_NORM_LAYOUT for the test (None: unset)."""
    def set_layout(value):
        if value is None:
            monkeypatch.delenv(norm.LAYOUT_VARIABLE, raising=False)
        else:
            monkeypatch.setenv(norm.LAYOUT_VARIABLE, value)
    return set_layout


@pytest.fixture
def meta_device(monkeypatch):
    """Tensor.cuda() moves to the meta device instead and records what it moved; the L2 is taken as
    large enough. Returns the list of moved CPU tensors."""
    moved = []

    def to_meta(t, *args, **kwargs):
        moved.append(t)
        return t.to("meta")

    monkeypatch.setattr(torch.Tensor, "cuda", to_meta)
    monkeypatch.setattr(norm, "larger_than_the_l2", lambda nbytes: False)
    return moved


def first_output(outputs):
    return outputs if isinstance(outputs, torch.Tensor) else outputs[0]


def strictly_channels_last(t):
    return t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous()


@pytest.mark.parametrize("value", [None, "contiguous"])
def test_without_the_switch_every_row_is_contiguous(layout, value):
    layout(value)
    for op, row in norm_rows():
        assert norm.input_format(op, row["tensors"]["x"]) == torch.contiguous_format, (op, row["workload"])


def test_a_channels_last_run_keeps_the_4d_rows_of_the_spatial_norms_only(layout):
    layout("channels_last")
    ops_kept = set()
    for op, row in norm_rows():
        if kept(op, row):
            assert norm.input_format(op, row["tensors"]["x"]) == torch.channels_last
            ops_kept.add(op)
        else:  # skipped by build_case itself, before any tensor is made
            with pytest.raises(run.UnsupportedRow, match=CHANNELS_LAST_SKIP):
                norm.build_case(op, row, ["torch", "torch-compile", "liger", "flaggems"])
    assert ops_kept == set(norm.CHANNELS_LAST_OPS)


def test_another_layout_stops_the_run(layout):
    layout("channels_last_3d")
    with pytest.raises(SystemExit, match="SOLOPS_BENCH_NORM_LAYOUT='channels_last_3d': expected contiguous or"):
        norm.input_format("GroupNormFwd", [2, 8, 4, 4])


@pytest.mark.parametrize("op", norm.CHANNELS_LAST_OPS)
def test_kept_rows_send_x_and_grad_out_to_the_device_channels_last(layout, meta_device, op):
    layout("channels_last")
    row = smallest_kept_row(op)
    case = norm.build_case(op, row, ["torch"])
    assert [impl.name for impl in case.impls] == ["solops", "torch"] and all(impl.fn for impl in case.impls)
    like_x = [t for t in meta_device if list(t.shape) == row["tensors"]["x"]]
    assert len(like_x) >= (2 if op.endswith("Bwd") else 1), [tuple(t.shape) for t in meta_device]  # x, grad_out
    assert all(strictly_channels_last(t) for t in like_x)


@pytest.mark.parametrize("op", ["GroupNormFwd", "InstanceNormBwd", "BatchNormInferenceFwd"])
def test_the_reference_of_a_channels_last_row_has_the_contiguous_values(layout, meta_device, op):
    row = smallest_kept_row(op)
    references = []
    for value in ("contiguous", "channels_last"):
        layout(value)
        case = norm.build_case(op, row, [])
        references.append(run.to_cpu(case.reference()))
    contiguous, channels_last = references
    assert strictly_channels_last(first_output(channels_last)) and first_output(contiguous).is_contiguous()
    case.check(channels_last, contiguous)  # the values, whatever the memory formats
