/* Linear bcast, reduce, gather and scatter, and gatherv and scatterv: the
 * root exchanges one message with every other rank. One step of latency
 * and no forwarding, at the price of the root's link carrying everything;
 * good for small counts or few ranks, and the only shape for the
 * v-variants, where no rank but the root knows the other ranks' counts. */
#include "coll.h"

/* The root sends the whole buffer to every other rank. */
xcoll_status_t linear_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t bytes = a->count * s->dsize;
    int k;

    if (a->rank != a->root) {
        xc_recv(s, a->root, XC_AT_RECV(0), bytes, XC_NODEPS);
        return s->err;
    }
    for (k = 1; k < a->size; k++)
        xc_send(s, (a->root + k) % a->size, XC_AT_RECV(0), bytes, XC_NODEPS);
    return s->err;
}

/* Every other rank sends its vector to the root, which combines the P
 * inputs in rank order (x0 op x1 op ... from the left), as the direct
 * allreduce does. Scratch on the root: P-1 vectors (P in place). Declines
 * above XC_DIRECT_MAX_RANKS ranks. */
xcoll_status_t linear_reduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, root = a->root;
    const size_t bytes = a->count * s->dsize;
    xc_ref_t in[XC_DIRECT_MAX_RANKS];
    int got[XC_DIRECT_MAX_RANKS], mine;

    if (P > XC_DIRECT_MAX_RANKS)
        return XCOLL_ERR_UNSUPPORTED;
    if (a->rank != root) {
        xc_send(s, root, XC_AT_SEND(0), bytes, XC_NODEPS);
        return s->err;
    }
    if (P == 1)
        return xc_one_rank_reduction(s, a, bytes);
    /* in place the input is in RECV, which the first reduction overwrites */
    mine = xc_rank_order_inputs(s, P, root, a->in_place,
                                a->in_place ? XC_AT_RECV(0) : XC_AT_SEND(0), bytes, in, got);
    xc_receive_and_reduce(s, P, root, in, got, bytes, XC_AT_RECV(0), mine);
    return s->err;
}

xcoll_status_t linear_gather_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t block = a->count * s->dsize;
    int k;

    if (a->rank != a->root) {
        xc_send(s, a->root, XC_AT_SEND(0), block, XC_NODEPS);
        return s->err;
    }
    if (!a->in_place)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV((size_t)a->root * block), block, XC_NODEPS);
    /* starting after the root spreads the order over ranks like the ring */
    for (k = 1; k < a->size; k++) {
        int peer = (a->root + k) % a->size;
        xc_recv(s, peer, XC_AT_RECV((size_t)peer * block), block, XC_NODEPS);
    }
    return s->err;
}

xcoll_status_t linear_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t block = a->count * s->dsize;
    int k;

    if (a->rank != a->root) {
        xc_recv(s, a->root, XC_AT_RECV(0), block, XC_NODEPS);
        return s->err;
    }
    /* In place the root's block stays in SEND and RECV is unused. */
    if (!a->in_place)
        xc_copy(s, XC_AT_SEND((size_t)a->root * block), XC_AT_RECV(0), block, XC_NODEPS);
    for (k = 1; k < a->size; k++) {
        int peer = (a->root + k) % a->size;
        xc_send(s, peer, XC_AT_SEND((size_t)peer * block), block, XC_NODEPS);
    }
    return s->err;
}

/* Gatherv: block k is rcounts[k] elements at rdispls[k] in the root's
 * RECV; ranks with an empty block send nothing (the root knows it is
 * empty). */
xcoll_status_t linear_gatherv_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t ds = s->dsize;
    const int root = a->root;
    int k;

    if (a->rank != root) {
        if (a->count > 0)
            xc_send(s, root, XC_AT_SEND(0), a->count * ds, XC_NODEPS);
        return s->err;
    }
    if (!a->in_place && a->rcounts[root] > 0)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(a->rdispls[root] * ds), a->rcounts[root] * ds,
                XC_NODEPS);
    for (k = 1; k < a->size; k++) {
        const int peer = (root + k) % a->size;
        if (a->rcounts[peer] > 0)
            xc_recv(s, peer, XC_AT_RECV(a->rdispls[peer] * ds), a->rcounts[peer] * ds,
                    XC_NODEPS);
    }
    return s->err;
}

/* Scatterv: block k of the root's SEND (scounts[k] elements at
 * sdispls[k]) goes to rank k; empty blocks are not sent. */
xcoll_status_t linear_scatterv_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t ds = s->dsize;
    const int root = a->root;
    int k;

    if (a->rank != root) {
        if (a->count > 0)
            xc_recv(s, root, XC_AT_RECV(0), a->count * ds, XC_NODEPS);
        return s->err;
    }
    if (!a->in_place && a->scounts[root] > 0)
        xc_copy(s, XC_AT_SEND(a->sdispls[root] * ds), XC_AT_RECV(0), a->scounts[root] * ds,
                XC_NODEPS);
    for (k = 1; k < a->size; k++) {
        const int peer = (root + k) % a->size;
        if (a->scounts[peer] > 0)
            xc_send(s, peer, XC_AT_SEND(a->sdispls[peer] * ds), a->scounts[peer] * ds,
                    XC_NODEPS);
    }
    return s->err;
}
