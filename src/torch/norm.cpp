// The normalization family's PyTorch binding: torch.ops.solops.<op> (and its reference, shape and
// cost targets, binding.hpp) for every norm. rms_norm and layer_norm take F.rms_norm's and
// F.layer_norm's arguments; autograd is registered in Python (python/solops/norm.py) on the
// *_with_stats forwards, whose backward runs rms_norm_backward and layer_norm_backward (group_norm_with_stats:
// group_norm_backward; instance_norm_with_stats, which may update running statistics in place, by an
// autograd.Function there).
#include <algorithm>
#include <climits>
#include <tuple>

#include "core/check.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"
#include "torch/binding.hpp"

namespace solops::torch_binding {
namespace {

// A workspace of `elements` f32 values for the device target (none where that is 0); the references
// need none.
template <Target kTarget>
std::optional<Tensor> workspace(const Call<kTarget>& call, int64_t elements) {
  if (kTarget != Target::device || elements == 0) return std::nullopt;
  return call.empty(std::vector<int64_t>{elements}, DType::f32);
}

[[noreturn]] void no_cost_model(std::string_view op, std::string_view measured) {
  detail::unsupported(op, "has no cost model of its own; the benchmark measures ", measured);
}

template <Target kTarget>
auto rms_norm(const Tensor& x, const Ints& normalized_shape, const std::optional<Tensor>& weight,
              std::optional<double> eps) {
  constexpr std::string_view kOp = "rms_norm";
  const RMSNorm p{normalized_shape, eps};
  if constexpr (kTarget == Target::cost) {
    return cost_list(rms_norm_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(rms_norm_output_shape(sizes(x), p), dtype(x, kOp, "x"));
    const TensorRef x_ref = view(x, kOp, "x"), y_ref = view(y, kOp, "output");
    const auto weight_ref = view(weight, kOp, "weight");
    call.run([&](cudaStream_t stream) { solops::rms_norm(x_ref, pointer(weight_ref), y_ref, p, stream); },
             [&] { reference::rms_norm(x_ref, pointer(weight_ref), y_ref, p); });
    return y;
  }
}

template <Target kTarget>
auto rms_norm_with_stats(const Tensor& x, const Ints& normalized_shape, const std::optional<Tensor>& weight,
                         std::optional<double> eps) {
  constexpr std::string_view kOp = "rms_norm_with_stats";
  const RMSNorm p{normalized_shape, eps};
  if constexpr (kTarget == Target::cost) {
    no_cost_model(kOp, "rms_norm");
    return std::vector<double>{};
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(rms_norm_output_shape(sizes(x), p), dtype(x, kOp, "x"));
    Tensor rstd = call.empty(norm_stats_shape(sizes(x), normalized_shape), DType::f32);
    const TensorRef x_ref = view(x, kOp, "x"), y_ref = view(y, kOp, "output"), rstd_ref = view(rstd, kOp, "rstd");
    const auto weight_ref = view(weight, kOp, "weight");
    call.run(
        [&](cudaStream_t stream) {
          solops::rms_norm_with_stats(x_ref, pointer(weight_ref), y_ref, rstd_ref, p, stream);
        },
        [&] { reference::rms_norm_with_stats(x_ref, pointer(weight_ref), y_ref, rstd_ref, p); });
    return std::tuple(y, rstd);
  }
}

template <Target kTarget>
auto layer_norm(const Tensor& x, const Ints& normalized_shape, const std::optional<Tensor>& weight,
                const std::optional<Tensor>& bias, double eps) {
  constexpr std::string_view kOp = "layer_norm";
  const LayerNorm p{normalized_shape, eps};
  if constexpr (kTarget == Target::cost) {
    return cost_list(layer_norm_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(layer_norm_output_shape(sizes(x), p), dtype(x, kOp, "x"));
    const TensorRef x_ref = view(x, kOp, "x"), y_ref = view(y, kOp, "output");
    const auto weight_ref = view(weight, kOp, "weight"), bias_ref = view(bias, kOp, "bias");
    call.run(
        [&](cudaStream_t stream) {
          solops::layer_norm(x_ref, pointer(weight_ref), pointer(bias_ref), y_ref, p, stream);
        },
        [&] { reference::layer_norm(x_ref, pointer(weight_ref), pointer(bias_ref), y_ref, p); });
    return y;
  }
}

template <Target kTarget>
auto layer_norm_with_stats(const Tensor& x, const Ints& normalized_shape, const std::optional<Tensor>& weight,
                           const std::optional<Tensor>& bias, double eps) {
  constexpr std::string_view kOp = "layer_norm_with_stats";
  const LayerNorm p{normalized_shape, eps};
  if constexpr (kTarget == Target::cost) {
    no_cost_model(kOp, "layer_norm");
    return std::vector<double>{};
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(layer_norm_output_shape(sizes(x), p), dtype(x, kOp, "x"));
    const std::vector<int64_t> stats_shape = norm_stats_shape(sizes(x), normalized_shape);
    Tensor mean = call.empty(stats_shape, DType::f32), rstd = call.empty(stats_shape, DType::f32);
    const TensorRef x_ref = view(x, kOp, "x"), y_ref = view(y, kOp, "output");
    const TensorRef mean_ref = view(mean, kOp, "mean"), rstd_ref = view(rstd, kOp, "rstd");
    const auto weight_ref = view(weight, kOp, "weight"), bias_ref = view(bias, kOp, "bias");
    call.run(
        [&](cudaStream_t stream) {
          solops::layer_norm_with_stats(x_ref, pointer(weight_ref), pointer(bias_ref), y_ref, mean_ref, rstd_ref, p,
                                        stream);
        },
        [&] {
          reference::layer_norm_with_stats(x_ref, pointer(weight_ref), pointer(bias_ref), y_ref, mean_ref, rstd_ref,
                                           p);
        });
    return std::tuple(y, mean, rstd);
  }
}

template <Target kTarget>
auto gemma_rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  constexpr std::string_view kOp = "gemma_rms_norm";
  const auto weight_shape = sizes(weight);
  const GemmaRMSNorm p{{weight_shape.begin(), weight_shape.end()}, eps};
  if constexpr (kTarget == Target::cost) {
    return cost_list(gemma_rms_norm_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(gemma_rms_norm_output_shape(sizes(x), p), dtype(x, kOp, "x"));
    const TensorRef x_ref = view(x, kOp, "x"), weight_ref = view(weight, kOp, "weight"),
                    y_ref = view(y, kOp, "output");
    call.run([&](cudaStream_t stream) { solops::gemma_rms_norm(x_ref, weight_ref, y_ref, p, stream); },
             [&] { reference::gemma_rms_norm(x_ref, weight_ref, y_ref, p); });
    return y;
  }
}

// The fused add-norms, out of place (new output and residual_out) or in place (x and residual).
template <Target kTarget, bool kInPlace, class Params>
auto fused_add_norm(std::string_view op, const Tensor& x, const Tensor& residual,
                    const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Params& p) {
  constexpr bool kRms = std::is_same_v<Params, FusedAddRMSNorm>;
  if constexpr (kTarget == Target::cost) {
    if constexpr (kRms) return cost_list(fused_add_rms_norm_cost(sizes(x), dtype(x, op, "x"), p));
    else return cost_list(fused_add_layer_norm_cost(sizes(x), dtype(x, op, "x"), p));
  } else {
    const Call<kTarget> call(x);
    std::vector<int64_t> shape;
    if constexpr (kRms) shape = fused_add_rms_norm_output_shape(sizes(x), p);
    else shape = fused_add_layer_norm_output_shape(sizes(x), p);
    Tensor output = kInPlace ? x : call.empty(shape, dtype(x, op, "x"));
    Tensor residual_out = kInPlace ? residual : call.empty(shape, dtype(x, op, "x"));
    const TensorRef x_ref = view(x, op, "x"), residual_ref = view(residual, op, "residual");
    const TensorRef output_ref = view(output, op, "output"), residual_out_ref = view(residual_out, op, "residual_out");
    const auto weight_ref = view(weight, op, "weight"), bias_ref = view(bias, op, "bias");
    call.run(
        [&](cudaStream_t stream) {
          if constexpr (kRms) {
            solops::fused_add_rms_norm(x_ref, residual_ref, pointer(weight_ref), output_ref, residual_out_ref, p,
                                       stream);
          } else {
            solops::fused_add_layer_norm(x_ref, residual_ref, pointer(weight_ref), pointer(bias_ref), output_ref,
                                         residual_out_ref, p, stream);
          }
        },
        [&] {
          if constexpr (kRms) {
            reference::fused_add_rms_norm(x_ref, residual_ref, pointer(weight_ref), output_ref, residual_out_ref, p);
          } else {
            reference::fused_add_layer_norm(x_ref, residual_ref, pointer(weight_ref), pointer(bias_ref), output_ref,
                                            residual_out_ref, p);
          }
        });
    if constexpr (!kInPlace) return std::tuple(output, residual_out);
  }
}

template <Target kTarget>
auto fused_add_rms_norm(const Tensor& x, const Tensor& residual, const std::optional<Tensor>& weight, double eps) {
  return fused_add_norm<kTarget, false>("fused_add_rms_norm", x, residual, weight, std::nullopt,
                                        FusedAddRMSNorm{eps});
}

template <Target kTarget>
auto fused_add_rms_norm_(const Tensor& x, const Tensor& residual, const std::optional<Tensor>& weight, double eps) {
  return fused_add_norm<kTarget, true>("fused_add_rms_norm", x, residual, weight, std::nullopt, FusedAddRMSNorm{eps});
}

template <Target kTarget>
auto fused_add_layer_norm(const Tensor& x, const Tensor& residual, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, double eps) {
  return fused_add_norm<kTarget, false>("fused_add_layer_norm", x, residual, weight, bias, FusedAddLayerNorm{eps});
}

template <Target kTarget>
auto fused_add_layer_norm_(const Tensor& x, const Tensor& residual, const std::optional<Tensor>& weight,
                           const std::optional<Tensor>& bias, double eps) {
  return fused_add_norm<kTarget, true>("fused_add_layer_norm", x, residual, weight, bias, FusedAddLayerNorm{eps});
}

template <Target kTarget>
auto ada_layer_norm(const Tensor& x, const Tensor& scale, const Tensor& shift, double eps) {
  constexpr std::string_view kOp = "ada_layer_norm";
  const AdaLayerNorm p{eps};
  if constexpr (kTarget == Target::cost) {
    return cost_list(ada_layer_norm_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(ada_layer_norm_output_shape(sizes(x), p), dtype(x, kOp, "x"));
    const TensorRef x_ref = view(x, kOp, "x"), scale_ref = view(scale, kOp, "scale"),
                    shift_ref = view(shift, kOp, "shift"), y_ref = view(y, kOp, "output");
    call.run([&](cudaStream_t stream) { solops::ada_layer_norm(x_ref, scale_ref, shift_ref, y_ref, p, stream); },
             [&] { reference::ada_layer_norm(x_ref, scale_ref, shift_ref, y_ref, p); });
    return y;
  }
}

// The quantizing norms: fp8 codes of x's shape and one f32 scale per row.
template <Target kTarget, class Params>
auto quant_norm(std::string_view op, const Tensor& x, const std::optional<Tensor>& weight,
                const std::optional<Tensor>& bias, const Params& p) {
  constexpr bool kRms = std::is_same_v<Params, RMSNormQuant>;
  if constexpr (kTarget == Target::cost) {
    if constexpr (kRms) return cost_list(rms_norm_quant_cost(sizes(x), dtype(x, op, "x"), p));
    else return cost_list(layer_norm_quant_cost(sizes(x), dtype(x, op, "x"), p));
  } else {
    const Call<kTarget> call(x);
    std::vector<int64_t> q_shape, scale_shape;
    if constexpr (kRms) {
      q_shape = rms_norm_quant_output_shape(sizes(x), p);
      scale_shape = rms_norm_quant_scale_shape(sizes(x), p);
    } else {
      q_shape = layer_norm_quant_output_shape(sizes(x), p);
      scale_shape = layer_norm_quant_scale_shape(sizes(x), p);
    }
    Tensor q = call.empty(q_shape, DType::fp8_e4m3), scale = call.empty(scale_shape, DType::f32);
    const TensorRef x_ref = view(x, op, "x"), q_ref = view(q, op, "q"), scale_ref = view(scale, op, "scale");
    const auto weight_ref = view(weight, op, "weight"), bias_ref = view(bias, op, "bias");
    call.run(
        [&](cudaStream_t stream) {
          if constexpr (kRms) solops::rms_norm_quant(x_ref, pointer(weight_ref), q_ref, scale_ref, p, stream);
          else solops::layer_norm_quant(x_ref, pointer(weight_ref), pointer(bias_ref), q_ref, scale_ref, p, stream);
        },
        [&] {
          if constexpr (kRms) reference::rms_norm_quant(x_ref, pointer(weight_ref), q_ref, scale_ref, p);
          else reference::layer_norm_quant(x_ref, pointer(weight_ref), pointer(bias_ref), q_ref, scale_ref, p);
        });
    return std::tuple(q, scale);
  }
}

template <Target kTarget>
auto rms_norm_quant(const Tensor& x, const Ints& normalized_shape, const std::optional<Tensor>& weight, double eps) {
  return quant_norm<kTarget>("rms_norm_quant", x, weight, std::nullopt, RMSNormQuant{normalized_shape, eps});
}

template <Target kTarget>
auto layer_norm_quant(const Tensor& x, const Ints& normalized_shape, const std::optional<Tensor>& weight,
                      const std::optional<Tensor>& bias, double eps) {
  return quant_norm<kTarget>("layer_norm_quant", x, weight, bias, LayerNormQuant{normalized_shape, eps});
}

template <Target kTarget>
auto qk_norm(const Tensor& q, const Tensor& k, const Ints& normalized_shape, const std::optional<Tensor>& q_weight,
             const std::optional<Tensor>& k_weight, double eps) {
  constexpr std::string_view kOp = "qk_norm";
  const QKNorm p{normalized_shape, eps};
  if constexpr (kTarget == Target::cost) {
    return cost_list(qk_norm_cost(sizes(q), sizes(k), dtype(q, kOp, "q"), p));
  } else {
    const Call<kTarget> call(q);
    Tensor q_out = call.empty(qk_norm_output_shape(sizes(q), p), dtype(q, kOp, "q"));
    Tensor k_out = call.empty(qk_norm_output_shape(sizes(k), p), dtype(k, kOp, "k"));
    const TensorRef q_ref = view(q, kOp, "q"), k_ref = view(k, kOp, "k");
    const TensorRef q_out_ref = view(q_out, kOp, "q_out"), k_out_ref = view(k_out, kOp, "k_out");
    const auto q_weight_ref = view(q_weight, kOp, "q_weight"), k_weight_ref = view(k_weight, kOp, "k_weight");
    call.run(
        [&](cudaStream_t stream) {
          solops::qk_norm(q_ref, k_ref, pointer(q_weight_ref), pointer(k_weight_ref), q_out_ref, k_out_ref, p,
                          stream);
        },
        [&] {
          reference::qk_norm(q_ref, k_ref, pointer(q_weight_ref), pointer(k_weight_ref), q_out_ref, k_out_ref, p);
        });
    return std::tuple(q_out, k_out);
  }
}

template <Target kTarget>
auto group_rms_norm(const Tensor& x, const Ints& normalized_shape, const std::optional<Tensor>& weight, double eps) {
  constexpr std::string_view kOp = "group_rms_norm";
  const GroupRMSNorm p{normalized_shape, eps};
  if constexpr (kTarget == Target::cost) {
    return cost_list(group_rms_norm_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(group_rms_norm_output_shape(sizes(x), p), dtype(x, kOp, "x"));
    Tensor rstd = call.empty(norm_stats_shape(sizes(x), normalized_shape), DType::f32);
    const TensorRef x_ref = view(x, kOp, "x"), y_ref = view(y, kOp, "output"), rstd_ref = view(rstd, kOp, "rstd");
    const auto weight_ref = view(weight, kOp, "weight");
    call.run(
        [&](cudaStream_t stream) { solops::group_rms_norm(x_ref, pointer(weight_ref), y_ref, rstd_ref, p, stream); },
        [&] { reference::group_rms_norm(x_ref, pointer(weight_ref), y_ref, rstd_ref, p); });
    return std::tuple(y, rstd);
  }
}

template <Target kTarget>
auto vector_norm(const Tensor& x, int64_t ord, const Ints& dim, bool keepdim) {
  constexpr std::string_view kOp = "vector_norm";
  // Out of int's range is as unsupported as any ord but 1 and 2: the rule says so.
  const VectorNorm p{static_cast<int>(std::clamp<int64_t>(ord, INT_MIN, INT_MAX)), dim, keepdim};
  if constexpr (kTarget == Target::cost) {
    return cost_list(vector_norm_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(vector_norm_output_shape(sizes(x), p), dtype(x, kOp, "x"));
    const auto scratch = workspace(call, vector_norm_workspace_elements(sizes(x), p));
    const TensorRef x_ref = view(x, kOp, "x"), y_ref = view(y, kOp, "output");
    const auto workspace_ref = view(scratch, kOp, "workspace");
    call.run([&](cudaStream_t stream) { solops::vector_norm(x_ref, y_ref, pointer(workspace_ref), p, stream); },
             [&] { reference::vector_norm(x_ref, y_ref, p); });
    return y;
  }
}

template <Target kTarget>
auto weight_norm(const Tensor& v, const Tensor& g, int64_t dim) {
  constexpr std::string_view kOp = "weight_norm";
  const WeightNorm p{dim};
  if constexpr (kTarget == Target::cost) {
    return cost_list(weight_norm_cost(sizes(v), dtype(v, kOp, "v"), p));
  } else {
    const Call<kTarget> call(v);
    Tensor norm = call.empty(weight_norm_norm_shape(sizes(v), p), DType::f32);
    Tensor y = call.empty(sizes(v), dtype(v, kOp, "v"));
    const auto scratch = workspace(call, weight_norm_workspace_elements(sizes(v), p));
    const TensorRef v_ref = view(v, kOp, "v"), g_ref = view(g, kOp, "g"), y_ref = view(y, kOp, "output"),
                    norm_ref = view(norm, kOp, "norm");
    const auto workspace_ref = view(scratch, kOp, "workspace");
    call.run(
        [&](cudaStream_t stream) {
          solops::weight_norm(v_ref, g_ref, y_ref, norm_ref, pointer(workspace_ref), p, stream);
        },
        [&] { reference::weight_norm(v_ref, g_ref, y_ref, norm_ref, p); });
    return std::tuple(y, norm);
  }
}

template <Target kTarget>
auto spectral_norm_power_iter(const Tensor& x, const Tensor& u, const Tensor& v, int64_t n_iter, double eps) {
  constexpr std::string_view kOp = "spectral_norm_power_iter";
  // normalized_shape is x's last dim (the spec's (I,)); the rule itself checks x's rank.
  const auto x_shape = sizes(x);
  const SpectralNormPowerIter p{{x_shape.end() - std::min<size_t>(x_shape.size(), 1), x_shape.end()}, n_iter, eps};
  if constexpr (kTarget == Target::cost) {
    return cost_list(spectral_norm_power_iter_cost(x_shape, dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    const int64_t elements = spectral_norm_power_iter_workspace_elements(x_shape, p);
    Tensor sigma = call.empty(std::vector<int64_t>{}, DType::f32);
    Tensor u_out = call.empty(x_shape.first(1), DType::f32), v_out = call.empty(x_shape.last(1), DType::f32);
    const auto scratch = workspace(call, elements);
    const TensorRef x_ref = view(x, kOp, "x"), u_ref = view(u, kOp, "u"), v_ref = view(v, kOp, "v");
    const TensorRef sigma_ref = view(sigma, kOp, "sigma"), u_out_ref = view(u_out, kOp, "u_out"),
                    v_out_ref = view(v_out, kOp, "v_out");
    const auto workspace_ref = view(scratch, kOp, "workspace");
    call.run(
        [&](cudaStream_t stream) {
          solops::spectral_norm_power_iter(x_ref, u_ref, v_ref, sigma_ref, u_out_ref, v_out_ref, pointer(workspace_ref),
                                           p, stream);
        },
        [&] { reference::spectral_norm_power_iter(x_ref, u_ref, v_ref, sigma_ref, u_out_ref, v_out_ref, p); });
    return std::tuple(sigma, u_out, v_out);
  }
}

// A BatchNorm, GroupNorm or InstanceNorm output of x's dtype in x's memory format (channels_last where
// x is, and not also contiguous), as PyTorch's norms give it; the ops' validation asks the same of it.
template <Target kTarget>
Tensor like_x(const Call<kTarget>& call, const TensorRef& x, std::span<const int64_t> shape) {
  return detail::is_strictly_channels_last(x) ? call.empty_channels_last(shape, x.dtype) : call.empty(shape, x.dtype);
}

template <Target kTarget>
auto batch_norm_inference(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          const Tensor& running_mean, const Tensor& running_var, double eps) {
  constexpr std::string_view kOp = "batch_norm_inference";
  const BatchNormInference p{eps};
  if constexpr (kTarget == Target::cost) {
    return cost_list(batch_norm_inference_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    const TensorRef x_ref = view(x, kOp, "x");
    Tensor y = like_x(call, x_ref, batch_norm_inference_output_shape(sizes(x), p));
    const TensorRef y_ref = view(y, kOp, "output");
    const TensorRef mean_ref = view(running_mean, kOp, "running_mean"), var_ref = view(running_var, kOp, "running_var");
    const auto weight_ref = view(weight, kOp, "weight"), bias_ref = view(bias, kOp, "bias");
    call.run(
        [&](cudaStream_t stream) {
          solops::batch_norm_inference(x_ref, pointer(weight_ref), pointer(bias_ref), mean_ref, var_ref, y_ref, p,
                                       stream);
        },
        [&] {
          reference::batch_norm_inference(x_ref, pointer(weight_ref), pointer(bias_ref), mean_ref, var_ref, y_ref, p);
        });
    return y;
  }
}

// BatchNormFwd in training mode: y, and the saved statistics where kWithStats (batch_norm_training_with_stats,
// the op autograd is registered on; batch_norm_training returns y alone). The running statistics, where
// given, are updated in place (declared in the schema: Tensor(a!)?).
template <Target kTarget, bool kWithStats>
auto batch_norm_training(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                         const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                         double momentum, double eps) {
  constexpr std::string_view kOp = kWithStats ? "batch_norm_training_with_stats" : "batch_norm_training";
  const BatchNormTraining p{momentum, eps};
  if constexpr (kTarget == Target::cost) {
    if constexpr (kWithStats) {
      no_cost_model(kOp, "batch_norm_training");
      return std::vector<double>{};
    } else {
      return cost_list(batch_norm_training_cost(sizes(x), dtype(x, kOp, "x"), p));
    }
  } else {
    const Call<kTarget> call(x);
    const TensorRef x_ref = view(x, kOp, "x");
    // Checks the shape rule.
    const int64_t elements =
        batch_norm_training_workspace_elements(sizes(x), p, detail::is_strictly_channels_last(x_ref));
    Tensor y = like_x(call, x_ref, sizes(x));
    Tensor save_mean = call.empty(sizes(x).subspan(1, 1), DType::f32);
    Tensor save_invstd = call.empty(sizes(x).subspan(1, 1), DType::f32);
    const auto scratch = workspace(call, elements);
    const TensorRef y_ref = view(y, kOp, "output");
    const TensorRef save_mean_ref = view(save_mean, kOp, "save_mean"),
                    save_invstd_ref = view(save_invstd, kOp, "save_invstd");
    const auto weight_ref = view(weight, kOp, "weight"), bias_ref = view(bias, kOp, "bias");
    const auto mean_ref = view(running_mean, kOp, "running_mean"), var_ref = view(running_var, kOp, "running_var");
    const auto workspace_ref = view(scratch, kOp, "workspace");
    call.run(
        [&](cudaStream_t stream) {
          solops::batch_norm_training(x_ref, pointer(mean_ref), pointer(var_ref), pointer(weight_ref),
                                      pointer(bias_ref), y_ref, save_mean_ref, save_invstd_ref,
                                      pointer(workspace_ref), p, stream);
        },
        [&] {
          reference::batch_norm_training(x_ref, pointer(mean_ref), pointer(var_ref), pointer(weight_ref),
                                         pointer(bias_ref), y_ref, save_mean_ref, save_invstd_ref, p);
        });
    if constexpr (kWithStats) return std::tuple(y, save_mean, save_invstd);
    else return y;
  }
}

// BatchNormBwd: (grad_x, grad_weight, grad_bias), the parameters' gradients in weight's dtype (f32
// without a weight), as PyTorch gives them.
template <Target kTarget>
auto batch_norm_backward(const Tensor& grad_out, const Tensor& x, const std::optional<Tensor>& weight,
                         const Tensor& save_mean, const Tensor& save_invstd) {
  constexpr std::string_view kOp = "batch_norm_backward";
  if constexpr (kTarget == Target::cost) {
    return cost_list(batch_norm_backward_cost(sizes(x), dtype(x, kOp, "x")));
  } else {
    const Call<kTarget> call(x);
    const TensorRef x_ref = view(x, kOp, "x");
    // Checks the shape rule.
    const int64_t elements = batch_norm_backward_workspace_elements(sizes(x), detail::is_strictly_channels_last(x_ref));
    const DType parameter_dtype = weight ? dtype(*weight, kOp, "weight") : DType::f32;
    Tensor grad_x = like_x(call, x_ref, sizes(x));
    Tensor grad_weight = call.empty(sizes(x).subspan(1, 1), parameter_dtype);
    Tensor grad_bias = call.empty(sizes(x).subspan(1, 1), parameter_dtype);
    const auto scratch = workspace(call, elements);
    const TensorRef grad_out_ref = view(grad_out, kOp, "grad_out"), save_mean_ref = view(save_mean, kOp, "save_mean"),
                    save_invstd_ref = view(save_invstd, kOp, "save_invstd"), grad_x_ref = view(grad_x, kOp, "grad_x"),
                    grad_weight_ref = view(grad_weight, kOp, "grad_weight"),
                    grad_bias_ref = view(grad_bias, kOp, "grad_bias");
    const auto weight_ref = view(weight, kOp, "weight"), workspace_ref = view(scratch, kOp, "workspace");
    call.run(
        [&](cudaStream_t stream) {
          solops::batch_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), save_mean_ref, save_invstd_ref,
                                      grad_x_ref, &grad_weight_ref, &grad_bias_ref, pointer(workspace_ref), stream);
        },
        [&] {
          reference::batch_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), save_mean_ref, save_invstd_ref,
                                         grad_x_ref, &grad_weight_ref, &grad_bias_ref);
        });
    return std::tuple(grad_x, grad_weight, grad_bias);
  }
}

template <Target kTarget>
auto rms_norm_backward(const Tensor& grad_out, const Tensor& x, const Ints& normalized_shape, const Tensor& rstd,
                       const std::optional<Tensor>& weight) {
  constexpr std::string_view kOp = "rms_norm_backward";
  const RMSNormBackward p{normalized_shape};
  if constexpr (kTarget == Target::cost) {
    return cost_list(rms_norm_backward_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    const int64_t elements = rms_norm_backward_workspace_elements(sizes(x), p);
    Tensor grad_x = call.empty(sizes(x), dtype(x, kOp, "x"));
    Tensor grad_weight = call.empty(normalized_shape, dtype(x, kOp, "x"));
    const auto scratch = workspace(call, elements);
    const TensorRef grad_out_ref = view(grad_out, kOp, "grad_out"), x_ref = view(x, kOp, "x"),
                    rstd_ref = view(rstd, kOp, "rstd"), grad_x_ref = view(grad_x, kOp, "grad_x"),
                    grad_weight_ref = view(grad_weight, kOp, "grad_weight");
    const auto weight_ref = view(weight, kOp, "weight"), workspace_ref = view(scratch, kOp, "workspace");
    call.run(
        [&](cudaStream_t stream) {
          solops::rms_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), rstd_ref, grad_x_ref, &grad_weight_ref,
                                    pointer(workspace_ref), p, stream);
        },
        [&] {
          reference::rms_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), rstd_ref, grad_x_ref,
                                       &grad_weight_ref, p);
        });
    return std::tuple(grad_x, grad_weight);
  }
}

template <Target kTarget>
auto layer_norm_backward(const Tensor& grad_out, const Tensor& x, const Ints& normalized_shape, const Tensor& mean,
                         const Tensor& rstd, const std::optional<Tensor>& weight) {
  constexpr std::string_view kOp = "layer_norm_backward";
  const LayerNormBackward p{normalized_shape};
  if constexpr (kTarget == Target::cost) {
    return cost_list(layer_norm_backward_cost(sizes(x), dtype(x, kOp, "x"), p));
  } else {
    const Call<kTarget> call(x);
    const int64_t elements = layer_norm_backward_workspace_elements(sizes(x), p);
    Tensor grad_x = call.empty(sizes(x), dtype(x, kOp, "x"));
    Tensor grad_weight = call.empty(normalized_shape, dtype(x, kOp, "x"));
    Tensor grad_bias = call.empty(normalized_shape, dtype(x, kOp, "x"));
    const auto scratch = workspace(call, elements);
    const TensorRef grad_out_ref = view(grad_out, kOp, "grad_out"), x_ref = view(x, kOp, "x"),
                    mean_ref = view(mean, kOp, "mean"), rstd_ref = view(rstd, kOp, "rstd"),
                    grad_x_ref = view(grad_x, kOp, "grad_x"), grad_weight_ref = view(grad_weight, kOp, "grad_weight"),
                    grad_bias_ref = view(grad_bias, kOp, "grad_bias");
    const auto weight_ref = view(weight, kOp, "weight"), workspace_ref = view(scratch, kOp, "workspace");
    call.run(
        [&](cudaStream_t stream) {
          solops::layer_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), mean_ref, rstd_ref, grad_x_ref,
                                      &grad_weight_ref, &grad_bias_ref, pointer(workspace_ref), p, stream);
        },
        [&] {
          reference::layer_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), mean_ref, rstd_ref, grad_x_ref,
                                         &grad_weight_ref, &grad_bias_ref, p);
        });
    return std::tuple(grad_x, grad_weight, grad_bias);
  }
}

template <Target kTarget>
auto group_norm_forward(std::string_view op, bool with_stats, const Tensor& x, int64_t num_groups,
                        const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps) {
  const GroupNorm p{num_groups, eps};
  const Call<kTarget> call(x);
  const TensorRef x_ref = view(x, op, "x");  // x's dtype is the first check
  Tensor y = like_x(call, x_ref, group_norm_output_shape(sizes(x), p));
  const std::vector<int64_t> stats_shape = group_norm_stats_shape(sizes(x), p);
  // The plain forward writes no statistics.
  std::optional<Tensor> mean, rstd;
  if (with_stats) {
    mean = call.empty(stats_shape, DType::f32);
    rstd = call.empty(stats_shape, DType::f32);
  }
  const TensorRef y_ref = view(y, op, "output");
  const auto mean_ref = view(mean, op, "mean"), rstd_ref = view(rstd, op, "rstd");
  const auto weight_ref = view(weight, op, "weight"), bias_ref = view(bias, op, "bias");
  call.run(
      [&](cudaStream_t stream) {
        if (with_stats) {
          solops::group_norm_with_stats(x_ref, pointer(weight_ref), pointer(bias_ref), y_ref, *mean_ref, *rstd_ref, p,
                                        stream);
        } else {
          solops::group_norm(x_ref, pointer(weight_ref), pointer(bias_ref), y_ref, p, stream);
        }
      },
      [&] {
        reference::group_norm(x_ref, pointer(weight_ref), pointer(bias_ref), y_ref, pointer(mean_ref),
                              pointer(rstd_ref), p);
      });
  return std::tuple(y, mean, rstd);
}

template <Target kTarget>
auto group_norm(const Tensor& x, int64_t num_groups, const std::optional<Tensor>& weight,
                const std::optional<Tensor>& bias, double eps) {
  constexpr std::string_view kOp = "group_norm";
  if constexpr (kTarget == Target::cost) {
    return cost_list(group_norm_cost(sizes(x), dtype(x, kOp, "x"), GroupNorm{num_groups, eps},
                                     weight.has_value() || bias.has_value()));
  } else {
    return std::get<0>(group_norm_forward<kTarget>(kOp, false, x, num_groups, weight, bias, eps));
  }
}

template <Target kTarget>
auto group_norm_with_stats(const Tensor& x, int64_t num_groups, const std::optional<Tensor>& weight,
                           const std::optional<Tensor>& bias, double eps) {
  constexpr std::string_view kOp = "group_norm_with_stats";
  if constexpr (kTarget == Target::cost) {
    no_cost_model(kOp, "group_norm");
    return std::vector<double>{};
  } else {
    const auto [y, mean, rstd] = group_norm_forward<kTarget>(kOp, true, x, num_groups, weight, bias, eps);
    return std::tuple(y, *mean, *rstd);
  }
}

template <Target kTarget>
auto instance_norm_forward(std::string_view op, bool with_stats, const Tensor& x,
                           const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                           const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                           bool use_input_stats, double momentum, double eps) {
  const InstanceNorm p{use_input_stats, momentum, eps};
  const Call<kTarget> call(x);
  const TensorRef x_ref = view(x, op, "x");  // x's dtype is the first check
  Tensor y = like_x(call, x_ref, instance_norm_output_shape(sizes(x), p));
  const std::vector<int64_t> stats_shape = instance_norm_stats_shape(sizes(x), p);
  // The plain forward writes no statistics.
  std::optional<Tensor> mean, rstd;
  if (with_stats) {
    mean = call.empty(stats_shape, DType::f32);
    rstd = call.empty(stats_shape, DType::f32);
  }
  const bool running = running_mean.has_value() || running_var.has_value();
  const auto scratch = workspace(call, instance_norm_workspace_elements(sizes(x), p, running));
  const TensorRef y_ref = view(y, op, "output");
  const auto mean_ref = view(mean, op, "mean"), rstd_ref = view(rstd, op, "rstd");
  const auto running_mean_ref = view(running_mean, op, "running_mean");
  const auto running_var_ref = view(running_var, op, "running_var");
  const auto weight_ref = view(weight, op, "weight"), bias_ref = view(bias, op, "bias");
  const auto workspace_ref = view(scratch, op, "workspace");
  call.run(
      [&](cudaStream_t stream) {
        if (with_stats) {
          solops::instance_norm_with_stats(x_ref, pointer(running_mean_ref), pointer(running_var_ref),
                                           pointer(weight_ref), pointer(bias_ref), y_ref, *mean_ref, *rstd_ref,
                                           pointer(workspace_ref), p, stream);
        } else {
          solops::instance_norm(x_ref, pointer(running_mean_ref), pointer(running_var_ref), pointer(weight_ref),
                                pointer(bias_ref), y_ref, pointer(workspace_ref), p, stream);
        }
      },
      [&] {
        reference::instance_norm(x_ref, pointer(running_mean_ref), pointer(running_var_ref), pointer(weight_ref),
                                 pointer(bias_ref), y_ref, pointer(mean_ref), pointer(rstd_ref), p);
      });
  return std::tuple(y, mean, rstd);
}

template <Target kTarget>
auto instance_norm(const Tensor& x, const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                   const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, bool use_input_stats,
                   double momentum, double eps) {
  constexpr std::string_view kOp = "instance_norm";
  if constexpr (kTarget == Target::cost) {
    return cost_list(instance_norm_cost(sizes(x), dtype(x, kOp, "x"), InstanceNorm{use_input_stats, momentum, eps},
                                        weight.has_value() || bias.has_value(),
                                        running_mean.has_value() || running_var.has_value()));
  } else {
    return std::get<0>(instance_norm_forward<kTarget>(kOp, false, x, running_mean, running_var, weight, bias,
                                                      use_input_stats, momentum, eps));
  }
}

template <Target kTarget>
auto instance_norm_with_stats(const Tensor& x, const std::optional<Tensor>& running_mean,
                              const std::optional<Tensor>& running_var, const std::optional<Tensor>& weight,
                              const std::optional<Tensor>& bias, bool use_input_stats, double momentum, double eps) {
  constexpr std::string_view kOp = "instance_norm_with_stats";
  if constexpr (kTarget == Target::cost) {
    no_cost_model(kOp, "instance_norm");
    return std::vector<double>{};
  } else {
    const auto [y, mean, rstd] = instance_norm_forward<kTarget>(kOp, true, x, running_mean, running_var, weight, bias,
                                                                use_input_stats, momentum, eps);
    return std::tuple(y, *mean, *rstd);
  }
}

// The backward of GroupNorm (kGroups) or InstanceNorm: grad_x, and the parameter gradients that
// output_mask asks for (ATen's mask of [grad_weight, grad_bias]; None where not asked). With neither
// asked the device runs the grad_x kernel alone: no workspace, no kernel adding the channels' sums.
template <Target kTarget, class Params>
auto spatial_norm_backward(std::string_view op, const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                           const Tensor& rstd, const std::optional<Tensor>& weight,
                           const std::vector<bool>& output_mask, const Params& p) {
  constexpr bool kGroups = std::is_same_v<Params, GroupNormBackward>;
  detail::require(output_mask.size() == 2, op, "output_mask must have 2 elements ([grad_weight, grad_bias]), got ",
                  output_mask.size());
  if constexpr (kTarget == Target::cost) {
    // The spec's formula, which counts both parameter gradients' writes whatever the mask (2 * C
    // elements beside 3 * numel).
    const DType x_dtype = dtype(x, op, "x");
    if constexpr (kGroups) return cost_list(group_norm_backward_cost(sizes(x), x_dtype, p, weight.has_value()));
    else return cost_list(instance_norm_backward_cost(sizes(x), x_dtype, p, weight.has_value()));
  } else {
    const Call<kTarget> call(x);
    const DType x_dtype = dtype(x, op, "x");
    const bool parameter_gradients = output_mask[0] || output_mask[1];
    int64_t elements = 0;
    if constexpr (kGroups) elements = group_norm_backward_workspace_elements(sizes(x), p, parameter_gradients);
    else elements = instance_norm_backward_workspace_elements(sizes(x), p, parameter_gradients);
    const TensorRef x_ref = view(x, op, "x");
    Tensor grad_x = like_x(call, x_ref, sizes(x));
    std::optional<Tensor> grad_weight, grad_bias;
    if (output_mask[0]) grad_weight = call.empty(sizes(x).subspan(1, 1), x_dtype);
    if (output_mask[1]) grad_bias = call.empty(sizes(x).subspan(1, 1), x_dtype);
    const auto scratch = workspace(call, elements);
    const TensorRef grad_out_ref = view(grad_out, op, "grad_out"), mean_ref = view(mean, op, "mean"),
                    rstd_ref = view(rstd, op, "rstd"), grad_x_ref = view(grad_x, op, "grad_x");
    const auto weight_ref = view(weight, op, "weight"), workspace_ref = view(scratch, op, "workspace"),
               grad_weight_ref = view(grad_weight, op, "grad_weight"), grad_bias_ref = view(grad_bias, op, "grad_bias");
    call.run(
        [&](cudaStream_t stream) {
          if constexpr (kGroups) {
            solops::group_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), mean_ref, rstd_ref, grad_x_ref,
                                        pointer(grad_weight_ref), pointer(grad_bias_ref), pointer(workspace_ref), p,
                                        stream);
          } else {
            solops::instance_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), mean_ref, rstd_ref, grad_x_ref,
                                           pointer(grad_weight_ref), pointer(grad_bias_ref), pointer(workspace_ref),
                                           p, stream);
          }
        },
        [&] {
          if constexpr (kGroups) {
            reference::group_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), mean_ref, rstd_ref, grad_x_ref,
                                           pointer(grad_weight_ref), pointer(grad_bias_ref), p);
          } else {
            reference::instance_norm_backward(grad_out_ref, x_ref, pointer(weight_ref), mean_ref, rstd_ref,
                                              grad_x_ref, pointer(grad_weight_ref), pointer(grad_bias_ref), p);
          }
        });
    return std::tuple(grad_x, grad_weight, grad_bias);
  }
}

template <Target kTarget>
auto group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t num_groups, const Tensor& mean,
                         const Tensor& rstd, const std::optional<Tensor>& weight,
                         const std::vector<bool>& output_mask) {
  return spatial_norm_backward<kTarget>("group_norm_backward", grad_out, x, mean, rstd, weight, output_mask,
                                        GroupNormBackward{num_groups});
}

template <Target kTarget>
auto instance_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                            const std::optional<Tensor>& weight, bool use_input_stats,
                            const std::vector<bool>& output_mask) {
  return spatial_norm_backward<kTarget>("instance_norm_backward", grad_out, x, mean, rstd, weight, output_mask,
                                        InstanceNormBackward{use_input_stats});
}

constexpr const char* kRmsNormArguments = "(Tensor x, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None)";
constexpr const char* kLayerNormArguments =
    "(Tensor x, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)";
constexpr const char* kFusedAddRmsNormArguments =
    "(Tensor x, Tensor residual, Tensor? weight=None, float eps=1e-06)";
constexpr const char* kFusedAddLayerNormArguments =
    "(Tensor x, Tensor residual, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)";
constexpr const char* kGroupNormArguments =
    "(Tensor x, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)";
constexpr const char* kInstanceNormArguments =
    "(Tensor x, Tensor(a!)? running_mean=None, Tensor(b!)? running_var=None, Tensor? weight=None, Tensor? bias=None, "
    "bool use_input_stats=True, float momentum=0.1, float eps=1e-05)";
constexpr const char* kBatchNormTrainingArguments =
    "(Tensor x, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, Tensor(b!)? running_var, float momentum=0.1, "
    "float eps=1e-05)";

template <Target kTarget>
constexpr Op kNormOps[] = {
    {"rms_norm", kRmsNormArguments, "Tensor", TORCH_BOX(&rms_norm<kTarget>)},
    {"rms_norm_with_stats", kRmsNormArguments, "(Tensor, Tensor)", TORCH_BOX(&rms_norm_with_stats<kTarget>)},
    {"layer_norm", kLayerNormArguments, "Tensor", TORCH_BOX(&layer_norm<kTarget>)},
    {"layer_norm_with_stats", kLayerNormArguments, "(Tensor, Tensor, Tensor)",
     TORCH_BOX(&layer_norm_with_stats<kTarget>)},
    {"gemma_rms_norm", "(Tensor x, Tensor weight, float eps=1e-06)", "Tensor", TORCH_BOX(&gemma_rms_norm<kTarget>)},
    {"fused_add_rms_norm", kFusedAddRmsNormArguments, "(Tensor, Tensor)", TORCH_BOX(&fused_add_rms_norm<kTarget>)},
    {"fused_add_rms_norm_", "(Tensor(a!) x, Tensor(b!) residual, Tensor? weight=None, float eps=1e-06)", "()",
     TORCH_BOX(&fused_add_rms_norm_<kTarget>)},
    {"fused_add_layer_norm", kFusedAddLayerNormArguments, "(Tensor, Tensor)",
     TORCH_BOX(&fused_add_layer_norm<kTarget>)},
    {"fused_add_layer_norm_",
     "(Tensor(a!) x, Tensor(b!) residual, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)", "()",
     TORCH_BOX(&fused_add_layer_norm_<kTarget>)},
    {"ada_layer_norm", "(Tensor x, Tensor scale, Tensor shift, float eps=1e-05)", "Tensor",
     TORCH_BOX(&ada_layer_norm<kTarget>)},
    {"rms_norm_quant", "(Tensor x, SymInt[] normalized_shape, Tensor? weight=None, float eps=1e-06)",
     "(Tensor, Tensor)", TORCH_BOX(&rms_norm_quant<kTarget>)},
    {"layer_norm_quant", kLayerNormArguments, "(Tensor, Tensor)", TORCH_BOX(&layer_norm_quant<kTarget>)},
    {"qk_norm",
     "(Tensor q, Tensor k, SymInt[] normalized_shape, Tensor? q_weight=None, Tensor? k_weight=None, float eps=1e-06)",
     "(Tensor, Tensor)", TORCH_BOX(&qk_norm<kTarget>)},
    {"group_rms_norm", "(Tensor x, SymInt[] normalized_shape, Tensor? weight=None, float eps=1e-06)",
     "(Tensor, Tensor)", TORCH_BOX(&group_rms_norm<kTarget>)},
    {"vector_norm", "(Tensor x, int ord=2, int[] dim=[], bool keepdim=False)", "Tensor",
     TORCH_BOX(&vector_norm<kTarget>)},
    {"weight_norm", "(Tensor v, Tensor g, int dim=0)", "(Tensor, Tensor)", TORCH_BOX(&weight_norm<kTarget>)},
    {"spectral_norm_power_iter", "(Tensor x, Tensor u, Tensor v, int n_iter=1, float eps=1e-12)",
     "(Tensor, Tensor, Tensor)", TORCH_BOX(&spectral_norm_power_iter<kTarget>)},
    // ATen's order (_native_batch_norm_legit_no_training), which is the spec's; solops.batch_norm_inference
    // takes F.batch_norm's.
    {"batch_norm_inference",
     "(Tensor x, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float eps=1e-05)", "Tensor",
     TORCH_BOX(&batch_norm_inference<kTarget>)},
    // _native_batch_norm_legit's order and names (x for its input), without `training`.
    {"batch_norm_training", kBatchNormTrainingArguments, "Tensor", TORCH_BOX((&batch_norm_training<kTarget, false>))},
    {"batch_norm_training_with_stats", kBatchNormTrainingArguments, "(Tensor, Tensor, Tensor)",
     TORCH_BOX((&batch_norm_training<kTarget, true>))},
    {"batch_norm_backward", "(Tensor grad_out, Tensor x, Tensor? weight, Tensor save_mean, Tensor save_invstd)",
     "(Tensor, Tensor, Tensor)", TORCH_BOX(&batch_norm_backward<kTarget>)},
    {"rms_norm_backward", "(Tensor grad_out, Tensor x, SymInt[] normalized_shape, Tensor rstd, Tensor? weight=None)",
     "(Tensor, Tensor)", TORCH_BOX(&rms_norm_backward<kTarget>)},
    {"layer_norm_backward",
     "(Tensor grad_out, Tensor x, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight=None)",
     "(Tensor, Tensor, Tensor)", TORCH_BOX(&layer_norm_backward<kTarget>)},
    // GroupNorm and InstanceNorm: F.group_norm's and F.instance_norm's arguments (instance_norm updates
    // the running statistics in place with use_input_stats, as PyTorch).
    {"group_norm", kGroupNormArguments, "Tensor", TORCH_BOX(&group_norm<kTarget>)},
    {"group_norm_with_stats", kGroupNormArguments, "(Tensor, Tensor, Tensor)",
     TORCH_BOX(&group_norm_with_stats<kTarget>)},
    // The backward ops' output_mask: ATen's mask of [grad_weight, grad_bias] (grad_x is always computed).
    {"group_norm_backward",
     "(Tensor grad_out, Tensor x, int num_groups, Tensor mean, Tensor rstd, Tensor? weight, bool[2] output_mask)",
     "(Tensor, Tensor?, Tensor?)", TORCH_BOX(&group_norm_backward<kTarget>)},
    {"instance_norm", kInstanceNormArguments, "Tensor", TORCH_BOX(&instance_norm<kTarget>)},
    {"instance_norm_with_stats", kInstanceNormArguments, "(Tensor, Tensor, Tensor)",
     TORCH_BOX(&instance_norm_with_stats<kTarget>)},
    {"instance_norm_backward",
     "(Tensor grad_out, Tensor x, Tensor mean, Tensor rstd, Tensor? weight, bool use_input_stats, "
     "bool[2] output_mask)",
     "(Tensor, Tensor?, Tensor?)", TORCH_BOX(&instance_norm_backward<kTarget>)},
};

}  // namespace
}  // namespace solops::torch_binding

SOLOPS_REGISTER_FAMILY(solops::torch_binding::kNormOps)
