// What the normalization family's GPU tests share: the row norms (each op, its tolerance, one call's
// inputs and random values), device copies of host tensors, the first element outside a tolerance,
// random shapes, and the fixture of the tests that make their own calls.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "gpu/gpu_support.hpp"
#include "host_tensor.hpp"
#include "manifest_rows.hpp"
#include "solops/error.hpp"
#include "solops/tensor.hpp"

namespace solops::testing::norm {

using Shape = std::vector<int64_t>;

enum class Op { rms, layer, gemma, fused_rms, fused_layer, rms_quant, layer_quant, ada, group };

inline bool is_fused(Op op) { return op == Op::fused_rms || op == Op::fused_layer; }
inline bool is_quant(Op op) { return op == Op::rms_quant || op == Op::layer_quant; }
inline bool has_bias(Op op) {
  return op == Op::layer || op == Op::fused_layer || op == Op::layer_quant || op == Op::ada;
}
// Weight and bias always given: Gemma's weight, AdaLayerNorm's scale and shift.
inline bool affine_required(Op op) { return op == Op::gemma || op == Op::ada; }
// Normalized over the last dim only.
inline bool last_dim_only(Op op) { return is_fused(op) || op == Op::ada || op == Op::group; }
// Ops with a per-row f32 output beside y: the quantizing norms' scale, GroupRMSNorm's rstd.
inline bool has_row_output(Op op) { return is_quant(op) || op == Op::group; }

inline std::string op_name(Op op) {
  switch (op) {
    case Op::rms: return "rms_norm";
    case Op::layer: return "layer_norm";
    case Op::gemma: return "gemma_rms_norm";
    case Op::fused_rms: return "fused_add_rms_norm";
    case Op::fused_layer: return "fused_add_layer_norm";
    case Op::rms_quant: return "rms_norm_quant";
    case Op::layer_quant: return "layer_norm_quant";
    case Op::ada: return "ada_layer_norm";
    case Op::group: return "group_rms_norm";
  }
  return "";
}

// Spec §2.1, 2.2, 2.3, 2.4, 2.5, 2.17: atol = rtol.
inline double tolerance(Op op, DType dtype) {
  if (dtype == DType::f32) return 1e-5;
  if (dtype == DType::bf16) return op == Op::layer ? 1e-2 : 1.6e-2;
  return op == Op::layer || op == Op::fused_layer || op == Op::ada ? 1e-3 : 1e-2;
}

inline double default_eps(Op op) { return has_bias(op) ? 1e-5 : 1e-6; }

// One call's inputs. weight and bias are optional (gemma's weight is always there).
struct NormInputs {
  Op op;
  HostTensor x;
  std::optional<HostTensor> residual = std::nullopt, weight = std::nullopt, bias = std::nullopt;
  int normalized_dims = 1;
  double eps = 1e-6;

  Shape normalized_shape() const { return Shape(x.shape.end() - normalized_dims, x.shape.end()); }
  Shape scale_shape() const { return Shape(x.shape.begin(), x.shape.end() - normalized_dims); }
  Shape affine_shape() const {
    if (op == Op::ada) return x.shape;
    return op == Op::group ? Shape(x.shape.end() - 2, x.shape.end()) : normalized_shape();
  }
  DType output_dtype() const { return is_quant(op) ? DType::fp8_e4m3 : x.dtype; }
};

inline const TensorRef* optional_ref(std::optional<TensorRef>& t) { return t ? &*t : nullptr; }

// A [N, C, H, W] ref's strides set to channels_last's.
inline TensorRef with_channels_last(TensorRef t) {
  const auto strides = channels_last_strides(Shape(t.sizes().begin(), t.sizes().end()));
  std::copy(strides.begin(), strides.end(), t.strides.begin());
  return t;
}

// The first element of `actual` outside the tolerance of `expected`; "" when none is.
inline std::string first_difference(const char* what, HostTensor& expected, HostTensor& actual, double atol,
                                    double rtol) {
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double want = expected.at(i), got = actual.at(i);
    if (!testing::same_value(want, got) && !(std::abs(got - want) <= atol + rtol * std::abs(want))) {
      return detail::concat(what, "[", i, "] = ", got, ", reference ", want);
    }
  }
  return {};
}

// A copy of `host` on the device, `pad` bytes into its allocation; null when there is no tensor.
inline std::unique_ptr<DeviceBuffer> upload(const std::optional<HostTensor>& host, size_t pad) {
  if (!host) return nullptr;
  auto buffer = std::make_unique<DeviceBuffer>(host->bytes.size(), pad);
  buffer->upload(host->bytes.data());
  return buffer;
}

enum class Values { normal, offset, special };

// Random normal values; `offset` adds 1000 to every value (a large common offset), `special` makes
// about one value in 200 NaN and one in 200 infinite.
inline void fill(HostTensor& t, std::mt19937_64& rng, Values values = Values::normal) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 199);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = normal(rng) + (values == Values::offset ? 1000.0 : 0.0);
    if (values == Values::special) {
      const int p = pick(rng);
      if (p == 0) v = std::numeric_limits<double>::quiet_NaN();
      if (p == 1) v = -std::numeric_limits<double>::infinity();
    }
    t.set(i, v);
  }
}

inline NormInputs make_inputs(Op op, Shape shape, DType dtype, std::mt19937_64& rng, bool affine = true,
                              int normalized_dims = 1, Values values = Values::normal) {
  NormInputs in{op, HostTensor(std::move(shape), dtype)};
  in.normalized_dims = normalized_dims;
  in.eps = default_eps(op);
  fill(in.x, rng, values);
  if (is_fused(op)) {
    in.residual.emplace(in.x.shape, dtype);
    fill(*in.residual, rng);
  }
  if (affine || affine_required(op)) {
    in.weight.emplace(in.affine_shape(), dtype);
    fill(*in.weight, rng);
  }
  if ((affine || affine_required(op)) && has_bias(op)) {
    in.bias.emplace(in.affine_shape(), dtype);
    fill(*in.bias, rng);
  }
  return in;
}

inline std::string describe(const NormInputs& in) {
  return detail::concat(op_name(in.op), " x ", detail::shape_text(in.x.shape), " ", dtype_name(in.x.dtype),
                        " normalized dims ", in.normalized_dims, in.weight ? " weight" : "", in.bias ? " bias" : "");
}

// Calls test(row, x_shape, dtype) for every catalogue row of `op` with a 4-D x, for the channels_last
// tests: the contiguous tests take every row whole; here a row's channels are cut to keep it within
// 2^24 elements, so that the largest row keeps its channels of N·H·W values (the plan that passes
// over x twice) at a few of them and its float64 reference takes seconds, not minutes.
template <class Test>
void for_each_channels_last_catalogue_row(const char* op, Test test) {
  for (const auto& row : testing::catalogue_rows(op)) {
    Shape shape = row["tensors"]["x"].get<Shape>();
    if (shape.size() != 4) continue;
    const int64_t channel_values = shape[0] * shape[2] * shape[3];
    if (channel_values > 0) shape[1] = std::clamp<int64_t>((int64_t{1} << 24) / channel_values, 1, shape[1]);
    test(row, shape, testing::parse_dtype(row["dtype"]));
  }
}

// One case of the tests that walk a list of shapes.
struct ShapeAndType {
  Shape shape;
  DType dtype;
};

// Calls test(row, x_shape, dtype) for every catalogue row of `op`; every row normalizes x's last dim.
template <class Test>
void for_each_catalogue_row(const char* op, Test test) {
  const std::vector<nlohmann::json> rows = testing::catalogue_rows(op);
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const Shape shape = row["tensors"]["x"].get<Shape>();
    if (row["tensors"].contains("normalized")) {
      ASSERT_EQ(row["tensors"]["normalized"].get<Shape>(), Shape{shape.back()});
    }
    test(row, shape, testing::parse_dtype(row["dtype"]));
  }
}

// Row lengths: short rows (several per block), odd lengths (scalar path), multiples of the vector
// width, and rows beyond the register capacity (streaming kernel).
inline int64_t draw_row_len(std::mt19937_64& rng) {
  static const int64_t kLengths[] = {1, 3, 7, 8, 31, 33, 64, 100, 257, 520, 1000, 1023, 2048, 3000,
                                     4096, 4104, 5120, 5121, 8192, 8200, 12288, 16384, 16392, 20000};
  std::uniform_int_distribution<size_t> pick(0, std::size(kLengths) - 1);
  return kLengths[pick(rng)];
}

inline constexpr int kRandomCases = 120;
inline constexpr DType kRandomDtypes[] = {DType::f32, DType::f16, DType::bf16};

// The shape of random case c: one row every fourth case, 3-D [B, S, H] every third, two
// normalized dims [.., 8, N / 8] every seventh where allowed.
struct RandomShape {
  Shape shape;
  int normalized_dims = 1;
};

inline RandomShape draw_shape(std::mt19937_64& rng, int c, bool two_normalized_dims) {
  const int64_t row_len = draw_row_len(rng);
  // At most ~400 K elements a case, so the CPU reference stays quick.
  std::uniform_int_distribution<int64_t> rows_of(1, std::max<int64_t>(1, 400000 / row_len));
  const int64_t rows = c % 4 == 0 ? 1 : std::min<int64_t>(rows_of(rng), 300);
  RandomShape drawn{{rows, row_len}};
  if (c % 3 == 1 && rows % 2 == 0) drawn.shape = {2, rows / 2, row_len};
  if (two_normalized_dims && c % 7 == 3 && row_len % 8 == 0) {
    drawn.shape.back() = row_len / 8;
    drawn.shape.insert(drawn.shape.end() - 1, 8);
    drawn.normalized_dims = 2;
  }
  return drawn;
}

inline Values draw_values(int c) { return c % 9 == 4 ? Values::special : Values::normal; }

// A shape of rank 1 to 4 for the reductions' random cases: odd, power-of-two and long dims, at most
// 2M elements so that the CPU reference stays quick.
inline Shape draw_reduction_shape(std::mt19937_64& rng) {
  static const int64_t kSizes[] = {1, 2, 3, 7, 8, 31, 64, 100, 257, 1000, 4097, 8192, 33000};
  std::uniform_int_distribution<int> rank_of(1, 4);
  std::uniform_int_distribution<size_t> size_of(0, std::size(kSizes) - 1);
  Shape shape;
  const int rank = rank_of(rng);
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    int64_t size = kSizes[size_of(rng)];
    while (numel * size > 2'000'000) size = std::max<int64_t>(1, size / 8);
    shape.push_back(size);
    numel *= size;
  }
  return shape;
}

// The call throws solops::Error with `fragment` in its message.
template <class Call>
void expect_message(Call call, const std::string& fragment) {
  try {
    call();
    ADD_FAILURE() << "accepted: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// The fixture of the tests that make their own calls (the row norms' and the backward's files).
class NormGpuCalls : public testing::GpuTest {};

}  // namespace solops::testing::norm
