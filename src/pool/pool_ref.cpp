// CPU references of the sliding-window pools (spec §4.0–4.3): the executable specification.
// 1-D pools are 2-D pools of one-row planes (pool_geometry.hpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.hpp"
#include "core/host_values.hpp"
#include "pool/pool_geometry.hpp"
#include "solops/reference.hpp"

namespace solops::reference {

namespace {

using detail::PoolGeometry;

void max_pool(const PoolGeometry& g, const TensorRef& x, const TensorRef& y, const TensorRef* indices) {
  const int64_t in_plane = int64_t{g.in_h} * g.in_w;
  const int64_t out_plane = int64_t{g.out_h} * g.out_w;
  for (int64_t plane = 0; plane < g.planes; ++plane) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        // Scan real taps in row-major order; replace on a strictly greater value or on NaN, so
        // ties keep the first tap and the last NaN wins. An all -inf window reports its first tap.
        double best = -std::numeric_limits<double>::infinity();
        int64_t best_index = -1;
        for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
          const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
          if (ih < 0 || ih >= g.in_h) continue;
          for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
            const int64_t iw = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
            if (iw < 0 || iw >= g.in_w) continue;
            const double v = detail::load_value(x, plane * in_plane + ih * g.in_w + iw);
            if (best_index < 0 || v > best || std::isnan(v)) {
              best = v;
              best_index = ih * g.in_w + iw;
            }
          }
        }
        const int64_t out = plane * out_plane + oh * g.out_w + ow;
        detail::store_value(y, out, best);
        if (indices) static_cast<int64_t*>(indices->data)[out] = best_index;
      }
    }
  }
}

void avg_pool(const PoolGeometry& g, const TensorRef& x, const TensorRef& y) {
  const int64_t in_plane = int64_t{g.in_h} * g.in_w;
  const int64_t out_plane = int64_t{g.out_h} * g.out_w;
  for (int64_t plane = 0; plane < g.planes; ++plane) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      // Window end clipped to the padded extent (spec §4.1), then start/end clipped to the data.
      const int64_t h0 = oh * g.stride_h - g.pad_h;
      const int64_t h1 = std::min<int64_t>(h0 + g.kernel_h, g.in_h + g.pad_h);
      const int64_t real_h0 = std::max<int64_t>(h0, 0), real_h1 = std::min<int64_t>(h1, g.in_h);
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t w0 = ow * g.stride_w - g.pad_w;
        const int64_t w1 = std::min<int64_t>(w0 + g.kernel_w, g.in_w + g.pad_w);
        const int64_t real_w0 = std::max<int64_t>(w0, 0), real_w1 = std::min<int64_t>(w1, g.in_w);
        double sum = 0;
        for (int64_t ih = real_h0; ih < real_h1; ++ih) {
          for (int64_t iw = real_w0; iw < real_w1; ++iw) {
            sum += detail::load_value(x, plane * in_plane + ih * g.in_w + iw);
          }
        }
        const int64_t divisor = g.divisor_override     ? g.divisor_override
                                : g.count_include_pad ? (h1 - h0) * (w1 - w0)
                                                      : (real_h1 - real_h0) * (real_w1 - real_w0);
        detail::store_value(y, plane * out_plane + oh * g.out_w + ow, sum / divisor);
      }
    }
  }
}

template <class Params>
void max_pool(std::string_view op, const TensorRef& x, const TensorRef& y, const TensorRef* indices,
              const Params& p) {
  max_pool(detail::validate_pool_call(op, detail::PoolKind::max, detail::Placement::host, x, y, indices, p),
           x, y, indices);
}

template <class Params>
void avg_pool(std::string_view op, const TensorRef& x, const TensorRef& y, const Params& p) {
  avg_pool(detail::validate_pool_call(op, detail::PoolKind::avg, detail::Placement::host, x, y, nullptr, p),
           x, y);
}

}  // namespace

void max_pool1d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool1d& p) {
  max_pool("reference::max_pool1d", x, y, indices, p);
}
void avg_pool1d(const TensorRef& x, const TensorRef& y, const Pool1d& p) {
  avg_pool("reference::avg_pool1d", x, y, p);
}
void max_pool2d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool2d& p) {
  max_pool("reference::max_pool2d", x, y, indices, p);
}
void avg_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p) {
  avg_pool("reference::avg_pool2d", x, y, p);
}

}  // namespace solops::reference
