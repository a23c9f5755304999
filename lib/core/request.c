/* Requests: posting a schedule, progressing everything outstanding,
 * test/wait with back-off and the timeout, and the optional progress
 * thread that does the progressing when the caller does not. */
#define _GNU_SOURCE /* ppoll */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "census.h"
#include "comm.h"
#include "log.h"
#include "pool.h"

/* Every posted, unfinished request in the process. Progress always walks
 * all of them: a rank blocked in wait on one collective must keep serving
 * the others, or a peer waiting for those would never reach ours. */
static struct xcoll_request_s *active_head;

/* --- the progress thread and its lock ---------------------------------------
 * While the thread runs (threaded), the lock guards everything a request
 * touches: the active list, the engines, the transports, the schedule
 * caches and the block pool. The thread holds it while it progresses and
 * lets go to sleep. With the progress thread's users, a caller's
 * xcoll_wait sleeps on `finished` instead of progressing; with the
 * drainer alone (communicators across nodes or over TCP), callers progress as
 * without a thread, holding the lock. Recursive: a blocking call takes it
 * in its nonblocking form and again in the wait. */
static pthread_mutex_t big_lock;
static pthread_cond_t work_posted = PTHREAD_COND_INITIALIZER; /* the thread's sleep */
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;    /* waiters' sleep */
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static pthread_t thread;
static int threaded;      /* the thread runs: take the lock */
static int stopping;
static unsigned thread_users; /* live communicators that asked for it */
/* The drainer: the same thread, for communicators whose transport may owe
 * peers bytes after their operations completed (transport.h, drain). */
static struct xcoll_comm_s *drain_head; /* linked by next_drain */
static int thread_sleeping; /* in thread_sleep: thread_wake writes wake_fd */
static int wake_fd = -1;    /* an eventfd the drainer's sleep also polls */
/* Calls into xcoll while the thread runs (xc_lock): the drainer keeps
 * out of the way while a caller is busy with xcoll, so that a loop of
 * collectives pays it nothing (no lock taken from under it, no wakeups
 * of its own on the collectives' traffic). */
static unsigned long entries;

static void thread_wake(void);

static void lock_init(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&big_lock, &a);
    pthread_mutexattr_destroy(&a);
}

int xc_lock(void)
{
    if (!__atomic_load_n(&threaded, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&big_lock);
    __atomic_add_fetch(&entries, 1, __ATOMIC_RELAXED);
    return 1;
}

void xc_unlock(int locked)
{
    if (locked)
        pthread_mutex_unlock(&big_lock);
}

double xc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void unlink_active(struct xcoll_request_s *r)
{
    if (r->prev_active != NULL)
        r->prev_active->next_active = r->next_active;
    else if (active_head == r)
        active_head = r->next_active;
    if (r->next_active != NULL)
        r->next_active->prev_active = r->prev_active;
    r->prev_active = r->next_active = NULL;
}

/* For a request that fails because peers are lost: names every rank of
 * its communicator the transport lost, once, where the failure is seen. */
static void log_lost(const struct xcoll_request_s *r)
{
    const xc_transport_t *tl = r->comm->tl;
    char list[160], where[64];
    const char *why = NULL;
    size_t len = 0;
    int p, n = 0, nleft = 0, cut = 0;
    if (tl->peer_lost == NULL)
        return;
    list[0] = '\0';
    for (p = 0; p < r->comm->size; p++) {
        const char *w = tl->peer_lost(r->comm->tl_comm, p);
        if (w == NULL)
            continue;
        if (tl->peer_left != NULL && tl->peer_left(r->comm->tl_comm, p))
            nleft++;
        else if (why == NULL)
            why = w; /* a real loss's reason, not a goodbye */
        if (len + 16 < sizeof(list))
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", n ? "," : "", p);
        else if (!cut && len + 4 < sizeof(list)) {
            len += (size_t)snprintf(list + len, sizeof(list) - len, ",...");
            cut = 1;
        }
        n++;
    }
    if (r->exec.is_p2p)
        snprintf(where, sizeof(where), "tag %u", r->exec.user_tag);
    else
        snprintf(where, sizeof(where), "seq %u, comm %u", r->exec.seq, r->comm->id);
    if (n == 0)
        xc_error("%s (%s): a peer is lost (a send to it failed, or another rank said so)",
                 r->what, where);
    else if (nleft == n)
        xc_error("%s (%s): rank%s %s destroyed the communicator and left (%s said goodbye) "
                 "while this rank awaits data from %s: the ranks called different "
                 "collectives, or those left early", r->what, where, n > 1 ? "s" : "", list,
                 n > 1 ? "they" : "it", n > 1 ? "them" : "it");
    else
        xc_error("%s (%s): rank%s %s %s lost: the connection failed (%s%s); the process or "
                 "node is gone, or the network to it", r->what, where, n > 1 ? "s" : "", list,
                 n > 1 ? "are" : "is", why, nleft > 0 ? "; some of them said goodbye" : "");
}

static void complete(struct xcoll_request_s *r, xcoll_status_t status)
{
    r->done = 1;
    unlink_active(r);
    if (status == XCOLL_ERR_PEER_LOST && !r->in_census)
        log_lost(r);
    if (status == XCOLL_OK && r->post_bytes > 0 && r->post_src > 0)
        status = xc_exec_move_recv(&r->exec, r->post_src, r->post_bytes);
    r->status = status;
    /* released on failure too: a held stream would otherwise never run */
    if (r->hold_flag != NULL) {
        xc_gpu_flag_release(r->hold_flag, r->hold_value);
        r->hold_flag = NULL;
    }
    if (status != XCOLL_OK && status != XCOLL_ERR_MISMATCH && !r->exec.is_p2p) {
        /* the ranks no longer agree on sequence numbers (a mismatch fails
         * every rank at its check, before any data moved: they still do) */
        r->comm->failed = 1;
        /* peers that time out waiting for this rank learn why it left */
        if (status != XCOLL_ERR_TIMEOUT)
            xc_census_announce(r->comm, &r->exec, r->what, status);
    }
    if (threaded)
        pthread_cond_broadcast(&finished);
    if (r->notify_fn != NULL)
        r->notify_fn(r->notify_arg);
}

/* Advances one request; returns 1 if it moved. */
static int progress_one(struct xcoll_request_s *r)
{
    int moved = 0;
    xcoll_status_t rc;
    if (r->in_census) {
        /* timed out: its exec is cancelled, the census decides when it fails */
        if (!xc_census_progress(r->comm, xc_now()))
            return 0;
        complete(r, r->census_status);
        return 1;
    }
    rc = xc_exec_progress(&r->exec, &moved);
    if (moved)
        r->last_moved = 0; /* stamped by the next idle check: see check_timeout */
    if (rc != XCOLL_INPROGRESS) {
        complete(r, rc);
        moved = 1;
    }
    return moved;
}

/* One round over the transport and every active request. */
static int progress_all(const xc_transport_t *tl, void *tl_comm)
{
    struct xcoll_request_s *r, *next;
    int moved = tl->progress(tl_comm) > 0;
    for (r = active_head; r != NULL; r = next) {
        next = r->next_active;
        moved |= progress_one(r);
    }
    return moved;
}

/* Where the caller's buffers live, from the communicator's memory setting
 * or by asking the GPU backend; *on_gpu if the call must run on the GPU. */
static xcoll_status_t locate_buffers(xcoll_comm_t comm, const char *what, const void *sendbuf,
                                     const void *recvbuf, xc_memtype_t *ms, xc_memtype_t *mr,
                                     int *on_gpu)
{
    const xc_gpu_backend_t *gpu = xc_gpu();
    int send_dev = -1, recv_dev = -1; /* -1 with XCOLL_MEMORY_CUDA: the current device */
    *ms = *mr = XC_MEM_HOST;
    *on_gpu = 0;
    if (gpu == NULL || comm->memory == XCOLL_MEMORY_HOST)
        return XCOLL_OK;
    if (comm->memory == XCOLL_MEMORY_CUDA) {
        *ms = sendbuf != NULL ? XC_MEM_DEVICE : XC_MEM_HOST;
        *mr = recvbuf != NULL ? XC_MEM_DEVICE : XC_MEM_HOST;
    } else {
        *ms = xc_gpu_memtype(sendbuf, &send_dev);
        *mr = xc_gpu_memtype(recvbuf, &recv_dev);
    }
    *on_gpu = xc_mem_on_device(*ms) || xc_mem_on_device(*mr);
    if (*on_gpu) {
        xcoll_status_t rc = gpu->bind(xc_mem_on_device(*ms) ? send_dev : recv_dev);
        if (rc != XCOLL_OK) {
            xc_error("%s: cannot use this buffer's device", what);
            return rc;
        }
    }
    return XCOLL_OK;
}

/* Orders r after the work already queued on the caller's stream (a gate
 * event the engine waits for) and holds the stream until r completes. A
 * device call without a stream still waits for the legacy default stream,
 * as a CUDA-aware MPI would. */
static xcoll_status_t order_on_stream(struct xcoll_request_s *r, void *stream)
{
    const xc_gpu_backend_t *gpu = xc_gpu();
    struct xcoll_request_s *other;
    void *gate;
    xcoll_status_t rc;
    if ((gate = xc_gpu_event_get()) == NULL)
        return XCOLL_ERR_INTERNAL;
    if ((rc = gpu->record_on_stream(gate, stream)) != XCOLL_OK) {
        xc_gpu_event_put(gate);
        return rc;
    }
    r->exec.gate = gate; /* the exec owns it now */
    if (stream == NULL)
        return XCOLL_OK;
    /* calls still running take their remaining memory now: after the hold
     * an allocation could wait for it (xc_gpu_holds_pending) */
    for (other = active_head; other != NULL; other = other->next_active)
        if ((rc = xc_exec_gpu_reserve(&other->exec)) != XCOLL_OK)
            return rc;
    if ((r->hold_flag = xc_gpu_flag_get(&r->hold_value)) == NULL)
        return XCOLL_ERR_NO_MEMORY;
    if ((rc = gpu->hold_stream(stream, r->hold_flag, r->hold_value)) != XCOLL_OK) {
        xc_gpu_flag_release(r->hold_flag, r->hold_value);
        r->hold_flag = NULL;
    }
    return rc;
}

static xcoll_status_t activate(xcoll_comm_t comm, xc_cached_sched_t *cs, const char *what,
                               const xc_request_bufs_t *bufs, int p2p_tag,
                               struct xcoll_request_s *r, xcoll_request_t *req);

xcoll_status_t xc_request_post(xcoll_comm_t comm, xc_cached_sched_t *cs, const char *what,
                               const xc_request_bufs_t *bufs, int p2p_tag, void *stream,
                               xcoll_request_t *req)
{
    const int layouts = bufs->send_layout != NULL || bufs->recv_layout != NULL;
    struct xcoll_request_s *r;
    xcoll_status_t rc;
    uint32_t seq = p2p_tag < 0 ? comm->seq++ : 0;
    xc_exec_device_t dev;
    int on_gpu = 0;

    if (p2p_tag < 0)
        comm->entered_what = what; /* a census may ask (census.c) */

    /* a side with a layout is the caller's to reach: asked about where it
     * says its memory is */
    rc = locate_buffers(comm, what,
                        bufs->send_layout != NULL ? bufs->send_layout->where : bufs->send,
                        bufs->recv_layout != NULL ? bufs->recv_layout->where : bufs->recv,
                        &dev.send_mem, &dev.recv_mem, &on_gpu);
    if (rc == XCOLL_OK && cs->spare != NULL && !layouts && stream == NULL && !on_gpu) {
        /* the last call of this shape left its request: same schedule,
         * same scratch, only the buffers and the sequence number change */
        r = cs->spare;
        cs->spare = NULL;
        xc_exec_rerun(&r->exec, (void *)(uintptr_t)bufs->send, bufs->recv, seq);
        return activate(comm, cs, what, bufs, p2p_tag, r, req);
    }
    r = xc_block_get(sizeof(struct xcoll_request_s), 1);
    if (r == NULL) {
        xc_error("%s: out of memory for a request", what);
        xc_sched_release(cs);
        return XCOLL_ERR_NO_MEMORY;
    }
    if (rc == XCOLL_OK && layouts && (on_gpu || stream != NULL)) {
        xc_error("%s: a buffer with a layout is host memory only, and this call has %s", what,
                 stream != NULL ? "a CUDA stream" : "device memory");
        rc = XCOLL_ERR_UNSUPPORTED;
    }
    dev.gpu = xc_gpu();
    dev.reserve = stream != NULL || xc_gpu_holds_pending();
    /* the engine never writes through the send buffer's reference */
    if (rc == XCOLL_OK)
        rc = xc_exec_init(&r->exec, &cs->sched, (void *)(uintptr_t)bufs->send, bufs->recv,
                          comm->tl, comm->tl_comm, comm->id, seq, on_gpu ? &dev : NULL);
    if (rc == XCOLL_OK && layouts)
        rc = xc_exec_use_layouts(&r->exec, bufs->send_layout, bufs->recv_layout);
    if (rc == XCOLL_OK && (stream != NULL || on_gpu))
        rc = order_on_stream(r, stream);
    if (rc != XCOLL_OK) {
        if (r->hold_flag != NULL)
            xc_gpu_flag_release(r->hold_flag, r->hold_value);
        xc_exec_fini(&r->exec);
        xc_sched_release(cs);
        xc_block_put(r);
        if (p2p_tag < 0)
            comm->failed = 1; /* the others consumed this sequence number */
        return rc;
    }
    return activate(comm, cs, what, bufs, p2p_tag, r, req);
}

/* A request whose exec is bound: onto the active list, and started. */
static xcoll_status_t activate(xcoll_comm_t comm, xc_cached_sched_t *cs, const char *what,
                               const xc_request_bufs_t *bufs, int p2p_tag,
                               struct xcoll_request_s *r, xcoll_request_t *req)
{
    if (p2p_tag >= 0) {
        r->exec.is_p2p = 1;
        r->exec.user_tag = (uint32_t)p2p_tag;
    }
    r->comm = comm;
    r->cs = cs;
    r->what = what;
    r->post_src = bufs->post_src;
    r->post_bytes = bufs->post_bytes;
    r->status = XCOLL_INPROGRESS;
    r->done = 0;
    r->in_census = 0;
    r->last_moved = 0;
    r->waiting_since = 0;
    r->notify_fn = NULL;
    r->notify_arg = NULL;
    r->next_active = active_head;
    if (active_head != NULL)
        active_head->prev_active = r;
    active_head = r;
    comm->outstanding++;
    xc_debug("%s seq %u posted: algorithm %s, %u steps", what, r->exec.seq, cs->sched.algo,
             cs->sched.nsteps);
    /* start what can start now: receives get posted before data arrives */
    progress_one(r);
    *req = r;
    if (thread_users > 0) {
        pthread_cond_signal(&work_posted);
        thread_wake();
    }
    return XCOLL_OK;
}

/* The oldest unfinished collective on r's communicator (the active list
 * is newest first); r itself if none is older. */
static const struct xcoll_request_s *oldest_on(const struct xcoll_request_s *r)
{
    const struct xcoll_request_s *o = r, *q;
    for (q = active_head; q != NULL; q = q->next_active)
        if (q->comm == r->comm && !q->done && !q->exec.is_p2p)
            o = q;
    return o;
}

/* Fails r at once when a peer it waits for is lost (transport.h): that
 * receive would never complete, with or without a timeout. Costs nothing
 * until the transport has lost a connection. Returns 1 once r completed. */
static int check_lost(struct xcoll_request_s *r)
{
    const xc_transport_t *tl = r->comm->tl;
    int peers[256];
    unsigned n, i;
    if (r->done || r->in_census || tl->lost_count == NULL ||
        tl->lost_count(r->comm->tl_comm) == 0)
        return 0;
    n = xc_exec_pending_peers(&r->exec, peers, sizeof(peers) / sizeof(peers[0]));
    for (i = 0; i < n; i++) {
        if (tl->peer_lost(r->comm->tl_comm, peers[i]) == NULL)
            continue;
        xc_exec_cancel(&r->exec);
        complete(r, XCOLL_ERR_PEER_LOST); /* which logs who is lost */
        return 1;
    }
    return 0;
}

/* Ends r with status (a timeout, or a peer's failure): a collective first
 * takes the census, one per communicator, about its oldest unfinished
 * collective (the one the others are most likely stuck in); a second one
 * there fails at once, the first one's verdict stands. Returns 1 once r
 * has completed. */
static int give_up(struct xcoll_request_s *r, double now, xcoll_status_t status)
{
    if (!r->exec.is_p2p) {
        const struct xcoll_request_s *o = oldest_on(r);
        r->comm->failed = 1; /* no new calls while the census runs */
        if (xc_census_start_failed(r->comm, &o->exec, o->what, o->waiting_since, now, status) ==
            XCOLL_OK) {
            xc_exec_cancel(&r->exec);
            r->in_census = 1;
            r->census_status = status;
            return 0;
        }
    }
    xc_exec_cancel(&r->exec);
    complete(r, status);
    return 1;
}

/* Gives up on r after its communicator's timeout with no progress.
 * Progress does not read the clock (clock_gettime costs ~50 ns here, a
 * small collective ~600 ns): it sets last_moved to 0, and the first idle
 * check after that stamps the time, so the timeout counts from at most one
 * check interval after the last progress. A collective then asks the
 * other ranks where they are (census.c) and fails when they answered or
 * the census window closed; returns 1 once r has completed. */
static int check_timeout(struct xcoll_request_s *r, double now)
{
    char what[96];
    double t = r->comm->timeout_s;
    xcoll_status_t peer_failed = XCOLL_OK;
    if (r->in_census)
        return 0;
    if (check_lost(r))
        return 1;
    if (r->last_moved == 0) {
        r->last_moved = now;
        if (r->waiting_since == 0)
            r->waiting_since = now;
        return 0;
    }
    if (r->done)
        return 0;
    if (t <= 0 || now - r->last_moved < t) {
        /* stuck for a while (a quarter of the timeout, or a second without
         * one): hear out (and answer) a peer that gave up, and give up at
         * once if a peer failed in this collective (it lost a peer, say):
         * then nothing can complete it, and without a timeout it would
         * wait forever */
        if (!r->exec.is_p2p && now - r->last_moved >= (t > 0 ? t / 4 : 1.0))
            peer_failed = xc_census_listen(r->comm, &r->exec, r->what, r->waiting_since, now);
        if (peer_failed == XCOLL_OK)
            return 0;
        xc_error("%s (seq %u, comm %u): a peer failed in it or before (%s): giving up", r->what,
                 r->exec.seq, r->comm->id, xcoll_strerror(peer_failed));
        return give_up(r, now, peer_failed == XCOLL_ERR_PEER_LOST ? XCOLL_ERR_PEER_LOST
                                                                  : XCOLL_ERR_COMM_FAILED);
    }
    if (r->exec.is_p2p)
        snprintf(what, sizeof(what), "%s (tag %u) timed out after %.1f s", r->what,
                 r->exec.user_tag, now - r->last_moved);
    else
        snprintf(what, sizeof(what), "%s (seq %u, comm %u) timed out after %.1f s", r->what,
                 r->exec.seq, r->comm->id, now - r->last_moved);
    xc_error("%s without progress; waiting on:", what);
    xc_exec_log_pending(&r->exec, what);
    return give_up(r, now, XCOLL_ERR_TIMEOUT);
}

/* A finished request is kept for the next call of its shape only while it
 * is small: its scratch and step state stay allocated as long as the
 * schedule is cached (up to 32 per communicator), and the reuse is for
 * the loops of small calls where allocation shows. */
#define XC_KEEP_MAX_TMP ((size_t)64 * 1024)
#define XC_KEEP_MAX_STEPS 1024u

static xcoll_status_t release(xcoll_request_t *req)
{
    struct xcoll_request_s *r = *req;
    xcoll_status_t st = r->status;
    if (r->cs->spare == r) {
        /* a copy of a handle already released: releasing it again would
         * free the request and the cache's schedule under them */
        xc_error("a request was waited for or tested again after it completed and was released");
        *req = NULL;
        return XCOLL_ERR_INVALID_ARG;
    }
    r->comm->outstanding--;
    if (XC_POOL_ENABLED && st == XCOLL_OK && r->cs->spare == NULL &&
        r->cs->sched.tmp_bytes <= XC_KEEP_MAX_TMP && r->cs->sched.nsteps <= XC_KEEP_MAX_STEPS &&
        xc_exec_reusable(&r->exec)) {
        /* kept for the next call of this shape (xc_request_post); the
         * schedule frees it if it goes first */
        r->cs->spare = r;
        xc_sched_release(r->cs);
        *req = NULL;
        return st;
    }
    xc_exec_fini(&r->exec);
    xc_sched_release(r->cs);
    xc_block_put(r);
    *req = NULL;
    return st;
}

xcoll_status_t xcoll_test(xcoll_request_t *req, int *done)
{
    struct xcoll_request_s *r;
    xcoll_status_t st;
    int locked;
    if (req == NULL || done == NULL) {
        xc_error("xcoll_test: req or done is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    *done = 0;
    r = *req;
    if (r == NULL) {
        *done = 1;
        return XCOLL_OK;
    }
    locked = xc_lock();
    if (!r->done && !progress_all(r->comm->tl, r->comm->tl_comm))
        check_timeout(r, xc_now());
    if (!r->done) {
        xc_unlock(locked);
        return XCOLL_OK;
    }
    *done = 1;
    st = release(req);
    xc_unlock(locked);
    return st;
}

xcoll_status_t xcoll_request_notify(xcoll_request_t req, void (*fn)(void *arg), void *arg)
{
    int locked;
    if (req == NULL || fn == NULL) {
        xc_error("xcoll_request_notify: req or fn is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    locked = xc_lock();
    if (req->notify_fn != NULL) {
        xc_unlock(locked);
        xc_error("xcoll_request_notify: this request has a callback already");
        return XCOLL_ERR_INVALID_ARG;
    }
    req->notify_fn = fn;
    req->notify_arg = arg;
    /* finished before the caller could ask (a call with nothing to wait
     * for completes while it is posted): now, on this thread */
    if (req->done)
        fn(arg);
    xc_unlock(locked);
    return XCOLL_OK;
}

/* With the progress thread: sleep until it finishes r (it checks the
 * timeout too). Called with the lock held once. */
static xcoll_status_t wait_for_thread(xcoll_request_t *req)
{
    struct xcoll_request_s *r = *req;
    while (!r->done) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 10 * 1000 * 1000; /* a lost wake-up costs 10 ms, no more */
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&finished, &big_lock, &until);
    }
    return release(req);
}

/* Spin briefly (latency), then hand the core to the transport's idle wait
 * (oversubscribed jobs); poll at least every few ms so the timeout fires. */
xcoll_status_t xcoll_wait(xcoll_request_t *req)
{
    struct xcoll_request_s *r;
    unsigned idle = 0, polls = 0;
    xcoll_status_t st;
    int locked;
    if (req == NULL) {
        xc_error("xcoll_wait: req is NULL");
        return XCOLL_ERR_INVALID_ARG;
    }
    r = *req;
    if (r == NULL)
        return XCOLL_OK;
    locked = xc_lock();
    if (locked && thread_users > 0) {
        xcoll_status_t st = wait_for_thread(req);
        xc_unlock(1);
        return st;
    }
    /* with only the drainer running, this thread progresses, holding the
     * lock throughout: the drainer keeps out while anything is active */
    while (!r->done) {
        idle = progress_all(r->comm->tl, r->comm->tl_comm) ? 0 : idle + 1;
        /* The timeout is checked every 16th idle round, not the first:
         * spinning rounds are ~0.1 us, sleeping ones at most 2 ms, so it
         * fires within ~32 ms, and a wait shorter than 16 rounds never
         * reads the clock. And every 256th round whatever moved: other
         * traffic (another communicator, a peer's messages) may move every
         * few rounds while r does not. */
        if (((idle != 0 && idle % 16 == 0) || (++polls & 255) == 0) &&
            check_timeout(r, xc_now()))
            break;
        if (idle != 0)
            r->comm->tl->idle(r->comm->tl_comm, idle, 2000);
    }
    st = release(req);
    xc_unlock(locked);
    return st;
}

/* One round of the thread: every active request's transport (each once
 * per round would need a set; a transport's progress with nothing to do
 * costs little) and the request. Returns whether anything moved. */
static int thread_round(void)
{
    struct xcoll_request_s *r, *next;
    int moved = 0;
    for (r = active_head; r != NULL; r = next) {
        next = r->next_active;
        moved |= r->comm->tl->progress(r->comm->tl_comm) > 0;
        moved |= progress_one(r);
    }
    return moved;
}

/* After 64 idle rounds, with the lock held: arms the first active
 * request's transport (shared memory wraps UCX: one process-wide state
 * serves every communicator). Returns it when the thread may sleep on *w
 * once it has let go of the lock, NULL when it should nap (no wakeup
 * there) or progress again at once (*busy: something arrived). */
static const xc_transport_t *thread_arm(xc_wait_t *w, int *busy)
{
    const xc_transport_t *tl = active_head->comm->tl;
    int a;
    *busy = 0;
    if (tl->arm == NULL)
        return NULL;
    a = tl->arm(active_head->comm->tl_comm, w);
    *busy = a > 0;
    return a == 0 ? tl : NULL;
}

/* Naps ms milliseconds. */
static void nap_ms(unsigned ms)
{
    struct timespec t = {0, (long)ms * 1000000L};
    nanosleep(&t, NULL);
}

/* Takes the lock again after letting go. The progress thread waits for
 * it; the drainer alone tries and naps, so that it never sits in the
 * mutex's queue and a caller's unlock never has to wake it. */
static void relock(void)
{
    for (unsigned ms = 2; pthread_mutex_trylock(&big_lock) != 0; ms = ms < 64 ? ms * 2 : ms) {
        if (__atomic_load_n(&thread_users, __ATOMIC_RELAXED) > 0 ||
            __atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
            /* progressing for callers, or leaving: the holder lets go soon */
            pthread_mutex_lock(&big_lock);
            return;
        }
        nap_ms(ms);
    }
}

/* With the lock held: lets go and sleeps until fd (if >= 0) is readable,
 * wake_fd is written (a post for the progress thread, the progress
 * thread's start, the thread's stop) or us microseconds passed; then
 * takes the lock again. */
static void thread_sleep(int fd, unsigned us)
{
    struct pollfd pfd[2];
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    thread_sleeping = 1;
    pthread_mutex_unlock(&big_lock);
    pfd[0].fd = fd; /* a negative fd is skipped */
    pfd[0].events = POLLIN;
    pfd[1].fd = wake_fd;
    pfd[1].events = POLLIN;
    if (ppoll(pfd, 2, &ts, NULL) > 0 && (pfd[1].revents & POLLIN)) {
        uint64_t v;
        if (read(wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            xc_debug("xcoll's thread: reading its wake fd: %s", strerror(errno));
    }
    relock();
    thread_sleeping = 0;
}

/* With the lock held: ends thread_sleep early (once). */
static void thread_wake(void)
{
    uint64_t one = 1;
    if (!thread_sleeping)
        return;
    thread_sleeping = 0;
    if (write(wake_fd, &one, sizeof(one)) < 0)
        xc_debug("waking xcoll's thread: %s", strerror(errno));
}

/* With the lock held: lets go, naps, takes it again; 1 if no caller
 * entered xcoll meanwhile (the drainer's turn: the caller left xcoll for
 * a while, for its own work or for MPI). The nap starts at 2 ms and
 * doubles to 64 ms while callers stay busy: a process running
 * collectives back to back then sees the drainer wake ~16 times a second
 * (at 2 ms, 8 ranks on 2 cores ran small broadcasts up to 3x slower).
 * A tail UCX holds waits at most about that long once the caller left
 * xcoll; while the caller is in xcoll, its own progress writes it. */
static int callers_quiet(void)
{
    static unsigned ms = 2;
    unsigned long seen = __atomic_load_n(&entries, __ATOMIC_RELAXED);
    int quiet;
    thread_sleep(-1, ms * 1000);
    quiet = __atomic_load_n(&entries, __ATOMIC_RELAXED) == seen;
    ms = quiet ? 2 : ms < 64 ? ms * 2 : ms;
    return quiet;
}

/* One round of the drainer (transport.h, drain), with the lock held:
 * progresses what the transports may still owe peers, and when nothing
 * moved sleeps on the wakeup (a peer's message, a socket that can take a
 * buffered tail again) with the lock let go, at most the transport's cap
 * (10 ms where it has no wakeup); wake_fd ends the sleep early. Requests
 * may be active (their callers are away): the drain only moves UCX's
 * state, which they test when their callers come back. */
static void drain_round(void)
{
    xcoll_comm_t c = drain_head;
    const xc_transport_t *tl = c->tl; /* static: outlives c */
    xc_wait_t w;
    int a = tl->drain(c->tl_comm, &w);
    if (a > 0) {
        pthread_mutex_unlock(&big_lock); /* a caller may want in between rounds */
        sched_yield();
        relock();
        return;
    }
    if (a < 0 || w.fd < 0) {
        thread_sleep(-1, 10000);
        return;
    }
    thread_sleep(w.fd, w.max_us);
    if (tl->disarm != NULL)
        tl->disarm();
}

/* Progresses while something is posted (the progress thread's users),
 * drains while nothing is (communicators across nodes or over TCP), sleeps
 * otherwise. Progressing backs off when it stalls (yields, then sleeps on
 * the transport's wakeup for at most 1 ms, naps where it has none), with
 * the lock let go so callers can post and test meanwhile. With only the
 * drain to do, the callers progress their requests (they must, as without
 * the thread), and the drainer waits until they have left xcoll alone for
 * a while (callers_quiet), then drains and sleeps on the wakeup. */
static void *thread_main(void *arg)
{
    unsigned idle = 0, rounds = 0;
    (void)arg;
    pthread_mutex_lock(&big_lock);
    while (!stopping) {
        const xc_transport_t *armed = NULL;
        xc_wait_t w;
        int moved, busy = 0;
        if (active_head == NULL || thread_users == 0) {
            idle = 0;
            if (drain_head != NULL && thread_users == 0) {
                /* the drainer alone: only once the callers left xcoll */
                if (callers_quiet() && drain_head != NULL && thread_users == 0)
                    drain_round();
            } else if (active_head == NULL && drain_head != NULL) {
                drain_round(); /* a post ends its sleep (wake_fd) */
            } else {
                pthread_cond_wait(&work_posted, &big_lock);
            }
            continue;
        }
        moved = thread_round();
        idle = moved ? 0 : idle + 1;
        /* timeouts as xcoll_wait checks them: every 16th idle round, and
         * every 256th whatever moved (other traffic must not hold one off) */
        if ((idle != 0 && idle % 16 == 0) || (++rounds & 255) == 0) {
            struct xcoll_request_s *r, *next;
            double now = xc_now();
            for (r = active_head; r != NULL; r = next) {
                next = r->next_active;
                check_timeout(r, now);
            }
        }
        if (idle >= 64 && active_head != NULL)
            armed = thread_arm(&w, &busy);
        /* let go between rounds, so a caller's post or test is not held
         * off while messages keep moving */
        pthread_mutex_unlock(&big_lock);
        if (armed != NULL) {
            armed->sleep(&w, 1000);
        } else if (busy) {
            idle = 0;
        } else if (idle == 0) {
            if ((rounds & 15) == 0)
                sched_yield();
        } else if (idle < 64) {
            sched_yield();
        } else {
            unsigned us = (idle - 63) * 20;
            struct timespec nap = {0, (long)(us < 1000 ? us : 1000) * 1000};
            nanosleep(&nap, NULL);
        }
        pthread_mutex_lock(&big_lock);
        if (armed != NULL)
            armed->disarm();
    }
    pthread_mutex_unlock(&big_lock);
    return NULL;
}

static void at_exit_init(void);

/* Starts the thread if it does not run; called with the lock held where
 * it runs. */
static xcoll_status_t thread_start(void)
{
    static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
    int rc;
    if (threaded)
        return XCOLL_OK;
    pthread_once(&exit_once, at_exit_init);
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) {
        xc_error("starting xcoll's thread: eventfd: %s", strerror(errno));
        return XCOLL_ERR_INTERNAL;
    }
    stopping = 0;
    __atomic_store_n(&threaded, 1, __ATOMIC_RELEASE);
    rc = pthread_create(&thread, NULL, thread_main, NULL);
    if (rc != 0) {
        __atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
        close(wake_fd);
        wake_fd = -1;
        xc_error("starting xcoll's thread: %s", strerror(rc));
        return XCOLL_ERR_INTERNAL;
    }
    return XCOLL_OK;
}

/* Tells the thread to leave, wherever it sleeps; called without the lock. */
static void thread_tell_stop(void)
{
    pthread_mutex_lock(&big_lock);
    __atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&work_posted);
    thread_wake();
    pthread_mutex_unlock(&big_lock);
}

/* Stops the thread, joined; called without the lock (the thread needs it
 * to finish). */
static void thread_stop(void)
{
    thread_tell_stop();
    pthread_join(thread, NULL);
    __atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
    close(wake_fd);
    wake_fd = -1;
}

void xc_thread_stop_unused(void)
{
    pthread_mutex_lock(&big_lock);
    if (!threaded || thread_users > 0 || drain_head != NULL) {
        pthread_mutex_unlock(&big_lock);
        return;
    }
    pthread_mutex_unlock(&big_lock);
    thread_stop();
}

/* At exit (or when the library is unloaded) with communicators still
 * alive: the thread must not be inside UCX while UCX's own destructors
 * run. Waits at most a second: a caller that exits holding the lock (from
 * inside a callback) keeps the thread from leaving, and then exits as
 * before. */
static void thread_stop_at_exit(void)
{
    struct timespec until;
    if (!__atomic_load_n(&threaded, __ATOMIC_ACQUIRE) || pthread_equal(pthread_self(), thread))
        return;
    thread_tell_stop();
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    if (pthread_timedjoin_np(thread, NULL, &until) == 0)
        __atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
}

static void at_exit_init(void)
{
    if (atexit(thread_stop_at_exit) != 0)
        xc_debug("atexit refused: a thread still running at exit is not stopped first");
}

xcoll_status_t xc_progress_thread_start(void)
{
    xcoll_status_t rc;
    pthread_once(&lock_once, lock_init);
    pthread_mutex_lock(&big_lock);
    rc = thread_start();
    if (rc == XCOLL_OK && __atomic_add_fetch(&thread_users, 1, __ATOMIC_RELAXED) == 1) {
        /* a drainer until now, maybe asleep: progress too */
        pthread_cond_signal(&work_posted);
        thread_wake();
        xc_info("progress thread started");
    }
    pthread_mutex_unlock(&big_lock);
    return rc;
}

void xc_progress_thread_stop(void)
{
    pthread_mutex_lock(&big_lock);
    if (thread_users == 0 || __atomic_sub_fetch(&thread_users, 1, __ATOMIC_RELAXED) > 0) {
        pthread_mutex_unlock(&big_lock);
        return;
    }
    pthread_mutex_unlock(&big_lock);
    xc_info("progress thread stopped%s", drain_head != NULL ? " (the drainer goes on)" : "");
    xc_thread_stop_unused();
}

xcoll_status_t xc_drain_start(xcoll_comm_t comm)
{
    xcoll_status_t rc;
    pthread_once(&lock_once, lock_init);
    pthread_mutex_lock(&big_lock);
    rc = thread_start();
    if (rc == XCOLL_OK) {
        comm->next_drain = drain_head;
        drain_head = comm;
        pthread_cond_signal(&work_posted);
    }
    pthread_mutex_unlock(&big_lock);
    return rc;
}

void xc_drain_remove(xcoll_comm_t comm)
{
    struct xcoll_comm_s **p;
    int locked = xc_lock();
    for (p = &drain_head; *p != NULL && *p != comm; p = &(*p)->next_drain)
        ;
    if (*p != NULL) {
        *p = comm->next_drain;
        comm->next_drain = NULL;
    }
    xc_unlock(locked);
}
