/* barrier.c - what a barrier guarantees, what it costs, why not to sprinkle it.
 *
 * xcoll_barrier returns on a rank only after every rank has entered it.
 * That is all it does: no data moves. Here rank N-1 arrives 100 ms late,
 * and every other rank waits those 100 ms inside the barrier; the program
 * checks that no rank left before the late one came in.
 *
 *   mpicc barrier.c -lxcoll -o barrier
 *   mpirun -np 4 ./barrier
 *
 * What it costs: one barrier is a few messages (dissemination: in round k
 * rank r signals rank r + 2^k, log2(N) rounds; within one node every rank
 * signals every other directly), so a few microseconds here. The real
 * cost is the waiting: a barrier makes every rank as slow as the slowest
 * at that point. A training loop with a barrier after every step turns
 * each rank's small delays into everybody's delays; the program measures
 * 200 steps of uneven compute with and without one. Collectives that
 * carry data already synchronise as much as they need; barriers belong in
 * benchmarks and debugging, rarely in production loops.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* one clock for every process of a host */
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void work_us(int us)
{
    struct timespec t = {0, (long)us * 1000};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0, all_bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    xcoll_comm_t comm;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);

    /* 1. The guarantee: rank N-1 enters 100 ms late. */
    double t[2], *all = malloc((size_t)size * 2 * sizeof(double));
    if (xcoll_barrier(comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == size - 1)
        work_us(100000);
    t[0] = now();
    if (xcoll_barrier(comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    t[1] = now();
    MPI_Gather(t, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    /* the times compare only between processes of one host */
    char host[64] = {0}, *hosts = rank == 0 ? malloc((size_t)size * 64) : NULL;
    gethostname(host, sizeof(host) - 1);
    MPI_Gather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int one_host = 1;
        for (int r = 1; r < size; r++)
            one_host &= strcmp(hosts + (size_t)r * 64, hosts) == 0;
        double late_in = all[2 * (size - 1)];
        for (int r = 0; r < size; r++) {
            printf("rank %d waited %6.1f ms in the barrier\n", r, (all[2 * r + 1] - all[2 * r]) * 1e3);
            bad += one_host && all[2 * r + 1] < late_in;
        }
        if (!one_host)
            printf("(ranks on several hosts: their clocks are not compared)\n");
        free(hosts);
    }

    /* 2. The cost: one barrier, and a barrier after every step. */
    const int n = 1000, steps = 200;
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (xcoll_barrier(comm) != XCOLL_OK)
            MPI_Abort(MPI_COMM_WORLD, 1);
    double one = (now() - t0) / n;
    double with = 0, without = 0;
    for (int sprinkle = 0; sprinkle < 2; sprinkle++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        for (int s = 0; s < steps; s++) {
            /* uneven compute: a different rank is slow at every step */
            work_us(s % size == rank ? 300 : 100);
            if (sprinkle && xcoll_barrier(comm) != XCOLL_OK)
                MPI_Abort(MPI_COMM_WORLD, 1);
        }
        double mine = now() - t0, slowest;
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (sprinkle)
            with = slowest;
        else
            without = slowest;
    }
    if (rank == 0)
        printf("one barrier: %.1f us; %d uneven steps: %.1f ms without a barrier per step, "
               "%.1f ms with one\n", one * 1e6, steps, without * 1e3, with * 1e3);

    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d ranks left the barrier before the last one entered\n",
               all_bad == 0 ? "OK" : "FAILED", all_bad);
    xcoll_comm_destroy(comm);
    free(all);
    MPI_Finalize();
    return all_bad == 0 ? 0 : 1;
}
