/* tap.h: a minimal TAP producer for unit tests: one "ok N - name" line per check, a plan at
 * the end, exit status 1 when any check failed. Header-only: each test file is one program. */
#ifndef RACKPLAN_TAP_H
#define RACKPLAN_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int tap_run, tap_failed;

__attribute__((format(printf, 4, 5))) static bool tap_check(bool ok, const char *file, int line,
                                                              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", ok ? "ok" : "not ok", ++tap_run);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!ok) {
        tap_failed++;
        printf("#   at %s:%d\n", file, line);
    }
    return ok;
}

#define CHECK(cond, ...) tap_check((cond), __FILE__, __LINE__, __VA_ARGS__)

/* |actual - expected| <= tolerance * |expected| */
#define CHECK_REL(actual, expected, tolerance, name)                                              \
    do {                                                                                          \
        double a_ = (actual), e_ = (expected);                                                    \
        if (!CHECK(fabs(a_ - e_) <= (tolerance) * fabs(e_), "%s", name))                          \
            printf("#   got %.17g, expected %.17g (tolerance %g)\n", a_, e_, (double)(tolerance)); \
    } while (0)

/* CHECK_REL with a formatted name: |actual - expected| <= tolerance |expected| */
__attribute__((format(printf, 4, 5))) static inline void check_near(double actual, double expected, double tolerance,
                                                                    const char *fmt, ...)
{
    char name[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    CHECK_REL(actual, expected, tolerance, name);
}

#define CHECK_EQ(actual, expected, name)                                                          \
    do {                                                                                          \
        double a_ = (double)(actual), e_ = (double)(expected);                                    \
        if (!CHECK(a_ == e_, "%s", name))                                                         \
            printf("#   got %.17g, expected %.17g\n", a_, e_);                                    \
    } while (0)

#define CHECK_STR(actual, expected, name)                                                         \
    do {                                                                                          \
        const char *a_ = (actual), *e_ = (expected);                                              \
        if (!CHECK(a_ && strcmp(a_, e_) == 0, "%s", name))                                        \
            printf("#   got '%s'\n#   expected '%s'\n", a_ ? a_ : "(null)", e_);                 \
    } while (0)

static int tap_done(void)
{
    printf("1..%d\n", tap_run);
    return tap_failed ? 1 : 0;
}

#endif
