# xcoll_mpich.m4 - MPICH beside the MPI the build uses, for a second PMPI
# library. Debian's mpich package installs mpicc.mpich and mpiexec.mpich
# next to Open MPI without taking over mpicc/mpirun; when such a wrapper is
# found, lib/mpi/libxcoll_mpich.la is the PMPI library built against MPICH,
# and make check compares MPICH runs with and without it. libxcoll itself
# links no MPI, so both PMPI libraries use the same libxcoll.
#
# Call after XCOLL_CHECK_MPI. Sets and substitutes:
#   MPICH_CC MPICH_CFLAGS MPICH_LIBS  the wrapper and the flags it adds
#   MPICH_MPIEXEC                     its launcher (empty: the tests skip MPICH)
#   XCOLL_MPICH_SUMMARY               one line for the configure summary
# and the automake conditional XCOLL_MPICH.
AC_DEFUN([XCOLL_CHECK_MPICH], [
AC_REQUIRE([XCOLL_CHECK_MPI])
AC_ARG_WITH([mpich-cc],
    [AS_HELP_STRING([--with-mpich-cc=PATH],
        [MPICH C compiler wrapper: also build the PMPI library against MPICH
         (libxcoll_mpich) and test it (default: mpicc.mpich in PATH, unless the
         main MPI is MPICH already; --without-mpich-cc: do not)])],
    [], [with_mpich_cc=auto])
AC_ARG_VAR([MPICH_MPIEXEC], [MPICH launcher for make check (default: mpiexec.mpich next to MPICH_CC)])

xcoll_mpich_why=
MPICH_CFLAGS=
MPICH_LIBS=
AS_CASE([$with_mpich_cc],
  [no], [xcoll_mpich_why="disabled (--without-mpich-cc)"],
  [yes|auto],
    [AS_IF([test "x$XCOLL_MPI_IMPL" = xMPICH && test "x$with_mpich_cc" = xauto],
        [xcoll_mpich_why="the main MPI is MPICH already: libxcoll_mpi is the MPICH one"],
        [AC_PATH_PROG([MPICH_CC], [mpicc.mpich])
         AS_IF([test -z "$MPICH_CC"], [xcoll_mpich_why="MPICH not installed (no mpicc.mpich)"])])],
  [MPICH_CC=$with_mpich_cc
   AS_IF([test ! -x "$MPICH_CC"], [AC_MSG_ERROR([--with-mpich-cc=$MPICH_CC: no such program])])])

AS_IF([test -z "$xcoll_mpich_why"], [
    # MPICH wrappers print their command line: the compiler, then the flags.
    AC_MSG_CHECKING([for MPICH flags])
    AS_IF([xcoll_mpich_out=`"$MPICH_CC" -compile_info 2>/dev/null`],
        [MPICH_CFLAGS=`echo "$xcoll_mpich_out" | sed -e 's/^[[^ ]]* *//' -e 's/ -c / /g' -e 's/ -c$//'`
         # keep the include flags only: the link flags go to MPICH_LIBS
         xcoll_mpich_inc=
         for xcoll_f in $MPICH_CFLAGS; do
             AS_CASE([$xcoll_f], [-I*|-D*], [xcoll_mpich_inc="$xcoll_mpich_inc $xcoll_f"])
         done
         MPICH_CFLAGS=$xcoll_mpich_inc],
        [xcoll_mpich_why="$MPICH_CC does not answer -compile_info"])
    AS_IF([xcoll_mpich_out=`"$MPICH_CC" -link_info 2>/dev/null`],
        [MPICH_LIBS=`echo "$xcoll_mpich_out" | sed -e 's/^[[^ ]]* *//'`],
        [xcoll_mpich_why="$MPICH_CC does not answer -link_info"])
    AC_MSG_RESULT([${MPICH_CFLAGS:-none} / ${MPICH_LIBS:-none}])
])

AS_IF([test -z "$xcoll_mpich_why"], [
    xcoll_save_CPPFLAGS=$CPPFLAGS
    xcoll_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $MPICH_CFLAGS"
    LIBS="$MPICH_LIBS $LIBS"
    AC_MSG_CHECKING([whether $CC builds an MPICH program with them])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef MPICH_VERSION
#error not MPICH
#endif
]], [[int argc = 0; char **argv = 0; MPI_Request r;
      MPI_Init(&argc, &argv); r = MPI_REQUEST_NULL; (void)PMPI_Grequest_complete(r); MPI_Finalize();]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         xcoll_mpich_why="$CC $MPICH_CFLAGS ... $MPICH_LIBS does not build an MPICH program (see config.log)"])
    CPPFLAGS=$xcoll_save_CPPFLAGS
    LIBS=$xcoll_save_LIBS
])

AS_IF([test -z "$xcoll_mpich_why" && test -z "$MPICH_MPIEXEC"], [
    xcoll_mpich_bindir=`AS_DIRNAME(["$MPICH_CC"])`
    AC_PATH_PROGS([MPICH_MPIEXEC], [mpiexec.mpich mpirun.mpich mpiexec.hydra], [],
                  [$xcoll_mpich_bindir$PATH_SEPARATOR$PATH])])

AS_IF([test -n "$xcoll_mpich_why" && test "x$with_mpich_cc" != xauto && test "x$with_mpich_cc" != xno],
    [AC_MSG_ERROR([--with-mpich-cc: $xcoll_mpich_why])])
AS_IF([test -z "$xcoll_mpich_why"],
    [XCOLL_MPICH_SUMMARY="yes, libxcoll_mpich ($MPICH_CC; tests with ${MPICH_MPIEXEC:-no launcher found})"],
    [XCOLL_MPICH_SUMMARY="no ($xcoll_mpich_why)"
     MPICH_MPIEXEC=])
AM_CONDITIONAL([XCOLL_MPICH], [test -z "$xcoll_mpich_why"])
AC_SUBST([MPICH_CC])
AC_SUBST([MPICH_CFLAGS])
AC_SUBST([MPICH_LIBS])
AC_SUBST([MPICH_MPIEXEC])
AC_SUBST([XCOLL_MPICH_SUMMARY])
])
