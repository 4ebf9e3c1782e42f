// CPU references of BatchNormFwd in training mode and BatchNormBwd: each channel's statistics and
// sums in float64 over its B planes, as spec §2.6 and §2.8 write them (the mean, then the squared
// deviations from it), each output rounded once.
#include <cmath>
#include <limits>

#include "core/host_values.hpp"
#include "core/parallel.hpp"
#include "norm/batch_norm.hpp"
#include "solops/reference.hpp"

namespace solops::reference {
namespace {

double value_or(const TensorRef* t, int64_t i, double absent) { return t ? detail::load_value(*t, i) : absent; }

// f(i) for each element i of channel c, plane by plane.
template <class F>
void for_each_value(const detail::BatchNormPlanes& planes, int64_t c, F f) {
  for (int64_t b = 0; b < planes.batch; ++b) {
    const int64_t first = (b * planes.channels + c) * planes.plane;
    for (int64_t i = first; i < first + planes.plane; ++i) f(i);
  }
}

}  // namespace

void batch_norm_training(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                         const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef& save_mean,
                         const TensorRef& save_invstd, const BatchNormTraining& p) {
  const detail::BatchNormTrainingTensors t{x, running_mean, running_var, weight, bias, y, save_mean, save_invstd};
  const detail::BatchNormPlanes planes =
      detail::validate_batch_norm_training("reference::batch_norm_training", detail::Placement::host, t, p);
  const int64_t count = planes.batch * planes.plane;
  detail::parallel_for(planes.channels, count, [&](int64_t c) {
    if (count == 0) {
      // No values: the statistics are 0 / 0, and the running statistics stay as they are.
      detail::store_value(save_mean, c, std::numeric_limits<double>::quiet_NaN());
      detail::store_value(save_invstd, c, std::numeric_limits<double>::quiet_NaN());
      return;
    }
    double sum = 0;
    for_each_value(planes, c, [&](int64_t i) { sum += detail::load_value(x, i); });
    const double mean = sum / static_cast<double>(count);
    double squares = 0;
    for_each_value(planes, c, [&](int64_t i) {
      const double deviation = detail::load_value(x, i) - mean;
      squares += deviation * deviation;
    });
    const double var = squares / static_cast<double>(count);
    const double invstd = 1 / std::sqrt(var + p.eps);
    const double scale = value_or(weight, c, 1.0), shift = value_or(bias, c, 0.0);
    for_each_value(planes, c, [&](int64_t i) {
      detail::store_value(y, i, (detail::load_value(x, i) - mean) * invstd * scale + shift);
    });
    detail::store_value(save_mean, c, mean);
    detail::store_value(save_invstd, c, invstd);
    if (running_mean) {
      const double unbiased = squares / static_cast<double>(count - 1);
      detail::store_value(*running_mean, c,
                          (1 - p.momentum) * detail::load_value(*running_mean, c) + p.momentum * mean);
      detail::store_value(*running_var, c,
                          (1 - p.momentum) * detail::load_value(*running_var, c) + p.momentum * unbiased);
    }
  });
}

void batch_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& save_mean, const TensorRef& save_invstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias) {
  const detail::BatchNormBackwardTensors t{grad_out, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias};
  const detail::BatchNormPlanes planes =
      detail::validate_batch_norm_backward("reference::batch_norm_backward", detail::Placement::host, t);
  const auto count = static_cast<double>(planes.batch * planes.plane);
  detail::parallel_for(planes.channels, planes.batch * planes.plane, [&](int64_t c) {
    const double mean = detail::load_value(save_mean, c), invstd = detail::load_value(save_invstd, c);
    double sum_dy = 0, sum_dy_centered = 0;
    for_each_value(planes, c, [&](int64_t i) {
      const double dy = detail::load_value(grad_out, i);
      sum_dy += dy;
      sum_dy_centered += dy * (detail::load_value(x, i) - mean);
    });
    const double scale = value_or(weight, c, 1.0) * invstd;
    for_each_value(planes, c, [&](int64_t i) {
      const double centered = detail::load_value(x, i) - mean;
      const double dy = detail::load_value(grad_out, i);
      detail::store_value(grad_x, i,
                          scale * (dy - sum_dy / count - centered * invstd * invstd * sum_dy_centered / count));
    });
    if (grad_weight) detail::store_value(*grad_weight, c, invstd * sum_dy_centered);
    if (grad_bias) detail::store_value(*grad_bias, c, sum_dy);
  });
}

}  // namespace solops::reference
