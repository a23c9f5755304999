#!/bin/sh
# bench/shm_sweep.sh - xcoll with and without its shared-memory transport,
# each next to Open MPI in the same job.
#
# Usage: bench/shm_sweep.sh [-r RUNS] [-n "NPS"] [-e MAX] [-i ITERS] [-o DIR] [--reuse]
#                           (from the top of the tree)
#
# For each run and rank count, two jobs one after the other: XCOLL_SHM=0
# (UCX carries everything) and XCOLL_SHM=1, each `xcoll-perf --vs-mpi -a 3`
# over 8 B..MAX (x8; default 16 MiB) for the eight collectives and barrier
# (its row: size 0), out of place, ITERS timed calls per size (default
# 100; fewer for big sizes, --budget 512M). Separate
# jobs cannot be compared on this shared machine (its speed wanders 2x
# within minutes), so the number compared is each job's own ratio, Open
# MPI's time over xcoll's (slowest rank), and the table shows the median
# over the runs: "UCX -> shm" per size. Raw CSV: DIR/shm<0|1>-np<N>-run<K>.csv
# (default bench/results/shm). --reuse prints the table from DIR again.
set -u
runs=3
nps="2 4 8"
max=16M
iters=100
dir=bench/results/shm
reuse=0
while [ $# -gt 0 ]; do
    case $1 in
    -r) runs=$2; shift ;;
    -n) nps=$2; shift ;;
    -e) max=$2; shift ;;
    -i) iters=$2; shift ;;
    -o) dir=$2; shift ;;
    --reuse) reuse=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "shm_sweep.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
here=$(cd "$(dirname "$0")" && pwd)
perf=build/bin/xcoll-perf
[ "$reuse" = 1 ] || [ -x "$perf" ] || { echo "shm_sweep.sh: build first ($perf)" >&2; exit 2; }
mkdir -p "$dir" || exit 1

if [ "$reuse" = 0 ]; then
    r=1
    while [ "$r" -le "$runs" ]; do
        for np in $nps; do
            for shm in 0 1; do
                # shellcheck disable=SC2086
                XCOLL_SHM=$shm timeout 600 mpirun --allow-run-as-root --oversubscribe -np "$np" \
                    "$perf" -C allreduce,bcast,allgather,reduce_scatter,alltoall,reduce,gather,scatter,barrier \
                    -b 8 -e "$max" -f 8 -n "$iters" --budget 512M --no-inplace --vs-mpi -a 3 --csv \
                    > "$dir/shm$shm-np$np-run$r.csv" 2> /dev/null ||
                    echo "shm_sweep.sh: XCOLL_SHM=$shm -np $np run $r failed" >&2
            done
        done
        r=$((r + 1))
    done
fi

# coll size ratio per line, from every CSV of one setting and rank count
ratios() {
    for f in "$dir"/shm"$1"-np"$2"-run*.csv; do
        [ -f "$f" ] && awk -F, 'NR > 1 && $23 != "" { print $1, $3, $23 }' "$f"
    done
}
for np in $nps; do
    echo "### $np ranks: MPI time / xcoll time, median over runs (UCX only -> with shm)"
    echo
    { ratios 0 "$np" | sed 's/^/0 /'; ratios 1 "$np" | sed 's/^/1 /'; } | sort -k2,2 -k3,3n |
        awk -f "$here/stats.awk" -f "$here/shm_table.awk"
    echo
done
