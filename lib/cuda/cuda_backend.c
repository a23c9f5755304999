/* The CUDA backend of lib/core/gpu.h: memory types from
 * cudaPointerGetAttributes, two internal streams, events, pinned and device
 * allocations, and the kernels of reduce_kernels.cu.
 *
 * "No GPU" is a normal outcome, not an error: on a machine without a
 * driver (or with one too old for this runtime) cudaGetDeviceCount fails,
 * and xc_cuda_probe returns NULL with the reason kept for xcoll-info. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cuda.h> /* the driver API's types only: libcuda is looked up at run time */
#include <cuda_runtime_api.h>

#include "cuda_kernels.h"
#include "gpu.h"
#include "log.h"

const xc_gpu_backend_t *xc_cuda_probe(void);
const char *xc_cuda_describe(void);

static char g_describe[512];
static int g_device = -1;                     /* the device the streams live on */
static cudaStream_t g_queue[XC_GPU_NQUEUES];

/* Logs a failed CUDA call once, here, and turns it into a status. */
static xcoll_status_t check(cudaError_t e, const char *call)
{
    if (e == cudaSuccess)
        return XCOLL_OK;
    xc_error("%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
    return e == cudaErrorMemoryAllocation ? XCOLL_ERR_NO_MEMORY : XCOLL_ERR_INTERNAL;
}

/* The driver's pointer query, when libcuda exposes it. Unlike
 * cudaPointerGetAttributes it needs no context, so a program that only
 * ever passes host memory does not get a CUDA context (hundreds of MB of
 * device memory per process) just for being asked about. */
typedef CUresult (*xc_pointer_attrs_fn)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
static xc_pointer_attrs_fn g_pointer_attrs;

static void find_driver_query(void)
{
    /* cudart has loaded libcuda by now (cudaGetDeviceCount succeeded) */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL)
        h = dlopen("libcuda.so.1", RTLD_NOW);
    if (h != NULL)
        *(void **)&g_pointer_attrs = dlsym(h, "cuPointerGetAttributes");
    if (g_pointer_attrs == NULL)
        xc_debug("CUDA: no cuPointerGetAttributes in libcuda; buffers are queried "
                 "through the runtime");
}

static xc_memtype_t cuda_memtype(const void *p, int *device)
{
    struct cudaPointerAttributes at;
    int unused;
    if (device == NULL)
        device = &unused;
    *device = -1;
    if (g_pointer_attrs != NULL) {
        unsigned int type = 0, managed = 0;
        int ordinal = -1;
        CUpointer_attribute which[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
        void *data[3];
        data[0] = &type;
        data[1] = &managed;
        data[2] = &ordinal;
        /* unknown (host) memory: an error, or success with zeroed answers */
        if (g_pointer_attrs(3, which, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
            return XC_MEM_HOST;
        *device = ordinal;
        if (managed)
            return XC_MEM_MANAGED;
        if (type == CU_MEMORYTYPE_DEVICE)
            return XC_MEM_DEVICE;
        return type == CU_MEMORYTYPE_HOST ? XC_MEM_PINNED : XC_MEM_HOST;
    }
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        /* older runtimes fail on unregistered host memory; clear the
         * sticky-free error so it does not surface in the next call */
        (void)cudaGetLastError();
        return XC_MEM_HOST;
    }
    *device = at.device;
    switch (at.type) {
    case cudaMemoryTypeDevice:
        return XC_MEM_DEVICE;
    case cudaMemoryTypeManaged:
        return XC_MEM_MANAGED;
    case cudaMemoryTypeHost:
        return XC_MEM_PINNED;
    default:
        return XC_MEM_HOST;
    }
}

/* The streams are created on the device of the first device buffer seen;
 * they are non-blocking so that a caller's stream held by a wait kernel
 * (or the legacy default stream behind it) never stalls them. The device
 * comes from the memory-type query, so a call costs one pointer query. */
static xcoll_status_t cuda_bind(int device)
{
    int q, cur = -1;
    if (device >= 0 && device == g_device)
        return XCOLL_OK;
    if (check(cudaGetDevice(&cur), "cudaGetDevice") != XCOLL_OK)
        return XCOLL_ERR_INTERNAL;
    if (device < 0)
        device = cur;
    if (g_device >= 0) {
        if (device == g_device)
            return XCOLL_OK;
        xc_error("a buffer is on CUDA device %d, but this process already uses device %d: "
                 "xcoll supports one device per process", device, g_device);
        return XCOLL_ERR_UNSUPPORTED;
    }
    if (cur != device && check(cudaSetDevice(device), "cudaSetDevice") != XCOLL_OK)
        return XCOLL_ERR_INTERNAL;
    for (q = 0; q < XC_GPU_NQUEUES; q++) {
        if (check(cudaStreamCreateWithFlags(&g_queue[q], cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags") != XCOLL_OK)
            return XCOLL_ERR_INTERNAL;
    }
    g_device = device;
    if (cur != device)
        (void)cudaSetDevice(cur);
    return XCOLL_OK;
}

static xcoll_status_t cuda_dev_alloc(void **p, size_t bytes)
{
    return check(cudaMalloc(p, bytes), "cudaMalloc");
}

static void cuda_dev_free(void *p)
{
    (void)check(cudaFree(p), "cudaFree");
}

static xcoll_status_t cuda_pinned_alloc(void **p, size_t bytes)
{
    /* portable + mapped: any context may use it, and kernels take the
     * host pointer as an operand (unified addressing) */
    return check(cudaHostAlloc(p, bytes, cudaHostAllocPortable | cudaHostAllocMapped),
                 "cudaHostAlloc");
}

static void cuda_pinned_free(void *p)
{
    (void)check(cudaFreeHost(p), "cudaFreeHost");
}

static xcoll_status_t cuda_copy(void *dst, const void *src, size_t bytes, int q)
{
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, g_queue[q]),
                 "cudaMemcpyAsync");
}

static xcoll_status_t cuda_reduce(void *dst, const void *a, const void *b, size_t count,
                                  xcoll_dtype_t dtype, xcoll_op_t op, int q)
{
    return check(xc_cuda_reduce(dst, a, b, count, dtype, op, g_queue[q]), "reduction kernel");
}

static xcoll_status_t cuda_divide(void *dst, size_t count, xcoll_dtype_t dtype, uint32_t n, int q)
{
    return check(xc_cuda_divide(dst, count, dtype, n, g_queue[q]), "division kernel");
}

static xcoll_status_t cuda_event_create(void **ev)
{
    cudaEvent_t e;
    xcoll_status_t rc = check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                              "cudaEventCreateWithFlags");
    *ev = rc == XCOLL_OK ? (void *)e : NULL;
    return rc;
}

static void cuda_event_destroy(void *ev)
{
    (void)check(cudaEventDestroy((cudaEvent_t)ev), "cudaEventDestroy");
}

static xcoll_status_t cuda_record(void *ev, int q)
{
    return check(cudaEventRecord((cudaEvent_t)ev, g_queue[q]), "cudaEventRecord");
}

static xcoll_status_t cuda_record_on_stream(void *ev, void *stream)
{
    return check(cudaEventRecord((cudaEvent_t)ev, stream ? (cudaStream_t)stream : cudaStreamLegacy),
                 "cudaEventRecord on the caller's stream");
}

static xcoll_status_t cuda_query(void *ev)
{
    cudaError_t e = cudaEventQuery((cudaEvent_t)ev);
    if (e == cudaErrorNotReady)
        return XCOLL_INPROGRESS;
    return check(e, "cudaEventQuery");
}

static xcoll_status_t cuda_hold_stream(void *stream, const volatile uint32_t *flag, uint32_t value)
{
    return check(xc_cuda_wait_flag((cudaStream_t)stream, flag, value), "stream wait kernel");
}

/* Not cudaMemcpy: that runs on the legacy default stream, which waits for
 * every blocking stream, the caller's held one included (a deadlock when
 * the hold is released after this copy, as complete() does), and between
 * device buffers it returns before the copy is done. */
static xcoll_status_t cuda_copy_sync(void *dst, const void *src, size_t bytes)
{
    cudaStream_t q = g_queue[XC_GPU_Q_WORK];
    if (g_device < 0) /* no device buffer seen yet (tests filling buffers): no queue */
        return check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
    if (check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, q), "cudaMemcpyAsync") !=
        XCOLL_OK)
        return XCOLL_ERR_INTERNAL;
    return check(cudaStreamSynchronize(q), "cudaStreamSynchronize");
}

static const char *cuda_describe(void)
{
    return g_describe;
}

static const xc_gpu_backend_t cuda_backend = {
    "cuda",
    cuda_memtype,
    cuda_bind,
    cuda_dev_alloc,
    cuda_dev_free,
    cuda_pinned_alloc,
    cuda_pinned_free,
    cuda_copy,
    cuda_reduce,
    cuda_divide,
    cuda_event_create,
    cuda_event_destroy,
    cuda_record,
    cuda_record_on_stream,
    cuda_query,
    cuda_hold_stream,
    cuda_copy_sync,
    cuda_describe,
};

const xc_gpu_backend_t *xc_cuda_probe(void)
{
    int n = 0, rt = 0, drv = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    struct cudaDeviceProp prop;

    (void)cudaRuntimeGetVersion(&rt);
    (void)cudaDriverGetVersion(&drv);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        snprintf(g_describe, sizeof(g_describe),
                 "built (runtime %d.%d), no device: %s", rt / 1000, rt % 1000 / 10,
                 e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found");
        xc_info("CUDA: %s; every buffer is host memory", g_describe);
        return NULL;
    }
    find_driver_query();
    memset(&prop, 0, sizeof(prop));
    (void)cudaGetDeviceProperties(&prop, 0);
    snprintf(g_describe, sizeof(g_describe),
             "built (runtime %d.%d, driver %d.%d), %d device%s: %s (sm_%d%d)", rt / 1000,
             rt % 1000 / 10, drv / 1000, drv % 1000 / 10, n, n > 1 ? "s" : "", prop.name,
             prop.major, prop.minor);
    xc_info("CUDA: %s", g_describe);
    return &cuda_backend;
}

const char *xc_cuda_describe(void)
{
    if (g_describe[0] == '\0')
        (void)xc_gpu();
    return g_describe[0] ? g_describe : "built, disabled by XCOLL_CUDA=0";
}
