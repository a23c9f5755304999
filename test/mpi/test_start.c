/* xcoll_start, as its contract in xcoll.h states it:
 *  - every collective with its send side, its receive side or both behind
 *    an xcoll_layout_t (memory in scrambled order that only pack/unpack
 *    reach), in place and not, every root: the result must equal the same
 *    call on plain buffers, and the layout's bytes outside the data stay;
 *  - bad layouts: the wrong size, no pack or unpack, a failing pack;
 *  - xcoll_config_t.fallback and rules: "mpi" declines with XCOLL_DECLINED,
 *    posts nothing (the next collective still matches), xcoll_declines
 *    agrees with xcoll_start, and the same rules without fallback serve,
 *    as does a call with no_fallback (and the next without it declines);
 *  - a malformed caller's rule fails communicator creation on every rank.
 * Run at 1..4 ranks. */
#include "common.h"

/* --- a scrambled layout: packed byte k at mem[perm(k)] -------------------------- */

#define CHUNK 7
#define GAP 2
#define FILLER 0x3C

typedef struct {
    xcoll_layout_t l;
    unsigned char *mem;
    size_t nchunks, mem_bytes;
    int fail_at; /* the pack call that fails (1-based), 0: none */
    int calls;
} lay_t;

static unsigned char *at(const lay_t *x, size_t k)
{
    return x->mem + (x->nchunks - 1 - k / CHUNK) * (CHUNK + GAP) + k % CHUNK;
}

static int lay_pack(void *ctx, size_t off, void *dst, size_t len)
{
    lay_t *x = ctx;
    size_t i;
    if (++x->calls == x->fail_at)
        return -1;
    if (len == 0 || off + len > x->l.bytes)
        return -1;
    for (i = 0; i < len; i++)
        ((unsigned char *)dst)[i] = *at(x, off + i);
    return 0;
}

static int lay_unpack(void *ctx, size_t off, const void *src, size_t len)
{
    lay_t *x = ctx;
    size_t i;
    if (len == 0 || off + len > x->l.bytes)
        return -1;
    for (i = 0; i < len; i++)
        *at(x, off + i) = ((const unsigned char *)src)[i];
    return 0;
}

static void lay_make(lay_t *x, const void *from, size_t bytes)
{
    memset(x, 0, sizeof(*x));
    x->nchunks = (bytes + CHUNK - 1) / CHUNK;
    x->mem_bytes = x->nchunks * (CHUNK + GAP) + 1;
    x->mem = malloc(x->mem_bytes);
    memset(x->mem, FILLER, x->mem_bytes);
    x->l.bytes = bytes;
    x->l.pack = lay_pack;
    x->l.unpack = lay_unpack;
    x->l.ctx = x;
    if (bytes > 0 && from != NULL)
        lay_unpack(x, 0, from, bytes);
}

/* Copies the data out; 0 if a byte outside it changed. */
static int lay_take(lay_t *x, void *to)
{
    size_t j, g;
    int ok = 1;
    if (x->l.bytes > 0 && to != NULL) {
        x->fail_at = 0;
        lay_pack(x, 0, to, x->l.bytes);
    }
    for (j = 0; j < x->nchunks; j++) {
        size_t used = j + 1 == x->nchunks && x->l.bytes % CHUNK ? x->l.bytes % CHUNK : CHUNK;
        unsigned char *c = x->mem + (x->nchunks - 1 - j) * (CHUNK + GAP);
        for (g = used; g < CHUNK + GAP; g++)
            ok &= c[g] == FILLER;
    }
    ok &= x->mem[x->mem_bytes - 1] == FILLER;
    free(x->mem);
    return ok;
}

/* --- every collective through layouts ---------------------------------------------- */

typedef struct {
    xcoll_coll_t coll;
    size_t send_n, recv_n; /* elements of int32 on this rank (0: side unused) */
} shape_t;

static shape_t shape_of(xcoll_coll_t c, size_t n, int root, int in_place)
{
    const size_t P = (size_t)tc.size;
    const int is_root = tc.rank == root;
    shape_t s = {c, 0, 0};
    switch (c) {
    case XCOLL_COLL_ALLREDUCE: s.send_n = n, s.recv_n = n; break;
    case XCOLL_COLL_BCAST: s.recv_n = n; break;
    case XCOLL_COLL_REDUCE: s.send_n = n, s.recv_n = is_root ? n : 0; break;
    case XCOLL_COLL_ALLGATHER: s.send_n = n, s.recv_n = P * n; break;
    case XCOLL_COLL_REDUCE_SCATTER: s.send_n = P * n, s.recv_n = in_place ? P * n : n; break;
    case XCOLL_COLL_ALLTOALL: s.send_n = P * n, s.recv_n = P * n; break;
    case XCOLL_COLL_GATHER: s.send_n = n, s.recv_n = is_root ? P * n : 0; break;
    case XCOLL_COLL_SCATTER: s.send_n = is_root ? P * n : 0, s.recv_n = n; break;
    default: break;
    }
    if (in_place && c != XCOLL_COLL_BCAST && c != XCOLL_COLL_SCATTER &&
        c != XCOLL_COLL_BARRIER && (s.recv_n > 0 || c == XCOLL_COLL_ALLREDUCE))
        s.send_n = 0; /* the input is in the receive buffer */
    if (in_place && c == XCOLL_COLL_SCATTER && is_root)
        s.recv_n = 0;
    return s;
}

static int32_t input(int r, size_t i)
{
    return (int32_t)(r * 131 + (int)i * 7 + 3);
}

/* Runs the call once on plain buffers and once with the sides in `which`
 * (1 send, 2 recv) behind layouts, and compares. */
static void one(xcoll_comm_t comm, xcoll_coll_t c, size_t n, int root, int in_place, int which)
{
    /* in place only where MPI-style in place exists for this rank */
    const int ip = in_place && (c == XCOLL_COLL_ALLREDUCE || c == XCOLL_COLL_ALLGATHER ||
                                c == XCOLL_COLL_REDUCE_SCATTER || c == XCOLL_COLL_ALLTOALL ||
                                ((c == XCOLL_COLL_REDUCE || c == XCOLL_COLL_GATHER ||
                                  c == XCOLL_COLL_SCATTER) && tc.rank == root));
    shape_t s = shape_of(c, n, root, ip);
    int32_t *sp = calloc(s.send_n + 1, 4), *rp = calloc(s.recv_n + 1, 4);
    int32_t *rl = calloc(s.recv_n + 1, 4), *sl_check = calloc(s.send_n + 1, 4);
    lay_t ls, lr;
    xcoll_args_t a;
    xcoll_request_t req = NULL;
    size_t i;
    int ok;
    char what[128];

    snprintf(what, sizeof(what), "%s n=%zu root=%d%s layouts=%s", xcoll_collective_name(c), n,
             root, ip ? " in place" : "", which == 1 ? "send" : which == 2 ? "recv" : "both");
    for (i = 0; i < s.send_n; i++)
        sp[i] = input(tc.rank, i);
    for (i = 0; i < s.recv_n; i++)
        rp[i] = ip || (c == XCOLL_COLL_BCAST && tc.rank == root) ? input(tc.rank, i) : -7;
    if (ip && c == XCOLL_COLL_ALLGATHER)
        for (i = 0; i < s.recv_n; i++)
            rp[i] = i / n == (size_t)tc.rank ? input(tc.rank, i % n) : -7;
    if (ip && c == XCOLL_COLL_GATHER)
        for (i = 0; i < s.recv_n; i++)
            rp[i] = i / n == (size_t)root ? input(tc.rank, i % n) : -7;
    memcpy(rl, rp, (s.recv_n + 1) * 4);

    memset(&a, 0, sizeof(a));
    a.coll = c;
    a.count = n;
    a.dtype = XCOLL_INT32;
    a.op = XCOLL_SUM;
    a.root = root;
    /* plain first: the reference */
    a.sendbuf = ip && c != XCOLL_COLL_SCATTER ? XCOLL_IN_PLACE : sp;
    a.recvbuf = ip && c == XCOLL_COLL_SCATTER ? (void *)(uintptr_t)XCOLL_IN_PLACE : rp;
    if (!TC_EXPECT(XCOLL_OK, xcoll_start(&a, comm, &req)) ||
        !TC_EXPECT(XCOLL_OK, xcoll_wait(&req)))
        goto out;
    /* then through layouts */
    lay_make(&ls, sp, s.send_n * 4);
    lay_make(&lr, rl, s.recv_n * 4);
    if ((which & 1) && s.send_n > 0)
        a.send_layout = &ls.l, a.sendbuf = NULL;
    else
        a.sendbuf = ip && c != XCOLL_COLL_SCATTER ? XCOLL_IN_PLACE : sp;
    if (ip && c != XCOLL_COLL_SCATTER)
        a.sendbuf = XCOLL_IN_PLACE;
    if ((which & 2) && s.recv_n > 0)
        a.recv_layout = &lr.l, a.recvbuf = NULL;
    else
        a.recvbuf = ip && c == XCOLL_COLL_SCATTER ? (void *)(uintptr_t)XCOLL_IN_PLACE : rl;
    ok = TC_EXPECT(XCOLL_OK, xcoll_start(&a, comm, &req)) && TC_EXPECT(XCOLL_OK, xcoll_wait(&req));
    if (!lay_take(&ls, sl_check) | !lay_take(&lr, a.recv_layout != NULL ? rl : NULL)) {
        tc_fail("%s: bytes outside a layout's data changed", what);
        ok = 0;
    }
    if (ok && s.send_n > 0 && a.send_layout != NULL && memcmp(sl_check, sp, s.send_n * 4) != 0)
        tc_fail("%s: the send side changed", what);
    else if (ok && memcmp(rl, rp, s.recv_n * 4) != 0) {
        for (i = 0; i < s.recv_n && rl[i] == rp[i]; i++)
            ;
        tc_fail("%s: element %zu is %d through the layout, %d without", what, i, rl[i], rp[i]);
    } else if (ok) {
        tc_pass();
    }
out:
    free(sp);
    free(rp);
    free(rl);
    free(sl_check);
}

static void test_layouts(xcoll_comm_t comm)
{
    static const size_t counts[] = {0, 1, 5, 1000, 70001};
    int c, root, ip, which;
    size_t k;
    for (c = 0; c < XCOLL_COLL_BARRIER; c++)
        for (k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            for (root = 0; root < tc.size; root++)
                for (ip = 0; ip < 2; ip++)
                    for (which = 1; which <= 3; which++) {
                        if (root > 0 && c != XCOLL_COLL_BCAST && c != XCOLL_COLL_REDUCE &&
                            c != XCOLL_COLL_GATHER && c != XCOLL_COLL_SCATTER)
                            continue;
                        if (counts[k] > 1000 && (root > 0 || which != 3))
                            continue;
                        one(comm, (xcoll_coll_t)c, counts[k], root, ip, which);
                    }
}

static void test_bad_layouts(xcoll_comm_t comm)
{
    int32_t buf[8] = {0}, out[8];
    lay_t x;
    xcoll_args_t a;
    xcoll_request_t req = NULL;
    memset(&a, 0, sizeof(a));
    a.coll = XCOLL_COLL_ALLREDUCE;
    a.count = 8;
    a.dtype = XCOLL_INT32;
    a.op = XCOLL_SUM;
    a.sendbuf = buf;
    lay_make(&x, NULL, 8 * 4 - 1);
    a.recv_layout = &x.l;
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_start(&a, comm, &req)); /* 31 bytes for 32 */
    lay_take(&x, NULL);
    lay_make(&x, NULL, 8 * 4);
    x.l.unpack = NULL;
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_start(&a, comm, &req));
    lay_take(&x, NULL);
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_start(NULL, comm, &req));
    a.coll = XCOLL_COLL_COUNT;
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_start(&a, comm, &req));
    a.coll = XCOLL_COLL_ALLREDUCE;
    /* a stream with a layout: host memory only (without CUDA: no stream at all) */
    lay_make(&x, NULL, 8 * 4);
    a.stream = (void *)1;
    TC_EXPECT(XCOLL_ERR_UNSUPPORTED, xcoll_start(&a, comm, &req));
    a.stream = NULL;
    lay_take(&x, NULL);
    (void)out;
}

/* A pack that fails fails the collective; one rank only, so the others
 * see their peer's failure too: a fresh communicator, then destroyed. */
static void test_failing_pack(void)
{
    xcoll_comm_t comm = tc_comm_create(MPI_COMM_WORLD, 5.0);
    int32_t buf[4] = {1, 2, 3, 4}, out[4];
    lay_t x;
    xcoll_args_t a;
    xcoll_request_t req = NULL;
    xcoll_status_t st;
    memset(&a, 0, sizeof(a));
    a.coll = XCOLL_COLL_ALLREDUCE;
    a.count = 4;
    a.dtype = XCOLL_INT32;
    a.op = XCOLL_SUM;
    a.recvbuf = out;
    lay_make(&x, buf, sizeof(buf));
    x.fail_at = tc.rank == 0 ? 1 : 0;
    a.send_layout = &x.l;
    st = xcoll_start(&a, comm, &req);
    if (st == XCOLL_OK)
        st = xcoll_wait(&req);
    if (tc.rank == 0)
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, st);
    else if (tc.size == 1 || st == XCOLL_OK || st == XCOLL_ERR_TIMEOUT ||
             st == XCOLL_ERR_COMM_FAILED)
        tc_pass(); /* the others may finish (their part done), hear of rank 0's
                      failure (its census) and give up, or time out */
    else
        tc_fail("a peer's failing pack gave %s", xcoll_strerror(st));
    lay_take(&x, NULL);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
}

/* --- the fallback ---------------------------------------------------------------------- */

static xcoll_comm_t comm_with(const char *rules, int fallback, xcoll_status_t *st)
{
    xcoll_config_t cfg;
    xcoll_comm_t comm = NULL;
    xcoll_config_init(&cfg);
    cfg.timeout_s = 30;
    cfg.rules = rules;
    cfg.rules_source = "test rules";
    cfg.fallback = fallback;
    *st = xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm);
    return comm;
}

static void test_fallback(void)
{
    xcoll_status_t st;
    xcoll_comm_t fb = comm_with("allreduce:0-1k:mpi;bcast@1-inf:64-128:mpi|binomial", 1, &st);
    xcoll_comm_t plain;
    int32_t in[300], out[300];
    xcoll_args_t a;
    xcoll_request_t req = (xcoll_request_t)1;
    int declined = -1, i, root;

    if (!TC_EXPECT(XCOLL_OK, st))
        return;
    for (i = 0; i < 300; i++)
        in[i] = tc.rank + i;
    memset(&a, 0, sizeof(a));
    a.coll = XCOLL_COLL_ALLREDUCE;
    a.count = 10; /* 40 bytes: declined */
    a.dtype = XCOLL_INT32;
    a.op = XCOLL_SUM;
    a.sendbuf = in;
    a.recvbuf = out;
    TC_EXPECT(XCOLL_OK, xcoll_declines(fb, &a, &declined));
    if (declined == 1)
        tc_pass();
    else
        tc_fail("xcoll_declines: 40-byte allreduce under allreduce:0-1k:mpi: %d", declined);
    out[0] = -5;
    TC_EXPECT(XCOLL_DECLINED, xcoll_start(&a, fb, &req));
    if (req == NULL && out[0] == -5)
        tc_pass();
    else
        tc_fail("a declined call set the request or wrote the buffer");
    TC_EXPECT(XCOLL_DECLINED, xcoll_allreduce(in, out, 10, XCOLL_INT32, XCOLL_SUM, fb, NULL));
    /* still in step: a served call after declined ones matches (300 x 4 > 1k) */
    a.count = 300;
    TC_EXPECT(XCOLL_OK, xcoll_declines(fb, &a, &declined));
    if (declined == 0)
        tc_pass();
    else
        tc_fail("xcoll_declines: 1200-byte allreduce: %d", declined);
    if (TC_EXPECT(XCOLL_OK, xcoll_start(&a, fb, &req)) && TC_EXPECT(XCOLL_OK, xcoll_wait(&req))) {
        for (i = 0; i < 300; i++)
            if (out[i] != tc.size * i + tc.size * (tc.size - 1) / 2)
                break;
        if (i == 300)
            tc_pass();
        else
            tc_fail("served allreduce after declined ones: element %d is %d", i, out[i]);
    }
    /* bcast: 64..128 bytes go back, others are served; the same on every root */
    for (root = 0; root < tc.size; root++) {
        xcoll_args_t b = a;
        b.coll = XCOLL_COLL_BCAST;
        b.root = root;
        b.count = 20; /* 80 bytes */
        b.recvbuf = out;
        TC_EXPECT(XCOLL_OK, xcoll_declines(fb, &b, &declined));
        if (declined != 1)
            tc_fail("bcast of 80 bytes, root %d, not declined", root);
        TC_EXPECT(XCOLL_DECLINED, xcoll_start(&b, fb, &req));
        b.count = 40; /* 160 bytes */
        TC_EXPECT(XCOLL_OK, xcoll_declines(fb, &b, &declined));
        if (declined != 0)
            tc_fail("bcast of 160 bytes, root %d, declined", root);
    }
    /* no_fallback: the same call served, as the rule's next algorithm
     * would; then, without it, declined again (its schedule is another);
     * then with it again */
    for (i = 0; i < 3; i++) {
        xcoll_args_t c = a;
        int want_served = i != 1, j;
        c.count = 10; /* 40 bytes: under allreduce:0-1k:mpi */
        c.no_fallback = want_served;
        TC_EXPECT(XCOLL_OK, xcoll_declines(fb, &c, &declined));
        if (declined != !want_served)
            tc_fail("xcoll_declines, no_fallback %d: %d", c.no_fallback, declined);
        out[0] = -5;
        if (!want_served) {
            TC_EXPECT(XCOLL_DECLINED, xcoll_start(&c, fb, &req));
            (req == NULL && out[0] == -5) ? tc_pass() : tc_fail("declined call wrote");
            continue;
        }
        if (!TC_EXPECT(XCOLL_OK, xcoll_start(&c, fb, &req)) ||
            !TC_EXPECT(XCOLL_OK, xcoll_wait(&req)))
            continue;
        for (j = 0; j < 10; j++)
            if (out[j] != tc.size * j + tc.size * (tc.size - 1) / 2)
                break;
        (j == 10) ? tc_pass() : tc_fail("no_fallback allreduce: element %d is %d", j, out[j]);
    }
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(fb));

    /* the same rules without a fallback: "mpi" is skipped, the call served */
    plain = comm_with("allreduce:0-1k:mpi", 0, &st);
    if (!TC_EXPECT(XCOLL_OK, st))
        return;
    TC_EXPECT(XCOLL_OK, xcoll_declines(plain, &a, &declined));
    if (declined == 0)
        tc_pass();
    else
        tc_fail("xcoll_declines on a communicator without fallback: %d", declined);
    if (TC_EXPECT(XCOLL_OK, xcoll_allreduce(in, out, 10, XCOLL_INT32, XCOLL_SUM, plain, NULL)))
        (out[3] == tc.size * 3 + tc.size * (tc.size - 1) / 2) ? tc_pass()
                                                            : tc_fail("allreduce: %d", out[3]);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(plain));

    /* a malformed caller's rule: creation fails on every rank */
    plain = comm_with(tc.rank == tc.size - 1 ? "allreduce:0-1k:mip" : "allreduce:0-1k:mpi", 1,
                      &st);
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, st);
    if (plain != NULL)
        xcoll_comm_destroy(plain);
    if (tc.size > 1) {
        /* tables that differ between ranks would choose different
         * schedules: creation fails on every rank */
        plain = comm_with(tc.rank == 0 ? "allreduce:0-1k:mpi" : "allreduce:0-2k:mpi", 1, &st);
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, st);
        if (plain != NULL)
            xcoll_comm_destroy(plain);
    }
    {
        /* one rank's configuration is wrong (it asks for CUDA memory on a
         * machine without a device, or a negative timeout): every rank
         * fails, none waits for it */
        xcoll_config_t cfg;
        xcoll_comm_t c = NULL;
        xcoll_config_init(&cfg);
        if (tc.rank == tc.size - 1)
            cfg.timeout_s = -1;
        st = xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &c);
        if (st != XCOLL_OK && c == NULL)
            tc_pass();
        else
            tc_fail("one rank's bad configuration: creation gave %s here", xcoll_strerror(st));
        if (c != NULL)
            xcoll_comm_destroy(c);
    }
    /* the communicator after those failures still works */
    plain = comm_with(NULL, 0, &st);
    if (TC_EXPECT(XCOLL_OK, st) &&
        TC_EXPECT(XCOLL_OK, xcoll_allreduce(in, out, 10, XCOLL_INT32, XCOLL_SUM, plain, NULL)))
        TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(plain));
}

int main(int argc, char **argv)
{
    xcoll_comm_t comm;
    tc_init(&argc, &argv, "test_start");
    comm = tc_comm_create(MPI_COMM_WORLD, 60.0);
    test_layouts(comm);
    test_bad_layouts(comm);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    test_fallback();
    test_failing_pack();
    return tc_finish();
}
