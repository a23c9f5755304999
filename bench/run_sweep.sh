#!/bin/sh
# bench/run_sweep.sh - the performance sweep behind docs/PERFORMANCE.md.
#
# For 2, 4 and 8 ranks (oversubscribed past the core count) it runs
# xcoll-perf over 8 B .. 64 MiB for allreduce, allgather, reduce_scatter,
# bcast, alltoall and barrier, timing Open MPI's collective in the same job
# (--vs-mpi, alternating iterations, the slowest rank's time), RUNS times
# (default 3); it measures memcpy bandwidth in every run, then writes the
# machine, the tables (medians over the runs) and the targets of issue 11
# (met or missed) into docs/PERFORMANCE.md. Raw CSV and SVG charts (of the
# last run) go to bench/results/.
#
#   bench/run_sweep.sh [--quick] [--runs R] [--np "2 4 8"] [--colls "allreduce ..."]
#                      [--out FILE.md] [--results DIR]
#
# Environment: XCOLL_PERF (the xcoll-perf binary; default: build/bin/xcoll-perf,
# then PATH), MPIRUN (default mpirun), MPIRUN_FLAGS (extra flags).
# --quick stops at 1 MiB with fewer iterations, to try the script out.
# A run takes 5-15 minutes on the 2-core development machine.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out="$top/docs/PERFORMANCE.md"
results="$here/results"
nps="2 4 8"
colls="allreduce allgather reduce_scatter bcast alltoall barrier"
runs=3
maxbytes=64M
iters=200
warmup=20
budget=512M
quick=0

while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=1; maxbytes=1M; iters=20; warmup=2; budget=16M ;;
    --np) nps=$2; shift ;;
    --runs) runs=$2; shift ;;
    --colls) colls=$2; shift ;;
    --out) out=$2; shift ;;
    --results) results=$2; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run_sweep.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

perf=${XCOLL_PERF:-}
if [ -z "$perf" ]; then
    for p in "$top/build/bin/xcoll-perf" "$top/bin/xcoll-perf"; do
        [ -x "$p" ] && { perf=$p; break; }
    done
fi
[ -z "$perf" ] && perf=$(command -v xcoll-perf || true)
if [ -z "$perf" ] || [ ! -x "$perf" ]; then
    echo "run_sweep.sh: no xcoll-perf found: build it, or set XCOLL_PERF=/path/to/xcoll-perf" >&2
    exit 2
fi
mpirun=${MPIRUN:-mpirun}
ncores=$(nproc)
root_flag=""
[ "$(id -u)" = 0 ] && root_flag="--allow-run-as-root"

# A hang must cost one row, not the sweep: xcoll fails a collective that
# makes no progress for XCOLL_TIMEOUT seconds (xcoll-perf then aborts the
# job), and timeout(1) bounds each job in case MPI itself hangs.
XCOLL_TIMEOUT=${XCOLL_TIMEOUT:-60}
export XCOLL_TIMEOUT
limit=""
command -v timeout > /dev/null && limit="timeout 900"

run_mpi() { # np, then the command
    np=$1; shift
    over=""
    [ "$np" -gt "$ncores" ] && over="--oversubscribe"
    # shellcheck disable=SC2086
    $limit "$mpirun" $root_flag $over ${MPIRUN_FLAGS:-} -x XCOLL_TIMEOUT -np "$np" "$@"
}

start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "run_sweep.sh: $perf, ranks: $nps, collectives: $colls, $runs runs; results in $results" >&2

# --- the machine ----------------------------------------------------------------
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
kernel=$(uname -sr)
ompi=$("$mpirun" --version 2>/dev/null | head -n 1)
rev=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$top" diff --quiet HEAD 2>/dev/null || rev="$rev + uncommitted changes"
# (before the old results go, which would count as changes)
mkdir -p "$results"
rm -f "$results"/*.csv "$results"/*.svg
ucx=$(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -n 1)
pml=$(run_mpi 2 --mca pml_base_verbose 10 "$perf" -b 8 -e 8 -n 1 -w 0 -c 0 2>&1 |
      sed -n 's/.*selected \([a-z0-9]*\) best priority.*/\1/p' | head -n 1)

# --- memcpy and the sweep, RUNS times ---------------------------------------------
run=1
while [ "$run" -le "$runs" ]; do
    echo "run_sweep.sh: run $run of $runs: memcpy" >&2
    run_mpi 2 "$perf" --memcpy -b 4K -e "$maxbytes" -f 4 -n 50 -w 5 --csv \
        > "$results/memcpy-run$run.csv"
    for np in $nps; do
        for coll in $colls; do
            echo "run_sweep.sh: run $run, $coll on $np ranks ($(( $(date +%s) - start )) s so far)" >&2
            # Small sizes get many iterations, big ones fewer (--budget), so
            # noise averages out where a call is short and the sweep stays
            # short. No --fence: xcoll and MPI alternate with nothing
            # between them (docs/PERFORMANCE.md, "Small messages").
            plot=""
            [ "$run" = "$runs" ] && plot="--plot $results/$coll-np$np.svg"
            # shellcheck disable=SC2086
            run_mpi "$np" "$perf" -C "$coll" -b 8 -e "$maxbytes" -f 2 -n "$iters" \
                -w "$warmup" --budget "$budget" -d float32 -o sum --vs-mpi -a 3 --no-inplace \
                --csv $plot > "$results/$coll-np$np-run$run.csv" || {
                echo "run_sweep.sh: xcoll-perf failed for $coll on $np ranks, run $run" >&2
                failed="${failed:-}$coll/$np/run$run "
            }
        done
    done
    run=$((run + 1))
done
elapsed=$(( $(date +%s) - start ))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# --- docs/PERFORMANCE.md ------------------------------------------------------------------
tmp="$out.tmp"
awk -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v ncores="$ncores" -v cpu="$cpu" \
    -v mem="$mem" -v kernel="$kernel" -v ompi="$ompi" -v ucx="$ucx" -v pml="${pml:-unknown}" \
    -v nps="$nps" -v colls="$colls" -v load_start="$load_start" -v load_end="$load_end" \
    -v elapsed="$elapsed" -v iters="$iters" -v warmup="$warmup" -v budget="$budget" \
    -v rev="$rev" -v failed="${failed:-}" -v quick="$quick" -v resdir="$(basename "$results")" \
    -v runs="$runs" -f "$here/stats.awk" -f "$here/perf_report.awk" "$results"/memcpy-run*.csv \
    $(for np in $nps; do for coll in $colls; do ls "$results/$coll-np$np"-run*.csv; done; done) \
    > "$tmp"

# The analysis is written by a person from the numbers; keep it across reruns.
if [ -f "$out" ] && grep -q '^## Analysis' "$out"; then
    sed -n '/^## Analysis/,$p' "$out" >> "$tmp"
else
    printf '## Analysis\n\n(to be written from the numbers above)\n' >> "$tmp"
fi
mv "$tmp" "$out"
echo "run_sweep.sh: wrote $out in $elapsed s (load average $load_start -> $load_end)" >&2
[ -z "${failed:-}" ]
