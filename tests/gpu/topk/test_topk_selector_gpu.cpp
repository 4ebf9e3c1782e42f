// TopkSelector on the GPU against the CPU reference (spec §5.1, §6.13), slot for slot (the tie rule and
// the slot order included), each output also under the spec's tie-aware check: every catalogue row at
// reduced S and one whole (8 GiB of scores, where the device has the memory), windows of 0, 1, topk - 1,
// topk, topk + 1 and all keys, rows past the candidate buffer (a sampled floor, and a sample that
// misleads it), causal windows, heavy ties, NaN and infinities, kv groups, f16 and bf16,
// unaligned scores and odd S_kv (one load a score), topk past the shared-memory path (sorted in several
// chunks), few long rows (clusters of CTAs), determinism, CUDA graph capture and the device-side rules.
// Outputs are poisoned first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cpu/topk/topk_checks.hpp"
#include "gpu/gpu_support.hpp"
#include "manifest_rows.hpp"
#include "solops/topk.hpp"

namespace solops::testing::topk {
namespace {

// A copy of `host` on the device, or null where the call leaves it out.
std::unique_ptr<DeviceBuffer> upload(const std::optional<HostTensor>& host) {
  if (!host) return nullptr;
  auto buffer = std::make_unique<DeviceBuffer>(host->bytes.size());
  buffer->upload(host->bytes.data());
  return buffer;
}

// The op's output for a call: index_score `offset` elements into its allocation, the output poisoned,
// the launch replayed from a CUDA graph where `graph`.
HostTensor device_output(TopkCall& call, size_t offset = 0, bool graph = false) {
  DeviceBuffer scores(call.scores.bytes.size(), offset * dtype_size(call.scores.dtype));
  scores.upload(call.scores.bytes.data());
  const std::unique_ptr<DeviceBuffer> starts = upload(call.starts), ends = upload(call.ends);
  const Shape rows{call.scores.shape[0], call.scores.shape[1]};
  std::optional<TensorRef> starts_ref, ends_ref;
  if (starts) starts_ref = device_ref(starts->data(), DType::i32, rows);
  if (ends) ends_ref = device_ref(ends->data(), DType::i32, rows);
  HostTensor out(call.output_shape(), DType::i32);
  DeviceBuffer indexes(out.bytes.size());
  if (!out.bytes.empty()) cuda_ok(cudaMemset(indexes.data(), kPoisonByte, out.bytes.size()), "poison");
  const TensorRef scores_ref = device_ref(scores.data(), call.scores.dtype, call.scores.shape);
  const TensorRef out_ref = device_ref(indexes.data(), DType::i32, out.shape);
  launch_maybe_in_graph(
      [&](cudaStream_t stream) {
        topk_selector(scores_ref, starts_ref ? &*starts_ref : nullptr, ends_ref ? &*ends_ref : nullptr, out_ref,
                      call.params, stream);
      },
      graph);
  indexes.download(out.bytes.data());
  return out;
}

// The device's output against the reference's, slot for slot, then under the tie-aware check: the first
// failure, or "".
std::string compare(TopkCall& call, size_t offset = 0, bool graph = false) {
  const HostTensor want = reference_output(call);
  const HostTensor got = device_output(call, offset, graph);
  const std::string difference = first_difference(want, got);
  return difference.empty() ? tie_aware_mismatch(call, got) : difference;
}

TopkCall random_call(const Shape& shape, int64_t topk, DType dtype, Scores kind, std::mt19937_64& rng,
                     bool sorted = false) {
  TopkCall call{HostTensor(shape, dtype)};
  fill_scores(call.scores, rng, kind);
  call.params = {topk, sorted};
  return call;
}

// Windows of the given counts, cycled over the query rows, each at a random start in the row.
void set_windows(TopkCall& call, const std::vector<int64_t>& counts, std::mt19937_64& rng) {
  std::vector<int32_t> starts, ends;
  for (int64_t row = 0; row < call.rows(); ++row) {
    const int64_t count = std::min(counts[static_cast<size_t>(row) % counts.size()], call.keys());
    const int64_t start = std::uniform_int_distribution<int64_t>(0, call.keys() - count)(rng);
    starts.push_back(static_cast<int32_t>(start));
    ends.push_back(static_cast<int32_t>(start + count));
  }
  const Shape rows{call.scores.shape[0], call.scores.shape[1]};
  call.starts = int_tensor(rows, starts);
  call.ends = int_tensor(rows, ends);
}

// Causal windows: query row s of a chunk of S sees the keys before s + S_kv - S + 1.
void set_causal_ends(TopkCall& call) {
  std::vector<int32_t> ends;
  for (int64_t row = 0; row < call.rows(); ++row) {
    ends.push_back(static_cast<int32_t>(row % call.scores.shape[1] + call.keys() - call.scores.shape[1] + 1));
  }
  call.ends = int_tensor({call.scores.shape[0], call.scores.shape[1]}, ends);
}

class TopkSelectorGpu : public testing::GpuTest {};

TEST_F(TopkSelectorGpu, EveryCatalogueRowAtReducedS) {
  std::mt19937_64 rng(70);
  const std::vector<nlohmann::json> rows = catalogue_rows("TopkSelectorFwd");
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    Shape shape = row["tensors"]["index_score"].get<Shape>();
    shape[1] = 48;  // of 32768 query rows
    for (bool sorted : {false, true}) {
      TopkCall call = random_call(shape, row["params"]["topk"].get<int64_t>(), parse_dtype(row["dtype"]),
                                  Scores::normal, rng, sorted);
      call.starts = int_tensor({1, 48}, std::vector<int32_t>(48, 0));
      call.ends = int_tensor({1, 48}, std::vector<int32_t>(48, static_cast<int32_t>(shape[2])));
      EXPECT_EQ(compare(call), "") << row["workload"] << " " << call.describe();
    }
  }
}

TEST_F(TopkSelectorGpu, OneWholeCatalogueRow) {
  // topk2048-s32k-kv64k: 2^31 f32 scores, whose byte offsets pass 32 bits. The host draws 67 query rows
  // (uniform scores of 2^32 levels: a row of 65536 holds a few ties, which the tie rule orders) and the
  // device repeats them over the 32768, so that the reference runs over 67 rows only; a row read at an
  // offset wrapped by a power of two of rows (67 is odd) is another row's scores, and its output differs.
  constexpr int64_t kQueries = 32768, kKeys = 65536, kPeriod = 67, kTopk = 2048;
  size_t free_bytes = 0, total_bytes = 0;
  cuda_ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (free_bytes < (size_t{9} << 30)) GTEST_SKIP() << "SKIPPED: the device has " << (free_bytes >> 20) << " MiB free";
  TopkCall period{HostTensor({1, kPeriod, kKeys, 1}, DType::f32)};
  period.params = {kTopk, false};
  auto* drawn = reinterpret_cast<float*>(period.scores.bytes.data());
  uint64_t state = 71;
  for (int64_t i = 0; i < period.scores.numel(); ++i) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    drawn[i] = static_cast<float>(static_cast<int32_t>(state >> 32)) * 0x1p-31f;
  }
  const HostTensor want = reference_output(period);

  constexpr size_t kRowBytes = kKeys * sizeof(float);
  DeviceBuffer scores(kQueries * kRowBytes);
  char* base = static_cast<char*>(scores.data());
  cuda_ok(cudaMemcpy(base, drawn, kPeriod * kRowBytes, cudaMemcpyHostToDevice), "upload");
  // Doubling copies: the rows filled are always a multiple of the period.
  for (int64_t filled = kPeriod; filled < kQueries; filled *= 2) {
    const int64_t rows = std::min(filled, kQueries - filled);
    cuda_ok(cudaMemcpy(base + filled * kRowBytes, base, rows * kRowBytes, cudaMemcpyDeviceToDevice), "repeat");
  }
  HostTensor got({1, kQueries, 1, kTopk}, DType::i32);
  DeviceBuffer indexes(got.bytes.size());
  cuda_ok(cudaMemset(indexes.data(), kPoisonByte, got.bytes.size()), "poison");
  topk_selector(device_ref(base, DType::f32, {1, kQueries, kKeys, 1}), nullptr, nullptr,
                device_ref(indexes.data(), DType::i32, got.shape), period.params);
  cuda_ok(cudaDeviceSynchronize(), "topk_selector");
  indexes.download(got.bytes.data());
  for (int64_t row = 0; row < kQueries; ++row) {
    const int64_t from = row % kPeriod;
    for (int64_t slot = 0; slot < kTopk; ++slot) {
      const int32_t expected = int_at(want, from * kTopk + slot), actual = int_at(got, row * kTopk + slot);
      ASSERT_EQ(actual, expected) << "row " << row << " slot " << slot;
    }
  }
}

TEST_F(TopkSelectorGpu, SampledFloors) {
  // Rows longer than the candidate buffer start from a floor sampled over the row: random scores, NaN
  // and infinities, heavy ties, causal windows, bf16; and rows whose sample is all of their largest
  // scores (every position p with p % 16 < 4 scores above the rest, and the sample's spots are kItems
  // scores at multiples of 16), where too few scores pass the sampled floor and the row is streamed
  // again. 300 rows take a CTA each, 2 rows a cluster of CTAs each.
  std::mt19937_64 rng(80);
  for (int64_t rows : {int64_t{300}, int64_t{2}}) {
    for (bool sorted : {false, true}) {
      // f32 unsorted at topk 1024, bf16 (ties among the large scores) sorted at topk 2048.
      const DType dtype = sorted ? DType::bf16 : DType::f32;
      TopkCall aligned = random_call({1, rows, 65536, 1}, sorted ? 2048 : 1024, dtype, Scores::normal, rng, sorted);
      for (int64_t i = 0; i < aligned.scores.numel(); ++i) {
        const double v = std::abs(aligned.scores.at(i));
        aligned.scores.set(i, i % 16 < 4 ? 10.0 + v : -v);
      }
      EXPECT_EQ(compare(aligned), "") << "sample-aligned " << aligned.describe();
    }
  }
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (bool sorted : {false, true}) {
      TopkCall special = random_call({1, 20, 50000, 1}, 2048, dtype, Scores::special, rng, sorted);
      EXPECT_EQ(compare(special), "") << special.describe();
      TopkCall ties = random_call({1, 20, 50000, 1}, 1000, dtype, Scores::few_values, rng, sorted);
      EXPECT_EQ(compare(ties), "") << ties.describe();
      // 64 query rows after 12000 earlier keys.
      TopkCall causal = random_call({1, 64, 12064, 1}, 2048, dtype, Scores::normal, rng, sorted);
      set_causal_ends(causal);
      EXPECT_EQ(compare(causal), "") << causal.describe();
      // Windows of 4097 to 5000 keys (just past the buffer) at random starts.
      TopkCall windows = random_call({1, 64, 12000, 1}, 2048, dtype, Scores::normal, rng, sorted);
      set_windows(windows, {4097, 4100, 4500, 5000}, rng);
      EXPECT_EQ(compare(windows), "") << windows.describe();
    }
  }
}

TEST_F(TopkSelectorGpu, ShortAndLongWindows) {
  // Windows of 0, 1, topk - 1, topk, topk + 1 and every key, for topk on either path (the last past
  // the shared-memory buffer) and every dtype, score kind and a few group counts.
  std::mt19937_64 rng(72);
  const int64_t topks[] = {1, 7, 1024, 2048, 2049};
  const DType dtypes[] = {DType::f32, DType::bf16, DType::f16};
  const Scores kinds[] = {Scores::normal, Scores::few_values, Scores::special};
  int c = 0;
  for (int64_t topk : topks) {
    for (DType dtype : dtypes) {
      const Shape shape{1, 12, std::max<int64_t>(3 * topk + 5, 64), 1 + c % 3};
      TopkCall call = random_call(shape, topk, dtype, kinds[c % 3], rng, c % 2 == 1);
      set_windows(call, {0, 1, topk - 1, topk, topk + 1, shape[2]}, rng);
      EXPECT_EQ(compare(call), "") << "case " << c << " " << call.describe();
      ++c;
    }
  }
}

TEST_F(TopkSelectorGpu, CausalPrefillChunks) {
  std::mt19937_64 rng(73);
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (bool sorted : {false, true}) {
      // 96 query rows after 2000 earlier keys; and a chunk from the start, whose rows see 1 to 300 keys.
      TopkCall after = random_call({1, 96, 2096, 1}, 1024, dtype, Scores::normal, rng, sorted);
      set_causal_ends(after);
      EXPECT_EQ(compare(after), "") << after.describe();
      TopkCall first = random_call({2, 300, 300, 2}, 64, dtype, Scores::few_values, rng, sorted);
      set_causal_ends(first);
      EXPECT_EQ(compare(first), "") << first.describe();
    }
  }
}

TEST_F(TopkSelectorGpu, RandomShapes) {
  // Odd S_kv, unaligned scores (one load a score), G up to 4, any topk up to S_kv, random clamped windows.
  std::mt19937_64 rng(74);
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  const Scores kinds[] = {Scores::normal, Scores::few_values, Scores::special};
  for (int c = 0; c < 60; ++c) {
    const int64_t keys = std::uniform_int_distribution<int64_t>(1, c % 5 == 0 ? 40000 : 5000)(rng);
    const Shape shape{1 + c % 2, std::uniform_int_distribution<int64_t>(1, 20)(rng), keys, 1 + c % 4};
    const int64_t topk = std::uniform_int_distribution<int64_t>(1, std::min<int64_t>(keys, 2500))(rng);
    TopkCall call = random_call(shape, topk, dtypes[c % 3], kinds[(c / 3) % 3], rng, c % 4 < 2);
    if (c % 3 != 0) {
      std::vector<int32_t> starts, ends;
      std::uniform_int_distribution<int32_t> bound(-10, static_cast<int32_t>(keys) + 10);
      for (int64_t row = 0; row < call.rows(); ++row) {
        starts.push_back(bound(rng));
        ends.push_back(bound(rng));
      }
      call.starts = int_tensor({shape[0], shape[1]}, starts);
      call.ends = int_tensor({shape[0], shape[1]}, ends);
    }
    const size_t offset = c % 7 == 3 ? 1 : 0;
    EXPECT_EQ(compare(call, offset), "") << "case " << c << " " << call.describe() << " offset " << offset;
  }
}

TEST_F(TopkSelectorGpu, FewLongRowsSplitAcrossAClusterOfCtas) {
  // Fewer rows than SMs: a cluster of CTAs shares each row, and their candidates meet in one selection.
  std::mt19937_64 rng(75);
  for (bool sorted : {false, true}) {
    TopkCall decode = random_call({1, 3, 131072, 1}, 2048, DType::f32, Scores::normal, rng, sorted);
    set_windows(decode, {131072, 100000, 70001}, rng);
    EXPECT_EQ(compare(decode), "") << decode.describe();
    TopkCall ties = random_call({1, 2, 200000, 1}, 1500, DType::bf16, Scores::few_values, rng, sorted);
    EXPECT_EQ(compare(ties), "") << ties.describe();
    TopkCall wide = random_call({1, 2, 90000, 1}, 5000, DType::f32, Scores::special, rng, sorted);
    EXPECT_EQ(compare(wide), "") << wide.describe();
  }
}

TEST_F(TopkSelectorGpu, TopkPastTheSharedMemoryPath) {
  // Selection over global memory: topk = S_kv, and sorted output in several chunks of slots.
  std::mt19937_64 rng(76);
  for (bool sorted : {false, true}) {
    TopkCall all = random_call({1, 4, 5000, 1}, 5000, DType::f32, Scores::few_values, rng, sorted);
    EXPECT_EQ(compare(all), "") << all.describe();
    TopkCall chunks = random_call({2, 5, 20000, 2}, 6500, DType::f16, Scores::special, rng, sorted);
    set_windows(chunks, {20000, 6499, 6500, 6501, 0}, rng);
    EXPECT_EQ(compare(chunks), "") << chunks.describe();
  }
}

TEST_F(TopkSelectorGpu, TwoRunsAreBitwiseEqual) {
  std::mt19937_64 rng(77);
  for (int64_t topk : {int64_t{700}, int64_t{3000}}) {
    for (bool sorted : {false, true}) {
      TopkCall call = random_call({1, 40, 30000, 2}, topk, DType::bf16, Scores::few_values, rng, sorted);
      const HostTensor first = device_output(call);
      EXPECT_EQ(first_difference(first, device_output(call)), "") << call.describe();
    }
  }
}

TEST_F(TopkSelectorGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(78);
  TopkCall rows = random_call({1, 300, 9000, 1}, 2048, DType::f32, Scores::normal, rng);
  set_causal_ends(rows);
  EXPECT_EQ(compare(rows, 0, true), "");
  TopkCall cluster = random_call({1, 2, 100000, 1}, 1000, DType::bf16, Scores::normal, rng, true);
  EXPECT_EQ(compare(cluster, 0, true), "");
  TopkCall wide = random_call({1, 6, 8000, 1}, 4000, DType::f32, Scores::few_values, rng, true);
  EXPECT_EQ(compare(wide, 0, true), "");
}

TEST_F(TopkSelectorGpu, EmptyBatchesLaunchNothing) {
  std::mt19937_64 rng(79);
  for (const Shape& shape : {Shape{0, 4, 100, 1}, Shape{2, 0, 100, 3}}) {
    TopkCall call = random_call(shape, 10, DType::f32, Scores::normal, rng);
    EXPECT_EQ(compare(call), "") << call.describe();
  }
}

TEST_F(TopkSelectorGpu, DeviceRules) {
  const Shape shape{1, 2, 8, 1};
  DeviceBuffer scores(16 * sizeof(float)), out(4 * sizeof(int32_t));
  const TensorRef scores_ref = device_ref(scores.data(), DType::f32, shape);
  const TensorRef over_scores = device_ref(scores.data(), DType::i32, Shape{1, 2, 1, 2});
  const TensorRef out_ref = device_ref(out.data(), DType::i32, Shape{1, 2, 1, 2});
  const auto expect_message = [](auto call, const std::string& fragment) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_message([&] { topk_selector(scores_ref, nullptr, nullptr, over_scores, {2}); },
                 "topk_selector: index_score and indexes overlap in memory");
  HostTensor host_ends({1, 2}, DType::i32);
  const TensorRef host_ends_ref = host_ends.ref();
  expect_message([&] { topk_selector(scores_ref, nullptr, &host_ends_ref, out_ref, {2}); },
                 "topk_selector: ends must be a CUDA tensor");
  const TensorRef host_pointer = device_ref(host_ends.bytes.data(), DType::i32, Shape{1, 2});
  expect_message([&] { topk_selector(scores_ref, &host_pointer, nullptr, out_ref, {2}); },
                 "starts: data pointer is not device memory");
}

}  // namespace
}  // namespace solops::testing::topk
