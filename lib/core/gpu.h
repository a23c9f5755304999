/* The library's view of a GPU: which memory a pointer is, and the
 * asynchronous copies, reductions and events the engine needs for device
 * data. A backend provides them: lib/cuda/cuda_backend.c on a machine with
 * a CUDA device, or test/gpu/emulated_gpu.c, which runs the same engine
 * paths on a machine with none. With no backend every pointer is host
 * memory and none of this is used.
 *
 * The engine never calls a backend directly for memory it keeps: gpu.c
 * pools pinned staging blocks, device scratch, events and stream-hold
 * flags, because the backend's allocators (cudaHostAlloc, cudaMalloc)
 * cost far more than a small collective. */
#ifndef XC_GPU_H
#define XC_GPU_H

#include <stddef.h>
#include <stdint.h>
#include "xcoll.h"

typedef enum {
    XC_MEM_HOST = 0, /* pageable host memory: the CPU's only */
    XC_MEM_PINNED,   /* page-locked host memory the GPU can also read and write */
    XC_MEM_DEVICE,   /* device memory: only the GPU (and a CUDA-aware UCX) may touch it */
    XC_MEM_MANAGED   /* managed memory: treated as device memory (the GPU works on it,
                        the CPU never touches it while a kernel might) */
} xc_memtype_t;

/* The engine's two internal queues (CUDA streams): device-to-host staging
 * copies on one, everything else (host-to-device copies, kernels) on the
 * other, so a chunk's download overlaps the previous chunk's upload. */
enum { XC_GPU_Q_D2H = 0, XC_GPU_Q_WORK = 1, XC_GPU_NQUEUES = 2 };

typedef struct xc_gpu_backend {
    const char *name;  /* "cuda", "emulated" */
    /* The memory type of p; *device (if not NULL) gets the ordinal of
     * the device that holds it, found by the same query. */
    xc_memtype_t (*memtype)(const void *p, int *device);
    /* Device work for a call on device `device`'s memory (-1: the current
     * device) goes to that device: XCOLL_ERR_UNSUPPORTED (logged) if it is
     * not the device the backend already works on (one per process). */
    xcoll_status_t (*bind)(int device);
    xcoll_status_t (*dev_alloc)(void **p, size_t bytes);
    void (*dev_free)(void *p);
    /* pinned host memory the device can read and write (kernels take it
     * as an operand) */
    xcoll_status_t (*pinned_alloc)(void **p, size_t bytes);
    void (*pinned_free)(void *p);
    /* queued on internal queue q; any direction */
    xcoll_status_t (*copy)(void *dst, const void *src, size_t bytes, int q);
    xcoll_status_t (*reduce)(void *dst, const void *a, const void *b, size_t count,
                             xcoll_dtype_t dtype, xcoll_op_t op, int q);
    xcoll_status_t (*divide)(void *dst, size_t count, xcoll_dtype_t dtype, uint32_t n, int q);
    xcoll_status_t (*event_create)(void **ev);
    void (*event_destroy)(void *ev);
    /* marks the end of what is queued so far on internal queue q */
    xcoll_status_t (*record)(void *ev, int q);
    /* ... on the caller's stream; NULL means the legacy default stream,
     * which orders after all work on blocking streams */
    xcoll_status_t (*record_on_stream)(void *ev, void *stream);
    /* XCOLL_OK once the work before the event is done, XCOLL_INPROGRESS
     * before, or an error */
    xcoll_status_t (*query)(void *ev);
    /* Work queued on stream after this call waits until *flag >= value
     * (the host writes flag; it lives in pinned memory). */
    xcoll_status_t (*hold_stream)(void *stream, const volatile uint32_t *flag, uint32_t value);
    /* blocking copy, any direction (shadow buffers, tests) */
    xcoll_status_t (*copy_sync)(void *dst, const void *src, size_t bytes);
    /* one line for xcoll_build_info: devices found, or why none */
    const char *(*describe)(void);
} xc_gpu_backend_t;

/* The active backend, or NULL when there is no GPU. The first call picks
 * the CUDA backend if this build has one and it finds a device; a driver
 * that is missing or too old counts as "no GPU", never as an error. */
const xc_gpu_backend_t *xc_gpu(void);

/* Installs a backend (the emulation in tests); NULL goes back to "no GPU".
 * Call before any communicator exists. */
void xc_gpu_set_backend(const xc_gpu_backend_t *backend);

/* The memory type of p: XC_MEM_HOST when there is no backend. *device, if
 * not NULL, gets the ordinal of the device holding p (-1 for host memory). */
xc_memtype_t xc_gpu_memtype(const void *p, int *device);

/* Pooled resources (gpu.c). Each get returns NULL (and logs) on failure. */
void *xc_gpu_pinned_get(size_t bytes);
void xc_gpu_pinned_put(void *p);
void *xc_gpu_dev_get(size_t bytes);
void xc_gpu_dev_put(void *p);
void *xc_gpu_event_get(void);
void xc_gpu_event_put(void *ev);

/* A pinned word for holding a stream until the host says go: hold the
 * stream until the word reaches *value, then xc_gpu_flag_release(flag,
 * *value) writes it and returns the word to the pool. */
volatile uint32_t *xc_gpu_flag_get(uint32_t *value);

/* 1 while some stream is held. CUDA lists page-locked and device memory
 * allocation among the operations that may wait for all device work, the
 * held stream's wait kernel included, which only this thread can release:
 * memory a call needs is then taken before its hold is queued. */
int xc_gpu_holds_pending(void);
void xc_gpu_flag_release(volatile uint32_t *flag, uint32_t value);

/* One line for xcoll_build_info: the backend, its devices, or why none. */
const char *xc_gpu_describe(void);

/* 1 for memory a GPU kernel may take as an operand. */
static inline int xc_mem_gpu_ok(xc_memtype_t m)
{
    return m != XC_MEM_HOST;
}

/* 1 for device memory (device or managed): the GPU works on it. */
static inline int xc_mem_on_device(xc_memtype_t m)
{
    return m == XC_MEM_DEVICE || m == XC_MEM_MANAGED;
}

/* Frees the pools (at exit and in tests' leak checks). */
void xc_gpu_release_pools(void);

#endif
