/* perf.h - what the files of xcoll-perf share:
 *   xcoll_perf.c   main, the sweep over sizes, timing one kind of call
 *   perf_opts.c    the command line (options, usage, --algo)
 *   perf_calls.c   the collectives it times, through xcoll and through MPI
 *   perf_check.c   inputs with exact answers, and checking the results
 *   perf_cuda.c    device buffers and streams (-m cuda; CUDA builds only)
 *   perf_output.c  the rows: table, CSV, JSON, SVG plot, progress line
 *   perf_memcpy.c  --memcpy: the machine's copy bandwidth
 * The calls run on process-wide buffers and communicator (below), so that
 * the timed path passes nothing but the call's description. */
#ifndef XCOLL_PERF_H
#define XCOLL_PERF_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include "xcoll.h"

/* --- the collectives (perf_calls.c) ---------------------------------------------------- */

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

extern const coll_info_t colls[C_COUNT];

/* nccl-tests' bus bandwidth factor of c on n ranks. */
double bus_factor(coll_t c, int n);

/* --- options (perf_opts.c) ------------------------------------------------------------ */

/* -a: how a row's time is made of the ranks' times. */
enum { AVG_RANK0, AVG_MEAN, AVG_MIN, AVG_MAX, AVG_MEDIAN_SLOWEST };

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

void usage(FILE *f);

/* 0: run; 1: help asked for; 2: bad usage (message printed by rank 0);
 * 3: a valid request this build cannot serve. */
int parse_args(int argc, char **argv, opts_t *o);

/* Forces --algo through XCOLL_TUNE; -1 if no selected collective has it. */
int apply_algo(const opts_t *o);

/* --- one call (perf_calls.c) ------------------------------------------------------------ */

typedef struct {
    coll_t coll;
    int inplace;
    size_t count; /* the count argument: per block for blocked collectives */
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    int root;
    size_t es;
} call_t;

/* Set up by xcoll_perf.c's main. sbuf, rbuf: what the calls get (device
 * memory with -m cuda); shost, rhost: where inputs are written and
 * results checked (the same buffers with -m host, host mirrors with
 * -m cuda). xstream: every call's stream, NULL or --stream's. */
extern int rank, nranks;
extern xcoll_comm_t comm;
extern char *sbuf, *rbuf, *shost, *rhost;
extern void *xstream;

/* This rank's counts and displacements in the v-variants' last layout
 * (v_setup), for the check. */
extern size_t *v_sc, *v_sd, *v_rc, *v_rd;

/* Room for the v-variants' layouts; -1 when out of memory. */
int calls_init(void);
void calls_fini(void);
void v_setup(const call_t *c);
size_t v_total(const size_t *counts);

xcoll_status_t call_xcoll(const call_t *c);
/* 1 if MPI can run the same call. */
int mpi_can(const call_t *c);
int call_mpi(const call_t *c);

/* --- checking (perf_check.c) ------------------------------------------------------------- */

/* Guard bytes after every result, which a correct call leaves alone. */
#define GUARD_BYTES 64

/* Bytes of rbuf this rank checks after the call. */
size_t result_bytes(const call_t *c);
/* Fresh inputs in the host buffers, and poison where results will land. */
void prepare(const call_t *c);
/* Elements of this rank's result that are wrong, plus bytes written past its end. */
long count_wrong(const call_t *c);

/* --- device buffers (perf_cuda.c) ---------------------------------------------------------- */

#ifdef HAVE_CUDA
/* Opens this rank's device (and --stream's stream) and describes it in
 * mem_desc. Collective: 0 on every rank, or 2 on every rank when some
 * rank has no usable device. */
int dev_setup(const opts_t *o);
/* Device buffers of bytes each for sbuf and rbuf; -1 if out of memory. */
int dev_alloc(size_t bytes);
void dev_free(void);
/* After prepare(): the host buffers to the device ones (-m cuda). */
void dev_upload(const opts_t *o, const call_t *c);
/* Before count_wrong(): the result back to the host (-m cuda). */
void dev_download(const opts_t *o, const call_t *c);
/* A timed call with a stream is done once its stream is. */
void dev_sync_stream(void);
#else
/* parse_args refuses -m cuda in a build without CUDA, so none of these
 * ever meets device memory. */
static inline int dev_setup(const opts_t *o) { (void)o; return 2; }
static inline int dev_alloc(size_t bytes) { (void)bytes; return -1; }
static inline void dev_free(void) {}
static inline void dev_upload(const opts_t *o, const call_t *c) { (void)o; (void)c; }
static inline void dev_download(const opts_t *o, const call_t *c) { (void)o; (void)c; }
static inline void dev_sync_stream(void) {}
#endif

/* --- results and output (perf_output.c) ------------------------------------------------------ */

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

/* Summed over the sweep; on rank 0 (failed on every rank). */
typedef struct {
    long oob;
    int failed;
    double busbw_sum, mpi_busbw_sum;
    int busbw_n, mpi_busbw_n;
    long mpi_wrong;
} totals_t;

/* Where the buffers live, for the header: "host memory", or the device. */
extern char mem_desc[192];

/* Notes the MPI library and the start time; before anything is printed. */
void output_init(void);
void output_fini(void);
/* Rank 0: keeps a finished row (for JSON and the plot) and prints it. */
void output_row(const opts_t *o, const row_t *r);
void print_csv_header(void);
void print_table_header(const opts_t *o, coll_t c);
/* Rank 0: the totals in the chosen format, and the plot. */
void print_summary(const opts_t *o, const totals_t *tot);
void progress(const opts_t *o, const char *what, size_t bytes, size_t done, size_t total);
void progress_done(const opts_t *o);

/* --- --memcpy (perf_memcpy.c) --------------------------------------------------------------- */

int run_memcpy(const opts_t *o, const size_t *sizes, size_t nsizes);

#endif
