/*
 * typemap.h - what the MPI drop-ins know of an MPI datatype: its type
 * signature, which every rank of a collective must agree on and which
 * therefore alone may decide whether xcoll serves a call, and its type
 * map, which is this rank's own business and only says how to pack.
 *
 * Include <mpi.h> first. Everything here asks MPI through PMPI_ calls
 * (envelope and contents of derived types, sizes, extents), so the Open MPI
 * component and the PMPI library share it.
 *
 * A type map is kept as runs for one element, in type-map order (the
 * order MPI_Pack writes): run i is `reps` blocks of `len` bytes at
 * disp, disp + stride, ... from the element's start (buf + k * extent).
 * Adjacent pieces merge into one run while the map is built, so
 * MPI_Type_vector(n, 1, s, MPI_INT) is one run however large n is. Types
 * the builder cannot take apart (MPI_Type_create_darray, the Fortran
 * ones, runs beyond a limit, nesting deeper than 32) are "opaque": packed
 * in whole elements through PMPI_Pack/PMPI_Unpack (a part of an element
 * is packed whole and cut, or patched and unpacked whole).
 */
#ifndef XCOLL_MPI_TYPEMAP_H
#define XCOLL_MPI_TYPEMAP_H

#include <stddef.h>

#include "xcoll.h"

typedef struct {
    MPI_Aint disp;   /* bytes from the element's start */
    size_t len;      /* bytes of one block */
    size_t reps;     /* blocks */
    MPI_Aint stride; /* bytes from one block to the next (reps > 1) */
} xcmpi_run_t;

typedef struct xcmpi_typemap {
    int refs;
    size_t size;          /* bytes of data in one element (MPI_Type_size) */
    MPI_Aint lb, extent;  /* element k starts at buf + k * extent */
    /* The signature: every data byte belongs to an element of `basic`
     * (nbasic of them per element), or basic is MPI_DATATYPE_NULL when
     * the basic types differ. The same on every rank that passes a type
     * with the same signature, whatever its layout. */
    MPI_Datatype basic;
    size_t nbasic;
    int xdtype;           /* the xcoll element of basic (xcmpi_reduce_dtype), or -1 */
    int named;            /* a named type: its handle never stands for another type */
    /* The layout. contiguous: one element's data is one block at true_lb,
     * and consecutive elements abut (size == extent). */
    int contiguous;
    MPI_Aint true_lb;
    int opaque;           /* no runs: pack whole elements through MPI */
    MPI_Datatype handle;  /* for opaque maps: the type (a dup of a derived one) */
    int handle_owned;     /* handle is that dup, freed with the map */
    int handle_retained;  /* handle is MPI's own type, retained (xcmpi_type_retain) */
    xcmpi_run_t *runs;
    size_t nruns;
    size_t *before;       /* nruns + 1: data bytes of one element before run i */
} xcmpi_typemap_t;

/* Whether MPI can describe type d (MPI_Type_get_envelope and friends
 * would succeed). Open MPI's collectives hand coll components types of
 * their own that have no envelope, and asking about them raises an
 * error, fatal by default; the component points this at a test of its
 * own. Default: every type can. A type that cannot is packed through
 * MPI_Pack and never reduced (its signature is unknown). */
extern int (*xcmpi_type_described)(MPI_Datatype d);

/* Keep such a type alive while a map uses it (a nonblocking call may
 * outlive its caller's reference); the component sets them, the defaults
 * do nothing. */
extern void (*xcmpi_type_retain)(MPI_Datatype d);
extern void (*xcmpi_type_release)(MPI_Datatype d);

/* The type map of dtype, built on first sight and cached with the type
 * (an attribute of derived types, a table for named ones); a reference
 * the caller gives back with xcmpi_typemap_put. NULL for an invalid
 * type or out of memory. */
xcmpi_typemap_t *xcmpi_typemap_get(MPI_Datatype dtype);
void xcmpi_typemap_put(xcmpi_typemap_t *tm);

/* The xcoll element type of a basic MPI type that xcoll can reduce
 * (8/32/64-bit integers, float, double), or -1. */
int xcmpi_reduce_dtype(MPI_Datatype basic);

/* Drops the cached maps of the named types; called before MPI_Finalize. */
void xcmpi_typemap_fini(void);

/* count elements of a type at base, as xcoll sees them: a contiguous
 * range, or a layout whose pack/unpack walk the type map. */
typedef struct {
    xcmpi_typemap_t *tm;  /* a reference, or NULL when unused */
    char *base;
    size_t count;
    xcoll_layout_t layout;
    void *scratch;        /* one element, for opaque maps */
} xcmpi_buf_t;

/* Fills b for count elements of tm at base (takes a reference to tm).
 * Returns 0 when the data is one contiguous range, at *contig; 1 when it
 * is not, and b->layout describes it; -1 if count * size overflows. */
int xcmpi_buf_init(xcmpi_buf_t *b, xcmpi_typemap_t *tm, const void *base, size_t count,
                   void **contig);
void xcmpi_buf_fini(xcmpi_buf_t *b);

/* The pack and unpack of a layout made by xcmpi_buf_init (tests call
 * them directly). */
int xcmpi_buf_pack(void *ctx, size_t offset, void *dst, size_t len);
int xcmpi_buf_unpack(void *ctx, size_t offset, const void *src, size_t len);

#endif
