/* gather_scatter.c - a root hands out work and collects the results.
 *
 * xcoll_scatter cuts the root's buffer into one block per rank and gives
 * block r to rank r; xcoll_gather is the reverse, block r of the root's
 * buffer coming from rank r. With pieces of their own sizes the
 * v-variants do the same (xcoll_scatterv, xcoll_gatherv): only the root
 * knows every rank's count and where its piece lies, each other rank
 * knows its own. Here the root deals out numbers, rank r getting r + 1
 * of them (an uneven split, as when work items have different costs),
 * every rank squares its numbers, and the root collects the squares.
 *
 *   mpicc gather_scatter.c -lxcoll -o gather_scatter
 *   mpirun -np 4 ./gather_scatter
 *
 * How the data travels: the root exchanges one message with every other
 * rank (linear), so its link carries everything and the others only
 * their own piece; for small equal pieces on many ranks a binomial tree
 * forwards pieces in log2(N) rounds instead (XCOLL_LOG=info shows which
 * ran). The program checks the squares at the root and exits non-zero if
 * one is wrong.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, wrong = 0, all_wrong = 0;
    const int root = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    xcoll_comm_t comm;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);

    /* 1. Equal blocks: two numbers per rank. */
    int pair[2], *all = malloc((size_t)size * 2 * sizeof(int));
    for (int i = 0; i < 2 * size; i++)
        all[i] = i;
    if (xcoll_scatter(all, pair, 2, XCOLL_INT32, root, comm, NULL) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    wrong += pair[0] != 2 * rank || pair[1] != 2 * rank + 1;
    pair[0] *= pair[0], pair[1] *= pair[1];
    if (xcoll_gather(pair, all, 2, XCOLL_INT32, root, comm, NULL) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == root)
        for (int i = 0; i < 2 * size; i++)
            wrong += all[i] != i * i;

    /* 2. Uneven pieces: rank r gets r + 1 numbers. Counts and
     * displacements matter at the root only. */
    size_t *counts = malloc((size_t)size * sizeof(size_t));
    size_t *displs = malloc((size_t)size * sizeof(size_t)), total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (size_t)r + 1;
        displs[r] = total;
        total += counts[r];
    }
    int *work = malloc(total * sizeof(int)), *piece = malloc(counts[rank] * sizeof(int));
    for (size_t i = 0; i < total; i++)
        work[i] = (int)i + 1;
    if (xcoll_scatterv(work, counts, displs, piece, counts[rank], XCOLL_INT32, root, comm, NULL) !=
        XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < counts[rank]; i++)
        piece[i] *= piece[i];
    if (xcoll_gatherv(piece, counts[rank], work, counts, displs, XCOLL_INT32, root, comm, NULL) !=
        XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == root) {
        printf("squares collected at rank %d (rank r sent r + 1 of them):", root);
        for (size_t i = 0; i < total; i++) {
            wrong += work[i] != (int)((i + 1) * (i + 1));
            printf(" %d", work[i]);
        }
        printf("\n");
    }

    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == root)
        printf("%s: %d wrong\n", all_wrong == 0 ? "OK" : "FAILED", all_wrong);
    xcoll_comm_destroy(comm);
    free(all), free(counts), free(displs), free(work), free(piece);
    MPI_Finalize();
    return all_wrong == 0 ? 0 : 1;
}
