#include "core/device.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "core/check.hpp"

namespace solops::detail {
namespace {

// Devices whose attributes are remembered; a higher ordinal asks the driver every time.
constexpr int kCachedDevices = 64;

// A device's attribute, asked of the driver once per process and device: launchers read it on every
// call, and it cannot change while the process runs. `query` names the caller in the error of a
// failed query. Racing first calls ask twice and store the same value.
template <cudaDeviceAttr kAttribute>
int device_attribute(int device, std::string_view query) {
  static std::atomic<int> cache[kCachedDevices] = {};  // 0: not asked yet (every attribute read is > 0)
  const bool cached = device >= 0 && device < kCachedDevices;
  if (cached) {
    if (const int value = cache[device].load(std::memory_order_relaxed); value != 0) return value;
  }
  int value = 0;
  check_cuda(cudaDeviceGetAttribute(&value, kAttribute, device), query, "cudaDeviceGetAttribute");
  if (cached) cache[device].store(value, std::memory_order_relaxed);
  return value;
}

int current_device(std::string_view op) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), op, "cudaGetDevice");
  return device;
}

// The values of one query of a kernel, by kernel, device and the query's own arguments.
template <class Key, class Value>
class KernelFacts {
 public:
  template <class Ask>
  Value get(const Key& key, Ask&& ask) {
    {
      const std::lock_guard lock(mutex_);
      if (const auto found = values_.find(key); found != values_.end()) return found->second;
    }
    const Value value = ask();  // outside the lock: a racing first call asks twice, stores the same
    const std::lock_guard lock(mutex_);
    values_.insert_or_assign(key, value);
    return value;
  }

 private:
  std::mutex mutex_;
  std::map<Key, Value> values_;
};

}  // namespace

int multiprocessor_count(int device) {
  return device_attribute<cudaDevAttrMultiProcessorCount>(device, "multiprocessor_count");
}

int64_t l2_cache_bytes(int device) { return device_attribute<cudaDevAttrL2CacheSize>(device, "l2_cache_bytes"); }

int64_t max_shared_bytes_optin(int device) {
  return device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(device, "max_shared_bytes_optin");
}

int resident_blocks(std::string_view op, const void* kernel, int threads, size_t shared_bytes) {
  static KernelFacts<std::tuple<const void*, int, int, size_t>, int> facts;
  return facts.get({kernel, current_device(op), threads, shared_bytes}, [&] {
    int blocks = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, shared_bytes), op,
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return blocks;
  });
}

size_t static_shared_bytes(std::string_view op, const void* kernel) {
  static KernelFacts<std::tuple<const void*, int>, size_t> facts;
  return facts.get({kernel, current_device(op)}, [&] {
    cudaFuncAttributes attributes{};
    check_cuda(cudaFuncGetAttributes(&attributes, kernel), op, "cudaFuncGetAttributes");
    return attributes.sharedSizeBytes;
  });
}

void set_dynamic_shared_bytes(std::string_view op, const void* kernel, size_t shared_bytes) {
  // The limit last set for each kernel and device; a change is set and remembered under the lock.
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int>, size_t> last_set;
  const std::tuple key{kernel, current_device(op)};
  const std::lock_guard lock(mutex);
  if (const auto found = last_set.find(key); found != last_set.end() && found->second == shared_bytes) return;
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)),
             op, "cudaFuncSetAttribute");
  last_set.insert_or_assign(key, shared_bytes);
}

void check_launch(std::string_view op) { check_cuda(cudaGetLastError(), op, "kernel launch"); }

}  // namespace solops::detail
