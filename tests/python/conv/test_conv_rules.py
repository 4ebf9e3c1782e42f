"""The convolution ops' rules on the CPU, as torch.compile meets them: the Python fakes against the
C++ shape rules on thousands of random calls, accepted and rejected alike, message for message;
every bad call of conv_calls.py refused at trace time; the CPU references against PyTorch's CPU
convolution on random shapes (odd sizes, C_in 1 to 3, 1 to 8 channels a group, strides larger than
the kernel, unbatched and channels_last inputs); the cost model."""

import random

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import solops
from conv_calls import BAD_CALLS
from support import assert_fakes_agree_with_the_cpp_shape_rules

DRAWS = 4000
REFERENCE_DRAWS = 300
SPATIAL = {"conv1d": 1, "conv1d_causal": 1, "conv3d": 3}
OPS_2D = ("conv2d", "pointwise_conv2d", "depthwise_conv2d", "grouped_conv2d", "dilated_conv2d", "conv2d_bias_relu")


def draw_call(rng):
    """A random call (op name, overload, input shape, weight shape, bias shape or None, arguments):
    mostly valid, each rule broken now and then."""
    op = rng.choice(["conv1d", "conv3d", "conv1d_causal", *OPS_2D, "conv2d", "conv2d"])
    spatial = SPATIAL.get(op, 2)
    groups = rng.choice([1, 1, 2, 3, 4]) if rng.random() < 0.95 else rng.choice([0, -1, 5])
    per_group_in = rng.randint(1, 4)
    channels = groups * per_group_in if rng.random() < 0.9 and groups > 0 else rng.randint(1, 9)
    if op == "depthwise_conv2d" and rng.random() < 0.8:
        groups, per_group_in, channels = channels, 1, channels
    out_channels = max(groups, 1) * rng.randint(1, 3) if rng.random() < 0.93 else rng.randint(1, 7)
    weight_in = per_group_in if rng.random() < 0.95 else rng.randint(1, 5)
    kernel = [rng.randint(1, 4) for _ in range(spatial)]
    if op == "pointwise_conv2d" and rng.random() < 0.8:
        kernel = [1, 1]
    batch = [rng.randint(0, 3)] if rng.random() < 0.8 else []
    sizes = [rng.randint(1, 13) for _ in range(spatial)]
    if rng.random() < 0.02:
        sizes[-1] = rng.choice([2**31, 2**31 - 1, 70000])
    input_shape = [*batch, channels, *sizes]
    if rng.random() < 0.03:
        input_shape = input_shape[1:] if rng.random() < 0.5 else [2, *input_shape]
    weight_shape = [out_channels, weight_in, *kernel]
    if rng.random() < 0.03:
        weight_shape = weight_shape[:-1]
    if rng.random() < 0.02:
        weight_shape[rng.randrange(len(weight_shape))] = 0
    bias = None
    if op == "conv2d_bias_relu" or rng.random() < 0.5:
        bias = [out_channels] if rng.random() < 0.95 else [out_channels + 1]
        if op == "conv2d_bias_relu" and rng.random() < 0.05:
            bias = None

    def per_axis(low, high):
        count = rng.choice([1, spatial, spatial]) if rng.random() < 0.97 else spatial + 1
        return [rng.randint(low if rng.random() < 0.96 else low - 1, high) for _ in range(count)]

    stride = per_axis(1, 4)
    dilation = per_axis(1, 3)
    if op == "dilated_conv2d" and rng.random() < 0.7:
        dilation = [rng.randint(1, 3), 2]
    if op == "conv1d_causal":
        return op, "default", input_shape, weight_shape, bias, (stride, dilation, groups)
    if rng.random() < 0.3:
        padding = rng.choice(["valid", "same", "same", "full"])
        return op, "padding", input_shape, weight_shape, bias, (stride, padding, dilation, groups)
    padding = per_axis(0, 3)
    return op, "default", input_shape, weight_shape, bias, (stride, padding, dilation, groups)


def test_fakes_agree_with_the_cpp_shape_rules_on_random_calls():
    rng = random.Random(0)

    def draw():
        name, overload, input_shape, weight_shape, bias_shape, args = draw_call(rng)
        tensors = [torch.empty(shape, dtype=torch.float16, device="meta") for shape in (input_shape, weight_shape)]
        tensors.append(None if bias_shape is None else torch.empty(bias_shape, dtype=torch.float16, device="meta"))
        return f"{name}.{overload}", (*tensors, *args)

    assert_fakes_agree_with_the_cpp_shape_rules(draw, DRAWS)


def test_channels_last_outputs_agree_with_the_cpp_binding():
    x = torch.empty(2, 5, 7, 9, dtype=torch.float16, device="meta").to(memory_format=torch.channels_last)
    w = torch.empty(6, 5, 3, 3, dtype=torch.float16, device="meta")
    fake = solops.conv2d(x, w, padding=1)
    with solops.reference.mode():
        cpp = solops.conv2d(x, w, padding=1)
    assert fake.shape == cpp.shape == (2, 6, 7, 9)
    assert fake.stride() == cpp.stride() == torch.empty(2, 6, 7, 9).to(memory_format=torch.channels_last).stride()
    assert solops.conv2d(x.contiguous(), w, padding=1).is_contiguous()


@pytest.mark.parametrize("call, fragment", BAD_CALLS, ids=[fragment for _, fragment in BAD_CALLS])
def test_bad_calls_are_refused_at_trace_time(call, fragment):
    with pytest.raises(RuntimeError) as error, FakeTensorMode():
        call()
    assert fragment in str(error.value)


# ---- the references against PyTorch ----------------------------------------------------------

def draw_reference_call(rng):
    """A valid random call of conv1d/2d/3d: odd sizes, 1 to 3 input channels or 1 to 8 a group,
    strides beyond the kernel, string paddings, unbatched inputs."""
    spatial = rng.choice([1, 2, 2, 3])
    groups = rng.choice([1, 1, 2, 3])
    per_group_in = rng.choice([1, 2, 3, rng.randint(1, 8)])
    per_group_out = rng.randint(1, 8)
    kernel = [rng.randint(1, 4) for _ in range(spatial)]
    dilation = [rng.randint(1, 3) for _ in range(spatial)]
    mode = rng.choice(["explicit", "explicit", "valid", "same"])
    stride = [1] * spatial if mode == "same" else [rng.randint(1, 5) for _ in range(spatial)]
    padding = [rng.randint(0, 3) for _ in range(spatial)] if mode == "explicit" else mode
    sizes = []
    for a in range(spatial):
        reach = dilation[a] * (kernel[a] - 1) + 1
        sizes.append(rng.randint(max(1, reach - (2 * padding[a] if mode == "explicit" else 0)), reach + 9))
    batch = [rng.randint(1, 3)] if rng.random() < 0.8 else []
    generator = torch.Generator().manual_seed(rng.randrange(9999))
    x = torch.randn([*batch, groups * per_group_in, *sizes], generator=generator)
    w = torch.randn([groups * per_group_out, per_group_in, *kernel])
    b = torch.randn([groups * per_group_out]) if rng.random() < 0.5 else None
    return spatial, x, w, b, dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
def test_references_are_pytorch_on_the_cpu_on_random_calls():
    rng = random.Random(1)
    torch.manual_seed(1)
    for _ in range(REFERENCE_DRAWS):
        spatial, x, w, b, params = draw_reference_call(rng)
        function = getattr(solops, f"conv{spatial}d")
        got = solops.reference.run(function, x, w, b, **params)
        want = getattr(F, f"conv{spatial}d")(x.double(), w.double(), None if b is None else b.double(), **params)
        torch.testing.assert_close(got, want.float(), rtol=1e-6, atol=1e-6, msg=lambda m: f"{params} {m}")


@pytest.mark.parametrize("dtype, tolerance", [(torch.float16, 1e-3), (torch.bfloat16, 1.6e-2)])
def test_references_round_once_to_half_dtypes(dtype, tolerance):
    x = torch.randn(2, 6, 11, 13).to(dtype)
    w = torch.randn(8, 3, 3, 2).to(dtype)
    b = torch.randn(8).to(dtype)
    got = solops.reference.run(solops.conv2d, x, w, b, stride=(2, 1), padding=(1, 2), groups=2)
    want = F.conv2d(x.double(), w.double(), b.double(), stride=(2, 1), padding=(1, 2), groups=2).to(dtype)
    torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance)


def test_channels_last_reference_is_the_contiguous_one():
    x = torch.randn(2, 5, 9, 7)
    w = torch.randn(4, 5, 3, 3)
    got = solops.reference.run(solops.conv2d, x.to(memory_format=torch.channels_last),
                               w.to(memory_format=torch.channels_last), padding=1)
    assert got.is_contiguous(memory_format=torch.channels_last) and not got.is_contiguous()
    torch.testing.assert_close(got, solops.reference.run(solops.conv2d, x, w, padding=1), rtol=0, atol=0)


def test_bias_relu_keeps_nan_and_zeroes_negatives():
    x = torch.randn(1, 3, 6, 6)
    x[0, 0, 2, 2] = float("nan")
    w = torch.randn(4, 3, 3, 3)
    b = torch.randn(4)
    got = solops.reference.run(solops.conv2d_bias_relu, x, w, b, padding=1)
    want = F.relu(F.conv2d(x.double(), w.double(), b.double(), padding=1)).float()
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)
    assert got.isnan().sum() == 4 * 9  # each channel's outputs whose window holds the NaN


def test_causal_reference_is_left_padding():
    x = torch.randn(2, 6, 19)
    for weight_shape, params in (((6, 1, 4), dict(groups=6)), ((4, 3, 3), dict(stride=2, dilation=3, groups=2))):
        w = torch.randn(weight_shape)
        b = torch.randn(weight_shape[0])
        got = solops.reference.run(solops.conv1d_causal, x, w, b, **params)
        pad = params.get("dilation", 1) * (weight_shape[-1] - 1)
        want = F.conv1d(F.pad(x.double(), (pad, 0)), w.double(), b.double(), **params).float()
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
        assert got.shape[-1] == (19 - 1) // params.get("stride", 1) + 1


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
def test_every_mix_of_given_and_default_arguments_matches_pytorch():
    """The public functions' defaults are F.conv2d's: PyTorch's results for every mix of given and
    default arguments."""
    x = torch.randn(2, 4, 9, 8)
    weights = {1: torch.randn(6, 4, 3, 3), 2: torch.randn(6, 2, 3, 3)}
    calls = [dict(), dict(stride=2), dict(padding=1), dict(padding=(0, 0)), dict(padding="same"),
             dict(padding="valid", dilation=2), dict(dilation=(1, 2)), dict(groups=2), dict(stride=2, groups=2),
             dict(stride=(1, 1), padding=0, dilation=1, groups=1)]
    for bias in (None, torch.randn(6)):
        for params in calls:
            w = weights[params.get("groups", 1)]
            got = solops.reference.run(solops.conv2d, x, w, bias, **params)
            want = F.conv2d(x.double(), w.double(), None if bias is None else bias.double(), **params).float()
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, msg=lambda m: f"{params} {m}")
    x1 = torch.randn(2, 6, 19)
    for params in (dict(), dict(stride=2), dict(dilation=2), dict(groups=3), dict(stride=1, dilation=1, groups=1)):
        w = torch.randn(6, 6 // params.get("groups", 1), 3)
        got = solops.reference.run(solops.conv1d_causal, x1, w, **params)
        pad = params.get("dilation", 1) * 2
        want = F.conv1d(F.pad(x1.double(), (pad, 0)), w.double(), **params).float()
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, msg=lambda m: f"{params} {m}")


def test_cost_model_is_the_spec_formula():
    x = torch.empty(2, 6, 11, 13, dtype=torch.float16)
    w = torch.empty(8, 3, 3, 2, dtype=torch.float16)
    b = torch.empty(8, dtype=torch.float16)
    outputs = 2 * 8 * 6 * 14  # stride (2, 1), padding 1: 6 x 14 outputs a channel
    flops = 2 * outputs * 3 * 3 * 2
    size = x.numel() + w.numel() + outputs
    assert solops.cost.of(solops.conv2d, x, w, None, (2, 1), 1, 1, 2) == (flops, size * 2)
    assert solops.cost.of(solops.conv2d, x, w, b, (2, 1), 1, 1, 2) == (flops + outputs, (size + 8) * 2)
    assert solops.cost.of(solops.conv2d_bias_relu, x, w, b, (2, 1), 1, 1, 2) == (flops + 2 * outputs, (size + 8) * 2)
