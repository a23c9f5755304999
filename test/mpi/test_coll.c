/* test_coll: every collective x dtype x op x count x in-place mode x root,
 * checked against values computed here and against MPI's own result.
 *
 * Inputs are small integers chosen so every result is exact in every type
 * and in any reduction order (sums stay tiny, products use only 1, 2 and
 * -1, averages of floats have sums divisible by the rank count), so a
 * result is either right or a bug: no tolerances.
 *
 * Collectives that only move data are checked byte for byte with a pattern
 * that names the source rank and position. Every buffer sits between
 * canaries, and out-of-place send buffers must come back unchanged.
 *
 * Usage: test_coll [--quick] [--large N] [--coll LIST] [--no-mpi-check]
 *   --quick        skip the large counts
 *   --large N      element count of the large cases (default 2^20+3)
 *   --coll LIST    run only these collectives, comma-separated (allreduce,
 *                  bcast, reduce, reduce_scatter, allgather, alltoall, gather,
 *                  scatter, barrier, sendrecv)
 *   --no-mpi-check compare with exact values only */
#include "common.h"

enum { IP_NONE, IP_MPI, IP_NCCL, IP_COUNT };
static const char *const ip_names[IP_COUNT] = { "no", "mpi", "nccl" };

typedef struct {
    const char *coll;
    xcoll_dtype_t dtype;
    xcoll_op_t op;       /* meaningful only if has_op */
    int has_op;
    size_t count;
    int root;            /* -1 when not rooted */
    int ip;
} case_t;

static struct {
    int quick;
    size_t large;
    const char *only;
    int mpi_check;
} opt = { 0, (1u << 20) + 3, NULL, 1 };

static xcoll_comm_t comm;
static int rank, size;

/* --- Reporting ----------------------------------------------------------- */

static void case_print(const case_t *c, const char *what, size_t idx, const char *got,
                       const char *exp)
{
    /* One write per line, so lines from several ranks do not interleave. */
    char line[512];
    int n = snprintf(line, sizeof line,
                     "test_coll r%d: FAIL: %s dtype=%s op=%s count=%zu root=%d in_place=%s: %s",
                     rank, c->coll, xcoll_dtype_name(c->dtype),
                     c->has_op ? xcoll_op_name(c->op) : "-", c->count, c->root, ip_names[c->ip],
                     what);
    if (got != NULL && n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, " index %zu: got %s expected %s", idx,
                      got, exp);
    fprintf(stderr, "%s\n", line);
}

/* Counts a case once per rank, however many things went wrong in it. */
static void case_end(int bad)
{
    if (bad)
        tc.failed++;
    else
        tc.passed++;
}

static int check_status(const case_t *c, xcoll_status_t st)
{
    if (st == XCOLL_OK)
        return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "returned %d (%s)", (int)st, xcoll_strerror(st));
    case_print(c, msg, 0, NULL, NULL);
    return 1;
}

static int check_guard(const case_t *c, const tc_buf_t *b, const char *name)
{
    if (b->base == NULL || tc_buf_guard_ok(b))
        return 0;
    char msg[96];
    snprintf(msg, sizeof msg, "canary around %s damaged (write out of bounds)", name);
    case_print(c, msg, 0, NULL, NULL);
    return 1;
}

static void fmt_value(char *out, size_t n, double v)
{
    snprintf(out, n, "%.17g", v);
}

/* Compares n elements by value; idx0 is the index of got[0] in the
 * caller's buffer, for the message. Returns 1 on any mismatch. */
static int compare_values(const case_t *c, const char *what, const void *got, const void *exp,
                          size_t n, size_t idx0)
{
    int reported = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = tc_load(c->dtype, got, i), e = tc_load(c->dtype, exp, i);
        if (g == e)
            continue;
        bad = 1;
        if (reported++ < tc.max_reports) {
            char gs[40], es[40];
            fmt_value(gs, sizeof gs, g);
            fmt_value(es, sizeof es, e);
            case_print(c, what, idx0 + i, gs, es);
        }
    }
    return bad;
}

static void fmt_bytes(char *out, size_t n, const unsigned char *p, size_t es)
{
    size_t k = 0;
    out[0] = '\0';
    for (size_t b = 0; b < es && k + 3 < n; b++)
        k += (size_t)snprintf(out + k, n - k, "%02x", p[b]);
}

/* Compares n elements of es bytes each, byte for byte. */
static int compare_bytes(const case_t *c, const char *what, const void *got, const void *exp,
                         size_t n, size_t es, size_t idx0)
{
    const unsigned char *g = got, *e = exp;
    int reported = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(g + i * es, e + i * es, es) == 0)
            continue;
        bad = 1;
        if (reported++ < tc.max_reports) {
            char gs[40], xs[40];
            fmt_bytes(gs, sizeof gs, g + i * es, es);
            fmt_bytes(xs, sizeof xs, e + i * es, es);
            case_print(c, what, idx0 + i, gs, xs);
        }
    }
    return bad;
}

/* --- Inputs and expected results ----------------------------------------- */

/* Element idx of rank r's input for a reduction with op. */
static int64_t red_input(xcoll_dtype_t d, xcoll_op_t op, int r, size_t idx)
{
    int sgn = tc_dtype_is_signed(d);
    int64_t i = (int64_t)(idx % 1000003);
    switch (op) {
    case XCOLL_SUM:
        return (r + i) % 5 - (sgn ? 2 : 0);
    case XCOLL_PROD: {
        /* Few factors of 2 (only ranks < 12 contribute one) so no type overflows. */
        int64_t t = (r + 3 * i) % 6;
        if (t == 0 && r < 12)
            return 2;
        return (t == 1 && sgn) ? -1 : 1;
    }
    case XCOLL_MIN:
    case XCOLL_MAX:
        return (r * 7 + i * 3) % 11 - (sgn ? 5 : 0);
    case XCOLL_AVG:
        if (!tc_dtype_is_float(d))
            return (r + i) % 5;   /* checks truncation of the integer division */
        {
            /* Deviations that cancel in pairs of ranks: the sum is size * base,
             * so the average is exact whatever the division's rounding. */
            int64_t base = i % 9 - 4;
            if (size % 2 == 1 && r == size - 1)
                return base;
            int64_t m = (r / 2 + i) % 3 + 1;
            return base + (r % 2 == 0 ? m : -m);
        }
    case XCOLL_BAND: {
        int64_t b = (r * 3 + i) % 11;
        int64_t clear = b < 7 ? ((int64_t)1 << b) : 0;
        return sgn ? -1 - clear : 0x7f & ~clear;
    }
    case XCOLL_BOR: {
        int64_t b = (r * 3 + i) % 11;
        return b < 7 ? ((int64_t)1 << b) : 0;
    }
    case XCOLL_BXOR:
        return (r * 37 + i * 11 + 5) & 0x7f;
    default:
        return 0;
    }
}

static int64_t red_expected(xcoll_dtype_t d, xcoll_op_t op, size_t idx)
{
    int64_t acc = red_input(d, op, 0, idx);
    for (int r = 1; r < size; r++) {
        int64_t v = red_input(d, op, r, idx);
        switch (op) {
        case XCOLL_SUM: case XCOLL_AVG: acc += v; break;
        case XCOLL_PROD: acc *= v; break;
        case XCOLL_MIN: acc = v < acc ? v : acc; break;
        case XCOLL_MAX: acc = v > acc ? v : acc; break;
        case XCOLL_BAND: acc &= v; break;
        case XCOLL_BOR: acc |= v; break;
        case XCOLL_BXOR: acc ^= v; break;
        default: break;
        }
    }
    if (op == XCOLL_AVG)
        acc /= size;
    return acc;
}

static void fill_red_input(xcoll_dtype_t d, xcoll_op_t op, void *buf, size_t n, int r,
                           size_t idx0)
{
    for (size_t i = 0; i < n; i++)
        tc_store(d, buf, i, red_input(d, op, r, idx0 + i));
}

static void fill_red_expected(xcoll_dtype_t d, xcoll_op_t op, void *buf, size_t n, size_t idx0)
{
    for (size_t i = 0; i < n; i++)
        tc_store(d, buf, i, red_expected(d, op, idx0 + i));
}

/* n bytes of source rank src's pattern, starting at byte offset off. */
static void fill_pattern(void *buf, size_t n, int src, size_t off, unsigned salt)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = tc_pattern_byte(src, off + i, salt);
}

static void fill_garbage(void *buf, size_t n)
{
    memset(buf, 0xee, n);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "test_coll r%d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static char *at(void *p, size_t bytes) { return (char *)p + bytes; }

static int mpi_has(xcoll_dtype_t d, xcoll_op_t op)
{
    return opt.mpi_check && tc_mpi_dtype(d) != MPI_DATATYPE_NULL && tc_mpi_op(op) != MPI_OP_NULL;
}

/* --- Reductions -------------------------------------------------------------- */

static void test_allreduce(xcoll_dtype_t d, xcoll_op_t op, size_t count, int ip)
{
    case_t c = { "allreduce", d, op, 1, count, -1, ip };
    size_t es = tc_dtype_size(d), bytes = count * es;
    tc_buf_t send = tc_buf_alloc(bytes), recv = tc_buf_alloc(bytes);
    void *in = xmalloc(bytes), *exp = xmalloc(bytes), *ref = xmalloc(bytes);
    int bad = 0;

    fill_red_input(d, op, in, count, rank, 0);
    fill_red_expected(d, op, exp, count, 0);
    memcpy(ip == IP_NONE ? send.p : recv.p, in, bytes);
    if (ip == IP_NONE)
        fill_garbage(recv.p, bytes);
    const void *sendarg = ip == IP_NONE ? send.p : ip == IP_MPI ? XCOLL_IN_PLACE : recv.p;

    bad |= check_status(&c, xcoll_allreduce(sendarg, recv.p, count, d, op, comm, NULL));
    bad |= compare_values(&c, "result", recv.p, exp, count, 0);
    if (ip == IP_NONE)
        bad |= compare_bytes(&c, "send buffer changed", send.p, in, count, es, 0);
    bad |= check_guard(&c, &send, "sendbuf") | check_guard(&c, &recv, "recvbuf");
    if (mpi_has(d, op)) {
        TC_MPI(MPI_Allreduce(in, ref, (int)count, tc_mpi_dtype(d), tc_mpi_op(op), MPI_COMM_WORLD));
        bad |= compare_values(&c, "differs from MPI_Allreduce", recv.p, ref, count, 0);
    }
    case_end(bad);
    tc_buf_free(&send);
    tc_buf_free(&recv);
    free(in);
    free(exp);
    free(ref);
}

/* Float sums are not associative, so an allreduce whose ranks combined
 * the inputs in different orders would hand ranks results that differ in
 * the last bits (docs/ALGORITHMS.md promises they never do). Inputs of
 * many magnitudes make every order give other bits; every rank's result
 * must equal rank 0's byte for byte. */
static void test_allreduce_identical(xcoll_dtype_t d, size_t count, int ip)
{
    case_t c = { "allreduce (identical bits on every rank)", d, XCOLL_SUM, 1, count, -1, ip };
    size_t es = tc_dtype_size(d), bytes = count * es;
    tc_buf_t send = tc_buf_alloc(bytes), recv = tc_buf_alloc(bytes);
    void *in = xmalloc(bytes), *first = xmalloc(bytes);
    uint32_t x = 2463534242u + 7919u * (uint32_t)rank;
    int bad = 0;

    for (size_t i = 0; i < count; i++) {
        /* xorshift: a full 24-bit mantissa, a sign and a scale of 2^-20..2^19,
         * so nearly every sum of two rounds */
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        double v = (double)((x >> 8) | 1u) * (x & 1u ? -1.0 : 1.0);
        unsigned e = (x >> 3) % 40u;
        v = e >= 20 ? v * (double)(1u << (e - 20)) : v / (double)(1u << (20 - e));
        if (d == XCOLL_FLOAT32)
            ((float *)in)[i] = (float)v;
        else
            ((double *)in)[i] = v;
    }
    memcpy(ip == IP_NONE ? send.p : recv.p, in, bytes);
    const void *sendarg = ip == IP_NONE ? send.p : ip == IP_MPI ? XCOLL_IN_PLACE : recv.p;
    bad |= check_status(&c, xcoll_allreduce(sendarg, recv.p, count, d, XCOLL_SUM, comm, NULL));
    memcpy(first, recv.p, bytes);
    TC_MPI(MPI_Bcast(first, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD));
    bad |= compare_bytes(&c, "differs from rank 0's result", recv.p, first, count, es, 0);
    bad |= check_guard(&c, &send, "sendbuf") | check_guard(&c, &recv, "recvbuf");
    case_end(bad);
    tc_buf_free(&send);
    tc_buf_free(&recv);
    free(in);
    free(first);
}

static void test_reduce(xcoll_dtype_t d, xcoll_op_t op, size_t count, int root, int ip)
{
    case_t c = { "reduce", d, op, 1, count, root, ip };
    size_t es = tc_dtype_size(d), bytes = count * es;
    int is_root = rank == root;
    tc_buf_t send = tc_buf_alloc(bytes), recv = tc_buf_alloc(bytes);
    void *in = xmalloc(bytes), *exp = xmalloc(bytes), *ref = xmalloc(bytes);
    int bad = 0;

    fill_red_input(d, op, in, count, rank, 0);
    fill_red_expected(d, op, exp, count, 0);
    /* In place applies at the root only; elsewhere the input is in sendbuf
     * and recvbuf is NULL (or, out of place, a buffer that must stay untouched). */
    int local_ip = is_root ? ip : IP_NONE;
    memcpy(local_ip == IP_NONE ? send.p : recv.p, in, bytes);
    if (local_ip == IP_NONE)
        fill_garbage(recv.p, bytes);
    const void *sendarg = local_ip == IP_NONE ? send.p : local_ip == IP_MPI ? XCOLL_IN_PLACE : recv.p;
    void *recvarg = (is_root || ip == IP_NONE) ? recv.p : NULL;

    bad |= check_status(&c, xcoll_reduce(sendarg, recvarg, count, d, op, root, comm, NULL));
    if (is_root) {
        bad |= compare_values(&c, "result", recv.p, exp, count, 0);
    } else if (recvarg != NULL) {
        void *garbage = xmalloc(bytes);
        fill_garbage(garbage, bytes);
        bad |= compare_bytes(&c, "non-root recvbuf written", recv.p, garbage, count, es, 0);
        free(garbage);
    }
    if (local_ip == IP_NONE)
        bad |= compare_bytes(&c, "send buffer changed", send.p, in, count, es, 0);
    bad |= check_guard(&c, &send, "sendbuf") | check_guard(&c, &recv, "recvbuf");
    if (mpi_has(d, op)) {
        TC_MPI(MPI_Reduce(in, ref, (int)count, tc_mpi_dtype(d), tc_mpi_op(op), root,
                          MPI_COMM_WORLD));
        if (is_root)
            bad |= compare_values(&c, "differs from MPI_Reduce", recv.p, ref, count, 0);
    }
    case_end(bad);
    tc_buf_free(&send);
    tc_buf_free(&recv);
    free(in);
    free(exp);
    free(ref);
}

static void test_reduce_scatter(xcoll_dtype_t d, xcoll_op_t op, size_t count, int ip)
{
    case_t c = { "reduce_scatter", d, op, 1, count, -1, ip };
    size_t es = tc_dtype_size(d), block = count * es, total = block * (size_t)size;
    tc_buf_t send = tc_buf_alloc(total);
    tc_buf_t recv = tc_buf_alloc(ip == IP_MPI ? total : block);
    void *in = xmalloc(total), *exp = xmalloc(block), *ref = xmalloc(block);
    int bad = 0;

    fill_red_input(d, op, in, count * (size_t)size, rank, 0);
    fill_red_expected(d, op, exp, count, (size_t)rank * count);
    const void *sendarg;
    void *recvarg, *result;
    if (ip == IP_NONE) {
        memcpy(send.p, in, total);
        fill_garbage(recv.p, block);
        sendarg = send.p;
        recvarg = recv.p;
        result = recv.p;
    } else if (ip == IP_MPI) {
        memcpy(recv.p, in, total);
        sendarg = XCOLL_IN_PLACE;
        recvarg = recv.p;
        result = recv.p;
    } else {
        memcpy(send.p, in, total);
        sendarg = send.p;
        recvarg = at(send.p, (size_t)rank * block);
        result = recvarg;
    }

    bad |= check_status(&c, xcoll_reduce_scatter(sendarg, recvarg, count, d, op, comm, NULL));
    bad |= compare_values(&c, "result", result, exp, count, 0);
    if (ip == IP_NONE)
        bad |= compare_bytes(&c, "send buffer changed", send.p, in, count * (size_t)size, es, 0);
    bad |= check_guard(&c, &send, "sendbuf") | check_guard(&c, &recv, "recvbuf");
    if (mpi_has(d, op)) {
        TC_MPI(MPI_Reduce_scatter_block(in, ref, (int)count, tc_mpi_dtype(d), tc_mpi_op(op),
                                        MPI_COMM_WORLD));
        bad |= compare_values(&c, "differs from MPI_Reduce_scatter_block", result, ref, count, 0);
    }
    case_end(bad);
    tc_buf_free(&send);
    tc_buf_free(&recv);
    free(in);
    free(exp);
    free(ref);
}

/* --- Data movement ------------------------------------------------------------ */

static unsigned salt_of(const case_t *c)
{
    return (unsigned)(c->count * 31 + (size_t)c->dtype * 7 + (unsigned)c->ip * 3 +
                      (unsigned)(c->root + 1) * 101);
}

static void test_bcast(xcoll_dtype_t d, size_t count, int root)
{
    case_t c = { "bcast", d, XCOLL_SUM, 0, count, root, IP_NONE };
    size_t es = tc_dtype_size(d), bytes = count * es;
    tc_buf_t buf = tc_buf_alloc(bytes);
    void *exp = xmalloc(bytes), *ref = xmalloc(bytes);
    unsigned salt = salt_of(&c);
    int bad = 0;

    fill_pattern(exp, bytes, root, 0, salt);
    if (rank == root)
        memcpy(buf.p, exp, bytes);
    else
        fill_garbage(buf.p, bytes);

    bad |= check_status(&c, xcoll_bcast(buf.p, count, d, root, comm, NULL));
    bad |= compare_bytes(&c, "result", buf.p, exp, count, es, 0);
    bad |= check_guard(&c, &buf, "buf");
    if (opt.mpi_check) {
        if (rank == root)
            memcpy(ref, exp, bytes);
        TC_MPI(MPI_Bcast(ref, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
        bad |= compare_bytes(&c, "differs from MPI_Bcast", buf.p, ref, count, es, 0);
    }
    case_end(bad);
    tc_buf_free(&buf);
    free(exp);
    free(ref);
}

static void test_allgather(xcoll_dtype_t d, size_t count, int ip)
{
    case_t c = { "allgather", d, XCOLL_SUM, 0, count, -1, ip };
    size_t es = tc_dtype_size(d), block = count * es, total = block * (size_t)size;
    tc_buf_t send = tc_buf_alloc(block), recv = tc_buf_alloc(total);
    void *mine = xmalloc(block), *exp = xmalloc(total), *ref = xmalloc(total);
    unsigned salt = salt_of(&c);
    int bad = 0;

    for (int r = 0; r < size; r++)
        fill_pattern(at(exp, (size_t)r * block), block, r, 0, salt);
    fill_pattern(mine, block, rank, 0, salt);
    fill_garbage(recv.p, total);
    const void *sendarg;
    if (ip == IP_NONE) {
        memcpy(send.p, mine, block);
        sendarg = send.p;
    } else {
        memcpy(at(recv.p, (size_t)rank * block), mine, block);
        sendarg = ip == IP_MPI ? XCOLL_IN_PLACE : at(recv.p, (size_t)rank * block);
    }

    bad |= check_status(&c, xcoll_allgather(sendarg, recv.p, count, d, comm, NULL));
    bad |= compare_bytes(&c, "result", recv.p, exp, count * (size_t)size, es, 0);
    if (ip == IP_NONE)
        bad |= compare_bytes(&c, "send buffer changed", send.p, mine, count, es, 0);
    bad |= check_guard(&c, &send, "sendbuf") | check_guard(&c, &recv, "recvbuf");
    if (opt.mpi_check) {
        TC_MPI(MPI_Allgather(mine, (int)block, MPI_BYTE, ref, (int)block, MPI_BYTE,
                             MPI_COMM_WORLD));
        bad |= compare_bytes(&c, "differs from MPI_Allgather", recv.p, ref,
                             count * (size_t)size, es, 0);
    }
    case_end(bad);
    tc_buf_free(&send);
    tc_buf_free(&recv);
    free(mine);
    free(exp);
    free(ref);
}

static void test_alltoall(xcoll_dtype_t d, size_t count, int ip)
{
    case_t c = { "alltoall", d, XCOLL_SUM, 0, count, -1, ip };
    size_t es = tc_dtype_size(d), block = count * es, total = block * (size_t)size;
    tc_buf_t send = tc_buf_alloc(total), recv = tc_buf_alloc(total);
    void *in = xmalloc(total), *exp = xmalloc(total), *ref = xmalloc(total);
    unsigned salt = salt_of(&c);
    int bad = 0;

    /* Rank r's block j is pattern (r, byte j*block...); rank j receives it as block r. */
    fill_pattern(in, total, rank, 0, salt);
    for (int r = 0; r < size; r++)
        fill_pattern(at(exp, (size_t)r * block), block, r, (size_t)rank * block, salt);
    const void *sendarg;
    if (ip == IP_NONE) {
        memcpy(send.p, in, total);
        fill_garbage(recv.p, total);
        sendarg = send.p;
    } else {
        memcpy(recv.p, in, total);
        sendarg = ip == IP_MPI ? XCOLL_IN_PLACE : recv.p;
    }

    bad |= check_status(&c, xcoll_alltoall(sendarg, recv.p, count, d, comm, NULL));
    bad |= compare_bytes(&c, "result", recv.p, exp, count * (size_t)size, es, 0);
    if (ip == IP_NONE)
        bad |= compare_bytes(&c, "send buffer changed", send.p, in, count * (size_t)size, es, 0);
    bad |= check_guard(&c, &send, "sendbuf") | check_guard(&c, &recv, "recvbuf");
    if (opt.mpi_check) {
        TC_MPI(MPI_Alltoall(in, (int)block, MPI_BYTE, ref, (int)block, MPI_BYTE, MPI_COMM_WORLD));
        bad |= compare_bytes(&c, "differs from MPI_Alltoall", recv.p, ref, count * (size_t)size,
                             es, 0);
    }
    case_end(bad);
    tc_buf_free(&send);
    tc_buf_free(&recv);
    free(in);
    free(exp);
    free(ref);
}

static void test_gather(xcoll_dtype_t d, size_t count, int root, int ip)
{
    case_t c = { "gather", d, XCOLL_SUM, 0, count, root, ip };
    size_t es = tc_dtype_size(d), block = count * es, total = block * (size_t)size;
    int is_root = rank == root;
    tc_buf_t send = tc_buf_alloc(block), recv = tc_buf_alloc(is_root ? total : 0);
    void *mine = xmalloc(block), *exp = xmalloc(total), *ref = xmalloc(total);
    unsigned salt = salt_of(&c);
    int bad = 0;

    for (int r = 0; r < size; r++)
        fill_pattern(at(exp, (size_t)r * block), block, r, 0, salt);
    fill_pattern(mine, block, rank, 0, salt);
    const void *sendarg = send.p;
    void *recvarg = is_root ? recv.p : NULL;   /* ignored off-root: NULL must do */
    memcpy(send.p, mine, block);
    if (is_root) {
        fill_garbage(recv.p, total);
        if (ip != IP_NONE) {
            memcpy(at(recv.p, (size_t)root * block), mine, block);
            sendarg = ip == IP_MPI ? XCOLL_IN_PLACE : at(recv.p, (size_t)root * block);
        }
    }

    bad |= check_status(&c, xcoll_gather(sendarg, recvarg, count, d, root, comm, NULL));
    if (is_root)
        bad |= compare_bytes(&c, "result", recv.p, exp, count * (size_t)size, es, 0);
    bad |= compare_bytes(&c, "send buffer changed", send.p, mine, count, es, 0);
    bad |= check_guard(&c, &send, "sendbuf") | check_guard(&c, &recv, "recvbuf");
    if (opt.mpi_check) {
        TC_MPI(MPI_Gather(mine, (int)block, MPI_BYTE, ref, (int)block, MPI_BYTE, root,
                          MPI_COMM_WORLD));
        if (is_root)
            bad |= compare_bytes(&c, "differs from MPI_Gather", recv.p, ref,
                                 count * (size_t)size, es, 0);
    }
    case_end(bad);
    tc_buf_free(&send);
    tc_buf_free(&recv);
    free(mine);
    free(exp);
    free(ref);
}

static void test_scatter(xcoll_dtype_t d, size_t count, int root, int ip)
{
    case_t c = { "scatter", d, XCOLL_SUM, 0, count, root, ip };
    size_t es = tc_dtype_size(d), block = count * es, total = block * (size_t)size;
    int is_root = rank == root;
    tc_buf_t send = tc_buf_alloc(is_root ? total : 0), recv = tc_buf_alloc(block);
    void *in = xmalloc(total), *exp = xmalloc(block), *ref = xmalloc(block);
    unsigned salt = salt_of(&c);
    int bad = 0;

    fill_pattern(in, total, root, 0, salt);
    fill_pattern(exp, block, root, (size_t)rank * block, salt);
    fill_garbage(recv.p, block);
    const void *sendarg = is_root ? send.p : NULL;   /* ignored off-root */
    void *recvarg = recv.p, *result = recv.p;
    if (is_root) {
        memcpy(send.p, in, total);
        if (ip != IP_NONE) {
            recvarg = ip == IP_MPI ? (void *)XCOLL_IN_PLACE : at(send.p, (size_t)root * block);
            result = at(send.p, (size_t)root * block);
        }
    }

    bad |= check_status(&c, xcoll_scatter(sendarg, recvarg, count, d, root, comm, NULL));
    bad |= compare_bytes(&c, "result", result, exp, count, es, 0);
    if (is_root)
        bad |= compare_bytes(&c, "send buffer changed", send.p, in, count * (size_t)size, es, 0);
    bad |= check_guard(&c, &send, "sendbuf") | check_guard(&c, &recv, "recvbuf");
    if (opt.mpi_check) {
        TC_MPI(MPI_Scatter(in, (int)block, MPI_BYTE, ref, (int)block, MPI_BYTE, root,
                           MPI_COMM_WORLD));
        bad |= compare_bytes(&c, "differs from MPI_Scatter", result, ref, count, es, 0);
    }
    case_end(bad);
    tc_buf_free(&send);
    tc_buf_free(&recv);
    free(in);
    free(exp);
    free(ref);
}

/* --- Barrier and point to point ---------------------------------------------- */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One rank enters late; nobody may leave before it entered. The ranks
 * share one clock here (one node), so times compare directly. */
static void test_barrier(int late)
{
    case_t c = { "barrier", XCOLL_INT8, XCOLL_SUM, 0, 0, late, IP_NONE };
    int bad = 0;
    double entered = 0;
    if (rank == late) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        entered = wall_now();
    }
    bad |= check_status(&c, xcoll_barrier(comm));
    double left = wall_now();
    TC_MPI(MPI_Bcast(&entered, 1, MPI_DOUBLE, late, MPI_COMM_WORLD));
    if (left + 1e-3 < entered) {
        char msg[128];
        snprintf(msg, sizeof msg, "left the barrier %.1f ms before rank %d entered it",
                 (entered - left) * 1e3, late);
        case_print(&c, msg, 0, NULL, NULL);
        bad = 1;
    }
    case_end(bad);
}

/* Every rank sends to the next and receives from the previous (itself
 * with one rank), two messages on one tag to check their order. */
static void test_sendrecv(xcoll_dtype_t d, size_t count, int tag)
{
    case_t c = { "sendrecv", d, XCOLL_SUM, 0, count, tag, IP_NONE };
    size_t es = tc_dtype_size(d), bytes = count * es;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    tc_buf_t s1 = tc_buf_alloc(bytes), s2 = tc_buf_alloc(bytes);
    tc_buf_t r1 = tc_buf_alloc(bytes), r2 = tc_buf_alloc(bytes);
    void *e1 = xmalloc(bytes), *e2 = xmalloc(bytes);
    unsigned salt = salt_of(&c) + (unsigned)tag;
    xcoll_request_t q1 = NULL, q2 = NULL;
    int bad = 0;

    fill_pattern(s1.p, bytes, rank, 0, salt);
    fill_pattern(s2.p, bytes, rank, bytes, salt);
    fill_pattern(e1, bytes, prev, 0, salt);
    fill_pattern(e2, bytes, prev, bytes, salt);
    fill_garbage(r1.p, bytes);
    fill_garbage(r2.p, bytes);

    bad |= check_status(&c, xcoll_isend(s1.p, count, d, next, tag, comm, NULL, &q1));
    bad |= check_status(&c, xcoll_isend(s2.p, count, d, next, tag, comm, NULL, &q2));
    bad |= check_status(&c, xcoll_recv(r1.p, count, d, prev, tag, comm, NULL));
    bad |= check_status(&c, xcoll_recv(r2.p, count, d, prev, tag, comm, NULL));
    bad |= check_status(&c, xcoll_wait(&q1));
    bad |= check_status(&c, xcoll_wait(&q2));
    bad |= compare_bytes(&c, "first message", r1.p, e1, count, es, 0);
    bad |= compare_bytes(&c, "second message", r2.p, e2, count, es, 0);
    bad |= check_guard(&c, &r1, "recvbuf 1") | check_guard(&c, &r2, "recvbuf 2");
    bad |= check_guard(&c, &s1, "sendbuf 1") | check_guard(&c, &s2, "sendbuf 2");
    if (q1 != NULL || q2 != NULL) {
        case_print(&c, "xcoll_wait left the request non-NULL", 0, NULL, NULL);
        bad = 1;
    }
    case_end(bad);
    tc_buf_free(&s1);
    tc_buf_free(&s2);
    tc_buf_free(&r1);
    tc_buf_free(&r2);
    free(e1);
    free(e2);
}

/* A receive count other than the send count is XCOLL_ERR_TRUNCATED at the
 * receiver, at any lengths: also where one side fits the shared-memory
 * transport's one-slot limit (8 KiB) and the other does not, and for
 * messages that travel by rendezvous. Runs last, on its own communicator,
 * in case the library treats it as fatal for the communicator. */
static void test_truncation(void)
{
    static const size_t counts[][2] = { { 8, 7 }, { 8, 9 }, { 2048, 2049 }, { 2049, 2048 },
                                        { 262144, 262145 }, { 262145, 262144 } };
    if (size < 2)
        return;
    xcoll_comm_t tcomm = tc_comm_create(MPI_COMM_WORLD, 30.0);
    int32_t *buf = calloc(262145, sizeof(*buf));
    if (buf == NULL)
        tc_fail("out of memory for the truncation test");
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t sc = counts[k][0], rc = counts[k][1];
        case_t c = { "sendrecv truncation", XCOLL_INT32, XCOLL_SUM, 0, sc, -1, IP_NONE };
        int bad = 0;
        if (rank == 0) {
            xcoll_status_t st = xcoll_send(buf, sc, XCOLL_INT32, 1, 5, tcomm, NULL);
            /* The sender may or may not learn of the mismatch. */
            if (st != XCOLL_OK && st != XCOLL_ERR_TRUNCATED)
                bad |= check_status(&c, st);
        } else if (rank == 1) {
            xcoll_status_t st = xcoll_recv(buf, rc, XCOLL_INT32, 0, 5, tcomm, NULL);
            if (st != XCOLL_ERR_TRUNCATED) {
                char msg[128];
                snprintf(msg, sizeof msg, "recv of %zu for a send of %zu returned %d (%s), "
                         "expected XCOLL_ERR_TRUNCATED", rc, sc, (int)st, xcoll_strerror(st));
                case_print(&c, msg, 0, NULL, NULL);
                bad = 1;
            }
        }
        case_end(bad);
    }
    free(buf);
    TC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    xcoll_status_t st = xcoll_comm_destroy(tcomm);
    if (st != XCOLL_OK)
        tc_fail("xcoll_comm_destroy after truncation test: %s", xcoll_strerror(st));
}

/* --- Driver -------------------------------------------------------------------- */

/* --coll takes a comma-separated list of collective names. */
static int run_coll(const char *name)
{
    if (opt.only == NULL)
        return 1;
    size_t n = strlen(name);
    for (const char *p = opt.only; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return 0;
}

static int nroots;
static int roots[3];

static void pick_roots(void)
{
    if (size <= 3) {
        nroots = size;
        for (int r = 0; r < size; r++)
            roots[r] = r;
    } else {
        nroots = 3;
        roots[0] = 0;
        roots[1] = size / 2;
        roots[2] = size - 1;
    }
}

static const size_t small_counts[] = { 0, 1, 7, 1000 };
#define NSMALL (sizeof small_counts / sizeof small_counts[0])

/* The large count runs for a few representative cases only, to keep a
 * 8-rank run on 2 cores within its time. */
static int large_reduction(xcoll_dtype_t d, xcoll_op_t op)
{
    return op == XCOLL_SUM && (d == XCOLL_FLOAT32 || d == XCOLL_INT64);
}

/* Per-rank block counts of the large cases for collectives whose buffers
 * grow with the rank count. */
static size_t large_block(void)
{
    size_t n = opt.large / (size_t)size;
    return n | 1;   /* odd, so blocks never split evenly */
}

static void phase_done(const char *name, double t0, long before)
{
    long n = tc.passed + tc.failed - before, total = 0;
    TC_MPI(MPI_Reduce(&n, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        printf("test_coll: %-15s %6ld checks  %6.2f s\n", name, total, tc_now() - t0);
        fflush(stdout);
    }
}

#define PHASE(name, ...)                                  \
    do {                                                   \
        if (run_coll(name)) {                              \
            double t0_ = tc_now();                         \
            long before_ = tc.passed + tc.failed;          \
            __VA_ARGS__;                                   \
            phase_done(name, t0_, before_);                \
        }                                                  \
    } while (0)

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: test_coll [--quick] [--large N] [--coll LIST] [--no-mpi-check]\n");
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "test_coll");
    rank = tc.rank;
    size = tc.size;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            opt.quick = 1;
        } else if (strcmp(argv[i], "--large") == 0 && i + 1 < argc) {
            opt.large = strtoull(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--coll") == 0 && i + 1 < argc) {
            opt.only = argv[++i];
        } else if (strcmp(argv[i], "--no-mpi-check") == 0) {
            opt.mpi_check = 0;
        } else {
            usage();
            MPI_Finalize();
            return 2;
        }
    }
    pick_roots();
    comm = tc_comm_create(MPI_COMM_WORLD, 30.0);
    int have_large = !opt.quick && opt.large > 0;

    PHASE("allreduce", {
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (size_t oi = 0; oi < TC_NUM_OPS; oi++) {
                xcoll_dtype_t d = tc_all_dtypes[di];
                xcoll_op_t op = tc_all_ops[oi];
                if (!tc_op_valid_for(d, op))
                    continue;
                for (int ip = 0; ip < IP_COUNT; ip++) {
                    for (size_t ci = 0; ci < NSMALL; ci++)
                        test_allreduce(d, op, small_counts[ci], ip);
                    if (have_large && large_reduction(d, op))
                        test_allreduce(d, op, opt.large, ip);
                }
            }
        for (int ip = 0; ip < IP_COUNT; ip++)
            for (size_t ci = 0; ci < NSMALL; ci++) {
                test_allreduce_identical(XCOLL_FLOAT32, small_counts[ci], ip);
                test_allreduce_identical(XCOLL_FLOAT64, small_counts[ci], ip);
            }
        if (have_large)
            test_allreduce_identical(XCOLL_FLOAT32, opt.large, IP_NONE);
    });

    PHASE("reduce", {
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (size_t oi = 0; oi < TC_NUM_OPS; oi++) {
                xcoll_dtype_t d = tc_all_dtypes[di];
                xcoll_op_t op = tc_all_ops[oi];
                if (!tc_op_valid_for(d, op))
                    continue;
                for (int ri = 0; ri < nroots; ri++)
                    for (int ip = 0; ip < IP_COUNT; ip++) {
                        for (size_t ci = 0; ci < NSMALL; ci++)
                            test_reduce(d, op, small_counts[ci], roots[ri], ip);
                        if (have_large && large_reduction(d, op) && ip == IP_NONE)
                            test_reduce(d, op, opt.large, roots[ri], ip);
                    }
            }
    });

    PHASE("reduce_scatter", {
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (size_t oi = 0; oi < TC_NUM_OPS; oi++) {
                xcoll_dtype_t d = tc_all_dtypes[di];
                xcoll_op_t op = tc_all_ops[oi];
                if (!tc_op_valid_for(d, op))
                    continue;
                for (int ip = 0; ip < IP_COUNT; ip++) {
                    for (size_t ci = 0; ci < NSMALL; ci++)
                        test_reduce_scatter(d, op, small_counts[ci], ip);
                    if (have_large && large_reduction(d, op))
                        test_reduce_scatter(d, op, large_block(), ip);
                }
            }
    });

    PHASE("bcast", {
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (int ri = 0; ri < nroots; ri++) {
                for (size_t ci = 0; ci < NSMALL; ci++)
                    test_bcast(tc_all_dtypes[di], small_counts[ci], roots[ri]);
                if (have_large && tc_all_dtypes[di] == XCOLL_FLOAT32)
                    test_bcast(tc_all_dtypes[di], opt.large, roots[ri]);
            }
    });

    PHASE("allgather", {
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (int ip = 0; ip < IP_COUNT; ip++) {
                for (size_t ci = 0; ci < NSMALL; ci++)
                    test_allgather(tc_all_dtypes[di], small_counts[ci], ip);
                if (have_large && tc_all_dtypes[di] == XCOLL_FLOAT32)
                    test_allgather(tc_all_dtypes[di], large_block(), ip);
            }
    });

    PHASE("alltoall", {
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (int ip = 0; ip < IP_COUNT; ip++) {
                for (size_t ci = 0; ci < NSMALL; ci++)
                    test_alltoall(tc_all_dtypes[di], small_counts[ci], ip);
                if (have_large && tc_all_dtypes[di] == XCOLL_FLOAT32)
                    test_alltoall(tc_all_dtypes[di], large_block(), ip);
            }
    });

    PHASE("gather", {
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (int ri = 0; ri < nroots; ri++)
                for (int ip = 0; ip < IP_COUNT; ip++) {
                    for (size_t ci = 0; ci < NSMALL; ci++)
                        test_gather(tc_all_dtypes[di], small_counts[ci], roots[ri], ip);
                    if (have_large && tc_all_dtypes[di] == XCOLL_FLOAT32 && ip == IP_NONE)
                        test_gather(tc_all_dtypes[di], large_block(), roots[ri], ip);
                }
    });

    PHASE("scatter", {
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (int ri = 0; ri < nroots; ri++)
                for (int ip = 0; ip < IP_COUNT; ip++) {
                    for (size_t ci = 0; ci < NSMALL; ci++)
                        test_scatter(tc_all_dtypes[di], small_counts[ci], roots[ri], ip);
                    if (have_large && tc_all_dtypes[di] == XCOLL_FLOAT32 && ip == IP_NONE)
                        test_scatter(tc_all_dtypes[di], large_block(), roots[ri], ip);
                }
    });

    PHASE("barrier", {
        for (int i = 0; i < 2 * size && i < 8; i++)
            test_barrier(i % size);
    });

    PHASE("sendrecv", {
        static const int tags[] = { 0, 1, 12345, XCOLL_TAG_LIMIT - 1 };
        for (size_t di = 0; di < TC_NUM_DTYPES; di++)
            for (size_t ci = 0; ci < NSMALL; ci++)
                test_sendrecv(tc_all_dtypes[di], small_counts[ci], tags[(di + ci) % 4]);
        if (have_large)
            test_sendrecv(XCOLL_FLOAT32, opt.large, 7);
        test_truncation();
    });

    xcoll_status_t st = xcoll_comm_destroy(comm);
    if (st != XCOLL_OK)
        tc_fail("xcoll_comm_destroy: %s", xcoll_strerror(st));
    return tc_finish();
}
