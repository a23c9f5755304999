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
 * The nonblocking forms return an MPI generalized request
 * (MPI_Grequest_start) that this library completes when xcoll's request
 * finishes. MPI never progresses a generalized request by itself, so the
 * wait/test family is intercepted too: every MPI_Test*, MPI_Wait* and
 * MPI_Request_get_status first tests every pending xcoll request, and
 * while any is pending a wait loops on the PMPI_Test* form instead of
 * blocking in PMPI_Wait*. That way a wait on a mix of MPI and xcoll
 * requests, or on an MPI request whose peer waits for this rank's xcoll
 * traffic, cannot deadlock. MPI_Send, MPI_Recv, MPI_Sendrecv, MPI_Probe
 * and the set-up of an xcoll communicator do the same; other blocking MPI
 * calls do not progress xcoll.
 *
 * Settings (environment): XCOLL_MPI_ENABLE=0 turns it off,
 * XCOLL_MPI_NP (default 2) is the smallest communicator taken,
 * XCOLL_MPI_COLLS the forms taken (syntax of coll_xcoll_colls),
 * XCOLL_LOG=info logs every decision.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <mpi.h>

#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

typedef struct pmpi_comm_s {
    MPI_Comm comm;
    xcoll_comm_t xcomm;
    enum { PCOMM_NONE, PCOMM_READY, PCOMM_FAILED } state;
    const char *declined;  /* why xcoll never serves this communicator, or NULL */
    xcmpi_verdicts_t verdicts; /* which calls the drop-in rules give back */
    xcmpi_passbacks_t passbacks; /* calls passed back, by their MPI arguments */
    char label[MPI_MAX_OBJECT_NAME + 32];
    struct pmpi_comm_s *prev, *next;  /* every cached communicator, for MPI_Finalize */
} pmpi_comm_t;

/* One nonblocking collective served by xcoll, behind the generalized
 * request the application holds. It lives until both xcoll finished it
 * and MPI freed the generalized request, in either order. */
typedef struct pmpi_req_s {
    MPI_Request greq;
    xcmpi_call_t call;  /* planned here: its layouts must outlive the operation */
    xcoll_request_t xreq;
    pmpi_comm_t *comm;
    xcmpi_coll_t coll;
    int error;      /* MPI error class the request completes with */
    int done;       /* xcoll finished; the generalized request is complete */
    int mpi_freed;  /* MPI called free_fn */
    struct pmpi_req_s *next;  /* in the pending list while !done */
} pmpi_req_t;

static struct {
    int ready;
    int enable;
    int min_size;
    xcmpi_mask_t mask;
    int keyval;
    pmpi_comm_t *comms;
    pmpi_req_t *pending;  /* xcoll requests not finished yet, oldest last */
    /* the communicator looked up last: most calls repeat it, and the
     * attribute lookup costs more than a small collective's decision */
    MPI_Comm last_comm;
    pmpi_comm_t *last_state;
} pm = {0, 1, 2, XCMPI_DEFAULT_FORMS, MPI_KEYVAL_INVALID, NULL, NULL, MPI_COMM_NULL, NULL};

/* --- generalized requests for the nonblocking forms ---------------------------- */

/* Tests every pending xcoll request and completes the generalized request
 * of each one that finished. */
static void progress_pending(void)
{
    pmpi_req_t **link = &pm.pending;
    while (*link != NULL) {
        pmpi_req_t *r = *link;
        int done = 0, freed;
        xcoll_status_t status = xcoll_test(&r->xreq, &done);
        if (status == XCOLL_OK && !done) {
            link = &r->next;
            continue;
        }
        if (status != XCOLL_OK) {
            xcmpi_error("%s on %s failed in xcoll: %s", xcmpi_coll_name(r->coll, 1),
                        r->comm->label, xcoll_strerror(status));
            r->error = MPI_ERR_OTHER;
        }
        *link = r->next;
        r->done = 1;
        xcmpi_call_fini(&r->call);
        /* free_fn may run inside PMPI_Grequest_complete (then it frees r,
         * seeing done) or may have run already (then r is ours to free) */
        freed = r->mpi_freed;
        PMPI_Grequest_complete(r->greq);
        if (freed)
            free(r);
    }
}

/* Whether an xcoll request of comm (of any communicator if NULL) is pending. */
static int any_pending(const pmpi_comm_t *c)
{
    const pmpi_req_t *r;
    for (r = pm.pending; r != NULL; r = r->next)
        if (c == NULL || r->comm == c)
            return 1;
    return 0;
}

/* Finishes the pending xcoll requests of comm (all if NULL): xcoll
 * traffic must end before its communicator goes, and an operation whose
 * request the application freed must still complete. */
static void drain_pending(const pmpi_comm_t *c)
{
    while (any_pending(c)) {
        progress_pending();
        sched_yield();
    }
}

static int greq_query(void *extra, MPI_Status *status)
{
    const pmpi_req_t *r = extra;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return r->error;
}

static int greq_free(void *extra)
{
    pmpi_req_t *r = extra;
    r->mpi_freed = 1;
    if (r->done)
        free(r);
    return MPI_SUCCESS;
}

/* A collective cannot be cancelled (MPI calls that erroneous); the
 * request completes normally. */
static int greq_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

/* Waits for an MPI request, testing the pending xcoll requests meanwhile:
 * a peer may wait for this rank's share of them before it can complete
 * ours. Blocks in PMPI_Wait once none is pending. */
static int wait_progressing(MPI_Request *request, MPI_Status *status)
{
    for (;;) {
        int flag = 0, rc;
        progress_pending();
        if (pm.pending == NULL)
            return PMPI_Wait(request, status);
        rc = PMPI_Test(request, &flag, status);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        sched_yield();
    }
}

/* A blocking call made of its nonblocking form (rc: what that returned). */
static int finish_blocking(int rc, MPI_Request *request)
{
    return rc != MPI_SUCCESS ? rc : wait_progressing(request, MPI_STATUS_IGNORE);
}

static int delete_comm_state(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    pmpi_comm_t *c = attr;
    (void)comm;
    (void)keyval;
    (void)extra;
    drain_pending(c);
    if (pm.last_state == c) {
        pm.last_comm = MPI_COMM_NULL;
        pm.last_state = NULL;
    }
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

/* --- riding Open MPI's progress engine ------------------------------------------
 * Open MPI moves everything it has pending from one loop, opal_progress,
 * which every blocking call spins in, and components register callbacks
 * with it. Under Open MPI the library registers one too (found at run
 * time: nothing links against Open MPI's internals), so that a rank
 * blocked in any MPI call, a collective MPI serves included, still moves
 * its pending xcoll requests: MPI's progress rule (MPI-3.1 3.7.4) asks for
 * that, and a peer may be waiting for them. Without the hook (MPICH) only
 * the calls intercepted below progress xcoll. */

typedef int (*progress_cb_t)(void);
static int (*progress_unregister)(progress_cb_t);
/* Open MPI's progress engine is there (whether or not the hook took):
 * the same on every rank, so the bootstrap may go by it (comm_create) */
static int g_ompi;

static int progress_hook(void)
{
    static int inside;
    pmpi_req_t *before = pm.pending;
    int n = 0;
    if (before == NULL || inside)
        return 0;
    inside = 1;
    progress_pending();
    inside = 0;
    /* a count for opal_progress's bookkeeping: whether anything finished */
    if (pm.pending != before)
        n = 1;
    return n;
}

static void hook_progress(void)
{
    int (*reg)(progress_cb_t) = (int (*)(progress_cb_t))dlsym(RTLD_DEFAULT,
                                                              "opal_progress_register");
    progress_unregister = (int (*)(progress_cb_t))dlsym(RTLD_DEFAULT, "opal_progress_unregister");
    g_ompi = reg != NULL;
    if (reg == NULL || progress_unregister == NULL || reg(progress_hook) != 0) {
        progress_unregister = NULL;
        xcmpi_debug("no opal_progress to register with: only the intercepted calls move "
                    "pending xcoll requests");
        return;
    }
    xcmpi_debug("registered with Open MPI's progress engine");
}

/* Reads the settings once MPI runs; 0 when the library should stay out
 * of the way (MPI not running, or the keyval could not be made). */
static int setup(void)
{
    int initialized = 0, finalized = 0, rank, thread_level = MPI_THREAD_SINGLE;
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
    /* nothing here locks: with threads that may call MPI at once, stay out */
    if (pm.enable && PMPI_Query_thread(&thread_level) == MPI_SUCCESS &&
        thread_level == MPI_THREAD_MULTIPLE) {
        xcmpi_info("MPI_THREAD_MULTIPLE: the PMPI library is not thread safe; MPI serves every "
                   "collective");
        pm.enable = 0;
    }
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
    if (pm.enable)
        hook_progress();
    return 1;
}

/* The cached state of comm, made on first sight; NULL when the library
 * is off or comm is not a valid communicator (MPI then reports it). */
static pmpi_comm_t *comm_state_lookup(MPI_Comm comm)
{
    pmpi_comm_t *c;
    int flag = 0, inter = 0, size = 0, len = 0;
    char name[MPI_MAX_OBJECT_NAME];
    if (!setup() || !pm.enable || comm == MPI_COMM_NULL)
        return NULL;
    if (PMPI_Comm_get_attr(comm, pm.keyval, &c, &flag) != MPI_SUCCESS)
        return NULL;
    if (flag) {
        pm.last_comm = comm;
        pm.last_state = c;
        return c;
    }
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

/* The state of comm: the last one looked up, or comm_state_lookup's. */
static inline pmpi_comm_t *comm_state(MPI_Comm comm)
{
    if (comm == pm.last_comm && pm.last_state != NULL)
        return pm.last_state;
    return comm_state_lookup(comm);
}

/* The bootstrap's collectives, through PMPI_ (MPI_Allgather would come
 * back here). Under Open MPI blocking ones: its nonblocking collectives
 * (libnbc) match by a count per communicator, and an MPI_Comm_idup of
 * this communicator still in flight starts its rounds there at times that
 * differ between ranks, so an Iallgather could meet one of them
 * (MPI_ERR_TRUNCATE, then a crash; MPICH's comm tests found it); the
 * progress hook keeps xcoll requests of other communicators moving
 * meanwhile, as a peer may wait for them before it joins. Without the
 * hook (MPICH) nonblocking ones, waited for by a loop that moves them.
 * By the MPI library, never by local state: blocking and nonblocking
 * collectives do not match each other. */
static int bootstrap_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    pmpi_comm_t *c = ctx;
    MPI_Request request;
    if (bytes > (size_t)INT_MAX)
        return -1;
    if (g_ompi)
        return PMPI_Allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE,
                              c->comm) == MPI_SUCCESS ? 0 : -1;
    return finish_blocking(PMPI_Iallgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes,
                                           MPI_BYTE, c->comm, &request),
                           &request) == MPI_SUCCESS ? 0 : -1;
}

/* *all_ok = the minimum of ok over the ranks (0 if MPI fails), as the
 * bootstrap talks (bootstrap_allgather). */
static void agree(pmpi_comm_t *c, int ok, int *all_ok)
{
    MPI_Request request;
    int rc = g_ompi ? PMPI_Allreduce(&ok, all_ok, 1, MPI_INT, MPI_MIN, c->comm)
                    : finish_blocking(PMPI_Iallreduce(&ok, all_ok, 1, MPI_INT, MPI_MIN, c->comm,
                                                      &request), &request);
    if (rc != MPI_SUCCESS)
        *all_ok = 0;
}

/* Collective: every rank learns whether all succeeded, so that none
 * serves a call through xcoll while another passes it back. A rank whose
 * drop-in rules file cannot be read still joins, then fails the
 * agreement. */
static void comm_create(pmpi_comm_t *c)
{
    xcoll_bootstrap_t boot;
    xcoll_config_t cfg;
    xcoll_status_t status;
    char *rules = NULL;
    int ok, all_ok = 0, rules_ok;
    PMPI_Comm_rank(c->comm, &boot.rank);
    PMPI_Comm_size(c->comm, &boot.size);
    boot.allgather = bootstrap_allgather;
    boot.ctx = c;
    status = xcoll_config_init(&cfg);
    rules_ok = xcmpi_config_rules(&cfg, getenv("XCOLL_MPI_TUNE_FILE"), &rules) == 0;
    if (status != XCOLL_OK || !rules_ok)
        xcmpi_config_fail(&cfg, status != XCOLL_OK ? "the XCOLL_* environment"
                                                   : "the drop-in rules file");
    /* collective, and failing on every rank when one fails */
    status = xcoll_comm_create(&boot, &cfg, &c->xcomm);
    free(rules);
    ok = status == XCOLL_OK;
    agree(c, ok, &all_ok);
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
               !ok ? xcoll_strerror(status) : "it failed on another rank");
}

/* Starts a planned call in xcoll if it can (why: the planner's verdict,
 * NULL if xcoll can); logs the decision. XCOLL_OK: *req runs it;
 * XCOLL_DECLINED: the call goes back to MPI (the call is released); any
 * other status: it failed (logged, the call released). */
static xcoll_status_t start(pmpi_comm_t *c, xcmpi_call_t *call, int nonblocking, const char *why,
                            const xcmpi_rawkey_t *key, xcoll_request_t *req)
{
    const char *name = xcmpi_coll_name(call->coll, nonblocking);
    xcoll_status_t status;
    char what[160];
    int declined;
    *req = NULL;
    if (why == xcmpi_plan_failed) {
        xcmpi_call_fini(call);
        return XCOLL_ERR_NO_MEMORY;
    }
    if (why == NULL && c->declined != NULL)
        why = c->declined;
    if (why == NULL && !(pm.mask & XCMPI_BIT(call->coll, nonblocking)))
        why = "not in XCOLL_MPI_COLLS";
    if (why == NULL && c->state == PCOMM_NONE && nonblocking) {
        why = XCMPI_NOT_YET;
        call->permanent = 0; /* a blocking call may make one later */
    }
    if (why == NULL && c->state == PCOMM_NONE)
        comm_create(c);
    if (why == NULL && c->state != PCOMM_READY)
        why = "no xcoll communicator";
    if (why != NULL)
        status = XCOLL_DECLINED;
    else if ((declined = xcmpi_declined(call, c->xcomm, &c->verdicts)) != 0)
        status = declined > 0 ? XCOLL_DECLINED : XCOLL_ERR_INTERNAL;
    else
        status = xcmpi_start(call, c->xcomm, req);
    if (status == XCOLL_DECLINED) {
        xcmpi_info("passed back %s on %s: %s", name, c->label, why != NULL ? why : XCMPI_MPI_FASTER);
        if (call->permanent)
            xcmpi_passback_learn(&c->passbacks, key);
        xcmpi_call_fini(call);
        return status;
    }
    if (status != XCOLL_OK) {
        xcmpi_error("%s on %s failed in xcoll: %s", name, c->label, xcoll_strerror(status));
        xcmpi_call_fini(call);
        return status;
    }
    if (xcmpi_log_level >= XCMPI_LOG_INFO) {
        xcmpi_describe(call, what, sizeof(what));
        xcmpi_info("served %s on %s: %s", name, c->label, what);
    }
    return XCOLL_OK;
}

/* A blocking call: 1 with *rc set when xcoll took it (then it is done),
 * 0 when it goes back to MPI. Pokes MPI's progress while waiting: a peer
 * may wait for a message this rank sent before the collective. */
static int serve(pmpi_comm_t *c, xcmpi_call_t *call, const char *why, const xcmpi_rawkey_t *key,
                 int *rc)
{
    xcoll_request_t req = NULL;
    xcoll_status_t status;
    int done = 0, flag;
    if (c == NULL) {
        xcmpi_call_fini(call);
        return 0;
    }
    status = start(c, call, 0, why, key, &req);
    if (status == XCOLL_DECLINED)
        return 0;
    if (status == XCOLL_OK) { /* else start() logged it and released the call */
        while ((status = xcoll_test(&req, &done)) == XCOLL_OK && !done)
            PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, MPI_STATUS_IGNORE);
        xcmpi_call_fini(call);
        if (status != XCOLL_OK)
            xcmpi_error("%s on %s failed in xcoll: %s", xcmpi_coll_name(call->coll, 0),
                        c->label, xcoll_strerror(status));
    }
    if (status == XCOLL_OK) {
        *rc = MPI_SUCCESS;
        return 1;
    }
    (void)PMPI_Comm_call_errhandler(c->comm, MPI_ERR_OTHER);
    *rc = MPI_ERR_OTHER;
    return 1;
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

/* Every entry point: straight to MPI if a call with these arguments went
 * there before (dropin.h, "passing back fast"); else plan into `call`
 * (PLAN names it), serve, or pass. KEY is the call's raw key. */
#define SERVE_BLOCKING(KEY, PLAN, PASS)                                 \
    do {                                                                \
        xcmpi_rawkey_t key_;                                            \
        xcmpi_call_t call_, *call = &call_;                             \
        pmpi_comm_t *c = comm_state(comm);                              \
        const char *why_;                                               \
        int rc_;                                                        \
        if (c == NULL || (xcmpi_log_level < XCMPI_LOG_INFO &&           \
                          xcmpi_passback_known(&c->passbacks, KEY)))    \
            return (PASS);                                              \
        key_ = KEY;                                                     \
        why_ = (PLAN);                                                  \
        if (serve(c, call, why_, &key_, &rc_))                          \
            return rc_;                                                 \
        return (PASS);                                                  \
    } while (0)

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                  MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLREDUCE, 0, 0, count, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allreduce(call, sbuf, rbuf, count, dtype, op),
                   PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_BCAST, 0, root, count, 0, dtype, NULL, NULL, 0),
                   xcmpi_plan_bcast(call, buf, count, dtype, root, comm_size(comm)),
                   PMPI_Bcast(buf, count, dtype, root, comm));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
               MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE, 0, root, count, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce(call, sbuf, rbuf, count, dtype, op, root, comm_rank(comm),
                                     comm_size(comm)),
                   PMPI_Reduce(sbuf, rbuf, count, dtype, op, root, comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                  MPI_Datatype rdtype, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLGATHER, 0, 0, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allgather(call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                        comm_size(comm)),
                   PMPI_Allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm));
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                             MPI_Op op, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE_SCATTER_BLOCK, 0, 0, rcount, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce_scatter_block(call, sbuf, rbuf, rcount, dtype, op,
                                                   comm_size(comm)),
                   PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm));
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                       MPI_Op op, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE_SCATTER, 0, 0, XCMPI_H(rcounts), 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce_scatter(call, sbuf, rbuf, rcounts, dtype, op,
                                             comm_size(comm)),
                   PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                 MPI_Datatype rdtype, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLTOALL, 0, 0, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_alltoall(call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                       comm_size(comm)),
                   PMPI_Alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm));
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
               MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_GATHER, 0, root, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_gather(call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                     comm_rank(comm), comm_size(comm)),
                   PMPI_Gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm));
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_SCATTER, 0, root, scount, rcount, sdtype, rdtype, NULL, rbuf == MPI_IN_PLACE),
                   xcmpi_plan_scatter(call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                      comm_rank(comm), comm_size(comm)),
                   PMPI_Scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rdtype, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLGATHERV, 0, 0, XCMPI_H(rcounts), XCMPI_H(displs), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allgatherv(call, sbuf, scount, sdtype, rbuf, rcounts, displs,
                                         rdtype, comm_rank(comm), comm_size(comm)),
                   PMPI_Allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype sdtype,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rdtype,
                  MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_ALLTOALLV, 0, 0, XCMPI_H(scounts), XCMPI_H(rcounts), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_alltoallv(call, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                                        rdispls, rdtype, comm_size(comm)),
                   PMPI_Alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
                                  comm));
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, const int rcounts[],
                const int displs[], MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_GATHERV, 0, root, scount, XCMPI_H(rcounts), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_gatherv(call, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                                      root, comm_rank(comm), comm_size(comm)),
                   PMPI_Gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm));
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype sdtype,
                 void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_SCATTERV, 0, root, rcount, XCMPI_H(scounts), sdtype, rdtype, NULL, rbuf == MPI_IN_PLACE),
                   xcmpi_plan_scatterv(call, sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype,
                                       root, comm_rank(comm), comm_size(comm)),
                   PMPI_Scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm));
}

static const char *plan_barrier(xcmpi_call_t *call)
{
    xcmpi_plan_barrier(call);
    return NULL;
}

int MPI_Barrier(MPI_Comm comm)
{
    SERVE_BLOCKING(XCMPI_RAWKEY(XCMPI_BARRIER, 0, 0, 0, 0, NULL, NULL, NULL, 0),
                   plan_barrier(call), PMPI_Barrier(comm));
}

/* --- nonblocking collectives ------------------------------------------------------ */

/* Starts a call planned into r in xcoll, behind a generalized request in
 * *request: 1 with *rc set when xcoll took it, 0 when it goes back to MPI
 * (r is freed then). */
static int serve_nonblocking(pmpi_comm_t *c, pmpi_req_t *r, const char *why,
                             const xcmpi_rawkey_t *key, MPI_Request *request, int *rc)
{
    const char *name = xcmpi_coll_name(r->call.coll, 1);
    xcoll_status_t status;
    if (c == NULL || (status = start(c, &r->call, 1, why, key, &r->xreq)) == XCOLL_DECLINED) {
        if (c == NULL)
            xcmpi_call_fini(&r->call);
        free(r);
        return 0;
    }
    if (status != XCOLL_OK) {
        free(r);
        (void)PMPI_Comm_call_errhandler(c->comm, MPI_ERR_OTHER);
        *rc = MPI_ERR_OTHER;
        return 1;
    }
    r->comm = c;
    r->coll = r->call.coll;
    r->error = MPI_SUCCESS;
    *rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, r, request);
    if (*rc != MPI_SUCCESS) {
        /* the operation runs: finish it rather than leave it behind */
        xcmpi_error("%s on %s: no generalized request; finishing the collective now", name,
                    c->label);
        (void)xcoll_wait(&r->xreq);
        xcmpi_call_fini(&r->call);
        free(r);
        return 1;
    }
    r->greq = *request;
    r->next = pm.pending;
    pm.pending = r;
    /* start moving data now, not at the first test */
    progress_pending();
    return 1;
}

/* Every nonblocking entry point: a request to plan into, then serve or pass. */
#define SERVE_NONBLOCKING(KEY, PLAN, PASS)                              \
    do {                                                                \
        xcmpi_rawkey_t key_;                                            \
        pmpi_comm_t *c = comm_state(comm);                              \
        pmpi_req_t *r_;                                                 \
        xcmpi_call_t *call;                                             \
        const char *why_;                                               \
        int rc_;                                                        \
        if (c == NULL || (xcmpi_log_level < XCMPI_LOG_INFO &&           \
                          xcmpi_passback_known(&c->passbacks, KEY)))    \
            return (PASS);                                              \
        key_ = KEY;                                                     \
        if ((r_ = calloc(1, sizeof(*r_))) == NULL) {                    \
            /* never a one-rank pass-back: the others serve it */       \
            (void)PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);      \
            return MPI_ERR_NO_MEM;                                      \
        }                                                               \
        call = &r_->call;                                               \
        why_ = (PLAN);                                                  \
        if (serve_nonblocking(c, r_, why_, &key_, request, &rc_))       \
            return rc_;                                                 \
        return (PASS);                                                  \
    } while (0)

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLREDUCE, 1, 0, count, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allreduce(call, sbuf, rbuf, count, dtype, op),
                      PMPI_Iallreduce(sbuf, rbuf, count, dtype, op, comm, request));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm,
               MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_BCAST, 1, root, count, 0, dtype, NULL, NULL, 0),
                   xcmpi_plan_bcast(call, buf, count, dtype, root, comm_size(comm)),
                      PMPI_Ibcast(buf, count, dtype, root, comm, request));
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE, 1, root, count, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce(call, sbuf, rbuf, count, dtype, op, root,
                                        comm_rank(comm), comm_size(comm)),
                      PMPI_Ireduce(sbuf, rbuf, count, dtype, op, root, comm, request));
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                   MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLGATHER, 1, 0, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_allgather(call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                           comm_size(comm)),
                      PMPI_Iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request));
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE_SCATTER_BLOCK, 1, 0, rcount, 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce_scatter_block(call, sbuf, rbuf, rcount, dtype, op,
                                                      comm_size(comm)),
                      PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request));
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_REDUCE_SCATTER, 1, 0, XCMPI_H(rcounts), 0, dtype, NULL, op, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_reduce_scatter(call, sbuf, rbuf, rcounts, dtype, op,
                                                comm_size(comm)),
                      PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request));
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                  MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLTOALL, 1, 0, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_alltoall(call, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                          comm_size(comm)),
                      PMPI_Ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request));
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                MPI_Datatype rdtype, int root, MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_GATHER, 1, root, scount, rcount, sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                   xcmpi_plan_gather(call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                        comm_rank(comm), comm_size(comm)),
                      PMPI_Igather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                   request));
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                 MPI_Datatype rdtype, int root, MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_SCATTER, 1, root, scount, rcount, sdtype, rdtype, NULL, rbuf == MPI_IN_PLACE),
                   xcmpi_plan_scatter(call, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                         comm_rank(comm), comm_size(comm)),
                      PMPI_Iscatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                    request));
}

int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf,
                    const int rcounts[], const int displs[], MPI_Datatype rdtype, MPI_Comm comm,
                    MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLGATHERV, 1, 0, XCMPI_H(rcounts), XCMPI_H(displs), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                      xcmpi_plan_allgatherv(call, sbuf, scount, sdtype, rbuf, rcounts, displs,
                                            rdtype, comm_rank(comm), comm_size(comm)),
                      PMPI_Iallgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                       request));
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                   MPI_Datatype sdtype, void *rbuf, const int rcounts[], const int rdispls[],
                   MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_ALLTOALLV, 1, 0, XCMPI_H(scounts), XCMPI_H(rcounts), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                      xcmpi_plan_alltoallv(call, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                                           rdispls, rdtype, comm_size(comm)),
                      PMPI_Ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                      rdtype, comm, request));
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf,
                 const int rcounts[], const int displs[], MPI_Datatype rdtype, int root,
                 MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_GATHERV, 1, root, scount, XCMPI_H(rcounts), sdtype, rdtype, NULL, sbuf == MPI_IN_PLACE),
                      xcmpi_plan_gatherv(call, sbuf, scount, sdtype, rbuf, rcounts, displs,
                                         rdtype, root, comm_rank(comm), comm_size(comm)),
                      PMPI_Igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                    comm, request));
}

int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype sdtype,
                  void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_SCATTERV, 1, root, rcount, XCMPI_H(scounts), sdtype, rdtype, NULL, rbuf == MPI_IN_PLACE),
                      xcmpi_plan_scatterv(call, sbuf, scounts, displs, sdtype, rbuf, rcount,
                                          rdtype, root, comm_rank(comm), comm_size(comm)),
                      PMPI_Iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                     comm, request));
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    SERVE_NONBLOCKING(XCMPI_RAWKEY(XCMPI_BARRIER, 1, 0, 0, 0, NULL, NULL, NULL, 0),
                   plan_barrier(call), PMPI_Ibarrier(comm, request));
}

/* --- the wait/test family: progress xcoll first ---------------------------------
 * Tests make one pass over the pending xcoll requests, then ask MPI. Waits
 * block in PMPI_Wait* only once no xcoll request is pending; until then they
 * alternate that pass with the PMPI_Test* form, yielding the core between
 * rounds (test runs oversubscribe cores). */

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    progress_pending();
    return PMPI_Test(request, flag, status);
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    progress_pending();
    return PMPI_Testall(count, requests, flag, statuses);
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    progress_pending();
    return PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    progress_pending();
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    progress_pending();
    return PMPI_Request_get_status(request, flag, status);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    return wait_progressing(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    for (;;) {
        int flag = 0, rc;
        progress_pending();
        if (pm.pending == NULL)
            return PMPI_Waitall(count, requests, statuses);
        rc = PMPI_Testall(count, requests, &flag, statuses);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        sched_yield();
    }
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    for (;;) {
        int flag = 0, rc;
        progress_pending();
        if (pm.pending == NULL)
            return PMPI_Waitany(count, requests, index, status);
        /* also true, with index MPI_UNDEFINED, when no request is active */
        rc = PMPI_Testany(count, requests, index, &flag, status);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        sched_yield();
    }
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    for (;;) {
        int rc;
        progress_pending();
        if (pm.pending == NULL)
            return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
        /* outcount is MPI_UNDEFINED when no request is active */
        rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
        if (rc != MPI_SUCCESS || *outcount != 0)
            return rc;
        sched_yield();
    }
}

/* The blocking point-to-point calls an application is likeliest to block
 * in while its nonblocking collectives are pending: made of their
 * nonblocking forms then, so that the wait progresses xcoll. Other blocking
 * MPI calls do not (see README). */

int MPI_Send(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, MPI_Comm comm)
{
    MPI_Request request;
    if (pm.pending == NULL)
        return PMPI_Send(buf, count, dtype, dest, tag, comm);
    return finish_blocking(PMPI_Isend(buf, count, dtype, dest, tag, comm, &request), &request);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    MPI_Request request;
    int rc;
    if (pm.pending == NULL)
        return PMPI_Recv(buf, count, dtype, source, tag, comm, status);
    rc = PMPI_Irecv(buf, count, dtype, source, tag, comm, &request);
    return rc != MPI_SUCCESS ? rc : wait_progressing(&request, status);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdtype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rdtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    MPI_Request request[2];
    MPI_Status statuses[2];
    int rc;
    if (pm.pending == NULL)
        return PMPI_Sendrecv(sbuf, scount, sdtype, dest, stag, rbuf, rcount, rdtype, source, rtag,
                             comm, status);
    rc = PMPI_Irecv(rbuf, rcount, rdtype, source, rtag, comm, &request[0]);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Isend(sbuf, scount, sdtype, dest, stag, comm, &request[1]);
    if (rc != MPI_SUCCESS) {
        (void)PMPI_Cancel(&request[0]);
        (void)PMPI_Wait(&request[0], MPI_STATUS_IGNORE);
        return rc;
    }
    rc = MPI_Waitall(2, request, statuses);
    if (status != MPI_STATUS_IGNORE)
        *status = statuses[0];
    return rc == MPI_ERR_IN_STATUS ? statuses[0].MPI_ERROR != MPI_SUCCESS ? statuses[0].MPI_ERROR
                                                                          : statuses[1].MPI_ERROR
                                   : rc;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    for (;;) {
        int flag = 0, rc;
        progress_pending();
        if (pm.pending == NULL)
            return PMPI_Probe(source, tag, comm, status);
        rc = PMPI_Iprobe(source, tag, comm, &flag, status);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        sched_yield();
    }
}

/* --- finalization ---------------------------------------------------------------- */

/* Destroys every xcoll communicator still alive (through the attribute's
 * delete callback), so that MPI_Finalize leaves nothing of xcoll behind. */
int MPI_Finalize(void)
{
    if (pm.ready > 0) {
        /* a request the application freed unfinished must still finish */
        drain_pending(NULL);
        while (pm.comms != NULL) {
            pmpi_comm_t *c = pm.comms;
            if (PMPI_Comm_delete_attr(c->comm, pm.keyval) != MPI_SUCCESS || pm.comms == c)
                (void)delete_comm_state(c->comm, pm.keyval, c, NULL);
        }
        PMPI_Comm_free_keyval(&pm.keyval);
        xcmpi_typemap_fini();
        if (progress_unregister != NULL)
            progress_unregister(progress_hook);
        progress_unregister = NULL;
        pm.ready = 0;
    }
    return PMPI_Finalize();
}
