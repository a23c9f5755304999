/* Loopback transport; see loopback.h. Each endpoint keeps two FIFO lists:
 * receives posted and not yet matched, and messages arrived (sent to it)
 * and not yet matched. Matching happens inside isend/irecv; in delayed
 * mode the data of a matched pair moves only in lb_world_deliver(). */
#include <stdlib.h>
#include <string.h>

#include "loopback.h"
#include "log.h"

typedef enum { LB_SEND = 0, LB_RECV } lb_kind_t;

typedef struct lb_req {
    struct lb_req *prev, *next; /* in a queue while unmatched */
    lb_kind_t kind;
    int src, dst;
    uint64_t tag;
    void *buf;        /* receive: destination; send: data (copy if eager) */
    size_t len;
    int owned;        /* eager copy that the transport frees */
    int has_owner;    /* a caller holds this request and will test it */
    int queued;
    int in_transit;   /* matched, data not moved yet (delayed mode) */
    int done;
    xcoll_status_t status;
    int reducing;     /* receive from lb_irecv_reduce */
    xc_land_reduce_t red;
} lb_req_t;

typedef struct {
    lb_req_t *head, *tail;
} lb_queue_t;

typedef struct lb_endpoint {
    struct lb_world *world;
    int rank;
    lb_queue_t posted;     /* receives waiting for a message */
    lb_queue_t unexpected; /* messages waiting for a receive */
    lb_stats_t stats;
} lb_endpoint_t;

/* A matched send and receive whose data has not moved yet. */
typedef struct {
    lb_req_t *s, *r;
} lb_transit_t;

struct lb_world {
    int device; /* claims to take device memory (a CUDA-aware transport) */
    int n;
    int eager;
    int delayed;
    int land_reduce; /* offers irecv_reduce */
    uint64_t rng;
    lb_transit_t *transit;
    size_t ntransit, transit_cap;
    lb_endpoint_t *ep;
};

static void q_push(lb_queue_t *q, lb_req_t *r)
{
    r->next = NULL;
    r->prev = q->tail;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
    r->queued = 1;
}

static void q_remove(lb_queue_t *q, lb_req_t *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        q->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        q->tail = r->prev;
    r->prev = r->next = NULL;
    r->queued = 0;
}

static lb_req_t *q_find(lb_queue_t *q, int src, uint64_t tag)
{
    lb_req_t *r;
    for (r = q->head; r != NULL; r = r->next)
        if (r->src == src && r->tag == tag)
            return r;
    return NULL;
}

static void q_free_all(lb_queue_t *q)
{
    while (q->head) {
        lb_req_t *r = q->head;
        q_remove(q, r);
        if (r->owned)
            free(r->buf);
        free(r);
    }
}

lb_world_t *lb_world_create(int nranks)
{
    lb_world_t *w;
    int i;
    if (nranks <= 0)
        return NULL;
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->ep = calloc((size_t)nranks, sizeof(*w->ep));
    if (w->ep == NULL) {
        free(w);
        return NULL;
    }
    w->n = nranks;
    for (i = 0; i < nranks; i++) {
        w->ep[i].world = w;
        w->ep[i].rank = i;
    }
    return w;
}

void lb_world_destroy(lb_world_t *w)
{
    size_t k;
    int i;
    if (w == NULL)
        return;
    /* Requests still held by callers are theirs to cancel; whatever is
     * queued and unowned goes here. */
    for (i = 0; i < w->n; i++) {
        q_free_all(&w->ep[i].posted);
        q_free_all(&w->ep[i].unexpected);
    }
    for (k = 0; k < w->ntransit; k++) {
        lb_req_t *s = w->transit[k].s;
        if (!s->has_owner) {
            if (s->owned)
                free(s->buf);
            free(s);
        }
    }
    free(w->transit);
    free(w->ep);
    free(w);
}

void *lb_comm(lb_world_t *w, int rank)
{
    return rank >= 0 && rank < w->n ? &w->ep[rank] : NULL;
}

void lb_world_set_eager(lb_world_t *w, int eager) { w->eager = eager; }

void lb_world_set_device(lb_world_t *w, int device) { w->device = device; }

void lb_world_set_land_reduce(lb_world_t *w, int on) { w->land_reduce = on; }

void lb_world_set_delayed(lb_world_t *w, int delayed, uint64_t seed)
{
    w->delayed = delayed;
    w->rng = seed * 2 + 1;
}

void lb_stats(const lb_world_t *w, int rank, lb_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    if (rank >= 0 && rank < w->n)
        *out = w->ep[rank].stats;
}

void lb_stats_reset(lb_world_t *w)
{
    int i;
    for (i = 0; i < w->n; i++)
        memset(&w->ep[i].stats, 0, sizeof(w->ep[i].stats));
}

size_t lb_world_pending(const lb_world_t *w)
{
    size_t n = 0;
    int i;
    for (i = 0; i < w->n; i++) {
        const lb_req_t *r;
        for (r = w->ep[i].posted.head; r; r = r->next)
            n++;
        for (r = w->ep[i].unexpected.head; r; r = r->next)
            n++;
    }
    return n + w->ntransit;
}

static uint64_t next_random(lb_world_t *w);

/* A reducing receive takes its message as a transport reading the
 * sender's memory does: in pieces (of random sizes here, whole elements),
 * never landing it. A landing buffer apart from the destination gets
 * garbage, so an engine that reads it after all fails. */
static void reduce_in_pieces(lb_world_t *w, const lb_req_t *s, const lb_req_t *r)
{
    size_t es = xcoll_dtype_size(r->red.dtype), off = 0;
    while (off < r->len) {
        size_t n = (1 + next_random(w) % 64) * es;
        if (n > r->len - off)
            n = r->len - off;
        xc_land_reduce_apply(&r->red, off, (const char *)s->buf + off, n);
        off += n;
    }
    /* a schedule may name its landing buffer as the destination */
    if ((char *)r->buf + r->len <= (char *)r->red.dst ||
        (char *)r->red.dst + r->len <= (char *)r->buf)
        memset(r->buf, 0xa5, r->len);
}

/* Moves the data of send s into receive r and completes both (a send
 * nobody holds any more is freed). */
static void deliver(lb_endpoint_t *dst, lb_req_t *s, lb_req_t *r)
{
    size_t n = s->len < r->len ? s->len : r->len;
    if (r->reducing && s->len == r->len)
        reduce_in_pieces(dst->world, s, r);
    else if (n > 0)
        memcpy(r->buf, s->buf, n);
    r->status = s->len == r->len ? XCOLL_OK : XCOLL_ERR_TRUNCATED;
    r->done = 1;
    s->status = XCOLL_OK;
    s->done = 1;
    dst->stats.msgs_recvd++;
    dst->stats.bytes_recvd += s->len;
    if (!s->has_owner) {
        if (s->owned)
            free(s->buf);
        free(s);
    }
}

/* Delayed mode parks a matched pair; lb_world_deliver() moves it later. */
static xcoll_status_t match(lb_endpoint_t *dst, lb_req_t *s, lb_req_t *r)
{
    lb_world_t *w = dst->world;
    if (!w->delayed) {
        deliver(dst, s, r);
        return XCOLL_OK;
    }
    if (w->ntransit == w->transit_cap) {
        size_t cap = w->transit_cap ? 2 * w->transit_cap : 64;
        lb_transit_t *n = realloc(w->transit, cap * sizeof(*n));
        if (n == NULL)
            return XCOLL_ERR_NO_MEMORY;
        w->transit = n;
        w->transit_cap = cap;
    }
    w->transit[w->ntransit].s = s;
    w->transit[w->ntransit].r = r;
    w->ntransit++;
    s->in_transit = r->in_transit = 1;
    return XCOLL_OK;
}

static uint64_t next_random(lb_world_t *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static size_t deliver_some(lb_world_t *w, int all)
{
    size_t k = 0, moved = 0;
    while (k < w->ntransit) {
        lb_transit_t tr = w->transit[k];
        if (!all && (next_random(w) & 1)) {
            k++;
            continue;
        }
        w->transit[k] = w->transit[--w->ntransit];
        tr.s->in_transit = tr.r->in_transit = 0;
        deliver(&w->ep[tr.r->dst], tr.s, tr.r);
        moved++;
    }
    return moved;
}

size_t lb_world_deliver(lb_world_t *w) { return deliver_some(w, 0); }

size_t lb_world_flush(lb_world_t *w) { return deliver_some(w, 1); }

static xcoll_status_t lb_isend(void *tl_comm, int peer, uint64_t tag, const void *buf,
                               size_t len, void **req)
{
    lb_endpoint_t *src = tl_comm;
    lb_world_t *w = src->world;
    lb_endpoint_t *dst;
    lb_req_t *s, *r;

    *req = NULL;
    if (peer < 0 || peer >= w->n) {
        xc_error("loopback: send from rank %d to rank %d of %d", src->rank, peer, w->n);
        return XCOLL_ERR_INVALID_ARG;
    }
    dst = &w->ep[peer];
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return XCOLL_ERR_NO_MEMORY;
    s->kind = LB_SEND;
    s->src = src->rank;
    s->dst = peer;
    s->tag = tag;
    s->len = len;
    s->buf = (void *)buf;
    if (w->eager && len > 0) {
        s->buf = malloc(len);
        if (s->buf == NULL) {
            free(s);
            return XCOLL_ERR_NO_MEMORY;
        }
        memcpy(s->buf, buf, len);
        s->owned = 1;
    }
    src->stats.msgs_sent++;
    src->stats.bytes_sent += len;

    /* An eager send is complete for its caller at once. */
    s->has_owner = !w->eager;
    r = q_find(&dst->posted, src->rank, tag);
    if (r != NULL) {
        xcoll_status_t st;
        q_remove(&dst->posted, r);
        if (!w->delayed)
            s->has_owner = 0; /* complete right here: nothing to test */
        if (s->has_owner)
            *req = s;
        st = match(dst, s, r);
        if (st != XCOLL_OK) {
            *req = NULL;
            if (s->owned)
                free(s->buf);
            free(s);
        }
        return st;
    }
    q_push(&dst->unexpected, s);
    if (s->has_owner)
        *req = s;
    return XCOLL_OK;
}

static xcoll_status_t post_recv(void *tl_comm, int peer, uint64_t tag, void *buf, size_t len,
                                const xc_land_reduce_t *red, void **req)
{
    lb_endpoint_t *dst = tl_comm;
    lb_world_t *w = dst->world;
    lb_req_t *s, *r;
    xcoll_status_t st;

    *req = NULL;
    if (peer < 0 || peer >= w->n) {
        xc_error("loopback: rank %d receives from rank %d of %d", dst->rank, peer, w->n);
        return XCOLL_ERR_INVALID_ARG;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return XCOLL_ERR_NO_MEMORY;
    r->kind = LB_RECV;
    r->src = peer;
    r->dst = dst->rank;
    r->tag = tag;
    r->buf = buf;
    r->len = len;
    r->has_owner = 1;
    if (red != NULL) {
        r->reducing = 1;
        r->red = *red;
    }
    s = q_find(&dst->unexpected, peer, tag);
    if (s != NULL && w->delayed) {
        q_remove(&dst->unexpected, s);
        st = match(dst, s, r);
        if (st != XCOLL_OK) {
            free(r);
            return st;
        }
        *req = r;
        return XCOLL_OK;
    }
    if (s != NULL) {
        size_t sent = s->len;
        q_remove(&dst->unexpected, s);
        deliver(dst, s, r);
        /* completed at once: report it now, as UCX may */
        st = r->status;
        free(r);
        if (st != XCOLL_OK)
            xc_error("loopback: rank %d got %zu bytes from rank %d, expected %zu", dst->rank,
                     sent, peer, len);
        return st;
    }
    q_push(&dst->posted, r);
    *req = r;
    return XCOLL_OK;
}

static xcoll_status_t lb_irecv(void *tl_comm, int peer, uint64_t tag, void *buf, size_t len,
                               void **req)
{
    return post_recv(tl_comm, peer, tag, buf, len, NULL, req);
}

static xcoll_status_t lb_irecv_reduce(void *tl_comm, int peer, uint64_t tag, void *buf,
                                      size_t len, const xc_land_reduce_t *red, void **req)
{
    lb_endpoint_t *ep = tl_comm;
    if (!ep->world->land_reduce)
        return XCOLL_DECLINED;
    if (red == NULL || red->dst == NULL || red->a == NULL || buf == NULL) {
        xc_error("loopback: rank %d: a reducing receive without its buffers", ep->rank);
        return XCOLL_ERR_INVALID_ARG;
    }
    return post_recv(tl_comm, peer, tag, buf, len, red, req);
}

static xcoll_status_t lb_test(void *tl_comm, void *req)
{
    lb_req_t *r = req;
    xcoll_status_t st;
    (void)tl_comm;
    if (!r->done)
        return XCOLL_INPROGRESS;
    st = r->status;
    if (st != XCOLL_OK)
        xc_error("loopback: rank %d: receive from rank %d of %zu bytes got a different length",
                 r->dst, r->src, r->len);
    if (r->owned)
        free(r->buf);
    free(r);
    return st;
}

static void lb_cancel(void *tl_comm, void *req)
{
    lb_req_t *r = req;
    lb_endpoint_t *ep = tl_comm;
    lb_world_t *w = ep->world;
    size_t k;
    if (r->queued) {
        /* an unmatched receive sits at its own endpoint, a send at its peer's */
        if (r->kind == LB_RECV)
            q_remove(&w->ep[r->dst].posted, r);
        else
            q_remove(&w->ep[r->dst].unexpected, r);
    }
    for (k = 0; r->in_transit && k < w->ntransit; k++) {
        lb_transit_t tr = w->transit[k];
        lb_req_t *other;
        if (tr.s != r && tr.r != r)
            continue;
        /* the partner completes without data: a cancelled send fails its
         * receive, a cancelled receive swallows its send */
        w->transit[k] = w->transit[--w->ntransit];
        other = tr.s == r ? tr.r : tr.s;
        other->in_transit = 0;
        other->done = 1;
        other->status = other->kind == LB_RECV ? XCOLL_ERR_TRANSPORT : XCOLL_OK;
        if (other->kind == LB_SEND && !other->has_owner) {
            if (other->owned)
                free(other->buf);
            free(other);
        }
        break;
    }
    if (r->owned)
        free(r->buf);
    free(r);
}

static int lb_progress(void *tl_comm)
{
    lb_endpoint_t *ep = tl_comm;
    return (int)lb_world_deliver(ep->world);
}

static int lb_device_memory(void *tl_comm)
{
    return ((lb_endpoint_t *)tl_comm)->world->device;
}

static void lb_idle(void *tl_comm, unsigned idle_rounds, unsigned max_wait_us)
{
    (void)tl_comm;
    (void)idle_rounds;
    (void)max_wait_us;
}

static xcoll_status_t lb_comm_init(const xcoll_bootstrap_t *boot, const struct xc_topo *topo,
                                   void **tl_comm)
{
    (void)boot;
    (void)topo;
    *tl_comm = NULL;
    xc_error("loopback: comm_init is not used; take endpoints from lb_comm()");
    return XCOLL_ERR_UNSUPPORTED;
}

static void lb_comm_fini(void *tl_comm) { (void)tl_comm; }

const xc_transport_t lb_transport = {
    .name = "loopback",
    .comm_init = lb_comm_init,
    .comm_fini = lb_comm_fini,
    .isend = lb_isend,
    .irecv = lb_irecv,
    .irecv_reduce = lb_irecv_reduce,
    .test = lb_test,
    .cancel = lb_cancel,
    .progress = lb_progress,
    .idle = lb_idle,
    .device_memory = lb_device_memory,
};
