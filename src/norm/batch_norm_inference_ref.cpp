// CPU reference of BatchNormInferenceFwd: each element in float64, (x - running_mean) /
// sqrt(running_var + eps) * weight + bias as spec §2.7 writes it (not the kernel's scale and shift),
// rounded once.
#include <cmath>

#include "core/host_values.hpp"
#include "core/parallel.hpp"
#include "norm/batch_norm_inference.hpp"
#include "solops/reference.hpp"

namespace solops::reference {

void batch_norm_inference(const TensorRef& x, const TensorRef* weight, const TensorRef* bias,
                          const TensorRef& running_mean, const TensorRef& running_var, const TensorRef& y,
                          const BatchNormInference& p) {
  const detail::BatchNormInferenceTensors t{x, weight, bias, running_mean, running_var, y};
  const detail::BatchNormPlanes planes =
      detail::validate_batch_norm_inference("reference::batch_norm_inference", detail::Placement::host, t, p);
  // One plane an item.
  detail::parallel_for(planes.batch * planes.channels, planes.plane, [&](int64_t plane) {
    const int64_t c = plane % planes.channels;
    const double mean = detail::load_value(running_mean, c);
    const double deviation = std::sqrt(detail::load_value(running_var, c) + p.eps);
    const double scale = weight ? detail::load_value(*weight, c) : 1.0;
    const double shift = bias ? detail::load_value(*bias, c) : 0.0;
    const int64_t first = plane * planes.plane;
    for (int64_t i = first; i < first + planes.plane; ++i) {
      detail::store_value(y, i, (detail::load_value(x, i) - mean) / deviation * scale + shift);
    }
  });
}

}  // namespace solops::reference
