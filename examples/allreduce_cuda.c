/* allreduce_cuda.c - xcoll_allreduce on GPU memory, ordered on a CUDA stream.
 *
 * The same sum as allreduce.c (every rank contributes its rank number;
 * the answer is 0 + 1 + ... + (N-1) everywhere), but the buffer lives in
 * device memory and the collective is queued on a CUDA stream:
 *
 *   1. each rank picks a GPU (its rank on the node, modulo the GPUs there)
 *      and cudaMallocs the buffer;
 *   2. xcoll_allreduce(..., stream) waits for what is already queued on
 *      the stream before it reads the buffer, and makes the stream wait
 *      for the sum before anything queued after it runs;
 *   3. so the copy of the result back to the host is queued on the same
 *      stream straight after the call, with no host synchronisation in
 *      between; one cudaStreamSynchronize at the end waits for both.
 * With a NULL stream instead, the result is in place when the call
 * returns (host order), like allreduce.c.
 *
 * Needs a build configured with CUDA (examples/allreduce_cuda is built
 * then). Without a usable GPU it says why and exits 0.
 *
 *   mpirun -np 2 examples/allreduce_cuda
 */
#include <mpi.h>     /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 1024

/* Stops the job on a CUDA error after the device was found usable: the
 * other ranks may be waiting inside the allreduce for this one. */
static void cuda_check(cudaError_t e, const char *what, int rank)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, what, cudaGetErrorString(e));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. A GPU per rank: ranks on one node take its GPUs in turn. */
    MPI_Comm node;
    int local_rank = 0, ndev = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e == cudaSuccess && ndev == 0)
        e = cudaErrorNoDevice;
    if (e == cudaSuccess)
        e = cudaSetDevice(local_rank % ndev);
    if (e == cudaSuccess)
        e = cudaFree(NULL); /* creates the context: a broken device fails here */
    /* Every rank must agree before any of them enters a collective; the
     * first rank without a GPU says why. */
    int first_bad = e == cudaSuccess ? size : rank, first_bad_all = size;
    MPI_Allreduce(&first_bad, &first_bad_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first_bad_all < size) {
        if (rank == first_bad_all)
            printf("allreduce_cuda: skipped: no CUDA device (%s)\n", cudaGetErrorString(e));
        MPI_Finalize();
        return 0;
    }

    xcoll_comm_t comm;
    xcoll_status_t st = xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm);
    if (st != XCOLL_OK) {
        fprintf(stderr, "rank %d: xcoll_comm_create_mpi: %s\n", rank, xcoll_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* The input: every element is this rank's number. cudaMemcpy from the
     * host fills the device buffer; no kernel of our own is needed. The
     * host side is pinned (cudaMallocHost) so that the copy back in step 3
     * is truly asynchronous: into pageable memory cudaMemcpyAsync would
     * block the host until the stream got there. */
    float *host = NULL, *dev = NULL;
    cuda_check(cudaMallocHost((void **)&host, COUNT * sizeof(float)), "cudaMallocHost", rank);
    for (int i = 0; i < COUNT; i++)
        host[i] = (float)rank;
    cuda_check(cudaMalloc((void **)&dev, COUNT * sizeof(float)), "cudaMalloc", rank);
    cuda_check(cudaMemcpy(dev, host, COUNT * sizeof(float), cudaMemcpyHostToDevice),
               "cudaMemcpy", rank);

    cudaStream_t stream;
    cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate", rank);

    /* 2. The sum, in place in device memory, ordered on the stream. */
    st = xcoll_allreduce(XCOLL_IN_PLACE, dev, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, stream);
    if (st != XCOLL_OK) {
        fprintf(stderr, "rank %d: xcoll_allreduce: %s\n", rank, xcoll_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* 3. Straight onto the same stream, with no wait in between: the copy
     * starts once the sum is complete. The host waits once, here, for
     * both. */
    cuda_check(cudaMemcpyAsync(host, dev, COUNT * sizeof(float), cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync", rank);
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize", rank);

    /* Small integers add exactly in float32, in any order. */
    float expected = (float)(size * (size - 1) / 2);
    int wrong = 0;
    for (int i = 0; i < COUNT; i++)
        wrong += host[i] != expected;

    /* One line per rank, printed by rank 0 in rank order (see allreduce.c). */
    int mine[2] = {local_rank % ndev, wrong};
    int *all = rank == 0 ? malloc(2 * sizeof(int) * (size_t)size) : NULL;
    if (rank == 0 && all == NULL) {
        fprintf(stderr, "rank 0: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("rank %d (GPU %d): %d elements, expected %g in each: %s (%d wrong)\n", r,
                   all[2 * r], COUNT, expected, all[2 * r + 1] ? "WRONG" : "ok", all[2 * r + 1]);
        fflush(stdout);
        free(all);
    }
    int wrong_all = 0;
    MPI_Allreduce(&wrong, &wrong_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    cudaStreamDestroy(stream);
    cudaFree(dev);
    cudaFreeHost(host);
    xcoll_comm_destroy(comm);
    MPI_Finalize();
    return wrong_all ? 1 : 0;
}
