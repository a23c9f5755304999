#!/usr/bin/env python3
"""Calibrates the cost model (lib/coll/model.h) and checks it against
measurements: the "Calibration" section of docs/SCALING.md.

1. Fit, on this machine (xcoll-perf, 2 ranks): alpha and beta within a node
   from a linear bcast (one message), gamma from a linear reduce (one
   message, reduced on arrival) minus that message.
2. Measure every algorithm of allreduce, bcast, reduce, allgather,
   reduce_scatter and alltoall at 2 and 4 ranks on one node, 64 KiB to
   16 MiB (RUNS runs, the median of each point; the slowest rank's mean).
3. Predict each point with `xcoll-info --predict` and the fitted numbers;
   across nodes, predict the points of bench/results/cluster/ (2 nodes x 2
   ranks, unshaped and at 1 Gbit/s; 4 x 2 unshaped) with the link fitted
   from a 2-node linear bcast (2 x 1 ranks, scripts/cluster.sh).
4. Print a markdown section: the fitted numbers, the table of predicted vs
   measured, and how many points are within +-25%.

Usage: bench/calibrate_model.py [--runs R] [--report | --parts intra,inter] [--out FILE.md]
  --report: measure nothing, use the CSVs already in bench/results/model/;
  --parts: measure only these (intra: steps 1-2 on this node; inter: the
  2-node fit), then report.
Needs mpirun (and root for the 2-node fit). About 15 minutes at 3 runs.
"""
import argparse
import csv
import glob
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


def perf(np_, out, *args):
    cmd = MPIRUN + ["-np", str(np_), PERF, "-n", "10", "-w", "2", "-a", "3", "--no-inplace",
                    "--csv", "-d", "float32", "-o", "sum"] + list(args)
    with open(out, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True, timeout=900)
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


def measure_intra(runs):
    os.makedirs(RES, exist_ok=True)
    for run in range(1, runs + 1):
        print("calibrate_model: run %d: the fit" % run, file=sys.stderr)
        perf(2, "%s/fit-bcast-run%d.csv" % (RES, run), "-C", "bcast", "--algo", "linear",
             "-b", "8", "-e", "16M", "-f", "4")
        perf(2, "%s/fit-reduce-run%d.csv" % (RES, run), "-C", "reduce", "--algo", "linear",
             "-b", "8", "-e", "16M", "-f", "4")
        for np_ in (2, 4):
            for coll, algos in COLLS.items():
                for a in algos:
                    print("calibrate_model: run %d: %s %s at %d ranks" % (run, coll, a, np_),
                          file=sys.stderr)
                    perf(np_, "%s/%s-np%d-%s-run%d.csv" % (RES, coll, np_, a, run), "-C", coll,
                         "--algo", a, "-b", "64K", "-e", "16M", "-f", "4")


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
                "linear -b 8 -e 16M -f 4 -n 10 -w 2 -a 3 --no-inplace --csv > %s" % (PERF, out)]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                print("calibrate_model: the 2-node fit (%s) failed: %s"
                      % (rate, r.stderr.strip()[-300:]), file=sys.stderr)


def fit_link(t):
    """Small-message time (us) and GB/s from {size: us} of one message: the
    slope over the sizes from 1 MiB, the median time of 32 B to 2 KiB (the
    first size, 8 B, also pays the job's first-call costs)."""
    big = sorted(s for s in t if s >= 1 << 20)
    small = [t[s] for s in t if 32 <= s <= 2048]
    if len(big) < 2 or not small:
        return None
    gbs = (big[-1] - big[0]) / ((t[big[-1]] - t[big[0]]) * 1e3)
    return statistics.median(small), gbs


BLOCKS = ("allgather", "reduce_scatter", "alltoall", "gather", "scatter")
CORES = os.cpu_count() or 1


def predict(nodes, rpn, coll, intra, inter, reduce_gbs, overhead, sizes):
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
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {(a, b * per): time for b, cells in model_rules.parse(out).items()
            for a, (time, ran) in cells.items() if ran}


def report(out_path):
    bc = medians("%s/fit-bcast-run*.csv" % RES)
    rd = medians("%s/fit-reduce-run*.csv" % RES)
    link = fit_link(bc)
    if link is None or not rd:
        sys.exit("calibrate_model: no fit measurements in %s (run without --report)" % RES)
    lat, gbs = link
    big = max(s for s in rd if s in bc)
    reduce_gbs = big / ((rd[big] - bc[big]) * 1e3) if rd[big] > bc[big] else 100.0
    # the small-message time is two overheads and a latency: split as the
    # model's defaults do (overhead a quarter of it)
    overhead = lat / 4
    intra = "%.4g,%.3g" % (gbs, lat / 2)
    lines = ["## Calibration", "",
             "Fitted by `bench/calibrate_model.py` (medians of %d runs, xcoll-perf `-a 3`):"
             % len(glob.glob("%s/fit-bcast-run*.csv" % RES)), "",
             "| what | how | value |", "|---|---|---|",
             "| within a node: alpha, overhead | linear bcast, 2 ranks, 32 B-2 KiB: %.2f us = 2 overheads + alpha | alpha %.2f us, overhead %.2f us |"
             % (lat, lat / 2, overhead),
             "| within a node: beta | linear bcast, 2 ranks, slope from 1 MiB | %.2f GB/s |" % gbs,
             "| gamma | linear reduce minus linear bcast, 2 ranks, %s | %.2f GB/s |"
             % (size_text(big), reduce_gbs)]
    inter = {}
    for rate in ("none", "1gbit"):
        t = medians("%s/fit-inter-%s-run*.csv" % (RES, rate))
        f = fit_link(t)
        if f:
            inter[rate] = "%.4g,%.3g" % (f[1], max(f[0] - 2 * overhead, 0.1))
            lines.append("| between nodes (%s): alpha, beta | linear bcast, 2 nodes x 1 rank | %.1f us, %.3f GB/s |"
                         % ("veth, unshaped" if rate == "none" else "1 Gbit/s tbf", f[0] - 2 * overhead, f[1]))
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
        configs += [("2 x 2 nodes", 2, 2, inter["none"], "%s/{coll}-n2x2-none-{algo}-run*.csv" % CLUSTER_RES),
                    ("4 x 2 nodes", 4, 2, inter["none"], "%s/{coll}-n4x2-none-{algo}-run*.csv" % CLUSTER_RES)]
    if "1gbit" in inter:
        configs += [("2 x 2, 1 Gbit/s", 2, 2, inter["1gbit"], "%s/{coll}-n2x2-1gbit-{algo}-run*.csv" % CLUSTER_RES)]
    errors = []
    for where, nodes, rpn, inter_link, pattern in configs:
        for coll, algos in COLLS.items():
            measured = {a: medians(pattern.format(coll=coll, algo=a)) for a in algos + ["hier"]}
            if not any(measured.values()):
                continue
            pred = predict(nodes, rpn, coll, intra, inter_link, reduce_gbs, overhead, SIZES)
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
                    errors.append(abs(err))
                    cells.append("%.0f / %.0f (%+.0f%%)" % (pred[(a, s)], m[s], err * 100))
                lines.append("| %s | %s | %s | %s |" % (where, coll, a, " | ".join(cells)))
    lines += ["", "Within +-25%%: %d of %d points (%.0f%%; the goal is 80%%); median error %.0f%%."
              % (within, total, 100.0 * within / max(total, 1),
                 100 * statistics.median(errors) if errors else 0)]
    text = "\n".join(lines) + "\n"
    if out_path:
        with open(out_path, "w") as f:
            f.write(text)
    print(text)
    print("calibrate_model: --intra %s --reduce %.4g --overhead %.3g; across nodes %s"
          % (intra, reduce_gbs, overhead, inter), file=sys.stderr)


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
    report(args.out)


if __name__ == "__main__":
    main()
