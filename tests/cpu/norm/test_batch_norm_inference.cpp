// BatchNormInference (spec §2.7, §6.3): the shape rule, the CPU reference against values computed by
// hand, one test per validation and aliasing rule, and the cost model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

// One reference call's host tensors: x of `dtype` cycling through `x_values`, the four f32 [C]
// parameters (C = shape[1]) from their values, y poisoned.
struct BatchNormCall {
  HostTensor x, weight, bias, mean, var, y;

  BatchNormCall(const Shape& shape, const std::vector<double>& x_values, DType dtype = DType::f32)
      : x(filled(shape, x_values, dtype)),
        weight(filled({shape[1]}, {2, -1, 0.5})),
        bias(filled({shape[1]}, {1, 0, -3})),
        mean(filled({shape[1]}, {0.5, -1, 2})),
        var(filled({shape[1]}, {4, 0.25, 1})),
        y(shape, dtype) {
    y.poison();
  }
  void run(bool affine = true, BatchNormInference p = {}) {
    const TensorRef w = weight.ref(), b = bias.ref();
    reference::batch_norm_inference(x.ref(), affine ? &w : nullptr, affine ? &b : nullptr, mean.ref(), var.ref(),
                                    y.ref(), p);
  }
};

TEST(BatchNormInferenceShapeRule, OutputIsXsShape) {
  EXPECT_EQ(batch_norm_inference_output_shape(Shape{4, 128, 1024, 1024}, {}), (Shape{4, 128, 1024, 1024}));
  EXPECT_EQ(batch_norm_inference_output_shape(Shape{32, 64}, {}), (Shape{32, 64}));
  EXPECT_EQ(batch_norm_inference_output_shape(Shape{0, 3, 5}, {}), (Shape{0, 3, 5}));
  EXPECT_EQ(batch_norm_inference_output_shape(Shape{2, 0}, {.eps = 0}), (Shape{2, 0}));
}

TEST(BatchNormInferenceShapeRule, XNeedsABatchAndAChannelDim) {
  // F.batch_norm refuses a 1-D input too (spec §6.11 follows PyTorch).
  expect_error([] { batch_norm_inference_output_shape(Shape{8}, {}); },
               "batch_norm_inference: x [8] must have rank >= 2: [B, C, *spatial], the channels in dim 1");
  expect_error([] { batch_norm_inference_output_shape(Shape{}, {}); }, "x [] must have rank >= 2");
  expect_error([] { batch_norm_inference_output_shape(Shape{2, -3}, {}); }, "x [2, -3] has a negative dim");
}

TEST(BatchNormInferenceShapeRule, EpsMustBeFiniteAndNonNegative) {
  expect_error([] { batch_norm_inference_output_shape(Shape{2, 3}, {.eps = -1e-5}); },
               "batch_norm_inference: eps = -1e-05 must be finite and >= 0");
  expect_error([] { batch_norm_inference_output_shape(Shape{2, 3}, {.eps = std::numeric_limits<double>::infinity()}); },
               "eps = inf must be finite");
  expect_error([] { batch_norm_inference_output_shape(Shape{2, 3}, {.eps = kNaN}); }, "eps = nan must be finite");
}

TEST(BatchNormInferenceReference, PlanesByHand) {
  // x [2, 3, 2]: channel c's planes are elements (b * 3 + c) * 2 + {0, 1}.
  BatchNormCall call({2, 3, 2}, {1, 3, -1, 0, 2, 4, 0, -2, 1, 2, 3, 1}, DType::f32);
  call.run(true, {.eps = 0});
  // y = (x - mean) / sqrt(var) * weight + bias: channel 0 (x - 0.5) / 2 * 2 + 1, channel 1
  // (x + 1) / 0.5 * -1, channel 2 (x - 2) * 0.5 - 3.
  expect_values(call.y, {1.5, 3.5, 0, -2, -3, -2, 0.5, -1.5, -4, -6, -2.5, -3.5});
  call.run(false, {.eps = 0});
  expect_values(call.y, {0.25, 1.25, 0, 2, 0, 2, -0.25, -1.25, 4, 6, 1, -1});
}

TEST(BatchNormInferenceReference, RankTwoIsOneElementAChannelAndEpsIsAdded) {
  BatchNormCall call({2, 3}, {4.5, 1, 3, -1.5, -0.5, 1});
  call.run(true, {.eps = 0.75});
  const double r0 = 1 / std::sqrt(4.75), r1 = 1 / std::sqrt(1.0), r2 = 1 / std::sqrt(1.75);
  expect_values(call.y,
                {4 * r0 * 2 + 1, 2 * r1 * -1, 1 * r2 * 0.5 - 3, -2 * r0 * 2 + 1, 0.5 * r1 * -1, -1 * r2 * 0.5 - 3});
}

TEST(BatchNormInferenceReference, NaNAndInfinityStayInTheirElements) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  BatchNormCall call({1, 3, 2}, {kNaN, 1, kInf, 0, 2, 2});
  call.run(true, {.eps = 0});
  EXPECT_TRUE(std::isnan(call.y.at(0)));
  EXPECT_EQ(call.y.at(2), -kInf);  // weight -1
  EXPECT_EQ(call.y.at(1), 1.5);
  EXPECT_EQ(call.y.at(3), -2);
  EXPECT_EQ(call.y.at(4), -3);
  EXPECT_EQ(call.y.at(5), -3);
}

TEST(BatchNormInferenceReference, EmptyTensorsAreFine) {
  for (const Shape& shape : {Shape{0, 3, 4}, Shape{2, 3, 0}}) {
    BatchNormCall call(shape, {1});
    call.run();
    EXPECT_EQ(call.y.numel(), 0);
  }
  HostTensor x({2, 0}, DType::f16), none({0}, DType::f32), y({2, 0}, DType::f16);
  reference::batch_norm_inference(x.ref(), nullptr, nullptr, none.ref(), none.ref(), y.ref(), {});
}

TEST(BatchNormInferenceValidation, XMustBeAFloatTensor) {
  HostTensor x({2, 3}, DType::i32), y({2, 3}, DType::i32), stat({3}, DType::f32);
  expect_error([&] { reference::batch_norm_inference(x.ref(), nullptr, nullptr, stat.ref(), stat.ref(), y.ref(), {}); },
               "reference::batch_norm_inference: x: dtype i32 is not supported");
}

TEST(BatchNormInferenceValidation, ParametersMustBeF32OrXsDtypeOfTheChannels) {
  BatchNormCall call({2, 3, 4}, {1}, DType::bf16);
  HostTensor half({3}, DType::f16), four({4}, DType::f32), column({3, 1}, DType::f32);
  const TensorRef w = call.weight.ref(), b = call.bias.ref(), half_ref = half.ref(), four_ref = four.ref();
  const auto run = [&](const TensorRef* weight, const TensorRef* bias, const TensorRef& mean, const TensorRef& var) {
    reference::batch_norm_inference(call.x.ref(), weight, bias, mean, var, call.y.ref(), {});
  };
  expect_error([&] { run(&half_ref, &b, call.mean.ref(), call.var.ref()); },
               "weight: dtype f16 must be f32 or x's dtype bf16");
  expect_error([&] { run(&w, &four_ref, call.mean.ref(), call.var.ref()); }, "bias: shape [4] must be [3]");
  expect_error([&] { run(&w, &b, column.ref(), call.var.ref()); }, "running_mean: shape [3, 1] must be [3]");
  expect_error([&] { run(&w, &b, call.mean.ref(), half.ref()); },
               "running_var: dtype f16 must be f32 or x's dtype bf16");
}

TEST(BatchNormInferenceReference, ParametersOfXsDtype) {
  // Spec §6.3: the four [C] tensors may be of x's dtype, each on its own.
  BatchNormCall call({1, 3, 2}, {1, 3, -1, 0, 2, 4}, DType::bf16);
  HostTensor mean = filled({3}, {0.5, -1, 2}, DType::bf16), weight = filled({3}, {2, -1, 0.5}, DType::bf16);
  const TensorRef w = weight.ref(), b = call.bias.ref();
  reference::batch_norm_inference(call.x.ref(), &w, &b, mean.ref(), call.var.ref(), call.y.ref(), {.eps = 0});
  expect_values(call.y, {1.5, 3.5, 0, -2, -3, -2}, 1e-2);
}

TEST(BatchNormInferenceValidation, OutputMustHaveXsShapeAndDtype) {
  BatchNormCall call({2, 3, 4}, {1}, DType::f16);
  HostTensor wrong_shape({2, 3, 5}, DType::f16), wrong_dtype({2, 3, 4}, DType::f32);
  expect_error(
      [&] {
        reference::batch_norm_inference(call.x.ref(), nullptr, nullptr, call.mean.ref(), call.var.ref(),
                                        wrong_shape.ref(), {});
      },
      "output: shape [2, 3, 5] must be [2, 3, 4]");
  expect_error(
      [&] {
        reference::batch_norm_inference(call.x.ref(), nullptr, nullptr, call.mean.ref(), call.var.ref(),
                                        wrong_dtype.ref(), {});
      },
      "output: dtype f32 must be f16");
}

TEST(BatchNormInferenceReference, ChannelsLastIsTheSameNormalization) {
  const std::vector<double> values = {1, -2, 3, 0.5, -1, 2, 4, -3, 0.25, 6, -5, 1.5, 2, -0.75, 3.5, 7, -4};
  BatchNormCall contiguous({2, 3, 2, 3}, values), channels_last({2, 3, 2, 3}, values);
  contiguous.run();
  const TensorRef w = channels_last.weight.ref(), b = channels_last.bias.ref();
  ChannelsLastTensor x_cl(channels_last.x), y_cl(channels_last.y);
  reference::batch_norm_inference(x_cl.ref(), &w, &b, channels_last.mean.ref(), channels_last.var.ref(), y_cl.ref(), {});
  HostTensor y = y_cl.logical();
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.at(i), contiguous.y.at(i)) << i;
  // y in x's memory format.
  expect_error(
      [&] {
        reference::batch_norm_inference(x_cl.ref(), nullptr, nullptr, contiguous.mean.ref(), contiguous.var.ref(),
                                        contiguous.y.ref(), {});
      },
      "reference::batch_norm_inference: output must be in x's memory format (channels_last)");
}

TEST(BatchNormInferenceValidation, XMustBeContiguous) {
  BatchNormCall call({2, 3, 4}, {1});
  TensorRef transposed = call.x.ref();  // a [2, 4, 3] buffer seen as [2, 3, 4]
  std::swap(transposed.strides[1], transposed.strides[2]);
  expect_error(
      [&] {
        reference::batch_norm_inference(transposed, nullptr, nullptr, call.mean.ref(), call.var.ref(), call.y.ref(),
                                        {});
      },
      "x must be contiguous", Status::unsupported);
}

TEST(BatchNormInferenceAliasing, OutputMayNotOverlapAnInput) {
  BatchNormCall call({1, 3}, {1, 2, 3});
  const TensorRef w = call.weight.ref(), b = call.bias.ref();
  expect_error(
      [&] { reference::batch_norm_inference(call.x.ref(), &w, &b, call.mean.ref(), call.var.ref(), call.x.ref(), {}); },
      "x and output overlap in memory");
  TensorRef over_var = call.var.ref();
  over_var.rank = 2;
  over_var.shape[0] = 1;
  over_var.shape[1] = 3;
  over_var.strides[0] = 3;
  over_var.strides[1] = 1;
  expect_error(
      [&] { reference::batch_norm_inference(call.x.ref(), &w, &b, call.mean.ref(), call.var.ref(), over_var, {}); },
      "running_var and output overlap in memory");
}

TEST(BatchNormInferenceCost, SpecFormula) {
  const Cost c = batch_norm_inference_cost(Shape{4, 128, 1024, 1024}, DType::f16, {});
  const double numel = 4.0 * 128 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(c.flops, 4 * numel);
  EXPECT_DOUBLE_EQ(c.bytes, 2 * numel * 2 + 16 * 128);
  EXPECT_DOUBLE_EQ(batch_norm_inference_cost(Shape{32, 64}, DType::f32, {}).bytes, 2.0 * 32 * 64 * 4 + 16 * 64);
  expect_error([] { batch_norm_inference_cost(Shape{64}, DType::f32, {}); },
               "batch_norm_inference_cost: x [64] must have rank >= 2");
}

}  // namespace
}  // namespace solops::testing::norm
