/*
 * dropin.c - the part of the MPI drop-ins that does not depend on how they
 * are plugged in: names, the translation of MPI arguments into xcoll
 * arguments, and the logger.
 */
#include <mpi.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dropin.h"

static const char *const coll_names[XCMPI_NCOLLS] = {
    "allreduce", "bcast", "reduce", "allgather", "reduce_scatter_block",
    "reduce_scatter", "alltoall", "gather", "scatter", "barrier"};

static const char *const icoll_names[XCMPI_NCOLLS] = {
    "iallreduce", "ibcast", "ireduce", "iallgather", "ireduce_scatter_block",
    "ireduce_scatter", "ialltoall", "igather", "iscatter", "ibarrier"};

const char *xcmpi_coll_name(xcmpi_coll_t coll, int nonblocking)
{
    if ((int)coll < 0 || coll >= XCMPI_NCOLLS)
        return "invalid";
    return nonblocking ? icoll_names[coll] : coll_names[coll];
}

/* The forms one word of a colls list names, or 0 if it names none. */
static xcmpi_mask_t word_forms(const char *word)
{
    xcmpi_mask_t blocking = 0;
    int c;
    if (strcasecmp(word, "all") == 0)
        return XCMPI_ALL_FORMS;
    if (strcasecmp(word, "none") == 0)
        return 0;
    for (c = 0; c < XCMPI_NCOLLS; c++)
        blocking |= XCMPI_BIT(c, 0);
    if (strcasecmp(word, "blocking") == 0)
        return blocking;
    if (strcasecmp(word, "nonblocking") == 0)
        return blocking << XCMPI_NCOLLS;
    for (c = 0; c < XCMPI_NCOLLS; c++) {
        if (strcasecmp(word, coll_names[c]) == 0)
            return XCMPI_BIT(c, 0) | XCMPI_BIT(c, 1);
        if (strcasecmp(word, icoll_names[c]) == 0)
            return XCMPI_BIT(c, 1);
    }
    return 0;
}

int xcmpi_parse_colls(const char *list, xcmpi_mask_t *mask, char *bad, size_t badlen)
{
    char word[64];
    const char *p = list;
    *mask = 0;
    if (bad != NULL && badlen > 0)
        bad[0] = '\0';
    if (list == NULL)
        return 0;
    while (*p != '\0') {
        size_t n = strcspn(p, ", \t");
        if (n > 0) {
            xcmpi_mask_t forms;
            if (n >= sizeof(word))
                n = sizeof(word) - 1;
            memcpy(word, p, n);
            word[n] = '\0';
            forms = word_forms(word);
            if (forms == 0 && strcasecmp(word, "none") != 0) {
                if (bad != NULL && badlen > 0)
                    snprintf(bad, badlen, "%s", word);
                return -1;
            }
            *mask |= forms;
        }
        p += n;
        p += strspn(p, ", \t");
    }
    return 0;
}

/* --- logging ------------------------------------------------------------------ */

int xcmpi_log_level = XCMPI_LOG_WARN;
static int log_rank = -1;
static int log_rank_set;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void xcmpi_log_init(int verbose)
{
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                            "SLURM_PROCID"};
    const char *env = getenv("XCOLL_LOG");
    size_t i;
    xcmpi_log_level = XCMPI_LOG_WARN;
    if (env != NULL && *env != '\0') {
        if (strcasecmp(env, "error") == 0)
            xcmpi_log_level = XCMPI_LOG_ERROR;
        else if (strcasecmp(env, "info") == 0)
            xcmpi_log_level = XCMPI_LOG_INFO;
        else if (strcasecmp(env, "debug") == 0 || strcasecmp(env, "trace") == 0)
            xcmpi_log_level = XCMPI_LOG_DEBUG;
    }
    if (verbose >= 2 && xcmpi_log_level < XCMPI_LOG_DEBUG)
        xcmpi_log_level = XCMPI_LOG_DEBUG;
    else if (verbose >= 1 && xcmpi_log_level < XCMPI_LOG_INFO)
        xcmpi_log_level = XCMPI_LOG_INFO;
    for (i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]) && !log_rank_set && log_rank < 0;
         i++) {
        env = getenv(rank_vars[i]);
        if (env != NULL && *env >= '0' && *env <= '9')
            log_rank = atoi(env);
    }
}

void xcmpi_log_set_rank(int rank)
{
    log_rank = rank;
    log_rank_set = 1;
}

void xcmpi_log_write(int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (level < XCMPI_LOG_ERROR || level > XCMPI_LOG_DEBUG)
        level = XCMPI_LOG_DEBUG;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* one fprintf per line, so lines of different ranks never interleave */
    fprintf(stderr, "[xcoll r%d] %s: %s\n", log_rank, level_names[level], msg);
}

/* --- translating a call -------------------------------------------------------- */

/* The xcoll element type of a predefined MPI type that reductions accept,
 * or -1. MPI_CHAR and MPI_BYTE are left to MPI, which rejects arithmetic
 * on them; there is no xcoll 16-bit integer or long double. */
static int reduce_dtype(MPI_Datatype d)
{
    if (d == MPI_DATATYPE_NULL)
        return -1;
    if (d == MPI_INT8_T || d == MPI_SIGNED_CHAR)
        return XCOLL_INT8;
    if (d == MPI_UINT8_T || d == MPI_UNSIGNED_CHAR)
        return XCOLL_UINT8;
    if (d == MPI_INT32_T)
        return XCOLL_INT32;
    if (d == MPI_UINT32_T)
        return XCOLL_UINT32;
    if (d == MPI_INT64_T || d == MPI_LONG_LONG_INT || d == MPI_LONG_LONG)
        return XCOLL_INT64;
    if (d == MPI_UINT64_T || d == MPI_UNSIGNED_LONG_LONG)
        return XCOLL_UINT64;
    if (d == MPI_INT)
        return sizeof(int) == 4 ? XCOLL_INT32 : sizeof(int) == 8 ? XCOLL_INT64 : -1;
    if (d == MPI_UNSIGNED)
        return sizeof(unsigned) == 4 ? XCOLL_UINT32 : sizeof(unsigned) == 8 ? XCOLL_UINT64 : -1;
    if (d == MPI_LONG)
        return sizeof(long) == 8 ? XCOLL_INT64 : sizeof(long) == 4 ? XCOLL_INT32 : -1;
    if (d == MPI_UNSIGNED_LONG)
        return sizeof(long) == 8 ? XCOLL_UINT64 : sizeof(long) == 4 ? XCOLL_UINT32 : -1;
    if (d == MPI_FLOAT)
        return sizeof(float) == 4 ? XCOLL_FLOAT32 : -1;
    if (d == MPI_DOUBLE)
        return sizeof(double) == 8 ? XCOLL_FLOAT64 : -1;
    return -1;
}

/* Translates a reduction's type and op; NULL or the reason they cannot be. */
static const char *reduce_args(xcmpi_call_t *call, MPI_Datatype dtype, MPI_Op op)
{
    int d = reduce_dtype(dtype);
    int is_float;
    if (d < 0)
        return "datatype is not a predefined type with an xcoll element type "
               "(8/32/64-bit integers, float, double)";
    call->dtype = (xcoll_dtype_t)d;
    is_float = d == XCOLL_FLOAT32 || d == XCOLL_FLOAT64;
    if (op == MPI_SUM)
        call->op = XCOLL_SUM;
    else if (op == MPI_PROD)
        call->op = XCOLL_PROD;
    else if (op == MPI_MIN)
        call->op = XCOLL_MIN;
    else if (op == MPI_MAX)
        call->op = XCOLL_MAX;
    else if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) {
        if (is_float)
            return "bitwise op on a floating-point type (MPI reports the error)";
        call->op = op == MPI_BAND ? XCOLL_BAND : op == MPI_BOR ? XCOLL_BOR : XCOLL_BXOR;
    } else
        return "op is not one of SUM, PROD, MIN, MAX, BAND, BOR, BXOR "
               "(user op, MINLOC/MAXLOC, logical op or invalid)";
    return NULL;
}

/* Bytes of count elements of a contiguous predefined type, or the reason
 * the type cannot be moved as plain bytes. */
static const char *contiguous_bytes(MPI_Datatype dtype, int count, xcmpi_type_query_fn query,
                                    size_t *bytes)
{
    xcmpi_type_t info;
    if (count < 0)
        return "negative count (MPI reports the error)";
    if (dtype == MPI_DATATYPE_NULL || query(dtype, &info) != 0)
        return "invalid datatype (MPI reports the error)";
    if (!info.predefined)
        return "derived datatype";
    if (info.true_lb != 0 || info.true_extent != info.size || info.size == 0)
        return "datatype is not contiguous";
    *bytes = (size_t)count * info.size;
    return NULL;
}

static void plan_init(xcmpi_call_t *call, xcmpi_coll_t coll)
{
    memset(call, 0, sizeof(*call));
    call->coll = coll;
    call->dtype = XCOLL_UINT8;
    call->op = XCOLL_SUM;
}

const char *xcmpi_plan_allreduce(xcmpi_call_t *call, const void *sbuf, void *rbuf, int count,
                                 MPI_Datatype dtype, MPI_Op op)
{
    const char *why;
    plan_init(call, XCMPI_ALLREDUCE);
    if (count < 0)
        return "negative count (MPI reports the error)";
    if ((why = reduce_args(call, dtype, op)) != NULL)
        return why;
    call->sendbuf = sbuf == MPI_IN_PLACE ? XCOLL_IN_PLACE : sbuf;
    call->recvbuf = rbuf;
    call->count = (size_t)count;
    return NULL;
}

const char *xcmpi_plan_bcast(xcmpi_call_t *call, void *buf, int count, MPI_Datatype dtype,
                             int root, int size, xcmpi_type_query_fn query)
{
    const char *why;
    plan_init(call, XCMPI_BCAST);
    if (root < 0 || root >= size)
        return "root out of range (MPI reports the error)";
    if ((why = contiguous_bytes(dtype, count, query, &call->count)) != NULL)
        return why;
    call->recvbuf = buf;
    call->root = root;
    return NULL;
}

const char *xcmpi_plan_reduce(xcmpi_call_t *call, const void *sbuf, void *rbuf, int count,
                              MPI_Datatype dtype, MPI_Op op, int root, int rank, int size)
{
    const char *why;
    plan_init(call, XCMPI_REDUCE);
    if (root < 0 || root >= size)
        return "root out of range (MPI reports the error)";
    if (count < 0)
        return "negative count (MPI reports the error)";
    if ((why = reduce_args(call, dtype, op)) != NULL)
        return why;
    if (sbuf == MPI_IN_PLACE && rank != root)
        return "MPI_IN_PLACE on a rank other than the root (MPI reports the error)";
    call->sendbuf = sbuf == MPI_IN_PLACE ? XCOLL_IN_PLACE : sbuf;
    call->recvbuf = rank == root ? rbuf : NULL;
    call->count = (size_t)count;
    call->root = root;
    return NULL;
}

/* The byte count of a collective whose send and receive sides must carry
 * the same bytes; in place, only the receive side counts. */
static const char *matching_bytes(const void *sbuf, int scount, MPI_Datatype sdtype, int rcount,
                                  MPI_Datatype rdtype, xcmpi_type_query_fn query, size_t *bytes)
{
    const char *why;
    size_t sbytes;
    if ((why = contiguous_bytes(rdtype, rcount, query, bytes)) != NULL)
        return why;
    if (sbuf == MPI_IN_PLACE)
        return NULL;
    if ((why = contiguous_bytes(sdtype, scount, query, &sbytes)) != NULL)
        return why;
    if (sbytes != *bytes)
        return "send and receive sizes differ";
    return NULL;
}

const char *xcmpi_plan_allgather(xcmpi_call_t *call, const void *sbuf, int scount,
                                 MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                                 xcmpi_type_query_fn query)
{
    const char *why;
    plan_init(call, XCMPI_ALLGATHER);
    if ((why = matching_bytes(sbuf, scount, sdtype, rcount, rdtype, query, &call->count)) != NULL)
        return why;
    call->sendbuf = sbuf == MPI_IN_PLACE ? XCOLL_IN_PLACE : sbuf;
    call->recvbuf = rbuf;
    return NULL;
}

const char *xcmpi_plan_reduce_scatter_block(xcmpi_call_t *call, const void *sbuf, void *rbuf,
                                            int rcount, MPI_Datatype dtype, MPI_Op op)
{
    const char *why;
    plan_init(call, XCMPI_REDUCE_SCATTER_BLOCK);
    if (rcount < 0)
        return "negative count (MPI reports the error)";
    if ((why = reduce_args(call, dtype, op)) != NULL)
        return why;
    call->sendbuf = sbuf == MPI_IN_PLACE ? XCOLL_IN_PLACE : sbuf;
    call->recvbuf = rbuf;
    call->count = (size_t)rcount;
    return NULL;
}

const char *xcmpi_plan_reduce_scatter(xcmpi_call_t *call, const void *sbuf, void *rbuf,
                                      const int *rcounts, MPI_Datatype dtype, MPI_Op op, int size)
{
    const char *why;
    int i;
    if (rcounts == NULL || size < 1) {
        plan_init(call, XCMPI_REDUCE_SCATTER);
        return "no receive counts (MPI reports the error)";
    }
    for (i = 1; i < size; i++) {
        if (rcounts[i] != rcounts[0]) {
            plan_init(call, XCMPI_REDUCE_SCATTER);
            return "receive counts differ between ranks (xcoll's reduce_scatter takes equal blocks)";
        }
    }
    why = xcmpi_plan_reduce_scatter_block(call, sbuf, rbuf, rcounts[0], dtype, op);
    call->coll = XCMPI_REDUCE_SCATTER;
    return why;
}

const char *xcmpi_plan_alltoall(xcmpi_call_t *call, const void *sbuf, int scount,
                                MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                                xcmpi_type_query_fn query)
{
    const char *why;
    plan_init(call, XCMPI_ALLTOALL);
    if ((why = matching_bytes(sbuf, scount, sdtype, rcount, rdtype, query, &call->count)) != NULL)
        return why;
    call->sendbuf = sbuf == MPI_IN_PLACE ? XCOLL_IN_PLACE : sbuf;
    call->recvbuf = rbuf;
    return NULL;
}

const char *xcmpi_plan_gather(xcmpi_call_t *call, const void *sbuf, int scount, MPI_Datatype sdtype,
                              void *rbuf, int rcount, MPI_Datatype rdtype, int root, int rank,
                              int size, xcmpi_type_query_fn query)
{
    const char *why;
    plan_init(call, XCMPI_GATHER);
    call->root = root;
    if (root < 0 || root >= size)
        return "root out of range (MPI reports the error)";
    if (rank == root) {
        /* the receive side is significant only at the root */
        why = matching_bytes(sbuf, scount, sdtype, rcount, rdtype, query, &call->count);
        call->recvbuf = rbuf;
    } else {
        if (sbuf == MPI_IN_PLACE)
            return "MPI_IN_PLACE on a rank other than the root (MPI reports the error)";
        why = contiguous_bytes(sdtype, scount, query, &call->count);
    }
    if (why != NULL)
        return why;
    call->sendbuf = sbuf == MPI_IN_PLACE ? XCOLL_IN_PLACE : sbuf;
    return NULL;
}

const char *xcmpi_plan_scatter(xcmpi_call_t *call, const void *sbuf, int scount,
                               MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                               int root, int rank, int size, xcmpi_type_query_fn query)
{
    const char *why;
    plan_init(call, XCMPI_SCATTER);
    call->root = root;
    if (root < 0 || root >= size)
        return "root out of range (MPI reports the error)";
    if (rank == root) {
        /* the send side is significant only at the root; in place there,
         * the receive side is not */
        if ((why = contiguous_bytes(sdtype, scount, query, &call->count)) != NULL)
            return why;
        if (rbuf != MPI_IN_PLACE) {
            size_t rbytes;
            if ((why = contiguous_bytes(rdtype, rcount, query, &rbytes)) != NULL)
                return why;
            if (rbytes != call->count)
                return "send and receive sizes differ";
        }
        call->sendbuf = sbuf;
    } else {
        if (rbuf == MPI_IN_PLACE)
            return "MPI_IN_PLACE on a rank other than the root (MPI reports the error)";
        if ((why = contiguous_bytes(rdtype, rcount, query, &call->count)) != NULL)
            return why;
    }
    call->recvbuf = rbuf == MPI_IN_PLACE ? (void *)XCOLL_IN_PLACE : rbuf;
    return NULL;
}

void xcmpi_plan_barrier(xcmpi_call_t *call)
{
    plan_init(call, XCMPI_BARRIER);
}

xcoll_status_t xcmpi_start(const xcmpi_call_t *c, xcoll_comm_t comm, xcoll_request_t *req)
{
    switch (c->coll) {
    case XCMPI_ALLREDUCE:
        return xcoll_iallreduce(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, comm, NULL, req);
    case XCMPI_BCAST:
        return xcoll_ibcast(c->recvbuf, c->count, c->dtype, c->root, comm, NULL, req);
    case XCMPI_REDUCE:
        return xcoll_ireduce(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, c->root, comm,
                             NULL, req);
    case XCMPI_ALLGATHER:
        return xcoll_iallgather(c->sendbuf, c->recvbuf, c->count, c->dtype, comm, NULL, req);
    case XCMPI_REDUCE_SCATTER_BLOCK:
    case XCMPI_REDUCE_SCATTER:
        return xcoll_ireduce_scatter(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, comm,
                                     NULL, req);
    case XCMPI_ALLTOALL:
        return xcoll_ialltoall(c->sendbuf, c->recvbuf, c->count, c->dtype, comm, NULL, req);
    case XCMPI_GATHER:
        return xcoll_igather(c->sendbuf, c->recvbuf, c->count, c->dtype, c->root, comm, NULL, req);
    case XCMPI_SCATTER:
        return xcoll_iscatter(c->sendbuf, c->recvbuf, c->count, c->dtype, c->root, comm, NULL,
                              req);
    case XCMPI_BARRIER:
        return xcoll_ibarrier(comm, req);
    default:
        return XCOLL_ERR_INVALID_ARG;
    }
}

void xcmpi_describe(const xcmpi_call_t *c, char *buf, size_t len)
{
    switch (c->coll) {
    case XCMPI_ALLREDUCE:
    case XCMPI_REDUCE_SCATTER_BLOCK:
    case XCMPI_REDUCE_SCATTER:
        snprintf(buf, len, "%zu x %s %s%s", c->count, xcoll_dtype_name(c->dtype),
                 xcoll_op_name(c->op), c->sendbuf == XCOLL_IN_PLACE ? ", in place" : "");
        break;
    case XCMPI_REDUCE:
        snprintf(buf, len, "%zu x %s %s, root %d%s", c->count, xcoll_dtype_name(c->dtype),
                 xcoll_op_name(c->op), c->root, c->sendbuf == XCOLL_IN_PLACE ? ", in place" : "");
        break;
    case XCMPI_BCAST:
    case XCMPI_GATHER:
    case XCMPI_SCATTER:
        snprintf(buf, len, "%zu bytes, root %d%s", c->count, c->root,
                 c->sendbuf == XCOLL_IN_PLACE || c->recvbuf == XCOLL_IN_PLACE ? ", in place" : "");
        break;
    case XCMPI_ALLGATHER:
    case XCMPI_ALLTOALL:
        snprintf(buf, len, "%zu bytes per rank%s", c->count,
                 c->sendbuf == XCOLL_IN_PLACE ? ", in place" : "");
        break;
    default:
        snprintf(buf, len, "no data");
        break;
    }
}
