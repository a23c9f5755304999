#!/usr/bin/env python3
"""The modelled rules of lib/coll/tune.c, derived from the cost model.

For each reference cluster of docs/SCALING.md (A: 8 ranks a node, a
25 GB/s 2 us NIC; B: 128 ranks a node, 12.5 GB/s 3 us; within a node both
5 GB/s and 1 us a message, 0.3 us of CPU a message, reductions at 4 GB/s,
copies at 8 GB/s, as in test_model) and each rank count
(64, 256, 1024, 4096), runs `xcoll-info --predict` and, per collective and
message size, keeps the algorithm whose worst ratio to the best over the
rank counts is smallest. Where some size has no algorithm within 1.3x of the
best at every rank count, the rank counts are split (64-255, 256-1023,
1024-inf). Cluster A's rules cover nodes of 1-16 ranks, B's nodes of 17 or
more. The second candidate of a rule is the runner-up (for when the first
declines: hier on one node, direct above 64 ranks).

Usage: bench/model_rules.py [--info PATH] [--keep DIR [--no-run]] [--ranks 64,256,...]
                             [--colls allreduce,...]
  --info: the xcoll-info binary (default build/bin/xcoll-info)
  --ranks: the rank counts (default 64,256,1024,4096)
  --colls: only these collectives' rules (default all)
  --no-run: only the tables in --keep; a missing one is left out (said on
    stderr)
  --keep: write (or, where present, reuse) the --predict tables in DIR
Prints the rules, one entry a line, ready for xc_tune_defaults; a report of
each choice's worst ratio goes to stderr. At 4096 ranks the schedules of
the ring and pairwise algorithms take seconds each: on a 2-core machine
allreduce, bcast and reduce alone took 15 minutes (2026-12-07), so keep
the tables (--keep) and narrow with --colls.
"""
import argparse
import collections
import os
import subprocess
import sys

CLUSTERS = [("A", 8, "25,2", "1-16"), ("B", 128, "12.5,3", "17-inf")]
WITHIN = ["--intra", "5,1", "--overhead", "0.3", "--reduce", "4", "--copy", "8"]
RANKS = [64, 256, 1024, 4096]
SPLITS = [(64, 255), (256, 1023), (1024, 1 << 30)]
SIZES = "8,512,2K,4K,16K,32K,128K,256K,1M,2M,8M,16M,64M"
COLLS = ["allreduce", "bcast", "reduce", "allgather", "reduce_scatter", "alltoall",
         "gather", "scatter", "barrier"]
# the picks are always simulated: cheap ones, so that a large schedule
# runs only where its bound says it might be best
CHEAP = ("allreduce:0-inf:recdbl;allgather:0-inf:recdbl;reduce_scatter:0-inf:rechalving;"
         "bcast:0-inf:binomial;reduce:0-inf:binomial;alltoall:0-inf:bruck;"
         "gather:0-inf:binomial;scatter:0-inf:binomial;barrier:0-inf:dissemination")
LIMIT = 1.3


def size_bytes(s):
    # xcoll-info --predict writes sizes as the tuning grammar does (4k, 16m, 1g)
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1].lower(), 1)
    return int(s.rstrip("kmgKMG")) * mult


def size_text(b):
    for unit, m in (("m", 1 << 20), ("k", 1 << 10)):
        if b and b % m == 0:
            return "%d%s" % (b // m, unit)
    return str(b)


def predict(info, rpn, nic, P, coll, keep, run=True):
    path = os.path.join(keep, "%s-%d-%d.txt" % (coll, rpn, P)) if keep else None
    if path and os.path.exists(path):
        with open(path) as f:
            return f.read()
    if not run:
        print("model_rules: no %s: %s at %d ranks left out" % (path, coll, P), file=sys.stderr)
        return ""
    k = min(rpn, P)
    cmd = [info, "--predict", "--nodes", str(P // k), "--ranks-per-node", str(k),
           "--inter", nic, "--coll", coll, "--sizes", SIZES] + WITHIN
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=dict(os.environ, XCOLL_TUNE=CHEAP)).stdout
    if path:
        with open(path, "w") as f:
            f.write(out)
    return out


def parse(text):
    """{size: {algo: (time, simulated)}}"""
    rows, algos = {}, []
    for line in text.splitlines():
        w = line.split()
        if not w or line.startswith("#") or "(us;" in line:
            continue
        if w[0] == "bytes":
            algos = w[1:-3]
            continue
        cells = {}
        for a, c in zip(algos, w[1:1 + len(algos)]):
            if c != "-":
                cells[a] = (float(c.lstrip(">")), not c.startswith(">"))
        rows[size_bytes(w[0])] = cells
    return rows


def ranked(tables):
    """Algorithms by their worst ratio to the best over tables (one row each)."""
    worst = collections.defaultdict(float)
    names = {a for t in tables for a in t}
    for t in tables:
        best = min(time for time, ran in t.values() if ran)
        for a in names:
            worst[a] = max(worst[a], t[a][0] / best if a in t else float("inf"))
    return sorted(worst.items(), key=lambda x: (x[1], x[0]))


def rules_for(coll, data, per_node, report):
    """data: {P: {size: cells}} of one cluster. Returns entry lines."""
    sizes = sorted({s for rows in data.values() for s in rows})
    for parts in ([(64, 1 << 30)], SPLITS):
        plan, fits = [], True
        for lo, hi in parts:
            row = []
            for s in sizes:
                tables = [rows[s] for P, rows in data.items() if lo <= P <= hi and s in rows]
                if tables:
                    r = ranked(tables)
                    row.append((s, r))
                    fits = fits and r[0][1] <= LIMIT
            plan.append(((lo, hi), row))
        if fits:
            break
    lines = []
    for (lo, hi), row in plan:
        ranks = "@%d-inf" % lo if hi >= 1 << 30 else "@%d-%d" % (lo, hi)
        pieces = []
        for s, r in row:
            first = r[0][0]
            if pieces and pieces[-1][2].split("|")[0] == first:
                continue
            second = r[1][0] if len(r) > 1 and r[1][1] != float("inf") else None
            pieces.append([0 if not pieces else s, None, first + ("|" + second if second else "")])
            report.append("%s%s/%s from %s: %s (worst %.2fx of the best)"
                          % (coll, ranks, per_node, size_text(s), first, r[0][1]))
        for i, p in enumerate(pieces):
            p[1] = pieces[i + 1][0] if i + 1 < len(pieces) else None
        if coll == "barrier":
            pieces = pieces[:1]
            pieces[0][1] = None
        body = ",".join("%s-%s:%s" % (size_text(a), "inf" if b is None else size_text(b), c)
                        for a, b, c in pieces)
        lines.append("%s%s/%s:%s" % (coll, ranks, per_node, body))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--info", default="build/bin/xcoll-info")
    ap.add_argument("--keep")
    ap.add_argument("--ranks", default=",".join(str(r) for r in RANKS))
    ap.add_argument("--no-run", action="store_true")
    ap.add_argument("--colls", default=",".join(COLLS))
    args = ap.parse_args()
    colls = args.colls.split(",")
    for c in colls:
        if c not in COLLS:
            ap.error("unknown collective %s (one of %s)" % (c, ",".join(COLLS)))
    ranks = [int(r) for r in args.ranks.split(",")]
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    report, out = [], []
    for coll in colls:
        for name, rpn, nic, per_node in CLUSTERS:
            data = {}
            for P in ranks:
                if coll == "alltoall" and P > 1024:
                    continue  # P^2 blocks: the selection check stops at 1024 too
                rows = parse(predict(args.info, rpn, nic, P, coll, args.keep, not args.no_run))
                if rows:
                    data[P] = rows
            out += rules_for(coll, data, per_node, report)
    print("\n".join(out))
    print("\n".join(report), file=sys.stderr)


if __name__ == "__main__":
    main()
