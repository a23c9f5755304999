/* The one engine that runs every schedule over a transport. An exec is one
 * run of a schedule on one rank: bound buffers and per-step state. */
#ifndef XC_ENGINE_H
#define XC_ENGINE_H

#include "gpu.h"
#include "schedule.h"
#include "transport.h"

typedef enum {
    XC_STATE_WAITING = 0, /* dependencies not complete */
    XC_STATE_RUNNING,     /* posted to the transport */
    XC_STATE_REDUCING,    /* a recv+reduce posted to irecv_reduce: the
                             transport does the reduction too */
    XC_STATE_DONE
} xc_step_state_t;

typedef struct xc_exec {
    const xc_sched_t *sched;
    void *buf[XC_BUF_COUNT];   /* indexed by xc_buf_t */
    void *tmp_owned;           /* scratch allocated by the engine */
    int tmp_abandoned;         /* steps were cancelled: the transport may still
                                  touch tmp_owned, which is never reused */
    const xc_transport_t *tl;
    void *tl_comm;
    int is_p2p;                /* tag with xc_tag_p2p(user_tag) */
    uint32_t comm_id, seq, user_tag; /* set is_p2p and user_tag after init */
    uint8_t *state;            /* per step, xc_step_state_t */
    void **treq;               /* per step, transport request */
    void *state_mem;           /* one allocation behind state, treq and the queues */
    uint32_t ndone;
    xcoll_status_t status;     /* first error, or XCOLL_OK */
    uint64_t msgs_sent, bytes_sent; /* counted for the simulator's checks */
    /* Device data (see xc_exec_init); gpu is NULL for a host exec. */
    const xc_gpu_backend_t *gpu;
    uint8_t mem[XC_BUF_COUNT]; /* xc_memtype_t of each buffer */
    int tl_device;             /* the transport takes device pointers */
    struct xc_gpu_step *gstep; /* per step: staging block, scratch, event, phase */
    void *gate;                /* event: work the caller queued before the call */
    /* Buffers reached through the caller's pack/unpack (xc_exec_use_layouts);
     * lstage is NULL when there are none. */
    const xcoll_layout_t *layout[XC_BUF_COUNT];
    void **lstage;             /* per step: its staging block while it runs */
} xc_exec_t;

/* How an exec runs on device data (see xc_exec_init). */
typedef struct {
    const xc_gpu_backend_t *gpu;
    xc_memtype_t send_mem, recv_mem; /* the caller's buffers */
    int reserve; /* take every staging and scratch block at init rather than
                    as steps start: needed while a stream hold may be
                    pending (see xc_gpu_holds_pending) */
} xc_exec_device_t;

/* Binds a schedule to buffers and a transport. bufs[XC_BUF_TMP] is ignored:
 * the engine allocates sched->tmp_bytes itself.
 *
 * dev NULL: a host exec. Otherwise x runs on device data: steps on device
 * memory become copies and kernels on the GPU, and, unless the transport
 * takes device pointers, messages from and to device memory go through
 * pinned staging blocks; the scratch buffer is pinned (staged) or device
 * memory. The caller may then set x->gate, an event (x takes it) that must
 * complete before any step starts. */
xcoll_status_t xc_exec_init(xc_exec_t *x, const xc_sched_t *sched, void *sendbuf, void *recvbuf,
                            const xc_transport_t *tl, void *tl_comm, uint32_t comm_id,
                            uint32_t seq, const xc_exec_device_t *dev);

/* After xc_exec_init, before the first progress: the send and/or receive
 * buffer (either may be NULL) is reached only through the layout's pack
 * and unpack, on pooled blocks per step. Host execs only
 * (XCOLL_ERR_UNSUPPORTED for a device exec). */
xcoll_status_t xc_exec_use_layouts(xc_exec_t *x, const xcoll_layout_t *send,
                                   const xcoll_layout_t *recv);

/* Moves bytes from offset src of the receive buffer to its start
 * (overlap allowed), through its layout or on its device if need be: the
 * last act of an in-place reduce_scatter in MPI's layout. */
xcoll_status_t xc_exec_move_recv(xc_exec_t *x, size_t src, size_t bytes);

/* For a device exec: takes now the blocks of every step not yet started,
 * as xc_exec_device_t.reserve does at init; XCOLL_OK for a host exec. Called
 * for every outstanding exec before a stream hold is queued. */
xcoll_status_t xc_exec_gpu_reserve(xc_exec_t *x);

/* One pass: completes what the transport finished, starts what became
 * ready. XCOLL_OK when every step is done, XCOLL_INPROGRESS, or the first
 * error (the exec then stops starting steps). Sets *progressed if anything
 * changed. */
xcoll_status_t xc_exec_progress(xc_exec_t *x, int *progressed);

/* Logs (at error level) the steps still waiting or in flight: which peer,
 * which step, what kind. Used when a timeout expires. */
void xc_exec_log_pending(const xc_exec_t *x, const char *what);

/* The peers of the messages in flight (sends not yet taken, receives not
 * yet arrived), each once, at most max of them: whom this rank waits for.
 * The timeout's census (census.c) tells the other ranks. */
unsigned xc_exec_pending_peers(const xc_exec_t *x, int *peers, unsigned max);

/* Abandons every operation in flight. */
void xc_exec_cancel(xc_exec_t *x);

/* 1 if x may run its schedule again through xc_exec_rerun: a host exec
 * without layouts that finished every step without error. */
int xc_exec_reusable(const xc_exec_t *x);

/* Runs a reusable exec's schedule again on other buffers, keeping its
 * memory (state and scratch): what xc_exec_init would give, without the
 * allocations, for the loop that calls one shape again and again. */
void xc_exec_rerun(xc_exec_t *x, void *sendbuf, void *recvbuf, uint32_t seq);

void xc_exec_fini(xc_exec_t *x);

#endif
