/* test_nodeloss: what the ranks that survive a node see.
 *
 * Every rank runs collectives in a loop (allreduce, bcast, alltoall of a
 * few hundred KiB, checked) on a communicator with the timeout given,
 * until one fails. run_cluster_tests.sh kills every process of one node
 * while they run; each surviving rank must then see the collective fail
 * (XCOLL_ERR_PEER_LOST, or XCOLL_ERR_TIMEOUT) within the limit given, its
 * log naming the lost ranks (the driver checks the log), and
 * xcoll_comm_destroy must return. Nothing may fail before the node goes,
 * and the data must be right until then.
 *
 * Usage: test_nodeloss [--timeout S] [--limit S] [--seconds S] [--linger S]
 *   --timeout S  xcoll's timeout (xcoll_config_t.timeout_s; 0 = none)
 *   --limit S    a surviving rank must fail within S seconds of its last
 *                good collective (default: the timeout, or 5 without one)
 *   --seconds S  give up (exit 1) if nothing failed after S seconds (default 60)
 *   --linger S   wait S seconds between the failure and the destroy (default 0):
 *                a destroy closes connections, and a survivor still deciding
 *                would rightly count the destroyed rank as lost too
 * Prints, on stdout, one line per rank at the start ("rank R of P on HOST"),
 * "ready" (rank 0) once 20 rounds passed, and per surviving rank
 * "rank R: <collective> failed after T s: <status>" and
 * "rank R: destroy returned <status> in T s". A surviving rank exits without
 * MPI_Finalize: MPI cannot finalize a job that lost processes. */
#include <mpi.h>
#include "xcoll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COUNT (64 * 1024) /* floats: 256 KiB, segmented and pipelined */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int arg_double(int argc, char **argv, int *i, double *out)
{
    char *end;
    if (*i + 1 >= argc)
        return -1;
    *out = strtod(argv[++*i], &end);
    return *end != '\0' || *out < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    double timeout = 0, limit = -1, seconds = 60, linger = 0, t0, last_good, t;
    int rank, size, i, round, bad = 0;
    char host[256] = "?";
    xcoll_config_t cfg;
    xcoll_comm_t comm = NULL;
    xcoll_status_t st = XCOLL_OK;
    const char *what = "?";
    float *a, *b;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i < argc; i++) {
        double *dst = strcmp(argv[i], "--timeout") == 0   ? &timeout
                      : strcmp(argv[i], "--limit") == 0   ? &limit
                      : strcmp(argv[i], "--seconds") == 0 ? &seconds
                      : strcmp(argv[i], "--linger") == 0  ? &linger
                                                          : NULL;
        if (dst == NULL || arg_double(argc, argv, &i, dst) != 0) {
            if (rank == 0)
                fprintf(stderr, "usage: test_nodeloss [--timeout S] [--limit S] [--seconds S] "
                                "[--linger S]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (limit < 0)
        limit = timeout > 0 ? timeout : 5.0;
    gethostname(host, sizeof(host) - 1);
    printf("test_nodeloss: rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);

    xcoll_config_init(&cfg);
    cfg.timeout_s = timeout;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK) {
        fprintf(stderr, "test_nodeloss r%d: FAIL: xcoll_comm_create_mpi\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    a = malloc((size_t)COUNT * size * sizeof(float));
    b = malloc((size_t)COUNT * size * sizeof(float));
    if (a == NULL || b == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);

    t0 = last_good = now_s();
    for (round = 0; now_s() - t0 < seconds; round++) {
        size_t n = COUNT / (size_t)size, k;
        switch (round % 3) {
        case 0:
            what = "allreduce";
            for (k = 0; k < COUNT; k++)
                a[k] = (float)(rank + 1);
            st = xcoll_allreduce(a, b, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL);
            for (k = 0; st == XCOLL_OK && k < COUNT; k++)
                bad += b[k] != (float)(size * (size + 1) / 2);
            break;
        case 1:
            what = "bcast";
            for (k = 0; k < COUNT; k++)
                b[k] = rank == round % size ? (float)(round + k % 7) : -1.0f;
            st = xcoll_bcast(b, COUNT, XCOLL_FLOAT32, round % size, comm, NULL);
            for (k = 0; st == XCOLL_OK && k < COUNT; k++)
                bad += b[k] != (float)(round + k % 7);
            break;
        default:
            what = "alltoall";
            for (k = 0; k < n * (size_t)size; k++)
                a[k] = (float)(rank * size + (int)(k / n));
            st = xcoll_alltoall(a, b, n, XCOLL_FLOAT32, comm, NULL);
            for (k = 0; st == XCOLL_OK && k < n * (size_t)size; k++)
                bad += b[k] != (float)((int)(k / n) * size + rank);
            break;
        }
        if (bad > 0) {
            printf("test_nodeloss: rank %d: FAIL: %s round %d gave %d wrong elements\n", rank,
                   what, round, bad);
            fflush(stdout);
            _exit(1);
        }
        if (st != XCOLL_OK)
            break;
        last_good = now_s();
        if (round == 20 && rank == 0) {
            printf("test_nodeloss: ready\n");
            fflush(stdout);
        }
    }
    t = now_s();
    if (st == XCOLL_OK) {
        printf("test_nodeloss: rank %d: FAIL: nothing failed in %.0f s\n", rank, seconds);
        fflush(stdout);
        _exit(1);
    }
    printf("test_nodeloss: rank %d: %s failed after %.2f s: %s\n", rank, what, t - last_good,
           xcoll_strerror(st));
    if (st != XCOLL_ERR_PEER_LOST && st != XCOLL_ERR_TIMEOUT)
        printf("test_nodeloss: rank %d: FAIL: status %d, expected XCOLL_ERR_PEER_LOST or "
               "XCOLL_ERR_TIMEOUT\n", rank, (int)st);
    if (t - last_good > limit)
        printf("test_nodeloss: rank %d: FAIL: that is over the limit of %.1f s\n", rank, limit);
    /* the communicator is failed now: calls return at once */
    if (xcoll_barrier(comm) != XCOLL_ERR_COMM_FAILED)
        printf("test_nodeloss: rank %d: FAIL: a barrier after the failure did not return "
               "XCOLL_ERR_COMM_FAILED\n", rank);
    fflush(stdout);
    if (linger > 0) {
        struct timespec ts = {(time_t)linger, (long)((linger - (double)(time_t)linger) * 1e9)};
        nanosleep(&ts, NULL);
    }
    t = now_s();
    st = xcoll_comm_destroy(comm);
    printf("test_nodeloss: rank %d: destroy returned %s in %.2f s\n", rank, xcoll_strerror(st),
           now_s() - t);
    fflush(stdout);
    free(a);
    free(b);
    _exit(st == XCOLL_OK ? 0 : 1);
}
