/* tool_util.h - what xcoll's command-line tools (xcoll-perf, xcoll-info)
 * share: reading numbers, sizes and lists from the command line, and the
 * names of xcoll's types, operators, collectives and algorithms. No MPI,
 * so xcoll-info, which needs none, can use it too. */
#ifndef XCOLL_TOOL_UTIL_H
#define XCOLL_TOOL_UTIL_H

#include <stddef.h>
#include "xcoll.h"

/* A byte count with an optional K, M or G suffix (binary) and an optional
 * trailing B ("4KB"); -1 if s is not one. */
int tool_parse_size(const char *s, size_t *out);

/* A decimal integer in [lo, hi] and nothing else; -1 otherwise. */
int tool_parse_int(const char *s, int lo, int hi, int *out);

/* Calls fn on each item of a comma-separated list; -1 as soon as fn
 * fails, or if the list is too long to split (255 characters). */
int tool_each_item(const char *list, int (*fn)(const char *item, void *ctx), void *ctx);

/* The xcoll_dtype_t called s (xcoll's names, and the usual aliases: half,
 * bf16, float, double, int, uint, char), or -1. */
int tool_dtype_from_name(const char *s);

/* The xcoll_op_t called s, or -1. */
int tool_op_from_name(const char *s);

/* The library's number of the collective called s (xcoll_collective_name),
 * or -1. */
int tool_coll_from_name(const char *s);

/* 1 if the library's collective coll has an algorithm called algo. */
int tool_coll_has_algo(int coll, const char *algo);

#endif
