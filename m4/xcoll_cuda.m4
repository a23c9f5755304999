# xcoll_cuda.m4 - optional CUDA support: nvcc, the runtime header and libcudart.
#
# --with-cuda=DIR uses that toolkit and fails if it is incomplete;
# --without-cuda turns CUDA off; by default /usr/local/cuda is used when
# complete. With CUDA, libxcoll links libcudart (with an rpath to the
# toolkit, which is often outside the loader's default paths).
#
# --with-cuda-arch="80 90 100" lists the GPU architectures (compute
# capability times ten) the kernels are built for: machine code (SASS) for
# each, plus the PTX of the highest, which the driver compiles for GPUs newer
# than all of them. Each must be one that $NVCC --list-gpu-arch names.
#
# Defines HAVE_CUDA; AM_CONDITIONAL HAVE_CUDA; substitutes NVCC CUDA_CPPFLAGS
# CUDA_LDFLAGS CUDA_LIBS XCOLL_CUDA_VERSION NVCC_ARCH_FLAGS XCOLL_CUDA_ARCHS
# NVCC_WARN_FLAGS CUOBJDUMP (empty when the toolkit has none); sets
# xcoll_have_cuda=yes|no. Reads enable_werror (set before this runs).
AC_DEFUN([XCOLL_CHECK_CUDA], [
AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit prefix (default: /usr/local/cuda if present);
                    --without-cuda builds without GPU support])],
    [], [with_cuda=auto])
AC_ARG_VAR([NVCC], [CUDA compiler (default: DIR/bin/nvcc of the CUDA toolkit)])
AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch="80 90 100"],
                    [GPU architectures (compute capability x 10) to build CUDA machine code for;
                     the highest is also embedded as PTX for newer GPUs (default: "80 90 100")])],
    [xcoll_arch_given=yes], [with_cuda_arch="80 90 100"; xcoll_arch_given=no])
AC_ARG_VAR([NVCCFLAGS], [extra nvcc flags for the CUDA kernels])
AC_ARG_VAR([CUOBJDUMP], [CUDA binary lister, for make check (default: cuobjdump beside nvcc)])

xcoll_have_cuda=no
xcoll_cuda_why=
NVCC=${NVCC-}
CUDA_CPPFLAGS=
CUDA_LDFLAGS=
CUDA_LIBS=
XCOLL_CUDA_VERSION=
NVCC_ARCH_FLAGS=
NVCC_WARN_FLAGS=
XCOLL_CUDA_ARCHS=
AS_CASE([$with_cuda],
    [no], [xcoll_cuda_dir=; xcoll_cuda_why="--without-cuda"],
    [yes|auto], [xcoll_cuda_dir=/usr/local/cuda],
    [xcoll_cuda_dir=$with_cuda])

AS_IF([test -n "$xcoll_cuda_dir"], [
    AC_MSG_CHECKING([for a CUDA toolkit in $xcoll_cuda_dir])
    AS_IF([test -z "$NVCC" && test -x "$xcoll_cuda_dir/bin/nvcc"], [NVCC=$xcoll_cuda_dir/bin/nvcc])
    xcoll_cuda_libdir=
    for xcoll_d in "$xcoll_cuda_dir/lib64" "$xcoll_cuda_dir/lib" "$xcoll_cuda_dir/targets/x86_64-linux/lib"; do
        AS_IF([test -z "$xcoll_cuda_libdir" && ls "$xcoll_d"/libcudart.so* >/dev/null 2>&1],
              [xcoll_cuda_libdir=$xcoll_d])
    done
    AS_IF([test -z "$NVCC"], [xcoll_cuda_why="no nvcc"],
          [test ! -f "$xcoll_cuda_dir/include/cuda_runtime.h"], [xcoll_cuda_why="no include/cuda_runtime.h"],
          [test -z "$xcoll_cuda_libdir"], [xcoll_cuda_why="no libcudart"],
          [xcoll_have_cuda=yes])
    AS_IF([test $xcoll_have_cuda = yes], [AC_MSG_RESULT([yes])],
          [AC_MSG_RESULT([no ($xcoll_cuda_why)])])])

AS_IF([test $xcoll_have_cuda = yes], [
    CUDA_CPPFLAGS="-I$xcoll_cuda_dir/include"
    CUDA_LDFLAGS="-L$xcoll_cuda_libdir -Wl,-rpath,$xcoll_cuda_libdir"
    # nvcc's generated launch stubs are C++ with guarded static locals
    # (__cxa_guard_*), and the library is linked by the C compiler.
    CUDA_LIBS="-lcudart -lstdc++"
    xcoll_save_CPPFLAGS=$CPPFLAGS
    xcoll_save_LDFLAGS=$LDFLAGS
    xcoll_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
    LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
    LIBS="$CUDA_LIBS $LIBS"
    AC_MSG_CHECKING([whether CUDA runtime programs link])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime.h>]],
                                    [[int n = 0; (void)cudaGetDeviceCount(&n);]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no]); xcoll_have_cuda=no; xcoll_cuda_why="cannot link libcudart"])
    AS_IF([test $xcoll_have_cuda = yes], [
        AC_COMPUTE_INT([xcoll_cudart_version], [CUDART_VERSION], [[#include <cuda_runtime_api.h>]],
                       [xcoll_cudart_version=0])
        XCOLL_CUDA_VERSION=`expr $xcoll_cudart_version / 1000`.`expr $xcoll_cudart_version % 1000 / 10`])
    CPPFLAGS=$xcoll_save_CPPFLAGS
    LDFLAGS=$xcoll_save_LDFLAGS
    LIBS=$xcoll_save_LIBS])

AS_IF([test $xcoll_have_cuda = yes], [
    AC_MSG_CHECKING([the CUDA architectures to build for])
    # One line, blank-separated, with blanks at both ends for matching.
    xcoll_nvcc_archs=" "`$NVCC --list-gpu-arch 2>/dev/null | tr '\n' ' '`
    AS_IF([test "x$xcoll_nvcc_archs" = "x "],
        [AC_MSG_RESULT([?])
         AC_MSG_ERROR([cannot list the architectures $NVCC supports ($NVCC --list-gpu-arch failed)])])
    xcoll_arch_max=
    for xcoll_arch in $with_cuda_arch; do
        AS_CASE([$xcoll_arch],
            [*[[!0-9]]*], [AC_MSG_RESULT([?])
                           AC_MSG_ERROR([--with-cuda-arch: '$xcoll_arch' is not a compute capability times ten (such as 80 or 90)])])
        AS_CASE([$xcoll_nvcc_archs],
            [*" compute_$xcoll_arch "*], [],
            [AC_MSG_RESULT([?])
             # An older toolkit found on its own must not fail the build:
             # it is a CPU build then, and the summary says why.
             AS_IF([test "x$with_cuda" = xauto && test $xcoll_arch_given = no],
                 [AC_MSG_WARN([$NVCC cannot build for sm_$xcoll_arch (it supports:$xcoll_nvcc_archs): building without CUDA; choose architectures with --with-cuda-arch="..."])
                  xcoll_have_cuda=no
                  xcoll_cuda_why="$NVCC cannot build for the default sm_$xcoll_arch (see --with-cuda-arch)"
                  break],
                 [AC_MSG_ERROR([--with-cuda-arch: $NVCC cannot build for sm_$xcoll_arch; it supports:$xcoll_nvcc_archs(choose with --with-cuda-arch="...", or build without CUDA: --without-cuda)])])])
        NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$xcoll_arch,code=sm_$xcoll_arch"
        XCOLL_CUDA_ARCHS="$XCOLL_CUDA_ARCHS${XCOLL_CUDA_ARCHS:+ }$xcoll_arch"
        AS_IF([test -z "$xcoll_arch_max" || test $xcoll_arch -gt $xcoll_arch_max],
              [xcoll_arch_max=$xcoll_arch])
    done])

AS_IF([test $xcoll_have_cuda = yes], [
    AS_IF([test -z "$xcoll_arch_max"],
        [AC_MSG_RESULT([none])
         AC_MSG_ERROR([--with-cuda-arch="$with_cuda_arch" names no architecture])])
    NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$xcoll_arch_max,code=compute_$xcoll_arch_max"
    AC_MSG_RESULT([$XCOLL_CUDA_ARCHS (PTX: $xcoll_arch_max)])

    NVCC_WARN_FLAGS="--compiler-options=-Wall,-Wextra"
    AS_IF([test "x$enable_werror" = xyes],
          [NVCC_WARN_FLAGS="$NVCC_WARN_FLAGS,-Werror --Werror=all-warnings"])

    AS_IF([test -z "$CUOBJDUMP"], [
        for xcoll_d in `dirname "$NVCC"` "$xcoll_cuda_dir/bin"; do
            AS_IF([test -z "$CUOBJDUMP" && test -x "$xcoll_d/cuobjdump"], [CUOBJDUMP=$xcoll_d/cuobjdump])
        done])
    AC_MSG_CHECKING([for cuobjdump])
    AC_MSG_RESULT([${CUOBJDUMP:-no (make check reads the fat binary itself)}])])

# An explicit request that cannot be met is an error, not a silent CPU build.
AS_IF([test $xcoll_have_cuda = no && test "x$with_cuda" != xno && test "x$with_cuda" != xauto],
    [AC_MSG_ERROR([CUDA requested (--with-cuda=$with_cuda) but not usable: $xcoll_cuda_why])])
AS_IF([test $xcoll_have_cuda = yes],
    [AC_DEFINE([HAVE_CUDA], [1], [Define to 1 to build the CUDA support])],
    [NVCC=; CUDA_CPPFLAGS=; CUDA_LDFLAGS=; CUDA_LIBS=; CUOBJDUMP=
     test -n "$xcoll_cuda_why" || xcoll_cuda_why="not found in /usr/local/cuda"])
AM_CONDITIONAL([HAVE_CUDA], [test $xcoll_have_cuda = yes])
AC_SUBST([NVCC])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LDFLAGS])
AC_SUBST([CUDA_LIBS])
AC_SUBST([XCOLL_CUDA_VERSION])
AC_SUBST([NVCC_ARCH_FLAGS])
AC_SUBST([NVCC_WARN_FLAGS])
AC_SUBST([XCOLL_CUDA_ARCHS])
AC_SUBST([CUOBJDUMP])
])
