#!/bin/bash
# bench/drain_cost.sh - what the drainer costs (docs/PERFORMANCE.md, "The
# drainer's cost"): xcoll-perf on a namespace cluster, the drainer on
# (XCOLL_DRAIN=1) and off alternating in one cluster, RUNS times each.
# Prints "d1|d0 rRUN SIZE OP TIME_US" lines, then the medians.
#   bench/drain_cost.sh [--nodes N] [--ranks-per-node K] [--runs R] [-- XCOLL-PERF ARGS]
# Default: 2 nodes x 2 ranks, 5 runs, -C allreduce,bcast -b 16 -e 64K -f 16 -n 1000.
# Needs root (scripts/cluster.sh) and a built tree (build/).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
nodes=2 rpn=2 runs=5
perf_args="-C allreduce,bcast -b 16 -e 64K -f 16 -n 1000"
if [ "${1:-}" = --inside ]; then
    shift
    runs=$1
    shift
    for i in $(seq 1 "$runs"); do
        # which goes first alternates: on this machine the first of two
        # jobs in a row is often the faster
        order="1 0"
        [ $((i % 2)) = 0 ] && order="0 1"
        for d in $order; do
            # Open MPI yields while waiting: its busy polling starves the
            # kernel's TCP on shared cores (PERFORMANCE.md "Across nodes")
            XCOLL_DRAIN=$d $XCOLL_CLUSTER_MPIRUN --mca mpi_yield_when_idle 1 -x XCOLL_DRAIN \
                "$top/build/bin/xcoll-perf" -w 20 -a 3 --no-inplace "$@" 2> /dev/null |
                awk -v d=$d -v i=$i '/^ +[0-9]/ {print "d" d, "r" i, $1, $4, $6}'
        done
    done
    exit 0
fi
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --ranks-per-node) rpn=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --) shift; perf_args="$*"; break ;;
    *) echo "usage: bench/drain_cost.sh [--nodes N] [--ranks-per-node K] [--runs R] [-- XCOLL-PERF ARGS]" >&2; exit 2 ;;
    esac
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2086
bash "$top/scripts/cluster.sh" exec --nodes "$nodes" --ranks-per-node "$rpn" -- \
    bash "$top/bench/drain_cost.sh" --inside "$runs" $perf_args | tee "$out"
python3 - "$out" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 5 and p[0] in ("d0", "d1"):
        d[(p[3], int(p[2]), p[0])].append(float(p[4]))
print("| op | size | drainer on (us) | off (us) | on/off |")
print("|---|---:|---:|---:|---:|")
for op, size in sorted(set((k[0], k[1]) for k in d)):
    on, off = statistics.median(d[(op, size, "d1")]), statistics.median(d[(op, size, "d0")])
    print("| %s | %d | %.1f | %.1f | %.2f |" % ("bcast" if op == "none" else "allreduce(" + op + ")", size, on, off, on / off))
PY
