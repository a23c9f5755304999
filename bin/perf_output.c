/* perf_output.c - what xcoll-perf prints: the nccl-tests table, CSV or
 * JSON, the summary, the SVG plot (perf_plot.c draws it) and the progress
 * line on stderr. Rows are kept as they come, since JSON and the plot
 * need them all at the end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"
#include "perf_plot.h"

static row_t *rows;
static size_t nrows, rows_cap;

static int add_row(const row_t *r)
{
    if (nrows == rows_cap) {
        size_t cap = rows_cap ? 2 * rows_cap : 64;
        row_t *p = realloc(rows, cap * sizeof(*p));
        if (p == NULL)
            return -1;
        rows = p;
        rows_cap = cap;
    }
    rows[nrows++] = *r;
    return 0;
}

static const char *time_mode_name(int a)
{
    static const char *const names[] = {"rank 0's time", "mean over ranks", "min over ranks",
                                        "max over ranks",
                                        "the slowest rank's, median over iterations"};
    return names[a];
}

static char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
char mem_desc[192] = "host memory";
static double start_time;

void output_init(void)
{
    int len = 0;
    start_time = MPI_Wtime();
    MPI_Get_library_version(mpi_version, &len);
    /* first line, up to the package details */
    mpi_version[strcspn(mpi_version, ",\n")] = '\0';
}

void output_fini(void)
{
    free(rows);
}

void print_table_header(const opts_t *o, coll_t c)
{
    printf("#\n# %s: %d ranks, %s, xcoll %s%s%s, %d iterations (%d calls each) after %d "
           "warm-up; time = %s\n",
           colls[c].name, nranks, mem_desc, xcoll_version(), o->vs_mpi ? " vs " : "",
           o->vs_mpi ? mpi_version : "", o->iters, o->agg, o->warmup,
           time_mode_name(o->average));
    if (o->budget > 0)
        printf("# --budget %zu: fewer iterations (at least 2) where iterations x size would "
               "exceed it\n",
               o->budget);
    if (o->fence)
        printf("# --fence: an untimed xcoll_barrier follows every xcoll iteration\n");
    printf("# busbw factor %s; slowest = rank:its time (us)%s\n#\n",
           c == C_ALLREDUCE ? "2(n-1)/n"
           : (c == C_BCAST || c == C_REDUCE || c == C_SENDRECV) ? "1" : "(n-1)/n",
           o->vs_mpi ? "; ratio = MPI time / xcoll time (> 1: xcoll faster)" : "");
    printf("# %10s %10s %8s %6s %4s  %-48s", "", "", "", "", "", "  out-of-place");
    if (o->inplace)
        printf("  %-48s", "  in-place");
    if (o->vs_mpi)
        printf(" | %-26s", "  MPI, out-of-place");
    printf("\n# %10s %10s %8s %6s %4s  %9s %7s %7s %6s %15s", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "slowest");
    if (o->inplace)
        printf("  %9s %7s %7s %6s %15s", "time", "algbw", "busbw", "#wrong", "slowest");
    if (o->vs_mpi)
        printf(" | %9s %7s %6s", "time", "busbw", "ratio");
    printf("\n# %10s %10s %8s %6s %4s  %9s %7s %7s %6s %15s", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "");
    if (o->inplace)
        printf("  %9s %7s %7s %6s %15s", "(us)", "(GB/s)", "(GB/s)", "", "");
    if (o->vs_mpi)
        printf(" | %9s %7s %6s", "(us)", "(GB/s)", "");
    printf("\n");
    fflush(stdout);
}

static void print_block(const block_t *b)
{
    if (!b->valid) {
        printf("  %9s %7s %7s %6s %15s", "-", "-", "-", "-", "-");
        return;
    }
    char slow[32];
    snprintf(slow, sizeof(slow), "%d:%.1f", b->slow_rank, b->slow_us);
    printf("  %9.2f %7.3f %7.3f %6ld %15s", b->time_us, b->algbw, b->busbw, b->wrong, slow);
}

static void print_table_row(const opts_t *o, const row_t *r)
{
    printf("  %10zu %10zu %8s %6s %4d", r->bytes, r->count, xcoll_dtype_name(r->dtype),
           colls[r->coll].reduces ? xcoll_op_name(r->op) : "none", r->root);
    print_block(&r->oop);
    if (o->inplace)
        print_block(&r->ip);
    if (o->vs_mpi) {
        if (r->mpi.valid)
            printf(" | %9.2f %7.3f %6.2f", r->mpi.time_us, r->mpi.busbw, r->ratio);
        else
            printf(" | %9s %7s %6s", "-", "-", "-");
    }
    printf("\n");
    fflush(stdout);
}

void print_csv_header(void)
{
    printf("coll,nranks,size,count,type,redop,root");
    static const char *const blocks[] = {"oop", "ip"};
    for (int b = 0; b < 2; b++)
        printf(",%s_time_us,%s_algbw,%s_busbw,%s_wrong,%s_slowest_rank,%s_slowest_us", blocks[b],
               blocks[b], blocks[b], blocks[b], blocks[b], blocks[b]);
    printf(",mpi_time_us,mpi_algbw,mpi_busbw,ratio\n");
    fflush(stdout);
}

static void csv_block(const block_t *b)
{
    if (b->valid)
        printf(",%.3f,%.4f,%.4f,%ld,%d,%.3f", b->time_us, b->algbw, b->busbw, b->wrong,
               b->slow_rank, b->slow_us);
    else
        printf(",,,,,,");
}

static void print_csv_row(const row_t *r)
{
    printf("%s,%d,%zu,%zu,%s,%s,%d", colls[r->coll].name, nranks, r->bytes, r->count,
           xcoll_dtype_name(r->dtype), colls[r->coll].reduces ? xcoll_op_name(r->op) : "none",
           r->root);
    csv_block(&r->oop);
    csv_block(&r->ip);
    if (r->mpi.valid)
        printf(",%.3f,%.4f,%.4f,%.4f\n", r->mpi.time_us, r->mpi.algbw, r->mpi.busbw, r->ratio);
    else
        printf(",,,,\n");
    fflush(stdout);
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", (unsigned char)*s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void json_block(const char *name, const block_t *b, int with_wrong)
{
    printf(", \"%s\": ", name);
    if (!b->valid) {
        printf("null");
        return;
    }
    printf("{\"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, \"slowest_rank\": %d, "
           "\"slowest_us\": %.3f",
           b->time_us, b->algbw, b->busbw, b->slow_rank, b->slow_us);
    if (with_wrong)
        printf(", \"wrong\": %ld", b->wrong);
    printf("}");
}

static void print_json(const opts_t *o, long oob, double avg_busbw, double mpi_avg_busbw,
                       int failed)
{
    printf("{\"tool\": \"xcoll-perf\", \"xcoll_version\": ");
    json_string(xcoll_version());
    printf(", \"mpi_version\": ");
    json_string(mpi_version);
    printf(", \"fence\": %s", o->fence ? "true" : "false");
    printf(", \"mem\": \"%s\", \"stream\": %s", o->mem_cuda ? "cuda" : "host",
           o->use_stream ? "true" : "false");
    printf(", \"nranks\": %d, \"iters\": %d, \"warmup\": %d, \"agg\": %d, \"average\": %d,\n"
           " \"rows\": [\n",
           nranks, o->iters, o->warmup, o->agg, o->average);
    for (size_t i = 0; i < nrows; i++) {
        const row_t *r = &rows[i];
        printf("  {\"coll\": \"%s\", \"size\": %zu, \"count\": %zu, \"type\": \"%s\", "
               "\"redop\": \"%s\", \"root\": %d",
               colls[r->coll].name, r->bytes, r->count, xcoll_dtype_name(r->dtype),
               colls[r->coll].reduces ? xcoll_op_name(r->op) : "none", r->root);
        json_block("out_of_place", &r->oop, 1);
        json_block("in_place", &r->ip, 1);
        json_block("mpi", &r->mpi, 0);
        if (r->mpi.valid)
            printf(", \"ratio\": %.4f", r->ratio);
        printf("}%s\n", i + 1 < nrows ? "," : "");
    }
    printf(" ],\n \"out_of_bounds\": %ld, \"failed_calls\": %d, \"avg_busbw\": %.4f", oob,
           failed, avg_busbw);
    if (o->vs_mpi)
        printf(", \"mpi_avg_busbw\": %.4f", mpi_avg_busbw);
    printf("}\n");
}

static void write_plot(const opts_t *o)
{
    perf_series_t series[2 * C_COUNT];
    double *xs[2 * C_COUNT], *ys[2 * C_COUNT];
    size_t ns = 0;
    int color = 0;
    char labels[2 * C_COUNT][64];
    for (int c = 0; c < C_COUNT; c++) {
        if (!o->coll_on[c])
            continue;
        for (int lib = 0; lib < (o->vs_mpi ? 2 : 1); lib++) {
            size_t np = 0;
            xs[ns] = malloc(sizeof(double) * (nrows + 1));
            ys[ns] = malloc(sizeof(double) * (nrows + 1));
            if (xs[ns] == NULL || ys[ns] == NULL) {
                free(xs[ns]);
                free(ys[ns]);
                continue;
            }
            for (size_t i = 0; i < nrows; i++) {
                const row_t *r = &rows[i];
                const block_t *b = lib ? &r->mpi : &r->oop;
                if (r->coll != (coll_t)c || !r->first_combo || !b->valid)
                    continue;
                xs[ns][np] = (double)r->bytes;
                ys[ns][np] = b->busbw;
                np++;
            }
            snprintf(labels[ns], sizeof(labels[ns]), "%s, %s", colls[c].name,
                     lib ? "MPI" : "xcoll");
            series[ns] = (perf_series_t){labels[ns], color, lib, np, xs[ns], ys[ns]};
            ns++;
        }
        color++;
    }
    char title[160];
    snprintf(title, sizeof(title), "xcoll-perf: bus bandwidth, %d ranks, %s, out of place",
             nranks, xcoll_dtype_name((xcoll_dtype_t)o->dtypes[0]));
    if (perf_plot_svg(o->plot_path, title, "message size (bytes, log scale)", "busbw (GB/s)",
                      series, ns) != 0)
        fprintf(stderr, "xcoll-perf: cannot write %s: %s\n", o->plot_path, strerror(errno));
    for (size_t s = 0; s < ns; s++) {
        free(xs[s]);
        free(ys[s]);
    }
}


void output_row(const opts_t *o, const row_t *r)
{
    if (add_row(r) != 0) {
        fprintf(stderr, "xcoll-perf: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    progress_done(o);
    if (o->csv)
        print_csv_row(r);
    else if (!o->json)
        print_table_row(o, r);
}

void print_summary(const opts_t *o, const totals_t *tot)
{
    double avg = tot->busbw_n ? tot->busbw_sum / tot->busbw_n : 0;
    double mavg = tot->mpi_busbw_n ? tot->mpi_busbw_sum / tot->mpi_busbw_n : 0;
    if (o->json) {
        print_json(o, tot->oob, avg, mavg, tot->failed);
    } else if (!o->csv) {
        printf("# Out of bounds values : %ld %s\n", tot->oob, tot->oob ? "FAILED" : "OK");
        if (tot->failed)
            printf("# Failed calls         : %d FAILED\n", tot->failed);
        printf("# Avg bus bandwidth    : %.4f GB/s\n", avg);
        if (o->vs_mpi)
            printf("# MPI avg bus bandwidth: %.4f GB/s\n", mavg);
        printf("#\n");
    }
    if (tot->mpi_wrong)
        fprintf(stderr, "xcoll-perf: warning: MPI's own results failed the check in %ld "
                        "elements: the check itself may be wrong\n", tot->mpi_wrong);
    if (o->plot_path != NULL)
        write_plot(o);
    fflush(stdout);
}

void progress(const opts_t *o, const char *what, size_t bytes, size_t done, size_t total)
{
    if (!o->progress || rank != 0)
        return;
    int tty = isatty(STDERR_FILENO);
    fprintf(stderr, "%sxcoll-perf: %s %zu B, row %zu of %zu, %.0f s%s", tty ? "\r\033[K" : "",
            what, bytes, done, total, MPI_Wtime() - start_time, tty ? "" : "\n");
    fflush(stderr);
}

void progress_done(const opts_t *o)
{
    if (o->progress && rank == 0 && isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
}
