#!/usr/bin/env bash
# gpu_runtime.sh - prepares, on this (CPU) machine, everything a GPU machine
# that has no MPI, no UCX and no autotools needs to run scripts/gpu_check.sh:
#
#   1. gpu-runtime/: Debian's Open MPI and UCX runtime (apt-get download,
#      dpkg -x), without documentation, headers and Fortran, and an env.sh
#      that points PATH, LD_LIBRARY_PATH, OPAL_PREFIX, UCX_MODULE_DIR and
#      the PMIx component path at it;
#   2. build-gpu/: xcoll configured --with-cuda --enable-werror and built,
#      GPU test programs included (scripts/gpu_check.sh --prebuilt runs them
#      without make).
#
# Then, on the GPU machine, one command over a copy of the tree that carries
# both folders:   scripts/gpu_check.sh --prebuilt
# (the device tool: carry ["gpu-runtime", "build-gpu"]). Both folders are
# git-ignored; the script prints their sizes (the device tool carries at most
# 64 MiB). Needs root (or sudo) for the apt-get steps, and network.
#
#   scripts/gpu_runtime.sh [--runtime-only | --build-only]
set -euo pipefail
. "$(dirname "$0")/common.sh"

RT=$XCOLL_TOP/gpu-runtime
B=$XCOLL_TOP/build-gpu
do_runtime=1 do_build=1
case "${1:-}" in
    --runtime-only) do_build=0 ;;
    --build-only) do_runtime=0 ;;
    "") ;;
    *) die "usage: scripts/gpu_runtime.sh [--runtime-only | --build-only]" ;;
esac

# The runtime libraries of mpirun, libmpi and UCX (as Debian 12 splits
# them), and what their shared objects link; the launcher, the PMIx and
# UCX plugins come with them. Not: headers, Fortran, Java. The InfiniBand
# and OFI libraries are there because Open MPI opens every component of a
# framework, and one whose library is missing prints a warning.
RT_PACKAGES="openmpi-bin openmpi-common libopenmpi3 libpmix2 libmunge2 libucx0 libhwloc15
             libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libnuma1 libfabric1
             libpsm2-2 libpsm-infinipath1 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200
             libltdl7"
# Libraries any Debian or Ubuntu system has, which a bare container image
# may not: kept in gpu-runtime/fallback/, used only where the system lacks
# one (a newer system copy stays in use).
RT_FALLBACK="libudev1 zlib1g libatomic1 libuuid1"

if [ "$do_runtime" = 1 ]; then
    XCOLL_PACKAGES="$XCOLL_PACKAGES dpkg-dev"
    install_packages
    step "downloading the runtime packages"
    dl=$(mktemp -d "${TMPDIR:-/tmp}/xcoll-gpu-rt.XXXXXX")
    trap 'rm -rf "$dl"' EXIT
    (cd "$dl" && apt-get download $RT_PACKAGES $RT_FALLBACK) > "$dl/download.log" 2>&1 || {
        # a package this release does not have is left out, the rest kept
        for p in $RT_PACKAGES $RT_FALLBACK; do (cd "$dl" && apt-get download "$p") > /dev/null 2>&1 || true; done
    }
    rm -rf "$RT"
    mkdir -p "$RT/fallback"
    for deb in "$dl"/*.deb; do
        case "$(dpkg-deb -f "$deb" Package)" in
        libudev1 | zlib1g | libatomic1 | libuuid1)
            dpkg -x "$deb" "$dl/fallback"
            find "$dl/fallback" -name '*.so.*' -exec cp -a {} "$RT/fallback/" \; ;;
        *) dpkg -x "$deb" "$RT" ;;
        esac
    done
    # what a run does not read
    rm -rf "$RT/usr/share/doc" "$RT/usr/share/man" "$RT/usr/share/lintian" "$RT/usr/include" \
        "$RT/usr/lib/x86_64-linux-gnu/openmpi/include" "$RT/usr/share/java"
    find "$RT" \( -name '*fort*' -o -name '*mpifh*' -o -name '*usempi*' -o -name '*.a' \
        -o -name '*java*' \) -print0 | xargs -0 rm -rf
    # Debian's alternatives (mpirun, the PSM library) are links in /etc,
    # not in the packages
    ln -s orterun "$RT/usr/bin/mpirun"
    ln -s orterun "$RT/usr/bin/mpiexec"
    ln -s libpsm_infinipath.so.1.16 "$RT/usr/lib/libpsm1/libpsm_infinipath.so.1"
    cat > "$RT/env.sh" <<'EOF'
# env.sh - sourced by scripts/gpu_check.sh on a machine without MPI or UCX:
# the Debian runtime that scripts/gpu_runtime.sh extracted beside the tree.
rt=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=$rt/usr/lib/x86_64-linux-gnu
ldpath="$lib:$lib/pmix2/lib:$rt/usr/lib/libpsm1"
# a library of the base system that this one lacks comes from fallback/
for f in "$rt"/fallback/*.so.*; do
    n=${f##*/}
    case "$n" in *.so.*.*) continue ;; esac # the soname links only
    if ! { command -v ldconfig > /dev/null && ldconfig -p | grep -q "^[[:space:]]*$n "; } &&
        [ ! -e "/lib/x86_64-linux-gnu/$n" ] && [ ! -e "/usr/lib/x86_64-linux-gnu/$n" ]; then
        ldpath="$ldpath:$rt/fallback"
        break
    fi
done
export PATH="$rt/usr/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$ldpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Open MPI and PMIx find their components and help files under a prefix
# given at run time; UCX its transports in its module directory
export OPAL_PREFIX="$rt/usr"
export PMIX_PREFIX="$lib/pmix2"
export PMIX_MCA_mca_base_component_path="$lib/pmix2/lib/pmix"
export UCX_MODULE_DIR="$lib/ucx"
# one node: MPI's own traffic over shared memory; nothing probes a network
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=^ucx
# The GPU machine may run under a sandboxing kernel where process_vm_readv
# fails: neither MPI nor UCX may count on single-copy reads (xcoll's own
# shared memory does not use them unless XCOLL_SHM_CMA_MIN asks)
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export UCX_TLS="${UCX_TLS:-^cma}"
unset rt lib ldpath f n
EOF
    step "gpu-runtime/: $(du -sh "$RT" | cut -f1)"
fi

if [ "$do_build" = 1 ]; then
    install_packages
    generate
    step "building in build-gpu/: scripts/gpu_check.sh --build-only"
    XCOLL_JOBS_GPU=$XCOLL_JOBS "$XCOLL_TOP/scripts/gpu_check.sh" --build-only ||
        die "the build failed (build-gpu/gpu-check-logs/)"
    # a carried tree keeps what runs: objects, dependency files and static
    # archives go
    find "$B" \( -name '*.o' -o -name '*.lo' -o -name '.deps' -o -name '*.a' \) -prune \
        -exec rm -rf {} +
    step "build-gpu/: $(du -sh "$B" | cut -f1)"
fi
step "together: $(du -shc "$RT" "$B" 2>/dev/null | tail -n 1 | cut -f1) (the device tool carries 64 MiB)"
step "on the GPU machine: scripts/gpu_check.sh --prebuilt"
