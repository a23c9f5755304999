/* overlap.c - hiding gradient allreduces behind the backward pass.
 *
 * Data-parallel training computes gradients layer by layer, last layer
 * first, and every rank must end with the sum of every rank's gradients.
 * Waiting until the whole backward pass is done and then reducing
 * everything puts the communication after the compute. Instead, frameworks
 * (PyTorch's DDP) group gradients into buckets and start a nonblocking
 * allreduce as soon as a bucket is complete, so the reduction of the last
 * layers runs while the earlier ones are still being computed; at the
 * end only the last bucket's reduction is left to wait for.
 *
 *   mpicc overlap.c -lxcoll -o overlap
 *   mpirun -np 2 ./overlap
 *
 * Three ways, each for three bucket sizes:
 *   sequential    compute every layer, then one allreduce per bucket
 *   overlapped    xcoll_iallreduce per bucket as soon as it is full, one
 *                 xcoll_wait for all at the end; nothing moves the data
 *                 while the layers compute (no xcoll call is made then)
 *   + thread      the same on a communicator with the progress thread
 *                 (xcoll_config_t.progress_thread), which moves the data
 *                 while the caller computes
 * The "compute" sleeps, as the host does while a GPU runs the layers:
 * then a core is free for the communication (bench/overlap shows what
 * happens when the compute spins on every core instead). Small buckets
 * start communicating early but pay a latency each; large ones start
 * late. The times show where the balance lies here. The program checks
 * every reduced gradient and exits non-zero if one is wrong.
 */
#include <mpi.h> /* before xcoll.h: this defines xcoll_comm_create_mpi() */
#include <xcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LAYERS 16
#define LAYER_FLOATS (1 << 18) /* 1 MiB of gradients per layer */
#define LAYER_MS 0.4           /* compute per layer */

static void compute_layer(void)
{
    struct timespec t = {0, (long)(LAYER_MS * 1e6)};
    nanosleep(&t, NULL);
}

/* The gradient of element i of layer l on this rank. */
static float grad(int rank, int l, size_t i)
{
    return (float)((rank + 1) * (l + 1)) + (float)(i % 7);
}

static int wrong_in(const float *g, int size)
{
    int wrong = 0;
    for (int l = 0; l < LAYERS; l++)
        for (size_t i = 0; i < LAYER_FLOATS; i++) {
            float want = (float)(size * (size + 1) / 2 * (l + 1)) + (float)size * (float)(i % 7);
            wrong += g[(size_t)l * LAYER_FLOATS + i] != want;
        }
    return wrong;
}

/* One backward pass; mode 0 sequential, 1 overlapped. Returns seconds
 * (the slowest rank's) and adds wrong gradients to *wrong. */
static double backward(xcoll_comm_t comm, int mode, int layers_per_bucket, float *g, int rank,
                       int size, int *wrong)
{
    const int nb = LAYERS / layers_per_bucket;
    xcoll_request_t req[LAYERS];
    double t0, t, slow;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    /* the last layer's gradients come first */
    for (int l = LAYERS - 1; l >= 0; l--) {
        compute_layer();
        for (size_t i = 0; i < LAYER_FLOATS; i++)
            g[(size_t)l * LAYER_FLOATS + i] = grad(rank, l, i);
        int b = l / layers_per_bucket;
        if (mode == 1 && l % layers_per_bucket == 0) /* bucket b is complete */
            xcoll_iallreduce(XCOLL_IN_PLACE, g + (size_t)b * layers_per_bucket * LAYER_FLOATS,
                             (size_t)layers_per_bucket * LAYER_FLOATS, XCOLL_FLOAT32, XCOLL_SUM,
                             comm, NULL, &req[b]);
    }
    for (int b = nb - 1; b >= 0; b--) {
        if (mode == 0)
            xcoll_allreduce(XCOLL_IN_PLACE, g + (size_t)b * layers_per_bucket * LAYER_FLOATS,
                            (size_t)layers_per_bucket * LAYER_FLOATS, XCOLL_FLOAT32, XCOLL_SUM,
                            comm, NULL);
        else
            xcoll_wait(&req[b]);
    }
    t = MPI_Wtime() - t0;
    MPI_Allreduce(&t, &slow, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *wrong += wrong_in(g, size);
    return slow;
}

/* The median of REPS backward passes: one pass is noisy. */
#define REPS 5
static double median_backward(xcoll_comm_t comm, int mode, int lpb, float *g, int rank, int size,
                              int *wrong)
{
    double t[REPS];
    for (int i = 0; i < REPS; i++) {
        t[i] = backward(comm, mode, lpb, g, rank, size, wrong);
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    }
    return t[REPS / 2];
}

int main(int argc, char **argv)
{
    int rank, size, wrong = 0, all_wrong = 0;
    static const int buckets[] = {1, 4, 16}; /* layers per bucket */
    double times[3][3];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    float *g = malloc((size_t)LAYERS * LAYER_FLOATS * sizeof(float));

    /* first without the thread: once a communicator asks for it, it
     * progresses every communicator of the process */
    xcoll_config_t cfg;
    xcoll_comm_t comm;
    xcoll_config_init(&cfg);
    cfg.progress_thread = 0;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int k = 0; k < 3; k++)
        for (int mode = 0; mode < 2; mode++)
            times[k][mode] = median_backward(comm, mode, buckets[k], g, rank, size, &wrong);
    xcoll_comm_destroy(comm);

    cfg.progress_thread = 1;
    if (xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &comm) != XCOLL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int k = 0; k < 3; k++)
        times[k][2] = median_backward(comm, 1, buckets[k], g, rank, size, &wrong);
    xcoll_comm_destroy(comm);

    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%d ranks, %d layers of %d KiB, %.1f ms of compute each (%.1f ms in all); "
               "medians of %d passes\n", size, LAYERS,
               (int)(LAYER_FLOATS * sizeof(float) / 1024), LAYER_MS, LAYERS * LAYER_MS, REPS);
        printf("%-16s %12s %12s %12s\n", "bucket", "sequential", "overlapped", "+ thread");
        for (int k = 0; k < 3; k++)
            printf("%2d layers %4d KiB %9.2f ms %9.2f ms %9.2f ms\n", buckets[k],
                   (int)(buckets[k] * LAYER_FLOATS * sizeof(float) / 1024), times[k][0] * 1e3,
                   times[k][1] * 1e3, times[k][2] * 1e3);
        printf("%s: %d gradients wrong\n", all_wrong == 0 ? "OK" : "FAILED", all_wrong);
    }
    free(g);
    MPI_Finalize();
    return all_wrong == 0 ? 0 : 1;
}
