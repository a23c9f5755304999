/* test_handoff: a legal program that goes from xcoll straight into MPI and
 * back, round after round, across nodes. Each round every rank does an
 * xcoll alltoall of large blocks (above 8 KiB, so each rank waits for its
 * peers' end-of-collective acknowledgements) and then, at once, an MPI barrier
 * and an MPI allreduce (whether any rank failed). A rank that has returned from
 * xcoll no longer progresses it: nothing in xcoll may wait for such a rank
 * to answer. Before 2026-12-06 xcoll flushed the UCX worker after a large
 * collective, which over TCP waits for every peer sent to to answer, and
 * a peer already in MPI never did: 2 hangs in ~160 jobs of xcoll-perf
 * (bench/calibrate_model.py), ranks of one node in ucx_flush, the other
 * node's in MPI_Barrier.
 *
 * --stream N: round r is 1 + r % N broadcasts from rank 0 instead, the
 * other ranks starting --lag S seconds late, then MPI. The root of a broadcast
 * waits for nobody, so rank 0 runs ahead into a socket the late ranks do
 * not read; UCX over TCP then keeps the tail of a message whose socket was
 * full in its own buffer, reports the message sent, and writes the tail
 * only when rank 0 progresses UCX again, which a rank in MPI does not: its
 * receivers waited for it forever (xcoll's drainer writes it: comm.h; with
 * XCOLL_DRAIN=0 and small socket buffers, UCX_TCP_SNDBUF=16k, the round
 * whose last message no longer fits the sockets hangs: the counts from 1
 * to N find it).
 *
 * With --timeout S a wait of that kind fails after S seconds instead of
 * hanging (the run then fails); every round's data is checked.
 * Usage: test_handoff [--rounds N] [--block BYTES] [--stream N [--lag S]]
 *                     [--timeout S]
 * Prints "test_handoff: rank R: PASS|FAIL ..." lines; exit 0 when this rank
 * saw no failure. */
#include <mpi.h>
#include "xcoll.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t value(int from, int to, int round, size_t i)
{
    return (uint32_t)from * 2654435761u ^ (uint32_t)to * 40503u ^ (uint32_t)round * 977u ^
           (uint32_t)i;
}

int main(int argc, char **argv)
{
    int rank, size, i, round, rounds = 200, bad = 0, allbad = 0, stream = 0;
    double lag = 0;
    long block = 64 * 1024;
    double timeout = 10;
    size_t n, k;
    xcoll_config_t cfg;
    xcoll_comm_t comm = NULL;
    xcoll_status_t st;
    uint32_t *a, *b;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--block") == 0)
            block = atol(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--stream") == 0)
            stream = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--lag") == 0)
            lag = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--timeout") == 0)
            timeout = atof(argv[++i]);
        else
            break;
    }
    if (i != argc || rounds < 1 || block < 4 || timeout <= 0 || stream < 0 || lag < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: test_handoff [--rounds N] [--block BYTES] "
                            "[--stream N [--lag S]] [--timeout S]\n");
        MPI_Finalize();
        return 2;
    }
    xcoll_config_init(&cfg);
    cfg.timeout_s = timeout;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK) {
        fprintf(stderr, "test_handoff r%d: FAIL: xcoll_comm_create_mpi\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    n = (size_t)block / sizeof(uint32_t);
    a = malloc(n * sizeof(uint32_t) * (size_t)size);
    b = malloc(n * sizeof(uint32_t) * (size_t)size);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "test_handoff r%d: FAIL: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (round = 0; round < rounds && !allbad; round++) {
        int peer;
        for (peer = 0; peer < size; peer++)
            for (k = 0; k < n; k++)
                a[(size_t)peer * n + k] = value(rank, peer, round, k);
        memset(b, 0, n * sizeof(uint32_t) * (size_t)size);
        if (stream > 0) {
            int j;
            if (rank != 0)
                usleep((useconds_t)(lag * 1e6));
            for (j = 0; j <= round % stream; j++) {
                st = xcoll_bcast(a, n, XCOLL_UINT32, 0, comm, NULL);
                if (st != XCOLL_OK) {
                    printf("test_handoff: rank %d: FAIL round %d bcast %d: %s\n", rank, round, j,
                           xcoll_strerror(st));
                    bad = 1;
                    break;
                }
            }
            if (!bad && rank != 0)
                for (k = 0; k < n; k++)
                    if (a[k] != value(0, 0, round, k)) {
                        printf("test_handoff: rank %d: FAIL round %d: bcast element %zu\n", rank, round, k);
                        bad = 1;
                        break;
                    }
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            continue;
        }
        st = xcoll_alltoall(a, b, n, XCOLL_UINT32, comm, NULL);
        if (st != XCOLL_OK) {
            printf("test_handoff: rank %d: FAIL round %d: xcoll_alltoall: %s\n", rank, round,
                   xcoll_strerror(st));
            bad = 1;
        }
        for (peer = 0; st == XCOLL_OK && peer < size && !bad; peer++)
            for (k = 0; k < n; k++)
                if (b[(size_t)peer * n + k] != value(peer, rank, round, k)) {
                    printf("test_handoff: rank %d: FAIL round %d: element %zu from rank %d is "
                           "%u, want %u\n", rank, round, k, peer, b[(size_t)peer * n + k],
                           value(peer, rank, round, k));
                    bad = 1;
                    break;
                }
        /* straight into MPI: this rank stops progressing xcoll here; and
         * every rank learns whether any failed, so all stop together */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    if (!bad && stream > 0)
        printf("test_handoff: rank %d: PASS %d rounds of 1 to %d %ld-byte broadcasts from rank 0 "
               "(the others %g s late), each followed at once by MPI%s\n", rank, rounds, stream,
               block, lag, allbad ? " (another rank failed)" : "");
    else if (!bad)
        printf("test_handoff: rank %d: PASS %d rounds of a %ld-byte-block alltoall, each "
               "followed at once by MPI%s\n", rank, rounds, block,
               allbad ? " (another rank failed)" : "");
    free(a);
    free(b);
    st = xcoll_comm_destroy(comm);
    if (st != XCOLL_OK && !allbad) {
        printf("test_handoff: rank %d: FAIL xcoll_comm_destroy: %s\n", rank, xcoll_strerror(st));
        bad = 1;
    }
    MPI_Finalize();
    return bad || allbad;
}
