/* The block pool (lib/core/pool.c) as its header promises it: a block of
 * at least the size asked, zeroed when asked; small blocks and up to two
 * large ones (at most 512 MiB together) reused instead of freed, the
 * smallest large one that fits handed out first, and the large ones freed
 * by xc_block_trim. Under AddressSanitizer the pool keeps nothing (so a
 * use after free is still caught): then only the promises about contents
 * are checked. Whether memory went back is read from glibc's count of
 * mmapped bytes: blocks of 32 MiB and more are always mmapped. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pool.h"
#include "check.h"

#define MiB ((size_t)1 << 20)

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

static void test_contents(void)
{
    size_t sizes[] = {1, 100, 64 * 1024, 64 * 1024 + 1, 3 * MiB, 40 * MiB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = xc_block_get(sizes[i], 0);
        check(p != NULL && (uintptr_t)p % 16 == 0, "%zu bytes: a 16-byte aligned block", sizes[i]);
        if (p == NULL)
            continue;
        memset(p, 0xa5, sizes[i]);
        xc_block_put(p);
        /* the same size again, zeroed: a reused block must be cleared */
        p = xc_block_get(sizes[i], 1);
        check(p != NULL && all_zero(p, sizes[i]), "%zu bytes asked zeroed come zeroed", sizes[i]);
        xc_block_put(p);
    }
    xc_block_put(NULL); /* ignored */
    xc_block_trim();
}

#if XC_POOL_ENABLED
/* glibc's count of mmapped bytes; whether it shows ours is probed first
 * (an allocator preloaded, or MALLOC_MMAP_THRESHOLD_ set, hides them) */
static int see_maps;

static size_t mapped(void)
{
    return mallinfo2().hblkhd;
}

static void probe_maps(void)
{
    size_t base = mapped();
    void *p = xc_block_get(40 * MiB, 0);
    see_maps = p != NULL && mapped() >= base + 40 * MiB;
    xc_block_put(p);
    xc_block_trim();
    if (!see_maps)
        printf("(mallinfo2 does not show the blocks: memory counts not checked)\n");
}

#define check_mapped(ok, ...) \
    do {                      \
        if (see_maps)         \
            check(ok, __VA_ARGS__); \
    } while (0)

static void test_large_reuse(void)
{
    size_t base = mapped();
    char *a = xc_block_get(40 * MiB, 0), *b = xc_block_get(34 * MiB, 0), *c, *d;
    check(a != NULL && b != NULL, "two large blocks");
    xc_block_put(a);
    xc_block_put(b);
    check_mapped(mapped() >= base + 74 * MiB, "both kept after put (%zu MiB mapped over the start)",
                 (mapped() - base) / MiB);
    /* the smallest that fits first, whatever the order they came back in */
    c = xc_block_get(33 * MiB, 0);
    check(c == b, "33 MiB gets the 34 MiB block back");
    d = xc_block_get(39 * MiB, 0);
    check(d == a, "39 MiB gets the 40 MiB block back");
    xc_block_put(c);
    xc_block_put(d);
    /* a small call does not take a block four times its size */
    c = xc_block_get(5 * MiB, 0);
    check(c != a && c != b, "5 MiB does not take a kept 34 or 40 MiB block");
    xc_block_put(c);
    /* none fits: a new one, and the kept ones stay */
    c = xc_block_get(41 * MiB, 0);
    check(c != NULL && c != a && c != b, "41 MiB is a new block");
    /* a third: room is made by freeing the smallest kept one (34 MiB) */
    xc_block_put(c);
    d = xc_block_get(35 * MiB, 0);
    check(d == a, "after a third came back, 35 MiB gets the 40 MiB block (34 MiB freed)");
    xc_block_put(d);
    xc_block_trim();
    check_mapped(mapped() <= base, "trim frees them all (%zu MiB left mapped over the start)",
                 mapped() > base ? (mapped() - base) / MiB : 0);
}

static void test_large_limits(void)
{
    size_t base = mapped();
    /* never touched, so only address space; skipped where even that is short */
    char *huge = xc_block_get(600 * MiB, 0), *x, *y, *z;
    if (huge == NULL) {
        printf("(no 600 MiB of address space: the limits are not checked)\n");
        return;
    }
    xc_block_put(huge);
    check_mapped(mapped() <= base, "a block over 512 MiB is not kept");
    x = xc_block_get(300 * MiB, 0);
    y = xc_block_get(300 * MiB, 0);
    check(x != NULL && y != NULL, "two 300 MiB blocks");
    xc_block_put(x);
    xc_block_put(y); /* 600 MiB together: over the limit, and x is not smaller */
    check_mapped(mapped() <= base + 300 * MiB + MiB, "at most 512 MiB kept (%zu MiB)",
                 (mapped() - base) / MiB);
    z = xc_block_get(400 * MiB, 0);
    xc_block_put(z); /* frees the smaller 300 MiB one to fit */
    x = xc_block_get(350 * MiB, 0);
    check(x == z, "the larger block displaced the smaller");
    xc_block_put(x);
    xc_block_trim();
    check_mapped(mapped() <= base, "trim frees it");
    /* a block that cannot fit beside a larger kept one frees nothing */
    x = xc_block_get(100 * MiB, 0);
    y = xc_block_get(300 * MiB, 0);
    z = xc_block_get(250 * MiB, 0);
    xc_block_put(x);
    xc_block_put(y);
    xc_block_put(z); /* 300 + 250 > 512: not kept, and 100 stays */
    huge = xc_block_get(90 * MiB, 0);
    check(huge == x, "the 100 MiB block stayed when a 250 MiB one could not be kept");
    xc_block_put(huge);
    huge = xc_block_get(260 * MiB, 0);
    check(huge == y, "the 300 MiB block stayed too");
    xc_block_put(huge);
    xc_block_trim();
}
#endif

int main(void)
{
    test_contents();
#if XC_POOL_ENABLED
    probe_maps();
    test_large_reuse();
    test_large_limits();
#else
    printf("(AddressSanitizer: the pool keeps nothing; reuse not checked)\n");
#endif
    printf("test_pool: %lu passed, %lu failed\n", n_pass, n_fail);
    return n_fail == 0 ? 0 : 1;
}
