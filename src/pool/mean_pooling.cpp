// Mean pooling: shape rule, validation, the ragged-metadata check, cost model and the public entry
// points.
#include <climits>

#include "core/check.hpp"
#include "core/integer.hpp"
#include "pool/mean_pooling.hpp"

namespace solops {
namespace detail {

namespace {

constexpr int64_t kChunkMultiple = 32;

void check_chunk_size(std::string_view op, int64_t chunk_size) {
  require(chunk_size >= 1, op, "chunk_size = ", chunk_size, " must be >= 1");
  require(chunk_size % kChunkMultiple == 0, op, "chunk_size = ", chunk_size, " must be a multiple of ",
          kChunkMultiple);
  require(chunk_size <= INT_MAX, op, "chunk_size = ", chunk_size, " exceeds 2^31 - 1");
}

}  // namespace

MeanPoolingGeometry resolve_mean_pooling(std::string_view op, std::span<const int64_t> x_shape, const MeanPooling& p,
                                         std::optional<RaggedSizes> ragged) {
  require(x_shape.size() == 4, op, "x must be 4-D [B, S, H, D], got ", x_shape.size(), "-D ", shape_text(x_shape));
  require(x_shape[0] >= 0, op, "x batch size ", x_shape[0], " is negative");
  for (size_t d = 1; d < 4; ++d) {
    require(x_shape[d] > 0, op, "x ", shape_text(x_shape), " has an empty dim ", d, " (only the batch B may be 0)");
  }
  checked_product(op, "x", x_shape);  // so that every product of its sizes fits in int64
  check_chunk_size(op, p.chunk_size);
  MeanPoolingGeometry g;
  g.batch = x_shape[0];
  g.seq_len = x_shape[1];
  g.heads = x_shape[2];
  g.head_dim = x_shape[3];
  require(g.heads * g.head_dim <= INT_MAX, op, "x ", shape_text(x_shape),
          " has tokens of H * D >= 2^31 elements: 32-bit in-token indexing would overflow");
  g.chunk_size = static_cast<int>(p.chunk_size);
  g.row_len = static_cast<int>(g.heads * g.head_dim);
  const int64_t uniform_chunks = ceil_div(g.seq_len, p.chunk_size);
  g.chunks = uniform_chunks;
  if (ragged) {
    g.ragged = true;
    g.sequences = ragged->sequences;
    g.chunks = ragged->chunks;
    const int64_t offset_values = checked_add(op, "offsets' NS + 1 values", g.sequences, 1);
    require(g.sequences >= 1, op, "offsets must hold NS + 1 >= 2 values (offsets[0] = 0 ... offsets[NS] = S), got ",
            offset_values);
    require(g.seq_len <= INT_MAX, op, "x has S = ", g.seq_len, " tokens, more than int32 offsets can address");
    // Sum over sequences of ceil(len / c) lies between ceil(S / c) (one sequence) and
    // ceil(S / c) + NS - 1 (each further sequence adds at most one partial chunk).
    const int64_t most =
        checked_add(op, "offsets' NS sequences make at most ceil(S / chunk_size) + NS - 1 chunks", uniform_chunks,
                    g.sequences - 1);
    require(g.chunks >= uniform_chunks && g.chunks <= most, op, "indices lists ", g.chunks, " chunks, but ",
            g.sequences, " sequences of S = ", g.seq_len, " tokens in all make between ", uniform_chunks, " and ",
            most, " chunks of chunk_size ", p.chunk_size);
  }
  checked_product(op, "output", g.output_shape());
  return g;
}

MeanPoolingGeometry validate_mean_pooling_call(std::string_view op, Placement placement, const TensorRef& x,
                                               const TensorRef& y, const TensorRef* offsets, const TensorRef* indices,
                                               const MeanPooling& p) {
  check_tensor(placement, op, "x", x);
  check_float_dtype(op, "x", x);
  require((offsets == nullptr) == (indices == nullptr), op,
          "offsets and indices go together: pass both (ragged mode) or neither (uniform mode), got only ",
          offsets ? "offsets" : "indices");
  std::optional<RaggedSizes> ragged;
  if (offsets) {
    check_tensor(placement, op, "offsets", *offsets);
    check_dtype(op, "offsets", *offsets, DType::i32);
    require(offsets->rank == 1, op, "offsets must be 1-D [NS + 1], got ", shape_text(offsets->sizes()));
    check_tensor(placement, op, "indices", *indices);
    check_dtype(op, "indices", *indices, DType::i32);
    require(indices->rank == 2 && indices->shape[1] == 2, op, "indices must be [NC, 2], got ",
            shape_text(indices->sizes()));
    ragged = RaggedSizes{offsets->shape[0] - 1, indices->shape[0]};
  }
  const MeanPoolingGeometry g = resolve_mean_pooling(op, x.sizes(), p, ragged);
  check_tensor(placement, op, "output", y);
  check_dtype(op, "output", y, x.dtype);
  check_shape(op, "output", y, g.output_shape());
  // The reference too: it writes output rows while later chunks still read x.
  check_no_overlap(op, "x", x, "output", y);
  if (offsets) {
    check_no_overlap(op, "offsets", *offsets, "output", y);
    check_no_overlap(op, "indices", *indices, "output", y);
  }
  return g;
}

void check_ragged_chunks(std::string_view op, std::span<const int32_t> offsets, std::span<const int32_t> indices,
                         int64_t seq_len, int64_t chunk_size) {
  check_chunk_size(op, chunk_size);
  require(offsets.size() >= 2, op, "offsets must hold NS + 1 >= 2 values, got ", offsets.size());
  require(indices.size() % 2 == 0, op, "indices must hold (sequence, chunk) pairs, got ", indices.size(), " values");
  const auto sequences = static_cast<int64_t>(offsets.size()) - 1;
  require(offsets[0] == 0, op, "offsets[0] = ", offsets[0], " must be 0");
  // first_chunk[s]: position in the enumeration of sequence s's chunk 0.
  std::vector<int64_t> first_chunk(offsets.size(), 0);
  for (int64_t s = 0; s < sequences; ++s) {
    require(offsets[s + 1] >= offsets[s], op, "offsets[", s + 1, "] = ", offsets[s + 1], " is less than offsets[", s,
            "] = ", offsets[s], ": offsets must be non-decreasing");
    first_chunk[s + 1] = first_chunk[s] + ceil_div(offsets[s + 1] - offsets[s], chunk_size);
  }
  require(offsets[sequences] == seq_len, op, "offsets[", sequences, "] = ", offsets[sequences],
          " must equal S = ", seq_len, ", the length of x's sequence axis");
  const auto chunks = static_cast<int64_t>(indices.size()) / 2;
  require(chunks == first_chunk[sequences], op, "indices lists ", chunks, " chunks, but the offsets make ",
          first_chunk[sequences], " (the sum over sequences of ceil(length / chunk_size))");
  int64_t expected_sequence = 0;
  for (int64_t j = 0; j < chunks; ++j) {
    // Entries before j matched the enumeration, so position j belongs to the first sequence
    // whose chunks reach past it (empty sequences are skipped).
    while (first_chunk[expected_sequence + 1] <= j) ++expected_sequence;
    const int32_t s = indices[2 * j], k = indices[2 * j + 1];
    require(s >= 0 && s < sequences, op, "indices[", j, "] = (", s, ", ", k, "): sequence ", s, " does not exist (",
            sequences, " sequences)");
    const int64_t in_sequence = first_chunk[s + 1] - first_chunk[s];
    require(k >= 0, op, "indices[", j, "] = (", s, ", ", k, "): chunk ", k, " is negative");
    require(k < in_sequence, op, "indices[", j, "] = (", s, ", ", k, "): chunk ", k, " is past the end of sequence ", s,
            " (", offsets[s + 1] - offsets[s], " tokens make ", in_sequence, " chunks)");
    const int64_t position = first_chunk[s] + k;
    require(position >= j, op, "indices[", j, "] = (", s, ", ", k, ") repeats indices[", position,
            "]: every chunk must be listed once");
    require(position == j, op, "indices[", j, "] = (", s, ", ", k, ") is out of order: expected (", expected_sequence,
            ", ", j - first_chunk[expected_sequence], "), chunks listed sequence by sequence, in order");
  }
}

Cost mean_pooling_cost(const MeanPoolingGeometry& g, DType dtype) {
  // One add per input element and one divide per output element (spec §4.6).
  const auto batch = static_cast<double>(g.batch), seq_len = static_cast<double>(g.seq_len);
  const auto chunks = static_cast<double>(g.chunks), sequences = static_cast<double>(g.sequences);
  const double elements = batch * (seq_len + chunks) * g.row_len;
  const double metadata = g.ragged ? sizeof(int32_t) * (sequences + 1) + 2.0 * sizeof(int32_t) * chunks : 0.0;
  return {elements, elements * static_cast<double>(dtype_size(dtype)) + metadata};
}

namespace {

// The device path of the metadata check: a copy to the host on the caller's stream, then the
// host check. A stream under capture cannot synchronize, so the check is refused there.
void check_device_ragged_metadata(std::string_view op, const MeanPoolingGeometry& g, const TensorRef& offsets,
                                  const TensorRef& indices, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream, &capture), op, "cudaStreamIsCapturing");
  require(capture == cudaStreamCaptureStatusNone, op,
          "the stream is being captured into a CUDA graph, and check_ragged_metadata copies offsets and indices to "
          "the host and synchronizes the stream, which a capture cannot hold: check them once beforehand "
          "(solops::check_ragged_chunks) and pass check_ragged_metadata = false (Python: check_metadata=False)");
  std::vector<int32_t> host_offsets(static_cast<size_t>(offsets.numel()));
  std::vector<int32_t> host_indices(static_cast<size_t>(indices.numel()));
  check_cuda(cudaMemcpyAsync(host_offsets.data(), offsets.data, static_cast<size_t>(offsets.bytes()),
                             cudaMemcpyDeviceToHost, stream),
             op, "copying offsets to the host");
  check_cuda(cudaMemcpyAsync(host_indices.data(), indices.data, static_cast<size_t>(indices.bytes()),
                             cudaMemcpyDeviceToHost, stream),
             op, "copying indices to the host");
  check_cuda(cudaStreamSynchronize(stream), op, "cudaStreamSynchronize after copying the ragged metadata");
  check_ragged_chunks(op, host_offsets, host_indices, g.seq_len, g.chunk_size);
}

}  // namespace

}  // namespace detail

std::vector<int64_t> mean_pooling_output_shape(std::span<const int64_t> x_shape, const MeanPooling& p,
                                               std::optional<RaggedSizes> ragged) {
  return detail::resolve_mean_pooling("mean_pooling", x_shape, p, ragged).output_shape();
}

Cost mean_pooling_cost(std::span<const int64_t> x_shape, DType dtype, const MeanPooling& p,
                       std::optional<RaggedSizes> ragged) {
  return detail::mean_pooling_cost(detail::resolve_mean_pooling("mean_pooling", x_shape, p, ragged), dtype);
}

void check_ragged_chunks(std::span<const int32_t> offsets, std::span<const int32_t> indices, int64_t seq_len,
                         int64_t chunk_size) {
  detail::check_ragged_chunks("check_ragged_chunks", offsets, indices, seq_len, chunk_size);
}

void mean_pooling(const TensorRef& x, const TensorRef& y, const TensorRef* offsets, const TensorRef* indices,
                  const MeanPooling& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "mean_pooling";
  const detail::MeanPoolingGeometry g =
      detail::validate_mean_pooling_call(kOp, detail::Placement::device, x, y, offsets, indices, p);
  if (g.ragged && p.check_ragged_metadata) detail::check_device_ragged_metadata(kOp, g, *offsets, *indices, stream);
  detail::launch_mean_pooling(kOp, g, x, y, offsets, indices, stream);
}

}  // namespace solops
