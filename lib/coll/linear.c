/* Linear gather and scatter: the root exchanges one message with every
 * other rank. One step of latency and no forwarding, at the price of the
 * root's link carrying everything; good for small counts or few ranks. */
#include "coll.h"

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
