/* reduce_scatter.c - each rank keeps the sum of its own slice.
 *
 * Every rank holds a full vector (say, the gradients of all parameters),
 * cut into as many blocks as there are ranks. xcoll_reduce_scatter sums
 * the vectors and leaves block r of the sum on rank r only. That is what
 * sharded training (ZeRO, FSDP) does with gradients: a rank updates only
 * the parameters it owns, so it needs only their reduced gradients; it
 * receives a 1/N slice instead of the whole sum.
 *
 *   mpicc reduce_scatter.c -lxcoll -o reduce_scatter
 *   mpirun -np 4 ./reduce_scatter
 *
 * How the data travels (ring): in step k (1..N-1) rank r sends one block
 * of partial sums to its right neighbour and adds the block arriving from
 * its left; after N-1 steps rank r holds block r summed over all ranks.
 * Each rank sends (N-1)/N of its vector, half of what an allreduce sends:
 * the ring allreduce is exactly this followed by an allgather of the
 * finished blocks, which the program checks by doing it.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 6 /* elements per rank's block */

int main(int argc, char **argv)
{
    int rank, size, wrong = 0, all_wrong = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    xcoll_comm_t comm;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);

    const size_t n = (size_t)size * BLOCK;
    int *grad = malloc(n * sizeof(int)), mine[BLOCK];
    int *gathered = malloc(n * sizeof(int)), *full = malloc(n * sizeof(int));
    /* element i of rank r's vector */
    for (size_t i = 0; i < n; i++)
        grad[i] = (rank + 1) * 10 + (int)i;

    /* block `rank` of the sum, and nothing else, lands in mine */
    if (xcoll_reduce_scatter(grad, mine, BLOCK, XCOLL_INT32, XCOLL_SUM, comm, NULL) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < BLOCK; i++) {
        size_t at = (size_t)rank * BLOCK + (size_t)i;
        wrong += mine[i] != 10 * size * (size + 1) / 2 + size * (int)at;
    }

    /* reduce_scatter + allgather = allreduce */
    if (xcoll_allgather(mine, gathered, BLOCK, XCOLL_INT32, comm, NULL) != XCOLL_OK ||
        xcoll_allreduce(grad, full, n, XCOLL_INT32, XCOLL_SUM, comm, NULL) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < n; i++)
        wrong += gathered[i] != full[i];

    /* rank 0 shows every rank's slice, in rank order */
    int *slices = rank == 0 ? malloc(n * sizeof(int)) : NULL;
    MPI_Gather(mine, BLOCK, MPI_INT, slices, BLOCK, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            printf("rank %d keeps elements %d..%d of the sum:", r, r * BLOCK, r * BLOCK + BLOCK - 1);
            for (int i = 0; i < BLOCK; i++)
                printf(" %d", slices[r * BLOCK + i]);
            printf("\n");
        }
        free(slices);
    }
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d wrong (allgather of the slices %s the allreduce)\n",
               all_wrong == 0 ? "OK" : "FAILED", all_wrong, all_wrong == 0 ? "equals" : "differs from");
    xcoll_comm_destroy(comm);
    free(grad), free(gathered), free(full);
    MPI_Finalize();
    return all_wrong == 0 ? 0 : 1;
}
