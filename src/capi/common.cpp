// The C ABI's shared helpers (capi.hpp) and its library-wide calls.
#include <cstring>
#include <string>

#include "capi/capi.hpp"

namespace {

thread_local std::string last_error;

}  // namespace

namespace solops::capi {

solops_status fail(solops_status status, const char* message) {
  last_error = message;
  return status;
}

void require_pointer(const void* pointer, const char* function, const char* name) {
  if (pointer == nullptr) {
    throw solops::Error(solops::Status::invalid_argument,
                        std::string(function) + ": " + name + " is a null pointer");
  }
}

solops::TensorRef to_tensor(const solops_tensor* t, const char* function, const char* name) {
  require_pointer(t, function, name);
  if (t->rank < 0 || t->rank > SOLOPS_MAX_RANK) {
    throw solops::Error(solops::Status::invalid_argument,
                        std::string(function) + ": " + name + " has rank " +
                            std::to_string(t->rank) + ", outside [0, 8]");
  }
  solops::TensorRef ref;
  ref.data = t->data;
  ref.dtype = static_cast<solops::DType>(t->dtype);
  ref.rank = t->rank;
  ref.device = t->device;
  for (int i = 0; i < t->rank; ++i) {
    ref.shape[i] = t->shape[i];
    ref.strides[i] = t->strides[i];
  }
  return ref;
}

std::optional<solops::TensorRef> optional_tensor(const solops_tensor* t, const char* function, const char* name) {
  return t ? std::optional(to_tensor(t, function, name)) : std::nullopt;
}

std::span<const int64_t> to_shape(int32_t rank, const int64_t* shape, const char* function, const char* name) {
  require_pointer(shape, function, name);
  if (rank < 0 || rank > SOLOPS_MAX_RANK) {
    throw solops::Error(solops::Status::invalid_argument,
                        std::string(function) + ": rank " + std::to_string(rank) + " is outside [0, 8]");
  }
  return {shape, static_cast<size_t>(rank)};
}

void write_shape(const std::vector<int64_t>& shape, int32_t* out_rank, int64_t* out_shape,
                 const char* function) {
  require_pointer(out_rank, function, "out_rank");
  require_pointer(out_shape, function, "out_shape");
  *out_rank = static_cast<int32_t>(shape.size());
  std::memcpy(out_shape, shape.data(), shape.size() * sizeof(int64_t));
}

void write_cost(const solops::Cost& cost, solops_cost* out, const char* function) {
  require_pointer(out, function, "cost");
  out->flops = cost.flops;
  out->bytes = cost.bytes;
}

}  // namespace solops::capi

extern "C" {

const char* solops_last_error(void) { return last_error.c_str(); }

const char* solops_version(void) { return SOLOPS_VERSION; }

}  // extern "C"
