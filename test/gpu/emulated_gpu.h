/* An emulated GPU for the tests: a backend of lib/core/gpu.h that runs on
 * the CPU, so the engine's device paths (staging, kernels, events, stream
 * ordering) are exercised on machines without a GPU.
 *
 * It is deliberately hostile where a real GPU would be:
 *  - work is deferred: a queued copy or reduction runs only when some later
 *    event query (or emu_gpu_tick) gets to it, one operation per queue per
 *    tick, so code that reads a result before its event says done reads
 *    stale data;
 *  - with protect on, "device memory" is mapped PROT_NONE except while an
 *    emulated operation runs, so any CPU access to it crashes (SIGSEGV)
 *    at the faulty line instead of silently working;
 *  - streams: user streams are queues too; a hold (wait-flag) blocks its
 *    queue until the host writes the flag.
 * Reductions use the host's xc_reduce/xc_divide, which share their element
 * arithmetic with the CUDA kernels (reduce_ops.h). */
#ifndef XC_EMULATED_GPU_H
#define XC_EMULATED_GPU_H

#include <stddef.h>
#include "gpu.h"

/* Installs the emulation as the library's GPU backend. protect: see above
 * (turn it off when a transport must read device memory itself). */
void emu_gpu_install(int protect);
const xc_gpu_backend_t *emu_gpu_backend(void);

/* Device memory for the test's own buffers (same as the backend's). */
void *emu_dev_alloc(size_t bytes);
void emu_dev_free(void *p);
void *emu_managed_alloc(size_t bytes); /* reported as XC_MEM_MANAGED */

/* User streams: opaque handles to pass as the collectives' stream. */
void *emu_stream_create(void);
void emu_stream_destroy(void *stream);
/* Queues a copy (any direction) on a user stream, like cudaMemcpyAsync. */
void emu_stream_copy(void *stream, void *dst, const void *src, size_t bytes);
/* Runs the stream until empty; -1 if it is blocked on a hold that the host
 * has not released (a real cudaStreamSynchronize would hang). */
int emu_stream_sync(void *stream);
/* Operations queued on the stream and not yet run. */
size_t emu_stream_pending(void *stream);

/* Runs one operation from the front of every queue; returns how many ran. */
size_t emu_gpu_tick(void);
/* Operations queued anywhere and not yet run. */
size_t emu_gpu_pending(void);

#endif
