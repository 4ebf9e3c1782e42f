"""Every op of every family through PyTorch's machinery, from its sample call (pool/pool_samples.py,
norm/norm_samples.py, conv/conv_samples.py, topk/topk_samples.py): registered in all three namespaces,
fake implementations that agree with the C++ shape rules, one compiled graph for every size
(torch.compile(dynamic=True)), no graph break, opcheck, CUDA graphs, and the library's errors at trace
time and at run time.

The tests marked requires_cuda run the kernels and skip loudly without a GPU; the others run on
the CPU, on meta and fake tensors.
"""

import pytest
import torch
from torch._dynamo.testing import CompileCounter
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

import solops
from conv_samples import SAMPLES as CONV_SAMPLES
from norm_samples import SAMPLES as NORM_SAMPLES
from pool_samples import SAMPLES as POOL_SAMPLES
from support import DYNAMIC_SIZES, flat, registered_ops, requires_cuda
from topk_samples import SAMPLES as TOPK_SAMPLES

SAMPLES = POOL_SAMPLES + NORM_SAMPLES + CONV_SAMPLES + TOPK_SAMPLES
every_sample = pytest.mark.parametrize("sample", SAMPLES, ids=[sample.op for sample in SAMPLES])


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Every sample compiles Sample.run anew: one code object, so Dynamo's cache is emptied between
    tests (its recompile limit would otherwise count every sample)."""
    torch._dynamo.reset()


def clones(tensors):
    return tuple(t.clone() for t in tensors)


def fakes(tensors, mode, device):
    """Fake tensors of the given ones' shapes and dtypes on `device` (no GPU needed for "cuda")."""
    with mode:
        return tuple(torch.empty(t.shape, dtype=t.dtype, device=device) for t in tensors)


class OpCalls(TorchDispatchMode):
    """Records the solops ops a function calls, with their arguments."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "solops":
            self.calls.append((func, args, kwargs or {}))
        return func(*args, **(kwargs or {}))


def op_calls(sample, tensors):
    with OpCalls() as recorder:
        sample.run(tensors)
    return recorder.calls


def assert_same(got, want, exact=True):
    got, want = flat(got), flat(want)
    assert [None if t is None else (t.shape, t.dtype) for t in got] == \
        [None if t is None else (t.shape, t.dtype) for t in want]
    got, want = [t for t in got if t is not None], [t for t in want if t is not None]
    if exact and all(t.device.type != "meta" for t in want):
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


def test_every_registered_op_has_a_sample_and_all_three_targets():
    ops = registered_ops("solops")
    assert ops == {sample.op for sample in SAMPLES}
    assert registered_ops("solops_reference") == ops
    assert registered_ops("solops_cost") == ops


# ---- on the CPU: meta and fake tensors ---------------------------------------------------------


@every_sample
def test_fake_outputs_are_the_cpp_shape_rules(sample):
    # The solops_reference op on meta tensors runs the C++ shape rule; solops' own runs the Python fake.
    for size in DYNAMIC_SIZES:
        tensors = sample.inputs(size, "meta", torch.float16)
        with solops.reference.mode():
            want = sample.run(clones(tensors))
        assert_same(sample.run(tensors), want)


@every_sample
def test_one_graph_serves_every_size(sample):
    counter = CompileCounter()
    compiled = torch.compile(sample.run, backend=counter, dynamic=True, fullgraph=True)
    for size in DYNAMIC_SIZES:
        tensors = sample.inputs(size, "meta", torch.bfloat16)
        assert_same(compiled(clones(tensors)), sample.run(tensors))
    assert counter.frame_count == 1


@every_sample
def test_opcheck_on_meta_tensors(sample):
    for op, args, kwargs in op_calls(sample, sample.inputs(16, "meta", torch.float32)):
        torch.library.opcheck(op, args, kwargs)


class FunctionCalls(torch.Tensor):
    """A tensor subclass that records the functions __torch_function__ sees."""

    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        FunctionCalls.calls.append(func)
        return super().__torch_function__(func, types, args, kwargs or {})


@every_sample
def test_torch_function_overrides_see_the_op(sample):
    # The public functions call the ops through their handles (solops/_eager.py), which skips
    # __torch_function__: for a tensor that overrides it they call the OpOverload instead.
    tensors = tuple(t.as_subclass(FunctionCalls) for t in sample.inputs(16, "meta", torch.float16))
    FunctionCalls.calls.clear()
    sample.run(tensors)
    seen = {f.default if isinstance(f, torch._ops.OpOverloadPacket) else f for f in FunctionCalls.calls}
    assert {f for f in seen if isinstance(f, torch._ops.OpOverload)} == \
        {func for func, _, _ in op_calls(sample, sample.inputs(16, "meta", torch.float16))}


@every_sample
def test_a_cpu_tensor_is_refused_by_name(sample):
    tensors = sample.inputs(16, "cpu", torch.float32)
    with pytest.raises(RuntimeError, match="must be a CUDA tensor, got a CPU tensor"):
        sample.run(tensors)
    mode = FakeTensorMode()
    with pytest.raises(RuntimeError, match="must be a CUDA tensor, got a CPU tensor"), mode:
        sample.run(fakes(tensors, mode, "cpu"))


def strided(t):
    """t's values in a layout that is not contiguous: every other element of a wider tensor."""
    view = t.new_empty(*t.shape[:-1], 2 * t.shape[-1])[..., ::2]
    return view.copy_(t)


@every_sample
def test_a_strided_input_is_refused_at_trace_time(sample):
    mode = FakeTensorMode()
    tensors = list(fakes(sample.inputs(16, "meta", torch.float16), mode, "cuda"))
    tensors[0] = strided(tensors[0])
    with pytest.raises(RuntimeError, match="must be contiguous"), mode:
        sample.run(tensors)


@every_sample
def test_a_dtype_solops_lacks_is_refused_at_trace_time(sample):
    mode = FakeTensorMode()
    tensors = list(fakes(sample.inputs(16, "meta", torch.float16), mode, "cuda"))
    with mode:
        tensors[0] = tensors[0].double()
    with pytest.raises(RuntimeError, match="dtype float64"), mode:
        sample.run(tensors)


# ---- on the GPU: the kernels -------------------------------------------------------------------


@requires_cuda
@every_sample
def test_torch_compile_matches_eager(sample):
    tensors = sample.inputs(16, "cuda", torch.float16)
    compiled = torch.compile(sample.run, fullgraph=True)
    assert_same(compiled(clones(tensors)), sample.run(clones(tensors)))


@requires_cuda
@every_sample
def test_one_compiled_graph_matches_eager_at_every_size(sample):
    counter = CompileCounter()
    compiled = torch.compile(sample.run, backend=counter, dynamic=True, fullgraph=True)
    for size in DYNAMIC_SIZES:
        tensors = sample.inputs(size, "cuda", torch.bfloat16)
        assert_same(compiled(clones(tensors)), sample.run(clones(tensors)))
    assert counter.frame_count == 1


@requires_cuda
@every_sample
def test_cuda_graph_replay_matches_eager(sample):
    static = sample.inputs(16, "cuda", torch.float16)
    sample.run(clones(static))  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph):
        captured = sample.run(static)
    torch.cuda.current_stream().wait_stream(stream)
    for scale in (2, 3):
        fresh = tuple(t * scale for t in sample.inputs(16, "cuda", torch.float16))
        for target, source in zip(static, fresh):
            target.copy_(source)
        want = sample.run(clones(fresh))
        graph.replay()
        torch.cuda.synchronize()
        assert_same(captured, want)


@requires_cuda
@every_sample
def test_opcheck_on_cuda_tensors(sample):
    for op, args, kwargs in op_calls(sample, sample.inputs(16, "cuda", torch.float32)):
        torch.library.opcheck(op, args, kwargs)


@requires_cuda
@every_sample
def test_a_strided_input_is_refused_when_the_op_runs(sample):
    tensors = list(sample.inputs(16, "cuda", torch.float16))
    tensors[0] = strided(tensors[0])
    with pytest.raises(RuntimeError, match="must be contiguous"):
        sample.run(tensors)
