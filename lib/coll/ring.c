/* Ring algorithms: every rank sends only to its successor and receives only
 * from its predecessor, so each link carries (size-1)/size of the data per
 * phase, which is bandwidth-optimal for large messages.
 *
 * Block b of the data is block b of an allreduce's count (split by
 * xc_block_count) or block b of a reduce_scatter's input (count elements
 * each). Reduce-scatter: at step i rank r sends block r-i-1 and receives
 * block r-i-2, which it combines with its own input; after size-1 steps
 * rank r holds block r fully reduced. Allgather: at step i rank r sends
 * block r-i and receives block r-i-1 (all mod size).
 *
 * Every block is cut into the same number of segments so that segment j+1
 * travels while segment j is being reduced, and so both ends of a link
 * agree on every message length. */
#include <stdlib.h>

#include "coll.h"
#include "log.h"

/* 128 KiB per message: big enough that the fixed cost of a message (a few
 * microseconds of engine and UCX work) stays small next to its transfer
 * time, small enough that a block of a few MiB becomes several segments to
 * overlap, and that a segment and its landing buffer stay in L2 while they
 * are reduced. */
#define RING_SEGMENT_BYTES ((size_t)128 * 1024)

/* ...but at most this many segments per block: segments only overlap the
 * reduction of one with the transfer of the next, which a few do as well as
 * many, while each one costs a rendezvous (RTS, RTR, put, ATP) and a page
 * pinning. Measured on 2 ranks (docs/PERFORMANCE.md): 128 KiB segments
 * made a 16 MiB reduce_scatter about 2x slower than whole blocks. */
#define RING_MAX_SEGMENTS 4

/* Landing buffers per rank for incoming partial sums; a receive into one
 * waits for the reduction that last read it. Four keep a few segments in
 * flight without much scratch. */
#define RING_LANDING_SLOTS 4

/* At most this many messages in flight per link and direction: message k
 * waits for message k - RING_WINDOW to the same peer to complete. The tag
 * holds the slot mod 256, and UCX matches equal tags in posting order, so
 * two messages 256 slots apart must never be posted out of order; a window
 * that divides 256 guarantees it (message k+256 waits, by a chain of
 * windows, for message k). */
#define RING_WINDOW 64

static int window_dep(const int *ids, int k)
{
    return k >= RING_WINDOW ? ids[k - RING_WINDOW] : -1;
}

typedef struct {
    int size, rank;
    size_t count;   /* allreduce: total elements; reduce_scatter: per block */
    int split;      /* 1: blocks split count (allreduce); 0: count each */
    size_t dsize;
    int nseg;       /* segments per block */
} ring_layout_t;

static int mod(int x, int n) { return ((x % n) + n) % n; }

static size_t block_count(const ring_layout_t *L, int b)
{
    return L->split ? xc_block_count(L->count, L->size, b) : L->count;
}

static size_t block_offset(const ring_layout_t *L, int b)
{
    return L->split ? xc_block_offset(L->count, L->size, b) : (size_t)b * L->count;
}

/* Bytes of segment j of block b, and its byte offset within the block. */
static size_t seg_bytes(const ring_layout_t *L, int b, int j)
{
    return xc_block_count(block_count(L, b), L->nseg, j) * L->dsize;
}

static size_t seg_off_in_block(const ring_layout_t *L, int b, int j)
{
    return xc_block_offset(block_count(L, b), L->nseg, j) * L->dsize;
}

/* Byte offset of segment j of block b in a buffer laid out by blocks. */
static size_t seg_off(const ring_layout_t *L, int b, int j)
{
    return block_offset(L, b) * L->dsize + seg_off_in_block(L, b, j);
}

/* Block 0 is the largest, so it fixes the segment count. Declines (as
 * unsupported) a schedule whose step ids would not fit an int. */
static xcoll_status_t layout_init(ring_layout_t *L, xc_sched_t *s, const xc_coll_args_t *a,
                                  int split)
{
    size_t largest;
    L->size = a->size;
    L->rank = a->rank;
    L->count = a->count;
    L->split = split;
    L->dsize = s->dsize;
    largest = block_count(L, 0) * s->dsize;
    L->nseg = 1;
    if (largest > RING_SEGMENT_BYTES) {
        size_t n = (largest + RING_SEGMENT_BYTES - 1) / RING_SEGMENT_BYTES;
        if (n > ((size_t)1 << 28) / (size_t)a->size) {
            xc_error("ring: %zu segments per block over %d ranks is too many steps", n,
                     a->size);
            s->err = XCOLL_ERR_UNSUPPORTED;
            return s->err;
        }
        L->nseg = n > RING_MAX_SEGMENTS ? RING_MAX_SEGMENTS : (int)n;
    }
    return XCOLL_OK;
}

static int *alloc_ids(xc_sched_t *s, size_t n)
{
    int *ids = malloc((n ? n : 1) * sizeof(int));
    if (ids == NULL && s->err == XCOLL_OK) {
        xc_error("out of memory building a ring schedule (%zu steps)", n);
        s->err = XCOLL_ERR_NO_MEMORY;
    }
    return ids;
}

/* The reduce-scatter phase, shared by allreduce and reduce_scatter.
 * in: where the input blocks are (laid out by blocks).
 * acc_in_recv: partial results accumulate in RECV, laid out like the input
 *   (allreduce, and in-place reduce_scatter), and block `rank` ends there;
 *   otherwise (out-of-place reduce_scatter, whose RECV holds one block) they
 *   live in two block-sized scratch buffers used by alternate steps, and the
 *   last step writes RECV+0.
 * Fills sends[k] and reduces[k] for k = step * nseg + segment; both arrays
 * continue into the allgather phase (message k with a peer is entry k). */
static void reduce_scatter_phase(xc_sched_t *s, const ring_layout_t *L, xc_buf_t in,
                                 int acc_in_recv, int *sends, int *reduces)
{
    const int P = L->size, r = L->rank, nseg = L->nseg;
    const int next = xc_ring_next(r, P), prev = xc_ring_prev(r, P);
    const size_t seg_max = xc_block_count(block_count(L, 0), nseg, 0) * L->dsize;
    const size_t block_max = block_count(L, 0) * L->dsize;
    const int nrecv = (P - 1) * nseg;
    const int nland = nrecv < RING_LANDING_SLOTS ? nrecv : RING_LANDING_SLOTS;
    size_t land = 0, acc = 0;
    int i, j;

    if (acc_in_recv)
        land = xc_sched_tmp(s, (size_t)nland * seg_max);
    else
        acc = xc_sched_tmp(s, 2 * block_max);

    for (i = 0; i < P - 1; i++) {
        const int sb = mod(r - i - 1, P), rb = mod(r - i - 2, P);
        for (j = 0; j < nseg; j++) {
            const int k = i * nseg + j;
            xc_ref_t src, landing, dst;
            int dep = -1;

            /* send: raw input at step 0, then what the last step reduced */
            if (i == 0)
                src = xc_ref(in, seg_off(L, sb, j));
            else if (acc_in_recv)
                src = XC_AT_RECV(seg_off(L, sb, j));
            else
                src = XC_AT_TMP(acc + (size_t)((i - 1) % 2) * block_max +
                                seg_off_in_block(L, sb, j));
            if (i > 0)
                dep = reduces[k - nseg];
            sends[k] = xc_send(s, next, src, seg_bytes(L, sb, j),
                               XC_DEPS(dep, window_dep(sends, k)));

            /* receive and combine with this rank's own input of that block */
            if (acc_in_recv) {
                landing = XC_AT_TMP(land + (size_t)(k % nland) * seg_max);
                dst = XC_AT_RECV(seg_off(L, rb, j));
                /* the landing buffer is free once its last reduction ran */
                dep = k >= nland ? reduces[k - nland] : -1;
            } else {
                /* land straight in this step's accumulator (a reduction
                 * may overwrite its operand); the send of step i-1 read
                 * this buffer, filled at step i-2, and must have left */
                landing = XC_AT_TMP(acc + (size_t)(i % 2) * block_max +
                                    seg_off_in_block(L, rb, j));
                dst = i == P - 2 ? XC_AT_RECV(seg_off_in_block(L, rb, j)) : landing;
                dep = i > 0 ? sends[k - nseg] : -1;
            }
            reduces[k] = xc_recv_reduce(s, prev, landing, xc_ref(in, seg_off(L, rb, j)), dst,
                                        seg_bytes(L, rb, j), XC_DEPS(dep, window_dep(reduces, k)));
        }
    }
}

xcoll_status_t ring_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const xc_buf_t in = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    const size_t bytes = a->count * s->dsize;
    ring_layout_t L;
    int *sends, *recvs, *ready;
    int i, j, nseg, nrs, next, prev;

    if (P == 1) {
        int cp = -1;
        if (!a->in_place)
            cp = xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(0), bytes, XC_NODEPS);
        if (a->op == XCOLL_AVG)
            xc_divide_local(s, XC_AT_RECV(0), bytes, XC_DEPS(cp));
        return s->err;
    }

    if (layout_init(&L, s, a, 1) != XCOLL_OK)
        return s->err;
    nseg = L.nseg;
    next = xc_ring_next(r, P);
    prev = xc_ring_prev(r, P);
    nrs = (P - 1) * nseg;
    /* one entry per message with each peer: reduce-scatter, then allgather */
    sends = alloc_ids(s, 2 * (size_t)nrs);
    recvs = alloc_ids(s, 2 * (size_t)nrs);
    ready = alloc_ids(s, (size_t)nseg);
    if (s->err != XCOLL_OK)
        goto out;

    /* Out of place the first reduction reads SEND and writes RECV, so the
     * input is never copied. */
    reduce_scatter_phase(s, &L, in, 1, sends, recvs);

    /* Block r is complete: finish AVG here, where each element is divided
     * exactly once, before it is passed around. */
    for (j = 0; j < nseg; j++) {
        ready[j] = recvs[(P - 2) * nseg + j];
        if (a->op == XCOLL_AVG)
            ready[j] = xc_divide_local(s, XC_AT_RECV(seg_off(&L, r, j)), seg_bytes(&L, r, j),
                                       XC_DEPS(ready[j]));
    }

    for (i = 0; i < P - 1; i++) {
        const int sb = mod(r - i, P), rb = mod(r - i - 1, P);
        for (j = 0; j < nseg; j++) {
            const int k = i * nseg + j, m = nrs + k; /* message m with each peer */
            int dep = i == 0 ? ready[j] : recvs[m - nseg];
            sends[m] = xc_send(s, next, XC_AT_RECV(seg_off(&L, sb, j)), seg_bytes(&L, sb, j),
                               XC_DEPS(dep, window_dep(sends, m)));
            /* Block rb was read by the reduce-scatter send of the same step
             * and segment; it must have left before it is overwritten. */
            recvs[m] = xc_recv(s, prev, XC_AT_RECV(seg_off(&L, rb, j)), seg_bytes(&L, rb, j),
                               XC_DEPS(sends[k], window_dep(recvs, m)));
        }
    }
out:
    free(sends);
    free(recvs);
    free(ready);
    return s->err;
}

xcoll_status_t ring_reduce_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t bytes = a->count * s->dsize;
    ring_layout_t L;
    int *sends, *reduces, j;
    size_t own;

    if (P == 1) {
        int cp = -1;
        if (!a->in_place)
            cp = xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(0), bytes, XC_NODEPS);
        if (a->op == XCOLL_AVG)
            xc_divide_local(s, XC_AT_RECV(0), bytes, XC_DEPS(cp));
        return s->err;
    }

    if (layout_init(&L, s, a, 0) != XCOLL_OK)
        return s->err;
    sends = alloc_ids(s, (size_t)(P - 1) * (size_t)L.nseg);
    reduces = alloc_ids(s, (size_t)(P - 1) * (size_t)L.nseg);
    if (s->err == XCOLL_OK) {
        /* In place the input is RECV and the result stays in block r, so
         * RECV itself accumulates; out of place RECV holds only the result. */
        reduce_scatter_phase(s, &L, a->in_place ? XC_BUF_RECV : XC_BUF_SEND, a->in_place, sends,
                             reduces);
        own = a->in_place ? seg_off(&L, r, 0) : 0;
        if (a->op == XCOLL_AVG)
            for (j = 0; j < L.nseg; j++)
                xc_divide_local(s, XC_AT_RECV(own + seg_off_in_block(&L, r, j)),
                                seg_bytes(&L, r, j), XC_DEPS(reduces[(P - 2) * L.nseg + j]));
    }
    free(sends);
    free(reduces);
    return s->err;
}

xcoll_status_t ring_allgather_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t bytes = a->count * s->dsize;
    ring_layout_t L;
    int *sends, *recvs, i, j, next, prev;

    if (!a->in_place)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV((size_t)r * bytes), bytes, XC_NODEPS);
    if (P == 1)
        return s->err;

    if (layout_init(&L, s, a, 0) != XCOLL_OK)
        return s->err;
    next = xc_ring_next(r, P);
    prev = xc_ring_prev(r, P);
    sends = alloc_ids(s, (size_t)(P - 1) * (size_t)L.nseg);
    recvs = alloc_ids(s, (size_t)(P - 1) * (size_t)L.nseg);
    if (s->err != XCOLL_OK) {
        free(sends);
        free(recvs);
        return s->err;
    }
    for (i = 0; i < P - 1; i++) {
        const int sb = mod(r - i, P), rb = mod(r - i - 1, P);
        for (j = 0; j < L.nseg; j++) {
            const int k = i * L.nseg + j;
            /* the own block goes out straight from SEND: no wait for the copy */
            xc_ref_t src = i == 0 && !a->in_place ? XC_AT_SEND(seg_off_in_block(&L, sb, j))
                                                  : XC_AT_RECV(seg_off(&L, sb, j));
            sends[k] = xc_send(s, next, src, seg_bytes(&L, sb, j),
                               XC_DEPS(i > 0 ? recvs[k - L.nseg] : -1, window_dep(sends, k)));
            recvs[k] = xc_recv(s, prev, XC_AT_RECV(seg_off(&L, rb, j)), seg_bytes(&L, rb, j),
                               XC_DEPS(window_dep(recvs, k)));
        }
    }
    free(sends);
    free(recvs);
    return s->err;
}

/* Ring allgatherv: as the allgather, block (r - i) goes to the next rank
 * in step i, with each block its own size (rcounts, at rdispls in RECV)
 * and unsegmented. An empty block travels nowhere: every rank knows the
 * counts, so sender and receiver skip the same messages, and the block
 * that would have been forwarded next step is empty too. */
xcoll_status_t ring_allgatherv_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t ds = s->dsize;
    int *sends, *recvs, i, ns = 0, nr = 0, prev_recv = -1, next, prev;

    if (!a->in_place && a->rcounts[r] > 0)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(a->rdispls[r] * ds), a->rcounts[r] * ds, XC_NODEPS);
    if (P == 1)
        return s->err;
    next = xc_ring_next(r, P);
    prev = xc_ring_prev(r, P);
    sends = alloc_ids(s, (size_t)(P - 1));
    recvs = alloc_ids(s, (size_t)(P - 1));
    for (i = 0; i < P - 1 && s->err == XCOLL_OK; i++) {
        const int sb = mod(r - i, P), rb = mod(r - i - 1, P);
        if (a->rcounts[sb] > 0) {
            xc_ref_t src = i == 0 && !a->in_place ? XC_AT_SEND(0)
                                                  : XC_AT_RECV(a->rdispls[sb] * ds);
            /* block sb arrived in the previous step (unless it is our own) */
            sends[ns] = xc_send(s, next, src, a->rcounts[sb] * ds,
                                XC_DEPS(i > 0 ? prev_recv : -1, window_dep(sends, ns)));
            ns++;
        }
        prev_recv = -1;
        if (a->rcounts[rb] > 0) {
            recvs[nr] = xc_recv(s, prev, XC_AT_RECV(a->rdispls[rb] * ds), a->rcounts[rb] * ds,
                                XC_DEPS(window_dep(recvs, nr)));
            prev_recv = recvs[nr++];
        }
    }
    free(sends);
    free(recvs);
    return s->err;
}
