#!/usr/bin/env bash
# demo.sh - from a fresh Debian 12 machine to xcoll running: installs what
# is missing, builds in build/, then runs xcoll-perf (AllReduce by xcoll
# beside MPI's own, 16 B to 16 MiB) and every example that runs on plain
# mpirun.
#
# Ranks: one per core (nproc), at least 2; XCOLL_DEMO_RANKS=N overrides.
# More ranks than cores would time the scheduler rather than xcoll: ranks
# that wait for each other also wait for a core.
set -euo pipefail
. "$(dirname "$0")/common.sh"

# The examples that check their own answers under plain mpirun at any rank
# count from 2 (run_mpi_tests.sh runs the same ones); allreduce_cuda needs
# a GPU and examples/torch needs torchrun.
DEMO_EXAMPLES="allreduce allgather alltoallv bcast_reduce reduce_scatter gather_scatter
               barrier send_recv overlap straggler"

cores=$(nproc 2>/dev/null || echo 1)
if [ -n "${XCOLL_DEMO_RANKS:-}" ]; then
    case $XCOLL_DEMO_RANKS in
    *[!0-9]* | 0* | 1) die "XCOLL_DEMO_RANKS=$XCOLL_DEMO_RANKS: expected a whole number of ranks, 2 or more" ;;
    esac
    ranks=$XCOLL_DEMO_RANKS
    why="XCOLL_DEMO_RANKS=$ranks (this machine has $cores cores)"
elif [ "$cores" -ge 2 ]; then
    ranks=$cores
    why="one per core (nproc = $cores; XCOLL_DEMO_RANKS=N to change)"
else
    ranks=2
    why="a collective needs 2, and this machine has 1 core, so they share it (XCOLL_DEMO_RANKS=N to change)"
fi

install_packages
generate
configure_in build
step "make -j$XCOLL_JOBS in build/"
make -C "$XCOLL_TOP/build" -j"$XCOLL_JOBS" || die "build failed"

mpirun="$(mpirun_of build) -np $ranks"
step "running on $ranks ranks: $why"

# -a 4: the median of the slowest rank's time, which one noisy iteration
# barely moves; --no-inplace keeps the table within 125 columns.
step "xcoll-perf: AllReduce, xcoll beside MPI_Allreduce"
$mpirun "$XCOLL_TOP/build/bin/xcoll-perf" -C allreduce --vs-mpi -b 16 -e 16M -f 4 -a 4 \
    --no-inplace || die "xcoll-perf failed"

for ex in $DEMO_EXAMPLES; do
    step "examples/$ex (examples/$ex.c says what it shows)"
    $mpirun "$XCOLL_TOP/build/examples/$ex" || die "examples/$ex failed"
done
