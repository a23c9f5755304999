# xcoll_ucx.m4 - find UCX (UCP and UCS), which libxcoll needs as its transport.
#
# --with-ucx=DIR takes headers from DIR/include and libraries from DIR/lib64
# or DIR/lib; otherwise pkg-config's "ucx" module is used, and failing that
# the compiler's default paths.
#
# Sets and substitutes: UCX_CPPFLAGS UCX_LDFLAGS UCX_LIBS XCOLL_UCX_VERSION
#                       XCOLL_UCX_PC_REQUIRES (for xcoll.pc)
AC_DEFUN([XCOLL_CHECK_UCX], [
AC_REQUIRE([AC_PROG_CC])
AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx=DIR], [UCX installation prefix (default: pkg-config ucx, then system paths)])],
    [], [with_ucx=auto])
AS_IF([test "x$with_ucx" = xno],
    [AC_MSG_ERROR([UCX is the transport of xcoll and cannot be disabled (--without-ucx)])])

UCX_CPPFLAGS=
UCX_LDFLAGS=
UCX_LIBS=
XCOLL_UCX_PC_REQUIRES=
xcoll_ucx_how=
AS_CASE([$with_ucx],
    [yes|auto], [
        AC_PATH_TOOL([PKG_CONFIG], [pkg-config])
        AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists ucx 2>/dev/null], [
            UCX_CPPFLAGS=`$PKG_CONFIG --cflags ucx`
            UCX_LIBS=`$PKG_CONFIG --libs ucx`
            XCOLL_UCX_PC_REQUIRES=ucx
            xcoll_ucx_how="pkg-config ucx"],
            [UCX_LIBS="-lucp -lucs"
             xcoll_ucx_how="system paths"])],
    [
        AS_IF([test ! -d "$with_ucx/include/ucp"],
            [AC_MSG_ERROR([--with-ucx=$with_ucx: no $with_ucx/include/ucp directory])])
        UCX_CPPFLAGS="-I$with_ucx/include"
        AS_IF([test -d "$with_ucx/lib64"], [xcoll_ucx_libdir=$with_ucx/lib64],
              [xcoll_ucx_libdir=$with_ucx/lib])
        UCX_LDFLAGS="-L$xcoll_ucx_libdir"
        # An rpath, unless the loader searches there anyway.
        AS_CASE([$xcoll_ucx_libdir], [/usr/lib|/usr/lib64|/lib|/lib64], [],
                [UCX_LDFLAGS="$UCX_LDFLAGS -Wl,-rpath,$xcoll_ucx_libdir"])
        UCX_LIBS="-lucp -lucs"
        xcoll_ucx_how=$with_ucx])

xcoll_save_CPPFLAGS=$CPPFLAGS
xcoll_save_LDFLAGS=$LDFLAGS
xcoll_save_LIBS=$LIBS
CPPFLAGS="$CPPFLAGS $UCX_CPPFLAGS"
LDFLAGS="$LDFLAGS $UCX_LDFLAGS"
LIBS="$UCX_LIBS $LIBS"
xcoll_ucx_ok=yes
AC_CHECK_HEADERS([ucp/api/ucp.h], [], [xcoll_ucx_ok=no])
AS_IF([test $xcoll_ucx_ok = yes], [
    AC_MSG_CHECKING([whether UCX programs link ($xcoll_ucx_how)])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <ucp/api/ucp.h>]],
                                    [[ucp_params_t p; ucp_context_h c;
                                      p.field_mask = 0;
                                      (void)ucp_init(&p, NULL, &c);
                                      (void)ucp_get_version_string();
                                      (void)ucs_status_string(UCS_OK);]])],
        [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); xcoll_ucx_ok=no])])
AS_IF([test $xcoll_ucx_ok != yes],
    [AC_MSG_ERROR([UCX (ucp, ucs) not found or not usable; xcoll needs it as its transport.
  On Debian/Ubuntu: apt-get install libucx-dev
  Or point configure at an installation: --with-ucx=DIR (with DIR/include/ucp and DIR/lib)])])

# Version from the API macros of ucp_version.h: needs no running program.
AC_COMPUTE_INT([xcoll_ucx_major], [UCP_API_MAJOR], [[#include <ucp/api/ucp_version.h>]],
               [xcoll_ucx_major=])
AC_COMPUTE_INT([xcoll_ucx_minor], [UCP_API_MINOR], [[#include <ucp/api/ucp_version.h>]],
               [xcoll_ucx_minor=])
XCOLL_UCX_VERSION="$xcoll_ucx_major.$xcoll_ucx_minor"
AS_IF([test -n "$XCOLL_UCX_PC_REQUIRES"],
      [XCOLL_UCX_VERSION=`$PKG_CONFIG --modversion ucx 2>/dev/null || echo $XCOLL_UCX_VERSION`])
AC_MSG_CHECKING([for the UCX version])
AC_MSG_RESULT([$XCOLL_UCX_VERSION])
CPPFLAGS=$xcoll_save_CPPFLAGS
LDFLAGS=$xcoll_save_LDFLAGS
LIBS=$xcoll_save_LIBS

AC_SUBST([UCX_CPPFLAGS])
AC_SUBST([UCX_LDFLAGS])
AC_SUBST([UCX_LIBS])
AC_SUBST([XCOLL_UCX_VERSION])
AC_SUBST([XCOLL_UCX_PC_REQUIRES])
])
