/* Pipelined chain broadcast: root -> root+1 -> ... -> root-1 (mod size),
 * the message cut into segments so that every link is busy at once. With
 * S segments of n/S bytes the last rank has the data after
 * (size - 2 + S) segment times: for large n that approaches n/B, whatever
 * the rank count, where a binomial tree needs log2(size) n/B. */
#include <stdlib.h>

#include "coll.h"
#include "log.h"

/* Largest segment: as in ring.c, big enough that a message's fixed cost is
 * small next to its transfer, small enough to stay in cache. */
#define CHAIN_SEGMENT_BYTES ((size_t)128 * 1024)

/* Smallest segment we cut down to so that a message of a few hundred KiB
 * still fills a long chain: the pipeline needs about size-1 segments before
 * the last link starts, so more of them shorten the fill time, until the
 * per-message cost dominates. */
#define CHAIN_MIN_SEGMENT_BYTES ((size_t)16 * 1024)

/* At most this many segments per link of the chain: the pipeline takes
 * (size - 2 + S) segment times, so S = 4 (size - 1) keeps the fill under
 * 20%, and segments of big messages stay big (each is a rendezvous and a
 * page pinning; on 2 ranks 128 KiB segments cost ~1.4x at 16 MiB). */
#define CHAIN_SEGMENTS_PER_LINK 4

/* Message k on a link waits for message k - CHAIN_WINDOW on it: at most
 * that many in flight, and messages whose tag slots wrap to equal values
 * are posted in order (the window divides the slot range). */
#define CHAIN_WINDOW 64

static int chain_nseg(size_t bytes, int size)
{
    size_t n = (bytes + CHAIN_SEGMENT_BYTES - 1) / CHAIN_SEGMENT_BYTES;
    size_t fill = (bytes + CHAIN_MIN_SEGMENT_BYTES - 1) / CHAIN_MIN_SEGMENT_BYTES;
    if (n > CHAIN_SEGMENTS_PER_LINK * ((size_t)size - 1))
        n = CHAIN_SEGMENTS_PER_LINK * ((size_t)size - 1);
    if (fill > (size_t)size - 1)
        fill = (size_t)size - 1;
    if (n < fill)
        n = fill;
    if (n < 1)
        n = 1;
    return n > (size_t)1 << 24 ? 1 << 24 : (int)n;
}

xcoll_status_t chain_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a)
{
    const int P = a->size, v = (a->rank - a->root + P) % P;
    const size_t count = a->count, ds = s->dsize;
    const int prev = (a->rank - 1 + P) % P, next = (a->rank + 1) % P;
    int nseg, j, *recvs, *sends;

    if (P == 1 || count == 0)
        return s->err;
    nseg = chain_nseg(count * ds, P);
    recvs = malloc((size_t)nseg * sizeof(int));
    sends = malloc((size_t)nseg * sizeof(int));
    if (recvs == NULL || sends == NULL) {
        xc_error("out of memory building a chain schedule (%d segments)", nseg);
        s->err = XCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (j = 0; j < nseg; j++) {
        const size_t off = xc_block_offset(count, nseg, j) * ds;
        const size_t bytes = xc_block_count(count, nseg, j) * ds;
        recvs[j] = -1;
        if (v > 0)
            recvs[j] = xc_recv(s, prev, XC_AT_RECV(off), bytes,
                               XC_DEPS(j >= CHAIN_WINDOW ? recvs[j - CHAIN_WINDOW] : -1));
        if (v < P - 1)
            sends[j] = xc_send(s, next, XC_AT_RECV(off), bytes,
                               XC_DEPS(recvs[j], j >= CHAIN_WINDOW ? sends[j - CHAIN_WINDOW] : -1));
    }
out:
    free(recvs);
    free(sends);
    return s->err;
}
