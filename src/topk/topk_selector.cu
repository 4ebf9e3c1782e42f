// TopkSelectorFwd's kernel: one CTA per query row and group, or a cluster of CTAs that split a long row
// where the rows alone would leave SMs idle. Design and roofline: docs/perf/topk.md.
//
// A row is read once, streaming (topk <= kMaxBufferedTopk, every serving shape): each round of kRound
// scores (48 bytes a thread in flight, evict-first) is turned into keys (score_key) and filtered
// against the CTA's floor; survivors are appended to a candidate buffer in shared memory, in position
// order. The floor starts just under a sample's estimate of the slice's topk-th key (sampled_floor), so
// that on random scores a row's candidates fit the buffer; after the stream, fewer than topk candidates
// mean the estimate was too high, and the slice is streamed again from floor 0. When a round would
// overflow the buffer, the buffer is cut to its exact top topk (select_top with the tie rule) and the
// floor rises to the key below them: no later score at or under it can enter the top topk, since topk
// candidates at lower positions beat it. At the row's end the exact top min(topk, count) of the
// candidates (of every CTA of the cluster, counted together over distributed shared memory) is selected
// and written: in position order straight from the buffers, or gathered to rank 0 and sorted by key (a
// stable radix sort, so that ties keep position order) for sorted = true.
//
// A larger topk has no room in shared memory: the selection then runs over the row's scores in global
// memory, each radix pass reading the row again, and sorted output is produced kSortChunk slots at a
// time (the chunk's boundary selected, its entries gathered and sorted).
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cub/block/block_radix_sort.cuh>
#include <type_traits>

#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/evict_first.cuh"
#include "core/integer.hpp"
#include "topk/radix_select.cuh"
#include "topk/score_key.hpp"
#include "topk/topk_selector.hpp"

namespace solops::detail::topk_kernels {

constexpr int kCapacity = 2 * kRound;                    // the candidate buffer's entries
constexpr int kMaxBufferedTopk = kCapacity - kRound;     // so that a round always fits after a cut
constexpr int kSortChunk = kRound;                       // slots sorted at once: kItems a thread
constexpr int64_t kMinRankKeys = 4 * int64_t{kRound};   // the fewest keys worth a CTA of a cluster
constexpr int64_t kMaxClusters = int64_t{1} << 24;      // a larger grid walks its rows cluster-stride

using BlockSort = cub::BlockRadixSort<uint32_t, kThreads, kItems, int32_t>;

// 16-byte aligned: the candidates are read four at a time.
struct alignas(16) Shared {
  union {
    struct {
      uint32_t key[kCapacity];
      int32_t position[kCapacity];
    } entries;
    typename BlockSort::TempStorage sort;
  };
  SelectShared select;
};
static_assert(sizeof(Shared) <= 48 * 1024, "static shared memory stays under the default limit");

struct Params {
  const void* scores;
  const int32_t* starts;  // null: 0
  const int32_t* ends;    // null: S_kv
  int32_t* indexes;
  int64_t rows;  // B * S * G
  int64_t keys;  // S_kv
  int64_t groups;
  int topk;
  bool sorted;
};

template <class T>
__device__ uint32_t key_of(uint32_t bits) {
  if constexpr (std::is_same_v<T, float>) {
    return score_key(bits);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return score_key(bits << 16);
  } else {
    return score_key(__float_as_uint(__half2float(__ushort_as_half(static_cast<unsigned short>(bits)))));
  }
}

// A CTA's slice [low, high) of one row of index_score, whose score at position j is row[j * stride].
// Round r gives thread t the positions first + r * kRound + t * kItems + [0, kItems), first being low
// rounded down to kItems; positions outside the slice are invalid. kVector: one 16-byte (f32) or
// 8-byte (f16, bf16) load a round, which needs G = 1, S_kv a multiple of kItems and an aligned row;
// otherwise one load a valid position.
template <class T, bool kVector>
struct RowScores {
  static constexpr int kWords = kItems * static_cast<int>(sizeof(T)) / 4;
  struct Raw {
    uint32_t word[kWords];
  };

  const T* row;
  int64_t stride;
  int64_t low, high, first;

  __device__ int64_t start(int r) const { return first + int64_t{r} * kRound + threadIdx.x * kItems; }
  __device__ int rounds() const { return high > low ? static_cast<int>(ceil_div(high - first, kRound)) : 0; }

  // The kItems scores from position p, a multiple of kItems past `first`.
  __device__ Raw load_at(int64_t p, bool evict_first, uint64_t policy) const {
    Raw raw{};
    if constexpr (kVector) {
      // p and S_kv are multiples of kItems: a vector that starts in the row ends in it.
      const bool valid = p < high;
      if constexpr (kWords == 4) {
        const auto* address = reinterpret_cast<const uint4*>(row + p);
        const uint4 v = evict_first ? load_evict_first(address, valid, policy) : valid ? __ldg(address) : uint4{};
        raw.word[0] = v.x, raw.word[1] = v.y, raw.word[2] = v.z, raw.word[3] = v.w;
      } else {
        const auto* address = reinterpret_cast<const uint2*>(row + p);
        const uint2 v = evict_first ? load_evict_first(address, valid, policy) : valid ? __ldg(address) : uint2{};
        raw.word[0] = v.x, raw.word[1] = v.y;
      }
    } else {
#pragma unroll
      for (int e = 0; e < kItems; ++e) {
        const int64_t j = p + e;
        if (j < low || j >= high) continue;
        if constexpr (kWords == 4) {
          raw.word[e] = __ldg(reinterpret_cast<const unsigned*>(row) + j * stride);
        } else {
          raw.word[e / 2] |= uint32_t{__ldg(reinterpret_cast<const unsigned short*>(row) + j * stride)} << (16 * (e % 2));
        }
      }
    }
    return raw;
  }

  __device__ void decode_at(const Raw& raw, int64_t p, Items& items) const {
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int64_t j = p + e;
      uint32_t bits;
      if constexpr (kWords == 4) bits = raw.word[e];
      else bits = raw.word[e / 2] >> (16 * (e % 2)) & 0xFFFFu;
      items.valid[e] = j >= low && j < high;
      items.key[e] = key_of<T>(bits);
      items.position[e] = static_cast<int32_t>(j);
    }
  }

  __device__ Raw load(int r, bool evict_first, uint64_t policy) const { return load_at(start(r), evict_first, policy); }
  __device__ void decode(const Raw& raw, int r, Items& items) const { decode_at(raw, start(r), items); }
  __device__ void round(int r, Items& items) const { decode(load(r, false, 0), r, items); }
};

// One round of entries held in registers: a source of a single round.
struct HeldItems {
  Items items;

  __device__ int rounds() const { return 1; }
  __device__ void round(int, Items& out) const { out = items; }
};

// The CTA's candidates: the first `size` entries of the shared buffer, in position order.
struct Candidates {
  const uint32_t* key;
  const int32_t* position;
  int size;

  __device__ int rounds() const { return (size + kRound - 1) / kRound; }
  __device__ void round(int r, Items& items) const {
    const int first = r * kRound + static_cast<int>(threadIdx.x) * kItems;  // within the buffer
    const uint4 keys = *reinterpret_cast<const uint4*>(key + first);
    const int4 positions = *reinterpret_cast<const int4*>(position + first);
    const uint32_t k[kItems] = {keys.x, keys.y, keys.z, keys.w};
    const int32_t p[kItems] = {positions.x, positions.y, positions.z, positions.w};
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      items.key[e] = k[e];
      items.position[e] = p[e];
      items.valid[e] = first + e < size;
    }
  }
};

__device__ Candidates candidates(const Shared& sh, int size) { return {sh.entries.key, sh.entries.position, size}; }

// Appends a round's entries with keys above `floor` to the buffer; first cuts the buffer to its top
// `topk` and raises the floor where they would not fit.
__device__ void append(const Items& items, int topk, int& size, uint32_t& floor, Shared& sh, Parity& parity) {
  bool keep[kItems];
  int count = 0;
  const auto mark = [&] {
    count = 0;
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      keep[e] = items.valid[e] && items.key[e] > floor;
      count += keep[e];
    }
  };
  mark();
  int total;
  int slot = place(count, total, sh.select, parity);
  if (size + total > kCapacity) {
    // size > kCapacity - kRound >= topk: there is something to cut.
    const Candidates held = candidates(sh, size);
    const Selection top = select_top<false>(held, topk, 1, sh.select, parity);
    compact(
        held, top, nothing(),
        [&](int at, uint32_t key, int32_t position) {
          sh.entries.key[at] = key;
          sh.entries.position[at] = position;
        },
        sh.select, parity);
    size = topk;
    floor = top.key_above;
    mark();
    slot = place(count, total, sh.select, parity);
  }
#pragma unroll
  for (int e = 0; e < kItems; ++e) {
    if (keep[e]) {
      sh.entries.key[size + slot] = items.key[e];
      sh.entries.position[size + slot] = items.position[e];
      ++slot;
    }
  }
  size += total;
}

// A floor for streaming the CTA's slice (a key at or under it is dropped), from a sample of kRound
// scores spread evenly over the slice: thread t's kItems consecutive ones at first + t * step. The slice's
// top topk hold m = topk * n / length of the n sampled scores, in expectation; the floor is just under
// the sample's r-th largest key, r = m + 4 sqrt(m) + 1 (four standard deviations of that count over m),
// so that about (r / n) * length keys pass it: 1.5 to 3 topk on the rows that matter, which fit the
// buffer with no cut. Whether topk keys passed is checked after the stream (stream_candidates). 0 (every
// key passes) where the slice fits the buffer whole, or the sample is too small to help.
template <class T, bool kVector>
__device__ uint32_t sampled_floor(const RowScores<T, kVector>& scores, int topk, Shared& sh, Parity& parity) {
  const int64_t length = scores.high - scores.low;
  if (length <= kCapacity) return 0;
  // step * kThreads <= high - first, so that every spot's kItems scores lie before high; only thread 0's
  // first ones may lie before low.
  const int64_t step = (scores.high - scores.first) / kRound * kItems;
  const int n = kRound - static_cast<int>(scores.low - scores.first);
  const float m = static_cast<float>(topk) * static_cast<float>(n) / static_cast<float>(length);
  const int r = static_cast<int>(m + 4.0f * sqrtf(m)) + 1;
  if (r >= n) return 0;
  const int64_t spot = scores.first + threadIdx.x * step;
  HeldItems sample;
  scores.decode_at(scores.load_at(spot, false, 0), spot, sample.items);
  begin_search(sh.select, parity);
  const auto by_key = [](uint32_t key, int32_t, uint32_t& v) {
    v = key;
    return true;
  };
  // The search ends on a bin whose low is at most the sample's r-th largest key.
  return find_value<false>(sample, by_key, r, 1, sh.select, parity).low - 1;
}

// Rounds of scores a thread has in flight while the stream filters: with vector loads 48 bytes, 3 rounds
// of f32 scores or 6 of f16 and bf16 (24 KB a CTA, 48 KB an SM: some 1.5 to 2 times what the copy rate
// needs at DRAM's loaded latency); with one load a score, 8 words (the registers of 64 a thread that the
// two CTAs an SM leave).
template <class T, bool kVector>
constexpr int kAhead = (kVector ? 12 : 8) / RowScores<T, kVector>::kWords;

// Streams the CTA's slice into the candidate buffer: returns the candidates' count. They hold the
// slice's top topk entries. The floor starts at the sampled one (sampled_floor); where fewer than topk
// keys passed it, the slice is streamed again from floor 0.
template <class T, bool kVector>
__device__ int stream_candidates(const RowScores<T, kVector>& scores, int topk, Shared& sh, Parity& parity) {
  using Raw = typename RowScores<T, kVector>::Raw;
  constexpr int kDepth = kAhead<T, kVector>;
  const uint64_t policy = evict_first_policy();
  const int rounds = scores.rounds();
  for (bool sampled = true;; sampled = false) {
    Raw ahead[kDepth]{};
#pragma unroll
    for (int h = 0; h < kDepth; ++h) {
      if (h < rounds) ahead[h] = scores.load(h, true, policy);
    }
    // The sample's loads and selection overlap the first rounds' loads.
    uint32_t floor = sampled ? sampled_floor(scores, topk, sh, parity) : 0;
    const bool guessed = floor != 0;
    int size = 0;
    for (int r = 0; r < rounds; r += kDepth) {
#pragma unroll
      for (int h = 0; h < kDepth; ++h) {
        if (r + h < rounds) {
          // Round r + h's slot takes round r + h + kDepth's load as soon as its scores are read.
          const Raw now = ahead[h];
          if (r + h + kDepth < rounds) ahead[h] = scores.load(r + h + kDepth, true, policy);
          Items items;
          scores.decode(now, r + h, items);
          append(items, topk, size, floor, sh, parity);
        }
      }
    }
    // At least topk candidates above the floor hold every entry of the slice's top topk: those are at or
    // above the topk-th largest key, which is above the floor.
    if (!guessed || size >= topk) return size;
  }
}

// Rank 0: sorts the first `count` entries of its buffer by key, descending and stable (ties keep their
// position order), and writes their positions to out[0, count).
__device__ void sort_and_write(int count, int32_t* out, Shared& sh) {
  uint32_t keys[kItems];
  int32_t positions[kItems];
#pragma unroll
  for (int e = 0; e < kItems; ++e) {
    const int i = static_cast<int>(threadIdx.x) * kItems + e;
    keys[e] = i < count ? sh.entries.key[i] : 0;  // below every key: the padding sorts last
    positions[e] = i < count ? sh.entries.position[i] : -1;
  }
  __syncthreads();  // the sort's storage is the buffer's
  BlockSort(sh.sort).SortDescending(keys, positions);
#pragma unroll
  for (int e = 0; e < kItems; ++e) {
    const int i = static_cast<int>(threadIdx.x) * kItems + e;
    if (i < count) out[i] = positions[e];
  }
  __syncthreads();
}

// The cluster's top `wanted` entries of the row (its CTAs' sources together hold them) written to
// out[0, wanted).
template <class Source>
__device__ void write_row(const Source& source, int wanted, bool sorted, int32_t* out, int ranks, int rank,
                          Shared& sh, Parity& parity) {
  if (!sorted) {
    // In position order: each CTA's selected entries after those of the lower ranks, whose slices
    // hold the lower positions.
    const Selection top = select_top<true>(source, wanted, ranks, sh.select, parity);
    const uint32_t* counts = publish(static_cast<uint32_t>(top.local_count), 0, sh.select, parity);
    int base = 0;
    for (int lower = 0; lower < rank; ++lower) base += static_cast<int>(at_rank(counts, lower)[0]);
    compact(
        source, top, nothing(), [&](int slot, uint32_t, int32_t position) { out[base + slot] = position; },
        sh.select, parity);
    return;
  }
  Selection before = nothing();
  for (int first = 0; first < wanted; first += kSortChunk) {
    const int last = min(first + kSortChunk, wanted);
    const Selection upto = select_top<true>(source, last, ranks, sh.select, parity);
    const uint32_t* counts =
        publish(static_cast<uint32_t>(upto.local_count - before.local_count), 0, sh.select, parity);
    // Each CTA's share of the chunk to the front of its own buffer (in place for the candidates),
    // then rank 0 gathers them after its own, in rank order: position order, which the stable sort
    // keeps among equal keys.
    compact(
        source, upto, before,
        [&](int slot, uint32_t key, int32_t position) {
          sh.entries.key[slot] = key;
          sh.entries.position[slot] = position;
        },
        sh.select, parity);
    cg::cluster_group::sync();
    if (rank == 0) {
      int gathered = static_cast<int>(counts[0]);
      for (int other = 1; other < ranks; ++other) {
        const int count = static_cast<int>(at_rank(counts, other)[0]);
        const uint32_t* keys = at_rank(sh.entries.key, other);
        const int32_t* positions = at_rank(sh.entries.position, other);
        for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreads) {
          sh.entries.key[gathered + i] = keys[i];
          sh.entries.position[gathered + i] = positions[i];
        }
        gathered += count;
      }
      __syncthreads();
      sort_and_write(last - first, out + first, sh);
    }
    cg::cluster_group::sync();  // the other CTAs' buffers are free again
    before = upto;
  }
}

// One CTA's part: rows are walked cluster-stride; the rank's slice of a row is a ceil(count / ranks)
// share of its window, a multiple of kItems.
template <class T, bool kVector, bool kBuffered>
__device__ void select_rows_of_cta(const Params& p, Shared& sh) {
  const int ranks = static_cast<int>(cg::cluster_group::num_blocks());
  const int rank = static_cast<int>(cg::cluster_group::block_rank());
  Parity parity;
  for (int i = static_cast<int>(threadIdx.x); i < 2 * kBins; i += kThreads) sh.select.hist[i / kBins][i % kBins] = 0;
  __syncthreads();
  const int64_t clusters = gridDim.x / ranks;
  for (int64_t row = blockIdx.x / ranks; row < p.rows; row += clusters) {
    const int64_t query = row / p.groups, group = row - query * p.groups;
    const int64_t low = p.starts ? max(int64_t{p.starts[query]}, int64_t{0}) : 0;
    const int64_t high = p.ends ? min(int64_t{p.ends[query]}, p.keys) : p.keys;
    const int64_t count = max(high - low, int64_t{0});
    const int wanted = static_cast<int>(min(int64_t{p.topk}, count));
    int32_t* out = p.indexes + row * p.topk;
    if (wanted > 0) {
      const int64_t share = ceil_div(ceil_div(count, ranks), kItems) * kItems;
      const int64_t mine_low = min(low + rank * share, high), mine_high = min(mine_low + share, high);
      const RowScores<T, kVector> scores{static_cast<const T*>(p.scores) + query * p.keys * p.groups + group,
                                         p.groups, mine_low, mine_high, mine_low / kItems * kItems};
      if constexpr (kBuffered) {
        const int size = stream_candidates(scores, p.topk, sh, parity);
        write_row(candidates(sh, size), wanted, p.sorted, out, ranks, rank, sh, parity);
      } else {
        write_row(scores, wanted, p.sorted, out, ranks, rank, sh, parity);
      }
    }
    if (rank == 0) {
      for (int slot = wanted + static_cast<int>(threadIdx.x); slot < p.topk; slot += kThreads) out[slot] = -1;
    }
    cg::cluster_group::sync();  // no CTA leaves, or reuses its arrays, while another reads them
  }
}

template <class T, bool kVector, bool kBuffered>
__global__ void __launch_bounds__(kThreads, 2) select_rows(const Params p) {
  __shared__ Shared sh;
  select_rows_of_cta<T, kVector, kBuffered>(p, sh);
}

// A cluster splits rows only while the rows alone leave fewer CTAs than two an SM, and each CTA keeps
// at least kMinRankKeys keys.
int cluster_ranks(int64_t rows, int64_t keys, int multiprocessors) {
  const int64_t resident = 2 * int64_t{multiprocessors};
  int ranks = 1;
  while (ranks < kMaxRanks && rows * ranks < resident && keys >= 2 * ranks * kMinRankKeys) ranks *= 2;
  return ranks;
}

template <class T, bool kVector>
auto kernel_for(bool buffered) {
  return buffered ? select_rows<T, kVector, true> : select_rows<T, kVector, false>;
}

template <class T>
void launch(std::string_view op, const TopkGeometry& g, const TopkSelectorTensors& t, bool sorted,
            cudaStream_t stream) {
  const int64_t rows = g.batch * g.queries * g.groups;
  const bool vector = g.groups == 1 && g.keys % kItems == 0 &&
                      reinterpret_cast<uintptr_t>(t.index_score.data) % (kItems * sizeof(T)) == 0;
  const bool buffered = g.topk <= kMaxBufferedTopk;
  const int ranks = cluster_ranks(rows, g.keys, multiprocessor_count(t.index_score.device));
  const Params p{t.index_score.data,
                 t.starts ? static_cast<const int32_t*>(t.starts->data) : nullptr,
                 t.ends ? static_cast<const int32_t*>(t.ends->data) : nullptr,
                 static_cast<int32_t*>(t.indexes.data),
                 rows,
                 g.keys,
                 g.groups,
                 static_cast<int>(g.topk),
                 sorted};
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(std::min(rows, kMaxClusters) * ranks));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = static_cast<unsigned>(ranks);
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  const auto kernel = vector ? kernel_for<T, true>(buffered) : kernel_for<T, false>(buffered);
  check_cuda(cudaLaunchKernelEx(&config, kernel, p), op, "cudaLaunchKernelEx");
}

}  // namespace solops::detail::topk_kernels

namespace solops::detail {

void launch_topk_selector(std::string_view op, const TopkGeometry& geometry, const TopkSelectorTensors& t,
                          bool sorted, cudaStream_t stream) {
  if (geometry.batch * geometry.queries == 0) return;
  dispatch_float(t.index_score.dtype,
                 [&]<class T>() { topk_kernels::launch<T>(op, geometry, t, sorted, stream); });
  check_launch(op);
}

}  // namespace solops::detail
