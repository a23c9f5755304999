/* The UCX transport alone, launched by MPI (MPI_Allgather is the bootstrap):
 * correctness checks (zero-length, truncation both ways, cancel, ring with
 * payload checks, tag order, split copies, communicators sharing endpoints,
 * a sub-communicator, bootstrap failure), then measurements with and without the transport's
 * idle back-off, next to plain MPI for reference:
 *   - round-trip latency at 8 B, every pair (0-1, 2-3, ...) at once
 *   - one ring exchange step at 8 B
 *   - bandwidth of 4 MiB messages, every pair at once
 * Usage: mpirun -n N test_transport [-q | x [iterations [modes]]]
 *   -q: correctness only; modes 1: back-off only, 2: back-off and busy-poll.
 * XCOLL_UCX_{SPIN,YIELD,SLEEP}_US tune the back-off (see ucx_transport.c). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "tag.h"
#include "topo.h"
#include "transport.h"

/* TEST_TRANSPORT=shm: the shared-memory transport (with XCOLL_SHM=1) */
static const xc_transport_t *tl = &xc_ucx_transport;
static int world_rank, world_size;
static int use_idle = 1;
static int failures;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "[%d] FAIL %s:%d: ", world_rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            failures++;                                                       \
        }                                                                     \
    } while (0)

static int mpi_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    return MPI_Allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE,
                         *(MPI_Comm *)ctx) == MPI_SUCCESS ? 0 : -1;
}

static int failing_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    (void)sendbuf; (void)recvbuf; (void)bytes; (void)ctx;
    return -1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The topologies the transports were given: they must outlive them. */
#define MAX_TOPOS 16
static struct xc_topo *topos[MAX_TOPOS];
static int ntopos;

static struct xc_topo *topo_create(const xcoll_bootstrap_t *boot)
{
    struct xc_topo *t = NULL;
    xcoll_status_t st = xc_topo_create(boot, &t);
    CHECK(st == XCOLL_OK && t != NULL && ntopos < MAX_TOPOS, "topology: %d", st);
    if (t != NULL && ntopos < MAX_TOPOS)
        topos[ntopos++] = t;
    return t;
}

static void *comm_create(MPI_Comm *mc)
{
    xcoll_bootstrap_t boot;
    void *tc = NULL;
    MPI_Comm_rank(*mc, &boot.rank);
    MPI_Comm_size(*mc, &boot.size);
    boot.allgather = mpi_allgather;
    boot.ctx = mc;
    struct xc_topo *t = topo_create(&boot);
    if (t == NULL)
        return NULL;
    xcoll_status_t st = tl->comm_init(&boot, t, &tc);
    CHECK(st == XCOLL_OK && tc != NULL, "comm_init: %d", st);
    return tc;
}

/* Waits for every request in reqs[0..n), as the engine would: progress,
 * test, back off when nothing happens. Returns the first error. */
static xcoll_status_t wait_all(void *tc, void **reqs, int n)
{
    xcoll_status_t first = XCOLL_OK;
    unsigned idle_rounds = 0;
    for (;;) {
        int pending = 0;
        int events = tl->progress(tc);
        for (int i = 0; i < n; i++) {
            if (reqs[i] == NULL)
                continue;
            xcoll_status_t st = tl->test(tc, reqs[i]);
            if (st == XCOLL_INPROGRESS) {
                pending++;
                continue;
            }
            reqs[i] = NULL;
            events++;
            if (st != XCOLL_OK && first == XCOLL_OK)
                first = st;
        }
        if (pending == 0)
            return first;
        if (events > 0) {
            idle_rounds = 0;
        } else if (use_idle) {
            tl->idle(tc, ++idle_rounds, 1000000);
        }
    }
}

static uint64_t tag_of(int src, uint32_t seq, uint32_t slot)
{
    return xc_tag_coll(7, (uint32_t)src, seq, slot);
}

/* --- correctness -------------------------------------------------------------- */

static void check_zero_and_truncation(void *tc, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    void *r[2];
    char small[8], big[16];
    xcoll_status_t st;

    /* zero-length with NULL buffers */
    CHECK(tl->irecv(tc, left, tag_of(left, 1, 0), NULL, 0, &r[0]) == XCOLL_OK, "irecv 0");
    CHECK(tl->isend(tc, right, tag_of(rank, 1, 0), NULL, 0, &r[1]) == XCOLL_OK, "isend 0");
    CHECK(wait_all(tc, r, 2) == XCOLL_OK, "zero-length exchange");

    /* longer than posted: 16 bytes into an 8-byte receive */
    memset(big, 'x', sizeof(big));
    st = tl->irecv(tc, left, tag_of(left, 2, 0), small, sizeof(small), &r[0]);
    CHECK(st == XCOLL_OK, "irecv small");
    CHECK(tl->isend(tc, right, tag_of(rank, 2, 0), big, sizeof(big), &r[1]) == XCOLL_OK,
          "isend big");
    st = wait_all(tc, r, 2);
    CHECK(st == XCOLL_ERR_TRUNCATED, "16 B into 8 B gave %d, not TRUNCATED", st);

    /* shorter than posted: 8 bytes into a 16-byte receive */
    st = tl->irecv(tc, left, tag_of(left, 3, 0), big, sizeof(big), &r[0]);
    CHECK(st == XCOLL_OK, "irecv big");
    CHECK(tl->isend(tc, right, tag_of(rank, 3, 0), small, sizeof(small), &r[1]) == XCOLL_OK,
          "isend small");
    st = wait_all(tc, r, 2);
    CHECK(st == XCOLL_ERR_TRUNCATED, "8 B into 16 B gave %d, not TRUNCATED", st);

    /* immediate-completion path: the message is already unexpected when
     * the receive is posted */
    CHECK(tl->isend(tc, right, tag_of(rank, 4, 0), big, sizeof(big), &r[1]) == XCOLL_OK,
          "isend big");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 100; i++)
        tl->progress(tc);
    MPI_Barrier(MPI_COMM_WORLD);
    st = tl->irecv(tc, left, tag_of(left, 4, 0), small, sizeof(small), &r[0]);
    if (st == XCOLL_OK)
        st = wait_all(tc, r, 1);
    CHECK(st == XCOLL_ERR_TRUNCATED, "unexpected 16 B into 8 B gave %d, not TRUNCATED", st);
    CHECK(wait_all(tc, &r[1], 1) == XCOLL_OK, "send of the unexpected message");
}

static void check_cancel(void *tc, int rank, int size)
{
    int right = (rank + 1) % size;
    void *r = NULL;
    size_t big = 4u << 20;
    char *buf = malloc(big);

    /* a receive nothing will match */
    CHECK(tl->irecv(tc, right, tag_of(right, 99, 0), buf, 8, &r) == XCOLL_OK, "irecv");
    CHECK(r != NULL, "an unmatched receive completed at once");
    if (r != NULL)
        tl->cancel(tc, r);
    /* a rendezvous send nobody receives */
    r = NULL;
    memset(buf, 1, big);
    CHECK(tl->isend(tc, right, tag_of(rank, 98, 0), buf, big, &r) == XCOLL_OK, "isend");
    for (int i = 0; i < 100; i++)
        tl->progress(tc);
    if (r != NULL)
        tl->cancel(tc, r);
    for (int i = 0; i < 100; i++)
        tl->progress(tc);
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
}

/* Every rank sends len bytes to the right and receives from the left,
 * iters times, checking the payload. */
static void check_ring(void *tc, int rank, int size, size_t len, int iters, uint32_t seq0)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *sb = malloc(len + 1), *rb = malloc(len + 1);
    for (int it = 0; it < iters; it++) {
        void *r[2];
        for (size_t i = 0; i < len; i++)
            sb[i] = (unsigned char)(rank * 31 + it * 7 + i);
        memset(rb, 0xee, len);
        CHECK(tl->irecv(tc, left, tag_of(left, seq0 + it, 1), rb, len, &r[0]) == XCOLL_OK,
              "irecv");
        CHECK(tl->isend(tc, right, tag_of(rank, seq0 + it, 1), sb, len, &r[1]) == XCOLL_OK,
              "isend");
        CHECK(wait_all(tc, r, 2) == XCOLL_OK, "ring of %zu B", len);
        for (size_t i = 0; i < len; i++) {
            if (rb[i] != (unsigned char)(left * 31 + it * 7 + i)) {
                CHECK(0, "ring %zu B: byte %zu from %d is wrong", len, i, left);
                break;
            }
        }
    }
    free(sb);
    free(rb);
}

/* What tag matching promises whatever the transport does inside: a
 * receive takes the oldest message with its tag from that sender, however
 * late it is posted and in whatever order receives are posted, and
 * messages of every size (one slot, many slots, rendezvous) may all be in
 * flight at once, more than any ring holds. */
static void check_order(void *tc, int rank, int size)
{
    enum { N = 24 };
    /* ascending; 1024 / 1025: the last kept inside an unexpected entry, the
     * first not */
    static const size_t lens[] = { 0, 1, 64, 1024, 1025, 8192, 8193, 20000, 70000, 300000 };
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *sb[N], *rb[N];
    void *r[2 * N];
    size_t len[N];

    const size_t longest = lens[sizeof(lens) / sizeof(lens[0]) - 1];
    for (int k = 0; k < N; k++) {
        /* each pass gives message k another length: room for any */
        sb[k] = malloc(longest + 1);
        rb[k] = malloc(longest + 1);
    }
    /* Passes 0 and 2 send everything before any receive is posted, pass 1
     * after. Pass 2 shifts the lengths: entries that held one pass's
     * unexpected messages (kept for reuse) hold messages of other kinds
     * and lengths, a rendezvous's entry an eager one's and back. */
    for (int pass = 0; pass < 3; pass++) {
        for (int k = 0; k < N; k++) {
            /* messages 2k and 2k+1 share a tag: their order must hold */
            len[k] = lens[(k * 3 + (pass == 2 ? 5 : 0)) % 10];
            for (size_t i = 0; i < len[k]; i++)
                sb[k][i] = (unsigned char)(rank + 3 * k + i + pass);
            memset(rb[k], 0xee, len[k] + 1);
        }
        if (pass != 1) {
            for (int k = 0; k < N; k++)
                CHECK(tl->isend(tc, right, tag_of(rank, 700 + k / 2, 7), sb[k], len[k],
                                &r[N + k]) == XCOLL_OK, "isend %d", k);
            for (int i = 0; i < 200; i++)
                tl->progress(tc);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        /* receives in reverse order of the tags, in order within a tag */
        for (int k = N - 2; k >= 0; k -= 2) {
            CHECK(tl->irecv(tc, left, tag_of(left, 700 + k / 2, 7), rb[k], len[k], &r[k]) ==
                  XCOLL_OK, "irecv %d", k);
            CHECK(tl->irecv(tc, left, tag_of(left, 700 + k / 2, 7), rb[k + 1], len[k + 1],
                            &r[k + 1]) == XCOLL_OK, "irecv %d", k + 1);
        }
        if (pass == 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            for (int k = 0; k < N; k++)
                CHECK(tl->isend(tc, right, tag_of(rank, 700 + k / 2, 7), sb[k], len[k],
                                &r[N + k]) == XCOLL_OK, "isend %d", k);
        }
        CHECK(wait_all(tc, r, 2 * N) == XCOLL_OK, "pass %d of out-of-order receives", pass);
        for (int k = 0; k < N; k++) {
            int bad = rb[k][len[k]] != 0xee;
            for (size_t i = 0; i < len[k] && !bad; i++)
                bad = rb[k][i] != (unsigned char)(left + 3 * k + i + pass);
            CHECK(!bad, "pass %d: message %d (%zu B) from %d is wrong", pass, k, len[k], left);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int k = 0; k < N; k++) {
        free(sb[k]);
        free(rb[k]);
    }
}

/* Split copies (shared memory, messages from XCOLL_SHM_SPLIT_MIN): a
 * sender that waits for its long message to be read writes pieces of it
 * into the receiver itself. Pairs (0,1), (2,3)...; a last odd rank only
 * meets the barriers. Three promises, each of which a broken split breaks
 * (the first two where TEST_SPLIT=1 says the path is on: shared memory
 * with CMA; UCX and the rings need the sender to progress):
 *  - the sender may write the whole message: once the receiver has taken
 *    the offer (posted its receive on the message that had arrived), one
 *    round of the sender's progress writes everything, before the receiver
 *    progresses at all;
 *  - the receiver never needs the sender: a sender blocked elsewhere (in
 *    MPI here) leaves it to read every piece, no hang;
 *  - both at once, many long messages of odd lengths to one peer in
 *    flight, received in reverse order, a truncated one among them, and
 *    more of them than the ring has descriptors: every byte right. */
static unsigned char pattern(unsigned seed, size_t i)
{
    return (unsigned char)(seed * 131u + i * 7u + (i >> 12));
}

static void fill(unsigned char *b, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        b[i] = pattern(seed, i);
}

static size_t first_wrong(const unsigned char *b, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != pattern(seed, i))
            return i;
    return len;
}

/* Whether this rank can read its pair's memory with process_vm_readv, as
 * the transport's split copies need (a sandbox may forbid it): every rank
 * learns whether all can. */
static int pairs_can_cma(int rank, int size)
{
    static volatile long probe = 0x5ca1ab1e;
    long mine[2] = { (long)getpid(), (long)(uintptr_t)&probe }, theirs[2], got = 0;
    int peer = rank % 2 == 0 ? rank + 1 : rank - 1, ok = 1, all;
    if (peer < size) {
        struct iovec l = { &got, sizeof(got) }, r;
        MPI_Sendrecv(mine, 2, MPI_LONG, peer, 9, theirs, 2, MPI_LONG, peer, 9, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        r.iov_base = (void *)(uintptr_t)theirs[1];
        r.iov_len = sizeof(got);
        ok = process_vm_readv((pid_t)theirs[0], &l, 1, &r, 1, 0) == (ssize_t)sizeof(got) &&
             got == probe;
    }
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

static void check_split(void *tc, int rank, int size)
{
    enum { N = 10 };
    static const size_t lens[N] = { 131072, 131080, 1048588, 3145828, 700001,
                                    524288, 2097152, 262147, 1048576, 5000000 };
    int sender = rank % 2 == 0, peer = sender ? rank + 1 : rank - 1;
    int split_on = getenv("TEST_SPLIT") != NULL && strcmp(getenv("TEST_SPLIT"), "1") == 0;
    size_t big = 3145728 + 4;
    unsigned char *buf[N];
    void *r[N];
    int flag = 0;

    if (split_on && !pairs_can_cma(rank, size)) {
        if (rank == 0)
            printf("split copies: no process_vm_readv between ranks here: the checks that "
                   "need them are left out\n");
        split_on = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (peer >= size) {
        for (int i = 0; i < 3 + split_on; i++)
            MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    for (int k = 0; k < N; k++)
        buf[k] = malloc(lens[k] > big ? lens[k] : big);

    /* 1. the sender writes it all */
    if (sender) {
        fill(buf[0], big, 1);
        CHECK(tl->isend(tc, peer, tag_of(rank, 800, 0), buf[0], big, &r[0]) == XCOLL_OK, "isend");
        MPI_Send(&flag, 1, MPI_INT, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(&flag, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 3; i++)
            tl->progress(tc);
        MPI_Send(&flag, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
        CHECK(wait_all(tc, r, 1) == XCOLL_OK, "the send the sender wrote itself");
    } else {
        size_t at;
        memset(buf[0], 0xee, big);
        MPI_Recv(&flag, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 100; i++)
            tl->progress(tc); /* the message arrives before its receive */
        CHECK(tl->irecv(tc, peer, tag_of(peer, 800, 0), buf[0], big, &r[0]) == XCOLL_OK, "irecv");
        MPI_Send(&flag, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
        MPI_Recv(&flag, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        at = first_wrong(buf[0], big, 1);
        if (split_on)
            CHECK(at == big, "split: the sender did not write byte %zu of %zu itself", at, big);
        CHECK(wait_all(tc, r, 1) == XCOLL_OK, "the receive the sender wrote");
        at = first_wrong(buf[0], big, 1);
        CHECK(at == big, "split: byte %zu of %zu is wrong (the sender wrote)", at, big);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. the receiver reads it all while the sender is away */
    if (!split_on) {
        /* not promised */
    } else if (sender) {
        fill(buf[0], big, 2);
        CHECK(tl->isend(tc, peer, tag_of(rank, 801, 0), buf[0], big, &r[0]) == XCOLL_OK, "isend");
        MPI_Send(&flag, 1, MPI_INT, peer, 4, MPI_COMM_WORLD);
        MPI_Recv(&flag, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(wait_all(tc, r, 1) == XCOLL_OK, "the send its receiver read alone");
    } else {
        size_t at;
        memset(buf[0], 0xee, big);
        MPI_Recv(&flag, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(tl->irecv(tc, peer, tag_of(peer, 801, 0), buf[0], big, &r[0]) == XCOLL_OK, "irecv");
        CHECK(wait_all(tc, r, 1) == XCOLL_OK, "the receive read alone");
        at = first_wrong(buf[0], big, 2);
        CHECK(at == big, "split: byte %zu of %zu is wrong (read alone)", at, big);
        MPI_Send(&flag, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
    }
    if (split_on)
        MPI_Barrier(MPI_COMM_WORLD);

    /* 3. many at once, twice (20 sends: every descriptor used again) */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < N; k++) {
            if (sender)
                fill(buf[k], lens[k], 10 + k + pass);
            else
                memset(buf[k], 0xee, lens[k]);
        }
        for (int j = 0; j < N; j++) {
            int k = sender ? j : N - 1 - j;
            /* message 3 arrives 4 bytes too long for its receive */
            size_t len = !sender && k == 3 ? lens[k] - 4 : lens[k];
            uint64_t tag = tag_of(sender ? rank : peer, 810 + k, 0);
            CHECK((sender ? tl->isend(tc, peer, tag, buf[k], len, &r[k])
                          : tl->irecv(tc, peer, tag, buf[k], len, &r[k])) == XCOLL_OK,
                  "post %d", k);
        }
        if (sender) {
            CHECK(wait_all(tc, r, N) == XCOLL_OK, "pass %d: the sends", pass);
        } else {
            xcoll_status_t st = wait_all(tc, r, N);
            CHECK(st == XCOLL_ERR_TRUNCATED, "pass %d: the receives gave %d, not TRUNCATED (one "
                  "of them)", pass, st);
            for (int k = 0; k < N; k++) {
                size_t at = k == 3 ? lens[k] : first_wrong(buf[k], lens[k], 10 + k + pass);
                CHECK(at == lens[k], "pass %d: message %d (%zu B): byte %zu is wrong", pass, k,
                      lens[k], at);
            }
            /* the refused message wrote nothing, by either side */
            for (size_t i = 0; i < lens[3] - 4; i++)
                if (buf[3][i] != 0xee) {
                    CHECK(0, "pass %d: the truncated receive's byte %zu was written", pass, i);
                    break;
                }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int k = 0; k < N; k++)
        free(buf[k]);
}

/* Rank 0 arms (through tc) and sleeps with a limit of 5 s; the sleep must
 * end well before that, because of what rank 1 does 100 ms later
 * (`late`): a lost wakeup shows as the whole 5 s. Other ranks only
 * pass the barrier; the caller finishes rank 0's side, then has every
 * rank meet again. Returns how long rank 0 slept (0 elsewhere). */
static double sleep_until_woken(void *tc, void (*late)(void *), void *arg)
{
    double slept = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank == 0) {
        for (int tries = 0; tries < 100 && slept == 0; tries++) {
            xc_wait_t w;
            int a;
            tl->progress(tc);
            a = tl->arm(tc, &w);
            if (a < 0)
                break;
            if (a == 0) {
                double t0 = now_s();
                w.max_us = 5000000;
                tl->sleep(&w, 5000000);
                slept = now_s() - t0;
                tl->disarm();
            }
        }
        CHECK(slept > 0, "rank 0 never slept");
        CHECK(slept < 2.5, "rank 0 slept %.3f s: the peer's wakeup was lost", slept);
    } else if (world_rank == 1) {
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        late(arg);
    }
    return slept;
}

typedef struct {
    void *tc;
    void *req[16];
    char buf[16][8192];
    int n;
} sleep_case_t;

static void send_late(void *arg)
{
    sleep_case_t *k = arg;
    CHECK(tl->isend(k->tc, 0, tag_of(1, 900, 0), k->buf[0], 8, &k->req[0]) == XCOLL_OK,
          "late isend");
    CHECK(wait_all(k->tc, k->req, 1) == XCOLL_OK, "late send");
}

static void recv_late(void *arg)
{
    sleep_case_t *k = arg;
    for (int i = 0; i < k->n; i++)
        CHECK(tl->irecv(k->tc, 0, tag_of(0, 901, (uint32_t)i), k->buf[i], sizeof(k->buf[i]),
                        &k->req[i]) == XCOLL_OK, "late irecv %d", i);
    CHECK(wait_all(k->tc, k->req, k->n) == XCOLL_OK, "late receives");
}

/* Sleeping on the transport's wakeup (transport.h: arm, sleep, disarm):
 * a receiver is woken by the message, on the communicator it armed or
 * another one; a sender whose ring is full by the receiver making room;
 * and a message already there when arming means no sleep at all. */
static void check_sleep(void *a, void *b)
{
    static sleep_case_t k;
    int shm = tl == &xc_shm_transport;
    if (tl->arm == NULL || world_size < 2)
        return;
    /* a receive woken by its message, on a and then on b with a armed */
    for (int on_b = 0; on_b < (shm ? 2 : 1); on_b++) {
        memset(&k, 0, sizeof(k));
        k.tc = on_b ? b : a;
        memset(k.buf[0], 0x5a, 8);
        if (world_rank == 0)
            CHECK(tl->irecv(k.tc, 1, tag_of(1, 900, 0), k.buf[1], 8, &k.req[0]) == XCOLL_OK,
                  "irecv");
        sleep_until_woken(a, send_late, &k);
        if (world_rank == 0) {
            CHECK(wait_all(k.tc, k.req, 1) == XCOLL_OK, "the receive that woke rank 0");
            CHECK(memcmp(k.buf[1], "\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a", 8) == 0,
                  "woken receive: wrong data");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (!shm)
        return;
    /* a sender with more slots to fill than the ring has (16 x 8 KiB
     * against 8 slots) waits for the receiver, which starts late */
    memset(&k, 0, sizeof(k));
    k.tc = a;
    k.n = 16;
    if (world_rank == 0)
        for (int i = 0; i < k.n; i++)
            CHECK(tl->isend(a, 1, tag_of(0, 901, (uint32_t)i), k.buf[i], 8192, &k.req[i]) ==
                  XCOLL_OK, "isend %d", i);
    sleep_until_woken(a, recv_late, &k);
    if (world_rank == 0)
        CHECK(wait_all(a, k.req, k.n) == XCOLL_OK, "the sends that woke rank 0");
    MPI_Barrier(MPI_COMM_WORLD);
    /* already there: arming looks a last time and declines to sleep */
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank == 1) {
        memset(&k, 0, sizeof(k));
        k.tc = a;
        send_late(&k);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank == 0) {
        xc_wait_t w;
        void *r = NULL;
        int armed = tl->arm(a, &w);
        CHECK(armed > 0, "arming with a message waiting gave %d, not 'progress first'", armed);
        if (armed == 0)
            tl->disarm();
        CHECK(tl->irecv(a, 1, tag_of(1, 900, 0), k.buf[1], 8, &r) == XCOLL_OK, "irecv");
        CHECK(wait_all(a, &r, 1) == XCOLL_OK, "the waiting message");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void check_comms(void)
{
    MPI_Comm world = MPI_COMM_WORLD, half;
    void *a, *b, *h;
    xcoll_bootstrap_t boot;
    void *tc = (void *)1;
    struct xc_topo *t = NULL;

    /* a failing bootstrap leaves nothing behind (the topology is one host's:
     * it cannot be exchanged either) */
    CHECK(xc_topo_from_ranks_per_node(world_size, world_size, &t) == XCOLL_OK, "topology");
    boot.rank = world_rank;
    boot.size = world_size;
    boot.allgather = failing_allgather;
    boot.ctx = NULL;
    CHECK(tl->comm_init(&boot, t, &tc) == XCOLL_ERR_BOOTSTRAP && tc == NULL, "failing bootstrap");
    boot.size = (int)XC_MAX_RANKS + 1;
    CHECK(tl->comm_init(&boot, t, &tc) != XCOLL_OK, "too many ranks accepted");
    xc_topo_free(t);

    a = comm_create(&world);
    b = comm_create(&world); /* shares a's endpoints */
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    h = comm_create(&half);
    if (a == NULL || b == NULL || h == NULL)
        return;
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);

    check_zero_and_truncation(a, world_rank, world_size);
    for (size_t len = 1; len <= (4u << 20); len *= 8)
        check_ring(a, world_rank, world_size, len, 3, 100);
    check_ring(a, world_rank, world_size, 8257, 3, 200); /* just past the eager limit */
    check_order(a, world_rank, world_size);
    check_split(a, world_rank, world_size);
    check_sleep(a, b);
    /* the same process pairs over another communicator id in the tag */
    tl->comm_fini(a); /* b must keep working after a's endpoint refs are gone */
    check_ring(b, world_rank, world_size, 1000, 5, 300);
    check_ring(h, hr, hs, 100000, 5, 400);
    check_cancel(b, world_rank, world_size);
    check_ring(b, world_rank, world_size, 64, 5, 500);
    tl->comm_fini(h);
    tl->comm_fini(b);
    MPI_Comm_free(&half);

    /* the worker is gone now; a new communicator brings a new one */
    a = comm_create(&world);
    check_ring(a, world_rank, world_size, 4096, 3, 600);
    tl->comm_fini(a);
}

/* --- measurements ------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median hides the time a rank spends descheduled when ranks outnumber
 * cores; the mean (g_mean, set alongside) shows it. */
static double g_mean;

static double median(double *v, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    g_mean = sum / n;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    if (getenv("TEST_TRANSPORT_TAIL") != NULL && world_rank == 0)
        printf("    (rank 0: p90 %.2f us, p99 %.2f us, max %.2f us)\n", 1e6 * v[n * 9 / 10],
               1e6 * v[n * 99 / 100], 1e6 * v[n - 1]);
    return v[n / 2];
}

/* Pairs (0,1), (2,3), ...; a rank without a partner pings itself. */
static int partner(void)
{
    int p = world_rank ^ 1;
    return p < world_size ? p : world_rank;
}

static double pingpong_ucx(void *tc, size_t len, int iters)
{
    int peer = partner(), first = world_rank <= peer;
    char *buf = calloc(1, len + 1), *buf2 = calloc(1, len + 1);
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int it = -20; it < iters; it++) {
        void *r[2] = { NULL, NULL };
        double t0 = now_s();
        uint32_t seq = (uint32_t)(it + 1000);
        if (peer == world_rank) {
            tl->irecv(tc, peer, tag_of(peer, seq, 2), buf2, len, &r[0]);
            tl->isend(tc, peer, tag_of(world_rank, seq, 2), buf, len, &r[1]);
            wait_all(tc, r, 2);
            tl->irecv(tc, peer, tag_of(peer, seq, 3), buf2, len, &r[0]);
            tl->isend(tc, peer, tag_of(world_rank, seq, 3), buf, len, &r[1]);
            wait_all(tc, r, 2);
        } else if (first) {
            tl->irecv(tc, peer, tag_of(peer, seq, 3), buf2, len, &r[0]);
            tl->isend(tc, peer, tag_of(world_rank, seq, 2), buf, len, &r[1]);
            wait_all(tc, r, 2);
        } else {
            tl->irecv(tc, peer, tag_of(peer, seq, 2), buf2, len, &r[0]);
            wait_all(tc, r, 1);
            tl->isend(tc, peer, tag_of(world_rank, seq, 3), buf, len, &r[1]);
            wait_all(tc, &r[1], 1);
        }
        if (it >= 0)
            t[it] = now_s() - t0;
    }
    double m = median(t, iters);
    free(t);
    free(buf);
    free(buf2);
    return m;
}

static double pingpong_mpi(size_t len, int iters)
{
    int peer = partner(), first = world_rank <= peer;
    char *buf = calloc(1, len + 1), *buf2 = calloc(1, len + 1);
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int it = -20; it < iters; it++) {
        double t0 = now_s();
        if (peer == world_rank) {
            MPI_Sendrecv(buf, (int)len, MPI_BYTE, peer, 2, buf2, (int)len, MPI_BYTE, peer, 2,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Sendrecv(buf, (int)len, MPI_BYTE, peer, 3, buf2, (int)len, MPI_BYTE, peer, 3,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (first) {
            MPI_Sendrecv(buf, (int)len, MPI_BYTE, peer, 2, buf2, (int)len, MPI_BYTE, peer, 3,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf2, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)len, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
        }
        if (it >= 0)
            t[it] = now_s() - t0;
    }
    double m = median(t, iters);
    free(t);
    free(buf);
    free(buf2);
    return m;
}

static double ring_ucx(void *tc, size_t len, int iters)
{
    int right = (world_rank + 1) % world_size, left = (world_rank + world_size - 1) % world_size;
    char *sb = calloc(1, len + 1), *rb = calloc(1, len + 1);
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int it = -20; it < iters; it++) {
        void *r[2];
        uint32_t seq = (uint32_t)(it + 5000);
        double t0 = now_s();
        tl->irecv(tc, left, tag_of(left, seq, 4), rb, len, &r[0]);
        tl->isend(tc, right, tag_of(world_rank, seq, 4), sb, len, &r[1]);
        wait_all(tc, r, 2);
        if (it >= 0)
            t[it] = now_s() - t0;
    }
    double m = median(t, iters);
    free(t);
    free(sb);
    free(rb);
    return m;
}

static double ring_mpi(size_t len, int iters)
{
    int right = (world_rank + 1) % world_size, left = (world_rank + world_size - 1) % world_size;
    char *sb = calloc(1, len + 1), *rb = calloc(1, len + 1);
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int it = -20; it < iters; it++) {
        double t0 = now_s();
        MPI_Sendrecv(sb, (int)len, MPI_BYTE, right, 4, rb, (int)len, MPI_BYTE, left, 4,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (it >= 0)
            t[it] = now_s() - t0;
    }
    double m = median(t, iters);
    free(t);
    free(sb);
    free(rb);
    return m;
}

/* One 8-byte token travels 0 -> 1 -> ... -> 0: only one rank has work at
 * a time, the worst case for ranks that spin while others need the core.
 * Time per hop. */
static double token_ucx(void *tc, int iters)
{
    int right = (world_rank + 1) % world_size, left = (world_rank + world_size - 1) % world_size;
    char tok[8] = { 0 };
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int it = -5; it < iters; it++) {
        void *r[2] = { NULL, NULL };
        uint32_t seq = (uint32_t)(it + 7000);
        double t0 = now_s();
        if (world_rank == 0) {
            tl->isend(tc, right, tag_of(world_rank, seq, 5), tok, 8, &r[1]);
            tl->irecv(tc, left, tag_of(left, seq, 5), tok, 8, &r[0]);
            wait_all(tc, r, 2);
        } else {
            tl->irecv(tc, left, tag_of(left, seq, 5), tok, 8, &r[0]);
            wait_all(tc, r, 1);
            tl->isend(tc, right, tag_of(world_rank, seq, 5), tok, 8, &r[1]);
            wait_all(tc, &r[1], 1);
        }
        if (it >= 0)
            t[it] = (now_s() - t0) / world_size;
    }
    double m = median(t, iters);
    free(t);
    return m;
}

static double token_mpi(int iters)
{
    int right = (world_rank + 1) % world_size, left = (world_rank + world_size - 1) % world_size;
    char tok[8] = { 0 };
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int it = -5; it < iters; it++) {
        double t0 = now_s();
        if (world_rank == 0) {
            MPI_Send(tok, 8, MPI_BYTE, right, 7, MPI_COMM_WORLD);
            MPI_Recv(tok, 8, MPI_BYTE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(tok, 8, MPI_BYTE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(tok, 8, MPI_BYTE, right, 7, MPI_COMM_WORLD);
        }
        if (it >= 0)
            t[it] = (now_s() - t0) / world_size;
    }
    double m = median(t, iters);
    free(t);
    return m;
}

/* Even ranks send `window` messages of len bytes, odd ranks receive them
 * and answer with one byte; MB/s per pair. */
#define BW_WINDOW 4
static double bandwidth(void *tc, size_t len, int iters, int mpi)
{
    int peer = partner(), sender = world_rank <= peer;
    char *buf = malloc(len * BW_WINDOW);
    char *buf2 = malloc(len * BW_WINDOW);
    char ack = 0;
    memset(buf, 3, len * BW_WINDOW);
    double t0 = 0;
    for (int it = -2; it < iters; it++) {
        if (it == 0)
            t0 = now_s();
        uint32_t seq = (uint32_t)(it + 9000);
        if (mpi) {
            MPI_Request mr[BW_WINDOW * 2];
            int n = 0;
            if (peer == world_rank || !sender)
                for (int w = 0; w < BW_WINDOW; w++)
                    MPI_Irecv(buf2 + (size_t)w * len, (int)len, MPI_BYTE, peer, 5,
                              MPI_COMM_WORLD, &mr[n++]);
            if (peer == world_rank || sender)
                for (int w = 0; w < BW_WINDOW; w++)
                    MPI_Isend(buf + (size_t)w * len, (int)len, MPI_BYTE, peer, 5,
                              MPI_COMM_WORLD, &mr[n++]);
            MPI_Waitall(n, mr, MPI_STATUSES_IGNORE);
            if (peer != world_rank) {
                if (sender)
                    MPI_Recv(&ack, 1, MPI_BYTE, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                else
                    MPI_Send(&ack, 1, MPI_BYTE, peer, 6, MPI_COMM_WORLD);
            }
        } else {
            void *r[BW_WINDOW * 2 + 1];
            int n = 0;
            if (peer == world_rank || !sender)
                for (int w = 0; w < BW_WINDOW; w++)
                    tl->irecv(tc, peer, tag_of(peer, seq, (uint32_t)w), buf2 + (size_t)w * len,
                              len, &r[n++]);
            if (peer == world_rank || sender)
                for (int w = 0; w < BW_WINDOW; w++)
                    tl->isend(tc, peer, tag_of(world_rank, seq, (uint32_t)w),
                              buf + (size_t)w * len, len, &r[n++]);
            wait_all(tc, r, n);
            if (peer != world_rank) {
                if (sender)
                    tl->irecv(tc, peer, tag_of(peer, seq, 200), &ack, 1, &r[0]);
                else
                    tl->isend(tc, peer, tag_of(world_rank, seq, 200), &ack, 1, &r[0]);
                wait_all(tc, r, 1);
            }
        }
    }
    double dt = now_s() - t0;
    free(buf);
    free(buf2);
    return (double)len * BW_WINDOW * iters / dt / 1e6;
}

/* Rank 0's value, and the worst over ranks. For latencies also the mean. */
static void report(const char *what, double med, double mean)
{
    double mine[2] = { med, mean };
    int n = world_size;
    double *all = malloc(sizeof(double) * 2 * (size_t)n);
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        double worst_med = all[0], worst_mean = all[1], lowest = all[0];
        for (int i = 1; i < n; i++) {
            lowest = all[2 * i] < lowest ? all[2 * i] : lowest;
            worst_med = all[2 * i] > worst_med ? all[2 * i] : worst_med;
            worst_mean = all[2 * i + 1] > worst_mean ? all[2 * i + 1] : worst_mean;
        }
        if (mean < 0)
            printf("  %-40s %10.1f MB/s (slowest pair %10.1f)\n", what, all[0], lowest);
        else
            printf("  %-40s median %9.2f us  mean %9.2f us  (max over ranks: %9.2f / %9.2f)\n",
                   what, all[0], all[1], worst_med, worst_mean);
        fflush(stdout);
    }
    free(all);
}

static void report_lat(const char *what, double med)
{
    report(what, 1e6 * med, 1e6 * g_mean);
}

static void measure(int iters, int modes)
{
    MPI_Comm world = MPI_COMM_WORLD;
    void *tc = comm_create(&world);
    char line[128];
    if (tc == NULL)
        return;
    if (world_rank == 0)
        printf("ranks %d, %d iterations\n", world_size, iters);
    for (int mode = 1; mode >= 2 - modes; mode--) {
        const char *m = mode ? "back-off" : "busy-poll";
        use_idle = mode;
        MPI_Barrier(MPI_COMM_WORLD);
        snprintf(line, sizeof(line), "%s %s: pingpong 8B round trip", tl->name, m);
        report_lat(line, pingpong_ucx(tc, 8, iters));
        MPI_Barrier(MPI_COMM_WORLD);
        snprintf(line, sizeof(line), "%s %s: ring exchange step 8B", tl->name, m);
        report_lat(line, ring_ucx(tc, 8, iters));
        MPI_Barrier(MPI_COMM_WORLD);
        snprintf(line, sizeof(line), "%s %s: token ring, per hop 8B", tl->name, m);
        report_lat(line, token_ucx(tc, iters / 4 + 1));
        MPI_Barrier(MPI_COMM_WORLD);
        snprintf(line, sizeof(line), "%s %s: bandwidth 4MiB", tl->name, m);
        report(line, bandwidth(tc, 4u << 20, 20, 0), -1);
    }
    use_idle = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    report_lat("mpi: pingpong 8B round trip", pingpong_mpi(8, iters));
    MPI_Barrier(MPI_COMM_WORLD);
    report_lat("mpi: ring exchange step 8B", ring_mpi(8, iters));
    MPI_Barrier(MPI_COMM_WORLD);
    report_lat("mpi: token ring, per hop 8B", token_mpi(iters / 4 + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    report("mpi: bandwidth 4MiB", bandwidth(NULL, 4u << 20, 20, 1), -1);
    tl->comm_fini(tc);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "-q") == 0;
    int total;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    xc_log_init();
    xc_log_set_rank(world_rank);
    if (getenv("TEST_TRANSPORT") != NULL && strcmp(getenv("TEST_TRANSPORT"), "shm") == 0)
        tl = &xc_shm_transport;

    check_comms();
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("transport checks on %d ranks: %s (%d failures)\n", world_size,
               total ? "FAILED" : "passed", total);
    if (!quick && total == 0)
        measure(argc > 2 ? atoi(argv[2]) : 1000, argc > 3 ? atoi(argv[3]) : 2);
    while (ntopos > 0)
        xc_topo_free(topos[--ntopos]);
    MPI_Finalize();
    return total ? 1 : 0;
}
