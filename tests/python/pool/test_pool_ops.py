"""solops pooling ops as PyTorch users meet them: equal to torch.nn.functional (mean pooling: to a
PyTorch formula), traced by torch.compile(fullgraph=True), captured and replayed in CUDA graphs,
clear errors on bad input (pool_calls.py). Needs a CUDA device; skips loudly without one."""

import itertools

import pytest
import torch
import torch.nn.functional as F

import solops
from pool_calls import BAD_CALLS
from support import HAS_CUDA

if not HAS_CUDA:
    pytest.skip("SKIPPED: no CUDA device on this machine; these tests need one", allow_module_level=True)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
AVG_TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}

MAX_CASES = [
    # shape, kernel_size, stride, padding, dilation, ceil_mode
    ((32, 64, 112, 112), 3, 2, 1, 1, False),
    ((16, 128, 56, 56), 2, 2, 0, 1, False),
    ((32, 64, 55, 55), 3, 2, 0, 1, True),
    ((3, 17, 23), (2, 3), None, (1, 0), (2, 1), True),
    ((2, 5, 1, 9), (1, 4), (1, 3), 0, 1, True),
]
AVG_CASES = [
    # shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    ((2, 64, 112, 112), 3, 2, 1, False, True, None),
    ((2, 128, 56, 56), 5, 2, 2, False, True, None),
    ((3, 96, 55, 57), (3, 5), 2, (1, 2), True, False, 7),
    ((4, 13, 11), 3, None, 1, True, False, None),
    ((1, 2, 7, 5), (2, 4), (3, 1), (1, 2), True, True, -3),
]
MAX1D_CASES = [
    # shape, kernel_size, stride, padding, dilation, ceil_mode
    ((32, 80, 4096), 3, 3, 0, 1, False),
    ((64, 256, 128), 128, 1, 0, 1, False),
    ((16, 128, 2048), 5, 2, 2, 2, True),
    ((7, 33), 4, None, 2, 1, True),
    ((2, 3, 1), 1, 2, 0, 1, True),
]
AVG1D_CASES = [
    # shape, kernel_size, stride, padding, ceil_mode, count_include_pad
    ((4, 128, 4096), 3, 2, 1, False, True),
    ((2, 256, 32000), 5, 4, 2, False, True),
    ((2, 128, 2048), 4, 2, 1, True, False),
    ((5, 17), 3, None, 1, True, True),
]
POOL3D_CASES = [
    # shape, kernel_size, stride, padding, dilation (max) / divisor_override (avg), ceil_mode
    ((8, 4, 16, 28, 28), (1, 2, 2), (1, 2, 2), 0, None, False),
    ((2, 8, 8, 28, 28), (2, 3, 3), 2, 1, None, True),
    ((2, 24, 10, 20, 22), (2, 2, 3), 2, (0, 1, 1), 7, False),
    ((3, 9, 11, 7), 3, None, 1, None, True),
]

ADAPTIVE_CASES = [
    # shape, output_size
    ((8, 2048, 7, 7), 1),
    ((2, 128, 56, 56), (6, 6)),
    ((2, 64, 55, 57), 7),
    ((2048, 7, 7), (1, 1)),
    ((3, 5, 4), (7, None)),
]


MEAN_POOLING_CASES = [
    # x shape [B, S, H, D], chunk_size, seq_lens (None: uniform mode)
    ((1, 8192, 64, 128), 64, None),
    ((2, 2048, 64, 128), 64, [1024, 1024]),
    ((1, 1000, 64, 128), 32, [100, 200, 300, 400]),
    ((2, 70, 3, 11), 32, None),  # a short last chunk, odd rows
    ((3, 5, 2, 3), 64, None),  # one chunk longer than S
    ((1, 78, 4, 8), 32, [0, 40, 0, 5, 33]),  # empty and short sequences
    ((2, 300, 5, 7), 96, [299, 1]),
]
# spec 4.6 (proposed): atol = rtol = 1e-3 for f16 and f32, 1.6e-2 for bf16.
MEAN_POOLING_TOLERANCE = {torch.float32: 1e-3, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}


def random_input(shape, dtype, seed=0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=generator, device="cuda", dtype=torch.float32).to(dtype)


def assert_max_pool_equal(ours, theirs, x, *args):
    """Ours and PyTorch's max pool agree exactly on x: values (NaN included) and positions.
    Returns PyTorch's values."""
    want, want_indices = theirs(x, *args, return_indices=True)
    got, got_indices = ours(x, *args, return_indices=True)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(got_indices, want_indices)
    return want


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool2d_equals_pytorch(case, dtype):
    shape, k, s, p, d, ceil = case
    x = random_input(shape, dtype)
    x.view(-1)[::97] = float("nan")
    x.view(-1)[5::89] = float("-inf")
    want = assert_max_pool_equal(solops.max_pool2d, F.max_pool2d, x, k, s, p, d, ceil)
    torch.testing.assert_close(solops.max_pool2d(x, k, s, p, d, ceil), want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool2d_equals_pytorch(case, dtype):
    shape, k, s, p, ceil, include_pad, divisor = case
    x = random_input(shape, dtype, seed=1)
    want = F.avg_pool2d(x.float(), k, s, p, ceil, include_pad, divisor).to(dtype)
    got = solops.avg_pool2d(x, k, s, p, ceil, include_pad, divisor)
    tol = AVG_TOLERANCE[dtype]
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MAX1D_CASES)
def test_max_pool1d_equals_pytorch(case, dtype):
    shape, k, s, p, d, ceil = case
    x = random_input(shape, dtype, seed=2)
    x.view(-1)[::97] = float("nan")
    x.view(-1)[5::89] = float("-inf")
    want = assert_max_pool_equal(solops.max_pool1d, F.max_pool1d, x, k, s, p, d, ceil)
    torch.testing.assert_close(solops.max_pool1d(x, k, s, p, d, ceil), want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", AVG1D_CASES)
def test_avg_pool1d_equals_pytorch(case, dtype):
    shape, k, s, p, ceil, include_pad = case
    x = random_input(shape, dtype, seed=3)
    want = F.avg_pool1d(x.float(), k, s, p, ceil, include_pad).to(dtype)
    got = solops.avg_pool1d(x, k, s, p, ceil, include_pad)
    tol = AVG_TOLERANCE[dtype]
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL3D_CASES)
def test_pool3d_equals_pytorch(case, dtype):
    shape, k, s, p, divisor, ceil = case
    x = random_input(shape, dtype, seed=6)
    x.view(-1)[::97] = float("nan")
    assert_max_pool_equal(solops.max_pool3d, F.max_pool3d, x, k, s, p, 1, ceil)
    x = random_input(shape, dtype, seed=7)
    tol = AVG_TOLERANCE[dtype]
    want = F.avg_pool3d(x.float(), k, s, p, ceil, False, divisor).to(dtype)
    torch.testing.assert_close(solops.avg_pool3d(x, k, s, p, ceil, False, divisor), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ADAPTIVE_CASES)
def test_adaptive_pools_equal_pytorch(case, dtype):
    shape, size = case
    x = random_input(shape, dtype, seed=4)
    x.view(-1)[::61] = float("nan")
    assert_max_pool_equal(solops.adaptive_max_pool2d, F.adaptive_max_pool2d, x, size)
    x = random_input(shape, dtype, seed=5)
    tol = AVG_TOLERANCE[dtype]
    torch.testing.assert_close(solops.adaptive_avg_pool2d(x, size),
                               F.adaptive_avg_pool2d(x.float(), size).to(dtype), rtol=tol, atol=tol)


def ragged_metadata(seq_lens, chunk_size):
    offsets = torch.tensor([0, *itertools.accumulate(seq_lens)], dtype=torch.int32, device="cuda")
    return offsets, solops.prepare_chunk_indices(offsets, chunk_size)


def torch_mean_pooling(x, chunk_size, offsets=None, indices=None):
    """The PyTorch formula in f32: uniform mode zero-pads S to whole chunks, sums each chunk and
    divides by its real length; ragged mode averages chunk by chunk."""
    if offsets is None:
        batch, seq_len, heads, head_dim = x.shape
        chunks = -(-seq_len // chunk_size)
        padded = F.pad(x.float(), (0, 0, 0, 0, 0, chunks * chunk_size - seq_len))
        sums = padded.view(batch, chunks, chunk_size, heads, head_dim).sum(2)
        lengths = torch.full((chunks,), chunk_size, device=x.device)
        lengths[-1] = seq_len - (chunks - 1) * chunk_size
        return (sums / lengths.view(1, -1, 1, 1)).to(x.dtype)
    rows = []
    for sequence, chunk in indices.tolist():
        start = int(offsets[sequence]) + chunk * chunk_size
        end = min(start + chunk_size, int(offsets[sequence + 1]))
        rows.append(x[:, start:end].float().mean(1))
    return torch.stack(rows, 1).to(x.dtype)


def test_prepare_chunk_indices_enumerates_every_chunk_in_order():
    offsets, indices = ragged_metadata([0, 40, 0, 5, 33], 32)
    assert offsets.tolist() == [0, 0, 40, 40, 45, 78]
    assert indices.dtype == torch.int32
    assert indices.tolist() == [[1, 0], [1, 1], [3, 0], [4, 0], [4, 1]]
    assert ragged_metadata([100, 200, 300, 400], 32)[1].shape == (34, 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MEAN_POOLING_CASES)
def test_mean_pooling_equals_pytorch(case, dtype):
    shape, chunk_size, seq_lens = case
    x = random_input(shape, dtype, seed=8)
    x.view(-1)[::997] = float("nan")
    metadata = ragged_metadata(seq_lens, chunk_size) if seq_lens is not None else ()
    want = torch_mean_pooling(x, chunk_size, *metadata)
    tol = MEAN_POOLING_TOLERANCE[dtype]
    for check_metadata in (True, False):
        got = solops.mean_pooling(x, chunk_size, *metadata, check_metadata=check_metadata)
        torch.testing.assert_close(got, want, rtol=tol, atol=tol, equal_nan=True)
    if seq_lens is None and x.numel() < 1 << 20:
        torch.testing.assert_close(solops.reference.run(solops.mean_pooling, x.cpu(), chunk_size), want.cpu(),
                                   rtol=tol, atol=tol, equal_nan=True)


def test_mean_pooling_metadata_outside_x_gives_nan_unchecked():
    x = random_input((1, 100, 2, 8), torch.float32, seed=9)
    offsets = torch.tensor([0, 30, 20, 100, 150], dtype=torch.int32, device="cuda")
    indices = torch.tensor([[0, 0], [1, 0], [2, 0], [3, 0], [2, 3], [-1, 0], [0, -1]], dtype=torch.int32,
                           device="cuda")
    got = solops.mean_pooling(x, 32, offsets, indices, check_metadata=False)
    torch.testing.assert_close(got[:, 0], x[:, 0:30].mean(1))
    torch.testing.assert_close(got[:, 2], x[:, 20:52].mean(1))
    assert torch.isnan(got[:, [1, 3, 4, 5, 6]]).all()
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing"):
        solops.mean_pooling(x, 32, offsets, indices)


def test_torch_compile_traces_without_graph_breaks():
    def block(x):
        y, indices = solops.max_pool2d(torch.relu(x), 3, 2, 1, return_indices=True)
        z = solops.avg_pool2d(y, 2, ceil_mode=True) * 2
        rows, row_indices = solops.max_pool1d(z.flatten(2), 3, return_indices=True)
        pooled = solops.adaptive_avg_pool2d(z, (3, None)) - solops.adaptive_max_pool2d(z, 1)
        return solops.avg_pool1d(rows, 2, ceil_mode=True), indices, row_indices, pooled

    x = random_input((4, 8, 33, 31), torch.float16)
    compiled = torch.compile(block, fullgraph=True)
    got, got_indices, got_row_indices, got_pooled = compiled(x)
    want, want_indices, want_row_indices, want_pooled = block(x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(got_pooled, want_pooled, rtol=0, atol=0)
    assert torch.equal(got_indices, want_indices)
    assert torch.equal(got_row_indices, want_row_indices)
    explanation = torch._dynamo.explain(block)(x)
    assert explanation.graph_break_count == 0


def test_mean_pooling_under_torch_compile():
    offsets, indices = ragged_metadata([100, 0, 156], 64)

    def block(x):
        uniform = solops.mean_pooling(torch.relu(x), 64)
        ragged = solops.mean_pooling(x, 64, offsets, indices, check_metadata=False)
        checked = solops.mean_pooling(x * 2, 64, offsets, indices)
        return uniform + 1, ragged, checked

    x = random_input((2, 256, 4, 32), torch.bfloat16, seed=10)
    compiled = torch.compile(block, fullgraph=True)
    for got, want in zip(compiled(x), block(x)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert torch._dynamo.explain(block)(x).graph_break_count == 0


def test_mean_pooling_cuda_graph_capture_needs_check_metadata_off():
    offsets, indices = ragged_metadata([100, 0, 156, 44], 64)
    static_x = random_input((2, 300, 4, 16), torch.float16, seed=11)
    solops.mean_pooling(static_x, 64, offsets, indices)  # checks the metadata once, outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph):
            static_y = solops.mean_pooling(static_x, 64, offsets, indices, check_metadata=False)
            static_uniform = solops.mean_pooling(static_x, 64)
    torch.cuda.current_stream().wait_stream(stream)
    for seed in (12, 13):
        static_x.copy_(random_input(static_x.shape, static_x.dtype, seed))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(static_y, torch_mean_pooling(static_x, 64, offsets, indices), rtol=1e-3, atol=1e-3)
        torch.testing.assert_close(static_uniform, torch_mean_pooling(static_x, 64), rtol=1e-3, atol=1e-3)

    refused = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        with pytest.raises(RuntimeError, match="being captured into a CUDA graph") as error:
            with torch.cuda.graph(refused):
                solops.mean_pooling(static_x, 64, offsets, indices)
    assert "check_metadata=False" in str(error.value)
    torch.cuda.current_stream().wait_stream(stream)


def test_cuda_graph_capture_and_replay():
    static_x = random_input((8, 16, 56, 56), torch.bfloat16)
    solops.max_pool2d(static_x, 3, 2, 1)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph):
            static_max, static_indices = solops.max_pool2d(static_x, 3, 2, 1, return_indices=True)
            static_avg = solops.avg_pool2d(static_x, 3, 2, 1)
    torch.cuda.current_stream().wait_stream(stream)
    for seed in (5, 6):
        static_x.copy_(random_input(static_x.shape, static_x.dtype, seed))
        graph.replay()
        torch.cuda.synchronize()
        want, want_indices = F.max_pool2d(static_x, 3, 2, 1, return_indices=True)
        torch.testing.assert_close(static_max, want, rtol=0, atol=0)
        assert torch.equal(static_indices, want_indices)
        torch.testing.assert_close(static_avg, F.avg_pool2d(static_x.float(), 3, 2, 1).bfloat16(),
                                   rtol=1.6e-2, atol=1.6e-2)



def faulty_metadata(fault):
    """Sequences of 0, 40, 0, 5 and 25 tokens (S = 70) at chunk_size 32, with one fault."""
    offsets, indices = ragged_metadata([0, 40, 0, 5, 25], 32)
    if fault == "offsets[0] != 0":
        offsets[0] = 1
    elif fault == "decreasing offsets":
        offsets[3] = 39
    elif fault == "offsets[NS] != S":
        offsets[5] = 69
    elif fault == "wrong count":
        indices = torch.cat([indices, indices.new_tensor([[4, 1]])])
    elif fault == "chunk past its sequence":
        indices[2, 1] = 1
    elif fault == "duplicate":
        indices[1] = indices[0]
    elif fault == "out of order":
        indices = indices[[0, 1, 3, 2]]
    return offsets, indices


@pytest.mark.parametrize("fault, fragment", [
    ("offsets[0] != 0", "offsets[0] = 1 must be 0"),
    ("decreasing offsets", "offsets must be non-decreasing"),
    ("offsets[NS] != S", "offsets[5] = 69 must equal S = 70"),
    ("wrong count", "indices lists 5 chunks, but the offsets make 4"),
    ("chunk past its sequence", "is past the end of sequence 3"),
    ("duplicate", "repeats indices[0]"),
    ("out of order", "is out of order"),
])
def test_mismatched_metadata_is_rejected(fault, fragment):
    x = random_input((2, 70, 3, 16), torch.float16)
    with pytest.raises(RuntimeError) as error:
        solops.mean_pooling(x, 32, *faulty_metadata(fault))
    assert fragment in str(error.value)


@pytest.mark.parametrize("call, fragment", BAD_CALLS, ids=[fragment for _, fragment in BAD_CALLS])
def test_bad_input_gives_a_clear_error(call, fragment):
    with pytest.raises(RuntimeError) as error:
        call()
    assert fragment in str(error.value)
