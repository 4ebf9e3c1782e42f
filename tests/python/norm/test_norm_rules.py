"""The normalization ops' rules on the CPU, as torch.compile meets them: the Python fakes against the
C++ shape rules on thousands of random calls, accepted and rejected alike, message for message; every
bad call of norm_calls.py refused at trace time; the CPU references (against PyTorch's where it has
the op) and the cost models through the same ops."""

import math
import random

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import solops
from norm_calls import BAD_CALLS
from support import assert_fakes_agree_with_the_cpp_shape_rules

DRAWS = 4000
_H = torch.float16


def _meta(shape, dtype=_H):
    return torch.empty(shape, device="meta", dtype=dtype)


class NormCalls:
    """Random calls of every normalization op: mostly valid, each shape rule broken now and then. The
    tensors the rules do not read (weights, statistics) have the shapes the call needs."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def shape(self, rank_low=0, rank_high=4):
        rank = self.rng.randint(rank_low, rank_high)
        return [self.rng.randint(1, 12) if self.rng.random() > 0.05 else 0 for _ in range(rank)]

    def normalized_shape(self, x_shape):
        roll = self.rng.random()
        if roll < 0.8 and x_shape:
            ns = x_shape[len(x_shape) - self.rng.randint(1, len(x_shape)):]
            return [ns[0] + 1, *ns[1:]] if self.rng.random() < 0.1 else list(ns)
        return [] if roll < 0.9 else [self.rng.randint(0, 5) for _ in range(self.rng.randint(1, 5))]

    def eps(self):
        return self.rng.choice([1e-5, 1e-6, 0.0, 1e-5, 1e-5, -1.0, math.inf, math.nan])

    def weight(self, shape, chance=0.7):
        return _meta(shape) if shape and all(shape) and self.rng.random() < chance else None

    def draw(self):
        x_shape = self.shape()
        x, ns, eps = _meta(x_shape), self.normalized_shape(x_shape), self.eps()
        op = self.rng.choice(["rms_norm", "rms_norm_with_stats", "layer_norm", "layer_norm_with_stats",
                              "gemma_rms_norm", "fused_add_rms_norm", "fused_add_rms_norm_", "fused_add_layer_norm",
                              "fused_add_layer_norm_", "ada_layer_norm", "rms_norm_quant", "layer_norm_quant",
                              "qk_norm", "group_rms_norm", "vector_norm", "weight_norm", "spectral_norm_power_iter",
                              "batch_norm_inference", "rms_norm_backward", "layer_norm_backward"])
        if op in ("rms_norm", "rms_norm_with_stats"):
            return op, (x, ns, self.weight(ns), self.rng.choice([None, eps]))
        if op in ("layer_norm", "layer_norm_with_stats", "layer_norm_quant"):
            return op, (x, ns, self.weight(ns), self.weight(ns), eps)
        if op == "rms_norm_quant":
            return op, (x, ns, self.weight(ns), eps)
        if op == "gemma_rms_norm":
            return op, (x, _meta([size or 1 for size in ns] or [1]), eps)
        if op.startswith("fused_add"):
            affine = [self.weight(x_shape[-1:])] + ([self.weight(x_shape[-1:])] if "layer" in op else [])
            return op, (x, _meta(x_shape), *affine, eps)
        if op == "ada_layer_norm":
            return op, (x, _meta(x_shape), _meta(x_shape), eps)
        if op == "qk_norm":
            return op, (x, _meta(self.shape()), ns, self.weight(ns), self.weight(ns), eps)
        if op == "group_rms_norm":
            ns = x_shape[-1:] if self.rng.random() < 0.8 else ns
            return op, (x, ns, self.weight(x_shape[-2:], 0.6) if len(x_shape) >= 2 else None, eps)
        if op == "vector_norm":
            rank = len(x_shape)
            dims = [self.rng.randint(-rank - 1, rank) for _ in range(self.rng.randint(0, max(rank, 1)))]
            return op, (x, self.rng.choice([1, 2, 2, 3]), dims, self.rng.random() < 0.5)
        if op == "weight_norm":
            rank = len(x_shape)
            dim = self.rng.randint(-2, rank)
            n = 1 if dim == -1 else x_shape[dim] if 0 <= dim < rank else 3
            g_shape = self.rng.choice([[n], [1] * max(dim, 0) + [n] + [1] * max(rank - dim - 1, 0)])
            return op, (x, _meta(g_shape), dim)
        if op == "spectral_norm_power_iter":
            rows, cols = (x_shape + [1, 1])[:2]
            return op, (x, _meta([rows], torch.float32), _meta([cols], torch.float32), self.rng.randint(-1, 3),
                        self.rng.choice([1e-12, 0.0, -1.0, math.nan]))
        if op == "batch_norm_inference":
            channels = x_shape[1:2] or [3]
            parameters = [_meta(channels, torch.float32) if self.rng.random() < 0.7 else None for _ in range(2)]
            return op, (x, *parameters, _meta(channels, torch.float32), _meta(channels, torch.float32), eps)
        stats = [_meta(x_shape[:len(x_shape) - len(ns)] if len(ns) <= len(x_shape) else [], torch.float32)]
        if op == "layer_norm_backward":
            stats *= 2
        return op, (_meta(x_shape), x, ns, *stats, self.weight(ns))


def test_fakes_agree_with_the_cpp_shape_rules_on_random_calls():
    assert_fakes_agree_with_the_cpp_shape_rules(NormCalls(seed=1).draw, DRAWS)


@pytest.mark.parametrize("call, fragment", BAD_CALLS, ids=[fragment for _, fragment in BAD_CALLS])
def test_bad_calls_are_refused_at_trace_time(call, fragment):
    with pytest.raises(RuntimeError) as error, FakeTensorMode():
        call()
    assert fragment in str(error.value)


def cpu_inputs(*shapes, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator) for shape in shapes]


@pytest.mark.parametrize("shape, normalized_shape", [((3, 5, 7), (7,)), ((4, 6, 8), (6, 8)), ((1, 33), (33,))])
def test_references_are_pytorch_on_the_cpu(shape, normalized_shape):
    x, weight, bias = cpu_inputs(shape, normalized_shape, normalized_shape)
    reference = solops.reference.run
    torch.testing.assert_close(reference(solops.rms_norm, x, normalized_shape, weight, 1e-6),
                               F.rms_norm(x, normalized_shape, weight, 1e-6))
    torch.testing.assert_close(reference(solops.layer_norm, x, normalized_shape, weight, bias),
                               F.layer_norm(x, normalized_shape, weight, bias))
    torch.testing.assert_close(reference(solops.vector_norm, x, 2, -1), torch.linalg.vector_norm(x, 2, -1))
    torch.testing.assert_close(reference(solops.weight_norm, x, x.new_ones(shape[0]), 0)[0],
                               torch._weight_norm(x, x.new_ones([shape[0]] + [1] * (x.dim() - 1)), 0))
    residual = cpu_inputs(shape, seed=1)[0]
    output, residual_out = reference(solops.fused_add_rms_norm, x, residual)
    torch.testing.assert_close(residual_out, x + residual)
    torch.testing.assert_close(output, F.rms_norm(x + residual, shape[-1:], eps=1e-6))


@pytest.mark.parametrize("shape", [(3, 5, 4, 7), (6, 5), (2, 5, 9), (0, 5, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_inference_reference_is_pytorch_on_the_cpu(shape, affine):
    x, mean, weight, bias = cpu_inputs(shape, (5,), (5,), (5,))
    var = torch.rand(5, generator=torch.Generator().manual_seed(1)) + 0.5
    parameters = (weight, bias) if affine else (None, None)
    torch.testing.assert_close(solops.reference.run(solops.batch_norm_inference, x, mean, var, *parameters, eps=1e-3),
                               F.batch_norm(x, mean, var, *parameters, training=False, eps=1e-3))


# ---- batch_norm in training and its backward ----------------------------------------------------


def draw_batch_norm_call(rng):
    """A random call of batch_norm_training, batch_norm_training_with_stats or batch_norm_backward: x of
    rank 0 to 4 (one value a channel now and then), eps and momentum valid or not, the [C] tensors
    present or not, of f32 or x's dtype. The C++ shape target makes no checks of the [C] tensors (the
    op's validation does, at run time), so those are drawn valid."""
    calls = NormCalls(rng.random())
    x_shape = calls.shape() if rng.random() < 0.85 else [1, rng.randint(0, 4), *[1] * rng.randint(0, 2)]
    x = _meta(x_shape)
    channels = x_shape[1:2] or [3]

    def channel_tensor(chance=0.7):
        return _meta(channels, rng.choice([torch.float32, _H])) if rng.random() < chance else None

    op = rng.choice(["batch_norm_training", "batch_norm_training_with_stats", "batch_norm_backward"])
    if op == "batch_norm_backward":
        return op, (_meta(x_shape), x, channel_tensor(), _meta(channels, torch.float32), _meta(channels, torch.float32))
    running = [channel_tensor(1), channel_tensor(1)] if rng.random() < 0.6 else [None, None]
    momentum = rng.choice([0.1, 0.0, 1.0, 0.5, math.nan, math.inf])
    return op, (x, channel_tensor(), channel_tensor(), *running, momentum, calls.eps())


def test_batch_norm_fakes_agree_with_the_cpp_shape_rules_on_random_calls():
    rng = random.Random(2)
    assert_fakes_agree_with_the_cpp_shape_rules(lambda: draw_batch_norm_call(rng), DRAWS // 2)


@pytest.mark.parametrize("shape", [(3, 5, 4, 7), (6, 5), (2, 5, 9), (0, 5, 2), (1, 5, 1, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("running", [True, False])
def test_batch_norm_training_reference_is_pytorch_on_the_cpu(shape, affine, running):
    x, mean, weight, bias = cpu_inputs(shape, (5,), (5,), (5,))
    var = torch.rand(5, generator=torch.Generator().manual_seed(1)) + 0.5
    parameters = (weight, bias) if affine else (None, None)
    ours, theirs = (mean.clone(), var.clone()) if running else (None, None), (mean, var) if running else (None, None)
    torch.testing.assert_close(solops.reference.run(solops.batch_norm, x, *ours, *parameters, True, 0.3, 1e-3),
                               F.batch_norm(x, *theirs, *parameters, training=True, momentum=0.3, eps=1e-3))
    if running and x.numel():
        torch.testing.assert_close(ours, theirs)


def test_cost_models_of_the_training_batch_norm_follow_the_spec():
    image, channel = torch.empty(4, 128, 32, 32, dtype=torch.float16), torch.empty(128)
    # Spec 2.6: 10 flops an element; x read, y written, weight, bias and both running statistics read.
    assert solops.cost.of(solops.batch_norm, image, channel, channel, channel, channel, True) == \
        (10 * image.numel(), 2 * image.numel() * 2 + 16 * 128)
    # Spec 2.8: 8 flops an element; grad_out and x read, grad_x written, three [C] f32 tensors.
    assert solops.cost.of(solops.batch_norm_backward, image, image, channel, channel, channel) == \
        (8 * image.numel(), 3 * image.numel() * 2 + 12 * 128)


def test_cost_models_follow_the_spec():
    x = torch.empty(8, 4096, dtype=torch.bfloat16)
    # Spec 2.1: 4 flops an element; x read, y written, the weight read once.
    assert solops.cost.of(solops.rms_norm, x, 4096, torch.empty(4096, dtype=torch.bfloat16)) == \
        (4 * x.numel(), (2 * x.numel() + 4096) * 2)
    # Spec 2.7: 4 flops an element; x read, y written, weight, bias and both running statistics read.
    image, channel = torch.empty(4, 128, 32, 32, dtype=torch.float16), torch.empty(128)
    assert solops.cost.of(solops.batch_norm_inference, image, channel, channel) == \
        (4 * image.numel(), 2 * image.numel() * 2 + 16 * 128)
