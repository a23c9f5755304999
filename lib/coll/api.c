/* The public collective and point-to-point calls: check every argument,
 * normalise in-place forms to the builders' buffer contract (coll.h), get
 * the (cached) schedule, post it. Blocking calls are post + wait. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "tune.h"
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
    /* the marker is the address 1: where it is not a documented in-place
     * form it is no buffer, whatever the count */
    if (IN_PLACE(buf)) {
        xc_error("%s: %s is XCOLL_IN_PLACE, which is no buffer there", what, name);
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
    char stamp[XC_STAMP_BYTES];
} build_ctx_t;

static xcoll_status_t check_no_overlap(const xc_coll_args_t *a);

static xcoll_status_t build_collective(void *ctx, xc_sched_t *s)
{
    build_ctx_t *b = ctx;
    xcoll_status_t rc;
    b->built = 1;
    /* a cached schedule was checked when it was built for these counts */
    if ((rc = check_no_overlap(&b->a)) != XCOLL_OK)
        return rc;
    /* why is read by info logs only: not formatted without them */
    rc = xc_select_and_build(s, &b->a, b->tune, xc_log_level >= XC_LOG_INFO ? b->why : NULL,
                             sizeof(b->why));
    if (rc == XCOLL_OK) {
        s->after = s->check_step; /* the acks too wait for the verdict */
        rc = xc_sched_add_acks(s, XC_ACK_ABOVE_BYTES);
        s->after = -1;
    }
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
    /* v-variants: counts and displacements (coll.h), and their words in
     * one array for the schedule cache (NULL where unused) */
    const size_t *scounts, *sdispls, *rcounts, *rdispls;
    const size_t *vec;
    size_t nvec;
    int by_shape;            /* vec is an alltoallv's shape (see post_vcall) */
    int no_fallback;         /* xcoll_args_t.no_fallback */
} call_t;

/* FNV-1a over the words of a v-variant's counts and displacements. */
static uint64_t vec_hash(const size_t *vec, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t i;
    for (i = 0; i < n; i++)
        h = (h ^ (uint64_t)vec[i]) * 0x100000001b3ULL;
    return n > 0 ? h : 0;
}

/* What this rank called, for the call check (XCOLL_CHECK): what every rank
 * must have alike. Data movement by bytes (ranks may describe the same
 * bytes with other types, as MPI lets them); a v-variant's counts differ
 * by rank, so only its collective and root. */
static void stamp_of(xc_coll_t k, size_t count, xcoll_dtype_t dtype, xcoll_op_t op, int root_rank,
                     char *out)
{
    const int rooted = k == XC_COLL_BCAST || k == XC_COLL_REDUCE || k == XC_COLL_GATHER ||
                       k == XC_COLL_SCATTER || k == XC_COLL_GATHERV || k == XC_COLL_SCATTERV;
    char root[24] = "";
    memset(out, 0, XC_STAMP_BYTES);
    if (rooted)
        snprintf(root, sizeof(root), " root %d", root_rank);
    if (k == XC_COLL_ALLREDUCE || k == XC_COLL_REDUCE || k == XC_COLL_REDUCE_SCATTER)
        snprintf(out, XC_STAMP_BYTES, "%s %zu %s %s%s", xc_coll_name(k), count,
                 xcoll_dtype_name(dtype), xcoll_op_name(op), root);
    else if (k == XC_COLL_BARRIER || xc_coll_is_vector(k))
        snprintf(out, XC_STAMP_BYTES, "%s%s", xc_coll_name(k), root);
    else
        snprintf(out, XC_STAMP_BYTES, "%s %zu B%s", xc_coll_name(k),
                 count * xcoll_dtype_size(dtype), root);
}

/* post_locked's answer when the schedule of a call's shape is running
 * with other counts (or cannot be rebound): post by the exact counts
 * instead. Never returned to a caller. */
#define XC_NEEDS_EXACT XCOLL_INPROGRESS

/* A call cached by shape: a schedule just built is checked to be
 * rebindable, one found is bound to this call's counts, unless a request
 * still runs it with others. */
static xcoll_status_t bind_shape(xc_cached_sched_t *cs, build_ctx_t *b)
{
    xcoll_status_t rc;
    if (b->built) {
        cs->rebindable = xc_alltoallv_rebind(&cs->sched, &b->a, 1);
        return XCOLL_OK;
    }
    /* the cache's reference and ours: no request runs it */
    if (!cs->rebindable || cs->refs != 2) {
        xc_sched_release(cs);
        return XC_NEEDS_EXACT;
    }
    /* checked at every build, so at every binding too */
    if ((rc = check_no_overlap(&b->a)) != XCOLL_OK) {
        xc_sched_release(cs);
        return rc;
    }
    xc_alltoallv_rebind(&cs->sched, &b->a, 0);
    return XCOLL_OK;
}

/* Schedules are cached per (collective, shape): rank and size are fixed
 * per communicator, buffers are bound at post time. */
static xcoll_status_t post_found(xcoll_comm_t comm, const call_t *c, xc_cached_sched_t *cs,
                                 xcoll_request_t *req);

static xcoll_status_t post_locked(xcoll_comm_t comm, const call_t *c, xcoll_request_t *req)
{
    build_ctx_t b;
    xc_cached_sched_t *cs;
    uint64_t key[4];
    xcoll_status_t rc;

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
    /* by the collective, not by this rank's counts: a gatherv's non-root
     * ranks have none, and must decide as the root does */
    b.a.fallback = xc_coll_is_vector(c->coll) || c->no_fallback ? 0 : comm->fallback;
    b.a.topo = comm->topo;
    b.a.scounts = c->scounts;
    b.a.sdispls = c->sdispls;
    b.a.rcounts = c->rcounts;
    b.a.rdispls = c->rdispls;
    if (comm->check) {
        stamp_of(c->coll, c->count, c->dtype, c->op, c->root, b.stamp);
        b.a.stamp = b.stamp;
    }
    /* bit 26: a call that may not fall back, where others of its shape
     * would (its schedule is another, or exists where theirs declines) */
    key[0] = (uint64_t)c->coll | (uint64_t)c->dtype << 8 | (uint64_t)c->op << 16 |
             (uint64_t)(c->in_place != 0) << 24 |
             (uint64_t)(c->no_fallback && comm->fallback) << 26;
    key[1] = c->count;
    key[2] = (uint64_t)(uint32_t)c->root;
    key[3] = vec_hash(c->vec, c->nvec);
    if (c->by_shape) {
        /* one schedule for every count its selection rule covers */
        key[0] |= (uint64_t)1 << 25;
        key[1] = (uint64_t)(uintptr_t)xc_tune_match(
            comm->tune != NULL ? comm->tune : xc_tune_builtin(), c->coll, comm->size,
            xc_tune_per_node(&b.a), xc_tune_message_bytes(&b.a));
    }
    rc = xc_comm_get_sched(comm, key, c->vec, c->nvec, build_collective, &b, &cs);
    if (rc == XCOLL_OK && c->by_shape)
        rc = bind_shape(cs, &b);
    if (rc == XCOLL_ERR_INVALID_ARG || rc == XC_NEEDS_EXACT)
        return rc; /* counts this rank alone got wrong: nothing was posted */
    if (rc != XCOLL_OK) {
        comm->failed = 1; /* the other ranks may have gone ahead */
        return rc;
    }
    if (b.built)
        memcpy(cs->why, b.why, sizeof(cs->why));
    /* xc_comm_get_sched left cache_last at cs's slot, hit or built */
    if (!cs->declined && !c->by_shape && !c->no_fallback && c->nvec == 0 &&
        c->send_layout == NULL && c->recv_layout == NULL && c->stream == NULL &&
        c->post_bytes == 0) {
        comm->express.cs = cs;
        comm->express.slot = comm->cache_last;
        comm->express.coll = (int)c->coll;
        comm->express.count = c->count;
        comm->express.dtype = c->dtype;
        comm->express.op = c->op;
        comm->express.root = c->root;
        comm->express.in_place = c->in_place;
    }
    if (cs->declined) {
        /* every rank declines the same calls, so no sequence number is used */
        xc_info("%s, count %zu %s %s, root %d: handed back to the caller (%s)",
                xc_coll_name(c->coll), c->count, xcoll_dtype_name(c->dtype),
                xcoll_op_name(c->op), c->root, cs->why);
        xc_sched_release(cs);
        return XCOLL_DECLINED;
    }
    return post_found(comm, c, cs, req);
}

/* A call with its schedule in hand (a reference taken for it): posted.
 * Reads c's shape, buffers, layouts, move and stream only (express). */
static xcoll_status_t post_found(xcoll_comm_t comm, const call_t *c, xc_cached_sched_t *cs,
                                 xcoll_request_t *req)
{
    xc_request_bufs_t bufs;
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

/* The cache, the request and the transports under the progress thread's
 * lock (when it runs). */
static xcoll_status_t post(xcoll_comm_t comm, const call_t *c, xcoll_request_t *req)
{
    int locked = xc_lock();
    xcoll_status_t rc = post_locked(comm, c, req);
    xc_unlock(locked);
    return rc;
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
    c->no_fallback = g->no_fallback != 0;
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

/* The express lane. A loop calls one shape again and again, and every
 * such call would check its arguments, make its cache key and find the
 * schedule the same way the last call did. A call whose shape (collective,
 * count, type, operator, root, in place or not) is the last plain call's
 * on its communicator (no layouts, stream or vectors: post_locked says
 * which) needs only what can differ: the communicator still usable, the
 * request pointer and its buffers. XC_NOT_EXPRESS: take the full path
 * (which then reports any error). send is NULL in place. */
#define XC_NOT_EXPRESS XCOLL_INPROGRESS

static xcoll_status_t express(xcoll_comm_t comm, xc_coll_t coll, const xcoll_args_t *g,
                              xcoll_op_t op, int root, int in_place, const void *send, void *recv,
                              xcoll_request_t *req, const char *what)
{
    xc_cached_sched_t *cs;
    xcoll_status_t rc;
    call_t c;
    int locked;
    /* a marker where a buffer belongs fails on the full path */
    if (g->stream != NULL || g->send_layout != NULL || g->recv_layout != NULL || req == NULL ||
        g->no_fallback || IN_PLACE(send) || IN_PLACE(recv) || !xc_comm_usable(comm))
        return XC_NOT_EXPRESS;
    locked = xc_lock();
    cs = comm->express.cs;
    if (cs == NULL || comm->express.coll != (int)coll || comm->express.count != g->count ||
        comm->express.dtype != g->dtype || comm->express.op != op ||
        comm->express.root != root || comm->express.in_place != in_place) {
        xc_unlock(locked);
        return XC_NOT_EXPRESS;
    }
    /* as xc_comm_get_sched's hit */
    cs->last_use = ++comm->cache_clock;
    cs->refs++;
    comm->cache_last = comm->express.slot;
    /* what post_found reads, and no more: clearing all of c cost a tenth
     * of this lane */
    c.what = what;
    c.coll = coll;
    c.count = g->count;
    c.dtype = g->dtype;
    c.op = op;
    c.root = root;
    c.in_place = in_place;
    c.sendbuf = send;
    c.recvbuf = recv;
    c.send_layout = c.recv_layout = NULL;
    c.post_src = c.post_bytes = 0;
    c.stream = NULL;
    rc = post_found(comm, &c, cs, req);
    xc_unlock(locked);
    return rc;
}

/* ---------------------------------------------------------------- allreduce */

static xcoll_status_t start_allreduce(const xcoll_args_t *g, xcoll_comm_t comm,
                                      xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    const int same = in_place_of(g, g->sendbuf, g->sendbuf == g->recvbuf);
    /* buffers the full path takes (check_buf): a NULL one goes there to fail */
    if (g->recvbuf != NULL && g->sendbuf != NULL &&
        (rc = express(comm, XC_COLL_ALLREDUCE, g, g->op, 0, same, same ? NULL : g->sendbuf,
                      g->recvbuf, req, what)) != XC_NOT_EXPRESS)
        return rc;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 1, 0, &bytes, &total)) != XCOLL_OK)
        return rc;
    c.in_place = same;
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
    if (g->recvbuf != NULL &&
        (rc = express(comm, XC_COLL_BCAST, g, XCOLL_SUM, g->root, 0, NULL, g->recvbuf, req,
                      what)) != XC_NOT_EXPRESS)
        return rc;
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
    /* at the root */
    const int same = in_place_of(g, g->sendbuf, g->sendbuf == g->recvbuf);
    if (g->sendbuf != NULL && xc_comm_usable(comm)) {
        const int root = comm->rank == g->root;
        if ((root ? g->recvbuf != NULL : !IN_PLACE(g->sendbuf)) &&
            (rc = express(comm, XC_COLL_REDUCE, g, g->op, g->root, root && same,
                          root && same ? NULL : g->sendbuf, root ? g->recvbuf : NULL, req,
                          what)) != XC_NOT_EXPRESS)
            return rc;
    }
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 1, 1, &bytes, &total)) != XCOLL_OK)
        return rc;
    if (comm->rank == g->root) {
        if ((rc = take_recv(&c, g, what, "recvbuf at the root", bytes)) != XCOLL_OK)
            return rc;
        c.in_place = same;
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

/* 1 if p is block `rank` of base, blocks of `block` bytes: the in-place
 * layouts of allgather and reduce_scatter. In integers: a count that
 * overflows (the full path reports it) must not make an address. */
static int is_block_of(const void *p, const void *base, int rank, size_t block)
{
    return (uintptr_t)p == (uintptr_t)base + (size_t)rank * block;
}

/* ---------------------------------------------------------------- allgather */

static xcoll_status_t start_allgather(const xcoll_args_t *g, xcoll_comm_t comm,
                                      xcoll_request_t *req, const char *what)
{
    size_t bytes, total;
    xcoll_status_t rc;
    call_t c;
    if (g->recvbuf != NULL && g->sendbuf != NULL && xc_dtype_valid(g->dtype) &&
        xc_comm_usable(comm)) {
        /* where count * size wraps, the count is not the express shape's,
         * whose bytes fit, and the lane is not taken */
        const int same = IN_PLACE(g->sendbuf) ||
                         is_block_of(g->sendbuf, g->recvbuf, comm->rank,
                                     g->count * xcoll_dtype_size(g->dtype));
        if ((rc = express(comm, XC_COLL_ALLGATHER, g, XCOLL_SUM, 0, same,
                          same ? NULL : g->sendbuf, g->recvbuf, req, what)) != XC_NOT_EXPRESS)
            return rc;
    }
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 0, 0, &bytes, &total)) != XCOLL_OK ||
        (rc = take_recv(&c, g, what, "recvbuf", total)) != XCOLL_OK)
        return rc;
    c.in_place = in_place_of(g, g->sendbuf,
                             g->recvbuf != NULL &&
                                 is_block_of(g->sendbuf, g->recvbuf, comm->rank, bytes));
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
    /* the MPI layout in place moves its result after completion: the full
     * path only */
    if (g->sendbuf != NULL && g->recvbuf != NULL && !IN_PLACE(g->sendbuf) &&
        xc_dtype_valid(g->dtype) && xc_comm_usable(comm)) {
        const char *in = g->sendbuf;
        const int nccl = g->count > 0 &&
                         is_block_of(g->recvbuf, in, comm->rank,
                                     g->count * xcoll_dtype_size(g->dtype));
        if ((rc = express(comm, XC_COLL_REDUCE_SCATTER, g, g->op, 0, nccl, nccl ? NULL : in,
                          nccl ? (void *)(uintptr_t)in : g->recvbuf, req, what)) !=
            XC_NOT_EXPRESS)
            return rc;
    }
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
        is_block_of(g->recvbuf, input, comm->rank, bytes)) { /* NCCL layout */
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
    const int same = in_place_of(g, g->sendbuf, g->sendbuf == g->recvbuf);
    if (g->recvbuf != NULL && g->sendbuf != NULL &&
        (rc = express(comm, XC_COLL_ALLTOALL, g, XCOLL_SUM, 0, same, same ? NULL : g->sendbuf,
                      g->recvbuf, req, what)) != XC_NOT_EXPRESS)
        return rc;
    memset(&c, 0, sizeof(c));
    if ((rc = check_call(g, comm, req, what, 0, 0, &bytes, &total)) != XCOLL_OK ||
        (rc = take_recv(&c, g, what, "recvbuf", total)) != XCOLL_OK)
        return rc;
    c.in_place = same;
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
    xcoll_status_t rc;
    xcoll_args_t none;
    call_t c;
    (void)g;
    memset(&none, 0, sizeof(none));
    none.dtype = XCOLL_UINT8;
    if ((rc = express(comm, XC_COLL_BARRIER, &none, XCOLL_SUM, 0, 0, NULL, NULL, req, what)) !=
        XC_NOT_EXPRESS)
        return rc;
    if ((rc = check_common(what, comm, XCOLL_UINT8, NULL, req, &dsize)) != XCOLL_OK)
        return rc;
    memset(&c, 0, sizeof(c));
    c.op = XCOLL_SUM;
    return post_call(comm, &c, &none, XC_COLL_BARRIER, what, req);
}

/* -------------------------------------------------------------- v-variants */

/* One side's blocks: counts[j] elements at displs[j], j < size. Checks the
 * arrays are there and every block's end fits in size_t bytes; *total
 * gets the bytes of all blocks. */
static xcoll_status_t check_blocks(const char *what, const char *counts_name,
                                   const char *displs_name, const size_t *counts,
                                   const size_t *displs, int size, size_t dsize, size_t *total)
{
    size_t end, sum = 0;
    int j;
    if (counts == NULL || displs == NULL) {
        xc_error("%s: %s is NULL", what, counts == NULL ? counts_name : displs_name);
        return XCOLL_ERR_INVALID_ARG;
    }
    for (j = 0; j < size; j++) {
        if (__builtin_add_overflow(displs[j], counts[j], &end) ||
            __builtin_mul_overflow(end, dsize, &end) || __builtin_add_overflow(sum, counts[j], &sum)) {
            xc_error("%s: %s[%d] = %zu at %s[%d] = %zu of %zu-byte elements overflows size_t",
                     what, counts_name, j, counts[j], displs_name, j, displs[j], dsize);
            return XCOLL_ERR_OVERFLOW;
        }
    }
    if (__builtin_mul_overflow(sum, dsize, total)) {
        xc_error("%s: the %s add up to more bytes than size_t holds", what, counts_name);
        return XCOLL_ERR_OVERFLOW;
    }
    return XCOLL_OK;
}

static int cmp_block(const void *x, const void *y)
{
    const size_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* MPI's rule, and xcoll's: no element of a receive buffer is written by
 * two blocks. Checked when a schedule is built for new counts (a cached
 * one was checked then), in O(P log P). */
static xcoll_status_t check_no_overlap(const xc_coll_args_t *a)
{
    size_t *b, n = 0;
    int j;
    xcoll_status_t rc = XCOLL_OK;
    const char *name = xc_coll_name(a->coll);
    size_t end = 0;
    if (a->rcounts == NULL)
        return XCOLL_OK;
    /* blocks in rank order, the common layout, need no sort */
    for (j = 0; j < a->size; j++) {
        if (a->rcounts[j] == 0)
            continue;
        if (a->rdispls[j] < end)
            break;
        end = a->rdispls[j] + a->rcounts[j];
    }
    if (j == a->size)
        return XCOLL_OK;
    b = malloc(2 * (size_t)a->size * sizeof(size_t));
    if (b == NULL) {
        xc_error("%s: out of memory checking %d receive blocks", name, a->size);
        return XCOLL_ERR_NO_MEMORY;
    }
    for (j = 0; j < a->size; j++) {
        if (a->rcounts[j] == 0)
            continue;
        b[2 * n] = a->rdispls[j];
        b[2 * n + 1] = (size_t)j;
        n++;
    }
    qsort(b, n, 2 * sizeof(size_t), cmp_block);
    for (j = 1; (size_t)j < n; j++) {
        const size_t p = b[2 * j - 1], q = b[2 * j + 1];
        if (a->rdispls[p] + a->rcounts[p] > a->rdispls[q]) {
            xc_error("xcoll_%s: receive blocks %zu (%zu elements at %zu) and %zu (at %zu) "
                     "overlap", name, p, a->rcounts[p], a->rdispls[p], q, a->rdispls[q]);
            rc = XCOLL_ERR_INVALID_ARG;
            break;
        }
    }
    free(b);
    return rc;
}

/* The vectors of a v-variant call, copied into one array for the cache:
 * into `small` when they fit, else allocated (freed by vec_done). */
#define VEC_SMALL 256
static xcoll_status_t vec_take(call_t *c, size_t *small, int size, const size_t *const *v,
                               int nv)
{
    size_t *w = small, n = (size_t)nv * (size_t)size;
    int i;
    if (n > VEC_SMALL && (w = malloc(n * sizeof(size_t))) == NULL) {
        xc_error("out of memory copying %zu counts", n);
        return XCOLL_ERR_NO_MEMORY;
    }
    for (i = 0; i < nv; i++)
        memcpy(w + (size_t)i * (size_t)size, v[i], (size_t)size * sizeof(size_t));
    c->vec = w;
    c->nvec = n;
    return XCOLL_OK;
}

static xcoll_status_t vec_done(call_t *c, const size_t *small, xcoll_status_t rc)
{
    if (c->vec != small)
        free((void *)(uintptr_t)c->vec);
    return rc;
}

/* Checks shared by the v-variants: no layouts (their blocks are addressed
 * by displacement), then check_common. */
static xcoll_status_t check_vcall(const xcoll_args_t *g, xcoll_comm_t comm, xcoll_request_t *req,
                                  const char *what, size_t *dsize)
{
    xcoll_status_t rc;
    if ((rc = check_common(what, comm, g->dtype, g->stream, req, dsize)) != XCOLL_OK)
        return rc;
    if (g->send_layout != NULL || g->recv_layout != NULL) {
        xc_error("%s: layouts are not supported by the v-variants", what);
        return XCOLL_ERR_UNSUPPORTED;
    }
    return XCOLL_OK;
}

/* The scalar count of a v-variant (the own block): fits in bytes, and a
 * buffer is there to hold it. */
static xcoll_status_t check_own(const char *what, const char *name, const void *buf,
                                size_t count, size_t dsize)
{
    size_t bytes;
    xcoll_status_t rc;
    if ((rc = check_size(what, count, dsize, 1, &bytes)) != XCOLL_OK)
        return rc;
    return check_buf(what, name, buf, count);
}

static xcoll_status_t own_count_matches(const char *what, const char *scalar, size_t count,
                                        const char *vector, int j, size_t want)
{
    if (count == want)
        return XCOLL_OK;
    xc_error("%s: %s is %zu but %s[%d] is %zu", what, scalar, count, vector, j, want);
    return XCOLL_ERR_INVALID_ARG;
}

/* An out-of-place alltoallv's shape: per block, whether each side is a
 * message longer than XC_ACK_ABOVE_BYTES (which gets an ack). Its
 * schedule serves every call of the shape (pairwise.c; empty blocks are
 * skipped as it runs), so a new exchange matrix per call (MoE routing)
 * costs O(P), not a build. */
static xcoll_status_t shape_take(call_t *c, size_t *small, int size, size_t dsize)
{
    size_t *w = small, n = (size_t)size;
    int j;
    if (n > VEC_SMALL && (w = malloc(n * sizeof(size_t))) == NULL) {
        xc_error("out of memory for the shape of %zu blocks", n);
        return XCOLL_ERR_NO_MEMORY;
    }
    for (j = 0; j < size; j++) {
        size_t sb = c->scounts[j] * dsize, rb = c->rcounts[j] * dsize;
        w[j] = (size_t)(sb > XC_ACK_ABOVE_BYTES) | (size_t)(rb > XC_ACK_ABOVE_BYTES) << 1;
    }
    c->vec = w;
    c->nvec = n;
    c->by_shape = 1;
    return XCOLL_OK;
}

/* What every v-variant call shares: its vectors copied for the cache
 * (v[0..nv)), the rest of c filled in, the post; an out-of-place
 * alltoallv tries its shape first. */
static xcoll_status_t post_vcall(xcoll_comm_t comm, call_t *c, const xcoll_args_t *g,
                                 xc_coll_t coll, const char *what, size_t count,
                                 const size_t *const *v, int nv, xcoll_request_t *req)
{
    size_t small[VEC_SMALL];
    xcoll_status_t rc;
    c->what = what;
    c->coll = coll;
    c->count = count;
    c->op = XCOLL_SUM;
    c->dtype = g->dtype;
    c->stream = g->stream;
    if (coll == XC_COLL_ALLTOALLV && c->scounts != NULL) {
        if ((rc = shape_take(c, small, comm->size, xcoll_dtype_size(g->dtype))) != XCOLL_OK)
            return rc;
        rc = vec_done(c, small, post(comm, c, req));
        if (rc != XC_NEEDS_EXACT)
            return rc;
        c->by_shape = 0;
    }
    if (nv > 0 && (rc = vec_take(c, small, comm->size, v, nv)) != XCOLL_OK)
        return rc;
    rc = post(comm, c, req);
    return nv > 0 ? vec_done(c, small, rc) : rc;
}

static xcoll_status_t start_allgatherv(const xcoll_args_t *g, xcoll_comm_t comm,
                                       xcoll_request_t *req, const char *what)
{
    size_t dsize, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_vcall(g, comm, req, what, &dsize)) != XCOLL_OK ||
        (rc = check_blocks(what, "recvcounts", "displs", g->recvcounts, g->rdispls, comm->size,
                           dsize, &total)) != XCOLL_OK ||
        (rc = check_buf(what, "recvbuf", g->recvbuf, total)) != XCOLL_OK)
        return rc;
    c.in_place = IN_PLACE(g->sendbuf) ||
                 (g->recvbuf != NULL &&
                  g->sendbuf == (char *)g->recvbuf + g->rdispls[comm->rank] * dsize);
    if (!c.in_place &&
        ((rc = own_count_matches(what, "sendcount", g->count, "recvcounts", comm->rank,
                                 g->recvcounts[comm->rank])) != XCOLL_OK ||
         (rc = check_own(what, "sendbuf", g->sendbuf, g->count, dsize)) != XCOLL_OK))
        return rc;
    c.sendbuf = c.in_place ? NULL : g->sendbuf;
    c.recvbuf = g->recvbuf;
    c.rcounts = g->recvcounts;
    c.rdispls = g->rdispls;
    /* count: the average block, for the rules */
    return post_vcall(comm, &c, g, XC_COLL_ALLGATHERV, what, total / dsize / (size_t)comm->size,
                      (const size_t *const[]){g->recvcounts, g->rdispls}, 2, req);
}

static xcoll_status_t start_alltoallv(const xcoll_args_t *g, xcoll_comm_t comm,
                                      xcoll_request_t *req, const char *what)
{
    size_t dsize, stotal = 0, rtotal;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_vcall(g, comm, req, what, &dsize)) != XCOLL_OK ||
        (rc = check_blocks(what, "recvcounts", "rdispls", g->recvcounts, g->rdispls, comm->size,
                           dsize, &rtotal)) != XCOLL_OK ||
        (rc = check_buf(what, "recvbuf", g->recvbuf, rtotal)) != XCOLL_OK)
        return rc;
    c.in_place = IN_PLACE(g->sendbuf);
    if (!c.in_place &&
        ((rc = check_blocks(what, "sendcounts", "sdispls", g->sendcounts, g->sdispls, comm->size,
                            dsize, &stotal)) != XCOLL_OK ||
         (rc = check_buf(what, "sendbuf", g->sendbuf, stotal)) != XCOLL_OK))
        return rc;
    c.sendbuf = c.in_place ? NULL : g->sendbuf;
    c.recvbuf = g->recvbuf;
    c.rcounts = g->recvcounts;
    c.rdispls = g->rdispls;
    if (!c.in_place) {
        c.scounts = g->sendcounts;
        c.sdispls = g->sdispls;
    }
    /* count: this rank's average block; its algorithms match whatever
     * others pick. In place the receive side describes both. */
    return post_vcall(comm, &c, g, XC_COLL_ALLTOALLV, what,
                      (stotal + rtotal) / dsize / (2 * (size_t)comm->size),
                      c.in_place ? (const size_t *const[]){g->recvcounts, g->rdispls}
                                 : (const size_t *const[]){g->sendcounts, g->sdispls,
                                                           g->recvcounts, g->rdispls},
                      c.in_place ? 2 : 4, req);
}

/* A gatherv's (gather: 1) or scatterv's checks: at the root its blocks
 * (receive side of a gatherv, send side of a scatterv) and whether it is
 * in place; everywhere the own block (the other side). */
static xcoll_status_t start_rooted_v(const xcoll_args_t *g, xcoll_comm_t comm,
                                     xcoll_request_t *req, const char *what, int gather)
{
    const size_t *counts = gather ? g->recvcounts : g->sendcounts;
    const size_t *displs = gather ? g->rdispls : g->sdispls;
    const void *blocks = gather ? g->recvbuf : g->sendbuf;
    const void *own = gather ? g->sendbuf : g->recvbuf; /* the marker of in place */
    size_t dsize, total;
    xcoll_status_t rc;
    call_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = check_vcall(g, comm, req, what, &dsize)) != XCOLL_OK ||
        (rc = check_root(what, comm, g->root)) != XCOLL_OK)
        return rc;
    c.root = g->root;
    if (comm->rank == g->root) {
        if ((rc = check_blocks(what, gather ? "recvcounts" : "sendcounts", "displs", counts,
                               displs, comm->size, dsize, &total)) != XCOLL_OK ||
            (rc = check_buf(what, gather ? "recvbuf at the root" : "sendbuf at the root",
                            blocks, total)) != XCOLL_OK)
            return rc;
        c.in_place = IN_PLACE(own) ||
                     (blocks != NULL && own == (const char *)blocks + displs[g->root] * dsize);
        if (!c.in_place &&
            (rc = own_count_matches(what, gather ? "sendcount" : "recvcount", g->count,
                                    gather ? "recvcounts" : "sendcounts", g->root,
                                    counts[g->root])) != XCOLL_OK)
            return rc;
    } else if (IN_PLACE(own)) {
        xc_error("%s: XCOLL_IN_PLACE is only meaningful at the root", what);
        return XCOLL_ERR_INVALID_ARG;
    }
    if (!c.in_place && (rc = check_own(what, gather ? "sendbuf" : "recvbuf", own, g->count,
                                       dsize)) != XCOLL_OK)
        return rc;
    if (gather) {
        c.sendbuf = c.in_place ? NULL : g->sendbuf;
        c.recvbuf = comm->rank == g->root ? g->recvbuf : NULL;
        if (comm->rank == g->root)
            c.rcounts = g->recvcounts, c.rdispls = g->rdispls;
    } else {
        c.sendbuf = comm->rank == g->root ? g->sendbuf : NULL;
        c.recvbuf = c.in_place ? NULL : g->recvbuf;
        if (comm->rank == g->root)
            c.scounts = g->sendcounts, c.sdispls = g->sdispls;
    }
    return post_vcall(comm, &c, g, gather ? XC_COLL_GATHERV : XC_COLL_SCATTERV, what, g->count,
                      (const size_t *const[]){counts, displs}, comm->rank == g->root ? 2 : 0,
                      req);
}

static xcoll_status_t start_gatherv(const xcoll_args_t *g, xcoll_comm_t comm,
                                    xcoll_request_t *req, const char *what)
{
    return start_rooted_v(g, comm, req, what, 1);
}

static xcoll_status_t start_scatterv(const xcoll_args_t *g, xcoll_comm_t comm,
                                     xcoll_request_t *req, const char *what)
{
    return start_rooted_v(g, comm, req, what, 0);
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
    {start_allgatherv, "xcoll_allgatherv"}, {start_alltoallv, "xcoll_alltoallv"},
    {start_gatherv, "xcoll_gatherv"},       {start_scatterv, "xcoll_scatterv"},
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
    int locked;
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
    /* the v-variants are never handed back (post), nor a call that says so */
    if (!comm->fallback || xc_coll_is_vector((xc_coll_t)args->coll) || args->no_fallback)
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
    /* this schedule is cached for post to run: checked as post's would be */
    if (comm->check) {
        stamp_of(b.a.coll, args->count, args->dtype, args->op, args->root, b.stamp);
        b.a.stamp = b.stamp;
    }
    key[0] = (uint64_t)args->coll | (uint64_t)args->dtype << 8 | (uint64_t)args->op << 16;
    key[1] = args->count;
    key[2] = (uint64_t)(uint32_t)args->root;
    key[3] = 0;
    locked = xc_lock();
    rc = xc_comm_get_sched(comm, key, NULL, 0, build_collective, &b, &cs);
    if (rc == XCOLL_OK) {
        if (b.built)
            memcpy(cs->why, b.why, sizeof(cs->why));
        *declined = cs->declined;
        xc_sched_release(cs);
    }
    xc_unlock(locked);
    if (rc != XCOLL_OK)
        return rc;
    comm->declines[slot].key[0] = memo[0];
    comm->declines[slot].key[1] = memo[1];
    comm->declines[slot].declined = *declined;
    return XCOLL_OK;
}

/* The xcoll_i* calls: the same, from their argument lists. */
static xcoll_args_t args_of(xcoll_coll_t coll, const void *sendbuf, void *recvbuf, size_t count,
                            xcoll_dtype_t dtype, xcoll_op_t op, int root, void *stream)
{
    const xcoll_args_t g = {.coll = coll,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = count,
                            .dtype = dtype,
                            .op = op,
                            .root = root,
                            .stream = stream};
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

xcoll_status_t xcoll_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                 const size_t *recvcounts, const size_t *displs,
                                 xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream,
                                 xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_ALLGATHERV, sendbuf, recvbuf, sendcount, dtype, XCOLL_SUM, 0, stream);
    g.recvcounts = recvcounts;
    g.rdispls = displs;
    return start_allgatherv(&g, comm, req, "xcoll_allgatherv");
}

xcoll_status_t xcoll_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                const size_t *rdispls, xcoll_dtype_t dtype, xcoll_comm_t comm,
                                void *stream, xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_ALLTOALLV, sendbuf, recvbuf, 0, dtype, XCOLL_SUM, 0, stream);
    g.sendcounts = sendcounts;
    g.sdispls = sdispls;
    g.recvcounts = recvcounts;
    g.rdispls = rdispls;
    return start_alltoallv(&g, comm, req, "xcoll_alltoallv");
}

xcoll_status_t xcoll_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                              const size_t *recvcounts, const size_t *displs, xcoll_dtype_t dtype,
                              int root, xcoll_comm_t comm, void *stream, xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_GATHERV, sendbuf, recvbuf, sendcount, dtype, XCOLL_SUM, root, stream);
    g.recvcounts = recvcounts;
    g.rdispls = displs;
    return start_gatherv(&g, comm, req, "xcoll_gatherv");
}

xcoll_status_t xcoll_iscatterv(const void *sendbuf, const size_t *sendcounts,
                               const size_t *displs, void *recvbuf, size_t recvcount,
                               xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream,
                               xcoll_request_t *req)
{
    xcoll_args_t g =
        args_of(XCOLL_COLL_SCATTERV, sendbuf, recvbuf, recvcount, dtype, XCOLL_SUM, root, stream);
    g.sendcounts = sendcounts;
    g.sdispls = displs;
    return start_scatterv(&g, comm, req, "xcoll_scatterv");
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
    int locked;
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
    locked = xc_lock();
    rc = xc_comm_get_sched(comm, key, NULL, 0, build_p2p, &p, &cs);
    if (rc == XCOLL_OK) {
        memset(&bufs, 0, sizeof(bufs));
        bufs.send = is_send ? buf : NULL;
        bufs.recv = is_send ? NULL : (void *)(uintptr_t)buf;
        rc = xc_request_post(comm, cs, is_send ? "send" : "recv", &bufs, tag, stream, req);
    }
    xc_unlock(locked);
    return rc;
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

xcoll_status_t xcoll_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                const size_t *recvcounts, const size_t *displs,
                                xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_iallgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, comm,
                               stream, &r_));
}

xcoll_status_t xcoll_alltoallv(const void *sendbuf, const size_t *sendcounts,
                               const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                               const size_t *rdispls, xcoll_dtype_t dtype, xcoll_comm_t comm,
                               void *stream)
{
    BLOCKING(xcoll_ialltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype,
                              comm, stream, &r_));
}

xcoll_status_t xcoll_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                             const size_t *recvcounts, const size_t *displs, xcoll_dtype_t dtype,
                             int root, xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_igatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root, comm,
                            stream, &r_));
}

xcoll_status_t xcoll_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                              void *recvbuf, size_t recvcount, xcoll_dtype_t dtype, int root,
                              xcoll_comm_t comm, void *stream)
{
    BLOCKING(xcoll_iscatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root, comm,
                             stream, &r_));
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
