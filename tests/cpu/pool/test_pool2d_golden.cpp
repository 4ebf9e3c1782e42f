// The CPU references against PyTorch: tests/golden/pool2d.json holds F.max_pool2d / F.avg_pool2d
// results that tests/golden/make_golden.py recorded on the GPU machine (spec §4.0–4.3).
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/pool/golden_cases.hpp"
#include "solops/pool.hpp"
#include "solops/reference.hpp"

namespace {

namespace golden = solops::testing::golden;
using golden::json;

const json& pool2d_file() {
  static const json file = golden::load("tests/golden/pool2d.json");
  return file;
}

std::vector<int64_t> output_shape(const std::string& op, const std::vector<int64_t>& input_shape,
                                  const solops::Pool2d& pool) {
  if (op == "max_pool2d") return solops::max_pool2d_output_shape(input_shape, pool);
  if (op == "avg_pool2d") return solops::avg_pool2d_output_shape(input_shape, pool);
  throw std::runtime_error("unknown golden op: " + op);
}

void check_max_pool_case(const json& golden_case) {
  const auto pool = golden::window_params<solops::Pool2d>(golden_case.at("params"));
  golden::check_max_case(
      golden_case, solops::max_pool2d_output_shape(golden::input_shape(golden_case), pool),
      [&pool](const solops::TensorRef& x, const solops::TensorRef& y, const solops::TensorRef* indices) {
        solops::reference::max_pool2d(x, y, indices, pool);
      });
}

void check_avg_pool_case(const json& golden_case) {
  const auto pool = golden::window_params<solops::Pool2d>(golden_case.at("params"));
  golden::check_mean_case(
      golden_case, solops::avg_pool2d_output_shape(golden::input_shape(golden_case), pool),
      [&pool](const solops::TensorRef& x, const solops::TensorRef& y, const solops::TensorRef*) {
        solops::reference::avg_pool2d(x, y, pool);
      });
}

TEST(Pool2dGolden, MaxPoolMatchesPyTorch) {
  golden::for_each_case(pool2d_file(), "max_pool2d", check_max_pool_case);
}

TEST(Pool2dGolden, AvgPoolMatchesPyTorch) {
  golden::for_each_case(pool2d_file(), "avg_pool2d", check_avg_pool_case);
}

TEST(Pool2dGolden, OutputShapesMatchPyTorch) {
  golden::check_shape_cases(pool2d_file(), [](const json& shape_case) {
    return output_shape(shape_case.at("op").get<std::string>(), golden::input_shape(shape_case),
                        golden::window_params<solops::Pool2d>(shape_case.at("params")));
  });
}

}  // namespace
