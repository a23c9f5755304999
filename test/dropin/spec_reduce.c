/*
 * spec_reduce.c - reductions as the MPI standard defines them (MPI-3.1
 * 5.9), results computed here and compared exactly:
 *  - every predefined op on every predefined C type it applies to,
 *    including those xcoll has no element for (short, long double, bool,
 *    complex, the logical ops);
 *  - MPI_MINLOC/MPI_MAXLOC on every pair type, with ties (the lowest index
 *    wins), then a broadcast of the pair array (an extent with a gap);
 *  - derived datatypes whose signature is one basic type: contiguous,
 *    strided, structs with gaps, nested, resized, all non-contiguous in
 *    memory, so the result must land in the gaps' neighbours only;
 *  - user ops, commutative and not (rank order is part of the result);
 *  - MPI_IN_PLACE (on all ranks for allreduce, at the root only for
 *    reduce), count 0, reduce_scatter with uneven and zero counts.
 */
#include "spec.h"

#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

/* --- every predefined op on every C type ------------------------------------ */

/* Rank r's element i, kept small so every sum and product is exact. */
static long long input(int r, int i, int op_is_prod)
{
    if (op_is_prod)
        return (r + i) % 3 == 0 ? 2 : 1;
    return (long long)((r * 7 + i * 3) % 11) - 3;
}

typedef enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_BAND, OP_BOR, OP_BXOR, OP_LAND, OP_LOR,
               OP_LXOR, OP_COUNT } op_t;

static const char *const op_names[OP_COUNT] = {"SUM", "PROD", "MIN", "MAX", "BAND",
                                               "BOR", "BXOR", "LAND", "LOR", "LXOR"};

static MPI_Op mpi_op(op_t op)
{
    static const MPI_Op ops[OP_COUNT] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND,
                                         MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
    return ops[op];
}

static long long fold(op_t op, long long a, long long b)
{
    switch (op) {
    case OP_SUM: return a + b;
    case OP_PROD: return a * b;
    case OP_MIN: return a < b ? a : b;
    case OP_MAX: return a > b ? a : b;
    case OP_BAND: return a & b;
    case OP_BOR: return a | b;
    case OP_BXOR: return a ^ b;
    case OP_LAND: return (a != 0) && (b != 0);
    case OP_LOR: return (a != 0) || (b != 0);
    case OP_LXOR: return (a != 0) != (b != 0);
    default: return 0;
    }
}

/* A C type as the test sees it: store and load element i as long long. */
typedef struct {
    const char *name;
    MPI_Datatype type;
    size_t size;
    int is_float, is_unsigned, is_bool, is_complex;
} ctype_t;

static void put(const ctype_t *t, void *buf, int i, long long v)
{
    char *p = (char *)buf + (size_t)i * t->size;
    if (t->is_complex) {
        double complex z = (double)v + 0.0 * I;
        memcpy(p, &z, sizeof(z));
    } else if (t->is_bool) {
        bool b = v != 0;
        memcpy(p, &b, sizeof(b));
    } else if (t->is_float) {
        if (t->size == sizeof(float)) {
            float f = (float)v;
            memcpy(p, &f, sizeof(f));
        } else if (t->size == sizeof(double)) {
            double d = (double)v;
            memcpy(p, &d, sizeof(d));
        } else {
            long double d = (long double)v;
            memcpy(p, &d, sizeof(d));
        }
    } else {
        /* two's complement: the low bytes of v */
        unsigned long long u = (unsigned long long)v;
        memcpy(p, &u, t->size); /* little endian, as x86-64 */
    }
}

static long long get(const ctype_t *t, const void *buf, int i)
{
    const char *p = (const char *)buf + (size_t)i * t->size;
    if (t->is_complex) {
        double complex z;
        memcpy(&z, p, sizeof(z));
        return (long long)creal(z);
    }
    if (t->is_bool) {
        bool b;
        memcpy(&b, p, sizeof(b));
        return b;
    }
    if (t->is_float) {
        if (t->size == sizeof(float)) {
            float f;
            memcpy(&f, p, sizeof(f));
            return (long long)f;
        }
        if (t->size == sizeof(double)) {
            double d;
            memcpy(&d, p, sizeof(d));
            return (long long)d;
        }
        {
            long double d;
            memcpy(&d, p, sizeof(d));
            return (long long)d;
        }
    }
    {
        unsigned long long u = 0;
        long long v;
        memcpy(&u, p, t->size);
        if (!t->is_unsigned && t->size < 8 && (u >> (t->size * 8 - 1)) & 1)
            u |= ~0ULL << (t->size * 8); /* sign-extend */
        v = (long long)u;
        return v;
    }
}

/* The value an element of t holds after storing v (wraps for unsigned). */
static long long as_type(const ctype_t *t, long long v)
{
    char tmp[16];
    put(t, tmp, 0, v);
    return get(t, tmp, 0);
}

static int op_applies(const ctype_t *t, op_t op)
{
    if (t->is_complex)
        return op == OP_SUM || op == OP_PROD;
    if (t->is_bool)
        return op >= OP_LAND;
    if (t->is_float)
        return op <= OP_MAX;
    return 1;
}

static void test_predefined(int n)
{
    static const ctype_t types[] = {
        {"MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, 1, 0, 0, 0, 0},
        {"MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, 1, 0, 1, 0, 0},
        {"MPI_SHORT", MPI_SHORT, sizeof(short), 0, 0, 0, 0},
        {"MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, sizeof(short), 0, 1, 0, 0},
        {"MPI_INT", MPI_INT, sizeof(int), 0, 0, 0, 0},
        {"MPI_UNSIGNED", MPI_UNSIGNED, sizeof(unsigned), 0, 1, 0, 0},
        {"MPI_LONG", MPI_LONG, sizeof(long), 0, 0, 0, 0},
        {"MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, sizeof(long), 0, 1, 0, 0},
        {"MPI_LONG_LONG", MPI_LONG_LONG, sizeof(long long), 0, 0, 0, 0},
        {"MPI_INT8_T", MPI_INT8_T, 1, 0, 0, 0, 0},
        {"MPI_UINT16_T", MPI_UINT16_T, 2, 0, 1, 0, 0},
        {"MPI_INT32_T", MPI_INT32_T, 4, 0, 0, 0, 0},
        {"MPI_UINT64_T", MPI_UINT64_T, 8, 0, 1, 0, 0},
        {"MPI_FLOAT", MPI_FLOAT, sizeof(float), 1, 0, 0, 0},
        {"MPI_DOUBLE", MPI_DOUBLE, sizeof(double), 1, 0, 0, 0},
        {"MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, sizeof(long double), 1, 0, 0, 0},
        {"MPI_C_BOOL", MPI_C_BOOL, sizeof(bool), 0, 0, 1, 0},
        {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, sizeof(double complex), 0, 0, 0, 1},
    };
    size_t k;
    int op, i, q, root = spec_size / 2;
    for (k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
        const ctype_t *t = &types[k];
        char *in = spec_alloc((size_t)n * t->size), *out = spec_alloc((size_t)n * t->size);
        for (op = 0; op < OP_COUNT; op++) {
            int prod = op == OP_PROD, which;
            if (!op_applies(t, (op_t)op))
                continue;
            for (i = 0; i < n; i++)
                put(t, in, i, t->is_bool       ? (spec_rank + i) % 3 != 0
                              : t->is_unsigned ? input(spec_rank, i, prod) + 3
                                               : input(spec_rank, i, prod));
            for (which = 0; which < 2; which++) {
                memset(out, 0x5C, (size_t)n * t->size);
                if (which == 0)
                    SPEC_MPI(MPI_Allreduce(in, out, n, t->type, mpi_op((op_t)op), MPI_COMM_WORLD));
                else
                    SPEC_MPI(MPI_Reduce(in, out, n, t->type, mpi_op((op_t)op), root,
                                        MPI_COMM_WORLD));
                if (which == 1 && spec_rank != root)
                    continue;
                for (i = 0; i < n; i++) {
                    long long want = t->is_bool       ? (0 + i) % 3 != 0
                                     : t->is_unsigned ? input(0, i, prod) + 3
                                                      : input(0, i, prod);
                    want = as_type(t, want);
                    for (q = 1; q < spec_size; q++) {
                        long long v = t->is_bool       ? (q + i) % 3 != 0
                                      : t->is_unsigned ? input(q, i, prod) + 3
                                                       : input(q, i, prod);
                        want = as_type(t, fold((op_t)op, want, as_type(t, v)));
                    }
                    if (get(t, out, i) != want) {
                        spec_fail("%s %s %s, count %d: element %d is %lld, expected %lld",
                                  which ? "reduce" : "allreduce", t->name, op_names[op], n, i,
                                  get(t, out, i), want);
                        break;
                    }
                }
            }
        }
        free(in);
        free(out);
    }
}

/* --- MINLOC / MAXLOC -------------------------------------------------------------- */

/* Values repeat every 3 ranks, so ties are common: the lowest index wins. */
static int loc_value(int r, int i)
{
    return ((r % 3) * 5 + i) % 7;
}

#define LOC_TEST(T, MPIT, NAME)                                                         \
    static void test_loc_##NAME(int n)                                                  \
    {                                                                                   \
        struct {                                                                        \
            T v;                                                                        \
            int i;                                                                      \
        } *in = spec_alloc((size_t)n * sizeof(*in)), *out = spec_alloc((size_t)n * sizeof(*out)); \
        int e, q, maxloc;                                                               \
        for (maxloc = 0; maxloc < 2; maxloc++) {                                        \
            for (e = 0; e < n; e++) {                                                   \
                in[e].v = (T)loc_value(spec_rank, e);                                   \
                in[e].i = spec_rank;                                                    \
            }                                                                           \
            memset(out, 0x5C, (size_t)n * sizeof(*out));                                \
            SPEC_MPI(MPI_Allreduce(in, out, n, MPIT, maxloc ? MPI_MAXLOC : MPI_MINLOC,  \
                                   MPI_COMM_WORLD));                                    \
            for (e = 0; e < n; e++) {                                                   \
                int best = loc_value(0, e), at = 0;                                     \
                for (q = 1; q < spec_size; q++) {                                       \
                    int v = loc_value(q, e);                                            \
                    if (maxloc ? v > best : v < best)                                   \
                        best = v, at = q;                                               \
                }                                                                       \
                if (out[e].v != (T)best || out[e].i != at) {                            \
                    spec_fail("allreduce %s %s: element %d is {%g, %d}, expected {%d, %d}", \
                              #MPIT, maxloc ? "MAXLOC" : "MINLOC", e, (double)out[e].v,  \
                              out[e].i, best, at);                                      \
                    break;                                                              \
                }                                                                       \
            }                                                                           \
        }                                                                               \
        free(in);                                                                       \
        free(out);                                                                      \
    }

LOC_TEST(float, MPI_FLOAT_INT, float)
LOC_TEST(long, MPI_LONG_INT, long)
LOC_TEST(int, MPI_2INT, 2int)
LOC_TEST(short, MPI_SHORT_INT, short)
LOC_TEST(long double, MPI_LONG_DOUBLE_INT, long_double)

/* MPI_Reduce with MAXLOC on MPI_DOUBLE_INT, then MPI_Bcast of the result:
 * every rank must end with the root's values and indices. */
static void test_double_int_reduce_bcast(int n)
{
    struct di {
        double v;
        int i;
    } *in = spec_alloc((size_t)n * sizeof(*in)), *res = spec_alloc((size_t)n * sizeof(*res));
    int e, q, root = spec_size - 1;
    for (e = 0; e < n; e++) {
        in[e].v = loc_value(spec_rank, e) * 0.25;
        in[e].i = spec_rank;
    }
    memset(res, 0x5C, (size_t)n * sizeof(*res));
    SPEC_MPI(MPI_Reduce(in, res, n, MPI_DOUBLE_INT, MPI_MAXLOC, root, MPI_COMM_WORLD));
    SPEC_MPI(MPI_Bcast(res, n, MPI_DOUBLE_INT, root, MPI_COMM_WORLD));
    for (e = 0; e < n; e++) {
        int best = loc_value(0, e), at = 0;
        for (q = 1; q < spec_size; q++)
            if (loc_value(q, e) > best)
                best = loc_value(q, e), at = q;
        if (res[e].v != best * 0.25 || res[e].i != at) {
            spec_fail("reduce MAXLOC + bcast of MPI_DOUBLE_INT: element %d is {%g, %d}, "
                      "expected {%g, %d}", e, res[e].v, res[e].i, best * 0.25, at);
            break;
        }
    }
    free(in);
    free(res);
}

/* --- derived datatypes of one basic type --------------------------------------------- */

typedef struct {
    const char *name;
    MPI_Datatype type;   /* committed */
    int per_elem;        /* doubles per element */
    size_t span;         /* bytes from one element's start to the next */
    size_t where[4];     /* byte offset of the element's doubles */
} dlayout_t;

static void dlayouts(dlayout_t *d, int *n)
{
    MPI_Datatype t;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {16, 0};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_DOUBLE};
    int k = 0;

    SPEC_MPI(MPI_Type_contiguous(3, MPI_DOUBLE, &t));
    d[k] = (dlayout_t){"contiguous(3)", t, 3, 24, {0, 8, 16, 0}};
    k++;
    SPEC_MPI(MPI_Type_vector(2, 1, 3, MPI_DOUBLE, &t));
    d[k] = (dlayout_t){"vector(2,1,3)", t, 2, 32, {0, 24, 0, 0}};
    k++;
    /* doubles at 16 then 0 (backwards), extent 24 */
    SPEC_MPI(MPI_Type_create_struct(2, bl, disp, types, &t));
    d[k] = (dlayout_t){"struct-backwards", t, 2, 24, {16, 0, 0, 0}};
    k++;
    {
        MPI_Datatype r;
        SPEC_MPI(MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &r));
        SPEC_MPI(MPI_Type_contiguous(2, r, &t));
        MPI_Type_free(&r);
        d[k] = (dlayout_t){"contiguous(2, resized 16)", t, 2, 32, {0, 16, 0, 0}};
        k++;
    }
    for (int i = 0; i < k; i++)
        SPEC_MPI(MPI_Type_commit(&d[i].type));
    *n = k;
}

static double dval(int r, int i)
{
    return (double)((r * 5 + i) % 13) - 4.0;
}

/* Fills count elements of layout d with rank r's values (-99 elsewhere). */
static void dfill(const dlayout_t *d, char *mem, int count, int r)
{
    int e, j;
    for (e = 0; e < count * (int)d->span / 8; e++)
        ((double *)mem)[e] = -99.0;
    for (e = 0; e < count; e++)
        for (j = 0; j < d->per_elem; j++) {
            double v = dval(r, e * d->per_elem + j);
            memcpy(mem + (size_t)e * d->span + d->where[j], &v, 8);
        }
}

/* Checks count elements of d hold the sum over ranks (or block b of it),
 * and the gaps -99. */
static void dcheck(const dlayout_t *d, const char *mem, int count, int first, const char *what)
{
    char *is_data = spec_alloc((size_t)count * d->span);
    int e, j, q;
    size_t b;
    memset(is_data, 0, (size_t)count * d->span);
    for (e = 0; e < count; e++)
        for (j = 0; j < d->per_elem; j++) {
            double got, want = 0;
            size_t off = (size_t)e * d->span + d->where[j];
            for (q = 0; q < spec_size; q++)
                want += dval(q, (first + e) * d->per_elem + j);
            memcpy(&got, mem + off, 8);
            memset(is_data + off, 1, 8);
            if (got != want) {
                spec_fail("%s with %s: double %d of element %d is %g, expected %g", what,
                          d->name, j, e, got, want);
                free(is_data);
                return;
            }
        }
    for (b = 0; b < (size_t)count * d->span; b += 8)
        if (!is_data[b] && ((const double *)mem)[b / 8] != -99.0) {
            spec_fail("%s with %s: the gap at byte %zu was overwritten", what, d->name, b);
            break;
        }
    free(is_data);
}

/* Whether this MPI applies predefined ops to derived types of one basic
 * type. The standard leaves it open (MPI-3.1 5.9.2 lists the types the
 * predefined ops take); MPICH does, Open MPI 4.1 returns MPI_ERR_OP, and
 * the xcoll drop-ins serve them (typemap.h: the signature decides). Asked
 * once, agreed by all ranks, so each MPI is held to what it offers. */
static int derived_reductions(void)
{
    MPI_Datatype t;
    double a[2] = {1, 2}, b[2];
    int ok, all = 0;
    SPEC_MPI(MPI_Type_contiguous(2, MPI_DOUBLE, &t));
    SPEC_MPI(MPI_Type_commit(&t));
    ok = MPI_Allreduce(a, b, 1, t, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
    MPI_Type_free(&t);
    SPEC_MPI(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!all && spec_rank == 0) {
        printf("spec_reduce: this MPI refuses predefined ops on derived types: not tested\n");
        fflush(stdout);
    }
    return all;
}

static void test_derived(int count)
{
    dlayout_t d[8];
    int nd, k, root = spec_size > 1 ? 1 : 0;
    dlayouts(d, &nd);
    for (k = 0; k < nd; k++) {
        size_t bytes = (size_t)count * d[k].span;
        size_t all = (size_t)spec_size * bytes;
        char *in = spec_alloc(all), *out = spec_alloc(all);
        int in_place;
        for (in_place = 0; in_place < 2; in_place++) {
            /* allreduce */
            dfill(&d[k], out, count, spec_rank);
            dfill(&d[k], in, count, spec_rank);
            for (size_t b = 0; !in_place && b < bytes; b += 8)
                ((double *)out)[b / 8] = -99.0;
            SPEC_MPI(MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, count, d[k].type, MPI_SUM,
                                   MPI_COMM_WORLD));
            dcheck(&d[k], out, count, 0, in_place ? "allreduce in place" : "allreduce");
            /* reduce: in place at the root only */
            for (size_t b = 0; b < bytes; b += 8)
                ((double *)out)[b / 8] = -99.0;
            if (in_place && spec_rank == root)
                dfill(&d[k], out, count, spec_rank);
            SPEC_MPI(MPI_Reduce(in_place && spec_rank == root ? MPI_IN_PLACE : in, out, count,
                                d[k].type, MPI_SUM, root, MPI_COMM_WORLD));
            if (spec_rank == root)
                dcheck(&d[k], out, count, 0, in_place ? "reduce in place at the root" : "reduce");
            /* reduce_scatter_block: size blocks of count elements in */
            {
                char *rin = spec_alloc(all);
                dfill(&d[k], rin, count * spec_size, spec_rank);
                for (size_t b = 0; b < all; b += 8)
                    ((double *)out)[b / 8] = -99.0;
                if (in_place) {
                    SPEC_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, rin, count, d[k].type,
                                                      MPI_SUM, MPI_COMM_WORLD));
                    dcheck(&d[k], rin, count, spec_rank * count,
                           "reduce_scatter_block in place");
                } else {
                    SPEC_MPI(MPI_Reduce_scatter_block(rin, out, count, d[k].type, MPI_SUM,
                                                      MPI_COMM_WORLD));
                    dcheck(&d[k], out, count, spec_rank * count, "reduce_scatter_block");
                }
                free(rin);
            }
        }
        free(in);
        free(out);
        MPI_Type_free(&d[k].type);
    }
}

/* --- user ops ------------------------------------------------------------------------- */

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int i;
    (void)dt;
    for (i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* 2x2 integer matrices, row major: inout = in * inout (not commutative). */
static void user_matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int i, *a, *b, c[4];
    (void)dt;
    for (i = 0; i < *len; i++) {
        a = (int *)in + 4 * i;
        b = (int *)inout + 4 * i;
        c[0] = a[0] * b[0] + a[1] * b[2];
        c[1] = a[0] * b[1] + a[1] * b[3];
        c[2] = a[2] * b[0] + a[3] * b[2];
        c[3] = a[2] * b[1] + a[3] * b[3];
        memcpy(b, c, sizeof(c));
    }
}

static void rank_matrix(int r, int m[4])
{
    /* det 1, entries small enough that 10 factors do not overflow */
    m[0] = 1, m[1] = r % 2, m[2] = (r / 2) % 2, m[3] = 1 + (r % 2) * ((r / 2) % 2);
}

static void test_user_ops(void)
{
    MPI_Op sum, mat;
    MPI_Datatype m4;
    int n = 50, i, q, root = spec_size - 1;
    int *in = spec_alloc(n * sizeof(int)), *out = spec_alloc(n * sizeof(int));
    int mi[4], mo[4], want[4], tmp[4], cur[4];
    SPEC_MPI(MPI_Op_create(user_sum, 1, &sum));
    SPEC_MPI(MPI_Op_create(user_matmul, 0, &mat));
    SPEC_MPI(MPI_Type_contiguous(4, MPI_INT, &m4));
    SPEC_MPI(MPI_Type_commit(&m4));
    for (i = 0; i < n; i++)
        in[i] = spec_rank * 3 + i;
    SPEC_MPI(MPI_Allreduce(in, out, n, MPI_INT, sum, MPI_COMM_WORLD));
    for (i = 0; i < n; i++)
        if (out[i] != 3 * spec_size * (spec_size - 1) / 2 + spec_size * i) {
            spec_fail("allreduce with a user sum: element %d is %d", i, out[i]);
            break;
        }
    /* rank order: result = M0 * M1 * ... * M(p-1) */
    rank_matrix(spec_rank, mi);
    SPEC_MPI(MPI_Reduce(mi, mo, 1, m4, mat, root, MPI_COMM_WORLD));
    rank_matrix(0, want);
    for (q = 1; q < spec_size; q++) {
        int *a = want, *b;
        rank_matrix(q, cur);
        b = cur;
        tmp[0] = a[0] * b[0] + a[1] * b[2];
        tmp[1] = a[0] * b[1] + a[1] * b[3];
        tmp[2] = a[2] * b[0] + a[3] * b[2];
        tmp[3] = a[2] * b[1] + a[3] * b[3];
        memcpy(want, tmp, sizeof(tmp));
    }
    if (spec_rank == root && memcmp(mo, want, sizeof(want)) != 0)
        spec_fail("reduce with a non-commutative user op: got {%d %d %d %d}, expected "
                  "{%d %d %d %d}", mo[0], mo[1], mo[2], mo[3], want[0], want[1], want[2],
                  want[3]);
    MPI_Op_free(&sum);
    MPI_Op_free(&mat);
    MPI_Type_free(&m4);
    free(in);
    free(out);
}

/* --- counts --------------------------------------------------------------------------- */

static void test_counts(void)
{
    int *rc = spec_alloc((size_t)spec_size * sizeof(int)), total = 0, q, i, mine, first = 0;
    int *in, *out, x = 5, y = -1;
    /* count 0 everywhere */
    SPEC_MPI(MPI_Allreduce(&x, &y, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    SPEC_MPI(MPI_Reduce(&x, &y, 0, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
    if (y != -1)
        spec_fail("a count-0 allreduce/reduce wrote the receive buffer");
    /* reduce_scatter: uneven counts, some zero */
    for (q = 0; q < spec_size; q++) {
        rc[q] = q % 3 == 1 ? 0 : q + 1;
        total += rc[q];
    }
    in = spec_alloc((size_t)(total ? total : 1) * sizeof(int));
    out = spec_alloc((size_t)(rc[spec_rank] ? rc[spec_rank] : 1) * sizeof(int));
    for (i = 0; i < total; i++)
        in[i] = spec_rank + i;
    SPEC_MPI(MPI_Reduce_scatter(in, out, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (q = 0; q < spec_rank; q++)
        first += rc[q];
    mine = rc[spec_rank];
    for (i = 0; i < mine; i++)
        if (out[i] != spec_size * (first + i) + spec_size * (spec_size - 1) / 2) {
            spec_fail("reduce_scatter with counts {q%%3==1 ? 0 : q+1}: element %d is %d", i,
                      out[i]);
            break;
        }
    /* equal counts, in place (the result in the first block) */
    {
        int n = 3, *buf = spec_alloc((size_t)spec_size * 3 * sizeof(int));
        for (q = 0; q < spec_size; q++)
            rc[q] = n;
        for (i = 0; i < n * spec_size; i++)
            buf[i] = spec_rank * 2 + i;
        SPEC_MPI(MPI_Reduce_scatter(MPI_IN_PLACE, buf, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (i = 0; i < n; i++)
            if (buf[i] != spec_size * (spec_rank * n + i) + spec_size * (spec_size - 1)) {
                spec_fail("reduce_scatter in place: element %d is %d", i, buf[i]);
                break;
            }
        free(buf);
    }
    free(rc);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    spec_init(&argc, &argv, "spec_reduce");
    test_predefined(1);
    test_predefined(37);
    test_predefined(5000);
    test_loc_float(11);
    test_loc_long(11);
    test_loc_2int(11);
    test_loc_short(11);
    test_loc_long_double(11);
    test_double_int_reduce_bcast(1);
    test_double_int_reduce_bcast(300);
    if (derived_reductions()) {
        test_derived(1);
        test_derived(7);
        test_derived(3000);
    }
    test_user_ops();
    test_counts();
    return spec_finish();
}
