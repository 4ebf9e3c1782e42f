"""solops convolution ops as PyTorch users meet them: equal (within the spec's tolerance) to
torch.nn.functional computed in float64 from the same inputs, on fixed cases and on random draws of
every op, dtype and layout (channels_last for the 2-D ops, unbatched inputs, odd sizes, groups,
strides beyond the kernel, string paddings, the depthwise causal convolution); NaN and inf
propagate; clear errors on bad input (conv_calls.py). Needs a CUDA device; skips loudly without
one."""

import random

import pytest
import torch
import torch.nn.functional as F

import solops
from conv_calls import BAD_CALLS
from support import HAS_CUDA

if not HAS_CUDA:
    pytest.skip("SKIPPED: no CUDA device on this machine; these tests need one", allow_module_level=True)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# spec §3.0 (f16, bf16) and §6.12 (full f32 against float64).
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}
RANDOM_DRAWS = 600
SPATIAL = {"conv1d": 1, "conv1d_causal": 1, "conv3d": 3}


def random_tensor(shape, dtype, seed):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=generator, device="cuda").to(dtype)


def pytorch(op, x, w, b, params):
    """The op by torch.nn.functional in float64 on the same values, rounded once to x's dtype."""
    x64, w64 = x.double(), w.double()
    b64 = None if b is None else b.double()
    params = dict(params)
    if op == "conv1d_causal":
        dilation = params.get("dilation", 1)
        dilation = dilation[0] if isinstance(dilation, (list, tuple)) else dilation
        x64 = F.pad(x64, (dilation * (w.shape[-1] - 1), 0))
        y = F.conv1d(x64, w64, b64, **params)
    else:
        y = getattr(F, f"conv{SPATIAL.get(op, 2)}d")(x64, w64, b64, **params)
        if op == "conv2d_bias_relu":
            y = F.relu(y)
    return y.to(x.dtype)


def check(op, x, w, b, params):
    got = getattr(solops, op)(x, w, b, **params)
    want = pytorch(op, x, w, b, params)
    tolerance = TOLERANCE[x.dtype]
    torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance, equal_nan=True,
                               msg=lambda m: f"{op} x {list(x.shape)} w {list(w.shape)} {params}: {m}")
    if x.dim() == 4 and not x.is_contiguous():
        assert got.is_contiguous(memory_format=torch.channels_last)
    else:
        assert got.is_contiguous()
    return got


CASES = [
    # op, input shape, weight shape, bias, params
    ("conv2d", (2, 64, 56, 56), (64, 64, 3, 3), True, dict(padding=1)),
    ("conv2d", (1, 3, 112, 112), (64, 3, 3, 3), True, dict(stride=2, padding=1)),
    ("conv2d", (1, 128, 28, 28), (128, 128, 3, 3), False, dict(stride=2, padding=1)),
    ("conv2d", (1, 128, 28, 28), (256, 4, 3, 3), False, dict(padding=1, groups=32)),
    ("conv2d", (2, 20, 13, 17), (24, 10, 2, 3), True, dict(padding="same", dilation=(2, 1), groups=2)),
    ("conv2d", (9, 9, 9), (15, 3, 3, 3), True, dict(stride=4, groups=3)),
    ("pointwise_conv2d", (1, 512, 7, 7), (2048, 512, 1, 1), True, {}),
    ("pointwise_conv2d", (2, 64, 56, 56), (256, 64, 1, 1), False, {}),
    ("depthwise_conv2d", (1, 32, 56, 56), (32, 1, 3, 3), False, dict(padding=1, groups=32)),
    ("depthwise_conv2d", (2, 8, 15, 9), (16, 1, 5, 3), True, dict(stride=(2, 1), padding=(2, 1), groups=8)),
    ("grouped_conv2d", (1, 128, 28, 28), (256, 4, 3, 3), True, dict(padding=1, groups=32)),
    ("dilated_conv2d", (1, 256, 32, 32), (64, 256, 3, 3), False, dict(padding=12, dilation=12)),
    ("conv2d_bias_relu", (2, 64, 28, 28), (64, 64, 3, 3), True, dict(padding=1)),
    ("conv2d_bias_relu", (1, 3, 31, 33), (32, 3, 5, 5), True, dict(stride=2, padding="valid")),
    ("conv1d", (1, 80, 3000), (256, 80, 3), True, dict(padding=1)),
    ("conv1d", (1, 1, 16000), (512, 1, 10), True, dict(stride=5)),
    ("conv1d", (2, 12, 101), (18, 4, 4), False, dict(padding="same", dilation=3, groups=3)),
    ("conv1d", (7, 33), (5, 7, 3), True, {}),
    ("conv3d", (1, 3, 8, 28, 28), (16, 3, 3, 3, 3), True, dict(padding=1)),
    ("conv3d", (1, 64, 8, 28, 28), (128, 2, 3, 3, 3), False, dict(padding=1, groups=32)),
    ("conv3d", (1, 32, 6, 10, 10), (32, 32, 3, 3, 3), False, dict(padding=3, dilation=3)),
    ("conv3d", (2, 4, 5, 6, 7), (8, 4, 2, 3, 2), True, dict(stride=(2, 1, 3), padding=(1, 0, 1))),
    ("conv1d_causal", (1, 128, 600), (256, 128, 10), True, {}),
    ("conv1d_causal", (1, 1, 24000), (32, 1, 7), True, {}),
    ("conv1d_causal", (2, 64, 1000), (64, 1, 4), True, dict(groups=64)),
    ("conv1d_causal", (3, 40, 77), (40, 1, 3), False, dict(groups=40)),
    ("conv1d_causal", (2, 16, 50), (32, 2, 3), True, dict(stride=2, dilation=2, groups=8)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{'x'.join(map(str, c[1]))}" for c in CASES])
def test_equals_pytorch(case, dtype):
    op, x_shape, w_shape, with_bias, params = case
    x, w = random_tensor(x_shape, dtype, 1), random_tensor(w_shape, dtype, 2)
    b = random_tensor(w_shape[:1], dtype, 3) if with_bias else None
    check(op, x, w, b, params)


def draw(rng):
    """A random valid call: op, dtype, input, weight, bias, parameters."""
    op = rng.choice(["conv1d", "conv2d", "conv2d", "conv3d", "conv2d_bias_relu", "conv1d_causal", "depthwise"])
    dtype = rng.choice(DTYPES)
    spatial = SPATIAL.get(op, 2)
    groups = rng.choice([1, 1, 1, 2, 3, 4])
    per_group_in = rng.choice([1, 2, 3, rng.randint(1, 8), rng.randint(8, 40)])
    per_group_out = rng.choice([1, rng.randint(1, 8), rng.randint(8, 40), rng.randint(16, 80)])
    if op == "depthwise":  # conv2d or conv1d_causal with one input channel a group
        op = rng.choice(["conv2d", "conv1d_causal"])
        spatial = SPATIAL.get(op, 2)
        groups, per_group_in, per_group_out = rng.randint(1, 40), 1, rng.choice([1, 1, 2])
    kernel = [rng.randint(1, 5) for _ in range(spatial)]
    dilation = [rng.choice([1, 1, 2, 3]) for _ in range(spatial)]
    stride = [rng.choice([1, 1, 2, 3, 6]) for _ in range(spatial)]
    mode = rng.choice(["explicit", "explicit", "valid", "same"])
    if op == "conv1d_causal":
        mode = "causal"
    if mode == "same":
        stride = [1] * spatial
    padding = [rng.randint(0, 3) for _ in range(spatial)] if mode == "explicit" else mode
    largest = {1: 300, 2: 40, 3: 12}[spatial]
    sizes = []
    for a in range(spatial):
        reach = dilation[a] * (kernel[a] - 1) + 1
        low = reach - (2 * padding[a] if mode == "explicit" else 0) if mode not in ("same", "causal") else 1
        sizes.append(rng.randint(max(1, low), max(low, 1) + largest))
    batch = [rng.randint(1, 3)] if rng.random() < 0.85 else []
    seed = rng.randrange(2**30)
    x = random_tensor([*batch, groups * per_group_in, *sizes], dtype, seed)
    w = random_tensor([groups * per_group_out, per_group_in, *kernel], dtype, seed + 1)
    with_bias = op == "conv2d_bias_relu" or rng.random() < 0.5
    b = random_tensor([groups * per_group_out], dtype, seed + 2) if with_bias else None
    if spatial == 2 and x.dim() == 4 and rng.random() < 0.3:
        x = x.to(memory_format=torch.channels_last)
        if rng.random() < 0.5:
            w = w.to(memory_format=torch.channels_last)
    params = dict(stride=stride, dilation=dilation, groups=groups)
    if op != "conv1d_causal":
        params["padding"] = padding
    return op, x, w, b, params


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
def test_random_calls_equal_pytorch():
    rng = random.Random(0)
    for _ in range(RANDOM_DRAWS):
        check(*draw(rng))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_layout", [torch.contiguous_format, torch.channels_last])
def test_channels_last_equals_pytorch(dtype, weight_layout):
    for x_shape, w_shape, params in (((2, 64, 28, 28), (128, 64, 3, 3), dict(padding=1)),
                                     ((1, 3, 57, 31), (32, 3, 3, 3), dict(stride=2, padding=1)),
                                     ((2, 32, 14, 14), (32, 1, 3, 3), dict(padding=1, groups=32)),
                                     ((1, 256, 7, 7), (512, 256, 1, 1), {})):
        x = random_tensor(x_shape, dtype, 4).to(memory_format=torch.channels_last)
        w = random_tensor(w_shape, dtype, 5).to(memory_format=weight_layout)
        b = random_tensor(w_shape[:1], dtype, 6)
        check("conv2d", x, w, b, params)
        check("conv2d_bias_relu", x, w, b, params)


def offset_view(t, offset):
    """t's values in a tensor `offset` elements into its storage: its rows lose their alignment."""
    return torch.empty(t.numel() + offset, dtype=t.dtype, device="cuda")[offset:].view(t.shape).copy_(t)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("offset", [1, 4, 7])
def test_implicit_gemm_misaligned_views_equal_pytorch(dtype, offset):
    # The implicit GEMM's runs of x and of the weight at every misalignment: 3x3 with W a multiple of
    # 8 and not, 1x1 over planes of 49 and 196, 1-D of odd length, stride 2, K = 27.
    for op, x_shape, w_shape, params in (("conv2d", (2, 24, 16, 56), (32, 24, 3, 3), dict(padding=1)),
                                         ("conv2d", (1, 20, 13, 57), (48, 20, 3, 3), dict(padding=1)),
                                         ("pointwise_conv2d", (2, 64, 14, 14), (96, 64, 1, 1), {}),
                                         ("pointwise_conv2d", (1, 72, 7, 7), (64, 72, 1, 1), {}),
                                         ("conv1d", (2, 40, 301), (64, 40, 3), dict(padding=1)),
                                         ("conv2d", (1, 24, 28, 56), (32, 24, 3, 3), dict(stride=2, padding=1)),
                                         ("conv2d_bias_relu", (1, 3, 33, 48), (32, 3, 3, 3), dict(padding=1))):
        x = offset_view(random_tensor(x_shape, dtype, 10), offset)
        w = offset_view(random_tensor(w_shape, dtype, 11), offset % 4)
        b = random_tensor(w_shape[:1], dtype, 12)
        check(op, x, w, b, params)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("taps", [1, 2, 3, 4])
def test_depthwise_causal_equals_pytorch(dtype, taps):
    for shape in ((2, 64, 4096), (1, 5, 3), (3, 48, 1001), (17, 9)):
        channels = shape[-2]
        x = random_tensor(shape, dtype, 7)
        w = random_tensor((channels, 1, taps), dtype, 8)
        b = random_tensor((channels,), dtype, 9)
        check("conv1d_causal", x, w, b, dict(groups=channels))
        # An odd offset: the rows no longer start on 16-byte boundaries.
        check("conv1d_causal", offset_view(x, 1), w, None, dict(groups=channels))


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_inf_propagate(dtype):
    x = random_tensor((1, 16, 12, 12), dtype, 10)
    x[0, 3, 5, 5] = float("nan")
    x[0, 7, 0, 11] = float("inf")
    w = random_tensor((32, 16, 3, 3), dtype, 11)
    b = random_tensor((32,), dtype, 12)
    got = check("conv2d", x, w, b, dict(padding=1))
    assert got[0, :, 4:7, 4:7].isnan().all() and not got[0, :, 8:, :8].isnan().any()
    check("conv2d_bias_relu", x, w, b, dict(padding=1))


def test_empty_batch():
    x = torch.empty(0, 4, 9, 9, device="cuda", dtype=torch.float16)
    w = random_tensor((8, 4, 3, 3), torch.float16, 13)
    assert solops.conv2d(x, w, padding=1).shape == (0, 8, 9, 9)


@pytest.mark.parametrize("call, fragment", BAD_CALLS, ids=[fragment for _, fragment in BAD_CALLS])
def test_bad_calls_raise_with_the_rule(call, fragment):
    with pytest.raises(RuntimeError) as error:
        call()
    assert fragment in str(error.value)
