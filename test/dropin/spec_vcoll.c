/*
 * spec_vcoll.c - MPI_Allgatherv, MPI_Alltoallv, MPI_Gatherv, MPI_Scatterv
 * and their nonblocking forms, from the MPI standard: every rank describes
 * its buffers with a type map of its own (MPI_INT; one int per element
 * with a two-int extent; pairs of ints), only the type signatures match;
 * block sizes differ per rank and pair, some are zero; displacements run
 * backwards with gaps the call must leave alone; MPI_IN_PLACE where the
 * standard allows it; every root; nonblocking calls finished in reverse.
 */
#include "spec.h"

/* A way to describe n ints: `ipe` ints per element, elements `ext` ints
 * apart. */
typedef struct {
    MPI_Datatype type;
    int ipe, ext;
} kind_t;

static kind_t kinds[3];

static void kinds_make(void)
{
    MPI_Datatype strided;
    kinds[0] = (kind_t){MPI_INT, 1, 1};
    MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &strided);
    MPI_Type_commit(&strided);
    kinds[1] = (kind_t){strided, 1, 2};
    MPI_Type_contiguous(2, MPI_INT, &kinds[2].type);
    MPI_Type_commit(&kinds[2].type);
    kinds[2].ipe = kinds[2].ext = 2;
}

/* Where int e of a block at displacement d (in extents) lies. */
static int *at(int *base, const kind_t *k, int d, int e)
{
    return base + (size_t)d * k->ext + (size_t)(e / k->ipe) * k->ext + e % k->ipe;
}

#define FILL (-7)

static int val(int from, int to, int e, int iter)
{
    return from * 100000 + (to + 1) * 1000 + e * 3 + iter;
}

/* Displacements for blocks of n[j] ints in kind k: backwards, a gap of
 * one extent before each. Returns the buffer's length in ints. */
static size_t lay_back(const int *n, int P, const kind_t *k, int *displs, int *counts)
{
    int j, d = 0;
    for (j = P - 1; j >= 0; j--) {
        d += 1;
        displs[j] = d;
        counts[j] = n[j] / k->ipe;
        d += counts[j];
    }
    return (size_t)(d + 1) * (size_t)k->ext;
}

static int *ints(size_t n)
{
    int *p = spec_alloc(n * sizeof(int));
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = FILL;
    return p;
}

/* Every int of buf: inside a block the value want(), elsewhere FILL. */
static void check(const char *what, int iter, int *buf, size_t len, const kind_t *k,
                  const int *displs, const int *n, int P, int to, int from_is_block,
                  int fixed_from)
{
    char *mark = calloc(len, 1);
    size_t i;
    int j, e, bad = 0;
    for (j = 0; j < P; j++)
        for (e = 0; e < n[j]; e++) {
            int *p = at(buf, k, displs[j], e);
            int want = val(from_is_block ? j : fixed_from, from_is_block ? to : j, e, iter);
            mark[p - buf] = 1;
            if (*p != want && bad++ == 0)
                spec_fail("%s iteration %d: block %d int %d is %d, expected %d", what, iter, j,
                          e, *p, want);
        }
    for (i = 0; i < len; i++)
        if (!mark[i] && buf[i] != FILL && bad++ == 0)
            spec_fail("%s iteration %d: int %zu outside every block was written (%d)", what,
                      iter, i, buf[i]);
    free(mark);
}

/* Block sizes in ints, even (pairs), some zero; the same on every rank. */
static int nblock(int i, int j, int iter)
{
    return 2 * ((i * 3 + j * 5 + iter) % 4);
}

static void test_allgatherv(int iter, int in_place, int nonblocking)
{
    const int P = spec_size, me = spec_rank;
    const int k0 = (me + iter) % 3, k1 = (me + iter + 1) % 3;
    const kind_t *rk = &kinds[k0], *sk = &kinds[k1];
#ifdef MPICH_VERSION
    /* MPICH 4.0.2's MPI_Allgatherv on one rank reads the send buffer at
     * the receive displacement (plain MPICH fails here); a drop-in never
     * serves one rank anyway */
    if (P == 1)
        return;
#endif
    int *n = spec_alloc(P * sizeof(int)), *rd = spec_alloc(P * sizeof(int)),
        *rc = spec_alloc(P * sizeof(int)), j, e;
    size_t rlen;
    int *rbuf, *sbuf;
    MPI_Request req;
    for (j = 0; j < P; j++)
        n[j] = nblock(j, 0, iter);
    rlen = lay_back(n, P, rk, rd, rc);
    rbuf = ints(rlen);
    sbuf = ints((size_t)(n[me] + 1) * 2);
    for (e = 0; e < n[me]; e++)
        *(in_place ? at(rbuf, rk, rd[me], e) : at(sbuf, sk, 0, e)) = val(me, 0, e, iter);
    if (nonblocking) {
        SPEC_MPI(MPI_Iallgatherv(in_place ? MPI_IN_PLACE : sbuf, n[me] / sk->ipe, sk->type, rbuf,
                                 rc, rd, rk->type, MPI_COMM_WORLD, &req));
        SPEC_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        SPEC_MPI(MPI_Allgatherv(in_place ? MPI_IN_PLACE : sbuf, n[me] / sk->ipe, sk->type, rbuf,
                                rc, rd, rk->type, MPI_COMM_WORLD));
    }
    check(in_place ? "allgatherv in place" : "allgatherv", iter, rbuf, rlen, rk, rd, n, P, 0,
          1, 0);
    free(n), free(rd), free(rc), free(rbuf), free(sbuf);
}

static void test_alltoallv(int iter, int in_place)
{
    const int P = spec_size, me = spec_rank;
    const kind_t *rk = &kinds[(me + iter) % 3], *sk = &kinds[(me + iter + 2) % 3];
    int *sn = spec_alloc(P * sizeof(int)), *rn = spec_alloc(P * sizeof(int));
    int *sd = spec_alloc(P * sizeof(int)), *scnt = spec_alloc(P * sizeof(int));
    int *rd = spec_alloc(P * sizeof(int)), *rcnt = spec_alloc(P * sizeof(int)), j, e;
    size_t slen, rlen;
    int *sbuf, *rbuf;
    for (j = 0; j < P; j++) {
        /* in place the standard takes one array for both: symmetric sizes */
        sn[j] = in_place ? nblock(me + j, 0, iter) : nblock(me, j, iter);
        rn[j] = in_place ? nblock(j + me, 0, iter) : nblock(j, me, iter);
    }
    slen = lay_back(sn, P, sk, sd, scnt);
    rlen = lay_back(rn, P, rk, rd, rcnt);
    sbuf = ints(slen);
    rbuf = ints(rlen);
    for (j = 0; j < P; j++)
        for (e = 0; e < sn[j]; e++)
            *(in_place ? at(rbuf, rk, rd[j], e) : at(sbuf, sk, sd[j], e)) = val(me, j, e, iter);
    SPEC_MPI(MPI_Alltoallv(in_place ? MPI_IN_PLACE : sbuf, scnt, sd, sk->type, rbuf, rcnt, rd,
                           rk->type, MPI_COMM_WORLD));
    check(in_place ? "alltoallv in place" : "alltoallv", iter, rbuf, rlen, rk, rd, rn, P, me, 1,
          0);
    free(sn), free(rn), free(sd), free(scnt), free(rd), free(rcnt), free(sbuf), free(rbuf);
}

static void test_rooted(int iter, int root, int in_place)
{
    const int P = spec_size, me = spec_rank, ip = in_place && me == root;
    const kind_t *bk = &kinds[(me + iter) % 3], *ok = &kinds[(me + iter + 1) % 3];
    int *n = spec_alloc(P * sizeof(int)), *d = spec_alloc(P * sizeof(int)),
        *c = spec_alloc(P * sizeof(int)), j, e;
    size_t len;
    int *blocks, *own;
    for (j = 0; j < P; j++)
        n[j] = nblock(j, root, iter);
    len = lay_back(n, P, bk, d, c);
    blocks = ints(len);
    own = ints((size_t)(n[me] + 1) * 2);

    /* gatherv */
    for (e = 0; e < n[me]; e++)
        *(ip ? at(blocks, bk, d[me], e) : at(own, ok, 0, e)) = val(me, 0, e, iter);
    SPEC_MPI(MPI_Gatherv(ip ? MPI_IN_PLACE : own, n[me] / ok->ipe, ok->type, blocks, c, d,
                         bk->type, root, MPI_COMM_WORLD));
    if (me == root)
        check(ip ? "gatherv in place" : "gatherv", iter, blocks, len, bk, d, n, P, 0, 1, 0);

    /* scatterv: block j of the root's buffer to rank j */
    for (j = 0; j < (int)len; j++)
        blocks[j] = FILL;
    for (j = 0; j < (int)((size_t)(n[me] + 1) * 2); j++)
        own[j] = FILL;
    if (me == root)
        for (j = 0; j < P; j++)
            for (e = 0; e < n[j]; e++)
                *at(blocks, bk, d[j], e) = val(root, j, e, iter);
    SPEC_MPI(MPI_Scatterv(blocks, c, d, bk->type, ip ? MPI_IN_PLACE : own, n[me] / ok->ipe,
                          ok->type, root, MPI_COMM_WORLD));
    if (!ip) {
        for (e = 0; e < n[me]; e++)
            if (*at(own, ok, 0, e) != val(root, me, e, iter)) {
                spec_fail("scatterv iteration %d root %d: int %d is %d, expected %d", iter, root,
                          e, *at(own, ok, 0, e), val(root, me, e, iter));
                break;
            }
    } else {
        check("scatterv in place (the root's buffer)", iter, blocks, len, bk, d, n, P, 0, 0,
              root);
    }
    free(n), free(d), free(c), free(blocks), free(own);
}

/* Several nonblocking v-calls in flight, finished in reverse order. */
static void test_many_nonblocking(void)
{
    enum { N = 4 };
    const int P = spec_size, me = spec_rank;
    MPI_Request req[N];
    int *bufs[N], *ins[N], *cnt = spec_alloc(P * sizeof(int)), *dsp = spec_alloc(P * sizeof(int));
    int k, j, e, total = 0;
    for (j = 0; j < P; j++) {
        cnt[j] = j % 3;
        dsp[j] = total;
        total += cnt[j];
    }
    for (k = 0; k < N; k++) {
        bufs[k] = ints((size_t)total + 1);
        ins[k] = ints((size_t)cnt[me] + 1);
        for (e = 0; e < cnt[me]; e++)
            ins[k][e] = val(me, k, e, 0);
        SPEC_MPI(MPI_Iallgatherv(ins[k], cnt[me], MPI_INT, bufs[k], cnt, dsp, MPI_INT,
                                 MPI_COMM_WORLD, &req[k]));
    }
    for (k = N - 1; k >= 0; k--)
        SPEC_MPI(MPI_Wait(&req[k], MPI_STATUS_IGNORE));
    for (k = 0; k < N; k++) {
        for (j = 0; j < P; j++)
            for (e = 0; e < cnt[j]; e++)
                if (bufs[k][dsp[j] + e] != val(j, k, e, 0)) {
                    spec_fail("iallgatherv %d of %d: block %d int %d is %d", k, N, j, e,
                              bufs[k][dsp[j] + e]);
                    j = P;
                    break;
                }
        free(bufs[k]), free(ins[k]);
    }
    free(cnt), free(dsp);
}

int main(int argc, char **argv)
{
    int iter, root;
    spec_init(&argc, &argv, "spec_vcoll");
    kinds_make();
    for (iter = 0; iter < 6; iter++) {
        test_allgatherv(iter, iter % 2, iter % 3 == 2);
        test_alltoallv(iter, iter % 2);
        for (root = 0; root < spec_size; root++)
            test_rooted(iter, root, (iter + root) % 2);
    }
    test_many_nonblocking();
    MPI_Type_free(&kinds[1].type);
    MPI_Type_free(&kinds[2].type);
    return spec_finish();
}
