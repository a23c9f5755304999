/* Helpers shared by the MPI-launched tests. They use only the public API
 * (xcoll.h) and MPI, so a test failure points at the library, not at a
 * private header the test happened to share with it.
 *
 * Every test counts checks per rank (tc.passed / tc.failed); tc_finish()
 * sums them over ranks, prints "<name>: N passed, M failed" on rank 0 and
 * returns the exit status every rank should return. */
#ifndef XCOLL_TEST_MPI_COMMON_H
#define XCOLL_TEST_MPI_COMMON_H

#include <mpi.h>
#include "xcoll.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *name;   /* the test program's name, for messages */
    int rank, size;     /* in MPI_COMM_WORLD */
    long passed, failed;
    int max_reports;    /* mismatch lines printed per failed check */
} tc_state_t;

static tc_state_t tc;

/* MPI errors are not what is under test: stop the whole job loudly. */
#define TC_MPI(call)                                                           \
    do {                                                                       \
        int tc_rc_ = (call);                                                   \
        if (tc_rc_ != MPI_SUCCESS) {                                           \
            fprintf(stderr, "%s r%d: %s:%d: %s failed (%d)\n", tc.name,       \
                    tc.rank, __FILE__, __LINE__, #call, tc_rc_);               \
            MPI_Abort(MPI_COMM_WORLD, 2);                                      \
        }                                                                      \
    } while (0)

static inline void tc_pass(void) { tc.passed++; }

static inline void tc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tc_fail(const char *fmt, ...)
{
    /* One write per line, so lines from several ranks do not interleave. */
    char line[512];
    va_list ap;
    tc.failed++;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s r%d: FAIL: %s\n", tc.name, tc.rank, line);
}

/* Checks that a call returned the status it should have; "what" names the
 * call in the failure message. Returns 1 when it did. */
#define TC_EXPECT(expected, call) tc_expect_((expected), (call), #call, __LINE__)
static inline int tc_expect_(xcoll_status_t expected, xcoll_status_t got, const char *what,
                             int line)
{
    if (got == expected) {
        tc_pass();
        return 1;
    }
    tc_fail("line %d: %s returned %d (%s), expected %d (%s)", line, what, (int)got,
            xcoll_strerror(got), (int)expected, xcoll_strerror(expected));
    return 0;
}

static inline void tc_init(int *argc, char ***argv, const char *name)
{
    TC_MPI(MPI_Init(argc, argv));
    tc.name = name;
    tc.max_reports = 4;
    TC_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &tc.rank));
    TC_MPI(MPI_Comm_size(MPI_COMM_WORLD, &tc.size));
    /* Failure lines from several ranks interleave less when unbuffered. */
    setvbuf(stderr, NULL, _IONBF, 0);
}

/* Sums the counts over ranks, reports, finalises MPI. Returns 0 only if no
 * rank failed anything. */
static inline int tc_finish(void)
{
    long local[2] = { tc.passed, tc.failed }, total[2] = { 0, 0 };
    TC_MPI(MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (tc.rank == 0) {
        printf("%s: %ld passed, %ld failed (%d ranks)\n", tc.name, total[0], total[1],
               tc.size);
        fflush(stdout);
    }
    MPI_Finalize();
    return total[1] == 0 ? 0 : 1;
}

/* A communicator over mpi_comm. timeout_s > 0 turns a library hang into a
 * failed test instead of a stuck job; XCOLL_TIMEOUT, if set, wins. */
static inline xcoll_comm_t tc_comm_create(MPI_Comm mpi_comm, double timeout_s)
{
    xcoll_config_t cfg;
    xcoll_comm_t comm = NULL;
    xcoll_status_t st = xcoll_config_init(&cfg);
    if (st != XCOLL_OK) {
        fprintf(stderr, "%s r%d: xcoll_config_init: %s\n", tc.name, tc.rank, xcoll_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (getenv("XCOLL_TIMEOUT") == NULL)
        cfg.timeout_s = timeout_s;
    st = xcoll_comm_create_mpi(mpi_comm, &cfg, &comm);
    if (st != XCOLL_OK || comm == NULL) {
        fprintf(stderr, "%s r%d: xcoll_comm_create_mpi: %s\n", tc.name, tc.rank,
                xcoll_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return comm;
}

static inline double tc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --- Datatypes ---------------------------------------------------------- */

static const xcoll_dtype_t tc_all_dtypes[] = {
    XCOLL_INT8,    XCOLL_UINT8,    XCOLL_INT32,   XCOLL_UINT32,  XCOLL_INT64,
    XCOLL_UINT64,  XCOLL_FLOAT16,  XCOLL_BFLOAT16, XCOLL_FLOAT32, XCOLL_FLOAT64,
};
#define TC_NUM_DTYPES (sizeof tc_all_dtypes / sizeof tc_all_dtypes[0])

static const xcoll_op_t tc_all_ops[] = {
    XCOLL_SUM, XCOLL_PROD, XCOLL_MIN, XCOLL_MAX, XCOLL_AVG, XCOLL_BAND, XCOLL_BOR, XCOLL_BXOR,
};
#define TC_NUM_OPS (sizeof tc_all_ops / sizeof tc_all_ops[0])

static inline int tc_dtype_is_float(xcoll_dtype_t d)
{
    return d == XCOLL_FLOAT16 || d == XCOLL_BFLOAT16 || d == XCOLL_FLOAT32 ||
           d == XCOLL_FLOAT64;
}

static inline int tc_dtype_is_signed(xcoll_dtype_t d)
{
    return d == XCOLL_INT8 || d == XCOLL_INT32 || d == XCOLL_INT64 || tc_dtype_is_float(d);
}

static inline int tc_op_is_bitwise(xcoll_op_t op)
{
    return op == XCOLL_BAND || op == XCOLL_BOR || op == XCOLL_BXOR;
}

static inline int tc_op_valid_for(xcoll_dtype_t d, xcoll_op_t op)
{
    return !(tc_op_is_bitwise(op) && tc_dtype_is_float(d));
}

/* Sizes written out here rather than taken from xcoll_dtype_size(), so a
 * wrong size in the library shows up as a failure. */
static inline size_t tc_dtype_size(xcoll_dtype_t d)
{
    switch (d) {
    case XCOLL_INT8: case XCOLL_UINT8: return 1;
    case XCOLL_FLOAT16: case XCOLL_BFLOAT16: return 2;
    case XCOLL_INT32: case XCOLL_UINT32: case XCOLL_FLOAT32: return 4;
    case XCOLL_INT64: case XCOLL_UINT64: case XCOLL_FLOAT64: return 8;
    default: return 0;
    }
}

/* MPI's twin of a dtype, or MPI_DATATYPE_NULL where MPI has none. */
static inline MPI_Datatype tc_mpi_dtype(xcoll_dtype_t d)
{
    switch (d) {
    case XCOLL_INT8: return MPI_INT8_T;
    case XCOLL_UINT8: return MPI_UINT8_T;
    case XCOLL_INT32: return MPI_INT32_T;
    case XCOLL_UINT32: return MPI_UINT32_T;
    case XCOLL_INT64: return MPI_INT64_T;
    case XCOLL_UINT64: return MPI_UINT64_T;
    case XCOLL_FLOAT32: return MPI_FLOAT;
    case XCOLL_FLOAT64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

static inline MPI_Op tc_mpi_op(xcoll_op_t op)
{
    switch (op) {
    case XCOLL_SUM: return MPI_SUM;
    case XCOLL_PROD: return MPI_PROD;
    case XCOLL_MIN: return MPI_MIN;
    case XCOLL_MAX: return MPI_MAX;
    case XCOLL_BAND: return MPI_BAND;
    case XCOLL_BOR: return MPI_BOR;
    case XCOLL_BXOR: return MPI_BXOR;
    default: return MPI_OP_NULL;
    }
}

/* binary16 and bfloat16, round to nearest-even. Written here independently
 * of the library's conversions so the two check each other. */
static inline uint16_t tc_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)h;
}

static inline float tc_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    int exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ffu;
    float f;
    if (exp == 0x1f) {
        uint32_t x = sign | 0x7f800000u | (man << 13);
        memcpy(&f, &x, 4);
        return f;
    }
    if (exp == 0)
        f = ldexpf((float)man, -24);
    else
        f = ldexpf((float)(man | 0x400u), exp - 25);
    return sign ? -f : f;
}

static inline uint16_t tc_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline float tc_bf16_to_float(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* Element idx of buf (of dtype d) set to the integer v. The tests use only
 * small integers, exact in every type. */
static inline void tc_store(xcoll_dtype_t d, void *buf, size_t idx, int64_t v)
{
    switch (d) {
    case XCOLL_INT8: ((int8_t *)buf)[idx] = (int8_t)v; break;
    case XCOLL_UINT8: ((uint8_t *)buf)[idx] = (uint8_t)v; break;
    case XCOLL_INT32: ((int32_t *)buf)[idx] = (int32_t)v; break;
    case XCOLL_UINT32: ((uint32_t *)buf)[idx] = (uint32_t)v; break;
    case XCOLL_INT64: ((int64_t *)buf)[idx] = v; break;
    case XCOLL_UINT64: ((uint64_t *)buf)[idx] = (uint64_t)v; break;
    case XCOLL_FLOAT16: ((uint16_t *)buf)[idx] = tc_float_to_half((float)v); break;
    case XCOLL_BFLOAT16: ((uint16_t *)buf)[idx] = tc_float_to_bf16((float)v); break;
    case XCOLL_FLOAT32: ((float *)buf)[idx] = (float)v; break;
    case XCOLL_FLOAT64: ((double *)buf)[idx] = (double)v; break;
    default: break;
    }
}

static inline double tc_load(xcoll_dtype_t d, const void *buf, size_t idx)
{
    switch (d) {
    case XCOLL_INT8: return ((const int8_t *)buf)[idx];
    case XCOLL_UINT8: return ((const uint8_t *)buf)[idx];
    case XCOLL_INT32: return ((const int32_t *)buf)[idx];
    case XCOLL_UINT32: return ((const uint32_t *)buf)[idx];
    case XCOLL_INT64: return (double)((const int64_t *)buf)[idx];
    case XCOLL_UINT64: return (double)((const uint64_t *)buf)[idx];
    case XCOLL_FLOAT16: return tc_half_to_float(((const uint16_t *)buf)[idx]);
    case XCOLL_BFLOAT16: return tc_bf16_to_float(((const uint16_t *)buf)[idx]);
    case XCOLL_FLOAT32: return ((const float *)buf)[idx];
    case XCOLL_FLOAT64: return ((const double *)buf)[idx];
    default: return NAN;
    }
}

/* --- Guarded buffers -------------------------------------------------------
 * Every buffer handed to the library sits between two canary zones; a
 * write past either end (an off-by-one block offset, a wrong element size)
 * shows up as a damaged canary. */
#define TC_GUARD 64
#define TC_CANARY 0xa5

typedef struct {
    unsigned char *base;
    size_t bytes;
    void *p;   /* the usable bytes */
} tc_buf_t;

static inline tc_buf_t tc_buf_alloc(size_t bytes)
{
    tc_buf_t b;
    b.bytes = bytes;
    b.base = malloc(bytes + 2 * TC_GUARD);
    if (b.base == NULL) {
        fprintf(stderr, "%s r%d: out of memory (%zu bytes)\n", tc.name, tc.rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(b.base, TC_CANARY, TC_GUARD);
    memset(b.base + TC_GUARD + bytes, TC_CANARY, TC_GUARD);
    b.p = b.base + TC_GUARD;
    return b;
}

static inline void tc_buf_free(tc_buf_t *b)
{
    free(b->base);
    b->base = NULL;
    b->p = NULL;
}

/* 1 if both canaries are intact. */
static inline int tc_buf_guard_ok(const tc_buf_t *b)
{
    for (size_t i = 0; i < TC_GUARD; i++)
        if (b->base[i] != TC_CANARY || b->base[TC_GUARD + b->bytes + i] != TC_CANARY)
            return 0;
    return 1;
}

/* A byte that depends on who wrote it, where, and for which case; used to
 * check collectives that only move data. Never equal to the canary. */
static inline unsigned char tc_pattern_byte(int src_rank, size_t byte_index, unsigned salt)
{
    uint32_t x = (uint32_t)src_rank * 0x9e3779b1u ^ (uint32_t)byte_index * 0x85ebca6bu ^
                 (uint32_t)(byte_index >> 32) ^ salt * 0xc2b2ae35u;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 13;
    unsigned char c = (unsigned char)x;
    return c == TC_CANARY ? 0x5a : c;
}

#endif
