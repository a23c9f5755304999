/* A schedule: the steps one rank performs for one collective, with the
 * dependencies between them. Algorithms (lib/coll) build schedules; the
 * engine (engine.c) runs them. A schedule names buffers symbolically
 * (send, recv, tmp + byte offset), never by address, so one schedule
 * serves every call with the same shape and is cached.
 *
 * A step starts when every step it depends on has completed; a dependency
 * always names an earlier step, so steps in index order are a valid
 * sequential execution. The k-th send from A to B in A's schedule matches
 * the k-th receive from A in B's schedule. */
#ifndef XC_SCHED_H
#define XC_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include "xcoll.h"

typedef enum {
    XC_BUF_NONE = 0,
    XC_BUF_SEND,  /* the caller's send buffer */
    XC_BUF_RECV,  /* the caller's receive buffer */
    XC_BUF_TMP,   /* scratch the engine allocates: sched->tmp_bytes */
    XC_BUF_COUNT
} xc_buf_t;

typedef struct {
    uint8_t buf;   /* xc_buf_t */
    size_t off;    /* bytes */
} xc_ref_t;

/* A call's stamp: printable text, NUL-padded. */
#define XC_STAMP_BYTES 64

typedef enum {
    XC_STEP_SEND = 0,    /* send bytes at a to peer */
    XC_STEP_RECV,        /* receive bytes from peer into dst */
    XC_STEP_RECV_REDUCE, /* receive into b, then dst = a op b (b op a if msg_left) */
    XC_STEP_COPY,        /* dst = a (memmove) */
    XC_STEP_REDUCE,      /* dst = a op b */
    XC_STEP_DIVIDE,      /* dst /= divisor (finishes AVG) */
    XC_STEP_STAMP,       /* dst = the schedule's stamp (XC_STAMP_BYTES) */
    XC_STEP_CHECK,       /* a = every rank's stamp: fail with XCOLL_ERR_MISMATCH
                            unless all equal this rank's */
    XC_STEP_KIND_COUNT
} xc_step_kind_t;

typedef struct {
    uint8_t kind;       /* xc_step_kind_t */
    uint8_t msg_left;   /* RECV_REDUCE: the message is the left operand */
    uint8_t flags;      /* XC_STEP_F_* */
    int32_t peer;       /* send/recv only */
    uint32_t slot;      /* message ordinal with peer in this direction */
    size_t bytes;
    xc_ref_t a, b, dst;
    uint32_t dep_first; /* into sched->deps */
    uint32_t ndeps;
} xc_step_t;

typedef struct xc_sched {
    xc_step_t *steps;
    uint32_t nsteps, steps_cap;
    uint32_t *deps;
    uint32_t ndeps, deps_cap;
    uint32_t *consumers_first; /* nsteps + 1 offsets into consumers, */
    uint32_t *consumers;       /* the steps that depend on each step;
                                  made by xc_sched_finish for the engine */
    uint32_t *send_slots; /* per peer: sends so far (while building) */
    uint32_t *recv_slots;
    size_t tmp_bytes;
    int rank, size;
    xcoll_dtype_t dtype;
    xcoll_op_t op;
    size_t dsize;         /* element size */
    uint32_t divisor;     /* for XC_STEP_DIVIDE */
    const char *algo;     /* the algorithm's name, for logs */
    /* Composition (one algorithm built from others, e.g. reduce + bcast):
     * while after >= 0 every new step also depends on step `after`, and
     * buffer names are translated through buf_map (identity by default). */
    int after;
    uint8_t buf_map[XC_BUF_COUNT];
    xcoll_status_t err;   /* first error while building */
    /* The call check (xc_sched_add_check): what this rank called, as text,
     * and the step that compares it with every rank's (-1: none). */
    char stamp[XC_STAMP_BYTES];
    int check_step;
} xc_sched_t;

/* A v-variant's block: where it is empty in a call (bytes 0), the step
 * completes at once, no message; its peer's matching step is empty too.
 * So one schedule serves calls whose empty blocks differ. */
#define XC_STEP_F_SKIP_EMPTY 1u

/* Step ids are ints; a negative id in a dependency list means "none", so
 * builders can pass "the previous step, if any" without branching. */
#define XC_NODEPS NULL, 0
#define XC_DEPS(...) ((const int[]){__VA_ARGS__}), \
                     ((int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)))

static inline xc_ref_t xc_ref(xc_buf_t buf, size_t off)
{
    xc_ref_t r;
    r.buf = (uint8_t)buf;
    r.off = off;
    return r;
}
#define XC_AT_SEND(off) xc_ref(XC_BUF_SEND, (off))
#define XC_AT_RECV(off) xc_ref(XC_BUF_RECV, (off))
#define XC_AT_TMP(off)  xc_ref(XC_BUF_TMP, (off))

xcoll_status_t xc_sched_init(xc_sched_t *s, int rank, int size, xcoll_dtype_t dtype,
                             xcoll_op_t op);
void xc_sched_fini(xc_sched_t *s);

/* Reserve bytes of scratch (64-byte aligned); returns its offset in tmp. */
size_t xc_sched_tmp(xc_sched_t *s, size_t bytes);

/* Each returns the new step's id, or -1 after an error (then s->err is set
 * and later calls do nothing, so a builder checks s->err once at the end).
 * A zero-byte send/recv is still a message: it carries synchronisation. */
int xc_send(xc_sched_t *s, int peer, xc_ref_t src, size_t bytes, const int *deps, int ndeps);
int xc_recv(xc_sched_t *s, int peer, xc_ref_t dst, size_t bytes, const int *deps, int ndeps);
int xc_recv_reduce(xc_sched_t *s, int peer, xc_ref_t landing, xc_ref_t a, xc_ref_t dst,
                   size_t bytes, const int *deps, int ndeps);
/* The same with the operands in a given order: dst = a op message if
 * a_left, else message op a (bit-identical results need every rank to
 * combine the same two values in the same order, NaN payloads included). */
int xc_recv_reduce_ordered(xc_sched_t *s, int peer, xc_ref_t landing, xc_ref_t a, xc_ref_t dst,
                           size_t bytes, int a_left, const int *deps, int ndeps);
int xc_copy(xc_sched_t *s, xc_ref_t src, xc_ref_t dst, size_t bytes, const int *deps, int ndeps);
int xc_reduce_local(xc_sched_t *s, xc_ref_t a, xc_ref_t b, xc_ref_t dst, size_t bytes,
                    const int *deps, int ndeps);
int xc_divide_local(xc_sched_t *s, xc_ref_t dst, size_t bytes, const int *deps, int ndeps);

/* A zero-byte local step that completes when every step in
 * [first, nsteps) has; returns its id. Typical composition:
 *     phase1(s, ...); s->after = xc_join(s, 0); phase2(s, ...); s->after = -1; */
int xc_join(xc_sched_t *s, int first);

/* The call check, first in a schedule: every rank's stamp (s->stamp, set
 * by the caller) gathered to every rank (Bruck: ceil(log2 P) messages, the
 * same on every rank whatever it called, so they match even when the
 * calls do not), then a CHECK step. Returns the CHECK step's id for
 * builders to depend on (s->after), -1 on one rank. */
int xc_sched_add_check(xc_sched_t *s);

/* Marks step id XC_STEP_F_SKIP_EMPTY; returns id. */
int xc_skip_if_empty(xc_sched_t *s, int id);

/* Messages larger than this get end-of-collective acknowledgements. UCX
 * sends them by rendezvous from its own threshold on (over TCP at least
 * its 64 KiB send segment, as xcoll sets it), eagerly below it. */
#define XC_ACK_ABOVE_BYTES 8192

/* Appends the end-of-collective acknowledgements: a zero-byte message to
 * every peer this rank received more than `above` bytes from in one
 * message (after all receives from it), and a receive of one from every
 * peer it sent such a message to. A rank whose large sends "completed" may
 * otherwise leave xcoll for MPI while UCX still needs its progress to
 * deliver them (seen with both rendezvous schemes); waiting for the ack
 * keeps it progressing until the receiver holds the data. Both ends derive
 * the same acks from matching sends and receives, so the slots agree.
 * Call after the builder, before xc_sched_finish. */
xcoll_status_t xc_sched_add_acks(xc_sched_t *s, size_t above);

/* Call when the builder is done: frees the build state and derives what
 * the engine needs (each step's consumers). Returns s->err. */
xcoll_status_t xc_sched_finish(xc_sched_t *s);

/* Writes the schedule, one step a line, for teaching and debugging. */
void xc_sched_print(const xc_sched_t *s, void *file /* FILE* */);

#endif
