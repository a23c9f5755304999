/* perf_memcpy.c - xcoll-perf --memcpy: the bandwidth of a plain memcpy,
 * one rank alone and then every rank at once, the ceiling a collective
 * within one node is measured against. */
#include <string.h>

#include "perf.h"

static double time_memcpy(size_t bytes, int iters, int warmup)
{
    double t0 = 0;
    for (int it = -warmup; it < iters; it++) {
        if (it == 0)
            t0 = MPI_Wtime();
        memcpy(rbuf, sbuf, bytes);
        /* keep the copy from being optimised away or merged */
        __asm__ __volatile__("" ::: "memory");
    }
    return (MPI_Wtime() - t0) / iters;
}

int run_memcpy(const opts_t *o, const size_t *sizes, size_t nsizes)
{
    memset(sbuf, 1, o->max_bytes);
    memset(rbuf, 2, o->max_bytes);
    if (rank == 0) {
        if (o->csv)
            printf("size,alone_time_us,alone_GBps,together_time_us,together_GBps_per_rank,"
                   "together_GBps_total\n");
        else if (o->json)
            printf("{\"tool\": \"xcoll-perf\", \"mode\": \"memcpy\", \"nranks\": %d, \"rows\": [\n",
                   nranks);
        else
            printf("# memcpy bandwidth: bytes copied / time; %d iterations after %d warm-up\n"
                   "# alone: rank 0 while the other ranks wait; together: all %d ranks at once "
                   "(mean per rank, and the sum)\n#\n"
                   "# %10s %10s %8s %10s %8s %8s\n# %10s %10s %8s %10s %8s %8s\n",
                   o->iters, o->warmup, nranks, "size", "alone", "GB/s", "together", "GB/s",
                   "total", "(B)", "(us)", "", "(us)", "/rank", "GB/s");
    }
    for (size_t i = 0; i < nsizes; i++) {
        size_t bytes = sizes[i];
        double alone = 0, t, sum = 0;
        if (bytes == 0)
            continue;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            alone = time_memcpy(bytes, o->iters, o->warmup);
        MPI_Barrier(MPI_COMM_WORLD);
        t = time_memcpy(bytes, o->iters, o->warmup);
        MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank != 0)
            continue;
        double mean = sum / nranks, bw_alone = (double)bytes / alone / 1e9,
               bw_rank = (double)bytes / mean / 1e9;
        if (o->csv)
            printf("%zu,%.3f,%.4f,%.3f,%.4f,%.4f\n", bytes, alone * 1e6, bw_alone, mean * 1e6,
                   bw_rank, bw_rank * nranks);
        else if (o->json)
            printf("  {\"size\": %zu, \"alone_time_us\": %.3f, \"alone_GBps\": %.4f, "
                   "\"together_time_us\": %.3f, \"together_GBps_per_rank\": %.4f, "
                   "\"together_GBps_total\": %.4f}%s\n",
                   bytes, alone * 1e6, bw_alone, mean * 1e6, bw_rank, bw_rank * nranks,
                   i + 1 < nsizes ? "," : "");
        else
            printf("  %10zu %10.2f %8.3f %10.2f %8.3f %8.3f\n", bytes, alone * 1e6, bw_alone,
                   mean * 1e6, bw_rank, bw_rank * nranks);
        fflush(stdout);
    }
    if (rank == 0 && o->json)
        printf(" ]}\n");
    return 0;
}
