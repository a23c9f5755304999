#!/bin/sh
# run_torch_tests.sh - the torch.distributed backend under mpirun and torchrun.
#
# Run by `make check` when configure built the backend (lib/torch/); also
# runnable by hand from a build directory. Every run gets a port of its own
# for torch's rendezvous store and a time limit.
# Environment:
#   TORCH_PYTHON  the interpreter whose torch the backend was built for
#   MPIRUN, MPIRUN_FLAGS, top_builddir, top_srcdir   as make check sets them
#   TEST_TIMEOUT  seconds per run (default 300)
#   XCOLL_TEST_QUICK=1  test_torch.py --quick, fewer runs
# Prints one line per run, then "run_torch_tests: N passed, M failed".

MPIRUN=${MPIRUN:-mpirun}
MPIRUN_FLAGS=${MPIRUN_FLAGS:---allow-run-as-root --oversubscribe}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}

# the uninstalled module and the library it links
PYTHONPATH=$top_builddir/lib/torch/.libs${PYTHONPATH:+:$PYTHONPATH}
LD_LIBRARY_PATH=$top_builddir/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
MASTER_ADDR=127.0.0.1
OMPI_MCA_rmaps_base_oversubscribe=1
# one intra-op thread per rank: more ranks than cores here
OMP_NUM_THREADS=1
# no __pycache__ in the source tree (read-only under distcheck)
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH LD_LIBRARY_PATH MASTER_ADDR OMPI_MCA_rmaps_base_oversubscribe OMP_NUM_THREADS
export PYTHONDONTWRITEBYTECODE

if [ ! -f "$top_builddir/lib/torch/.libs/xcoll_torch.so" ]; then
    echo "run_torch_tests: $top_builddir/lib/torch/.libs/xcoll_torch.so not built"
    exit 1
fi

quick=
[ "${XCOLL_TEST_QUICK:-0}" = 1 ] && quick=--quick
tests=$top_srcdir/test/torch
examples=$top_srcdir/examples/torch
logdir=$(mktemp -d "${TMPDIR:-/tmp}/xcoll-torch-tests.XXXXXX") || exit 1
passed=0
failed=0
failed_runs=

free_port() {
    "$TORCH_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# report NAME RC SECONDS LOG
report() {
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1))
        echo "PASS: $1 (${3}s)"
    else
        failed=$((failed + 1))
        failed_runs="$failed_runs [$1]"
        [ "$2" -eq 124 ] && echo "run_torch_tests: $1 timed out after ${TEST_TIMEOUT}s"
        grep -m 40 -e FAIL -e Error -e error "$4" || tail -n 40 "$4"
        echo "FAIL: $1 (exit $2, ${3}s; log $4)"
    fi
}

# mpi NP SCRIPT [ARGS...]: one mpirun of a Python script
mpi() {
    np=$1
    script=$2
    shift 2
    name="$(basename "$script") $* @$np"
    log=$logdir/$(basename "$script" .py).$np.$$.$passed.$failed.log
    MASTER_PORT=$(free_port)
    export MASTER_PORT
    start=$(date +%s)
    # shellcheck disable=SC2086
    timeout "$TEST_TIMEOUT" $MPIRUN $MPIRUN_FLAGS -np "$np" \
        -x PYTHONPATH -x LD_LIBRARY_PATH -x MASTER_ADDR -x MASTER_PORT -x OMP_NUM_THREADS \
        "$TORCH_PYTHON" "$script" "$@" >"$log" 2>&1
    rc=$?
    grep -e "^test_" "$log"
    report "$name" "$rc" $(($(date +%s) - start)) "$log"
}

# torchrun NP SCRIPT: torch's launcher. torch 1.13 on Python 3.11 crashes
# in its log-redirect setup unless given --redirects and --tee (pytorch#92319).
trun() {
    np=$1
    script=$2
    name="torchrun $(basename "$script") @$np"
    log=$logdir/torchrun.$(basename "$script" .py).$np.log
    start=$(date +%s)
    timeout "$TEST_TIMEOUT" "$TORCH_PYTHON" -m torch.distributed.run --nproc_per_node "$np" \
        --redirects 1 --tee 1 --master_addr 127.0.0.1 --master_port "$(free_port)" \
        "$script" >"$log" 2>&1
    rc=$?
    report "$name" "$rc" $(($(date +%s) - start)) "$log"
}

for np in 1 2 3 4; do
    mpi $np "$tests/test_torch.py" $quick
done
for np in 1 2 3 4; do
    mpi $np "$tests/test_ddp.py"
done
mpi 2 "$tests/test_ddp.py" --bucket-mb 25
mpi 3 "$tests/test_ddp.py" --hook powersgd
mpi 3 "$tests/test_ddp.py" --sparse
for ex in all_reduce.py all_gather.py all_to_all.py; do
    mpi 4 "$examples/$ex"
done
mpi 3 "$examples/all_to_all.py" --uneven
mpi 2 "$examples/ddp_train.py" --steps 5 --hidden 256 --layers 2
trun 2 "$examples/all_reduce.py"
trun 3 "$examples/all_gather.py"

echo "run_torch_tests: $passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
    echo "run_torch_tests: failed:$failed_runs"
    exit 1
fi
rm -rf "$logdir"
exit 0
