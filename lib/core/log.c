/* Logging to stderr, one line per event: "[xcoll r3] error: ...". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"

int xc_log_level = XC_LOG_WARN;
int xc_log_ready;
static int log_rank = -1;

static const char *level_names[] = {"error", "warn", "info", "debug", "trace"};

void xc_log_read_env(void)
{
    const char *env, *rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    size_t i;
    if (xc_log_ready)
        return;
    xc_log_ready = 1;
    env = getenv("XCOLL_LOG");
    if (env != NULL && *env != '\0') {
        int found = 0;
        for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
            if (strcasecmp(env, level_names[i]) == 0) {
                xc_log_level = (int)i;
                found = 1;
            }
        }
        if (!found)
            fprintf(stderr, "[xcoll] warn: XCOLL_LOG=%s is not one of error|warn|info|debug|trace;"
                            " using warn\n", env);
    }
    for (i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]) && log_rank < 0; i++) {
        env = getenv(rank_vars[i]);
        if (env != NULL && *env >= '0' && *env <= '9')
            log_rank = atoi(env);
    }
}

void xc_log_set_rank(int rank)
{
    if (log_rank < 0)
        log_rank = rank;
}

void xc_log_write(xc_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char msg[1024], out[1200];
    va_list ap;
    const char *base = strrchr(file, '/');
    int n;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char who[24] = "[xcoll]";
    if (log_rank >= 0)
        snprintf(who, sizeof(who), "[xcoll r%d]", log_rank);
    if (xc_log_level >= XC_LOG_DEBUG)
        n = snprintf(out, sizeof(out), "%s %s: %s (%s:%d)\n", who, level_names[level], msg,
                     base ? base + 1 : file, line);
    else
        n = snprintf(out, sizeof(out), "%s %s: %s\n", who, level_names[level], msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(out)) {
        n = (int)sizeof(out) - 1;
        out[n - 1] = '\n';
    }
    /* one write(2) per line: mpirun merges the ranks' stderr, and lines
     * written piecewise (stdio may split them) come out interleaved */
    if (write(STDERR_FILENO, out, (size_t)n) < 0)
        return;
}
