/*
 * mpi_collbench - an MPI-only collective benchmark (it knows nothing of
 * xcoll): the program bench/dropin_sweep.sh runs under plain MPI and
 * under each drop-in, to see what a user who drops xcoll in gains or
 * loses.
 *
 *   mpi_collbench [-c allreduce,bcast,...] [-b 8] [-e 64M] [-t 0.05]
 *
 * For each collective and each size from -b to -e (doubling) it times a
 * loop of calls between two barriers and prints one line
 *
 *   coll ranks bytes iterations microseconds-per-call
 *
 * where bytes is the message size as docs/TUNING.md defines it (one
 * rank's block for the block collectives), and the time is the slowest
 * rank's average. The iteration count is fixed from the size (about -t
 * seconds of memory traffic at 2 GB/s, 5 to 1000), the same on every
 * rank. Reductions sum MPI_FLOAT; the others move MPI_BYTE.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const all_colls[] = {"allreduce", "bcast",  "reduce",         "allgather",
                                        "reduce_scatter", "alltoall", "gather", "scatter",
                                        "barrier"};
#define NCOLLS ((int)(sizeof(all_colls) / sizeof(all_colls[0])))

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'k' || *end == 'K')
        v *= 1024;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024;
    else if (*end == 'g' || *end == 'G')
        v *= 1024.0 * 1024 * 1024;
    return v < 0 ? 0 : (size_t)v;
}

/* One call of collective c with a message of `bytes`. */
static void call(int c, size_t bytes, char *a, char *b, int size)
{
    int n = (int)bytes, nf = (int)(bytes / sizeof(float));
    switch (c) {
    case 0: MPI_Allreduce(a, b, nf, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case 1: MPI_Bcast(a, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case 2: MPI_Reduce(a, b, nf, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case 3: MPI_Allgather(a, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD); break;
    case 4: MPI_Reduce_scatter_block(a, b, nf, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case 5: MPI_Alltoall(a, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD); break;
    case 6: MPI_Gather(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case 7: MPI_Scatter(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    default: MPI_Barrier(MPI_COMM_WORLD); break;
    }
    (void)size;
}

/* Bytes one call moves through a rank's memory, roughly: sets the count. */
static double traffic(int c, size_t bytes, int size)
{
    switch (c) {
    case 3: case 4: case 5: case 6: case 7: return (double)bytes * size;
    case 8: return 0;
    default: return (double)bytes;
    }
}

int main(int argc, char **argv)
{
    const char *list = "allreduce,bcast,reduce,allgather,reduce_scatter,alltoall,gather,scatter,"
                       "barrier";
    size_t lo = 8, hi = 64u << 20, bytes;
    double seconds = 0.05;
    int rank, size, i, c;
    char *a, *b;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c") && i + 1 < argc)
            list = argv[++i];
        else if (!strcmp(argv[i], "-b") && i + 1 < argc)
            lo = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc)
            hi = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else {
            if (rank == 0)
                fprintf(stderr, "usage: mpi_collbench [-c colls] [-b bytes] [-e bytes] [-t s]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (lo < 8)
        lo = 8;
    a = malloc(hi * (size_t)size);
    b = malloc(hi * (size_t)size);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "mpi_collbench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* touch every page, and floats that stay finite when summed */
    for (bytes = 0; bytes + sizeof(float) <= hi * (size_t)size; bytes += sizeof(float)) {
        float f = 1.0f;
        memcpy(a + bytes, &f, sizeof(f));
        memcpy(b + bytes, &f, sizeof(f));
    }
    if (rank == 0)
        printf("# coll ranks bytes iterations us_per_call\n");
    for (c = 0; c < NCOLLS; c++) {
        size_t len = strlen(all_colls[c]);
        const char *p = strstr(list, all_colls[c]);
        /* a whole word of the list */
        while (p != NULL && ((p != list && p[-1] != ',') || (p[len] != '\0' && p[len] != ',')))
            p = strstr(p + 1, all_colls[c]);
        if (p == NULL)
            continue;
        for (bytes = c == 8 ? 0 : lo; bytes <= hi; bytes = bytes ? bytes * 2 : hi + 1) {
            double t = traffic(c, bytes, size) / 2e9, t0, t1, mine, slowest = 0;
            int iters = t > 0 ? (int)(seconds / t) : 1000, k;
            if (iters > 1000)
                iters = 1000;
            if (iters < 5)
                iters = 5;
            for (k = 0; k < 3; k++) /* warm up: connections, caches, schedules */
                call(c, bytes, a, b, size);
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (k = 0; k < iters; k++)
                call(c, bytes, a, b, size);
            t1 = MPI_Wtime();
            mine = (t1 - t0) / iters * 1e6;
            MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                printf("%s %d %zu %d %.3f\n", all_colls[c], size, bytes, iters, slowest);
                fflush(stdout);
            }
            if (c == 8)
                break;
        }
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
