/* The shared-memory transport: tagged send/recv between the ranks of a
 * communicator that share a node, through rings in shared memory, and for
 * messages longer than a slot straight from the sender's buffer (CMA).
 * Ranks on other nodes, and collective messages longer than XCOLL_SHM_MAX
 * (8 KiB) where CMA is off, go to UCX, which this transport wraps: the
 * engine still sees one transport (lib/core/transport.h). Both sides route
 * a collective message by its length, so a send and a receive of different
 * lengths on either side of the limit are never matched (a hang until
 * XCOLL_TIMEOUT, not XCOLL_ERR_TRUNCATED; a collective's lengths differ only
 * when the ranks' counts do). Point-to-point messages stay in shared memory
 * at any length.
 *
 * Layout. Every rank owns one segment per communicator holding its bell
 * and the rings its node's ranks (itself included) send into, one ring
 * per sender:
 *
 *   bell   bell     (peers add to it)   own 128-byte line
 *          sleeping (owner writes)      own 128-byte line
 *   ring   tail   (receiver writes)     own 128-byte line
 *          slots  [XC_SHM_SLOTS]        64-byte header + payload, each
 *                                       starting a 128-byte line pair
 *
 * The sender fills a slot, then release-stores its seq (the slot's index
 * in the ring's life, plus one); the receiver acquire-loads the seq of
 * the next slot it expects, consumes the slot, release-stores tail. The
 * flag travels in the line it announces, so a small message costs the
 * receiver one line pair from the sender's cache, not a head line first
 * and the slot after it; the sender reads tail only when the ring looks
 * full. One writer per line at a time, no atomics beyond load/store (but
 * for the claim counter of split copies, below). A
 * message is one slot (XC_SHM_FIRST with the whole message) or consecutive
 * slots (FIRST, then XC_SHM_MORE). A message from XCOLL_SHM_CMA_MIN is
 * one XC_SHM_RNDV slot naming the sender's buffer instead, which the
 * receiver reads with process_vm_readv once a receive matches it (a
 * reducing receive in cache-sized pieces, reducing each) and answers
 * with an XC_SHM_ACK slot in the other direction. From XCOLL_SHM_SPLIT_MIN
 * the copy is split: the sender, idle while it waits for the ACK, writes
 * pieces of the message into the receiver's buffer with process_vm_writev
 * while the receiver reads others (see "Split copies" below). Per sender,
 * messages keep their order, and receives match the oldest message with
 * their tag, as UCX's tag matching does. The common cases of a loop of
 * small collectives take no request: a send of one slot with nothing
 * queued before it and room in the ring is written at once, and a receive
 * whose message is already the next slot to read (nothing older from that
 * sender unread or waiting to match) takes it at once (take_waiting).
 *
 * Sleeping. A rank that has waited about 1 ms sleeps on the futex of its
 * bell (of every live communicator's bell, with futex_waitv) after setting
 * `sleeping`; whoever publishes a slot or frees one (a sender may wait for
 * room) adds one to the peer's bell and wakes it, but only while that
 * peer's flag is set, so a busy rank pays a fence and a read of a line
 * that rarely changes, not a system call. The fence on each side (flag
 * then last look at the rings; slot then flag) means at least one of the
 * two sees the other; the sleep's timeout bounds anything else. A rank
 * whose wait depends on UCX as well (a communicator spanning nodes)
 * cannot sleep on a futex, which UCX's messages never wake: it sleeps in
 * poll on UCX's event fd and on its doorbell, a datagram socket of its
 * process that peers write a byte to instead (`sleeping` says which).
 * Doorbells are decided per node at setup (each rank rings every local
 * one once); where one is missing or cannot be reached, every such wait
 * of the process naps on UCX's fd 50 us at a time instead.
 *
 * Nothing read from shared memory is trusted: a slot's kind, lengths and
 * seq are checked before use, and a peer's garbage fails this
 * rank's transfers with an error, never a write outside its buffers.
 * One exception, by design: a split copy's descriptor in a receiver's
 * segment tells its sender where to write, and any local rank could
 * overwrite it; CMA already lets any of them write anywhere in the
 * receiver, so this grants no rank anything it did not have.
 *
 * Setup is collective (three bootstrap allgathers) and all or nothing: the
 * path is used only if every rank asked for it (XCOLL_SHM) and every rank
 * created and mapped its segments; otherwise every peer goes to UCX
 * (doorbells only change how waits sleep, and are decided per node).
 * Segments are 0600 with random names and are unlinked as soon as every
 * rank of the node has mapped them, so a crash leaves nothing in /dev/shm. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "tag.h"
#include "topo.h"
#include "transport.h"

#define XC_SHM_SLOTS     8u
#define XC_SHM_LINE      128u   /* adjacent-line prefetch pairs 64-byte lines */
#define XC_SHM_HDR       64u
#define XC_SHM_NAME_LEN  48
#define XC_SHM_SPLITS    8u     /* split-copy descriptors per ring */

enum { XC_SHM_FIRST = 0x51, XC_SHM_MORE, XC_SHM_RNDV, XC_SHM_ACK };

typedef struct {
    uint64_t tag;
    uint64_t msg_len;   /* FIRST, RNDV: the whole message */
    uint64_t addr;      /* RNDV: the sender's buffer, in its address space */
    uint64_t cookie;    /* RNDV: names the send; ACK: the send it answers */
    uint32_t frag_len;  /* FIRST, MORE: payload bytes in this slot; RNDV:
                         * the split copy's piece, 0 = not split */
    uint32_t kind;
    uint32_t status;    /* ACK: 1 when the receiver could not read; MORE: 1
                         * when the sender abandoned the message */
    uint32_t pad0_;
    _Atomic uint64_t seq; /* written last: the slot's ring index + 1 */
    uint64_t pad1_;
} xc_shm_slot_t;

_Static_assert(sizeof(xc_shm_slot_t) == XC_SHM_HDR, "slot header is one line");

typedef struct {
    _Atomic uint64_t tail;
    char pad_[XC_SHM_LINE - sizeof(uint64_t)];
} xc_shm_ring_t; /* slots follow */

/* At the start of every segment; futex words are 32 bits. */
typedef struct {
    uint32_t bell;
    char pad0_[XC_SHM_LINE - sizeof(uint32_t)];
    uint32_t sleeping;  /* XC_SLEEP_FUTEX or XC_SLEEP_DOOR: how to wake */
    char pad1_[XC_SHM_LINE - sizeof(uint32_t)];
} xc_shm_bell_t;

enum { XC_SLEEP_FUTEX = 1, XC_SLEEP_DOOR = 2 };

typedef enum { REQ_SEND, REQ_RECV, REQ_ACK } req_kind_t;

typedef struct xc_shm_req {
    struct xc_shm_req *next;
    req_kind_t kind;
    int rndv;           /* send: by descriptor; the receiver pulls */
    int orphan;         /* cancelled: freed when it completes; a half-pushed
                         * send's rest goes out empty and marked */
    int complete;
    xcoll_status_t status;
    uint64_t tag;
    const unsigned char *sbuf;
    unsigned char *rbuf;
    size_t len;
    size_t done;        /* bytes pushed (send) or arrived (receive) */
    uint64_t cookie;    /* RNDV sends; ACK: the cookie answered; a split
                         * receive: its send's */
    uint32_t ack_status;
    int acking;         /* receive: completes when its ACK is in the ring */
    int discard;        /* receive of another length: completes with status
                         * once the rest of the message has gone by */
    int reducing;       /* receive: red still to do (irecv_reduce) */
    /* split copies (see there): a RNDV send's offer, or a receive's */
    struct xc_shm_split *split_desc;
    int split_over;     /* send: no more pieces to write (all claimed, failed) */
    uint64_t split_addr, split_piece, split_pieces;
    uint64_t split_taken;  /* receive: bytes of the pieces it claimed */
    uint64_t split_upto;   /* receive: bytes claimed by both, once all are */
    int split_bad;
    xc_land_reduce_t red;
    struct xc_shm_req *waiter; /* ACK: that receive */
} xc_shm_req_t;

/* A message that arrived before its receive. A root that runs ahead of
 * its receivers (a loop of small bcasts) makes every message one of these:
 * up to XC_SHM_UNEXP_INLINE bytes live in the entry, and entries are
 * kept for reuse like requests, so a small one costs no malloc. */
#define XC_SHM_UNEXP_INLINE 1024u
typedef struct xc_shm_unexp {
    struct xc_shm_unexp *next;
    uint64_t tag;
    size_t len;
    size_t arrived;
    int rndv;
    int aborted;        /* its sender abandoned it halfway */
    uint64_t addr, cookie;
    uint32_t split_piece;  /* RNDV: the sender's split offer, 0 = none */
    unsigned char *data;   /* inl, or from malloc when longer */
    unsigned char inl[XC_SHM_UNEXP_INLINE];
} xc_shm_unexp_t;

typedef struct {
    int rank;                     /* in the communicator */
    pid_t pid;
    xc_shm_ring_t *out, *in;      /* out: in the peer's segment; in: in mine */
    xc_shm_bell_t *bell;          /* the peer's, in its segment */
    struct sockaddr_un door;      /* the peer's doorbell (c->door) */
    socklen_t door_len;
    uint64_t out_head, out_tail;  /* out_tail: last tail seen */
    uint64_t in_tail;
    xc_shm_req_t *sendq, *sendq_last;   /* sends and acks to push, in order */
    xc_shm_req_t *rndv_wait;            /* RNDV sends waiting for their ack */
    xc_shm_req_t *posted, *posted_last; /* receives not yet matched */
    xc_shm_unexp_t *unexp, *unexp_last;
    /* the message whose MORE slots come next: into a receive, into an
     * unexpected entry, or nowhere (discard) */
    xc_shm_req_t *cur;
    xc_shm_unexp_t *cur_unexp;
    size_t cur_left;
    uint64_t next_cookie;
    int oom_logged;
    /* sending: descriptors of split offers not yet acknowledged */
    uint32_t split_busy;
    uint64_t split_busy_cookie[XC_SHM_SPLITS];
    /* receiving: split copies from this peer in progress */
    xc_shm_req_t *splits, *splits_last;
} xc_shm_peer_t;

typedef struct xc_shm_comm {
    struct xc_shm_comm *next_live;
    void *ucx;                 /* the UCX transport's communicator */
    int rank, size;
    int nlocal, nremote;       /* nlocal = 0: everything goes to UCX */
    int *local_of;             /* [size] index into peers, -1 if remote */
    xc_shm_peer_t *peers;      /* [nlocal] */
    void *seg;                 /* mine */
    void **peer_seg;           /* [nlocal] mapped */
    size_t seg_bytes, ring_bytes, slot_bytes, payload;
    size_t max_len;            /* longer messages go to UCX, unless CMA */
    size_t cma_min;            /* messages from here are read by CMA */
    size_t split_min;          /* CMA sends from here offer a split copy;
                                * SIZE_MAX: none (or a write failed) */
    int cma;
    int door;                  /* every local rank can ring every other's doorbell */
    unsigned char *bounce;     /* XC_SHM_PULL_CHUNK: CMA reads to reduce */
    int broken;                /* a peer wrote garbage: fail from here on */
} xc_shm_comm_t;

/* Every communicator with local peers. Added to at the head by
 * shm_comm_init, which runs without the progress thread's lock (the
 * bootstrap may block): published with release, read with acquire
 * (live_head), so a reader sees a new entry whole or not at all. Removed
 * from under the lock only. */
static xc_shm_comm_t *g_live;

static xc_shm_comm_t *live_head(void)
{
    return __atomic_load_n(&g_live, __ATOMIC_ACQUIRE);
}
static unsigned g_ucx_pending;  /* UCX requests handed out and not finished */
static unsigned g_tick;
static uint64_t g_idle_since_ns;
static unsigned g_last_idle_round;
static int g_oversubscribed;
/* What the kernel (or a sandbox's filter) refused once, it refuses again:
 * then arming says "no wakeup here" and callers nap, instead of raising
 * flags that make every peer's message a system call. */
static int g_no_futex, g_no_waitv;

/* This process's doorbell: an abstract unix datagram socket named by a
 * random token, opened with its first communicator with local peers and
 * kept for the process's life (a sleep may be polling it when the last
 * communicator goes). Peers write a byte to wake a rank that sleeps on
 * UCX's event fd too; the byte itself means nothing. The token makes the
 * name unique, not secret (/proc/net/unix lists abstract names to the
 * network namespace): a stranger's bytes can only end sleeps early, which
 * costs CPU, never a result. -1: none. */
static int g_door = -1;
static uint64_t g_door_token; /* 0 until the door is open */
static pid_t g_door_pid;      /* who opened it: a forked child opens its own */
static int g_door_warned;
/* Sleeps on UCX's event fd and the doorbell, and those the doorbell
 * ended (logged at debug when a communicator goes: how a test sees that
 * peers ring it, as a bell that never rang costs only time). */
static unsigned long g_door_sleeps, g_door_wakes;

/* Read by peers through process_vm_readv to find out whether they may. */
static volatile uint64_t g_cma_probe;

/* --- helpers -------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* XCOLL_SHM=1 uses the path, 0 does not; unset: XC_SHM_DEFAULT. */
#define XC_SHM_DEFAULT 1

static int shm_wanted(void)
{
    const char *s = getenv("XCOLL_SHM");
    if (s == NULL || *s == '\0')
        return XC_SHM_DEFAULT;
    if (strcmp(s, "0") == 0)
        return 0;
    if (strcmp(s, "1") == 0)
        return 1;
    xc_warn("ignoring XCOLL_SHM=%s: not 0 or 1", s);
    return XC_SHM_DEFAULT;
}

/* A size in bytes from the environment; dflt when unset or malformed. */
static size_t env_bytes(const char *name, size_t dflt)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v;
    if (s == NULL || *s == '\0')
        return dflt;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || s[0] == '-') {
        xc_warn("ignoring %s=%s: not a number of bytes", name, s);
        return dflt;
    }
    return (size_t)v;
}

/* Collective messages longer than XCOLL_SHM_MAX do not cross the rings:
 * CMA reads them, or UCX takes them. The default is one slot: measured on
 * 2 cores (docs/PERFORMANCE.md), messages of one slot beat UCX in every
 * job, 1.2-2.6x at 512 B-8 KiB, while messages of many slots were faster
 * in some jobs and 2x slower in others (two copies through the rings
 * against one). */
#define XC_SHM_MAX_DEFAULT ((size_t)8192)

/* Messages from XCOLL_SHM_CMA_MIN bytes are read by the receiver in one
 * copy with process_vm_readv (CMA) instead of crossing the rings or going
 * to UCX; 0 = never. Unset: every message longer than one slot
 * (XCOLL_SHM_MAX + 1), measured faster than UCX's own CMA rendezvous from
 * 16 KiB to 1 MiB on 2 cores and as fast above (docs/PERFORMANCE.md), and
 * a receive that reduces can then reduce straight from the sender's
 * buffer. In the hello: 0 = unset, UINT64_MAX = never. */
static uint64_t cma_min_asked(void)
{
    /* SIZE_MAX bytes stands for unset (or malformed, then ignored) */
    size_t v = env_bytes("XCOLL_SHM_CMA_MIN", SIZE_MAX);
    return v == SIZE_MAX ? 0 : v == 0 ? UINT64_MAX : (uint64_t)v;
}

/* A CMA read to reduce lands in pieces this big, which stay in cache
 * between the read and the reduction; whole elements of every type. Each
 * read pins the pages it copies and costs a system call, which on some
 * machines is most of the read: on the EPYC guest of 2026-12-05 a 64 KiB
 * read ran at 12 GB/s and a 256 KiB one at 18-29, and a 2-rank allreduce
 * of 4-16 MiB ran 15-30% faster (reduce_scatter of 4 MiB 1.6x) with 256 KiB
 * pieces, which still fit in L2 with the piece of the destination they
 * reduce into (docs/PERFORMANCE.md). With more ranks than cores the larger
 * pieces measured no better (a rank holds its core longer per read), so
 * those keep 64 KiB. */
#define XC_SHM_PULL_CHUNK ((size_t)262144)
#define XC_SHM_PULL_CHUNK_SHARED ((size_t)65536)

/* Slot payload by ranks per node: 8 KiB (a message of 8 KiB in one slot)
 * up to 8 ranks, smaller beyond, so a node of 64 ranks needs 64 x 64 x 8
 * slots of 1 KiB: 32 MiB of shared memory per communicator (and 8 MiB of
 * split-copy descriptors, 2 KiB a ring). */
static size_t payload_for(int nlocal)
{
    return nlocal <= 8 ? 8192 : nlocal <= 32 ? 4096 : 1024;
}

static xc_shm_slot_t *slot_at(const xc_shm_comm_t *c, xc_shm_ring_t *r, uint64_t i)
{
    return (xc_shm_slot_t *)((char *)(r + 1) + (size_t)(i % XC_SHM_SLOTS) * c->slot_bytes);
}

static xc_shm_ring_t *ring_in(const xc_shm_comm_t *c, void *seg, int from)
{
    return (xc_shm_ring_t *)((char *)seg + sizeof(xc_shm_bell_t) + (size_t)from * c->ring_bytes);
}

static xc_shm_bell_t *bell_of(void *seg) { return seg; }

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* The doorbell's address for token: abstract (no file to clean up),
 * seen only inside this network namespace. */
static socklen_t door_addr(struct sockaddr_un *a, uint64_t token)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "xcoll-door-%016llx",
             (unsigned long long)token);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a->sun_path + 1));
}

/* Opens this process's doorbell once; its token, or 0 where it cannot be
 * (said once at info level: sleeps then stay short, as before doorbells). */
static uint64_t door_open(void)
{
    struct sockaddr_un a;
    uint64_t token;
    int fd;
    if (g_door_pid == getpid())
        return g_door_token;
    if (g_door >= 0) {
        /* inherited through fork: the parent's queue, not ours */
        close(g_door);
        g_door = -1;
        g_door_token = 0;
    }
    g_door_pid = getpid();
    if (getrandom(&token, sizeof(token), 0) != (ssize_t)sizeof(token) || token == 0) {
        xc_info("shared memory: no random bytes for a doorbell: waits across nodes nap");
        return 0;
    }
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, door_addr(&a, token)) != 0) {
        xc_info("shared memory: no doorbell socket (%s): waits across nodes nap", strerror(errno));
        if (fd >= 0)
            close(fd);
        return 0;
    }
    g_door = fd;
    g_door_token = token;
    return token;
}

/* Whether the byte reached a doorbell: a full one counts (it will wake
 * its owner anyway). EAGAIN may also mean that this process's own send
 * buffer is full of bytes its peers have not read yet (hundreds of them:
 * a node of many ranks that stopped sleeping on their doorbells); then
 * the peer's sleep ends at its cap (2 ms) instead. */
static int door_ring(const struct sockaddr_un *a, socklen_t len)
{
    char b = 1;
    return sendto(g_door, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)a, len) ==
               1 ||
           errno == EAGAIN || errno == EWOULDBLOCK;
}

/* Empties a doorbell after a sleep; bounded, as a hostile writer could
 * keep it full. */
static void door_drain(int fd)
{
    char b[64];
    for (int i = 0; i < 64 && recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0; i++)
        ;
}

/* Rings p's bell if p sleeps (see "Sleeping" above); called after
 * publishing to p or freeing slots p fills. */
static void wake(xc_shm_peer_t *p)
{
    uint32_t how;
    atomic_thread_fence(memory_order_seq_cst);
    how = __atomic_load_n(&p->bell->sleeping, __ATOMIC_RELAXED);
    if (how & XC_SLEEP_FUTEX) {
        __atomic_fetch_add(&p->bell->bell, 1, __ATOMIC_RELEASE);
        (void)futex(&p->bell->bell, FUTEX_WAKE, INT_MAX, NULL);
    }
    if ((how & XC_SLEEP_DOOR) && p->door_len != 0)
        (void)door_ring(&p->door, p->door_len);
}

static int is_shm_req(const void *req) { return ((uintptr_t)req & 1u) != 0; }
static xc_shm_req_t *shm_req(void *req) { return (xc_shm_req_t *)((uintptr_t)req & ~(uintptr_t)1); }
static void *tagged(xc_shm_req_t *r) { return (void *)((uintptr_t)r | 1u); }

/* Requests (and unexpected entries, below) come and go at every message:
 * keep up to 1024 freed ones (128 entries), but not under
 * AddressSanitizer, which should see every use after free. */
#if defined(__SANITIZE_ADDRESS__)
#define XC_SHM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XC_SHM_ASAN 1
#endif
#endif
#ifdef XC_SHM_ASAN
static const int g_keep_reqs = 0;
#else
static const int g_keep_reqs = 1;
#endif
static xc_shm_req_t *g_free_reqs;
static unsigned g_nfree_reqs;

static xc_shm_req_t *req_new(void)
{
    xc_shm_req_t *r = g_free_reqs;
    if (r == NULL)
        return calloc(1, sizeof(*r));
    g_free_reqs = r->next;
    g_nfree_reqs--;
    memset(r, 0, sizeof(*r));
    return r;
}

static void req_free(xc_shm_req_t *r)
{
    if (!g_keep_reqs || g_nfree_reqs >= 1024) {
        free(r);
        return;
    }
    r->next = g_free_reqs;
    g_free_reqs = r;
    g_nfree_reqs++;
}

static xc_shm_unexp_t *g_free_unexp;
static unsigned g_nfree_unexp;

static void unexp_free(xc_shm_unexp_t *u)
{
    if (u->data != u->inl)
        free(u->data);
    if (!g_keep_reqs || g_nfree_unexp >= 128) {
        free(u);
        return;
    }
    u->next = g_free_unexp;
    g_free_unexp = u;
    g_nfree_unexp++;
}

/* An entry for a message of len bytes, with room for them unless
 * data_too is 0 (a rendezvous: the bytes stay with the sender); NULL
 * when out of memory. */
static xc_shm_unexp_t *unexp_new(size_t len, int data_too)
{
    xc_shm_unexp_t *u = g_free_unexp;
    if (u != NULL) {
        g_free_unexp = u->next;
        g_nfree_unexp--;
    } else if ((u = malloc(sizeof(*u))) == NULL) {
        return NULL;
    }
    /* a kept entry's fields are another message's: all but the bytes go */
    memset(u, 0, offsetof(xc_shm_unexp_t, inl));
    /* where nothing is kept (AddressSanitizer) every message gets a buffer
     * of its own length, so a stray write past it is still reported */
    if (data_too && len > 0 && (len > XC_SHM_UNEXP_INLINE || !g_keep_reqs)) {
        if ((u->data = malloc(len)) == NULL) {
            unexp_free(u); /* kept for the next try */
            return NULL;
        }
    } else if (data_too) {
        u->data = u->inl;
    }
    return u;
}

static void complete(xc_shm_req_t *r, xcoll_status_t st)
{
    /* a cancelled receive's buffers may be gone: it reduces nothing */
    if (r->reducing && st == XCOLL_OK && !r->orphan)
        xc_land_reduce_apply(&r->red, 0, r->rbuf, r->len);
    r->reducing = 0;
    r->complete = 1;
    r->status = st;
    if (r->orphan)
        req_free(r);
}

static void fail_comm(xc_shm_comm_t *c, int peer_rank, const char *what)
{
    if (!c->broken)
        xc_error("shared memory from rank %d is corrupt (%s): its transfers fail", peer_rank,
                 what);
    c->broken = 1;
}

/* Copies len bytes between local and the peer's address space at remote
 * (CMA), from the peer (write = 0) or into it (1); 0 on success. */
static int cma_copy(pid_t pid, void *local, uint64_t remote, size_t len, int write)
{
    size_t got = 0;
    while (got < len) {
        struct iovec l = { (char *)local + got, len - got };
        struct iovec r = { (void *)(uintptr_t)(remote + got), len - got };
        ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    return 0;
}

static int cma_read(pid_t pid, void *dst, uint64_t src, size_t len)
{
    return cma_copy(pid, dst, src, len, 0);
}

/* --- queues --------------------------------------------------------------------- */

/* The request queues are singly linked with a tail pointer (last may be
 * NULL for a queue that is never appended to). */
static void req_append(xc_shm_req_t **head, xc_shm_req_t **last, xc_shm_req_t *r)
{
    r->next = NULL;
    if (*last != NULL)
        (*last)->next = r;
    else
        *head = r;
    *last = r;
}

/* Unlinks *pp, whose predecessor is prev (NULL at the head). */
static void req_unlink_at(xc_shm_req_t **pp, xc_shm_req_t **last, xc_shm_req_t *prev)
{
    xc_shm_req_t *r = *pp;
    *pp = r->next;
    if (last != NULL && *last == r)
        *last = prev;
}

/* Unlinks r if the queue holds it; 1 if it did. */
static int req_unlink(xc_shm_req_t **head, xc_shm_req_t **last, const xc_shm_req_t *r)
{
    xc_shm_req_t **pp, *prev = NULL;
    for (pp = head; *pp != NULL; prev = *pp, pp = &(*pp)->next)
        if (*pp == r) {
            req_unlink_at(pp, last, prev);
            return 1;
        }
    return 0;
}

static void sendq_add(xc_shm_peer_t *p, xc_shm_req_t *r)
{
    req_append(&p->sendq, &p->sendq_last, r);
}

/* Answers a RNDV message; the receive r completes with st once the
 * answer is in the ring, so that a rank never leaves a collective owing a
 * sender its acknowledgement (it might then block in MPI while the sender
 * waits for it). */
static void queue_ack(xc_shm_peer_t *p, uint64_t cookie, uint32_t status, xc_shm_req_t *r,
                      xcoll_status_t st)
{
    xc_shm_req_t *a = req_new();
    r->status = st;
    if (a == NULL) {
        /* the sender's send then never completes: its timeout names us */
        xc_error("out of memory for an acknowledgement to rank %d", p->rank);
        complete(r, XCOLL_ERR_NO_MEMORY);
        return;
    }
    a->kind = REQ_ACK;
    a->cookie = cookie;
    a->ack_status = status;
    a->waiter = r;
    r->acking = 1;
    sendq_add(p, a);
}

/* Reads the sender's buffer in cache-sized pieces and reduces each as it
 * comes: the message is read once and never written out whole. */
static int pull_reduce(xc_shm_comm_t *c, xc_shm_peer_t *p, xc_shm_req_t *r, uint64_t addr)
{
    if (c->bounce == NULL && (c->bounce = aligned_alloc(64, XC_SHM_PULL_CHUNK)) == NULL) {
        /* not fatal: land it whole, reduce after */
        return cma_read(p->pid, r->rbuf, addr, r->len);
    }
    const size_t piece = g_oversubscribed ? XC_SHM_PULL_CHUNK_SHARED : XC_SHM_PULL_CHUNK;
    for (size_t off = 0; off < r->len; off += piece) {
        size_t n = r->len - off < piece ? r->len - off : piece;
        if (cma_read(p->pid, c->bounce, addr + off, n) != 0)
            return -1;
        xc_land_reduce_apply(&r->red, off, c->bounce, n);
    }
    r->reducing = 0;
    return 0;
}

/* Pulls a RNDV message into r's buffer (or through the reduction) and
 * answers it. */
static void pull(xc_shm_comm_t *c, xc_shm_peer_t *p, xc_shm_req_t *r, uint64_t addr,
                 uint64_t cookie)
{
    int bad = r->len > 0 && (r->reducing ? pull_reduce(c, p, r, addr)
                                         : cma_read(p->pid, r->rbuf, addr, r->len)) != 0;
    if (bad)
        xc_error("reading %zu bytes from rank %d (tag 0x%016llx) with process_vm_readv: %s",
                 r->len, p->rank, (unsigned long long)r->tag, strerror(errno));
    queue_ack(p, cookie, bad, r, bad ? XCOLL_ERR_TRANSPORT : XCOLL_OK);
}

/* --- split copies ------------------------------------------------------------------ *
 *
 * A single-copy read keeps one core copying while the sender's core
 * waits for the ACK: a copy of 4 MiB between two processes took 474 us
 * read by one and 249 us when both copied, each claiming the next piece
 * in turn (bench/split_copy, 2026-12-07; docs/PERFORMANCE.md "Split
 * copies"). So a RNDV send from XCOLL_SHM_SPLIT_MIN offers to
 * help (the slot's frag_len = the piece) through a descriptor of the ring
 * it was sent on, and a receiver that takes the offer publishes its
 * buffer there; from then on each side claims the next piece with one
 * atomic add and copies it: the receiver reads, the sender writes into
 * the receiver with process_vm_writev whenever it progresses. Neither
 * waits for the other to start, so a sender busy elsewhere costs nothing
 * but a look at a line: the receiver claims every piece.
 *
 * The descriptors follow a ring's slots, XC_SHM_SPLITS of them, the
 * send's cookie modulo XC_SHM_SPLITS picking one; a sender offers only
 * through a descriptor no send of its own still waits on (split_busy),
 * and frees it at the ACK, which the receiver sends once every piece is
 * in, so a descriptor belongs to one message from the sender's setting
 * it up to the ACK. Two lines:
 *
 *   rbuf, ready, claim  receiver: its buffer, then ready = the cookie
 *                       (once); then both: fetch_add(1) on claim claims
 *                       the next piece
 *   sdone, sfail        sender: bytes written (release); 1 + the piece it
 *                       could not write, which the receiver then reads
 *
 * The sender reads rbuf once per send, so it may share the counter's
 * line; the count the receiver polls has a line of its own.
 *
 * A sender whose process_vm_writev fails (a sandbox may forbid writes
 * and allow reads) counts that piece as written, names it in sfail, and
 * offers no more on that communicator: its messages are still right.
 *
 * The sender zeroes claim, sdone and sfail before it publishes the slot
 * (ready still holds an older cookie, never this one). A piece claimed
 * is copied before its claimer does anything else, so waiting for the
 * sender's pieces waits for at most one copy by a live process. */
typedef struct xc_shm_split {
    uint64_t rbuf;
    _Atomic uint64_t ready;
    _Atomic uint64_t claim;
    char pad0_[XC_SHM_LINE - 3 * sizeof(uint64_t)];
    _Atomic uint64_t sdone;
    _Atomic uint64_t sfail;
    char pad2_[XC_SHM_LINE - 2 * sizeof(uint64_t)];
} xc_shm_split_t;

_Static_assert(sizeof(xc_shm_split_t) == 2 * XC_SHM_LINE, "a descriptor is two lines");
_Static_assert(XC_SHM_SPLITS <= 8 * sizeof(uint32_t), "split_busy has a bit each");

static xc_shm_split_t *split_desc(const xc_shm_comm_t *c, xc_shm_ring_t *r, uint64_t cookie)
{
    char *after_slots = (char *)(r + 1) + (size_t)XC_SHM_SLOTS * c->slot_bytes;
    return (xc_shm_split_t *)after_slots + cookie % XC_SHM_SPLITS;
}

/* Pieces of 512 KiB from 1 MiB, 256 KiB from 512 KiB: the two-process
 * test took 1 MiB in 50-53 us with 512 KiB pieces and 54-76 with 256 KiB,
 * 4 MiB in 244-315 against 362-429 (the claims and system calls of small
 * pieces cost more than the tail of large ones loses). A shorter message
 * is one piece, copied whole by whichever side claims it first, which
 * pays where several are in flight: a pipelined bcast's segments, of
 * 128-256 KiB from 256 KiB to 1 MiB, went 1.9x as fast. */
static uint64_t split_piece_for(size_t len)
{
    return len >= ((size_t)1 << 20) ? 524288u : len >= 524288u ? 262144u : (uint64_t)len;
}

/* The sender: offers r, a RNDV send being published, if it is long enough
 * and its descriptor is free; returns the piece (the slot's frag_len) or 0. */
static uint32_t split_offer(xc_shm_comm_t *c, xc_shm_peer_t *p, xc_shm_req_t *r)
{
    unsigned i = (unsigned)(r->cookie % XC_SHM_SPLITS);
    xc_shm_split_t *d;
    if (r->len < c->split_min || (p->split_busy & (1u << i)))
        return 0;
    d = split_desc(c, p->out, r->cookie);
    atomic_store_explicit(&d->claim, 0, memory_order_relaxed);
    atomic_store_explicit(&d->sdone, 0, memory_order_relaxed);
    atomic_store_explicit(&d->sfail, 0, memory_order_relaxed);
    p->split_busy |= 1u << i;
    p->split_busy_cookie[i] = r->cookie;
    r->split_desc = d;
    r->split_piece = split_piece_for(r->len);
    r->split_pieces = (r->len + r->split_piece - 1) / r->split_piece;
    return (uint32_t)r->split_piece;
}

/* The sender: the ACK of cookie came (or the send was cancelled and its
 * ACK came anyway): the receiver is done with its descriptor. */
static void split_release(xc_shm_peer_t *p, uint64_t cookie)
{
    unsigned i = (unsigned)(cookie % XC_SHM_SPLITS);
    if ((p->split_busy & (1u << i)) && p->split_busy_cookie[i] == cookie)
        p->split_busy &= ~(1u << i);
}

/* Piece i of r's message: its offset, and its length. */
static uint64_t split_piece_len(const xc_shm_req_t *r, uint64_t i, uint64_t *off)
{
    *off = i * r->split_piece;
    return r->len - *off < r->split_piece ? r->len - *off : r->split_piece;
}

/* The receiver reads piece i of r itself; 0, or -1 (logged, r failed). */
static int split_read(const xc_shm_peer_t *p, xc_shm_req_t *r, uint64_t i)
{
    uint64_t off, n = split_piece_len(r, i, &off);
    if (cma_read(p->pid, r->rbuf + off, r->split_addr + off, (size_t)n) == 0)
        return 0;
    xc_error("reading %zu bytes from rank %d (tag 0x%016llx) with process_vm_readv: %s", r->len,
             p->rank, (unsigned long long)r->tag, strerror(errno));
    r->split_bad = 1;
    return -1;
}

/* The receiver may take an offer into r: not into a reducing receive,
 * and only of the piece both sides compute (another would be garbage: a
 * piece of 1 byte would cost a system call a byte). */
static int split_can(const xc_shm_req_t *r, uint32_t piece)
{
    return piece != 0 && !r->reducing && r->len > 0 && piece == split_piece_for(r->len);
}

/* The receiver takes the offer of the send named cookie, whose buffer is
 * at addr in the sender: r will have its pieces from both sides. */
static void split_begin(xc_shm_comm_t *c, xc_shm_peer_t *p, xc_shm_req_t *r, uint64_t addr,
                        uint64_t cookie, uint32_t piece)
{
    xc_shm_split_t *d = split_desc(c, p->in, cookie);
    r->split_desc = d;
    r->split_addr = addr;
    r->cookie = cookie;
    r->split_piece = piece;
    r->split_pieces = (r->len + piece - 1) / piece;
    r->split_taken = 0;
    r->split_upto = 0;
    r->split_bad = 0;
    req_append(&p->splits, &p->splits_last, r);
    d->rbuf = (uint64_t)(uintptr_t)r->rbuf;
    atomic_store_explicit(&d->ready, cookie, memory_order_release);
    /* a sender that has waited long enough to sleep can still help */
    wake(p);
}

/* Stops further claims on r; the bytes of every piece claimed before, by
 * either side. */
static uint64_t split_close(xc_shm_req_t *r)
{
    uint64_t before = atomic_fetch_add(&r->split_desc->claim, r->split_pieces);
    uint64_t n = before < r->split_pieces ? before : r->split_pieces;
    return n * r->split_piece < r->len ? n * r->split_piece : r->len;
}

/* The receiver's part of r: claims and reads pieces until none is left,
 * then waits for the sender's. 1 when the message is complete (its ACK
 * queued, r out of p->splits), 0 while a piece of the sender's is still
 * being written, -1 if the sender's count is garbage. */
static int split_step(xc_shm_peer_t *p, xc_shm_req_t *r)
{
    xc_shm_split_t *d = r->split_desc;
    uint64_t sdone, fail;
    while (r->split_upto == 0) {
        uint64_t i = atomic_fetch_add(&d->claim, 1), off;
        if (i >= r->split_pieces) {
            r->split_upto = r->len;
            break;
        }
        if (r->split_taken >= r->len)
            return -1; /* more claims than pieces: the counter went back */
        r->split_taken += split_piece_len(r, i, &off);
        if (split_read(p, r, i) != 0)
            r->split_upto = split_close(r);
    }
    sdone = atomic_load_explicit(&d->sdone, memory_order_acquire);
    if (r->split_taken > r->split_upto || sdone > r->split_upto - r->split_taken)
        return -1;
    if (sdone < r->split_upto - r->split_taken)
        return 0;
    fail = atomic_load_explicit(&d->sfail, memory_order_relaxed);
    if (fail != 0 && !r->split_bad) {
        /* the piece the sender could not write: read it here */
        if (fail - 1 >= r->split_pieces)
            return -1;
        (void)split_read(p, r, fail - 1);
    }
    (void)req_unlink(&p->splits, &p->splits_last, r);
    queue_ack(p, r->cookie, (uint32_t)r->split_bad, r,
              r->split_bad ? XCOLL_ERR_TRANSPORT : XCOLL_OK);
    return 1;
}

/* Every split copy from p: the number completed, or -1 (garbage). */
static int split_steps(xc_shm_peer_t *p)
{
    int done = 0;
    xc_shm_req_t *r = p->splits, *next;
    for (; r != NULL; r = next) {
        int d;
        next = r->next;
        if ((d = split_step(p, r)) < 0)
            return -1;
        done += d;
    }
    return done;
}

/* A split receive that will not complete (cancelled after a timeout, a
 * broken communicator, a communicator going away; the caller takes it out
 * of p->splits): no more claims, and
 * the sender's pieces already claimed are waited for, as it may be
 * writing into the buffer that the caller is about to take back. A piece
 * claimed is written unless its writer dies: wait while it lives, up to
 * 10 s (a stopped process), and say so if it never came. */
static void split_revoke(xc_shm_peer_t *p, xc_shm_req_t *r)
{
    xc_shm_split_t *d = r->split_desc;
    uint64_t t0 = now_ns(), want, got;
    if (r->split_upto == 0)
        r->split_upto = split_close(r);
    want = r->split_upto > r->split_taken ? r->split_upto - r->split_taken : 0;
    while ((got = atomic_load_explicit(&d->sdone, memory_order_acquire)) < want &&
           now_ns() - t0 < 10000000000ull && (kill(p->pid, 0) == 0 || errno != ESRCH))
        sched_yield();
    if (got < want)
        xc_error("rank %d did not finish writing its part of a cancelled receive (%llu of %llu "
                 "bytes); it may still write into that buffer", p->rank,
                 (unsigned long long)got, (unsigned long long)want);
}

/* The sender's part, whenever it progresses: writes the pieces it claims
 * of every offer the receiver has taken up. */
static int split_help(xc_shm_comm_t *c, xc_shm_peer_t *p)
{
    int events = 0;
    /* split_min is SIZE_MAX once a write failed: help no more either */
    for (xc_shm_req_t *r = p->rndv_wait; r != NULL && c->split_min != SIZE_MAX; r = r->next) {
        xc_shm_split_t *d = r->split_desc;
        if (d == NULL || r->split_over || r->orphan ||
            atomic_load_explicit(&d->ready, memory_order_acquire) != r->cookie)
            continue;
        if (r->split_addr == 0)
            r->split_addr = d->rbuf;
        /* at most a claim per piece: a counter that goes back is garbage */
        for (uint64_t tries = 0; tries <= r->split_pieces; tries++) {
            uint64_t i = atomic_fetch_add(&d->claim, 1), off, n;
            int failed;
            if (i >= r->split_pieces)
                break;
            n = split_piece_len(r, i, &off);
            failed = cma_copy(p->pid, (void *)(uintptr_t)(r->sbuf + off), r->split_addr + off,
                              (size_t)n, 1) != 0;
            if (failed) {
                xc_warn("shared memory: writing into rank %d with process_vm_writev failed "
                        "(%s): it reads the rest itself, and this rank offers no more split "
                        "copies on this communicator", p->rank, strerror(errno));
                atomic_store_explicit(&d->sfail, i + 1, memory_order_relaxed);
                c->split_min = SIZE_MAX;
            }
            atomic_fetch_add_explicit(&d->sdone, n, memory_order_release);
            events++;
            if (failed)
                break;
        }
        r->split_over = 1; /* all claimed, or it failed */
    }
    if (events > 0)
        wake(p);
    return events;
}

static xcoll_status_t truncated(const xc_shm_peer_t *p, uint64_t tag, size_t got, size_t want)
{
    xc_error("rank %d sent %zu bytes with tag 0x%016llx where %zu were expected", p->rank, got,
             (unsigned long long)tag, want);
    return XCOLL_ERR_TRUNCATED;
}

static xcoll_status_t abandoned(const xc_shm_peer_t *p, uint64_t tag)
{
    xc_error("rank %d abandoned its message with tag 0x%016llx (a timeout there)", p->rank,
             (unsigned long long)tag);
    return XCOLL_ERR_TRANSPORT;
}

/* --- sending: fill free slots from the send queue ----------------------------------- */

/* A data slot's header and n payload bytes from src (NULL: none). */
static void fill_data(xc_shm_slot_t *s, uint32_t kind, size_t msg_len, const unsigned char *src,
                      size_t n, uint32_t status)
{
    s->kind = kind;
    s->msg_len = msg_len;
    s->frag_len = (uint32_t)n;
    s->status = status;
    if (n > 0 && src != NULL)
        memcpy(s + 1, src, n);
}

/* The slot at out_head is filled: hand it to the receiver. */
static void publish(xc_shm_peer_t *p, xc_shm_slot_t *s)
{
    p->out_head++;
    atomic_store_explicit(&s->seq, p->out_head, memory_order_release);
}

/* The next free slot of p's ring, or NULL while it is full. */
static xc_shm_slot_t *free_slot(const xc_shm_comm_t *c, xc_shm_peer_t *p)
{
    if (p->out_head - p->out_tail >= XC_SHM_SLOTS) {
        p->out_tail = atomic_load_explicit(&p->out->tail, memory_order_acquire);
        if (p->out_head - p->out_tail >= XC_SHM_SLOTS)
            return NULL;
    }
    return slot_at(c, p->out, p->out_head);
}

static int push(xc_shm_comm_t *c, xc_shm_peer_t *p)
{
    int events = 0;
    while (p->sendq != NULL) {
        xc_shm_req_t *r = p->sendq;
        xc_shm_slot_t *s = free_slot(c, p);
        if (s == NULL)
            break;
        s->tag = r->tag;
        if (r->kind == REQ_ACK) {
            s->kind = XC_SHM_ACK;
            s->cookie = r->cookie;
            s->status = r->ack_status;
        } else if (r->rndv) {
            s->kind = XC_SHM_RNDV;
            s->msg_len = r->len;
            s->addr = (uint64_t)(uintptr_t)r->sbuf;
            s->cookie = r->cookie;
            s->frag_len = split_offer(c, p, r);
        } else {
            size_t n = r->len - r->done < c->payload ? r->len - r->done : c->payload;
            /* The rest of a cancelled send goes out empty and marked: its
             * buffer may be gone, and the receiver must fail, not take
             * whatever the slots held before. */
            fill_data(s, r->done == 0 ? XC_SHM_FIRST : XC_SHM_MORE, r->len,
                      r->orphan ? NULL : r->sbuf + r->done, n, (uint32_t)r->orphan);
            r->done += n;
        }
        publish(p, s);
        events++;
        if (r->kind == REQ_SEND && !r->rndv && r->done < r->len)
            continue; /* the rest of this message next */
        p->sendq = r->next;
        if (p->sendq == NULL)
            p->sendq_last = NULL;
        if (r->kind == REQ_ACK) {
            complete(r->waiter, r->waiter->status);
            req_free(r);
        } else if (r->rndv) {
            r->next = p->rndv_wait;
            p->rndv_wait = r;
        } else {
            complete(r, XCOLL_OK);
        }
    }
    if (events > 0)
        wake(p);
    return events;
}

/* --- receiving: consume filled slots ------------------------------------------------ */

static void finish_cur(xc_shm_peer_t *p)
{
    if (p->cur != NULL)
        complete(p->cur, p->cur->discard ? p->cur->status : XCOLL_OK);
    p->cur = NULL;
    p->cur_unexp = NULL;
}

/* r refused a message of another length whose slots are still coming: it
 * completes when they have all gone by, so that the sender, whose send
 * completes only once every slot is in the ring, is not left waiting on a
 * receiver that went on. */
static void discard_into(xc_shm_peer_t *p, xc_shm_req_t *r, xcoll_status_t st)
{
    r->discard = 1;
    r->status = st;
    p->cur = r;
}

static xc_shm_req_t *match_posted(xc_shm_peer_t *p, uint64_t tag)
{
    xc_shm_req_t **pp, *prev = NULL;
    for (pp = &p->posted; *pp != NULL; prev = *pp, pp = &(*pp)->next)
        if ((*pp)->tag == tag) {
            xc_shm_req_t *r = *pp;
            req_unlink_at(pp, &p->posted_last, prev);
            return r;
        }
    return NULL;
}

static void unexp_add(xc_shm_peer_t *p, xc_shm_unexp_t *u)
{
    u->next = NULL;
    if (p->unexp_last != NULL)
        p->unexp_last->next = u;
    else
        p->unexp = u;
    p->unexp_last = u;
}

/* A message's first slot (FIRST or RNDV), h its header copied out of
 * shared memory: 0, -1 if it is garbage, 1 if it must wait for memory. */
static int arrive(xc_shm_comm_t *c, xc_shm_peer_t *p, const xc_shm_slot_t *h,
                  const unsigned char *payload)
{
    uint32_t kind = h->kind, frag = h->frag_len;
    uint64_t tag = h->tag, msg_len = h->msg_len;
    xc_shm_req_t *r;
    xc_shm_unexp_t *u;
    if (kind == XC_SHM_FIRST && (frag > c->payload || frag > msg_len ||
                                 (frag < c->payload && frag != msg_len)))
        return -1;
    if (msg_len > ((uint64_t)1 << 46))
        return -1;
    r = match_posted(p, tag);
    if (r != NULL) {
        if (r->len != msg_len) {
            xcoll_status_t st = truncated(p, tag, (size_t)msg_len, r->len);
            if (kind == XC_SHM_RNDV) {
                queue_ack(p, h->cookie, 0, r, st);
            } else {
                p->cur_left = (size_t)msg_len - frag;
                if (p->cur_left == 0)
                    complete(r, st);
                else
                    discard_into(p, r, st);
            }
            return 0;
        }
        if (kind == XC_SHM_RNDV) {
            if (split_can(r, frag)) {
                split_begin(c, p, r, h->addr, h->cookie, frag);
                return 0;
            }
            pull(c, p, r, h->addr, h->cookie);
            return 0;
        }
        if (r->reducing && frag == msg_len) {
            xc_land_reduce_apply(&r->red, 0, payload, frag); /* from the slot: no copy */
            r->reducing = 0;
        } else if (frag > 0) {
            memcpy(r->rbuf, payload, frag);
        }
        r->done = frag;
        p->cur_left = (size_t)msg_len - frag;
        if (p->cur_left == 0)
            complete(r, XCOLL_OK);
        else
            p->cur = r;
        return 0;
    }
    u = unexp_new((size_t)msg_len, kind == XC_SHM_FIRST);
    if (u == NULL) {
        /* not the peer's fault: the slot stays until memory comes back or
         * the receive is posted */
        if (!p->oom_logged)
            xc_error("out of memory for a %llu-byte message from rank %d that arrived before "
                     "its receive; it waits in shared memory", (unsigned long long)msg_len,
                     p->rank);
        p->oom_logged = 1;
        return 1;
    }
    p->oom_logged = 0;
    u->tag = tag;
    u->len = (size_t)msg_len;
    if (kind == XC_SHM_RNDV) {
        u->rndv = 1;
        u->addr = h->addr;
        u->cookie = h->cookie;
        u->split_piece = frag;
        u->arrived = u->len;
    } else {
        if (frag > 0)
            memcpy(u->data, payload, frag);
        u->arrived = frag;
        p->cur_left = u->len - frag;
        if (p->cur_left > 0)
            p->cur_unexp = u;
    }
    unexp_add(p, u);
    return 0;
}

static void on_ack(xc_shm_peer_t *p, uint64_t cookie, uint32_t status)
{
    xc_shm_req_t **pp;
    split_release(p, cookie);
    for (pp = &p->rndv_wait; *pp != NULL; pp = &(*pp)->next) {
        xc_shm_req_t *r = *pp;
        if (r->cookie != cookie)
            continue;
        req_unlink_at(pp, NULL, NULL);
        if (status != 0)
            xc_error("rank %d could not read the %zu bytes sent to it (tag 0x%016llx)", p->rank,
                     r->len, (unsigned long long)r->tag);
        complete(r, status != 0 ? XCOLL_ERR_TRANSPORT : XCOLL_OK);
        return;
    }
    /* the send was cancelled after a timeout: nothing waits for it */
}

static int drain_slots(xc_shm_comm_t *c, xc_shm_peer_t *p)
{
    int events = 0;
    for (;;) {
        xc_shm_slot_t *s = slot_at(c, p->in, p->in_tail);
        const unsigned char *payload = (const unsigned char *)(s + 1);
        uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        xc_shm_slot_t h;
        uint32_t kind, frag;
        int bad = 0;
        if (seq != p->in_tail + 1) {
            /* not filled yet: the slot still holds the lap before (or
             * nothing, in the first lap); anything else is garbage */
            uint64_t before = p->in_tail >= XC_SHM_SLOTS ? p->in_tail + 1 - XC_SHM_SLOTS : 0;
            if (seq != before)
                fail_comm(c, p->rank, "a slot sequence number out of range");
            return events;
        }
        /* the header is read once: what was checked is what is used */
        memcpy(&h, s, sizeof(h));
        kind = h.kind;
        frag = h.frag_len;
        if (p->cur_left > 0) {
            /* the rest of a message: into its receive, its unexpected
             * entry, or (refused) nowhere */
            if (kind != XC_SHM_MORE || frag > c->payload || frag > p->cur_left ||
                (frag < c->payload && frag != p->cur_left)) {
                bad = 1;
            } else {
                if (h.status != 0 && p->cur != NULL && !p->cur->discard)
                    discard_into(p, p->cur, abandoned(p, p->cur->tag));
                else if (h.status != 0 && p->cur_unexp != NULL) {
                    p->cur_unexp->aborted = 1;
                }
                if (p->cur != NULL && !p->cur->discard) {
                    memcpy(p->cur->rbuf + p->cur->done, payload, frag);
                    p->cur->done += frag;
                } else if (p->cur_unexp != NULL) {
                    memcpy(p->cur_unexp->data + p->cur_unexp->arrived, payload, frag);
                    p->cur_unexp->arrived += frag;
                }
                p->cur_left -= frag;
                if (p->cur_left == 0)
                    finish_cur(p);
            }
        } else if (kind == XC_SHM_FIRST || kind == XC_SHM_RNDV) {
            int a = arrive(c, p, &h, payload);
            if (a > 0)
                return events; /* no memory now: the slot waits */
            bad = a != 0;
        } else if (kind == XC_SHM_ACK) {
            on_ack(p, h.cookie, h.status);
        } else {
            bad = 1;
        }
        if (bad) {
            fail_comm(c, p->rank, "a slot with a bad kind or length");
            return events;
        }
        p->in_tail++;
        atomic_store_explicit(&p->in->tail, p->in_tail, memory_order_release);
        events++;
    }
}

/* Consumes what p sent; p may wait for the slots this frees. */
static int drain(xc_shm_comm_t *c, xc_shm_peer_t *p)
{
    int events = drain_slots(c, p);
    if (events > 0)
        wake(p);
    return events;
}

static int progress_comm(xc_shm_comm_t *c)
{
    int events = 0;
    if (c->broken)
        return 0;
    for (int i = 0; i < c->nlocal && !c->broken; i++) {
        xc_shm_peer_t *p = &c->peers[i];
        /* a quiet peer, the common case in a poll, costs one look at the
         * slot it would fill next */
        if (p->sendq == NULL && p->splits == NULL && p->rndv_wait == NULL &&
            atomic_load_explicit(&slot_at(c, p->in, p->in_tail)->seq, memory_order_relaxed) ==
                (p->in_tail >= XC_SHM_SLOTS ? p->in_tail + 1 - XC_SHM_SLOTS : 0))
            continue;
        events += drain(c, p);
        if (p->splits != NULL) {
            int done = split_steps(p);
            if (done < 0)
                fail_comm(c, p->rank, "a split copy's byte count out of range");
            events += done > 0 ? done : 0;
        }
        events += push(c, p);
        events += split_help(c, p);
    }
    return events;
}

/* --- setup ---------------------------------------------------------------------- */

typedef struct {
    uint64_t max_len;
    uint64_t cma_min;   /* cma_min_asked() */
    uint64_t probe_addr;
    uint64_t probe_val;
    int64_t pid;
    int32_t want;
    int32_t failed; /* this rank's transports failed: every rank fails */
} hello_t;

typedef struct {
    int32_t seg_ok;
    int32_t cma_ok;
    uint64_t door;  /* door_open()'s token, 0: none */
    char name[XC_SHM_NAME_LEN];
} names_t;

typedef struct {
    int32_t mapped;
    int32_t door_ok; /* rang every local rank's doorbell */
} mapped_t;

static void unmap_all(xc_shm_comm_t *c)
{
    if (c->peer_seg != NULL)
        for (int i = 0; i < c->nlocal; i++)
            if (c->peer_seg[i] != NULL && c->peer_seg[i] != c->seg)
                munmap(c->peer_seg[i], c->seg_bytes);
    if (c->seg != NULL && c->seg != MAP_FAILED)
        munmap(c->seg, c->seg_bytes);
    free(c->peer_seg);
    c->peer_seg = NULL;
    c->seg = NULL;
}

/* Why this rank cannot use shared memory: a warning the first time, then
 * (one per communicator) at info level. */
static int g_off_warned;
#define OFF_NOTE(...)                                                     \
    do {                                                                  \
        XC_LOG(g_off_warned ? XC_LOG_INFO : XC_LOG_WARN, __VA_ARGS__);    \
        g_off_warned = 1;                                                 \
    } while (0)

/* Creates this rank's segment; 0 on success. name is filled either way. */
static int create_segment(xc_shm_comm_t *c, char *name)
{
    unsigned char rnd[12];
    int fd, err;
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        OFF_NOTE("shared memory off: no random bytes for a segment name (%s)", strerror(errno));
        return -1;
    }
    snprintf(name, XC_SHM_NAME_LEN, "/xcoll-%d-", (int)getpid());
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(name + strlen(name), 3, "%02x", rnd[i]);
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        OFF_NOTE("shared memory off: shm_open %s: %s", name, strerror(errno));
        return -1;
    }
    /* reserve the pages now: a full /dev/shm fails here, not later with
     * SIGBUS in the middle of a collective */
    err = posix_fallocate(fd, 0, (off_t)c->seg_bytes);
    if (err != 0) {
        OFF_NOTE("shared memory off: %zu bytes in /dev/shm: %s", c->seg_bytes, strerror(err));
        close(fd);
        shm_unlink(name);
        return -1;
    }
    c->seg = mmap(NULL, c->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (c->seg == MAP_FAILED) {
        c->seg = NULL;
        OFF_NOTE("shared memory off: mmap of %zu bytes: %s", c->seg_bytes, strerror(errno));
        shm_unlink(name);
        return -1;
    }
    return 0;
}

static void *map_peer(const char *name, size_t bytes)
{
    struct stat st;
    void *p;
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        OFF_NOTE("shared memory off: cannot open a peer's segment %s: %s", name, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != bytes) {
        OFF_NOTE("shared memory off: a peer's segment %s is not %zu bytes", name, bytes);
        close(fd);
        return NULL;
    }
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        OFF_NOTE("shared memory off: mmap of a peer's segment: %s", strerror(errno));
        return NULL;
    }
    return p;
}

/* Every rank the same way: 0 = the path is off on every rank. */
static int setup(xc_shm_comm_t *c, const xcoll_bootstrap_t *boot, const struct xc_topo *topo)
{
    hello_t me, *hello = NULL;
    names_t mine, *names = NULL;
    mapped_t mapped, *all_mapped = NULL;
    int on = 0, ok, all_want = 1, shared = 0, failed = -1;
    size_t n = (size_t)c->size;

    hello = calloc(n, sizeof(*hello));
    names = calloc(n, sizeof(*names));
    all_mapped = calloc(n, sizeof(*all_mapped));
    c->local_of = malloc(n * sizeof(*c->local_of));
    memset(&me, 0, sizeof(me));
    me.max_len = env_bytes("XCOLL_SHM_MAX", XC_SHM_MAX_DEFAULT);
    me.cma_min = cma_min_asked();
    me.pid = (int64_t)getpid();
    g_cma_probe = now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x78636f6c6cull;
    me.probe_val = g_cma_probe;
    me.probe_addr = (uint64_t)(uintptr_t)&g_cma_probe;
    me.want = shm_wanted();
    if (hello == NULL) {
        /* without somewhere to gather into this rank cannot take part:
         * the others wait in the bootstrap (as for the UCX exchange) */
        xc_error("out of memory for the shared-memory setup of %d ranks", c->size);
        free(names);
        free(all_mapped);
        return -2;
    }
    if (names == NULL || all_mapped == NULL || c->local_of == NULL) {
        /* fail in the first exchange: every rank then fails after it */
        xc_error("out of memory for the shared-memory setup of %d ranks", c->size);
        me.want = 0;
        me.failed = 1;
        (void)boot->allgather(&me, hello, sizeof(me), boot->ctx);
        free(hello);
        free(names);
        free(all_mapped);
        return -2;
    }
    if (boot->allgather(&me, hello, sizeof(me), boot->ctx) != 0) {
        xc_error("shared memory: the bootstrap allgather failed");
        goto fail_boot;
    }
    for (size_t r = 0; r < n; r++) {
        if (hello[r].failed) {
            xc_error("rank %zu could not set up its transports (see its log): the "
                     "communicator fails on every rank", r);
            failed = -3;
            goto fail_boot;
        }
    }
    /* where messages switch to UCX or CMA must be the same on every rank */
    c->max_len = (size_t)me.max_len;
    for (size_t r = 0; r < n; r++)
        if (hello[r].max_len < c->max_len)
            c->max_len = (size_t)hello[r].max_len;
    c->cma_min = 0;
    for (size_t r = 0; r < n; r++) {
        /* unset: just above the slots (which may take everything) */
        uint64_t m = hello[r].cma_min != 0 ? hello[r].cma_min
                     : c->max_len < SIZE_MAX ? (uint64_t)c->max_len + 1
                     : UINT64_MAX;
        if (m > c->cma_min)
            c->cma_min = m > SIZE_MAX ? SIZE_MAX : (size_t)m;
        all_want &= hello[r].want != 0;
        c->local_of[r] = -1;
        if (topo->host_of[r] == topo->host_of[c->rank])
            c->local_of[r] = c->nlocal++;
    }
    /* a job of one rank per node gains nothing: does any node hold two? */
    shared = topo->nhosts < c->size;
    c->nremote = c->size - c->nlocal;
    if (!all_want || !shared) {
        for (size_t r = 0; r < n && !all_want; r++)
            if (!hello[r].want) {
                xc_info("shared memory off: rank %zu does not use it (XCOLL_SHM=0 there)", r);
                break;
            }
        c->nlocal = 0;
        goto off;
    }
    c->payload = payload_for(c->nlocal);
    /* slots start line pairs: the header and the payload's first line
     * come over together */
    c->slot_bytes = (XC_SHM_HDR + c->payload + XC_SHM_LINE - 1) / XC_SHM_LINE * XC_SHM_LINE;
    c->ring_bytes = sizeof(xc_shm_ring_t) + XC_SHM_SLOTS * c->slot_bytes +
                    XC_SHM_SPLITS * sizeof(xc_shm_split_t);
    c->seg_bytes = sizeof(xc_shm_bell_t) + (size_t)c->nlocal * c->ring_bytes;

    memset(&mine, 0, sizeof(mine));
    mine.seg_ok = create_segment(c, mine.name) == 0;
    mine.door = door_open();
    /* CMA is used only if every rank can read every local peer */
    mine.cma_ok = c->cma_min != SIZE_MAX;
    for (size_t r = 0; r < n && mine.cma_ok; r++) {
        uint64_t v = 0;
        if (c->local_of[r] < 0 || (int)r == c->rank)
            continue;
        if (cma_read((pid_t)hello[r].pid, &v, hello[r].probe_addr, sizeof(v)) != 0) {
            xc_info("shared memory: no single-copy reads from rank %zu (%s): long messages "
                    "go without them", r, strerror(errno));
            mine.cma_ok = 0;
        } else if (v != hello[r].probe_val) {
            xc_info("shared memory: no single-copy reads from rank %zu (it read another "
                    "value): long messages go without them", r);
            mine.cma_ok = 0;
        }
    }
    if (boot->allgather(&mine, names, sizeof(mine), boot->ctx) != 0) {
        xc_error("shared memory: the bootstrap allgather failed");
        if (mine.seg_ok)
            shm_unlink(mine.name);
        goto fail_boot;
    }
    ok = 1;
    c->cma = 1;
    for (size_t r = 0; r < n; r++) {
        if (ok && !names[r].seg_ok && mine.seg_ok)
            xc_info("shared memory off: rank %zu could not create its segment", r);
        ok &= names[r].seg_ok != 0;
        c->cma &= names[r].cma_ok != 0;
    }
    c->peers = calloc((size_t)c->nlocal, sizeof(*c->peers));
    c->peer_seg = calloc((size_t)c->nlocal, sizeof(*c->peer_seg));
    mapped.mapped = ok && c->peers != NULL && c->peer_seg != NULL;
    for (size_t r = 0; r < n && mapped.mapped; r++) {
        int i = c->local_of[r];
        if (i < 0)
            continue;
        names[r].name[XC_SHM_NAME_LEN - 1] = '\0';
        c->peer_seg[i] = (int)r == c->rank ? c->seg : map_peer(names[r].name, c->seg_bytes);
        mapped.mapped = c->peer_seg[i] != NULL;
    }
    /* a doorbell is used only if this rank can ring every local one
     * (ranks of one host may sit in different network namespaces, which
     * abstract sockets do not cross): one probe byte each, which costs
     * its owner at most one early wakeup */
    mapped.door_ok = mapped.mapped && g_door >= 0;
    for (size_t r = 0; r < n && mapped.door_ok; r++) {
        int i = c->local_of[r];
        if (i < 0)
            continue;
        if (names[r].door == 0) {
            mapped.door_ok = 0;
            break;
        }
        c->peers[i].door_len = door_addr(&c->peers[i].door, names[r].door);
        if (!door_ring(&c->peers[i].door, c->peers[i].door_len)) {
            if (!g_door_warned)
                xc_info("shared memory: rank %zu's doorbell cannot be rung (%s): waits across "
                        "nodes nap", r, strerror(errno));
            g_door_warned = 1;
            mapped.door_ok = 0;
        }
    }
    if (boot->allgather(&mapped, all_mapped, sizeof(mapped), boot->ctx) != 0) {
        xc_error("shared memory: the bootstrap allgather failed");
        if (mine.seg_ok)
            shm_unlink(mine.name);
        goto fail_boot;
    }
    /* every rank has mapped what it could: the name may go */
    if (mine.seg_ok)
        shm_unlink(mine.name);
    /* the peers' probes are all in (a datagram is queued when sent). A
     * progress thread asleep on the doorbell meanwhile may lose a ring to
     * this: its sleep then ends at its cap (1 ms), and it could not have
     * taken the lock, which this creation holds, any sooner */
    if (g_door >= 0)
        door_drain(g_door);
    on = 1;
    c->door = 1;
    for (size_t r = 0; r < n; r++) {
        on &= all_mapped[r].mapped != 0;
        if (c->local_of[r] >= 0)
            c->door &= all_mapped[r].door_ok != 0;
    }
    if (!c->door)
        for (int i = 0; i < c->nlocal && c->peers != NULL; i++)
            c->peers[i].door_len = 0;
    if (!on) {
        for (size_t r = 0; r < n && mapped.mapped; r++)
            if (!all_mapped[r].mapped) {
                xc_info("shared memory off: rank %zu could not map its peers' segments", r);
                break;
            }
        goto off_unmap;
    }
    for (size_t r = 0; r < n; r++) {
        int i = c->local_of[r];
        xc_shm_peer_t *p;
        if (i < 0)
            continue;
        p = &c->peers[i];
        p->rank = (int)r;
        p->pid = (pid_t)hello[r].pid;
        /* my ring in its segment is at my local index; its ring in mine at its */
        p->out = ring_in(c, (int)r == c->rank ? c->seg : c->peer_seg[i], c->local_of[c->rank]);
        p->in = ring_in(c, c->seg, i);
        p->bell = bell_of((int)r == c->rank ? c->seg : c->peer_seg[i]);
    }
    if (c->nlocal > sysconf(_SC_NPROCESSORS_ONLN))
        g_oversubscribed = 1;
    /* a sender's own choice: the receiver takes an offer or reads it all */
    c->split_min = SIZE_MAX;
    if (c->cma) {
        size_t m = env_bytes("XCOLL_SHM_SPLIT_MIN", XC_SPLIT_MIN_DEFAULT);
        c->split_min = m == 0 ? SIZE_MAX : m;
    }
    if (c->cma && c->max_len < SIZE_MAX && c->cma_min > c->max_len + 1)
        xc_info("shared memory: %d ranks on this node, %zu-byte slots, messages from %zu B read "
                "in one copy (CMA), collective ones of %zu B to that size by UCX", c->nlocal,
                c->payload, c->cma_min, c->max_len + 1);
    else if (c->cma)
        xc_info("shared memory: %d ranks on this node, %zu-byte slots, messages from %zu B read "
                "in one copy (CMA)", c->nlocal, c->payload, c->cma_min);
    else
        xc_info("shared memory: %d ranks on this node, %zu-byte slots, messages over %zu B by UCX",
                c->nlocal, c->payload, c->max_len);
    free(hello);
    free(names);
    free(all_mapped);
    return 1;

off_unmap:
    unmap_all(c);
    free(c->peers);
    c->peers = NULL;
    c->nlocal = 0;
off:
    c->nremote = c->size;
    c->door = 0;
    free(hello);
    free(names);
    free(all_mapped);
    return 0;
fail_boot:
    /* nothing of the rings was used: comm_fini must not look at them */
    unmap_all(c);
    free(c->peers);
    c->peers = NULL;
    c->nlocal = 0;
    free(hello);
    free(names);
    free(all_mapped);
    return failed;
}

/* --- the transport ----------------------------------------------------------------- */

static void shm_comm_fini(void *tl_comm)
{
    xc_shm_comm_t *c = tl_comm, **pp;
    if (c == NULL)
        return;
    if (c->nlocal > 0) {
        /* acknowledgements still queued are owed to senders that wait for
         * them; give the rings a bounded time to take them */
        uint64_t t0 = now_ns();
        int pending = 1;
        while (pending && !c->broken && now_ns() - t0 < 2000000000ull) {
            pending = 0;
            progress_comm(c);
            for (int i = 0; i < c->nlocal; i++)
                pending |= c->peers[i].sendq != NULL;
            if (pending)
                sched_yield();
        }
        for (pp = &g_live; *pp != NULL; pp = &(*pp)->next_live)
            if (*pp == c) {
                *pp = c->next_live;
                break;
            }
        for (int i = 0; i < c->nlocal; i++) {
            xc_shm_peer_t *p = &c->peers[i];
            /* receives still splitting (the caller's to free): no sender
             * may write into them once we are gone */
            for (xc_shm_req_t *r = p->splits; r != NULL; r = r->next)
                split_revoke(p, r);
            p->splits = p->splits_last = NULL;
            while (p->sendq != NULL) {
                xc_shm_req_t *r = p->sendq;
                p->sendq = r->next;
                if (r->kind == REQ_ACK && r->waiter->orphan)
                    req_free(r->waiter);
                if (r->kind == REQ_ACK || r->orphan)
                    req_free(r);
            }
            /* cur_unexp, if any, is one of these */
            while (p->unexp != NULL) {
                xc_shm_unexp_t *u = p->unexp;
                p->unexp = u->next;
                unexp_free(u);
            }
        }
    }
    if (c->door && __atomic_load_n(&g_door_sleeps, __ATOMIC_RELAXED) > 0)
        xc_debug("shared memory: %lu of %lu sleeps on UCX's event fd and the doorbell ended "
                 "by the doorbell", __atomic_load_n(&g_door_wakes, __ATOMIC_RELAXED),
                 __atomic_load_n(&g_door_sleeps, __ATOMIC_RELAXED));
    unmap_all(c);
    free(c->peers);
    free(c->local_of);
    free(c->bounce);
    if (c->ucx != NULL)
        xc_ucx_transport.comm_fini(c->ucx);
    free(c);
}

/* A rank that cannot set up this transport still takes part in the first
 * exchange, saying it failed, so that every rank fails after it and the
 * bootstrap stays in step (UCX may fail on one rank only, after its
 * exchanges: an endpoint it could not create). */
static void join_refusing(const xcoll_bootstrap_t *boot)
{
    hello_t me, *hello;
    if (boot->size <= 0 || (unsigned)boot->size > XC_MAX_RANKS)
        return; /* every rank was refused for this before any exchange */
    hello = calloc((size_t)boot->size, sizeof(*hello));
    if (hello == NULL)
        return;
    memset(&me, 0, sizeof(me));
    me.failed = 1;
    (void)boot->allgather(&me, hello, sizeof(me), boot->ctx);
    free(hello);
}

static xcoll_status_t shm_comm_init(const xcoll_bootstrap_t *boot, const struct xc_topo *topo,
                                    void **tl_comm)
{
    xc_shm_comm_t *c = NULL;
    xcoll_status_t st;
    void *ucx = NULL;
    int on;

    if (tl_comm == NULL)
        return XCOLL_ERR_INVALID_ARG;
    *tl_comm = NULL;
    /* UCX fails on every rank together or after its exchanges on some:
     * either way every rank then reaches the first exchange below */
    st = xc_ucx_transport.comm_init(boot, topo, &ucx);
    if (st == XCOLL_OK && (c = calloc(1, sizeof(*c))) == NULL) {
        xc_error("out of memory for a shared-memory communicator");
        xc_ucx_transport.comm_fini(ucx);
        st = XCOLL_ERR_NO_MEMORY;
    }
    if (st != XCOLL_OK) {
        if (boot != NULL && boot->allgather != NULL)
            join_refusing(boot);
        return st;
    }
    c->ucx = ucx;
    c->rank = boot->rank;
    c->size = boot->size;
    on = setup(c, boot, topo);
    if (on < 0) {
        shm_comm_fini(c);
        return on == -2 ? XCOLL_ERR_NO_MEMORY
               : on == -3 ? XCOLL_ERR_TRANSPORT
                          : XCOLL_ERR_BOOTSTRAP;
    }
    if (on) {
        c->next_live = g_live;
        __atomic_store_n(&g_live, c, __ATOMIC_RELEASE);
    }
    *tl_comm = c;
    return XCOLL_OK;
}

/* Counts what UCX has in flight, which it moves only while progressed. */
static xcoll_status_t ucx_posted(xcoll_status_t st, void **req)
{
    if (st == XCOLL_OK && *req != NULL)
        g_ucx_pending++;
    return st;
}

/* A message to a local peer that its receiver reads from our memory. */
static int by_cma(const xc_shm_comm_t *c, int peer, size_t len)
{
    return c->cma && len >= c->cma_min && peer != c->rank;
}

/* Long collective messages go to UCX, unless read by CMA. Point-to-point
 * ones never do: the public contract reports a receive of another count as
 * XCOLL_ERR_TRUNCATED, which needs both ends on one path whatever the
 * lengths. */
static int by_ucx(const xc_shm_comm_t *c, int peer, uint64_t tag, size_t len)
{
    return len > c->max_len && (tag & XC_TAG_P2P_BIT) == 0 && !by_cma(c, peer, len);
}

static int args_ok(const xc_shm_comm_t *c, int peer, void **req)
{
    if (c == NULL || req == NULL || peer < 0 || peer >= c->size) {
        xc_error("shared-memory transport: bad communicator, request pointer or peer %d", peer);
        return 0;
    }
    return 1;
}

static int local_peer(xc_shm_comm_t *c, int peer)
{
    return c->nlocal > 0 ? c->local_of[peer] : -1;
}

static xcoll_status_t shm_isend(void *tl_comm, int peer, uint64_t tag, const void *buf,
                                size_t len, void **req)
{
    xc_shm_comm_t *c = tl_comm;
    xc_shm_peer_t *p;
    xc_shm_req_t *r;
    int i;
    if (!args_ok(c, peer, req))
        return XCOLL_ERR_INVALID_ARG;
    if ((i = local_peer(c, peer)) < 0 || by_ucx(c, peer, tag, len))
        return ucx_posted(xc_ucx_transport.isend(c->ucx, peer, tag, buf, len, req), req);
    if (c->broken)
        return XCOLL_ERR_TRANSPORT;
    p = &c->peers[i];
    if (p->sendq == NULL && len <= c->payload && !by_cma(c, peer, len)) {
        /* one slot and nothing queued before it: straight into the ring,
         * complete at once, no request (a small collective's common case) */
        xc_shm_slot_t *s = free_slot(c, p);
        if (s != NULL) {
            s->tag = tag;
            fill_data(s, XC_SHM_FIRST, len, buf, len, 0);
            publish(p, s);
            wake(p);
            *req = NULL;
            return XCOLL_OK;
        }
    }
    r = req_new();
    if (r == NULL) {
        xc_error("out of memory for a send to rank %d", peer);
        return XCOLL_ERR_NO_MEMORY;
    }
    r->kind = REQ_SEND;
    r->tag = tag;
    r->sbuf = buf;
    r->len = len;
    r->rndv = by_cma(c, peer, len);
    r->cookie = ++p->next_cookie;
    sendq_add(p, r);
    push(c, p);
    if (r->complete) {
        req_free(r);
        *req = NULL;
        return XCOLL_OK;
    }
    *req = tagged(r);
    return XCOLL_OK;
}

/* A receive whose message is already in the ring, the next slot to read,
 * whole, with nothing older from p unread or waiting to match (the peer
 * ran ahead, common in a loop of small collectives): taken now, without a
 * request. 1 if it was; 0 leaves everything to the receive's usual path,
 * which also judges any slot this one does not take. */
static int take_waiting(xc_shm_comm_t *c, xc_shm_peer_t *p, uint64_t tag, void *buf, size_t len,
                        const xc_land_reduce_t *red)
{
    xc_shm_slot_t *s = slot_at(c, p->in, p->in_tail), h;
    if (p->unexp != NULL || p->posted != NULL || p->cur_left > 0 || len > c->payload ||
        atomic_load_explicit(&s->seq, memory_order_acquire) != p->in_tail + 1)
        return 0;
    /* read once from shared memory: what was checked is what is used */
    memcpy(&h, s, sizeof(h));
    if (h.kind != XC_SHM_FIRST || h.tag != tag || h.msg_len != len || h.frag_len != len)
        return 0;
    if (red != NULL && len > 0)
        xc_land_reduce_apply(red, 0, s + 1, len);
    else if (len > 0)
        memcpy(buf, s + 1, len);
    p->in_tail++;
    atomic_store_explicit(&p->in->tail, p->in_tail, memory_order_release);
    /* a sender that ran ahead has filled the next slot already: its lines
     * come in while the caller goes on, not at the next receive */
    s = slot_at(c, p->in, p->in_tail);
    __builtin_prefetch(s);
    __builtin_prefetch(s + 1);
    wake(p); /* it may wait for the slot */
    return 1;
}

/* A receive from local peer p; red (NULL: none) as in irecv_reduce. */
static xcoll_status_t post_recv(xc_shm_comm_t *c, xc_shm_peer_t *p, uint64_t tag, void *buf,
                                size_t len, const xc_land_reduce_t *red, void **req)
{
    xc_shm_unexp_t **up, *u, *prev = NULL;
    xc_shm_req_t *r;
    xcoll_status_t st;
    *req = NULL;
    if (take_waiting(c, p, tag, buf, len, red))
        return XCOLL_OK;
    r = req_new();
    if (r == NULL) {
        xc_error("out of memory for a receive from rank %d", p->rank);
        return XCOLL_ERR_NO_MEMORY;
    }
    r->kind = REQ_RECV;
    r->tag = tag;
    r->rbuf = buf;
    r->len = len;
    if (red != NULL) {
        r->reducing = len > 0;
        r->red = *red;
    }
    for (up = &p->unexp; (u = *up) != NULL; prev = u, up = &u->next)
        if (u->tag == tag)
            break;
    if (u == NULL) {
        req_append(&p->posted, &p->posted_last, r);
        *req = tagged(r);
        return XCOLL_OK;
    }
    *up = u->next;
    if (p->unexp_last == u)
        p->unexp_last = prev;
    if (u->len != len || u->aborted) {
        /* refused: reported by test(), as a later match would be */
        st = u->len != len ? truncated(p, tag, u->len, len) : abandoned(p, tag);
        if (u->rndv) {
            queue_ack(p, u->cookie, 0, r, st);
        } else if (u == p->cur_unexp) {
            discard_into(p, r, st);
            p->cur_unexp = NULL;
        } else {
            complete(r, st);
        }
        unexp_free(u);
        *req = tagged(r);
        return XCOLL_OK;
    }
    if (u->rndv) {
        if (split_can(r, u->split_piece)) {
            split_begin(c, p, r, u->addr, u->cookie, u->split_piece);
        } else {
            pull(c, p, r, u->addr, u->cookie);
        }
        unexp_free(u);
        push(c, p);
        if (r->complete && r->status == XCOLL_OK)
            req_free(r);
        else
            *req = tagged(r);
        return XCOLL_OK;
    }
    if (u == p->cur_unexp) {
        /* still arriving: the rest goes straight into buf */
        if (u->arrived > 0)
            memcpy(buf, u->data, u->arrived);
        r->done = u->arrived;
        p->cur = r;
        p->cur_unexp = NULL;
        *req = tagged(r);
    } else {
        if (r->reducing)
            xc_land_reduce_apply(&r->red, 0, u->data, len); /* all here: no copy first */
        else if (u->arrived > 0)
            memcpy(buf, u->data, u->arrived);
        req_free(r);
    }
    unexp_free(u);
    return XCOLL_OK;
}

/* Both receives: a message UCX carries goes to UCX, except that a reducing
 * one (red) is declined, since UCX lands it whole anyway. */
static xcoll_status_t recv_routed(xc_shm_comm_t *c, int peer, uint64_t tag, void *buf,
                                  size_t len, const xc_land_reduce_t *red, void **req)
{
    int i;
    if (!args_ok(c, peer, req))
        return XCOLL_ERR_INVALID_ARG;
    if ((i = local_peer(c, peer)) < 0 || by_ucx(c, peer, tag, len))
        return red != NULL ? XCOLL_DECLINED
                           : ucx_posted(xc_ucx_transport.irecv(c->ucx, peer, tag, buf, len, req),
                                        req);
    if (c->broken)
        return XCOLL_ERR_TRANSPORT;
    return post_recv(c, &c->peers[i], tag, buf, len, red, req);
}

static xcoll_status_t shm_irecv(void *tl_comm, int peer, uint64_t tag, void *buf, size_t len,
                                void **req)
{
    return recv_routed(tl_comm, peer, tag, buf, len, NULL, req);
}

static xcoll_status_t shm_irecv_reduce(void *tl_comm, int peer, uint64_t tag, void *buf,
                                       size_t len, const xc_land_reduce_t *red, void **req)
{
    if (red == NULL) {
        xc_error("shared-memory transport: a reducing receive without its reduction");
        return XCOLL_ERR_INVALID_ARG;
    }
    return recv_routed(tl_comm, peer, tag, buf, len, red, req);
}

/* Unlinks r from wherever it waits in p; 1 if p held it. */
static int forget(xc_shm_peer_t *p, const xc_shm_req_t *r)
{
    if (p->cur == r) {
        p->cur = NULL; /* its remaining slots are discarded */
        return 1;
    }
    return req_unlink(&p->posted, &p->posted_last, r) ||
           req_unlink(&p->rndv_wait, NULL, r) || req_unlink(&p->sendq, &p->sendq_last, r);
}

/* Takes r out of the queues and frees it, unless it is half pushed: the
 * receiver expects the rest, so it is pushed (marked abandoned) and r
 * freed then. */
static void drop(xc_shm_comm_t *c, xc_shm_req_t *r)
{
    if (r->acking) {
        r->orphan = 1; /* its ACK, still queued, frees it */
        return;
    }
    for (int i = 0; i < c->nlocal; i++) {
        xc_shm_peer_t *p = &c->peers[i];
        if (r->kind == REQ_RECV && r->split_desc != NULL &&
            req_unlink(&p->splits, &p->splits_last, r)) {
            split_revoke(p, r);
            if (c->broken)
                break;
            /* its failed ACK frees it (or complete() if there is no
             * memory for one) */
            r->orphan = 1;
            queue_ack(p, r->cookie, 1, r, XCOLL_ERR_TRANSPORT);
            return;
        }
        if (p->sendq == r && r->kind == REQ_SEND && !r->rndv && r->done > 0) {
            r->orphan = 1;
            return;
        }
        if (forget(p, r))
            break;
    }
    req_free(r);
}

static void shm_cancel(void *tl_comm, void *req)
{
    xc_shm_comm_t *c = tl_comm;
    xc_shm_req_t *r;
    if (req == NULL)
        return;
    if (!is_shm_req(req)) {
        xc_ucx_transport.cancel(c->ucx, req);
        g_ucx_pending--;
        return;
    }
    r = shm_req(req);
    if (r->complete)
        req_free(r);
    else
        drop(c, r);
}

static xcoll_status_t shm_test(void *tl_comm, void *req)
{
    xc_shm_comm_t *c = tl_comm;
    xc_shm_req_t *r;
    xcoll_status_t st;
    if (req == NULL)
        return XCOLL_OK;
    if (!is_shm_req(req)) {
        st = xc_ucx_transport.test(c->ucx, req);
        if (st != XCOLL_INPROGRESS)
            g_ucx_pending--;
        return st;
    }
    r = shm_req(req);
    if (!r->complete) {
        if (!c->broken)
            return XCOLL_INPROGRESS;
        drop(c, r);
        return XCOLL_ERR_TRANSPORT;
    }
    st = r->status;
    req_free(r);
    return st;
}

static int shm_progress(void *tl_comm)
{
    xc_shm_comm_t *c = tl_comm;
    int events = 0;
    for (xc_shm_comm_t *x = live_head(); x != NULL; x = x->next_live)
        events += progress_comm(x);
    /* UCX carries the other nodes' traffic, the long messages and other
     * communicators': with nothing of ours in it, every 16th round will do */
    if (c->nlocal == 0 || c->nremote > 0 || g_ucx_pending > 0 || (++g_tick & 15) == 0)
        events += xc_ucx_transport.progress(c->ucx);
    return events;
}

/* UCX carries something this wait depends on: then its event fd is what
 * to sleep on, and shared memory, which never signals it, rings the
 * doorbell polled beside it (without doorbells: keeps the sleeps short). */
static int ucx_matters(const xc_shm_comm_t *c)
{
    return c->nlocal == 0 || c->nremote > 0 || g_ucx_pending > 0;
}

/* Only UCX's part can owe a peer anything (transport.h): a ring slot or
 * a single-copy read is complete once reported so. */
static int shm_drain(void *tl_comm, xc_wait_t *w)
{
    xc_shm_comm_t *c = tl_comm;
    if (c->ucx == NULL)
        return -1;
    return xc_ucx_transport.drain(c->ucx, w);
}

/* Only UCX's part can owe tails (a ring slot is whole once published). */
static int shm_owes_tails(void *tl_comm)
{
    xc_shm_comm_t *c = tl_comm;
    return c->ucx != NULL && xc_ucx_transport.owes_tails(c->ucx);
}

static void shm_disarm(void)
{
    for (xc_shm_comm_t *x = live_head(); x != NULL; x = x->next_live) {
        xc_shm_bell_t *b = bell_of(x->seg);
        if (__atomic_load_n(&b->sleeping, __ATOMIC_RELAXED))
            __atomic_store_n(&b->sleeping, 0, __ATOMIC_RELAXED);
    }
}

/* Whether every live communicator's peers can ring this rank's doorbell:
 * then a wait on UCX and shared memory together may sleep until either
 * rings. */
static int doors_everywhere(void)
{
    if (g_door < 0)
        return 0;
    for (xc_shm_comm_t *x = live_head(); x != NULL; x = x->next_live)
        if (!x->door)
            return 0;
    return 1;
}

/* Raises the flag of every live communicator, then looks at the rings a
 * last time: a message published before a sender could see the flag is
 * found here, one published after it rings the bell (a futex, or with
 * UCX in the wait, the doorbell beside UCX's event fd). */
static int shm_arm(void *tl_comm, xc_wait_t *w)
{
    xc_shm_comm_t *c = tl_comm;
    uint32_t how = XC_SLEEP_FUTEX;
    int events = 0;
    if (c->nlocal == 0 && live_head() == NULL)
        return xc_ucx_transport.arm(c->ucx, w);
    if (ucx_matters(c)) {
        int a = xc_ucx_transport.arm(c->ucx, w);
        if (a != 0)
            return a;
        if (!doors_everywhere()) {
            /* shared memory cannot end this sleep: keep it short */
            if (w->max_us > 50)
                w->max_us = 50;
            return 0;
        }
        w->fd2 = g_door;
        how = XC_SLEEP_DOOR;
    } else {
        w->fd = -1;
        w->fd2 = -1;
        w->nwords = 0;
        w->max_us = 2000;
        if (__atomic_load_n(&g_no_futex, __ATOMIC_RELAXED) ||
            (__atomic_load_n(&g_no_waitv, __ATOMIC_RELAXED) && live_head()->next_live != NULL))
            return -1;
    }
    for (xc_shm_comm_t *x = live_head(); x != NULL; x = x->next_live) {
        xc_shm_bell_t *b = bell_of(x->seg);
        if (how == XC_SLEEP_FUTEX) {
            if (w->nwords == XC_WAIT_WORDS) {
                shm_disarm();
                return -1;
            }
            w->word[w->nwords] = &b->bell;
            w->val[w->nwords++] = __atomic_load_n(&b->bell, __ATOMIC_ACQUIRE);
        }
        __atomic_store_n(&b->sleeping, how, __ATOMIC_RELAXED);
    }
    atomic_thread_fence(memory_order_seq_cst);
    for (xc_shm_comm_t *x = live_head(); x != NULL; x = x->next_live)
        events += progress_comm(x);
    if (events > 0) {
        shm_disarm();
        return 1;
    }
    return 0;
}

/* Where no sleep until woken is possible: a nap as brief as a poll of
 * every ring costs. */
static void nap_briefly(void)
{
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}

/* A futex wait that failed this way still did its job: woken meanwhile,
 * timed out, or interrupted (or its word was unmapped: a communicator
 * destroyed meanwhile). */
static int slept(int err)
{
    return err == EAGAIN || err == ETIMEDOUT || err == EINTR || err == EFAULT;
}

/* One sleep on every live communicator's bell (futex_waitv, Linux 5.16);
 * 0 where the kernel or a sandbox refuses it. */
static int wait_many(const xc_wait_t *w, const struct timespec *ts)
{
#if defined(SYS_futex_waitv) && defined(FUTEX_32)
    struct futex_waitv v[XC_WAIT_WORDS];
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ts->tv_sec;
    until.tv_nsec += ts->tv_nsec;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    memset(v, 0, sizeof(v));
    for (unsigned i = 0; i < w->nwords; i++) {
        v[i].val = w->val[i];
        v[i].uaddr = (uint64_t)(uintptr_t)w->word[i];
        v[i].flags = FUTEX_32;
    }
    return syscall(SYS_futex_waitv, v, w->nwords, 0, &until, CLOCK_MONOTONIC) >= 0 ||
           slept(errno);
#else
    (void)w;
    (void)ts;
    return 0;
#endif
}

static void shm_sleep(const xc_wait_t *w, unsigned max_us)
{
    unsigned us = max_us < w->max_us ? max_us : w->max_us;
    struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
    if (w->fd >= 0 && w->fd2 >= 0) {
        struct pollfd pfd[2] = { { w->fd, POLLIN, 0 }, { w->fd2, POLLIN, 0 } };
        __atomic_fetch_add(&g_door_sleeps, 1, __ATOMIC_RELAXED);
        if (ppoll(pfd, 2, &ts, NULL) > 0 && pfd[1].revents != 0) {
            __atomic_fetch_add(&g_door_wakes, 1, __ATOMIC_RELAXED);
            door_drain(w->fd2);
        }
        return;
    }
    if (w->fd >= 0) {
        xc_ucx_transport.sleep(w, max_us);
        return;
    }
    if (w->nwords == 1 ? futex(w->word[0], FUTEX_WAIT, w->val[0], &ts) == 0 || slept(errno)
                       : wait_many(w, &ts))
        return;
    /* refused (an old kernel, a sandbox): from now on arming declines;
     * this once, nap */
    __atomic_store_n(w->nwords == 1 ? &g_no_futex : &g_no_waitv, 1, __ATOMIC_RELAXED);
    xc_info("shared memory: %s refused (%s): waits nap instead of sleeping until woken",
            w->nwords == 1 ? "futex" : "futex_waitv", strerror(errno));
    nap_briefly();
}

static void shm_idle(void *tl_comm, unsigned idle_rounds, unsigned max_wait_us)
{
    xc_shm_comm_t *c = tl_comm;
    uint64_t now, idle_us;
    unsigned spin_us = 20, yield_us = 1000;
    xc_wait_t w;
    int armed;
    if (c->nlocal == 0 && live_head() == NULL) {
        xc_ucx_transport.idle(c->ucx, idle_rounds, max_wait_us);
        return;
    }
    if (ucx_matters(c)) {
        if (!doors_everywhere()) {
            /* UCX may sleep on its event fd, which shared memory then
             * cannot signal: keep its sleeps short */
            xc_ucx_transport.idle(c->ucx, idle_rounds, max_wait_us < 50 ? max_wait_us : 50);
            return;
        }
        /* then UCX's phases: no spinning where the kernel carries its
         * bytes on these cores (a 16 B allreduce at 2 nodes x 2 ranks took
         * 2.3x as long spinning as shared memory alone does) */
        xc_ucx_backoff(&spin_us, &yield_us);
    }
    /* a short wait with a core of its own spins without reading the
     * clock (~30 ns a read here): the message it waits for is then seen
     * sooner; the idle streak's clock starts at round 32 */
    if (!g_oversubscribed && spin_us > 0 && idle_rounds < 32) {
        g_idle_since_ns = 0;
        return;
    }
    now = now_ns();
    if (idle_rounds <= g_last_idle_round || g_idle_since_ns == 0)
        g_idle_since_ns = now;
    g_last_idle_round = idle_rounds;
    idle_us = (now - g_idle_since_ns) / 1000;
    /* as the UCX transport: spin ~20 us with a core per rank, yield at once
     * without; after 1 ms sleep until a peer rings */
    if (!g_oversubscribed && idle_us < spin_us)
        return;
    if (idle_us < yield_us || max_wait_us == 0) {
        sched_yield();
        return;
    }
    armed = shm_arm(c, &w);
    if (armed < 0) {
        nap_briefly(); /* more communicators than one sleep can watch, or refused */
    } else if (armed == 0) {
        shm_sleep(&w, max_wait_us);
        shm_disarm();
    }
}

/* Only UCX loses peers: a local one that dies is seen by a timeout. */
static unsigned shm_lost_count(void *tl_comm)
{
    xc_shm_comm_t *c = tl_comm;
    return xc_ucx_transport.lost_count(c->ucx);
}

static const char *shm_peer_lost(void *tl_comm, int peer)
{
    xc_shm_comm_t *c = tl_comm;
    return xc_ucx_transport.peer_lost(c->ucx, peer);
}

static int shm_peer_left(void *tl_comm, int peer)
{
    xc_shm_comm_t *c = tl_comm;
    return xc_ucx_transport.peer_left(c->ucx, peer);
}

static int shm_device_memory(void *tl_comm)
{
    xc_shm_comm_t *c = tl_comm;
    /* the rings and CMA read host memory only: stage device data */
    return c->nlocal == 0 && xc_ucx_transport.device_memory(c->ucx);
}

const xc_transport_t xc_shm_transport = {
    .name = "shm",
    .comm_init = shm_comm_init,
    .comm_fini = shm_comm_fini,
    .isend = shm_isend,
    .irecv = shm_irecv,
    .irecv_reduce = shm_irecv_reduce,
    .test = shm_test,
    .cancel = shm_cancel,
    .progress = shm_progress,
    .device_memory = shm_device_memory,
    .idle = shm_idle,
    .arm = shm_arm,
    .sleep = shm_sleep,
    .disarm = shm_disarm,
    .drain = shm_drain,
    .owes_tails = shm_owes_tails,
    .lost_count = shm_lost_count,
    .peer_lost = shm_peer_lost,
    .peer_left = shm_peer_left,
};
