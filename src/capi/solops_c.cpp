// The C ABI: converts C structs to the C++ API and exceptions to status codes.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <span>
#include <string>

#include "solops/reference.hpp"
#include "solops/solops.h"
#include "solops/solops.hpp"

namespace {

thread_local std::string last_error;

solops_status fail(solops_status status, const char* message) {
  last_error = message;
  return status;
}

// Runs body; returns SOLOPS_OK or the status of the solops::Error (or other exception) it threw.
// A body that names its C function takes it from outside: within a lambda __func__ is "operator()".
template <class Body>
solops_status guarded(const char* function, Body&& body) {
  try {
    body();
    return SOLOPS_OK;
  } catch (const solops::Error& e) {
    return fail(static_cast<solops_status>(e.status()), e.what());
  } catch (const std::exception& e) {
    return fail(SOLOPS_INTERNAL, (std::string(function) + ": " + e.what()).c_str());
  }
}

void require_pointer(const void* pointer, const char* function, const char* name) {
  if (pointer == nullptr) {
    throw solops::Error(solops::Status::invalid_argument,
                        std::string(function) + ": " + name + " is a null pointer");
  }
}

solops::TensorRef to_tensor(const solops_tensor* t, const char* function, const char* name) {
  require_pointer(t, function, name);
  if (t->rank < 0 || t->rank > SOLOPS_MAX_RANK) {
    throw solops::Error(solops::Status::invalid_argument,
                        std::string(function) + ": " + name + " has rank " +
                            std::to_string(t->rank) + ", outside [0, 8]");
  }
  solops::TensorRef ref;
  ref.data = t->data;
  ref.dtype = static_cast<solops::DType>(t->dtype);
  ref.rank = t->rank;
  ref.device = t->device;
  for (int i = 0; i < t->rank; ++i) {
    ref.shape[i] = t->shape[i];
    ref.strides[i] = t->strides[i];
  }
  return ref;
}

// A tensor the caller may leave out (NULL).
std::optional<solops::TensorRef> optional_tensor(const solops_tensor* t, const char* function, const char* name) {
  return t ? std::optional(to_tensor(t, function, name)) : std::nullopt;
}

std::span<const int64_t> to_shape(int32_t rank, const int64_t* shape, const char* function) {
  require_pointer(shape, function, "x_shape");
  if (rank < 0 || rank > SOLOPS_MAX_RANK) {
    throw solops::Error(solops::Status::invalid_argument,
                        std::string(function) + ": rank " + std::to_string(rank) + " is outside [0, 8]");
  }
  return {shape, static_cast<size_t>(rank)};
}

solops::Pool1d to_params(const solops_pool1d_params* p, const char* function) {
  require_pointer(p, function, "params");
  solops::Pool1d pool;
  pool.kernel_size = p->kernel_size;
  if (p->has_stride) pool.stride = p->stride;
  pool.padding = p->padding;
  pool.dilation = p->dilation;
  pool.ceil_mode = p->ceil_mode != 0;
  pool.count_include_pad = p->count_include_pad != 0;
  return pool;
}

// The 2-D and 3-D C windows differ only in their number of axes.
template <class Pool, class Params>
Pool to_window(const Params* p, const char* function) {
  require_pointer(p, function, "params");
  Pool pool;
  constexpr size_t kAxes = std::size(Pool{}.kernel_size);
  std::copy_n(p->kernel_size, kAxes, pool.kernel_size.begin());
  if (p->has_stride) {
    pool.stride.emplace();
    std::copy_n(p->stride, kAxes, pool.stride->begin());
  }
  std::copy_n(p->padding, kAxes, pool.padding.begin());
  std::copy_n(p->dilation, kAxes, pool.dilation.begin());
  pool.ceil_mode = p->ceil_mode != 0;
  pool.count_include_pad = p->count_include_pad != 0;
  if (p->has_divisor_override) pool.divisor_override = p->divisor_override;
  return pool;
}

solops::Pool2d to_params(const solops_pool2d_params* p, const char* function) {
  return to_window<solops::Pool2d>(p, function);
}

solops::Pool3d to_params(const solops_pool3d_params* p, const char* function) {
  return to_window<solops::Pool3d>(p, function);
}

solops::AdaptivePool2d to_params(const solops_adaptive_pool2d_params* p, const char* function) {
  require_pointer(p, function, "params");
  solops::AdaptivePool2d pool;
  for (int axis = 0; axis < 2; ++axis) {
    if (p->has_output_size[axis]) pool.output_size[axis] = p->output_size[axis];
  }
  return pool;
}

solops::MeanPooling to_params(const solops_mean_pooling_params* p, const char* function) {
  require_pointer(p, function, "params");
  return {p->chunk_size, p->check_ragged_metadata != 0};
}

solops::VectorNorm to_params(const solops_vector_norm_params* p, const char* function) {
  require_pointer(p, function, "params");
  if (p->dim_count < 0 || p->dim_count > SOLOPS_MAX_RANK) {
    throw solops::Error(solops::Status::invalid_argument,
                        std::string(function) + ": dim_count " + std::to_string(p->dim_count) + " is outside [0, 8]");
  }
  return {p->ord, std::vector<int64_t>(p->dim, p->dim + p->dim_count), p->keepdim != 0};
}

solops::WeightNorm to_params(const solops_weight_norm_params* p, const char* function) {
  require_pointer(p, function, "params");
  return {p->dim};
}

solops::SpectralNormPowerIter to_params(const solops_spectral_norm_power_iter_params* p, const char* function) {
  require_pointer(p, function, "params");
  if (p->normalized_rank < 0 || p->normalized_rank > SOLOPS_MAX_RANK) {
    throw solops::Error(solops::Status::invalid_argument, std::string(function) + ": normalized_rank " +
                                                              std::to_string(p->normalized_rank) +
                                                              " is outside [0, 8]");
  }
  return {std::vector<int64_t>(p->normalized_shape, p->normalized_shape + p->normalized_rank), p->n_iter, p->eps};
}

std::optional<solops::RaggedSizes> to_ragged(const solops_ragged_sizes* ragged) {
  if (!ragged) return std::nullopt;
  return solops::RaggedSizes{ragged->sequences, ragged->chunks};
}

void write_shape(const std::vector<int64_t>& shape, int32_t* out_rank, int64_t* out_shape,
                 const char* function) {
  require_pointer(out_rank, function, "out_rank");
  require_pointer(out_shape, function, "out_shape");
  *out_rank = static_cast<int32_t>(shape.size());
  std::memcpy(out_shape, shape.data(), shape.size() * sizeof(int64_t));
}

void write_cost(const solops::Cost& cost, solops_cost* out, const char* function) {
  require_pointer(out, function, "cost");
  out->flops = cost.flops;
  out->bytes = cost.bytes;
}

// One body per kind of call, shared by the 1-D and 2-D functions: `op` is the C++ function.

template <class Op, class Params>
solops_status output_shape(const char* function, Op op, int32_t x_rank, const int64_t* x_shape,
                           const Params* p, int32_t* out_rank, int64_t* out_shape) {
  return guarded(function, [&] {
    write_shape(op(to_shape(x_rank, x_shape, function), to_params(p, function)), out_rank, out_shape, function);
  });
}

template <class Values, class WithIndices, class Params>
solops_status max_pool(const char* function, Values values, WithIndices with_indices,
                       const solops_tensor* x, const solops_tensor* y, const solops_tensor* indices,
                       const Params* p, void* stream) {
  return guarded(function, [&] {
    const auto pool = to_params(p, function);
    const auto x_ref = to_tensor(x, function, "x");
    const auto y_ref = to_tensor(y, function, "y");
    const auto cuda_stream = static_cast<cudaStream_t>(stream);
    if (indices) {
      with_indices(x_ref, y_ref, to_tensor(indices, function, "indices"), pool, cuda_stream);
    } else {
      values(x_ref, y_ref, pool, cuda_stream);
    }
  });
}

template <class Op, class Params>
solops_status avg_pool(const char* function, Op op, const solops_tensor* x, const solops_tensor* y,
                       const Params* p, void* stream) {
  return guarded(function, [&] {
    op(to_tensor(x, function, "x"), to_tensor(y, function, "y"), to_params(p, function),
       static_cast<cudaStream_t>(stream));
  });
}

template <class Op, class Params>
solops_status reference_max_pool(const char* function, Op op, const solops_tensor* x,
                                 const solops_tensor* y, const solops_tensor* indices, const Params* p) {
  return guarded(function, [&] {
    const auto indices_ref = optional_tensor(indices, function, "indices");
    op(to_tensor(x, function, "x"), to_tensor(y, function, "y"), indices_ref ? &*indices_ref : nullptr,
       to_params(p, function));
  });
}

// The device call and the reference of mean pooling: the reference takes no stream.
template <class Op, class... Stream>
solops_status mean_pooling(const char* function, Op op, const solops_tensor* x, const solops_tensor* y,
                           const solops_tensor* offsets, const solops_tensor* indices,
                           const solops_mean_pooling_params* p, Stream... stream) {
  return guarded(function, [&] {
    // Named in argument order, so that the first bad argument is the one reported.
    const auto x_ref = to_tensor(x, function, "x");
    const auto y_ref = to_tensor(y, function, "y");
    const auto offsets_ref = optional_tensor(offsets, function, "offsets");
    const auto indices_ref = optional_tensor(indices, function, "indices");
    op(x_ref, y_ref, offsets_ref ? &*offsets_ref : nullptr, indices_ref ? &*indices_ref : nullptr,
       to_params(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class Params>
solops_status reference_avg_pool(const char* function, Op op, const solops_tensor* x,
                                 const solops_tensor* y, const Params* p) {
  return guarded(function, [&] {
    op(to_tensor(x, function, "x"), to_tensor(y, function, "y"), to_params(p, function));
  });
}

template <class Op, class Params>
solops_status workspace_elements(const char* function, Op op, int32_t x_rank, const int64_t* x_shape,
                                 const Params* p, int64_t* elements) {
  return guarded(function, [&] {
    require_pointer(elements, function, "elements");
    *elements = op(to_shape(x_rank, x_shape, function), to_params(p, function));
  });
}

template <class Op, class Params>
solops_status cost(const char* function, Op op, int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                   const Params* p, solops_cost* out) {
  return guarded(function, [&] {
    write_cost(op(to_shape(x_rank, x_shape, function), static_cast<solops::DType>(x_dtype), to_params(p, function)),
               out, function);
  });
}


// The C++ parameters of a row norm (with normalized_shape) or a fused add-norm (without).
template <class Params, class CParams>
Params to_norm(const CParams* p, const char* function) {
  require_pointer(p, function, "params");
  Params params;
  if constexpr (requires { params.normalized_shape; }) {
    if (p->normalized_rank < 0 || p->normalized_rank > SOLOPS_MAX_RANK) {
      throw solops::Error(solops::Status::invalid_argument,
                          std::string(function) + ": normalized_rank " + std::to_string(p->normalized_rank) +
                              " is outside [0, 8]");
    }
    params.normalized_shape.assign(p->normalized_shape, p->normalized_shape + p->normalized_rank);
  }
  if constexpr (requires { p->has_eps; }) {
    if (p->has_eps) params.eps = p->eps;
  }
  return params;
}

// A tensor the caller may leave out, as the pointer the C++ API takes.
const solops::TensorRef* optional_ref(const std::optional<solops::TensorRef>& t) { return t ? &*t : nullptr; }

template <class Params, class CParams, class Op>
solops_status norm_output_shape(const char* function, Op op, int32_t x_rank, const int64_t* x_shape,
                                const CParams* p, int32_t* out_rank, int64_t* out_shape) {
  return guarded(function, [&] {
    write_shape(op(to_shape(x_rank, x_shape, function), to_norm<Params>(p, function)), out_rank, out_shape,
                function);
  });
}

template <class Params, class CParams, class Op>
solops_status norm_workspace_elements(const char* function, Op op, int32_t x_rank, const int64_t* x_shape,
                                      const CParams* p, int64_t* elements) {
  return guarded(function, [&] {
    require_pointer(elements, function, "elements");
    *elements = op(to_shape(x_rank, x_shape, function), to_norm<Params>(p, function));
  });
}

template <class Params, class CParams, class Op>
solops_status norm_cost(const char* function, Op op, int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                        const CParams* p, solops_cost* out) {
  return guarded(function, [&] {
    write_cost(op(to_shape(x_rank, x_shape, function), static_cast<solops::DType>(x_dtype),
                  to_norm<Params>(p, function)),
               out, function);
  });
}

// The ops and their references differ only in the stream argument the ops take last.
template <class Params, class Op, class... Stream>
solops_status row_norm(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                       const solops_tensor* y, const solops_norm_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    op(x_ref, optional_ref(weight_ref), to_tensor(y, function, "y"), to_norm<Params>(p, function),
       static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status layer_norm(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                         const solops_tensor* bias, const solops_tensor* y, const solops_norm_params* p,
                         Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    op(x_ref, optional_ref(weight_ref), optional_ref(bias_ref), to_tensor(y, function, "y"),
       to_norm<solops::LayerNorm>(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

// RMSNorm's training forward and GroupRMSNorm: y and an f32 rstd.
template <class Params, class Op, class... Stream>
solops_status rms_norm_with_rstd(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                                 const solops_tensor* y, const solops_tensor* rstd, const solops_norm_params* p,
                                 Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    op(x_ref, optional_ref(weight_ref), to_tensor(y, function, "y"), to_tensor(rstd, function, "rstd"),
       to_norm<Params>(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status layer_norm_with_stats(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                                    const solops_tensor* bias, const solops_tensor* y, const solops_tensor* mean,
                                    const solops_tensor* rstd, const solops_norm_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    op(x_ref, optional_ref(weight_ref), optional_ref(bias_ref), to_tensor(y, function, "y"),
       to_tensor(mean, function, "mean"), to_tensor(rstd, function, "rstd"), to_norm<solops::LayerNorm>(p, function),
       static_cast<cudaStream_t>(stream)...);
  });
}

// The backward ops' calls: with a stream (the CUDA op) the workspace goes along, without one (the
// reference, which needs none) it is null and left out.
template <class Op, class... Stream>
solops_status rms_norm_backward(const char* function, Op op, const solops_tensor* grad_out, const solops_tensor* x,
                                const solops_tensor* weight, const solops_tensor* rstd, const solops_tensor* grad_x,
                                const solops_tensor* grad_weight, const solops_tensor* workspace,
                                const solops_norm_backward_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto grad_out_ref = to_tensor(grad_out, function, "grad_out");
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto rstd_ref = to_tensor(rstd, function, "rstd");
    const auto grad_x_ref = to_tensor(grad_x, function, "grad_x");
    const auto grad_weight_ref = optional_tensor(grad_weight, function, "grad_weight");
    const auto params = to_norm<solops::RMSNormBackward>(p, function);
    if constexpr (sizeof...(Stream) > 0) {
      const auto workspace_ref = optional_tensor(workspace, function, "workspace");
      op(grad_out_ref, x_ref, optional_ref(weight_ref), rstd_ref, grad_x_ref, optional_ref(grad_weight_ref),
         optional_ref(workspace_ref), params, static_cast<cudaStream_t>(stream)...);
    } else {
      op(grad_out_ref, x_ref, optional_ref(weight_ref), rstd_ref, grad_x_ref, optional_ref(grad_weight_ref), params);
    }
  });
}

template <class Op, class... Stream>
solops_status layer_norm_backward(const char* function, Op op, const solops_tensor* grad_out, const solops_tensor* x,
                                  const solops_tensor* weight, const solops_tensor* mean, const solops_tensor* rstd,
                                  const solops_tensor* grad_x, const solops_tensor* grad_weight,
                                  const solops_tensor* grad_bias, const solops_tensor* workspace,
                                  const solops_norm_backward_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto grad_out_ref = to_tensor(grad_out, function, "grad_out");
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto mean_ref = to_tensor(mean, function, "mean");
    const auto rstd_ref = to_tensor(rstd, function, "rstd");
    const auto grad_x_ref = to_tensor(grad_x, function, "grad_x");
    const auto grad_weight_ref = optional_tensor(grad_weight, function, "grad_weight");
    const auto grad_bias_ref = optional_tensor(grad_bias, function, "grad_bias");
    const auto params = to_norm<solops::LayerNormBackward>(p, function);
    if constexpr (sizeof...(Stream) > 0) {
      const auto workspace_ref = optional_tensor(workspace, function, "workspace");
      op(grad_out_ref, x_ref, optional_ref(weight_ref), mean_ref, rstd_ref, grad_x_ref, optional_ref(grad_weight_ref),
         optional_ref(grad_bias_ref), optional_ref(workspace_ref), params, static_cast<cudaStream_t>(stream)...);
    } else {
      op(grad_out_ref, x_ref, optional_ref(weight_ref), mean_ref, rstd_ref, grad_x_ref, optional_ref(grad_weight_ref),
         optional_ref(grad_bias_ref), params);
    }
  });
}

template <class Op, class... Stream>
solops_status gemma_rms_norm(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                             const solops_tensor* y, const solops_norm_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = to_tensor(weight, function, "weight");
    op(x_ref, weight_ref, to_tensor(y, function, "y"), to_norm<solops::GemmaRMSNorm>(p, function),
       static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status fused_add_rms_norm(const char* function, Op op, const solops_tensor* x, const solops_tensor* residual,
                                 const solops_tensor* weight, const solops_tensor* output,
                                 const solops_tensor* residual_out, const solops_fused_add_norm_params* p,
                                 Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto residual_ref = to_tensor(residual, function, "residual");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto output_ref = to_tensor(output, function, "output");
    op(x_ref, residual_ref, optional_ref(weight_ref), output_ref, to_tensor(residual_out, function, "residual_out"),
       to_norm<solops::FusedAddRMSNorm>(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status fused_add_layer_norm(const char* function, Op op, const solops_tensor* x,
                                   const solops_tensor* residual, const solops_tensor* weight,
                                   const solops_tensor* bias, const solops_tensor* output,
                                   const solops_tensor* residual_out, const solops_fused_add_norm_params* p,
                                   Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto residual_ref = to_tensor(residual, function, "residual");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    const auto output_ref = to_tensor(output, function, "output");
    op(x_ref, residual_ref, optional_ref(weight_ref), optional_ref(bias_ref), output_ref,
       to_tensor(residual_out, function, "residual_out"), to_norm<solops::FusedAddLayerNorm>(p, function),
       static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status ada_layer_norm(const char* function, Op op, const solops_tensor* x, const solops_tensor* scale,
                             const solops_tensor* shift, const solops_tensor* y, const solops_ada_layer_norm_params* p,
                             Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto scale_ref = to_tensor(scale, function, "scale");
    const auto shift_ref = to_tensor(shift, function, "shift");
    op(x_ref, scale_ref, shift_ref, to_tensor(y, function, "y"), to_norm<solops::AdaLayerNorm>(p, function),
       static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status rms_norm_quant(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                             const solops_tensor* q, const solops_tensor* scale, const solops_norm_params* p,
                             Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto q_ref = to_tensor(q, function, "q");
    op(x_ref, optional_ref(weight_ref), q_ref, to_tensor(scale, function, "scale"),
       to_norm<solops::RMSNormQuant>(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status layer_norm_quant(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                               const solops_tensor* bias, const solops_tensor* q, const solops_tensor* scale,
                               const solops_norm_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    const auto q_ref = to_tensor(q, function, "q");
    op(x_ref, optional_ref(weight_ref), optional_ref(bias_ref), q_ref, to_tensor(scale, function, "scale"),
       to_norm<solops::LayerNormQuant>(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status qk_norm(const char* function, Op op, const solops_tensor* q, const solops_tensor* k,
                      const solops_tensor* q_weight, const solops_tensor* k_weight, const solops_tensor* q_out,
                      const solops_tensor* k_out, const solops_norm_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto q_ref = to_tensor(q, function, "q");
    const auto k_ref = to_tensor(k, function, "k");
    const auto q_weight_ref = optional_tensor(q_weight, function, "q_weight");
    const auto k_weight_ref = optional_tensor(k_weight, function, "k_weight");
    const auto q_out_ref = to_tensor(q_out, function, "q_out");
    op(q_ref, k_ref, optional_ref(q_weight_ref), optional_ref(k_weight_ref), q_out_ref,
       to_tensor(k_out, function, "k_out"), to_norm<solops::QKNorm>(p, function),
       static_cast<cudaStream_t>(stream)...);
  });
}

}  // namespace

extern "C" {

const char* solops_last_error(void) { return last_error.c_str(); }

const char* solops_version(void) { return SOLOPS_VERSION; }

solops_status solops_max_pool1d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool1d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::max_pool1d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_avg_pool1d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool1d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::avg_pool1d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_max_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool2d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::max_pool2d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_avg_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool2d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::avg_pool2d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_max_pool3d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool3d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::max_pool3d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_avg_pool3d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool3d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::avg_pool3d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_adaptive_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                  const solops_adaptive_pool2d_params* p,
                                                  int32_t* out_rank, int64_t* out_shape) {
  return output_shape(__func__, solops::adaptive_pool2d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_mean_pooling_output_shape(int32_t x_rank, const int64_t* x_shape,
                                               const solops_mean_pooling_params* p,
                                               const solops_ragged_sizes* ragged, int32_t* out_rank,
                                               int64_t* out_shape) {
  const char* const function = __func__;
  return guarded(function, [&] {
    write_shape(solops::mean_pooling_output_shape(to_shape(x_rank, x_shape, function), to_params(p, function),
                                                  to_ragged(ragged)),
                out_rank, out_shape, function);
  });
}

solops_status solops_max_pool1d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool1d_params* p,
                                void* stream) {
  return max_pool(__func__, solops::max_pool1d, solops::max_pool1d_with_indices, x, y, indices, p, stream);
}

solops_status solops_avg_pool1d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool1d_params* p, void* stream) {
  return avg_pool(__func__, solops::avg_pool1d, x, y, p, stream);
}

solops_status solops_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool2d_params* p,
                                void* stream) {
  return max_pool(__func__, solops::max_pool2d, solops::max_pool2d_with_indices, x, y, indices, p, stream);
}

solops_status solops_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool2d_params* p, void* stream) {
  return avg_pool(__func__, solops::avg_pool2d, x, y, p, stream);
}

solops_status solops_max_pool3d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool3d_params* p,
                                void* stream) {
  return max_pool(__func__, solops::max_pool3d, solops::max_pool3d_with_indices, x, y, indices, p, stream);
}

solops_status solops_avg_pool3d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool3d_params* p, void* stream) {
  return avg_pool(__func__, solops::avg_pool3d, x, y, p, stream);
}

solops_status solops_adaptive_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                         const solops_tensor* indices,
                                         const solops_adaptive_pool2d_params* p, void* stream) {
  return max_pool(__func__, solops::adaptive_max_pool2d, solops::adaptive_max_pool2d_with_indices, x, y, indices,
                  p, stream);
}

solops_status solops_adaptive_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                         const solops_adaptive_pool2d_params* p, void* stream) {
  return avg_pool(__func__, solops::adaptive_avg_pool2d, x, y, p, stream);
}

solops_status solops_mean_pooling(const solops_tensor* x, const solops_tensor* y,
                                  const solops_tensor* offsets, const solops_tensor* indices,
                                  const solops_mean_pooling_params* p, void* stream) {
  return mean_pooling(__func__, solops::mean_pooling, x, y, offsets, indices, p, stream);
}

solops_status solops_reference_max_pool1d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool1d_params* p) {
  return reference_max_pool(__func__, solops::reference::max_pool1d, x, y, indices, p);
}

solops_status solops_reference_avg_pool1d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool1d_params* p) {
  return reference_avg_pool(__func__, solops::reference::avg_pool1d, x, y, p);
}

solops_status solops_reference_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool2d_params* p) {
  return reference_max_pool(__func__, solops::reference::max_pool2d, x, y, indices, p);
}

solops_status solops_reference_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool2d_params* p) {
  return reference_avg_pool(__func__, solops::reference::avg_pool2d, x, y, p);
}

solops_status solops_reference_max_pool3d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool3d_params* p) {
  return reference_max_pool(__func__, solops::reference::max_pool3d, x, y, indices, p);
}

solops_status solops_reference_avg_pool3d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool3d_params* p) {
  return reference_avg_pool(__func__, solops::reference::avg_pool3d, x, y, p);
}

solops_status solops_reference_adaptive_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                                   const solops_tensor* indices,
                                                   const solops_adaptive_pool2d_params* p) {
  return reference_max_pool(__func__, solops::reference::adaptive_max_pool2d, x, y, indices, p);
}

solops_status solops_reference_adaptive_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                                   const solops_adaptive_pool2d_params* p) {
  return reference_avg_pool(__func__, solops::reference::adaptive_avg_pool2d, x, y, p);
}

solops_status solops_reference_mean_pooling(const solops_tensor* x, const solops_tensor* y,
                                            const solops_tensor* offsets, const solops_tensor* indices,
                                            const solops_mean_pooling_params* p) {
  return mean_pooling(__func__, solops::reference::mean_pooling, x, y, offsets, indices, p);
}

solops_status solops_max_pool1d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool1d_params* p, int32_t with_indices,
                                     solops_cost* out) {
  return cost(__func__, with_indices ? solops::max_pool1d_with_indices_cost : solops::max_pool1d_cost,
              x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_avg_pool1d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool1d_params* p, solops_cost* out) {
  return cost(__func__, solops::avg_pool1d_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_max_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool2d_params* p, int32_t with_indices,
                                     solops_cost* out) {
  return cost(__func__, with_indices ? solops::max_pool2d_with_indices_cost : solops::max_pool2d_cost,
              x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_avg_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool2d_params* p, solops_cost* out) {
  return cost(__func__, solops::avg_pool2d_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_max_pool3d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool3d_params* p, int32_t with_indices,
                                     solops_cost* out) {
  return cost(__func__, with_indices ? solops::max_pool3d_with_indices_cost : solops::max_pool3d_cost,
              x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_avg_pool3d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool3d_params* p, solops_cost* out) {
  return cost(__func__, solops::avg_pool3d_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_adaptive_max_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_adaptive_pool2d_params* p,
                                              int32_t with_indices, solops_cost* out) {
  return cost(__func__,
              with_indices ? solops::adaptive_max_pool2d_with_indices_cost : solops::adaptive_max_pool2d_cost,
              x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_adaptive_avg_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_adaptive_pool2d_params* p, solops_cost* out) {
  return cost(__func__, solops::adaptive_avg_pool2d_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_mean_pooling_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                       const solops_mean_pooling_params* p,
                                       const solops_ragged_sizes* ragged, solops_cost* out) {
  const char* const function = __func__;
  return guarded(function, [&] {
    write_cost(solops::mean_pooling_cost(to_shape(x_rank, x_shape, function), static_cast<solops::DType>(x_dtype),
                                         to_params(p, function), to_ragged(ragged)),
               out, function);
  });
}

solops_status solops_rms_norm_output_shape(int32_t x_rank, const int64_t* x_shape, const solops_norm_params* p,
                                           int32_t* out_rank, int64_t* out_shape) {
  return norm_output_shape<solops::RMSNorm>(__func__, solops::rms_norm_output_shape, x_rank, x_shape, p, out_rank,
                                            out_shape);
}

solops_status solops_layer_norm_output_shape(int32_t x_rank, const int64_t* x_shape, const solops_norm_params* p,
                                             int32_t* out_rank, int64_t* out_shape) {
  return norm_output_shape<solops::LayerNorm>(__func__, solops::layer_norm_output_shape, x_rank, x_shape, p,
                                              out_rank, out_shape);
}

solops_status solops_gemma_rms_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                 const solops_norm_params* p, int32_t* out_rank,
                                                 int64_t* out_shape) {
  return norm_output_shape<solops::GemmaRMSNorm>(__func__, solops::gemma_rms_norm_output_shape, x_rank, x_shape, p,
                                                 out_rank, out_shape);
}

solops_status solops_fused_add_rms_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                     const solops_fused_add_norm_params* p, int32_t* out_rank,
                                                     int64_t* out_shape) {
  return norm_output_shape<solops::FusedAddRMSNorm>(__func__, solops::fused_add_rms_norm_output_shape, x_rank,
                                                    x_shape, p, out_rank, out_shape);
}

solops_status solops_fused_add_layer_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                       const solops_fused_add_norm_params* p, int32_t* out_rank,
                                                       int64_t* out_shape) {
  return norm_output_shape<solops::FusedAddLayerNorm>(__func__, solops::fused_add_layer_norm_output_shape, x_rank,
                                                      x_shape, p, out_rank, out_shape);
}

solops_status solops_rms_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                              const solops_norm_params* p, void* stream) {
  return row_norm<solops::RMSNorm>(__func__, solops::rms_norm, x, weight, y, p, stream);
}

solops_status solops_layer_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* bias,
                                const solops_tensor* y, const solops_norm_params* p, void* stream) {
  return layer_norm(__func__, solops::layer_norm, x, weight, bias, y, p, stream);
}

solops_status solops_gemma_rms_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                                    const solops_norm_params* p, void* stream) {
  return gemma_rms_norm(__func__, solops::gemma_rms_norm, x, weight, y, p, stream);
}

solops_status solops_fused_add_rms_norm(const solops_tensor* x, const solops_tensor* residual,
                                        const solops_tensor* weight, const solops_tensor* output,
                                        const solops_tensor* residual_out, const solops_fused_add_norm_params* p,
                                        void* stream) {
  return fused_add_rms_norm(__func__, solops::fused_add_rms_norm, x, residual, weight, output, residual_out, p,
                            stream);
}

solops_status solops_fused_add_layer_norm(const solops_tensor* x, const solops_tensor* residual,
                                          const solops_tensor* weight, const solops_tensor* bias,
                                          const solops_tensor* output, const solops_tensor* residual_out,
                                          const solops_fused_add_norm_params* p, void* stream) {
  return fused_add_layer_norm(__func__, solops::fused_add_layer_norm, x, residual, weight, bias, output,
                              residual_out, p, stream);
}

solops_status solops_reference_rms_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                                        const solops_norm_params* p) {
  return row_norm<solops::RMSNorm>(__func__, solops::reference::rms_norm, x, weight, y, p);
}

solops_status solops_reference_layer_norm(const solops_tensor* x, const solops_tensor* weight,
                                          const solops_tensor* bias, const solops_tensor* y,
                                          const solops_norm_params* p) {
  return layer_norm(__func__, solops::reference::layer_norm, x, weight, bias, y, p);
}

solops_status solops_reference_gemma_rms_norm(const solops_tensor* x, const solops_tensor* weight,
                                              const solops_tensor* y, const solops_norm_params* p) {
  return gemma_rms_norm(__func__, solops::reference::gemma_rms_norm, x, weight, y, p);
}

solops_status solops_reference_fused_add_rms_norm(const solops_tensor* x, const solops_tensor* residual,
                                                  const solops_tensor* weight, const solops_tensor* output,
                                                  const solops_tensor* residual_out,
                                                  const solops_fused_add_norm_params* p) {
  return fused_add_rms_norm(__func__, solops::reference::fused_add_rms_norm, x, residual, weight, output,
                            residual_out, p);
}

solops_status solops_reference_fused_add_layer_norm(const solops_tensor* x, const solops_tensor* residual,
                                                    const solops_tensor* weight, const solops_tensor* bias,
                                                    const solops_tensor* output, const solops_tensor* residual_out,
                                                    const solops_fused_add_norm_params* p) {
  return fused_add_layer_norm(__func__, solops::reference::fused_add_layer_norm, x, residual, weight, bias, output,
                              residual_out, p);
}

solops_status solops_rms_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                   const solops_norm_params* p, solops_cost* out) {
  return norm_cost<solops::RMSNorm>(__func__, solops::rms_norm_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_layer_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_norm_params* p, solops_cost* out) {
  return norm_cost<solops::LayerNorm>(__func__, solops::layer_norm_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_gemma_rms_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                         const solops_norm_params* p, solops_cost* out) {
  return norm_cost<solops::GemmaRMSNorm>(__func__, solops::gemma_rms_norm_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_fused_add_rms_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                             const solops_fused_add_norm_params* p, solops_cost* out) {
  return norm_cost<solops::FusedAddRMSNorm>(__func__, solops::fused_add_rms_norm_cost, x_rank, x_shape, x_dtype, p,
                                            out);
}

solops_status solops_fused_add_layer_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                               const solops_fused_add_norm_params* p, solops_cost* out) {
  return norm_cost<solops::FusedAddLayerNorm>(__func__, solops::fused_add_layer_norm_cost, x_rank, x_shape, x_dtype,
                                              p, out);
}

solops_status solops_ada_layer_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                 const solops_ada_layer_norm_params* p, int32_t* out_rank,
                                                 int64_t* out_shape) {
  return norm_output_shape<solops::AdaLayerNorm>(__func__, solops::ada_layer_norm_output_shape, x_rank, x_shape, p,
                                                 out_rank, out_shape);
}

solops_status solops_ada_layer_norm(const solops_tensor* x, const solops_tensor* scale, const solops_tensor* shift,
                                    const solops_tensor* y, const solops_ada_layer_norm_params* p, void* stream) {
  return ada_layer_norm(__func__, solops::ada_layer_norm, x, scale, shift, y, p, stream);
}

solops_status solops_reference_ada_layer_norm(const solops_tensor* x, const solops_tensor* scale,
                                              const solops_tensor* shift, const solops_tensor* y,
                                              const solops_ada_layer_norm_params* p) {
  return ada_layer_norm(__func__, solops::reference::ada_layer_norm, x, scale, shift, y, p);
}

solops_status solops_ada_layer_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                         const solops_ada_layer_norm_params* p, solops_cost* out) {
  return norm_cost<solops::AdaLayerNorm>(__func__, solops::ada_layer_norm_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_rms_norm_quant_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                 const solops_norm_params* p, int32_t* out_rank,
                                                 int64_t* out_shape) {
  return norm_output_shape<solops::RMSNormQuant>(__func__, solops::rms_norm_quant_output_shape, x_rank, x_shape, p,
                                                 out_rank, out_shape);
}

solops_status solops_layer_norm_quant_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                   const solops_norm_params* p, int32_t* out_rank,
                                                   int64_t* out_shape) {
  return norm_output_shape<solops::LayerNormQuant>(__func__, solops::layer_norm_quant_output_shape, x_rank, x_shape,
                                                   p, out_rank, out_shape);
}

solops_status solops_rms_norm_quant(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* q,
                                    const solops_tensor* scale, const solops_norm_params* p, void* stream) {
  return rms_norm_quant(__func__, solops::rms_norm_quant, x, weight, q, scale, p, stream);
}

solops_status solops_layer_norm_quant(const solops_tensor* x, const solops_tensor* weight,
                                      const solops_tensor* bias, const solops_tensor* q, const solops_tensor* scale,
                                      const solops_norm_params* p, void* stream) {
  return layer_norm_quant(__func__, solops::layer_norm_quant, x, weight, bias, q, scale, p, stream);
}

solops_status solops_reference_rms_norm_quant(const solops_tensor* x, const solops_tensor* weight,
                                              const solops_tensor* q, const solops_tensor* scale,
                                              const solops_norm_params* p) {
  return rms_norm_quant(__func__, solops::reference::rms_norm_quant, x, weight, q, scale, p);
}

solops_status solops_reference_layer_norm_quant(const solops_tensor* x, const solops_tensor* weight,
                                                const solops_tensor* bias, const solops_tensor* q,
                                                const solops_tensor* scale, const solops_norm_params* p) {
  return layer_norm_quant(__func__, solops::reference::layer_norm_quant, x, weight, bias, q, scale, p);
}

solops_status solops_rms_norm_quant_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                         const solops_norm_params* p, solops_cost* out) {
  return norm_cost<solops::RMSNormQuant>(__func__, solops::rms_norm_quant_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_layer_norm_quant_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                           const solops_norm_params* p, solops_cost* out) {
  return norm_cost<solops::LayerNormQuant>(__func__, solops::layer_norm_quant_cost, x_rank, x_shape, x_dtype, p,
                                           out);
}

solops_status solops_qk_norm_output_shape(int32_t x_rank, const int64_t* x_shape, const solops_norm_params* p,
                                          int32_t* out_rank, int64_t* out_shape) {
  return norm_output_shape<solops::QKNorm>(__func__, solops::qk_norm_output_shape, x_rank, x_shape, p, out_rank,
                                           out_shape);
}

solops_status solops_qk_norm(const solops_tensor* q, const solops_tensor* k, const solops_tensor* q_weight,
                             const solops_tensor* k_weight, const solops_tensor* q_out, const solops_tensor* k_out,
                             const solops_norm_params* p, void* stream) {
  return qk_norm(__func__, solops::qk_norm, q, k, q_weight, k_weight, q_out, k_out, p, stream);
}

solops_status solops_reference_qk_norm(const solops_tensor* q, const solops_tensor* k, const solops_tensor* q_weight,
                                       const solops_tensor* k_weight, const solops_tensor* q_out,
                                       const solops_tensor* k_out, const solops_norm_params* p) {
  return qk_norm(__func__, solops::reference::qk_norm, q, k, q_weight, k_weight, q_out, k_out, p);
}

solops_status solops_qk_norm_cost(int32_t q_rank, const int64_t* q_shape, int32_t k_rank, const int64_t* k_shape,
                                  int32_t dtype, const solops_norm_params* p, solops_cost* out) {
  const char* const function = __func__;
  return guarded(function, [&] {
    write_cost(solops::qk_norm_cost(to_shape(q_rank, q_shape, function), to_shape(k_rank, k_shape, function),
                                    static_cast<solops::DType>(dtype), to_norm<solops::QKNorm>(p, function)),
               out, function);
  });
}

solops_status solops_group_rms_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                 const solops_norm_params* p, int32_t* out_rank,
                                                 int64_t* out_shape) {
  return norm_output_shape<solops::GroupRMSNorm>(__func__, solops::group_rms_norm_output_shape, x_rank, x_shape, p,
                                                 out_rank, out_shape);
}

solops_status solops_group_rms_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                                    const solops_tensor* rstd, const solops_norm_params* p, void* stream) {
  return rms_norm_with_rstd<solops::GroupRMSNorm>(__func__, solops::group_rms_norm, x, weight, y, rstd, p, stream);
}

solops_status solops_reference_group_rms_norm(const solops_tensor* x, const solops_tensor* weight,
                                              const solops_tensor* y, const solops_tensor* rstd,
                                              const solops_norm_params* p) {
  return rms_norm_with_rstd<solops::GroupRMSNorm>(__func__, solops::reference::group_rms_norm, x, weight, y, rstd,
                                                  p);
}

solops_status solops_group_rms_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                         const solops_norm_params* p, solops_cost* out) {
  return norm_cost<solops::GroupRMSNorm>(__func__, solops::group_rms_norm_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_vector_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                              const solops_vector_norm_params* p, int32_t* out_rank,
                                              int64_t* out_shape) {
  return output_shape(__func__, solops::vector_norm_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_vector_norm_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                    const solops_vector_norm_params* p, int64_t* elements) {
  return workspace_elements(__func__, solops::vector_norm_workspace_elements, x_rank, x_shape, p, elements);
}

solops_status solops_vector_norm(const solops_tensor* x, const solops_tensor* y, const solops_tensor* workspace,
                                 const solops_vector_norm_params* p, void* stream) {
  const char* const function = __func__;
  return guarded(function, [&] {
    const auto workspace_ref = optional_tensor(workspace, function, "workspace");
    solops::vector_norm(to_tensor(x, function, "x"), to_tensor(y, function, "y"), optional_ref(workspace_ref),
                        to_params(p, function), static_cast<cudaStream_t>(stream));
  });
}

solops_status solops_reference_vector_norm(const solops_tensor* x, const solops_tensor* y,
                                           const solops_vector_norm_params* p) {
  return reference_avg_pool(__func__, solops::reference::vector_norm, x, y, p);
}

solops_status solops_vector_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                      const solops_vector_norm_params* p, solops_cost* out) {
  return cost(__func__, solops::vector_norm_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_weight_norm_workspace_elements(int32_t v_rank, const int64_t* v_shape,
                                                    const solops_weight_norm_params* p, int64_t* elements) {
  return workspace_elements(__func__, solops::weight_norm_workspace_elements, v_rank, v_shape, p, elements);
}

solops_status solops_weight_norm(const solops_tensor* v, const solops_tensor* g, const solops_tensor* y,
                                 const solops_tensor* norm, const solops_tensor* workspace,
                                 const solops_weight_norm_params* p, void* stream) {
  const char* const function = __func__;
  return guarded(function, [&] {
    const auto workspace_ref = optional_tensor(workspace, function, "workspace");
    solops::weight_norm(to_tensor(v, function, "v"), to_tensor(g, function, "g"), to_tensor(y, function, "y"),
                        to_tensor(norm, function, "norm"), optional_ref(workspace_ref), to_params(p, function),
                        static_cast<cudaStream_t>(stream));
  });
}

solops_status solops_reference_weight_norm(const solops_tensor* v, const solops_tensor* g, const solops_tensor* y,
                                           const solops_tensor* norm, const solops_weight_norm_params* p) {
  const char* const function = __func__;
  return guarded(function, [&] {
    solops::reference::weight_norm(to_tensor(v, function, "v"), to_tensor(g, function, "g"),
                                   to_tensor(y, function, "y"), to_tensor(norm, function, "norm"),
                                   to_params(p, function));
  });
}

solops_status solops_weight_norm_cost(int32_t v_rank, const int64_t* v_shape, int32_t v_dtype,
                                      const solops_weight_norm_params* p, solops_cost* out) {
  return cost(__func__, solops::weight_norm_cost, v_rank, v_shape, v_dtype, p, out);
}

solops_status solops_spectral_norm_power_iter_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                                 const solops_spectral_norm_power_iter_params* p,
                                                                 int64_t* elements) {
  return workspace_elements(__func__, solops::spectral_norm_power_iter_workspace_elements, x_rank, x_shape, p,
                            elements);
}

solops_status solops_spectral_norm_power_iter(const solops_tensor* x, const solops_tensor* u, const solops_tensor* v,
                                              const solops_tensor* sigma, const solops_tensor* u_out,
                                              const solops_tensor* v_out, const solops_tensor* workspace,
                                              const solops_spectral_norm_power_iter_params* p, void* stream) {
  const char* const function = __func__;
  return guarded(function, [&] {
    const auto workspace_ref = optional_tensor(workspace, function, "workspace");
    solops::spectral_norm_power_iter(to_tensor(x, function, "x"), to_tensor(u, function, "u"),
                                     to_tensor(v, function, "v"), to_tensor(sigma, function, "sigma"),
                                     to_tensor(u_out, function, "u_out"), to_tensor(v_out, function, "v_out"),
                                     optional_ref(workspace_ref), to_params(p, function),
                                     static_cast<cudaStream_t>(stream));
  });
}

solops_status solops_reference_spectral_norm_power_iter(const solops_tensor* x, const solops_tensor* u,
                                                        const solops_tensor* v, const solops_tensor* sigma,
                                                        const solops_tensor* u_out, const solops_tensor* v_out,
                                                        const solops_spectral_norm_power_iter_params* p) {
  const char* const function = __func__;
  return guarded(function, [&] {
    solops::reference::spectral_norm_power_iter(to_tensor(x, function, "x"), to_tensor(u, function, "u"),
                                                to_tensor(v, function, "v"), to_tensor(sigma, function, "sigma"),
                                                to_tensor(u_out, function, "u_out"),
                                                to_tensor(v_out, function, "v_out"), to_params(p, function));
  });
}

solops_status solops_spectral_norm_power_iter_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                                   const solops_spectral_norm_power_iter_params* p,
                                                   solops_cost* out) {
  return cost(__func__, solops::spectral_norm_power_iter_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_norm_stats_shape(int32_t x_rank, const int64_t* x_shape, const solops_norm_backward_params* p,
                                      int32_t* out_rank, int64_t* out_shape) {
  const auto stats_shape = [](std::span<const int64_t> x, const solops::RMSNormBackward& params) {
    return solops::norm_stats_shape(x, params.normalized_shape);
  };
  return norm_output_shape<solops::RMSNormBackward>(__func__, stats_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_rms_norm_with_stats(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                                         const solops_tensor* rstd, const solops_norm_params* p, void* stream) {
  return rms_norm_with_rstd<solops::RMSNorm>(__func__, solops::rms_norm_with_stats, x, weight, y, rstd, p, stream);
}

solops_status solops_layer_norm_with_stats(const solops_tensor* x, const solops_tensor* weight,
                                           const solops_tensor* bias, const solops_tensor* y,
                                           const solops_tensor* mean, const solops_tensor* rstd,
                                           const solops_norm_params* p, void* stream) {
  return layer_norm_with_stats(__func__, solops::layer_norm_with_stats, x, weight, bias, y, mean, rstd, p, stream);
}

solops_status solops_rms_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                       const solops_tensor* weight, const solops_tensor* rstd,
                                       const solops_tensor* grad_x, const solops_tensor* grad_weight,
                                       const solops_tensor* workspace, const solops_norm_backward_params* p,
                                       void* stream) {
  return rms_norm_backward(__func__, solops::rms_norm_backward, grad_out, x, weight, rstd, grad_x, grad_weight,
                           workspace, p, stream);
}

solops_status solops_layer_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                         const solops_tensor* weight, const solops_tensor* mean,
                                         const solops_tensor* rstd, const solops_tensor* grad_x,
                                         const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                         const solops_tensor* workspace, const solops_norm_backward_params* p,
                                         void* stream) {
  return layer_norm_backward(__func__, solops::layer_norm_backward, grad_out, x, weight, mean, rstd, grad_x,
                             grad_weight, grad_bias, workspace, p, stream);
}

solops_status solops_reference_rms_norm_with_stats(const solops_tensor* x, const solops_tensor* weight,
                                                   const solops_tensor* y, const solops_tensor* rstd,
                                                   const solops_norm_params* p) {
  return rms_norm_with_rstd<solops::RMSNorm>(__func__, solops::reference::rms_norm_with_stats, x, weight, y, rstd, p);
}

solops_status solops_reference_layer_norm_with_stats(const solops_tensor* x, const solops_tensor* weight,
                                                     const solops_tensor* bias, const solops_tensor* y,
                                                     const solops_tensor* mean, const solops_tensor* rstd,
                                                     const solops_norm_params* p) {
  return layer_norm_with_stats(__func__, solops::reference::layer_norm_with_stats, x, weight, bias, y, mean, rstd,
                               p);
}

solops_status solops_reference_rms_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                 const solops_tensor* weight, const solops_tensor* rstd,
                                                 const solops_tensor* grad_x, const solops_tensor* grad_weight,
                                                 const solops_norm_backward_params* p) {
  return rms_norm_backward(__func__, solops::reference::rms_norm_backward, grad_out, x, weight, rstd, grad_x,
                           grad_weight, nullptr, p);
}

solops_status solops_reference_layer_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                   const solops_tensor* weight, const solops_tensor* mean,
                                                   const solops_tensor* rstd, const solops_tensor* grad_x,
                                                   const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                                   const solops_norm_backward_params* p) {
  return layer_norm_backward(__func__, solops::reference::layer_norm_backward, grad_out, x, weight, mean, rstd,
                             grad_x, grad_weight, grad_bias, nullptr, p);
}

solops_status solops_rms_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                         const solops_norm_backward_params* p, int64_t* elements) {
  return norm_workspace_elements<solops::RMSNormBackward>(__func__, solops::rms_norm_backward_workspace_elements,
                                                          x_rank, x_shape, p, elements);
}

solops_status solops_layer_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                           const solops_norm_backward_params* p, int64_t* elements) {
  return norm_workspace_elements<solops::LayerNormBackward>(__func__, solops::layer_norm_backward_workspace_elements,
                                                            x_rank, x_shape, p, elements);
}

solops_status solops_rms_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                            const solops_norm_backward_params* p, solops_cost* out) {
  return norm_cost<solops::RMSNormBackward>(__func__, solops::rms_norm_backward_cost, x_rank, x_shape, x_dtype, p,
                                            out);
}

solops_status solops_layer_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_norm_backward_params* p, solops_cost* out) {
  return norm_cost<solops::LayerNormBackward>(__func__, solops::layer_norm_backward_cost, x_rank, x_shape, x_dtype,
                                              p, out);
}

}  // extern "C"
