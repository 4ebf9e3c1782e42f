/* solops C ABI, the part every operator family shares: status codes, dtypes, the tensor descriptor,
 * the cost, the error message and the version. Each family's parameter structs and functions are in
 * its own header (solops/c/pool.h, solops/c/norm.h); solops/solops.h includes them all. */
#ifndef SOLOPS_C_COMMON_H
#define SOLOPS_C_COMMON_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  SOLOPS_OK = 0,
  SOLOPS_INVALID_ARGUMENT = 1,
  SOLOPS_UNSUPPORTED = 2,
  SOLOPS_CUDA_ERROR = 3,
  SOLOPS_INTERNAL = 4
} solops_status;

typedef enum {
  SOLOPS_F32 = 0,
  SOLOPS_F16 = 1,
  SOLOPS_BF16 = 2,
  SOLOPS_FP8_E4M3 = 3,
  SOLOPS_I32 = 4,
  SOLOPS_I64 = 5
} solops_dtype;

#define SOLOPS_MAX_RANK 8
#define SOLOPS_CPU (-1)

typedef struct {
  void* data;
  int32_t dtype; /* solops_dtype */
  int32_t rank;
  int64_t shape[SOLOPS_MAX_RANK];
  int64_t strides[SOLOPS_MAX_RANK]; /* in elements */
  int32_t device;                   /* SOLOPS_CPU or a CUDA device ordinal */
} solops_tensor;

typedef struct {
  double flops;
  double bytes;
} solops_cost;

/* The message of this thread's last failure, valid until its next failing call. */
const char* solops_last_error(void);
const char* solops_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SOLOPS_C_COMMON_H */
