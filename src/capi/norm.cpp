// The C ABI of the normalization family: converts its C structs to the C++ API and exceptions to status
// codes.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "capi/capi.hpp"
#include "solops/c/norm.h"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

using namespace solops::capi;

// The conversions of the C parameter structs that capi.hpp's shared bodies take, static in the global
// namespace where those find them.

static solops::VectorNorm to_params(const solops_vector_norm_params* p, const char* function) {
  require_pointer(p, function, "params");
  if (p->dim_count < 0 || p->dim_count > SOLOPS_MAX_RANK) {
    throw solops::Error(solops::Status::invalid_argument,
                        std::string(function) + ": dim_count " + std::to_string(p->dim_count) + " is outside [0, 8]");
  }
  return {p->ord, std::vector<int64_t>(p->dim, p->dim + p->dim_count), p->keepdim != 0};
}

static solops::WeightNorm to_params(const solops_weight_norm_params* p, const char* function) {
  require_pointer(p, function, "params");
  return {p->dim};
}

static solops::BatchNormTraining to_params(const solops_batch_norm_training_params* p, const char* function) {
  require_pointer(p, function, "params");
  solops::BatchNormTraining params;
  if (p->has_momentum) params.momentum = p->momentum;
  if (p->has_eps) params.eps = p->eps;
  return params;
}

static solops::SpectralNormPowerIter to_params(const solops_spectral_norm_power_iter_params* p, const char* function) {
  require_pointer(p, function, "params");
  if (p->normalized_rank < 0 || p->normalized_rank > SOLOPS_MAX_RANK) {
    throw solops::Error(solops::Status::invalid_argument, std::string(function) + ": normalized_rank " +
                                                              std::to_string(p->normalized_rank) +
                                                              " is outside [0, 8]");
  }
  return {std::vector<int64_t>(p->normalized_shape, p->normalized_shape + p->normalized_rank), p->n_iter, p->eps};
}

namespace {

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
solops_status batch_norm_inference(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                                   const solops_tensor* bias, const solops_tensor* running_mean,
                                   const solops_tensor* running_var, const solops_tensor* y,
                                   const solops_batch_norm_inference_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    const auto running_mean_ref = to_tensor(running_mean, function, "running_mean");
    const auto running_var_ref = to_tensor(running_var, function, "running_var");
    op(x_ref, optional_ref(weight_ref), optional_ref(bias_ref), running_mean_ref, running_var_ref,
       to_tensor(y, function, "y"), to_norm<solops::BatchNormInference>(p, function),
       static_cast<cudaStream_t>(stream)...);
  });
}

template <class Op, class... Stream>
solops_status batch_norm_training(const char* function, Op op, const solops_tensor* x,
                                  const solops_tensor* running_mean, const solops_tensor* running_var,
                                  const solops_tensor* weight, const solops_tensor* bias, const solops_tensor* y,
                                  const solops_tensor* save_mean, const solops_tensor* save_invstd,
                                  const solops_tensor* workspace, const solops_batch_norm_training_params* p,
                                  Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto running_mean_ref = optional_tensor(running_mean, function, "running_mean");
    const auto running_var_ref = optional_tensor(running_var, function, "running_var");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    const auto y_ref = to_tensor(y, function, "y");
    const auto save_mean_ref = to_tensor(save_mean, function, "save_mean");
    const auto save_invstd_ref = to_tensor(save_invstd, function, "save_invstd");
    const auto params = to_params(p, function);
    if constexpr (sizeof...(Stream) > 0) {
      const auto workspace_ref = optional_tensor(workspace, function, "workspace");
      op(x_ref, optional_ref(running_mean_ref), optional_ref(running_var_ref), optional_ref(weight_ref),
         optional_ref(bias_ref), y_ref, save_mean_ref, save_invstd_ref, optional_ref(workspace_ref), params,
         static_cast<cudaStream_t>(stream)...);
    } else {
      op(x_ref, optional_ref(running_mean_ref), optional_ref(running_var_ref), optional_ref(weight_ref),
         optional_ref(bias_ref), y_ref, save_mean_ref, save_invstd_ref, params);
    }
  });
}

template <class Op, class... Stream>
solops_status batch_norm_backward(const char* function, Op op, const solops_tensor* grad_out, const solops_tensor* x,
                                  const solops_tensor* weight, const solops_tensor* save_mean,
                                  const solops_tensor* save_invstd, const solops_tensor* grad_x,
                                  const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                  const solops_tensor* workspace, Stream... stream) {
  return guarded(function, [&] {
    const auto grad_out_ref = to_tensor(grad_out, function, "grad_out");
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto save_mean_ref = to_tensor(save_mean, function, "save_mean");
    const auto save_invstd_ref = to_tensor(save_invstd, function, "save_invstd");
    const auto grad_x_ref = to_tensor(grad_x, function, "grad_x");
    const auto grad_weight_ref = optional_tensor(grad_weight, function, "grad_weight");
    const auto grad_bias_ref = optional_tensor(grad_bias, function, "grad_bias");
    if constexpr (sizeof...(Stream) > 0) {
      const auto workspace_ref = optional_tensor(workspace, function, "workspace");
      op(grad_out_ref, x_ref, optional_ref(weight_ref), save_mean_ref, save_invstd_ref, grad_x_ref,
         optional_ref(grad_weight_ref), optional_ref(grad_bias_ref), optional_ref(workspace_ref),
         static_cast<cudaStream_t>(stream)...);
    } else {
      op(grad_out_ref, x_ref, optional_ref(weight_ref), save_mean_ref, save_invstd_ref, grad_x_ref,
         optional_ref(grad_weight_ref), optional_ref(grad_bias_ref));
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
  return reference_x_to_y(__func__, solops::reference::vector_norm, x, y, p);
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

solops_status solops_batch_norm_inference_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                       const solops_batch_norm_inference_params* p, int32_t* out_rank,
                                                       int64_t* out_shape) {
  return norm_output_shape<solops::BatchNormInference>(__func__, solops::batch_norm_inference_output_shape, x_rank,
                                                       x_shape, p, out_rank, out_shape);
}

solops_status solops_batch_norm_inference(const solops_tensor* x, const solops_tensor* weight,
                                          const solops_tensor* bias, const solops_tensor* running_mean,
                                          const solops_tensor* running_var, const solops_tensor* y,
                                          const solops_batch_norm_inference_params* p, void* stream) {
  return batch_norm_inference(__func__, solops::batch_norm_inference, x, weight, bias, running_mean, running_var, y, p,
                              stream);
}

solops_status solops_reference_batch_norm_inference(const solops_tensor* x, const solops_tensor* weight,
                                                    const solops_tensor* bias, const solops_tensor* running_mean,
                                                    const solops_tensor* running_var, const solops_tensor* y,
                                                    const solops_batch_norm_inference_params* p) {
  return batch_norm_inference(__func__, solops::reference::batch_norm_inference, x, weight, bias, running_mean,
                              running_var, y, p);
}

solops_status solops_batch_norm_inference_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                               const solops_batch_norm_inference_params* p, solops_cost* out) {
  return norm_cost<solops::BatchNormInference>(__func__, solops::batch_norm_inference_cost, x_rank, x_shape, x_dtype,
                                               p, out);
}

// ---- GroupNorm and InstanceNorm ----

// Their helpers have C++ linkage (templates), in this block of the C functions.
extern "C++" {
namespace {

solops::GroupNorm group_norm_params(const solops_group_norm_params* p, const char* function) {
  require_pointer(p, function, "params");
  return {p->num_groups, p->eps};
}

solops::InstanceNorm instance_norm_params(const solops_instance_norm_params* p, const char* function) {
  require_pointer(p, function, "params");
  return {p->use_input_stats != 0, p->momentum, p->eps};
}

// A shape function of x's shape (output, statistics).
template <class CParams, class Convert, class Op>
solops_status spatial_shape(const char* function, Op op, Convert convert, int32_t x_rank, const int64_t* x_shape,
                            const CParams* p, int32_t* out_rank, int64_t* out_shape) {
  return guarded(function, [&] {
    write_shape(op(to_shape(x_rank, x_shape, function), convert(p, function)), out_rank, out_shape, function);
  });
}

// The forward ops and their references: with a stream (the CUDA op) the workspace goes along and the
// statistics are references, without one they are pointers that may be null.
template <class Op, class... Stream>
solops_status group_norm_call(const char* function, Op op, const solops_tensor* x, const solops_tensor* weight,
                              const solops_tensor* bias, const solops_tensor* y, const solops_tensor* mean,
                              const solops_tensor* rstd, const solops_group_norm_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    const auto y_ref = to_tensor(y, function, "y");
    const auto params = group_norm_params(p, function);
    if constexpr (sizeof...(Stream) == 0) {
      const auto mean_ref = optional_tensor(mean, function, "mean");
      const auto rstd_ref = optional_tensor(rstd, function, "rstd");
      op(x_ref, optional_ref(weight_ref), optional_ref(bias_ref), y_ref, optional_ref(mean_ref), optional_ref(rstd_ref),
         params);
    } else if (mean || rstd) {
      op(x_ref, optional_ref(weight_ref), optional_ref(bias_ref), y_ref, to_tensor(mean, function, "mean"),
         to_tensor(rstd, function, "rstd"), params, static_cast<cudaStream_t>(stream)...);
    } else {
      solops::group_norm(x_ref, optional_ref(weight_ref), optional_ref(bias_ref), y_ref, params,
                         static_cast<cudaStream_t>(stream)...);
    }
  });
}

template <class Op, class... Stream>
solops_status instance_norm_call(const char* function, Op op, const solops_tensor* x,
                                 const solops_tensor* running_mean, const solops_tensor* running_var,
                                 const solops_tensor* weight, const solops_tensor* bias, const solops_tensor* y,
                                 const solops_tensor* mean, const solops_tensor* rstd, const solops_tensor* workspace,
                                 const solops_instance_norm_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto x_ref = to_tensor(x, function, "x");
    const auto running_mean_ref = optional_tensor(running_mean, function, "running_mean");
    const auto running_var_ref = optional_tensor(running_var, function, "running_var");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    const auto y_ref = to_tensor(y, function, "y");
    const auto params = instance_norm_params(p, function);
    if constexpr (sizeof...(Stream) == 0) {
      const auto mean_ref = optional_tensor(mean, function, "mean");
      const auto rstd_ref = optional_tensor(rstd, function, "rstd");
      op(x_ref, optional_ref(running_mean_ref), optional_ref(running_var_ref), optional_ref(weight_ref),
         optional_ref(bias_ref), y_ref, optional_ref(mean_ref), optional_ref(rstd_ref), params);
    } else {
      const auto workspace_ref = optional_tensor(workspace, function, "workspace");
      if (mean || rstd) {
        op(x_ref, optional_ref(running_mean_ref), optional_ref(running_var_ref), optional_ref(weight_ref),
           optional_ref(bias_ref), y_ref, to_tensor(mean, function, "mean"), to_tensor(rstd, function, "rstd"),
           optional_ref(workspace_ref), params, static_cast<cudaStream_t>(stream)...);
      } else {
        solops::instance_norm(x_ref, optional_ref(running_mean_ref), optional_ref(running_var_ref),
                              optional_ref(weight_ref), optional_ref(bias_ref), y_ref, optional_ref(workspace_ref),
                              params, static_cast<cudaStream_t>(stream)...);
      }
    }
  });
}

// The backward ops and their references (which take no workspace).
template <class CParams, class Convert, class Op, class... Stream>
solops_status spatial_backward(const char* function, Op op, Convert convert, const solops_tensor* grad_out,
                               const solops_tensor* x, const solops_tensor* weight, const solops_tensor* mean,
                               const solops_tensor* rstd, const solops_tensor* grad_x, const solops_tensor* grad_weight,
                               const solops_tensor* grad_bias, const solops_tensor* workspace, const CParams* p,
                               Stream... stream) {
  return guarded(function, [&] {
    const auto params = convert(p, function);
    const auto grad_out_ref = to_tensor(grad_out, function, "grad_out");
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = optional_tensor(weight, function, "weight");
    const auto mean_ref = to_tensor(mean, function, "mean");
    const auto rstd_ref = to_tensor(rstd, function, "rstd");
    const auto grad_x_ref = to_tensor(grad_x, function, "grad_x");
    const auto grad_weight_ref = optional_tensor(grad_weight, function, "grad_weight");
    const auto grad_bias_ref = optional_tensor(grad_bias, function, "grad_bias");
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

solops::GroupNormBackward group_backward_params(const solops_group_norm_params* p, const char* function) {
  return {group_norm_params(p, function).num_groups};
}

solops::InstanceNormBackward instance_backward_params(const solops_instance_norm_params* p, const char* function) {
  return {instance_norm_params(p, function).use_input_stats};
}

}  // namespace
}  // extern "C++"

solops_status solops_group_norm_output_shape(int32_t x_rank, const int64_t* x_shape, const solops_group_norm_params* p,
                                             int32_t* out_rank, int64_t* out_shape) {
  return spatial_shape(__func__, solops::group_norm_output_shape, group_norm_params, x_rank, x_shape, p, out_rank,
                       out_shape);
}

solops_status solops_group_norm_stats_shape(int32_t x_rank, const int64_t* x_shape, const solops_group_norm_params* p,
                                            int32_t* out_rank, int64_t* out_shape) {
  return spatial_shape(__func__, solops::group_norm_stats_shape, group_norm_params, x_rank, x_shape, p, out_rank,
                       out_shape);
}

solops_status solops_group_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* bias,
                                const solops_tensor* y, const solops_group_norm_params* p, void* stream) {
  return group_norm_call(__func__, solops::group_norm_with_stats, x, weight, bias, y, nullptr, nullptr, p, stream);
}

solops_status solops_group_norm_with_stats(const solops_tensor* x, const solops_tensor* weight,
                                           const solops_tensor* bias, const solops_tensor* y,
                                           const solops_tensor* mean, const solops_tensor* rstd,
                                           const solops_group_norm_params* p, void* stream) {
  return group_norm_call(__func__, solops::group_norm_with_stats, x, weight, bias, y, mean, rstd, p, stream);
}

solops_status solops_reference_group_norm(const solops_tensor* x, const solops_tensor* weight,
                                          const solops_tensor* bias, const solops_tensor* y, const solops_tensor* mean,
                                          const solops_tensor* rstd, const solops_group_norm_params* p) {
  return group_norm_call(__func__, solops::reference::group_norm, x, weight, bias, y, mean, rstd, p);
}

solops_status solops_group_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_group_norm_params* p, int32_t affine, solops_cost* out) {
  return guarded(__func__, [&] {
    write_cost(solops::group_norm_cost(to_shape(x_rank, x_shape, __func__), static_cast<solops::DType>(x_dtype),
                                       group_norm_params(p, __func__), affine != 0),
               out, __func__);
  });
}

solops_status solops_group_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                         const solops_tensor* weight, const solops_tensor* mean,
                                         const solops_tensor* rstd, const solops_tensor* grad_x,
                                         const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                         const solops_tensor* workspace, const solops_group_norm_params* p,
                                         void* stream) {
  return spatial_backward(__func__, solops::group_norm_backward, group_backward_params, grad_out, x, weight, mean, rstd,
                          grad_x, grad_weight, grad_bias, workspace, p, stream);
}

solops_status solops_reference_group_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                   const solops_tensor* weight, const solops_tensor* mean,
                                                   const solops_tensor* rstd, const solops_tensor* grad_x,
                                                   const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                                   const solops_group_norm_params* p) {
  return spatial_backward(__func__, solops::reference::group_norm_backward, group_backward_params, grad_out, x, weight,
                          mean, rstd, grad_x, grad_weight, grad_bias, nullptr, p);
}

solops_status solops_group_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                            const solops_group_norm_params* p,
                                                            int32_t parameter_gradients, int64_t* elements) {
  return guarded(__func__, [&] {
    require_pointer(elements, __func__, "elements");
    *elements = solops::group_norm_backward_workspace_elements(
        to_shape(x_rank, x_shape, __func__), group_backward_params(p, __func__), parameter_gradients != 0);
  });
}

solops_status solops_group_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_group_norm_params* p, int32_t weight, solops_cost* out) {
  return guarded(__func__, [&] {
    write_cost(solops::group_norm_backward_cost(to_shape(x_rank, x_shape, __func__),
                                                static_cast<solops::DType>(x_dtype), group_backward_params(p, __func__),
                                                weight != 0),
               out, __func__);
  });
}

solops_status solops_instance_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                const solops_instance_norm_params* p, int32_t* out_rank,
                                                int64_t* out_shape) {
  return spatial_shape(__func__, solops::instance_norm_output_shape, instance_norm_params, x_rank, x_shape, p,
                       out_rank, out_shape);
}

solops_status solops_instance_norm_stats_shape(int32_t x_rank, const int64_t* x_shape,
                                               const solops_instance_norm_params* p, int32_t* out_rank,
                                               int64_t* out_shape) {
  return spatial_shape(__func__, solops::instance_norm_stats_shape, instance_norm_params, x_rank, x_shape, p, out_rank,
                       out_shape);
}

solops_status solops_instance_norm_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                      const solops_instance_norm_params* p, int32_t running_stats,
                                                      int64_t* elements) {
  return guarded(__func__, [&] {
    require_pointer(elements, __func__, "elements");
    *elements = solops::instance_norm_workspace_elements(to_shape(x_rank, x_shape, __func__),
                                                         instance_norm_params(p, __func__), running_stats != 0);
  });
}

solops_status solops_instance_norm(const solops_tensor* x, const solops_tensor* running_mean,
                                   const solops_tensor* running_var, const solops_tensor* weight,
                                   const solops_tensor* bias, const solops_tensor* y, const solops_tensor* workspace,
                                   const solops_instance_norm_params* p, void* stream) {
  return instance_norm_call(__func__, solops::instance_norm_with_stats, x, running_mean, running_var, weight, bias, y,
                            nullptr, nullptr, workspace, p, stream);
}

solops_status solops_instance_norm_with_stats(const solops_tensor* x, const solops_tensor* running_mean,
                                              const solops_tensor* running_var, const solops_tensor* weight,
                                              const solops_tensor* bias, const solops_tensor* y,
                                              const solops_tensor* mean, const solops_tensor* rstd,
                                              const solops_tensor* workspace, const solops_instance_norm_params* p,
                                              void* stream) {
  return instance_norm_call(__func__, solops::instance_norm_with_stats, x, running_mean, running_var, weight, bias, y,
                            mean, rstd, workspace, p, stream);
}

solops_status solops_reference_instance_norm(const solops_tensor* x, const solops_tensor* running_mean,
                                             const solops_tensor* running_var, const solops_tensor* weight,
                                             const solops_tensor* bias, const solops_tensor* y,
                                             const solops_tensor* mean, const solops_tensor* rstd,
                                             const solops_instance_norm_params* p) {
  return instance_norm_call(__func__, solops::reference::instance_norm, x, running_mean, running_var, weight, bias, y,
                            mean, rstd, nullptr, p);
}

solops_status solops_instance_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                        const solops_instance_norm_params* p, int32_t affine, int32_t running_stats,
                                        solops_cost* out) {
  return guarded(__func__, [&] {
    write_cost(solops::instance_norm_cost(to_shape(x_rank, x_shape, __func__), static_cast<solops::DType>(x_dtype),
                                          instance_norm_params(p, __func__), affine != 0, running_stats != 0),
               out, __func__);
  });
}

solops_status solops_instance_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                            const solops_tensor* weight, const solops_tensor* mean,
                                            const solops_tensor* rstd, const solops_tensor* grad_x,
                                            const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                            const solops_tensor* workspace, const solops_instance_norm_params* p,
                                            void* stream) {
  return spatial_backward(__func__, solops::instance_norm_backward, instance_backward_params, grad_out, x, weight, mean,
                          rstd, grad_x, grad_weight, grad_bias, workspace, p, stream);
}

solops_status solops_reference_instance_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                      const solops_tensor* weight, const solops_tensor* mean,
                                                      const solops_tensor* rstd, const solops_tensor* grad_x,
                                                      const solops_tensor* grad_weight,
                                                      const solops_tensor* grad_bias,
                                                      const solops_instance_norm_params* p) {
  return spatial_backward(__func__, solops::reference::instance_norm_backward, instance_backward_params, grad_out, x,
                          weight, mean, rstd, grad_x, grad_weight, grad_bias, nullptr, p);
}

solops_status solops_instance_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                               const solops_instance_norm_params* p,
                                                               int32_t parameter_gradients, int64_t* elements) {
  return guarded(__func__, [&] {
    require_pointer(elements, __func__, "elements");
    *elements = solops::instance_norm_backward_workspace_elements(
        to_shape(x_rank, x_shape, __func__), instance_backward_params(p, __func__), parameter_gradients != 0);
  });
}

solops_status solops_instance_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                                 const solops_instance_norm_params* p, int32_t weight,
                                                 solops_cost* out) {
  return guarded(__func__, [&] {
    write_cost(solops::instance_norm_backward_cost(to_shape(x_rank, x_shape, __func__),
                                                   static_cast<solops::DType>(x_dtype),
                                                   instance_backward_params(p, __func__), weight != 0),
               out, __func__);
  });
}

solops_status solops_batch_norm_training_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                            int32_t channels_last,
                                                            const solops_batch_norm_training_params* p,
                                                            int64_t* elements) {
  const char* function = __func__;
  return guarded(function, [&] {
    require_pointer(elements, function, "elements");
    *elements = solops::batch_norm_training_workspace_elements(to_shape(x_rank, x_shape, function),
                                                               to_params(p, function), channels_last != 0);
  });
}

solops_status solops_batch_norm_training(const solops_tensor* x, const solops_tensor* running_mean,
                                         const solops_tensor* running_var, const solops_tensor* weight,
                                         const solops_tensor* bias, const solops_tensor* y,
                                         const solops_tensor* save_mean, const solops_tensor* save_invstd,
                                         const solops_tensor* workspace, const solops_batch_norm_training_params* p,
                                         void* stream) {
  return batch_norm_training(__func__, solops::batch_norm_training, x, running_mean, running_var, weight, bias, y,
                             save_mean, save_invstd, workspace, p, stream);
}

solops_status solops_reference_batch_norm_training(const solops_tensor* x, const solops_tensor* running_mean,
                                                   const solops_tensor* running_var, const solops_tensor* weight,
                                                   const solops_tensor* bias, const solops_tensor* y,
                                                   const solops_tensor* save_mean, const solops_tensor* save_invstd,
                                                   const solops_batch_norm_training_params* p) {
  return batch_norm_training(__func__, solops::reference::batch_norm_training, x, running_mean, running_var, weight,
                             bias, y, save_mean, save_invstd, nullptr, p);
}

solops_status solops_batch_norm_training_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_batch_norm_training_params* p, solops_cost* out) {
  return cost(__func__, solops::batch_norm_training_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_batch_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                            int32_t channels_last, int64_t* elements) {
  const char* function = __func__;
  return guarded(function, [&] {
    require_pointer(elements, function, "elements");
    *elements =
        solops::batch_norm_backward_workspace_elements(to_shape(x_rank, x_shape, function), channels_last != 0);
  });
}

solops_status solops_batch_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                         const solops_tensor* weight, const solops_tensor* save_mean,
                                         const solops_tensor* save_invstd, const solops_tensor* grad_x,
                                         const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                         const solops_tensor* workspace, void* stream) {
  return batch_norm_backward(__func__, solops::batch_norm_backward, grad_out, x, weight, save_mean, save_invstd,
                             grad_x, grad_weight, grad_bias, workspace, stream);
}

solops_status solops_reference_batch_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                   const solops_tensor* weight, const solops_tensor* save_mean,
                                                   const solops_tensor* save_invstd, const solops_tensor* grad_x,
                                                   const solops_tensor* grad_weight, const solops_tensor* grad_bias) {
  return batch_norm_backward(__func__, solops::reference::batch_norm_backward, grad_out, x, weight, save_mean,
                             save_invstd, grad_x, grad_weight, grad_bias, nullptr);
}

solops_status solops_batch_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              solops_cost* out) {
  const char* function = __func__;
  return guarded(function, [&] {
    const auto dtype = static_cast<solops::DType>(x_dtype);
    write_cost(solops::batch_norm_backward_cost(to_shape(x_rank, x_shape, function), dtype), out, function);
  });
}

}  // extern "C"
