/* The emulated GPU (see emulated_gpu.h). Single threaded, like xcoll. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dtype.h"
#include "emulated_gpu.h"

typedef enum { OP_COPY, OP_REDUCE, OP_DIVIDE, OP_EVENT, OP_WAIT } op_kind_t;

typedef struct emu_event {
    uint64_t gen;      /* recordings so far */
    uint64_t done;     /* the recording whose work has run */
    unsigned queued;   /* its markers still in queues */
    int destroyed;     /* as in CUDA, freed once the last marker has run */
} emu_event_t;

typedef struct op {
    struct op *next;
    op_kind_t kind;
    void *dst;
    const void *a, *b;
    size_t bytes, count;
    xcoll_dtype_t dtype;
    xcoll_op_t rop;
    uint32_t n;
    emu_event_t *ev;
    uint64_t gen;
    const volatile uint32_t *flag;
} op_t;

typedef struct queue {
    op_t *head, *tail;
    size_t len;
    struct queue *next_user; /* user streams, for ticking them too */
} queue_t;

typedef struct region {
    char *base;
    size_t len, map_len;
    xc_memtype_t type;
    struct region *next;
} region_t;

static queue_t g_queues[XC_GPU_NQUEUES];
static queue_t g_legacy;          /* the NULL stream */
static queue_t *g_user_streams;
static region_t *g_regions;
static int g_protect;
static size_t g_page;

static void die(const char *what)
{
    fprintf(stderr, "emulated GPU: %s\n", what);
    exit(2);
}

/* --- memory ----------------------------------------------------------------- */

static region_t *region_of(const void *p)
{
    region_t *r;
    for (r = g_regions; r != NULL; r = r->next)
        if ((const char *)p >= r->base && (const char *)p < r->base + (r->len ? r->len : 1))
            return r;
    return NULL;
}

/* Opens (or closes again) the device regions holding p, q and s: only
 * the emulated GPU's own operations may touch device memory. */
static void set_access(int open, const void *p, const void *q, const void *s)
{
    const void *ptrs[3];
    int i;
    ptrs[0] = p;
    ptrs[1] = q;
    ptrs[2] = s;
    if (!g_protect)
        return;
    for (i = 0; i < 3; i++) {
        region_t *r = ptrs[i] != NULL ? region_of(ptrs[i]) : NULL;
        if (r != NULL && r->type != XC_MEM_PINNED &&
            mprotect(r->base, r->map_len, open ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
            die("mprotect failed");
    }
}

static void *region_new(size_t bytes, xc_memtype_t type)
{
    region_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        die("out of memory");
    if (g_page == 0)
        g_page = (size_t)sysconf(_SC_PAGESIZE);
    r->len = bytes;
    r->map_len = (bytes + g_page - 1) / g_page * g_page;
    if (r->map_len == 0)
        r->map_len = g_page;
    r->base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r->base == MAP_FAILED)
        die("mmap failed");
    r->type = type;
    if (g_protect && type != XC_MEM_PINNED && mprotect(r->base, r->map_len, PROT_NONE) != 0)
        die("mprotect failed");
    r->next = g_regions;
    g_regions = r;
    return r->base;
}

static void region_free(void *p)
{
    region_t **link, *r;
    for (link = &g_regions; *link != NULL && (*link)->base != p; link = &(*link)->next)
        ;
    if ((r = *link) == NULL)
        die("free of memory it did not allocate");
    *link = r->next;
    munmap(r->base, r->map_len);
    free(r);
}

/* --- queues ------------------------------------------------------------------- */

static op_t *push(queue_t *q, op_kind_t kind)
{
    op_t *o = calloc(1, sizeof(*o));
    if (o == NULL)
        die("out of memory");
    o->kind = kind;
    if (q->tail != NULL)
        q->tail->next = o;
    else
        q->head = o;
    q->tail = o;
    q->len++;
    return o;
}

/* Runs q's front operation if it can; returns 1 if it did. */
static int step(queue_t *q)
{
    op_t *o = q->head;
    if (o == NULL)
        return 0;
    if (o->kind == OP_WAIT) {
        if (__atomic_load_n(o->flag, __ATOMIC_ACQUIRE) < o->n)
            return 0;
    } else if (o->kind == OP_EVENT) {
        if (o->ev->gen == o->gen)
            o->ev->done = o->gen;
        if (--o->ev->queued == 0 && o->ev->destroyed)
            free(o->ev);
    } else {
        set_access(1, o->dst, o->a, o->b);
        if (o->kind == OP_COPY)
            memmove(o->dst, o->a, o->bytes);
        else if (o->kind == OP_REDUCE)
            xc_reduce(o->dst, o->a, o->b, o->count, o->dtype, o->rop);
        else
            xc_divide(o->dst, o->count, o->dtype, o->n);
        set_access(0, o->dst, o->a, o->b);
    }
    q->head = o->next;
    if (q->head == NULL)
        q->tail = NULL;
    q->len--;
    free(o);
    return 1;
}

size_t emu_gpu_tick(void)
{
    size_t n = 0;
    int i;
    queue_t *u;
    for (i = 0; i < XC_GPU_NQUEUES; i++)
        n += (size_t)step(&g_queues[i]);
    n += (size_t)step(&g_legacy);
    for (u = g_user_streams; u != NULL; u = u->next_user)
        n += (size_t)step(u);
    return n;
}

size_t emu_gpu_pending(void)
{
    size_t n = g_legacy.len;
    int i;
    queue_t *u;
    for (i = 0; i < XC_GPU_NQUEUES; i++)
        n += g_queues[i].len;
    for (u = g_user_streams; u != NULL; u = u->next_user)
        n += u->len;
    return n;
}

/* --- the backend -------------------------------------------------------------- */

/* One emulated device, ordinal 0. */
static xc_memtype_t emu_memtype(const void *p, int *device)
{
    region_t *r = region_of(p);
    if (device != NULL)
        *device = r == NULL ? -1 : 0;
    return r == NULL ? XC_MEM_HOST : r->type;
}

static xcoll_status_t emu_bind(int device)
{
    return device <= 0 ? XCOLL_OK : XCOLL_ERR_UNSUPPORTED;
}

/* CUDA may make an allocation wait for all device work; with a stream
 * held by a wait kernel that only the allocating thread can release, that
 * is a deadlock on a real GPU, so here it is a test failure. */
static void check_no_hold(const char *what)
{
    queue_t *u;
    op_t *o;
    for (u = g_user_streams; u != NULL; u = u->next_user)
        for (o = u->head; o != NULL; o = o->next)
            if (o->kind == OP_WAIT && __atomic_load_n(o->flag, __ATOMIC_ACQUIRE) < o->n) {
                fprintf(stderr, "emulated GPU: %s while a stream hold is pending "
                                "(may deadlock on CUDA)\n", what);
                exit(3);
            }
}

static xcoll_status_t emu_alloc_dev(void **p, size_t bytes)
{
    check_no_hold("device memory allocated");
    *p = region_new(bytes, XC_MEM_DEVICE);
    return XCOLL_OK;
}

static xcoll_status_t emu_alloc_pinned(void **p, size_t bytes)
{
    check_no_hold("pinned memory allocated");
    *p = region_new(bytes, XC_MEM_PINNED);
    return XCOLL_OK;
}

static void push_copy(queue_t *q, void *dst, const void *src, size_t bytes)
{
    op_t *o = push(q, OP_COPY);
    o->dst = dst;
    o->a = src;
    o->bytes = bytes;
}

static xcoll_status_t emu_copy(void *dst, const void *src, size_t bytes, int q)
{
    push_copy(&g_queues[q], dst, src, bytes);
    return XCOLL_OK;
}

static void check_kernel_operand(const void *p)
{
    /* a GPU cannot read pageable host memory: the engine must not ask */
    if (emu_memtype(p, NULL) == XC_MEM_HOST)
        die("a kernel was given pageable host memory as an operand");
}

static xcoll_status_t emu_reduce(void *dst, const void *a, const void *b, size_t count,
                                 xcoll_dtype_t dtype, xcoll_op_t op, int q)
{
    op_t *o;
    check_kernel_operand(dst);
    check_kernel_operand(a);
    check_kernel_operand(b);
    o = push(&g_queues[q], OP_REDUCE);
    o->dst = dst;
    o->a = a;
    o->b = b;
    o->count = count;
    o->dtype = dtype;
    o->rop = op;
    return XCOLL_OK;
}

static xcoll_status_t emu_divide(void *dst, size_t count, xcoll_dtype_t dtype, uint32_t n, int q)
{
    op_t *o;
    check_kernel_operand(dst);
    o = push(&g_queues[q], OP_DIVIDE);
    o->dst = dst;
    o->count = count;
    o->dtype = dtype;
    o->n = n;
    return XCOLL_OK;
}

static xcoll_status_t emu_event_create(void **ev)
{
    *ev = calloc(1, sizeof(emu_event_t));
    return *ev != NULL ? XCOLL_OK : XCOLL_ERR_NO_MEMORY;
}

static void emu_event_destroy(void *ev)
{
    emu_event_t *e = ev;
    if (e->queued > 0)
        e->destroyed = 1; /* legal in CUDA while its work is pending */
    else
        free(e);
}

static void record_on(queue_t *q, emu_event_t *e)
{
    op_t *o = push(q, OP_EVENT);
    o->ev = e;
    o->gen = ++e->gen;
    e->queued++;
}

static xcoll_status_t emu_record(void *ev, int q)
{
    record_on(&g_queues[q], ev);
    return XCOLL_OK;
}

static xcoll_status_t emu_record_on_stream(void *ev, void *stream)
{
    record_on(stream != NULL ? (queue_t *)stream : &g_legacy, ev);
    return XCOLL_OK;
}

static xcoll_status_t emu_query(void *ev)
{
    emu_event_t *e = ev;
    if (e->done == e->gen)
        return XCOLL_OK;
    emu_gpu_tick();
    return e->done == e->gen ? XCOLL_OK : XCOLL_INPROGRESS;
}

static xcoll_status_t emu_hold_stream(void *stream, const volatile uint32_t *flag, uint32_t value)
{
    op_t *o = push((queue_t *)stream, OP_WAIT);
    o->flag = flag;
    o->n = value;
    return XCOLL_OK;
}

static xcoll_status_t emu_copy_sync(void *dst, const void *src, size_t bytes)
{
    set_access(1, dst, src, NULL);
    memmove(dst, src, bytes);
    set_access(0, dst, src, NULL);
    return XCOLL_OK;
}

static const char *emu_describe(void)
{
    return "emulated on the CPU (tests only)";
}

static const xc_gpu_backend_t emu_backend = {
    "emulated",
    emu_memtype,
    emu_bind,
    emu_alloc_dev,
    region_free,
    emu_alloc_pinned,
    region_free,
    emu_copy,
    emu_reduce,
    emu_divide,
    emu_event_create,
    emu_event_destroy,
    emu_record,
    emu_record_on_stream,
    emu_query,
    emu_hold_stream,
    emu_copy_sync,
    emu_describe,
};

void emu_gpu_install(int protect)
{
    g_protect = protect;
    xc_gpu_set_backend(&emu_backend);
}

const xc_gpu_backend_t *emu_gpu_backend(void)
{
    return &emu_backend;
}

void *emu_dev_alloc(size_t bytes)
{
    return region_new(bytes, XC_MEM_DEVICE);
}

void *emu_managed_alloc(size_t bytes)
{
    return region_new(bytes, XC_MEM_MANAGED);
}

void emu_dev_free(void *p)
{
    if (p != NULL)
        region_free(p);
}

void *emu_stream_create(void)
{
    queue_t *q = calloc(1, sizeof(*q));
    if (q == NULL)
        die("out of memory");
    q->next_user = g_user_streams;
    g_user_streams = q;
    return q;
}

void emu_stream_destroy(void *stream)
{
    queue_t **link;
    for (link = &g_user_streams; *link != NULL && *link != stream; link = &(*link)->next_user)
        ;
    if (*link == NULL)
        die("destroy of an unknown stream");
    *link = ((queue_t *)stream)->next_user;
    while (((queue_t *)stream)->head != NULL) {
        op_t *o = ((queue_t *)stream)->head;
        ((queue_t *)stream)->head = o->next;
        if (o->kind == OP_EVENT && --o->ev->queued == 0 && o->ev->destroyed)
            free(o->ev);
        free(o);
    }
    free(stream);
}

void emu_stream_copy(void *stream, void *dst, const void *src, size_t bytes)
{
    push_copy(stream, dst, src, bytes);
}

int emu_stream_sync(void *stream)
{
    queue_t *q = stream;
    while (q->head != NULL)
        if (!step(q))
            return -1;
    return 0;
}

size_t emu_stream_pending(void *stream)
{
    return ((queue_t *)stream)->len;
}
