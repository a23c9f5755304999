/* The engine and the schedule builder API, on hand-written schedules run
 * over the loopback transport (test/sim/loopback.c).
 * Prints "test_engine: N passed, M failed"; exits 1 on any failure. */
#define _GNU_SOURCE /* open_memstream */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "engine.h"
#include "log.h"
#include "../sim/loopback.h"
#include "schedule.h"

static int n_passed, n_failed;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (cond) {                                                            \
            n_passed++;                                                        \
        } else {                                                               \
            n_failed++;                                                        \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);             \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)

#define MAXR 4

/* A small world: per rank a schedule, buffers and an exec. */
typedef struct {
    int n;
    lb_world_t *w;
    xc_sched_t s[MAXR];
    xc_exec_t x[MAXR];
    int inited[MAXR];
    xcoll_status_t st[MAXR];
} world_t;

static void world_open(world_t *W, int n, xcoll_dtype_t dt, xcoll_op_t op)
{
    int r;
    memset(W, 0, sizeof(*W));
    W->n = n;
    W->w = lb_world_create(n);
    for (r = 0; r < n; r++) {
        xc_sched_init(&W->s[r], r, n, dt, op);
        W->s[r].algo = "test";
    }
}

/* Finishes every schedule and binds it to its buffers. */
static int world_bind(world_t *W, void *const *send, void *const *recv)
{
    int r, ok = 1;
    for (r = 0; r < W->n; r++) {
        if (xc_sched_finish(&W->s[r]) != XCOLL_OK) {
            ok = 0;
            continue;
        }
        if (xc_exec_init(&W->x[r], &W->s[r], send ? send[r] : NULL, recv ? recv[r] : NULL,
                         &lb_transport, lb_comm(W->w, r), 7, 1, NULL) == XCOLL_OK)
            W->inited[r] = 1;
        else
            ok = 0;
    }
    return ok;
}

/* Round-robin until every rank is done or failed, or nothing moves.
 * Returns 1 when all ranks finished (with any status). */
static int world_run(world_t *W)
{
    int r, busy;
    for (;;) {
        int progressed = 0;
        busy = 0;
        for (r = 0; r < W->n; r++) {
            if (!W->inited[r])
                continue;
            W->st[r] = xc_exec_progress(&W->x[r], &progressed);
            if (W->st[r] == XCOLL_INPROGRESS)
                busy = 1;
            if (lb_world_deliver(W->w) > 0)
                progressed = 1;
        }
        if (!busy)
            return 1;
        if (!progressed && lb_world_flush(W->w) == 0)
            return 0;
    }
}

static void world_close(world_t *W)
{
    int r;
    for (r = 0; r < W->n; r++) {
        if (W->inited[r])
            xc_exec_fini(&W->x[r]);
        xc_sched_fini(&W->s[r]);
    }
    lb_world_destroy(W->w);
}

/* --- tests ---------------------------------------------------------------- */

/* A send that depends on a receive forwards the received data, so it must
 * not start before the receive completed. */
static void test_dependency_order(int delayed)
{
    world_t W;
    int32_t recv0[4] = {0}, recv1[4] = {0}, send1[4] = {11, 22, 33, 44};
    void *sends[2] = {NULL, send1}, *recvs[2] = {recv0, recv1};
    lb_stats_t ls;
    int a, progressed = 0;

    world_open(&W, 2, XCOLL_INT32, XCOLL_SUM);
    lb_world_set_delayed(W.w, delayed, 42);
    a = xc_recv(&W.s[0], 1, XC_AT_RECV(0), 16, XC_NODEPS);
    xc_send(&W.s[0], 1, XC_AT_RECV(0), 16, XC_DEPS(a));
    xc_send(&W.s[1], 0, XC_AT_SEND(0), 16, XC_NODEPS);
    xc_recv(&W.s[1], 0, XC_AT_RECV(0), 16, XC_NODEPS);
    CHECK(world_bind(&W, sends, recvs), "bind");

    /* rank 0 alone: its send must wait for data that has not come */
    xc_exec_progress(&W.x[0], &progressed);
    xc_exec_progress(&W.x[0], &progressed);
    lb_stats(W.w, 0, &ls);
    CHECK(ls.msgs_sent == 0, "rank 0 sent %llu messages before its receive completed",
          (unsigned long long)ls.msgs_sent);

    CHECK(world_run(&W), "deadlock");
    CHECK(W.st[0] == XCOLL_OK && W.st[1] == XCOLL_OK, "status %d %d", W.st[0], W.st[1]);
    CHECK(memcmp(recv1, send1, sizeof(send1)) == 0, "forwarded data %d %d %d %d", recv1[0],
          recv1[1], recv1[2], recv1[3]);
    CHECK(W.x[0].msgs_sent == 1 && W.x[0].bytes_sent == 16, "engine counters %llu %llu",
          (unsigned long long)W.x[0].msgs_sent, (unsigned long long)W.x[0].bytes_sent);
    CHECK(lb_world_pending(W.w) == 0, "left over");
    world_close(&W);
}

/* Local steps on one rank: copy, reduce, divide, in dependency order. */
static void test_local_steps(void)
{
    world_t W;
    int32_t send[4] = {3, 6, 9, -7}, recv[4] = {0};
    void *sends[1] = {send}, *recvs[1] = {recv};
    int c, r1, r2;
    size_t t;

    world_open(&W, 1, XCOLL_INT32, XCOLL_AVG);
    W.s[0].divisor = 3;
    t = xc_sched_tmp(&W.s[0], 16);
    c = xc_copy(&W.s[0], XC_AT_SEND(0), XC_AT_TMP(t), 16, XC_NODEPS);
    /* recv = send + tmp = 2 * send, then + send again = 3 * send */
    r1 = xc_reduce_local(&W.s[0], XC_AT_SEND(0), XC_AT_TMP(t), XC_AT_RECV(0), 16, XC_DEPS(c));
    r2 = xc_reduce_local(&W.s[0], XC_AT_RECV(0), XC_AT_SEND(0), XC_AT_RECV(0), 16, XC_DEPS(r1));
    xc_divide_local(&W.s[0], XC_AT_RECV(0), 16, XC_DEPS(r2));
    CHECK(world_bind(&W, sends, recvs), "bind");
    CHECK(world_run(&W) && W.st[0] == XCOLL_OK, "status %d", W.st[0]);
    CHECK(recv[0] == 3 && recv[1] == 6 && recv[2] == 9 && recv[3] == -7, "got %d %d %d %d",
          recv[0], recv[1], recv[2], recv[3]);
    CHECK(W.x[0].msgs_sent == 0, "local steps sent messages");
    world_close(&W);

    /* divide truncates for integers, rounds for floats */
    {
        int32_t v[3] = {7, -7, 8};
        float f[2] = {1.0f, 7.0f};
        void *rv[1] = {v}, *rf[1] = {f};
        world_open(&W, 1, XCOLL_INT32, XCOLL_AVG);
        W.s[0].divisor = 2;
        xc_divide_local(&W.s[0], XC_AT_RECV(0), sizeof(v), XC_NODEPS);
        CHECK(world_bind(&W, NULL, rv) && world_run(&W) && W.st[0] == XCOLL_OK, "divide int");
        CHECK(v[0] == 3 && v[1] == -3 && v[2] == 4, "got %d %d %d", v[0], v[1], v[2]);
        world_close(&W);
        world_open(&W, 1, XCOLL_FLOAT32, XCOLL_AVG);
        W.s[0].divisor = 4;
        xc_divide_local(&W.s[0], XC_AT_RECV(0), sizeof(f), XC_NODEPS);
        CHECK(world_bind(&W, NULL, rf) && world_run(&W) && W.st[0] == XCOLL_OK, "divide float");
        CHECK(f[0] == 0.25f && f[1] == 1.75f, "got %g %g", f[0], f[1]);
        world_close(&W);
    }
}

/* recv_reduce: dst = a op (what arrived in the landing buffer). */
static void test_recv_reduce(int delayed)
{
    world_t W;
    float send0[5] = {1, 2, 3, 4, 5}, send1[5] = {10, -20, 30, -40, 50.5f};
    float recv0[5] = {0}, recv1[5] = {0};
    void *sends[2] = {send0, send1}, *recvs[2] = {recv0, recv1};
    size_t t;
    int i, ok = 1;

    world_open(&W, 2, XCOLL_FLOAT32, XCOLL_MAX);
    lb_world_set_delayed(W.w, delayed, 7);
    t = xc_sched_tmp(&W.s[0], sizeof(send0));
    xc_recv_reduce(&W.s[0], 1, XC_AT_TMP(t), XC_AT_SEND(0), XC_AT_RECV(0), sizeof(send0),
                   XC_NODEPS);
    xc_send(&W.s[1], 0, XC_AT_SEND(0), sizeof(send1), XC_NODEPS);
    CHECK(world_bind(&W, sends, recvs), "bind");
    CHECK(world_run(&W) && W.st[0] == XCOLL_OK && W.st[1] == XCOLL_OK, "status %d %d", W.st[0],
          W.st[1]);
    for (i = 0; i < 5; i++)
        ok &= recv0[i] == (send0[i] > send1[i] ? send0[i] : send1[i]);
    CHECK(ok, "max: %g %g %g %g %g", recv0[0], recv0[1], recv0[2], recv0[3], recv0[4]);
    world_close(&W);
}

/* The operand order of a recv+reduce, which bit-identical results rest on:
 * max of two NaNs keeps the left one's payload, so the result tells which
 * operand was on the left, with the engine reducing (land_reduce 0) and
 * with the transport reducing as the message lands (1). */
static void test_recv_reduce_order(int land_reduce, int a_left)
{
    world_t W;
    uint32_t mine = 0x7fc00001u, theirs = 0x7fc00002u, got = 0, want = a_left ? mine : theirs;
    void *sends[2] = {&mine, &theirs}, *recvs[2] = {&got, NULL};
    size_t t;

    world_open(&W, 2, XCOLL_FLOAT32, XCOLL_MAX);
    lb_world_set_land_reduce(W.w, land_reduce);
    t = xc_sched_tmp(&W.s[0], sizeof(mine));
    xc_recv_reduce_ordered(&W.s[0], 1, XC_AT_TMP(t), XC_AT_SEND(0), XC_AT_RECV(0), sizeof(mine),
                           a_left, XC_NODEPS);
    xc_send(&W.s[1], 0, XC_AT_SEND(0), sizeof(theirs), XC_NODEPS);
    CHECK(world_bind(&W, sends, recvs), "bind");
    CHECK(world_run(&W) && W.st[0] == XCOLL_OK && W.st[1] == XCOLL_OK, "status %d %d", W.st[0],
          W.st[1]);
    CHECK(got == want, "land_reduce %d, a_left %d: got 0x%08x, want 0x%08x", land_reduce, a_left,
          (unsigned)got, (unsigned)want);
    world_close(&W);
}

/* A receive that gets a different length than posted fails, either way. */
static void test_truncation(int send_bytes, int recv_bytes, int eager)
{
    world_t W;
    char sbuf[16] = "abcdefghijklmno", rbuf[16] = {0};
    void *sends[2] = {sbuf, NULL}, *recvs[2] = {NULL, rbuf};
    int saved = xc_log_level;

    world_open(&W, 2, XCOLL_UINT8, XCOLL_SUM);
    lb_world_set_eager(W.w, eager);
    xc_send(&W.s[0], 1, XC_AT_SEND(0), (size_t)send_bytes, XC_NODEPS);
    xc_recv(&W.s[1], 0, XC_AT_RECV(0), (size_t)recv_bytes, XC_NODEPS);
    CHECK(world_bind(&W, sends, recvs), "bind");
    xc_log_level = -1; /* the failure is expected: keep the output clean */
    world_run(&W);
    xc_log_level = saved;
    CHECK(W.st[1] == XCOLL_ERR_TRUNCATED, "send %d recv %d: status %d", send_bytes, recv_bytes,
          W.st[1]);
    CHECK(W.x[1].status == XCOLL_ERR_TRUNCATED, "exec status %d", W.x[1].status);
    world_close(&W);
}

/* Zero-byte messages carry order only; no buffer is needed. */
static void test_zero_bytes(int delayed)
{
    world_t W;
    const xc_ref_t none = xc_ref(XC_BUF_NONE, 0);
    int r, k, prev[3] = {-1, -1, -1};

    world_open(&W, 3, XCOLL_INT32, XCOLL_SUM);
    lb_world_set_delayed(W.w, delayed, 3);
    for (k = 0; k < 5; k++) {
        for (r = 0; r < 3; r++) {
            xc_send(&W.s[r], (r + 1) % 3, none, 0, XC_DEPS(prev[r]));
            prev[r] = xc_recv(&W.s[r], (r + 2) % 3, none, 0, XC_DEPS(prev[r]));
        }
    }
    CHECK(world_bind(&W, NULL, NULL), "bind");
    CHECK(world_run(&W), "deadlock");
    for (r = 0; r < 3; r++)
        CHECK(W.st[r] == XCOLL_OK && W.x[r].msgs_sent == 5 && W.x[r].bytes_sent == 0,
              "rank %d: status %d, %llu messages", r, W.st[r],
              (unsigned long long)W.x[r].msgs_sent);
    CHECK(lb_world_pending(W.w) == 0, "left over");
    world_close(&W);
}

/* Many messages between one pair, more than the 8-bit slot numbers: the
 * k-th send still lands in the k-th receive. */
static void test_many_steps(int nmsg, int delayed, int eager)
{
    world_t W;
    int32_t *send = malloc((size_t)nmsg * sizeof(int32_t));
    int32_t *recv = calloc((size_t)nmsg, sizeof(int32_t));
    void *sends[2] = {send, NULL}, *recvs[2] = {NULL, recv};
    int k, bad = -1;

    for (k = 0; k < nmsg; k++)
        send[k] = k * 3 + 1;
    world_open(&W, 2, XCOLL_INT32, XCOLL_SUM);
    lb_world_set_delayed(W.w, delayed, 99);
    lb_world_set_eager(W.w, eager);
    for (k = 0; k < nmsg; k++) {
        xc_send(&W.s[0], 1, XC_AT_SEND((size_t)k * 4), 4, XC_NODEPS);
        xc_recv(&W.s[1], 0, XC_AT_RECV((size_t)k * 4), 4, XC_NODEPS);
    }
    CHECK(W.s[0].nsteps == (uint32_t)nmsg && W.s[0].steps[nmsg - 1].slot == (uint32_t)nmsg - 1,
          "slots numbered in order");
    CHECK(world_bind(&W, sends, recvs), "bind");
    CHECK(world_run(&W) && W.st[0] == XCOLL_OK && W.st[1] == XCOLL_OK, "status %d %d", W.st[0],
          W.st[1]);
    for (k = 0; k < nmsg && bad < 0; k++)
        if (recv[k] != send[k])
            bad = k;
    CHECK(bad < 0, "%d messages: message %d got %d", nmsg, bad, bad < 0 ? 0 : recv[bad]);
    world_close(&W);
    free(send);
    free(recv);
}

/* Receives posted out of order still take the message of their own slot. */
static void test_slots(void)
{
    world_t W;
    int32_t send[6] = {1, 2, 2, 3, 3, 3}, recv[6] = {0}, scratch = 0;
    void *sends[2] = {send, NULL}, *recvs[2] = {&scratch, recv};
    int gate;

    world_open(&W, 2, XCOLL_INT32, XCOLL_SUM);
    lb_world_set_delayed(W.w, 1, 5);
    xc_send(&W.s[0], 1, XC_AT_SEND(0), 4, XC_NODEPS);  /* #0: 4 bytes */
    xc_send(&W.s[0], 1, XC_AT_SEND(4), 8, XC_NODEPS);  /* #1: 8 bytes */
    xc_send(&W.s[0], 1, XC_AT_SEND(12), 12, XC_NODEPS); /* #2: 12 bytes */
    /* rank 1 posts #2 and #1 first; #0 waits behind a local step */
    gate = xc_copy(&W.s[1], XC_AT_RECV(20), XC_AT_RECV(20), 4, XC_NODEPS);
    gate = xc_copy(&W.s[1], XC_AT_RECV(20), XC_AT_RECV(20), 4, XC_DEPS(gate));
    xc_recv(&W.s[1], 0, XC_AT_RECV(0), 4, XC_DEPS(gate));
    xc_recv(&W.s[1], 0, XC_AT_RECV(4), 8, XC_NODEPS);
    xc_recv(&W.s[1], 0, XC_AT_RECV(12), 12, XC_NODEPS);
    CHECK(W.s[1].steps[2].slot == 0 && W.s[1].steps[3].slot == 1 && W.s[1].steps[4].slot == 2,
          "receive slots %u %u %u", W.s[1].steps[2].slot, W.s[1].steps[3].slot,
          W.s[1].steps[4].slot);
    CHECK(world_bind(&W, sends, recvs), "bind");
    CHECK(world_run(&W) && W.st[0] == XCOLL_OK && W.st[1] == XCOLL_OK, "status %d %d", W.st[0],
          W.st[1]);
    CHECK(memcmp(send, recv, sizeof(send)) == 0, "got %d %d %d %d %d %d", recv[0], recv[1],
          recv[2], recv[3], recv[4], recv[5]);
    world_close(&W);
}

/* Builder errors: a dependency on a later step, a peer outside the
 * communicator; later calls do nothing and the first error sticks. */
static void test_build_errors(void)
{
    xc_sched_t s;
    int saved = xc_log_level, id;

    xc_log_level = -1;
    xc_sched_init(&s, 0, 2, XCOLL_INT32, XCOLL_SUM);
    id = xc_send(&s, 1, XC_AT_SEND(0), 4, XC_DEPS(3));
    CHECK(id < 0 && s.err == XCOLL_ERR_INTERNAL, "forward dependency: id %d err %d", id, s.err);
    id = xc_copy(&s, XC_AT_SEND(0), XC_AT_RECV(0), 4, XC_NODEPS);
    CHECK(id < 0 && s.nsteps == 0, "a step after an error was added");
    CHECK(xc_sched_finish(&s) == XCOLL_ERR_INTERNAL, "finish reports the error");
    xc_sched_fini(&s);

    xc_sched_init(&s, 0, 2, XCOLL_INT32, XCOLL_SUM);
    id = xc_recv(&s, 2, XC_AT_RECV(0), 4, XC_NODEPS);
    CHECK(id < 0 && s.err == XCOLL_ERR_INTERNAL, "peer out of range: id %d err %d", id, s.err);
    xc_sched_fini(&s);

    /* negative ids in a dependency list mean "none" */
    xc_sched_init(&s, 0, 2, XCOLL_INT32, XCOLL_SUM);
    id = xc_send(&s, 1, XC_AT_SEND(0), 4, XC_DEPS(-1, -1));
    CHECK(id == 0 && s.steps[0].ndeps == 0, "negative dependencies kept");
    CHECK(xc_sched_tmp(&s, 3) == 0 && xc_sched_tmp(&s, 5) == 64 && s.tmp_bytes == 69,
          "scratch aligned to 64 bytes: %zu", s.tmp_bytes);
    xc_sched_finish(&s);
    xc_sched_fini(&s);
    xc_log_level = saved;
}

/* A step on a buffer the call did not provide fails, not crashes. */
static void test_missing_buffer(void)
{
    world_t W;
    int32_t recv[2];
    void *recvs[1] = {recv};
    int saved = xc_log_level;

    world_open(&W, 1, XCOLL_INT32, XCOLL_SUM);
    xc_copy(&W.s[0], XC_AT_SEND(0), XC_AT_RECV(0), 8, XC_NODEPS);
    CHECK(world_bind(&W, NULL, recvs), "bind");
    xc_log_level = -1;
    world_run(&W);
    xc_log_level = saved;
    CHECK(W.st[0] == XCOLL_ERR_INTERNAL, "status %d", W.st[0]);
    world_close(&W);
}

/* Cancelling an exec releases what it posted. */
static void test_cancel(void)
{
    world_t W;
    int32_t recv[2];
    void *recvs[2] = {recv, NULL};
    int progressed = 0;
    xcoll_status_t st;

    world_open(&W, 2, XCOLL_INT32, XCOLL_SUM);
    xc_recv(&W.s[0], 1, XC_AT_RECV(0), 8, XC_NODEPS); /* nobody sends */
    CHECK(world_bind(&W, NULL, recvs), "bind");
    W.inited[1] = 0;
    xc_exec_fini(&W.x[1]);
    st = xc_exec_progress(&W.x[0], &progressed);
    CHECK(st == XCOLL_INPROGRESS && progressed, "status %d", st);
    CHECK(lb_world_pending(W.w) == 1, "one receive posted");
    xc_exec_cancel(&W.x[0]);
    CHECK(W.x[0].status == XCOLL_ERR_TIMEOUT, "cancel status %d", W.x[0].status);
    CHECK(lb_world_pending(W.w) == 0, "receive released");
    CHECK(xc_exec_progress(&W.x[0], &progressed) == XCOLL_ERR_TIMEOUT, "stays failed");
    world_close(&W);
}

/* An empty schedule is done at once. */
static void test_empty(void)
{
    world_t W;
    int progressed = 0;
    world_open(&W, 1, XCOLL_INT32, XCOLL_SUM);
    CHECK(world_bind(&W, NULL, NULL), "bind");
    CHECK(xc_exec_progress(&W.x[0], &progressed) == XCOLL_OK, "empty schedule not done");
    world_close(&W);
}

/* The printed schedule names every step, one a line, with dependencies. */
static void test_print(void)
{
    xc_sched_t s;
    char *text = NULL, *p;
    size_t len = 0;
    int lines = 0, a;
    FILE *f;

    xc_sched_init(&s, 1, 4, XCOLL_FLOAT32, XCOLL_SUM);
    s.algo = "handmade";
    a = xc_recv(&s, 0, XC_AT_TMP(xc_sched_tmp(&s, 64)), 64, XC_NODEPS);
    a = xc_reduce_local(&s, XC_AT_SEND(0), XC_AT_TMP(0), XC_AT_RECV(0), 64, XC_DEPS(a));
    xc_send(&s, 2, XC_AT_RECV(0), 64, XC_DEPS(a));
    xc_recv_reduce(&s, 3, XC_AT_TMP(0), XC_AT_RECV(0), XC_AT_RECV(0), 64, XC_DEPS(a));
    xc_copy(&s, XC_AT_RECV(0), XC_AT_RECV(64), 64, XC_NODEPS);
    xc_divide_local(&s, XC_AT_RECV(0), 64, XC_NODEPS);
    xc_sched_finish(&s);
    f = open_memstream(&text, &len);
    xc_sched_print(&s, f);
    fclose(f);
    for (p = text; p && *p; p++)
        lines += *p == '\n';
    CHECK(lines == 1 + (int)s.nsteps, "%d lines for %u steps", lines, s.nsteps);
    CHECK(strstr(text, "handmade") && strstr(text, "rank 1 of 4") && strstr(text, "float32"),
          "header: %s", text);
    CHECK(strstr(text, "send") && strstr(text, "recv+reduce") && strstr(text, "copy") &&
              strstr(text, "divide") && strstr(text, "reduce"),
          "step kinds: %s", text);
    CHECK(strstr(text, "after 0") && strstr(text, "after 1"), "dependencies: %s", text);
    if (n_failed)
        fputs(text, stdout);
    free(text);
    xc_sched_fini(&s);
}

int main(void)
{
    int delayed;
    xc_log_init();
    for (delayed = 0; delayed < 2; delayed++) {
        test_dependency_order(delayed);
        test_recv_reduce(delayed);
        test_zero_bytes(delayed);
        test_many_steps(5000, delayed, 0);
        test_many_steps(600, delayed, 1);
    }
    for (delayed = 0; delayed < 4; delayed++)
        test_recv_reduce_order(delayed & 1, delayed >> 1);
    test_local_steps();
    test_truncation(8, 4, 0);
    test_truncation(4, 8, 0);
    test_truncation(8, 4, 1);
    test_truncation(0, 4, 0);
    test_slots();
    test_build_errors();
    test_missing_buffer();
    test_cancel();
    test_empty();
    test_print();
    printf("test_engine: %d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
