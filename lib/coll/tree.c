/* Binomial trees: ceil(log2 size) rounds, for latency-bound (small)
 * messages and rooted collectives.
 *
 * Ranks are renumbered so the root is virtual rank 0: v = (rank - root) mod
 * size. The subtree of v is the virtual ranks [v, v + span(v)) below size,
 * where span(v) is v's lowest set bit (for the root: the smallest power of
 * two >= size). v's parent is v - span(v); its children are v + m for the
 * powers of two m < span(v). A subtree is contiguous in virtual ranks; in
 * real ranks it may wrap past size-1 to 0, so gather and scatter move such
 * a range as two messages, split where virtual rank (size - root) maps to
 * real rank 0; sender and receiver split by the same rule. */
#include <stdlib.h>

#include "coll.h"
#include "log.h"

/* Bcast and reduce split large messages into segments of this size so a
 * segment moves down (or up) the tree while the next one is on the level
 * above. 128 KiB, as in ring.c: the per-message cost stays small next to the
 * transfer, and a segment stays in L2 while it is reduced. */
#define TREE_SEGMENT_BYTES ((size_t)128 * 1024)

/* ...but at most this many segments per tree level: a pipeline down L
 * levels takes (L - 1 + S) segment times, so S = 4L keeps the fill under
 * 20% while each segment, a rendezvous and a page pinning of its own,
 * stays large (on 2 ranks, with nothing to pipeline, 128 KiB segments made
 * a 16 MiB bcast ~1.4x slower than one message). */
#define TREE_SEGMENTS_PER_LEVEL 4

/* Landing buffers per child in reduce: receiving segment j+1 overlaps the
 * reduction of segment j. */
#define TREE_LANDING_SLOTS 2

/* At most this many segments in flight per link and direction (message k
 * waits for message k - TREE_WINDOW with the same peer). It divides 256, so
 * messages whose tags are equal (slots 256 apart) are posted in order. */
#define TREE_WINDOW 64

typedef struct {
    int size, root, v;
    int span;   /* subtree span of v */
    int parent; /* real rank, or -1 at the root */
} tree_t;

static int real_rank(const tree_t *t, int v) { return (v + t->root) % t->size; }

static void tree_init(tree_t *t, const xc_coll_args_t *a)
{
    t->size = a->size;
    t->root = a->root;
    t->v = (a->rank - a->root + a->size) % a->size;
    if (t->v == 0) {
        t->span = 1;
        while (t->span < a->size)
            t->span <<= 1;
        t->parent = -1;
    } else {
        t->span = t->v & -t->v;
        t->parent = real_rank(t, t->v - t->span);
    }
}

/* Virtual ranks in v's subtree. */
static int subtree_size(const tree_t *t, int v, int span)
{
    return span < t->size - v ? span : t->size - v;
}

/* Children in the order of m = 1, 2, 4, ... (smallest subtree first). */
static int children(const tree_t *t, int *child, int *child_span)
{
    int m, n = 0;
    for (m = 1; m < t->span && t->v + m < t->size; m <<= 1) {
        child[n] = t->v + m;
        child_span[n] = m;
        n++;
    }
    return n;
}

/* Virtual range [lo, hi) as runs of consecutive real ranks: piece k covers
 * [plo[k], phi[k]). Returns the number of pieces (1 or 2). */
static int split_range(const tree_t *t, int lo, int hi, int plo[2], int phi[2])
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

static int nseg_for(size_t bytes, int size)
{
    size_t n, levels = 0;
    if (bytes <= TREE_SEGMENT_BYTES)
        return 1;
    while (((size_t)1 << levels) < (size_t)size)
        levels++;
    n = (bytes + TREE_SEGMENT_BYTES - 1) / TREE_SEGMENT_BYTES;
    if (n > TREE_SEGMENTS_PER_LEVEL * levels)
        n = TREE_SEGMENTS_PER_LEVEL * levels;
    return n < 1 ? 1 : (int)n;
}

static int *alloc_ids(xc_sched_t *s, size_t n)
{
    int *ids = malloc((n ? n : 1) * sizeof(int));
    if (ids == NULL && s->err == XCOLL_OK) {
        xc_error("out of memory building a tree schedule (%zu steps)", n);
        s->err = XCOLL_ERR_NO_MEMORY;
    }
    return ids;
}

static int window_dep(const int *ids, int k)
{
    return k >= TREE_WINDOW ? ids[k - TREE_WINDOW] : -1;
}

xcoll_status_t binomial_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t count = a->count, ds = s->dsize;
    const int nseg = nseg_for(count * ds, a->size);
    int child[32], child_span[32], nch, c, j;
    int *recvs, *sends;
    tree_t t;

    if (a->size == 1)
        return s->err;
    tree_init(&t, a);
    nch = children(&t, child, child_span);
    recvs = alloc_ids(s, (size_t)nseg);
    sends = alloc_ids(s, (size_t)nseg * (size_t)(nch ? nch : 1));
    if (s->err == XCOLL_OK) {
        for (j = 0; j < nseg; j++) {
            const size_t off = xc_block_offset(count, nseg, j) * ds;
            const size_t bytes = xc_block_count(count, nseg, j) * ds;
            recvs[j] = -1;
            if (t.parent >= 0)
                recvs[j] = xc_recv(s, t.parent, XC_AT_RECV(off), bytes,
                                   XC_DEPS(window_dep(recvs, j)));
            /* largest subtree first: it has the longest way to go */
            for (c = nch - 1; c >= 0; c--)
                sends[c * nseg + j] = xc_send(s, real_rank(&t, child[c]), XC_AT_RECV(off), bytes,
                                              XC_DEPS(recvs[j], window_dep(sends + c * nseg, j)));
        }
    }
    free(recvs);
    free(sends);
    return s->err;
}

xcoll_status_t binomial_reduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t count = a->count, ds = s->dsize;
    const int nseg = nseg_for(count * ds, a->size);
    const size_t seg_max = xc_block_count(count, nseg, 0) * ds;
    const xc_buf_t in = a->in_place && a->rank == a->root ? XC_BUF_RECV : XC_BUF_SEND;
    int child[32], child_span[32], nch, c, j;
    int *recvs = NULL, *reduces = NULL, *sends = NULL;
    size_t land = 0, acc_off = 0;
    xc_buf_t acc;
    tree_t t;

    tree_init(&t, a);
    nch = children(&t, child, child_span);

    if (nch == 0) {
        if (t.parent < 0) { /* a single rank */
            int cp = -1;
            if (!a->in_place)
                cp = xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(0), count * ds, XC_NODEPS);
            if (a->op == XCOLL_AVG)
                xc_divide_local(s, XC_AT_RECV(0), count * ds, XC_DEPS(cp));
            return s->err;
        }
        sends = alloc_ids(s, (size_t)nseg);
        for (j = 0; j < nseg && s->err == XCOLL_OK; j++)
            sends[j] = xc_send(s, t.parent, XC_AT_SEND(xc_block_offset(count, nseg, j) * ds),
                               xc_block_count(count, nseg, j) * ds,
                               XC_DEPS(window_dep(sends, j)));
        free(sends);
        return s->err;
    }

    /* The root accumulates in RECV; other ranks have no RECV, so scratch. */
    if (t.parent < 0) {
        acc = XC_BUF_RECV;
    } else {
        acc = XC_BUF_TMP;
        acc_off = xc_sched_tmp(s, count * ds);
    }
    land = xc_sched_tmp(s, (size_t)nch * TREE_LANDING_SLOTS * seg_max);
    recvs = alloc_ids(s, (size_t)nch * (size_t)nseg);
    reduces = alloc_ids(s, (size_t)nch * (size_t)nseg);
    sends = alloc_ids(s, (size_t)nseg);
    if (s->err != XCOLL_OK)
        goto out;

    for (j = 0; j < nseg; j++) {
        const size_t off = xc_block_offset(count, nseg, j) * ds;
        const size_t bytes = xc_block_count(count, nseg, j) * ds;
        const xc_ref_t acc_ref = xc_ref(acc, acc_off + off);
        int last = -1;

        /* Every segment combines the same operands in the same order (own
         * input, then children by increasing subtree size), so each element
         * is reduced identically however the data is segmented. */
        for (c = 0; c < nch; c++) {
            const int k = c * nseg + j;
            const size_t slot = (size_t)c * TREE_LANDING_SLOTS + (size_t)(j % TREE_LANDING_SLOTS);
            const xc_ref_t landing = XC_AT_TMP(land + slot * seg_max);
            /* the landing buffer is free once the reduction that read it ran */
            const int freed = j >= TREE_LANDING_SLOTS ? reduces[k - TREE_LANDING_SLOTS] : -1;
            recvs[k] = xc_recv(s, real_rank(&t, child[c]), landing, bytes,
                               XC_DEPS(freed, window_dep(recvs + c * nseg, j)));
            last = reduces[k] = xc_reduce_local(s, c == 0 ? xc_ref(in, off) : acc_ref, landing,
                                                acc_ref, bytes, XC_DEPS(recvs[k], last));
        }
        if (t.parent >= 0)
            sends[j] = xc_send(s, t.parent, acc_ref, bytes, XC_DEPS(last, window_dep(sends, j)));
        else if (a->op == XCOLL_AVG)
            xc_divide_local(s, acc_ref, bytes, XC_DEPS(last));
    }
out:
    free(recvs);
    free(reduces);
    free(sends);
    return s->err;
}

xcoll_status_t binomial_gather_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t block = a->count * s->dsize;
    int child[32], child_span[32], nch, c, p, np, plo[2], phi[2];
    int deps[2 * 32 + 1], ndeps = 0;
    size_t tmp;
    tree_t t;

    tree_init(&t, a);
    nch = children(&t, child, child_span);

    if (t.parent < 0) {
        /* the root receives every subtree straight into RECV, in real order */
        if (!a->in_place)
            xc_copy(s, XC_AT_SEND(0), XC_AT_RECV((size_t)a->rank * block), block, XC_NODEPS);
        for (c = nch - 1; c >= 0; c--) {
            int hi = child[c] + subtree_size(&t, child[c], child_span[c]);
            np = split_range(&t, child[c], hi, plo, phi);
            for (p = 0; p < np; p++)
                xc_recv(s, real_rank(&t, child[c]),
                        XC_AT_RECV((size_t)real_rank(&t, plo[p]) * block),
                        (size_t)(phi[p] - plo[p]) * block, XC_NODEPS);
        }
        return s->err;
    }

    if (nch == 0) {
        xc_send(s, t.parent, XC_AT_SEND(0), block, XC_NODEPS);
        return s->err;
    }

    /* An inner rank collects its subtree in scratch, in virtual order. */
    tmp = xc_sched_tmp(s, (size_t)subtree_size(&t, t.v, t.span) * block);
    deps[ndeps++] = xc_copy(s, XC_AT_SEND(0), XC_AT_TMP(tmp), block, XC_NODEPS);
    for (c = nch - 1; c >= 0; c--) {
        int hi = child[c] + subtree_size(&t, child[c], child_span[c]);
        np = split_range(&t, child[c], hi, plo, phi);
        for (p = 0; p < np; p++)
            deps[ndeps++] = xc_recv(s, real_rank(&t, child[c]),
                                    XC_AT_TMP(tmp + (size_t)(plo[p] - t.v) * block),
                                    (size_t)(phi[p] - plo[p]) * block, XC_NODEPS);
    }
    np = split_range(&t, t.v, t.v + subtree_size(&t, t.v, t.span), plo, phi);
    for (p = 0; p < np; p++)
        xc_send(s, t.parent, XC_AT_TMP(tmp + (size_t)(plo[p] - t.v) * block),
                (size_t)(phi[p] - plo[p]) * block, deps, ndeps);
    return s->err;
}

xcoll_status_t binomial_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t block = a->count * s->dsize;
    int child[32], child_span[32], nch, c, p, np, plo[2], phi[2];
    int deps[2], ndeps = 0;
    size_t tmp;
    tree_t t;

    tree_init(&t, a);
    nch = children(&t, child, child_span);

    if (t.parent < 0) {
        /* In place the root's block stays in SEND and RECV is unused. */
        if (!a->in_place)
            xc_copy(s, XC_AT_SEND((size_t)a->rank * block), XC_AT_RECV(0), block, XC_NODEPS);
        for (c = nch - 1; c >= 0; c--) {
            int hi = child[c] + subtree_size(&t, child[c], child_span[c]);
            np = split_range(&t, child[c], hi, plo, phi);
            for (p = 0; p < np; p++)
                xc_send(s, real_rank(&t, child[c]),
                        XC_AT_SEND((size_t)real_rank(&t, plo[p]) * block),
                        (size_t)(phi[p] - plo[p]) * block, XC_NODEPS);
        }
        return s->err;
    }

    if (nch == 0) {
        xc_recv(s, t.parent, XC_AT_RECV(0), block, XC_NODEPS);
        return s->err;
    }

    /* An inner rank receives its subtree's blocks in virtual order, keeps
     * the first and forwards the rest. */
    tmp = xc_sched_tmp(s, (size_t)subtree_size(&t, t.v, t.span) * block);
    np = split_range(&t, t.v, t.v + subtree_size(&t, t.v, t.span), plo, phi);
    for (p = 0; p < np; p++)
        deps[ndeps++] = xc_recv(s, t.parent, XC_AT_TMP(tmp + (size_t)(plo[p] - t.v) * block),
                                (size_t)(phi[p] - plo[p]) * block, XC_NODEPS);
    xc_copy(s, XC_AT_TMP(tmp), XC_AT_RECV(0), block, deps, ndeps);
    for (c = nch - 1; c >= 0; c--) {
        int hi = child[c] + subtree_size(&t, child[c], child_span[c]);
        int np2 = split_range(&t, child[c], hi, plo, phi);
        for (p = 0; p < np2; p++)
            xc_send(s, real_rank(&t, child[c]), XC_AT_TMP(tmp + (size_t)(plo[p] - t.v) * block),
                    (size_t)(phi[p] - plo[p]) * block, deps, ndeps);
    }
    return s->err;
}

/* Tree barrier: zero-byte tokens climb a binomial tree to rank 0, which
 * then releases everyone down the same tree. 2(size-1) messages in all and
 * 2 ceil(log2 size) message latencies, against the dissemination barrier's
 * size ceil(log2 size) messages in ceil(log2 size) latencies: fewer
 * messages for a busy network, at twice the depth. */
xcoll_status_t tree_barrier_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const xc_ref_t none = xc_ref(XC_BUF_NONE, 0);
    int child[32], child_span[32], arrived[32] = {0}, nch, c, released;
    xc_coll_args_t at_zero = *a;
    tree_t t;

    at_zero.root = 0;
    tree_init(&t, &at_zero);
    nch = children(&t, child, child_span);
    for (c = 0; c < nch; c++)
        arrived[c] = xc_recv(s, real_rank(&t, child[c]), none, 0, XC_NODEPS);
    if (t.parent >= 0) {
        /* the release can be posted at once: it cannot arrive before every
         * rank has entered, since rank 0 sends it only then */
        xc_send(s, t.parent, none, 0, arrived, nch);
        released = xc_recv(s, t.parent, none, 0, XC_NODEPS);
        for (c = nch - 1; c >= 0; c--)
            xc_send(s, real_rank(&t, child[c]), none, 0, XC_DEPS(released));
    } else {
        for (c = nch - 1; c >= 0; c--)
            xc_send(s, real_rank(&t, child[c]), none, 0, arrived, nch);
    }
    return s->err;
}
