// CPU references of the sliding-window pools (spec §4.0–4.3): the executable specification.
// 1-D and 2-D pools are 3-D pools of depth 1 (pool_geometry.hpp).
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
  const int64_t in_plane = int64_t{g.in_d} * g.in_h * g.in_w;
  int64_t out = 0;
  for (int64_t plane = 0; plane < g.planes; ++plane) {
    for (int64_t od = 0; od < g.out_d; ++od) {
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow, ++out) {
          // Scan real taps in (d, h, w) order; replace on a strictly greater value or on NaN, so
          // ties keep the first tap and the last NaN wins. An all -inf window reports its first tap.
          double best = -std::numeric_limits<double>::infinity();
          int64_t best_index = -1;
          for (int64_t kd = 0; kd < g.kernel_d; ++kd) {
            const int64_t id = od * g.stride_d - g.pad_d + kd * g.dilation_d;
            if (id < 0 || id >= g.in_d) continue;
            for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
              const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
              if (ih < 0 || ih >= g.in_h) continue;
              for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
                const int64_t iw = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
                if (iw < 0 || iw >= g.in_w) continue;
                const int64_t position = (id * g.in_h + ih) * g.in_w + iw;
                const double v = detail::load_value(x, plane * in_plane + position);
                if (best_index < 0 || v > best || std::isnan(v)) {
                  best = v;
                  best_index = position;
                }
              }
            }
          }
          detail::store_value(y, out, best);
          if (indices) static_cast<int64_t*>(indices->data)[out] = best_index;
        }
      }
    }
  }
}

// An avg-pool window along one axis (spec §4.1): [start, end) clipped to the padded extent, and
// [real_start, real_end) clipped to the data.
struct AvgSpan {
  int64_t start, end, real_start, real_end;
};

AvgSpan avg_span(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t in) {
  const int64_t start = o * stride - pad;
  const int64_t end = std::min<int64_t>(start + kernel, in + pad);
  return {start, end, std::max<int64_t>(start, 0), std::min<int64_t>(end, in)};
}

void avg_pool(const PoolGeometry& g, const TensorRef& x, const TensorRef& y) {
  const int64_t in_plane = int64_t{g.in_d} * g.in_h * g.in_w;
  int64_t out = 0;
  for (int64_t plane = 0; plane < g.planes; ++plane) {
    for (int64_t od = 0; od < g.out_d; ++od) {
      const AvgSpan d = avg_span(od, g.stride_d, g.pad_d, g.kernel_d, g.in_d);
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const AvgSpan h = avg_span(oh, g.stride_h, g.pad_h, g.kernel_h, g.in_h);
        for (int64_t ow = 0; ow < g.out_w; ++ow, ++out) {
          const AvgSpan w = avg_span(ow, g.stride_w, g.pad_w, g.kernel_w, g.in_w);
          double sum = 0;
          for (int64_t id = d.real_start; id < d.real_end; ++id) {
            for (int64_t ih = h.real_start; ih < h.real_end; ++ih) {
              for (int64_t iw = w.real_start; iw < w.real_end; ++iw) {
                sum += detail::load_value(x, plane * in_plane + (id * g.in_h + ih) * g.in_w + iw);
              }
            }
          }
          const int64_t divisor =
              g.divisor_override    ? g.divisor_override
              : g.count_include_pad ? (d.end - d.start) * (h.end - h.start) * (w.end - w.start)
                                    : (d.real_end - d.real_start) * (h.real_end - h.real_start) *
                                          (w.real_end - w.real_start);
          detail::store_value(y, out, sum / divisor);
        }
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
void max_pool3d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool3d& p) {
  max_pool("reference::max_pool3d", x, y, indices, p);
}
void avg_pool3d(const TensorRef& x, const TensorRef& y, const Pool3d& p) {
  avg_pool("reference::avg_pool3d", x, y, p);
}

}  // namespace solops::reference
