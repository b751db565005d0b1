/* arith.h: whole-number arithmetic the modules share. */
#ifndef RACKPLAN_ARITH_H
#define RACKPLAN_ARITH_H

#include <stdint.h>

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
