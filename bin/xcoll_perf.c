/* xcoll-perf: every xcoll collective in the columns of nccl-tests, with
 * MPI's own collective timed in the same job for comparison.
 *
 *   mpirun -np 4 xcoll-perf -C allreduce -b 8 -e 64M -f 2 --vs-mpi
 *
 * Timing. An iteration is a barrier, then --agg back-to-back calls timed
 * on every rank; a rank's time is the mean over the timed iterations.
 * With --vs-mpi an xcoll iteration and an MPI iteration alternate, so
 * neither library gets a quieter machine. The row shows the rank times
 * combined by -a (nccl-tests' meaning: 0 rank 0, 1 mean, 2 min, 3 max)
 * and names the slowest rank, so a straggler can be found.
 *   algbw = size / time
 *   busbw = algbw * factor, the bytes a rank's link carries relative to an
 *           ideal point-to-point copy (nccl-tests' factors: allreduce
 *           2(n-1)/n; allgather, reduce_scatter, alltoall, gather, scatter
 *           (n-1)/n; bcast, reduce, sendrecv 1)
 *   ratio = MPI time / xcoll time, out of place (above 1: xcoll is faster)
 * size is the largest buffer of the call (nccl-tests' convention): the
 * whole gathered buffer for allgather, the whole input for reduce_scatter,
 * one rank's send buffer for alltoall; count is the count argument.
 *
 * Checking. After timing, one more call of each kind runs on fresh inputs
 * whose values are small integers, so every sum is exact in any order and
 * in every type (float16 and bfloat16 included); elements that differ
 * from the exact answer, and bytes written past the end of the result,
 * count as wrong, summed over ranks. Any wrong element or failed call
 * makes the exit status 1; a bad option 2.
 *
 * Device memory (-m cuda). Each rank takes device (its rank on the node)
 * modulo (the node's devices) and cudaMallocs both buffers; inputs are
 * written and results checked in host mirrors, copied across outside the
 * timed loop. --stream hands every call a stream of its own and
 * synchronises it before the clock stops, so a time includes the device
 * work still queued when the call returned. Without a device the job
 * says why and exits 2. */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <mpi.h>
#include "xcoll.h"
#include "bench_util.h"
#include "perf_plot.h"
#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- collectives ------------------------------------------------------------- */

typedef enum {
    C_ALLREDUCE,
    C_ALLGATHER,
    C_REDUCE_SCATTER,
    C_BCAST,
    C_REDUCE,
    C_ALLTOALL,
    C_GATHER,
    C_SCATTER,
    C_ALLGATHERV,
    C_ALLTOALLV,
    C_SENDRECV,
    C_BARRIER,
    C_COUNT
} coll_t;

typedef struct {
    const char *name;
    int reduces;     /* takes an op */
    int rooted;      /* takes a root */
    int blocked;     /* size holds one block per rank: count = size / (type * ranks) */
    int has_inplace; /* has an in-place form distinct from out of place */
    int sizeless;    /* moves no data: one row, size 0, whatever the sizes and types */
} coll_info_t;

static const coll_info_t colls[C_COUNT] = {
    [C_ALLREDUCE] = {"allreduce", 1, 0, 0, 1},
    [C_ALLGATHER] = {"allgather", 0, 0, 1, 1},
    [C_REDUCE_SCATTER] = {"reduce_scatter", 1, 0, 1, 1},
    [C_BCAST] = {"bcast", 0, 1, 0, 0},
    [C_REDUCE] = {"reduce", 1, 1, 0, 1},
    [C_ALLTOALL] = {"alltoall", 0, 0, 1, 1},
    [C_GATHER] = {"gather", 0, 1, 1, 1},
    [C_SCATTER] = {"scatter", 0, 1, 1, 1},
    [C_ALLGATHERV] = {"allgatherv", 0, 0, 1, 1},
    [C_ALLTOALLV] = {"alltoallv", 0, 0, 1, 1},
    [C_SENDRECV] = {"sendrecv", 0, 0, 0, 0},
    [C_BARRIER] = {"barrier", 0, 0, 0, 0, 1},
};

static double bus_factor(coll_t c, int n)
{
    switch (c) {
    case C_ALLREDUCE: return 2.0 * (n - 1) / n;
    case C_ALLGATHER:
    case C_REDUCE_SCATTER:
    case C_ALLTOALL:
    case C_GATHER:
    case C_SCATTER:
    case C_ALLGATHERV:
    case C_ALLTOALLV: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

/* --- options ------------------------------------------------------------------ */

typedef struct {
    size_t min_bytes, max_bytes, step_bytes;
    size_t budget; /* > 0: at most this many bytes of calls per size (fewer iterations) */
    double step_factor; /* > 1: multiply; otherwise add step_bytes */
    int iters, warmup, agg, check, average;
    int root; /* -1: every root in turn */
    int dtypes[XCOLL_DTYPE_COUNT], ndtypes;
    int ops[XCOLL_OP_COUNT], nops;
    int coll_on[C_COUNT];
    const char *algo, *plot_path;
    int vs_mpi, csv, json, progress, inplace, memcpy_mode, fence;
    int mem_cuda, use_stream;
} opts_t;

static int rank, nranks;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: mpirun -np N xcoll-perf [options]\n"
        "Times xcoll's collectives over a range of sizes, in nccl-tests' columns.\n"
        "  -C, --coll LIST        allreduce allgather reduce_scatter bcast reduce alltoall\n"
        "                         gather scatter sendrecv barrier, comma-separated, or\n"
        "                         all (barrier: one row, no data)\n"
        "                         (default allreduce)\n"
        "  -b, --minbytes SIZE    smallest size (K, M, G suffixes; default 8)\n"
        "  -e, --maxbytes SIZE    largest size (default 64M)\n"
        "  -f, --stepfactor F     multiply the size by F each step (default 2)\n"
        "  -i, --stepbytes SIZE   add SIZE each step instead (when -f is not given)\n"
        "  -n, --iters N          timed iterations per size (default 20)\n"
        "  -w, --warmup_iters N   untimed iterations first (default 5)\n"
        "      --agg N            calls per timed iteration, back to back (nccl-tests' -m;\n"
        "                         default 1)\n"
        "      --budget SIZE      fewer iterations for big sizes: at most SIZE bytes of timed\n"
        "                         calls per size, but never under 2 iterations (default off)\n"
        "  -c, --check 0|1        check results (default 1)\n"
        "  -d, --datatype TYPE    int8 uint8 int32 uint32 int64 uint64 float16 bfloat16\n"
        "                         float32 float64 (also half, float, double, int, uint),\n"
        "                         comma-separated, or all (default float32)\n"
        "  -o, --op OP            sum prod min max avg band bor bxor, comma-separated,\n"
        "                         or all (default sum)\n"
        "  -r, --root R           root of bcast, reduce, gather, scatter; -1 every rank in\n"
        "                         turn (default 0)\n"
        "  -a, --average 0..3     time of a row: 0 rank 0's, 1 mean over ranks, 2 min,\n"
        "                         3 max (default 1)\n"
        "  -m, --mem host|cuda    where buffers live: host memory, or device memory\n"
        "                         (cudaMalloc) on device (local rank mod devices)\n"
        "                         (default host)\n"
        "      --stream           with -m cuda: pass every call a created cudaStream_t and\n"
        "                         synchronise it before the clock stops (default: NULL\n"
        "                         stream, host order)\n"
        "      --algo NAME        force algorithm NAME (sets XCOLL_TUNE=<coll>:0-inf:NAME)\n"
        "      --vs-mpi           time MPI's collective too, alternating with xcoll\n"
        "      --fence            an untimed xcoll_barrier after each xcoll iteration; no\n"
        "                         longer needed: it worked around a hang when xcoll and\n"
        "                         MPI alternate, not seen without it since xcoll's large\n"
        "                         messages wait for their receivers (docs/PERFORMANCE.md);\n"
        "                         kept so old command lines still run\n"
        "      --no-inplace       skip the in-place block\n"
        "      --csv              comma-separated output instead of the table\n"
        "      --json             one JSON document instead of the table\n"
        "      --plot FILE.svg    busbw against size, xcoll and MPI, as an SVG chart\n"
        "      --progress         progress line on stderr (default: when it is a terminal)\n"
        "      --memcpy           measure memcpy bandwidth instead (one rank alone, then\n"
        "                         every rank at once)\n"
        "  -h, --help             this help\n"
        "Exit status: 0 all good, 1 a wrong result or a failed call, 2 bad usage.\n");
}

/* Sizes as xcoll-bench takes them, plus an optional trailing B ("4KB"). */
static int parse_size(const char *s, size_t *out)
{
    char buf[64];
    size_t n = strlen(s);
    if (n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n + 1);
    if (n > 0 && (buf[n - 1] == 'B' || buf[n - 1] == 'b'))
        buf[n - 1] = '\0';
    return bench_parse_size(buf, out);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int dtype_from_name(const char *s)
{
    static const struct { const char *alias; xcoll_dtype_t d; } aliases[] = {
        {"half", XCOLL_FLOAT16}, {"float", XCOLL_FLOAT32}, {"double", XCOLL_FLOAT64},
        {"int", XCOLL_INT32},    {"uint", XCOLL_UINT32},   {"bf16", XCOLL_BFLOAT16},
        {"char", XCOLL_INT8},
    };
    for (int d = 0; d < XCOLL_DTYPE_COUNT; d++)
        if (strcmp(s, xcoll_dtype_name((xcoll_dtype_t)d)) == 0)
            return d;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcmp(s, aliases[i].alias) == 0)
            return aliases[i].d;
    return -1;
}

static int is_float(xcoll_dtype_t d)
{
    return d == XCOLL_FLOAT16 || d == XCOLL_BFLOAT16 || d == XCOLL_FLOAT32 || d == XCOLL_FLOAT64;
}

static int is_bitwise(xcoll_op_t op)
{
    return op == XCOLL_BAND || op == XCOLL_BOR || op == XCOLL_BXOR;
}

/* Splits a comma-separated list and calls fn on each item; -1 if fn fails. */
static int each_item(const char *list, int (*fn)(const char *, void *), void *ctx)
{
    char buf[256];
    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save))
        if (fn(tok, ctx) != 0)
            return -1;
    return 0;
}

static int add_coll(const char *s, void *ctx)
{
    opts_t *o = ctx;
    if (strcmp(s, "all") == 0) {
        for (int c = 0; c < C_COUNT; c++)
            o->coll_on[c] = 1;
        return 0;
    }
    for (int c = 0; c < C_COUNT; c++)
        if (strcmp(s, colls[c].name) == 0 ||
            (c == C_REDUCE_SCATTER && strcmp(s, "reducescatter") == 0)) {
            o->coll_on[c] = 1;
            return 0;
        }
    return -1;
}

static int add_dtype(const char *s, void *ctx)
{
    opts_t *o = ctx;
    if (strcmp(s, "all") == 0) {
        o->ndtypes = 0;
        for (int d = 0; d < XCOLL_DTYPE_COUNT; d++)
            o->dtypes[o->ndtypes++] = d;
        return 0;
    }
    int d = dtype_from_name(s);
    if (d < 0 || o->ndtypes >= XCOLL_DTYPE_COUNT)
        return -1;
    o->dtypes[o->ndtypes++] = d;
    return 0;
}

static int add_op(const char *s, void *ctx)
{
    opts_t *o = ctx;
    if (strcmp(s, "all") == 0) {
        o->nops = 0;
        for (int p = 0; p < XCOLL_OP_COUNT; p++)
            o->ops[o->nops++] = p;
        return 0;
    }
    for (int p = 0; p < XCOLL_OP_COUNT; p++)
        if (strcmp(s, xcoll_op_name((xcoll_op_t)p)) == 0 && o->nops < XCOLL_OP_COUNT) {
            o->ops[o->nops++] = p;
            return 0;
        }
    return -1;
}

/* 0: run; 1: help printed; 2: bad usage (message printed by rank 0);
 * 3: a valid request this build cannot serve. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    enum { O_ALGO = 256, O_VS_MPI, O_CSV, O_JSON, O_PLOT, O_PROGRESS, O_NO_INPLACE, O_MEMCPY,
           O_AGG, O_BUDGET, O_FENCE, O_STREAM };
    static const struct option longopts[] = {
        {"coll", required_argument, NULL, 'C'},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"stepbytes", required_argument, NULL, 'i'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},
        {"datatype", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'},
        {"root", required_argument, NULL, 'r'},
        {"average", required_argument, NULL, 'a'},
        {"mem", required_argument, NULL, 'm'},
        {"algo", required_argument, NULL, O_ALGO},
        {"vs-mpi", no_argument, NULL, O_VS_MPI},
        {"csv", no_argument, NULL, O_CSV},
        {"json", no_argument, NULL, O_JSON},
        {"plot", required_argument, NULL, O_PLOT},
        {"progress", no_argument, NULL, O_PROGRESS},
        {"no-inplace", no_argument, NULL, O_NO_INPLACE},
        {"memcpy", no_argument, NULL, O_MEMCPY},
        {"agg", required_argument, NULL, O_AGG},
        {"budget", required_argument, NULL, O_BUDGET},
        {"fence", no_argument, NULL, O_FENCE},
        {"stream", no_argument, NULL, O_STREAM},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, have_factor = 0, have_step = 0;
    const char *bad = NULL;

    memset(o, 0, sizeof(*o));
    o->min_bytes = 8;
    o->max_bytes = 64u << 20;
    o->step_factor = 2;
    o->step_bytes = 1u << 20;
    o->iters = 20;
    o->warmup = 5;
    o->agg = 1;
    o->check = 1;
    o->average = 1;
    o->inplace = 1;
    o->progress = isatty(STDERR_FILENO);
    opterr = rank == 0; /* one complaint per job, not one per rank */
    while ((c = getopt_long(argc, argv, "C:b:e:f:i:n:w:c:d:o:r:a:m:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'C': if (each_item(optarg, add_coll, o)) bad = "-C"; break;
        case 'b': if (parse_size(optarg, &o->min_bytes)) bad = "-b"; break;
        case 'e': if (parse_size(optarg, &o->max_bytes)) bad = "-e"; break;
        case 'f':
            o->step_factor = strtod(optarg, NULL);
            have_factor = 1;
            if (!(o->step_factor > 1.0)) bad = "-f (must be > 1)";
            break;
        case 'i':
            if (parse_size(optarg, &o->step_bytes) || o->step_bytes == 0) bad = "-i";
            have_step = 1;
            break;
        case 'n': if (parse_int(optarg, 1, 1 << 24, &o->iters)) bad = "-n"; break;
        case 'w': if (parse_int(optarg, 0, 1 << 24, &o->warmup)) bad = "-w"; break;
        case 'c': if (parse_int(optarg, 0, 1, &o->check)) bad = "-c"; break;
        case 'd': if (each_item(optarg, add_dtype, o)) bad = "-d"; break;
        case 'o': if (each_item(optarg, add_op, o)) bad = "-o"; break;
        case 'r': if (parse_int(optarg, -1, INT_MAX, &o->root)) bad = "-r"; break;
        case 'a': if (parse_int(optarg, 0, 3, &o->average)) bad = "-a"; break;
        case 'm':
            if (strcmp(optarg, "cuda") == 0) o->mem_cuda = 1;
            else if (strcmp(optarg, "host") == 0) o->mem_cuda = 0;
            else bad = "-m";
            break;
        case O_ALGO: o->algo = optarg; break;
        case O_VS_MPI: o->vs_mpi = 1; break;
        case O_CSV: o->csv = 1; break;
        case O_JSON: o->json = 1; break;
        case O_PLOT: o->plot_path = optarg; break;
        case O_PROGRESS: o->progress = 1; break;
        case O_NO_INPLACE: o->inplace = 0; break;
        case O_MEMCPY: o->memcpy_mode = 1; break;
        case O_AGG: if (parse_int(optarg, 1, 1 << 20, &o->agg)) bad = "--agg"; break;
        case O_BUDGET: if (parse_size(optarg, &o->budget)) bad = "--budget"; break;
        case O_FENCE: o->fence = 1; break;
        case O_STREAM: o->use_stream = 1; break;
        case 'h': return 1;
        default: bad = "(unknown option)"; break;
        }
        if (bad != NULL)
            break;
    }
    if (bad == NULL && optind != argc)
        bad = "(unexpected argument)";
    if (bad == NULL && o->min_bytes > o->max_bytes)
        bad = "-b larger than -e";
    if (bad == NULL && o->csv && o->json)
        bad = "--csv with --json";
    if (bad == NULL && o->root >= nranks)
        bad = "-r (no such rank)";
    if (bad == NULL && o->use_stream && !o->mem_cuda)
        bad = "--stream without -m cuda";
    if (bad == NULL && o->memcpy_mode && o->mem_cuda)
        bad = "--memcpy with -m cuda (it measures host memcpy)";
    if (bad != NULL) {
        if (rank == 0) {
            fprintf(stderr, "xcoll-perf: bad option %s\n", bad);
            usage(stderr);
        }
        return 2;
    }
    if (have_step && !have_factor)
        o->step_factor = 1; /* additive steps */
    if (o->ndtypes == 0)
        o->dtypes[o->ndtypes++] = XCOLL_FLOAT32;
    if (o->nops == 0)
        o->ops[o->nops++] = XCOLL_SUM;
    int any = 0;
    for (int k = 0; k < C_COUNT; k++)
        any |= o->coll_on[k];
    if (!any)
        o->coll_on[C_ALLREDUCE] = 1;
#ifndef HAVE_CUDA
    if (o->mem_cuda) {
        /* saying so beats timing host memory under a cuda label */
        if (rank == 0)
            fprintf(stderr, "xcoll-perf: -m cuda: this build lacks CUDA (configure "
                            "--with-cuda); use -m host\n");
        return 3;
    }
#endif
    if (o->mem_cuda && o->vs_mpi) {
        /* MPI would be handed device pointers, which only a CUDA-aware MPI
         * reads; timing it on host copies instead would compare different
         * things under one label. */
        if (rank == 0)
            fprintf(stderr, "xcoll-perf: --vs-mpi with -m cuda: not supported (MPI would need "
                            "to be CUDA-aware, and Debian's Open MPI is not); drop --vs-mpi, "
                            "or use -m host\n");
        return 3;
    }
    return 0;
}

/* --- the MPI side ----------------------------------------------------------------- */



/* --- one call ------------------------------------------------------------------------ */

typedef struct {
    coll_t coll;
    int inplace;
    size_t count; /* the count argument: per block for blocked collectives */
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    int root;
    size_t es;
} call_t;

static xcoll_comm_t comm;
/* sbuf, rbuf: what the calls get (device memory with -m cuda); shost,
 * rhost: where inputs are written and results checked (the same buffers
 * with -m host, host mirrors with -m cuda). */
static char *sbuf, *rbuf, *shost, *rhost;
static void *xstream; /* every call's stream: NULL, or --stream's */

#define SENDRECV_TAG 7

/* The v-variants' blocks, uneven as real programs make them: for a count
 * of c per block, rank j's allgatherv block and the alltoallv block from
 * i to j hold about c * 2w / (P + 1) elements for weights w of 1..P (rank
 * j + 1, resp. (i + j) % P + 1), so the sizes range over ~2c/P..2c and
 * add up to at most P blocks of c; the alltoallv matrix is symmetric, as
 * in place needs. Packed in rank order. */
static size_t *v_sc, *v_sd, *v_rc, *v_rd; /* this rank's counts and displacements */
static int *v_isc, *v_isd, *v_irc, *v_ird; /* the same for MPI */

static size_t v_block(size_t c, int w)
{
    return c * 2 * (size_t)w / (size_t)(nranks + 1);
}

static void v_setup(const call_t *c)
{
    static size_t last_count = (size_t)-1;
    static coll_t last_coll = C_COUNT;
    size_t so = 0, ro = 0;
    if (c->count == last_count && c->coll == last_coll)
        return;
    last_count = c->count;
    last_coll = c->coll;
    for (int j = 0; j < nranks; j++) {
        int w = c->coll == C_ALLGATHERV ? j + 1 : (rank + j) % nranks + 1;
        v_sc[j] = c->coll == C_ALLGATHERV ? v_block(c->count, rank + 1) : v_block(c->count, w);
        v_rc[j] = v_block(c->count, w);
        v_sd[j] = so;
        v_rd[j] = ro;
        so += v_sc[j];
        ro += v_rc[j];
        v_isc[j] = (int)v_sc[j], v_isd[j] = (int)v_sd[j];
        v_irc[j] = (int)v_rc[j], v_ird[j] = (int)v_rd[j];
    }
}

static size_t v_total(const size_t *counts)
{
    size_t t = 0;
    for (int j = 0; j < nranks; j++)
        t += counts[j];
    return t;
}

static xcoll_status_t call_xcoll(const call_t *c)
{
    const void *snd = c->inplace ? XCOLL_IN_PLACE : sbuf;
    int is_root = rank == c->root;
    switch (c->coll) {
    case C_ALLREDUCE: return xcoll_allreduce(snd, rbuf, c->count, c->dtype, c->op, comm, xstream);
    case C_ALLGATHER: return xcoll_allgather(snd, rbuf, c->count, c->dtype, comm, xstream);
    case C_REDUCE_SCATTER:
        return xcoll_reduce_scatter(snd, rbuf, c->count, c->dtype, c->op, comm, xstream);
    case C_BCAST: return xcoll_bcast(rbuf, c->count, c->dtype, c->root, comm, xstream);
    case C_REDUCE:
        /* In place, NCCL style: every rank's input is in rbuf. */
        return xcoll_reduce(c->inplace ? (is_root ? XCOLL_IN_PLACE : rbuf) : sbuf, rbuf,
                            c->count, c->dtype, c->op, c->root, comm, xstream);
    case C_ALLTOALL: return xcoll_alltoall(snd, rbuf, c->count, c->dtype, comm, xstream);
    case C_GATHER:
        return xcoll_gather(c->inplace && is_root ? XCOLL_IN_PLACE : sbuf, rbuf, c->count,
                            c->dtype, c->root, comm, xstream);
    case C_SCATTER:
        return xcoll_scatter(sbuf, c->inplace && is_root ? (void *)XCOLL_IN_PLACE : rbuf,
                             c->count, c->dtype, c->root, comm, xstream);
    case C_SENDRECV: {
        xcoll_request_t rq = NULL, sq = NULL;
        xcoll_status_t st = xcoll_irecv(rbuf, c->count, c->dtype, (rank + nranks - 1) % nranks,
                                        SENDRECV_TAG, comm, xstream, &rq);
        if (st == XCOLL_OK)
            st = xcoll_isend(sbuf, c->count, c->dtype, (rank + 1) % nranks, SENDRECV_TAG, comm,
                             xstream, &sq);
        xcoll_status_t st2 = rq ? xcoll_wait(&rq) : XCOLL_OK;
        xcoll_status_t st3 = sq ? xcoll_wait(&sq) : XCOLL_OK;
        return st != XCOLL_OK ? st : st2 != XCOLL_OK ? st2 : st3;
    }
    case C_BARRIER: return xcoll_barrier(comm);
    case C_ALLGATHERV:
        v_setup(c);
        return xcoll_allgatherv(snd, v_rc[rank], rbuf, v_rc, v_rd, c->dtype, comm, xstream);
    case C_ALLTOALLV:
        v_setup(c);
        return xcoll_alltoallv(snd, v_sc, v_sd, rbuf, v_rc, v_rd, c->dtype, comm, xstream);
    default: return XCOLL_ERR_INVALID_ARG;
    }
}

/* 1 if MPI can run the same call. */
static int mpi_can(const call_t *c)
{
    if (c->count * (size_t)nranks > INT_MAX)
        return 0;
    if (bench_mpi_dtype(c->dtype, colls[c->coll].reduces) == MPI_DATATYPE_NULL)
        return 0;
    return !colls[c->coll].reduces || bench_mpi_op(c->op) != MPI_OP_NULL;
}

static int call_mpi(const call_t *c)
{
    MPI_Datatype t = bench_mpi_dtype(c->dtype, colls[c->coll].reduces);
    MPI_Op op = colls[c->coll].reduces ? bench_mpi_op(c->op) : MPI_OP_NULL;
    int n = (int)c->count, is_root = rank == c->root;
    const void *snd = c->inplace ? MPI_IN_PLACE : sbuf;
    switch (c->coll) {
    case C_ALLREDUCE: return MPI_Allreduce(snd, rbuf, n, t, op, MPI_COMM_WORLD);
    case C_ALLGATHER: return MPI_Allgather(snd, n, t, rbuf, n, t, MPI_COMM_WORLD);
    case C_REDUCE_SCATTER: return MPI_Reduce_scatter_block(snd, rbuf, n, t, op, MPI_COMM_WORLD);
    case C_BCAST: return MPI_Bcast(rbuf, n, t, c->root, MPI_COMM_WORLD);
    case C_REDUCE:
        return MPI_Reduce(c->inplace ? (is_root ? MPI_IN_PLACE : rbuf) : sbuf, rbuf, n, t, op,
                          c->root, MPI_COMM_WORLD);
    case C_ALLTOALL: return MPI_Alltoall(snd, n, t, rbuf, n, t, MPI_COMM_WORLD);
    case C_GATHER:
        return MPI_Gather(c->inplace && is_root ? MPI_IN_PLACE : sbuf, n, t, rbuf, n, t, c->root,
                          MPI_COMM_WORLD);
    case C_SCATTER:
        return MPI_Scatter(sbuf, n, t, c->inplace && is_root ? MPI_IN_PLACE : rbuf, n, t, c->root,
                           MPI_COMM_WORLD);
    case C_SENDRECV:
        return MPI_Sendrecv(sbuf, n, t, (rank + 1) % nranks, SENDRECV_TAG, rbuf, n, t,
                            (rank + nranks - 1) % nranks, SENDRECV_TAG, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE);
    case C_BARRIER: return MPI_Barrier(MPI_COMM_WORLD);
    case C_ALLGATHERV:
        v_setup(c);
        return MPI_Allgatherv(snd, v_irc[rank], t, rbuf, v_irc, v_ird, t, MPI_COMM_WORLD);
    case C_ALLTOALLV:
        v_setup(c);
        return MPI_Alltoallv(snd, v_isc, v_isd, t, rbuf, v_irc, v_ird, t, MPI_COMM_WORLD);
    default: return MPI_ERR_ARG;
    }
}

/* --- inputs and the exact answers ----------------------------------------------------- */

/* Reduction inputs: small integers. For sum and avg, ranks pair up with
 * opposite offsets, so the sum is exactly nranks * base and the average
 * exactly base, in every type; partial sums never exceed 10 * nranks, so
 * they are exact in float16 (to 204 ranks) and bfloat16 (to 25). For prod,
 * one rank holds a 2 on odd elements, the rest 1s. */
static int64_t red_input(xcoll_op_t op, int r, size_t i)
{
    switch (op) {
    case XCOLL_SUM:
    case XCOLL_AVG: {
        int64_t base = 3 + (int64_t)(i % 5);
        if ((nranks & 1) && r == nranks - 1)
            return base;
        int64_t off = (int64_t)((i + (size_t)(r / 2)) % 3);
        return r % 2 == 0 ? base + off : base - off;
    }
    case XCOLL_PROD: return ((i + (size_t)r) % (size_t)nranks == 0 && (i & 1)) ? 2 : 1;
    case XCOLL_BAND:
    case XCOLL_BOR:
    case XCOLL_BXOR: return (int64_t)((i * 5 + (size_t)r * 3 + 1) % 64);
    default: return (int64_t)(((size_t)r * 7 + i) % 11);
    }
}

static int64_t red_expected(xcoll_op_t op, size_t i)
{
    switch (op) {
    case XCOLL_SUM: return (int64_t)nranks * (3 + (int64_t)(i % 5));
    case XCOLL_AVG: return 3 + (int64_t)(i % 5);
    case XCOLL_PROD: return (i & 1) ? 2 : 1;
    default: break;
    }
    int64_t acc = red_input(op, 0, i);
    for (int r = 1; r < nranks; r++) {
        int64_t v = red_input(op, r, i);
        switch (op) {
        case XCOLL_MIN: acc = v < acc ? v : acc; break;
        case XCOLL_MAX: acc = v > acc ? v : acc; break;
        case XCOLL_BAND: acc &= v; break;
        case XCOLL_BOR: acc |= v; break;
        case XCOLL_BXOR: acc ^= v; break;
        default: break;
        }
    }
    return acc;
}

/* Data moved without reduction: element i of what rank src contributes. */
static int64_t data_value(int src, size_t i, int salt)
{
    return (int64_t)(((size_t)src * 31 + i + (size_t)salt * 17) % 101);
}

/* Element k of the block rank src sends to rank dst in alltoall. */
static int64_t a2a_value(int src, int dst, size_t k)
{
    return (int64_t)(((size_t)src * 13 + (size_t)dst * 5 + k) % 97);
}




/* 1 if element i of buf holds v in type d, bit for bit. */
static int holds(xcoll_dtype_t d, const void *buf, size_t i, int64_t v, size_t es)
{
    unsigned char want[8];
    bench_store(d, want, 0, v);
    return memcmp((const char *)buf + i * es, want, es) == 0;
}

#define GUARD_BYTES 64
#define POISON 0xee
#define GUARD 0xa5

/* Bytes of rbuf this rank checks after the call. */
static size_t result_bytes(const call_t *c)
{
    size_t blk = c->count * c->es, all = blk * (size_t)nranks;
    int is_root = rank == c->root;
    switch (c->coll) {
    case C_ALLGATHER:
    case C_ALLTOALL: return all;
    case C_REDUCE_SCATTER: return c->inplace ? all : blk;
    case C_REDUCE: return is_root ? blk : 0;
    case C_GATHER: return is_root ? all : 0;
    case C_SCATTER: return c->inplace && is_root ? 0 : blk;
    case C_ALLGATHERV:
    case C_ALLTOALLV: v_setup(c); return v_total(v_rc) * c->es;
    default: return blk;
    }
}

/* Fresh inputs, and poison where results will land so stale data fails. */
static void prepare(const call_t *c)
{
    size_t n = c->count, rb = result_bytes(c), j, k;
    xcoll_dtype_t d = c->dtype;
    int is_root = rank == c->root;
    memset(rhost, POISON, rb);
    memset(rhost + rb, GUARD, GUARD_BYTES);
    char *in = c->inplace ? rhost : shost;
    switch (c->coll) {
    case C_ALLREDUCE:
    case C_REDUCE:
        for (k = 0; k < n; k++)
            bench_store(d, in, k, red_input(c->op, rank, k));
        break;
    case C_REDUCE_SCATTER:
        for (k = 0; k < n * (size_t)nranks; k++)
            bench_store(d, in, k, red_input(c->op, rank, k));
        break;
    case C_ALLGATHER:
        for (k = 0; k < n; k++)
            bench_store(d, c->inplace ? rhost + (size_t)rank * n * c->es : shost, k,
                  data_value(rank, k, 0));
        break;
    case C_GATHER:
        for (k = 0; k < n; k++)
            bench_store(d, c->inplace && is_root ? rhost + (size_t)rank * n * c->es : shost, k,
                  data_value(rank, k, 0));
        break;
    case C_BCAST:
        if (is_root)
            for (k = 0; k < n; k++)
                bench_store(d, rhost, k, data_value(c->root, k, 1));
        break;
    case C_ALLTOALL:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < n; k++)
                bench_store(d, in, j * n + k, a2a_value(rank, (int)j, k));
        break;
    case C_SCATTER:
        if (is_root)
            for (j = 0; j < (size_t)nranks; j++)
                for (k = 0; k < n; k++)
                    bench_store(d, shost, j * n + k, data_value((int)j, k, c->root));
        break;
    case C_SENDRECV:
        for (k = 0; k < n; k++)
            bench_store(d, shost, k, data_value(rank, k, 2));
        break;
    case C_ALLGATHERV:
        for (k = 0; k < v_rc[rank]; k++)
            bench_store(d, c->inplace ? rhost + v_rd[rank] * c->es : shost, k,
                        data_value(rank, k, 0));
        break;
    case C_ALLTOALLV:
        for (j = 0; j < (size_t)nranks; j++) {
            const size_t *cnt = c->inplace ? v_rc : v_sc, *dsp = c->inplace ? v_rd : v_sd;
            for (k = 0; k < cnt[j]; k++)
                bench_store(d, in, dsp[j] + k, a2a_value(rank, (int)j, k));
        }
        break;
    default: break;
    }
}

/* Elements of this rank's result that are wrong, plus bytes written
 * past its end. */
static long count_wrong(const call_t *c)
{
    size_t n = c->count, rb = result_bytes(c), es = c->es, j, k;
    xcoll_dtype_t d = c->dtype;
    long wrong = 0;
    if (rb == 0)
        return 0;
    switch (c->coll) {
    case C_ALLREDUCE:
    case C_REDUCE:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, red_expected(c->op, k), es);
        break;
    case C_REDUCE_SCATTER:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, red_expected(c->op, (size_t)rank * n + k), es);
        break;
    case C_ALLGATHER:
    case C_GATHER:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < n; k++)
                wrong += !holds(d, rhost, j * n + k, data_value((int)j, k, 0), es);
        break;
    case C_BCAST:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, data_value(c->root, k, 1), es);
        break;
    case C_ALLTOALL:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < n; k++)
                wrong += !holds(d, rhost, j * n + k, a2a_value((int)j, rank, k), es);
        break;
    case C_SCATTER:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, data_value(rank, k, c->root), es);
        break;
    case C_SENDRECV:
        for (k = 0; k < n; k++)
            wrong += !holds(d, rhost, k, data_value((rank + nranks - 1) % nranks, k, 2), es);
        break;
    case C_ALLGATHERV:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < v_rc[j]; k++)
                wrong += !holds(d, rhost, v_rd[j] + k, data_value((int)j, k, 0), es);
        break;
    case C_ALLTOALLV:
        for (j = 0; j < (size_t)nranks; j++)
            for (k = 0; k < v_rc[j]; k++)
                wrong += !holds(d, rhost, v_rd[j] + k, a2a_value((int)j, rank, k), es);
        break;
    default: break;
    }
    for (k = 0; k < GUARD_BYTES; k++)
        wrong += (unsigned char)rhost[rb + k] != GUARD;
    return wrong;
}

/* --- device buffers ---------------------------------------------------------------------- */

#ifdef HAVE_CUDA
static cudaStream_t perf_stream;

/* A CUDA call that fails after setup leaves this rank unable to go on,
 * and its peers may already be inside a collective: end the job. */
static void cuda_or_abort(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return;
    fflush(stdout);
    fprintf(stderr, "xcoll-perf r%d: %s: %s; aborting the job\n", rank, what,
            cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Bytes of the call's largest buffer, the most prepare() may write into
 * either one. */
static size_t span_bytes(const call_t *c)
{
    return c->count * c->es * (colls[c->coll].blocked ? (size_t)nranks : 1);
}
#endif

/* After prepare(): the host mirrors' inputs, poison and guard to the
 * device buffers. Synchronous, and the device is idle afterwards, so the
 * next call starts from data in place whatever stream it runs on. */
static void upload(const opts_t *o, const call_t *c)
{
#ifdef HAVE_CUDA
    if (!o->mem_cuda)
        return;
    size_t bytes = span_bytes(c) + GUARD_BYTES;
    cuda_or_abort(cudaMemcpy(sbuf, shost, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (inputs)");
    cuda_or_abort(cudaMemcpy(rbuf, rhost, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (inputs)");
    cuda_or_abort(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
#else
    (void)o;
    (void)c;
#endif
}

/* Before count_wrong(): the result and the guard bytes after it back to
 * the host mirror, once the call's stream has finished with them. */
static void download(const opts_t *o, const call_t *c)
{
#ifdef HAVE_CUDA
    size_t rb = result_bytes(c);
    if (!o->mem_cuda || rb == 0)
        return;
    if (xstream != NULL)
        cuda_or_abort(cudaStreamSynchronize(perf_stream), "cudaStreamSynchronize");
    cuda_or_abort(cudaMemcpy(rhost, rbuf, rb + GUARD_BYTES, cudaMemcpyDeviceToHost),
                  "cudaMemcpy (results)");
#else
    (void)o;
    (void)c;
#endif
}

/* A timed call with a stream is done once its stream is. */
static void sync_stream(void)
{
#ifdef HAVE_CUDA
    if (xstream != NULL)
        cuda_or_abort(cudaStreamSynchronize(perf_stream), "cudaStreamSynchronize");
#endif
}

/* --- results ------------------------------------------------------------------------- */

typedef struct {
    int valid;
    double time_us, algbw, busbw;
    long wrong;
    int slow_rank;
    double slow_us;
} block_t;

typedef struct {
    coll_t coll;
    size_t bytes, count;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    int root; /* -1 for collectives without one */
    int first_combo; /* the first type/op/root of its collective: the one plotted */
    block_t oop, ip, mpi;
    double ratio;
} row_t;

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

/* Combines per-rank mean times (seconds) on rank 0 as -a says. */
static void combine(double t, int average, size_t bytes, double factor, block_t *b)
{
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)nranks) : NULL;
    double dummy;
    MPI_Gather(&t, 1, MPI_DOUBLE, all ? all : &dummy, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    if (all == NULL) { /* out of memory for a few doubles: fall back to rank 0's */
        all = &dummy;
        average = 0;
    }
    double sum = 0, mn = all[0], mx = all[0];
    int slow = 0;
    for (int r = 0; r < nranks; r++) {
        sum += all[r];
        mn = all[r] < mn ? all[r] : mn;
        if (all[r] > mx) {
            mx = all[r];
            slow = r;
        }
    }
    double v = average == 0 ? all[0] : average == 1 ? sum / nranks : average == 2 ? mn : mx;
    b->valid = 1;
    b->time_us = v * 1e6;
    b->algbw = v > 0 ? (double)bytes / v / 1e9 : 0;
    b->busbw = b->algbw * factor;
    b->slow_rank = slow;
    b->slow_us = mx * 1e6;
    if (all != &dummy)
        free(all);
}

/* --- output ----------------------------------------------------------------------------- */

static const char *time_mode_name(int a)
{
    static const char *const names[] = {"rank 0's time", "mean over ranks", "min over ranks",
                                        "max over ranks"};
    return names[a];
}

static char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
/* Where the buffers live, for the header: "host memory", or the device. */
static char mem_desc[192] = "host memory";

static void print_table_header(const opts_t *o, coll_t c)
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

static void print_csv_header(void)
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

/* --- progress ---------------------------------------------------------------------------- */

static double start_time;

static void progress(const opts_t *o, const char *what, size_t bytes, size_t done, size_t total)
{
    if (!o->progress || rank != 0)
        return;
    int tty = isatty(STDERR_FILENO);
    fprintf(stderr, "%sxcoll-perf: %s %zu B, row %zu of %zu, %.0f s%s", tty ? "\r\033[K" : "",
            what, bytes, done, total, MPI_Wtime() - start_time, tty ? "" : "\n");
    fflush(stderr);
}

static void progress_done(const opts_t *o)
{
    if (o->progress && rank == 0 && isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
}

/* --- sizes ------------------------------------------------------------------------------- */

/* The sizes of a sweep; returns how many fit in out (0 on an absurd step). */
static size_t sweep_sizes(const opts_t *o, size_t *out, size_t cap)
{
    size_t n = 0;
    double s = (double)o->min_bytes;
    while (s <= (double)o->max_bytes && n < cap) {
        out[n++] = (size_t)s;
        double next = o->step_factor > 1 ? s * o->step_factor : s + (double)o->step_bytes;
        if (o->step_factor > 1 && (size_t)next == (size_t)s)
            next = s + 1; /* -b 0 or a tiny factor */
        s = next;
    }
    return n;
}

/* The count argument for a size, and the size actually moved. */
static size_t count_for(coll_t c, size_t size, size_t es, size_t *bytes)
{
    size_t count = colls[c].sizeless ? 0 : size / es;
    if (colls[c].blocked)
        count /= (size_t)nranks;
    *bytes = count * es * (colls[c].blocked ? (size_t)nranks : 1);
    return count;
}

/* --- memcpy mode --------------------------------------------------------------------------- */

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

static int run_memcpy(const opts_t *o, const size_t *sizes, size_t nsizes)
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

/* --- --algo ---------------------------------------------------------------------------------- */

/* Index of the library's collective called name, or -1. */
static int library_coll(const char *name)
{
    const char *n;
    for (int c = 0; (n = xcoll_collective_name(c)) != NULL; c++)
        if (strcmp(n, name) == 0)
            return c;
    return -1;
}

static int library_has_algo(int coll, const char *algo)
{
    const char *n;
    for (int i = 0; (n = xcoll_algorithm_name(coll, i)) != NULL; i++)
        if (strcmp(n, algo) == 0)
            return 1;
    return 0;
}

/* Forces --algo through the library's own override, XCOLL_TUNE, for every
 * selected collective that has an algorithm of that name; the others keep
 * their default selection (and say so). Returns -1 if none has it. */
static int apply_algo(const opts_t *o)
{
    char tune[512];
    size_t len = 0;
    for (int c = 0; c < C_COUNT; c++) {
        if (!o->coll_on[c] || c == C_SENDRECV)
            continue;
        int lc = library_coll(colls[c].name);
        if (lc < 0 || !library_has_algo(lc, o->algo)) {
            if (rank == 0)
                fprintf(stderr, "xcoll-perf: --algo %s: %s has no such algorithm (xcoll-info "
                                "lists them); its default selection runs\n",
                        o->algo, colls[c].name);
            continue;
        }
        int w = snprintf(tune + len, sizeof(tune) - len, "%s%s:0-inf:%s", len ? ";" : "",
                         colls[c].name, o->algo);
        if (w < 0 || (size_t)w >= sizeof(tune) - len) {
            if (rank == 0)
                fprintf(stderr, "xcoll-perf: --algo %s: name too long\n", o->algo);
            return -1;
        }
        len += (size_t)w;
    }
    if (len == 0) {
        if (rank == 0)
            fprintf(stderr, "xcoll-perf: --algo %s: no selected collective has this algorithm\n",
                    o->algo);
        return -1;
    }
    if (rank == 0 && getenv("XCOLL_TUNE") != NULL)
        fprintf(stderr, "xcoll-perf: --algo replaces XCOLL_TUNE=%s\n", getenv("XCOLL_TUNE"));
    if (setenv("XCOLL_TUNE", tune, 1) != 0)
        return -1;
    if (rank == 0)
        fprintf(stderr, "xcoll-perf: --algo: XCOLL_TUNE=%s\n", tune);
    return 0;
}

/* --- the sweep -------------------------------------------------------------------------------- */

typedef struct {
    long oob;
    int failed;
    double busbw_sum, mpi_busbw_sum;
    int busbw_n, mpi_busbw_n;
    long mpi_wrong;
} totals_t;

/* Runs one kind of call: warm-up and timed iterations (alternating with
 * MPI when mpi is non-NULL), then the check. Returns -1 if a call failed. */
static int measure(const opts_t *o, const call_t *c, size_t bytes, block_t *xb, block_t *mb,
                   totals_t *tot)
{
    double tx = 0, tm = 0, factor = bus_factor(c->coll, nranks);
    xcoll_status_t st = XCOLL_OK;
    int mrc = MPI_SUCCESS, iters = o->iters, warmup = o->warmup;
    if (o->budget > 0 && bytes > 0) { /* a barrier moves nothing: no budget to spend */
        size_t calls = o->budget / (bytes * (size_t)o->agg);
        iters = calls < 2 ? 2 : calls < (size_t)iters ? (int)calls : iters;
        size_t w = calls / 5 < 1 ? 1 : calls / 5;
        warmup = w < (size_t)warmup ? (int)w : warmup;
    }
    for (int it = -warmup; it < iters && st == XCOLL_OK; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int a = 0; a < o->agg && st == XCOLL_OK; a++)
            st = call_xcoll(c);
        sync_stream();
        double t = MPI_Wtime() - t0;
        if (it >= 0)
            tx += t / o->agg;
        if (o->fence && st == XCOLL_OK)
            st = xcoll_barrier(comm);
        if (mb != NULL) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (int a = 0; a < o->agg; a++)
                mrc |= call_mpi(c);
            t = MPI_Wtime() - t0;
            if (it >= 0)
                tm += t / o->agg;
        }
    }
    long wrong = 0, wrong_all = 0, mwrong = 0;
    if (o->check && st == XCOLL_OK) {
        prepare(c);
        upload(o, c);
        MPI_Barrier(MPI_COMM_WORLD);
        st = call_xcoll(c);
        if (o->fence && st == XCOLL_OK)
            st = xcoll_barrier(comm);
        download(o, c);
        wrong = count_wrong(c);
        if (mb != NULL) {
            /* MPI's result through the same check: a wrong one means the
             * checker, not xcoll, is broken. */
            prepare(c);
            MPI_Barrier(MPI_COMM_WORLD);
            mrc |= call_mpi(c);
            mwrong = count_wrong(c);
        }
    }
    int failed = st != XCOLL_OK, failed_any = 0;
    if (failed)
        fprintf(stderr, "xcoll-perf r%d: %s of %zu elements failed: %s\n", rank,
                colls[c->coll].name, c->count, xcoll_strerror(st));
    if (st == XCOLL_ERR_TIMEOUT || st == XCOLL_ERR_TRANSPORT || st == XCOLL_ERR_COMM_FAILED) {
        /* Only some ranks may have failed, and the others may be blocked
         * in MPI already: no collective can agree on stopping now. */
        fflush(stdout);
        fprintf(stderr, "xcoll-perf r%d: aborting the job\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (mrc != MPI_SUCCESS)
        fprintf(stderr, "xcoll-perf r%d: MPI's %s failed\n", rank, colls[c->coll].name);
    MPI_Allreduce(&failed, &failed_any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    long both[2] = {wrong, mwrong}, both_all[2] = {0, 0};
    MPI_Reduce(both, both_all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    wrong_all = both_all[0];
    combine(tx / iters, o->average, bytes, factor, xb);
    xb->wrong = wrong_all;
    if (mb != NULL)
        combine(tm / iters, o->average, bytes, factor, mb);
    if (rank == 0) {
        tot->oob += wrong_all;
        tot->mpi_wrong += both_all[1];
    }
    if (rank == 0 && bytes > 0) { /* a barrier has no bandwidth to average */
        tot->busbw_sum += xb->busbw;
        tot->busbw_n++;
        if (mb != NULL) {
            tot->mpi_busbw_sum += mb->busbw;
            tot->mpi_busbw_n++;
        }
    }
    tot->failed += failed_any;
    return failed_any ? -1 : 0;
}

static int run_sweep(const opts_t *o, const size_t *sizes, size_t nsizes)
{
    totals_t tot;
    memset(&tot, 0, sizeof(tot));
    size_t total_rows = 0, done = 0;

    /* Count the rows first so progress can say how far along it is. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && rank == 0 && o->csv)
            print_csv_header();
        for (int ci = 0; ci < C_COUNT; ci++) {
            coll_t c = (coll_t)ci;
            if (!o->coll_on[c])
                continue;
            if (pass == 1 && rank == 0 && !o->csv && !o->json)
                print_table_header(o, c);
            int nops = colls[c].reduces ? o->nops : 1;
            int r0 = colls[c].rooted ? (o->root < 0 ? 0 : o->root) : -1;
            int r1 = colls[c].rooted ? (o->root < 0 ? nranks - 1 : o->root) : -1;
            int first_combo = 1;
            int ndtypes = colls[c].sizeless ? 1 : o->ndtypes;
            size_t nsz = colls[c].sizeless ? 1 : nsizes;
            for (int di = 0; di < ndtypes; di++)
                for (int oi = 0; oi < nops; oi++) {
                    xcoll_dtype_t dt = (xcoll_dtype_t)o->dtypes[di];
                    xcoll_op_t op = (xcoll_op_t)o->ops[oi];
                    if (colls[c].reduces && is_bitwise(op) && is_float(dt))
                        continue; /* not defined on floats */
                    for (int root = r0; root <= r1; root++) {
                        size_t es = xcoll_dtype_size(dt), last = 0;
                        for (size_t si = 0; si < nsz; si++) {
                            size_t bytes, count = count_for(c, sizes[si], es, &bytes);
                            if (!colls[c].sizeless && (count == 0 || bytes == last))
                                continue;
                            last = bytes;
                            if (pass == 0) {
                                total_rows++;
                                continue;
                            }
                            progress(o, colls[c].name, bytes, ++done, total_rows);
                            row_t row;
                            memset(&row, 0, sizeof(row));
                            row.coll = c;
                            row.bytes = bytes;
                            row.count = count;
                            row.dtype = dt;
                            row.op = op;
                            row.root = root;
                            row.first_combo = first_combo;
                            call_t call = {c, 0, count, dt, op, root < 0 ? 0 : root, es};
                            int with_mpi = o->vs_mpi && mpi_can(&call);
                            int rc = measure(o, &call, bytes, &row.oop,
                                             with_mpi ? &row.mpi : NULL, &tot);
                            if (rc == 0 && o->inplace && colls[c].has_inplace) {
                                call.inplace = 1;
                                rc = measure(o, &call, bytes, &row.ip, NULL, &tot);
                            }
                            if (rank == 0) {
                                if (row.mpi.valid && row.oop.time_us > 0)
                                    row.ratio = row.mpi.time_us / row.oop.time_us;
                                if (add_row(&row) != 0) {
                                    fprintf(stderr, "xcoll-perf: out of memory\n");
                                    MPI_Abort(MPI_COMM_WORLD, 1);
                                }
                                progress_done(o);
                                if (o->csv)
                                    print_csv_row(&row);
                                else if (!o->json)
                                    print_table_row(o, &row);
                            }
                            if (rc != 0)
                                goto stop; /* the communicator may be unusable now */
                        }
                        first_combo = 0;
                    }
                }
        }
    }
stop:
    progress_done(o);
    if (rank == 0) {
        double avg = tot.busbw_n ? tot.busbw_sum / tot.busbw_n : 0;
        double mavg = tot.mpi_busbw_n ? tot.mpi_busbw_sum / tot.mpi_busbw_n : 0;
        if (o->json) {
            print_json(o, tot.oob, avg, mavg, tot.failed);
        } else if (!o->csv) {
            printf("# Out of bounds values : %ld %s\n", tot.oob, tot.oob ? "FAILED" : "OK");
            if (tot.failed)
                printf("# Failed calls         : %d FAILED\n", tot.failed);
            printf("# Avg bus bandwidth    : %.4f GB/s\n", avg);
            if (o->vs_mpi)
                printf("# MPI avg bus bandwidth: %.4f GB/s\n", mavg);
            printf("#\n");
        }
        if (tot.mpi_wrong)
            fprintf(stderr, "xcoll-perf: warning: MPI's own results failed the check in %ld "
                            "elements: the check itself may be wrong\n", tot.mpi_wrong);
        if (o->plot_path != NULL)
            write_plot(o);
        fflush(stdout);
    }
    long verdict = rank == 0 ? tot.oob + tot.failed : 0;
    MPI_Bcast(&verdict, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    return verdict == 0 ? 0 : 1;
}

/* --- buffers and devices -------------------------------------------------------------------- */

#ifdef HAVE_CUDA
/* This rank's index among the ranks on its node. Every rank takes part in
 * the split, so a launcher that numbers some ranks and not others cannot
 * leave one waiting; the launcher's own number wins where it gives one,
 * since its CPU binding follows that number. */
static int local_rank(void)
{
    int lr = 0;
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &lr);
        MPI_Comm_free(&node);
    }
    const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (env != NULL)
        (void)parse_int(env, 0, INT_MAX, &lr);
    return lr;
}

/* Opens this rank's device (and --stream's stream). Collective: returns 0
 * on every rank, or 2 on every rank when some rank has no usable device;
 * the first such rank says why. */
static int setup_cuda(const opts_t *o)
{
    int count = 0, dev = 0, lr = local_rank();
    const char *what = NULL; /* the failed step, when it is not finding the device */
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count == 0)
        e = cudaErrorNoDevice;
    if (e == cudaSuccess) {
        dev = lr % count;
        e = cudaSetDevice(dev);
    }
    /* Creating the context now keeps its cost out of the first timing and
     * makes a device that is present but unusable fail here. */
    if (e == cudaSuccess)
        e = cudaFree(NULL);
    if (e == cudaSuccess && o->use_stream) {
        what = "cudaStreamCreate";
        e = cudaStreamCreate(&perf_stream);
    }
    int mine = e == cudaSuccess ? nranks : rank, first = nranks;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first < nranks) {
        if (rank == first && what != NULL)
            fprintf(stderr, "xcoll-perf: -m cuda: %s on rank %d: %s\n", what, rank,
                    cudaGetErrorString(e));
        else if (rank == first && rank == 0)
            fprintf(stderr, "xcoll-perf: -m cuda: no CUDA device (%s)\n", cudaGetErrorString(e));
        else if (rank == first)
            fprintf(stderr, "xcoll-perf: -m cuda: no CUDA device on rank %d (%s)\n", rank,
                    cudaGetErrorString(e));
        if (e == cudaSuccess && o->use_stream)
            cudaStreamDestroy(perf_stream);
        return 2;
    }
    xstream = o->use_stream ? (void *)perf_stream : NULL;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
        snprintf(prop.name, sizeof(prop.name), "unknown");
    snprintf(mem_desc, sizeof(mem_desc), "cuda device memory (rank 0: device %d of %d, %.64s), %s",
             dev, count, prop.name, o->use_stream ? "created stream" : "NULL stream");
    return 0;
}
#endif

/* Both buffers with guard bytes past the largest result, every page
 * touched so first-touch faults are not timed; -1 when out of memory. */
static int alloc_buffers(const opts_t *o)
{
    size_t bytes = o->max_bytes + GUARD_BYTES;
    if (posix_memalign((void **)&shost, 4096, bytes) != 0 ||
        posix_memalign((void **)&rhost, 4096, bytes) != 0)
        return -1;
    memset(shost, 0, bytes);
    memset(rhost, 0, bytes);
    sbuf = shost;
    rbuf = rhost;
#ifdef HAVE_CUDA
    if (o->mem_cuda) {
        void *s = NULL, *r = NULL;
        if (cudaMalloc(&s, bytes) != cudaSuccess || cudaMalloc(&r, bytes) != cudaSuccess ||
            cudaMemset(s, 0, bytes) != cudaSuccess || cudaMemset(r, 0, bytes) != cudaSuccess ||
            cudaDeviceSynchronize() != cudaSuccess)
            return -1;
        sbuf = s;
        rbuf = r;
    }
#endif
    return 0;
}

static void free_buffers(void)
{
#ifdef HAVE_CUDA
    if (sbuf != shost)
        cudaFree(sbuf);
    if (rbuf != rhost)
        cudaFree(rbuf);
    if (xstream != NULL)
        cudaStreamDestroy(perf_stream);
#endif
    free(shost);
    free(rhost);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    v_sc = calloc((size_t)nranks * 4, sizeof(size_t));
    v_isc = calloc((size_t)nranks * 4, sizeof(int));
    if (v_sc == NULL || v_isc == NULL) {
        fprintf(stderr, "xcoll-perf: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    v_sd = v_sc + nranks, v_rc = v_sc + 2 * nranks, v_rd = v_sc + 3 * nranks;
    v_isd = v_isc + nranks, v_irc = v_isc + 2 * nranks, v_ird = v_isc + 3 * nranks;
    start_time = MPI_Wtime();
    {
        int len = 0;
        MPI_Get_library_version(mpi_version, &len);
        /* first line, up to the package details */
        mpi_version[strcspn(mpi_version, ",\n")] = '\0';
    }

    opts_t o;
    int pr = parse_args(argc, argv, &o);
    if (pr != 0) {
        if (pr == 1 && rank == 0)
            usage(stdout);
        MPI_Finalize();
        return pr == 1 ? 0 : 2;
    }
#ifdef HAVE_CUDA
    if (o.mem_cuda) {
        int cr = setup_cuda(&o);
        if (cr != 0) {
            MPI_Finalize();
            return cr;
        }
    }
#endif

    size_t cap = 4096, *sizes = malloc(cap * sizeof(*sizes));
    size_t nsizes = sizes ? sweep_sizes(&o, sizes, cap) : 0;
    if (sizes == NULL || alloc_buffers(&o) != 0) {
        fprintf(stderr, "xcoll-perf r%d: out of %s memory for %zu-byte buffers\n", rank,
                o.mem_cuda ? "device" : "host", o.max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    int rc;
    if (o.memcpy_mode) {
        rc = run_memcpy(&o, sizes, nsizes);
    } else {
        if (o.algo != NULL && apply_algo(&o) != 0) {
            MPI_Finalize();
            return 2;
        }
        xcoll_status_t st = xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm);
        int ok = st == XCOLL_OK, all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all_ok) {
            if (!ok && o.algo != NULL)
                fprintf(stderr, "xcoll-perf r%d: xcoll rejected --algo %s (XCOLL_TUNE): %s\n",
                        rank, o.algo, xcoll_strerror(st));
            else if (!ok)
                fprintf(stderr, "xcoll-perf r%d: cannot create the xcoll communicator: %s\n",
                        rank, xcoll_strerror(st));
            if (comm != NULL)
                xcoll_comm_destroy(comm);
            MPI_Finalize();
            return o.algo != NULL ? 2 : 1;
        }
        rc = run_sweep(&o, sizes, nsizes);
        xcoll_comm_destroy(comm);
    }
    free(sizes);
    free_buffers();
    free(rows);
    MPI_Finalize();
    return rc;
}
