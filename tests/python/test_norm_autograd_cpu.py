"""The autograd wiring of solops.rms_norm and solops.layer_norm without a GPU: the training-forward
and backward ops (and group_rms_norm, vector_norm, weight_norm, spectral_norm_power_iter) get the CPU
references as their CPU kernels, so that autograd,
the fakes and torch.compile run the same registrations as on CUDA and the gradients can be compared
with PyTorch's. The CUDA kernels themselves are tested in test_norm_torch.py and the GPU tests.
Needs PyTorch and the built libsolops.so; skips loudly without PyTorch."""

import pytest

torch = pytest.importorskip("torch", reason="SKIPPED: PyTorch is not installed on this machine")

import torch.nn.functional as F  # noqa: E402

import solops  # noqa: E402
from solops import reference  # noqa: E402

# The references take the ops' arguments in the same order.
for _name in ("rms_norm_with_stats", "layer_norm_with_stats", "rms_norm_backward", "layer_norm_backward",
              "group_rms_norm", "vector_norm", "weight_norm", "spectral_norm_power_iter"):
    torch.library.register_kernel(f"solops::{_name}", "cpu", getattr(reference, _name))

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
        got = gradients((ours(*mine) * dy).sum(), mine)
        expected = gradients((theirs(*want) * dy.double()).sum(), want)
        # rms_norm ignores the bias, so neither side gives it a gradient.
        assert [g is None for g in got] == [e is None for e in expected]
        for g, e in zip(got, expected):
            if e is not None:
                torch.testing.assert_close(g.double(), e, atol=1e-4, rtol=1e-4)


def test_statistics_are_not_differentiable():
    x = torch.randn(2, 8, requires_grad=True)
    y, mean, rstd = torch.ops.solops.layer_norm_with_stats(x, [8], None, None, 1e-5)
    assert y.requires_grad and not mean.requires_grad and not rstd.requires_grad


@pytest.mark.parametrize("op, args", [
    ("rms_norm_with_stats", lambda x, w, b: (x, [7], w, 1e-6)),
    ("layer_norm_with_stats", lambda x, w, b: (x, [7], w, b, 1e-5)),
    ("layer_norm_backward", lambda x, w, b: (torch.randn(3, 7), x.detach(), [7], torch.randn(3), torch.rand(3),
                                             w.detach())),
    ("rms_norm_backward", lambda x, w, b: (torch.randn(3, 7), x.detach(), [7], torch.rand(3), None)),
])
def test_opcheck(op, args):
    x, w, b = (torch.randn(*shape, requires_grad=True) for shape in ((3, 7), (7,), (7,)))
    torch.library.opcheck(getattr(torch.ops.solops, op).default, args(x, w, b))


def test_group_rms_norm_registration_on_the_cpu_reference():
    # GroupRMSNorm has no autograd; its fake and the C ABI's shape rule meet torch.compile here.
    x, weight = torch.randn(2, 3, 7), torch.randn(3, 7)
    torch.library.opcheck(torch.ops.solops.group_rms_norm.default, (x, [7], weight, 1e-6))
    y, rstd = torch.compile(solops.group_rms_norm, fullgraph=True, backend="aot_eager")(x, [7], weight)
    want_rstd = torch.rsqrt(x.double().pow(2).mean(-1) + 1e-6)
    torch.testing.assert_close(rstd, want_rstd.float())
    torch.testing.assert_close(y, (x.double() * want_rstd.unsqueeze(-1) * weight.double()).float())


@pytest.mark.parametrize("shape, ord, dim, keepdim", [((4, 6, 10), 1, [0, 2], False), ((5, 7), 2, [], True),
                                                     ((3, 5, 7), 2, [-2], False)])
def test_vector_norm_registration_on_the_cpu_reference(shape, ord, dim, keepdim):
    x = torch.randn(shape)
    torch.library.opcheck(torch.ops.solops.vector_norm.default, (x, ord, dim, keepdim))
    got = torch.compile(solops.vector_norm, fullgraph=True, backend="aot_eager")(x, ord, dim or None, keepdim)
    torch.testing.assert_close(got, torch.linalg.vector_norm(x, ord, dim or None, keepdim))


@pytest.mark.parametrize("shape, dim", [((6, 5, 3), 0), ((6, 5, 3), 1), ((6, 5, 3), 2), ((6, 5, 3), -1), ((7,), 0),
                                        ((7,), -1)])
def test_weight_norm_registration_on_the_cpu_reference(shape, dim):
    # dim -1 is torch._weight_norm's whole tensor (spec 6.7), tested against PyTorch itself.
    v = torch.randn(shape)
    n = 1 if dim == -1 else shape[dim]
    g = torch.randn(n)
    stored_g = g.view([n if d == dim else 1 for d in range(len(shape))])
    torch.library.opcheck(torch.ops.solops.weight_norm.default, (v, g, dim))
    w, norm = torch.compile(solops.weight_norm, fullgraph=True, backend="aot_eager")(v, g, dim)
    # _weight_norm_interface fuses only dims 0 and -1; _weight_norm and norm_except_dim take any dim.
    torch.testing.assert_close(w, torch._weight_norm(v.double(), stored_g.double(), dim).float())
    torch.testing.assert_close(norm, torch.norm_except_dim(v.double(), 2, dim).flatten().float())
    torch.testing.assert_close(solops.weight_norm(v, stored_g, dim)[0], w)  # g as PyTorch stores it


@pytest.mark.parametrize("call, fragment", [
    (lambda: solops.weight_norm(torch.randn(3, 4), torch.randn(3), 2), "dim 2 is out of range for v [3, 4]"),
    (lambda: solops.weight_norm(torch.randn(3, 4), torch.randn(3), -2), "or -1 (the whole tensor)"),
    (lambda: solops.weight_norm(torch.randn(3, 4), torch.randn(4), 0), "g [4] must hold 3 values"),
    (lambda: solops.weight_norm(torch.randn(3, 4), torch.randn(3).half(), 0), "g: dtype f16 must be f32"),
])
def test_weight_norm_bad_input_gives_a_clear_error(call, fragment):
    with pytest.raises(solops.SolopsError) as error:
        call()
    assert fragment in str(error.value)


@pytest.mark.parametrize("shape, n_iter", [((5, 7), 1), ((7, 5), 3), ((1, 9), 0), ((0, 4), 1)])
def test_spectral_norm_power_iter_registration_on_the_cpu_reference(shape, n_iter):
    # The fake (the library's shape rule) meets torch.compile; the values are torch.nn.utils.spectral_norm's
    # power method and sigma in float64.
    generator = torch.Generator().manual_seed(0)
    x, u, v = (torch.randn(size, generator=generator) for size in (shape, shape[:1], shape[1:]))
    torch.library.opcheck(torch.ops.solops.spectral_norm_power_iter.default, (x, u, v, n_iter, 1e-12))
    got = torch.compile(solops.spectral_norm_power_iter, fullgraph=True, backend="aot_eager")(x, u, v, n_iter)
    w, want_u, want_v = x.double(), u.double(), v.double()
    for _ in range(n_iter):
        want_v = F.normalize(torch.mv(w.t(), want_u), dim=0, eps=1e-12)
        want_u = F.normalize(torch.mv(w, want_v), dim=0, eps=1e-12)
    for g, want in zip(got, (torch.vdot(want_u, torch.mv(w, want_v)), want_u, want_v)):
        torch.testing.assert_close(g, want.float())


@pytest.mark.parametrize("call, fragment", [
    (lambda: solops.spectral_norm_power_iter(torch.randn(8), torch.randn(8), torch.randn(8)), "x [8] must have rank 2"),
    (lambda: solops.spectral_norm_power_iter(torch.randn(3, 4), torch.randn(3), torch.randn(4), -1), "n_iter = -1"),
    (lambda: solops.spectral_norm_power_iter(torch.randn(3, 4), torch.randn(4), torch.randn(4)),
     "u: shape [4] must be [3]"),
])
def test_spectral_norm_power_iter_bad_input_gives_a_clear_error(call, fragment):
    with pytest.raises(solops.SolopsError) as error:
        call()
    assert fragment in str(error.value)


def test_torch_compile_traces_forward_and_backward():
    def loss(x, weight, bias):
        return (solops.rms_norm(x, [7], weight, 1e-6) * solops.layer_norm(x, [7], weight, bias)).sum()

    inputs = [torch.randn(3, 7), torch.randn(7), torch.randn(7)]
    eager, compiled = leaves(*inputs), leaves(*inputs)
    loss(*eager).backward()
    torch.compile(loss, fullgraph=True, backend="aot_eager")(*compiled).backward()
    for got, want in zip(compiled, eager):
        torch.testing.assert_close(got.grad, want.grad)
