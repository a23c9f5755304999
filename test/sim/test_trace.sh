#!/bin/sh
# xcoll-trace (bin/xcoll_trace.c) over every collective and every
# algorithm at several rank counts and sizes: the totals of messages and
# bytes it counts in the built schedules must equal docs/ALGORITHMS.md's
# formulas (its "= ok" lines and its exit status), the SVG it writes must
# be well-formed XML (xmllint; that part is skipped without it), and bad
# input must give exit status 2 and a message.
#
# Usage: test_trace.sh [-q]   (-q: fewer rank counts and sizes)
trace=${builddir:-.}/bin/xcoll-trace
tmp=${TMPDIR:-/tmp}/test_trace.$$
fail=0
passed=0
quick=0
[ "${1:-}" = "-q" ] && quick=1

if [ ! -x "$trace" ]; then
    echo "test_trace: $trace not built"
    exit 99
fi
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT

bad() {
    echo "FAIL: $*"
    fail=$((fail + 1))
}

# One run whose totals must match: exit 0, an "= ok" for M and B, no
# MISMATCH line.
# (No grep per run: a few thousand runs, and process starts are the cost.)
check() {
    out=$("$trace" "$@" -q 2>&1 </dev/null)
    st=$?
    case $st:$out in
    0:*"messages M"*"= ok"*"bytes B"*"= ok"*) ;;
    *)
        bad "xcoll-trace $* (exit $st)"
        echo "$out"
        return ;;
    esac
    case $out in *MISMATCH*) bad "xcoll-trace $*: MISMATCH with exit 0"; echo "$out"; return ;; esac
    passed=$((passed + 1))
}

if [ $quick = 1 ]; then
    ranks="1 2 3 5 8"
    sizes="0 4 777 1m"
else
    # 3, 5, 7: every fold case of recursive doubling (rem = 1 .. p2-1)
    ranks="1 2 3 5 7 8 16"
    # 4: one element (a double binary tree's one half); 4099 B: an odd
    # count of uint8 (uneven blocks everywhere); 1m: several segments per
    # block or tree level; 5m: the segment caps
    sizes="0 4 4099 1m 5m"
fi

# Every algorithm, from the tool's own list (so a new one is covered).
"$trace" --list >"$tmp/list" || { echo "test_trace: --list failed"; exit 1; }
ncoll=$(grep -c -v '^(' "$tmp/list")
[ "$ncoll" -eq 13 ] || bad "--list shows $ncoll collectives, expected 13"
grep -v '^(' "$tmp/list" >"$tmp/algos"
# (a redirected loop, not a pipe: it runs in this shell, so counts add up)
while read -r coll algos; do
    for algo in $algos; do
        for P in $ranks; do
            for n in $sizes; do
                [ "$coll" = barrier ] && [ "$n" != 0 ] && continue
                if [ "${algo#hier}" != "$algo" ]; then
                    # at least two nodes, one of them of two ranks (hier2d:
                    # every node of k ranks)
                    for k in 2 3; do
                        [ "$P" -gt "$k" ] || continue
                        [ "$algo" = hier2d ] && [ $((P % k)) -ne 0 ] && continue
                        check "$coll" --ranks "$P" --bytes "$n" --algo "$algo" --per-node "$k"
                    done
                    continue
                fi
                check "$coll" --ranks "$P" --bytes "$n" --algo "$algo"
            done
        done
        # the rooted ones at every other root too
        case $coll in bcast | reduce | gather | scatter | gatherv | scatterv)
            [ "$algo" = hier ] && continue
            for root in 1 4; do
                check "$coll" --ranks 5 --bytes 4099 --algo "$algo" --root $root
                check "$coll" --ranks 7 --bytes 1000 --algo "$algo" --root $root
            done ;;
        esac
    done
done <"$tmp/algos"

# The default selection, and its explanation.
for c in allreduce bcast allgather alltoall; do
    for n in 8 64k 1m; do
        check $c --ranks 6 --bytes $n
    done
done
"$trace" allreduce --ranks 4 --bytes 1m >"$tmp/out" 2>&1 || bad "default allreduce (exit $?)"
grep -q 'selection table: rule' "$tmp/out" || bad "the default selection names its rule"

# The listing itself: a ring allreduce on 4 ranks sends in 2(P-1) = 6
# columns, one message per rank in each; in the first, rank r sends block
# r-1 (ALGORITHMS.md) to r+1, which reduces it with its own.
"$trace" allreduce --ranks 4 --bytes 4k --algo ring >"$tmp/ring" 2>&1 ||
    bad "ring listing (exit $?)"
grep -q '^  columns  *6 ' "$tmp/ring" || bad "ring allreduce on 4 ranks: not 6 columns"
[ "$(grep -c '^column ' "$tmp/ring")" -eq 6 ] || bad "ring allreduce: not 6 column headers"
[ "$(grep -c '^  r[0-9]* *-> r[0-9]' "$tmp/ring")" -eq 24 ] ||
    bad "ring allreduce: not 24 message lines"
grep -q '^  r0   -> r1   send\[3k,4k) .* -> recv\[3k,4k) = send\[3k,4k) sum it$' \
    "$tmp/ring" ||
    bad "ring allreduce: r0 does not first send block r-1 = 3 to r1, which reduces it"

# The SVG: well-formed XML (xmllint, else Python's parser; neither: the
# test ends SKIP after the rest has run), one arrow per message.
checker=
if command -v xmllint >/dev/null 2>&1; then
    checker=xmllint
elif command -v python3 >/dev/null 2>&1; then
    checker=python3
fi
wellformed() {
    if [ "$checker" = xmllint ]; then
        xmllint --noout "$1"
    else
        python3 -c 'import sys, xml.dom.minidom as d; d.parse(sys.argv[1])' "$1"
    fi
}
if [ -n "$checker" ]; then
    for spec in "allreduce --algo ring --ranks 4 --bytes 1m" \
        "allgather --algo bruck --ranks 5 --bytes 100" \
        "allreduce --algo recdbl --ranks 6 --bytes 1k --op avg" \
        "bcast --algo chain --ranks 16 --bytes 3m --root 3" \
        "alltoall --algo hier --ranks 8 --per-node 3 --bytes 4k" "barrier --ranks 1" \
        "reduce --algo rsg --ranks 16 --bytes 5m" "scatterv --ranks 3 --bytes 0" \
        "allreduce --algo direct --ranks 5 --bytes 64"; do
        # shellcheck disable=SC2086
        if ! "$trace" $spec --svg "$tmp/d.svg" >"$tmp/out" 2>&1; then
            bad "xcoll-trace $spec --svg (exit $?)"
            continue
        fi
        if ! wellformed "$tmp/d.svg"; then
            bad "xcoll-trace $spec --svg: not well-formed"
            continue
        fi
        arrows=$(grep -c 'marker-end=' "$tmp/d.svg")
        msgs=$(awk '$1 == "messages" { print $3 }' "$tmp/out")
        [ "$arrows" = "$msgs" ] || bad "xcoll-trace $spec --svg: $arrows arrows for $msgs messages"
        passed=$((passed + 1))
    done
    # too large to draw: refused with a message, nothing half-written
    "$trace" allreduce --ranks 100 --bytes 1k --algo ring --svg "$tmp/big.svg" \
        >/dev/null 2>"$tmp/err"
    st=$?
    { [ $st -eq 2 ] && grep -q 'too large' "$tmp/err" && [ ! -e "$tmp/big.svg" ]; } ||
        bad "a 100-rank diagram: exit $st, $(cat "$tmp/err")"
else
    echo "test_trace: neither xmllint (Debian: libxml2-utils) nor python3: SVG checks skipped"
    skipped=1
fi

# Bad input: exit 2 and a message that says what is wrong.
expect2() {
    want=$1
    shift
    "$trace" "$@" >"$tmp/out" 2>"$tmp/err"
    st=$?
    if [ $st -ne 2 ] || ! grep -q -- "$want" "$tmp/err"; then
        bad "xcoll-trace $* gave exit $st, wanted 2 and \"$want\": $(cat "$tmp/err")"
    else
        passed=$((passed + 1))
    fi
}
expect2 'unknown collective "allreduse"' allreduse --ranks 4 --bytes 1k
expect2 'expected 1 to 1024' allreduce --ranks 0 --bytes 1k
expect2 'expected 1 to 1024' allreduce --ranks -3 --bytes 1k
expect2 'expected 1 to 1024' allreduce --ranks four --bytes 1k
expect2 'ranks P is missing' allreduce --bytes 1k
expect2 'bytes N is missing' allreduce --ranks 4
expect2 'expected a byte count' allreduce --ranks 4 --bytes 12x
expect2 'expected a byte count' allreduce --ranks 4 --bytes -5
expect2 'at most 16g' allreduce --ranks 4 --bytes 17g
expect2 'its algorithms: recdbl, rabenseifner, ring' allreduce --ranks 4 --bytes 1k \
    --algo pairwise
expect2 'has no algorithm "mpi"' allreduce --ranks 4 --bytes 1k --algo mpi
expect2 'accept it: ' allreduce --ranks 4 --bytes 1k --algo hier
expect2 'accept it: ' allreduce --ranks 65 --bytes 1k --algo direct
expect2 'has no root' allreduce --ranks 4 --bytes 1k --root 1
expect2 'below --ranks' bcast --ranks 4 --bytes 1k --root 4
expect2 'whole number of float64' allreduce --ranks 4 --bytes 12 --dtype float64
expect2 'unknown type' allreduce --ranks 4 --bytes 12 --dtype float128
expect2 'unknown operator' allreduce --ranks 4 --bytes 12 --op plus
expect2 'does not reduce' bcast --ranks 4 --bytes 12 --op max
expect2 'needs an integer --dtype' allreduce --ranks 4 --bytes 12 --op bxor
expect2 'needs a value' allreduce --ranks 4 --bytes
expect2 'unexpected argument' allreduce bcast --ranks 4 --bytes 1k
expect2 'no collective given' --ranks 4 --bytes 1k
"$trace" -h | grep -q 'A column is a dependency depth' || bad "-h does not say what a column is"

echo "test_trace: $passed passed, $fail failed"
[ "$fail" -eq 0 ] || exit 1
[ -z "${skipped:-}" ] || exit 77
