/* Algorithms made of two phases, each a known algorithm:
 *
 * reduce_bcast allreduce: binomial reduce to rank 0, then binomial bcast
 *   from rank 0 (the builders of tree.c, composed with s->after/buf_map).
 *   2 ceil(log2 size) latencies; the result is computed once, at rank 0, so
 *   every rank gets the same bits.
 * scatter_allgather bcast (van de Geijn): the root's buffer, cut into size
 *   blocks, is scattered down a binomial tree, then a ring allgather gives
 *   every rank every block. Each rank receives about 2n bytes instead of
 *   the binomial tree's log2(size) n on the critical path.
 * rsg reduce: a ring reduce-scatter leaves block r of the result on rank r,
 *   then a binomial gather brings the blocks to the root: every rank
 *   reduces only n/size of the data, and no link carries more than about
 *   2n bytes.
 *
 * Blocks here are those of xc_block_count(count, size, b), so any count
 * works on any rank count, and they lie in rank order in one buffer. A
 * binomial subtree is a contiguous range of virtual ranks (rank - root mod
 * size); in real ranks it may wrap past size-1 to 0, so it moves as at most
 * two messages, split where real rank 0 starts (both ends split alike). */
#include <stdlib.h>

#include "coll.h"
#include "log.h"

/* Ring segments: as ring.c, 128 KiB keeps the per-message cost small and a
 * segment in cache. */
#define COMPOSITE_SEGMENT_BYTES ((size_t)128 * 1024)

/* Landing buffers for incoming partial sums in the reduce-scatter. */
#define COMPOSITE_LANDING_SLOTS 4

/* Message k with a peer waits for message k - COMPOSITE_WINDOW with it, so
 * messages whose tag slots wrap to the same value are posted in order. */
#define COMPOSITE_WINDOW 64

static int mod(int x, int n) { return ((x % n) + n) % n; }

static int *alloc_ids(xc_sched_t *s, size_t n)
{
    int *ids = malloc((n ? n : 1) * sizeof(int));
    if (ids == NULL && s->err == XCOLL_OK) {
        xc_error("out of memory building a %s schedule (%zu steps)", s->algo, n);
        s->err = XCOLL_ERR_NO_MEMORY;
    }
    return ids;
}

static int window_dep(const int *ids, int k)
{
    return k >= COMPOSITE_WINDOW ? ids[k - COMPOSITE_WINDOW] : -1;
}

/* ----------------------------------------------------------- reduce + bcast */

xcoll_status_t reduce_bcast_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    xc_coll_args_t b = *a;
    int first;

    b.root = 0;
    b.coll = XC_COLL_REDUCE;
    /* Reduce reads the input from SEND off the root; an in-place allreduce
     * has it in RECV on every rank. Nothing writes RECV off the root during
     * the reduce, so reading the input there is safe. */
    if (a->in_place && a->rank != 0)
        s->buf_map[XC_BUF_SEND] = XC_BUF_RECV;
    first = (int)s->nsteps;
    binomial_reduce_schedule(s, &b);
    s->buf_map[XC_BUF_SEND] = XC_BUF_SEND;
    if (a->size == 1 || s->err != XCOLL_OK)
        return s->err;

    /* The bcast overwrites RECV, which the reduce may still be reading. */
    s->after = xc_join(s, first);
    b.coll = XC_COLL_BCAST;
    b.in_place = 0;
    binomial_bcast_schedule(s, &b);
    s->after = -1;
    return s->err;
}

/* ------------------------------------------------- binomial tree, any root */

typedef struct {
    int size, root, v;
    int span;   /* v's subtree is [v, v + span) below size */
    int parent; /* real rank, or -1 at the root */
    int nch;
    int child[32], child_span[32]; /* virtual ranks, smallest subtree first */
} btree_t;

static int btree_real(const btree_t *t, int v) { return (v + t->root) % t->size; }

static void btree_init(btree_t *t, int rank, int size, int root)
{
    int m;
    t->size = size;
    t->root = root;
    t->v = mod(rank - root, size);
    if (t->v == 0) {
        for (t->span = 1; t->span < size; t->span <<= 1)
            ;
        t->parent = -1;
    } else {
        t->span = t->v & -t->v;
        t->parent = btree_real(t, t->v - t->span);
    }
    t->nch = 0;
    for (m = 1; m < t->span && t->v + m < size; m <<= 1) {
        t->child[t->nch] = t->v + m;
        t->child_span[t->nch] = m;
        t->nch++;
    }
}

static int btree_hi(const btree_t *t, int v, int span)
{
    return span < t->size - v ? v + span : t->size;
}

/* Virtual ranks [lo, hi) as runs of consecutive real ranks. */
static int btree_split(const btree_t *t, int lo, int hi, int plo[2], int phi[2])
{
    int wrap = (t->size - t->root) % t->size; /* virtual rank of real rank 0 */
    if (wrap > lo && wrap < hi) {
        plo[0] = lo, phi[0] = wrap;
        plo[1] = wrap, phi[1] = hi;
        return 2;
    }
    plo[0] = lo, phi[0] = hi;
    return 1;
}

/* Byte range, in a buffer of count elements cut into size blocks, of the
 * blocks of the real ranks of virtual run [lo, hi) (no wrap inside). */
static void run_bytes(const btree_t *t, size_t count, size_t ds, int lo, int hi, size_t *off,
                      size_t *bytes)
{
    int first = btree_real(t, lo);
    size_t b0 = xc_block_offset(count, t->size, first);
    size_t b1 = xc_block_offset(count, t->size, first + (hi - lo));
    *off = b0 * ds;
    *bytes = (b1 - b0) * ds;
}

/* ---------------------------------------------- scatter + allgather bcast */

/* Ring allgather of uneven blocks in RECV: step i sends block r-i and
 * receives block r-i-1, each cut into nseg segments. */
static void ring_allgather_uneven(xc_sched_t *s, int rank, int size, size_t count)
{
    const size_t ds = s->dsize, largest = xc_block_count(count, size, 0) * ds;
    const int next = xc_ring_next(rank, size), prev = xc_ring_prev(rank, size);
    size_t n = (largest + COMPOSITE_SEGMENT_BYTES - 1) / COMPOSITE_SEGMENT_BYTES;
    int nseg, i, j, *sends, *recvs;

    if (n > ((size_t)1 << 28) / (size_t)size) {
        xc_error("%s: %zu segments per block over %d ranks is too many steps", s->algo, n, size);
        s->err = XCOLL_ERR_UNSUPPORTED;
        return;
    }
    nseg = n < 1 ? 1 : (int)n;
    sends = alloc_ids(s, (size_t)(size - 1) * (size_t)nseg);
    recvs = alloc_ids(s, (size_t)(size - 1) * (size_t)nseg);
    if (s->err != XCOLL_OK)
        goto out;
    for (i = 0; i < size - 1; i++) {
        const int sb = mod(rank - i, size), rb = mod(rank - i - 1, size);
        const size_t sc = xc_block_count(count, size, sb), rc = xc_block_count(count, size, rb);
        const size_t so = xc_block_offset(count, size, sb), ro = xc_block_offset(count, size, rb);
        for (j = 0; j < nseg; j++) {
            const int k = i * nseg + j;
            sends[k] = xc_send(s, next, XC_AT_RECV((so + xc_block_offset(sc, nseg, j)) * ds),
                               xc_block_count(sc, nseg, j) * ds,
                               XC_DEPS(i > 0 ? recvs[k - nseg] : -1, window_dep(sends, k)));
            recvs[k] = xc_recv(s, prev, XC_AT_RECV((ro + xc_block_offset(rc, nseg, j)) * ds),
                               xc_block_count(rc, nseg, j) * ds, XC_DEPS(window_dep(recvs, k)));
        }
    }
out:
    free(sends);
    free(recvs);
}

xcoll_status_t scatter_allgather_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t count = a->count, ds = s->dsize;
    int plo[2], phi[2], np, p, c, first, got[2] = {-1, -1};
    btree_t t;

    if (a->size == 1 || count == 0)
        return s->err;
    first = (int)s->nsteps;

    /* Scatter: every rank receives its subtree's blocks where they belong
     * in RECV and forwards its children's from there. */
    btree_init(&t, a->rank, a->size, a->root);
    if (t.parent >= 0) {
        np = btree_split(&t, t.v, btree_hi(&t, t.v, t.span), plo, phi);
        for (p = 0; p < np; p++) {
            size_t off, bytes;
            run_bytes(&t, count, ds, plo[p], phi[p], &off, &bytes);
            got[p] = xc_recv(s, t.parent, XC_AT_RECV(off), bytes, XC_NODEPS);
        }
    }
    for (c = t.nch - 1; c >= 0; c--) { /* largest subtree first */
        np = btree_split(&t, t.child[c], btree_hi(&t, t.child[c], t.child_span[c]), plo, phi);
        for (p = 0; p < np; p++) {
            size_t off, bytes;
            run_bytes(&t, count, ds, plo[p], phi[p], &off, &bytes);
            xc_send(s, btree_real(&t, t.child[c]), XC_AT_RECV(off), bytes,
                    XC_DEPS(got[0], got[1]));
        }
    }

    /* The allgather rewrites blocks this rank may still be forwarding. */
    s->after = xc_join(s, first);
    ring_allgather_uneven(s, a->rank, a->size, count);
    s->after = -1;
    return s->err;
}

/* ------------------------------------------ reduce-scatter + gather reduce */

xcoll_status_t rsg_reduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank, is_root = a->rank == a->root;
    const size_t count = a->count, ds = s->dsize;
    const xc_buf_t in = a->in_place && is_root ? XC_BUF_RECV : XC_BUF_SEND;
    const size_t largest = xc_block_count(count, P, 0) * ds;
    const int next = xc_ring_next(r, P), prev = xc_ring_prev(r, P);
    int nseg, nland, i, j, c, p, np, plo[2], phi[2], first, *sends = NULL, *reduces = NULL;
    int *deps = NULL, ndeps = 0;
    size_t n, land, acc_off = 0;
    xc_buf_t acc;
    btree_t t;

    if (P == 1) {
        int cp = -1;
        if (!a->in_place)
            cp = xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(0), count * ds, XC_NODEPS);
        if (a->op == XCOLL_AVG)
            xc_divide_local(s, XC_AT_RECV(0), count * ds, XC_DEPS(cp));
        return s->err;
    }
    n = (largest + COMPOSITE_SEGMENT_BYTES - 1) / COMPOSITE_SEGMENT_BYTES;
    if (n > ((size_t)1 << 28) / (size_t)P) {
        xc_error("rsg reduce: %zu segments per block over %d ranks is too many steps", n, P);
        s->err = XCOLL_ERR_UNSUPPORTED;
        return s->err;
    }
    nseg = n < 1 ? 1 : (int)n;
    nland = (P - 1) * nseg < COMPOSITE_LANDING_SLOTS ? (P - 1) * nseg : COMPOSITE_LANDING_SLOTS;

    /* Partial sums accumulate in a buffer laid out like the input: RECV on
     * the root, scratch elsewhere (RECV exists only on the root). The
     * gather then collects the finished blocks in the same buffer. */
    if (is_root) {
        acc = XC_BUF_RECV;
    } else {
        acc = XC_BUF_TMP;
        acc_off = xc_sched_tmp(s, count * ds);
    }
    land = xc_sched_tmp(s, (size_t)nland * xc_block_count(largest / ds, nseg, 0) * ds);
    sends = alloc_ids(s, (size_t)(P - 1) * (size_t)nseg);
    reduces = alloc_ids(s, (size_t)(P - 1) * (size_t)nseg);
    deps = alloc_ids(s, 2 * 32 + 2);
    if (s->err != XCOLL_OK)
        goto out;
    first = (int)s->nsteps;

    /* Reduce-scatter, as ring.c: at step i send block r-i-1 (own input at
     * step 0, then what step i-1 reduced) and fold block r-i-2 into the
     * accumulator; after size-1 steps block r is complete here. */
    for (i = 0; i < P - 1; i++) {
        const int sb = mod(r - i - 1, P), rb = mod(r - i - 2, P);
        const size_t sc = xc_block_count(count, P, sb), rc = xc_block_count(count, P, rb);
        const size_t so = xc_block_offset(count, P, sb), ro = xc_block_offset(count, P, rb);
        for (j = 0; j < nseg; j++) {
            const int k = i * nseg + j;
            const size_t soff = (so + xc_block_offset(sc, nseg, j)) * ds;
            const size_t roff = (ro + xc_block_offset(rc, nseg, j)) * ds;
            const xc_ref_t landing = XC_AT_TMP(land + (size_t)(k % nland) *
                                               xc_block_count(largest / ds, nseg, 0) * ds);
            sends[k] = xc_send(s, next, i == 0 ? xc_ref(in, soff) : xc_ref(acc, acc_off + soff),
                               xc_block_count(sc, nseg, j) * ds,
                               XC_DEPS(i > 0 ? reduces[k - nseg] : -1, window_dep(sends, k)));
            reduces[k] = xc_recv_reduce(s, prev, landing, xc_ref(in, roff),
                                        xc_ref(acc, acc_off + roff),
                                        xc_block_count(rc, nseg, j) * ds,
                                        XC_DEPS(k >= nland ? reduces[k - nland] : -1,
                                                window_dep(reduces, k)));
        }
    }
    if (a->op == XCOLL_AVG) {
        /* each element of the result is divided once, by its owner */
        const size_t oc = xc_block_count(count, P, r), oo = xc_block_offset(count, P, r);
        for (j = 0; j < nseg; j++)
            xc_divide_local(s, xc_ref(acc, acc_off + (oo + xc_block_offset(oc, nseg, j)) * ds),
                            xc_block_count(oc, nseg, j) * ds,
                            XC_DEPS(reduces[(P - 2) * nseg + j]));
    }

    /* Gather the blocks to the root up a binomial tree, each subtree's
     * blocks landing at their own offsets. */
    s->after = xc_join(s, first);
    btree_init(&t, r, P, a->root);
    for (c = t.nch - 1; c >= 0; c--) {
        np = btree_split(&t, t.child[c], btree_hi(&t, t.child[c], t.child_span[c]), plo, phi);
        for (p = 0; p < np; p++) {
            size_t off, bytes;
            run_bytes(&t, count, ds, plo[p], phi[p], &off, &bytes);
            deps[ndeps++] = xc_recv(s, btree_real(&t, t.child[c]), xc_ref(acc, acc_off + off),
                                    bytes, XC_NODEPS);
        }
    }
    if (t.parent >= 0) {
        np = btree_split(&t, t.v, btree_hi(&t, t.v, t.span), plo, phi);
        for (p = 0; p < np; p++) {
            size_t off, bytes;
            run_bytes(&t, count, ds, plo[p], phi[p], &off, &bytes);
            xc_send(s, t.parent, xc_ref(acc, acc_off + off), bytes, deps, ndeps);
        }
    }
    s->after = -1;
out:
    free(sends);
    free(reduces);
    free(deps);
    return s->err;
}
