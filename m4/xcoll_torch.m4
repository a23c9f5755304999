# xcoll_torch.m4 - the torch.distributed backend (lib/torch/): a Python
# extension module, xcoll_torch, built against the PyTorch that a Python
# interpreter imports. Debian's python3-torch is seen only by
# /usr/bin/python3, so that is the first interpreter tried.
#
# Sets and substitutes:
#   TORCH_PYTHON                     the interpreter (AC_ARG_VAR)
#   TORCH_CPPFLAGS TORCH_LIBS        torch's and Python's headers, torch's libraries
#   xcoll_torch_pydir                where make install puts xcoll_torch.so
#   XCOLL_TORCH_SUMMARY              one line for the configure summary
# and the automake conditionals XCOLL_TORCH and, per ProcessGroup API,
# XCOLL_TORCH_1_13 (lib/torch/torch_1_13.cpp). Call after AC_PROG_CXX.
AC_DEFUN([XCOLL_CHECK_TORCH], [
AC_ARG_WITH([torch],
    [AS_HELP_STRING([--with-torch],
        [build the torch.distributed backend "xcoll" (Python module xcoll_torch;
         default: when a Python interpreter imports a torch this backend is
         written for; needs C++17)])],
    [], [with_torch=auto])
AC_ARG_WITH([torch-pythondir],
    [AS_HELP_STRING([--with-torch-pythondir=DIR],
        [install xcoll_torch.so there (default: LIBDIR/pythonX.Y/dist-packages
         for a Debian Python, else LIBDIR/pythonX.Y/site-packages)])],
    [], [with_torch_pythondir=])
AC_ARG_VAR([TORCH_PYTHON], [Python interpreter whose torch to build against (default: /usr/bin/python3, else python3)])

xcoll_torch_why=
TORCH_CPPFLAGS=
TORCH_LIBS=
xcoll_torch_api=
XCOLL_TORCH_VERSION=
AS_IF([test "x$with_torch" = xno], [xcoll_torch_why="disabled (--without-torch)"],
      [test "x$enable_sanitizers" = xyes],
      [xcoll_torch_why="not with --enable-sanitizers (the Python interpreter is not built with them)"])

AS_IF([test -z "$xcoll_torch_why" && test -z "$TORCH_PYTHON"], [
    for xcoll_py in /usr/bin/python3 python3; do
        AS_IF([$xcoll_py -c 'import torch' >/dev/null 2>&1], [TORCH_PYTHON=$xcoll_py; break])
    done
    AS_IF([test -z "$TORCH_PYTHON"], [xcoll_torch_why="no Python interpreter imports torch (apt-get install python3-torch libtorch-dev)"])])

AS_IF([test -z "$xcoll_torch_why"], [
    AC_MSG_CHECKING([for torch under $TORCH_PYTHON])
    AS_IF([xcoll_torch_facts=`$TORCH_PYTHON $srcdir/lib/torch/torch_facts.py 2>/dev/null`],
          [], [xcoll_torch_facts=])
    set dummy $xcoll_torch_facts
    AS_IF([test $[#] -ne 8], [
        AC_MSG_RESULT([no])
        xcoll_torch_why="$TORCH_PYTHON imports torch but cannot describe it (torch.utils.cpp_extension)"], [
        XCOLL_TORCH_VERSION=$[2]
        xcoll_torch_abi=$[3]
        xcoll_torch_pyver=$[7]
        xcoll_torch_debian=$[8]
        for xcoll_d in `echo "$[4]" | tr ':' ' '` $[6]; do
            TORCH_CPPFLAGS="$TORCH_CPPFLAGS -isystem $xcoll_d"
        done
        TORCH_CPPFLAGS="$TORCH_CPPFLAGS -D_GLIBCXX_USE_CXX11_ABI=$xcoll_torch_abi"
        AS_IF([test "x$[5]" != x-], [
            for xcoll_d in `echo "$[5]" | tr ':' ' '`; do
                TORCH_LIBS="$TORCH_LIBS -L$xcoll_d"
            done])
        TORCH_LIBS="$TORCH_LIBS -ltorch_python -ltorch -ltorch_cpu -lc10"
        AC_MSG_RESULT([$XCOLL_TORCH_VERSION])])])

# The ProcessGroup API changes between torch versions: one file per API.
AS_IF([test -z "$xcoll_torch_why"], [
    AS_CASE([$XCOLL_TORCH_VERSION],
        [1.13.*], [xcoll_torch_api=1_13],
        [xcoll_torch_why="torch $XCOLL_TORCH_VERSION: the backend is written for torch 1.13's ProcessGroup API (lib/torch/torch_1_13.cpp); torch 2.x backends derive from c10d::Backend and need a file of their own"])])

AS_IF([test -z "$xcoll_torch_why"], [
    AC_LANG_PUSH([C++])
    xcoll_save_CPPFLAGS=$CPPFLAGS
    xcoll_save_CXXFLAGS=$CXXFLAGS
    xcoll_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $TORCH_CPPFLAGS"
    CXXFLAGS="$CXXFLAGS -std=c++17"
    LIBS="$TORCH_LIBS $LIBS"
    AC_MSG_CHECKING([whether $CXX builds against torch's c10d headers and libraries])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>]],
        [[auto s = c10::make_intrusive<c10d::HashStore>();
          c10d::PrefixStore p("x", s); p.set("k", std::vector<uint8_t>{1});]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         xcoll_torch_why="$CXX cannot build against torch $XCOLL_TORCH_VERSION's headers and libraries (see config.log; libtorch-dev installed?)"])
    CPPFLAGS=$xcoll_save_CPPFLAGS
    CXXFLAGS=$xcoll_save_CXXFLAGS
    LIBS=$xcoll_save_LIBS
    AC_LANG_POP([C++])])

AS_IF([test -n "$xcoll_torch_why" && test "x$with_torch" = xyes],
      [AC_MSG_ERROR([--with-torch: $xcoll_torch_why])])

AS_IF([test -z "$xcoll_torch_why"], [
    AS_IF([test -n "$with_torch_pythondir"], [xcoll_torch_pydir=$with_torch_pythondir],
          [test "x$xcoll_torch_debian" = x1],
          [xcoll_torch_pydir='${libdir}'/python$xcoll_torch_pyver/dist-packages],
          [xcoll_torch_pydir='${libdir}'/python$xcoll_torch_pyver/site-packages])
    XCOLL_TORCH_SUMMARY="yes, torch $XCOLL_TORCH_VERSION ($TORCH_PYTHON), installs into $xcoll_torch_pydir"],
    [XCOLL_TORCH_SUMMARY="no ($xcoll_torch_why)"])

AC_SUBST([TORCH_CPPFLAGS])
AC_SUBST([TORCH_LIBS])
AC_SUBST([xcoll_torch_pydir])
AM_CONDITIONAL([XCOLL_TORCH], [test -z "$xcoll_torch_why"])
AM_CONDITIONAL([XCOLL_TORCH_1_13], [test -z "$xcoll_torch_why" && test "x$xcoll_torch_api" = x1_13])
])
