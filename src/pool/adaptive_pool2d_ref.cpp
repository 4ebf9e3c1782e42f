// CPU references of the adaptive 2-D pools (spec §4.4–4.5): the executable specification.
#include <cmath>
#include <limits>

#include "core/host_values.hpp"
#include "pool/adaptive_pool2d.hpp"
#include "solops/reference.hpp"

namespace solops::reference {

namespace {

using detail::AdaptiveBin;
using detail::AdaptiveGeometry;

// Calls visit(out, plane_offset, rows, cols) for every output bin: out is the output's flat
// index, plane_offset the flat index of its plane's first input element.
template <class Visit>
void for_each_bin(const AdaptiveGeometry& g, Visit&& visit) {
  const int64_t in_plane = int64_t{g.in_h} * g.in_w;
  const int64_t out_plane = int64_t{g.out_h} * g.out_w;
  for (int64_t plane = 0; plane < g.planes; ++plane) {
    for (int oh = 0; oh < g.out_h; ++oh) {
      for (int ow = 0; ow < g.out_w; ++ow) {
        visit(plane * out_plane + int64_t{oh} * g.out_w + ow, plane * in_plane,
              detail::adaptive_bin(oh, g.in_h, g.out_h), detail::adaptive_bin(ow, g.in_w, g.out_w));
      }
    }
  }
}

}  // namespace

void adaptive_max_pool2d(const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                         const AdaptivePool2d& p) {
  const AdaptiveGeometry g = detail::validate_adaptive_pool2d_call(
      "reference::adaptive_max_pool2d", detail::Placement::host, x, y, indices, p);
  for_each_bin(g, [&](int64_t out, int64_t plane_offset, AdaptiveBin rows, AdaptiveBin cols) {
    // Scan in row-major order; replace on a strictly greater value or on NaN (spec §4.2).
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_index = -1;
    for (int64_t ih = rows.start; ih < rows.end; ++ih) {
      for (int64_t iw = cols.start; iw < cols.end; ++iw) {
        const double v = detail::load_value(x, plane_offset + ih * g.in_w + iw);
        if (best_index < 0 || v > best || std::isnan(v)) {
          best = v;
          best_index = ih * g.in_w + iw;
        }
      }
    }
    detail::store_value(y, out, best);
    if (indices) static_cast<int64_t*>(indices->data)[out] = best_index;
  });
}

void adaptive_avg_pool2d(const TensorRef& x, const TensorRef& y, const AdaptivePool2d& p) {
  const AdaptiveGeometry g = detail::validate_adaptive_pool2d_call(
      "reference::adaptive_avg_pool2d", detail::Placement::host, x, y, nullptr, p);
  for_each_bin(g, [&](int64_t out, int64_t plane_offset, AdaptiveBin rows, AdaptiveBin cols) {
    double sum = 0;
    for (int64_t ih = rows.start; ih < rows.end; ++ih) {
      for (int64_t iw = cols.start; iw < cols.end; ++iw) sum += detail::load_value(x, plane_offset + ih * g.in_w + iw);
    }
    detail::store_value(y, out, sum / (double(rows.end - rows.start) * (cols.end - cols.start)));
  });
}

}  // namespace solops::reference
