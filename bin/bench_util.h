/* What xcoll-perf and xcoll-bench share (bench_util.c). */
#ifndef XCOLL_BENCH_UTIL_H
#define XCOLL_BENCH_UTIL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include "xcoll.h"

/* A byte count with an optional K, M or G suffix (binary); -1 if s is not one. */
int bench_parse_size(const char *s, size_t *out);

/* MPI's type for the same bytes; for reductions (reduces = 1) only where
 * MPI can reduce it (float16 and bfloat16: MPI_DATATYPE_NULL). */
MPI_Datatype bench_mpi_dtype(xcoll_dtype_t d, int reduces);

/* MPI's operator, or MPI_OP_NULL (avg: MPI has none). */
MPI_Op bench_mpi_op(xcoll_op_t op);

/* Element i of buf (type d) = the small integer v, exact in every type. */
void bench_store(xcoll_dtype_t d, void *buf, size_t i, int64_t v);

#endif
