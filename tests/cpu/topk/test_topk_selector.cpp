// TopkSelector (spec §5.1, §6.13): the shape rule, the CPU reference on hand-made rows (order, ties,
// NaN and infinities, -0, windows, groups, the 16-bit dtypes), the reference under the spec's tie-aware
// check on random rows (and the check refusing a wrong output), the kernel's keys against the spec's
// order, one test per validation and aliasing rule, and the cost model.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpu/topk/topk_checks.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/reference.hpp"
#include "solops/topk.hpp"
#include "topk/score_key.hpp"

namespace solops::testing::topk {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A call of `scores` [B, S, S_kv, G] holding `values` (cycled), without windows.
TopkCall make_call(const Shape& shape, const std::vector<double>& values, int64_t topk, bool sorted = false,
                   DType dtype = DType::f32) {
  TopkCall call{HostTensor(shape, dtype)};
  for (int64_t i = 0; i < call.scores.numel(); ++i) call.scores.set(i, values[static_cast<size_t>(i) % values.size()]);
  call.params = {topk, sorted};
  return call;
}

std::vector<int32_t> values_of(const HostTensor& t) {
  std::vector<int32_t> values;
  for (int64_t i = 0; i < t.numel(); ++i) values.push_back(int_at(t, i));
  return values;
}

using Ints = std::vector<int32_t>;

TEST(TopkSelectorShapeRule, OutputIsQueriesGroupsTopk) {
  EXPECT_EQ(topk_selector_output_shape(Shape{1, 32768, 65536, 1}, {2048}), (Shape{1, 32768, 1, 2048}));
  EXPECT_EQ(topk_selector_output_shape(Shape{2, 3, 10, 4}, {10}), (Shape{2, 3, 4, 10}));
  EXPECT_EQ(topk_selector_output_shape(Shape{0, 3, 10, 1}, {1}), (Shape{0, 3, 1, 1}));
  EXPECT_EQ(topk_selector_output_shape(Shape{2, 0, 10, 2}, {3, true}), (Shape{2, 0, 2, 3}));
}

TEST(TopkSelectorShapeRule, IndexScoreIsFourDWithGroups) {
  expect_error([] { topk_selector_output_shape(Shape{4, 8, 2}, {1}); },
               "topk_selector: index_score [4, 8, 2] must be 4-D [B, S, S_kv, G]");
  expect_error([] { topk_selector_output_shape(Shape{1, -2, 8, 1}, {1}); }, "index_score [1, -2, 8, 1] has a negative dim");
  expect_error([] { topk_selector_output_shape(Shape{1, 2, 8, 0}, {1}); },
               "index_score [1, 2, 8, 0] has G = 0 kv groups (only B and S may be 0)");
  expect_error([] { topk_selector_output_shape(Shape{int64_t{1} << 40, int64_t{1} << 40, 2, 1}, {1}); },
               "its sizes multiply past the int64 range");
  expect_error([] { topk_selector_output_shape(Shape{1, 1, int64_t{1} << 31, 1}, {1}); },
               "index_score has S_kv = 2147483648 keys, more than int32 positions address (2^31 - 1)");
  EXPECT_EQ(topk_selector_output_shape(Shape{1, 1, (int64_t{1} << 31) - 1, 1}, {1}), (Shape{1, 1, 1, 1}));
}

TEST(TopkSelectorShapeRule, TopkIsBetweenOneAndTheKeys) {
  expect_error([] { topk_selector_output_shape(Shape{1, 2, 8, 1}, {0}); }, "topk_selector: topk = 0 must be >= 1");
  expect_error([] { topk_selector_output_shape(Shape{1, 2, 8, 1}, {-3}); }, "topk = -3 must be >= 1");
  expect_error([] { topk_selector_output_shape(Shape{1, 2, 8, 1}, {9}); }, "topk = 9 must be <= S_kv = 8");
  expect_error([] { topk_selector_output_shape(Shape{1, 2, 0, 1}, {1}); }, "topk = 1 must be <= S_kv = 0");
  EXPECT_EQ(topk_selector_output_shape(Shape{1, 2, 8, 1}, {8}), (Shape{1, 2, 1, 8}));
}

TEST(TopkSelectorReference, HighestScoresInPositionOrderOrByScore) {
  TopkCall call = make_call({1, 1, 8, 1}, {3, 1, 4, 1, 5, 9, 2, 6}, 3);
  EXPECT_EQ(values_of(reference_output(call)), (Ints{4, 5, 7}));
  call.params.sorted = true;
  EXPECT_EQ(values_of(reference_output(call)), (Ints{5, 7, 4}));
  call.params.topk = 8;
  EXPECT_EQ(values_of(reference_output(call)), (Ints{5, 7, 4, 2, 0, 6, 1, 3}));
}

TEST(TopkSelectorReference, TiesTakeTheLowerPositions) {
  TopkCall call = make_call({1, 1, 6, 1}, {1, 2, 0, 2, 2, 2}, 2, true);
  EXPECT_EQ(values_of(reference_output(call)), (Ints{1, 3}));
  call.params.topk = 4;
  EXPECT_EQ(values_of(reference_output(call)), (Ints{1, 3, 4, 5}));
  call.params.topk = 5;
  call.params.sorted = false;
  EXPECT_EQ(values_of(reference_output(call)), (Ints{0, 1, 3, 4, 5}));
}

TEST(TopkSelectorReference, NaNRanksAboveInfinityAndTiesWithNaN) {
  // NaN of either sign ranks first (the two tie: the lower position first), -inf last.
  TopkCall call = make_call({1, 1, 6, 1}, {kInf, -kNaN, 5, kNaN, -kInf, -1e30}, 4, true);
  EXPECT_EQ(values_of(reference_output(call)), (Ints{1, 3, 0, 2}));
  call.params.topk = 6;
  EXPECT_EQ(values_of(reference_output(call)), (Ints{1, 3, 0, 2, 5, 4}));
}

TEST(TopkSelectorReference, NegativeZeroTiesPositiveZero) {
  TopkCall call = make_call({1, 1, 4, 1}, {-1, -0.0, 0.0, -2}, 1);
  EXPECT_EQ(values_of(reference_output(call)), (Ints{1}));
  call = make_call({1, 1, 3, 1}, {0.0, -0.0, -kInf}, 2, true);
  EXPECT_EQ(values_of(reference_output(call)), (Ints{0, 1}));
}

TEST(TopkSelectorReference, WindowsAreClampedAndShortOnesPadWithMinusOne) {
  // Four query rows of eight keys: a window past both ends (the whole row), [2, 5), an empty one
  // (end <= start) and one of a single key.
  TopkCall call = make_call({1, 4, 8, 1}, {3, 1, 4, 1, 5, 9, 2, 6}, 3);
  call.starts = int_tensor({1, 4}, {-3, 2, 6, 7});
  call.ends = int_tensor({1, 4}, {100, 5, 6, 8});
  EXPECT_EQ(values_of(reference_output(call)), (Ints{4, 5, 7, 2, 3, 4, -1, -1, -1, 7, -1, -1}));
  call.params.sorted = true;
  EXPECT_EQ(values_of(reference_output(call)), (Ints{5, 7, 4, 4, 2, 3, -1, -1, -1, 7, -1, -1}));
  // Only ends: causal windows of s + 1 keys.
  call.starts.reset();
  call.ends = int_tensor({1, 4}, {1, 2, 3, 4});
  call.params.sorted = false;
  EXPECT_EQ(values_of(reference_output(call)), (Ints{0, -1, -1, 0, 1, -1, 0, 1, 2, 0, 1, 2}));
}

TEST(TopkSelectorReference, GroupsSelectApartInSharedWindows) {
  // [1, 1, 4, 2]: group 0 sees 1, 4, 2, 8 and group 1 sees 7, 3, 5, 0 (G innermost); the window [1, 4).
  TopkCall call = make_call({1, 1, 4, 2}, {1, 7, 4, 3, 2, 5, 8, 0}, 2, true);
  call.starts = int_tensor({1, 1}, {1});
  EXPECT_EQ(values_of(reference_output(call)), (Ints{3, 1, 2, 1}));
}

TEST(TopkSelectorReference, HalfPrecisionScoresCompareWidened) {
  // 1.001 rounds to 1 in bf16, so that it ties 1 and the lower position goes first; f16 keeps them apart.
  TopkCall call = make_call({1, 1, 4, 1}, {0.5, 1.0, 1.001, -2}, 1, false, DType::bf16);
  EXPECT_EQ(values_of(reference_output(call)), (Ints{1}));
  call = make_call({1, 1, 4, 1}, {0.5, 1.0, 1.001, -2}, 1, false, DType::f16);
  EXPECT_EQ(values_of(reference_output(call)), (Ints{2}));
  call = make_call({1, 1, 3, 1}, {kNaN, kInf, 65504}, 3, true, DType::f16);
  EXPECT_EQ(values_of(reference_output(call)), (Ints{0, 1, 2}));
}

TEST(TopkSelectorReference, PassesTheTieAwareCheckOnRandomRows) {
  std::mt19937_64 rng(41);
  const Scores kinds[] = {Scores::normal, Scores::few_values, Scores::special};
  const DType dtypes[] = {DType::f32, DType::bf16, DType::f16};
  for (int c = 0; c < 60; ++c) {
    const Shape shape{1 + c % 2, 1 + c % 5, 1 + (c * 37) % 300, 1 + c % 3};
    TopkCall call{HostTensor(shape, dtypes[c % 3])};
    fill_scores(call.scores, rng, kinds[c % 3]);
    call.params = {1 + (c * 13) % shape[2], c % 4 == 1};
    if (c % 2 == 0) {
      std::vector<int32_t> starts, ends;
      std::uniform_int_distribution<int32_t> bound(-5, static_cast<int32_t>(shape[2]) + 5);
      for (int64_t row = 0; row < shape[0] * shape[1]; ++row) {
        starts.push_back(bound(rng));
        ends.push_back(bound(rng));
      }
      call.starts = int_tensor({shape[0], shape[1]}, starts);
      call.ends = int_tensor({shape[0], shape[1]}, ends);
    }
    const HostTensor out = reference_output(call);
    EXPECT_EQ(tie_aware_mismatch(call, out), "") << "case " << c << " " << call.describe();
  }
}

TEST(TopkSelectorTieAwareCheck, RefusesWrongOutputs) {
  TopkCall call = make_call({1, 1, 6, 1}, {3, 1, 4, 1, 5, 9}, 3);
  call.ends = int_tensor({1, 1}, {6});
  HostTensor out = reference_output(call);  // 2, 4, 5
  EXPECT_EQ(tie_aware_mismatch(call, out), "");
  set_int(out, 0, 1);  // score 1 instead of 4
  EXPECT_NE(tie_aware_mismatch(call, out), "");
  set_int(out, 0, 5);  // twice
  EXPECT_NE(tie_aware_mismatch(call, out), "");
  set_int(out, 0, 6);  // outside the window
  EXPECT_NE(tie_aware_mismatch(call, out), "");
  call.ends = int_tensor({1, 1}, {2});  // two keys: the third slot must be -1
  out = reference_output(call);
  EXPECT_EQ(tie_aware_mismatch(call, out), "");
  set_int(out, 2, 0);
  EXPECT_NE(tie_aware_mismatch(call, out), "");
  // A tie taken by the higher position passes: the check leaves the tie rule to the exact comparison.
  call = make_call({1, 1, 3, 1}, {2, 2, 1}, 1);
  out = reference_output(call);
  set_int(out, 0, 1);
  EXPECT_EQ(tie_aware_mismatch(call, out), "");
}

TEST(TopkSelectorKeys, OrderAsTheSpecOrdersScores) {
  std::vector<float> scores = {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                               -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                               -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::lowest(), std::bit_cast<float>(0x7FC00123u),
                               std::bit_cast<float>(0xFF800001u)};
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (int i = 0; i < 200; ++i) scores.push_back(normal(rng));
  for (float a : scores) {
    const uint32_t key_a = detail::score_key(std::bit_cast<uint32_t>(a));
    EXPECT_NE(key_a, 0u) << a;
    for (float b : scores) {
      const uint32_t key_b = detail::score_key(std::bit_cast<uint32_t>(b));
      EXPECT_EQ(key_a > key_b, score_above(a, b)) << a << " " << b;
      EXPECT_EQ(key_a == key_b, !score_above(a, b) && !score_above(b, a)) << a << " " << b;
    }
  }
}

TEST(TopkSelectorValidation, IndexScoreMustBeAFloatTensor) {
  TopkCall call = make_call({1, 2, 4, 1}, {1}, 2);
  HostTensor ints({1, 2, 4, 1}, DType::i32), out(call.output_shape(), DType::i32);
  expect_error([&] { reference::topk_selector(ints.ref(), nullptr, nullptr, out.ref(), call.params); },
               "reference::topk_selector: index_score: dtype i32 is not supported (f32, f16 or bf16)");
}

TEST(TopkSelectorValidation, WindowsMustBeInt32OfTheQueryRows) {
  TopkCall call = make_call({2, 3, 4, 1}, {1}, 2);
  HostTensor out(call.output_shape(), DType::i32), wide({2, 3}, DType::i64), flat({6}, DType::i32);
  HostTensor rows({2, 3}, DType::i32);
  const TensorRef wide_ref = wide.ref(), flat_ref = flat.ref(), rows_ref = rows.ref();
  const auto run = [&](const TensorRef* starts, const TensorRef* ends) {
    reference::topk_selector(call.scores.ref(), starts, ends, out.ref(), call.params);
  };
  expect_error([&] { run(&wide_ref, nullptr); }, "starts: dtype i64 must be i32");
  expect_error([&] { run(&flat_ref, nullptr); }, "starts: shape [6] must be [2, 3]");
  expect_error([&] { run(&rows_ref, &wide_ref); }, "ends: dtype i64 must be i32");
  expect_error([&] { run(nullptr, &flat_ref); }, "ends: shape [6] must be [2, 3]");
}

TEST(TopkSelectorValidation, IndexesMustBeInt32OfTheOutputShape) {
  TopkCall call = make_call({1, 2, 4, 2}, {1}, 3);
  HostTensor wide(call.output_shape(), DType::i64), transposed({1, 2, 3, 2}, DType::i32);
  expect_error([&] { reference::topk_selector(call.scores.ref(), nullptr, nullptr, wide.ref(), call.params); },
               "indexes: dtype i64 must be i32");
  expect_error([&] { reference::topk_selector(call.scores.ref(), nullptr, nullptr, transposed.ref(), call.params); },
               "indexes: shape [1, 2, 3, 2] must be [1, 2, 2, 3]");
}

TEST(TopkSelectorValidation, IndexScoreMustBeContiguous) {
  TopkCall call = make_call({1, 2, 4, 2}, {1}, 1);
  HostTensor out(call.output_shape(), DType::i32);
  TensorRef strided = call.scores.ref();  // a [1, 2, 2, 4] buffer seen as [1, 2, 4, 2]
  std::swap(strided.strides[2], strided.strides[3]);
  expect_error([&] { reference::topk_selector(strided, nullptr, nullptr, out.ref(), call.params); },
               "index_score must be contiguous", Status::unsupported);
}

TEST(TopkSelectorValidation, TheOpRunsOnCudaTensorsOnly) {
  TopkCall call = make_call({1, 2, 4, 1}, {1}, 1);
  HostTensor out(call.output_shape(), DType::i32);
  expect_error([&] { topk_selector(call.scores.ref(), nullptr, nullptr, out.ref(), call.params); },
               "topk_selector: index_score must be a CUDA tensor, got a CPU tensor");
}

TEST(TopkSelectorAliasing, IndexesMayNotOverlapAnInput) {
  // f32 scores [1, 1, 4, 1] and their own bytes seen as the int32 output [1, 1, 1, 4].
  TopkCall call = make_call({1, 1, 4, 1}, {1, 2, 3, 4}, 4);
  TensorRef over_scores = make_tensor(call.scores.bytes.data(), DType::i32, Shape{1, 1, 1, 4});
  expect_error([&] { reference::topk_selector(call.scores.ref(), nullptr, nullptr, over_scores, call.params); },
               "index_score and indexes overlap in memory");
  HostTensor ends = int_tensor({1, 1, 1, 4}, {4, 4, 4, 4});
  TensorRef ends_as_row = make_tensor(ends.bytes.data(), DType::i32, Shape{1, 1});
  expect_error([&] { reference::topk_selector(call.scores.ref(), nullptr, &ends_as_row, ends.ref(), call.params); },
               "ends and indexes overlap in memory");
}

TEST(TopkSelectorCost, SpecFormula) {
  // Spec §5.1: a compare a score; the scores, starts and ends read, the int32 indexes written.
  const Cost c = topk_selector_cost(Shape{1, 32768, 65536, 1}, DType::f32, {2048});
  const double scores = 32768.0 * 65536;
  EXPECT_DOUBLE_EQ(c.flops, scores);
  EXPECT_DOUBLE_EQ(c.bytes, scores * 4 + 32768.0 * 8 + 32768.0 * 2048 * 4);
  const Cost grouped = topk_selector_cost(Shape{2, 3, 100, 4}, DType::bf16, {7});
  EXPECT_DOUBLE_EQ(grouped.flops, 2400);
  EXPECT_DOUBLE_EQ(grouped.bytes, 2400.0 * 2 + 6 * 8 + 6 * 4 * 7 * 4);
  expect_error([] { topk_selector_cost(Shape{1, 2, 8, 1}, DType::f32, {9}); },
               "topk_selector_cost: topk = 9 must be <= S_kv = 8");
}

}  // namespace
}  // namespace solops::testing::topk
