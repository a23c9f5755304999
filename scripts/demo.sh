#!/usr/bin/env bash
# demo.sh - from a fresh Debian 12 machine to xcoll running: installs what
# is missing, builds in build/, then runs on 4 ranks (oversubscribed on
# small machines) the benchmark, which prints AllReduce by xcoll beside
# MPI's own, and the AllReduce example.
set -euo pipefail
. "$(dirname "$0")/common.sh"

install_packages
generate
configure_in build
step "make -j$XCOLL_JOBS in build/"
make -C "$XCOLL_TOP/build" -j"$XCOLL_JOBS" || die "build failed"

mpirun=$(mpirun_of build)
step "xcoll-bench on 4 ranks: AllReduce, xcoll beside MPI"
$mpirun -np 4 "$XCOLL_TOP/build/bin/xcoll-bench" || die "xcoll-bench failed"
step "examples/allreduce on 4 ranks"
$mpirun -np 4 "$XCOLL_TOP/build/examples/allreduce" || die "examples/allreduce failed"
