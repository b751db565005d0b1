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

#endif
