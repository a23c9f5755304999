/* The cost model (model.h): every rank's schedule, run as events on a
 * modelled cluster. One pass, in time order: a step that becomes ready
 * takes the resources it needs (its core's CPU, the ways out and in, the
 * NICs) first come first served, and its completion is an event. Steps
 * are kept compact (32 bytes, in blocks laid out block index first, in
 * large mappings) so 4096 ranks of a ring fit in memory and in cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "model.h"
#include "../core/log.h"
#include "../core/topo.h"
#include "../core/transport.h"

void xc_model_params_default(xc_model_params_t *p)
{
    /* the 2-core development machine (bench/calibrate_model.py, the fit
     * of 2026-12-05 that docs/SCALING.md's curves were drawn with; the
     * script prints the current one as options): xcoll's shared memory
     * within a node; between nodes the namespace cluster's unshaped veth
     * links (TCP on the same cores); copies at memcpy's speed
     * (bench/results/memcpy). No cache and no turn: those describe this
     * machine only (--memory, --turn), not the clusters predicted. */
    p->intra.alpha = 1.0e-6;
    p->intra.beta = 1.0 / 13.7e9;
    p->inter.alpha = 31.4e-6;
    p->inter.beta = 1.0 / 1.23e9;
    p->overhead = 0.5e-6;
    p->gamma = 1.0 / 7.9e9;
    p->copy = 1.0 / 14.0e9;
    p->cores = 0;
    p->turn = 0;
    p->cache = 0;
    p->dram = 1;
    p->inter_cpu = 0;
    p->forward = 1;
    p->split = (double)XC_SPLIT_MIN_DEFAULT; /* as the transport splits */
}

int xc_model_parse_link(const char *text, xc_link_cost_t *out)
{
    char *end;
    double gbs, us;
    if (text == NULL)
        return -1;
    gbs = strtod(text, &end);
    if (end == text || *end != ',' || !(gbs > 0) || !isfinite(gbs))
        return -1;
    text = end + 1;
    us = strtod(text, &end);
    if (end == text || *end != '\0' || !(us >= 0) || !isfinite(us))
        return -1;
    if (!isfinite(1.0 / (gbs * 1e9))) /* a rate so small its inverse overflows */
        return -1;
    out->beta = 1.0 / (gbs * 1e9);
    out->alpha = us * 1e-6;
    return 0;
}

/* ------------------------------------------------------------ the ranks */

/* A hint: what the simulation will touch next, while it does this. */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* A message step's state while it waits for its other end (receives
 * only: the send side finds the receive and writes here). */
/* M_TO_READ_HALF: a split copy whose sender copies half (rendezvous) */
enum { M_IDLE = 0, M_POSTED, M_SEND_WAITING, M_LANDED_EARLY, M_TO_READ, M_TO_READ_HALF };

typedef struct {
    uint64_t bytes;
    double t;           /* receive: when posted, landed or its send was ready */
    int32_t peer;       /* -1: a local step */
    uint32_t slot;      /* receive in M_SEND_WAITING or M_TO_READ: the send's step instead */
    uint32_t waiting;   /* dependencies not yet complete */
    uint8_t kind;
    uint8_t skip_empty;
    uint8_t state;      /* M_* */
    uint8_t wrote;      /* a send of bytes its rank wrote in this call: a
                           step it waits for wrote them (sends_what_it_wrote) */
} mstep_t;

/* A rank's steps come in blocks of XC_MB_STEPS, each with the consumer
 * lists of its steps (sched.h's, offsets made relative to the block),
 * and block b of every rank lies next to block b of the others: the
 * ranks of most schedules advance through their steps together, so what
 * a simulation touches at one time is a few MB, not the whole schedule
 * spread over GBs (at 4096 ranks one step in the rank-by-rank layout was
 * a cache and TLB miss each time). */
#define XC_MB_SHIFT 6
#define XC_MB_STEPS (1u << XC_MB_SHIFT)

typedef struct {
    mstep_t st[XC_MB_STEPS];
    uint32_t cfirst[XC_MB_STEPS + 1]; /* step k's consumers: cons[cfirst[k] .. cfirst[k+1]) */
    uint32_t cons[];
} mblock_t;

typedef struct {
    mblock_t **blk;
    /* the receives grouped by sender: rpeer[j] (ascending) sends the
     * receives at recvs[rfirst[j] ...], in slot order */
    uint32_t *rpeer, *rfirst, *recvs;
    /* where many peers send, by sender: the one receive's step with
     * PIDX_ONE set where it sends one message, else rpeer's index
     * (UINT32_MAX: none): one load instead of a binary search and two
     * more; NULL where few send */
    uint32_t *pidx;
    uint32_t nsteps, npeers;
    double done;
} mrank_t;

#define PIDX_ONE 0x80000000u

static mstep_t *step_of(const mrank_t *r, uint32_t i)
{
    return &r->blk[i >> XC_MB_SHIFT]->st[i & (XC_MB_STEPS - 1)];
}

/* ------------------------------------------------------------ the events */

enum { EV_DONE = 0, EV_LANDED = 1 };

typedef struct {
    double t;
    uint64_t seq;       /* ties go first come first served */
    uint32_t rank, step;
    uint16_t type;
    uint16_t pad;
    uint32_t queue;     /* 0, or 1 + the id of the resource that ordered it */
} event_t;

typedef struct {
    event_t *v;
    size_t n, cap;
    uint64_t seq;
} heap_t;

/* A resource (a core's CPU, its way out of or into its memory, a node's
 * NIC out or in) is taken first come first served: it is free from t on.
 * A step that took it ends when it is free again, and that time only
 * grows, so the events it orders come in (t, seq) order already: they wait
 * here, only the first in the heap. The heap holds an event or so per
 * resource instead of every step a rank has ready (all of Bruck's
 * copies), and the events keep their order. */
typedef struct {
    double t;
    event_t *v;         /* behind the one in the heap: v[head .. n) */
    uint32_t head, n, cap;
    uint32_t heading;   /* one of its events is in the heap */
    uint32_t id;        /* its events name it so (resource_at) */
} resource_t;

/* A core per rank unless the ranks share params.cores. */
enum { R_CPU, R_OUT, R_IN, R_CORE };
typedef struct {
    resource_t r[R_CORE];
    uint32_t last;      /* 1 + the rank whose work its CPU did last; 0: none */
} mcore_t;

enum { R_NIC_OUT, R_NIC_IN, R_NIC };
typedef struct {
    resource_t r[R_NIC];
} mnic_t;

static int ev_before(const event_t *a, const event_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(heap_t *h, event_t e)
{
    size_t i;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        event_t *v = realloc(h->v, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    for (i = h->n++; i > 0; i = (i - 1) / 4) {
        if (!ev_before(&e, &h->v[(i - 1) / 4]))
            break;
        h->v[i] = h->v[(i - 1) / 4];
    }
    h->v[i] = e;
    return 0;
}

/* A 4-ary heap: half the levels of a binary one, and a node's children
 * share cache lines. */
static event_t heap_pop(heap_t *h)
{
    event_t top = h->v[0], last = h->v[--h->n];
    size_t i = 0, c, k, best;
    while ((c = 4 * i + 1) < h->n) {
        best = c;
        for (k = c + 1; k < c + 4 && k < h->n; k++)
            if (ev_before(&h->v[k], &h->v[best]))
                best = k;
        if (!ev_before(&h->v[best], &last))
            break;
        h->v[i] = h->v[best];
        i = best;
    }
    h->v[i] = last;
    return top;
}

/* ------------------------------------------------------------ the run */

typedef struct {
    const xc_model_params_t *p;
    const struct xc_topo *topo;
    int P;
    mrank_t *r;
    mcore_t *core;             /* per rank, or params.cores of them */
    mnic_t *nic;               /* per node */
    uint32_t ncores, nnodes;
    double mem;                /* the rates' factor for this call's working set */
    double fwd;                /* ... for bytes a rank wrote in it (params.forward) */
    heap_t h;
    xc_model_result_t *res;
    int failed;                /* a send without its receive, or sizes that differ */
    int oom;
} sim_t;

static int node_of(const sim_t *s, int rank)
{
    return s->topo != NULL ? s->topo->node_of[rank] : 0;
}

static double maxd(double a, double b) { return a > b ? a : b; }
static double mind(double a, double b) { return a < b ? a : b; }

static mcore_t *core_of(const sim_t *s, uint32_t rank)
{
    return &s->core[s->p->cores > 0 ? rank % (uint32_t)s->p->cores : rank];
}

/* rank's CPU does `cost` seconds of work from t on (or once it is
 * free): when it ends. A core the ranks share first turns to this rank. */
static double cpu_work(sim_t *s, uint32_t rank, double t, double cost)
{
    mcore_t *c = core_of(s, rank);
    double begin = maxd(t, c->r[R_CPU].t);
    if (s->p->cores > 0 && c->last != rank + 1) {
        if (c->last != 0)
            begin += s->p->turn;
        c->last = rank + 1;
    }
    c->r[R_CPU].t = begin + cost;
    return begin + cost;
}

/* Events name their resource by number: the cores' three each, then the
 * nodes' two each. */
static resource_t *resource_at(const sim_t *s, uint32_t id)
{
    if (id < R_CORE * s->ncores)
        return &s->core[id / R_CORE].r[id % R_CORE];
    id -= R_CORE * s->ncores;
    return &s->nic[id / R_NIC].r[id % R_NIC];
}

static uint32_t n_resources(const sim_t *s) { return R_CORE * s->ncores + R_NIC * s->nnodes; }

static void out_of_memory(sim_t *s)
{
    if (!s->oom)
        xc_error("model: out of memory for events");
    s->oom = 1;
}

static event_t make_event(sim_t *s, double t, uint32_t rank, uint32_t step, uint32_t type)
{
    event_t e;
    e.t = t;
    e.seq = s->h.seq++;
    e.rank = rank;
    e.step = step;
    e.type = (uint16_t)type;
    e.pad = 0;
    e.queue = 0;
    return e;
}

/* An event at a time no resource orders. */
static void push(sim_t *s, double t, uint32_t rank, uint32_t step, uint32_t type)
{
    if (heap_push(&s->h, make_event(s, t, rank, step, type)) != 0)
        out_of_memory(s);
}

/* An event when resource r is free again: its events' times only grow. */
static void qpush(sim_t *s, resource_t *r, uint32_t rank, uint32_t step, uint32_t type)
{
    event_t e = make_event(s, r->t, rank, step, type);
    e.queue = r->id + 1;
    if (!r->heading) { /* the usual case: nothing else waits for it */
        r->heading = 1;
        if (heap_push(&s->h, e) != 0)
            out_of_memory(s);
        return;
    }
    if (r->n == r->cap) {
        if (r->head > r->n / 2) { /* the consumed half makes room */
            memmove(r->v, r->v + r->head, (size_t)(r->n - r->head) * sizeof(event_t));
            r->n -= r->head;
            r->head = 0;
        } else {
            uint32_t cap = r->cap ? r->cap * 2 : 16;
            event_t *v = cap > r->cap ? realloc(r->v, (size_t)cap * sizeof(*v)) : NULL;
            if (v == NULL) {
                out_of_memory(s);
                return;
            }
            r->v = v;
            r->cap = cap;
        }
    }
    r->v[r->n++] = e;
}

/* Resource r's event has left the heap: its next one enters it. */
static void qnext(sim_t *s, resource_t *r)
{
    /* read back when this one leaves the heap in turn: a line per
     * resource stays in cache, the rest would not */
    if (r->head + 2 < r->n)
        PREFETCH(r->v + r->head + 2);
    if (r->head < r->n) {
        if (heap_push(&s->h, r->v[r->head++]) != 0)
            out_of_memory(s);
    } else {
        r->head = r->n = 0;
        r->heading = 0;
    }
}

/* The receive on dst matching the send with `slot` from src, or NULL. */
static mstep_t *matching_recv(sim_t *s, uint32_t src, uint32_t dst, uint32_t slot,
                              uint32_t *idx)
{
    const mrank_t *r = &s->r[dst];
    uint32_t lo = 0, hi = r->npeers, mid;
    if (r->pidx != NULL) {
        uint32_t x = r->pidx[src];
        if (x != UINT32_MAX && (x & PIDX_ONE) && slot == 0) {
            *idx = x & ~PIDX_ONE;
            return step_of(r, *idx);
        }
        lo = hi = x != UINT32_MAX && !(x & PIDX_ONE) ? x : r->npeers;
    }
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (r->rpeer[mid] < src)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == r->npeers || r->rpeer[lo] != src || slot >= r->rfirst[lo + 1] - r->rfirst[lo]) {
        if (!s->failed)
            xc_error("model: rank %u sends message %u to rank %u, which never receives it",
                     src, slot, dst);
        s->failed = 1;
        return NULL;
    }
    *idx = r->recvs[r->rfirst[lo] + slot];
    return step_of(r, *idx);
}

/* What a byte of send st costs within a node, times intra.beta. */
static double intra_factor(const sim_t *s, const mstep_t *st)
{
    return st->wrote ? s->fwd : s->mem;
}

/* The message of send st from src leaves no earlier than `begin` and
 * takes the ways (or NICs) it crosses: *out is free again when it has
 * left, *in when it has landed (the time returned). */
static double wire(sim_t *s, uint32_t src, uint32_t dst, const mstep_t *st, double begin,
                   resource_t **out, resource_t **in)
{
    int ns = node_of(s, (int)src), nd = node_of(s, (int)dst);
    const xc_link_cost_t *l = ns == nd ? &s->p->intra : &s->p->inter;
    uint64_t bytes = st->bytes;
    double tx = (double)bytes * l->beta * (ns == nd ? intra_factor(s, st) : 1.0), start, land;

    *out = ns == nd ? &core_of(s, src)->r[R_OUT] : &s->nic[ns].r[R_NIC_OUT];
    *in = ns == nd ? &core_of(s, dst)->r[R_IN] : &s->nic[nd].r[R_NIC_IN];
    s->res->msgs++;
    s->res->bytes += bytes;
    if (ns != nd) {
        s->res->inter_msgs++;
        s->res->inter_bytes += bytes;
    }
    start = maxd(begin, (*out)->t);
    (*out)->t = start + tx;
    land = maxd(start + l->alpha, (*in)->t);
    (*in)->t = land + tx;
    return land + tx;
}

/* Receive ri on dst becomes its CPU's to take from `at` on (take_message
 * adds the bytes, or half of them, to its cost and ends send si with it). */
static void to_read(sim_t *s, uint32_t dst, uint32_t ri, uint32_t si, double at, int half)
{
    mstep_t *rv = step_of(&s->r[dst], ri);
    rv->state = half ? M_TO_READ_HALF : M_TO_READ;
    rv->slot = si;
    push(s, at, dst, ri, EV_LANDED);
}

/* Both ends of a rendezvous message are ready at t: then the data; both
 * steps end when it has landed. Within a node a handshake (two
 * latencies) first, then the receiver's CPU reads it from the sender's
 * buffer (the shared memory transport's single copy; take_message), the
 * sender's way out taken while it is read; a split copy (params.split)
 * whose sender's core is free by then takes half as long, the sender's
 * CPU copying the other half. Between nodes the link's alpha covers the
 * handshake (model.h). */
static void rendezvous(sim_t *s, uint32_t src, uint32_t si, uint32_t dst, uint32_t ri, double t)
{
    int ns = node_of(s, (int)src), nd = node_of(s, (int)dst);
    double end;
    resource_t *out, *in;
    const mstep_t *st = step_of(&s->r[src], si);
    uint64_t bytes = st->bytes;
    if (ns == nd) {
        mcore_t *sc = core_of(s, src);
        double start = maxd(t + 2 * s->p->intra.alpha, sc->r[R_OUT].t);
        double copy = (double)bytes * s->p->intra.beta * intra_factor(s, st);
        int half = s->p->split > 0 && (double)bytes >= s->p->split &&
                   step_of(&s->r[dst], ri)->kind == XC_STEP_RECV && sc != core_of(s, dst) &&
                   sc->r[R_CPU].t <= start;
        if (half) {
            copy /= 2;
            (void)cpu_work(s, src, start, copy);
        }
        sc->r[R_OUT].t = start + copy;
        s->res->msgs++;
        s->res->bytes += bytes;
        to_read(s, dst, ri, si, start, half);
        return;
    }
    end = wire(s, src, dst, st, t, &out, &in);
    if (s->p->inter_cpu > 0) { /* its CPU takes the bytes as they arrive */
        to_read(s, dst, ri, si, end - (double)bytes * mind(s->p->inter_cpu, s->p->inter.beta),
                0);
        return;
    }
    qpush(s, in, src, si, EV_DONE);
    qpush(s, in, dst, ri, EV_LANDED);
}

static void start_send(sim_t *s, uint32_t rank, uint32_t i, double t)
{
    mrank_t *r = &s->r[rank];
    const mstep_t *st = step_of(r, i);
    uint32_t dst = (uint32_t)st->peer, ri;
    mstep_t *rv = matching_recv(s, rank, dst, st->slot, &ri);
    resource_t *out, *in;
    double begin, landed;

    if (rv == NULL)
        return;
    /* the bound (xc_model_bound) prices each end by its own size */
    if (rv->bytes != st->bytes) {
        if (!s->failed)
            xc_error("model: rank %u sends %llu bytes to rank %u, which receives %llu", rank,
                     (unsigned long long)st->bytes, dst, (unsigned long long)rv->bytes);
        s->failed = 1;
        return;
    }
    begin = cpu_work(s, rank, t, s->p->overhead);
    if (st->bytes <= XC_ACK_ABOVE_BYTES) { /* eager: it leaves now */
        landed = wire(s, rank, dst, st, begin, &out, &in);
        qpush(s, out, rank, i, EV_DONE);
        if (rv->state == M_POSTED) {
            if (rv->t <= landed)
                qpush(s, in, dst, ri, EV_LANDED);
            else
                push(s, rv->t, dst, ri, EV_LANDED);
        } else {
            rv->state = M_LANDED_EARLY;
            rv->t = landed;
        }
    } else if (rv->state == M_POSTED) {
        rendezvous(s, rank, i, dst, ri, maxd(begin, rv->t));
    } else {
        rv->state = M_SEND_WAITING;
        rv->t = begin;
        rv->slot = i;
    }
}

static void start_recv(sim_t *s, uint32_t rank, uint32_t i, double t)
{
    mstep_t *st = step_of(&s->r[rank], i);
    if (st->state == M_LANDED_EARLY) {
        push(s, maxd(t, st->t), rank, i, EV_LANDED);
    } else if (st->state == M_SEND_WAITING) {
        rendezvous(s, (uint32_t)st->peer, st->slot, rank, i, maxd(t, st->t));
    } else {
        st->state = M_POSTED;
        st->t = t;
    }
}

static void start_step(sim_t *s, uint32_t rank, uint32_t i, double t)
{
    mrank_t *r = &s->r[rank];
    const mstep_t *st = step_of(r, i);
    const xc_model_params_t *p = s->p;
    double cost = 0;

    if (st->skip_empty && st->bytes == 0) {
        push(s, t, rank, i, EV_DONE);
        return;
    }
    switch (st->kind) {
    case XC_STEP_SEND:
        start_send(s, rank, i, t);
        return;
    case XC_STEP_RECV:
    case XC_STEP_RECV_REDUCE:
        start_recv(s, rank, i, t);
        return;
    case XC_STEP_COPY:
        cost = (double)st->bytes * p->copy * s->mem;
        break;
    case XC_STEP_REDUCE:
    case XC_STEP_DIVIDE:
        cost = (double)st->bytes * p->gamma * s->mem;
        break;
    default: /* stamp, check: nothing worth modelling */
        break;
    }
    (void)cpu_work(s, rank, t, cost);
    qpush(s, &core_of(s, rank)->r[R_CPU], rank, i, EV_DONE);
}

static void complete_step(sim_t *s, uint32_t rank, uint32_t i, double t)
{
    mrank_t *r = &s->r[rank];
    const mblock_t *b = r->blk[i >> XC_MB_SHIFT];
    uint32_t k = i & (XC_MB_STEPS - 1), c;
    r->done = maxd(r->done, t);
    /* most ranks go through their steps in order, every rank one step
     * per round: the line after the next is fetched a round ahead */
    PREFETCH((const char *)&b->st[k] + 128);
    for (c = b->cfirst[k]; c < b->cfirst[k + 1]; c++)
        if (--step_of(r, b->cons[c])->waiting == 0)
            start_step(s, rank, b->cons[c], t);
}

/* A receive's message has landed: the receiver's CPU takes it (and
 * reduces it, for RECV_REDUCE). */
static void take_message(sim_t *s, uint32_t rank, uint32_t i, double t)
{
    mrank_t *r = &s->r[rank];
    const mstep_t *st = step_of(r, i);
    resource_t *cpu = &core_of(s, rank)->r[R_CPU];
    double cost = s->p->overhead;
    int reading = st->state == M_TO_READ || st->state == M_TO_READ_HALF;
    if (st->kind == XC_STEP_RECV_REDUCE)
        cost += (double)st->bytes * s->p->gamma * s->mem;
    if (reading) /* the sender's step ends once it is read */
        cost += (double)st->bytes * (st->state == M_TO_READ_HALF ? 0.5 : 1.0) *
                (node_of(s, st->peer) == node_of(s, (int)rank)
                     ? s->p->intra.beta * intra_factor(s, step_of(&s->r[st->peer], st->slot))
                     : s->p->inter_cpu);
    (void)cpu_work(s, rank, t, cost);
    if (reading)
        qpush(s, cpu, (uint32_t)st->peer, st->slot, EV_DONE);
    qpush(s, cpu, rank, i, EV_DONE);
}

/* ------------------------------------------------- building the ranks */

/* Where the compact schedules live: mappings freed at once, huge pages
 * where the kernel gives them for the large ones. At thousands of ranks,
 * faulting in fresh 4 KiB pages per rank cost a quarter of a
 * simulation. */
typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
} chunk_t;

typedef struct {
    chunk_t *head;
    size_t next_cap;
} arena_t;

static void *arena_alloc(arena_t *a, size_t bytes)
{
    chunk_t *c = a->head;
    void *p;
    bytes = (bytes + 15) & ~(size_t)15;
    if (c == NULL || c->cap - c->used < bytes) {
        size_t cap = a->next_cap ? a->next_cap : (size_t)2 << 20;
        while (cap - sizeof(chunk_t) - 16 < bytes)
            cap *= 2;
        if (a->next_cap < ((size_t)64 << 20))
            a->next_cap = cap * 2;
        p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
#ifdef MADV_HUGEPAGE
        /* a hint (refused is fine), not for small chunks: a huge page
         * is cleared whole on its first touch */
        if (cap >= ((size_t)4 << 20))
            (void)madvise(p, cap, MADV_HUGEPAGE);
#endif
        c = p;
        c->next = a->head;
        c->cap = cap;
        c->used = (sizeof(chunk_t) + 15) & ~(size_t)15;
        a->head = c;
    }
    p = (char *)c + c->used;
    c->used += bytes;
    return p;
}

static void arena_free(arena_t *a)
{
    while (a->head != NULL) {
        chunk_t *c = a->head;
        a->head = c->next;
        munmap(c, c->cap);
    }
}

/* The step and dependency arrays of one rank's schedule, handed to the
 * next rank's (fresh ones for each cost page faults at thousands of
 * ranks), and a per-peer count for grouping receives. */
typedef struct {
    xc_step_t *steps;
    uint32_t steps_cap;
    uint32_t *deps;
    uint32_t deps_cap;
    uint32_t *count;    /* [P], zero between ranks */
    uint32_t *touched;  /* [P] the peers count holds */
} spare_t;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* count[] back to zero for the next rank: only the n peers touched. */
static void forget_counts(spare_t *sp, uint32_t n)
{
    uint32_t j;
    for (j = 0; j < n; j++)
        sp->count[sp->touched[j]] = 0;
}

static int is_recv(uint8_t kind) { return kind == XC_STEP_RECV || kind == XC_STEP_RECV_REDUCE; }

/* Groups rank m's receives by sender, in slot order (a rank's k-th
 * receive from a peer is the one with slot k: sched.c numbers them in
 * step order). */
static xcoll_status_t group_recvs(mrank_t *m, const xc_sched_t *s, spare_t *sp, arena_t *ar)
{
    uint32_t i, j, n = 0, nrecv = 0;
    for (i = 0; i < s->nsteps; i++) {
        const xc_step_t *x = &s->steps[i];
        if (!is_recv(x->kind))
            continue;
        if (sp->count[x->peer]++ == 0)
            sp->touched[n++] = (uint32_t)x->peer;
        nrecv++;
    }
    if ((size_t)n * 16 >= (size_t)s->size) { /* many peers: in order by a scan, not a sort */
        for (n = 0, i = 0; i < (uint32_t)s->size; i++)
            if (sp->count[i] != 0)
                sp->touched[n++] = i;
    } else {
        qsort(sp->touched, n, sizeof(uint32_t), cmp_u32);
    }
    m->npeers = n;
    m->rpeer = arena_alloc(ar, ((size_t)n + 1) * sizeof(uint32_t));
    m->rfirst = arena_alloc(ar, ((size_t)n + 1) * sizeof(uint32_t));
    m->recvs = arena_alloc(ar, ((size_t)nrecv + 1) * sizeof(uint32_t));
    if (m->rpeer == NULL || m->rfirst == NULL || m->recvs == NULL) {
        forget_counts(sp, n);
        return XCOLL_ERR_NO_MEMORY;
    }
    for (nrecv = 0, j = 0; j < n; j++) {
        uint32_t peer = sp->touched[j];
        m->rpeer[j] = peer;
        m->rfirst[j] = nrecv;
        nrecv += sp->count[peer];
        sp->count[peer] = j; /* now: the peer's index in rpeer */
    }
    m->rfirst[n] = nrecv;
    for (i = 0; i < s->nsteps; i++) {
        const xc_step_t *x = &s->steps[i];
        uint32_t *at;
        if (!is_recv(x->kind))
            continue;
        j = sp->count[x->peer];
        at = &m->rfirst[j];
        if (x->slot >= at[1] - at[0]) {
            xc_error("model: rank %d's receive slots from %d are not 0, 1, 2, ...", s->rank,
                     x->peer);
            return XCOLL_ERR_INTERNAL;
        }
        m->recvs[at[0] + x->slot] = i;
    }
    m->pidx = NULL;
    if (n >= 64 && n >= (uint32_t)s->size / 8) { /* never more than its receive steps take */
        m->pidx = arena_alloc(ar, (size_t)s->size * sizeof(uint32_t));
        if (m->pidx == NULL) {
            forget_counts(sp, n);
            return XCOLL_ERR_NO_MEMORY;
        }
        memset(m->pidx, 0xff, (size_t)s->size * sizeof(uint32_t));
        for (j = 0; j < n; j++)
            m->pidx[m->rpeer[j]] = m->rfirst[j + 1] - m->rfirst[j] == 1
                                       ? PIDX_ONE | m->recvs[m->rfirst[j]]
                                       : j;
    }
    forget_counts(sp, n);
    return XCOLL_OK;
}

/* Where the schedules are kept: the blocks of steps by block index (one
 * arena each, filled rank by rank), everything else in one more. */
typedef struct {
    arena_t misc;
    arena_t *reg;
    size_t nreg;
    int P;
} store_t;

/* The arena of block b, made for P blocks of about `bytes` each the first
 * time: small ones stay small (a 2-rank schedule of many segments has
 * many blocks of 2), large ones come in few mappings. */
static arena_t *region(store_t *st, size_t b, size_t bytes)
{
    if (b >= st->nreg) {
        size_t n = st->nreg ? st->nreg : 16, k;
        arena_t *reg;
        while (n <= b)
            n *= 2;
        reg = realloc(st->reg, n * sizeof(*reg));
        if (reg == NULL)
            return NULL;
        for (k = st->nreg; k < n; k++) {
            reg[k].head = NULL;
            reg[k].next_cap = 0;
        }
        st->reg = reg;
        st->nreg = n;
    }
    if (st->reg[b].head == NULL && st->reg[b].next_cap == 0) {
        size_t want = (size_t)st->P * (bytes + 16) + sizeof(chunk_t) + 16;
        size_t cap = (size_t)64 << 10;
        while (cap < want && cap < ((size_t)64 << 20))
            cap *= 2;
        st->reg[b].next_cap = cap;
    }
    return &st->reg[b];
}

static void store_free(store_t *st)
{
    size_t b;
    arena_free(&st->misc);
    for (b = 0; b < st->nreg; b++)
        arena_free(&st->reg[b]);
    free(st->reg);
}

/* Whether step w writes bytes of buffer range r (`bytes` long). */
static int writes_into(const xc_step_t *w, xc_ref_t r, size_t bytes)
{
    const xc_ref_t *out[2] = {&w->dst, NULL};
    int k;
    if (w->bytes == 0)
        return 0;
    switch (w->kind) {
    case XC_STEP_RECV_REDUCE:
        out[1] = &w->b; /* where it lands before it is reduced */
        break;
    case XC_STEP_RECV:
    case XC_STEP_COPY:
    case XC_STEP_REDUCE:
    case XC_STEP_DIVIDE:
        break;
    default:
        return 0;
    }
    for (k = 0; k < 2 && out[k] != NULL; k++)
        if (out[k]->buf == r.buf && r.buf != XC_BUF_NONE && out[k]->off < r.off + bytes &&
            r.off < out[k]->off + w->bytes)
            return 1;
    return 0;
}

/* Whether send x sends bytes its rank wrote in this call (a ring or tree
 * forwarding what it received or reduced, a copy sent on): a step it
 * waits for writes into what it sends. Zero-byte steps between (the
 * joins of composite schedules) are looked through, a few levels deep: a
 * send waits for the step that wrote its bytes, but not always directly.
 * A send that waits for a receive for another reason (pairwise's window,
 * the next segment) sends its own bytes and is not counted. */
static int sends_what_it_wrote(const xc_sched_t *s, const xc_step_t *x, const uint32_t *deps,
                               uint32_t ndeps, int depth)
{
    uint32_t d;
    for (d = 0; d < ndeps; d++) {
        const xc_step_t *w = &s->steps[deps[d]];
        if (writes_into(w, x->a, x->bytes))
            return 1;
        if (w->bytes == 0 && depth < 4 &&
            sends_what_it_wrote(s, x, s->deps + w->dep_first, w->ndeps, depth + 1))
            return 1;
    }
    return 0;
}

/* Moves a finished schedule into the compact form, keeps its arrays in
 * *sp and frees the rest. */
static xcoll_status_t compact(mrank_t *m, xc_sched_t *s, spare_t *sp, store_t *store)
{
    xcoll_status_t rc = XCOLL_ERR_NO_MEMORY;
    uint32_t nblk = (s->nsteps + XC_MB_STEPS - 1) >> XC_MB_SHIFT, b, k;
    m->nsteps = s->nsteps;
    m->blk = arena_alloc(&store->misc, ((size_t)nblk + 1) * sizeof(*m->blk));
    if (m->blk != NULL)
        rc = group_recvs(m, s, sp, &store->misc);
    for (b = 0; rc == XCOLL_OK && b < nblk; b++) {
        uint32_t first = b << XC_MB_SHIFT;
        uint32_t n = s->nsteps - first < XC_MB_STEPS ? s->nsteps - first : XC_MB_STEPS;
        uint32_t c0 = s->consumers_first[first], c1 = s->consumers_first[first + n];
        size_t bytes = sizeof(mblock_t) + (size_t)(c1 - c0) * sizeof(uint32_t);
        arena_t *ar = region(store, b, bytes);
        mblock_t *bk = ar != NULL ? arena_alloc(ar, bytes) : NULL;
        if (bk == NULL) {
            rc = XCOLL_ERR_NO_MEMORY;
            break;
        }
        m->blk[b] = bk;
        for (k = 0; k <= n; k++)
            bk->cfirst[k] = s->consumers_first[first + k] - c0;
        memcpy(bk->cons, s->consumers + c0, (size_t)(c1 - c0) * sizeof(uint32_t));
        for (k = 0; k < n; k++) {
            const xc_step_t *x = &s->steps[first + k];
            mstep_t *c = &bk->st[k];
            c->bytes = x->bytes;
            c->t = 0;
            c->peer = x->peer;
            c->slot = x->slot;
            c->waiting = x->ndeps;
            c->kind = x->kind;
            c->skip_empty = (x->flags & XC_STEP_F_SKIP_EMPTY) != 0;
            c->state = M_IDLE;
            c->wrote = x->kind == XC_STEP_SEND &&
                       sends_what_it_wrote(s, x, s->deps + x->dep_first, x->ndeps, 0);
        }
    }
    sp->steps = s->steps;
    sp->steps_cap = s->steps_cap;
    sp->deps = s->deps;
    sp->deps_cap = s->deps_cap;
    s->steps = NULL;
    s->deps = NULL;
    xc_sched_fini(s);
    return rc;
}


/* Builds rank i's schedule into s->r[i]. */
static xcoll_status_t build_rank(sim_t *s, const xc_algo_t *algo, const xc_coll_args_t *a,
                                 int i, spare_t *sp, store_t *store)
{
    xc_coll_args_t ra = *a;
    xc_sched_t sch;
    xcoll_status_t rc;
    ra.rank = i;
    ra.stamp = NULL;
    rc = xc_sched_init(&sch, i, s->P, a->dtype, a->op);
    if (rc != XCOLL_OK) {
        xc_sched_fini(&sch);
        return rc;
    }
    sch.algo = algo->name;
    sch.steps = sp->steps;
    sch.steps_cap = sp->steps_cap;
    sch.deps = sp->deps;
    sch.deps_cap = sp->deps_cap;
    sp->steps = NULL;
    sp->deps = NULL;
    rc = algo->build(&sch, &ra);
    if (rc == XCOLL_OK)
        rc = xc_sched_finish(&sch);
    if (rc != XCOLL_OK) {
        xc_sched_fini(&sch);
        return rc;
    }
    return compact(&s->r[i], &sch, sp, store);
}

/* What the model takes: a collective with one count for every rank (the
 * v-variants' counts are not modelled) and a topology of its size. */
static int cost_ok(double c) { return c >= 0 && isfinite(c); }

static int params_ok(const xc_model_params_t *p)
{
    return p != NULL && cost_ok(p->intra.alpha) && cost_ok(p->intra.beta) &&
           cost_ok(p->inter.alpha) && cost_ok(p->inter.beta) && cost_ok(p->overhead) &&
           cost_ok(p->gamma) && cost_ok(p->copy) && p->cores >= 0 && cost_ok(p->turn) &&
           cost_ok(p->inter_cpu) && cost_ok(p->cache) && cost_ok(p->split) &&
           (p->dram == 0 || (p->dram >= 1 && isfinite(p->dram))) &&
           (p->forward == 0 || (p->forward >= 1 && isfinite(p->forward)));
}

/* The factor on every byte a rank moves within its node, copies or
 * reduces: 1 while the bytes one rank touches in the call fit the cache,
 * params.dram from twice the cache, in proportion between. What a rank
 * touches: its buffers (coll.h's contract) and the data it reads from a
 * peer's, once each: a bcast's receiver its buffer and the root's (2
 * blocks), an allreduce's or reduce's rank its two vectors and a peer's (3),
 * the block collectives' rank its P blocks and as many it reads or
 * writes (2P; for gather and scatter that is the root, whose buffers
 * every rank is priced by). Per rank, not per node: measured on 2 cores
 * with 2 and 4 ranks (docs/SCALING.md), every collective's cliff came at
 * the same size whatever the ranks, and in the data of 2026-12-06 a 4 MiB
 * allreduce of 2 ranks, 16 MiB on the node, ran at the cache's speed. */
static double mem_factor(const xc_coll_args_t *a, const xc_model_params_t *p)
{
    double block = (double)a->count * (double)xcoll_dtype_size(a->dtype), ws;
    if (!(p->cache > 0) || p->dram <= 1)
        return 1.0;
    switch (a->coll) {
    case XC_COLL_BCAST: ws = 2 * block; break;
    case XC_COLL_ALLREDUCE:
    case XC_COLL_REDUCE: ws = 3 * block; break;
    case XC_COLL_ALLGATHER:
    case XC_COLL_REDUCE_SCATTER:
    case XC_COLL_GATHER:
    case XC_COLL_SCATTER:
    case XC_COLL_ALLTOALL: ws = 2.0 * a->size * block; break;
    default: ws = 0; break;
    }
    if (ws <= p->cache)
        return 1.0;
    if (ws >= 2 * p->cache)
        return p->dram;
    return 1.0 + (p->dram - 1.0) * (ws - p->cache) / p->cache;
}

static int args_ok(const xc_coll_args_t *a)
{
    return a != NULL && a->size >= 1 && a->coll < XC_COLL_COUNT && !xc_coll_is_vector(a->coll) &&
           (a->topo == NULL || a->topo->size == a->size);
}

xcoll_status_t xc_model_run(const xc_algo_t *algo, const xc_coll_args_t *a,
                            const xc_model_params_t *p, xc_model_result_t *out)
{
    sim_t s;
    spare_t sp;
    store_t store;
    xcoll_status_t rc = XCOLL_OK;
    uint64_t steps_left;
    int i, nnodes;
    uint32_t k;

    if (algo == NULL || !args_ok(a) || !params_ok(p) || out == NULL)
        return XCOLL_ERR_INVALID_ARG;
    memset(out, 0, sizeof(*out));
    memset(&s, 0, sizeof(s));
    memset(&sp, 0, sizeof(sp));
    memset(&store, 0, sizeof(store));
    store.P = a->size;
    s.p = p;
    s.topo = a->topo;
    s.P = a->size;
    s.res = out;
    s.mem = mem_factor(a, p);
    /* beyond the cache a written byte comes from memory like any other */
    s.fwd = maxd(s.mem, p->forward > 1 ? p->forward : 1.0);
    nnodes = a->topo != NULL ? a->topo->nnodes : 1;
    s.r = calloc((size_t)s.P, sizeof(*s.r));
    s.ncores = p->cores > 0 ? (uint32_t)p->cores : (uint32_t)s.P;
    s.nnodes = (uint32_t)nnodes;
    s.core = calloc(s.ncores, sizeof(*s.core));
    s.nic = calloc((size_t)nnodes, sizeof(*s.nic));
    sp.count = calloc((size_t)s.P, sizeof(uint32_t));
    sp.touched = malloc((size_t)s.P * sizeof(uint32_t));
    if (s.r == NULL || s.core == NULL || s.nic == NULL || sp.count == NULL || sp.touched == NULL) {
        rc = XCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (k = 0; k < n_resources(&s); k++)
        resource_at(&s, k)->id = k;
    for (i = 0; i < s.P && rc == XCOLL_OK; i++) {
        rc = build_rank(&s, algo, a, i, &sp, &store);
        out->steps += s.r[i].nsteps;
        if (rc == XCOLL_OK && out->steps > XC_MODEL_MAX_STEPS) {
            xc_error("model: %s on %d ranks needs more than %llu steps (the model's limit, "
                     "about 5 GB)", algo->name, s.P, (unsigned long long)XC_MODEL_MAX_STEPS);
            rc = XCOLL_ERR_NO_MEMORY;
            goto out;
        }
    }
    if (rc != XCOLL_OK) {
        if (rc == XCOLL_ERR_NO_MEMORY)
            xc_error("model: out of memory building %s for %d ranks", algo->name, s.P);
        goto out;
    }

    steps_left = out->steps;
    for (i = 0; i < s.P; i++)
        for (k = 0; k < s.r[i].nsteps; k++)
            if (step_of(&s.r[i], k)->waiting == 0)
                start_step(&s, (uint32_t)i, k, 0.0);
    while (s.h.n > 0 && !s.failed && !s.oom) {
        event_t e = heap_pop(&s.h);
        if (e.queue != 0)
            qnext(&s, resource_at(&s, e.queue - 1));
        if (s.h.n > 0) {
            /* the next event's step, while this one is handled */
            uint32_t ns = s.h.v[0].step;
            const mblock_t *nb = s.r[s.h.v[0].rank].blk[ns >> XC_MB_SHIFT];
            PREFETCH(&nb->st[ns & (XC_MB_STEPS - 1)]);
            PREFETCH(&nb->cfirst[ns & (XC_MB_STEPS - 1)]);
        }
        if (e.type == EV_LANDED) {
            take_message(&s, e.rank, e.step, e.t);
        } else {
            complete_step(&s, e.rank, e.step, e.t);
            steps_left--;
        }
    }
    if (s.failed || s.oom) {
        rc = s.oom ? XCOLL_ERR_NO_MEMORY : XCOLL_ERR_INTERNAL;
        goto out;
    }
    if (steps_left != 0) {
        xc_error("model: %s on %d ranks: %llu steps never complete (a receive without its "
                 "send, or a cycle)", algo->name, s.P, (unsigned long long)steps_left);
        rc = XCOLL_ERR_INTERNAL;
        goto out;
    }
    out->first_done = INFINITY;
    for (i = 0; i < s.P; i++) {
        out->time = maxd(out->time, s.r[i].done);
        if (s.r[i].done < out->first_done)
            out->first_done = s.r[i].done;
    }
out:
    free(sp.steps);
    free(sp.deps);
    free(sp.count);
    free(sp.touched);
    store_free(&store);
    free(s.r);
    for (k = 0; s.core != NULL && s.nic != NULL && k < n_resources(&s); k++)
        free(resource_at(&s, k)->v); /* queues exist only once both do */
    free(s.core);
    free(s.nic);
    free(s.h.v);
    return rc;
}

/* ------------------------------------------------- a bound, and a choice */

xcoll_status_t xc_model_bound(const xc_algo_t *algo, const xc_coll_args_t *a,
                              const xc_model_params_t *p, int rank, double *bound,
                              uint64_t *steps)
{
    xc_coll_args_t ra;
    xc_sched_t sch;
    xcoll_status_t rc;
    double *end = NULL, alpha, beta, chain = 0;
    /* what this rank's own resources must carry, one thing at a time:
     * its CPU, its ways out and in, its node's NIC (its own share) */
    double cpu = 0, out = 0, in = 0, nic_out = 0, nic_in = 0;
    uint32_t i, d;

    if (algo == NULL || !args_ok(a) || p == NULL || bound == NULL || steps == NULL || rank < 0 ||
        rank >= a->size)
        return XCOLL_ERR_INVALID_ARG;
    alpha = p->intra.alpha < p->inter.alpha ? p->intra.alpha : p->inter.alpha;
    beta = p->intra.beta < p->inter.beta ? p->intra.beta : p->inter.beta;
    ra = *a;
    ra.rank = rank;
    ra.stamp = NULL;
    rc = xc_sched_init(&sch, rank, a->size, a->dtype, a->op);
    if (rc == XCOLL_OK)
        rc = algo->build(&sch, &ra);
    if (rc == XCOLL_OK && (end = malloc(((size_t)sch.nsteps + 1) * sizeof(double))) == NULL)
        rc = XCOLL_ERR_NO_MEMORY;
    /* the longest chain of dependencies, each step at the least it can
     * cost whatever its peers do: the simulation's own costs, every wait
     * left out */
    for (i = 0; rc == XCOLL_OK && i < sch.nsteps; i++) {
        const xc_step_t *st = &sch.steps[i];
        double ready = 0, cost = 0, b = (double)st->bytes, work = 0;
        int msg = st->kind == XC_STEP_SEND || st->kind == XC_STEP_RECV ||
                  st->kind == XC_STEP_RECV_REDUCE;
        for (d = 0; d < st->ndeps; d++)
            ready = maxd(ready, end[sch.deps[st->dep_first + d]]);
        if ((st->flags & XC_STEP_F_SKIP_EMPTY) && st->bytes == 0) {
            end[i] = ready;
            continue;
        }
        if (msg) {
            int local = a->topo == NULL || a->topo->node_of[st->peer] == a->topo->node_of[rank];
            const xc_link_cost_t *l = local ? &p->intra : &p->inter;
            double *port = st->kind == XC_STEP_SEND ? (local ? &out : &nic_out)
                                                    : (local ? &in : &nic_in);
            /* a split copy may take half as long on either end (a send
             * cannot tell whether its receive reduces) */
            double part = local && st->bytes > XC_ACK_ABOVE_BYTES && p->split > 0 &&
                                  b >= p->split && st->kind != XC_STEP_RECV_REDUCE
                              ? 0.5
                              : 1.0;
            work = p->overhead + (st->kind == XC_STEP_RECV_REDUCE ? b * p->gamma : 0);
            /* a rendezvous: the handshake within a node, inter.alpha alone
             * between nodes (model.h) */
            cost = work +
                   (st->bytes > XC_ACK_ABOVE_BYTES ? (local ? 2 : 1) * alpha + b * beta * part
                                                   : 0) +
                   (st->kind == XC_STEP_SEND && st->bytes <= XC_ACK_ABOVE_BYTES ? b * beta : 0);
            if (local && st->kind != XC_STEP_SEND && st->bytes > XC_ACK_ABOVE_BYTES)
                cpu += b * l->beta * part; /* its CPU reads it, not its way in */
            else
                *port += b * l->beta * part;
        } else if (st->kind == XC_STEP_COPY) {
            cost = work = b * p->copy;
        } else if (st->kind == XC_STEP_REDUCE || st->kind == XC_STEP_DIVIDE) {
            cost = work = b * p->gamma;
        }
        cpu += work;
        end[i] = ready + cost;
        chain = maxd(chain, end[i]);
    }
    *bound = maxd(maxd(chain, cpu), maxd(maxd(out, in), maxd(nic_out, nic_in)));
    *steps = rc == XCOLL_OK ? sch.nsteps : 0;
    free(end);
    xc_sched_fini(&sch);
    return rc;
}

xcoll_status_t xc_model_compare(const xc_coll_args_t *a, const xc_model_params_t *p,
                                const struct xc_tune *tune, uint64_t exact_steps,
                                xc_model_entry_t *out, size_t cap, size_t *n,
                                const xc_model_entry_t **picked, const xc_model_entry_t **best)
{
    xc_coll_args_t ra;
    xc_sched_t sch;
    xcoll_status_t rc;
    const xc_algo_t *pick;
    size_t i, k = 0;
    int pass;

    if (!args_ok(a) || !params_ok(p) || out == NULL || n == NULL || picked == NULL ||
        best == NULL)
        return XCOLL_ERR_INVALID_ARG;
    *n = 0;
    *picked = *best = NULL;
    ra = *a;
    ra.rank = 0;
    ra.stamp = NULL;
    ra.fallback = 0;
    rc = xc_select_and_build(&sch, &ra, tune, NULL, 0);
    if (rc != XCOLL_OK)
        return rc;
    pick = xc_algo_find(a->coll, sch.algo);
    xc_sched_fini(&sch);

    for (i = 0; i < xc_num_algorithms; i++) {
        const xc_algo_t *al = &xc_algorithms[i];
        xc_model_entry_t *e;
        if (al->coll != a->coll)
            continue;
        if (k == cap)
            return XCOLL_ERR_INVALID_ARG;
        e = &out[k++];
        memset(e, 0, sizeof(*e));
        e->algo = al;
        if (al == pick)
            *picked = e;
        rc = xc_model_bound(al, a, p, 0, &e->bound, &e->steps);
        e->steps *= (uint64_t)a->size; /* an estimate, until it runs */
        if (rc == XCOLL_ERR_UNSUPPORTED) {
            e->status = XC_MODEL_DECLINED;
            continue;
        }
        if (rc != XCOLL_OK)
            return rc;
        e->status = XC_MODEL_BOUNDED;
    }
    *n = k;
    /* the small ones first, so a large one whose bound exceeds their best
     * need not run; the pick always runs */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < k; i++) {
            xc_model_entry_t *e = &out[i];
            xc_model_result_t res;
            if (e->status != XC_MODEL_BOUNDED)
                continue;
            if (pass == 0 && e->steps > exact_steps && e != *picked)
                continue;
            if (pass == 1 && *best != NULL && e->bound >= (*best)->time)
                continue;
            if (e->steps > XC_MODEL_MAX_STEPS)
                continue; /* too large to run here: its bound stands */
            rc = xc_model_run(e->algo, a, p, &res);
            if (rc == XCOLL_ERR_UNSUPPORTED) {
                e->status = XC_MODEL_DECLINED;
                continue;
            }
            if (rc != XCOLL_OK)
                return rc;
            e->status = XC_MODEL_RAN;
            e->time = res.time;
            e->steps = res.steps;
            if (*best == NULL || res.time < (*best)->time)
                *best = e;
        }
    }
    return XCOLL_OK;
}
