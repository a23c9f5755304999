#!/bin/sh
# bench/dropin_sweep.sh - measures where a program gains or loses speed by
# dropping xcoll in, writes the drop-in selection rules from that, and
# checks the result.
#
#   bench/dropin_sweep.sh [--np "2 4 8"] [--table-np "2 4"] [--reps 3]
#                         [--max 64M] [--margin 0.03] [--rules FILE]
#                         [--doc FILE] [--results DIR] [--quick] [--reuse]
#
# Every measurement is side by side in one job: bench/mpi_collbench --pair
# runs under the Open MPI component with two communicators, one xcoll
# serves and one Open MPI serves alone (MPI_T turns the component off for
# the second), and alternates loops on the two; a ratio is the median over
# seven such pairs of loops, and over --reps runs. Comparing separate runs
# instead is hopeless on a shared 2-core machine: its speed wanders by 2x
# from one minute to the next.
# 1. Measure: the component serving everything it can
#    (XCOLL_MPI_TUNE_FILE=/dev/null: no drop-in rules), at --np rank counts.
# 2. Rules: wherever xcoll was not at least --margin faster than Open MPI
#    in every run (a path that is sometimes fast and sometimes slow goes to
#    MPI), the size band goes to MPI: "coll@ranks:lo-hi:mpi", written to --rules
#    (default lib/mpi/dropin.tune, which the drop-ins carry once rebuilt;
#    XCOLL_MPI_TUNE_FILE=FILE uses a file without a rebuild). A measured
#    size s stands for [s, 2s); a rank count for the counts up to it from
#    the one measured before (the largest for all beyond).
# 3. Verify: the component with those rules against Open MPI, at
#    --table-np rank counts; the ratio table (Open MPI time / drop-in time,
#    per collective and size) goes into --doc (default docs/PERFORMANCE.md,
#    between its "drop-in table" markers).
#
# Raw numbers: --results (default bench/results/dropin). Environment:
# MPIRUN (default mpirun), MPIRUN_FLAGS, BUILD (default: build/ next to
# this script's directory). Takes about 40 minutes on a 2-core machine;
# --quick (to try it: 2 and 4 ranks, up to 64 KiB, 1 rep) a minute;
# --reuse keeps the measurements of an earlier run and redoes steps 2-3.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=${BUILD:-$top/build}
nps="2 4 8"
table_nps="2 4"
reps=3
max=64M
margin=0.03
rules="$top/lib/mpi/dropin.tune"
doc="$top/docs/PERFORMANCE.md"
results="$here/results/dropin"
colls="allreduce,bcast,reduce,allgather,reduce_scatter,alltoall,gather,scatter,barrier"
reuse=0

while [ $# -gt 0 ]; do
    case "$1" in
    --np) nps=$2; shift ;;
    --table-np) table_nps=$2; shift ;;
    --reps) reps=$2; shift ;;
    --max) max=$2; shift ;;
    --margin) margin=$2; shift ;;
    --rules) rules=$2; shift ;;
    --doc) doc=$2; shift ;;
    --results) results=$2; shift ;;
    --quick) nps="2 4"; table_nps="2 4"; reps=1; max=64K ;;
    --reuse) reuse=1 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "dropin_sweep.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

bench="$build/bench/mpi_collbench"
comp_dir="$build/lib/mpi/components"
if [ ! -x "$bench" ] || [ ! -f "$comp_dir/mca_coll_xcoll.so" ]; then
    echo "dropin_sweep.sh: build first (need $bench and $comp_dir/mca_coll_xcoll.so)" >&2
    exit 2
fi
ompi_dir=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/^.*[Pp]kglibdir: *//p')
if [ -z "$ompi_dir" ]; then
    echo "dropin_sweep.sh: ompi_info does not say where Open MPI's components are" >&2
    exit 2
fi
mpirun=${MPIRUN:-mpirun}
flags=${MPIRUN_FLAGS:-"--allow-run-as-root --oversubscribe --bind-to none"}
mkdir -p "$results"
export LD_LIBRARY_PATH="$build/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# run NP OUT RULES: one benchmark run under the component with drop-in
# rules RULES (/dev/null: none): --pair times a communicator xcoll serves
# and one Open MPI alone serves in the same job, alternating loops.
run() {
    # shellcheck disable=SC2086
    $mpirun $flags -np "$1" -x LD_LIBRARY_PATH -x XCOLL_MPI_TUNE_FILE="$3" \
        --mca mca_base_component_path "$comp_dir:$ompi_dir" "$bench" --pair -c "$colls" \
        -e "$max" -t 0.02 > "$2"
}

# sweep TAG RULES NPS: reps runs at every NP; files $results/TAG-npN-rK.txt
sweep() {
    for np in $3; do
        k=1
        while [ "$k" -le "$reps" ]; do
            echo "  $1, $np ranks, run $k of $reps"
            run "$np" "$results/$1-np$np-r$k.txt" "$2"
            k=$((k + 1))
        done
    done
}

# medians TAG: "coll np bytes plain_us xcoll_us ratio min_ratio" lines:
# medians over the runs (the ratio: of the runs' paired ratios), and the
# smallest run's ratio
medians() {
    for f in "$results/$1"-np*-r*.txt; do
        awk '!/^#/ && NF == 7 { print $1, $2, $3, $5, $6, $7 }' "$f"
    done | sort -k1,1 -k2,2n -k3,3n | awk '
        function med(v, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
            return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }
        function flush(   i, lo) {
            if (key == "") return
            lo = vr[1]
            for (i = 2; i <= n; i++) if (vr[i] + 0 < lo + 0) lo = vr[i]
            print key, med(vp, n), med(vx, n), med(vr, n), lo
        }
        { k = $1 " " $2 " " $3
          if (k != key) { flush(); key = k; n = 0 }
          n++; vp[n] = $4; vx[n] = $5; vr[n] = $6 }
        END { flush() }'
}

if [ "$reuse" = 1 ] && ls "$results"/measure-np*-r*.txt > /dev/null 2>&1; then
    echo "1. measuring: reusing the runs in $results (--reuse)"
else
    echo "1. measuring: Open MPI and xcoll serving everything, side by side ($reps runs, ranks: $nps)"
    sweep measure /dev/null "$nps"
fi
medians measure > "$results/measure-medians.txt"

echo "2. writing the drop-in rules to $rules"
{
    cat <<EOF
# lib/mpi/dropin.tune - the drop-in selection rules: where MPI's own
# collective was measured faster than xcoll under the Open MPI component,
# the call goes back to MPI ("mpi"). Same grammar as XCOLL_TUNE
# (docs/TUNING.md); the drop-ins apply these rules between xcoll's defaults
# and XCOLL_TUNE_FILE / XCOLL_TUNE, and nothing else reads them.
#
# Written by bench/dropin_sweep.sh on $(date -u +%Y-%m-%d) ($(uname -m), $(nproc) cores,
# $(mpirun --version 2>/dev/null | head -1)): $reps runs of bench/mpi_collbench
# --pair at $nps ranks (Open MPI and xcoll side by side in one job); a band
# goes to MPI unless xcoll was at least $margin faster in every run.
# Regenerate on your machine with bench/dropin_sweep.sh and point
# XCOLL_MPI_TUNE_FILE (or the component's coll_xcoll_tune_file) at the
# result, or rebuild with it in place.
EOF
    awk -v margin="$margin" -v nps="$nps" '
        BEGIN { n = split(nps, list, " ")
                for (i = 1; i <= n; i++) {
                    lo = i == 1 ? 2 : list[i - 1] + 1
                    hi = i == n ? "inf" : list[i]
                    ranks[list[i]] = lo == hi ? "@" lo : "@" lo "-" hi } }
        function size(b) {
            if (b >= 1073741824 && b % 1073741824 == 0) return b / 1073741824 "g"
            if (b >= 1048576 && b % 1048576 == 0) return b / 1048576 "m"
            if (b >= 1024 && b % 1024 == 0) return b / 1024 "k"
            return b
        }
        function emit(  i, lo, hi, out, start) {
            out = ""; start = -1
            for (i = 1; i <= cnt; i++) {
                if (mpi[i] && start < 0) start = i
                if (start >= 0 && (!mpi[i] || i == cnt)) {
                    last = mpi[i] ? i : i - 1
                    lo = start == 1 ? 0 : sz[start]
                    hi = last == cnt ? "inf" : size(sz[last + 1])
                    out = out (out == "" ? "" : ",") size(lo) "-" hi ":mpi"
                    start = -1
                }
            }
            if (out != "") print coll ranks[np] ":" out
        }
        { if ($1 != coll || $2 != np) { if (coll != "") emit(); coll = $1; np = $2; cnt = 0 }
          sz[++cnt] = $3
          mpi[cnt] = !($7 + 0 >= 1 + margin) }
        END { if (coll != "") emit() }' "$results/measure-medians.txt"
} > "$rules.new"
mv "$rules.new" "$rules"
grep -v '^#' "$rules" | sed 's/^/   /'

echo "3. checking: Open MPI against the component with these rules, side by side (ranks: $table_nps)"
sweep verify "$rules" "$table_nps"
medians verify > "$results/verify-medians.txt"

# the table: per rank count, rows = sizes, columns = collectives; each
# cell MPI time / drop-in time, * where the rules pass the size back
table() {
    awk -v colls="$colls" -v measured="$results/measure-medians.txt" '
        BEGIN { nc = split(colls, cl, ",")
                while ((getline l < measured) > 0) {
                    split(l, f, " "); raw[f[1] " " f[2] " " f[3]] = f[6] } }
        function size(b) {
            if (b >= 1048576) return b / 1048576 " MiB"
            if (b >= 1024) return b / 1024 " KiB"
            return b " B"
        }
        { r[$1 " " $2 " " $3] = $6; sizes[$2 " " $3] = 1; nps[$2] = 1 }
        END {
            for (np in nps) {
                printf "\n%d ranks: MPI time / drop-in time (in brackets: xcoll serving everything)\n\n", np
                printf "| size |"; for (c = 1; c <= nc; c++) printf " %s |", cl[c]; printf "\n"
                printf "|---|"; for (c = 1; c <= nc; c++) printf "---|"; printf "\n"
                n = 0
                for (k in sizes) { split(k, f, " "); if (f[1] == np) s[++n] = f[2] + 0 }
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
                for (i = 1; i <= n; i++) {
                    printf "| %s |", size(s[i])
                    for (c = 1; c <= nc; c++) {
                        k = cl[c] " " np " " s[i]
                        if (k in r) printf " %.2f (%.2f) |", r[k], raw[k]
                        else printf " |"
                    }
                    printf "\n"
                }
                delete s
            }
        }' "$results/verify-medians.txt"
}

{
    echo "Measured on $(date -u +%Y-%m-%d) by \`bench/dropin_sweep.sh\` ($reps runs of \`bench/mpi_collbench --pair\` per rank count; each ratio the median over the runs of the median over 7 pairs of loops; $(nproc) cores, $(mpirun --version 2>/dev/null | head -1)). Raw numbers: \`bench/results/dropin/\`. Ratios above 1.00 are the drop-in being faster."
    table
} > "$results/table.md"

if [ -f "$doc" ] && grep -q '<!-- drop-in table -->' "$doc"; then
    awk -v table="$results/table.md" '
        /<!-- drop-in table -->/ { print; while ((getline l < table) > 0) print l; skip = 1; next }
        /<!-- end of drop-in table -->/ { skip = 0 }
        !skip' "$doc" > "$doc.new" && mv "$doc.new" "$doc"
    echo "   table written into $doc"
else
    echo "   $doc has no <!-- drop-in table --> markers: the table is in $results/table.md"
fi
echo "done"
