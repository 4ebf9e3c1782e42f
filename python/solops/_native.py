"""ctypes bindings of the C ABI (include/solops/solops.h). Nothing here is compiled against torch."""

import ctypes
import glob
import os
from pathlib import Path

MAX_RANK = 8
CPU = -1

OK, INVALID_ARGUMENT, UNSUPPORTED, CUDA_ERROR, INTERNAL = range(5)


class SolopsError(RuntimeError):
    """An error reported by the solops library; `status` is the C ABI's status code."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("strides", ctypes.c_int64 * MAX_RANK),
        ("device", ctypes.c_int32),
    ]


class Pool1dParams(ctypes.Structure):
    _fields_ = [
        ("kernel_size", ctypes.c_int64),
        ("has_stride", ctypes.c_int32),
        ("stride", ctypes.c_int64),
        ("padding", ctypes.c_int64),
        ("dilation", ctypes.c_int64),
        ("ceil_mode", ctypes.c_int32),
        ("count_include_pad", ctypes.c_int32),
    ]


class Pool2dParams(ctypes.Structure):
    _fields_ = [
        ("kernel_size", ctypes.c_int64 * 2),
        ("has_stride", ctypes.c_int32),
        ("stride", ctypes.c_int64 * 2),
        ("padding", ctypes.c_int64 * 2),
        ("dilation", ctypes.c_int64 * 2),
        ("ceil_mode", ctypes.c_int32),
        ("count_include_pad", ctypes.c_int32),
        ("has_divisor_override", ctypes.c_int32),
        ("divisor_override", ctypes.c_int64),
    ]


class Pool3dParams(ctypes.Structure):
    _fields_ = [
        ("kernel_size", ctypes.c_int64 * 3),
        ("has_stride", ctypes.c_int32),
        ("stride", ctypes.c_int64 * 3),
        ("padding", ctypes.c_int64 * 3),
        ("dilation", ctypes.c_int64 * 3),
        ("ceil_mode", ctypes.c_int32),
        ("count_include_pad", ctypes.c_int32),
        ("has_divisor_override", ctypes.c_int32),
        ("divisor_override", ctypes.c_int64),
    ]


class AdaptivePool2dParams(ctypes.Structure):
    _fields_ = [("has_output_size", ctypes.c_int32 * 2), ("output_size", ctypes.c_int64 * 2)]


class MeanPoolingParams(ctypes.Structure):
    _fields_ = [("chunk_size", ctypes.c_int64), ("check_ragged_metadata", ctypes.c_int32)]


class RaggedSizes(ctypes.Structure):
    _fields_ = [("sequences", ctypes.c_int64), ("chunks", ctypes.c_int64)]


class NormParams(ctypes.Structure):
    _fields_ = [
        ("normalized_rank", ctypes.c_int32),
        ("normalized_shape", ctypes.c_int64 * MAX_RANK),
        ("has_eps", ctypes.c_int32),
        ("eps", ctypes.c_double),
    ]


class FusedAddNormParams(ctypes.Structure):
    _fields_ = [("has_eps", ctypes.c_int32), ("eps", ctypes.c_double)]


class AdaLayerNormParams(ctypes.Structure):
    _fields_ = [("has_eps", ctypes.c_int32), ("eps", ctypes.c_double)]


class NormBackwardParams(ctypes.Structure):
    _fields_ = [("normalized_rank", ctypes.c_int32), ("normalized_shape", ctypes.c_int64 * MAX_RANK)]


# The row norms: their parameter struct and how many tensors their C functions take (inputs, then
# outputs; an absent weight or bias is NULL).
NORM_OPS = {
    "rms_norm": (NormParams, 3),
    "layer_norm": (NormParams, 4),
    "gemma_rms_norm": (NormParams, 3),
    "fused_add_rms_norm": (FusedAddNormParams, 5),
    "fused_add_layer_norm": (FusedAddNormParams, 6),
    "ada_layer_norm": (AdaLayerNormParams, 4),
    "rms_norm_quant": (NormParams, 4),
    "layer_norm_quant": (NormParams, 5),
    "qk_norm": (NormParams, 6),
    "group_rms_norm": (NormParams, 4),
}

# The training forward and backward of RMSNorm and LayerNorm (the backward ones also have a cost).
NORM_TRAINING_OPS = {
    "rms_norm_with_stats": (NormParams, 4),
    "layer_norm_with_stats": (NormParams, 6),
    "rms_norm_backward": (NormBackwardParams, 6),
    "layer_norm_backward": (NormBackwardParams, 8),
}


class VectorNormParams(ctypes.Structure):
    _fields_ = [("ord", ctypes.c_int32), ("dim_count", ctypes.c_int32), ("dim", ctypes.c_int64 * MAX_RANK),
                ("keepdim", ctypes.c_int32)]


class WeightNormParams(ctypes.Structure):
    _fields_ = [("dim", ctypes.c_int64)]


class SpectralNormPowerIterParams(ctypes.Structure):
    _fields_ = [("normalized_rank", ctypes.c_int32), ("normalized_shape", ctypes.c_int64 * MAX_RANK),
                ("n_iter", ctypes.c_int64), ("eps", ctypes.c_double)]


class Cost(ctypes.Structure):
    _fields_ = [("flops", ctypes.c_double), ("bytes", ctypes.c_double)]


def _library_path():
    """SOLOPS_LIBRARY, else a copy beside the package, else the repository's CMake build."""
    if os.environ.get("SOLOPS_LIBRARY"):
        return os.environ["SOLOPS_LIBRARY"]
    package_dir = Path(__file__).resolve().parent
    candidates = [package_dir / "libsolops.so"]
    repo = package_dir.parent.parent
    candidates += [Path(p) for p in sorted(glob.glob(str(repo / "build" / "*" / "libsolops.so")))]
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    raise ImportError(
        "libsolops.so not found: build it (cmake --preset release && cmake --build --preset release) "
        "or point SOLOPS_LIBRARY at it"
    )


def _load():
    lib = ctypes.CDLL(_library_path())
    P = ctypes.POINTER
    status = ctypes.c_int
    signatures = {
        "solops_last_error": (ctypes.c_char_p, []),
        "solops_version": (ctypes.c_char_p, []),
    }
    for dims, params in (("1d", Pool1dParams), ("2d", Pool2dParams), ("3d", Pool3dParams)):
        signatures.update({
            f"solops_max_pool{dims}_output_shape": (
                status, [ctypes.c_int32, P(ctypes.c_int64), P(params), P(ctypes.c_int32), P(ctypes.c_int64)]),
            f"solops_avg_pool{dims}_output_shape": (
                status, [ctypes.c_int32, P(ctypes.c_int64), P(params), P(ctypes.c_int32), P(ctypes.c_int64)]),
            f"solops_max_pool{dims}": (status, [P(Tensor), P(Tensor), P(Tensor), P(params), ctypes.c_void_p]),
            f"solops_avg_pool{dims}": (status, [P(Tensor), P(Tensor), P(params), ctypes.c_void_p]),
            f"solops_reference_max_pool{dims}": (status, [P(Tensor), P(Tensor), P(Tensor), P(params)]),
            f"solops_reference_avg_pool{dims}": (status, [P(Tensor), P(Tensor), P(params)]),
            f"solops_max_pool{dims}_cost": (
                status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(params), ctypes.c_int32, P(Cost)]),
            f"solops_avg_pool{dims}_cost": (
                status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(params), P(Cost)]),
        })
    signatures.update({
        "solops_adaptive_pool2d_output_shape": (
            status, [ctypes.c_int32, P(ctypes.c_int64), P(AdaptivePool2dParams), P(ctypes.c_int32),
                     P(ctypes.c_int64)]),
        "solops_adaptive_max_pool2d": (
            status, [P(Tensor), P(Tensor), P(Tensor), P(AdaptivePool2dParams), ctypes.c_void_p]),
        "solops_adaptive_avg_pool2d": (status, [P(Tensor), P(Tensor), P(AdaptivePool2dParams), ctypes.c_void_p]),
        "solops_reference_adaptive_max_pool2d": (status, [P(Tensor), P(Tensor), P(Tensor), P(AdaptivePool2dParams)]),
        "solops_reference_adaptive_avg_pool2d": (status, [P(Tensor), P(Tensor), P(AdaptivePool2dParams)]),
        "solops_adaptive_max_pool2d_cost": (
            status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(AdaptivePool2dParams), ctypes.c_int32,
                     P(Cost)]),
        "solops_adaptive_avg_pool2d_cost": (
            status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(AdaptivePool2dParams), P(Cost)]),
    })
    signatures.update({
        "solops_mean_pooling_output_shape": (
            status, [ctypes.c_int32, P(ctypes.c_int64), P(MeanPoolingParams), P(RaggedSizes), P(ctypes.c_int32),
                     P(ctypes.c_int64)]),
        "solops_mean_pooling": (
            status, [P(Tensor), P(Tensor), P(Tensor), P(Tensor), P(MeanPoolingParams), ctypes.c_void_p]),
        "solops_reference_mean_pooling": (status, [P(Tensor), P(Tensor), P(Tensor), P(Tensor), P(MeanPoolingParams)]),
        "solops_mean_pooling_cost": (
            status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(MeanPoolingParams), P(RaggedSizes), P(Cost)]),
    })
    for name, (params, tensors) in NORM_OPS.items():
        signatures.update({
            f"solops_{name}_output_shape": (
                status, [ctypes.c_int32, P(ctypes.c_int64), P(params), P(ctypes.c_int32), P(ctypes.c_int64)]),
            f"solops_{name}": (status, [P(Tensor)] * tensors + [P(params), ctypes.c_void_p]),
            f"solops_reference_{name}": (status, [P(Tensor)] * tensors + [P(params)]),
            f"solops_{name}_cost": (status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(params), P(Cost)]),
        })
    # QKNorm's cost takes the shapes of q and k.
    signatures["solops_qk_norm_cost"] = (
        status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(NormParams),
                 P(Cost)])
    for name, (params, tensors) in NORM_TRAINING_OPS.items():
        # The backward's CUDA call also takes its workspace, after the outputs; the reference does not.
        workspace = 1 if params is NormBackwardParams else 0
        signatures.update({
            f"solops_{name}": (status, [P(Tensor)] * (tensors + workspace) + [P(params), ctypes.c_void_p]),
            f"solops_reference_{name}": (status, [P(Tensor)] * tensors + [P(params)]),
        })
        if params is NormBackwardParams:
            signatures[f"solops_{name}_cost"] = (
                status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(params), P(Cost)])
            signatures[f"solops_{name}_workspace_elements"] = (
                status, [ctypes.c_int32, P(ctypes.c_int64), P(params), P(ctypes.c_int64)])
    signatures.update({
        "solops_vector_norm_output_shape": (
            status, [ctypes.c_int32, P(ctypes.c_int64), P(VectorNormParams), P(ctypes.c_int32), P(ctypes.c_int64)]),
        "solops_vector_norm_workspace_elements": (
            status, [ctypes.c_int32, P(ctypes.c_int64), P(VectorNormParams), P(ctypes.c_int64)]),
        "solops_vector_norm": (status, [P(Tensor), P(Tensor), P(Tensor), P(VectorNormParams), ctypes.c_void_p]),
        "solops_reference_vector_norm": (status, [P(Tensor), P(Tensor), P(VectorNormParams)]),
        "solops_vector_norm_cost": (
            status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(VectorNormParams), P(Cost)]),
        "solops_weight_norm_workspace_elements": (
            status, [ctypes.c_int32, P(ctypes.c_int64), P(WeightNormParams), P(ctypes.c_int64)]),
        "solops_weight_norm": (
            status, [P(Tensor), P(Tensor), P(Tensor), P(Tensor), P(Tensor), P(WeightNormParams), ctypes.c_void_p]),
        "solops_reference_weight_norm": (status, [P(Tensor), P(Tensor), P(Tensor), P(Tensor), P(WeightNormParams)]),
        "solops_weight_norm_cost": (
            status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(WeightNormParams), P(Cost)]),
    })
    signatures.update({
        "solops_spectral_norm_power_iter_workspace_elements": (
            status, [ctypes.c_int32, P(ctypes.c_int64), P(SpectralNormPowerIterParams), P(ctypes.c_int64)]),
        "solops_spectral_norm_power_iter": (
            status, [P(Tensor)] * 7 + [P(SpectralNormPowerIterParams), ctypes.c_void_p]),
        "solops_reference_spectral_norm_power_iter": (status, [P(Tensor)] * 6 + [P(SpectralNormPowerIterParams)]),
        "solops_spectral_norm_power_iter_cost": (
            status, [ctypes.c_int32, P(ctypes.c_int64), ctypes.c_int32, P(SpectralNormPowerIterParams), P(Cost)]),
    })
    signatures["solops_norm_stats_shape"] = (
        status, [ctypes.c_int32, P(ctypes.c_int64), P(NormBackwardParams), P(ctypes.c_int32), P(ctypes.c_int64)])
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


lib = _load()


def check(status):
    if status != OK:
        raise SolopsError(status, lib.solops_last_error().decode())


def shape_array(shape):
    if len(shape) > MAX_RANK:
        raise SolopsError(INVALID_ARGUMENT, f"rank {len(shape)} exceeds the maximum rank {MAX_RANK}")
    return (ctypes.c_int64 * MAX_RANK)(*shape)


def per_axis(value, name, axes):
    """An int or a 1- or `axes`-sequence, as torch.nn.functional takes them, as an `axes`-tuple."""
    if isinstance(value, int):
        return (value,) * axes
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * axes
    if len(value) != axes:
        raise SolopsError(INVALID_ARGUMENT, f"{name} must be an int or a {axes}-tuple, got {value}")
    return value



def single(value, name):
    """An int or a 1-sequence, as torch.nn.functional's 1-D pools take them, as an int."""
    if isinstance(value, int):
        return value
    value = tuple(int(v) for v in value)
    if len(value) != 1:
        raise SolopsError(INVALID_ARGUMENT, f"{name} must be an int or a 1-tuple, got {value}")
    return value[0]


def stride_given(stride):
    """False for stride=None or stride=[], which PyTorch both read as stride = kernel_size."""
    return stride is not None and not (isinstance(stride, (list, tuple)) and len(stride) == 0)


def pool1d_params(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, count_include_pad=True):
    p = Pool1dParams()
    p.kernel_size = single(kernel_size, "kernel_size")
    p.has_stride = int(stride_given(stride))
    if p.has_stride:
        p.stride = single(stride, "stride")
    p.padding = single(padding, "padding")
    p.dilation = single(dilation, "dilation")
    p.ceil_mode = int(bool(ceil_mode))
    p.count_include_pad = int(bool(count_include_pad))
    return p


def pool2d_params(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                  count_include_pad=True, divisor_override=None):
    return _window_params(Pool2dParams(), 2, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad,
                          divisor_override)


def pool3d_params(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                  count_include_pad=True, divisor_override=None):
    return _window_params(Pool3dParams(), 3, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad,
                          divisor_override)


def _window_params(p, axes, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad,
                   divisor_override):
    p.kernel_size[:] = per_axis(kernel_size, "kernel_size", axes)
    p.has_stride = int(stride_given(stride))
    if p.has_stride:
        p.stride[:] = per_axis(stride, "stride", axes)
    p.padding[:] = per_axis(padding, "padding", axes)
    p.dilation[:] = per_axis(dilation, "dilation", axes)
    p.ceil_mode = int(bool(ceil_mode))
    p.count_include_pad = int(bool(count_include_pad))
    p.has_divisor_override = int(divisor_override is not None)
    p.divisor_override = int(divisor_override) if divisor_override is not None else 0
    return p


def output_sizes(output_size):
    """An adaptive pool's output_size (an int, or a 1- or 2-sequence whose entries may be None,
    meaning the input's size) as an (H, W) pair."""
    sizes = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) == 1:
        sizes = sizes * 2
    if len(sizes) != 2:
        raise SolopsError(INVALID_ARGUMENT, f"output_size must be an int or a pair, got {output_size}")
    return sizes


def adaptive_pool2d_params(output_size):
    p = AdaptivePool2dParams()
    for axis, size in enumerate(output_sizes(output_size)):
        p.has_output_size[axis] = int(size is not None)
        p.output_size[axis] = int(size) if size is not None else 0
    return p


def function_name(kind, params, prefix="solops_", suffix=""):
    """The C function of a pool: e.g. ("max", Pool1dParams) -> solops_max_pool1d,
    ("avg", AdaptivePool2dParams, suffix="_cost") -> solops_adaptive_avg_pool2d_cost."""
    if isinstance(params, AdaptivePool2dParams):
        return f"{prefix}adaptive_{kind}_pool2d{suffix}"
    dims = {Pool1dParams: "1d", Pool2dParams: "2d", Pool3dParams: "3d"}[type(params)]
    return f"{prefix}{kind}_pool{dims}{suffix}"


def pool_function(kind, params, suffix=""):
    return getattr(lib, function_name(kind, params, suffix=suffix))


def pool_output_shape(kind, x_shape, params):
    rank = ctypes.c_int32()
    shape = (ctypes.c_int64 * MAX_RANK)()
    name = "solops_adaptive_pool2d_output_shape" if isinstance(params, AdaptivePool2dParams) \
        else function_name(kind, params, suffix="_output_shape")
    check(getattr(lib, name)(len(x_shape), shape_array(x_shape), ctypes.byref(params), ctypes.byref(rank), shape))
    return [shape[i] for i in range(rank.value)]


def mean_pooling_params(chunk_size, check_metadata=True):
    p = MeanPoolingParams()
    p.chunk_size = int(chunk_size)
    p.check_ragged_metadata = int(bool(check_metadata))
    return p


def ragged_sizes(sequences, chunks):
    """Ragged mode's metadata sizes (offsets [sequences + 1], indices [chunks, 2]); None when neither
    is given (uniform mode)."""
    if sequences is None and chunks is None:
        return None
    if sequences is None or chunks is None:
        raise SolopsError(INVALID_ARGUMENT, "ragged mode needs both sequences and chunks")
    return RaggedSizes(int(sequences), int(chunks))


def metadata_sizes(offsets, indices):
    """ragged_sizes of an offsets [NS + 1] and indices [NC, 2] pair of tensors (or None, None); a
    lone one leaves the shape at uniform mode's, and the op itself then reports it."""
    if offsets is None or indices is None:
        return None
    # Leading sizes only: the op itself then names a wrong rank.
    return RaggedSizes(offsets.shape[0] - 1 if offsets.dim() else -1, indices.shape[0] if indices.dim() else 0)


def mean_pooling_output_shape(x_shape, params, ragged):
    rank = ctypes.c_int32()
    shape = (ctypes.c_int64 * MAX_RANK)()
    check(lib.solops_mean_pooling_output_shape(len(x_shape), shape_array(x_shape), ctypes.byref(params),
                                               ctypes.byref(ragged) if ragged is not None else None,
                                               ctypes.byref(rank), shape))
    return [shape[i] for i in range(rank.value)]


def normalized_shape_tuple(normalized_shape):
    """torch.nn.functional's normalized_shape: an int or a sequence of ints."""
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(size) for size in normalized_shape)


def _set_normalized_shape(p, name, normalized_shape):
    shape = normalized_shape_tuple(normalized_shape)
    if len(shape) > MAX_RANK:
        raise SolopsError(INVALID_ARGUMENT, f"{name}: normalized_shape has {len(shape)} dims, more than {MAX_RANK}")
    p.normalized_rank = len(shape)
    p.normalized_shape[: len(shape)] = list(shape)


def norm_params(name, normalized_shape=None, eps=None):
    """The C parameters of a row norm; eps None takes the op's default (rms_norm: PyTorch's None)."""
    params_type = (NORM_OPS | NORM_TRAINING_OPS)[name][0]
    p = params_type()
    if params_type is NormParams:
        _set_normalized_shape(p, name, normalized_shape)
    p.has_eps = int(eps is not None)
    p.eps = float(eps) if eps is not None else 0.0
    return p


def norm_backward_params(name, normalized_shape):
    """The C parameters of a row-norm backward (and of the statistics' shape)."""
    p = NormBackwardParams()
    _set_normalized_shape(p, name, normalized_shape)
    return p


def norm_backward_workspace_elements(name, x_shape, normalized_shape):
    """The f32 workspace of a row-norm backward (rms_norm_backward, layer_norm_backward) over x_shape."""
    elements = ctypes.c_int64()
    check(getattr(lib, f"solops_{name}_workspace_elements")(
        len(x_shape), shape_array(x_shape), ctypes.byref(norm_backward_params(name, normalized_shape)),
        ctypes.byref(elements)))
    return elements.value


def norm_stats_shape(x_shape, normalized_shape):
    """The shape of the saved mean and rstd: x's leading dims, once the shape rule accepts them."""
    rank = ctypes.c_int32()
    shape = (ctypes.c_int64 * MAX_RANK)()
    check(lib.solops_norm_stats_shape(len(x_shape), shape_array(x_shape),
                                      ctypes.byref(norm_backward_params("norm_stats_shape", normalized_shape)),
                                      ctypes.byref(rank), shape))
    return [shape[i] for i in range(rank.value)]


def vector_norm_params(ord, dim, keepdim):
    """torch.linalg.vector_norm's ord, dim (None, an int or a sequence) and keepdim."""
    dims = [] if dim is None else [int(dim)] if isinstance(dim, int) else [int(d) for d in dim]
    if len(dims) > MAX_RANK:
        raise SolopsError(INVALID_ARGUMENT, f"vector_norm: dim has {len(dims)} entries, more than {MAX_RANK}")
    p = VectorNormParams()
    p.ord = int(ord) if float(ord) == int(ord) else -1
    p.dim_count = len(dims)
    p.dim[: len(dims)] = dims
    p.keepdim = int(bool(keepdim))
    return p


def vector_norm_output_shape(x_shape, params):
    rank = ctypes.c_int32()
    shape = (ctypes.c_int64 * MAX_RANK)()
    check(lib.solops_vector_norm_output_shape(len(x_shape), shape_array(x_shape), ctypes.byref(params),
                                              ctypes.byref(rank), shape))
    return [shape[i] for i in range(rank.value)]


def vector_norm_workspace_elements(x_shape, params):
    elements = ctypes.c_int64()
    check(lib.solops_vector_norm_workspace_elements(len(x_shape), shape_array(x_shape), ctypes.byref(params),
                                                    ctypes.byref(elements)))
    return elements.value


def weight_norm_params(dim):
    p = WeightNormParams()
    p.dim = int(dim)
    return p


def weight_norm_workspace_elements(v_shape, params):
    """The f32 workspace of the call; also checks dim."""
    elements = ctypes.c_int64()
    check(lib.solops_weight_norm_workspace_elements(len(v_shape), shape_array(v_shape), ctypes.byref(params),
                                                    ctypes.byref(elements)))
    return elements.value


def weight_norm_slices(v_shape, dim):
    """n: v.shape[dim], or 1 for dim -1 (the whole tensor); dim checked by the library."""
    weight_norm_workspace_elements(v_shape, weight_norm_params(dim))
    return 1 if dim == -1 else v_shape[dim]


def spectral_norm_power_iter_params(x_shape, n_iter, eps):
    """normalized_shape is x's last dim, the spec's (I,): the Python API does not take it (the library
    checks x's rank itself)."""
    p = SpectralNormPowerIterParams()
    last = [int(size) for size in x_shape[-1:]]
    p.normalized_rank = len(last)
    p.normalized_shape[: len(last)] = last
    p.n_iter = int(n_iter)
    p.eps = float(eps)
    return p


def spectral_norm_power_iter_workspace_elements(x_shape, params):
    """The f32 workspace of the call; also checks the shape rule, n_iter and eps."""
    elements = ctypes.c_int64()
    check(lib.solops_spectral_norm_power_iter_workspace_elements(len(x_shape), shape_array(x_shape),
                                                                 ctypes.byref(params), ctypes.byref(elements)))
    return elements.value


def norm_output_shape(name, x_shape, params):
    """x's shape, once the op's shape rule (and eps) accept it."""
    rank = ctypes.c_int32()
    shape = (ctypes.c_int64 * MAX_RANK)()
    check(getattr(lib, f"solops_{name}_output_shape")(len(x_shape), shape_array(x_shape), ctypes.byref(params),
                                                      ctypes.byref(rank), shape))
    return [shape[i] for i in range(rank.value)]
