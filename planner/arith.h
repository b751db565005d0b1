/* arith.h: whole-number arithmetic the modules share. */
#ifndef RACKPLAN_ARITH_H
#define RACKPLAN_ARITH_H

#include <math.h>
#include <stdint.h>

/* ln n! for n >= 0, by lgamma_r: lgamma itself writes the global signgam, which two searches on
 * two threads (serve_background_start) would race on. */
static inline double arith_log_factorial(double n)
{
    int sign;
    return lgamma_r(n + 1, &sign);
}

/* The greatest common divisor of a and b (>= 0; gcd(a, 0) = a). */
static inline int64_t arith_gcd(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

#endif
