/* Communicator lifetime, the registry that makes a destroyed handle
 * detectable, and the per-communicator schedule cache. */
#include <stdlib.h>
#include <string.h>

#include "census.h"
#include "comm.h"
#include "log.h"
#include "pool.h"
#include "tag.h"
#include "topo.h"
#include "../coll/tune.h"

/* Every live communicator. A handle not on this list was destroyed (or
 * never created), so a call with it is refused instead of touching freed
 * memory. */
static struct xcoll_comm_s *live_comms;
/* The next communicator id this process may take; see xcoll_comm_create. */
static uint32_t next_comm_id = 1;

/* 1 if comm is on the live list (failed or not). */
static int is_live(xcoll_comm_t comm)
{
    struct xcoll_comm_s *c;
    for (c = live_comms; c != NULL && c != comm; c = c->next_live)
        ;
    return c != NULL;
}

/* XCOLL_OK if comm is live (failed or not); logs otherwise. */
static xcoll_status_t comm_lookup(xcoll_comm_t comm, const char *what)
{
    if (comm == NULL) {
        xc_error("%s: communicator is NULL", what);
        return XCOLL_ERR_INVALID_COMM;
    }
    if (!is_live(comm)) {
        xc_error("%s: communicator %p was destroyed or never created", what, (void *)comm);
        return XCOLL_ERR_INVALID_COMM;
    }
    return XCOLL_OK;
}

int xc_comm_usable(xcoll_comm_t comm)
{
    return comm != NULL && is_live(comm) && !comm->failed;
}

xcoll_status_t xc_comm_check(xcoll_comm_t comm, const char *what)
{
    xcoll_status_t rc = comm_lookup(comm, what);
    if (rc != XCOLL_OK)
        return rc;
    if (comm->failed) {
        xc_error("%s: communicator %u failed in an earlier collective; destroy it", what,
                 comm->id);
        return XCOLL_ERR_COMM_FAILED;
    }
    return XCOLL_OK;
}

/* What each rank contributes to the creation allgather: enough to agree on
 * an id and to catch a bootstrap whose ranks disagree. */
typedef struct {
    uint32_t next_id;
    int32_t rank;
    int32_t size;
    int32_t ok;             /* 0: this rank cannot create it (its configuration, its
                               selection table) */
    uint64_t table;         /* xc_tune_hash of its selection table */
    int32_t check;          /* xcoll_config_t.check: every rank alike */
    int32_t pad_;
} xc_hello_t;

/* The caller's bootstrap, called with xcoll's lock let go (see
 * xcoll_comm_create). */
struct locked_boot {
    const xcoll_bootstrap_t *user;
    int locked;
};

static int allgather_unlocked(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    struct locked_boot *b = ctx;
    int rc;
    xc_unlock(b->locked);
    rc = b->user->allgather(sendbuf, recvbuf, bytes, b->user->ctx);
    b->locked = xc_lock();
    return rc;
}

/* XCOLL_DRAIN=0 turns the drainer off (comm.h; for measuring what it
 * costs, and for tests that show what it prevents). Anything but 0 or 1
 * is logged and leaves it on. */
static int drain_wanted(void)
{
    const char *env = getenv("XCOLL_DRAIN");
    if (env == NULL || *env == '\0' || strcmp(env, "1") == 0)
        return 1;
    if (strcmp(env, "0") == 0)
        return 0;
    xc_error("XCOLL_DRAIN=%s is not 0 or 1: the drainer stays on", env);
    return 1;
}

xcoll_status_t xcoll_comm_create(const xcoll_bootstrap_t *boot, const xcoll_config_t *cfg,
                                 xcoll_comm_t *out)
{
    xcoll_config_t defaults;
    struct xcoll_comm_s *comm;
    xc_hello_t me, *all;
    xc_tune_t *tune = NULL;
    xcoll_status_t rc, tune_rc, pre_rc;
    uint32_t id = 0;
    int i, locked, inited = 0;
    struct locked_boot locked_boot;
    xcoll_bootstrap_t unlocking;

    xc_log_init();
    if (out == NULL) {
        xc_error("xcoll_comm_create: comm (the output) is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    *out = NULL;
    if (boot == NULL || boot->allgather == NULL) {
        xc_error("xcoll_comm_create: bootstrap or its allgather callback is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    if (boot->size < 1 || (uint32_t)boot->size > XC_MAX_RANKS || boot->rank < 0 ||
        boot->rank >= boot->size) {
        xc_error("xcoll_comm_create: rank %d of size %d is invalid (1 <= size <= %u)", boot->rank,
                 boot->size, XC_MAX_RANKS);
        return XCOLL_ERR_INVALID_ARG;
    }
    /* Every failure from here on is collective: a rank that cannot create
     * the communicator still takes part in each exchange and says so, and
     * then every rank fails, instead of the others waiting for it (the MPI
     * drop-ins rely on this to fall back to MPI on every rank at once). */
    pre_rc = XCOLL_OK;
    if (cfg == NULL) {
        if ((pre_rc = xcoll_config_init(&defaults)) != XCOLL_OK)
            memset(&defaults, 0, sizeof(defaults));
        cfg = &defaults;
    }
    if (pre_rc == XCOLL_OK && !(cfg->timeout_s >= 0)) {
        xc_error("xcoll_comm_create: timeout_s %g is negative", cfg->timeout_s);
        pre_rc = XCOLL_ERR_INVALID_ARG;
    }
    if (pre_rc == XCOLL_OK && cfg->memory != XCOLL_MEMORY_AUTO &&
        cfg->memory != XCOLL_MEMORY_HOST && cfg->memory != XCOLL_MEMORY_CUDA) {
        xc_error("xcoll_comm_create: memory %d is not an xcoll_memory_t", (int)cfg->memory);
        pre_rc = XCOLL_ERR_INVALID_ARG;
    }
    if (pre_rc == XCOLL_OK && cfg->memory == XCOLL_MEMORY_CUDA && xc_gpu() == NULL) {
        xc_error("xcoll_comm_create: memory is XCOLL_MEMORY_CUDA, but CUDA is %s",
                 xc_gpu_describe());
        pre_rc = XCOLL_ERR_UNSUPPORTED;
    }
    xc_log_set_rank(boot->rank);

    all = calloc((size_t)boot->size, sizeof(*all));
    comm = calloc(1, sizeof(*comm));
    if (all == NULL || comm == NULL) {
        /* cannot even take part: the one failure that is not collective */
        xc_error("xcoll_comm_create: out of memory for %d ranks", boot->size);
        free(all);
        free(comm);
        return XCOLL_ERR_NO_MEMORY;
    }
    tune_rc = pre_rc == XCOLL_OK ? xc_tune_load(&tune, cfg->rules, cfg->rules_source, NULL, 0)
                                 : pre_rc;
    /* Claim the id before the callback: the callback itself may create a
     * communicator (an MPI drop-in serving the bootstrap's allgather) and
     * must then take a larger id than ours. */
    memset(&me, 0, sizeof(me)); /* padding too: it travels */
    me.next_id = next_comm_id++;
    me.rank = boot->rank;
    me.size = boot->size;
    me.ok = tune_rc == XCOLL_OK;
    me.table = me.ok ? xc_tune_hash(tune) : 0;
    me.check = cfg->check != 0;
    if (boot->allgather(&me, all, sizeof(me), boot->ctx) != 0) {
        xc_error("xcoll_comm_create: the bootstrap allgather failed");
        free(all);
        free(comm);
        xc_tune_free(tune);
        return XCOLL_ERR_BOOTSTRAP;
    }
    /* The largest "next free id" of the members is free on all of them, so
     * two communicators that share a process never share an id. */
    for (i = 0; i < boot->size; i++) {
        if (all[i].rank != i || all[i].size != boot->size) {
            xc_error("xcoll_comm_create: bootstrap slot %d holds rank %d of size %d; "
                     "expected rank %d of size %d (is the allgather in rank order?)",
                     i, all[i].rank, all[i].size, i, boot->size);
            free(all);
            free(comm);
            xc_tune_free(tune);
            return XCOLL_ERR_BOOTSTRAP;
        }
        if (!all[i].ok && tune_rc == XCOLL_OK) {
            xc_error("xcoll_comm_create: rank %d cannot create the communicator (its "
                     "configuration or selection table: XCOLL_TUNE, XCOLL_TUNE_FILE, the "
                     "caller's rules; see its log)", i);
            tune_rc = XCOLL_ERR_INVALID_ARG;
        }
        if (all[i].ok && me.ok && tune_rc == XCOLL_OK && all[i].table != me.table) {
            xc_error("xcoll_comm_create: rank %d's selection table differs from this rank's "
                     "(XCOLL_TUNE, XCOLL_TUNE_FILE, the caller's rules): every rank must use "
                     "the same, or they choose different algorithms", i);
            tune_rc = XCOLL_ERR_INVALID_ARG;
        }
        if (all[i].ok && me.ok && tune_rc == XCOLL_OK && all[i].check != me.check) {
            xc_error("xcoll_comm_create: rank %d has the call check %s and this rank %s "
                     "(XCOLL_CHECK, xcoll_config_t.check): every rank must agree, as a checked "
                     "collective sends what an unchecked one would take for data", i,
                     all[i].check ? "on" : "off", me.check ? "on" : "off");
            tune_rc = XCOLL_ERR_INVALID_ARG;
        }
        if (all[i].next_id > id)
            id = all[i].next_id;
    }
    free(all);
    if (tune_rc != XCOLL_OK) {
        xc_tune_free(tune);
        free(comm);
        return tune_rc == XCOLL_ERR_NO_MEMORY || tune_rc == XCOLL_ERR_UNSUPPORTED
                   ? tune_rc
                   : XCOLL_ERR_INVALID_ARG;
    }
    if (id >= XC_MAX_COMM_ID) { /* the last id is the goodbye's (tag.h) */
        xc_error("xcoll_comm_create: communicator ids exhausted (%u created)", XC_MAX_COMM_ID - 1);
        xc_tune_free(tune);
        free(comm);
        return XCOLL_ERR_UNSUPPORTED;
    }
    if (next_comm_id < id + 1)
        next_comm_id = id + 1;

    comm->tune = tune;
    comm->rank = boot->rank;
    comm->size = boot->size;
    comm->id = id;
    comm->timeout_s = cfg->timeout_s;
    comm->memory = cfg->memory;
    comm->fallback = cfg->fallback != 0;
    comm->tl = &xc_shm_transport;
    /* Where every rank runs, first: the algorithms and the transports (which
     * peers shared memory reaches, how many ranks share this node's CPUs)
     * use this one exchange. The topology fails on every rank alike; the
     * transports fail collectively by themselves (a rank without a worker
     * sends no address, one that failed after the address exchange says
     * so in shared memory's first exchange). */
    /* Another communicator's thread may use the transport meanwhile: the
     * lock is held throughout, except in the caller's allgather, which
     * may itself call xcoll (a drop-in serving MPI_Allgather) */
    locked_boot.user = boot;
    locked_boot.locked = xc_lock();
    unlocking = *boot;
    unlocking.allgather = allgather_unlocked;
    unlocking.ctx = &locked_boot;
    rc = xc_topo_create(&unlocking, &comm->topo);
    if (rc == XCOLL_OK)
        inited = (rc = comm->tl->comm_init(&unlocking, comm->topo, &comm->tl_comm)) == XCOLL_OK;
    xc_unlock(locked_boot.locked);
    if (rc == XCOLL_OK && cfg->progress_thread)
        rc = xc_progress_thread_start();
    if (rc == XCOLL_OK && comm->tl->drain != NULL &&
        (comm->topo->nnodes > 1 ||
         (comm->tl->owes_tails != NULL && comm->tl->owes_tails(comm->tl_comm))) &&
        drain_wanted()) {
        if ((rc = xc_drain_start(comm)) != XCOLL_OK && cfg->progress_thread)
            xc_progress_thread_stop();
        comm->drains = rc == XCOLL_OK;
    }
    if (rc != XCOLL_OK && inited) {
        locked = xc_lock();
        comm->tl->comm_fini(comm->tl_comm);
        xc_unlock(locked);
    }
    if (rc != XCOLL_OK) {
        xc_topo_free(comm->topo);
        xc_tune_free(tune);
        free(comm);
        return rc;
    }
    comm->progress_thread = cfg->progress_thread != 0;
    comm->check = cfg->check != 0;
    locked = xc_lock();
    comm->next_live = live_comms;
    live_comms = comm;
    xc_unlock(locked);
    xc_info("communicator %u created: rank %d of %d, timeout %g s%s%s", id, comm->rank,
            comm->size, comm->timeout_s,
            comm->progress_thread ? ", progress thread" : comm->drains ? ", drainer" : "",
            comm->check ? ", calls checked (XCOLL_CHECK)" : "");
    *out = comm;
    return XCOLL_OK;
}

xcoll_status_t xcoll_comm_destroy(xcoll_comm_t comm)
{
    struct xcoll_comm_s **p;
    int locked = xc_lock(), thread, drains;
    xcoll_status_t rc = comm_lookup(comm, "xcoll_comm_destroy");
    int i;
    if (rc == XCOLL_OK && comm->outstanding > 0) {
        xc_error("xcoll_comm_destroy: communicator %u still has %u requests; wait for them first",
                 comm->id, comm->outstanding);
        rc = XCOLL_ERR_INVALID_ARG;
    }
    if (rc != XCOLL_OK) {
        xc_unlock(locked);
        return rc;
    }
    for (p = &live_comms; *p != comm; p = &(*p)->next_live)
        ;
    *p = comm->next_live;
    if (comm->drains)
        xc_drain_remove(comm); /* before its transport goes */
    for (i = 0; i < XC_SCHED_CACHE_SIZE; i++)
        if (comm->cache[i] != NULL)
            xc_sched_release(comm->cache[i]);
    xc_census_free(comm);
    comm->tl->comm_fini(comm->tl_comm);
    xc_topo_free(comm->topo);
    xc_tune_free(comm->tune);
    xc_info("communicator %u destroyed", comm->id);
    thread = comm->progress_thread;
    drains = comm->drains;
    free(comm);
    if (live_comms == NULL)
        xc_block_trim();
    xc_unlock(locked);
    /* without the lock: the thread needs it to finish */
    if (thread)
        xc_progress_thread_stop();
    else if (drains)
        xc_thread_stop_unused();
    return XCOLL_OK;
}

xcoll_status_t xcoll_comm_rank(xcoll_comm_t comm, int *rank)
{
    xcoll_status_t rc = comm_lookup(comm, "xcoll_comm_rank");
    if (rc != XCOLL_OK)
        return rc;
    if (rank == NULL) {
        xc_error("xcoll_comm_rank: rank is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    *rank = comm->rank;
    return XCOLL_OK;
}

xcoll_status_t xcoll_comm_size(xcoll_comm_t comm, int *size)
{
    xcoll_status_t rc = comm_lookup(comm, "xcoll_comm_size");
    if (rc != XCOLL_OK)
        return rc;
    if (size == NULL) {
        xc_error("xcoll_comm_size: size is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    *size = comm->size;
    return XCOLL_OK;
}

void xc_sched_release(xc_cached_sched_t *cs)
{
    if (cs != NULL && --cs->refs == 0) {
        if (cs->spare != NULL) {
            xc_exec_fini(&cs->spare->exec);
            xc_block_put(cs->spare);
        }
        xc_sched_fini(&cs->sched);
        free(cs->vec);
        free(cs);
    }
}

static int same_vec(const xc_cached_sched_t *cs, const size_t *vec, size_t nvec)
{
    return cs->nvec == nvec && (nvec == 0 || memcmp(cs->vec, vec, nvec * sizeof(size_t)) == 0);
}

xcoll_status_t xc_comm_get_sched(xcoll_comm_t comm, const uint64_t key[4], const size_t *vec,
                                 size_t nvec, xc_sched_builder_t build, void *ctx,
                                 xc_cached_sched_t **out)
{
    xc_cached_sched_t *cs;
    xcoll_status_t rc;
    int n, i, victim = comm->cache_last;

    comm->cache_clock++;
    /* a loop calls one shape again and again: the search starts at the
     * last hit */
    for (n = 0, i = comm->cache_last; n < XC_SCHED_CACHE_SIZE;
         n++, i = (i + 1) % XC_SCHED_CACHE_SIZE) {
        cs = comm->cache[i];
        if (cs != NULL && memcmp(cs->key, key, sizeof(cs->key)) == 0 &&
            same_vec(cs, vec, nvec)) {
            cs->last_use = comm->cache_clock;
            cs->refs++;
            comm->cache_last = i;
            *out = cs;
            return XCOLL_OK;
        }
        if (cs == NULL || (comm->cache[victim] != NULL && cs->last_use < comm->cache[victim]->last_use))
            victim = i;
    }
    cs = calloc(1, sizeof(*cs));
    if (cs == NULL) {
        xc_error("out of memory caching a schedule");
        return XCOLL_ERR_NO_MEMORY;
    }
    memcpy(cs->key, key, sizeof(cs->key));
    if (nvec > 0) {
        cs->vec = malloc(nvec * sizeof(size_t));
        if (cs->vec == NULL) {
            free(cs);
            xc_error("out of memory caching a schedule's %zu counts", nvec);
            return XCOLL_ERR_NO_MEMORY;
        }
        memcpy(cs->vec, vec, nvec * sizeof(size_t));
        cs->nvec = nvec;
    }
    rc = build(ctx, &cs->sched);
    if (rc == XCOLL_DECLINED) {
        cs->declined = 1;
        rc = XCOLL_OK;
    } else if (rc == XCOLL_OK) {
        rc = xc_sched_finish(&cs->sched);
    }
    if (rc != XCOLL_OK) {
        xc_sched_fini(&cs->sched);
        free(cs->vec);
        free(cs);
        return rc;
    }
    /* the least recently used entry makes room; running requests keep
     * their own reference, so eviction never pulls a schedule from under
     * them */
    if (comm->express.cs != NULL && comm->express.cs == comm->cache[victim])
        comm->express.cs = NULL;
    xc_sched_release(comm->cache[victim]);
    cs->refs = 2;
    cs->last_use = comm->cache_clock;
    comm->cache[victim] = cs;
    comm->cache_last = victim;
    *out = cs;
    return XCOLL_OK;
}
