/* Every algorithm xcoll has, and the choice of one for a call. For now
 * each collective has a fixed order of candidates; the first that accepts
 * the call builds its schedule. */
#include <stdio.h>
#include <string.h>

#include "coll.h"
#include "../core/dtype.h"
#include "../core/log.h"

const xc_algo_t xc_algorithms[] = {
    {"ring", XC_COLL_ALLREDUCE, ring_allreduce_schedule},
    {"binomial", XC_COLL_BCAST, binomial_bcast_schedule},
    {"binomial", XC_COLL_REDUCE, binomial_reduce_schedule},
    {"ring", XC_COLL_ALLGATHER, ring_allgather_schedule},
    {"ring", XC_COLL_REDUCE_SCATTER, ring_reduce_scatter_schedule},
    {"pairwise", XC_COLL_ALLTOALL, pairwise_alltoall_schedule},
    {"binomial", XC_COLL_GATHER, binomial_gather_schedule},
    {"linear", XC_COLL_GATHER, linear_gather_schedule},
    {"binomial", XC_COLL_SCATTER, binomial_scatter_schedule},
    {"linear", XC_COLL_SCATTER, linear_scatter_schedule},
    {"dissemination", XC_COLL_BARRIER, dissemination_barrier_schedule},
};
const size_t xc_num_algorithms = sizeof(xc_algorithms) / sizeof(xc_algorithms[0]);

const char *xc_coll_name(xc_coll_t coll)
{
    static const char *names[XC_COLL_COUNT] = {"allreduce", "bcast",   "reduce",
                                               "allgather", "reduce_scatter", "alltoall",
                                               "gather",    "scatter", "barrier"};
    return (unsigned)coll < XC_COLL_COUNT ? names[coll] : "invalid";
}

const xc_algo_t *xc_algo_find(xc_coll_t coll, const char *name)
{
    size_t i;
    for (i = 0; i < xc_num_algorithms; i++)
        if (xc_algorithms[i].coll == coll && strcmp(xc_algorithms[i].name, name) == 0)
            return &xc_algorithms[i];
    return NULL;
}

xcoll_status_t xc_select_and_build(xc_sched_t *s, const xc_coll_args_t *a)
{
    size_t i;
    xcoll_status_t rc;
    for (i = 0; i < xc_num_algorithms; i++) {
        const xc_algo_t *al = &xc_algorithms[i];
        if (al->coll != a->coll)
            continue;
        rc = xc_sched_init(s, a->rank, a->size, a->dtype, a->op);
        if (rc != XCOLL_OK)
            return rc;
        s->algo = al->name;
        rc = al->build(s, a);
        if (rc == XCOLL_OK) {
            xc_debug("%s: built a %s schedule of %u steps for count %zu", xc_coll_name(a->coll),
                     al->name, s->nsteps, a->count);
            if (xc_log_level >= XC_LOG_TRACE)
                xc_sched_print(s, stderr);
            return XCOLL_OK;
        }
        xc_sched_fini(s);
        if (rc != XCOLL_ERR_UNSUPPORTED)
            return rc;
        xc_debug("%s: %s declined count %zu on %d ranks", xc_coll_name(a->coll), al->name,
                 a->count, a->size);
    }
    xc_error("%s: no algorithm accepts count %zu on %d ranks", xc_coll_name(a->coll), a->count,
             a->size);
    return XCOLL_ERR_UNSUPPORTED;
}
