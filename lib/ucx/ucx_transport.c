/* The UCX transport: one UCP context and worker per process, shared by every
 * communicator; endpoints cached by the remote worker's address so that
 * communicators over the same processes share them; tagged nonblocking
 * send/recv; and a back-off for waiting that gives the core away when a job
 * has more ranks than cores. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include "gpu.h"
#include "log.h"
#include "tag.h"
#include "topo.h"
#include "transport.h"

/* Lives in the user area UCX reserves at the address of every request it
 * returns (ucp_params.request_size), so test() knows what it is looking at
 * without a side table. Written after each post; UCX never touches it. */
typedef struct {
    uint64_t tag;
    size_t len;
    struct xc_ucx_ep *ep;
    int peer;
    int is_recv;
} xc_ucx_req_t;

/* One endpoint to one remote worker, shared by every communicator that
 * includes that process. */
typedef struct xc_ucx_ep {
    struct xc_ucx_ep *next; /* hash chain */
    ucp_ep_h ep;
    unsigned refs;
    uint64_t hash;
    ucs_status_t failed;    /* UCS_OK, or why UCX gave up on the peer (ep_failed) */
    int rank;               /* in the communicator that opened it, for the log */
    int remote;             /* on another host: peer error handling, goodbyes */
    int left;               /* it failed after the peer said goodbye */
    int used;               /* a send to it was posted, or a receive from it completed:
                             * the connection exists, and closing it fails the peer's */
    int closing;            /* eps_release is closing it: its failure is no news */
    int tcp;                /* its lanes: -1 not read yet, 0 none, 1 some over TCP */
    void *bye_req;          /* the receive of its goodbye, if it did not complete at once */
    void *bye_send;         /* ours, while eps_release waits for it */
    size_t addr_len;
    unsigned char addr[];
} xc_ucx_ep_t;

typedef struct {
    int rank;
    int size;
    xc_ucx_ep_t **peers; /* indexed by rank in the communicator */
    int tcp;             /* some peer is reached over the kernel's TCP */
} xc_ucx_comm_t;

/* Statuses with which UCX says a peer is gone rather than a request bad. */
static int peer_gone(ucs_status_t s)
{
    return s == UCS_ERR_ENDPOINT_TIMEOUT || s == UCS_ERR_CONNECTION_RESET ||
           s == UCS_ERR_UNREACHABLE || s == UCS_ERR_REJECTED;
}

/* Process-wide state. The library is single threaded (xcoll.h). */
static struct {
    unsigned comms;          /* live communicators; the worker goes with the last */
    ucp_context_h context;
    ucp_worker_h worker;
    int efd;                 /* worker event fd, -1 when wakeup is unavailable */
    ucp_address_t *addr;
    size_t addr_len;
    uint64_t addr_hash;      /* of addr, as the peers compute it: names our goodbye */
    xc_ucx_ep_t **buckets;
    size_t nbuckets;         /* power of two, or 0 */
    size_t neps;
    unsigned lost;           /* endpoints that failed (ep_failed), ever */
    uint64_t bye_sink;       /* where goodbyes are received: never freed memory */
    /* back-off state: the current idle streak began at idle_since_ns */
    unsigned last_idle_round;
    uint64_t idle_since_ns;
} g_ucx = { .efd = -1 };

/* Back-off, in microseconds since progress last found something: spin
 * until spin_us, then sched_yield() until yield_us, then sleep on the
 * worker's event fd (at most sleep_us per call).
 *
 * Measured on 2 cores (test/mpi/test_transport.c): with a core per rank,
 * spinning saves ~0.1 us a round trip over yielding; with 8 ranks on 2
 * cores, any spinning is ruinous (8 ms round trips with pure polling,
 * 14 us with 5 us of spin, 4 us without), yielding at once is best, and
 * sleeping at once costs ~20 us a hop in wake-up latency. Sleeping is
 * for long waits, where it hands the core to ranks that compute.
 * Hence two settings, chosen by whether some communicator put more ranks
 * on this node than it has CPUs. XCOLL_UCX_SPIN_US, XCOLL_UCX_YIELD_US and
 * XCOLL_UCX_SLEEP_US override both. */
typedef struct {
    unsigned spin_us, yield_us, sleep_us;
} xc_ucx_backoff_t;

static const xc_ucx_backoff_t g_backoff_dedicated = { 20, 1000, 2000 };
static const xc_ucx_backoff_t g_backoff_oversubscribed = { 0, 1000, 2000 };
static xc_ucx_backoff_t g_backoff;
static int g_oversubscribed;
/* Some peer is reached through the kernel's TCP: the kernel moves those
 * bytes on these same cores, so spinning only delays them. Measured across
 * namespace nodes on 2 cores (a 16 B allreduce, 2 ranks on 2 nodes): 73 us
 * with 20 us of spin, 52 us without, 4 ms with pure spinning. */
static int g_kernel_net;

/* Any valid address will do for a zero-length transfer. */
static unsigned char g_dummy_byte;

/* 1 MiB is far beyond any UCX worker address; a bigger length means the
 * bootstrap gathered garbage. */
#define XC_UCX_MAX_ADDR_LEN ((size_t)1 << 20)

/* Endpoint close in flush mode waits for outstanding sends; a peer that is
 * gone must not hang comm_fini forever. */
#define XC_UCX_CLOSE_TIMEOUT_NS (5ull * 1000 * 1000 * 1000)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned env_unsigned(const char *name, unsigned dflt)
{
    const char *s = getenv(name);
    char *end;
    unsigned long v;
    if (s == NULL || *s == '\0')
        return dflt;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > 100000000ul) {
        xc_warn("ignoring %s=%s: not a number of microseconds", name, s);
        return dflt;
    }
    return (unsigned)v;
}

static uint64_t addr_hash(const void *addr, size_t len)
{
    /* FNV-1a: addresses contain a random worker uid, so any mixing will do */
    const unsigned char *p = addr;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* --- back-off settings ----------------------------------------------------------- */

static void backoff_select(int oversubscribed)
{
    g_backoff = oversubscribed ? g_backoff_oversubscribed : g_backoff_dedicated;
    if (g_kernel_net)
        g_backoff.spin_us = 0;
    g_backoff.spin_us = env_unsigned("XCOLL_UCX_SPIN_US", g_backoff.spin_us);
    g_backoff.yield_us = env_unsigned("XCOLL_UCX_YIELD_US", g_backoff.yield_us);
    g_backoff.sleep_us = env_unsigned("XCOLL_UCX_SLEEP_US", g_backoff.sleep_us);
}

void xc_ucx_backoff(unsigned *spin_us, unsigned *yield_us)
{
    *spin_us = g_backoff.spin_us;
    *yield_us = g_backoff.yield_us;
}

/* --- process-wide context and worker ---------------------------------------- */

static void wait_and_free(void *r, const char *what, uint64_t deadline_ns);
static void goodbyes_drop(uint64_t hash, uint64_t mask);

static void worker_destroy(void)
{
    /* those no failure took out of UCX's queue: UCX warns about unmatched
     * messages when the worker goes */
    goodbyes_drop(0, ~(((uint64_t)1 << 48) - 1));
    if (g_ucx.addr != NULL)
        ucp_worker_release_address(g_ucx.worker, g_ucx.addr);
    if (g_ucx.worker != NULL)
        ucp_worker_destroy(g_ucx.worker);
    if (g_ucx.context != NULL)
        ucp_cleanup(g_ucx.context);
    free(g_ucx.buckets);
    g_ucx.addr = NULL;
    g_ucx.worker = NULL;
    g_ucx.context = NULL;
    g_ucx.buckets = NULL;
    g_ucx.nbuckets = 0;
    g_ucx.neps = 0;
    g_ucx.efd = -1;
}

/* 1 if the launcher says every process of the job runs on this node (Open
 * MPI's mpirun, or a one-node Slurm step). The UCP context is created once
 * per process, with the first communicator: a later one may reach other
 * nodes, so the first one's topology alone cannot say (it must agree,
 * though: see worker_create). */
static int job_is_one_node(void)
{
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const char *world = getenv("OMPI_COMM_WORLD_SIZE");
    const char *nnodes = getenv("SLURM_STEP_NUM_NODES");
    if (local != NULL && world != NULL && *local != '\0')
        return strcmp(local, world) == 0;
    return nnodes != NULL && strcmp(nnodes, "1") == 0;
}

/* 1 if the context opened a resource of UCX's TCP transport. UCX has no
 * query for it; its printed description lists one "resource" line per
 * transport and device ("... -- tcp/eth0"). */
static int context_has_tcp(ucp_context_h context)
{
    char *text = NULL, *line, *next;
    size_t len = 0;
    int found = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return 0;
    ucp_context_print_info(context, f);
    fclose(f);
    for (line = text; line != NULL && !found; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        found = strstr(line, "resource") != NULL && strstr(line, " tcp/") != NULL;
    }
    free(text);
    return found;
}

/* UCX's TCP transport moves a large message in 8 KiB sends and reads into
 * 64 KiB buffers: a collective's 128 KiB-1 MiB blocks between nodes cost
 * dozens of system calls each, on the cores the ranks reduce on. 64 KiB
 * sends and 256 KiB reads took 4 nodes x 2 ranks from 0.71-0.95x Open MPI to
 * 0.98-1.00x at 256 KiB-16 MiB (docs/PERFORMANCE.md, "Between nodes: UCX's
 * TCP segments"). The cost is memory: UCX's receive buffers (twice the read
 * size, taken 8 at a time, never given back) grow to one per peer whose data
 * is being read at that moment, 512 KiB each instead of 128 KiB.
 * UCX refuses a read size below the send size, so where the user set either
 * (in the environment) both stay as they are.
 * ucp_config_modify hands names it does not know to every transport's
 * table; before UCX 1.17 a name matches there without the transport's
 * prefix ("TX_SEG_SIZE"), from 1.17 only with it ("TCP_TX_SEG_SIZE"). A
 * name no open transport takes makes UCX warn on every rank, so this runs
 * only where `context` (created without them) opened TCP. Returns 1 where
 * it added them: the context must then be created again. */
static int tcp_segments(ucp_config_t *config, ucp_context_h context)
{
    static const char *const opts[][2] = {{"TX_SEG_SIZE", "64K"}, {"RX_SEG_SIZE", "256K"}};
    unsigned major, minor, release;
    char key[64];
    size_t i;
    if (getenv("UCX_TCP_TX_SEG_SIZE") != NULL || getenv("UCX_TCP_RX_SEG_SIZE") != NULL) {
        xc_debug("UCX: the TCP segment sizes are the user's");
        return 0;
    }
    if (!context_has_tcp(context))
        return 0;
    ucp_get_version(&major, &minor, &release);
    int prefixed = major > 1 || (major == 1 && minor >= 17);
    for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        snprintf(key, sizeof(key), "%s%s", prefixed ? "TCP_" : "", opts[i][0]);
        if (ucp_config_modify(config, key, opts[i][1]) != UCS_OK) {
            /* a send size alone could exceed the read size */
            xc_debug("UCX: could not set UCX_TCP_%s=%s; UCX's defaults stay", opts[i][0],
                     opts[i][1]);
            return 0;
        }
    }
    xc_debug("UCX: UCX_TCP_%s=%s, UCX_TCP_%s=%s", opts[0][0], opts[0][1], opts[1][0], opts[1][1]);
    return 1;
}

static ucs_status_t context_create(int estimated_eps, uint64_t features, int shm_only)
{
    ucp_config_t *config;
    ucp_params_t params;
    ucs_status_t status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK)
        return status;
    /* UCX polls every transport it opened on each worker progress, TCP
     * included, which costs ~0.25 us per small-message hop on one node.
     * When the whole job is on one node, shared memory and self reach every
     * peer (unless there is a GPU); a user's UCX_TLS always wins (UCX_TLS=all restores UCX's
     * choice, e.g. for a job that connects to processes elsewhere later). */
    if (shm_only && xc_gpu() != NULL) {
        /* a CUDA-aware UCX needs its cuda transports too */
        xc_debug("UCX: a CUDA device is present: UCX chooses the transports");
    } else if (shm_only) {
        if (ucp_config_modify(config, "TLS", "sm,self") == UCS_OK)
            xc_debug("UCX: every rank of the job is on this node: UCX_TLS=sm,self");
        else
            xc_info("UCX: could not restrict transports to sm,self; using UCX's default");
    }
    /* With the default "get" rendezvous the receiver still owes the sender
     * an acknowledgement after its receive completed; if the application
     * then blocks elsewhere (in MPI, say) our worker is not progressed and
     * the sender waits forever. With "put" the receiver owes nothing once
     * its receive completed; the sender may still owe the final protocol
     * message after its send completed, which the end-of-collective
     * acknowledgements cover (xc_sched_add_acks: it waits for the
     * receiver's). */
    if (getenv("UCX_RNDV_SCHEME") == NULL &&
        ucp_config_modify(config, "RNDV_SCHEME", "put_zcopy") != UCS_OK)
        xc_warn("could not select the put rendezvous scheme; a rank that leaves xcoll "
                "right after a large receive may stall its sender");
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                        UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = features;
    params.request_size = sizeof(xc_ucx_req_t);
    params.mt_workers_shared = 0;
    params.estimated_num_eps = (size_t)estimated_eps;
    status = ucp_init(&params, config, &g_ucx.context);
    if (status == UCS_OK && !shm_only && tcp_segments(config, g_ucx.context)) {
        ucp_context_h again;
        if (ucp_init(&params, config, &again) == UCS_OK) {
            ucp_cleanup(g_ucx.context);
            g_ucx.context = again;
        } else {
            xc_debug("UCX: a context with the TCP segment sizes failed; keeping UCX's defaults");
        }
    }
    ucp_config_release(config);
    return status;
}

static xcoll_status_t worker_create(int estimated_eps, int one_host)
{
    ucp_worker_params_t wparams;
    ucp_worker_attr_t wattr;
    ucs_status_t status;

    g_oversubscribed = 0;
    g_kernel_net = 0;
    backoff_select(0);

    /* Wakeup lets an idle rank sleep; a UCX build whose transports cannot
     * wake us still works, with yield-only back-off. */
    status = UCS_ERR_UNSUPPORTED;
    if (getenv("UCX_TLS") == NULL && job_is_one_node() && !one_host)
        xc_info("UCX: the launcher says the job is on one node, but this communicator spans "
                "several: letting UCX choose transports");
    if (getenv("UCX_TLS") == NULL && job_is_one_node() && one_host) {
        status = context_create(estimated_eps, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP, 1);
        if (status != UCS_OK)
            xc_info("UCX context on sm,self failed (%s); letting UCX choose transports",
                    ucs_status_string(status));
    }
    if (status != UCS_OK)
        status = context_create(estimated_eps, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP, 0);
    if (status != UCS_OK) {
        xc_info("UCX context with wakeup failed (%s); retrying without",
                ucs_status_string(status));
        status = context_create(estimated_eps, UCP_FEATURE_TAG, 0);
    }
    if (status != UCS_OK) {
        xc_error("ucp_init failed: %s", ucs_status_string(status));
        g_ucx.context = NULL;
        return XCOLL_ERR_TRANSPORT;
    }

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(g_ucx.context, &wparams, &g_ucx.worker);
    if (status != UCS_OK) {
        xc_error("ucp_worker_create failed: %s", ucs_status_string(status));
        g_ucx.worker = NULL;
        worker_destroy();
        return XCOLL_ERR_TRANSPORT;
    }

    memset(&wattr, 0, sizeof(wattr));
    wattr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    status = ucp_worker_query(g_ucx.worker, &wattr);
    if (status != UCS_OK) {
        xc_error("ucp_worker_query(address) failed: %s", ucs_status_string(status));
        worker_destroy();
        return XCOLL_ERR_TRANSPORT;
    }
    g_ucx.addr = wattr.address;
    g_ucx.addr_len = wattr.address_length;
    g_ucx.addr_hash = addr_hash(g_ucx.addr, g_ucx.addr_len);

    if (ucp_worker_get_efd(g_ucx.worker, &g_ucx.efd) != UCS_OK) {
        xc_info("UCX worker has no event fd: waiting will yield instead of sleeping");
        g_ucx.efd = -1;
    }
    xc_debug("UCX worker ready: address %zu bytes, event fd %d", g_ucx.addr_len, g_ucx.efd);
    return XCOLL_OK;
}

/* --- endpoint cache ------------------------------------------------------------ */

static xcoll_status_t cache_grow(void)
{
    size_t n = g_ucx.nbuckets ? g_ucx.nbuckets * 2 : 64;
    xc_ucx_ep_t **b = calloc(n, sizeof(*b));
    if (b == NULL) {
        xc_error("out of memory growing the endpoint cache to %zu buckets", n);
        return XCOLL_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < g_ucx.nbuckets; i++) {
        xc_ucx_ep_t *e = g_ucx.buckets[i];
        while (e != NULL) {
            xc_ucx_ep_t *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(g_ucx.buckets);
    g_ucx.buckets = b;
    g_ucx.nbuckets = n;
    return XCOLL_OK;
}

/* The goodbye: a process closing its connection to a peer on another host
 * (eps_release) first sends it this, under xc_tag_goodbye(its address's
 * hash). TCP delivers it before the close, so when the peer's UCX then
 * fails the endpoint the goodbye is already in its unexpected queue, and
 * the peer knows the process left in order (its communicators with this
 * one destroyed) instead of dying. A rank still waiting in a collective
 * that no longer needs the leaver then does not take the leave for a
 * loss (census.c); one that still waits for its data does. */
#define XC_UCX_GOODBYE 0x4559424c4c4f4358ull /* "XCOLLBYE" */

/* Receives one goodbye found by a probe (m, info) into the sink; 1 if it
 * is one: complete at once with the right payload (eager data, the usual
 * case), or still arriving (then its tag alone says it, and *pending gets
 * the request, which may be freed at any time). Works inside a UCX
 * callback too: a probe and an eager receive only copy from the queue. */
static int goodbye_take(ucp_tag_message_h m, const ucp_tag_recv_info_t *info, void **pending)
{
    ucp_request_param_t param;
    void *r;
    memset(&param, 0, sizeof(param));
    g_ucx.bye_sink = 0;
    r = ucp_tag_msg_recv_nbx(g_ucx.worker, &g_ucx.bye_sink, sizeof(g_ucx.bye_sink), m, &param);
    if (UCS_PTR_IS_ERR(r))
        return 0;
    if (r != NULL && ucp_request_check_status(r) == UCS_INPROGRESS) {
        *pending = r;
        return 1;
    }
    if (r != NULL)
        ucp_request_free(r);
    return info->length == sizeof(g_ucx.bye_sink) && g_ucx.bye_sink == XC_UCX_GOODBYE;
}

/* Takes every goodbye whose tag matches xc_tag_goodbye(hash) under mask out
 * of UCX's queue: stale ones, from a connection to that process that is
 * closed, must not speak for a later one. Bounded: one comes per
 * connection. */
static void goodbyes_drop(uint64_t hash, uint64_t mask)
{
    ucp_tag_recv_info_t info;
    for (unsigned i = 0; g_ucx.worker != NULL && i < 4096; i++) {
        void *pending = NULL;
        ucp_tag_message_h m = ucp_tag_probe_nb(g_ucx.worker, xc_tag_goodbye(hash), mask, 1, &info);
        if (m == NULL)
            return;
        goodbye_take(m, &info, &pending);
        if (pending != NULL)
            ucp_request_free(pending); /* UCX frees it when it completes */
    }
}

/* Whether the goodbye of the peer behind endpoint e is here; takes it out
 * of UCX's queue, so that none piles up. */
static int goodbye_here(xc_ucx_ep_t *e)
{
    ucp_tag_recv_info_t info;
    ucp_tag_message_h m;
    if (e->left)
        return 1;
    if (!e->remote || g_ucx.worker == NULL || e->bye_req != NULL)
        return 0;
    m = ucp_tag_probe_nb(g_ucx.worker, xc_tag_goodbye(e->hash), XC_TAG_MASK_ALL, 1, &info);
    if (m == NULL || !goodbye_take(m, &info, &e->bye_req))
        return 0; /* none, or not ours after all: then it is a loss */
    e->left = 1;
    return 1;
}

/* UCX calls this (from progress) when it gives up on an endpoint created
 * with peer error handling: the peer's process or node died, or the
 * network to it, or the peer closed the connection after its goodbye.
 * Sends to it then fail, but a receive that waits for it would wait
 * forever: the request layer asks peer_lost. */
static void ep_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    xc_ucx_ep_t *e = arg;
    (void)ep;
    if (e->failed == UCS_OK) {
        e->failed = status == UCS_OK ? UCS_ERR_CONNECTION_RESET : status;
        g_ucx.lost++;
        if (goodbye_here(e))
            xc_debug("UCX: rank %d (as numbered by the first communicator that reached it) "
                     "said goodbye and closed its connection", e->rank);
        else if (e->closing)
            xc_debug("UCX: the connection to rank %d failed while this rank closed it: %s",
                     e->rank, ucs_status_string(status));
        else if (!e->used)
            /* nothing crossed it, so a peer that left said no goodbye on
             * it (goodbye_send); whether it left or is lost, a receive
             * from it fails (peer_lost), and that failure names it */
            xc_debug("UCX: the connection to rank %d closed before it carried anything: %s "
                     "(the peer left, or is lost)", e->rank, ucs_status_string(status));
        else
            xc_warn("UCX: lost the connection to rank %d (as numbered by the first "
                    "communicator that reached it): %s", e->rank, ucs_status_string(status));
    }
}

/* The endpoint to the worker at addr, created on first use; takes a
 * reference. A peer on another host gets peer error handling, so that its
 * loss is reported instead of hanging or ending this process; within a
 * host (where xcoll's shared memory carries nearly everything anyway)
 * UCX keeps its fastest protocols. */
static xcoll_status_t ep_get(const void *addr, size_t len, int rank, int remote,
                             xc_ucx_ep_t **out)
{
    uint64_t h = addr_hash(addr, len);
    xc_ucx_ep_t *e;
    ucp_ep_params_t params;
    ucs_status_t status;
    xcoll_status_t st;

    if (g_ucx.nbuckets != 0) {
        for (e = g_ucx.buckets[h & (g_ucx.nbuckets - 1)]; e != NULL; e = e->next) {
            /* a failed endpoint is never reused: UCX wants it closed, and
             * the peer may be alive (a network hiccup) */
            if (e->hash == h && e->addr_len == len && e->failed == UCS_OK &&
                memcmp(e->addr, addr, len) == 0) {
                e->refs++;
                *out = e;
                return XCOLL_OK;
            }
        }
    }
    if (g_ucx.neps >= g_ucx.nbuckets && (st = cache_grow()) != XCOLL_OK)
        return st;
    if (remote)
        goodbyes_drop(h, XC_TAG_MASK_ALL);

    e = malloc(sizeof(*e) + len);
    if (e == NULL) {
        xc_error("out of memory for the endpoint to rank %d", rank);
        return XCOLL_ERR_NO_MEMORY;
    }
    memcpy(e->addr, addr, len);
    e->addr_len = len;
    e->hash = h;
    e->refs = 1;
    e->failed = UCS_OK;
    e->rank = rank;
    e->remote = remote;
    e->left = 0;
    e->used = 0;
    e->closing = 0;
    e->tcp = -1;
    e->bye_req = NULL;
    e->bye_send = NULL;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = (const ucp_address_t *)e->addr;
    if (remote) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        params.err_handler.cb = ep_failed;
        params.err_handler.arg = e;
    }
    status = ucp_ep_create(g_ucx.worker, &params, &e->ep);
    if (status != UCS_OK) {
        xc_error("ucp_ep_create to rank %d failed: %s", rank, ucs_status_string(status));
        free(e);
        return XCOLL_ERR_TRANSPORT;
    }
    e->next = g_ucx.buckets[h & (g_ucx.nbuckets - 1)];
    g_ucx.buckets[h & (g_ucx.nbuckets - 1)] = e;
    g_ucx.neps++;
    *out = e;
    return XCOLL_OK;
}

static void cache_unlink(xc_ucx_ep_t *e)
{
    xc_ucx_ep_t **p = &g_ucx.buckets[e->hash & (g_ucx.nbuckets - 1)];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    g_ucx.neps--;
}

/* Waits for a UCX request of ours to finish, until deadline_ns at most
 * (0: XC_UCX_CLOSE_TIMEOUT_NS from now), then frees it. */
static void wait_and_free(void *r, const char *what, uint64_t deadline_ns)
{
    uint64_t deadline = deadline_ns != 0 ? deadline_ns : now_ns() + XC_UCX_CLOSE_TIMEOUT_NS;
    if (r == NULL || UCS_PTR_IS_ERR(r))
        return;
    while (ucp_request_check_status(r) == UCS_INPROGRESS) {
        if (now_ns() > deadline) {
            xc_warn("%s did not finish in time; abandoning it", what);
            break;
        }
        ucp_worker_progress(g_ucx.worker);
    }
    ucp_request_free(r);
}

/* Sends the goodbye (see goodbye_here) on e, if e is a connection to
 * another host that carried traffic and still works; the request, or NULL. */
static void *goodbye_send(xc_ucx_ep_t *e)
{
    static const uint64_t bye = XC_UCX_GOODBYE;
    ucp_request_param_t param;
    void *r;
    /* a peer that said goodbye has closed its side; asked first, so that
     * its goodbye is taken out of the queue whatever follows */
    if (!e->remote || goodbye_here(e) || !e->used || e->failed != UCS_OK)
        return NULL;
    memset(&param, 0, sizeof(param));
    r = ucp_tag_send_nbx(e->ep, &bye, sizeof(bye), xc_tag_goodbye(g_ucx.addr_hash), &param);
    return UCS_PTR_IS_ERR(r) ? NULL : r;
}

/* Drops one reference from each of eps[0..n) and closes the endpoints
 * nobody uses any more, in force mode, which needs nothing from the peer: a
 * peer may already have torn its worker down (destroy is not collective),
 * and a flush towards it ends in an endpoint timeout that UCX prints on
 * stdout. Nothing of a collective's large messages is lost: every
 * collective that sent one above XC_ACK_ABOVE_BYTES waited for its
 * receiver's acknowledgement before it completed. Eager data (the
 * goodbyes, sent first, all at once, and waited for together, at most a
 * second) is in the peer's queue or the kernel's socket buffer unless a
 * full socket left a tail in UCX's own TCP buffer, which the force close
 * drops (docs/ARCHITECTURE.md, "Large messages and leaving xcoll"). Only
 * connections that carried traffic say goodbye: a send on another would
 * first have to connect, to a peer that may be gone. Sets the entries it
 * closed to NULL; an endpoint appears in eps once at most (one per rank,
 * ranks are distinct processes). */
static void eps_release(xc_ucx_ep_t **eps, int n)
{
    ucp_request_param_t param;
    uint64_t bye_deadline = now_ns() + XC_UCX_CLOSE_TIMEOUT_NS / 5;

    for (int i = 0; i < n; i++) {
        xc_ucx_ep_t *e = eps[i];
        if (e != NULL && --e->refs == 0) {
            e->closing = 1;
            e->bye_send = goodbye_send(e);
        }
    }
    for (int i = 0; i < n; i++) {
        xc_ucx_ep_t *e = eps[i];
        void *r;
        if (e == NULL || !e->closing)
            continue;
        eps[i] = NULL;
        wait_and_free(e->bye_send, "a goodbye", bye_deadline);
        if (e->bye_req != NULL)
            ucp_request_free(e->bye_req); /* its buffer is the sink: UCX may finish it */
        cache_unlink(e);
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = UCP_EP_CLOSE_FLAG_FORCE;
        r = ucp_ep_close_nbx(e->ep, &param);
        if (UCS_PTR_IS_ERR(r))
            xc_debug("closing the endpoint to rank %d: %s", i,
                     ucs_status_string(UCS_PTR_STATUS(r)));
        else
            wait_and_free(r, "closing an endpoint", 0);
        if (e->remote)
            goodbyes_drop(e->hash, XC_TAG_MASK_ALL); /* one that came while it closed */
        free(e);
    }
}

/* --- which transports UCX chose ---------------------------------------------------- */

/* The transports of one endpoint's lanes ("tcp/eth0, cma/memory"), read
 * from ucp_ep_print_info: UCX 1.13 has no query for them, and its text
 * format may change, so what cannot be read is "(unknown)". */
static void ep_lanes(ucp_ep_h ep, char *buf, size_t len)
{
    char *text = NULL, *line, *save = NULL;
    size_t tlen = 0, n = 0;
    FILE *f = open_memstream(&text, &tlen);
    snprintf(buf, len, "(unknown)");
    if (f == NULL)
        return;
    ucp_ep_print_info(ep, f);
    fclose(f);
    if (text == NULL)
        return;
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        /* "#   lane[0]:  1:tcp/eth0.0 md[1] -> ..." */
        char *p = strstr(line, "lane["), *tl, *end;
        if (p == NULL || (p = strchr(p, ':')) == NULL || (tl = strchr(p + 1, ':')) == NULL)
            continue;
        tl++;
        end = tl + strcspn(tl, " \t");
        if (end - tl > 2 && end[-2] == '.')
            end -= 2; /* the interface's index: "eth0.0" */
        if (n < len && memmem(buf, n, tl, (size_t)(end - tl)) == NULL)
            n += (size_t)snprintf(buf + n, len - n, "%s%.*s", n ? ", " : "", (int)(end - tl), tl);
    }
    free(text);
}

/* The lowest rank other than this one on this host (same 1) or on
 * another (same 0), or -1: one peer of each kind stands for all. */
static int first_peer(const xc_ucx_comm_t *c, const struct xc_topo *topo, int same)
{
    for (int r = 0; r < c->size; r++)
        if (r != c->rank && (topo->host_of[r] == topo->host_of[c->rank]) == same)
            return r;
    return -1;
}

/* Whether UCX reaches e's peer over the kernel's TCP; read once per
 * endpoint (endpoints outlive communicators). */
static int ep_tcp(xc_ucx_ep_t *e)
{
    char lanes[128];
    if (e->tcp < 0) {
        ep_lanes(e->ep, lanes, sizeof(lanes));
        e->tcp = strstr(lanes, "tcp/") != NULL;
    }
    return e->tcp;
}

/* After the endpoints exist: says at info level which transports reach
 * this rank's peers, notes whether any is the kernel's TCP (c->tcp: the
 * drainer's business, ucx_owes_tails), and stops spinning when another
 * node is reached over it (g_kernel_net). Every peer on this host is
 * asked (UCX may reach some by shared memory and others, in another
 * container, by TCP), one on other hosts stands for all. */
static void note_lanes(xc_ucx_comm_t *c, const struct xc_topo *topo)
{
    char self[128], local[128] = "", remote[128] = "";
    int any_local = first_peer(c, topo, 1), any_remote = first_peer(c, topo, 0), remote_tcp;
    if (any_remote >= 0)
        ep_lanes(c->peers[any_remote]->ep, remote, sizeof(remote));
    remote_tcp = strstr(remote, "tcp/") != NULL;
    c->tcp = remote_tcp;
    for (int r = 0; r < c->size && !c->tcp; r++)
        if (r != c->rank && topo->host_of[r] == topo->host_of[c->rank])
            c->tcp = ep_tcp(c->peers[r]);
    if (remote_tcp && !g_kernel_net) {
        xc_debug("UCX: rank %d is reached over TCP: waiting ranks do not spin", any_remote);
        g_kernel_net = 1;
        backoff_select(g_oversubscribed);
    }
    if (xc_log_level < XC_LOG_INFO)
        return;
    ep_lanes(c->peers[c->rank]->ep, self, sizeof(self));
    if (any_local >= 0)
        ep_lanes(c->peers[any_local]->ep, local, sizeof(local));
    xc_info("UCX: to ranks on other nodes %s; to ranks on this node %s; to itself %s",
            any_remote >= 0 ? remote : "(none)", any_local >= 0 ? local : "(none)", self);
}

/* --- communicator ------------------------------------------------------------- */

static void ucx_comm_fini(void *tl_comm)
{
    xc_ucx_comm_t *c = tl_comm;
    if (c == NULL)
        return;
    eps_release(c->peers, c->size);
    free(c->peers);
    free(c);
    if (--g_ucx.comms == 0)
        worker_destroy();
}

/* Gathers every rank's worker address: lengths first, then the addresses
 * padded to the longest. On success *all holds size slots of *slot bytes
 * and lens[r] says how many of slot r are the address. Also notes whether
 * this communicator puts more ranks on this node than it has CPUs, which
 * decides the back-off. */
static xcoll_status_t exchange_addresses(const xcoll_bootstrap_t *boot,
                                         const struct xc_topo *topo, uint64_t *lens,
                                         unsigned char **all, size_t *slot)
{
    uint64_t mine_len = g_ucx.addr_len, max_len = 0;
    unsigned char *mine;
    size_t size = (size_t)boot->size, local = 0;
    long cpus;

    if (boot->allgather(&mine_len, lens, sizeof(mine_len), boot->ctx) != 0) {
        xc_error("bootstrap allgather of UCX address lengths failed");
        return XCOLL_ERR_BOOTSTRAP;
    }
    if (lens[boot->rank] != mine_len) {
        xc_error("bootstrap allgather is broken: slot %d does not hold this rank's data",
                 boot->rank);
        return XCOLL_ERR_BOOTSTRAP;
    }
    for (size_t r = 0; r < size; r++)
        local += topo->host_of[r] == topo->host_of[boot->rank];
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0 && local > (size_t)cpus && !g_oversubscribed) {
        xc_info("%zu ranks share %ld CPUs on this node: waiting ranks will yield at once",
                local, cpus);
        g_oversubscribed = 1;
        backoff_select(1);
    }

    for (size_t r = 0; r < size; r++) {
        if (lens[r] == 0) {
            if (r != (size_t)boot->rank)
                xc_error("rank %zu could not set up UCX (see its log)", r);
            return XCOLL_ERR_TRANSPORT;
        }
        if (lens[r] > XC_UCX_MAX_ADDR_LEN) {
            xc_error("bootstrap gave rank %zu a UCX address of %llu bytes", r,
                     (unsigned long long)lens[r]);
            return XCOLL_ERR_BOOTSTRAP;
        }
        if (lens[r] > max_len)
            max_len = lens[r];
    }
    /* size <= XC_MAX_RANKS (2^20) and max_len <= 2^20 so this cannot overflow */
    *slot = (size_t)max_len;
    mine = calloc(1, *slot);
    *all = malloc(size * *slot);
    if (mine == NULL || *all == NULL) {
        xc_error("out of memory for %zu UCX addresses of up to %zu bytes", size, *slot);
        free(mine);
        free(*all);
        *all = NULL;
        return XCOLL_ERR_NO_MEMORY;
    }
    memcpy(mine, g_ucx.addr, g_ucx.addr_len);
    if (boot->allgather(mine, *all, *slot, boot->ctx) != 0) {
        xc_error("bootstrap allgather of UCX addresses (%zu bytes each) failed", *slot);
        free(mine);
        free(*all);
        *all = NULL;
        return XCOLL_ERR_BOOTSTRAP;
    }
    if (memcmp(*all + (size_t)boot->rank * *slot, mine, *slot) != 0) {
        xc_error("bootstrap allgather is broken: slot %d does not hold this rank's address",
                 boot->rank);
        free(mine);
        free(*all);
        *all = NULL;
        return XCOLL_ERR_BOOTSTRAP;
    }
    free(mine);
    return XCOLL_OK;
}

/* A rank that cannot take part in exchange_addresses still joins its
 * first allgather, with an empty address, so that every rank fails there
 * rather than wait for this one. */
static void exchange_failed(const xcoll_bootstrap_t *boot)
{
    uint64_t none = 0, *lens = malloc((size_t)boot->size * sizeof(none));
    if (lens != NULL)
        (void)boot->allgather(&none, lens, sizeof(none), boot->ctx);
    free(lens);
}

static xcoll_status_t ucx_comm_init(const xcoll_bootstrap_t *boot, const struct xc_topo *topo,
                                    void **tl_comm)
{
    xc_ucx_comm_t *c;
    uint64_t *lens = NULL;
    unsigned char *all = NULL;
    size_t slot = 0;
    xcoll_status_t st;

    if (tl_comm == NULL)
        return XCOLL_ERR_INVALID_ARG;
    *tl_comm = NULL;
    if (boot == NULL || boot->allgather == NULL) {
        xc_error("UCX transport: no bootstrap allgather");
        return XCOLL_ERR_INVALID_ARG;
    }
    if (boot->size <= 0 || (unsigned)boot->size > XC_MAX_RANKS || boot->rank < 0 ||
        boot->rank >= boot->size) {
        xc_error("UCX transport: bad bootstrap rank %d / size %d (at most %u ranks)",
                 boot->rank, boot->size, XC_MAX_RANKS);
        return XCOLL_ERR_INVALID_ARG;
    }
    if (topo == NULL || topo->size != boot->size) {
        xc_error("UCX transport: no topology of %d ranks", boot->size);
        return XCOLL_ERR_INVALID_ARG;
    }

    if (g_ucx.comms == 0 && (st = worker_create(boot->size, topo->nhosts == 1)) != XCOLL_OK) {
        exchange_failed(boot);
        return st;
    }
    g_ucx.comms++; /* from here on, ucx_comm_fini undoes everything */

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        xc_error("out of memory for a UCX communicator");
        exchange_failed(boot);
        if (--g_ucx.comms == 0)
            worker_destroy();
        return XCOLL_ERR_NO_MEMORY;
    }
    c->rank = boot->rank;
    c->size = boot->size;
    c->peers = calloc((size_t)boot->size, sizeof(*c->peers));
    lens = calloc((size_t)boot->size, sizeof(*lens));
    if (c->peers == NULL || lens == NULL) {
        xc_error("out of memory for %d UCX peers", boot->size);
        exchange_failed(boot);
        st = XCOLL_ERR_NO_MEMORY;
        goto fail;
    }

    st = exchange_addresses(boot, topo, lens, &all, &slot);
    if (st != XCOLL_OK)
        goto fail;
    for (int r = 0; r < boot->size; r++) {
        st = ep_get(all + (size_t)r * slot, (size_t)lens[r], r,
                    topo->host_of[r] != topo->host_of[boot->rank], &c->peers[r]);
        if (st != XCOLL_OK)
            goto fail;
    }
    free(all);
    free(lens);
    note_lanes(c, topo);
    *tl_comm = c;
    return XCOLL_OK;

fail:
    free(all);
    free(lens);
    ucx_comm_fini(c);
    return st;
}

/* --- point to point ------------------------------------------------------------ */

/* What a failed operation on a peer means: the peer gone, or a bad request. */
static xcoll_status_t failure(const xc_ucx_ep_t *e, ucs_status_t s)
{
    return (e != NULL && e->failed != UCS_OK) || peer_gone(s) ? XCOLL_ERR_PEER_LOST
                                                               : XCOLL_ERR_TRANSPORT;
}

static xcoll_status_t post_result(ucs_status_ptr_t r, int is_recv, xc_ucx_ep_t *ep, int peer,
                                  uint64_t tag, size_t len, void **req)
{
    xc_ucx_req_t *ur;
    if (r == NULL) {
        *req = NULL;
        return XCOLL_OK;
    }
    if (UCS_PTR_IS_ERR(r)) {
        ucs_status_t s = UCS_PTR_STATUS(r);
        *req = NULL;
        if (s == UCS_ERR_MESSAGE_TRUNCATED) {
            xc_error("message from rank %d with tag 0x%016llx is longer than the %zu bytes expected",
                     peer, (unsigned long long)tag, len);
            return XCOLL_ERR_TRUNCATED;
        }
        xc_error("UCX %s of %zu bytes %s rank %d (tag 0x%016llx) failed: %s",
                 is_recv ? "receive" : "send", len, is_recv ? "from" : "to", peer,
                 (unsigned long long)tag, ucs_status_string(s));
        return failure(ep, s);
    }
    ur = r;
    ur->tag = tag;
    ur->len = len;
    ur->ep = ep;
    ur->peer = peer;
    ur->is_recv = is_recv;
    *req = r;
    return XCOLL_OK;
}

static int peer_ok(const xc_ucx_comm_t *c, int peer, void **req)
{
    if (c == NULL || req == NULL || peer < 0 || peer >= c->size) {
        xc_error("UCX transport: bad communicator, request pointer or peer %d", peer);
        return 0;
    }
    return 1;
}

static xcoll_status_t ucx_isend(void *tl_comm, int peer, uint64_t tag, const void *buf,
                                size_t len, void **req)
{
    xc_ucx_comm_t *c = tl_comm;
    ucp_request_param_t param;
    if (!peer_ok(c, peer, req))
        return XCOLL_ERR_INVALID_ARG;
    param.op_attr_mask = 0;
    if (buf == NULL)
        buf = &g_dummy_byte;
    c->peers[peer]->used = 1;
    return post_result(ucp_tag_send_nbx(c->peers[peer]->ep, buf, len, tag, &param), 0,
                       c->peers[peer], peer, tag, len, req);
}

static xcoll_status_t ucx_irecv(void *tl_comm, int peer, uint64_t tag, void *buf, size_t len,
                                void **req)
{
    xc_ucx_comm_t *c = tl_comm;
    ucp_request_param_t param;
    if (!peer_ok(c, peer, req))
        return XCOLL_ERR_INVALID_ARG;
    /* Always get a request back: UCX 1.13 completes a receive that matches
     * an unexpected message at once without filling recv_info, so the
     * received length (our truncation check) is only known from the
     * request. */
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    if (buf == NULL)
        buf = &g_dummy_byte;
    return post_result(ucp_tag_recv_nbx(g_ucx.worker, buf, len, tag, XC_TAG_MASK_ALL, &param), 1,
                       c->peers[peer], peer, tag, len, req);
}

static xcoll_status_t ucx_test(void *tl_comm, void *req)
{
    xc_ucx_req_t *ur = req;
    ucs_status_t s;
    ucp_tag_recv_info_t info;
    xcoll_status_t st = XCOLL_OK;
    (void)tl_comm;

    if (req == NULL)
        return XCOLL_OK;
    if (ur->is_recv) {
        s = ucp_tag_recv_request_test(req, &info);
        if (s == UCS_INPROGRESS)
            return XCOLL_INPROGRESS;
        if (s == UCS_OK)
            ur->ep->used = 1; /* it connected to us (a census receive posted to all does not) */
        if (s == UCS_OK && info.length != ur->len) {
            xc_error("rank %d sent %zu bytes with tag 0x%016llx where %zu were expected",
                     ur->peer, info.length, (unsigned long long)ur->tag, ur->len);
            st = XCOLL_ERR_TRUNCATED;
        }
    } else {
        s = ucp_request_check_status(req);
        if (s == UCS_INPROGRESS)
            return XCOLL_INPROGRESS;
    }
    if (s == UCS_ERR_MESSAGE_TRUNCATED) {
        xc_error("message from rank %d with tag 0x%016llx is longer than the %zu bytes expected",
                 ur->peer, (unsigned long long)ur->tag, ur->len);
        st = XCOLL_ERR_TRUNCATED;
    } else if (s != UCS_OK) {
        xc_error("UCX %s of %zu bytes %s rank %d (tag 0x%016llx) failed: %s",
                 ur->is_recv ? "receive" : "send", ur->len, ur->is_recv ? "from" : "to",
                 ur->peer, (unsigned long long)ur->tag, ucs_status_string(s));
        st = failure(ur->ep, s);
    }
    ucp_request_free(req);
    return st;
}

static void ucx_cancel(void *tl_comm, void *req)
{
    (void)tl_comm;
    if (req == NULL)
        return;
    /* An unmatched receive completes as canceled right here. A send, or a
     * receive already matched, goes on inside UCX after we free the handle:
     * ucp_request_free is legal on a request in flight. */
    ucp_request_cancel(g_ucx.worker, req);
    ucp_request_free(req);
}

static int ucx_progress(void *tl_comm)
{
    (void)tl_comm;
    return (int)ucp_worker_progress(g_ucx.worker);
}

/* Arm only after a progress call found nothing (the engine's contract
 * for idle); BUSY means events arrived meanwhile: go progress them. */
static int ucx_arm(void *tl_comm, xc_wait_t *w)
{
    ucs_status_t s;
    (void)tl_comm;
    if (g_ucx.efd < 0)
        return -1;
    s = ucp_worker_arm(g_ucx.worker);
    if (s == UCS_ERR_BUSY)
        return 1;
    if (s != UCS_OK)
        return -1;
    w->fd = g_ucx.efd;
    w->fd2 = -1;
    w->nwords = 0;
    w->max_us = g_backoff.sleep_us;
    return 0;
}

/* The timeout only bounds what a lost wakeup could cost (e.g. traffic to
 * self, which signals nothing, or events another thread took meanwhile). */
static void ucx_sleep(const xc_wait_t *w, unsigned max_us)
{
    unsigned us = max_us < w->max_us ? max_us : w->max_us;
    struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
    struct pollfd pfd = { w->fd, POLLIN, 0 };
    (void)ppoll(&pfd, 1, &ts, NULL);
}

/* See transport.h. The sleep that follows may be long (the wakeup is
 * the event fd: a peer's message, or the socket of a buffered tail
 * becoming writable); the cap bounds what a lost wakeup costs. */
static int ucx_drain(void *tl_comm, xc_wait_t *w)
{
    int a;
    if (ucx_progress(tl_comm) > 0)
        return 1;
    a = ucx_arm(tl_comm, w);
    if (a == 0)
        w->max_us = 100000;
    return a;
}

/* See transport.h: over TCP, UCX keeps what the socket did not take of a
 * message it reported sent, and writes it only when progressed again. */
static int ucx_owes_tails(void *tl_comm)
{
    const xc_ucx_comm_t *c = tl_comm;
    return c != NULL && c->tcp;
}

static void ucx_disarm(void)
{
    /* the event fd needs nothing undone */
}

static void ucx_idle(void *tl_comm, unsigned idle_rounds, unsigned max_wait_us)
{
    uint64_t now = now_ns(), idle_us;
    xc_wait_t w;
    int armed;

    /* a new streak of idle rounds starts the clock again */
    if (idle_rounds <= g_ucx.last_idle_round || g_ucx.idle_since_ns == 0)
        g_ucx.idle_since_ns = now;
    g_ucx.last_idle_round = idle_rounds;
    idle_us = (now - g_ucx.idle_since_ns) / 1000;

    if (idle_us < g_backoff.spin_us)
        return;
    if (idle_us < g_backoff.yield_us || max_wait_us == 0 ||
        (armed = ucx_arm(tl_comm, &w)) < 0) {
        sched_yield();
        return;
    }
    if (armed == 0)
        ucx_sleep(&w, max_wait_us);
}

/* The endpoint to peer if UCX failed it, else NULL. */
static xc_ucx_ep_t *failed_ep(void *tl_comm, int peer)
{
    xc_ucx_comm_t *c = tl_comm;
    if (c == NULL || peer < 0 || peer >= c->size || c->peers[peer] == NULL ||
        c->peers[peer]->failed == UCS_OK)
        return NULL;
    return c->peers[peer];
}

/* Why the connection to peer failed, or NULL while it is fine. */
static const char *ucx_peer_lost(void *tl_comm, int peer)
{
    xc_ucx_ep_t *e = failed_ep(tl_comm, peer);
    if (e == NULL)
        return NULL;
    if (goodbye_here(e))
        return "it said goodbye before closing the connection";
    return ucs_status_string(e->failed);
}

/* Whether peer's connection failed after its goodbye. Asks UCX's queue
 * again each time: the goodbye may be processed after the failure. */
static int ucx_peer_left(void *tl_comm, int peer)
{
    xc_ucx_ep_t *e = failed_ep(tl_comm, peer);
    return e != NULL && goodbye_here(e);
}

static unsigned ucx_lost_count(void *tl_comm)
{
    (void)tl_comm;
    return g_ucx.lost;
}

/* Whether this UCX moves CUDA memory itself (built with CUDA support and
 * its cuda transports loaded); Debian's does not, so xcoll stages. */
static int ucx_device_memory(void *tl_comm)
{
    ucp_context_attr_t attr;
    (void)tl_comm;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (g_ucx.context == NULL || ucp_context_query(g_ucx.context, &attr) != UCS_OK)
        return 0;
    return (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

const xc_transport_t xc_ucx_transport = {
    .device_memory = ucx_device_memory,
    .name = "ucx",
    .comm_init = ucx_comm_init,
    .comm_fini = ucx_comm_fini,
    .isend = ucx_isend,
    .irecv = ucx_irecv,
    .test = ucx_test,
    .cancel = ucx_cancel,
    .progress = ucx_progress,
    .idle = ucx_idle,
    .arm = ucx_arm,
    .sleep = ucx_sleep,
    .disarm = ucx_disarm,
    .drain = ucx_drain,
    .owes_tails = ucx_owes_tails,
    .peer_lost = ucx_peer_lost,
    .peer_left = ucx_peer_left,
    .lost_count = ucx_lost_count,
};
