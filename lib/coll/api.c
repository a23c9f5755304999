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
    size_t one;
    /* no divisions: this runs twice per call */
    if (__builtin_mul_overflow(count, dsize, &one) || __builtin_mul_overflow(one, blocks, bytes)) {
        xc_error("%s: count %zu of %zu-byte elements%s overflows size_t", what, count, dsize,
                 blocks > 1 ? " times the number of ranks" : "");
        return XCOLL_ERR_OVERFLOW;
    }
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

/* One call, checked and normalised: what post() needs. */
typedef struct {
    const char *what;        /* "xcoll_allreduce", for errors */
    xc_coll_t coll;
    size_t count;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    int root, in_place;
    const void *sendbuf;     /* per the builders' contract (coll.h) */
    void *recvbuf;
    const xcoll_layout_t *send_layout, *recv_layout;
    void *stream;
    size_t post_src;         /* > 0: after completion, move post_bytes from this */
    size_t post_bytes;       /* offset of RECV to its start (reduce_scatter, MPI layout) */
} call_t;

/* Schedules are cached per (collective, shape): rank and size are fixed
 * per communicator, buffers are bound at post time. */
static xcoll_status_t post(xcoll_comm_t comm, const call_t *c, xcoll_request_t *req)
{
    build_ctx_t b;
    xc_cached_sched_t *cs;
    uint64_t key[4];
    xcoll_status_t rc;
    xc_request_bufs_t bufs;

    /* The selection table is fixed for the communicator's life, so the
     * choice is a function of the key below and may be cached with it.
     * b.why is written only on a miss: clearing it on every call cost a
     * tenth of a small collective's time. */
    memset(&b.a, 0, sizeof(b.a));
    b.built = 0;
    b.why[0] = '\0';
    b.tune = comm->tune;
    b.a.coll = c->coll;
    b.a.rank = comm->rank;
    b.a.size = comm->size;
    b.a.count = c->count;
    b.a.dtype = c->dtype;
    b.a.op = c->op;
    b.a.root = c->root;
    b.a.in_place = c->in_place;
    b.a.fallback = comm->fallback;
    b.a.topo = comm->topo;
    key[0] = (uint64_t)c->coll | (uint64_t)c->dtype << 8 | (uint64_t)c->op << 16 |
             (uint64_t)(c->in_place != 0) << 24;
    key[1] = c->count;
    key[2] = (uint64_t)(uint32_t)c->root;
    key[3] = 0;
    rc = xc_comm_get_sched(comm, key, build_collective, &b, &cs);
    if (rc != XCOLL_OK) {
        comm->failed = 1; /* the other ranks may have gone ahead */
        return rc;
    }
    if (b.built)
        memcpy(cs->why, b.why, sizeof(cs->why));
    if (cs->declined) {
        /* every rank declines the same calls, so no sequence number is used */
        xc_info("%s, count %zu %s %s, root %d: handed back to the caller (%s)",
                xc_coll_name(c->coll), c->count, xcoll_dtype_name(c->dtype),
                xcoll_op_name(c->op), c->root, cs->why);
        xc_sched_release(cs);
        return XCOLL_DECLINED;
    }
    xc_info("%s seq %u: %s, count %zu %s %s, root %d%s%s (%s)", xc_coll_name(c->coll), comm->seq,
            cs->sched.algo, c->count, xcoll_dtype_name(c->dtype), xcoll_op_name(c->op), c->root,
            c->in_place ? ", in place" : "",
            c->send_layout != NULL || c->recv_layout != NULL ? ", through a layout" : "",
            cs->why);
    memset(&bufs, 0, sizeof(bufs));
    bufs.send = c->sendbuf;
    bufs.recv = c->recvbuf;
    bufs.send_layout = c->send_layout;
    bufs.recv_layout = c->recv_layout;
    bufs.post_src = c->post_src;
    bufs.post_bytes = c->post_bytes;
    return xc_request_post(comm, cs, xc_coll_name(c->coll), &bufs, -1, c->stream, req);
}

/* A side of the call that goes through a layout: it must be usable and
 * hold exactly the bytes the collective moves there. */
static xcoll_status_t check_layout(const char *what, const char *side, const xcoll_layout_t *l,
                                   size_t bytes)
{
    if (l->pack == NULL || l->unpack == NULL) {
        xc_error("%s: the %s layout has no %s function", what, side,
                 l->pack == NULL ? "pack" : "unpack");
        return XCOLL_ERR_INVALID_ARG;
    }
    if (l->bytes != bytes) {
        xc_error("%s: the %s layout holds %zu bytes; this call moves %zu there", what, side,
                 l->bytes, bytes);
        return XCOLL_ERR_INVALID_ARG;
    }
    return XCOLL_OK;
}

/* Checks one side of the call: a buffer of `bytes` (count elements times
 * blocks), through its layout if it has one. */
static xcoll_status_t check_side(const char *what, const char *name, const void *buf,
                                 const xcoll_layout_t *layout, size_t count, size_t bytes)
{
    if (layout != NULL)
        return check_layout(what, name, layout, bytes);
    return check_buf(what, name, buf, count);
}

/* In place: XCOLL_IN_PLACE, or (without layouts) the pointer equality the
 * collective documents (`same` computed by the caller). */
static int in_place_of(const xcoll_args_t *g, const void *marker, int same)
{
    if (IN_PLACE(marker))
        return 1;
    return g->send_layout == NULL && g->recv_layout == NULL && same;
}

/* Fills what every call shares, then posts. */
static xcoll_status_t post_call(xcoll_comm_t comm, call_t *c, const xcoll_args_t *g,
                                xc_coll_t coll, const char *what, xcoll_request_t *req)
{
    c->what = what;
    c->coll = coll;
    c->count = g->count;
    c->dtype = g->dtype;
    c->stream = g->stream;
    return post(comm, c, req);
}

/* The send side into c, checked to hold `bytes`; nothing when in place. */
static xcoll_status_t take_send(call_t *c, const xcoll_args_t *g, const char *what,
                                const char *name, size_t bytes)
{
    xcoll_status_t rc;
    if (c->in_place)
        return XCOLL_OK;
    if ((rc = check_side(what, name, g->sendbuf, g->send_layout, g->count, bytes)) != XCOLL_OK)
        return rc;
    c->sendbuf = g->sendbuf;
    c->send_layout = g->send_layout;
    return XCOLL_OK;
}

/* The receive side into c, checked to hold `bytes`. */
static xcoll_status_t take_recv(call_t *c, const xcoll_args_t *g, const char *what,
                                const char *name, size_t bytes)
{
    xcoll_status_t rc;
    if ((rc = check_side(what, name, g->recvbuf, g->recv_layout, g->count, bytes)) != XCOLL_OK)
        return rc;
    c->recvbuf = g->recvbuf;
    c->recv_layout = g->recv_layout;
    return XCOLL_OK;
}

/* Shared checks of a call: *bytes = one block, *total = size blocks. */
static xcoll_status_t check_call(const xcoll_args_t *g, xcoll_comm_t comm, xcoll_request_t *req,
                                 const char *what, int reduction, int rooted, size_t *bytes,
                                 size_t *total)
{
    size_t dsize;
    xcoll_status_t rc;
    if ((rc = check_common(what, comm, g->dtype, g->stream, req, &dsize)) != XCOLL_OK ||
        (reduction && (rc = check_op(what, g->dtype, g->op)) != XCOLL_OK) ||
        (rooted && (rc = check_root(what, comm, g->root)) != XCOLL_OK) ||
        (rc = check_size(what, g->count, dsize, 1, bytes)) != XCOLL_OK ||
        (rc = check_size(what, g->count, dsize, (size_t)comm->size, total)) != XCOLL_OK)
        return rc;
    return XCOLL_OK;
}

/* ---------------------------------------------------------------- allreduce */

static xcoll_status_t start_allreduce(const xcoll_args_t *g, xcoll_comm_t comm,
                                      xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 1, 0, &bytes, &total)) != XCOLL_OK)
        return rc;
    c.in_place = in_place_of(g, g->sendbuf, g->sendbuf == g->recvbuf);
    c.op = g->op;
    if ((rc = take_send(&c, g, what, "sendbuf", bytes)) != XCOLL_OK ||
        (rc = take_recv(&c, g, what, "recvbuf", bytes)) != XCOLL_OK)
        return rc;
    return post_call(comm, &c, g, XC_COLL_ALLREDUCE, what, req);
}

/* -------------------------------------------------------------------- bcast */

static xcoll_status_t start_bcast(const xcoll_args_t *g, xcoll_comm_t comm, xcoll_request_t *req,
                                  const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 0, 1, &bytes, &total)) != XCOLL_OK ||
        (rc = take_recv(&c, g, what, "buf", bytes)) != XCOLL_OK)
        return rc;
    c.op = XCOLL_SUM;
    c.root = g->root;
    return post_call(comm, &c, g, XC_COLL_BCAST, what, req);
}

/* ------------------------------------------------------------------- reduce */

static xcoll_status_t start_reduce(const xcoll_args_t *g, xcoll_comm_t comm,
                                   xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 1, 1, &bytes, &total)) != XCOLL_OK)
        return rc;
    if (comm->rank == g->root) {
        if ((rc = take_recv(&c, g, what, "recvbuf at the root", bytes)) != XCOLL_OK)
            return rc;
        c.in_place = in_place_of(g, g->sendbuf, g->sendbuf == g->recvbuf);
    } else if (IN_PLACE(g->sendbuf)) {
        xc_error("%s: XCOLL_IN_PLACE is only meaningful at the root", what);
        return XCOLL_ERR_INVALID_ARG;
    }
    if ((rc = take_send(&c, g, what, "sendbuf", bytes)) != XCOLL_OK)
        return rc;
    c.op = g->op;
    c.root = g->root;
    return post_call(comm, &c, g, XC_COLL_REDUCE, what, req);
}

/* ---------------------------------------------------------------- allgather */

static xcoll_status_t start_allgather(const xcoll_args_t *g, xcoll_comm_t comm,
                                      xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 0, 0, &bytes, &total)) != XCOLL_OK ||
        (rc = take_recv(&c, g, what, "recvbuf", total)) != XCOLL_OK)
        return rc;
    c.in_place = in_place_of(g, g->sendbuf,
                             g->recvbuf != NULL &&
                                 g->sendbuf == (char *)g->recvbuf + (size_t)comm->rank * bytes);
    if ((rc = take_send(&c, g, what, "sendbuf", bytes)) != XCOLL_OK)
        return rc;
    c.op = XCOLL_SUM;
    return post_call(comm, &c, g, XC_COLL_ALLGATHER, what, req);
}

/* ----------------------------------------------------------- reduce_scatter */

static xcoll_status_t start_reduce_scatter(const xcoll_args_t *g, xcoll_comm_t comm,
                                           xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    char *input;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 1, 0, &bytes, &total)) != XCOLL_OK)
        return rc;
    c.op = g->op;
    if (IN_PLACE(g->sendbuf)) {
        /* MPI layout: the input fills recvbuf and the result belongs in its
         * first block; the builders leave it in block `rank`, so move it. */
        if ((rc = take_recv(&c, g, what, "recvbuf", total)) != XCOLL_OK)
            return rc;
        c.in_place = 1;
        c.post_src = (size_t)comm->rank * bytes;
        c.post_bytes = bytes;
        return post_call(comm, &c, g, XC_COLL_REDUCE_SCATTER, what, req);
    }
    input = (char *)(uintptr_t)g->sendbuf;
    if (g->send_layout == NULL && g->recv_layout == NULL && g->count > 0 &&
        (char *)g->recvbuf == input + (size_t)comm->rank * bytes) { /* NCCL layout */
        c.in_place = 1;
        c.recvbuf = input;
        return post_call(comm, &c, g, XC_COLL_REDUCE_SCATTER, what, req);
    }
    if ((rc = take_send(&c, g, what, "sendbuf", total)) != XCOLL_OK ||
        (rc = take_recv(&c, g, what, "recvbuf", bytes)) != XCOLL_OK)
        return rc;
    return post_call(comm, &c, g, XC_COLL_REDUCE_SCATTER, what, req);
}

/* ----------------------------------------------------------------- alltoall */

static xcoll_status_t start_alltoall(const xcoll_args_t *g, xcoll_comm_t comm,
                                     xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 0, 0, &bytes, &total)) != XCOLL_OK ||
        (rc = take_recv(&c, g, what, "recvbuf", total)) != XCOLL_OK)
        return rc;
    c.in_place = in_place_of(g, g->sendbuf, g->sendbuf == g->recvbuf);
    if ((rc = take_send(&c, g, what, "sendbuf", total)) != XCOLL_OK)
        return rc;
    c.op = XCOLL_SUM;
    return post_call(comm, &c, g, XC_COLL_ALLTOALL, what, req);
}

/* ------------------------------------------------------------------- gather */

static xcoll_status_t start_gather(const xcoll_args_t *g, xcoll_comm_t comm,
                                   xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 0, 1, &bytes, &total)) != XCOLL_OK)
        return rc;
    if (comm->rank == g->root) {
        if ((rc = take_recv(&c, g, what, "recvbuf at the root", total)) != XCOLL_OK)
            return rc;
        c.in_place = in_place_of(g, g->sendbuf,
                                 g->recvbuf != NULL &&
                                     g->sendbuf == (char *)g->recvbuf + (size_t)g->root * bytes);
    } else if (IN_PLACE(g->sendbuf)) {
        xc_error("%s: XCOLL_IN_PLACE is only meaningful at the root", what);
        return XCOLL_ERR_INVALID_ARG;
    }
    if ((rc = take_send(&c, g, what, "sendbuf", bytes)) != XCOLL_OK)
        return rc;
    c.op = XCOLL_SUM;
    c.root = g->root;
    return post_call(comm, &c, g, XC_COLL_GATHER, what, req);
}

/* ------------------------------------------------------------------ scatter */

static xcoll_status_t start_scatter(const xcoll_args_t *g, xcoll_comm_t comm,
                                    xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 0, 1, &bytes, &total)) != XCOLL_OK)
        return rc;
    if (comm->rank == g->root) {
        int ip = in_place_of(g, g->recvbuf,
                             g->sendbuf != NULL &&
                                 g->recvbuf == (const char *)g->sendbuf + (size_t)g->root * bytes);
        /* the root's send side is read even in place (its receive side is not) */
        if ((rc = take_send(&c, g, what, "sendbuf at the root", total)) != XCOLL_OK)
            return rc;
        c.in_place = ip;
    } else if (IN_PLACE(g->recvbuf)) {
        xc_error("%s: XCOLL_IN_PLACE is only meaningful at the root", what);
        return XCOLL_ERR_INVALID_ARG;
    }
    if (!c.in_place && (rc = take_recv(&c, g, what, "recvbuf", bytes)) != XCOLL_OK)
        return rc;
    c.op = XCOLL_SUM;
    c.root = g->root;
    return post_call(comm, &c, g, XC_COLL_SCATTER, what, req);
}

/* ------------------------------------------------------------------ barrier */

static xcoll_status_t start_barrier(const xcoll_args_t *g, xcoll_comm_t comm,
                                    xcoll_request_t *req, const char *what)
{
    size_t dsize;
    xcoll_status_t rc = check_common(what, comm, XCOLL_UINT8, NULL, req, &dsize);
    xcoll_args_t none;
    call_t c;
    (void)g;
    if (rc != XCOLL_OK)
        return rc;
    memset(&none, 0, sizeof(none));
    none.dtype = XCOLL_UINT8;
    memset(&c, 0, sizeof(c));
    c.op = XCOLL_SUM;
    return post_call(comm, &c, &none, XC_COLL_BARRIER, what, req);
}

/* --------------------------------------------------- any collective, as data */

typedef xcoll_status_t (*start_fn)(const xcoll_args_t *g, xcoll_comm_t comm,
                                   xcoll_request_t *req, const char *what);

static const struct {
    start_fn start;
    const char *what;
} starts[XCOLL_COLL_COUNT] = {
    {start_allreduce, "xcoll_allreduce"},   {start_bcast, "xcoll_bcast"},
    {start_reduce, "xcoll_reduce"},         {start_allgather, "xcoll_allgather"},
    {start_reduce_scatter, "xcoll_reduce_scatter"},
    {start_alltoall, "xcoll_alltoall"},     {start_gather, "xcoll_gather"},
    {start_scatter, "xcoll_scatter"},       {start_barrier, "xcoll_barrier"},
};

xcoll_status_t xcoll_start(const xcoll_args_t *args, xcoll_comm_t comm, xcoll_request_t *req)
{
    xc_log_init();
    if (req != NULL)
        *req = NULL;
    if (args == NULL) {
        xc_error("xcoll_start: args is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    if ((unsigned)args->coll >= XCOLL_COLL_COUNT) {
        xc_error("xcoll_start: collective %d is not an xcoll_coll_t", (int)args->coll);
        return XCOLL_ERR_INVALID_ARG;
    }
    return starts[args->coll].start(args, comm, req, starts[args->coll].what);
}

xcoll_status_t xcoll_declines(xcoll_comm_t comm, const xcoll_args_t *args, int *declined)
{
    build_ctx_t b;
    xc_cached_sched_t *cs;
    uint64_t key[4], memo[2];
    unsigned slot;
    xcoll_status_t rc;
    const char *what = "xcoll_declines";

    xc_log_init();
    if (declined == NULL || args == NULL) {
        xc_error("%s: %s is NULL", what, declined == NULL ? "declined" : "args");
        return XCOLL_ERR_INVALID_ARG;
    }
    *declined = 0;
    if ((rc = xc_comm_check(comm, what)) != XCOLL_OK)
        return rc;
    if ((unsigned)args->coll >= XCOLL_COLL_COUNT) {
        xc_error("%s: collective %d is not an xcoll_coll_t", what, (int)args->coll);
        return XCOLL_ERR_INVALID_ARG;
    }
    if (!comm->fallback)
        return XCOLL_OK;
    if (!xc_dtype_valid(args->dtype) || !xc_op_valid(args->op)) {
        xc_error("%s: invalid datatype %d or operator %d", what, (int)args->dtype,
                 (int)args->op);
        return XCOLL_ERR_INVALID_ARG;
    }
    memo[0] = ((uint64_t)args->coll + 1) | (uint64_t)args->dtype << 8 | (uint64_t)args->op << 16 |
              (uint64_t)(uint32_t)args->root << 24;
    memo[1] = args->count;
    slot = (unsigned)((memo[0] * 0x9E3779B97F4A7C15ULL ^ memo[1] * 0xC2B2AE3D27D4EB4FULL) >> 58) %
           XC_DECLINE_MEMO_SIZE;
    if (comm->declines[slot].key[0] == memo[0] && comm->declines[slot].key[1] == memo[1]) {
        *declined = comm->declines[slot].declined;
        return XCOLL_OK;
    }
    /* the selection itself, as post() would make it (builders decline on
     * sizes and the topology only, never on buffers or in-place) */
    memset(&b, 0, sizeof(b));
    b.tune = comm->tune;
    b.a.coll = (xc_coll_t)args->coll;
    b.a.rank = comm->rank;
    b.a.size = comm->size;
    b.a.count = args->count;
    b.a.dtype = args->dtype;
    b.a.op = args->op;
    b.a.root = args->root;
    b.a.fallback = 1;
    b.a.topo = comm->topo;
    key[0] = (uint64_t)args->coll | (uint64_t)args->dtype << 8 | (uint64_t)args->op << 16;
    key[1] = args->count;
    key[2] = (uint64_t)(uint32_t)args->root;
    key[3] = 0;
    if ((rc = xc_comm_get_sched(comm, key, build_collective, &b, &cs)) != XCOLL_OK)
        return rc;
    if (b.built)
        memcpy(cs->why, b.why, sizeof(cs->why));
    *declined = cs->declined;
    xc_sched_release(cs);
    comm->declines[slot].key[0] = memo[0];
    comm->declines[slot].key[1] = memo[1];
    comm->declines[slot].declined = *declined;
    return XCOLL_OK;
}

/* The xcoll_i* calls: the same, from their argument lists. */
static xcoll_args_t args_of(xcoll_coll_t coll, const void *sendbuf, void *recvbuf, size_t count,
                            xcoll_dtype_t dtype, xcoll_op_t op, int root, void *stream)
{
    xcoll_args_t g;
    memset(&g, 0, sizeof(g));
    g.coll = coll;
    g.sendbuf = sendbuf;
    g.recvbuf = recvbuf;
    g.count = count;
    g.dtype = dtype;
    g.op = op;
    g.root = root;
    g.stream = stream;
    return g;
}

xcoll_status_t xcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                xcoll_dtype_t dtype, xcoll_op_t op, xcoll_comm_t comm,
                                void *stream, xcoll_request_t *req)
{
    xcoll_args_t g = args_of(XCOLL_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, stream);
    return start_allreduce(&g, comm, req, "xcoll_allreduce");
}

xcoll_status_t xcoll_ibcast(void *buf, size_t count, xcoll_dtype_t dtype, int root,
                            xcoll_comm_t comm, void *stream, xcoll_request_t *req)
{
    xcoll_args_t g = args_of(XCOLL_COLL_BCAST, NULL, buf, count, dtype, XCOLL_SUM, root, stream);
    return start_bcast(&g, comm, req, "xcoll_bcast");
}

xcoll_status_t xcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                             xcoll_dtype_t dtype, xcoll_op_t op, int root, xcoll_comm_t comm,
                             void *stream, xcoll_request_t *req)
{
    xcoll_args_t g = args_of(XCOLL_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, stream);
    return start_reduce(&g, comm, req, "xcoll_reduce");
}

xcoll_status_t xcoll_iallgather(const void *sendbuf, void *recvbuf, size_t count,
                                xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream,
                                xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_ALLGATHER, sendbuf, recvbuf, count, dtype, XCOLL_SUM, 0, stream);
    return start_allgather(&g, comm, req, "xcoll_allgather");
}

xcoll_status_t xcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                     xcoll_dtype_t dtype, xcoll_op_t op, xcoll_comm_t comm,
                                     void *stream, xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_REDUCE_SCATTER, sendbuf, recvbuf, count, dtype, op, 0, stream);
    return start_reduce_scatter(&g, comm, req, "xcoll_reduce_scatter");
}

xcoll_status_t xcoll_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                               xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream,
                               xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, XCOLL_SUM, 0, stream);
    return start_alltoall(&g, comm, req, "xcoll_alltoall");
}

xcoll_status_t xcoll_igather(const void *sendbuf, void *recvbuf, size_t count,
                             xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream,
                             xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_GATHER, sendbuf, recvbuf, count, dtype, XCOLL_SUM, root, stream);
    return start_gather(&g, comm, req, "xcoll_gather");
}

xcoll_status_t xcoll_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                              xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream,
                              xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_SCATTER, sendbuf, recvbuf, count, dtype, XCOLL_SUM, root, stream);
    return start_scatter(&g, comm, req, "xcoll_scatter");
}

xcoll_status_t xcoll_ibarrier(xcoll_comm_t comm, xcoll_request_t *req)
{
    return start_barrier(NULL, comm, req, "xcoll_barrier");
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
    xc_request_bufs_t bufs;
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
    memset(&bufs, 0, sizeof(bufs));
    bufs.send = is_send ? buf : NULL;
    bufs.recv = is_send ? NULL : (void *)(uintptr_t)buf;
    return xc_request_post(comm, cs, is_send ? "send" : "recv", &bufs, tag, stream, req);
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
