/* Small blocks are recycled instead of freed: a small collective otherwise
 * spends ~0.1-0.2 us of its ~0.6 us in malloc and free. A few blocks, each
 * at most XC_SPARE_MAX_BYTES, are kept per process (xcoll is single
 * threaded: see request.c's active list); a block remembers its capacity
 * in a header in front of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

#define XC_SPARE_BLOCKS 12
#define XC_SPARE_MAX_BYTES ((size_t)64 * 1024)
#define XC_BLOCK_HEADER 16 /* keeps the block 16-byte aligned, as malloc's */

static void *g_spare[XC_SPARE_BLOCKS];
static unsigned g_nspare;

static size_t block_cap(const void *p)
{
    return *(const size_t *)((const char *)p - XC_BLOCK_HEADER);
}

void *xc_block_get(size_t bytes, int zero)
{
    char *p;
    unsigned i;
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
    free((char *)p - XC_BLOCK_HEADER);
}
