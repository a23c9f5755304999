/*
 * spec_nonblocking.c - many nonblocking collectives outstanding at once,
 * as MPI-3.1 5.12 allows: posted back to back in the same order on every
 * rank (on two communicators, with point-to-point requests in between),
 * then completed in an order the rank chooses, by every member of the
 * wait/test family. The batch mixes calls an MPI drop-in can serve itself
 * with calls it must hand to MPI (v- and w-variants, scans, user ops,
 * MINLOC), with derived datatypes and MPI_IN_PLACE among them, small and
 * large. Every result is checked against what the standard defines.
 */
#include "spec.h"

#include <stdint.h>

enum { N_SMALL = 7, N_LARGE = 70000, MAX_OPS = 40 };

/* One operation of a batch: its request and how to check it. */
typedef struct op_s {
    const char *name;
    MPI_Request req;
    void (*check)(struct op_s *);
    int n, root;
    void *a, *b, *c; /* buffers, freed after the check */
    MPI_Datatype dt;  /* freed after the check, unless predefined */
} op_t;

static op_t ops[MAX_OPS];
static int nops;
static MPI_Comm comm;       /* the communicator of the current batch */
static int crank, csize;    /* this rank and the size there */

static op_t *add(const char *name, void (*check)(op_t *), int n)
{
    op_t *o = &ops[nops++];
    memset(o, 0, sizeof(*o));
    o->name = name;
    o->check = check;
    o->n = n;
    o->req = MPI_REQUEST_NULL;
    o->dt = MPI_DATATYPE_NULL;
    return o;
}

static int val(int r, int i)
{
    return r * 1009 + i * 3 + 1;
}

static int *ints(size_t n, int fill)
{
    int *p = spec_alloc(n * sizeof(int));
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = fill;
    return p;
}

/* --- the operations -------------------------------------------------------------- */

static void check_bcast(op_t *o)
{
    int i, *b = o->a;
    for (i = 0; i < o->n; i++)
        if (b[i] != val(o->root, i)) {
            spec_fail("%s: element %d is %d", o->name, i, b[i]);
            return;
        }
}

static void post_bcast(int n, int root)
{
    op_t *o = add(n > N_SMALL ? "ibcast large" : "ibcast", check_bcast, n);
    int i, *b = ints((size_t)n, -1);
    o->root = root;
    if (crank == root)
        for (i = 0; i < n; i++)
            b[i] = val(root, i);
    o->a = b;
    SPEC_MPI(MPI_Ibcast(b, n, MPI_INT, root, comm, &o->req));
}

/* ibcast of n ints through a vector type on the root, plain ints elsewhere */
static void check_bcast_vec(op_t *o)
{
    int i, *b = o->a;
    int stride = crank == o->root ? 2 : 1;
    for (i = 0; i < o->n; i++)
        if (b[i * stride] != val(o->root, i) || (stride == 2 && b[i * 2 + 1] != -1)) {
            spec_fail("%s: element %d is %d", o->name, i, b[i * stride]);
            return;
        }
}

static void post_bcast_vec(int n, int root)
{
    op_t *o = add("ibcast with a vector type at the root", check_bcast_vec, n);
    int i, *b = ints((size_t)n * 2, -1);
    o->root = root;
    if (crank == root) {
        SPEC_MPI(MPI_Type_vector(n, 1, 2, MPI_INT, &o->dt));
        SPEC_MPI(MPI_Type_commit(&o->dt));
        for (i = 0; i < n; i++)
            b[2 * i] = val(root, i);
        SPEC_MPI(MPI_Ibcast(b, 1, o->dt, root, comm, &o->req));
        /* MPI lets the type go while the operation runs */
        MPI_Type_free(&o->dt);
    } else {
        SPEC_MPI(MPI_Ibcast(b, n, MPI_INT, root, comm, &o->req));
    }
    o->a = b;
}

static void user_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int i;
    (void)dt;
    for (i = 0; i < *len; i++)
        if (((int *)in)[i] > ((int *)inout)[i])
            ((int *)inout)[i] = ((int *)in)[i];
}

static MPI_Op op_max;

static void check_reduce_user(op_t *o)
{
    int i, *b = o->b;
    if (crank != o->root)
        return;
    for (i = 0; i < o->n; i++)
        if (b[i] != val(csize - 1, i)) {
            spec_fail("%s: element %d is %d", o->name, i, b[i]);
            return;
        }
}

static void post_reduce_user(int n, int root)
{
    op_t *o = add("ireduce with a user op", check_reduce_user, n);
    int i, *a = ints((size_t)n, 0), *b = ints((size_t)n, -1);
    for (i = 0; i < n; i++)
        a[i] = val(crank, i);
    o->root = root;
    o->a = a;
    o->b = b;
    SPEC_MPI(MPI_Ireduce(a, b, n, MPI_INT, op_max, root, comm, &o->req));
}

static void check_allreduce(op_t *o)
{
    int i, q, *b = o->b;
    for (i = 0; i < o->n; i++) {
        int want = 0;
        for (q = 0; q < csize; q++)
            want += val(q, i);
        if (b[i] != want) {
            spec_fail("%s: element %d is %d, expected %d", o->name, i, b[i], want);
            return;
        }
    }
}

static void post_allreduce(int n, int in_place)
{
    op_t *o = add(in_place ? "iallreduce in place" : n > N_SMALL ? "iallreduce large"
                                                                 : "iallreduce",
                  check_allreduce, n);
    int i, *a = ints((size_t)n, 0), *b = ints((size_t)n, -1);
    for (i = 0; i < n; i++)
        (in_place ? b : a)[i] = val(crank, i);
    o->a = a;
    o->b = b;
    SPEC_MPI(MPI_Iallreduce(in_place ? MPI_IN_PLACE : a, b, n, MPI_INT, MPI_SUM, comm, &o->req));
}

static void check_maxloc(op_t *o)
{
    struct di {
        double v;
        int i;
    } *b = o->b;
    int e, q;
    for (e = 0; e < o->n; e++) {
        /* rank q holds (q + e) % 3; the largest wins, the lowest rank on ties */
        int want = -1, at = -1;
        for (q = 0; q < csize; q++)
            if ((q + e) % 3 > want)
                want = (q + e) % 3, at = q;
        if (b[e].v != want || b[e].i != at) {
            spec_fail("%s: element %d is {%g, %d}, expected {%d, %d}", o->name, e, b[e].v,
                      b[e].i, want, at);
            return;
        }
    }
}

static void post_maxloc(int n)
{
    struct di {
        double v;
        int i;
    } *a = spec_alloc((size_t)n * sizeof(*a)), *b = spec_alloc((size_t)n * sizeof(*b));
    op_t *o = add("iallreduce MAXLOC on MPI_DOUBLE_INT", check_maxloc, n);
    int e;
    for (e = 0; e < n; e++) {
        a[e].v = (crank + e) % 3;
        a[e].i = crank;
    }
    o->a = a;
    o->b = b;
    SPEC_MPI(MPI_Iallreduce(a, b, n, MPI_DOUBLE_INT, MPI_MAXLOC, comm, &o->req));
}

/* alltoallv: rank q sends (q + j) % 3 ints to rank j, some zero */
static int a2av_count(int from, int to)
{
    return (from + to) % 3;
}

static void check_alltoallv(op_t *o)
{
    int q, i, k = 0, *b = o->b;
    for (q = 0; q < csize; q++)
        for (i = 0; i < a2av_count(q, crank); i++, k++)
            if (b[k] != val(q, crank * 10 + i)) {
                spec_fail("%s: from rank %d element %d is %d", o->name, q, i, b[k]);
                return;
            }
}

static void post_alltoallv(void)
{
    op_t *o = add("ialltoallv", check_alltoallv, 0);
    int *sc = ints((size_t)csize, 0), *sd = ints((size_t)csize, 0);
    int *rc = ints((size_t)csize, 0), *rd = ints((size_t)csize, 0);
    int q, i, ns = 0, nr = 0, *a, *b;
    for (q = 0; q < csize; q++) {
        sc[q] = a2av_count(crank, q), sd[q] = ns, ns += sc[q];
        rc[q] = a2av_count(q, crank), rd[q] = nr, nr += rc[q];
    }
    a = ints((size_t)ns + 1, 0);
    b = ints((size_t)nr + 1, -1);
    for (q = 0; q < csize; q++)
        for (i = 0; i < sc[q]; i++)
            a[sd[q] + i] = val(crank, q * 10 + i);
    o->a = a;
    o->b = b;
    /* the count and displacement arrays must live until completion too */
    o->c = sc;
    SPEC_MPI(MPI_Ialltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, comm, &o->req));
    /* keep sd, rc, rd alive in one block: hang them off a second op slot */
    {
        op_t *keep = add("(arrays)", NULL, 0);
        keep->a = sd;
        keep->b = rc;
        keep->c = rd;
    }
}

/* igather: the root receives each rank's n ints as one resized vector
 * element, blocks interleaved (rank q's int i at 2 * (q + size * i)) */
static void check_gather_vec(op_t *o)
{
    int q, i, *b = o->b;
    if (crank != o->root)
        return;
    for (q = 0; q < csize; q++)
        for (i = 0; i < o->n; i++)
            if (b[2 * (q + csize * i)] != val(q, i) || b[2 * (q + csize * i) + 1] != -1) {
                spec_fail("%s: rank %d's element %d is %d", o->name, q, i,
                          b[2 * (q + csize * i)]);
                return;
            }
}

static void post_gather_vec(int n, int root)
{
    op_t *o = add("igather with a vector receive type at the root", check_gather_vec, n);
    int i, *a = ints((size_t)n, 0), *b = NULL;
    MPI_Datatype v;
    for (i = 0; i < n; i++)
        a[i] = val(crank, i);
    o->root = root;
    o->a = a;
    if (crank == root) {
        b = ints((size_t)n * (size_t)csize * 2, -1);
        SPEC_MPI(MPI_Type_vector(n, 1, 2 * csize, MPI_INT, &v));
        SPEC_MPI(MPI_Type_create_resized(v, 0, 2 * (MPI_Aint)sizeof(int), &o->dt));
        MPI_Type_free(&v);
        SPEC_MPI(MPI_Type_commit(&o->dt));
    }
    o->b = b;
    SPEC_MPI(MPI_Igather(a, n, MPI_INT, b, 1, crank == root ? o->dt : MPI_INT, root, comm,
                         &o->req));
}

static void check_scatterv(op_t *o)
{
    int i, *b = o->b;
    for (i = 0; i < crank % 3; i++)
        if (b[i] != val(o->root, 100 * crank + i)) {
            spec_fail("%s: element %d is %d", o->name, i, b[i]);
            return;
        }
}

static void post_scatterv(int root)
{
    op_t *o = add("iscatterv", check_scatterv, 0);
    int *sc = ints((size_t)csize, 0), *sd = ints((size_t)csize, 0), q, i, total = 0;
    int *a = NULL, *b = ints(3, -1);
    for (q = 0; q < csize; q++)
        sc[q] = q % 3, sd[q] = total, total += sc[q];
    if (crank == root) {
        a = ints((size_t)total + 1, 0);
        for (q = 0; q < csize; q++)
            for (i = 0; i < sc[q]; i++)
                a[sd[q] + i] = val(root, 100 * q + i);
    }
    o->root = root;
    o->a = a;
    o->b = b;
    o->c = sc;
    SPEC_MPI(MPI_Iscatterv(a, sc, sd, MPI_INT, b, crank % 3, MPI_INT, root, comm, &o->req));
    add("(arrays)", NULL, 0)->a = sd;
}

/* reduce_scatter_block and reduce_scatter (equal blocks, then uneven) */
static void check_rs(op_t *o)
{
    int i, q, *b = o->b, first = 0, n = o->n;
    if (o->root >= 0) { /* uneven: root holds the number of the pattern */
        for (q = 0; q < crank; q++)
            first += q % 2 + 1;
        n = crank % 2 + 1;
    } else {
        first = crank * n;
    }
    for (i = 0; i < n; i++) {
        int want = 0;
        for (q = 0; q < csize; q++)
            want += val(q, first + i);
        if (b[i] != want) {
            spec_fail("%s: element %d is %d, expected %d", o->name, i, b[i], want);
            return;
        }
    }
}

static void post_reduce_scatter(int n, int kind)
{
    static const char *const names[3] = {"ireduce_scatter_block", "ireduce_scatter",
                                         "ireduce_scatter with uneven counts"};
    op_t *o = add(names[kind], check_rs, n);
    int *rc = ints((size_t)csize, n), total = n * csize, q, i, *a, *b;
    o->root = -1;
    if (kind == 2) {
        for (q = 0, total = 0; q < csize; q++)
            total += rc[q] = q % 2 + 1;
        o->root = 0;
    }
    a = ints((size_t)total, 0);
    b = ints((size_t)n + 2, -1);
    for (i = 0; i < total; i++)
        a[i] = val(crank, i);
    o->a = a;
    o->b = b;
    o->c = rc;
    if (kind == 0)
        SPEC_MPI(MPI_Ireduce_scatter_block(a, b, n, MPI_INT, MPI_SUM, comm, &o->req));
    else
        SPEC_MPI(MPI_Ireduce_scatter(a, b, rc, MPI_INT, MPI_SUM, comm, &o->req));
}

static void check_gatherv(op_t *o)
{
    int q, i, k = 0, *b = o->b;
    if (crank != o->root)
        return;
    for (q = 0; q < csize; q++)
        for (i = 0; i < (q + 1) % 3; i++, k++)
            if (b[k] != val(q, i)) {
                spec_fail("%s: rank %d's element %d is %d", o->name, q, i, b[k]);
                return;
            }
}

static void post_gatherv(int root)
{
    op_t *o = add("igatherv", check_gatherv, 0);
    int *rc = ints((size_t)csize, 0), *rd = ints((size_t)csize, 0), q, i, total = 0;
    int n = (crank + 1) % 3, *a = ints(3, 0), *b;
    for (q = 0; q < csize; q++)
        rc[q] = (q + 1) % 3, rd[q] = total, total += rc[q];
    b = ints((size_t)total + 1, -1);
    for (i = 0; i < n; i++)
        a[i] = val(crank, i);
    o->root = root;
    o->a = a;
    o->b = b;
    o->c = rc;
    SPEC_MPI(MPI_Igatherv(a, n, MPI_INT, b, rc, rd, MPI_INT, root, comm, &o->req));
    add("(arrays)", NULL, 0)->a = rd;
}

static void check_alltoall(op_t *o)
{
    int q, i, *b = o->b;
    for (q = 0; q < csize; q++)
        for (i = 0; i < o->n; i++)
            if (b[q * o->n + i] != val(q, crank * o->n + i)) {
                spec_fail("%s: from rank %d element %d is %d", o->name, q, i,
                          b[q * o->n + i]);
                return;
            }
}

static void post_alltoall(int n)
{
    op_t *o = add("ialltoall", check_alltoall, n);
    int i, *a = ints((size_t)n * csize, 0), *b = ints((size_t)n * csize, -1);
    for (i = 0; i < n * csize; i++)
        a[i] = val(crank, i);
    o->a = a;
    o->b = b;
    SPEC_MPI(MPI_Ialltoall(a, n, MPI_INT, b, n, MPI_INT, comm, &o->req));
}

static void check_allgather(op_t *o)
{
    int q, i, *b = o->b;
    for (q = 0; q < csize; q++)
        for (i = 0; i < o->n; i++)
            if (b[q * o->n + i] != val(q, i)) {
                spec_fail("%s: rank %d's element %d is %d", o->name, q, i, b[q * o->n + i]);
                return;
            }
}

static void post_allgather(int n, int in_place)
{
    op_t *o = add(in_place ? "iallgather in place" : "iallgather", check_allgather, n);
    int i, *a = ints((size_t)n, 0), *b = ints((size_t)n * csize, -1);
    for (i = 0; i < n; i++) {
        a[i] = val(crank, i);
        if (in_place)
            b[crank * n + i] = val(crank, i);
    }
    o->a = a;
    o->b = b;
    SPEC_MPI(MPI_Iallgather(in_place ? MPI_IN_PLACE : a, n, MPI_INT, b, n, MPI_INT, comm,
                            &o->req));
}

static void check_allgatherv(op_t *o)
{
    int q, i, k = 0, *b = o->b;
    for (q = 0; q < csize; q++)
        for (i = 0; i < q % 2 * 2; i++, k++)
            if (b[k] != val(q, i)) {
                spec_fail("%s: rank %d's element %d is %d", o->name, q, i, b[k]);
                return;
            }
}

static void post_allgatherv(void)
{
    op_t *o = add("iallgatherv", check_allgatherv, 0);
    int *rc = ints((size_t)csize, 0), *rd = ints((size_t)csize, 0), q, i, total = 0;
    int *a = ints(2, 0), *b;
    for (q = 0; q < csize; q++)
        rc[q] = q % 2 * 2, rd[q] = total, total += rc[q];
    b = ints((size_t)total + 1, -1);
    for (i = 0; i < 2; i++)
        a[i] = val(crank, i);
    o->a = a;
    o->b = b;
    o->c = rc;
    SPEC_MPI(MPI_Iallgatherv(a, crank % 2 * 2, MPI_INT, b, rc, rd, MPI_INT, comm, &o->req));
    add("(arrays)", NULL, 0)->a = rd;
}

static void check_scan(op_t *o)
{
    int i, q, *b = o->b, exclusive = o->root;
    if (exclusive && crank == 0)
        return; /* undefined on rank 0 */
    for (i = 0; i < o->n; i++) {
        int want = 0;
        for (q = 0; q < crank + !exclusive; q++)
            want += val(q, i);
        if (b[i] != want) {
            spec_fail("%s: element %d is %d, expected %d", o->name, i, b[i], want);
            return;
        }
    }
}

static void post_scan(int n, int exclusive)
{
    op_t *o = add(exclusive ? "iexscan" : "iscan", check_scan, n);
    int i, *a = ints((size_t)n, 0), *b = ints((size_t)n, -1);
    for (i = 0; i < n; i++)
        a[i] = val(crank, i);
    o->root = exclusive;
    o->a = a;
    o->b = b;
    if (exclusive)
        SPEC_MPI(MPI_Iexscan(a, b, n, MPI_INT, MPI_SUM, comm, &o->req));
    else
        SPEC_MPI(MPI_Iscan(a, b, n, MPI_INT, MPI_SUM, comm, &o->req));
}

/* ialltoallw: one int to every rank, as MPI_INT */
static void check_alltoallw(op_t *o)
{
    int q, *b = o->b;
    for (q = 0; q < csize; q++)
        if (b[q] != val(q, 50 + crank)) {
            spec_fail("%s: from rank %d: %d", o->name, q, b[q]);
            return;
        }
}

static void post_alltoallw(void)
{
    op_t *o = add("ialltoallw", check_alltoallw, 0);
    int *cnt = ints((size_t)csize, 1), *disp = ints((size_t)csize, 0), q;
    int *a = ints((size_t)csize, 0), *b = ints((size_t)csize, -1);
    MPI_Datatype *types = spec_alloc((size_t)csize * sizeof(MPI_Datatype));
    for (q = 0; q < csize; q++) {
        disp[q] = q * (int)sizeof(int);
        types[q] = MPI_INT;
        a[q] = val(crank, 50 + q);
    }
    o->a = a;
    o->b = b;
    o->c = cnt;
    SPEC_MPI(MPI_Ialltoallw(a, cnt, disp, types, b, cnt, disp, types, comm, &o->req));
    {
        op_t *keep = add("(arrays)", NULL, 0);
        keep->a = disp;
        keep->b = types;
    }
}

static void check_none(op_t *o)
{
    (void)o;
}

static void post_barrier(void)
{
    op_t *o = add("ibarrier", check_none, 0);
    SPEC_MPI(MPI_Ibarrier(comm, &o->req));
}

/* point-to-point around a ring, inside the batch */
static void check_p2p(op_t *o)
{
    int *b = o->b, left = (crank + csize - 1) % csize;
    if (*b != val(left, 999))
        spec_fail("%s: received %d", o->name, *b);
}

static void post_p2p(void)
{
    op_t *r = add("irecv", check_p2p, 1), *s = add("isend", check_none, 1);
    int *a = ints(1, val(crank, 999)), *b = ints(1, -1);
    r->b = b;
    s->a = a;
    SPEC_MPI(MPI_Irecv(b, 1, MPI_INT, (crank + csize - 1) % csize, 42, comm, &r->req));
    SPEC_MPI(MPI_Isend(a, 1, MPI_INT, (crank + 1) % csize, 42, comm, &s->req));
}

/* --- completing a batch ---------------------------------------------------------------- */

static const char *const methods[] = {"waitall", "waitany", "waitsome", "testall",
                                      "testany", "testsome", "wait in reverse order",
                                      "wait in a rank-dependent order",
                                      "request_get_status, then wait"};
#define NMETHODS ((int)(sizeof(methods) / sizeof(methods[0])))

static void complete(int method)
{
    MPI_Request req[MAX_OPS];
    int i, done = 0, flag, idx, out, indices[MAX_OPS];
    /* statuses, not MPI_STATUSES_IGNORE: MPICH's (MPI_Status *)1 trips
     * gcc's bounds warnings */
    static MPI_Status sts[MAX_OPS];
    MPI_Status st;
    for (i = 0; i < nops; i++)
        req[i] = ops[i].req;
    switch (method) {
    case 0:
        SPEC_MPI(MPI_Waitall(nops, req, sts));
        break;
    case 1:
        for (;;) {
            SPEC_MPI(MPI_Waitany(nops, req, &idx, &st));
            if (idx == MPI_UNDEFINED)
                break;
        }
        break;
    case 2:
        for (;;) {
            SPEC_MPI(MPI_Waitsome(nops, req, &out, indices, sts));
            if (out == MPI_UNDEFINED)
                break;
        }
        break;
    case 3:
        do
            SPEC_MPI(MPI_Testall(nops, req, &flag, sts));
        while (!flag);
        break;
    case 4:
        for (;;) {
            SPEC_MPI(MPI_Testany(nops, req, &idx, &flag, &st));
            if (flag && idx == MPI_UNDEFINED)
                break;
        }
        break;
    case 5:
        for (;;) {
            SPEC_MPI(MPI_Testsome(nops, req, &out, indices, sts));
            if (out == MPI_UNDEFINED)
                break;
        }
        break;
    case 6:
        for (i = nops - 1; i >= 0; i--)
            SPEC_MPI(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
        break;
    case 7:
        for (i = 0; i < nops; i++)
            SPEC_MPI(MPI_Wait(&req[(i * 7 + crank * 3) % nops], MPI_STATUS_IGNORE));
        for (i = 0; i < nops; i++)
            SPEC_MPI(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
        break;
    default:
        while (!done) {
            done = 1;
            for (i = 0; i < nops; i++) {
                flag = 1;
                if (req[i] != MPI_REQUEST_NULL)
                    SPEC_MPI(MPI_Request_get_status(req[i], &flag, &st));
                done &= flag;
            }
        }
        for (i = 0; i < nops; i++)
            SPEC_MPI(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
        break;
    }
    for (i = 0; i < nops; i++)
        if (req[i] != MPI_REQUEST_NULL)
            spec_fail("%s left request %d (%s) active", methods[method], i, ops[i].name);
}

static void finish_batch(int method)
{
    int i;
    complete(method);
    for (i = 0; i < nops; i++) {
        if (ops[i].check != NULL)
            ops[i].check(&ops[i]);
        free(ops[i].a);
        free(ops[i].b);
        free(ops[i].c);
        if (ops[i].dt != MPI_DATATYPE_NULL)
            MPI_Type_free(&ops[i].dt);
    }
    nops = 0;
}

static void batch(int round, MPI_Comm c)
{
    int root = round % csize, large = round % 3 == 0;
    (void)c;
    post_bcast(N_SMALL, root);
    post_reduce_user(N_SMALL, (root + 1) % csize);
    post_allreduce(N_SMALL, 0);
    post_p2p();
    post_alltoallv();
    post_gather_vec(N_SMALL, root);
    post_scatterv((root + 2) % csize);
    post_reduce_scatter(3, 1);
    post_reduce_scatter(2, 0);
    post_gatherv(root);
    post_alltoall(2);
    post_allgather(3, round % 2);
    post_allgatherv();
    post_scan(4, 0);
    post_scan(4, 1);
    post_alltoallw();
    post_maxloc(5);
    post_bcast_vec(9, (root + 1) % csize);
    post_reduce_scatter(2, 2);
    post_allreduce(N_SMALL, 1);
    post_barrier();
    if (large) {
        post_bcast(N_LARGE, (root + 1) % csize);
        post_allreduce(N_LARGE, 0);
    }
}

int main(int argc, char **argv)
{
    int round, rounds = argc > 1 && strcmp(argv[1], "--quick") == 0 ? NMETHODS : 2 * NMETHODS;
    MPI_Comm dup;
    spec_init(&argc, &argv, "spec_nonblocking");
    SPEC_MPI(MPI_Op_create(user_max, 1, &op_max));
    SPEC_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    /* A drop-in may set a communicator up only in a blocking call (a
     * nonblocking one must not wait for the other ranks: spec_order), so
     * one blocking call on each lets it serve the batches below. */
    SPEC_MPI(MPI_Barrier(MPI_COMM_WORLD));
    SPEC_MPI(MPI_Barrier(dup));
    for (round = 0; round < rounds; round++) {
        /* a batch on the world, then one on a dup, both outstanding */
        comm = round % 2 ? dup : MPI_COMM_WORLD;
        MPI_Comm_rank(comm, &crank);
        MPI_Comm_size(comm, &csize);
        batch(round, comm);
        finish_batch(round % NMETHODS);
    }
    MPI_Comm_free(&dup);
    MPI_Op_free(&op_max);
    return spec_finish();
}
