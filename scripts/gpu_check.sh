#!/usr/bin/env bash
# gpu_check.sh - every GPU check in one run, on a machine with an NVIDIA GPU
# (and on one without: the device checks then report SKIP).
#
#   scripts/gpu_check.sh [--prebuilt | --build-only] [--logs DIR]
#
# Builds in build-gpu/ (configure --with-cuda --enable-werror, make -j<cores>),
# then runs, each under a timeout:
#   test/gpu/test_gpu_kernels           the CUDA kernels against the CPU's arithmetic
#   test/gpu/test_gpu_kernels --bench   kernel throughput next to a device-to-device copy
#   test/gpu/check_fatbin.sh            the library carries code for the configured GPUs
#   test/gpu/test_gpu_coll --emulate    the same on the emulated GPU, 2 ranks (no device needed:
#                                       a failure there is MPI or the engine, not CUDA)
#   test/gpu/test_gpu_coll              collectives on device buffers and streams, 2 and 4 ranks
#   examples/allreduce_cuda             the teaching example, 2 ranks
#   bin/xcoll-perf -m cuda              allreduce 16 B .. 256 MiB, 2 ranks, NULL stream and --stream
# and ends with a table: check | result | key number. Installs nothing and
# needs no network (the GPU machines have none): the toolkit, MPI and UCX
# must be there already, and autoreconf too unless configure was generated.
#   --build-only  build (and the GPU probe), run nothing: what
#                 scripts/gpu_runtime.sh does on a CPU machine
#   --prebuilt    build nothing: run what an earlier --build-only left in
#                 build-gpu/, from wherever the tree now is; without mpirun
#                 on PATH, the runtime that scripts/gpu_runtime.sh put in
#                 gpu-runtime/ is used
#   --logs DIR    where the logs go (default build-gpu/gpu-check-logs/)
# Exit status 1 if any check failed. Meant to finish in under 8 minutes on
# 16 cores (--prebuilt: under 4).
set -uo pipefail
. "$(dirname "$0")/common.sh"

BUILD=build-gpu
B=$XCOLL_TOP/$BUILD
LOGS=$B/gpu-check-logs
JOBS=${XCOLL_JOBS_GPU:-$(nproc 2>/dev/null || echo 4)}
mode=full
while [ $# -gt 0 ]; do
    case "$1" in
    --prebuilt) mode=prebuilt ;;
    --build-only) mode=build ;;
    --logs) LOGS=$(mkdir -p "$2" && cd "$2" && pwd) || die "cannot use $2 for the logs"; shift ;;
    -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
    *) die "usage: scripts/gpu_check.sh [--prebuilt | --build-only] [--logs DIR]" ;;
    esac
    shift
done
# A collective that stops making progress fails after this many seconds
# instead of using up the step's whole timeout.
export XCOLL_TIMEOUT=${XCOLL_TIMEOUT:-60}

names=() results=() notes=()
record() { names+=("$1"); results+=("$2"); notes+=("$3"); }

print_table() {
    local i w=5
    for i in "${!names[@]}"; do [ "${#names[$i]}" -gt "$w" ] && w=${#names[$i]}; done
    step "GPU checks: summary ($(gpu_desc))"
    printf '%-*s | %-7s | %s\n' "$w" check result "key number"
    printf '%s-|-%s-|-%s\n' "$(printf '%*s' "$w" '' | tr ' ' -)" "-------" "----------"
    for i in "${!names[@]}"; do
        printf '%-*s | %-7s | %s\n' "$w" "${names[$i]}" "${results[$i]}" "${notes[$i]}"
    done
}

finish() {
    print_table
    local i
    for i in "${!results[@]}"; do
        [ "${results[$i]}" = FAIL ] && exit 1
    done
    exit 0
}

# --- the machine ----------------------------------------------------------------------
gpu_state=unknown gpu_reason=
gpu_desc() {
    if [ "$gpu_state" = yes ]; then echo "GPU: $gpu_reason"
    else echo "no usable GPU: ${gpu_reason:-not probed}"; fi
}

# Asks the CUDA runtime itself, through the toolkit configure found: a
# driver too old for the runtime means "no GPU" as much as a missing card.
# Built with the library (a GPU machine may have no C compiler to spare).
build_probe() {
    local cc cppflags ldflags
    cc=$(sed -n 's/^CC = //p' "$B/Makefile")
    cppflags=$(sed -n 's/^CUDA_CPPFLAGS = //p' "$B/Makefile")
    ldflags=$(sed -n 's/^CUDA_LDFLAGS = //p' "$B/Makefile")
    cat > "$B/gpu_probe.c" <<'EOF'
#include <stdio.h>
#include <cuda_runtime_api.h>
int main(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n == 0)
        e = cudaErrorNoDevice;
    if (e == cudaSuccess)
        e = cudaFree(NULL); /* a device that is present but unusable fails here */
    if (e != cudaSuccess) {
        printf("%s\n", cudaGetErrorString(e));
        return 1;
    }
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess)
        p.name[0] = '\0';
    printf("%d device(s), device 0: %s, sm_%d%d\n", n, p.name, p.major, p.minor);
    return 0;
}
EOF
    # shellcheck disable=SC2086
    ${cc:-cc} $cppflags "$B/gpu_probe.c" -o "$B/gpu_probe" $ldflags -lcudart \
        > "$LOGS/gpu_probe.log" 2>&1
}

probe_gpu() {
    if [ ! -x "$B/gpu_probe" ]; then
        gpu_state=no gpu_reason="cannot build a CUDA probe (see $LOGS/gpu_probe.log)"
        return
    fi
    gpu_reason=$(timeout 60 "$B/gpu_probe" 2>&1 | head -n 1)
    if [ "${PIPESTATUS[0]}" -eq 0 ]; then gpu_state=yes; else gpu_state=no; fi
}

# --- running one check ----------------------------------------------------------------------
# run_check NAME SECONDS CMD...: runs CMD with its output in a log; sets
# rc and log. The output is shown as it comes, so a slow step shows life.
run_check() {
    local name=$1 secs=$2
    shift 2
    log=$LOGS/$(echo "$name" | tr -c 'A-Za-z0-9_.\n-' _).log
    step "$name (timeout ${secs}s)"
    local t0=$SECONDS
    timeout -k 10 "$secs" "$@" < /dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    printf '    (exit %d, %ds)\n' "$rc" $((SECONDS - t0))
}

# The verdict of a check that must skip cleanly without a GPU and pass
# with one. On a machine with a GPU, a program whose last word is a skip
# (or exit 77) has not checked anything: a failure. Without one, a skip
# anywhere in the output counts.
verdict() {
    local skipped=0
    if [ "$gpu_state" = yes ]; then
        grep -v '^[[:space:]]*$' "$log" | tail -n 1 | grep -qi 'skip' && skipped=1
    else
        grep -qi 'skip' "$log" && skipped=1
    fi
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo FAIL
    elif [ "$gpu_state" = yes ]; then
        if [ "$rc" -eq 0 ] && [ $skipped -eq 0 ]; then echo PASS; else echo FAIL; fi
    elif [ "$rc" -eq 77 ] || { [ "$rc" -eq 0 ] && [ $skipped -eq 1 ]; }; then echo SKIP
    elif [ "$rc" -eq 0 ]; then echo PASS # ran without a device (an emulation)
    else echo FAIL; fi
}

why_failed() {
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "timed out"
    elif [ "$gpu_state" = yes ] && [ "$rc" -eq 0 ]; then echo "skipped on a machine with a GPU"
    else echo "exit $rc; log: ${log#"$XCOLL_TOP"/}"; fi
}

# --- build ------------------------------------------------------------------------------------
mkdir -p "$LOGS"
build_t0=$SECONDS
# prog PATH: a program of the build; under --prebuilt the binary itself,
# since libtool's wrapper script names the directory it was built in.
prog() { printf '%s\n' "$B/$1"; }
if [ "$mode" != prebuilt ]; then
    if [ ! -x "$XCOLL_TOP/configure" ]; then
        if ! command -v autoreconf > /dev/null 2>&1; then
            record build FAIL "no configure and no autoreconf here: generate it elsewhere (./autogen.sh) and copy configure, aclocal.m4, build-aux/, m4/ and the Makefile.in files"
            finish
        fi
        if [ -f "$XCOLL_TOP/config.status" ]; then
            record build FAIL "$XCOLL_TOP was configured in place; run 'make distclean' there first"
            finish
        fi
        step "autogen.sh"
        (cd "$XCOLL_TOP" && ./autogen.sh) > "$LOGS/autogen.log" 2>&1 || {
            tail -n 20 "$LOGS/autogen.log"
            record build FAIL "autogen.sh failed (${LOGS#"$XCOLL_TOP"/}/autogen.log)"
            finish
        }
    fi
    step "configure in $BUILD/ --with-cuda --enable-werror"
    mkdir -p "$B"
    if ! (cd "$B" && timeout 300 "$XCOLL_TOP/configure" --with-cuda --enable-werror) \
            > "$B/configure.out" 2>&1; then
        tail -n 20 "$B/configure.out"
        record build FAIL "configure --with-cuda failed ($BUILD/config.log)"
        finish
    fi
    sed -n '/^xcoll .* configured$/,$p' "$B/configure.out"
    step "make -j$JOBS in $BUILD/"
    if ! timeout -k 10 420 make -C "$B" -j"$JOBS" > "$LOGS/make.log" 2>&1; then
        grep -E -B2 -A8 'error|Error' "$LOGS/make.log" | head -n 60
        record build FAIL "make failed or timed out (${LOGS#"$XCOLL_TOP"/}/make.log)"
        finish
    fi
    # The GPU tests are check programs, which plain make leaves alone; one the
    # Makefile has no rule for is reported MISSING below.
    for t in test/gpu/test_gpu_kernels test/gpu/fatbin_list test/gpu/test_gpu_coll; do
        grep -q "^$t\$(EXEEXT):" "$B/Makefile" || continue
        if ! timeout -k 10 300 make -C "$B" -j"$JOBS" "$t" >> "$LOGS/make.log" 2>&1; then
            grep -E -B2 -A8 'error|Error' "$LOGS/make.log" | head -n 60
            record build FAIL "make $t failed or timed out (${LOGS#"$XCOLL_TOP"/}/make.log)"
            finish
        fi
    done
    build_probe
    record build PASS "configure + make -j$JOBS: $((SECONDS - build_t0)) s"
    [ "$mode" = build ] && finish
    mpirun=$(mpirun_of "$BUILD")
else
    if [ ! -f "$B/Makefile" ] || [ ! -f "$B/lib/.libs/libxcoll.so" ]; then
        record build FAIL "--prebuilt, but nothing is built in $BUILD/: run scripts/gpu_runtime.sh on a CPU machine and bring $BUILD/ and gpu-runtime/"
        finish
    fi
    record build PASS "prebuilt ($(sed -n 's/^XCOLL_CUDA_ARCHS = /sm /p' "$B/Makefile"))"
    if ! command -v mpirun > /dev/null 2>&1; then
        if [ -f "$XCOLL_TOP/gpu-runtime/env.sh" ]; then
            # shellcheck disable=SC1091
            . "$XCOLL_TOP/gpu-runtime/env.sh"
        fi
        if ! command -v mpirun > /dev/null 2>&1; then
            record runtime FAIL "no mpirun, and no gpu-runtime/env.sh: run scripts/gpu_runtime.sh on a CPU machine"
            finish
        fi
    fi
    if ! ver=$(timeout 60 mpirun --version 2>&1 | head -n 1) || [ -z "$ver" ]; then
        record runtime FAIL "mpirun --version fails: $ver"
        finish
    fi
    record runtime PASS "$ver ($(command -v mpirun))"
    # libxcoll from the build; libcudart from this machine's toolkit if it
    # has one, else from the one the library was built with (its rpath)
    cudart=
    if command -v nvcc > /dev/null 2>&1; then
        for d in "$(dirname "$(command -v nvcc)")"/../lib64 \
                 "$(dirname "$(command -v nvcc)")"/../targets/x86_64-linux/lib; do
            if ls "$d"/libcudart.so* > /dev/null 2>&1; then cudart=$(cd "$d" && pwd); break; fi
        done
    fi
    export LD_LIBRARY_PATH="$B/lib/.libs${cudart:+:$cudart}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    prog() {
        local d f
        d=$(dirname "$1") f=$(basename "$1")
        if [ -x "$B/$d/.libs/$f" ]; then printf '%s\n' "$B/$d/.libs/$f"
        else printf '%s\n' "$B/$1"; fi
    }
    mpirun="mpirun $(sed -n 's/^MPIRUN_FLAGS = //p' "$B/Makefile")"
fi
# cuobjdump: the one configure found, or under --prebuilt this machine's
cuobjdump=$(sed -n 's/^CUOBJDUMP = //p' "$B/Makefile")
[ -n "$cuobjdump" ] || [ "$mode" != prebuilt ] || cuobjdump=$(command -v cuobjdump || true)

probe_gpu
step "$(gpu_desc)"

# --- the kernels ----------------------------------------------------------------------------
kernels=$(prog test/gpu/test_gpu_kernels)
if [ ! -x "$kernels" ]; then
    record test_gpu_kernels MISSING "not built ($BUILD/test/gpu/test_gpu_kernels)"
    record "test_gpu_kernels --bench" MISSING "not built"
else
    run_check test_gpu_kernels 120 "$kernels"
    v=$(verdict)
    note=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
    [ "$v" = FAIL ] && note="$(why_failed): $note"
    record test_gpu_kernels "$v" "$note"

    run_check "test_gpu_kernels --bench" 180 "$kernels" --bench
    v=$(verdict)
    # The table's rows at 256 MiB: dtype, size, MiB, memcpy GB/s, reduce
    # GB/s, ratio (reduce moves 3 x bytes, the copy 2 x).
    note=$(awk '$2 == 256 && $3 == "MiB" && $4 + 0 > 0 {
                    printf "%s%s reduce at 256 MiB: %s GB/s = %.0f%% of D2D copy (%s GB/s)",
                           sep, $1, $5, 100 * $5 / $4, $4; sep = "; " }' "$log")
    [ "$v" = SKIP ] && note=$(grep -m1 -i 'skip' "$log")
    [ -n "$note" ] || note=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
    [ "$v" = FAIL ] && note="$(why_failed): $note"
    record "test_gpu_kernels --bench" "$v" "$note"
fi

# The architectures in the library: needs no GPU, so it passes or fails anywhere.
if [ ! -x "$B/test/gpu/fatbin_list" ] || [ ! -f "$XCOLL_TOP/test/gpu/check_fatbin.sh" ]; then
    record "check_fatbin (GPU architectures)" MISSING "not built (test/gpu/check_fatbin.sh, fatbin_list)"
else
    run_check "check_fatbin (GPU architectures)" 60 env top_builddir="$B" \
        XCOLL_CUDA_ARCHS="$(sed -n 's/^XCOLL_CUDA_ARCHS = //p' "$B/Makefile")" \
        CUOBJDUMP="$cuobjdump" \
        sh "$XCOLL_TOP/test/gpu/check_fatbin.sh"
    note=$(grep -m1 'fatbin_list:' "$log")
    [ -n "$note" ] || note=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ]; then record "check_fatbin (GPU architectures)" PASS "$note"
    else record "check_fatbin (GPU architectures)" FAIL "$(why_failed): $note"; fi
fi

# --- collectives on device memory --------------------------------------------------------------
coll=$(prog test/gpu/test_gpu_coll)
# gpu_coll NAME NP [ARGS...]: one row of test_gpu_coll
gpu_coll() {
    name=$1 np=$2
    shift 2
    if [ ! -x "$coll" ]; then
        record "$name" MISSING "not built ($BUILD/test/gpu/test_gpu_coll)"
        return
    fi
    run_check "$name" 150 $mpirun -np "$np" "$coll" "$@"
    v=$(verdict)
    note=$(grep -E '^test_gpu_coll:' "$log" | tail -n 1)
    [ -n "$note" ] || note="no summary line"
    [ "$v" = FAIL ] && note="$(why_failed): $note"
    record "$name" "$v" "$note"
}
# First on the emulated GPU: needs no device, so a failure here is the MPI
# runtime or the engine, not CUDA, and it reads apart from the device rows.
gpu_coll "test_gpu_coll --emulate, 2 ranks" 2 --emulate --quick
for np in 2 4; do
    gpu_coll "test_gpu_coll, $np ranks" "$np"
done

example=$(prog examples/allreduce_cuda)
if [ ! -x "$example" ]; then
    record "allreduce_cuda, 2 ranks" MISSING "not built ($BUILD/examples/allreduce_cuda)"
else
    run_check "allreduce_cuda, 2 ranks" 60 $mpirun -np 2 "$example"
    v=$(verdict)
    if [ "$v" = SKIP ]; then note=$(grep -m1 'skipped' "$log")
    else note="$(grep -c ': ok (0 wrong)' "$log") of 2 ranks ok"; fi
    [ "$v" = FAIL ] && note="$(why_failed); $note"
    record "allreduce_cuda, 2 ranks" "$v" "$note"
fi

# --- xcoll-perf on device memory -------------------------------------------------------------------
# busbw (out of place) of the rows at 64 MiB and 256 MiB of the table:
# -b 16 -f 4 steps through both (-b 8 would step through 32M and 128M).
busbw_at() {
    awk '$1 == 67108864 { a = $8 } $1 == 268435456 { b = $8 }
         END { printf "busbw 64M: %s GB/s, 256M: %s GB/s", a != "" ? a : "-", b != "" ? b : "-" }' "$log"
}
for mode in "" --stream; do
    name="xcoll-perf -m cuda${mode:+ $mode}, 2 ranks"
    run_check "$name" 200 $mpirun -np 2 "$(prog bin/xcoll-perf)" -m cuda -C allreduce \
        -b 16 -e 256M -f 4 $mode
    # Without a device xcoll-perf exits 2 with its reason: the one clean skip.
    if [ "$rc" -eq 2 ] && grep -q 'no CUDA device' "$log" && [ "$gpu_state" != yes ]; then
        record "$name" SKIP "$(grep -m1 -o 'no CUDA device.*' "$log")"
    elif [ "$rc" -eq 0 ]; then
        record "$name" PASS "$(busbw_at)"
    else
        record "$name" FAIL "$(why_failed); $(grep -m1 -E 'Out of bounds|xcoll-perf' "$log")"
    fi
done

finish
