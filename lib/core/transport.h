/* What the engine needs from a transport: tagged nonblocking send/recv to
 * the ranks of one communicator, completion tests and progress. UCX
 * (lib/ucx) implements it for real jobs; the loopback transport in
 * test/sim implements it for many virtual ranks in one process. */
#ifndef XC_TRANSPORT_H
#define XC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include "dtype.h"
#include "xcoll.h"

struct xc_topo;

/* A reduction that a receive performs as its message lands: when the
 * receive completes, dst = a op message (message op a if msg_left),
 * element by element. dst may be a, or the receive's buffer; otherwise
 * none of the three overlap. */
typedef struct {
    void *dst;
    const void *a;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    int msg_left;
} xc_land_reduce_t;

/* What an irecv_reduce does with each piece of the message it has: bytes
 * [off, off + n) of the message, at msg, whole elements. */
static inline void xc_land_reduce_apply(const xc_land_reduce_t *red, size_t off, const void *msg,
                                        size_t n)
{
    const char *a = (const char *)red->a + off;
    char *dst = (char *)red->dst + off;
    size_t count = n / xcoll_dtype_size(red->dtype);
    if (red->msg_left)
        xc_reduce(dst, msg, a, count, red->dtype, red->op);
    else
        xc_reduce(dst, a, msg, count, red->dtype, red->op);
}

/* What a sleeping rank waits on (see arm/sleep below): event fds (UCX's,
 * and a doorbell that shared memory rings where a wait depends on both),
 * or futex words in shared memory with the values they had when armed. */
#define XC_WAIT_WORDS 16
typedef struct {
    int fd;                           /* -1: none */
    int fd2;                          /* a second one, or -1 */
    unsigned nwords;
    uint32_t *word[XC_WAIT_WORDS];
    uint32_t val[XC_WAIT_WORDS];
    unsigned max_us;                  /* the transport's cap on one sleep */
} xc_wait_t;

typedef struct xc_transport {
    const char *name;

    /* Collective over the bootstrap: connect to every rank. topo (which
     * ranks share a machine: topo->host_of) outlives *tl_comm, the
     * transport's per-communicator state. */
    xcoll_status_t (*comm_init)(const xcoll_bootstrap_t *boot, const struct xc_topo *topo,
                                void **tl_comm);
    void (*comm_fini)(void *tl_comm);

    /* Post a send / receive of len bytes to / from rank peer with a full
     * 64-bit tag. On XCOLL_OK *req is a handle to test, or NULL when the
     * operation already completed. buf must stay valid until completion. */
    xcoll_status_t (*isend)(void *tl_comm, int peer, uint64_t tag, const void *buf, size_t len,
                            void **req);
    xcoll_status_t (*irecv)(void *tl_comm, int peer, uint64_t tag, void *buf, size_t len,
                            void **req);

    /* Optional (NULL = no). A receive that also reduces (see
     * xc_land_reduce_t, copied): a transport that reads the sender's memory
     * reduces from it piece by piece through a cache-sized buffer, so the
     * message is never written out whole (one pass over memory fewer); buf
     * is scratch it may land the message in instead. Host memory only.
     * XCOLL_DECLINED: nothing was posted (say, the peer is on another
     * node); the engine then posts irecv and reduces itself. */
    xcoll_status_t (*irecv_reduce)(void *tl_comm, int peer, uint64_t tag, void *buf, size_t len,
                                   const xc_land_reduce_t *red, void **req);

    /* XCOLL_INPROGRESS, or the final status: then req has been released.
     * A receive that got a different length than posted is XCOLL_ERR_TRUNCATED. */
    xcoll_status_t (*test)(void *tl_comm, void *req);

    /* Abandon an operation that has not completed (after a timeout) and
     * release req. */
    void (*cancel)(void *tl_comm, void *req);

    /* Make progress on everything in flight in this process; returns the
     * number of events handled (0 when idle). */
    int (*progress)(void *tl_comm);

    /* Optional (NULL = no). 1 if isend/irecv take device (and managed)
     * memory themselves, as a CUDA-aware UCX does; otherwise the engine
     * stages device data through pinned host memory. */
    int (*device_memory)(void *tl_comm);

    /* Called when progress found nothing `idle_rounds` times in a row: let
     * other processes have the core, for at most about max_wait_us. */
    void (*idle)(void *tl_comm, unsigned idle_rounds, unsigned max_wait_us);

    /* Optional (NULL = the caller naps instead). Sleeping until a peer's
     * message arrives, in three parts, so that the progress thread can
     * sleep with its lock let go while callers post and test:
     * arm (after progress found nothing; under the caller's usual
     * exclusion): prepares the wakeup and fills *w. 0: sleep may begin;
     * > 0: something arrived meanwhile, progress again; < 0: no wakeup here.
     * sleep: blocks until woken or about max_us; reads only *w and the
     * kernel's objects, so other threads may use the transport meanwhile.
     * disarm (after sleep, exclusion again): peers stop waking this rank;
     * process-wide, as the communicator armed may be gone by then. */
    int (*arm)(void *tl_comm, xc_wait_t *w);
    void (*sleep)(const xc_wait_t *w, unsigned max_us);
    void (*disarm)(void);

    /* Optional (NULL = nothing is owed once operations completed). A
     * transport may still owe a peer bytes of a message it reported sent:
     * UCX over TCP keeps the tail of a message whose socket was full in a
     * buffer of its own and writes it only when this process progresses
     * UCX again, while the peer, still in the collective, waits for it.
     * drain progresses that part (process-wide) for request.c's drainer,
     * which calls it only while no operation of the process is active,
     * under the lock: > 0 something moved; 0 nothing did and *w is armed
     * as by arm (sleep on it, lock let go; disarm after); < 0 nothing
     * moved and there is no wakeup (nap). */
    int (*drain)(void *tl_comm, xc_wait_t *w);

    /* Optional (NULL = never): whether this communicator's traffic can
     * leave such bytes behind (UCX over the kernel's TCP to some peer).
     * Communicators spanning nodes are drained anyway; this adds those of
     * one node whose ranks talk over TCP (UCX_TLS=tcp, or containers
     * that share a host name but not shared memory). Called once after a
     * successful comm_init, without the lock: reads what comm_init set. */
    int (*owes_tails)(void *tl_comm);

    /* Optional (NULL = never known). A lost peer: the transport gave up on
     * its connection (the process or node died, or the network to it), so
     * a receive from it will never complete. lost_count: how many
     * connections this process has lost so far (never decreases; 0 lets
     * callers skip asking about peers); peer_lost: why the connection to
     * peer was lost, or NULL while it is fine. peer_left (optional too):
     * 1 if that lost peer said goodbye first: its process destroyed its
     * communicators with this one in order, so it owes nothing to a
     * collective it finished (one that waits for its data still fails). */
    unsigned (*lost_count)(void *tl_comm);
    const char *(*peer_lost)(void *tl_comm, int peer);
    int (*peer_left)(void *tl_comm, int peer);
} xc_transport_t;

/* The UCX transport (lib/ucx/ucx_transport.c). */
extern const xc_transport_t xc_ucx_transport;

/* How long its idle back-off spins, then yields, before it sleeps (us):
 * the shared-memory transport's waits that depend on UCX too follow it
 * (over the kernel's TCP a waiting rank does not spin: its peers' bytes
 * need the same cores). */
void xc_ucx_backoff(unsigned *spin_us, unsigned *yield_us);

/* Shared memory between the ranks of one node, UCX to the others
 * (lib/shm/shm_transport.c); with XCOLL_SHM=0 everything goes to UCX. */
extern const xc_transport_t xc_shm_transport;

/* From how many bytes its single-copy messages are split copies, unless
 * XCOLL_SHM_SPLIT_MIN says otherwise (the cost model's params.split
 * follows it). */
#define XC_SPLIT_MIN_DEFAULT ((size_t)131072)

#endif
