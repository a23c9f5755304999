/*
 * dropin.h - what the two MPI drop-ins (the Open MPI coll component and
 * the PMPI library) share: the collectives they can take, the translation
 * of an MPI call's arguments into an xcoll call (or the reason it cannot
 * be translated), and a small logger.
 *
 * Include <mpi.h> first. Nothing here calls MPI: the caller describes each
 * datatype with an xcmpi_type_t, because the component asks Open MPI's
 * internals and the PMPI library asks the MPI interface.
 *
 * Every decision depends only on arguments that MPI calls significant on
 * the calling rank, so ranks that pass consistent arguments make the same
 * choice and never split between xcoll and the MPI fallback.
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
    XCMPI_NCOLLS
} xcmpi_coll_t;

/* One bit per form: bit c is the blocking form of collective c, bit
 * XCMPI_NCOLLS + c its nonblocking form. */
typedef uint32_t xcmpi_mask_t;
#define XCMPI_BIT(coll, nonblocking) ((xcmpi_mask_t)1 << ((coll) + ((nonblocking) ? XCMPI_NCOLLS : 0)))
#define XCMPI_ALL_FORMS (((xcmpi_mask_t)1 << (2 * XCMPI_NCOLLS)) - 1)

/* "allreduce" or "iallreduce". */
const char *xcmpi_coll_name(xcmpi_coll_t coll, int nonblocking);

/* Parses a comma-separated list of forms: "all", "none", "blocking",
 * "nonblocking", a collective ("allreduce": both forms) or one form
 * ("iallreduce"). Returns 0, or -1 with the offending word in bad. */
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

/* What the planner needs to know of an MPI datatype. */
typedef struct {
    int predefined;   /* a named type of the MPI (not derived) */
    size_t size;      /* bytes of data in one element */
    long true_lb;     /* true lower bound and extent, bytes */
    size_t true_extent;
} xcmpi_type_t;

/* A caller's way to describe a datatype: 0 on success. */
typedef int (*xcmpi_type_query_fn)(MPI_Datatype dtype, xcmpi_type_t *info);

/* An MPI call, translated: what to pass to xcoll. Data-movement collectives
 * move bytes (dtype XCOLL_UINT8, count in bytes); reductions keep the
 * element type. */
typedef struct {
    xcmpi_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    int root;
} xcmpi_call_t;

/* Each planner fills *call and returns NULL when xcoll can serve the call,
 * else a static sentence saying why not (the call then goes back to MPI).
 * rank and size are the caller's in comm; query describes datatypes. */
const char *xcmpi_plan_allreduce(xcmpi_call_t *call, const void *sbuf, void *rbuf, int count,
                                 MPI_Datatype dtype, MPI_Op op);
const char *xcmpi_plan_bcast(xcmpi_call_t *call, void *buf, int count, MPI_Datatype dtype,
                             int root, int size, xcmpi_type_query_fn query);
const char *xcmpi_plan_reduce(xcmpi_call_t *call, const void *sbuf, void *rbuf, int count,
                              MPI_Datatype dtype, MPI_Op op, int root, int rank, int size);
const char *xcmpi_plan_allgather(xcmpi_call_t *call, const void *sbuf, int scount,
                                 MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                                 xcmpi_type_query_fn query);
const char *xcmpi_plan_reduce_scatter_block(xcmpi_call_t *call, const void *sbuf, void *rbuf,
                                            int rcount, MPI_Datatype dtype, MPI_Op op);
const char *xcmpi_plan_reduce_scatter(xcmpi_call_t *call, const void *sbuf, void *rbuf,
                                      const int *rcounts, MPI_Datatype dtype, MPI_Op op, int size);
const char *xcmpi_plan_alltoall(xcmpi_call_t *call, const void *sbuf, int scount,
                                MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                                xcmpi_type_query_fn query);
const char *xcmpi_plan_gather(xcmpi_call_t *call, const void *sbuf, int scount, MPI_Datatype sdtype,
                              void *rbuf, int rcount, MPI_Datatype rdtype, int root, int rank,
                              int size, xcmpi_type_query_fn query);
const char *xcmpi_plan_scatter(xcmpi_call_t *call, const void *sbuf, int scount,
                               MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                               int root, int rank, int size, xcmpi_type_query_fn query);
void xcmpi_plan_barrier(xcmpi_call_t *call);

/* Posts the planned call as an xcoll nonblocking collective. */
xcoll_status_t xcmpi_start(const xcmpi_call_t *call, xcoll_comm_t comm, xcoll_request_t *req);

/* "1024 x int32 sum, root 2" for the served-call log line. */
void xcmpi_describe(const xcmpi_call_t *call, char *buf, size_t len);

#endif
