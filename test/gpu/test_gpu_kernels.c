/* The CUDA kernels (lib/cuda/reduce_kernels.cu) against the host loops
 * (lib/core/dtype.c): every dtype x allowed op, at sizes and pointer
 * offsets that reach each path of the kernels (16-byte body, scalar head
 * and tail, operands that cannot be aligned together, dst aliasing a or b,
 * more vectors than threads), compared bit for bit, guard elements
 * included. Then the divide and the stream hold.
 *
 * One difference is allowed: where both results are NaN they match
 * whatever their bits, because the GPU's float arithmetic may return its
 * canonical NaN where x86 keeps an operand's payload.
 *
 * Skips (77) with no CUDA device. `--bench` adds a throughput table
 * (reduce against cudaMemcpy), which make check does not run. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "cuda_kernels.h"
#include "dtype.h"
#include "xcoll.h"

#define CHECK_MAX_PRINTED 30
#define CHECK_RNG_SEED 0x2545f4914f6cdd1dull
#include "../unit/check.h"

/* A CUDA call the test itself needs (allocation, copies): failing it is
 * not a verdict on the kernels, so stop at once. */
#define CUDA_OR_DIE(call)                                                                    \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            printf("FAIL: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --- element bits ------------------------------------------------------- */

typedef struct {
    int exp_bits, mant_bits; /* 0, 0 for integer types */
} fmt_t;

static fmt_t dtype_fmt(xcoll_dtype_t dt)
{
    switch (dt) {
    case XCOLL_FLOAT16: return (fmt_t){5, 10};
    case XCOLL_BFLOAT16: return (fmt_t){8, 7};
    case XCOLL_FLOAT32: return (fmt_t){8, 23};
    case XCOLL_FLOAT64: return (fmt_t){11, 52};
    default: return (fmt_t){0, 0};
    }
}

static uint64_t get_bits(const void *base, size_t i, size_t esize)
{
    const unsigned char *p = (const unsigned char *)base + i * esize;
    uint64_t v = 0;
    memcpy(&v, p, esize); /* little-endian: the low bytes */
    return v;
}

static void put_bits(void *base, size_t i, size_t esize, uint64_t v)
{
    memcpy((unsigned char *)base + i * esize, &v, esize);
}

static int is_nan_bits(uint64_t v, fmt_t f)
{
    if (f.exp_bits == 0)
        return 0;
    uint64_t mant_mask = (1ull << f.mant_bits) - 1;
    uint64_t exp = (v >> f.mant_bits) & ((1ull << f.exp_bits) - 1);
    return exp == (1ull << f.exp_bits) - 1 && (v & mant_mask) != 0;
}

static uint64_t make_float(fmt_t f, uint64_t sign, uint64_t exp, uint64_t mant)
{
    return sign << (f.exp_bits + f.mant_bits) | exp << f.mant_bits |
           (mant & ((1ull << f.mant_bits) - 1));
}

/* Random values with the cases that matter over-represented: for floats
 * zeros of both signs, infinities, quiet and signalling NaNs, subnormals,
 * the largest finite, and values of moderate size (whose sums and products
 * round rather than overflow); for integers the extremes. */
static uint64_t random_value(fmt_t f, size_t esize)
{
    uint64_t r = rnd64();
    unsigned pick = (unsigned)(r & 7);
    r >>= 3;
    uint64_t all = esize == 8 ? ~0ull : (1ull << (8 * esize)) - 1;
    if (f.exp_bits == 0) {
        if (pick == 0) {
            switch (r % 5) {
            case 0: return 0;
            case 1: return 1;
            case 2: return all;                     /* -1 */
            case 3: return 1ull << (8 * esize - 1); /* the signed minimum */
            default: return all >> 1;               /* the signed maximum */
            }
        }
        return rnd64() & all;
    }
    uint64_t emax = (1ull << f.exp_bits) - 1, bias = emax >> 1;
    uint64_t sign = r & 1, mant = rnd64();
    r >>= 1;
    if (pick == 0) {
        switch (r % 10) {
        case 0: return make_float(f, sign, 0, 0);                         /* +-0 */
        case 1: return make_float(f, sign, emax, 0);                      /* +-inf */
        case 2: return make_float(f, sign, emax, 1ull << (f.mant_bits - 1) | mant); /* qNaN */
        case 3: return make_float(f, sign, emax, 1);                      /* sNaN */
        case 4: return make_float(f, sign, 0, 1);                         /* min subnormal */
        case 5: return make_float(f, sign, 0, ~0ull);                     /* max subnormal */
        case 6: return make_float(f, sign, emax - 1, ~0ull);              /* max finite */
        case 7: return make_float(f, sign, 1, 0);                         /* min normal */
        case 8: return make_float(f, sign, 0, mant);                      /* any subnormal */
        default: return make_float(f, sign, bias, 0);                     /* +-1 */
        }
    }
    if (pick <= 3)
        return rnd64() & all;
    return make_float(f, sign, bias - 10 + (r >> 1) % 21, mant);
}

static void fill_pair(void *a, void *b, size_t n, xcoll_dtype_t dt)
{
    size_t esize = xcoll_dtype_size(dt);
    fmt_t f = dtype_fmt(dt);
    uint64_t sign_bit = 1ull << (8 * esize - 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = random_value(f, esize);
        uint64_t y;
        switch (rnd64() & 15) {
        case 0: y = x; break;            /* equal operands: min/max ties */
        case 1: y = x ^ sign_bit; break; /* opposite signs: -0 vs +0, x + -x */
        default: y = random_value(f, esize); break;
        }
        put_bits(a, i, esize, x);
        put_bits(b, i, esize, y);
    }
}

/* --- reduce ---------------------------------------------------------------- */

enum { ALIAS_NONE, ALIAS_DST_A, ALIAS_DST_B };

typedef struct {
    size_t off_dst, off_a, off_b; /* in elements */
    int alias;
} layout_t;

static const layout_t layouts[] = {
    {0, 0, 0, ALIAS_NONE},  {1, 1, 1, ALIAS_NONE},  {3, 3, 3, ALIAS_NONE},
    {0, 1, 3, ALIAS_NONE},  {3, 0, 0, ALIAS_NONE},  /* cannot be aligned together */
    {0, 0, 0, ALIAS_DST_A}, {1, 1, 1, ALIAS_DST_A}, {3, 3, 3, ALIAS_DST_A},
    {1, 1, 0, ALIAS_DST_A}, {0, 0, 0, ALIAS_DST_B}, {3, 3, 3, ALIAS_DST_B},
    {0, 1, 0, ALIAS_DST_B},
};

static const size_t counts[] = {0, 1, 3, 4097, (1u << 20) + 3};
#define MAX_COUNT ((1u << 20) + 3)
#define MAX_OFF 3
#define GUARD 32 /* elements past the end that must stay untouched */
#define BUF_ELEMS (MAX_COUNT + MAX_OFF + GUARD)

typedef struct {
    void *ha, *hb, *hexp, *hgot; /* host: inputs, expected, result */
    void *da, *db, *dd;          /* device: inputs (never written), work */
} bufs_t;

/* Compares the first n elements of hexp and hgot: bit for bit, except that
 * two NaNs match inside [lo, hi), the range the kernel computed. */
static void compare(const bufs_t *B, size_t n, size_t lo, size_t hi, xcoll_dtype_t dt,
                    const char *what)
{
    size_t esize = xcoll_dtype_size(dt);
    fmt_t f = dtype_fmt(dt);
    if (memcmp(B->hexp, B->hgot, n * esize) == 0) {
        check(1, "%s", what);
        return;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t e = get_bits(B->hexp, i, esize), g = get_bits(B->hgot, i, esize);
        if (e == g || (i >= lo && i < hi && is_nan_bits(e, f) && is_nan_bits(g, f)))
            continue;
        if (bad++ == 0)
            first = i;
    }
    if (bad == 0) {
        check(1, "%s", what);
        return;
    }
    check(0, "%s: %zu wrong elements, first [%zu]%s: expected 0x%llx, got 0x%llx", what, bad,
          first, first < lo || first >= hi ? " (outside the range)" : "",
          (unsigned long long)get_bits(B->hexp, first, esize),
          (unsigned long long)get_bits(B->hgot, first, esize));
}

static void test_reduce_case(const bufs_t *B, xcoll_dtype_t dt, xcoll_op_t op, size_t count,
                             const layout_t *L)
{
    size_t esize = xcoll_dtype_size(dt);
    size_t span = L->off_dst + count + GUARD; /* elements of dst checked */
    char *dd = B->dd, *da = B->da, *db = B->db;
    char *hexp = B->hexp, *ha = B->ha, *hb = B->hb;
    const void *a_dev, *b_dev, *a_host, *b_host;

    switch (L->alias) {
    case ALIAS_DST_A:
        CUDA_OR_DIE(cudaMemcpy(dd, da, span * esize, cudaMemcpyDeviceToDevice));
        memcpy(hexp, ha, span * esize);
        a_dev = dd + L->off_a * esize;
        a_host = hexp + L->off_a * esize;
        b_dev = db + L->off_b * esize;
        b_host = hb + L->off_b * esize;
        break;
    case ALIAS_DST_B:
        CUDA_OR_DIE(cudaMemcpy(dd, db, span * esize, cudaMemcpyDeviceToDevice));
        memcpy(hexp, hb, span * esize);
        a_dev = da + L->off_a * esize;
        a_host = ha + L->off_a * esize;
        b_dev = dd + L->off_b * esize;
        b_host = hexp + L->off_b * esize;
        break;
    default:
        CUDA_OR_DIE(cudaMemset(dd, 0xa5, span * esize));
        memset(hexp, 0xa5, span * esize);
        a_dev = da + L->off_a * esize;
        a_host = ha + L->off_a * esize;
        b_dev = db + L->off_b * esize;
        b_host = hb + L->off_b * esize;
        break;
    }
    char what[160];
    snprintf(what, sizeof what, "reduce %s %s count %zu dst+%zu a+%zu b+%zu%s",
             xcoll_dtype_name(dt), xcoll_op_name(op), count, L->off_dst, L->off_a, L->off_b,
             L->alias == ALIAS_DST_A ? " dst==a" : L->alias == ALIAS_DST_B ? " dst==b" : "");

    cudaError_t err = xc_cuda_reduce(dd + L->off_dst * esize, a_dev, b_dev, count, dt, op, 0);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        check(0, "%s: %s", what, cudaGetErrorString(err));
        if (cudaDeviceSynchronize() != cudaSuccess)
            exit(1); /* a sticky error: the context is gone */
        return;
    }
    xc_reduce(hexp + L->off_dst * esize, a_host, b_host, count, dt, op);
    CUDA_OR_DIE(cudaMemcpy(B->hgot, dd, span * esize, cudaMemcpyDeviceToHost));
    compare(B, span, L->off_dst, L->off_dst + count, dt, what);
}

static void test_divide_case(const bufs_t *B, xcoll_dtype_t dt, uint32_t n, size_t count,
                             size_t off)
{
    size_t esize = xcoll_dtype_size(dt);
    size_t span = off + count + GUARD;
    CUDA_OR_DIE(cudaMemcpy(B->dd, B->da, span * esize, cudaMemcpyDeviceToDevice));
    memcpy(B->hexp, B->ha, span * esize);
    char what[128];
    snprintf(what, sizeof what, "divide %s by %u count %zu buf+%zu", xcoll_dtype_name(dt), n,
             count, off);
    cudaError_t err = xc_cuda_divide((char *)B->dd + off * esize, count, dt, n, 0);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        check(0, "%s: %s", what, cudaGetErrorString(err));
        if (cudaDeviceSynchronize() != cudaSuccess)
            exit(1);
        return;
    }
    xc_divide((char *)B->hexp + off * esize, count, dt, n);
    CUDA_OR_DIE(cudaMemcpy(B->hgot, B->dd, span * esize, cudaMemcpyDeviceToHost));
    compare(B, span, off, off + count, dt, what);
}

static void test_arithmetic(void)
{
    bufs_t B;
    size_t bytes = (size_t)BUF_ELEMS * 8;
    B.ha = malloc(bytes);
    B.hb = malloc(bytes);
    B.hexp = malloc(bytes);
    B.hgot = malloc(bytes);
    if (!B.ha || !B.hb || !B.hexp || !B.hgot) {
        printf("FAIL: out of host memory\n");
        exit(1);
    }
    CUDA_OR_DIE(cudaMalloc(&B.da, bytes));
    CUDA_OR_DIE(cudaMalloc(&B.db, bytes));
    CUDA_OR_DIE(cudaMalloc(&B.dd, bytes));

    static const uint32_t divisors[] = {0, 1, 2, 3, 7, 1u << 20};
    for (int d = 0; d < XCOLL_DTYPE_COUNT; d++) {
        xcoll_dtype_t dt = (xcoll_dtype_t)d;
        size_t esize = xcoll_dtype_size(dt);
        unsigned long fails_before = n_fail;
        fill_pair(B.ha, B.hb, BUF_ELEMS, dt);
        CUDA_OR_DIE(cudaMemcpy(B.da, B.ha, BUF_ELEMS * esize, cudaMemcpyHostToDevice));
        CUDA_OR_DIE(cudaMemcpy(B.db, B.hb, BUF_ELEMS * esize, cudaMemcpyHostToDevice));
        for (int o = 0; o < XCOLL_OP_COUNT; o++) {
            if (!xc_op_allowed(dt, (xcoll_op_t)o))
                continue;
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
                    test_reduce_case(&B, dt, (xcoll_op_t)o, counts[c], &layouts[l]);
        }
        for (size_t k = 0; k < sizeof divisors / sizeof divisors[0]; k++)
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (size_t off = 0; off <= MAX_OFF; off += 1 + (off == 1))
                    test_divide_case(&B, dt, divisors[k], counts[c], off);
        printf("%-9s %s\n", xcoll_dtype_name(dt), n_fail == fails_before ? "ok" : "FAILED");
    }

    CUDA_OR_DIE(cudaFree(B.da));
    CUDA_OR_DIE(cudaFree(B.db));
    CUDA_OR_DIE(cudaFree(B.dd));
    free(B.ha);
    free(B.hb);
    free(B.hexp);
    free(B.hgot);
}

/* What the launchers must refuse, without launching and without leaving an
 * error behind for the next CUDA call. */
static void test_refusals(void)
{
    void *d;
    CUDA_OR_DIE(cudaMalloc(&d, 4096));
    for (int dt = 0; dt < XCOLL_DTYPE_COUNT; dt++)
        for (int op = 0; op < XCOLL_OP_COUNT; op++) {
            if (xc_op_allowed((xcoll_dtype_t)dt, (xcoll_op_t)op))
                continue;
            for (size_t count = 0; count <= 1; count++)
                check(xc_cuda_reduce(d, d, d, count, (xcoll_dtype_t)dt, (xcoll_op_t)op, 0) ==
                          cudaErrorInvalidValue,
                      "reduce %s %s count %zu is refused", xcoll_dtype_name((xcoll_dtype_t)dt),
                      xcoll_op_name((xcoll_op_t)op), count);
        }
    check(xc_cuda_reduce(d, d, d, 1, XCOLL_DTYPE_COUNT, XCOLL_SUM, 0) == cudaErrorInvalidValue,
          "reduce of an invalid dtype is refused");
    check(xc_cuda_reduce(d, d, d, 1, XCOLL_FLOAT32, XCOLL_OP_COUNT, 0) == cudaErrorInvalidValue,
          "reduce with an invalid op is refused");
    check(xc_cuda_divide(d, 1, XCOLL_DTYPE_COUNT, 2, 0) == cudaErrorInvalidValue,
          "divide of an invalid dtype is refused");
    /* An element load off its natural alignment would fault the context. */
    char *odd = (char *)d + 2;
    check(xc_cuda_reduce(odd, d, d, 4, XCOLL_FLOAT32, XCOLL_SUM, 0) == cudaErrorInvalidValue,
          "reduce with a misaligned float32 dst is refused");
    check(xc_cuda_reduce(d, d, odd, 4, XCOLL_INT64, XCOLL_SUM, 0) == cudaErrorInvalidValue,
          "reduce with a misaligned int64 operand is refused");
    check(xc_cuda_divide(odd + 1, 4, XCOLL_FLOAT16, 2, 0) == cudaErrorInvalidValue,
          "divide of a misaligned float16 buffer is refused");
    check(xc_cuda_wait_flag(0, NULL, 1) == cudaErrorInvalidValue,
          "wait on a NULL flag is refused");
    check(cudaGetLastError() == cudaSuccess, "refusals leave no CUDA error behind");
    CUDA_OR_DIE(cudaDeviceSynchronize());
    CUDA_OR_DIE(cudaFree(d));
}

/* --- stream hold ------------------------------------------------------------ */

static int bytes_all(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static void test_wait_flag(void)
{
    enum { N = 4096 };
    volatile uint32_t *flag;
    uint32_t *flag_dev;
    unsigned char *d, host[N];
    cudaStream_t s, peek;
    CUDA_OR_DIE(cudaHostAlloc((void **)&flag, sizeof *flag, cudaHostAllocMapped));
    CUDA_OR_DIE(cudaHostGetDevicePointer((void **)&flag_dev, (void *)flag, 0));
    CUDA_OR_DIE(cudaMalloc((void **)&d, N));
    CUDA_OR_DIE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OR_DIE(cudaStreamCreateWithFlags(&peek, cudaStreamNonBlocking));
    CUDA_OR_DIE(cudaMemset(d, 0, N));
    CUDA_OR_DIE(cudaDeviceSynchronize());
    *flag = 0;

    /* A flag already at the value holds nothing. */
    check(xc_cuda_wait_flag(s, flag_dev, 0) == cudaSuccess, "wait for 0 is queued");
    check(cudaStreamSynchronize(s) == cudaSuccess, "wait for 0 passes at once");

    check(xc_cuda_wait_flag(s, flag_dev, 5) == cudaSuccess, "wait for 5 is queued");
    CUDA_OR_DIE(cudaMemsetAsync(d, 0x5a, N, s));
    sleep_ms(50);
    check(cudaStreamQuery(s) == cudaErrorNotReady, "the stream is held while the flag is 0");
    CUDA_OR_DIE(cudaMemcpyAsync(host, d, N, cudaMemcpyDeviceToHost, peek));
    CUDA_OR_DIE(cudaStreamSynchronize(peek));
    check(bytes_all(host, N, 0), "work queued after the wait has not run after 50 ms");

    __atomic_store_n(flag, 4, __ATOMIC_RELEASE);
    sleep_ms(20);
    check(cudaStreamQuery(s) == cudaErrorNotReady, "the stream is still held at 4 < 5");

    __atomic_store_n(flag, 9, __ATOMIC_RELEASE); /* >= releases, not only == */
    double deadline = now_s() + 10.0;
    cudaError_t q;
    while ((q = cudaStreamQuery(s)) == cudaErrorNotReady && now_s() < deadline)
        sleep_ms(1);
    check(q == cudaSuccess, "the stream runs on once the flag reaches the value (%s)",
          cudaGetErrorString(q));
    if (q == cudaErrorNotReady) {
        /* Release the kernel whatever it waits for, so the process can end. */
        __atomic_store_n(flag, UINT32_MAX, __ATOMIC_RELEASE);
        CUDA_OR_DIE(cudaStreamSynchronize(s));
    }
    CUDA_OR_DIE(cudaMemcpy(host, d, N, cudaMemcpyDeviceToHost));
    check(bytes_all(host, N, 0x5a), "the held work ran after the release");

    CUDA_OR_DIE(cudaStreamDestroy(s));
    CUDA_OR_DIE(cudaStreamDestroy(peek));
    CUDA_OR_DIE(cudaFree(d));
    CUDA_OR_DIE(cudaFreeHost((void *)flag));
}

/* --- --bench ----------------------------------------------------------------- */

#define BENCH_RUNS 20

static int cmp_float(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

/* Median milliseconds of BENCH_RUNS runs of one operation on stream 0. */
static float median_ms(int is_reduce, void *dst, const void *a, const void *b, size_t count,
                       xcoll_dtype_t dt)
{
    size_t bytes = count * xcoll_dtype_size(dt);
    float ms[BENCH_RUNS];
    cudaEvent_t t0, t1;
    CUDA_OR_DIE(cudaEventCreate(&t0));
    CUDA_OR_DIE(cudaEventCreate(&t1));
    for (int r = -2; r < BENCH_RUNS; r++) { /* two warm-up runs */
        CUDA_OR_DIE(cudaEventRecord(t0, 0));
        if (is_reduce)
            CUDA_OR_DIE(xc_cuda_reduce(dst, a, b, count, dt, XCOLL_SUM, 0));
        else
            CUDA_OR_DIE(cudaMemcpyAsync(dst, a, bytes, cudaMemcpyDeviceToDevice, 0));
        CUDA_OR_DIE(cudaEventRecord(t1, 0));
        CUDA_OR_DIE(cudaEventSynchronize(t1));
        if (r >= 0)
            CUDA_OR_DIE(cudaEventElapsedTime(&ms[r], t0, t1));
    }
    CUDA_OR_DIE(cudaEventDestroy(t0));
    CUDA_OR_DIE(cudaEventDestroy(t1));
    qsort(ms, BENCH_RUNS, sizeof ms[0], cmp_float);
    return (ms[BENCH_RUNS / 2 - 1] + ms[BENCH_RUNS / 2]) / 2;
}

static void bench(void)
{
    static const xcoll_dtype_t dts[] = {XCOLL_FLOAT32, XCOLL_BFLOAT16};
    static const size_t mib[] = {64, 256};
    int dev;
    struct cudaDeviceProp prop;
    CUDA_OR_DIE(cudaGetDevice(&dev));
    CUDA_OR_DIE(cudaGetDeviceProperties(&prop, dev));
    printf("\nthroughput on %s, median of %d runs: memcpy moves 2 x bytes, reduce 3 x bytes\n",
           prop.name, BENCH_RUNS);
    printf("%-9s %8s %13s %13s %6s  %s\n", "dtype", "size", "memcpy GB/s", "reduce GB/s",
           "ratio", "target >= 0.80");
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
        for (size_t m = 0; m < sizeof mib / sizeof mib[0]; m++) {
            xcoll_dtype_t dt = dts[t];
            size_t bytes = mib[m] << 20, count = bytes / xcoll_dtype_size(dt);
            void *da, *db, *dd, *ha, *hb, *hexp, *hgot;
            CUDA_OR_DIE(cudaMalloc(&da, bytes));
            CUDA_OR_DIE(cudaMalloc(&db, bytes));
            CUDA_OR_DIE(cudaMalloc(&dd, bytes));
            ha = malloc(bytes);
            hb = malloc(bytes);
            hexp = malloc(bytes);
            hgot = malloc(bytes);
            if (!ha || !hb || !hexp || !hgot) {
                printf("FAIL: out of host memory\n");
                exit(1);
            }
            fill_pair(ha, hb, count, dt);
            CUDA_OR_DIE(cudaMemcpy(da, ha, bytes, cudaMemcpyHostToDevice));
            CUDA_OR_DIE(cudaMemcpy(db, hb, bytes, cudaMemcpyHostToDevice));

            float copy_ms = median_ms(0, dd, da, NULL, count, dt);
            float red_ms = median_ms(1, dd, da, db, count, dt);
            double copy_bw = 2.0 * (double)bytes / (copy_ms * 1e-3) / 1e9;
            double red_bw = 3.0 * (double)bytes / (red_ms * 1e-3) / 1e9;
            double ratio = red_bw / copy_bw;
            printf("%-9s %4zu MiB %13.1f %13.1f %6.2f  %s\n", xcoll_dtype_name(dt), mib[m],
                   copy_bw, red_bw, ratio, ratio >= 0.80 ? "met" : "missed");

            /* The timed result must be right too. */
            xc_reduce(hexp, ha, hb, count, dt, XCOLL_SUM);
            CUDA_OR_DIE(cudaMemcpy(hgot, dd, bytes, cudaMemcpyDeviceToHost));
            bufs_t B = {.hexp = hexp, .hgot = hgot};
            char what[64];
            snprintf(what, sizeof what, "bench result %s %zu MiB", xcoll_dtype_name(dt), mib[m]);
            compare(&B, count, 0, count, dt, what);

            CUDA_OR_DIE(cudaFree(da));
            CUDA_OR_DIE(cudaFree(db));
            CUDA_OR_DIE(cudaFree(dd));
            free(ha);
            free(hb);
            free(hexp);
            free(hgot);
        }
}

int main(int argc, char **argv)
{
    int do_bench = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0) {
            do_bench = 1;
        } else {
            fprintf(stderr, "usage: %s [--bench]\n", argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);

    int ndev = 0;
    cudaError_t err = cudaGetDeviceCount(&ndev);
    if (err != cudaSuccess || ndev == 0) {
        printf("test_gpu_kernels: skipped: no CUDA device (%s)\n", cudaGetErrorString(err));
        return 77;
    }

    double t0 = now_s();
    test_refusals();
    test_wait_flag();
    test_arithmetic();
    if (do_bench)
        bench();
    printf("test_gpu_kernels: %lu passed, %lu failed (%.1f s)\n", n_pass, n_fail, now_s() - t0);
    return n_fail == 0 ? 0 : 1;
}
