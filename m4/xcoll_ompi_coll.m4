# xcoll_ompi_coll.m4 - can we build the Open MPI coll component
# (lib/mpi/mca_coll_xcoll.so)? It needs Open MPI's internal ("devel")
# headers of the 4.x coll interface (mca_coll_base_module_2_3_0_t), found
# next to the mpi.h that $MPI_CC uses. Without them the component is
# skipped with a message; the PMPI library does not need them.
#
# Call after XCOLL_CHECK_MPI. Sets and substitutes:
#   OMPI_COLL_CPPFLAGS  -isystem flags for the Open MPI internal headers
#   OMPI_COLL_LIBS      libmpi and libopen-pal, which the component calls
#   OMPI_PKGLIBDIR      Open MPI's own component directory (for the tests
#                       and the documented mca_base_component_path)
#   ompi_componentdir   where the component is installed ($libdir/openmpi)
#   XCOLL_OMPI_COLL_SUMMARY  one line for the configure summary
# and the automake conditional XCOLL_OMPI_COLL.
AC_DEFUN([XCOLL_CHECK_OMPI_COLL], [
AC_REQUIRE([XCOLL_CHECK_MPI])
AC_ARG_ENABLE([ompi-component],
    [AS_HELP_STRING([--disable-ompi-component],
        [do not build the Open MPI coll component (default: build it when the Open MPI
         devel headers are found)])],
    [], [enable_ompi_component=auto])
AC_ARG_WITH([ompi-componentdir],
    [AS_HELP_STRING([--with-ompi-componentdir=DIR],
        [install the Open MPI coll component into DIR (default: LIBDIR/openmpi)])],
    [ompi_componentdir=$withval], [ompi_componentdir='${libdir}/openmpi'])
AC_SUBST([ompi_componentdir])

xcoll_ompi_coll=no
xcoll_ompi_coll_why=
OMPI_COLL_CPPFLAGS=
OMPI_COLL_LIBS=
OMPI_PKGLIBDIR=

AS_IF([test "x$enable_ompi_component" = xno],
    [xcoll_ompi_coll_why="disabled (--disable-ompi-component)"],
  [test "x$XCOLL_MPI_IMPL" != "xOpen MPI"],
    [xcoll_ompi_coll_why="the MPI is $XCOLL_MPI_IMPL, not Open MPI"],
  [
    # Open MPI's wrapper lists its include directories; the internal
    # headers live in one of them or in its openmpi/ subdirectory.
    AC_MSG_CHECKING([for the Open MPI coll framework headers])
    xcoll_ompi_incdirs=`"$MPI_CC" --showme:incdirs 2>/dev/null`
    xcoll_ompi_top=
    for xcoll_d in $xcoll_ompi_incdirs; do
        AS_IF([test -z "$xcoll_ompi_top" && test -f "$xcoll_d/ompi/mca/coll/coll.h" &&
               test -f "$xcoll_d/ompi_config.h"],
              [xcoll_ompi_top=$xcoll_d])
        AS_IF([test -z "$xcoll_ompi_top" && test -f "$xcoll_d/openmpi/ompi/mca/coll/coll.h" &&
               test -f "$xcoll_d/openmpi/ompi_config.h"],
              [xcoll_ompi_top=$xcoll_d/openmpi])
    done
    AS_IF([test -n "$xcoll_ompi_top"],
        [AC_MSG_RESULT([$xcoll_ompi_top])
         # -isystem: their warnings are not ours, and --enable-werror must
         # not fail on them.
         OMPI_COLL_CPPFLAGS=
         for xcoll_d in $xcoll_ompi_incdirs; do
             OMPI_COLL_CPPFLAGS="$OMPI_COLL_CPPFLAGS -isystem $xcoll_d"
         done
         AS_CASE([" $xcoll_ompi_incdirs "], [*" $xcoll_ompi_top "*], [],
                 [OMPI_COLL_CPPFLAGS="$OMPI_COLL_CPPFLAGS -isystem $xcoll_ompi_top"])],
        [AC_MSG_RESULT([no])
         xcoll_ompi_coll_why="no Open MPI devel headers (ompi/mca/coll/coll.h) next to $MPI_CC"])
  ])

AS_IF([test -z "$xcoll_ompi_coll_why"], [
    xcoll_save_CPPFLAGS=$CPPFLAGS
    xcoll_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $OMPI_COLL_CPPFLAGS"
    AC_MSG_CHECKING([whether the Open MPI coll interface is version 2.3.0 (Open MPI 4.x)])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/runtime/opal_progress.h"
]], [[
mca_coll_base_module_2_3_0_t m;
mca_coll_base_component_2_0_0_t c;
struct ompi_communicator_t *comm = 0;
mca_coll_base_comm_coll_t saved;
m.coll_iallreduce = 0;
c.collm_comm_query = 0;
if (comm) saved = *comm->c_coll;
(void)saved;
]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         xcoll_ompi_coll_why="the Open MPI headers are not the 4.x coll interface"])
    AS_IF([test -z "$xcoll_ompi_coll_why"], [
        # The component calls libopen-pal (progress, MCA variables) too.
        xcoll_ompi_libdirs=`"$MPI_CC" --showme:libdirs 2>/dev/null`
        OMPI_COLL_LIBS=
        for xcoll_d in $xcoll_ompi_libdirs; do
            OMPI_COLL_LIBS="$OMPI_COLL_LIBS -L$xcoll_d"
        done
        OMPI_COLL_LIBS="$OMPI_COLL_LIBS -lmpi -lopen-pal"
        LIBS="$OMPI_COLL_LIBS $LIBS"
        AC_MSG_CHECKING([whether libmpi and libopen-pal link])
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[
#include "ompi_config.h"
#include "opal/runtime/opal_progress.h"
]], [[opal_progress();]])],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no])
             xcoll_ompi_coll_why="cannot link against libmpi and libopen-pal ($OMPI_COLL_LIBS)"])])
    CPPFLAGS=$xcoll_save_CPPFLAGS
    LIBS=$xcoll_save_LIBS
])

AS_IF([test -z "$xcoll_ompi_coll_why"], [
    xcoll_ompi_coll=yes
    # Open MPI's own components: a user's mca_base_component_path must keep them.
    xcoll_ompi_bindir=`AS_DIRNAME(["$MPI_CC"])`
    AC_PATH_PROGS([OMPI_INFO], [ompi_info], [], [$xcoll_ompi_bindir$PATH_SEPARATOR$PATH])
    AS_IF([test -n "$OMPI_INFO"],
        [OMPI_PKGLIBDIR=`"$OMPI_INFO" --path pkglibdir 2>/dev/null | sed -n 's/^.*[[Pp]]kglibdir: *//p'`])
    XCOLL_OMPI_COLL_SUMMARY="yes (Open MPI components in ${OMPI_PKGLIBDIR:-unknown})"
], [
    AS_IF([test "x$enable_ompi_component" = xyes],
        [AC_MSG_ERROR([--enable-ompi-component: $xcoll_ompi_coll_why])])
    AC_MSG_NOTICE([not building the Open MPI coll component: $xcoll_ompi_coll_why])
    XCOLL_OMPI_COLL_SUMMARY="no ($xcoll_ompi_coll_why)"
])

AC_SUBST([OMPI_COLL_CPPFLAGS])
AC_SUBST([OMPI_COLL_LIBS])
AC_SUBST([OMPI_PKGLIBDIR])
AC_SUBST([XCOLL_OMPI_COLL_SUMMARY])
AM_CONDITIONAL([XCOLL_OMPI_COLL], [test "x$xcoll_ompi_coll" = xyes])
])
