// BatchNormFwd in training mode and BatchNormBwd (spec §2.6, §2.8, §6.3): the shape rules and the
// workspace sizing, the CPU references against values computed by hand, one test per validation and
// aliasing rule (a rejected call leaves the running statistics as they were), and the cost models.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <utility>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "norm/batch_norm.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

// x [2, 2, 2]: channel 0 holds -3, -1 (image 0) and 1, 3 (image 1): mean 0, biased variance 5, M2 20;
// channel 1 holds 2, 2 and 2, 6: mean 3, biased variance 3, M2 12.
const std::vector<double> kX = {-3, -1, 2, 2, 1, 3, 2, 6};

// One training forward's host tensors: the four [C] tensors in `parameter_dtype`, outputs poisoned.
// run() on x and y as given; run_channels_last() on the same values in channels_last storage, y read
// back in contiguous order.
struct TrainingCall {
  HostTensor x, mean, var, weight, bias, y, save_mean, save_invstd;

  TrainingCall(const Shape& shape, const std::vector<double>& x_values, DType dtype = DType::f32,
               DType parameter_dtype = DType::f32)
      : x(filled(shape, x_values, dtype)),
        mean(filled({shape[1]}, {0.5, -1}, parameter_dtype)),
        var(filled({shape[1]}, {2, 0.25}, parameter_dtype)),
        weight(filled({shape[1]}, {2, -0.5}, parameter_dtype)),
        bias(filled({shape[1]}, {1, -3}, parameter_dtype)),
        y(shape, dtype),
        save_mean({shape[1]}, DType::f32),
        save_invstd({shape[1]}, DType::f32) {
    y.poison();
    save_mean.poison();
    save_invstd.poison();
  }
  void run(bool affine = true, bool running = true, BatchNormTraining p = {}) {
    const TensorRef w = weight.ref(), b = bias.ref(), m = mean.ref(), v = var.ref();
    reference::batch_norm_training(x.ref(), running ? &m : nullptr, running ? &v : nullptr, affine ? &w : nullptr,
                                   affine ? &b : nullptr, y.ref(), save_mean.ref(), save_invstd.ref(), p);
  }
  void run_channels_last() {
    const TensorRef w = weight.ref(), b = bias.ref(), m = mean.ref(), v = var.ref();
    ChannelsLastTensor x_cl(x), y_cl(y);
    reference::batch_norm_training(x_cl.ref(), &m, &v, &w, &b, y_cl.ref(), save_mean.ref(), save_invstd.ref(), {});
    y = y_cl.logical();
  }
};

TEST(BatchNormTrainingShapeRule, WorkspaceOnlyForChannelsAClusterCannotHold) {
  // A cluster of 8 blocks of 256 threads holds 8 values a thread: 16384 a channel where every value
  // is its own vector (the workspace is sized for that, the widest plan).
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{8, 64, 32, 32}, {}), 0);
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{32, 64}, {}), 0);
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{16, 3, 1024}, {}), 0);
  // 16386 values: two passes, chunks of 2048 (256 threads, 8 values each), a float4 each.
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{2, 3, 8193}, {}), 3 * 9 * 4);
  // Rank 2 and C = 3: four channels a block, 64 threads and chunks of 512 each, 4096 values a cluster.
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{4096, 3}, {}), 0);
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{4097, 3}, {}), 3 * 9 * 4);
  // [4, 128, 1024, 1024]: 4 Mi values a channel, 2048 chunks.
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{4, 128, 1024, 1024}, {}), 128 * 2048 * 4);
  EXPECT_EQ(batch_norm_backward_workspace_elements(Shape{4, 128, 1024, 1024}), 128 * 2049 * 2);
  EXPECT_EQ(batch_norm_backward_workspace_elements(Shape{4, 256, 28, 28}), 0);
}

TEST(BatchNormTrainingShapeRule, XNeedsABatchAndAChannelDim) {
  expect_error([] { batch_norm_training_workspace_elements(Shape{8}, {}); },
               "batch_norm_training: x [8] must have rank >= 2: [B, C, *spatial], the channels in dim 1");
  expect_error([] { batch_norm_backward_workspace_elements(Shape{}); },
               "batch_norm_backward: x [] must have rank >= 2");
  expect_error([] { batch_norm_training_workspace_elements(Shape{2, -3}, {}); }, "x [2, -3] has a negative dim");
}

TEST(BatchNormTrainingShapeRule, TrainingNeedsMoreThanOneValueAChannel) {
  // F.batch_norm's "Expected more than 1 value per channel when training".
  expect_error([] { batch_norm_training_workspace_elements(Shape{1, 3}, {}); },
               "batch_norm_training: x [1, 3] has one value a channel (B · prod(spatial) = 1): training needs more "
               "than one, as F.batch_norm");
  expect_error([] { batch_norm_training_workspace_elements(Shape{1, 3, 1, 1}, {}); }, "has one value a channel");
  // No values at all (an empty batch or empty planes), or no channels, are fine; so is the backward.
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{0, 3, 4}, {}), 0);
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{1, 0}, {}), 0);
  EXPECT_EQ(batch_norm_backward_workspace_elements(Shape{1, 3}), 0);
}

TEST(BatchNormTrainingShapeRule, ParametersMustBeFinite) {
  expect_error([] { batch_norm_training_workspace_elements(Shape{2, 3}, {.eps = -1e-5}); },
               "batch_norm_training: eps = -1e-05 must be finite and >= 0");
  expect_error([] { batch_norm_training_workspace_elements(Shape{2, 3}, {.eps = kNaN}); }, "eps = nan must be finite");
  expect_error([] { batch_norm_training_workspace_elements(Shape{2, 3}, {.momentum = kNaN}); },
               "batch_norm_training: momentum = nan must be finite");
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  expect_error([] { batch_norm_training_workspace_elements(Shape{2, 3}, {.momentum = kInfinity}); },
               "momentum = inf must be finite");
  // Any finite momentum is PyTorch's to give (nn.BatchNorm's cumulative average passes 1 / n).
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{2, 3}, {.momentum = 1.5}), 0);
}

TEST(BatchNormTrainingShapeRule, AChannelHasFewerThan2To31Values) {
  expect_error([] { batch_norm_training_workspace_elements(Shape{2, 1, 1LL << 30}, {}); },
               "x [2, 1, 1073741824] has 2^31 or more values a channel (B · prod(spatial)): a channel's values are "
               "indexed in 32 bits");
  expect_error([] { batch_norm_backward_workspace_elements(Shape{1LL << 31, 1}); }, "has 2^31 or more values");
  EXPECT_GT(batch_norm_backward_workspace_elements(Shape{INT_MAX, 1}), 0);
}

TEST(BatchNormTrainingShapeRule, EveryPlanFitsTheReportedWorkspace) {
  // The workspace is sized for single elements; a launch of 16-byte vectors (8 half elements, 4
  // floats) must never need more, nor need one where none was asked for.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> log_size(0, 12);
  for (int draw = 0; draw < 4000; ++draw) {
    const detail::BatchNormPlanes planes{int64_t{1} << log_size(rng) >> 2, (int64_t{1} << log_size(rng) >> 3) + 1,
                                         int64_t{1} << log_size(rng)};
    if (planes.batch * planes.plane > INT_MAX) continue;
    const detail::BatchNormPlan widest = detail::plan_batch_norm(planes, 1);
    for (int vec : {4, 8}) {
      if (planes.plane % vec != 0) continue;
      const detail::BatchNormPlan plan = detail::plan_batch_norm(planes, vec);
      EXPECT_LE(detail::batch_norm_training_workspace(plan), detail::batch_norm_training_workspace(widest))
          << planes.batch << " " << planes.channels << " " << planes.plane << " vec " << vec;
      EXPECT_LE(detail::batch_norm_backward_workspace(plan), detail::batch_norm_backward_workspace(widest));
      EXPECT_GE(int64_t{plan.chunks} * plan.chunk_vectors(), plan.channel_vectors);
      EXPECT_TRUE(!plan.clustered || plan.chunks <= 8);
      // The fewest blocks: one block fewer would not hold the channel.
      EXPECT_TRUE(plan.chunks == 1 || (plan.chunks / 2) * plan.team() * 8 < plan.channel_vectors);
    }
  }
}

TEST(BatchNormTrainingShapeRule, ChannelsLastWorkspace) {
  // channels_last [8, 64, 32, 32] is 8192 rows of 64 channels: 32 channels a block of 8 threads each,
  // 64 values a block and channel, so 128 chunks in two passes.
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{8, 64, 32, 32}, {}, true), 64 * 128 * 4);
  EXPECT_EQ(batch_norm_backward_workspace_elements(Shape{8, 64, 32, 32}, true), 64 * 129 * 2);
  // The rank-2 plan's: [32, 64] is one block.
  EXPECT_EQ(batch_norm_training_workspace_elements(Shape{2, 64, 4, 4}, {}, true), 0);
  expect_error([] { batch_norm_training_workspace_elements(Shape{2, 3, 4}, {}, true); },
               "batch_norm_training: x [2, 3, 4]: channels_last applies to a 4-D x [B, C, H, W] only");
  expect_error([] { batch_norm_backward_workspace_elements(Shape{2, 3, 4, 5, 6}, true); },
               "batch_norm_backward: x [2, 3, 4, 5, 6]: channels_last applies to a 4-D x");
}

TEST(BatchNormTrainingReference, StatisticsByHand) {
  TrainingCall call({2, 2, 2}, kX);
  call.run(true, true, {.momentum = 0.1, .eps = 0});
  const double r0 = 1 / std::sqrt(5.0), r1 = 1 / std::sqrt(3.0);
  expect_values(call.save_mean, {0, 3});
  expect_values(call.save_invstd, {r0, r1});
  // y = (x - mean) * invstd * weight + bias: channel 0 x * r0 * 2 + 1, channel 1 (x - 3) * r1 * -0.5 - 3.
  expect_values(call.y, {-6 * r0 + 1, -2 * r0 + 1, 0.5 * r1 - 3, 0.5 * r1 - 3, 2 * r0 + 1, 6 * r0 + 1, 0.5 * r1 - 3,
                         -1.5 * r1 - 3});
  // Running: 0.9 * old + 0.1 * batch, with the unbiased variance M2 / (L - 1): 20 / 3 and 4.
  expect_values(call.mean, {0.9 * 0.5, 0.9 * -1 + 0.1 * 3});
  expect_values(call.var, {0.9 * 2 + 0.1 * 20 / 3, 0.9 * 0.25 + 0.1 * 4});
}

TEST(BatchNormTrainingReference, WithoutAffineOrRunningStatisticsAndWithEps) {
  TrainingCall call({2, 2, 2}, kX);
  call.run(false, false, {.momentum = 0.5, .eps = 1});
  const double r0 = 1 / std::sqrt(6.0), r1 = 1 / std::sqrt(4.0);
  expect_values(call.y, {-3 * r0, -1 * r0, -r1, -r1, r0, 3 * r0, -r1, 3 * r1});
  expect_values(call.save_invstd, {r0, r1});
  expect_values(call.mean, {0.5, -1});  // untouched
  expect_values(call.var, {2, 0.25});
}

TEST(BatchNormTrainingReference, ParametersOfXsDtype) {
  // Spec §6.3: weight, bias and the running statistics may be of x's dtype; they are updated in it.
  TrainingCall call({2, 2, 2}, kX, DType::bf16, DType::bf16);
  call.run(true, true, {.momentum = 1, .eps = 0});
  EXPECT_EQ(call.mean.at(1), 3);
  EXPECT_EQ(call.var.at(0), static_cast<double>(__float2bfloat16_rn(20.0f / 3)));
  EXPECT_NEAR(call.y.at(7), -1.5 / std::sqrt(3.0) - 3, 2e-2);
}

TEST(BatchNormTrainingReference, RankTwoIsOneValueAnImage) {
  // x [3, 2]: channel 0 holds 1, 2, 6 (mean 3, M2 14), channel 1 holds 0, 0, 3 (mean 1, M2 6).
  TrainingCall call({3, 2}, {1, 0, 2, 0, 6, 3});
  call.run(false, true, {.momentum = 0.25, .eps = 0});
  expect_values(call.save_mean, {3, 1});
  expect_values(call.save_invstd, {std::sqrt(3.0 / 14), 1 / std::sqrt(2.0)});
  expect_values(call.var, {0.75 * 2 + 0.25 * 7, 0.75 * 0.25 + 0.25 * 3});
}

TEST(BatchNormTrainingReference, ChannelsLastIsTheSameNormalization) {
  // x [2, 3, 2, 2] of distinct values: each channel's 8 values sit in other places in channels_last
  // storage, and every output must come out the same.
  const std::vector<double> values = {1, -2, 3, 0.5, -1, 2, 4, -3, 0.25, 6, -5, 1.5, 2, -0.75, 3.5, 7,
                                      -4, 0, 1, -1.25, 2.5, -6, 5, 0.125};
  TrainingCall contiguous({2, 3, 2, 2}, values), channels_last({2, 3, 2, 2}, values);
  contiguous.run();
  channels_last.run_channels_last();
  for (int64_t i = 0; i < contiguous.y.numel(); ++i) EXPECT_EQ(channels_last.y.at(i), contiguous.y.at(i)) << i;
  EXPECT_EQ(channels_last.save_mean.bytes, contiguous.save_mean.bytes);
  EXPECT_EQ(channels_last.save_invstd.bytes, contiguous.save_invstd.bytes);
  EXPECT_EQ(channels_last.mean.bytes, contiguous.mean.bytes);
  EXPECT_EQ(channels_last.var.bytes, contiguous.var.bytes);
}

TEST(BatchNormTrainingReference, NaNPoisonsItsChannelOnly) {
  TrainingCall call({2, 2, 2}, {-3, kNaN, 2, 2, 1, 3, 2, 6});
  call.run();
  EXPECT_TRUE(std::isnan(call.save_mean.at(0)) && std::isnan(call.mean.at(0)) && std::isnan(call.var.at(0)));
  for (int64_t i : {0, 1, 4, 5}) EXPECT_TRUE(std::isnan(call.y.at(i))) << i;
  EXPECT_EQ(call.save_mean.at(1), 3);
  EXPECT_FALSE(std::isnan(call.y.at(7)));
}

TEST(BatchNormTrainingReference, NoValuesSaveNaNAndLeaveTheRunningStatistics) {
  TrainingCall call({0, 2, 3}, {1});
  call.run();
  EXPECT_TRUE(std::isnan(call.save_mean.at(0)) && std::isnan(call.save_invstd.at(1)));
  expect_values(call.mean, {0.5, -1});
  expect_values(call.var, {2, 0.25});
}

// One backward's host tensors; grad_weight and grad_bias poisoned.
struct BackwardCall {
  HostTensor grad_out, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias;

  BackwardCall(const Shape& shape, const std::vector<double>& dy, const std::vector<double>& x_values,
               const std::vector<double>& mean, const std::vector<double>& invstd, DType dtype = DType::f32)
      : grad_out(filled(shape, dy, dtype)),
        x(filled(shape, x_values, dtype)),
        weight(filled({shape[1]}, {2, -0.5})),
        save_mean(filled({shape[1]}, mean)),
        save_invstd(filled({shape[1]}, invstd)),
        grad_x(shape, dtype),
        grad_weight({shape[1]}, DType::f32),
        grad_bias({shape[1]}, DType::f32) {
    grad_x.poison();
    grad_weight.poison();
    grad_bias.poison();
  }
  void run(bool affine = true) {
    const TensorRef w = weight.ref(), gw = grad_weight.ref(), gb = grad_bias.ref();
    reference::batch_norm_backward(grad_out.ref(), x.ref(), affine ? &w : nullptr, save_mean.ref(), save_invstd.ref(),
                                   grad_x.ref(), &gw, &gb);
  }
  // The same on x, grad_out and grad_x in channels_last storage, grad_x read back in contiguous order.
  void run_channels_last() {
    const TensorRef w = weight.ref(), gw = grad_weight.ref(), gb = grad_bias.ref();
    ChannelsLastTensor grad_out_cl(grad_out), x_cl(x), grad_x_cl(grad_x);
    reference::batch_norm_backward(grad_out_cl.ref(), x_cl.ref(), &w, save_mean.ref(), save_invstd.ref(),
                                   grad_x_cl.ref(), &gw, &gb);
    grad_x = grad_x_cl.logical();
  }
};

TEST(BatchNormBackwardReference, GradientsByHand) {
  // Channel 0 (mean 0, invstd 1 / sqrt(5)) takes grad_out 1 at x = -3 and 0 elsewhere: sum_dy 1,
  // sum(dy * (x - mean)) -3, so grad_x = w / sqrt(5) * (dy - 1/4 + 3x / 20); channel 1 a constant
  // grad_out 2, whose grad_x is 0.
  const double r0 = 1 / std::sqrt(5.0), r1 = 1 / std::sqrt(3.0);
  BackwardCall call({2, 2, 2}, {1, 0, 2, 2, 0, 0, 2, 2}, kX, {0, 3}, {r0, r1});
  call.run();
  expect_values(call.grad_bias, {1, 8});
  expect_values(call.grad_weight, {-3 * r0, 0});
  expect_values(call.grad_x, {2 * r0 * 0.3, 2 * r0 * -0.4, 0, 0, 2 * r0 * -0.1, 2 * r0 * 0.2, 0, 0});
  call.run(false);
  expect_values(call.grad_x, {r0 * 0.3, r0 * -0.4, 0, 0, r0 * -0.1, r0 * 0.2, 0, 0});
}

TEST(BatchNormBackwardReference, GradientsInXsDtypeAndLeftOut) {
  const double r0 = 1 / std::sqrt(5.0);
  BackwardCall call({2, 2, 2}, {1, 0, 2, 2, 0, 0, 2, 2}, kX, {0, 3}, {r0, 1}, DType::f16);
  HostTensor grad_weight({2}, DType::f16);
  const TensorRef gw = grad_weight.ref();
  reference::batch_norm_backward(call.grad_out.ref(), call.x.ref(), nullptr, call.save_mean.ref(),
                                 call.save_invstd.ref(), call.grad_x.ref(), &gw, nullptr);
  EXPECT_NEAR(grad_weight.at(0), -3 * r0, 1e-3);
  EXPECT_NEAR(call.grad_x.at(0), r0 * 0.3, 1e-3);
  EXPECT_TRUE(std::isnan(call.grad_bias.at(0)));  // not asked for: left as it was
}

TEST(BatchNormBackwardReference, ChannelsLastIsTheSameGradient) {
  const Shape shape{2, 3, 2, 2};
  const std::vector<double> dy = {0.5, -1, 2, 0.25, -3, 1, 1.5, -0.5, 4, -2, 0.75, 3};
  const std::vector<double> x = {1, -2, 3, 0.5, -1, 2, 4, -3, 0.25, 6, -5, 1.5, 2, -0.75, 3.5};
  BackwardCall contiguous(shape, dy, x, {0.5, -0.25, 1}, {0.75, 1.5, 0.5}),
      channels_last(shape, dy, x, {0.5, -0.25, 1}, {0.75, 1.5, 0.5});
  contiguous.run();
  channels_last.run_channels_last();
  for (int64_t i = 0; i < contiguous.grad_x.numel(); ++i) {
    EXPECT_EQ(channels_last.grad_x.at(i), contiguous.grad_x.at(i)) << i;
  }
  EXPECT_EQ(channels_last.grad_weight.bytes, contiguous.grad_weight.bytes);
  EXPECT_EQ(channels_last.grad_bias.bytes, contiguous.grad_bias.bytes);
}

TEST(BatchNormBackwardReference, NoValuesGiveZeroParameterGradients) {
  BackwardCall call({0, 2, 3}, {1}, {1}, {0, 0}, {1, 1});
  call.run();
  expect_values(call.grad_weight, {0, 0});
  expect_values(call.grad_bias, {0, 0});
}

TEST(BatchNormTrainingValidation, XMustBeAContiguousFloatTensor) {
  TrainingCall call({2, 2, 2}, kX);
  HostTensor integers({2, 2, 2}, DType::i32);
  expect_error(
      [&] {
        reference::batch_norm_training(integers.ref(), nullptr, nullptr, nullptr, nullptr, call.y.ref(),
                                       call.save_mean.ref(), call.save_invstd.ref(), {});
      },
      "reference::batch_norm_training: x: dtype i32 is not supported");
  TensorRef transposed = call.x.ref();
  std::swap(transposed.strides[1], transposed.strides[2]);
  expect_error(
      [&] {
        reference::batch_norm_training(transposed, nullptr, nullptr, nullptr, nullptr, call.y.ref(),
                                       call.save_mean.ref(), call.save_invstd.ref(), {});
      },
      "x must be contiguous", Status::unsupported);
}

TEST(BatchNormTrainingValidation, OutputInXsMemoryFormat) {
  TrainingCall call({2, 3, 2, 2}, kX);
  ChannelsLastTensor x_cl(call.x), y_cl(call.y);
  expect_error(
      [&] {
        reference::batch_norm_training(x_cl.ref(), nullptr, nullptr, nullptr, nullptr, call.y.ref(),
                                       call.save_mean.ref(), call.save_invstd.ref(), {});
      },
      "reference::batch_norm_training: output must be in x's memory format (channels_last)");
  expect_error(
      [&] {
        reference::batch_norm_training(call.x.ref(), nullptr, nullptr, nullptr, nullptr, y_cl.ref(),
                                       call.save_mean.ref(), call.save_invstd.ref(), {});
      },
      "output must be in x's memory format (contiguous)");
  TensorRef other = x_cl.ref();
  std::swap(other.strides[2], other.strides[3]);  // channels innermost, then H: neither layout
  expect_error(
      [&] {
        reference::batch_norm_training(other, nullptr, nullptr, nullptr, nullptr, y_cl.ref(), call.save_mean.ref(),
                                       call.save_invstd.ref(), {});
      },
      "x must be contiguous (row-major, e.g. NCHW) or channels_last", Status::unsupported);
}

// A training call with one tensor swapped for `bad` must fail with `message` and leave the running
// statistics as they were.
void expect_rejected(TrainingCall& call, const char* name, const TensorRef* bad, const char* message) {
  const HostTensor mean_before = call.mean, var_before = call.var;
  TensorRef m = call.mean.ref(), v = call.var.ref(), w = call.weight.ref(), b = call.bias.ref();
  TensorRef y = call.y.ref(), sm = call.save_mean.ref(), si = call.save_invstd.ref();
  const std::pair<const char*, TensorRef*> slots[] = {{"running_mean", &m}, {"running_var", &v}, {"weight", &w},
                                                      {"bias", &b},         {"output", &y},      {"save_mean", &sm},
                                                      {"save_invstd", &si}};
  const TensorRef* mean = &m;
  const TensorRef* var = &v;
  for (const auto& [slot, t] : slots) {
    if (std::string_view(slot) != name) continue;
    if (bad) *t = *bad;
    else if (t == &m) mean = nullptr;
    else var = nullptr;
  }
  expect_error([&] { reference::batch_norm_training(call.x.ref(), mean, var, &w, &b, y, sm, si, {}); }, message);
  EXPECT_EQ(call.mean.bytes, mean_before.bytes);
  EXPECT_EQ(call.var.bytes, var_before.bytes);
}

TEST(BatchNormTrainingValidation, TheChannelTensorsAreF32OrXsDtypeOfC) {
  TrainingCall call({2, 2, 2}, kX, DType::bf16);
  HostTensor half({2}, DType::f16), three({3}, DType::f32), column({2, 1}, DType::f32), same({2}, DType::bf16);
  const TensorRef half_ref = half.ref(), three_ref = three.ref(), column_ref = column.ref(), same_ref = same.ref();
  expect_rejected(call, "running_mean", &three_ref, "running_mean: shape [3] must be [2]");
  expect_rejected(call, "running_var", &half_ref, "running_var: dtype f16 must be f32 or x's dtype bf16");
  expect_rejected(call, "weight", &column_ref, "weight: shape [2, 1] must be [2]");
  expect_rejected(call, "bias", &half_ref, "bias: dtype f16 must be f32 or x's dtype bf16");
  expect_rejected(call, "running_var", nullptr, "running_mean and running_var must be given together (or neither)");
  // x's dtype is fine for any of them, mixed with f32.
  TensorRef m = call.mean.ref(), v = call.var.ref();
  reference::batch_norm_training(call.x.ref(), &m, &v, &same_ref, nullptr, call.y.ref(), call.save_mean.ref(),
                                 call.save_invstd.ref(), {});
}

TEST(BatchNormTrainingValidation, OutputsHaveTheirShapesAndDtypes) {
  TrainingCall call({2, 2, 2}, kX, DType::f16);
  HostTensor wrong_y({2, 2, 3}, DType::f16), f32_y({2, 2, 2}, DType::f32), half_stats({2}, DType::f16),
      long_stats({4}, DType::f32);
  const TensorRef a = wrong_y.ref(), b = f32_y.ref(), c = half_stats.ref(), d = long_stats.ref();
  expect_rejected(call, "output", &a, "output: shape [2, 2, 3] must be [2, 2, 2]");
  expect_rejected(call, "output", &b, "output: dtype f32 must be f16");
  expect_rejected(call, "save_mean", &c, "save_mean: dtype f16 must be f32");
  expect_rejected(call, "save_invstd", &d, "save_invstd: shape [4] must be [2]");
}

TEST(BatchNormTrainingAliasing, NothingMayShareAByteWithTheRunningStatistics) {
  TrainingCall call({2, 2, 2}, kX);
  const TensorRef mean = call.mean.ref(), save_invstd = call.save_invstd.ref();
  const TensorRef x_head = make_tensor(call.x.bytes.data(), DType::f32, Shape{2});
  expect_rejected(call, "running_var", &mean, "running_var and running_mean overlap in memory");
  expect_rejected(call, "bias", &mean, "bias and running_mean overlap in memory");
  expect_rejected(call, "running_var", &x_head, "x and running_var overlap in memory");
  expect_rejected(call, "save_mean", &save_invstd, "save_invstd and save_mean overlap in memory");
  const TensorRef x_as_y = call.x.ref();
  expect_rejected(call, "output", &x_as_y, "x and output overlap in memory");
}

TEST(BatchNormTrainingValidation, OneValueAChannelLeavesTheRunningStatistics) {
  TrainingCall call({1, 2}, {1, 2});
  expect_rejected(call, "", nullptr, "has one value a channel");
}

TEST(BatchNormBackwardValidation, GradOutAndGradXInXsMemoryFormat) {
  const Shape shape{2, 3, 2, 2};
  BackwardCall call(shape, {1, -1, 0.5}, {2, 0, -1, 3}, {0, 1, 2}, {1, 1, 1});
  ChannelsLastTensor x_cl(call.x), grad_out_cl(call.grad_out), grad_x_cl(call.grad_x);
  const auto run = [&](const TensorRef& grad_out, const TensorRef& x, const TensorRef& grad_x) {
    reference::batch_norm_backward(grad_out, x, nullptr, call.save_mean.ref(), call.save_invstd.ref(), grad_x, nullptr,
                                   nullptr);
  };
  expect_error([&] { run(call.grad_out.ref(), x_cl.ref(), grad_x_cl.ref()); },
               "reference::batch_norm_backward: grad_out must be in x's memory format (channels_last)");
  expect_error([&] { run(grad_out_cl.ref(), x_cl.ref(), call.grad_x.ref()); },
               "grad_x must be in x's memory format (channels_last)");
  expect_error([&] { run(grad_out_cl.ref(), call.x.ref(), call.grad_x.ref()); },
               "grad_out must be in x's memory format (contiguous)");
  // A tensor both contiguous and channels_last (C = 1) goes with either.
  BackwardCall one_channel({2, 1, 2, 2}, {1, -1, 0.5}, {2, 0, -1, 3}, {0}, {1});
  ChannelsLastTensor one_x(one_channel.x);
  reference::batch_norm_backward(one_channel.grad_out.ref(), one_x.ref(), nullptr, one_channel.save_mean.ref(),
                                 one_channel.save_invstd.ref(), one_channel.grad_x.ref(), nullptr, nullptr);
}

TEST(BatchNormBackwardValidation, EveryTensorsRule) {
  BackwardCall call({2, 2, 2}, {1}, kX, {0, 3}, {1, 1}, DType::bf16);
  HostTensor half({2}, DType::f16), three({3}, DType::f32), f32_grad({2, 2, 2}, DType::f32);
  HostTensor short_x({2, 2, 1}, DType::bf16);
  // One tensor of the call replaced at a time.
  const TensorRef good_weight = call.weight.ref();
  struct Call {
    TensorRef grad_out, mean, invstd, grad_x;
    const TensorRef* weight;
    const TensorRef* grad_weight = nullptr;
  };
  const Call good{call.grad_out.ref(), call.save_mean.ref(), call.save_invstd.ref(), call.grad_x.ref(), &good_weight};
  const auto run = [&](const Call& c) {
    reference::batch_norm_backward(c.grad_out, call.x.ref(), c.weight, c.mean, c.invstd, c.grad_x, c.grad_weight,
                                   nullptr);
  };
  const TensorRef half_ref = half.ref(), three_ref = three.ref(), weight_as_gradient = call.weight.ref();
  Call bad = good;
  bad.grad_out = short_x.ref();
  expect_error([&] { run(bad); }, "reference::batch_norm_backward: grad_out: shape [2, 2, 1] must be [2, 2, 2]");
  bad.grad_out = f32_grad.ref();
  expect_error([&] { run(bad); }, "grad_out: dtype f32 must be bf16");
  bad = good;
  bad.weight = &half_ref;
  expect_error([&] { run(bad); }, "weight: dtype f16 must be f32 or x's dtype bf16");
  bad = good;
  bad.mean = half.ref();
  expect_error([&] { run(bad); }, "save_mean: dtype f16 must be f32");
  bad = good;
  bad.invstd = three.ref();
  expect_error([&] { run(bad); }, "save_invstd: shape [3] must be [2]");
  bad = good;
  bad.grad_x = f32_grad.ref();
  expect_error([&] { run(bad); }, "grad_x: dtype f32 must be bf16");
  bad = good;
  bad.grad_weight = &three_ref;
  expect_error([&] { run(bad); }, "grad_weight: shape [3] must be [2]");
  bad = good;
  bad.grad_x = call.grad_out.ref();
  expect_error([&] { run(bad); }, "grad_out and grad_x overlap in memory");
  bad = good;
  bad.grad_weight = &weight_as_gradient;
  expect_error([&] { run(bad); }, "weight and grad_weight overlap in memory");
}

TEST(BatchNormCost, SpecFormulas) {
  const double numel = 4.0 * 128 * 1024 * 1024;
  const Cost forward = batch_norm_training_cost(Shape{4, 128, 1024, 1024}, DType::f16, {});
  EXPECT_DOUBLE_EQ(forward.flops, 10 * numel);
  EXPECT_DOUBLE_EQ(forward.bytes, 2 * numel * 2 + 16 * 128);
  const Cost backward = batch_norm_backward_cost(Shape{4, 128, 1024, 1024}, DType::f16);
  EXPECT_DOUBLE_EQ(backward.flops, 8 * numel);
  EXPECT_DOUBLE_EQ(backward.bytes, 3 * numel * 2 + 12 * 128);
  EXPECT_DOUBLE_EQ(batch_norm_backward_cost(Shape{32, 64}, DType::f32).bytes, 3.0 * 32 * 64 * 4 + 12 * 64);
  expect_error([] { batch_norm_training_cost(Shape{1, 4}, DType::f32, {}); },
               "batch_norm_training_cost: x [1, 4] has one value a channel");
}

}  // namespace
}  // namespace solops::testing::norm
