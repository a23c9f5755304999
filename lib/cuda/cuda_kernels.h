/* The CUDA kernels' launchers (reduce_kernels.cu), called by the CUDA
 * backend (cuda_backend.c) and by the GPU tests. Every launcher queues its
 * work on `stream` and returns at once with cudaGetLastError()'s verdict;
 * the element arithmetic is lib/core/reduce_ops.h, the CPU's own. */
#ifndef XC_CUDA_KERNELS_H
#define XC_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "xcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = a[i] op b[i], i < count, on device-accessible memory (device,
 * managed or pinned host). dst may alias a or b exactly. AVG reduces as
 * SUM (xc_cuda_divide finishes it), as on the CPU. */
cudaError_t xc_cuda_reduce(void *dst, const void *a, const void *b, size_t count,
                           xcoll_dtype_t dtype, xcoll_op_t op, cudaStream_t stream);

/* buf[i] /= n, i < count (integer division truncates). */
cudaError_t xc_cuda_divide(void *buf, size_t count, xcoll_dtype_t dtype, uint32_t n,
                           cudaStream_t stream);

/* Holds `stream` until *flag >= value: one single-thread block polls the
 * (pinned, host-written) flag with back-off. Work queued on the stream
 * after it waits for the host to write the flag. */
cudaError_t xc_cuda_wait_flag(cudaStream_t stream, const volatile uint32_t *flag,
                              uint32_t value);

#ifdef __cplusplus
}
#endif
#endif
