/* The progress thread (xcoll_config_t.progress_thread), from its promise:
 *  - a nonblocking collective completes while the caller computes and
 *    makes no xcoll call at all: after the compute, one xcoll_test finds
 *    it done (large messages too, which need both sides to act);
 *  - calls from several threads at once are safe: threads of one process,
 *    each on a communicator of its own, run collectives concurrently, and
 *    every result is right;
 *  - blocking calls and xcoll_wait work on top of it;
 *  - and, with or without the thread, a rank that waits long for a late
 *    peer sleeps until the peer's message wakes it: it does not keep a
 *    core busy meanwhile (CPU time well under the wall time);
 *  - a rank waiting for a peer on its node, in a communicator that also
 *    spans nodes (so its wait depends on UCX as well), gets the message
 *    (it sleeps on UCX's event fd and its doorbell there; that the peer
 *    rang it shows in the debug log, which run_cluster_tests reads);
 *  - a communicator may be created with a bootstrap whose allgather is
 *    itself an xcoll collective on another communicator (what a drop-in
 *    serving MPI_Allgather does), while the thread runs: creating holds
 *    xcoll's lock, and a wait inside it with the lock held twice hung.
 *
 * Usage: test_progress [--quick] */
#include <pthread.h>

#include "common.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Busy for `seconds` without calling xcoll (the optimiser may not drop it). */
static volatile double sink;
static void compute(double seconds)
{
    double t0 = now_s(), x = 1;
    while (now_s() - t0 < seconds)
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static xcoll_comm_t comm_with_thread(MPI_Comm mc)
{
    xcoll_config_t cfg;
    xcoll_comm_t comm = NULL;
    if (xcoll_config_init(&cfg) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 2);
    cfg.timeout_s = getenv("XCOLL_TIMEOUT") ? cfg.timeout_s : 60;
    cfg.progress_thread = 1;
    if (xcoll_comm_create_mpi(mc, &cfg, &comm) != XCOLL_OK) {
        fprintf(stderr, "test_progress r%d: xcoll_comm_create_mpi failed\n", tc.rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return comm;
}

/* 1. Completion without the caller. */
static void mark_finished(void *flag)
{
    __atomic_store_n((int *)flag, 1, __ATOMIC_RELEASE);
}

static int finished(const int *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static void test_overlap(xcoll_comm_t comm, size_t count)
{
    const int P = tc.size;
    float *in = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
    int *a2a_in = malloc(count * sizeof(int)), *a2a_out = malloc(count * sizeof(int));
    size_t blk = count / (size_t)P, i;
    xcoll_request_t r1 = NULL, r2 = NULL;
    int done1 = 0, done2 = 0, bad = 0;
    int fin1 = 0, fin2 = 0; /* set by the callbacks: alive until both finish */
    for (i = 0; i < count; i++) {
        in[i] = (float)(tc.rank + 1);
        a2a_in[i] = tc.rank * 1000 + (int)(i / (blk ? blk : 1));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TC_EXPECT(XCOLL_OK, xcoll_iallreduce(in, out, count, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL, &r1));
    TC_EXPECT(XCOLL_OK,
              xcoll_ialltoall(a2a_in, a2a_out, blk, XCOLL_INT32, comm, NULL, &r2));
    /* no xcoll call: only the thread can move them. 0.4 s is plenty on
     * a quiet machine; make check runs suites side by side, and 4 ranks
     * computing on 2 cores beside them kept a rank's thread off the cores
     * longer (twice in CI, across nodes), so the compute goes on, still
     * without calling xcoll, until the thread says both finished (the
     * callbacks it runs) or 10 s have passed. */
    TC_EXPECT(XCOLL_OK, xcoll_request_notify(r1, mark_finished, &fin1));
    TC_EXPECT(XCOLL_OK, xcoll_request_notify(r2, mark_finished, &fin2));
    compute(0.4);
    for (int k = 0; k < 96 && !(finished(&fin1) && finished(&fin2)); k++)
        compute(0.1);
    TC_EXPECT(XCOLL_OK, xcoll_test(&r1, &done1));
    TC_EXPECT(XCOLL_OK, xcoll_test(&r2, &done2));
    if (done1 && done2)
        tc_pass();
    else
        tc_fail("%zu elements: after 0.4-10 s of compute the allreduce is %s, the alltoall %s",
                count, done1 ? "done" : "NOT done", done2 ? "done" : "NOT done");
    if (!done1)
        TC_EXPECT(XCOLL_OK, xcoll_wait(&r1));
    if (!done2)
        TC_EXPECT(XCOLL_OK, xcoll_wait(&r2));
    for (i = 0; i < count; i++)
        bad += out[i] != (float)(P * (P + 1) / 2);
    for (i = 0; i < blk * (size_t)P; i++)
        bad += a2a_out[i] != (int)(i / blk) * 1000 + tc.rank;
    if (bad)
        tc_fail("%d wrong elements after the overlapped calls (%zu elements)", bad, count);
    else
        tc_pass();
    free(in), free(out), free(a2a_in), free(a2a_out);
}

/* 2. Threads of one process, a communicator each, collectives at once. */
typedef struct {
    xcoll_comm_t comm;
    int id, iters, bad;
    xcoll_status_t st;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    const int P = tc.size;
    enum { N = 300 };
    int in[N], out[N];
    size_t counts[64], displs[64];
    for (int it = 0; it < w->iters && w->st == XCOLL_OK; it++) {
        for (int i = 0; i < N; i++)
            in[i] = tc.rank + w->id * 100 + it;
        w->st = xcoll_allreduce(in, out, N, XCOLL_INT32, XCOLL_SUM, w->comm, NULL);
        for (int i = 0; i < N && w->st == XCOLL_OK; i++)
            w->bad += out[i] != P * (P - 1) / 2 + P * (w->id * 100 + it);
        /* and a nonblocking allgatherv, waited for */
        for (int j = 0; j < P; j++)
            counts[j] = (size_t)(j % 3) + 1, displs[j] = (size_t)j * 4;
        xcoll_request_t r = NULL;
        if (w->st == XCOLL_OK)
            w->st = xcoll_iallgatherv(in, counts[tc.rank], out, counts, displs, XCOLL_INT32,
                                      w->comm, NULL, &r);
        if (w->st == XCOLL_OK)
            w->st = xcoll_wait(&r);
        for (int j = 0; j < P && w->st == XCOLL_OK; j++)
            for (size_t k = 0; k < counts[j]; k++)
                w->bad += out[displs[j] + k] != j + w->id * 100 + it;
    }
    return NULL;
}

static void test_threads(int nthreads, int iters)
{
    MPI_Comm mc[8];
    worker_t w[8];
    pthread_t th[8];
    int t, bad = 0;
    for (t = 0; t < nthreads; t++) {
        TC_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &mc[t]));
        w[t].comm = comm_with_thread(mc[t]);
        w[t].id = t;
        w[t].iters = iters;
        w[t].bad = 0;
        w[t].st = XCOLL_OK;
    }
    for (t = 0; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, worker, &w[t]) != 0) {
            fprintf(stderr, "test_progress: pthread_create failed\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    for (t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        TC_EXPECT(XCOLL_OK, w[t].st);
        bad += w[t].bad;
    }
    if (bad)
        tc_fail("%d threads: %d wrong elements", nthreads, bad);
    else
        tc_pass();
    for (t = 0; t < nthreads; t++) {
        TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(w[t].comm));
        MPI_Comm_free(&mc[t]);
    }
}

/* 3. xcoll_request_notify: every callback exactly once, in the order the
 * requests finish, not the order they were posted; at once for a request
 * already finished; a second registration refused. Rank 0 posts a receive
 * from rank 1, then a barrier; rank 1 sends only when rank 0 tells it
 * (over MPI) that the barrier's callback ran: a callback delivered in
 * posting order would never let it (30 s, then a failure). Rank 1 leaving
 * its barrier is not enough: rank 0 may take rank 1's message before the
 * barrier's last one, which arrives by another way (seen under ASan). */
static pthread_mutex_t note_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t note_cv = PTHREAD_COND_INITIALIZER;
static int notes[3], note_order[3], nnotes;
static void note(void *arg)
{
    int i = (int)(intptr_t)arg;
    pthread_mutex_lock(&note_mu);
    if (nnotes < 3)
        note_order[nnotes] = i;
    notes[i]++;
    nnotes++;
    pthread_cond_broadcast(&note_cv);
    pthread_mutex_unlock(&note_mu);
}

static int wait_notes(int n)
{
    struct timespec until;
    int ok;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&note_mu);
    while (nnotes < n && pthread_cond_timedwait(&note_cv, &note_mu, &until) == 0)
        ;
    ok = nnotes >= n;
    pthread_mutex_unlock(&note_mu);
    return ok;
}

static void test_notify(xcoll_comm_t comm)
{
    int v = 0, w = 0, bad = 0, go = 1;
    xcoll_request_t rr = NULL, rs = NULL, rb = NULL;
    if (tc.size < 2) {
        /* a one-rank barrier finishes while it is posted */
        TC_EXPECT(XCOLL_OK, xcoll_ibarrier(comm, &rb));
        TC_EXPECT(XCOLL_OK, xcoll_request_notify(rb, note, (void *)(intptr_t)0));
        bad += notes[0] != 1;
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_request_notify(rb, note, (void *)(intptr_t)1));
        TC_EXPECT(XCOLL_OK, xcoll_wait(&rb));
        bad += notes[0] != 1 || notes[1] != 0;
    } else if (tc.rank == 0) {
        TC_EXPECT(XCOLL_OK, xcoll_irecv(&v, 1, XCOLL_INT32, 1, 5, comm, NULL, &rr));
        TC_EXPECT(XCOLL_OK, xcoll_request_notify(rr, note, (void *)(intptr_t)0));
        TC_EXPECT(XCOLL_OK, xcoll_ibarrier(comm, &rb));
        TC_EXPECT(XCOLL_OK, xcoll_request_notify(rb, note, (void *)(intptr_t)1));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_request_notify(rb, note, (void *)(intptr_t)2));
        /* no xcoll call until both are noted: the thread finishes them */
        bad += !wait_notes(1) || note_order[0] != 1;
        TC_MPI(MPI_Send(&go, 1, MPI_INT, 1, 77, MPI_COMM_WORLD));
        bad += !wait_notes(2);
        bad += note_order[0] != 1 || note_order[1] != 0 || notes[0] != 1 || notes[1] != 1 ||
               notes[2] != 0;
        TC_EXPECT(XCOLL_OK, xcoll_wait(&rb));
        TC_EXPECT(XCOLL_OK, xcoll_wait(&rr));
        bad += v != 4242;
    } else {
        TC_EXPECT(XCOLL_OK, xcoll_barrier(comm));
        if (tc.rank == 1) {
            TC_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            w = 4242;
            TC_EXPECT(XCOLL_OK, xcoll_isend(&w, 1, XCOLL_INT32, 0, 5, comm, NULL, &rs));
            TC_EXPECT(XCOLL_OK, xcoll_request_notify(rs, note, (void *)(intptr_t)0));
            bad += !wait_notes(1) || notes[0] != 1;
            TC_EXPECT(XCOLL_OK, xcoll_wait(&rs));
        }
    }
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_request_notify(NULL, note, NULL));
    if (bad)
        tc_fail("notify: %d wrong (calls %d %d %d, order %d %d)", bad, notes[0], notes[1], notes[2],
                note_order[0], note_order[1]);
    else
        tc_pass();
}

/* 4. The last rank enters an allreduce 300 ms late; the others wait in
 * it (xcoll_wait when nonblocking). Their process's CPU time during the
 * call, the thread's included, must stay well under its wall time: about
 * 1 ms of spinning and yielding, then sleeping until woken. (Napping
 * 20 us at a time, as waits did before they slept, costs ~0.3 here.) */
static void test_idle_cpu(xcoll_comm_t comm, int nonblocking)
{
    int64_t in = tc.rank, out = -1;
    struct timespec c0, c1;
    double t0, wall, cpu;
    xcoll_status_t st;
    if (tc.size < 2)
        return;
    TC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (tc.rank == tc.size - 1) {
        struct timespec late = { 0, 300 * 1000 * 1000 };
        nanosleep(&late, NULL);
    }
    t0 = now_s();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    if (nonblocking) {
        xcoll_request_t r = NULL;
        st = xcoll_iallreduce(&in, &out, 1, XCOLL_INT64, XCOLL_MAX, comm, NULL, &r);
        if (st == XCOLL_OK)
            st = xcoll_wait(&r);
    } else {
        st = xcoll_allreduce(&in, &out, 1, XCOLL_INT64, XCOLL_MAX, comm, NULL);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    wall = now_s() - t0;
    cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
    if (st != XCOLL_OK || out != tc.size - 1)
        tc_fail("late-peer allreduce: status %d, result %lld", (int)st, (long long)out);
    else if (tc.rank != tc.size - 1 && wall > 0.2 && cpu > 0.15 * wall)
        tc_fail("waiting %.0f ms for a late peer (%s) cost %.0f ms of CPU: it should sleep",
                wall * 1e3, nonblocking ? "progress thread" : "caller", cpu * 1e3);
    else
        tc_pass();
}

/* 4b. Rounds in which a rank's peer on the same node sends 20 ms late:
 * the receiver sleeps, and the message wakes it. Across nodes the wait
 * depends on UCX too; then the doorbell ends the sleep, which is seen in
 * the debug log only ("... ended by the doorbell": run_cluster_tests
 * counts them), as a bell that never rang costs a late wakeup, not a
 * wrong result. */
static void test_local_wake(xcoll_comm_t comm, int rounds)
{
    MPI_Comm node;
    int lrank, lsize, *world_of;
    TC_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    TC_MPI(MPI_Comm_rank(node, &lrank));
    TC_MPI(MPI_Comm_size(node, &lsize));
    world_of = malloc((size_t)lsize * sizeof(*world_of));
    TC_MPI(MPI_Allgather(&tc.rank, 1, MPI_INT, world_of, 1, MPI_INT, node));
    TC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; r < rounds && lsize >= 2 && lrank < 2; r++) {
        int peer = world_of[1 - lrank];
        int64_t v = (int64_t)r * 1000 + tc.rank;
        xcoll_status_t st;
        if (lrank == 1) {
            struct timespec late = { 0, 20 * 1000 * 1000 };
            nanosleep(&late, NULL);
            st = xcoll_send(&v, 1, XCOLL_INT64, peer, 7, comm, NULL);
        } else {
            st = xcoll_recv(&v, 1, XCOLL_INT64, peer, 7, comm, NULL);
        }
        if (st != XCOLL_OK || (lrank == 0 && v != (int64_t)r * 1000 + peer)) {
            tc_fail("local late send, round %d: status %d, got %lld", r, (int)st, (long long)v);
            break;
        }
        if (r == rounds - 1)
            tc_pass();
    }
    TC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(world_of);
    MPI_Comm_free(&node);
}

/* 5. A bootstrap over xcoll itself (ctx: the communicator that serves it). */
static int xcoll_allgather_boot(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    return xcoll_allgather(sendbuf, recvbuf, bytes, XCOLL_UINT8, (xcoll_comm_t)ctx, NULL) ==
                   XCOLL_OK
               ? 0
               : -1;
}

static void test_nested_bootstrap(xcoll_comm_t parent)
{
    xcoll_bootstrap_t boot = {tc.rank, tc.size, xcoll_allgather_boot, parent};
    xcoll_config_t cfg;
    xcoll_comm_t child = NULL;
    int x = tc.rank + 1, sum = 0;
    if (xcoll_config_init(&cfg) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 2);
    cfg.timeout_s = 30;
    if (!TC_EXPECT(XCOLL_OK, xcoll_comm_create(&boot, &cfg, &child)))
        return;
    if (TC_EXPECT(XCOLL_OK, xcoll_allreduce(&x, &sum, 1, XCOLL_INT32, XCOLL_SUM, child, NULL)) &&
        sum != tc.size * (tc.size + 1) / 2)
        tc_fail("allreduce on a communicator bootstrapped over xcoll: %d, want %d", sum,
                tc.size * (tc.size + 1) / 2);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(child));
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick"), provided = 0;
    /* the test's own threads call only xcoll, never MPI */
    TC_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    tc.name = "test_progress";
    tc.max_reports = 4;
    TC_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &tc.rank));
    TC_MPI(MPI_Comm_size(MPI_COMM_WORLD, &tc.size));
    setvbuf(stderr, NULL, _IONBF, 0);
    if (tc.size > 64) {
        MPI_Finalize();
        return 77;
    }
    /* before any communicator starts the thread: the caller waits */
    xcoll_comm_t comm = tc_comm_create(MPI_COMM_WORLD, 60);
    test_idle_cpu(comm, 0);
    test_local_wake(comm, 20);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    comm = comm_with_thread(MPI_COMM_WORLD);
    test_idle_cpu(comm, 1);
    test_local_wake(comm, 20);
    test_overlap(comm, 1000);
    test_overlap(comm, (size_t)1 << (quick ? 18 : 20)); /* CMA-sized messages */
    test_notify(comm);
    test_nested_bootstrap(comm);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    test_threads(quick ? 2 : 4, quick ? 20 : 60);
    /* the thread stops with the last communicator and starts again */
    comm = comm_with_thread(MPI_COMM_WORLD);
    test_overlap(comm, 4096);
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    return tc_finish();
}
