/* test_leave: a rank that destroys its communicator and leaves is not a
 * lost rank, unless someone still waits for its data.
 *
 * Four ranks on two nodes (0 and 1 on one, 2 and 3 on the other); every
 * pair has talked (an alltoall) before the part under test, unless
 * --no-warmup: then only the gather's own messages ever cross, and the
 * connections that carried none must not look lost either.
 *
 *   --mode finished  a legal program: rank 0 gathers, rank 1 comes late
 *                    (half the timeout), ranks 2 and 3 send their part,
 *                    destroy the communicator and leave at once (their
 *                    connections to rank 0 close). Rank 0's gather must
 *                    complete, right: nobody it waits for is gone, though
 *                    it waited long enough to listen for lost peers.
 *   --mode early     an erroneous one: ranks 2 and 3 destroy the
 *                    communicator without entering the gather. Rank 0
 *                    awaits their data: its gather must fail with
 *                    XCOLL_ERR_PEER_LOST well before the timeout.
 *
 * Ranks 2 and 3 create DIR/left.R once their destroy returned; rank 0
 * checks those exist after its gather, or the run tested nothing.
 * Usage: test_leave --mode finished|early --dir DIR [--timeout S] [--no-warmup]
 * Prints "test_leave: PASS ..." / "test_leave: FAIL ..." lines; exit 0
 * when this rank saw no failure. */
#include <mpi.h>
#include "xcoll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COUNT 1000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bad;

static void check(int rank, int ok, const char *what)
{
    printf("test_leave: rank %d: %s %s\n", rank, ok ? "PASS" : "FAIL", what);
    fflush(stdout);
    bad += !ok;
}

static int exists(const char *dir, int r)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/left.%d", dir, r);
    return access(path, F_OK) == 0;
}

int main(int argc, char **argv)
{
    const char *mode = NULL, *dir = NULL;
    double timeout = 4, t, took;
    int rank, size, i, early, warmup = 1;
    char host[64] = {0}, hosts[4][64];
    char text[256];
    xcoll_config_t cfg;
    xcoll_comm_t comm = NULL;
    xcoll_status_t st;
    int *a, *b;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-warmup") == 0)
            warmup = 0;
        else if (i + 1 < argc && strcmp(argv[i], "--mode") == 0)
            mode = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--dir") == 0)
            dir = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--timeout") == 0)
            timeout = atof(argv[++i]);
        else
            break;
    }
    if (i != argc || mode == NULL || dir == NULL || timeout <= 0 ||
        (strcmp(mode, "finished") != 0 && strcmp(mode, "early") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: test_leave --mode finished|early --dir DIR [--timeout S] "
                            "[--no-warmup]\n");
        MPI_Finalize();
        return 2;
    }
    early = strcmp(mode, "early") == 0;
    if (size != 4) {
        if (rank == 0)
            printf("test_leave: FAIL: needs 4 ranks, has %d\n", size);
        MPI_Finalize();
        return 1;
    }
    /* the leavers must be on the other node, or no connection closes */
    gethostname(host, sizeof(host) - 1);
    MPI_Allgather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, MPI_COMM_WORLD);
    if (strcmp(hosts[0], hosts[1]) != 0 || strcmp(hosts[2], hosts[3]) != 0 ||
        strcmp(hosts[0], hosts[2]) == 0) {
        if (rank == 0)
            printf("test_leave: FAIL: needs ranks 0,1 on one node and 2,3 on another; "
                   "have %s %s %s %s\n", hosts[0], hosts[1], hosts[2], hosts[3]);
        MPI_Finalize();
        return 1;
    }

    xcoll_config_init(&cfg);
    cfg.timeout_s = timeout;
    /* the warm-up's premise, every pair talks: hier, the default for
     * small blocks at 2 nodes x 2, sends across nodes between the
     * leaders only, so rank 0 would never have heard from rank 3 */
    cfg.rules = "alltoall:0-inf:pairwise";
    cfg.rules_source = "test_leave";
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK) {
        fprintf(stderr, "test_leave r%d: FAIL: xcoll_comm_create_mpi\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    a = malloc(sizeof(int) * COUNT * 4);
    b = malloc(sizeof(int) * COUNT * 4);
    if (a == NULL || b == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (i = 0; i < COUNT * 4; i++)
        a[i] = rank * 100000 + i;
    if (warmup) {
        st = xcoll_alltoall(a, b, COUNT, XCOLL_INT32, comm, NULL);
        check(rank, st == XCOLL_OK, "warm-up alltoall");
    }
    for (i = 0; i < COUNT; i++)
        a[i] = rank * 100000 + i;

    if (rank >= 2) {
        /* the leavers: send their part (or not), destroy, leave */
        if (!early) {
            st = xcoll_gather(a, NULL, COUNT, XCOLL_INT32, 0, comm, NULL);
            check(rank, st == XCOLL_OK, "gather (a leaf, then it leaves)");
        }
        st = xcoll_comm_destroy(comm);
        check(rank, st == XCOLL_OK, "destroy");
        snprintf(text, sizeof(text), "%s/left.%d", dir, rank);
        fclose(fopen(text, "w"));
    } else {
        if (rank == 1 && !early) {
            struct timespec late = {(time_t)(timeout / 2),
                                    (long)((timeout / 2 - (double)(time_t)(timeout / 2)) * 1e9)};
            nanosleep(&late, NULL);
        }
        t = now_s();
        st = xcoll_gather(a, rank == 0 ? b : NULL, COUNT, XCOLL_INT32, 0, comm, NULL);
        took = now_s() - t;
        if (rank == 0 && !early) {
            int wrong = 0;
            snprintf(text, sizeof(text), "gather waited %.2f s for rank 1 while 2 and 3 left: %s",
                     took, xcoll_strerror(st));
            check(rank, st == XCOLL_OK, text);
            for (i = 0; st == XCOLL_OK && i < COUNT * 4; i++)
                wrong += b[i] != (i / COUNT) * 100000 + i % COUNT;
            snprintf(text, sizeof(text), "gather's data (%d wrong)", wrong);
            check(rank, st == XCOLL_OK && wrong == 0, text);
            check(rank, took > timeout / 4, "it waited long enough to listen for lost ranks");
            check(rank, exists(dir, 2) && exists(dir, 3),
                  "ranks 2 and 3 had destroyed the communicator before it completed");
        } else if (rank == 0) {
            snprintf(text, sizeof(text), "gather awaiting ranks that left failed after %.2f s: "
                     "%s", took, xcoll_strerror(st));
            check(rank, st == XCOLL_ERR_PEER_LOST && took < timeout * 0.75, text);
        } else {
            check(rank, st == XCOLL_OK, "gather (a leaf)");
        }
        st = xcoll_comm_destroy(comm);
        check(rank, st == XCOLL_OK, "destroy");
    }
    free(a);
    free(b);
    MPI_Finalize();
    return bad != 0;
}
