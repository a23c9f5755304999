/* Which ranks of a communicator share a node: for the hierarchical
 * algorithms (lib/coll/hier.c), and for the transports, which must know
 * which peers their shared memory reaches. Computed once at communicator
 * creation, from one bootstrap exchange, and read-only afterwards;
 * schedules are pure functions of it.
 *
 * Nodes are numbered in the order of their lowest rank, and a node's
 * members are listed in ascending rank order, so every rank derives the
 * same numbering. A node's leader is its lowest rank. */
#ifndef XC_TOPO_H
#define XC_TOPO_H

#include <stdint.h>
#include "xcoll.h"

struct xc_topo {
    int size;        /* ranks */
    int nnodes;
    int max_local;   /* ranks on the most populated node */
    int *node_of;    /* [size] node of each rank */
    int *local_rank; /* [size] index of each rank among its node's members */
    int *node_size;  /* [nnodes] */
    int *node_first; /* [nnodes] where the node's members start in members */
    int *members;    /* [size] node 0's ranks, then node 1's, ... */
    /* The machines the ranks really run on, numbered alike. The same as
     * the nodes above unless XCOLL_TOPO_RANKS_PER_NODE fakes those: the
     * algorithms see the fake nodes, the transports always the real ones. */
    int nhosts;
    int *host_of;    /* [size] */
};

static inline int xc_topo_leader(const struct xc_topo *t, int node)
{
    return t->members[t->node_first[node]];
}

/* This node's key: a hash of the host name and the kernel boot id (two
 * machines cloned alike still differ by boot id). The one definition of
 * "the same node" in xcoll: the topology exchange carries it. */
uint64_t xc_node_key(void);

/* Ranks with equal keys share a node. *out is NULL on failure. */
xcoll_status_t xc_topo_from_keys(int size, const uint64_t *keys, struct xc_topo **out);

/* Fake nodes of k consecutive ranks: [0, k), [k, 2k), ...; the last one may
 * be smaller. */
xcoll_status_t xc_topo_from_ranks_per_node(int size, int k, struct xc_topo **out);

/* Collective over the bootstrap: every rank contributes its node key
 * (xc_node_key). XCOLL_TOPO_RANKS_PER_NODE=k (rank 0's value wins, so
 * ranks never disagree) replaces the detected nodes with fake ones (not
 * the hosts). It runs first in communicator creation, so no rank has
 * failed before it. */
xcoll_status_t xc_topo_create(const xcoll_bootstrap_t *boot, struct xc_topo **out);

void xc_topo_free(struct xc_topo *t);

#endif
