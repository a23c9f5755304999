/* bcast_reduce.c - the same starting weights everywhere, one metric at the root.
 *
 * Two rooted collectives that every data-parallel job uses:
 *   xcoll_bcast   rank 0 initialises the model's weights and sends them to
 *                 every other rank, so all replicas start identical (each
 *                 rank drawing its own random weights would train N
 *                 different models);
 *   xcoll_reduce  after a step, every rank's loss is summed on rank 0
 *                 alone, which prints the mean; the others need not know
 *                 it (xcoll_allreduce would give it to all of them).
 *
 *   mpicc bcast_reduce.c -lxcoll -o bcast_reduce
 *   mpirun -np 4 ./bcast_reduce
 *
 * How the data travels: a binomial tree from the root. In round k every
 * rank that has the data sends it to the rank 2^k further on, so the
 * number of ranks holding it doubles each round and N ranks are reached
 * in log2(N) rounds; the reduce runs the same tree backwards, adding at
 * every inner rank on the way up. For long messages a pipelined chain
 * (each rank forwards pieces to the next while receiving the rest) keeps
 * every link busy instead; within one node a linear bcast lets every
 * rank read the root's buffer directly. XCOLL_LOG=info shows which ran.
 * The program checks both results and exits non-zero if one is wrong.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>

#define WEIGHTS 1000

int main(int argc, char **argv)
{
    int rank, size, wrong = 0, all_wrong = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    xcoll_comm_t comm;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);

    /* 1. Initial weights: only the root's matter; the others' buffers are
     * overwritten (here they start as garbage on purpose). */
    float *w = malloc(WEIGHTS * sizeof(float));
    srand(1234u + (unsigned)rank);
    for (int i = 0; i < WEIGHTS; i++)
        w[i] = rank == 0 ? (float)(i % 17) * 0.25f : (float)rand();
    if (xcoll_bcast(w, WEIGHTS, XCOLL_FLOAT32, 0, comm, NULL) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < WEIGHTS; i++)
        wrong += w[i] != (float)(i % 17) * 0.25f;

    /* 2. One "training step": each rank's loss, summed at the root. */
    double loss = 1.0 + 0.5 * rank, total = -1;
    if (xcoll_reduce(&loss, rank == 0 ? &total : NULL, 1, XCOLL_FLOAT64, XCOLL_SUM, 0, comm,
                     NULL) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0) {
        /* sum of 1 + 0.5 r over r < size */
        double want = size + 0.25 * size * (size - 1);
        wrong += total != want;
        printf("weights: rank 0's %d values are on all %d ranks\n", WEIGHTS, size);
        printf("mean loss over %d ranks, at rank 0 only: %.3f\n", size, total / size);
    }

    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d wrong\n", all_wrong == 0 ? "OK" : "FAILED", all_wrong);
    xcoll_comm_destroy(comm);
    free(w);
    MPI_Finalize();
    return all_wrong == 0 ? 0 : 1;
}
