/* The call check (xcoll_config_t.check, XCOLL_CHECK), from its promise:
 * when the ranks of a communicator call collectives that do not match (an
 * other collective, count, datatype, operator or root on some rank), the
 * call fails on every rank with XCOLL_ERR_MISMATCH, no data moves, and the
 * communicator stays usable (the next matching call succeeds with the
 * right data). Calls that do match must never be refused, including the
 * legal differences: data movement described by other types for the same
 * bytes, a v-variant's counts that differ by rank, in place on some ranks.
 * Each case runs with one "odd" rank (the last, then rank 0) and a
 * nonblocking variant. Without the check the odd calls would hang or
 * deliver wrong data, so the check is on for every communicator here.
 *
 * Usage: test_check */
#include "common.h"

static xcoll_comm_t comm;

/* Every rank returned `want` from its call: the verdict is everyone's. */
static void expect_all(const char *what, xcoll_status_t got, xcoll_status_t want)
{
    int mine = got == want, all = 0;
    TC_MPI(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (!mine)
        tc_fail("%s: %s, expected %s", what, xcoll_strerror(got), xcoll_strerror(want));
    else if (all != tc.size)
        tc_fail("%s: only %d of %d ranks got %s", what, all, tc.size, xcoll_strerror(want));
    else
        tc_pass();
}

/* After a refused call the communicator still works: an allreduce of the
 * ranks' numbers. */
static void still_works(const char *after)
{
    int64_t in = tc.rank + 1, out = 0;
    xcoll_status_t st = xcoll_allreduce(&in, &out, 1, XCOLL_INT64, XCOLL_SUM, comm, NULL);
    if (st != XCOLL_OK || out != (int64_t)tc.size * (tc.size + 1) / 2)
        tc_fail("allreduce after %s: %s, sum %lld", after, xcoll_strerror(st), (long long)out);
    else
        tc_pass();
}

enum { N = 16 };

/* One call of a case: an allreduce, bcast or barrier with these
 * arguments, blocking or not (then waited for). */
enum { ALLREDUCE, BCAST, BARRIER };
typedef struct {
    int kind;
    size_t count;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    int root;
} call_t;

static float fbuf[N], fout[N];

static xcoll_status_t call(const call_t *c, int nb)
{
    xcoll_request_t r = NULL;
    xcoll_status_t st;
    switch (c->kind) {
    case ALLREDUCE:
        st = nb ? xcoll_iallreduce(fbuf, fout, c->count, c->dtype, c->op, comm, NULL, &r)
                : xcoll_allreduce(fbuf, fout, c->count, c->dtype, c->op, comm, NULL);
        break;
    case BCAST:
        st = nb ? xcoll_ibcast(fbuf, c->count, c->dtype, c->root, comm, NULL, &r)
                : xcoll_bcast(fbuf, c->count, c->dtype, c->root, comm, NULL);
        break;
    default:
        st = nb ? xcoll_ibarrier(comm, &r) : xcoll_barrier(comm);
    }
    return nb && st == XCOLL_OK ? xcoll_wait(&r) : st;
}

#define SUM_F {ALLREDUCE, N, XCOLL_FLOAT32, XCOLL_SUM, 0}
#define BCAST_B0 {BCAST, N * 4, XCOLL_UINT8, XCOLL_SUM, 0}

/* Every rank calls `mine` but the odd one, which calls `odd`. */
static const struct {
    const char *name;
    call_t mine, odd;
    xcoll_status_t want;
} cases[] = {
    {"allreduce / bcast", SUM_F, BCAST_B0, XCOLL_ERR_MISMATCH},
    {"allreduce / barrier", SUM_F, {BARRIER, 0, XCOLL_UINT8, XCOLL_SUM, 0}, XCOLL_ERR_MISMATCH},
    {"allreduce sum / max", SUM_F, {ALLREDUCE, N, XCOLL_FLOAT32, XCOLL_MAX, 0},
     XCOLL_ERR_MISMATCH},
    {"allreduce 16 / 15 floats", SUM_F, {ALLREDUCE, N - 1, XCOLL_FLOAT32, XCOLL_SUM, 0},
     XCOLL_ERR_MISMATCH},
    {"allreduce float32 / int32 (same bytes)", SUM_F, {ALLREDUCE, N, XCOLL_INT32, XCOLL_SUM, 0},
     XCOLL_ERR_MISMATCH},
    {"bcast root 0 / root 1", BCAST_B0, {BCAST, N * 4, XCOLL_UINT8, XCOLL_SUM, 1},
     XCOLL_ERR_MISMATCH},
    /* legal: the same bytes as other types */
    {"bcast 64 uint8 / 16 int32", BCAST_B0, {BCAST, N, XCOLL_INT32, XCOLL_SUM, 0}, XCOLL_OK},
    {"barrier / barrier", {BARRIER, 0, XCOLL_UINT8, XCOLL_SUM, 0},
     {BARRIER, 0, XCOLL_UINT8, XCOLL_SUM, 0}, XCOLL_OK},
};

/* Legal per-rank differences of a v-variant: an alltoallv whose counts
 * are each rank's own (rank i sends i + j + 1 elements to rank j), and a
 * gatherv whose root alone has the counts. Results checked. */
static void legal_vcalls(void)
{
    const int P = tc.size, me = tc.rank;
    size_t sc[64], sd[64], rc[64], rd[64], st = 0, rt = 0;
    int32_t *s, *r;
    int bad = 0, j;
    size_t k;
    for (j = 0; j < P; j++) {
        sc[j] = (size_t)(me + j + 1), sd[j] = st, st += sc[j];
        rc[j] = (size_t)(j + me + 1), rd[j] = rt, rt += rc[j];
    }
    s = malloc(st * sizeof(int32_t));
    r = malloc(rt * sizeof(int32_t));
    for (j = 0; j < P; j++)
        for (k = 0; k < sc[j]; k++)
            s[sd[j] + k] = me * 1000 + j * 100 + (int32_t)k;
    expect_all("alltoallv with each rank's own counts",
               xcoll_alltoallv(s, sc, sd, r, rc, rd, XCOLL_INT32, comm, NULL), XCOLL_OK);
    for (j = 0; j < P; j++)
        for (k = 0; k < rc[j]; k++)
            bad += r[rd[j] + k] != j * 1000 + me * 100 + (int32_t)k;
    if (bad)
        tc_fail("alltoallv under the check: %d wrong elements", bad);
    else
        tc_pass();
    /* gatherv: rank i contributes i + 1 elements; only the root has counts */
    for (j = 0; j < P; j++)
        rc[j] = (size_t)(j + 1), rd[j] = j == 0 ? 0 : rd[j - 1] + rc[j - 1];
    for (k = 0; k <= (size_t)me; k++)
        s[k] = me * 10 + (int32_t)k;
    expect_all("gatherv, counts at the root only",
               xcoll_gatherv(s, (size_t)me + 1, r, me == 0 ? rc : NULL, me == 0 ? rd : NULL,
                             XCOLL_INT32, 0, comm, NULL),
               XCOLL_OK);
    if (me == 0) {
        for (j = 0, bad = 0; j < P; j++)
            for (k = 0; k <= (size_t)j; k++)
                bad += r[rd[j] + k] != j * 10 + (int32_t)k;
        if (bad)
            tc_fail("gatherv under the check: %d wrong elements", bad);
        else
            tc_pass();
    }
    free(s);
    free(r);
}

/* As the MPI drop-ins call: xcoll_declines first (which may build and
 * cache the schedule), then the call, on a communicator that may hand
 * calls back. The check must hold on that path too. */
static void with_declines(xcoll_config_t cfg)
{
    xcoll_comm_t saved = comm;
    cfg.fallback = 1;
    TC_EXPECT(XCOLL_OK, xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm));
    for (int c = 0; c < 3; c++) {
        const call_t *k = tc.rank == tc.size - 1 ? &cases[c].odd : &cases[c].mine;
        xcoll_args_t a;
        int declined = -1;
        xcoll_status_t st;
        char what[160];
        memset(&a, 0, sizeof(a));
        a.coll = k->kind == ALLREDUCE ? XCOLL_COLL_ALLREDUCE
                 : k->kind == BCAST   ? XCOLL_COLL_BCAST
                                      : XCOLL_COLL_BARRIER;
        a.count = k->count, a.dtype = k->dtype, a.op = k->op, a.root = k->root;
        TC_EXPECT(XCOLL_OK, xcoll_declines(comm, &a, &declined));
        st = declined ? XCOLL_DECLINED : call(k, 0);
        snprintf(what, sizeof(what), "%s after xcoll_declines", cases[c].name);
        /* a call handed back to MPI is MPI's to check */
        if (!declined)
            expect_all(what, st, cases[c].want);
        still_works(what);
    }
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    comm = saved;
}

/* Every rank must agree on the check: one rank with it on and the others
 * off would take its stamps for data. Creation fails on every rank. */
static void disagreeing(xcoll_config_t cfg)
{
    xcoll_comm_t c = NULL;
    cfg.check = tc.rank == 0;
    expect_all("creating with the check on rank 0 only",
               xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &c),
               tc.size == 1 ? XCOLL_OK : XCOLL_ERR_INVALID_ARG);
    if (c != NULL)
        TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(c));
}

int main(int argc, char **argv)
{
    xcoll_config_t cfg;
    tc_init(&argc, &argv, "test_check");
    if (tc.size > 64) {
        MPI_Finalize();
        return 77;
    }
    /* the variable's value is checked like the others */
    setenv("XCOLL_CHECK", "2", 1);
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_config_init(&cfg));
    setenv("XCOLL_CHECK", "1", 1);
    TC_EXPECT(XCOLL_OK, xcoll_config_init(&cfg));
    if (cfg.check != 1)
        tc_fail("XCOLL_CHECK=1 left cfg.check at %d", cfg.check);
    unsetenv("XCOLL_CHECK");
    TC_EXPECT(XCOLL_OK, xcoll_config_init(&cfg));
    cfg.check = 1;
    cfg.timeout_s = getenv("XCOLL_TIMEOUT") ? cfg.timeout_s : 60;
    TC_EXPECT(XCOLL_OK, xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm));

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int odd_rank = tc.size - 1, round = 0; round < 2; round++, odd_rank = 0)
            for (int nb = 0; nb < 2; nb++) {
                char what[160];
                xcoll_status_t st;
                if (tc.size == 1 && cases[c].want != XCOLL_OK)
                    continue; /* no other rank to differ (and no root 1) */
                for (int i = 0; i < N; i++)
                    fbuf[i] = (float)(tc.rank + i);
                st = call(tc.rank == odd_rank ? &cases[c].odd : &cases[c].mine, nb);
                snprintf(what, sizeof(what), "%s, rank %d odd%s", cases[c].name, odd_rank,
                         nb ? ", nonblocking" : "");
                expect_all(what, st, cases[c].want);
                still_works(what);
            }
    legal_vcalls();
    still_works("the v-variants");
    if (tc.size > 1)
        with_declines(cfg);
    disagreeing(cfg);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    return tc_finish();
}
