/*
 * spec_progress.c - progress across a blocking call. MPI-3.1 5.12 lets a
 * rank finish its nonblocking collectives wherever it likes, and 3.7.4
 * requires a pending operation to complete once its peers have posted
 * theirs, while they sit in any MPI call. So here every rank posts the
 * same nonblocking collective, then rank 0 waits for it before the next
 * (blocking) collective while the others wait after it: the others are
 * inside a blocking MPI call, which must still move their part of the
 * pending one (large messages, so that it needs more than the post).
 */
#include "spec.h"

enum { N = 1 << 18 };

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int i;
    (void)dt;
    for (i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* The blocking collective in between: one MPI serves in any drop-in. */
static void blocking_step(int kind, MPI_Op op)
{
    int x = spec_rank + 1, y = 0, i, *sc, *sd, *r;
    switch (kind) {
    case 0: /* a user op */
        SPEC_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, op, MPI_COMM_WORLD));
        if (y != spec_size * (spec_size + 1) / 2)
            spec_fail("allreduce with a user op gave %d", y);
        break;
    case 1: /* a v-variant */
        sc = spec_alloc((size_t)spec_size * sizeof(int));
        sd = spec_alloc((size_t)spec_size * sizeof(int));
        r = spec_alloc((size_t)spec_size * sizeof(int));
        for (i = 0; i < spec_size; i++)
            sc[i] = 1, sd[i] = i;
        SPEC_MPI(MPI_Allgatherv(&x, 1, MPI_INT, r, sc, sd, MPI_INT, MPI_COMM_WORLD));
        for (i = 0; i < spec_size; i++)
            if (r[i] != i + 1)
                spec_fail("allgatherv: element %d is %d", i, r[i]);
        free(sc);
        free(sd);
        free(r);
        break;
    default: /* a logical op */
        SPEC_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
        if (y != 1)
            spec_fail("allreduce LAND gave %d", y);
        break;
    }
}

int main(int argc, char **argv)
{
    MPI_Op op;
    int kind, i, *buf, *out, root;
    MPI_Request req;
    spec_init(&argc, &argv, "spec_progress");
    SPEC_MPI(MPI_Op_create(user_sum, 1, &op));
    buf = spec_alloc(N * sizeof(int));
    out = spec_alloc(N * sizeof(int));
    for (kind = 0; kind < 3; kind++) {
        root = (kind + 1) % spec_size;
        /* a large broadcast */
        for (i = 0; i < N; i++)
            buf[i] = spec_rank == root ? i * 3 + kind : -1;
        SPEC_MPI(MPI_Ibcast(buf, N, MPI_INT, root, MPI_COMM_WORLD, &req));
        if (spec_rank == 0)
            SPEC_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        blocking_step(kind, op);
        if (spec_rank != 0)
            SPEC_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (i = 0; i < N; i++)
            if (buf[i] != i * 3 + kind) {
                spec_fail("ibcast %d: element %d is %d", kind, i, buf[i]);
                break;
            }
        /* a large allreduce, the other way round: rank 0 waits last */
        for (i = 0; i < N; i++)
            buf[i] = spec_rank + i;
        SPEC_MPI(MPI_Iallreduce(buf, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
        if (spec_rank != 0)
            SPEC_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        blocking_step(kind, op);
        if (spec_rank == 0)
            SPEC_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (i = 0; i < N; i++)
            if (out[i] != spec_size * i + spec_size * (spec_size - 1) / 2) {
                spec_fail("iallreduce %d: element %d is %d", kind, i, out[i]);
                break;
            }
    }
    free(buf);
    free(out);
    MPI_Op_free(&op);
    return spec_finish();
}
