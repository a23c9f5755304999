/* The engine: runs any schedule over any transport.
 *
 * Each step waits for a count of unfinished dependencies. When a step
 * finishes it releases its consumers; a released step goes on a FIFO ready
 * queue, and is started in the order it became ready (which, for steps
 * ready from the beginning, is index order: receives are posted before the
 * matching data arrives, in slot order). Only steps in flight are tested,
 * so a pass costs O(steps in flight + steps that became ready), not
 * O(schedule). */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "dtype.h"
#include "log.h"
#include "pool.h"
#include "tag.h"

static const char *step_kind_name(uint8_t kind)
{
    static const char *names[XC_STEP_KIND_COUNT] = {"send",   "recv",  "recv+reduce", "copy",
                                                    "reduce", "divide", "stamp",       "check"};
    return kind < XC_STEP_KIND_COUNT ? names[kind] : "?";
}

/* Per-exec working memory, carved from one allocation. */
typedef struct {
    uint32_t *pending;  /* unfinished dependencies per step */
    uint32_t *ready;    /* FIFO of released steps */
    uint32_t *running;  /* steps in flight, in posting order */
    uint32_t ready_head, ready_tail, nrunning;
} xc_exec_work_t;


static xc_exec_work_t *work_of(const xc_exec_t *x)
{
    return (xc_exec_work_t *)x->state_mem;
}

static void *addr(const xc_exec_t *x, xc_ref_t r)
{
    char *base = x->buf[r.buf];
    return base == NULL ? NULL : base + r.off;
}

static uint64_t tag_for(const xc_exec_t *x, const xc_step_t *st, int src)
{
    if (x->is_p2p)
        return xc_tag_p2p(x->comm_id, (uint32_t)src, x->user_tag);
    return xc_tag_coll(x->comm_id, (uint32_t)src, x->seq, st->slot);
}

static xcoll_status_t exec_use_gpu(xc_exec_t *x, const xc_exec_device_t *dev);

/* Every step waiting on its dependencies again, nothing done or sent. */
static void reset_run(xc_exec_t *x)
{
    const xc_sched_t *s = x->sched;
    xc_exec_work_t *w = work_of(x);
    uint32_t i;
    w->ready_head = w->ready_tail = w->nrunning = 0;
    for (i = 0; i < s->nsteps; i++) {
        w->pending[i] = s->steps[i].ndeps;
        x->state[i] = XC_STATE_WAITING;
        if (w->pending[i] == 0)
            w->ready[w->ready_tail++] = i;
    }
    x->ndone = 0;
    x->status = XCOLL_OK;
    x->msgs_sent = x->bytes_sent = 0;
    x->is_p2p = 0;
    x->user_tag = 0;
}

xcoll_status_t xc_exec_init(xc_exec_t *x, const xc_sched_t *sched, void *sendbuf, void *recvbuf,
                            const xc_transport_t *tl, void *tl_comm, uint32_t comm_id,
                            uint32_t seq, const xc_exec_device_t *dev)
{
    size_t n = sched->nsteps;
    xc_exec_work_t *w;
    char *mem;

    memset(x, 0, sizeof(*x));
    if (sched->consumers_first == NULL && n > 0) {
        xc_error("schedule %s was not finished before running it", sched->algo);
        return XCOLL_ERR_INTERNAL;
    }
    x->sched = sched;
    x->buf[XC_BUF_SEND] = sendbuf;
    x->buf[XC_BUF_RECV] = recvbuf;
    x->tl = tl;
    x->tl_comm = tl_comm;
    x->comm_id = comm_id;
    x->seq = seq;
    /* a device exec's scratch is pinned or device memory: exec_use_gpu */
    if (sched->tmp_bytes > 0 && dev == NULL) {
        x->tmp_owned = xc_block_get(sched->tmp_bytes, 0);
        if (x->tmp_owned == NULL) {
            xc_error("out of memory: %zu bytes of scratch for %s", sched->tmp_bytes, sched->algo);
            return XCOLL_ERR_NO_MEMORY;
        }
        x->buf[XC_BUF_TMP] = x->tmp_owned;
    }
    /* pointers first, then the uint32 arrays, then the bytes: all aligned */
    mem = xc_block_get(sizeof(xc_exec_work_t) + n * (sizeof(void *) + 3 * sizeof(uint32_t) + 1) + 8,
                    1);
    if (mem == NULL) {
        xc_error("out of memory: state for a schedule of %zu steps", n);
        xc_block_put(x->tmp_owned);
        x->tmp_owned = NULL;
        return XCOLL_ERR_NO_MEMORY;
    }
    x->state_mem = mem;
    w = (xc_exec_work_t *)mem;
    mem += sizeof(*w);
    x->treq = (void **)mem;
    mem += n * sizeof(void *);
    w->pending = (uint32_t *)mem;
    mem += n * sizeof(uint32_t);
    w->ready = (uint32_t *)mem;
    mem += n * sizeof(uint32_t);
    w->running = (uint32_t *)mem;
    mem += n * sizeof(uint32_t);
    x->state = (uint8_t *)mem;
    reset_run(x);
    if (dev != NULL) {
        xcoll_status_t rc = exec_use_gpu(x, dev);
        if (rc != XCOLL_OK) {
            xc_exec_fini(x);
            return rc;
        }
    }
    return XCOLL_OK;
}

static void finish_step(xc_exec_t *x, uint32_t i)
{
    const xc_sched_t *s = x->sched;
    xc_exec_work_t *w = work_of(x);
    uint32_t c;
    x->state[i] = XC_STATE_DONE;
    x->ndone++;
    for (c = s->consumers_first[i]; c < s->consumers_first[i + 1]; c++) {
        uint32_t k = s->consumers[c];
        if (--w->pending[k] == 0)
            w->ready[w->ready_tail++] = k;
    }
}

/* dst = a op b, or b op a for a recv+reduce whose message (b) is the left
 * operand. */
static void reduce_operands(const xc_sched_t *s, const xc_step_t *st, void *dst, const void *a,
                            const void *b, size_t count)
{
    if (st->kind == XC_STEP_RECV_REDUCE && st->msg_left)
        xc_reduce(dst, b, a, count, s->dtype, s->op);
    else
        xc_reduce(dst, a, b, count, s->dtype, s->op);
}

/* A peer's stamp for the log: printable, whatever it sent. */
static const char *printable(const char *stamp, char *out)
{
    size_t i;
    for (i = 0; i < XC_STAMP_BYTES && stamp[i] != '\0'; i++)
        out[i] = stamp[i] >= 0x20 && stamp[i] < 0x7f ? stamp[i] : '?';
    out[i] = '\0';
    return out;
}

/* The call check's verdict: the stamps every rank sent (block i from rank
 * (rank + i) % P) against this rank's. The peers' blocks are untrusted
 * text: printed only up to their length. Every rank holds every stamp, so
 * every rank fails alike and says which ranks called what. */
static xcoll_status_t check_stamps(const xc_exec_t *x, const char *blocks)
{
    const xc_sched_t *s = x->sched;
    const size_t B = XC_STAMP_BYTES;
    char text[XC_STAMP_BYTES + 1];
    int i, shown = 0, differ = 0;
    for (i = 1; i < s->size; i++)
        differ += memcmp(blocks + (size_t)i * B, blocks, B) != 0;
    if (differ == 0)
        return XCOLL_OK;
    xc_error("collective seq %u: the ranks' calls differ (%d of %d from this rank's \"%s\")",
             x->seq, differ, s->size, printable(blocks, text));
    for (i = 1; i < s->size && shown < 4; i++) {
        const char *b = blocks + (size_t)i * B;
        if (memcmp(b, blocks, B) == 0)
            continue;
        xc_error("collective seq %u: rank %d called \"%s\"", x->seq, (s->rank + i) % s->size,
                 printable(b, text));
        shown++;
    }
    return XCOLL_ERR_MISMATCH;
}

/* The local part of a step: all of a local step, the reduction after a
 * receive. */
static xcoll_status_t run_local(xc_exec_t *x, const xc_step_t *st)
{
    const xc_sched_t *s = x->sched;
    size_t count = s->dsize ? st->bytes / s->dsize : 0;
    void *dst;

    if (st->bytes == 0)
        return XCOLL_OK;
    dst = addr(x, st->dst);
    switch ((xc_step_kind_t)st->kind) {
    case XC_STEP_COPY: {
        const void *src = addr(x, st->a);
        if (dst == NULL || src == NULL)
            break;
        if (dst != src)
            memmove(dst, src, st->bytes);
        return XCOLL_OK;
    }
    case XC_STEP_REDUCE:
    case XC_STEP_RECV_REDUCE: {
        const void *a = addr(x, st->a), *b = addr(x, st->b);
        if (dst == NULL || a == NULL || b == NULL)
            break;
        reduce_operands(s, st, dst, a, b, count);
        return XCOLL_OK;
    }
    case XC_STEP_DIVIDE:
        if (dst == NULL)
            break;
        xc_divide(dst, count, s->dtype, s->divisor);
        return XCOLL_OK;
    case XC_STEP_STAMP:
    case XC_STEP_CHECK: {
        /* in scratch, which is host memory in a checked exec (exec_use_gpu) */
        char *at = addr(x, st->kind == XC_STEP_STAMP ? st->dst : st->a);
        if (at == NULL)
            break;
        if (st->kind == XC_STEP_STAMP) {
            memcpy(at, s->stamp, XC_STAMP_BYTES);
            return XCOLL_OK;
        }
        return check_stamps(x, at);
    }
    default:
        return XCOLL_OK;
    }
    xc_error("schedule %s: %s step touches a buffer the call did not provide", s->algo,
             step_kind_name(st->kind));
    return XCOLL_ERR_INTERNAL;
}

static xcoll_status_t gpu_start_step(xc_exec_t *x, uint32_t i);
static xcoll_status_t lay_net_buffer(xc_exec_t *x, uint32_t i, void **buf);
static xcoll_status_t lay_run_local(xc_exec_t *x, const xc_step_t *st, const void *landing);
static xcoll_status_t host_after_net(xc_exec_t *x, uint32_t i);

/* A recv+reduce handed whole to a transport that reduces as the message
 * lands (transport.h): landing is the scratch it may use. */
static xcoll_status_t post_reducing_recv(xc_exec_t *x, const xc_step_t *st, void *landing,
                                         void **req)
{
    xc_land_reduce_t red;
    red.dst = addr(x, st->dst);
    red.a = addr(x, st->a);
    red.dtype = x->sched->dtype;
    red.op = x->sched->op;
    red.msg_left = st->msg_left;
    if (red.dst == NULL || red.a == NULL || landing == NULL)
        return XCOLL_DECLINED; /* run_local reports the missing buffer */
    return x->tl->irecv_reduce(x->tl_comm, st->peer, tag_for(x, st, st->peer), landing,
                               st->bytes, &red, req);
}

static xcoll_status_t start_step(xc_exec_t *x, uint32_t i)
{
    const xc_step_t *st = &x->sched->steps[i];
    xc_exec_work_t *w = work_of(x);
    xcoll_status_t rc;
    void *req = NULL, *buf;

    if ((st->flags & XC_STEP_F_SKIP_EMPTY) && st->bytes == 0) {
        finish_step(x, i); /* an empty block: its peer skips it too */
        return XCOLL_OK;
    }
    if (x->gpu != NULL)
        return gpu_start_step(x, i);
    if (st->kind > XC_STEP_RECV_REDUCE) {
        rc = x->lstage != NULL ? lay_run_local(x, st, NULL) : run_local(x, st);
        if (rc == XCOLL_OK)
            finish_step(x, i);
        return rc;
    }
    if ((rc = lay_net_buffer(x, i, &buf)) != XCOLL_OK)
        return rc;
    if (st->kind == XC_STEP_SEND) {
        rc = x->tl->isend(x->tl_comm, st->peer, tag_for(x, st, x->sched->rank), buf, st->bytes,
                          &req);
        x->msgs_sent++;
        x->bytes_sent += st->bytes;
    } else if (st->kind == XC_STEP_RECV_REDUCE && x->tl->irecv_reduce != NULL &&
               x->lstage == NULL && st->bytes > 0) {
        rc = post_reducing_recv(x, st, buf, &req);
        if (rc == XCOLL_OK)
            x->state[i] = XC_STATE_REDUCING;
        else if (rc == XCOLL_DECLINED)
            rc = x->tl->irecv(x->tl_comm, st->peer, tag_for(x, st, st->peer), buf, st->bytes,
                              &req);
    } else {
        rc = x->tl->irecv(x->tl_comm, st->peer, tag_for(x, st, st->peer), buf, st->bytes, &req);
    }
    if (rc != XCOLL_OK)
        return rc;
    if (req == NULL) {
        if ((rc = host_after_net(x, i)) != XCOLL_OK)
            return rc;
        finish_step(x, i);
        return XCOLL_OK;
    }
    x->treq[i] = req;
    if (x->state[i] != XC_STATE_REDUCING)
        x->state[i] = XC_STATE_RUNNING;
    w->running[w->nrunning++] = i;
    return XCOLL_OK;
}

/* --- buffers behind a layout -----------------------------------------------
 * A send or receive buffer given as an xcoll_layout_t has no address: the
 * caller packs and unpacks ranges of it. A step that touches one works on
 * a pooled block instead: a send packs its range into a block and sends
 * that; a receive lands in a block and unpacks it when complete; a local
 * step packs its layout operands, computes and unpacks its result. Blocks
 * live only while their step runs, so staging memory is what is in
 * flight: a few segments for the algorithms that cut large messages. */

static const char *const buf_names[XC_BUF_COUNT] = {"none", "send", "receive", "scratch"};

static int on_layout(const xc_exec_t *x, xc_ref_t r)
{
    return x->lstage != NULL && x->layout[r.buf] != NULL;
}

static xcoll_status_t lay_pack(const xc_exec_t *x, xc_ref_t r, void *dst, size_t bytes)
{
    const xcoll_layout_t *l = x->layout[r.buf];
    if (l->pack(l->ctx, r.off, dst, bytes) == 0)
        return XCOLL_OK;
    xc_error("%s: the caller's pack of bytes [%zu, %zu) of the %s buffer failed", x->sched->algo,
             r.off, r.off + bytes, buf_names[r.buf]);
    return XCOLL_ERR_INVALID_ARG;
}

static xcoll_status_t lay_unpack(const xc_exec_t *x, xc_ref_t r, const void *src, size_t bytes)
{
    const xcoll_layout_t *l = x->layout[r.buf];
    if (l->unpack(l->ctx, r.off, src, bytes) == 0)
        return XCOLL_OK;
    xc_error("%s: the caller's unpack of bytes [%zu, %zu) of the %s buffer failed",
             x->sched->algo, r.off, r.off + bytes, buf_names[r.buf]);
    return XCOLL_ERR_INVALID_ARG;
}

static xcoll_status_t lay_no_memory(const xc_exec_t *x, size_t bytes)
{
    xc_error("%s: out of memory: %zu bytes to stage a buffer with a layout", x->sched->algo,
             bytes);
    return XCOLL_ERR_NO_MEMORY;
}

/* The bytes at r, readable: their address, or a block packed from the
 * layout (*blk, which the caller puts back). */
static xcoll_status_t lay_read(const xc_exec_t *x, xc_ref_t r, size_t bytes, const void **p,
                               void **blk)
{
    xcoll_status_t rc;
    *blk = NULL;
    if (!on_layout(x, r)) {
        *p = addr(x, r);
        return *p != NULL ? XCOLL_OK : XCOLL_ERR_INTERNAL;
    }
    if ((*blk = xc_block_get(bytes, 0)) == NULL)
        return lay_no_memory(x, bytes);
    if ((rc = lay_pack(x, r, *blk, bytes)) != XCOLL_OK) {
        xc_block_put(*blk);
        *blk = NULL;
        return rc;
    }
    *p = *blk;
    return XCOLL_OK;
}

/* The buffer a message step of a host exec hands the transport: the
 * address, or for a layout a block (packed first for a send), kept in
 * x->lstage[i] until the step is done. */
static xcoll_status_t lay_net_buffer(xc_exec_t *x, uint32_t i, void **buf)
{
    const xc_step_t *st = &x->sched->steps[i];
    const xc_ref_t r = st->kind == XC_STEP_SEND ? st->a : st->kind == XC_STEP_RECV ? st->dst
                                                                                 : st->b;
    xcoll_status_t rc;
    if (st->bytes == 0 || !on_layout(x, r)) {
        *buf = addr(x, r);
        return XCOLL_OK;
    }
    if ((*buf = x->lstage[i] = xc_block_get(st->bytes, 0)) == NULL)
        return lay_no_memory(x, st->bytes);
    if (st->kind == XC_STEP_SEND && (rc = lay_pack(x, r, *buf, st->bytes)) != XCOLL_OK)
        return rc;
    return XCOLL_OK;
}

/* run_local where an operand may be behind a layout; landing, if not
 * NULL, is where a recv+reduce's message is (instead of its b). */
static xcoll_status_t lay_run_local(xc_exec_t *x, const xc_step_t *st, const void *landing)
{
    const xc_sched_t *s = x->sched;
    size_t count = s->dsize ? st->bytes / s->dsize : 0;
    const void *a = NULL, *b = landing;
    void *blk_a = NULL, *blk_b = NULL, *blk_d = NULL, *d = NULL;
    xcoll_status_t rc = XCOLL_OK;

    if (st->bytes == 0)
        return XCOLL_OK;
    if (landing == NULL && !on_layout(x, st->dst) && !on_layout(x, st->a) &&
        !on_layout(x, st->b))
        return run_local(x, st);
    if (!on_layout(x, st->dst) && (d = addr(x, st->dst)) == NULL)
        rc = XCOLL_ERR_INTERNAL;
    switch ((xc_step_kind_t)st->kind) {
    case XC_STEP_COPY:
        if (rc != XCOLL_OK)
            break;
        if (d != NULL && on_layout(x, st->a)) {
            rc = lay_pack(x, st->a, d, st->bytes);
            break;
        }
        if ((rc = lay_read(x, st->a, st->bytes, &a, &blk_a)) != XCOLL_OK)
            break;
        if (d != NULL)
            memmove(d, a, st->bytes);
        else
            rc = lay_unpack(x, st->dst, a, st->bytes);
        break;
    case XC_STEP_REDUCE:
    case XC_STEP_RECV_REDUCE:
        if (rc != XCOLL_OK || (rc = lay_read(x, st->a, st->bytes, &a, &blk_a)) != XCOLL_OK ||
            (b == NULL && (rc = lay_read(x, st->b, st->bytes, &b, &blk_b)) != XCOLL_OK))
            break;
        if (d == NULL) {
            /* into a block of our own: an operand's, which xc_reduce may alias */
            d = blk_a != NULL ? blk_a : blk_b;
            if (d == NULL && (d = blk_d = xc_block_get(st->bytes, 0)) == NULL) {
                rc = lay_no_memory(x, st->bytes);
                break;
            }
            reduce_operands(s, st, d, a, b, count);
            rc = lay_unpack(x, st->dst, d, st->bytes);
            break;
        }
        reduce_operands(s, st, d, a, b, count);
        break;
    case XC_STEP_DIVIDE:
        if (rc != XCOLL_OK || d != NULL) /* d: not on the layout after all */
            return rc != XCOLL_OK ? rc : run_local(x, st);
        if ((rc = lay_read(x, st->dst, st->bytes, &a, &blk_a)) != XCOLL_OK)
            break;
        xc_divide(blk_a, count, s->dtype, s->divisor);
        rc = lay_unpack(x, st->dst, blk_a, st->bytes);
        break;
    default:
        break;
    }
    xc_block_put(blk_a);
    xc_block_put(blk_b);
    xc_block_put(blk_d);
    if (rc == XCOLL_ERR_INTERNAL)
        xc_error("schedule %s: %s step touches a buffer the call did not provide", s->algo,
                 step_kind_name(st->kind));
    return rc;
}

/* What a message step of a host exec does once the transport is done with
 * it: a receive unpacks into its layout, a recv+reduce reduces. */
static xcoll_status_t host_after_net(xc_exec_t *x, uint32_t i)
{
    const xc_step_t *st = &x->sched->steps[i];
    void *blk;
    xcoll_status_t rc = XCOLL_OK;
    if (x->state[i] == XC_STATE_REDUCING)
        return XCOLL_OK;
    if (x->lstage == NULL)
        return st->kind == XC_STEP_RECV_REDUCE ? run_local(x, st) : XCOLL_OK;
    blk = x->lstage[i];
    x->lstage[i] = NULL;
    if (st->kind == XC_STEP_RECV && blk != NULL)
        rc = lay_unpack(x, st->dst, blk, st->bytes);
    else if (st->kind == XC_STEP_RECV_REDUCE)
        rc = lay_run_local(x, st, blk != NULL ? blk : addr(x, st->b));
    xc_block_put(blk);
    return rc;
}

xcoll_status_t xc_exec_use_layouts(xc_exec_t *x, const xcoll_layout_t *send,
                                   const xcoll_layout_t *recv)
{
    if (send == NULL && recv == NULL)
        return XCOLL_OK;
    if (x->gpu != NULL) {
        xc_error("%s: a buffer with a layout cannot take part in a device exec", x->sched->algo);
        return XCOLL_ERR_UNSUPPORTED;
    }
    x->lstage = xc_block_get(x->sched->nsteps * sizeof(void *) + 1, 1);
    if (x->lstage == NULL)
        return lay_no_memory(x, x->sched->nsteps * sizeof(void *));
    x->layout[XC_BUF_SEND] = send;
    x->layout[XC_BUF_RECV] = recv;
    return XCOLL_OK;
}

xcoll_status_t xc_exec_move_recv(xc_exec_t *x, size_t src, size_t bytes)
{
    char *base = x->buf[XC_BUF_RECV];
    xcoll_status_t rc;
    if (bytes == 0)
        return XCOLL_OK;
    if (x->lstage != NULL && x->layout[XC_BUF_RECV] != NULL) {
        const void *p;
        void *blk;
        if ((rc = lay_read(x, xc_ref(XC_BUF_RECV, src), bytes, &p, &blk)) != XCOLL_OK)
            return rc;
        rc = lay_unpack(x, xc_ref(XC_BUF_RECV, 0), blk, bytes);
        xc_block_put(blk);
        return rc;
    }
    if (base == NULL)
        return XCOLL_ERR_INTERNAL;
    if (x->gpu != NULL && xc_mem_on_device((xc_memtype_t)x->mem[XC_BUF_RECV]))
        return x->gpu->copy_sync(base, base + src, bytes);
    memmove(base, base + src, bytes);
    return XCOLL_OK;
}

/* --- device data ------------------------------------------------------------
 * A step on device memory runs in up to two phases, each tested like a
 * transport request: NET (a message in flight) and GPU (copies or kernels
 * queued, ended by an event). A staged send downloads its bytes into a
 * pinned block (GPU), then sends the block (NET); a staged receive lands
 * in a pinned block (NET), then uploads it (GPU); a receive-and-reduce
 * lands, then reduces with a kernel that reads the pinned block in place
 * (GPU). Steps start only when their dependencies are done, events
 * included, so the two internal queues need no ordering of their own, and
 * a large message's segments overlap: one downloads while the one before
 * it is on the wire and the one before that reduces.
 *
 * A local step (copy, reduce, divide) runs on the GPU when any of its
 * operands is device memory; a kernel operand in pageable host memory is
 * uploaded into device scratch first (the GPU cannot read pageable
 * memory), and a pageable destination is downloaded after. */

enum { GPHASE_NET = 1, GPHASE_GPU = 2 };

typedef struct xc_gpu_step {
    void *stage;   /* pinned block between device memory and the transport */
    void *scratch; /* device block for pageable operands of a kernel */
    void *ev;      /* end of the step's GPU work, while in the GPU phase */
    uint8_t phase;
    uint8_t gpu_reduce; /* a recv+reduce whose reduction runs on the GPU */
    uint8_t reserved;   /* its blocks were taken ahead (gpu_reserve) */
} xc_gpu_step_t;

static xc_memtype_t mem_of(const xc_exec_t *x, xc_ref_t r)
{
    return (xc_memtype_t)x->mem[r.buf];
}

/* Whether step st has an operand in device memory (unused operands are
 * XC_BUF_NONE, whose type stays XC_MEM_HOST): its local part then runs on
 * the GPU. */
static int touches_device(const xc_exec_t *x, const xc_step_t *st)
{
    return xc_mem_on_device(mem_of(x, st->dst)) || xc_mem_on_device(mem_of(x, st->a)) ||
           xc_mem_on_device(mem_of(x, st->b));
}

/* The buffer a message step hands the transport: a send's source, a
 * receive's destination, a receive-and-reduce's landing area. */
static xc_ref_t net_ref(const xc_step_t *st)
{
    return st->kind == XC_STEP_SEND ? st->a : st->kind == XC_STEP_RECV ? st->dst : st->b;
}

/* Whether the transport may be handed memory of type m. */
static int net_direct(const xc_exec_t *x, xc_memtype_t m)
{
    return !xc_mem_on_device(m) || x->tl_device;
}

static xcoll_status_t gpu_fence(xc_exec_t *x, uint32_t i, int q)
{
    xc_gpu_step_t *g = &x->gstep[i];
    if ((g->ev = xc_gpu_event_get()) == NULL)
        return XCOLL_ERR_INTERNAL;
    g->phase = GPHASE_GPU;
    return x->gpu->record(g->ev, q);
}

/* Bytes of device scratch a GPU reduction needs for its pageable
 * operands: each is uploaded (a == b once), a pageable dst computed apart. */
static size_t scratch_need(const void *dst, xc_memtype_t md, const void *a, xc_memtype_t ma,
                           const void *b, xc_memtype_t mb, size_t bytes)
{
    int up_a = !xc_mem_gpu_ok(ma), up_b = !xc_mem_gpu_ok(mb) && b != a;
    int fresh_d = !xc_mem_gpu_ok(md) && dst != a && dst != b;
    return (size_t)(up_a + up_b + fresh_d) * bytes;
}

static void *stage_get(xc_exec_t *x, uint32_t i, size_t bytes)
{
    xc_gpu_step_t *g = &x->gstep[i];
    if (g->stage == NULL) /* not reserved at post */
        g->stage = xc_gpu_pinned_get(bytes);
    return g->stage;
}

/* Takes now the staging and scratch blocks every step not yet started
 * will need (see xc_gpu_holds_pending); the steps give them back as they
 * finish. */
static xcoll_status_t gpu_reserve(xc_exec_t *x)
{
    const xc_sched_t *s = x->sched;
    uint32_t i;
    for (i = 0; i < s->nsteps; i++) {
        const xc_step_t *st = &s->steps[i];
        xc_gpu_step_t *g = &x->gstep[i];
        size_t scratch = 0;
        const void *b = addr(x, st->b);
        xc_memtype_t mb = mem_of(x, st->b);
        if (st->bytes == 0 || g->reserved || x->state[i] != XC_STATE_WAITING)
            continue;
        g->reserved = 1;
        if (st->kind <= XC_STEP_RECV_REDUCE && !net_direct(x, mem_of(x, net_ref(st))) &&
            (g->stage = xc_gpu_pinned_get(st->bytes)) == NULL)
            return XCOLL_ERR_NO_MEMORY;
        if (st->kind == XC_STEP_RECV_REDUCE && g->stage != NULL) {
            b = g->stage;
            mb = XC_MEM_PINNED;
        }
        if ((st->kind == XC_STEP_REDUCE || st->kind == XC_STEP_RECV_REDUCE) &&
            touches_device(x, st))
            scratch = scratch_need(addr(x, st->dst), mem_of(x, st->dst), addr(x, st->a),
                                   mem_of(x, st->a), b, mb, st->bytes);
        if (scratch > 0 && (g->scratch = xc_gpu_dev_get(scratch)) == NULL)
            return XCOLL_ERR_NO_MEMORY;
    }
    return XCOLL_OK;
}

/* dst = a op b on the GPU (queue WORK; b op a for a recv+reduce whose
 * message is the left operand), then the step's event. */
static xcoll_status_t gpu_reduce(xc_exec_t *x, uint32_t i, void *dst, xc_memtype_t md,
                                 const void *a, xc_memtype_t ma, const void *b, xc_memtype_t mb,
                                 size_t bytes)
{
    const xc_gpu_backend_t *gpu = x->gpu;
    const xc_sched_t *s = x->sched;
    xc_gpu_step_t *g = &x->gstep[i];
    int up_a = !xc_mem_gpu_ok(ma), up_b = !xc_mem_gpu_ok(mb) && b != a;
    int down = !xc_mem_gpu_ok(md);
    size_t need = scratch_need(dst, md, a, ma, b, mb, bytes);
    const void *ka = a, *kb = b;
    void *kd = dst;
    char *t = NULL;
    xcoll_status_t rc = XCOLL_OK;

    if (need > 0) {
        if (g->scratch == NULL) /* not reserved ahead */
            g->scratch = xc_gpu_dev_get(need);
        if ((t = g->scratch) == NULL)
            return XCOLL_ERR_NO_MEMORY;
    }
    if (up_a) {
        rc = gpu->copy(t, a, bytes, XC_GPU_Q_WORK);
        ka = t;
        t += bytes;
    }
    if (!xc_mem_gpu_ok(mb))
        kb = b == a ? ka : t;
    if (rc == XCOLL_OK && up_b) {
        rc = gpu->copy(t, b, bytes, XC_GPU_Q_WORK);
        t += bytes;
    }
    if (down)
        kd = dst == a ? (void *)(uintptr_t)ka : dst == b ? (void *)(uintptr_t)kb : t;
    if (rc == XCOLL_OK && s->steps[i].kind == XC_STEP_RECV_REDUCE && s->steps[i].msg_left)
        rc = gpu->reduce(kd, kb, ka, bytes / s->dsize, s->dtype, s->op, XC_GPU_Q_WORK);
    else if (rc == XCOLL_OK)
        rc = gpu->reduce(kd, ka, kb, bytes / s->dsize, s->dtype, s->op, XC_GPU_Q_WORK);
    if (rc == XCOLL_OK && down)
        rc = gpu->copy(dst, kd, bytes, XC_GPU_Q_WORK);
    return rc == XCOLL_OK ? gpu_fence(x, i, XC_GPU_Q_WORK) : rc;
}

/* A local step of a device exec: on the GPU when it touches device
 * memory, else on the CPU. *queued says which. */
static xcoll_status_t gpu_run_local(xc_exec_t *x, uint32_t i, int *queued)
{
    const xc_sched_t *s = x->sched;
    const xc_step_t *st = &s->steps[i];
    void *dst = addr(x, st->dst);
    const void *a = addr(x, st->a), *b = addr(x, st->b);
    xcoll_status_t rc;

    *queued = 0;
    /* run_local also reports a buffer the call did not provide */
    if (st->bytes == 0 || !touches_device(x, st) || dst == NULL)
        return run_local(x, st);
    switch ((xc_step_kind_t)st->kind) {
    case XC_STEP_COPY:
        if (a == NULL)
            return run_local(x, st);
        if (dst == a)
            return XCOLL_OK;
        rc = x->gpu->copy(dst, a, st->bytes, XC_GPU_Q_WORK);
        break;
    case XC_STEP_REDUCE:
        if (a == NULL || b == NULL)
            return run_local(x, st);
        *queued = 1;
        return gpu_reduce(x, i, dst, mem_of(x, st->dst), a, mem_of(x, st->a), b,
                          mem_of(x, st->b), st->bytes);
    case XC_STEP_DIVIDE:
        rc = x->gpu->divide(dst, st->bytes / s->dsize, s->dtype, s->divisor, XC_GPU_Q_WORK);
        break;
    default:
        return run_local(x, st);
    }
    *queued = 1;
    return rc == XCOLL_OK ? gpu_fence(x, i, XC_GPU_Q_WORK) : rc;
}

static xcoll_status_t post_send(xc_exec_t *x, uint32_t i, const void *buf)
{
    const xc_step_t *st = &x->sched->steps[i];
    x->msgs_sent++;
    x->bytes_sent += st->bytes;
    x->gstep[i].phase = GPHASE_NET;
    return x->tl->isend(x->tl_comm, st->peer, tag_for(x, st, x->sched->rank), buf, st->bytes,
                        &x->treq[i]);
}

static void gpu_release_step(xc_exec_t *x, uint32_t i)
{
    xc_gpu_step_t *g = &x->gstep[i];
    xc_gpu_pinned_put(g->stage);
    xc_gpu_dev_put(g->scratch);
    xc_gpu_event_put(g->ev);
    g->stage = g->scratch = g->ev = NULL;
    g->phase = 0;
}

/* The phase after a message completed: *finished if there is none. */
static xcoll_status_t gpu_after_net(xc_exec_t *x, uint32_t i, int *finished)
{
    const xc_step_t *st = &x->sched->steps[i];
    xc_gpu_step_t *g = &x->gstep[i];
    xcoll_status_t rc = XCOLL_OK;

    *finished = 1;
    if (st->kind == XC_STEP_RECV && g->stage != NULL) {
        *finished = 0;
        rc = x->gpu->copy(addr(x, st->dst), g->stage, st->bytes, XC_GPU_Q_WORK);
        return rc == XCOLL_OK ? gpu_fence(x, i, XC_GPU_Q_WORK) : rc;
    }
    if (st->kind == XC_STEP_RECV_REDUCE) {
        if (!g->gpu_reduce)
            return run_local(x, st);
        *finished = 0;
        /* the kernel reads the message where it landed */
        return gpu_reduce(x, i, addr(x, st->dst), mem_of(x, st->dst), addr(x, st->a),
                          mem_of(x, st->a), g->stage != NULL ? g->stage : addr(x, st->b),
                          g->stage != NULL ? XC_MEM_PINNED : mem_of(x, st->b), st->bytes);
    }
    return rc;
}

static xcoll_status_t gpu_start_step(xc_exec_t *x, uint32_t i)
{
    const xc_step_t *st = &x->sched->steps[i];
    xc_gpu_step_t *g = &x->gstep[i];
    xc_exec_work_t *w = work_of(x);
    xcoll_status_t rc;
    int queued = 0, finished = 0;
    void *buf;

    switch ((xc_step_kind_t)st->kind) {
    case XC_STEP_SEND:
        buf = addr(x, st->a);
        if (st->bytes == 0 || net_direct(x, mem_of(x, st->a))) {
            rc = post_send(x, i, buf);
            break;
        }
        if (stage_get(x, i, st->bytes) == NULL)
            return XCOLL_ERR_NO_MEMORY;
        rc = x->gpu->copy(g->stage, buf, st->bytes, XC_GPU_Q_D2H);
        if (rc == XCOLL_OK)
            rc = gpu_fence(x, i, XC_GPU_Q_D2H);
        break;
    case XC_STEP_RECV:
    case XC_STEP_RECV_REDUCE:
        buf = addr(x, net_ref(st));
        if (st->kind == XC_STEP_RECV_REDUCE)
            g->gpu_reduce = st->bytes > 0 && touches_device(x, st);
        if (st->bytes > 0 && !net_direct(x, mem_of(x, net_ref(st)))) {
            if ((buf = stage_get(x, i, st->bytes)) == NULL)
                return XCOLL_ERR_NO_MEMORY;
        }
        g->phase = GPHASE_NET;
        rc = x->tl->irecv(x->tl_comm, st->peer, tag_for(x, st, st->peer), buf, st->bytes,
                          &x->treq[i]);
        break;
    default:
        rc = gpu_run_local(x, i, &queued);
        if (rc == XCOLL_OK && !queued) {
            finish_step(x, i);
            return XCOLL_OK;
        }
        break;
    }
    if (rc != XCOLL_OK)
        return rc;
    /* a message the transport completed at once moves straight on */
    while (g->phase == GPHASE_NET && x->treq[i] == NULL) {
        if ((rc = gpu_after_net(x, i, &finished)) != XCOLL_OK)
            return rc;
        if (finished) {
            gpu_release_step(x, i);
            finish_step(x, i);
            return XCOLL_OK;
        }
    }
    x->state[i] = XC_STATE_RUNNING;
    w->running[w->nrunning++] = i;
    return XCOLL_OK;
}

/* Tests step i's current phase and moves it on: XCOLL_INPROGRESS, or
 * XCOLL_OK with *finished = 0 (it entered its next phase) or 1 (done). */
static xcoll_status_t gpu_test_step(xc_exec_t *x, uint32_t i, int *finished)
{
    const xc_step_t *st = &x->sched->steps[i];
    xc_gpu_step_t *g = &x->gstep[i];
    xcoll_status_t rc;

    *finished = 0;
    if (g->phase == GPHASE_GPU) {
        rc = x->gpu->query(g->ev);
        if (rc != XCOLL_OK)
            return rc;
        xc_gpu_event_put(g->ev);
        g->ev = NULL;
        if (st->kind == XC_STEP_SEND) {
            /* a staged send (the only kind with a GPU phase): the download
             * is done, send the copy */
            if ((rc = post_send(x, i, g->stage)) != XCOLL_OK)
                return rc;
            if (x->treq[i] != NULL)
                return XCOLL_OK;
        }
        *finished = 1;
        gpu_release_step(x, i);
        return XCOLL_OK;
    }
    rc = x->tl->test(x->tl_comm, x->treq[i]);
    if (rc != XCOLL_OK)
        return rc;
    x->treq[i] = NULL;
    if (st->kind == XC_STEP_SEND) {
        *finished = 1;
    } else if ((rc = gpu_after_net(x, i, finished)) != XCOLL_OK) {
        return rc;
    }
    if (*finished)
        gpu_release_step(x, i);
    return XCOLL_OK;
}

/* Waits for GPU work that cannot be abandoned: it does not depend on the
 * network, so it always ends, and its memory may then be reused. */
static void gpu_drain(const xc_gpu_backend_t *gpu, void *ev)
{
    while (gpu->query(ev) == XCOLL_INPROGRESS)
        ;
}

static void gpu_cancel_step(xc_exec_t *x, uint32_t i)
{
    xc_gpu_step_t *g = &x->gstep[i];
    if (g->phase == GPHASE_GPU) {
        gpu_drain(x->gpu, g->ev);
        gpu_release_step(x, i);
        return;
    }
    x->tl->cancel(x->tl_comm, x->treq[i]);
    /* UCX may still write a cancelled receive's block: it stays out of the
     * pool (accounted as in use) rather than go to another call */
    g->stage = NULL;
    gpu_release_step(x, i);
}

xcoll_status_t xc_exec_gpu_reserve(xc_exec_t *x)
{
    if (x->gpu == NULL || x->gstep == NULL || x->status != XCOLL_OK)
        return XCOLL_OK;
    return gpu_reserve(x);
}

static xcoll_status_t exec_use_gpu(xc_exec_t *x, const xc_exec_device_t *dev)
{
    const xc_sched_t *s = x->sched;
    xc_memtype_t tmp_mem;

    x->gpu = dev->gpu;
    x->mem[XC_BUF_SEND] = (uint8_t)dev->send_mem;
    x->mem[XC_BUF_RECV] = (uint8_t)dev->recv_mem;
    /* the call check's stamps are host data (run_local): with it, device
     * data is staged on every rank, as a transport may take device memory
     * on some ranks (alone on their node) and not others */
    x->tl_device = s->check_step < 0 && x->tl->device_memory != NULL &&
                   x->tl->device_memory(x->tl_comm);
    /* scratch lives where the transport can use it and a kernel can read
     * it: pinned host memory when staging, device memory otherwise */
    tmp_mem = x->tl_device ? XC_MEM_DEVICE : XC_MEM_PINNED;
    x->mem[XC_BUF_TMP] = (uint8_t)tmp_mem;
    x->gstep = xc_block_get(s->nsteps * sizeof(xc_gpu_step_t) + 1, 1);
    if (x->gstep == NULL) {
        xc_error("out of memory: device state for a schedule of %u steps", s->nsteps);
        return XCOLL_ERR_NO_MEMORY;
    }
    if (s->tmp_bytes > 0) {
        x->tmp_owned = tmp_mem == XC_MEM_DEVICE ? xc_gpu_dev_get(s->tmp_bytes)
                                                : xc_gpu_pinned_get(s->tmp_bytes);
        if (x->tmp_owned == NULL)
            return XCOLL_ERR_NO_MEMORY;
        x->buf[XC_BUF_TMP] = x->tmp_owned;
    }
    return dev->reserve ? gpu_reserve(x) : XCOLL_OK;
}

xcoll_status_t xc_exec_progress(xc_exec_t *x, int *progressed)
{
    const xc_sched_t *s = x->sched;
    xc_exec_work_t *w;
    uint32_t r, kept = 0;
    xcoll_status_t rc;
    int moved = 0;

    if (x->status != XCOLL_OK)
        return x->status;
    if (x->gate != NULL) {
        /* nothing may read the caller's buffers before its stream has
         * written them (and even a call with no steps is ordered after
         * that work, as its stream hold promises) */
        rc = xc_gpu()->query(x->gate);
        if (rc == XCOLL_INPROGRESS)
            return rc;
        xc_gpu_event_put(x->gate);
        x->gate = NULL;
        if (rc != XCOLL_OK) {
            xc_error("%s: waiting for the caller's stream failed", s->algo);
            x->status = rc;
            return rc;
        }
        moved = 1;
    }
    if (x->ndone == s->nsteps)
        return XCOLL_OK;
    w = work_of(x);
    /* test what is in flight, keeping posting order for the rest */
    for (r = 0; r < w->nrunning; r++) {
        uint32_t i = w->running[r];
        const xc_step_t *st = &s->steps[i];
        int finished = 1;
        if (x->gpu != NULL) {
            rc = gpu_test_step(x, i, &finished);
        } else {
            rc = x->tl->test(x->tl_comm, x->treq[i]);
            if (rc != XCOLL_INPROGRESS) {
                x->treq[i] = NULL;
                if (rc == XCOLL_OK)
                    rc = host_after_net(x, i);
            }
        }
        if (rc == XCOLL_INPROGRESS || (rc == XCOLL_OK && !finished)) {
            if (rc == XCOLL_OK)
                moved = 1; /* it moved to its next phase */
            w->running[kept++] = i;
            continue;
        }
        moved = 1;
        if (rc != XCOLL_OK) {
            xc_error("%s: step %u (%s, peer %d) failed: %s", s->algo, i, step_kind_name(st->kind),
                     st->peer, xcoll_strerror(rc));
            /* keep the rest so xc_exec_cancel can release them */
            for (r = r + 1; r < w->nrunning; r++)
                w->running[kept++] = w->running[r];
            w->nrunning = kept;
            x->status = rc;
            return rc;
        }
        finish_step(x, i);
    }
    w->nrunning = kept;
    while (w->ready_head < w->ready_tail) {
        uint32_t i = w->ready[w->ready_head++];
        moved = 1;
        rc = start_step(x, i);
        if (rc != XCOLL_OK) {
            if (rc != XCOLL_ERR_MISMATCH) /* check_stamps said why */
                xc_error("%s: could not start step %u (%s, peer %d): %s", s->algo, i,
                         step_kind_name(s->steps[i].kind), s->steps[i].peer,
                         xcoll_strerror(rc));
            x->status = rc;
            return rc;
        }
    }
    if (progressed != NULL && moved)
        *progressed = 1;
    return x->ndone == s->nsteps ? XCOLL_OK : XCOLL_INPROGRESS;
}

void xc_exec_log_pending(const xc_exec_t *x, const char *what)
{
    const xc_sched_t *s = x->sched;
    const xc_exec_work_t *w = work_of(x);
    uint32_t r, i, shown = 0;

    for (r = 0; r < w->nrunning && shown < 8; r++, shown++) {
        const xc_step_t *st = &s->steps[w->running[r]];
        xc_error("%s: step %u %s %s rank %d (%zu bytes) still pending", what, w->running[r],
                 step_kind_name(st->kind), st->kind == XC_STEP_SEND ? "to" : "from", st->peer,
                 st->bytes);
    }
    if (w->nrunning > shown)
        xc_error("%s: ... and %u more in flight", what, w->nrunning - shown);
    for (i = 0; i < s->nsteps && shown < 8; i++) {
        if (x->state[i] != XC_STATE_WAITING)
            continue;
        xc_error("%s: step %u %s (peer %d) not started: waits for earlier steps", what, i,
                 step_kind_name(s->steps[i].kind), s->steps[i].peer);
        shown++;
        break; /* the first blocked step says enough */
    }
}

unsigned xc_exec_pending_peers(const xc_exec_t *x, int *peers, unsigned max)
{
    const xc_exec_work_t *w;
    unsigned n = 0, k;
    uint32_t r;
    if (x->state_mem == NULL)
        return 0;
    w = work_of(x);
    for (r = 0; r < w->nrunning && n < max; r++) {
        const xc_step_t *st = &x->sched->steps[w->running[r]];
        if (st->kind != XC_STEP_SEND && st->kind != XC_STEP_RECV &&
            st->kind != XC_STEP_RECV_REDUCE)
            continue;
        for (k = 0; k < n && peers[k] != st->peer; k++)
            ;
        if (k == n)
            peers[n++] = st->peer;
    }
    return n;
}

void xc_exec_cancel(xc_exec_t *x)
{
    xc_exec_work_t *w;
    uint32_t r;
    if (x->state_mem == NULL)
        return;
    w = work_of(x);
    for (r = 0; r < w->nrunning; r++) {
        uint32_t i = w->running[r];
        if (x->gpu != NULL)
            gpu_cancel_step(x, i);
        else
            x->tl->cancel(x->tl_comm, x->treq[i]);
        x->treq[i] = NULL;
        /* UCX may still read or write a cancelled step's staging block: it
         * stays out of the pool rather than go to another call; so does
         * the scratch its message may land in */
        if (x->lstage != NULL)
            x->lstage[i] = NULL;
        x->tmp_abandoned = 1;
    }
    if (x->gate != NULL) {
        /* not drained: it may sit behind an earlier call's hold on the
         * same stream, which only progress releases; recording a pooled
         * event again later is legal even while it is pending */
        xc_gpu_event_put(x->gate);
        x->gate = NULL;
    }
    w->nrunning = 0;
    w->ready_head = w->ready_tail;
    if (x->status == XCOLL_OK && x->ndone != x->sched->nsteps)
        x->status = XCOLL_ERR_TIMEOUT;
}

int xc_exec_reusable(const xc_exec_t *x)
{
    return x->state_mem != NULL && x->gpu == NULL && x->lstage == NULL && x->gate == NULL &&
           !x->tmp_abandoned && x->status == XCOLL_OK && x->ndone == x->sched->nsteps;
}

void xc_exec_rerun(xc_exec_t *x, void *sendbuf, void *recvbuf, uint32_t seq)
{
    x->buf[XC_BUF_SEND] = sendbuf;
    x->buf[XC_BUF_RECV] = recvbuf;
    x->seq = seq;
    reset_run(x);
}

void xc_exec_fini(xc_exec_t *x)
{
    if (x->state_mem != NULL && (work_of(x)->nrunning > 0 || x->gate != NULL))
        xc_exec_cancel(x);
    xc_block_put(x->state_mem);
    if (x->lstage != NULL) {
        uint32_t i;
        for (i = 0; i < x->sched->nsteps; i++)
            xc_block_put(x->lstage[i]);
        xc_block_put(x->lstage);
    }
    if (x->gpu != NULL) {
        uint32_t i;
        /* blocks reserved for steps that never ran */
        for (i = 0; x->gstep != NULL && i < x->sched->nsteps; i++)
            gpu_release_step(x, i);
        xc_block_put(x->gstep);
        if (x->tl_device)
            xc_gpu_dev_put(x->tmp_owned);
        else
            xc_gpu_pinned_put(x->tmp_owned);
        x->tmp_owned = NULL;
    }
    if (!x->tmp_abandoned)
        xc_block_put(x->tmp_owned);
    memset(x, 0, sizeof(*x));
}
