/* test_timeout: a rank that never arrives turns into XCOLL_ERR_TIMEOUT,
 * not a hang.
 *
 * On a communicator with timeout_s = 2, the last rank (the skipper) skips
 * one allreduce; every other rank must get XCOLL_ERR_TIMEOUT within a few
 * seconds, and every later call on that communicator must fail at once
 * with XCOLL_ERR_COMM_FAILED. The same again with a skipped barrier on a
 * second communicator; and with a skipped allreduce while the skipper
 * floods rank 0 with point-to-point messages on another communicator. All
 * ranks then destroy the communicators, meet in MPI_Barrier and exit
 * cleanly.
 *
 * The library logs why the collective timed out on stderr;
 * run_mpi_tests.sh checks that the log names the skipper's rank. Needs at
 * least 2 ranks (with 1 it only reports that it skipped). */
#include "common.h"

#define COUNT 1000

static double timeout_s = 2.0;

static xcoll_comm_t create_with_timeout(void)
{
    xcoll_config_t cfg;
    xcoll_comm_t comm = NULL;
    TC_EXPECT(XCOLL_OK, xcoll_config_init(&cfg));
    cfg.timeout_s = timeout_s;
    if (!TC_EXPECT(XCOLL_OK, xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm)) || comm == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    return comm;
}

/* Runs one call that the skipper skips; on the others it must time out
 * between ~timeout_s and 10 s. */
static void expect_timeout(const char *what, xcoll_status_t st, double elapsed)
{
    if (st != XCOLL_ERR_TIMEOUT)
        tc_fail("%s: returned %d (%s), expected XCOLL_ERR_TIMEOUT", what, (int)st,
                xcoll_strerror(st));
    else if (elapsed > 10.0 || elapsed < 0.5 * timeout_s)
        tc_fail("%s: timed out after %.2f s, expected about %.1f s", what, elapsed, timeout_s);
    else
        tc_pass();
    if (tc.rank == 0)
        printf("test_timeout: %s timed out after %.2f s on rank 0\n", what, elapsed);
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "test_timeout");
    int rank = tc.rank, size = tc.size, skipper = size - 1;
    if (size < 2) {
        if (rank == 0)
            printf("test_timeout: skipped (needs at least 2 ranks)\n");
        return tc_finish();
    }
    float in[COUNT], out[COUNT];
    for (int i = 0; i < COUNT; i++)
        in[i] = 1.0f;

    /* --- a skipped allreduce --- */
    xcoll_comm_t comm = create_with_timeout();
    /* First one good call, so the timeout hits a communicator that works. */
    TC_EXPECT(XCOLL_OK, xcoll_allreduce(in, out, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL));
    if (out[0] != (float)size)
        tc_fail("warm-up allreduce gave %g, expected %d", out[0], size);
    if (rank == 0)
        printf("test_timeout: rank %d skips an allreduce (timeout %.1f s)\n", skipper, timeout_s);
    if (rank != skipper) {
        double t0 = tc_now();
        xcoll_status_t st = xcoll_allreduce(in, out, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL);
        expect_timeout("allreduce", st, tc_now() - t0);

        /* The communicator is now failed: calls return at once. */
        t0 = tc_now();
        TC_EXPECT(XCOLL_ERR_COMM_FAILED,
                  xcoll_allreduce(in, out, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL));
        TC_EXPECT(XCOLL_ERR_COMM_FAILED, xcoll_barrier(comm));
        TC_EXPECT(XCOLL_ERR_COMM_FAILED, xcoll_bcast(in, COUNT, XCOLL_FLOAT32, 0, comm, NULL));
        xcoll_request_t req = NULL;
        xcoll_status_t ist = xcoll_iallreduce(in, out, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL,
                                              &req);
        /* Either refused at posting, or the request finishes with the failure. */
        if (ist == XCOLL_OK)
            ist = xcoll_wait(&req);
        TC_EXPECT(XCOLL_ERR_COMM_FAILED, ist);
        double t_failed = tc_now() - t0;
        if (t_failed > 1.0)
            tc_fail("calls on a failed communicator took %.2f s, expected immediate failure",
                    t_failed);
        else
            tc_pass();
    }
    TC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));

    /* --- a skipped barrier, on a fresh communicator --- */
    comm = create_with_timeout();
    TC_EXPECT(XCOLL_OK, xcoll_barrier(comm));
    if (rank == 0)
        printf("test_timeout: rank %d skips a barrier\n", skipper);
    if (rank != skipper) {
        double t0 = tc_now();
        xcoll_status_t st = xcoll_barrier(comm);
        expect_timeout("barrier", st, tc_now() - t0);
        TC_EXPECT(XCOLL_ERR_COMM_FAILED, xcoll_barrier(comm));
    }
    TC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));

    /* --- a skipped allreduce while the skipper keeps talking ---
     * The skipper sends rank 0 one small message after another on a
     * second communicator: rank 0's progress then moves every few rounds
     * of its wait, and its timeout on the first communicator must fire
     * all the same (after timeout_s, well
     * before the skipper gives up after 8 s). Rank 0 then tells the
     * skipper to stop (MPI) and takes its last message (tag 6); the others
     * (tag 5) are left unexpected, for comm_destroy to free. */
    comm = create_with_timeout();
    xcoll_comm_t talk = create_with_timeout();
    TC_EXPECT(XCOLL_OK, xcoll_allreduce(in, out, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL));
    if (rank == 0)
        printf("test_timeout: rank %d skips an allreduce and sends rank 0 messages meanwhile\n",
               skipper);
    if (rank == skipper) {
        int stop = 0, last = -1, n = 0, flag = 0;
        MPI_Request mr;
        double t0 = tc_now();
        TC_MPI(MPI_Irecv(&stop, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, &mr));
        while (!flag && tc_now() - t0 < 8.0) {
            xcoll_request_t sreq = NULL;
            if (xcoll_isend(&n, 1, XCOLL_INT32, 0, 5, talk, NULL, &sreq) != XCOLL_OK ||
                xcoll_wait(&sreq) != XCOLL_OK) {
                tc_fail("a message to rank 0 failed while it waited");
                break;
            }
            n++;
            for (double d = tc_now(); tc_now() - d < 5e-6;)
                ; /* ~5 us apart: rank 0 finds one every few rounds */
            TC_MPI(MPI_Test(&mr, &flag, MPI_STATUS_IGNORE));
        }
        if (!flag)
            TC_MPI(MPI_Wait(&mr, MPI_STATUS_IGNORE));
        TC_EXPECT(XCOLL_OK, xcoll_send(&last, 1, XCOLL_INT32, 0, 6, talk, NULL));
    } else {
        double t0 = tc_now();
        xcoll_status_t st = xcoll_allreduce(in, out, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL);
        double elapsed = tc_now() - t0;
        expect_timeout("allreduce under traffic", st, elapsed);
        if (elapsed > 5.0)
            tc_fail("the traffic held the timeout off for %.2f s", elapsed);
        if (rank == 0) {
            int stop = 1, last = 0;
            TC_MPI(MPI_Send(&stop, 1, MPI_INT, skipper, 77, MPI_COMM_WORLD));
            TC_EXPECT(XCOLL_OK, xcoll_recv(&last, 1, XCOLL_INT32, skipper, 6, talk, NULL));
        }
    }
    TC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(talk));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));

    /* A new communicator after the failures works normally. */
    comm = create_with_timeout();
    TC_EXPECT(XCOLL_OK, xcoll_allreduce(in, out, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL));
    if (out[COUNT - 1] != (float)size)
        tc_fail("allreduce after the failures gave %g, expected %d", out[COUNT - 1], size);
    else
        tc_pass();
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));

    TC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return tc_finish();
}
