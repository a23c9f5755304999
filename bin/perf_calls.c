/* perf_calls.c - the collectives xcoll-perf times: their properties, and
 * one call of each through xcoll and through MPI on the same buffers. */
#include <limits.h>
#include <stdlib.h>

#include "perf.h"

const coll_info_t colls[C_COUNT] = {
    [C_ALLREDUCE] = {"allreduce", 1, 0, 0, 1},
    [C_ALLGATHER] = {"allgather", 0, 0, 1, 1},
    [C_REDUCE_SCATTER] = {"reduce_scatter", 1, 0, 1, 1},
    [C_BCAST] = {"bcast", 0, 1, 0, 0},
    [C_REDUCE] = {"reduce", 1, 1, 0, 1},
    [C_ALLTOALL] = {"alltoall", 0, 0, 1, 1},
    [C_GATHER] = {"gather", 0, 1, 1, 1},
    [C_SCATTER] = {"scatter", 0, 1, 1, 1},
    [C_ALLGATHERV] = {"allgatherv", 0, 0, 1, 1},
    [C_ALLTOALLV] = {"alltoallv", 0, 0, 1, 1},
    [C_SENDRECV] = {"sendrecv", 0, 0, 0, 0},
    [C_BARRIER] = {"barrier", 0, 0, 0, 0, 1},
};

double bus_factor(coll_t c, int n)
{
    switch (c) {
    case C_ALLREDUCE: return 2.0 * (n - 1) / n;
    case C_ALLGATHER:
    case C_REDUCE_SCATTER:
    case C_ALLTOALL:
    case C_GATHER:
    case C_SCATTER:
    case C_ALLGATHERV:
    case C_ALLTOALLV: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

#define SENDRECV_TAG 7

/* The v-variants' blocks, uneven as real programs make them: for a count
 * of c per block, rank j's allgatherv block and the alltoallv block from
 * i to j hold about c * 2w / (P + 1) elements for weights w of 1..P (rank
 * j + 1, resp. (i + j) % P + 1), so the sizes range over ~2c/P..2c and
 * add up to at most P blocks of c; the alltoallv matrix is symmetric, as
 * in place needs. Packed in rank order. */
size_t *v_sc, *v_sd, *v_rc, *v_rd; /* this rank's counts and displacements */
static int *v_isc, *v_isd, *v_irc, *v_ird; /* the same for MPI */

static size_t v_block(size_t c, int w)
{
    return c * 2 * (size_t)w / (size_t)(nranks + 1);
}

void v_setup(const call_t *c)
{
    static size_t last_count = (size_t)-1;
    static coll_t last_coll = C_COUNT;
    size_t so = 0, ro = 0;
    if (c->count == last_count && c->coll == last_coll)
        return;
    last_count = c->count;
    last_coll = c->coll;
    for (int j = 0; j < nranks; j++) {
        int w = c->coll == C_ALLGATHERV ? j + 1 : (rank + j) % nranks + 1;
        v_sc[j] = c->coll == C_ALLGATHERV ? v_block(c->count, rank + 1) : v_block(c->count, w);
        v_rc[j] = v_block(c->count, w);
        v_sd[j] = so;
        v_rd[j] = ro;
        so += v_sc[j];
        ro += v_rc[j];
        v_isc[j] = (int)v_sc[j], v_isd[j] = (int)v_sd[j];
        v_irc[j] = (int)v_rc[j], v_ird[j] = (int)v_rd[j];
    }
}

size_t v_total(const size_t *counts)
{
    size_t t = 0;
    for (int j = 0; j < nranks; j++)
        t += counts[j];
    return t;
}

int calls_init(void)
{
    v_sc = calloc((size_t)nranks * 4, sizeof(size_t));
    v_isc = calloc((size_t)nranks * 4, sizeof(int));
    if (v_sc == NULL || v_isc == NULL)
        return -1;
    v_sd = v_sc + nranks, v_rc = v_sc + 2 * nranks, v_rd = v_sc + 3 * nranks;
    v_isd = v_isc + nranks, v_irc = v_isc + 2 * nranks, v_ird = v_isc + 3 * nranks;
    return 0;
}

void calls_fini(void)
{
    free(v_sc);
    free(v_isc);
}

xcoll_status_t call_xcoll(const call_t *c)
{
    const void *snd = c->inplace ? XCOLL_IN_PLACE : sbuf;
    int is_root = rank == c->root;
    switch (c->coll) {
    case C_ALLREDUCE: return xcoll_allreduce(snd, rbuf, c->count, c->dtype, c->op, comm, xstream);
    case C_ALLGATHER: return xcoll_allgather(snd, rbuf, c->count, c->dtype, comm, xstream);
    case C_REDUCE_SCATTER:
        return xcoll_reduce_scatter(snd, rbuf, c->count, c->dtype, c->op, comm, xstream);
    case C_BCAST: return xcoll_bcast(rbuf, c->count, c->dtype, c->root, comm, xstream);
    case C_REDUCE:
        /* In place, NCCL style: every rank's input is in rbuf. */
        return xcoll_reduce(c->inplace ? (is_root ? XCOLL_IN_PLACE : rbuf) : sbuf, rbuf,
                            c->count, c->dtype, c->op, c->root, comm, xstream);
    case C_ALLTOALL: return xcoll_alltoall(snd, rbuf, c->count, c->dtype, comm, xstream);
    case C_GATHER:
        return xcoll_gather(c->inplace && is_root ? XCOLL_IN_PLACE : sbuf, rbuf, c->count,
                            c->dtype, c->root, comm, xstream);
    case C_SCATTER:
        return xcoll_scatter(sbuf, c->inplace && is_root ? (void *)XCOLL_IN_PLACE : rbuf,
                             c->count, c->dtype, c->root, comm, xstream);
    case C_SENDRECV: {
        xcoll_request_t rq = NULL, sq = NULL;
        xcoll_status_t st = xcoll_irecv(rbuf, c->count, c->dtype, (rank + nranks - 1) % nranks,
                                        SENDRECV_TAG, comm, xstream, &rq);
        if (st == XCOLL_OK)
            st = xcoll_isend(sbuf, c->count, c->dtype, (rank + 1) % nranks, SENDRECV_TAG, comm,
                             xstream, &sq);
        xcoll_status_t st2 = rq ? xcoll_wait(&rq) : XCOLL_OK;
        xcoll_status_t st3 = sq ? xcoll_wait(&sq) : XCOLL_OK;
        return st != XCOLL_OK ? st : st2 != XCOLL_OK ? st2 : st3;
    }
    case C_BARRIER: return xcoll_barrier(comm);
    case C_ALLGATHERV:
        v_setup(c);
        return xcoll_allgatherv(snd, v_rc[rank], rbuf, v_rc, v_rd, c->dtype, comm, xstream);
    case C_ALLTOALLV:
        v_setup(c);
        return xcoll_alltoallv(snd, v_sc, v_sd, rbuf, v_rc, v_rd, c->dtype, comm, xstream);
    default: return XCOLL_ERR_INVALID_ARG;
    }
}

/* MPI's type for the same bytes; for reductions (reduces = 1) only where
 * MPI can reduce it (float16 and bfloat16: MPI_DATATYPE_NULL). */
static MPI_Datatype mpi_dtype(xcoll_dtype_t d, int reduces)
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

/* MPI's operator, or MPI_OP_NULL (avg: MPI has none). */
static MPI_Op mpi_op(xcoll_op_t op)
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

int mpi_can(const call_t *c)
{
    if (c->count * (size_t)nranks > INT_MAX)
        return 0;
    if (mpi_dtype(c->dtype, colls[c->coll].reduces) == MPI_DATATYPE_NULL)
        return 0;
    return !colls[c->coll].reduces || mpi_op(c->op) != MPI_OP_NULL;
}

int call_mpi(const call_t *c)
{
    MPI_Datatype t = mpi_dtype(c->dtype, colls[c->coll].reduces);
    MPI_Op op = colls[c->coll].reduces ? mpi_op(c->op) : MPI_OP_NULL;
    int n = (int)c->count, is_root = rank == c->root;
    const void *snd = c->inplace ? MPI_IN_PLACE : sbuf;
    switch (c->coll) {
    case C_ALLREDUCE: return MPI_Allreduce(snd, rbuf, n, t, op, MPI_COMM_WORLD);
    case C_ALLGATHER: return MPI_Allgather(snd, n, t, rbuf, n, t, MPI_COMM_WORLD);
    case C_REDUCE_SCATTER: return MPI_Reduce_scatter_block(snd, rbuf, n, t, op, MPI_COMM_WORLD);
    case C_BCAST: return MPI_Bcast(rbuf, n, t, c->root, MPI_COMM_WORLD);
    case C_REDUCE:
        return MPI_Reduce(c->inplace ? (is_root ? MPI_IN_PLACE : rbuf) : sbuf, rbuf, n, t, op,
                          c->root, MPI_COMM_WORLD);
    case C_ALLTOALL: return MPI_Alltoall(snd, n, t, rbuf, n, t, MPI_COMM_WORLD);
    case C_GATHER:
        return MPI_Gather(c->inplace && is_root ? MPI_IN_PLACE : sbuf, n, t, rbuf, n, t, c->root,
                          MPI_COMM_WORLD);
    case C_SCATTER:
        return MPI_Scatter(sbuf, n, t, c->inplace && is_root ? MPI_IN_PLACE : rbuf, n, t, c->root,
                           MPI_COMM_WORLD);
    case C_SENDRECV:
        return MPI_Sendrecv(sbuf, n, t, (rank + 1) % nranks, SENDRECV_TAG, rbuf, n, t,
                            (rank + nranks - 1) % nranks, SENDRECV_TAG, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE);
    case C_BARRIER: return MPI_Barrier(MPI_COMM_WORLD);
    case C_ALLGATHERV:
        v_setup(c);
        return MPI_Allgatherv(snd, v_irc[rank], t, rbuf, v_irc, v_ird, t, MPI_COMM_WORLD);
    case C_ALLTOALLV:
        v_setup(c);
        return MPI_Alltoallv(snd, v_isc, v_isd, t, rbuf, v_irc, v_ird, t, MPI_COMM_WORLD);
    default: return MPI_ERR_ARG;
    }
}
