// CPU reference of SpectralNormPowerIterFwd: the spec's power iteration word for word, in float64
// (W read element by element, widened exactly), the outputs rounded once to f32.
#include <cmath>
#include <vector>

#include "core/host_values.hpp"
#include "norm/spectral_norm.hpp"
#include "solops/reference.hpp"

namespace solops::reference {

void spectral_norm_power_iter(const TensorRef& x, const TensorRef& u, const TensorRef& v, const TensorRef& sigma,
                              const TensorRef& u_out, const TensorRef& v_out, const SpectralNormPowerIter& p) {
  const detail::SpectralNormTensors t{x, u, v, sigma, u_out, v_out};
  const detail::SpectralNormPlan plan =
      detail::validate_spectral_norm("reference::spectral_norm_power_iter", detail::Placement::host, t, p);
  const auto rows = static_cast<size_t>(plan.rows), cols = static_cast<size_t>(plan.cols);
  const auto w = [&](size_t row, size_t col) { return detail::load_value(x, static_cast<int64_t>(row * cols + col)); };
  const auto load = [](const TensorRef& vector) {
    std::vector<double> values(static_cast<size_t>(vector.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = detail::load_value(vector, static_cast<int64_t>(i));
    return values;
  };
  // W v and W^T u, each sum in index order.
  const auto w_times = [&](const std::vector<double>& right) {
    std::vector<double> product(rows, 0.0);
    for (size_t row = 0; row < rows; ++row) {
      for (size_t col = 0; col < cols; ++col) product[row] += w(row, col) * right[col];
    }
    return product;
  };
  const auto w_transposed_times = [&](const std::vector<double>& left) {
    std::vector<double> product(cols, 0.0);
    for (size_t row = 0; row < rows; ++row) {
      for (size_t col = 0; col < cols; ++col) product[col] += w(row, col) * left[row];
    }
    return product;
  };
  // a / max(||a||, eps), as F.normalize: clamp_min keeps a NaN norm, which then spreads to every element.
  const auto normalize = [&](std::vector<double> a) {
    double squares = 0;
    for (double value : a) squares += value * value;
    const double norm = std::sqrt(squares);
    const double divisor = std::isnan(norm) || norm > plan.eps ? norm : plan.eps;
    for (double& value : a) value /= divisor;
    return a;
  };
  std::vector<double> left = load(u), right = load(v);
  for (int64_t step = 0; step < plan.n_iter; ++step) {
    right = normalize(w_transposed_times(left));
    left = normalize(w_times(right));
  }
  const std::vector<double> w_right = w_times(right);
  double dot = 0;
  for (size_t row = 0; row < rows; ++row) dot += left[row] * w_right[row];
  detail::store_value(sigma, 0, dot);
  for (size_t row = 0; row < rows; ++row) detail::store_value(u_out, static_cast<int64_t>(row), left[row]);
  for (size_t col = 0; col < cols; ++col) detail::store_value(v_out, static_cast<int64_t>(col), right[col]);
}

}  // namespace solops::reference
