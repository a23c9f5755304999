/* Hierarchical algorithms: the ranks of a node talk among themselves
 * (shared memory, cheap) and only one rank per node, its leader, crosses
 * the network, so the slow links carry one message per node instead of
 * one per rank.
 *
 * allreduce: binomial reduce inside each node to its leader, binomial
 *   reduce among the leaders to rank 0's node, binomial bcast back among
 *   the leaders and then inside each node. Cut into segments, with each
 *   segment going on to the next phase as soon as it is ready, so the
 *   phases overlap. The result is computed once, at rank 0: every rank
 *   gets the same bits.
 * bcast: binomial bcast among the leaders (the root standing in for its
 *   node's leader), then inside each node; also segmented and overlapped.
 * hier2d allreduce: every rank of a node crosses the network, each for a
 *   slice of the data: a reduce-scatter inside the node leaves slice l of
 *   the node's partial sum on its local rank l, local rank l of every node
 *   reduces that slice among themselves in a ring across nodes, and an
 *   allgather inside the node hands every rank the other slices. The
 *   network carries what hier's leaders carry, but over every rank's
 *   connection at once, and a node's reduction work is spread over its
 *   ranks instead of falling on its leader. Needs the same rank count on
 *   every node (declines otherwise).
 * alltoall: each rank sends its whole input to its leader; the leaders
 *   regroup the blocks by destination node and exchange one message per
 *   pair of nodes; each leader then gives every member its result.
 *
 * All decline without a topology, on a single node, or when every node has
 * a single rank (the flat algorithms do the same work then).
 *
 * The binomial trees here run over groups of ranks (a node's members, the
 * leaders): member index i of a group is real rank ranks[i], and the
 * tree's virtual ranks count from the group's root as in tree.c. */
#include <stdlib.h>

#include "coll.h"
#include "log.h"
#include "topo.h"

/* As ring.c and tree.c: the per-message cost stays small next to a
 * segment's transfer, and a segment stays in cache while it is reduced. */
#define HIER_SEGMENT_BYTES ((size_t)128 * 1024)

/* Landing buffers per child for incoming partial sums. */
#define HIER_LANDING_SLOTS 2

/* Message k on a link waits for message k - HIER_WINDOW on it, so that
 * messages whose tag slots wrap to equal values are posted in order. Each
 * link carries one message per segment and direction here, so message k is
 * segment k. */
#define HIER_WINDOW 64

#define HIER_MAX_CHILDREN 32

/* This rank's place in a binomial tree over a group. */
typedef struct {
    int member;  /* 0: not in the group */
    int parent;  /* real rank, -1 at the root */
    int nch;
    int child[HIER_MAX_CHILDREN]; /* real ranks, smallest subtree first */
} gnode_t;

static void group_node(const int *ranks, int n, int me, int root, gnode_t *g)
{
    int v, span, m;
    g->member = me >= 0;
    g->parent = -1;
    g->nch = 0;
    if (me < 0)
        return;
    v = (me - root + n) % n;
    if (v == 0) {
        for (span = 1; span < n; span <<= 1)
            ;
    } else {
        span = v & -v;
        g->parent = ranks[(v - span + root) % n];
    }
    for (m = 1; m < span && v + m < n; m <<= 1)
        g->child[g->nch++] = ranks[(v + m + root) % n];
}

static int usable(const xc_coll_args_t *a)
{
    const struct xc_topo *t = a->topo;
    return t != NULL && t->size == a->size && t->nnodes > 1 && t->max_local > 1;
}

static int hier_nseg(size_t bytes)
{
    size_t n = (bytes + HIER_SEGMENT_BYTES - 1) / HIER_SEGMENT_BYTES;
    if (n < 1)
        n = 1;
    return n > (size_t)1 << 24 ? 1 << 24 : (int)n;
}

/* The ranks that cross the network: one per node, node order. */
static int *leaders_of(xc_sched_t *s, const struct xc_topo *t, int root)
{
    int *l = malloc((size_t)t->nnodes * sizeof(int)), n;
    if (l == NULL) {
        xc_error("out of memory building a %s schedule", s->algo);
        s->err = XCOLL_ERR_NO_MEMORY;
        return NULL;
    }
    for (n = 0; n < t->nnodes; n++)
        l[n] = xc_topo_leader(t, n);
    if (root >= 0)
        l[t->node_of[root]] = root;
    return l;
}

/* Step ids by role and segment mod HIER_WINDOW, for the window rule and
 * to free landing buffers. */
enum {
    R_IN_UP_RECV = 0,                          /* + child index */
    R_IN_UP_RED = R_IN_UP_RECV + HIER_MAX_CHILDREN,
    R_IN_DOWN_SEND = R_IN_UP_RED + HIER_MAX_CHILDREN,
    R_X_UP_RECV = R_IN_DOWN_SEND + HIER_MAX_CHILDREN,
    R_X_UP_RED = R_X_UP_RECV + HIER_MAX_CHILDREN,
    R_X_DOWN_SEND = R_X_UP_RED + HIER_MAX_CHILDREN,
    R_IN_UP_SEND = R_X_DOWN_SEND + HIER_MAX_CHILDREN,
    R_IN_DOWN_RECV,
    R_X_UP_SEND,
    R_X_DOWN_RECV,
    R_COUNT
};

typedef struct {
    int id[R_COUNT][HIER_WINDOW];
} roles_t;

static roles_t *roles_new(xc_sched_t *s)
{
    roles_t *ro = malloc(sizeof(*ro));
    int i, j;
    if (ro == NULL) {
        xc_error("out of memory building a %s schedule", s->algo);
        s->err = XCOLL_ERR_NO_MEMORY;
        return NULL;
    }
    for (i = 0; i < R_COUNT; i++)
        for (j = 0; j < HIER_WINDOW; j++)
            ro->id[i][j] = -1;
    return ro;
}

/* The step of role `role` for segment j - back (-1 if none), and a place to
 * store segment j's. */
#define ROLE_AT(ro, role, j, back) ((j) >= (back) ? (ro)->id[role][((j) - (back)) % HIER_WINDOW] : -1)
#define ROLE_SET(ro, role, j) ((ro)->id[role][(j) % HIER_WINDOW])

/* Reduces segment [off, off + bytes) over the tree g: children's partials
 * land in scratch and fold into RECV, starting from `cur` (this rank's
 * value: its input, or an earlier phase's result, ready after `ready`).
 * A non-root sends its value to the parent. Returns the step after which
 * RECV holds this rank's combined value (-1 if it combined nothing); *cur
 * becomes RECV if it did, and *sent the send to the parent. */
static int reduce_up(xc_sched_t *s, const gnode_t *g, roles_t *ro, int role_recv, int role_red,
                     int role_send, int j, size_t land, size_t seg_max, size_t off, size_t bytes,
                     xc_buf_t *cur, int ready, int *sent)
{
    int c, last = ready;
    for (c = 0; c < g->nch; c++) {
        const xc_ref_t landing =
            XC_AT_TMP(land + ((size_t)c * HIER_LANDING_SLOTS + (size_t)(j % HIER_LANDING_SLOTS)) *
                                 seg_max);
        int got = xc_recv(s, g->child[c], landing, bytes,
                          XC_DEPS(ROLE_AT(ro, role_red + c, j, HIER_LANDING_SLOTS),
                                  ROLE_AT(ro, role_recv + c, j, HIER_WINDOW)));
        ROLE_SET(ro, role_recv + c, j) = got;
        last = ROLE_SET(ro, role_red + c, j) = xc_reduce_local(
            s, xc_ref(*cur, off), landing, XC_AT_RECV(off), bytes, XC_DEPS(got, last));
        *cur = XC_BUF_RECV;
    }
    *sent = -1;
    if (g->parent >= 0) {
        *sent = xc_send(s, g->parent, xc_ref(*cur, off), bytes,
                        XC_DEPS(last, ROLE_AT(ro, role_send, j, HIER_WINDOW)));
        ROLE_SET(ro, role_send, j) = *sent;
    }
    return last;
}

/* Broadcasts RECV's segment down the tree g. `ready`: when this rank's
 * copy is there (root) or may be overwritten (non-root). Returns the step
 * after which RECV holds the segment here. */
static int bcast_down(xc_sched_t *s, const gnode_t *g, roles_t *ro, int role_recv, int role_send,
                      int j, size_t off, size_t bytes, int ready)
{
    int c, have = ready;
    if (g->parent >= 0) {
        have = xc_recv(s, g->parent, XC_AT_RECV(off), bytes,
                       XC_DEPS(ready, ROLE_AT(ro, role_recv, j, HIER_WINDOW)));
        ROLE_SET(ro, role_recv, j) = have;
    }
    for (c = g->nch - 1; c >= 0; c--) { /* largest subtree first */
        int id = xc_send(s, g->child[c], XC_AT_RECV(off), bytes,
                         XC_DEPS(have, ROLE_AT(ro, role_send + c, j, HIER_WINDOW)));
        ROLE_SET(ro, role_send + c, j) = id;
    }
    return have;
}

xcoll_status_t hier_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const struct xc_topo *t = a->topo;
    const size_t count = a->count, ds = s->dsize;
    const int nseg = hier_nseg(count * ds);
    const size_t seg_max = xc_block_count(count, nseg, 0) * ds;
    int node, *leaders = NULL, j;
    gnode_t in_node, across;
    size_t land_in, land_x;
    roles_t *ro = NULL;

    if (!usable(a))
        return XCOLL_ERR_UNSUPPORTED;
    if (count == 0)
        return s->err;
    node = t->node_of[a->rank];
    leaders = leaders_of(s, t, -1);
    ro = roles_new(s);
    if (s->err != XCOLL_OK)
        goto out;
    group_node(t->members + t->node_first[node], t->node_size[node], t->local_rank[a->rank], 0,
               &in_node);
    group_node(leaders, t->nnodes, leaders[node] == a->rank ? node : -1, 0, &across);
    land_in = xc_sched_tmp(s, (size_t)in_node.nch * HIER_LANDING_SLOTS * seg_max);
    land_x = xc_sched_tmp(s, (size_t)across.nch * HIER_LANDING_SLOTS * seg_max);

    for (j = 0; j < nseg; j++) {
        const size_t off = xc_block_offset(count, nseg, j) * ds;
        const size_t bytes = xc_block_count(count, nseg, j) * ds;
        xc_buf_t cur = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
        int sent_in, sent_x = -1, val, done;

        val = reduce_up(s, &in_node, ro, R_IN_UP_RECV, R_IN_UP_RED, R_IN_UP_SEND, j, land_in,
                        seg_max, off, bytes, &cur, -1, &sent_in);
        if (across.member)
            val = reduce_up(s, &across, ro, R_X_UP_RECV, R_X_UP_RED, R_X_UP_SEND, j, land_x,
                            seg_max, off, bytes, &cur, val, &sent_x);
        if (across.member && across.parent < 0) {
            /* rank 0 holds the total: finish AVG once, before it spreads */
            done = a->op == XCOLL_AVG ? xc_divide_local(s, XC_AT_RECV(off), bytes, XC_DEPS(val))
                                      : val;
        } else {
            /* the result lands where the send up read, if that was RECV */
            done = cur == XC_BUF_RECV ? (across.member ? sent_x : sent_in) : -1;
        }
        if (across.member)
            done = bcast_down(s, &across, ro, R_X_DOWN_RECV, R_X_DOWN_SEND, j, off, bytes, done);
        bcast_down(s, &in_node, ro, R_IN_DOWN_RECV, R_IN_DOWN_SEND, j, off, bytes, done);
    }
out:
    free(leaders);
    free(ro);
    return s->err;
}

xcoll_status_t hier_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const struct xc_topo *t = a->topo;
    const size_t count = a->count, ds = s->dsize;
    const int nseg = hier_nseg(count * ds);
    int node, *leaders = NULL, j;
    gnode_t in_node, across;
    roles_t *ro = NULL;

    if (!usable(a))
        return XCOLL_ERR_UNSUPPORTED;
    if (count == 0)
        return s->err;
    node = t->node_of[a->rank];
    leaders = leaders_of(s, t, a->root);
    ro = roles_new(s);
    if (s->err != XCOLL_OK)
        goto out;
    /* inside a node the tree is rooted at the node's leader (the root on
     * the root's node) */
    group_node(t->members + t->node_first[node], t->node_size[node], t->local_rank[a->rank],
               t->local_rank[leaders[node]], &in_node);
    group_node(leaders, t->nnodes, leaders[node] == a->rank ? node : -1, t->node_of[a->root],
               &across);
    for (j = 0; j < nseg; j++) {
        const size_t off = xc_block_offset(count, nseg, j) * ds;
        const size_t bytes = xc_block_count(count, nseg, j) * ds;
        int have = -1;
        if (across.member)
            have = bcast_down(s, &across, ro, R_X_DOWN_RECV, R_X_DOWN_SEND, j, off, bytes, -1);
        bcast_down(s, &in_node, ro, R_IN_DOWN_RECV, R_IN_DOWN_SEND, j, off, bytes, have);
    }
out:
    free(leaders);
    free(ro);
    return s->err;
}

/* ------------------------------------------------------------- alltoall */

xcoll_status_t hier_alltoall_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const struct xc_topo *t = a->topo;
    const int P = a->size;
    const size_t block = a->count * s->dsize, all = (size_t)P * block;
    const xc_buf_t in = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    int node, L, m, i, qi, *got = NULL, *xrecv = NULL, packed, first;
    const int *mem;
    size_t stage, out, *pack = NULL, *unpack = NULL;

    if (!usable(a))
        return XCOLL_ERR_UNSUPPORTED;
    if (a->count == 0)
        return s->err;
    node = t->node_of[a->rank];
    L = t->node_size[node];
    mem = t->members + t->node_first[node];

    if (mem[0] != a->rank) {
        /* a member: everything to the leader, everything back from it */
        int sent = xc_send(s, mem[0], xc_ref(in, 0), all, XC_NODEPS);
        xc_recv(s, mem[0], XC_AT_RECV(0), all, XC_DEPS(a->in_place ? sent : -1));
        return s->err;
    }

    pack = malloc((size_t)t->nnodes * sizeof(size_t));
    unpack = malloc((size_t)t->nnodes * sizeof(size_t));
    got = malloc((size_t)L * sizeof(int));
    xrecv = malloc((size_t)t->nnodes * sizeof(int));
    if (pack == NULL || unpack == NULL || got == NULL || xrecv == NULL) {
        xc_error("out of memory building a hier alltoall schedule");
        s->err = XCOLL_ERR_NO_MEMORY;
        goto out;
    }
    /* Scratch: each member's input (stage, member i at (i-1) * all), the
     * blocks bound for node m as [destination member][source member]
     * (pack[m], L x L_m blocks; node m's leader lays out what it sends
     * here alike, into unpack[m]), and each member's result (out). */
    stage = xc_sched_tmp(s, (size_t)(L - 1) * all);
    for (m = 0; m < t->nnodes; m++)
        pack[m] = xc_sched_tmp(s, (size_t)L * (size_t)t->node_size[m] * block);
    for (m = 0; m < t->nnodes; m++)
        unpack[m] = m == node ? pack[m]
                              : xc_sched_tmp(s, (size_t)L * (size_t)t->node_size[m] * block);
    out = xc_sched_tmp(s, (size_t)(L - 1) * all);

    got[0] = -1;
    for (i = 1; i < L; i++)
        got[i] = xc_recv(s, mem[i], XC_AT_TMP(stage + (size_t)(i - 1) * all), all, XC_NODEPS);
    /* other leaders' blocks can arrive while this node's are packed */
    for (m = 0; m < t->nnodes; m++)
        xrecv[m] = m == node ? -1
                             : xc_recv(s, xc_topo_leader(t, m), XC_AT_TMP(unpack[m]),
                                       (size_t)L * (size_t)t->node_size[m] * block, XC_NODEPS);

    /* Pack, node by node, and send each node's share as one message. */
    packed = (int)s->nsteps;
    for (m = 0; m < t->nnodes; m++) {
        const int Lm = t->node_size[m], *mm = t->members + t->node_first[m];
        int join;
        first = (int)s->nsteps;
        for (qi = 0; qi < Lm; qi++)
            for (i = 0; i < L; i++) {
                const size_t src_off = (size_t)mm[qi] * block;
                xc_copy(s, i == 0 ? xc_ref(in, src_off)
                                  : XC_AT_TMP(stage + (size_t)(i - 1) * all + src_off),
                        XC_AT_TMP(pack[m] + ((size_t)qi * (size_t)L + (size_t)i) * block), block,
                        XC_DEPS(got[i]));
            }
        join = xc_join(s, first);
        if (m == node)
            xrecv[m] = join; /* this node's share stays here */
        else
            xc_send(s, xc_topo_leader(t, m), XC_AT_TMP(pack[m]),
                    (size_t)L * (size_t)Lm * block, XC_DEPS(join));
    }
    /* In place the leader's result overwrites its input, read by the
     * packing above. */
    packed = a->in_place ? xc_join(s, packed) : -1;

    /* Unpack: member qi's block from source member i of node m is at
     * (qi * L_m + i) in unpack[m]; it goes to the source's rank position,
     * consecutive ranks in one copy. Then one message per member. */
    for (qi = 0; qi < L; qi++) {
        first = (int)s->nsteps;
        for (m = 0; m < t->nnodes; m++) {
            const int Lm = t->node_size[m], *mm = t->members + t->node_first[m];
            for (i = 0; i < Lm;) {
                int run = 1;
                while (i + run < Lm && mm[i + run] == mm[i] + run)
                    run++;
                xc_copy(s,
                        XC_AT_TMP(unpack[m] + ((size_t)qi * (size_t)Lm + (size_t)i) * block),
                        qi == 0 ? XC_AT_RECV((size_t)mm[i] * block)
                                : XC_AT_TMP(out + (size_t)(qi - 1) * all + (size_t)mm[i] * block),
                        (size_t)run * block, XC_DEPS(xrecv[m], packed));
                i += run;
            }
        }
        if (qi > 0)
            xc_send(s, mem[qi], XC_AT_TMP(out + (size_t)(qi - 1) * all), all,
                    XC_DEPS(xc_join(s, first)));
    }
out:
    free(pack);
    free(unpack);
    free(got);
    free(xrecv);
    return s->err;
}

/* ---------------------------------------------------- hier2d allreduce */

/* A segment goes through the three phases on its own, so one segment
 * crosses the network while the next is reduced inside the node. Few and
 * large: each becomes K * M messages of 1/(K M) of it; at most 8 up to 64
 * MiB, then segments of 8 MiB, so the scratch (two segments' worth of
 * incoming slices) stays under 16 MiB whatever the count. */
#define HIER2D_SEGMENT_BYTES ((size_t)512 * 1024)
#define HIER2D_FEW_SEGMENTS 8
#define HIER2D_MAX_SEGMENT_BYTES ((size_t)8 << 20)

static int hier2d_nseg(size_t bytes)
{
    size_t n = (bytes + HIER2D_SEGMENT_BYTES - 1) / HIER2D_SEGMENT_BYTES;
    size_t big = (bytes + HIER2D_MAX_SEGMENT_BYTES - 1) / HIER2D_MAX_SEGMENT_BYTES;
    n = n < 1 ? 1 : n > HIER2D_FEW_SEGMENTS ? HIER2D_FEW_SEGMENTS : n;
    n = n > big ? n : big;
    return n > (size_t)1 << 24 ? 1 << 24 : (int)n;
}

/* One direction of one link: its messages so far. As above, message k
 * waits for message k - HIER_WINDOW on it. */
typedef struct {
    int *id;
    int n;
} hlink_t;

static int hlink_dep(const hlink_t *l) { return l->n >= HIER_WINDOW ? l->id[l->n - HIER_WINDOW] : -1; }
static int hlink_add(hlink_t *l, int id)
{
    l->id[l->n++] = id;
    return id;
}

/* Elements [*off, *off + *cnt) of block b of n over cnt elements from off. */
static void sub_block(size_t *off, size_t *cnt, int n, int b)
{
    *off += xc_block_offset(*cnt, n, b);
    *cnt = xc_block_count(*cnt, n, b);
}

xcoll_status_t hier2d_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const struct xc_topo *t = a->topo;
    const size_t count = a->count, ds = s->dsize;
    const xc_buf_t in = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    int K, M, node, l, m, nseg, npar, g, i, k, *mem, *col = NULL, *ids = NULL, *p1_sent, *p1_red;
    int land2_last[2][2] = {{-1, -1}, {-1, -1}};
    size_t seg_max, slice_max, sub_max, land1, land2, per_peer, per_ring;
    hlink_t to_next, from_prev, *out_l = NULL, *in_l = NULL;

    if (!usable(a))
        return XCOLL_ERR_UNSUPPORTED;
    for (m = 1; m < t->nnodes; m++)
        if (t->node_size[m] != t->node_size[0])
            return XCOLL_ERR_UNSUPPORTED;
    if (count == 0)
        return s->err;
    K = t->node_size[0];
    M = t->nnodes;
    node = t->node_of[a->rank];
    l = t->local_rank[a->rank];
    mem = t->members + t->node_first[node];
    nseg = hier2d_nseg(count * ds);
    npar = nseg < 2 ? 1 : 2;
    seg_max = xc_block_count(count, nseg, 0);
    slice_max = xc_block_count(seg_max, K, 0);
    sub_max = xc_block_count(slice_max, M, 0);

    /* ids: every link's messages (2 a segment each way with each local
     * peer, 2 (M - 1) with the ring's neighbours), then this rank's step-1
     * sends and the reductions that last read each landing slot */
    per_peer = (size_t)nseg * 2;
    per_ring = (size_t)nseg * 2 * (size_t)M;
    col = malloc((size_t)M * sizeof(int));
    out_l = malloc((size_t)K * sizeof(hlink_t));
    in_l = malloc((size_t)K * sizeof(hlink_t));
    ids = malloc((2 * (size_t)K * per_peer + 2 * per_ring + 3 * (size_t)K) * sizeof(int));
    if (col == NULL || out_l == NULL || in_l == NULL || ids == NULL) {
        xc_error("out of memory building a hier2d allreduce schedule");
        s->err = XCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (k = 0; k < K; k++) {
        out_l[k].id = ids + (size_t)k * per_peer, out_l[k].n = 0;
        in_l[k].id = ids + (size_t)(K + k) * per_peer, in_l[k].n = 0;
    }
    to_next.id = ids + (size_t)2 * (size_t)K * per_peer, to_next.n = 0;
    from_prev.id = to_next.id + per_ring, from_prev.n = 0;
    p1_sent = from_prev.id + per_ring;
    p1_red = p1_sent + K;
    for (i = 0; i < 2 * K; i++)
        p1_red[i] = -1;
    /* col[m]: local rank l of node m, the ring across nodes */
    for (m = 0; m < M; m++)
        col[m] = t->members[t->node_first[m] + l];
    /* Scratch: the K - 1 peers' slices for the reduce-scatter inside the
     * node, per segment parity; two landing blocks per parity for the
     * ring. */
    land1 = xc_sched_tmp(s, (size_t)npar * (size_t)(K - 1) * slice_max * ds);
    land2 = xc_sched_tmp(s, (size_t)npar * 2 * sub_max * ds);

    for (g = 0; g < nseg; g++) {
        const int par = g % 2, next = col[(node + 1) % M], prev = col[(node + M - 1) % M];
        const size_t goff = xc_block_offset(count, nseg, g), gcnt = xc_block_count(count, nseg, g);
        size_t my_off = goff, my_cnt = gcnt;
        int have, first, done, rs0;

        sub_block(&my_off, &my_cnt, K, l);

        /* 1. reduce-scatter inside the node: slice i to local rank i;
         * slice l here is this rank's input combined with every peer's, in
         * a fixed order (l - 1, l - 2, ...); it is reduced once, here, so
         * every rank gets the bits computed here */
        for (k = 1; k < K; k++) {
            const int ip = (l + k) % K;
            size_t off = goff, cnt = gcnt;
            sub_block(&off, &cnt, K, ip);
            p1_sent[ip] = hlink_add(&out_l[ip], xc_send(s, mem[ip], xc_ref(in, off * ds), cnt * ds,
                                                         XC_DEPS(hlink_dep(&out_l[ip]))));
        }
        have = -1;
        for (k = 1; k < K; k++) {
            const int ip = (l + K - k) % K, slot = par * K + k;
            const xc_ref_t landing = XC_AT_TMP(
                land1 + ((size_t)par * (size_t)(K - 1) + (size_t)(k - 1)) * slice_max * ds);
            int got = hlink_add(&in_l[ip], xc_recv(s, mem[ip], landing, my_cnt * ds,
                                                   XC_DEPS(p1_red[slot], hlink_dep(&in_l[ip]))));
            have = p1_red[slot] =
                xc_reduce_local(s, have < 0 ? xc_ref(in, my_off * ds) : XC_AT_RECV(my_off * ds),
                                landing, XC_AT_RECV(my_off * ds), my_cnt * ds, XC_DEPS(got, have));
        }

        /* 2. ring allreduce of slice l across nodes: reduce-scatter (step
         * i sends sub-block node-i-1, receives and combines node-i-2),
         * then allgather (step i sends node-i, receives node-i-1) */
        rs0 = to_next.n;
        for (i = 0; i < M - 1; i++) {
            size_t so = my_off, sc = my_cnt, ro = my_off, rc = my_cnt;
            const xc_ref_t landing =
                XC_AT_TMP(land2 + ((size_t)par * 2 + (size_t)(i % 2)) * sub_max * ds);
            int got;
            sub_block(&so, &sc, M, ((node - i - 1) % M + M) % M);
            sub_block(&ro, &rc, M, ((node - i - 2) % M + 2 * M) % M);
            hlink_add(&to_next, xc_send(s, next, XC_AT_RECV(so * ds), sc * ds,
                                        XC_DEPS(have, hlink_dep(&to_next))));
            got = xc_recv_reduce(s, prev, landing, XC_AT_RECV(ro * ds), XC_AT_RECV(ro * ds),
                                 rc * ds,
                                 XC_DEPS(have, land2_last[par][i % 2], hlink_dep(&from_prev)));
            hlink_add(&from_prev, got);
            land2_last[par][i % 2] = have = got;
        }
        /* sub-block `node` is complete here and nowhere else yet */
        first = have;
        if (a->op == XCOLL_AVG) {
            size_t o = my_off, c = my_cnt;
            sub_block(&o, &c, M, node);
            have = xc_divide_local(s, XC_AT_RECV(o * ds), c * ds, XC_DEPS(have));
        }
        /* the allgather's receives first, so that step 3 waits for them
         * (and for sub-block `node`: from `first` on) but not for the
         * sends to the next node; receive i overwrites what the
         * reduce-scatter's send i read */
        for (i = 0; i < M - 1; i++) {
            size_t ro = my_off, rc = my_cnt;
            sub_block(&ro, &rc, M, ((node - i - 1) % M + M) % M);
            hlink_add(&from_prev, xc_recv(s, prev, XC_AT_RECV(ro * ds), rc * ds,
                                          XC_DEPS(to_next.id[rs0 + i], hlink_dep(&from_prev))));
        }
        done = xc_join(s, first);
        for (i = 0; i < M - 1; i++) {
            size_t so = my_off, sc = my_cnt;
            sub_block(&so, &sc, M, ((node - i) % M + M) % M);
            /* send i > 0 forwards what receive i - 1 brought */
            hlink_add(&to_next, xc_send(s, next, XC_AT_RECV(so * ds), sc * ds,
                                        XC_DEPS(i == 0 ? have : from_prev.id[from_prev.n - M + i],
                                                hlink_dep(&to_next))));
        }

        /* 3. allgather inside the node: slice l to every peer, slice i from
         * local rank i (in place, after this rank's step-1 send read it) */
        for (k = 1; k < K; k++) {
            const int ip = (l + k) % K;
            hlink_add(&out_l[ip], xc_send(s, mem[ip], XC_AT_RECV(my_off * ds), my_cnt * ds,
                                          XC_DEPS(done, hlink_dep(&out_l[ip]))));
        }
        for (k = 1; k < K; k++) {
            const int ip = (l + K - k) % K;
            size_t off = goff, cnt = gcnt;
            sub_block(&off, &cnt, K, ip);
            hlink_add(&in_l[ip], xc_recv(s, mem[ip], XC_AT_RECV(off * ds), cnt * ds,
                                         XC_DEPS(a->in_place ? p1_sent[ip] : -1,
                                                 hlink_dep(&in_l[ip]))));
        }
    }
out:
    free(col);
    free(out_l);
    free(in_l);
    free(ids);
    return s->err;
}
