// BatchNormInference on the GPU against the CPU reference (spec §2.7): every catalogue row, 120 random
// shapes (ranks 2 to 5, odd and power-of-two planes, plane size 1, C = 1, with and without weight and
// bias, the [C] tensors in f32 or x's dtype, unaligned pointers, NaN and infinities), edge shapes
// (empty dims, more than 65535 images, rows of one to many vectors, long odd planes), special running
// statistics, CUDA graph capture, channels_last x and y (every 4-D catalogue row, random 4-D shapes)
// and the device-side rules. Outputs are poisoned first.
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
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

// Spec §2.7: fp32 1e-5, fp16 1e-3, bf16 1.6e-2 (atol = rtol).
double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-5 : dtype == DType::f16 ? 1e-3 : 1.6e-2; }

// One call's host tensors: weight and bias absent where the call leaves them out.
struct BatchNormInputs {
  HostTensor x, mean, var;
  std::optional<HostTensor> weight = std::nullopt, bias = std::nullopt;
  double eps = 1e-5;
};

// x of `values`, normal running means, weights and biases, running variances uniform in [0.5, 2]; the
// four [C] tensors of `parameter_dtype` (f32 or x's, spec §6.3).
BatchNormInputs random_inputs(const Shape& shape, DType dtype, std::mt19937_64& rng, bool affine = true,
                              Values values = Values::normal, DType parameter_dtype = DType::f32) {
  const Shape channels{shape[1]};
  BatchNormInputs in{HostTensor(shape, dtype), HostTensor(channels, parameter_dtype),
                     HostTensor(channels, parameter_dtype)};
  fill(in.x, rng, values);
  fill(in.mean, rng);
  std::uniform_real_distribution<double> variance(0.5, 2.0);
  for (int64_t c = 0; c < shape[1]; ++c) in.var.set(c, variance(rng));
  if (affine) {
    in.weight.emplace(channels, parameter_dtype);
    in.bias.emplace(channels, parameter_dtype);
    fill(*in.weight, rng);
    fill(*in.bias, rng);
  }
  return in;
}

std::string describe(const BatchNormInputs& in) {
  return detail::concat("x ", detail::shape_text(in.x.shape), " ", dtype_name(in.x.dtype), in.weight ? " affine" : "",
                        " parameters ", dtype_name(in.mean.dtype), " eps ", in.eps);
}

// batch_norm_inference on the device (x and y `offset` elements into their allocations, y poisoned;
// replayed from a CUDA graph where `graph`; x and y in channels_last storage where `channels_last`)
// against the reference on x in contiguous order: the first disagreement, or "".
std::string compare(BatchNormInputs& in, size_t offset = 0, bool graph = false, bool channels_last = false) {
  const BatchNormInference p{in.eps};
  std::optional<TensorRef> host_weight, host_bias;
  if (in.weight) host_weight = in.weight->ref();
  if (in.bias) host_bias = in.bias->ref();
  HostTensor expected(in.x.shape, in.x.dtype), actual(in.x.shape, in.x.dtype);
  reference::batch_norm_inference(in.x.ref(), optional_ref(host_weight), optional_ref(host_bias), in.mean.ref(),
                                  in.var.ref(), expected.ref(), p);
  const size_t shift = offset * dtype_size(in.x.dtype);
  DeviceBuffer x(in.x.bytes.size(), shift), y(in.x.bytes.size(), shift);
  x.upload(channels_last ? to_channels_last(in.x).data() : in.x.bytes.data());
  y.poison();
  DeviceBuffer mean(in.mean.bytes.size()), var(in.var.bytes.size());
  mean.upload(in.mean.bytes.data());
  var.upload(in.var.bytes.data());
  const std::unique_ptr<DeviceBuffer> weight = upload(in.weight, 0), bias = upload(in.bias, 0);
  const Shape channels{in.x.shape[1]};
  std::optional<TensorRef> weight_ref, bias_ref;
  if (weight) weight_ref = device_ref(weight->data(), in.weight->dtype, channels);
  if (bias) bias_ref = device_ref(bias->data(), in.bias->dtype, channels);
  TensorRef x_ref = device_ref(x.data(), in.x.dtype, in.x.shape), y_ref = device_ref(y.data(), in.x.dtype, in.x.shape);
  if (channels_last) {
    x_ref = with_channels_last(x_ref);
    y_ref = with_channels_last(y_ref);
  }
  const TensorRef mean_ref = device_ref(mean.data(), in.mean.dtype, channels);
  const TensorRef var_ref = device_ref(var.data(), in.var.dtype, channels);
  launch_maybe_in_graph(
      [&](cudaStream_t stream) {
        batch_norm_inference(x_ref, optional_ref(weight_ref), optional_ref(bias_ref), mean_ref, var_ref, y_ref, p,
                             stream);
      },
      graph);
  if (channels_last) {
    std::vector<unsigned char> bytes(actual.bytes.size());
    y.download(bytes.data());
    from_channels_last(bytes, actual);
  } else {
    y.download(actual.bytes.data());
  }
  return first_difference("output", expected, actual, tolerance(in.x.dtype), tolerance(in.x.dtype));
}

class BatchNormInferenceGpu : public testing::GpuTest {};

TEST_F(BatchNormInferenceGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(60);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("BatchNormInferenceFwd");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    BatchNormInputs in = random_inputs(row["tensors"]["x"].get<Shape>(), testing::parse_dtype(row["dtype"]), rng);
    EXPECT_EQ(compare(in), "") << row["workload"] << " " << describe(in);
  }
}

// A shape of rank 2 to 5: B and C from short lists (C = 1 included), spatial dims odd, even or 1,
// at most ~400 K elements so that the CPU reference stays quick.
Shape draw_shape(std::mt19937_64& rng) {
  static const int64_t kBatches[] = {1, 2, 3, 8, 17};
  static const int64_t kChannels[] = {1, 3, 8, 64, 100, 257};
  static const int64_t kSpatial[] = {1, 2, 3, 7, 8, 28, 31, 32, 64, 100, 1000};
  const auto pick = [&rng](const auto& sizes) {
    return sizes[std::uniform_int_distribution<size_t>(0, std::size(sizes) - 1)(rng)];
  };
  Shape shape{pick(kBatches), pick(kChannels)};
  int64_t numel = shape[0] * shape[1];
  for (int d = std::uniform_int_distribution<int>(0, 3)(rng); d > 0; --d) {
    int64_t size = pick(kSpatial);
    while (size > 1 && numel * size > 400'000) size /= 4;
    shape.push_back(std::max<int64_t>(size, 1));
    numel *= shape.back();
  }
  return shape;
}

TEST_F(BatchNormInferenceGpu, RandomShapes) {
  std::mt19937_64 rng(61);
  for (int c = 0; c < kRandomCases; ++c) {
    const DType dtype = kRandomDtypes[c % 3];
    BatchNormInputs in = random_inputs(draw_shape(rng), dtype, rng, c % 4 != 3, draw_values(c),
                                       c % 7 == 2 ? dtype : DType::f32);
    if (c % 5 == 2) in.eps = 0.1;
    const size_t offset = c % 6 == 5 ? 1 : 0;  // misaligned x and y: one element at a time
    EXPECT_EQ(compare(in, offset), "") << "case " << c << " " << describe(in) << " offset " << offset;
  }
}

TEST_F(BatchNormInferenceGpu, ChannelsLast) {
  std::mt19937_64 rng(64);
  for_each_channels_last_catalogue_row("BatchNormInferenceFwd", [&](const auto& row, const Shape& shape, DType dtype) {
    BatchNormInputs in = random_inputs(shape, dtype, rng);
    EXPECT_EQ(compare(in, 0, false, true), "") << row["workload"] << " channels_last " << describe(in);
  });
  for (int c = 0; c < kRandomCases / 2; ++c) {
    Shape shape = draw_shape(rng);
    while (shape.size() != 4) shape = draw_shape(rng);
    const DType dtype = kRandomDtypes[c % 3];
    BatchNormInputs in = random_inputs(shape, dtype, rng, c % 4 != 3, draw_values(c), c % 7 == 2 ? dtype : DType::f32);
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare(in, offset, c % 10 == 3, true), "")
        << "case " << c << " channels_last " << describe(in) << " offset " << offset;
  }
}

TEST_F(BatchNormInferenceGpu, EdgeShapes) {
  std::mt19937_64 rng(62);
  const ShapeAndType cases[] = {
      {{0, 3, 4, 4}, DType::f16},    // empty batch
      {{2, 0, 5}, DType::f32},       // no channels
      {{2, 3, 0}, DType::bf16},      // empty planes
      {{1, 1}, DType::f32},          // one element
      {{1, 1, 1, 1}, DType::f16},    // plane size 1 at rank 4
      {{70000, 2}, DType::bf16},     // rows of two channels: one element a thread
      {{70000, 16}, DType::f16},     // rows of two vectors, many row groups
      {{1001, 24}, DType::bf16},     // rows of three vectors (a block's lanes a power of two)
      {{70000, 1, 8}, DType::f16},   // more images than a grid's 65535 rows, vector planes
      {{2, 300000}, DType::f16},     // rows of many vectors: many blocks a row
      {{1, 2, 500001}, DType::f32},  // long odd planes: many chunks of single elements
      {{3, 2, 8200}, DType::bf16},   // long vector planes, a partial last chunk
      {{2, 5, 4097}, DType::f16},    // planes one element past a chunk boundary
  };
  for (const auto& [shape, dtype] : cases) {
    BatchNormInputs in = random_inputs(shape, dtype, rng);
    EXPECT_EQ(compare(in), "") << describe(in);
  }
}

TEST_F(BatchNormInferenceGpu, SpecialRunningStatistics) {
  // A negative variance and a NaN mean make their channels NaN, a zero weight gives the bias (NaN
  // for an infinite x), a large eps, as the reference does.
  std::mt19937_64 rng(63);
  for (DType dtype : {DType::f32, DType::bf16}) {
    BatchNormInputs in = random_inputs({3, 4, 37}, dtype, rng, true, Values::special);
    in.var.set(0, -2e3);
    in.mean.set(1, std::numeric_limits<double>::quiet_NaN());
    in.weight->set(2, 0.0);
    in.eps = 1e3;
    EXPECT_EQ(compare(in), "") << describe(in);
  }
}

TEST_F(BatchNormInferenceGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(64);
  BatchNormInputs planes = random_inputs({4, 128, 32, 32}, DType::f16, rng);
  EXPECT_EQ(compare(planes, 0, true), "");
  BatchNormInputs rows = random_inputs({32, 64}, DType::bf16, rng, false);
  EXPECT_EQ(compare(rows, 0, true), "");
}

TEST_F(BatchNormInferenceGpu, DeviceRules) {
  const Shape shape{2, 4, 8}, channels{4};
  DeviceBuffer x(2 * 4 * 8 * 2), y(2 * 4 * 8 * 2), stats(4 * sizeof(float));
  const TensorRef x_ref = device_ref(x.data(), DType::f16, shape), y_ref = device_ref(y.data(), DType::f16, shape);
  const TensorRef stats_ref = device_ref(stats.data(), DType::f32, channels);
  expect_message([&] { batch_norm_inference(x_ref, nullptr, nullptr, stats_ref, stats_ref, x_ref, {}); },
                 "batch_norm_inference: x and output overlap in memory");
  HostTensor host_var({4}, DType::f32);
  expect_message([&] { batch_norm_inference(x_ref, nullptr, nullptr, stats_ref, host_var.ref(), y_ref, {}); },
                 "batch_norm_inference: running_var must be a CUDA tensor");
  const TensorRef host_pointer = device_ref(host_var.bytes.data(), DType::f32, channels);
  expect_message([&] { batch_norm_inference(x_ref, &host_pointer, nullptr, stats_ref, stats_ref, y_ref, {}); },
                 "weight: data pointer is not device memory");
}

}  // namespace
}  // namespace solops::testing::norm
