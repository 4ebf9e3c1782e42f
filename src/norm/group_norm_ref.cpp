// CPU references of GroupNorm and InstanceNorm, forward and backward: float64 throughout, as spec
// §2.9-2.12 writes them (two-pass statistics, the biased variance; the running statistics' update as
// PyTorch's instance_norm makes it), each output rounded once.
#include <cmath>
#include <limits>
#include <vector>

#include "core/host_values.hpp"
#include "norm/group_norm.hpp"
#include "solops/reference.hpp"

namespace solops::reference {
namespace {

using detail::load_value;
using detail::store_value;

double parameter(const TensorRef* t, int64_t c, double absent) { return t ? load_value(*t, c) : absent; }

// f(c, i) for each element of group `group`: its channel c and its offset i in x's layout, channel by
// channel.
template <class F>
void for_each_element(const detail::SpatialGroups& g, int64_t group, F f) {
  const int64_t b = group / g.groups, first_channel = group % g.groups * g.channels_per_group;
  for (int64_t c = first_channel; c < first_channel + g.channels_per_group; ++c) {
    for (int64_t s = 0; s < g.plane; ++s) f(c, g.offset(b, c, s));
  }
}

void forward(const detail::GroupNormTensors& t, const detail::SpatialGroups& g, const detail::GroupNormMath& math) {
  const int64_t len = g.group_len();
  // Each instance's mean and biased variance, for the running statistics' update.
  std::vector<double> instance_mean, instance_var;
  for (int64_t group = 0; group < g.group_count(); ++group) {
    const int64_t first_channel = group % g.groups * g.channels_per_group;
    double mean = 0, rstd = 0;
    if (math.input_stats) {
      double sum = 0;
      for_each_element(g, group, [&](int64_t, int64_t i) { sum += load_value(t.x, i); });
      // An empty group has mean 0 and rstd NaN, as PyTorch's.
      mean = len > 0 ? sum / static_cast<double>(len) : 0.0;
      double squares = 0;
      for_each_element(g, group, [&](int64_t, int64_t i) {
        squares += (load_value(t.x, i) - mean) * (load_value(t.x, i) - mean);
      });
      const double var = len > 0 ? squares / static_cast<double>(len) : std::numeric_limits<double>::quiet_NaN();
      rstd = 1 / std::sqrt(var + math.eps);
      if (math.update_running) {
        instance_mean.push_back(mean);
        instance_var.push_back(var);
      }
    } else {  // InstanceNorm by its running statistics: one channel a group
      mean = load_value(*t.running_mean, first_channel);
      rstd = 1 / std::sqrt(load_value(*t.running_var, first_channel) + math.eps);
    }
    if (t.mean) store_value(*t.mean, group, mean);
    if (t.rstd) store_value(*t.rstd, group, rstd);
    for_each_element(g, group, [&](int64_t c, int64_t i) {
      const double scale = parameter(t.weight, c, 1.0), shift = parameter(t.bias, c, 0.0);
      store_value(t.y, i, (load_value(t.x, i) - mean) * rstd * scale + shift);
    });
  }
  // PyTorch's empty planes leave the running statistics as they are (its batch norm skips empty
  // inputs); an empty batch averages no instances: NaN.
  if (!math.update_running || g.plane == 0) return;
  const double unbiased = static_cast<double>(g.plane) / static_cast<double>(g.plane - 1);
  for (int64_t c = 0; c < g.channels; ++c) {
    double mean_sum = 0, var_sum = 0;
    for (int64_t b = 0; b < g.batch; ++b) {
      mean_sum += instance_mean[b * g.channels + c];
      var_sum += instance_var[b * g.channels + c] * unbiased;
    }
    const auto batch = static_cast<double>(g.batch);
    store_value(*t.running_mean, c,
                (1 - math.momentum) * load_value(*t.running_mean, c) + math.momentum * (mean_sum / batch));
    store_value(*t.running_var, c,
                (1 - math.momentum) * load_value(*t.running_var, c) + math.momentum * (var_sum / batch));
  }
}

void backward(const detail::GroupNormBackwardTensors& t, const detail::SpatialGroups& g, bool centred) {
  const int64_t len = g.group_len();
  std::vector<double> grad_weight(static_cast<size_t>(g.channels)), grad_bias(static_cast<size_t>(g.channels));
  for (int64_t group = 0; group < g.group_count(); ++group) {
    const double mean = load_value(t.mean, group), rstd = load_value(t.rstd, group);
    // The group's means of h = grad_out * weight and of h * x_hat.
    double h_sum = 0, hx_sum = 0;
    for_each_element(g, group, [&](int64_t channel, int64_t i) {
      const double scale = parameter(t.weight, channel, 1.0);
      const double dy = load_value(t.grad_out, i), x_hat = (load_value(t.x, i) - mean) * rstd;
      grad_weight[channel] += dy * x_hat;
      grad_bias[channel] += dy;
      h_sum += dy * scale;
      hx_sum += dy * scale * x_hat;
    });
    const double h_mean = len > 0 ? h_sum / static_cast<double>(len) : 0.0;
    const double hx_mean = len > 0 ? hx_sum / static_cast<double>(len) : 0.0;
    for_each_element(g, group, [&](int64_t channel, int64_t i) {
      const double h = load_value(t.grad_out, i) * parameter(t.weight, channel, 1.0),
                   x_hat = (load_value(t.x, i) - mean) * rstd;
      store_value(t.grad_x, i, centred ? rstd * (h - h_mean - x_hat * hx_mean) : h * rstd);
    });
  }
  for (int64_t c = 0; c < g.channels; ++c) {
    if (t.grad_weight) store_value(*t.grad_weight, c, grad_weight[c]);
    if (t.grad_bias) store_value(*t.grad_bias, c, grad_bias[c]);
  }
}

}  // namespace

void group_norm(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                const TensorRef* mean, const TensorRef* rstd, const GroupNorm& p) {
  const detail::GroupNormTensors t{.x = x, .weight = weight, .bias = bias, .y = y, .mean = mean, .rstd = rstd};
  const detail::SpatialGroups g = detail::validate_group_norm("reference::group_norm", detail::Placement::host, t, p);
  forward(t, g, {.input_stats = true, .eps = p.eps});
}

void instance_norm(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                   const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef* mean,
                   const TensorRef* rstd, const InstanceNorm& p) {
  const detail::GroupNormTensors t{.x = x,
                                   .weight = weight,
                                   .bias = bias,
                                   .y = y,
                                   .mean = mean,
                                   .rstd = rstd,
                                   .running_mean = running_mean,
                                   .running_var = running_var};
  const detail::SpatialGroups g =
      detail::validate_instance_norm("reference::instance_norm", detail::Placement::host, t, p);
  forward(t, g, detail::instance_norm_math(t, p));
}

void group_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight, const TensorRef& mean,
                         const TensorRef& rstd, const TensorRef& grad_x, const TensorRef* grad_weight,
                         const TensorRef* grad_bias, const GroupNormBackward& p) {
  const detail::GroupNormBackwardTensors t{grad_out, x, weight, mean, rstd, grad_x, grad_weight, grad_bias, nullptr};
  backward(t, detail::validate_group_norm_backward("reference::group_norm_backward", detail::Placement::host, t, p),
           true);
}

void instance_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                            const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                            const TensorRef* grad_weight, const TensorRef* grad_bias, const InstanceNormBackward& p) {
  const detail::GroupNormBackwardTensors t{grad_out, x, weight, mean, rstd, grad_x, grad_weight, grad_bias, nullptr};
  backward(t,
           detail::validate_instance_norm_backward("reference::instance_norm_backward", detail::Placement::host, t, p),
           p.use_input_stats);
}

}  // namespace solops::reference
