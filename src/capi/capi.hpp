// The C ABI's shared helpers: each family's C functions (pool.cpp, norm.cpp) convert C structs to the
// C++ API and exceptions to status codes through these.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "solops/c/common.h"
#include "solops/cost.hpp"
#include "solops/error.hpp"
#include "solops/tensor.hpp"

// Hidden: the library exports the C functions built on these, not the helpers themselves.
namespace solops {
namespace [[gnu::visibility("hidden")]] capi {

solops_status fail(solops_status status, const char* message);

// Runs body; returns SOLOPS_OK or the status of the solops::Error (or other exception) it threw.
// A body that names its C function takes it from outside: within a lambda __func__ is "operator()".
template <class Body>
solops_status guarded(const char* function, Body&& body) {
  try {
    body();
    return SOLOPS_OK;
  } catch (const solops::Error& e) {
    return fail(static_cast<solops_status>(e.status()), e.what());
  } catch (const std::exception& e) {
    return fail(SOLOPS_INTERNAL, (std::string(function) + ": " + e.what()).c_str());
  }
}

void require_pointer(const void* pointer, const char* function, const char* name);

solops::TensorRef to_tensor(const solops_tensor* t, const char* function, const char* name);

// A tensor the caller may leave out (NULL).
std::optional<solops::TensorRef> optional_tensor(const solops_tensor* t, const char* function, const char* name);

// A shape the caller passes as (rank, sizes); `name` names the sizes in the error for a null pointer.
std::span<const int64_t> to_shape(int32_t rank, const int64_t* shape, const char* function,
                                  const char* name = "x_shape");

void write_shape(const std::vector<int64_t>& shape, int32_t* out_rank, int64_t* out_shape, const char* function);

void write_cost(const solops::Cost& cost, solops_cost* out, const char* function);

// One body per kind of call, shared by the families: `op` is the C++ function. `to_params` converts a
// family's C parameter struct: each family's file defines its overloads static in the global namespace,
// beside the C structs, where argument-dependent lookup finds them from here (it does not search an unnamed
// namespace).

template <class Op, class Params>
solops_status output_shape(const char* function, Op op, int32_t x_rank, const int64_t* x_shape,
                           const Params* p, int32_t* out_rank, int64_t* out_shape) {
  return guarded(function, [&] {
    write_shape(op(to_shape(x_rank, x_shape, function), to_params(p, function)), out_rank, out_shape, function);
  });
}

// A reference that reads x and writes y, nothing else.
template <class Op, class Params>
solops_status reference_x_to_y(const char* function, Op op, const solops_tensor* x, const solops_tensor* y,
                               const Params* p) {
  return guarded(function, [&] {
    op(to_tensor(x, function, "x"), to_tensor(y, function, "y"), to_params(p, function));
  });
}

template <class Op, class Params>
solops_status workspace_elements(const char* function, Op op, int32_t x_rank, const int64_t* x_shape,
                                 const Params* p, int64_t* elements) {
  return guarded(function, [&] {
    require_pointer(elements, function, "elements");
    *elements = op(to_shape(x_rank, x_shape, function), to_params(p, function));
  });
}

template <class Op, class Params>
solops_status cost(const char* function, Op op, int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                   const Params* p, solops_cost* out) {
  return guarded(function, [&] {
    write_cost(op(to_shape(x_rank, x_shape, function), static_cast<solops::DType>(x_dtype), to_params(p, function)),
               out, function);
  });
}

}  // namespace capi
}  // namespace solops
