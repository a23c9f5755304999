/* Pairwise exchange alltoall: at step k (1 <= k < size) rank r sends its
 * block for rank r+k and receives the block of rank r-k, so every pair
 * exchanges exactly once and at each step every rank sends to one peer and
 * receives from one peer. */
#include <stdlib.h>

#include "coll.h"
#include "log.h"

/* Steps in flight: step k starts when step k - PAIRWISE_WINDOW is done.
 * One step at a time is the textbook schedule but pays a full latency per
 * step; posting all size-1 at once floods every receiver with unexpected
 * messages. A few overlap the latencies and keep the traffic spread. */
#define PAIRWISE_WINDOW 4

xcoll_status_t pairwise_alltoall_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t block = a->count * s->dsize;
    int *ids, k, staged = -1;
    size_t stage = 0;

    if (!a->in_place)
        xc_copy(s, XC_AT_SEND((size_t)r * block), XC_AT_RECV((size_t)r * block), block,
                XC_NODEPS);
    if (P == 1)
        return s->err;

    /* In place a block received early would overwrite one not yet sent:
     * send from a copy of the input instead. The own block stays put. */
    if (a->in_place) {
        stage = xc_sched_tmp(s, (size_t)P * block);
        staged = xc_copy(s, XC_AT_RECV(0), XC_AT_TMP(stage), (size_t)P * block, XC_NODEPS);
    }

    ids = malloc(2 * (size_t)P * sizeof(int)); /* [2k]: send of step k, [2k+1]: its recv */
    if (ids == NULL) {
        xc_error("out of memory building an alltoall schedule for %d ranks", P);
        s->err = XCOLL_ERR_NO_MEMORY;
        return s->err;
    }
    for (k = 1; k < P; k++) {
        const int to = (r + k) % P, from = (r - k + P) % P;
        const int w = k - PAIRWISE_WINDOW;
        const int wsend = w >= 1 ? ids[2 * w] : -1, wrecv = w >= 1 ? ids[2 * w + 1] : -1;
        xc_ref_t src = a->in_place ? XC_AT_TMP(stage + (size_t)to * block)
                                   : XC_AT_SEND((size_t)to * block);
        ids[2 * k] = xc_send(s, to, src, block, XC_DEPS(staged, wsend, wrecv));
        ids[2 * k + 1] = xc_recv(s, from, XC_AT_RECV((size_t)from * block), block,
                                 XC_DEPS(staged, wsend, wrecv));
    }
    free(ids);
    return s->err;
}

/* Where block j of an alltoallv's input lies: in SEND (scounts/sdispls),
 * or in place in the staged copy of RECV (rcounts, packed in rank order
 * at offset stage of tmp). */
typedef struct {
    const xc_coll_args_t *a;
    size_t ds, stage;
    size_t *staged_at; /* in place: byte offset of block j in tmp */
    int staged;        /* the staging copies' join, or -1 */
} vsrc_t;

/* In place a block received early would overwrite one not yet sent, so
 * the blocks to send are copied aside first, each where the packed copy
 * puts it; the own block stays put. */
static xcoll_status_t vsrc_init(vsrc_t *v, xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size;
    size_t total = 0;
    int j, first;
    v->a = a;
    v->ds = s->dsize;
    v->staged = -1;
    v->staged_at = NULL;
    if (!a->in_place)
        return s->err;
    v->staged_at = malloc((size_t)P * sizeof(size_t));
    if (v->staged_at == NULL) {
        xc_error("out of memory building an alltoallv schedule for %d ranks", P);
        return s->err = XCOLL_ERR_NO_MEMORY;
    }
    for (j = 0; j < P; j++) {
        v->staged_at[j] = total;
        if (j != a->rank)
            total += a->rcounts[j] * v->ds;
    }
    v->stage = xc_sched_tmp(s, total);
    first = (int)s->nsteps;
    for (j = 0; j < P; j++)
        if (j != a->rank && a->rcounts[j] > 0)
            xc_copy(s, XC_AT_RECV(a->rdispls[j] * v->ds), XC_AT_TMP(v->stage + v->staged_at[j]),
                    a->rcounts[j] * v->ds, XC_NODEPS);
    if ((int)s->nsteps > first)
        v->staged = xc_join(s, first);
    return s->err;
}

static size_t vsrc_bytes(const vsrc_t *v, int j)
{
    return (v->a->in_place ? v->a->rcounts[j] : v->a->scounts[j]) * v->ds;
}

static xc_ref_t vsrc_at(const vsrc_t *v, int j)
{
    return v->a->in_place ? XC_AT_TMP(v->stage + v->staged_at[j])
                          : XC_AT_SEND(v->a->sdispls[j] * v->ds);
}

/* The own block, out of place: SEND to RECV. */
static void v_own_block(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int r = a->rank;
    if (!a->in_place)
        xc_skip_if_empty(s, xc_copy(s, XC_AT_SEND(a->sdispls[r] * s->dsize),
                                    XC_AT_RECV(a->rdispls[r] * s->dsize),
                                    a->rcounts[r] * s->dsize, XC_NODEPS));
}

/* Every block has its steps, empty or not, marked to be no message where
 * empty (XC_STEP_F_SKIP_EMPTY): message slots then count the same on
 * both sides whatever each side's in-place choice, and out of place the
 * schedule depends on no count but the ack limit's side of each block,
 * so it serves every exchange matrix of that shape (xc_alltoallv_rebind). */
static int v_send(xc_sched_t *s, const vsrc_t *v, int to, const int *deps, int ndeps)
{
    return xc_skip_if_empty(s, xc_send(s, to, vsrc_at(v, to), vsrc_bytes(v, to), deps, ndeps));
}

static int v_recv(xc_sched_t *s, const xc_coll_args_t *a, int from, const int *deps, int ndeps)
{
    return xc_skip_if_empty(s, xc_recv(s, from, XC_AT_RECV(a->rdispls[from] * s->dsize),
                                       a->rcounts[from] * s->dsize, deps, ndeps));
}

/* Pairwise alltoallv: the steps of the alltoall above, each block its own
 * size; an empty block is neither sent nor received (the peer's count for
 * it is zero too), and the window counts steps, empty or not. */
xcoll_status_t pairwise_alltoallv_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    vsrc_t v;
    int *ids, k;

    v_own_block(s, a);
    if (P == 1 || vsrc_init(&v, s, a) != XCOLL_OK)
        return s->err;
    ids = malloc(2 * (size_t)P * sizeof(int));
    if (ids == NULL) {
        free(v.staged_at);
        xc_error("out of memory building an alltoallv schedule for %d ranks", P);
        return s->err = XCOLL_ERR_NO_MEMORY;
    }
    for (k = 1; k < P; k++) {
        const int to = (r + k) % P, from = (r - k + P) % P;
        const int w = k - PAIRWISE_WINDOW;
        const int wsend = w >= 1 ? ids[2 * w] : -1, wrecv = w >= 1 ? ids[2 * w + 1] : -1;
        ids[2 * k] = v_send(s, &v, to, XC_DEPS(v.staged, wsend, wrecv));
        ids[2 * k + 1] = v_recv(s, a, from, XC_DEPS(v.staged, wsend, wrecv));
    }
    free(ids);
    free(v.staged_at);
    return s->err;
}

/* Sends in flight in the scattered alltoallv. */
#define SCATTERED_WINDOW 8

/* Scattered alltoallv: every receive is posted at once, and the sends go
 * out in the pairwise order with up to SCATTERED_WINDOW in flight, so
 * whichever peer is ready first is served first: the choice for sparse or
 * skewed exchange matrices (MoE routing), where lockstep pairs would wait
 * on the largest block of every step. */
xcoll_status_t scattered_alltoallv_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    int win[SCATTERED_WINDOW], n = 0, k;
    vsrc_t v;

    v_own_block(s, a);
    if (P == 1 || vsrc_init(&v, s, a) != XCOLL_OK)
        return s->err;
    for (k = 1; k < P; k++)
        v_recv(s, a, (r - k + P) % P, XC_DEPS(v.staged));
    for (k = 1; k < P; k++) {
        const int to = (r + k) % P;
        win[n % SCATTERED_WINDOW] =
            v_send(s, &v, to,
                   XC_DEPS(v.staged, n >= SCATTERED_WINDOW ? win[n % SCATTERED_WINDOW] : -1));
        n++;
    }
    free(v.staged_at);
    return s->err;
}

/* Both alltoallv algorithms above move, out of place, each block as one
 * step that its peer names, empty or not: a send of SEND block `to`, a
 * receive into RECV block `from`, the copy of the own block; acks
 * (xc_sched_add_acks) are zero-byte messages on no buffer. Which steps
 * exist, their order and dependencies follow only from which blocks
 * exceed the ack limit (the shape), so a schedule built for some counts
 * serves other counts of its shape once its steps say the new offsets and
 * lengths. */
int xc_alltoallv_rebind(xc_sched_t *s, const xc_coll_args_t *a, int check_only)
{
    const size_t ds = s->dsize;
    const int r = a->rank;
    uint32_t i;
    if (a->in_place || a->scounts == NULL)
        return 0;
    for (i = 0; i < s->nsteps; i++) {
        xc_step_t *st = &s->steps[i];
        size_t aoff = st->a.off, doff = st->dst.off, bytes;
        if ((st->kind == XC_STEP_SEND && st->a.buf == XC_BUF_NONE) ||
            (st->kind == XC_STEP_RECV && st->dst.buf == XC_BUF_NONE))
            continue; /* an ack */
        if (!(st->flags & XC_STEP_F_SKIP_EMPTY))
            return 0;
        if (st->kind == XC_STEP_SEND && st->a.buf == XC_BUF_SEND) {
            aoff = a->sdispls[st->peer] * ds;
            bytes = a->scounts[st->peer] * ds;
        } else if (st->kind == XC_STEP_RECV && st->dst.buf == XC_BUF_RECV) {
            doff = a->rdispls[st->peer] * ds;
            bytes = a->rcounts[st->peer] * ds;
        } else if (st->kind == XC_STEP_COPY && st->a.buf == XC_BUF_SEND &&
                   st->dst.buf == XC_BUF_RECV) {
            aoff = a->sdispls[r] * ds;
            doff = a->rdispls[r] * ds;
            bytes = a->rcounts[r] * ds;
        } else {
            return 0;
        }
        if (check_only) {
            if (aoff != st->a.off || doff != st->dst.off || bytes != st->bytes)
                return 0;
        } else {
            st->a.off = aoff;
            st->dst.off = doff;
            st->bytes = bytes;
        }
    }
    return 1;
}
