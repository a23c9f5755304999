/* Every algorithm xcoll has, and the choice of one for a call: the
 * communicator's selection table (tune.c) names the candidates for the
 * call's collective, rank count and message size; the first candidate
 * whose builder accepts the call wins, then the collective's remaining
 * algorithms in table order. Also the introspection calls behind
 * xcoll-info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

#include "coll.h"
#include "../core/gpu.h"
#include "tune.h"
#include "../core/dtype.h"
#include "../core/log.h"

/* Order within a collective matters: it is the fallback order once a
 * rule's own candidates have declined, so the algorithms that serve any
 * case come early. */
const xc_algo_t xc_algorithms[] = {
    {"recdbl", XC_COLL_ALLREDUCE, recdbl_allreduce_schedule},
    {"rabenseifner", XC_COLL_ALLREDUCE, rabenseifner_allreduce_schedule},
    {"ring", XC_COLL_ALLREDUCE, ring_allreduce_schedule},
    {"reduce_bcast", XC_COLL_ALLREDUCE, reduce_bcast_allreduce_schedule},
    {"dbtree", XC_COLL_ALLREDUCE, dbtree_allreduce_schedule},
    {"hier", XC_COLL_ALLREDUCE, hier_allreduce_schedule},
    {"hier2d", XC_COLL_ALLREDUCE, hier2d_allreduce_schedule},
    {"direct", XC_COLL_ALLREDUCE, direct_allreduce_schedule},

    {"binomial", XC_COLL_BCAST, binomial_bcast_schedule},
    {"chain", XC_COLL_BCAST, chain_bcast_schedule},
    {"scatter_allgather", XC_COLL_BCAST, scatter_allgather_bcast_schedule},
    {"dbtree", XC_COLL_BCAST, dbtree_bcast_schedule},
    {"hier", XC_COLL_BCAST, hier_bcast_schedule},
    {"linear", XC_COLL_BCAST, linear_bcast_schedule},

    {"binomial", XC_COLL_REDUCE, binomial_reduce_schedule},
    {"rsg", XC_COLL_REDUCE, rsg_reduce_schedule},
    {"linear", XC_COLL_REDUCE, linear_reduce_schedule},

    {"ring", XC_COLL_ALLGATHER, ring_allgather_schedule},
    {"recdbl", XC_COLL_ALLGATHER, recdbl_allgather_schedule},
    {"bruck", XC_COLL_ALLGATHER, bruck_allgather_schedule},
    {"direct", XC_COLL_ALLGATHER, direct_allgather_schedule},

    {"ring", XC_COLL_REDUCE_SCATTER, ring_reduce_scatter_schedule},
    {"rechalving", XC_COLL_REDUCE_SCATTER, rechalving_reduce_scatter_schedule},
    {"direct", XC_COLL_REDUCE_SCATTER, direct_reduce_scatter_schedule},

    {"pairwise", XC_COLL_ALLTOALL, pairwise_alltoall_schedule},
    {"bruck", XC_COLL_ALLTOALL, bruck_alltoall_schedule},
    {"hier", XC_COLL_ALLTOALL, hier_alltoall_schedule},

    {"binomial", XC_COLL_GATHER, binomial_gather_schedule},
    {"linear", XC_COLL_GATHER, linear_gather_schedule},

    {"binomial", XC_COLL_SCATTER, binomial_scatter_schedule},
    {"linear", XC_COLL_SCATTER, linear_scatter_schedule},

    {"dissemination", XC_COLL_BARRIER, dissemination_barrier_schedule},
    {"tree", XC_COLL_BARRIER, tree_barrier_schedule},
    {"direct", XC_COLL_BARRIER, direct_barrier_schedule},

    {"ring", XC_COLL_ALLGATHERV, ring_allgatherv_schedule},
    {"recdbl", XC_COLL_ALLGATHERV, recdbl_allgatherv_schedule},
    {"direct", XC_COLL_ALLGATHERV, direct_allgatherv_schedule},

    {"pairwise", XC_COLL_ALLTOALLV, pairwise_alltoallv_schedule},
    {"scattered", XC_COLL_ALLTOALLV, scattered_alltoallv_schedule},

    {"linear", XC_COLL_GATHERV, linear_gatherv_schedule},

    {"linear", XC_COLL_SCATTERV, linear_scatterv_schedule},
};
const size_t xc_num_algorithms = sizeof(xc_algorithms) / sizeof(xc_algorithms[0]);

const xc_algo_t xc_algo_mpi = {"mpi", XC_COLL_COUNT, NULL};

const char *xc_coll_name(xc_coll_t coll)
{
    static const char *names[XC_COLL_COUNT] = {
        "allreduce", "bcast",      "reduce",    "allgather", "reduce_scatter", "alltoall",
        "gather",    "scatter",    "barrier",   "allgatherv", "alltoallv",     "gatherv",
        "scatterv"};
    return (unsigned)coll < XC_COLL_COUNT ? names[coll] : "invalid";
}

const xc_algo_t *xc_algo_find(xc_coll_t coll, const char *name)
{
    size_t i;
    if (strcmp(name, xc_algo_mpi.name) == 0 && (unsigned)coll < XC_COLL_COUNT)
        return &xc_algo_mpi;
    for (i = 0; i < xc_num_algorithms; i++)
        if (xc_algorithms[i].coll == coll && strcmp(xc_algorithms[i].name, name) == 0)
            return &xc_algorithms[i];
    return NULL;
}

/* One attempt: XCOLL_OK with *s built, XCOLL_ERR_UNSUPPORTED when the
 * builder declines (s is then clean), or a real error. */
static xcoll_status_t try_build(xc_sched_t *s, const xc_coll_args_t *a, const xc_algo_t *al)
{
    xcoll_status_t rc = xc_sched_init(s, a->rank, a->size, a->dtype, a->op);
    if (rc != XCOLL_OK)
        return rc;
    s->algo = al->name;
    if (a->stamp != NULL) {
        /* every step the builder adds waits for the verdict */
        memcpy(s->stamp, a->stamp, XC_STAMP_BYTES);
        s->after = xc_sched_add_check(s);
    }
    rc = s->err != XCOLL_OK ? s->err : al->build(s, a);
    s->after = -1;
    if (rc == XCOLL_OK) {
        xc_debug("%s: built a %s schedule of %u steps for count %zu", xc_coll_name(a->coll),
                 al->name, s->nsteps, a->count);
        if (xc_log_level >= XC_LOG_TRACE)
            xc_sched_print(s, stderr);
        return XCOLL_OK;
    }
    xc_sched_fini(s);
    if (rc == XCOLL_ERR_UNSUPPORTED)
        xc_debug("%s: %s declined count %zu on %d ranks", xc_coll_name(a->coll), al->name,
                 a->count, a->size);
    return rc;
}

/* The rule that covers a call, as logs and errors name it. */
static void rule_describe(const xc_tune_t *tune, const xc_tune_rule_t *rule, char *buf,
                          size_t len)
{
    char region[96];
    if (rule == NULL) {
        snprintf(buf, len, "no rule covers it");
        return;
    }
    xc_tune_rule_region(rule, region, sizeof(region));
    snprintf(buf, len, "rule %s from %s", region, tune->sources[rule->source]);
}

xcoll_status_t xc_select_and_build(xc_sched_t *s, const xc_coll_args_t *a, const xc_tune_t *tune,
                                   char *why, size_t whylen)
{
    const xc_tune_rule_t *rule;
    char declined[256], rule_text[160];
    size_t i, nd = 0;
    unsigned char tried[sizeof(xc_algorithms) / sizeof(xc_algorithms[0])];
    xcoll_status_t rc;
    int c;

    memset(s, 0, sizeof(*s));
    if (tune == NULL)
        tune = xc_tune_builtin();
    rule = xc_tune_match(tune, a->coll, a->size, xc_tune_per_node(a), xc_tune_message_bytes(a));
    memset(tried, 0, sizeof(tried));
    declined[0] = '\0';
    /* formatting costs a fifth of a v-variant's schedule build: only for
     * a caller that keeps it (the happy path below) */
    if (why != NULL)
        rule_describe(tune, rule, rule_text, sizeof(rule_text));

    for (c = 0; rule != NULL && c < rule->ncandidates; c++) {
        const xc_algo_t *al = rule->candidates[c];
        size_t idx;
        if (al == &xc_algo_mpi) {
            if (a->fallback) {
                if (why != NULL)
                    snprintf(why, whylen, "%s%s%s", rule_text, nd ? "; declined: " : "",
                             declined);
                return XCOLL_DECLINED;
            }
            continue; /* no one to hand it to: the next candidate */
        }
        idx = (size_t)(al - xc_algorithms);
        if (tried[idx])
            continue;
        tried[idx] = 1;
        rc = try_build(s, a, al);
        if (rc == XCOLL_OK) {
            if (why != NULL)
                snprintf(why, whylen, "%s%s%s", rule_text, nd ? "; declined: " : "", declined);
            return XCOLL_OK;
        }
        if (rc != XCOLL_ERR_UNSUPPORTED)
            return rc;
        nd += (size_t)snprintf(declined + nd, nd < sizeof(declined) ? sizeof(declined) - nd : 0,
                               "%s%s", nd ? ", " : "", al->name);
        if (nd >= sizeof(declined))
            nd = sizeof(declined) - 1;
    }

    /* The rule's candidates all declined (or there was no rule): the
     * collective's other algorithms, in table order, so a call is served
     * whenever any algorithm can serve it. */
    if (why == NULL)
        rule_describe(tune, rule, rule_text, sizeof(rule_text));
    for (i = 0; i < xc_num_algorithms; i++) {
        const xc_algo_t *al = &xc_algorithms[i];
        if (al->coll != a->coll || tried[i])
            continue;
        tried[i] = 1;
        rc = try_build(s, a, al);
        if (rc == XCOLL_OK) {
            if (why != NULL)
                snprintf(why, whylen, "%s; %s%s%sfallback in table order", rule_text,
                         nd ? "declined: " : "", declined, nd ? "; " : "");
            xc_info("%s, count %zu on %d ranks: %s%s%s, so %s (next in table order)",
                    xc_coll_name(a->coll), a->count, a->size, rule_text,
                    nd ? "; declined: " : "", declined, al->name);
            return XCOLL_OK;
        }
        if (rc != XCOLL_ERR_UNSUPPORTED)
            return rc;
        nd += (size_t)snprintf(declined + nd, nd < sizeof(declined) ? sizeof(declined) - nd : 0,
                               "%s%s", nd ? ", " : "", al->name);
        if (nd >= sizeof(declined))
            nd = sizeof(declined) - 1;
    }
    if (a->fallback) {
        /* the caller can still serve it: better than failing a legal call */
        if (why != NULL)
            snprintf(why, whylen, "%s; no algorithm accepts it (declined: %s)", rule_text,
                     declined);
        return XCOLL_DECLINED;
    }
    xc_error("%s: no algorithm accepts count %zu of %s on %d ranks (%s; declined: %s)",
             xc_coll_name(a->coll), a->count, xcoll_dtype_name(a->dtype), a->size, rule_text,
             declined);
    return XCOLL_ERR_UNSUPPORTED;
}

/* ------------------------------------------------------------ introspection */

const char *xcoll_collective_name(int coll)
{
    return coll >= 0 && coll < XC_COLL_COUNT ? xc_coll_name((xc_coll_t)coll) : NULL;
}

const char *xcoll_algorithm_name(int coll, int index)
{
    size_t i;
    int seen = 0;
    if (coll < 0 || coll >= XC_COLL_COUNT || index < 0)
        return NULL;
    for (i = 0; i < xc_num_algorithms; i++)
        if ((int)xc_algorithms[i].coll == coll && seen++ == index)
            return xc_algorithms[i].name;
    return NULL;
}

xcoll_status_t xcoll_tune_table(int nranks, char *buf, size_t len, size_t *needed)
{
    xc_tune_t *t;
    xcoll_status_t rc;
    size_t n;
    xc_log_init();
    if ((buf == NULL && len > 0) || nranks < 0) {
        xc_error("xcoll_tune_table: %s", nranks < 0 ? "nranks is negative"
                                                    : "buf is NULL with a non-zero length");
        return XCOLL_ERR_INVALID_ARG;
    }
    rc = xc_tune_load(&t, NULL, NULL, buf, len);
    if (rc != XCOLL_OK) {
        if (needed != NULL)
            *needed = buf != NULL ? strlen(buf) + 1 : 0;
        return rc;
    }
    n = xc_tune_write(t, nranks, nranks, buf, len); /* one node */
    xc_tune_free(t);
    if (needed != NULL)
        *needed = n + 1;
    return XCOLL_OK;
}

/* The transports UCX would use here: the "tl/device" names of a context's
 * resources, as ucp_context_print_info lists them. Empty when that cannot
 * be read (the text format belongs to UCX and may change). */
static void ucx_transports(char *buf, size_t len)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucp_context_h ctx;
    char *text = NULL, *line, *save = NULL;
    size_t tlen = 0, n = 0;
    FILE *f;

    buf[0] = '\0';
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    if (ucp_config_read(NULL, NULL, &config) != UCS_OK)
        return;
    if (ucp_init(&params, config, &ctx) != UCS_OK) {
        ucp_config_release(config);
        return;
    }
    ucp_config_release(config);
    f = open_memstream(&text, &tlen);
    if (f != NULL) {
        ucp_context_print_info(ctx, f);
        fclose(f);
    }
    ucp_cleanup(ctx);
    if (text == NULL)
        return;
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *tl = strstr(line, "-- ");
        if (strstr(line, "resource") == NULL || tl == NULL || n >= len)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", tl + 3);
    }
    free(text);
}

/* Sorts the "tl/device" list into what can reach another node (network
 * transports on a real device: not the loopback) and what serves ranks of
 * this node (shared memory, cross-memory attach). Which of them a given
 * peer gets is UCX's choice at connect time; the info log names it. */
static void split_transports(const char *tls, char *net, char *local, size_t len)
{
    static const char *const memory_tls[] = {"sysv", "posix", "cma", "xpmem", "knem", "cuda_ipc"};
    char copy[512], *item, *save = NULL;
    size_t nn = 0, nl = 0, i;

    net[0] = local[0] = '\0';
    snprintf(copy, sizeof(copy), "%s", tls);
    for (item = strtok_r(copy, ", ", &save); item != NULL; item = strtok_r(NULL, ", ", &save)) {
        size_t tl_len = strcspn(item, "/");
        int memory = 0;
        if (strncmp(item, "self", tl_len) == 0 || strcmp(item + tl_len, "/lo") == 0)
            continue;
        for (i = 0; i < sizeof(memory_tls) / sizeof(memory_tls[0]); i++)
            if (strlen(memory_tls[i]) == tl_len && strncmp(item, memory_tls[i], tl_len) == 0)
                memory = 1;
        if (memory && nl < len)
            nl += (size_t)snprintf(local + nl, len - nl, "%s%s", nl ? ", " : "", item);
        else if (!memory && nn < len)
            nn += (size_t)snprintf(net + nn, len - nn, "%s%s", nn ? ", " : "", item);
    }
}

const char *xcoll_build_info(void)
{
    static char info[2048];
    char tls[512], net[512], local[512];
    const char *env_tls = getenv("UCX_TLS");
    if (info[0] != '\0')
        return info;
    ucx_transports(tls, sizeof(tls));
    split_transports(tls, net, local, sizeof(net));
    snprintf(info, sizeof(info),
             "UCX: %s (built against UCP API %d.%d)\n"
             "UCX transports: %s%s%s%s\n"
             "Between nodes: UCX over %s\n"
             "Within a node: xcoll's shared memory (XCOLL_SHM=0: off), else UCX over %s\n"
             "CUDA: %s\n",
             ucp_get_version_string(), UCP_API_MAJOR, UCP_API_MINOR,
             tls[0] ? tls : "(could not be listed)", env_tls ? " (UCX_TLS=" : "",
             env_tls ? env_tls : "", env_tls ? ")" : "",
             net[0] ? net : "nothing: no network transport (UCX_TLS?), one node only",
             local[0] ? local : "its network transports (no shared-memory transport)",
             xc_gpu_describe());
    return info;
}
