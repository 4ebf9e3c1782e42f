#!/usr/bin/env python3
"""Writes tests/golden/pool2d.json and pool_family.json: PyTorch's pooling ops on small edge cases.

Run on the GPU machine (the spec pins PyTorch's CUDA behaviour, e.g. which NaN index max-pool
reports): python3 tests/golden/make_golden.py [--output PATH] [--family-output PATH]

pool2d.json holds F.max_pool2d / F.avg_pool2d. pool_family.json holds the rest of the family:
F.max_pool1d / F.max_pool3d / F.adaptive_max_pool2d (with their indices), F.avg_pool1d /
F.avg_pool3d / F.adaptive_avg_pool2d, and mean pooling, which has no PyTorch API: its outputs come
from the spec 4.6 formula in float64; its params hold chunk_size and, in ragged mode, the offsets
and (sequence, chunk) indices (null in uniform mode). Adaptive params hold only output_size.

Inputs are small integers or halves, exactly representable in f32, f16 and bf16, so every input is
the same number in every dtype and max-pool outputs can be compared exactly. Values are flat,
row-major lists; non-finite values are the strings "nan", "inf" and "-inf", since JSON has none.
"cases" hold values; "shape_cases" hold only the output shape (or PyTorch's error) of one
parameter set, to pin down the output-size rule and its validation. Shape cases that PyTorch accepts
but solops rejects are flagged: has_window_without_real_tap (sliding pools, spec 4.0) and
has_empty_non_batch_axis (adaptive pools answering with an empty output: output_size 0, which spec
4.4 rejects, and zero channels, which PyTorch's adaptive_avg_pool2d accepts but its
adaptive_max_pool2d and every sliding-window pool reject; solops rejects both for every pool).
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
GOLDEN_DIR = os.path.dirname(os.path.abspath(__file__))


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


def avg1d_params(kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """F.avg_pool1d takes no divisor_override."""
    return {"kernel_size": kernel_size, "stride": stride, "padding": padding, "ceil_mode": ceil_mode,
            "count_include_pad": count_include_pad}


def adaptive_params(output_size):
    return {"output_size": output_size}


def mean_params(chunk_size, seq_lens=None):
    """Uniform mode without seq_lens; else ragged metadata enumerated as spec 4.6 (and
    prepare_chunk_indices) does: every chunk of every sequence, sequence-major, none for empty ones."""
    if seq_lens is None:
        return {"chunk_size": chunk_size, "offsets": None, "indices": None}
    offsets = [0]
    indices = []
    for sequence, length in enumerate(seq_lens):
        offsets.append(offsets[-1] + length)
        indices += [[sequence, chunk] for chunk in range(-(-length // chunk_size))]
    return {"chunk_size": chunk_size, "offsets": offsets, "indices": indices}


def mean_pooling(x, chunk_size, offsets, indices):
    """Spec 4.6 has no PyTorch API: each chunk's tokens summed in float64 and divided by their count."""
    seq_len = x.shape[1]
    if offsets is None:
        spans = [(start, min(start + chunk_size, seq_len)) for start in range(0, seq_len, chunk_size)]
    else:
        spans = [(offsets[sequence] + chunk * chunk_size,
                  min(offsets[sequence] + (chunk + 1) * chunk_size, offsets[sequence + 1]))
                 for sequence, chunk in indices]
    return torch.stack([x[:, start:end].double().mean(1) for start, end in spans], 1).to(x.dtype)


def run_pool(op, x, params):
    """(output, indices or None): max pools always return their indices."""
    if op in ("max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool2d"):
        return getattr(F, op)(x, **params, return_indices=True)
    if op == "mean_pooling":
        return mean_pooling(x, **params), None
    if op == "avg_pool3d" and x.device.type == "cpu" and x.dtype != torch.float32:
        # CPU PyTorch has no half-type avg_pool3d; CUDA's sums in f32 and rounds once, as this does.
        return F.avg_pool3d(x.float(), **params).to(x.dtype), None
    return getattr(F, op)(x, **params), None


def value_case(name, op, shape, params, dtype="f32", fill="ints", specials=None, seed=0, device="cpu"):
    x = make_input(shape, fill, seed, specials or {}).to(TORCH_DTYPES[dtype])
    y, indices = run_pool(op, x.to(device), params)
    case = {"name": name, "op": op, "dtype": dtype, "input_shape": list(shape), "params": params,
            "input": flat_values(x), "output_shape": list(y.shape), "output": flat_values(y.cpu())}
    if indices is not None:
        case["indices"] = indices.cpu().flatten().tolist()
    return case


def case_builder(op, make_params):
    """A function that describes one value case of op; its positional and extra keyword arguments
    are make_params'."""
    def build(name, shape, *args, dtype="f32", fill="ints", specials=None, seed=0, **kwargs):
        return dict(name=name, op=op, shape=shape, params=make_params(*args, **kwargs),
                    dtype=dtype, fill=fill, specials=specials, seed=seed)
    return build


max_case = case_builder("max_pool2d", max_params)
avg_case = case_builder("avg_pool2d", avg_params)
max1d_case = case_builder("max_pool1d", max_params)
avg1d_case = case_builder("avg_pool1d", avg1d_params)
max3d_case = case_builder("max_pool3d", max_params)
avg3d_case = case_builder("avg_pool3d", avg_params)
adaptive_max_case = case_builder("adaptive_max_pool2d", adaptive_params)
adaptive_avg_case = case_builder("adaptive_avg_pool2d", adaptive_params)
mean_case = case_builder("mean_pooling", mean_params)


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

# The rest of the pooling family (pool_family.json), same window arithmetic. 1-D and 3-D inputs are
# [N, C, L] and [N, C, D, H, W] (or unbatched); 3-D indices are (d * H + h) * W + w.
FAMILY_VALUE_CASES = [
    max1d_case("k3 s2 p1", (2, 3, 11), 3, 2, 1, seed=101),
    max1d_case("stride None: L=7 drops the last element", (1, 2, 7), 2, seed=102),
    max1d_case("dilation 2, padded", (1, 2, 10), 3, 1, 1, 2, seed=103),
    # e=4, ceil(9/2)+1 = 6 outputs (floor 5); the last window's taps 9 and 12 hold one real element.
    max1d_case("dilation 3 with ceil: last window has one real tap", (1, 1, 11), 2, 2, 1, 3, True, seed=104),
    max1d_case("ceil adds an output (L=5 k2 s2)", (1, 1, 5), 2, 2, ceil_mode=True, seed=105),
    # ceil(4/3)+1 = 3, but the third window would start at 5 = L, wholly in the right padding.
    max1d_case("ceil output removed by (O-1)s >= L+p", (1, 1, 5), 3, 3, 1, ceil_mode=True, seed=106),
    max1d_case("ceil: last window overhangs the padding", (1, 2, 6), 3, 2, 1, ceil_mode=True, seed=107),
    max1d_case("unbatched 2-D input", (3, 8), 2, 2, seed=108),
    max1d_case("unbatched 2-D, padded, ceil", (2, 7), 3, 2, 1, ceil_mode=True, seed=109),
    max1d_case("all dims 1", (1, 1, 1), 1, seed=110),
    max1d_case("global window", (2, 2, 9), 9, seed=111),
    # The spec's example (section 4.3): indices [0, 0, 1, 2].
    max1d_case("all -inf, padded: first real tap", (1, 1, 4), 3, 1, 1, fill="neg-inf"),
    # Window 0: NaNs at 0 and 2 -> 2. Window 1: NaN at 3, then +inf -> NaN, 3. Window 2: +inf, NaN at 8 -> 8.
    max1d_case("several NaNs per window: last NaN wins", (1, 1, 9), 3, 3, seed=112, specials={
        (0, 0, 0): NAN, (0, 0, 2): NAN, (0, 0, 3): NAN, (0, 0, 4): INF, (0, 0, 6): INF, (0, 0, 8): NAN}),
    max1d_case("NaNs in overlapping padded windows", (1, 2, 8), 3, 1, 1, seed=113, specials={
        (0, 0, 2): NAN, (0, 0, 4): NAN, (0, 1, 0): NAN, (0, 1, 7): NAN, (0, 1, 3): INF}),
    max1d_case("+inf ties keep the first", (1, 1, 8), 2, 2, seed=114, specials={
        (0, 0, 0): INF, (0, 0, 1): INF, (0, 0, 2): -INF, (0, 0, 3): -INF, (0, 0, 5): INF, (0, 0, 7): INF}),
    max1d_case("constant input: first real tap", (1, 2, 7), 3, 2, 1, fill=2.0),
    max1d_case("all negative, padded: padding never wins", (1, 1, 7), 3, 1, 1, fill="negative", seed=115),
    max1d_case("signed zeros tie: first kept", (1, 1, 6), 2, 2, fill=0.0, specials={
        (0, 0, 0): -0.0, (0, 0, 3): -0.0, (0, 0, 4): -1.0}),
    max1d_case("f16 k5 s2 p2 d2 ceil", (1, 2, 21), 5, 2, 2, 2, True, dtype="f16", fill="halves", seed=116),
    max1d_case("f16 NaN and inf", (1, 1, 9), 3, 3, dtype="f16", seed=117, specials={
        (0, 0, 0): NAN, (0, 0, 1): NAN, (0, 0, 4): INF, (0, 0, 7): -INF}),
    max1d_case("bf16 k3 s3", (2, 2, 12), 3, 3, dtype="bf16", seed=118),
    max1d_case("bf16 NaN, -inf windows", (1, 1, 8), 2, 2, dtype="bf16", fill="neg-inf", specials={
        (0, 0, 2): NAN, (0, 0, 3): NAN, (0, 0, 7): 1.0}),

    avg1d_case("k3 s2 p1", (2, 3, 11), 3, 2, 1, seed=121),
    avg1d_case("k3 s2 p1, count_include_pad=False", (2, 3, 11), 3, 2, 1, count_include_pad=False, seed=121),
    avg1d_case("stride None: L=7 drops the last element", (1, 2, 7), 2, seed=122),
    # The spec's 1-D examples (section 4.1).
    avg1d_case("spec: ceil overhang not counted, include pad", (1, 1, 6), 3, 2, 1, True, fill="ones"),
    avg1d_case("spec: ceil overhang, exclude pad", (1, 1, 6), 3, 2, 1, True, False, fill="ones"),
    avg1d_case("spec: ceil on 0..4, last divisor 1", (1, 1, 5), 2, 2, 0, True, fill="arange"),
    avg1d_case("ceil output removed by (O-1)s >= L+p", (1, 1, 5), 3, 3, 1, True, seed=123),
    avg1d_case("unbatched 2-D input", (3, 8), 2, 2, seed=124),
    avg1d_case("unbatched 2-D, padded, exclude pad", (2, 7), 3, 2, 1, count_include_pad=False, seed=125),
    avg1d_case("all dims 1", (1, 1, 1), 1, seed=126),
    avg1d_case("global window", (2, 3, 9), 9, seed=127),
    avg1d_case("kernel 1 stride 2 subsamples", (1, 1, 9), 1, 2, seed=128),
    # Windows: {inf} -> inf, {inf, -inf} -> nan, {nan} -> nan, {-inf} -> -inf.
    avg1d_case("non-finite inputs", (1, 1, 8), 2, 2, seed=129, specials={
        (0, 0, 0): INF, (0, 0, 2): INF, (0, 0, 3): -INF, (0, 0, 4): NAN, (0, 0, 7): -INF}),
    avg1d_case("f16 k5 s4 p2", (1, 2, 21), 5, 4, 2, dtype="f16", fill="halves", seed=130),
    avg1d_case("bf16 k4 s2 p1 ceil, exclude pad", (1, 2, 20), 4, 2, 1, True, False, dtype="bf16", seed=131),

    max3d_case("2x2x2 s2", (1, 2, 4, 4, 4), 2, 2, seed=141),
    max3d_case("3x3x3 s2 p1", (1, 1, 5, 5, 5), 3, 2, 1, seed=142),
    max3d_case("stride None, kernel (1,2,2): H=5 drops the last row", (1, 2, 3, 5, 6), (1, 2, 2), seed=143),
    max3d_case("asymmetric kernel, stride, padding", (1, 1, 5, 6, 7), (2, 3, 1), (1, 2, 1), (1, 1, 0),
               seed=144),
    max3d_case("dilation (2,1,3), padded", (1, 1, 5, 4, 7), 2, 1, (1, 0, 1), (2, 1, 3), seed=145),
    max3d_case("ceil adds an output on every axis", (1, 1, 5, 5, 5), 2, 2, ceil_mode=True, seed=146),
    # D: the ceil output is removed (start 4 = I+p); H: one is added, overhanging I; W: the last
    # window overhangs the padding.
    max3d_case("ceil removes on D, adds on H, overhang on W", (1, 1, 3, 6, 6), (2, 3, 3), 2, (1, 0, 1),
               ceil_mode=True, seed=147),
    max3d_case("dilated ceil: output removed on H, one real tap on W", (1, 1, 4, 5, 9), (1, 2, 2), (1, 3, 3),
               (0, 1, 1), (1, 2, 2), True, seed=148),
    max3d_case("unbatched 4-D input", (2, 4, 4, 6), 2, 2, seed=149),
    max3d_case("depth 1: a 2-D pool per slice", (1, 2, 1, 6, 6), (1, 3, 3), (1, 2, 2), (0, 1, 1), seed=150),
    max3d_case("all dims 1", (1, 1, 1, 1, 1), 1, seed=151),
    max3d_case("global window", (1, 2, 3, 4, 5), (3, 4, 5), seed=152),
    max3d_case("all -inf, padded: first real tap", (1, 1, 3, 3, 3), 3, 1, 1, fill="neg-inf"),
    # Window (0,0,0): NaNs at flat 4 and 33 -> 33. Window (0,0,1): +inf, NaN at 23, then 100 -> 23.
    # Window (0,1,1): NaN at 10, then +inf -> 10.
    max3d_case("several NaNs per window: last NaN wins", (1, 1, 3, 4, 4), (3, 2, 2), seed=153, specials={
        (0, 0, 0, 1, 0): NAN, (0, 0, 2, 0, 1): NAN,
        (0, 0, 0, 0, 2): INF, (0, 0, 1, 1, 3): NAN, (0, 0, 2, 1, 3): 100.0,
        (0, 0, 0, 2, 2): NAN, (0, 0, 1, 3, 3): INF}),
    max3d_case("+inf ties keep the first", (1, 1, 2, 4, 4), 2, 2, seed=154, specials={
        (0, 0, 0, 0, 1): INF, (0, 0, 1, 0, 0): INF, (0, 0, 0, 2, 2): -INF, (0, 0, 1, 3, 3): INF}),
    max3d_case("constant input: first real tap", (1, 1, 4, 5, 5), 3, 2, 1, fill=2.0),
    max3d_case("all negative, padded: padding never wins", (1, 1, 4, 4, 4), 3, 1, 1, fill="negative", seed=155),
    max3d_case("signed zeros tie: first kept", (1, 1, 2, 2, 4), 2, 2, fill=0.0, specials={
        (0, 0, 0, 0, 0): -0.0, (0, 0, 1, 1, 3): -0.0}),
    max3d_case("f16 3x3x3 s2 p1 ceil", (1, 1, 5, 7, 7), 3, 2, 1, ceil_mode=True, dtype="f16", fill="halves",
               seed=156),
    max3d_case("bf16 k(1,2,2) s(1,2,2)", (1, 1, 3, 6, 6), (1, 2, 2), (1, 2, 2), dtype="bf16", seed=157),
    max3d_case("bf16 NaN, -inf windows", (1, 1, 2, 4, 4), 2, 2, dtype="bf16", fill="neg-inf", specials={
        (0, 0, 0, 0, 2): NAN, (0, 0, 1, 1, 3): NAN, (0, 0, 1, 3, 3): 1.0}),

    avg3d_case("2x2x2 s2", (1, 2, 4, 4, 4), 2, 2, seed=161),
    avg3d_case("k(2,3,3) s2 p1 ceil", (1, 1, 5, 6, 7), (2, 3, 3), 2, 1, True, seed=162),
    avg3d_case("k(2,3,3) s2 p1 ceil, exclude pad", (1, 1, 5, 6, 7), (2, 3, 3), 2, 1, True, False, seed=162),
    avg3d_case("k(2,2,3) s2 p(0,1,1) divisor 7", (1, 1, 5, 6, 7), (2, 2, 3), 2, (0, 1, 1), divisor_override=7,
               seed=163),
    avg3d_case("bf16 k(2,2,3) s2 p(0,1,1) divisor 7", (1, 1, 5, 6, 7), (2, 2, 3), 2, (0, 1, 1),
               divisor_override=7, dtype="bf16", seed=163),
    avg3d_case("stride None: odd sizes drop their last element", (1, 1, 3, 5, 5), 2, seed=164),
    avg3d_case("ceil overhang on every axis, include pad", (1, 1, 6, 6, 6), 3, 2, 1, True, fill="ones"),
    avg3d_case("ceil overhang on every axis, exclude pad", (1, 1, 6, 6, 6), 3, 2, 1, True, False, fill="ones"),
    avg3d_case("divisor_override -2, exclude pad", (1, 1, 3, 4, 4), 3, 1, 1, False, False, -2, seed=165),
    avg3d_case("divisor_override 8 with ceil: one real tap still divides by 8", (1, 1, 3, 3, 3), 2, 2,
               ceil_mode=True, divisor_override=8, seed=166),
    avg3d_case("unbatched 4-D input", (2, 3, 4, 4), 2, 2, seed=167),
    avg3d_case("unbatched 4-D, padded, exclude pad", (2, 3, 5, 5), 3, 2, 1, count_include_pad=False, seed=168),
    avg3d_case("all dims 1", (1, 1, 1, 1, 1), 1, seed=169),
    avg3d_case("global window", (1, 3, 3, 4, 5), (3, 4, 5), seed=170),
    avg3d_case("depth 1: a 2-D pool per slice", (1, 2, 1, 6, 6), (1, 3, 3), (1, 2, 2), (0, 1, 1), seed=171),
    avg3d_case("kernel 1 stride 2 subsamples", (1, 1, 3, 5, 5), 1, 2, seed=172),
    avg3d_case("non-finite inputs", (1, 1, 2, 4, 4), 2, 2, seed=173, specials={
        (0, 0, 0, 0, 0): INF, (0, 0, 0, 0, 2): INF, (0, 0, 1, 1, 3): -INF, (0, 0, 1, 2, 1): NAN,
        (0, 0, 0, 3, 3): -INF}),
    avg3d_case("f16 3x3x3 s2 p1, exclude pad", (1, 1, 4, 7, 7), 3, 2, 1, count_include_pad=False, dtype="f16",
               fill="halves", seed=174),

    # Bins of an axis: [floor(o*I/O), ceil((o+1)*I/O)); 5 -> 3 gives [0,2), [1,4), [3,5).
    adaptive_avg_case("global 1x1", (2, 2, 7, 7), 1, seed=181),
    adaptive_avg_case("divisible: 12x12 -> 6x6", (1, 1, 12, 12), 6, seed=182),
    adaptive_avg_case("overlapping bins: 5x5 -> 3x3", (1, 2, 5, 5), 3, seed=183),
    adaptive_avg_case("non-divisible: 11x13 -> 7x7", (1, 1, 11, 13), 7, seed=184),
    adaptive_avg_case("output larger than input: 3x4 -> 5x7", (1, 2, 3, 4), [5, 7], seed=185),
    adaptive_avg_case("None keeps H", (1, 2, 6, 9), [None, 4], seed=186),
    adaptive_avg_case("None keeps W", (1, 2, 7, 5), [3, None], seed=187),
    adaptive_avg_case("unbatched 3-D input", (3, 6, 7), [4, 3], seed=188),
    adaptive_avg_case("1x1 input -> 3x2", (1, 2, 1, 1), [3, 2], seed=189),
    adaptive_avg_case("H=1 input", (1, 2, 1, 9), [1, 4], seed=190),
    adaptive_avg_case("arange 10x10 -> 4x4", (1, 1, 10, 10), 4, fill="arange"),
    adaptive_avg_case("non-finite inputs", (1, 1, 4, 4), 2, seed=191, specials={
        (0, 0, 0, 0): INF, (0, 0, 0, 2): INF, (0, 0, 1, 3): -INF, (0, 0, 2, 1): NAN, (0, 0, 3, 3): -INF}),
    adaptive_avg_case("f16 non-divisible: 11x13 -> 7x7", (1, 1, 11, 13), 7, dtype="f16", fill="halves", seed=192),
    adaptive_avg_case("bf16 overlapping: 9x10 -> 7x7", (1, 1, 9, 10), 7, dtype="bf16", seed=193),

    adaptive_max_case("global 1x1", (2, 2, 7, 7), 1, seed=201),
    adaptive_max_case("divisible: 8x8 -> 4x4", (1, 2, 8, 8), 4, seed=202),
    adaptive_max_case("overlapping bins: 5x5 -> 3x3", (1, 2, 5, 5), 3, seed=203),
    adaptive_max_case("non-divisible: 11x13 -> 7x7", (1, 1, 11, 13), 7, seed=204),
    adaptive_max_case("output larger than input: 3x4 -> 5x7", (1, 2, 3, 4), [5, 7], seed=205),
    adaptive_max_case("None keeps H", (1, 2, 6, 9), [None, 4], seed=206),
    adaptive_max_case("unbatched 3-D input, None keeps W", (3, 6, 7), [4, None], seed=207),
    adaptive_max_case("1x1 input -> 3x2", (1, 2, 1, 1), [3, 2], seed=208),
    # The spec's example (section 4.5): index 18.
    adaptive_max_case("spec: NaNs at (1,1) and (3,3) -> index 18", (1, 1, 5, 5), 1, seed=209, specials={
        (0, 0, 1, 1): NAN, (0, 0, 3, 3): NAN}),
    # Bin (1,1) covers rows and columns 1..3: NaNs at flat 6, 8, 16 and +inf at 12 -> 16.
    adaptive_max_case("NaNs in overlapping bins: last NaN wins", (1, 1, 5, 5), 3, seed=210, specials={
        (0, 0, 1, 1): NAN, (0, 0, 1, 3): NAN, (0, 0, 3, 1): NAN, (0, 0, 2, 2): INF}),
    adaptive_max_case("all -inf: first tap of each bin", (1, 1, 5, 5), 3, fill="neg-inf"),
    adaptive_max_case("+inf ties keep the first", (1, 1, 4, 4), 2, seed=211, specials={
        (0, 0, 0, 1): INF, (0, 0, 1, 0): INF, (0, 0, 2, 2): -INF, (0, 0, 3, 3): INF}),
    adaptive_max_case("constant input: first tap", (1, 2, 5, 7), 3, fill=2.0),
    adaptive_max_case("signed zeros tie: first kept", (1, 1, 4, 4), 2, fill=0.0, specials={
        (0, 0, 0, 0): -0.0, (0, 0, 0, 3): -0.0, (0, 0, 3, 0): -1.0}),
    adaptive_max_case("f16 NaN and inf, overlapping: 6x6 -> 4x4", (1, 1, 6, 6), 4, dtype="f16", seed=212,
                      specials={(0, 0, 0, 0): NAN, (0, 0, 2, 2): NAN, (0, 0, 1, 4): INF, (0, 0, 4, 1): -INF}),
    adaptive_max_case("bf16 overlapping: 9x10 -> 7x7", (1, 1, 9, 10), 7, dtype="bf16", seed=213),

    # x is [B, S, H, D]; chunk sizes are multiples of 32.
    mean_case("uniform: short last chunk (S=70, c=32)", (2, 70, 1, 2), 32, seed=221),
    mean_case("uniform: S a multiple of c", (1, 64, 2, 2), 32, seed=222),
    mean_case("uniform: S < c, one short chunk", (2, 5, 2, 2), 32, seed=223),
    mean_case("uniform: c=64, halves", (1, 100, 1, 2), 64, fill="halves", seed=224),
    mean_case("ragged: empty and short sequences", (2, 78, 1, 2), 32, [0, 40, 0, 5, 33], seed=225),
    mean_case("ragged: one sequence", (1, 70, 1, 2), 32, [70], seed=226),
    mean_case("ragged: empty last sequence", (1, 64, 1, 2), 32, [33, 31, 0], seed=227),
    # Chunk 0: {inf} -> inf, {inf, -inf} -> nan; chunk 1: {nan} -> nan, {-inf} -> -inf.
    mean_case("uniform: non-finite inputs", (1, 40, 1, 2), 32, seed=228, specials={
        (0, 3, 0, 0): INF, (0, 5, 0, 1): INF, (0, 9, 0, 1): -INF, (0, 35, 0, 0): NAN, (0, 33, 0, 1): -INF}),
    mean_case("f16 uniform: short last chunk", (1, 70, 1, 2), 32, dtype="f16", fill="halves", seed=229),
    mean_case("f16 ragged: empty and short sequences", (1, 78, 1, 2), 32, [0, 40, 0, 5, 33], dtype="f16",
              seed=230),
    mean_case("bf16 ragged: empty and short sequences", (1, 78, 1, 2), 32, [0, 40, 0, 5, 33], dtype="bf16",
              seed=231),
    mean_case("bf16 uniform: c=64", (1, 100, 1, 2), 64, dtype="bf16", seed=232),
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
    except (RuntimeError, ValueError, IndexError) as error:  # CUDA's max_pool3d: IndexError on a wrong rank
        case["output_shape"] = None
        case["torch_error"] = str(error).strip().splitlines()[0]
        return case
    case["output_shape"] = list(y.shape)
    if "output_size" in params:
        # PyTorch's adaptive pools return an empty output for output_size 0 (spec 4.4 wants >= 1),
        # and its adaptive_avg_pool2d for zero channels (solops wants non-batch dims non-empty).
        case["has_empty_non_batch_axis"] = 0 in case["output_shape"][-3:]
        return case
    rank = int(op[-2])  # the N of max_poolNd / avg_poolNd
    spatial_in, spatial_out = input_shape[-rank:], list(y.shape)[-rank:]
    case["has_window_without_real_tap"] = any(
        has_window_without_real_tap(
            spatial_in[axis], per_axis(params["kernel_size"], axis),
            per_axis(params["stride"] if params["stride"] is not None else params["kernel_size"], axis),
            per_axis(params["padding"], axis), per_axis(params.get("dilation", 1), axis), spatial_out[axis])
        for axis in range(rank))
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

HAND_FAMILY_SHAPE_CASES = [
    ("max_pool1d", (1, 1, 5), max_params(3, 1, 2)),                # padding > kernel // 2
    ("max_pool1d", (1, 1, 5), max_params(3, 1, 1, 3)),             # padding <= k // 2 < dilated extent // 2
    ("max_pool1d", (1, 1, 6), max_params(2, 1, 2, 3)),             # k // 2 < padding <= dilated extent // 2
    ("max_pool1d", (1, 1, 2), max_params(3)),                      # output size 0
    ("max_pool1d", (1, 1, 2), max_params(2, 1, 1, 3)),             # a window of padding only
    ("max_pool1d", (1, 1, 4), max_params(0, 1)),                   # kernel 0
    ("max_pool1d", (1, 1, 4), max_params(2, 0)),                   # stride 0
    ("max_pool1d", (1, 1, 4), max_params(2, 1, 0, 0)),             # dilation 0
    ("max_pool1d", (1, 1, 4), max_params(2, 1, -1)),               # negative padding
    ("max_pool1d", (0, 2, 5), max_params(2)),                      # empty batch
    ("max_pool1d", (1, 0, 5), max_params(2)),                      # no channels
    ("max_pool1d", (2, 0), max_params(2)),                         # unbatched, L = 0
    ("max_pool1d", (5,), max_params(2)),                           # rank 1
    ("max_pool1d", (2, 5, 5, 5), max_params(2)),                   # rank 4
    ("avg_pool1d", (1, 1, 5), avg1d_params(3, 1, 2)),              # padding > kernel // 2
    ("avg_pool1d", (1, 1, 2), avg1d_params(3)),                    # output size 0
    ("avg_pool1d", (1, 1, 4), avg1d_params(0, 1)),                 # kernel 0
    ("avg_pool1d", (1, 1, 4), avg1d_params(2, 0)),                 # stride 0
    ("avg_pool1d", (1, 1, 4), avg1d_params(2, 1, -1)),             # negative padding
    ("avg_pool1d", (0, 2, 5), avg1d_params(2)),                    # empty batch
    ("avg_pool1d", (1, 0, 5), avg1d_params(2)),                    # no channels
    ("avg_pool1d", (2, 5, 5, 5), avg1d_params(2)),                 # rank 4
    ("max_pool3d", (1, 1, 5, 5, 5), max_params(3, 1, 2)),          # padding > kernel // 2
    ("max_pool3d", (1, 1, 5, 5, 5), max_params(3, 1, 1, 3)),       # padding <= k // 2 < dilated extent // 2
    ("max_pool3d", (1, 1, 6, 6, 6), max_params(2, 1, 2, 3)),       # k // 2 < padding <= dilated extent // 2
    ("max_pool3d", (1, 1, 2, 5, 5), max_params(3)),                # output depth 0
    ("max_pool3d", (1, 1, 5, 2, 2), max_params((1, 2, 2), 1, (0, 1, 1), (1, 3, 3))),  # windows of padding only
    ("max_pool3d", (1, 1, 4, 4, 4), max_params(0, 1)),             # kernel 0
    ("max_pool3d", (1, 1, 4, 4, 4), max_params((1, 0, 2), 1)),     # kernel 0 on one axis
    ("max_pool3d", (1, 1, 4, 4, 4), max_params(2, 0)),             # stride 0
    ("max_pool3d", (1, 1, 4, 4, 4), max_params(2, 1, 0, 0)),       # dilation 0
    ("max_pool3d", (1, 1, 4, 4, 4), max_params(2, 1, -1)),         # negative padding
    ("max_pool3d", (0, 2, 5, 5, 5), max_params(2)),                # empty batch
    ("max_pool3d", (1, 0, 5, 5, 5), max_params(2)),                # no channels
    ("max_pool3d", (2, 5, 5), max_params(2)),                      # rank 3
    ("max_pool3d", (1, 2, 5, 5, 5, 5), max_params(2)),             # rank 6
    ("avg_pool3d", (1, 1, 5, 5, 5), avg_params(3, 1, 2)),          # padding > kernel // 2
    ("avg_pool3d", (1, 1, 2, 5, 5), avg_params(3)),                # output depth 0
    ("avg_pool3d", (1, 1, 4, 4, 4), avg_params(2, divisor_override=0)),  # divisor 0
    ("avg_pool3d", (1, 1, 4, 4, 4), avg_params(0, 1)),             # kernel 0
    ("avg_pool3d", (1, 1, 4, 4, 4), avg_params(2, 0)),             # stride 0
    ("avg_pool3d", (0, 2, 5, 5, 5), avg_params(2)),                # empty batch
    ("avg_pool3d", (1, 0, 5, 5, 5), avg_params(2)),                # no channels
    ("avg_pool3d", (2, 5, 5), avg_params(2)),                      # rank 3
    ("avg_pool3d", (1, 2, 5, 5, 5, 5), avg_params(2)),             # rank 6
]

# (input shape, output_size), for both adaptive pools.
ADAPTIVE_SHAPES = [
    ((1, 2, 5, 5), 0),              # output size 0
    ((1, 2, 5, 5), [0, 3]),         # output size 0 on H
    ((1, 2, 5, 5), [3, -1]),        # negative output size
    ((1, 2, 5, 5), [None, None]),
    ((2, 5, 5), [None, 2]),
    ((1, 2, 3, 4), [9, 10]),        # output larger than input
    ((0, 2, 5, 5), 2),              # empty batch
    ((1, 0, 5, 5), 2),              # no channels
    ((1, 2, 0, 5), 2),              # empty plane
    ((5, 5), 2),                    # rank 2
    ((1, 1, 2, 5, 5), 2),           # rank 5
]
HAND_FAMILY_SHAPE_CASES += [(op, shape, adaptive_params(output_size))
                            for op in ("adaptive_max_pool2d", "adaptive_avg_pool2d")
                            for shape, output_size in ADAPTIVE_SHAPES]


def random_shape_cases(count, seed, rank=2):
    """Random per-axis parameter sets of the rank-D max and avg pools, mostly valid, some rejected
    (padding > k // 2, O <= 0)."""
    rng = random.Random(seed)
    make_avg_params = avg1d_params if rank == 1 else avg_params
    cases = []
    for index in range(count):
        op = f"max_pool{rank}d" if index % 2 == 0 else f"avg_pool{rank}d"
        kernel = [rng.randint(1, 4) for _ in range(rank)]
        stride = None if rng.random() < 0.2 else [rng.randint(1, 3) for _ in range(rank)]
        # Mostly legal padding (<= k // 2); about one axis in ten gets one more, which PyTorch rejects.
        padding = [rng.randint(0, k // 2 + (rng.random() < 0.1)) for k in kernel]
        ceil_mode = rng.random() < 0.5
        input_shape = (1, 2, *[rng.randint(1, 9) for _ in range(rank)])
        if op.startswith("max"):
            dilation = [rng.choice((1, 1, 2, 3)) for _ in range(rank)]
            params = max_params(kernel, stride, padding, dilation, ceil_mode)
        else:
            params = make_avg_params(kernel, stride, padding, ceil_mode, rng.random() < 0.5)
        cases.append((op, input_shape, params))
    return cases


def random_adaptive_shape_cases(count, seed):
    """Random adaptive output sizes: None, 0 (rejected by the spec), smaller or larger than the input."""
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        op = "adaptive_max_pool2d" if index % 2 == 0 else "adaptive_avg_pool2d"
        input_shape = (1, 2, rng.randint(1, 9), rng.randint(1, 9))
        output_size = [rng.choice((None, 0, *range(1, 13))) for _ in range(2)]
        cases.append((op, input_shape, adaptive_params(output_size)))
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
    parser.add_argument("--output", default=os.path.join(GOLDEN_DIR, "pool2d.json"))
    parser.add_argument("--family-output", default=os.path.join(GOLDEN_DIR, "pool_family.json"))
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

    cases = [value_case(device=device, **case) for case in FAMILY_VALUE_CASES]
    shape_cases = [shape_case(op, shape, params, device)
                   for op, shape, params in HAND_FAMILY_SHAPE_CASES + random_shape_cases(40, seed=2025, rank=1)
                   + random_shape_cases(40, seed=2026, rank=3) + random_adaptive_shape_cases(24, seed=2027)]
    write_golden(args.family_output, header, cases, shape_cases)
    print(f"wrote {len(cases)} value cases and {len(shape_cases)} shape cases to {args.family_output}")


if __name__ == "__main__":
    main()
