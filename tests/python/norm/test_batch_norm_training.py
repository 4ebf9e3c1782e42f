"""solops.batch_norm in training (BatchNormFwd, BatchNormBwd; spec 2.6, 2.8, 6.3) as PyTorch users meet
it: equal to F.batch_norm (output, running statistics, gradients) on random shapes, dtypes, affine on
and off, running statistics present and absent, the [C] tensors in float32 or the input's dtype,
N = 1 and spatial size 1; deterministic; under torch.compile(fullgraph=True) and in a CUDA graph,
running statistics included; bad input refused with the running statistics left as they were; and
a small CNN trained 20 steps with solops' BatchNorm in nn.BatchNorm2d (F.batch_norm swapped for
solops.batch_norm) against PyTorch's, loss for loss, running statistics and num_batches_tracked
included, momentum=None (the cumulative average) too. Needs a CUDA device; skips loudly without one."""

import contextlib
import random
from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import solops
from support import HAS_CUDA

if not HAS_CUDA:
    pytest.skip("SKIPPED: no CUDA device on this machine; these tests need one", allow_module_level=True)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Spec 2.6, 2.8: atol = rtol on the output, the running statistics and the gradients; f32 proposed.
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}


def random_input(shape, dtype=torch.float32, seed=0, offset=0.0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, generator=generator, device="cuda") + offset).to(dtype)


def close(got, want, tolerance, atol=None):
    torch.testing.assert_close(got, want.to(got.device, got.dtype), rtol=tolerance, atol=tolerance if atol is None else atol,
                               equal_nan=True)


def parameters(channels, dtype, seed=1):
    """running_mean, running_var (in [0.5, 1.5)), weight and bias [channels] of dtype."""
    mean, weight, bias = (random_input((channels,), dtype, seed + k) for k in range(3))
    var = (torch.rand(channels, generator=torch.Generator(device="cuda").manual_seed(seed + 3), device="cuda")
           + 0.5).to(dtype)
    return mean, var, weight, bias


SHAPES = [
    (8, 64, 32, 32), (4, 128, 32, 32), (4, 256, 28, 28), (32, 64),  # catalogue shapes
    (1, 5, 7, 3), (2, 3, 1, 1), (3, 7), (1, 2, 3),  # N = 1, spatial size 1, rank 2, odd planes
    (2, 3, 20000), (40000, 3),  # channels a cluster cannot hold: two passes
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine, running, x_dtype_parameters",
                         [(True, True, False), (False, True, False), (True, False, False), (True, True, True)])
def test_training_forward_equals_pytorch(shape, dtype, affine, running, x_dtype_parameters):
    x = random_input(shape, dtype)
    mean, var, weight, bias = parameters(shape[1], dtype if x_dtype_parameters else torch.float32)
    affine_parameters = (weight, bias) if affine else (None, None)
    ours = (mean.clone(), var.clone()) if running else (None, None)
    # PyTorch's own reference: the float32 upcast, the running statistics in float32 (copies it updates).
    theirs = tuple(t.to(torch.float32, copy=True) for t in (mean, var)) if running else (None, None)
    want = F.batch_norm(x.float(), *theirs, *(t.float() if t is not None else None for t in affine_parameters),
                        training=True, momentum=0.3, eps=1e-5)
    got = solops.batch_norm(x, *ours, *affine_parameters, training=True, momentum=0.3, eps=1e-5)
    assert got.dtype == dtype and got.shape == x.shape
    close(got, want, TOLERANCE[dtype])
    if running:
        for g, w in zip(ours, theirs):
            assert g.dtype == mean.dtype
            close(g, w, TOLERANCE[dtype])


@pytest.mark.parametrize("seed", range(40))
def test_random_calls_equal_pytorch(seed):
    rng = random.Random(seed)
    rank = rng.randint(2, 5)
    shape = [rng.choice([1, 2, 3, 8, 17]), rng.choice([1, 3, 8, 37, 64])]
    shape += [rng.choice([1, 2, 3, 7, 8, 28, 31, 64]) for _ in range(rank - 2)]
    if shape[0] * torch.Size(shape[2:]).numel() == 1:
        shape[0] = 2
    dtype = rng.choice(DTYPES)
    parameter_dtype = rng.choice([torch.float32, dtype])
    x = random_input(shape, dtype, seed, offset=rng.choice([0.0, 0.0, 5.0]))
    mean, var, weight, bias = parameters(shape[1], parameter_dtype, seed + 1)
    weight, bias = (weight if rng.random() < 0.7 else None), (bias if rng.random() < 0.7 else None)
    running = rng.random() < 0.7
    momentum, eps = rng.choice([0.1, 0.01, 1.0, 1 / (seed + 1)]), rng.choice([1e-5, 1e-3])
    ours = (mean.clone(), var.clone()) if running else (None, None)
    # PyTorch's float64 reference on the CPU: its CUDA float64 backward fails or returns zeros for some
    # of these calls (one channel; weight without bias). Copies, which PyTorch updates.
    theirs = (mean.cpu().double(), var.cpu().double()) if running else (None, None)
    leaves = [t.detach().clone().requires_grad_() if t is not None else None for t in (x, weight, bias)]
    reference = [t.detach().cpu().double().requires_grad_() if t is not None else None for t in (x, weight, bias)]
    got = solops.batch_norm(leaves[0], *ours, leaves[1], leaves[2], True, momentum, eps)
    want = F.batch_norm(reference[0], *theirs, reference[1], reference[2], True, momentum, eps)
    tol = TOLERANCE[dtype]
    close(got, want, tol)
    dy = random_input(shape, dtype, seed + 7)
    got.backward(dy)
    want.backward(dy.cpu().double())
    values = x.numel() // shape[1]
    for g, w in zip(leaves, reference):
        if w is not None:
            assert g.grad.dtype == g.dtype
            # The parameters' gradients are sums over a channel's values: atol scaled by their root.
            close(g.grad, w.grad, tol, tol if g is leaves[0] else tol * values ** 0.5)
    if running:
        for g, w in zip(ours, theirs):
            close(g, w, tol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_eval_mode_takes_parameters_of_the_inputs_dtype(dtype):
    # nn.BatchNorm2d after model.half(): every [C] tensor of the input's dtype (spec 6.3).
    x = random_input((4, 6, 9, 9), dtype)
    mean, var, weight, bias = parameters(6, dtype)
    want = F.batch_norm(x.float(), mean.float(), var.float(), weight.float(), bias.float(), False, eps=1e-5)
    close(solops.batch_norm(x, mean, var, weight, bias, False), want, TOLERANCE[dtype])


def test_two_runs_give_the_same_bits():
    for shape in [(8, 64, 32, 32), (2, 3, 70000), (64, 37)]:
        x, dy = random_input(shape, torch.bfloat16), random_input(shape, torch.bfloat16, 1)
        runs = []
        for _ in range(2):
            mean, var, weight, bias = parameters(shape[1], torch.float32)
            weight.requires_grad_()
            leaf = x.clone().requires_grad_()
            y = solops.batch_norm(leaf, mean, var, weight, bias, True)
            y.backward(dy)
            runs.append([y, mean, var, leaf.grad, weight.grad])
        for first, second in zip(*runs):
            assert torch.equal(first, second)


def forward(x, mean, var, weight, bias):
    return solops.batch_norm(x, mean, var, weight, bias, True, 0.1, 1e-5)


def training_step(x, dy, mean, var, weight, bias):
    y = forward(x, mean, var, weight, bias)
    y.backward(dy)
    return y


CHANNELS_LAST_SHAPES = [(8, 64, 32, 32), (4, 256, 28, 28), (2, 3, 5, 7), (3, 37, 4, 1), (2, 1, 3, 3)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", CHANNELS_LAST_SHAPES)
@pytest.mark.parametrize("grad_layout", [torch.channels_last, torch.contiguous_format])
def test_channels_last_equals_pytorch_and_keeps_its_memory_format(shape, dtype, grad_layout):
    """channels_last x: y and grad_x channels_last as PyTorch gives them, the values, running
    statistics and gradients F.batch_norm's; grad_out in either layout (autograd hands the op
    grad_out in x's)."""
    x = random_input(shape, dtype).to(memory_format=torch.channels_last)
    dy = random_input(shape, dtype, seed=5).contiguous(memory_format=grad_layout)
    mean, var, weight, bias = parameters(shape[1], torch.float32)
    ours = [t.clone().requires_grad_() for t in (x, weight, bias)]
    theirs = [t.float().clone().requires_grad_() for t in (x, weight, bias)]
    ours_running, theirs_running = (mean.clone(), var.clone()), (mean.clone(), var.clone())
    got = solops.batch_norm(ours[0], *ours_running, ours[1], ours[2], training=True, momentum=0.2)
    want = F.batch_norm(theirs[0], *theirs_running, theirs[1], theirs[2], training=True, momentum=0.2)
    # PyTorch's batch norm keeps x's memory format (suggest_memory_format); ours must too.
    assert got.is_contiguous(memory_format=torch.channels_last) and got.dtype == dtype
    assert want.is_contiguous(memory_format=torch.channels_last)
    close(got, want, TOLERANCE[dtype])
    for g, w in zip(ours_running, theirs_running):
        close(g, w, TOLERANCE[dtype])
    got.backward(dy)
    want.backward(dy.float())
    assert ours[0].grad.is_contiguous(memory_format=torch.channels_last)
    values = x.numel() // shape[1]
    close(ours[0].grad, theirs[0].grad, TOLERANCE[dtype])
    for g, w in zip(ours[1:], theirs[1:]):
        close(g.grad, w.grad, TOLERANCE[dtype], atol=TOLERANCE[dtype] * values ** 0.5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_channels_last_in_eval_mode_equals_pytorch(dtype):
    x = random_input((4, 64, 7, 9), dtype).to(memory_format=torch.channels_last)
    mean, var, weight, bias = parameters(64, torch.float32)
    got = solops.batch_norm(x, mean, var, weight, bias, training=False)
    want = F.batch_norm(x.float(), mean, var, weight, bias, training=False)
    assert got.is_contiguous(memory_format=torch.channels_last)
    close(got, want, TOLERANCE[dtype])


def test_channels_last_backward_op_refuses_grad_out_in_another_layout():
    x = random_input((2, 8, 3, 5)).to(memory_format=torch.channels_last)
    _, save_mean, save_invstd = torch.ops.solops.batch_norm_training_with_stats(x, None, None, None, None, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="grad_out must be in x's memory format \\(channels_last\\)"):
        solops.batch_norm_backward(x.contiguous(), x, save_mean, save_invstd)
    grad_x, _, _ = solops.batch_norm_backward(x.clone(), x, save_mean, save_invstd)
    assert grad_x.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_forward_and_backward_under_torch_compile_match_eager(memory_format):
    """Channels_last too: the fakes give y and grad_x x's strides, which torch.compile checks against
    the op's."""
    shape = (4, 16, 9, 9)
    x = random_input(shape).to(memory_format=memory_format)
    dy = random_input(shape, seed=1).to(memory_format=memory_format)
    results = []
    for function in (forward, torch.compile(forward, fullgraph=True)):
        mean, var, weight, bias = parameters(16, torch.float32)
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
        y = function(leaves[0], mean, var, leaves[1], leaves[2])
        y.backward(dy)
        assert y.is_contiguous(memory_format=memory_format)
        assert leaves[0].grad.is_contiguous(memory_format=memory_format)
        results.append([y, mean, var, *(t.grad for t in leaves)])
    for got, want in zip(*results):
        close(got, want, 1e-5)
    leaves = [t.clone().requires_grad_() for t in (x, *parameters(16, torch.float32)[2:])]
    mean, var = parameters(16, torch.float32)[:2]
    assert torch._dynamo.explain(forward)(leaves[0], mean, var, *leaves[1:]).graph_break_count == 0


def test_a_cuda_graph_replays_the_training_step_running_statistics_included():
    shape = (8, 32, 16, 16)
    static_x, static_dy = random_input(shape).requires_grad_(), random_input(shape, seed=1)
    mean, var, weight, bias = parameters(32, torch.float32)
    weight.requires_grad_()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up outside the capture
        training_step(static_x, static_dy, mean.clone(), var.clone(), weight, bias)
    torch.cuda.current_stream().wait_stream(stream)
    static_x.grad, weight.grad = None, None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = training_step(static_x, static_dy, mean, var, weight, bias)
    for seed in (2, 3):
        fresh_x, fresh_dy = random_input(shape, seed=seed), random_input(shape, seed=seed + 10)
        want_mean, want_var = mean.clone(), var.clone()
        want_x, want_weight = fresh_x.clone().requires_grad_(), weight.detach().clone().requires_grad_()
        want_y = training_step(want_x, fresh_dy, want_mean, want_var, want_weight, bias)
        with torch.no_grad():
            static_x.copy_(fresh_x)
        static_dy.copy_(fresh_dy)
        graph.replay()
        torch.cuda.synchronize()
        for got, want in ((static_y, want_y), (mean, want_mean), (var, want_var), (static_x.grad, want_x.grad),
                          (weight.grad, want_weight.grad)):
            assert torch.equal(got, want)


BAD_TRAINING_CALLS = [
    # The three: the running statistics of the wrong length, of the wrong dtype, one value a channel.
    (lambda x, m, v: solops.batch_norm(x, m[:3], v[:3], training=True), "running_mean: shape [3] must be [4]"),
    (lambda x, m, v: solops.batch_norm(x.bfloat16(), m, v.half(), training=True),
     "running_var: dtype f16 must be f32 or x's dtype bf16"),
    (lambda x, m, v: solops.batch_norm(x[:1, :, :1].contiguous(), m, v, training=True), "has one value a channel"),
    (lambda x, m, v: solops.batch_norm(x, m, v, torch.ones(5, device="cuda"), training=True),
     "weight: shape [5] must be [4]"),
    (lambda x, m, v: solops.batch_norm(x, m, v, training=True, momentum=float("nan")), "momentum = nan must be finite"),
    (lambda x, m, v: solops.batch_norm(x, m, v, training=True, eps=-1.0), "eps = -1 must be finite and >= 0"),
    (lambda x, m, v: solops.batch_norm(x, m, m, training=True), "running_var and running_mean overlap in memory"),
    (lambda x, m, v: solops.batch_norm(x.transpose(0, 2), m[:3], v[:3], training=True), "x must be contiguous"),
]


@pytest.mark.parametrize("call, fragment", BAD_TRAINING_CALLS, ids=[fragment for _, fragment in BAD_TRAINING_CALLS])
@pytest.mark.parametrize("grad", [False, True])
def test_bad_input_leaves_the_running_statistics_untouched(call, fragment, grad):
    x = random_input((3, 4, 5)).requires_grad_(grad)
    mean, var, _, _ = parameters(4, torch.float32)
    before = (mean.clone(), var.clone())
    with pytest.raises(RuntimeError) as error:
        call(x, mean, var)
    assert fragment in str(error.value)
    torch.cuda.synchronize()
    assert torch.equal(mean, before[0]) and torch.equal(var, before[1])


# ---- training equivalence: a small CNN, nn.BatchNorm2d with solops.batch_norm against PyTorch's -----


class SmallCnn(nn.Module):
    def __init__(self, momentum):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32, momentum=momentum), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        return self.layers(x)


def train(model, use_solops, steps, batches):
    """`steps` SGD steps on the fixed batches; with use_solops every nn.BatchNorm2d runs solops.batch_norm
    (F.batch_norm swapped for it: nn.BatchNorm's own logic, num_batches_tracked and momentum=None's
    cumulative average included, calls it). Returns the losses and the eval-mode logits of the first batch."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    swap = mock.patch.object(F, "batch_norm", solops.batch_norm) if use_solops else contextlib.nullcontext()
    losses = []
    with swap:
        model.train()
        for step in range(steps):
            images, labels = batches[step % len(batches)]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            logits = model(batches[0][0])
    return torch.tensor(losses), logits


@pytest.mark.parametrize("momentum", [0.1, None])
def test_a_small_cnn_trains_as_with_pytorchs_batch_norm(momentum):
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    generator = torch.Generator(device="cuda").manual_seed(0)
    batches = [(torch.randn(16, 3, 16, 16, generator=generator, device="cuda"),
                torch.randint(0, 10, (16,), generator=generator, device="cuda")) for _ in range(4)]
    torch.manual_seed(0)
    theirs = SmallCnn(momentum).cuda()
    ours = SmallCnn(momentum).cuda()
    ours.load_state_dict(theirs.state_dict())
    want_losses, want_logits = train(theirs, False, 20, batches)
    got_losses, got_logits = train(ours, True, 20, batches)
    assert want_losses[-1] < want_losses[0]  # it learns
    torch.testing.assert_close(got_losses, want_losses, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(got_logits, want_logits, rtol=1e-3, atol=1e-3)
    for (name, got), want in zip(ours.state_dict().items(), theirs.state_dict().values()):
        if "running" in name or "num_batches" in name:
            # As the logits: 20 steps of two float32 trainings whose sums run in other orders.
            torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4, msg=lambda message: f"{name}: {message}")
