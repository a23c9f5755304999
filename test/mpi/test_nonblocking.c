/* test_nonblocking: many nonblocking collectives in flight at once.
 *
 * 16 operations of mixed kinds (every collective, barrier, a send/recv
 * pair, small and large counts) are posted on one communicator before any
 * is finished, then finished
 *   1. with xcoll_wait in reverse order,
 *   2. with xcoll_test loops over all of them,
 *   3. with xcoll_wait in an order that differs from rank to rank,
 * and finally 16 are spread over three communicators (world, an even/odd
 * split, a second world) and finished in mixed order. Every result must be
 * exact. */
#include "common.h"

typedef enum {
    K_ALLREDUCE, K_BCAST, K_REDUCE, K_ALLGATHER, K_REDUCE_SCATTER, K_ALLTOALL,
    K_GATHER, K_SCATTER, K_BARRIER, K_SEND, K_RECV
} kind_t;

static const char *const kind_names[] = {
    "allreduce", "bcast", "reduce", "allgather", "reduce_scatter", "alltoall",
    "gather", "scatter", "barrier", "send", "recv"
};

typedef struct {
    kind_t kind;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    size_t count;
    int root;
    /* set up per run */
    xcoll_comm_t comm;
    int rank, size;
    unsigned salt;
    void *send, *recv;
    void *exp;          /* expected bytes at result; NULL: nothing to check */
    void *result;
    size_t result_count;  /* elements */
    xcoll_request_t req;
    int done;
    const char *scenario;
} slot_t;

/* The 16 operations; roots are resolved against the communicator's size
 * (-1 = last rank, -2 = middle). */
static const slot_t templates[16] = {
    { .kind = K_ALLREDUCE, .dtype = XCOLL_INT32, .op = XCOLL_SUM, .count = 1000 },
    { .kind = K_BCAST, .dtype = XCOLL_FLOAT32, .count = 777, .root = 0 },
    { .kind = K_ALLREDUCE, .dtype = XCOLL_FLOAT64, .op = XCOLL_MAX, .count = 7 },
    { .kind = K_ALLGATHER, .dtype = XCOLL_UINT8, .count = 13 },
    { .kind = K_REDUCE, .dtype = XCOLL_INT64, .op = XCOLL_SUM, .count = 100, .root = -1 },
    { .kind = K_REDUCE_SCATTER, .dtype = XCOLL_FLOAT32, .op = XCOLL_SUM, .count = 50 },
    { .kind = K_ALLTOALL, .dtype = XCOLL_INT32, .count = 9 },
    { .kind = K_GATHER, .dtype = XCOLL_UINT64, .count = 5, .root = -2 },
    { .kind = K_SCATTER, .dtype = XCOLL_INT8, .count = 11, .root = -1 },
    { .kind = K_BARRIER },
    { .kind = K_SEND, .dtype = XCOLL_INT32, .count = 300 },
    { .kind = K_RECV, .dtype = XCOLL_INT32, .count = 300 },
    { .kind = K_ALLREDUCE, .dtype = XCOLL_BFLOAT16, .op = XCOLL_SUM, .count = 33 },
    { .kind = K_BCAST, .dtype = XCOLL_INT8, .count = 100000, .root = -2 },
    { .kind = K_ALLREDUCE, .dtype = XCOLL_FLOAT32, .op = XCOLL_SUM, .count = 65536 + 5 },
    { .kind = K_REDUCE, .dtype = XCOLL_FLOAT16, .op = XCOLL_MIN, .count = 9, .root = 0 },
};
#define NSLOTS 16

static int64_t red_input(xcoll_op_t op, int r, size_t i, unsigned salt)
{
    if (op == XCOLL_SUM)
        return (int64_t)((r + i + salt) % 5);
    return (int64_t)((r * 7 + i * 3 + salt) % 11) - 5;   /* min, max */
}

static int64_t red_expected(xcoll_op_t op, int size, size_t i, unsigned salt)
{
    int64_t acc = red_input(op, 0, i, salt);
    for (int r = 1; r < size; r++) {
        int64_t v = red_input(op, r, i, salt);
        if (op == XCOLL_SUM)
            acc += v;
        else if (op == XCOLL_MIN)
            acc = v < acc ? v : acc;
        else
            acc = v > acc ? v : acc;
    }
    return acc;
}

static void *xcalloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (p == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    return p;
}

static void pattern(void *buf, size_t n, int src, size_t off, unsigned salt)
{
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)buf)[i] = tc_pattern_byte(src, off + i, salt);
}

/* Fills the slot's buffers and expected result for this rank of comm. */
static void setup(slot_t *s, const slot_t *t, xcoll_comm_t comm, unsigned salt,
                  const char *scenario)
{
    *s = *t;
    s->comm = comm;
    s->scenario = scenario;
    s->salt = salt;
    xcoll_comm_rank(comm, &s->rank);
    xcoll_comm_size(comm, &s->size);
    if (t->root == -1)
        s->root = s->size - 1;
    else if (t->root == -2)
        s->root = s->size / 2;
    int rank = s->rank, size = s->size;
    size_t es = tc_dtype_size(s->dtype), n = s->count, block = n * es;
    size_t all = block * (size_t)size;

    switch (s->kind) {
    case K_ALLREDUCE:
    case K_REDUCE:
        s->send = xcalloc(block);
        s->recv = xcalloc(block);
        s->exp = xcalloc(block);
        for (size_t i = 0; i < n; i++) {
            tc_store(s->dtype, s->send, i, red_input(s->op, rank, i, salt));
            tc_store(s->dtype, s->exp, i, red_expected(s->op, size, i, salt));
        }
        s->result = s->recv;
        s->result_count = n;
        if (s->kind == K_REDUCE && rank != s->root) {
            free(s->recv);
            s->recv = NULL;
            free(s->exp);
            s->exp = NULL;
        }
        break;
    case K_REDUCE_SCATTER:
        s->send = xcalloc(all);
        s->recv = xcalloc(block);
        s->exp = xcalloc(block);
        for (size_t i = 0; i < n * (size_t)size; i++)
            tc_store(s->dtype, s->send, i, red_input(s->op, rank, i, salt));
        for (size_t i = 0; i < n; i++)
            tc_store(s->dtype, s->exp, i,
                     red_expected(s->op, size, (size_t)rank * n + i, salt));
        s->result = s->recv;
        s->result_count = n;
        break;
    case K_BCAST:
        s->recv = xcalloc(block);
        s->exp = xcalloc(block);
        pattern(s->exp, block, s->root, 0, salt);
        if (rank == s->root)
            memcpy(s->recv, s->exp, block);
        s->result = s->recv;
        s->result_count = n;
        break;
    case K_ALLGATHER:
    case K_GATHER:
        s->send = xcalloc(block);
        pattern(s->send, block, rank, 0, salt);
        if (s->kind == K_ALLGATHER || rank == s->root) {
            s->recv = xcalloc(all);
            s->exp = xcalloc(all);
            for (int r = 0; r < size; r++)
                pattern((char *)s->exp + (size_t)r * block, block, r, 0, salt);
            s->result = s->recv;
            s->result_count = n * (size_t)size;
        }
        break;
    case K_ALLTOALL:
        s->send = xcalloc(all);
        s->recv = xcalloc(all);
        s->exp = xcalloc(all);
        pattern(s->send, all, rank, 0, salt);
        for (int r = 0; r < size; r++)
            pattern((char *)s->exp + (size_t)r * block, block, r, (size_t)rank * block, salt);
        s->result = s->recv;
        s->result_count = n * (size_t)size;
        break;
    case K_SCATTER:
        if (rank == s->root) {
            s->send = xcalloc(all);
            pattern(s->send, all, s->root, 0, salt);
        }
        s->recv = xcalloc(block);
        s->exp = xcalloc(block);
        pattern(s->exp, block, s->root, (size_t)rank * block, salt);
        s->result = s->recv;
        s->result_count = n;
        break;
    case K_SEND:   /* send and recv agree on a salt per scenario: salt / 100 */
        s->send = xcalloc(block);
        pattern(s->send, block, rank, 0, salt / 100);
        break;
    case K_RECV:
        s->recv = xcalloc(block);
        s->exp = xcalloc(block);
        pattern(s->exp, block, (rank + size - 1) % size, 0, salt / 100);
        s->result = s->recv;
        s->result_count = n;
        break;
    case K_BARRIER:
        break;
    }
}

static xcoll_status_t post(slot_t *s)
{
    int next = (s->rank + 1) % s->size, prev = (s->rank + s->size - 1) % s->size;
    int tag = 100 + (int)(s->salt / 100);
    switch (s->kind) {
    case K_ALLREDUCE:
        return xcoll_iallreduce(s->send, s->recv, s->count, s->dtype, s->op, s->comm, NULL, &s->req);
    case K_BCAST:
        return xcoll_ibcast(s->recv, s->count, s->dtype, s->root, s->comm, NULL, &s->req);
    case K_REDUCE:
        return xcoll_ireduce(s->send, s->recv, s->count, s->dtype, s->op, s->root, s->comm, NULL,
                             &s->req);
    case K_ALLGATHER:
        return xcoll_iallgather(s->send, s->recv, s->count, s->dtype, s->comm, NULL, &s->req);
    case K_REDUCE_SCATTER:
        return xcoll_ireduce_scatter(s->send, s->recv, s->count, s->dtype, s->op, s->comm, NULL,
                                     &s->req);
    case K_ALLTOALL:
        return xcoll_ialltoall(s->send, s->recv, s->count, s->dtype, s->comm, NULL, &s->req);
    case K_GATHER:
        return xcoll_igather(s->send, s->recv, s->count, s->dtype, s->root, s->comm, NULL, &s->req);
    case K_SCATTER:
        return xcoll_iscatter(s->send, s->recv, s->count, s->dtype, s->root, s->comm, NULL,
                              &s->req);
    case K_BARRIER:
        return xcoll_ibarrier(s->comm, &s->req);
    case K_SEND:
        return xcoll_isend(s->send, s->count, s->dtype, next, tag, s->comm, NULL, &s->req);
    case K_RECV:
        return xcoll_irecv(s->recv, s->count, s->dtype, prev, tag, s->comm, NULL, &s->req);
    }
    return XCOLL_ERR_INTERNAL;
}

static void describe_fail(const slot_t *s, int idx, const char *what)
{
    tc_fail("%s: slot %d %s dtype=%s count=%zu root=%d comm_size=%d: %s", s->scenario, idx,
            kind_names[s->kind], xcoll_dtype_name(s->dtype), s->count, s->root, s->size, what);
}

/* Checks the finished slot's result and frees its buffers. */
static void finish(slot_t *s, int idx, xcoll_status_t st)
{
    char msg[200];
    int bad = 0;
    if (st != XCOLL_OK) {
        snprintf(msg, sizeof msg, "completed with %d (%s)", (int)st, xcoll_strerror(st));
        describe_fail(s, idx, msg);
        bad = 1;
    }
    if (s->req != NULL) {
        describe_fail(s, idx, "request not set to NULL when finished");
        bad = 1;
    }
    if (s->exp != NULL && st == XCOLL_OK) {
        size_t es = tc_dtype_size(s->dtype);
        for (size_t i = 0; i < s->result_count; i++) {
            const unsigned char *g = (const unsigned char *)s->result + i * es;
            const unsigned char *e = (const unsigned char *)s->exp + i * es;
            if (memcmp(g, e, es) != 0) {
                snprintf(msg, sizeof msg, "index %zu: got %.17g expected %.17g", i,
                         tc_load(s->dtype, s->result, i), tc_load(s->dtype, s->exp, i));
                describe_fail(s, idx, msg);
                bad = 1;
                break;
            }
        }
    }
    if (!bad)
        tc_pass();
    free(s->send);
    free(s->recv);
    free(s->exp);
    s->send = s->recv = s->exp = NULL;
    s->done = 1;
}

static void post_all(slot_t *slots, int n)
{
    for (int i = 0; i < n; i++) {
        xcoll_status_t st = post(&slots[i]);
        if (st != XCOLL_OK) {
            char msg[128];
            snprintf(msg, sizeof msg, "post returned %d (%s)", (int)st, xcoll_strerror(st));
            describe_fail(&slots[i], i, msg);
            slots[i].req = NULL;
        }
    }
}

static void wait_in_order(slot_t *slots, const int *order, int n)
{
    for (int k = 0; k < n; k++) {
        slot_t *s = &slots[order[k]];
        finish(s, order[k], xcoll_wait(&s->req));
    }
}

static void test_loop(slot_t *slots, int n)
{
    int remaining = n;
    double t0 = tc_now();
    long polls = 0;
    while (remaining > 0) {
        for (int i = 0; i < n; i++) {
            if (slots[i].done)
                continue;
            int done = -1;
            xcoll_status_t st = xcoll_test(&slots[i].req, &done);
            polls++;
            if (done == 1) {
                finish(&slots[i], i, st);
                remaining--;
            } else if (done != 0 || st != XCOLL_OK) {
                char msg[128];
                snprintf(msg, sizeof msg, "xcoll_test returned %d (%s) with done=%d",
                         (int)st, xcoll_strerror(st), done);
                describe_fail(&slots[i], i, msg);
                /* Not finished yet as far as we know: keep testing. */
            }
        }
        if (tc_now() - t0 > 120) {
            tc_fail("xcoll_test loop: %d operations still unfinished after 120 s (%ld polls)",
                    remaining, polls);
            for (int i = 0; i < n; i++)
                if (!slots[i].done)
                    finish(&slots[i], i, xcoll_wait(&slots[i].req));
            break;
        }
    }
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "test_nonblocking");
    int rank = tc.rank;
    xcoll_comm_t world = tc_comm_create(MPI_COMM_WORLD, 60.0);
    slot_t slots[NSLOTS];
    int order[NSLOTS];

    /* 1. wait in reverse order */
    for (int i = 0; i < NSLOTS; i++)
        setup(&slots[i], &templates[i], world, 1 + (unsigned)i, "reverse-wait");
    post_all(slots, NSLOTS);
    for (int i = 0; i < NSLOTS; i++)
        order[i] = NSLOTS - 1 - i;
    wait_in_order(slots, order, NSLOTS);

    /* 2. xcoll_test loops */
    for (int i = 0; i < NSLOTS; i++)
        setup(&slots[i], &templates[i], world, 101 + (unsigned)i, "test-loop");
    post_all(slots, NSLOTS);
    test_loop(slots, NSLOTS);

    /* 3. an order that differs per rank: rotated by rank, odd ranks reversed */
    for (int i = 0; i < NSLOTS; i++)
        setup(&slots[i], &templates[i], world, 201 + (unsigned)i, "per-rank-order");
    post_all(slots, NSLOTS);
    for (int i = 0; i < NSLOTS; i++) {
        int k = (i + rank * 5) % NSLOTS;
        order[i] = rank % 2 ? NSLOTS - 1 - k : k;
    }
    wait_in_order(slots, order, NSLOTS);

    /* 4. three communicators at once */
    MPI_Comm half;
    TC_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    xcoll_comm_t split = tc_comm_create(half, 60.0);
    xcoll_comm_t world2 = tc_comm_create(MPI_COMM_WORLD, 60.0);
    xcoll_comm_t comms[3] = { world, split, world2 };
    int comm_of[NSLOTS];
    for (int i = 0; i < NSLOTS; i++) {
        /* the send and its matching recv (slots 10, 11) share a communicator */
        comm_of[i] = templates[i].kind == K_RECV ? comm_of[i - 1] : i % 3;
        setup(&slots[i], &templates[i], comms[comm_of[i]], 301 + (unsigned)i, "three-comms");
    }
    post_all(slots, NSLOTS);
    /* Finish the split's operations first, then the others, interleaving test and wait. */
    int k = 0;
    for (int c = 1; c <= 3; c++)
        for (int i = NSLOTS - 1; i >= 0; i--)
            if (comm_of[i] == c % 3)
                order[k++] = i;
    for (int i = 0; i < NSLOTS; i++) {
        slot_t *s = &slots[order[i]];
        int done = 0;
        xcoll_status_t st = xcoll_test(&s->req, &done);
        if (!done)
            st = xcoll_wait(&s->req);
        finish(s, order[i], st);
    }

    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(world2));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(split));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(world));
    TC_MPI(MPI_Comm_free(&half));
    return tc_finish();
}
