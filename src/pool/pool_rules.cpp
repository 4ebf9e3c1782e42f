// Rules shared by the sliding-window pools (spec §4.0), 1-D to 3-D: output sizes, parameter and
// tensor validation, the cost model. The public entry points are in pool.cpp.
#include <climits>

#include "core/check.hpp"
#include "pool/pool_geometry.hpp"

namespace solops::detail {

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

// The window of one spatial axis as the caller gave it. `label` follows each parameter's name in
// messages ("[0]" for kernel_size[0] of a 2-D pool, "" for a 1-D pool's scalar) and `axis` names
// the axis ("H", "W", "L").
struct AxisWindow {
  int64_t kernel, stride, pad, dilation;
  std::string_view label, axis;
};

// True when window `o` of one axis has at least one tap inside [0, in).
bool window_has_real_tap(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                         int64_t dilation) {
  const int64_t start = o * stride - pad;
  const int64_t first_tap = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  return first_tap < kernel && start + first_tap * dilation < in;
}

// Only windows that touch the padding can be empty; check those at both ends of the axis.
void check_windows_reach_input(std::string_view op, const AxisWindow& a, int64_t in, int64_t out) {
  const int64_t extent = a.dilation * (a.kernel - 1) + 1;
  const auto check = [&](int64_t o) {
    require(window_has_real_tap(o, in, a.kernel, a.stride, a.pad, a.dilation), op, "window ", o,
            " along ", a.axis, " has no element inside the input (kernel ", a.kernel, ", dilation ",
            a.dilation, ", padding ", a.pad, ", input ", in, ")");
  };
  for (int64_t o = 0; o < out && o * a.stride - a.pad < 0; ++o) check(o);
  for (int64_t o = out - 1; o >= 0 && o * a.stride - a.pad + extent > in; --o) check(o);
}

// Checks one axis's parameters against its input size; returns its output size.
int64_t resolve_axis(std::string_view op, PoolKind kind, const AxisWindow& a, int64_t in, bool ceil_mode) {
  require(a.kernel >= 1, op, "kernel_size", a.label, " = ", a.kernel, " must be >= 1");
  require(a.stride >= 1, op, "stride", a.label, " = ", a.stride, " must be >= 1");
  require(a.dilation >= 1, op, "dilation", a.label, " = ", a.dilation, " must be >= 1");
  require(kind == PoolKind::max || a.dilation == 1, op, "dilation", a.label, " = ", a.dilation,
          ": avg-pool has no dilation (must be 1)");
  require(a.pad >= 0, op, "padding", a.label, " = ", a.pad, " must be >= 0");
  require(a.pad <= a.kernel / 2, op, "padding", a.label, " = ", a.pad,
          " must be at most half the kernel size (kernel_size", a.label, " = ", a.kernel, ")");
  require(a.kernel <= INT_MAX && a.stride <= INT_MAX && a.dilation <= INT_MAX &&
              a.dilation * (a.kernel - 1) < INT_MAX,
          op, "window of axis ", a.axis, " is too large for 32-bit in-plane indexing");
  const int64_t out = pooled_size(in, a.kernel, a.stride, a.pad, a.dilation, ceil_mode);
  require(out > 0, op, "output size along ", a.axis, " would be ", out, ": the window (kernel ",
          a.kernel, ", dilation ", a.dilation, ") is larger than the padded input (", in, " + 2*",
          a.pad, ")");
  check_windows_reach_input(op, a, in, out);
  return out;
}

// The geometry of a pool over the last axes.size() dims of x; `layouts` names the accepted ranks.
PoolGeometry resolve_axes(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape,
                          std::span<const AxisWindow> axes, bool ceil_mode, std::string_view layouts) {
  const auto spatial = static_cast<int64_t>(axes.size());
  const auto rank = static_cast<int64_t>(x_shape.size());
  const PoolLayout layout = resolve_layout(op, x_shape, spatial, layouts);
  PoolGeometry g;
  g.spatial_rank = static_cast<int>(spatial);
  g.batched = layout.batched;
  g.batch = layout.batch;
  g.channels = layout.channels;
  // Missing leading axes (the D of a 2-D pool, D and H of a 1-D pool) are one element with a
  // window of one tap.
  std::array<int64_t, 3> in = {1, 1, 1}, out = {1, 1, 1};
  std::array<AxisWindow, 3> window = {AxisWindow{1, 1, 0, 1, "", "D"}, AxisWindow{1, 1, 0, 1, "", "H"},
                                      AxisWindow{1, 1, 0, 1, "", "W"}};
  // Products of x's sizes, which resolve_layout has checked, fit in int64. The plane's limit comes
  // first: it bounds each input size, and so the arithmetic of resolve_axis.
  int64_t in_plane = 1, out_plane = 1;
  for (int64_t size : x_shape.last(axes.size())) in_plane *= size;
  const auto plane_limit = [&](int64_t plane) {
    require(plane <= INT_MAX, op, "input ", shape_text(x_shape),
            " has planes of 2^31 or more elements: 32-bit in-plane indexing would overflow");
  };
  plane_limit(in_plane);
  for (int64_t a = 0; a < spatial; ++a) {
    const int64_t slot = 3 - spatial + a;
    in[slot] = x_shape[rank - spatial + a];
    window[slot] = axes[a];
    out[slot] = resolve_axis(op, kind, axes[a], in[slot], ceil_mode);
    out_plane *= out[slot];  // each output size is at most its input size + 1
  }
  plane_limit(out_plane);
  g.planes = g.batch * g.channels;
  const auto narrow = [](int64_t v) { return static_cast<int>(v); };
  g.in_d = narrow(in[0]), g.in_h = narrow(in[1]), g.in_w = narrow(in[2]);
  g.out_d = narrow(out[0]), g.out_h = narrow(out[1]), g.out_w = narrow(out[2]);
  g.kernel_d = narrow(window[0].kernel), g.kernel_h = narrow(window[1].kernel), g.kernel_w = narrow(window[2].kernel);
  g.stride_d = narrow(window[0].stride), g.stride_h = narrow(window[1].stride), g.stride_w = narrow(window[2].stride);
  g.pad_d = narrow(window[0].pad), g.pad_h = narrow(window[1].pad), g.pad_w = narrow(window[2].pad);
  g.dilation_d = narrow(window[0].dilation), g.dilation_h = narrow(window[1].dilation);
  g.dilation_w = narrow(window[2].dilation);
  checked_product(op, "output", g.output_shape());  // so that outputs() fits in int64
  return g;
}

}  // namespace

PoolLayout resolve_layout(std::string_view op, std::span<const int64_t> x_shape, int64_t spatial,
                          std::string_view layouts) {
  const auto rank = static_cast<int64_t>(x_shape.size());
  require(rank == spatial + 1 || rank == spatial + 2, op, "input must be ", layouts, ", got ", rank,
          "-D ", shape_text(x_shape));
  checked_product(op, "input", x_shape);  // so that every product of its sizes fits in int64
  const bool batched = rank == spatial + 2;
  const PoolLayout layout{batched, batched ? x_shape[0] : 1, x_shape[rank - spatial - 1]};
  require(layout.batch >= 0, op, "input batch size ", layout.batch, " is negative");
  for (int64_t d = rank - spatial - 1; d < rank; ++d) {
    require(x_shape[d] > 0, op, "input ", shape_text(x_shape), " has an empty dim ", d,
            " (only the batch dim may be 0)");
  }
  return layout;
}

std::vector<int64_t> PoolGeometry::output_shape() const {
  std::vector<int64_t> shape;
  if (batched) shape.push_back(batch);
  shape.push_back(channels);
  if (spatial_rank == 3) shape.push_back(out_d);
  if (spatial_rank >= 2) shape.push_back(out_h);
  shape.push_back(out_w);
  return shape;
}

PoolGeometry resolve_pool(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape,
                            const Pool1d& p) {
  const AxisWindow axis{p.kernel_size, p.stride.value_or(p.kernel_size), p.padding, p.dilation, "", "L"};
  PoolGeometry g = resolve_axes(op, kind, x_shape, std::span(&axis, 1), p.ceil_mode,
                                "2-D [C, L] or 3-D [N, C, L]");
  g.count_include_pad = p.count_include_pad;
  return g;
}

namespace {

// The per-axis window of a 2-D or 3-D pool's parameters; labels "[0]", "[1]", ... name its axes.
template <size_t kAxes>
std::array<AxisWindow, kAxes> axis_windows(const auto& p, const std::array<const char*, kAxes>& names) {
  static constexpr const char* kLabels[] = {"[0]", "[1]", "[2]"};
  const auto stride = p.stride.value_or(p.kernel_size);
  std::array<AxisWindow, kAxes> axes;
  for (size_t a = 0; a < kAxes; ++a) {
    axes[a] = {p.kernel_size[a], stride[a], p.padding[a], p.dilation[a], kLabels[a], names[a]};
  }
  return axes;
}

// count_include_pad and divisor_override, shared by the 2-D and 3-D resolvers.
void set_divisor(std::string_view op, PoolKind kind, const auto& p, PoolGeometry& g) {
  g.count_include_pad = p.count_include_pad;
  if (kind == PoolKind::avg && p.divisor_override) {
    require(*p.divisor_override != 0, op, "divisor_override must not be zero");
    require(*p.divisor_override >= INT_MIN && *p.divisor_override <= INT_MAX, op,
            "divisor_override ", *p.divisor_override, " does not fit in 32 bits");
    g.divisor_override = static_cast<int>(*p.divisor_override);
  }
}

}  // namespace

PoolGeometry resolve_pool(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape,
                          const Pool2d& p) {
  PoolGeometry g = resolve_axes(op, kind, x_shape, axis_windows<2>(p, {"H", "W"}), p.ceil_mode,
                                "3-D [C, H, W] or 4-D [N, C, H, W]");
  set_divisor(op, kind, p, g);
  return g;
}

PoolGeometry resolve_pool(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape,
                          const Pool3d& p) {
  PoolGeometry g = resolve_axes(op, kind, x_shape, axis_windows<3>(p, {"D", "H", "W"}), p.ceil_mode,
                                "4-D [C, D, H, W] or 5-D [N, C, D, H, W]");
  set_divisor(op, kind, p, g);
  // PyTorch's avg_pool3d (not its max_pool3d, nor the 1-D and 2-D pools) refuses inputs smaller
  // than the kernel on any axis, even where padding or ceil mode would give outputs; the spec is
  // silent, and we keep PyTorch's set of accepted calls.
  require(kind == PoolKind::max || (g.in_d >= g.kernel_d && g.in_h >= g.kernel_h && g.in_w >= g.kernel_w), op,
          "input (D ", g.in_d, ", H ", g.in_h, ", W ", g.in_w, ") is smaller than the kernel (", g.kernel_d, ", ",
          g.kernel_h, ", ", g.kernel_w, ") on some axis; avg_pool3d needs every input size >= its kernel size, "
          "as PyTorch's does");
  return g;
}

PoolGeometry validate_pool_call(std::string_view op, PoolKind kind, Placement placement,
                                  const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                                  const Pool1d& p) {
  return validate_pool_tensors(op, placement, x, y, indices, [&] { return resolve_pool(op, kind, x.sizes(), p); });
}

PoolGeometry validate_pool_call(std::string_view op, PoolKind kind, Placement placement,
                                  const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                                  const Pool2d& p) {
  return validate_pool_tensors(op, placement, x, y, indices, [&] { return resolve_pool(op, kind, x.sizes(), p); });
}

PoolGeometry validate_pool_call(std::string_view op, PoolKind kind, Placement placement,
                                const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                                const Pool3d& p) {
  return validate_pool_tensors(op, placement, x, y, indices, [&] { return resolve_pool(op, kind, x.sizes(), p); });
}

Cost pool_cost(const PoolGeometry& g, DType dtype, int64_t index_bytes) {
  const double outputs = static_cast<double>(g.outputs());
  const double inputs = static_cast<double>(g.planes) * g.in_d * g.in_h * g.in_w;
  return {outputs * g.kernel_d * g.kernel_h * g.kernel_w,
          (inputs + outputs) * static_cast<double>(dtype_size(dtype)) + outputs * index_bytes};
}

}  // namespace solops::detail
