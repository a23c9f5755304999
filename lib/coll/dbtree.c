/* Pipelined double binary tree. One binary tree is bandwidth-poor: its
 * leaves (half the ranks) only ever send up and receive down once, while
 * an inner rank moves the data three times. Two trees, each carrying half
 * the data, in which every rank is inner in at most one, balance that:
 * every rank sends and receives about n bytes per direction, in
 * O(log size) latency per segment instead of the ring's O(size).
 *
 * The trees. An in-order binary tree over positions 1..m: a position with
 * k trailing zero bits sits at height k, its children are pos -+ 2^(k-1),
 * its parent pos -+ 2^k (whichever has height k+1); positions past m are
 * skipped over (a parent past m is replaced by its own parent, a right
 * child past m by that child's left descendant). Odd positions are the
 * leaves. Tree 0 puts member q at position q+1, so odd members are inner;
 * tree 1 puts it at position q (member 0 at m), so odd members sit on odd
 * positions there and are leaves: no member is inner in both trees.
 *
 * Allreduce: half h of every segment is reduced up tree h to its root
 * (which divides, for AVG) and broadcast back down, so every rank gets the
 * bits computed at that root. Bcast: the root sends half h to the root of
 * tree h, built over the other size-1 ranks; then each tree broadcasts. */
#include <stdlib.h>

#include "coll.h"
#include "log.h"

/* 64 KiB segments: a segment crosses 2 log2(size) links in allreduce, so
 * more, smaller segments shorten the pipeline's fill; below this the fixed
 * cost of a message starts to show. */
#define DBTREE_SEGMENT_BYTES ((size_t)64 * 1024)

/* Landing buffers per child and tree in allreduce. */
#define DBTREE_LANDING_SLOTS 2

/* Message k with a peer (one direction) waits for message k - DBTREE_WINDOW
 * with it, so messages whose tag slots wrap to equal values are posted in
 * order. A pair of ranks can meet in both trees, so this is kept per peer,
 * over the messages in the order the schedule numbers them. */
#define DBTREE_WINDOW 64

/* Distinct peers of one rank: parent and two children in each tree, plus
 * the bcast root. */
#define DBTREE_MAX_PEERS 8

typedef struct {
    int peer;
    int send[DBTREE_WINDOW], recv[DBTREE_WINDOW]; /* step of message k mod window */
} win_peer_t;

typedef struct {
    win_peer_t p[DBTREE_MAX_PEERS];
    int n;
} win_t;

static win_peer_t *win_of(xc_sched_t *s, win_t *w, int peer)
{
    int i;
    for (i = 0; i < w->n; i++)
        if (w->p[i].peer == peer)
            return &w->p[i];
    if (w->n == DBTREE_MAX_PEERS) {
        if (s->err == XCOLL_OK) {
            xc_error("dbtree: more than %d peers for rank %d", DBTREE_MAX_PEERS, s->rank);
            s->err = XCOLL_ERR_INTERNAL;
        }
        return NULL;
    }
    w->p[w->n].peer = peer;
    for (i = 0; i < DBTREE_WINDOW; i++)
        w->p[w->n].send[i] = w->p[w->n].recv[i] = -1;
    return &w->p[w->n++];
}

static int wsend(xc_sched_t *s, win_t *w, int peer, xc_ref_t src, size_t bytes, int dep)
{
    win_peer_t *wp = win_of(s, w, peer);
    int *slot, id;
    if (wp == NULL || s->err != XCOLL_OK)
        return -1;
    slot = &wp->send[s->send_slots[peer] % DBTREE_WINDOW];
    id = xc_send(s, peer, src, bytes, XC_DEPS(dep, *slot));
    *slot = id;
    return id;
}

static int wrecv(xc_sched_t *s, win_t *w, int peer, xc_ref_t dst, size_t bytes, int dep1,
                 int dep2)
{
    win_peer_t *wp = win_of(s, w, peer);
    int *slot, id;
    if (wp == NULL || s->err != XCOLL_OK)
        return -1;
    slot = &wp->recv[s->recv_slots[peer] % DBTREE_WINDOW];
    id = xc_recv(s, peer, dst, bytes, XC_DEPS(dep1, dep2, *slot));
    *slot = id;
    return id;
}

typedef struct {
    int parent;   /* index among the tree's members, -1 at the root */
    int child[2];
    int nch;
} tnode_t;

static int ctz(unsigned x) { return __builtin_ctz(x); }

static unsigned up(unsigned i)
{
    int k = ctz(i);
    return (i >> (k + 1)) & 1 ? i - (1u << k) : i + (1u << k);
}

/* Node at 0-based position pos of an in-order tree of m positions. */
static void inorder_node(int pos, int m, tnode_t *nd)
{
    unsigned i = (unsigned)pos + 1, root = 1, p, c;
    int k = ctz(i);
    while (root * 2 <= (unsigned)m)
        root *= 2;
    nd->parent = -1;
    if (i != root) {
        for (p = up(i); p > (unsigned)m; p = up(p))
            ;
        nd->parent = (int)p - 1;
    }
    nd->nch = 0;
    if (k > 0) {
        nd->child[nd->nch++] = (int)(i - (1u << (k - 1))) - 1;
        c = i + (1u << (k - 1));
        while (c > (unsigned)m && ctz(c) > 0)
            c -= 1u << (ctz(c) - 1);
        if (c <= (unsigned)m)
            nd->child[nd->nch++] = (int)c - 1;
    }
}

/* Position of member q in tree h of m members, and back. */
static int tree_pos(int h, int q, int m)
{
    return h == 0 ? q : (q + m - 1) % m;
}

static int tree_member(int h, int pos, int m)
{
    return h == 0 ? pos : (pos + 1) % m;
}

/* Member q's node in tree h, with parent and children as members. */
static void tree_node(int h, int q, int m, tnode_t *nd)
{
    int c;
    inorder_node(tree_pos(h, q, m), m, nd);
    if (nd->parent >= 0)
        nd->parent = tree_member(h, nd->parent, m);
    for (c = 0; c < nd->nch; c++)
        nd->child[c] = tree_member(h, nd->child[c], m);
}

static int tree_root(int h, int m)
{
    int root = 1;
    while (root * 2 <= m)
        root *= 2;
    return tree_member(h, root - 1, m);
}

/* Half h of count: [half_off, half_off + half_count). */
static size_t half_count(size_t count, int h) { return h == 0 ? (count + 1) / 2 : count / 2; }
static size_t half_off(size_t count, int h) { return h == 0 ? 0 : (count + 1) / 2; }

static int dbtree_nseg(size_t bytes)
{
    size_t n = (bytes + DBTREE_SEGMENT_BYTES - 1) / DBTREE_SEGMENT_BYTES;
    if (n < 1)
        n = 1;
    return n > (size_t)1 << 24 ? 1 << 24 : (int)n;
}

xcoll_status_t dbtree_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t count = a->count, ds = s->dsize;
    const xc_buf_t in = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    const int nseg = dbtree_nseg(half_count(count, 0) * ds);
    const size_t seg_max = xc_block_count(half_count(count, 0), nseg, 0) * ds;
    tnode_t nd[2];
    int *reduces = NULL, h, j, c;
    size_t land;
    win_t *w;

    if (P == 1) {
        int cp = -1;
        if (!a->in_place)
            cp = xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(0), count * ds, XC_NODEPS);
        if (a->op == XCOLL_AVG)
            xc_divide_local(s, XC_AT_RECV(0), count * ds, XC_DEPS(cp));
        return s->err;
    }
    if (count == 0)
        return s->err;
    w = calloc(1, sizeof(*w));
    /* reductions of segment j, tree h, child c, kept to free landing slots */
    reduces = malloc((size_t)nseg * 4 * sizeof(int));
    if (w == NULL || reduces == NULL) {
        xc_error("out of memory building a dbtree schedule (%d segments)", nseg);
        s->err = XCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (h = 0; h < 2; h++)
        tree_node(h, r, P, &nd[h]);
    land = xc_sched_tmp(s, 2 * 2 * DBTREE_LANDING_SLOTS * seg_max);

    for (j = 0; j < nseg; j++) {
        for (h = 0; h < 2; h++) {
            const size_t hc = half_count(count, h);
            const size_t off = (half_off(count, h) + xc_block_offset(hc, nseg, j)) * ds;
            const size_t bytes = xc_block_count(hc, nseg, j) * ds;
            const tnode_t *t = &nd[h];
            int last = -1, sent = -1, done;

            if (hc == 0) /* count 1: the second tree has nothing to carry */
                continue;
            /* Up: own input, then each child's partial, combined in a fixed
             * order so every segment is reduced the same way. */
            for (c = 0; c < t->nch; c++) {
                const int k = (j * 2 + h) * 2 + c;
                const size_t slot = ((size_t)(h * 2 + c) * DBTREE_LANDING_SLOTS +
                                     (size_t)(j % DBTREE_LANDING_SLOTS)) * seg_max;
                int freed = j >= DBTREE_LANDING_SLOTS
                                ? reduces[k - DBTREE_LANDING_SLOTS * 4]
                                : -1;
                int got = wrecv(s, w, t->child[c], XC_AT_TMP(land + slot), bytes, freed, -1);
                last = reduces[k] = xc_reduce_local(s, c == 0 ? xc_ref(in, off) : XC_AT_RECV(off),
                                                    XC_AT_TMP(land + slot), XC_AT_RECV(off),
                                                    bytes, XC_DEPS(got, last));
            }
            if (t->parent >= 0) {
                /* a leaf sends its input; an inner rank its partial */
                sent = wsend(s, w, t->parent, t->nch ? XC_AT_RECV(off) : xc_ref(in, off), bytes,
                             last);
                /* the result overwrites what the send reads (in place, or
                 * an inner rank's partial) */
                done = wrecv(s, w, t->parent, XC_AT_RECV(off), bytes,
                             t->nch || a->in_place ? sent : -1, -1);
            } else {
                done = a->op == XCOLL_AVG
                           ? xc_divide_local(s, XC_AT_RECV(off), bytes, XC_DEPS(last))
                           : last;
            }
            for (c = t->nch - 1; c >= 0; c--)
                wsend(s, w, t->child[c], XC_AT_RECV(off), bytes, done);
        }
    }
out:
    free(w);
    free(reduces);
    return s->err;
}

xcoll_status_t dbtree_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, m = P - 1, v = (a->rank - a->root + P) % P;
    const size_t count = a->count, ds = s->dsize;
    const int nseg = dbtree_nseg(half_count(count, 0) * ds);
    tnode_t nd[2];
    int h, j, c;
    win_t *w;

    if (P == 1 || count == 0)
        return s->err;
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        xc_error("out of memory building a dbtree schedule");
        s->err = XCOLL_ERR_NO_MEMORY;
        return s->err;
    }
    /* member q of the trees is virtual rank q+1 */
    if (v > 0)
        for (h = 0; h < 2; h++)
            tree_node(h, v - 1, m, &nd[h]);

    for (j = 0; j < nseg; j++) {
        for (h = 0; h < 2; h++) {
            const size_t hc = half_count(count, h);
            const size_t off = (half_off(count, h) + xc_block_offset(hc, nseg, j)) * ds;
            const size_t bytes = xc_block_count(hc, nseg, j) * ds;
            int got, parent;

            if (hc == 0)
                continue;
            if (v == 0) {
                wsend(s, w, (tree_root(h, m) + 1 + a->root) % P, XC_AT_RECV(off), bytes, -1);
                continue;
            }
            parent = nd[h].parent >= 0 ? (nd[h].parent + 1 + a->root) % P : a->root;
            got = wrecv(s, w, parent, XC_AT_RECV(off), bytes, -1, -1);
            for (c = nd[h].nch - 1; c >= 0; c--)
                wsend(s, w, (nd[h].child[c] + 1 + a->root) % P, XC_AT_RECV(off), bytes, got);
        }
    }
    free(w);
    return s->err;
}
