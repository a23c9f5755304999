#!/bin/sh
# check_fatbin.sh - make check: the installed library carries GPU machine code
# (SASS) for exactly the architectures configure was given
# (--with-cuda-arch, in XCOLL_CUDA_ARCHS) and PTX for the highest of them,
# so that a GPU missing from the build is caught here rather than by a
# "no kernel image" error on a user's machine.
#
# Lists the images with $CUOBJDUMP when the toolkit has it, and always with
# test/gpu/fatbin_list (which reads the ELF itself); every lister must agree.
# Environment (Makefile.am's AM_TESTS_ENVIRONMENT): top_builddir,
# XCOLL_CUDA_ARCHS, CUOBJDUMP (may be empty).
me=check_fatbin
lib=${top_builddir:-.}/lib/.libs/libxcoll.so
lister=${top_builddir:-.}/test/gpu/fatbin_list

if test -z "$XCOLL_CUDA_ARCHS"; then
    echo "$me: XCOLL_CUDA_ARCHS is not set (run through make check)"
    exit 99
fi
if test ! -f "$lib"; then
    echo "$me: $lib is missing (build the library first)"
    exit 99
fi

max=
expected=
for a in $XCOLL_CUDA_ARCHS; do
    expected="$expected
sass sm_$a"
    if test -z "$max" || test "$a" -gt "$max"; then max=$a; fi
done
expected=$(printf '%s\nptx compute_%s\n' "$expected" "$max" | sed '/^$/d' | sort -u)

tmp=${TMPDIR:-/tmp}/check_fatbin.$$
trap 'rm -f "$tmp"' EXIT
status=0

# $1: the lister's name; its "sass sm_N" / "ptx compute_N" lines in $tmp.
compare() {
    found=$(sort -u "$tmp")
    if test "x$found" = "x$expected"; then
        echo "$me: $1: $(echo $found | tr '\n' ' ')"
        return
    fi
    echo "$me: FAIL: $1 lists images other than the configured ones in $lib"
    echo "  configured (--with-cuda-arch=\"$XCOLL_CUDA_ARCHS\"):"
    echo "$expected" | sed 's/^/    /'
    echo "  found:"
    echo "$found" | sed 's/^/    /'
    status=1
}

if ! "$lister" "$lib" >"$tmp"; then
    echo "$me: FAIL: $lister could not list the GPU code of $lib"
    exit 1
fi
compare fatbin_list

if test -n "$CUOBJDUMP"; then
    # cuobjdump names images <lib>.<n>.sm_<arch>.cubin and <lib>.<n>.sm_<arch>.ptx
    if ! { "$CUOBJDUMP" --list-elf "$lib" && "$CUOBJDUMP" --list-ptx "$lib"; } >"$tmp.raw"; then
        echo "$me: FAIL: $CUOBJDUMP could not list $lib"
        rm -f "$tmp.raw"
        exit 1
    fi
    sed -n -e 's/.*\.sm_\([0-9a-z]*\)\.cubin.*/sass sm_\1/p' \
        -e 's/.*\.sm_\([0-9a-z]*\)\.ptx.*/ptx compute_\1/p' "$tmp.raw" >"$tmp"
    rm -f "$tmp.raw"
    compare cuobjdump
else
    echo "$me: no cuobjdump in this toolkit; fatbin_list's reading is the check"
fi
exit $status
