/* The selection grammar (tune.h, docs/TUNING.md): one parser for the
 * built-in defaults and for the user's XCOLL_TUNE / XCOLL_TUNE_FILE, so an
 * override can say anything the defaults say, and a mistake in either is
 * reported with its position instead of being skipped. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"
#include "../core/dtype.h"
#include "../core/log.h"
#include "../core/topo.h"

/* Measured with test/mpi/tune_sweep.c on the 2-core development machine at
 * 2, 4, 6 and 8 ranks (oversubscribed, shared with other work), one node
 * (from 8 KiB the rules with a rank range were remeasured after CMA reads
 * became the default within a node, 2026-12-02; bcast's at 5-8 ranks
 * again with buffers of data instead of untouched pages, 2026-12-07, and
 * from 64 KiB allreduce's at 2 and 4 ranks and allgather's at 4 timed
 * per call as a program makes it, after writing its input; small bcasts,
 * reduces and gathers at 4-8 ranks linear, one hop, which no descheduled
 * rank delays): the numbers,
 * the commands and the reasons for each threshold are in docs/TUNING.md.
 * Every collective has rules covering 0-inf, so any call finds a rule; the
 * "|ring"-style second candidates only matter if the first declines.
 * hier (across nodes: docs/TUNING.md, "Across nodes") declines on one node
 * and where every node has one rank, so its two rules leave the
 * single-node choice in force there (each rule lists it after hier); they
 * were written before the grammar had a per-node term, so the rank count
 * stands in for the nodes (4 ranks: 2 nodes x 2 measured, where hier won
 * at every size, then hier2d from 1 MiB, level with hier at 2 nodes and
 * ahead of everything at 4 x 2; hier2d also declines where nodes differ
 * in size, hence hier after it only where hier beat the single-node
 * choice). With nodes of up to 4 ranks hier2d serves from 128 KiB at 5+
 * ranks (measured at 3 x 2, 4 x 2 and 2 x 4: 1.4-2.6x the rules before,
 * level with or ahead of every other algorithm; where it declines, one
 * node's choice as before; the per-node term keeps one node of 5+ ranks
 * on its own choice). From 64 ranks the last rules win: modelled, not
 * measured (bench/model_rules.py prints them; docs/SCALING.md says how),
 * "/1-16" for nodes of up to 16 ranks, "/17-inf" for fuller ones. */
const char xc_tune_defaults[] =
    "allreduce:0-4k:recdbl|ring,4k-16k:dbtree|ring,16k-64k:ring,64k-256k:dbtree|ring,"
    "256k-inf:rabenseifner|ring\n"
    "allreduce@2:4k-64k:recdbl|ring,64k-2m:rabenseifner|ring,2m-inf:ring\n"
    "allreduce@5-8:16k-64k:reduce_bcast|ring\n"
    "allreduce@3-8:0-1k:direct|recdbl\n"
    "allreduce@4:0-1k:hier|direct|recdbl,1k-4k:hier|recdbl|ring,4k-16k:hier|dbtree|ring,"
    "16k-64k:hier|ring,64k-1m:hier|rabenseifner|ring,1m-4m:hier2d|hier|rabenseifner|ring,"
    "4m-inf:hier2d|hier|ring\n"
    "allreduce@5-inf:1m-16m:hier2d|rabenseifner|ring,16m-inf:hier2d|hier|rabenseifner|ring\n"
    "allreduce@5-inf/1-4:128k-256k:hier2d|dbtree|ring,256k-1m:hier2d|rabenseifner|ring\n"
    "bcast:0-1m:binomial,1m-inf:chain|binomial\n"
    "bcast@5-8:8k-256k:linear|binomial,256k-inf:binomial\n"
    "bcast@4-8/3-8:0-4k:linear|binomial\n"
    "reduce:0-inf:binomial\n"
    "reduce@2/2:0-inf:linear|binomial\n"
    "reduce@4-8/3-8:0-4k:linear|binomial\n"
    "allgather:0-4k:recdbl|ring,4k-16k:ring,16k-inf:recdbl|ring\n"
    "allgather@2-8:0-inf:direct|ring\n"
    "allgather@4/4:2m-inf:recdbl|ring\n"
    "reduce_scatter:0-8k:rechalving|ring,8k-inf:ring\n"
    "reduce_scatter@5-inf:8k-256k:rechalving|ring\n"
    "reduce_scatter@3-8:0-1m:direct|rechalving\n"
    "alltoall:0-1k:bruck|pairwise,1k-inf:pairwise\n"
    /* 2 ranks anywhere (one message each way, whatever the algorithm);
     * more only on one node (per node = ranks) */
    "alltoall@2:0-1k:pairwise|bruck\n"
    "alltoall@3/3:0-1k:pairwise|bruck\n"
    "alltoall@4/4:0-1k:pairwise|bruck\n"
    "alltoall@5/5:0-1k:pairwise|bruck\n"
    "alltoall@6/6:0-1k:pairwise|bruck\n"
    "alltoall@7/7:0-1k:pairwise|bruck\n"
    "alltoall@8/8:0-1k:pairwise|bruck\n"
    "gather:0-1k:binomial|linear,1k-inf:linear\n"
    "gather@4-8/3-8:0-1k:linear|binomial\n"
    "scatter:0-inf:linear|binomial\n"
    "barrier:0-inf:dissemination|tree\n"
    "barrier@3-8:0-inf:direct|dissemination\n"
    "allgatherv:0-4k:recdbl|ring,4k-16k:ring,16k-inf:recdbl|ring\n"
    "allgatherv@3-8:0-inf:direct|ring\n"
    "alltoallv:0-inf:pairwise|scattered\n"
    "gatherv:0-inf:linear\n"
    "scatterv:0-inf:linear\n"
    /* across nodes with few ranks each, measured on namespace nodes
     * (docs/TUNING.md, "Across nodes"): one node's choices there were
     * linear bcast (3.4-3.7x the best from 4 MiB) and pairwise alltoall
     * (1.6-3.9x bruck to 16 KiB); then (2026-12-07, "Across nodes, again")
     * direct allgather, allreduce and reduce_scatter of small blocks
     * send a rank's block to every rank of every other node, where
     * recursive doubling or halving sends one message across per step;
     * and at 2 x 2 linear bcast and hier alltoall beat binomial's two
     * rounds and bruck's or pairwise's messages across the link. Sizes
     * are per block for allgather, alltoall and reduce_scatter (a quarter
     * or an eighth of xcoll-perf's size here). */
    "bcast@4/1-2:0-4k:linear|binomial,4m-inf:hier|binomial\n"
    "bcast@5-8/1-4:0-8k:linear|binomial,8k-4m:binomial,4m-inf:hier|binomial\n"
    "allgather@4/1-2:0-64k:recdbl|ring,64k-inf:ring|direct\n"
    "allgather@5-8/1-4:0-8k:recdbl|ring,512k-inf:ring|direct\n"
    "allreduce@5-8/1-4:0-1k:recdbl|ring\n"
    "alltoall@4/1-2:0-4k:hier|pairwise\n"
    "alltoall@5-8/1-4:0-8k:bruck|pairwise\n"
    "reduce_scatter@5-8/1-4:0-4k:rechalving|ring\n"
    /* modelled, from 64 ranks (above) */
    "allreduce@64-inf/1-16:0-16k:recdbl|hier,16k-64m:rabenseifner|recdbl,64m-inf:dbtree|rabenseifner\n"
    "allreduce@64-255/17-inf:0-16k:recdbl|rabenseifner,16k-inf:rabenseifner|recdbl\n"
    "allreduce@256-1023/17-inf:0-2k:recdbl|hier,2k-16k:hier|reduce_bcast,16k-32k:dbtree|hier,32k-8m:hier2d|dbtree,8m-16m:dbtree|ring,16m-inf:ring|dbtree\n"
    "allreduce@1024-inf/17-inf:0-2k:recdbl|hier,2k-16k:hier|reduce_bcast,16k-128k:dbtree|hier,128k-8m:hier2d|dbtree,8m-inf:dbtree|hier2d\n"
    "bcast@64-inf/1-16:0-16k:binomial|hier,16k-inf:dbtree|binomial\n"
    "bcast@64-inf/17-inf:0-16k:binomial|dbtree,16k-inf:dbtree|binomial\n"
    "reduce@64-255/1-16:0-128k:binomial|linear,128k-inf:rsg|binomial\n"
    "reduce@256-1023/1-16:0-256k:binomial|rsg,256k-inf:rsg|binomial\n"
    "reduce@1024-inf/1-16:0-2m:binomial|rsg,2m-inf:rsg|binomial\n"
    "reduce@64-255/17-inf:0-128k:binomial|linear,128k-inf:rsg|binomial\n"
    "reduce@256-1023/17-inf:0-256k:binomial|rsg,256k-inf:rsg|binomial\n"
    "reduce@1024-inf/17-inf:0-1m:binomial|rsg,1m-inf:rsg|binomial\n"
    "allgather@64-inf/1-16:0-32k:recdbl|bruck,32k-inf:ring|recdbl\n"
    "allgather@64-255/17-inf:0-256k:recdbl|bruck,256k-inf:ring|recdbl\n"
    "allgather@256-1023/17-inf:0-512:recdbl|bruck,512-inf:ring|recdbl\n"
    "allgather@1024-inf/17-inf:0-512:recdbl|bruck,512-inf:ring|recdbl\n"
    "reduce_scatter@64-inf/1-16:0-256k:rechalving|ring,256k-inf:ring|rechalving\n"
    "reduce_scatter@64-255/17-inf:0-256k:rechalving|direct,256k-inf:ring|rechalving\n"
    "reduce_scatter@256-1023/17-inf:0-512:rechalving|ring,512-inf:ring|rechalving\n"
    "reduce_scatter@1024-inf/17-inf:0-512:rechalving|ring,512-inf:ring|rechalving\n"
    "alltoall@64-inf/1-16:0-512:bruck|hier,512-inf:pairwise|bruck\n"
    "alltoall@64-inf/17-inf:0-512:bruck|pairwise,512-inf:pairwise|bruck\n"
    "gather@64-255/1-16:0-2k:binomial|linear,2k-inf:linear|binomial\n"
    "gather@256-1023/1-16:0-16k:binomial|linear,16k-inf:linear|binomial\n"
    "gather@1024-inf/1-16:0-16k:binomial|linear,16k-inf:linear|binomial\n"
    "gather@64-255/17-inf:0-2k:binomial|linear,2k-inf:linear|binomial\n"
    "gather@256-1023/17-inf:0-2k:binomial|linear,2k-inf:linear|binomial\n"
    "gather@1024-inf/17-inf:0-4k:binomial|linear,4k-inf:linear|binomial\n"
    "scatter@64-255/1-16:0-2k:binomial|linear,2k-inf:linear|binomial\n"
    "scatter@256-1023/1-16:0-4k:binomial|linear,4k-inf:linear|binomial\n"
    "scatter@1024-inf/1-16:0-16k:binomial|linear,16k-inf:linear|binomial\n"
    "scatter@64-inf/17-inf:0-2k:binomial|linear,2k-inf:linear|binomial\n"
    "barrier@64-inf/1-16:0-inf:dissemination|tree\n"
    "barrier@64-inf/17-inf:0-inf:dissemination|tree\n";

/* ------------------------------------------------------------------ parser */

typedef struct {
    const char *text;
    const char *p;
    const char *source;
    int multiline;          /* positions as "line L, column C" */
    char *err;
    size_t errlen;
} parser_t;

static void where(const parser_t *ps, const char *at, int *line, int *column)
{
    const char *q;
    *line = 1;
    *column = 1;
    for (q = ps->text; q < at; q++) {
        if (*q == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

static xcoll_status_t fail(parser_t *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static xcoll_status_t fail(parser_t *ps, const char *at, const char *fmt, ...)
{
    va_list ap;
    int line, column, n;
    if (ps->err == NULL || ps->errlen == 0)
        return XCOLL_ERR_INVALID_ARG;
    where(ps, at, &line, &column);
    if (ps->multiline)
        n = snprintf(ps->err, ps->errlen, "%s: line %d, column %d: ", ps->source, line, column);
    else
        n = snprintf(ps->err, ps->errlen, "%s: at character %ld: ", ps->source,
                     (long)(at - ps->text) + 1);
    if (n >= 0 && (size_t)n < ps->errlen) {
        va_start(ap, fmt);
        vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return XCOLL_ERR_INVALID_ARG;
}

/* Skips blanks and comments; newlines too when the grammar is in the
 * middle of something (a newline only ends an entry where one may end). */
static void skip_space(parser_t *ps, int newlines)
{
    for (;;) {
        char c = *ps->p;
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
            ps->p++;
        } else if (c == '#') {
            while (*ps->p != '\0' && *ps->p != '\n')
                ps->p++;
        } else {
            return;
        }
    }
}

static int is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* The word at p (letters, digits, '_'), copied into buf; returns its length. */
static size_t read_word(parser_t *ps, char *buf, size_t len)
{
    size_t n = 0;
    while (is_word_char(ps->p[n]))
        n++;
    if (len > 0) {
        size_t k = n < len - 1 ? n : len - 1;
        memcpy(buf, ps->p, k);
        buf[k] = '\0';
    }
    return n;
}

/* A quoted excerpt of what is at p, for "found ..." in messages. */
static const char *found(const char *p, char *buf, size_t len)
{
    size_t n = 0;
    if (*p == '\0')
        return "the end of the text";
    if (*p == '\n')
        return "the end of the line";
    while (p[n] != '\0' && p[n] != '\n' && n < 12)
        n++;
    snprintf(buf, len, "\"%.*s\"", (int)n, p);
    return buf;
}

static void known_collectives(char *buf, size_t len)
{
    size_t n = 0;
    int c;
    buf[0] = '\0';
    for (c = 0; c < XC_COLL_COUNT && n < len; c++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", c ? ", " : "", xc_coll_name((xc_coll_t)c));
}

static void known_algorithms(xc_coll_t coll, char *buf, size_t len)
{
    size_t i, n = 0;
    buf[0] = '\0';
    for (i = 0; i < xc_num_algorithms && n < len; i++)
        if (xc_algorithms[i].coll == coll)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", xc_algorithms[i].name);
    if (n < len)
        snprintf(buf + n, len - n, "%smpi", n ? ", " : "");
}

/* size := digits [k|m|g] | inf. inf_ok: whether "inf" may stand here. */
static xcoll_status_t parse_size(parser_t *ps, size_t *out, int inf_ok, const char *what)
{
    const char *start = ps->p;
    char word[32], fb[24];
    size_t v = 0, mult = 1;
    if (*ps->p < '0' || *ps->p > '9') {
        size_t n = read_word(ps, word, sizeof(word));
        if (n == 3 && strcmp(word, "inf") == 0) {
            if (!inf_ok)
                return fail(ps, start, "%s cannot be inf", what);
            ps->p += n;
            *out = XC_TUNE_INF;
            return XCOLL_OK;
        }
        return fail(ps, start, "expected %s (bytes, optionally with k, m or g%s), found %s", what,
                    inf_ok ? ", or inf" : "", found(start, fb, sizeof(fb)));
    }
    while (*ps->p >= '0' && *ps->p <= '9') {
        unsigned d = (unsigned)(*ps->p - '0');
        if (v > (XC_TUNE_INF - 1 - d) / 10)
            return fail(ps, start, "%s is too large", what);
        v = v * 10 + d;
        ps->p++;
    }
    switch (*ps->p) {
    case 'k': case 'K': mult = (size_t)1 << 10; ps->p++; break;
    case 'm': case 'M': mult = (size_t)1 << 20; ps->p++; break;
    case 'g': case 'G': mult = (size_t)1 << 30; ps->p++; break;
    default: break;
    }
    if (is_word_char(*ps->p))
        return fail(ps, ps->p, "unexpected '%c' after %s \"%.*s\" (units are k, m, g: "
                    "KiB, MiB, GiB)", *ps->p, what, (int)(ps->p - start), start);
    if (v > (XC_TUNE_INF - 1) / mult)
        return fail(ps, start, "%s is too large", what);
    *out = v * mult;
    return XCOLL_OK;
}

/* ranks := N | N-N | N-inf, into *min and *max ("what": "a rank count"). */
static xcoll_status_t parse_ranks(parser_t *ps, int *min, int *max, const char *what)
{
    const char *start = ps->p;
    size_t lo, hi;
    xcoll_status_t rc;
    if ((rc = parse_size(ps, &lo, 0, what)) != XCOLL_OK)
        return rc;
    hi = lo;
    skip_space(ps, 1);
    if (*ps->p == '-') {
        ps->p++;
        skip_space(ps, 1);
        if ((rc = parse_size(ps, &hi, 1, what)) != XCOLL_OK)
            return rc;
    }
    if (lo < 1)
        return fail(ps, start, "rank counts start at 1");
    if (lo >= XC_TUNE_RANKS_INF || (hi != XC_TUNE_INF && hi >= XC_TUNE_RANKS_INF))
        return fail(ps, start, "rank count too large");
    if (hi < lo)
        return fail(ps, start, "empty rank range %zu-%zu (the first must not exceed the second)",
                    lo, hi);
    *min = (int)lo;
    *max = hi == XC_TUNE_INF ? XC_TUNE_RANKS_INF : (int)hi;
    return XCOLL_OK;
}

static xcoll_status_t add_rule(xc_tune_t *t, const xc_tune_rule_t *r)
{
    if (t->nrules == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 32;
        xc_tune_rule_t *n = realloc(t->rules, cap * sizeof(*n));
        if (n == NULL)
            return XCOLL_ERR_NO_MEMORY;
        t->rules = n;
        t->cap = cap;
    }
    t->rules[t->nrules++] = *r;
    return XCOLL_OK;
}

/* entry := coll ['@' ranks] ['/' ranks] ':' rule {',' rule}
 * ('/': the ranks on the fullest node) */
static xcoll_status_t parse_entry(parser_t *ps, xc_tune_t *t, int source)
{
    const char *start = ps->p, *at;
    char word[64], list[256], fb[24];
    xc_tune_rule_t r;
    xcoll_status_t rc;
    size_t n;
    int c;

    memset(&r, 0, sizeof(r));
    r.source = source;
    r.min_ranks = 1;
    r.max_ranks = XC_TUNE_RANKS_INF;
    r.min_per_node = 1;
    r.max_per_node = XC_TUNE_RANKS_INF;
    n = read_word(ps, word, sizeof(word));
    if (n == 0)
        return fail(ps, start, "expected a collective name, found %s", found(start, fb, sizeof(fb)));
    for (c = 0; c < XC_COLL_COUNT; c++)
        if (strlen(xc_coll_name((xc_coll_t)c)) == n &&
            strncmp(xc_coll_name((xc_coll_t)c), start, n) == 0)
            break;
    if (c == XC_COLL_COUNT) {
        known_collectives(list, sizeof(list));
        return fail(ps, start, "unknown collective \"%.*s\" (known: %s)", (int)n, start, list);
    }
    r.coll = (xc_coll_t)c;
    ps->p += n;
    skip_space(ps, 1);
    if (*ps->p == '@') {
        ps->p++;
        skip_space(ps, 1);
        if ((rc = parse_ranks(ps, &r.min_ranks, &r.max_ranks, "a rank count")) != XCOLL_OK)
            return rc;
        skip_space(ps, 1);
    }
    if (*ps->p == '/') {
        ps->p++;
        skip_space(ps, 1);
        if ((rc = parse_ranks(ps, &r.min_per_node, &r.max_per_node,
                              "a rank count per node")) != XCOLL_OK)
            return rc;
        skip_space(ps, 1);
    }
    if (*ps->p != ':')
        return fail(ps, ps->p, "expected ':'%s after \"%s\", found %s",
                    r.min_per_node > 1 || r.max_per_node != XC_TUNE_RANKS_INF
                        ? ""
                        : r.min_ranks == 1 && r.max_ranks == XC_TUNE_RANKS_INF
                              ? " (or '@ranks', or '/ranks per node')"
                              : " (or '/ranks per node')",
                    xc_coll_name(r.coll), found(ps->p, fb, sizeof(fb)));
    ps->p++;

    for (;;) { /* one rule: lo-hi:algo{|algo} */
        const char *rule_start;
        skip_space(ps, 1);
        rule_start = ps->p;
        where(ps, rule_start, &r.line, &r.column);
        if ((rc = parse_size(ps, &r.lo, 0, "a message size")) != XCOLL_OK)
            return rc;
        skip_space(ps, 1);
        if (*ps->p != '-')
            return fail(ps, ps->p, "expected '-' in the size range, found %s",
                        found(ps->p, fb, sizeof(fb)));
        ps->p++;
        skip_space(ps, 1);
        if ((rc = parse_size(ps, &r.hi, 1, "a message size")) != XCOLL_OK)
            return rc;
        if (r.hi <= r.lo)
            return fail(ps, rule_start, "empty size range (the lower bound is included, the "
                        "upper one is not, so it must be larger)");
        skip_space(ps, 1);
        if (*ps->p != ':')
            return fail(ps, ps->p, "expected ':' after the size range, found %s",
                        found(ps->p, fb, sizeof(fb)));
        ps->p++;
        r.ncandidates = 0;
        for (;;) {
            const xc_algo_t *al;
            skip_space(ps, 1);
            at = ps->p;
            n = read_word(ps, word, sizeof(word));
            if (n == 0)
                return fail(ps, at, "expected an algorithm for %s, found %s",
                            xc_coll_name(r.coll), found(at, fb, sizeof(fb)));
            al = n < sizeof(word) ? xc_algo_find(r.coll, word) : NULL;
            if (al == NULL) {
                known_algorithms(r.coll, list, sizeof(list));
                return fail(ps, at, "unknown algorithm \"%.*s\" for %s (known: %s)", (int)n, at,
                            xc_coll_name(r.coll), list);
            }
            if (r.ncandidates == XC_TUNE_MAX_CANDIDATES)
                return fail(ps, at, "more than %d candidates in one rule",
                            XC_TUNE_MAX_CANDIDATES);
            r.candidates[r.ncandidates++] = al;
            ps->p += n;
            skip_space(ps, 0);
            if (*ps->p != '|')
                break;
            ps->p++;
        }
        if ((rc = add_rule(t, &r)) != XCOLL_OK)
            return fail(ps, rule_start, "out of memory");
        /* A rule ends the entry at ';', a newline or the end; ',' continues it. */
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == ';' || *ps->p == '\n' || *ps->p == '\0')
            return XCOLL_OK;
        return fail(ps, ps->p, "expected '|', ',', ';' or the end of the line after \"%s\", "
                    "found %s", r.candidates[r.ncandidates - 1]->name,
                    found(ps->p, fb, sizeof(fb)));
    }
}

xcoll_status_t xc_tune_parse(xc_tune_t *t, const char *text, const char *source, char *err,
                             size_t errlen)
{
    parser_t ps;
    size_t first = t->nrules;
    char **sources;
    xcoll_status_t rc = XCOLL_OK;
    int id;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    ps.text = text;
    ps.p = text;
    ps.source = source;
    ps.multiline = strchr(text, '\n') != NULL && strchr(text, '\n')[1] != '\0';
    ps.err = err;
    ps.errlen = errlen;

    sources = realloc(t->sources, (size_t)(t->nsources + 1) * sizeof(*sources));
    if (sources == NULL)
        return fail(&ps, text, "out of memory");
    t->sources = sources;
    id = t->nsources;
    if ((sources[id] = strdup(source)) == NULL)
        return fail(&ps, text, "out of memory");
    t->nsources++;

    for (;;) {
        while (skip_space(&ps, 1), *ps.p == ';')
            ps.p++;
        if (*ps.p == '\0')
            break;
        if ((rc = parse_entry(&ps, t, id)) != XCOLL_OK)
            break;
    }
    if (rc != XCOLL_OK) { /* all or nothing */
        t->nrules = first;
        free(t->sources[--t->nsources]);
    }
    return rc;
}

/* ------------------------------------------------------------------ loading */

void xc_tune_free(xc_tune_t *t)
{
    int i;
    if (t == NULL)
        return;
    for (i = 0; i < t->nsources; i++)
        free(t->sources[i]);
    free(t->sources);
    free(t->rules);
    free(t);
}

#define XC_TUNE_FILE_MAX (1 << 20)

static xcoll_status_t read_file(const char *path, char **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *text;
    size_t n;
    if (f == NULL) {
        snprintf(err, errlen, "XCOLL_TUNE_FILE=%s: cannot open: %s", path, strerror(errno));
        return XCOLL_ERR_INVALID_ARG;
    }
    text = malloc(XC_TUNE_FILE_MAX + 1);
    if (text == NULL) {
        fclose(f);
        snprintf(err, errlen, "XCOLL_TUNE_FILE=%s: out of memory", path);
        return XCOLL_ERR_NO_MEMORY;
    }
    n = fread(text, 1, XC_TUNE_FILE_MAX + 1, f);
    if (ferror(f) || n > XC_TUNE_FILE_MAX || memchr(text, '\0', n) != NULL) {
        snprintf(err, errlen, "XCOLL_TUNE_FILE=%s: %s", path,
                 ferror(f) ? "read error" : n > XC_TUNE_FILE_MAX ? "larger than 1 MiB"
                                                                 : "not a text file");
        fclose(f);
        free(text);
        return XCOLL_ERR_INVALID_ARG;
    }
    fclose(f);
    text[n] = '\0';
    *out = text;
    return XCOLL_OK;
}

xcoll_status_t xc_tune_load(xc_tune_t **out, const char *rules, const char *rules_source,
                            char *err, size_t errlen)
{
    char msg[512], source[300];
    const char *path, *env;
    char *text = NULL;
    xcoll_status_t rc;
    xc_tune_t *t;

    *out = NULL;
    msg[0] = '\0';
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        xc_error("out of memory for the selection table");
        return XCOLL_ERR_NO_MEMORY;
    }
    rc = xc_tune_parse(t, xc_tune_defaults, "defaults", msg, sizeof(msg));
    if (rc != XCOLL_OK) {
        xc_error("the built-in selection table is invalid: %s", msg);
        rc = XCOLL_ERR_INTERNAL;
        goto out;
    }
    if (rules != NULL) {
        snprintf(source, sizeof(source), "%s", rules_source != NULL ? rules_source : "rules");
        if ((rc = xc_tune_parse(t, rules, source, msg, sizeof(msg))) != XCOLL_OK)
            goto out;
    }
    path = getenv("XCOLL_TUNE_FILE");
    if (path != NULL && *path != '\0') {
        if ((rc = read_file(path, &text, msg, sizeof(msg))) != XCOLL_OK)
            goto out;
        snprintf(source, sizeof(source), "XCOLL_TUNE_FILE=%s", path);
        rc = xc_tune_parse(t, text, source, msg, sizeof(msg));
        free(text);
        if (rc != XCOLL_OK)
            goto out;
    }
    env = getenv("XCOLL_TUNE");
    if (env != NULL && (rc = xc_tune_parse(t, env, "XCOLL_TUNE", msg, sizeof(msg))) != XCOLL_OK)
        goto out;
    *out = t;
    return XCOLL_OK;
out:
    if (msg[0] != '\0') {
        xc_error("%s", msg);
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s", msg);
    }
    xc_tune_free(t);
    return rc;
}

const xc_tune_t *xc_tune_builtin(void)
{
    static xc_tune_t *builtin;
    static int tried;
    char msg[512];
    if (!tried) {
        tried = 1;
        builtin = calloc(1, sizeof(*builtin));
        if (builtin != NULL &&
            xc_tune_parse(builtin, xc_tune_defaults, "defaults", msg, sizeof(msg)) != XCOLL_OK) {
            xc_error("the built-in selection table is invalid: %s", msg);
            xc_tune_free(builtin);
            builtin = NULL;
        }
    }
    return builtin;
}

uint64_t xc_tune_hash(const xc_tune_t *t)
{
    uint64_t h = 1469598103934665603ULL;
    size_t i;
    int c;
    const char *p;
#define XC_MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ULL)
    for (i = 0; t != NULL && i < t->nrules; i++) {
        const xc_tune_rule_t *r = &t->rules[i];
        XC_MIX(r->coll);
        XC_MIX(r->min_ranks);
        XC_MIX(r->max_ranks);
        XC_MIX(r->min_per_node);
        XC_MIX(r->max_per_node);
        XC_MIX(r->lo);
        XC_MIX(r->hi);
        for (c = 0; c < r->ncandidates; c++)
            for (p = r->candidates[c]->name; *p != '\0'; p++)
                XC_MIX(*p);
        XC_MIX(';');
    }
#undef XC_MIX
    return h;
}

/* ------------------------------------------------------------------ lookup */

static int rule_covers_comm(const xc_tune_rule_t *r, xc_coll_t coll, int nranks, int per_node)
{
    return r->coll == coll && nranks >= r->min_ranks && nranks <= r->max_ranks &&
           per_node >= r->min_per_node && per_node <= r->max_per_node;
}

static int rule_covers(const xc_tune_rule_t *r, xc_coll_t coll, int nranks, int per_node,
                       size_t bytes)
{
    return rule_covers_comm(r, coll, nranks, per_node) && bytes >= r->lo &&
           (r->hi == XC_TUNE_INF || bytes < r->hi);
}

const xc_tune_rule_t *xc_tune_match(const xc_tune_t *t, xc_coll_t coll, int nranks,
                                    int per_node, size_t bytes)
{
    size_t i;
    if (t == NULL)
        return NULL;
    for (i = t->nrules; i-- > 0;) /* the last rule that covers the call wins */
        if (rule_covers(&t->rules[i], coll, nranks, per_node, bytes))
            return &t->rules[i];
    return NULL;
}

int xc_tune_per_node(const xc_coll_args_t *a)
{
    return a->topo != NULL ? a->topo->max_local : a->size;
}

size_t xc_tune_message_bytes(const xc_coll_args_t *a)
{
    if (a->coll == XC_COLL_BARRIER)
        return 0;
    return a->count * xcoll_dtype_size(a->dtype);
}

/* ------------------------------------------------------------------ text */

void xc_tune_size_text(size_t bytes, char *buf, size_t len)
{
    static const char units[] = "gmk";
    int u;
    if (bytes == XC_TUNE_INF) {
        snprintf(buf, len, "inf");
        return;
    }
    for (u = 0; u < 3; u++) {
        size_t unit = (size_t)1 << (10 * (3 - u));
        if (bytes != 0 && bytes % unit == 0) {
            snprintf(buf, len, "%zu%c", bytes / unit, units[u]);
            return;
        }
    }
    snprintf(buf, len, "%zu", bytes);
}

static void ranks_text(int lo, int hi, char mark, char *buf, size_t len)
{
    if (lo == 1 && hi == XC_TUNE_RANKS_INF)
        buf[0] = '\0';
    else if (lo == hi)
        snprintf(buf, len, "%c%d", mark, lo);
    else if (hi == XC_TUNE_RANKS_INF)
        snprintf(buf, len, "%c%d-inf", mark, lo);
    else
        snprintf(buf, len, "%c%d-%d", mark, lo, hi);
}

void xc_tune_rule_region(const xc_tune_rule_t *r, char *buf, size_t len)
{
    char lo[24], hi[24], rk[32], pn[32];
    xc_tune_size_text(r->lo, lo, sizeof(lo));
    xc_tune_size_text(r->hi, hi, sizeof(hi));
    ranks_text(r->min_ranks, r->max_ranks, '@', rk, sizeof(rk));
    ranks_text(r->min_per_node, r->max_per_node, '/', pn, sizeof(pn));
    snprintf(buf, len, "%s%s%s:%s-%s", xc_coll_name(r->coll), rk, pn, lo, hi);
}

/* Appends to a buffer that may be too small, counting what it would need. */
typedef struct {
    char *buf;
    size_t len, used;
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(out_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(o->used < o->len ? o->buf + o->used : NULL,
                  o->used < o->len ? o->len - o->used : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used += (size_t)n;
}

static void put_candidates(out_t *o, const xc_tune_rule_t *r)
{
    int i;
    for (i = 0; i < r->ncandidates; i++)
        put(o, "%s%s", i ? "|" : "", r->candidates[i]->name);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void write_resolved(const xc_tune_t *t, xc_coll_t coll, int nranks, int per_node,
                           out_t *o)
{
    size_t *cuts, ncuts = 0, i, j, width;
    const xc_tune_rule_t *prev = NULL;
    char lo[24], hi[24], line[1024], notes[1024];
    out_t l = {line, sizeof(line), 0}, nt = {notes, sizeof(notes), 0};
    size_t start = 0;

    cuts = malloc((2 * t->nrules + 1) * sizeof(*cuts));
    if (cuts == NULL) {
        put(o, "%s: (out of memory)\n", xc_coll_name(coll));
        return;
    }
    cuts[ncuts++] = 0;
    for (i = 0; i < t->nrules; i++) {
        const xc_tune_rule_t *r = &t->rules[i];
        if (!rule_covers_comm(r, coll, nranks, per_node))
            continue;
        cuts[ncuts++] = r->lo;
        if (r->hi != XC_TUNE_INF)
            cuts[ncuts++] = r->hi;
    }
    qsort(cuts, ncuts, sizeof(*cuts), cmp_size);
    for (i = j = 0; i < ncuts; i++)
        if (j == 0 || cuts[i] != cuts[j - 1])
            cuts[j++] = cuts[i];
    ncuts = j;

    if (per_node != nranks) /* the line as a rule covers this node shape only */
        put(&l, "%s@%d/%d:", xc_coll_name(coll), nranks, per_node);
    else
        put(&l, "%s@%d:", xc_coll_name(coll), nranks);
    width = l.used;
    /* Between two cuts one rule wins throughout; adjacent pieces won by the
     * same rule print as one range. */
    for (i = 0; i <= ncuts; i++) {
        const xc_tune_rule_t *r =
            i < ncuts ? xc_tune_match(t, coll, nranks, per_node, cuts[i]) : NULL;
        if (i > 0 && i < ncuts && r == prev)
            continue;
        if (prev != NULL) {
            xc_tune_size_text(start, lo, sizeof(lo));
            xc_tune_size_text(i < ncuts ? cuts[i] : XC_TUNE_INF, hi, sizeof(hi));
            put(&l, "%s%s-%s:", l.used > width ? "," : "", lo, hi);
            put_candidates(&l, prev);
            if (strcmp(t->sources[prev->source], "defaults") != 0) {
                put(&nt, "%s%s-%s from %s", nt.used ? "; " : "", lo, hi,
                    t->sources[prev->source]);
            }
        } else if (i > 0) {
            xc_tune_size_text(start, lo, sizeof(lo));
            xc_tune_size_text(i < ncuts ? cuts[i] : XC_TUNE_INF, hi, sizeof(hi));
            put(&nt, "%s%s-%s: no rule (table order)", nt.used ? "; " : "", lo, hi);
        }
        prev = r;
        if (i < ncuts)
            start = cuts[i];
    }
    free(cuts);
    if (l.used == width) /* no rule at all */
        put(o, "# %s: no rule for %d ranks: algorithms are tried in table order\n",
            xc_coll_name(coll), nranks);
    else if (nt.used)
        put(o, "%-60s # %s\n", line, notes);
    else
        put(o, "%s\n", line);
}

size_t xc_tune_write(const xc_tune_t *t, int nranks, int per_node, char *buf, size_t len)
{
    out_t o = {buf, len, 0};
    char region[80], rule[512];
    size_t i;
    int c;
    if (len > 0)
        buf[0] = '\0';
    if (nranks > 0) {
        for (c = 0; c < XC_COLL_COUNT; c++)
            write_resolved(t, (xc_coll_t)c, nranks, per_node, &o);
        return o.used;
    }
    for (i = 0; i < t->nrules; i++) {
        const xc_tune_rule_t *r = &t->rules[i];
        out_t ro = {rule, sizeof(rule), 0};
        xc_tune_rule_region(r, region, sizeof(region));
        put(&ro, "%s:", region);
        put_candidates(&ro, r);
        if (strcmp(t->sources[r->source], "defaults") == 0)
            put(&o, "%-60s # defaults\n", rule);
        else if (r->line == 1 && strncmp(t->sources[r->source], "XCOLL_TUNE_FILE", 15) != 0)
            put(&o, "%-60s # %s, character %d\n", rule, t->sources[r->source], r->column);
        else
            put(&o, "%-60s # %s, line %d, column %d\n", rule, t->sources[r->source], r->line,
                r->column);
    }
    return o.used;
}
