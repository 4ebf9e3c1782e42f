// detail::parallel_for, which spreads the CPU references' items over threads: every item runs once,
// small calls stay on the caller's thread, and a body's exception reaches the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/parallel.hpp"

namespace solops::detail {
namespace {

TEST(ParallelFor, RunsEveryItemOnce) {
  // Items of 2^20 work: above the one-thread bound, so that the call starts threads where it can.
  for (const int64_t count : {int64_t{1}, int64_t{7}, int64_t{1000}}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(count));
    parallel_for(count, int64_t{1} << 20, [&](int64_t i) { ++runs[static_cast<size_t>(i)]; });
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)].load(), 1) << count << " " << i;
  }
}

TEST(ParallelFor, TinyItemsInBlocks) {
  // 2^23 items of work 1: blocks of 2^16 items, the last one partial.
  const int64_t count = (int64_t{1} << 23) + 5;
  std::vector<unsigned char> runs(static_cast<size_t>(count));
  parallel_for(count, 1, [&](int64_t i) { ++runs[static_cast<size_t>(i)]; });
  for (int64_t i = 0; i < count; ++i) ASSERT_EQ(runs[static_cast<size_t>(i)], 1) << i;
}

TEST(ParallelFor, SmallCallsStayOnTheCallersThread) {
  std::set<std::thread::id> ids;
  parallel_for(100, 1000, [&](int64_t) { ids.insert(std::this_thread::get_id()); });
  EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ParallelFor, RethrowsABodysException) {
  std::atomic<int64_t> runs{0};
  EXPECT_THROW(parallel_for(64, int64_t{1} << 22,
                            [&](int64_t i) {
                              ++runs;
                              if (i == 10) throw std::runtime_error("item 10");
                            }),
               std::runtime_error);
  EXPECT_GE(runs.load(), 11);  // the items before the throwing one ran
}

}  // namespace
}  // namespace solops::detail
