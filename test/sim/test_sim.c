/* The simulator: every algorithm's schedules, built for all ranks of a
 * virtual communicator and run by the real engine over the loopback
 * transport in one process, checked exactly against values computed here.
 *
 * Inputs are small integers, so every float sum is exact in any order and
 * a result is either bit-exact or wrong. Besides the results it checks that
 * send buffers are left alone, that nothing is left unmatched, and the
 * bytes on the wire against each algorithm's formula.
 *
 * Usage: test_sim [-v] [-q] [--gpu | --layout] [algorithm]
 *   -v: print every case; -q: a quicker subset; algorithm (e.g.
 *   ring_allreduce): only that one, without the pipelined cases.
 *   --gpu: buffers in emulated device memory; --layout: buffers the engine
 *   reaches only through xcoll_layout_t pack/unpack (scrambled memory).
 * Prints "test_sim: N passed, M failed"; exits 1 on any failure. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "dtype.h"
#include "emulated_gpu.h"
#include "engine.h"
#include "log.h"
#include "loopback.h"
#include "coll/model.h"
#include "topo.h"
#include <time.h>

typedef struct {
    const char *name;
    xc_coll_t coll;
    xc_build_fn build;
} algo_t;

static const algo_t algos[] = {
    {"ring_allreduce", XC_COLL_ALLREDUCE, ring_allreduce_schedule},
    {"ring_allgather", XC_COLL_ALLGATHER, ring_allgather_schedule},
    {"ring_reduce_scatter", XC_COLL_REDUCE_SCATTER, ring_reduce_scatter_schedule},
    {"binomial_bcast", XC_COLL_BCAST, binomial_bcast_schedule},
    {"binomial_reduce", XC_COLL_REDUCE, binomial_reduce_schedule},
    {"binomial_gather", XC_COLL_GATHER, binomial_gather_schedule},
    {"binomial_scatter", XC_COLL_SCATTER, binomial_scatter_schedule},
    {"linear_gather", XC_COLL_GATHER, linear_gather_schedule},
    {"linear_scatter", XC_COLL_SCATTER, linear_scatter_schedule},
    {"pairwise_alltoall", XC_COLL_ALLTOALL, pairwise_alltoall_schedule},
    {"dissemination_barrier", XC_COLL_BARRIER, dissemination_barrier_schedule},
    {"recdbl_allreduce", XC_COLL_ALLREDUCE, recdbl_allreduce_schedule},
    {"rabenseifner_allreduce", XC_COLL_ALLREDUCE, rabenseifner_allreduce_schedule},
    {"recdbl_allgather", XC_COLL_ALLGATHER, recdbl_allgather_schedule},
    {"rechalving_reduce_scatter", XC_COLL_REDUCE_SCATTER, rechalving_reduce_scatter_schedule},
    {"bruck_allgather", XC_COLL_ALLGATHER, bruck_allgather_schedule},
    {"bruck_alltoall", XC_COLL_ALLTOALL, bruck_alltoall_schedule},
    {"reduce_bcast_allreduce", XC_COLL_ALLREDUCE, reduce_bcast_allreduce_schedule},
    {"dbtree_allreduce", XC_COLL_ALLREDUCE, dbtree_allreduce_schedule},
    {"hier_allreduce", XC_COLL_ALLREDUCE, hier_allreduce_schedule},
    {"hier_2d_allreduce", XC_COLL_ALLREDUCE, hier2d_allreduce_schedule},
    {"chain_bcast", XC_COLL_BCAST, chain_bcast_schedule},
    {"scatter_allgather_bcast", XC_COLL_BCAST, scatter_allgather_bcast_schedule},
    {"dbtree_bcast", XC_COLL_BCAST, dbtree_bcast_schedule},
    {"hier_bcast", XC_COLL_BCAST, hier_bcast_schedule},
    {"rsg_reduce", XC_COLL_REDUCE, rsg_reduce_schedule},
    {"hier_alltoall", XC_COLL_ALLTOALL, hier_alltoall_schedule},
    {"tree_barrier", XC_COLL_BARRIER, tree_barrier_schedule},
    {"direct_allreduce", XC_COLL_ALLREDUCE, direct_allreduce_schedule},
    {"direct_reduce_scatter", XC_COLL_REDUCE_SCATTER, direct_reduce_scatter_schedule},
    {"direct_allgather", XC_COLL_ALLGATHER, direct_allgather_schedule},
    {"direct_barrier", XC_COLL_BARRIER, direct_barrier_schedule},
    {"linear_bcast", XC_COLL_BCAST, linear_bcast_schedule},
    {"linear_reduce", XC_COLL_REDUCE, linear_reduce_schedule},
};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

typedef struct {
    const algo_t *algo;
    int size;
    size_t count;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    int root;
    int in_place;
    int eager;
    int immediate; /* deliver at match time, not after a random delay */
    int land_reduce; /* the transport reduces as messages land */
    int topo;      /* hier: nodes of topo consecutive ranks (> 0), ranks dealt
                      round robin over -topo nodes (< 0); 0: no topology */
} case_t;

static unsigned long n_passed, n_failed;
static struct xc_topo *case_topo; /* the running case's, for its builders */
static int verbose;
/* --gpu: 1 = buffers in emulated device memory, staged through pinned
 * blocks; 2 = the transport takes device memory itself. */
static int gpu_mode;
/* --layout: every send and receive buffer is given to the engine as an
 * xcoll_layout_t over scrambled memory, never by address. */
static int layout_mode;
static uint32_t seq;

/* --- values ------------------------------------------------------------ */

static int is_reduction(xc_coll_t c)
{
    return c == XC_COLL_ALLREDUCE || c == XC_COLL_REDUCE || c == XC_COLL_REDUCE_SCATTER;
}

static int is_rooted(xc_coll_t c)
{
    return c == XC_COLL_BCAST || c == XC_COLL_REDUCE || c == XC_COLL_GATHER ||
           c == XC_COLL_SCATTER;
}

static int is_float(xcoll_dtype_t dt)
{
    return dt == XCOLL_FLOAT16 || dt == XCOLL_BFLOAT16 || dt == XCOLL_FLOAT32 ||
           dt == XCOLL_FLOAT64;
}

static int is_unsigned(xcoll_dtype_t dt)
{
    return dt == XCOLL_UINT8 || dt == XCOLL_UINT32 || dt == XCOLL_UINT64;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* Element i of rank's input. Reductions get small values so any order of
 * summation over 64 ranks is exact (bfloat16 has 8 significant bits,
 * float16 11); data movement gets values that differ between neighbours. */
static int64_t input_value(const case_t *c, int rank, size_t i)
{
    uint64_t h = mix(((uint64_t)rank << 40) ^ (uint64_t)i ^ ((uint64_t)c->op << 56));
    int64_t range;
    if (!is_reduction(c->algo->coll)) {
        uint64_t m = xcoll_dtype_size(c->dtype) == 1 ? 256
                     : c->dtype == XCOLL_FLOAT16 || c->dtype == XCOLL_BFLOAT16 ? 256
                                                                              : 1u << 20;
        return (int64_t)(((uint64_t)rank * 7919u + i * 31u) % m);
    }
    if (c->op == XCOLL_BXOR || c->op == XCOLL_BAND || c->op == XCOLL_BOR) {
        unsigned bits = (unsigned)xcoll_dtype_size(c->dtype) * 8 - 1;
        return (int64_t)(h & ((bits >= 63 ? 0 : (uint64_t)1 << bits) - 1));
    }
    range = c->dtype == XCOLL_BFLOAT16 ? 3 : c->dtype == XCOLL_FLOAT16 ? 15 : 100;
    if (xcoll_dtype_size(c->dtype) == 1)
        range = 1; /* 64 ranks of int8 must not overflow */
    if (is_unsigned(c->dtype))
        return (int64_t)(h % (uint64_t)(range + 1));
    return (int64_t)(h % (uint64_t)(2 * range + 1)) - range;
}

static void store(xcoll_dtype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case XCOLL_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case XCOLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case XCOLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case XCOLL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case XCOLL_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case XCOLL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    /* double -> float -> half rounds like the engine's float arithmetic:
     * for a quotient of exact values both roundings give the same result */
    case XCOLL_FLOAT16: ((uint16_t *)buf)[i] = xc_float_to_half((float)v); break;
    case XCOLL_BFLOAT16: ((uint16_t *)buf)[i] = xc_float_to_bf16((float)v); break;
    case XCOLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case XCOLL_FLOAT64: ((double *)buf)[i] = v; break;
    default: break;
    }
}

/* Integer values that do not fit a double exactly (bxor on 64 bits). */
static void store_int(xcoll_dtype_t dt, void *buf, size_t i, int64_t v)
{
    if (dt == XCOLL_INT64 || dt == XCOLL_UINT64)
        memcpy((char *)buf + i * 8, &v, 8);
    else
        store(dt, buf, i, (double)v);
}

static double load(xcoll_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case XCOLL_INT8: return ((const int8_t *)buf)[i];
    case XCOLL_UINT8: return ((const uint8_t *)buf)[i];
    case XCOLL_INT32: return ((const int32_t *)buf)[i];
    case XCOLL_UINT32: return ((const uint32_t *)buf)[i];
    case XCOLL_INT64: return (double)((const int64_t *)buf)[i];
    case XCOLL_UINT64: return (double)((const uint64_t *)buf)[i];
    case XCOLL_FLOAT16: return xc_half_to_float(((const uint16_t *)buf)[i]);
    case XCOLL_BFLOAT16: return xc_bf16_to_float(((const uint16_t *)buf)[i]);
    case XCOLL_FLOAT32: return ((const float *)buf)[i];
    case XCOLL_FLOAT64: return ((const double *)buf)[i];
    default: return 0;
    }
}

/* Element i of buf as an integer: inputs are integers in every dtype. */
static int64_t load_int(xcoll_dtype_t dt, const void *buf, size_t i)
{
    int64_t v;
    if (dt == XCOLL_INT64 || dt == XCOLL_UINT64) {
        memcpy(&v, (const char *)buf + i * 8, 8);
        return v;
    }
    return (int64_t)load(dt, buf, i);
}

/* out[i] = op over ranks of inputs[rank][i], i < n, in the dtype. */
static void compute_reduced(const case_t *c, void *const *inputs, size_t n, void *out)
{
    int64_t *acc = malloc((n ? n : 1) * sizeof(int64_t));
    size_t i;
    int q;
    if (acc == NULL) {
        fprintf(stderr, "test_sim: out of memory\n");
        exit(2);
    }
    for (i = 0; i < n; i++)
        acc[i] = load_int(c->dtype, inputs[0], i);
    for (q = 1; q < c->size; q++) {
        for (i = 0; i < n; i++) {
            int64_t v = load_int(c->dtype, inputs[q], i);
            switch (c->op) {
            case XCOLL_SUM:
            case XCOLL_AVG: acc[i] += v; break;
            case XCOLL_MAX: acc[i] = v > acc[i] ? v : acc[i]; break;
            case XCOLL_MIN: acc[i] = v < acc[i] ? v : acc[i]; break;
            case XCOLL_BXOR: acc[i] ^= v; break;
            case XCOLL_BAND: acc[i] &= v; break;
            case XCOLL_BOR: acc[i] |= v; break;
            case XCOLL_PROD: acc[i] *= v; break;
            default: break;
            }
        }
    }
    for (i = 0; i < n; i++) {
        if (c->op != XCOLL_AVG)
            store_int(c->dtype, out, i, acc[i]);
        else if (is_float(c->dtype))
            store(c->dtype, out, i, (double)acc[i] / c->size);
        else
            store_int(c->dtype, out, i, acc[i] / c->size); /* truncates, as xc_divide */
    }
    free(acc);
}

/* Elements of one rank's input. */
static size_t input_len_of(xc_coll_t coll, int size, size_t count)
{
    switch (coll) {
    case XC_COLL_REDUCE_SCATTER:
    case XC_COLL_ALLTOALL:
    case XC_COLL_SCATTER: return (size_t)size * count;
    case XC_COLL_BARRIER: return 0;
    default: return count;
    }
}

static size_t input_len(const case_t *c)
{
    return input_len_of(c->algo->coll, c->size, c->count);
}

static void make_input(const case_t *c, int rank, void *buf)
{
    size_t i, n = input_len(c);
    for (i = 0; i < n; i++)
        store_int(c->dtype, buf, i, input_value(c, rank, i));
}

/* --- running ----------------------------------------------------------- */

static void report(const case_t *c, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#include <stdarg.h>
static void report(const case_t *c, int ok, const char *fmt, ...)
{
    va_list ap;
    if (ok)
        n_passed++;
    else
        n_failed++;
    if (ok && !verbose)
        return;
    printf("%s %s size=%d count=%zu %s/%s root=%d%s%s%s (seq %u)", ok ? "ok  " : "FAIL",
           c->algo->name, c->size, c->count, xcoll_dtype_name(c->dtype),
           is_reduction(c->algo->coll) ? xcoll_op_name(c->op) : "-", c->root,
           c->in_place ? " in_place" : "", c->eager ? " eager" : "",
           c->immediate ? " immediate" : "", seq);
    if (c->topo != 0)
        printf(" topo=%d", c->topo);
    if (fmt != NULL) {
        printf(": ");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
    }
    printf("\n");
    fflush(stdout);
}

static int ilog2_ceil(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* Recursive doubling/halving fold: p2 = the largest power of two <= P,
 * rem = P - p2 ranks fold into a partner; lg = log2 p2. */
static void fold_sizes(int64_t P, int64_t *p2, int64_t *rem, int64_t *lg)
{
    *p2 = 1, *lg = 0;
    while (*p2 * 2 <= P)
        *p2 *= 2, ++*lg;
    *rem = P - *p2;
}

/* --- trees, chain, compositions, hierarchical (docs/algorithms-trees-hier.md)
 * The segment counts below restate each builder's segmentation rule. */

static int is_hier(const algo_t *al) { return !strncmp(al->name, "hier_", 5); }

static void run_roots(case_t *c);

/* The case's fake topology (see case_t.topo), or NULL. */
static struct xc_topo *case_topo_make(const case_t *c)
{
    struct xc_topo *t = NULL;
    if (c->topo > 0) {
        xc_topo_from_ranks_per_node(c->size, c->topo, &t);
    } else if (c->topo < 0) {
        uint64_t *keys = malloc((size_t)c->size * sizeof(uint64_t));
        int r;
        if (keys == NULL) {
            fprintf(stderr, "test_sim: out of memory\n");
            exit(2);
        }
        for (r = 0; r < c->size; r++)
            keys[r] = (uint64_t)(r % -c->topo);
        xc_topo_from_keys(c->size, keys, &t);
        free(keys);
    }
    if (c->topo != 0 && t == NULL) {
        fprintf(stderr, "test_sim: cannot build topology %d\n", c->topo);
        exit(2);
    }
    return t;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t at_least_1(int64_t n) { return n < 1 ? 1 : n; }

/* tree.c: segments of 128 KiB, at most 4 per level of the binomial tree. */
static int64_t tree_segments(int64_t bytes, int64_t P)
{
    int64_t n = at_least_1(ceil_div(bytes, 128 * 1024)), levels = 0;
    while (((int64_t)1 << levels) < P)
        levels++;
    if (n > 4 * levels)
        n = 4 * levels;
    return at_least_1(n);
}

static int64_t chain_segments(int64_t bytes, int64_t P)
{
    int64_t n = ceil_div(bytes, 128 * 1024), fill = ceil_div(bytes, 16 * 1024);
    if (n > 4 * (P - 1))
        n = 4 * (P - 1); /* chain.c: at most 4 segments per link */
    if (fill > P - 1)
        fill = P - 1;
    return at_least_1(n > fill ? n : fill);
}

/* Scatter / gather of the count-element buffer's size blocks (uneven) over
 * a binomial tree: messages (one per edge, two where a subtree's real
 * ranks wrap) and bytes (each block once per edge above its rank). */
static void subtree_runs(const case_t *c, int64_t *msgs, int64_t *bytes)
{
    const int64_t P = c->size, ds = (int64_t)xcoll_dtype_size(c->dtype);
    const int64_t w = (P - c->root) % P;
    int64_t v, u;
    *msgs = *bytes = 0;
    for (v = 1; v < P; v++) {
        int64_t span = v & -v, hi = v + (span < P - v ? span : P - v);
        *msgs += w > v && w < hi ? 2 : 1;
        for (u = v; u < hi; u++)
            *bytes += (int64_t)xc_block_count(c->count, (int)P, (int)((u + c->root) % P)) * ds;
    }
}

/* Node sizes of the case's topology: nodes, sum of squares. */
static void topo_sums(const case_t *c, int64_t *nnodes, int64_t *sq)
{
    struct xc_topo *t = case_topo_make(c);
    int n;
    *nnodes = *sq = 0;
    if (t == NULL)
        return;
    *nnodes = t->nnodes;
    for (n = 0; n < t->nnodes; n++)
        *sq += (int64_t)t->node_size[n] * t->node_size[n];
    xc_topo_free(t);
}

/* Fills *msgs and *bytes (all ranks together); returns 0 if the algorithm
 * is not one of these. */
static int trees_hier_expect(const case_t *c, int64_t *msgs, int64_t *bytes)
{
    const int64_t P = c->size, ds = (int64_t)xcoll_dtype_size(c->dtype);
    const int64_t count = (int64_t)c->count, n = count * ds;
    const char *a = c->algo->name;
    int64_t m, b, nn, sq, halves, seg;

    if (!strcmp(a, "tree_barrier")) {
        *msgs = 2 * (P - 1), *bytes = 0;
        return 1;
    }
    if (!strcmp(a, "reduce_bcast_allreduce")) {
        /* tree.c: one segment per 128 KiB, at most 4 per tree level, one
         * for an empty message */
        *msgs = 2 * (P - 1) * tree_segments(n, P), *bytes = 2 * (P - 1) * n;
        return 1;
    }
    if (!strcmp(a, "chain_bcast")) {
        *msgs = count == 0 ? 0 : (P - 1) * chain_segments(n, P), *bytes = (P - 1) * n;
        return 1;
    }
    if (!strcmp(a, "dbtree_allreduce") || !strcmp(a, "dbtree_bcast")) {
        halves = count == 0 ? 0 : count == 1 ? 1 : 2;
        seg = at_least_1(ceil_div((count + 1) / 2 * ds, 64 * 1024));
        m = !strcmp(a, "dbtree_allreduce") ? 2 : 1;
        *msgs = P == 1 ? 0 : m * (P - 1) * halves * seg, *bytes = m * (P - 1) * n;
        return 1;
    }
    if (!strcmp(a, "scatter_allgather_bcast") || !strcmp(a, "rsg_reduce")) {
        if (P == 1 || (count == 0 && a[0] == 's')) {
            *msgs = *bytes = 0;
            return 1;
        }
        subtree_runs(c, &m, &b);
        seg = at_least_1(ceil_div(ceil_div(count, P) * ds, 128 * 1024));
        *msgs = m + P * (P - 1) * seg, *bytes = b + (P - 1) * n;
        return 1;
    }
    if (is_hier(c->algo)) {
        topo_sums(c, &nn, &sq);
        seg = at_least_1(ceil_div(n, 128 * 1024));
        if (count == 0)
            *msgs = *bytes = 0;
        else if (!strcmp(a, "hier_allreduce"))
            *msgs = 2 * (P - 1) * seg, *bytes = 2 * (P - 1) * n;
        else if (!strcmp(a, "hier_2d_allreduce")) {
            /* hier.c: segments of 512 KiB, at most 8, but none over 8
             * MiB; each a reduce-scatter and an allgather inside the node
             * (K - 1 messages a rank each) and a ring allreduce across
             * nodes (2 (M - 1)) */
            seg = at_least_1(ceil_div(n, 512 * 1024));
            seg = seg > 8 ? 8 : seg;
            seg = seg > ceil_div(n, 8 << 20) ? seg : ceil_div(n, 8 << 20);
            *msgs = 2 * seg * P * (P / nn - 1 + nn - 1), *bytes = 2 * (P - 1) * n;
        } else if (!strcmp(a, "hier_bcast"))
            *msgs = (P - 1) * seg, *bytes = (P - 1) * n;
        else /* alltoall: n is one block */
            *msgs = 2 * (P - nn) + nn * (nn - 1), *bytes = (2 * (P - nn) * P + P * P - sq) * n;
        return 1;
    }
    return 0;
}

/* A small case of al on P ranks over topology `topo` (as case_t.topo),
 * for checking that its builder declines. */
static case_t decline_case(const algo_t *al, int P, int topo)
{
    case_t c;
    memset(&c, 0, sizeof(c));
    c.algo = al;
    c.size = P;
    c.count = 7;
    c.dtype = XCOLL_INT32;
    c.op = XCOLL_SUM;
    c.topo = topo;
    return c;
}

/* What c's builder returns on rank P-1 (XCOLL_ERR_UNSUPPORTED: it declines). */
static xcoll_status_t build_status(const case_t *c)
{
    xc_sched_t s;
    xc_coll_args_t a;
    xcoll_status_t st;
    memset(&a, 0, sizeof(a));
    a.coll = c->algo->coll;
    a.rank = c->size - 1;
    a.size = c->size;
    a.count = c->count;
    a.dtype = c->dtype;
    a.op = c->op;
    a.topo = case_topo_make(c);
    xc_sched_init(&s, a.rank, a.size, a.dtype, a.op);
    st = c->algo->build(&s, &a);
    xc_sched_finish(&s);
    xc_sched_fini(&s);
    xc_topo_free((struct xc_topo *)a.topo);
    return st;
}

/* hier2d needs every node to have as many ranks as the others. */
static int needs_even_nodes(const algo_t *al) { return !strcmp(al->name, "hier_2d_allreduce"); }

static int topo_even(int P, int topo)
{
    return topo > 0 ? P % topo == 0 : P % -topo == 0;
}

/* The hierarchical builders must decline without a topology, on one node,
 * and when every node has one rank. */
static void check_hier_declines(const algo_t *al, int P)
{
    const int topos[3] = {0, 1, P};
    int i;
    for (i = 0; i < 3; i++) {
        case_t c = decline_case(al, P, topos[i]);
        xcoll_status_t st = build_status(&c);
        report(&c, st == XCOLL_ERR_UNSUPPORTED, "built (%s) where it should decline",
               xcoll_strerror(st));
    }
}

/* Hierarchical cases run over several fake topologies: k consecutive ranks
 * per node (the last node smaller when k does not divide the size), and
 * ranks dealt round robin over -k nodes (nodes that are not rank ranges). */
static void run_topos(case_t *c)
{
    static const int topos[] = {2, 3, 4, -2, -3};
    size_t i;
    if (!is_hier(c->algo)) {
        run_roots(c);
        return;
    }
    if (c->count == 0 && !c->in_place && c->dtype == XCOLL_INT32)
        check_hier_declines(c->algo, c->size);
    for (i = 0; i < sizeof(topos) / sizeof(topos[0]); i++) {
        int k = topos[i];
        /* at least two nodes, one of them with two ranks */
        if (k > 0 ? c->size <= k : c->size <= -k)
            continue;
        c->topo = k;
        if (needs_even_nodes(c->algo) && !topo_even(c->size, k)) {
            if (c->count == 0 && !c->in_place && c->dtype == XCOLL_INT32) {
                case_t d = decline_case(c->algo, c->size, k);
                xcoll_status_t st = build_status(&d);
                report(&d, st == XCOLL_ERR_UNSUPPORTED,
                       "built (%s) over nodes of different sizes, where it should decline",
                       xcoll_strerror(st));
            }
            continue;
        }
        run_roots(c);
    }
    c->topo = 0;
}

/* Bytes all ranks together put on the wire, or -1 if not checked.
 * docs/ALGORITHMS.md states these formulas. */
static int64_t expected_wire_bytes(const case_t *c)
{
    const int64_t P = c->size, block = (int64_t)(c->count * xcoll_dtype_size(c->dtype));
    const char *n = c->algo->name;
    int64_t total = 0, v;
    if (trees_hier_expect(c, &v, &total))
        return total;
    if (!strcmp(n, "ring_allreduce"))
        return 2 * (P - 1) * block;
    if (!strcmp(n, "ring_allgather") || !strcmp(n, "ring_reduce_scatter") ||
        !strcmp(n, "pairwise_alltoall"))
        return P * (P - 1) * block;
    if (!strcmp(n, "binomial_bcast") || !strcmp(n, "binomial_reduce") ||
        !strcmp(n, "linear_gather") || !strcmp(n, "linear_scatter") ||
        !strcmp(n, "linear_bcast") || !strcmp(n, "linear_reduce"))
        return (P - 1) * block;
    if (!strcmp(n, "direct_allreduce") || !strcmp(n, "direct_reduce_scatter") ||
        !strcmp(n, "direct_allgather"))
        return P * (P - 1) * block;
    if (!strcmp(n, "direct_barrier"))
        return 0;
    if (!strcmp(n, "binomial_gather") || !strcmp(n, "binomial_scatter")) {
        /* each block moves once per tree edge between its rank and the root */
        for (v = 1; v < P; v++) {
            int64_t span = v & -v;
            total += (span < P - v ? span : P - v) * block;
        }
        return total;
    }
    if (!strcmp(n, "dissemination_barrier"))
        return 0;
    if (!strcmp(n, "recdbl_allreduce") || !strcmp(n, "rabenseifner_allreduce") ||
        !strcmp(n, "rechalving_reduce_scatter")) {
        int64_t p2, rem, lg;
        fold_sizes(P, &p2, &rem, &lg);
        if (P == 1)
            return 0;
        if (!strcmp(n, "recdbl_allreduce"))
            return (2 * rem + p2 * lg) * block;
        if (!strcmp(n, "rabenseifner_allreduce"))
            return (2 * rem + 2 * (p2 - 1)) * block;
        return (P - 1) * P * block + rem * block;
    }
    if (!strcmp(n, "recdbl_allgather") || !strcmp(n, "bruck_allgather"))
        return P * (P - 1) * block;
    if (!strcmp(n, "bruck_alltoall")) {
        /* a block moves once per set bit of (destination - source) mod P */
        for (v = 1; v < P; v++)
            total += __builtin_popcountll((unsigned long long)v);
        return P * total * block;
    }
    return -1;
}

/* Messages ring.c cuts a block of `bytes` into: 128 KiB segments, at most
 * 4 per block. */
static int64_t ring_segments(int64_t bytes)
{
    const int64_t seg = 128 * 1024;
    int64_t n = bytes <= seg ? 1 : (bytes + seg - 1) / seg;
    return n > 4 ? 4 : n;
}

/* Messages all ranks together send, or -1 if not checked (formulas in
 * docs/ALGORITHMS.md). */
static int64_t expected_messages(const case_t *c)
{
    const int64_t P = c->size, ds = (int64_t)xcoll_dtype_size(c->dtype);
    const int64_t count = (int64_t)c->count;
    const char *n = c->algo->name;
    int64_t p2, rem, lg, v, total = 0;
    if (trees_hier_expect(c, &total, &v))
        return total;
    fold_sizes(P, &p2, &rem, &lg);
    if (P == 1)
        return 0;
    /* ring.c and tree.c cut a block into segments of 128 KiB, at most 4
     * per block (ring) or per tree level (tree) */
    if (!strcmp(n, "ring_allreduce"))
        return 2 * P * (P - 1) * ring_segments(((count + P - 1) / P) * ds);
    if (!strcmp(n, "ring_allgather") || !strcmp(n, "ring_reduce_scatter"))
        return P * (P - 1) * ring_segments(count * ds);
    if (!strcmp(n, "binomial_bcast") || !strcmp(n, "binomial_reduce"))
        return (P - 1) * tree_segments(count * ds, P);
    if (!strcmp(n, "linear_gather") || !strcmp(n, "linear_scatter") ||
        !strcmp(n, "linear_bcast") || !strcmp(n, "linear_reduce"))
        return P - 1;
    if (!strcmp(n, "pairwise_alltoall") || !strncmp(n, "direct_", 7))
        return P * (P - 1);
    if (!strcmp(n, "binomial_gather") || !strcmp(n, "binomial_scatter")) {
        /* one message per tree edge, two where the subtree's real ranks
         * wrap from size-1 to 0 (virtual rank w = size - root) */
        const int64_t w = (P - c->root) % P;
        for (v = 1; v < P; v++) {
            int64_t span = v & -v, hi = v + (span < P - v ? span : P - v);
            total += w > v && w < hi ? 2 : 1;
        }
        return total;
    }
    if (!strcmp(n, "recdbl_allreduce") || !strcmp(n, "rechalving_reduce_scatter"))
        return 2 * rem + p2 * lg;
    if (!strcmp(n, "rabenseifner_allreduce"))
        return 2 * rem + 2 * p2 * lg;
    if (!strcmp(n, "recdbl_allgather"))
        return 3 * rem + p2 * lg;
    if (!strcmp(n, "bruck_allgather") || !strcmp(n, "bruck_alltoall") ||
        !strcmp(n, "dissemination_barrier"))
        return P * ilog2_ceil((int)P);
    return -1;
}

typedef struct {
    void *send, *recv;
    size_t send_n, recv_n; /* elements */
    void *send_copy;       /* to check that SEND is left alone */
} rank_bufs_t;

static void *alloc_bytes(size_t bytes)
{
    /* exact sizes, so AddressSanitizer sees any overrun */
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "test_sim: out of memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

/* --gpu: rank r's buffers move to emulated device memory, both or (every
 * third case each) only one of them, to cover calls that mix host and
 * device buffers. */
static void gpu_buffers_in(const case_t *c, const rank_bufs_t *b, void **send, void **recv)
{
    unsigned mix = seq % 3;
    if (b->send != NULL && mix != 2) {
        size_t n = b->send_n * xcoll_dtype_size(c->dtype);
        *send = emu_dev_alloc(n);
        emu_gpu_backend()->copy_sync(*send, b->send, n);
    }
    if (b->recv != NULL && mix != 1) {
        size_t n = b->recv_n * xcoll_dtype_size(c->dtype);
        *recv = emu_dev_alloc(n);
        emu_gpu_backend()->copy_sync(*recv, b->recv, n);
    }
}

/* Copies device results back into the host buffers the checks read. */
static void gpu_buffers_out(const case_t *c, rank_bufs_t *b, void *send, void *recv)
{
    size_t ds = xcoll_dtype_size(c->dtype);
    if (send != NULL && send != b->send) {
        emu_gpu_backend()->copy_sync(b->send, send, b->send_n * ds);
        emu_dev_free(send);
    }
    if (recv != NULL && recv != b->recv) {
        emu_gpu_backend()->copy_sync(b->recv, recv, b->recv_n * ds);
        emu_dev_free(recv);
    }
}

/* Sets up rank r's buffers per the contract in coll.h. */
static void setup_rank(const case_t *c, int r, const void *input, rank_bufs_t *b, int *in_place)
{
    const size_t n = c->count, P = (size_t)c->size, ds = xcoll_dtype_size(c->dtype);
    const int root = r == c->root;
    size_t send_n = 0, recv_n = 0;
    int ip = c->in_place, has_send = 0, has_recv = 1;

    memset(b, 0, sizeof(*b));
    switch (c->algo->coll) {
    case XC_COLL_ALLREDUCE: send_n = n, recv_n = n; break;
    case XC_COLL_BCAST: recv_n = n, ip = 0; break;
    case XC_COLL_REDUCE: send_n = n, recv_n = n, ip = ip && root, has_recv = root; break;
    case XC_COLL_ALLGATHER: send_n = n, recv_n = P * n; break;
    case XC_COLL_REDUCE_SCATTER: send_n = P * n, recv_n = ip ? P * n : n; break;
    case XC_COLL_ALLTOALL: send_n = P * n, recv_n = P * n; break;
    case XC_COLL_GATHER: send_n = n, recv_n = P * n, ip = ip && root, has_recv = root; break;
    case XC_COLL_SCATTER:
        send_n = P * n, recv_n = n, ip = ip && root, has_recv = !ip;
        has_send = root;
        break;
    default: ip = 0, has_recv = 0; break;
    }
    if (send_n > 0 && c->algo->coll != XC_COLL_SCATTER)
        has_send = !ip;
    *in_place = ip;

    if (has_recv) {
        b->recv = alloc_bytes(recv_n * ds);
        b->recv_n = recv_n;
        memset(b->recv, 0xA5, recv_n * ds); /* garbage the result must replace */
    }
    if (has_send) {
        b->send = alloc_bytes(send_n * ds);
        b->send_n = send_n;
        memcpy(b->send, input, send_n * ds);
        b->send_copy = alloc_bytes(send_n * ds);
        memcpy(b->send_copy, b->send, send_n * ds);
    } else if (ip && (c->algo->coll == XC_COLL_ALLGATHER || c->algo->coll == XC_COLL_GATHER)) {
        memcpy((char *)b->recv + (size_t)r * n * ds, input, n * ds);
    } else if (ip || (c->algo->coll == XC_COLL_BCAST && root)) {
        memcpy(b->recv, input, recv_n * ds);
    }
}

/* Compares n elements at got with the expected ones; returns 1 if equal. */
static int check_region(const case_t *c, const char *what, int r, const void *got,
                        const void *want, size_t n)
{
    const size_t ds = xcoll_dtype_size(c->dtype);
    size_t i;
    if (n == 0 || memcmp(got, want, n * ds) == 0)
        return 1;
    for (i = 0; i < n; i++)
        if (memcmp((const char *)got + i * ds, (const char *)want + i * ds, ds) != 0)
            break;
    report(c, 0, "rank %d %s element %zu: got %g, expected %g", r, what, i,
           load(c->dtype, got, i), load(c->dtype, want, i));
    return 0;
}

/* inputs: every rank's input; reduced: op over ranks of the inputs
 * (reductions only). */
static int check_results(const case_t *c, int r, const rank_bufs_t *b, int in_place,
                         void *const *inputs, const void *reduced)
{
    const size_t n = c->count, P = (size_t)c->size, ds = xcoll_dtype_size(c->dtype);
    const int root = r == c->root;
    size_t q;
    const void *got = b->recv, *want = NULL;
    void *gathered = NULL;
    int ok = 1;

    if (b->send != NULL && memcmp(b->send, b->send_copy, b->send_n * ds) != 0) {
        report(c, 0, "rank %d: the send buffer was modified", r);
        return 0;
    }
    switch (c->algo->coll) {
    case XC_COLL_ALLREDUCE:
        want = reduced;
        break;
    case XC_COLL_BCAST:
        want = inputs[c->root];
        break;
    case XC_COLL_REDUCE:
        want = root ? reduced : NULL;
        break;
    case XC_COLL_REDUCE_SCATTER:
        want = (const char *)reduced + (size_t)r * n * ds;
        if (in_place)
            got = (const char *)b->recv + (size_t)r * n * ds;
        break;
    case XC_COLL_ALLGATHER:
    case XC_COLL_GATHER:
    case XC_COLL_ALLTOALL:
        if (c->algo->coll == XC_COLL_GATHER && !root)
            break;
        /* block q comes from rank q: its input, or its block r of it */
        gathered = alloc_bytes(P * n * ds);
        for (q = 0; q < P; q++)
            memcpy((char *)gathered + q * n * ds,
                   (const char *)inputs[q] +
                       (c->algo->coll == XC_COLL_ALLTOALL ? (size_t)r * n * ds : 0),
                   n * ds);
        if (!check_region(c, "result", r, got, gathered, P * n))
            ok = 0;
        free(gathered);
        return ok;
    case XC_COLL_SCATTER:
        if (!(root && in_place))
            want = (const char *)inputs[c->root] + (size_t)r * n * ds;
        break;
    default:
        break;
    }
    if (want != NULL)
        ok = check_region(c, "result", r, got, want, n);
    return ok;
}

/* --- buffers behind a layout (--layout) ------------------------------------
 * The packed stream's bytes live in chunks of LAY_CHUNK, stored in reverse
 * order with LAY_GAP bytes of filler between them, so a range that works
 * by accident on contiguous memory fails here; the filler must survive. */
#define LAY_CHUNK 5
#define LAY_GAP 3
#define LAY_FILL 0x5A

typedef struct {
    xcoll_layout_t l;
    unsigned char *phys;
    size_t nchunks, phys_bytes;
    int writable;   /* the send side must never be unpacked into */
    unsigned long bad; /* calls out of range, or writes to a read-only side */
} lay_buf_t;

static unsigned char *lay_at(const lay_buf_t *lb, size_t k)
{
    size_t j = k / LAY_CHUNK;
    return lb->phys + (lb->nchunks - 1 - j) * (LAY_CHUNK + LAY_GAP) + k % LAY_CHUNK;
}

static int lay_range_ok(lay_buf_t *lb, size_t off, size_t len)
{
    if (len == 0 || off > lb->l.bytes || len > lb->l.bytes - off) {
        lb->bad++;
        return 0;
    }
    return 1;
}

static int lay_test_pack(void *ctx, size_t off, void *dst, size_t len)
{
    lay_buf_t *lb = ctx;
    unsigned char *out = dst;
    if (!lay_range_ok(lb, off, len))
        return -1;
    while (len > 0) {
        size_t n = LAY_CHUNK - off % LAY_CHUNK;
        if (n > len)
            n = len;
        memcpy(out, lay_at(lb, off), n);
        out += n, off += n, len -= n;
    }
    return 0;
}

static int lay_test_unpack(void *ctx, size_t off, const void *src, size_t len)
{
    lay_buf_t *lb = ctx;
    const unsigned char *in = src;
    if (!lay_range_ok(lb, off, len))
        return -1;
    if (!lb->writable) {
        lb->bad++;
        return -1;
    }
    while (len > 0) {
        size_t n = LAY_CHUNK - off % LAY_CHUNK;
        if (n > len)
            n = len;
        memcpy(lay_at(lb, off), in, n);
        in += n, off += n, len -= n;
    }
    return 0;
}

/* A layout holding the bytes of contiguous `from`. */
static void lay_make(lay_buf_t *lb, const void *from, size_t bytes, int writable)
{
    memset(lb, 0, sizeof(*lb));
    lb->nchunks = (bytes + LAY_CHUNK - 1) / LAY_CHUNK;
    lb->phys_bytes = lb->nchunks * (LAY_CHUNK + LAY_GAP);
    lb->phys = alloc_bytes(lb->phys_bytes);
    memset(lb->phys, LAY_FILL, lb->phys_bytes);
    lb->l.bytes = bytes;
    lb->l.pack = lay_test_pack;
    lb->l.unpack = lay_test_unpack;
    lb->l.ctx = lb;
    lb->writable = 1;
    if (bytes > 0)
        lay_test_unpack(lb, 0, from, bytes);
    lb->writable = writable;
}

/* Copies the layout's bytes back into contiguous `to`; returns 0 if the
 * filler was overwritten or a call was bad. */
static int lay_take(lay_buf_t *lb, void *to)
{
    size_t j, g;
    int ok = lb->bad == 0;
    if (lb->l.bytes > 0)
        lay_test_pack(lb, 0, to, lb->l.bytes);
    for (j = 0; j < lb->nchunks; j++) {
        /* the last chunk in the stream (first in memory) may be partial */
        size_t used = j + 1 == lb->nchunks && lb->l.bytes % LAY_CHUNK ? lb->l.bytes % LAY_CHUNK
                                                                     : LAY_CHUNK;
        unsigned char *c = lb->phys + (lb->nchunks - 1 - j) * (LAY_CHUNK + LAY_GAP);
        for (g = used; g < LAY_CHUNK + LAY_GAP; g++)
            if (c[g] != LAY_FILL)
                ok = 0;
    }
    free(lb->phys);
    lb->phys = NULL;
    return ok;
}

/* Runs every rank round-robin until all are done; returns 1 on success.
 * `late`, if >= 0, is a rank held back until the others stall (barrier:
 * none of them may finish before it starts). */
static int run_all(const case_t *c, xc_exec_t *x, lb_world_t *w, int late)
{
    const int P = c->size;
    int *done = calloc((size_t)P, sizeof(int));
    int ndone = 0, r, ok = 1, held = late >= 0;
    xcoll_status_t st;

    while (ndone < P && ok) {
        int progressed = 0;
        for (r = 0; r < P; r++) {
            if (done[r] || (held && r == late))
                continue;
            st = xc_exec_progress(&x[r], &progressed);
            if (lb_world_deliver(w) > 0)
                progressed = 1;
            if (st == XCOLL_OK) {
                done[r] = 1;
                ndone++;
                progressed = 1;
            } else if (st != XCOLL_INPROGRESS) {
                report(c, 0, "rank %d failed: %s", r, xcoll_strerror(st));
                ok = 0;
                break;
            }
        }
        /* idle only because the network held everything back */
        if (!ok || progressed || lb_world_flush(w) > 0 || (gpu_mode && emu_gpu_tick() > 0))
            continue;
        if (held) {
            if (ndone > 0) {
                report(c, 0, "%d ranks left the barrier before rank %d entered it", ndone, late);
                ok = 0;
            }
            held = 0;
            continue;
        }
        report(c, 0, "deadlock: no rank can progress, %d of %d done", ndone, P);
        for (r = 0; r < P; r++) {
            if (!done[r]) {
                char what[64];
                snprintf(what, sizeof(what), "%s rank %d", c->algo->name, r);
                xc_exec_log_pending(&x[r], what);
            }
        }
        ok = 0;
    }
    free(done);
    return ok;
}

static void run_case(const case_t *c)
{
    const int P = c->size;
    xc_sched_t *s = calloc((size_t)P, sizeof(*s));
    xc_exec_t *x = calloc((size_t)P, sizeof(*x));
    rank_bufs_t *b = calloc((size_t)P, sizeof(*b));
    int *ip = calloc((size_t)P, sizeof(int));
    lb_world_t *w = lb_world_create(P);
    int r, ok = 1, nexec = 0;
    const size_t ds = xcoll_dtype_size(c->dtype);
    void **inputs, *reduced = NULL;
    int64_t want_bytes;
    uint64_t bytes = 0, sent = 0, recvd = 0;
    xcoll_status_t st;
    xc_exec_device_t dev;
    lay_buf_t *lay = layout_mode ? calloc((size_t)P * 2, sizeof(*lay)) : NULL;

    if (s == NULL || x == NULL || b == NULL || ip == NULL || w == NULL ||
        (layout_mode && lay == NULL)) {
        fprintf(stderr, "test_sim: out of memory\n");
        exit(2);
    }
    seq++;
    case_topo = case_topo_make(c);
    lb_world_set_eager(w, c->eager);
    lb_world_set_device(w, gpu_mode == 2);
    lb_world_set_delayed(w, !c->immediate, seq);
    lb_world_set_land_reduce(w, c->land_reduce);
    inputs = calloc((size_t)P, sizeof(void *));
    if (inputs == NULL) {
        fprintf(stderr, "test_sim: out of memory\n");
        exit(2);
    }
    for (r = 0; r < P; r++) {
        /* bcast and scatter read only the root's input */
        if (r != c->root &&
            (c->algo->coll == XC_COLL_BCAST || c->algo->coll == XC_COLL_SCATTER))
            continue;
        inputs[r] = alloc_bytes(input_len(c) * ds);
        make_input(c, r, inputs[r]);
    }
    if (is_reduction(c->algo->coll)) {
        reduced = alloc_bytes(input_len(c) * ds);
        compute_reduced(c, inputs, input_len(c), reduced);
    }
    for (r = 0; r < P && ok; r++) {
        xc_coll_args_t a;
        setup_rank(c, r, inputs[r], &b[r], &ip[r]);
        memset(&a, 0, sizeof(a));
        a.coll = c->algo->coll;
        a.rank = r;
        a.size = P;
        a.count = c->count;
        a.dtype = c->dtype;
        a.op = c->op;
        a.root = c->root;
        a.in_place = ip[r];
        a.topo = case_topo;
        st = xc_sched_init(&s[r], r, P, c->dtype, c->op);
        s[r].algo = c->algo->name;
        if (st == XCOLL_OK)
            st = c->algo->build(&s[r], &a);
        if (st == XCOLL_OK)
            st = xc_sched_finish(&s[r]);
        else
            xc_sched_finish(&s[r]);
        if (st != XCOLL_OK) {
            report(c, 0, "rank %d: building the schedule failed: %s", r, xcoll_strerror(st));
            ok = 0;
        }
    }
    for (r = 0; r < P && ok; r++, nexec++) {
        void *send = b[r].send, *recv = b[r].recv;
        if (gpu_mode)
            gpu_buffers_in(c, &b[r], &send, &recv);
        dev.gpu = emu_gpu_backend();
        dev.send_mem = xc_gpu_memtype(send, NULL);
        dev.recv_mem = xc_gpu_memtype(recv, NULL);
        dev.reserve = seq % 2;
        if (layout_mode) {
            /* no addresses at all: any direct access is a NULL dereference */
            size_t ds2 = xcoll_dtype_size(c->dtype);
            if (send != NULL)
                lay_make(&lay[2 * r], send, b[r].send_n * ds2, 0);
            if (recv != NULL)
                lay_make(&lay[2 * r + 1], recv, b[r].recv_n * ds2, 1);
        }
        st = xc_exec_init(&x[r], &s[r], layout_mode ? NULL : send, layout_mode ? NULL : recv,
                          &lb_transport, lb_comm(w, r), 1, seq, gpu_mode ? &dev : NULL);
        if (st == XCOLL_OK && layout_mode)
            st = xc_exec_use_layouts(&x[r], send != NULL ? &lay[2 * r].l : NULL,
                                     recv != NULL ? &lay[2 * r + 1].l : NULL);
        if (st != XCOLL_OK) {
            report(c, 0, "rank %d: xc_exec_init: %s", r, xcoll_strerror(st));
            ok = 0;
        }
    }
    if (ok)
        ok = run_all(c, x, w, c->algo->coll == XC_COLL_BARRIER && P > 1 ? (int)(seq % (unsigned)P)
                                                                   : -1);
    if (gpu_mode) {
        for (r = 0; r < nexec; r++)
            gpu_buffers_out(c, &b[r], x[r].buf[XC_BUF_SEND], x[r].buf[XC_BUF_RECV]);
        if (ok && emu_gpu_pending() != 0) {
            report(c, 0, "%zu GPU operations still queued after completion", emu_gpu_pending());
            ok = 0;
        }
    }
    for (r = 0; layout_mode && r < P; r++) {
        if (lay[2 * r].phys != NULL && !lay_take(&lay[2 * r], b[r].send) && ok) {
            report(c, 0, "rank %d: the send layout was written or called out of range", r);
            ok = 0;
        }
        if (lay[2 * r + 1].phys != NULL && !lay_take(&lay[2 * r + 1], b[r].recv) && ok) {
            report(c, 0, "rank %d: the receive layout's filler was overwritten or it was "
                         "called out of range", r);
            ok = 0;
        }
    }
    if (ok && lb_world_pending(w) != 0) {
        report(c, 0, "%zu messages or receives left unmatched", lb_world_pending(w));
        ok = 0;
    }
    for (r = 0; r < P && ok; r++) {
        lb_stats_t ls;
        lb_stats(w, r, &ls);
        if (ls.msgs_sent != x[r].msgs_sent || ls.bytes_sent != x[r].bytes_sent) {
            report(c, 0, "rank %d: engine counted %" PRIu64 " messages, transport %" PRIu64, r,
                   x[r].msgs_sent, ls.msgs_sent);
            ok = 0;
        }
        bytes += ls.bytes_sent;
        sent += ls.msgs_sent;
        recvd += ls.msgs_recvd;
    }
    if (ok && sent != recvd) {
        report(c, 0, "%" PRIu64 " messages sent, %" PRIu64 " received", sent, recvd);
        ok = 0;
    }
    want_bytes = expected_wire_bytes(c);
    if (ok && want_bytes >= 0 && (uint64_t)want_bytes != bytes) {
        report(c, 0, "%" PRIu64 " bytes on the wire, expected %" PRId64, bytes, want_bytes);
        ok = 0;
    }
    want_bytes = expected_messages(c);
    if (ok && want_bytes >= 0 && (uint64_t)want_bytes != sent) {
        report(c, 0, "%" PRIu64 " messages, expected %" PRId64, sent, want_bytes);
        ok = 0;
    }
    if (ok && !strcmp(c->algo->name, "dissemination_barrier") && sent != (uint64_t)P * (uint64_t)ilog2_ceil(P)) {
        report(c, 0, "%" PRIu64 " barrier messages, expected %d", sent, P * ilog2_ceil(P));
        ok = 0;
    }
    for (r = 0; r < P && ok; r++)
        ok = check_results(c, r, &b[r], ip[r], inputs, reduced);
    if (ok)
        report(c, 1, NULL);

    for (r = 0; r < nexec; r++)
        xc_exec_fini(&x[r]);
    for (r = 0; r < P; r++) {
        xc_sched_fini(&s[r]);
        free(b[r].send);
        free(b[r].recv);
        free(b[r].send_copy);
        free(inputs[r]);
    }
    free(inputs);
    free(reduced);
    lb_world_destroy(w);
    xc_topo_free(case_topo);
    case_topo = NULL;
    free(s);
    free(x);
    free(b);
    free(ip);
    free(lay);
}

/* --- the case list ----------------------------------------------------- */

typedef struct {
    xcoll_dtype_t dtype;
    xcoll_op_t op;
} dtop_t;

static const dtop_t red_combos[] = {
    {XCOLL_INT32, XCOLL_SUM},     {XCOLL_FLOAT32, XCOLL_SUM},  {XCOLL_INT32, XCOLL_AVG},
    {XCOLL_FLOAT32, XCOLL_AVG},   {XCOLL_INT32, XCOLL_MAX},    {XCOLL_FLOAT32, XCOLL_MAX},
    {XCOLL_INT32, XCOLL_BXOR},    {XCOLL_INT64, XCOLL_SUM},    {XCOLL_FLOAT64, XCOLL_AVG},
    {XCOLL_FLOAT16, XCOLL_SUM},   {XCOLL_FLOAT16, XCOLL_AVG},  {XCOLL_BFLOAT16, XCOLL_AVG},
    {XCOLL_UINT8, XCOLL_BXOR},    {XCOLL_UINT32, XCOLL_MIN},   {XCOLL_INT64, XCOLL_BXOR},
    {XCOLL_INT8, XCOLL_SUM},
};
#define NRED (sizeof(red_combos) / sizeof(red_combos[0]))

static const xcoll_dtype_t move_dtypes[] = {XCOLL_INT32, XCOLL_UINT8, XCOLL_FLOAT16,
                                            XCOLL_FLOAT64};
#define NMOVE (sizeof(move_dtypes) / sizeof(move_dtypes[0]))

static unsigned long ncase;

/* Mostly rendezvous with random delays (the strictest), some eager, some
 * delivered at match time; every other case with a transport that reduces
 * as messages land (as shared memory does). */
static void vary_delivery(case_t *c)
{
    unsigned long k = ncase++ % 6;
    c->eager = k == 4;
    c->immediate = k == 5;
    c->land_reduce = k % 2 == 1;
}

static void run_roots(case_t *c)
{
    int roots[8], nroots = 0, i, j;
    if (!is_rooted(c->algo->coll)) {
        c->root = 0;
        vary_delivery(c);
        run_case(c);
        return;
    }
    if (c->size <= 8) {
        for (i = 0; i < c->size; i++) {
            c->root = i;
            vary_delivery(c);
            run_case(c);
        }
        return;
    }
    {
        int cand[4] = {0, 1, c->size / 2, c->size - 1};
        for (i = 0; i < 4; i++) {
            for (j = 0; j < nroots && roots[j] != cand[i]; j++)
                ;
            if (j == nroots)
                roots[nroots++] = cand[i];
        }
    }
    for (i = 0; i < nroots; i++) {
        c->root = roots[i];
        vary_delivery(c);
        run_case(c);
    }
}

static void run_combo(const algo_t *al, int P, size_t count, xcoll_dtype_t dt, xcoll_op_t op)
{
    case_t c;
    int ip, nip = al->coll == XC_COLL_BCAST || al->coll == XC_COLL_BARRIER ? 1 : 2;
    memset(&c, 0, sizeof(c));
    c.algo = al;
    c.size = P;
    c.count = count;
    c.dtype = dt;
    c.op = op;
    for (ip = 0; ip < nip; ip++) {
        c.in_place = ip;
        run_topos(&c);
    }
}

static void run_algo_size(const algo_t *al, int P, int quick)
{
    size_t counts[8];
    int ncounts = 0, i, j, k;
    const size_t cand[6] = {0, 1, 7, (size_t)P - 1, 1000, 4099};

    if (al->coll == XC_COLL_BARRIER) {
        run_combo(al, P, 0, XCOLL_INT32, XCOLL_SUM);
        return;
    }
    for (i = 0; i < 6; i++) {
        for (j = 0; j < ncounts && counts[j] != cand[i]; j++)
            ;
        if (j == ncounts)
            counts[ncounts++] = cand[i];
    }
    for (i = 0; i < ncounts; i++) {
        size_t n = counts[i];
        int small = n < 1000;
        /* every rank holds size blocks here: at large sizes and counts one
         * case each, alternating in place, keeps the run short */
        if (!small && P > 12 && input_len_of(al->coll, P, n) > n) {
            const dtop_t *d = &red_combos[(size_t)(P + (int)i) % NRED];
            case_t c;
            memset(&c, 0, sizeof(c));
            c.algo = al;
            c.size = P;
            c.count = n;
            c.dtype = is_reduction(al->coll) ? d->dtype : move_dtypes[(size_t)P % NMOVE];
            c.op = d->op;
            c.in_place = (P + (int)i) % 2;
            run_topos(&c);
            continue;
        }
        if (is_reduction(al->coll)) {
            /* every combination at small counts; two at large ones,
             * rotating with the size so all get covered */
            if (small && !quick) {
                for (k = 0; k < (int)NRED; k++)
                    run_combo(al, P, n, red_combos[k].dtype, red_combos[k].op);
            } else {
                for (k = 0; k < 2; k++) {
                    const dtop_t *d = &red_combos[(size_t)(P * 2 + k + (int)i) % NRED];
                    run_combo(al, P, n, d->dtype, d->op);
                }
            }
        } else {
            if (small && !quick) {
                for (k = 0; k < (int)NMOVE; k++)
                    run_combo(al, P, n, move_dtypes[k], XCOLL_SUM);
            } else {
                run_combo(al, P, n, move_dtypes[(size_t)(P + (int)i) % NMOVE], XCOLL_SUM);
            }
        }
    }
}

/* Counts large enough to be cut into segments, for a few sizes. */
static void run_pipelined(void)
{
    static const int sizes[] = {2, 3, 5, 8};
    size_t i, k;
    case_t c;
    for (k = 0; k < NALGOS; k++) {
        const algo_t *al = &algos[k];
        if (al->coll != XC_COLL_ALLREDUCE && al->coll != XC_COLL_BCAST &&
            al->coll != XC_COLL_REDUCE && al->coll != XC_COLL_ALLGATHER &&
            al->coll != XC_COLL_REDUCE_SCATTER)
            continue;
        for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            int P = sizes[i], ip;
            if ((al->coll == XC_COLL_ALLGATHER || al->coll == XC_COLL_REDUCE_SCATTER) && P > 5)
                continue;
            memset(&c, 0, sizeof(c));
            c.algo = al;
            c.size = P;
            c.count = 300000 + (size_t)P; /* not a multiple of the size */
            c.dtype = XCOLL_FLOAT32;
            c.op = i % 2 ? XCOLL_AVG : XCOLL_SUM;
            if (is_hier(al)) {
                if (P < 3 || (needs_even_nodes(al) && P % 2))
                    continue;
                c.topo = 2;
            }
            for (ip = 0; ip < (al->coll == XC_COLL_BCAST ? 1 : 2); ip++) {
                c.in_place = ip;
                c.root = P - 1;
                c.eager = ip;
                c.land_reduce = (int)(i % 2);
                run_case(&c);
            }
        }
    }
    /* hier2d's segments over nodes of 3 and 4 ranks, two nodes (the ring's
     * neighbours are one rank) and nodes that are not rank ranges */
    for (k = 0; k < NALGOS; k++) {
        static const int shapes[][2] = {{6, 3}, {9, 3}, {12, -3}};
        if (!needs_even_nodes(&algos[k]))
            continue;
        for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
            int ip;
            memset(&c, 0, sizeof(c));
            c.algo = &algos[k];
            c.size = shapes[i][0];
            c.topo = shapes[i][1];
            c.count = 600000 + (size_t)c.size;
            c.dtype = XCOLL_FLOAT32;
            c.op = i % 2 ? XCOLL_AVG : XCOLL_SUM;
            for (ip = 0; ip < 2; ip++) {
                c.in_place = ip;
                c.eager = ip;
                c.land_reduce = (int)(i % 2);
                run_case(&c);
            }
        }
    }
}

/* More segments per link than the tag's 8-bit slot can number: checks
 * that messages with wrapped (equal) tags are still matched in order. */
static void run_slot_wrap(void)
{
    case_t c;
    memset(&c, 0, sizeof(c));
    c.algo = &algos[0]; /* ring allreduce: 2 x 300 segments of 128 KiB */
    c.size = 2;
    c.count = (size_t)300 * 2 * 32768 + 3;
    c.dtype = XCOLL_FLOAT32;
    c.op = XCOLL_SUM;
    run_case(&c);
    c.algo = &algos[3]; /* binomial bcast: 320 segments */
    c.size = 3;
    c.root = 1;
    c.count = (size_t)320 * 32768 - 5;
    run_case(&c);
}

/* One small case (count 0, 1 or 2; in place or not by parity) at a size
 * the full sweep skips: results, messages and bytes are still checked. */
static void run_formula_case(const algo_t *al, int P)
{
    case_t c;
    memset(&c, 0, sizeof(c));
    c.algo = al;
    c.size = P;
    c.count = al->coll == XC_COLL_BARRIER ? 0 : (size_t)(P % 3);
    c.dtype = XCOLL_INT32;
    c.op = P % 2 ? XCOLL_SUM : XCOLL_AVG;
    c.in_place = al->coll != XC_COLL_BCAST && al->coll != XC_COLL_BARRIER && P % 2;
    run_topos(&c); /* run_roots, over fake nodes for hier_* */
}

/* Every algorithm again with its buffers in (emulated) device memory: the
 * engine's staging, GPU kernels and events, first through pinned staging
 * blocks with device memory unreadable by the CPU, then with a transport
 * that takes device memory itself. Exact results, messages and bytes are
 * checked as on the host. */
static int run_gpu_sweep(const char *only, int quick)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 7, 8};
    size_t k, i;
    for (gpu_mode = 1; gpu_mode <= 2; gpu_mode++) {
        unsigned long before = n_passed + n_failed;
        emu_gpu_install(gpu_mode == 1);
        for (k = 0; k < NALGOS; k++) {
            if (only != NULL && strcmp(only, algos[k].name) != 0)
                continue;
            for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
                run_algo_size(&algos[k], sizes[i], gpu_mode == 2 || quick);
        }
        if (only == NULL && gpu_mode == 1)
            run_pipelined();
        printf("test_sim --gpu: %s: %lu cases\n",
               gpu_mode == 1 ? "staged through pinned memory" : "device-capable transport",
               n_passed + n_failed - before);
    }
    xc_gpu_set_backend(NULL);
    printf("test_sim --gpu: %lu passed, %lu failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}

/* Every algorithm with its buffers behind layouts (--layout): the engine
 * packs and unpacks per step, results and wire traffic unchanged. */
static int run_layout_sweep(const char *only, int quick)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 13};
    size_t k, i;
    for (k = 0; k < NALGOS; k++) {
        if (only != NULL && strcmp(only, algos[k].name) != 0)
            continue;
        for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            run_algo_size(&algos[k], sizes[i], quick || sizes[i] > 8);
    }
    if (only == NULL)
        run_pipelined();
    printf("test_sim --layout: %lu passed, %lu failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}

/* --scale P: every algorithm's schedules for P ranks (hier_*: nodes of 8),
 * not run by the engine but by the cost model (lib/coll/model.h), whose
 * message and byte counts must match the formulas above: the builders and
 * the formulas at a size the engine runs cannot reach. Prints the model's
 * time and how long each build and simulation took. */
static int run_scale(const char *only, int P)
{
    xc_model_params_t mp;
    size_t k;
    xc_model_params_default(&mp);
    for (k = 0; k < NALGOS; k++) {
        const algo_t *al = &algos[k];
        xc_algo_t xa = {al->name, al->coll, al->build};
        xc_model_result_t res;
        xc_coll_args_t a;
        case_t c;
        struct timespec t0, t1;
        int64_t em, eb;
        xcoll_status_t rc;
        double secs;
        if (only != NULL && strcmp(only, al->name) != 0)
            continue;
        memset(&c, 0, sizeof(c));
        c.algo = al;
        c.size = P;
        /* 3 elements a block: every formula's segment counts stay 1, and
         * uneven splits of a count over P appear for the single-block ones */
        c.count = al->coll == XC_COLL_BARRIER ? 0 : (size_t)(3 * P + 1);
        if (al->coll == XC_COLL_ALLGATHER || al->coll == XC_COLL_REDUCE_SCATTER ||
            al->coll == XC_COLL_ALLTOALL || al->coll == XC_COLL_GATHER ||
            al->coll == XC_COLL_SCATTER)
            c.count = 3;
        c.dtype = XCOLL_INT32;
        c.op = XCOLL_SUM;
        c.root = P > 1 ? P / 3 : 0;
        c.topo = is_hier(al) ? 8 : 0;
        memset(&a, 0, sizeof(a));
        a.coll = al->coll;
        a.size = P;
        a.count = c.count;
        a.dtype = c.dtype;
        a.op = c.op;
        a.root = c.root;
        case_topo = case_topo_make(&c);
        a.topo = case_topo;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = xc_model_run(&xa, &a, &mp, &res);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        xc_topo_free(case_topo);
        case_topo = NULL;
        /* the rank-order reductions of direct.c (linear reduce too) stop
         * at XC_DIRECT_MAX_RANKS; nothing else may decline */
        if (rc == XCOLL_ERR_UNSUPPORTED && P > XC_DIRECT_MAX_RANKS &&
            (!strncmp(al->name, "direct_", 7) || !strcmp(al->name, "linear_reduce"))) {
            printf("  %-26s P=%d declines (it stops at %d ranks)\n", al->name, P,
                   XC_DIRECT_MAX_RANKS);
            continue;
        }
        if (rc == XCOLL_ERR_UNSUPPORTED && needs_even_nodes(al) && P % 8) {
            printf("  %-26s P=%d declines (nodes of 8 do not divide it)\n", al->name, P);
            continue;
        }
        if (rc != XCOLL_OK) {
            report(&c, 0, "model: %s", xcoll_strerror(rc));
            continue;
        }
        em = expected_messages(&c);
        eb = expected_wire_bytes(&c);
        report(&c, (em < 0 || (uint64_t)em == res.msgs) && (eb < 0 || (uint64_t)eb == res.bytes),
               "%llu messages (formula %lld), %llu bytes (formula %lld)",
               (unsigned long long)res.msgs, (long long)em, (unsigned long long)res.bytes,
               (long long)eb);
        printf("  %-26s P=%d %10llu steps %10llu msgs  model %9.1f us  %6.2f s\n", al->name,
               P, (unsigned long long)res.steps, (unsigned long long)res.msgs, res.time * 1e6,
               secs);
        fflush(stdout);
    }
    printf("test_sim --scale %d: %lu passed, %lu failed\n", P, n_passed, n_failed);
    if (n_passed + n_failed == 0) {
        fprintf(stderr, "test_sim --scale: no algorithm %s\n", only != NULL ? only : "");
        return 1;
    }
    return n_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    int quick = 0, i, P;
    const char *only = NULL;
    size_t k;
    static const int extra_sizes[] = {40, 47, 64};
    int scale_p = 0;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "--gpu"))
            gpu_mode = 1;
        else if (!strcmp(argv[i], "--layout"))
            layout_mode = 1;
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
        else if (!strcmp(argv[i], "--scale") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > 65536) {
                fprintf(stderr, "test_sim: --scale %s: expected 1..65536 ranks\n", argv[i]);
                return 2;
            }
            scale_p = (int)v;
        }
        else
            only = argv[i];
    }
    xc_log_init();
    if (scale_p > 0)
        return run_scale(only, scale_p);
    if (gpu_mode)
        return run_gpu_sweep(only, quick);
    if (layout_mode)
        return run_layout_sweep(only, quick);
    for (k = 0; k < NALGOS; k++) {
        if (only != NULL && strcmp(only, algos[k].name) != 0)
            continue;
        for (P = 1; P <= 33; P++)
            run_algo_size(&algos[k], P, quick);
        for (i = 0; i < 3; i++)
            run_algo_size(&algos[k], extra_sizes[i], 1);
        /* the formulas hold at every size: a small case at each up to 64 */
        for (P = 34; P <= 64; P++)
            if (P != 40 && P != 47 && P != 64)
                run_formula_case(&algos[k], P);
    }
    if (only == NULL) {
        run_pipelined();
        if (!quick)
            run_slot_wrap();
    }
    printf("test_sim: %lu passed, %lu failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
