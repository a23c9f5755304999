/* test_timeout: a rank that never arrives turns into XCOLL_ERR_TIMEOUT,
 * not a hang.
 *
 * On a communicator with timeout_s = 2, the last rank (the skipper) skips
 * one allreduce; every other rank must get XCOLL_ERR_TIMEOUT within a few
 * seconds, and every later call on that communicator must fail at once
 * with XCOLL_ERR_COMM_FAILED. The same again with a skipped barrier on a
 * second communicator. All ranks then destroy the communicators, meet in
 * MPI_Barrier and exit cleanly.
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
