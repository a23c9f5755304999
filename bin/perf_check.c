/* perf_check.c - xcoll-perf's check: inputs whose every result is exact
 * (small integers, in every type and any order of reduction), poison and
 * guard bytes around the result, and the count of what came out wrong. */
#include <stdint.h>
#include <string.h>

#include "perf.h"

/* Exact for the small integers the tools use: float16 keeps 11 significant bits. */
static uint16_t float16_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof(b));
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000);
    if ((b & 0x7fffffff) == 0)
        return sign;
    int e = (int)((b >> 23) & 0xff) - 127 + 15;
    if (e >= 31)
        return sign | 0x7c00; /* never reached by our inputs; infinity */
    if (e <= 0)
        return sign;
    return (uint16_t)(sign | (uint16_t)(e << 10) | (uint16_t)((b >> 13) & 0x3ff));
}

static uint16_t bfloat16_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof(b));
    b += 0x7fff + ((b >> 16) & 1); /* round to nearest even, as xcoll does */
    return (uint16_t)(b >> 16);
}

/* Element i of buf (type d) = the small integer v, exact in every type. */
static void store(xcoll_dtype_t d, void *buf, size_t i, int64_t v)
{
    switch (d) {
    case XCOLL_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case XCOLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case XCOLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case XCOLL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case XCOLL_INT64: ((int64_t *)buf)[i] = v; break;
    case XCOLL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case XCOLL_FLOAT16: ((uint16_t *)buf)[i] = float16_bits((float)v); break;
    case XCOLL_BFLOAT16: ((uint16_t *)buf)[i] = bfloat16_bits((float)v); break;
    case XCOLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case XCOLL_FLOAT64: ((double *)buf)[i] = (double)v; break;
    default: break;
    }
}

/* Reduction inputs: small integers. For sum and avg, ranks pair up with
 * opposite offsets, so the sum is exactly nranks * base and the average
 * exactly base, in every type; partial sums never exceed 10 * nranks, so
 * they are exact in float16 (to 204 ranks) and bfloat16 (to 25). For prod,
 * one rank holds a 2 on odd elements, the rest 1s. */
static int64_t red_input(xcoll_op_t op, int r, size_t i)
{
    switch (op) {
    case XCOLL_SUM:
    case XCOLL_AVG: {
        int64_t base = 3 + (int64_t)(i % 5);
        if ((nranks & 1) && r == nranks - 1)
            return base;
        int64_t off = (int64_t)((i + (size_t)(r / 2)) % 3);
        return r % 2 == 0 ? base + off : base - off;
    }
    case XCOLL_PROD: return ((i + (size_t)r) % (size_t)nranks == 0 && (i & 1)) ? 2 : 1;
    case XCOLL_BAND:
    case XCOLL_BOR:
    case XCOLL_BXOR: return (int64_t)((i * 5 + (size_t)r * 3 + 1) % 64);
    default: return (int64_t)(((size_t)r * 7 + i) % 11);
    }
}

static int64_t red_expected(xcoll_op_t op, size_t i)
{
    switch (op) {
    case XCOLL_SUM: return (int64_t)nranks * (3 + (int64_t)(i % 5));
    case XCOLL_AVG: return 3 + (int64_t)(i % 5);
    case XCOLL_PROD: return (i & 1) ? 2 : 1;
    default: break;
    }
    int64_t acc = red_input(op, 0, i);
    for (int r = 1; r < nranks; r++) {
        int64_t v = red_input(op, r, i);
        switch (op) {
        case XCOLL_MIN: acc = v < acc ? v : acc; break;
        case XCOLL_MAX: acc = v > acc ? v : acc; break;
        case XCOLL_BAND: acc &= v; break;
        case XCOLL_BOR: acc |= v; break;
        case XCOLL_BXOR: acc ^= v; break;
        default: break;
        }
    }
    return acc;
}

/* Data moved without reduction: element i of what rank src contributes. */
static int64_t data_value(int src, size_t i, int salt)
{
    return (int64_t)(((size_t)src * 31 + i + (size_t)salt * 17) % 101);
}

/* Element k of the block rank src sends to rank dst in alltoall. */
static int64_t a2a_value(int src, int dst, size_t k)
{
    return (int64_t)(((size_t)src * 13 + (size_t)dst * 5 + k) % 97);
}

/* 1 if element i of buf holds v in type d, bit for bit. */
static int holds(xcoll_dtype_t d, const void *buf, size_t i, int64_t v, size_t es)
{
    unsigned char want[8];
    store(d, want, 0, v);
    return memcmp((const char *)buf + i * es, want, es) == 0;
}

#define POISON 0xee
#define GUARD 0xa5

size_t result_bytes(const call_t *c)
{
    size_t blk = c->count * c->es, all = blk * (size_t)nranks;
    int is_root = rank == c->root;
    switch (c->coll) {
    case C_ALLGATHER:
    case C_ALLTOALL: return all;
    case C_REDUCE_SCATTER: return c->inplace ? all : blk;
    case C_REDUCE: return is_root ? blk : 0;
    case C_GATHER: return is_root ? all : 0;
    case C_SCATTER: return c->inplace && is_root ? 0 : blk;
    case C_ALLGATHERV:
    case C_ALLTOALLV: v_setup(c); return v_total(v_rc) * c->es;
    default: return blk;
    }
}

/* Poison where results will land, so stale data fails. */
void prepare(const call_t *c)
{
    size_t n = c->count, rb = result_bytes(c), j, k;
    xcoll_dtype_t d = c->dtype;
    int is_root = rank == c->root;
    memset(rhost, POISON, rb);
    memset(rhost + rb, GUARD, GUARD_BYTES);
    char *in = c->inplace ? rhost : shost;
    switch (c->coll) {
    case C_ALLREDUCE:
    case C_REDUCE:
        for (k = 0; k < n; k++)
            store(d, in, k, red_input(c->op, rank, k));
        break;
    case C_REDUCE_SCATTER:
        for (k = 0; k < n * (size_t)nranks; k++)
            store(d, in, k, red_input(c->op, rank, k));
        break;
    case C_ALLGATHER:
        for (k = 0; k < n; k++)
            store(d, c->inplace ? rhost + (size_t)rank * n * c->es : shost, k,
                  data_value(rank, k, 0));
        break;
    case C_GATHER:
        for (k = 0; k < n; k++)
            store(d, c->inplace && is_root ? rhost + (size_t)rank * n * c->es : shost, k,
                  data_value(rank, k, 0));
        break;
    case C_BCAST:
        if (is_root)
            for (k = 0; k < n; k++)
                store(d, rhost, k, data_value(c->root, k, 1));
        break;
    case C_ALLTOALL:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < n; k++)
                store(d, in, j * n + k, a2a_value(rank, (int)j, k));
        break;
    case C_SCATTER:
        if (is_root)
            for (j = 0; j < (size_t)nranks; j++)
                for (k = 0; k < n; k++)
                    store(d, shost, j * n + k, data_value((int)j, k, c->root));
        break;
    case C_SENDRECV:
        for (k = 0; k < n; k++)
            store(d, shost, k, data_value(rank, k, 2));
        break;
    case C_ALLGATHERV:
        for (k = 0; k < v_rc[rank]; k++)
            store(d, c->inplace ? rhost + v_rd[rank] * c->es : shost, k,
                        data_value(rank, k, 0));
        break;
    case C_ALLTOALLV:
        for (j = 0; j < (size_t)nranks; j++) {
            const size_t *cnt = c->inplace ? v_rc : v_sc, *dsp = c->inplace ? v_rd : v_sd;
            for (k = 0; k < cnt[j]; k++)
                store(d, in, dsp[j] + k, a2a_value(rank, (int)j, k));
        }
        break;
    default: break;
    }
}

long count_wrong(const call_t *c)
{
    size_t n = c->count, rb = result_bytes(c), es = c->es, j, k;
    xcoll_dtype_t d = c->dtype;
    long wrong = 0;
    if (rb == 0)
        return 0;
    switch (c->coll) {
    case C_ALLREDUCE:
    case C_REDUCE:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, red_expected(c->op, k), es);
        break;
    case C_REDUCE_SCATTER:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, red_expected(c->op, (size_t)rank * n + k), es);
        break;
    case C_ALLGATHER:
    case C_GATHER:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < n; k++)
                wrong += !holds(d, rhost, j * n + k, data_value((int)j, k, 0), es);
        break;
    case C_BCAST:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, data_value(c->root, k, 1), es);
        break;
    case C_ALLTOALL:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < n; k++)
                wrong += !holds(d, rhost, j * n + k, a2a_value((int)j, rank, k), es);
        break;
    case C_SCATTER:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, data_value(rank, k, c->root), es);
        break;
    case C_SENDRECV:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, data_value((rank + nranks - 1) % nranks, k, 2), es);
        break;
    case C_ALLGATHERV:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < v_rc[j]; k++)
                wrong += !holds(d, rhost, v_rd[j] + k, data_value((int)j, k, 0), es);
        break;
    case C_ALLTOALLV:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < v_rc[j]; k++)
                wrong += !holds(d, rhost, v_rd[j] + k, a2a_value((int)j, rank, k), es);
        break;
    default: break;
    }
    for (k = 0; k < GUARD_BYTES; k++)
        wrong += (unsigned char)rhost[rb + k] != GUARD;
    return wrong;
}
