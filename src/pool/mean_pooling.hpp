// Mean pooling (spec §4.6): the resolved geometry shared by the shape rule, the CPU reference and
// the CUDA launcher, the chunk rule, the ragged-metadata check and the launcher.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pool/pool_tensor_checks.hpp"
#include "solops/cost.hpp"
#include "solops/pool.hpp"

namespace solops::detail {

struct MeanPoolingGeometry {
  int64_t batch = 0, seq_len = 0, heads = 0, head_dim = 0;
  // chunk_size and the token row length H * D are int32: resolve_mean_pooling rejects larger ones.
  int chunk_size = 0;
  int row_len = 0;
  bool ragged = false;
  int64_t sequences = 0;  // ragged mode's NS
  int64_t chunks = 0;     // NC, output chunks per batch row

  std::vector<int64_t> output_shape() const { return {batch, chunks, heads, head_dim}; }
};

// Tokens [begin, end) of one output chunk. Empty only where unchecked ragged metadata names no
// chunk inside x; such a chunk's output is NaN.
struct TokenSpan {
  int64_t begin, end;
};

__host__ __device__ inline TokenSpan uniform_chunk(int64_t chunk, int chunk_size, int64_t seq_len) {
  const int64_t begin = chunk * chunk_size;
  return {begin, begin + chunk_size < seq_len ? begin + chunk_size : seq_len};
}

// Chunk k of sequence s. Every value is range-checked rather than trusted, so unchecked metadata
// can never make a reader leave [0, seq_len).
__host__ __device__ inline TokenSpan ragged_chunk(int32_t s, int32_t k, const int32_t* offsets, int64_t sequences,
                                                  int chunk_size, int64_t seq_len) {
  if (s < 0 || s >= sequences || k < 0) return {0, 0};
  const int64_t sequence_begin = offsets[s], sequence_end = offsets[s + 1];
  const int64_t begin = sequence_begin + int64_t{k} * chunk_size;
  const int64_t end = begin + chunk_size < sequence_end ? begin + chunk_size : sequence_end;
  if (sequence_begin < 0 || begin >= end || end > seq_len) return {0, 0};
  return {begin, end};
}

// The shape rule: x [B, S, H, D], chunk_size, and in ragged mode the metadata's sizes.
MeanPoolingGeometry resolve_mean_pooling(std::string_view op, std::span<const int64_t> x_shape, const MeanPooling& p,
                                         std::optional<RaggedSizes> ragged);

// Every check of a call that needs no tensor contents: x, y, offsets and indices on the
// placement's memory with their dtypes and shapes, both or neither of offsets and indices, and
// no output overlapping an input. Returns the geometry.
MeanPoolingGeometry validate_mean_pooling_call(std::string_view op, Placement placement, const TensorRef& x,
                                               const TensorRef& y, const TensorRef* offsets, const TensorRef* indices,
                                               const MeanPooling& p);

// solops::check_ragged_chunks with messages that name `op`.
void check_ragged_chunks(std::string_view op, std::span<const int32_t> offsets, std::span<const int32_t> indices,
                         int64_t seq_len, int64_t chunk_size);

Cost mean_pooling_cost(const MeanPoolingGeometry& g, DType dtype);

// offsets and indices: null in uniform mode.
void launch_mean_pooling(std::string_view op, const MeanPoolingGeometry& g, const TensorRef& x, const TensorRef& y,
                         const TensorRef* offsets, const TensorRef* indices, cudaStream_t stream);

}  // namespace solops::detail
