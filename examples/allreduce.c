/* allreduce.c - the first xcoll program.
 *
 * Every rank fills a small buffer with its own rank number, then all ranks
 * sum their buffers with one xcoll_allreduce. Afterwards every rank holds
 * the same answer: 0 + 1 + ... + (N-1) in every element.
 *
 *   mpicc allreduce.c -lxcoll -o allreduce
 *   mpirun -np 4 ./allreduce
 *
 * How the sum travels (the "ring" algorithm, used for large buffers):
 * the ranks form a ring, 0 -> 1 -> ... -> N-1 -> 0, and each buffer is cut
 * into N chunks.
 *   1. Reduce-scatter, N-1 steps: each rank sends one chunk to its right
 *      neighbour and adds the chunk arriving from its left into its own
 *      copy. After N-1 steps rank r holds the complete sum of one chunk.
 *   2. Allgather, N-1 more steps: the finished chunks go round the ring
 *      once more, so every rank ends up with every summed chunk.
 * Each rank sends 2(N-1) chunks of size/N bytes: 2(N-1)/N times the buffer,
 * which is nearly 2x and does not grow with N. That is why the ring is the
 * bandwidth-optimal choice for big messages (small ones use algorithms
 * with fewer steps; XCOLL_LOG=info shows which one ran).
 */
#include <mpi.h>     /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 8

/* Prints one line per rank, in rank order. mpirun forwards each rank's
 * output on its own, so lines printed by different ranks can arrive in any
 * order; rank 0 collects them and prints them all. */
#define LINE 256
static void print_in_order(const char *label, const float *buf, int rank, int size)
{
    char line[LINE];
    int n = snprintf(line, LINE, "rank %d %s:", rank, label);
    for (int i = 0; i < COUNT && n < LINE; i++)
        n += snprintf(line + n, (size_t)(LINE - n), " %g", buf[i]);

    char *all = rank == 0 ? malloc((size_t)size * LINE) : NULL;
    MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("%s\n", all + (size_t)r * LINE);
        fflush(stdout);
        free(all);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* An xcoll communicator over the same ranks as MPI_COMM_WORLD. MPI is
     * used only here, to exchange the ranks' network addresses; the
     * allreduce below does not go through MPI. */
    xcoll_comm_t comm;
    xcoll_status_t st = xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm);
    if (st != XCOLL_OK) {
        fprintf(stderr, "rank %d: xcoll_comm_create_mpi: %s\n", rank, xcoll_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    float buf[COUNT];
    for (int i = 0; i < COUNT; i++)
        buf[i] = (float)rank;
    print_in_order("before", buf, rank, size);

    /* XCOLL_IN_PLACE: the input is taken from buf and the sum written back
     * to buf. The last argument (NULL) means host memory, no CUDA stream. */
    st = xcoll_allreduce(XCOLL_IN_PLACE, buf, COUNT, XCOLL_FLOAT32, XCOLL_SUM, comm, NULL);
    if (st != XCOLL_OK) {
        fprintf(stderr, "rank %d: xcoll_allreduce: %s\n", rank, xcoll_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    print_in_order("after ", buf, rank, size);

    if (rank == 0)
        printf("expected %d in every element (0 + 1 + ... + %d)\n", size * (size - 1) / 2,
               size - 1);

    /* an example that teaches must also be right: check, and say so */
    int wrong = 0, all_wrong = 0;
    for (int i = 0; i < COUNT; i++)
        wrong += buf[i] != (float)(size * (size - 1) / 2);
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all_wrong != 0)
        printf("FAILED: %d elements differ\n", all_wrong);

    xcoll_comm_destroy(comm);
    MPI_Finalize();
    return all_wrong == 0 ? 0 : 1;
}
