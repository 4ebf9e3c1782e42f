#!/usr/bin/env python3
"""Writes tests/golden/pool2d.json: PyTorch's F.max_pool2d / F.avg_pool2d on small edge cases.

Run on the GPU machine (the spec pins PyTorch's CUDA behaviour, e.g. which NaN index max-pool
reports): python3 tests/golden/make_golden.py [--output PATH]

Inputs are small integers or halves, exactly representable in f32, f16 and bf16, so every input is
the same number in every dtype and max-pool outputs can be compared exactly. Values are flat,
row-major lists; non-finite values are the strings "nan", "inf" and "-inf", since JSON has none.
"cases" hold values; "shape_cases" hold only the output shape (or PyTorch's error) of one
parameter set, to pin down the output-size rule and its validation.
"""

import argparse
import json
import math
import os
import random

import torch
import torch.nn.functional as F

NAN = float("nan")
INF = float("inf")
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DEFAULT_OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pool2d.json")


def encode_value(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def make_input(shape, fill, seed, specials):
    """fill: "ints" (-9..9, so windows often tie), "halves" (ints / 2), "negative" (-9..-1),
    "ones", "arange", "neg-inf", or a number (constant). specials: {full index tuple: value}."""
    generator = torch.Generator().manual_seed(seed)
    if fill == "ints":
        x = torch.randint(-9, 10, shape, generator=generator).double()
    elif fill == "halves":
        x = torch.randint(-40, 41, shape, generator=generator).double() / 2
    elif fill == "negative":
        x = torch.randint(-9, 0, shape, generator=generator).double()
    elif fill == "ones":
        x = torch.ones(shape, dtype=torch.float64)
    elif fill == "arange":
        x = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape)
    elif fill == "neg-inf":
        x = torch.full(shape, -INF, dtype=torch.float64)
    else:
        x = torch.full(shape, float(fill), dtype=torch.float64)
    for position, value in specials.items():
        x[position] = value
    return x


def flat_values(t):
    return [encode_value(v) for v in t.double().flatten().tolist()]


def max_params(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    return {"kernel_size": kernel_size, "stride": stride, "padding": padding, "dilation": dilation,
            "ceil_mode": ceil_mode}


def avg_params(kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return {"kernel_size": kernel_size, "stride": stride, "padding": padding, "ceil_mode": ceil_mode,
            "count_include_pad": count_include_pad, "divisor_override": divisor_override}


def run_pool(op, x, params):
    if op == "max_pool2d":
        return F.max_pool2d(x, **params, return_indices=True)
    return F.avg_pool2d(x, **params), None


def value_case(name, op, shape, params, dtype="f32", fill="ints", specials=None, seed=0, device="cpu"):
    x = make_input(shape, fill, seed, specials or {}).to(TORCH_DTYPES[dtype])
    y, indices = run_pool(op, x.to(device), params)
    case = {"name": name, "op": op, "dtype": dtype, "input_shape": list(shape), "params": params,
            "input": flat_values(x), "output_shape": list(y.shape), "output": flat_values(y.cpu())}
    if indices is not None:
        case["indices"] = indices.cpu().flatten().tolist()
    return case


def max_case(name, shape, *args, dtype="f32", fill="ints", specials=None, seed=0, **kwargs):
    return dict(name=name, op="max_pool2d", shape=shape, params=max_params(*args, **kwargs),
                dtype=dtype, fill=fill, specials=specials, seed=seed)


def avg_case(name, shape, *args, dtype="f32", fill="ints", specials=None, seed=0, **kwargs):
    return dict(name=name, op="avg_pool2d", shape=shape, params=avg_params(*args, **kwargs),
                dtype=dtype, fill=fill, specials=specials, seed=seed)


# Window arithmetic in the comments: O = output size, a = window start o*s - p, taps a + t*d.
VALUE_CASES = [
    max_case("resnet-stem 3x3 s2 p1", (2, 3, 9, 9), 3, 2, 1, seed=1),
    max_case("vgg 2x2 s2", (1, 2, 8, 8), 2, 2, seed=2),
    max_case("stride None: W=7 drops the last column", (1, 2, 6, 7), 2, seed=3),
    max_case("stride None, asymmetric kernel", (1, 1, 7, 8), (3, 2), seed=4),
    max_case("asymmetric kernel, stride, padding", (1, 2, 7, 9), (2, 3), (1, 2), (1, 1), seed=5),
    max_case("padding on W only", (1, 2, 6, 7), 3, (2, 1), (0, 1), seed=6),
    max_case("dilation 2", (1, 2, 8, 8), 3, 1, 1, 2, seed=7),
    max_case("dilation 3", (1, 1, 9, 9), 2, 1, 1, 3, seed=8),
    # H: e=5, ceil(7/2)+1 = 5 outputs (floor 4); the last window's taps 7, 9, 11 hold two real rows.
    max_case("dilation (2,3) with ceil", (1, 1, 10, 10), (3, 2), (2, 1), 1, (2, 3), True, seed=9),
    max_case("ceil adds an output (I=5 k2 s2)", (1, 1, 5, 5), 2, 2, ceil_mode=True, seed=10),
    # ceil(4/3)+1 = 3, but the third window would start at 5 = I, wholly in the right padding.
    max_case("ceil output removed by (O-1)s >= I+p", (1, 1, 5, 5), 3, 3, 1, ceil_mode=True, seed=11),
    max_case("ceil: last window overhangs the padding", (1, 2, 6, 6), 3, 2, 1, ceil_mode=True, seed=12),
    max_case("alexnet ceil (7 outputs, floor 6)", (1, 2, 14, 14), 3, 2, ceil_mode=True, seed=13),
    # H: the ceil output is removed (start 3 = I); W: an output is added.
    max_case("ceil removes on H, adds on W", (1, 1, 3, 6), (2, 3), 2, (1, 0), ceil_mode=True, seed=14),
    # e=3, 4 outputs; the last window's taps 8 and 10 hold one real element.
    max_case("ceil dilated: last window has one real tap", (1, 1, 9, 9), 2, 3, 1, 2, True, seed=15),
    max_case("unbatched 3-D input", (3, 6, 6), 2, 2, seed=16),
    max_case("unbatched 3-D, padded, ceil", (2, 5, 7), 3, 2, 1, ceil_mode=True, seed=17),
    max_case("all dims 1", (1, 1, 1, 1), 1, seed=18),
    max_case("H=1", (1, 3, 1, 7), (1, 3), (1, 2), seed=19),
    max_case("W=1, padded on H", (2, 1, 5, 1), (2, 1), 1, (1, 0), seed=20),
    max_case("global window", (2, 2, 5, 5), 5, seed=21),
    # Every window is all -inf: the index is the window's first real (in-bounds) tap.
    max_case("all -inf, padded", (1, 1, 4, 4), 3, 1, 1, fill="neg-inf"),
    max_case("-inf blocks", (1, 1, 6, 6), 2, 2, seed=22, specials={
        (0, 0, 0, 0): -INF, (0, 0, 0, 1): -INF, (0, 0, 1, 0): -INF, (0, 0, 1, 1): -INF,
        (0, 0, 2, 2): -INF, (0, 0, 3, 3): -INF, (0, 0, 4, 5): INF}),
    max_case("one NaN", (1, 1, 4, 4), 2, 2, seed=23, specials={(0, 0, 1, 0): NAN}),
    # Window (0,0): NaNs at flat 0, 8, 13 -> index 13 (the last). Window (0,1): NaNs at 5 and 15,
    # +inf between them -> 15. Window (1,0): NaN at 18 then larger values -> NaN stays, index 18.
    max_case("several NaNs per window: last NaN wins", (1, 1, 6, 6), 3, 3, seed=24, specials={
        (0, 0, 0, 0): NAN, (0, 0, 1, 2): NAN, (0, 0, 2, 1): NAN,
        (0, 0, 0, 5): NAN, (0, 0, 1, 4): INF, (0, 0, 2, 3): NAN,
        (0, 0, 3, 0): NAN, (0, 0, 3, 1): 100.0, (0, 0, 5, 2): INF}),
    max_case("NaNs in overlapping padded windows", (1, 2, 5, 5), 3, 1, 1, seed=25, specials={
        (0, 0, 1, 1): NAN, (0, 0, 1, 3): NAN, (0, 0, 3, 2): NAN, (0, 1, 0, 0): NAN, (0, 1, 4, 4): NAN,
        (0, 1, 2, 2): INF}),
    max_case("+inf ties keep the first", (1, 1, 4, 4), 2, 2, seed=26, specials={
        (0, 0, 0, 1): INF, (0, 0, 1, 0): INF, (0, 0, 2, 2): -INF, (0, 0, 3, 3): INF}),
    max_case("constant input: first real tap", (1, 2, 5, 5), 3, 2, 1, fill=2.0),
    max_case("all negative, padded: padding never wins", (1, 1, 5, 5), 3, 1, 1, fill="negative", seed=27),
    max_case("signed zeros tie: first kept", (1, 1, 4, 4), 2, 2, fill=0.0, specials={
        (0, 0, 0, 0): -0.0, (0, 0, 0, 3): -0.0, (0, 0, 1, 2): -0.0, (0, 0, 3, 0): -1.0}),
    max_case("halves, larger", (2, 4, 11, 13), 3, 2, 1, fill="halves", seed=28),
    max_case("f16 resnet-stem", (1, 2, 9, 9), 3, 2, 1, dtype="f16", fill="halves", seed=29),
    max_case("bf16 alexnet ceil", (1, 2, 14, 14), 3, 2, ceil_mode=True, dtype="bf16", seed=30),
    max_case("f16 NaN and inf", (1, 1, 6, 6), 3, 3, dtype="f16", seed=31, specials={
        (0, 0, 0, 0): NAN, (0, 0, 2, 2): NAN, (0, 0, 1, 4): INF, (0, 0, 4, 1): -INF}),
    max_case("bf16 dilated ceil", (1, 1, 9, 9), 2, 3, 1, 2, True, dtype="bf16", seed=32),
    max_case("bf16 NaN, -inf window", (1, 1, 4, 4), 2, 2, dtype="bf16", fill="neg-inf", specials={
        (0, 0, 0, 2): NAN, (0, 0, 1, 3): NAN, (0, 0, 3, 3): 1.0}),

    avg_case("vision 3x3 s2 p1", (2, 3, 9, 9), 3, 2, 1, seed=41),
    avg_case("vision 3x3 s2 p1, count_include_pad=False", (2, 3, 9, 9), 3, 2, 1,
             count_include_pad=False, seed=41),
    avg_case("stride None: W=7 drops the last column", (1, 2, 6, 7), 2, seed=42),
    avg_case("asymmetric kernel, stride, padding", (1, 2, 7, 9), (2, 3), (1, 2), (1, 1), seed=43),
    avg_case("f16 vision 5x5 s2 p2", (1, 2, 12, 12), 5, 2, 2, dtype="f16", seed=44),
    avg_case("ceil, exclude pad, divisor 7", (1, 2, 11, 13), (3, 5), 2, (1, 2), True, False, 7, seed=45),
    avg_case("bf16 ceil, exclude pad, divisor 7", (1, 2, 11, 13), (3, 5), 2, (1, 2), True, False, 7,
             dtype="bf16", seed=45),
    avg_case("bf16 ceil, exclude pad", (1, 2, 11, 13), (3, 5), 2, (1, 2), True, False, dtype="bf16", seed=45),
    # The spec's 1-D examples (section 4.1), on the W axis.
    avg_case("spec: ceil overhang not counted, include pad", (1, 1, 1, 6), (1, 3), (1, 2), (0, 1), True,
             fill="ones"),
    avg_case("spec: ceil overhang, exclude pad", (1, 1, 1, 6), (1, 3), (1, 2), (0, 1), True, False, fill="ones"),
    avg_case("spec: ceil on 0..4, last divisor 1", (1, 1, 1, 5), (1, 2), (1, 2), 0, True, fill="arange"),
    avg_case("ceil output removed by (O-1)s >= I+p", (1, 1, 5, 5), 3, 3, 1, True, seed=46),
    avg_case("ceil overhang on both axes, include pad", (1, 2, 6, 7), 3, 2, 1, True, seed=47),
    avg_case("divisor_override 3", (1, 2, 5, 5), 3, 2, 1, divisor_override=3, seed=48),
    avg_case("divisor_override -2, exclude pad", (1, 2, 5, 5), 3, 1, 1, False, False, -2, seed=49),
    avg_case("divisor_override 4 with ceil: one real tap still divides by 4", (1, 1, 5, 5), 2, 2,
             ceil_mode=True, divisor_override=4, seed=50),
    avg_case("bf16 divisor_override -7, ceil", (1, 1, 6, 6), 3, 2, 1, True, dtype="bf16",
             divisor_override=-7, seed=51),
    avg_case("unbatched 3-D input", (3, 6, 6), 2, 2, seed=52),
    avg_case("unbatched 3-D, padded, exclude pad", (2, 5, 7), 3, 2, 1, count_include_pad=False, seed=53),
    avg_case("all dims 1", (1, 1, 1, 1), 1, seed=54),
    avg_case("H=1, padded on W", (1, 3, 1, 7), (1, 3), (1, 2), (0, 1), seed=55),
    avg_case("global window", (2, 3, 5, 5), 5, seed=56),
    avg_case("kernel 1 stride 2 subsamples", (1, 1, 5, 5), 1, 2, seed=57),
    # Windows: {inf} -> inf, {inf, -inf} -> nan, {nan} -> nan, {-inf} -> -inf.
    avg_case("non-finite inputs", (1, 1, 4, 4), 2, 2, seed=58, specials={
        (0, 0, 0, 0): INF, (0, 0, 0, 2): INF, (0, 0, 1, 3): -INF, (0, 0, 2, 1): NAN, (0, 0, 3, 3): -INF}),
    avg_case("f16 exclude pad", (1, 2, 9, 9), 3, 2, 1, count_include_pad=False, dtype="f16", fill="halves",
             seed=59),
    avg_case("halves, larger", (2, 4, 11, 13), 3, 2, 1, fill="halves", seed=60),
]


def has_window_without_real_tap(input_size, kernel, stride, padding, dilation, output_size):
    """The spec (4.0) rejects dilated windows whose taps all fall in the padding; PyTorch allows them."""
    return any(
        not any(0 <= o * stride - padding + t * dilation < input_size for t in range(kernel))
        for o in range(output_size))


def per_axis(value, axis):
    return value[axis] if isinstance(value, (list, tuple)) else value


def shape_case(op, input_shape, params, device):
    """Output shape of one parameter set, or PyTorch's error message when it rejects it."""
    case = {"op": op, "input_shape": list(input_shape), "params": params}
    try:
        y, _ = run_pool(op, torch.zeros(input_shape, device=device), params)
    except (RuntimeError, ValueError) as error:
        case["output_shape"] = None
        case["torch_error"] = str(error).strip().splitlines()[0]
        return case
    case["output_shape"] = list(y.shape)
    spatial_in, spatial_out = input_shape[-2:], list(y.shape)[-2:]
    case["has_window_without_real_tap"] = any(
        has_window_without_real_tap(
            spatial_in[axis], per_axis(params["kernel_size"], axis),
            per_axis(params["stride"] if params["stride"] is not None else params["kernel_size"], axis),
            per_axis(params["padding"], axis), per_axis(params.get("dilation", 1), axis), spatial_out[axis])
        for axis in range(2))
    return case


HAND_SHAPE_CASES = [
    ("max_pool2d", (1, 1, 5, 5), max_params(3, 1, 2)),             # padding > kernel // 2
    ("max_pool2d", (1, 1, 5, 5), max_params(3, 1, 1, 3)),          # padding <= k // 2 < dilated extent // 2
    ("max_pool2d", (1, 1, 6, 6), max_params(2, 1, 2, 3)),          # k // 2 < padding <= dilated extent // 2
    ("max_pool2d", (1, 1, 2, 2), max_params(3)),                   # output size 0
    ("max_pool2d", (1, 1, 2, 2), max_params(2, 1, 1, 3)),          # a window of padding only
    ("max_pool2d", (1, 1, 4, 4), max_params(0, 1)),                # kernel 0
    ("max_pool2d", (1, 1, 4, 4), max_params(2, 0)),                # stride 0
    ("max_pool2d", (1, 1, 4, 4), max_params(2, 1, 0, 0)),          # dilation 0
    ("max_pool2d", (1, 1, 4, 4), max_params(2, 1, -1)),            # negative padding
    ("max_pool2d", (0, 2, 5, 5), max_params(2)),                   # empty batch
    ("max_pool2d", (1, 0, 5, 5), max_params(2)),                   # no channels
    ("max_pool2d", (2, 5, 5, 5, 5), max_params(2)),                # rank 5
    ("avg_pool2d", (1, 1, 5, 5), avg_params(3, 1, 2)),             # padding > kernel // 2
    ("avg_pool2d", (1, 1, 2, 2), avg_params(3)),                   # output size 0
    ("avg_pool2d", (1, 1, 4, 4), avg_params(2, divisor_override=0)),  # divisor 0
    ("avg_pool2d", (1, 1, 4, 4), avg_params(0, 1)),                # kernel 0
    ("avg_pool2d", (1, 1, 4, 4), avg_params(2, 0)),                # stride 0
    ("avg_pool2d", (0, 2, 5, 5), avg_params(2)),                   # empty batch
    ("avg_pool2d", (2, 5, 5, 5, 5), avg_params(2)),                # rank 5
]


def random_shape_cases(count, seed):
    """Random per-axis parameter sets, mostly valid, some rejected (padding > k // 2, O <= 0)."""
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        op = "max_pool2d" if index % 2 == 0 else "avg_pool2d"
        kernel = [rng.randint(1, 4) for _ in range(2)]
        stride = None if rng.random() < 0.2 else [rng.randint(1, 3) for _ in range(2)]
        # Mostly legal padding (<= k // 2); about one axis in ten gets one more, which PyTorch rejects.
        padding = [rng.randint(0, k // 2 + (rng.random() < 0.1)) for k in kernel]
        ceil_mode = rng.random() < 0.5
        input_shape = (1, 2, rng.randint(1, 9), rng.randint(1, 9))
        if op == "max_pool2d":
            dilation = [rng.choice((1, 1, 2, 3)) for _ in range(2)]
            params = max_params(kernel, stride, padding, dilation, ceil_mode)
        else:
            params = avg_params(kernel, stride, padding, ceil_mode, rng.random() < 0.5)
        cases.append((op, input_shape, params))
    return cases


def write_golden(path, header, cases, shape_cases):
    """One case per line: small diffs, and the file stays readable without a JSON viewer."""
    lines = ["{"]
    lines += [f" {json.dumps(key)}: {json.dumps(value)}," for key, value in header.items()]
    lines.append(' "cases": [')
    lines.append(",\n".join("  " + json.dumps(case) for case in cases))
    lines.append(" ],")
    lines.append(' "shape_cases": [')
    lines.append(",\n".join("  " + json.dumps(case) for case in shape_cases))
    lines.append(" ]")
    lines.append("}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=DEFAULT_OUTPUT)
    args = parser.parse_args()

    if torch.cuda.is_available():
        device = "cuda"
        device_name = f"cuda: {torch.cuda.get_device_name()}"
    else:
        device = "cpu"
        device_name = "cpu"
        print("warning: no CUDA device; the spec follows PyTorch's CUDA kernels (NaN index rule)")

    header = {
        "generator": "tests/golden/make_golden.py",
        "torch_version": torch.__version__,
        "device": device_name,
        "encoding": "flat row-major values; non-finite values as the strings nan, inf, -inf",
    }
    cases = [value_case(device=device, **case) for case in VALUE_CASES]
    shape_cases = [shape_case(op, shape, params, device)
                   for op, shape, params in HAND_SHAPE_CASES + random_shape_cases(160, seed=2024)]
    write_golden(args.output, header, cases, shape_cases)
    print(f"wrote {len(cases)} value cases and {len(shape_cases)} shape cases to {args.output}")


if __name__ == "__main__":
    main()
