/* straggler.c - one slow rank makes every rank slow: find it first.
 *
 * In a data-parallel loop every step ends in a collective (the gradient
 * allreduce), and a collective finishes on no rank before the last rank
 * has entered it. So when one rank computes slower (a busy host, a
 * throttled GPU, a slow disk), the step time of *every* rank grows, and
 * the time shows up inside the allreduce of the ranks that are fine: they
 * wait there. The slow rank itself waits least. Timing each rank's
 * compute and its time inside the collective, side by side, names it:
 * the straggler is the rank with the most compute and the least waiting.
 *
 *   mpicc straggler.c -lxcoll -o straggler
 *   mpirun -np 4 ./straggler [slow rank, default N/2]
 *
 * Part 1: 50 steps of 2 ms compute (6 ms on the slow rank) and an 8-byte
 * allreduce; rank 0 prints each rank's medians and names the straggler.
 * The same reading in xcoll-perf's output: its "slowest" column is the
 * rank whose calls took longest, a waiting one, never the straggler.
 *
 * Part 2: the straggler stalls for 1.5 s, longer than the communicator's
 * timeout (0.5 s here, XCOLL_TIMEOUT in real jobs). The others' allreduce
 * then fails with XCOLL_ERR_TIMEOUT instead of hanging, and xcoll's log
 * (stderr) names the rank each one was waiting for when it gave up (in a
 * tree or ring, often a neighbour that waits for the straggler in turn);
 * then the ranks that timed out ask each other where they are, and each
 * ends with the cause: "allreduce seq 0 (comm 2) timed out: rank 2 never
 * entered it". The straggler may even succeed, late: the others' data
 * had reached it before they gave up. The communicator is failed on the
 * ranks that timed out, so every rank destroys it. The
 * program checks that it named the right rank in part 1 and that the
 * waiting ranks timed out in part 2.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void compute_ms(double ms)
{
    struct timespec t = {(time_t)(ms / 1e3), (long)((ms - (double)(long)(ms / 1e3) * 1e3) * 1e6)};
    nanosleep(&t, NULL); /* a GPU computing: the host core is free */
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { STEPS = 50 };

int main(int argc, char **argv)
{
    int rank, size, ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int slow = argc > 1 ? atoi(argv[1]) : size / 2;
    if (size < 2 || slow < 0 || slow >= size) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N>=2 straggler [slow rank < N]\n");
        MPI_Finalize();
        return 2;
    }
    xcoll_comm_t comm;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);

    /* Part 1: per step, compute then allreduce, each timed. */
    double comp[STEPS], wait[STEPS], mine[2], *all = malloc((size_t)size * 2 * sizeof(double));
    for (int s = 0; s < STEPS; s++) {
        double loss = rank, sum, t0 = now();
        compute_ms(rank == slow ? 6 : 2);
        double t1 = now();
        if (xcoll_allreduce(&loss, &sum, 1, XCOLL_FLOAT64, XCOLL_SUM, comm, NULL) != XCOLL_OK)
            MPI_Abort(MPI_COMM_WORLD, 1);
        comp[s] = t1 - t0;
        wait[s] = now() - t1;
        ok &= sum == (double)size * (size - 1) / 2;
    }
    qsort(comp, STEPS, sizeof(double), cmp);
    qsort(wait, STEPS, sizeof(double), cmp);
    mine[0] = comp[STEPS / 2];
    mine[1] = wait[STEPS / 2];
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int found = -1;
    if (rank == 0) {
        double least = 1e30;
        printf("median per step:   compute   in allreduce\n");
        for (int r = 0; r < size; r++) {
            printf("  rank %-3d %10.2f ms %10.2f ms\n", r, all[2 * r] * 1e3, all[2 * r + 1] * 1e3);
            if (all[2 * r + 1] < least) {
                least = all[2 * r + 1];
                found = r;
            }
        }
        printf("straggler: rank %d (waits least in the collective; the others wait for it)\n",
               found);
    }
    MPI_Bcast(&found, 1, MPI_INT, 0, MPI_COMM_WORLD);
    ok &= found == slow;

    /* Part 2: the straggler stalls past the timeout. */
    xcoll_config_t cfg;
    xcoll_comm_t tcomm;
    xcoll_config_init(&cfg);
    cfg.timeout_s = 0.5;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &tcomm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0)
        printf("rank %d now stalls for 1.5 s; the communicator's timeout is 0.5 s "
               "(xcoll's log follows on stderr)\n", slow);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == slow)
        compute_ms(1500);
    double x = 1, y, t0 = now();
    xcoll_status_t st = xcoll_allreduce(&x, &y, 1, XCOLL_FLOAT64, XCOLL_SUM, tcomm, NULL);
    double took = now() - t0;
    int timed_out = st == XCOLL_ERR_TIMEOUT, all_out = 0;
    double times[2] = {took, (double)st}, *got = malloc((size_t)size * 2 * sizeof(double));
    /* MPI still works: the timeout failed xcoll's communicator, not MPI's */
    MPI_Gather(times, 2, MPI_DOUBLE, got, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank != slow)
        all_out = !timed_out;
    MPI_Allreduce(MPI_IN_PLACE, &all_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("  rank %-3d allreduce returned after %5.2f s: %s\n", r, got[2 * r],
                   xcoll_strerror((xcoll_status_t)got[2 * r + 1]));
    }
    ok &= all_out == 0;
    xcoll_comm_destroy(tcomm);

    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: straggler %s; the waiting ranks %s\n", all_ok ? "OK" : "FAILED",
               found == slow ? "found" : "missed", all_out == 0 ? "timed out" : "did not time out");
    xcoll_comm_destroy(comm);
    free(all);
    free(got);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
