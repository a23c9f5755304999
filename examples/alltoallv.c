/* alltoallv.c - routing tokens to experts, as a mixture-of-experts layer does.
 *
 * Each rank holds TOKENS tokens (a few floats each) and hosts one expert.
 * A router picks an expert for every token, so every rank has some tokens
 * for every other rank, and how many changes from step to step: the
 * exchange matrix (row = sender, column = receiver) is uneven and new each
 * time. One MoE layer is then three collectives:
 *   1. xcoll_alltoall of the counts: rank r tells rank j how many tokens
 *      it will send, so j knows how much it receives (its recvcounts).
 *   2. xcoll_alltoallv of the tokens, grouped by destination: block j of
 *      the send buffer (sendcounts[j] tokens at sdispls[j]) lands in block
 *      r of rank j's receive buffer. Blocks may be empty.
 *   3. After the experts ran, the reverse xcoll_alltoallv: every token goes
 *      back where it came from (the counts swap roles).
 *
 *   mpicc alltoallv.c -lxcoll -o alltoallv
 *   mpirun -np 4 ./alltoallv
 *
 * How the data travels (the "pairwise" algorithm): in step k (1..N-1)
 * rank r sends its block for r+k and receives the block of r-k, so every
 * pair meets once and each rank sends exactly the tokens it routes
 * elsewhere, nothing twice; an empty block is no message at all. A few
 * steps are in flight at once so small blocks do not pay one latency
 * each. XCOLL_TUNE=alltoallv:0-inf:scattered posts every receive at once
 * instead, which suits very skewed matrices (XCOLL_LOG=info shows which
 * ran). Counts and displacements are in elements, as size_t arrays.
 *
 * The program checks that every token came back transformed by the right
 * expert and exits non-zero otherwise.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKENS 12 /* per rank */
#define HIDDEN 4  /* floats per token */
#define STEPS 3

/* The router: the expert (= rank) token t of rank r goes to in step s.
 * Skewed on purpose: expert 0 is popular. */
static int route(int r, int t, int s, int size)
{
    unsigned h = (unsigned)(r * 7919 + t * 104729 + s * 1299709);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return h % 3 == 0 ? 0 : (int)(h % (unsigned)size);
}

/* Rank 0 prints every rank's line, in rank order. */
static void print_in_order(const char *line, int rank, int size)
{
    char *all = rank == 0 ? malloc((size_t)size * 256) : NULL;
    MPI_Gather(line, 256, MPI_CHAR, all, 256, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("%s\n", all + (size_t)r * 256);
        fflush(stdout);
        free(all);
    }
}

static int check(xcoll_status_t st, const char *what)
{
    if (st != XCOLL_OK)
        fprintf(stderr, "%s failed: %s\n", what, xcoll_strerror(st));
    return st == XCOLL_OK;
}

int main(int argc, char **argv)
{
    int rank, size, wrong = 0, all_wrong = 0, ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    xcoll_comm_t comm;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm) != XCOLL_OK) {
        fprintf(stderr, "rank %d: xcoll_comm_create_mpi failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    size_t *scount = calloc((size_t)size, sizeof(size_t)), *sdispl = calloc((size_t)size, sizeof(size_t));
    size_t *rcount = calloc((size_t)size, sizeof(size_t)), *rdispl = calloc((size_t)size, sizeof(size_t));
    size_t *fill = calloc((size_t)size, sizeof(size_t));
    float tokens[TOKENS][HIDDEN], back[TOKENS][HIDDEN];
    float *sendbuf = malloc(sizeof(tokens)), *recvbuf = NULL;
    int slot[TOKENS]; /* where token t sits in sendbuf */

    for (int step = 0; step < STEPS && ok; step++) {
        /* this rank's tokens: the value says whose token it is */
        for (int t = 0; t < TOKENS; t++)
            for (int h = 0; h < HIDDEN; h++)
                tokens[t][h] = (float)(rank * 1000 + t * 10 + h);

        /* 1. route and count; exchange the counts (one per pair) */
        memset(scount, 0, (size_t)size * sizeof(size_t));
        for (int t = 0; t < TOKENS; t++)
            scount[route(rank, t, step, size)]++;
        ok = check(xcoll_alltoall(scount, rcount, 1, XCOLL_UINT64, comm, NULL), "xcoll_alltoall");

        /* group by destination: block j starts after blocks 0..j-1 */
        size_t total_in = 0;
        for (int j = 0; j < size; j++) {
            sdispl[j] = j == 0 ? 0 : sdispl[j - 1] + scount[j - 1] * HIDDEN;
            rdispl[j] = total_in;
            total_in += rcount[j] * HIDDEN;
            fill[j] = 0;
        }
        for (int t = 0; t < TOKENS; t++) {
            int e = route(rank, t, step, size);
            slot[t] = (int)(sdispl[e] / HIDDEN + fill[e]++);
            memcpy(sendbuf + (size_t)slot[t] * HIDDEN, tokens[t], sizeof(tokens[t]));
        }
        /* counts in floats, not tokens: a token is HIDDEN elements */
        for (int j = 0; j < size; j++) {
            scount[j] *= HIDDEN;
            rcount[j] *= HIDDEN;
        }

        /* 2. tokens to their experts */
        recvbuf = realloc(recvbuf, (total_in + 1) * sizeof(float));
        if (ok)
            ok = check(xcoll_alltoallv(sendbuf, scount, sdispl, recvbuf, rcount, rdispl,
                                       XCOLL_FLOAT32, comm, NULL), "xcoll_alltoallv");

        /* the expert on this rank: multiply by (rank + 1) */
        for (size_t i = 0; i < total_in; i++)
            recvbuf[i] *= (float)(rank + 1);

        /* 3. back home: what came from j returns to j */
        if (ok)
            ok = check(xcoll_alltoallv(recvbuf, rcount, rdispl, sendbuf, scount, sdispl,
                                       XCOLL_FLOAT32, comm, NULL), "xcoll_alltoallv (back)");

        for (int t = 0; t < TOKENS; t++) {
            int e = route(rank, t, step, size);
            memcpy(back[t], sendbuf + (size_t)slot[t] * HIDDEN, sizeof(back[t]));
            for (int h = 0; h < HIDDEN; h++)
                wrong += back[t][h] != tokens[t][h] * (float)(e + 1);
        }

        char line[256];
        int n = snprintf(line, sizeof(line), "step %d rank %d sends tokens to ranks:", step, rank);
        for (int j = 0; j < size && n < (int)sizeof(line); j++)
            n += snprintf(line + n, sizeof(line) - (size_t)n, " %zu", scount[j] / HIDDEN);
        print_in_order(line, rank, size);
        /* a failure anywhere stops every rank, not just the one that saw it */
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }

    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d tokens came back wrong\n", all_wrong == 0 && ok ? "OK" : "FAILED",
               all_wrong);
    xcoll_comm_destroy(comm);
    free(scount), free(sdispl), free(rcount), free(rdispl), free(fill);
    free(sendbuf), free(recvbuf);
    MPI_Finalize();
    return all_wrong == 0 && ok ? 0 : 1;
}
