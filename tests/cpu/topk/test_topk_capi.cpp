// The top-k family's C ABI: TopkSelector through its reference entry point, shape rule and cost model,
// and the status code and last-error message of bad arguments.
#include <gtest/gtest.h>

#include <string>

#include "cpu/topk/topk_checks.hpp"
#include "host_tensor.hpp"
#include "solops/solops.h"

namespace solops::testing::topk {
namespace {

void expect_failure(solops_status status, const std::string& fragment) {
  EXPECT_EQ(status, SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find(fragment), std::string::npos) << solops_last_error();
}

TEST(TopkSelectorCApi, ReferenceShapeAndCost) {
  HostTensor scores({1, 2, 5, 1}, DType::f32), out({1, 2, 1, 3}, DType::i32);
  const double values[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  for (int i = 0; i < 10; ++i) scores.set(i, values[i]);
  HostTensor ends = int_tensor({1, 2}, {5, 2});
  solops_topk_selector_params p{3, 1};
  solops_tensor c_scores = c_tensor(scores), c_out = c_tensor(out), c_ends = c_tensor(ends);
  ASSERT_EQ(solops_reference_topk_selector(&c_scores, nullptr, &c_ends, &c_out, &p), SOLOPS_OK) << solops_last_error();
  // Row 0: 5 (4), 4 (2), 3 (0); row 1, window [0, 2): 9 (0), 2 (1), then -1.
  const int32_t want[] = {4, 2, 0, 0, 1, -1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(int_at(out, i), want[i]) << "slot " << i;
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_topk_selector_output_shape(4, scores.shape.data(), &p, &rank, shape), SOLOPS_OK);
  EXPECT_EQ(rank, 4);
  EXPECT_EQ(shape[3], 3);
  solops_cost cost{};
  ASSERT_EQ(solops_topk_selector_cost(4, scores.shape.data(), SOLOPS_BF16, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.flops, 10);
  EXPECT_DOUBLE_EQ(cost.bytes, 10 * 2 + 2 * 8 + 6 * 4);
}

TEST(TopkSelectorCApi, ErrorsReturnAStatusAndAMessage) {
  HostTensor scores({1, 1, 4, 1}, DType::f32), out({1, 1, 1, 2}, DType::i32);
  solops_tensor c_scores = c_tensor(scores), c_out = c_tensor(out);
  solops_topk_selector_params p{5, 0};
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  expect_failure(solops_topk_selector_output_shape(4, scores.shape.data(), &p, &rank, shape),
                 "topk_selector: topk = 5 must be <= S_kv = 4");
  expect_failure(solops_topk_selector_output_shape(4, nullptr, &p, &rank, shape),
                 "solops_topk_selector_output_shape: index_score_shape is a null pointer");
  expect_failure(solops_topk_selector_cost(4, scores.shape.data(), SOLOPS_F32, nullptr, nullptr),
                 "solops_topk_selector_cost: params is a null pointer");
  p.topk = 2;
  expect_failure(solops_reference_topk_selector(nullptr, nullptr, nullptr, &c_out, &p),
                 "solops_reference_topk_selector: index_score is a null pointer");
  expect_failure(solops_topk_selector(&c_scores, nullptr, nullptr, &c_out, &p, nullptr),
                 "topk_selector: index_score must be a CUDA tensor");
}

}  // namespace
}  // namespace solops::testing::topk
