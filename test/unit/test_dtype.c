/* Unit test of datatypes and reduction arithmetic (lib/core/dtype.c,
 * lib/core/reduce_ops.h). The references here are written differently from
 * the library on purpose: values are decoded with ldexp, rounding is done by
 * searching the sorted list of representable values in double arithmetic,
 * and integer ops run in 64-bit unsigned arithmetic. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "xcoll.h"

#define CHECK_RNG_SEED 0x9e3779b97f4a7c15ull
#include "check.h"

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static double u2d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* --- reference 16-bit formats -------------------------------------------- */

typedef struct {
    const char *name;
    int exp_bits, mant_bits;   /* field widths */
    uint16_t max_finite;       /* largest finite positive code */
    uint16_t inf;              /* +infinity code (max_finite + 1) */
} fmt16_t;

static const fmt16_t FMT_HALF = {"float16", 5, 10, 0x7bff, 0x7c00};
static const fmt16_t FMT_BF16 = {"bfloat16", 8, 7, 0x7f7f, 0x7f80};

/* Value of a code, decoded field by field. */
static double ref_value(const fmt16_t *f, uint16_t c)
{
    int bias = (1 << (f->exp_bits - 1)) - 1;
    int e = (c >> f->mant_bits) & ((1 << f->exp_bits) - 1);
    int m = c & ((1 << f->mant_bits) - 1);
    double v;
    if (e == (1 << f->exp_bits) - 1)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, 1 - bias - f->mant_bits);
    else
        v = ldexp(m + (1 << f->mant_bits), e - bias - f->mant_bits);
    return (c & 0x8000) ? -v : v;
}

static int ref_is_nan(const fmt16_t *f, uint16_t c) { return (c & 0x7fff) > f->inf; }

/* Nearest code to x, ties to the even code, by binary search over the
 * positive finite codes (whose values increase with the code). Beyond the
 * largest finite value the next step is 2^(emax+1), i.e. infinity. */
static uint16_t ref_round(const fmt16_t *f, double x)
{
    if (isnan(x))
        return 0x7fff; /* any NaN; callers compare NaN-ness only */
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double ax = fabs(x);
    if (isinf(ax))
        return sign | f->inf;
    unsigned lo = 0, hi = f->max_finite; /* largest code with value <= ax */
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (ref_value(f, (uint16_t)mid) <= ax)
            lo = mid;
        else
            hi = mid - 1;
    }
    double below = ref_value(f, (uint16_t)lo);
    double above = lo == f->max_finite
                       ? ldexp(1.0, (1 << (f->exp_bits - 1))) /* 2^(emax+1) */
                       : ref_value(f, (uint16_t)(lo + 1));
    double d_below = ax - below, d_above = above - ax;
    unsigned code;
    if (d_below < d_above)
        code = lo;
    else if (d_above < d_below)
        code = lo + 1;
    else
        code = (lo & 1) ? lo + 1 : lo;
    return (uint16_t)(sign | code);
}

static uint16_t lib_from_float(const fmt16_t *f, float x)
{
    return f == &FMT_HALF ? xc_float_to_half(x) : xc_float_to_bf16(x);
}

static float lib_to_float(const fmt16_t *f, uint16_t c)
{
    return f == &FMT_HALF ? xc_half_to_float(c) : xc_bf16_to_float(c);
}

/* One float -> 16-bit conversion against the reference. */
static void check_from_float(const fmt16_t *f, float x)
{
    uint16_t got = lib_from_float(f, x);
    if (isnan(x)) {
        check(ref_is_nan(f, got) && (got & 0x8000) == (f2u(x) >> 31 << 15),
              "%s: float NaN 0x%08x -> 0x%04x, not a NaN of the same sign", f->name, f2u(x),
              got);
        return;
    }
    uint16_t want = ref_round(f, (double)x);
    check(got == want, "%s: float %.9g (0x%08x) -> 0x%04x, want 0x%04x", f->name, (double)x,
          f2u(x), got, want);
}

/* All 65536 codes: decode matches the reference value and encoding it
 * again gives the code back (NaNs: stay NaN of the same sign, and quiet
 * NaNs keep their payload). */
static void test_fmt_exhaustive(const fmt16_t *f)
{
    uint16_t quiet_bit = (uint16_t)(1u << (f->mant_bits - 1));
    for (uint32_t c = 0; c < 65536; c++) {
        float v = lib_to_float(f, (uint16_t)c);
        uint16_t back = lib_from_float(f, v);
        if (ref_is_nan(f, (uint16_t)c)) {
            check(isnan(v) && !!signbit(v) == !!(c & 0x8000), "%s: 0x%04x -> %g, want NaN",
                  f->name, c, (double)v);
            check(ref_is_nan(f, back) && (back & 0x8000) == (c & 0x8000) &&
                      ((c & quiet_bit) == 0 || back == c),
                  "%s: NaN 0x%04x round trip gives 0x%04x", f->name, c, back);
            continue;
        }
        double want = ref_value(f, (uint16_t)c);
        check((double)v == want && !!signbit(v) == !!signbit(want),
              "%s: 0x%04x -> %.9g, want %.9g", f->name, c, (double)v, want);
        check(back == c, "%s: round trip 0x%04x -> %.9g -> 0x%04x", f->name, c, (double)v,
              back);
    }
}

/* Float -> 16-bit rounding around every representable value: the value
 * itself, its float neighbours, the exact midpoint to the next code (a tie)
 * and the midpoint's neighbours, with both signs. */
static void test_fmt_rounding(const fmt16_t *f)
{
    for (uint32_t c = 0; c <= f->max_finite; c++) {
        double v = ref_value(f, (uint16_t)c);
        double next = c == f->max_finite ? ldexp(1.0, 1 << (f->exp_bits - 1))
                                         : ref_value(f, (uint16_t)(c + 1));
        float mid = (float)((v + next) / 2); /* exact: needs one more bit than the format */
        float probes[6] = {(float)v,
                           nextafterf((float)v, 0.0f),
                           nextafterf((float)v, INFINITY),
                           mid,
                           nextafterf(mid, 0.0f),
                           nextafterf(mid, INFINITY)};
        check((double)mid == (v + next) / 2, "%s: midpoint above 0x%04x not exact in float",
              f->name, c);
        for (int i = 0; i < 6; i++) {
            check_from_float(f, probes[i]);
            check_from_float(f, -probes[i]);
        }
    }

    static const uint32_t specials[] = {
        0x00000000, 0x80000000, 0x7f800000, 0xff800000, /* zeros, infinities */
        0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, /* quiet, signalling NaNs */
        0x7fffffff, 0x7f801fff, 0x7fa00000, 0x7f802000, /* NaN payloads in low bits only */
        0x00000001, 0x80000001, 0x007fffff, 0x00800000, /* float subnormals, FLT_MIN */
        0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff, /* FLT_MAX, bf16 overflow edge */
        0x477fe000, 0x477fefff, 0x477ff000, 0x477fffff, /* 65504, just below/at 65520 */
        0x47800000, 0x33000000, 0x33000001, 0x32ffffff, /* 65536, 2^-25 tie and neighbours */
        0x387fe000, 0x387ff000, 0x387fffff, 0x38800000, /* largest subnormal half .. 2^-14 */
    };
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        check_from_float(f, u2f(specials[i]));

    /* Random floats: half of them from the exponent range where the format
     * has its normals, subnormals and overflow, the rest any bit pattern. */
    for (int i = 0; i < 1000000; i++) {
        uint32_t bits = (uint32_t)rnd64();
        if (i & 1) {
            uint32_t exp = f == &FMT_HALF ? 95 + (uint32_t)(rnd64() % 55) /* 2^-32 .. 2^22 */
                                          : (uint32_t)(rnd64() % 256);
            bits = (bits & 0x807fffffu) | (exp << 23);
        }
        check_from_float(f, u2f(bits));
    }
}

/* Spot checks with hand-computed answers, to catch a reference that is
 * wrong in the same way as the library. */
static void test_fmt_known(void)
{
    check(xc_float_to_half(1.0f) == 0x3c00, "half(1.0)");
    check(xc_float_to_half(-2.0f) == 0xc000, "half(-2.0)");
    check(xc_float_to_half(65504.0f) == 0x7bff, "half(65504)");
    check(xc_float_to_half(65519.0f) == 0x7bff, "half(65519) rounds down");
    check(xc_float_to_half(65520.0f) == 0x7c00, "half(65520) ties to inf");
    check(xc_float_to_half(1e9f) == 0x7c00, "half(1e9) overflows to inf");
    check(xc_float_to_half(-1e9f) == 0xfc00, "half(-1e9) overflows to -inf");
    check(xc_float_to_half(ldexpf(1.0f, -24)) == 0x0001, "half(2^-24) smallest subnormal");
    check(xc_float_to_half(ldexpf(1.0f, -25)) == 0x0000, "half(2^-25) ties to 0");
    check(xc_float_to_half(ldexpf(3.0f, -25)) == 0x0002, "half(3*2^-25) ties to even 2");
    check(xc_float_to_half(ldexpf(1.0f, -14)) == 0x0400, "half(2^-14) smallest normal");
    check(xc_float_to_half(1.0f + ldexpf(1.0f, -11)) == 0x3c00, "half(1+2^-11) ties to even");
    check(xc_float_to_half(1.0f + ldexpf(3.0f, -11)) == 0x3c02, "half(1+3*2^-11) ties to even");
    check(xc_float_to_half(-0.0f) == 0x8000, "half(-0)");
    check(xc_half_to_float(0x0001) == ldexpf(1.0f, -24), "float(half 0x0001)");
    check(xc_half_to_float(0x3555) == 0.333251953125f, "float(half 0x3555)");
    check(isinf(xc_half_to_float(0xfc00)) && xc_half_to_float(0xfc00) < 0, "float(half -inf)");
    check(xc_float_to_bf16(1.0f) == 0x3f80, "bf16(1.0)");
    check(xc_float_to_bf16(u2f(0x3f808000)) == 0x3f80, "bf16 tie to even (down)");
    check(xc_float_to_bf16(u2f(0x3f818000)) == 0x3f82, "bf16 tie to even (up)");
    check(xc_float_to_bf16(u2f(0x3f808001)) == 0x3f81, "bf16 above tie rounds up");
    check(xc_float_to_bf16(FLT_MAX) == 0x7f80, "bf16(FLT_MAX) rounds to inf");
    check(xc_float_to_bf16(u2f(0x7f800001)) != 0x7f80 && isnan(xc_bf16_to_float(
              xc_float_to_bf16(u2f(0x7f800001)))), "bf16(sNaN with low payload) stays NaN");
    check(xc_float_to_half(u2f(0x7f800001)) != 0x7c00 && isnan(xc_half_to_float(
              xc_float_to_half(u2f(0x7f800001)))), "half(sNaN with low payload) stays NaN");
    check(xc_bf16_to_float(0x0001) == ldexpf(1.0f, -133), "float(bf16 0x0001)");
}

/* --- reduce ----------------------------------------------------------------- */

static const xcoll_dtype_t ALL_DTYPES[] = {
    XCOLL_INT8, XCOLL_UINT8, XCOLL_INT32, XCOLL_UINT32, XCOLL_INT64,
    XCOLL_UINT64, XCOLL_FLOAT16, XCOLL_BFLOAT16, XCOLL_FLOAT32, XCOLL_FLOAT64,
};
#define N_DTYPES (sizeof ALL_DTYPES / sizeof ALL_DTYPES[0])
static const xcoll_op_t ALL_OPS[] = {
    XCOLL_SUM, XCOLL_PROD, XCOLL_MIN, XCOLL_MAX, XCOLL_AVG, XCOLL_BAND, XCOLL_BOR, XCOLL_BXOR,
};
#define N_OPS (sizeof ALL_OPS / sizeof ALL_OPS[0])

static int is_float(xcoll_dtype_t dt)
{
    return dt == XCOLL_FLOAT16 || dt == XCOLL_BFLOAT16 || dt == XCOLL_FLOAT32 ||
           dt == XCOLL_FLOAT64;
}

static int is_signed_int(xcoll_dtype_t dt)
{
    return dt == XCOLL_INT8 || dt == XCOLL_INT32 || dt == XCOLL_INT64;
}

static size_t esize(xcoll_dtype_t dt)
{
    /* Independent of xcoll_dtype_size, which is itself under test. */
    switch (dt) {
    case XCOLL_INT8: case XCOLL_UINT8: return sizeof(int8_t);
    case XCOLL_FLOAT16: case XCOLL_BFLOAT16: return sizeof(uint16_t);
    case XCOLL_INT32: case XCOLL_UINT32: return sizeof(int32_t);
    case XCOLL_FLOAT32: return sizeof(float);
    default: return sizeof(int64_t);
    }
}

/* Integer element, loaded sign- or zero-extended into 64 bits. */
static int64_t load_int(xcoll_dtype_t dt, const void *p)
{
    switch (dt) {
    case XCOLL_INT8: return *(const int8_t *)p;
    case XCOLL_UINT8: return *(const uint8_t *)p;
    case XCOLL_INT32: return *(const int32_t *)p;
    case XCOLL_UINT32: return *(const uint32_t *)p;
    case XCOLL_INT64: return *(const int64_t *)p;
    default: return (int64_t)*(const uint64_t *)p;
    }
}

static void store_int(xcoll_dtype_t dt, void *p, uint64_t v)
{
    switch (dt) {
    case XCOLL_INT8: case XCOLL_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case XCOLL_INT32: case XCOLL_UINT32: *(uint32_t *)p = (uint32_t)v; break;
    default: *(uint64_t *)p = v; break;
    }
}

static double load_float(xcoll_dtype_t dt, const void *p)
{
    switch (dt) {
    case XCOLL_FLOAT16: return ref_value(&FMT_HALF, *(const uint16_t *)p);
    case XCOLL_BFLOAT16: return ref_value(&FMT_BF16, *(const uint16_t *)p);
    case XCOLL_FLOAT32: return *(const float *)p;
    default: return *(const double *)p;
    }
}

/* Stores a value computed in double: float types get the float rounding of
 * it, 16-bit types then the reference rounding of that float (the library
 * computes in float and rounds back). */
static void store_float(xcoll_dtype_t dt, void *p, double v)
{
    switch (dt) {
    case XCOLL_FLOAT16: *(uint16_t *)p = ref_round(&FMT_HALF, (float)v); break;
    case XCOLL_BFLOAT16: *(uint16_t *)p = ref_round(&FMT_BF16, (float)v); break;
    case XCOLL_FLOAT32: *(float *)p = (float)v; break;
    default: *(double *)p = v; break;
    }
}

static void ref_elem(xcoll_dtype_t dt, xcoll_op_t op, const void *pa, const void *pb, void *out)
{
    if (!is_float(dt)) {
        int64_t sa = load_int(dt, pa), sb = load_int(dt, pb);
        uint64_t ua = (uint64_t)sa, ub = (uint64_t)sb, r = 0;
        int sgn = is_signed_int(dt);
        switch (op) {
        case XCOLL_SUM: case XCOLL_AVG: r = ua + ub; break;
        case XCOLL_PROD: r = ua * ub; break;
        case XCOLL_MIN: r = sgn ? (uint64_t)(sa < sb ? sa : sb) : (ua < ub ? ua : ub); break;
        case XCOLL_MAX: r = sgn ? (uint64_t)(sa > sb ? sa : sb) : (ua > ub ? ua : ub); break;
        case XCOLL_BAND: r = ua & ub; break;
        case XCOLL_BOR: r = ua | ub; break;
        case XCOLL_BXOR: r = ua ^ ub; break;
        default: break;
        }
        store_int(dt, out, r);
        return;
    }
    double x = load_float(dt, pa), y = load_float(dt, pb), r = 0;
    switch (op) {
    case XCOLL_SUM: case XCOLL_AVG: r = x + y; break;
    case XCOLL_PROD: r = x * y; break;
    case XCOLL_MIN:
    case XCOLL_MAX:
        /* Documented: NaN wins; -0 < +0. */
        if (isnan(x) || isnan(y))
            r = NAN;
        else if (x == 0 && y == 0)
            r = (op == XCOLL_MIN ? (signbit(x) || signbit(y)) : (signbit(x) && signbit(y)))
                    ? -0.0 : 0.0;
        else if (op == XCOLL_MIN)
            r = x < y ? x : y;
        else
            r = x > y ? x : y;
        break;
    default: break;
    }
    store_float(dt, out, r);
}

/* Element equality: bitwise, except that any NaN equals any NaN. */
static int elem_equal(xcoll_dtype_t dt, const void *p, const void *q)
{
    if (is_float(dt)) {
        double x = load_float(dt, p), y = load_float(dt, q);
        if (isnan(x) || isnan(y))
            return isnan(x) && isnan(y);
    }
    return memcmp(p, q, esize(dt)) == 0;
}

static void elem_str(xcoll_dtype_t dt, const void *p, char *s, size_t n)
{
    if (is_float(dt))
        snprintf(s, n, "%.17g", load_float(dt, p));
    else if (is_signed_int(dt))
        snprintf(s, n, "%lld", (long long)load_int(dt, p));
    else
        snprintf(s, n, "%llu", (unsigned long long)load_int(dt, p));
}

/* Test inputs: specials mixed with random values that keep float sums and
 * products interesting (not all overflow), and raw random bit patterns. */
static void fill(xcoll_dtype_t dt, void *buf, size_t count)
{
    unsigned char *p = buf;
    size_t sz = esize(dt);
    for (size_t i = 0; i < count; i++, p += sz) {
        uint64_t r = rnd64();
        int kind = (int)(rnd64() % 8);
        if (!is_float(dt)) {
            static const uint64_t special[] = {0, 1, ~0ull, 0x80ull, 0x7full, 0x80000000ull,
                                               0x7fffffffull, 0x8000000000000000ull};
            store_int(dt, p, kind == 0 ? special[r % 8] : kind == 1 ? r % 7 : r);
            continue;
        }
        double v;
        static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5};
        if (kind == 0)
            v = special[r % 8];
        else if (kind <= 4)
            v = ldexp((double)(int64_t)(r % 2001) - 1000, -(int)(rnd64() % 12)); /* moderate */
        else
            v = NAN; /* raw bits below */
        switch (dt) {
        case XCOLL_FLOAT16:
            *(uint16_t *)p = isnan(v) && kind > 4 ? (uint16_t)r : ref_round(&FMT_HALF, v);
            break;
        case XCOLL_BFLOAT16:
            *(uint16_t *)p = isnan(v) && kind > 4 ? (uint16_t)r : ref_round(&FMT_BF16, v);
            break;
        case XCOLL_FLOAT32:
            *(float *)p = isnan(v) && kind > 4 ? u2f((uint32_t)r) : (float)v;
            break;
        default:
            *(double *)p = isnan(v) && kind > 4 ? u2d(r) : v;
            break;
        }
    }
}

enum { ALIAS_NONE, ALIAS_DST_A, ALIAS_DST_B, ALIAS_ALL };
static const char *const alias_names[] = {"dst!=a,b", "dst==a", "dst==b", "dst==a==b"};

static void test_reduce_case(xcoll_dtype_t dt, xcoll_op_t op, size_t count, int alias,
                             size_t offset)
{
    size_t sz = esize(dt), bytes = (count + offset + 1) * sz;
    unsigned char *a = malloc(bytes), *b = malloc(bytes), *d = malloc(bytes);
    unsigned char *want = malloc(bytes), *a0 = malloc(bytes), *b0 = malloc(bytes);
    if (!a || !b || !d || !want || !a0 || !b0) {
        check(0, "out of memory");
        goto out;
    }
    fill(dt, a, count + offset + 1);
    fill(dt, b, count + offset + 1);
    if (alias == ALIAS_ALL)
        memcpy(b, a, bytes);
    memcpy(a0, a, bytes);
    memcpy(b0, b, bytes);
    unsigned char *pa = a + offset * sz, *pb = b + offset * sz, *pd = d + offset * sz;
    for (size_t i = 0; i < count; i++)
        ref_elem(dt, op, pa + i * sz, pb + i * sz, want + i * sz);

    const void *src_a = pa, *src_b = pb;
    void *dst = pd;
    if (alias == ALIAS_DST_A || alias == ALIAS_ALL)
        dst = pa;
    if (alias == ALIAS_DST_B)
        dst = pb;
    if (alias == ALIAS_ALL)
        src_b = pa;
    xc_reduce(dst, src_a, src_b, count, dt, op);

    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < count; i++)
        if (!elem_equal(dt, (unsigned char *)dst + i * sz, want + i * sz) && bad++ == 0)
            first_bad = i;
    if (bad) {
        char sa[64], sb[64], sg[64], sw[64];
        elem_str(dt, a0 + (offset + first_bad) * sz, sa, sizeof sa);
        elem_str(dt, b0 + (offset + first_bad) * sz, sb, sizeof sb);
        elem_str(dt, (unsigned char *)dst + first_bad * sz, sg, sizeof sg);
        elem_str(dt, want + first_bad * sz, sw, sizeof sw);
        check(0, "reduce %s %s count %zu %s offset %zu: %zu wrong, first [%zu] %s op %s = %s, "
                 "want %s", xcoll_dtype_name(dt), xcoll_op_name(op), count, alias_names[alias],
              offset, bad, first_bad, sa, sb, sg, sw);
    } else {
        check(1, "ok");
    }
    /* Nothing outside dst[0, count) changed, and inputs not aliased by dst
     * are untouched. */
    if (alias == ALIAS_NONE) {
        check(memcmp(a, a0, bytes) == 0 && memcmp(b, b0, bytes) == 0,
              "reduce %s %s count %zu: an input changed", xcoll_dtype_name(dt),
              xcoll_op_name(op), count);
    } else if (alias == ALIAS_DST_A) {
        check(memcmp(b, b0, bytes) == 0 && memcmp(a, a0, offset * sz) == 0 &&
                  memcmp(pa + count * sz, a0 + (offset + count) * sz, sz) == 0,
              "reduce %s %s count %zu dst==a: wrote outside dst or into b",
              xcoll_dtype_name(dt), xcoll_op_name(op), count);
    } else if (alias == ALIAS_DST_B) {
        check(memcmp(a, a0, bytes) == 0 && memcmp(b, b0, offset * sz) == 0 &&
                  memcmp(pb + count * sz, b0 + (offset + count) * sz, sz) == 0,
              "reduce %s %s count %zu dst==b: wrote outside dst or into a",
              xcoll_dtype_name(dt), xcoll_op_name(op), count);
    }
out:
    free(a); free(b); free(d); free(want); free(a0); free(b0);
}

static void test_reduce(void)
{
    static const size_t counts[] = {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 64, 100, 1027, 4099};
    for (size_t t = 0; t < N_DTYPES; t++)
        for (size_t o = 0; o < N_OPS; o++) {
            if (!xc_op_allowed(ALL_DTYPES[t], ALL_OPS[o]))
                continue;
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (int alias = 0; alias < 4; alias++)
                    test_reduce_case(ALL_DTYPES[t], ALL_OPS[o], counts[c], alias,
                                     (c + (size_t)alias) % 3);
        }
}

/* Buffers at any address (xcoll.h asks no alignment): reduce and divide
 * from and into buffers one and three bytes past an aligned one must give
 * the aligned buffers' bits. Run under UBSan (make check's second pass),
 * a load through a misaligned typed pointer fails here. */
static void test_unaligned(void)
{
    static const size_t counts[] = {1, 7, 17, 1027};
    enum { MAXC = 1027, PAD = 8 };
    static _Alignas(64) unsigned char a[MAXC * 8], b[MAXC * 8], want[MAXC * 8];
    static _Alignas(64) unsigned char ua[MAXC * 8 + PAD], ub[MAXC * 8 + PAD], ud[MAXC * 8 + PAD];
    static _Alignas(64) unsigned char got[MAXC * 8];
    for (size_t t = 0; t < N_DTYPES; t++) {
        const xcoll_dtype_t dt = ALL_DTYPES[t];
        const size_t sz = esize(dt);
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            const size_t n = counts[c], bytes = n * sz;
            const size_t skew = c % 2 ? 3 : 1;
            fill(dt, a, n);
            fill(dt, b, n);
            for (size_t o = 0; o < N_OPS; o++) {
                if (!xc_op_allowed(dt, ALL_OPS[o]))
                    continue;
                xc_reduce(want, a, b, n, dt, ALL_OPS[o]);
                memcpy(ua + skew, a, bytes);
                memcpy(ub + skew, b, bytes);
                xc_reduce(ud + skew, ua + skew, ub + skew, n, dt, ALL_OPS[o]);
                memcpy(got, ud + skew, bytes);
                size_t bad = 0;
                for (size_t i = 0; i < n; i++)
                    bad += !elem_equal(dt, got + i * sz, want + i * sz);
                check(bad == 0, "reduce %s %s count %zu at +%zu bytes: %zu differ from aligned",
                      xcoll_dtype_name(dt), xcoll_op_name(ALL_OPS[o]), n, skew, bad);
            }
            memcpy(want, a, bytes);
            xc_divide(want, n, dt, 3);
            memcpy(ud + skew, a, bytes);
            xc_divide(ud + skew, n, dt, 3);
            memcpy(got, ud + skew, bytes);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += !elem_equal(dt, got + i * sz, want + i * sz);
            check(bad == 0, "divide %s count %zu at +%zu bytes: %zu differ from aligned",
                  xcoll_dtype_name(dt), n, skew, bad);
        }
    }
}

/* Edge values each op must get right, with exact expected answers. */
static void test_reduce_known(void)
{
    int8_t i8a[] = {127, -128, -128, 100}, i8b[] = {1, -1, -128, 3}, i8d[4];
    xc_reduce(i8d, i8a, i8b, 4, XCOLL_INT8, XCOLL_SUM);
    check(i8d[0] == -128 && i8d[1] == 127 && i8d[2] == 0 && i8d[3] == 103, "int8 sum wraps");
    xc_reduce(i8d, i8a, i8b, 4, XCOLL_INT8, XCOLL_PROD);
    check(i8d[0] == 127 && i8d[1] == -128 && i8d[2] == 0 && i8d[3] == 44, "int8 prod wraps");

    int32_t i32a[] = {INT32_MAX, INT32_MIN, 65536}, i32b[] = {1, -1, 65536}, i32d[3];
    xc_reduce(i32d, i32a, i32b, 3, XCOLL_INT32, XCOLL_SUM);
    check(i32d[0] == INT32_MIN && i32d[1] == INT32_MAX, "int32 sum wraps");
    xc_reduce(i32d, i32a, i32b, 3, XCOLL_INT32, XCOLL_PROD);
    check(i32d[0] == INT32_MAX && i32d[1] == INT32_MIN && i32d[2] == 0, "int32 prod wraps");

    int64_t i64a[] = {INT64_MAX, INT64_MIN, -5}, i64b[] = {1, -1, 3}, i64d[3];
    xc_reduce(i64d, i64a, i64b, 3, XCOLL_INT64, XCOLL_SUM);
    check(i64d[0] == INT64_MIN && i64d[1] == INT64_MAX && i64d[2] == -2, "int64 sum wraps");
    xc_reduce(i64d, i64a, i64b, 3, XCOLL_INT64, XCOLL_PROD);
    check(i64d[0] == INT64_MAX && i64d[1] == INT64_MIN && i64d[2] == -15, "int64 prod wraps");
    xc_reduce(i64d, i64a, i64b, 3, XCOLL_INT64, XCOLL_MIN);
    check(i64d[0] == 1 && i64d[1] == INT64_MIN && i64d[2] == -5, "int64 min");

    uint8_t u8a[] = {255, 16}, u8b[] = {255, 16}, u8d[2];
    xc_reduce(u8d, u8a, u8b, 2, XCOLL_UINT8, XCOLL_PROD);
    check(u8d[0] == 1 && u8d[1] == 0, "uint8 prod wraps");
    uint64_t u64a[] = {UINT64_MAX, 1ull << 63}, u64b[] = {2, 1}, u64d[2];
    xc_reduce(u64d, u64a, u64b, 2, XCOLL_UINT64, XCOLL_SUM);
    check(u64d[0] == 1 && u64d[1] == (1ull << 63) + 1, "uint64 sum wraps");
    xc_reduce(u64d, u64a, u64b, 2, XCOLL_UINT64, XCOLL_MAX);
    check(u64d[0] == UINT64_MAX && u64d[1] == 1ull << 63, "uint64 max is unsigned");

    float fa[] = {-0.0f, 0.0f, NAN, 1.0f, 2.0f, -INFINITY};
    float fb[] = {0.0f, -0.0f, 1.0f, NAN, 2.0f, 3.0f};
    float fd[6];
    xc_reduce(fd, fa, fb, 6, XCOLL_FLOAT32, XCOLL_MIN);
    check(fd[0] == 0 && signbit(fd[0]) && fd[1] == 0 && signbit(fd[1]) && isnan(fd[2]) &&
              isnan(fd[3]) && fd[4] == 2.0f && fd[5] == -INFINITY,
          "float32 min: -0 < +0 either order, NaN either side wins");
    xc_reduce(fd, fa, fb, 6, XCOLL_FLOAT32, XCOLL_MAX);
    check(fd[0] == 0 && !signbit(fd[0]) && fd[1] == 0 && !signbit(fd[1]) && isnan(fd[2]) &&
              isnan(fd[3]) && fd[4] == 2.0f && fd[5] == 3.0f,
          "float32 max: +0 > -0 either order, NaN either side wins");
    double da[] = {-0.0, NAN, 1.0}, db[] = {0.0, 5.0, NAN}, dd[3];
    xc_reduce(dd, da, db, 3, XCOLL_FLOAT64, XCOLL_MIN);
    check(signbit(dd[0]) && isnan(dd[1]) && isnan(dd[2]), "float64 min zeros and NaN");
    xc_reduce(dd, db, da, 3, XCOLL_FLOAT64, XCOLL_MAX);
    check(!signbit(dd[0]) && isnan(dd[1]) && isnan(dd[2]), "float64 max zeros and NaN");

    /* float16: 2048 + 1 is a tie between 2048 and 2050 -> even 2048;
     * 2048 + 3 = 2051 ties to 2052; 65504 + 16 = 65520 -> inf. */
    uint16_t ha[] = {0x6800, 0x6800, 0x7bff, 0x3c00}, hb[] = {0x3c00, 0x4200, 0x4c00, 0xbc00};
    uint16_t hd[4];
    xc_reduce(hd, ha, hb, 4, XCOLL_FLOAT16, XCOLL_SUM);
    check(hd[0] == 0x6800 && hd[1] == 0x6802 && hd[2] == 0x7c00 && hd[3] == 0x0000,
          "float16 sum rounding: got %04x %04x %04x %04x", hd[0], hd[1], hd[2], hd[3]);
    /* bfloat16: 256 + 1 ties to 256; 256 + 3 ties to 260 */
    uint16_t ba[] = {0x4380, 0x4380}, bb[] = {0x3f80, 0x4040}, bd[2];
    xc_reduce(bd, ba, bb, 2, XCOLL_BFLOAT16, XCOLL_SUM);
    check(bd[0] == 0x4380 && bd[1] == 0x4382, "bfloat16 sum rounding: got %04x %04x", bd[0],
          bd[1]);
}

/* Invalid dtype/op pairs must leave dst alone and not crash. */
static void test_reduce_invalid(void)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, d[4] = {9, 9, 9, 9};
    const float untouched[4] = {9, 9, 9, 9};
    xc_reduce(d, a, b, 4, XCOLL_FLOAT32, XCOLL_BAND);
    xc_reduce(d, a, b, 4, XCOLL_FLOAT32, XCOLL_BXOR);
    xc_reduce(d, a, b, 4, XCOLL_FLOAT32, (xcoll_op_t)XCOLL_OP_COUNT);
    xc_reduce(d, a, b, 4, XCOLL_FLOAT32, (xcoll_op_t)-1);
    xc_reduce(d, a, b, 4, (xcoll_dtype_t)XCOLL_DTYPE_COUNT, XCOLL_SUM);
    xc_reduce(d, a, b, 4, (xcoll_dtype_t)-1, XCOLL_SUM);
    xc_reduce(d, a, b, 4, (xcoll_dtype_t)1000, (xcoll_op_t)1000);
    check(memcmp(d, untouched, sizeof d) == 0, "invalid dtype/op modified dst");
    xc_reduce(NULL, NULL, NULL, 0, XCOLL_FLOAT64, XCOLL_SUM);
    check(1, "ok");
}

/* --- divide ------------------------------------------------------------------- */

static void test_divide(void)
{
    static const uint32_t divisors[] = {1, 2, 3, 7, 64, 255, 256, 1000, 65537, 1u << 20,
                                        (1u << 24) - 1, 1u << 24};
    for (size_t t = 0; t < N_DTYPES; t++) {
        xcoll_dtype_t dt = ALL_DTYPES[t];
        size_t sz = esize(dt), count = 301;
        for (size_t k = 0; k < sizeof divisors / sizeof divisors[0]; k++) {
            uint32_t n = divisors[k];
            unsigned char buf[301 * 8], orig[301 * 8], want[8];
            fill(dt, orig, count);
            memcpy(buf, orig, count * sz);
            xc_divide(buf, count, dt, n);
            size_t bad = 0;
            for (size_t i = 0; i < count; i++) {
                const void *x = orig + i * sz;
                if (is_float(dt)) {
                    /* Exact quotient rounded once to the element type (n is
                     * exact in float here, so the library's float division
                     * must agree). */
                    double v = load_float(dt, x);
                    if (dt == XCOLL_FLOAT16)
                        *(uint16_t *)want = ref_round(&FMT_HALF, (float)(v / n));
                    else if (dt == XCOLL_BFLOAT16)
                        *(uint16_t *)want = ref_round(&FMT_BF16, (float)(v / n));
                    else
                        store_float(dt, want, v / n);
                } else if (is_signed_int(dt)) {
                    /* Truncation toward zero via magnitudes. */
                    int64_t v = load_int(dt, x);
                    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
                    uint64_t q = mag / n;
                    store_int(dt, want, v < 0 ? 0 - q : q);
                } else {
                    store_int(dt, want, (uint64_t)load_int(dt, x) / n);
                }
                if (!elem_equal(dt, buf + i * sz, want) && bad++ == 0) {
                    char so[64], sg[64], sw[64];
                    elem_str(dt, x, so, sizeof so);
                    elem_str(dt, buf + i * sz, sg, sizeof sg);
                    elem_str(dt, want, sw, sizeof sw);
                    check(0, "divide %s by %u: [%zu] %s -> %s, want %s", xcoll_dtype_name(dt),
                          n, i, so, sg, sw);
                }
            }
            if (bad == 0)
                check(1, "ok");
        }
        /* n == 0 is ignored, not a trap. */
        unsigned char buf[16 * 8], orig[16 * 8];
        fill(dt, orig, 16);
        memcpy(buf, orig, 16 * sz);
        xc_divide(buf, 16, dt, 0);
        check(memcmp(buf, orig, 16 * sz) == 0, "divide %s by 0 changed data",
              xcoll_dtype_name(dt));
    }

    int32_t iv[] = {-7, 7, -1, INT32_MIN, INT32_MAX};
    xc_divide(iv, 5, XCOLL_INT32, 2);
    check(iv[0] == -3 && iv[1] == 3 && iv[2] == 0 && iv[3] == INT32_MIN / 2 &&
              iv[4] == INT32_MAX / 2, "int32 divide truncates toward zero");
    int64_t lv[] = {INT64_MIN, -9};
    xc_divide(lv, 2, XCOLL_INT64, UINT32_MAX);
    check(lv[0] == INT64_MIN / (int64_t)UINT32_MAX && lv[1] == 0, "int64 divide by 2^32-1");
    int8_t cv[] = {-128, 127, -5};
    xc_divide(cv, 3, XCOLL_INT8, 3);
    check(cv[0] == -42 && cv[1] == 42 && cv[2] == -1, "int8 divide");
    uint64_t uv[] = {UINT64_MAX};
    xc_divide(uv, 1, XCOLL_UINT64, 3);
    check(uv[0] == UINT64_MAX / 3, "uint64 divide");
    uint16_t hv[] = {0x4200 /* 3 */, 0x0001 /* 2^-24 */, 0x0003};
    xc_divide(hv, 3, XCOLL_FLOAT16, 2);
    check(hv[0] == 0x3e00 && hv[1] == 0x0000 && hv[2] == 0x0002,
          "float16 divide rounds to even: %04x %04x %04x", hv[0], hv[1], hv[2]);
    float fv[] = {1.0f};
    xc_divide(fv, 1, XCOLL_FLOAT32, UINT32_MAX);
    check(fabs(fv[0] * 4294967295.0 - 1.0) < 1e-6, "float32 divide by 2^32-1 is close");
}

/* --- names, sizes, validity ---------------------------------------------------- */

static void test_names(void)
{
    static const struct { xcoll_dtype_t dt; size_t size; const char *name; } dts[] = {
        {XCOLL_INT8, 1, "int8"},        {XCOLL_UINT8, 1, "uint8"},
        {XCOLL_INT32, 4, "int32"},      {XCOLL_UINT32, 4, "uint32"},
        {XCOLL_INT64, 8, "int64"},      {XCOLL_UINT64, 8, "uint64"},
        {XCOLL_FLOAT16, 2, "float16"},  {XCOLL_BFLOAT16, 2, "bfloat16"},
        {XCOLL_FLOAT32, 4, "float32"},  {XCOLL_FLOAT64, 8, "float64"},
    };
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        check(xcoll_dtype_size(dts[i].dt) == dts[i].size, "size of %s", dts[i].name);
        check(strcmp(xcoll_dtype_name(dts[i].dt), dts[i].name) == 0, "name of dtype %d",
              (int)dts[i].dt);
        check(xc_dtype_valid(dts[i].dt), "%s valid", dts[i].name);
    }
    static const xcoll_dtype_t bad_dt[] = {(xcoll_dtype_t)XCOLL_DTYPE_COUNT,
                                           (xcoll_dtype_t)-1, (xcoll_dtype_t)12345};
    for (size_t i = 0; i < 3; i++) {
        check(xcoll_dtype_size(bad_dt[i]) == 0, "size of invalid dtype %d", (int)bad_dt[i]);
        check(strcmp(xcoll_dtype_name(bad_dt[i]), "invalid") == 0, "name of invalid dtype");
        check(!xc_dtype_valid(bad_dt[i]), "dtype %d invalid", (int)bad_dt[i]);
    }

    static const char *const op_names[] = {"sum", "prod", "min", "max",
                                           "avg", "band", "bor", "bxor"};
    for (size_t i = 0; i < N_OPS; i++) {
        check(strcmp(xcoll_op_name(ALL_OPS[i]), op_names[ALL_OPS[i]]) == 0, "name of op %d",
              (int)ALL_OPS[i]);
        check(xc_op_valid(ALL_OPS[i]), "op %d valid", (int)ALL_OPS[i]);
    }
    check(strcmp(xcoll_op_name((xcoll_op_t)XCOLL_OP_COUNT), "invalid") == 0 &&
              strcmp(xcoll_op_name((xcoll_op_t)-1), "invalid") == 0,
          "name of invalid op");
    check(!xc_op_valid((xcoll_op_t)XCOLL_OP_COUNT) && !xc_op_valid((xcoll_op_t)-1),
          "invalid op rejected");

    for (size_t t = 0; t < N_DTYPES; t++)
        for (size_t o = 0; o < N_OPS; o++) {
            xcoll_op_t op = ALL_OPS[o];
            int bitwise = op == XCOLL_BAND || op == XCOLL_BOR || op == XCOLL_BXOR;
            int want = !(bitwise && is_float(ALL_DTYPES[t]));
            check(xc_op_allowed(ALL_DTYPES[t], op) == want, "op_allowed(%s, %s) != %d",
                  xcoll_dtype_name(ALL_DTYPES[t]), xcoll_op_name(op), want);
        }
    check(!xc_op_allowed((xcoll_dtype_t)XCOLL_DTYPE_COUNT, XCOLL_SUM) &&
              !xc_op_allowed(XCOLL_INT32, (xcoll_op_t)XCOLL_OP_COUNT),
          "op_allowed rejects invalid dtype/op");
}

int main(void)
{
#ifdef XC_TEST_ISA
    /* this build's reduction loops need the instruction set (Makefile.am) */
    if (!__builtin_cpu_supports(XC_TEST_ISA)) {
        printf("SKIP: this CPU lacks %s\n", XC_TEST_ISA);
        return 77;
    }
#endif
    test_names();
    test_fmt_known();
    test_fmt_exhaustive(&FMT_HALF);
    test_fmt_exhaustive(&FMT_BF16);
    test_fmt_rounding(&FMT_HALF);
    test_fmt_rounding(&FMT_BF16);
    test_reduce_known();
    test_reduce();
    test_unaligned();
    test_reduce_invalid();
    test_divide();
    printf("test_dtype: %lu passed, %lu failed\n", n_pass, n_fail);
    return n_fail == 0 ? 0 : 1;
}
