// QKNorm on the GPU against the CPU reference (spec §2.18): every catalogue row, random shapes (fewer
// key heads than query heads, 2-D rows, the row lengths of the other norms), a large common offset,
// NaN propagation, pointers not 16-byte aligned, an empty batch, two normalized dims, CUDA graph
// capture and the device-side overlap rule. Outputs are poisoned first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "gpu/gpu_support.hpp"
#include "gpu/norm/norm_gpu_checks.hpp"
#include "host_tensor.hpp"
#include "manifest_rows.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

// The query and key of one qk_norm call: RMSNorm inputs with the same normalized dims.
struct QKInputs {
  NormInputs q, k;
};

QKInputs make_qk(const Shape& q_shape, const Shape& k_shape, DType dtype, std::mt19937_64& rng, bool affine = true,
                 int normalized_dims = 1, Values values = Values::normal) {
  return {make_inputs(Op::rms, q_shape, dtype, rng, affine, normalized_dims, values),
          make_inputs(Op::rms, k_shape, dtype, rng, affine, normalized_dims, values)};
}

std::string describe(const QKInputs& in) {
  return detail::concat("qk_norm q ", describe(in.q), ", k ", describe(in.k));
}

// qk_norm on the device (captured in a CUDA graph and replayed where `graph`) against the reference;
// the first disagreement in q_out or k_out, or "".
std::string compare_qk(QKInputs& in, size_t offset = 0, bool graph = false) {
  const QKNorm p{in.q.normalized_shape(), in.q.eps};
  const DType dtype = in.q.x.dtype;
  HostTensor q_expected(in.q.x.shape, dtype), k_expected(in.k.x.shape, dtype);
  std::optional<TensorRef> host_q_weight, host_k_weight;
  if (in.q.weight) host_q_weight = in.q.weight->ref();
  if (in.k.weight) host_k_weight = in.k.weight->ref();
  reference::qk_norm(in.q.x.ref(), in.k.x.ref(), optional_ref(host_q_weight), optional_ref(host_k_weight),
                     q_expected.ref(), k_expected.ref(), p);

  const size_t pad = offset * dtype_size(dtype);
  const std::unique_ptr<DeviceBuffer> q = upload(in.q.x, pad), k = upload(in.k.x, pad),
                                      q_weight = upload(in.q.weight, pad), k_weight = upload(in.k.weight, pad);
  DeviceBuffer q_out(in.q.x.bytes.size(), pad), k_out(in.k.x.bytes.size(), pad);
  q_out.poison();
  k_out.poison();
  std::optional<TensorRef> q_weight_ref, k_weight_ref;
  if (q_weight) q_weight_ref = device_ref(q_weight->data(), dtype, p.normalized_shape);
  if (k_weight) k_weight_ref = device_ref(k_weight->data(), dtype, p.normalized_shape);
  const auto launch = [&](cudaStream_t stream) {
    qk_norm(device_ref(q->data(), dtype, in.q.x.shape), device_ref(k->data(), dtype, in.k.x.shape),
            optional_ref(q_weight_ref), optional_ref(k_weight_ref), device_ref(q_out.data(), dtype, in.q.x.shape),
            device_ref(k_out.data(), dtype, in.k.x.shape), p, stream);
  };
  launch_maybe_in_graph(launch, graph);

  HostTensor q_actual(in.q.x.shape, dtype), k_actual(in.k.x.shape, dtype);
  q_out.download(q_actual.bytes.data());
  k_out.download(k_actual.bytes.data());
  const double tol = tolerance(Op::rms, dtype);
  const std::string difference = first_difference("q_out", q_expected, q_actual, tol, tol);
  return difference.empty() ? first_difference("k_out", k_expected, k_actual, tol, tol) : difference;
}

class QKNormGpu : public testing::GpuTest {};

TEST_F(QKNormGpu, EveryCatalogueRow) {
  // The workloads give x (the query) only; k has its shape (spec §2.18).
  std::mt19937_64 rng(2031);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("QKNormFwd");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const Shape shape = row["tensors"]["x"].get<Shape>();
    ASSERT_EQ(row["tensors"]["normalized"].get<Shape>(), Shape{shape.back()});
    QKInputs in = make_qk(shape, shape, testing::parse_dtype(row["dtype"]), rng);
    EXPECT_EQ(compare_qk(in), "") << row["workload"] << " " << describe(in);
  }
}

TEST_F(QKNormGpu, RandomShapes) {
  // [tokens, heads, head_dim] with fewer key heads (GQA), 2-D hidden-size rows (OLMo-2), and the
  // row lengths of the other norms (odd, vectorized, streaming).
  std::mt19937_64 rng(17);
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  std::uniform_int_distribution<int64_t> heads_of(1, 8);
  for (int c = 0; c < 120; ++c) {
    const int64_t head_dim = c % 2 == 0 ? std::vector<int64_t>{64, 128, 256, 72, 100}[c % 5] : draw_row_len(rng);
    std::uniform_int_distribution<int64_t> tokens_of(1, std::max<int64_t>(1, 100000 / head_dim / 16));
    const int64_t tokens = c % 4 == 0 ? 1 : std::min<int64_t>(tokens_of(rng), 200);
    const int64_t k_heads = heads_of(rng), q_heads = k_heads * heads_of(rng);
    Shape q{tokens, q_heads, head_dim}, k{tokens, k_heads, head_dim};
    if (c % 3 == 2) q = {tokens, head_dim}, k = {tokens, head_dim};
    QKInputs in = make_qk(q, k, dtypes[c % 3], rng, c % 5 != 2, 1, c % 9 == 4 ? Values::special : Values::normal);
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_qk(in, offset), "") << "case " << c << " " << describe(in) << " offset " << offset;
  }
}

TEST_F(QKNormGpu, EdgeCases) {
  std::mt19937_64 rng(18);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (int64_t row_len : {128, 3001, 20000}) {
      QKInputs offset = make_qk({16, row_len}, {4, row_len}, dtype, rng, true, 1, Values::offset);
      EXPECT_EQ(compare_qk(offset), "") << "large common offset " << describe(offset);
      QKInputs nan = make_qk({4, row_len}, {2, row_len}, dtype, rng);
      nan.k.x.set(row_len + 5, std::numeric_limits<double>::quiet_NaN());  // k's row 1 only
      EXPECT_EQ(compare_qk(nan), "") << "NaN " << describe(nan);
      EXPECT_EQ(compare_qk(nan, 1), "") << "unaligned " << describe(nan);
      EXPECT_EQ(compare_qk(nan, 3), "") << "unaligned " << describe(nan);
    }
  }
  QKInputs empty = make_qk({0, 8, 128}, {0, 2, 128}, DType::bf16, rng);
  EXPECT_EQ(compare_qk(empty), "") << "empty batch";
  QKInputs two_dims = make_qk({3, 4, 8, 16}, {3, 1, 8, 16}, DType::f16, rng, true, 2);
  EXPECT_EQ(compare_qk(two_dims), "") << describe(two_dims);
}

TEST_F(QKNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(19);
  QKInputs in = make_qk({64, 32, 128}, {64, 8, 128}, DType::bf16, rng);
  EXPECT_EQ(compare_qk(in, 0, true), "");
}

TEST_F(QKNormGpu, OutputsMayNotOverlapOnTheDevice) {
  DeviceBuffer q(4 * 64 * sizeof(float)), k(2 * 64 * sizeof(float)), out(4 * 64 * sizeof(float));
  const auto view = [](const DeviceBuffer& b, size_t offset, int64_t rows) {
    return make_tensor(static_cast<char*>(b.data()) + offset * sizeof(float), DType::f32, Shape{rows, 64}, 0);
  };
  try {
    qk_norm(view(q, 0, 4), view(k, 0, 2), nullptr, nullptr, view(out, 0, 4), view(out, 64, 2), {{64}});
    ADD_FAILURE() << "accepted k_out inside q_out";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("qk_norm: q_out and k_out overlap in memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace solops::testing::norm
