/* bench/overlap: does a nonblocking allreduce finish while the caller
 * computes?
 *
 * For each size it first times the allreduce alone (comm) and picks a
 * compute loop of the same length, then times, per iteration after an
 * MPI_Barrier, the slowest rank:
 *   sequential   xcoll_allreduce, then the compute
 *   no thread    xcoll_iallreduce, the compute (no xcoll call), xcoll_wait
 *   thread       the same on a communicator with the progress thread
 * Perfect overlap takes max(compute, comm); none takes their sum.
 *
 * Usage: mpirun -np P bench/overlap [-n ITERS] [-s] [sizes in floats ...]
 *   -s: the "compute" sleeps instead of spinning, as the host does while
 *   a GPU computes: a core is free for the communication then. Spinning
 *   on every core leaves the thread none, and the copies a transfer
 *   within a node needs must then take turns with the compute.
 * Prints one line per size: times in ms (medians over ITERS) and each
 * overlapped time as a fraction of the sequential one. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xcoll.h"

static volatile double sink;
static int sleeping;

/* Busy (or asleep, -s) for about `seconds`, with no calls into xcoll or
 * MPI. */
static void compute(double seconds)
{
    double t0 = MPI_Wtime(), x = 1;
    if (sleeping) {
        struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
        nanosleep(&ts, NULL);
        return;
    }
    while (MPI_Wtime() - t0 < seconds)
        for (int i = 0; i < 2000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The slowest rank's time of one iteration of `mode`, in seconds. */
static double once(int mode, xcoll_comm_t plain, xcoll_comm_t threaded, float *in, float *out,
                   size_t n, double work)
{
    xcoll_request_t r = NULL;
    double t, slow;
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    if (mode == 0) {
        xcoll_allreduce(in, out, n, XCOLL_FLOAT32, XCOLL_SUM, plain, NULL);
        compute(work);
    } else {
        xcoll_iallreduce(in, out, n, XCOLL_FLOAT32, XCOLL_SUM, mode == 1 ? plain : threaded, NULL,
                         &r);
        compute(work);
        xcoll_wait(&r);
    }
    t = MPI_Wtime() - t;
    MPI_Allreduce(&t, &slow, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slow;
}

int main(int argc, char **argv)
{
    int rank, size, iters = 9, nsizes = 0;
    size_t sizes[16];
    xcoll_comm_t plain, threaded;
    xcoll_config_t cfg;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s"))
            sleeping = 1;
        else if (nsizes < 16)
            sizes[nsizes++] = (size_t)atol(argv[i]);
    }
    if (nsizes == 0) {
        sizes[0] = 1 << 18, sizes[1] = 1 << 20, sizes[2] = 1 << 22;
        nsizes = 3;
    }
    if (iters < 1 || iters > 1000)
        iters = 9;
    /* the thread progresses every communicator of the process: the modes
     * without it run before any communicator asks for it */
    xcoll_config_init(&cfg);
    cfg.progress_thread = 0;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &plain) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    double comm_t[16], med[16][3];
    for (int phase = 0; phase < 2; phase++) {
        if (phase == 1) {
            cfg.progress_thread = 1;
            if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &threaded) != XCOLL_OK)
                MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int s = 0; s < nsizes; s++) {
            size_t n = sizes[s];
            float *in = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
            double *t = malloc((size_t)iters * sizeof(double));
            if (phase == 0) {
                /* the allreduce alone sets the compute's length */
                for (int i = 0; i < iters; i++)
                    t[i] = once(0, plain, NULL, in, out, n, 0);
                qsort(t, (size_t)iters, sizeof(double), cmp);
                comm_t[s] = t[iters / 2];
            }
            for (int mode = phase == 0 ? 0 : 2; mode < (phase == 0 ? 2 : 3); mode++) {
                for (int i = 0; i < iters; i++)
                    t[i] = once(mode, plain, threaded, in, out, n, comm_t[s]);
                qsort(t, (size_t)iters, sizeof(double), cmp);
                med[s][mode] = t[iters / 2];
            }
            free(in), free(out), free(t);
        }
    }
    if (rank == 0) {
        printf("# allreduce float32 sum, %d ranks, %d iterations, compute %s, medians, slowest "
               "rank, ms\n# %10s %8s %8s %10s %10s %10s %8s %8s\n",
               size, iters, sleeping ? "sleeping" : "spinning", "floats", "comm", "compute",
               "sequential", "no thread", "thread", "nothr/seq", "thr/seq");
        for (int s = 0; s < nsizes; s++)
            printf("  %10zu %8.3f %8.3f %10.3f %10.3f %10.3f %8.2f %8.2f\n", sizes[s],
                   comm_t[s] * 1e3, comm_t[s] * 1e3, med[s][0] * 1e3, med[s][1] * 1e3,
                   med[s][2] * 1e3, med[s][1] / med[s][0], med[s][2] / med[s][0]);
    }
    xcoll_comm_destroy(threaded);
    xcoll_comm_destroy(plain);
    MPI_Finalize();
    return 0;
}
