/* tune_sweep: times every algorithm of the chosen collectives over a range
 * of message sizes, to set the default selection thresholds (lib/coll/
 * tune.c, docs/TUNING.md). Each algorithm gets its own communicator,
 * created with XCOLL_TUNE=<coll>:0-inf:<algo> (the table is read at
 * creation), and the algorithms are interleaved size by size and repeated,
 * so load from other processes on a shared machine hits them alike; the
 * median of the repetitions is reported.
 *
 *   mpirun -np N tune_sweep [-c coll[,coll...]] [-x coll:algo[,...]] [-r reps]
 *                           [-min bytes] [-max bytes] [-app]
 *
 * -x leaves algorithms out (one that is broken or too slow to wait for).
 * -app times each call as a program makes it (see app below) instead of a
 * loop of back-to-back calls.
 *
 * Message size is as the selection rules see it: count x element size
 * (float32), i.e. one rank's block for the block collectives. Output, on
 * rank 0: one line per (collective, size) with each algorithm's median time
 * per call in microseconds and the fastest marked. Hierarchical algorithms
 * are skipped (one node: they decline and another algorithm would run). */
#include <mpi.h>
#include "xcoll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALGOS 8
#define MAX_SIZES 32
#define TARGET_S 0.02 /* time one measurement aims at */
#define APP_MIN_CALLS 21 /* -app: calls per measurement, at least */

static int rank, nranks;
static char excluded[256];

static void die(const char *what, xcoll_status_t rc)
{
    fprintf(stderr, "tune_sweep r%d: %s: %s\n", rank, what, xcoll_strerror(rc));
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static xcoll_status_t run(int coll, void *send, void *recv, size_t count, xcoll_comm_t comm)
{
    switch (coll) {
    case 0: return xcoll_allreduce(send, recv, count, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL);
    case 1: return xcoll_bcast(recv, count, XCOLL_FLOAT32, 0, comm, NULL);
    case 2: return xcoll_reduce(send, recv, count, XCOLL_FLOAT32, XCOLL_SUM, 0, comm, NULL);
    case 3: return xcoll_allgather(send, recv, count, XCOLL_FLOAT32, comm, NULL);
    case 4: return xcoll_reduce_scatter(send, recv, count, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL);
    case 5: return xcoll_alltoall(send, recv, count, XCOLL_FLOAT32, comm, NULL);
    case 6: return xcoll_gather(send, recv, count, XCOLL_FLOAT32, 0, comm, NULL);
    case 7: return xcoll_scatter(send, recv, count, XCOLL_FLOAT32, 0, comm, NULL);
    default: return xcoll_barrier(comm);
    }
}

/* Seconds per call, the slowest rank's, over iters calls. */
static double time_calls(int coll, void *send, void *recv, size_t count, xcoll_comm_t comm,
                         int iters)
{
    double t0, t, tmax;
    xcoll_status_t rc;
    int i;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (i = 0; i < iters; i++)
        if ((rc = run(coll, send, recv, count, comm)) != XCOLL_OK)
            die(xcoll_collective_name(coll), rc);
    /* Rooted calls return early on some ranks: count until every rank is
     * done, and keep this rank progressing xcoll until then. */
    if ((rc = xcoll_barrier(comm)) != XCOLL_OK)
        die("xcoll_barrier", rc);
    t = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* -app: time each call as a program makes it. Before it the rank writes
 * the bytes the call reads (a training step's fresh gradients), then an
 * MPI barrier; after it the rank reads its result. A measurement is then
 * the median over the calls of the slowest rank's time, not a mean over
 * back-to-back calls, which reuse what the last call left in the caches:
 * the lines a peer read or wrote there cost nothing to touch again, and a
 * program's own writes between calls take them back. */
static int app;

/* Elements a call reads from its send buffer (bcast: from its buffer, at
 * the root) and writes into its receive buffer; blocks = ranks for the
 * block collectives. */
static size_t in_count(int coll, size_t count, size_t blocks)
{
    return coll == 4 || coll == 5 || coll == 7 ? count * blocks : count;
}

static size_t out_count(int coll, size_t count, size_t blocks)
{
    return coll == 3 || coll == 5 || coll == 6 ? count * blocks : count;
}

/* What the program writes before the call: its input. */
static void app_write(int coll, void *send, void *recv, size_t n, float v)
{
    float *f = coll == 1 ? recv : send;
    if (coll == 1 && rank != 0)
        return;
    for (size_t i = 0; i < n; i++)
        f[i] = v + (float)(i & 7);
}

/* ... and what it reads after it: its result, one float per line. */
static float app_read(const void *recv, size_t n)
{
    const float *f = recv;
    float sum = 0;
    for (size_t i = 0; i < n; i += 16)
        sum += f[i];
    return sum;
}

static double time_app(int coll, void *send, void *recv, size_t count, size_t blocks,
                       xcoll_comm_t comm, int iters, double *each)
{
    static volatile float sink;
    xcoll_status_t rc;
    for (int i = 0; i < iters; i++) {
        double t0, t;
        app_write(coll, send, recv, in_count(coll, count, blocks), (float)(i & 15));
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if ((rc = run(coll, send, recv, count, comm)) != XCOLL_OK)
            die(xcoll_collective_name(coll), rc);
        t = MPI_Wtime() - t0;
        MPI_Allreduce(&t, &each[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        sink += app_read(recv, out_count(coll, count, blocks));
    }
    qsort(each, (size_t)iters, sizeof(*each), cmp_double);
    return each[iters / 2];
}

/* Buffers hold data, not calloc's untouched pages: every read of those
 * is the kernel's one zero page, always in cache, and a single-copy read
 * of a peer's untouched buffer (CMA) is that page too. Until 2026-12-07
 * this sweep's send buffers (and bcast's root buffer) were untouched, so
 * every algorithm that reads more of them looked cheaper than it is
 * (docs/TUNING.md, "Buffers of data, not of zero pages"). Floats that stay
 * finite when summed. */
static void fill(void *buf, size_t bytes)
{
    const float one = 1.0f;
    for (size_t i = 0; i + sizeof(one) <= bytes; i += sizeof(one))
        memcpy((char *)buf + i, &one, sizeof(one));
}

static size_t parse_bytes(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    if (*end == 'k' || *end == 'K')
        v <<= 10;
    else if (*end == 'm' || *end == 'M')
        v <<= 20;
    return v;
}

static void sweep(int coll, int reps, size_t min_bytes, size_t max_bytes)
{
    const char *cname = xcoll_collective_name(coll);
    const char *algos[MAX_ALGOS];
    xcoll_comm_t comms[MAX_ALGOS];
    size_t sizes[MAX_SIZES], nsizes = 0, s, blocks, bytes;
    double *t; /* [size][algo][rep] */
    double *each; /* -app: one measurement's calls */
    char tune[128];
    int nalgos = 0, a, r;
    void *send, *recv;
    xcoll_status_t rc;

    for (a = 0; xcoll_algorithm_name(coll, a) != NULL && nalgos < MAX_ALGOS; a++) {
        const char *name = xcoll_algorithm_name(coll, a);
        char key[64];
        snprintf(key, sizeof(key), ",%s:%s,", cname, name);
        if (strncmp(name, "hier", 4) == 0 || strstr(excluded, key) != NULL)
            continue;
        snprintf(tune, sizeof(tune), "%s:0-inf:%s", cname, name);
        setenv("XCOLL_TUNE", tune, 1);
        if ((rc = xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comms[nalgos])) != XCOLL_OK)
            die("xcoll_comm_create_mpi", rc);
        algos[nalgos++] = name;
    }
    unsetenv("XCOLL_TUNE");
    if (coll == 8) {
        sizes[nsizes++] = 0;
    } else {
        for (bytes = min_bytes; bytes <= max_bytes && nsizes < MAX_SIZES; bytes *= 4)
            sizes[nsizes++] = bytes;
        if (sizes[nsizes - 1] != max_bytes && nsizes < MAX_SIZES)
            sizes[nsizes++] = max_bytes;
    }
    blocks = (coll >= 3 && coll <= 7) ? (size_t)nranks : 1;
    send = calloc(max_bytes * blocks + 64, 1);
    recv = calloc(max_bytes * blocks + 64, 1);
    t = calloc(nsizes * MAX_ALGOS * (size_t)reps, sizeof(*t));
    each = calloc(500 + APP_MIN_CALLS, sizeof(*each));
    if (send == NULL || recv == NULL || t == NULL || each == NULL)
        die("out of memory", XCOLL_ERR_NO_MEMORY);
    fill(send, max_bytes * blocks);
    fill(recv, max_bytes * blocks);

    for (r = 0; r < reps; r++)
        for (s = 0; s < nsizes; s++)
            for (a = 0; a < nalgos; a++) {
                size_t count = sizes[s] / 4;
                double once = time_calls(coll, send, recv, count, comms[a], 1); /* warm-up */
                int iters = once > 0 ? (int)(TARGET_S / once) : 500;
                if (iters < 1)
                    iters = 1;
                if (iters > 500)
                    iters = 500;
                if (app && iters < APP_MIN_CALLS)
                    iters = APP_MIN_CALLS;
                MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
                t[(s * MAX_ALGOS + (size_t)a) * (size_t)reps + (size_t)r] =
                    app ? time_app(coll, send, recv, count, blocks, comms[a], iters, each)
                        : time_calls(coll, send, recv, count, comms[a], iters);
            }

    if (rank == 0) {
        printf("# %s on %d ranks: median of %d, microseconds per call%s\n", cname, nranks, reps,
               app ? " (-app: each call after writing its input, median of the calls)" : "");
        printf("%-6s %10s", "ranks", "bytes");
        for (a = 0; a < nalgos; a++)
            printf(" %17s", algos[a]);
        printf("  best\n");
        for (s = 0; s < nsizes; s++) {
            int best = 0;
            double med[MAX_ALGOS];
            for (a = 0; a < nalgos; a++) {
                double *v = &t[(s * MAX_ALGOS + (size_t)a) * (size_t)reps];
                qsort(v, (size_t)reps, sizeof(*v), cmp_double);
                med[a] = v[reps / 2];
                if (med[a] < med[best])
                    best = a;
            }
            printf("%-6d %10zu", nranks, sizes[s]);
            for (a = 0; a < nalgos; a++)
                printf(" %16.1f%c", med[a] * 1e6, a == best ? '*' : ' ');
            printf("  %s:%s\n", cname, algos[best]);
        }
        fflush(stdout);
    }
    for (a = 0; a < nalgos; a++)
        if ((rc = xcoll_comm_destroy(comms[a])) != XCOLL_OK)
            die("xcoll_comm_destroy", rc);
    free(send);
    free(recv);
    free(t);
    free(each);
}

int main(int argc, char **argv)
{
    char colls[256] = "allreduce,bcast,reduce,allgather,reduce_scatter,alltoall,gather,scatter,"
                      "barrier";
    size_t min_bytes = 8, max_bytes = 16 << 20;
    int reps = 3, i, c;
    char *tok, *save = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            snprintf(colls, sizeof(colls), "%s", argv[++i]);
        else if (strcmp(argv[i], "-x") == 0 && i + 1 < argc)
            snprintf(excluded, sizeof(excluded), ",%s,", argv[++i]);
        else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "-min") == 0 && i + 1 < argc)
            min_bytes = parse_bytes(argv[++i]);
        else if (strcmp(argv[i], "-max") == 0 && i + 1 < argc)
            max_bytes = parse_bytes(argv[++i]);
        else if (strcmp(argv[i], "-app") == 0)
            app = 1;
        else {
            if (rank == 0)
                fprintf(stderr, "usage: tune_sweep [-c coll,...] [-x coll:algo,...] [-r reps] "
                                "[-min bytes] [-max bytes] [-app]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (reps < 1 || min_bytes < 4 || max_bytes < min_bytes) {
        if (rank == 0)
            fprintf(stderr, "tune_sweep: need reps >= 1 and 4 <= min <= max\n");
        MPI_Finalize();
        return 2;
    }
    for (tok = strtok_r(colls, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        for (c = 0; xcoll_collective_name(c) != NULL; c++)
            if (strcmp(xcoll_collective_name(c), tok) == 0)
                break;
        if (xcoll_collective_name(c) == NULL) {
            if (rank == 0)
                fprintf(stderr, "tune_sweep: unknown collective %s\n", tok);
            MPI_Finalize();
            return 2;
        }
        sweep(c, reps, min_bytes, max_bytes);
    }
    MPI_Finalize();
    return 0;
}
