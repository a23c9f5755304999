/* Collectives as schedule builders. Each algorithm family lives in its own
 * file (ring.c, tree.c, pairwise.c, dissemination.c, ...) and exposes
 * functions of one shape: fill a schedule for one rank from xc_coll_args_t.
 *
 * Buffer contract, per collective (counts in elements, "block" = count
 * elements; in_place normalised by the API layer):
 *   allreduce       SEND count, RECV count.   in_place: input in RECV, SEND unused.
 *   bcast           RECV count on every rank (root's holds the data).
 *   reduce          SEND count; RECV count on root only (NULL elsewhere:
 *                   never touch it off-root). in_place (root): input in RECV.
 *   allgather       SEND count, RECV size blocks. in_place: own block
 *                   already at RECV block rank, SEND unused.
 *   reduce_scatter  SEND size blocks, RECV count. in_place: input is RECV
 *                   (size blocks) and the result must end in RECV block
 *                   rank (NCCL layout; the API layer moves it for MPI's).
 *   alltoall        SEND size blocks, RECV size blocks. in_place: input in RECV.
 *   gather          SEND count; RECV size blocks on root only. in_place
 *                   (root): own block already at RECV block root.
 *   scatter         SEND size blocks on root only; RECV count. in_place
 *                   (root): root keeps its block in SEND, RECV unused.
 *   barrier         no buffers.
 * The v-variants name their blocks by counts and displacements (elements,
 * xc_coll_args_t.counts): block j is counts[j] elements at displs[j].
 *   allgatherv      SEND rcounts[rank]; RECV blocks rcounts/rdispls. in_place:
 *                   own block already at RECV rdispls[rank], SEND unused.
 *   alltoallv       SEND blocks scounts/sdispls (block j goes to rank j);
 *                   RECV blocks rcounts/rdispls (block j from rank j).
 *                   in_place: input in RECV as rcounts/rdispls, SEND unused.
 *   gatherv         SEND count; RECV blocks rcounts/rdispls on root only.
 *                   in_place (root): own block already at RECV rdispls[root].
 *   scatterv        SEND blocks scounts/sdispls on root only; RECV count.
 *                   in_place (root): root keeps its block in SEND, RECV unused.
 * Every rank's rcounts of an allgatherv are the same; an alltoallv's
 * scounts[j] on rank i equals rcounts[i] on rank j. A v-variant sends no
 * message for an empty block: both ends know it is empty.
 * A builder returns XCOLL_OK, XCOLL_ERR_UNSUPPORTED to decline a case it
 * cannot serve (the selector then tries the next candidate), or the
 * schedule's error. */
#ifndef XC_COLL_H
#define XC_COLL_H

#include "../core/schedule.h"

typedef enum {
    XC_COLL_ALLREDUCE = 0,
    XC_COLL_BCAST,
    XC_COLL_REDUCE,
    XC_COLL_ALLGATHER,
    XC_COLL_REDUCE_SCATTER,
    XC_COLL_ALLTOALL,
    XC_COLL_GATHER,
    XC_COLL_SCATTER,
    XC_COLL_BARRIER,
    XC_COLL_ALLGATHERV,
    XC_COLL_ALLTOALLV,
    XC_COLL_GATHERV,
    XC_COLL_SCATTERV,
    XC_COLL_COUNT
} xc_coll_t;

typedef struct {
    xc_coll_t coll;
    int rank, size;
    size_t count;        /* elements, per the contract above */
    xcoll_dtype_t dtype;
    xcoll_op_t op;       /* reductions only */
    int root;            /* rooted collectives only */
    int in_place;
    int fallback;        /* the caller can run the call itself: "mpi" declines it */
    const struct xc_topo *topo; /* which ranks share a node (lib/core/topo.h); may be NULL */
    /* v-variants only: size entries each, in elements (NULL where the
     * contract above does not use them) */
    const size_t *scounts, *sdispls, *rcounts, *rdispls;
    /* The call check (XCOLL_CHECK): this rank's stamp (XC_STAMP_BYTES), put
     * first in every schedule built for the call; NULL: no check. */
    const char *stamp;
} xc_coll_args_t;

typedef xcoll_status_t (*xc_build_fn)(xc_sched_t *s, const xc_coll_args_t *a);

typedef struct {
    const char *name;    /* as written in logs and tuning strings */
    xc_coll_t coll;
    xc_build_fn build;
} xc_algo_t;

const char *xc_coll_name(xc_coll_t coll);

/* The v-variants: a rank's counts may be its own (alltoallv) or the
 * root's alone (gatherv, scatterv), so no choice of theirs may depend on
 * what some ranks cannot see, such as handing a call back. */
static inline int xc_coll_is_vector(xc_coll_t coll)
{
    return coll >= XC_COLL_ALLGATHERV && coll < XC_COLL_COUNT;
}

/* Ring peers are pure functions of rank and size. */
static inline int xc_ring_next(int rank, int size) { return (rank + 1) % size; }
static inline int xc_ring_prev(int rank, int size) { return (rank + size - 1) % size; }

/* Block b of n blocks over count elements: the first count % n blocks get
 * one extra element, so any count splits over any rank count. */
static inline size_t xc_block_count(size_t count, int n, int b)
{
    return count / (size_t)n + ((size_t)b < count % (size_t)n ? 1 : 0);
}
static inline size_t xc_block_offset(size_t count, int n, int b)
{
    size_t r = count % (size_t)n;
    return (size_t)b * (count / (size_t)n) + ((size_t)b < r ? (size_t)b : r);
}

/* ring.c */
xcoll_status_t ring_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t ring_allgather_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t ring_reduce_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* tree.c: binomial trees */
xcoll_status_t binomial_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t binomial_reduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t binomial_gather_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t binomial_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* linear.c */
xcoll_status_t linear_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t linear_reduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t linear_gather_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t linear_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* pairwise.c */
xcoll_status_t pairwise_alltoall_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* The v-variants, each in its family's file (ring.c, recdbl.c, direct.c,
 * pairwise.c, linear.c). Every alltoallv algorithm sends one message to
 * each peer with a non-empty block and receives one from each (out of
 * place: a step per block, skipped where empty), so ranks whose local
 * sizes led them to different algorithms still match. */
xcoll_status_t ring_allgatherv_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t recdbl_allgatherv_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t direct_allgatherv_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t pairwise_alltoallv_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t scattered_alltoallv_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* An out-of-place alltoallv schedule of these algorithms, built for other
 * counts of the same shape (which blocks exceed XC_ACK_ABOVE_BYTES),
 * bound to a's counts and displacements; check_only:
 * only whether its steps already are a's. 0: some step is not one block's
 * (in place, or another builder), and the schedule serves only its own counts. */
int xc_alltoallv_rebind(xc_sched_t *s, const xc_coll_args_t *a, int check_only);
xcoll_status_t linear_gatherv_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t linear_scatterv_schedule(xc_sched_t *s, const xc_coll_args_t *a);

/* dissemination.c */
xcoll_status_t dissemination_barrier_schedule(xc_sched_t *s, const xc_coll_args_t *a);

/* recdbl.c: recursive doubling / halving (any rank count) */
xcoll_status_t recdbl_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t rabenseifner_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t recdbl_allgather_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t rechalving_reduce_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* bruck.c */
xcoll_status_t bruck_allgather_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t bruck_alltoall_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* composite.c: algorithms built from other builders */
xcoll_status_t reduce_bcast_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t scatter_allgather_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t rsg_reduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* chain.c: pipelined chain */
xcoll_status_t chain_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* dbtree.c: pipelined double binary tree */
xcoll_status_t dbtree_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t dbtree_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* tree.c (continued) */
xcoll_status_t tree_barrier_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* hier.c: intra-node + inter-node compositions; decline without a topology */
xcoll_status_t hier_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t hier_alltoall_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t hier_bcast_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t hier2d_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);

/* direct.c: one step, every rank straight to every rank that needs its
 * data; reductions in rank order (bit-identical on every rank). They
 * decline above XC_DIRECT_MAX_RANKS ranks. */
#define XC_DIRECT_MAX_RANKS 64
xcoll_status_t direct_allreduce_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t direct_reduce_scatter_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t direct_allgather_schedule(xc_sched_t *s, const xc_coll_args_t *a);
xcoll_status_t direct_barrier_schedule(xc_sched_t *s, const xc_coll_args_t *a);
/* The inputs of a rank-order reduction over P ranks: in[k] is where rank
 * k's input will be (scratch slots, allocated here), got[k] = -1 (the
 * caller sets the receives). This rank's own (me) stays at `mine`, or in
 * place is copied to its slot first, since the reduction overwrites it.
 * Returns that copy's step, or -1. */
int xc_rank_order_inputs(xc_sched_t *s, int P, int me, int in_place, xc_ref_t mine,
                         size_t bytes, xc_ref_t *in, int *got);
/* Receives every other rank's input into its slot (from me - 1, me - 2,
 * ...: the order the direct sends go out in), then dst = in[0] op in[1]
 * op ... op in[P-1] (P >= 2) from the left, the first write to dst after
 * `after`; divides for AVG. */
void xc_receive_and_reduce(xc_sched_t *s, int P, int me, const xc_ref_t *in, int *got,
                           size_t bytes, xc_ref_t dst, int after);
/* A reduction on one rank (allreduce, reduce, reduce_scatter of `bytes`):
 * the input is the result, copied from SEND unless in place. */
xcoll_status_t xc_one_rank_reduction(xc_sched_t *s, const xc_coll_args_t *a, size_t bytes);

/* select.c: every algorithm, and the choice for one call. */
extern const xc_algo_t xc_algorithms[];
extern const size_t xc_num_algorithms;
/* The pseudo-algorithm "mpi" of every collective: it builds nothing; a
 * call it is chosen for goes back to the caller (XCOLL_DECLINED) when the
 * caller has a fallback, and is skipped otherwise. Not in xc_algorithms. */
extern const xc_algo_t xc_algo_mpi;
const xc_algo_t *xc_algo_find(xc_coll_t coll, const char *name);

/* Builds the schedule for one call: the candidates of the rule in tune
 * (tune.h; NULL: the built-in defaults) that covers the call, then the
 * collective's other algorithms in table order; the first that accepts
 * wins. *s is initialised here and s->algo names the algorithm; why (if
 * not NULL) gets the rule that chose it and what declined, for the log.
 * XCOLL_DECLINED (s left empty) when the candidate reached is "mpi", or
 * no algorithm accepts the call, and a->fallback is set. */
struct xc_tune;
xcoll_status_t xc_select_and_build(xc_sched_t *s, const xc_coll_args_t *a,
                                   const struct xc_tune *tune, char *why, size_t whylen);

#endif
