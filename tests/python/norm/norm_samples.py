"""One sample call of every normalization op, for the tests that run each op through PyTorch's
machinery (test_torch_integration.py): fakes, torch.compile, CUDA graphs, opcheck, errors. The
number of rows varies; the rows are 64 long (batch_norm_inference: the number of channels varies;
group_norm and instance_norm: the spatial size)."""

import torch

import solops
from support import Sample, random

N = 64


def _tensors(*shapes):
    """Tensors of the given shapes, `rows` standing for the varying size; a shape ending in "f32"
    is float32 and positive (statistics)."""
    def make(size, device, dtype):
        made = []
        for seed, shape in enumerate(shapes):
            statistic = shape[-1] == "f32"
            dims = [size if dim == "rows" else dim for dim in (shape[:-1] if statistic else shape)]
            made.append(random(dims, device, torch.float32 if statistic else dtype, seed, positive=statistic))
        return tuple(made)
    return make


ROWS, WEIGHT, STATS = ("rows", N), (N,), ("rows", "f32")
IMAGE, CHANNELS = (2, 4, "rows"), (4,)
_ops = torch.ops.solops

SAMPLES = [
    Sample("rms_norm", _tensors(ROWS, WEIGHT), lambda x, w: solops.rms_norm(x, N, w)),
    Sample("rms_norm_with_stats", _tensors(ROWS, WEIGHT), lambda x, w: _ops.rms_norm_with_stats(x, [N], w, 1e-6)),
    Sample("layer_norm", _tensors(ROWS, WEIGHT, WEIGHT), lambda x, w, b: solops.layer_norm(x, [N], w, b)),
    Sample("layer_norm_with_stats", _tensors(ROWS, WEIGHT, WEIGHT),
           lambda x, w, b: _ops.layer_norm_with_stats(x, [N], w, b, 1e-5)),
    Sample("gemma_rms_norm", _tensors(ROWS, WEIGHT), lambda x, w: solops.gemma_rms_norm(x, w)),
    Sample("fused_add_rms_norm", _tensors(ROWS, ROWS, WEIGHT), lambda x, r, w: solops.fused_add_rms_norm(x, r, w)),
    Sample("fused_add_rms_norm_", _tensors(ROWS, ROWS, WEIGHT), lambda x, r, w: solops.fused_add_rms_norm_(x, r, w),
           mutates=True),
    Sample("fused_add_layer_norm", _tensors(ROWS, ROWS, WEIGHT, WEIGHT),
           lambda x, r, w, b: solops.fused_add_layer_norm(x, r, w, b)),
    Sample("fused_add_layer_norm_", _tensors(ROWS, ROWS, WEIGHT, WEIGHT),
           lambda x, r, w, b: solops.fused_add_layer_norm_(x, r, w, b), mutates=True),
    Sample("ada_layer_norm", _tensors(ROWS, ROWS, ROWS), lambda x, s, t: solops.ada_layer_norm(x, s, t)),
    Sample("rms_norm_quant", _tensors(ROWS, WEIGHT), lambda x, w: solops.rms_norm_quant(x, N, w)),
    Sample("layer_norm_quant", _tensors(ROWS, WEIGHT, WEIGHT), lambda x, w, b: solops.layer_norm_quant(x, N, w, b)),
    Sample("qk_norm", _tensors(("rows", 8, N), ("rows", 2, N), WEIGHT, WEIGHT),
           lambda q, k, qw, kw: solops.qk_norm(q, k, qw, kw)),
    Sample("group_rms_norm", _tensors(("rows", 4, N), (4, N)), lambda x, w: solops.group_rms_norm(x, N, w)),
    Sample("vector_norm", _tensors(ROWS), lambda x: solops.vector_norm(x, 1, dim=-1)),
    Sample("weight_norm", _tensors(ROWS, ("rows",)), lambda v, g: solops.weight_norm(v, g, 0)),
    Sample("spectral_norm_power_iter", _tensors(ROWS, ("rows", "f32"), (N, "f32")),
           lambda x, u, v: solops.spectral_norm_power_iter(x, u, v, 2)),
    # The channels vary: x [2, C, 8], the four f32 [C] parameters positive.
    Sample("batch_norm_inference", _tensors((2, "rows", 8), ("rows", "f32"), ("rows", "f32"), ("rows", "f32"),
                                            ("rows", "f32")),
           lambda x, mean, var, w, b: solops.batch_norm_inference(x, mean, var, w, b)),
    # BatchNorm in training, x [2, C, 8] as batch_norm_inference's: the running statistics (updated in place)
    # are outputs too; float32 [C] parameters, then ones of x's dtype (f16, bf16 or f32 as the test draws).
    Sample("batch_norm_training", _tensors((2, "rows", 8), ("rows", "f32"), ("rows", "f32"), ("rows", "f32"),
                                           ("rows", "f32")),
           lambda x, mean, var, w, b: (solops.batch_norm(x, mean, var, w, b, True, 0.2, 1e-3), mean, var)),
    Sample("batch_norm_training_with_stats", _tensors((2, "rows", 8), ("rows",), ("rows",), ("rows",), ("rows",)),
           lambda x, mean, var, w, b: (*_ops.batch_norm_training_with_stats(x, w, b, mean, var, 0.1, 1e-5), mean,
                                       var)),
    Sample("batch_norm_backward", _tensors((2, "rows", 8), (2, "rows", 8), ("rows", "f32"), ("rows", "f32"),
                                           ("rows", "f32")),
           lambda dy, x, mean, invstd, w: solops.batch_norm_backward(dy, x, mean, invstd, w)),
    Sample("rms_norm_backward", _tensors(ROWS, ROWS, STATS, WEIGHT),
           lambda dy, x, rstd, w: solops.rms_norm_backward(dy, x, N, rstd, w)),
    Sample("layer_norm_backward", _tensors(ROWS, ROWS, STATS, STATS, WEIGHT),
           lambda dy, x, mean, rstd, w: solops.layer_norm_backward(dy, x, N, mean, rstd, w)),
    # GroupNorm and InstanceNorm: x [2, 4, rows] (the spatial size varies), two groups; the running
    # statistics, updated in place, are returned beside the output.
    Sample("group_norm", _tensors(IMAGE, CHANNELS, CHANNELS), lambda x, w, b: solops.group_norm(x, 2, w, b)),
    Sample("group_norm_with_stats", _tensors(IMAGE, CHANNELS, CHANNELS),
           lambda x, w, b: _ops.group_norm_with_stats(x, 2, w, b, 1e-5)),
    # The backward ops: every parameter gradient (the default with a weight), and output_mask asking
    # for fewer (None in their place; without a weight the default asks for neither).
    Sample("group_norm_backward", _tensors(IMAGE, IMAGE, (2, 2, "f32"), (2, 2, "f32"), CHANNELS),
           lambda dy, x, mean, rstd, w: solops.group_norm_backward(dy, x, 2, mean, rstd, w)),
    Sample("group_norm_backward", _tensors(IMAGE, IMAGE, (2, 2, "f32"), (2, 2, "f32")),
           lambda dy, x, mean, rstd: solops.group_norm_backward(dy, x, 2, mean, rstd, output_mask=[False, True])),
    Sample("instance_norm", _tensors(IMAGE, (4, "f32"), (4, "f32"), CHANNELS, CHANNELS),
           lambda x, mean, var, w, b: (solops.instance_norm(x, mean, var, w, b), mean, var)),
    Sample("instance_norm_with_stats", _tensors(IMAGE, (4, "f32"), (4, "f32"), CHANNELS, CHANNELS),
           lambda x, mean, var, w, b: (*_ops.instance_norm_with_stats(x, mean, var, w, b, True, 0.1, 1e-5), mean, var)),
    Sample("instance_norm_backward", _tensors(IMAGE, IMAGE, (2, 4, "f32"), (2, 4, "f32"), CHANNELS),
           lambda dy, x, mean, rstd, w: solops.instance_norm_backward(dy, x, mean, rstd, w, output_mask=[True, False])),
    Sample("instance_norm_backward", _tensors(IMAGE, IMAGE, (2, 4, "f32"), (2, 4, "f32")),
           lambda dy, x, mean, rstd: solops.instance_norm_backward(dy, x, mean, rstd)),
]
