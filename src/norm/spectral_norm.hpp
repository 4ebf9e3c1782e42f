// SpectralNormPowerIterFwd (spec §2.21): the plan shared by the entry points (spectral_norm_rules.cpp),
// the CPU reference (spectral_norm_ref.cpp) and the kernels (spectral_norm.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "core/check.hpp"
#include "solops/norm.hpp"

namespace solops::detail {

// W^T u is summed by blocks of chunk_rows rows of a column tile; with more than one chunk each
// writes its f32 column sums to the workspace ([row_chunks, cols]) and a second kernel adds them in
// chunk order. The split is a function of O and I alone, so the sums' order (and the result) is the
// same on every run and for every dtype.
struct SpectralNormPlan {
  int64_t rows = 0, cols = 0;  // O and I
  int64_t n_iter = 0;
  double eps = 0;
  int64_t chunk_rows = 1, row_chunks = 1;

  int64_t workspace_elements() const { return n_iter > 0 && row_chunks > 1 ? row_chunks * cols : 0; }
};

// The shape rule (x of rank 2, I below 2^31: columns are indexed in 32 bits), normalized_shape
// (I,), n_iter >= 0, eps >= 0 and not NaN, and the split of W^T u.
SpectralNormPlan plan_spectral_norm(std::string_view op, std::span<const int64_t> x_shape,
                                    const SpectralNormPowerIter& p);

// The tensors of one call; the workspace may be null.
struct SpectralNormTensors {
  const TensorRef& x;
  const TensorRef& u;
  const TensorRef& v;
  const TensorRef& sigma;
  const TensorRef& u_out;
  const TensorRef& v_out;
  const TensorRef* workspace = nullptr;
};

// Every check of a call: the plan; x a float tensor; u, v and the outputs f32 of their shapes
// ([O], [I], sigma 0-d); the workspace f32 with at least workspace_elements() elements (or absent
// when none are needed); no output, nor the workspace, overlapping another tensor of the call.
SpectralNormPlan validate_spectral_norm(std::string_view op, Placement placement, const SpectralNormTensors& t,
                                        const SpectralNormPowerIter& p);

void launch_spectral_norm(std::string_view op, const SpectralNormPlan& plan, const SpectralNormTensors& t,
                          cudaStream_t stream);

}  // namespace solops::detail
