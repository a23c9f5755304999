#!/usr/bin/env python3
"""Calibrates the cost model (lib/coll/model.h) and checks it against
measurements: the "Calibration" section of docs/SCALING.md.

1. Fit, on this machine (xcoll-perf, 2 ranks): alpha and beta within a node
   from a linear bcast (one message, read by the receiver alone:
   XCOLL_SHM_SPLIT_MIN=0, as the model splits copies itself), gamma from a linear reduce (one
   message, reduced on arrival) minus that message, the cache from the
   bcast's sizes beyond it, a shared core's turn from small allreduces of
   4 ranks, and what bytes written in the call cost to read (--forward)
   from a 2-rank ring allreduce.
2. Measure every algorithm of allreduce, bcast, reduce, allgather,
   reduce_scatter and alltoall at 2 and 4 ranks on one node, 64 KiB to
   16 MiB (RUNS runs, the median of each point; each run's point is the
   median of 20 calls' slowest rank, TIMING; each job starts at 16 KiB, as
   the first size also pays the job's first-call costs).
3. Predict each point with `xcoll-info --predict` and the fitted numbers;
   across nodes, predict the points of every algorithm on 2 nodes x 2
   ranks, unshaped and at 1 Gbit/s, and 4 x 2 unshaped (allreduce) with
   the link fitted from a 2-node linear bcast (2 x 1 ranks,
   scripts/cluster.sh): this script's own runs of them (--parts cluster,
   in bench/results/model/) where there are any, else
   bench/cluster_sweep.sh's (bench/results/cluster/, one run each).
4. Print a markdown section: the fitted numbers, the table of predicted vs
   measured, how many points are within +-25%, and per place how many of
   the runs are within +-25% of their own point's median.

Usage: bench/calibrate_model.py [--runs R] [--report | --parts intra,inter,cluster] [--out FILE.md]
  --report: measure nothing, use the CSVs already in bench/results/model/;
  --parts: measure only these (intra: steps 1-2 on this node; inter: the
  2-node fit; cluster: the points across nodes, not measured by default),
  then report.
Needs mpirun (and root for the clusters). At 3 runs all three parts take
about 20 minutes (2026-12-07), most of it the clusters.
"""
import argparse
import csv
import glob
import math
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_rules  # noqa: E402  (the --predict table parser)

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RES = os.path.join(TOP, "bench", "results", "model")
CLUSTER_RES = os.path.join(TOP, "bench", "results", "cluster")
PERF = os.environ.get("XCOLL_PERF", os.path.join(TOP, "build", "bin", "xcoll-perf"))
INFO = os.environ.get("XCOLL_INFO", os.path.join(TOP, "build", "bin", "xcoll-info"))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
# Each point: 20 timed calls, each call's slowest rank, the median of
# those (-a 4). The mean over ranks' means (-a 3, until 2026-12-07) put a
# scheduler's 3-4 ms slice that lands in one call of ten into the point:
# with 4 ranks on 2 cores the three runs of a point then spread 2x.
TIMING = "-n 20 -w 2 -a 4"
COLLS = {
    "allreduce": ["recdbl", "rabenseifner", "ring", "reduce_bcast", "dbtree", "direct"],
    "bcast": ["binomial", "chain", "scatter_allgather", "dbtree", "linear"],
    "reduce": ["binomial", "rsg", "linear"],
    "allgather": ["recdbl", "ring", "bruck", "direct"],
    "reduce_scatter": ["rechalving", "ring", "direct"],
    "alltoall": ["pairwise", "bruck"],
}
SIZES = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]
FROM = 64 << 10


def size_text(b):
    for unit, m in (("M", 1 << 20), ("K", 1 << 10)):
        if b % m == 0 and b >= m:
            return "%d%s" % (b // m, unit)
    return str(b)


def perf(np_, out, *args, env=None):
    cmd = MPIRUN + ["-np", str(np_), PERF] + TIMING.split() + [
        "--no-inplace", "--csv", "-d", "float32", "-o", "sum"] + list(args)
    with open(out, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True, timeout=900,
                           env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        print("calibrate_model: %s failed: %s" % (os.path.basename(out),
                                                  r.stderr.strip()[-300:]), file=sys.stderr)


def times(path):
    """{size: time_us} of an xcoll-perf CSV (out of place)."""
    out = {}
    try:
        with open(path) as f:
            for row in csv.DictReader(f):
                if row.get("oop_time_us"):
                    out[int(row["size"])] = float(row["oop_time_us"])
    except FileNotFoundError:
        pass
    return out


def medians(pattern):
    runs = [times(p) for p in sorted(glob.glob(pattern)) if not p.endswith(".err")]
    sizes = set().union(*runs) if runs else set()
    return {s: statistics.median(r[s] for r in runs if s in r) for s in sizes}


def spread(pattern, sizes):
    """How the runs of each point agree: (runs within +-25% of their
    point's median, runs), the median run itself left out."""
    runs = [times(p) for p in sorted(glob.glob(pattern)) if not p.endswith(".err")]
    within = total = 0
    for s in sizes:
        v = sorted(r[s] for r in runs if s in r)
        if len(v) < 2:
            continue
        m = statistics.median(v)
        others = list(v)
        if len(v) % 2:
            others.remove(v[len(v) // 2])
        total += len(others)
        within += sum(abs(x / m - 1) <= 0.25 for x in others)
    return within, total


def measure_intra(runs):
    os.makedirs(RES, exist_ok=True)
    for run in range(1, runs + 1):
        print("calibrate_model: run %d: the fit" % run, file=sys.stderr)
        # beta is one core's copy: the model halves a split copy itself
        perf(2, "%s/fit-bcast-run%d.csv" % (RES, run), "-C", "bcast", "--algo", "linear",
             "-b", "8", "-e", "32M", "-f", "2", env={"XCOLL_SHM_SPLIT_MIN": "0"})
        perf(2, "%s/fit-reduce-run%d.csv" % (RES, run), "-C", "reduce", "--algo", "linear",
             "-b", "8", "-e", "32M", "-f", "2")
        perf(4, "%s/fit-turn-run%d.csv" % (RES, run), "-C", "allreduce", "--algo", "recdbl",
             "-b", "8", "-e", "2K", "-f", "4", "-n", "1000", "-w", "100")
        perf(2, "%s/fit-forward-run%d.csv" % (RES, run), "-C", "allreduce", "--algo", "ring",
             "-b", "16K", "-e", "1M", "-f", "2")
        for np_ in (2, 4):
            for coll, algos in COLLS.items():
                for a in algos:
                    print("calibrate_model: run %d: %s %s at %d ranks" % (run, coll, a, np_),
                          file=sys.stderr)
                    perf(np_, "%s/%s-np%d-%s-run%d.csv" % (RES, coll, np_, a, run), "-C", coll,
                         "--algo", a, "-b", "16K", "-e", "16M", "-f", "4")


def measure_inter(runs):
    """One message between two namespace nodes, unshaped and at 1 Gbit/s."""
    os.makedirs(RES, exist_ok=True)
    for rate in ("none", "1gbit"):
        for run in range(1, runs + 1):
            out = "%s/fit-inter-%s-run%d.csv" % (RES, rate, run)
            cmd = ["bash", os.path.join(TOP, "scripts", "cluster.sh"), "exec", "--nodes", "2",
                   "--ranks-per-node", "1"] + ([] if rate == "none" else ["--rate", rate]) + [
                "--", "sh", "-c",
                "$XCOLL_CLUSTER_MPIRUN -np 2 --mca mpi_yield_when_idle 1 %s -C bcast --algo "
                "linear -b 8 -e 16M -f 4 %s --no-inplace --csv > %s" % (PERF, TIMING, out)]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                print("calibrate_model: the 2-node fit (%s) failed: %s"
                      % (rate, r.stderr.strip()[-300:]), file=sys.stderr)


# Across nodes: what each namespace cluster measures (nodes, rate, the
# collectives), every algorithm of them and "hier" where it has one.
CLUSTERS = [(2, "none", ["allreduce", "bcast", "allgather", "reduce_scatter", "alltoall"]),
            (4, "none", ["allreduce"]),
            (2, "1gbit", ["allreduce", "bcast", "allgather", "reduce_scatter", "alltoall"])]
HIER = ("allreduce", "bcast", "alltoall")


def measure_cluster(runs):
    """Every algorithm on the clusters of CLUSTERS, 2 ranks a node, one
    cluster per configuration for all its runs (scripts/cluster.sh)."""
    os.makedirs(RES, exist_ok=True)
    for nodes, rate, colls in CLUSTERS:
        lines = []
        for run in range(1, runs + 1):
            for coll in colls:
                for a in COLLS[coll] + (["hier"] if coll in HIER else []):
                    out = "%s/%s-n%dx2-%s-%s-run%d.csv" % (RES, coll, nodes, rate, a, run)
                    lines.append(
                        "timeout 600 $XCOLL_CLUSTER_MPIRUN -np %d --mca mpi_yield_when_idle 1 %s "
                        "-C %s --algo %s -b 16K -e 16M -f 4 %s --no-inplace --csv "
                        "-d float32 -o sum > %s 2> %s.err || echo 'calibrate_model: %s failed' >&2"
                        % (2 * nodes, PERF, coll, a, TIMING, out, out, os.path.basename(out)))
        print("calibrate_model: %d nodes x 2, %s: %d jobs" % (nodes, rate, len(lines)),
              file=sys.stderr)
        cmd = ["bash", os.path.join(TOP, "scripts", "cluster.sh"), "exec", "--nodes", str(nodes),
               "--ranks-per-node", "2", "--timeout", "5400"] + \
            ([] if rate == "none" else ["--rate", rate]) + ["--", "sh", "-c", "\n".join(lines)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=5600)
        if r.returncode != 0 or "failed" in r.stderr:
            print("calibrate_model: the %d-node runs (%s): %s" % (nodes, rate, r.stderr.strip()[-500:]),
                  file=sys.stderr)


def fit_link(t, upto=None):
    """Small-message time (us) and GB/s from {size: us} of one message: the
    slope over the sizes from 1 MiB (to `upto`), the median time of 32 B to
    2 KiB (the first size, 8 B, also pays the job's first-call costs)."""
    big = sorted(s for s in t if s >= 1 << 20 and (upto is None or s <= upto))
    small = [t[s] for s in t if 32 <= s <= 2048]
    if len(big) < 2 or not small:
        return None
    gbs = (big[-1] - big[0]) / ((t[big[-1]] - t[big[0]]) * 1e3)
    return statistics.median(small), gbs


BLOCKS = ("allgather", "reduce_scatter", "alltoall", "gather", "scatter")
CORES = os.cpu_count() or 1


def predict(nodes, rpn, coll, intra, inter, reduce_gbs, overhead, sizes, extra=()):
    """{(algo, size): us}; sizes as xcoll-perf counts them (the whole
    buffer for the block collectives, whose --predict size is a block).
    Every rank of these runs shares this machine's cores (--cores)."""
    P = nodes * rpn
    per = P if coll in BLOCKS else 1
    cmd = [INFO, "--predict", "--nodes", str(nodes), "--ranks-per-node", str(rpn), "--coll", coll,
           "--sizes", ",".join(str(s // per) for s in sizes), "--intra", intra, "--reduce",
           "%.4g" % reduce_gbs, "--overhead", "%.3g" % overhead, "--cores", str(CORES)]
    if inter:
        cmd += ["--inter", inter]
    cmd += list(extra)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {(a, b * per): time for b, cells in model_rules.parse(out).items()
            for a, (time, ran) in cells.items() if ran}


def log_error(pred, measured):
    """Sum of squared log ratios over the sizes both have (inf: none)."""
    both = [s for s in measured if s in pred]
    if not both:
        return float("inf")
    return sum(math.log(pred[s] / measured[s]) ** 2 for s in both)


def square_error(pred, measured):
    """Sum of squared differences (us^2) over the sizes both have (inf: none)."""
    both = [s for s in measured if s in pred]
    if not both:
        return float("inf")
    return sum((pred[s] - measured[s]) ** 2 for s in both)


def least_squares(candidates, rpn, coll, algo, measured, intra, reduce_gbs, overhead,
                  error=log_error):
    """Of the candidates (each a list of extra --predict options), the one
    whose model curve of algo on one node of rpn ranks is nearest the
    measured {size: us} (least squares of the log ratios, or by `error`)."""
    sizes = sorted(measured)
    best = None
    for extra in candidates:
        pred = predict(1, rpn, coll, intra, None, reduce_gbs, overhead, sizes, extra)
        err = error({s: pred[(algo, s)] for s in sizes if (algo, s) in pred}, measured)
        if best is None or err < best[0]:
            best = (err, extra)
    return best[1]


def fit_memory(bc, intra, overhead):
    """The cache (MiB: what one rank's buffers must fit) and the factor beyond it
    (--memory "MiB,F"), fitted to the 2-rank linear bcast from 1 MiB (read by
    one side, as it was measured: --split 0)."""
    extra = least_squares([["--memory", "%d,%.1f" % (mib, f10 / 10.0), "--split", "0"]
                           for mib in (2, 4, 8, 16, 32, 64) for f10 in range(10, 41)],
                          2, "bcast", "linear", {s: t for s, t in bc.items() if s >= 1 << 20},
                          intra, 100.0, overhead)
    return extra[1]


def fit_turn(small, intra, reduce_gbs, overhead, memory):
    """What a shared core loses turning from one rank to another (us,
    --turn), fitted to small recursive-doubling allreduces of 4 ranks on
    this machine's cores: a message there costs the CPU little and the
    link less, so what is left is the cores changing hands."""
    extra = least_squares([["--memory", memory, "--turn", "%g" % (t / 4.0)] for t in range(0, 41)],
                          4, "allreduce", "recdbl", small, intra, reduce_gbs, overhead)
    return float(extra[3])


def fit_forward(ring, intra, reduce_gbs, overhead, memory):
    """What a byte a rank wrote in the call and sends on within its node
    costs (--forward), fitted to the 2-rank ring allreduce from 64 KiB (its
    second half sends what each rank has just reduced; the rest of that
    schedule is priced by the fits before). Least squares of the times
    themselves, not their ratios: a rate is fitted where the bytes are
    most of the time, and the ratios would let what the model leaves out
    of a small message (a handshake that costs here more than its two
    latencies) raise it."""
    extra = least_squares([["--memory", memory, "--forward", "%.1f" % (f10 / 10.0)]
                           for f10 in range(10, 41)], 2, "allreduce", "ring",
                          {s: t for s, t in ring.items() if s >= 64 << 10}, intra, reduce_gbs,
                          overhead, error=square_error)
    return float(extra[3])


def cluster_pattern(tag):
    """Where a cluster's points are: this script's own runs (--parts
    cluster) where there are any, else bench/cluster_sweep.sh's."""
    where = RES if glob.glob("%s/*-%s-*-run*.csv" % (RES, tag)) else CLUSTER_RES
    return "%s/{coll}-%s-{algo}-run*.csv" % (where, tag)


def report(out_path):
    bc = medians("%s/fit-bcast-run*.csv" % RES)
    rd = medians("%s/fit-reduce-run*.csv" % RES)
    small4 = medians("%s/fit-turn-run*.csv" % RES)
    ring2 = medians("%s/fit-forward-run*.csv" % RES)
    link = fit_link(bc, upto=4 << 20)
    if link is None or not rd or not small4 or not ring2:
        sys.exit("calibrate_model: no fit measurements in %s (run without --report)" % RES)
    lat, gbs = link
    # the small-message time is two overheads and a latency: split as the
    # model's defaults do (overhead a quarter of it)
    overhead = lat / 4
    intra = "%.4g,%.3g" % (gbs, lat / 2)
    memory = fit_memory(bc, intra, overhead)
    cache_mib, dram = int(memory.split(",")[0]), float(memory.split(",")[1])
    # gamma: the reduce's time beyond the bcast's, a line through 0 over
    # the sizes from 1 MiB where its buffers (2 ranks, 2 each) fit the cache
    fits = [s for s in rd if s in bc and s >= 1 << 20 and 4 * s <= cache_mib << 20]
    slope = (sum((rd[s] - bc[s]) * s for s in fits) / sum(s * s for s in fits)) if fits else 0
    reduce_gbs = 1e-3 / slope if slope > 0 else 100.0
    big = max(fits) if fits else 0
    turn = fit_turn(small4, intra, reduce_gbs, overhead, memory)
    forward = fit_forward(ring2, intra, reduce_gbs, overhead, memory)
    extra = ["--memory", memory, "--turn", "%g" % turn, "--forward", "%g" % forward]
    lines = ["## Calibration", "",
             "Fitted by `bench/calibrate_model.py` (medians of %d runs, xcoll-perf `%s`: "
             "each point the median over 20 calls of the call's slowest rank):"
             % (len(glob.glob("%s/fit-bcast-run*.csv" % RES)), TIMING), "",
             "| what | how | value |", "|---|---|---|",
             "| within a node: alpha, overhead | linear bcast, 2 ranks, 32 B-2 KiB: %.2f us = 2 overheads + alpha | alpha %.2f us, overhead %.2f us |"
             % (lat, lat / 2, overhead),
             "| within a node: beta | linear bcast, 2 ranks, read by one side (XCOLL_SHM_SPLIT_MIN=0), slope from 1 to 4 MiB | %.2f GB/s |" % gbs,
             "| beyond the cache (`--memory`) | linear bcast, 2 ranks, from 1 MiB: least squares of the model's curve | %d MiB a rank, then %.1fx |"
             % (cache_mib, dram),
             "| gamma | linear reduce minus linear bcast, 2 ranks, 1 MiB-%s: least squares | %.2f GB/s |"
             % (size_text(big), reduce_gbs),
             "| a shared core's turn (`--turn`) | recursive-doubling allreduce, 4 ranks on %d cores, 8 B-2 KiB: least squares | %g us |"
             % (CORES, turn),
             "| written bytes sent on (`--forward`) | ring allreduce, 2 ranks, 64 KiB-1 MiB: least squares of the times | %gx |"
             % forward]
    inter = {}
    for rate in ("none", "1gbit"):
        t = medians("%s/fit-inter-%s-run*.csv" % (RES, rate))
        f = fit_link(t)
        if f:
            inter[rate] = "%.4g,%.3g" % (f[1], max(f[0] - 2 * overhead, 0.1))
            lines.append("| between nodes (%s): alpha, beta | linear bcast, 2 nodes x 1 rank | %.1f us, %.3f GB/s |"
                         % ("veth, unshaped" if rate == "none" else "1 Gbit/s tbf", f[0] - 2 * overhead, f[1]))
    # the unshaped link's rate is what the kernel's TCP on these cores
    # reaches: the receiving CPU's rate between nodes (--inter-cpu)
    inter_cpu = ["--inter-cpu", inter["none"].split(",")[0]] if "none" in inter else []
    if inter_cpu:
        lines.append("| between nodes: the receiving CPU (`--inter-cpu`) | the unshaped link's rate: TCP runs on the ranks' cores | %s GB/s |"
                     % inter_cpu[1])
    lines += ["", "Predicted (model, with --cores %d: every rank of these runs shares this "
              "machine's cores) against measured (median), in us; error = predicted / measured "
              "- 1; sizes as xcoll-perf gives them (the whole buffer for the block "
              "collectives):" % CORES, "",
              "| where | collective | algorithm | " + " | ".join(size_text(s) for s in SIZES) + " |",
              "|---|---|---|" + "---:|" * len(SIZES)]
    within = total = 0
    configs = [("1 node x 2", 1, 2, None, "%s/{coll}-np2-{algo}-run*.csv" % RES),
               ("1 node x 4", 1, 4, None, "%s/{coll}-np4-{algo}-run*.csv" % RES)]
    if "none" in inter:
        configs += [("2 x 2 nodes", 2, 2, inter["none"], cluster_pattern("n2x2-none")),
                    ("4 x 2 nodes", 4, 2, inter["none"], cluster_pattern("n4x2-none"))]
    if "1gbit" in inter:
        configs += [("2 x 2, 1 Gbit/s", 2, 2, inter["1gbit"], cluster_pattern("n2x2-1gbit"))]
    errors = []
    places = []  # (where, points within, points, runs within, runs)
    for where, nodes, rpn, inter_link, pattern in configs:
        place = [where, 0, 0, 0, 0]
        places.append(place)
        for coll, algos in COLLS.items():
            measured = {a: medians(pattern.format(coll=coll, algo=a)) for a in algos + ["hier"]}
            if not any(measured.values()):
                continue
            pred = predict(nodes, rpn, coll, intra, inter_link, reduce_gbs, overhead, SIZES,
                           extra + (inter_cpu if inter_link else []))
            for a in algos + ["hier"]:
                m = measured[a]
                if not m:
                    continue
                cells = []
                for s in SIZES:
                    if s not in m or (a, s) not in pred:
                        cells.append("")
                        continue
                    err = pred[(a, s)] / m[s] - 1
                    total += 1
                    within += abs(err) <= 0.25
                    place[1] += abs(err) <= 0.25
                    place[2] += 1
                    errors.append(abs(err))
                    cells.append("%.0f / %.0f (%+.0f%%)" % (pred[(a, s)], m[s], err * 100))
                lines.append("| %s | %s | %s | %s |" % (where, coll, a, " | ".join(cells)))
                w, n = spread(pattern.format(coll=coll, algo=a), [s for s in SIZES if s in m])
                place[3] += w
                place[4] += n
    lines += ["", "Within +-25%%: %d of %d points (%.0f%%; the goal is 80%%); median error %.0f%%."
              % (within, total, 100.0 * within / max(total, 1),
                 100 * statistics.median(errors) if errors else 0),
              "", "Per place, next to how well the measurements agree with themselves: of "
              "each point's other runs, how many lie within +-25% of the point's median "
              "(a model cannot be expected to come closer to a median than the runs "
              "that made it):", "",
              "| where | points within +-25% | runs within +-25% of their median |",
              "|---|---:|---:|"]
    for where, pw, pn, rw, rn in places:
        if pn:
            lines.append("| %s | %d of %d (%.0f%%) | %d of %d (%.0f%%) |"
                         % (where, pw, pn, 100.0 * pw / pn, rw, rn, 100.0 * rw / max(rn, 1)))
    text = "\n".join(lines) + "\n"
    if out_path:
        with open(out_path, "w") as f:
            f.write(text)
    print(text)
    print("calibrate_model: --intra %s --reduce %.4g --overhead %.3g %s; across nodes %s %s"
          % (intra, reduce_gbs, overhead, " ".join(extra), inter, " ".join(inter_cpu)),
          file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--parts", default="intra,inter")
    ap.add_argument("--out")
    args = ap.parse_args()
    if not args.report:
        parts = args.parts.split(",")
        if "intra" in parts:
            measure_intra(args.runs)
        if "inter" in parts:
            measure_inter(args.runs)
        if "cluster" in parts:
            measure_cluster(args.runs)
    report(args.out)


if __name__ == "__main__":
    main()
