/*
 * pmpi_xcoll.c - libxcoll_mpi: xcoll under any MPI through the profiling
 * interface. Preload it (LD_PRELOAD=libxcoll_mpi.so) or link it before
 * the MPI library; it defines MPI_Allreduce and friends, serves what
 * xcoll can and calls the PMPI_ function for everything else.
 *
 * Each communicator's xcoll communicator is created on its first
 * collective that xcoll serves, cached as an attribute of the MPI
 * communicator, and destroyed by the attribute's delete callback: when the
 * communicator is freed, or in MPI_Finalize, which deletes what is left.
 *
 * Only blocking forms are served: an MPI request for an xcoll operation
 * would need MPI_Wait, MPI_Test and the rest to progress xcoll, and the
 * profiling interface offers no hook for that (generalized requests are
 * completed by their owner, never progressed by MPI). The nonblocking
 * forms are intercepted only to log that MPI serves them.
 *
 * Settings (environment): XCOLL_MPI_ENABLE=0 turns it off,
 * XCOLL_MPI_NP (default 2) is the smallest communicator taken,
 * XCOLL_MPI_COLLS the forms taken (syntax of coll_xcoll_colls),
 * XCOLL_LOG=info logs every decision.
 */
#include <mpi.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

typedef struct pmpi_comm_s {
    MPI_Comm comm;
    xcoll_comm_t xcomm;
    enum { PCOMM_NONE, PCOMM_READY, PCOMM_FAILED } state;
    const char *declined;  /* why xcoll never serves this communicator, or NULL */
    char label[MPI_MAX_OBJECT_NAME + 32];
    struct pmpi_comm_s *prev, *next;  /* every cached communicator, for MPI_Finalize */
} pmpi_comm_t;

static struct {
    int ready;
    int enable;
    int min_size;
    xcmpi_mask_t mask;
    int keyval;
    pmpi_comm_t *comms;
} pm = {0, 1, 2, XCMPI_ALL_FORMS, MPI_KEYVAL_INVALID, NULL};

static int delete_comm_state(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    pmpi_comm_t *c = attr;
    (void)comm;
    (void)keyval;
    (void)extra;
    if (c->xcomm != NULL) {
        xcoll_status_t status = xcoll_comm_destroy(c->xcomm);
        if (status != XCOLL_OK)
            xcmpi_warn("destroying the xcoll communicator of %s: %s", c->label,
                       xcoll_strerror(status));
        else
            xcmpi_debug("xcoll communicator of %s destroyed", c->label);
    }
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        pm.comms = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    free(c);
    return MPI_SUCCESS;
}

/* Reads the settings once MPI runs; 0 when the library should stay out
 * of the way (MPI not running, or the keyval could not be made). */
static int setup(void)
{
    int initialized = 0, finalized = 0, rank;
    const char *env;
    char bad[64];
    if (pm.ready)
        return pm.ready > 0;
    if (PMPI_Initialized(&initialized) != MPI_SUCCESS || !initialized ||
        PMPI_Finalized(&finalized) != MPI_SUCCESS || finalized)
        return 0;
    xcmpi_log_init(0);
    if (PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS)
        xcmpi_log_set_rank(rank);
    pm.ready = -1;
    env = getenv("XCOLL_MPI_ENABLE");
    if (env != NULL && (strcmp(env, "0") == 0 || strcmp(env, "no") == 0))
        pm.enable = 0;
    env = getenv("XCOLL_MPI_NP");
    if (env != NULL && *env != '\0')
        pm.min_size = atoi(env);
    env = getenv("XCOLL_MPI_COLLS");
    if (env != NULL && xcmpi_parse_colls(env, &pm.mask, bad, sizeof(bad)) != 0) {
        xcmpi_warn("XCOLL_MPI_COLLS: '%s' is not a collective name; xcoll takes none", bad);
        pm.mask = 0;
    }
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_comm_state, &pm.keyval, NULL) !=
        MPI_SUCCESS) {
        xcmpi_warn("no attribute key for xcoll communicators; MPI serves every collective");
        return 0;
    }
    pm.ready = 1;
    return 1;
}

/* The cached state of comm, made on first sight; NULL when the library
 * is off or comm is not a valid communicator (MPI then reports it). */
static pmpi_comm_t *comm_state(MPI_Comm comm)
{
    pmpi_comm_t *c;
    int flag = 0, inter = 0, size = 0, len = 0;
    char name[MPI_MAX_OBJECT_NAME];
    if (!setup() || !pm.enable || comm == MPI_COMM_NULL)
        return NULL;
    if (PMPI_Comm_get_attr(comm, pm.keyval, &c, &flag) != MPI_SUCCESS)
        return NULL;
    if (flag)
        return c;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->comm = comm;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &size);
    name[0] = '\0';
    PMPI_Comm_get_name(comm, name, &len);
    snprintf(c->label, sizeof(c->label), "%s (size %d)", name[0] ? name : "a communicator", size);
    if (inter)
        c->declined = "an intercommunicator";
    else if (size < pm.min_size)
        c->declined = "communicator smaller than XCOLL_MPI_NP";
    if (PMPI_Comm_set_attr(comm, pm.keyval, c) != MPI_SUCCESS) {
        free(c);
        return NULL;
    }
    c->next = pm.comms;
    if (pm.comms != NULL)
        pm.comms->prev = c;
    pm.comms = c;
    return c;
}

static int bootstrap_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    pmpi_comm_t *c = ctx;
    if (bytes > (size_t)INT_MAX)
        return -1;
    /* PMPI_: MPI_Allgather would come back here */
    return PMPI_Allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE, c->comm) ==
                   MPI_SUCCESS ? 0 : -1;
}

/* Collective: every rank learns whether all succeeded, so that none
 * serves a call through xcoll while another passes it back. */
static void comm_create(pmpi_comm_t *c)
{
    xcoll_bootstrap_t boot;
    xcoll_status_t status;
    int ok, all_ok = 0;
    PMPI_Comm_rank(c->comm, &boot.rank);
    PMPI_Comm_size(c->comm, &boot.size);
    boot.allgather = bootstrap_allgather;
    boot.ctx = c;
    status = xcoll_comm_create(&boot, NULL, &c->xcomm);
    ok = status == XCOLL_OK;
    if (PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c->comm) != MPI_SUCCESS)
        all_ok = 0;
    if (all_ok) {
        c->state = PCOMM_READY;
        xcmpi_debug("xcoll communicator created for %s", c->label);
        return;
    }
    if (c->xcomm != NULL)
        (void)xcoll_comm_destroy(c->xcomm);
    c->xcomm = NULL;
    c->state = PCOMM_FAILED;
    xcmpi_warn("no xcoll communicator for %s (%s); MPI serves its collectives", c->label,
               ok ? "it failed on another rank" : xcoll_strerror(status));
}

/* Whether xcoll serves the call (why: the planner's verdict, NULL if it
 * can); logs the decision. */
static int take(pmpi_comm_t *c, const xcmpi_call_t *call, int nonblocking, const char *why)
{
    if (c == NULL)
        return 0;
    if (why == NULL && c->declined != NULL)
        why = c->declined;
    if (why == NULL && !(pm.mask & XCMPI_BIT(call->coll, nonblocking)))
        why = "not in XCOLL_MPI_COLLS";
    if (why == NULL && c->state == PCOMM_NONE)
        comm_create(c);
    if (why == NULL && c->state != PCOMM_READY)
        why = "no xcoll communicator";
    if (why != NULL)
        xcmpi_info("passed back %s on %s: %s", xcmpi_coll_name(call->coll, nonblocking), c->label,
                   why);
    return why == NULL;
}

/* Runs the call in xcoll, poking MPI's progress while waiting: a peer
 * may wait for a message this rank sent before the collective. */
static int serve(pmpi_comm_t *c, const xcmpi_call_t *call)
{
    const char *name = xcmpi_coll_name(call->coll, 0);
    xcoll_request_t req = NULL;
    xcoll_status_t status = xcmpi_start(call, c->xcomm, &req);
    char what[128];
    if (status == XCOLL_OK) {
        if (xcmpi_log_level >= XCMPI_LOG_INFO) {
            xcmpi_describe(call, what, sizeof(what));
            xcmpi_info("served %s on %s: %s", name, c->label, what);
        }
        for (;;) {
            int done = 0, flag;
            status = xcoll_test(&req, &done);
            if (done || status != XCOLL_OK)
                break;
            PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, MPI_STATUS_IGNORE);
        }
    }
    if (status == XCOLL_OK)
        return MPI_SUCCESS;
    xcmpi_error("%s on %s failed in xcoll: %s", name, c->label, xcoll_strerror(status));
    (void)PMPI_Comm_call_errhandler(c->comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

static int query_type(MPI_Datatype dtype, xcmpi_type_t *info)
{
    int ni, na, nd, combiner, size;
    MPI_Aint lb, extent;
    if (PMPI_Type_get_envelope(dtype, &ni, &na, &nd, &combiner) != MPI_SUCCESS ||
        PMPI_Type_size(dtype, &size) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dtype, &lb, &extent) != MPI_SUCCESS || size < 0 || extent < 0)
        return -1;
    info->predefined = combiner == MPI_COMBINER_NAMED;
    info->size = (size_t)size;
    info->true_lb = (long)lb;
    info->true_extent = (size_t)extent;
    return 0;
}

static int comm_rank(MPI_Comm comm)
{
    int rank = -1;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

static int comm_size(MPI_Comm comm)
{
    int size = 0;
    PMPI_Comm_size(comm, &size);
    return size;
}

/* --- blocking collectives ----------------------------------------------------- */

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                  MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL && take(c, &call, 0, xcmpi_plan_allreduce(&call, sbuf, rbuf, count, dtype, op)))
        return serve(c, &call);
    return PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL &&
        take(c, &call, 0,
             xcmpi_plan_bcast(&call, buf, count, dtype, root, comm_size(comm), query_type)))
        return serve(c, &call);
    return PMPI_Bcast(buf, count, dtype, root, comm);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
               MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL && take(c, &call, 0,
                          xcmpi_plan_reduce(&call, sbuf, rbuf, count, dtype, op, root,
                                            comm_rank(comm), comm_size(comm))))
        return serve(c, &call);
    return PMPI_Reduce(sbuf, rbuf, count, dtype, op, root, comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                  MPI_Datatype rdtype, MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL && take(c, &call, 0,
                          xcmpi_plan_allgather(&call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                               query_type)))
        return serve(c, &call);
    return PMPI_Allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                             MPI_Op op, MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL &&
        take(c, &call, 0, xcmpi_plan_reduce_scatter_block(&call, sbuf, rbuf, rcount, dtype, op)))
        return serve(c, &call);
    return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm);
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                       MPI_Op op, MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL && take(c, &call, 0,
                          xcmpi_plan_reduce_scatter(&call, sbuf, rbuf, rcounts, dtype, op,
                                                    comm_size(comm))))
        return serve(c, &call);
    return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                 MPI_Datatype rdtype, MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL && take(c, &call, 0,
                          xcmpi_plan_alltoall(&call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                              query_type)))
        return serve(c, &call);
    return PMPI_Alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
               MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL && take(c, &call, 0,
                          xcmpi_plan_gather(&call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                            comm_rank(comm), comm_size(comm), query_type)))
        return serve(c, &call);
    return PMPI_Gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    if (c != NULL && take(c, &call, 0,
                          xcmpi_plan_scatter(&call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                             root, comm_rank(comm), comm_size(comm), query_type)))
        return serve(c, &call);
    return PMPI_Scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm);
}

int MPI_Barrier(MPI_Comm comm)
{
    xcmpi_call_t call;
    pmpi_comm_t *c = comm_state(comm);
    xcmpi_plan_barrier(&call);
    if (c != NULL && take(c, &call, 0, NULL))
        return serve(c, &call);
    return PMPI_Barrier(comm);
}

/* --- nonblocking collectives: logged, then MPI's ---------------------------------- */

static const char *const nonblocking_why =
    "the PMPI library serves blocking forms only (MPI_Wait cannot progress xcoll)";

static void pass_back_nonblocking(MPI_Comm comm, xcmpi_coll_t coll)
{
    xcmpi_call_t call;
    pmpi_comm_t *c;
    if (xcmpi_log_level < XCMPI_LOG_INFO)
        return;
    c = comm_state(comm);
    memset(&call, 0, sizeof(call));
    call.coll = coll;
    (void)take(c, &call, 1, nonblocking_why);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_ALLREDUCE);
    return PMPI_Iallreduce(sbuf, rbuf, count, dtype, op, comm, request);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm,
               MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_BCAST);
    return PMPI_Ibcast(buf, count, dtype, root, comm, request);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_REDUCE);
    return PMPI_Ireduce(sbuf, rbuf, count, dtype, op, root, comm, request);
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                   MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_ALLGATHER);
    return PMPI_Iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request);
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_REDUCE_SCATTER_BLOCK);
    return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request);
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_REDUCE_SCATTER);
    return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                  MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_ALLTOALL);
    return PMPI_Ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request);
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                MPI_Datatype rdtype, int root, MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_GATHER);
    return PMPI_Igather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request);
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                 MPI_Datatype rdtype, int root, MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_SCATTER);
    return PMPI_Iscatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    pass_back_nonblocking(comm, XCMPI_BARRIER);
    return PMPI_Ibarrier(comm, request);
}

/* --- finalization ---------------------------------------------------------------- */

/* Destroys every xcoll communicator still alive (through the attribute's
 * delete callback), so that MPI_Finalize leaves nothing of xcoll behind. */
int MPI_Finalize(void)
{
    if (pm.ready > 0) {
        while (pm.comms != NULL) {
            pmpi_comm_t *c = pm.comms;
            if (PMPI_Comm_delete_attr(c->comm, pm.keyval) != MPI_SUCCESS || pm.comms == c)
                (void)delete_comm_state(c->comm, pm.keyval, c, NULL);
        }
        PMPI_Comm_free_keyval(&pm.keyval);
        pm.ready = 0;
    }
    return PMPI_Finalize();
}
