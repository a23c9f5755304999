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
