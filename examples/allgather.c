/* allgather.c - every rank gets every rank's piece, in rank order.
 *
 * Each rank holds a few values of its own (here: its rank and a word),
 * and afterwards every rank holds all of them, block r from rank r,
 * whatever order the messages arrived in. That is how a sharded model
 * gathers its parameters, or how ranks learn each other's sizes before
 * an exchange. xcoll_allgatherv does the same when the pieces differ in
 * size: rank r here also contributes r + 1 values, and the receive
 * counts and displacements say where each rank's piece goes.
 *
 *   mpicc allgather.c -lxcoll -o allgather
 *   mpirun -np 4 ./allgather
 *
 * How the pieces travel: with the ring algorithm, in step k (1..N-1)
 * each rank passes the piece it received in step k-1 to its right
 * neighbour, so after N-1 steps all N pieces are everywhere, each rank
 * having sent (N-1) pieces; recursive doubling swaps ever larger groups
 * of pieces with rank r XOR 2^k in log2 N steps; within one node xcoll
 * uses "direct": every rank writes its piece to every other in one step.
 * All three send the same bytes; they differ in steps (latency).
 * XCOLL_LOG=info shows which one ran. The program checks the result and
 * exits non-zero if any block is wrong.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>

#define PIECE 4 /* values per rank in the allgather */

int main(int argc, char **argv)
{
    int rank, size, wrong = 0, all_wrong = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    xcoll_comm_t comm;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);

    /* 1. Equal pieces: block r of `all` comes from rank r. */
    int mine[PIECE], *all = malloc((size_t)size * PIECE * sizeof(int));
    for (int i = 0; i < PIECE; i++)
        mine[i] = rank * 100 + i;
    if (xcoll_allgather(mine, all, PIECE, XCOLL_INT32, comm, NULL) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < PIECE; i++)
            wrong += all[r * PIECE + i] != r * 100 + i;
    if (rank == 0) { /* any rank could print: they all hold the same */
        printf("allgather, every rank holds:");
        for (int r = 0; r < size; r++)
            printf(" [%d..%d]", all[r * PIECE], all[r * PIECE + PIECE - 1]);
        printf("\n");
        fflush(stdout);
    }

    /* 2. Pieces of their own sizes: rank r sends r + 1 values; every rank
     * knows all the counts and chooses where each piece lands. */
    size_t *counts = malloc((size_t)size * sizeof(size_t));
    size_t *displs = malloc((size_t)size * sizeof(size_t)), total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (size_t)r + 1;
        displs[r] = total;
        total += counts[r];
    }
    int *vmine = malloc(counts[rank] * sizeof(int)), *vall = malloc(total * sizeof(int));
    for (size_t i = 0; i < counts[rank]; i++)
        vmine[i] = rank;
    if (xcoll_allgatherv(vmine, counts[rank], vall, counts, displs, XCOLL_INT32, comm, NULL) !=
        XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < counts[r]; i++)
            wrong += vall[displs[r] + i] != r;
    if (rank == 0) {
        printf("allgatherv, every rank holds:");
        for (size_t i = 0; i < total; i++)
            printf(" %d", vall[i]);
        printf("\n");
        fflush(stdout);
    }

    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d values in the wrong place\n", all_wrong == 0 ? "OK" : "FAILED", all_wrong);
    xcoll_comm_destroy(comm);
    free(all), free(counts), free(displs), free(vmine), free(vall);
    MPI_Finalize();
    return all_wrong == 0 ? 0 : 1;
}
