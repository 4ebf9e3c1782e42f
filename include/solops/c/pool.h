/* solops C ABI of the pooling family (spec §4); the shared types are in solops/c/common.h. */
#ifndef SOLOPS_C_POOL_H
#define SOLOPS_C_POOL_H

#include "solops/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* has_stride = 0 means stride = kernel_size (PyTorch's None). avg_pool1d has no divisor_override. */
typedef struct {
  int64_t kernel_size;
  int32_t has_stride;
  int64_t stride;
  int64_t padding;
  int64_t dilation;
  int32_t ceil_mode;
  int32_t count_include_pad;
} solops_pool1d_params;

/* Per-axis values are (H, W). has_stride = 0 means stride = kernel_size (PyTorch's None). */
typedef struct {
  int64_t kernel_size[2];
  int32_t has_stride;
  int64_t stride[2];
  int64_t padding[2];
  int64_t dilation[2];
  int32_t ceil_mode;
  int32_t count_include_pad;
  int32_t has_divisor_override;
  int64_t divisor_override;
} solops_pool2d_params;

/* Per-axis values are (D, H, W). has_stride = 0 means stride = kernel_size (PyTorch's None). */
typedef struct {
  int64_t kernel_size[3];
  int32_t has_stride;
  int64_t stride[3];
  int64_t padding[3];
  int64_t dilation[3];
  int32_t ceil_mode;
  int32_t count_include_pad;
  int32_t has_divisor_override;
  int64_t divisor_override;
} solops_pool3d_params;

/* Adaptive pools: output (H, W); has_output_size[i] = 0 keeps the input's size (PyTorch's None). */
typedef struct {
  int32_t has_output_size[2];
  int64_t output_size[2];
} solops_adaptive_pool2d_params;

/* Mean pooling (spec §4.6). check_ragged_metadata, ragged mode only: nonzero copies offsets and
 * indices to the host and synchronizes the stream before the launch to check them (refused while
 * the stream is being captured into a CUDA graph); zero trusts them (an output chunk they place
 * outside x is written as NaN). The shape, cost and reference functions ignore it. */
typedef struct {
  int64_t chunk_size;
  int32_t check_ragged_metadata;
} solops_mean_pooling_params;

/* Ragged mode's metadata sizes: offsets [sequences + 1], indices [chunks, 2]. */
typedef struct {
  int64_t sequences;
  int64_t chunks;
} solops_ragged_sizes;

/* Writes the output rank and shape (shape has room for SOLOPS_MAX_RANK). */
solops_status solops_max_pool1d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool1d_params* p, int32_t* out_rank,
                                             int64_t* out_shape);
solops_status solops_avg_pool1d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool1d_params* p, int32_t* out_rank,
                                             int64_t* out_shape);
solops_status solops_max_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool2d_params* p, int32_t* out_rank,
                                             int64_t* out_shape);
solops_status solops_avg_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool2d_params* p, int32_t* out_rank,
                                             int64_t* out_shape);

solops_status solops_max_pool3d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool3d_params* p, int32_t* out_rank,
                                             int64_t* out_shape);
solops_status solops_avg_pool3d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                             const solops_pool3d_params* p, int32_t* out_rank,
                                             int64_t* out_shape);
solops_status solops_adaptive_pool2d_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                  const solops_adaptive_pool2d_params* p,
                                                  int32_t* out_rank, int64_t* out_shape);
/* ragged = NULL: uniform mode. */
solops_status solops_mean_pooling_output_shape(int32_t x_rank, const int64_t* x_shape,
                                               const solops_mean_pooling_params* p,
                                               const solops_ragged_sizes* ragged, int32_t* out_rank,
                                               int64_t* out_shape);

/* indices may be NULL (values only). stream is a cudaStream_t (NULL = legacy default stream). */
solops_status solops_max_pool1d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool1d_params* p,
                                void* stream);
solops_status solops_avg_pool1d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool1d_params* p, void* stream);
solops_status solops_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool2d_params* p,
                                void* stream);
solops_status solops_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool2d_params* p, void* stream);
solops_status solops_max_pool3d(const solops_tensor* x, const solops_tensor* y,
                                const solops_tensor* indices, const solops_pool3d_params* p,
                                void* stream);
solops_status solops_avg_pool3d(const solops_tensor* x, const solops_tensor* y,
                                const solops_pool3d_params* p, void* stream);
solops_status solops_adaptive_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                         const solops_tensor* indices,
                                         const solops_adaptive_pool2d_params* p, void* stream);
solops_status solops_adaptive_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                         const solops_adaptive_pool2d_params* p, void* stream);
/* offsets and indices (int32): both NULL (uniform mode) or both given (ragged mode). */
solops_status solops_mean_pooling(const solops_tensor* x, const solops_tensor* y,
                                  const solops_tensor* offsets, const solops_tensor* indices,
                                  const solops_mean_pooling_params* p, void* stream);

/* CPU references on host tensors (float64 accumulation). */
solops_status solops_reference_max_pool1d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool1d_params* p);
solops_status solops_reference_avg_pool1d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool1d_params* p);
solops_status solops_reference_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool2d_params* p);
solops_status solops_reference_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool2d_params* p);
solops_status solops_reference_max_pool3d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_tensor* indices,
                                          const solops_pool3d_params* p);
solops_status solops_reference_avg_pool3d(const solops_tensor* x, const solops_tensor* y,
                                          const solops_pool3d_params* p);
solops_status solops_reference_adaptive_max_pool2d(const solops_tensor* x, const solops_tensor* y,
                                                   const solops_tensor* indices,
                                                   const solops_adaptive_pool2d_params* p);
solops_status solops_reference_adaptive_avg_pool2d(const solops_tensor* x, const solops_tensor* y,
                                                   const solops_adaptive_pool2d_params* p);
/* Always checks the ragged metadata. */
solops_status solops_reference_mean_pooling(const solops_tensor* x, const solops_tensor* y,
                                            const solops_tensor* offsets, const solops_tensor* indices,
                                            const solops_mean_pooling_params* p);

/* Roofline cost of one call (x_dtype: solops_dtype). */
solops_status solops_max_pool1d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool1d_params* p, int32_t with_indices,
                                     solops_cost* cost);
solops_status solops_avg_pool1d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool1d_params* p, solops_cost* cost);
solops_status solops_max_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool2d_params* p, int32_t with_indices,
                                     solops_cost* cost);
solops_status solops_avg_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool2d_params* p, solops_cost* cost);
solops_status solops_max_pool3d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool3d_params* p, int32_t with_indices,
                                     solops_cost* cost);
solops_status solops_avg_pool3d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_pool3d_params* p, solops_cost* cost);
solops_status solops_adaptive_max_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_adaptive_pool2d_params* p,
                                              int32_t with_indices, solops_cost* cost);
solops_status solops_adaptive_avg_pool2d_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_adaptive_pool2d_params* p, solops_cost* cost);
/* ragged = NULL: uniform mode. */
solops_status solops_mean_pooling_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                       const solops_mean_pooling_params* p,
                                       const solops_ragged_sizes* ragged, solops_cost* cost);

#ifdef __cplusplus
}
#endif

#endif /* SOLOPS_C_POOL_H */
