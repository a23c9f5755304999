/* The pass/fail counting of the single-process tests (test/unit,
 * test/gpu/test_gpu_kernels): check(ok, fmt, ...) counts a check and
 * prints the first failures, one line each; main reports n_pass and
 * n_fail. Define CHECK_MAX_PRINTED before including to print more or
 * fewer. rnd64() is a deterministic generator (xorshift64*), so a failure
 * reproduces; each test picks its own sequence with CHECK_RNG_SEED.
 * check_verbose = 1 prints the passing checks too ("ok   ..."). */
#ifndef XC_TEST_CHECK_H
#define XC_TEST_CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#ifndef CHECK_MAX_PRINTED
#define CHECK_MAX_PRINTED 200
#endif
#ifndef CHECK_RNG_SEED
#define CHECK_RNG_SEED 0x9e3779b97f4a7c15ull
#endif

static unsigned long n_pass, n_fail;
static int check_verbose;

/* One line, flushed: a long test's lines show as they happen. */
static void check_line(const char *tag, const char *fmt, va_list ap)
{
    printf("%s", tag);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    if (ok) {
        n_pass++;
        if (check_verbose) {
            va_start(ap, fmt);
            check_line("ok   ", fmt, ap);
            va_end(ap);
        }
        return;
    }
    n_fail++;
    if (n_fail <= CHECK_MAX_PRINTED) {
        va_start(ap, fmt);
        check_line("FAIL: ", fmt, ap);
        va_end(ap);
    } else if (n_fail == CHECK_MAX_PRINTED + 1) {
        printf("FAIL: (further failures counted, not printed)\n");
    }
}

static uint64_t rng_state = CHECK_RNG_SEED;
static inline uint64_t rnd64(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

#endif
