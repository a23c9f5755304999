/* perf_plot.h - a self-contained SVG line chart for xcoll-perf: bandwidth
 * against message size, log2 x axis, linear y axis, one line per series. */
#ifndef XCOLL_PERF_PLOT_H
#define XCOLL_PERF_PLOT_H

#include <stddef.h>

typedef struct {
    const char *label;  /* legend text */
    int color;          /* index into a fixed palette; series of one collective share it */
    int dashed;         /* dashed line: the reference library */
    size_t npoints;
    const double *x;    /* message size in bytes, > 0, increasing */
    const double *y;    /* GB/s */
} perf_series_t;

/* Writes the chart to path; returns 0, or -1 with errno set if the file
 * could not be written. Series with no points are left out. */
int perf_plot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
                  const perf_series_t *series, size_t nseries);

#endif
