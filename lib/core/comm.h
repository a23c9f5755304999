/* Communicators, cached schedules and requests: the state behind the
 * public handles. */
#ifndef XC_COMM_H
#define XC_COMM_H

#include "engine.h"
#include "transport.h"

/* A schedule shared by the cache and the requests running it. */
typedef struct xc_cached_sched {
    uint64_t key[4];        /* what the schedule was built for */
    size_t *vec, nvec;      /* and the counts and displacements (v-variants) */
    xc_sched_t sched;
    int refs;
    uint64_t last_use;
    int declined;           /* the table hands these calls to the caller: no sched */
    int rebindable;         /* cached by shape (alltoallv): its steps may be
                             * bound to other counts of the shape */
    char why[192];          /* the selection rule that chose sched.algo, for logs */
    /* A finished request of this schedule kept for the next call of the
     * same shape (request.c); it holds no reference. */
    struct xcoll_request_s *spare;
} xc_cached_sched_t;

#define XC_SCHED_CACHE_SIZE 32
#define XC_DECLINE_MEMO_SIZE 64

struct xcoll_comm_s {
    int rank, size;
    int progress_thread;    /* asked for the progress thread (request.c) */
    uint32_t id;            /* agreed at creation, unique among comms sharing a process */
    uint32_t seq;           /* sequence number of the next collective */
    double timeout_s;
    xcoll_memory_t memory;  /* the caller's word on where buffers live */
    int failed;             /* a collective failed: seq numbers may disagree now */
    int fallback;           /* the caller runs calls the table gives to "mpi" */
    int check;              /* collectives compare their calls first (XCOLL_CHECK) */
    const char *entered_what; /* the collective of sequence number seq - 1 */
    struct xc_census *census; /* after a timeout: where the ranks are (census.c) */
    const xc_transport_t *tl;
    void *tl_comm;
    unsigned outstanding;   /* requests not yet freed */
    xc_cached_sched_t *cache[XC_SCHED_CACHE_SIZE];
    uint64_t cache_clock;
    int cache_last;         /* index of the last hit, tried first */
    /* The last plain call api.c posted, for its express lane: a call of
     * the same shape (collective, count, type, operator, root, in place or
     * not) goes straight to this schedule. cs is NULL when there is none,
     * and is cleared when the cache lets that schedule go. */
    struct {
        xc_cached_sched_t *cs;
        int slot;           /* its index in cache */
        int coll, root, in_place;
        size_t count;
        xcoll_dtype_t dtype;
        xcoll_op_t op;
    } express;
    /* xcoll_declines' answers, direct-mapped by the call's shape */
    struct {
        uint64_t key[2]; /* 0: empty */
        int declined;
    } declines[XC_DECLINE_MEMO_SIZE];
    struct xc_tune *tune;   /* selection table: defaults + XCOLL_TUNE_FILE + XCOLL_TUNE */
    struct xc_topo *topo;   /* which ranks share a node (topo.h) */
    struct xcoll_comm_s *next_live;
    struct xcoll_comm_s *next_drain; /* the drainer's list (request.c) */
    int drains;             /* on that list */
};

struct xcoll_request_s {
    xcoll_comm_t comm;
    xc_cached_sched_t *cs;
    xc_exec_t exec;
    const char *what;       /* "allreduce", ... for logs */
    double last_moved;      /* when a step last completed or started */
    double waiting_since;   /* the first idle check after posting: about when
                             * a stuck collective began to wait (census.c) */
    int done;
    int in_census;          /* given up; fails when the census (census.c) is in, */
    xcoll_status_t census_status; /* with this status (a timeout, or a peer's failure) */
    xcoll_status_t status;
    /* a move within RECV after completion, from post_src to its start
     * (reduce_scatter in place, MPI layout) */
    size_t post_src, post_bytes;
    /* a caller's stream held until this request completes (stream given) */
    volatile uint32_t *hold_flag;
    uint32_t hold_value;
    /* xcoll_request_notify: called once, when the request finishes */
    void (*notify_fn)(void *arg);
    void *notify_arg;
    struct xcoll_request_s *prev_active, *next_active;
};

/* The progress thread (request.c), optional per communicator
 * (xcoll_config_t.progress_thread): one per process, while any
 * communicator that asked for it lives. While it runs, every call that
 * touches requests, schedules or transports holds one process-wide lock,
 * xc_lock() .. xc_unlock(its return value); without it they cost a test
 * of a flag. */
xcoll_status_t xc_progress_thread_start(void);
void xc_progress_thread_stop(void);
/* The drainer (request.c): the same thread, for communicators whose
 * transport may still owe peers bytes after every operation completed
 * (transport.h, drain, owes_tails: UCX over TCP). Every communicator
 * spanning nodes joins, and one of a node where UCX talks TCP. While no
 * operation of the process is active it progresses that part and sleeps on the
 * transport's wakeup; meanwhile the callers progress as without a
 * thread. start: comm joins (the thread starts if it does not run);
 * remove: comm leaves (before its transport goes), with or without the
 * lock. xc_thread_stop_unused, without the lock: stops the thread once
 * neither the progress thread's users nor the drainer need it. */
xcoll_status_t xc_drain_start(xcoll_comm_t comm);
void xc_drain_remove(xcoll_comm_t comm);
void xc_thread_stop_unused(void);
int xc_lock(void);
void xc_unlock(int locked);

/* XCOLL_OK if comm is a live communicator that has not failed; otherwise
 * logs why (naming `what`) and returns the status to give the caller. */
xcoll_status_t xc_comm_check(xcoll_comm_t comm, const char *what);
/* The same question without a word: 1 if it is. */
int xc_comm_usable(xcoll_comm_t comm);

/* The cached schedule for key (and, if nvec > 0, the nvec words at vec,
 * compared exactly: the v-variants' counts and displacements, whose hash
 * the caller puts in the key), building it with build(ctx, sched) on a
 * miss. Returns a reference; release with xc_sched_release. A build that
 * returns XCOLL_DECLINED is cached too, as an entry with declined set and
 * an empty schedule (the decision is as fixed as the table). */
typedef xcoll_status_t (*xc_sched_builder_t)(void *ctx, xc_sched_t *s);
xcoll_status_t xc_comm_get_sched(xcoll_comm_t comm, const uint64_t key[4], const size_t *vec,
                                 size_t nvec, xc_sched_builder_t build, void *ctx,
                                 xc_cached_sched_t **out);
void xc_sched_release(xc_cached_sched_t *cs);

/* The caller's buffers of one call: pointers, or layouts (xcoll_layout_t)
 * the engine reaches them through, and a move to do after completion. */
typedef struct {
    const void *send;
    void *recv;
    const xcoll_layout_t *send_layout, *recv_layout;
    size_t post_src, post_bytes; /* see xcoll_request_s */
} xc_request_bufs_t;

/* Starts a request running cs on comm (takes over the reference to cs).
 * p2p_tag < 0 for a collective (consumes a sequence number). stream: the
 * caller's CUDA stream or NULL (only with a GPU backend). Buffers on a
 * device make the request run on the GPU (xc_exec_init with a device);
 * layouts are host-only (a device buffer or a stream with one is
 * XCOLL_ERR_UNSUPPORTED). */
xcoll_status_t xc_request_post(xcoll_comm_t comm, xc_cached_sched_t *cs, const char *what,
                               const xc_request_bufs_t *bufs, int p2p_tag, void *stream,
                               xcoll_request_t *req);

double xc_now(void);

#endif
