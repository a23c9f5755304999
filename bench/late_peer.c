/* bench/late_peer: what does waiting for a late rank cost the ranks that
 * wait?
 *
 * Each iteration, after an MPI_Barrier, the last rank sleeps D ms and then
 * enters an allreduce of B bytes that the other ranks entered at once.
 * The waiting ranks should neither burn their core meanwhile (a rank that
 * waits long sleeps in the kernel until a peer wakes it) nor notice the
 * late rank's message much after it was sent. Per waiting rank and
 * iteration it measures
 *   cpu   CPU time of the whole process (the progress thread included)
 *         during the call, as a fraction of the call's wall time;
 *   lag   the call's end minus the moment the late rank entered (one
 *         CLOCK_MONOTONIC on one node), in us: the wake-up latency plus
 *         the collective itself.
 * in two modes: the caller waits in xcoll_allreduce, and the progress
 * thread waits (xcoll_iallreduce + xcoll_wait on a communicator with it).
 *
 * Usage: mpirun -np P bench/late_peer [-n ITERS] [-d MS] [-b BYTES] [-v 1]
 * Prints medians over ITERS and over the waiting ranks; with -v 1 also
 * each waiting rank's median lag (which hop of a slow wake-up chain). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xcoll.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp);
    return n > 0 ? v[n / 2] : 0;
}

/* One iteration; on waiting ranks *cpu and *lag as above. */
static void once(xcoll_comm_t comm, int nonblocking, double delay, char *in, char *out,
                 size_t bytes, double *cpu, double *lag)
{
    int rank, size;
    double entered = 0, late_entered, wall, c0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        struct timespec ts = { 0, (long)(delay * 1e9) };
        nanosleep(&ts, NULL);
    }
    entered = clock_s(CLOCK_MONOTONIC);
    c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    if (nonblocking) {
        xcoll_request_t r = NULL;
        if (xcoll_iallreduce(in, out, bytes, XCOLL_UINT8, XCOLL_MAX, comm, NULL, &r) != XCOLL_OK ||
            xcoll_wait(&r) != XCOLL_OK)
            MPI_Abort(MPI_COMM_WORLD, 1);
    } else if (xcoll_allreduce(in, out, bytes, XCOLL_UINT8, XCOLL_MAX, comm, NULL) != XCOLL_OK) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    wall = clock_s(CLOCK_MONOTONIC) - entered;
    *cpu = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / wall;
    late_entered = entered;
    MPI_Bcast(&late_entered, 1, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    *lag = (entered + wall - late_entered) * 1e6;
}

int main(int argc, char **argv)
{
    int rank, size, iters = 30, verbose = 0;
    double delay_ms = 20;
    size_t bytes = 8;
    xcoll_config_t cfg;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n"))
            iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-d"))
            delay_ms = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "-b"))
            bytes = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-v"))
            verbose = atoi(argv[i + 1]);
    }
    if (size < 2 || iters < 1 || iters > 10000 || delay_ms < 0 || delay_ms >= 1000) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P>=2 late_peer [-n 1..10000] [-d MS<1000] [-b BYTES] "
                            "[-v 0|1]\n");
        MPI_Finalize();
        return 2;
    }
    char *in = calloc(bytes ? bytes : 1, 1), *out = calloc(bytes ? bytes : 1, 1);
    double *cpu = malloc((size_t)iters * sizeof(double)), *lag = malloc((size_t)iters * sizeof(double));
    double *all = malloc((size_t)iters * (size_t)size * sizeof(double));
    if (rank == 0)
        printf("# allreduce of %zu B, rank %d late by %.1f ms, %d ranks, %d iterations; medians "
               "over the waiting ranks\n# %-14s %10s %10s\n",
               bytes, size - 1, delay_ms, size, iters, "waiter", "cpu/wall", "lag_us");
    /* the thread progresses every communicator of the process: the mode
     * without it runs before any communicator asks for it */
    for (int mode = 0; mode < 2; mode++) {
        xcoll_comm_t comm;
        double stat[2];
        xcoll_config_init(&cfg);
        cfg.progress_thread = mode;
        if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK)
            MPI_Abort(MPI_COMM_WORLD, 1);
        for (int i = 0; i < iters; i++)
            once(comm, mode, delay_ms * 1e-3, in, out, bytes, &cpu[i], &lag[i]);
        for (int k = 0; k < 2; k++) {
            double *v = k == 0 ? cpu : lag;
            int n;
            MPI_Gather(v, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            /* the late rank's own numbers (gathered last) are not a wait */
            n = (size - 1) * iters;
            if (rank == 0 && k == 1 && verbose)
                for (int r = 0; r < size - 1; r++)
                    printf("  %-14s rank %d: lag %.1f us\n", mode ? "progress thread" : "caller", r,
                           median(all + (size_t)r * (size_t)iters, iters));
            stat[k] = rank == 0 ? median(all, n) : 0;
        }
        if (rank == 0)
            printf("  %-14s %10.3f %10.1f\n", mode ? "progress thread" : "caller", stat[0],
                   stat[1]);
        xcoll_comm_destroy(comm);
    }
    free(in), free(out), free(cpu), free(lag), free(all);
    MPI_Finalize();
    return 0;
}
