/* bench.h: timing helpers shared by the benchmark programs. */
#ifndef RACKPLAN_BENCH_H
#define RACKPLAN_BENCH_H

#include <stdlib.h>
#include <time.h>

static inline double bench_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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
