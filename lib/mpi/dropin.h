/*
 * dropin.h - what the two MPI drop-ins (the Open MPI coll component and
 * the PMPI library) share: the collectives they can take, the translation
 * of an MPI call's arguments into an xcoll call (or the reason it cannot
 * be translated), the drop-in selection rules, and a small logger.
 *
 * Include <mpi.h> first. Datatypes are read through PMPI_ calls
 * (typemap.h), which both drop-ins may make.
 */
#ifndef XCOLL_MPI_DROPIN_H
#define XCOLL_MPI_DROPIN_H

#include <stddef.h>
#include <stdint.h>

#include "xcoll.h"

/* The collectives a drop-in may take; each has a blocking and a
 * nonblocking form. */
typedef enum {
    XCMPI_ALLREDUCE = 0,
    XCMPI_BCAST,
    XCMPI_REDUCE,
    XCMPI_ALLGATHER,
    XCMPI_REDUCE_SCATTER_BLOCK,
    XCMPI_REDUCE_SCATTER,
    XCMPI_ALLTOALL,
    XCMPI_GATHER,
    XCMPI_SCATTER,
    XCMPI_BARRIER,
    XCMPI_ALLGATHERV,
    XCMPI_ALLTOALLV,
    XCMPI_GATHERV,
    XCMPI_SCATTERV,
    XCMPI_NCOLLS
} xcmpi_coll_t;

/* One bit per form: bit c is the blocking form of collective c, bit
 * XCMPI_NCOLLS + c its nonblocking form. */
typedef uint32_t xcmpi_mask_t;
#define XCMPI_BIT(coll, nonblocking) ((xcmpi_mask_t)1 << ((coll) + ((nonblocking) ? XCMPI_NCOLLS : 0)))
#define XCMPI_ALL_FORMS (((xcmpi_mask_t)1 << (2 * XCMPI_NCOLLS)) - 1)
/* What a drop-in takes unless told ("default"): every form but the
 * v-variants'. Their counts differ between ranks, so no size rule can
 * give the small calls where MPI is faster back on every rank alike;
 * "never slower" then means asking for them (XCOLL_MPI_COLLS=all). */
#define XCMPI_V_FORMS                                                                  \
    (XCMPI_BIT(XCMPI_ALLGATHERV, 0) | XCMPI_BIT(XCMPI_ALLGATHERV, 1) |                 \
     XCMPI_BIT(XCMPI_ALLTOALLV, 0) | XCMPI_BIT(XCMPI_ALLTOALLV, 1) |                   \
     XCMPI_BIT(XCMPI_GATHERV, 0) | XCMPI_BIT(XCMPI_GATHERV, 1) |                       \
     XCMPI_BIT(XCMPI_SCATTERV, 0) | XCMPI_BIT(XCMPI_SCATTERV, 1))
#define XCMPI_DEFAULT_FORMS (XCMPI_ALL_FORMS & ~XCMPI_V_FORMS)

/* "allreduce" or "iallreduce". */
const char *xcmpi_coll_name(xcmpi_coll_t coll, int nonblocking);

/* Parses a comma-separated list of forms: "default" (XCMPI_DEFAULT_FORMS),
 * "all", "none", "blocking", "nonblocking", a collective ("allreduce":
 * both forms) or one form ("iallreduce"). Returns 0, or -1 with the
 * offending word in bad. */
int xcmpi_parse_colls(const char *list, xcmpi_mask_t *mask, char *bad, size_t badlen);

/* --- logging -------------------------------------------------------------- */

enum { XCMPI_LOG_ERROR = 0, XCMPI_LOG_WARN, XCMPI_LOG_INFO, XCMPI_LOG_DEBUG };

extern int xcmpi_log_level;

/* Level from XCOLL_LOG (error|warn|info|debug|trace, default warn), raised
 * to at least info by verbose >= 1 and debug by verbose >= 2. The rank in
 * the prefix comes from the launcher's environment until set_rank. */
void xcmpi_log_init(int verbose);
void xcmpi_log_set_rank(int rank);
void xcmpi_log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define XCMPI_LOG(level, ...)                         \
    do {                                              \
        if ((level) <= xcmpi_log_level)               \
            xcmpi_log_write((level), __VA_ARGS__);    \
    } while (0)
#define xcmpi_error(...) XCMPI_LOG(XCMPI_LOG_ERROR, __VA_ARGS__)
#define xcmpi_warn(...)  XCMPI_LOG(XCMPI_LOG_WARN, __VA_ARGS__)
#define xcmpi_info(...)  XCMPI_LOG(XCMPI_LOG_INFO, __VA_ARGS__)
#define xcmpi_debug(...) XCMPI_LOG(XCMPI_LOG_DEBUG, __VA_ARGS__)

/* --- translating a call ----------------------------------------------------- */

#include "typemap.h"

/* An MPI call, translated: what xcoll gets (args) and what must live as
 * long as the call runs (the two sides' type maps and layouts: args points
 * into them, so a call is planned where it will stay). Data-movement
 * collectives move bytes (dtype XCOLL_UINT8, count in bytes per block);
 * reductions keep the element type. */
typedef struct {
    const void *buf;
    size_t count;       /* elements of dtype */
    MPI_Datatype dtype;
    int used;
    int bound;          /* described to xcoll: the xcmpi_buf_t holds a reference */
} xcmpi_side_t;

/* A side of a v-variant: nblocks blocks, counts[j] elements at displs[j]
 * extents from the side's buffer. xcoll gets them in bytes: straight
 * from the buffer when the type is contiguous, else packed into staging
 * (and a receive side unpacked from it when the call is done), since the
 * v-variants take no layouts. A scalar side (a gatherv's send block) is
 * one block at displacement 0. */
typedef struct {
    const int *counts, *displs;
    int nblocks;
    int one_count, zero;  /* a scalar side's counts and displs point here */
    size_t *bytes, *offs; /* what xcoll gets (2 * nblocks words, one allocation) */
    char *staging;        /* NULL: the blocks are read or written in place */
    /* a staged side's type map, held from binding to release: the unpack
     * may run inside MPI's progress, where asking MPI about the type is
     * not safe */
    xcmpi_typemap_t *tm;
} xcmpi_vside_t;

typedef struct {
    xcmpi_coll_t coll;
    xcoll_args_t args;
    /* the buffers as MPI gave them, described to xcoll by xcmpi_start */
    xcmpi_side_t send_side, recv_side;
    xcmpi_buf_t send, recv;
    /* v-variants: the sides' blocks; started: xcoll ran the call, so a
     * staged receive side is unpacked when the call is released */
    xcmpi_vside_t vsend, vrecv;
    int vstarted;
    /* every datatype the verdict read is a named type: the same arguments
     * always get the same verdict (see xcmpi_passbacks_t) */
    int permanent;
} xcmpi_call_t;

/* --- passing back fast ------------------------------------------------------
 * A call MPI serves should cost next to nothing more than MPI itself: the
 * cheapest MPI collectives take a few hundred nanoseconds. A rank
 * remembers the calls it passed back by their scalar arguments as the
 * application made them (counts, datatype and op handles, root, in place),
 * when every datatype the verdict read was a named type, whose handle
 * never comes to mean another type; a call with the same arguments then
 * goes straight to MPI. Only a memory of this rank's own verdict, which
 * depends on nothing that changes: it cannot make ranks disagree. */
typedef struct {
    uintptr_t k[8];
} xcmpi_rawkey_t;

#define XCMPI_H(x) ((uintptr_t)(x))
/* form: the collective and whether nonblocking; flags: in-place bits */
#define XCMPI_RAWKEY(coll, nonblocking, root, c1, c2, t1, t2, op, flags)                     \
    ((xcmpi_rawkey_t){{(uintptr_t)(coll)*2 + (uintptr_t)(nonblocking) + 1, (uintptr_t)(root), \
                       (uintptr_t)(c1), (uintptr_t)(c2), XCMPI_H(t1), XCMPI_H(t2),          \
                       XCMPI_H(op), (uintptr_t)(flags)}})

#define XCMPI_PASSBACKS 64
typedef struct {
    xcmpi_rawkey_t key[XCMPI_PASSBACKS]; /* k[0] == 0: empty */
} xcmpi_passbacks_t;

/* The slot of a key: by collective form and first count, which tell
 * most calls of a program apart (a few instructions: this is on the path
 * of every call MPI serves). */
static inline unsigned xcmpi_passback_slot(const xcmpi_rawkey_t *k)
{
    return (unsigned)((k->k[0] ^ (k->k[2] * 5) ^ (k->k[1] << 3)) % XCMPI_PASSBACKS);
}

/* Whether a call with this key was passed back before. The key is taken
 * by value and the function inlined, so that on the path of every call
 * the compiler keeps it in registers. */
static inline int xcmpi_passback_known(const xcmpi_passbacks_t *p, const xcmpi_rawkey_t k)
{
    const uintptr_t *e = p->key[xcmpi_passback_slot(&k)].k;
    return e[0] == k.k[0] && e[2] == k.k[2] && e[4] == k.k[4] && e[6] == k.k[6] &&
           e[1] == k.k[1] && e[3] == k.k[3] && e[5] == k.k[5] && e[7] == k.k[7];
}

/* Remembers a call passed back (when call->permanent). */
static inline void xcmpi_passback_learn(xcmpi_passbacks_t *p, const xcmpi_rawkey_t *k)
{
    p->key[xcmpi_passback_slot(k)] = *k;
}

/* Each planner fills *call and returns NULL when xcoll can serve the call,
 * else a static sentence saying why not (the call then goes back to MPI).
 *
 * Whether xcoll serves a call depends only on what MPI requires to match
 * on every rank: the collective, root, op, count and the type signature
 * (the sequence of basic types, not where they are). A rank's own type
 * map, buffer addresses and MPI_IN_PLACE only change how its side is
 * described to xcoll (an address, or a layout that packs), never the
 * verdict, so ranks never split between xcoll and MPI. Only erroneous
 * calls (a negative count, an invalid type, sizes that do not match)
 * are decided locally, and MPI then reports the error.
 *
 * rank and size are the caller's in the communicator. Whatever the
 * verdict, release the call with xcmpi_call_fini. */
const char *xcmpi_plan_allreduce(xcmpi_call_t *call, const void *sbuf, void *rbuf, int count,
                                 MPI_Datatype dtype, MPI_Op op);
const char *xcmpi_plan_bcast(xcmpi_call_t *call, void *buf, int count, MPI_Datatype dtype,
                             int root, int size);
const char *xcmpi_plan_reduce(xcmpi_call_t *call, const void *sbuf, void *rbuf, int count,
                              MPI_Datatype dtype, MPI_Op op, int root, int rank, int size);
const char *xcmpi_plan_allgather(xcmpi_call_t *call, const void *sbuf, int scount,
                                 MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                                 int size);
const char *xcmpi_plan_reduce_scatter_block(xcmpi_call_t *call, const void *sbuf, void *rbuf,
                                            int rcount, MPI_Datatype dtype, MPI_Op op, int size);
const char *xcmpi_plan_reduce_scatter(xcmpi_call_t *call, const void *sbuf, void *rbuf,
                                      const int *rcounts, MPI_Datatype dtype, MPI_Op op, int size);
const char *xcmpi_plan_alltoall(xcmpi_call_t *call, const void *sbuf, int scount,
                                MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                                int size);
const char *xcmpi_plan_gather(xcmpi_call_t *call, const void *sbuf, int scount, MPI_Datatype sdtype,
                              void *rbuf, int rcount, MPI_Datatype rdtype, int root, int rank,
                              int size);
const char *xcmpi_plan_scatter(xcmpi_call_t *call, const void *sbuf, int scount,
                               MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                               int root, int rank, int size);
void xcmpi_plan_barrier(xcmpi_call_t *call);
/* The v-variants: served whatever the counts (an alltoallv's, a gatherv's
 * and a scatterv's differ between ranks, so no size rule could be agreed
 * on), with any type maps (packed through staging where not contiguous);
 * only erroneous calls go back, for MPI to report. */
const char *xcmpi_plan_allgatherv(xcmpi_call_t *call, const void *sbuf, int scount,
                                  MPI_Datatype sdtype, void *rbuf, const int *rcounts,
                                  const int *displs, MPI_Datatype rdtype, int rank, int size);
const char *xcmpi_plan_alltoallv(xcmpi_call_t *call, const void *sbuf, const int *scounts,
                                 const int *sdispls, MPI_Datatype sdtype, void *rbuf,
                                 const int *rcounts, const int *rdispls, MPI_Datatype rdtype,
                                 int size);
const char *xcmpi_plan_gatherv(xcmpi_call_t *call, const void *sbuf, int scount,
                               MPI_Datatype sdtype, void *rbuf, const int *rcounts,
                               const int *displs, MPI_Datatype rdtype, int root, int rank,
                               int size);
const char *xcmpi_plan_scatterv(xcmpi_call_t *call, const void *sbuf, const int *scounts,
                                const int *displs, MPI_Datatype sdtype, void *rbuf, int rcount,
                                MPI_Datatype rdtype, int root, int rank, int size);

/* The planner's verdict when this rank cannot describe a valid datatype
 * (out of memory): not a reason to pass the call back, which the others
 * would not do, but an error the drop-in returns (peers may then hang,
 * as with any rank that fails a collective). */
extern const char xcmpi_plan_failed[];

/* Drops what a planned call holds (type map references). */
void xcmpi_call_fini(xcmpi_call_t *call);

/* A communicator's memory of which calls the drop-in rules give to MPI,
 * so that a call that goes back costs a lookup here and nothing in xcoll
 * (the rules are fixed for the communicator's life). Zero it to start. */
#define XCMPI_VERDICTS 64
typedef struct {
    struct {
        uint64_t key[2]; /* 0: empty */
        int declined;
    } slot[XCMPI_VERDICTS];
} xcmpi_verdicts_t;

/* Whether the drop-in rules give the planned call to MPI (1) or xcoll
 * serves it (0); -1 on an error (logged). Asked before the buffers are
 * described. A reduction on a derived type is never given back. */
int xcmpi_declined(const xcmpi_call_t *call, xcoll_comm_t comm, xcmpi_verdicts_t *memo);

/* Describes the call's buffers (addresses, or layouts that pack) and
 * posts it: XCOLL_OK, XCOLL_DECLINED (nothing posted) or an error. */
xcoll_status_t xcmpi_start(xcmpi_call_t *call, xcoll_comm_t comm, xcoll_request_t *req);

/* "1024 x int32 sum, root 2" for the served-call log line. */
void xcmpi_describe(const xcmpi_call_t *call, char *buf, size_t len);

/* The passed-back reason for a nonblocking call on a communicator that
 * has no xcoll communicator yet. Making one takes collective steps that
 * block until every rank joins, and a nonblocking call must not block:
 * ranks may start nonblocking collectives on two communicators in
 * opposite orders (MPI_Comm_idup does, inside Open MPI), and each would
 * wait in the other's. So only a blocking call makes one. The verdict
 * agrees on every rank: the communicator's state changes only at its
 * collective calls, which every rank makes in the same order. */
#define XCMPI_NOT_YET "no xcoll communicator yet (made at the first blocking call xcoll serves here)"

/* The passed-back reason for XCOLL_DECLINED. */
#define XCMPI_MPI_FASTER "MPI measured faster (drop-in selection rules; XCOLL_LOG=info in xcoll shows the rule)"

/* --- the drop-in selection rules ----------------------------------------------- */

/* The built-in drop-in rules (lib/mpi/dropin.tune, measured by
 * bench/dropin_sweep.sh): where MPI was faster, "mpi". */
extern const char xcmpi_rules_builtin[];

/* Sets cfg's rules for a drop-in communicator: the file named by path
 * (XCOLL_MPI_TUNE_FILE, coll_xcoll_tune_file) when not NULL or empty, else
 * the built-in ones; and cfg->fallback. Returns 0, or -1 (logged) when
 * the file cannot be read: that rank must then still join
 * xcoll_comm_create and report failure, so that every rank passes back.
 * *text is the caller's to free (may be NULL). */
int xcmpi_config_rules(xcoll_config_t *cfg, const char *path, char **text);

/* Makes xcoll_comm_create fail on every rank because this one cannot take
 * part (its configuration failed, why says how): it still joins, with
 * rules that do not parse, so the others are told instead of waiting. */
void xcmpi_config_fail(xcoll_config_t *cfg, const char *why);

#endif
