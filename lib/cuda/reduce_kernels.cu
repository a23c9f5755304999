/* The CUDA kernels behind cuda_kernels.h: elementwise reduce, divide (the
 * end of AVG) and the stream hold. The arithmetic is reduce_ops.h, compiled
 * for the device, so a GPU reduction matches the host's bit for bit, NaN
 * payloads aside: float arithmetic on NaN may give the GPU's canonical NaN
 * where x86 keeps the operand's payload (a NaN stays a NaN either way).
 *
 * Layout of one reduce or divide: the elements before the first 16-byte
 * boundary of dst (the head), whole 16-byte vectors (the body), and what is
 * left (the tail). The body uses uint4 loads and stores, which needs every
 * operand at the same offset from a 16-byte boundary; when they are not,
 * the head is the whole range and every element goes one at a time.
 *
 * Host side: this file is compiled by nvcc but linked by the C toolchain
 * into a C library, so its host code must not need libstdc++ (no
 * exceptions, no function-local statics with guards, no operator new). */
#include <cuda_runtime.h>
#include <atomic>
#include <stdint.h>

#include "cuda_kernels.h"
#include "reduce_ops.h"
/* dtype.h is a C header without extern "C" of its own. */
extern "C" {
#include "dtype.h"
}

namespace {

constexpr unsigned kThreadsPerBlock = 256;
/* 8 x 256 threads fill an SM of every supported architecture (2048
 * resident threads), the most loads in flight a streaming kernel can have. */
constexpr unsigned kBlocksPerSm = 8;
constexpr int kMaxCachedDevices = 64;

/* SM count per device, 0 until first asked. Racing threads store the same
 * value, so relaxed atomics are enough. Zero-initialised at load time. */
std::atomic<int> g_sm_count[kMaxCachedDevices];

/* Whether every kernel of this file is loaded on the device (see
 * load_all_kernels), false until then. Zero-initialised at load time. */
std::atomic<bool> g_kernels_loaded[kMaxCachedDevices];
cudaError_t load_all_kernels(void);

/* Lazy loading (CUDA's default since 12.2) loads a kernel at its first
 * launch, and loading may wait for the context to go idle. A stream held
 * by wait_flag_kernel is not idle until this thread writes the flag, so a
 * kernel's first launch while a hold is pending could hang for ever. All
 * of them are loaded before the first launch on a device instead, when no
 * hold of ours can be pending there yet. */
cudaError_t ensure_loaded(int dev)
{
    if (dev >= 0 && dev < kMaxCachedDevices &&
        g_kernels_loaded[dev].load(std::memory_order_acquire))
        return cudaSuccess;
    cudaError_t err = load_all_kernels();
    if (err == cudaSuccess && dev >= 0 && dev < kMaxCachedDevices)
        g_kernels_loaded[dev].store(true, std::memory_order_release);
    return err;
}

/* Blocks for `items` units of per-thread work on the current device:
 * enough for one unit per thread, at most what fills the GPU (the
 * grid-stride loops take the rest). */
cudaError_t grid_size(size_t items, unsigned *blocks)
{
    int dev = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess)
        err = ensure_loaded(dev);
    if (err != cudaSuccess)
        return err;
    int sms = (dev >= 0 && dev < kMaxCachedDevices)
                  ? g_sm_count[dev].load(std::memory_order_relaxed) : 0;
    if (sms == 0) {
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (err != cudaSuccess)
            return err;
        if (sms < 1)
            sms = 1;
        if (dev >= 0 && dev < kMaxCachedDevices)
            g_sm_count[dev].store(sms, std::memory_order_relaxed);
    }
    size_t wanted = items / kThreadsPerBlock + (items % kThreadsPerBlock != 0);
    size_t cap = (size_t)sms * kBlocksPerSm;
    if (wanted > cap)
        wanted = cap;
    *blocks = wanted > 0 ? (unsigned)wanted : 1u;
    return cudaSuccess;
}

/* One 16-byte vector seen as its elements. */
template <typename T> union Vec16 {
    static constexpr unsigned kLanes = 16 / sizeof(T);
    uint4 v;
    T e[kLanes];
};

/* Where the body starts and how long it is, in elements: see the top. */
struct Split {
    size_t head;  /* elements before the body */
    size_t nvec;  /* 16-byte vectors in the body */
};

template <typename T> Split split_range(size_t count, const void *const *ptrs, int nptrs)
{
    uintptr_t mis = (uintptr_t)ptrs[0] & 15u;
    for (int i = 1; i < nptrs; i++) {
        if (((uintptr_t)ptrs[i] & 15u) != mis)
            return Split{count, 0};
    }
    /* mis is a multiple of sizeof(T) (checked by the caller), so the head is
     * a whole number of elements. */
    size_t head = ((16u - mis) & 15u) / sizeof(T);
    if (head >= count)
        return Split{count, 0};
    return Split{head, (count - head) / Vec16<T>::kLanes};
}

/* Element j of the head-and-tail, which hold `edges` elements together. */
__device__ __forceinline__ size_t edge_index(size_t j, size_t head, size_t body_end)
{
    return j < head ? j : body_end + (j - head);
}

/* dst may be a or b: each element (each vector) is read and then written by
 * one thread, so no __restrict__ and no read-only cache loads. */
template <typename T, typename Op>
__global__ void __launch_bounds__(kThreadsPerBlock)
reduce_kernel(T *dst, const T *a, const T *b, size_t head, size_t nvec, size_t count)
{
    const Op op;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

    uint4 *dv = reinterpret_cast<uint4 *>(dst + head);
    const uint4 *av = reinterpret_cast<const uint4 *>(a + head);
    const uint4 *bv = reinterpret_cast<const uint4 *>(b + head);
    for (size_t i = tid; i < nvec; i += stride) {
        Vec16<T> x, y, r;
        x.v = av[i];
        y.v = bv[i];
#pragma unroll
        for (unsigned k = 0; k < Vec16<T>::kLanes; k++)
            r.e[k] = op(x.e[k], y.e[k]);
        dv[i] = r.v;
    }

    const size_t body_end = head + nvec * Vec16<T>::kLanes;
    const size_t edges = head + (count - body_end);
    for (size_t j = tid; j < edges; j += stride) {
        size_t i = edge_index(j, head, body_end);
        dst[i] = op(a[i], b[i]);
    }
}

template <typename T, typename Div>
__global__ void __launch_bounds__(kThreadsPerBlock)
divide_kernel(T *buf, size_t head, size_t nvec, size_t count, uint32_t n)
{
    const Div div;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

    uint4 *bv = reinterpret_cast<uint4 *>(buf + head);
    for (size_t i = tid; i < nvec; i += stride) {
        Vec16<T> x;
        x.v = bv[i];
#pragma unroll
        for (unsigned k = 0; k < Vec16<T>::kLanes; k++)
            x.e[k] = div(x.e[k], n);
        bv[i] = x.v;
    }

    const size_t body_end = head + nvec * Vec16<T>::kLanes;
    const size_t edges = head + (count - body_end);
    for (size_t j = tid; j < edges; j += stride) {
        size_t i = edge_index(j, head, body_end);
        buf[i] = div(buf[i], n);
    }
}

/* The flag lives in pinned host memory and the host writes it: an acquire
 * load at system scope sees the host's store, and orders after it whatever
 * the host wrote before. The sleep doubles up to ~1 us: each poll is a
 * PCIe round trip, so polling faster buys nothing. */
__global__ void wait_flag_kernel(const volatile uint32_t *flag, uint32_t value)
{
    unsigned sleep_ns = 32;
    for (;;) {
        uint32_t seen;
        asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(seen) : "l"(flag) : "memory");
        if (seen >= value)
            break;
        __nanosleep(sleep_ns);
        if (sleep_ns < 1024)
            sleep_ns *= 2;
    }
}

/* Launch errors are reported by cudaGetLastError(), which also returns an
 * older, unrelated failure still pending on this thread; drop that first so
 * the verdict is about this launch. (A sticky error survives the clear and
 * is reported, as it should be.) */
void clear_stale_error(void) { (void)cudaGetLastError(); }

bool aligned_to(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

template <typename T, typename Op>
cudaError_t launch_reduce(void *dst, const void *a, const void *b, size_t count,
                          cudaStream_t stream)
{
    /* A misaligned element load is a device fault that ends the context;
     * refuse instead. */
    if (!aligned_to(dst, sizeof(T)) || !aligned_to(a, sizeof(T)) || !aligned_to(b, sizeof(T)))
        return cudaErrorInvalidValue;
    const void *ptrs[3] = {dst, a, b};
    Split s = split_range<T>(count, ptrs, 3);
    size_t edges = count - s.nvec * Vec16<T>::kLanes;
    unsigned blocks;
    cudaError_t err = grid_size(s.nvec > edges ? s.nvec : edges, &blocks);
    if (err != cudaSuccess)
        return err;
    clear_stale_error();
    reduce_kernel<T, Op><<<blocks, kThreadsPerBlock, 0, stream>>>(
        static_cast<T *>(dst), static_cast<const T *>(a), static_cast<const T *>(b), s.head,
        s.nvec, count);
    return cudaGetLastError();
}

template <typename T, typename Div>
cudaError_t launch_divide(void *buf, size_t count, uint32_t n, cudaStream_t stream)
{
    if (!aligned_to(buf, sizeof(T)))
        return cudaErrorInvalidValue;
    const void *ptrs[1] = {buf};
    Split s = split_range<T>(count, ptrs, 1);
    size_t edges = count - s.nvec * Vec16<T>::kLanes;
    unsigned blocks;
    cudaError_t err = grid_size(s.nvec > edges ? s.nvec : edges, &blocks);
    if (err != cudaSuccess)
        return err;
    clear_stale_error();
    divide_kernel<T, Div><<<blocks, kThreadsPerBlock, 0, stream>>>(static_cast<T *>(buf), s.head,
                                                                 s.nvec, count, n);
    return cudaGetLastError();
}

/* --- dispatch, generated from reduce_ops.h's dtype lists --------------------
 * An op list entry is X(enumerator, name in reduce_ops.h, ctype, suffix).
 * AVG is not listed: xc_cuda_reduce turns it into SUM. */
#define XC_ARITH_OPS_(X, ctype, sfx) \
    X(XCOLL_SUM, sum, ctype, sfx)    \
    X(XCOLL_PROD, prod, ctype, sfx)  \
    X(XCOLL_MIN, min, ctype, sfx)    \
    X(XCOLL_MAX, max, ctype, sfx)
#define XC_INT_OPS_(X, ctype, sfx)     \
    XC_ARITH_OPS_(X, ctype, sfx)       \
    X(XCOLL_BAND, band, ctype, sfx)    \
    X(XCOLL_BOR, bor, ctype, sfx)      \
    X(XCOLL_BXOR, bxor, ctype, sfx)

#define XC_OP_FUNCTOR_(openum, name, ctype, sfx)                                  \
    struct Op_##name##_##sfx {                                                  \
        __device__ __forceinline__ ctype operator()(ctype a, ctype b) const     \
        {                                                                       \
            return xc_##name##_##sfx(a, b);                                     \
        }                                                                       \
    };
#define XC_OP_CASE_(openum, name, ctype, sfx) \
    case openum: return launch_reduce<ctype, Op_##name##_##sfx>(dst, a, b, count, stream);

#define XC_REDUCE_DTYPE_(ctype, sfx, OPS)                                              \
    OPS(XC_OP_FUNCTOR_, ctype, sfx)                                                    \
    cudaError_t reduce_##sfx(void *dst, const void *a, const void *b, size_t count,   \
                             xcoll_op_t op, cudaStream_t stream)                       \
    {                                                                                  \
        switch (op) {                                                                  \
            OPS(XC_OP_CASE_, ctype, sfx)                                               \
        default: return cudaErrorInvalidValue;                                         \
        }                                                                              \
    }
#define XC_REDUCE_INT_DTYPE_(dt, ctype, sfx) XC_REDUCE_DTYPE_(ctype, sfx, XC_INT_OPS_)
#define XC_REDUCE_FLOAT_DTYPE_(dt, ctype, sfx) XC_REDUCE_DTYPE_(ctype, sfx, XC_ARITH_OPS_)
XC_FOREACH_INT_DTYPE(XC_REDUCE_INT_DTYPE_)
XC_FOREACH_FLOAT_DTYPE(XC_REDUCE_FLOAT_DTYPE_)

#define XC_DIV_FUNCTOR_(dt, ctype, sfx)                                          \
    struct Div_##sfx {                                                         \
        __device__ __forceinline__ ctype operator()(ctype x, uint32_t n) const \
        {                                                                      \
            return xc_div_##sfx(x, n);                                         \
        }                                                                      \
    };
XC_FOREACH_DTYPE(XC_DIV_FUNCTOR_)

/* cudaFuncGetAttributes makes the runtime load the kernel on the current
 * device, as a launch would. */
#define XC_LOAD_REDUCE_(openum, name, ctype, sfx) \
    if (err == cudaSuccess)                       \
        err = cudaFuncGetAttributes(&attr, reduce_kernel<ctype, Op_##name##_##sfx>);
#define XC_LOAD_DTYPE_(ctype, sfx, OPS) \
    OPS(XC_LOAD_REDUCE_, ctype, sfx)    \
    if (err == cudaSuccess)             \
        err = cudaFuncGetAttributes(&attr, divide_kernel<ctype, Div_##sfx>);
#define XC_LOAD_INT_DTYPE_(dt, ctype, sfx) XC_LOAD_DTYPE_(ctype, sfx, XC_INT_OPS_)
#define XC_LOAD_FLOAT_DTYPE_(dt, ctype, sfx) XC_LOAD_DTYPE_(ctype, sfx, XC_ARITH_OPS_)
cudaError_t load_all_kernels(void)
{
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, wait_flag_kernel);
    XC_FOREACH_INT_DTYPE(XC_LOAD_INT_DTYPE_)
    XC_FOREACH_FLOAT_DTYPE(XC_LOAD_FLOAT_DTYPE_)
    return err;
}

} // namespace

extern "C" cudaError_t xc_cuda_reduce(void *dst, const void *a, const void *b, size_t count,
                                      xcoll_dtype_t dtype, xcoll_op_t op, cudaStream_t stream)
{
    /* Checked before the count, so a bad pair is an error at any size. */
    if (!xc_op_allowed(dtype, op))
        return cudaErrorInvalidValue;
    if (count == 0)
        return cudaSuccess;
    if (op == XCOLL_AVG)
        op = XCOLL_SUM;
    switch (dtype) {
#define XC_REDUCE_CASE_(dt, ctype, sfx) \
    case dt: return reduce_##sfx(dst, a, b, count, op, stream);
        XC_FOREACH_DTYPE(XC_REDUCE_CASE_)
#undef XC_REDUCE_CASE_
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t xc_cuda_divide(void *buf, size_t count, xcoll_dtype_t dtype, uint32_t n,
                                      cudaStream_t stream)
{
    if (!xc_dtype_valid(dtype))
        return cudaErrorInvalidValue;
    /* As xc_divide: n == 1 is the identity and n == 0 leaves the data alone. */
    if (count == 0 || n <= 1)
        return cudaSuccess;
    switch (dtype) {
#define XC_DIVIDE_CASE_(dt, ctype, sfx) \
    case dt: return launch_divide<ctype, Div_##sfx>(buf, count, n, stream);
        XC_FOREACH_DTYPE(XC_DIVIDE_CASE_)
#undef XC_DIVIDE_CASE_
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t xc_cuda_wait_flag(cudaStream_t stream, const volatile uint32_t *flag,
                                         uint32_t value)
{
    if (flag == nullptr)
        return cudaErrorInvalidValue;
    int dev = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess)
        err = ensure_loaded(dev);
    if (err != cudaSuccess)
        return err;
    clear_stale_error();
    wait_flag_kernel<<<1, 1, 0, stream>>>(flag, value);
    return cudaGetLastError();
}
