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
    static const char *names[XC_STEP_KIND_COUNT] = {"send",   "recv",   "recv+reduce",
                                                    "copy",   "reduce", "divide"};
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

xcoll_status_t xc_exec_init(xc_exec_t *x, const xc_sched_t *sched, void *sendbuf, void *recvbuf,
                            const xc_transport_t *tl, void *tl_comm, uint32_t comm_id,
                            uint32_t seq)
{
    size_t n = sched->nsteps, i;
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
    if (sched->tmp_bytes > 0) {
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
    for (i = 0; i < n; i++) {
        w->pending[i] = sched->steps[i].ndeps;
        if (w->pending[i] == 0)
            w->ready[w->ready_tail++] = (uint32_t)i;
    }
    x->status = XCOLL_OK;
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
        xc_reduce(dst, a, b, count, s->dtype, s->op);
        return XCOLL_OK;
    }
    case XC_STEP_DIVIDE:
        if (dst == NULL)
            break;
        xc_divide(dst, count, s->dtype, s->divisor);
        return XCOLL_OK;
    default:
        return XCOLL_OK;
    }
    xc_error("schedule %s: %s step touches a buffer the call did not provide", s->algo,
             step_kind_name(st->kind));
    return XCOLL_ERR_INTERNAL;
}

static xcoll_status_t start_step(xc_exec_t *x, uint32_t i)
{
    const xc_step_t *st = &x->sched->steps[i];
    xc_exec_work_t *w = work_of(x);
    xcoll_status_t rc;
    void *req = NULL;

    switch ((xc_step_kind_t)st->kind) {
    case XC_STEP_SEND:
        rc = x->tl->isend(x->tl_comm, st->peer, tag_for(x, st, x->sched->rank), addr(x, st->a),
                          st->bytes, &req);
        x->msgs_sent++;
        x->bytes_sent += st->bytes;
        if (st->bytes > x->max_send)
            x->max_send = st->bytes;
        break;
    case XC_STEP_RECV:
        rc = x->tl->irecv(x->tl_comm, st->peer, tag_for(x, st, st->peer), addr(x, st->dst),
                          st->bytes, &req);
        break;
    case XC_STEP_RECV_REDUCE:
        rc = x->tl->irecv(x->tl_comm, st->peer, tag_for(x, st, st->peer), addr(x, st->b),
                          st->bytes, &req);
        break;
    default:
        rc = run_local(x, st);
        if (rc == XCOLL_OK)
            finish_step(x, i);
        return rc;
    }
    if (rc != XCOLL_OK)
        return rc;
    if (req == NULL) {
        if (st->kind == XC_STEP_RECV_REDUCE && (rc = run_local(x, st)) != XCOLL_OK)
            return rc;
        finish_step(x, i);
        return XCOLL_OK;
    }
    x->treq[i] = req;
    x->state[i] = XC_STATE_RUNNING;
    w->running[w->nrunning++] = i;
    return XCOLL_OK;
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
    if (x->ndone == s->nsteps)
        return XCOLL_OK;
    w = work_of(x);
    /* test what is in flight, keeping posting order for the rest */
    for (r = 0; r < w->nrunning; r++) {
        uint32_t i = w->running[r];
        const xc_step_t *st = &s->steps[i];
        rc = x->tl->test(x->tl_comm, x->treq[i]);
        if (rc == XCOLL_INPROGRESS) {
            w->running[kept++] = i;
            continue;
        }
        x->treq[i] = NULL;
        moved = 1;
        if (rc == XCOLL_OK && st->kind == XC_STEP_RECV_REDUCE)
            rc = run_local(x, st);
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
            xc_error("%s: could not start step %u (%s, peer %d): %s", s->algo, i,
                     step_kind_name(s->steps[i].kind), s->steps[i].peer, xcoll_strerror(rc));
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

void xc_exec_cancel(xc_exec_t *x)
{
    xc_exec_work_t *w;
    uint32_t r;
    if (x->state_mem == NULL)
        return;
    w = work_of(x);
    for (r = 0; r < w->nrunning; r++) {
        uint32_t i = w->running[r];
        x->tl->cancel(x->tl_comm, x->treq[i]);
        x->treq[i] = NULL;
    }
    w->nrunning = 0;
    w->ready_head = w->ready_tail;
    if (x->status == XCOLL_OK && x->ndone != x->sched->nsteps)
        x->status = XCOLL_ERR_TIMEOUT;
}

void xc_exec_fini(xc_exec_t *x)
{
    if (x->state_mem != NULL && work_of(x)->nrunning > 0)
        xc_exec_cancel(x);
    xc_block_put(x->state_mem);
    xc_block_put(x->tmp_owned);
    memset(x, 0, sizeof(*x));
}
