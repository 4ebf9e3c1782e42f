"""The autograd wiring of solops.rms_norm and solops.layer_norm without a GPU: under
solops.reference.mode() the training-forward and backward ops run their CPU references, so that the
autograd registration runs as on CUDA and the gradients can be compared with PyTorch's; traced
forward and backward on meta tensors. The references of group_rms_norm, vector_norm, weight_norm and
spectral_norm_power_iter against PyTorch. The CUDA kernels themselves are tested in test_norm_ops.py
and the GPU tests."""

import pytest
import torch
import torch.nn.functional as F

import solops

CASES = [((3, 5, 7), (7,)), ((4, 6, 8), (6, 8)), ((1, 33), (33,))]


def leaves(*tensors):
    return [t.detach().clone().requires_grad_() if t is not None else None for t in tensors]


def gradients(loss, tensors):
    loss.backward()
    return [t.grad for t in tensors if t is not None]


@pytest.mark.parametrize("shape, normalized_shape", CASES)
@pytest.mark.parametrize("affine", [True, False])
def test_gradients_equal_pytorch(shape, normalized_shape, affine):
    generator = torch.Generator().manual_seed(0)
    x, dy = (torch.randn(shape, generator=generator) for _ in range(2))
    weight, bias = (torch.randn(normalized_shape, generator=generator) if affine else None for _ in range(2))
    for ours, theirs in ((lambda a, w, b: solops.rms_norm(a, normalized_shape, w, 1e-6),
                          lambda a, w, b: F.rms_norm(a, normalized_shape, w, 1e-6)),
                         (lambda a, w, b: solops.layer_norm(a, normalized_shape, w, b, 1e-5),
                          lambda a, w, b: F.layer_norm(a, normalized_shape, w, b, 1e-5))):
        mine = leaves(x, weight, bias)
        want = leaves(x.double(), *(t.double() if t is not None else None for t in (weight, bias)))
        with solops.reference.mode():
            got = gradients((ours(*mine) * dy).sum(), mine)
        expected = gradients((theirs(*want) * dy.double()).sum(), want)
        # rms_norm ignores the bias, so neither side gives it a gradient.
        assert [g is None for g in got] == [e is None for e in expected]
        for g, e in zip(got, expected):
            if e is not None:
                torch.testing.assert_close(g.double(), e, atol=1e-4, rtol=1e-4)


def test_statistics_are_not_differentiable():
    x = torch.randn(2, 8, requires_grad=True)
    with solops.reference.mode():
        y, mean, rstd = torch.ops.solops.layer_norm_with_stats(x, [8], None, None, 1e-5)
    assert y.requires_grad and not mean.requires_grad and not rstd.requires_grad


def test_group_rms_norm_reference():
    x, weight = torch.randn(2, 3, 7), torch.randn(3, 7)
    y, rstd = solops.reference.run(solops.group_rms_norm, x, [7], weight)
    want_rstd = torch.rsqrt(x.double().pow(2).mean(-1) + 1e-6)
    torch.testing.assert_close(rstd, want_rstd.float())
    torch.testing.assert_close(y, (x.double() * want_rstd.unsqueeze(-1) * weight.double()).float())


@pytest.mark.parametrize("shape, ord, dim, keepdim", [((4, 6, 10), 1, [0, 2], False), ((5, 7), 2, [], True),
                                                     ((3, 5, 7), 2, [-2], False)])
def test_vector_norm_reference(shape, ord, dim, keepdim):
    x = torch.randn(shape)
    got = solops.reference.run(solops.vector_norm, x, ord, dim or None, keepdim)
    torch.testing.assert_close(got, torch.linalg.vector_norm(x, ord, dim or None, keepdim))


@pytest.mark.parametrize("shape, dim", [((6, 5, 3), 0), ((6, 5, 3), 1), ((6, 5, 3), 2), ((6, 5, 3), -1), ((7,), 0),
                                        ((7,), -1)])
def test_weight_norm_reference(shape, dim):
    # dim -1 is torch._weight_norm's whole tensor (spec 6.7), tested against PyTorch itself.
    v = torch.randn(shape)
    n = 1 if dim == -1 else shape[dim]
    g = torch.randn(n)
    stored_g = g.view([n if d == dim else 1 for d in range(len(shape))])
    w, norm = solops.reference.run(solops.weight_norm, v, g, dim)
    # _weight_norm_interface fuses only dims 0 and -1; _weight_norm and norm_except_dim take any dim.
    torch.testing.assert_close(w, torch._weight_norm(v.double(), stored_g.double(), dim).float())
    torch.testing.assert_close(norm, torch.norm_except_dim(v.double(), 2, dim).flatten().float())
    torch.testing.assert_close(solops.reference.run(solops.weight_norm, v, stored_g, dim)[0], w)  # g as PyTorch stores it


@pytest.mark.parametrize("shape, n_iter", [((5, 7), 1), ((7, 5), 3), ((1, 9), 0), ((0, 4), 1)])
def test_spectral_norm_power_iter_reference(shape, n_iter):
    # torch.nn.utils.spectral_norm's power method and sigma in float64.
    generator = torch.Generator().manual_seed(0)
    x, u, v = (torch.randn(size, generator=generator) for size in (shape, shape[:1], shape[1:]))
    got = solops.reference.run(solops.spectral_norm_power_iter, x, u, v, n_iter)
    w, want_u, want_v = x.double(), u.double(), v.double()
    for _ in range(n_iter):
        want_v = F.normalize(torch.mv(w.t(), want_u), dim=0, eps=1e-12)
        want_u = F.normalize(torch.mv(w, want_v), dim=0, eps=1e-12)
    for g, want in zip(got, (torch.vdot(want_u, torch.mv(w, want_v)), want_u, want_v)):
        torch.testing.assert_close(g, want.float())


def test_torch_compile_traces_forward_and_backward():
    def loss(x, weight, bias):
        return (solops.rms_norm(x, [7], weight, 1e-6) * solops.layer_norm(x, [7], weight, bias)).sum()

    # On meta tensors the fakes stand in for the kernels: forward and backward trace as one graph each.
    inputs = [torch.empty(3, 7, device="meta"), torch.empty(7, device="meta"), torch.empty(7, device="meta")]
    compiled = leaves(*inputs)
    torch._dynamo.reset()
    torch.compile(loss, fullgraph=True, backend="aot_eager")(*compiled).backward()
    assert [t.grad.shape for t in compiled] == [t.shape for t in inputs]


# ---- batch_norm in training: autograd through batch_norm_training_with_stats ---------------------


@pytest.mark.parametrize("shape", [(4, 3, 5), (6, 3), (2, 3, 2, 3), (1, 3, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_gradients_and_running_statistics_equal_pytorch(shape, affine):
    generator = torch.Generator().manual_seed(0)
    x, dy = (torch.randn(shape, generator=generator) for _ in range(2))
    weight, bias = (torch.randn(3, generator=generator) if affine else None for _ in range(2))
    mean, var = torch.randn(3, generator=generator), torch.rand(3, generator=generator) + 0.5
    mine = leaves(x, weight, bias)
    want = leaves(x.double(), *(t.double() if t is not None else None for t in (weight, bias)))
    ours, theirs = [mean.clone(), var.clone()], [mean.double(), var.double()]
    with solops.reference.mode():
        got = gradients((solops.batch_norm(mine[0], *ours, mine[1], mine[2], True, 0.2, 1e-5) * dy).sum(), mine)
    expected = gradients((F.batch_norm(want[0], *theirs, want[1], want[2], True, 0.2, 1e-5) * dy.double()).sum(), want)
    assert [g is None for g in got] == [e is None for e in expected]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.double(), e, atol=1e-4, rtol=1e-4)
    for g, e in zip(ours, theirs):
        torch.testing.assert_close(g.double(), e, atol=1e-6, rtol=1e-6)


def test_batch_norm_statistics_are_not_differentiable_and_inference_takes_the_running_ones():
    x, weight = torch.randn(4, 3, 2, requires_grad=True), torch.randn(3, requires_grad=True)
    mean, var = torch.zeros(3), torch.ones(3)
    with solops.reference.mode():
        y, save_mean, save_invstd = torch.ops.solops.batch_norm_training_with_stats(x, weight, None, mean, var, 0.1,
                                                                                     1e-5)
        evaluated = solops.batch_norm(x.detach(), mean, var, weight.detach())
    assert y.requires_grad and not save_mean.requires_grad and not save_invstd.requires_grad
    assert not mean.requires_grad and not var.requires_grad
    torch.testing.assert_close(evaluated, F.batch_norm(x.detach(), mean, var, weight.detach()))


def test_torch_compile_traces_the_batch_norm_forward_backward_and_running_statistics():
    def loss(x, weight, bias, mean, var):
        return (solops.batch_norm(x, mean, var, weight, bias, True, 0.1, 1e-5) ** 2).sum()

    # On meta tensors the fakes stand in for the kernels: the running statistics' update is a mutation
    # of the graph's inputs, and forward and backward trace as one graph each.
    inputs = [torch.empty(4, 3, 5, device="meta"), torch.empty(3, device="meta"), torch.empty(3, device="meta")]
    compiled = leaves(*inputs)
    torch._dynamo.reset()
    torch.compile(loss, fullgraph=True, backend="aot_eager")(*compiled, torch.empty(3, device="meta"),
                                                             torch.empty(3, device="meta")).backward()
    assert [t.grad.shape for t in compiled] == [t.shape for t in inputs]
