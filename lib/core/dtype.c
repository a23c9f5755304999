/* Host reductions: one plain loop per (dtype, op), chosen once per call.
 * The loops are left without restrict on purpose: dst may equal a or b, and
 * GCC vectorises `d[i] = f(a[i], b[i])` behind a runtime overlap check that
 * an exact alias passes (distance 0 is safe), so both cases run vectorised.
 * Nothing here logs: callers validate dtype and op first (xc_op_allowed),
 * and an invalid pair is simply ignored rather than crashing. */

/* At -O2, GCC's "very cheap" vectoriser cost model refuses every loop here
 * (each needs an overlap check or a scalar tail), leaving them ~4x slower;
 * ask for the -O3 behaviour for this file whatever the build flags. Before
 * the includes, so the inline element functions get the same options and
 * still inline. Clang vectorises these loops at -O2 already.
 *
 * A build for plain x86-64 vectorises with SSE2 only, where the half
 * conversions and the NaN-aware min/max need several instructions per
 * select: measured on an AMD EPYC, 2 MiB reduced 64 KiB at a time, float16
 * sum 0.9 GB/s, bfloat16 sum 4.1, float32 max 9.6 (float32 sum 40). So the
 * loops are also built for AVX2 and for x86-64-v4 (AVX-512) and the CPU
 * picks one when the library loads (GCC's function multiversioning, an
 * ifunc): 1.7 / 8.2 / 30 GB/s with AVX2, 3.9 / 22 / 33 with AVX-512. Every
 * clone computes the same C semantics: no fast-math, and no contraction of
 * a multiply and an add into an FMA (x86-64-v4 has FMA), as the CUDA
 * kernels are built with --fmad=false, so results stay bit-identical
 * whichever CPU a rank runs on. float16 goes further where the CPU has
 * F16C (reduce_f16_f16c below): 24-30 GB/s. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=off")
#if defined(__x86_64__) && defined(__ELF__) && !defined(XC_NO_CLONES)
#define XC_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#define XC_F16C_PATH 1
#include <immintrin.h>
#endif
#endif
#ifndef XC_CLONES
#define XC_CLONES
#endif

#include "dtype.h"
#include "reduce_ops.h"

int xc_dtype_valid(xcoll_dtype_t dtype)
{
    /* Compare as unsigned so a negative value cast to the enum is rejected too. */
    return (unsigned)dtype < (unsigned)XCOLL_DTYPE_COUNT;
}

int xc_op_valid(xcoll_op_t op)
{
    return (unsigned)op < (unsigned)XCOLL_OP_COUNT;
}

static int dtype_is_float(xcoll_dtype_t dtype)
{
    return dtype == XCOLL_FLOAT16 || dtype == XCOLL_BFLOAT16 || dtype == XCOLL_FLOAT32 ||
           dtype == XCOLL_FLOAT64;
}

int xc_op_allowed(xcoll_dtype_t dtype, xcoll_op_t op)
{
    if (!xc_dtype_valid(dtype) || !xc_op_valid(op))
        return 0;
    if (op == XCOLL_BAND || op == XCOLL_BOR || op == XCOLL_BXOR)
        return !dtype_is_float(dtype);
    return 1;
}

size_t xcoll_dtype_size(xcoll_dtype_t dtype)
{
    switch (dtype) {
    case XCOLL_INT8:
    case XCOLL_UINT8:
        return 1;
    case XCOLL_FLOAT16:
    case XCOLL_BFLOAT16:
        return 2;
    case XCOLL_INT32:
    case XCOLL_UINT32:
    case XCOLL_FLOAT32:
        return 4;
    case XCOLL_INT64:
    case XCOLL_UINT64:
    case XCOLL_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

const char *xcoll_dtype_name(xcoll_dtype_t dtype)
{
    static const char *const names[XCOLL_DTYPE_COUNT] = {
        [XCOLL_INT8] = "int8",       [XCOLL_UINT8] = "uint8",
        [XCOLL_INT32] = "int32",     [XCOLL_UINT32] = "uint32",
        [XCOLL_INT64] = "int64",     [XCOLL_UINT64] = "uint64",
        [XCOLL_FLOAT16] = "float16", [XCOLL_BFLOAT16] = "bfloat16",
        [XCOLL_FLOAT32] = "float32", [XCOLL_FLOAT64] = "float64",
    };
    return xc_dtype_valid(dtype) ? names[dtype] : "invalid";
}

const char *xcoll_op_name(xcoll_op_t op)
{
    static const char *const names[XCOLL_OP_COUNT] = {
        [XCOLL_SUM] = "sum",   [XCOLL_PROD] = "prod", [XCOLL_MIN] = "min",
        [XCOLL_MAX] = "max",   [XCOLL_AVG] = "avg",   [XCOLL_BAND] = "band",
        [XCOLL_BOR] = "bor",   [XCOLL_BXOR] = "bxor",
    };
    return xc_op_valid(op) ? names[op] : "invalid";
}

float xc_half_to_float(uint16_t h) { return xc_f16_to_f32(h); }
uint16_t xc_float_to_half(float f) { return xc_f32_to_f16(f); }
float xc_bf16_to_float(uint16_t b) { return xc_bf16_to_f32(b); }
uint16_t xc_float_to_bf16(float f) { return xc_f32_to_bf16(f); }

/* --- reduce ---------------------------------------------------------------- */

/* Buffers may start at any address (xcoll.h asks no alignment: an
 * element of a packed structure is a buffer too), and a load through a
 * pointer to a type its address does not align is undefined. Through
 * these 1-aligned types it is defined; x86 loads unaligned at full speed,
 * and the loops vectorise as before. */
#define XC_UNALIGNED(ctype, name) typedef ctype name __attribute__((aligned(1)))

#define REDUCE_LOOP(ctype, fn)                                \
    do {                                                      \
        XC_UNALIGNED(ctype, u_t);                             \
        u_t *d_ = dst;                                        \
        const u_t *a_ = a;                                    \
        const u_t *b_ = b;                                    \
        for (size_t i_ = 0; i_ < count; i_++)                 \
            d_[i_] = fn(a_[i_], b_[i_]);                      \
    } while (0)

/* One function per dtype; the switch runs once per call. */
#define DEFINE_REDUCE_INT(dt, ctype, sfx)                                                  \
    XC_CLONES static void reduce_##sfx(void *dst, const void *a, const void *b,            \
                                       size_t count, xcoll_op_t op)                        \
    {                                                                                      \
        switch (op) {                                                                      \
        case XCOLL_SUM:                                                                    \
        case XCOLL_AVG: REDUCE_LOOP(ctype, xc_sum_##sfx); break;                           \
        case XCOLL_PROD: REDUCE_LOOP(ctype, xc_prod_##sfx); break;                         \
        case XCOLL_MIN: REDUCE_LOOP(ctype, xc_min_##sfx); break;                           \
        case XCOLL_MAX: REDUCE_LOOP(ctype, xc_max_##sfx); break;                           \
        case XCOLL_BAND: REDUCE_LOOP(ctype, xc_band_##sfx); break;                         \
        case XCOLL_BOR: REDUCE_LOOP(ctype, xc_bor_##sfx); break;                           \
        case XCOLL_BXOR: REDUCE_LOOP(ctype, xc_bxor_##sfx); break;                         \
        default: break;                                                                    \
        }                                                                                  \
    }

#define DEFINE_REDUCE_FLOAT(dt, ctype, sfx)                                                \
    XC_CLONES static void reduce_##sfx(void *dst, const void *a, const void *b,            \
                                       size_t count, xcoll_op_t op)                        \
    {                                                                                      \
        switch (op) {                                                                      \
        case XCOLL_SUM:                                                                    \
        case XCOLL_AVG: REDUCE_LOOP(ctype, xc_sum_##sfx); break;                           \
        case XCOLL_PROD: REDUCE_LOOP(ctype, xc_prod_##sfx); break;                         \
        case XCOLL_MIN: REDUCE_LOOP(ctype, xc_min_##sfx); break;                           \
        case XCOLL_MAX: REDUCE_LOOP(ctype, xc_max_##sfx); break;                           \
        default: break; /* bitwise ops are not defined on floating types */               \
        }                                                                                  \
    }

XC_FOREACH_INT_DTYPE(DEFINE_REDUCE_INT)
XC_FOREACH_FLOAT_DTYPE(DEFINE_REDUCE_FLOAT)

#ifdef XC_F16C_PATH
/* float16 through the CPU's own conversions (F16C, with AVX2), 8 elements
 * a vector: converted, combined and converted back in registers; the
 * portable conversions vectorise into ~30 instructions a vector. The
 * conversions give the bits of xc_f16_to_f32 and xc_f32_to_f16 for every
 * input (compared exhaustively: all 2^16 halves, all 2^32 floats, rounding
 * to nearest even as vcvtps2ph is told to, with and without FTZ and DAZ in
 * MXCSR), and each vector operation below is its float32 function's
 * (xc_min_f32's NaN and signed-zero rules as masks), so results are the
 * portable loop's bit for bit, with two exceptions that neither loop
 * defines either: which payload survives NaN + NaN (the compiler orders
 * the operands in both), and a rounding mode other than the default (the
 * portable conversions round subnormal halves by MXCSR, these never; the
 * CUDA kernels, too, round to nearest). A vector is read whole before it
 * is written: dst may be a or b. */
#define XC_F16_RNE _MM_FROUND_TO_NEAREST_INT

XC_UNALIGNED(uint16_t, xc_half_t);

__attribute__((target("avx2,f16c"))) static inline __m256 f16_get(const xc_half_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

__attribute__((target("avx2,f16c"))) static inline void f16_put(xc_half_t *p, __m256 v)
{
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, XC_F16_RNE));
}

/* xc_min_f32 / xc_max_f32: a where a is smaller (larger) or NaN, the OR
 * (AND) of the two where they are equal, else b */
__attribute__((target("avx2,f16c"))) static inline __m256 f16_minmax(__m256 a, __m256 b, int max)
{
    /* the predicate must be a literal: at -O0 the intrinsic is a macro */
    __m256 wins = max ? _mm256_cmp_ps(a, b, _CMP_GT_OQ) : _mm256_cmp_ps(a, b, _CMP_LT_OQ);
    __m256 first = _mm256_or_ps(wins, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    __m256 both = max ? _mm256_and_ps(a, b) : _mm256_or_ps(a, b);
    __m256 r = _mm256_blendv_ps(b, both, _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, a, first);
}

#define F16_LOOP(vec_op, scalar_op)                                              \
    do {                                                                         \
        for (; i + 8 <= count; i += 8) {                                         \
            __m256 x = f16_get(pa + i), y = f16_get(pb + i);                     \
            f16_put(pd + i, vec_op);                                             \
        }                                                                        \
        for (; i < count; i++)                                                   \
            pd[i] = _cvtss_sh(scalar_op(_cvtsh_ss(pa[i]), _cvtsh_ss(pb[i])), XC_F16_RNE); \
    } while (0)

__attribute__((target("avx2,f16c"))) static void reduce_f16_f16c(void *dst, const void *a,
                                                                const void *b, size_t count,
                                                                xcoll_op_t op)
{
    xc_half_t *pd = dst;
    const xc_half_t *pa = a, *pb = b;
    size_t i = 0;
    switch (op) {
    case XCOLL_SUM:
    case XCOLL_AVG: F16_LOOP(_mm256_add_ps(x, y), xc_sum_f32); break;
    case XCOLL_PROD: F16_LOOP(_mm256_mul_ps(x, y), xc_prod_f32); break;
    case XCOLL_MIN: F16_LOOP(f16_minmax(x, y, 0), xc_min_f32); break;
    case XCOLL_MAX: F16_LOOP(f16_minmax(x, y, 1), xc_max_f32); break;
    default: break; /* bitwise ops are not defined on floating types */
    }
}

__attribute__((target("avx2,f16c"))) static void divide_f16_f16c(void *buf, size_t count,
                                                                uint32_t n)
{
    xc_half_t *p = buf;
    const __m256 by = _mm256_set1_ps((float)n);
    size_t i = 0;
    for (; i + 8 <= count; i += 8)
        f16_put(p + i, _mm256_div_ps(f16_get(p + i), by));
    for (; i < count; i++)
        p[i] = _cvtss_sh(xc_div_f32(_cvtsh_ss(p[i]), n), XC_F16_RNE);
}

/* Asked once; __builtin_cpu_init because this may run before the
 * constructors that would otherwise fill in what the CPU has. */
static int have_f16c(void)
{
    static int known; /* 0 not asked yet, 1 no, 2 yes */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (k == 0) {
        __builtin_cpu_init();
        k = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") ? 2 : 1;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 2;
}
#endif

void xc_reduce(void *dst, const void *a, const void *b, size_t count, xcoll_dtype_t dtype,
               xcoll_op_t op)
{
    if (count == 0)
        return;
#ifdef XC_F16C_PATH
    if (dtype == XCOLL_FLOAT16 && have_f16c()) {
        reduce_f16_f16c(dst, a, b, count, op);
        return;
    }
#endif
    switch (dtype) {
#define REDUCE_CASE(dt, ctype, sfx) \
    case dt: reduce_##sfx(dst, a, b, count, op); break;
        XC_FOREACH_DTYPE(REDUCE_CASE)
#undef REDUCE_CASE
    default:
        break;
    }
}

/* --- divide (finishes AVG) ------------------------------------------------- */

#define DIVIDE_CASE(dt, ctype, sfx)                           \
    case dt: {                                                \
        XC_UNALIGNED(ctype, u_t);                             \
        u_t *p_ = buf;                                        \
        for (size_t i_ = 0; i_ < count; i_++)                 \
            p_[i_] = xc_div_##sfx(p_[i_], n);                 \
        break;                                                \
    }

XC_CLONES void xc_divide(void *buf, size_t count, xcoll_dtype_t dtype, uint32_t n)
{
    /* n == 0 is meaningless (a communicator has at least one rank); leave
     * the data alone rather than trap. n == 1 is the identity. */
    if (count == 0 || n <= 1)
        return;
#ifdef XC_F16C_PATH
    if (dtype == XCOLL_FLOAT16 && have_f16c()) {
        divide_f16_f16c(buf, count, n);
        return;
    }
#endif
    switch (dtype) {
        XC_FOREACH_DTYPE(DIVIDE_CASE)
    default:
        break;
    }
}
