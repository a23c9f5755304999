/* mismatch.c - when ranks call different collectives: a hang, or an error.
 *
 * Every rank of a communicator must make the same collective calls in the
 * same order, with matching arguments. A branch that differs on one rank
 * ("if (rank == last) bcast else allreduce") breaks that, and nothing in
 * the messages themselves says so: xcoll numbers the collectives of a
 * communicator, and the last rank's bcast and the others' allreduce are
 * both number 0. Its bcast may even take the allreduce's bytes and return
 * success, while the others wait for a contribution that never comes.
 *
 *   mpicc mismatch.c -lxcoll -o mismatch
 *   mpirun -np 4 ./mismatch
 *
 * Part 1, the check off (the default): the last rank calls bcast, the
 * others allreduce, with a 1 s timeout. The others fail with
 * XCOLL_ERR_TIMEOUT; the census that follows a timeout (on stderr) names
 * the last rank as the one that never entered their allreduce: it is
 * silent, having called something else and left, or still stuck.
 *
 * Part 2, the check on (xcoll_config_t.check, or XCOLL_CHECK=1 for every
 * communicator): each collective first compares what every rank called
 * (one small allgather of "allreduce 16 float32 sum", "bcast 64 B root
 * 0"), so every rank fails at once with XCOLL_ERR_MISMATCH, before any
 * data moved, and the log says which rank called what. The communicator
 * stays usable: the matching allreduce after it gives the right sum.
 *
 * Checks: in part 1 no rank hangs and the others fail; in part 2 every
 * rank gets XCOLL_ERR_MISMATCH, then the right sum.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>

enum { N = 16 };

/* The bug under study: one rank takes the other branch. */
static xcoll_status_t step(xcoll_comm_t comm, int rank, int size, float *in, float *out)
{
    if (rank == size - 1)
        return xcoll_bcast(out, N, XCOLL_FLOAT32, 0, comm, NULL);
    return xcoll_allreduce(in, out, N, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL);
}

/* Prints every rank's status in rank order (rank 0 prints). */
static void show(const char *part, xcoll_status_t st, int rank, int size)
{
    int all[64], mine = (int)st;
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    for (int r = 0; r < size; r++)
        printf("  %s: rank %d %s: %s\n", part, r, r == size - 1 ? "(bcast)   " : "(allreduce)",
               xcoll_strerror((xcoll_status_t)all[r]));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    float in[N], out[N];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size > 64) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N ./mismatch, 2 <= N <= 64\n");
        MPI_Finalize();
        return 2;
    }
    for (int i = 0; i < N; i++)
        in[i] = (float)rank;

    /* Part 1: no check; a timeout turns the hang into an error. */
    xcoll_config_t cfg;
    xcoll_comm_t comm;
    xcoll_config_init(&cfg);
    cfg.timeout_s = 1.0;
    cfg.check = 0;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0)
        printf("part 1: rank %d calls bcast, the others allreduce; no check, 1 s timeout "
               "(xcoll's log on stderr)\n", size - 1);
    fflush(stdout);
    xcoll_status_t st = step(comm, rank, size, in, out);
    show("part 1", st, rank, size);
    int failed = st != XCOLL_OK, nfailed = 0;
    MPI_Allreduce(&failed, &nfailed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad |= nfailed == 0; /* someone must notice */
    xcoll_comm_destroy(comm); /* failed on the ranks that timed out */

    /* Part 2: the same bug with the check on. */
    cfg.check = 1;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0)
        printf("part 2: the same calls with the check on\n");
    fflush(stdout);
    st = step(comm, rank, size, in, out);
    show("part 2", st, rank, size);
    bad |= st != XCOLL_ERR_MISMATCH;

    /* The communicator goes on: the fixed program's allreduce. */
    st = xcoll_allreduce(in, out, N, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL);
    bad |= st != XCOLL_OK || out[N - 1] != (float)size * (float)(size - 1) / 2;
    if (rank == 0)
        printf("then all call allreduce: %s, sum of ranks %g (expected %d)\n",
               xcoll_strerror(st), out[N - 1], size * (size - 1) / 2);
    xcoll_comm_destroy(comm);

    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s\n", any ? "FAILED: see above" : "OK: the check turned a hang into an error");
    MPI_Finalize();
    return any;
}
