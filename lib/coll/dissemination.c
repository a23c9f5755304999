/* Dissemination barrier: in round k every rank signals rank + 2^k and waits
 * for rank - 2^k (mod size). After ceil(log2 size) rounds each rank has
 * heard, directly or through others, from every rank, for any size (no
 * power of two needed). Messages carry no data: arrival is the signal. */
#include "coll.h"

xcoll_status_t dissemination_barrier_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const xc_ref_t none = xc_ref(XC_BUF_NONE, 0);
    int d, heard = -1;

    /* d < P, so the peers of different rounds differ */
    for (d = 1; d < P; d <<= 1) {
        /* round k+1's signal carries everything heard up to round k */
        xc_send(s, (r + d) % P, none, 0, XC_DEPS(heard));
        heard = xc_recv(s, (r - d + P) % P, none, 0, XC_DEPS(heard));
    }
    return s->err;
}
