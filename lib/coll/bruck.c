/* Bruck's algorithms: ceil(log2 size) rounds for any rank count, at the
 * price of local rotations. Both work on a copy of the data indexed
 * relative to the rank (index i stands for rank (rank + i) mod size), so
 * that every rank does the same thing to the same indices and round k
 * talks to the ranks 2^k away.
 *
 * Allgather: index i of the work buffer ends holding the block of rank
 * rank + i. In round k (d = 2^k) a rank sends its first min(d, size - d)
 * indices to rank - d and receives as many from rank + d at index d, so
 * after round k it holds indices [0, min(2d, size)). A final rotation puts
 * the blocks at their ranks' places.
 *
 * Alltoall: index i starts as the block for rank + i. In round k every
 * block whose index has bit k set moves to rank + 2^k, keeping its index;
 * a block thus travels i = (destination - source) mod size ranks in the
 * binary steps of i and arrives at index i, so at the end index i holds the
 * block from rank - i. Blocks of one round are packed into one message.
 *
 * The peers of different rounds differ (2^k < size), so every link carries
 * one message per direction. */
#include <stdlib.h>

#include "coll.h"
#include "log.h"

/* Rounds: ceil(log2 size) <= 20 for the tag's 20-bit rank field. */
#define BRUCK_MAX_ROUNDS 32

xcoll_status_t bruck_allgather_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t bn = a->count * s->dsize;
    const xc_ref_t own = a->in_place ? XC_AT_RECV((size_t)r * bn) : XC_AT_SEND(0);
    int got[BRUCK_MAX_ROUNDS + 1], ngot = 0;
    size_t work;
    int d;

    if (!a->in_place)
        xc_copy(s, XC_AT_SEND(0), XC_AT_RECV((size_t)r * bn), bn, XC_NODEPS);
    if (P == 1)
        return s->err;

    work = xc_sched_tmp(s, (size_t)P * bn);
    got[ngot++] = xc_copy(s, own, XC_AT_TMP(work), bn, XC_NODEPS);
    for (d = 1; d < P; d <<= 1) {
        const size_t n = (size_t)(d < P - d ? d : P - d) * bn;
        /* what goes out arrived in earlier rounds; what comes in lands
         * past it, where nothing reads */
        xc_send(s, (r - d + P) % P, XC_AT_TMP(work), n, got, ngot);
        got[ngot++] = xc_recv(s, (r + d) % P, XC_AT_TMP(work + (size_t)d * bn), n, XC_NODEPS);
    }
    /* index i -> block r + i: indices [1, P - r) are blocks (r, P), the
     * rest wrap to blocks [0, r) */
    xc_copy(s, XC_AT_TMP(work + bn), XC_AT_RECV((size_t)(r + 1) * bn),
            (size_t)(P - r - 1) * bn, got, ngot);
    if (r > 0)
        xc_copy(s, XC_AT_TMP(work + (size_t)(P - r) * bn), XC_AT_RECV(0), (size_t)r * bn, got,
                ngot);
    return s->err;
}

/* How many indices i < P have the bit d set: they come in runs of d,
 * [j*2d + d, (j+1)*2d). */
static size_t bit_count(int P, int d)
{
    size_t n = 0;
    int lo;
    for (lo = d; lo < P; lo += 2 * d)
        n += (size_t)((lo + d < P ? lo + d : P) - lo);
    return n;
}

xcoll_status_t bruck_alltoall_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, r = a->rank;
    const size_t bn = a->count * s->dsize;
    const xc_buf_t in = a->in_place ? XC_BUF_RECV : XC_BUF_SEND;
    size_t work, out_stage, in_stage, most = 0;
    const int start = (int)s->nsteps;
    int d, i, rotated, unpacked = -1, sent = -1, first, done;

    if (P == 1) {
        if (!a->in_place)
            xc_copy(s, XC_AT_SEND(0), XC_AT_RECV(0), bn, XC_NODEPS);
        return s->err;
    }
    for (d = 1; d < P; d <<= 1)
        if (bit_count(P, d) > most)
            most = bit_count(P, d);
    work = xc_sched_tmp(s, (size_t)P * bn);
    out_stage = xc_sched_tmp(s, most * bn);
    in_stage = xc_sched_tmp(s, most * bn);

    /* rotate: index i = the block for rank r + i */
    first = (int)s->nsteps;
    xc_copy(s, xc_ref(in, (size_t)r * bn), XC_AT_TMP(work), (size_t)(P - r) * bn, XC_NODEPS);
    if (r > 0)
        xc_copy(s, xc_ref(in, 0), XC_AT_TMP(work + (size_t)(P - r) * bn), (size_t)r * bn,
                XC_NODEPS);
    rotated = xc_join(s, first);

    for (d = 1; d < P; d <<= 1) {
        const size_t n = bit_count(P, d) * bn;
        int lo, packed, got;
        size_t pos;

        /* pack the indices with this bit; some arrived last round, and the
         * staging buffer is free once the last round's send has left */
        first = (int)s->nsteps;
        for (lo = d, pos = 0; lo < P; lo += 2 * d) {
            const size_t run = (size_t)((lo + d < P ? lo + d : P) - lo) * bn;
            xc_copy(s, XC_AT_TMP(work + (size_t)lo * bn), XC_AT_TMP(out_stage + pos), run,
                    XC_DEPS(rotated, unpacked, sent));
            pos += run;
        }
        packed = xc_join(s, first);
        sent = xc_send(s, (r + d) % P, XC_AT_TMP(out_stage), n, XC_DEPS(packed));
        /* the landing area is free once last round's unpack has read it */
        got = xc_recv(s, (r - d + P) % P, XC_AT_TMP(in_stage), n, XC_DEPS(unpacked));
        /* the same indices come back: after they were packed */
        first = (int)s->nsteps;
        for (lo = d, pos = 0; lo < P; lo += 2 * d) {
            const size_t run = (size_t)((lo + d < P ? lo + d : P) - lo) * bn;
            xc_copy(s, XC_AT_TMP(in_stage + pos), XC_AT_TMP(work + (size_t)lo * bn), run,
                    XC_DEPS(got, packed));
            pos += run;
        }
        unpacked = xc_join(s, first);
    }

    /* index i holds the block from rank r - i; in place the rotation read
     * RECV, and everything since is ordered after it */
    done = xc_join(s, start);
    for (i = 0; i < P; i++)
        xc_copy(s, XC_AT_TMP(work + (size_t)i * bn), XC_AT_RECV((size_t)((r - i + P) % P) * bn),
                bn, XC_DEPS(done));
    return s->err;
}
