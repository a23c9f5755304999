#!/bin/sh
# bench/cluster_sweep.sh - the sweep behind docs/PERFORMANCE.md, "Across nodes".
#
# On namespace clusters (scripts/cluster.sh) of N nodes x 2 ranks, each
# configuration N:LINK (default 2 and 4 nodes unshaped and at 10 Gbit/s, 2
# nodes at 1 Gbit/s; links delayed 25 us too where the kernel has netem),
# it runs xcoll-perf over 16 B .. 64 MiB for allreduce, bcast, allgather,
# alltoall and reduce_scatter: xcoll's default selection against Open MPI
# in the same job (--vs-mpi, alternating iterations, the slowest rank's
# time) RUNS times (default 3), and in the first A of those runs (default
# 1) every algorithm of the collective forced in turn (--algo). It
# replaces the "Across nodes" section of docs/PERFORMANCE.md with the
# medians and the goals of issue 14 (met or missed); raw CSV goes to
# bench/results/cluster/.
#
#   bench/cluster_sweep.sh [--quick] [--runs R] [--algo-runs A] [--configs "2:none 4:10gbit ..."]
#                          [--colls "allreduce ..."] [--out FILE.md] [--report]
#
# --report runs nothing: it writes the section again from the CSV files
# already in bench/results/cluster/ (say, runs of two sweeps put together).
#
# Needs root (the namespaces). XCOLL_PERF: the xcoll-perf binary (default
# build/bin/xcoll-perf). --quick stops at 1 MiB, one run, to try it out.
# A full run takes about 40 minutes on the 2-core development machine.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
self=$here/cluster_sweep.sh

# --- inside a cluster: one configuration, every run ------------------------------------
if [ "${1:-}" = --inside ]; then
    tag=$2 runs=$3 colls=$4 algo_runs=$5 maxbytes=$6 iters=$7 budget=$8 results=$9
    np=$XCOLL_CLUSTER_RANKS
    perf() { # CSV-FILE ARGS...: one xcoll-perf job over the cluster; a failure costs its row
        csv=$1
        shift
        # mpi_yield_when_idle: Open MPI's busy polling otherwise starves the
        # kernel's TCP processing on the shared cores (4 ms a small call)
        timeout 900 "$XCOLL_CLUSTER_MPIRUN" -np "$np" --mca mpi_yield_when_idle 1 \
            -x XCOLL_TIMEOUT "$XCOLL_PERF" \
            -b 16 -e "$maxbytes" -f 4 -n "$iters" -w 3 --budget "$budget" -d float32 -o sum \
            -a 3 --no-inplace --csv "$@" > "$csv" 2> "$csv.err" || {
            echo "cluster_sweep.sh: $(basename "$csv" .csv) failed: $(grep -v '^ *$' "$csv.err" | tail -n 1)" >&2
            echo "$(basename "$csv" .csv)" >> "$results/failed"
        }
    }
    run=1
    while [ "$run" -le "$runs" ]; do
        for coll in $colls; do
            echo "cluster_sweep.sh: $tag, run $run: $coll" >&2
            perf "$results/$coll-$tag-default-run$run.csv" -C "$coll" --vs-mpi
            [ "$run" -le "$algo_runs" ] || continue
            for a in $("$XCOLL_INFO" | sed -n "s/^  $coll  *//p" | head -n 1); do
                perf "$results/$coll-$tag-$a-run$run.csv" -C "$coll" --algo "$a"
            done
        done
        run=$((run + 1))
    done
    exit 0
fi

# --- outside: the clusters, then the report ---------------------------------------------
out=$top/docs/PERFORMANCE.md
results=$here/results/cluster
configs="2:none 4:none 2:10gbit 4:10gbit 2:1gbit"
colls="allreduce bcast allgather alltoall reduce_scatter"
runs=3
algo_runs=1
maxbytes=64M
iters=40
budget=256M
quick=0
report=0
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=1; maxbytes=1M; iters=10; budget=16M; runs=1; configs="2:none" ;;
    --runs) runs=$2; shift ;;
    --configs) configs=$2; shift ;;
    --colls) colls=$2; shift ;;
    --algo-runs) algo_runs=$2; shift ;;
    --out) out=$2; shift ;;
    --report) report=1 ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "cluster_sweep.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
XCOLL_PERF=${XCOLL_PERF:-$top/build/bin/xcoll-perf}
XCOLL_INFO=${XCOLL_INFO:-$(dirname "$XCOLL_PERF")/xcoll-info}
for b in "$XCOLL_PERF" "$XCOLL_INFO"; do
    [ -x "$b" ] || { echo "cluster_sweep.sh: $b is not built (set XCOLL_PERF)" >&2; exit 2; }
done
cluster=$top/scripts/cluster.sh
[ "$report" = 1 ] || "$cluster" check || exit $?
# a collective that makes no progress fails (and xcoll-perf aborts) instead of hanging
XCOLL_TIMEOUT=${XCOLL_TIMEOUT:-60}
export XCOLL_PERF XCOLL_INFO XCOLL_TIMEOUT

mkdir -p "$results"
[ "$report" = 1 ] || rm -f "$results"/*.csv "$results"/*.err "$results/failed"
start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
[ "$report" = 1 ] && configs= load_start="(not kept)"
# the 25 us delay needs netem; without it the rate alone
delay_opts="--delay 25us" delay_note=
if ! "$cluster" check --delay 25us > /dev/null 2>&1; then
    delay_opts= delay_note="no delay: the kernel lacks the netem qdisc, links are limited by tbf only"
fi
for cfg in $configs; do
    n=${cfg%%:*} shape=${cfg#*:}
    shape_opts=
    [ "$shape" = none ] || shape_opts="--rate $shape $delay_opts"
    tag=n${n}x2-$shape
    echo "cluster_sweep.sh: $n nodes x 2 ranks, links: $shape ($(($(date +%s) - start)) s so far)" >&2
    # shellcheck disable=SC2086
    "$cluster" exec --timeout 7200 --nodes "$n" --ranks-per-node 2 $shape_opts -- \
        sh "$self" --inside "$tag" "$runs" "$colls" "$algo_runs" "$maxbytes" "$iters" "$budget" \
        "$results" || echo "cluster_sweep.sh: the $tag cluster failed" >&2
done
elapsed="$(($(date +%s) - start)) s"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
if [ "$report" = 1 ]; then
    elapsed="written again from earlier runs' CSV" load_end="(not kept)"
    configs=$(ls "$results"/*.csv | sed -n 's/.*-n\([0-9]*\)x2-\([^-]*\)-default-run1\.csv$/\1:\2/p' | sort -u | tr '\n' ' ')
fi

rev=$(git -C "$top" rev-parse --short HEAD 2> /dev/null || echo unknown)
git -C "$top" diff --quiet HEAD 2> /dev/null || rev="$rev + uncommitted changes"
section=$results/section.md
awk -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v elapsed="$elapsed" -v rev="$rev" \
    -v ompi="$(mpirun --version 2> /dev/null | head -n 1 | sed 's/.* //')" -v runs="$runs" -v quick="$quick" \
    -v configs="$configs" -v colls="$colls" -v iters="$iters" -v algo_runs="$algo_runs" \
    -v budget="$budget" -v load_start="$load_start" -v load_end="$load_end" \
    -v delay_note="$delay_note" -v failed="$(cat "$results/failed" 2> /dev/null | tr '\n' ' ')" \
    -f "$here/stats.awk" -f "$here/cluster_report.awk" $(ls "$results"/*.csv) > "$section"

# Replace the section (from its heading to the next "## " heading) or append it.
tmp=$out.tmp
awk -v section="$section" '
    /^## Across nodes/ { while ((getline l < section) > 0) print l; skip = 1; done = 1; next }
    skip && /^## / { skip = 0 }
    !skip { print }
    END { if (!done) { print ""; while ((getline l < section) > 0) print l } }
' "$out" > "$tmp"
mv "$tmp" "$out"
echo "cluster_sweep.sh: wrote the 'Across nodes' section of $out ($elapsed)" >&2
[ ! -s "$results/failed" ]
