// CPU references of L1NormFwd and L2NormFwd (every element of x added, in float64, into its output,
// found from x's index with the reduced dims dropped; the result rounded once) and of WeightNormFwd
// (float64 slice norms, each element scaled by g / norm in float64 and rounded once).
#include <cmath>
#include <vector>

#include "core/host_values.hpp"
#include "norm/vector_norm.hpp"
#include "solops/reference.hpp"

namespace solops::reference {

void vector_norm(const TensorRef& x, const TensorRef& y, const VectorNorm& p) {
  const detail::ReductionPlan plan =
      detail::validate_vector_norm("reference::vector_norm", detail::Placement::host, x, y, nullptr, p);
  const std::span<const int64_t> shape = x.sizes();
  std::vector<double> sums(static_cast<size_t>(plan.outputs), 0.0);
  const int64_t elements = x.numel();
  for (int64_t i = 0; i < elements; ++i) {
    int64_t rest = i, output = 0, output_stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t index = rest % shape[d];
      rest /= shape[d];
      if (plan.is_reduced[d]) continue;
      output += index * output_stride;
      output_stride *= shape[d];
    }
    const double v = detail::load_value(x, i);
    sums[static_cast<size_t>(output)] += p.ord == 1 ? std::abs(v) : v * v;
  }
  for (int64_t o = 0; o < plan.outputs; ++o) {
    const double sum = sums[static_cast<size_t>(o)];
    detail::store_value(y, o, p.ord == 1 ? sum : std::sqrt(sum));
  }
}

void weight_norm(const TensorRef& v, const TensorRef& g, const TensorRef& y, const TensorRef& norm,
                 const WeightNorm& p) {
  const detail::WeightNormPlan plan =
      detail::validate_weight_norm("reference::weight_norm", detail::Placement::host, v, g, y, norm, nullptr, p);
  std::vector<double> sums(static_cast<size_t>(plan.slices), 0.0);
  const int64_t elements = v.numel();
  const auto slice_of = [&](int64_t i) { return static_cast<size_t>(i / plan.inner % plan.slices); };
  for (int64_t i = 0; i < elements; ++i) {
    const double value = detail::load_value(v, i);
    sums[slice_of(i)] += value * value;
  }
  for (int64_t k = 0; k < plan.slices; ++k) {
    detail::store_value(norm, k, std::sqrt(sums[static_cast<size_t>(k)]));
  }
  for (int64_t i = 0; i < elements; ++i) {
    const size_t k = slice_of(i);
    detail::store_value(y, i, detail::load_value(v, i) * (detail::load_value(g, static_cast<int64_t>(k)) /
                                                         std::sqrt(sums[k])));
  }
}

}  // namespace solops::reference
