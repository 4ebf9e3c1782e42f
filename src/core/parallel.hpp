// Host-side parallel loops for the CPU references. The references are the executable spec and
// accumulate in float64, one item (an output plane, a channel) at a time; the large catalogue rows
// make them the slowest part of the GPU tests and the benchmark's checks. Items are independent, so
// they are spread over threads, each item still computed by one thread in its fixed order: the
// results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace solops::detail {

// body(i) for every i in [0, count), on up to hardware_concurrency() threads: one thread a
// `min_work` of work, where an item is `item_work` (a call below that runs on the caller's thread
// alone, so that small calls pay no thread start). The first exception a body throws is rethrown
// after every thread has stopped.
template <class Body>
void parallel_for(int64_t count, int64_t item_work, Body&& body) {
  constexpr int64_t min_work = int64_t{1} << 22;
  const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t items_per_thread = std::max<int64_t>(1, min_work / std::max<int64_t>(item_work, 1));
  const int64_t by_work = std::max<int64_t>(1, count / items_per_thread);
  const int64_t threads = std::min({hardware, by_work, count});
  if (threads <= 1) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  // Items are taken in blocks of about 2^16 work, so that tiny items do not contend on the counter.
  const int64_t block = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(item_work, 1));
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      for (int64_t first = next.fetch_add(block); first < count; first = next.fetch_add(block)) {
        for (int64_t i = first; i < std::min(first + block, count); ++i) body(i);
      }
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = count;  // the other threads take no further item
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace solops::detail
