/* Element arithmetic of the reductions, shared by the host loops
 * (dtype.c) and the CUDA kernels, so both round and wrap identically and the
 * GPU arithmetic is tested on the CPU.
 *
 * Semantics, for every path:
 *  - integers: sum and prod wrap modulo 2^bits (signed types too: the
 *    arithmetic goes through the unsigned type, so there is no UB);
 *  - float16 (IEEE binary16) and bfloat16 are held as uint16_t bit patterns,
 *    widened to float, combined in float and rounded back to nearest-even;
 *  - min/max of floating types: a NaN operand gives NaN, and -0 is taken as
 *    less than +0. Both rules keep min/max commutative (up to which NaN's
 *    payload survives), so ranks that combine the same values in different
 *    orders still agree bit for bit;
 *  - bitwise ops exist for integer types only.
 *
 * Names: xc_<op>_<suffix>(a, b) and xc_div_<suffix>(x, n), suffixes i8 u8 i32 u32 i64 u64 f16 bf16 f32
 * f64; the conversions are xc_f16_to_f32, xc_f32_to_f16, xc_bf16_to_f32,
 * xc_f32_to_bf16. XC_FOREACH_DTYPE lists the dtypes so that every loop
 * nest (host or device) can be generated from one list.
 */
#ifndef XC_REDUCE_OPS_H
#define XC_REDUCE_OPS_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define XC_HOSTDEV __host__ __device__
#else
#define XC_HOSTDEV
#endif

/* X(dtype enumerator, element C type, suffix). Storage type of float16 and
 * bfloat16 is uint16_t. */
#define XC_FOREACH_INT_DTYPE(X) \
    X(XCOLL_INT8, int8_t, i8)   \
    X(XCOLL_UINT8, uint8_t, u8) \
    X(XCOLL_INT32, int32_t, i32) \
    X(XCOLL_UINT32, uint32_t, u32) \
    X(XCOLL_INT64, int64_t, i64) \
    X(XCOLL_UINT64, uint64_t, u64)
#define XC_FOREACH_FLOAT_DTYPE(X)  \
    X(XCOLL_FLOAT16, uint16_t, f16) \
    X(XCOLL_BFLOAT16, uint16_t, bf16) \
    X(XCOLL_FLOAT32, float, f32)   \
    X(XCOLL_FLOAT64, double, f64)
#define XC_FOREACH_DTYPE(X) XC_FOREACH_INT_DTYPE(X) XC_FOREACH_FLOAT_DTYPE(X)

/* --- bit casts ------------------------------------------------------------ */

XC_HOSTDEV static inline uint32_t xc_f32_as_u32(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

XC_HOSTDEV static inline float xc_u32_as_f32(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

XC_HOSTDEV static inline uint64_t xc_f64_as_u64(double d)
{
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(d);
#else
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
#endif
}

XC_HOSTDEV static inline double xc_u64_as_f64(uint64_t u)
{
#ifdef __CUDA_ARCH__
    return __longlong_as_double((long long)u);
#else
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
#endif
}

/* --- float16 / bfloat16 conversions --------------------------------------- */

/* c ? a : b for c in {0, 1}, as bit masks. The half conversions below pick
 * among precomputed candidates with it instead of branching: with
 * ternaries GCC sinks the float addition into a branch, and under the
 * default -ftrapping-math it will not if-convert a branch holding a float
 * operation, so the reduction loops would stay scalar. */
XC_HOSTDEV static inline uint32_t xc_select_u32_(uint32_t c, uint32_t a, uint32_t b)
{
    uint32_t mask = 0u - c;
    return (a & mask) | (b & ~mask);
}

XC_HOSTDEV static inline float xc_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t magnitude = h & 0x7fffu;
    uint32_t exp = magnitude >> 10;
    /* Normal: shift exponent and mantissa into place and rebias 15 -> 127. */
    uint32_t bits = (magnitude << 13) + (112u << 23);
    /* Inf/NaN: rebias once more to reach exponent 255; the mantissa (NaN
     * payload) comes along, so a NaN stays NaN. */
    bits = xc_select_u32_(exp == 0x1f, bits + (112u << 23), bits);
    /* Subnormal (or zero) m * 2^-24: build the normal float 2^-14 * (1 +
     * m/1024) and subtract 2^-14, which is exact. Everything else subtracts
     * +0, which changes nothing. */
    bits = xc_select_u32_(exp == 0, bits + (1u << 23), bits);
    uint32_t bias = xc_select_u32_(exp == 0, 0x38800000u /* 2^-14 */, 0u);
    return xc_u32_as_f32(xc_f32_as_u32(xc_u32_as_f32(bits) - xc_u32_as_f32(bias)) | sign);
}

XC_HOSTDEV static inline uint16_t xc_f32_to_f16(float f)
{
    uint32_t x = xc_f32_as_u32(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;

    /* NaN: keep the top payload bits and force the quiet bit, so it stays NaN. */
    uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
    /* Normal result (ax >= 2^-14): rebias 127 -> 15 and round 13 bits off to
     * nearest-even; a carry out of the mantissa correctly bumps the
     * exponent. (Wraps harmlessly for the inputs it is not selected for.) */
    uint32_t normal = ax - (112u << 23);
    normal = (normal + 0xfffu + ((normal >> 13) & 1u)) >> 13;
    /* Subnormal result (ax < 2^-14): adding 0.5, whose ulp is 2^-24 (the
     * half subnormal step), makes the float unit round to nearest-even for
     * us; the low mantissa bits are then the half's. A tie at 2^-25 goes to
     * 0. Other inputs add 0 instead, so the addition never overflows, sees
     * a NaN, or (slow on x86) a float subnormal made by masking. */
    uint32_t tiny = ax & (0u - (uint32_t)(ax < 0x38800000u));
    uint32_t subnormal = xc_f32_as_u32(xc_u32_as_f32(tiny) + 0.5f) - 0x3f000000u;

    uint32_t out = xc_select_u32_(ax >= 0x38800000u, normal, subnormal);
    /* 65520 is halfway between 65504 (largest half, odd mantissa) and 2^16,
     * so it and everything above round to infinity. */
    out = xc_select_u32_(ax >= 0x477ff000u, 0x7c00u, out);
    out = xc_select_u32_(ax > 0x7f800000u, nan, out);
    return (uint16_t)(out | sign);
}

XC_HOSTDEV static inline float xc_bf16_to_f32(uint16_t b)
{
    return xc_u32_as_f32((uint32_t)b << 16);
}

XC_HOSTDEV static inline uint16_t xc_f32_to_bf16(float f)
{
    uint32_t x = xc_f32_as_u32(f);

    /* NaN: truncating could clear every payload bit left and make an
     * infinity, so set the quiet bit. */
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    /* Same exponent range as float: rounding the low 16 bits off handles
     * subnormals as they are and overflows into the infinity pattern. */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* --- integer ops ---------------------------------------------------------- */

/* Sum and prod go through the unsigned type of the same width: unsigned
 * arithmetic wraps by definition, and the conversion back to the signed type
 * is implementation-defined, which GCC, Clang and NVCC all define as modulo
 * 2^bits (no UB, nothing for UBSan to flag). */
#define XC_INT_OPS_(ctype, utype, sfx)                                              \
    XC_HOSTDEV static inline ctype xc_sum_##sfx(ctype a, ctype b)                   \
    {                                                                               \
        return (ctype)(utype)((utype)a + (utype)b);                                 \
    }                                                                               \
    XC_HOSTDEV static inline ctype xc_prod_##sfx(ctype a, ctype b)                  \
    {                                                                               \
        /* 8-bit operands promote to int, where 255 * 255 cannot overflow */     \
        return (ctype)(utype)((utype)a * (utype)b);                                 \
    }                                                                               \
    XC_HOSTDEV static inline ctype xc_min_##sfx(ctype a, ctype b) { return a < b ? a : b; } \
    XC_HOSTDEV static inline ctype xc_max_##sfx(ctype a, ctype b) { return a > b ? a : b; } \
    XC_HOSTDEV static inline ctype xc_band_##sfx(ctype a, ctype b) { return (ctype)(a & b); } \
    XC_HOSTDEV static inline ctype xc_bor_##sfx(ctype a, ctype b) { return (ctype)(a | b); } \
    XC_HOSTDEV static inline ctype xc_bxor_##sfx(ctype a, ctype b) { return (ctype)(a ^ b); }

XC_INT_OPS_(int8_t, uint8_t, i8)
XC_INT_OPS_(uint8_t, uint8_t, u8)
XC_INT_OPS_(int32_t, uint32_t, i32)
XC_INT_OPS_(uint32_t, uint32_t, u32)
XC_INT_OPS_(int64_t, uint64_t, i64)
XC_INT_OPS_(uint64_t, uint64_t, u64)

#undef XC_INT_OPS_

/* --- float32 / float64 ops ------------------------------------------------ */

XC_HOSTDEV static inline float xc_sum_f32(float a, float b) { return a + b; }
XC_HOSTDEV static inline float xc_prod_f32(float a, float b) { return a * b; }
XC_HOSTDEV static inline double xc_sum_f64(double a, double b) { return a + b; }
XC_HOSTDEV static inline double xc_prod_f64(double a, double b) { return a * b; }

/* Ordered: the smaller/larger. NaN: a when a is NaN, else b (NaN then).
 * Equal: the bitwise OR (min) or AND (max) of the two, which is either
 * operand for equal nonzero values and picks -0 (min) or +0 (max) from a
 * pair of zeros. Bit operations rather than a sign test so GCC vectorises
 * the float64 loops with SSE2 too. */
XC_HOSTDEV static inline float xc_min_f32(float a, float b)
{
    if (a < b || a != a)
        return a;
    return a == b ? xc_u32_as_f32(xc_f32_as_u32(a) | xc_f32_as_u32(b)) : b;
}

XC_HOSTDEV static inline float xc_max_f32(float a, float b)
{
    if (a > b || a != a)
        return a;
    return a == b ? xc_u32_as_f32(xc_f32_as_u32(a) & xc_f32_as_u32(b)) : b;
}

XC_HOSTDEV static inline double xc_min_f64(double a, double b)
{
    if (a < b || a != a)
        return a;
    return a == b ? xc_u64_as_f64(xc_f64_as_u64(a) | xc_f64_as_u64(b)) : b;
}

XC_HOSTDEV static inline double xc_max_f64(double a, double b)
{
    if (a > b || a != a)
        return a;
    return a == b ? xc_u64_as_f64(xc_f64_as_u64(a) & xc_f64_as_u64(b)) : b;
}

/* --- float16 / bfloat16 ops: in float, rounded back ----------------------- */

#define XC_HALF_OPS_(sfx)                                                           \
    XC_HOSTDEV static inline uint16_t xc_sum_##sfx(uint16_t a, uint16_t b)          \
    {                                                                               \
        return xc_f32_to_##sfx(xc_##sfx##_to_f32(a) + xc_##sfx##_to_f32(b));       \
    }                                                                               \
    XC_HOSTDEV static inline uint16_t xc_prod_##sfx(uint16_t a, uint16_t b)         \
    {                                                                               \
        return xc_f32_to_##sfx(xc_##sfx##_to_f32(a) * xc_##sfx##_to_f32(b));       \
    }                                                                               \
    XC_HOSTDEV static inline uint16_t xc_min_##sfx(uint16_t a, uint16_t b)          \
    {                                                                               \
        return xc_f32_to_##sfx(xc_min_f32(xc_##sfx##_to_f32(a), xc_##sfx##_to_f32(b))); \
    }                                                                               \
    XC_HOSTDEV static inline uint16_t xc_max_##sfx(uint16_t a, uint16_t b)          \
    {                                                                               \
        return xc_f32_to_##sfx(xc_max_f32(xc_##sfx##_to_f32(a), xc_##sfx##_to_f32(b))); \
    }

XC_HALF_OPS_(f16)
XC_HALF_OPS_(bf16)

#undef XC_HALF_OPS_

/* --- divide, finishing AVG (x / n, n >= 1) -------------------------------- */

/* Signed division in int64, where every n fits: it truncates toward zero
 * and INT64_MIN / n cannot overflow for n >= 1. Floating division is by n
 * converted to the element's compute type, exact for n <= 2^24 (ranks are
 * at most 2^20), so the quotient is correctly rounded. */
#define XC_DIV_SIGNED_(ctype, sfx)                                               \
    XC_HOSTDEV static inline ctype xc_div_##sfx(ctype x, uint32_t n)             \
    {                                                                            \
        return (ctype)((int64_t)x / (int64_t)n);                                 \
    }
#define XC_DIV_UNSIGNED_(ctype, sfx)                                             \
    XC_HOSTDEV static inline ctype xc_div_##sfx(ctype x, uint32_t n)             \
    {                                                                            \
        return (ctype)((uint64_t)x / n);                                         \
    }
XC_DIV_SIGNED_(int8_t, i8)
XC_DIV_UNSIGNED_(uint8_t, u8)
XC_DIV_SIGNED_(int32_t, i32)
XC_DIV_UNSIGNED_(uint32_t, u32)
XC_DIV_SIGNED_(int64_t, i64)
XC_DIV_UNSIGNED_(uint64_t, u64)
#undef XC_DIV_SIGNED_
#undef XC_DIV_UNSIGNED_

XC_HOSTDEV static inline float xc_div_f32(float x, uint32_t n) { return x / (float)n; }
XC_HOSTDEV static inline double xc_div_f64(double x, uint32_t n) { return x / (double)n; }
XC_HOSTDEV static inline uint16_t xc_div_f16(uint16_t x, uint32_t n)
{
    return xc_f32_to_f16(xc_f16_to_f32(x) / (float)n);
}
XC_HOSTDEV static inline uint16_t xc_div_bf16(uint16_t x, uint32_t n)
{
    return xc_f32_to_bf16(xc_bf16_to_f32(x) / (float)n);
}

#endif /* XC_REDUCE_OPS_H */
