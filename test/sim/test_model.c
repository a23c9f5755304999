/* The cost model (lib/coll/model.h), checked three ways:
 * - formulas: where docs/ALGORITHMS.md gives an algorithm's time in
 *   alpha, beta and gamma, the simulation of its real schedules must
 *   give it to the last digit (the model is those costs, nothing else);
 * - sharing: a NIC serves its node's ranks one message at a time, and a
 *   rank's CPU one step at a time (and the costs it refuses);
 * - machine: the cache (one rank's buffers), a shared core's turn, a
 *   receiver that reads its own large messages within a node, and bytes
 *   a rank wrote in the call read from its cache (forward), as
 *   calibrated;
 * - selection at scale: on the reference clusters of docs/SCALING.md, at
 *   64 to 4096 ranks, the default table must never pick an algorithm the
 *   model predicts more than 1.3x slower than the best one (checked_at
 *   says which collectives at 4096).
 * - bound: xc_model_bound never above the simulated time (every
 *   algorithm, rank, a few sizes and machines);
 * Usage: test_model [-v] [-q] [formulas|sharing|machine|bound|select]
 *   -q: the selection check at 64 and 256 ranks only (sanitizer builds).
 * Prints "test_model: N passed, M failed"; exits 1 on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/coll.h"
#include "coll/model.h"
#include "coll/tune.h"
#include "log.h"
#include "topo.h"

#include "../unit/check.h"

static const xc_algo_t *algo(xc_coll_t coll, const char *name)
{
    const xc_algo_t *a = xc_algo_find(coll, name);
    if (a == NULL) {
        fprintf(stderr, "test_model: no algorithm %s\n", name);
        exit(2);
    }
    return a;
}

/* One call: float32 sums of `bytes` on P ranks, rpn a node (0: one node;
 * a->topo is then the caller's to xc_topo_free). */
static xcoll_status_t call_args(xc_coll_t coll, int P, int rpn, size_t bytes, xc_coll_args_t *a)
{
    struct xc_topo *topo = NULL;
    xcoll_status_t rc;
    memset(a, 0, sizeof(*a));
    a->coll = coll;
    a->size = P;
    a->dtype = XCOLL_FLOAT32;
    a->count = bytes / 4;
    a->op = XCOLL_SUM;
    if (rpn > 0 && (rc = xc_topo_from_ranks_per_node(P, rpn, &topo)) != XCOLL_OK)
        return rc;
    a->topo = topo;
    return XCOLL_OK;
}

/* That call simulated. */
static xcoll_status_t model_run(xc_coll_t coll, const char *name, int P, int rpn, size_t bytes,
                                const xc_model_params_t *p, xc_model_result_t *r)
{
    xc_coll_args_t a;
    xcoll_status_t rc = call_args(coll, P, rpn, bytes, &a);
    if (rc != XCOLL_OK)
        return rc;
    rc = xc_model_run(algo(coll, name), &a, p, r);
    xc_topo_free((struct xc_topo *)a.topo);
    return rc;
}

/* Simulated time of one call, in seconds; -1 when it fails. */
static double model_time(xc_coll_t coll, const char *name, int P, int rpn, size_t bytes,
                         const xc_model_params_t *p)
{
    xc_model_result_t r;
    return model_run(coll, name, P, rpn, bytes, p, &r) == XCOLL_OK ? r.time : -1;
}

static int close_to(double got, double want)
{
    return fabs(got - want) <= 1e-9 * fabs(want) + 1e-15;
}

/* One node, every cost but the named ones zero. */
static xc_model_params_t bare(void)
{
    xc_model_params_t p;
    memset(&p, 0, sizeof(p));
    p.intra.alpha = 1e-6;
    p.intra.beta = 1.0 / 5e9;
    p.inter = p.intra;
    return p;
}

/* docs/ALGORITHMS.md's times, in the model's terms: a rendezvous message
 * (> 8 KiB) costs a handshake and a transfer, 2 alpha + b beta; an eager
 * one o + alpha + b beta + o. */
static void run_formulas(void)
{
    static const int Ps[] = {2, 4, 8, 16, 64};
    size_t i;
    for (i = 0; i < sizeof(Ps) / sizeof(Ps[0]); i++) {
        const int P = Ps[i];
        xc_model_params_t p = bare();
        const double b = 64 * 1024; /* a block: rendezvous, one ring segment */
        double want, got;
        int lg = 0;
        while ((1 << lg) < P)
            lg++;

        /* ring: 2(P-1) rounds of one block to the next rank, the
         * reduce-scatter half reducing each block as it lands */
        p.gamma = 1.0 / 3e9;
        want = 2 * (P - 1) * (2 * p.intra.alpha + b * p.intra.beta) + (P - 1) * b * p.gamma;
        got = model_time(XC_COLL_ALLREDUCE, "ring", P, 0, (size_t)b * (size_t)P, &p);
        check(close_to(got, want), "formula: ring allreduce P=%d: %.4f us, formula %.4f us", P,
              got * 1e6, want * 1e6);

        /* recursive doubling, eager (64 B): log2 P rounds, each a send
         * (o), the wire (alpha + b beta), the receive (o) and its reduction */
        p.overhead = 0.25e-6;
        want = lg * (2 * p.overhead + p.intra.alpha + 64 * p.intra.beta + 64 * p.gamma);
        got = model_time(XC_COLL_ALLREDUCE, "recdbl", P, 0, 64, &p);
        check(close_to(got, want), "formula: recdbl allreduce P=%d: %.4f us, formula %.4f us", P,
              got * 1e6, want * 1e6);

    }
}

/* What the model shares: a node's NIC between its ranks, and a rank's CPU
 * between its steps. */
static void run_sharing(void)
{
    xc_model_params_t p = bare();
    const size_t b = 1 << 20;
    double one, many, cpu1, cpu2;
    int K;
    p.inter.alpha = 2e-6;
    p.inter.beta = 1.0 / 10e9;
    p.intra.beta = 1.0 / 100e9; /* so the NIC is what limits */
    /* pairwise alltoall on 2 nodes of K ranks: each node sends K*K blocks
     * through its NIC, so at K ranks a node it takes ~K^2 times the
     * transfer of one block (the links within a node are 10x faster) */
    one = model_time(XC_COLL_ALLTOALL, "pairwise", 2, 1, b, &p);
    for (K = 2; K <= 8; K *= 2) {
        double wire = (double)K * K * (double)b * p.inter.beta;
        many = model_time(XC_COLL_ALLTOALL, "pairwise", 2 * K, K, b, &p);
        check(many >= wire && many <= 1.25 * wire + one,
              "sharing: pairwise alltoall 2 nodes x %d: %.1f us, the NIC alone %.1f us", K,
              many * 1e6, wire * 1e6);
    }
    /* one rank a node: nothing shared, one rendezvous transfer, whose
     * handshake is in the link's alpha (model.h) */
    check(close_to(one, p.inter.alpha + (double)b * p.inter.beta),
          "sharing: one rank a node is one transfer (%.1f us)", one * 1e6);
    /* a rendezvous send ends when its data has landed, not when it left:
     * the root of a 2-rank linear bcast is done no sooner than its peer */
    {
        xc_model_result_t r;
        xcoll_status_t rc = model_run(XC_COLL_BCAST, "linear", 2, 0, b, &p, &r);
        check(rc == XCOLL_OK && close_to(r.first_done, r.time) &&
                  close_to(r.time, 2 * p.intra.alpha + (double)b * p.intra.beta),
              "sharing: a rendezvous send ends when it has landed (root %.2f us, peer %.2f us)",
              r.first_done * 1e6, r.time * 1e6);
    }

    /* a reduction's cost is CPU time: twice gamma, about twice the time
     * of recdbl at a size where reductions dominate */
    p = bare();
    p.intra.beta = 1.0 / 1000e9;
    p.gamma = 1.0 / 1e9;
    cpu1 = model_time(XC_COLL_ALLREDUCE, "recdbl", 8, 0, 4 << 20, &p);
    p.gamma = 2.0 / 1e9;
    cpu2 = model_time(XC_COLL_ALLREDUCE, "recdbl", 8, 0, 4 << 20, &p);
    check(cpu2 > 1.9 * cpu1 && cpu2 < 2.1 * cpu1, "sharing: gamma x2 -> recdbl %.1f -> %.1f us",
          cpu1 * 1e6, cpu2 * 1e6);
    /* 8 ranks on 2 cores: 4 ranks' reductions one after another on each */
    p.cores = 2;
    cpu1 = model_time(XC_COLL_ALLREDUCE, "recdbl", 8, 0, 4 << 20, &p);
    check(cpu1 > 3.6 * cpu2 && cpu1 < 4.4 * cpu2,
          "sharing: 8 ranks on 2 cores -> recdbl %.1f us, %.2fx a core each", cpu1 * 1e6,
          cpu1 / cpu2);
}

/* What forward 3 instead of 1 adds to one call of `bytes` on P ranks,
 * on one node (rpn 0) or rpn a node. */
static double forward_cost(xc_coll_t coll, const char *name, int P, int rpn, size_t bytes,
                           xc_model_params_t p)
{
    double base;
    p.forward = 1;
    base = model_time(coll, name, P, rpn, bytes, &p);
    p.forward = 3;
    return model_time(coll, name, P, rpn, bytes, &p) - base;
}

/* ... to a 2-rank ring allreduce of two 64 KiB blocks. */
static double ring_forward_cost(int rpn, xc_model_params_t p)
{
    return forward_cost(XC_COLL_ALLREDUCE, "ring", 2, rpn, 2 * (size_t)(64 << 10), p);
}

/* What this machine's calibration adds (docs/SCALING.md, "Calibration"):
 * a node's cache, beyond which its bytes cost params.dram times more, a
 * shared core's turn from one rank to another, the receiver's CPU
 * reading a large message within a node, and bytes written in the call
 * read from the writer's cache. */
static void run_machine(void)
{
    const size_t b = 4 << 20; /* a 2-rank linear bcast: each rank touches 8 MiB */
    xc_model_params_t p = bare();
    double base, t;
    xc_model_result_t r;
    xcoll_status_t rc;

    base = model_time(XC_COLL_BCAST, "linear", 2, 0, b, &p);
    p.dram = 2;
    p.cache = 8 << 20; /* fits: no change */
    t = model_time(XC_COLL_BCAST, "linear", 2, 0, b, &p);
    check(close_to(t, base), "machine: working set within the cache: %.2f us, %.2f alone",
          t * 1e6, base * 1e6);
    p.cache = 4 << 20; /* twice the cache: the transfer costs dram times */
    t = model_time(XC_COLL_BCAST, "linear", 2, 0, b, &p);
    check(close_to(t - base, (double)b * p.intra.beta),
          "machine: twice the cache doubles the transfer: +%.2f us, transfer %.2f us",
          (t - base) * 1e6, (double)b * p.intra.beta * 1e6);
    p.cache = (16 << 20) / 3.0; /* 1.5 times the cache: half way */
    t = model_time(XC_COLL_BCAST, "linear", 2, 0, b, &p);
    check(close_to(t - base, 0.5 * (double)b * p.intra.beta),
          "machine: 1.5 times the cache: +%.2f us, half the transfer %.2f us", (t - base) * 1e6,
          0.5 * (double)b * p.intra.beta * 1e6);
    /* between nodes the NIC's rate is the NIC's: the cache changes nothing */
    p.cache = 1 << 20;
    t = model_time(XC_COLL_BCAST, "linear", 2, 1, b, &p);
    check(close_to(t, base - p.intra.alpha),
          "machine: the cache leaves a NIC alone: %.2f us, %.2f before (less a handshake)",
          t * 1e6, base * 1e6);
    /* the cache is one rank's: 4 ranks of an allreduce whose vectors (3 a
     * rank) fill it take no longer than without one, though the node
     * holds 4 times as much */
    p = bare();
    base = model_time(XC_COLL_ALLREDUCE, "recdbl", 4, 0, 1 << 20, &p);
    p.dram = 2;
    p.cache = 3 << 20;
    t = model_time(XC_COLL_ALLREDUCE, "recdbl", 4, 0, 1 << 20, &p);
    check(close_to(t, base), "machine: a rank's buffers within the cache: %.2f us, %.2f alone",
          t * 1e6, base * 1e6);
    /* ... and an allreduce's rank touches 3 vectors: 3 MiB is beyond 2.5 */
    p.cache = 2.5 * (1 << 20);
    t = model_time(XC_COLL_ALLREDUCE, "recdbl", 4, 0, 1 << 20, &p);
    check(t > 1.05 * base, "machine: 3 vectors a rank beyond 2.5 MiB of cache: %.2f us, %.2f",
          t * 1e6, base * 1e6);
    /* a block collective's rank its P blocks and as many again: a 2-rank
     * alltoall of 1 MiB blocks touches 4 MiB */
    p = bare();
    base = model_time(XC_COLL_ALLTOALL, "pairwise", 2, 0, 1 << 20, &p);
    p.dram = 2;
    p.cache = 3.5 * (1 << 20);
    t = model_time(XC_COLL_ALLTOALL, "pairwise", 2, 0, 1 << 20, &p);
    check(t > 1.05 * base, "machine: 4 blocks a rank beyond 3.5 MiB of cache: %.2f us, %.2f",
          t * 1e6, base * 1e6);

    /* bytes a rank wrote in the call and sends on: a 2-rank ring
     * allreduce's second half sends what each rank has just reduced, read
     * at forward times beta, one block on each rank's path */
    p = bare();
    t = ring_forward_cost(0, p);
    check(close_to(t, 2.0 * (64 << 10) * p.intra.beta),
          "machine: a forwarded block at 3 beta: +%.2f us, want +%.2f", t * 1e6,
          2.0 * (64 << 10) * p.intra.beta * 1e6);
    /* the same with 4 KiB blocks, eager: the wire carries them at 3 beta */
    t = forward_cost(XC_COLL_ALLREDUCE, "ring", 2, 0, 2 * 4096, p);
    check(close_to(t, 2.0 * 4096 * p.intra.beta),
          "machine: a forwarded eager block at 3 beta: +%.3f us, want +%.3f", t * 1e6,
          2.0 * 4096 * p.intra.beta * 1e6);
    /* a copy sent on: recursive doubling's allgather at 2 ranks copies its
     * block into the receive buffer and sends it from there */
    t = forward_cost(XC_COLL_ALLGATHER, "recdbl", 2, 0, 64 << 10, p);
    check(close_to(t, 2.0 * (64 << 10) * p.intra.beta),
          "machine: a copied block sent on at 3 beta: +%.2f us, want +%.2f", t * 1e6,
          2.0 * (64 << 10) * p.intra.beta * 1e6);
    /* pairwise alltoall's sends wait for earlier receives (its window) but
     * send the rank's own blocks: nothing forwarded */
    t = forward_cost(XC_COLL_ALLTOALL, "pairwise", 16, 0, 64 << 10, p);
    check(close_to(t, 0), "machine: pairwise's window forwards nothing: +%.2f us", t * 1e6);
    /* recursive doubling at 2 ranks sends only its own vector */
    base = model_time(XC_COLL_ALLREDUCE, "recdbl", 2, 0, 1 << 20, &p);
    p.forward = 3;
    t = model_time(XC_COLL_ALLREDUCE, "recdbl", 2, 0, 1 << 20, &p);
    check(close_to(t, base), "machine: nothing forwarded, nothing added: %.2f us, %.2f",
          t * 1e6, base * 1e6);
    /* beyond the cache the written bytes cost what every byte does */
    p = bare();
    p.dram = 4;
    p.cache = 1024;
    t = ring_forward_cost(0, p);
    check(close_to(t, 0), "machine: beyond the cache forward 3 < dram 4: +%.2f us", t * 1e6);
    /* and between nodes the NIC sets the rate */
    t = ring_forward_cost(1, bare());
    check(close_to(t, 0), "machine: forward leaves a NIC alone: +%.2f us", t * 1e6);

    /* a turn is paid where two ranks share a core, once each time it
     * changes hands: root posts, then the peer on the same core takes */
    p = bare();
    p.overhead = 0.2e-6;
    base = model_time(XC_COLL_BCAST, "linear", 2, 0, 64, &p);
    p.turn = 5e-6;
    t = model_time(XC_COLL_BCAST, "linear", 2, 0, 64, &p);
    check(close_to(t, base), "machine: no turn with a core per rank (%.2f us, %.2f)", t * 1e6,
          base * 1e6);
    p.cores = 1;
    t = model_time(XC_COLL_BCAST, "linear", 2, 0, 64, &p);
    check(close_to(t - base, p.turn), "machine: one core, one turn: +%.2f us", (t - base) * 1e6);

    /* the reader's CPU does the copy: a 2-rank recdbl allreduce (each
     * rank reads the other's vector and reduces it) cannot overlap the
     * two, so it takes the read, then the reduction */
    p = bare();
    p.gamma = 1.0 / 5e9;
    rc = model_run(XC_COLL_ALLREDUCE, "recdbl", 2, 0, b, &p, &r);
    check(rc == XCOLL_OK &&
              close_to(r.time, 2 * p.intra.alpha + (double)b * (p.intra.beta + p.gamma)),
          "machine: a read, then its reduction: %.2f us, want %.2f", r.time * 1e6,
          (2 * p.intra.alpha + (double)b * (p.intra.beta + p.gamma)) * 1e6);
    /* between nodes, a receiving CPU slower than the NIC sets the pace;
     * a faster one works while the bytes arrive and adds nothing */
    p = bare();
    p.inter.alpha = 2e-6;
    p.inter.beta = 1.0 / 1e9;
    base = model_time(XC_COLL_BCAST, "linear", 2, 1, b, &p);
    p.inter_cpu = p.inter.beta / 2;
    t = model_time(XC_COLL_BCAST, "linear", 2, 1, b, &p);
    check(close_to(t, base), "machine: a CPU faster than the NIC: %.2f us, %.2f without",
          t * 1e6, base * 1e6);
    p.inter_cpu = 2 * p.inter.beta;
    t = model_time(XC_COLL_BCAST, "linear", 2, 1, b, &p);
    check(close_to(t - base, (double)b * p.inter.beta),
          "machine: a CPU half the NIC's speed: +%.2f us, want +%.2f", (t - base) * 1e6,
          (double)b * p.inter.beta * 1e6);
    p = bare();
    p.gamma = 1.0 / 5e9;
    /* nor overlap one read with the reduction of the one before: a
     * 3-rank linear reduce's root reads and reduces both peers' vectors
     * one after another */
    rc = model_run(XC_COLL_REDUCE, "linear", 3, 0, b, &p, &r);
    check(rc == XCOLL_OK && r.time >= 2 * (double)b * (p.intra.beta + p.gamma),
          "machine: the root reads and reduces in turn: %.2f us, at least %.2f", r.time * 1e6,
          2 * (double)b * (p.intra.beta + p.gamma) * 1e6);

    /* split copies: a 2-rank bcast's idle root copies half of its 4 MiB
     * message (params.split) */
    p = bare();
    base = model_time(XC_COLL_BCAST, "linear", 2, 0, b, &p);
    p.split = 131072;
    t = model_time(XC_COLL_BCAST, "linear", 2, 0, b, &p);
    check(close_to(base - t, 0.5 * (double)b * p.intra.beta),
          "machine: a split copy takes half the transfer: -%.2f us, want -%.2f",
          (base - t) * 1e6, 0.5 * (double)b * p.intra.beta * 1e6);
    /* ... not below params.split, nor between nodes, nor on a core both
     * ranks share, nor into a receive that reduces (a reduce's root's) */
    t = model_time(XC_COLL_BCAST, "linear", 2, 0, 65536, &p);
    p.split = 0;
    check(close_to(t, model_time(XC_COLL_BCAST, "linear", 2, 0, 65536, &p)),
          "machine: no split below params.split");
    p.split = 131072;
    t = model_time(XC_COLL_BCAST, "linear", 2, 1, b, &p);
    p.split = 0;
    check(close_to(t, model_time(XC_COLL_BCAST, "linear", 2, 1, b, &p)),
          "machine: no split between nodes");
    p.cores = 1;
    base = model_time(XC_COLL_BCAST, "linear", 2, 0, b, &p);
    p.split = 131072;
    t = model_time(XC_COLL_BCAST, "linear", 2, 0, b, &p);
    check(close_to(t, base), "machine: no split on a shared core: %.2f us, %.2f", t * 1e6,
          base * 1e6);
    p = bare();
    p.gamma = 1.0 / 5e9;
    base = model_time(XC_COLL_REDUCE, "linear", 2, 0, b, &p);
    p.split = 131072;
    t = model_time(XC_COLL_REDUCE, "linear", 2, 0, b, &p);
    check(close_to(t, base), "machine: no split into a reducing receive: %.2f us, %.2f",
          t * 1e6, base * 1e6);
    /* a root busy copying its own block first (scatter's root copies
     * into its receive buffer while the peer starts reading): it helps
     * once free, or not at all; never slower than without */
    p.copy = 1.0 / 5e9;
    t = model_time(XC_COLL_SCATTER, "linear", 2, 0, b, &p);
    p.split = 0;
    check(t <= model_time(XC_COLL_SCATTER, "linear", 2, 0, b, &p) * (1 + 1e-9),
          "machine: a split never slower");
}

typedef struct {
    unsigned long runs, bad;
    char worst[160];
} bound_tally_t;

/* Every rank's bound of one call of al against its simulation. */
static void tally_bounds(const xc_algo_t *al, int P, int rpn, size_t bytes,
                         const xc_model_params_t *p, bound_tally_t *t)
{
    xc_coll_args_t a;
    xc_model_result_t res;
    int r;
    if (call_args(al->coll, P, rpn, bytes, &a) != XCOLL_OK)
        return;
    if (xc_model_run(al, &a, p, &res) == XCOLL_OK)
        for (r = 0; r < P; r++) {
            double b;
            uint64_t steps;
            if (xc_model_bound(al, &a, p, r, &b, &steps) != XCOLL_OK)
                continue;
            t->runs++;
            if (b > res.time * (1 + 1e-9) + 1e-15) {
                t->bad++;
                snprintf(t->worst, sizeof(t->worst),
                         "%s %s P=%d rpn=%d %zu B rank %d: bound %.3f us > %.3f us",
                         xc_coll_name(al->coll), al->name, P, rpn, bytes, r, b * 1e6,
                         res.time * 1e6);
            }
        }
    xc_topo_free((struct xc_topo *)a.topo);
}

/* xc_model_bound is a lower bound: never above the simulated time, for
 * every algorithm, rank, size and machine below (what lets
 * xc_model_compare skip a schedule must never skip the best). */
static void run_bound(void)
{
    static const int Ps[] = {2, 3, 5, 8};
    static const size_t sizes[] = {64, 4096, 8192, 12288, 65536};
    static const char *machines[] = {"bare with costs", "slow links within a node",
                                      "a faster network than memory, forward and cache",
                                      "shared cores", "split copies from 12 KiB"};
    size_t m, k, z, pi;
    int rpn;
    for (m = 0; m < sizeof(machines) / sizeof(machines[0]); m++) {
        xc_model_params_t p = bare();
        bound_tally_t t = {0, 0, ""};
        p.overhead = 0.3e-6;
        p.gamma = 1.0 / 4e9;
        p.copy = 1.0 / 8e9;
        if (m == 1)
            p.intra.beta = 1.0 / 1e9;
        if (m == 2) {
            p.inter.alpha = 0.2e-6; /* below a handshake within a node */
            p.inter.beta = 1.0 / 20e9;
            p.forward = 3;
            p.dram = 2;
            p.cache = 32 << 10;
        }
        if (m == 3) {
            p.cores = 2;
            p.turn = 1e-6;
        }
        if (m == 4)
            p.split = 12288;
        for (k = 0; k < xc_num_algorithms; k++)
            for (pi = 0; pi < sizeof(Ps) / sizeof(Ps[0]); pi++)
                for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
                    for (rpn = 0; rpn <= 2 && !xc_coll_is_vector(xc_algorithms[k].coll);
                         rpn += 2)
                        tally_bounds(&xc_algorithms[k], Ps[pi], rpn, sizes[z], &p, &t);
        check(t.runs > 1000 && t.bad == 0, "bound: %s: %lu bounds, %lu above the simulation%s%s",
              machines[m], t.runs, t.bad, t.bad ? ", last: " : "", t.worst);
    }
}

/* Costs the model cannot run: one that is negative or not finite would
 * free a resource before it was taken, and the order of events rests on
 * that never happening. Refused, not simulated. */
static void run_bad_params(void)
{
    static const char *what[] = {"gamma -1", "copy NaN", "inter beta inf", "overhead -0.1 us",
                                 "intra alpha -1 us", "cores -1", "turn -1 us", "cache NaN",
                                 "dram 0.5", "dram inf", "inter cpu -1", "forward 0.5",
                                 "forward NaN", "forward inf"};
    size_t i;
    for (i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
        xc_model_params_t p = bare();
        xc_model_result_t r;
        xcoll_status_t rc;
        switch (i) {
        case 0: p.gamma = -1; break;
        case 1: p.copy = NAN; break;
        case 2: p.inter.beta = INFINITY; break;
        case 3: p.overhead = -0.1e-6; break;
        case 4: p.intra.alpha = -1e-6; break;
        case 5: p.cores = -1; break;
        case 6: p.turn = -1e-6; break;
        case 7: p.cache = NAN; break;
        case 8: p.cache = 1 << 20; p.dram = 0.5; break;
        case 9: p.dram = INFINITY; break;
        case 10: p.inter_cpu = -1e-9; break;
        case 11: p.forward = 0.5; break;
        case 12: p.forward = NAN; break;
        default: p.forward = INFINITY; break;
        }
        rc = model_run(XC_COLL_ALLREDUCE, "ring", 8, 0, 4096, &p, &r);
        check(rc == XCOLL_ERR_INVALID_ARG, "params: %s refused (%s)", what[i],
              xcoll_strerror(rc));
    }
}

/* ------------------------------------------------------- selection at scale */

typedef struct {
    const char *name;
    int rpn;
    double nic_gbs, nic_us;
} cluster_t;

/* docs/SCALING.md's reference clusters (bench/model_rules.py has them
 * too). Within a node both have the same: 5 GB/s and 1 us a message, 0.3 us
 * of CPU per message, reductions at 4 GB/s, copies at 8 GB/s. */
static const cluster_t clusters[] = {
    {"A: 8 ranks a node, 25 GB/s 2 us NIC", 8, 25, 2},
    {"B: 128 ranks a node, 12.5 GB/s 3 us NIC", 128, 12.5, 3},
};

static xc_model_params_t cluster_params(const cluster_t *cl)
{
    xc_model_params_t p;
    memset(&p, 0, sizeof(p));
    p.intra.alpha = 1e-6;
    p.intra.beta = 1.0 / 5e9;
    p.overhead = 0.3e-6;
    p.gamma = 1.0 / 4e9;
    p.copy = 1.0 / 8e9;
    p.inter.alpha = cl->nic_us * 1e-6;
    p.inter.beta = 1.0 / (cl->nic_gbs * 1e9);
    return p;
}

static const size_t sel_sizes[] = {8, 512, 4096, 32768, 262144, 2 << 20, 16 << 20};

/* At 4096 ranks a schedule of P^2 messages takes the model half a minute
 * or more (ring, pairwise, scatter-allgather, reduce-scatter-gather), and
 * the picks for allgather, reduce_scatter, reduce (rsg from 1 MiB) and
 * alltoall are such schedules: they are checked to 1024 ranks here, and at
 * 4096 by bench/model_rules.py (docs/SCALING.md). Allreduce and bcast are
 * checked at 4096: their picks are trees and recursive doubling, and a
 * ring or scatter-allgather runs only where its bound does not rule it
 * out. */
static int checked_at(int coll, int P)
{
    if (P <= 1024)
        return 1;
    return coll == XC_COLL_ALLREDUCE || coll == XC_COLL_BCAST || coll == XC_COLL_BARRIER ||
           coll == XC_COLL_GATHER || coll == XC_COLL_SCATTER;
}

static void run_select(int quick)
{
    static const int Ps[] = {64, 256, 1024, 4096};
    size_t c, i, k, n, j;
    xc_model_entry_t e[16];
    for (c = 0; c < sizeof(clusters) / sizeof(clusters[0]); c++) {
        const cluster_t *cl = &clusters[c];
        const xc_model_params_t p = cluster_params(cl);
        for (i = 0; i < sizeof(Ps) / sizeof(Ps[0]); i++) {
            const int P = Ps[i];
            struct xc_topo *topo = NULL;
            struct timespec t0, t1;
            int coll;
            if (quick && P > 256)
                break;
            if (xc_topo_from_ranks_per_node(P, P < cl->rpn ? P : cl->rpn, &topo) != XCOLL_OK) {
                fprintf(stderr, "test_model: out of memory\n");
                exit(2);
            }
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (coll = 0; coll <= XC_COLL_BARRIER; coll++) {
                if (!checked_at(coll, P))
                    continue;
                for (k = 0; k < sizeof(sel_sizes) / sizeof(sel_sizes[0]); k++) {
                    xc_coll_args_t a;
                    const xc_model_entry_t *best = NULL, *pe = NULL;
                    xcoll_status_t rc;
                    if (coll == XC_COLL_BARRIER && k > 0)
                        break;
                    memset(&a, 0, sizeof(a));
                    a.coll = (xc_coll_t)coll;
                    a.size = P;
                    a.dtype = XCOLL_FLOAT32;
                    a.count = coll == XC_COLL_BARRIER ? 0 : sel_sizes[k] / 4;
                    a.op = XCOLL_SUM;
                    a.topo = topo;
                    rc = xc_model_compare(&a, &p, NULL, 8u * 1000 * 1000, e, 16, &n, &pe, &best);
                    if (rc != XCOLL_OK) {
                        check(0, "select %s P=%d %s %zu B: %s", cl->name, P,
                              xc_coll_name(a.coll), sel_sizes[k], xcoll_strerror(rc));
                        continue;
                    }
                    /* best is what xc_model_compare says: none ran faster */
                    for (j = 0; best != NULL && j < n; j++)
                        if (e[j].status == XC_MODEL_RAN && e[j].time < best->time)
                            best = NULL;
                    check(pe != NULL && best != NULL && pe->status == XC_MODEL_RAN &&
                              pe->time <= 1.3 * best->time,
                          "select %s P=%d %s %zu B: picks %s %.1f us, best %s %.1f us (%.2fx)",
                          cl->name, P, xc_coll_name(a.coll), sel_sizes[k],
                          pe ? pe->algo->name : "?", pe ? pe->time * 1e6 : 0,
                          best ? best->algo->name : "?", best ? best->time * 1e6 : 0,
                          pe && best ? pe->time / best->time : 0);
                }
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            printf("select: %s, %d ranks: %.1f s\n", cl->name, P,
                   (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
            fflush(stdout);
            xc_topo_free(topo);
        }
    }
}

int main(int argc, char **argv)
{
    int quick = 0, i;
    const char *only = NULL;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            check_verbose = 1;
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
        else if (!strcmp(argv[i], "formulas") || !strcmp(argv[i], "sharing") ||
                 !strcmp(argv[i], "machine") || !strcmp(argv[i], "bound") ||
                 !strcmp(argv[i], "select"))
            only = argv[i];
        else {
            fprintf(stderr, "usage: test_model [-v] [-q] [formulas|sharing|machine|bound|select]\n");
            return 2;
        }
    }
    xc_log_init();
    if (only == NULL || !strcmp(only, "formulas"))
        run_formulas();
    if (only == NULL || !strcmp(only, "sharing")) {
        run_sharing();
        run_bad_params();
    }
    if (only == NULL || !strcmp(only, "machine"))
        run_machine();
    if (only == NULL || !strcmp(only, "bound"))
        run_bound();
    if (only == NULL || !strcmp(only, "select"))
        run_select(quick);
    printf("test_model: %lu passed, %lu failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
