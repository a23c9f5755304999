/* Small blocks are recycled instead of freed: a small collective otherwise
 * spends ~0.1-0.2 us of its ~0.6 us in malloc and free. A few blocks, each
 * at most XC_SPARE_MAX_BYTES, are kept per process (xcoll is single
 * threaded: see request.c's active list), and a few large ones (below); a
 * block remembers its capacity in a header in front of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

#define XC_SPARE_BLOCKS 12
#define XC_SPARE_MAX_BYTES ((size_t)64 * 1024)
#define XC_BLOCK_HEADER 16 /* keeps the block 16-byte aligned, as malloc's */

/* Large blocks (scratch of large collectives) are kept too, a few and at
 * most XC_LARGE_KEEP_BYTES together, until the last communicator goes
 * (xc_block_trim). glibc serves a block of 32 MiB or more with a fresh
 * mmap whatever its thresholds have learnt, so each call paid a page fault
 * per 4 KiB and the zeroing of every page, then munmap: on the EPYC guest
 * of 2026-12-05 a 2-rank allreduce of 64 MiB by rabenseifner (32 MiB of
 * scratch) took 201 ms a call against 17 ms with the scratch kept
 * (docs/PERFORMANCE.md). Kept memory is what one large collective needed
 * once; a job that runs them runs them again. */
#define XC_LARGE_SPARES 2
#define XC_LARGE_KEEP_BYTES ((size_t)512 << 20)
/* Smaller blocks come from malloc's heap without faults once it has grown;
 * a kept block is handed out only for at least a quarter of its size, so a
 * small call does not hold the block a large one needs. */
#define XC_LARGE_MIN_BYTES ((size_t)1 << 20)
#define XC_LARGE_SLACK 4

static void *g_spare[XC_SPARE_BLOCKS];
static unsigned g_nspare;
static void *g_large[XC_LARGE_SPARES];

static size_t block_cap(const void *p)
{
    return *(const size_t *)((const char *)p - XC_BLOCK_HEADER);
}

static size_t large_kept(void)
{
    size_t n = 0;
    for (unsigned i = 0; i < XC_LARGE_SPARES; i++)
        n += g_large[i] != NULL ? block_cap(g_large[i]) : 0;
    return n;
}

/* The smallest kept large block that holds bytes (and is not over
 * XC_LARGE_SLACK times that), taken off the list. */
static char *large_take(size_t bytes)
{
    unsigned i, best = XC_LARGE_SPARES;
    char *p;
    for (i = 0; i < XC_LARGE_SPARES; i++)
        if (g_large[i] != NULL && block_cap(g_large[i]) >= bytes &&
            block_cap(g_large[i]) / XC_LARGE_SLACK <= bytes &&
            (best == XC_LARGE_SPARES || block_cap(g_large[i]) < block_cap(g_large[best])))
            best = i;
    if (best == XC_LARGE_SPARES)
        return NULL;
    p = g_large[best];
    g_large[best] = NULL;
    return p;
}

/* Keeps p if it fits beside the kept blocks at least as large as it,
 * freeing smaller ones (smallest first) only then; 0 if p is not kept. */
static int large_keep(void *p)
{
    size_t cap = block_cap(p), stay = 0;
    unsigned i, room = 0;
    if (cap < XC_LARGE_MIN_BYTES || cap > XC_LARGE_KEEP_BYTES)
        return 0;
    for (i = 0; i < XC_LARGE_SPARES; i++) {
        if (g_large[i] == NULL || block_cap(g_large[i]) < cap)
            room++; /* a free slot, or one that may be freed for p */
        else
            stay += block_cap(g_large[i]);
    }
    if (room == 0 || stay + cap > XC_LARGE_KEEP_BYTES)
        return 0;
    for (;;) {
        unsigned hole = XC_LARGE_SPARES, small = XC_LARGE_SPARES;
        for (i = 0; i < XC_LARGE_SPARES; i++) {
            if (g_large[i] == NULL)
                hole = i;
            else if (block_cap(g_large[i]) < cap &&
                     (small == XC_LARGE_SPARES ||
                      block_cap(g_large[i]) < block_cap(g_large[small])))
                small = i;
        }
        if (hole < XC_LARGE_SPARES && large_kept() + cap <= XC_LARGE_KEEP_BYTES) {
            g_large[hole] = p;
            return 1;
        }
        /* checked above: freeing every smaller one makes p fit */
        free((char *)g_large[small] - XC_BLOCK_HEADER);
        g_large[small] = NULL;
    }
}

void *xc_block_get(size_t bytes, int zero)
{
    char *p;
    unsigned i;
    if (XC_POOL_ENABLED && bytes > XC_SPARE_MAX_BYTES && (p = large_take(bytes)) != NULL) {
        if (zero)
            memset(p, 0, bytes);
        return p;
    }
    if (XC_POOL_ENABLED && bytes <= XC_SPARE_MAX_BYTES) {
        for (i = g_nspare; i-- > 0;) {
            if (block_cap(g_spare[i]) < bytes)
                continue;
            p = g_spare[i];
            g_spare[i] = g_spare[--g_nspare];
            if (zero)
                memset(p, 0, bytes);
            return p;
        }
    }
    p = zero ? calloc(1, bytes + XC_BLOCK_HEADER) : malloc(bytes + XC_BLOCK_HEADER);
    if (p == NULL)
        return NULL;
    *(size_t *)p = bytes;
    return p + XC_BLOCK_HEADER;
}

void xc_block_put(void *p)
{
    if (p == NULL)
        return;
    if (XC_POOL_ENABLED && block_cap(p) <= XC_SPARE_MAX_BYTES && g_nspare < XC_SPARE_BLOCKS) {
        g_spare[g_nspare++] = p;
        return;
    }
    if (XC_POOL_ENABLED && block_cap(p) > XC_SPARE_MAX_BYTES && large_keep(p))
        return;
    free((char *)p - XC_BLOCK_HEADER);
}

void xc_block_trim(void)
{
    for (unsigned i = 0; i < XC_LARGE_SPARES; i++) {
        if (g_large[i] != NULL)
            free((char *)g_large[i] - XC_BLOCK_HEADER);
        g_large[i] = NULL;
    }
}
