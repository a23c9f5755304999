/* test_order: point-to-point order, as xcoll.h promises it: "messages
 * between one pair with one tag arrive in the order sent", and receives
 * of one tag match them in the order posted (as in MPI). Each case lines
 * up the moment a message is already waiting when a receive is posted,
 * which is where a transport may take it on the spot; MPI barriers (no
 * xcoll traffic) order the two ranks' steps:
 *  - a receive posted while an earlier one of the same tag still waits
 *    (the message in between belongs to the earlier one);
 *  - a message that arrived before any receive (taken in by the progress
 *    of a receive of another tag, which then finished), then a newer one:
 *    receives get the older first;
 *  - sends that waited for room in the way, then a new send: it goes
 *    after them.
 * Rank 0 sends, rank 1 receives; other ranks only join the barriers. */
#include "common.h"

#define TAG 5
#define OTHER 9
#define MANY 40
#define WORDS 4

static xcoll_comm_t comm;

static void barrier(void) { TC_MPI(MPI_Barrier(MPI_COMM_WORLD)); }

static void msg(int32_t *m, int k)
{
    for (int i = 0; i < WORDS; i++)
        m[i] = k * 100 + i;
}

static void expect_msg(const char *what, const int32_t *got, int k)
{
    int32_t want[WORDS];
    msg(want, k);
    if (memcmp(got, want, sizeof want) != 0)
        tc_fail("%s: got message %d, expected %d", what, (int)(got[0] / 100), k);
    else
        tc_pass();
}

static void wait_ok(xcoll_request_t *r) { TC_EXPECT(XCOLL_OK, xcoll_wait(r)); }

/* B is posted while A (same tag) waits and message 1 is already there */
static void posted_first(int rank)
{
    int32_t a[WORDS], b[WORDS], m1[WORDS], m2[WORDS];
    xcoll_request_t ra = NULL, rb = NULL, s1 = NULL, s2 = NULL;
    msg(m1, 1);
    msg(m2, 2);
    if (rank == 1)
        TC_EXPECT(XCOLL_OK, xcoll_irecv(a, WORDS, XCOLL_INT32, 0, TAG, comm, NULL, &ra));
    barrier();
    if (rank == 0)
        TC_EXPECT(XCOLL_OK, xcoll_isend(m1, WORDS, XCOLL_INT32, 1, TAG, comm, NULL, &s1));
    barrier();
    if (rank == 1)
        TC_EXPECT(XCOLL_OK, xcoll_irecv(b, WORDS, XCOLL_INT32, 0, TAG, comm, NULL, &rb));
    barrier();
    if (rank == 0) {
        TC_EXPECT(XCOLL_OK, xcoll_isend(m2, WORDS, XCOLL_INT32, 1, TAG, comm, NULL, &s2));
        wait_ok(&s1);
        wait_ok(&s2);
    } else if (rank == 1) {
        wait_ok(&rb);
        wait_ok(&ra);
        expect_msg("the receive posted first", a, 1);
        expect_msg("the receive posted second", b, 2);
    }
}

/* message 1 waits unmatched (taken in while a receive of another tag
 * waited for its message, sent after it), message 2 behind it in the ring,
 * no receive posted */
static void unexpected_first(int rank)
{
    int32_t a[WORDS], b[WORDS], x[WORDS], m1[WORDS], m2[WORDS], mx[WORDS];
    xcoll_request_t s1 = NULL, s2 = NULL, sx = NULL;
    msg(m1, 1);
    msg(m2, 2);
    msg(mx, 9);
    if (rank == 0) {
        TC_EXPECT(XCOLL_OK, xcoll_isend(m1, WORDS, XCOLL_INT32, 1, TAG, comm, NULL, &s1));
        TC_EXPECT(XCOLL_OK, xcoll_isend(mx, WORDS, XCOLL_INT32, 1, OTHER, comm, NULL, &sx));
    } else if (rank == 1) {
        TC_EXPECT(XCOLL_OK, xcoll_recv(x, WORDS, XCOLL_INT32, 0, OTHER, comm, NULL));
        expect_msg("the other tag's receive", x, 9);
    }
    barrier();
    if (rank == 0)
        TC_EXPECT(XCOLL_OK, xcoll_isend(m2, WORDS, XCOLL_INT32, 1, TAG, comm, NULL, &s2));
    barrier();
    if (rank == 0) {
        wait_ok(&s1);
        wait_ok(&sx);
        wait_ok(&s2);
    } else if (rank == 1) {
        TC_EXPECT(XCOLL_OK, xcoll_recv(a, WORDS, XCOLL_INT32, 0, TAG, comm, NULL));
        TC_EXPECT(XCOLL_OK, xcoll_recv(b, WORDS, XCOLL_INT32, 0, TAG, comm, NULL));
        expect_msg("the first receive", a, 1);
        expect_msg("the second receive", b, 2);
    }
}

/* MANY sends, more than the way holds at once; the receiver takes some in;
 * then one more send */
static void queued_first(int rank)
{
    static int32_t m[MANY + 1][WORDS], got[MANY + 1][WORDS];
    xcoll_request_t s[MANY + 1], rx = NULL, sx = NULL;
    int32_t x[WORDS], mx[WORDS];
    int done = 0;
    memset(s, 0, sizeof s);
    msg(mx, 9);
    for (int k = 0; k <= MANY; k++)
        msg(m[k], k);
    if (rank == 0)
        for (int k = 0; k < MANY; k++)
            TC_EXPECT(XCOLL_OK, xcoll_isend(m[k], WORDS, XCOLL_INT32, 1, TAG, comm, NULL, &s[k]));
    barrier();
    if (rank == 1) {
        TC_EXPECT(XCOLL_OK, xcoll_irecv(x, WORDS, XCOLL_INT32, 0, OTHER, comm, NULL, &rx));
        for (int i = 0; i < 100 && !done; i++)
            TC_EXPECT(XCOLL_OK, xcoll_test(&rx, &done));
    }
    barrier();
    if (rank == 0) {
        TC_EXPECT(XCOLL_OK, xcoll_isend(m[MANY], WORDS, XCOLL_INT32, 1, TAG, comm, NULL,
                                        &s[MANY]));
        TC_EXPECT(XCOLL_OK, xcoll_isend(mx, WORDS, XCOLL_INT32, 1, OTHER, comm, NULL, &sx));
        for (int k = 0; k <= MANY; k++)
            wait_ok(&s[k]);
        wait_ok(&sx);
    } else if (rank == 1) {
        for (int k = 0; k <= MANY; k++)
            TC_EXPECT(XCOLL_OK, xcoll_recv(got[k], WORDS, XCOLL_INT32, 0, TAG, comm, NULL));
        wait_ok(&rx);
        for (int k = 0; k <= MANY; k++) {
            char what[48];
            snprintf(what, sizeof what, "receive %d of %d", k, MANY + 1);
            expect_msg(what, got[k], k);
        }
    }
}

int main(int argc, char **argv)
{
    int rank;
    tc_init(&argc, &argv, "test_order");
    comm = tc_comm_create(MPI_COMM_WORLD, 60.0);
    if (comm == NULL)
        MPI_Abort(MPI_COMM_WORLD, 3);
    xcoll_comm_rank(comm, &rank);
    for (int round = 0; round < 3 && tc.size >= 2; round++) {
        posted_first(rank);
        unexpected_first(rank);
        queued_first(rank);
    }
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    return tc_finish();
}
