/* Recursive doubling and halving: log2 rounds of pairwise exchanges between
 * ranks whose (virtual) numbers differ in one bit, for latency-bound sizes.
 *
 * Any rank count: with p2 the largest power of two <= size and rem = size -
 * p2, the ranks r < 2*rem pair up (r even, r+1 odd). The odd one of each
 * pair folds in: it hands its data to r before the rounds and gets the
 * result back after them, so exactly p2 ranks take part in the rounds.
 * Those get virtual ranks v in [0, p2): v = r/2 for the even r < 2*rem,
 * v = r - rem above. Virtual rank v then stands for the real ranks
 * [real(v), real(v+1)) (two below rem, one above), and a range of virtual
 * ranks is a contiguous range of real ranks, so a block-laid-out region of
 * virtual ranks is always one message.
 *
 * Reductions combine the lower rank's data as the left operand, so every
 * element is computed from the same operands in the same order whichever
 * rank computes it.
 *
 * Messages are not segmented: these are for small and medium sizes, and
 * no pair of ranks exchanges more than three messages per direction, so the
 * posting-order window of ring.c (64 per link) never comes into play. */
#include "coll.h"
#include "log.h"

/* Rounds are log2 of a rank count: 2^20 ranks at most (tag.h). */
#define RD_MAX_ROUNDS 32

typedef struct {
    int size, rank;
    int p2, rem;
    int v;      /* virtual rank, or -1 for a rank folded into rank - 1 */
    int extra;  /* 1: rank + 1 folds into this rank */
} fold_t;

static void fold_init(fold_t *f, int size, int rank)
{
    f->size = size;
    f->rank = rank;
    f->p2 = 1;
    while (f->p2 <= size / 2)
        f->p2 <<= 1;
    f->rem = size - f->p2;
    f->extra = 0;
    if (rank < 2 * f->rem) {
        f->v = rank % 2 ? -1 : rank / 2;
        f->extra = rank % 2 == 0;
    } else {
        f->v = rank - f->rem;
    }
}

/* The first real rank virtual rank v stands for; real(p2) = size. */
static int fold_real(const fold_t *f, int v)
{
    return v < f->rem ? 2 * v : v + f->rem;
}

static int ilog2(int p2)
{
    int k = 0;
    while ((1 << k) < p2)
        k++;
    return k;
}

/* size == 1: the result is the input. */
static xcoll_status_t single_rank(xc_sched_t *s, const xc_coll_args_t *a, size_t bytes)
{
    int cp = -1;
    if (!a->in_place)
        cp = xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(0), bytes, XC_NODEPS);
    if (a->op == XCOLL_AVG)
        xc_divide_local(s, XC_AT_RECV(0), bytes, XC_DEPS(cp));
    return s->err;
}

/* dst = lower op higher, where `mine_lower` says whether this rank's
 * operand is the lower rank's. */
static int reduce_ordered(xc_sched_t *s, int mine_lower, xc_ref_t mine, xc_ref_t theirs,
                          xc_ref_t dst, size_t bytes, const int *deps, int ndeps)
{
    return mine_lower ? xc_reduce_local(s, mine, theirs, dst, bytes, deps, ndeps)
                      : xc_reduce_local(s, theirs, mine, dst, bytes, deps, ndeps);
}

/* Recursive doubling allreduce: in round d (d = 1, 2, .., p2/2) virtual
 * ranks v and v^d swap their whole partial results and both combine them,
 * so after log2 p2 rounds every rank holds the full reduction. Each
 * message is the whole vector: latency-optimal, not bandwidth-optimal. */
xcoll_status_t recdbl_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t bytes = a->count * s->dsize;
    const xc_buf_t in = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    xc_buf_t src = in;
    size_t land;
    int d, last = -1;
    fold_t f;

    if (a->size == 1)
        return single_rank(s, a, bytes);
    fold_init(&f, a->size, a->rank);

    if (f.v < 0) {
        /* in place the result lands on the input being sent: wait for it */
        int sent = xc_send(s, a->rank - 1, xc_ref(in, 0), bytes, XC_NODEPS);
        xc_recv(s, a->rank - 1, XC_AT_RECV(0), bytes, XC_DEPS(sent));
        return s->err;
    }

    land = xc_sched_tmp(s, bytes);
    if (f.extra) {
        last = xc_recv_reduce(s, a->rank + 1, XC_AT_TMP(land), xc_ref(in, 0), XC_AT_RECV(0),
                              bytes, XC_NODEPS);
        src = XC_BUF_RECV;
    }
    for (d = 1; d < f.p2; d <<= 1) {
        const int pv = f.v ^ d, peer = fold_real(&f, pv);
        /* `last` wrote what is sent and read the landing buffer */
        int sent = xc_send(s, peer, xc_ref(src, 0), bytes, XC_DEPS(last));
        if (src != XC_BUF_RECV) {
            /* the send reads the input, the result goes to RECV: one step
             * that reduces as the message lands */
            last = xc_recv_reduce_ordered(s, peer, XC_AT_TMP(land), xc_ref(src, 0),
                                          XC_AT_RECV(0), bytes, f.v < pv, XC_DEPS(last));
        } else {
            int got = xc_recv(s, peer, XC_AT_TMP(land), bytes, XC_DEPS(last));
            /* the result overwrites what is being sent: after the send */
            last = reduce_ordered(s, f.v < pv, xc_ref(src, 0), XC_AT_TMP(land), XC_AT_RECV(0),
                                  bytes, XC_DEPS(sent, got, last));
        }
        src = XC_BUF_RECV;
    }
    if (a->op == XCOLL_AVG)
        last = xc_divide_local(s, XC_AT_RECV(0), bytes, XC_DEPS(last));
    if (f.extra)
        xc_send(s, a->rank + 1, XC_AT_RECV(0), bytes, XC_DEPS(last));
    return s->err;
}

/* Rabenseifner allreduce over p2 virtual ranks and p2 blocks of the vector
 * (xc_block_count(count, p2, b)). Reduce-scatter by recursive halving: a
 * rank's window starts as all blocks; in round d (p2/2 down to 1) it sends
 * the half of its window that v^d keeps and combines the other half with
 * what v^d sends, so each round halves both the window and the message.
 * Virtual rank v ends with block v reduced. Allgather by recursive
 * doubling retraces the rounds (d = 1 up to p2/2), swapping windows that
 * double each round. Each rank sends about 2n bytes in 2 log2 p2 messages. */
xcoll_status_t rabenseifner_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const size_t ds = s->dsize, count = a->count, bytes = count * ds;
    const xc_buf_t in = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    xc_buf_t src = in;
    int gave[RD_MAX_ROUNDS];   /* the halving send of round log2(d) */
    int ready[RD_MAX_ROUNDS + 1], nready = 0;
    int d, k, lo, hi, last = -1;
    size_t land;
    fold_t f;

    if (a->size == 1)
        return single_rank(s, a, bytes);
    fold_init(&f, a->size, a->rank);
#define BOFF(b) (xc_block_offset(count, f.p2, (b)) * ds)

    if (f.v < 0) {
        int sent = xc_send(s, a->rank - 1, xc_ref(in, 0), bytes, XC_NODEPS);
        xc_recv(s, a->rank - 1, XC_AT_RECV(0), bytes, XC_DEPS(sent));
        return s->err;
    }

    /* the largest message in: the folded vector, or the first half-window
     * (block 0 is the largest block, so the lower half is the larger) */
    land = xc_sched_tmp(s, f.extra ? bytes : BOFF(f.p2 / 2));
    if (f.extra) {
        last = xc_recv_reduce(s, a->rank + 1, XC_AT_TMP(land), xc_ref(in, 0), XC_AT_RECV(0),
                              bytes, XC_NODEPS);
        src = XC_BUF_RECV;
    }

    lo = 0, hi = f.p2;
    for (d = f.p2 / 2, k = ilog2(f.p2) - 1; d >= 1; d >>= 1, k--) {
        const int pv = f.v ^ d, peer = fold_real(&f, pv), mid = lo + d;
        const int klo = f.v & d ? mid : lo, khi = f.v & d ? hi : mid; /* kept */
        const int glo = f.v & d ? lo : mid, ghi = f.v & d ? mid : hi; /* given */
        const size_t kbytes = BOFF(khi) - BOFF(klo);
        int got;
        gave[k] = xc_send(s, peer, xc_ref(src, BOFF(glo)), BOFF(ghi) - BOFF(glo), XC_DEPS(last));
        /* Landed, then reduced: as one recv+reduce (reduced as it is read
         * within a node) this was 1.2-1.4x slower at 256 KiB-4 MiB on 2
         * ranks, where recursive doubling's whole-vector exchange got
         * 1.1-1.4x faster the same way; not understood yet. */
        got = xc_recv(s, peer, XC_AT_TMP(land), kbytes, XC_DEPS(last));
        /* writes only the kept half; the send reads the other one */
        last = reduce_ordered(s, f.v < pv, xc_ref(src, BOFF(klo)), XC_AT_TMP(land),
                              XC_AT_RECV(BOFF(klo)), kbytes, XC_DEPS(got, last));
        lo = klo, hi = khi;
        src = XC_BUF_RECV;
    }
    /* block v is complete: AVG divides each element once, here */
    if (a->op == XCOLL_AVG)
        last = xc_divide_local(s, XC_AT_RECV(BOFF(lo)), BOFF(hi) - BOFF(lo), XC_DEPS(last));
    ready[nready++] = last;

    for (d = 1, k = 0; d < f.p2; d <<= 1, k++) {
        const int pv = f.v ^ d, peer = fold_real(&f, pv);
        const int plo = f.v & d ? lo - d : hi, phi = plo + d; /* partner's window */
        xc_send(s, peer, XC_AT_RECV(BOFF(lo)), BOFF(hi) - BOFF(lo), ready, nready);
        /* this region left in halving round k: it must be gone */
        ready[nready++] = xc_recv(s, peer, XC_AT_RECV(BOFF(plo)), BOFF(phi) - BOFF(plo),
                                  XC_DEPS(gave[k]));
        lo = lo < plo ? lo : plo;
        hi = hi > phi ? hi : phi;
    }
    if (f.extra)
        xc_send(s, a->rank + 1, XC_AT_RECV(0), bytes, ready, nready);
#undef BOFF
    return s->err;
}

/* Recursive doubling allgather: in round d (1 up to p2/2) virtual ranks v
 * and v^d swap the blocks each has gathered so far (the real ranks of d
 * virtual ranks), so the gathered range doubles every round. A folded
 * rank's block reaches its partner first and the whole result comes back
 * to it at the end, in two messages around its own block. */
xcoll_status_t recdbl_allgather_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t bn = a->count * s->dsize;
    int ready[RD_MAX_ROUNDS + 2], nready = 0;
    int d, lo, hi;
    fold_t f;

    if (!a->in_place)
        ready[nready++] = xc_copy(s, XC_AT_SEND(0), XC_AT_RECV((size_t)r * bn), bn, XC_NODEPS);
    if (P == 1)
        return s->err;
    fold_init(&f, P, r);

    if (f.v < 0) {
        /* the result arrives around the own block, which is never touched */
        xc_send(s, r - 1, a->in_place ? XC_AT_RECV((size_t)r * bn) : XC_AT_SEND(0), bn,
                XC_NODEPS);
        xc_recv(s, r - 1, XC_AT_RECV(0), (size_t)r * bn, XC_NODEPS);
        xc_recv(s, r - 1, XC_AT_RECV((size_t)(r + 1) * bn), (size_t)(P - r - 1) * bn,
                XC_NODEPS);
        return s->err;
    }
    if (f.extra)
        ready[nready++] = xc_recv(s, r + 1, XC_AT_RECV((size_t)(r + 1) * bn), bn, XC_NODEPS);

    /* window: virtual ranks [lo, hi), real blocks [real(lo), real(hi)) */
    lo = f.v, hi = f.v + 1;
    for (d = 1; d < f.p2; d <<= 1) {
        const int peer = fold_real(&f, f.v ^ d);
        const int plo = f.v & d ? lo - d : hi, phi = plo + d;
        const int rlo = fold_real(&f, lo), rhi = fold_real(&f, hi);
        const int qlo = fold_real(&f, plo), qhi = fold_real(&f, phi);
        xc_send(s, peer, XC_AT_RECV((size_t)rlo * bn), (size_t)(rhi - rlo) * bn, ready, nready);
        /* the partner's blocks: a region nothing here reads or writes yet */
        ready[nready++] = xc_recv(s, peer, XC_AT_RECV((size_t)qlo * bn),
                                  (size_t)(qhi - qlo) * bn, XC_NODEPS);
        lo = lo < plo ? lo : plo;
        hi = hi > phi ? hi : phi;
    }
    if (f.extra) {
        xc_send(s, r + 1, XC_AT_RECV(0), (size_t)(r + 1) * bn, ready, nready);
        xc_send(s, r + 1, XC_AT_RECV((size_t)(r + 2) * bn), (size_t)(P - r - 2) * bn, ready,
                nready);
    }
    return s->err;
}

/* Messages in flight per link and direction in the allgatherv, where one
 * round may carry many blocks to one peer: tags hold the slot mod 256, so
 * two messages 256 slots apart must never be in flight together. */
#define RDV_WINDOW 64

/* Blocks [lo, hi) of an allgatherv but `skip`, sent to or received from
 * peer in block order, one message per non-empty block (both ends know
 * which are empty), each send after deps (the receives before it: no
 * block but the own one is in RECV before it arrives). */
static void v_blocks(xc_sched_t *s, const xc_coll_args_t *a, int is_send, int peer, int lo,
                     int hi, int skip, const int *deps, int ndeps)
{
    int win[RDV_WINDOW], n = 0, b, i, d[RD_MAX_ROUNDS + 3];
    for (i = 0; i < ndeps; i++)
        d[i] = deps[i];
    for (b = lo; b < hi && s->err == XCOLL_OK; b++) {
        /* the own block goes out from SEND, without waiting for its copy */
        const xc_ref_t at = is_send && b == a->rank && !a->in_place
                                ? XC_AT_SEND(0)
                                : XC_AT_RECV(a->rdispls[b] * s->dsize);
        const size_t bytes = a->rcounts[b] * s->dsize;
        if (b == skip || bytes == 0)
            continue;
        d[ndeps] = n >= RDV_WINDOW ? win[n % RDV_WINDOW] : -1;
        win[n % RDV_WINDOW] = is_send ? xc_send(s, peer, at, bytes, d, ndeps + 1)
                                      : xc_recv(s, peer, at, bytes, d + ndeps, 1);
        n++;
    }
}

/* Recursive doubling allgatherv: the rounds of the allgather above, each
 * range of blocks sent as one message per block, since the blocks lie at
 * displacements of each rank's own choosing. A round's sends wait for a
 * join of the receives before them (one dependency per round, not one per
 * block). */
xcoll_status_t recdbl_allgatherv_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t ds = s->dsize;
    int ready[RD_MAX_ROUNDS + 2], nready = 0;
    int d, lo, hi, first;
    fold_t f;

    if (!a->in_place && a->rcounts[r] > 0)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(a->rdispls[r] * ds), a->rcounts[r] * ds, XC_NODEPS);
    if (P == 1)
        return s->err;
    fold_init(&f, P, r);

    if (f.v < 0) {
        /* the whole result comes back from r - 1, around the own block */
        v_blocks(s, a, 1, r - 1, r, r + 1, -1, XC_NODEPS);
        v_blocks(s, a, 0, r - 1, 0, P, r, XC_NODEPS);
        return s->err;
    }
    if (f.extra) {
        first = (int)s->nsteps;
        v_blocks(s, a, 0, r + 1, r + 1, r + 2, -1, XC_NODEPS);
        if ((int)s->nsteps > first)
            ready[nready++] = xc_join(s, first);
    }
    lo = f.v, hi = f.v + 1;
    for (d = 1; d < f.p2; d <<= 1) {
        const int peer = fold_real(&f, f.v ^ d);
        const int plo = f.v & d ? lo - d : hi, phi = plo + d;
        v_blocks(s, a, 1, peer, fold_real(&f, lo), fold_real(&f, hi), -1, ready, nready);
        first = (int)s->nsteps;
        v_blocks(s, a, 0, peer, fold_real(&f, plo), fold_real(&f, phi), -1, XC_NODEPS);
        if ((int)s->nsteps > first)
            ready[nready++] = xc_join(s, first);
        lo = lo < plo ? lo : plo;
        hi = hi > phi ? hi : phi;
    }
    if (f.extra)
        v_blocks(s, a, 1, r + 1, 0, P, r + 1, ready, nready);
    return s->err;
}

/* Recursive halving reduce_scatter: as Rabenseifner's first half, over the
 * size input blocks (count elements each) grouped by virtual rank: in round
 * d a rank sends the input blocks of the half of its window that v^d keeps.
 * Virtual rank v ends with the blocks of its real ranks reduced and hands a
 * folded rank its block. */
xcoll_status_t rechalving_reduce_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t bn = a->count * s->dsize;
    const xc_buf_t in = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    /* out of place RECV holds one block: partial sums live in scratch */
    xc_buf_t acc = a->in_place ? XC_BUF_RECV : XC_BUF_TMP;
    size_t acc_off = 0, land;
    xc_buf_t src = in;
    int d, lo, hi, last = -1;
    fold_t f;

    if (P == 1)
        return single_rank(s, a, bn);
    fold_init(&f, P, r);
#define ROFF(v) ((size_t)fold_real(&f, (v)) * bn) /* byte offset of virtual rank v's blocks */

    if (f.v < 0) {
        int sent = xc_send(s, r - 1, xc_ref(in, 0), (size_t)P * bn, XC_NODEPS);
        xc_recv(s, r - 1, XC_AT_RECV(a->in_place ? (size_t)r * bn : 0), bn, XC_DEPS(sent));
        return s->err;
    }

    if (!a->in_place)
        acc_off = xc_sched_tmp(s, (size_t)P * bn);
    {
        size_t lower = ROFF(f.p2 / 2) - ROFF(0), upper = ROFF(f.p2) - ROFF(f.p2 / 2);
        land = xc_sched_tmp(s, f.extra ? (size_t)P * bn : lower > upper ? lower : upper);
    }
    if (f.extra) {
        last = xc_recv_reduce(s, r + 1, XC_AT_TMP(land), xc_ref(in, 0), xc_ref(acc, acc_off),
                              (size_t)P * bn, XC_NODEPS);
        src = acc;
    }

    lo = 0, hi = f.p2;
    for (d = f.p2 / 2; d >= 1; d >>= 1) {
        const int pv = f.v ^ d, peer = fold_real(&f, pv), mid = lo + d;
        const int klo = f.v & d ? mid : lo, khi = f.v & d ? hi : mid;
        const int glo = f.v & d ? lo : mid, ghi = f.v & d ? mid : hi;
        const size_t kbytes = ROFF(khi) - ROFF(klo);
        xc_send(s, peer, xc_ref(src, (src == acc ? acc_off : 0) + ROFF(glo)),
                ROFF(ghi) - ROFF(glo), XC_DEPS(last));
        /* the kept half is reduced as it lands; the send reads the other */
        last = xc_recv_reduce_ordered(s, peer, XC_AT_TMP(land),
                                      xc_ref(src, (src == acc ? acc_off : 0) + ROFF(klo)),
                                      xc_ref(acc, acc_off + ROFF(klo)), kbytes, f.v < pv,
                                      XC_DEPS(last));
        lo = klo, hi = khi;
        src = acc;
    }
    /* the blocks of this rank and of the rank folded into it */
    if (a->op == XCOLL_AVG)
        last = xc_divide_local(s, xc_ref(acc, acc_off + ROFF(lo)), ROFF(hi) - ROFF(lo),
                               XC_DEPS(last));
    if (!a->in_place)
        xc_copy(s, xc_ref(acc, acc_off + (size_t)r * bn), XC_AT_RECV(0), bn, XC_DEPS(last));
    if (f.extra)
        xc_send(s, r + 1, xc_ref(acc, acc_off + (size_t)(r + 1) * bn), bn, XC_DEPS(last));
#undef ROFF
    return s->err;
}
