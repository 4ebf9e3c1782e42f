// GroupNorm and InstanceNorm (spec §2.9-2.12, §6.4): the shape rules, the CPU references against
// values computed by hand (the running statistics' update and its empty cases included), one test per
// validation rule (a refused call writes nothing), and the cost models. The references are compared
// with PyTorch's on random shapes in tests/python/norm/test_group_norm_rules.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <iterator>
#include <utility>
#include <vector>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

// One forward call's host tensors: x cycling through `x_values`, weight and bias [C], running
// statistics [C], the outputs poisoned (mean and rstd of `stats`' shape).
struct SpatialCall {
  HostTensor x, weight, bias, running_mean, running_var, y, mean, rstd;

  SpatialCall(const Shape& shape, const std::vector<double>& x_values, Shape stats, DType dtype = DType::f32)
      : x(filled(shape, x_values, dtype)),
        weight(filled({shape[1]}, {2, -1, 0.5, 1}, dtype)),
        bias(filled({shape[1]}, {1, 0, -3, 0.25}, dtype)),
        running_mean(filled({shape[1]}, {0.5, -1, 2, 0})),
        running_var(filled({shape[1]}, {4, 0.25, 1, 2})),
        y(shape, dtype),
        mean(std::move(stats), DType::f32),
        rstd(mean.shape, DType::f32) {
    y.poison();
    mean.poison();
    rstd.poison();
  }
  void group_norm(const GroupNorm& p, bool affine = true) {
    const TensorRef w = weight.ref(), b = bias.ref(), m = mean.ref(), r = rstd.ref();
    reference::group_norm(x.ref(), affine ? &w : nullptr, affine ? &b : nullptr, y.ref(), &m, &r, p);
  }
  void instance_norm(const InstanceNorm& p, bool running, bool affine = true) {
    const TensorRef w = weight.ref(), b = bias.ref(), m = mean.ref(), r = rstd.ref();
    const TensorRef rm = running_mean.ref(), rv = running_var.ref();
    reference::instance_norm(x.ref(), running ? &rm : nullptr, running ? &rv : nullptr, affine ? &w : nullptr,
                             affine ? &b : nullptr, y.ref(), &m, &r, p);
  }
};

TEST(GroupNormShapeRule, OutputAndStatistics) {
  EXPECT_EQ(group_norm_output_shape(Shape{8, 128, 32, 32}, {.num_groups = 32}), (Shape{8, 128, 32, 32}));
  EXPECT_EQ(group_norm_stats_shape(Shape{8, 128, 32, 32}, {.num_groups = 32}), (Shape{8, 32}));
  EXPECT_EQ(group_norm_stats_shape(Shape{3, 6}, {.num_groups = 6}), (Shape{3, 6}));
  EXPECT_EQ(group_norm_stats_shape(Shape{0, 4, 5}, {.num_groups = 2}), (Shape{0, 2}));
  EXPECT_EQ(instance_norm_output_shape(Shape{4, 64, 30, 30}, {}), (Shape{4, 64, 30, 30}));
  EXPECT_EQ(instance_norm_stats_shape(Shape{4, 64, 30, 30}, {}), (Shape{4, 64}));
  EXPECT_EQ(instance_norm_stats_shape(Shape{2, 3}, {.use_input_stats = false}), (Shape{2, 3}));
}

TEST(GroupNormShapeRule, ChannelsMustDivideIntoGroups) {
  expect_error(
      [] {
        group_norm_output_shape(Shape{2, 6, 3}, {.num_groups = 4});
      },
      "group_norm: the C = 6 channels of x [2, 6, 3] are not divisible by num_groups = 4");
  expect_error([] { group_norm_output_shape(Shape{2, 6, 3}, {.num_groups = 0}); }, "num_groups = 0 must be > 0");
  expect_error([] { group_norm_output_shape(Shape{2, 6, 3}, {.num_groups = -2}); }, "num_groups = -2 must be > 0");
}

TEST(GroupNormShapeRule, RankEpsAndIndexRange) {
  expect_error([] { group_norm_output_shape(Shape{8}, {}); },
               "group_norm: x [8] must have rank >= 2: [B, C, *spatial], the channels in dim 1 (as F.group_norm)");
  expect_error([] { group_norm_output_shape(Shape{2, -4}, {}); }, "x [2, -4] has a negative dim");
  expect_error(
      [] {
        group_norm_output_shape(Shape{2, 4}, {.num_groups = 2, .eps = -1e-5});
      },
      "eps = -1e-05 must be finite and >= 0");
  expect_error(
      [] {
        group_norm_output_shape(Shape{1, 2, int64_t{1} << 30}, {.num_groups = 1});
      },
      "each group of x [1, 2, 1073741824] has C / G = 2 channels and (C / G) * S = 2147483648 elements");
  EXPECT_EQ(group_norm_stats_shape(Shape{1, 2, int64_t{1} << 30}, {.num_groups = 2}), (Shape{1, 2}));
  expect_error(
      [] {
        group_norm_output_shape(Shape{1, int64_t{1} << 31, 0}, {.num_groups = 1});
      },
      "C / G = 2147483648 channels");
}

TEST(InstanceNormShapeRule, OneSpatialElementNeedsRunningStatistics) {
  // F.instance_norm refuses one spatial element with use_input_stats, rank 2 included.
  expect_error(
      [] {
        instance_norm_output_shape(Shape{2, 4}, {});
      },
      "instance_norm: x [2, 4] has one spatial element an instance: use_input_stats needs more than one");
  expect_error([] { instance_norm_output_shape(Shape{2, 4, 1, 1}, {}); }, "x [2, 4, 1, 1] has one spatial element");
  EXPECT_EQ(instance_norm_output_shape(Shape{2, 4, 1}, {.use_input_stats = false}), (Shape{2, 4, 1}));
  EXPECT_EQ(instance_norm_output_shape(Shape{2, 4, 0}, {}), (Shape{2, 4, 0}));
  expect_error([] { instance_norm_output_shape(Shape{2, 4, 3}, {.momentum = kNaN}); }, "momentum = nan must be finite");
  expect_error([] { instance_norm_output_shape(Shape{2, 4, 3}, {.eps = kNaN}); }, "eps = nan must be finite");
  expect_error([] { instance_norm_output_shape(Shape{3}, {}); }, "x [3] must have rank >= 2");
  expect_error(
      [] {
        instance_norm_output_shape(Shape{1, 1, int64_t{1} << 31}, {});
      },
      "each plane of x [1, 1, 2147483648] has S = 2147483648 elements, 2^31 or more");
}

TEST(GroupNormShapeRule, Workspaces) {
  EXPECT_EQ(instance_norm_workspace_elements(Shape{4, 3, 5}, {}, true), 24);
  EXPECT_EQ(instance_norm_workspace_elements(Shape{4, 3, 5}, {}, false), 0);
  EXPECT_EQ(instance_norm_workspace_elements(Shape{4, 3, 5}, {.use_input_stats = false}, true), 0);
  EXPECT_EQ(group_norm_backward_workspace_elements(Shape{4, 6, 5}, {.num_groups = 3}), 48);
  EXPECT_EQ(group_norm_backward_workspace_elements(Shape{4, 6, 5}, {.num_groups = 3}, false), 0);
  EXPECT_EQ(instance_norm_backward_workspace_elements(Shape{4, 6, 5}, {}), 48);
}

TEST(GroupNormReference, GroupsByHand) {
  // x [1, 4, 2] in two groups of two channels: group 0 is {1, 3, -1, 5} (mean 2, variance 5), group 1
  // {0, 0, 4, 4} (mean 2, variance 4).
  SpatialCall call({1, 4, 2}, {1, 3, -1, 5, 0, 0, 4, 4}, {1, 2});
  call.group_norm({.num_groups = 2, .eps = 0});
  const double r0 = 1 / std::sqrt(5.0);
  // Weights {2, -1, 0.5, 1}, biases {1, 0, -3, 0.25}.
  expect_values(call.y, {-r0 * 2 + 1, r0 * 2 + 1, 3 * r0, -3 * r0, -1 * 0.5 - 3, -1 * 0.5 - 3, 1.25, 1.25});
  expect_values(call.mean, {2, 2});
  expect_values(call.rstd, {r0, 0.5});
  SpatialCall one_group({1, 4, 2}, {1, 3, -1, 5, 0, 0, 4, 4}, {1, 1});
  one_group.group_norm({.num_groups = 1, .eps = 0.5}, false);  // one group: LayerNorm over (C, S)
  expect_values(one_group.mean, {2});
  const double r = 1 / std::sqrt(4.5 + 0.5);
  expect_values(one_group.y, {-r, r, -3 * r, 3 * r, -2 * r, -2 * r, 2 * r, 2 * r});
}

TEST(GroupNormReference, EmptyGroupsHaveMeanZeroAndRstdNaN) {
  SpatialCall call({2, 4, 0}, {1}, {2, 2});
  call.group_norm({.num_groups = 2});
  expect_values(call.mean, {0, 0, 0, 0});
  expect_values(call.rstd, {kNaN, kNaN, kNaN, kNaN});
}

TEST(InstanceNormReference, InstancesAndTheRunningUpdateByHand) {
  // x [2, 2, 3]: instances {1, 2, 3} (mean 2, variance 2/3, unbiased 1), {0, 0, 6} (2, 8, 12),
  // {4, 4, 4} (4, 0, 0), {-1, 1, 3} (1, 8/3, 4).
  SpatialCall call({2, 2, 3}, {1, 2, 3, 0, 0, 6, 4, 4, 4, -1, 1, 3}, {2, 2});
  call.instance_norm({.momentum = 0.25, .eps = 1}, true, false);
  expect_values(call.mean, {2, 2, 4, 1});
  expect_values(call.rstd, {1 / std::sqrt(5.0 / 3), 1 / 3.0, 1.0, 1 / std::sqrt(11.0 / 3)});
  const double r0 = 1 / std::sqrt(5.0 / 3);
  expect_values(
      call.y, {-r0, 0, r0, -2 / 3.0, -2 / 3.0, 4 / 3.0, 0, 0, 0, -2 * std::sqrt(3.0 / 11), 0, 2 * std::sqrt(3.0 / 11)});
  // running = 0.75 * running + 0.25 * (the batch average): means (2 + 4) / 2 and (2 + 1) / 2, unbiased
  // variances (1 + 0) / 2 and (12 + 4) / 2.
  expect_values(call.running_mean, {0.75 * 0.5 + 0.25 * 3, 0.75 * -1 + 0.25 * 1.5});
  expect_values(call.running_var, {0.75 * 4 + 0.25 * 0.5, 0.75 * 0.25 + 0.25 * 8});
}

TEST(InstanceNormReference, ByTheRunningStatistics) {
  SpatialCall call({2, 2, 2}, {1, 3, -1, 0, 2, 4, 0, -2}, {2, 2});
  call.instance_norm({.use_input_stats = false, .eps = 0}, true);
  // Channel 0: (x - 0.5) / 2 * 2 + 1; channel 1: (x + 1) / 0.5 * -1.
  expect_values(call.y, {1.5, 3.5, 0, -2, 2.5, 4.5, -2, 2});
  expect_values(call.mean, {0.5, -1, 0.5, -1});
  expect_values(call.rstd, {0.5, 2, 0.5, 2});
  expect_values(call.running_mean, {0.5, -1});  // only read
  expect_values(call.running_var, {4, 0.25});
}

TEST(InstanceNormReference, EmptyBatchMakesTheRunningStatisticsNaNEmptyPlanesLeaveThem) {
  // As PyTorch's instance_norm: the batch average of no instances, and its batch norm's skip of
  // empty inputs.
  SpatialCall empty_batch({0, 2, 3}, {1}, {0, 2});
  empty_batch.instance_norm({}, true);
  expect_values(empty_batch.running_mean, {kNaN, kNaN});
  expect_values(empty_batch.running_var, {kNaN, kNaN});
  SpatialCall empty_planes({2, 2, 0}, {1}, {2, 2});
  empty_planes.instance_norm({}, true);
  expect_values(empty_planes.running_mean, {0.5, -1});
  expect_values(empty_planes.running_var, {4, 0.25});
  expect_values(empty_planes.rstd, {kNaN, kNaN, kNaN, kNaN});
}

TEST(GroupNormReference, NaNStaysInItsGroup) {
  SpatialCall call({1, 4, 2}, {kNaN, 1, 2, 3, 4, 5, 6, 8}, {1, 2});
  call.group_norm({.num_groups = 2}, false);
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(call.y.at(i))) << i;
  for (int64_t i = 4; i < 8; ++i) EXPECT_FALSE(std::isnan(call.y.at(i))) << i;
}

// The backward of one group of one channel by hand: x {0, 2} (mean 1, rstd 1 with eps 0), x_hat {-1, 1}.
TEST(GroupNormBackwardReference, ByHand) {
  HostTensor x = filled({1, 2, 2}, {0, 2, 1, 1}), dy = filled({1, 2, 2}, {1, 3, 2, -2});
  HostTensor weight = filled({2}, {2, 1}), mean = filled({1, 2}, {1, 1}), rstd = filled({1, 2}, {1, 1});
  HostTensor grad_x({1, 2, 2}, DType::f32), grad_weight({2}, DType::f32), grad_bias({2}, DType::f32);
  grad_x.poison();
  const TensorRef w = weight.ref(), gw = grad_weight.ref(), gb = grad_bias.ref();
  reference::instance_norm_backward(dy.ref(), x.ref(), &w, mean.ref(), rstd.ref(), grad_x.ref(), &gw, &gb, {});
  // Channel 0: h = dy * 2 = {2, 6}, mean(h) = 4, mean(h * x_hat) = 2: grad_x = {2 - 4 + 2, 6 - 4 - 2}.
  // Channel 1: x_hat = {0, 0}, h = {2, -2}: grad_x = h - mean(h) = {2, -2}.
  expect_values(grad_x, {0, 0, 2, -2});
  expect_values(grad_weight, {2, 0});  // sum dy * x_hat
  expect_values(grad_bias, {4, 0});    // sum dy
  // As one group of both channels: x_hat {-1, 1, 0, 0}, h {2, 6, 2, -2}: mean(h) = 2, mean(h x_hat) = 1.
  HostTensor group_mean = filled({1, 1}, {1}), group_rstd = filled({1, 1}, {1});
  reference::group_norm_backward(dy.ref(), x.ref(), &w, group_mean.ref(), group_rstd.ref(), grad_x.ref(), &gw, &gb,
                                 {.num_groups = 1});
  expect_values(grad_x, {2 - 2 + 1, 6 - 2 - 1, 0, -4});
  // Fixed statistics: grad_x = dy * weight * rstd.
  reference::instance_norm_backward(dy.ref(), x.ref(), &w, mean.ref(), rstd.ref(), grad_x.ref(), nullptr, nullptr,
                                    {.use_input_stats = false});
  expect_values(grad_x, {2, 6, 2, -2});
}

TEST(GroupNormValidation, ParametersOfXsDtypeAndTheChannels) {
  SpatialCall call({2, 4, 3}, {1}, {2, 2}, DType::bf16);
  HostTensor wide({4}, DType::f32), three({3}, DType::bf16);
  const TensorRef wide_ref = wide.ref(), three_ref = three.ref(), b = call.bias.ref();
  const auto run = [&](const TensorRef* weight, const TensorRef* bias) {
    reference::group_norm(call.x.ref(), weight, bias, call.y.ref(), nullptr, nullptr, {.num_groups = 2});
  };
  expect_error([&] { run(&wide_ref, &b); }, "reference::group_norm: weight: dtype f32 must be bf16");
  expect_error([&] { run(nullptr, &three_ref); }, "bias: shape [3] must be [4]");
  HostTensor stats({2, 4}, DType::f32);
  const TensorRef stats_ref = stats.ref();
  expect_error([&] { reference::group_norm(call.x.ref(), nullptr, nullptr, call.y.ref(), &stats_ref, nullptr, {2}); },
               "mean: shape [2, 4] must be [2, 2]");
  HostTensor f16_y({2, 4, 3}, DType::f16);
  expect_error([&] { reference::group_norm(call.x.ref(), nullptr, nullptr, f16_y.ref(), nullptr, nullptr, {2}); },
               "output: dtype f16 must be bf16");
}

TEST(InstanceNormValidation, RunningStatisticsRules) {
  SpatialCall call({2, 4, 3}, {1, 2}, {2, 4});
  HostTensor short_stats({3}, DType::f32), half_stats({4}, DType::f16);
  const TensorRef rm = call.running_mean.ref(), rv = call.running_var.ref();
  const TensorRef short_ref = short_stats.ref(), half_ref = half_stats.ref();
  const auto run = [&](const TensorRef* mean, const TensorRef* var, InstanceNorm p = {}) {
    reference::instance_norm(call.x.ref(), mean, var, nullptr, nullptr, call.y.ref(), nullptr, nullptr, p);
  };
  expect_error([&] { run(&short_ref, &rv); }, "reference::instance_norm: running_mean: shape [3] must be [4]");
  expect_error([&] { run(&rm, &half_ref); }, "running_var: dtype f16 must be f32");
  expect_error([&] { run(&rm, nullptr); }, "running_mean and running_var must be given together (both or neither)");
  expect_error([&] { run(nullptr, nullptr, {.use_input_stats = false}); },
               "use_input_stats=False normalizes by the running statistics: running_mean and running_var are required");
  expect_error([&] { run(&rm, &rm); }, "overlap in memory");
  expect_error([&] { run(&rm, &rv, {.momentum = std::numeric_limits<double>::infinity()}); },
               "momentum = inf must be finite");
  // Every refused call left the running statistics and the output as they were.
  expect_values(call.running_mean, {0.5, -1, 2, 0});
  expect_values(call.running_var, {4, 0.25, 1, 2});
  for (int64_t i = 0; i < call.y.numel(); ++i) EXPECT_TRUE(std::isnan(call.y.at(i))) << i;
}

TEST(InstanceNormValidation, RunningStatisticsMayNotOverlapAnInput) {
  SpatialCall call({1, 4, 3}, {1, 2}, {1, 4});
  TensorRef inside_x = call.x.ref();  // the first 4 elements of x seen as running_mean
  inside_x.rank = 1;
  inside_x.shape[0] = 4;
  inside_x.strides[0] = 1;
  const TensorRef rv = call.running_var.ref();
  expect_error(
      [&] {
        reference::instance_norm(call.x.ref(), &inside_x, &rv, nullptr, nullptr, call.y.ref(), nullptr, nullptr, {});
      },
      "overlap in memory");
}

TEST(GroupNormBackwardValidation, Rules) {
  HostTensor x({2, 4, 3}, DType::f16), dy({2, 4, 3}, DType::f16), grad_x({2, 4, 3}, DType::f16);
  HostTensor stats({2, 2}, DType::f32), wrong_stats({2, 4}, DType::f32), f32_dy({2, 4, 3}, DType::f32);
  expect_error(
      [&] {
        reference::group_norm_backward(dy.ref(), x.ref(), nullptr, wrong_stats.ref(), stats.ref(), grad_x.ref(),
                                       nullptr, nullptr, {2});
      },
      "reference::group_norm_backward: mean: shape [2, 4] must be [2, 2]");
  expect_error(
      [&] {
        reference::group_norm_backward(f32_dy.ref(), x.ref(), nullptr, stats.ref(), stats.ref(), grad_x.ref(), nullptr,
                                       nullptr, {2});
      },
      "grad_out: dtype f32 must be f16");
  expect_error(
      [&] {
        reference::instance_norm_backward(dy.ref(), x.ref(), nullptr, stats.ref(), stats.ref(), grad_x.ref(), nullptr,
                                          nullptr, {});
      },
      "reference::instance_norm_backward: mean: shape [2, 2] must be [2, 4]");
  expect_error(
      [&] {
        reference::group_norm_backward(dy.ref(), x.ref(), nullptr, stats.ref(), stats.ref(), x.ref(), nullptr, nullptr,
                                       {2});
      },
      "overlap in memory");
}

// channels_last x (4-D): the references walk it in place; each output equals the contiguous call's,
// read back in logical order (y and grad_x come out channels_last too).
TEST(GroupNormReference, ChannelsLastMatchesContiguous) {
  const Shape shape{2, 6, 3, 5};
  std::vector<double> pattern;
  for (int i = 0; i < 37; ++i) pattern.push_back(std::sin(1.7 * i) * 3 + 0.25 * (i % 5));
  const HostTensor x = filled(shape, pattern), dy = filled(shape, {0.5, -1, 2, 0.25, -0.75, 1.5, 3});
  HostTensor weight = filled({6}, {2, -1, 0.5, 1, 3, -0.25}), bias = filled({6}, {1, 0, -3, 0.25, 2, -1});
  const TensorRef w = weight.ref(), b = bias.ref();
  for (const int64_t groups : {int64_t{1}, int64_t{3}, int64_t{6}}) {
    HostTensor y(shape, DType::f32), mean({2, groups}, DType::f32), rstd({2, groups}, DType::f32);
    HostTensor x_in = x;
    const TensorRef mean_ref = mean.ref(), rstd_ref = rstd.ref();
    reference::group_norm(x_in.ref(), &w, &b, y.ref(), &mean_ref, &rstd_ref, {groups, 1e-5});
    HostTensor gx(shape, DType::f32), gw({6}, DType::f32), gb({6}, DType::f32), dy_in = dy;
    const TensorRef gw_ref = gw.ref(), gb_ref = gb.ref();
    reference::group_norm_backward(dy_in.ref(), x_in.ref(), &w, mean.ref(), rstd.ref(), gx.ref(), &gw_ref, &gb_ref,
                                   {groups});

    ChannelsLastTensor x_last(x), y_last(HostTensor(shape, DType::f32)), dy_last(dy), gx_last(HostTensor(shape, DType::f32));
    HostTensor mean_last({2, groups}, DType::f32), rstd_last({2, groups}, DType::f32);
    const TensorRef mean_last_ref = mean_last.ref(), rstd_last_ref = rstd_last.ref();
    reference::group_norm(x_last.ref(), &w, &b, y_last.ref(), &mean_last_ref, &rstd_last_ref, {groups, 1e-5});
    HostTensor gw_last({6}, DType::f32), gb_last({6}, DType::f32);
    const TensorRef gw_last_ref = gw_last.ref(), gb_last_ref = gb_last.ref();
    reference::group_norm_backward(dy_last.ref(), x_last.ref(), &w, mean.ref(), rstd.ref(), gx_last.ref(), &gw_last_ref,
                                   &gb_last_ref, {groups});
    EXPECT_EQ(y_last.logical().bytes, y.bytes) << groups;
    EXPECT_EQ(mean_last.bytes, mean.bytes) << groups;
    EXPECT_EQ(rstd_last.bytes, rstd.bytes) << groups;
    EXPECT_EQ(gx_last.logical().bytes, gx.bytes) << groups;
    // The parameter gradients add the same terms in another order.
    for (int64_t c = 0; c < 6; ++c) {
      EXPECT_NEAR(gw_last.at(c), gw.at(c), 1e-5) << c;
      EXPECT_NEAR(gb_last.at(c), gb.at(c), 1e-5) << c;
    }
  }
  // InstanceNorm, by x's statistics and by the running ones.
  for (const bool use_input_stats : {true, false}) {
    HostTensor running_mean = filled({6}, {0.5, -1, 2, 0}), running_var = filled({6}, {4, 0.25, 1, 2});
    const TensorRef rm = running_mean.ref(), rv = running_var.ref();
    HostTensor y(shape, DType::f32), x_in = x;
    reference::instance_norm(x_in.ref(), &rm, &rv, &w, &b, y.ref(), nullptr, nullptr, {.use_input_stats = use_input_stats});
    HostTensor running_mean_last = filled({6}, {0.5, -1, 2, 0}), running_var_last = filled({6}, {4, 0.25, 1, 2});
    const TensorRef rm_last = running_mean_last.ref(), rv_last = running_var_last.ref();
    ChannelsLastTensor x_last(x), y_last(HostTensor(shape, DType::f32));
    reference::instance_norm(x_last.ref(), &rm_last, &rv_last, &w, &b, y_last.ref(), nullptr, nullptr,
                             {.use_input_stats = use_input_stats});
    EXPECT_EQ(y_last.logical().bytes, y.bytes) << use_input_stats;
    EXPECT_EQ(running_mean_last.bytes, running_mean.bytes) << use_input_stats;
    EXPECT_EQ(running_var_last.bytes, running_var.bytes) << use_input_stats;
  }
}

// channels_last x: y, grad_out and grad_x must be in its memory format; other strided layouts
// (channels_last_3d among them) are refused by name.
TEST(GroupNormValidation, MemoryFormats) {
  const Shape shape{2, 4, 3, 5};
  const HostTensor x = filled(shape, {1, 2, 4, -1, 0.5});
  ChannelsLastTensor x_last(x), y_last(x);
  HostTensor y(shape, DType::f32), stats({2, 2}, DType::f32), grad_x(shape, DType::f32), dy = x;
  expect_error([&] { reference::group_norm(x_last.ref(), nullptr, nullptr, y.ref(), nullptr, nullptr, {2}); },
               "reference::group_norm: output must be in x's memory format (channels_last)");
  HostTensor x_in = x;
  expect_error([&] { reference::group_norm(x_in.ref(), nullptr, nullptr, y_last.ref(), nullptr, nullptr, {2}); },
               "reference::group_norm: output must be in x's memory format (contiguous)");
  expect_error(
      [&] {
        reference::group_norm_backward(dy.ref(), x_last.ref(), nullptr, stats.ref(), stats.ref(), y_last.ref(), nullptr,
                                       nullptr, {2});
      },
      "reference::group_norm_backward: grad_out must be in x's memory format (channels_last)");
  ChannelsLastTensor dy_last(x);
  expect_error(
      [&] {
        reference::group_norm_backward(dy_last.ref(), x_last.ref(), nullptr, stats.ref(), stats.ref(), grad_x.ref(),
                                       nullptr, nullptr, {2});
      },
      "reference::group_norm_backward: grad_x must be in x's memory format (channels_last)");
  // channels_last_3d: a 5-D x with the channels innermost.
  HostTensor x5({2, 4, 3, 5, 2}, DType::f32), y5({2, 4, 3, 5, 2}, DType::f32);
  TensorRef x5_ref = x5.ref();
  const int64_t strides[] = {4 * 3 * 5 * 2, 1, 5 * 2 * 4, 2 * 4, 4};
  std::copy(std::begin(strides), std::end(strides), x5_ref.strides.begin());
  expect_error([&] { reference::instance_norm(x5_ref, nullptr, nullptr, nullptr, nullptr, y5.ref(), nullptr, nullptr, {}); },
               "reference::instance_norm: x must be contiguous (row-major, e.g. NCHW) or channels_last; other strided",
               Status::unsupported);
}

TEST(GroupNormCost, SpecFormulas) {
  const double numel = 8.0 * 128 * 32 * 32;
  const Cost affine = group_norm_cost(Shape{8, 128, 32, 32}, DType::f16, {.num_groups = 32}, true);
  EXPECT_DOUBLE_EQ(affine.flops, 5 * numel);
  EXPECT_DOUBLE_EQ(affine.bytes, (2 * numel + 2 * 128) * 2);
  const Cost plain = group_norm_cost(Shape{8, 128, 32, 32}, DType::f16, {.num_groups = 32}, false);
  EXPECT_DOUBLE_EQ(plain.flops, 3 * numel);
  EXPECT_DOUBLE_EQ(plain.bytes, 2 * numel * 2);
  const Cost by_running =
      instance_norm_cost(Shape{8, 128, 32, 32}, DType::f16, {.use_input_stats = false}, false, true);
  EXPECT_DOUBLE_EQ(by_running.bytes, 2 * numel * 2 + 8 * 128);
  const Cost updating = instance_norm_cost(Shape{8, 128, 32, 32}, DType::bf16, {}, true, true);
  EXPECT_DOUBLE_EQ(updating.bytes, (2 * numel + 2 * 128) * 2 + 16 * 128);
  const Cost backward = group_norm_backward_cost(Shape{8, 128, 32, 32}, DType::f16, {.num_groups = 32}, true);
  EXPECT_DOUBLE_EQ(backward.flops, 12 * numel);
  EXPECT_DOUBLE_EQ(backward.bytes, (3 * numel + 3 * 128) * 2 + 8 * 8 * 32);
  const Cost instance_backward = instance_norm_backward_cost(Shape{8, 128, 32, 32}, DType::f32, {}, false);
  EXPECT_DOUBLE_EQ(instance_backward.bytes, (3 * numel + 2 * 128) * 4 + 8 * 8 * 128);
  expect_error(
      [] {
        group_norm_cost(Shape{8, 6}, DType::f32, {.num_groups = 4}, true);
      },
      "group_norm_cost: the C = 6 channels");
}

}  // namespace
}  // namespace solops::testing::norm
