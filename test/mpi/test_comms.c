/* test_comms: several communicators side by side.
 *
 * World, an even/odd split, a split into halves with the rank order
 * reversed (key = -rank), a dup of world and MPI_COMM_SELF, used in turn
 * so each collective's traffic must stay on its own communicator; then
 * destroyed handles must be refused with XCOLL_ERR_INVALID_COMM, and 50
 * create/destroy cycles must not leak (run under ASan to see that). */
#include "common.h"

#define COUNT 123

typedef struct {
    const char *name;
    MPI_Comm mpi;
    xcoll_comm_t xc;
} pair_t;

static int64_t input(int r, int i, int salt) { return (r * 3 + i + salt) % 7; }

/* Checks that comm's rank and size are the MPI communicator's. */
static void check_shape(const pair_t *p)
{
    int xr = -1, xs = -1, mr, ms;
    TC_MPI(MPI_Comm_rank(p->mpi, &mr));
    TC_MPI(MPI_Comm_size(p->mpi, &ms));
    TC_EXPECT(XCOLL_OK, xcoll_comm_rank(p->xc, &xr));
    TC_EXPECT(XCOLL_OK, xcoll_comm_size(p->xc, &xs));
    if (xr != mr || xs != ms)
        tc_fail("%s: xcoll rank/size %d/%d, MPI rank/size %d/%d", p->name, xr, xs, mr, ms);
    else
        tc_pass();
}

static void run_allreduce(const pair_t *p, int salt)
{
    int r, n;
    MPI_Comm_rank(p->mpi, &r);
    MPI_Comm_size(p->mpi, &n);
    int32_t in[COUNT], out[COUNT];
    for (int i = 0; i < COUNT; i++)
        in[i] = (int32_t)input(r, i, salt);
    if (!TC_EXPECT(XCOLL_OK, xcoll_allreduce(in, out, COUNT, XCOLL_INT32, XCOLL_SUM, p->xc, NULL)))
        return;
    for (int i = 0; i < COUNT; i++) {
        int64_t e = 0;
        for (int q = 0; q < n; q++)
            e += input(q, i, salt);
        if (out[i] != e) {
            tc_fail("%s allreduce salt %d: index %d got %d expected %" PRId64, p->name, salt, i,
                    out[i], e);
            return;
        }
    }
    tc_pass();
}

static void run_bcast(const pair_t *p, int salt)
{
    int r, n;
    MPI_Comm_rank(p->mpi, &r);
    MPI_Comm_size(p->mpi, &n);
    int root = salt % n;
    double buf[COUNT];
    for (int i = 0; i < COUNT; i++)
        buf[i] = r == root ? (double)input(root, i, salt) : -1.0;
    if (!TC_EXPECT(XCOLL_OK, xcoll_bcast(buf, COUNT, XCOLL_FLOAT64, root, p->xc, NULL)))
        return;
    for (int i = 0; i < COUNT; i++) {
        if (buf[i] != (double)input(root, i, salt)) {
            tc_fail("%s bcast root %d salt %d: index %d got %g expected %g", p->name, root, salt,
                    i, buf[i], (double)input(root, i, salt));
            return;
        }
    }
    tc_pass();
}

static void run_allgather(const pair_t *p, int salt)
{
    int r, n;
    MPI_Comm_rank(p->mpi, &r);
    MPI_Comm_size(p->mpi, &n);
    /* Each rank contributes its world rank, so a block from the wrong
     * communicator (or wrong order under a reversed key) shows. */
    int32_t mine[3] = { tc.rank, salt, r };
    int32_t *all = malloc(sizeof(int32_t) * 3 * (size_t)n);
    int32_t *ref = malloc(sizeof(int32_t) * 3 * (size_t)n);
    if (all == NULL || ref == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    TC_MPI(MPI_Allgather(mine, 3, MPI_INT32_T, ref, 3, MPI_INT32_T, p->mpi));
    if (TC_EXPECT(XCOLL_OK, xcoll_allgather(mine, all, 3, XCOLL_INT32, p->xc, NULL))) {
        if (memcmp(all, ref, sizeof(int32_t) * 3 * (size_t)n) != 0) {
            for (int q = 0; q < n; q++)
                if (memcmp(all + 3 * q, ref + 3 * q, 3 * sizeof(int32_t)) != 0) {
                    tc_fail("%s allgather salt %d: block %d is {%d,%d,%d}, MPI has {%d,%d,%d}",
                            p->name, salt, q, all[3 * q], all[3 * q + 1], all[3 * q + 2],
                            ref[3 * q], ref[3 * q + 1], ref[3 * q + 2]);
                    break;
                }
        } else {
            tc_pass();
        }
    }
    free(all);
    free(ref);
}

/* The same collective in flight on two communicators over the same ranks:
 * their messages must not cross. */
static void run_concurrent(const pair_t *a, const pair_t *b)
{
    int32_t ina[COUNT], inb[COUNT], outa[COUNT], outb[COUNT];
    int na, nb;
    MPI_Comm_size(a->mpi, &na);
    MPI_Comm_size(b->mpi, &nb);
    for (int i = 0; i < COUNT; i++) {
        ina[i] = 1;
        inb[i] = 1000;
    }
    xcoll_request_t ra = NULL, rb = NULL;
    TC_EXPECT(XCOLL_OK, xcoll_iallreduce(inb, outb, COUNT, XCOLL_INT32, XCOLL_SUM, b->xc, NULL, &rb));
    TC_EXPECT(XCOLL_OK, xcoll_iallreduce(ina, outa, COUNT, XCOLL_INT32, XCOLL_SUM, a->xc, NULL, &ra));
    TC_EXPECT(XCOLL_OK, xcoll_wait(&ra));
    TC_EXPECT(XCOLL_OK, xcoll_wait(&rb));
    int bad = 0;
    for (int i = 0; i < COUNT && !bad; i++)
        if (outa[i] != na || outb[i] != 1000 * nb) {
            tc_fail("concurrent %s/%s: index %d got %d/%d expected %d/%d", a->name, b->name, i,
                    outa[i], outb[i], na, 1000 * nb);
            bad = 1;
        }
    if (!bad)
        tc_pass();
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "test_comms");
    int rank = tc.rank, size = tc.size;

    MPI_Comm even_odd, halves, dup;
    TC_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &even_odd));
    TC_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, -rank, &halves));
    TC_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));

    pair_t world = { "world", MPI_COMM_WORLD, tc_comm_create(MPI_COMM_WORLD, 60.0) };
    pair_t eo = { "even/odd", even_odd, tc_comm_create(even_odd, 60.0) };
    pair_t hv = { "halves(reversed)", halves, tc_comm_create(halves, 60.0) };
    pair_t dp = { "dup", dup, tc_comm_create(dup, 60.0) };
    pair_t self = { "self", MPI_COMM_SELF, tc_comm_create(MPI_COMM_SELF, 60.0) };
    pair_t *all[] = { &world, &eo, &hv, &dp, &self };

    for (int i = 0; i < 5; i++)
        check_shape(all[i]);

    /* world, split, world, split ... */
    for (int salt = 0; salt < 12; salt++) {
        pair_t *other = all[1 + salt % 4];
        run_allreduce(&world, salt);
        run_allreduce(other, salt);
        run_bcast(&world, salt);
        run_bcast(other, salt);
        run_allgather(other, salt);
        run_allgather(&world, salt);
    }
    run_concurrent(&world, &dp);
    run_concurrent(&eo, &hv);   /* different ranks, different groups */

    /* A destroyed communicator is refused, not used. */
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(dp.xc));
    int32_t x = 1, y = 0;
    TC_EXPECT(XCOLL_ERR_INVALID_COMM,
              xcoll_allreduce(&x, &y, 1, XCOLL_INT32, XCOLL_SUM, dp.xc, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_bcast(&x, 1, XCOLL_INT32, 0, dp.xc, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_barrier(dp.xc));
    int r = -7;
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_comm_rank(dp.xc, &r));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_comm_destroy(dp.xc));

    /* The others still work after one is gone. */
    run_allreduce(&world, 100);
    run_allreduce(&eo, 101);
    run_allreduce(&hv, 102);
    run_allreduce(&self, 103);

    /* Create and destroy many; use some. ASan's leak check sees any leak. */
    for (int i = 0; i < 50; i++) {
        pair_t tmp = { "loop", i % 2 ? even_odd : MPI_COMM_WORLD, NULL };
        tmp.xc = tc_comm_create(tmp.mpi, 60.0);
        if (i % 10 == 0)
            run_allreduce(&tmp, 200 + i);
        TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(tmp.xc));
    }
    /* Creation must not have disturbed the live ones. */
    run_allreduce(&world, 300);
    run_bcast(&eo, 301);
    run_allgather(&hv, 302);

    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(self.xc));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(hv.xc));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(eo.xc));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(world.xc));
    TC_MPI(MPI_Comm_free(&dup));
    TC_MPI(MPI_Comm_free(&halves));
    TC_MPI(MPI_Comm_free(&even_odd));
    return tc_finish();
}
