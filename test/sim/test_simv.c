/* The simulator for the v-variants (allgatherv, alltoallv, gatherv,
 * scatterv): every algorithm's schedules for all ranks of a virtual
 * communicator, run by the real engine over the loopback transport, with
 * counts and displacements as MPI allows them and as programs write them:
 * uneven, zero for some ranks or all, blocks laid out in rank order, in
 * reverse, shuffled with gaps; in place and out of place; messages
 * delivered at once or late and out of order.
 *
 * Checked exactly: every received block, every element around the blocks
 * untouched, send buffers unchanged, nothing left unmatched, and the
 * messages and bytes on the wire against the formulas of docs/ALGORITHMS.md
 * (an empty block is never a message).
 *
 * Usage: test_simv [-v] [-q]. Prints "test_simv: N passed, M failed";
 * exits 1 on any failure. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "dtype.h"
#include "engine.h"
#include "log.h"
#include "loopback.h"

typedef struct {
    const char *name;
    xc_coll_t coll;
    xc_build_fn build;
} algo_t;

static const algo_t algos[] = {
    {"ring_allgatherv", XC_COLL_ALLGATHERV, ring_allgatherv_schedule},
    {"recdbl_allgatherv", XC_COLL_ALLGATHERV, recdbl_allgatherv_schedule},
    {"direct_allgatherv", XC_COLL_ALLGATHERV, direct_allgatherv_schedule},
    {"pairwise_alltoallv", XC_COLL_ALLTOALLV, pairwise_alltoallv_schedule},
    {"scattered_alltoallv", XC_COLL_ALLTOALLV, scattered_alltoallv_schedule},
    {"linear_gatherv", XC_COLL_GATHERV, linear_gatherv_schedule},
    {"linear_scatterv", XC_COLL_SCATTERV, linear_scatterv_schedule},
};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

/* How counts are drawn, and how blocks are laid out in a buffer. */
enum { CNT_EVEN, CNT_RANDOM, CNT_ZERO, CNT_ONE, CNT_LARGE, CNT_KINDS };
static const char *const cnt_names[] = {"even", "random", "all-zero", "one-rank", "large"};
enum { LAY_PACKED, LAY_REVERSED, LAY_SHUFFLED, LAY_KINDS };
static const char *const lay_names[] = {"packed", "reversed", "shuffled"};

typedef struct {
    const algo_t *algo;
    int size, root, in_place, eager, delayed, cnt, lay;
    xcoll_dtype_t dtype;
    uint64_t seed;
} case_t;

static unsigned long n_passed, n_failed;
static int verbose;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void report(const case_t *c, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(const case_t *c, int ok, const char *fmt, ...)
{
    if (ok)
        n_passed++;
    else
        n_failed++;
    if (ok && !verbose)
        return;
    printf("%s %s P=%d root=%d %s counts=%s layout=%s %s%s%s", ok ? "ok  " : "FAIL",
           c->algo->name, c->size, c->root, xcoll_dtype_name(c->dtype), cnt_names[c->cnt],
           lay_names[c->lay], c->in_place ? "in-place " : "", c->eager ? "eager " : "",
           c->delayed ? "delayed" : "immediate");
    if (fmt != NULL) {
        va_list ap;
        printf(": ");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
    }
    printf("\n");
}

/* The value of element k of the block rank `from` sends to rank `to`
 * (allgatherv and gatherv: to = -1, the same for every receiver). Never
 * the filler. */
static uint32_t value(int from, int to, size_t k)
{
    return (uint32_t)(((uint64_t)from * 131 + (uint64_t)(to + 1) * 17 + k * 7) % 250) + 1;
}
#define FILLER 0xEE

static void put(xcoll_dtype_t dt, void *buf, size_t i, uint32_t v)
{
    if (dt == XCOLL_UINT8)
        ((uint8_t *)buf)[i] = (uint8_t)v;
    else
        ((uint32_t *)buf)[i] = v * 0x01000193u;
}

static uint32_t want_of(xcoll_dtype_t dt, uint32_t v)
{
    return dt == XCOLL_UINT8 ? (uint8_t)v : v * 0x01000193u;
}

static uint32_t get(xcoll_dtype_t dt, const void *buf, size_t i)
{
    return dt == XCOLL_UINT8 ? ((const uint8_t *)buf)[i] : ((const uint32_t *)buf)[i];
}

/* Counts M[i * P + j]: what rank i sends rank j (alltoallv), or rank i's
 * block (the others: M[i * P + 0] .. used as M[i]). Symmetric in place,
 * where an alltoallv's one array serves both directions. */
static void draw_counts(const case_t *c, uint64_t *rng, size_t *M)
{
    const int P = c->size;
    const int n = c->algo->coll == XC_COLL_ALLTOALLV ? P * P : P;
    const int one = (int)(rng_next(rng) % (uint64_t)P);
    int i;
    for (i = 0; i < n; i++) {
        switch (c->cnt) {
        case CNT_EVEN: M[i] = 3; break;
        case CNT_RANDOM: M[i] = rng_next(rng) % 3 == 0 ? 0 : rng_next(rng) % 9; break;
        case CNT_ZERO: M[i] = 0; break;
        case CNT_ONE: M[i] = (c->algo->coll == XC_COLL_ALLTOALLV ? i / P : i) == one ? 5 : 0; break;
        default: M[i] = rng_next(rng) % 2 ? 3000 + rng_next(rng) % 3000 : rng_next(rng) % 4; break;
        }
    }
    if (c->algo->coll == XC_COLL_ALLTOALLV && c->in_place)
        for (i = 0; i < P; i++) {
            int j;
            for (j = 0; j < i; j++)
                M[i * P + j] = M[j * P + i];
        }
}

/* Displacements for blocks of counts cnt[0..P), laid out per c->lay;
 * returns the buffer's length in elements (gaps included). */
static size_t lay_out(const case_t *c, uint64_t *rng, const size_t *cnt, size_t *displs)
{
    const int P = c->size;
    int *order = malloc((size_t)P * sizeof(int)), i;
    size_t at = 0;
    for (i = 0; i < P; i++)
        order[i] = c->lay == LAY_REVERSED ? P - 1 - i : i;
    if (c->lay == LAY_SHUFFLED)
        for (i = P - 1; i > 0; i--) {
            int j = (int)(rng_next(rng) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    for (i = 0; i < P; i++) {
        if (c->lay != LAY_PACKED)
            at += rng_next(rng) % 3; /* a gap the call must leave alone */
        displs[order[i]] = at;
        at += cnt[order[i]];
    }
    free(order);
    return at + (c->lay != LAY_PACKED ? 2 : 0);
}

typedef struct {
    size_t *scounts, *sdispls, *rcounts, *rdispls;
    size_t count; /* the scalar count */
    void *send, *recv, *send_copy;
    size_t send_n, recv_n;
} rank_t;

static void *alloc_filled(size_t elems, size_t ds)
{
    void *p = malloc(elems * ds + 1);
    memset(p, FILLER, elems * ds + 1);
    return p;
}

/* Builds rank r's side of the call from the count matrix. */
static void setup_rank(const case_t *c, uint64_t *rng, const size_t *M, int r, rank_t *k)
{
    const int P = c->size;
    const size_t ds = xcoll_dtype_size(c->dtype);
    const xc_coll_t coll = c->algo->coll;
    int j;
    size_t i;
    memset(k, 0, sizeof(*k));
    k->scounts = calloc((size_t)P, sizeof(size_t));
    k->sdispls = calloc((size_t)P, sizeof(size_t));
    k->rcounts = calloc((size_t)P, sizeof(size_t));
    k->rdispls = calloc((size_t)P, sizeof(size_t));
    if (coll == XC_COLL_ALLTOALLV) {
        for (j = 0; j < P; j++) {
            k->scounts[j] = M[r * P + j];
            k->rcounts[j] = M[j * P + r];
        }
        k->recv_n = lay_out(c, rng, k->rcounts, k->rdispls);
        k->recv = alloc_filled(k->recv_n, ds);
        if (c->in_place) {
            for (j = 0; j < P; j++)
                for (i = 0; i < k->rcounts[j]; i++)
                    put(c->dtype, k->recv, k->rdispls[j] + i, value(r, j, i));
        } else {
            k->send_n = lay_out(c, rng, k->scounts, k->sdispls);
            k->send = alloc_filled(k->send_n, ds);
            for (j = 0; j < P; j++)
                for (i = 0; i < k->scounts[j]; i++)
                    put(c->dtype, k->send, k->sdispls[j] + i, value(r, j, i));
        }
        return;
    }
    for (j = 0; j < P; j++)
        k->rcounts[j] = k->scounts[j] = M[j];
    if (coll == XC_COLL_ALLGATHERV || (coll == XC_COLL_GATHERV && r == c->root)) {
        k->recv_n = lay_out(c, rng, k->rcounts, k->rdispls);
        k->recv = alloc_filled(k->recv_n, ds);
    }
    if (coll == XC_COLL_ALLGATHERV || coll == XC_COLL_GATHERV) {
        k->count = M[r];
        for (i = 0; i < M[r]; i++) {
            if (c->in_place && k->recv != NULL)
                put(c->dtype, k->recv, k->rdispls[r] + i, value(r, -1, i));
        }
        if (!c->in_place || k->recv == NULL) {
            k->send_n = M[r];
            k->send = alloc_filled(M[r], ds);
            for (i = 0; i < M[r]; i++)
                put(c->dtype, k->send, i, value(r, -1, i));
        }
        return;
    }
    /* scatterv */
    k->count = M[r];
    if (r == c->root) {
        k->send_n = lay_out(c, rng, k->scounts, k->sdispls);
        k->send = alloc_filled(k->send_n, ds);
        for (j = 0; j < P; j++)
            for (i = 0; i < k->scounts[j]; i++)
                put(c->dtype, k->send, k->sdispls[j] + i, value(r, j, i));
    }
    if (!(c->in_place && r == c->root)) {
        k->recv_n = M[r];
        k->recv = alloc_filled(M[r], ds);
    }
}

/* What element e of rank r's receive buffer must hold after the call:
 * a value, or the filler. */
static uint32_t expect(const case_t *c, const rank_t *k, int r, size_t e)
{
    const int P = c->size;
    const xc_coll_t coll = c->algo->coll;
    int j;
    if (coll == XC_COLL_SCATTERV)
        return want_of(c->dtype, value(c->root, r, e));
    for (j = 0; j < P; j++) {
        if (e >= k->rdispls[j] && e < k->rdispls[j] + k->rcounts[j]) {
            size_t i = e - k->rdispls[j];
            if (coll == XC_COLL_ALLTOALLV)
                return want_of(c->dtype, j == r && c->in_place ? value(r, r, i) : value(j, r, i));
            return want_of(c->dtype, value(j, -1, i));
        }
    }
    return c->dtype == XCOLL_UINT8 ? FILLER : 0xEEEEEEEEu;
}

static int run_all(const case_t *c, xc_exec_t *x, lb_world_t *w)
{
    const int P = c->size;
    int *done = calloc((size_t)P, sizeof(int)), ndone = 0, r, ok = 1, rounds = 0;
    while (ndone < P && ok) {
        int progressed = 0;
        for (r = 0; r < P; r++) {
            xcoll_status_t st;
            if (done[r])
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
        if (!ok || progressed || lb_world_flush(w) > 0)
            continue;
        if (++rounds > 3) {
            report(c, 0, "deadlock: no rank can progress, %d of %d done", ndone, P);
            ok = 0;
        }
    }
    free(done);
    return ok;
}

/* Messages and bytes the algorithm must put on the wire (docs/ALGORITHMS.md):
 * the allgathervs deliver every non-empty block to each of the other P-1
 * ranks exactly once; the others send each off-rank block once. */
static void expected_wire(const case_t *c, const size_t *M, uint64_t *msgs, uint64_t *bytes)
{
    const int P = c->size;
    const size_t ds = xcoll_dtype_size(c->dtype);
    int i, j;
    *msgs = *bytes = 0;
    for (i = 0; i < P; i++) {
        if (c->algo->coll == XC_COLL_ALLTOALLV) {
            for (j = 0; j < P; j++)
                if (j != i && M[i * P + j] > 0) {
                    (*msgs)++;
                    *bytes += M[i * P + j] * ds;
                }
        } else if (c->algo->coll == XC_COLL_ALLGATHERV) {
            if (M[i] > 0) {
                *msgs += (uint64_t)(P - 1);
                *bytes += (uint64_t)(P - 1) * M[i] * ds;
            }
        } else if (i != c->root && M[i] > 0) {
            (*msgs)++;
            *bytes += M[i] * ds;
        }
    }
}

static void run_case(const case_t *c)
{
    const int P = c->size;
    const size_t ds = xcoll_dtype_size(c->dtype);
    const xc_coll_t coll = c->algo->coll;
    uint64_t rng = c->seed, msgs = 0, bytes = 0, want_msgs, want_bytes;
    size_t *M = calloc((size_t)P * (size_t)P, sizeof(size_t));
    rank_t *k = calloc((size_t)P, sizeof(*k));
    xc_sched_t *s = calloc((size_t)P, sizeof(*s));
    xc_exec_t *x = calloc((size_t)P, sizeof(*x));
    lb_world_t *w = lb_world_create(P);
    int r, ok = 1, nexec = 0;
    size_t e;

    if (M == NULL || k == NULL || s == NULL || x == NULL || w == NULL) {
        fprintf(stderr, "test_simv: out of memory\n");
        exit(2);
    }
    lb_world_set_eager(w, c->eager);
    lb_world_set_delayed(w, c->delayed, c->seed);
    draw_counts(c, &rng, M);
    for (r = 0; r < P; r++)
        setup_rank(c, &rng, M, r, &k[r]);
    for (r = 0; r < P; r++)
        if (k[r].send != NULL) {
            k[r].send_copy = malloc(k[r].send_n * ds + 1);
            memcpy(k[r].send_copy, k[r].send, k[r].send_n * ds + 1);
        }
    for (r = 0; r < P && ok; r++) {
        xc_coll_args_t a;
        xcoll_status_t st;
        const int rooted = coll == XC_COLL_GATHERV || coll == XC_COLL_SCATTERV;
        memset(&a, 0, sizeof(a));
        a.coll = coll;
        a.rank = r;
        a.size = P;
        a.count = k[r].count;
        a.dtype = c->dtype;
        a.op = XCOLL_SUM;
        a.root = c->root;
        a.in_place = c->in_place && (!rooted || r == c->root);
        /* only what the contract (coll.h) says this rank has */
        if (coll == XC_COLL_ALLTOALLV && !c->in_place) {
            a.scounts = k[r].scounts;
            a.sdispls = k[r].sdispls;
        }
        if (coll == XC_COLL_SCATTERV && r == c->root) {
            a.scounts = k[r].scounts;
            a.sdispls = k[r].sdispls;
        }
        if (coll == XC_COLL_ALLTOALLV || coll == XC_COLL_ALLGATHERV ||
            (coll == XC_COLL_GATHERV && r == c->root)) {
            a.rcounts = k[r].rcounts;
            a.rdispls = k[r].rdispls;
        }
        st = xc_sched_init(&s[r], r, P, c->dtype, XCOLL_SUM);
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
        if (xc_exec_init(&x[r], &s[r], k[r].send, k[r].recv, &lb_transport, lb_comm(w, r), 1,
                         (uint32_t)c->seed, NULL) != XCOLL_OK) {
            report(c, 0, "rank %d: xc_exec_init failed", r);
            ok = 0;
        }
    }
    if (ok)
        ok = run_all(c, x, w);
    if (ok && lb_world_pending(w) != 0) {
        report(c, 0, "%zu messages or receives left unmatched", lb_world_pending(w));
        ok = 0;
    }
    for (r = 0; r < P && ok; r++) {
        lb_stats_t ls;
        lb_stats(w, r, &ls);
        msgs += ls.msgs_sent;
        bytes += ls.bytes_sent;
    }
    expected_wire(c, M, &want_msgs, &want_bytes);
    if (ok && (msgs != want_msgs || bytes != want_bytes)) {
        report(c, 0, "%" PRIu64 " messages of %" PRIu64 " bytes on the wire, expected %" PRIu64
                     " of %" PRIu64, msgs, bytes, want_msgs, want_bytes);
        ok = 0;
    }
    for (r = 0; r < P && ok; r++) {
        if (k[r].send != NULL && memcmp(k[r].send, k[r].send_copy, k[r].send_n * ds + 1) != 0) {
            report(c, 0, "rank %d: the send buffer changed", r);
            ok = 0;
        }
        for (e = 0; e < k[r].recv_n && ok; e++) {
            uint32_t got = get(c->dtype, k[r].recv, e), want = expect(c, &k[r], r, e);
            if (got != want) {
                report(c, 0, "rank %d: receive element %zu is 0x%x, expected 0x%x", r, e, got,
                       want);
                ok = 0;
            }
        }
        if (ok && k[r].recv != NULL && ((unsigned char *)k[r].recv)[k[r].recv_n * ds] != FILLER) {
            report(c, 0, "rank %d: wrote past the end of the receive buffer", r);
            ok = 0;
        }
    }
    if (ok)
        report(c, 1, NULL);
    for (r = 0; r < nexec; r++)
        xc_exec_fini(&x[r]);
    for (r = 0; r < P; r++) {
        xc_sched_fini(&s[r]);
        free(k[r].scounts);
        free(k[r].sdispls);
        free(k[r].rcounts);
        free(k[r].rdispls);
        free(k[r].send);
        free(k[r].recv);
        free(k[r].send_copy);
    }
    lb_world_destroy(w);
    free(M);
    free(k);
    free(s);
    free(x);
}

/* Rank r's out-of-place int32 alltoallv, as api.c hands it to a builder. */
static xc_coll_args_t a2av_args(int r, int P, const size_t *sc, const size_t *sd,
                                const size_t *rc, const size_t *rd)
{
    xc_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.coll = XC_COLL_ALLTOALLV;
    a.rank = r;
    a.size = P;
    a.dtype = XCOLL_INT32;
    a.scounts = sc, a.sdispls = sd, a.rcounts = rc, a.rdispls = rd;
    return a;
}

/* Its schedule, with the acks api.c adds. */
static int build_a2av(xc_sched_t *s, const algo_t *al, const xc_coll_args_t *a)
{
    return xc_sched_init(s, a->rank, a->size, XCOLL_INT32, XCOLL_SUM) == XCOLL_OK &&
           al->build(s, a) == XCOLL_OK && xc_sched_add_acks(s, XC_ACK_ABOVE_BYTES) == XCOLL_OK &&
           xc_sched_finish(s) == XCOLL_OK;
}

static int same_sched(const xc_sched_t *x, const xc_sched_t *y)
{
    int ok = x->nsteps == y->nsteps && x->ndeps == y->ndeps && x->tmp_bytes == y->tmp_bytes &&
             memcmp(x->deps, y->deps, x->ndeps * sizeof(*x->deps)) == 0;
    for (uint32_t i = 0; ok && i < x->nsteps; i++) {
        const xc_step_t *p = &x->steps[i], *q = &y->steps[i];
        ok = p->kind == q->kind && p->peer == q->peer && p->slot == q->slot &&
             p->bytes == q->bytes && p->a.buf == q->a.buf && p->a.off == q->a.off &&
             p->dst.buf == q->dst.buf && p->dst.off == q->dst.off && p->ndeps == q->ndeps &&
             p->dep_first == q->dep_first;
    }
    return ok;
}

static size_t shape_draw(uint64_t *rng, int big)
{
    uint64_t v = rng_next(rng);
    return big ? 2049 + v % 5000 : v % 3 == 0 ? 0 : 1 + (v >> 8) % 2048;
}

/* xc_alltoallv_rebind, against the builders themselves: a schedule built
 * for counts A and bound to counts B of A's shape (the same blocks above
 * the ack limit; new sizes, empty blocks and layouts) must equal,
 * step for step and dependency for dependency, the one built for B; and
 * the check before binding accepts a schedule for its own counts only. */
static void check_rebind(const algo_t *al, int P, uint64_t seed)
{
    size_t *v = malloc(8 * (size_t)P * sizeof(size_t));
    size_t *sa = v, *sda = v + P, *ra = v + 2 * P, *rda = v + 3 * P;
    size_t *sb = v + 4 * P, *sdb = v + 5 * P, *rb = v + 6 * P, *rdb = v + 7 * P;
    int r = (int)(seed % (uint64_t)P), j, ok = 1;
    uint64_t rng = seed;
    case_t c;
    xc_sched_t x, y;
    xc_coll_args_t A, B;
    memset(&c, 0, sizeof(c));
    c.algo = al, c.size = P, c.seed = seed, c.dtype = XCOLL_INT32, c.lay = LAY_SHUFFLED;
    for (j = 0; j < P; j++) {
        /* per block and side: up to the ack limit (8 KiB: 2048 int32),
         * empty a third of the time, or above it */
        int bs = rng_next(&rng) % 3 == 0, br = j == r ? bs : rng_next(&rng) % 3 == 0;
        sa[j] = shape_draw(&rng, bs), sb[j] = shape_draw(&rng, bs);
        ra[j] = shape_draw(&rng, br), rb[j] = shape_draw(&rng, br);
    }
    ra[r] = sa[r], rb[r] = sb[r];
    lay_out(&c, &rng, sa, sda), lay_out(&c, &rng, ra, rda);
    lay_out(&c, &rng, sb, sdb), lay_out(&c, &rng, rb, rdb);
    A = a2av_args(r, P, sa, sda, ra, rda);
    B = a2av_args(r, P, sb, sdb, rb, rdb);
    if (!build_a2av(&x, al, &A) || !build_a2av(&y, al, &B)) {
        report(&c, 0, "building failed");
        ok = -1;
    } else {
        ok &= xc_alltoallv_rebind(&x, &A, 1);
        /* A's schedule passes B's check only where it already is B's */
        ok &= xc_alltoallv_rebind(&x, &B, 1) == same_sched(&x, &y);
        ok &= xc_alltoallv_rebind(&x, &B, 0) && same_sched(&x, &y);
        report(&c, ok, ok ? NULL : "rank %d: the rebound schedule differs from a fresh build", r);
    }
    if (ok >= 0) {
        xc_sched_fini(&x);
        xc_sched_fini(&y);
    }
    free(v);
}

int main(int argc, char **argv)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 33};
    int quick = 0, i, si;
    size_t ai;
    uint64_t seed = 1;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
        else {
            fprintf(stderr, "usage: test_simv [-v] [-q]\n");
            return 2;
        }
    }
    xc_log_init();
    for (ai = 0; ai < NALGOS; ai++) {
        const algo_t *al = &algos[ai];
        const int rooted = al->coll == XC_COLL_GATHERV || al->coll == XC_COLL_SCATTERV;
        for (si = 0; si < (int)(sizeof(sizes) / sizeof(sizes[0])); si++) {
            const int P = sizes[si];
            int cnt, lay, ip;
            if (quick && P > 9)
                continue;
            for (cnt = 0; cnt < CNT_KINDS; cnt++)
                for (lay = 0; lay < LAY_KINDS; lay++)
                    for (ip = 0; ip < 2; ip++) {
                        case_t c;
                        if (cnt == CNT_LARGE && P > 9)
                            continue;
                        memset(&c, 0, sizeof(c));
                        c.algo = al;
                        c.size = P;
                        c.cnt = cnt;
                        c.lay = lay;
                        c.in_place = ip;
                        c.seed = ++seed;
                        c.root = rooted ? (int)(seed % (uint64_t)P) : 0;
                        c.dtype = seed % 2 ? XCOLL_UINT8 : XCOLL_INT32;
                        c.eager = (int)(seed / 2 % 2);
                        c.delayed = (int)(seed / 4 % 2) || cnt == CNT_RANDOM;
                        run_case(&c);
                    }
        }
    }
    /* many ranks: more messages per link than the tag's slot bits tell
     * apart (tag.h), and the folds of a large non-power-of-two */
    for (ai = 0; ai < NALGOS && !quick; ai++) {
        static const int big[] = {64, 100, 300};
        for (si = 0; si < 3; si++) {
            int cnt, ip;
            if (!strcmp(algos[ai].name, "direct_allgatherv") && big[si] > XC_DIRECT_MAX_RANKS)
                continue;
            for (cnt = CNT_EVEN; cnt <= CNT_RANDOM; cnt++)
                for (ip = 0; ip < 2; ip++) {
                    case_t c;
                    memset(&c, 0, sizeof(c));
                    c.algo = &algos[ai];
                    c.size = big[si];
                    c.cnt = cnt;
                    c.lay = LAY_SHUFFLED;
                    c.in_place = ip;
                    c.seed = ++seed;
                    c.root = (int)(seed % (uint64_t)c.size);
                    c.dtype = XCOLL_INT32;
                    c.delayed = 1;
                    run_case(&c);
                }
        }
    }
    for (ai = 0; ai < NALGOS; ai++) {
        static const int rp[] = {1, 2, 3, 5, 8, 17, 64};
        if (algos[ai].coll != XC_COLL_ALLTOALLV)
            continue;
        for (si = 0; si < (int)(sizeof(rp) / sizeof(rp[0])); si++)
            for (i = 0; i < (quick ? 4 : 16); i++)
                check_rebind(&algos[ai], rp[si], ++seed);
    }
    printf("test_simv: %lu passed, %lu failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
