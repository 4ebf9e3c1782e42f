// The C ABI of the pooling family: converts its C structs to the C++ API and exceptions to status codes.
#include <algorithm>
#include <iterator>
#include <optional>

#include "capi/capi.hpp"
#include "solops/c/pool.h"
#include "solops/pool.hpp"
#include "solops/reference.hpp"

using namespace solops::capi;

// The conversions of the C parameter structs, static in the global namespace where capi.hpp's shared bodies
// find them.

static solops::Pool1d to_params(const solops_pool1d_params* p, const char* function) {
  require_pointer(p, function, "params");
  solops::Pool1d pool;
  pool.kernel_size = p->kernel_size;
  if (p->has_stride) pool.stride = p->stride;
  pool.padding = p->padding;
  pool.dilation = p->dilation;
  pool.ceil_mode = p->ceil_mode != 0;
  pool.count_include_pad = p->count_include_pad != 0;
  return pool;
}

// The 2-D and 3-D C windows differ only in their number of axes.
template <class Pool, class Params>
static Pool to_window(const Params* p, const char* function) {
  require_pointer(p, function, "params");
  Pool pool;
  constexpr size_t kAxes = std::size(Pool{}.kernel_size);
  std::copy_n(p->kernel_size, kAxes, pool.kernel_size.begin());
  if (p->has_stride) {
    pool.stride.emplace();
    std::copy_n(p->stride, kAxes, pool.stride->begin());
  }
  std::copy_n(p->padding, kAxes, pool.padding.begin());
  std::copy_n(p->dilation, kAxes, pool.dilation.begin());
  pool.ceil_mode = p->ceil_mode != 0;
  pool.count_include_pad = p->count_include_pad != 0;
  if (p->has_divisor_override) pool.divisor_override = p->divisor_override;
  return pool;
}

static solops::Pool2d to_params(const solops_pool2d_params* p, const char* function) {
  return to_window<solops::Pool2d>(p, function);
}

static solops::Pool3d to_params(const solops_pool3d_params* p, const char* function) {
  return to_window<solops::Pool3d>(p, function);
}

static solops::AdaptivePool2d to_params(const solops_adaptive_pool2d_params* p, const char* function) {
  require_pointer(p, function, "params");
  solops::AdaptivePool2d pool;
  for (int axis = 0; axis < 2; ++axis) {
    if (p->has_output_size[axis]) pool.output_size[axis] = p->output_size[axis];
  }
  return pool;
}

static solops::MeanPooling to_params(const solops_mean_pooling_params* p, const char* function) {
  require_pointer(p, function, "params");
  return {p->chunk_size, p->check_ragged_metadata != 0};
}

namespace {

std::optional<solops::RaggedSizes> to_ragged(const solops_ragged_sizes* ragged) {
  if (!ragged) return std::nullopt;
  return solops::RaggedSizes{ragged->sequences, ragged->chunks};
}

// One body per kind of call, shared by the 1-D and 2-D functions: `op` is the C++ function.

template <class Values, class WithIndices, class Params>
solops_status max_pool(const char* function, Values values, WithIndices with_indices,
                       const solops_tensor* x, const solops_tensor* y, const solops_tensor* indices,
                       const Params* p, void* stream) {
  return guarded(function, [&] {
    const auto pool = to_params(p, function);
    const auto x_ref = to_tensor(x, function, "x");
    const auto y_ref = to_tensor(y, function, "y");
    const auto cuda_stream = static_cast<cudaStream_t>(stream);
    if (indices) {
      with_indices(x_ref, y_ref, to_tensor(indices, function, "indices"), pool, cuda_stream);
    } else {
      values(x_ref, y_ref, pool, cuda_stream);
    }
  });
}

template <class Op, class Params>
solops_status avg_pool(const char* function, Op op, const solops_tensor* x, const solops_tensor* y,
                       const Params* p, void* stream) {
  return guarded(function, [&] {
    op(to_tensor(x, function, "x"), to_tensor(y, function, "y"), to_params(p, function),
       static_cast<cudaStream_t>(stream));
  });
}

template <class Op, class Params>
solops_status reference_max_pool(const char* function, Op op, const solops_tensor* x,
                                 const solops_tensor* y, const solops_tensor* indices, const Params* p) {
  return guarded(function, [&] {
    const auto indices_ref = optional_tensor(indices, function, "indices");
    op(to_tensor(x, function, "x"), to_tensor(y, function, "y"), indices_ref ? &*indices_ref : nullptr,
       to_params(p, function));
  });
}

// The device call and the reference of mean pooling: the reference takes no stream.
template <class Op, class... Stream>
solops_status mean_pooling(const char* function, Op op, const solops_tensor* x, const solops_tensor* y,
                           const solops_tensor* offsets, const solops_tensor* indices,
                           const solops_mean_pooling_params* p, Stream... stream) {
  return guarded(function, [&] {
    // Named in argument order, so that the first bad argument is the one reported.
    const auto x_ref = to_tensor(x, function, "x");
    const auto y_ref = to_tensor(y, function, "y");
    const auto offsets_ref = optional_tensor(offsets, function, "offsets");
    const auto indices_ref = optional_tensor(indices, function, "indices");
    op(x_ref, y_ref, offsets_ref ? &*offsets_ref : nullptr, indices_ref ? &*indices_ref : nullptr,
       to_params(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

}  // namespace

extern "C" {

solops_status solops_max_pool1d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool1d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::max_pool1d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_avg_pool1d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool1d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::avg_pool1d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_max_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool2d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::max_pool2d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_avg_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool2d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::avg_pool2d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_max_pool3d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool3d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::max_pool3d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_avg_pool3d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool3d_params* p, int32_t* out_rank,
                                             int64_t* out_shape) {
  return output_shape(__func__, solops::avg_pool3d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_adaptive_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                  const solops_adaptive_pool2d_params* p,
                                                  int32_t* out_rank, int64_t* out_shape) {
  return output_shape(__func__, solops::adaptive_pool2d_output_shape, x_rank, x_shape, p, out_rank, out_shape);
}

solops_status solops_mean_pooling_output_shape(int32_t x_rank, const int64_t* x_shape,
                                               const solops_mean_pooling_params* p,
                                               const solops_ragged_sizes* ragged, int32_t* out_rank,
                                               int64_t* out_shape) {
  const char* const function = __func__;
  return guarded(function, [&] {
    write_shape(solops::mean_pooling_output_shape(to_shape(x_rank, x_shape, function), to_params(p, function),
                                                  to_ragged(ragged)),
                out_rank, out_shape, function);
  });
}

solops_status solops_max_pool1d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool1d_params* p,
                                void* stream) {
  return max_pool(__func__, solops::max_pool1d, solops::max_pool1d_with_indices, x, y, indices, p, stream);
}

solops_status solops_avg_pool1d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool1d_params* p, void* stream) {
  return avg_pool(__func__, solops::avg_pool1d, x, y, p, stream);
}

solops_status solops_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool2d_params* p,
                                void* stream) {
  return max_pool(__func__, solops::max_pool2d, solops::max_pool2d_with_indices, x, y, indices, p, stream);
}

solops_status solops_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool2d_params* p, void* stream) {
  return avg_pool(__func__, solops::avg_pool2d, x, y, p, stream);
}

solops_status solops_max_pool3d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool3d_params* p,
                                void* stream) {
  return max_pool(__func__, solops::max_pool3d, solops::max_pool3d_with_indices, x, y, indices, p, stream);
}

solops_status solops_avg_pool3d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool3d_params* p, void* stream) {
  return avg_pool(__func__, solops::avg_pool3d, x, y, p, stream);
}

solops_status solops_adaptive_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                         const solops_tensor* indices,
                                         const solops_adaptive_pool2d_params* p, void* stream) {
  return max_pool(__func__, solops::adaptive_max_pool2d, solops::adaptive_max_pool2d_with_indices, x, y, indices,
                  p, stream);
}

solops_status solops_adaptive_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                         const solops_adaptive_pool2d_params* p, void* stream) {
  return avg_pool(__func__, solops::adaptive_avg_pool2d, x, y, p, stream);
}

solops_status solops_mean_pooling(const solops_tensor* x, const solops_tensor* y,
                                  const solops_tensor* offsets, const solops_tensor* indices,
                                  const solops_mean_pooling_params* p, void* stream) {
  return mean_pooling(__func__, solops::mean_pooling, x, y, offsets, indices, p, stream);
}

solops_status solops_reference_max_pool1d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool1d_params* p) {
  return reference_max_pool(__func__, solops::reference::max_pool1d, x, y, indices, p);
}

solops_status solops_reference_avg_pool1d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool1d_params* p) {
  return reference_x_to_y(__func__, solops::reference::avg_pool1d, x, y, p);
}

solops_status solops_reference_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool2d_params* p) {
  return reference_max_pool(__func__, solops::reference::max_pool2d, x, y, indices, p);
}

solops_status solops_reference_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool2d_params* p) {
  return reference_x_to_y(__func__, solops::reference::avg_pool2d, x, y, p);
}

solops_status solops_reference_max_pool3d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool3d_params* p) {
  return reference_max_pool(__func__, solops::reference::max_pool3d, x, y, indices, p);
}

solops_status solops_reference_avg_pool3d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool3d_params* p) {
  return reference_x_to_y(__func__, solops::reference::avg_pool3d, x, y, p);
}

solops_status solops_reference_adaptive_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                                   const solops_tensor* indices,
                                                   const solops_adaptive_pool2d_params* p) {
  return reference_max_pool(__func__, solops::reference::adaptive_max_pool2d, x, y, indices, p);
}

solops_status solops_reference_adaptive_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                                   const solops_adaptive_pool2d_params* p) {
  return reference_x_to_y(__func__, solops::reference::adaptive_avg_pool2d, x, y, p);
}

solops_status solops_reference_mean_pooling(const solops_tensor* x, const solops_tensor* y,
                                            const solops_tensor* offsets, const solops_tensor* indices,
                                            const solops_mean_pooling_params* p) {
  return mean_pooling(__func__, solops::reference::mean_pooling, x, y, offsets, indices, p);
}

solops_status solops_max_pool1d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool1d_params* p, int32_t with_indices,
                                     solops_cost* out) {
  return cost(__func__, with_indices ? solops::max_pool1d_with_indices_cost : solops::max_pool1d_cost,
              x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_avg_pool1d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool1d_params* p, solops_cost* out) {
  return cost(__func__, solops::avg_pool1d_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_max_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool2d_params* p, int32_t with_indices,
                                     solops_cost* out) {
  return cost(__func__, with_indices ? solops::max_pool2d_with_indices_cost : solops::max_pool2d_cost,
              x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_avg_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool2d_params* p, solops_cost* out) {
  return cost(__func__, solops::avg_pool2d_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_max_pool3d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool3d_params* p, int32_t with_indices,
                                     solops_cost* out) {
  return cost(__func__, with_indices ? solops::max_pool3d_with_indices_cost : solops::max_pool3d_cost,
              x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_avg_pool3d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool3d_params* p, solops_cost* out) {
  return cost(__func__, solops::avg_pool3d_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_adaptive_max_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_adaptive_pool2d_params* p,
                                              int32_t with_indices, solops_cost* out) {
  return cost(__func__,
              with_indices ? solops::adaptive_max_pool2d_with_indices_cost : solops::adaptive_max_pool2d_cost,
              x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_adaptive_avg_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_adaptive_pool2d_params* p, solops_cost* out) {
  return cost(__func__, solops::adaptive_avg_pool2d_cost, x_rank, x_shape, x_dtype, p, out);
}

solops_status solops_mean_pooling_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                       const solops_mean_pooling_params* p,
                                       const solops_ragged_sizes* ragged, solops_cost* out) {
  const char* const function = __func__;
  return guarded(function, [&] {
    write_cost(solops::mean_pooling_cost(to_shape(x_rank, x_shape, function), static_cast<solops::DType>(x_dtype),
                                         to_params(p, function), to_ragged(ragged)),
               out, function);
  });
}

}  // extern "C"
