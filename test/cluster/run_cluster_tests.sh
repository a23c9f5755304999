#!/bin/sh
# run_cluster_tests.sh - the MPI tests across nodes: clusters of Linux
# namespaces on this machine (scripts/cluster.sh), where Open MPI, UCX and
# xcoll see separate hosts joined by TCP.
#
#   two      2 nodes x 2 ranks: the collectives (default choice, then the
#            hierarchical algorithms forced), nonblocking calls, split
#            communicators, v-variants, a timeout, ranks that leave
#            (test_leave), ranks that go from xcoll straight into MPI
#            (test_handoff), the drop-ins; the logs
#            must show the topology found from the real host names (not
#            XCOLL_TOPO_RANKS_PER_NODE), UCX on TCP to the other node and
#            xcoll's shared memory within one
#   three    3 nodes x (2, 2, 1) ranks, and ranks dealt round robin over
#            the nodes (--map-by node): the collectives, hierarchical ones
#            forced
#   loss     3 nodes x 2 ranks; node 2 is killed while the ranks run
#            collectives: the others fail within XCOLL_TIMEOUT (3 s),
#            naming ranks 4 and 5 as lost, and destroy their
#            communicators; nothing is left behind (processes, namespaces,
#            shared memory)
#   loss0    the same without a timeout: the others must still fail (5 s)
#   shaped   2 nodes x 2 ranks on 1 Gbit/s links with 100 us of delay: the
#            large cases, right and within the suite's timeout
#
# Used by `make check` (needs root for the namespaces: otherwise every part
# SKIPs, exit 77); by hand from a build directory, with the parts to run as
# arguments (or CLUSTER_TEST_PARTS). Prints a line per run, then "run_cluster_tests: N passed, M
# failed". Environment: top_builddir, top_srcdir (make check sets them),
# TEST_TIMEOUT (seconds per run, default 300).

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
cluster=$top_srcdir/scripts/cluster.sh
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
bindir=$top_builddir/test/mpi
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

# --- inside a cluster: node 0, with $XCOLL_CLUSTER_MPIRUN ------------------------
# Each run prints "PASS ..." or "FAIL ..." lines; the outer part counts them.

logdir=${XCOLL_CLUSTER_LOGDIR:-}

pass() { echo "run_cluster_tests: PASS $*"; }
fail() { echo "run_cluster_tests: FAIL $*"; }

# snapshot FILE: where every test process of the cluster is, from outside
# it (kernel state only: a debugger would stop them). Taken when a rank
# times out, while the ranks it waits for are still held: a stall seen
# under load (a remote rank stuck outside xcoll for the whole timeout,
# released when the others gave up) has not been caught any other way.
snapshot() {
    {
        echo "snapshot at $(date +%T)"
        n=0
        while [ "$n" -lt "${XCOLL_CLUSTER_NODES:-0}" ]; do
            for p in $("$XCOLL_CLUSTER_PS" $n 2> /dev/null); do
                c=$(cat "/proc/$p/comm" 2> /dev/null)
                case $c in test_* | orted | mpirun) ;; *) continue ;; esac
                for t in /proc/$p/task/*; do
                    echo "node $n pid $p ($c) task ${t##*/} ($(cat "$t/comm" 2> /dev/null)):" \
                        "state $(cut -d' ' -f3 "$t/stat" 2> /dev/null)," \
                        "syscall $(cat "$t/syscall" 2> /dev/null)," \
                        "wchan $(cat "$t/wchan" 2> /dev/null)"
                done
                head -n 6 "/proc/$p/stack" 2> /dev/null | sed 's/^/    /'
            done
            n=$((n + 1))
        done
    } > "$1" 2>&1
}

# mpi NAME NP PROGRAM ARGS...: one job; stderr kept in $logdir/NAME.err
mpi() {
    name=$1 np=$2
    shift 2
    start=$(date +%s)
    timeout "$TEST_TIMEOUT" "$XCOLL_CLUSTER_MPIRUN" -np "$np" "$@" > "$logdir/$name.out" \
        2> "$logdir/$name.err" &
    job=$!
    # the first timeout's snapshot (test_timeout's and test_leave's are
    # expected: not watched)
    watch=1
    case $name in timeout.* | leave.*) watch=0 ;; esac
    i=0
    while [ $i -lt $((TEST_TIMEOUT * 2 + 40)) ] && kill -0 $job 2> /dev/null; do
        sleep 0.5
        i=$((i + 1))
        if [ $watch = 1 ] && [ ! -e "$logdir/$name.stall" ] &&
            grep -q -m 1 "timed out after" "$logdir/$name.err"; then
            snapshot "$logdir/$name.stall"
        fi
    done
    wait $job
    rc=$?
    took=$(($(date +%s) - start))
    if [ "$rc" -eq 0 ]; then
        pass "$name ($np ranks, ${took} s)"
        return 0
    fi
    fail "$name ($np ranks, rc $rc, ${took} s):"
    grep -m 20 "FAIL\|error" "$logdir/$name.err" "$logdir/$name.out"
    if [ -s "$logdir/$name.stall" ]; then
        echo "run_cluster_tests: $name: where the test processes were when the first rank timed out:"
        head -n 100 "$logdir/$name.stall"
    fi
    return 1
}

# expect_each NAME NP REGEX WHAT: every rank's log ("[xcoll rN] ...") of
# run NAME has a line matching REGEX
expect_each() {
    name=$1 np=$2 re=$3 what=$4
    r=0
    while [ "$r" -lt "$np" ]; do
        if ! grep "^\[xcoll r$r\] " "$logdir/$name.err" | grep -Eq "$re"; then
            fail "$name: rank $r's log does not say $what (no line matching '$re')"
            grep "^\[xcoll r$r\] " "$logdir/$name.err" | head -n 5
            return 1
        fi
        r=$((r + 1))
    done
    pass "$name: every rank's log says $what"
}

hier_tune="allreduce:0-inf:hier;bcast:0-inf:hier;alltoall:0-inf:hier"

# hier_run NAME NP: the hierarchical algorithms forced, and proven to run
hier_run() {
    name=$1 np=$2
    XCOLL_TUNE=$hier_tune XCOLL_LOG=info mpi "$name" "$np" -x XCOLL_TUNE -x XCOLL_LOG \
        "$bindir/test_coll" --quick --coll allreduce,bcast,alltoall || return
    for c in allreduce bcast alltoall; do
        expect_each "$name" "$np" "$c seq [0-9]+: hier," "that $c ran the hier algorithm"
    done
}

# hier2d_run NAME NP: allreduce with every rank crossing nodes (nodes of
# equal size), proven to run
hier2d_run() {
    name=$1 np=$2
    XCOLL_TUNE="allreduce:0-inf:hier2d" XCOLL_LOG=info mpi "$name" "$np" -x XCOLL_TUNE -x XCOLL_LOG \
        "$bindir/test_coll" --quick --coll allreduce || return
    expect_each "$name" "$np" "allreduce seq [0-9]+: hier2d," "that allreduce ran the hier2d algorithm"
}

inside_two() {
    XCOLL_LOG=info mpi coll.2x2 4 -x XCOLL_LOG "$bindir/test_coll" --quick &&
        {
            expect_each coll.2x2 4 "topology: 4 ranks on 2 nodes \(at most 2 per node\)$" \
                "4 ranks on 2 nodes, found from the host names"
            expect_each coll.2x2 4 "UCX: to ranks on other nodes tcp/" "UCX reaches the other node by TCP"
            expect_each coll.2x2 4 "shared memory: 2 ranks on this node" \
                "xcoll's shared memory serves the 2 ranks of its node"
        }
    # xcoll-info on a node sees the node's network device, not the loopback
    info=$("$top_builddir/bin/xcoll-info" -n 2 2>&1)
    if echo "$info" | grep -q "^  Between nodes: UCX over .*tcp/eth0"; then
        pass "xcoll-info on node 0 says UCX reaches other nodes over tcp/eth0"
    else
        fail "xcoll-info on node 0 does not name tcp/eth0 between nodes:"
        echo "$info" | sed -n '3,8p'
    fi
    # UCX's TCP segments between nodes, taken by UCX's TCP transport (it
    # warns about a setting that no transport took)
    if mpi tcpseg.2x2 4 -x XCOLL_LOG=debug -x UCX_LOG_FILE=stderr "$bindir/test_comms"; then
        expect_each tcpseg.2x2 4 "UCX: UCX_TCP_TX_SEG_SIZE=64K" "that UCX's TCP sends 64 KiB segments"
        if grep -q "invalid configuration" "$logdir/tcpseg.2x2.err"; then
            fail "tcpseg.2x2: UCX did not take a setting:"
            grep -m 4 "invalid configuration" "$logdir/tcpseg.2x2.err"
        else
            pass "tcpseg.2x2: UCX took the TCP settings (no warning)"
        fi
    fi
    hier_run hier.2x2 4
    hier2d_run hier2d.2x2 4
    mpi nonblocking.2x2 4 "$bindir/test_nonblocking"
    # a wait that depends on UCX and on shared memory sleeps on both: UCX's
    # event fd, and a doorbell that the node's peers ring (test_progress:
    # 20 rounds of a local peer's send 20 ms late, by the caller, then by
    # the progress thread; the receivers are each node's first rank, 0 and
    # 2, as ranks fill the nodes in order). A bell that never rang costs
    # time only, so it shows here and nowhere else: the counts each
    # receiver logs as its communicators go (running totals; the first
    # communicator is the caller's, the second the thread's). A quiet
    # machine counts 18-23 of 20 each (a sleep may end twice a round);
    # with another job on the cores one run counted 7 in the thread, as a
    # receiver that is not asleep when the message comes needs no bell;
    # a bell that never rings counts 0: at least 5 each.
    if XCOLL_LOG=debug mpi progress.2x2 4 -x XCOLL_LOG "$bindir/test_progress" --quick; then
        for r in 0 2; do
            counts=$(grep "^\[xcoll r$r\] debug: shared memory: [0-9]* of [0-9]* sleeps" \
                "$logdir/progress.2x2.err" | head -n 2 | sed 's/.*memory: \([0-9]*\) of.*/\1/')
            n1=$(echo "$counts" | sed -n 1p) n2=$(echo "$counts" | sed -n 2p)
            if [ -z "$n2" ]; then
                fail "progress.2x2: rank $r logged no sleeps on its doorbell for two communicators" \
                    "(doorbells off? see $logdir/progress.2x2.err)"
            elif [ "$n1" -ge 5 ] && [ $((n2 - n1)) -ge 5 ]; then
                pass "progress.2x2: rank $r's sleeps for its local peer ended by the doorbell" \
                    "($n1 times waiting itself, $((n2 - n1)) in the progress thread)"
            else
                fail "progress.2x2: rank $r's sleeps ended by the doorbell $n1 times waiting itself," \
                    "$((n2 - n1)) in the progress thread: not >= 5 each for 20 late sends"
            fi
        done
    fi
    mpi comms.2x2 4 "$bindir/test_comms"
    mpi vcoll.2x2 4 "$bindir/test_vcoll" --quick
    # the rank that skips a collective (the last) is on the other node
    if mpi timeout.2x2 4 "$bindir/test_timeout"; then
        if grep "timed out" "$logdir/timeout.2x2.err" | grep -q "rank 3\\b"; then
            pass "timeout.2x2: the log names rank 3, the one on node 1 that skipped"
        else
            fail "timeout.2x2: no 'timed out ... rank 3' line"
        fi
    fi
    # from xcoll straight into MPI, round after round: nothing in xcoll may
    # wait for a rank that has gone back to MPI (the UCX flush did)
    mpi handoff.2x2 4 "$top_builddir/test/cluster/test_handoff" --rounds 300 --timeout 10
    # and a root that runs ahead of its receivers, into sockets of 16 KiB:
    # UCX keeps the tail of the message that no longer fits and writes it
    # only when progressed again (the drainer does; without it,
    # XCOLL_DRAIN=0, the round of 8 broadcasts hung here, every run)
    UCX_TCP_SNDBUF=16k UCX_TCP_RCVBUF=16k mpi handoff.stream.2x2 4 -x UCX_TCP_SNDBUF \
        -x UCX_TCP_RCVBUF "$top_builddir/test/cluster/test_handoff" --rounds 40 --block 8192 \
        --stream 20 --lag 0.2 --timeout 5
    # ranks that destroy the communicator and leave: no loss to a gather
    # that has their data (it still waits for a late rank), with every pair
    # connected before or only the gather's; a loss to one that awaits it
    for run in finished finished.nowarmup early; do
        leftdir=$logdir/leave.$run
        mkdir -p "$leftdir"
        mode=${run%.nowarmup}
        opt=
        [ "$run" = "$mode" ] || opt=--no-warmup
        XCOLL_LOG=debug mpi leave.$run.2x2 4 -x XCOLL_LOG "$top_builddir/test/cluster/test_leave" \
            --mode "$mode" --dir "$leftdir" --timeout 4 $opt
    done
    for run in finished finished.nowarmup; do
        if grep -q "lost the connection" "$logdir/leave.$run.2x2.err"; then
            fail "leave.$run.2x2: a rank took the ranks that left for lost:"
            grep -m 4 "lost the connection" "$logdir/leave.$run.2x2.err"
        elif ! grep "^\[xcoll r0\] " "$logdir/leave.$run.2x2.err" | grep -q "said goodbye and closed"; then
            fail "leave.$run.2x2: rank 0 never saw a connection of a rank that left close"
        else
            pass "leave.$run.2x2: rank 0 saw the leavers' connections close, and nobody took them for lost"
        fi
    done
    if grep "^\[xcoll r0\] error" "$logdir/leave.early.2x2.err" | grep -q "said goodbye"; then
        pass "leave.early.2x2: the failure says the awaited ranks said goodbye"
    else
        fail "leave.early.2x2: rank 0's error does not say the awaited ranks said goodbye:"
        grep -m 6 "xcoll r0\] error" "$logdir/leave.early.2x2.err"
    fi
    # the drop-ins (the Open MPI component and the PMPI library) across
    # nodes: what crosses them (results, the served forms, the built-in
    # rules mixing xcoll's and MPI's traffic); the MCA parameters and
    # MPICH are checked on one node (run_dropin_tests.sh in the suite)
    if [ -x "$top_builddir/test/dropin/dropin_test" ]; then
        start=$(date +%s)
        if MPIRUN=$XCOLL_CLUSTER_MPIRUN MPIRUN_FLAGS= DROPIN_NPS="4" MPICH_MPIEXEC= \
            DROPIN_PARTS="results served rules" \
            timeout $((TEST_TIMEOUT * 3)) sh "$top_srcdir/test/dropin/run_dropin_tests.sh" \
            > "$logdir/dropin.out" 2>&1; then
            pass "dropin.2x2: run_dropin_tests.sh at 4 ranks on 2 nodes ($(grep -c '^PASS' "$logdir/dropin.out") checks, $(($(date +%s) - start)) s)"
        else
            fail "dropin.2x2: run_dropin_tests.sh at 4 ranks on 2 nodes:"
            grep -m 20 "FAIL\|SKIP" "$logdir/dropin.out"
        fi
    fi
}

inside_three() {
    XCOLL_LOG=info mpi coll.3x221 5 -x XCOLL_LOG "$bindir/test_coll" --quick &&
        expect_each coll.3x221 5 "topology: 5 ranks on 3 nodes \(at most 2 per node\)$" \
            "5 ranks on 3 nodes"
    hier_run hier.3x221 5
    mpi nonblocking.3x221 5 "$bindir/test_nonblocking"
}

inside_roundrobin() {
    # ranks 0,3 / 1,4 / 2,5 share nodes: no node's ranks are consecutive
    hier_run hier.3x2.bynode 6
    hier2d_run hier2d.3x2.bynode 6
}

# the node-loss run: NAME TIMEOUT LIMIT
loss_run() {
    name=$1 tmo=$2 limit=$3
    out=$logdir/$name.out err=$logdir/$name.err
    # recovery on: mpirun must not kill the survivors when a node goes
    "$XCOLL_CLUSTER_MPIRUN" --mca orte_enable_recovery 1 --mca orte_abort_on_non_zero_status 0 \
        -np 6 "$top_builddir/test/cluster/test_nodeloss" --timeout "$tmo" --limit "$limit" \
        --linger $((limit + 1)) > "$out" 2> "$err" &
    job=$!
    i=0
    while [ $i -lt 600 ] && ! grep -q "test_nodeloss: ready" "$out" 2> /dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    if ! grep -q "test_nodeloss: ready" "$out"; then
        fail "$name: the job never got going:"
        head -n 20 "$out" "$err"
        kill -9 $job 2> /dev/null
        return 1
    fi
    "$XCOLL_CLUSTER_KILL" 2
    # the four survivors report, then mpirun (which waits for the lost
    # node's daemon forever, with recovery on) is stopped
    i=0
    while [ $i -lt $(((limit * 2 + 30) * 10)) ] && [ "$(grep -c 'destroy returned' "$out")" -lt 4 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    kill -TERM $job 2> /dev/null
    i=0
    while [ $i -lt 100 ] && kill -0 $job 2> /dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    kill -9 $job 2> /dev/null
    wait $job 2> /dev/null
    ok=1
    if grep -q "FAIL" "$out" "$err"; then
        fail "$name:"
        grep -h "FAIL" "$out" "$err" | head -n 10
        ok=0
    fi
    for r in 0 1 2 3; do
        line=$(grep "rank $r: .* failed after" "$out")
        if [ -z "$line" ] || ! grep -q "rank $r: destroy returned success" "$out"; then
            fail "$name: rank $r did not fail and destroy its communicator:"
            grep "rank $r" "$out"
            ok=0
            continue
        fi
        # its log names a rank of node 2 as lost, and no survivor
        log=$(grep "^\[xcoll r$r\] " "$err")
        if ! echo "$log" | grep -Eq "rank [45] is lost|ranks 4,5 are lost"; then
            fail "$name: rank $r's log does not name rank 4 or 5 as lost:"
            echo "$log" | head -n 8
            ok=0
        elif echo "$log" | grep -Eq "rank [0-3] is lost"; then
            fail "$name: rank $r's log calls a surviving rank lost:"
            echo "$log" | grep -E "rank [0-3] is lost" | head -n 3
            ok=0
        fi
    done
    [ $ok = 1 ] && pass "$name: ranks 0-3 failed ($(grep -o 'failed after [0-9.]* s' "$out" | tr '\n' ' ' | sed 's/failed after //g')within $limit s), named the lost ranks, destroyed their communicators"
    # nothing of the job left on the nodes that stayed, nor on node 2
    for n in 0 1 2; do
        left=
        for p in $("$XCOLL_CLUSTER_PS" $n); do
            c=$(cat "/proc/$p/comm" 2> /dev/null)
            case $c in test_nodeloss | orted | mpirun) left="$left $p($c)" ;; esac
        done
        if [ -n "$left" ]; then
            fail "$name: processes left on node $n:$left"
            kill -9 $(echo "$left" | sed 's/([a-z_]*)//g') 2> /dev/null
        fi
    done
    # and no shared-memory segment of xcoll's in the surviving nodes' /dev/shm
    for n in 0 1; do
        segs=$("$XCOLL_CLUSTER_SHM" $n | grep -c '^xcoll-')
        [ "$segs" -eq 0 ] || fail "$name: $segs xcoll segments left in node $n's /dev/shm"
    done
}

# a node can be lost once: a cluster per run
inside_loss() { loss_run loss.timeout3 3 3; }
inside_loss0() { loss_run loss.notimeout 0 5; }

inside_shaped() {
    # the large cases (about 1 MiB) over a slow link; the timeout would
    # fire if a transfer stalled
    if tc qdisc show dev eth0 | grep -Eq 'rate 1Gbit|rate 1000Mbit'; then
        echo "run_cluster_tests: PASS shaped: node 0's link is limited to 1 Gbit/s"
    else
        echo "run_cluster_tests: FAIL shaped: node 0's link is not shaped: $(tc qdisc show dev eth0)"
    fi
    XCOLL_TIMEOUT=60 mpi coll.shaped 4 -x XCOLL_TIMEOUT "$bindir/test_coll" --large 262147 \
        --coll allreduce,bcast,allgather,reduce_scatter,alltoall
}

if [ "${1:-}" = --inside ]; then
    echo "$XCOLL_CLUSTER_ID" > "$logdir/id.$2"
    "inside_$2"
    exit 0
fi

# --- outside: build each cluster, run its part, count ----------------------------
if [ ! -x "$bindir/test_coll" ] || [ ! -x "$top_builddir/test/cluster/test_nodeloss" ] ||
    [ ! -x "$top_builddir/test/cluster/test_leave" ] ||
    [ ! -x "$top_builddir/test/cluster/test_handoff" ]; then
    echo "run_cluster_tests: SKIP: the MPI tests are not built"
    exit 77
fi
why=$("$cluster" check 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "run_cluster_tests: SKIP: $why"
    exit 77
fi
# the parts: the arguments, else CLUSTER_TEST_PARTS, else all; a quick
# suite (XCOLL_TEST_QUICK=1, as in distcheck) runs the node loss only
all_parts="two three roundrobin loss loss0 shaped"
[ "${XCOLL_TEST_QUICK:-0}" = 1 ] && all_parts="loss"
parts=${*:-${CLUSTER_TEST_PARTS:-$all_parts}}
logdir=$(mktemp -d "${TMPDIR:-/tmp}/xcoll-cluster-tests.XXXXXX") || exit 1
report=$logdir/report
: > "$report"
total_start=$(date +%s)

# part NAME CLUSTER-OPTIONS...: the part inside a cluster of its own
part() {
    name=$1
    shift
    echo "run_cluster_tests: $name: cluster.sh $*"
    XCOLL_CLUSTER_LOGDIR=$logdir top_builddir=$(cd "$top_builddir" && pwd) top_srcdir=$top_srcdir \
        "$cluster" exec --timeout $((TEST_TIMEOUT * 4)) "$@" -- sh "$self" --inside "$name" \
        2>&1 | tee -a "$report"
    # the cluster is gone: its namespaces and files too
    id=$(cat "$logdir/id.$name" 2> /dev/null)
    if [ -z "$id" ]; then
        echo "run_cluster_tests: FAIL $name: the cluster did not start" | tee -a "$report"
    else
        left=$(ip netns list 2> /dev/null | grep "^$id" | tr '\n' ' ')
        [ -e "/run/xcoll-cluster/$id" ] && left="$left /run/xcoll-cluster/$id"
        left="$left $(ls -d "${TMPDIR:-/tmp}/ompi.$id"* 2> /dev/null | tr '\n' ' ')"
        if [ -n "$(echo $left)" ]; then
            echo "run_cluster_tests: FAIL $name: left after the cluster: $left" | tee -a "$report"
        fi
    fi
}

for p in $parts; do
    case $p in
    two) part two --nodes 2 --ranks-per-node 2 ;;
    three) part three --nodes 3 --ranks-per-node 2,2,1 ;;
    roundrobin) part roundrobin --nodes 3 --ranks-per-node 2 --map-by node ;;
    loss | loss0) part $p --nodes 3 --ranks-per-node 2 ;;
    shaped)
        # the delay needs netem, which some kernels lack: then the rate alone
        if why=$("$cluster" check --delay 100us 2>&1); then
            part shaped --nodes 2 --ranks-per-node 2 --rate 1gbit --delay 100us
        else
            echo "run_cluster_tests: shaped without the 100 us delay: ${why#cluster.sh: SKIP: }"
            part shaped --nodes 2 --ranks-per-node 2 --rate 1gbit
        fi
        ;;
    *) echo "run_cluster_tests: unknown part '$p' ($all_parts)"; exit 2 ;;
    esac
done

passed=$(grep -c "^run_cluster_tests: PASS" "$report")
failed=$(grep -c "^run_cluster_tests: FAIL" "$report")
echo "run_cluster_tests: $passed passed, $failed failed ($(($(date +%s) - total_start)) s)"
if [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
    echo "run_cluster_tests: logs kept in $logdir"
    exit 1
fi
rm -rf "$logdir"
exit 0
