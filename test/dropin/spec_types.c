/*
 * spec_types.c - data-movement collectives where ranks describe their
 * buffers with different type maps of the same type signature, which MPI
 * allows (MPI-3.1 3.3.1, 5.1: only the signatures must match).
 *
 * Every layout below holds n MPI_INTs: as plain ints, a contiguous type,
 * strided vectors, indexed types whose blocks run backwards, structs with
 * gaps and zero-length members, a subarray, resized types with a negative
 * lower bound, a nested vector of structs, a dup, absolute addresses with
 * MPI_BOTTOM, and MPI_PACKED. For every collective each rank picks a
 * different layout, the results are checked int by int against what the
 * standard says, and every byte of a receive buffer that is not data must
 * still hold the fill pattern. Then MPI_Gather/MPI_Scatter with one
 * MPI_Type_vector element per rank at the root (also MPI_IN_PLACE) and n
 * doubles elsewhere, and MPI_DOUBLE_INT arrays (an extent with a gap).
 */
#include "spec.h"

#include <stdint.h>

#define FILL 0xEE

typedef enum {
    L_INT, L_CONTIG, L_VECTOR, L_VECTOR_ELEM, L_HVECTOR, L_INDEXED_REV, L_INDEXED_BLOCK,
    L_HINDEXED, L_STRUCT_GAP, L_SUBARRAY, L_RESIZED, L_NEG_LB, L_NESTED, L_DUP, L_BOTTOM,
    L_PACKED, L_COUNT
} kind_t;

static const char *const kind_names[L_COUNT] = {
    "int", "contiguous", "vector", "vector-elements", "hvector", "indexed-backwards",
    "indexed-block", "hindexed", "struct-with-gap", "subarray", "resized", "negative-lb",
    "nested", "dup", "bottom", "packed"};

/* ints per element of the kinds with several: n must be a multiple */
static int per_elem(kind_t k)
{
    switch (k) {
    case L_VECTOR_ELEM: case L_INDEXED_BLOCK: case L_HINDEXED: case L_STRUCT_GAP: return 2;
    case L_HVECTOR: case L_INDEXED_REV: case L_SUBARRAY: case L_NESTED: return 4;
    default: return 1;
    }
}

/* n ints described one way: what to pass to MPI and where int i lives. */
typedef struct {
    kind_t kind;
    int n;
    MPI_Datatype type; /* committed; freed by layout_free unless predefined */
    int count;
    char *mem;         /* the memory the data lives in */
    size_t mem_bytes;
    void *buf;         /* what the call gets (mem, mem + shift, or MPI_BOTTOM) */
    int owned;         /* type is ours to free */
} layout_t;

/* Byte offset in mem of int i. */
static size_t offset_of(const layout_t *l, int i)
{
    static const int rev4[4] = {5, 6, 0, 3}, blk2[2] = {4, 1}, hx2[2] = {8, 0};
    static const int nest4[4] = {0, 8, 32, 40};
    switch (l->kind) {
    case L_INT: case L_CONTIG: case L_DUP: case L_BOTTOM: case L_PACKED: return 4u * (size_t)i;
    case L_VECTOR: return 8u * (size_t)i;
    case L_VECTOR_ELEM: return 16u * (size_t)(i / 2) + (i % 2 ? 12u : 0u);
    case L_HVECTOR: return 24u * (size_t)(i / 4) + 4u * (size_t)(i % 4);
    case L_INDEXED_REV: return 28u * (size_t)(i / 4) + 4u * (size_t)rev4[i % 4];
    case L_INDEXED_BLOCK: return 20u * (size_t)(i / 2) + 4u * (size_t)blk2[i % 2];
    case L_HINDEXED: return 12u * (size_t)(i / 2) + (size_t)hx2[i % 2];
    case L_STRUCT_GAP: return 16u * (size_t)(i / 2) + (i % 2 ? 8u : 0u);
    case L_SUBARRAY: return 4u * ((size_t)(i / 4 + 1) * 6 + (size_t)(i % 4) + 1);
    case L_RESIZED: return 12u * (size_t)i;
    case L_NEG_LB: return 12u * (size_t)i;
    case L_NESTED: return 48u * (size_t)(i / 4) + (size_t)nest4[i % 4];
    default: return 0;
    }
}

static MPI_Datatype commit(MPI_Datatype t)
{
    SPEC_MPI(MPI_Type_commit(&t));
    return t;
}

static MPI_Datatype struct_gap_type(void)
{
    /* {int at 0, 0 doubles at 4, int at 8}, extent 16 */
    int bl[3] = {1, 0, 1};
    MPI_Aint disp[3] = {0, 4, 8};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_INT}, s, r;
    SPEC_MPI(MPI_Type_create_struct(3, bl, disp, types, &s));
    SPEC_MPI(MPI_Type_create_resized(s, 0, 16, &r));
    MPI_Type_free(&s);
    return r;
}

/* Builds layout kind k for n ints (n a multiple of per_elem(k)). */
static void layout_make(layout_t *l, kind_t k, int n)
{
    MPI_Datatype t = MPI_DATATYPE_NULL, tmp;
    int i;
    memset(l, 0, sizeof(*l));
    l->kind = k;
    l->n = n;
    l->count = n / per_elem(k);
    l->owned = 1;
    switch (k) {
    case L_INT:
        t = MPI_INT, l->owned = 0;
        break;
    case L_CONTIG:
        SPEC_MPI(MPI_Type_contiguous(n, MPI_INT, &t));
        l->count = 1;
        break;
    case L_VECTOR:
        SPEC_MPI(MPI_Type_vector(n, 1, 2, MPI_INT, &t));
        l->count = 1;
        break;
    case L_VECTOR_ELEM:
        SPEC_MPI(MPI_Type_vector(2, 1, 3, MPI_INT, &t));
        break;
    case L_HVECTOR:
        SPEC_MPI(MPI_Type_create_hvector(n / 4, 4, 24, MPI_INT, &t));
        l->count = 1;
        break;
    case L_INDEXED_REV: {
        int bl[3] = {2, 1, 1}, disp[3] = {5, 0, 3};
        SPEC_MPI(MPI_Type_indexed(3, bl, disp, MPI_INT, &t));
        break;
    }
    case L_INDEXED_BLOCK: {
        int disp[2] = {4, 1};
        SPEC_MPI(MPI_Type_create_indexed_block(2, 1, disp, MPI_INT, &tmp));
        SPEC_MPI(MPI_Type_create_resized(tmp, 0, 20, &t));
        MPI_Type_free(&tmp);
        break;
    }
    case L_HINDEXED: {
        int bl[2] = {1, 1};
        MPI_Aint disp[2] = {8, 0};
        SPEC_MPI(MPI_Type_create_hindexed(2, bl, disp, MPI_INT, &t));
        break;
    }
    case L_STRUCT_GAP:
        t = struct_gap_type();
        break;
    case L_SUBARRAY: {
        int sizes[2] = {n / 4 + 1, 6}, sub[2] = {n / 4, 4}, starts[2] = {1, 1};
        SPEC_MPI(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t));
        l->count = 1;
        break;
    }
    case L_RESIZED:
        SPEC_MPI(MPI_Type_create_resized(MPI_INT, 0, 12, &t));
        break;
    case L_NEG_LB: {
        /* the int sits 8 bytes before the element's start */
        int bl = 1;
        MPI_Aint disp = -8;
        MPI_Datatype ty = MPI_INT;
        SPEC_MPI(MPI_Type_create_struct(1, &bl, &disp, &ty, &tmp));
        SPEC_MPI(MPI_Type_create_resized(tmp, -8, 12, &t));
        MPI_Type_free(&tmp);
        break;
    }
    case L_NESTED: {
        MPI_Datatype s = struct_gap_type();
        SPEC_MPI(MPI_Type_vector(2, 1, 2, s, &t));
        MPI_Type_free(&s);
        break;
    }
    case L_DUP: {
        SPEC_MPI(MPI_Type_vector(n, 1, 1, MPI_INT, &tmp)); /* contiguous in disguise */
        SPEC_MPI(MPI_Type_dup(tmp, &t));
        MPI_Type_free(&tmp);
        l->count = 1;
        break;
    }
    case L_BOTTOM:
    case L_PACKED:
        break; /* need the memory first */
    default:
        break;
    }
    /* memory: one byte past the last data byte, at least the type's span */
    l->mem_bytes = n > 0 ? offset_of(l, n - 1) + 4 : 4;
    for (i = 0; i < n; i++)
        if (offset_of(l, i) + 4 > l->mem_bytes)
            l->mem_bytes = offset_of(l, i) + 4;
    l->mem_bytes += 16; /* a tail that must stay untouched */
    l->mem = spec_alloc(l->mem_bytes);
    memset(l->mem, FILL, l->mem_bytes);
    l->buf = l->mem;
    if (k == L_NEG_LB)
        l->buf = l->mem + 8;
    if (k == L_BOTTOM) {
        int bl = n;
        MPI_Aint addr;
        MPI_Datatype ty = MPI_INT;
        SPEC_MPI(MPI_Get_address(l->mem, &addr));
        SPEC_MPI(MPI_Type_create_struct(1, &bl, &addr, &ty, &t));
        l->count = 1;
        l->buf = MPI_BOTTOM;
    }
    if (k == L_PACKED) {
        t = MPI_PACKED, l->owned = 0;
        l->count = 4 * n; /* homogeneous: packed ints are their bytes */
    }
    l->type = l->owned ? commit(t) : t;
}

static void layout_free(layout_t *l)
{
    if (l->owned)
        MPI_Type_free(&l->type);
    free(l->mem);
}

static int value(int seed, int i)
{
    return seed * 100003 + i * 7 + 1;
}

static void layout_fill(layout_t *l, int seed)
{
    int i, v;
    for (i = 0; i < l->n; i++) {
        v = value(seed, i);
        memcpy(l->mem + offset_of(l, i), &v, 4);
    }
}

/* Checks that int i holds value(seed(i), i) and every other byte the fill. */
static void layout_check(const layout_t *l, const char *what, int (*seed_of)(int i, void *),
                         void *ctx)
{
    unsigned char *is_data = spec_alloc(l->mem_bytes);
    int i, v, bad = 0;
    size_t b;
    memset(is_data, 0, l->mem_bytes);
    for (i = 0; i < l->n; i++) {
        size_t off = offset_of(l, i);
        memcpy(&v, l->mem + off, 4);
        memset(is_data + off, 1, 4);
        if (v != value(seed_of(i, ctx), i) && bad++ < 3)
            spec_fail("%s, %s layout: int %d is %d, expected %d", what, kind_names[l->kind], i,
                      v, value(seed_of(i, ctx), i));
    }
    for (b = 0; b < l->mem_bytes; b++)
        if (!is_data[b] && (unsigned char)l->mem[b] != FILL && bad++ < 3)
            spec_fail("%s, %s layout: byte %zu outside the data was overwritten", what,
                      kind_names[l->kind], b);
    free(is_data);
}

static int seed_const(int i, void *ctx)
{
    (void)i;
    return *(int *)ctx;
}

/* per-block seeds: block = i / blocklen gives the seed */
typedef struct {
    int blocklen;
    const int *seeds;
} blocks_t;

static int seed_block(int i, void *ctx)
{
    const blocks_t *b = ctx;
    return b->seeds[i / b->blocklen];
}

/* The kind rank r uses in round `round`, among those that fit n. */
static kind_t pick(int round, int r, int n)
{
    int k = (round + 3 * r) % L_COUNT, tries;
    for (tries = 0; tries < L_COUNT && n % per_elem((kind_t)k) != 0; tries++)
        k = (k + 1) % L_COUNT;
    return (kind_t)k;
}

/* Layouts whose count is a whole number of per-rank blocks: the receive
 * side of allgather/alltoall/gather passes count/size elements per rank,
 * so the kinds with count 1 for the whole buffer cannot be used there. */
static int blockable(kind_t k)
{
    return k != L_CONTIG && k != L_VECTOR && k != L_HVECTOR && k != L_SUBARRAY && k != L_DUP &&
           k != L_BOTTOM;
}

static kind_t pick_blocked(int round, int r, int n)
{
    kind_t k = pick(round, r, n);
    while (!blockable(k) || n % per_elem(k) != 0)
        k = (kind_t)((k + 1) % L_COUNT);
    return k;
}

static void test_bcast(int n, int rounds)
{
    int round, root;
    char what[96];
    for (round = 0; round < rounds; round++) {
        for (root = 0; root < spec_size; root += spec_size > 2 ? spec_size - 1 : 1) {
            layout_t l;
            int seed = round * 17 + root;
            layout_make(&l, pick(round, spec_rank, n), n);
            if (spec_rank == root)
                layout_fill(&l, seed);
            SPEC_MPI(MPI_Bcast(l.buf, l.count, l.type, root, MPI_COMM_WORLD));
            snprintf(what, sizeof(what), "bcast of %d ints, root %d, round %d", n, root, round);
            layout_check(&l, what, seed_const, &seed);
            layout_free(&l);
            if (spec_size == 1)
                break;
        }
    }
}

static void test_allgather(int n, int rounds)
{
    int round, q, *seeds = spec_alloc((size_t)spec_size * sizeof(int));
    char what[96];
    for (round = 0; round < rounds; round++) {
        layout_t s, r;
        blocks_t b;
        int in_place = round % 3 == 2;
        layout_make(&s, pick(round, spec_rank, n), n);
        layout_make(&r, pick_blocked(round + 5, spec_rank, n), n * spec_size);
        for (q = 0; q < spec_size; q++)
            seeds[q] = round * 31 + q;
        layout_fill(&s, seeds[spec_rank]);
        if (in_place) {
            /* this rank's block already in place in the receive layout */
            int i, v;
            for (i = 0; i < n; i++) {
                v = value(seeds[spec_rank], spec_rank * n + i);
                memcpy(r.mem + offset_of(&r, spec_rank * n + i), &v, 4);
            }
            /* in place, the count and type describe one block of the receive buffer */
            SPEC_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r.buf,
                                   r.count / spec_size, r.type, MPI_COMM_WORLD));
        } else {
            /* send block values are value(seed, i) for i < n; shift them so
             * that the receiver's int j of block q is value(seed q, q*n + j) */
            int i, v;
            for (i = 0; i < n; i++) {
                v = value(seeds[spec_rank], spec_rank * n + i);
                memcpy(s.mem + offset_of(&s, i), &v, 4);
            }
            SPEC_MPI(MPI_Allgather(s.buf, s.count, s.type, r.buf, r.count / spec_size, r.type,
                                   MPI_COMM_WORLD));
        }
        b.blocklen = n;
        b.seeds = seeds;
        snprintf(what, sizeof(what), "allgather of %d ints%s, round %d", n,
                 in_place ? " in place" : "", round);
        layout_check(&r, what, seed_block, &b);
        layout_free(&s);
        layout_free(&r);
    }
    free(seeds);
}

static void test_alltoall(int n, int rounds)
{
    int round, q, i, v;
    char what[96];
    for (round = 0; round < rounds; round++) {
        layout_t s, r;
        int in_place = round % 4 == 3;
        layout_make(&s, pick_blocked(round, spec_rank, n), n * spec_size);
        layout_make(&r, pick_blocked(round + 7, spec_rank, n), n * spec_size);
        /* block q of my send goes to rank q: values value(seed(me), q*n + j)
         * land at rank q's block me, int me*n + j: so seed by sender */
        for (q = 0; q < spec_size; q++)
            for (i = 0; i < n; i++) {
                v = value(round * 13 + spec_rank * 1000 + q, spec_rank * n + i);
                memcpy((in_place ? r.mem + offset_of(&r, q * n + i) : s.mem + offset_of(&s, q * n + i)),
                       &v, 4);
            }
        if (in_place)
            SPEC_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r.buf, r.count / spec_size,
                                  r.type, MPI_COMM_WORLD));
        else
            SPEC_MPI(MPI_Alltoall(s.buf, s.count / spec_size, s.type, r.buf, r.count / spec_size,
                                  r.type, MPI_COMM_WORLD));
        snprintf(what, sizeof(what), "alltoall of %d ints per rank%s, round %d", n,
                 in_place ? " in place" : "", round);
        /* the value's index part is the sender's: block q holds sender q's
         * values for my index range; recompute expected directly */
        {
            unsigned char *is_data = spec_alloc(r.mem_bytes);
            size_t bb;
            int bad = 0;
            memset(is_data, 0, r.mem_bytes);
            for (q = 0; q < spec_size; q++)
                for (i = 0; i < n; i++) {
                    size_t off = offset_of(&r, q * n + i);
                    int want = value(round * 13 + q * 1000 + spec_rank, q * n + i);
                    memcpy(&v, r.mem + off, 4);
                    memset(is_data + off, 1, 4);
                    if (v != want && bad++ < 3)
                        spec_fail("%s, %s layout: block %d int %d is %d, expected %d", what,
                                  kind_names[r.kind], q, i, v, want);
                }
            for (bb = 0; bb < r.mem_bytes; bb++)
                if (!is_data[bb] && r.mem[bb] != (char)FILL && bad++ < 3)
                    spec_fail("%s: byte %zu outside the data was overwritten", what, bb);
            free(is_data);
        }
        layout_free(&s);
        layout_free(&r);
    }
}

/* MPI_Gather/MPI_Scatter with one MPI_Type_vector(n, 1, 3, MPI_DOUBLE)
 * element per rank on one side and n contiguous doubles on the other:
 * mode 0, the root's blocks are vectors (consecutive); mode 1, they are
 * vectors resized to one double, so they interleave (size <= 3); mode 2,
 * the root's blocks are contiguous and the other ranks' are vectors. With
 * and without MPI_IN_PLACE at the root. */
static void test_gather_scatter_vector(int n)
{
    MPI_Datatype vec, vec_r;
    MPI_Aint lb, ext;
    int root, in_place, mode, i, q;
    char what[160];
    SPEC_MPI(MPI_Type_vector(n, 1, 3, MPI_DOUBLE, &vec));
    SPEC_MPI(MPI_Type_commit(&vec));
    SPEC_MPI(MPI_Type_get_extent(vec, &lb, &ext));
    SPEC_MPI(MPI_Type_create_resized(vec, 0, (MPI_Aint)sizeof(double), &vec_r));
    SPEC_MPI(MPI_Type_commit(&vec_r));
    for (root = 0; root < spec_size; root += spec_size > 2 ? spec_size - 1 : 1) {
        for (mode = 0; mode < 3; mode++) {
            if (mode == 1 && spec_size > 3)
                continue;
            for (in_place = 0; in_place < 2; in_place++) {
                /* root: its region, block q's double i at q * qstride + i * istride */
                size_t qstride = mode == 0 ? (size_t)(ext / 8) : mode == 1 ? 1 : (size_t)n;
                size_t istride = mode == 2 ? 1 : 3;
                size_t region = (size_t)(spec_size - 1) * qstride + (size_t)(n - 1) * istride + 1;
                /* others: mine, double i at i * mstride */
                size_t mstride = mode == 2 ? 3 : 1, mlen = (size_t)(n - 1) * mstride + 1;
                MPI_Datatype rtype = mode == 0 ? vec : mode == 1 ? vec_r : MPI_DOUBLE;
                int rcount = mode == 2 ? n : 1;
                MPI_Datatype mtype = mode == 2 ? vec : MPI_DOUBLE;
                int mcount = mode == 2 ? 1 : n;
                double *big = spec_alloc(region * sizeof(double));
                double *mine = spec_alloc(mlen * sizeof(double));
                char *is_data = spec_alloc(region);
                int bad = 0;

                snprintf(what, sizeof(what), "of %d doubles, root blocks %s, root %d%s", n,
                         mode == 0 ? "vectors" : mode == 1 ? "interleaved vectors"
                                                           : "contiguous (others vectors)",
                         root, in_place ? ", in place" : "");
                memset(is_data, 0, region);
                for (q = 0; q < spec_size; q++)
                    for (i = 0; i < n; i++)
                        is_data[(size_t)q * qstride + (size_t)i * istride] = 1;
                for (i = 0; i < (int)region; i++)
                    big[i] = -1.0;
                for (i = 0; i < (int)mlen; i++)
                    mine[i] = (size_t)i % mstride == 0 ? spec_rank * 1000.0 + i / (int)mstride
                                                       : -3.0;
                if (spec_rank == root && in_place)
                    for (i = 0; i < n; i++)
                        big[(size_t)root * qstride + (size_t)i * istride] = root * 1000.0 + i;

                /* gather: the root's type is rtype, the sender's is mtype (at
                 * the root itself, when not in place, it sends like the others
                 * would: n doubles, or one vector in mode 2) */
                if (spec_rank == root)
                    SPEC_MPI(MPI_Gather(in_place ? MPI_IN_PLACE : mine, mcount, mtype, big,
                                        rcount, rtype, root, MPI_COMM_WORLD));
                else
                    SPEC_MPI(MPI_Gather(mine, mcount, mtype, NULL, 0, MPI_DATATYPE_NULL, root,
                                        MPI_COMM_WORLD));
                if (spec_rank == root) {
                    for (q = 0; q < spec_size; q++)
                        for (i = 0; i < n; i++) {
                            double got = big[(size_t)q * qstride + (size_t)i * istride];
                            if (got != q * 1000.0 + i && bad++ < 3)
                                spec_fail("gather %s: rank %d's double %d is %g", what, q, i,
                                          got);
                        }
                    for (i = 0; i < (int)region; i++)
                        if (!is_data[i] && big[i] != -1.0 && bad++ < 3)
                            spec_fail("gather %s: gap double %d overwritten", what, i);
                }

                /* scatter the root's blocks back into fresh buffers */
                for (i = 0; i < (int)mlen; i++)
                    mine[i] = -3.0;
                if (spec_rank == root)
                    SPEC_MPI(MPI_Scatter(big, rcount, rtype, in_place ? MPI_IN_PLACE : mine,
                                         mcount, mtype, root, MPI_COMM_WORLD));
                else
                    SPEC_MPI(MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, mine, mcount, mtype, root,
                                         MPI_COMM_WORLD));
                if (!(spec_rank == root && in_place)) {
                    for (i = 0; i < (int)mlen && bad < 3; i++) {
                        double want = (size_t)i % mstride == 0
                                          ? spec_rank * 1000.0 + i / (int)mstride
                                          : -3.0;
                        if (mine[i] != want) {
                            spec_fail("scatter %s: double %d of the receive buffer is %g, "
                                      "expected %g", what, i, mine[i], want);
                            bad++;
                        }
                    }
                }
                free(big);
                free(mine);
                free(is_data);
            }
        }
        if (spec_size == 1)
            break;
    }
    MPI_Type_free(&vec);
    MPI_Type_free(&vec_r);
}

/* Gather where the root receives n ints per rank with its own layout and
 * every other rank sends with another. */
static void test_gather_layouts(int n, int rounds)
{
    int round, root, q, *seeds = spec_alloc((size_t)spec_size * sizeof(int));
    char what[96];
    for (round = 0; round < rounds; round++) {
        root = round % spec_size;
        layout_t s, r;
        blocks_t b;
        int i, v;
        layout_make(&s, pick(round, spec_rank, n), n);
        layout_make(&r, pick_blocked(round + 2, spec_rank, n), n * spec_size);
        for (i = 0; i < n; i++) {
            v = value(round * 7 + spec_rank, spec_rank * n + i);
            memcpy(s.mem + offset_of(&s, i), &v, 4);
        }
        for (q = 0; q < spec_size; q++)
            seeds[q] = round * 7 + q;
        SPEC_MPI(MPI_Gather(s.buf, s.count, s.type, r.buf, r.count / spec_size, r.type, root,
                            MPI_COMM_WORLD));
        if (spec_rank == root) {
            b.blocklen = n;
            b.seeds = seeds;
            snprintf(what, sizeof(what), "gather of %d ints, root %d, round %d", n, root, round);
            layout_check(&r, what, seed_block, &b);
        }
        layout_free(&s);
        layout_free(&r);
    }
    free(seeds);
}

/* MPI_DOUBLE_INT has a gap between elements (12 bytes of data, extent
 * 16): an array of them must arrive element by element. */
static void test_double_int(void)
{
    struct di {
        double d;
        int i;
    };
    const int n = 37;
    struct di *a = spec_alloc(n * sizeof(*a));
    int i, root = spec_size - 1;
    memset(a, FILL, n * sizeof(*a));
    if (spec_rank == root)
        for (i = 0; i < n; i++) {
            a[i].d = i * 0.5 - 3;
            a[i].i = 1000 + i;
        }
    SPEC_MPI(MPI_Bcast(a, n, MPI_DOUBLE_INT, root, MPI_COMM_WORLD));
    for (i = 0; i < n; i++)
        if (a[i].d != i * 0.5 - 3 || a[i].i != 1000 + i) {
            spec_fail("bcast of MPI_DOUBLE_INT: element %d is {%g, %d}", i, a[i].d, a[i].i);
            break;
        }
    free(a);
}

/* MPI's own calls: merging an intercommunicator whose groups pass the
 * same "high" makes Open MPI run its intercommunicator allgatherv, which
 * broadcasts over each group with a datatype of its own making that has
 * no envelope; then collectives on the merged communicator, whose rank
 * order MPI chose. */
static void test_intercomm_merge(int variant)
{
    MPI_Comm half, inter, merged;
    int n, r, i, *all, *counts, *displs, total = 0;
    /* variant 0: odd and even ranks, the same "high"; variant 1: lower and
     * upper halves, "high" for the lower one */
    int color = variant == 0 ? spec_rank % 2 : spec_rank < spec_size / 2;
    int leader = variant == 0 ? (color == 0 ? 1 : 0) : (color ? spec_size / 2 : 0);
    if (spec_size < 2)
        return;
    SPEC_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, spec_rank, &half));
    SPEC_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, leader, 7 + variant, &inter));
    SPEC_MPI(MPI_Intercomm_merge(inter, variant == 0 ? 0 : color, &merged));
    MPI_Comm_size(merged, &n);
    MPI_Comm_rank(merged, &r);
    all = spec_alloc((size_t)n * 3 * sizeof(int));
    counts = spec_alloc((size_t)n * sizeof(int));
    displs = spec_alloc((size_t)n * sizeof(int));
    for (i = 0; i < n; i++) {
        counts[i] = i % 3 + 1;
        displs[i] = total;
        total += counts[i];
    }
    {
        int mine[3];
        mine[0] = r * 10, mine[1] = r * 10 + 1, mine[2] = r * 10 + 2;
        SPEC_MPI(MPI_Allgatherv(mine, counts[r], MPI_INT, all, counts, displs, MPI_INT,
                                merged));
    }
    for (i = 0; i < n; i++) {
        int j;
        for (j = 0; j < counts[i]; j++)
            if (all[displs[i] + j] != i * 10 + j) {
                spec_fail("allgatherv on a merged intercommunicator: rank %d's %d is %d", i, j,
                          all[displs[i] + j]);
                i = n;
                break;
            }
    }
    SPEC_MPI(MPI_Allgather(&r, 1, MPI_INT, all, 1, MPI_INT, merged));
    for (i = 0; i < n; i++)
        if (all[i] != i) {
            spec_fail("allgather on a merged intercommunicator: slot %d is %d", i, all[i]);
            break;
        }
    free(all);
    free(counts);
    free(displs);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    spec_init(&argc, &argv, "spec_types");
    test_bcast(1, L_COUNT);
    test_bcast(512, L_COUNT);
    test_bcast(262144, quick ? 2 : 5);
    test_allgather(4, L_COUNT);
    test_allgather(512, 6);
    test_alltoall(4, L_COUNT);
    test_alltoall(256, 4);
    test_gather_layouts(8, L_COUNT);
    test_gather_layouts(2048, 3);
    test_gather_scatter_vector(5);
    test_gather_scatter_vector(3000);
    test_double_int();
    test_intercomm_merge(0);
    test_intercomm_merge(1);
    return spec_finish();
}
