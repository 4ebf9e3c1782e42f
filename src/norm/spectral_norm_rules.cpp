// SpectralNormPowerIterFwd: the shape rule, the split of W^T u, the validation of a call, the cost
// model and the entry points.
#include <algorithm>
#include <climits>

#include "core/integer.hpp"
#include "norm/spectral_norm.hpp"

namespace solops {
namespace detail {
namespace {

// The split of W^T u: at most kTargetBlocks blocks in all (four of 256 threads on each of the H200's
// 132 SMs, all resident at once, and no SM a block more than the others: 9 chunks of 2048 x 16384's
// 64 tiles put five blocks on 48 SMs and four on the rest), counted in tiles of kTileColumns columns
// (a 16-bit tile; f32 tiles are half as wide and so run twice the blocks), and no chunk under
// kMinChunkRows rows, so that each of a block's eight warps sums at least four rows and the
// partials' traffic stays a small share of W's (8 bytes a column per chunk against 2 or 4 a row).
constexpr int64_t kTargetBlocks = 4 * 132;
constexpr int64_t kTileColumns = 256;
constexpr int64_t kMinChunkRows = 32;

}  // namespace

SpectralNormPlan plan_spectral_norm(std::string_view op, std::span<const int64_t> x_shape,
                                    const SpectralNormPowerIter& p) {
  require(x_shape.size() == 2, op, "x ", shape_text(x_shape), " must have rank 2: the matrix W [O, I]");
  checked_product(op, "x", x_shape);  // so that every product of its sizes fits in int64
  SpectralNormPlan plan;
  plan.rows = x_shape[0];
  plan.cols = x_shape[1];
  require(plan.rows >= 0 && plan.cols >= 0, op, "x ", shape_text(x_shape), " has a negative dim");
  require(plan.cols <= INT_MAX, op, "x ", shape_text(x_shape),
          " has rows of 2^31 or more elements: columns are indexed in 32 bits");
  require(std::ranges::equal(p.normalized_shape, x_shape.last(1)), op, "normalized_shape ",
          shape_text(p.normalized_shape), " must be [", plan.cols, "]: (I,), x's last dim");
  require(p.n_iter >= 0, op, "n_iter = ", p.n_iter, " must be >= 0");
  require(p.eps >= 0, op, "eps = ", p.eps, " must be >= 0 and not NaN");
  plan.n_iter = p.n_iter;
  plan.eps = p.eps;
  const int64_t tiles = std::max<int64_t>(1, ceil_div(plan.cols, kTileColumns));
  const int64_t most_chunks = std::max<int64_t>(1, ceil_div(plan.rows, kMinChunkRows));
  const int64_t chunks = std::clamp<int64_t>(kTargetBlocks / tiles, 1, most_chunks);
  plan.chunk_rows = std::max<int64_t>(1, ceil_div(plan.rows, chunks));
  // Recounted from the rounded-up chunk_rows, so that no chunk is empty.
  plan.row_chunks = std::max<int64_t>(1, ceil_div(plan.rows, plan.chunk_rows));
  return plan;
}

SpectralNormPlan validate_spectral_norm(std::string_view op, Placement placement, const SpectralNormTensors& t,
                                        const SpectralNormPowerIter& p) {
  check_tensor(placement, op, "x", t.x);
  check_float_dtype(op, "x", t.x);
  const SpectralNormPlan plan = plan_spectral_norm(op, t.x.sizes(), p);
  const auto check_f32 = [&](std::string_view name, const TensorRef& tensor, std::span<const int64_t> shape) {
    check_tensor(placement, op, name, tensor);
    check_dtype(op, name, tensor, DType::f32);
    check_shape(op, name, tensor, shape);
  };
  const int64_t rows[] = {plan.rows}, cols[] = {plan.cols};
  check_f32("u", t.u, rows);
  check_f32("v", t.v, cols);
  check_f32("sigma", t.sigma, {});
  check_f32("u_out", t.u_out, rows);
  check_f32("v_out", t.v_out, cols);
  const NamedTensor outputs[] = {{"sigma", &t.sigma}, {"u_out", &t.u_out}, {"v_out", &t.v_out}};
  const NamedTensor tensors[] = {{"x", &t.x},         {"u", &t.u},         {"v", &t.v},
                                 {"sigma", &t.sigma}, {"u_out", &t.u_out}, {"v_out", &t.v_out}};
  check_outputs_apart(op, outputs, tensors);
  check_workspace(op, placement, plan.workspace_elements(), t.workspace, tensors,
                  "spectral_norm_power_iter_workspace_elements");
  return plan;
}

}  // namespace detail

int64_t spectral_norm_power_iter_workspace_elements(std::span<const int64_t> x_shape,
                                                    const SpectralNormPowerIter& p) {
  return detail::plan_spectral_norm("spectral_norm_power_iter", x_shape, p).workspace_elements();
}

Cost spectral_norm_power_iter_cost(std::span<const int64_t> x_shape, DType dtype, const SpectralNormPowerIter& p) {
  const detail::SpectralNormPlan plan = detail::plan_spectral_norm("spectral_norm_power_iter_cost", x_shape, p);
  const auto rows = static_cast<double>(plan.rows), cols = static_cast<double>(plan.cols);
  const auto steps = 4 * static_cast<double>(plan.n_iter) + 2;
  return {steps * rows * cols + steps * (rows + cols),
          rows * cols * static_cast<double>(dtype_size(dtype)) + 8 * (rows + cols) + 4};
}

void spectral_norm_power_iter(const TensorRef& x, const TensorRef& u, const TensorRef& v, const TensorRef& sigma,
                              const TensorRef& u_out, const TensorRef& v_out, const TensorRef* workspace,
                              const SpectralNormPowerIter& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "spectral_norm_power_iter";
  const detail::SpectralNormTensors t{x, u, v, sigma, u_out, v_out, workspace};
  const detail::SpectralNormPlan plan = detail::validate_spectral_norm(kOp, detail::Placement::device, t, p);
  detail::launch_spectral_norm(kOp, plan, t, stream);
}

}  // namespace solops
