/* bench.h: timing helpers shared by the benchmark programs (the clock: diag.h). */
#ifndef RACKPLAN_BENCH_H
#define RACKPLAN_BENCH_H

#include "diag.h"

#include <stdlib.h>

static inline int bench_by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts `values` and returns the median. */
static inline double bench_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, bench_by_value);
    return values[count / 2];
}

#endif
