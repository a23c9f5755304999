#!/bin/sh
# run_spec_tests.sh - the drop-in specification tests (test/dropin/spec_*):
# MPI programs written from the MPI standard that check their own results
# (" No Errors"), run under plain MPI (which shows the test itself is
# right), under the Open MPI coll component and with the PMPI library, at
# 1..10 ranks; then once with XCOLL_LOG=info, which must show that xcoll
# served calls (with packed derived datatypes) and passed others back, so
# a drop-in that quietly passed everything back cannot pass. The
# MPICH-built programs run under MPICH with libxcoll_mpich.
#
# Environment (make check sets the first ones):
#   MPIRUN, MPIRUN_FLAGS     launcher (default: mpirun --allow-run-as-root --oversubscribe)
#   top_builddir             build tree (default: .)
#   SPEC_NPS                 rank counts (default: 1 2 3 4 5 6 7 8 9 10;
#                            XCOLL_TEST_QUICK=1: 1 2 4 7)
#   SPEC_TIMEOUT             seconds one run may take (default 120): a hang fails
#   XCOLL_COMPONENT_DIR      the component's directory (default: the build's
#                            lib/mpi/components, which holds nothing else)
#   XCOLL_PMPI_LIB           libxcoll_mpi.so (default: the build's)
#   XCOLL_LIBDIR             directory of libxcoll.so (default: the build's lib/.libs)
#   MPICH_MPIEXEC            MPICH's launcher; SPEC_MPICH_NPS its rank counts (default 1 2 3)
# Exit status: 0 pass, 1 fail, 77 skip.

top_builddir=${top_builddir:-.}
MPIRUN=${MPIRUN:-mpirun}
if [ "${MPIRUN_FLAGS+set}" != set ]; then
    MPIRUN_FLAGS="--allow-run-as-root --oversubscribe"
fi
if [ -n "${XCOLL_TEST_QUICK:-}" ]; then
    NPS=${SPEC_NPS:-"1 2 4 7"}
else
    NPS=${SPEC_NPS:-"1 2 3 4 5 6 7 8 9 10"}
fi
MPICH_NPS=${SPEC_MPICH_NPS:-"1 2 3"}
RUN_TIMEOUT=${SPEC_TIMEOUT:-120}
COMPONENT_DIR=${XCOLL_COMPONENT_DIR:-$top_builddir/lib/mpi/components}
PMPI_LIB=${XCOLL_PMPI_LIB:-$top_builddir/lib/mpi/.libs/libxcoll_mpi.so}
MPICH_PMPI_LIB=${XCOLL_MPICH_PMPI_LIB:-$top_builddir/lib/mpi/.libs/libxcoll_mpich.so}
LIBDIR=${XCOLL_LIBDIR:-$top_builddir/lib/.libs}
PROGS="spec_types spec_reduce spec_nonblocking spec_progress spec_vcoll spec_order"

for p in $PROGS; do
    if [ ! -x "$top_builddir/test/dropin/$p" ]; then
        echo "SKIP: $top_builddir/test/dropin/$p not built"
        exit 77
    fi
done
case "$($MPIRUN --version 2>&1)" in
    *"Open MPI"*|*"OpenRTE"*) is_ompi=yes ;;
    *) is_ompi=no ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/xcoll-spec.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 143' INT TERM
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
# No drop-in rules (an empty file) for the main runs: xcoll serves all it
# can. SPEC_RULES_NPS: rank counts run again with the built-in rules,
# where served and passed-back calls mix by size.
XCOLL_MPI_TUNE_FILE=${XCOLL_MPI_TUNE_FILE-/dev/null}
export XCOLL_MPI_TUNE_FILE
RULES_NPS=${SPEC_RULES_NPS:-"2 4 7"}
# Every form the drop-ins have, the v-variants included (by default they
# pass those back; checked once below).
XCOLL_MPI_COLLS=${XCOLL_MPI_COLLS-all}
OMPI_MCA_coll_xcoll_colls=${OMPI_MCA_coll_xcoll_colls-all}
export XCOLL_MPI_COLLS OMPI_MCA_coll_xcoll_colls
# a sanitizer build needs its runtime loaded before anything else
asan_rt=
[ -f "$PMPI_LIB" ] && asan_rt=$(ldd "$PMPI_LIB" 2>/dev/null | awk '/libasan/ {print $3; exit}')

modes="plain"
if [ "$is_ompi" = yes ] && [ -f "$COMPONENT_DIR/mca_coll_xcoll.so" ]; then
    ompi_dir=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/^.*[Pp]kglibdir: *//p')
    if [ -n "$ompi_dir" ]; then
        modes="$modes component"
    else
        echo "NOTE: Open MPI's component directory unknown (ompi_info?): component not tested"
    fi
fi
[ -f "$PMPI_LIB" ] && modes="$modes pmpi"

# args_of MODE: the launcher arguments of a mode.
args_of() {
    case $1 in
        plain) echo "" ;;
        component)
            echo "--mca mca_base_component_path $COMPONENT_DIR:$ompi_dir --mca coll_xcoll_priority 100 --mca coll_xcoll_np 1${asan_rt:+ -x LD_PRELOAD=$asan_rt}" ;;
        pmpi) echo "-x LD_PRELOAD=${asan_rt:+$asan_rt:}$PMPI_LIB -x XCOLL_MPI_NP=1" ;;
    esac
}

# run MODE NP PROG OUT [launcher args...]: one run; 0 when it printed " No Errors".
run() {
    r_mode=$1
    r_np=$2
    r_prog=$3
    r_out=$4
    shift 4
    # shellcheck disable=SC2046,SC2086
    timeout "$RUN_TIMEOUT" $MPIRUN $MPIRUN_FLAGS -np "$r_np" -x LD_LIBRARY_PATH \
        -x XCOLL_MPI_TUNE_FILE -x XCOLL_MPI_COLLS -x OMPI_MCA_coll_xcoll_colls \
        $(args_of "$r_mode") \
        "$@" "$top_builddir/test/dropin/$r_prog" > "$r_out" 2> "$r_out.err"
    r_status=$?
    if [ $r_status -eq 124 ]; then
        echo "(timed out after $RUN_TIMEOUT s)" >> "$r_out"
        return 1
    fi
    [ $r_status -eq 0 ] && grep -q '^ No Errors$' "$r_out"
}

for p in $PROGS; do
    for mode in $modes; do
        passed=""
        for np in $NPS; do
            if run "$mode" "$np" "$p" "$work/out"; then
                passed="$passed $np"
            else
                fail "$p under $mode at $np ranks:"
                head -8 "$work/out"
                tail -4 "$work/out.err"
            fi
            if [ "$mode" = component ] && grep -q "unable to open" "$work/out.err"; then
                fail "$p under the component: Open MPI complained about the component directory:"
                grep "unable to open" "$work/out.err" | head -2
            fi
        done
        [ -n "$passed" ] && echo "PASS: $p under $mode at ranks$passed"
    done
done

# The built-in drop-in rules: the same programs where small calls go to MPI.
for p in $PROGS; do
    for mode in $modes; do
        [ "$mode" = plain ] && continue
        passed=""
        for np in $RULES_NPS; do
            XCOLL_MPI_TUNE_FILE= # the built-in rules
            run "$mode" "$np" "$p" "$work/out"
            rules_status=$?
            XCOLL_MPI_TUNE_FILE=/dev/null
            if [ $rules_status -eq 0 ]; then
                passed="$passed $np"
            else
                fail "$p under $mode with the built-in rules at $np ranks:"
                head -8 "$work/out"
                tail -4 "$work/out.err"
            fi
        done
        [ -n "$passed" ] && echo "PASS: $p under $mode with the built-in drop-in rules at ranks$passed"
    done
done

# --- the drop-ins really served (and passed back) ------------------------------------
# expect_log MODE PROG PATTERN...: each pattern must be in the info log.
expect_log() {
    e_mode=$1
    e_prog=$2
    shift 2
    # each rank's stderr whole in its own file: merged lines can be cut
    rm -rf "$work/logd"
    if ! run "$e_mode" 4 "$e_prog" "$work/log" -x XCOLL_LOG=info --output-filename "$work/logd"; then
        fail "$e_prog under $e_mode with XCOLL_LOG=info"
        return
    fi
    cat "$work/logd"/*/rank.*/stderr > "$work/log.err" 2>/dev/null
    for pattern in "$@"; do
        if ! grep -q -- "$pattern" "$work/log.err"; then
            fail "$e_prog under $e_mode: no log line matching '$pattern'"
            return
        fi
    done
    echo "PASS: $e_prog under $e_mode: the log shows $# kinds of decisions"
}
for mode in $modes; do
    [ "$mode" = plain ] || [ "$is_ompi" = no ] && continue
    expect_log "$mode" spec_types "served bcast on MPI_COMM_WORLD (size 4): .* packed" \
        "served gather on MPI_COMM_WORLD (size 4): .* packed" \
        "served alltoall on MPI_COMM_WORLD (size 4): .*both sides packed"
    expect_log "$mode" spec_nonblocking "served ibcast on" "served igather on" \
        "passed back ireduce on .*: op is not" "passed back iallreduce on .*: op is not"
    expect_log "$mode" spec_vcoll "served allgatherv on .*staged" "served alltoallv on" \
        "served gatherv on" "served scatterv on" "served iallgatherv on"
done
# A rule that hands gatherv and scatterv to "mpi" must not split the root
# (which has counts) from the others (which have none): xcoll keeps every
# v-variant, on every rank (this hung before the decision went by the
# collective).
if [ -f "$PMPI_LIB" ] && [ "$is_ompi" = yes ]; then
    if run pmpi 3 spec_vcoll "$work/out" -x "XCOLL_TUNE=gatherv:0-inf:mpi;scatterv:0-inf:mpi"; then
        echo "PASS: spec_vcoll under pmpi with gatherv and scatterv ruled to mpi"
    else
        fail "spec_vcoll under pmpi with gatherv and scatterv ruled to mpi:"
        tail -n 20 "$work/out" "$work/out.err"
    fi
fi
# By default the v-variants stay MPI's (the component does not even take
# them then; the PMPI library says why it passes them back).
if [ "$is_ompi" = yes ] && [ -f "$PMPI_LIB" ]; then
    saved_colls=$XCOLL_MPI_COLLS
    XCOLL_MPI_COLLS=default
    expect_log pmpi spec_vcoll "passed back allgatherv on .*: not in XCOLL_MPI_COLLS" \
        "passed back alltoallv on .*: not in XCOLL_MPI_COLLS" "served bcast on\|served barrier on\|passed back"
    XCOLL_MPI_COLLS=$saved_colls
fi
[ "$is_ompi" = yes ] && [ -f "$PMPI_LIB" ] && expect_log pmpi spec_reduce "served allreduce on MPI_COMM_WORLD (size 4): .* packed" \
    "passed back allreduce on MPI_COMM_WORLD (size 4): datatype is not made of one basic type"

# --- MPICH -----------------------------------------------------------------------------
if [ -z "${MPICH_MPIEXEC:-}" ] || [ ! -f "$MPICH_PMPI_LIB" ] ||
        [ ! -x "$top_builddir/test/dropin/spec_types_mpich" ]; then
    echo "SKIP: MPICH part skipped: MPICH not installed (no libxcoll_mpich or spec programs for it)"
else
    # spec_progress is left out: MPICH has no hook for a PMPI library to
    # progress from inside MPI's own blocking calls (lib/mpi/README.md)
    for p in spec_types spec_reduce spec_nonblocking spec_vcoll spec_order; do
        for preload in "" "$MPICH_PMPI_LIB"; do
            what=${preload:+"with libxcoll_mpich"}
            passed=""
            for np in $MPICH_NPS; do
                # shellcheck disable=SC2086
                timeout "$RUN_TIMEOUT" "$MPICH_MPIEXEC" -n "$np" -genv LD_LIBRARY_PATH "$LD_LIBRARY_PATH" \
                    -genv XCOLL_MPI_TUNE_FILE "$XCOLL_MPI_TUNE_FILE" \
                    ${preload:+-genv LD_PRELOAD "${asan_rt:+$asan_rt:}$preload" -genv XCOLL_MPI_NP 1} \
                    "$top_builddir/test/dropin/${p}_mpich" > "$work/m.out" 2> "$work/m.err"
                if [ $? -eq 0 ] && grep -q '^ No Errors$' "$work/m.out"; then
                    passed="$passed $np"
                else
                    fail "$p under MPICH ${what:-plain} at $np ranks:"
                    head -8 "$work/m.out"
                    tail -4 "$work/m.err"
                fi
            done
            [ -n "$passed" ] && echo "PASS: $p under MPICH ${what:-plain} at ranks$passed"
        done
    done
fi

if [ $failures -ne 0 ]; then
    echo "$failures specification check(s) failed"
    exit 1
fi
echo "all specification checks passed"
exit 0
