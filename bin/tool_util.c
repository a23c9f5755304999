/* tool_util.c - command-line parsing and name look-ups shared by xcoll's
 * tools (tool_util.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool_util.h"

/* The trailing B comes off before strtod sees the text, which would
 * otherwise read "0x10b" as hexadecimal 0x10b. */
int tool_parse_size(const char *s, size_t *out)
{
    char buf[64], *end;
    size_t n = strlen(s);
    if (n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n + 1);
    if (n > 0 && (buf[n - 1] == 'B' || buf[n - 1] == 'b'))
        buf[n - 1] = '\0';
    errno = 0;
    double v = strtod(buf, &end);
    if (errno != 0 || end == buf || v < 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024.0; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024.0 * 1024.0; end++; break;
    default: break;
    }
    if (*end != '\0' || v > 1e15)
        return -1;
    *out = (size_t)v;
    return 0;
}

int tool_parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int tool_each_item(const char *list, int (*fn)(const char *, void *), void *ctx)
{
    char buf[256];
    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save))
        if (fn(tok, ctx) != 0)
            return -1;
    return 0;
}

int tool_dtype_from_name(const char *s)
{
    static const struct { const char *alias; xcoll_dtype_t d; } aliases[] = {
        {"half", XCOLL_FLOAT16}, {"float", XCOLL_FLOAT32}, {"double", XCOLL_FLOAT64},
        {"int", XCOLL_INT32},    {"uint", XCOLL_UINT32},   {"bf16", XCOLL_BFLOAT16},
        {"char", XCOLL_INT8},
    };
    for (int d = 0; d < XCOLL_DTYPE_COUNT; d++)
        if (strcmp(s, xcoll_dtype_name((xcoll_dtype_t)d)) == 0)
            return d;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcmp(s, aliases[i].alias) == 0)
            return aliases[i].d;
    return -1;
}

int tool_op_from_name(const char *s)
{
    for (int p = 0; p < XCOLL_OP_COUNT; p++)
        if (strcmp(s, xcoll_op_name((xcoll_op_t)p)) == 0)
            return p;
    return -1;
}

int tool_coll_from_name(const char *s)
{
    const char *n;
    for (int c = 0; (n = xcoll_collective_name(c)) != NULL; c++)
        if (strcmp(n, s) == 0)
            return c;
    return -1;
}

int tool_coll_has_algo(int coll, const char *algo)
{
    const char *n;
    for (int i = 0; (n = xcoll_algorithm_name(coll, i)) != NULL; i++)
        if (strcmp(n, algo) == 0)
            return 1;
    return 0;
}
