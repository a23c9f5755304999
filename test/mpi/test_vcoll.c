/* The v-variants (allgatherv, alltoallv, gatherv, scatterv) against Open
 * MPI's own, from the MPI standard's side: counts that differ per rank and
 * per step (MoE routing), zero for some ranks or all, blocks laid out in
 * any order with gaps the call must leave alone, in place, every root,
 * blocking and many nonblocking calls completed in reverse order, the same
 * counts again (cached schedules) and new ones, exchange matrices of one
 * shape with new counts every call; and the calls that must
 * fail on every rank alike: NULL arrays, overlapping receive blocks, a
 * send count that is not the block the others expect, layouts.
 *
 * Usage: test_vcoll [--quick] [--iters N] */
#include "common.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A count every rank draws alike (the same seed everywhere). */
static size_t draw(int big)
{
    uint64_t r = rnd();
    if (r % 4 == 0)
        return 0;
    return big && r % 3 == 0 ? 2000 + rnd() % 30000 : rnd() % 40;
}

/* Displacements for counts[0..P): in rank order, reversed or shuffled,
 * with gaps (drawn from the shared sequence too, so every rank can
 * compute any rank's layout). Returns the buffer length in elements. */
static size_t layout(const size_t *counts, int P, int how, size_t *displs)
{
    int *order = malloc((size_t)P * sizeof(int)), i;
    size_t at = 0;
    for (i = 0; i < P; i++)
        order[i] = how == 1 ? P - 1 - i : i;
    if (how == 2)
        for (i = P - 1; i > 0; i--) {
            int j = (int)(rnd() % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    for (i = 0; i < P; i++) {
        at += how ? rnd() % 3 : 0;
        displs[order[i]] = at;
        at += counts[order[i]];
    }
    free(order);
    return at + 1;
}

static int32_t val(int from, int to, size_t k, int iter)
{
    return (int32_t)((uint32_t)from * 1000003u + (uint32_t)(to + 1) * 7919u + (uint32_t)k * 31u +
                     (uint32_t)iter * 17u);
}
#define FILL ((int32_t)0x5a5a5a5a)

static int *to_int(const size_t *v, int P)
{
    int *o = malloc((size_t)P * sizeof(int)), i;
    for (i = 0; i < P; i++)
        o[i] = (int)v[i];
    return o;
}

static void compare(const char *what, int iter, const int32_t *got, const int32_t *want, size_t n)
{
    size_t i, bad = 0, first = 0;
    for (i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ == 0)
            first = i;
    if (bad == 0) {
        tc_pass();
        return;
    }
    tc_fail("%s iteration %d: %zu of %zu elements differ from MPI's, first at %zu (%d, MPI %d)",
            what, iter, bad, n, first, got[first], want[first]);
}

/* One allgatherv, xcoll's and MPI's, on the same counts. */
static void one_allgatherv(xcoll_comm_t comm, int iter, int big, int in_place, int how)
{
    const int P = tc.size, me = tc.rank;
    size_t *cnt = malloc((size_t)P * sizeof(size_t)), *dsp = malloc((size_t)P * sizeof(size_t));
    size_t n, i;
    int j, *icnt, *idsp;
    int32_t *mine, *xr, *mr;
    for (j = 0; j < P; j++)
        cnt[j] = draw(big);
    /* each rank lays out its own receive buffer: displs are local */
    for (j = 0; j < me; j++)
        rnd();
    n = layout(cnt, P, how, dsp);
    mine = malloc((cnt[me] + 1) * sizeof(int32_t));
    xr = malloc(n * sizeof(int32_t));
    mr = malloc(n * sizeof(int32_t));
    for (i = 0; i < cnt[me]; i++)
        mine[i] = val(me, -1, i, iter);
    for (i = 0; i < n; i++)
        xr[i] = mr[i] = FILL;
    if (in_place) {
        memcpy(xr + dsp[me], mine, cnt[me] * sizeof(int32_t));
        memcpy(mr + dsp[me], mine, cnt[me] * sizeof(int32_t));
    }
    icnt = to_int(cnt, P);
    idsp = to_int(dsp, P);
    TC_EXPECT(XCOLL_OK, xcoll_allgatherv(in_place ? XCOLL_IN_PLACE : mine, cnt[me], xr, cnt, dsp,
                                         XCOLL_INT32, comm, NULL));
    TC_MPI(MPI_Allgatherv(in_place ? MPI_IN_PLACE : mine, (int)cnt[me], MPI_INT32_T, mr, icnt,
                          idsp, MPI_INT32_T, MPI_COMM_WORLD));
    compare(in_place ? "allgatherv in place" : "allgatherv", iter, xr, mr, n);
    free(cnt), free(dsp), free(icnt), free(idsp), free(mine), free(xr), free(mr);
    /* re-synchronise the shared sequence: ranks drew different amounts */
    rng_state = (uint64_t)iter * 7777 + 12345;
}

/* One alltoallv; M[i*P+j] = what rank i sends rank j, symmetric in place. */
static void one_alltoallv(xcoll_comm_t comm, int iter, int big, int in_place, int how)
{
    const int P = tc.size, me = tc.rank;
    size_t *M = malloc((size_t)P * (size_t)P * sizeof(size_t));
    size_t sc[64], sd[64], rc[64], rd[64], sn, rn, i;
    int j, k, isc[64], isd[64], irc[64], ird[64];
    int32_t *sbuf, *xr, *mr;
    for (j = 0; j < P * P; j++)
        M[j] = draw(big);
    if (in_place)
        for (j = 0; j < P; j++)
            for (k = 0; k < j; k++)
                M[j * P + k] = M[k * P + j];
    for (j = 0; j < P; j++) {
        sc[j] = M[me * P + j];
        rc[j] = M[j * P + me];
    }
    for (j = 0; j < me; j++)
        rnd();
    sn = layout(sc, P, how, sd);
    rn = layout(rc, P, (how + 1) % 3, rd);
    sbuf = malloc(sn * sizeof(int32_t));
    xr = malloc(rn * sizeof(int32_t));
    mr = malloc(rn * sizeof(int32_t));
    for (i = 0; i < sn; i++)
        sbuf[i] = FILL;
    for (i = 0; i < rn; i++)
        xr[i] = mr[i] = FILL;
    for (j = 0; j < P; j++) {
        for (i = 0; i < sc[j]; i++)
            sbuf[sd[j] + i] = val(me, j, i, iter);
        if (in_place)
            for (i = 0; i < rc[j]; i++)
                xr[rd[j] + i] = mr[rd[j] + i] = val(me, j, i, iter);
        isc[j] = (int)sc[j], isd[j] = (int)sd[j], irc[j] = (int)rc[j], ird[j] = (int)rd[j];
    }
    TC_EXPECT(XCOLL_OK, xcoll_alltoallv(in_place ? XCOLL_IN_PLACE : sbuf, sc, sd, xr, rc, rd,
                                        XCOLL_INT32, comm, NULL));
    TC_MPI(MPI_Alltoallv(in_place ? MPI_IN_PLACE : sbuf, isc, isd, MPI_INT32_T, mr, irc, ird,
                         MPI_INT32_T, MPI_COMM_WORLD));
    compare(in_place ? "alltoallv in place" : "alltoallv", iter, xr, mr, rn);
    free(M), free(sbuf), free(xr), free(mr);
    rng_state = (uint64_t)iter * 7777 + 54321;
}

/* One gatherv and one scatterv at root. */
static void one_rooted(xcoll_comm_t comm, int iter, int big, int in_place, int how, int root)
{
    const int P = tc.size, me = tc.rank;
    size_t cnt[64] = {0}, dsp[64] = {0}, n, i;
    int j, icnt[64], idsp[64];
    int32_t *mine, *xr, *mr, *sbuf;
    const int ip = in_place && me == root;
    for (j = 0; j < P; j++)
        cnt[j] = draw(big);
    n = layout(cnt, P, how, dsp); /* the root's layout; every rank drew it alike */
    for (j = 0; j < P; j++)
        icnt[j] = (int)cnt[j], idsp[j] = (int)dsp[j];
    mine = malloc((cnt[me] + 1) * sizeof(int32_t));
    xr = malloc(n * sizeof(int32_t));
    mr = malloc(n * sizeof(int32_t));
    for (i = 0; i < cnt[me]; i++)
        mine[i] = val(me, -1, i, iter);
    for (i = 0; i < n; i++)
        xr[i] = mr[i] = FILL;
    if (ip) {
        memcpy(xr + dsp[me], mine, cnt[me] * sizeof(int32_t));
        memcpy(mr + dsp[me], mine, cnt[me] * sizeof(int32_t));
    }
    /* off the root the receive arguments are not significant: garbage */
    TC_EXPECT(XCOLL_OK, xcoll_gatherv(ip ? XCOLL_IN_PLACE : mine, cnt[me], me == root ? xr : NULL,
                                      me == root ? cnt : NULL, me == root ? dsp : NULL,
                                      XCOLL_INT32, root, comm, NULL));
    TC_MPI(MPI_Gatherv(ip ? MPI_IN_PLACE : mine, (int)cnt[me], MPI_INT32_T, mr, icnt, idsp,
                       MPI_INT32_T, root, MPI_COMM_WORLD));
    if (me == root)
        compare(ip ? "gatherv in place" : "gatherv", iter, xr, mr, n);

    /* scatterv: the root's buffer, laid out as above */
    sbuf = malloc(n * sizeof(int32_t));
    for (i = 0; i < n; i++)
        sbuf[i] = FILL;
    for (j = 0; j < P; j++)
        for (i = 0; i < cnt[j]; i++)
            sbuf[dsp[j] + i] = val(root, j, i, iter);
    for (i = 0; i < cnt[me]; i++)
        xr[i] = mr[i] = FILL;
    TC_EXPECT(XCOLL_OK,
              xcoll_scatterv(me == root ? sbuf : NULL, me == root ? cnt : NULL,
                             me == root ? dsp : NULL, ip ? (void *)(uintptr_t)XCOLL_IN_PLACE : xr,
                             cnt[me], XCOLL_INT32, root, comm, NULL));
    TC_MPI(MPI_Scatterv(sbuf, icnt, idsp, MPI_INT32_T, ip ? MPI_IN_PLACE : mr, (int)cnt[me],
                        MPI_INT32_T, root, MPI_COMM_WORLD));
    if (!ip) {
        compare("scatterv", iter, xr, mr, cnt[me]);
    } else {
        /* the root's own block stays where it is, untouched */
        for (i = 0; i < cnt[me]; i++)
            mr[i] = val(root, me, i, iter);
        compare("scatterv in place (the root's block)", iter, sbuf + dsp[me], mr, cnt[me]);
    }
    free(mine), free(xr), free(mr), free(sbuf);
}

/* Many nonblocking v-calls in flight, finished in reverse order. */
static void many_in_flight(xcoll_comm_t comm)
{
    enum { N = 6 };
    const int P = tc.size, me = tc.rank;
    xcoll_request_t req[N];
    size_t cnt[N][64], dsp[N][64], total[N];
    int32_t *in[N], *out[N];
    int k, j, bad = 0;
    size_t i;
    for (k = 0; k < N; k++) {
        total[k] = 0;
        for (j = 0; j < P; j++) {
            cnt[k][j] = (size_t)((j + k) % 3 == 0 ? 0 : j + k * 3 + 1);
            dsp[k][j] = total[k];
            total[k] += cnt[k][j];
        }
        in[k] = malloc((cnt[k][me] + 1) * sizeof(int32_t));
        out[k] = malloc((total[k] + 1) * sizeof(int32_t));
        for (i = 0; i < cnt[k][me]; i++)
            in[k][i] = val(me, k, i, 0);
        TC_EXPECT(XCOLL_OK, xcoll_iallgatherv(in[k], cnt[k][me], out[k], cnt[k], dsp[k],
                                              XCOLL_INT32, comm, NULL, &req[k]));
    }
    for (k = N - 1; k >= 0; k--)
        TC_EXPECT(XCOLL_OK, xcoll_wait(&req[k]));
    for (k = 0; k < N; k++) {
        for (j = 0; j < P; j++)
            for (i = 0; i < cnt[k][j]; i++)
                bad += out[k][dsp[k][j] + i] != val(j, k, i, 0);
        free(in[k]), free(out[k]);
    }
    if (bad)
        tc_fail("%d wrong elements in %d allgathervs finished in reverse order", bad, N);
    else
        tc_pass();
}

/* What rank i sends rank j in call t of same_shape: the zero pattern and
 * which blocks exceed 8 KiB are the same in every call, the counts not.
 * full: no empty block at all. */
static size_t shape_count(int i, int j, int t, int full)
{
    const int P = tc.size;
    uint32_t h = (uint32_t)(i * 7919 + j * 104729 + t * 1299709) * 2654435761u;
    if (!full && (i + j) % 3 == 0)
        return 0;
    return (i + 1) % P == j && i != j ? 2049 + h % 3000 : 1 + h % 2048;
}

typedef struct {
    size_t sc[64], sd[64], rc[64], rd[64];
    int32_t *sbuf, *xr, *mr;
    size_t rn;
    xcoll_request_t req;
} shape_call_t;

/* Posts call t of same_shape (how: the layouts' order); rd_zero: every
 * receive block at displacement 0 (they overlap). */
static xcoll_status_t shape_post(xcoll_comm_t comm, shape_call_t *c, int t, int full,
                                 int rd_zero)
{
    const int P = tc.size, me = tc.rank;
    size_t sn, i;
    int j;
    for (j = 0; j < P; j++) {
        c->sc[j] = shape_count(me, j, t, full);
        c->rc[j] = shape_count(j, me, t, full);
    }
    sn = layout(c->sc, P, t % 3, c->sd);
    c->rn = layout(c->rc, P, (t + 1) % 3, c->rd);
    if (rd_zero)
        for (j = 0; j < P; j++)
            c->rd[j] = 0;
    c->sbuf = malloc(sn * sizeof(int32_t));
    c->xr = malloc(c->rn * sizeof(int32_t));
    c->mr = malloc(c->rn * sizeof(int32_t));
    for (i = 0; i < sn; i++)
        c->sbuf[i] = FILL;
    for (i = 0; i < c->rn; i++)
        c->xr[i] = c->mr[i] = FILL;
    for (j = 0; j < P; j++)
        for (i = 0; i < c->sc[j]; i++)
            c->sbuf[c->sd[j] + i] = val(me, j, i, t);
    return xcoll_ialltoallv(c->sbuf, c->sc, c->sd, c->xr, c->rc, c->rd, XCOLL_INT32, comm, NULL,
                            &c->req);
}

/* Compares call t with MPI's answer to it, and frees it. */
static void shape_check(shape_call_t *c, int t)
{
    const int P = tc.size;
    int isc[64], isd[64], irc[64], ird[64], j;
    for (j = 0; j < P; j++)
        isc[j] = (int)c->sc[j], isd[j] = (int)c->sd[j], irc[j] = (int)c->rc[j],
        ird[j] = (int)c->rd[j];
    TC_MPI(MPI_Alltoallv(c->sbuf, isc, isd, MPI_INT32_T, c->mr, irc, ird, MPI_INT32_T,
                         MPI_COMM_WORLD));
    compare("alltoallv of one shape", t, c->xr, c->mr, c->rn);
    free(c->sbuf), free(c->xr), free(c->mr);
}

/* Exchange matrices of one shape with new counts and layouts every call,
 * as MoE routing makes them. xcoll serves them from one schedule bound to
 * each call's counts (api.c), which must never mix two calls' counts:
 * blocking calls, then four at once finished in reverse order, then
 * receive blocks that overlap (refused on every rank, as on a first
 * call), then the shape again. */
static void same_shape(xcoll_comm_t comm, int rounds)
{
    enum { N = 4 };
    static shape_call_t c[N];
    int t = 0, k, round;
    for (round = 0; round < rounds; round++) {
        const int n = round % 2 ? N : 1;
        for (k = 0; k < n; k++)
            TC_EXPECT(XCOLL_OK, shape_post(comm, &c[k], t + k, 0, 0));
        for (k = n - 1; k >= 0; k--)
            TC_EXPECT(XCOLL_OK, xcoll_wait(&c[k].req));
        for (k = 0; k < n; k++)
            shape_check(&c[k], t + k);
        t += n;
    }
    if (tc.size < 2)
        return;
    /* every rank has two receive blocks or more here, so all refuse */
    TC_EXPECT(XCOLL_OK, shape_post(comm, &c[0], t, 1, 0));
    TC_EXPECT(XCOLL_OK, xcoll_wait(&c[0].req));
    shape_check(&c[0], t++);
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, shape_post(comm, &c[0], t, 1, 1));
    free(c[0].sbuf), free(c[0].xr), free(c[0].mr);
    TC_EXPECT(XCOLL_OK, shape_post(comm, &c[0], ++t, 1, 0));
    TC_EXPECT(XCOLL_OK, xcoll_wait(&c[0].req));
    shape_check(&c[0], t);
}

/* Calls every rank gets wrong alike: each fails on its own, nothing is
 * posted, and the communicator goes on working. */
static void bad_calls(xcoll_comm_t comm)
{
    const int P = tc.size, me = tc.rank;
    size_t cnt[64], dsp[64];
    int32_t buf[256], mine[8] = {0};
    xcoll_layout_t lay;
    xcoll_args_t g;
    xcoll_request_t req = NULL;
    int j;
    for (j = 0; j < P; j++)
        cnt[j] = 2, dsp[j] = (size_t)j * 2;
    TC_EXPECT(XCOLL_ERR_INVALID_ARG,
              xcoll_allgatherv(mine, 2, buf, NULL, dsp, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG,
              xcoll_allgatherv(mine, 2, buf, cnt, NULL, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG,
              xcoll_allgatherv(mine, 3, buf, cnt, dsp, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG,
              xcoll_alltoallv(mine, cnt, NULL, buf, cnt, dsp, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ROOT,
              xcoll_gatherv(mine, 2, buf, cnt, dsp, XCOLL_INT32, -1, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ROOT,
              xcoll_scatterv(buf, cnt, dsp, mine, 2, XCOLL_INT32, P, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW,
              xcoll_allgatherv(mine, 2, buf, cnt,
                               (const size_t[64]){[0] = SIZE_MAX / 2, [1] = 0}, XCOLL_INT32,
                               comm, NULL));
    if (P >= 2) {
        /* blocks 0 and 1 overlap by one element */
        dsp[1] = 1;
        TC_EXPECT(XCOLL_ERR_INVALID_ARG,
                  xcoll_allgatherv(me == 1 ? XCOLL_IN_PLACE : mine, 2, buf, cnt, dsp,
                                   XCOLL_INT32, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG,
                  xcoll_alltoallv(mine, cnt, (const size_t[64]){0}, buf, cnt, dsp, XCOLL_INT32,
                                  comm, NULL));
        dsp[1] = 2;
    }
    memset(&lay, 0, sizeof(lay));
    memset(&g, 0, sizeof(g));
    g.coll = XCOLL_COLL_ALLGATHERV;
    g.sendbuf = mine;
    g.recvbuf = buf;
    g.count = 2;
    g.dtype = XCOLL_INT32;
    g.recvcounts = cnt;
    g.rdispls = dsp;
    g.recv_layout = &lay;
    TC_EXPECT(XCOLL_ERR_UNSUPPORTED, xcoll_start(&g, comm, &req));
    /* after all that, a good call */
    g.recv_layout = NULL;
    for (j = 0; j < 2; j++)
        mine[j] = val(me, -1, (size_t)j, 9);
    TC_EXPECT(XCOLL_OK, xcoll_start(&g, comm, &req));
    TC_EXPECT(XCOLL_OK, xcoll_wait(&req));
    for (j = 0; j < 2 * P; j++)
        if (buf[j] != val(j / 2, -1, (size_t)(j % 2), 9))
            break;
    if (j == 2 * P)
        tc_pass();
    else
        tc_fail("xcoll_start(allgatherv) after the bad calls: element %d wrong", j);
}

int main(int argc, char **argv)
{
    int iters = 60, quick = 0, i;
    xcoll_comm_t comm;
    tc_init(&argc, &argv, "test_vcoll");
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
    }
    if (tc.size > 64) {
        if (tc.rank == 0)
            fprintf(stderr, "test_vcoll: at most 64 ranks\n");
        MPI_Finalize();
        return 77;
    }
    if (quick)
        iters = iters > 20 ? 20 : iters;
    comm = tc_comm_create(MPI_COMM_WORLD, 60.0);
    for (i = 0; i < iters; i++) {
        const int big = !quick && i % 5 == 4, in_place = i % 3 == 2, how = i % 3;
        /* every fourth iteration repeats the previous counts: a cache hit */
        rng_state = (uint64_t)(i % 4 == 3 ? i - 1 : i) * 1000 + 7;
        one_allgatherv(comm, i, big, in_place, how);
        rng_state = (uint64_t)(i % 4 == 3 ? i - 1 : i) * 1000 + 8;
        one_alltoallv(comm, i, big, in_place, how);
        rng_state = (uint64_t)(i % 4 == 3 ? i - 1 : i) * 1000 + 9;
        one_rooted(comm, i, big, in_place, how, i % tc.size);
    }
    many_in_flight(comm);
    same_shape(comm, quick ? 6 : 12);
    bad_calls(comm);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    return tc_finish();
}
