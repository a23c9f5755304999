/* xcoll-trace: the schedules of one collective for P virtual ranks, built
 * in this process by the library's own builders (no MPI, nothing run), as
 * text and optionally as an SVG space-time diagram, with the totals of
 * messages and bytes set against docs/ALGORITHMS.md's formulas.
 *
 * The formulas below are written from docs/ALGORITHMS.md, not from the
 * builders, so a builder and its documented cost that drift apart show up
 * here (and in test/sim/test_trace.sh, which runs every algorithm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/tune.h"
#include "log.h"
#include "topo.h"
#include "tool_util.h"

#define MAX_RANKS 1024
#define MAX_BYTES ((size_t)16 << 30) /* keeps every formula inside int64_t */
/* Beyond these a diagram is no longer readable: refused, not shrunk. */
#define SVG_MAX_RANKS 64
#define SVG_MAX_COLUMNS 400
#define SVG_MAX_MESSAGES 20000

static void usage(FILE *f)
{
    fprintf(f,
        "usage: xcoll-trace COLL --ranks P --bytes N [--algo A] [--root R] [--dtype T]\n"
        "                   [--op OP] [--per-node K] [--svg FILE] [-q]\n"
        "       xcoll-trace --list | -h\n"
        "  Builds the schedule of collective COLL for P virtual ranks with the library's\n"
        "  own builders (no MPI, nothing runs) and prints, column by column, which rank\n"
        "  sends which block (byte range of its send, recv or tmp buffer) to whom and\n"
        "  what the receiver does with it, the local copies and reductions, then the\n"
        "  totals of messages and bytes next to docs/ALGORITHMS.md's formulas.\n"
        "  A column is a dependency depth: a step starts in the first column after\n"
        "  everything it waits for, in its own schedule and through messages from\n"
        "  other ranks; a message sent in column c arrives in column c+1 at the\n"
        "  earliest. So a ring allreduce sends in 2(P-1) columns.\n"
        "  N is docs/ALGORITHMS.md's n: the vector (allreduce, bcast, reduce) or one\n"
        "  rank's block (the others; the v-variants get equal blocks). Sizes take k, m,\n"
        "  g (KiB, MiB, GiB). Byte ranges print as [first,end).\n"
        "  --algo A      force an algorithm (default: the selection table's choice,\n"
        "                with XCOLL_TUNE_FILE and XCOLL_TUNE applied, as xcoll-info shows)\n"
        "  --root R      root of bcast, reduce, gather, scatter, gatherv, scatterv (0)\n"
        "  --dtype T     element type (float32, or uint8 when N is not a multiple of 4)\n"
        "  --op OP       the reduction's operator (sum; avg adds the divisions)\n"
        "  --per-node K  nodes of K consecutive ranks, for the hierarchical algorithms\n"
        "  --svg FILE    also write a space-time diagram: ranks as rows, columns as\n"
        "                above, one arrow per message, colour per block offset\n"
        "  -q            header and totals only\n"
        "  --list        the collectives and their algorithms\n"
        "  Exit status: 0 the totals equal the formulas, 1 they differ (or the\n"
        "  schedules do not match up), 2 bad usage or an algorithm that declines.\n");
}

typedef struct {
    xc_coll_t coll;
    const xc_algo_t *algo; /* NULL: the selection table chooses */
    int P, root, root_given, per_node, quiet;
    xcoll_op_t op;         /* reductions only */
    size_t n, count;       /* bytes (ALGORITHMS.md's n) and elements */
    xcoll_dtype_t dtype;
    const char *svg;
} opts_t;

/* Every rank's schedule and where each step falls. Steps are numbered
 * globally: rank r's step i is first[r] + i. */
typedef struct {
    int P;
    xc_sched_t *s;
    struct xc_topo *topo;
    size_t *vcounts, *vdispls; /* the v-variants' equal blocks */
    uint32_t *first;           /* P + 1 */
    uint32_t total;
    int *rank_of, *start, *end;
    int64_t *peer;             /* a message's other end (global id), or -1 */
    int maxcol;                /* the last column anything happens in */
    int last_send;             /* the last column a message leaves in (-1: none) */
    char why[512];
} trace_t;

static int is_rooted(xc_coll_t c)
{
    return c == XC_COLL_BCAST || c == XC_COLL_REDUCE || c == XC_COLL_GATHER ||
           c == XC_COLL_SCATTER || c == XC_COLL_GATHERV || c == XC_COLL_SCATTERV;
}

static int is_vector_arg(xc_coll_t c)
{
    return c == XC_COLL_ALLREDUCE || c == XC_COLL_BCAST || c == XC_COLL_REDUCE;
}

static const xc_step_t *step_of(const trace_t *t, uint32_t g)
{
    int r = t->rank_of[g];
    return &t->s[r].steps[g - t->first[r]];
}

/* A v-variant's step for a block that is empty in this call is no
 * message: the engine completes it at once, on both sides. */
static int is_message(const xc_step_t *st)
{
    if ((st->flags & XC_STEP_F_SKIP_EMPTY) && st->bytes == 0)
        return 0;
    return st->kind == XC_STEP_SEND || st->kind == XC_STEP_RECV ||
           st->kind == XC_STEP_RECV_REDUCE;
}

static void list_algorithms(void)
{
    int c;
    size_t i;
    for (c = 0; c < XC_COLL_COUNT; c++) {
        printf("%-15s", xc_coll_name((xc_coll_t)c));
        for (i = 0; i < xc_num_algorithms; i++)
            if (xc_algorithms[i].coll == (xc_coll_t)c)
                printf(" %s", xc_algorithms[i].name);
        printf("\n");
    }
    printf("(hier needs --per-node K with at least two nodes, one of them of two ranks)\n");
}

static void algorithms_of(xc_coll_t coll, char *buf, size_t len)
{
    size_t i, n = 0;
    buf[0] = '\0';
    for (i = 0; i < xc_num_algorithms && n < len; i++)
        if (xc_algorithms[i].coll == coll)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", xc_algorithms[i].name);
}

/* ------------------------------------------------------------ building */

static void args_for(const opts_t *o, const trace_t *t, int r, xc_coll_args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->coll = o->coll;
    a->rank = r;
    a->size = o->P;
    a->count = o->count;
    a->dtype = o->dtype;
    a->op = o->op;
    a->root = is_rooted(o->coll) ? o->root : 0;
    a->topo = t->topo;
    switch (o->coll) {
    case XC_COLL_ALLGATHERV:
        a->rcounts = t->vcounts, a->rdispls = t->vdispls;
        break;
    case XC_COLL_ALLTOALLV:
        a->scounts = a->rcounts = t->vcounts, a->sdispls = a->rdispls = t->vdispls;
        break;
    case XC_COLL_GATHERV: /* only the root knows the blocks */
        if (r == o->root)
            a->rcounts = t->vcounts, a->rdispls = t->vdispls;
        break;
    case XC_COLL_SCATTERV:
        if (r == o->root)
            a->scounts = t->vcounts, a->sdispls = t->vdispls;
        break;
    default:
        break;
    }
}

static void free_scheds(trace_t *t)
{
    int r;
    if (t->s == NULL)
        return;
    for (r = 0; r < t->P; r++)
        xc_sched_fini(&t->s[r]);
    free(t->s);
    t->s = NULL;
}

/* Every rank's schedule, by algorithm al or (NULL) by the selection
 * table tune. XCOLL_ERR_UNSUPPORTED: the algorithm declines the case. */
static xcoll_status_t build_all(const opts_t *o, trace_t *t, const xc_algo_t *al,
                                const xc_tune_t *tune)
{
    xcoll_status_t rc = XCOLL_OK;
    int r;
    if (o == NULL || t == NULL || (al == NULL && tune == NULL))
        return XCOLL_ERR_INVALID_ARG;
    t->P = o->P;
    t->s = calloc((size_t)o->P, sizeof(*t->s));
    if (t->s == NULL)
        return XCOLL_ERR_NO_MEMORY;
    for (r = 0; r < o->P && rc == XCOLL_OK; r++) {
        xc_coll_args_t a;
        args_for(o, t, r, &a);
        if (al != NULL) {
            rc = xc_sched_init(&t->s[r], r, o->P, o->dtype, o->op);
            t->s[r].algo = al->name;
            if (rc == XCOLL_OK)
                rc = al->build(&t->s[r], &a);
        } else {
            rc = xc_select_and_build(&t->s[r], &a, tune, r == 0 ? t->why : NULL,
                                     sizeof(t->why));
            /* every rank must reach the same algorithm, or nothing matches */
            if (rc == XCOLL_OK && strcmp(t->s[r].algo, t->s[0].algo) != 0) {
                fprintf(stderr, "xcoll-trace: rank %d chose %s, rank 0 %s\n", r, t->s[r].algo,
                        t->s[0].algo);
                rc = XCOLL_ERR_INTERNAL;
            }
        }
        if (rc == XCOLL_OK)
            rc = xc_sched_finish(&t->s[r]);
        else
            xc_sched_finish(&t->s[r]);
    }
    if (rc != XCOLL_OK)
        free_scheds(t);
    return rc;
}

typedef struct {
    int src, dst;
    uint32_t slot, gid;
} send_key_t;

static int cmp_send(const void *x, const void *y)
{
    const send_key_t *a = x, *b = y;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    return a->slot < b->slot ? -1 : a->slot > b->slot;
}

/* Pairs every send with its receive (the k-th send from A to B is the
 * k-th receive from A on B) and gives every step its columns: start = the
 * latest end of what it depends on; a receive ends when both it has
 * started and the message has arrived (sent at c, arrives at c+1); other
 * steps end where they start. Kahn's order over all ranks' steps at once,
 * since a rank's step order alone can wait on a peer that waits on it.
 * Returns 0, or -1 with err set when the schedules do not fit together. */
static int place_steps(trace_t *t, char *err, size_t errlen)
{
    send_key_t *sends = NULL;
    uint32_t nsends = 0, g, i, head = 0, tail = 0, done = 0;
    uint32_t *indeg = NULL, *queue = NULL;
    int *arrive = NULL, r, ok = -1;

    if (t == NULL || t->s == NULL || err == NULL)
        return -1;
    t->first = calloc((size_t)t->P + 1, sizeof(uint32_t));
    if (t->first == NULL)
        goto oom;
    for (r = 0; r < t->P; r++)
        t->first[r + 1] = t->first[r] + t->s[r].nsteps;
    t->total = t->first[t->P];
    t->rank_of = malloc(((size_t)t->total + 1) * sizeof(int));
    t->start = calloc((size_t)t->total + 1, sizeof(int));
    t->end = calloc((size_t)t->total + 1, sizeof(int));
    t->peer = malloc(((size_t)t->total + 1) * sizeof(int64_t));
    arrive = calloc((size_t)t->total + 1, sizeof(int));
    indeg = calloc((size_t)t->total + 1, sizeof(uint32_t));
    queue = malloc(((size_t)t->total + 1) * sizeof(uint32_t));
    sends = malloc(((size_t)t->total + 1) * sizeof(*sends));
    if (t->rank_of == NULL || t->start == NULL || t->end == NULL || t->peer == NULL ||
        arrive == NULL || indeg == NULL || queue == NULL || sends == NULL)
        goto oom;
    for (r = 0; r < t->P; r++)
        for (i = 0; i < t->s[r].nsteps; i++) {
            const xc_step_t *st = &t->s[r].steps[i];
            g = t->first[r] + i;
            t->rank_of[g] = r;
            t->peer[g] = -1;
            indeg[g] = st->ndeps;
            if (is_message(st) && st->kind == XC_STEP_SEND) {
                sends[nsends].src = r, sends[nsends].dst = st->peer;
                sends[nsends].slot = st->slot, sends[nsends++].gid = g;
            }
        }
    qsort(sends, nsends, sizeof(*sends), cmp_send);
    for (g = 0; g < t->total; g++) {
        const xc_step_t *st = step_of(t, g);
        send_key_t key, *hit;
        if (!is_message(st) || st->kind == XC_STEP_SEND)
            continue;
        key.src = st->peer, key.dst = t->rank_of[g], key.slot = st->slot;
        hit = bsearch(&key, sends, nsends, sizeof(*sends), cmp_send);
        if (hit == NULL || t->peer[hit->gid] >= 0 || step_of(t, hit->gid)->bytes != st->bytes) {
            snprintf(err, errlen, "rank %d's receive #%u from rank %d (%zu B) has %s", key.dst,
                     key.slot, key.src, st->bytes,
                     hit == NULL ? "no matching send" : "a send of another size");
            goto out;
        }
        t->peer[hit->gid] = g;
        t->peer[g] = hit->gid;
        indeg[g]++;
    }
    for (i = 0; i < nsends; i++)
        if (t->peer[sends[i].gid] < 0) {
            snprintf(err, errlen, "rank %d's send #%u to rank %d has no matching receive",
                     sends[i].src, sends[i].slot, sends[i].dst);
            goto out;
        }
    t->last_send = -1;
    for (g = 0; g < t->total; g++)
        if (indeg[g] == 0)
            queue[tail++] = g;
    while (head < tail) {
        const xc_step_t *st;
        const xc_sched_t *s;
        uint32_t c, li;
        g = queue[head++];
        done++;
        st = step_of(t, g);
        s = &t->s[t->rank_of[g]];
        li = g - t->first[t->rank_of[g]];
        t->end[g] = t->start[g];
        if (is_message(st) && st->kind != XC_STEP_SEND && arrive[g] > t->end[g])
            t->end[g] = arrive[g];
        if (t->end[g] > t->maxcol)
            t->maxcol = t->end[g];
        for (c = s->consumers_first[li]; c < s->consumers_first[li + 1]; c++) {
            uint32_t cg = t->first[t->rank_of[g]] + s->consumers[c];
            if (t->end[g] > t->start[cg])
                t->start[cg] = t->end[g];
            if (--indeg[cg] == 0)
                queue[tail++] = cg;
        }
        if (t->peer[g] >= 0 && st->kind == XC_STEP_SEND) {
            uint32_t rg = (uint32_t)t->peer[g];
            if (t->start[g] > t->last_send)
                t->last_send = t->start[g];
            arrive[rg] = t->start[g] + 1;
            if (--indeg[rg] == 0)
                queue[tail++] = rg;
        }
    }
    if (done != t->total) {
        snprintf(err, errlen, "the schedules wait on each other: %u of %u steps can never start",
                 t->total - done, t->total);
        goto out;
    }
    ok = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    free(sends);
    free(indeg);
    free(queue);
    free(arrive);
    return ok;
}

/* ------------------------------------------------------------ formulas */

/* docs/ALGORITHMS.md's M and B for one algorithm, evaluated. */
typedef struct {
    const char *m_text, *b_text;
    char params[200]; /* the symbols' values */
    int64_t m, b;
} formula_t;

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t lowbit(int64_t v) { return v & -v; }

static int64_t lg(int64_t x) /* ceil(log2 x) */
{
    int64_t k = 0;
    while (((int64_t)1 << k) < x)
        k++;
    return k;
}

/* Bytes of real rank q's block when count elements are cut into P
 * blocks, the first count mod P one element longer. */
static int64_t block_bytes(int64_t count, int64_t P, int64_t q, int64_t ds)
{
    return (count / P + (q < count % P ? 1 : 0)) * ds;
}

/* The binomial tree over virtual ranks v = (rank - root) mod P:
 * m_tree = Σ_v (1 + [v < w < v + sub(v)]), w = (P - root) mod P,
 * sub(v) = min(lowbit(v), P - v); *subs = Σ_v sub(v); *sub_bytes = Σ_v
 * bytes(blocks of subtree(v)) with uneven blocks of count elements. */
static void tree_sums(int64_t P, int64_t root, int64_t count, int64_t ds, int64_t *m_tree,
                      int64_t *subs, int64_t *sub_bytes)
{
    const int64_t w = (P - root) % P;
    int64_t v, u;
    *m_tree = *subs = *sub_bytes = 0;
    for (v = 1; v < P; v++) {
        int64_t sub = imin(lowbit(v), P - v);
        *m_tree += 1 + (v < w && w < v + sub ? 1 : 0);
        *subs += sub;
        for (u = v; u < v + sub; u++)
            *sub_bytes += block_bytes(count, P, (u + root) % P, ds);
    }
}

#define KIB ((int64_t)1024)

/* Returns 0 when ALGORITHMS.md has no formula for the algorithm. */
static int formula(const opts_t *o, const char *algo, formula_t *f)
{
    int64_t P, n, count, ds, L, p2 = 1, log2p2 = 0, rem, S, H, mt, subs, sb, i, pop = 0, N;
    int64_t sq = 0;
    xc_coll_t c;
#define IS(coll_, name_) (c == (coll_) && strcmp(algo, (name_)) == 0)
#define PARAMS(...) snprintf(f->params, sizeof(f->params), __VA_ARGS__)

    if (o == NULL || algo == NULL || f == NULL)
        return 0;
    memset(f, 0, sizeof(*f));
    P = o->P, n = (int64_t)o->n, count = (int64_t)o->count, c = o->coll;
    ds = (int64_t)xcoll_dtype_size(o->dtype), L = lg(P);
    while (p2 * 2 <= P)
        p2 *= 2, log2p2++;
    rem = P - p2;

    if (IS(XC_COLL_ALLREDUCE, "ring")) {
        S = imin(4, imax(1, cdiv(cdiv(count, P) * ds, 128 * KIB)));
        f->m_text = "2P(P-1)S, S = min(4, max(1, ceil(ceil(count/P)*size / 128k)))";
        f->b_text = "2(P-1)n";
        f->m = 2 * P * (P - 1) * S, f->b = 2 * (P - 1) * n;
        PARAMS("S = %lld", (long long)S);
    } else if (IS(XC_COLL_ALLREDUCE, "recdbl") || IS(XC_COLL_REDUCE_SCATTER, "rechalving")) {
        f->m_text = "2rem + p2*log2(p2)";
        f->m = 2 * rem + p2 * log2p2;
        if (c == XC_COLL_ALLREDUCE)
            f->b_text = "(2rem + p2*log2(p2))n", f->b = f->m * n;
        else
            f->b_text = "P(P-1)n + rem*n", f->b = P * (P - 1) * n + rem * n;
        PARAMS("p2 = %lld, rem = %lld", (long long)p2, (long long)rem);
    } else if (IS(XC_COLL_ALLREDUCE, "rabenseifner")) {
        f->m_text = "2rem + 2p2*log2(p2)", f->b_text = "(2rem + 2(p2-1))n";
        f->m = 2 * rem + 2 * p2 * log2p2, f->b = (2 * rem + 2 * (p2 - 1)) * n;
        PARAMS("p2 = %lld, rem = %lld", (long long)p2, (long long)rem);
    } else if (IS(XC_COLL_ALLREDUCE, "reduce_bcast") || IS(XC_COLL_BCAST, "binomial") ||
               IS(XC_COLL_REDUCE, "binomial")) {
        int64_t k = c == XC_COLL_ALLREDUCE ? 2 : 1;
        S = imin(4 * L, imax(1, cdiv(n, 128 * KIB)));
        f->m_text = k == 2 ? "2(P-1)S, S = min(4L, max(1, ceil(n / 128k)))"
                           : "(P-1)S, S = min(4L, max(1, ceil(n / 128k)))";
        f->b_text = k == 2 ? "2(P-1)n" : "(P-1)n";
        f->m = k * (P - 1) * S, f->b = k * (P - 1) * n;
        PARAMS("L = %lld, S = %lld", (long long)L, (long long)S);
    } else if (IS(XC_COLL_ALLREDUCE, "dbtree") || IS(XC_COLL_BCAST, "dbtree")) {
        int64_t k = c == XC_COLL_ALLREDUCE ? 2 : 1;
        H = count == 0 ? 0 : count == 1 ? 1 : 2;
        S = imax(1, cdiv(cdiv(count, 2) * ds, 64 * KIB));
#define DBTREE_HS "H = non-empty halves, S = max(1, ceil(ceil(count/2)*size / 64k))"
        f->m_text = k == 2 ? "2(P-1)HS, " DBTREE_HS : "(P-1)HS, " DBTREE_HS;
#undef DBTREE_HS
        f->b_text = k == 2 ? "2(P-1)n" : "(P-1)n";
        f->m = k * (P - 1) * H * S, f->b = k * (P - 1) * n;
        PARAMS("H = %lld, S = %lld", (long long)H, (long long)S);
    } else if (IS(XC_COLL_ALLREDUCE, "hier") || IS(XC_COLL_BCAST, "hier")) {
        int64_t k = c == XC_COLL_ALLREDUCE ? 2 : 1;
        S = imax(1, cdiv(n, 128 * KIB));
        f->m_text = k == 2 ? "2(P-1)S, S = max(1, ceil(n / 128k)); 0 when count = 0"
                           : "(P-1)S, S = max(1, ceil(n / 128k)); 0 when count = 0";
        f->b_text = k == 2 ? "2(P-1)n" : "(P-1)n";
        f->m = count == 0 ? 0 : k * (P - 1) * S, f->b = k * (P - 1) * n;
        PARAMS("S = %lld", (long long)S);
    } else if (IS(XC_COLL_ALLREDUCE, "hier2d")) {
        /* N nodes of L = K ranks each (it declines otherwise) */
        int64_t K = o->per_node > 0 ? o->per_node : P;
        N = cdiv(P, K);
        S = imax(imin(8, imax(1, cdiv(n, 512 * KIB))), cdiv(n, 8 * 1024 * KIB));
        f->m_text = "2SP(L-1 + N-1), S = max(min(8, max(1, ceil(n / 512k))), ceil(n / 8m)); "
                    "0 when count = 0";
        f->b_text = "2(P-1)n";
        f->m = count == 0 ? 0 : 2 * S * P * (K - 1 + N - 1), f->b = 2 * (P - 1) * n;
        PARAMS("L = %lld, N = %lld, S = %lld", (long long)K, (long long)N, (long long)S);
    } else if (IS(XC_COLL_ALLREDUCE, "direct") || IS(XC_COLL_ALLGATHER, "direct") ||
               IS(XC_COLL_REDUCE_SCATTER, "direct") || IS(XC_COLL_ALLTOALL, "pairwise")) {
        f->m_text = "P(P-1)", f->b_text = "P(P-1)n";
        f->m = P * (P - 1), f->b = P * (P - 1) * n;
    } else if (IS(XC_COLL_BCAST, "chain")) {
        S = imax(1, imax(imin(cdiv(n, 128 * KIB), 4 * (P - 1)), imin(cdiv(n, 16 * KIB), P - 1)));
        f->m_text = "(P-1)S, S = max(1, min(ceil(n/128k), 4(P-1)), min(ceil(n/16k), P-1)); "
                    "0 when count = 0";
        f->b_text = "(P-1)n";
        f->m = count == 0 ? 0 : (P - 1) * S, f->b = (P - 1) * n;
        PARAMS("S = %lld", (long long)S);
    } else if (IS(XC_COLL_BCAST, "scatter_allgather") || IS(XC_COLL_REDUCE, "rsg")) {
        tree_sums(P, o->root, count, ds, &mt, &subs, &sb);
        S = imax(1, cdiv(cdiv(count, P) * ds, 128 * KIB));
        f->m_text = c == XC_COLL_BCAST
                        ? "m_tree + P(P-1)S, S = max(1, ceil(ceil(count/P)*size / 128k)); "
                          "0 when count = 0"
                        : "m_tree + P(P-1)S, S = max(1, ceil(ceil(count/P)*size / 128k))";
        f->b_text = "sum_v bytes(blocks of subtree(v)) + (P-1)n";
        f->m = c == XC_COLL_BCAST && count == 0 ? 0 : mt + P * (P - 1) * S;
        f->b = sb + (P - 1) * n;
        PARAMS("m_tree = %lld, S = %lld, subtree bytes = %lld", (long long)mt, (long long)S,
               (long long)sb);
    } else if (IS(XC_COLL_BCAST, "linear") || IS(XC_COLL_REDUCE, "linear") ||
               IS(XC_COLL_GATHER, "linear") || IS(XC_COLL_SCATTER, "linear")) {
        f->m_text = "P-1", f->b_text = "(P-1)n";
        f->m = P - 1, f->b = (P - 1) * n;
    } else if (IS(XC_COLL_ALLGATHER, "ring") || IS(XC_COLL_REDUCE_SCATTER, "ring")) {
        S = imin(4, imax(1, cdiv(n, 128 * KIB)));
        f->m_text = "P(P-1)S, S = min(4, max(1, ceil(n / 128k)))", f->b_text = "P(P-1)n";
        f->m = P * (P - 1) * S, f->b = P * (P - 1) * n;
        PARAMS("S = %lld", (long long)S);
    } else if (IS(XC_COLL_ALLGATHER, "recdbl")) {
        f->m_text = "3rem + p2*log2(p2)", f->b_text = "P(P-1)n";
        f->m = 3 * rem + p2 * log2p2, f->b = P * (P - 1) * n;
        PARAMS("p2 = %lld, rem = %lld", (long long)p2, (long long)rem);
    } else if (IS(XC_COLL_ALLGATHER, "bruck")) {
        f->m_text = "P*L", f->b_text = "P(P-1)n";
        f->m = P * L, f->b = P * (P - 1) * n;
        PARAMS("L = %lld", (long long)L);
    } else if (IS(XC_COLL_ALLTOALL, "bruck")) {
        for (i = 1; i < P; i++)
            pop += __builtin_popcountll((unsigned long long)i);
        f->m_text = "P*L", f->b_text = "P*n*sum_{i=1}^{P-1} popcount(i)";
        f->m = P * L, f->b = P * n * pop;
        PARAMS("L = %lld, sum popcount = %lld", (long long)L, (long long)pop);
    } else if (IS(XC_COLL_ALLTOALL, "hier")) {
        /* nodes of K consecutive ranks, the last one possibly smaller */
        int64_t K = o->per_node > 0 ? o->per_node : P;
        N = cdiv(P, K);
        for (i = 0; i < N; i++)
            sq += imin(K, P - i * K) * imin(K, P - i * K);
        f->m_text = "2(P-N) + N(N-1); 0 when count = 0";
        f->b_text = "2(P-N)*P*n + (P^2 - sum_i L_i^2)n";
        f->m = count == 0 ? 0 : 2 * (P - N) + N * (N - 1);
        f->b = 2 * (P - N) * P * n + (P * P - sq) * n;
        PARAMS("N = %lld, sum L_i^2 = %lld", (long long)N, (long long)sq);
    } else if (IS(XC_COLL_GATHER, "binomial") || IS(XC_COLL_SCATTER, "binomial")) {
        tree_sums(P, o->root, count, ds, &mt, &subs, &sb);
        f->m_text = "sum_v (1 + [v < w < v + sub(v)]), w = (P - root) mod P";
        f->b_text = "sum_v min(lowbit(v), P-v)*n";
        f->m = mt, f->b = subs * n;
    } else if (IS(XC_COLL_BARRIER, "dissemination")) {
        f->m_text = "P*L", f->b_text = "0";
        f->m = P * L;
        PARAMS("L = %lld", (long long)L);
    } else if (IS(XC_COLL_BARRIER, "tree")) {
        f->m_text = "2(P-1)", f->b_text = "0";
        f->m = 2 * (P - 1);
    } else if (IS(XC_COLL_BARRIER, "direct")) {
        f->m_text = "P(P-1)", f->b_text = "0";
        f->m = P * (P - 1);
    } else if (c == XC_COLL_ALLGATHERV) { /* ring, recdbl, direct alike */
        f->m_text = "(P-1)(non-empty blocks)", f->b_text = "(P-1)N, N = P*n (equal blocks)";
        f->m = (P - 1) * (n > 0 ? P : 0), f->b = (P - 1) * P * n;
    } else if (c == XC_COLL_ALLTOALLV) { /* pairwise, scattered alike */
        f->m_text = "non-empty off-diagonal blocks", f->b_text = "sum_{i!=j} n_ij";
        f->m = n > 0 ? P * (P - 1) : 0, f->b = P * (P - 1) * n;
    } else if (c == XC_COLL_GATHERV || c == XC_COLL_SCATTERV) {
        f->m_text = "non-empty blocks of ranks other than the root";
        f->b_text = "sum_{j!=root} n_j";
        f->m = n > 0 ? P - 1 : 0, f->b = (P - 1) * n;
    } else {
        return 0;
    }
    return 1;
#undef IS
#undef PARAMS
}

/* ------------------------------------------------------------ text */

static const char *buf_name(int b)
{
    return b == XC_BUF_SEND ? "send" : b == XC_BUF_RECV ? "recv" : b == XC_BUF_TMP ? "tmp" : "?";
}

/* "recv[256k,512k)": a block, as a byte range of a buffer. */
static void range_text(xc_ref_t ref, size_t bytes, char *buf, size_t len)
{
    char lo[32], hi[32];
    xc_tune_size_text(ref.off, lo, sizeof(lo));
    xc_tune_size_text(ref.off + bytes, hi, sizeof(hi));
    snprintf(buf, len, "%s[%s,%s)", buf_name(ref.buf), lo, hi);
}

/* What the diagram and the listing show: messages (by their send) and the
 * local steps that touch data (not the zero-byte joins of compositions). */
static int is_event(const xc_step_t *st)
{
    if (is_message(st))
        return st->kind == XC_STEP_SEND;
    return (st->kind == XC_STEP_COPY || st->kind == XC_STEP_REDUCE ||
            st->kind == XC_STEP_DIVIDE) && st->bytes > 0;
}

static const trace_t *sort_trace; /* qsort has no context argument */

static int cmp_event(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    const trace_t *t = sort_trace;
    if (t->start[a] != t->start[b])
        return t->start[a] < t->start[b] ? -1 : 1;
    if (t->rank_of[a] != t->rank_of[b])
        return t->rank_of[a] < t->rank_of[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The events in column order, then rank, then schedule order. */
static uint32_t *sorted_events(const trace_t *t, uint32_t *nev)
{
    uint32_t g, n = 0, *ev = malloc(((size_t)t->total + 1) * sizeof(uint32_t));
    if (ev == NULL)
        return NULL;
    for (g = 0; g < t->total; g++)
        if (is_event(step_of(t, g)))
            ev[n++] = g;
    sort_trace = t;
    qsort(ev, n, sizeof(*ev), cmp_event);
    *nev = n;
    return ev;
}

static void print_event(const trace_t *t, uint32_t g, const char *op)
{
    const xc_step_t *st = step_of(t, g);
    char a[96], b[96], d[96], sz[32];
    int r = t->rank_of[g];
    if (st->kind == XC_STEP_SEND) {
        const xc_step_t *rv = step_of(t, (uint32_t)t->peer[g]);
        range_text(st->a, st->bytes, a, sizeof(a));
        range_text(rv->dst, rv->bytes, d, sizeof(d));
        xc_tune_size_text(st->bytes, sz, sizeof(sz));
        printf("  r%-3d -> r%-3d %-24s %6s B -> %s", r, st->peer, a, sz, d);
        if (rv->kind == XC_STEP_RECV_REDUCE) {
            range_text(rv->a, rv->bytes, b, sizeof(b));
            if (rv->a.buf == rv->dst.buf && rv->a.off == rv->dst.off)
                printf(", reduced (%s)", op);
            else
                printf(" = %s %s %s", rv->msg_left ? "it" : b, op, rv->msg_left ? b : "it");
        }
        if (t->end[t->peer[g]] != t->start[g] + 1)
            printf("  (received in column %d)", t->end[t->peer[g]]);
        printf("\n");
        return;
    }
    range_text(st->dst, st->bytes, d, sizeof(d));
    range_text(st->a, st->bytes, a, sizeof(a));
    range_text(st->b, st->bytes, b, sizeof(b));
    if (st->kind == XC_STEP_COPY)
        printf("  r%-3d copy   %s -> %s\n", r, a, d);
    else if (st->kind == XC_STEP_REDUCE)
        printf("  r%-3d reduce %s = %s %s %s\n", r, d, a, op, b);
    else
        printf("  r%-3d divide %s by %u\n", r, d, t->s[r].divisor);
}

static void print_listing(const trace_t *t, const uint32_t *ev, uint32_t nev)
{
    uint32_t i;
    int col = -1;
    for (i = 0; i < nev; i++) {
        if (t->start[ev[i]] != col) {
            col = t->start[ev[i]];
            printf("column %d\n", col);
        }
        /* AVG combines by summing; its divide steps are listed */
        print_event(t, ev[i], xcoll_op_name(t->s[0].op == XCOLL_AVG ? XCOLL_SUM : t->s[0].op));
    }
}

/* ------------------------------------------------------------ SVG */

static void xml_text(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A saturated colour of hue h (degrees), as #rrggbb. */
static void hue_color(double h, char *buf, size_t len)
{
    const double s = 0.8, v = 0.75, c = v * s;
    double hp = (h < 0 ? 0 : h) / 60.0, r = 0, g = 0, b = 0, m = v - c;
    double d = hp - 2.0 * (double)(int)(hp / 2.0) - 1.0; /* (hp mod 2) - 1 */
    double x = c * (1.0 - (d < 0 ? -d : d));
    int k = (int)hp % 6;
    switch (k) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
    }
    snprintf(buf, len, "#%02x%02x%02x", (unsigned)((r + m) * 255.0 + 0.5),
             (unsigned)((g + m) * 255.0 + 0.5), (unsigned)((b + m) * 255.0 + 0.5));
}

static int cmp_size(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return a < b ? -1 : a > b;
}

/* Ranks as rows, columns as in the listing; an arrow per message from the
 * sender's row at its column to the receiver's at the column it is
 * received in, coloured by the block's offset (one hue per distinct
 * offset, in offset order, so a ring's blocks get a hue each); a circle
 * where the receiver reduces it, a square for a local copy, a diamond for
 * a local reduction. Returns 0, or -1 when the file cannot be written. */
static int write_svg(const char *path, const trace_t *t, const uint32_t *ev, uint32_t nev,
                     const char *title)
{
    const int left = 50, top = 44, cw = 48, rh = 28;
    const int ncols = t->maxcol + 1;
    const int width = left + ncols * cw + 20 < 640 ? 640 : left + ncols * cw + 20; /* legend */
    const int height = top + t->P * rh + 86;
    size_t *offs = NULL, noffs = 0, k;
    uint32_t i;
    int c, r, bad;
    FILE *f;

    if (path == NULL || t == NULL || (ev == NULL && nev > 0) || title == NULL)
        return -1;
    offs = malloc(((size_t)nev + 1) * sizeof(size_t));
    f = fopen(path, "w");
    if (f == NULL || offs == NULL) {
        if (f != NULL)
            fclose(f);
        free(offs);
        return -1;
    }
    for (i = 0; i < nev; i++)
        if (step_of(t, ev[i])->kind == XC_STEP_SEND)
            offs[noffs++] = step_of(t, ev[i])->a.off;
    qsort(offs, noffs, sizeof(*offs), cmp_size);
    for (i = 0, k = 0; i < noffs; i++) /* distinct offsets */
        if (k == 0 || offs[k - 1] != offs[i])
            offs[k++] = offs[i];
    noffs = k;

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"11\">\n<title>",
            width, height, width, height);
    xml_text(f, title);
    fprintf(f, "</title>\n<defs><marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
               "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 "
               "z\" fill=\"#333\"/></marker></defs>\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"8\" y=\"16\" font-size=\"13\">");
    xml_text(f, title);
    fprintf(f, "</text>\n");
    for (c = 0; c < ncols; c++) {
        int x = left + c * cw + cw / 2;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eeeeee\"/>"
                   "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#888888\">%d</text>\n",
                x, top - 6, x, top + t->P * rh, x, top - 10, c);
    }
    for (r = 0; r < t->P; r++) {
        int y = top + r * rh + rh / 2;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#cccccc\"/>"
                   "<text x=\"8\" y=\"%d\">r%d</text>\n",
                left, y, width - 20, y, y + 4, r);
    }
    for (i = 0; i < nev; i++) {
        const xc_step_t *st = step_of(t, ev[i]);
        int x = left + t->start[ev[i]] * cw + cw / 2;
        int y = top + t->rank_of[ev[i]] * rh + rh / 2;
        char tip[256], a[96], d[96], color[16];
        if (st->kind == XC_STEP_SEND) {
            uint32_t rg = (uint32_t)t->peer[ev[i]];
            const xc_step_t *rv = step_of(t, rg);
            const size_t *hit = bsearch(&st->a.off, offs, noffs, sizeof(*offs), cmp_size);
            int x2 = left + t->end[rg] * cw + cw / 2, y2 = top + t->rank_of[rg] * rh + rh / 2;
            hue_color(hit == NULL ? 0 : 330.0 * (double)(hit - offs) / (double)noffs, color,
                      sizeof(color));
            range_text(st->a, st->bytes, a, sizeof(a));
            range_text(rv->dst, rv->bytes, d, sizeof(d));
            snprintf(tip, sizeof(tip), "column %d: r%d %s -> r%d %s%s", t->start[ev[i]],
                     t->rank_of[ev[i]], a, st->peer, d,
                     rv->kind == XC_STEP_RECV_REDUCE ? ", reduced" : "");
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                       "stroke-width=\"1.5\" marker-end=\"url(#head)\"><title>",
                    x, y, x2, y2, color);
            xml_text(f, tip);
            fprintf(f, "</title></line>\n");
            if (rv->kind == XC_STEP_RECV_REDUCE)
                fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"white\" stroke=\"%s\" "
                           "stroke-width=\"1.5\"/>\n", x2, y2, color);
        } else if (st->kind == XC_STEP_COPY) {
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"7\" height=\"7\" fill=\"none\" "
                       "stroke=\"#555555\"/>\n", x - 3, y - 3);
        } else {
            fprintf(f, "<path d=\"M%d,%d l4,4 l-4,4 l-4,-4 z\" fill=\"#555555\"/>\n", x, y - 4);
        }
    }
    fprintf(f, "<text x=\"8\" y=\"%d\">", top + t->P * rh + 20);
    xml_text(f, "Rows: ranks. Columns: dependency depth; a message sent in column c arrives "
                "in c+1 or later.");
    fprintf(f, "</text>\n<text x=\"8\" y=\"%d\">", top + t->P * rh + 36);
    xml_text(f, "Arrow: a message, sender -> receiver; colour: the block's offset in its "
                "buffer.");
    fprintf(f, "</text>\n<text x=\"8\" y=\"%d\">", top + t->P * rh + 52);
    xml_text(f, "Circle: received and reduced; square: local copy; diamond: local reduce or "
                "divide.");
    fprintf(f, "</text>\n</svg>\n");
    bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    free(offs);
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------ main */

static int bad_usage(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "xcoll-trace: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(xcoll-trace -h for usage)\n");
    return 2;
}

/* The command line into o; 0, or the exit status (2 bad usage, 0 after
 * -h or --list). */
static int parse_args(int argc, char **argv, opts_t *o, int *done)
{
    const char *coll = NULL, *algo = NULL, *bytes = NULL, *dtype = NULL;
    char err[256], list[512];
    int i, c, ranks_given = 0, op_given = 0;

    memset(o, 0, sizeof(*o));
    *done = 0;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            *done = 1;
            return 0;
        } else if (strcmp(arg, "--list") == 0) {
            list_algorithms();
            *done = 1;
            return 0;
        } else if (strcmp(arg, "-q") == 0) {
            o->quiet = 1, takes = 0;
        } else if (arg[0] == '-' && val == NULL) {
            return bad_usage("%s needs a value%s", arg, "");
        } else if (strcmp(arg, "--ranks") == 0 || strcmp(arg, "-n") == 0) {
            if (tool_parse_int(val, 1, MAX_RANKS, &o->P) != 0)
                return bad_usage("--ranks %s: expected 1 to 1024%s", val, "");
            ranks_given = 1;
        } else if (strcmp(arg, "--bytes") == 0 || strcmp(arg, "-b") == 0) {
            bytes = val;
        } else if (strcmp(arg, "--algo") == 0 || strcmp(arg, "-a") == 0) {
            algo = val;
        } else if (strcmp(arg, "--root") == 0) {
            if (tool_parse_int(val, 0, MAX_RANKS - 1, &o->root) != 0)
                return bad_usage("--root %s: expected a rank%s", val, "");
            o->root_given = 1;
        } else if (strcmp(arg, "--dtype") == 0) {
            dtype = val;
        } else if (strcmp(arg, "--op") == 0) {
            if ((c = tool_op_from_name(val)) < 0)
                return bad_usage("--op %s: unknown operator (sum, prod, min, max, avg, band, "
                                 "bor, bxor)%s", val, "");
            o->op = (xcoll_op_t)c, op_given = 1;
        } else if (strcmp(arg, "--per-node") == 0) {
            if (tool_parse_int(val, 1, MAX_RANKS, &o->per_node) != 0)
                return bad_usage("--per-node %s: expected a rank count >= 1%s", val, "");
        } else if (strcmp(arg, "--svg") == 0) {
            o->svg = val;
        } else if (arg[0] == '-' || coll != NULL) {
            return bad_usage("unexpected argument \"%s\"%s", arg, "");
        } else {
            coll = arg, takes = 0;
        }
        i += takes;
    }
    if (coll == NULL)
        return bad_usage("no collective given%s%s", "", "");
    c = tool_coll_from_name(coll);
    if (c < 0) {
        size_t n = 0;
        for (c = 0; c < XC_COLL_COUNT; c++)
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", c ? ", " : "",
                                  xc_coll_name((xc_coll_t)c));
        return bad_usage("unknown collective \"%s\"; the collectives: %s", coll, list);
    }
    o->coll = (xc_coll_t)c;
    if (!ranks_given)
        return bad_usage("--ranks P is missing%s%s", "", "");
    if (algo != NULL) {
        o->algo = xc_algo_find(o->coll, algo);
        if (o->algo == NULL || o->algo == &xc_algo_mpi) {
            algorithms_of(o->coll, list, sizeof(list));
            fprintf(stderr, "xcoll-trace: %s has no algorithm \"%s\"; its algorithms: %s\n",
                    coll, algo, list);
            return 2;
        }
    }
    if (bytes == NULL && o->coll != XC_COLL_BARRIER)
        return bad_usage("--bytes N is missing%s%s", "", "");
    if (bytes != NULL && tool_parse_size(bytes, &o->n) != 0)
        return bad_usage("--bytes %s: expected a byte count, optionally with k, m or g "
                         "(KiB, MiB, GiB)%s", bytes, "");
    if (o->n > MAX_BYTES)
        return bad_usage("--bytes %s: at most 16g%s", bytes, "");
    if (o->coll == XC_COLL_BARRIER && o->n > 0) {
        fprintf(stderr, "xcoll-trace: a barrier moves no data: --bytes ignored\n");
        o->n = 0;
    }
    if (dtype == NULL) {
        o->dtype = o->n % 4 == 0 ? XCOLL_FLOAT32 : XCOLL_UINT8;
    } else {
        c = tool_dtype_from_name(dtype);
        if (c < 0)
            return bad_usage("--dtype %s: unknown type (int8, uint8, int32, uint32, int64, "
                             "uint64, float16, bfloat16, float32, float64)%s", dtype, "");
        o->dtype = (xcoll_dtype_t)c;
        if (o->n % xcoll_dtype_size(o->dtype) != 0)
            return bad_usage("--bytes %s is not a whole number of %s elements", bytes, dtype);
    }
    o->count = o->n / xcoll_dtype_size(o->dtype);
    if (op_given && o->coll != XC_COLL_ALLREDUCE && o->coll != XC_COLL_REDUCE &&
        o->coll != XC_COLL_REDUCE_SCATTER)
        return bad_usage("--op: %s does not reduce%s", coll, "");
    if (o->op >= XCOLL_BAND && o->dtype >= XCOLL_FLOAT16)
        return bad_usage("--op %s needs an integer --dtype, not %s", xcoll_op_name(o->op),
                         xcoll_dtype_name(o->dtype));
    if (o->root_given && !is_rooted(o->coll))
        return bad_usage("--root: %s has no root%s", coll, "");
    if (o->root >= o->P) {
        snprintf(err, sizeof(err), "%d", o->P);
        return bad_usage("--root must be below --ranks (%s)%s", err, "");
    }
    return 0;
}

/* The algorithms of o's collective that accept its case, for an error. */
static void accepting(const opts_t *o, trace_t *t, char *buf, size_t len)
{
    size_t i, n = 0;
    buf[0] = '\0';
    for (i = 0; i < xc_num_algorithms && n < len; i++) {
        if (xc_algorithms[i].coll != o->coll)
            continue;
        if (build_all(o, t, &xc_algorithms[i], NULL) == XCOLL_OK) {
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
                                  xc_algorithms[i].name);
            free_scheds(t);
        }
    }
    if (n == 0)
        snprintf(buf, len, "none");
}

static void free_trace(trace_t *t)
{
    free_scheds(t);
    xc_topo_free(t->topo);
    free(t->vcounts);
    free(t->vdispls);
    free(t->first);
    free(t->rank_of);
    free(t->start);
    free(t->end);
    free(t->peer);
}

/* "= ok" or "!= MISMATCH" after a measured total and its formula. */
static int print_total(const char *what, long long got, const char *text, const char *params,
                       long long want)
{
    printf("  %-10s %14lld   ALGORITHMS.md: %s%s%s%s = %lld   %s\n", what, got, text,
           params[0] ? " [" : "", params, params[0] ? "]" : "", want,
           got == want ? "= ok" : "!= MISMATCH");
    return got == want ? 0 : 1;
}

int main(int argc, char **argv)
{
    opts_t o;
    trace_t t;
    xc_tune_t *tune = NULL;
    formula_t f;
    char err[512], title[512], nsz[32], list[256];
    uint32_t *ev = NULL, nev = 0, i, nmsg = 0;
    long long bytes = 0, *per_rank = NULL, maxr = 0;
    int done, rc, r, status = 0, maxrank = 0;
    xcoll_status_t st;
    const char *algo;

    xc_log_init();
    rc = parse_args(argc, argv, &o, &done);
    if (rc != 0 || done)
        return rc;
    memset(&t, 0, sizeof(t));
    t.P = o.P;
    if (o.per_node > 0 && xc_topo_from_ranks_per_node(o.P, o.per_node, &t.topo) != XCOLL_OK) {
        fprintf(stderr, "xcoll-trace: cannot make nodes of %d ranks\n", o.per_node);
        return 2;
    }
    if (xc_coll_is_vector(o.coll)) {
        t.vcounts = malloc((size_t)o.P * sizeof(size_t));
        t.vdispls = malloc((size_t)o.P * sizeof(size_t));
        if (t.vcounts == NULL || t.vdispls == NULL) {
            fprintf(stderr, "xcoll-trace: out of memory\n");
            free_trace(&t);
            return 1;
        }
        for (r = 0; r < o.P; r++)
            t.vcounts[r] = o.count, t.vdispls[r] = (size_t)r * o.count;
    }
    if (o.algo == NULL && xc_tune_load(&tune, NULL, NULL, err, sizeof(err)) != XCOLL_OK) {
        fprintf(stderr, "xcoll-trace: the selection table: %s\n", err);
        free_trace(&t);
        return 2;
    }
    xc_tune_size_text(o.n, nsz, sizeof(nsz));
    st = build_all(&o, &t, o.algo, tune);
    if (st == XCOLL_ERR_UNSUPPORTED) {
        accepting(&o, &t, list, sizeof(list));
        fprintf(stderr, "xcoll-trace: %s declines %s of %s B on %d ranks%s; algorithms that "
                "accept it: %s\n", o.algo ? o.algo->name : "every algorithm",
                xc_coll_name(o.coll), nsz, o.P,
                o.per_node ? "" : " (hier needs --per-node)", list);
        xc_tune_free(tune);
        free_trace(&t);
        return 2;
    }
    xc_tune_free(tune);
    if (st != XCOLL_OK) {
        fprintf(stderr, "xcoll-trace: building the schedules failed: %s\n", xcoll_strerror(st));
        free_trace(&t);
        return 1;
    }
    if (place_steps(&t, err, sizeof(err)) != 0) {
        fprintf(stderr, "xcoll-trace: %s\n", err);
        free_trace(&t);
        return 1;
    }
    algo = t.s[0].algo;
    ev = sorted_events(&t, &nev);
    per_rank = calloc((size_t)o.P, sizeof(long long));
    if (ev == NULL || per_rank == NULL) {
        fprintf(stderr, "xcoll-trace: out of memory\n");
        free(ev);
        free(per_rank);
        free_trace(&t);
        return 1;
    }
    for (i = 0; i < nev; i++) {
        const xc_step_t *s = step_of(&t, ev[i]);
        if (s->kind != XC_STEP_SEND)
            continue;
        nmsg++;
        bytes += (long long)s->bytes;
        per_rank[t.rank_of[ev[i]]] += (long long)s->bytes;
    }
    for (r = 0; r < o.P; r++)
        if (per_rank[r] > maxr)
            maxr = per_rank[r], maxrank = r;
    if (o.svg != NULL && (o.P > SVG_MAX_RANKS || t.maxcol + 1 > SVG_MAX_COLUMNS ||
                          nmsg > SVG_MAX_MESSAGES)) {
        fprintf(stderr, "xcoll-trace: --svg: %d ranks, %d columns, %u messages is too large to "
                "draw (at most %d ranks, %d columns, %d messages)\n", o.P, t.maxcol + 1, nmsg,
                SVG_MAX_RANKS, SVG_MAX_COLUMNS, SVG_MAX_MESSAGES);
        free(ev);
        free(per_rank);
        free_trace(&t);
        return 2;
    }

    snprintf(title, sizeof(title), "%s on %d ranks, n = %s, algorithm %.64s",
             xc_coll_name(o.coll), o.P, nsz, algo);
    if (is_rooted(o.coll))
        snprintf(title + strlen(title), sizeof(title) - strlen(title), ", root %d", o.root);
    printf("%s\n", title);
    printf("  n = %zu B = %zu x %s, %s%s\n", o.n, o.count, xcoll_dtype_name(o.dtype),
           o.coll == XC_COLL_BARRIER ? "no data"
           : is_vector_arg(o.coll)   ? "the vector"
                                     : "one rank's block",
           xc_coll_is_vector(o.coll) && o.coll != XC_COLL_BARRIER ? " (every block the same)"
                                                                  : "");
    if (o.algo != NULL)
        printf("  algorithm forced by --algo\n");
    else
        printf("  chosen by the selection table: %s\n", t.why);
    if (t.topo != NULL)
        printf("  nodes of %d consecutive ranks (--per-node): %d nodes\n", o.per_node,
               t.topo->nnodes);
    if (!o.quiet) {
        printf("A step is in the first column after everything it waits for; a message sent\n"
               "in column c arrives in c+1 at the earliest. Lines: sender -> receiver, the\n"
               "block sent, its size, where it lands; local copies, reductions, divisions.\n");
        print_listing(&t, ev, nev);
    }
    printf("totals (the algorithm's messages; the acknowledgements a real run adds after "
           "messages above 8k are not counted, as in docs/ALGORITHMS.md)\n");
    if (t.last_send >= 0)
        printf("  %-10s %14d   (messages leave in columns 0..%d)\n", "columns", t.last_send + 1,
               t.last_send);
    else
        printf("  %-10s %14d   (no messages)\n", "columns", 0);
    if (formula(&o, algo, &f)) {
        status |= print_total("messages M", (long long)nmsg, f.m_text, f.params, f.m);
        status |= print_total("bytes B", bytes, f.b_text, "", f.b);
    } else {
        printf("  %-10s %14u   (docs/ALGORITHMS.md has no formula for %s %s)\n", "messages M",
               nmsg, xc_coll_name(o.coll), algo);
        printf("  %-10s %14lld\n", "bytes B", bytes);
        status = 1;
    }
    printf("  %-10s %14lld   (rank %d; not checked: the per-rank figures of "
           "docs/ALGORITHMS.md are approximate)\n", "max/rank", maxr, maxrank);
    if (o.svg != NULL) {
        if (write_svg(o.svg, &t, ev, nev, title) != 0) {
            fprintf(stderr, "xcoll-trace: cannot write %s\n", o.svg);
            status = 1;
        } else {
            printf("diagram: %s\n", o.svg);
        }
    }
    free(ev);
    free(per_rank);
    free_trace(&t);
    return status;
}
