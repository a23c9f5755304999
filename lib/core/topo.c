/* Node discovery: a hash of where each rank runs, exchanged through the
 * bootstrap, grouped into nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo.h"
#include "log.h"

static struct xc_topo *topo_alloc(int size)
{
    /* one block: the struct, then its arrays */
    struct xc_topo *t = calloc(1, sizeof(*t) + 6 * (size_t)size * sizeof(int));
    if (t == NULL) {
        xc_error("out of memory for the topology of %d ranks", size);
        return NULL;
    }
    t->size = size;
    t->node_of = (int *)(t + 1);
    t->local_rank = t->node_of + size;
    t->members = t->local_rank + size;
    t->node_size = t->members + size; /* nnodes <= size */
    t->node_first = t->node_size + size;
    t->host_of = t->node_first + size;
    return t;
}

/* node_of is filled (nodes numbered by lowest rank); derive the rest.
 * Hosts are the nodes unless the caller set them apart. */
static void topo_finish(struct xc_topo *t)
{
    int r, n;
    if (t->nhosts == 0) {
        t->nhosts = t->nnodes;
        memcpy(t->host_of, t->node_of, (size_t)t->size * sizeof(int));
    }
    for (n = 0; n < t->nnodes; n++)
        t->node_size[n] = 0;
    for (r = 0; r < t->size; r++)
        t->local_rank[r] = t->node_size[t->node_of[r]]++;
    t->max_local = 0;
    for (n = 0; n < t->nnodes; n++) {
        t->node_first[n] = n == 0 ? 0 : t->node_first[n - 1] + t->node_size[n - 1];
        if (t->node_size[n] > t->max_local)
            t->max_local = t->node_size[n];
    }
    for (r = 0; r < t->size; r++)
        t->members[t->node_first[t->node_of[r]] + t->local_rank[r]] = r;
}

/* ranks with equal keys share a node, numbered by lowest rank */
static int group_keys(int size, const uint64_t *keys, int *of)
{
    int r, q, n = 0;
    /* quadratic, but run once per communicator and only over a few
     * thousand ranks at most */
    for (r = 0; r < size; r++) {
        for (q = 0; q < r && keys[q] != keys[r]; q++)
            ;
        of[r] = q < r ? of[q] : n++;
    }
    return n;
}

xcoll_status_t xc_topo_from_keys(int size, const uint64_t *keys, struct xc_topo **out)
{
    struct xc_topo *t = topo_alloc(size);
    *out = NULL;
    if (t == NULL)
        return XCOLL_ERR_NO_MEMORY;
    t->nnodes = group_keys(size, keys, t->node_of);
    topo_finish(t);
    *out = t;
    return XCOLL_OK;
}

xcoll_status_t xc_topo_from_ranks_per_node(int size, int k, struct xc_topo **out)
{
    struct xc_topo *t;
    int r;
    *out = NULL;
    if (k < 1) {
        xc_error("topology: %d ranks per node; expected at least 1", k);
        return XCOLL_ERR_INVALID_ARG;
    }
    if ((t = topo_alloc(size)) == NULL)
        return XCOLL_ERR_NO_MEMORY;
    for (r = 0; r < size; r++)
        t->node_of[r] = r / k;
    t->nnodes = (size + k - 1) / k;
    topo_finish(t);
    *out = t;
    return XCOLL_OK;
}

void xc_topo_free(struct xc_topo *t)
{
    free(t);
}

/* FNV-1a: only needs to tell a handful of host names apart. */
static uint64_t hash_bytes(const char *p, size_t n, uint64_t h)
{
    while (n--) {
        h ^= (unsigned char)*p++;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Host name and kernel boot id: the boot id tells apart two machines that
 * happen to share a host name (cloned images, containers named alike). */
uint64_t xc_node_key(void)
{
    char buf[256];
    uint64_t h = 0xcbf29ce484222325ULL;
    FILE *f;
    memset(buf, 0, sizeof(buf));
    if (gethostname(buf, sizeof(buf) - 1) == 0)
        h = hash_bytes(buf, strlen(buf), h);
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        memset(buf, 0, sizeof(buf));
        if (fgets(buf, sizeof(buf), f) != NULL)
            h = hash_bytes(buf, strlen(buf), h);
        fclose(f);
    }
    return h;
}

typedef struct {
    uint64_t key;
    int64_t ranks_per_node; /* the override, 0 if unset, -1 if malformed */
} topo_hello_t;

xcoll_status_t xc_topo_create(const xcoll_bootstrap_t *boot, struct xc_topo **out)
{
    topo_hello_t me, *all;
    const char *env = getenv("XCOLL_TOPO_RANKS_PER_NODE");
    uint64_t *keys;
    xcoll_status_t rc;
    int r;

    *out = NULL;
    memset(&me, 0, sizeof(me));
    me.key = xc_node_key();
    if (env != NULL && *env != '\0') {
        char *end;
        long k = strtol(env, &end, 10);
        /* a malformed value still takes part in the exchange, so that
         * every rank fails instead of the others waiting for this one */
        if (*end != '\0' || k < 1 || k > (1L << 30))
            xc_error("XCOLL_TOPO_RANKS_PER_NODE=\"%s\": expected a positive integer", env);
        me.ranks_per_node = *end != '\0' || k < 1 || k > (1L << 30) ? -1 : k;
    }
    all = calloc((size_t)boot->size, sizeof(*all));
    keys = calloc((size_t)boot->size, sizeof(*keys));
    if (all == NULL || keys == NULL) {
        xc_error("out of memory finding the nodes of %d ranks", boot->size);
        rc = XCOLL_ERR_NO_MEMORY;
        goto out;
    }
    if (boot->allgather(&me, all, sizeof(me), boot->ctx) != 0) {
        xc_error("topology: the bootstrap allgather failed");
        rc = XCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    for (r = 0; r < boot->size; r++) {
        if (all[r].ranks_per_node < 0) {
            if (r != boot->rank)
                xc_error("topology: rank %d has a malformed XCOLL_TOPO_RANKS_PER_NODE", r);
            rc = XCOLL_ERR_INVALID_ARG;
            goto out;
        }
    }
    for (r = 0; r < boot->size; r++)
        keys[r] = all[r].key;
    if (all[0].ranks_per_node > 0) {
        rc = xc_topo_from_ranks_per_node(boot->size, (int)all[0].ranks_per_node, out);
        /* the transports still need the machines as they are */
        if (rc == XCOLL_OK)
            (*out)->nhosts = group_keys(boot->size, keys, (*out)->host_of);
    } else {
        rc = xc_topo_from_keys(boot->size, keys, out);
    }
    if (rc == XCOLL_OK && all[0].ranks_per_node > 0)
        xc_info("topology: %d ranks on %d node%s (at most %d per node), faked by "
                "XCOLL_TOPO_RANKS_PER_NODE; the ranks run on %d host%s", boot->size,
                (*out)->nnodes, (*out)->nnodes == 1 ? "" : "s", (*out)->max_local,
                (*out)->nhosts, (*out)->nhosts == 1 ? "" : "s");
    else if (rc == XCOLL_OK)
        xc_info("topology: %d ranks on %d node%s (at most %d per node)", boot->size,
                (*out)->nnodes, (*out)->nnodes == 1 ? "" : "s", (*out)->max_local);
out:
    free(all);
    free(keys);
    return rc;
}
