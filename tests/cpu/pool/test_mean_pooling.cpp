// Mean pooling (spec §4.6): shape rule, one test per validation rule and per ragged-metadata
// rule, the CPU reference against cases computed by hand, the cost model and the C ABI.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "cpu/pool/mean_pooling_cases.hpp"
#include "pool/mean_pooling.hpp"
#include "expect_error.hpp"
#include "solops/error.hpp"
#include "solops/reference.hpp"
#include "solops/solops.h"

namespace solops {
namespace {

using testing::expect_error;
using testing::HostTensor;
using testing::RaggedMetadata;
using Shape = std::vector<int64_t>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- shape rule ----------------------------------------------------------------------------------

TEST(MeanPoolingOutputShape, UniformRaggedAndEmptyBatch) {
  EXPECT_EQ(mean_pooling_output_shape(Shape{1, 8192, 64, 128}, {64}), (Shape{1, 128, 64, 128}));
  EXPECT_EQ(mean_pooling_output_shape(Shape{2, 70, 3, 5}, {32}), (Shape{2, 3, 3, 5}));  // short last chunk
  EXPECT_EQ(mean_pooling_output_shape(Shape{1, 10, 1, 1}, {256}), (Shape{1, 1, 1, 1}));  // chunk longer than S
  EXPECT_EQ(mean_pooling_output_shape(Shape{0, 64, 2, 2}, {64}), (Shape{0, 1, 2, 2}));
  EXPECT_EQ(mean_pooling_output_shape(Shape{1, 1000, 64, 128}, {32}, RaggedSizes{4, 34}), (Shape{1, 34, 64, 128}));
}

TEST(MeanPoolingOutputShape, RaggedChunkCountBoundsFollowFromTheShapesAlone) {
  // 4 sequences over 1000 tokens at c = 32: at least ceil(1000 / 32) = 32 chunks, at most 32 + 3.
  EXPECT_EQ(mean_pooling_output_shape(Shape{1, 1000, 1, 1}, {32}, RaggedSizes{4, 32})[1], 32);
  EXPECT_EQ(mean_pooling_output_shape(Shape{1, 1000, 1, 1}, {32}, RaggedSizes{4, 35})[1], 35);
  expect_error([] { mean_pooling_output_shape(Shape{1, 1000, 1, 1}, {32}, RaggedSizes{4, 31}); },
               "indices lists 31 chunks, but 4 sequences of S = 1000 tokens in all make between 32 and 35 chunks");
  expect_error([] { mean_pooling_output_shape(Shape{1, 1000, 1, 1}, {32}, RaggedSizes{4, 36}); },
               "make between 32 and 35 chunks");
}

TEST(MeanPoolingShapeRule, XMustBe4D) {
  expect_error([] { mean_pooling_output_shape(Shape{8192, 64, 128}, {64}); },
               "mean_pooling: x must be 4-D [B, S, H, D], got 3-D [8192, 64, 128]");
}

TEST(MeanPoolingShapeRule, OnlyTheBatchMayBeEmpty) {
  expect_error([] { mean_pooling_output_shape(Shape{1, 0, 64, 128}, {64}); }, "has an empty dim 1");
  expect_error([] { mean_pooling_output_shape(Shape{1, 64, 64, 0}, {64}); }, "has an empty dim 3");
  expect_error([] { mean_pooling_output_shape(Shape{-1, 64, 64, 128}, {64}); }, "x batch size -1 is negative");
}

TEST(MeanPoolingShapeRule, ChunkSizeMustBePositive) {
  expect_error([] { mean_pooling_output_shape(Shape{1, 64, 1, 1}, {0}); }, "chunk_size = 0 must be >= 1");
  expect_error([] { mean_pooling_output_shape(Shape{1, 64, 1, 1}, {-32}); }, "chunk_size = -32 must be >= 1");
}

TEST(MeanPoolingShapeRule, ChunkSizeMustBeAMultipleOf32) {
  expect_error([] { mean_pooling_output_shape(Shape{1, 64, 1, 1}, {48}); },
               "chunk_size = 48 must be a multiple of 32");
}

TEST(MeanPoolingShapeRule, ChunkSizeMustFitInt32) {
  expect_error([] { mean_pooling_output_shape(Shape{1, 64, 1, 1}, {int64_t{1} << 31}); },
               "chunk_size = 2147483648 exceeds 2^31 - 1");
}

TEST(MeanPoolingShapeRule, TokenRowMustFitInt32) {
  expect_error([] { mean_pooling_output_shape(Shape{1, 2, 65536, 32768}, {32}); },
               "32-bit in-token indexing would overflow");
}

TEST(MeanPoolingShapeRule, RaggedNeedsAtLeastOneSequence) {
  expect_error([] { mean_pooling_output_shape(Shape{1, 64, 1, 1}, {32}, RaggedSizes{0, 2}); },
               "offsets must hold NS + 1 >= 2 values");
}

TEST(MeanPoolingShapeRule, RaggedSequenceAxisMustFitInt32Offsets) {
  expect_error([] { mean_pooling_output_shape(Shape{1, int64_t{1} << 31, 1, 1}, {32}, RaggedSizes{1, 1 << 26}); },
               "more than int32 offsets can address");
}

// ---- validation of a call (host tensors through the reference; device-only rules at the end) --

// A valid ragged call: x [2, 70, 3, 5] f32, sequences of 0, 40, 0, 5 and 25 tokens, chunk_size 32
// (4 chunks). Each test breaks one rule by editing a TensorRef.
class MeanPoolingValidation : public ::testing::Test {
 protected:
  RaggedMetadata metadata = testing::ragged_metadata({0, 40, 0, 5, 25}, 32);
  HostTensor x{{2, 70, 3, 5}, DType::f32}, y{{2, 4, 3, 5}, DType::f32}, y_uniform{{2, 3, 3, 5}, DType::f32};
  HostTensor offsets = testing::offsets_tensor(metadata), indices = testing::indices_tensor(metadata);
  TensorRef x_ref = x.ref(), y_ref = y.ref(), offsets_ref = offsets.ref(), indices_ref = indices.ref();
  MeanPooling p{32};

  void run() { reference::mean_pooling(x_ref, y_ref, &offsets_ref, &indices_ref, p); }
  void run_uniform() { reference::mean_pooling(x_ref, y_uniform.ref(), nullptr, nullptr, p); }
};

TEST_F(MeanPoolingValidation, ValidCallsPass) {
  run();
  run_uniform();
}

TEST_F(MeanPoolingValidation, XMustHaveAFloatDtype) {
  x_ref.dtype = DType::i32;
  expect_error([&] { run(); }, "reference::mean_pooling: x: dtype i32 is not supported (f32, f16 or bf16)");
}

TEST_F(MeanPoolingValidation, XMustBe4D) {
  x_ref = make_tensor(x.bytes.data(), DType::f32, Shape{140, 3, 5});
  expect_error([&] { run(); }, "x must be 4-D [B, S, H, D], got 3-D [140, 3, 5]");
}

TEST_F(MeanPoolingValidation, XDataPointerMustNotBeNull) {
  x_ref.data = nullptr;
  expect_error([&] { run(); }, "x: data pointer is null");
}

TEST_F(MeanPoolingValidation, XMustBeContiguous) {
  std::swap(x_ref.strides[2], x_ref.strides[3]);
  expect_error([&] { run(); }, "x must be contiguous", Status::unsupported);
}

TEST_F(MeanPoolingValidation, OutputMustHaveXsDtype) {
  y_ref.dtype = DType::f16;
  expect_error([&] { run(); }, "output: dtype f16 must be f32");
}

TEST_F(MeanPoolingValidation, OutputMustHaveTheRuleShape) {
  expect_error([&] { reference::mean_pooling(x_ref, y_ref, nullptr, nullptr, p); },
               "output: shape [2, 4, 3, 5] must be [2, 3, 3, 5]");
}

TEST_F(MeanPoolingValidation, OutputDataPointerMustNotBeNull) {
  y_ref.data = nullptr;
  expect_error([&] { run(); }, "output: data pointer is null");
}

TEST_F(MeanPoolingValidation, OutputMustNotOverlapX) {
  y_ref.data = static_cast<float*>(x_ref.data) + 15;
  expect_error([&] { run(); }, "x and output overlap in memory; this op is not in-place");
}

TEST_F(MeanPoolingValidation, OutputMustNotOverlapTheMetadata) {
  HostTensor storage({2 * 4 * 3 * 5 + 16}, DType::f32);
  y_ref = make_tensor(storage.bytes.data(), DType::f32, Shape{2, 4, 3, 5});
  TensorRef inside = make_tensor(storage.bytes.data(), DType::i32, Shape{4, 2});
  std::memcpy(storage.bytes.data(), metadata.indices.data(), metadata.indices.size() * sizeof(int32_t));
  expect_error([&] { reference::mean_pooling(x_ref, y_ref, &offsets_ref, &inside, p); },
               "indices and output overlap in memory");
  inside = make_tensor(storage.bytes.data(), DType::i32, Shape{6});
  expect_error([&] { reference::mean_pooling(x_ref, y_ref, &inside, &indices_ref, p); },
               "offsets and output overlap in memory");
}

TEST_F(MeanPoolingValidation, OffsetsAndIndicesGoTogether) {
  expect_error([&] { reference::mean_pooling(x_ref, y_ref, &offsets_ref, nullptr, p); },
               "offsets and indices go together: pass both (ragged mode) or neither (uniform mode), got only offsets");
  expect_error([&] { reference::mean_pooling(x_ref, y_ref, nullptr, &indices_ref, p); }, "got only indices");
}

TEST_F(MeanPoolingValidation, OffsetsMustBeInt32) {
  offsets_ref.dtype = DType::i64;
  offsets_ref.shape[0] = 3;  // the same bytes as 3 int64
  expect_error([&] { run(); }, "offsets: dtype i64 must be i32");
}

TEST_F(MeanPoolingValidation, OffsetsMustBe1D) {
  offsets_ref = make_tensor(offsets.bytes.data(), DType::i32, Shape{2, 3});
  expect_error([&] { run(); }, "offsets must be 1-D [NS + 1], got [2, 3]");
}

TEST_F(MeanPoolingValidation, OffsetsMustHoldTwoValues) {
  offsets_ref.shape[0] = 1;
  expect_error([&] { run(); }, "offsets must hold NS + 1 >= 2 values (offsets[0] = 0 ... offsets[NS] = S), got 1");
}

TEST_F(MeanPoolingValidation, IndicesMustBeInt32) {
  indices_ref.dtype = DType::f32;
  expect_error([&] { run(); }, "indices: dtype f32 must be i32");
}

TEST_F(MeanPoolingValidation, IndicesMustBePairs) {
  indices_ref = make_tensor(indices.bytes.data(), DType::i32, Shape{2, 4});
  expect_error([&] { run(); }, "indices must be [NC, 2], got [2, 4]");
}

TEST_F(MeanPoolingValidation, IndicesCountMustFitTheShapes) {
  indices_ref.shape[0] = 1;  // 70 tokens at c = 32 make at least 3 chunks
  expect_error([&] { run(); }, "indices lists 1 chunks, but 5 sequences of S = 70 tokens in all make between 3 and 7");
}

TEST_F(MeanPoolingValidation, TheReferenceChecksTheMetadataContents) {
  reinterpret_cast<int32_t*>(offsets.bytes.data())[5] = 69;
  expect_error([&] { run(); }, "reference::mean_pooling: offsets[5] = 69 must equal S = 70");
}

TEST_F(MeanPoolingValidation, TheDeviceCallNeedsCudaTensors) {
  expect_error([&] { mean_pooling(x_ref, y_ref, &offsets_ref, &indices_ref, p); },
               "mean_pooling: x must be a CUDA tensor, got a CPU tensor");
}

// ---- the ragged-metadata check (spec §4.6), on host data ----------------------------------------

// Sequences of 0, 40, 0, 5 and 25 tokens at chunk_size 32: offsets [0, 0, 40, 40, 45, 70],
// indices (1, 0), (1, 1), (3, 0), (4, 0).
class RaggedMetadataCheck : public ::testing::Test {
 protected:
  RaggedMetadata m = testing::ragged_metadata({0, 40, 0, 5, 25}, 32);
  int64_t seq_len = 70;

  void check() { check_ragged_chunks(m.offsets, m.indices, seq_len, 32); }
  void expect_rejected(const std::string& fragment) { expect_error([&] { check(); }, fragment); }
};

TEST_F(RaggedMetadataCheck, TheEnumerationPasses) {
  EXPECT_EQ(m.offsets, (std::vector<int32_t>{0, 0, 40, 40, 45, 70}));
  EXPECT_EQ(m.indices, (std::vector<int32_t>{1, 0, 1, 1, 3, 0, 4, 0}));
  check();
}

TEST_F(RaggedMetadataCheck, FirstOffsetMustBeZero) {
  m.offsets[0] = 1;
  expect_rejected("check_ragged_chunks: offsets[0] = 1 must be 0");
}

TEST_F(RaggedMetadataCheck, OffsetsMustNotDecrease) {
  m.offsets[3] = 39;
  expect_rejected("offsets[3] = 39 is less than offsets[2] = 40: offsets must be non-decreasing");
}

TEST_F(RaggedMetadataCheck, LastOffsetMustBeTheSequenceAxis) {
  seq_len = 71;
  expect_rejected("offsets[5] = 70 must equal S = 71");
}

TEST_F(RaggedMetadataCheck, ChunkCountMustMatchTheOffsets) {
  m.indices.resize(6);
  expect_rejected(
      "indices lists 3 chunks, but the offsets make 4 (the sum over sequences of ceil(length / chunk_size))");
}

TEST_F(RaggedMetadataCheck, IndicesMustBePairs) {
  m.indices.push_back(4);
  expect_rejected("indices must hold (sequence, chunk) pairs, got 9 values");
}

TEST_F(RaggedMetadataCheck, SequenceMustExist) {
  m.indices[6] = 5;
  expect_rejected("indices[3] = (5, 0): sequence 5 does not exist (5 sequences)");
}

TEST_F(RaggedMetadataCheck, ChunkMustNotBeNegative) {
  m.indices[5] = -1;
  expect_rejected("indices[2] = (3, -1): chunk -1 is negative");
}

TEST_F(RaggedMetadataCheck, ChunkMustNotBePastItsSequence) {
  m.indices[5] = 1;  // sequence 3 has 5 tokens: one chunk
  expect_rejected("indices[2] = (3, 1): chunk 1 is past the end of sequence 3 (5 tokens make 1 chunks)");
}

TEST_F(RaggedMetadataCheck, EmptySequencesHaveNoChunks) {
  m.indices[4] = 2;  // sequence 2 is empty
  expect_rejected("indices[2] = (2, 0): chunk 0 is past the end of sequence 2 (0 tokens make 0 chunks)");
}

TEST_F(RaggedMetadataCheck, ChunksMustNotRepeat) {
  m.indices[2] = 1;
  m.indices[3] = 0;
  expect_rejected("indices[1] = (1, 0) repeats indices[0]: every chunk must be listed once");
}

TEST_F(RaggedMetadataCheck, ChunksMustBeInOrder) {
  std::swap(m.indices[4], m.indices[6]);  // (4, 0) before (3, 0)
  expect_rejected("indices[2] = (4, 0) is out of order: expected (3, 0)");
}

TEST_F(RaggedMetadataCheck, ChunkSizeFollowsTheOpsRule) {
  expect_error([&] { check_ragged_chunks(m.offsets, m.indices, seq_len, 40); },
               "chunk_size = 40 must be a multiple of 32");
}

TEST(RaggedMetadataEnumeration, MatchesTheSpecCounts) {
  // ragged-tail: [100, 200, 300, 400] at c = 32 makes 4 + 7 + 10 + 13 = 34 chunks.
  const RaggedMetadata tail = testing::ragged_metadata({100, 200, 300, 400}, 32);
  EXPECT_EQ(tail.chunks(), 34);
  check_ragged_chunks(tail.offsets, tail.indices, 1000, 32);
  const RaggedMetadata even = testing::ragged_metadata({2048, 2048, 2048, 2048}, 64);
  EXPECT_EQ(even.chunks(), 128);
  check_ragged_chunks(even.offsets, even.indices, 8192, 64);
}

// ---- the reference against cases computed by hand ----------------------------------------------

// x[b, t, 0, e] = 1000 b + t + 100 e: a chunk's mean is 1000 b + 100 e + the mean of its tokens.
HostTensor token_ramp(int64_t batch, int64_t seq_len, DType dtype = DType::f32) {
  HostTensor x({batch, seq_len, 1, 2}, dtype);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq_len; ++t) {
      for (int64_t e = 0; e < 2; ++e) x.set((b * seq_len + t) * 2 + e, 1000.0 * b + t + 100.0 * e);
    }
  }
  return x;
}

void expect_chunk_means(HostTensor& y, int64_t batch, const std::vector<double>& token_means) {
  const auto chunks = static_cast<int64_t>(token_means.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < chunks; ++j) {
      for (int64_t e = 0; e < 2; ++e) {
        EXPECT_EQ(y.at((b * chunks + j) * 2 + e), 1000.0 * b + 100.0 * e + token_means[j])
            << "b " << b << " chunk " << j << " e " << e;
      }
    }
  }
}

TEST(MeanPoolingReference, UniformWithAShortLastChunk) {
  // S = 70 at c = 32: tokens [0, 32), [32, 64), [64, 70). f16 holds the means of batch row 0.
  for (const auto& [dtype, batch] : {std::pair{DType::f32, int64_t{2}}, std::pair{DType::f16, int64_t{1}}}) {
    HostTensor x = token_ramp(batch, 70, dtype), y({batch, 3, 1, 2}, dtype);
    y.poison();
    reference::mean_pooling(x.ref(), y.ref(), nullptr, nullptr, {32});
    expect_chunk_means(y, batch, {15.5, 47.5, 66.5});
  }
}

TEST(MeanPoolingReference, RaggedWithEmptyAndShortSequences) {
  // Sequences of 0, 40, 0, 5, 33 tokens at c = 32: chunks [0, 32), [32, 40), [40, 45), [45, 77), [77, 78).
  const RaggedMetadata m = testing::ragged_metadata({0, 40, 0, 5, 33}, 32);
  HostTensor x = token_ramp(2, 78), y({2, 5, 1, 2}, DType::f32);
  HostTensor offsets = testing::offsets_tensor(m), indices = testing::indices_tensor(m);
  const TensorRef offsets_ref = offsets.ref(), indices_ref = indices.ref();
  y.poison();
  reference::mean_pooling(x.ref(), y.ref(), &offsets_ref, &indices_ref, {32});
  expect_chunk_means(y, 2, {15.5, 35.5, 42.0, 60.5, 77.0});
}

TEST(MeanPoolingReference, OneSequenceIsTheUniformMode) {
  const RaggedMetadata m = testing::ragged_metadata({70}, 32);
  HostTensor x = token_ramp(1, 70), y({1, 3, 1, 2}, DType::f32);
  HostTensor offsets = testing::offsets_tensor(m), indices = testing::indices_tensor(m);
  const TensorRef offsets_ref = offsets.ref(), indices_ref = indices.ref();
  reference::mean_pooling(x.ref(), y.ref(), &offsets_ref, &indices_ref, {32});
  expect_chunk_means(y, 1, {15.5, 47.5, 66.5});
}

TEST(MeanPoolingReference, NaNAndInfinitiesPropagate) {
  HostTensor x({1, 64, 1, 3}, DType::f32), y({1, 2, 1, 3}, DType::f32);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, 1.0);
  x.set(5 * 3 + 0, kNaN);   // chunk 0, element 0
  x.set(40 * 3 + 1, -kInf);  // chunk 1, element 1
  x.set(1 * 3 + 2, kInf);    // chunk 0, element 2: +inf and -inf
  x.set(2 * 3 + 2, -kInf);
  reference::mean_pooling(x.ref(), y.ref(), nullptr, nullptr, {32});
  EXPECT_TRUE(std::isnan(y.at(0)));
  EXPECT_EQ(y.at(1), 1.0);
  EXPECT_TRUE(std::isnan(y.at(2)));
  EXPECT_EQ(y.at(3), 1.0);
  EXPECT_EQ(y.at(4), -kInf);
  EXPECT_EQ(y.at(5), 1.0);
}

TEST(MeanPoolingReference, EmptyBatchWritesNothing) {
  HostTensor x({0, 64, 2, 2}, DType::f32), y({0, 2, 2, 2}, DType::f32);
  reference::mean_pooling(x.ref(), y.ref(), nullptr, nullptr, {32});
}

// ---- cost model -----------------------------------------------------------------------------------

TEST(MeanPoolingCost, OneAddPerInputOneDividePerOutputAndTheMetadata) {
  // uniform-8k f16: 8192 tokens and 128 chunks of 64 * 128 elements.
  const Cost uniform = mean_pooling_cost(Shape{1, 8192, 64, 128}, DType::f16, {64});
  EXPECT_DOUBLE_EQ(uniform.flops, (8192.0 + 128) * 8192);
  EXPECT_DOUBLE_EQ(uniform.bytes, (8192.0 + 128) * 8192 * 2);
  // ragged-tail f16: 1000 tokens, 34 chunks, offsets [5], indices [34, 2].
  const Cost ragged = mean_pooling_cost(Shape{1, 1000, 64, 128}, DType::f16, {32}, RaggedSizes{4, 34});
  EXPECT_DOUBLE_EQ(ragged.flops, (1000.0 + 34) * 8192);
  EXPECT_DOUBLE_EQ(ragged.bytes, (1000.0 + 34) * 8192 * 2 + 4 * 5 + 8 * 34);
  // ragged-batched f32 doubles the tensor bytes, not the metadata.
  const Cost batched = mean_pooling_cost(Shape{2, 2048, 64, 128}, DType::f32, {64}, RaggedSizes{2, 32});
  EXPECT_DOUBLE_EQ(batched.bytes, 2 * (2048.0 + 32) * 8192 * 4 + 4 * 3 + 8 * 32);
}

// ---- C ABI ------------------------------------------------------------------------------------------

TEST(MeanPoolingCApi, ShapeAndCost) {
  const int64_t x_shape[4] = {1, 1000, 64, 128};
  const solops_mean_pooling_params p{32, 1};
  const solops_ragged_sizes ragged{4, 34};
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_mean_pooling_output_shape(4, x_shape, &p, nullptr, &rank, shape), SOLOPS_OK) << solops_last_error();
  EXPECT_EQ(rank, 4);
  EXPECT_EQ(shape[1], 32);
  ASSERT_EQ(solops_mean_pooling_output_shape(4, x_shape, &p, &ragged, &rank, shape), SOLOPS_OK) << solops_last_error();
  EXPECT_EQ(shape[1], 34);
  solops_cost cost{};
  ASSERT_EQ(solops_mean_pooling_cost(4, x_shape, SOLOPS_F16, &p, &ragged, &cost), SOLOPS_OK) << solops_last_error();
  EXPECT_DOUBLE_EQ(cost.bytes, (1000.0 + 34) * 8192 * 2 + 4 * 5 + 8 * 34);
}

TEST(MeanPoolingCApi, ReferenceAndErrors) {
  const RaggedMetadata m = testing::ragged_metadata({0, 40, 0, 5, 33}, 32);
  HostTensor x = token_ramp(1, 78), y({1, 5, 1, 2}, DType::f32);
  HostTensor offsets = testing::offsets_tensor(m), indices = testing::indices_tensor(m);
  const solops_tensor cx = c_tensor(x), cy = c_tensor(y), co = c_tensor(offsets), ci = c_tensor(indices);
  const solops_mean_pooling_params p{32, 1};
  ASSERT_EQ(solops_reference_mean_pooling(&cx, &cy, &co, &ci, &p), SOLOPS_OK) << solops_last_error();
  expect_chunk_means(y, 1, {15.5, 35.5, 42.0, 60.5, 77.0});

  EXPECT_EQ(solops_reference_mean_pooling(&cx, &cy, &co, nullptr, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("got only offsets"), std::string::npos) << solops_last_error();
  EXPECT_EQ(solops_mean_pooling(&cx, &cy, &co, &ci, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("x must be a CUDA tensor"), std::string::npos) << solops_last_error();
  const solops_mean_pooling_params bad{40, 1};
  EXPECT_EQ(solops_reference_mean_pooling(&cx, &cy, &co, &ci, &bad), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("must be a multiple of 32"), std::string::npos);
}

TEST(MeanPoolingCApi, NullPointers) {
  const int64_t x_shape[4] = {1, 64, 1, 1};
  const solops_mean_pooling_params p{32, 1};
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  EXPECT_EQ(solops_mean_pooling_output_shape(4, x_shape, nullptr, nullptr, &rank, shape), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("params is a null pointer"), std::string::npos);
  EXPECT_EQ(solops_mean_pooling_output_shape(4, nullptr, &p, nullptr, &rank, shape), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(solops_mean_pooling(nullptr, nullptr, nullptr, nullptr, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("solops_mean_pooling: x is a null pointer"), std::string::npos)
      << solops_last_error();
  EXPECT_EQ(solops_mean_pooling_cost(4, x_shape, SOLOPS_F16, &p, nullptr, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("cost is a null pointer"), std::string::npos);
}

}  // namespace
}  // namespace solops
