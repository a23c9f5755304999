#!/bin/sh
# run_dropin_tests.sh - xcoll under an MPI program that does not know it:
# test/dropin/dropin_test runs at 1..8 ranks under plain MPI, under the
# Open MPI coll component and with the PMPI library (preloaded, and linked
# in), and every output must equal plain MPI's. Then the logs must show
# that xcoll really served the calls, and that the MCA parameters work.
#
# Environment (make check sets the first ones):
#   MPIRUN, MPIRUN_FLAGS     launcher (default: mpirun --allow-run-as-root --oversubscribe)
#   top_builddir             build tree (default: .)
#   DROPIN_NPS               rank counts (default: 1 2 3 4 5 6 7 8)
#   DROPIN_PARTS             which checks (unset or empty: all): results (identical
#                            output at DROPIN_NPS), served (the logs name every form),
#                            params (MCA parameters, XCOLL_MPI_COLLS, linked in),
#                            rules (the built-in drop-in rules), mpich
#   DROPIN_TEST              the test program (default: $top_builddir/test/dropin/dropin_test)
#   DROPIN_TEST_LINKED       the same with libxcoll_mpi linked in (optional)
#   XCOLL_COMPONENT_DIR      directory of mca_coll_xcoll.so (default: $top_builddir/lib/mpi/components,
#                            which holds the component and nothing else)
#   XCOLL_PMPI_LIB           libxcoll_mpi.so (default: $top_builddir/lib/mpi/.libs/libxcoll_mpi.so)
#   XCOLL_LIBDIR             directory of libxcoll.so (default: $top_builddir/lib/.libs)
#   OMPI_PKGLIBDIR           Open MPI's own components (default: asked from ompi_info)
#   MPICH_MPIEXEC            MPICH's launcher (configure finds mpiexec.mpich); the
#                            MPICH part runs when it, DROPIN_TEST_MPICH and
#                            XCOLL_MPICH_PMPI_LIB exist, and is skipped otherwise
#   DROPIN_TEST_MPICH        the test program built against MPICH
#                            (default: $top_builddir/test/dropin/dropin_test_mpich)
#   XCOLL_MPICH_PMPI_LIB     the PMPI library built against MPICH
#                            (default: $top_builddir/lib/mpi/.libs/libxcoll_mpich.so)
#   DROPIN_MPICH_NPS         MPICH rank counts, full run (default: 1 2)
#   DROPIN_MPICH_QUICK_NPS   MPICH rank counts, --quick run (default: 3 4; MPICH
#                            busy-polls, so runs with more ranks than cores are slow)
# Exit status: 0 pass, 1 fail, 77 skip (automake's convention).

top_builddir=${top_builddir:-.}
MPIRUN=${MPIRUN:-mpirun}
if [ "${MPIRUN_FLAGS+set}" != set ]; then
    MPIRUN_FLAGS="--allow-run-as-root --oversubscribe"
fi
NPS=${DROPIN_NPS:-"1 2 3 4 5 6 7 8"}
PARTS=${DROPIN_PARTS:-"results served params rules mpich"}
nparts=0
for p in $PARTS; do
    case $p in
    results | served | params | rules | mpich) nparts=$((nparts + 1)) ;;
    *)
        echo "FAIL: DROPIN_PARTS names '$p' (known: results served params rules mpich)"
        exit 1
        ;;
    esac
done
if [ $nparts = 0 ]; then
    echo "FAIL: DROPIN_PARTS='$PARTS' names no part (known: results served params rules mpich)"
    exit 1
fi
TEST=${DROPIN_TEST:-$top_builddir/test/dropin/dropin_test}
TEST_LINKED=${DROPIN_TEST_LINKED:-$top_builddir/test/dropin/dropin_test_linked}
COMPONENT_DIR=${XCOLL_COMPONENT_DIR:-$top_builddir/lib/mpi/components}
PMPI_LIB=${XCOLL_PMPI_LIB:-$top_builddir/lib/mpi/.libs/libxcoll_mpi.so}
LIBDIR=${XCOLL_LIBDIR:-$top_builddir/lib/.libs}
# A hung run must fail the test, not the whole make check.
RUN_TIMEOUT=${DROPIN_TIMEOUT:-120}

if [ ! -x "$TEST" ]; then
    echo "SKIP: $TEST not built"
    exit 77
fi
case "$($MPIRUN --version 2>&1)" in
    *"Open MPI"*|*"OpenRTE"*) is_ompi=yes ;;
    *) is_ompi=no ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/xcoll-dropin.XXXXXX") || exit 1
# a signal ends the run (a trap alone would clean up and carry on without $work)
trap 'rm -rf "$work"' EXIT
trap 'exit 143' INT TERM
failures=0

passes=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
pass() {
    echo "PASS: $*"
    passes=$((passes + 1))
}

# part NAME: whether DROPIN_PARTS names it (separated by any white space)
part() {
    for q in $PARTS; do
        [ "$q" = "$1" ] && return 0
    done
    return 1
}

# No drop-in rules (an empty file): xcoll serves everything it can, so its
# paths are the ones tested and the served-call checks below can see them;
# the built-in rules (which give small calls to MPI) are checked at the end.
XCOLL_MPI_TUNE_FILE=${XCOLL_MPI_TUNE_FILE-/dev/null}
export XCOLL_MPI_TUNE_FILE

# The uninstalled libxcoll must be found by the component and the PMPI
# library; a sanitizer build must have its runtime loaded first.
LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
asan_rt=
if [ -f "$PMPI_LIB" ]; then
    asan_rt=$(ldd "$PMPI_LIB" 2>/dev/null | awk '/libasan/ {print $3; exit}')
fi
preload_base=${asan_rt}

# launch NP LOGFILE [launcher args...] -- [program args...]: runs the test
# program (or $prog when set) and keeps stdout; stderr goes to LOGFILE.
launch() {
    np=$1
    log=$2
    shift 2
    # shellcheck disable=SC2086
    timeout "$RUN_TIMEOUT" $MPIRUN $MPIRUN_FLAGS -np "$np" -x LD_LIBRARY_PATH -x XCOLL_MPI_TUNE_FILE \
        "$@" 2>"$log"
}

# launch_logged NP LOGFILE args...: like launch, but LOGFILE gets each
# rank's stderr whole: mpirun's merged stderr can cut lines of different
# ranks into each other, which would defeat the greps below.
launch_logged() {
    logged_np=$1
    logged_file=$2
    shift 2
    if [ "$is_ompi" = yes ]; then
        rm -rf "$logged_file.d"
        launch "$logged_np" "$logged_file.merged" --output-filename "$logged_file.d" "$@"
        logged_status=$?
        cat "$logged_file.d"/*/rank.*/stderr > "$logged_file" 2>/dev/null
        return $logged_status
    fi
    launch "$logged_np" "$logged_file" "$@"
}

with_preload() {
    if [ -n "$1" ] && [ -n "$preload_base" ]; then
        echo "$preload_base $1"
    elif [ -n "$1" ]; then
        echo "$1"
    else
        echo "$preload_base"
    fi
}

# --- find what was built --------------------------------------------------------
have_component=no
if [ "$is_ompi" = yes ] && [ -f "$COMPONENT_DIR/mca_coll_xcoll.so" ]; then
    if [ -z "${OMPI_PKGLIBDIR:-}" ]; then
        OMPI_PKGLIBDIR=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/^.*[Pp]kglibdir: *//p')
    fi
    if [ -n "$OMPI_PKGLIBDIR" ]; then
        have_component=yes
        COMPONENT_PATH="$COMPONENT_DIR:$OMPI_PKGLIBDIR"
    else
        echo "NOTE: Open MPI's component directory unknown (ompi_info?): component not tested"
    fi
else
    echo "NOTE: no coll component built (or not Open MPI): component not tested"
fi
have_pmpi=no
if [ -f "$PMPI_LIB" ]; then
    have_pmpi=yes
else
    echo "NOTE: $PMPI_LIB not built: PMPI library not tested"
fi
if [ "$have_component" = no ] && [ "$have_pmpi" = no ]; then
    echo "SKIP: no drop-in built"
    exit 77
fi

# Component flags: the tests force the component on (priority above
# everything) and onto every communicator size, down to 1.
COMP_ARGS="--mca mca_base_component_path $COMPONENT_PATH --mca coll_xcoll_priority 100 --mca coll_xcoll_np 1"
comp_preload=$(with_preload "")
comp_env=""
if [ -n "$comp_preload" ]; then
    comp_env="-x LD_PRELOAD=$comp_preload"
fi
pmpi_preload=$(with_preload "$PMPI_LIB")

# plain_at NP: plain MPI's output at NP ranks, the reference every check
# compares with, in $work/plain.NP: run once per rank count (the checks
# after the loop need counts DROPIN_NPS may not name); a failed run is
# reported once, and returns 1 from then on
plain_at() {
    [ -s "$work/plain.$1" ] && return 0
    [ -e "$work/plain.$1.failed" ] && return 1
    if ! launch "$1" "$work/plain.err" "$TEST" > "$work/plain.$1"; then
        fail "plain MPI at $1 ranks (exit status $?); stderr:"
        tail -5 "$work/plain.err"
    elif ! grep -q '^dropin_test: done' "$work/plain.$1"; then
        fail "plain MPI at $1 ranks did not finish"
    else
        return 0
    fi
    rm -f "$work/plain.$1"
    : > "$work/plain.$1.failed"
    return 1
}

# --- identical results at every size ------------------------------------------------
part results || NPS=
for np in $NPS; do
    plain_at "$np" || continue
    lines=$(wc -l < "$work/plain.$np")
    if [ "$have_component" = yes ]; then
        # shellcheck disable=SC2086
        if ! launch "$np" "$work/comp.err" $COMP_ARGS $comp_env "$TEST" > "$work/comp.$np"; then
            fail "component at $np ranks (exit status $?); stderr:"
            tail -5 "$work/comp.err"
        elif grep -q "unable to open" "$work/comp.err"; then
            fail "component at $np ranks: Open MPI could not open files of $COMPONENT_DIR:"
            grep "unable to open" "$work/comp.err" | head -3
        elif ! diff "$work/plain.$np" "$work/comp.$np" > "$work/comp.diff"; then
            fail "component at $np ranks differs from plain MPI:"
            head -10 "$work/comp.diff"
        else
            pass "component,   $np ranks: $lines lines identical to plain MPI"
        fi
    fi
    if [ "$have_pmpi" = yes ]; then
        if ! launch "$np" "$work/pmpi.err" -x LD_PRELOAD="$pmpi_preload" -x XCOLL_MPI_NP=1 \
                "$TEST" > "$work/pmpi.$np"; then
            fail "PMPI library (preloaded) at $np ranks (exit status $?); stderr:"
            tail -5 "$work/pmpi.err"
        elif ! diff "$work/plain.$np" "$work/pmpi.$np" > "$work/pmpi.diff"; then
            fail "PMPI library (preloaded) at $np ranks differs from plain MPI:"
            head -10 "$work/pmpi.diff"
        else
            pass "PMPI preload, $np ranks: $lines lines identical to plain MPI"
        fi
    fi
done

# --- xcoll really served the calls --------------------------------------------------
PROOF_NP=4
# expect LOG WHAT...: every WHAT must occur in LOG
expect() {
    log=$1
    what=$2
    shift 2
    for pattern in "$@"; do
        if ! grep -q -- "$pattern" "$log"; then
            fail "$what: no log line matching '$pattern'"
            return 1
        fi
    done
    return 0
}

if [ "$have_component" = yes ] && part served; then
    # shellcheck disable=SC2086
    if launch_logged $PROOF_NP "$work/served.err" $COMP_ARGS $comp_env -x XCOLL_LOG=info "$TEST" \
            > "$work/served.out"; then
        ok=yes
        for coll in allreduce bcast reduce allgather reduce_scatter_block reduce_scatter \
                    alltoall gather scatter barrier; do
            expect "$work/served.err" "component, XCOLL_LOG=info" \
                "info: served $coll on MPI_COMM_WORLD" "info: served i$coll on MPI_COMM_WORLD" || ok=no
        done
        expect "$work/served.err" "component fallback" \
            "served bcast on MPI_COMM_WORLD (size $PROOF_NP): 16 bytes, root 0, receive side packed" \
            "passed back allreduce on MPI_COMM_WORLD (size $PROOF_NP): op is not" \
            "passed back reduce_scatter on MPI_COMM_WORLD (size $PROOF_NP): receive counts differ" \
            "served allreduce on .*SPLIT" "served allreduce on .*DUP" || ok=no
        [ $ok = yes ] && pass "component served all 20 forms ($(grep -c 'info: served' "$work/served.err") calls) and passed back the rest, with reasons"
    else
        fail "component with XCOLL_LOG=info"
        tail -5 "$work/served.err"
    fi
fi

if [ "$have_component" = yes ] && part params; then
    # Only the component path, default priority: the one flag a user adds.
    # shellcheck disable=SC2086
    if launch_logged 2 "$work/default.err" --mca mca_base_component_path "$COMPONENT_PATH" $comp_env \
            -x XCOLL_LOG=info "$TEST" --quick > "$work/default.out" &&
            expect "$work/default.err" "component at default priority" \
                "served allreduce on MPI_COMM_WORLD (size 2)"; then
        pass "component used at its default priority with only mca_base_component_path"
    fi

    # coll_xcoll_enable=0: nothing served, same results.
    # shellcheck disable=SC2086
    if launch_logged 3 "$work/off.err" $COMP_ARGS --mca coll_xcoll_enable 0 $comp_env -x XCOLL_LOG=info \
            "$TEST" --quick > "$work/off.out"; then
        if grep -q 'info: served' "$work/off.err"; then
            fail "coll_xcoll_enable=0 still served calls"
        else
            pass "coll_xcoll_enable=0 serves nothing"
        fi
    else
        fail "component with coll_xcoll_enable=0"
    fi

    # coll_xcoll_colls=allreduce,ibcast: exactly those forms served.
    # shellcheck disable=SC2086
    if launch_logged 3 "$work/colls.err" $COMP_ARGS --mca coll_xcoll_colls allreduce,ibcast $comp_env \
            -x XCOLL_LOG=info "$TEST" --quick > "$work/colls.out"; then
        others=$(grep 'info: served' "$work/colls.err" | grep -v 'served i\?allreduce on\|served ibcast on' | head -3)
        if [ -n "$others" ]; then
            fail "coll_xcoll_colls=allreduce,ibcast served other forms: $others"
        elif expect "$work/colls.err" "coll_xcoll_colls" "served allreduce on" "served iallreduce on" \
                "served ibcast on"; then
            pass "coll_xcoll_colls=allreduce,ibcast serves exactly those forms"
        fi
    else
        fail "component with coll_xcoll_colls=allreduce,ibcast"
    fi

    # ompi_info lists the parameters.
    params=$(env ${comp_preload:+LD_PRELOAD=$comp_preload} OMPI_MCA_mca_base_component_path="$COMPONENT_PATH" \
        ompi_info --param coll xcoll --level 9 2>/dev/null)
    missing=
    for p in priority enable np colls verbose; do
        echo "$params" | grep -q "coll_xcoll_$p\"" || missing="$missing coll_xcoll_$p"
    done
    if [ -n "$missing" ]; then
        fail "ompi_info --param coll xcoll does not list:$missing"
    else
        pass "ompi_info --param coll xcoll --level 9 lists the five parameters"
    fi
fi

if [ "$have_pmpi" = yes ] && part served; then
    if launch_logged $PROOF_NP "$work/pserved.err" -x LD_PRELOAD="$pmpi_preload" -x XCOLL_LOG=info \
            "$TEST" > "$work/pserved.out"; then
        ok=yes
        for coll in allreduce bcast reduce allgather reduce_scatter_block reduce_scatter \
                    alltoall gather scatter barrier; do
            expect "$work/pserved.err" "PMPI library, XCOLL_LOG=info" \
                "info: served $coll on MPI_COMM_WORLD" "info: served i$coll on MPI_COMM_WORLD" || ok=no
        done
        expect "$work/pserved.err" "PMPI library fallback" \
            "served ibcast on MPI_COMM_WORLD (size $PROOF_NP): 16 bytes, root 0, receive side packed" \
            "passed back iallreduce on MPI_COMM_WORLD (size $PROOF_NP): op is not" \
            "served gather on MPI_COMM_WORLD (size $PROOF_NP): 8 bytes, root 0, send side packed" || ok=no
        # calls that move no bytes: MPI's, which returns at once (xcoll
        # would exchange messages)
        expect "$work/pserved.err" "PMPI library, calls of 0 bytes" \
            "passed back allreduce on MPI_COMM_WORLD (size $PROOF_NP): moves no data" \
            "passed back scatter on MPI_COMM_WORLD (size $PROOF_NP): moves no data" \
            "passed back ibcast on MPI_COMM_WORLD (size $PROOF_NP): moves no data" || ok=no
        [ $ok = yes ] && pass "PMPI library served all 20 forms ($(grep -c 'info: served' "$work/pserved.err") calls) and passed back the rest, with reasons"
    else
        fail "PMPI library with XCOLL_LOG=info"
        tail -5 "$work/pserved.err"
    fi
fi

if [ "$have_pmpi" = yes ] && part params; then
    # XCOLL_MPI_COLLS=blocking: the nonblocking forms go to MPI, same results.
    if launch_logged 3 "$work/pblocking.err" -x LD_PRELOAD="$pmpi_preload" -x XCOLL_LOG=info \
            -x XCOLL_MPI_COLLS=blocking "$TEST" --quick > "$work/pblocking.out"; then
        if grep -q 'info: served i' "$work/pblocking.err"; then
            fail "XCOLL_MPI_COLLS=blocking still served nonblocking forms"
        elif expect "$work/pblocking.err" "XCOLL_MPI_COLLS=blocking" "served allreduce on" \
                "passed back iallreduce on MPI_COMM_WORLD (size 3): not in XCOLL_MPI_COLLS"; then
            pass "XCOLL_MPI_COLLS=blocking serves only the blocking forms"
        fi
    else
        fail "PMPI library with XCOLL_MPI_COLLS=blocking"
    fi
    if [ -x "$TEST_LINKED" ] && plain_at 3; then
        if launch_logged 3 "$work/linked.err" -x XCOLL_LOG=info -x XCOLL_MPI_NP=1 ${comp_preload:+-x LD_PRELOAD=$comp_preload} \
                "$TEST_LINKED" > "$work/linked.out" &&
                diff -q "$work/plain.3" "$work/linked.out" > /dev/null 2>&1 &&
                expect "$work/linked.err" "PMPI library linked in" "served allreduce on MPI_COMM_WORLD"; then
            pass "PMPI library linked at build time: identical results, calls served"
        else
            fail "PMPI library linked at build time"
        fi
    fi
fi

# --- the built-in drop-in rules ---------------------------------------------------------
# lib/mpi/dropin.tune gives the sizes where Open MPI was measured faster
# back to it: results must not change, and the log must say why.
if part rules && [ -s "${top_srcdir:-$top_builddir/..}/lib/mpi/dropin.tune" ] &&
        grep -q ':mpi' "${top_srcdir:-$top_builddir/..}/lib/mpi/dropin.tune" &&
        plain_at $PROOF_NP; then
    for mode in component pmpi; do
        [ "$mode" = component ] && [ "$have_component" = no ] && continue
        [ "$mode" = pmpi ] && [ "$have_pmpi" = no ] && continue
        if [ "$mode" = component ]; then
            # shellcheck disable=SC2086
            set -- $COMP_ARGS $comp_env
        else
            set -- -x LD_PRELOAD="$pmpi_preload" -x XCOLL_MPI_NP=1
        fi
        XCOLL_MPI_TUNE_FILE= # the built-in rules
        launch_logged $PROOF_NP "$work/rules.$mode.err" "$@" -x XCOLL_LOG=info \
            "$TEST" > "$work/rules.$mode.out"
        rules_status=$?
        XCOLL_MPI_TUNE_FILE=/dev/null
        if [ $rules_status -eq 0 ] &&
                diff -q "$work/plain.$PROOF_NP" "$work/rules.$mode.out" > /dev/null 2>&1 &&
                expect "$work/rules.$mode.err" "$mode with the built-in rules" \
                    "passed back allreduce on MPI_COMM_WORLD (size $PROOF_NP): MPI measured faster" \
                    "info: served"; then
            pass "$mode with the built-in drop-in rules: identical results, $(grep -c 'MPI measured faster' "$work/rules.$mode.err") calls given to MPI as measured faster"
        else
            fail "$mode with the built-in drop-in rules"
        fi
    done
fi

# --- MPICH: the PMPI library built against MPICH ----------------------------------------
MPICH_TEST=${DROPIN_TEST_MPICH:-$top_builddir/test/dropin/dropin_test_mpich}
MPICH_PMPI_LIB=${XCOLL_MPICH_PMPI_LIB:-$top_builddir/lib/mpi/.libs/libxcoll_mpich.so}
MPICH_NPS=${DROPIN_MPICH_NPS:-"1 2"}
MPICH_QUICK_NPS=${DROPIN_MPICH_QUICK_NPS:-"3 4"}
if ! part mpich; then
    : # not asked for
elif [ -z "${MPICH_MPIEXEC:-}" ] || [ ! -x "$MPICH_TEST" ] || [ ! -f "$MPICH_PMPI_LIB" ]; then
    echo "SKIP: MPICH comparison skipped: MPICH not installed (no libxcoll_mpich built; see configure --with-mpich-cc)"
else
    mpich_preload=$(with_preload "$MPICH_PMPI_LIB")
    # mpich_launch NP OUT ERR [mpiexec args...] -- program args...
    mpich_launch() {
        m_np=$1
        m_out=$2
        m_err=$3
        shift 3
        timeout "$RUN_TIMEOUT" "$MPICH_MPIEXEC" -n "$m_np" -genv LD_LIBRARY_PATH "$LD_LIBRARY_PATH" \
            -genv XCOLL_MPI_TUNE_FILE "$XCOLL_MPI_TUNE_FILE" \
            "$@" > "$m_out" 2> "$m_err"
    }
    for np in $MPICH_NPS $MPICH_QUICK_NPS; do
        args=
        case " $MPICH_QUICK_NPS " in *" $np "*) args=--quick ;; esac
        if ! mpich_launch "$np" "$work/mplain.$np" "$work/mplain.err" "$MPICH_TEST" $args ||
                ! grep -q '^dropin_test: done' "$work/mplain.$np"; then
            fail "plain MPICH at $np ranks; stderr:"
            tail -5 "$work/mplain.err"
            continue
        fi
        if ! mpich_launch "$np" "$work/mpmpi.$np" "$work/mpmpi.err" -genv LD_PRELOAD "$mpich_preload" \
                -genv XCOLL_MPI_NP 1 "$MPICH_TEST" $args; then
            fail "PMPI library under MPICH at $np ranks; stderr:"
            tail -5 "$work/mpmpi.err"
        elif ! diff "$work/mplain.$np" "$work/mpmpi.$np" > "$work/mpmpi.diff"; then
            fail "PMPI library under MPICH at $np ranks differs from plain MPICH:"
            head -10 "$work/mpmpi.diff"
        else
            pass "MPICH PMPI preload, $np ranks${args:+ ($args)}: $(wc -l < "$work/mplain.$np") lines identical to plain MPICH"
        fi
        # The program prints only what MPI defines, so MPICH must agree with Open MPI too.
        if [ -z "$args" ] && [ -f "$work/plain.$np" ] && ! diff -q "$work/plain.$np" "$work/mplain.$np" > /dev/null; then
            fail "plain MPICH at $np ranks differs from plain $MPIRUN"
        fi
    done
    # Each rank's stderr in its own file: merged lines could be cut into each other.
    rm -f "$work"/mserved.err.*
    if mpich_launch 2 "$work/mserved.out" "$work/mserved.merged" -errfile-pattern "$work/mserved.err.%r" \
            -genv LD_PRELOAD "$mpich_preload" -genv XCOLL_LOG info "$MPICH_TEST"; then
        cat "$work"/mserved.err.* > "$work/mserved.err" 2>/dev/null
        ok=yes
        for coll in allreduce bcast reduce allgather reduce_scatter_block reduce_scatter \
                    alltoall gather scatter barrier; do
            expect "$work/mserved.err" "PMPI library under MPICH, XCOLL_LOG=info" \
                "info: served $coll on MPI_COMM_WORLD (size 2)" \
                "info: served i$coll on MPI_COMM_WORLD (size 2)" || ok=no
        done
        expect "$work/mserved.err" "PMPI library under MPICH, fallback" \
            "served ibcast on MPI_COMM_WORLD (size 2): 16 bytes, root 0, receive side packed" \
            "passed back allreduce on MPI_COMM_WORLD (size 2): op is not" || ok=no
        [ $ok = yes ] && pass "PMPI library under MPICH served all 20 forms ($(grep -c 'info: served' "$work/mserved.err") calls) and passed back the rest, with reasons"
    else
        fail "PMPI library under MPICH with XCOLL_LOG=info"
        tail -5 "$work/mserved.merged"
    fi
fi

if [ $failures -ne 0 ]; then
    echo "$failures drop-in check(s) failed"
    exit 1
fi
if [ $passes = 0 ]; then
    # nothing that DROPIN_PARTS names could run here (MPICH missing, say)
    echo "SKIP: no drop-in check ran (DROPIN_PARTS: $PARTS)"
    exit 77
fi
echo "all $passes drop-in checks passed"
exit 0
