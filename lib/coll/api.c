/* The public collective and point-to-point calls: check every argument,
 * normalise in-place forms to the builders' buffer contract (coll.h), get
 * the (cached) schedule, post it. Blocking calls are post + wait. */
#include <stdint.h>
#include <string.h>

#include "coll.h"
#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/log.h"
#include "../core/tag.h"

#define IN_PLACE(p) ((const void *)(p) == XCOLL_IN_PLACE)

/* Checks shared by every call; *dsize gets the element size. */
static xcoll_status_t check_common(const char *what, xcoll_comm_t comm, xcoll_dtype_t dtype,
                                   void *stream, xcoll_request_t *req, size_t *dsize)
{
    xcoll_status_t rc;
    xc_log_init();
    if ((rc = xc_comm_check(comm, what)) != XCOLL_OK)
        return rc;
    if (req == NULL) {
        xc_error("%s: request pointer is NULL", what);
        return XCOLL_ERR_INVALID_ARG;
    }
    if (!xc_dtype_valid(dtype)) {
        xc_error("%s: datatype %d is not an xcoll_dtype_t", what, (int)dtype);
        return XCOLL_ERR_INVALID_DTYPE;
    }
    if (stream != NULL && xc_gpu() == NULL) {
        xc_error("%s: a CUDA stream was given, but CUDA is %s", what, xc_gpu_describe());
        return XCOLL_ERR_UNSUPPORTED;
    }
    *dsize = xcoll_dtype_size(dtype);
    return XCOLL_OK;
}

static xcoll_status_t check_op(const char *what, xcoll_dtype_t dtype, xcoll_op_t op)
{
    if (!xc_op_valid(op)) {
        xc_error("%s: operator %d is not an xcoll_op_t", what, (int)op);
        return XCOLL_ERR_INVALID_OP;
    }
    if (!xc_op_allowed(dtype, op)) {
        xc_error("%s: %s is a bitwise operator; %s is not an integer type", what,
                 xcoll_op_name(op), xcoll_dtype_name(dtype));
        return XCOLL_ERR_INVALID_OP;
    }
    return XCOLL_OK;
}

static xcoll_status_t check_root(const char *what, xcoll_comm_t comm, int root)
{
    if (root < 0 || root >= comm->size) {
        xc_error("%s: root %d is not a rank of this communicator (size %d)", what, root,
                 comm->size);
        return XCOLL_ERR_INVALID_ROOT;
    }
    return XCOLL_OK;
}

/* *bytes = count * dsize * blocks, or XCOLL_ERR_OVERFLOW. */
static xcoll_status_t check_size(const char *what, size_t count, size_t dsize, size_t blocks,
                                 size_t *bytes)
{
    if (count != 0 && (dsize > SIZE_MAX / count || count * dsize > SIZE_MAX / blocks)) {
        xc_error("%s: count %zu of %zu-byte elements%s overflows size_t", what, count, dsize,
                 blocks > 1 ? " times the number of ranks" : "");
        return XCOLL_ERR_OVERFLOW;
    }
    *bytes = count * dsize * blocks;
    return XCOLL_OK;
}

static xcoll_status_t check_buf(const char *what, const char *name, const void *buf,
                                size_t count)
{
    if (buf == NULL && count > 0) {
        xc_error("%s: %s is NULL with count %zu", what, name, count);
        return XCOLL_ERR_INVALID_ARG;
    }
    return XCOLL_OK;
}

/* What a cache miss needs to build a schedule, and where it says why it
 * chose the algorithm it did. */
typedef struct {
    xc_coll_args_t a;
    const struct xc_tune *tune;
    char why[sizeof(((xc_cached_sched_t *)0)->why)];
    int built;
} build_ctx_t;

static xcoll_status_t build_collective(void *ctx, xc_sched_t *s)
{
    build_ctx_t *b = ctx;
    xcoll_status_t rc;
    b->built = 1;
    rc = xc_select_and_build(s, &b->a, b->tune, b->why, sizeof(b->why));
    if (rc == XCOLL_OK)
        rc = xc_sched_add_acks(s, XC_ACK_ABOVE_BYTES);
    return rc;
}

/* Schedules are cached per (collective, shape): rank and size are fixed
 * per communicator, buffers are bound at post time. */
static xcoll_status_t post(xcoll_comm_t comm, xc_coll_t coll, size_t count, xcoll_dtype_t dtype,
                           xcoll_op_t op, int root, int in_place, const void *sendbuf,
                           void *recvbuf, void *stream, xcoll_request_t *req)
{
    build_ctx_t b;
    xc_cached_sched_t *cs;
    uint64_t key[4];
    xcoll_status_t rc;

    /* The selection table is fixed for the communicator's life, so the
     * choice is a function of the key below and may be cached with it. */
    memset(&b, 0, sizeof(b));
    b.tune = comm->tune;
    b.a.coll = coll;
    b.a.rank = comm->rank;
    b.a.size = comm->size;
    b.a.count = count;
    b.a.dtype = dtype;
    b.a.op = op;
    b.a.root = root;
    b.a.in_place = in_place;
    b.a.topo = comm->topo;
    key[0] = (uint64_t)coll | (uint64_t)dtype << 8 | (uint64_t)op << 16 |
             (uint64_t)(in_place != 0) << 24;
    key[1] = count;
    key[2] = (uint64_t)(uint32_t)root;
    key[3] = 0;
    rc = xc_comm_get_sched(comm, key, build_collective, &b, &cs);
    if (rc != XCOLL_OK) {
        comm->failed = 1; /* the other ranks may have gone ahead */
        return rc;
    }
    if (b.built)
        memcpy(cs->why, b.why, sizeof(cs->why));
    xc_info("%s seq %u: %s, count %zu %s %s, root %d%s (%s)", xc_coll_name(coll), comm->seq,
            cs->sched.algo, count, xcoll_dtype_name(dtype), xcoll_op_name(op), root,
            in_place ? ", in place" : "", cs->why);
    return xc_request_post(comm, cs, xc_coll_name(coll), sendbuf, recvbuf, -1, stream, req);
}

/* ---------------------------------------------------------------- allreduce */

xcoll_status_t xcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                xcoll_dtype_t dtype, xcoll_op_t op, xcoll_comm_t comm,
                                void *stream, xcoll_request_t *req)
{
    const char *what = "xcoll_allreduce";
    size_t dsize, bytes;
    xcoll_status_t rc;
    int in_place;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_op(what, dtype, op)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK ||
        (rc = check_buf(what, "sendbuf", sendbuf, count)) != XCOLL_OK ||
        (rc = check_buf(what, "recvbuf", recvbuf, count)) != XCOLL_OK)
        return rc;
    in_place = IN_PLACE(sendbuf) || sendbuf == recvbuf;
    return post(comm, XC_COLL_ALLREDUCE, count, dtype, op, 0, in_place,
                in_place ? NULL : sendbuf, recvbuf, stream, req);
}

/* -------------------------------------------------------------------- bcast */

xcoll_status_t xcoll_ibcast(void *buf, size_t count, xcoll_dtype_t dtype, int root,
                            xcoll_comm_t comm, void *stream, xcoll_request_t *req)
{
    const char *what = "xcoll_bcast";
    size_t dsize, bytes;
    xcoll_status_t rc;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_root(what, comm, root)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK ||
        (rc = check_buf(what, "buf", buf, count)) != XCOLL_OK)
        return rc;
    return post(comm, XC_COLL_BCAST, count, dtype, XCOLL_SUM, root, 0, NULL, buf, stream, req);
}

/* ------------------------------------------------------------------- reduce */

xcoll_status_t xcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                             xcoll_dtype_t dtype, xcoll_op_t op, int root, xcoll_comm_t comm,
                             void *stream, xcoll_request_t *req)
{
    const char *what = "xcoll_reduce";
    size_t dsize, bytes;
    xcoll_status_t rc;
    int in_place = 0;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_op(what, dtype, op)) != XCOLL_OK ||
        (rc = check_root(what, comm, root)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK ||
        (rc = check_buf(what, "sendbuf", sendbuf, count)) != XCOLL_OK)
        return rc;
    if (comm->rank == root) {
        if ((rc = check_buf(what, "recvbuf at the root", recvbuf, count)) != XCOLL_OK)
            return rc;
        in_place = IN_PLACE(sendbuf) || sendbuf == recvbuf;
    } else {
        if (IN_PLACE(sendbuf)) {
            xc_error("%s: XCOLL_IN_PLACE is only meaningful at the root", what);
            return XCOLL_ERR_INVALID_ARG;
        }
        recvbuf = NULL;
    }
    return post(comm, XC_COLL_REDUCE, count, dtype, op, root, in_place,
                in_place ? NULL : sendbuf, recvbuf, stream, req);
}

/* ---------------------------------------------------------------- allgather */

xcoll_status_t xcoll_iallgather(const void *sendbuf, void *recvbuf, size_t count,
                                xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream,
                                xcoll_request_t *req)
{
    const char *what = "xcoll_allgather";
    size_t dsize, bytes, total;
    xcoll_status_t rc;
    int in_place;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, (size_t)comm->size, &total)) != XCOLL_OK ||
        (rc = check_buf(what, "sendbuf", sendbuf, count)) != XCOLL_OK ||
        (rc = check_buf(what, "recvbuf", recvbuf, count)) != XCOLL_OK)
        return rc;
    in_place = IN_PLACE(sendbuf) ||
               (recvbuf != NULL && sendbuf == (char *)recvbuf + (size_t)comm->rank * bytes);
    return post(comm, XC_COLL_ALLGATHER, count, dtype, XCOLL_SUM, 0, in_place,
                in_place ? NULL : sendbuf, recvbuf, stream, req);
}

/* ----------------------------------------------------------- reduce_scatter */

xcoll_status_t xcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                     xcoll_dtype_t dtype, xcoll_op_t op, xcoll_comm_t comm,
                                     void *stream, xcoll_request_t *req)
{
    const char *what = "xcoll_reduce_scatter";
    size_t dsize, bytes, total;
    xcoll_status_t rc;
    char *input;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_op(what, dtype, op)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, (size_t)comm->size, &total)) != XCOLL_OK ||
        (rc = check_buf(what, "sendbuf", sendbuf, count)) != XCOLL_OK ||
        (rc = check_buf(what, "recvbuf", recvbuf, count)) != XCOLL_OK)
        return rc;
    if (IN_PLACE(sendbuf)) {
        /* MPI layout: the input fills recvbuf and the result belongs in its
         * first block; the builders leave it in block `rank`, so move it. */
        rc = post(comm, XC_COLL_REDUCE_SCATTER, count, dtype, op, 0, 1, NULL, recvbuf, stream,
                  req);
        if (rc == XCOLL_OK && comm->rank != 0) {
            (*req)->post_dst = recvbuf;
            (*req)->post_src = (char *)recvbuf + (size_t)comm->rank * bytes;
            (*req)->post_bytes = bytes;
        }
        return rc;
    }
    input = (char *)(uintptr_t)sendbuf;
    if (count > 0 && (char *)recvbuf == input + (size_t)comm->rank * bytes) /* NCCL layout */
        return post(comm, XC_COLL_REDUCE_SCATTER, count, dtype, op, 0, 1, NULL, input, stream,
                    req);
    return post(comm, XC_COLL_REDUCE_SCATTER, count, dtype, op, 0, 0, sendbuf, recvbuf, stream,
                req);
}

/* ----------------------------------------------------------------- alltoall */

xcoll_status_t xcoll_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                               xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream,
                               xcoll_request_t *req)
{
    const char *what = "xcoll_alltoall";
    size_t dsize, total;
    xcoll_status_t rc;
    int in_place;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, (size_t)comm->size, &total)) != XCOLL_OK ||
        (rc = check_buf(what, "sendbuf", sendbuf, count)) != XCOLL_OK ||
        (rc = check_buf(what, "recvbuf", recvbuf, count)) != XCOLL_OK)
        return rc;
    in_place = IN_PLACE(sendbuf) || sendbuf == recvbuf;
    return post(comm, XC_COLL_ALLTOALL, count, dtype, XCOLL_SUM, 0, in_place,
                in_place ? NULL : sendbuf, recvbuf, stream, req);
}

/* ------------------------------------------------------------------- gather */

xcoll_status_t xcoll_igather(const void *sendbuf, void *recvbuf, size_t count,
                             xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream,
                             xcoll_request_t *req)
{
    const char *what = "xcoll_gather";
    size_t dsize, bytes, total;
    xcoll_status_t rc;
    int in_place = 0;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_root(what, comm, root)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, (size_t)comm->size, &total)) != XCOLL_OK ||
        (rc = check_buf(what, "sendbuf", sendbuf, count)) != XCOLL_OK)
        return rc;
    if (comm->rank == root) {
        if ((rc = check_buf(what, "recvbuf at the root", recvbuf, count)) != XCOLL_OK)
            return rc;
        in_place = IN_PLACE(sendbuf) ||
                   (recvbuf != NULL && sendbuf == (char *)recvbuf + (size_t)root * bytes);
    } else {
        if (IN_PLACE(sendbuf)) {
            xc_error("%s: XCOLL_IN_PLACE is only meaningful at the root", what);
            return XCOLL_ERR_INVALID_ARG;
        }
        recvbuf = NULL;
    }
    return post(comm, XC_COLL_GATHER, count, dtype, XCOLL_SUM, root, in_place,
                in_place ? NULL : sendbuf, recvbuf, stream, req);
}

/* ------------------------------------------------------------------ scatter */

xcoll_status_t xcoll_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                              xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream,
                              xcoll_request_t *req)
{
    const char *what = "xcoll_scatter";
    size_t dsize, bytes, total;
    xcoll_status_t rc;
    int in_place = 0;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_root(what, comm, root)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, (size_t)comm->size, &total)) != XCOLL_OK ||
        (rc = check_buf(what, "recvbuf", recvbuf, count)) != XCOLL_OK)
        return rc;
    if (comm->rank == root) {
        if ((rc = check_buf(what, "sendbuf at the root", sendbuf, count)) != XCOLL_OK)
            return rc;
        in_place = IN_PLACE(recvbuf) ||
                   (sendbuf != NULL && recvbuf == (const char *)sendbuf + (size_t)root * bytes);
    } else {
        if (IN_PLACE(recvbuf)) {
            xc_error("%s: XCOLL_IN_PLACE is only meaningful at the root", what);
            return XCOLL_ERR_INVALID_ARG;
        }
        sendbuf = NULL;
    }
    return post(comm, XC_COLL_SCATTER, count, dtype, XCOLL_SUM, root, in_place, sendbuf,
                in_place ? NULL : recvbuf, stream, req);
}

/* ------------------------------------------------------------------ barrier */

xcoll_status_t xcoll_ibarrier(xcoll_comm_t comm, xcoll_request_t *req)
{
    size_t dsize;
    xcoll_status_t rc = check_common("xcoll_barrier", comm, XCOLL_UINT8, NULL, req, &dsize);
    if (rc != XCOLL_OK)
        return rc;
    return post(comm, XC_COLL_BARRIER, 0, XCOLL_UINT8, XCOLL_SUM, 0, 0, NULL, NULL, NULL, req);
}

/* ----------------------------------------------------------- point to point */

typedef struct {
    int rank, size, peer, is_send;
    size_t bytes;
} p2p_args_t;

static xcoll_status_t build_p2p(void *ctx, xc_sched_t *s)
{
    const p2p_args_t *p = ctx;
    xcoll_status_t rc = xc_sched_init(s, p->rank, p->size, XCOLL_UINT8, XCOLL_SUM);
    if (rc != XCOLL_OK)
        return rc;
    s->algo = p->is_send ? "send" : "recv";
    if (p->is_send)
        xc_send(s, p->peer, XC_AT_SEND(0), p->bytes, XC_NODEPS);
    else
        xc_recv(s, p->peer, XC_AT_RECV(0), p->bytes, XC_NODEPS);
    return s->err;
}

static xcoll_status_t post_p2p(const char *what, const void *buf, size_t count,
                               xcoll_dtype_t dtype, int peer, int tag, xcoll_comm_t comm,
                               void *stream, xcoll_request_t *req, int is_send)
{
    size_t dsize, bytes;
    xcoll_status_t rc;
    xc_cached_sched_t *cs;
    uint64_t key[4];
    p2p_args_t p;
    if ((rc = check_common(what, comm, dtype, stream, req, &dsize)) != XCOLL_OK ||
        (rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK ||
        (rc = check_buf(what, "buf", buf, count)) != XCOLL_OK)
        return rc;
    if (peer < 0 || peer >= comm->size) {
        xc_error("%s: peer %d is not a rank of this communicator (size %d)", what, peer,
                 comm->size);
        return XCOLL_ERR_INVALID_ARG;
    }
    if (tag < 0 || tag >= XCOLL_TAG_LIMIT) {
        xc_error("%s: tag %d is outside [0, XCOLL_TAG_LIMIT)", what, tag);
        return XCOLL_ERR_INVALID_ARG;
    }
    p.rank = comm->rank;
    p.size = comm->size;
    p.peer = peer;
    p.is_send = is_send;
    p.bytes = bytes;
    key[0] = (uint64_t)(XC_COLL_COUNT + (is_send ? 1 : 2));
    key[1] = bytes;
    key[2] = (uint64_t)peer;
    key[3] = 0;
    if ((rc = xc_comm_get_sched(comm, key, build_p2p, &p, &cs)) != XCOLL_OK)
        return rc;
    return xc_request_post(comm, cs, is_send ? "send" : "recv", is_send ? buf : NULL,
                           is_send ? NULL : (void *)(uintptr_t)buf, tag, stream, req);
}

xcoll_status_t xcoll_isend(const void *buf, size_t count, xcoll_dtype_t dtype, int peer, int tag,
                           xcoll_comm_t comm, void *stream, xcoll_request_t *req)
{
    return post_p2p("xcoll_send", buf, count, dtype, peer, tag, comm, stream, req, 1);
}

xcoll_status_t xcoll_irecv(void *buf, size_t count, xcoll_dtype_t dtype, int peer, int tag,
                           xcoll_comm_t comm, void *stream, xcoll_request_t *req)
{
    return post_p2p("xcoll_recv", buf, count, dtype, peer, tag, comm, stream, req, 0);
}

/* ------------------------------------------------------------ blocking forms */

#define BLOCKING(call)                  \
    do {                                \
        xcoll_request_t r_ = NULL;      \
        xcoll_status_t rc_ = (call);    \
        if (rc_ != XCOLL_OK)            \
            return rc_;                 \
        return xcoll_wait(&r_);         \
    } while (0)

xcoll_status_t xcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               xcoll_dtype_t dtype, xcoll_op_t op, xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_iallreduce(sendbuf, recvbuf, count, dtype, op, comm, stream, &r_));
}

xcoll_status_t xcoll_bcast(void *buf, size_t count, xcoll_dtype_t dtype, int root,
                           xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_ibcast(buf, count, dtype, root, comm, stream, &r_));
}

xcoll_status_t xcoll_reduce(const void *sendbuf, void *recvbuf, size_t count, xcoll_dtype_t dtype,
                            xcoll_op_t op, int root, xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_ireduce(sendbuf, recvbuf, count, dtype, op, root, comm, stream, &r_));
}

xcoll_status_t xcoll_allgather(const void *sendbuf, void *recvbuf, size_t count,
                               xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_iallgather(sendbuf, recvbuf, count, dtype, comm, stream, &r_));
}

xcoll_status_t xcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                    xcoll_dtype_t dtype, xcoll_op_t op, xcoll_comm_t comm,
                                    void *stream)
{
    BLOCKING(xcoll_ireduce_scatter(sendbuf, recvbuf, count, dtype, op, comm, stream, &r_));
}

xcoll_status_t xcoll_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                              xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_ialltoall(sendbuf, recvbuf, count, dtype, comm, stream, &r_));
}

xcoll_status_t xcoll_gather(const void *sendbuf, void *recvbuf, size_t count, xcoll_dtype_t dtype,
                            int root, xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_igather(sendbuf, recvbuf, count, dtype, root, comm, stream, &r_));
}

xcoll_status_t xcoll_scatter(const void *sendbuf, void *recvbuf, size_t count,
                             xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_iscatter(sendbuf, recvbuf, count, dtype, root, comm, stream, &r_));
}

xcoll_status_t xcoll_barrier(xcoll_comm_t comm)
{
    BLOCKING(xcoll_ibarrier(comm, &r_));
}

xcoll_status_t xcoll_send(const void *buf, size_t count, xcoll_dtype_t dtype, int peer, int tag,
                          xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_isend(buf, count, dtype, peer, tag, comm, stream, &r_));
}

xcoll_status_t xcoll_recv(void *buf, size_t count, xcoll_dtype_t dtype, int peer, int tag,
                          xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_irecv(buf, count, dtype, peer, tag, comm, stream, &r_));
}
