"""solops row norms as PyTorch users meet them: equal to torch.nn.functional (rms_norm, layer_norm)
and to the usual formulas (Gemma, fused add-norms, QK-norm as two F.rms_norm, AdaLayerNorm, the
quantizing norms' norm-amax-scale-cast, GroupRMSNorm's per-vector rstd and [G, D] weight), the
vector norms equal to torch.linalg.vector_norm (spec 2.22, 2.23), WeightNorm equal to
torch._weight_norm for dim in [0, ndim) and dim -1 (the whole tensor; spec 2.20, 6.7),
spectral_norm_power_iter equal to the spec's formula and to torch.nn.utils.spectral_norm (and, on
the transposed matrix, to torch.nn.utils.parametrizations.spectral_norm; spec 2.21),
batch_norm_inference equal to F.batch_norm(training=False) (spec 2.7), the fused
ops' in-place form, traced by torch.compile(fullgraph=True), captured and replayed in CUDA graphs,
clear errors on bad input; and
rms_norm / layer_norm as autograd ops whose gradients equal PyTorch's (spec 2.13, 2.14), forward and
backward under torch.compile(fullgraph=True) and in a CUDA graph.
Bad calls: norm_calls.py. Needs a CUDA device; skips loudly without one."""

import pytest
import torch
import torch.nn.functional as F

import solops
from norm_calls import ALIASING_CALLS, BAD_CALLS
from solops.bench.norm import NORM_OPS, check_quantized, quantize_rows, torch_function
from support import HAS_CUDA

if not HAS_CUDA:
    pytest.skip("SKIPPED: no CUDA device on this machine; these tests need one", allow_module_level=True)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# spec/ops.md 2.1, 2.2, 2.4, 2.5, 2.17, 2.18: atol = rtol.
RMS_TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1.6e-2}
LAYER_TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2}
FUSED_LAYER_TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}
ADA_TOLERANCE = FUSED_LAYER_TOLERANCE  # spec 2.3

SHAPES = [
    # x shape, normalized_shape
    ((2048, 4096), (4096,)),
    ((1, 16384), (16384,)),
    ((3, 5, 3000), (3000,)),  # 3-D, N not a multiple of the vector width
    ((7, 5121), (5121,)),
    ((1025, 64), (64,)),  # short rows, several a block
    ((4, 6, 8), (6, 8)),  # two normalized dims
    ((2, 20000), (20000,)),  # beyond the register capacity
    ((1, 1), (1,)),
]


def random_input(shape, dtype, seed=0, offset=0.0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, generator=generator, device="cuda", dtype=torch.float32) + offset).to(dtype)


def close(got, want, tolerance):
    torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, normalized_shape", SHAPES)
def test_rms_norm_equals_pytorch(shape, normalized_shape, dtype):
    x = random_input(shape, dtype)
    weight = random_input(normalized_shape, dtype, seed=1)
    tol = RMS_TOLERANCE[dtype]
    want = F.rms_norm(x.float(), normalized_shape, weight.float(), 1e-6).to(dtype)
    close(solops.rms_norm(x, normalized_shape, weight, 1e-6), want, tol)
    # eps=None is PyTorch's CUDA default; no weight is a weight of ones.
    close(solops.rms_norm(x, normalized_shape), F.rms_norm(x.float(), normalized_shape).to(dtype), tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, normalized_shape", SHAPES)
def test_layer_norm_equals_pytorch(shape, normalized_shape, dtype):
    x = random_input(shape, dtype)
    weight = random_input(normalized_shape, dtype, seed=1)
    bias = random_input(normalized_shape, dtype, seed=2)
    tol = LAYER_TOLERANCE[dtype]
    want = F.layer_norm(x.float(), normalized_shape, weight.float(), bias.float(), 1e-5).to(dtype)
    close(solops.layer_norm(x, normalized_shape, weight, bias), want, tol)
    close(solops.layer_norm(x, normalized_shape, eps=1e-3), F.layer_norm(x.float(), normalized_shape,
                                                                          eps=1e-3).to(dtype), tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_is_stable_under_a_large_offset(dtype):
    # TileOPs' large-offset test: rows of 10000 + 0.01 * randn (f32 at its looser tolerance).
    x = (10000 + 0.01 * random_input((64, 4096), torch.float32)).to(dtype)
    want = F.layer_norm(x.double(), (4096,)).to(dtype)
    got = solops.layer_norm(x, (4096,))
    if dtype == torch.float32:
        torch.testing.assert_close(got, want, atol=1e-1, rtol=5e-2)
    else:
        close(got, want, LAYER_TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemma_rms_norm_equals_the_hugging_face_formula(dtype):
    x = random_input((33, 4096), dtype)
    weight = (0.1 * random_input((4096,), torch.float32, seed=1)).to(dtype)
    xf = x.float()
    want = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + weight.float())).to(dtype)
    close(solops.gemma_rms_norm(x, weight), want, RMS_TOLERANCE[dtype])


def fused_reference(kind, x, residual, weight, bias, eps):
    summed = (x.float() + residual.float()).to(x.dtype)
    if kind == "rms":
        out = F.rms_norm(summed.float(), weight.shape, weight.float(), eps)
    else:
        out = F.layer_norm(summed.float(), weight.shape, weight.float(), bias.float(), eps)
    return out.to(x.dtype), summed


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["rms", "layer"])
@pytest.mark.parametrize("shape", [(2048, 8192), (1, 4096), (2, 3, 3000), (5, 20000)])
def test_fused_add_norms_out_of_place_and_in_place(kind, shape, dtype):
    x, residual = random_input(shape, dtype), random_input(shape, dtype, seed=1)
    weight, bias = random_input(shape[-1:], dtype, seed=2), random_input(shape[-1:], dtype, seed=3)
    want_out, want_residual = fused_reference(kind, x, residual, weight, bias, 1e-6 if kind == "rms" else 1e-5)
    tol = RMS_TOLERANCE[dtype] if kind == "rms" else FUSED_LAYER_TOLERANCE[dtype]
    x_before, residual_before = x.clone(), residual.clone()
    if kind == "rms":
        out, residual_out = solops.fused_add_rms_norm(x, residual, weight)
    else:
        out, residual_out = solops.fused_add_layer_norm(x, residual, weight, bias)
    close(out, want_out, tol)
    close(residual_out, want_residual, tol)
    assert torch.equal(x, x_before) and torch.equal(residual, residual_before)  # out of place: inputs untouched

    if kind == "rms":
        assert solops.fused_add_rms_norm_(x, residual, weight) is None
    else:
        assert solops.fused_add_layer_norm_(x, residual, weight, bias) is None
    close(x, want_out, tol)
    close(residual, want_residual, tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, normalized_shape", SHAPES)
def test_rms_norm_quant_equals_the_pytorch_formula(shape, normalized_shape, dtype):
    x = random_input(shape, dtype)
    weight = random_input(normalized_shape, dtype, seed=1)
    y = F.rms_norm(x.float(), normalized_shape, weight.float(), 1e-6)
    check_quantized(solops.rms_norm_quant(x, normalized_shape, weight), quantize_rows(y, len(normalized_shape)), y)
    # Without weight, y / scale is x * 448 / amax(|x|): a power of two times x for some rows, so 1/16
    # of their codes are exact ties, which the comparison leaves to either rounding.
    y = F.rms_norm(x.float(), normalized_shape, None, 1e-3)
    check_quantized(solops.rms_norm_quant(x, normalized_shape, eps=1e-3), quantize_rows(y, len(normalized_shape)), y)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, normalized_shape", SHAPES)
def test_layer_norm_quant_equals_the_pytorch_formula(shape, normalized_shape, dtype):
    x = random_input(shape, dtype)
    weight = random_input(normalized_shape, dtype, seed=1)
    bias = random_input(normalized_shape, dtype, seed=2)
    y = F.layer_norm(x.float(), normalized_shape, weight.float(), bias.float(), 1e-5)
    got = solops.layer_norm_quant(x, normalized_shape, weight, bias)
    check_quantized(got, quantize_rows(y, len(normalized_shape)))
    # Dequantized, the codes are y to within half an e4m3 step (2^-4 relative) of the row's amax.
    q, scale = got
    dequantized = q.float() * scale.reshape(*scale.shape, *[1] * len(normalized_shape))
    torch.testing.assert_close(dequantized, y, rtol=2 ** -4, atol=float(scale.max()) * 2 ** -9 * 1.01)
    y = F.layer_norm(x.float(), normalized_shape, weight.float(), None, 1e-5)
    check_quantized(solops.layer_norm_quant(x, normalized_shape, weight), quantize_rows(y, len(normalized_shape)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1024, 1152), (1, 4096), (2, 256, 1152), (7, 5121), (1025, 64), (2, 20000), (1, 1)])
def test_ada_layer_norm_equals_the_spec_formula(shape, dtype):
    x = random_input(shape, dtype)
    scale, shift = random_input(shape, dtype, seed=1), random_input(shape, dtype, seed=2)
    want = (scale.float() * F.layer_norm(x.float(), shape[-1:], None, None, 1e-5) + shift.float()).to(dtype)
    close(solops.ada_layer_norm(x, scale, shift), want, ADA_TOLERANCE[dtype])
    # DiT's x_hat * (1 + scale) + shift is the op given 1 + scale (in x's dtype, as the op takes it).
    modulation = (1 + scale.float()).to(dtype)
    dit = (F.layer_norm(x.float(), shape[-1:], eps=1e-6) * modulation.float() + shift.float()).to(dtype)
    close(solops.ada_layer_norm(x, modulation, shift, eps=1e-6), dit, ADA_TOLERANCE[dtype])


group_formula = torch_function(NORM_OPS["GroupRMSNormFwd"])  # spec 2.19, eps 1e-6


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2048, 4096), (1, 16384), (2, 3, 3000), (7, 5121), (4, 1025, 64), (2, 20000),
                                   (1, 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_rms_norm_equals_the_spec_formula(shape, dtype, affine):
    x = random_input(shape, dtype)
    weight = random_input(shape[-2:], dtype, seed=1) if affine else None
    y, rstd = solops.group_rms_norm(x, shape[-1:], weight)
    want_y, want_rstd = group_formula(x, weight if affine else torch.ones(shape[-2:], dtype=dtype, device="cuda"))
    assert rstd.dtype == torch.float32 and rstd.shape == x.shape[:-1]
    close(y, want_y, RMS_TOLERANCE[dtype])
    torch.testing.assert_close(rstd, want_rstd, rtol=1e-5, atol=0)


def test_group_rms_norm_nan_stays_in_its_vector():
    x = random_input((4, 3, 1000), torch.bfloat16)
    x[1, 2, 17] = float("nan")
    y, rstd = solops.group_rms_norm(x, (1000,), random_input((3, 1000), torch.bfloat16, seed=1))
    assert torch.isnan(y[1, 2]).all() and torch.isnan(rstd[1, 2])
    assert not torch.isnan(y[:, :2]).any() and not torch.isnan(y[0]).any() and torch.isnan(rstd).sum() == 1


VECTOR_NORM_TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}  # spec 2.22


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", [1, 2])
@pytest.mark.parametrize("shape, dim, keepdim", [
    ((4, 128, 4096), [0, 2], False),  # the catalogue's multi-dim row
    ((2048, 4096), None, False),  # full reductions
    ((64, 32768), None, True),
    ((3, 5, 7), -1, False),
    ((3, 5, 7), (0,), True),  # strided runs
    ((1,), None, False),
    ((), None, False),
    ((3, 0), 1, False),
])
def test_vector_norm_equals_pytorch(shape, dim, keepdim, ord, dtype):
    x = random_input(shape, dtype)
    want = torch.linalg.vector_norm(x.float(), ord, dim, keepdim).to(dtype)
    got = solops.vector_norm(x, ord, dim, keepdim)
    assert got.shape == want.shape and got.dtype == dtype
    close(got, want, VECTOR_NORM_TOLERANCE[dtype])


def test_vector_norm_f16_overflow_and_nan():
    x = random_input((2048, 4096), torch.float16)
    assert solops.vector_norm(x, 1).item() == float("inf")  # spec 2.22: ~6.7e6 > 65504
    x[7, 9] = float("nan")
    assert torch.isnan(solops.vector_norm(x, 2))
    rows = solops.vector_norm(x, 2, -1)
    assert torch.isnan(rows[7]) and torch.isnan(rows).sum() == 1


WEIGHT_NORM_TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}  # spec 2.20


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dim", [
    ((2048, 4096), 0),  # the catalogue's shape
    ((1, 16384), 0),  # decode: one norm split over two blocks
    ((3, 5, 3000), 1),
    ((7, 5121), 1),  # odd lengths, the scalar scaling path
    ((6, 5, 7), 2),
    ((2048, 4096), -1),  # PyTorch's whole tensor (spec 6.7)
    ((7,), 0),
    ((7,), -1),
])
def test_weight_norm_equals_pytorch(shape, dim, dtype):
    v = random_input(shape, dtype)
    n = 1 if dim == -1 else shape[dim]
    g = random_input((n,), dtype, seed=1)
    stored_g = g.view([n if d == dim else 1 for d in range(len(shape))])
    # _weight_norm_interface fuses only dims 0 and -1; _weight_norm and norm_except_dim take any dim.
    want_w = torch._weight_norm(v.float(), stored_g.float(), dim)
    w, norm = solops.weight_norm(v, stored_g, dim)
    assert w.dtype == dtype and norm.dtype == torch.float32 and norm.shape == (n,)
    close(w, want_w.to(dtype), WEIGHT_NORM_TOLERANCE[dtype])
    torch.testing.assert_close(norm, torch.norm_except_dim(v.float(), 2, dim).flatten(), rtol=1e-5, atol=0)
    close(solops.weight_norm(v, g, dim)[0], w, 0)  # [n] g as well as PyTorch's [n, 1, ...]


def test_weight_norm_unaligned_nan_and_zero_rows():
    v = random_input((64, 4097), torch.float16)[:, 1:].contiguous()
    v[3, 5] = float("nan")
    v[7] = 0
    g = random_input((64,), torch.float16, seed=1)
    w, norm = solops.weight_norm(v, g)
    want_w, want_norm = torch._weight_norm_interface(v.float(), g.float().view(64, 1), 0)
    close(w, want_w.half(), 1e-3)
    assert torch.isnan(w[3]).all() and torch.isnan(w[7]).all() and torch.isnan(w).sum() == 2 * 4096
    unaligned = torch.empty(64 * 4096 + 1, dtype=torch.float16, device="cuda")[1:].view(64, 4096)
    unaligned.copy_(v)
    close(solops.weight_norm(unaligned, g)[0], want_w.half(), 1e-3)


def test_weight_norm_under_torch_compile_and_in_a_cuda_graph():
    v, g = random_input((2048, 4096), torch.bfloat16), random_input((2048,), torch.bfloat16, seed=1)
    whole_g = g[:1]
    compiled = torch.compile(lambda v: (solops.weight_norm(v, g), solops.weight_norm(v, whole_g, -1)),
                             fullgraph=True)
    for got, want in zip(compiled(v), (solops.weight_norm(v, g), solops.weight_norm(v, whole_g, -1))):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    solops.weight_norm(v, whole_g, -1)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph):
            static_w, static_norm = solops.weight_norm(v, whole_g, -1)  # workspace from the graph's pool
    torch.cuda.current_stream().wait_stream(stream)
    v.copy_(random_input(v.shape, v.dtype, 7))
    graph.replay()
    torch.cuda.synchronize()
    # torch._weight_norm's dim -1 is the whole tensor (its _weight_norm_interface's is the last axis).
    close(static_w, torch._weight_norm(v.float(), whole_g.float(), -1).bfloat16(), 1.6e-2)
    torch.testing.assert_close(static_norm, v.float().norm().reshape(1), rtol=1e-5, atol=0)


def spectral_formula(x, u, v, n_iter, eps=1e-12):
    """Spec 2.21: torch.nn.utils.spectral_norm's power method and sigma on W widened to f32."""
    w = x.float()
    for _ in range(n_iter):
        v = F.normalize(torch.mv(w.t(), u), dim=0, eps=eps)
        u = F.normalize(torch.mv(w, v), dim=0, eps=eps)
    return torch.vdot(u, torch.mv(w, v)), u, v


def close_spectral(got, want):
    """Spec 2.21: sigma to rtol 1e-4; u_out and v_out to atol 1e-5, rtol 1e-4."""
    assert all(t.dtype == torch.float32 for t in got) and got[0].dim() == 0
    torch.testing.assert_close(got[0], want[0], rtol=1e-4, atol=0, equal_nan=True)
    for g, w in zip(got[1:], want[1:]):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, equal_nan=True)


def spectral_inputs(shape, dtype):
    """x of dtype, u and v f32, from three seeds."""
    return (random_input(shape, dtype), random_input(shape[:1], torch.float32, 1),
            random_input(shape[1:], torch.float32, 2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_iter", [0, 1, 3])
@pytest.mark.parametrize("shape", [
    (2048, 4096),  # the catalogue's shapes: W^T u split over row chunks
    (1, 16384),  # decode
    (7, 5121),  # odd columns: one element a load
    (1000, 3),
    (1, 1),
    (0, 5),  # empty dims as PyTorch: sigma 0, the other vector normalized zeros
    (5, 0),
])
def test_spectral_norm_power_iter_equals_the_pytorch_formula(shape, n_iter, dtype):
    x, u, v = spectral_inputs(shape, dtype)
    u_before, v_before = u.clone(), v.clone()
    close_spectral(solops.spectral_norm_power_iter(x, u, v, n_iter), spectral_formula(x, u, v, n_iter))
    assert torch.equal(u, u_before) and torch.equal(v, v_before)


def test_spectral_norm_power_iter_eps_nan_and_unaligned():
    x, u, v = spectral_inputs((64, 1000), torch.float16)
    zeros = torch.zeros_like(x)
    close_spectral(solops.spectral_norm_power_iter(zeros, u, v), spectral_formula(zeros, u, v, 1))
    close_spectral(solops.spectral_norm_power_iter(zeros, u, v, eps=0.0), spectral_formula(zeros, u, v, 1, 0.0))
    x[3, 5] = float("nan")
    sigma, u_out, v_out = solops.spectral_norm_power_iter(x, u, v)
    assert torch.isnan(sigma) and torch.isnan(u_out).all() and torch.isnan(v_out).all()
    x[3, 5] = 0
    unaligned = torch.empty(64 * 1000 + 1, dtype=torch.float16, device="cuda")[1:].view(64, 1000)
    unaligned.copy_(x)
    close_spectral(solops.spectral_norm_power_iter(unaligned, u, v, 2), spectral_formula(x, u, v, 2))


@pytest.mark.parametrize("n_iter", [1, 2])
def test_spectral_norm_power_iter_is_torch_nn_utils_spectral_norm(n_iter):
    x, u, v = spectral_inputs((64, 300), torch.float32)
    u, v = F.normalize(u, dim=0), F.normalize(v, dim=0)
    linear = torch.nn.Linear(300, 64, bias=False, device="cuda")
    with torch.no_grad():
        linear.weight.copy_(x)
    torch.nn.utils.spectral_norm(linear, n_power_iterations=n_iter)
    with torch.no_grad():
        linear.weight_u.copy_(u)
        linear.weight_v.copy_(v)
    linear(torch.zeros(1, 300, device="cuda"))  # training mode: the pre-forward hook runs the power method
    sigma, u_out, v_out = solops.spectral_norm_power_iter(x, u, v, n_iter)
    for got, want in ((u_out, linear.weight_u), (v_out, linear.weight_v), (x / sigma, linear.weight.detach())):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_transposed_call_is_parametrizations_spectral_norm():
    # The parametrization updates u = normalize(W v) first, then v = normalize(W^T u): the op's step on
    # W^T with the roles of u and v swapped; sigma = u^T W v = v^T W^T u.
    x, u, v = spectral_inputs((64, 300), torch.float32)
    linear = torch.nn.Linear(300, 64, bias=False, device="cuda")
    with torch.no_grad():
        linear.weight.copy_(x)
    torch.nn.utils.parametrizations.spectral_norm(linear, n_power_iterations=2)
    parametrization = linear.parametrizations.weight[0]
    with torch.no_grad():
        parametrization._u.copy_(F.normalize(u, dim=0))
        parametrization._v.copy_(F.normalize(v, dim=0))
    u, v = parametrization._u.clone(), parametrization._v.clone()
    weight = linear.weight  # training mode: runs the power method, then W / sigma
    sigma, v_out, u_out = solops.spectral_norm_power_iter(x.t().contiguous(), v, u, 2)
    for got, want in ((u_out, parametrization._u), (v_out, parametrization._v), (x / sigma, weight.detach())):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_spectral_norm_power_iter_under_torch_compile_and_in_a_cuda_graph():
    x, u, v = spectral_inputs((2048, 4096), torch.bfloat16)
    compiled = torch.compile(lambda x, u, v: solops.spectral_norm_power_iter(x, u, v, 2), fullgraph=True)
    for got, want in zip(compiled(x, u, v), solops.spectral_norm_power_iter(x, u, v, 2)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)  # deterministic: the same bits
    solops.spectral_norm_power_iter(x, u, v)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph):
            static = solops.spectral_norm_power_iter(x, u, v)  # workspace from the graph's pool
    torch.cuda.current_stream().wait_stream(stream)
    x.copy_(random_input(x.shape, x.dtype, 7))
    graph.replay()
    torch.cuda.synchronize()
    close_spectral(static, spectral_formula(x, u, v, 1))


def test_quant_nan_poisons_its_rows_scale_and_codes():
    x = random_input((4, 4096), torch.bfloat16)
    x[1, 17] = float("nan")
    for q, scale in (solops.rms_norm_quant(x, (4096,)), solops.layer_norm_quant(x, (4096,))):
        assert torch.isnan(scale[1]) and torch.isnan(q[1].float()).all()
        assert not torch.isnan(scale[[0, 2, 3]]).any() and not torch.isnan(q[[0, 2, 3]].float()).any()


def test_nan_stays_in_its_row():
    x = random_input((4, 4096), torch.bfloat16)
    x[1, 17] = float("nan")
    got = solops.rms_norm(x, (4096,))
    assert torch.isnan(got[1]).all()
    assert not torch.isnan(got[[0, 2, 3]]).any()


QK_SHAPES = [
    # q shape, k shape (GQA: fewer key heads), normalized_shape
    ((2048, 32, 128), (2048, 8, 128), (128,)),
    ((1, 16384), (1, 16384), (16384,)),  # decode, OLMo-2's whole-hidden QK-norm
    ((7, 3, 100), (7, 1, 100), (100,)),
    ((2, 5, 20000), (2, 1, 20000), (20000,)),  # beyond the register capacity
    ((3, 4, 8, 16), (3, 2, 8, 16), (8, 16)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("q_shape, k_shape, normalized_shape", QK_SHAPES)
def test_qk_norm_equals_two_rms_norms(q_shape, k_shape, normalized_shape, dtype):
    q, k = random_input(q_shape, dtype), random_input(k_shape, dtype, seed=1)
    q_weight, k_weight = random_input(normalized_shape, dtype, seed=2), random_input(normalized_shape, dtype, seed=3)
    tol = RMS_TOLERANCE[dtype]
    q_out, k_out = solops.qk_norm(q, k, q_weight, k_weight, 1e-6)
    close(q_out, F.rms_norm(q.float(), normalized_shape, q_weight.float(), 1e-6).to(dtype), tol)
    close(k_out, F.rms_norm(k.float(), normalized_shape, k_weight.float(), 1e-6).to(dtype), tol)
    # Without weights normalized_shape defaults to the last dim.
    if len(normalized_shape) == 1:
        q_out, k_out = solops.qk_norm(q, k)
        close(k_out, F.rms_norm(k.float(), normalized_shape, None, 1e-6).to(dtype), tol)


BATCH_NORM_TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}  # spec 2.7


def batch_norm_parameters(channels):
    """running_mean, running_var (in [0.5, 1.5)), weight and bias: float32 [channels] on the GPU."""
    mean, weight, bias = (random_input((channels,), torch.float32, seed=seed) for seed in (1, 2, 3))
    var = torch.rand(channels, generator=torch.Generator(device="cuda").manual_seed(4), device="cuda") + 0.5
    return mean, var, weight, bias


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [
    (8, 64, 32, 32), (4, 256, 28, 28),  # catalogue shapes: 16-byte vectors, planes sharing a block
    (32, 64),  # rank 2: one element a channel in each row
    (2, 3, 7, 5), (3, 5, 49), (2, 8, 1, 1),  # odd planes and planes of one element: one element a thread
    (3, 2, 8200),  # long planes, a partial last chunk
    (1, 1), (0, 4, 8), (2, 0), (2, 3, 0),  # one element, empty dims
])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_inference_equals_pytorch(shape, dtype, affine):
    x = random_input(shape, dtype)
    mean, var, weight, bias = batch_norm_parameters(shape[1])
    parameters = (weight, bias) if affine else (None, None)
    running = (mean.clone(), var.clone())
    for eps in (1e-5, 0.1):
        # F.batch_norm refuses a weight of no channels; the output is then empty.
        want = (x.clone() if shape[1] == 0 else
                F.batch_norm(x.float(), mean, var, *parameters, training=False, eps=eps).to(dtype))
        close(solops.batch_norm_inference(x, mean, var, *parameters, eps=eps), want, BATCH_NORM_TOLERANCE[dtype])
    assert torch.equal(mean, running[0]) and torch.equal(var, running[1])  # only read


def test_batch_norm_inference_nan_and_infinity_stay_in_their_elements():
    x = random_input((4, 8, 33), torch.float16)
    x[1, 2, 5], x[3, 7, 0], x[0, 0, 32] = float("nan"), float("inf"), -float("inf")
    mean, var, weight, bias = batch_norm_parameters(8)
    got = solops.batch_norm_inference(x, mean, var, weight, bias)
    close(got, F.batch_norm(x.float(), mean, var, weight, bias, training=False).half(), 1e-3)
    assert got.isnan().sum() == 1 and got.isinf().sum() == 2


def test_torch_compile_traces_without_graph_breaks():
    x, residual = random_input((64, 4096), torch.bfloat16), random_input((64, 4096), torch.bfloat16, seed=1)
    weight, bias = random_input((4096,), torch.bfloat16, seed=2), random_input((4096,), torch.bfloat16, seed=3)

    def block(x, residual):
        a = solops.rms_norm(x, (4096,), weight, 1e-6)
        b = solops.layer_norm(x, (4096,), weight, bias)
        c = solops.gemma_rms_norm(x, weight)
        d, e = solops.fused_add_rms_norm(x, residual, weight)
        f, g = solops.fused_add_layer_norm(x, residual, weight, bias)
        h, i = solops.rms_norm_quant(x, (4096,), weight)
        j, k = solops.layer_norm_quant(x, (4096,), weight, bias)
        m = solops.ada_layer_norm(x, residual, x)
        n, o = solops.qk_norm(x.view(64, 32, 128), residual.view(64, 32, 128), weight[:128], bias[:128])
        p, r = solops.group_rms_norm(x.view(4, 16, 4096), (4096,), residual[:16])
        s, t = solops.vector_norm(x, 1), solops.vector_norm(x.view(4, 16, 4096), 2, [0, 2], True)
        return a, b, c, d, e, f, g, h.view(torch.uint8), i, j.view(torch.uint8), k, m, n, o, p, r, s, t

    compiled = torch.compile(block, fullgraph=True)
    for got, want in zip(compiled(x, residual), block(x, residual)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert torch._dynamo.explain(block)(x, residual).graph_break_count == 0


def test_in_place_form_under_torch_compile():
    x, residual = random_input((16, 4096), torch.float16), random_input((16, 4096), torch.float16, seed=1)
    weight = random_input((4096,), torch.float16, seed=2)
    want_out, want_residual = solops.fused_add_rms_norm(x, residual, weight)

    def step(x, residual):
        solops.fused_add_rms_norm_(x, residual, weight)
        return x * 2

    doubled = torch.compile(step, fullgraph=True)(x, residual)
    torch.testing.assert_close(x, want_out, rtol=0, atol=0)
    torch.testing.assert_close(residual, want_residual, rtol=0, atol=0)
    torch.testing.assert_close(doubled, want_out * 2, rtol=0, atol=0)


def test_cuda_graph_capture_and_replay():
    static_x = random_input((2048, 8192), torch.bfloat16)
    static_residual = random_input((2048, 8192), torch.bfloat16, seed=1)
    weight = random_input((8192,), torch.bfloat16, seed=2)
    solops.rms_norm(static_x, (8192,), weight, 1e-6)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph):
            static_out = solops.rms_norm(static_x, (8192,), weight, 1e-6)
            static_fused, static_sum = solops.fused_add_rms_norm(static_x, static_residual, weight)
            static_quant = solops.rms_norm_quant(static_x, (8192,), weight)
            static_ada = solops.ada_layer_norm(static_x, static_residual, static_residual)
            static_q, static_k = solops.qk_norm(static_x.view(2048, 64, 128), static_residual.view(2048, 64, 128),
                                                weight[:128], weight[128:256])
            static_group, static_rstd = solops.group_rms_norm(static_x, (8192,), static_residual)
            static_l2 = solops.vector_norm(static_x)  # its workspace comes from the graph's pool
    torch.cuda.current_stream().wait_stream(stream)
    for seed in (5, 6):
        static_x.copy_(random_input(static_x.shape, static_x.dtype, seed))
        graph.replay()
        torch.cuda.synchronize()
        close(static_out, F.rms_norm(static_x.float(), (8192,), weight.float(), 1e-6).bfloat16(), 1.6e-2)
        want_out, want_sum = fused_reference("rms", static_x, static_residual, weight, None, 1e-6)
        close(static_fused, want_out, 1.6e-2)
        close(static_sum, want_sum, 1.6e-2)
        check_quantized(static_quant, quantize_rows(F.rms_norm(static_x.float(), (8192,), weight.float(), 1e-6), 1))
        want_ada = static_residual.float() * F.layer_norm(static_x.float(), (8192,)) + static_residual.float()
        close(static_ada, want_ada.bfloat16(), 1.6e-2)
        close(static_q.view(2048, 8192),
              F.rms_norm(static_x.view(2048, 64, 128).float(), (128,), weight[:128].float(), 1e-6)
              .bfloat16().view(2048, 8192), 1.6e-2)
        want_group, want_rstd = group_formula(static_x, static_residual)
        close(static_group, want_group, 1.6e-2)
        torch.testing.assert_close(static_rstd, want_rstd, rtol=1e-5, atol=0)
        close(static_l2, torch.linalg.vector_norm(static_x.float()).bfloat16(), 1e-2)


@pytest.mark.parametrize("call, fragment", BAD_CALLS + ALIASING_CALLS,
                         ids=[fragment for _, fragment in BAD_CALLS + ALIASING_CALLS])
def test_bad_input_gives_a_clear_error(call, fragment):
    with pytest.raises(RuntimeError) as error:
        call()
    assert fragment in str(error.value)


# ---- autograd: RMSNormBwd and LayerNormBwd (spec 2.13, 2.14) ---------------------------------------

# Spec 2.13, 2.14 (proposed): atol = rtol; the parameter gradients are sums over M rows, their atol
# scaled by sqrt(M).
BACKWARD_TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}


def leaf(t):
    return t.detach().clone().requires_grad_()


def close_gradients(got, want, dtype, rows):
    """got: our gradients (grad_x first, then parameter gradients); want: f64 autograd's, cast."""
    tol = BACKWARD_TOLERANCE[dtype]
    close(got[0], want[0].to(dtype), tol)
    for g, w in zip(got[1:], want[1:]):
        torch.testing.assert_close(g, w.to(dtype), rtol=tol, atol=tol * max(1.0, rows) ** 0.5, equal_nan=True)


def pytorch_gradients(norm, x, dy, *parameters):
    """The gradients of F.rms_norm / F.layer_norm in float64 from the same inputs."""
    leaves = [leaf(t.double()) if t is not None else None for t in (x, *parameters)]
    norm(*leaves).backward(dy.double())
    return [t.grad for t in leaves if t is not None]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, normalized_shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_gradients_equal_pytorch(shape, normalized_shape, dtype, affine):
    x, dy = leaf(random_input(shape, dtype)), random_input(shape, dtype, seed=3)
    weight = leaf(random_input(normalized_shape, dtype, seed=1)) if affine else None
    solops.rms_norm(x, normalized_shape, weight, 1e-6).backward(dy)
    want = pytorch_gradients(lambda a, w=None: F.rms_norm(a, normalized_shape, w, 1e-6), x, dy,
                             *([weight] if affine else []))
    rows = x.numel() // torch.Size(normalized_shape).numel()
    close_gradients([x.grad] + ([weight.grad] if affine else []), want, dtype, rows)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, normalized_shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_gradients_equal_pytorch(shape, normalized_shape, dtype, affine):
    x, dy = leaf(random_input(shape, dtype)), random_input(shape, dtype, seed=3)
    parameters = [leaf(random_input(normalized_shape, dtype, seed=s)) for s in (1, 2)] if affine else []
    solops.layer_norm(x, normalized_shape, *parameters, eps=1e-5).backward(dy)
    want = pytorch_gradients(lambda a, *p: F.layer_norm(a, normalized_shape, *p, eps=1e-5), x, dy, *parameters)
    rows = x.numel() // torch.Size(normalized_shape).numel()
    close_gradients([x.grad] + [p.grad for p in parameters], want, dtype, rows)


def test_backward_ops_from_the_saved_statistics():
    x, dy = random_input((300, 5121), torch.bfloat16), random_input((300, 5121), torch.bfloat16, seed=3)
    weight, bias = random_input((5121,), torch.bfloat16, seed=1), random_input((5121,), torch.bfloat16, seed=2)
    y, mean, rstd = torch.ops.solops.layer_norm_with_stats(x, [5121], weight, bias, 1e-5)
    assert mean.dtype == rstd.dtype == torch.float32 and mean.shape == rstd.shape == (300,)
    close(mean, x.float().mean(-1), 1e-4)
    close(rstd, torch.rsqrt(x.float().var(-1, unbiased=False) + 1e-5), 1e-4)
    got = solops.layer_norm_backward(dy, x, (5121,), mean, rstd, weight)
    want = pytorch_gradients(lambda a, w, b: F.layer_norm(a, (5121,), w, b, 1e-5), x, dy, weight, bias)
    close_gradients(got, want, torch.bfloat16, 300)
    _, rstd = torch.ops.solops.rms_norm_with_stats(x, [5121], weight, 1e-6)
    got = solops.rms_norm_backward(dy, x, 5121, rstd, weight)
    want = pytorch_gradients(lambda a, w: F.rms_norm(a, (5121,), w, 1e-6), x, dy, weight)
    close_gradients(got, want, torch.bfloat16, 300)


def test_no_grad_runs_the_plain_forward():
    x = leaf(random_input((4, 64), torch.float16))
    with torch.no_grad():
        y = solops.rms_norm(x, (64,))
    assert y.grad_fn is None


def test_nan_gradient_stays_in_its_row():
    x, dy = leaf(random_input((4, 3001), torch.float32)), random_input((4, 3001), torch.float32, seed=3)
    with torch.no_grad():
        x[1, 17] = float("nan")
    solops.layer_norm(x, (3001,)).backward(dy)
    assert x.grad[1].isnan().all() and not x.grad[[0, 2, 3]].isnan().any()


def test_torch_compile_traces_forward_and_backward():
    def loss(x, weight, bias):
        return (solops.rms_norm(x, (4096,), weight, 1e-6) + solops.layer_norm(x, (4096,), weight, bias)).float().sum()

    inputs = [random_input(shape, torch.bfloat16, seed=s) for s, shape in enumerate([(64, 4096), (4096,), (4096,)])]
    eager, compiled = [leaf(t) for t in inputs], [leaf(t) for t in inputs]
    loss(*eager).backward()
    torch.compile(loss, fullgraph=True)(*compiled).backward()
    for got, want in zip(compiled, eager):
        close(got.grad, want.grad, 2e-2)
    assert torch._dynamo.explain(loss)(*compiled).graph_break_count == 0


def test_forward_and_backward_in_a_cuda_graph():
    ns = [8192]
    static_x, static_dy = random_input((2048, 8192), torch.bfloat16), random_input((2048, 8192), torch.bfloat16, 3)
    weight = random_input((8192,), torch.bfloat16, seed=1)

    def step():
        _, rstd = torch.ops.solops.rms_norm_with_stats(static_x, ns, weight, 1e-6)
        return torch.ops.solops.rms_norm_backward(static_dy, static_x, ns, rstd, weight)

    step()  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph):
            static_grads = step()
    torch.cuda.current_stream().wait_stream(stream)
    for seed in (5, 6):
        static_x.copy_(random_input(static_x.shape, static_x.dtype, seed))
        graph.replay()
        torch.cuda.synchronize()
        for got, want in zip(static_grads, step()):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


