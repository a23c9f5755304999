/* xcoll-bench: AllReduce through xcoll and through MPI_Allreduce, side by
 * side, in the columns of nccl-tests.
 *
 *   mpirun -np 4 xcoll-bench [-b 4] [-e 64M] [-f 4] [-n 20] [-w 5] [-d float32] [-o sum]
 *
 * For each size both libraries run in the same job, alternating iteration
 * by iteration so that neither gets a quieter machine. A time is the
 * slowest rank's time for one call (a collective is done when its last
 * rank is); the table shows the median over the iterations.
 *   algbw = bytes / time
 *   busbw = algbw * 2(n-1)/n, the bytes each rank's link really carries in
 *           an allreduce, comparable across rank counts
 *   ratio = MPI time / xcoll time (above 1: xcoll is faster)
 * #wrong counts result elements that differ from the exact answer (inputs
 * are small integers, so every sum is exact in any order). The program
 * exits non-zero if any result was wrong or any call failed. */
#include <mpi.h>
#include "xcoll.h"
#include "bench_util.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t min_bytes, max_bytes;
    double factor;
    int iters, warmup, check;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
} options_t;

static int rank, size;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: xcoll-bench [options]\n"
            "  -b SIZE   smallest message in bytes (K, M, G suffixes; default 4)\n"
            "  -e SIZE   largest message in bytes (default 64M)\n"
            "  -f F      multiply the size by F each step (default 4; -f 2 for finer steps)\n"
            "  -n N      timed iterations per size (default 20)\n"
            "  -w N      warm-up iterations per size (default 5)\n"
            "  -c 0|1    check results (default 1)\n"
            "  -d TYPE   int8 uint8 int32 uint32 int64 uint64 float32 float64 (default float32)\n"
            "  -o OP     sum prod min max (default sum)\n"
            "  -h        this help\n"
            "A call that makes no progress for 120 s (or XCOLL_TIMEOUT) fails the run.\n");
}




/* Small integers: exact in every type, in any order, for up to ~40 ranks
 * even in int8 (sum), and products stay 1. */
static int64_t input(xcoll_op_t op, int r, size_t i)
{
    switch (op) {
    case XCOLL_SUM: return (int64_t)((r + i) % 3);
    case XCOLL_PROD: return 1;
    default: return (int64_t)((r * 7 + i) % 11);
    }
}

static int64_t expected(xcoll_op_t op, size_t i)
{
    int64_t acc = input(op, 0, i);
    for (int r = 1; r < size; r++) {
        int64_t v = input(op, r, i);
        if (op == XCOLL_SUM)
            acc += v;
        else if (op == XCOLL_MIN)
            acc = v < acc ? v : acc;
        else if (op == XCOLL_MAX)
            acc = v > acc ? v : acc;
    }
    return acc;
}


static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds the slowest rank spent in one call. */
static double max_over_ranks(double t)
{
    double m = t;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static int parse_args(int argc, char **argv, options_t *o)
{
    o->min_bytes = 4;
    o->max_bytes = 64u << 20;
    o->factor = 4;
    o->iters = 20;
    o->warmup = 5;
    o->check = 1;
    o->dtype = XCOLL_FLOAT32;
    o->op = XCOLL_SUM;
    int c;
    while ((c = getopt(argc, argv, "b:e:f:n:w:c:d:o:h")) != -1) {
        switch (c) {
        case 'b': if (bench_parse_size(optarg, &o->min_bytes)) return -1; break;
        case 'e': if (bench_parse_size(optarg, &o->max_bytes)) return -1; break;
        case 'f': o->factor = atof(optarg); if (o->factor <= 1.0) return -1; break;
        case 'n': o->iters = atoi(optarg); if (o->iters < 1) return -1; break;
        case 'w': o->warmup = atoi(optarg); if (o->warmup < 0) return -1; break;
        case 'c': o->check = atoi(optarg) != 0; break;
        case 'd': {
            int found = 0;
            for (int d = 0; d < XCOLL_DTYPE_COUNT; d++)
                if (strcmp(optarg, xcoll_dtype_name((xcoll_dtype_t)d)) == 0 &&
                    bench_mpi_dtype((xcoll_dtype_t)d, 1) != MPI_DATATYPE_NULL) {
                    o->dtype = (xcoll_dtype_t)d;
                    found = 1;
                }
            if (!found) return -1;
            break;
        }
        case 'o': {
            int found = 0;
            /* the ops expected() knows: sum, prod, min, max */
            for (int p = XCOLL_SUM; p <= XCOLL_MAX; p++)
                if (strcmp(optarg, xcoll_op_name((xcoll_op_t)p)) == 0) {
                    o->op = (xcoll_op_t)p;
                    found = 1;
                }
            if (!found) return -1;
            break;
        }
        case 'h': return 1;
        default: return -1;
        }
    }
    if (optind != argc || o->min_bytes > o->max_bytes)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    options_t o;
    int pr = parse_args(argc, argv, &o);
    if (pr != 0) {
        if (rank == 0)
            usage(pr > 0 ? stdout : stderr);
        MPI_Finalize();
        return pr > 0 ? 0 : 2;
    }

    /* A benchmark that hangs tells nothing: unless XCOLL_TIMEOUT says
     * otherwise, a call that makes no progress for 120 s fails instead. */
    xcoll_config_t cfg;
    xcoll_config_init(&cfg);
    if (getenv("XCOLL_TIMEOUT") == NULL)
        cfg.timeout_s = 120;
    xcoll_comm_t comm;
    xcoll_status_t st = xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm);
    if (st != XCOLL_OK) {
        fprintf(stderr, "xcoll-bench r%d: xcoll_comm_create_mpi: %s\n", rank, xcoll_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    size_t es = xcoll_dtype_size(o.dtype);
    size_t max_count = o.max_bytes / es;
    void *send = malloc(max_count * es + 1), *recv = malloc(max_count * es + 1);
    void *exp = malloc(max_count * es + 1), *mrecv = malloc(max_count * es + 1);
    double *tx = malloc(sizeof(double) * (size_t)o.iters);
    double *tm = malloc(sizeof(double) * (size_t)o.iters);
    if (!send || !recv || !exp || !mrecv || !tx || !tm) {
        fprintf(stderr, "xcoll-bench r%d: out of memory for %zu bytes\n", rank, o.max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < max_count; i++) {
        bench_store(o.dtype, send, i, input(o.op, rank, i));
        bench_store(o.dtype, exp, i, expected(o.op, i));
    }

    double bus_factor = size > 1 ? 2.0 * (size - 1) / size : 0.0;
    long total_wrong = 0;
    int failed_calls = 0;
    double busbw_sum = 0;
    int rows = 0;

    if (rank == 0) {
        printf("# xcoll-bench: allreduce, %d ranks, xcoll %s, %d iterations (median), %d warm-up\n",
               size, xcoll_version(), o.iters, o.warmup);
        printf("# time: slowest rank per call; busbw = algbw * 2(n-1)/n; ratio = MPI time / "
               "xcoll time\n#\n");
        printf("# %12s %12s %8s %6s | %10s %8s %8s %7s | %10s %8s %8s | %6s\n", "", "", "", "",
               "xcoll", "", "", "", "MPI", "", "", "");
        printf("# %12s %12s %8s %6s | %10s %8s %8s %7s | %10s %8s %8s | %6s\n", "size(B)",
               "count", "type", "redop", "time(us)", "algbw", "busbw", "#wrong", "time(us)",
               "algbw", "busbw", "ratio");
        printf("# %12s %12s %8s %6s | %10s %8s %8s %7s | %10s %8s %8s | %6s\n", "", "", "", "",
               "", "(GB/s)", "(GB/s)", "", "", "(GB/s)", "(GB/s)", "");
        fflush(stdout);
    }

    for (double b = (double)o.min_bytes; b <= (double)o.max_bytes; b *= o.factor) {
        size_t count = (size_t)b / es, bytes = count * es;
        if (count == 0)
            continue;
        long wrong = 0;
        for (int it = -o.warmup; it < o.iters; it++) {
            if (o.check)
                memset(recv, 0xee, bytes);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            st = xcoll_allreduce(send, recv, count, o.dtype, o.op, comm, NULL);
            double t = MPI_Wtime() - t0;
            if (st != XCOLL_OK) {
                if (failed_calls++ == 0)
                    fprintf(stderr, "xcoll-bench r%d: xcoll_allreduce(%zu): %s\n", rank, count,
                            xcoll_strerror(st));
            }
            t = max_over_ranks(t);
            if (it >= 0)
                tx[it] = t;
            if (o.check && it >= 0) {
                for (size_t i = 0; i < bytes; i += es)
                    if (memcmp((char *)recv + i, (char *)exp + i, es) != 0)
                        wrong++;
            }

            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            MPI_Allreduce(send, mrecv, (int)count, bench_mpi_dtype(o.dtype, 1),
                          bench_mpi_op(o.op),
                          MPI_COMM_WORLD);
            t = max_over_ranks(MPI_Wtime() - t0);
            if (it >= 0)
                tm[it] = t;
        }
        long wrong_all = 0;
        MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        total_wrong += wrong_all;
        /* The maxima are the same on every rank; rank 0 prints. */
        double x = median(tx, o.iters), m = median(tm, o.iters);
        double xalg = (double)bytes / x / 1e9, malg = (double)bytes / m / 1e9;
        busbw_sum += xalg * bus_factor;
        rows++;
        if (rank == 0) {
            printf("  %12zu %12zu %8s %6s | %10.1f %8.3f %8.3f %7ld | %10.1f %8.3f %8.3f | %6.2f\n",
                   bytes, count, xcoll_dtype_name(o.dtype), xcoll_op_name(o.op), x * 1e6, xalg,
                   xalg * bus_factor, wrong_all, m * 1e6, malg, malg * bus_factor, m / x);
            fflush(stdout);
        }
        if (b * o.factor <= b)   /* factor rounding would loop forever */
            break;
    }

    int failed_all = 0;
    MPI_Allreduce(&failed_calls, &failed_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# xcoll average bus bandwidth: %.3f GB/s\n", rows ? busbw_sum / rows : 0.0);
        printf("# wrong results: %ld, failed calls: %d\n", total_wrong, failed_all);
        fflush(stdout);
    }
    xcoll_comm_destroy(comm);
    free(send);
    free(recv);
    free(exp);
    free(mrecv);
    free(tx);
    free(tm);
    long verdict = total_wrong + failed_all;
    MPI_Bcast(&verdict, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return verdict == 0 ? 0 : 1;
}
