// 2-D pooling: shape rule, validation, cost model and the public entry points.
#include <climits>

#include "core/check.hpp"
#include "pool/pool2d_geometry.hpp"
#include "pool/pool2d_launch.hpp"
#include "solops/pool.hpp"

namespace solops {
namespace detail {

int64_t pooled_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                    bool ceil_mode) {
  // Floor division: in ceil mode a window may overhang a too-small input (PyTorch's div_rtn).
  const auto floor_div = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;  // padded extent - window
  int64_t out = floor_div(span + (ceil_mode ? stride - 1 : 0), stride) + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

namespace {

constexpr const char* kAxis[2] = {"H", "W"};

// True when window `o` of one axis has at least one tap inside [0, in).
bool window_has_real_tap(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                         int64_t dilation) {
  const int64_t start = o * stride - pad;
  const int64_t first_tap = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  return first_tap < kernel && start + first_tap * dilation < in;
}

// Only windows that touch the padding can be empty; check those at both ends of the axis.
void check_windows_reach_input(std::string_view op, int axis, int64_t in, int64_t out,
                               int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t extent = dilation * (kernel - 1) + 1;
  for (int64_t o = 0; o < out && o * stride - pad < 0; ++o) {
    require(window_has_real_tap(o, in, kernel, stride, pad, dilation), op, "window ", o, " along ",
            kAxis[axis], " has no element inside the input (kernel ", kernel, ", dilation ",
            dilation, ", padding ", pad, ", input ", in, ")");
  }
  for (int64_t o = out - 1; o >= 0 && o * stride - pad + extent > in; --o) {
    require(window_has_real_tap(o, in, kernel, stride, pad, dilation), op, "window ", o, " along ",
            kAxis[axis], " has no element inside the input (kernel ", kernel, ", dilation ",
            dilation, ", padding ", pad, ", input ", in, ")");
  }
}

}  // namespace

std::vector<int64_t> Pool2dGeometry::output_shape() const {
  if (batched) return {batch, channels, out_h, out_w};
  return {channels, out_h, out_w};
}

Pool2dGeometry resolve_pool2d(std::string_view op, Pool2dKind kind, std::span<const int64_t> x_shape,
                              const Pool2d& p) {
  const auto rank = static_cast<int64_t>(x_shape.size());
  require(rank == 3 || rank == 4, op, "input must be 3-D [C, H, W] or 4-D [N, C, H, W], got ",
          rank, "-D ", shape_string(x_shape));
  Pool2dGeometry g;
  g.batched = rank == 4;
  g.batch = g.batched ? x_shape[0] : 1;
  g.channels = x_shape[rank - 3];
  require(g.batch >= 0, op, "input batch size ", g.batch, " is negative");
  for (int64_t d = rank - 3; d < rank; ++d) {
    require(x_shape[d] > 0, op, "input ", shape_string(x_shape), " has an empty dim ", d,
            " (only the batch dim may be 0)");
  }
  const std::array<int64_t, 2> in = {x_shape[rank - 2], x_shape[rank - 1]};
  const std::array<int64_t, 2> stride = p.stride.value_or(p.kernel_size);
  std::array<int64_t, 2> out{};
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t k = p.kernel_size[axis], s = stride[axis], pad = p.padding[axis],
                  d = p.dilation[axis];
    require(k >= 1, op, "kernel_size[", axis, "] = ", k, " must be >= 1");
    require(s >= 1, op, "stride[", axis, "] = ", s, " must be >= 1");
    require(d >= 1, op, "dilation[", axis, "] = ", d, " must be >= 1");
    require(kind == Pool2dKind::max || d == 1, op, "dilation[", axis, "] = ", d,
            ": avg-pool has no dilation (must be 1)");
    require(pad >= 0, op, "padding[", axis, "] = ", pad, " must be >= 0");
    require(pad <= k / 2, op, "padding[", axis, "] = ", pad,
            " must be at most half the kernel size (kernel_size[", axis, "] = ", k, ")");
    require(k <= INT_MAX && s <= INT_MAX && d <= INT_MAX && d * (k - 1) < INT_MAX, op,
            "window of axis ", kAxis[axis], " is too large for 32-bit in-plane indexing");
    out[axis] = pooled_size(in[axis], k, s, pad, d, p.ceil_mode);
    require(out[axis] > 0, op, "output size along ", kAxis[axis], " would be ", out[axis],
            ": the window (kernel ", k, ", dilation ", d, ") is larger than the padded input (",
            in[axis], " + 2*", pad, ")");
    check_windows_reach_input(op, axis, in[axis], out[axis], k, s, pad, d);
  }
  require(in[0] * in[1] <= INT_MAX && out[0] * out[1] <= INT_MAX, op, "input plane ",
          in[0], "x", in[1], " has 2^31 or more elements: 32-bit in-plane indexing would overflow");
  if (kind == Pool2dKind::avg && p.divisor_override) {
    require(*p.divisor_override != 0, op, "divisor_override must not be zero");
    require(*p.divisor_override >= INT_MIN && *p.divisor_override <= INT_MAX, op,
            "divisor_override ", *p.divisor_override, " does not fit in 32 bits");
    g.divisor_override = static_cast<int>(*p.divisor_override);
  }
  g.planes = g.batch * g.channels;
  g.in_h = static_cast<int>(in[0]);
  g.in_w = static_cast<int>(in[1]);
  g.out_h = static_cast<int>(out[0]);
  g.out_w = static_cast<int>(out[1]);
  g.kernel_h = static_cast<int>(p.kernel_size[0]);
  g.kernel_w = static_cast<int>(p.kernel_size[1]);
  g.stride_h = static_cast<int>(stride[0]);
  g.stride_w = static_cast<int>(stride[1]);
  g.pad_h = static_cast<int>(p.padding[0]);
  g.pad_w = static_cast<int>(p.padding[1]);
  g.dilation_h = static_cast<int>(p.dilation[0]);
  g.dilation_w = static_cast<int>(p.dilation[1]);
  g.count_include_pad = p.count_include_pad;
  return g;
}

namespace {

Cost pool2d_cost(const Pool2dGeometry& g, DType dtype, int64_t index_bytes) {
  const double outputs = static_cast<double>(g.outputs());
  const double inputs = static_cast<double>(g.planes) * g.in_h * g.in_w;
  return {outputs * g.kernel_h * g.kernel_w,
          (inputs + outputs) * static_cast<double>(dtype_size(dtype)) + outputs * index_bytes};
}

}  // namespace

Pool2dGeometry validate_pool2d_call(std::string_view op, Pool2dKind kind, Placement placement,
                                    const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                                    const Pool2d& p) {
  const auto check_tensor = placement == Placement::device ? check_device_tensor : check_host_tensor;
  check_tensor(op, "input", x);
  check_float_dtype(op, "input", x);
  const Pool2dGeometry g = resolve_pool2d(op, kind, x.sizes(), p);
  check_tensor(op, "output", y);
  check_dtype(op, "output", y, x.dtype);
  check_shape(op, "output", y, g.output_shape());
  if (indices) {
    check_tensor(op, "indices", *indices);
    check_dtype(op, "indices", *indices, DType::i64);
    check_shape(op, "indices", *indices, g.output_shape());
  }
  if (placement == Placement::device) {
    check_no_overlap(op, "input", x, "output", y);
    if (indices) {
      check_no_overlap(op, "input", x, "indices", *indices);
      check_no_overlap(op, "output", y, "indices", *indices);
    }
  }
  return g;
}

}  // namespace detail

using detail::Pool2dKind;

std::vector<int64_t> max_pool2d_output_shape(std::span<const int64_t> x_shape, const Pool2d& p) {
  return detail::resolve_pool2d("max_pool2d", Pool2dKind::max, x_shape, p).output_shape();
}

std::vector<int64_t> avg_pool2d_output_shape(std::span<const int64_t> x_shape, const Pool2d& p) {
  return detail::resolve_pool2d("avg_pool2d", Pool2dKind::avg, x_shape, p).output_shape();
}

Cost max_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p) {
  return detail::pool2d_cost(detail::resolve_pool2d("max_pool2d", Pool2dKind::max, x_shape, p),
                             dtype, 0);
}

Cost max_pool2d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p) {
  return detail::pool2d_cost(detail::resolve_pool2d("max_pool2d", Pool2dKind::max, x_shape, p),
                             dtype, sizeof(int64_t));
}

Cost avg_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p) {
  return detail::pool2d_cost(detail::resolve_pool2d("avg_pool2d", Pool2dKind::avg, x_shape, p),
                             dtype, 0);
}

void max_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p, cudaStream_t stream) {
  const auto g = detail::validate_pool2d_call("max_pool2d", Pool2dKind::max, detail::Placement::device, x, y, nullptr, p);
  detail::launch_max_pool2d(g, x, y, nullptr, stream);
}

void max_pool2d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                             const Pool2d& p, cudaStream_t stream) {
  const auto g = detail::validate_pool2d_call("max_pool2d", Pool2dKind::max, detail::Placement::device, x, y, &indices, p);
  detail::launch_max_pool2d(g, x, y, &indices, stream);
}

void avg_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p, cudaStream_t stream) {
  const auto g = detail::validate_pool2d_call("avg_pool2d", Pool2dKind::avg, detail::Placement::device, x, y, nullptr, p);
  detail::launch_avg_pool2d(g, x, y, stream);
}

}  // namespace solops
