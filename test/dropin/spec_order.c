/*
 * spec_order.c - nonblocking collectives started in different orders on
 * different communicators. MPI-3.1 5.12 orders collective calls per
 * communicator only: a rank may start one on A and then one on B while
 * another rank starts B's first, and both complete once every rank has
 * started both. And MPI-3.1 6.4.2: MPI_Comm_idup is such a nonblocking
 * collective, so two ranks may duplicate two overlapping communicators in
 * opposite orders (with MPI_Comm_dup that would deadlock). Each case is
 * run on communicators no collective has touched yet, then again on
 * communicators that served blocking calls before. MPICH's
 * test/mpi/comm/comm_idup_overlap found a drop-in that blocked inside
 * the first nonblocking call on a communicator, and comm_idup_iallreduce
 * one whose set-up collectives met an MPI_Comm_idup still running on the
 * same communicator; this test keeps both out.
 */
#include "spec.h"

enum { N = 1000 };

/* MPI_STATUSES_IGNORE trips GCC's object-size check (a pointer to
 * nothing); a real array costs nothing here. */
static MPI_Status sts[6];

/* Every rank's contribution: rank r adds r + 1 at every position. */
static void check_sum(const char *what, const int *got, int n, int size)
{
    int i, want = size * (size + 1) / 2;
    for (i = 0; i < n; i++)
        if (got[i] != want + i * size) {
            spec_fail("%s: element %d is %d, expected %d", what, i, got[i], want + i * size);
            return;
        }
}

/* Starts an Iallreduce, an Ibcast and an Ibarrier on each of a and b, in
 * the order a, b on even ranks and b, a on odd ones, then completes all. */
static void crossed(MPI_Comm a, MPI_Comm b, const char *label)
{
    MPI_Comm first = spec_rank % 2 == 0 ? a : b, second = first == a ? b : a;
    MPI_Comm order[2] = {first, second};
    MPI_Request req[6];
    int *in = spec_alloc(N * sizeof(int)), *out[2], *bc[2];
    int k, i, size, root_val = 4242;
    char what[96];

    for (i = 0; i < N; i++)
        in[i] = spec_rank + 1 + i;
    for (k = 0; k < 2; k++) {
        out[k] = spec_alloc(N * sizeof(int));
        bc[k] = spec_alloc(N * sizeof(int));
        for (i = 0; i < N; i++)
            bc[k][i] = spec_rank == 0 ? root_val + i : -1;
    }
    /* a and b both span MPI_COMM_WORLD, with its ranks */
    for (k = 0; k < 2; k++) {
        MPI_Comm c = order[k];
        int slot = c == a ? 0 : 1;
        SPEC_MPI(MPI_Iallreduce(in, out[slot], N, MPI_INT, MPI_SUM, c, &req[3 * k]));
        SPEC_MPI(MPI_Ibcast(bc[slot], N, MPI_INT, 0, c, &req[3 * k + 1]));
        SPEC_MPI(MPI_Ibarrier(c, &req[3 * k + 2]));
    }
    SPEC_MPI(MPI_Waitall(6, req, sts));
    MPI_Comm_size(a, &size);
    for (k = 0; k < 2; k++) {
        snprintf(what, sizeof(what), "%s: Iallreduce on %s", label, k == 0 ? "a" : "b");
        check_sum(what, out[k], N, size);
        for (i = 0; i < N; i++)
            if (bc[k][i] != root_val + i) {
                spec_fail("%s: Ibcast on %s: element %d is %d, expected %d", label,
                          k == 0 ? "a" : "b", i, bc[k][i], root_val + i);
                break;
            }
        free(out[k]);
        free(bc[k]);
    }
    free(in);
}

/* MPICH's comm_idup_overlap, from the standard's side: for every i, ranks
 * i and i + 1 (mod size) share a communicator, so each rank is in two
 * (one, at 2 ranks, twice over), which it duplicates with MPI_Comm_idup
 * in an order that makes a cycle. The duplicates are then used. */
static void idup_cycle(void)
{
    MPI_Comm mine[2] = {MPI_COMM_NULL, MPI_COMM_NULL}, dup[2], tmp;
    MPI_Request req[2];
    int i, k, sum[2], one = 1;

    if (spec_size < 2)
        return;
    for (i = 0; i < spec_size; i++) {
        if (spec_rank == i)
            SPEC_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &mine[0]));
        else if (spec_rank == (i + 1) % spec_size)
            SPEC_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &mine[1]));
        else {
            SPEC_MPI(MPI_Comm_split(MPI_COMM_WORLD, 1, 0, &tmp));
            SPEC_MPI(MPI_Comm_free(&tmp));
        }
    }
    for (k = 0; k < 2; k++)
        SPEC_MPI(MPI_Comm_idup(mine[k], &dup[k], &req[k]));
    SPEC_MPI(MPI_Waitall(2, req, sts));
    /* each duplicate has the two ranks of its original */
    for (k = 0; k < 2; k++)
        SPEC_MPI(MPI_Iallreduce(&one, &sum[k], 1, MPI_INT, MPI_SUM, dup[k], &req[k]));
    SPEC_MPI(MPI_Waitall(2, req, sts));
    for (k = 0; k < 2; k++) {
        if (sum[k] != 2)
            spec_fail("idup cycle: Iallreduce on duplicate %d gave %d, expected 2", k, sum[k]);
        SPEC_MPI(MPI_Comm_free(&dup[k]));
        SPEC_MPI(MPI_Comm_free(&mine[k]));
    }
}

/* MPI_Comm_idup of a communicator, and while it runs the first blocking
 * collective there (ordered after the idup on every rank, as 5.12 asks).
 * A drop-in that sets the communicator up in that call talks on it while
 * the duplication may still be talking there too. Repeated: whether the
 * two meet depends on timing. */
static void idup_then_blocking(void)
{
    int it, x = spec_rank, y, want = spec_size * (spec_size - 1) / 2;
    for (it = 0; it < 10; it++) {
        MPI_Comm a, d;
        MPI_Request req;
        SPEC_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
        MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
        SPEC_MPI(MPI_Comm_idup(a, &d, &req));
        SPEC_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, a));
        if (y != want)
            spec_fail("idup then Allreduce, round %d: got %d, expected %d", it, y, want);
        SPEC_MPI(MPI_Wait(&req, sts));
        y = -1;
        SPEC_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, d));
        if (y != want)
            spec_fail("Allreduce on the duplicate, round %d: got %d, expected %d", it, y, want);
        SPEC_MPI(MPI_Comm_free(&d));
        SPEC_MPI(MPI_Comm_free(&a));
    }
}

int main(int argc, char **argv)
{
    MPI_Comm a, b, c;
    MPI_Request req[2];
    int x, y;

    spec_init(&argc, &argv, "spec_order");
    x = spec_rank;
    /* fresh communicators: no collective on them yet */
    SPEC_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    SPEC_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b));
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN);
    crossed(a, b, "fresh");
    /* a has served blocking calls, b only nonblocking ones */
    SPEC_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, a));
    if (y != spec_size * (spec_size - 1) / 2)
        spec_fail("Allreduce on a gave %d, expected %d", y, spec_size * (spec_size - 1) / 2);
    crossed(a, b, "a used");
    /* both used */
    SPEC_MPI(MPI_Barrier(b));
    crossed(a, b, "both used");
    /* a duplicate made while a nonblocking collective runs on its parent */
    SPEC_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, a, &req[0]));
    SPEC_MPI(MPI_Comm_idup(a, &c, &req[1]));
    SPEC_MPI(MPI_Waitall(2, req, sts));
    crossed(c, b, "idup of a");
    SPEC_MPI(MPI_Comm_free(&c));
    SPEC_MPI(MPI_Comm_free(&a));
    SPEC_MPI(MPI_Comm_free(&b));
    idup_cycle();
    idup_then_blocking();
    return spec_finish();
}
