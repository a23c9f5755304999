/* test_repeat: a call's result depends on its own arguments only, whatever
 * call came before it on the communicator (xcoll.h). Loops repeat one call
 * with few changes, which is what a library may shortcut (xcoll's express
 * lane repeats the last call's schedule); each sequence here changes one
 * thing between otherwise equal calls and checks every result exactly:
 *  - the operator, the type (same bytes), the count, in place or not, the
 *    buffers, the root;
 *  - reduce_scatter's three layouts (apart, NCCL's in place, MPI's
 *    XCOLL_IN_PLACE) and allgather's in place at the same count;
 *  - a repeated call with a bad argument fails alone (NULL buffer, NULL
 *    request, a destroyed communicator) and the next good one works;
 *  - more shapes than the schedule cache holds, then the first again, and
 *    calls no shortcut repeats (v-variants) between two equal ones;
 *  - the same shape twice in flight, completed in the other order.
 * Run at 1..4 ranks; with the argument "layouts" only those calls, whose
 * in-place marks in the info log run_mpi_tests.sh checks. */
#include "common.h"

static xcoll_comm_t comm;
static int rank, size;

/* small integers: exact in every type and in any order */
static int32_t in_of(int r, size_t i, int salt)
{
    return (int32_t)((r * 3 + (int)i + salt) % 7) - 3;
}

static int32_t sum_of(size_t i, int salt)
{
    int32_t acc = 0;
    for (int r = 0; r < size; r++)
        acc += in_of(r, i, salt);
    return acc;
}

static int32_t max_of(size_t i, int salt)
{
    int32_t acc = in_of(0, i, salt);
    for (int r = 1; r < size; r++)
        acc = in_of(r, i, salt) > acc ? in_of(r, i, salt) : acc;
    return acc;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    return p;
}

/* n int32 inputs of rank r into buf, as int32, float32 or float64 */
static void fill(void *buf, xcoll_dtype_t d, size_t n, int r, int salt)
{
    for (size_t i = 0; i < n; i++) {
        int32_t v = in_of(r, i, salt);
        if (d == XCOLL_INT32)
            ((int32_t *)buf)[i] = v;
        else if (d == XCOLL_FLOAT32)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = (double)v;
    }
}

static int32_t get(const void *buf, xcoll_dtype_t d, size_t i)
{
    if (d == XCOLL_INT32)
        return ((const int32_t *)buf)[i];
    if (d == XCOLL_FLOAT32)
        return (int32_t)((const float *)buf)[i];
    return (int32_t)((const double *)buf)[i];
}

/* got[i] == want(i + off) for i < n */
static void expect_red(const char *what, const void *got, xcoll_dtype_t d, size_t n, size_t off,
                       xcoll_op_t op, int salt)
{
    for (size_t i = 0; i < n; i++) {
        int32_t want = op == XCOLL_SUM ? sum_of(i + off, salt) : max_of(i + off, salt);
        if (get(got, d, i) != want) {
            tc_fail("%s: element %zu is %d, expected %d", what, i, (int)get(got, d, i),
                    (int)want);
            return;
        }
    }
    tc_pass();
}

/* allreduce: operator, type at equal bytes, in place, buffers */
static void seq_allreduce(void)
{
    const size_t n = 6;
    char *a = xmalloc(n * 8), *b = xmalloc(n * 8), *c = xmalloc(n * 8);
    static const struct {
        xcoll_dtype_t d;
        size_t count; /* elements */
        xcoll_op_t op;
        int in_place, other_bufs;
        const char *what;
    } calls[] = {
        {XCOLL_INT32, 6, XCOLL_SUM, 0, 0, "sum"},
        {XCOLL_INT32, 6, XCOLL_SUM, 0, 0, "sum again"},
        {XCOLL_INT32, 6, XCOLL_MAX, 0, 0, "max after sum"},
        {XCOLL_INT32, 6, XCOLL_SUM, 0, 0, "sum after max"},
        {XCOLL_INT32, 6, XCOLL_SUM, 1, 0, "sum in place"},
        {XCOLL_INT32, 6, XCOLL_SUM, 0, 1, "sum, other buffers"},
        {XCOLL_FLOAT32, 6, XCOLL_SUM, 0, 0, "float32, same bytes"},
        {XCOLL_FLOAT64, 3, XCOLL_SUM, 0, 0, "float64, same bytes"},
        {XCOLL_INT32, 5, XCOLL_SUM, 0, 0, "one element fewer"},
        {XCOLL_INT32, 6, XCOLL_SUM, 1, 1, "in place, other buffer"},
        {XCOLL_INT32, 6, XCOLL_SUM, 0, 0, "sum once more"},
    };
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
        char *src = calls[k].other_bufs ? c : a, *dst = calls[k].other_bufs ? a : b;
        char what[96];
        int salt = (int)k;
        snprintf(what, sizeof what, "allreduce %zu (%s)", k, calls[k].what);
        fill(calls[k].in_place ? dst : src, calls[k].d, calls[k].count, rank, salt);
        if (!calls[k].in_place)
            memset(dst, 0x5A, n * 8);
        if (TC_EXPECT(XCOLL_OK, xcoll_allreduce(calls[k].in_place ? XCOLL_IN_PLACE : src, dst,
                                                calls[k].count, calls[k].d, calls[k].op, comm,
                                                NULL)))
            expect_red(what, dst, calls[k].d, calls[k].count, 0, calls[k].op, salt);
    }
    free(a);
    free(b);
    free(c);
}

static void expect_bytes(const char *what, const unsigned char *got, size_t n, int src, size_t off,
                         unsigned salt)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != tc_pattern_byte(src, off + i, salt)) {
            tc_fail("%s: byte %zu is 0x%02x, expected 0x%02x (rank %d's)", what, i, got[i],
                    tc_pattern_byte(src, off + i, salt), src);
            return;
        }
    tc_pass();
}

static void pattern(unsigned char *buf, size_t n, int src, size_t off, unsigned salt)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = tc_pattern_byte(src, off + i, salt);
}

/* bcast and reduce: the root changes, the rest does not */
static void seq_rooted(void)
{
    const size_t n = 10;
    unsigned char buf[10];
    int32_t in[10], out[10];
    for (int k = 0; k < 2 * size + 2; k++) {
        int root = k < 2 ? 0 : k % size;
        char what[64];
        snprintf(what, sizeof what, "bcast %d (root %d)", k, root);
        if (rank == root)
            pattern(buf, n, root, 0, (unsigned)k);
        else
            memset(buf, 0xEE, n);
        if (TC_EXPECT(XCOLL_OK, xcoll_bcast(buf, n, XCOLL_UINT8, root, comm, NULL)))
            expect_bytes(what, buf, n, root, 0, (unsigned)k);
    }
    for (int k = 0; k < 2 * size + 2; k++) {
        int root = (k / 2) % size, in_place = k % 2 == 1 && rank == root;
        char what[64];
        snprintf(what, sizeof what, "reduce %d (root %d%s)", k, root,
                 in_place ? ", in place" : "");
        fill(in_place ? out : in, XCOLL_INT32, n, rank, k);
        if (!in_place)
            memset(out, 0x5A, sizeof out);
        if (TC_EXPECT(XCOLL_OK, xcoll_reduce(in_place ? XCOLL_IN_PLACE : in, out, n, XCOLL_INT32,
                                             XCOLL_SUM, root, comm, NULL)) &&
            rank == root)
            expect_red(what, out, XCOLL_INT32, n, 0, XCOLL_SUM, k);
    }
}

/* reduce_scatter's layouts and allgather's in place, one count */
static void seq_layouts(void)
{
    const size_t n = 4, all = n * (size_t)size;
    int32_t *in = xmalloc(all * 4), *out = xmalloc(all * 4);
    unsigned char *g = xmalloc(all), *mine = xmalloc(n);
    for (int k = 0; k < 8; k++) {
        int layout = k % 4; /* 0, 3: apart; 1: NCCL in place; 2: MPI XCOLL_IN_PLACE */
        char what[64];
        int32_t *res;
        snprintf(what, sizeof what, "reduce_scatter %d (layout %d)", k, layout);
        fill(in, XCOLL_INT32, all, rank, k);
        memset(out, 0x5A, all * 4);
        if (layout == 1) {
            res = in + (size_t)rank * n;
            if (!TC_EXPECT(XCOLL_OK, xcoll_reduce_scatter(in, res, n, XCOLL_INT32, XCOLL_SUM,
                                                          comm, NULL)))
                continue;
        } else if (layout == 2) {
            memcpy(out, in, all * 4);
            res = out;
            if (!TC_EXPECT(XCOLL_OK, xcoll_reduce_scatter(XCOLL_IN_PLACE, out, n, XCOLL_INT32,
                                                          XCOLL_SUM, comm, NULL)))
                continue;
        } else {
            res = out;
            if (!TC_EXPECT(XCOLL_OK, xcoll_reduce_scatter(in, out, n, XCOLL_INT32, XCOLL_SUM,
                                                          comm, NULL)))
                continue;
        }
        expect_red(what, res, XCOLL_INT32, n, (size_t)rank * n, XCOLL_SUM, k);
    }
    for (int k = 0; k < 6; k++) {
        int in_place = k % 3 == 1;
        char what[64];
        snprintf(what, sizeof what, "allgather %d%s", k, in_place ? " (in place)" : "");
        memset(g, 0xEE, all);
        pattern(in_place ? g + (size_t)rank * n : mine, n, rank, 0, (unsigned)k);
        if (!TC_EXPECT(XCOLL_OK, xcoll_allgather(in_place ? (void *)(g + (size_t)rank * n) : mine,
                                                 g, n, XCOLL_UINT8, comm, NULL)))
            continue;
        for (int r = 0; r < size; r++)
            expect_bytes(what, g + (size_t)r * n, n, r, 0, (unsigned)k);
    }
    for (int k = 0; k < 4; k++) {
        int in_place = k % 2 == 1;
        unsigned char *snd = xmalloc(all), *rcv = xmalloc(all);
        char what[64];
        snprintf(what, sizeof what, "alltoall %d%s", k, in_place ? " (in place)" : "");
        for (int r = 0; r < size; r++) /* block r goes to rank r */
            pattern((in_place ? rcv : snd) + (size_t)r * n, n, rank, (size_t)r * n, (unsigned)k);
        if (!in_place)
            memset(rcv, 0xEE, all);
        if (TC_EXPECT(XCOLL_OK, xcoll_alltoall(in_place ? XCOLL_IN_PLACE : snd, rcv, n,
                                               XCOLL_UINT8, comm, NULL)))
            for (int r = 0; r < size; r++)
                expect_bytes(what, rcv + (size_t)r * n, n, r, (size_t)rank * n, (unsigned)k);
        free(snd);
        free(rcv);
    }
    free(in);
    free(out);
    free(g);
    free(mine);
}

/* a repeat with one bad argument fails on its own, nothing posted */
static void seq_bad(void)
{
    int32_t a[3], b[3];
    xcoll_request_t req;
    fill(a, XCOLL_INT32, 3, rank, 1);
    TC_EXPECT(XCOLL_OK, xcoll_allreduce(a, b, 3, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_OK, xcoll_allreduce(a, b, 3, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG,
              xcoll_allreduce(a, NULL, 3, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG,
              xcoll_allreduce(NULL, b, 3, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG,
              xcoll_iallreduce(a, b, 3, XCOLL_INT32, XCOLL_SUM, comm, NULL, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_ibcast(NULL, 3, XCOLL_INT32, 0, comm, NULL, &req));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_ibarrier(comm, NULL));
    /* every rank made the same failed calls, so the next ones still match */
    fill(a, XCOLL_INT32, 3, rank, 2);
    if (TC_EXPECT(XCOLL_OK, xcoll_allreduce(a, b, 3, XCOLL_INT32, XCOLL_SUM, comm, NULL)))
        expect_red("allreduce after the failed repeats", b, XCOLL_INT32, 3, 0, XCOLL_SUM, 2);
}

/* more shapes than the cache holds, then the first again; then the same
 * shape twice in flight */
static void seq_cache(void)
{
    int32_t a[64], b[64], c[64], d[64];
    xcoll_request_t r1, r2;
    int k;
    for (k = 0; k < 48; k++) {
        size_t n = k == 0 || k == 47 ? 3 : (size_t)k + 4; /* 47: the first shape again */
        char what[64];
        snprintf(what, sizeof what, "allreduce count %zu (shape %d)", n, k);
        fill(a, XCOLL_INT32, n, rank, k);
        if (TC_EXPECT(XCOLL_OK, xcoll_allreduce(a, b, n, XCOLL_INT32, XCOLL_SUM, comm, NULL)))
            expect_red(what, b, XCOLL_INT32, n, 0, XCOLL_SUM, k);
    }
    /* calls no shortcut repeats (v-variants) push that shape out of the
     * cache; then it again */
    fill(a, XCOLL_INT32, 7, rank, 50);
    if (TC_EXPECT(XCOLL_OK, xcoll_allreduce(a, b, 7, XCOLL_INT32, XCOLL_SUM, comm, NULL)))
        expect_red("allreduce count 7", b, XCOLL_INT32, 7, 0, XCOLL_SUM, 50);
    {
        size_t *counts = xmalloc((size_t)size * sizeof(size_t));
        size_t *displs = xmalloc((size_t)size * sizeof(size_t));
        unsigned char *all = xmalloc((size_t)size * 40), mine[40];
        for (k = 0; k < 40; k++) {
            size_t n = (size_t)k % 40 + 1, at = 0;
            int bad = 0;
            for (int r = 0; r < size; r++) {
                counts[r] = n;
                displs[r] = at;
                at += n;
            }
            pattern(mine, n, rank, 0, (unsigned)k);
            if (!TC_EXPECT(XCOLL_OK, xcoll_allgatherv(mine, n, all, counts, displs, XCOLL_UINT8,
                                                      comm, NULL)))
                continue;
            for (int r = 0; r < size && !bad; r++)
                for (size_t i = 0; i < n && !bad; i++)
                    bad = all[displs[r] + i] != tc_pattern_byte(r, i, (unsigned)k);
            if (bad)
                tc_fail("allgatherv %d: a wrong byte", k);
            else
                tc_pass();
        }
        free(counts);
        free(displs);
        free(all);
    }
    fill(a, XCOLL_INT32, 7, rank, 51);
    if (TC_EXPECT(XCOLL_OK, xcoll_allreduce(a, b, 7, XCOLL_INT32, XCOLL_SUM, comm, NULL)))
        expect_red("allreduce count 7 after 40 allgathervs", b, XCOLL_INT32, 7, 0, XCOLL_SUM, 51);
    for (k = 0; k < 3; k++) {
        fill(a, XCOLL_INT32, 5, rank, 100 + k);
        fill(c, XCOLL_INT32, 5, rank, 200 + k);
        if (!TC_EXPECT(XCOLL_OK,
                       xcoll_iallreduce(a, b, 5, XCOLL_INT32, XCOLL_SUM, comm, NULL, &r1)) ||
            !TC_EXPECT(XCOLL_OK,
                       xcoll_iallreduce(c, d, 5, XCOLL_INT32, XCOLL_SUM, comm, NULL, &r2)))
            MPI_Abort(MPI_COMM_WORLD, 3);
        TC_EXPECT(XCOLL_OK, xcoll_wait(&r2));
        TC_EXPECT(XCOLL_OK, xcoll_wait(&r1));
        expect_red("the first of two in flight", b, XCOLL_INT32, 5, 0, XCOLL_SUM, 100 + k);
        expect_red("the second of two in flight", d, XCOLL_INT32, 5, 0, XCOLL_SUM, 200 + k);
    }
}

/* a repeat on a communicator destroyed after its last call */
static void seq_destroyed(void)
{
    int32_t a[2] = {1, 2}, b[2];
    xcoll_comm_t other = tc_comm_create(MPI_COMM_WORLD, 60.0);
    if (other == NULL)
        MPI_Abort(MPI_COMM_WORLD, 3);
    TC_EXPECT(XCOLL_OK, xcoll_allreduce(a, b, 2, XCOLL_INT32, XCOLL_SUM, other, NULL));
    TC_EXPECT(XCOLL_OK, xcoll_allreduce(a, b, 2, XCOLL_INT32, XCOLL_SUM, other, NULL));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(other));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM,
              xcoll_allreduce(a, b, 2, XCOLL_INT32, XCOLL_SUM, other, NULL));
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "test_repeat");
    comm = tc_comm_create(MPI_COMM_WORLD, 60.0);
    if (comm == NULL)
        MPI_Abort(MPI_COMM_WORLD, 3);
    xcoll_comm_rank(comm, &rank);
    xcoll_comm_size(comm, &size);
    /* "layouts": those calls alone, in a known order, for
     * run_mpi_tests.sh's check of the info log */
    if (argc > 1 && strcmp(argv[1], "layouts") == 0) {
        seq_layouts();
    } else {
        seq_allreduce();
        seq_rooted();
        seq_layouts();
        seq_bad();
        seq_cache();
    }
    TC_EXPECT(XCOLL_OK, xcoll_barrier(comm));
    TC_EXPECT(XCOLL_OK, xcoll_barrier(comm));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    seq_destroyed();
    return tc_finish();
}
