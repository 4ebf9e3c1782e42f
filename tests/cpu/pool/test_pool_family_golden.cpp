// The CPU references against PyTorch for the rest of the pooling family: tests/golden/pool_family.json
// holds F.max_pool1d / avg_pool1d / max_pool3d / avg_pool3d / adaptive_max_pool2d /
// adaptive_avg_pool2d results that tests/golden/make_golden.py recorded on the GPU machine, and
// mean pooling from the spec §4.6 formula in float64 (spec §4.0–4.6).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/pool/golden_cases.hpp"
#include "solops/pool.hpp"
#include "solops/reference.hpp"

namespace {

namespace golden = solops::testing::golden;
using golden::json;
using solops::TensorRef;

const json& pool_family_file() {
  static const json file = golden::load("tests/golden/pool_family.json");
  return file;
}

// PyTorch's output_size: one int for both axes, or (H, W) whose None keeps that input size.
solops::AdaptivePool2d adaptive_params(const json& params) {
  const json& output_size = params.at("output_size");
  solops::AdaptivePool2d pool;
  for (size_t axis = 0; axis < 2; ++axis) {
    const json& size = output_size.is_array() ? output_size.at(axis) : output_size;
    if (!size.is_null()) pool.output_size[axis] = size.get<int64_t>();
  }
  return pool;
}

template <class Params>
Params op_params(const json& params) {
  if constexpr (std::is_same_v<Params, solops::AdaptivePool2d>) {
    return adaptive_params(params);
  } else {
    return golden::window_params<Params>(params);
  }
}

template <class Params>
using ShapeRule = std::vector<int64_t> (*)(std::span<const int64_t>, const Params&);
template <class Params>
using MaxReference = void (*)(const TensorRef&, const TensorRef&, const TensorRef*, const Params&);
template <class Params>
using MeanReference = void (*)(const TensorRef&, const TensorRef&, const Params&);

// Runs the reference of op (output with indices) on each of its golden cases.
template <class Params>
void check_max_pool_cases(const std::string& op, ShapeRule<Params> shape_rule, MaxReference<Params> reference) {
  golden::for_each_case(pool_family_file(), op, [&](const json& golden_case) {
    const auto pool = op_params<Params>(golden_case.at("params"));
    golden::check_max_case(golden_case, shape_rule(golden::input_shape(golden_case), pool),
                           [&](const TensorRef& x, const TensorRef& y, const TensorRef* indices) {
                             reference(x, y, indices, pool);
                           });
  });
}

template <class Params>
void check_mean_pool_cases(const std::string& op, ShapeRule<Params> shape_rule, MeanReference<Params> reference) {
  golden::for_each_case(pool_family_file(), op, [&](const json& golden_case) {
    const auto pool = op_params<Params>(golden_case.at("params"));
    golden::check_mean_case(golden_case, shape_rule(golden::input_shape(golden_case), pool),
                            [&](const TensorRef& x, const TensorRef& y, const TensorRef*) { reference(x, y, pool); });
  });
}

// Ragged cases carry the offsets and the (sequence, chunk) pairs; uniform ones have them null.
void check_mean_pooling_case(const json& golden_case) {
  const json& params = golden_case.at("params");
  solops::MeanPooling pool;
  pool.chunk_size = params.at("chunk_size").get<int64_t>();
  const auto x_shape = golden::input_shape(golden_case);
  if (params.at("offsets").is_null()) {
    golden::check_mean_case(golden_case, solops::mean_pooling_output_shape(x_shape, pool),
                            [&](const TensorRef& x, const TensorRef& y, const TensorRef*) {
                              solops::reference::mean_pooling(x, y, nullptr, nullptr, pool);
                            });
    return;
  }
  auto offsets = params.at("offsets").get<std::vector<int32_t>>();
  std::vector<int32_t> chunks;
  for (const json& chunk : params.at("indices")) {
    chunks.push_back(chunk.at(0).get<int32_t>());
    chunks.push_back(chunk.at(1).get<int32_t>());
  }
  const solops::RaggedSizes sizes{static_cast<int64_t>(offsets.size()) - 1, static_cast<int64_t>(chunks.size()) / 2};
  const std::array<int64_t, 1> offsets_shape{sizes.sequences + 1};
  const std::array<int64_t, 2> chunks_shape{sizes.chunks, 2};
  const TensorRef offsets_ref = solops::make_tensor(offsets.data(), solops::DType::i32, offsets_shape);
  const TensorRef chunks_ref = solops::make_tensor(chunks.data(), solops::DType::i32, chunks_shape);
  golden::check_mean_case(golden_case, solops::mean_pooling_output_shape(x_shape, pool, sizes),
                          [&](const TensorRef& x, const TensorRef& y, const TensorRef*) {
                            solops::reference::mean_pooling(x, y, &offsets_ref, &chunks_ref, pool);
                          });
}

TEST(PoolFamilyGolden, MaxPool1dMatchesPyTorch) {
  check_max_pool_cases<solops::Pool1d>("max_pool1d", solops::max_pool1d_output_shape, solops::reference::max_pool1d);
}

TEST(PoolFamilyGolden, AvgPool1dMatchesPyTorch) {
  check_mean_pool_cases<solops::Pool1d>("avg_pool1d", solops::avg_pool1d_output_shape, solops::reference::avg_pool1d);
}

TEST(PoolFamilyGolden, MaxPool3dMatchesPyTorch) {
  check_max_pool_cases<solops::Pool3d>("max_pool3d", solops::max_pool3d_output_shape, solops::reference::max_pool3d);
}

TEST(PoolFamilyGolden, AvgPool3dMatchesPyTorch) {
  check_mean_pool_cases<solops::Pool3d>("avg_pool3d", solops::avg_pool3d_output_shape, solops::reference::avg_pool3d);
}

TEST(PoolFamilyGolden, AdaptiveMaxPool2dMatchesPyTorch) {
  check_max_pool_cases<solops::AdaptivePool2d>("adaptive_max_pool2d", solops::adaptive_pool2d_output_shape,
                                               solops::reference::adaptive_max_pool2d);
}

TEST(PoolFamilyGolden, AdaptiveAvgPool2dMatchesPyTorch) {
  check_mean_pool_cases<solops::AdaptivePool2d>("adaptive_avg_pool2d", solops::adaptive_pool2d_output_shape,
                                                solops::reference::adaptive_avg_pool2d);
}

TEST(PoolFamilyGolden, MeanPoolingMatchesTheFormula) {
  golden::for_each_case(pool_family_file(), "mean_pooling", check_mean_pooling_case);
}

std::vector<int64_t> output_shape(const json& shape_case) {
  const auto op = shape_case.at("op").get<std::string>();
  const auto x_shape = golden::input_shape(shape_case);
  const json& params = shape_case.at("params");
  if (op == "max_pool1d") return solops::max_pool1d_output_shape(x_shape, op_params<solops::Pool1d>(params));
  if (op == "avg_pool1d") return solops::avg_pool1d_output_shape(x_shape, op_params<solops::Pool1d>(params));
  if (op == "max_pool3d") return solops::max_pool3d_output_shape(x_shape, op_params<solops::Pool3d>(params));
  if (op == "avg_pool3d") return solops::avg_pool3d_output_shape(x_shape, op_params<solops::Pool3d>(params));
  if (op == "adaptive_max_pool2d" || op == "adaptive_avg_pool2d") {
    return solops::adaptive_pool2d_output_shape(x_shape, op_params<solops::AdaptivePool2d>(params));
  }
  throw std::runtime_error("unknown golden op: " + op);
}

TEST(PoolFamilyGolden, OutputShapesMatchPyTorch) { golden::check_shape_cases(pool_family_file(), output_shape); }

}  // namespace
