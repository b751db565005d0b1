/* plot.h: SVG charts, written deterministically (fixed size, fixed number formats). */
#ifndef RACKPLAN_PLOT_H
#define RACKPLAN_PLOT_H

#include "roofline.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Two log-log panels against batch: time per step with each roofline term as its own line, the
 * latency floor and the crossover marked; and cost per million tokens (or, with no price,
 * tokens/s per device). */
void plot_roofline(FILE *out, const struct layout *layout, const char *model, const char *topology,
                   const struct roof_point *points, int64_t count, double floor_s,
                   int64_t crossover, bool estimate, bool prefill);

/* One line of a panel: `count` points (x[i], y[i]); points with a coordinate <= 0 break it. */
struct plot_series {
    const char *name;
    const double *x, *y;
    int64_t count;
};

struct plot_panel {
    const char *title, *x_label, *y_label;
    const struct plot_series *series;
    int series_count;
};

/* Log-log panels side by side, each with its lines and their legend below it; lines of 12
 * points or fewer mark each point. */
void plot_panels(FILE *out, const char *title, const char *subtitle,
                 const struct plot_panel *panels, int count);

/* One device's memory: weights, KV cache, activations, reserve, free (GB; free < 0 is drawn
 * as nothing, the bar then passing the HBM line). */
struct plot_memory_bar {
    const char *label;
    double gb[5];
    double hbm_gb;
};

void plot_memory_bars(FILE *out, const char *title, const struct plot_memory_bar *bars, int count);

/* rows x columns cells, each a multiple of its row's mean (1 = the mean: white; below: blue;
 * above: red, darkest at the largest value or 1.25, whichever is more). Rows and columns numbered from 0. */
void plot_heat_map(FILE *out, const char *title, const char *subtitle, const double *values,
                   int64_t rows, int64_t columns, const char *row_label, const char *column_label);

#endif
