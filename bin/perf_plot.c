/* perf_plot.c - writes bandwidth-against-size charts as plain SVG, so a
 * benchmark run leaves a picture that any browser opens, with no plotting
 * tool installed. */
#include "perf_plot.h"

#include <math.h>
#include <stdio.h>

enum { WIDTH = 960, HEIGHT = 560, LEFT = 80, RIGHT = 250, TOP = 50, BOTTOM = 70 };

/* Distinguishable on white and for the common colour blindnesses. */
static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                      "#e69f00", "#56b4e9", "#000000", "#8c564b", "#7f7f7f"};
#define NCOLORS (sizeof(palette) / sizeof(palette[0]))

static void put_escaped(FILE *f, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f); break;
        }
    }
}

static void size_label(double bytes, char *out, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(out, len, "%g %s", bytes, units[u]);
}

/* The smallest of 1, 2, 5 times a power of ten that is >= v. */
static double nice_ceil(double v)
{
    double p = pow(10.0, floor(log10(v)));
    if (v <= p)
        return p;
    if (v <= 2 * p)
        return 2 * p;
    if (v <= 5 * p)
        return 5 * p;
    return 10 * p;
}

int perf_plot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
                  const perf_series_t *series, size_t nseries)
{
    double xmin = INFINITY, xmax = 0, ymax = 0;
    size_t s, i;
    for (s = 0; s < nseries; s++)
        for (i = 0; i < series[s].npoints; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!(x > 0) || !isfinite(y))
                continue;
            xmin = x < xmin ? x : xmin;
            xmax = x > xmax ? x : xmax;
            ymax = y > ymax ? y : ymax;
        }
    if (!(xmax > 0)) {
        xmin = 1;
        xmax = 2;
    }
    double lx0 = floor(log2(xmin)), lx1 = ceil(log2(xmax));
    if (lx1 <= lx0)
        lx1 = lx0 + 1;
    double ytop = nice_ceil(ymax > 0 ? ymax * 1.05 : 1.0);
    double pw = WIDTH - LEFT - RIGHT, ph = HEIGHT - TOP - BOTTOM;
#define PX(x) (LEFT + (log2(x) - lx0) / (lx1 - lx0) * pw)
#define PY(y) (TOP + ph - (y) / ytop * ph)

    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            WIDTH, HEIGHT, WIDTH, HEIGHT);
    fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">", WIDTH / 2);
    put_escaped(f, title);
    fputs("</text>\n", f);

    /* Grid and ticks: a label every power of two when few, else every
     * second or fourth power so labels never overlap. */
    int span = (int)(lx1 - lx0), step = span <= 12 ? 1 : span <= 24 ? 2 : 4;
    for (int e = (int)lx0; e <= (int)lx1; e++) {
        double x = PX(pow(2.0, e));
        int labelled = (e - (int)lx0) % step == 0;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", x, TOP,
                x, TOP + ph, labelled ? "#dddddd" : "#f0f0f0");
        if (labelled) {
            char lab[32];
            size_label(pow(2.0, e), lab, sizeof(lab));
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x,
                    TOP + ph + 18, lab);
        }
    }
    for (int k = 0; k <= 5; k++) {
        double y = ytop * k / 5;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
                LEFT, PY(y), LEFT + pw, PY(y));
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", LEFT - 8,
                PY(y) + 4, y);
    }
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
            "stroke=\"black\"/>\n",
            LEFT, TOP, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", LEFT + pw / 2, HEIGHT - 20);
    put_escaped(f, xlabel);
    fputs("</text>\n", f);
    fprintf(f,
            "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 20 %.1f)\">",
            TOP + ph / 2, TOP + ph / 2);
    put_escaped(f, ylabel);
    fputs("</text>\n", f);

    int legend_row = 0;
    for (s = 0; s < nseries; s++) {
        const perf_series_t *se = &series[s];
        const char *color = palette[(size_t)(se->color < 0 ? 0 : se->color) % NCOLORS];
        const char *dash = se->dashed ? " stroke-dasharray=\"6 4\"" : "";
        if (se->npoints == 0)
            continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", color,
                dash);
        for (i = 0; i < se->npoints; i++)
            if (se->x[i] > 0 && isfinite(se->y[i]))
                fprintf(f, "%.1f,%.1f ", PX(se->x[i]), PY(se->y[i]));
        fputs("\"/>\n", f);
        for (i = 0; i < se->npoints; i++)
            if (se->x[i] > 0 && isfinite(se->y[i]))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                        PX(se->x[i]), PY(se->y[i]), color);
        double ly = TOP + 10 + 20 * legend_row++;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"%s/>\n",
                LEFT + pw + 15, ly, LEFT + pw + 45, ly, color, dash);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", LEFT + pw + 52, ly + 4);
        put_escaped(f, se->label);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
#undef PX
#undef PY
    return fclose(f) == 0 ? 0 : -1;
}
