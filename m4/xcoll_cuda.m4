# xcoll_cuda.m4 - optional CUDA support: nvcc, the runtime header and libcudart.
#
# --with-cuda=DIR uses that toolkit and fails if it is incomplete;
# --without-cuda turns CUDA off; by default /usr/local/cuda is used when
# complete. With CUDA, libxcoll links libcudart (with an rpath to the
# toolkit, which is often outside the loader's default paths).
#
# Defines HAVE_CUDA; AM_CONDITIONAL HAVE_CUDA; substitutes NVCC CUDA_CPPFLAGS
# CUDA_LDFLAGS CUDA_LIBS XCOLL_CUDA_VERSION; sets xcoll_have_cuda=yes|no.
AC_DEFUN([XCOLL_CHECK_CUDA], [
AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit prefix (default: /usr/local/cuda if present);
                    --without-cuda builds without GPU support])],
    [], [with_cuda=auto])
AC_ARG_VAR([NVCC], [CUDA compiler (default: DIR/bin/nvcc of the CUDA toolkit)])

xcoll_have_cuda=no
xcoll_cuda_why=
NVCC=${NVCC-}
CUDA_CPPFLAGS=
CUDA_LDFLAGS=
CUDA_LIBS=
XCOLL_CUDA_VERSION=
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
    CUDA_LIBS="-lcudart"
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

# An explicit request that cannot be met is an error, not a silent CPU build.
AS_IF([test $xcoll_have_cuda = no && test "x$with_cuda" != xno && test "x$with_cuda" != xauto],
    [AC_MSG_ERROR([CUDA requested (--with-cuda=$with_cuda) but not usable: $xcoll_cuda_why])])
AS_IF([test $xcoll_have_cuda = yes],
    [AC_DEFINE([HAVE_CUDA], [1], [Define to 1 to build the CUDA support])],
    [NVCC=; CUDA_CPPFLAGS=; CUDA_LDFLAGS=; CUDA_LIBS=
     test -n "$xcoll_cuda_why" || xcoll_cuda_why="not found in /usr/local/cuda"])
AM_CONDITIONAL([HAVE_CUDA], [test $xcoll_have_cuda = yes])
AC_SUBST([NVCC])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LDFLAGS])
AC_SUBST([CUDA_LIBS])
AC_SUBST([XCOLL_CUDA_VERSION])
])
