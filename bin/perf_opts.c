/* perf_opts.c - xcoll-perf's command line: the options (nccl-tests'
 * letters where they have one), the usage text, and --algo, which becomes
 * an XCOLL_TUNE rule. */
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"
#include "tool_util.h"

void usage(FILE *f)
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
        "  -a, --average 0..4     time of a row: 0 rank 0's, 1 mean over ranks, 2 min,\n"
        "                         3 max (default 1); 4 each iteration's slowest rank,\n"
        "                         median over iterations (steady on a busy machine)\n"
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

/* Appends to list the number from_name gives s, or for "all" makes the
 * list every number below count. */
static int add_named(const char *s, int (*from_name)(const char *), int count, int *list,
                     int *n)
{
    if (strcmp(s, "all") == 0) {
        for (*n = 0; *n < count; (*n)++)
            list[*n] = *n;
        return 0;
    }
    int v = from_name(s);
    if (v < 0 || *n >= count)
        return -1;
    list[(*n)++] = v;
    return 0;
}

static int add_dtype(const char *s, void *ctx)
{
    opts_t *o = ctx;
    return add_named(s, tool_dtype_from_name, XCOLL_DTYPE_COUNT, o->dtypes, &o->ndtypes);
}

static int add_op(const char *s, void *ctx)
{
    opts_t *o = ctx;
    return add_named(s, tool_op_from_name, XCOLL_OP_COUNT, o->ops, &o->nops);
}

int parse_args(int argc, char **argv, opts_t *o)
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
        case 'C': if (tool_each_item(optarg, add_coll, o)) bad = "-C"; break;
        case 'b': if (tool_parse_size(optarg, &o->min_bytes)) bad = "-b"; break;
        case 'e': if (tool_parse_size(optarg, &o->max_bytes)) bad = "-e"; break;
        case 'f':
            o->step_factor = strtod(optarg, NULL);
            have_factor = 1;
            if (!(o->step_factor > 1.0)) bad = "-f (must be > 1)";
            break;
        case 'i':
            if (tool_parse_size(optarg, &o->step_bytes) || o->step_bytes == 0) bad = "-i";
            have_step = 1;
            break;
        case 'n': if (tool_parse_int(optarg, 1, 1 << 24, &o->iters)) bad = "-n"; break;
        case 'w': if (tool_parse_int(optarg, 0, 1 << 24, &o->warmup)) bad = "-w"; break;
        case 'c': if (tool_parse_int(optarg, 0, 1, &o->check)) bad = "-c"; break;
        case 'd': if (tool_each_item(optarg, add_dtype, o)) bad = "-d"; break;
        case 'o': if (tool_each_item(optarg, add_op, o)) bad = "-o"; break;
        case 'r': if (tool_parse_int(optarg, -1, INT_MAX, &o->root)) bad = "-r"; break;
        case 'a':
            if (tool_parse_int(optarg, AVG_RANK0, AVG_MEDIAN_SLOWEST, &o->average)) bad = "-a";
            break;
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
        case O_AGG: if (tool_parse_int(optarg, 1, 1 << 20, &o->agg)) bad = "--agg"; break;
        case O_BUDGET: if (tool_parse_size(optarg, &o->budget)) bad = "--budget"; break;
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

/* Forces --algo through the library's own override, XCOLL_TUNE, for every
 * selected collective that has an algorithm of that name; the others keep
 * their default selection (and say so). Returns -1 if none has it. */
int apply_algo(const opts_t *o)
{
    char tune[512];
    size_t len = 0;
    for (int c = 0; c < C_COUNT; c++) {
        if (!o->coll_on[c] || c == C_SENDRECV)
            continue;
        int lc = tool_coll_from_name(colls[c].name);
        if (lc < 0 || !tool_coll_has_algo(lc, o->algo)) {
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
