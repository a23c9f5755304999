#!/usr/bin/env bash
# cluster.sh - a cluster of "nodes" on this machine, built from Linux
# namespaces, for running MPI jobs across nodes without a second machine.
#
#   scripts/cluster.sh run  OPTIONS -- CMD [ARGS]   mpirun -np <all ranks> CMD ARGS, spread over the nodes
#   scripts/cluster.sh exec OPTIONS -- CMD [ARGS]   CMD itself on node 0, with a launcher for the cluster
#   scripts/cluster.sh check                        exit 0 if a cluster can be built here, else 77
#
# OPTIONS:
#   --nodes N                 nodes (1..64; default 2)
#   --ranks-per-node K        ranks on every node, or K0,K1,... one count per node (default 2)
#   --rate R                  shape every node's link to R each way (tc units: 10gbit, 1gbit, 500mbit)
#   --delay D                 one-way delay between two nodes (tc units: 25us, 100us, 1ms)
#   --timeout S               stop everything after S seconds (default 900): exit 124
#   --map-by node|slot        rank placement (default slot: node 0's ranks first, then node 1's ...)
#
# What a node is: its own network namespace (loopback and one veth, eth0, to
# a bridge that lives in a namespace of its own, so no address of this
# machine's namespace reaches a node and no traffic leaves them), its own
# host name (UTS namespace), System V IPC (IPC namespace), /dev/shm (mount
# namespace with a tmpfs of its own) and, from node 1 on, its own process
# ids (PID namespace). So Open MPI, UCX and xcoll see separate hosts: they
# reach each other only through TCP on eth0, never through shared memory
# or cross-memory reads. Node i is 10.77.0.(i+1) and is called
# <run id>-n<i>. mpirun runs on node 0 and starts the other nodes' daemons
# through an rsh agent that enters the target node (nsenter), so no ssh
# is needed.
#
# In `exec` mode CMD finds in its environment:
#   XCOLL_CLUSTER_MPIRUN    a launcher: mpirun with the cluster's hosts and agent (add -np and the program)
#   XCOLL_CLUSTER_NODES     the node count; XCOLL_CLUSTER_RANKS the ranks of all nodes
#   XCOLL_CLUSTER_KILL      "$XCOLL_CLUSTER_KILL I" kills node I (I >= 1) at once: every process on it
#   XCOLL_CLUSTER_PS        "$XCOLL_CLUSTER_PS I" prints the pids of node I's processes but its holder
#   XCOLL_CLUSTER_SHM       "$XCOLL_CLUSTER_SHM I" lists node I's /dev/shm
#   XCOLL_CLUSTER_ID        this run's id (the prefix of its namespaces and host names)
#
# Everything is torn down on exit, failure, timeout or signal; names are
# unique per run, so runs never collide. Needs root (CAP_NET_ADMIN and
# CAP_SYS_ADMIN); without it, or where namespaces are not permitted, it
# says why in one line and exits 77 (the tests that use it then SKIP).
set -uo pipefail

prog=cluster.sh
usage() {
    sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
fail() { echo "$prog: $*" >&2; exit 2; }
skip() { echo "$prog: SKIP: $*" >&2; exit 77; }

nodes=2
rpn=2
rate=
delay=
limit=900
map_by=slot
mode=${1:-}
[ $# -gt 0 ] && shift
case $mode in
run | exec | check) ;;
-h | --help | help) usage ;;
*) echo "$prog: expected run, exec or check" >&2; usage ;;
esac
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) nodes=${2:-}; shift 2 || usage ;;
    --ranks-per-node) rpn=${2:-}; shift 2 || usage ;;
    --rate) rate=${2:-}; shift 2 || usage ;;
    --delay) delay=${2:-}; shift 2 || usage ;;
    --timeout) limit=${2:-}; shift 2 || usage ;;
    --map-by) map_by=${2:-}; shift 2 || usage ;;
    --) shift; break ;;
    *) echo "$prog: unknown option '$1'" >&2; usage ;;
    esac
done

case $nodes in '' | *[!0-9]* | 0*) fail "--nodes '$nodes': expected 1 to 64" ;; esac
[ "$nodes" -le 64 ] || fail "--nodes $nodes: at most 64"
case $limit in '' | *[!0-9]* | 0*) fail "--timeout '$limit': expected a whole number of seconds" ;; esac
case $map_by in node | slot) ;; *) fail "--map-by '$map_by': expected node or slot" ;; esac
# ranks of each node: one count for all, or one per node
IFS=, read -r -a counts <<< "$rpn"
if [ "${#counts[@]}" -eq 1 ]; then
    for ((i = 1; i < nodes; i++)); do counts[i]=${counts[0]}; done
fi
[ "${#counts[@]}" -eq "$nodes" ] ||
    fail "--ranks-per-node '$rpn': one count, or $nodes counts separated by commas"
total=0
for k in "${counts[@]}"; do
    case $k in '' | *[!0-9]* | 0*) fail "--ranks-per-node '$rpn': counts are whole numbers from 1" ;; esac
    [ "$k" -le 256 ] || fail "--ranks-per-node: $k ranks on a node is more than 256"
    total=$((total + k))
done
# tc's own syntax is checked by tc; here only the shape of the value
[ -z "$rate" ] || [[ $rate =~ ^[0-9]+(\.[0-9]+)?([kmg]?bit|[kmg]?bps)$ ]] ||
    fail "--rate '$rate': expected a tc rate such as 10gbit or 500mbit"
[ -z "$delay" ] || [[ $delay =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] ||
    fail "--delay '$delay': expected a tc time such as 25us or 1ms"
if [ "$mode" != check ] && [ $# -eq 0 ]; then
    echo "$prog: no command after --" >&2
    usage
fi

# --- can this machine do it? ------------------------------------------------------
probe() {
    [ "$(id -u)" = 0 ] || skip "needs root for network namespaces (running as uid $(id -u))"
    local tool
    for tool in ip nsenter unshare tc mpirun; do
        command -v "$tool" > /dev/null 2>&1 || skip "'$tool' is not installed"
    done
    local ns=xcprobe$$
    if ! ip netns add "$ns" 2> /dev/null; then
        skip "network namespaces are not permitted here (ip netns add failed: no CAP_NET_ADMIN?)"
    fi
    if ! ip netns exec "$ns" unshare --uts --ipc --mount --pid --fork true 2> /dev/null; then
        ip netns del "$ns" 2> /dev/null
        skip "UTS/IPC/mount/PID namespaces are not permitted here (unshare failed)"
    fi
    # A delay needs netem; a rate alone falls back to tbf, which kernels
    # built without netem (this project's CI machine among them) still have.
    if ip netns exec "$ns" tc qdisc add dev lo root netem delay 1us 2> /dev/null; then
        shaper=netem
    elif ip netns exec "$ns" tc qdisc add dev lo root tbf rate 1gbit burst 64k latency 50ms 2> /dev/null; then
        shaper=tbf
    else
        shaper=none
    fi
    ip netns del "$ns"
    if [ -n "$delay" ] && [ "$shaper" != netem ]; then
        skip "--delay needs the tc netem qdisc, which this kernel lacks (no sch_netem)"
    fi
    if [ -n "$rate" ] && [ "$shaper" = none ]; then
        skip "--rate needs the tc netem or tbf qdisc; this kernel has neither"
    fi
}

# tc arguments that limit a link to $rate. tbf's bucket holds 200 us at
# the rate (at least 64 KiB, so one GSO packet always fits): shaping stays
# tight at short time scales, and a burst never waits for the next tick.
rate_qdisc() {
    if [ "$shaper" = netem ]; then
        echo "netem limit 100000 rate $rate"
        return
    fi
    local bits
    bits=$(awk -v r="$rate" 'BEGIN {
        n = r + 0; u = r; sub(/^[0-9.]+/, "", u)
        m = 1
        if (u ~ /^k/) m = 1e3; else if (u ~ /^m/) m = 1e6; else if (u ~ /^g/) m = 1e9
        if (u ~ /bps$/) m *= 8
        printf "%.0f", n * m }')
    local burst=$((bits / 8 / 5000))
    [ "$burst" -ge 65536 ] || burst=65536
    echo "tbf rate $rate burst $burst latency 50ms"
}
probe
[ "$mode" = check ] && { echo "$prog: namespaces work here"; exit 0; }

# --- the cluster --------------------------------------------------------------------
id=$(printf 'xc%04x%04x' $(($$ & 0xffff)) $((RANDOM & 0xffff)))
dir=/run/xcoll-cluster/$id
br=${id}br
created=()   # namespaces to delete, in creation order
holder=()    # per node: the pid whose namespaces are the node's

teardown() {
    local i pids pass
    trap - EXIT INT TERM HUP
    # node 1.. die with their PID namespace's first process; node 0 shares
    # this machine's process ids, so its processes go by network namespace
    for ((i = 1; i < ${#holder[@]}; i++)); do
        [ -n "${holder[i]:-}" ] && kill -9 "${holder[i]}" 2> /dev/null
    done
    for pass in 1 2 3 4 5; do
        pids=$(ip netns pids "${id}n0" 2> /dev/null)
        [ -z "$pids" ] && break
        kill -9 $pids 2> /dev/null
        sleep 0.2
    done
    for ((i = ${#created[@]} - 1; i >= 0; i--)); do
        ip netns del "${created[i]}" 2> /dev/null
    done
    rm -rf "$dir"
    rmdir /run/xcoll-cluster 2> /dev/null
}
on_signal() {
    echo "$prog: stopped by a signal; tearing the cluster down" >&2
    teardown
    exit 130
}
trap teardown EXIT
trap on_signal INT TERM HUP

netns() { # netns NAME: create and remember it
    ip netns add "$1" || fail "ip netns add $1 failed"
    created+=("$1")
}

mkdir -p "$dir" || fail "cannot create $dir"
netns "$br"
ip -n "$br" link add br0 type bridge || fail "cannot create the bridge"
ip -n "$br" link set br0 up
ip -n "$br" link set lo up

hosts=
for ((i = 0; i < nodes; i++)); do
    ns=${id}n$i
    netns "$ns"
    # both ends created where they live: this machine's namespace never
    # holds them
    ip -n "$ns" link add eth0 type veth peer name "p$i" netns "$br" ||
        fail "cannot create node $i's link"
    ip -n "$br" link set "p$i" master br0
    ip -n "$br" link set "p$i" up
    # IPv4 only: no duplicate address detection delaying the first packets
    ip netns exec "$ns" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6' 2> /dev/null
    ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [ -n "$rate$delay" ]; then
        # the node's egress carries rate and delay, the bridge's egress
        # towards the node the rate: each direction of the link is shaped
        # once, and node to node sees the delay once
        if [ -n "$delay" ]; then
            ip netns exec "$ns" tc qdisc add dev eth0 root netem limit 100000 \
                delay "$delay" ${rate:+rate $rate} || fail "tc on node $i failed"
        else
            ip netns exec "$ns" tc qdisc add dev eth0 root $(rate_qdisc) ||
                fail "tc on node $i failed"
        fi
        if [ -n "$rate" ]; then
            ip netns exec "$br" tc qdisc add dev "p$i" root $(rate_qdisc) ||
                fail "tc on node $i's bridge port failed"
        fi
    fi
    # The holder keeps the node's namespaces; from node 1 on it is the
    # first process of the node's PID namespace, so killing it kills the
    # node. Node 0, where mpirun runs, keeps this machine's process ids:
    # its agent must enter the other nodes' PID namespaces, which only a
    # process of an ancestor namespace may.
    pidns=
    [ "$i" -gt 0 ] && pidns="--pid --fork --mount-proc"
    setsid ip netns exec "$ns" unshare --uts --ipc --mount --propagation private $pidns \
        sh -c "hostname $id-n$i && mount -t tmpfs -o mode=1777 xcoll-node /dev/shm && exec sleep 100000" \
        < /dev/null > /dev/null 2> "$dir/holder$i.err" &
    launcher=$!
    disown "$launcher" 2> /dev/null
    hp=
    for ((t = 0; t < 100; t++)); do
        if [ "$i" -eq 0 ]; then
            hp=$launcher
        else
            hp=$(pgrep -P "$launcher" 2> /dev/null | head -n 1)
        fi
        # ready once the holder is sleeping in its own UTS namespace
        if [ -n "$hp" ] && [ "$(readlink "/proc/$hp/ns/uts")" != "$(readlink /proc/self/ns/uts)" ] &&
            [ "$(cat "/proc/$hp/comm" 2> /dev/null)" = sleep ]; then
            break
        fi
        hp=
        sleep 0.05
    done
    [ -n "$hp" ] || fail "node $i did not start: $(cat "$dir/holder$i.err" 2> /dev/null)"
    holder[i]=$hp
    echo "$hp" > "$dir/holder$i"
    hosts="$hosts${hosts:+,}10.77.0.$((i + 1)):${counts[i]}"
done

# The rsh agent: what ssh would do for Open MPI, by entering the node.
# ORTE calls it as: agent [options] HOST COMMAND...
cat > "$dir/agent" << EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
case \$host in
10.77.0.*) i=\$((\${host##*.} - 1)) ;;
$id-n*) i=\${host#$id-n} ;;
*) echo "cluster agent: unknown host \$host" >&2; exit 255 ;;
esac
[ -f $dir/holder\$i ] || { echo "cluster agent: no node \$i" >&2; exit 255; }
pid=
[ "\$i" -gt 0 ] && pid=--pid
exec nsenter -t "\$(cat $dir/holder\$i)" --net --uts --ipc --mount \$pid --wd="\$PWD" -- /bin/sh -c "\$*"
EOF
# The launcher: mpirun on node 0 with the cluster's hosts. No tree spawn:
# the agent enters every node from node 0. The nodes share this machine's
# /tmp, so Open MPI's session directories go under the run's own
# directory: a killed node's daemon cannot clean up after itself, and
# the teardown removes what it left.
mkdir -p "$dir/tmp"
cat > "$dir/mpirun" << EOF
#!/bin/sh
exec mpirun --allow-run-as-root --host $hosts --map-by $map_by --oversubscribe \\
    --mca plm_rsh_agent $dir/agent --mca plm_rsh_no_tree_spawn 1 \\
    --mca orte_tmpdir_base $dir/tmp "\$@"
EOF
cat > "$dir/kill-node" << EOF
#!/bin/sh
case \${1:-} in ''|*[!0-9]*|0) echo "kill-node: expected a node number from 1" >&2; exit 2 ;; esac
[ -f $dir/holder\$1 ] || { echo "kill-node: no node \$1" >&2; exit 2; }
kill -9 "\$(cat $dir/holder\$1)"
EOF
cat > "$dir/ps-node" << EOF
#!/bin/sh
# a node's processes, by its network namespace, the holder left out
[ -f $dir/holder\${1:-x} ] || { echo "ps-node: no node \${1:-}" >&2; exit 2; }
ip netns pids ${id}n\$1 | grep -vx "\$(cat $dir/holder\$1)"
exit 0
EOF
cat > "$dir/shm-node" << EOF
#!/bin/sh
[ -f $dir/holder\${1:-x} ] || { echo "shm-node: no node \${1:-}" >&2; exit 2; }
exec nsenter -t "\$(cat $dir/holder\$1)" --mount -- ls -A /dev/shm
EOF
chmod +x "$dir/agent" "$dir/mpirun" "$dir/kill-node" "$dir/ps-node" "$dir/shm-node"

shape="unshaped"
[ -n "$rate$delay" ] && shape="links ${rate:-unlimited}, delay ${delay:-0} ($shaper)"
echo "$prog: $id: $nodes nodes (ranks ${rpn}), $shape" >&2

export XCOLL_CLUSTER_ID=$id XCOLL_CLUSTER_NODES=$nodes XCOLL_CLUSTER_RANKS=$total
export XCOLL_CLUSTER_MPIRUN=$dir/mpirun XCOLL_CLUSTER_KILL=$dir/kill-node XCOLL_CLUSTER_PS=$dir/ps-node
export XCOLL_CLUSTER_SHM=$dir/shm-node
if [ "$mode" = run ]; then
    set -- "$dir/mpirun" -np "$total" "$@"
fi
# node 0: its namespaces, this machine's process ids
timeout --kill-after=10 "$limit" \
    nsenter -t "${holder[0]}" --net --uts --ipc --mount --wd="$PWD" -- "$@"
rc=$?
[ "$rc" -eq 124 ] && echo "$prog: $id: stopped after --timeout $limit s" >&2
exit "$rc"
