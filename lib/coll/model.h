/* The cost model: a collective's time on a modelled cluster, computed from
 * the schedules the algorithm builds (every rank's), by an event
 * simulation, never from a formula written per algorithm (those stay in
 * docs/ALGORITHMS.md and test/sim as checks of this). docs/SCALING.md
 * shows what it predicts and how it was calibrated.
 *
 * The machine it models:
 * - each rank has one CPU that runs its local steps (copies, reductions)
 *   and pays `overhead` per message it posts or takes, one at a time
 *   (ranks that share a core, params.cores, share its CPU and ways, and
 *   the core loses params.turn each time it changes hands);
 * - a message between two ranks of one node costs intra.alpha, then its
 *   bytes at intra.beta; it occupies the sender's way out and the
 *   receiver's way in (each rank's memory path), first come first served;
 *   above XC_ACK_ABOVE_BYTES the receiver's CPU moves the bytes (xcoll's
 *   single-copy read), before it reduces them; bytes the sender wrote in
 *   this call (a send that waits for its own receive, reduction or copy)
 *   move params.forward times slower: in back-to-back calls on the same
 *   buffers their lines go back and forth between the two cores' caches,
 *   the writer taking each back from the reader before it writes again;
 * - beyond params.cache, every rate within a node costs params.dram times;
 * - a message between nodes costs inter.alpha, then its bytes at
 *   inter.beta through the sending node's NIC and the receiving node's
 *   NIC, which the node's ranks share;
 * - messages up to XC_ACK_ABOVE_BYTES leave as soon as the send is ready
 *   (eager); larger ones start when both ends are ready (rendezvous):
 *   within a node a handshake of two intra.alpha first; between nodes
 *   inter.alpha is all a message pays before its bytes, handshake or not
 *   (it is fitted to one message end to end, where the handshake's own
 *   packets are lost in the software's latency: docs/SCALING.md);
 * - gamma per reduced byte, copy per copied byte, on the rank's CPU.
 * Left out: the call check and the end-of-collective acknowledgements
 * (a few zero-byte messages after the data), the engine's own time per
 * step, which cache level a working set sits in, the CPU time a kernel's
 * TCP takes, and congestion inside the network between NICs. */
#ifndef XC_MODEL_H
#define XC_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "coll.h"

typedef struct {
    double alpha;  /* seconds per message, before its first byte lands */
    double beta;   /* seconds per byte */
} xc_link_cost_t;

/* Every cost is finite and >= 0 (xc_model_run says XCOLL_ERR_INVALID_ARG
 * otherwise): a resource is then never free earlier than it was, which
 * the simulation's order of events rests on. */
typedef struct {
    xc_link_cost_t intra, inter;
    double overhead;  /* CPU seconds per message, at each end */
    double gamma;     /* CPU seconds per reduced byte */
    double copy;      /* CPU seconds per copied byte */
    int cores;        /* > 0: all ranks share this many cores (rank r on
                         core r % cores), as on a machine with fewer cores
                         than ranks; 0: a core per rank */
    double turn;      /* seconds a shared core loses each time it turns from
                         one rank's work to another's (cores > 0 only) */
    double cache;     /* bytes of cache, which the bytes one rank touches in
                         a call must fit (not the node's ranks together:
                         docs/SCALING.md); 0: every byte moves at the rates
                         above */
    double dram;      /* >= 1: what the node's bytes cost, times the rates
                         above, once the buffers one rank of the call
                         touches take twice the cache (in between, in
                         proportion); 0 as 1 */
    double forward;   /* >= 1: what a byte that a rank wrote in this call
                         and then sends to a rank of its node costs, times
                         intra.beta, while the buffers fit the cache (the
                         line moves between the two cores' caches and back:
                         bench/line_pingpong); beyond it the larger of this
                         and the dram factor; 0 as 1 */
    double inter_cpu; /* seconds per byte the receiver's CPU spends on a
                         message between nodes above XC_ACK_ABOVE_BYTES as
                         it arrives (a kernel's TCP on the ranks' own
                         cores); 0: the NIC does it all */
    double split;     /* > 0: a message within a node of at least this many
                         bytes (and above XC_ACK_ABOVE_BYTES) into a plain
                         receive is a split copy (the shared-memory
                         transport's XCOLL_SHM_SPLIT_MIN): where the
                         sender's core is free when the copy starts, on
                         another core than the receiver's, the sender
                         copies half (its CPU and way out for half the
                         time) and the receiver's CPU reads the other half;
                         0: the receiver reads it all */
} xc_model_params_t;

/* This machine's calibration (docs/SCALING.md, "Calibration"): xcoll's
 * shared memory within a node, the namespace cluster's unshaped links
 * between nodes, a core per rank. */
void xc_model_params_default(xc_model_params_t *p);

typedef struct {
    double time;            /* seconds until the last rank finishes */
    double first_done;      /* seconds until the first rank finishes */
    uint64_t msgs, bytes;   /* sent, summed over ranks */
    uint64_t inter_msgs, inter_bytes; /* the part that crossed nodes */
    uint64_t steps;         /* schedule steps, summed over ranks */
} xc_model_result_t;

/* The most steps (all ranks') one simulation builds: 32 bytes each and
 * their dependencies, about 5 GB. A ring allreduce on 4096 ranks has 67 M. */
#define XC_MODEL_MAX_STEPS (160ull * 1000 * 1000)

/* Builds algo's schedule for every rank 0..a->size-1 (a->rank is ignored;
 * a->topo gives the nodes: NULL is one node) and simulates them. Not the
 * v-variants. XCOLL_ERR_UNSUPPORTED when the algorithm declines the call
 * (on any rank), XCOLL_ERR_NO_MEMORY (also beyond XC_MODEL_MAX_STEPS,
 * logged), XCOLL_ERR_INTERNAL when the schedules do not complete or do not
 * agree (a send without its receive, or of another size: a builder's bug,
 * logged), XCOLL_ERR_INVALID_ARG (also for a cost that is negative or not
 * finite, cores < 0, or dram or forward neither 0 nor a finite number
 * >= 1). */
xcoll_status_t xc_model_run(const xc_algo_t *algo, const xc_coll_args_t *a,
                            const xc_model_params_t *p, xc_model_result_t *out);

/* A lower bound on the algorithm's time, from rank `rank`'s schedule
 * alone: the largest of its longest chain of dependencies (every step at
 * its own cost, no waiting, the cheaper link's alpha and beta for every
 * message) and what its CPU, its ways out and in and its share of its
 * NIC must each carry one thing at a time. What lets xc_model_compare
 * skip simulating a large schedule that cannot win. *steps: that rank's
 * steps. XCOLL_ERR_UNSUPPORTED: it declines. */
xcoll_status_t xc_model_bound(const xc_algo_t *algo, const xc_coll_args_t *a,
                              const xc_model_params_t *p, int rank, double *bound,
                              uint64_t *steps);

enum {
    XC_MODEL_DECLINED = 0, /* the algorithm does not serve this call */
    XC_MODEL_RAN,          /* time is the simulated time */
    XC_MODEL_BOUNDED       /* not simulated: bound >= the best simulated time, or
                              more than XC_MODEL_MAX_STEPS */
};

typedef struct {
    const xc_algo_t *algo;
    int status;       /* XC_MODEL_* */
    double time;      /* XC_MODEL_RAN */
    double bound;     /* rank 0's lower bound */
    uint64_t steps;   /* XC_MODEL_RAN: all ranks'; else rank 0's times the ranks */
} xc_model_entry_t;

/* Every algorithm of a->coll for this call (a->rank ignored): the ones
 * of at most exact_steps steps (estimated) and the one `tune` picks
 * (NULL: the built-in defaults; for rank 0, without a fallback) are
 * simulated; a larger one only where its bound is below the best so far,
 * so the best is always exact; none above XC_MODEL_MAX_STEPS (estimated),
 * not even the pick, which is then XC_MODEL_BOUNDED with its bound. out
 * gets one entry per algorithm of the collective, in table order (cap >=
 * that many); *picked points at the pick's entry, *best at the fastest
 * simulated one (NULL when none ran). */
struct xc_tune;
xcoll_status_t xc_model_compare(const xc_coll_args_t *a, const xc_model_params_t *p,
                                const struct xc_tune *tune, uint64_t exact_steps,
                                xc_model_entry_t *out, size_t cap, size_t *n,
                                const xc_model_entry_t **picked, const xc_model_entry_t **best);

/* "GB/s,us" (e.g. "25,2"): beta and alpha of a link. 0 or -1 when malformed. */
int xc_model_parse_link(const char *text, xc_link_cost_t *out);

#endif
