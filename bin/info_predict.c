/* xcoll-info --predict: what the cost model (lib/coll/model.h) says every
 * algorithm would take on a cluster the user describes, which one the
 * active selection table picks, and which one the model finds best.
 * Builds every rank's schedule in this process: no MPI, no cluster. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/model.h"
#include "coll/tune.h"
#include "info_predict.h"
#include "log.h"
#include "perf_plot.h"
#include "tool_util.h"
#include "topo.h"

#define MAX_SIZES 32
#define MAX_ALGOS 16
/* Schedules of more steps (all ranks) are simulated only where their
 * bound says they might be best: ~3 s each on the development machine. */
#define EXACT_STEPS (8u * 1000 * 1000)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: xcoll-info --predict --nodes N --ranks-per-node K [--intra GB/s,us]\n"
            "                  [--inter GB/s,us] [--reduce GB/s] [--coll C] [--sizes S,S,...]\n"
            "                  [--overhead us] [--copy GB/s] [--cores N [--turn us]]\n"
            "                  [--memory MiB,F] [--forward F] [--inter-cpu GB/s]\n"
            "                  [--split BYTES] [--plot FILE.svg]\n"
            "  The cost model's time for every algorithm of each collective (or of C)\n"
            "  at each message size S (default 8 B to 64 MiB), on N nodes of K ranks:\n"
            "  --intra is shared memory within a node, --inter the NIC a node's ranks\n"
            "  share, --reduce the bytes a rank reduces a second, --copy those it\n"
            "  copies, --overhead a rank's CPU time per message (defaults: this\n"
            "  machine's calibration, docs/SCALING.md); --cores: all ranks share N\n"
            "  cores, as on a machine with fewer cores than ranks, and --turn is what\n"
            "  a core loses each time it turns from one rank to another; --memory:\n"
            "  MiB of cache, and once the buffers one rank touches in the call take\n"
            "  twice that, bytes moved, copied or reduced within the node cost F\n"
            "  times the rates above (in proportion in between); --forward:\n"
            "  bytes a rank wrote in the call (received, reduced, copied) and sends\n"
            "  on within its node move F (>= 1) times slower (their lines move\n"
            "  between the two cores' caches and back);\n"
            "  --inter-cpu: the rate at which a receiver's CPU takes a large message\n"
            "  between nodes as it arrives (a kernel's TCP on the ranks' cores);\n"
            "  --split: messages within a node from BYTES into a plain receive are\n"
            "  split copies (XCOLL_SHM_SPLIT_MIN, default 131072; 0: none): a sender\n"
            "  whose core is free copies half.\n"
            "  'picked' is what the active selection table (defaults, XCOLL_TUNE_FILE,\n"
            "  XCOLL_TUNE) chooses, 'best' the fastest by the model. '>T' is a lower\n"
            "  bound: that algorithm was not simulated, as it cannot beat the best or\n"
            "  needs more than 160 M steps. Sizes: 1 B to 16 GiB.\n"
            "  --plot (with --coll): every algorithm's predicted size / time as an SVG\n"
            "  chart.\n");
}

typedef struct {
    size_t v[MAX_SIZES];
    int n;
} sizes_t;

static int add_size(const char *item, void *ctx)
{
    sizes_t *s = ctx;
    size_t b;
    /* 16 GiB: a pipelined schedule's segments stay countable */
    if (s->n == MAX_SIZES || tool_parse_size(item, &b) != 0 || b == 0 || b > ((size_t)16 << 30))
        return -1;
    s->v[s->n++] = b;
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void time_text(double t, char *buf, size_t len)
{
    t *= 1e6;
    snprintf(buf, len, t < 10 ? "%.2f" : t < 1000 ? "%.1f" : "%.0f", t);
}

/* What --plot draws: per algorithm, the sizes it was simulated at and
 * the bandwidth predicted there. */
typedef struct {
    const char *name;
    size_t n;
    double x[MAX_SIZES], y[MAX_SIZES];
} curve_t;

static int write_plot(const char *path, xc_coll_t coll, int nodes, int rpn, const curve_t *c,
                      size_t ncurves)
{
    perf_series_t s[MAX_ALGOS];
    char title[160];
    size_t i;
    for (i = 0; i < ncurves; i++) {
        s[i].label = c[i].name;
        s[i].color = (int)i;
        s[i].dashed = 0;
        s[i].npoints = c[i].n;
        s[i].x = c[i].x;
        s[i].y = c[i].y;
    }
    snprintf(title, sizeof(title), "%s on %d nodes x %d ranks, predicted by the cost model",
             xc_coll_name(coll), nodes, rpn);
    if (perf_plot_svg(path, title, "message size", "size / time (GB/s)", s, ncurves) != 0) {
        fprintf(stderr, "xcoll-info: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* One collective over every size: a row per size (and a curve per
 * algorithm into curves, when not NULL). 0, or 1 on error. */
static int predict_coll(xc_coll_t coll, const sizes_t *sizes, int P, const struct xc_topo *topo,
                        const xc_model_params_t *mp, const xc_tune_t *tune, curve_t *curves,
                        size_t *ncurves)
{
    xc_model_entry_t e[MAX_ALGOS];
    size_t n = 0, i;
    int k, first = 1;
    char buf[32];

    for (k = 0; k < sizes->n; k++) {
        xc_coll_args_t a;
        xcoll_status_t rc;
        const xc_model_entry_t *best = NULL, *pe = NULL;
        size_t bytes = coll == XC_COLL_BARRIER ? 0 : sizes->v[k];
        if (coll == XC_COLL_BARRIER && k > 0)
            break;
        memset(&a, 0, sizeof(a));
        a.coll = coll;
        a.size = P;
        a.dtype = bytes % 4 == 0 ? XCOLL_FLOAT32 : XCOLL_UINT8;
        a.count = bytes / xcoll_dtype_size(a.dtype);
        a.op = XCOLL_SUM;
        a.topo = topo;
        rc = xc_model_compare(&a, mp, tune, EXACT_STEPS, e, MAX_ALGOS, &n, &pe, &best);
        if (rc != XCOLL_OK) {
            fprintf(stderr, "xcoll-info: %s at %zu bytes: %s\n", xc_coll_name(coll), bytes,
                    xcoll_strerror(rc));
            return 1;
        }
        if (first) {
            printf("\n%s (us; message size per rank's block)\n%8s", xc_coll_name(coll), "bytes");
            for (i = 0; i < n; i++)
                printf(" %12s", e[i].algo->name);
            printf("  %-12s %-12s %s\n", "picked", "best", "picked/best");
            first = 0;
        }
        for (i = 0; i < n; i++) {
            if (curves != NULL && i < MAX_ALGOS) {
                curve_t *cv = &curves[i];
                cv->name = e[i].algo->name;
                if (e[i].status == XC_MODEL_RAN && e[i].time > 0 && bytes > 0) {
                    cv->x[cv->n] = (double)bytes;
                    cv->y[cv->n] = (double)bytes / e[i].time * 1e-9;
                    cv->n++;
                }
                if (*ncurves < i + 1)
                    *ncurves = i + 1;
            }
        }
        xc_tune_size_text(bytes, buf, sizeof(buf));
        printf("%8s", buf);
        for (i = 0; i < n; i++) {
            char t[24], cell[32];
            if (e[i].status == XC_MODEL_DECLINED) {
                printf(" %12s", "-");
                continue;
            }
            time_text(e[i].status == XC_MODEL_RAN ? e[i].time : e[i].bound, t, sizeof(t));
            snprintf(cell, sizeof(cell), "%s%s", e[i].status == XC_MODEL_RAN ? "" : ">", t);
            printf(" %12s", cell);
        }
        printf("  %-12s %-12s", pe != NULL ? pe->algo->name : "?",
               best != NULL ? best->algo->name : "-");
        if (pe != NULL && best != NULL && pe->status == XC_MODEL_RAN && best->time > 0)
            printf(" %.2f", pe->time / best->time);
        printf("\n");
    }
    return 0;
}

/* A number and nothing else, in [lo, inf) (lo excluded when open): 0, or
 * -1 for anything else ("5x", "", "abc", nan). */
static int parse_number(const char *v, double lo, int open, double *out)
{
    char *end;
    double x;
    if (v == NULL)
        return -1;
    x = strtod(v, &end);
    if (end == v || *end != '\0' || !isfinite(x) || x < lo || (open && x == lo))
        return -1;
    *out = x;
    return 0;
}

/* GB/s into seconds a byte: -1 where that is not a finite positive number. */
static int parse_rate(const char *v, double *sec_per_byte)
{
    double gbs, r;
    if (parse_number(v, 0, 1, &gbs) != 0)
        return -1;
    r = 1.0 / (gbs * 1e9);
    if (!isfinite(r) || r <= 0)
        return -1;
    *sec_per_byte = r;
    return 0;
}

/* "MiB,F": the cache (what one rank's buffers of a call must fit), and
 * F >= 1. */
static int parse_memory(const char *v, xc_model_params_t *mp)
{
    char *end;
    double mib, f;
    if (v == NULL)
        return -1;
    mib = strtod(v, &end);
    if (end == v || *end != ',' || !isfinite(mib) || mib < 0)
        return -1;
    v = end + 1;
    if (parse_number(v, 1, 0, &f) != 0)
        return -1;
    mp->cache = mib * 1024 * 1024;
    mp->dram = f;
    return 0;
}

static int parse_link(const char *opt, const char *v, xc_link_cost_t *l)
{
    if (v == NULL || xc_model_parse_link(v, l) != 0) {
        fprintf(stderr, "xcoll-info: %s %s: expected GB/s,us (e.g. 25,2)\n", opt,
                v != NULL ? v : "(missing)");
        return -1;
    }
    return 0;
}

int info_predict(int argc, char **argv)
{
    int nodes = 0, rpn = 0, i, coll = -1, c, rc = 0;
    sizes_t sizes = {{0}, 0};
    const char *plot = NULL;
    static curve_t curves[MAX_ALGOS];
    size_t ncurves = 0;
    xc_model_params_t mp;
    size_t split;
    struct xc_topo *topo = NULL;
    xc_tune_t *tune = NULL;
    char err[512];
    double us;

    xc_model_params_default(&mp);
    for (i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--nodes") && v && tool_parse_int(v, 1, 1 << 16, &nodes) == 0) {
        } else if (!strcmp(o, "--ranks-per-node") && v &&
                   tool_parse_int(v, 1, 1 << 12, &rpn) == 0) {
        } else if (!strcmp(o, "--intra")) {
            if (parse_link(o, v, &mp.intra) != 0)
                return 2;
        } else if (!strcmp(o, "--inter")) {
            if (parse_link(o, v, &mp.inter) != 0)
                return 2;
        } else if (!strcmp(o, "--reduce") && parse_rate(v, &mp.gamma) == 0) {
        } else if (!strcmp(o, "--cores") && v && tool_parse_int(v, 1, 1 << 20, &mp.cores) == 0) {
        } else if (!strcmp(o, "--copy") && parse_rate(v, &mp.copy) == 0) {
        } else if (!strcmp(o, "--overhead") && parse_number(v, 0, 0, &us) == 0) {
            mp.overhead = us * 1e-6;
        } else if (!strcmp(o, "--turn") && parse_number(v, 0, 0, &us) == 0) {
            mp.turn = us * 1e-6;
        } else if (!strcmp(o, "--memory") && parse_memory(v, &mp) == 0) {
        } else if (!strcmp(o, "--inter-cpu") && parse_rate(v, &mp.inter_cpu) == 0) {
        } else if (!strcmp(o, "--forward") && parse_number(v, 1, 0, &mp.forward) == 0) {
        } else if (!strcmp(o, "--split") && v && tool_parse_size(v, &split) == 0) {
            mp.split = (double)split;
        } else if (!strcmp(o, "--coll") && v && (coll = tool_coll_from_name(v)) >= 0 &&
                   coll <= XC_COLL_BARRIER) {
        } else if (!strcmp(o, "--sizes") && v && *v && tool_each_item(v, add_size, &sizes) == 0) {
        } else if (!strcmp(o, "--plot") && v) {
            plot = v;
        } else {
            fprintf(stderr, "xcoll-info --predict: bad option %s%s%s\n", o, v ? " " : "",
                    v ? v : "");
            usage(stderr);
            return 2;
        }
        i++;
    }
    if (plot != NULL && coll < 0) {
        fprintf(stderr, "xcoll-info --predict: --plot draws one collective: give --coll\n");
        return 2;
    }
    if (nodes < 1 || rpn < 1) {
        fprintf(stderr, "xcoll-info --predict: --nodes and --ranks-per-node are required\n");
        usage(stderr);
        return 2;
    }
    if ((long)nodes * rpn > (1 << 16)) {
        fprintf(stderr, "xcoll-info --predict: at most 65536 ranks\n");
        return 2;
    }
    /* in order, as the chart's x axis wants them */
    qsort(sizes.v, (size_t)sizes.n, sizeof(sizes.v[0]), cmp_size);
    if (sizes.n == 0) {
        size_t b;
        for (b = 8; b <= ((size_t)64 << 20); b *= 8)
            sizes.v[sizes.n++] = b;
        sizes.v[sizes.n++] = (size_t)64 << 20;
    }
    xc_log_init();
    if (xc_tune_load(&tune, NULL, NULL, err, sizeof(err)) != XCOLL_OK) {
        fprintf(stderr, "xcoll-info: the selection table cannot be built: %s\n", err);
        return 1;
    }
    if (xc_topo_from_ranks_per_node(nodes * rpn, rpn, &topo) != XCOLL_OK) {
        fprintf(stderr, "xcoll-info: out of memory\n");
        xc_tune_free(tune);
        return 1;
    }
    printf("# %d nodes x %d ranks = %d ranks; within a node %.3g GB/s %.3g us, between "
           "nodes %.3g GB/s %.3g us (a NIC per node), %.3g us a message, reduce %.3g GB/s\n",
           nodes, rpn, nodes * rpn, 1e-9 / mp.intra.beta, mp.intra.alpha * 1e6,
           1e-9 / mp.inter.beta, mp.inter.alpha * 1e6, mp.overhead * 1e6, 1e-9 / mp.gamma);
    for (c = 0; c <= XC_COLL_BARRIER && rc == 0; c++)
        if (coll < 0 || c == coll)
            rc = predict_coll((xc_coll_t)c, &sizes, nodes * rpn, topo, &mp, tune,
                              plot != NULL ? curves : NULL, &ncurves);
    if (rc == 0 && plot != NULL)
        rc = write_plot(plot, (xc_coll_t)coll, nodes, rpn, curves, ncurves);
    xc_topo_free(topo);
    xc_tune_free(tune);
    return rc;
}
