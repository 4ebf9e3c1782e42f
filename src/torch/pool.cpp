// The pooling family's PyTorch binding: torch.ops.solops.<op> (and its reference, shape and cost
// targets, binding.hpp) for every pool. Schemas follow ATen's where ATen has the op, so an int
// kernel_size broadcasts over the axes and an empty stride means the kernel's.
#include <array>
#include <tuple>

#include "core/check.hpp"
#include "solops/pool.hpp"
#include "solops/reference.hpp"
#include "torch/binding.hpp"

namespace solops::torch_binding {
namespace {

// A window parameter of `axes` axes: one value for every axis, or one per axis.
template <size_t kAxes>
std::array<int64_t, kAxes> per_axis(std::string_view op, std::string_view name, const Ints& values) {
  detail::require(values.size() == 1 || values.size() == kAxes, op, name, " must be an int or a list of ", kAxes,
                  ", got ", values.size(), " values");
  std::array<int64_t, kAxes> axes;
  for (size_t a = 0; a < kAxes; ++a) axes[a] = values[values.size() == 1 ? 0 : a];
  return axes;
}

Pool1d window1d(std::string_view op, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                const Ints& dilation, bool ceil_mode, bool count_include_pad) {
  Pool1d p;
  p.kernel_size = per_axis<1>(op, "kernel_size", kernel_size)[0];
  if (!stride.empty()) p.stride = per_axis<1>(op, "stride", stride)[0];
  p.padding = per_axis<1>(op, "padding", padding)[0];
  p.dilation = per_axis<1>(op, "dilation", dilation)[0];
  p.ceil_mode = ceil_mode;
  p.count_include_pad = count_include_pad;
  return p;
}

// Pool2d or Pool3d.
template <class Pool>
Pool window(std::string_view op, const Ints& kernel_size, const Ints& stride, const Ints& padding,
            const Ints& dilation, bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr size_t kAxes = std::tuple_size_v<decltype(Pool::kernel_size)>;
  Pool p;
  p.kernel_size = per_axis<kAxes>(op, "kernel_size", kernel_size);
  if (!stride.empty()) p.stride = per_axis<kAxes>(op, "stride", stride);
  p.padding = per_axis<kAxes>(op, "padding", padding);
  p.dilation = per_axis<kAxes>(op, "dilation", dilation);
  p.ceil_mode = ceil_mode;
  p.count_include_pad = count_include_pad;
  p.divisor_override = divisor_override;
  return p;
}

// The C++ API of each window type, so that one body binds the pools of every rank.
template <class Pool>
struct PoolApi;

template <>
struct PoolApi<Pool1d> {
  static constexpr auto max_shape = &solops::max_pool1d_output_shape;
  static constexpr auto avg_shape = &solops::avg_pool1d_output_shape;
  static constexpr auto max_cost = &max_pool1d_cost;
  static constexpr auto max_with_indices_cost = &max_pool1d_with_indices_cost;
  static constexpr auto avg_cost = &avg_pool1d_cost;
  static constexpr auto max = &solops::max_pool1d;
  static constexpr auto max_with_indices = &solops::max_pool1d_with_indices;
  static constexpr auto avg = &solops::avg_pool1d;
  static constexpr auto reference_max = &reference::max_pool1d;
  static constexpr auto reference_avg = &reference::avg_pool1d;
};

template <>
struct PoolApi<Pool2d> {
  static constexpr auto max_shape = &solops::max_pool2d_output_shape;
  static constexpr auto avg_shape = &solops::avg_pool2d_output_shape;
  static constexpr auto max_cost = &max_pool2d_cost;
  static constexpr auto max_with_indices_cost = &max_pool2d_with_indices_cost;
  static constexpr auto avg_cost = &avg_pool2d_cost;
  static constexpr auto max = &solops::max_pool2d;
  static constexpr auto max_with_indices = &solops::max_pool2d_with_indices;
  static constexpr auto avg = &solops::avg_pool2d;
  static constexpr auto reference_max = &reference::max_pool2d;
  static constexpr auto reference_avg = &reference::avg_pool2d;
};

template <>
struct PoolApi<Pool3d> {
  static constexpr auto max_shape = &solops::max_pool3d_output_shape;
  static constexpr auto avg_shape = &solops::avg_pool3d_output_shape;
  static constexpr auto max_cost = &max_pool3d_cost;
  static constexpr auto max_with_indices_cost = &max_pool3d_with_indices_cost;
  static constexpr auto avg_cost = &avg_pool3d_cost;
  static constexpr auto max = &solops::max_pool3d;
  static constexpr auto max_with_indices = &solops::max_pool3d_with_indices;
  static constexpr auto avg = &solops::avg_pool3d;
  static constexpr auto reference_max = &reference::max_pool3d;
  static constexpr auto reference_avg = &reference::avg_pool3d;
};

template <>
struct PoolApi<AdaptivePool2d> {
  static constexpr auto max_shape = &solops::adaptive_pool2d_output_shape;
  static constexpr auto avg_shape = &solops::adaptive_pool2d_output_shape;
  static constexpr auto max_cost = &adaptive_max_pool2d_cost;
  static constexpr auto max_with_indices_cost = &adaptive_max_pool2d_with_indices_cost;
  static constexpr auto avg_cost = &adaptive_avg_pool2d_cost;
  static constexpr auto max = &solops::adaptive_max_pool2d;
  static constexpr auto max_with_indices = &solops::adaptive_max_pool2d_with_indices;
  static constexpr auto avg = &solops::adaptive_avg_pool2d;
  static constexpr auto reference_max = &reference::adaptive_max_pool2d;
  static constexpr auto reference_avg = &reference::adaptive_avg_pool2d;
};

// The max over each window, with its in-plane position where kWithIndices.
template <Target kTarget, bool kWithIndices, class Pool>
auto max_pool(std::string_view op, const Tensor& x, const Pool& p) {
  using Api = PoolApi<Pool>;
  const DType x_dtype = dtype(x, op, "x");
  if constexpr (kTarget == Target::cost) {
    return cost_list((kWithIndices ? Api::max_with_indices_cost : Api::max_cost)(sizes(x), x_dtype, p));
  } else {
    const Call<kTarget> call(x);
    const std::vector<int64_t> shape = Api::max_shape(sizes(x), p);
    Tensor y = call.empty(shape, x_dtype);
    const TensorRef x_ref = view(x, op, "x"), y_ref = view(y, op, "y");
    if constexpr (kWithIndices) {
      Tensor indices = call.empty(shape, DType::i64);
      const TensorRef indices_ref = view(indices, op, "indices");
      call.run([&](cudaStream_t stream) { Api::max_with_indices(x_ref, y_ref, indices_ref, p, stream); },
               [&] { Api::reference_max(x_ref, y_ref, &indices_ref, p); });
      return std::tuple(y, indices);
    } else {
      call.run([&](cudaStream_t stream) { Api::max(x_ref, y_ref, p, stream); },
               [&] { Api::reference_max(x_ref, y_ref, nullptr, p); });
      return y;
    }
  }
}

// The mean of each window.
template <Target kTarget, class Pool>
auto avg_pool(std::string_view op, const Tensor& x, const Pool& p) {
  using Api = PoolApi<Pool>;
  const DType x_dtype = dtype(x, op, "x");
  if constexpr (kTarget == Target::cost) {
    return cost_list(Api::avg_cost(sizes(x), x_dtype, p));
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(Api::avg_shape(sizes(x), p), x_dtype);
    const TensorRef x_ref = view(x, op, "x"), y_ref = view(y, op, "y");
    call.run([&](cudaStream_t stream) { Api::avg(x_ref, y_ref, p, stream); },
             [&] { Api::reference_avg(x_ref, y_ref, p); });
    return y;
  }
}

template <Target kTarget>
auto max_pool1d(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                const Ints& dilation, bool ceil_mode) {
  return max_pool<kTarget, false>("max_pool1d", x,
                                  window1d("max_pool1d", kernel_size, stride, padding, dilation, ceil_mode, true));
}

template <Target kTarget>
auto max_pool1d_with_indices(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                             const Ints& dilation, bool ceil_mode) {
  return max_pool<kTarget, true>("max_pool1d", x,
                                 window1d("max_pool1d", kernel_size, stride, padding, dilation, ceil_mode, true));
}

template <Target kTarget>
auto avg_pool1d(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding, bool ceil_mode,
                bool count_include_pad) {
  return avg_pool<kTarget>("avg_pool1d", x,
                           window1d("avg_pool1d", kernel_size, stride, padding, {1}, ceil_mode, count_include_pad));
}

template <Target kTarget, class Pool, bool kWithIndices>
auto max_pool_nd(std::string_view op, const Tensor& x, const Ints& kernel_size, const Ints& stride,
                 const Ints& padding, const Ints& dilation, bool ceil_mode) {
  return max_pool<kTarget, kWithIndices>(
      op, x, window<Pool>(op, kernel_size, stride, padding, dilation, ceil_mode, true, std::nullopt));
}

template <Target kTarget, class Pool>
auto avg_pool_nd(std::string_view op, const Tensor& x, const Ints& kernel_size, const Ints& stride,
                 const Ints& padding, bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool<kTarget>(
      op, x, window<Pool>(op, kernel_size, stride, padding, {1}, ceil_mode, count_include_pad, divisor_override));
}

template <Target kTarget>
auto max_pool2d(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                const Ints& dilation, bool ceil_mode) {
  return max_pool_nd<kTarget, Pool2d, false>("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode);
}

template <Target kTarget>
auto max_pool2d_with_indices(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                             const Ints& dilation, bool ceil_mode) {
  return max_pool_nd<kTarget, Pool2d, true>("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode);
}

template <Target kTarget>
auto avg_pool2d(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding, bool ceil_mode,
                bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool_nd<kTarget, Pool2d>("avg_pool2d", x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                      divisor_override);
}

template <Target kTarget>
auto max_pool3d(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                const Ints& dilation, bool ceil_mode) {
  return max_pool_nd<kTarget, Pool3d, false>("max_pool3d", x, kernel_size, stride, padding, dilation, ceil_mode);
}

template <Target kTarget>
auto max_pool3d_with_indices(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                             const Ints& dilation, bool ceil_mode) {
  return max_pool_nd<kTarget, Pool3d, true>("max_pool3d", x, kernel_size, stride, padding, dilation, ceil_mode);
}

template <Target kTarget>
auto avg_pool3d(const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding, bool ceil_mode,
                bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool_nd<kTarget, Pool3d>("avg_pool3d", x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                      divisor_override);
}

AdaptivePool2d adaptive(std::string_view op, const Ints& output_size) {
  AdaptivePool2d p;
  const auto sizes = per_axis<2>(op, "output_size", output_size);
  p.output_size = {sizes[0], sizes[1]};
  return p;
}

template <Target kTarget>
auto adaptive_max_pool2d(const Tensor& x, const Ints& output_size) {
  return max_pool<kTarget, false>("adaptive_max_pool2d", x, adaptive("adaptive_max_pool2d", output_size));
}

template <Target kTarget>
auto adaptive_max_pool2d_with_indices(const Tensor& x, const Ints& output_size) {
  return max_pool<kTarget, true>("adaptive_max_pool2d", x, adaptive("adaptive_max_pool2d", output_size));
}

template <Target kTarget>
auto adaptive_avg_pool2d(const Tensor& x, const Ints& output_size) {
  return avg_pool<kTarget>("adaptive_avg_pool2d", x, adaptive("adaptive_avg_pool2d", output_size));
}

// Uniform mode without offsets and indices; ragged mode's sizes from their leading dims (the op
// itself checks their ranks and contents).
std::optional<RaggedSizes> ragged_sizes(const std::optional<Tensor>& offsets, const std::optional<Tensor>& indices) {
  if (!offsets || !indices) return std::nullopt;
  return RaggedSizes{offsets->dim() > 0 ? offsets->size(0) - 1 : -1, indices->dim() > 0 ? indices->size(0) : 0};
}

template <Target kTarget>
auto mean_pooling(const Tensor& x, int64_t chunk_size, const std::optional<Tensor>& offsets,
                  const std::optional<Tensor>& indices, bool check_metadata) {
  constexpr std::string_view kOp = "mean_pooling";
  const MeanPooling p{chunk_size, check_metadata};
  const DType x_dtype = dtype(x, kOp, "x");
  if constexpr (kTarget == Target::cost) {
    return cost_list(mean_pooling_cost(sizes(x), x_dtype, p, ragged_sizes(offsets, indices)));
  } else {
    const Call<kTarget> call(x);
    Tensor y = call.empty(mean_pooling_output_shape(sizes(x), p, ragged_sizes(offsets, indices)), x_dtype);
    const TensorRef x_ref = view(x, kOp, "x"), y_ref = view(y, kOp, "y");
    const auto offsets_ref = view(offsets, kOp, "offsets"), indices_ref = view(indices, kOp, "indices");
    call.run(
        [&](cudaStream_t stream) {
          solops::mean_pooling(x_ref, y_ref, pointer(offsets_ref), pointer(indices_ref), p, stream);
        },
        [&] { reference::mean_pooling(x_ref, y_ref, pointer(offsets_ref), pointer(indices_ref), p); });
    return y;
  }
}

constexpr const char* kMaxPool1dArguments =
    "(Tensor x, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False)";
constexpr const char* kMaxPool2dArguments =
    "(Tensor x, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False)";
constexpr const char* kMaxPool3dArguments =
    "(Tensor x, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False)";

template <Target kTarget>
constexpr Op kPoolOps[] = {
    {"max_pool1d", kMaxPool1dArguments, "Tensor", TORCH_BOX(&max_pool1d<kTarget>)},
    {"max_pool1d_with_indices", kMaxPool1dArguments, "(Tensor, Tensor)",
     TORCH_BOX(&max_pool1d_with_indices<kTarget>)},
    {"avg_pool1d",
     "(Tensor x, int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool ceil_mode=False, "
     "bool count_include_pad=True)",
     "Tensor", TORCH_BOX(&avg_pool1d<kTarget>)},
    {"max_pool2d", kMaxPool2dArguments, "Tensor", TORCH_BOX(&max_pool2d<kTarget>)},
    {"max_pool2d_with_indices", kMaxPool2dArguments, "(Tensor, Tensor)",
     TORCH_BOX(&max_pool2d_with_indices<kTarget>)},
    {"avg_pool2d",
     "(Tensor x, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
     "bool count_include_pad=True, int? divisor_override=None)",
     "Tensor", TORCH_BOX(&avg_pool2d<kTarget>)},
    {"max_pool3d", kMaxPool3dArguments, "Tensor", TORCH_BOX(&max_pool3d<kTarget>)},
    {"max_pool3d_with_indices", kMaxPool3dArguments, "(Tensor, Tensor)",
     TORCH_BOX(&max_pool3d_with_indices<kTarget>)},
    {"avg_pool3d",
     "(Tensor x, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, "
     "bool count_include_pad=True, int? divisor_override=None)",
     "Tensor", TORCH_BOX(&avg_pool3d<kTarget>)},
    {"adaptive_max_pool2d", "(Tensor x, SymInt[2] output_size)", "Tensor", TORCH_BOX(&adaptive_max_pool2d<kTarget>)},
    {"adaptive_max_pool2d_with_indices", "(Tensor x, SymInt[2] output_size)", "(Tensor, Tensor)",
     TORCH_BOX(&adaptive_max_pool2d_with_indices<kTarget>)},
    {"adaptive_avg_pool2d", "(Tensor x, SymInt[2] output_size)", "Tensor", TORCH_BOX(&adaptive_avg_pool2d<kTarget>)},
    {"mean_pooling",
     "(Tensor x, int chunk_size, Tensor? offsets=None, Tensor? indices=None, bool check_metadata=True)", "Tensor",
     TORCH_BOX(&mean_pooling<kTarget>)},
};

}  // namespace
}  // namespace solops::torch_binding

SOLOPS_REGISTER_FAMILY(solops::torch_binding::kPoolOps)
