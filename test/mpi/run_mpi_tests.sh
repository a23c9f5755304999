#!/bin/sh
# run_mpi_tests.sh - runs the MPI-launched tests at several rank counts.
#
# Used by `make check`; also runnable by hand from a build directory.
# Environment:
#   MPIRUN        launcher (default: mpirun)
#   MPIRUN_FLAGS  launcher flags (default: --allow-run-as-root --oversubscribe)
#   TEST_BINDIR   where the test binaries are (default: test/mpi under
#                 $top_builddir, else the directory of this script)
#   TEST_TIMEOUT  seconds per run (default 300)
#   XCOLL_TEST_QUICK=1  pass --quick to test_coll (no large counts)
#   XCOLL_TEST_SWEEP=0  skip the runs that force each algorithm in turn
# Prints one line per run with its time, then
#   "run_mpi_tests: N passed, M failed"
# and exits non-zero if any run failed.

MPIRUN=${MPIRUN:-mpirun}
MPIRUN_FLAGS=${MPIRUN_FLAGS:---allow-run-as-root --oversubscribe}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}

if [ -n "$TEST_BINDIR" ]; then
    bindir=$TEST_BINDIR
elif [ -n "$top_builddir" ] && [ -x "$top_builddir/test/mpi/test_coll" ]; then
    bindir=$top_builddir/test/mpi
elif [ -x "./test/mpi/test_coll" ]; then
    bindir=./test/mpi
else
    bindir=$(cd "$(dirname "$0")" && pwd)
fi

# More ranks than cores is the normal case here.
OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_rmaps_base_oversubscribe

coll_flags=
if [ "${XCOLL_TEST_QUICK:-0}" = 1 ]; then
    coll_flags=--quick
fi

label=   # set around a run to tell its log and report lines apart
logdir=$(mktemp -d "${TMPDIR:-/tmp}/xcoll-mpi-tests.XXXXXX") || exit 1
passed=0
failed=0
failed_runs=

now() { date +%s; }

# pass WHAT, fail WHAT RUN: a report line, counted; RUN is how the closing
# summary names the failed run
pass() {
    echo "run_mpi_tests: PASS $1"
    passed=$((passed + 1))
}
fail() {
    echo "run_mpi_tests: FAIL $1"
    failed=$((failed + 1))
    failed_runs="$failed_runs $2"
}

# run NAME NP [ARGS...]: one mpirun; its output goes to the terminal and
# its stderr also to $logdir/NAME.NP.err for the checks that need it.
run() {
    name=$1
    np=$2
    shift 2
    # a name with a slash is a path from the build's top (test/gpu/...)
    case $name in
    */*) bin=${top_builddir:-$bindir/../..}/$name ;;
    *) bin=$bindir/$name ;;
    esac
    err=$logdir/$(basename "$name")$label.$np.err
    if [ ! -x "$bin" ]; then
        fail "$bin: not found or not executable" "$name@$np"
        return 1
    fi
    start=$(now)
    # shellcheck disable=SC2086
    timeout "$TEST_TIMEOUT" $MPIRUN $MPIRUN_FLAGS -np "$np" "$bin" "$@" 2>"$err"
    rc=$?
    elapsed=$(($(now) - start))
    # Keep failure messages visible, trimmed so a flood stays readable: the
    # tests' own FAIL lines first, else whatever the run said on stderr.
    if [ -s "$err" ] && [ "$rc" -ne 0 ]; then
        if grep -q "FAIL" "$err"; then
            grep -m 40 "FAIL" "$err"
        else
            head -n 40 "$err"
        fi
    fi
    if [ "$rc" -eq 124 ]; then
        echo "run_mpi_tests: $name$label -np $np TIMED OUT after ${TEST_TIMEOUT} s"
    fi
    if [ "$rc" -eq 77 ] && [ -n "${skip_ok:-}" ]; then
        echo "run_mpi_tests: SKIP $name$label -np $np $* (exit 77)"
        rc=0
    elif [ "$rc" -eq 0 ]; then
        pass "$name$label -np $np $* (${elapsed} s)"
    else
        fail "$name$label -np $np $* (rc $rc, ${elapsed} s)" "$name$label@$np"
    fi
    return $rc
}

# The timeout test also checks that the library's error log names the rank
# that never arrived (the last one). Errors are logged at the default level.
run_timeout() {
    np=$1
    skipper=$((np - 1))
    saved_log=${XCOLL_LOG-__unset__}
    unset XCOLL_LOG XCOLL_TIMEOUT
    run test_timeout "$np"
    rc=$?
    if [ "$saved_log" != __unset__ ]; then
        XCOLL_LOG=$saved_log
        export XCOLL_LOG
    fi
    err=$logdir/test_timeout$label.$np.err
    if [ "$rc" -eq 0 ]; then
        if grep "timed out" "$err" | grep -q "rank $skipper\\b"; then
            pass "test_timeout -np $np log names rank $skipper"
        else
            fail "test_timeout -np $np: no 'timed out ... rank $skipper' line in stderr:" \
                "test_timeout-log@$np"
            head -n 20 "$err"
        fi
    fi
}

total_start=$(now)

# The transports on their own first: if one is broken, everything else is
# noise. UCX, then shared memory (the default within a node: messages of
# up to 8 KiB through the rings, longer ones read in one copy by CMA), then
# rings for messages of up to 64 MiB, CMA from 16 KiB, and no CMA (longer
# messages by UCX, as where CMA is not permitted).
if [ -x "$bindir/test_transport" ]; then
    for np in 2 4; do
        run test_transport $np -q
    done
    # TEST_SPLIT=1: long messages are read by CMA with split copies, so
    # test_transport checks that a sender writes its share and that a
    # receiver never needs it to
    export TEST_TRANSPORT=shm TEST_SPLIT=1
    label=.shm
    for np in 1 2 4; do
        run test_transport $np -q
    done
    export XCOLL_SHM_SPLIT_MIN=0 TEST_SPLIT=0
    label=.shm-nosplit
    run test_transport 2 -q
    unset XCOLL_SHM_SPLIT_MIN
    export XCOLL_SHM_MAX=67108864
    label=.shm-rings
    run test_transport 3 -q
    run test_coll 3 --quick
    export XCOLL_SHM_CMA_MIN=16384 TEST_SPLIT=1
    label=.shm-cma
    run test_transport 3 -q
    run test_coll 3 --quick
    unset XCOLL_SHM_MAX TEST_SPLIT
    export XCOLL_SHM_CMA_MIN=0
    label=.shm-nocma
    run test_coll 3 --quick
    unset XCOLL_SHM_CMA_MIN TEST_TRANSPORT
    label=
else
    echo "run_mpi_tests: SKIP test_transport (not built)"
fi

# Shared memory is all or nothing per communicator: one rank that refuses
# it (XCOLL_SHM=0) or cannot set it up (a /dev/shm too small for some
# segments) makes every rank use UCX, and says why once per rank.
# shm_case NAME WHY CMD...: runs CMD (test_coll on 3 ranks) with its
# stderr in the log, then checks that it passed, that the log says WHY (an
# extended regular expression) and that no rank used shared memory.
shm_case() {
    name=$1 why=$2
    shift 2
    err=$logdir/test_coll.$name.3.err
    XCOLL_LOG=info timeout "$TEST_TIMEOUT" "$@" > /dev/null 2> "$err"
    rc=$?
    if [ "$rc" -eq 0 ] && grep -Eq "shared memory off: ($why)" "$err" &&
        ! grep -q "shared memory: 3 ranks" "$err"; then
        pass "test_coll.$name -np 3: every rank fell back ($why)"
    elif [ "$rc" -ne 0 ]; then
        fail "test_coll.$name -np 3 (rc $rc)" "test_coll.$name@3"
        grep -m 20 "FAIL\|error" "$err"
    else
        fail "test_coll.$name -np 3: no 'shared memory off: ($why)' or a rank used it:" \
            "test_coll.$name@3"
        grep "shared memory" "$err" | head -n 10
    fi
}
# seccomp_case NAME NP WHAT GOOD BAD CMD...: CMD starts a rank under
# deny_cma; passes when it exits 0 with GOOD in its stderr and not BAD
# (BAD empty: no such check), skips where there are no seccomp filters.
seccomp_case() {
    name=$1 np=$2 what=$3 good=$4 bad=$5
    shift 5
    err=$logdir/$name.$np.err
    timeout "$TEST_TIMEOUT" "$@" > /dev/null 2> "$err"
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q "$good" "$err" && { [ -z "$bad" ] || ! grep -q "$bad" "$err"; }; then
        pass "$name -np $np: $what"
    elif [ "$rc" -eq 77 ] || grep -q "deny_cma: no seccomp" "$err"; then
        echo "run_mpi_tests: SKIP $name (no seccomp filters here)"
    else
        fail "$name -np $np (rc $rc):" "$name@$np"
        grep -m 20 "FAIL\|error\|warn\|single-copy\|CMA" "$err"
    fi
}
if [ -x "$bindir/test_coll" ]; then
    # shellcheck disable=SC2086
    shm_case shm-refused "rank 0 does not use it" \
        $MPIRUN $MPIRUN_FLAGS -np 1 env XCOLL_SHM=0 "$bindir/test_coll" --quick : \
        -np 2 "$bindir/test_coll" --quick
    # 256 KiB of /dev/shm holds one rank's segment (3 rings of 65 KiB), not
    # two: the first rank's fits, the others' do not. Needs root for a
    # private mount of a small tmpfs; Open MPI's and UCX's own shared
    # memory go to /tmp meanwhile.
    if [ "$(id -u)" = 0 ] && unshare -m true 2> /dev/null; then
        # shellcheck disable=SC2016,SC2086
        shm_case shm-full "rank [0-2] could not create its segment" \
            env OMPI_MCA_btl_vader_backing_directory=/tmp UCX_POSIX_DIR=/tmp \
            unshare -m sh -c 'mount -t tmpfs -o size=256k xcoll-test /dev/shm && exec "$@"' sh \
            $MPIRUN $MPIRUN_FLAGS -np 3 "$bindir/test_coll" --quick
    else
        echo "run_mpi_tests: SKIP test_coll.shm-full (needs root and unshare -m for a small /dev/shm)"
    fi
    # A rank that may not read its peers' memory (seccomp, as in some
    # containers): every rank agrees to go without single-copy reads, says
    # why, and is right. Long messages then go to UCX, which must not try
    # CMA either.
    # shellcheck disable=SC2086
    seccomp_case test_coll.cma-denied 3 "every rank went without CMA" \
        "no single-copy reads from rank .*Operation not permitted" "read in one copy (CMA)" \
        env XCOLL_LOG=info UCX_TLS=^cma $MPIRUN $MPIRUN_FLAGS -x UCX_TLS \
        -np 1 "$bindir/deny_cma" "$bindir/test_coll" --quick : -np 2 "$bindir/test_coll" --quick
    # A rank that may read its peers but not write into them: its split
    # copies fail over to the receivers, which read the pieces it could
    # not write; it says so once and offers no more. Every byte right.
    # shellcheck disable=SC2086
    seccomp_case test_transport.writes-denied 2 "the receivers read what it could not write" \
        "process_vm_writev failed (Operation not permitted): it reads the rest" "" \
        env XCOLL_LOG=warn TEST_TRANSPORT=shm UCX_TLS=^cma $MPIRUN $MPIRUN_FLAGS -x UCX_TLS \
        -np 1 "$bindir/deny_cma" --writes "$bindir/test_transport" -q : \
        -np 1 "$bindir/test_transport" -q
    # UCX alone within the node too, as between nodes
    export XCOLL_SHM=0
    label=.ucx
    for np in 2 4; do
        run test_coll $np --quick
    done
    run test_nonblocking 4
    unset XCOLL_SHM
    label=
fi
for np in 1 2 3 4 5 8; do
    run test_coll $np $coll_flags
done
# Every algorithm, forced through XCOLL_TUNE (the selector falls back to
# another algorithm only where the forced one declines the case). Sweep k
# forces each collective's k-th algorithm; the names are those of
# lib/coll/select.c, and an unknown name fails the run (the tuning string
# is rejected), which keeps this list honest. Moderate large count so the
# segmented paths run too.
sweep() {
    k=$1
    colls=$2
    tune=$3
    shift 3
    saved_tune=${XCOLL_TUNE-__unset__}
    XCOLL_TUNE=$tune
    export XCOLL_TUNE
    label=".algo$k"
    echo "run_mpi_tests: XCOLL_TUNE='$tune'"
    for np in "$@"; do
        run test_coll "$np" --large 100003 --coll "$colls"
    done
    label=
    if [ "$saved_tune" = __unset__ ]; then
        unset XCOLL_TUNE
    else
        XCOLL_TUNE=$saved_tune
    fi
}
# The hierarchical algorithms need more than one node: fake nodes of
# XCOLL_TOPO_RANKS_PER_NODE consecutive ranks (3 ranks at 2 per node, or 7
# at 3 per node, give an uneven last node).
if [ "${XCOLL_TEST_SWEEP:-1}" = 1 ]; then
    sweep 0 allreduce,bcast,reduce,allgather,reduce_scatter,alltoall,gather,scatter,barrier \
        "allreduce:0-inf:recdbl;bcast:0-inf:binomial;reduce:0-inf:binomial;allgather:0-inf:ring;reduce_scatter:0-inf:ring;alltoall:0-inf:pairwise;gather:0-inf:binomial;scatter:0-inf:binomial;barrier:0-inf:dissemination" \
        2 3 4 7 8
    sweep 1 allreduce,bcast,reduce,allgather,reduce_scatter,alltoall,gather,scatter,barrier \
        "allreduce:0-inf:rabenseifner;bcast:0-inf:chain;reduce:0-inf:rsg;allgather:0-inf:recdbl;reduce_scatter:0-inf:rechalving;alltoall:0-inf:bruck;gather:0-inf:linear;scatter:0-inf:linear;barrier:0-inf:tree" \
        2 3 4 7 8
    XCOLL_TOPO_RANKS_PER_NODE=2
    export XCOLL_TOPO_RANKS_PER_NODE
    sweep 2 allreduce,bcast,allgather,alltoall \
        "allreduce:0-inf:ring;bcast:0-inf:scatter_allgather;allgather:0-inf:bruck;alltoall:0-inf:hier" \
        2 3 4 7 8
    sweep 3 allreduce,bcast,reduce,allgather,reduce_scatter,barrier \
        "allreduce:0-inf:reduce_bcast;bcast:0-inf:dbtree;reduce:0-inf:linear;allgather:0-inf:direct;reduce_scatter:0-inf:direct;barrier:0-inf:direct" \
        2 3 4 7 8
    sweep 4 allreduce,bcast \
        "allreduce:0-inf:dbtree;bcast:0-inf:hier" \
        2 3 4 7 8
    sweep 5 allreduce \
        "allreduce:0-inf:hier" \
        3 4 7 8
    sweep 7 allreduce,bcast \
        "allreduce:0-inf:direct;bcast:0-inf:linear" \
        2 3 4 7 8
    # every rank crossing nodes: 2 and 4 nodes of 2 (it declines at 3 and 7,
    # where the last node is smaller)
    sweep 8 allreduce \
        "allreduce:0-inf:hier2d" \
        4 8
    XCOLL_TOPO_RANKS_PER_NODE=3
    sweep 6 allreduce,bcast,alltoall \
        "allreduce:0-inf:hier;bcast:0-inf:hier;alltoall:0-inf:hier" \
        4 5 7
    sweep 9 allreduce \
        "allreduce:0-inf:hier2d" \
        6
    # Prove the hierarchical modules served those calls rather than
    # declining to a flat algorithm: the info log names the algorithm.
    XCOLL_TUNE="allreduce:0-inf:hier;bcast:0-inf:hier;alltoall:0-inf:hier"
    XCOLL_LOG=info
    export XCOLL_TUNE XCOLL_LOG
    label=".hierlog"
    run test_coll 5 --quick --coll allreduce,bcast,alltoall
    XCOLL_TUNE="allreduce:0-inf:hier2d"
    label=".hier2dlog"
    run test_coll 6 --quick --coll allreduce
    label=
    unset XCOLL_TUNE XCOLL_LOG XCOLL_TOPO_RANKS_PER_NODE
    # ran_algo COLL ALGO RUN WHERE: the info log of RUN says COLL ran ALGO
    ran_algo() {
        if grep -q "$1 seq [0-9]*: $2," "$logdir/test_coll.$3.err"; then
            pass "$1 ran the $2 algorithm on $4"
        else
            fail "$1: no '$1 seq N: $2,' line in the info log" "$3-$1"
            grep -m 5 "$1 seq" "$logdir/test_coll.$3.err"
        fi
    }
    for c in allreduce bcast alltoall; do
        ran_algo "$c" hier hierlog.5 "5 ranks in nodes of 3"
    done
    ran_algo allreduce hier2d hier2dlog.6 "6 ranks in nodes of 3"
fi

# UCX's TCP segments (tcp_segments in lib/ucx/ucx_transport.c): set where
# UCX opens TCP and the user set neither size; never where UCX does not
# open TCP, where it would warn on every rank about a setting no transport
# took. UCX's debug log shows what its TCP transport took (and logs to
# stdout unless told otherwise).
# log_has RUN PATTERN COUNT WHAT: RUN's log ($logdir/RUN.err, RUN as
# PROGRAM.LABEL.NP) has COUNT lines matching PATTERN (COUNT "some": at
# least one)
log_has() {
    n=$(grep -c -- "$2" "$logdir/$1.err")
    if [ "$n" = "$3" ] || { [ "$3" = some ] && [ "$n" -gt 0 ]; }; then
        pass "$4"
    else
        fail "$4: $n lines match '$2' in the log of $1, not $3" "$1"
        grep -m 5 -- "$2" "$logdir/$1.err"
    fi
}
unset UCX_TCP_TX_SEG_SIZE UCX_TCP_RX_SEG_SIZE
XCOLL_LOG=debug UCX_LOG_FILE=stderr UCX_LOG_LEVEL=debug UCX_TLS=tcp,self
export XCOLL_LOG UCX_LOG_FILE UCX_LOG_LEVEL UCX_TLS
label=.tcpseg
run test_comms 2
UCX_TCP_RX_SEG_SIZE=32K
export UCX_TCP_RX_SEG_SIZE
label=.tcpuser
run test_comms 2
unset UCX_TCP_RX_SEG_SIZE UCX_LOG_LEVEL
UCX_TLS=sm,self
label=.smself
run test_comms 2
label=
unset XCOLL_LOG UCX_LOG_FILE UCX_TLS
log_has test_comms.tcpseg.2 "debug: UCX: UCX_TCP_TX_SEG_SIZE=64K, UCX_TCP_RX_SEG_SIZE=256K" 2 \
    "UCX over TCP: both ranks ask for 64 KiB sends and 256 KiB reads"
log_has test_comms.tcpseg.2 "apply UCT configuration \(TCP_\)\{0,1\}TX_SEG_SIZE=64K" some \
    "UCX over TCP: UCX's TCP transport took them"
log_has test_comms.tcpseg.2 "invalid configuration" 0 "UCX over TCP: no warning from UCX"
log_has test_comms.tcpuser.2 "the TCP segment sizes are the user's" 2 \
    "UCX over TCP: the user's UCX_TCP_RX_SEG_SIZE=32K leaves both sizes to UCX"
log_has test_comms.tcpuser.2 "apply UCT configuration" 0 "UCX over TCP: nothing added to the user's setting"
log_has test_comms.smself.2 "SEG_SIZE" 0 "UCX_TLS=sm,self: no TCP settings"
log_has test_comms.smself.2 "invalid configuration" 0 "UCX_TLS=sm,self: no warning from UCX"

for np in 2 3 4 8; do
    run test_nonblocking $np
done
for np in 2 3 4 8; do
    run test_comms $np
done
for np in 1 3; do
    run test_badinput $np
done
# xcoll_start: layouts on every collective, the fallback ("mpi"), caller's rules
for np in 1 2 3 4; do
    run test_start $np
done
# Repeated calls that change one thing (operator, type, root, in place,
# layout, a bad argument): each result is its own call's
for np in 1 2 3 4; do
    run test_repeat $np
done
# The in-place layouts are taken as such (xcoll.h): allgather's sendbuf ==
# recvbuf + rank*count, reduce_scatter's recvbuf == sendbuf + rank*count
# (NCCL) and XCOLL_IN_PLACE. Results cannot tell (copying a block onto
# itself is right too, only slower), so each call's info line is checked:
# ", in place" on exactly the calls seq_layouts makes in place, on every
# rank, first calls and repeats (the express lane) alike.
inplace_signature() { # FILE RANK: one mark per call, + in place, - not
    awk -v r="[xcoll r$2]" '
        index($0, r) == 1 && $4 ~ /^(reduce_scatter|allgather|alltoall)$/ && $5 == "seq" {
            if ($4 != last) { out = out (out == "" ? "" : " ") $4 ":"; last = $4 }
            out = out (index($0, ", in place") ? "+" : "-")
        }
        END { print out }' "$1"
}
for np in 2 3; do
    err=$logdir/test_repeat.layouts.$np.err
    # shellcheck disable=SC2086
    XCOLL_LOG=info timeout "$TEST_TIMEOUT" $MPIRUN $MPIRUN_FLAGS -np "$np" \
        "$bindir/test_repeat" layouts > /dev/null 2> "$err"
    rc=$?
    want="reduce_scatter:-++--++- allgather:-+--+- alltoall:-+-+"
    bad=
    for r in $(seq 0 $((np - 1))); do
        got=$(inplace_signature "$err" "$r")
        [ "$got" = "$want" ] || bad="$bad rank $r: '$got';"
    done
    if [ "$rc" -eq 0 ] && [ -z "$bad" ]; then
        pass "test_repeat.layouts -np $np: in place as laid out"
    else
        fail "test_repeat.layouts -np $np (rc $rc): want '$want' on every rank;$bad" \
            "test_repeat.layouts@$np"
    fi
done
# Point-to-point order where a message already waits as a receive is
# posted: within shared memory, and through UCX alone
for np in 2 3; do
    run test_order $np
done
export XCOLL_SHM=0
label=.ucx
run test_order 2
unset XCOLL_SHM
label=
# The v-variants against MPI's own: every default algorithm at 1-8 ranks,
# the others forced, and UCX alone within the node.
for np in 1 2 3 4 8; do
    run test_vcoll $np $coll_flags
done
XCOLL_TUNE="allgatherv:0-inf:ring;alltoallv:0-inf:scattered"
export XCOLL_TUNE
label=.ring-scattered
for np in 3 5; do
    run test_vcoll $np --quick
done
XCOLL_TUNE="allgatherv:0-inf:recdbl"
label=.recdbl
for np in 6 7; do
    run test_vcoll $np --quick
done
unset XCOLL_TUNE
export XCOLL_SHM=0
label=.ucx
run test_vcoll 4 --quick
unset XCOLL_SHM
label=
for np in 3 4; do
    run_timeout $np
done
# The census after a timeout: every rank names the one that never came
# (each rank checks its own log); over UCX alone too.
for np in 3 4 5; do
    run test_census $np
done
export XCOLL_SHM=0
label=.ucx
run test_census 4
unset XCOLL_SHM
label=
# The progress thread: completion without the caller, threads posting at
# once; then the suite's collectives, nonblocking calls, v-variants and the
# timeout with every communicator asking for it.
for np in 1 2 3 4; do
    run test_progress $np --quick
done
export XCOLL_PROGRESS_THREAD=1
label=.thread
run test_coll 3 --quick
run test_nonblocking 4
run test_vcoll 3 --quick
run_timeout 3
run test_census 4
unset XCOLL_PROGRESS_THREAD
label=
# The drainer on one node: where UCX carries the ranks' traffic over TCP
# (no shared memory), a broadcast root running ahead of late receivers
# into 16 KiB sockets leaves the tail of a message in UCX's buffer, which
# only its progress writes out (test_handoff --stream; without the
# drainer, XCOLL_DRAIN=0, the round of 8 broadcasts hangs every time; a
# kernel whose loopback never fills the sockets would pass without it, so
# the log must also say that every rank's communicator has the drainer)
if [ -x "${top_builddir:-$bindir/../..}/test/cluster/test_handoff" ]; then
    export XCOLL_SHM=0 UCX_TLS=tcp,self UCX_TCP_SNDBUF=16k UCX_TCP_RCVBUF=16k XCOLL_LOG=info
    label=.tcp-drain
    run test/cluster/test_handoff 4 --rounds 20 --block 8192 --stream 20 --lag 0.2 --timeout 5 &&
        log_has test_handoff.tcp-drain.4 "communicator 1 created: .*, drainer" 4 \
            "test_handoff.tcp-drain: every rank's communicator has the drainer"
    unset XCOLL_SHM UCX_TLS UCX_TCP_SNDBUF UCX_TCP_RCVBUF XCOLL_LOG
    label=
else
    echo "run_mpi_tests: SKIP test_handoff.tcp-drain (test/cluster/test_handoff not built)"
fi
# The call check (XCOLL_CHECK): mismatched calls fail on every rank, the
# communicator goes on; and the suite's matching calls, every collective,
# nonblocking and v-variants, are never refused with it on.
for np in 1 2 3 4; do
    run test_check $np
done
export XCOLL_CHECK=1
label=.check
run test_coll 3 --quick
run test_nonblocking 4
run test_vcoll 4 --quick
unset XCOLL_CHECK
label=
# The examples check their own answers (exit status).
for np in 2 3 4; do
    run examples/allreduce $np
    run examples/allgather $np
    run examples/alltoallv $np
    run examples/bcast_reduce $np
    run examples/reduce_scatter $np
    run examples/gather_scatter $np
    run examples/barrier $np
done
run examples/overlap 2
# (these wait out a timeout on purpose: 0.5 s, 2 s and 1 s)
run examples/straggler 3
run examples/straggler 4
run examples/mismatch 3
run examples/mismatch 4
run examples/send_recv 3
# Device buffers. On the emulated GPU (device memory the CPU cannot touch,
# GPU work that runs late) everywhere; on a real device when there is one,
# else that run says "skipped: no CUDA device" (exit 77) and counts as such.
for np in 1 2 3 4; do
    run test/gpu/test_gpu_coll $np --emulate $coll_flags
done
skip_ok=1
run test/gpu/test_gpu_coll 2 $coll_flags
skip_ok=

echo "run_mpi_tests: $passed passed, $failed failed ($(($(now) - total_start)) s)"
if [ "$failed" -ne 0 ]; then
    echo "run_mpi_tests: failed runs:$failed_runs (stderr kept in $logdir)"
    exit 1
fi
rm -rf "$logdir"
exit 0
