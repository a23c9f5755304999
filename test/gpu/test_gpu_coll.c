/* test_gpu_coll: every collective with its buffers on the GPU, compared
 * bit for bit with the same collective on host buffers (the host path is
 * itself checked against MPI and exact values by test/mpi/test_coll), and
 * the stream contract: a collective on a stream reads only after the
 * stream's earlier work, and the stream's later work waits for it.
 *
 * Buffers: device/device, host send + device receive, device send + host
 * receive, in place on the device (allreduce; reduce_scatter MPI style,
 * whose result is moved to block 0 after completion), and managed memory.
 *
 * Usage: test_gpu_coll [--emulate] [--quick]
 *   With a CUDA device it runs on the device (one per rank, round robin).
 *   --emulate runs on the emulated GPU of test/gpu/emulated_gpu.h, which
 *   keeps device memory unreadable by the CPU and runs GPU work late: the
 *   engine's device paths are then tested on machines without a GPU.
 *   Without either it prints "skipped: no CUDA device" and exits 77. */
#include "../mpi/common.h"
#include "emulated_gpu.h"
#include "gpu.h"

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include <unistd.h>

static xcoll_comm_t comm;
static int rank, size, emulate, quick;
static const xc_gpu_backend_t *gpu;

/* --- the device, real or emulated ------------------------------------------ */

static void *dev_alloc(size_t bytes, int managed)
{
    void *p = NULL;
    if (emulate)
        return managed ? emu_managed_alloc(bytes ? bytes : 1) : emu_dev_alloc(bytes ? bytes : 1);
#ifdef HAVE_CUDA
    if ((managed ? cudaMallocManaged(&p, bytes ? bytes : 1, cudaMemAttachGlobal)
                 : cudaMalloc(&p, bytes ? bytes : 1)) != cudaSuccess) {
        fprintf(stderr, "test_gpu_coll r%d: cannot allocate %zu bytes on the device\n", rank,
                bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
#endif
    return p;
}

static void dev_free(void *p)
{
    if (emulate)
        emu_dev_free(p);
#ifdef HAVE_CUDA
    else
        cudaFree(p);
#endif
}

static void copy_sync(void *dst, const void *src, size_t bytes)
{
    if (bytes > 0 && gpu->copy_sync(dst, src, bytes) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *stream_new(void)
{
#ifdef HAVE_CUDA
    cudaStream_t s;
    if (!emulate) {
        if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
            MPI_Abort(MPI_COMM_WORLD, 2);
        return s;
    }
#endif
    return emu_stream_create();
}

static void stream_free(void *s)
{
#ifdef HAVE_CUDA
    if (!emulate) {
        cudaStreamDestroy((cudaStream_t)s);
        return;
    }
#endif
    emu_stream_destroy(s);
}

/* cudaMemcpyAsync on the stream (both ends device or pinned memory). */
static void stream_copy(void *s, void *dst, const void *src, size_t bytes)
{
#ifdef HAVE_CUDA
    if (!emulate) {
        if (cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)s) != cudaSuccess)
            MPI_Abort(MPI_COMM_WORLD, 2);
        return;
    }
#endif
    emu_stream_copy(s, dst, src, bytes);
}

static int stream_sync(void *s)
{
#ifdef HAVE_CUDA
    if (!emulate)
        return cudaStreamSynchronize((cudaStream_t)s) == cudaSuccess ? 0 : -1;
#endif
    return emu_stream_sync(s);
}

/* 1 if everything queued on s has run. */
static int stream_idle(void *s)
{
#ifdef HAVE_CUDA
    if (!emulate)
        return cudaStreamQuery((cudaStream_t)s) == cudaSuccess;
#endif
    emu_gpu_tick();
    return emu_stream_pending(s) == 0;
}

/* --- one collective, any buffers ---------------------------------------------- */

typedef enum { C_ALLREDUCE, C_BCAST, C_REDUCE, C_ALLGATHER, C_REDUCE_SCATTER, C_ALLTOALL,
               C_GATHER, C_SCATTER, C_SENDRECV, C_COUNT } coll_t;
static const char *const coll_names[C_COUNT] = {"allreduce", "bcast",    "reduce",
                                                "allgather", "reduce_scatter", "alltoall",
                                                "gather",    "scatter",  "sendrecv"};

/* Elements of the send and receive buffers of coll at count n. */
static void extents(coll_t c, size_t n, size_t *sn, size_t *rn)
{
    size_t P = (size_t)size;
    switch (c) {
    case C_ALLREDUCE: case C_REDUCE: case C_SENDRECV: *sn = n, *rn = n; break;
    case C_BCAST: *sn = 0, *rn = n; break;
    case C_ALLGATHER: case C_GATHER: *sn = n, *rn = P * n; break;
    case C_REDUCE_SCATTER: case C_SCATTER: *sn = P * n, *rn = n; break;
    default: *sn = P * n, *rn = P * n; break;
    }
}

static xcoll_status_t run(coll_t c, const void *s, void *r, size_t n, xcoll_dtype_t dt,
                          xcoll_op_t op, int root, void *stream, xcoll_request_t *req)
{
    switch (c) {
    case C_ALLREDUCE: return xcoll_iallreduce(s, r, n, dt, op, comm, stream, req);
    case C_BCAST: return xcoll_ibcast(r, n, dt, root, comm, stream, req);
    case C_REDUCE: return xcoll_ireduce(s, r, n, dt, op, root, comm, stream, req);
    case C_ALLGATHER: return xcoll_iallgather(s, r, n, dt, comm, stream, req);
    case C_REDUCE_SCATTER: return xcoll_ireduce_scatter(s, r, n, dt, op, comm, stream, req);
    case C_ALLTOALL: return xcoll_ialltoall(s, r, n, dt, comm, stream, req);
    case C_GATHER: return xcoll_igather(s, r, n, dt, root, comm, stream, req);
    case C_SCATTER: return xcoll_iscatter(s, r, n, dt, root, comm, stream, req);
    default: {
        /* a ring: send to the next rank, receive from the previous */
        xcoll_request_t sr;
        xcoll_status_t st = xcoll_isend(s, n, dt, (rank + 1) % size, 7, comm, stream, &sr);
        if (st == XCOLL_OK)
            st = xcoll_irecv(r, n, dt, (rank + size - 1) % size, 7, comm, stream, req);
        if (st == XCOLL_OK)
            st = xcoll_wait(&sr);
        return st;
    }
    }
}

static xcoll_status_t run_blocking(coll_t c, const void *s, void *r, size_t n, xcoll_dtype_t dt,
                                   xcoll_op_t op, int root, void *stream)
{
    xcoll_request_t req = NULL;
    xcoll_status_t st = run(c, s, r, n, dt, op, root, stream, &req);
    return st == XCOLL_OK ? xcoll_wait(&req) : st;
}

/* Deterministic bytes: small integers in every type (so every reduction
 * order gives the same bits) for reductions, a rank/position pattern for
 * the rest. */
static void fill(void *buf, size_t n, xcoll_dtype_t dt, int who, unsigned salt)
{
    size_t i;
    for (i = 0; i < n; i++)
        tc_store(dt, buf, i, (int64_t)((i * 7 + (size_t)who * 3 + salt) % 5) - 1);
}

enum { V_DEVICE, V_HOST_SEND, V_HOST_RECV, V_IN_PLACE, V_MANAGED, V_COUNT };
static const char *const v_names[V_COUNT] = {"device", "host send", "host recv", "in place",
                                             "managed"};

/* Runs c on host buffers, then on variant v's buffers, and compares. */
static void check_case(coll_t c, size_t n, xcoll_dtype_t dt, xcoll_op_t op, int root, int v)
{
    size_t ds = xcoll_dtype_size(dt), sn, rn, sb, rb, cmp;
    char *hs, *hr, *want, *got, *ds_buf = NULL, *dr_buf = NULL;
    const void *s;
    void *r;
    xcoll_status_t st;
    int ok = 1;

    extents(c, n, &sn, &rn);
    if (v == V_IN_PLACE && c == C_REDUCE_SCATTER)
        rn = (size_t)size * n; /* MPI style: the input fills recvbuf */
    sb = sn * ds;
    rb = rn * ds;
    /* in place, reduce_scatter defines only the first block */
    cmp = v == V_IN_PLACE && c == C_REDUCE_SCATTER ? n * ds : rb;
    hs = malloc(sb + 1);
    hr = malloc(rb + 1);
    want = malloc(rb + 1);
    got = malloc(rb + 1);
    if (hs == NULL || hr == NULL || want == NULL || got == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    fill(hs, sn, dt, rank, 1);
    if (v == V_IN_PLACE)
        fill(hr, rn, dt, rank, 1); /* the input is in recv */
    else if (c == C_BCAST && rank == root)
        fill(hr, rn, dt, rank, 2);
    else
        memset(hr, 0x5a, rb);

    /* the reference: host buffers */
    memcpy(want, hr, rb);
    st = run_blocking(c, v == V_IN_PLACE ? XCOLL_IN_PLACE : hs, want, n, dt, op, root, NULL);
    if (st != XCOLL_OK) {
        tc_fail("%s on host buffers: %s", coll_names[c], xcoll_strerror(st));
        goto out;
    }

    /* the same on the variant's buffers */
    s = hs;
    r = hr;
    if (v != V_HOST_SEND && v != V_IN_PLACE && sb > 0) {
        ds_buf = dev_alloc(sb, v == V_MANAGED);
        copy_sync(ds_buf, hs, sb);
        s = ds_buf;
    }
    if (v != V_HOST_RECV) {
        dr_buf = dev_alloc(rb, v == V_MANAGED);
        copy_sync(dr_buf, hr, rb);
        r = dr_buf;
    } else {
        memcpy(got, hr, rb);
        r = got;
    }
    if (v == V_IN_PLACE)
        s = XCOLL_IN_PLACE;
    st = run_blocking(c, s, r, n, dt, op, root, NULL);
    if (st != XCOLL_OK) {
        tc_fail("%s, %s buffers, %s, count %zu: %s", coll_names[c], v_names[v],
                xcoll_dtype_name(dt), n, xcoll_strerror(st));
        goto out;
    }
    if (dr_buf != NULL)
        copy_sync(got, dr_buf, rb);
    /* receive buffers that the collective leaves alone (non-roots of
     * reduce and gather) must be left alone on the device too */
    if (memcmp(got, want, cmp) != 0) {
        size_t i = 0;
        while (got[i] == want[i])
            i++;
        tc_fail("%s, %s buffers, %s %s, count %zu, root %d: differs from the host result at "
                "byte %zu of %zu", coll_names[c], v_names[v], xcoll_dtype_name(dt),
                xcoll_op_name(op), n, root, i, cmp);
        ok = 0;
    }
    if (ds_buf != NULL) {
        char *back = malloc(sb + 1);
        copy_sync(back, ds_buf, sb);
        if (memcmp(back, hs, sb) != 0) {
            tc_fail("%s, %s buffers: the send buffer was modified", coll_names[c], v_names[v]);
            ok = 0;
        }
        free(back);
    }
    if (ok)
        tc_pass();
out:
    dev_free(ds_buf);
    dev_free(dr_buf);
    free(hs);
    free(hr);
    free(want);
    free(got);
}

static int is_reduction(coll_t c)
{
    return c == C_ALLREDUCE || c == C_REDUCE || c == C_REDUCE_SCATTER;
}

static void sweep(void)
{
    static const xcoll_dtype_t dts[] = {XCOLL_FLOAT32, XCOLL_BFLOAT16, XCOLL_INT32,
                                        XCOLL_FLOAT64, XCOLL_FLOAT16, XCOLL_UINT8};
    static const xcoll_op_t ops[] = {XCOLL_SUM, XCOLL_MAX, XCOLL_AVG, XCOLL_PROD};
    const size_t counts[] = {0, 1, 1000, quick ? 4099 : (size_t)(1 << 20) + 3};
    int c, v, k, d;
    for (c = 0; c < C_COUNT; c++) {
        for (k = 0; k < 4; k++) {
            for (v = 0; v < V_COUNT; v++) {
                int root = (k + v) % size;
                if (v == V_IN_PLACE && c != C_ALLREDUCE && c != C_REDUCE_SCATTER)
                    continue; /* reduce_scatter: MPI style, the result moves to block 0 */
                if (v == V_MANAGED && !emulate && k != 2)
                    continue; /* managed memory: one count is enough on a real GPU */
                if (is_reduction((coll_t)c)) {
                    for (d = 0; d < (int)(sizeof(dts) / sizeof(dts[0])); d++)
                        check_case((coll_t)c, counts[k], dts[d], ops[(d + k + v) % 4], root, v);
                } else {
                    check_case((coll_t)c, counts[k], dts[(k + v) % 6], XCOLL_SUM, root, v);
                }
            }
        }
    }
}

/* The stream contract, on allreduce and allgather of n float32 each. */
static void stream_checks(size_t n, int nonblocking)
{
    const size_t bytes = n * sizeof(float);
    void *stream = stream_new();
    float *in = NULL, *out = NULL, *want = malloc((size_t)size * bytes + 1);
    char *d_in = dev_alloc(bytes, 0), *d_out = dev_alloc((size_t)size * bytes, 0);
    int c;

    /* empty pools: a stream-ordered call must take what it needs before
     * it holds the stream (the emulation fails an allocation after) */
    xc_gpu_release_pools();
    /* pinned host memory: a copy from the device into pageable memory
     * would block the host until the held stream runs, i.e. forever */
    if (gpu->pinned_alloc((void **)&in, bytes + 4) != XCOLL_OK ||
        gpu->pinned_alloc((void **)&out, (size_t)size * bytes + 4) != XCOLL_OK || want == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (c = 0; c < 2; c++) {
        coll_t coll = c == 0 ? C_ALLREDUCE : C_ALLGATHER;
        size_t rbytes = coll == C_ALLGATHER ? (size_t)size * bytes : bytes;
        xcoll_request_t req = NULL;
        xcoll_status_t st;

        fill(in, n, XCOLL_FLOAT32, rank, 3);
        memcpy(want, in, bytes);
        st = coll == C_ALLREDUCE
                 ? run_blocking(coll, XCOLL_IN_PLACE, want, n, XCOLL_FLOAT32, XCOLL_SUM, 0, NULL)
                 : run_blocking(coll, in, want, n, XCOLL_FLOAT32, XCOLL_SUM, 0, NULL);
        if (st != XCOLL_OK) {
            tc_fail("%s on host buffers: %s", coll_names[coll], xcoll_strerror(st));
            continue;
        }
        /* garbage on the device, the input only through the stream */
        memset(out, 0x77, rbytes);
        copy_sync(d_in, out, bytes);
        copy_sync(d_out, out, rbytes);
        stream_copy(stream, d_in, in, bytes);
        st = nonblocking ? run(coll, d_in, d_out, n, XCOLL_FLOAT32, XCOLL_SUM, 0, stream, &req)
                         : run_blocking(coll, d_in, d_out, n, XCOLL_FLOAT32, XCOLL_SUM, 0,
                                        stream);
        stream_copy(stream, out, d_out, rbytes);
        if (st == XCOLL_OK && nonblocking && size > 1) {
            /* the collective cannot be done before this rank progresses it
             * again, so the copy queued after it must still be waiting */
            usleep(20000);
            if (stream_idle(stream))
                tc_fail("%s on a stream: work queued after it ran before it completed",
                        coll_names[coll]);
            else
                tc_pass();
        }
        if (st == XCOLL_OK && nonblocking)
            st = xcoll_wait(&req);
        if (st != XCOLL_OK) {
            tc_fail("%s on a stream (%s): %s", coll_names[coll],
                    nonblocking ? "nonblocking" : "blocking", xcoll_strerror(st));
            continue;
        }
        if (stream_sync(stream) != 0)
            tc_fail("%s on a stream: the stream stayed held after the call completed",
                    coll_names[coll]);
        else if (memcmp(out, want, rbytes) != 0)
            tc_fail("%s on a stream (%s): result differs from the host result",
                    coll_names[coll], nonblocking ? "nonblocking" : "blocking");
        else
            tc_pass();
    }
    gpu->pinned_free(in);
    gpu->pinned_free(out);
    free(want);
    dev_free(d_in);
    dev_free(d_out);
    stream_free(stream);
}

/* A device call without a stream still running when a call on a stream
 * holds that stream: the first must not allocate after the hold (the
 * emulation fails such an allocation; CUDA may make it wait for the held
 * stream, which only this thread can release). Both results are checked. */
static void overlap_check(size_t n)
{
    const size_t bytes = n * sizeof(float);
    void *stream = stream_new();
    float *in = NULL, *out = NULL, *want_a = malloc(bytes), *want_b = malloc(bytes);
    float *got = malloc(bytes);
    char *d_a = dev_alloc(bytes, 0), *d_in = dev_alloc(bytes, 0), *d_out = dev_alloc(bytes, 0);
    xcoll_request_t ra = NULL, rb = NULL;
    xcoll_status_t sa, sb;

    xc_gpu_release_pools();
    if (gpu->pinned_alloc((void **)&in, bytes) != XCOLL_OK ||
        gpu->pinned_alloc((void **)&out, bytes) != XCOLL_OK || want_a == NULL ||
        want_b == NULL || got == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    fill(want_a, n, XCOLL_FLOAT32, rank, 6);
    copy_sync(d_a, want_a, bytes);
    fill(in, n, XCOLL_FLOAT32, rank, 7);
    memcpy(want_b, in, bytes);
    if (xcoll_allreduce(XCOLL_IN_PLACE, want_a, n, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL) !=
            XCOLL_OK ||
        xcoll_allreduce(XCOLL_IN_PLACE, want_b, n, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL) !=
            XCOLL_OK)
        tc_fail("allreduce on host buffers failed");
    xc_gpu_release_pools();

    sa = xcoll_iallreduce(XCOLL_IN_PLACE, d_a, n, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL, &ra);
    stream_copy(stream, d_in, in, bytes);
    sb = xcoll_iallreduce(d_in, d_out, n, XCOLL_FLOAT32, XCOLL_SUM, comm, stream, &rb);
    stream_copy(stream, out, d_out, bytes);
    if (sb == XCOLL_OK)
        sb = xcoll_wait(&rb);
    if (sa == XCOLL_OK)
        sa = xcoll_wait(&ra);
    if (sa != XCOLL_OK || sb != XCOLL_OK) {
        tc_fail("overlapping device calls: %s, %s", xcoll_strerror(sa), xcoll_strerror(sb));
    } else if (stream_sync(stream) != 0) {
        tc_fail("overlapping device calls: the stream stayed held");
    } else {
        copy_sync(got, d_a, bytes);
        if (memcmp(got, want_a, bytes) != 0 || memcmp(out, want_b, bytes) != 0)
            tc_fail("overlapping device calls: a result differs from the host result");
        else
            tc_pass();
    }
    gpu->pinned_free(in);
    gpu->pinned_free(out);
    free(want_a);
    free(want_b);
    free(got);
    dev_free(d_a);
    dev_free(d_in);
    dev_free(d_out);
    stream_free(stream);
}

/* The caller's word on memory (xcoll_config_t.memory): a communicator
 * told "cuda" serves device buffers without asking, one told "host" host
 * buffers, with the same results. */
static void memory_setting_checks(void)
{
    const size_t n = 4099, bytes = n * sizeof(float);
    float *h = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    void *d = dev_alloc(bytes, 0);
    xcoll_config_t cfg;
    xcoll_comm_t c2;
    int m;
    if (h == NULL || want == NULL || got == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    fill(want, n, XCOLL_FLOAT32, rank, 5);
    if (xcoll_allreduce(XCOLL_IN_PLACE, want, n, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL) !=
        XCOLL_OK)
        tc_fail("allreduce on host buffers failed");
    for (m = 0; m < 2; m++) {
        xcoll_status_t st;
        xcoll_config_init(&cfg);
        cfg.memory = m == 0 ? XCOLL_MEMORY_CUDA : XCOLL_MEMORY_HOST;
        if (!TC_EXPECT(XCOLL_OK, xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &c2)))
            continue;
        fill(h, n, XCOLL_FLOAT32, rank, 5);
        if (m == 0) {
            copy_sync(d, h, bytes);
            st = xcoll_allreduce(XCOLL_IN_PLACE, d, n, XCOLL_FLOAT32, XCOLL_SUM, c2, NULL);
            copy_sync(got, d, bytes);
        } else {
            st = xcoll_allreduce(XCOLL_IN_PLACE, h, n, XCOLL_FLOAT32, XCOLL_SUM, c2, NULL);
            memcpy(got, h, bytes);
        }
        if (st != XCOLL_OK || memcmp(got, want, bytes) != 0)
            tc_fail("allreduce on a communicator with memory = %s: %s", m == 0 ? "cuda" : "host",
                    st != XCOLL_OK ? xcoll_strerror(st) : "wrong result");
        else
            tc_pass();
        xcoll_comm_destroy(c2);
    }
    dev_free(d);
    free(h);
    free(want);
    free(got);
}

int main(int argc, char **argv)
{
    int i, ndev = 0;
    const char *why = "built without CUDA";

    tc_init(&argc, &argv, "test_gpu_coll");
    rank = tc.rank;
    size = tc.size;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--emulate"))
            emulate = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
    }
    if (getenv("XCOLL_TEST_QUICK") != NULL)
        quick = 1;
    if (emulate) {
        emu_gpu_install(1);
    } else {
#ifdef HAVE_CUDA
        cudaError_t e = cudaGetDeviceCount(&ndev);
        why = e != cudaSuccess ? cudaGetErrorString(e) : "no device found";
        if (e == cudaSuccess && ndev > 0) {
            int local = rank;
            const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
            if (lr != NULL)
                local = atoi(lr);
            cudaSetDevice(local % ndev);
        }
#endif
        if (ndev == 0) {
            if (rank == 0)
                printf("test_gpu_coll: skipped: no CUDA device (%s)\n", why);
            MPI_Finalize();
            return 77;
        }
    }
    comm = tc_comm_create(MPI_COMM_WORLD, 60.0);
    gpu = xc_gpu();
    if (gpu == NULL) {
        tc_fail("a device is present but the library found none");
    } else {
        if (rank == 0)
            printf("test_gpu_coll: %d ranks, %s\n", size, emulate ? "emulated GPU"
                                                                 : xcoll_build_info());
        sweep();
        stream_checks(quick ? 5000 : 300003, 1);
        stream_checks(1000, 0);
        memory_setting_checks();
        overlap_check(quick ? 20000 : 300003);
    }
    xcoll_comm_destroy(comm);
    return tc_finish();
}
