// Helpers shared by the CPU and GPU mean pooling tests: ragged metadata built from sequence lengths,
// int32 host tensors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "host_tensor.hpp"

namespace solops::testing {

// offsets and indices as spec §4.6 enumerates them (TileOPs' prepare_chunk_indices): every chunk
// of every sequence, sequence-major, in order; empty sequences have none.
struct RaggedMetadata {
  std::vector<int32_t> offsets;
  std::vector<int32_t> indices;  // (sequence, chunk) pairs, flattened
  int64_t chunks() const { return static_cast<int64_t>(indices.size()) / 2; }
};

inline RaggedMetadata ragged_metadata(const std::vector<int64_t>& seq_lens, int64_t chunk_size) {
  RaggedMetadata m;
  m.offsets.push_back(0);
  for (size_t s = 0; s < seq_lens.size(); ++s) {
    m.offsets.push_back(static_cast<int32_t>(m.offsets.back() + seq_lens[s]));
    for (int64_t start = 0, k = 0; start < seq_lens[s]; start += chunk_size, ++k) {
      m.indices.push_back(static_cast<int32_t>(s));
      m.indices.push_back(static_cast<int32_t>(k));
    }
  }
  return m;
}

inline HostTensor int32_tensor(std::vector<int64_t> shape, const std::vector<int32_t>& values) {
  HostTensor t(std::move(shape), DType::i32);
  std::memcpy(t.bytes.data(), values.data(), std::min(t.bytes.size(), values.size() * sizeof(int32_t)));
  return t;
}

inline HostTensor offsets_tensor(const RaggedMetadata& m) {
  return int32_tensor({static_cast<int64_t>(m.offsets.size())}, m.offsets);
}

inline HostTensor indices_tensor(const RaggedMetadata& m) { return int32_tensor({m.chunks(), 2}, m.indices); }

}  // namespace solops::testing
