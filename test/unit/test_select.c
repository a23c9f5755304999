/* The selection grammar and the choice of algorithm (tune.c, select.c):
 * valid tables and what they choose, every kind of mistake with its
 * position, unit suffixes, rank ranges, override order, a file with
 * comments, the decline chain, and that the built-in defaults parse and
 * cover every call. No MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "coll/coll.h"
#include "coll/tune.h"

static int passed, failed;

#define CHECK(cond, ...)                                    \
    do {                                                    \
        if (cond) {                                         \
            passed++;                                       \
        } else {                                            \
            failed++;                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                   \
            fputc('\n', stderr);                            \
        }                                                   \
    } while (0)

static xc_tune_t *parse(const char *text, char *err, size_t errlen)
{
    xc_tune_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    if (xc_tune_parse(t, text, "XCOLL_TUNE", err, errlen) != XCOLL_OK) {
        xc_tune_free(t);
        return NULL;
    }
    return t;
}

/* The first candidate of the rule that covers the call, or "-". */
static const char *chosen(const xc_tune_t *t, xc_coll_t coll, int nranks, int per_node,
                          size_t bytes)
{
    const xc_tune_rule_t *r = xc_tune_match(t, coll, nranks, per_node, bytes);
    return r != NULL ? r->candidates[0]->name : "-";
}

static void expect_choice(const xc_tune_t *t, xc_coll_t coll, int nranks, int per_node,
                          size_t bytes, const char *want, int line)
{
    const char *got = chosen(t, coll, nranks, per_node, bytes);
    CHECK(strcmp(got, want) == 0, "line %d: %s on %d ranks, %d a node, %zu bytes: chose %s, "
          "want %s", line, xc_coll_name(coll), nranks, per_node, bytes, got, want);
}
/* on one node */
#define EXPECT(t, coll, n, bytes, want) expect_choice(t, coll, n, n, bytes, want, __LINE__)

/* The measured rules across nodes (docs/TUNING.md, "Across nodes" and
 * "Across nodes, again") in the default table t, at the node shapes
 * measured (2 and 4 nodes of 2 ranks, 2 of 4): no one node's linear bcast
 * for mid-sized messages, pairwise alltoall or direct allgather, allreduce
 * and reduce_scatter for small blocks there, while one node keeps them.
 * Sizes are what a rule matches: per block for allgather, alltoall and
 * reduce_scatter. The first candidate; where it declines (hier with one
 * rank a node) the rule's next one serves. */
static void test_across_nodes(const xc_tune_t *t)
{
    static const struct {
        xc_coll_t coll;
        int nranks, per_node;
        size_t bytes;
        const char *want;
    } cases[] = {
        {XC_COLL_BCAST, 8, 2, 4 << 20, "hier"},       /* 4 nodes x 2 */
        {XC_COLL_BCAST, 8, 4, 64 << 20, "hier"},      /* 2 nodes x 4 */
        {XC_COLL_BCAST, 8, 2, 1 << 20, "binomial"},
        {XC_COLL_BCAST, 8, 2, 1024, "linear"},
        {XC_COLL_BCAST, 8, 8, 64 << 10, "linear"},    /* one node: its own rule */
        {XC_COLL_BCAST, 8, 8, 4 << 20, "binomial"},   /* one node, since 2026-12-07 */
        {XC_COLL_BCAST, 4, 2, 4 << 20, "hier"},       /* 2 nodes x 2 */
        {XC_COLL_BCAST, 4, 2, 1024, "linear"},
        {XC_COLL_BCAST, 4, 4, 1024, "linear"},        /* one node, since 2026-12-07 */
        {XC_COLL_BCAST, 4, 4, 4096, "binomial"},      /* one node */
        {XC_COLL_BCAST, 8, 8, 8, "linear"},           /* one node */
        {XC_COLL_BCAST, 3, 3, 8, "binomial"},         /* one node of 3: the same sends */
        {XC_COLL_BCAST, 4, 2, 2048, "linear"},        /* 2 nodes x 2, its own rule */
        {XC_COLL_REDUCE, 8, 8, 64, "linear"},         /* one node, since 2026-12-07 */
        {XC_COLL_REDUCE, 8, 8, 4096, "binomial"},     /* one node */
        {XC_COLL_REDUCE, 4, 2, 64, "binomial"},       /* 2 nodes x 2 */
        {XC_COLL_GATHER, 6, 6, 64, "linear"},         /* one node, since 2026-12-07 */
        {XC_COLL_GATHER, 8, 2, 64, "binomial"},       /* 4 nodes x 2 */
        {XC_COLL_BCAST, 4, 4, 4 << 20, "chain"},      /* one node */
        {XC_COLL_ALLGATHER, 8, 2, 4 << 20, "ring"},
        {XC_COLL_ALLGATHER, 8, 2, 512 << 10, "ring"},  /* 4 MiB gathered */
        {XC_COLL_ALLGATHER, 8, 2, 128 << 10, "direct"}, /* 1 MiB gathered */
        {XC_COLL_ALLGATHER, 8, 8, 4 << 20, "direct"},
        {XC_COLL_ALLGATHER, 8, 2, 1024, "recdbl"},
        {XC_COLL_ALLGATHER, 8, 4, 4096, "recdbl"},    /* 2 nodes x 4 */
        {XC_COLL_ALLGATHER, 8, 2, 8192, "direct"},    /* between the rules */
        {XC_COLL_ALLGATHER, 8, 8, 1024, "direct"},
        {XC_COLL_ALLGATHER, 4, 2, 1024, "recdbl"},    /* 2 nodes x 2 */
        {XC_COLL_ALLGATHER, 4, 2, 1 << 20, "ring"},
        {XC_COLL_ALLGATHER, 4, 4, 1 << 20, "direct"}, /* one node */
        {XC_COLL_ALLGATHER, 4, 4, 2 << 20, "recdbl"}, /* one node, 2 MiB blocks */
        {XC_COLL_ALLTOALL, 8, 2, 4096, "bruck"},
        {XC_COLL_ALLTOALL, 8, 2, 8192, "pairwise"},
        {XC_COLL_ALLTOALL, 8, 8, 16384, "pairwise"},
        {XC_COLL_ALLTOALL, 8, 2, 65536, "pairwise"},
        /* small alltoall: pairwise at 2 ranks anywhere and on one node of 3-8,
         * hier at 2 nodes x 2 (pairwise where every node has one rank:
         * hier declines), bruck across more nodes */
        {XC_COLL_ALLTOALL, 4, 4, 512, "pairwise"},
        {XC_COLL_ALLTOALL, 2, 2, 8, "pairwise"},
        {XC_COLL_ALLTOALL, 4, 2, 512, "hier"},        /* 2 nodes x 2 */
        {XC_COLL_ALLTOALL, 4, 2, 16384, "pairwise"},
        {XC_COLL_ALLTOALL, 2, 1, 512, "pairwise"},    /* 2 nodes x 1 */
        {XC_COLL_ALLTOALL, 8, 5, 512, "bruck"},       /* 5 + 3 */
        {XC_COLL_ALLTOALL, 16, 16, 512, "bruck"},     /* not measured */
        {XC_COLL_ALLGATHER, 2, 2, 8, "direct"},
        {XC_COLL_ALLGATHER, 2, 2, 1 << 20, "direct"},
        {XC_COLL_REDUCE, 2, 2, 1 << 20, "linear"},
        {XC_COLL_REDUCE, 2, 1, 1 << 20, "binomial"},  /* 2 nodes x 1 */
        {XC_COLL_REDUCE, 3, 3, 1 << 20, "binomial"},
        /* allreduce: every rank crossing from 1 MiB at 2 nodes x 2 and from
         * 128 KiB at 5+ ranks in nodes of up to 4, the leaders (or the
         * single-node choice) below it; modelled from 64 ranks, for nodes
         * of 128 */
        {XC_COLL_ALLREDUCE, 4, 2, 1 << 20, "hier2d"},
        {XC_COLL_ALLREDUCE, 4, 2, 512 << 10, "hier"},
        {XC_COLL_ALLREDUCE, 8, 2, 4 << 20, "hier2d"},
        {XC_COLL_ALLREDUCE, 8, 2, 512 << 10, "hier2d"},     /* from 128 KiB, nodes of <= 4 */
        {XC_COLL_ALLREDUCE, 8, 4, 128 << 10, "hier2d"},     /* 2 nodes x 4 */
        {XC_COLL_ALLREDUCE, 6, 2, 256 << 10, "hier2d"},     /* 3 nodes x 2 */
        {XC_COLL_ALLREDUCE, 8, 2, 64 << 10, "dbtree"},      /* below it */
        {XC_COLL_ALLREDUCE, 8, 2, 256, "recdbl"},           /* small blocks */
        {XC_COLL_ALLREDUCE, 8, 8, 256, "direct"},           /* one node */
        {XC_COLL_REDUCE_SCATTER, 8, 2, 2048, "rechalving"}, /* 16 KiB in */
        {XC_COLL_REDUCE_SCATTER, 8, 4, 8, "rechalving"},    /* 2 nodes x 4 */
        {XC_COLL_REDUCE_SCATTER, 8, 2, 8192, "direct"},     /* 64 KiB in */
        {XC_COLL_REDUCE_SCATTER, 8, 8, 2048, "direct"},     /* one node */
        {XC_COLL_ALLREDUCE, 8, 8, 512 << 10, "rabenseifner"}, /* one node */
        {XC_COLL_ALLREDUCE, 4, 2, 8 << 20, "hier2d"},       /* 2 nodes x 2 */
        {XC_COLL_ALLREDUCE, 8, 5, 512 << 10, "rabenseifner"}, /* 5 + 3: not measured */
        {XC_COLL_ALLREDUCE, 32, 4, 256 << 10, "hier2d"},
        {XC_COLL_ALLREDUCE, 64, 4, 256 << 10, "rabenseifner"}, /* modelled from 64 */
        {XC_COLL_ALLREDUCE, 1024, 128, 256 << 10, "hier2d"},
        {XC_COLL_ALLREDUCE, 1024, 128, 8 << 20, "dbtree"},
    };
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_choice(t, cases[i].coll, cases[i].nranks, cases[i].per_node, cases[i].bytes,
                      cases[i].want, __LINE__);
}

/* The candidate that serves on one node, where hier and hier2d decline. */
static const char *served_on_one_node(const xc_tune_t *t, xc_coll_t coll, int nranks,
                                      size_t bytes)
{
    const xc_tune_rule_t *r = xc_tune_match(t, coll, nranks, nranks, bytes);
    for (int i = 0; r != NULL && i < r->ncandidates; i++)
        if (strncmp(r->candidates[i]->name, "hier", 4) != 0)
            return r->candidates[i]->name;
    return "-";
}

/* The allreduce on one node of 2 and 4 ranks, timed as a program calls
 * it (docs/TUNING.md, "As a program calls"). */
static void test_one_node_allreduce(const xc_tune_t *t)
{
    static const struct {
        int nranks;
        size_t bytes;
        const char *want;
    } cases[] = {
        {2, 32 << 10, "recdbl"},       {2, 256 << 10, "rabenseifner"},
        {2, 1 << 20, "rabenseifner"},  {2, 2 << 20, "ring"},
        {2, 4 << 20, "ring"},
        {4, 32 << 10, "ring"},         {4, 128 << 10, "rabenseifner"},
        {4, 2 << 20, "rabenseifner"},  {4, 4 << 20, "ring"},
        {4, 64 << 20, "ring"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = served_on_one_node(t, XC_COLL_ALLREDUCE, cases[i].nranks,
                                             cases[i].bytes);
        CHECK(strcmp(got, cases[i].want) == 0, "allreduce on one node of %d, %zu bytes: %s "
              "serves, want %s", cases[i].nranks, cases[i].bytes, got, cases[i].want);
    }
}

static void test_defaults(void)
{
    char err[512];
    xc_tune_t *t = parse(xc_tune_defaults, err, sizeof(err));
    static const size_t sizes[] = {0, 1, 8, 4095, 4096, 65536, 1 << 20, (size_t)1 << 34,
                                   XC_TUNE_INF - 1};
    size_t i, k;
    int c, n;
    CHECK(t != NULL, "the defaults do not parse: %s", err);
    if (t == NULL)
        return;
    CHECK(xc_tune_builtin() != NULL, "xc_tune_builtin() is NULL");
    /* every call finds a rule, whose candidates belong to its collective */
    for (c = 0; c < XC_COLL_COUNT; c++)
        for (n = 1; n <= 64; n++)
            for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
                const xc_tune_rule_t *r = xc_tune_match(t, (xc_coll_t)c, n, n, sizes[k]);
                if (r == NULL) {
                    CHECK(0, "defaults: no rule for %s on %d ranks at %zu bytes",
                          xc_coll_name((xc_coll_t)c), n, sizes[k]);
                    continue;
                }
                for (i = 0; i < (size_t)r->ncandidates; i++)
                    if (r->candidates[i]->coll != (xc_coll_t)c)
                        CHECK(0, "defaults: %s rule names %s of another collective",
                              xc_coll_name((xc_coll_t)c), r->candidates[i]->name);
            }
    passed++;
    test_across_nodes(t);
    test_one_node_allreduce(t);
    xc_tune_free(t);
}

static void test_valid(void)
{
    char err[512];
    xc_tune_t *t;

    t = parse("allreduce:0-4k:recdbl,4k-512k:rabenseifner,512k-inf:ring;"
              "bcast:0-32k:binomial,32k-inf:scatter_allgather", err, sizeof(err));
    CHECK(t != NULL, "the example does not parse: %s", err);
    if (t != NULL) {
        CHECK(t->nrules == 5, "example: %zu rules, want 5", t->nrules);
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 0, "recdbl");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 4095, "recdbl");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 4096, "rabenseifner");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 512 * 1024 - 1, "rabenseifner");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 512 * 1024, "ring");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, XC_TUNE_INF - 1, "ring");
        EXPECT(t, XC_COLL_BCAST, 3, 32 * 1024, "scatter_allgather");
        EXPECT(t, XC_COLL_REDUCE, 3, 10, "-"); /* not mentioned: no rule */
        xc_tune_free(t);
    }

    /* blanks, empty entries, candidates, comments, a newline after ',' */
    t = parse("  ;; allreduce : 0 - 1k : ring | recdbl , 1k-inf:recdbl ; # c\n"
              " barrier:0-inf:tree;\n", err, sizeof(err));
    CHECK(t != NULL, "blanks/candidates: %s", err);
    if (t != NULL) {
        const xc_tune_rule_t *r = xc_tune_match(t, XC_COLL_ALLREDUCE, 2, 2, 100);
        CHECK(r != NULL && r->ncandidates == 2 && strcmp(r->candidates[1]->name, "recdbl") == 0,
              "candidates ring|recdbl not kept");
        EXPECT(t, XC_COLL_BARRIER, 7, 0, "tree");
        xc_tune_free(t);
    }
    t = parse("", err, sizeof(err));
    CHECK(t != NULL && t->nrules == 0, "the empty text is a valid table with no rules");
    xc_tune_free(t);
    t = parse("# only a comment", err, sizeof(err));
    CHECK(t != NULL && t->nrules == 0, "a comment alone is a valid table with no rules");
    xc_tune_free(t);
}

static void test_units(void)
{
    static const struct {
        const char *text;
        size_t lo, hi;
        const char *lo_text, *hi_text;
    } cases[] = {
        {"allgather:0-1000:ring", 0, 1000, "0", "1000"},
        {"allgather:1k-2K:ring", 1024, 2048, "1k", "2k"},
        {"allgather:3m-4M:ring", 3 << 20, 4 << 20, "3m", "4m"},
        {"allgather:1g-5g:ring", (size_t)1 << 30, (size_t)5 << 30, "1g", "5g"},
        {"allgather:1536-inf:ring", 1536, XC_TUNE_INF, "1536", "inf"},
        {"allgather:1024k-2048m:ring", 1 << 20, (size_t)2 << 30, "1m", "2g"},
    };
    char err[512], lo[24], hi[24];
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        xc_tune_t *t = parse(cases[i].text, err, sizeof(err));
        CHECK(t != NULL, "%s: %s", cases[i].text, err);
        if (t == NULL)
            continue;
        CHECK(t->rules[0].lo == cases[i].lo && t->rules[0].hi == cases[i].hi,
              "%s: range %zu-%zu, want %zu-%zu", cases[i].text, t->rules[0].lo, t->rules[0].hi,
              cases[i].lo, cases[i].hi);
        xc_tune_size_text(t->rules[0].lo, lo, sizeof(lo));
        xc_tune_size_text(t->rules[0].hi, hi, sizeof(hi));
        CHECK(strcmp(lo, cases[i].lo_text) == 0 && strcmp(hi, cases[i].hi_text) == 0,
              "%s: written as %s-%s", cases[i].text, lo, hi);
        xc_tune_free(t);
    }
}

static void test_ranks(void)
{
    char err[512], region[96];
    xc_tune_t *t = parse("allreduce:0-inf:ring;allreduce@2-4:0-inf:recdbl;"
                         "allreduce@8:0-inf:rabenseifner;allreduce@16-inf:0-1k:reduce_bcast",
                         err, sizeof(err));
    CHECK(t != NULL, "rank ranges: %s", err);
    if (t == NULL)
        return;
    EXPECT(t, XC_COLL_ALLREDUCE, 1, 64, "ring");
    EXPECT(t, XC_COLL_ALLREDUCE, 2, 64, "recdbl");
    EXPECT(t, XC_COLL_ALLREDUCE, 4, 64, "recdbl");
    EXPECT(t, XC_COLL_ALLREDUCE, 5, 64, "ring");
    EXPECT(t, XC_COLL_ALLREDUCE, 8, 64, "rabenseifner");
    EXPECT(t, XC_COLL_ALLREDUCE, 9, 64, "ring");
    EXPECT(t, XC_COLL_ALLREDUCE, 16, 64, "reduce_bcast");
    EXPECT(t, XC_COLL_ALLREDUCE, 1000, 1023, "reduce_bcast");
    EXPECT(t, XC_COLL_ALLREDUCE, 1000, 1024, "ring");
    xc_tune_rule_region(&t->rules[1], region, sizeof(region));
    CHECK(strcmp(region, "allreduce@2-4:0-inf") == 0, "region written as %s", region);
    xc_tune_rule_region(&t->rules[2], region, sizeof(region));
    CHECK(strcmp(region, "allreduce@8:0-inf") == 0, "region written as %s", region);
    xc_tune_rule_region(&t->rules[3], region, sizeof(region));
    CHECK(strcmp(region, "allreduce@16-inf:0-1k") == 0, "region written as %s", region);
    xc_tune_free(t);
}

/* '/': the ranks on the communicator's fullest node */
static void test_per_node(void)
{
    char err[512], region[96], buf[2048];
    const xc_tune_rule_t *r;
    xc_tune_t *t = parse("allreduce:0-inf:ring;allreduce@64-inf/1-16:0-4k:recdbl;"
                         "allreduce@64-inf/17-inf:0-inf:dbtree;allreduce/1:0-inf:direct",
                         err, sizeof(err));
    CHECK(t != NULL, "per-node ranges: %s", err);
    if (t == NULL)
        return;
    r = xc_tune_match(t, XC_COLL_ALLREDUCE, 64, 8, 100);
    CHECK(r != NULL && !strcmp(r->candidates[0]->name, "recdbl"), "64 ranks, 8 a node");
    r = xc_tune_match(t, XC_COLL_ALLREDUCE, 64, 8, 4096); /* outside 0-4k: the general rule */
    CHECK(r != NULL && !strcmp(r->candidates[0]->name, "ring"), "64 ranks, 8 a node, 4 KiB");
    r = xc_tune_match(t, XC_COLL_ALLREDUCE, 4096, 16, 100);
    CHECK(r != NULL && !strcmp(r->candidates[0]->name, "recdbl"), "16 a node is in 1-16");
    r = xc_tune_match(t, XC_COLL_ALLREDUCE, 4096, 17, 100);
    CHECK(r != NULL && !strcmp(r->candidates[0]->name, "dbtree"), "17 a node is in 17-inf");
    r = xc_tune_match(t, XC_COLL_ALLREDUCE, 63, 63, 100);
    CHECK(r != NULL && !strcmp(r->candidates[0]->name, "ring"), "63 ranks: no @64 rule");
    r = xc_tune_match(t, XC_COLL_ALLREDUCE, 5, 1, 100);
    CHECK(r != NULL && !strcmp(r->candidates[0]->name, "direct"), "a node per rank");
    r = xc_tune_match(t, XC_COLL_ALLREDUCE, 5, 2, 100);
    CHECK(r != NULL && !strcmp(r->candidates[0]->name, "ring"), "2 a node: not /1");
    xc_tune_rule_region(&t->rules[1], region, sizeof(region));
    CHECK(strcmp(region, "allreduce@64-inf/1-16:0-4k") == 0, "region written as %s", region);
    xc_tune_rule_region(&t->rules[3], region, sizeof(region));
    CHECK(strcmp(region, "allreduce/1:0-inf") == 0, "region written as %s", region);
    /* the resolved table depends on the nodes */
    xc_tune_write(t, 128, 8, buf, sizeof(buf));
    CHECK(strstr(buf, "allreduce@128/8:0-4k:recdbl,4k-inf:ring") != NULL, "128/8 table: %s", buf);
    xc_tune_write(t, 128, 128, buf, sizeof(buf));
    CHECK(strstr(buf, "allreduce@128:0-inf:dbtree") != NULL, "128/128 table: %s", buf);
    /* rules that differ only by their nodes hash apart */
    {
        xc_tune_t *u = parse("allreduce@64-inf/1-16:0-4k:recdbl", err, sizeof(err));
        xc_tune_t *v = parse("allreduce@64-inf/1-15:0-4k:recdbl", err, sizeof(err));
        CHECK(u != NULL && v != NULL && xc_tune_hash(u) != xc_tune_hash(v),
              "per-node ranges are in the hash");
        xc_tune_free(u);
        xc_tune_free(v);
    }
    xc_tune_free(t);
}

static void test_override_order(void)
{
    char err[512], buf[4096];
    xc_tune_t *t = calloc(1, sizeof(*t));
    size_t n;
    CHECK(xc_tune_parse(t, "allreduce:0-4k:recdbl,4k-inf:ring", "defaults", err,
                        sizeof(err)) == XCOLL_OK, "%s", err);
    CHECK(xc_tune_parse(t, "allreduce:2k-8k:rabenseifner", "XCOLL_TUNE", err,
                        sizeof(err)) == XCOLL_OK, "%s", err);
    EXPECT(t, XC_COLL_ALLREDUCE, 4, 2047, "recdbl");
    EXPECT(t, XC_COLL_ALLREDUCE, 4, 2048, "rabenseifner");
    EXPECT(t, XC_COLL_ALLREDUCE, 4, 8191, "rabenseifner");
    EXPECT(t, XC_COLL_ALLREDUCE, 4, 8192, "ring");
    /* a failed parse appends nothing */
    CHECK(xc_tune_parse(t, "allreduce:0-inf:ring;bcast:0-inf:nope", "XCOLL_TUNE", err,
                        sizeof(err)) == XCOLL_ERR_INVALID_ARG, "a bad text was accepted");
    CHECK(t->nrules == 3 && t->nsources == 2, "a failed parse left %zu rules, %d sources",
          t->nrules, t->nsources);
    n = xc_tune_write(t, 4, 4, buf, sizeof(buf));
    CHECK(n == strlen(buf) && strstr(buf, "allreduce@4:0-2k:recdbl,2k-8k:rabenseifner,8k-inf:ring")
          != NULL, "resolved table:\n%s", buf);
    CHECK(strstr(buf, "2k-8k from XCOLL_TUNE") != NULL, "resolved table names no source:\n%s",
          buf);
    CHECK(strstr(buf, "# bcast: no rule") != NULL, "resolved table hides a missing rule:\n%s",
          buf);
    n = xc_tune_write(t, 0, 0, buf, 10); /* truncated, but says what it needs */
    CHECK(strlen(buf) == 9 && n > 9, "truncated write: %zu, \"%s\"", n, buf);
    xc_tune_free(t);
}

static void test_errors(void)
{
    static const struct {
        const char *text;
        const char *want; /* a substring of the message */
    } cases[] = {
        {"allreduce:0-4k:rign", "at character 16: unknown algorithm \"rign\" for allreduce "
                                "(known: recdbl, rabenseifner, ring,"},
        {"allreduse:0-4k:ring", "at character 1: unknown collective \"allreduse\" (known: allreduce,"},
        {"allreduce:0-4k:ring;bcast:0-inf:ring", "at character 33: unknown algorithm \"ring\" for bcast"},
        {"allreduce", "at character 10: expected ':' (or '@ranks', or '/ranks per node') after "
                      "\"allreduce\", found the end"},
        {"allreduce@4 8:0-4k:ring", "at character 13: expected ':' (or '/ranks per node') after"},
        {"allreduce@4/8 8:0-4k:ring", "at character 15: expected ':' after \"allreduce\""},
        {"allreduce/:0-4k:ring", "at character 11: expected a rank count per node"},
        {"allreduce/0:0-4k:ring", "at character 11: rank counts start at 1"},
        {"allreduce/9-3:0-4k:ring", "at character 11: empty rank range 9-3"},
        {"allreduce/inf:0-4k:ring", "at character 11: a rank count per node cannot be inf"},
        {"allreduce/2@4:0-4k:ring", "at character 12: expected ':' after"},
        {"allreduce@4 / 2-inf :0-1k:ring", NULL},
        {"allreduce 0-4k:ring", "at character 11: expected ':'"},
        {"allreduce:4k:ring", "at character 13: expected '-' in the size range"},
        {"allreduce:0-4k ring", "at character 16: expected ':' after the size range"},
        {"allreduce:0-4q:ring", "at character 14: unexpected 'q' after a message size \"4\""},
        {"allreduce:x-4k:ring", "at character 11: expected a message size"},
        {"allreduce:inf-4k:ring", "at character 11: a message size cannot be inf"},
        {"allreduce:4k-4k:ring", "at character 11: empty size range"},
        {"allreduce:8k-4k:ring", "at character 11: empty size range"},
        {"allreduce:0-99999999999999999999:ring", "at character 13: a message size is too large"},
        {"allreduce:0-17179869184g:ring", "at character 13: a message size is too large"},
        {"allreduce:0-4k:", "at character 16: expected an algorithm for allreduce, found the end"},
        {"allreduce:0-4k:ring|", "at character 21: expected an algorithm"},
        {"allreduce:0-4k:ring,", "at character 21: expected a message size"},
        {"allreduce:0-4k:ring ring", "at character 21: expected '|', ',', ';'"},
        {"allreduce:0-4k:ring:", "at character 20: expected '|', ',', ';'"},
        {"allreduce@:0-4k:ring", "at character 11: expected a rank count"},
        {"allreduce@0:0-4k:ring", "at character 11: rank counts start at 1"},
        {"allreduce@4-2:0-4k:ring", "at character 11: empty rank range 4-2"},
        {"allreduce@inf:0-4k:ring", "at character 11: a rank count cannot be inf"},
        {"allreduce@5k-4k:0-4k:ring", "at character 11: empty rank range 5120-4096"},
        {"allreduce@99999999999:0-inf:ring", "at character 11: rank count too large"},
        {"allreduce@4:0-1k:ring", NULL}, /* valid: checks the table itself */
        {":0-4k:ring", "at character 1: expected a collective name, found \":0-4k:ring\""},
        {"allreduce:0-4k:a|b|c|d|e|f|g|h|i", "at character 16: unknown algorithm \"a\""},
        {"allreduce:0-1:ring|ring|ring|ring|ring|ring|ring|ring|ring",
         "at character 55: more than 8 candidates"},
        {"allreduce:0-4k:ring\nbcast:0-inf:nope\n", "XCOLL_TUNE: line 2, column 13: unknown "
                                                     "algorithm \"nope\" for bcast"},
    };
    char err[512];
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        xc_tune_t *t = parse(cases[i].text, err, sizeof(err));
        if (cases[i].want == NULL) {
            CHECK(t != NULL, "\"%s\" rejected: %s", cases[i].text, err);
        } else {
            CHECK(t == NULL, "\"%s\" accepted", cases[i].text);
            CHECK(strstr(err, cases[i].want) != NULL && strncmp(err, "XCOLL_TUNE: ", 12) == 0,
                  "\"%s\":\n   got  %s\n   want ...%s...", cases[i].text, err, cases[i].want);
        }
        xc_tune_free(t);
    }
}

static void test_load(void)
{
    char path[] = "/tmp/test_select_XXXXXX", err[512], region[96];
    const char *file = "# tuning for this cluster\n"
                       "allreduce:0-4k:recdbl,   # small: latency bound\n"
                       "          4k-inf:ring\n"
                       "\n"
                       "bcast@2-inf:0-inf:chain   # every size\n";
    xc_tune_t *t;
    const xc_tune_rule_t *r;
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp failed");
    if (fd < 0)
        return;
    CHECK(write(fd, file, strlen(file)) == (ssize_t)strlen(file), "write failed");
    close(fd);

    unsetenv("XCOLL_TUNE");
    setenv("XCOLL_TUNE_FILE", path, 1);
    CHECK(xc_tune_load(&t, NULL, NULL, err, sizeof(err)) == XCOLL_OK, "file: %s", err);
    if (t != NULL) {
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 100, "recdbl");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 1 << 20, "ring");
        EXPECT(t, XC_COLL_BCAST, 4, 100, "chain");
        EXPECT(t, XC_COLL_BARRIER, 4, 0, chosen(xc_tune_builtin(), XC_COLL_BARRIER, 4, 4, 0));
        r = xc_tune_match(t, XC_COLL_ALLREDUCE, 4, 4, 1 << 20);
        CHECK(r != NULL && r->line == 3 && r->column == 11, "rule position %d:%d, want 3:11",
              r ? r->line : 0, r ? r->column : 0);
        xc_tune_free(t);
    }

    /* XCOLL_TUNE wins over the file */
    setenv("XCOLL_TUNE", "allreduce:2k-inf:rabenseifner", 1);
    CHECK(xc_tune_load(&t, NULL, NULL, err, sizeof(err)) == XCOLL_OK, "file + env: %s", err);
    if (t != NULL) {
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 100, "recdbl");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 1 << 20, "rabenseifner");
        r = xc_tune_match(t, XC_COLL_ALLREDUCE, 4, 4, 1 << 20);
        xc_tune_rule_region(r, region, sizeof(region));
        CHECK(strcmp(t->sources[r->source], "XCOLL_TUNE") == 0 &&
                  strcmp(region, "allreduce:2k-inf") == 0,
              "source %s region %s", t->sources[r->source], region);
        xc_tune_free(t);
    }

    /* a mistake in either is an error naming its place */
    setenv("XCOLL_TUNE", "allreduce:2k-inf:rabenseifner,", 1);
    CHECK(xc_tune_load(&t, NULL, NULL, err, sizeof(err)) == XCOLL_ERR_INVALID_ARG && t == NULL,
          "a bad XCOLL_TUNE was accepted");
    CHECK(strstr(err, "XCOLL_TUNE: at character 31") != NULL, "got %s", err);
    unsetenv("XCOLL_TUNE");
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && write(fd, "# c\nbcast:0-inf:chain\nbcast:0-inf:chian\n", 39) == 39,
          "rewrite failed");
    close(fd);
    CHECK(xc_tune_load(&t, NULL, NULL, err, sizeof(err)) == XCOLL_ERR_INVALID_ARG, "a bad file was accepted");
    CHECK(strstr(err, path) != NULL && strstr(err, "line 3, column 13: unknown algorithm \"chian\"")
          != NULL, "got %s", err);
    unlink(path);
    CHECK(xc_tune_load(&t, NULL, NULL, err, sizeof(err)) == XCOLL_ERR_INVALID_ARG && strstr(err, "cannot open"),
          "a missing file: %s", err);
    unsetenv("XCOLL_TUNE_FILE");
    CHECK(xc_tune_load(&t, NULL, NULL, err, sizeof(err)) == XCOLL_OK, "defaults only: %s", err);
    xc_tune_free(t);
}

/* The pseudo-algorithm "mpi": valid for every collective, a candidate
 * like any other; with a fallback the call is handed back
 * (XCOLL_DECLINED, nothing built), without one it is skipped. And the
 * caller's rules (xcoll_config_t.rules) sit between the defaults and the
 * environment. */
static void test_mpi_fallback(void)
{
    char err[512], why[192];
    xc_coll_args_t a;
    xc_sched_t s;
    xc_tune_t *t;
    xcoll_status_t rc;
    int c;

    for (c = 0; c < XC_COLL_COUNT; c++) {
        char text[64];
        snprintf(text, sizeof(text), "%s:0-1k:mpi", xc_coll_name((xc_coll_t)c));
        t = parse(text, err, sizeof(err));
        CHECK(t != NULL, "%s: %s", text, err);
        if (t != NULL)
            EXPECT(t, (xc_coll_t)c, 4, 8, "mpi");
        xc_tune_free(t);
    }
    t = parse("allreduce:0-1k:mpi|rign", err, sizeof(err));
    CHECK(t == NULL && strstr(err, "known: recdbl") != NULL && strstr(err, ", mpi)") != NULL,
          "the known list names mpi: %s", err);

    memset(&a, 0, sizeof(a));
    a.coll = XC_COLL_ALLREDUCE;
    a.rank = 1;
    a.size = 4;
    a.count = 10;
    a.dtype = XCOLL_FLOAT32;
    a.op = XCOLL_SUM;
    t = parse("allreduce:0-1k:mpi|ring,1k-inf:hier|mpi", err, sizeof(err));
    a.fallback = 1;
    memset(&s, 0x7f, sizeof(s));
    rc = xc_select_and_build(&s, &a, t, why, sizeof(why));
    CHECK(rc == XCOLL_DECLINED && s.nsteps == 0 && s.steps == NULL,
          "fallback: mpi gave rc %d", rc);
    CHECK(strcmp(why, "rule allreduce:0-1k from XCOLL_TUNE") == 0, "why: %s", why);
    a.fallback = 0;
    rc = xc_select_and_build(&s, &a, t, why, sizeof(why));
    CHECK(rc == XCOLL_OK && strcmp(s.algo, "ring") == 0, "no fallback: chose %s (rc %d)",
          rc == XCOLL_OK ? s.algo : "-", rc);
    if (rc == XCOLL_OK)
        xc_sched_fini(&s);
    /* a candidate before it declines (hier, no topology): then mpi */
    a.count = 1000;
    a.fallback = 1;
    rc = xc_select_and_build(&s, &a, t, why, sizeof(why));
    CHECK(rc == XCOLL_DECLINED && strstr(why, "declined: hier") != NULL,
          "hier|mpi: rc %d why %s", rc, why);
    a.fallback = 0;
    rc = xc_select_and_build(&s, &a, t, why, sizeof(why));
    CHECK(rc == XCOLL_OK && strcmp(s.algo, "hier") != 0 && strstr(why, "table order") != NULL,
          "hier|mpi without fallback: rc %d why %s", rc, why);
    if (rc == XCOLL_OK)
        xc_sched_fini(&s);
    xc_tune_free(t);

    /* precedence: defaults < caller's rules < XCOLL_TUNE_FILE < XCOLL_TUNE */
    unsetenv("XCOLL_TUNE_FILE");
    setenv("XCOLL_TUNE", "allreduce:0-8:ring", 1);
    CHECK(xc_tune_load(&t, "allreduce:0-1k:mpi;bcast:0-inf:chain", "drop-in defaults", err,
                       sizeof(err)) == XCOLL_OK,
          "caller's rules: %s", err);
    if (t != NULL) {
        const xc_tune_rule_t *r = xc_tune_match(t, XC_COLL_ALLREDUCE, 4, 4, 100);
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 4, "ring");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 100, "mpi");
        EXPECT(t, XC_COLL_BCAST, 4, 1 << 30, "chain");
        EXPECT(t, XC_COLL_ALLREDUCE, 4, 1 << 20, chosen(xc_tune_builtin(), XC_COLL_ALLREDUCE, 4,
                                                        4, 1 << 20));
        CHECK(r != NULL && strcmp(t->sources[r->source], "drop-in defaults") == 0, "source %s",
              r ? t->sources[r->source] : "-");
        xc_tune_free(t);
    }
    unsetenv("XCOLL_TUNE");
    CHECK(xc_tune_load(&t, "allreduce:0-1k:mip", "drop-in defaults", err, sizeof(err)) ==
                  XCOLL_ERR_INVALID_ARG &&
              strstr(err, "drop-in defaults: at character 16: unknown algorithm") != NULL,
          "a bad caller's rule: %s", err);
}

/* hier declines without a topology (coll.h), so it exercises the chain. */
static void test_decline_chain(void)
{
    char err[512], why[192];
    xc_coll_args_t a;
    xc_sched_t s;
    xc_tune_t *t;
    xcoll_status_t rc;

    memset(&a, 0, sizeof(a));
    a.coll = XC_COLL_ALLREDUCE;
    a.rank = 1;
    a.size = 4;
    a.count = 1000;
    a.dtype = XCOLL_FLOAT32;
    a.op = XCOLL_SUM;

    t = parse("allreduce:0-inf:hier|ring", err, sizeof(err));
    rc = xc_select_and_build(&s, &a, t, why, sizeof(why));
    CHECK(rc == XCOLL_OK && strcmp(s.algo, "ring") == 0, "hier|ring chose %s (rc %d)",
          rc == XCOLL_OK ? s.algo : "nothing", rc);
    CHECK(strcmp(why, "rule allreduce:0-inf from XCOLL_TUNE; declined: hier") == 0, "why: %s",
          why);
    if (rc == XCOLL_OK)
        xc_sched_fini(&s);
    xc_tune_free(t);

    /* the rule's only candidate declines: the rest in table order */
    t = parse("allreduce:0-inf:hier", err, sizeof(err));
    rc = xc_select_and_build(&s, &a, t, why, sizeof(why));
    CHECK(rc == XCOLL_OK && strcmp(s.algo, "hier") != 0, "hier alone: rc %d", rc);
    CHECK(strstr(why, "declined: hier") != NULL && strstr(why, "fallback in table order") != NULL,
          "why: %s", why);
    if (rc == XCOLL_OK)
        xc_sched_fini(&s);
    xc_tune_free(t);

    /* no rule at all: table order */
    t = parse("bcast:0-inf:binomial", err, sizeof(err));
    rc = xc_select_and_build(&s, &a, t, why, sizeof(why));
    CHECK(rc == XCOLL_OK && strstr(why, "no rule covers it") != NULL, "no rule: rc %d why %s",
          rc, why);
    if (rc == XCOLL_OK)
        xc_sched_fini(&s);
    xc_tune_free(t);

    /* the first candidate that accepts wins, and NULL means the defaults */
    t = parse("allreduce:0-inf:ring|recdbl", err, sizeof(err));
    rc = xc_select_and_build(&s, &a, t, why, sizeof(why));
    CHECK(rc == XCOLL_OK && strcmp(s.algo, "ring") == 0 &&
              strcmp(why, "rule allreduce:0-inf from XCOLL_TUNE") == 0,
          "ring|recdbl: %s, %s", rc == XCOLL_OK ? s.algo : "-", why);
    if (rc == XCOLL_OK)
        xc_sched_fini(&s);
    xc_tune_free(t);
    rc = xc_select_and_build(&s, &a, NULL, why, sizeof(why));
    CHECK(rc == XCOLL_OK && strstr(why, "from defaults") != NULL, "defaults: rc %d why %s", rc,
          why);
    if (rc == XCOLL_OK)
        xc_sched_fini(&s);
}

static int fake_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    (void)ctx;
    memcpy(recvbuf, sendbuf, bytes);
    return 0;
}

/* A malformed override makes communicator creation fail (before any
 * transport is touched). */
static void test_comm_create(void)
{
    xcoll_bootstrap_t boot = {0, 1, fake_allgather, NULL};
    xcoll_comm_t comm = (xcoll_comm_t)1;
    char buf[2048];
    size_t needed = 0;
    setenv("XCOLL_TUNE", "allreduce:0-4k:rign", 1);
    CHECK(xcoll_comm_create(&boot, NULL, &comm) == XCOLL_ERR_INVALID_ARG && comm == NULL,
          "xcoll_comm_create accepted a bad XCOLL_TUNE");
    CHECK(xcoll_tune_table(4, buf, sizeof(buf), &needed) == XCOLL_ERR_INVALID_ARG &&
              strstr(buf, "at character 16: unknown algorithm \"rign\"") != NULL,
          "xcoll_tune_table: %s", buf);
    setenv("XCOLL_TUNE", "allreduce:0-4k:ring", 1);
    CHECK(xcoll_tune_table(4, buf, sizeof(buf), &needed) == XCOLL_OK && needed == strlen(buf) + 1 &&
              strncmp(buf, "allreduce@4:0-4k:ring,", 22) == 0,
          "xcoll_tune_table: %s", buf);
    unsetenv("XCOLL_TUNE");
    CHECK(xcoll_algorithm_name(XC_COLL_BARRIER, 0) != NULL &&
              xcoll_algorithm_name(XC_COLL_BARRIER, 99) == NULL &&
              xcoll_collective_name(XC_COLL_COUNT) == NULL &&
              strcmp(xcoll_collective_name(0), "allreduce") == 0,
          "introspection names");
}

int main(void)
{
    /* the expected errors are reported through return values here */
    setenv("XCOLL_LOG", "error", 0);
    unsetenv("XCOLL_TUNE");
    unsetenv("XCOLL_TUNE_FILE");
    test_defaults();
    test_valid();
    test_units();
    test_ranks();
    test_per_node();
    test_override_order();
    test_errors();
    test_load();
    test_decline_chain();
    test_mpi_fallback();
    test_comm_create();
    printf("test_select: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
