# xcoll_mpi.m4 - find an MPI C compiler wrapper, the flags it adds, the MPI
# implementation and its version, and an mpirun to launch tests with.
#
# MPI is used only by the tests, the examples and the bin/ tools: the flags
# are substituted as MPI_CFLAGS / MPI_LIBS and never added to CFLAGS/LIBS, so
# libxcoll itself links no MPI library.
#
# Sets and substitutes: MPI_CC MPI_CFLAGS MPI_LIBS MPIRUN MPIRUN_FLAGS
#                       XCOLL_MPI_IMPL XCOLL_MPI_VERSION
AC_DEFUN([XCOLL_CHECK_MPI], [
AC_ARG_WITH([mpicc],
    [AS_HELP_STRING([--with-mpicc=PATH],
        [MPI C compiler wrapper used to find the MPI flags for tests, examples and tools
         (default: $MPI_CC, else mpicc in PATH)])],
    [AS_CASE([$withval],
        [yes|no], [AC_MSG_ERROR([--with-mpicc needs a path; MPI is required for the tests and tools])],
        [MPI_CC=$withval])])
AC_ARG_VAR([MPI_CC], [MPI C compiler wrapper (default: mpicc)])
AC_ARG_VAR([MPI_CFLAGS], [compiler flags for MPI programs (default: asked from $MPI_CC)])
AC_ARG_VAR([MPI_LIBS], [linker flags for MPI programs (default: asked from $MPI_CC)])
AC_ARG_VAR([MPIRUN], [MPI launcher used by make check (default: mpirun next to $MPI_CC)])
AC_ARG_VAR([MPIRUN_FLAGS], [extra launcher flags for make check
    (default for Open MPI: --allow-run-as-root --oversubscribe)])

# A preset MPI_CC is taken as is when it holds a path, else looked up in PATH.
AS_CASE([$MPI_CC], [*/*|""], [],
    [xcoll_mpi_cc_path=`command -v "$MPI_CC" 2>/dev/null` || xcoll_mpi_cc_path=
     AS_IF([test -n "$xcoll_mpi_cc_path"], [MPI_CC=$xcoll_mpi_cc_path],
           [AC_MSG_ERROR([MPI_CC=$MPI_CC: no such program in PATH])])])
AC_PATH_PROGS([MPI_CC], [mpicc mpicc.openmpi mpicc.mpich])
AS_IF([test -z "$MPI_CC" || test ! -x "$MPI_CC"],
    [AC_MSG_ERROR([no MPI C compiler wrapper (mpicc) found.
  MPI is needed for the tests, examples and tools (libxcoll itself does not link it).
  On Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin
  Or point configure at one: --with-mpicc=/path/to/mpicc (or MPI_CC=...)])])

# Ask the wrapper for its flags: Open MPI answers --showme:*, MPICH and its
# derivatives -compile_info/-link_info (whose first word is the compiler).
AC_MSG_CHECKING([for MPI compile flags])
AS_IF([test -z "$MPI_CFLAGS"], [
    AS_IF([xcoll_mpi_out=`"$MPI_CC" --showme:compile 2>/dev/null`],
        [MPI_CFLAGS=$xcoll_mpi_out],
        [xcoll_mpi_out=`"$MPI_CC" -compile_info 2>/dev/null`],
        [MPI_CFLAGS=`echo "$xcoll_mpi_out" | sed -e 's/^[[^ ]]* *//' -e 's/ -c / /g' -e 's/ -c$//'`],
        [AC_MSG_RESULT([unknown])
         AC_MSG_ERROR([$MPI_CC answers neither --showme:compile nor -compile_info; set MPI_CFLAGS and MPI_LIBS])])])
AC_MSG_RESULT([$MPI_CFLAGS])
AC_MSG_CHECKING([for MPI link flags])
AS_IF([test -z "$MPI_LIBS"], [
    AS_IF([xcoll_mpi_out=`"$MPI_CC" --showme:link 2>/dev/null`],
        [MPI_LIBS=$xcoll_mpi_out],
        [xcoll_mpi_out=`"$MPI_CC" -link_info 2>/dev/null`],
        [MPI_LIBS=`echo "$xcoll_mpi_out" | sed -e 's/^[[^ ]]* *//'`],
        [AC_MSG_RESULT([unknown])
         AC_MSG_ERROR([$MPI_CC answers neither --showme:link nor -link_info; set MPI_CFLAGS and MPI_LIBS])])])
AC_MSG_RESULT([$MPI_LIBS])

# The flags must work with the C compiler the rest of the build uses.
xcoll_save_CPPFLAGS=$CPPFLAGS
xcoll_save_LIBS=$LIBS
CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"
LIBS="$MPI_LIBS $LIBS"
AC_MSG_CHECKING([whether $CC compiles and links an MPI program])
AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                                [[int argc = 0; char **argv = 0;
                                  MPI_Init(&argc, &argv); MPI_Finalize();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([cannot build an MPI program with $CC $MPI_CFLAGS ... $MPI_LIBS (see config.log)])])

# Name and version of the implementation, from the macros of its mpi.h
# (works without running anything, so also when cross compiling).
AC_MSG_CHECKING([for the MPI implementation])
xcoll_mpi_pp=
AC_PREPROC_IFELSE([AC_LANG_SOURCE([[#include <mpi.h>
#if defined(OPEN_MPI)
XCOLL_MPI_IS "Open MPI" OMPI_MAJOR_VERSION.OMPI_MINOR_VERSION.OMPI_RELEASE_VERSION
#elif defined(I_MPI_VERSION)
XCOLL_MPI_IS "Intel MPI" I_MPI_VERSION
#elif defined(MVAPICH2_VERSION)
XCOLL_MPI_IS "MVAPICH2" MVAPICH2_VERSION
#elif defined(MPICH_VERSION)
XCOLL_MPI_IS "MPICH" MPICH_VERSION
#else
XCOLL_MPI_IS "unknown MPI" unknown
#endif
XCOLL_MPI_STD MPI_VERSION.MPI_SUBVERSION]])],
    [xcoll_mpi_pp=`cat conftest.i`])
XCOLL_MPI_IMPL=`echo "$xcoll_mpi_pp" | sed -n 's/^XCOLL_MPI_IS "\([[^"]]*\)".*/\1/p'`
XCOLL_MPI_VERSION=`echo "$xcoll_mpi_pp" | sed -n 's/^XCOLL_MPI_IS "[[^"]]*" *//p' | tr -d '" '`
xcoll_mpi_std=`echo "$xcoll_mpi_pp" | sed -n 's/^XCOLL_MPI_STD *//p' | tr -d ' '`
AS_IF([test -z "$XCOLL_MPI_IMPL"], [XCOLL_MPI_IMPL="unknown MPI"; XCOLL_MPI_VERSION=unknown])
AS_IF([test -n "$xcoll_mpi_std"], [XCOLL_MPI_VERSION="$XCOLL_MPI_VERSION (MPI standard $xcoll_mpi_std)"])
AC_MSG_RESULT([$XCOLL_MPI_IMPL $XCOLL_MPI_VERSION])
CPPFLAGS=$xcoll_save_CPPFLAGS
LIBS=$xcoll_save_LIBS

# The launcher: prefer the one installed next to the wrapper, so that
# compiler and launcher come from the same MPI.
AS_IF([test -z "$MPIRUN"], [
    xcoll_mpi_bindir=`AS_DIRNAME(["$MPI_CC"])`
    AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [], [$xcoll_mpi_bindir$PATH_SEPARATOR$PATH])])
AS_IF([test -z "$MPIRUN"],
    [AC_MSG_ERROR([no mpirun/mpiexec found: make check needs one (set MPIRUN=...)])])
AC_MSG_CHECKING([for extra $MPIRUN flags for make check])
AS_IF([test "${MPIRUN_FLAGS+set}" != set], [
    AS_CASE([$XCOLL_MPI_IMPL],
        # Tests run more ranks than cores, and CI containers run as root.
        ["Open MPI"], [MPIRUN_FLAGS="--allow-run-as-root --oversubscribe"],
        [MPIRUN_FLAGS=""])])
AC_MSG_RESULT([${MPIRUN_FLAGS:-none}])

AC_SUBST([MPI_CC])
AC_SUBST([MPI_CFLAGS])
AC_SUBST([MPI_LIBS])
AC_SUBST([MPIRUN])
AC_SUBST([MPIRUN_FLAGS])
AC_SUBST([XCOLL_MPI_IMPL])
AC_SUBST([XCOLL_MPI_VERSION])
])
