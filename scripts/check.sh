#!/usr/bin/env bash
# check.sh - everything CI checks, from a fresh Debian 12 machine:
#   1. build/       warnings as errors, make check
#   2. build-asan/  AddressSanitizer + UBSan, warnings as errors, make check
#   3. make distcheck (the release tarball builds and passes its tests)
set -euo pipefail
. "$(dirname "$0")/common.sh"

# show_failures LOG: the whole test-suite.log, then its FAIL and TIMED OUT
# lines again, last: CI keeps only the tail of what a failed run printed,
# and that tail must name the run that failed.
show_failures() {
    [ -f "$1" ] || return 0
    cat "$1"
    printf '\n==> failing lines of %s:\n' "$1"
    grep -E "FAIL|ERROR|TIMED OUT|failed runs:" "$1" | grep -v "^# " | tail -n 40 || true
}

# run_check DIR: make check there; on failure show the failing tests' logs.
run_check() {
    local dir=$XCOLL_TOP/$1
    step "make -j$XCOLL_JOBS check in $1/"
    make -C "$dir" -j"$XCOLL_JOBS" || die "build failed in $1/"
    if ! make -C "$dir" -j"$XCOLL_JOBS" check; then
        show_failures "$dir/test-suite.log"
        die "make check failed in $1/ (logs: $1/test-suite.log, $1/test/*/*.log)"
    fi
}

# MPICH too, for the PMPI drop-in's MPICH test; Open MPI keeps the default
# mpicc/mpirun (its alternatives priority is higher).
XCOLL_PACKAGES="$XCOLL_PACKAGES mpich libmpich-dev"
# PyTorch (CPU) for the torch.distributed backend and its tests
XCOLL_PACKAGES="$XCOLL_PACKAGES python3-torch libtorch-dev python3-numpy pybind11-dev"
# xmllint: test/sim/test_trace.sh checks that xcoll-trace's SVGs are well-formed
XCOLL_PACKAGES="$XCOLL_PACKAGES libxml2-utils"
# ip, tc (iproute2), pgrep (procps): the namespace cluster of test/cluster
XCOLL_PACKAGES="$XCOLL_PACKAGES iproute2 procps"
install_packages
generate

configure_in build --enable-werror
run_check build

configure_in build-asan --enable-sanitizers --enable-werror
# Leak checking stays on for the unit tests and the simulator; the Makefile
# turns it off for the mpirun-launched tests only (Open MPI leaks at exit).
# protect_shadow_gap=0 lets the CUDA runtime map its memory under ASan.
export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The long matrices ran above (large counts, every algorithm forced in
# turn, the drop-in and specification tests at 1..10 ranks, the cluster's
# every part); under the sanitizers the quick cases at a spread of rank
# counts, and the failure paths (node loss), keep CI inside its time.
export SPEC_NPS="1 2 3 4 7" DROPIN_NPS="1 2 3 4 7" XCOLL_TEST_QUICK=1 XCOLL_TEST_SWEEP=0
run_check build-asan
unset ASAN_OPTIONS UBSAN_OPTIONS SPEC_NPS DROPIN_NPS XCOLL_TEST_QUICK XCOLL_TEST_SWEEP

# distcheck proves the tarball is complete and builds out of tree; the two
# runs above already cover the large counts and the rank matrices, so its
# tests run quick, at a few rank counts.
step "make distcheck in build/"
XCOLL_TEST_QUICK=1 XCOLL_TEST_SWEEP=0 SPEC_NPS="1 3" DROPIN_NPS="2 3" \
    make -C "$XCOLL_TOP/build" -j"$XCOLL_JOBS" distcheck || {
    # a failed distcheck leaves its tree behind, read-only, logs included
    for log in "$XCOLL_TOP"/build/xcoll-*/_build/sub/test-suite.log; do
        show_failures "$log"
    done
    die "make distcheck failed"
}
