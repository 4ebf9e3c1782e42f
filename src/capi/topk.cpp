// The C ABI of the top-k family: converts its C structs to the C++ API and exceptions to status codes.
#include <optional>

#include "capi/capi.hpp"
#include "solops/c/topk.h"
#include "solops/reference.hpp"
#include "solops/topk.hpp"

using namespace solops::capi;

namespace {

solops::TopkSelector to_params(const solops_topk_selector_params* p, const char* function) {
  require_pointer(p, function, "params");
  return {p->topk, p->sorted != 0};
}

// The device op or the reference (with or without its stream argument).
template <class Op, class... Stream>
solops_status topk_selector(const char* function, Op op, const solops_tensor* index_score,
                            const solops_tensor* starts, const solops_tensor* ends, const solops_tensor* indexes,
                            const solops_topk_selector_params* p, Stream... stream) {
  return guarded(function, [&] {
    const auto scores = to_tensor(index_score, function, "index_score");
    const auto starts_ref = optional_tensor(starts, function, "starts");
    const auto ends_ref = optional_tensor(ends, function, "ends");
    op(scores, starts_ref ? &*starts_ref : nullptr, ends_ref ? &*ends_ref : nullptr,
       to_tensor(indexes, function, "indexes"), to_params(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

}  // namespace

extern "C" {

solops_status solops_topk_selector_output_shape(int32_t index_score_rank, const int64_t* index_score_shape,
                                                const solops_topk_selector_params* p, int32_t* out_rank,
                                                int64_t* out_shape) {
  const char* function = __func__;  // within the lambda __func__ is "operator()"
  return guarded(function, [&] {
    const auto shape = to_shape(index_score_rank, index_score_shape, function, "index_score_shape");
    write_shape(solops::topk_selector_output_shape(shape, to_params(p, function)), out_rank, out_shape, function);
  });
}

solops_status solops_topk_selector(const solops_tensor* index_score, const solops_tensor* starts,
                                   const solops_tensor* ends, const solops_tensor* indexes,
                                   const solops_topk_selector_params* p, void* stream) {
  return topk_selector(__func__, solops::topk_selector, index_score, starts, ends, indexes, p, stream);
}

solops_status solops_reference_topk_selector(const solops_tensor* index_score, const solops_tensor* starts,
                                             const solops_tensor* ends, const solops_tensor* indexes,
                                             const solops_topk_selector_params* p) {
  return topk_selector(__func__, solops::reference::topk_selector, index_score, starts, ends, indexes, p);
}

solops_status solops_topk_selector_cost(int32_t index_score_rank, const int64_t* index_score_shape,
                                        int32_t index_score_dtype, const solops_topk_selector_params* p,
                                        solops_cost* cost) {
  const char* function = __func__;
  return guarded(function, [&] {
    const auto shape = to_shape(index_score_rank, index_score_shape, function, "index_score_shape");
    write_cost(solops::topk_selector_cost(shape, static_cast<solops::DType>(index_score_dtype), to_params(p, function)),
               cost, function);
  });
}

}  // extern "C"
