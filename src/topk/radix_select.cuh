// The block- and cluster-wide steps of TopkSelectorFwd's kernels (topk_selector.cu): the ordered
// placement of a round's items, the exact selection of the top r entries by radix passes, and the
// ordered compaction of a selection. Every function here is called by all threads of a CTA (of every
// CTA of the cluster, for the cluster-wide ones) with the same arguments, and returns after barriers.
//
// Entries are (key, position) pairs, keys from score_key. They rank by key descending, then position
// ascending: the spec's order with its tie rule, so that "the top r entries" is one set.
//
// A source is what a selection reads: the CTA's candidates in shared memory, or its slice of a row of
// index_score. It hands each thread kItems consecutive entries a round (rounds() rounds), each marked
// valid or not, in position order: round r, thread t holds the entries r * kRound + t * kItems + [0,
// kItems) of the source, so that a prefix sum over the threads (place) keeps position order.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

namespace solops::detail::topk_kernels {

namespace cg = cooperative_groups;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kItems = 4;                 // consecutive entries a thread holds in a round
constexpr int kRound = kThreads * kItems;  // entries a round
constexpr int kBins = 256;                // a radix pass's bins
constexpr int kMaxRanks = 8;              // CTAs of a cluster, the portable limit
constexpr unsigned kFullMask = 0xFFFFFFFFu;

struct Items {
  uint32_t key[kItems];
  int32_t position[kItems];
  bool valid[kItems];
};

// The top r entries of a source set, as select_top finds them: an entry is in iff its key is above
// key_above, or it equals tie_key and its position is at most last_tie (the ties at the boundary key
// that the tie rule takes). local_count counts this CTA's entries in it.
struct Selection {
  uint32_t key_above;
  uint32_t tie_key;
  int32_t last_tie;
  int local_count;

  __device__ bool contains(uint32_t key, int32_t position) const {
    return key > key_above || (key == tie_key && position <= last_tie);
  }
};

// The empty selection: no key is above the largest, no position at most -1.
__device__ constexpr Selection nothing() { return {0xFFFFFFFFu, 0, -1, 0}; }

// One radix pass's pick: the bin that holds the wanted entry, the entries of higher bins and of that
// bin over the scope (the CTA or the cluster), and the same over this CTA alone.
struct Pick {
  uint32_t bin, above, count, local_above, local_count;
};

// The shared arrays of the steps below. Each double-buffered array alternates between its halves
// from one use to the next (Parity), so that a use's writes never meet the previous use's reads:
// those end before the barrier that the use in between passes.
struct SelectShared {
  uint32_t hist[2][kBins];
  Pick pick[2];
  uint32_t warp_words[2][kWarps][2];
  uint32_t published[2][2];  // the CTA's words for the other CTAs of its cluster
};

// The half of each double-buffered array that the next use takes: the same in every thread of a CTA,
// and `cluster` (and `hist` during a cluster-wide selection) the same in every CTA of the cluster,
// since every use is made by all of them.
struct Parity {
  int hist = 0, block = 0, cluster = 0;
};

__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x & 31); }
__device__ __forceinline__ int warp_id() { return static_cast<int>(threadIdx.x >> 5); }

template <class V>
__device__ V warp_inclusive_sum(V value) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const V lower = __shfl_up_sync(kFullMask, value, d);
    if (lane_id() >= d) value += lower;
  }
  return value;
}

// The sum over this lane and the lanes above it.
template <class V>
__device__ V warp_suffix_sum(V value) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const V upper = __shfl_down_sync(kFullMask, value, d);
    if (lane_id() + d < 32) value += upper;
  }
  return value;
}

template <bool kCluster>
__device__ __forceinline__ void scope_sync() {
  if constexpr (kCluster) cg::cluster_group::sync();
  else __syncthreads();
}

// The same shared address in the CTA of the given cluster rank.
template <class V>
__device__ __forceinline__ V* at_rank(V* address, int rank) {
  return cg::cluster_group::map_shared_rank(address, rank);
}

// The CTA's slots for a round: this thread's `count` items (at most kItems) follow those of the threads
// before it. Returns the thread's first slot; `total` gets the CTA's count. The warp's sum comes from
// one ballot per bit of the counts, which issue together, rather than a chain of shuffles: a round's
// latency is mostly this function's.
__device__ inline int place(int count, int& total, SelectShared& sh, Parity& parity) {
  static_assert(kItems < 8, "a count has three bits");
  const unsigned up_to_lane = (2u << lane_id()) - 1u;  // lane 31: 0 - 1, every lane
  int inclusive = 0;
#pragma unroll
  for (int bit = 0; bit < 3; ++bit) {
    inclusive += __popc(__ballot_sync(kFullMask, (count >> bit) & 1) & up_to_lane) << bit;
  }
  uint32_t(*words)[2] = sh.warp_words[parity.block];
  if (lane_id() == 31) words[warp_id()][0] = static_cast<uint32_t>(inclusive);
  __syncthreads();
  const int warp_count = lane_id() < kWarps ? static_cast<int>(words[lane_id()][0]) : 0;
  const int warps_inclusive = warp_inclusive_sum(warp_count);
  total = __shfl_sync(kFullMask, warps_inclusive, kWarps - 1);
  const int warp_base = __shfl_sync(kFullMask, warps_inclusive - warp_count, warp_id());
  parity.block ^= 1;
  return warp_base + inclusive - count;
}

// Publishes this CTA's two words to its cluster; returns them, readable at every rank (at_rank) until
// the second publish after this one.
__device__ inline uint32_t* publish(uint32_t first, uint32_t second, SelectShared& sh, Parity& parity) {
  uint32_t* words = sh.published[parity.cluster];
  if (threadIdx.x == 0) {
    words[0] = first;
    words[1] = second;
  }
  cg::cluster_group::sync();
  parity.cluster ^= 1;
  return words;
}

// The minimum and maximum of every thread's low and high over the CTA, or over the cluster.
template <bool kCluster>
__device__ void scope_min_max(uint32_t& low, uint32_t& high, int ranks, SelectShared& sh, Parity& parity) {
  low = __reduce_min_sync(kFullMask, low);
  high = __reduce_max_sync(kFullMask, high);
  uint32_t(*words)[2] = sh.warp_words[parity.block];
  if (lane_id() == 0) {
    words[warp_id()][0] = low;
    words[warp_id()][1] = high;
  }
  __syncthreads();
  for (int w = 0; w < kWarps; ++w) {
    low = min(low, words[w][0]);
    high = max(high, words[w][1]);
  }
  parity.block ^= 1;
  if constexpr (kCluster) {
    const uint32_t* mine = publish(low, high, sh, parity);
    for (int rank = 0; rank < ranks; ++rank) {
      const uint32_t* theirs = at_rank(mine, rank);
      low = min(low, theirs[0]);
      high = max(high, theirs[1]);
    }
  }
}

// Warp 0, after a pass's histograms are complete: the bin, counted from the top, where the scope's
// entries reach `need`, the scope's count above it and in it, and this CTA's. One lane writes it.
template <bool kCluster>
__device__ void pick_bin(const uint32_t* hist, uint32_t need, int ranks, Pick& out) {
  const int lane = lane_id();
  uint32_t total[8], mine[8];
  uint32_t lane_total = 0, lane_mine = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    mine[i] = hist[8 * lane + i];
    if constexpr (kCluster) {
      total[i] = 0;
      for (int rank = 0; rank < ranks; ++rank) total[i] += at_rank(hist, rank)[8 * lane + i];
    } else {
      total[i] = mine[i];
    }
    lane_total += total[i];
    lane_mine += mine[i];
  }
  // Lane 31 holds the highest bins: a lane's entries rank below those of the lanes above it.
  uint32_t running = warp_suffix_sum(lane_total) - lane_total;
  uint32_t running_mine = warp_suffix_sum(lane_mine) - lane_mine;
  if (running < need && need <= running + lane_total) {
    for (int i = 7; i >= 0; --i) {
      if (running + total[i] >= need) {
        out = {static_cast<uint32_t>(8 * lane + i), running, total[i], running_mine, mine[i]};
        break;
      }
      running += total[i];
      running_mine += mine[i];
    }
  }
}

// Calls visit(v) for each of this thread's entries of the source that participate: value(key,
// position, v) sets v and says whether the entry does.
template <class Source, class Value, class Visit>
__device__ void for_each_value(const Source& source, Value value, Visit visit) {
  for (int r = 0; r < source.rounds(); ++r) {
    Items items;
    source.round(r, items);
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      uint32_t v;
      if (items.valid[e] && value(items.key[e], items.position[e], v)) visit(v);
    }
  }
}

// Where a search over values ends: `low` is the floor of its last bin (every value of the bin is at
// least low), `need` the entries still wanted there, `count` the scope's entries of the bin; local_above
// counts this CTA's entries above the bin and local_count its entries in it.
struct Found {
  uint32_t low;
  int need;
  int count;
  int local_above, local_count;
};

// Readies the histograms for a search (find_value): its passes start on half 0 in every CTA of a
// cluster, whatever each did alone before. Half 0 may hold the counts of the last pass; nothing reads
// them any more: a barrier (a cluster barrier, where other CTAs read them) has passed since.
__device__ inline void begin_search(SelectShared& sh, Parity& parity) {
  if (threadIdx.x < kBins) sh.hist[0][threadIdx.x] = 0;
  __syncthreads();
  parity.hist = 0;
}

// The `need`-th largest value among the participating entries of the scope (need >= 1, and at least
// need entries participate; value as for_each_value).
// Each pass splits the range of values still in play, [low, high], into at most 256 bins of 2^shift
// values, counts the entries of each (shared-memory atomics; the cluster's CTAs add theirs up), keeps
// the bin that holds the wanted entry and drops those above it from `need`. Binning the range rather
// than fixed digits of the key spreads the counts over many bins even where the values crowd into one
// exponent, so that the atomics rarely meet on an address. It ends once every entry of the kept bin is
// wanted, or the bin is one value (ties): at most five passes for 32-bit values.
template <bool kCluster, class Source, class Value>
__device__ Found find_value(const Source& source, Value value, int need, int ranks, SelectShared& sh,
                            Parity& parity) {
  uint32_t low = 0xFFFFFFFFu, high = 0;
  for_each_value(source, value, [&](uint32_t v) {
    low = min(low, v);
    high = max(high, v);
  });
  scope_min_max<kCluster>(low, high, ranks, sh, parity);
  int local_above = 0;
  while (true) {
    const uint32_t span = high - low;
    const int shift = span == 0 ? 0 : max(0, 32 - __clz(span) - 8);
    uint32_t* hist = sh.hist[parity.hist];
    for_each_value(source, value, [&](uint32_t v) {
      if (v >= low && v <= high) atomicAdd(&hist[(v - low) >> shift], 1u);
    });
    scope_sync<kCluster>();
    // Warp 0 reads the histograms (and the other CTAs'); the other warps clear the other half for
    // the next pass, which no CTA reads now: their last reads of it came before this barrier.
    if (warp_id() == 0) {
      pick_bin<kCluster>(hist, static_cast<uint32_t>(need), ranks, sh.pick[parity.hist]);
    } else if (threadIdx.x - 32 < kBins) {
      sh.hist[parity.hist ^ 1][threadIdx.x - 32] = 0;
    }
    __syncthreads();
    const Pick pick = sh.pick[parity.hist];
    parity.hist ^= 1;
    need -= static_cast<int>(pick.above);
    local_above += static_cast<int>(pick.local_above);
    low += pick.bin << shift;
    const uint32_t width = (1u << shift) - 1;
    if (high - low > width) high = low + width;
    if (static_cast<int>(pick.count) == need || low == high) {
      return {low, need, static_cast<int>(pick.count), local_above, static_cast<int>(pick.local_count)};
    }
  }
}

// The top `wanted` entries of the scope's sources (at least `wanted` entries in all): the key of the
// wanted-th, then, where keys tie across the boundary, the position of the last tie taken.
template <bool kCluster, class Source>
__device__ Selection select_top(const Source& source, int wanted, int ranks, SelectShared& sh, Parity& parity) {
  begin_search(sh, parity);
  const auto by_key = [](uint32_t key, int32_t, uint32_t& v) {
    v = key;
    return true;
  };
  const Found key = find_value<kCluster>(source, by_key, wanted, ranks, sh, parity);
  // A key is never 0, so that low - 1 is the key below every key of the bin.
  if (key.count == key.need) return {key.low - 1, 0, -1, key.local_above + key.local_count};
  // The bin is one key, with more entries than wanted: the lowest positions among them, by the
  // largest complements.
  const uint32_t tied = key.low;
  const auto by_position = [tied](uint32_t k, int32_t position, uint32_t& v) {
    v = ~static_cast<uint32_t>(position);
    return k == tied;
  };
  const Found position = find_value<kCluster>(source, by_position, key.need, ranks, sh, parity);
  // Positions are distinct, so that the search ends with its whole bin wanted.
  return {tied, tied, static_cast<int32_t>(~position.low),
          key.local_above + position.local_above + position.local_count};
}

// Writes the source's entries that `take` contains and `skip` does not, in source order:
// write(slot, key, position) with slots 0, 1, ... of this CTA. Returns the count. The source may be the
// destination: a round's entries are read before place()'s barrier and written after it, to slots below
// the round's end.
template <class Source, class Write>
__device__ int compact(const Source& source, const Selection& take, const Selection& skip, Write write,
                       SelectShared& sh, Parity& parity) {
  int written = 0;
  for (int r = 0; r < source.rounds(); ++r) {
    Items items;
    source.round(r, items);
    bool keep[kItems];
    int count = 0;
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      keep[e] = items.valid[e] && take.contains(items.key[e], items.position[e]) &&
                !skip.contains(items.key[e], items.position[e]);
      count += keep[e];
    }
    int total;
    int slot = written + place(count, total, sh, parity);
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      if (keep[e]) write(slot++, items.key[e], items.position[e]);
    }
    written += total;
  }
  return written;
}

}  // namespace solops::detail::topk_kernels
