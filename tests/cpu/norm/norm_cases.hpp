// Helpers shared by the normalization family's CPU tests: the tensors of a SpectralNormPowerIter and a
// QKNorm call (host tensors filled from a pattern and compared with expected values: host_tensor.hpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {

using Shape = std::vector<int64_t>;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One reference call's host tensors: W [O, I] of `dtype` cycling through `w`, u and v through their
// values, the outputs poisoned.
struct SpectralCall {
  HostTensor x, u, v, sigma, u_out, v_out;

  SpectralCall(const Shape& shape, const std::vector<double>& w, const std::vector<double>& u_values,
               const std::vector<double>& v_values, DType dtype = DType::f32)
      : x(filled(shape, w, dtype)),
        u(filled({shape[0]}, u_values)),
        v(filled({shape[1]}, v_values)),
        sigma({}, DType::f32),
        u_out({shape[0]}, DType::f32),
        v_out({shape[1]}, DType::f32) {
    sigma.poison();
    u_out.poison();
    v_out.poison();
  }
  SpectralNormPowerIter params(int64_t n_iter, double eps = 1e-12) const { return {{x.shape[1]}, n_iter, eps}; }
  void run(int64_t n_iter, double eps = 1e-12) {
    reference::spectral_norm_power_iter(x.ref(), u.ref(), v.ref(), sigma.ref(), u_out.ref(), v_out.ref(),
                                        params(n_iter, eps));
  }
};

// q [2, 2, 2] and k [1, 2, 2] (GQA: fewer key heads), normalized over the head dim 2.
struct QKBuffers {
  HostTensor q = filled({2, 2, 2}, {3, 4, 0, 1, 1, 1, -2, 0}), k = filled({1, 2, 2}, {6, 8, 1, -1});
  HostTensor q_weight = filled({2}, {1, 2}), k_weight = filled({2}, {-1, 0.5});
  HostTensor q_out{{2, 2, 2}, DType::f32}, k_out{{1, 2, 2}, DType::f32};
  TensorRef qw = q_weight.ref(), kw = k_weight.ref();

  void run(const QKNorm& p) { reference::qk_norm(q.ref(), k.ref(), &qw, &kw, q_out.ref(), k_out.ref(), p); }
};

}  // namespace solops::testing::norm
