/* xcoll-info: what this libxcoll is (version, UCX, CUDA), which algorithms
 * it has for each collective, and the selection table a communicator
 * created now would use, with XCOLL_TUNE / XCOLL_TUNE_FILE applied; with
 * --predict, the cost model's view (info_predict.c). Needs no MPI; the
 * listing uses only the public API, --predict the internal builders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcoll.h"
#include "info_predict.h"
#include "tool_util.h"

#define MAX_RANK_COUNTS 16

static void usage(FILE *f)
{
    fprintf(f,
            "usage: xcoll-info [-n RANKS]... [-h]\n"
            "       xcoll-info --predict --nodes N --ranks-per-node K [...] (--predict -h)\n"
            "  Prints the version, the build, every algorithm per collective, the\n"
            "  selection rules (built-in defaults, then XCOLL_TUNE_FILE, then XCOLL_TUNE;\n"
            "  a later rule wins where two cover the same call) and the table they\n"
            "  resolve to for communicators of 2, 4 and 8 ranks, or of each RANKS given.\n"
            "  Exits 1 if XCOLL_TUNE or XCOLL_TUNE_FILE is malformed.\n");
}

/* The text of xcoll_tune_table, in a buffer grown to fit; NULL on error
 * (the library has logged why). */
static char *tune_text(int nranks, xcoll_status_t *rc)
{
    size_t len = 4096, needed = 0;
    char *buf = NULL;
    for (;;) {
        char *n = realloc(buf, len);
        if (n == NULL) {
            free(buf);
            *rc = XCOLL_ERR_NO_MEMORY;
            return NULL;
        }
        buf = n;
        *rc = xcoll_tune_table(nranks, buf, len, &needed);
        if (*rc != XCOLL_OK) {
            free(buf);
            return NULL;
        }
        if (needed <= len)
            return buf;
        len = needed;
    }
}

static void print_indented(const char *text)
{
    const char *line = text, *nl;
    while (*line != '\0') {
        nl = strchr(line, '\n');
        if (nl == NULL)
            nl = line + strlen(line);
        printf("  %.*s\n", (int)(nl - line), line);
        line = *nl ? nl + 1 : nl;
    }
}

int main(int argc, char **argv)
{
    int ranks[MAX_RANK_COUNTS], nranks = 0, i, c, a;
    const char *name, *env;
    xcoll_status_t rc;
    char *text;

    if (argc > 1 && strcmp(argv[1], "--predict") == 0)
        return info_predict(argc - 2, argv + 2);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc && nranks < MAX_RANK_COUNTS) {
            if (tool_parse_int(argv[++i], 1, 1 << 20, &ranks[nranks]) != 0) {
                fprintf(stderr, "xcoll-info: -n %s: expected a rank count >= 1\n", argv[i]);
                return 2;
            }
            nranks++;
            continue;
        }
        usage(stderr);
        return 2;
    }
    if (nranks == 0) {
        ranks[nranks++] = 2;
        ranks[nranks++] = 4;
        ranks[nranks++] = 8;
    }

    printf("xcoll %s\n\n", xcoll_version());
    printf("Build:\n");
    print_indented(xcoll_build_info());

    printf("\nAlgorithms (per collective, in fallback order):\n");
    for (c = 0; (name = xcoll_collective_name(c)) != NULL; c++) {
        printf("  %-15s", name);
        for (a = 0; xcoll_algorithm_name(c, a) != NULL; a++)
            printf(" %s", xcoll_algorithm_name(c, a));
        printf("\n");
    }

    printf("\nSelection overrides:\n");
    env = getenv("XCOLL_TUNE_FILE");
    printf("  XCOLL_TUNE_FILE=%s\n", env != NULL ? env : "(unset)");
    env = getenv("XCOLL_TUNE");
    printf("  XCOLL_TUNE=%s\n", env != NULL ? env : "(unset)");

    text = tune_text(0, &rc);
    if (text == NULL) {
        fflush(stdout);
        fprintf(stderr, "xcoll-info: the selection table cannot be built: %s%s\n",
                xcoll_strerror(rc),
                rc == XCOLL_ERR_INVALID_ARG ? " (the error above names the mistake)" : "");
        return 1;
    }
    printf("\nSelection rules (a later line wins where two cover the same call;\n"
           "message size = count x element size, [lo, hi) bytes):\n");
    print_indented(text);
    free(text);

    for (i = 0; i < nranks; i++) {
        text = tune_text(ranks[i], &rc);
        if (text == NULL)
            return 1;
        printf("\nActive table for %d ranks:\n", ranks[i]);
        print_indented(text);
        free(text);
    }
    return 0;
}
