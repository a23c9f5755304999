# common.sh - shared by scripts/demo.sh and scripts/check.sh (sourced, not run).
#
# Both scripts start from a fresh Debian 12 machine: install what is
# missing, generate the build system, configure in a build directory.

XCOLL_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
XCOLL_START=$SECONDS
XCOLL_PACKAGES="build-essential autoconf automake libtool pkg-config
                libopenmpi-dev openmpi-bin libucx-dev ucx-utils"
XCOLL_JOBS=${XCOLL_JOBS:-2}

step() { printf '\n==> [%dm%02ds] %s\n' $(((SECONDS - ${XCOLL_START:-0}) / 60)) $(((SECONDS - ${XCOLL_START:-0}) % 60)) "$*"; }
die() { printf '\nERROR: %s\n' "$*" >&2; exit 1; }

report_elapsed() {
    local rc=$? t=$((SECONDS - XCOLL_START))
    if [ "$rc" -eq 0 ]; then
        printf '\n%s: OK, %dm%02ds elapsed\n' "$(basename "$0")" $((t / 60)) $((t % 60))
    else
        printf '\n%s: FAILED (exit %d), %dm%02ds elapsed\n' "$(basename "$0")" "$rc" $((t / 60)) $((t % 60)) >&2
    fi
}
trap report_elapsed EXIT

# apt-get runs (and "apt-get update" with it) only when a package is missing.
install_packages() {
    if ! command -v dpkg-query >/dev/null 2>&1; then
        step "not a Debian system: make sure these are installed: $(echo $XCOLL_PACKAGES)"
        return 0
    fi
    local missing="" pkg
    for pkg in $XCOLL_PACKAGES; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $pkg"
    done
    if [ -z "$missing" ]; then
        step "Debian packages: all present"
        return 0
    fi
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "missing packages:$missing (run as root, or install sudo)"
        sudo=sudo
    fi
    step "installing Debian packages:$missing"
    $sudo apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

# Generate configure (always: cheap, and the tree may have changed).
generate() {
    [ ! -f "$XCOLL_TOP/config.status" ] ||
        die "$XCOLL_TOP was configured in place; run 'make distclean' there first (builds go to build directories)"
    step "autogen.sh"
    (cd "$XCOLL_TOP" && ./autogen.sh)
}

# configure_in DIR [configure options...]: configure in $XCOLL_TOP/DIR.
configure_in() {
    local dir=$XCOLL_TOP/$1
    shift
    step "configure in ${dir#$XCOLL_TOP/}/ $*"
    mkdir -p "$dir"
    (cd "$dir" && "$XCOLL_TOP/configure" "$@") > "$dir/configure.out" 2>&1 || {
        tail -n 30 "$dir/configure.out"
        die "configure failed in $dir (see $dir/config.log)"
    }
    # The summary block at the end of configure's output.
    sed -n '/^xcoll .* configured$/,$p' "$dir/configure.out"
}

# The launcher configure chose, with its flags (e.g. --oversubscribe).
mpirun_of() {
    local mk=$XCOLL_TOP/$1/Makefile
    printf '%s %s' "$(sed -n 's/^MPIRUN = //p' "$mk")" "$(sed -n 's/^MPIRUN_FLAGS = //p' "$mk")"
}
