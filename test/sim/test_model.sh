#!/bin/sh
# The cost model: its formulas, what it shares, and the default table's
# choices on the reference clusters of docs/SCALING.md (test_model); every
# algorithm's schedules built for many ranks and counted by the model
# against the simulator's formulas (test_sim --scale); xcoll-info --predict,
# its chart and its usage errors. XCOLL_TEST_QUICK=1 (sanitizer builds,
# distcheck): the selection check to 256 ranks and the counts at 256 ranks;
# otherwise the selection check to 4096 ranks and the counts at 1024 (at
# 4096 they take about 2 minutes and 3.3 GB: `test_sim --scale 4096` by
# hand, docs/SCALING.md).
b="${builddir:-.}"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

if [ "${XCOLL_TEST_QUICK:-0}" = 1 ]; then
    "$b/test/sim/test_model" -q || fails=$((fails + 1))
    "$b/test/sim/test_sim" --scale 256 || fails=$((fails + 1))
else
    "$b/test/sim/test_model" || fails=$((fails + 1))
    "$b/test/sim/test_sim" --scale 1024 || fails=$((fails + 1))
fi

info="$b/bin/xcoll-info"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if "$info" --predict --nodes 2 --ranks-per-node 4 --inter 10,5 --coll allreduce \
    --sizes 8,64K,4M --plot "$tmp/a.svg" > "$tmp/out" 2>&1; then
    grep -q '^# 2 nodes x 4 ranks = 8 ranks; .* between nodes 10 GB/s 5 us' "$tmp/out" ||
        fail "--predict: no cluster line: $(head -n 1 "$tmp/out")"
    [ "$(grep -c '^ *\(8\|64k\|4m\) ' "$tmp/out")" = 3 ] || fail "--predict: not 3 size rows"
    grep -q 'picked.*best' "$tmp/out" || fail "--predict: no picked/best columns"
    if command -v xmllint > /dev/null 2>&1; then
        xmllint --noout "$tmp/a.svg" 2> /dev/null || fail "--plot: not well-formed XML"
    fi
    grep -q 'rabenseifner' "$tmp/a.svg" || fail "--plot: no curve named rabenseifner"
else
    fail "xcoll-info --predict exited $?: $(tail -n 3 "$tmp/out")"
fi
usage() { # WHY ARGS...: must exit 2
    why=$1
    shift
    "$info" --predict "$@" > "$tmp/u" 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "--predict $*: exit $rc, want 2 ($why)"
}
usage "no nodes" --ranks-per-node 4
usage "no ranks a node" --nodes 4
usage "a link without its latency" --nodes 2 --ranks-per-node 2 --inter 25
usage "a negative bandwidth" --nodes 2 --ranks-per-node 2 --intra -5,1
usage "an unknown collective" --nodes 2 --ranks-per-node 2 --coll allreduse
usage "--plot without --coll" --nodes 2 --ranks-per-node 2 --plot "$tmp/x.svg"
usage "a bad size" --nodes 2 --ranks-per-node 2 --sizes 8,abc
usage "too many ranks" --nodes 65536 --ranks-per-node 2
usage "a rate with junk" --nodes 2 --ranks-per-node 2 --reduce 5x
usage "a rate of 0" --nodes 2 --ranks-per-node 2 --copy 0
usage "a rate whose inverse overflows" --nodes 2 --ranks-per-node 2 --intra 1e-320,1
usage "a rate whose inverse overflows" --nodes 2 --ranks-per-node 2 --reduce 1e-320
usage "an overhead that is no number" --nodes 2 --ranks-per-node 2 --overhead abc
usage "an empty overhead" --nodes 2 --ranks-per-node 2 --overhead ""
usage "no sizes" --nodes 2 --ranks-per-node 2 --sizes ""
usage "a size above 16 GiB" --nodes 2 --ranks-per-node 2 --sizes 17G
usage "a negative turn" --nodes 2 --ranks-per-node 2 --cores 2 --turn -1
usage "a memory without its factor" --nodes 2 --ranks-per-node 2 --memory 16
usage "a memory factor below 1" --nodes 2 --ranks-per-node 2 --memory 16,0.5
usage "a negative cache" --nodes 2 --ranks-per-node 2 --memory -1,2
usage "a memory with junk" --nodes 2 --ranks-per-node 2 --memory 16,2x
usage "an inter-node CPU rate of 0" --nodes 2 --ranks-per-node 2 --inter-cpu 0
usage "a forward factor below 1" --nodes 1 --ranks-per-node 2 --forward 0.5
usage "a forward factor with junk" --nodes 1 --ranks-per-node 2 --forward 2x
usage "a split size with junk" --nodes 1 --ranks-per-node 2 --split 128Kx
# split copies (on by default, as in the library): a 2-rank linear bcast of
# 4 MiB is faster than with --split 0; a 64 KiB one, below 128 KiB, is not
s1=$("$info" --predict --nodes 1 --ranks-per-node 2 --coll bcast --sizes 64K,4M | awk '$1 == "4m" || $1 == "64k" {print $7}' | tr '\n' ' ')
s0=$("$info" --predict --nodes 1 --ranks-per-node 2 --coll bcast --sizes 64K,4M --split 0 | awk '$1 == "4m" || $1 == "64k" {print $7}' | tr '\n' ' ')
awk -v a="$s1" -v b="$s0" 'BEGIN { split(a, x, " "); split(b, y, " ");
    exit !(x[1] == y[1] && x[2] < 0.6 * y[2]) }' ||
    fail "--split: linear bcast at 64K and 4M '$s1', with --split 0 '$s0'"
# bytes forwarded within a node cost more: a 2-rank ring allreduce's second
# half sends what it has just reduced (test_model's "machine" part checks
# by how much); recursive doubling at 2 ranks forwards nothing
f1=$("$info" --predict --nodes 1 --ranks-per-node 2 --coll allreduce --sizes 256K | awk '$1 == "256k"')
f2=$("$info" --predict --nodes 1 --ranks-per-node 2 --coll allreduce --sizes 256K --forward 2 | awk '$1 == "256k"')
ring1=$(echo "$f1" | awk '{print $4}'); ring2=$(echo "$f2" | awk '{print $4}')
rd1=$(echo "$f1" | awk '{print $2}'); rd2=$(echo "$f2" | awk '{print $2}')
awk -v a="$ring1" -v b="$ring2" 'BEGIN { exit !(b > a) }' ||
    fail "--forward 2 does not slow the ring: '$f1' / '$f2'"
[ -n "$rd1" ] && [ "$rd1" = "$rd2" ] || fail "--forward 2 changes recursive doubling: '$f1' / '$f2'"
# beyond the cache the times change: a 2-rank bcast of 16 MiB (32 MiB on
# the node, 4 MiB of cache: all of it beyond; test_model's "machine" part
# checks by how much)
t1=$("$info" --predict --nodes 1 --ranks-per-node 2 --coll bcast --sizes 16M | awk '$1 == "16m"')
t2=$("$info" --predict --nodes 1 --ranks-per-node 2 --coll bcast --sizes 16M --memory 4,2 | awk '$1 == "16m"')
[ -n "$t1" ] && [ -n "$t2" ] && [ "$t1" != "$t2" ] || fail "--memory 4,2 changes nothing: '$t1' / '$t2'"
# beyond what it can simulate it says so (a bound), neither crashing nor
# eating the machine: 65536 ranks' pairwise alltoall is 8.6 G steps
if "$info" --predict --nodes 8192 --ranks-per-node 8 --coll alltoall --sizes 1K \
    > "$tmp/big" 2>&1; then
    grep -q '^ *1k *>[0-9]' "$tmp/big" || fail "--predict at 65536 ranks: no bound: $(tail -n 1 "$tmp/big")"
else
    fail "--predict at 65536 ranks exited $?: $(tail -n 3 "$tmp/big")"
fi
echo "test_model.sh: xcoll-info --predict checked"
[ "$fails" = 0 ]
