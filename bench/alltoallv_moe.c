/* bench/alltoallv_moe: what a new exchange matrix costs an alltoallv.
 *
 * MoE routing sends each rank's tokens to the ranks holding their experts,
 * so the counts of the alltoallv change every step. xcoll caches a
 * schedule per set of counts; a new matrix costs a build. This times, side
 * by side in one job (alternating, after an MPI_Barrier each):
 *   xcoll, new matrix every call   (a build each time)
 *   xcoll, a few matrices repeated (cached)
 *   MPI_Alltoallv, new matrix      (Open MPI's, for scale)
 * for an average of TOKENS elements (float32) per pair, the matrix skewed
 * as routing makes it (a few hot experts, some empty blocks).
 *
 * Usage: mpirun -np P bench/alltoallv_moe [-t TOKENS] [-n ITERS] [-a ALGO]
 *   -a pairwise|scattered sets XCOLL_TUNE for the alltoallv.
 * Prints one line per mode: median over ranks' mean time per call (us),
 * the slowest rank's, and the build cost (new - repeated). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcoll.h"

/* "New" cycles through NMAT matrices, twice the schedule cache (32), so
 * every call builds; "repeated" through NREP, which stay cached. */
#define NMAT 64
#define NREP 8

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* M[m][i*P+j]: tokens rank i sends to rank j in matrix m; every rank
 * draws the same matrices. Hot ranks get 4x, a quarter of blocks are 0. */
static void draw(size_t *M, int P, size_t tokens)
{
    int i, j;
    for (i = 0; i < P; i++)
        for (j = 0; j < P; j++) {
            uint64_t r = rnd();
            size_t w = r % 4 == 0 ? 0 : (size_t)(r >> 8) % (2 * tokens + 1);
            M[i * P + j] = j % 4 == 0 ? 4 * w : w;
        }
}

int main(int argc, char **argv)
{
    int rank, P, iters = 200, it, m, i, mode;
    size_t tokens = 256;
    const char *algo = NULL;
    xcoll_comm_t comm;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t"))
            tokens = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-n"))
            iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-a"))
            algo = argv[i + 1];
    }
    if (algo != NULL) {
        char tune[64];
        snprintf(tune, sizeof(tune), "alltoallv:0-inf:%s", algo);
        setenv("XCOLL_TUNE", tune, 1);
    }
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);

    size_t *M = malloc((size_t)NMAT * (size_t)P * (size_t)P * sizeof(size_t));
    size_t *sc = malloc((size_t)NMAT * (size_t)P * 4 * sizeof(size_t)), maxs = 0, maxr = 0;
    int *isc = malloc((size_t)NMAT * (size_t)P * 4 * sizeof(int));
    for (m = 0; m < NMAT; m++) {
        size_t *Mm = M + (size_t)m * (size_t)P * (size_t)P, *v = sc + (size_t)m * (size_t)P * 4;
        size_t so = 0, ro = 0;
        draw(Mm, P, tokens);
        for (i = 0; i < P; i++) {
            v[i] = Mm[rank * P + i];          /* sendcounts */
            v[P + i] = so;                    /* sdispls */
            v[2 * P + i] = Mm[i * P + rank];  /* recvcounts */
            v[3 * P + i] = ro;                /* rdispls */
            so += v[i];
            ro += v[2 * P + i];
        }
        for (i = 0; i < 4 * P; i++)
            isc[(size_t)m * (size_t)P * 4 + (size_t)i] = (int)v[i];
        maxs = so > maxs ? so : maxs;
        maxr = ro > maxr ? ro : maxr;
    }
    float *sbuf = calloc(maxs + 1, sizeof(float)), *rbuf = calloc(maxr + 1, sizeof(float));
    double t[3] = {0, 0, 0};
    for (it = -10; it < iters; it++) {
        for (mode = 0; mode < 3; mode++) {
            const int mi = mode == 1 ? (it + 10) % NREP : (it + 10) % NMAT;
            const size_t *v = sc + (size_t)mi * (size_t)P * 4;
            const int *iv = isc + (size_t)mi * (size_t)P * 4;
            double t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            if (mode < 2) {
                if (xcoll_alltoallv(sbuf, v, v + P, rbuf, v + 2 * P, v + 3 * P, XCOLL_FLOAT32,
                                    comm, NULL) != XCOLL_OK)
                    MPI_Abort(MPI_COMM_WORLD, 1);
            } else {
                MPI_Alltoallv(sbuf, iv, iv + P, MPI_FLOAT, rbuf, iv + 2 * P, iv + 3 * P, MPI_FLOAT,
                              MPI_COMM_WORLD);
            }
            if (it >= 0)
                t[mode] += MPI_Wtime() - t0;
        }
    }
    double slow[3];
    for (mode = 0; mode < 3; mode++)
        t[mode] = t[mode] / iters * 1e6;
    MPI_Reduce(t, slow, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# alltoallv, %d ranks, ~%zu float32 per pair (skewed, 1/4 empty), %d calls, "
               "algorithm %s\n", P, tokens, iters, algo != NULL ? algo : "(default)");
        printf("%-28s %12s\n", "mode", "slowest us");
        printf("%-28s %12.2f\n", "xcoll, new matrix per call", slow[0]);
        printf("%-28s %12.2f\n", "xcoll, cached matrices", slow[1]);
        printf("%-28s %12.2f\n", "MPI_Alltoallv, new matrix", slow[2]);
        printf("build cost (new - cached): %.2f us = %.1f%% of the call\n", slow[0] - slow[1],
               100.0 * (slow[0] - slow[1]) / slow[0]);
    }
    xcoll_comm_destroy(comm);
    free(M), free(sc), free(isc), free(sbuf), free(rbuf);
    MPI_Finalize();
    return 0;
}
