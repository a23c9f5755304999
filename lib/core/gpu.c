/* Choosing the GPU backend, and the pools of what device collectives use
 * per call: pinned staging blocks, device scratch, events and stream-hold
 * flags. cudaHostAlloc and cudaMalloc take tens of microseconds to
 * milliseconds (they map pages and may synchronise the device), so blocks
 * are kept by power-of-two size class up to a cap instead of freed. */
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "log.h"

#ifdef HAVE_CUDA
/* lib/cuda/cuda_backend.c: the CUDA backend when a device is usable,
 * otherwise NULL; xc_cuda_describe says which and why. */
const xc_gpu_backend_t *xc_cuda_probe(void);
const char *xc_cuda_describe(void);
#endif

#define XC_GPU_FLAGS 1024
static uint32_t *g_flag_page;  /* pinned, XC_GPU_FLAGS words */
static uint32_t g_flag_free[XC_GPU_FLAGS];
static unsigned g_nflag_free;

static const xc_gpu_backend_t *g_backend;
static int g_chosen;

const xc_gpu_backend_t *xc_gpu(void)
{
    if (!g_chosen) {
        const char *env = getenv("XCOLL_CUDA");
        g_chosen = 1;
#ifdef HAVE_CUDA
        if (env != NULL && strcmp(env, "0") == 0)
            xc_info("XCOLL_CUDA=0: device buffers are not looked for");
        else
            g_backend = xc_cuda_probe();
#else
        (void)env;
#endif
    }
    return g_backend;
}

void xc_gpu_set_backend(const xc_gpu_backend_t *backend)
{
    xc_gpu_release_pools();
    if (g_flag_page != NULL && g_backend != NULL)
        g_backend->pinned_free(g_flag_page);
    g_flag_page = NULL;
    g_backend = backend;
    g_chosen = 1;
}

const char *xc_gpu_describe(void)
{
    const xc_gpu_backend_t *b = xc_gpu();
    if (b != NULL && b->describe != NULL)
        return b->describe();
#ifdef HAVE_CUDA
    return xc_cuda_describe();
#else
    return "not built (configure --with-cuda); host buffers only, a stream argument is refused";
#endif
}

xc_memtype_t xc_gpu_memtype(const void *p, int *device)
{
    const xc_gpu_backend_t *b = xc_gpu();
    if (device != NULL)
        *device = -1;
    if (b == NULL || p == NULL || p == XCOLL_IN_PLACE)
        return XC_MEM_HOST;
    return b->memtype(p, device);
}

/* --- size-classed block pools ------------------------------------------- */

#define XC_GPU_CLASSES 40       /* 2^0 .. 2^39 bytes */
#define XC_GPU_MIN_CLASS 12     /* 4 KiB: smaller requests round up to it */
#define XC_GPU_POOL_CAP ((size_t)1 << 30) /* bytes kept per pool, beyond that free */

typedef struct block {
    struct block *next;
    void *mem;
    unsigned cls;
} block_t;

typedef struct {
    const char *what;
    block_t *free_[XC_GPU_CLASSES]; /* kept, ready to hand out */
    block_t *used;                  /* handed out: found again by address */
    size_t kept_bytes;
    int pinned;
} pool_t;

static pool_t g_pinned = {"pinned staging", {0}, NULL, 0, 1};
static pool_t g_dev = {"device scratch", {0}, NULL, 0, 0};

static unsigned size_class(size_t bytes)
{
    unsigned c = XC_GPU_MIN_CLASS;
    while (c + 1 < XC_GPU_CLASSES && ((size_t)1 << c) < bytes)
        c++;
    return c;
}

static void *pool_get(pool_t *p, size_t bytes)
{
    const xc_gpu_backend_t *b = xc_gpu();
    unsigned c = size_class(bytes);
    block_t *blk;
    xcoll_status_t rc;

    if (b == NULL) {
        xc_error("%s: no GPU backend", p->what);
        return NULL;
    }
    if (((size_t)1 << c) < bytes) {
        xc_error("%s: %zu bytes is more than the pool serves", p->what, bytes);
        return NULL;
    }
    if ((blk = p->free_[c]) != NULL) {
        p->free_[c] = blk->next;
        p->kept_bytes -= (size_t)1 << c;
    } else {
        if ((blk = calloc(1, sizeof(*blk))) == NULL) {
            xc_error("%s: out of host memory", p->what);
            return NULL;
        }
        rc = p->pinned ? b->pinned_alloc(&blk->mem, (size_t)1 << c)
                       : b->dev_alloc(&blk->mem, (size_t)1 << c);
        if (rc != XCOLL_OK) {
            xc_error("%s: could not allocate %zu bytes", p->what, (size_t)1 << c);
            free(blk);
            return NULL;
        }
        blk->cls = c;
    }
    blk->next = p->used;
    p->used = blk;
    return blk->mem;
}

static void pool_put(pool_t *p, void *mem)
{
    const xc_gpu_backend_t *b = g_backend;
    block_t **link, *blk;
    if (mem == NULL)
        return;
    /* few blocks are out at once (one per step in flight), so a list walk
     * is cheaper than a hash */
    for (link = &p->used; *link != NULL && (*link)->mem != mem; link = &(*link)->next)
        ;
    if ((blk = *link) == NULL) {
        xc_error("%s: %p was not handed out by this pool", p->what, mem);
        return;
    }
    *link = blk->next;
    /* Over the cap the block is freed, unless a stream hold is pending:
     * cudaFree and cudaFreeHost wait for the device to go idle, and a held
     * stream only moves on when this thread writes its flag. */
    if (p->kept_bytes + ((size_t)1 << blk->cls) <= XC_GPU_POOL_CAP || xc_gpu_holds_pending()) {
        blk->next = p->free_[blk->cls];
        p->free_[blk->cls] = blk;
        p->kept_bytes += (size_t)1 << blk->cls;
        return;
    }
    if (b != NULL)
        (p->pinned ? b->pinned_free : b->dev_free)(blk->mem);
    free(blk);
}

static void pool_release(pool_t *p)
{
    const xc_gpu_backend_t *b = g_backend;
    unsigned c;
    for (c = 0; c < XC_GPU_CLASSES; c++) {
        while (p->free_[c] != NULL) {
            block_t *blk = p->free_[c];
            p->free_[c] = blk->next;
            if (b != NULL)
                (p->pinned ? b->pinned_free : b->dev_free)(blk->mem);
            free(blk);
        }
    }
    p->kept_bytes = 0;
}

void *xc_gpu_pinned_get(size_t bytes)
{
    return pool_get(&g_pinned, bytes);
}

void xc_gpu_pinned_put(void *p)
{
    pool_put(&g_pinned, p);
}

void *xc_gpu_dev_get(size_t bytes)
{
    return pool_get(&g_dev, bytes);
}

void xc_gpu_dev_put(void *p)
{
    pool_put(&g_dev, p);
}

/* --- events ----------------------------------------------------------------- */

#define XC_GPU_SPARE_EVENTS 64
static void *g_events[XC_GPU_SPARE_EVENTS];
static unsigned g_nevents;

void *xc_gpu_event_get(void)
{
    const xc_gpu_backend_t *b = xc_gpu();
    void *ev = NULL;
    if (g_nevents > 0)
        return g_events[--g_nevents];
    if (b == NULL || b->event_create(&ev) != XCOLL_OK) {
        xc_error("could not create a GPU event");
        return NULL;
    }
    return ev;
}

void xc_gpu_event_put(void *ev)
{
    if (ev == NULL)
        return;
    if (g_nevents < XC_GPU_SPARE_EVENTS)
        g_events[g_nevents++] = ev;
    else if (g_backend != NULL)
        g_backend->event_destroy(ev);
}

/* --- stream-hold flags ---------------------------------------------------------
 * A flag word is never reset: each hold waits for the word to reach a new,
 * larger value. Resetting a reused word to 0 could strand a wait kernel of
 * an earlier hold that had not yet seen its value. */

int xc_gpu_holds_pending(void)
{
    return g_flag_page != NULL && g_nflag_free < XC_GPU_FLAGS;
}

volatile uint32_t *xc_gpu_flag_get(uint32_t *value)
{
    volatile uint32_t *f;
    if (g_flag_page == NULL) {
        const xc_gpu_backend_t *b = xc_gpu();
        void *mem = NULL;
        unsigned i;
        if (b == NULL || b->pinned_alloc(&mem, XC_GPU_FLAGS * sizeof(uint32_t)) != XCOLL_OK) {
            xc_error("could not allocate the pinned stream-hold flags");
            return NULL;
        }
        g_flag_page = mem;
        memset(g_flag_page, 0, XC_GPU_FLAGS * sizeof(uint32_t));
        for (i = 0; i < XC_GPU_FLAGS; i++)
            g_flag_free[i] = XC_GPU_FLAGS - 1 - i;
        g_nflag_free = XC_GPU_FLAGS;
    }
    /* a word at its last value is retired: the next hold's value would
     * wrap to 0, which every waiter takes as "go" */
    do {
        if (g_nflag_free == 0) {
            xc_error("more than %d stream-ordered collectives outstanding", XC_GPU_FLAGS);
            return NULL;
        }
        f = &g_flag_page[g_flag_free[--g_nflag_free]];
    } while (*f == UINT32_MAX);
    *value = *f + 1;
    return f;
}

void xc_gpu_flag_release(volatile uint32_t *flag, uint32_t value)
{
    if (flag == NULL)
        return;
    /* the data the stream will read was written before this store */
    __atomic_store_n(flag, value, __ATOMIC_RELEASE);
    g_flag_free[g_nflag_free++] = (uint32_t)(flag - g_flag_page);
}

void xc_gpu_release_pools(void)
{
    pool_release(&g_pinned);
    pool_release(&g_dev);
    while (g_nevents > 0) {
        void *ev = g_events[--g_nevents];
        if (g_backend != NULL)
            g_backend->event_destroy(ev);
    }
    /* the flag page stays: a wait kernel may still be reading it */
}
