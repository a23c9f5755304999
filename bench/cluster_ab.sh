#!/usr/bin/env bash
# cluster_ab.sh - A/B runs on a namespace cluster: xcoll-perf --vs-mpi under
# several variants (environment settings or a forced algorithm), the
# variants alternating within each round and their order rotated from round
# to round (the first job after a pause runs slow here), then per size the
# median over rounds of xcoll's time, Open MPI's (same jobs) and their ratio.
#
#   scripts/cluster.sh exec --nodes N --ranks-per-node K -- \
#       env VARIANTS='base;algo=hier2d;UCX_TCP_TX_SEG_SIZE=8K,UCX_TCP_RX_SEG_SIZE=64K' \
#       bench/cluster_ab.sh
#
# VARIANTS  ';'-separated: "base" (the defaults), "algo=NAME" (--algo NAME),
#           or VAR=VALUE[,VAR=VALUE...] (passed to every rank with -x)
# COLL (allreduce) MINB (64K) MAXB (16M) F (4) N (10) ROUNDS (3): xcoll-perf's
#           -C -b -e -f -n, and the rounds
# OUT       the CSV of every row (default: a temporary file, removed)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
[ -n "${XCOLL_CLUSTER_MPIRUN:-}" ] || { echo "cluster_ab.sh: run me under scripts/cluster.sh exec" >&2; exit 2; }
IFS=';' read -ra vars <<< "${VARIANTS:-base}"
out=${OUT:-$(mktemp)}
[ -n "${OUT:-}" ] || trap 'rm -f "$out"' EXIT
: > "$out"
nv=${#vars[@]}
for r in $(seq 1 "${ROUNDS:-3}"); do
    for k in $(seq 0 $((nv - 1))); do
        v=${vars[$(((k + r) % nv))]}
        xs=() algo=()
        case $v in
        base) ;;
        algo=*) algo=(--algo "${v#algo=}") ;;
        *) IFS=',' read -ra kvs <<< "$v"; for kv in "${kvs[@]}"; do xs+=(-x "$kv"); done ;;
        esac
        timeout 300 $XCOLL_CLUSTER_MPIRUN -np "$XCOLL_CLUSTER_RANKS" --mca mpi_yield_when_idle 1 \
            "${xs[@]}" build/bin/xcoll-perf -C "${COLL:-allreduce}" -b "${MINB:-64K}" -e "${MAXB:-16M}" \
            -f "${F:-4}" -n "${N:-10}" -w 2 -a 3 --no-inplace --vs-mpi --csv "${algo[@]}" 2> /dev/null |
            grep -v '^coll' | sed "s|^|$v;|" >> "$out"
        rc=${PIPESTATUS[0]}
        [ "$rc" -eq 0 ] || echo "cluster_ab.sh: round $r, $v: exit $rc" >&2
    done
done
# variant;coll,nranks,size,...: xcoll's time is field 8, Open MPI's 20
python3 - "$out" <<'PY'
import collections, statistics as st, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    v, rest = line.rstrip("\n").split(";", 1)
    f = rest.split(",")
    d[(f[0], int(f[2]), v)].append((float(f[7]), float(f[19])))
print(f"{'coll':15s} {'size':>9s}  {'variant':40s} {'xcoll ms':>9s} {'MPI ms':>9s} {'MPI/xcoll':>9s} runs")
for (c, size, v), l in sorted(d.items()):
    x, m = [a for a, _ in l], [b for _, b in l]
    print(f"{c:15s} {size:>9d}  {v[:40]:40s} {st.median(x) / 1e3:9.2f} {st.median(m) / 1e3:9.2f}"
          f" {st.median([b / a for a, b in l]):9.2f} {len(l)}")
PY
