/* Recycled small blocks for the per-call memory of the engine and the
 * request layer (requests, exec state, small scratch). */
#ifndef XC_POOL_H
#define XC_POOL_H

#include <stddef.h>

/* Under AddressSanitizer nothing is recycled (blocks, finished requests),
 * so every use after free is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define XC_POOL_ENABLED 0
#else
#define XC_POOL_ENABLED 1
#endif

/* A block of at least `bytes`, zeroed if `zero`; NULL when out of memory. */
void *xc_block_get(size_t bytes, int zero);

/* Returns a block from xc_block_get (NULL is ignored). */
void xc_block_put(void *p);

/* Frees the large blocks kept for reuse (when the last communicator is
 * destroyed). */
void xc_block_trim(void);

#endif
