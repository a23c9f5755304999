/* xcoll-perf: every xcoll collective in the columns of nccl-tests, with
 * MPI's own collective timed in the same job for comparison.
 *
 *   mpirun -np 4 xcoll-perf -C allreduce -b 8 -e 64M -f 2 --vs-mpi
 *
 * Timing. An iteration is a barrier, then --agg back-to-back calls timed
 * on every rank; a rank's time is the mean over the timed iterations.
 * With --vs-mpi an xcoll iteration and an MPI iteration alternate, so
 * neither library gets a quieter machine. The row shows the rank times
 * combined by -a (nccl-tests' meaning: 0 rank 0, 1 mean, 2 min, 3 max;
 * and 4, the median over the timed iterations of the slowest rank's time
 * in each) and names the slowest rank, so a straggler can be found.
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
 * says why and exits 2.
 *
 * This file: main and the sweep. The other files are listed in perf.h. */
#include <stdlib.h>
#include <string.h>

#include "perf.h"

int rank, nranks;
xcoll_comm_t comm;
char *sbuf, *rbuf, *shost, *rhost;
void *xstream;

static int is_float(xcoll_dtype_t d)
{
    return d == XCOLL_FLOAT16 || d == XCOLL_BFLOAT16 || d == XCOLL_FLOAT32 || d == XCOLL_FLOAT64;
}

static int is_bitwise(xcoll_op_t op)
{
    return op == XCOLL_BAND || op == XCOLL_BOR || op == XCOLL_BXOR;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Combines per-rank mean times t (seconds) on rank 0 as -a says; -a 4
 * takes iter_t instead, this rank's time in each timed iteration. */
static void combine(double t, double *iter_t, int iters, int average, size_t bytes,
                    double factor, block_t *b)
{
    double med = 0;
    if (average == AVG_MEDIAN_SLOWEST) {
        /* A collective is done when its last rank is: each iteration's
         * time is the slowest rank's. */
        MPI_Allreduce(MPI_IN_PLACE, iter_t, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        med = median(iter_t, iters);
    }
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)nranks) : NULL;
    double dummy;
    MPI_Gather(&t, 1, MPI_DOUBLE, all ? all : &dummy, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    if (all == NULL) { /* out of memory for a few doubles: fall back to rank 0's */
        all = &dummy;
        if (average != AVG_MEDIAN_SLOWEST)
            average = AVG_RANK0;
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
    double v = average == AVG_RANK0 ? all[0]
               : average == AVG_MEAN  ? sum / nranks
               : average == AVG_MIN   ? mn
               : average == AVG_MAX   ? mx
                                      : med;
    b->valid = 1;
    b->time_us = v * 1e6;
    b->algbw = v > 0 ? (double)bytes / v / 1e9 : 0;
    b->busbw = b->algbw * factor;
    b->slow_rank = slow;
    b->slow_us = mx * 1e6;
    if (all != &dummy)
        free(all);
}

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
    double *xi = NULL, *mi = NULL; /* -a 4: each timed iteration's time */
    if (o->average == AVG_MEDIAN_SLOWEST) {
        xi = calloc(2 * (size_t)iters, sizeof(double));
        if (xi == NULL) {
            fprintf(stderr, "xcoll-perf r%d: out of memory\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        mi = xi + iters;
    }
    for (int it = -warmup; it < iters && st == XCOLL_OK; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int a = 0; a < o->agg && st == XCOLL_OK; a++)
            st = call_xcoll(c);
        dev_sync_stream();
        double t = MPI_Wtime() - t0;
        if (it >= 0) {
            tx += t / o->agg;
            if (xi != NULL)
                xi[it] = t / o->agg;
        }
        if (o->fence && st == XCOLL_OK)
            st = xcoll_barrier(comm);
        if (mb != NULL) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (int a = 0; a < o->agg; a++)
                mrc |= call_mpi(c);
            t = MPI_Wtime() - t0;
            if (it >= 0) {
                tm += t / o->agg;
                if (mi != NULL)
                    mi[it] = t / o->agg;
            }
        }
    }
    long wrong = 0, wrong_all = 0, mwrong = 0;
    if (o->check && st == XCOLL_OK) {
        prepare(c);
        dev_upload(o, c);
        MPI_Barrier(MPI_COMM_WORLD);
        st = call_xcoll(c);
        if (o->fence && st == XCOLL_OK)
            st = xcoll_barrier(comm);
        dev_download(o, c);
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
    if (st == XCOLL_ERR_TIMEOUT || st == XCOLL_ERR_TRANSPORT || st == XCOLL_ERR_COMM_FAILED ||
        st == XCOLL_ERR_PEER_LOST) {
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
    combine(tx / iters, xi, iters, o->average, bytes, factor, xb);
    xb->wrong = wrong_all;
    if (mb != NULL)
        combine(tm / iters, mi, iters, o->average, bytes, factor, mb);
    free(xi);
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
                                output_row(o, &row);
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
    if (rank == 0)
        print_summary(o, &tot);
    long verdict = rank == 0 ? tot.oob + tot.failed : 0;
    MPI_Bcast(&verdict, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    return verdict == 0 ? 0 : 1;
}

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
    return o->mem_cuda ? dev_alloc(bytes) : 0;
}

static void free_buffers(void)
{
    dev_free();
    free(shost);
    free(rhost);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (calls_init() != 0) {
        fprintf(stderr, "xcoll-perf: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    output_init();

    opts_t o;
    int pr = parse_args(argc, argv, &o);
    if (pr != 0) {
        if (pr == 1 && rank == 0)
            usage(stdout);
        MPI_Finalize();
        return pr == 1 ? 0 : 2;
    }
    if (o.mem_cuda) {
        int cr = dev_setup(&o);
        if (cr != 0) {
            MPI_Finalize();
            return cr;
        }
    }

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
    output_fini();
    calls_fini();
    MPI_Finalize();
    return rc;
}
