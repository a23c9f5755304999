/*
 * mpi_collbench - an MPI-only collective benchmark (it knows nothing of
 * xcoll): the program bench/dropin_sweep.sh runs under plain MPI and
 * under each drop-in, to see what a user who drops xcoll in gains or
 * loses.
 *
 *   mpi_collbench [-c allreduce,bcast,...] [-b 8] [-e 64M] [-t 0.05] [--pair]
 *
 * For each collective and each size from -b to -e (doubling) it times a
 * loop of calls between two barriers and prints one line
 *
 *   coll ranks bytes iterations microseconds-per-call
 *
 * where bytes is the message size as docs/TUNING.md defines it (one
 * rank's block for the block collectives), and the time is the slowest
 * rank's average over a loop, the fastest of three loops (two from 1 MiB).
 *
 * --pair, under the Open MPI component: two communicators in one job, one
 * created while the component takes new communicators and one after
 * MPI_T turned that off (its cvar coll_xcoll_new_comms), so xcoll serves
 * the first and Open MPI alone the second; their loops alternate, size by
 * size, and the line carries both times:
 *
 *   coll ranks bytes iterations us_plain_open_mpi us_drop_in ratio
 *
 * where the times are the fastest of seven loops each and ratio (plain /
 * drop-in) the median over the seven pairs of loops run moments apart:
 * measured side by side in the same processes, it is what a shared, noisy
 * machine can still tell. The iteration
 * count is fixed from the size (about -t seconds of memory traffic at
 * 2 GB/s, 3 to 1000), the same on every rank. Reductions sum MPI_FLOAT;
 * the others move MPI_BYTE.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const all_colls[] = {"allreduce", "bcast",  "reduce",         "allgather",
                                        "reduce_scatter", "alltoall", "gather", "scatter",
                                        "barrier"};
#define NCOLLS ((int)(sizeof(all_colls) / sizeof(all_colls[0])))
#define MAX_SAMPLES 7

static double fastest(const double *v, int n)
{
    double m = v[0];
    int i;
    for (i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the median of n values (sorts them) */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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

/* One call of collective c with a message of `bytes` on comm. */
static void call(int c, size_t bytes, char *a, char *b, MPI_Comm comm)
{
    int n = (int)bytes, nf = (int)(bytes / sizeof(float));
    switch (c) {
    case 0: MPI_Allreduce(a, b, nf, MPI_FLOAT, MPI_SUM, comm); break;
    case 1: MPI_Bcast(a, n, MPI_BYTE, 0, comm); break;
    case 2: MPI_Reduce(a, b, nf, MPI_FLOAT, MPI_SUM, 0, comm); break;
    case 3: MPI_Allgather(a, n, MPI_BYTE, b, n, MPI_BYTE, comm); break;
    case 4: MPI_Reduce_scatter_block(a, b, nf, MPI_FLOAT, MPI_SUM, comm); break;
    case 5: MPI_Alltoall(a, n, MPI_BYTE, b, n, MPI_BYTE, comm); break;
    case 6: MPI_Gather(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, comm); break;
    case 7: MPI_Scatter(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, comm); break;
    default: MPI_Barrier(comm); break;
    }
}

/* The slowest rank's microseconds per call over one loop of iters calls. */
static double loop(int c, size_t bytes, char *a, char *b, MPI_Comm comm, int iters)
{
    double t0, mine, slowest = 0;
    int k;
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    for (k = 0; k < iters; k++)
        call(c, bytes, a, b, comm);
    mine = (MPI_Wtime() - t0) / iters * 1e6;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return slowest;
}

/* The two communicators of --pair: *xc made while the component takes new
 * communicators, *plain after MPI_T told it not to. 0, or -1 when there is
 * no such control variable (no component). */
static int pair_comms(MPI_Comm *xc, MPI_Comm *plain)
{
    int provided, idx, count, on = 1, off = 0;
    MPI_T_cvar_handle h;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS ||
        MPI_T_cvar_get_index("coll_xcoll_new_comms", &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS)
        return -1;
    MPI_T_cvar_write(h, &on);
    MPI_Comm_dup(MPI_COMM_WORLD, xc);
    if (MPI_T_cvar_write(h, &off) != MPI_SUCCESS)
        return -1;
    MPI_Comm_dup(MPI_COMM_WORLD, plain);
    MPI_T_cvar_write(h, &on);
    MPI_T_cvar_handle_free(&h);
    MPI_T_finalize();
    return 0;
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
    int rank, size, i, c, pair = 0;
    char *a, *b;
    MPI_Comm xc = MPI_COMM_NULL, plain = MPI_COMM_NULL;

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
        else if (!strcmp(argv[i], "--pair"))
            pair = 1;
        else {
            if (rank == 0)
                fprintf(stderr,
                        "usage: mpi_collbench [-c colls] [-b bytes] [-e bytes] [-t s] [--pair]\n");
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
    if (pair && pair_comms(&xc, &plain) != 0) {
        if (rank == 0)
            fprintf(stderr, "mpi_collbench: --pair needs the xcoll Open MPI component "
                            "(no MPI_T control variable coll_xcoll_new_comms)\n");
        MPI_Finalize();
        return 2;
    }
    if (rank == 0)
        printf(pair ? "# coll ranks bytes iterations us_plain_open_mpi us_drop_in ratio\n"
                    : "# coll ranks bytes iterations us_per_call\n");
    for (c = 0; c < NCOLLS; c++) {
        size_t len = strlen(all_colls[c]);
        const char *p = strstr(list, all_colls[c]);
        /* a whole word of the list */
        while (p != NULL && ((p != list && p[-1] != ',') || (p[len] != '\0' && p[len] != ',')))
            p = strstr(p + 1, all_colls[c]);
        if (p == NULL)
            continue;
        for (bytes = c == 8 ? 0 : lo; bytes <= hi; bytes = bytes ? bytes * 2 : hi + 1) {
            double t = traffic(c, bytes, size) / 2e9, tx[MAX_SAMPLES], tp[MAX_SAMPLES],
                   ratio[MAX_SAMPLES];
            /* large calls vary little and cost much: fewer loops of them */
            int iters = t > 0 ? (int)(seconds / t) : 1000, k, sample;
            int samples = bytes >= ((size_t)1 << 20) ? 2 : pair ? MAX_SAMPLES : 3;
            if (iters > 1000)
                iters = 1000;
            if (iters < 3)
                iters = 3;
            for (k = 0; k < 3; k++) { /* warm up: connections, caches, schedules */
                call(c, bytes, a, b, pair ? xc : MPI_COMM_WORLD);
                if (pair)
                    call(c, bytes, a, b, plain);
            }
            /* with --pair the two loops alternate, and each pair of loops,
             * measured moments apart, gives one ratio */
            for (sample = 0; sample < samples; sample++) {
                /* which goes first alternates, so neither gains by it */
                if (pair && sample % 2)
                    tp[sample] = loop(c, bytes, a, b, plain, iters);
                tx[sample] = loop(c, bytes, a, b, pair ? xc : MPI_COMM_WORLD, iters);
                if (pair && !(sample % 2))
                    tp[sample] = loop(c, bytes, a, b, plain, iters);
                if (!pair)
                    tp[sample] = 0;
                ratio[sample] = pair && tx[sample] > 0 ? tp[sample] / tx[sample] : 0;
            }
            if (rank == 0) {
                /* the fastest loop: another process taking a core only adds time */
                if (pair)
                    printf("%s %d %zu %d %.3f %.3f %.3f\n", all_colls[c], size, bytes, iters,
                           fastest(tp, samples), fastest(tx, samples), median(ratio, samples));
                else
                    printf("%s %d %zu %d %.3f\n", all_colls[c], size, bytes, iters,
                           fastest(tx, samples));
                fflush(stdout);
            }
            if (c == 8)
                break;
        }
    }
    if (pair) {
        MPI_Comm_free(&xc);
        MPI_Comm_free(&plain);
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
