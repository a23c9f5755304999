/*
 * dropin_test.c - an ordinary MPI program (it knows nothing of xcoll) that
 * runs the collectives the drop-ins take, and many they must pass back,
 * and prints one deterministic checksum line per operation on rank 0.
 *
 * Run it under plain MPI, under the coll component and under the PMPI
 * library: the outputs must be identical. Every value is a small integer,
 * so floating-point results are exact whatever the reduction order.
 *
 * The checksums travel to rank 0 by point-to-point messages, so that the
 * reporting does not depend on the collectives under test.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_TAG 4242

static int world_rank, world_size;
static int failures;

/* --- checksums --------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    size_t i;
    for (i = 0; i < bytes; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

#define FNV_START 14695981039346656037ULL

/* Every rank passes its own checksum (of what MPI defines on that rank);
 * rank 0 prints the checksum of all of them in world-rank order. */
static void report(const char *label, uint64_t mine)
{
    if (world_rank == 0) {
        uint64_t all = fnv(FNV_START, &mine, sizeof(mine));
        int r;
        for (r = 1; r < world_size; r++) {
            uint64_t theirs;
            MPI_Recv(&theirs, 1, MPI_UINT64_T, r, REPORT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            all = fnv(all, &theirs, sizeof(theirs));
        }
        printf("%-58s %016llx\n", label, (unsigned long long)all);
    } else {
        MPI_Send(&mine, 1, MPI_UINT64_T, 0, REPORT_TAG, MPI_COMM_WORLD);
    }
}

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: %s returned %d\n", world_rank, what, rc);
        failures++;
    }
}

/* --- typed values --------------------------------------------------------------- */

typedef enum { SIGNED, UNSIGNED, FLOATING } kind_t;

typedef struct {
    MPI_Datatype type;
    kind_t kind;
    size_t size;
    const char *name;
} type_t;

static type_t types[] = {
    {MPI_INT, SIGNED, sizeof(int), "int"},
    {MPI_UNSIGNED, UNSIGNED, sizeof(unsigned), "unsigned"},
    {MPI_LONG, SIGNED, sizeof(long), "long"},
    {MPI_INT64_T, SIGNED, 8, "int64"},
    {MPI_UINT64_T, UNSIGNED, 8, "uint64"},
    {MPI_SIGNED_CHAR, SIGNED, 1, "schar"},
    {MPI_UINT8_T, UNSIGNED, 1, "uint8"},
    {MPI_FLOAT, FLOATING, sizeof(float), "float"},
    {MPI_DOUBLE, FLOATING, sizeof(double), "double"},
    {MPI_SHORT, SIGNED, sizeof(short), "short"},  /* no xcoll type: passed back */
};
#define NTYPES (int)(sizeof(types) / sizeof(types[0]))

typedef struct {
    MPI_Op op;
    const char *name;
    int bitwise;
} op_t;

static op_t ops[] = {
    {MPI_SUM, "sum", 0}, {MPI_PROD, "prod", 0}, {MPI_MIN, "min", 0}, {MPI_MAX, "max", 0},
    {MPI_BAND, "band", 1}, {MPI_BOR, "bor", 1}, {MPI_BXOR, "bxor", 1},
};
#define NOPS (int)(sizeof(ops) / sizeof(ops[0]))

/* Element i of rank's input for op: small enough that no reduction over
 * eight ranks overflows an int8 or loses a bit in a float. */
static long value(int i, int rank, int seed, MPI_Op op, kind_t kind)
{
    if (op == MPI_PROD)
        return (rank < 3 && (i + rank + seed) % 4 == 0) ? 2 : 1;
    if (op == MPI_MIN || op == MPI_MAX)
        return (i * 7 + rank * 3 + seed) % 50 - (kind == UNSIGNED ? 0 : 20);
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        return (i * 37 + rank * 11 + seed) & 0x7f;
    return (i * 3 + rank * 5 + seed) % 13;
}

static void store(void *buf, int i, const type_t *t, long v)
{
    char *p = (char *)buf + (size_t)i * t->size;
    if (t->type == MPI_FLOAT) {
        float f = (float)v;
        memcpy(p, &f, sizeof(f));
    } else if (t->type == MPI_DOUBLE) {
        double d = (double)v;
        memcpy(p, &d, sizeof(d));
    } else if (t->size == 1) {
        int8_t x = (int8_t)v;
        memcpy(p, &x, 1);
    } else if (t->size == 2) {
        int16_t x = (int16_t)v;
        memcpy(p, &x, 2);
    } else if (t->size == 4) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, 4);
    } else {
        int64_t x = (int64_t)v;
        memcpy(p, &x, 8);
    }
}

static void fill(void *buf, int count, const type_t *t, int rank, int seed, MPI_Op op)
{
    int i;
    for (i = 0; i < count; i++)
        store(buf, i, t, value(i, rank, seed, op, t->kind));
}

/* A buffer of n elements of t (at least one byte, so never NULL),
 * poisoned so that unwritten bytes show in the checksum. */
static void *alloc(size_t n, size_t size)
{
    size_t bytes = n * size + 1;
    void *p = malloc(bytes);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 0xA5, bytes);
    return p;
}

/* --- the collectives ------------------------------------------------------------- */

typedef struct {
    MPI_Comm comm;
    const char *name;  /* same on every rank */
    int rank, size;
    /* roots to loop over: the largest size among the communicators that
     * run side by side, so that every rank reports the same lines */
    int nroots;
} comm_t;

static const int counts[] = {0, 1, 7, 1000};
#define NCOUNTS (int)(sizeof(counts) / sizeof(counts[0]))

static void test_allreduce(const comm_t *c)
{
    char label[128];
    int t, o, k, inplace;
    for (t = 0; t < NTYPES; t++) {
        for (o = 0; o < NOPS; o++) {
            if (ops[o].bitwise && types[t].kind == FLOATING)
                continue;  /* erroneous in MPI */
            for (k = 0; k < NCOUNTS; k++) {
                int n = counts[k];
                for (inplace = 0; inplace < 2; inplace++) {
                    const type_t *ty = &types[t];
                    void *in = alloc((size_t)n, ty->size), *out = alloc((size_t)n, ty->size);
                    if (inplace) {
                        fill(out, n, ty, c->rank, k, ops[o].op);
                        check(MPI_Allreduce(MPI_IN_PLACE, out, n, ty->type, ops[o].op, c->comm),
                              "MPI_Allreduce");
                    } else {
                        fill(in, n, ty, c->rank, k, ops[o].op);
                        check(MPI_Allreduce(in, out, n, ty->type, ops[o].op, c->comm),
                              "MPI_Allreduce");
                    }
                    snprintf(label, sizeof(label), "%s allreduce %s %s n=%d%s", c->name, ty->name,
                             ops[o].name, n, inplace ? " inplace" : "");
                    report(label, fnv(FNV_START, out, (size_t)n * ty->size));
                    free(in);
                    free(out);
                }
            }
        }
    }
}

static void test_reduce(const comm_t *c)
{
    static const int tsel[] = {0, 3, 6, 8};
    char label[128];
    int ri, root, s, o, inplace;
    for (ri = 0; ri < c->nroots; ri++) {
        root = ri % c->size;
        for (s = 0; s < 4; s++) {
            const type_t *ty = &types[tsel[s]];
            for (o = 0; o < 4; o++) {
                for (inplace = 0; inplace < 2; inplace++) {
                    int n = 13;
                    void *in = alloc((size_t)n, ty->size), *out = alloc((size_t)n, ty->size);
                    uint64_t h = FNV_START;
                    if (inplace && c->rank == root) {
                        fill(out, n, ty, c->rank, root, ops[o].op);
                        check(MPI_Reduce(MPI_IN_PLACE, out, n, ty->type, ops[o].op, root, c->comm),
                              "MPI_Reduce");
                    } else {
                        fill(in, n, ty, c->rank, root, ops[o].op);
                        check(MPI_Reduce(in, out, n, ty->type, ops[o].op, root, c->comm),
                              "MPI_Reduce");
                    }
                    if (c->rank == root)
                        h = fnv(h, out, (size_t)n * ty->size);
                    snprintf(label, sizeof(label), "%s reduce %s %s root=%d%s", c->name, ty->name,
                             ops[o].name, ri, inplace ? " inplace" : "");
                    report(label, h);
                    free(in);
                    free(out);
                }
            }
        }
    }
    /* count 0 */
    {
        int dummy = 7;
        check(MPI_Reduce(&dummy, &dummy, 0, MPI_INT, MPI_SUM, 0, c->comm), "MPI_Reduce");
        snprintf(label, sizeof(label), "%s reduce int sum n=0", c->name);
        report(label, (uint64_t)dummy);
    }
}

static void test_bcast(const comm_t *c, MPI_Datatype vec)
{
    char label[128];
    int ri, root, k;
    for (ri = 0; ri < c->nroots; ri++) {
        root = ri % c->size;
        for (k = 0; k < NCOUNTS; k++) {
            int n = counts[k], i;
            double *d = alloc((size_t)n, sizeof(double));
            for (i = 0; i < n; i++)
                d[i] = c->rank == root ? (double)(i * 5 + root) : -1.0;
            check(MPI_Bcast(d, n, MPI_DOUBLE, root, c->comm), "MPI_Bcast");
            snprintf(label, sizeof(label), "%s bcast double root=%d n=%d", c->name, ri, n);
            report(label, fnv(FNV_START, d, (size_t)n * sizeof(double)));
            free(d);
        }
        {
            /* a strided vector: must go back to MPI and still be right */
            int v[24], i;
            for (i = 0; i < 24; i++)
                v[i] = c->rank == root ? i * 3 + root : -1;
            check(MPI_Bcast(v, 2, vec, root, c->comm), "MPI_Bcast");
            snprintf(label, sizeof(label), "%s bcast vector root=%d", c->name, ri);
            report(label, fnv(FNV_START, v, sizeof(v)));
        }
        {
            char s[33];
            memset(s, c->rank == root ? 'a' + root : '?', 32);
            s[32] = 0;
            check(MPI_Bcast(s, 33, MPI_CHAR, root, c->comm), "MPI_Bcast");
            snprintf(label, sizeof(label), "%s bcast char root=%d", c->name, ri);
            report(label, fnv(FNV_START, s, sizeof(s)));
        }
    }
}

static void test_allgather(const comm_t *c, MPI_Datatype vec)
{
    char label[128];
    int k, inplace, i;
    for (k = 0; k < 3; k++) {
        int n = counts[k] + (k == 2 ? -2 : 0);  /* 0, 1, 5 */
        for (inplace = 0; inplace < 2; inplace++) {
            int *in = alloc((size_t)n, sizeof(int));
            int *out = alloc((size_t)n * (size_t)c->size, sizeof(int));
            for (i = 0; i < n; i++) {
                in[i] = c->rank * 100 + i;
                out[c->rank * n + i] = in[i];
            }
            check(MPI_Allgather(inplace ? MPI_IN_PLACE : in, n, MPI_INT, out, n, MPI_INT, c->comm),
                  "MPI_Allgather");
            snprintf(label, sizeof(label), "%s allgather int n=%d%s", c->name, n,
                     inplace ? " inplace" : "");
            report(label, fnv(FNV_START, out, (size_t)n * (size_t)c->size * sizeof(int)));
            free(in);
            free(out);
        }
    }
    {
        /* a vector on the send side, contiguous on the receive side */
        int v[24], *out = alloc((size_t)c->size * 2, sizeof(int));
        for (i = 0; i < 24; i++)
            v[i] = c->rank * 1000 + i;
        check(MPI_Allgather(v, 1, vec, out, 2, MPI_INT, c->comm), "MPI_Allgather");
        snprintf(label, sizeof(label), "%s allgather vector", c->name);
        report(label, fnv(FNV_START, out, (size_t)c->size * 2 * sizeof(int)));
        free(out);
    }
}

static void test_reduce_scatter(const comm_t *c)
{
    char label[128];
    int k, inplace, i, t;
    static const int tsel[] = {0, 4, 8};
    for (t = 0; t < 3; t++) {
        const type_t *ty = &types[tsel[t]];
        for (k = 0; k < 3; k++) {
            int n = k == 2 ? 3 : k;
            for (inplace = 0; inplace < 2; inplace++) {
                size_t total = (size_t)n * (size_t)c->size;
                void *in = alloc(total, ty->size), *out = alloc(inplace ? total : (size_t)n, ty->size);
                fill(inplace ? out : in, (int)total, ty, c->rank, k, MPI_SUM);
                check(MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : in, out, n, ty->type,
                                               MPI_SUM, c->comm),
                      "MPI_Reduce_scatter_block");
                snprintf(label, sizeof(label), "%s reduce_scatter_block %s n=%d%s", c->name,
                         ty->name, n, inplace ? " inplace" : "");
                report(label, fnv(FNV_START, out, (size_t)n * ty->size));
                free(in);
                free(out);
            }
        }
    }
    /* MPI_Reduce_scatter: equal counts (xcoll) and unequal ones (MPI) */
    for (k = 0; k < 2; k++) {
        int *rc = malloc((size_t)c->size * sizeof(int)), total = 0;
        for (i = 0; i < c->size; i++) {
            rc[i] = k == 0 ? 4 : i % 3 + 1;
            total += rc[i];
        }
        for (inplace = 0; inplace < 2; inplace++) {
            long *in = alloc((size_t)total, sizeof(long));
            long *out = alloc((size_t)total, sizeof(long));
            for (i = 0; i < total; i++)
                (inplace ? out : in)[i] = (i * 3 + c->rank) % 11;
            check(MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : in, out, rc, MPI_LONG, MPI_MAX,
                                     c->comm),
                  "MPI_Reduce_scatter");
            snprintf(label, sizeof(label), "%s reduce_scatter long max %s%s", c->name,
                     k == 0 ? "equal" : "unequal", inplace ? " inplace" : "");
            report(label, fnv(FNV_START, out, (size_t)rc[c->rank] * sizeof(long)));
            free(in);
            free(out);
        }
        free(rc);
    }
}

static void test_alltoall(const comm_t *c)
{
    char label[128];
    int k, inplace, i;
    for (k = 0; k < 3; k++) {
        int n = k == 2 ? 4 : k;
        for (inplace = 0; inplace < 2; inplace++) {
            size_t total = (size_t)n * (size_t)c->size;
            int *in = alloc(total, sizeof(int)), *out = alloc(total, sizeof(int));
            for (i = 0; i < (int)total; i++)
                (inplace ? out : in)[i] = c->rank * 1000 + i;
            check(MPI_Alltoall(inplace ? MPI_IN_PLACE : in, n, MPI_INT, out, n, MPI_INT, c->comm),
                  "MPI_Alltoall");
            snprintf(label, sizeof(label), "%s alltoall int n=%d%s", c->name, n,
                     inplace ? " inplace" : "");
            report(label, fnv(FNV_START, out, total * sizeof(int)));
            free(in);
            free(out);
        }
    }
}

static void test_gather_scatter(const comm_t *c, MPI_Datatype vec)
{
    char label[128];
    int ri, root, inplace, i, n;
    for (ri = 0; ri < c->nroots; ri++) {
        root = ri % c->size;
        for (n = 0; n <= 3; n += 3) {
            for (inplace = 0; inplace < 2; inplace++) {
                size_t total = (size_t)n * (size_t)c->size;
                float *in = alloc((size_t)n, sizeof(float)), *out = alloc(total, sizeof(float));
                uint64_t h = FNV_START;
                for (i = 0; i < n; i++) {
                    in[i] = (float)(c->rank * 10 + i);
                    if (c->rank == root)
                        out[root * n + i] = in[i];
                }
                check(MPI_Gather(inplace && c->rank == root ? MPI_IN_PLACE : in, n, MPI_FLOAT, out,
                                 n, MPI_FLOAT, root, c->comm),
                      "MPI_Gather");
                if (c->rank == root)
                    h = fnv(h, out, total * sizeof(float));
                snprintf(label, sizeof(label), "%s gather float root=%d n=%d%s", c->name, ri, n,
                         inplace ? " inplace" : "");
                report(label, h);
                free(in);
                free(out);
            }
            for (inplace = 0; inplace < 2; inplace++) {
                size_t total = (size_t)n * (size_t)c->size;
                int *in = alloc(total, sizeof(int)), *out = alloc((size_t)n, sizeof(int));
                uint64_t h;
                for (i = 0; i < (int)total; i++)
                    in[i] = c->rank == root ? i * 7 + root : -1;
                check(MPI_Scatter(in, n, MPI_INT,
                                  inplace && c->rank == root ? MPI_IN_PLACE : (void *)out, n,
                                  MPI_INT, root, c->comm),
                      "MPI_Scatter");
                h = inplace && c->rank == root ? fnv(FNV_START, in, total * sizeof(int))
                                               : fnv(FNV_START, out, (size_t)n * sizeof(int));
                snprintf(label, sizeof(label), "%s scatter int root=%d n=%d%s", c->name, ri, n,
                         inplace ? " inplace" : "");
                report(label, h);
                free(in);
                free(out);
            }
        }
        {
            /* vector send side on every rank: MPI serves it */
            int v[24], *out = alloc((size_t)c->size * 2, sizeof(int));
            uint64_t h = FNV_START;
            for (i = 0; i < 24; i++)
                v[i] = c->rank * 1000 + i;
            check(MPI_Gather(v, 1, vec, out, 2, MPI_INT, root, c->comm), "MPI_Gather");
            if (c->rank == root)
                h = fnv(h, out, (size_t)c->size * 2 * sizeof(int));
            snprintf(label, sizeof(label), "%s gather vector root=%d", c->name, ri);
            report(label, h);
            free(out);
        }
    }
}

/* Operations xcoll must hand back to MPI, with their results checked too. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int i;
    (void)type;
    for (i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void test_passed_back(const comm_t *c)
{
    char label[128];
    int in[5], out[5], i;
    struct { int v, r; } loc_in[3], loc_out[3];
    MPI_Op user;
    for (i = 0; i < 5; i++)
        in[i] = c->rank + i;
    MPI_Op_create(user_sum, 1, &user);
    check(MPI_Allreduce(in, out, 5, MPI_INT, user, c->comm), "MPI_Allreduce");
    snprintf(label, sizeof(label), "%s allreduce int user-op", c->name);
    report(label, fnv(FNV_START, out, sizeof(out)));
    MPI_Op_free(&user);

    for (i = 0; i < 3; i++) {
        loc_in[i].v = (c->rank * 7 + i) % 5;
        loc_in[i].r = c->rank;
    }
    check(MPI_Allreduce(loc_in, loc_out, 3, MPI_2INT, MPI_MAXLOC, c->comm), "MPI_Allreduce");
    snprintf(label, sizeof(label), "%s allreduce 2int maxloc", c->name);
    report(label, fnv(FNV_START, loc_out, sizeof(loc_out)));

    for (i = 0; i < 5; i++)
        in[i] = (c->rank + i) % 2;
    check(MPI_Allreduce(in, out, 5, MPI_INT, MPI_LAND, c->comm), "MPI_Allreduce");
    snprintf(label, sizeof(label), "%s allreduce int land", c->name);
    report(label, fnv(FNV_START, out, sizeof(out)));
}

/* Calls that move no data (count 0, or a type of size 0): legal, nothing
 * written anywhere. The receive side of a gather or scatter is not
 * significant away from the root, so it says 5 there: whatever a rank's
 * insignificant arguments, every rank must choose as the others do. */
static void test_zero(const comm_t *c)
{
    char label[128];
    int buf[8], i, *rcounts = alloc((size_t)c->size, sizeof(int));
    MPI_Datatype empty;
    MPI_Request req[2];
    const int root = c->size - 1, at_root = c->rank == root;
    uint64_t h;
    memset(rcounts, 0, (size_t)c->size * sizeof(int));
    for (i = 0; i < 8; i++)
        buf[i] = 1000 + c->rank * 10 + i;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    check(MPI_Allreduce(buf, buf + 4, 0, MPI_INT, MPI_SUM, c->comm), "MPI_Allreduce");
    check(MPI_Bcast(buf, 0, MPI_INT, root, c->comm), "MPI_Bcast");
    check(MPI_Bcast(buf, 3, empty, root, c->comm), "MPI_Bcast");
    check(MPI_Allgather(buf, 0, MPI_INT, buf + 4, 0, MPI_INT, c->comm), "MPI_Allgather");
    check(MPI_Reduce_scatter_block(buf, buf + 4, 0, MPI_INT, MPI_SUM, c->comm),
          "MPI_Reduce_scatter_block");
    check(MPI_Reduce_scatter(buf, buf + 4, rcounts, MPI_INT, MPI_SUM, c->comm),
          "MPI_Reduce_scatter");
    check(MPI_Alltoall(buf, 0, MPI_INT, buf + 4, 0, MPI_INT, c->comm), "MPI_Alltoall");
    check(MPI_Gather(buf, 0, MPI_INT, at_root ? buf + 4 : NULL, at_root ? 0 : 5, MPI_INT, root,
                     c->comm), "MPI_Gather");
    check(MPI_Scatter(at_root ? buf : NULL, at_root ? 0 : 5, MPI_INT, buf + 4, 0, MPI_INT, root,
                      c->comm), "MPI_Scatter");
    check(MPI_Iallreduce(MPI_IN_PLACE, buf, 0, MPI_INT, MPI_MAX, c->comm, &req[0]),
          "MPI_Iallreduce");
    check(MPI_Ibcast(buf + 4, 0, MPI_INT, 0, c->comm, &req[1]), "MPI_Ibcast");
    check(MPI_Wait(&req[1], MPI_STATUS_IGNORE), "MPI_Wait");
    check(MPI_Wait(&req[0], MPI_STATUS_IGNORE), "MPI_Wait");
    MPI_Type_free(&empty);
    free(rcounts);
    h = fnv(FNV_START, buf, sizeof(buf));
    snprintf(label, sizeof(label), "%s zero-byte calls leave buffers alone", c->name);
    report(label, h);
}

static void test_nonblocking(const comm_t *c)
{
    char label[128];
    MPI_Request req[10];
    /* real statuses: GCC 12 misreads MPICH's MPI_STATUSES_IGNORE as an empty array */
    MPI_Status st[10];
    int n = 6, i, root = c->size - 1;
    int ar_in[6], ar_out[6], bc[6], rd_out[6], rsb_out[6], rs_out[6];
    int *ag = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *rsb_in = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *rs_in = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *a2a_in = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *a2a_out = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *ga = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *sc_in = alloc((size_t)c->size * (size_t)n, sizeof(int)), sc_out[6];
    int *rcounts = malloc((size_t)c->size * sizeof(int));
    uint64_t h = FNV_START;

    for (i = 0; i < n; i++) {
        ar_in[i] = c->rank + i;
        bc[i] = c->rank == 0 ? 40 + i : -1;
    }
    for (i = 0; i < c->size * n; i++) {
        rsb_in[i] = (i + c->rank) % 9;
        rs_in[i] = (i * 2 + c->rank) % 9;
        a2a_in[i] = c->rank * 100 + i;
        sc_in[i] = c->rank == root ? i * 3 : -1;
    }
    for (i = 0; i < c->size; i++)
        rcounts[i] = n;
    /* all outstanding at once, completed together */
    check(MPI_Iallreduce(ar_in, ar_out, n, MPI_INT, MPI_SUM, c->comm, &req[0]), "MPI_Iallreduce");
    check(MPI_Ibcast(bc, n, MPI_INT, 0, c->comm, &req[1]), "MPI_Ibcast");
    check(MPI_Ireduce(ar_in, rd_out, n, MPI_INT, MPI_MAX, root, c->comm, &req[2]), "MPI_Ireduce");
    check(MPI_Iallgather(ar_in, n, MPI_INT, ag, n, MPI_INT, c->comm, &req[3]), "MPI_Iallgather");
    check(MPI_Ireduce_scatter_block(rsb_in, rsb_out, n, MPI_INT, MPI_SUM, c->comm, &req[4]),
          "MPI_Ireduce_scatter_block");
    check(MPI_Ireduce_scatter(rs_in, rs_out, rcounts, MPI_INT, MPI_MIN, c->comm, &req[5]),
          "MPI_Ireduce_scatter");
    check(MPI_Ialltoall(a2a_in, n, MPI_INT, a2a_out, n, MPI_INT, c->comm, &req[6]),
          "MPI_Ialltoall");
    check(MPI_Igather(ar_in, n, MPI_INT, ga, n, MPI_INT, root, c->comm, &req[7]), "MPI_Igather");
    check(MPI_Iscatter(sc_in, n, MPI_INT, sc_out, n, MPI_INT, root, c->comm, &req[8]),
          "MPI_Iscatter");
    check(MPI_Ibarrier(c->comm, &req[9]), "MPI_Ibarrier");
    check(MPI_Waitall(10, req, st), "MPI_Waitall");

    h = fnv(h, ar_out, sizeof(ar_out));
    h = fnv(h, bc, sizeof(bc));
    if (c->rank == root) {
        h = fnv(h, rd_out, sizeof(rd_out));
        h = fnv(h, ga, (size_t)c->size * (size_t)n * sizeof(int));
    }
    h = fnv(h, ag, (size_t)c->size * (size_t)n * sizeof(int));
    h = fnv(h, rsb_out, sizeof(rsb_out));
    h = fnv(h, rs_out, sizeof(rs_out));
    h = fnv(h, a2a_out, (size_t)c->size * (size_t)n * sizeof(int));
    h = fnv(h, sc_out, sizeof(sc_out));
    snprintf(label, sizeof(label), "%s nonblocking all ten", c->name);
    report(label, h);

    /* MPI_Test loop on one, and a nonblocking call in place */
    {
        int done = 0;
        for (i = 0; i < n; i++)
            ar_out[i] = c->rank * 2 + i;
        check(MPI_Iallreduce(MPI_IN_PLACE, ar_out, n, MPI_INT, MPI_BXOR, c->comm, &req[0]),
              "MPI_Iallreduce");
        while (!done)
            check(MPI_Test(&req[0], &done, MPI_STATUS_IGNORE), "MPI_Test");
        snprintf(label, sizeof(label), "%s iallreduce inplace bxor test-loop", c->name);
        report(label, fnv(FNV_START, ar_out, sizeof(ar_out)));
    }
    free(ag);
    free(rsb_in);
    free(rs_in);
    free(a2a_in);
    free(a2a_out);
    free(ga);
    free(sc_in);
    free(rcounts);
}

/* Nonblocking collectives completed by every member of the wait/test
 * family, mixed with point-to-point requests and with nonblocking calls
 * MPI must serve (derived type, MAXLOC) in one array. */
static void test_nonblocking_mixed(const comm_t *c, MPI_Datatype vec)
{
    char label[128];
    MPI_Request req[6];
    MPI_Status st[6];
    int n = 5, i, root = c->size > 1 ? 1 : 0, done, idx, outcount, indices[6];
    int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
    int ar[5], ar2[5], vbuf[8], sendv = c->rank * 7 + 1, recvv = -1, sendw = c->rank + 100,
               recvw = -1;
    int loc_in[2] = {c->rank % 3, c->rank}, loc_out[2] = {-1, -1};
    int *ag = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *a2a_in = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *a2a_out = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *ga = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int *sc_in = alloc((size_t)c->size * (size_t)n, sizeof(int));
    int rd[5], sc[5], rsb[5], bc[5];
    uint64_t h = FNV_START;

    for (i = 0; i < n; i++)
        ar[i] = c->rank * 3 + i;
    /* two vectors of {int, 2-int gap, int} span 8 ints */
    for (i = 0; i < 8; i++)
        vbuf[i] = c->rank == 0 ? 60 + i : -1;
    for (i = 0; i < c->size * n; i++) {
        a2a_in[i] = c->rank * 1000 + i;
        sc_in[i] = c->rank == root ? i + 5 : -1;
    }

    /* Waitall over served, passed-back and point-to-point requests */
    check(MPI_Iallreduce(ar, ar2, n, MPI_INT, MPI_SUM, c->comm, &req[0]), "MPI_Iallreduce");
    check(MPI_Irecv(&recvv, 1, MPI_INT, left, 77, c->comm, &req[1]), "MPI_Irecv");
    check(MPI_Ibcast(vbuf, 2, vec, 0, c->comm, &req[2]), "MPI_Ibcast");
    check(MPI_Iallreduce(loc_in, loc_out, 1, MPI_2INT, MPI_MAXLOC, c->comm, &req[3]),
          "MPI_Iallreduce");
    check(MPI_Isend(&sendv, 1, MPI_INT, right, 77, c->comm, &req[4]), "MPI_Isend");
    check(MPI_Ibarrier(c->comm, &req[5]), "MPI_Ibarrier");
    check(MPI_Waitall(6, req, st), "MPI_Waitall");
    h = fnv(h, ar2, sizeof(ar2));
    h = fnv(h, &recvv, sizeof(recvv));
    h = fnv(h, vbuf, sizeof(vbuf));
    h = fnv(h, loc_out, sizeof(loc_out));
    snprintf(label, sizeof(label), "%s nonblocking mixed waitall", c->name);
    report(label, h);

    /* MPI_Wait on a receive whose sender first waits for this rank's share
     * of a nonblocking collective: the wait must keep the collective moving */
    recvv = -1;
    check(MPI_Iallreduce(ar, ar2, n, MPI_INT, MPI_MAX, c->comm, &req[0]), "MPI_Iallreduce");
    if (c->rank % 2 == 0) {
        if (c->rank + 1 < c->size) {
            check(MPI_Irecv(&recvv, 1, MPI_INT, c->rank + 1, 79, c->comm, &req[1]), "MPI_Irecv");
            check(MPI_Wait(&req[1], MPI_STATUS_IGNORE), "MPI_Wait");
        }
        check(MPI_Wait(&req[0], MPI_STATUS_IGNORE), "MPI_Wait");
    } else {
        check(MPI_Wait(&req[0], MPI_STATUS_IGNORE), "MPI_Wait");
        check(MPI_Send(&sendv, 1, MPI_INT, c->rank - 1, 79, c->comm), "MPI_Send");
    }
    h = fnv(FNV_START, ar2, sizeof(ar2));
    h = fnv(h, &recvv, sizeof(recvv));
    snprintf(label, sizeof(label), "%s nonblocking wait on a dependent receive", c->name);
    report(label, h);

    /* Waitany until none is left */
    h = FNV_START;
    check(MPI_Iallgather(ar, n, MPI_INT, ag, n, MPI_INT, c->comm, &req[0]), "MPI_Iallgather");
    check(MPI_Irecv(&recvw, 1, MPI_INT, left, 78, c->comm, &req[1]), "MPI_Irecv");
    check(MPI_Ialltoall(a2a_in, n, MPI_INT, a2a_out, n, MPI_INT, c->comm, &req[2]),
          "MPI_Ialltoall");
    check(MPI_Isend(&sendw, 1, MPI_INT, right, 78, c->comm, &req[3]), "MPI_Isend");
    for (done = 0;; done++) {
        check(MPI_Waitany(4, req, &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
        if (idx == MPI_UNDEFINED)
            break;
    }
    h = fnv(h, &done, sizeof(done));
    h = fnv(h, ag, (size_t)c->size * (size_t)n * sizeof(int));
    h = fnv(h, a2a_out, (size_t)c->size * (size_t)n * sizeof(int));
    h = fnv(h, &recvw, sizeof(recvw));
    snprintf(label, sizeof(label), "%s nonblocking waitany", c->name);
    report(label, h);

    /* Waitsome until none is left */
    h = FNV_START;
    check(MPI_Ireduce(ar, rd, n, MPI_INT, MPI_MIN, root, c->comm, &req[0]), "MPI_Ireduce");
    check(MPI_Igather(ar, n, MPI_INT, ga, n, MPI_INT, root, c->comm, &req[1]), "MPI_Igather");
    check(MPI_Iscatter(sc_in, n, MPI_INT, sc, n, MPI_INT, root, c->comm, &req[2]), "MPI_Iscatter");
    for (done = 0;;) {
        check(MPI_Waitsome(3, req, &outcount, indices, st), "MPI_Waitsome");
        if (outcount == MPI_UNDEFINED)
            break;
        done += outcount;
    }
    h = fnv(h, &done, sizeof(done));
    if (c->rank == root) {
        h = fnv(h, rd, sizeof(rd));
        h = fnv(h, ga, (size_t)c->size * (size_t)n * sizeof(int));
    }
    h = fnv(h, sc, sizeof(sc));
    snprintf(label, sizeof(label), "%s nonblocking waitsome", c->name);
    report(label, h);

    /* Testall, Testany, Testsome and Request_get_status loops */
    h = FNV_START;
    for (i = 0; i < n; i++)
        bc[i] = c->rank == root ? 9 * i : -1;
    check(MPI_Ireduce_scatter_block(a2a_in, rsb, n, MPI_INT, MPI_MAX, c->comm, &req[0]),
          "MPI_Ireduce_scatter_block");
    check(MPI_Ibcast(bc, n, MPI_INT, root, c->comm, &req[1]), "MPI_Ibcast");
    for (done = 0; !done;)
        check(MPI_Testall(2, req, &done, st), "MPI_Testall");
    h = fnv(h, rsb, sizeof(rsb));
    h = fnv(h, bc, sizeof(bc));
    check(MPI_Iallreduce(ar, ar2, n, MPI_INT, MPI_PROD, c->comm, &req[0]), "MPI_Iallreduce");
    check(MPI_Ibarrier(c->comm, &req[1]), "MPI_Ibarrier");
    for (;;) {
        check(MPI_Testany(2, req, &idx, &done, MPI_STATUS_IGNORE), "MPI_Testany");
        if (done && idx == MPI_UNDEFINED)
            break;
    }
    h = fnv(h, ar2, sizeof(ar2));
    /* in place: this rank's block is the input */
    for (i = 0; i < n; i++)
        ga[c->rank * n + i] = c->rank + i;
    check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ga, n, MPI_INT, c->comm, &req[0]),
          "MPI_Iallgather");
    check(MPI_Wait(&req[0], MPI_STATUS_IGNORE), "MPI_Wait");
    h = fnv(h, ga, (size_t)c->size * (size_t)n * sizeof(int));
    for (i = 0; i < n; i++)
        ar2[i] = c->rank == 0 ? 11 * i : -1;
    check(MPI_Iallreduce(MPI_IN_PLACE, ar, n, MPI_INT, MPI_BOR, c->comm, &req[0]),
          "MPI_Iallreduce");
    check(MPI_Ibcast(ar2, n, MPI_INT, 0, c->comm, &req[1]), "MPI_Ibcast");
    for (;;) {
        check(MPI_Testsome(2, req, &outcount, indices, st), "MPI_Testsome");
        if (outcount == MPI_UNDEFINED)
            break;
    }
    h = fnv(h, ar, sizeof(ar));
    h = fnv(h, ar2, sizeof(ar2));
    check(MPI_Ialltoall(a2a_in, n, MPI_INT, a2a_out, n, MPI_INT, c->comm, &req[0]),
          "MPI_Ialltoall");
    for (done = 0; !done;)
        check(MPI_Request_get_status(req[0], &done, MPI_STATUS_IGNORE), "MPI_Request_get_status");
    check(MPI_Wait(&req[0], MPI_STATUS_IGNORE), "MPI_Wait");
    h = fnv(h, a2a_out, (size_t)c->size * (size_t)n * sizeof(int));
    snprintf(label, sizeof(label), "%s nonblocking test loops", c->name);
    report(label, h);

    free(ag);
    free(a2a_in);
    free(a2a_out);
    free(ga);
    free(sc_in);
}

/* Ranks that block in another MPI call while their own nonblocking
 * collective is pending, waiting for a peer that first waits for that
 * collective: the first collective on a fresh communicator (which sets
 * up its xcoll communicator) and a blocking receive. */
static void test_nonblocking_cross(const comm_t *c)
{
    char label[128];
    MPI_Comm fresh;
    MPI_Request req;
    int n = 4, i, in[4], out[4], fresh_out[4], loc_in[2], loc_out[2] = {-1, -1}, token = -1;
    uint64_t h;

    MPI_Comm_dup(c->comm, &fresh);
    for (i = 0; i < n; i++)
        in[i] = c->rank * 5 + i;
    loc_in[0] = c->rank % 2;
    loc_in[1] = c->rank;
    check(MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, c->comm, &req), "MPI_Iallreduce");
    if (c->rank % 2 == 0) {
        check(MPI_Allreduce(in, fresh_out, n, MPI_INT, MPI_MAX, fresh), "MPI_Allreduce");
        check(MPI_Allreduce(loc_in, loc_out, 1, MPI_2INT, MPI_MINLOC, fresh), "MPI_Allreduce");
        if (c->rank + 1 < c->size)
            check(MPI_Recv(&token, 1, MPI_INT, c->rank + 1, 80, c->comm, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    } else {
        check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
        check(MPI_Send(&c->rank, 1, MPI_INT, c->rank - 1, 80, c->comm), "MPI_Send");
        check(MPI_Allreduce(in, fresh_out, n, MPI_INT, MPI_MAX, fresh), "MPI_Allreduce");
        check(MPI_Allreduce(loc_in, loc_out, 1, MPI_2INT, MPI_MINLOC, fresh), "MPI_Allreduce");
    }
    h = fnv(FNV_START, out, sizeof(out));
    h = fnv(h, fresh_out, sizeof(fresh_out));
    h = fnv(h, loc_out, sizeof(loc_out));
    h = fnv(h, &token, sizeof(token));
    snprintf(label, sizeof(label), "%s nonblocking pending across blocking calls", c->name);
    report(label, h);
    MPI_Comm_free(&fresh);
}

static void run_all(const comm_t *c, MPI_Datatype vec)
{
    char label[128];
    test_allreduce(c);
    test_reduce(c);
    test_bcast(c, vec);
    test_allgather(c, vec);
    test_reduce_scatter(c);
    test_alltoall(c);
    test_gather_scatter(c, vec);
    test_passed_back(c);
    test_zero(c);
    test_nonblocking(c);
    test_nonblocking_mixed(c, vec);
    test_nonblocking_cross(c);
    check(MPI_Barrier(c->comm), "MPI_Barrier");
    snprintf(label, sizeof(label), "%s barrier", c->name);
    report(label, 0);
}

int main(int argc, char **argv)
{
    MPI_Datatype vec;
    MPI_Comm split, dup;
    comm_t c;
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    /* 2 ints taken every 3rd int: not contiguous */
    MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    if (world_rank == 0)
        printf("dropin_test: %d ranks\n", world_size);

    c.comm = MPI_COMM_WORLD;
    c.name = "world";
    c.rank = world_rank;
    c.size = world_size;
    c.nroots = world_size;
    run_all(&c, vec);

    if (!quick) {
        /* odd and even ranks, in reverse order: rank numbers differ from world's */
        MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_size - world_rank, &split);
        c.comm = split;
        MPI_Comm_rank(split, &c.rank);
        MPI_Comm_size(split, &c.size);
        /* both halves report under one name, so that lines match across ranks */
        c.name = "split";
        c.nroots = (world_size + 1) / 2;
        run_all(&c, vec);

        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        c.comm = dup;
        c.name = "dup";
        c.rank = world_rank;
        c.size = world_size;
        test_allreduce(&c);
        test_nonblocking(&c);
        MPI_Comm_free(&dup);
        MPI_Comm_free(&split);
    }

    MPI_Type_free(&vec);
    if (world_rank == 0)
        printf("dropin_test: done\n");
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
