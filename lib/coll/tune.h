/* The selection table: which algorithm serves which (collective, rank
 * count, message size), written as data in one grammar that the built-in
 * defaults, XCOLL_TUNE_FILE and XCOLL_TUNE share (docs/TUNING.md):
 *
 *   table  := entry { (';' | newline) entry }
 *   entry  := coll [ '@' ranks ] ':' rule { ',' rule }
 *   rule   := size '-' size ':' algo { '|' algo }
 *   ranks  := N | N '-' N | N '-' 'inf'         (inclusive)
 *   size   := digits [ 'k' | 'm' | 'g' ] | 'inf' (KiB-based; [lo, hi))
 *
 * '#' starts a comment to the end of the line. A table is an ordered list
 * of rules; the last rule that matches a call wins, so text appended later
 * (the file after the defaults, XCOLL_TUNE after the file) overrides
 * exactly the region it covers. */
#ifndef XC_TUNE_H
#define XC_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"

#define XC_TUNE_MAX_CANDIDATES 8
#define XC_TUNE_INF ((size_t)-1)   /* as a size bound: no upper limit */
#define XC_TUNE_RANKS_INF 0x7fffffff

typedef struct {
    xc_coll_t coll;
    int min_ranks, max_ranks;      /* inclusive */
    int min_per_node, max_per_node; /* ranks on the fullest node, inclusive */
    size_t lo, hi;                 /* message bytes in [lo, hi); hi XC_TUNE_INF: no limit */
    const xc_algo_t *candidates[XC_TUNE_MAX_CANDIDATES];
    int ncandidates;
    int source;                    /* index into xc_tune_t.sources */
    int line, column;              /* where the rule starts in its source (1-based) */
} xc_tune_rule_t;

typedef struct xc_tune {
    xc_tune_rule_t *rules;         /* lowest precedence first */
    size_t nrules, cap;
    char **sources;                /* "defaults", "XCOLL_TUNE", "XCOLL_TUNE_FILE=path" */
    int nsources;
} xc_tune_t;

/* The built-in table (measured on the development machine: docs/TUNING.md). */
extern const char xc_tune_defaults[];

/* Appends the rules in text to t. On a mistake nothing is appended, err
 * gets "<source>: at character N: <what is wrong>" (or "line L, column C"
 * when the text has several lines) and XCOLL_ERR_INVALID_ARG is returned;
 * nothing is logged, so the caller decides how to report it. */
xcoll_status_t xc_tune_parse(xc_tune_t *t, const char *text, const char *source, char *err,
                             size_t errlen);

/* The table a new communicator uses: the defaults, then rules (the
 * caller's, xcoll_config_t.rules, named rules_source; may be NULL), then
 * the file named by XCOLL_TUNE_FILE, then XCOLL_TUNE. A malformed or
 * unreadable override is logged (with its position) and gives
 * XCOLL_ERR_INVALID_ARG; the message also goes to err when err is not
 * NULL. */
xcoll_status_t xc_tune_load(xc_tune_t **out, const char *rules, const char *rules_source,
                            char *err, size_t errlen);
void xc_tune_free(xc_tune_t *t);

/* The built-in defaults alone, parsed once per process (for callers with
 * no communicator); NULL only if the defaults themselves fail to parse. */
const xc_tune_t *xc_tune_builtin(void);

/* A hash of the table's rules (regions and candidates, in order): ranks
 * whose tables differ would choose different schedules. */
uint64_t xc_tune_hash(const xc_tune_t *t);

/* The winning rule for a call on nranks ranks, per_node of them on the
 * fullest node (xc_tune_per_node), or NULL when no rule covers it. */
const xc_tune_rule_t *xc_tune_match(const xc_tune_t *t, xc_coll_t coll, int nranks,
                                    int per_node, size_t bytes);

/* Ranks on the fullest node of a call's communicator: topo's, or every
 * rank (one node) without a topology. */
int xc_tune_per_node(const xc_coll_args_t *a);

/* "allreduce@2-4:4k-512k", "allreduce@64-inf/9-inf:0-4k" (the rule's
 * region, in the grammar). */
void xc_tune_rule_region(const xc_tune_rule_t *r, char *buf, size_t len);

/* A size as written in the grammar: "0", "4k", "512k", "1m", "inf", "1000". */
void xc_tune_size_text(size_t bytes, char *buf, size_t len);

/* Writes t as text: nranks 0 gives every rule, one a line, in precedence
 * order with its source; nranks > 0 gives, per collective, the resolved
 * table a communicator of that size uses with per_node ranks on its
 * fullest node, as one line of the grammar. snprintf-like: returns the
 * length the whole text needs (without NUL). */
size_t xc_tune_write(const xc_tune_t *t, int nranks, int per_node, char *buf, size_t len);

/* The message size a rule is matched against: the count argument times
 * the element size (one rank's block for the block collectives), 0 for
 * barrier. The v-variants carry their average block in count (api.c):
 * allgatherv's from every rank's counts, which all ranks agree on;
 * alltoallv's from this rank's own blocks, which is safe because its
 * algorithms match each other on the wire (coll.h). */
size_t xc_tune_message_bytes(const xc_coll_args_t *a);

#endif
