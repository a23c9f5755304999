/*
 * typemap.c - MPI datatypes taken apart for the drop-ins (typemap.h): the
 * signature from the envelope and contents of a derived type, the runs of
 * its type map, and pack/unpack of any byte range of count elements, so
 * xcoll can stage a non-contiguous buffer one segment at a time.
 */
#include <mpi.h>

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"
#include "typemap.h"

/* Beyond this many runs a type is packed element by element through MPI
 * instead (8 MiB of runs). */
#define MAX_RUNS ((size_t)1 << 18)
/* Deeper nesting than any real program builds: opaque (a local choice:
 * the type is then packed through MPI). */
#define MAX_DEPTH 32
/* The signature has no such limit of its own, since a type's verdict must
 * not depend on how it was built; this only keeps a hostile type from
 * exhausting the stack. */
#define MAX_SIGNATURE_DEPTH 10000

/* --- runs --------------------------------------------------------------------- */

typedef struct {
    xcmpi_run_t *v;
    size_t n, cap;
} runs_t;

enum { MAP_OK = 0, MAP_OPAQUE = 1, MAP_ERROR = -1 };

/* Appends reps blocks of len bytes at disp, disp + stride, ...; merges
 * them into the last run where the bytes continue it. Every merge keeps
 * the byte sequence, so the map stays in type-map order. */
static int push_run(runs_t *r, MPI_Aint disp, size_t len, size_t reps, MPI_Aint stride)
{
    xcmpi_run_t *p;
    if (len == 0 || reps == 0)
        return MAP_OK;
    if (reps > 1 && stride == (MPI_Aint)len && len <= SIZE_MAX / reps) {
        len *= reps; /* abutting blocks: one block */
        reps = 1;
    }
    if (reps == 1)
        stride = 0;
    if (r->n > 0) {
        p = &r->v[r->n - 1];
        if (reps == 1 && p->reps == 1 && disp == p->disp + (MPI_Aint)p->len) {
            p->len += len; /* continues the last block */
            return MAP_OK;
        }
        if (reps == 1 && len == p->len) {
            if (p->reps == 1) { /* a second block of the same length */
                p->stride = disp - p->disp;
                p->reps = 2;
                return MAP_OK;
            }
            if (disp == p->disp + (MPI_Aint)p->reps * p->stride) {
                p->reps++;
                return MAP_OK;
            }
        }
        if (reps > 1 && p->reps > 1 && len == p->len && stride == p->stride &&
            disp == p->disp + (MPI_Aint)p->reps * p->stride) {
            p->reps += reps;
            return MAP_OK;
        }
    }
    if (r->n >= MAX_RUNS)
        return MAP_OPAQUE;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 4;
        xcmpi_run_t *v = realloc(r->v, cap * sizeof(*v));
        if (v == NULL)
            return MAP_ERROR;
        r->v = v;
        r->cap = cap;
    }
    p = &r->v[r->n++];
    p->disp = disp;
    p->len = len;
    p->reps = reps;
    p->stride = stride;
    return MAP_OK;
}

/* Appends n copies of the runs of t, copy k shifted by shift + k * step. */
static int push_copies(runs_t *out, const runs_t *t, size_t n, MPI_Aint step, MPI_Aint shift)
{
    size_t k, i;
    int rc;
    if (n == 0 || t->n == 0)
        return MAP_OK;
    if (t->n == 1 && t->v[0].reps == 1)
        return push_run(out, shift + t->v[0].disp, t->v[0].len, n, step);
    /* one strided run whose copies continue it: one longer run */
    if (t->n == 1 && step == (MPI_Aint)t->v[0].reps * t->v[0].stride &&
        t->v[0].reps <= SIZE_MAX / n)
        return push_run(out, shift + t->v[0].disp, t->v[0].len, t->v[0].reps * n,
                        t->v[0].stride);
    /* copies usually merge as they go (push_run gives up past MAX_RUNS
     * runs); this only bounds the work of those that do not */
    if (n > ((size_t)64 << 20) / t->n)
        return MAP_OPAQUE;
    for (k = 0; k < n; k++)
        for (i = 0; i < t->n; i++)
            if ((rc = push_run(out, shift + (MPI_Aint)k * step + t->v[i].disp, t->v[i].len,
                               t->v[i].reps, t->v[i].stride)) != MAP_OK)
                return rc;
    return MAP_OK;
}

/* --- taking a type apart ---------------------------------------------------------- */

static int described_always(MPI_Datatype d)
{
    (void)d;
    return 1;
}

int (*xcmpi_type_described)(MPI_Datatype d) = described_always;

static void type_nothing(MPI_Datatype d)
{
    (void)d;
}

void (*xcmpi_type_retain)(MPI_Datatype d) = type_nothing;
void (*xcmpi_type_release)(MPI_Datatype d) = type_nothing;

static int is_named(MPI_Datatype d)
{
    int ni, na, nd, combiner;
    return xcmpi_type_described(d) &&
           PMPI_Type_get_envelope(d, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
           combiner == MPI_COMBINER_NAMED;
}

/* The predefined pairs of MINLOC/MAXLOC: struct { T value; int index; }. */
static int is_pair(MPI_Datatype d)
{
    return d == MPI_FLOAT_INT || d == MPI_DOUBLE_INT || d == MPI_LONG_INT || d == MPI_2INT ||
           d == MPI_SHORT_INT || d == MPI_LONG_DOUBLE_INT;
}

static int flatten(MPI_Datatype d, runs_t *out, int depth);

/* A named type: one block, or a pair's value and index. */
static int flatten_named(MPI_Datatype d, runs_t *out)
{
    MPI_Aint tlb, text;
    int size;
    if (PMPI_Type_size(d, &size) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(d, &tlb, &text) != MPI_SUCCESS || size < 0)
        return MAP_ERROR;
    if (size == 0)
        return MAP_OK;
    if (text == (MPI_Aint)size)
        return push_run(out, tlb, (size_t)size, 1, 0);
    if (is_pair(d) && (size_t)size > sizeof(int) && text > (MPI_Aint)size) {
        int rc = push_run(out, tlb, (size_t)size - sizeof(int), 1, 0);
        return rc != MAP_OK ? rc
                            : push_run(out, tlb + text - (MPI_Aint)sizeof(int), sizeof(int), 1, 0);
    }
    return MAP_OPAQUE;
}

/* The runs of one element of d into a fresh list (*t), and d's extent. */
static int flatten_child(MPI_Datatype d, runs_t *t, MPI_Aint *extent, int depth)
{
    MPI_Aint lb;
    memset(t, 0, sizeof(*t));
    if (PMPI_Type_get_extent(d, &lb, extent) != MPI_SUCCESS)
        return MAP_ERROR;
    return flatten(d, t, depth + 1);
}

/* SUBARRAY: the sub-block of an ndims array of old, in C or Fortran order. */
static int flatten_subarray(const int *ints, MPI_Datatype old, runs_t *out, int depth)
{
    const int nd = ints[0];
    const int *sizes = ints + 1, *subsizes = ints + 1 + nd, *starts = ints + 1 + 2 * nd;
    const int order = ints[1 + 3 * nd];
    runs_t t, next;
    MPI_Aint ext, stride, shift = 0;
    int rc, i;

    if ((rc = flatten_child(old, &t, &ext, depth)) != MAP_OK) {
        free(t.v);
        return rc;
    }
    stride = ext;
    /* from the fastest dimension out */
    for (i = 0; i < nd && rc == MAP_OK; i++) {
        int dim = order == MPI_ORDER_FORTRAN ? i : nd - 1 - i;
        memset(&next, 0, sizeof(next));
        rc = push_copies(&next, &t, (size_t)subsizes[dim], stride, 0);
        shift += (MPI_Aint)starts[dim] * stride;
        stride *= sizes[dim];
        free(t.v);
        t = next;
    }
    if (rc == MAP_OK)
        rc = push_copies(out, &t, 1, 0, shift);
    free(t.v);
    return rc;
}

/* Appends `count` groups of `bl` elements of old (extent ext, runs t):
 * group g starts at disp[g] (bytes), or at g * stride with disp NULL. */
static int push_groups(runs_t *out, const runs_t *t, MPI_Aint ext, size_t count, size_t bl,
                       const MPI_Aint *disp, MPI_Aint stride)
{
    runs_t block;
    size_t g;
    int rc;
    memset(&block, 0, sizeof(block));
    if ((rc = push_copies(&block, t, bl, ext, 0)) != MAP_OK) {
        free(block.v);
        return rc;
    }
    if (disp == NULL)
        rc = push_copies(out, &block, count, stride, 0);
    for (g = 0; disp != NULL && g < count && rc == MAP_OK; g++)
        rc = push_copies(out, &block, 1, 0, disp[g]);
    free(block.v);
    return rc;
}

/* The derived constructors, from MPI_Type_get_contents. */
static int flatten_contents(int combiner, const int *ints, const MPI_Aint *aints,
                            const MPI_Datatype *types, runs_t *out, int depth)
{
    runs_t t;
    MPI_Aint ext, *disp = NULL;
    int rc, i, n;

    if (combiner == MPI_COMBINER_SUBARRAY)
        return flatten_subarray(ints, types[0], out, depth);
    if (combiner == MPI_COMBINER_STRUCT) {
        /* one old type per block */
        for (i = 0, rc = MAP_OK; i < ints[0] && rc == MAP_OK; i++) {
            if (ints[1 + i] <= 0)
                continue;
            if ((rc = flatten_child(types[i], &t, &ext, depth)) == MAP_OK)
                rc = push_groups(out, &t, ext, 1, (size_t)ints[1 + i], &aints[i], 0);
            free(t.v);
        }
        return rc;
    }
    if ((rc = flatten_child(types[0], &t, &ext, depth)) != MAP_OK) {
        free(t.v);
        return rc;
    }
    switch (combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: /* lb and extent only place the next element */
        rc = push_copies(out, &t, 1, 0, 0);
        break;
    case MPI_COMBINER_CONTIGUOUS:
        rc = push_copies(out, &t, (size_t)ints[0], ext, 0);
        break;
    case MPI_COMBINER_VECTOR:
        rc = push_groups(out, &t, ext, (size_t)ints[0], (size_t)ints[1], NULL,
                         (MPI_Aint)ints[2] * ext);
        break;
    case MPI_COMBINER_HVECTOR:
        rc = push_groups(out, &t, ext, (size_t)ints[0], (size_t)ints[1], NULL, aints[0]);
        break;
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
        /* per group: a length (one for all in the _BLOCK forms) and a
         * displacement (in old's extents, or bytes in the H forms) */
        n = ints[0];
        disp = malloc((size_t)(n > 0 ? n : 1) * sizeof(*disp));
        if (disp == NULL) {
            rc = MAP_ERROR;
            break;
        }
        for (i = 0; i < n && rc == MAP_OK; i++) {
            int blocked = combiner == MPI_COMBINER_INDEXED_BLOCK ||
                          combiner == MPI_COMBINER_HINDEXED_BLOCK;
            int bl = blocked ? ints[1] : ints[1 + i];
            if (combiner == MPI_COMBINER_INDEXED)
                disp[i] = (MPI_Aint)ints[1 + n + i] * ext;
            else if (combiner == MPI_COMBINER_INDEXED_BLOCK)
                disp[i] = (MPI_Aint)ints[2 + i] * ext;
            else
                disp[i] = aints[i];
            if (bl > 0)
                rc = push_groups(out, &t, ext, 1, (size_t)bl, &disp[i], 0);
        }
        free(disp);
        break;
    default: /* DARRAY, the Fortran constructors, future ones: MPI packs them */
        rc = MAP_OPAQUE;
        break;
    }
    free(t.v);
    return rc;
}

/* Frees the derived types MPI_Type_get_contents returned. */
static void free_contents_types(MPI_Datatype *types, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (!is_named(types[i]))
            PMPI_Type_free(&types[i]);
}

/* The contents of derived type d in fresh arrays (free with
 * contents_fini). */
typedef struct {
    int combiner, ni, na, nd;
    int *ints;
    MPI_Aint *aints;
    MPI_Datatype *types;
} contents_t;

static int contents_get(MPI_Datatype d, contents_t *c)
{
    memset(c, 0, sizeof(*c));
    if (PMPI_Type_get_envelope(d, &c->ni, &c->na, &c->nd, &c->combiner) != MPI_SUCCESS)
        return MAP_ERROR;
    if (c->combiner == MPI_COMBINER_NAMED)
        return MAP_OK;
    c->ints = malloc((size_t)c->ni * sizeof(int) + 1);
    c->aints = malloc((size_t)c->na * sizeof(MPI_Aint) + 1);
    c->types = malloc((size_t)c->nd * sizeof(MPI_Datatype) + 1);
    if (c->ints == NULL || c->aints == NULL || c->types == NULL ||
        PMPI_Type_get_contents(d, c->ni, c->na, c->nd, c->ints, c->aints, c->types) !=
            MPI_SUCCESS) {
        free(c->ints);
        free(c->aints);
        free(c->types);
        memset(c, 0, sizeof(*c));
        return MAP_ERROR;
    }
    return MAP_OK;
}

static void contents_fini(contents_t *c)
{
    if (c->types != NULL)
        free_contents_types(c->types, c->nd);
    free(c->ints);
    free(c->aints);
    free(c->types);
}

static int flatten(MPI_Datatype d, runs_t *out, int depth)
{
    contents_t c;
    int rc;
    if (depth > MAX_DEPTH)
        return MAP_OPAQUE;
    if ((rc = contents_get(d, &c)) != MAP_OK)
        return rc;
    if (c.combiner == MPI_COMBINER_NAMED)
        return flatten_named(d, out);
    rc = c.nd > 0 ? flatten_contents(c.combiner, c.ints, c.aints, c.types, out, depth)
                  : MAP_OPAQUE;
    contents_fini(&c);
    return rc;
}

/* --- the signature -------------------------------------------------------------------- */

int xcmpi_reduce_dtype(MPI_Datatype d)
{
    if (d == MPI_DATATYPE_NULL)
        return -1;
    if (d == MPI_INT8_T || d == MPI_SIGNED_CHAR)
        return XCOLL_INT8;
    if (d == MPI_UINT8_T || d == MPI_UNSIGNED_CHAR)
        return XCOLL_UINT8;
    if (d == MPI_INT32_T)
        return XCOLL_INT32;
    if (d == MPI_UINT32_T)
        return XCOLL_UINT32;
    if (d == MPI_INT64_T || d == MPI_LONG_LONG_INT || d == MPI_LONG_LONG)
        return XCOLL_INT64;
    if (d == MPI_UINT64_T || d == MPI_UNSIGNED_LONG_LONG)
        return XCOLL_UINT64;
    if (d == MPI_INT)
        return sizeof(int) == 4 ? XCOLL_INT32 : sizeof(int) == 8 ? XCOLL_INT64 : -1;
    if (d == MPI_UNSIGNED)
        return sizeof(unsigned) == 4 ? XCOLL_UINT32 : sizeof(unsigned) == 8 ? XCOLL_UINT64 : -1;
    if (d == MPI_LONG)
        return sizeof(long) == 8 ? XCOLL_INT64 : sizeof(long) == 4 ? XCOLL_INT32 : -1;
    if (d == MPI_UNSIGNED_LONG)
        return sizeof(long) == 8 ? XCOLL_UINT64 : sizeof(long) == 4 ? XCOLL_UINT32 : -1;
    if (d == MPI_FLOAT)
        return sizeof(float) == 4 ? XCOLL_FLOAT32 : -1;
    if (d == MPI_DOUBLE)
        return sizeof(double) == 8 ? XCOLL_FLOAT64 : -1;
    return -1;
}

/* Two basic types are one where the signature is concerned when they are
 * the same handle or the same xcoll element (MPI_INT and MPI_INT32_T):
 * the answer must not depend on which name a rank happened to use. */
static int same_basic(MPI_Datatype a, MPI_Datatype b)
{
    int xa = xcmpi_reduce_dtype(a);
    return a == b || (xa >= 0 && xa == xcmpi_reduce_dtype(b));
}

/* The basic type all of d's data is made of: *basic, or
 * MPI_DATATYPE_NULL with *mixed set, or nothing (*basic untouched) when d
 * holds no data. Depends only on the signature. */
static int signature(MPI_Datatype d, MPI_Datatype *basic, int *mixed, int depth)
{
    contents_t c;
    int size, rc = MAP_OK, i;
    if (PMPI_Type_size(d, &size) != MPI_SUCCESS)
        return MAP_ERROR;
    if (size == 0 || *mixed)
        return MAP_OK;
    if (depth > MAX_SIGNATURE_DEPTH)
        return MAP_ERROR;
    if ((rc = contents_get(d, &c)) != MAP_OK) {
        *mixed = 1;
        return rc;
    }
    if (c.combiner == MPI_COMBINER_NAMED || c.nd == 0) {
        /* a basic type (the Fortran constructors make types of their own) */
        if (*basic == MPI_DATATYPE_NULL)
            *basic = d;
        else if (!same_basic(*basic, d))
            *mixed = 1;
        contents_fini(&c);
        return MAP_OK;
    }
    if (c.combiner == MPI_COMBINER_STRUCT) {
        for (i = 0; i < c.ints[0] && rc == MAP_OK; i++)
            if (c.ints[1 + i] > 0)
                rc = signature(c.types[i], basic, mixed, depth + 1);
    } else {
        rc = signature(c.types[0], basic, mixed, depth + 1);
    }
    contents_fini(&c);
    return rc;
}

/* --- building and caching ------------------------------------------------------------- */

static void typemap_free(xcmpi_typemap_t *tm)
{
    int finalized = 0;
    if (tm->handle != MPI_DATATYPE_NULL && tm->handle_owned &&
        PMPI_Finalized(&finalized) == MPI_SUCCESS && !finalized)
        PMPI_Type_free(&tm->handle);
    if (tm->handle_retained)
        xcmpi_type_release(tm->handle);
    free(tm->runs);
    free(tm->before);
    free(tm);
}

static xcmpi_typemap_t *typemap_build(MPI_Datatype d, int named, int described)
{
    xcmpi_typemap_t *tm = calloc(1, sizeof(*tm));
    MPI_Aint tlb, text;
    runs_t runs;
    int size, mixed = 0, rc;
    size_t i, total = 0, bsize;

    if (tm == NULL)
        return NULL;
    tm->refs = 1;
    tm->named = named;
    tm->basic = MPI_DATATYPE_NULL;
    tm->handle = MPI_DATATYPE_NULL;
    tm->xdtype = -1;
    if (PMPI_Type_size(d, &size) != MPI_SUCCESS || size < 0 ||
        PMPI_Type_get_extent(d, &tm->lb, &tm->extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(d, &tlb, &text) != MPI_SUCCESS ||
        (described && signature(d, &tm->basic, &mixed, 0) == MAP_ERROR)) {
        free(tm);
        return NULL;
    }
    tm->size = (size_t)size;
    if (mixed)
        tm->basic = MPI_DATATYPE_NULL;
    if (!described) {
        /* MPI's own type (see xcmpi_type_described): it lives as long as
         * the call that passes it, and only MPI can pack it */
        tm->opaque = 1;
        tm->handle = d;
        tm->handle_retained = 1;
        xcmpi_type_retain(d);
        return tm;
    }
    if (tm->basic != MPI_DATATYPE_NULL) {
        int s = 0;
        PMPI_Type_size(tm->basic, &s);
        bsize = s > 0 ? (size_t)s : 0;
        if (bsize == 0 || tm->size % bsize != 0)
            tm->basic = MPI_DATATYPE_NULL;
        else
            tm->nbasic = tm->size / bsize;
    }
    if (tm->basic != MPI_DATATYPE_NULL)
        tm->xdtype = xcmpi_reduce_dtype(tm->basic);
    memset(&runs, 0, sizeof(runs));
    rc = flatten(d, &runs, 0);
    for (i = 0; rc == MAP_OK && i < runs.n; i++)
        total += runs.v[i].len * runs.v[i].reps;
    if (rc == MAP_OK && total != tm->size) {
        /* a constructor read wrong; MPI knows better */
        xcmpi_warn("datatype map: %zu bytes of runs for a type of %zu; packing it through MPI",
                   total, tm->size);
        rc = MAP_OPAQUE;
    }
    if (rc == MAP_ERROR) {
        free(runs.v);
        free(tm);
        return NULL;
    }
    if (rc == MAP_OPAQUE) {
        free(runs.v);
        tm->opaque = 1;
        /* a reference of our own to the type: the caller may free its
         * handle while a nonblocking call still packs with it */
        if (named)
            tm->handle = d;
        else if (PMPI_Type_dup(d, &tm->handle) != MPI_SUCCESS) {
            free(tm);
            return NULL;
        } else
            tm->handle_owned = 1;
        return tm;
    }
    tm->runs = runs.v;
    tm->nruns = runs.n;
    tm->before = malloc((runs.n + 1) * sizeof(size_t));
    if (tm->before == NULL) {
        typemap_free(tm);
        return NULL;
    }
    tm->before[0] = 0;
    for (i = 0; i < runs.n; i++)
        tm->before[i + 1] = tm->before[i] + runs.v[i].len * runs.v[i].reps;
    tm->contiguous = tm->size == 0 || (runs.n == 1 && runs.v[0].reps == 1);
    tm->true_lb = runs.n > 0 ? runs.v[0].disp : 0;
    return tm;
}

void xcmpi_typemap_put(xcmpi_typemap_t *tm)
{
    if (tm != NULL && --tm->refs == 0)
        typemap_free(tm);
}

/* Named types live as long as MPI: a small table. */
#define MAX_NAMED 64
static struct {
    MPI_Datatype handle;
    xcmpi_typemap_t *tm;
} named_maps[MAX_NAMED];
static int nnamed;
static int keyval = MPI_KEYVAL_INVALID;
/* the named type looked up last, and its map: most calls repeat it */
static MPI_Datatype last_named = MPI_DATATYPE_NULL;
static xcmpi_typemap_t *last_named_tm;

static int delete_attr(MPI_Datatype d, int kv, void *attr, void *extra)
{
    (void)d;
    (void)kv;
    (void)extra;
    xcmpi_typemap_put(attr);
    return MPI_SUCCESS;
}

xcmpi_typemap_t *xcmpi_typemap_get(MPI_Datatype d)
{
    xcmpi_typemap_t *tm;
    int i, flag = 0;

    if (d == MPI_DATATYPE_NULL)
        return NULL;
    if (d == last_named && last_named_tm != NULL) {
        last_named_tm->refs++;
        return last_named_tm;
    }
    if (!xcmpi_type_described(d))
        return typemap_build(d, 0, 0); /* not cached: MPI's own, short-lived */
    if (!is_named(d)) {
        if (keyval == MPI_KEYVAL_INVALID &&
            PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_attr, &keyval, NULL) !=
                MPI_SUCCESS)
            return NULL;
        if (PMPI_Type_get_attr(d, keyval, &tm, &flag) != MPI_SUCCESS)
            return NULL;
        if (!flag) {
            if ((tm = typemap_build(d, 0, 1)) == NULL)
                return NULL;
            if (PMPI_Type_set_attr(d, keyval, tm) != MPI_SUCCESS) {
                typemap_free(tm);
                return NULL;
            }
        }
        tm->refs++;
        return tm;
    }
    for (i = 0; i < nnamed; i++)
        if (named_maps[i].handle == d)
            break;
    if (i == nnamed) {
        if ((tm = typemap_build(d, 1, 1)) == NULL)
            return NULL;
        if (nnamed == MAX_NAMED) /* uncached: freed by its last user */
            return tm;
        named_maps[nnamed].handle = d;
        named_maps[nnamed].tm = tm;
        nnamed++;
    }
    last_named = d;
    last_named_tm = named_maps[i].tm;
    last_named_tm->refs++;
    return last_named_tm;
}

void xcmpi_typemap_fini(void)
{
    int i;
    for (i = 0; i < nnamed; i++)
        xcmpi_typemap_put(named_maps[i].tm);
    nnamed = 0;
    if (keyval != MPI_KEYVAL_INVALID)
        PMPI_Type_free_keyval(&keyval);
    keyval = MPI_KEYVAL_INVALID;
    last_named = MPI_DATATYPE_NULL;
    last_named_tm = NULL;
}

/* --- packing ----------------------------------------------------------------------------- */

/* The element's start: base + k * extent, as addresses (MPI_BOTTOM is NULL). */
static uintptr_t elem_addr(const xcmpi_buf_t *b, size_t k)
{
    return (uintptr_t)b->base + (uintptr_t)((MPI_Aint)k * b->tm->extent);
}

/* The run holding data byte w of an element: the last i with before[i] <= w. */
static size_t run_at(const xcmpi_typemap_t *tm, size_t w)
{
    size_t lo = 0, hi = tm->nruns;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (tm->before[mid] <= w)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Copies len bytes between data byte off of the buffer and flat. */
static void walk_runs(const xcmpi_buf_t *b, size_t off, char *flat, size_t len, int unpack)
{
    const xcmpi_typemap_t *tm = b->tm;
    size_t k = off / tm->size, w = off % tm->size;
    while (len > 0) {
        uintptr_t elem = elem_addr(b, k);
        size_t r;
        for (r = run_at(tm, w); r < tm->nruns && len > 0; r++) {
            const xcmpi_run_t *run = &tm->runs[r];
            size_t within = w - tm->before[r], rep = within / run->len;
            size_t inner = within % run->len;
            for (; rep < run->reps && len > 0; rep++, inner = 0) {
                char *p = (char *)(elem + (uintptr_t)(run->disp + (MPI_Aint)rep * run->stride) +
                                   inner);
                size_t n = run->len - inner < len ? run->len - inner : len;
                if (unpack)
                    memcpy(p, flat, n);
                else
                    memcpy(flat, p, n);
                flat += n;
                len -= n;
                w += n;
            }
        }
        k++;
        w = 0;
    }
}

/* Opaque maps: whole elements through PMPI_Pack/PMPI_Unpack; a partial
 * element is packed whole into scratch (and, to unpack, patched and
 * unpacked whole: the rest of it is what it was). */
static int mpi_pack(const xcmpi_buf_t *b, size_t k, size_t n, void *dst)
{
    int pos = 0;
    if (n * b->tm->size > INT_MAX)
        return -1;
    return PMPI_Pack((void *)elem_addr(b, k), (int)n, b->tm->handle, dst,
                     (int)(n * b->tm->size), &pos, MPI_COMM_SELF) == MPI_SUCCESS &&
                   (size_t)pos == n * b->tm->size
               ? 0
               : -1;
}

static int mpi_unpack(const xcmpi_buf_t *b, size_t k, size_t n, const void *src)
{
    int pos = 0;
    if (n * b->tm->size > INT_MAX)
        return -1;
    return PMPI_Unpack(src, (int)(n * b->tm->size), &pos, (void *)elem_addr(b, k), (int)n,
                       b->tm->handle, MPI_COMM_SELF) == MPI_SUCCESS
               ? 0
               : -1;
}

static int walk_opaque(xcmpi_buf_t *b, size_t off, char *flat, size_t len, int unpack)
{
    const size_t size = b->tm->size;
    size_t k = off / size, w = off % size;
    while (len > 0) {
        if (w == 0 && len >= size) {
            /* whole elements, at most 1 GiB at a time for MPI's int counts */
            size_t n = len / size, cap = ((size_t)1 << 30) / size;
            if (n > cap)
                n = cap > 0 ? cap : 1;
            if ((unpack ? mpi_unpack(b, k, n, flat) : mpi_pack(b, k, n, flat)) != 0)
                return -1;
            k += n;
            flat += n * size;
            len -= n * size;
            continue;
        }
        {
            size_t part = size - w < len ? size - w : len;
            if (mpi_pack(b, k, 1, b->scratch) != 0)
                return -1;
            if (unpack) {
                memcpy((char *)b->scratch + w, flat, part);
                if (mpi_unpack(b, k, 1, b->scratch) != 0)
                    return -1;
            } else {
                memcpy(flat, (char *)b->scratch + w, part);
            }
            k++;
            w = 0;
            flat += part;
            len -= part;
        }
    }
    return 0;
}

static int walk(xcmpi_buf_t *b, size_t off, void *flat, size_t len, int unpack)
{
    if (len == 0)
        return 0;
    if (b->tm == NULL || b->tm->size == 0 || off > b->layout.bytes ||
        len > b->layout.bytes - off)
        return -1;
    if (b->tm->opaque)
        return walk_opaque(b, off, flat, len, unpack);
    walk_runs(b, off, flat, len, unpack);
    return 0;
}

int xcmpi_buf_pack(void *ctx, size_t offset, void *dst, size_t len)
{
    return walk(ctx, offset, dst, len, 0);
}

int xcmpi_buf_unpack(void *ctx, size_t offset, const void *src, size_t len)
{
    return walk(ctx, offset, (void *)(uintptr_t)src, len, 1);
}

int xcmpi_buf_init(xcmpi_buf_t *b, xcmpi_typemap_t *tm, const void *base, size_t count,
                   void **contig)
{
    memset(b, 0, sizeof(*b));
    *contig = NULL;
    if (tm->size != 0 && count > SIZE_MAX / tm->size)
        return -1;
    tm->refs++;
    b->tm = tm;
    b->base = (char *)(uintptr_t)base;
    b->count = count;
    if (tm->size == 0 || count == 0) {
        *contig = b->base;
        return 0;
    }
    if (tm->contiguous && (count == 1 || (MPI_Aint)tm->size == tm->extent)) {
        *contig = (void *)(elem_addr(b, 0) + (uintptr_t)tm->true_lb);
        return 0;
    }
    if (tm->opaque && (b->scratch = malloc(tm->size)) == NULL) {
        xcmpi_buf_fini(b);
        return -1;
    }
    b->layout.bytes = count * tm->size;
    b->layout.pack = xcmpi_buf_pack;
    b->layout.unpack = xcmpi_buf_unpack;
    b->layout.ctx = b;
    /* the first data byte, so xcoll can tell device memory (which only a
     * CUDA-aware MPI's own pack could reach) */
    b->layout.where = tm->opaque || tm->nruns == 0
                          ? NULL
                          : (const void *)(elem_addr(b, 0) + (uintptr_t)tm->runs[0].disp);
    return 1;
}

void xcmpi_buf_fini(xcmpi_buf_t *b)
{
    xcmpi_typemap_put(b->tm);
    free(b->scratch);
    memset(b, 0, sizeof(*b));
}
