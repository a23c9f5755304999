/* Direct algorithms: every rank sends what a peer needs straight to it, in
 * one step of latency and with no forwarding; P(P-1) messages in all. They
 * pay where latency is everything and sends are cheap: small messages
 * among the ranks of one node, where a send is a write into the peer's
 * ring (lib/shm). The reductions combine the inputs in rank order,
 * x0 op x1 op ... op x(P-1) from the left, so every rank computes its
 * result with the same operations in the same order: bit-identical
 * results on every rank, whatever the datatype.
 *
 * They decline above XC_DIRECT_MAX_RANKS, where P^2 messages and P copies
 * of the data in scratch cost more than the hops they save. */
#include "coll.h"

/* The order of peers: rank + 1 first, so ranks do not all send to rank 0
 * at once. Receives are posted in the matching order (rank - k). */
static int to_peer(int r, int P, int k) { return (r + k) % P; }
static int from_peer(int r, int P, int k) { return (r - k + P) % P; }

int xc_rank_order_inputs(xc_sched_t *s, int P, int me, int in_place, xc_ref_t mine,
                         size_t bytes, xc_ref_t *in, int *got)
{
    /* out of place the own input is read where it is: no slot for it */
    size_t land = xc_sched_tmp(s, (size_t)(in_place ? P : P - 1) * bytes);
    int k;
    for (k = 0; k < P; k++) {
        size_t slot = in_place || k < me ? (size_t)k : (size_t)k - 1;
        in[k] = XC_AT_TMP(land + slot * bytes);
        got[k] = -1;
    }
    if (in_place)
        got[me] = xc_copy(s, mine, in[me], bytes, XC_NODEPS);
    else
        in[me] = mine;
    return got[me];
}

/* dst = in[0] op in[1] op ... op in[P-1] (P >= 2), from the left, each
 * after its got[k]; the first write to dst also after `after`. */
static int reduce_rank_order(xc_sched_t *s, const xc_ref_t *in, const int *got, int P,
                             xc_ref_t dst, size_t bytes, int after)
{
    int i, last = -1;
    for (i = 1; i < P; i++) {
        xc_ref_t acc = i == 1 ? in[0] : dst;
        last = xc_reduce_local(s, acc, in[i], dst, bytes,
                               XC_DEPS(i == 1 ? got[0] : -1, got[i], last, after));
    }
    return last;
}

void xc_receive_and_reduce(xc_sched_t *s, int P, int me, const xc_ref_t *in, int *got,
                           size_t bytes, xc_ref_t dst, int after)
{
    int k, last;
    if (P == 2) {
        /* one input to come: reduced as it arrives, in rank order (a
         * transport that can reads it piece by piece into the reduction,
         * lib/shm; one that cannot lands it in its slot first), instead of
         * landed whole, then read again */
        last = xc_recv_reduce_ordered(s, 1 - me, in[1 - me], in[me], dst, bytes, me == 0,
                                      XC_DEPS(got[me], after));
    } else {
        for (k = 1; k < P; k++) {
            const int from = from_peer(me, P, k);
            got[from] = xc_recv(s, from, in[from], bytes, XC_NODEPS);
        }
        last = reduce_rank_order(s, in, got, P, dst, bytes, after);
    }
    if (s->op == XCOLL_AVG)
        xc_divide_local(s, dst, bytes, XC_DEPS(last));
}

xcoll_status_t xc_one_rank_reduction(xc_sched_t *s, const xc_coll_args_t *a, size_t bytes)
{
    if (!a->in_place)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(0), bytes, XC_NODEPS);
    return s->err; /* AVG over one rank divides by 1 */
}

/* Direct allreduce: every rank sends its whole vector to every other
 * rank and reduces the P vectors itself. Wire: P(P-1) messages of n bytes;
 * scratch (P-1)n (Pn in place); P-1 reductions of n bytes per rank. */
xcoll_status_t direct_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t bytes = a->count * s->dsize;
    xc_ref_t in[XC_DIRECT_MAX_RANKS];
    int got[XC_DIRECT_MAX_RANKS], k, mine;

    if (P > XC_DIRECT_MAX_RANKS)
        return XCOLL_ERR_UNSUPPORTED;
    if (P == 1)
        return xc_one_rank_reduction(s, a, bytes);
    /* in place the input is in RECV, which the first reduction
     * overwrites: it is copied aside and sent from there */
    mine = xc_rank_order_inputs(s, P, r, a->in_place, a->in_place ? XC_AT_RECV(0) : XC_AT_SEND(0),
                                bytes, in, got);
    for (k = 1; k < P; k++)
        xc_send(s, to_peer(r, P, k), in[r], bytes, XC_DEPS(mine));
    xc_receive_and_reduce(s, P, r, in, got, bytes, XC_AT_RECV(0), mine);
    return s->err;
}

/* Direct reduce_scatter: block j goes straight to rank j, which reduces
 * the P copies of its block. Wire: P(P-1) messages of one block. */
xcoll_status_t direct_reduce_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t block = a->count * s->dsize;
    const xc_buf_t src = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    /* in place the result ends in RECV block r (coll.h), which is also
     * this rank's own input: reduce into it only after the inputs land */
    const xc_ref_t dst = a->in_place ? XC_AT_RECV((size_t)r * block) : XC_AT_RECV(0);
    xc_ref_t in[XC_DIRECT_MAX_RANKS];
    int got[XC_DIRECT_MAX_RANKS], k, mine;

    if (P > XC_DIRECT_MAX_RANKS)
        return XCOLL_ERR_UNSUPPORTED;
    if (P == 1)
        return xc_one_rank_reduction(s, a, block);
    mine = xc_rank_order_inputs(s, P, r, a->in_place, xc_ref(src, (size_t)r * block), block,
                                in, got);
    for (k = 1; k < P; k++) {
        const int to = to_peer(r, P, k);
        xc_send(s, to, xc_ref(src, (size_t)to * block), block, XC_NODEPS);
    }
    /* the sends read other blocks of src than the one written; in place
     * the copy aside reads it */
    xc_receive_and_reduce(s, P, r, in, got, block, dst, mine);
    return s->err;
}

/* Direct allgather: every rank sends its block to every other rank,
 * straight into its place in the peer's RECV. Wire: P(P-1) messages of
 * one block, as the ring, in one step instead of P-1. */
xcoll_status_t direct_allgather_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t block = a->count * s->dsize;
    const xc_ref_t mine = a->in_place ? XC_AT_RECV((size_t)r * block) : XC_AT_SEND(0);
    int k;

    if (P > XC_DIRECT_MAX_RANKS)
        return XCOLL_ERR_UNSUPPORTED;
    if (!a->in_place)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV((size_t)r * block), block, XC_NODEPS);
    for (k = 1; k < P; k++)
        xc_send(s, to_peer(r, P, k), mine, block, XC_NODEPS);
    for (k = 1; k < P; k++) {
        const int from = from_peer(r, P, k);
        xc_recv(s, from, XC_AT_RECV((size_t)from * block), block, XC_NODEPS);
    }
    return s->err;
}

/* Direct barrier: every rank signals every other rank and waits for all
 * of them; P(P-1) empty messages, one step. */
xcoll_status_t direct_barrier_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const xc_ref_t none = xc_ref(XC_BUF_NONE, 0);
    int k;

    if (P > XC_DIRECT_MAX_RANKS)
        return XCOLL_ERR_UNSUPPORTED;
    for (k = 1; k < P; k++)
        xc_send(s, to_peer(r, P, k), none, 0, XC_NODEPS);
    for (k = 1; k < P; k++)
        xc_recv(s, from_peer(r, P, k), none, 0, XC_NODEPS);
    return s->err;
}

/* Direct allgatherv: the allgather above with blocks of their own sizes
 * (rcounts, at rdispls in RECV); an empty block is not sent, and every
 * rank knows which are. */
xcoll_status_t direct_allgatherv_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t ds = s->dsize, mine_bytes = a->rcounts[r] * ds;
    const xc_ref_t mine = a->in_place ? XC_AT_RECV(a->rdispls[r] * ds) : XC_AT_SEND(0);
    int k;

    if (P > XC_DIRECT_MAX_RANKS)
        return XCOLL_ERR_UNSUPPORTED;
    if (!a->in_place && mine_bytes > 0)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(a->rdispls[r] * ds), mine_bytes, XC_NODEPS);
    for (k = 1; k < P && mine_bytes > 0; k++)
        xc_send(s, to_peer(r, P, k), mine, mine_bytes, XC_NODEPS);
    for (k = 1; k < P; k++) {
        const int from = from_peer(r, P, k);
        if (a->rcounts[from] > 0)
            xc_recv(s, from, XC_AT_RECV(a->rdispls[from] * ds), a->rcounts[from] * ds,
                    XC_NODEPS);
    }
    return s->err;
}
