/* send_recv.c - passing data round a ring, and the deadlock waiting in it.
 *
 * Every rank sends a buffer to its right neighbour and receives one from
 * its left. Written the obvious way, each rank first sends, then
 * receives:
 *     xcoll_send(right); xcoll_recv(left);
 * A small message is copied into the receiver's shared-memory slot and
 * the send returns at once, so this works. A large one is not copied
 * ahead: the receiver reads it straight from the sender's buffer once its
 * receive is posted, and the send returns only then. Every rank sits in
 * its send, none has posted its receive, and nobody ever moves: a
 * deadlock, found here by XCOLL_TIMEOUT (this program sets 2 s), which
 * fails the call and logs what it was waiting for. The fix: post the
 * receive first, or both at once without blocking:
 *     xcoll_irecv(left, &r); xcoll_isend(right, &s); wait for both.
 * Matching: a receive takes the messages from its peer with its tag in
 * the order they were sent; the counts must agree (XCOLL_ERR_TRUNCATED
 * otherwise).
 *
 *   mpicc send_recv.c -lxcoll -o send_recv
 *   mpirun -np 4 ./send_recv
 *
 * The program exits non-zero if the nonblocking ring delivers anything
 * wrong, or if a blocking ring of small messages fails.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>

#define SMALL 16          /* ints: fits a slot */
#define LARGE (1 << 18)   /* ints: 1 MiB, read from the sender's buffer */

static xcoll_comm_t make_comm(double timeout_s)
{
    xcoll_config_t cfg;
    xcoll_comm_t comm;
    xcoll_config_init(&cfg);
    cfg.timeout_s = timeout_s;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    return comm;
}

static int check(const int *buf, int n, int from)
{
    int wrong = 0;
    for (int i = 0; i < n; i++)
        wrong += buf[i] != from * 1000000 + i;
    return wrong;
}

int main(int argc, char **argv)
{
    int rank, size, wrong = 0, all_wrong = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *out = malloc(LARGE * sizeof(int)), *in = malloc(LARGE * sizeof(int));
    for (int i = 0; i < LARGE; i++)
        out[i] = rank * 1000000 + i;

    /* 1. Blocking, small: fine. */
    xcoll_comm_t comm = make_comm(2.0);
    xcoll_status_t st = xcoll_send(out, SMALL, XCOLL_INT32, right, 1, comm, NULL);
    if (st == XCOLL_OK)
        st = xcoll_recv(in, SMALL, XCOLL_INT32, left, 1, comm, NULL);
    wrong += st != XCOLL_OK || check(in, SMALL, left);
    if (rank == 0)
        printf("blocking ring, %zu bytes: %s\n", SMALL * sizeof(int), xcoll_strerror(st));
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. Blocking, large: every rank waits in its send (a ring needs two
     * ranks at least). */
    st = XCOLL_OK;
    if (size > 1)
        st = xcoll_send(out, LARGE, XCOLL_INT32, right, 2, comm, NULL);
    if (st == XCOLL_OK && size > 1)
        st = xcoll_recv(in, LARGE, XCOLL_INT32, left, 2, comm, NULL);
    if (rank == 0 && size > 1)
        printf("blocking ring, %zu bytes: %s%s\n", LARGE * sizeof(int), xcoll_strerror(st),
               st == XCOLL_ERR_TIMEOUT ? " (the deadlock; the log above names the peer)" : "");
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the abandoned sends may still sit at the peers: a new communicator */
    xcoll_comm_destroy(comm);
    comm = make_comm(30.0);

    /* 3. Nonblocking: receive posted, then send, then wait for both. */
    xcoll_request_t r = NULL, s = NULL;
    for (int i = 0; i < LARGE; i++)
        in[i] = -1;
    st = xcoll_irecv(in, LARGE, XCOLL_INT32, left, 3, comm, NULL, &r);
    if (st == XCOLL_OK)
        st = xcoll_isend(out, LARGE, XCOLL_INT32, right, 3, comm, NULL, &s);
    if (st == XCOLL_OK)
        st = xcoll_wait(&r);
    if (st == XCOLL_OK)
        st = xcoll_wait(&s);
    wrong += st != XCOLL_OK || check(in, LARGE, left);
    if (rank == 0)
        printf("nonblocking ring, %zu bytes: %s\n", LARGE * sizeof(int), xcoll_strerror(st));

    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d ranks got something wrong\n", all_wrong == 0 ? "OK" : "FAILED", all_wrong);
    xcoll_comm_destroy(comm);
    free(out), free(in);
    MPI_Finalize();
    return all_wrong == 0 ? 0 : 1;
}
