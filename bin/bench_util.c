/* What xcoll-perf and xcoll-bench share: sizes on the command line, the
 * MPI names of xcoll's types and ops, and writing test values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

int bench_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || v < 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024.0; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024.0 * 1024.0; end++; break;
    default: break;
    }
    if (*end != '\0' || v > 1e15)
        return -1;
    *out = (size_t)v;
    return 0;
}

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

void bench_store(xcoll_dtype_t d, void *buf, size_t i, int64_t v)
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

MPI_Datatype bench_mpi_dtype(xcoll_dtype_t d, int reduces)
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
    case XCOLL_FLOAT16:
    case XCOLL_BFLOAT16: return reduces ? MPI_DATATYPE_NULL : MPI_UINT16_T;
    default: return MPI_DATATYPE_NULL;
    }
}

MPI_Op bench_mpi_op(xcoll_op_t op)
{
    switch (op) {
    case XCOLL_SUM: return MPI_SUM;
    case XCOLL_PROD: return MPI_PROD;
    case XCOLL_MIN: return MPI_MIN;
    case XCOLL_MAX: return MPI_MAX;
    case XCOLL_BAND: return MPI_BAND;
    case XCOLL_BOR: return MPI_BOR;
    case XCOLL_BXOR: return MPI_BXOR;
    default: return MPI_OP_NULL; /* avg: MPI has none */
    }
}
