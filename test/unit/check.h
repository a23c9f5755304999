/* The pass/fail counting of the single-process tests (test/unit,
 * test/gpu/test_gpu_kernels): check(ok, fmt, ...) counts a check and
 * prints the first failures, one line each; main reports n_pass and
 * n_fail. Define CHECK_MAX_PRINTED before including to print more or
 * fewer. */
#ifndef XC_TEST_CHECK_H
#define XC_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>

#ifndef CHECK_MAX_PRINTED
#define CHECK_MAX_PRINTED 200
#endif

static unsigned long n_pass, n_fail;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    if (ok) {
        n_pass++;
        return;
    }
    n_fail++;
    if (n_fail <= CHECK_MAX_PRINTED) {
        va_list ap;
        va_start(ap, fmt);
        printf("FAIL: ");
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
    } else if (n_fail == CHECK_MAX_PRINTED + 1) {
        printf("FAIL: (further failures counted, not printed)\n");
    }
}

#endif
