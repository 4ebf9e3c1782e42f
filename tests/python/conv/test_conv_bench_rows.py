"""The conv benchmark's reading of the manifest (solops.bench.conv.row_call), on the CPU: every row
of the nine ops becomes a call the C++ shape rule accepts, with the weight the row implies where it
gives none, and costs the spec's FLOPs; a channels_last run (SOLOPS_BENCH_CONV_LAYOUT) skips the rows
that are not 2-D."""

import json
from pathlib import Path

import pytest
import torch

import solops
from solops.bench import conv, run

MANIFEST = Path(__file__).resolve().parents[3] / "manifest" / "workloads.json"


def conv_rows():
    manifest = json.loads(MANIFEST.read_text())
    return [(entry["op"], row) for entry in manifest["ops"] if entry["op"] in conv.OPS for row in entry["rows"]]


def test_every_row_is_a_valid_call():
    rows = conv_rows()
    assert len(rows) == 120
    for op_name, row in rows:
        call = conv.row_call(op_name, row)
        function = getattr(solops, conv.CONV_OPS[op_name].function)
        tensors = [torch.empty(call.input, dtype=torch.float16, device="meta"),
                   torch.empty(call.weight, dtype=torch.float16, device="meta"),
                   torch.empty(call.weight[:1], dtype=torch.float16, device="meta") if call.bias else None]
        with solops.reference.mode():
            output = function(*tensors, **call.params)
        assert output.shape[1] == call.weight[0], (op_name, row["workload"])
        flops, _ = solops.cost.of(function, *tensors, **call.params)
        macs = output.numel() * call.weight[1] * torch.Size(call.weight[2:]).numel()
        assert flops >= 2 * macs, (op_name, row["workload"])


def test_weights_that_rows_leave_out():
    rows = {(op, row["workload"]): row for op, row in conv_rows()}
    assert conv.row_call("DepthwiseConv2d", rows["DepthwiseConv2d", "mobilenetv2-depthwise"]).weight == [32, 1, 3, 3]
    assert conv.row_call("PointwiseConv2d", rows["PointwiseConv2d", "classifier-1x1"]).weight == [2048, 512, 1, 1]
    grouped = conv.row_call("Conv3dFwd", rows["Conv3dFwd", "3d-resnext-grouped-k3"])
    assert grouped.weight == [128, 2, 3, 3, 3] and grouped.params["groups"] == 32
    assert conv.row_call("Conv3dFwd", rows["Conv3dFwd", "3d-unet-aspp-3x3x3-rate6"]).weight == [256, 256, 3, 3, 3]


def test_a_channels_last_run_skips_the_rows_that_are_not_2d(monkeypatch):
    """SOLOPS_BENCH_CONV_LAYOUT=channels_last: the 1-D and 3-D rows are skipped before any tensor is made."""
    monkeypatch.setenv(conv.LAYOUT_VARIABLE, "channels_last")
    skipped = 0
    for op_name, row in conv_rows():
        if conv.CONV_OPS[op_name].spatial != 2:
            with pytest.raises(run.UnsupportedRow, match="channels_last runs take the 2-D rows only"):
                conv.build_case(op_name, row, ["torch"])
            skipped += 1
    assert skipped > 0
    monkeypatch.setenv(conv.LAYOUT_VARIABLE, "nhwc")
    with pytest.raises(SystemExit, match="SOLOPS_BENCH_CONV_LAYOUT='nhwc': expected contiguous or channels_last"):
        conv.build_case(*conv_rows()[0], [])
