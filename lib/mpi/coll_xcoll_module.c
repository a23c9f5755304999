/*
 * coll_xcoll_module.c - one module per communicator: the collective entry
 * points Open MPI calls, the lazily created xcoll communicator, and the
 * MPI requests of nonblocking collectives.
 *
 * Each entry point translates its arguments (dropin.c); if xcoll can serve
 * the call it does, else the call goes to the handler that Open MPI had
 * selected before this module was enabled, which the module saved then.
 *
 * Blocking calls are served as nonblocking xcoll calls waited for here,
 * progressing Open MPI alongside: a rank blocked in xcoll must still move
 * its pending MPI messages, which a peer may be waiting for.
 */
#include "coll_xcoll.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

/* --- MPI requests of nonblocking collectives -------------------------------- */

typedef struct mca_coll_xcoll_request_s {
    ompi_request_t super;
    /* Open MPI's nonblocking bindings take a collective's request for an
     * ompi_coll_base_nbc_request_t and, once the call returns, keep
     * derived datatypes alive through the fields that follow its super
     * (ompi_coll_base_retain_datatypes): a completion callback, its data,
     * two object pointers. These reserve that room, in that layout (the
     * header itself needs Fortran headers Debian does not ship); without
     * it they wrote over the call below. */
    void *nbc_cb, *nbc_cb_data, *nbc_objs[2];
    xcmpi_call_t call;        /* planned here: its layouts must outlive the operation */
    xcoll_request_t xreq;
    /* retained while xcoll works, so the xcoll communicator outlives the
     * operation even if the MPI communicator is freed meanwhile */
    mca_coll_xcoll_module_t *module;
    struct mca_coll_xcoll_request_s *next;  /* in the active list */
    bool freed_early;                      /* MPI_Request_free before completion */
} mca_coll_xcoll_request_t;

static int request_free(ompi_request_t **rptr);

static int request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST;  /* collectives cannot be cancelled */
}

static void request_construct(mca_coll_xcoll_request_t *r)
{
    r->super.req_type = OMPI_REQUEST_COLL;
    r->super.req_start = NULL;
    r->super.req_free = request_free;
    r->super.req_cancel = request_cancel;
    r->nbc_cb = r->nbc_cb_data = r->nbc_objs[0] = r->nbc_objs[1] = NULL;
    r->xreq = NULL;
    r->module = NULL;
    r->next = NULL;
    r->freed_early = false;
}

OBJ_CLASS_INSTANCE(mca_coll_xcoll_request_t, ompi_request_t, request_construct, NULL);

/* The requests xcoll still works on, tested by progress(). */
static mca_coll_xcoll_request_t *active_requests;
static bool progress_registered;

static void request_release(mca_coll_xcoll_request_t *r)
{
    OMPI_REQUEST_FINI(&r->super);
    OBJ_RELEASE(r);
}

static int request_free(ompi_request_t **rptr)
{
    mca_coll_xcoll_request_t *r = (mca_coll_xcoll_request_t *)*rptr;
    if (REQUEST_COMPLETE(&r->super))
        request_release(r);
    else
        r->freed_early = true;  /* progress() releases it when xcoll is done */
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static void request_finish(mca_coll_xcoll_request_t *r, xcoll_status_t status)
{
    mca_coll_xcoll_module_t *module = r->module;
    r->xreq = NULL;
    r->module = NULL;
    xcmpi_call_fini(&r->call);
    if (status != XCOLL_OK)
        xcmpi_error("a nonblocking collective failed in xcoll: %s", xcoll_strerror(status));
    r->super.req_status.MPI_ERROR = status == XCOLL_OK ? MPI_SUCCESS : MPI_ERR_OTHER;
    if (r->freed_early)
        request_release(r);
    else
        ompi_request_complete(&r->super, true);
    OBJ_RELEASE(module);
}

/* Registered with opal_progress: finishes the MPI requests whose xcoll
 * operation is done. */
static int progress(void)
{
    static bool in_progress;
    mca_coll_xcoll_request_t **link;
    int completed = 0;
    if (active_requests == NULL || in_progress)
        return 0;
    in_progress = true;
    link = &active_requests;
    while (*link != NULL) {
        mca_coll_xcoll_request_t *r = *link;
        int done = 0;
        xcoll_status_t status = xcoll_test(&r->xreq, &done);
        if (!done && status == XCOLL_OK) {
            link = &r->next;
            continue;
        }
        *link = r->next;
        request_finish(r, status);
        completed++;
    }
    in_progress = false;
    return completed;
}

void mca_coll_xcoll_progress_fini(void)
{
    if (progress_registered) {
        opal_progress_unregister(progress);
        progress_registered = false;
    }
}

/* A request for a nonblocking call, made before the call is planned (the
 * plan lives in it); NULL when out of memory. */
static mca_coll_xcoll_request_t *request_new(void)
{
    mca_coll_xcoll_request_t *r = OBJ_NEW(mca_coll_xcoll_request_t);
    if (r != NULL)
        memset(&r->call, 0, sizeof(r->call));
    return r;
}

/* Hands r to Open MPI as the nonblocking call's request, now that xcoll
 * runs xreq. */
static int request_start(mca_coll_xcoll_module_t *m, mca_coll_xcoll_request_t *r,
                         xcoll_request_t xreq, ompi_request_t **request)
{
    if (!progress_registered) {
        opal_progress_register(progress);
        progress_registered = true;
    }
    OMPI_REQUEST_INIT(&r->super, false);
    r->super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.req_mpi_object.comm = m->comm;
    r->super.req_status.MPI_SOURCE = MPI_ANY_SOURCE;
    r->super.req_status.MPI_TAG = MPI_ANY_TAG;
    r->super.req_status.MPI_ERROR = MPI_SUCCESS;
    r->super.req_status._cancelled = 0;
    r->super.req_status._ucount = 0;
    r->xreq = xreq;
    r->module = m;
    OBJ_RETAIN(m);
    r->next = active_requests;
    active_requests = r;
    *request = &r->super;
    return OMPI_SUCCESS;
}

/* --- the xcoll communicator ------------------------------------------------- */

static void comm_label(const mca_coll_xcoll_module_t *m, char *buf, size_t len)
{
    if (m->comm->c_name[0] != '\0')
        snprintf(buf, len, "%s (size %d)", m->comm->c_name, ompi_comm_size(m->comm));
    else
        snprintf(buf, len, "communicator %u (size %d)", (unsigned)m->comm->c_contextid,
                 ompi_comm_size(m->comm));
}

/* The bootstrap goes through the previous module: MPI_Allgather would
 * come back into this module. */
static int bootstrap_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    mca_coll_xcoll_module_t *m = ctx;
    if (bytes > (size_t)INT_MAX)
        return -1;
    return m->prev.coll_allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE,
                                  m->comm, m->prev.coll_allgather_module) == OMPI_SUCCESS ? 0 : -1;
}

/* Collective over the communicator, on its first collective that xcoll
 * can serve. Every rank learns whether all succeeded, so that they never
 * split between xcoll and the fallback. A rank whose drop-in rules file
 * cannot be read still joins, and then fails the agreement. */
static void comm_create(mca_coll_xcoll_module_t *m)
{
    xcoll_bootstrap_t boot;
    xcoll_config_t cfg;
    xcoll_status_t status;
    char label[MPI_MAX_OBJECT_NAME + 32], *rules = NULL;
    int ok, all_ok = 0, rules_ok;

    boot.rank = ompi_comm_rank(m->comm);
    boot.size = ompi_comm_size(m->comm);
    boot.allgather = bootstrap_allgather;
    boot.ctx = m;
    status = xcoll_config_init(&cfg);
    rules_ok = xcmpi_config_rules(&cfg, mca_coll_xcoll_params.tune_file, &rules) == 0;
    if (status != XCOLL_OK || !rules_ok)
        xcmpi_config_fail(&cfg, status != XCOLL_OK ? "the XCOLL_* environment"
                                                   : "the drop-in rules file");
    /* collective, and failing on every rank when one fails */
    status = xcoll_comm_create(&boot, &cfg, &m->xcomm);
    free(rules);
    ok = status == XCOLL_OK;
    if (m->prev.coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, m->comm,
                               m->prev.coll_allreduce_module) != OMPI_SUCCESS)
        all_ok = 0;
    comm_label(m, label, sizeof(label));
    if (all_ok) {
        m->state = XCOLL_OMPI_COMM_READY;
        xcmpi_debug("xcoll communicator created for %s", label);
        return;
    }
    if (m->xcomm != NULL)
        (void)xcoll_comm_destroy(m->xcomm);
    m->xcomm = NULL;
    m->state = XCOLL_OMPI_COMM_FAILED;
    xcmpi_warn("no xcoll communicator for %s (%s); Open MPI serves its collectives", label,
               !ok ? xcoll_strerror(status) : "it failed on another rank");
}

/* --- serving a call ----------------------------------------------------------- */

static void log_passed_back(mca_coll_xcoll_module_t *m, const xcmpi_call_t *call,
                            bool nonblocking, const char *why)
{
    char label[MPI_MAX_OBJECT_NAME + 32];
    if (xcmpi_log_level < XCMPI_LOG_INFO)
        return;
    comm_label(m, label, sizeof(label));
    xcmpi_info("passed back %s on %s: %s", xcmpi_coll_name(call->coll, nonblocking), label, why);
}

/* Serves a planned call in xcoll if it can (why: the planner's verdict,
 * NULL if xcoll can). Returns true with *rc set when xcoll took it: a
 * nonblocking one then runs behind *request (r, where the call was
 * planned), a blocking one is done. Returns false when the call goes
 * back to the previous module; the call is released either way. */
static bool serve(mca_coll_xcoll_module_t *m, xcmpi_call_t *call, const char *why,
                  mca_coll_xcoll_request_t *r, ompi_request_t **request,
                  const xcmpi_rawkey_t *key, int *rc)
{
    const bool nonblocking = request != NULL;
    const char *name;
    char label[MPI_MAX_OBJECT_NAME + 32], what[160];
    xcoll_request_t xreq = NULL;
    xcoll_status_t status;
    int declined;

    if (why == xcmpi_plan_failed) {
        xcmpi_call_fini(call);
        *rc = OMPI_ERR_OUT_OF_RESOURCE;
        return true;
    }
    if (why == NULL && m->state == XCOLL_OMPI_COMM_NONE && nonblocking) {
        why = XCMPI_NOT_YET;
        call->permanent = 0; /* a blocking call may make one later */
    }
    if (why == NULL && m->state == XCOLL_OMPI_COMM_NONE)
        comm_create(m);
    if (why == NULL && m->state != XCOLL_OMPI_COMM_READY)
        why = "no xcoll communicator";
    if (why != NULL)
        status = XCOLL_DECLINED;
    else if ((declined = xcmpi_declined(call, m->xcomm, &m->verdicts)) != 0)
        status = declined > 0 ? XCOLL_DECLINED : XCOLL_ERR_INTERNAL;
    else
        status = xcmpi_start(call, m->xcomm, &xreq);
    if (status == XCOLL_DECLINED) {
        log_passed_back(m, call, nonblocking, why != NULL ? why : XCMPI_MPI_FASTER);
        if (call->permanent)
            xcmpi_passback_learn(&m->passbacks, key);
        xcmpi_call_fini(call);
        return false;
    }
    /* the label only where it is printed: formatting it cost as much as
     * a small call's whole work in xcoll (bench/mpi_collbench) */
    name = xcmpi_coll_name(call->coll, nonblocking);
    if (status != XCOLL_OK) {
        comm_label(m, label, sizeof(label));
        xcmpi_error("%s on %s: xcoll could not start it: %s", name, label,
                    xcoll_strerror(status));
        xcmpi_call_fini(call);
        *rc = OMPI_ERROR;
        return true;
    }
    if (xcmpi_log_level >= XCMPI_LOG_INFO) {
        comm_label(m, label, sizeof(label));
        xcmpi_describe(call, what, sizeof(what));
        xcmpi_info("served %s on %s: %s", name, label, what);
    }
    if (nonblocking) {
        *rc = request_start(m, r, xreq, request);
        return true;
    }
    for (;;) {
        int done = 0;
        status = xcoll_test(&xreq, &done);
        if (done || status != XCOLL_OK)
            break;
        opal_progress();
    }
    xcmpi_call_fini(call);
    if (status != XCOLL_OK) {
        comm_label(m, label, sizeof(label));
        xcmpi_error("%s on %s failed in xcoll: %s", name, label, xcoll_strerror(status));
        *rc = OMPI_ERROR;
        return true;
    }
    *rc = OMPI_SUCCESS;
    return true;
}

#define XMODULE(module) ((mca_coll_xcoll_module_t *)(module))

/* The shape of every entry point. A call passed back before with the
 * same arguments goes straight back (dropin.h, "passing back fast");
 * unless every call is logged. A blocking one plans on the stack; a
 * nonblocking one plans into a request of its own, released when the
 * call is passed back. KEY is the call's raw key, PLAN the
 * planner call, with `call` naming the call to fill; PASS the previous
 * module's call. */
#define SERVE_BLOCKING(KEY, PLAN, PASS)                                       \
    do {                                                                      \
        mca_coll_xcoll_module_t *m = XMODULE(module);                         \
        xcmpi_rawkey_t key_;                                                  \
        xcmpi_call_t call_, *call = &call_;                                   \
        int rc_;                                                              \
        const char *why_;                                                     \
        if (xcmpi_log_level < XCMPI_LOG_INFO &&                               \
            xcmpi_passback_known(&m->passbacks, KEY))                         \
            return (PASS);                                                    \
        key_ = KEY;                                                           \
        why_ = (PLAN);                                                        \
        if (serve(m, call, why_, NULL, NULL, &key_, &rc_))                    \
            return rc_;                                                       \
        return (PASS);                                                        \
    } while (0)

#define SERVE_NONBLOCKING(KEY, PLAN, PASS)                                    \
    do {                                                                      \
        mca_coll_xcoll_module_t *m = XMODULE(module);                         \
        xcmpi_rawkey_t key_;                                                  \
        mca_coll_xcoll_request_t *r_;                                         \
        xcmpi_call_t *call;                                                   \
        int rc_;                                                              \
        const char *why_;                                                     \
        if (xcmpi_log_level < XCMPI_LOG_INFO &&                               \
            xcmpi_passback_known(&m->passbacks, KEY))                         \
            return (PASS);                                                    \
        key_ = KEY;                                                           \
        if ((r_ = request_new()) == NULL) /* never a one-rank pass-back */    \
            return OMPI_ERR_OUT_OF_RESOURCE;                                  \
        call = &r_->call;                                                     \
        why_ = (PLAN);                                                        \
        if (serve(m, call, why_, r_, request, &key_, &rc_)) {                 \
            if (rc_ != OMPI_SUCCESS)                                          \
                OBJ_RELEASE(r_);                                              \
            return rc_;                                                       \
        }                                                                     \
        OBJ_RELEASE(r_);                                                      \
        return (PASS);                                                        \
    } while (0)

/* --- entry points ----------------------------------------------------------------- */

static int entry_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLREDUCE, 0, 0, count, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allreduce(call, sbuf, rbuf, count, dtype, op),
                   m->prev.coll_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                          m->prev.coll_allreduce_module));
}

static int entry_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLREDUCE, 1, 0, count, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allreduce(call, sbuf, rbuf, count, dtype, op),
                      m->prev.coll_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                              m->prev.coll_iallreduce_module));
}

static int entry_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_BCAST, 0, root, count, 0, dtype, NULL, NULL, 0),
                   xcmpi_plan_bcast(call, buf, count, dtype, root, ompi_comm_size(comm)),
                   m->prev.coll_bcast(buf, count, dtype, root, comm, m->prev.coll_bcast_module));
}

static int entry_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_BCAST, 1, root, count, 0, dtype, NULL, NULL, 0),
                   xcmpi_plan_bcast(call, buf, count, dtype, root, ompi_comm_size(comm)),
                      m->prev.coll_ibcast(buf, count, dtype, root, comm, request,
                                          m->prev.coll_ibcast_module));
}

static int entry_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE, 0, root, count, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce(call, sbuf, rbuf, count, dtype, op, root,
                                     ompi_comm_rank(comm), ompi_comm_size(comm)),
                   m->prev.coll_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                                       m->prev.coll_reduce_module));
}

static int entry_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE, 1, root, count, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce(call, sbuf, rbuf, count, dtype, op, root,
                                        ompi_comm_rank(comm), ompi_comm_size(comm)),
                      m->prev.coll_ireduce(sbuf, rbuf, count, dtype, op, root, comm, request,
                                           m->prev.coll_ireduce_module));
}

static int entry_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLGATHER, 0, 0, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allgather(call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                        ompi_comm_size(comm)),
                   m->prev.coll_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                          m->prev.coll_allgather_module));
}

static int entry_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLGATHER, 1, 0, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allgather(call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                           ompi_comm_size(comm)),
                      m->prev.coll_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                              request, m->prev.coll_iallgather_module));
}

static int entry_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE_SCATTER_BLOCK, 0, 0, rcount, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce_scatter_block(call, sbuf, rbuf, rcount, dtype, op,
                                                   ompi_comm_size(comm)),
                   m->prev.coll_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                     m->prev.coll_reduce_scatter_block_module));
}

static int entry_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm, ompi_request_t **request,
                                       mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE_SCATTER_BLOCK, 1, 0, rcount, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce_scatter_block(call, sbuf, rbuf, rcount, dtype, op,
                                                      ompi_comm_size(comm)),
                      m->prev.coll_ireduce_scatter_block(
                          sbuf, rbuf, rcount, dtype, op, comm, request,
                          m->prev.coll_ireduce_scatter_block_module));
}

static int entry_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE_SCATTER, 0, 0, XCMPI_H(rcounts), 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce_scatter(call, sbuf, rbuf, rcounts, dtype, op,
                                             ompi_comm_size(comm)),
                   m->prev.coll_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                               m->prev.coll_reduce_scatter_module));
}

static int entry_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE_SCATTER, 1, 0, XCMPI_H(rcounts), 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce_scatter(call, sbuf, rbuf, rcounts, dtype, op,
                                                ompi_comm_size(comm)),
                      m->prev.coll_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                                   m->prev.coll_ireduce_scatter_module));
}

static int entry_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLTOALL, 0, 0, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_alltoall(call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                       ompi_comm_size(comm)),
                   m->prev.coll_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                         m->prev.coll_alltoall_module));
}

static int entry_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLTOALL, 1, 0, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_alltoall(call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                          ompi_comm_size(comm)),
                      m->prev.coll_ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                             request, m->prev.coll_ialltoall_module));
}

static int entry_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_GATHER, 0, root, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_gather(call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                     ompi_comm_rank(comm), ompi_comm_size(comm)),
                   m->prev.coll_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                       m->prev.coll_gather_module));
}

static int entry_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_GATHER, 1, root, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_gather(call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                        ompi_comm_rank(comm), ompi_comm_size(comm)),
                      m->prev.coll_igather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                           request, m->prev.coll_igather_module));
}

static int entry_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_SCATTER, 0, root, scount, rcount, sdtype, rdtype, NULL, rbuf == MPI_IN_PLACE),
                   xcmpi_plan_scatter(call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                      ompi_comm_rank(comm), ompi_comm_size(comm)),
                   m->prev.coll_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                        m->prev.coll_scatter_module));
}

static int entry_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_SCATTER, 1, root, scount, rcount, sdtype, rdtype, NULL, rbuf == MPI_IN_PLACE),
                   xcmpi_plan_scatter(call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                         ompi_comm_rank(comm), ompi_comm_size(comm)),
                      m->prev.coll_iscatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                            comm, request, m->prev.coll_iscatter_module));
}

static const char *plan_barrier(xcmpi_call_t *call)
{
    xcmpi_plan_barrier(call);
    return NULL;
}

static int entry_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_BARRIER, 0, 0, 0, 0, NULL, NULL, NULL, 0),
                   plan_barrier(call), m->prev.coll_barrier(comm, m->prev.coll_barrier_module));
}

static int entry_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_BARRIER, 1, 0, 0, 0, NULL, NULL, NULL, 0),
                   plan_barrier(call),
                      m->prev.coll_ibarrier(comm, request, m->prev.coll_ibarrier_module));
}

static int entry_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *displs,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLGATHERV, 0, 0, XCMPI_H(rcounts), XCMPI_H(displs), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allgatherv(call, sbuf, scount, sdtype, rbuf, rcounts, displs,
                                         rdtype, ompi_comm_rank(comm), ompi_comm_size(comm)),
                   m->prev.coll_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                                           comm, m->prev.coll_allgatherv_module));
}

static int entry_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLGATHERV, 1, 0, XCMPI_H(rcounts), XCMPI_H(displs), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                      xcmpi_plan_allgatherv(call, sbuf, scount, sdtype, rbuf, rcounts, displs,
                                            rdtype, ompi_comm_rank(comm), ompi_comm_size(comm)),
                      m->prev.coll_iallgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs,
                                               rdtype, comm, request,
                                               m->prev.coll_iallgatherv_module));
}

static int entry_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                           struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                           const int *rdispls, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLTOALLV, 0, 0, XCMPI_H(scounts), XCMPI_H(rcounts), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_alltoallv(call, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                                        rdispls, rdtype, ompi_comm_size(comm)),
                   m->prev.coll_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                          rdtype, comm, m->prev.coll_alltoallv_module));
}

static int entry_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                            struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                            const int *rdispls, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLTOALLV, 1, 0, XCMPI_H(scounts), XCMPI_H(rcounts), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                      xcmpi_plan_alltoallv(call, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                                           rdispls, rdtype, ompi_comm_size(comm)),
                      m->prev.coll_ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                                              rdispls, rdtype, comm, request,
                                              m->prev.coll_ialltoallv_module));
}

static int entry_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                         void *rbuf, const int *rcounts, const int *displs,
                         struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_GATHERV, 0, root, scount, XCMPI_H(rcounts), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_gatherv(call, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                                      root, ompi_comm_rank(comm), ompi_comm_size(comm)),
                   m->prev.coll_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                        comm, m->prev.coll_gatherv_module));
}

static int entry_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, const int *rcounts, const int *displs,
                          struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_GATHERV, 1, root, scount, XCMPI_H(rcounts), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                      xcmpi_plan_gatherv(call, sbuf, scount, sdtype, rbuf, rcounts, displs,
                                         rdtype, root, ompi_comm_rank(comm), ompi_comm_size(comm)),
                      m->prev.coll_igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                                            root, comm, request, m->prev.coll_igatherv_module));
}

static int entry_scatterv(const void *sbuf, const int *scounts, const int *displs,
                          struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_SCATTERV, 0, root, rcount, XCMPI_H(scounts), sdtype, rdtype, NULL, rbuf == MPI_IN_PLACE),
                   xcmpi_plan_scatterv(call, sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype,
                                       root, ompi_comm_rank(comm), ompi_comm_size(comm)),
                   m->prev.coll_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype,
                                         root, comm, m->prev.coll_scatterv_module));
}

static int entry_iscatterv(const void *sbuf, const int *scounts, const int *displs,
                           struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_SCATTERV, 1, root, rcount, XCMPI_H(scounts), sdtype, rdtype, NULL, rbuf == MPI_IN_PLACE),
                      xcmpi_plan_scatterv(call, sbuf, scounts, displs, sdtype, rbuf, rcount,
                                          rdtype, root, ompi_comm_rank(comm), ompi_comm_size(comm)),
                      m->prev.coll_iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype,
                                             root, comm, request, m->prev.coll_iscatterv_module));
}

/* --- the module ------------------------------------------------------------------- */

/* Applies ACTION(name) to every handler the module may call on the
 * previous layer; allgather and allreduce are also the bootstrap's. */
#define XCOLL_FOR_EACH_PREV(ACTION)                                           \
    ACTION(allreduce) ACTION(iallreduce) ACTION(bcast) ACTION(ibcast)         \
    ACTION(reduce) ACTION(ireduce) ACTION(allgather) ACTION(iallgather)       \
    ACTION(reduce_scatter_block) ACTION(ireduce_scatter_block)                \
    ACTION(reduce_scatter) ACTION(ireduce_scatter) ACTION(alltoall)           \
    ACTION(ialltoall) ACTION(gather) ACTION(igather) ACTION(scatter)          \
    ACTION(iscatter) ACTION(barrier) ACTION(ibarrier) ACTION(allgatherv)     \
    ACTION(iallgatherv) ACTION(alltoallv) ACTION(ialltoallv) ACTION(gatherv)  \
    ACTION(igatherv) ACTION(scatterv) ACTION(iscatterv)

static void module_construct(mca_coll_xcoll_module_t *m)
{
    m->comm = NULL;
    m->xcomm = NULL;
    m->state = XCOLL_OMPI_COMM_NONE;
    memset(&m->verdicts, 0, sizeof(m->verdicts));
    memset(&m->passbacks, 0, sizeof(m->passbacks));
    memset(&m->prev, 0, sizeof(m->prev));
    m->prev_retained = false;
}

/* Runs when the communicator is freed (or at MPI_Finalize) and its last
 * nonblocking xcoll operation is done. */
static void module_destruct(mca_coll_xcoll_module_t *m)
{
    if (m->xcomm != NULL) {
        xcoll_status_t status = xcoll_comm_destroy(m->xcomm);
        if (status != XCOLL_OK)
            xcmpi_warn("destroying an xcoll communicator: %s", xcoll_strerror(status));
        else
            xcmpi_debug("xcoll communicator destroyed");
        m->xcomm = NULL;
    }
    if (m->prev_retained) {
#define XCOLL_RELEASE_PREV(name)                                  \
        if (m->prev.coll_##name##_module != NULL)                \
            OBJ_RELEASE(m->prev.coll_##name##_module);
        XCOLL_FOR_EACH_PREV(XCOLL_RELEASE_PREV)
#undef XCOLL_RELEASE_PREV
        m->prev_retained = false;
    }
}

OBJ_CLASS_INSTANCE(mca_coll_xcoll_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

/* Open MPI enables modules from the lowest priority up, so comm->c_coll
 * holds the handlers that serve this communicator without us. */
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_xcoll_module_t *m = XMODULE(module);
    const char *missing = NULL;

#define XCOLL_CHECK_PREV(name)                                                \
    if (missing == NULL && (comm->c_coll->coll_##name == NULL ||              \
                            comm->c_coll->coll_##name##_module == NULL))      \
        missing = #name;
    XCOLL_FOR_EACH_PREV(XCOLL_CHECK_PREV)
#undef XCOLL_CHECK_PREV
    if (missing != NULL) {
        xcmpi_warn("not enabled on %s: no other component provides %s to fall back to",
                   comm->c_name, missing);
        return OMPI_ERR_NOT_SUPPORTED;
    }
    m->comm = comm;
    m->prev = *comm->c_coll;
#define XCOLL_RETAIN_PREV(name) OBJ_RETAIN(m->prev.coll_##name##_module);
    XCOLL_FOR_EACH_PREV(XCOLL_RETAIN_PREV)
#undef XCOLL_RETAIN_PREV
    m->prev_retained = true;
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_xcoll_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    const mca_coll_xcoll_params_t *p = &mca_coll_xcoll_params;
    mca_coll_xcoll_module_t *m;
    xcmpi_mask_t mask = p->mask;

    if (!p->enable || !p->new_comms || mask == 0)
        return NULL;
    if (OMPI_COMM_IS_INTER(comm)) {
        xcmpi_debug("declined %s: an intercommunicator", comm->c_name);
        return NULL;
    }
    if (ompi_comm_size(comm) < p->min_size) {
        xcmpi_debug("declined %s: size %d is below coll_xcoll_np=%d", comm->c_name,
                    ompi_comm_size(comm), p->min_size);
        return NULL;
    }
    m = OBJ_NEW(mca_coll_xcoll_module_t);
    if (m == NULL)
        return NULL;
    *priority = p->priority;
    m->super.coll_module_enable = module_enable;

#define XCOLL_SET(coll, name)                                                         \
    m->super.coll_##name = (mask & XCMPI_BIT(coll, 0)) ? entry_##name : NULL;          \
    m->super.coll_i##name = (mask & XCMPI_BIT(coll, 1)) ? entry_i##name : NULL;
    XCOLL_SET(XCMPI_ALLREDUCE, allreduce)
    XCOLL_SET(XCMPI_BCAST, bcast)
    XCOLL_SET(XCMPI_REDUCE, reduce)
    XCOLL_SET(XCMPI_ALLGATHER, allgather)
    XCOLL_SET(XCMPI_REDUCE_SCATTER_BLOCK, reduce_scatter_block)
    XCOLL_SET(XCMPI_REDUCE_SCATTER, reduce_scatter)
    XCOLL_SET(XCMPI_ALLTOALL, alltoall)
    XCOLL_SET(XCMPI_GATHER, gather)
    XCOLL_SET(XCMPI_SCATTER, scatter)
    XCOLL_SET(XCMPI_BARRIER, barrier)
    XCOLL_SET(XCMPI_ALLGATHERV, allgatherv)
    XCOLL_SET(XCMPI_ALLTOALLV, alltoallv)
    XCOLL_SET(XCMPI_GATHERV, gatherv)
    XCOLL_SET(XCMPI_SCATTERV, scatterv)
#undef XCOLL_SET
    return &m->super;
}
