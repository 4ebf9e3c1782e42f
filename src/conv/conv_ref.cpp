// CPU reference of every convolution op: spec §3.0's sum in float64, then the bias, the ReLU of
// conv2d_bias_relu, and one rounding to y's dtype.
//
// x and the weight are widened to double once, in logical (N, C, D, H, W) and (C_out, C_in / groups,
// kD, kH, kW) order whatever their layout. Each output plane then accumulates one tap of one input
// channel at a time over the outputs whose window reads that tap inside the input (the others read
// padding, which adds zero): the same sum in another order, at a speed that lets the tests check the
// largest catalogue rows.
#include <algorithm>
#include <vector>

#include "conv/conv.hpp"
#include "core/host_values.hpp"
#include "core/parallel.hpp"
#include "solops/reference.hpp"

namespace solops::reference {
namespace {

// The outputs o of one axis whose tap at `offset` (t * dilation) reads inside the input:
// 0 <= o * stride - pad + offset < in.
struct OutputRange {
  int begin, end;
};

OutputRange reading_inside(int in, int out, int stride, int pad, int offset) {
  const int64_t low = int64_t{pad} - offset;               // o * stride >= low
  const int64_t high = int64_t{in} - 1 + pad - offset;     // o * stride <= high
  if (high < 0) return {0, 0};
  const int64_t begin = low <= 0 ? 0 : (low + stride - 1) / stride;
  const int64_t end = std::min<int64_t>(out, high / stride + 1);
  return {static_cast<int>(std::min<int64_t>(begin, end)), static_cast<int>(end)};
}

int64_t offset(const detail::ConvStrides& s, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) {
  return n * s.n + c * s.c + d * s.d + h * s.h + w * s.w;
}

// t's elements in logical order [outer][channels][D][H][W], widened to double.
std::vector<double> widened(const TensorRef& t, const detail::ConvStrides& s, int64_t outer, int64_t channels,
                            const std::array<int, 3>& sizes) {
  std::vector<double> values;
  values.reserve(static_cast<size_t>(outer * channels * sizes[0] * sizes[1] * sizes[2]));
  for (int64_t n = 0; n < outer; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int d = 0; d < sizes[0]; ++d) {
        for (int h = 0; h < sizes[1]; ++h) {
          for (int w = 0; w < sizes[2]; ++w) values.push_back(detail::load_value(t, offset(s, n, c, d, h, w)));
        }
      }
    }
  }
  return values;
}

}  // namespace

void conv(ConvOp op, const TensorRef& x, const TensorRef& weight, const TensorRef* bias, const TensorRef& y,
          const Conv& p) {
  const detail::ConvGeometry g = detail::validate_conv(op, detail::Placement::host, x, weight, bias, y, p);
  const detail::ConvStrides xs = detail::conv_strides(g, x), ws = detail::conv_strides(g, weight),
                            ys = detail::conv_strides(g, y);
  const std::vector<double> xv = widened(x, xs, g.batch, g.in_channels, g.in);
  const std::vector<double> wv = widened(weight, ws, g.out_channels, g.in_per_group, g.kernel);
  const int64_t in_plane = g.in_plane(), out_plane = g.out_plane();
  // One output plane an item: (image n, output channel co).
  detail::parallel_for(g.batch * g.out_channels, out_plane * g.in_per_group * g.taps(), [&](int64_t item) {
    const int64_t n = item / g.out_channels;
    const int co = static_cast<int>(item % g.out_channels);
    const int group = co / g.out_per_group;
    std::vector<double> sums(static_cast<size_t>(out_plane), bias ? detail::load_value(*bias, co) : 0.0);
    for (int ci = 0; ci < g.in_per_group; ++ci) {
      const double* plane = xv.data() + (n * g.in_channels + group * g.in_per_group + ci) * in_plane;
      const double* taps = wv.data() + (int64_t{co} * g.in_per_group + ci) * g.taps();
      for (int kd = 0; kd < g.kernel[0]; ++kd) {
        const int od_offset = kd * g.dilation[0];
        const OutputRange rd = reading_inside(g.in[0], g.out[0], g.stride[0], g.pad_before[0], od_offset);
        for (int kh = 0; kh < g.kernel[1]; ++kh) {
          const int oh_offset = kh * g.dilation[1];
          const OutputRange rh = reading_inside(g.in[1], g.out[1], g.stride[1], g.pad_before[1], oh_offset);
          for (int kw = 0; kw < g.kernel[2]; ++kw) {
            const int ow_offset = kw * g.dilation[2];
            const OutputRange rw = reading_inside(g.in[2], g.out[2], g.stride[2], g.pad_before[2], ow_offset);
            const double tap = taps[(kd * g.kernel[1] + kh) * g.kernel[2] + kw];
            for (int od = rd.begin; od < rd.end; ++od) {
              const int64_t id = int64_t{od} * g.stride[0] - g.pad_before[0] + od_offset;
              for (int oh = rh.begin; oh < rh.end; ++oh) {
                const int64_t ih = int64_t{oh} * g.stride[1] - g.pad_before[1] + oh_offset;
                // Where ow = 0 would read; the first ow of the range reads inside the row.
                const int64_t row = (id * g.in[1] + ih) * g.in[2] - g.pad_before[2] + ow_offset;
                double* out_row = sums.data() + (int64_t{od} * g.out[1] + oh) * g.out[2];
                for (int ow = rw.begin; ow < rw.end; ++ow) {
                  out_row[ow] += tap * plane[row + int64_t{ow} * g.stride[2]];
                }
              }
            }
          }
        }
      }
    }
    int64_t i = 0;
    for (int od = 0; od < g.out[0]; ++od) {
      for (int oh = 0; oh < g.out[1]; ++oh) {
        for (int ow = 0; ow < g.out[2]; ++ow, ++i) {
          const double sum = sums[static_cast<size_t>(i)];
          // relu(NaN) is NaN: the comparison is false for it.
          detail::store_value(y, offset(ys, n, co, od, oh, ow), g.relu && sum < 0 ? 0.0 : sum);
        }
      }
    }
  });
}

}  // namespace solops::reference
