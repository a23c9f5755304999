/* perf_cuda.c - xcoll-perf's device memory (-m cuda): picking this rank's
 * device, the device buffers and --stream's stream, and copying inputs
 * and results between them and their host mirrors. Built with CUDA only
 * (perf.h has the no-op stand-ins otherwise). */
#include <limits.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>

#include "perf.h"
#include "tool_util.h"

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

/* After prepare(): the host mirrors' inputs, poison and guard to the
 * device buffers. Synchronous, and the device is idle afterwards, so the
 * next call starts from data in place whatever stream it runs on. */
void dev_upload(const opts_t *o, const call_t *c)
{
    if (!o->mem_cuda)
        return;
    size_t bytes = span_bytes(c) + GUARD_BYTES;
    cuda_or_abort(cudaMemcpy(sbuf, shost, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (inputs)");
    cuda_or_abort(cudaMemcpy(rbuf, rhost, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (inputs)");
    cuda_or_abort(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/* Before count_wrong(): the result and the guard bytes after it back to
 * the host mirror, once the call's stream has finished with them. */
void dev_download(const opts_t *o, const call_t *c)
{
    size_t rb = result_bytes(c);
    if (!o->mem_cuda || rb == 0)
        return;
    if (xstream != NULL)
        cuda_or_abort(cudaStreamSynchronize(perf_stream), "cudaStreamSynchronize");
    cuda_or_abort(cudaMemcpy(rhost, rbuf, rb + GUARD_BYTES, cudaMemcpyDeviceToHost),
                  "cudaMemcpy (results)");
}

void dev_sync_stream(void)
{
    if (xstream != NULL)
        cuda_or_abort(cudaStreamSynchronize(perf_stream), "cudaStreamSynchronize");
}

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
        (void)tool_parse_int(env, 0, INT_MAX, &lr);
    return lr;
}

/* The first rank without a usable device says why. */
int dev_setup(const opts_t *o)
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

/* cudaMemset and the synchronisation touch every page now, so that no
 * first-touch cost lands in a timing. */
int dev_alloc(size_t bytes)
{
    void *s = NULL, *r = NULL;
    if (cudaMalloc(&s, bytes) != cudaSuccess || cudaMalloc(&r, bytes) != cudaSuccess ||
        cudaMemset(s, 0, bytes) != cudaSuccess || cudaMemset(r, 0, bytes) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
        return -1;
    sbuf = s;
    rbuf = r;
    return 0;
}

void dev_free(void)
{
    if (sbuf != shost)
        cudaFree(sbuf);
    if (rbuf != rhost)
        cudaFree(rbuf);
    if (xstream != NULL)
        cudaStreamDestroy(perf_stream);
}
