/* The queueing math (queueing.h) against closed forms: Pollaczek-Khinchine for M/D/1 and M/M/1,
 * the M/M/1 wait's exact tail, Erlang C by hand, from its textbook sum and in heavy traffic
 * (Halfin-Whitt), M/G/c at one server against M/G/1, the exact M/D/1 CDF (its first pieces by
 * hand, its mean against P-K by integration, its tail's decay against the Lundberg equation),
 * the normal quantile at published points, bisection against the exponential quantile, the
 * M/G/infinity window variance by hand and by integration, the spread of clusters by hand and
 * against Galton-Watson trees and an M^X/G/infinity count drawn here, and the refusals.
 *
 * Every expected number is a closed form or hand arithmetic written beside its check; none is
 * pasted from a run. */
#include "queueing.h"
#include "tap.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* ---- 1. M/G/1: Pollaczek-Khinchine ---- */

static void mg1(void)
{
    struct queue_wait q;
    /* M/D/1, mu = 10/s (D = 0.1 s), lambda = 8/s: rho = 0.8,
     * E[W] = rho / (2 mu (1 - rho)) = 0.8 / (2 x 10 x 0.2) = 0.2 s */
    CHECK(queue_mg1(8, 0.1, 0.1 * 0.1, &q), "M/D/1 at rho 0.8: stable");
    CHECK_REL(q.use, 0.8, 1e-15, "M/D/1: rho = lambda D = 0.8");
    CHECK_REL(q.wait_probability, 0.8, 1e-15, "M/D/1: P(W > 0) = rho = 0.8");
    CHECK_REL(q.mean_wait_s, 0.2, 1e-14, "M/D/1: E[W] = rho / (2 mu (1 - rho)) = 0.2 s");
    /* M/M/1, the same rates: E[S^2] = 2 / mu^2 = 0.02, E[W] = rho / (mu - lambda) = 0.8 / 2 = 0.4 s */
    CHECK(queue_mg1(8, 0.1, 0.02, &q), "M/M/1 at rho 0.8: stable");
    CHECK_REL(q.mean_wait_s, 0.4, 1e-14, "M/M/1: E[W] = rho / (mu - lambda) = 0.4 s");
    /* no arrivals: nobody waits */
    CHECK(queue_mg1(0, 0.1, 0.01, &q) && q.mean_wait_s == 0 && q.wait_probability == 0,
          "lambda = 0: E[W] = 0 and P(W > 0) = 0");
}

/* ---- 2. the M/M/1 wait's distribution, exact through queue_wait_cdf ---- */

static void mm1_distribution(void)
{
    struct queue_wait q;
    /* lambda 8, mu 10: P(W > t) = rho e^{-(mu - lambda) t} = 0.8 e^{-2 t} */
    if (!CHECK(queue_mg1(8, 0.1, 0.02, &q), "M/M/1 lambda 8, mu 10"))
        return;
    CHECK_REL(queue_wait_cdf(&q, 0), 0.2, 1e-14, "P(W <= 0) = 1 - rho = 0.2");
    CHECK_REL(1 - queue_wait_cdf(&q, 0.5), 0.8 * exp(-1.0), 1e-14, "P(W > 0.5 s) = 0.8 e^{-1}");
    CHECK_REL(1 - queue_wait_cdf(&q, 2), 0.8 * exp(-4.0), 1e-12, "P(W > 2 s) = 0.8 e^{-4}");
    CHECK_EQ(queue_wait_cdf(&q, -1), 0, "P(W <= -1 s) = 0");
    /* p-quantile: 0.8 e^{-2 t} = 1 - p, t = ln(0.8 / (1 - p)) / 2; p = 0.99: ln(80) / 2 */
    CHECK_REL(queue_wait_quantile(&q, 0.99), log(80.0) / 2, 1e-14, "p99 wait = ln(80) / 2 s");
    CHECK_EQ(queue_wait_quantile(&q, 0.2), 0, "p20 wait = 0: within the atom 1 - rho = 0.2");
    CHECK_EQ(queue_wait_quantile(&q, 0.1), 0, "p10 wait = 0");
    CHECK(isinf(queue_wait_quantile(&q, 1)), "p100 wait = infinity");
    CHECK(isnan(queue_wait_quantile(&q, 1.5)), "p = 1.5: NaN");
}

/* ---- 3. Erlang C ---- */

/* The textbook sum (Erlang 1917): C = (a^c / c! x c / (c - a)) / (sum_{k<c} a^k / k! + that),
 * summed directly in long double: an implementation independent of the recursion. */
static long double erlang_c_sum(int c, long double a)
{
    long double term = 1, below = 0;
    for (int k = 0; k < c; k++) {
        below += term;
        term *= a / (k + 1);
    }
    long double top = term * c / (c - a);
    return top / (below + top);
}

/* Erlang B's recursion from B(0) = 1 all the way, in long double: C = B / (1 - rho (1 - B)). */
static long double erlang_c_full(int64_t c, long double a)
{
    long double b = 1;
    for (int64_t k = 1; k <= c; k++)
        b = a * b / (k + a * b);
    long double rho = a / c;
    return b / (1 - rho * (1 - b));
}

/* Halfin and Whitt (1981): with c = a + beta sqrt(a), C -> 1 / (1 + beta Phi(beta) / phi(beta)). */
static double halfin_whitt(double c, double a)
{
    double beta = (c - a) / sqrt(a);
    double phi = exp(-beta * beta / 2) / sqrt(2 * M_PI);
    return 1 / (1 + beta * queue_normal_cdf(beta) / phi);
}

static void erlang_c(void)
{
    /* c = 2: C = a^2 / (2 + a) (the sum: (a^2 / 2 x 2 / (2 - a)) / (1 + a + a^2 / (2 - a))); a = 1: 1/3 */
    CHECK_REL(queue_erlang_c(2, 1), 1.0 / 3, 1e-15, "C(2, 1) = 1/3");
    CHECK_REL(queue_erlang_c(2, 1.5), 2.25 / 3.5, 1e-15, "C(2, 1.5) = 1.5^2 / 3.5");
    CHECK_EQ(queue_erlang_c(1, 0.7), 0.7, "C(1, a) = a exactly");
    /* c = 3, a = 2 (Wolfram Language's ErlangC[3, 2] example): below = 1 + 2 + 2 = 5,
     * top = 2^3 / 3! x 3 / (3 - 2) = 4, C = 4 / 9 */
    CHECK_REL(queue_erlang_c(3, 2), 4.0 / 9, 1e-15, "C(3, 2) = 4/9");
    /* the call-centre example in Erlang C tutorials: 360 calls a half hour of 240 s, 55 agents:
     * a = 360 x 240 / 1800 = 48 erlangs; about 24% of calls wait */
    double c55 = queue_erlang_c(55, 48);
    CHECK_REL(c55, (double)erlang_c_sum(55, 48), 1e-13, "C(55, 48) equals the textbook sum");
    CHECK(fabs(c55 - 0.24) < 0.005, "C(55, 48) = %.4f: the tutorials' 24%%", c55);
    CHECK_REL(queue_erlang_c(10, 8), (double)erlang_c_sum(10, 8), 1e-14, "C(10, 8) equals the textbook sum");
    /* heavy traffic: c = 10,000, a = 9,900 (beta = 100 / 99.5 = 1.005): the recursion that starts
     * at a - 40 sqrt(a) against the full one from B(0), and Halfin-Whitt, whose error is
     * O(1 / sqrt(a)) = 1% */
    double big = queue_erlang_c(10000, 9900);
    CHECK(isfinite(big) && big > 0 && big < 1, "C(10000, 9900) = %.6f is in (0, 1)", big);
    CHECK_REL(big, (double)erlang_c_full(10000, 9900), 1e-12, "C(10000, 9900) equals the recursion from B(0)");
    CHECK_REL(big, halfin_whitt(10000, 9900), 1 / sqrt(9900.0), "C(10000, 9900) within 1/sqrt(a) of Halfin-Whitt");
    /* c = 1e6, a = 999,000 (beta = 1000 / 999.5): Halfin-Whitt within 1/sqrt(a) = 0.1% */
    double huge = queue_erlang_c(1000000, 999000);
    CHECK(isfinite(huge) && huge > 0 && huge < 1, "C(1e6, 999000) = %.6f is in (0, 1)", huge);
    CHECK_REL(huge, halfin_whitt(1e6, 999000), 1 / sqrt(999000.0), "C(1e6, 999000) within 1/sqrt(a) of Halfin-Whitt");
    CHECK_REL(huge, (double)erlang_c_full(1000000, 999000), 1e-11, "C(1e6, 999000) equals the recursion from B(0)");
    /* edges */
    CHECK_EQ(queue_erlang_c(4, 0), 0, "no load: nobody waits");
    CHECK_EQ(queue_erlang_c(4, 4), 1, "a = c: every arrival waits");
    CHECK_EQ(queue_erlang_c(1000, 1), 0, "C(1000, 1): B(1000) below 1e-300, 0");
    CHECK(isnan(queue_erlang_c(0, 1)) && isnan(queue_erlang_c(2, -1)) && isnan(queue_erlang_c(2, NAN)),
          "no server, a negative or NaN load: NaN");
}

/* ---- 4. M/G/c ---- */

static void mgc(void)
{
    struct queue_wait one, pk;
    /* c = 1 is P-K: C(1, a) = a, and a E[S] / (1 - a) x (1 + scv) / 2 = lambda E[S]^2 (1 + scv) / (2 (1 - rho)) */
    const double scvs[] = {0, 1, 2.5};
    for (int i = 0; i < 3; i++) {
        double scv = scvs[i];
        CHECK(queue_mgc(8, 0.1, scv, 1, &one) && queue_mg1(8, 0.1, 0.01 * (1 + scv), &pk),
              "M/G/1 both ways, scv %g", scv);
        CHECK_EQ(one.wait_probability, pk.wait_probability, "c = 1: P(W > 0) = rho, both ways");
        CHECK_REL(one.mean_wait_s, pk.mean_wait_s, 1e-14, "c = 1: Allen-Cunneen's E[W] is P-K's");
    }
    /* M/M/2, lambda 1, E[S] 1: a = 1, C = 1/3, E[W] = C / (c mu - lambda) = 1/3 s, rho = 1/2 */
    CHECK(queue_mgc(1, 1, 1, 2, &one), "M/M/2 at a = 1");
    CHECK_REL(one.use, 0.5, 1e-15, "M/M/2: rho = a / c = 0.5");
    CHECK_REL(one.wait_probability, 1.0 / 3, 1e-15, "M/M/2: P(W > 0) = C(2, 1) = 1/3");
    CHECK_REL(one.mean_wait_s, 1.0 / 3, 1e-15, "M/M/2: E[W] = C / (2 - 1) = 1/3 s");
    /* its tail is exact: P(W > t) = C e^{-(c mu - lambda) t} = e^{-t} / 3 */
    CHECK_REL(1 - queue_wait_cdf(&one, 1.5), exp(-1.5) / 3, 1e-14, "M/M/2: P(W > 1.5 s) = e^{-1.5} / 3");
    /* M/D/2 by Allen-Cunneen: half the M/M/2 wait */
    CHECK(queue_mgc(1, 1, 0, 2, &one), "M/D/2 at a = 1");
    CHECK_REL(one.mean_wait_s, 1.0 / 6, 1e-15, "M/D/2: E[W] = 1/3 x (1 + 0) / 2 = 1/6 s");
}

/* ---- 5. the refusals ---- */

static void refusals(void)
{
    struct queue_wait q = {.use = -1, .wait_probability = -1, .mean_wait_s = -1};
    CHECK(!queue_mg1(10, 0.1, 0.01, &q), "M/D/1 at rho = 1: refused");
    CHECK(!queue_mg1(12, 0.1, 0.01, &q), "M/D/1 at rho = 1.2: refused");
    CHECK(!queue_mg1(8, 0.1, 0.009, &q), "E[S^2] < E[S]^2: refused");
    CHECK(!queue_mg1(-1, 0.1, 0.01, &q) && !queue_mg1(NAN, 0.1, 0.01, &q) && !queue_mg1(1, 0, 0, &q),
          "a negative or NaN rate, a zero service: refused");
    CHECK(!queue_mgc(20, 0.1, 1, 2, &q), "M/M/2 at rho = 1: refused");
    CHECK(!queue_mgc(1, 0.1, 1, 0, &q) && !queue_mgc(1, 0.1, -0.5, 2, &q), "no server, a negative scv: refused");
    CHECK(q.use == -1 && q.wait_probability == -1 && q.mean_wait_s == -1, "a refusal leaves *out untouched");
    CHECK(isnan(queue_md1_wait_cdf(10, 0.1, 1)) && isnan(queue_md1_wait_cdf(8, 0, 1)),
          "the M/D/1 CDF at rho = 1 or D = 0: NaN");
}

/* ---- 6. the exact M/D/1 waiting-time CDF ---- */

struct md1 {
    double lambda, service_s;
};

static double md1_cdf(void *context, double t)
{
    const struct md1 *m = context;
    return queue_md1_wait_cdf(m->lambda, m->service_s, t);
}

/* integral_0^{n D} (1 - CDF) by Simpson's rule on each [k D, (k + 1) D] (the CDF is smooth
 * inside each and only its derivative jumps at k D) */
static double md1_mean_by_integration(const struct md1 *m, int services)
{
    const int steps = 200; /* even */
    double total = 0, h = m->service_s / steps;
    for (int k = 0; k < services; k++) {
        double a = k * m->service_s, piece = 0;
        for (int i = 0; i <= steps; i++) {
            double f = 1 - queue_md1_wait_cdf(m->lambda, m->service_s, a + i * h);
            piece += f * (i == 0 || i == steps ? 1 : i % 2 ? 4 : 2);
        }
        total += piece * h / 3;
    }
    return total;
}

static void md1(void)
{
    /* lambda 8, D 0.1 s: rho 0.8 */
    struct md1 m = {8, 0.1};
    CHECK_REL(queue_md1_wait_cdf(8, 0.1, 0), 0.2, 1e-15, "M/D/1 CDF at 0 = 1 - rho = 0.2");
    /* t < D: only k = 0, (1 - rho) e^{lambda t}: at t = 0.05, 0.2 e^{0.4} */
    CHECK_REL(queue_md1_wait_cdf(8, 0.1, 0.05), 0.2 * exp(0.4), 1e-15, "CDF(0.05 s) = 0.2 e^{0.4}");
    /* D <= t < 2 D: k = 0 and 1, (1 - rho) (e^{lambda t} - lambda (t - D) e^{lambda (t - D)}):
     * at t = 0.15, 0.2 (e^{1.2} - 0.4 e^{0.4}) */
    CHECK_REL(queue_md1_wait_cdf(8, 0.1, 0.15), 0.2 * (exp(1.2) - 0.4 * exp(0.4)), 1e-15,
              "CDF(0.15 s) = 0.2 (e^{1.2} - 0.4 e^{0.4})");
    CHECK_EQ(queue_md1_wait_cdf(8, 0.1, -0.01), 0, "CDF(-0.01 s) = 0");
    bool monotone = true;
    double previous = 0;
    for (int i = 0; i <= 4000; i++) { /* 0 to 4 s = 40 D, across the switch at 13 D */
        double cdf = queue_md1_wait_cdf(8, 0.1, i * 0.001);
        if (cdf < previous || cdf > 1)
            monotone = false;
        previous = cdf;
    }
    CHECK(monotone, "the M/D/1 CDF never falls and stays within 1 from 0 to 40 D");
    double switch_s = QUEUE_MD1_EXACT_SERVICES * 0.1;
    CHECK(fabs(queue_md1_wait_cdf(8, 0.1, nextafter(switch_s, 0)) - queue_md1_wait_cdf(8, 0.1, switch_s)) < 1e-13,
          "the sum and the asymptote meet at %d D within 1e-13", QUEUE_MD1_EXACT_SERVICES);
    /* E[W] = integral (1 - CDF) = rho D / (2 (1 - rho)) = 0.2 s; the tail beyond 100 D is
     * about e^{-0.44 x 100} and does not count */
    CHECK_REL(md1_mean_by_integration(&m, 100), 0.2, 1e-6, "integral of 1 - CDF = P-K mean 0.2 s");
    /* rho = 0.95: E[W] = 0.95 x 0.1 / 0.1 = 0.95 s; the tail decays as e^{-x t / D} with x about
     * 2 (1 - rho) = 0.1, so 600 D leave e^{-60} */
    struct md1 busy = {9.5, 0.1};
    CHECK_REL(md1_mean_by_integration(&busy, 600), 0.95, 1e-6, "rho 0.95: integral of 1 - CDF = 0.95 s");
    /* beyond the switch the tail is C e^{-x t / D}: one D on, it falls by q = e^{-x}, with x the
     * root of rho (e^x - 1) = x (Lundberg), so rho (1 / q - 1) = -ln q */
    double t = 2.0, tail = 1 - queue_md1_wait_cdf(8, 0.1, t), next = 1 - queue_md1_wait_cdf(8, 0.1, t + 0.1);
    double q = next / tail;
    CHECK_REL(0.8 * (1 / q - 1), -log(q), 1e-9, "beyond 13 D the tail falls by e^{-x} a D, 0.8 (e^x - 1) = x");
    /* and x > 2 (1 - rho) = 0.4, the exponential approximation's decay a D (E[W] / P(W > 0) = 2.5 D):
     * g(u) = (1 - u)(e^{2u} - 1) - 2u has g(0) = g'(0) = 0 and g'' = -4u e^{2u} < 0, so
     * rho (e^{2(1 - rho)} - 1) < 2 (1 - rho) and the root lies beyond */
    CHECK(-log(q) > 0.4, "the exact tail decays faster (x = %.6f a D) than the exponential's 0.4", -log(q));
    /* the same against M/M/1's exponential wait of the same atom and mean: the deterministic
     * service's tail is thinner, so the exponential approximation's p99 is above the exact one */
    struct queue_wait approx;
    queue_mg1(8, 0.1, 0.01, &approx);
    double p99 = queue_quantile(md1_cdf, &m, 0.99, 0, 0.1);
    CHECK(queue_md1_wait_cdf(8, 0.1, p99) >= 0.99 &&
              queue_md1_wait_cdf(8, 0.1, p99 * (1 - 1e-11)) < 0.99,
          "M/D/1 p99 by bisection: %.6f s, the CDF crosses 0.99 there", p99);
    CHECK(queue_wait_quantile(&approx, 0.99) > p99, "the exponential tail's p99 (%.6f s) is above the exact",
          queue_wait_quantile(&approx, 0.99));
    CHECK_EQ(queue_quantile(md1_cdf, &m, 0.15, 0, 0.1), 0, "M/D/1 p15 = 0: within the atom 0.2");
}

/* ---- 7. the normal distribution ---- */

static void normal(void)
{
    CHECK_EQ(queue_normal_quantile(0.5), 0, "z(0.5) = 0");
    /* AS 241's own published points (Wichura 1988), to 17 digits */
    CHECK_REL(queue_normal_quantile(0.9), 1.2815515655446004, 1e-15, "z(0.9) = 1.2815515655446004");
    CHECK_REL(queue_normal_quantile(0.99), 2.3263478740408408, 1e-15, "z(0.99) = 2.3263478740408408");
    CHECK_REL(queue_normal_quantile(0.999), 3.0902323061678132, 1e-15, "z(0.999) = 3.0902323061678132");
    CHECK_REL(queue_normal_quantile(0.1), -1.2815515655446004, 1e-15, "z(0.1) = -z(0.9)");
    CHECK(isinf(queue_normal_quantile(1)) && isinf(queue_normal_quantile(0)) && isnan(queue_normal_quantile(2)),
          "z(1) = inf, z(0) = -inf, z(2) NaN");
    CHECK_EQ(queue_normal_cdf(0), 0.5, "Phi(0) = 1/2");
    CHECK_REL(queue_normal_cdf(1.2815515655446004), 0.9, 1e-15, "Phi(z(0.9)) = 0.9");
    CHECK_REL(queue_normal_cdf(-3.0902323061678132), 0.001, 1e-13, "Phi(-z(0.999)) = 0.001");
    CHECK_REL(queue_normal_cdf(-1.7) + queue_normal_cdf(1.7), 1, 1e-15, "Phi(-x) + Phi(x) = 1");
    /* the far tail through the last rational (r > 5: p < e^{-25}): round trip */
    CHECK_REL(queue_normal_cdf(queue_normal_quantile(1e-20)), 1e-20, 1e-13, "Phi(z(1e-20)) = 1e-20");
    CHECK_REL(queue_normal_cdf(queue_normal_quantile(1e-5)), 1e-5, 1e-14, "Phi(z(1e-5)) = 1e-5");
}

/* ---- 8. bisection against a closed-form quantile ---- */

static double exponential_cdf(void *context, double x)
{
    double rate = *(const double *)context;
    return x <= 0 ? 0 : -expm1(-rate * x);
}

/* a defective CDF, 1/2 everywhere from 0 on */
static double half_cdf(void *context, double x)
{
    (void)context;
    return x < 0 ? 0 : 0.5;
}

static double atom_exponential_cdf(void *context, double x)
{
    return queue_wait_cdf(context, x);
}

static void bisection(void)
{
    double rate = 3;
    /* exponential(3): the p-quantile is -ln(1 - p) / 3; the bracket [0, 0.001] must widen */
    /* at p = 0.999999 the CDF's own rounding (1.1e-16) moves x by 1.1e-16 / density 3e-6 = 4e-11,
     * about 1e-11 of x: the tolerance there is 1e-10 */
    const double ps[] = {0.5, 0.9, 0.99, 0.999999}, tolerances[] = {1e-12, 1e-12, 1e-12, 1e-10};
    for (int i = 0; i < 4; i++) {
        double got = queue_quantile(exponential_cdf, &rate, ps[i], 0, 0.001), want = -log1p(-ps[i]) / 3;
        CHECK(fabs(got - want) <= tolerances[i] * want,
              "exponential(3) quantile %g = -ln(1 - p) / 3 = %.15g (got %.15g)", ps[i], want, got);
    }
    CHECK_EQ(queue_quantile(exponential_cdf, &rate, 0, 0, 1), 0, "p = 0: lo");
    CHECK(isinf(queue_quantile(half_cdf, NULL, 0.75, 0, 1)), "a CDF that never reaches p: infinity");
    CHECK(isnan(queue_quantile(exponential_cdf, &rate, 0.5, 1, 1)), "an empty bracket: NaN");
    /* the atom-plus-exponential wait of M/M/1 (lambda 8, mu 10) by bisection and in closed form */
    struct queue_wait q;
    queue_mg1(8, 0.1, 0.02, &q);
    CHECK_REL(queue_quantile(atom_exponential_cdf, &q, 0.95, 0, 1), log(0.8 / 0.05) / 2, 1e-12,
              "M/M/1 p95 by bisection = ln(0.8 / 0.05) / 2");
}

/* ---- 8b. a wait of phases ----
 * Two exponential phases, 2% of arrivals waiting 1 s on average and 1% 10 s: P(W > t) = 0.02 e^-t
 * + 0.01 e^(-t / 10). At t = 1 the CDF is 1 - 0.02 / e - 0.01 e^-0.1; the 99.9th percentile is
 * where 0.01 e^(-t / 10) alone is 0.001 (the fast phase is 2e-12 there), 10 ln 10, to 1e-8. */
static void phases(void)
{
    struct queue_wait q = {.wait_probability = 0.03, .mean_wait_s = 0.02 * 1 + 0.01 * 10, .phases = 2,
                           .phase_probability = {0.02, 0.01}, .phase_mean_s = {1, 10}};
    CHECK_REL(queue_wait_cdf(&q, 0), 0.97, 1e-15, "P(W <= 0) = 1 - 0.03");
    CHECK_REL(queue_wait_cdf(&q, 1), 1 - 0.02 / M_E - 0.01 * exp(-0.1), 1e-15,
              "P(W <= 1) = 1 - 0.02 / e - 0.01 e^-0.1");
    CHECK_REL(queue_wait_quantile(&q, 0.999), 10 * log(10), 1e-8, "p99.9 = 10 ln 10");
    CHECK_EQ(queue_wait_quantile(&q, 0.96), 0, "p96: below the 3% who wait, 0");
    double p99 = queue_wait_quantile(&q, 0.99);
    CHECK(fabs(0.02 * exp(-p99) + 0.01 * exp(-p99 / 10) - 0.01) <= 1e-14, "p99 %.12f s: P(W > it) = 0.01", p99);
    CHECK_EQ(queue_wait_tail_mean_s(&q), 10, "its slowest phase: 10 s");
    q.phases = 0; /* the same P and mean as one exponential: mean 4 s */
    CHECK_REL(queue_wait_tail_mean_s(&q), 4, 1e-15, "one exponential: E[W] / P = 0.12 / 0.03 = 4 s");
}

/* ---- 9. M/G/infinity: the window-averaged occupancy's variance ---- */

/* (2 / w^2) integral_0^w (w - tau) lambda E[(S - tau)+] d tau by Simpson's rule, pieces split at
 * the service times so each is a polynomial */
static double occupancy_by_integration(double lambda, const double *s, const double *p, int n, double w)
{
    double cuts[8] = {0}, total = 0;
    int m = 0;
    cuts[m++] = 0;
    for (int i = 0; i < n; i++)
        if (s[i] > 0 && s[i] < w)
            cuts[m++] = s[i];
    cuts[m++] = w;
    for (int j = 0; j + 1 < m; j++) { /* the cuts are in order for the cases below */
        double a = cuts[j], h = (cuts[j + 1] - a) / 2;
        double f[3];
        for (int k = 0; k < 3; k++) {
            double tau = a + k * h, r = 0;
            for (int i = 0; i < n; i++)
                r += p[i] * fmax(s[i] - tau, 0);
            f[k] = (w - tau) * lambda * r;
        }
        total += h / 3 * (f[0] + 4 * f[1] + f[2]); /* exact on cubics, these are quadratics */
    }
    return 2 / (w * w) * total;
}

static void occupancy(void)
{
    /* deterministic S = w: (2 lambda / w^2) (w^3 / 2 - w^3 / 6) = 2 lambda w / 3; lambda 5/s, w 0.2 s: 2/3 */
    double s = 0.2, one = 1;
    CHECK_REL(queue_occupancy_window_variance(5, &s, &one, 1, 0.2), 2.0 / 3, 1e-15, "S = w: 2 lambda w / 3 = 2/3");
    /* two classes, lambda 2/s, w 1 s, S = 0.5 s or 2 s equally likely (weights 3 and 3):
     * s = 0.5 < w: w s^2 / 2 - s^3 / 6 = 0.125 - 0.125 / 6 = 5/48;
     * s = 2 >= w: w^2 s / 2 - w^3 / 6 = 1 - 1/6 = 5/6;
     * variance = (2 x 2 / 1) (5/96 + 40/96) = 180/96 = 1.875 */
    double two_s[2] = {0.5, 2}, two_w[2] = {3, 3}, half[2] = {0.5, 0.5};
    CHECK_REL(queue_occupancy_window_variance(2, two_s, two_w, 2, 1), 1.875, 1e-15, "two classes by hand: 1.875");
    CHECK_REL(queue_occupancy_window_variance(2, two_s, two_w, 2, 1), occupancy_by_integration(2, two_s, half, 2, 1),
              1e-14, "two classes: the closed form equals the integral of R(tau)");
    double three_s[3] = {0.1, 0.7, 3}, three_p[3] = {0.5, 0.3, 0.2};
    CHECK_REL(queue_occupancy_window_variance(4, three_s, three_p, 3, 1.5),
              occupancy_by_integration(4, three_s, three_p, 3, 1.5), 1e-14,
              "three classes, w 1.5 s: the closed form equals the integral of R(tau)");
    /* w -> 0: Var N = E N = lambda E[S] (Poisson); lambda 2, E[S] = 1.25: 2.5 */
    CHECK_REL(queue_occupancy_window_variance(2, two_s, two_w, 2, 1e-9), 2.5, 1e-8, "w -> 0: lambda E[S] = 2.5");
    /* w -> infinity: lambda E[S^2] / w; E[S^2] = (0.25 + 4) / 2 = 2.125, w = 1e6: 4.25e-6 */
    CHECK_REL(queue_occupancy_window_variance(2, two_s, two_w, 2, 1e6), 4.25e-6, 1e-5,
              "w -> infinity: lambda E[S^2] / w");
    double negative = -1;
    CHECK(isnan(queue_occupancy_window_variance(2, &negative, &one, 1, 1)) &&
              isnan(queue_occupancy_window_variance(2, &s, &one, 0, 1)) &&
              isnan(queue_occupancy_window_variance(2, &s, &one, 1, 0)),
          "a negative service, no classes, an empty window: NaN");
}

/* ---- 10. a compound Poisson sum ---- */

static void compound(void)
{
    struct queue_moments m;
    /* lambda 3/s over 2 s, each bringing 5: mean 3 x 2 x 5 = 30, variance 3 x 2 x 25 = 150 */
    CHECK(queue_compound_poisson(3, 2, 5, 25, &m), "compound Poisson, X = 5");
    CHECK_REL(m.mean, 30, 1e-15, "mean = lambda w E[X] = 30");
    CHECK_REL(m.variance, 150, 1e-15, "variance = lambda w E[X^2] = 150");
    CHECK(!queue_compound_poisson(3, 2, 5, 24, &m), "E[X^2] < E[X]^2: refused");
}

/* ---- 11. arrivals in clusters ---- */

/* A deterministic generator for the cluster checks (splitmix64), its uniforms in (0, 1). */
static uint64_t cluster_state = 0x9e3779b97f4a7c15u;

static double uniform01(void)
{
    uint64_t z = (cluster_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static int64_t poisson_draw(double mean)
{
    int64_t k = 0;
    for (double product = uniform01(), floor_ = exp(-mean); product > floor_; product *= uniform01())
        k++;
    return k;
}

/* A cluster's size: the request and, for each member, the Poisson(lambda d) that arrive during its
 * hold d (fixed, or exponential when `exponential`), of mean held share m. */
static int64_t cluster_size(double held, bool exponential)
{
    int64_t size = 0, pending = 1;
    while (pending > 0) {
        pending--;
        size++;
        double hold = exponential ? -held * log(uniform01()) : held;
        pending += poisson_draw(hold);
    }
    return size;
}

static void clusters(void)
{
    /* m = 0.5, fixed holds (scv 0), fixed lives (phi 1): 1 + 0.5 x 1.5 / 0.25 = 4 = 1 / (1 - m)^2 */
    CHECK_REL(queue_cluster_spread(0.5, 0, 1), 4, 1e-15, "m 0.5, fixed holds and lives: 1 / (1 - m)^2 = 4");
    /* lives that overlap half (exponential): 1 + 3 x 0.5 = 2.5 */
    CHECK_REL(queue_cluster_spread(0.5, 0, 0.5), 2.5, 1e-15, "phi 0.5: 1 + 3 x 0.5 = 2.5");
    /* exponential holds (scv 1): 1 + 0.5 (2 - 0.5 + 0.5) / 0.25 = 5 */
    CHECK_REL(queue_cluster_spread(0.5, 1, 1), 5, 1e-15, "exponential holds: 1 + 0.5 x 2 / 0.25 = 5");
    CHECK(queue_cluster_spread(0, 3, 1) == 1, "no holds: a Poisson arrival's spread, 1");
    CHECK(isinf(queue_cluster_spread(1, 0, 1)), "held all the time: clusters never end, infinity");
    CHECK(isnan(queue_cluster_spread(-0.1, 0, 1)) && isnan(queue_cluster_spread(0.5, -1, 1)) &&
              isnan(queue_cluster_spread(0.5, 0, 1.5)) && isnan(queue_cluster_spread(NAN, 0, 1)),
          "a negative share or scv, an overlap above 1, NaN: NaN");

    /* the trees themselves: E[C^2] / E[C] over 400,000 clusters against (m + m^2 scv) / (1 - m)^2 +
     * 1 / (1 - m): fixed holds at m 0.5, 4; exponential, 5 (sampling error about 1%) */
    for (int exponential = 0; exponential <= 1; exponential++) {
        double c1 = 0, c2 = 0;
        for (int i = 0; i < 400000; i++) {
            double c = (double)cluster_size(0.5, exponential);
            c1 += c;
            c2 += c * c;
        }
        check_near(c2 / c1, exponential ? 5 : 4, 0.03, "%s holds at m 0.5: E[C^2] / E[C] %.3f",
                   exponential ? "exponential" : "fixed", c2 / c1);
        check_near(c1 / 400000, 2, 0.02, "E[C] %.3f = 1 / (1 - m) = 2", c1 / 400000);
    }

    /* the number present in M^X/G/infinity: clusters at 1 a second for 50,000 s, each member a life
     * of 0.5 or 2 s equally (E[S] 1.25, E[min(S1, S2)] = (0.5 + 0.5 + 0.5 + 2) / 4 = 0.875, phi
     * 0.7), counted every 0.05 s: variance / mean = 1 + 3 x 0.7 = 3.1 at m 0.5 (fixed holds), the
     * mean 1 x E[C] x E[S] = 2.5 */
    enum { TICKS = 1000000 };
    const double tick = 0.05;
    int32_t *change = calloc(TICKS + 64, sizeof *change);
    if (!CHECK(change != NULL, "room for the count"))
        return;
    for (double t = -log(uniform01()); t < TICKS * tick; t += -log(uniform01())) {
        int64_t size = cluster_size(0.5, false), start = (int64_t)(t / tick);
        for (int64_t k = 0; k < size; k++) {
            change[start]++;
            change[start + (uniform01() < 0.5 ? 10 : 40)]--;
        }
    }
    double present = 0, n1 = 0, n2 = 0;
    for (int64_t i = 0; i < TICKS; i++) {
        present += change[i];
        n1 += present;
        n2 += present * present;
    }
    free(change);
    double mean = n1 / TICKS, ratio = (n2 / TICKS - mean * mean) / mean;
    check_near(mean, 2.5, 0.03, "the mean present %.3f = E[C] E[S] = 2.5", mean);
    check_near(ratio, queue_cluster_spread(0.5, 0, 0.7), 0.05, "variance / mean %.3f against 1 + 3 x 0.7 = %.1f", ratio,
               queue_cluster_spread(0.5, 0, 0.7));
}

/* The clusters' law (queueing.h, "The law of the number present under clusters"), by hand: at
 * X(n) = n (mu 1), lambda 30, G 4 it is the negative binomial with k = 30 / (1 x 3) = 10, p =
 * 0.75, pi(m) / pi(m - 1) = (m + 9) 0.75 / m: 7.5 at m = 1, 4.125 at 2; mean 30, variance 4 x 30
 * = 120. */
static void cluster_law(void)
{
    const double lambda = 30, g = 4;
    double worst = 0, log_pi = 0, top = 0, n1 = 0, n2 = 0, all = 0;
    static double pi[1200];
    for (int m = 0; m < 1200; m++) {
        if (m > 0) {
            double increment = queue_cluster_increment(log(lambda / m), m == 1 ? NAN : log(lambda / (m - 1)), g);
            worst = fmax(worst, fabs(exp(increment) / ((m + 9) * 0.75 / m) - 1));
            log_pi += increment;
        }
        pi[m] = log_pi;
        top = fmax(top, log_pi);
    }
    for (int m = 0; m < 1200; m++) {
        double w = exp(pi[m] - top);
        all += w;
        n1 += w * m;
        n2 += w * m * m;
    }
    CHECK(worst <= 1e-13, "G 4 at X(n) = n: each ratio the negative binomial's (m + 9) 0.75 / m (worst %.1e)", worst);
    CHECK_REL(exp(queue_cluster_increment(log(lambda), NAN, g)), 7.5, 1e-14, "m = 1: lambda / (G X(1)) = 7.5");
    CHECK_REL(exp(queue_cluster_increment(log(lambda / 2), log(lambda), g)), 4.125, 1e-14,
              "m = 2: 30 / (4 x 2) (1 + 0.75 / 7.5) = 4.125 = 11 x 0.75 / 2");
    CHECK_REL(n1 / all, 30, 1e-12, "its mean lambda / mu = 30");
    CHECK_REL(n2 / all - (n1 / all) * (n1 / all), 120, 1e-10, "its variance G x 30 = 120");
    CHECK(queue_cluster_increment(log(0.3), log(0.7), 1) == log(0.3), "G 1: log r, the birth-death law's");
    CHECK(queue_cluster_increment(log(0.3), log(0.7), INFINITY) == 0, "clusters that never end: flat");
    /* far past the mode, r = e^-50 at both counts: log(1 + (e^-50 - 1) / 4) = log(0.75 + e^-50 / 4) */
    CHECK_REL(queue_cluster_increment(-50, -50, g), log(0.75 + exp(-50) / 4), 1e-14,
              "deep in the tail: log(0.75 + e^-50 / 4), the ratio p");
    CHECK(isnan(queue_cluster_increment(0, 0, 0.5)) && isnan(queue_cluster_increment(NAN, 0, 2)),
          "G below 1 or no ratio: NaN");

    /* the law against the process: an M^X/M/infinity system, clusters of geometric size (mean 4) at
     * 7.5 a second, each member leaving at rate 1, run event by event for 500,000 s: the share of
     * time with 70 or more present, 0.00219 by the negative binomial (summed above), where taking
     * the Poisson law's factors to the power 1 / 4 gives 0.00129 (both by their sums; python3) */
    double tail_law = 0;
    for (int m = 70; m < 1200; m++)
        tail_law += exp(pi[m] - top) / all;
    CHECK_REL(tail_law, 0.002191793808373522, 1e-9, "P(N >= 70) = 0.0021918 by the law");
    double now = 0, high = 0;
    int64_t present = 0;
    while (now < 500000) {
        double rate = lambda / g + (double)present, dt = -log(uniform01()) / rate;
        if (present >= 70)
            high += dt;
        now += dt;
        if (uniform01() * rate < lambda / g) {
            present++;
            while (uniform01() < 0.75) /* P(C > k) = 0.75^k */
                present++;
        } else {
            present--;
        }
    }
    check_near(high / now, 0.002191793808373522, 0.15, "the process: P(N >= 70) %.5f, the law's 0.00219",
               high / now);

    /* past a cap, by hand: r 0.6, G 3: (0.6 + 2) / 0.4 = 6.5 beyond, (0.6 x 3 / 0.4 + 3 x 2) / 0.4 =
     * 26.25 queued; and by summing pi(N + k + 1) = r pi(N + k) + p^(k + 1) pi(N) from pi(N) = 1 */
    double beyond, queued;
    CHECK(queue_cluster_past_cap(0.6, 3, &beyond, &queued), "r 0.6, G 3: past the cap");
    CHECK_REL(beyond, 6.5, 1e-14, "beyond (r + G - 1) / (1 - r) = 6.5");
    CHECK_REL(queued, 26.25, 1e-14, "queued (r G / (1 - r) + G (G - 1)) / (1 - r) = 26.25");
    double at = 1, sum = 0, ahead = 0, p_k = 1;
    for (int k = 0; k < 2000; k++) {
        p_k *= 2.0 / 3;
        at = 0.6 * at + p_k;
        sum += at;
        ahead += (k + 1) * at;
    }
    CHECK_REL(sum, 6.5, 1e-12, "the recursion summed: 6.5");
    CHECK_REL(ahead, 26.25, 1e-12, "its count summed: 26.25");
    CHECK(queue_cluster_past_cap(0.6, 1, &beyond, &queued) && fabs(beyond - 1.5) < 1e-15 &&
              fabs(queued - 3.75) < 1e-14,
          "G 1: the M/M/1 queue's r / (1 - r) = 1.5 and r / (1 - r)^2 = 3.75");
    CHECK(!queue_cluster_past_cap(1, 3, &beyond, &queued) && !queue_cluster_past_cap(0.5, 0.5, &beyond, &queued) &&
              !queue_cluster_past_cap(0.5, INFINITY, &beyond, &queued),
          "r at 1, G below 1 or infinite: refused");
}

/* Windows by hand. An Ornstein-Uhlenbeck mean over x = 1 relaxation times keeps 2 (1 - (1 - 1/e))
 * = 2 / e of the variance. The M/G/infinity correlation of the mean number present over a window
 * of w with the arrivals in it: services all w long, Cov = w / 2, Var(mean) = 2 w / 3 (lambda 1):
 * sqrt(3/8); services of w / 1000, (1 - 1/2000) / sqrt(1 - 1/3000) = 0.99967; of 1000 w, 0.5 /
 * sqrt(1000 - 1/3) = 0.015814; exponential of mean w (2,000 quantile bins), sqrt(1 / (2 e)) =
 * 0.4289. Then against simulated systems at 10 arrivals a second, 50,000 windows of 1 s: services
 * of 1 s (M/D/infinity) and exponential of mean 1 s (M/M/infinity). */
static double window_sample(bool exponential)
{
    enum { WINDOWS = 50000, TICKS = 100 }; /* ticks of 10 ms */
    static int32_t leaving_at[TICKS];      /* M/D: those that leave at a tick, a ring */
    const double lambda = 10, step = 0.01;
    int64_t present = 0, tick = 0;
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, n = 0;
    for (int k = 0; k < WINDOWS; k++) {
        double area = 0, arrived = 0;
        for (int i = 0; i < TICKS; i++, tick++) {
            if (uniform01() < lambda * step) {
                present++;
                arrived++;
                if (!exponential)
                    leaving_at[(tick + TICKS) % TICKS]++;
            }
            int64_t leaving = 0;
            if (exponential) {
                for (int64_t j = 0; j < present; j++)
                    leaving += uniform01() < step;
            } else {
                leaving = leaving_at[(tick + 1) % TICKS];
                leaving_at[(tick + 1) % TICKS] = 0;
            }
            present -= leaving;
            area += (double)present * step;
        }
        if (k < 10)
            continue; /* warm-up */
        n++;
        sx += area;
        sy += arrived;
        sxx += area * area;
        syy += arrived * arrived;
        sxy += area * arrived;
    }
    double cov = sxy / n - sx / n * sy / n;
    return cov / sqrt((sxx / n - sx / n * sx / n) * (syy / n - sy / n * sy / n));
}

static void windows(void)
{
    CHECK_REL(queue_window_share(1), 2 / exp(1), 1e-15, "x = 1: the window keeps 2 / e of the variance");
    CHECK(queue_window_share(0) == 1 && isnan(queue_window_share(-1)), "an empty window keeps all; a negative, NaN");
    double one = 1, all = 1, short_ = 0.001, long_ = 1000;
    CHECK_REL(queue_window_correlation(&one, &all, 1, 1), sqrt(3.0 / 8), 1e-12, "services all w long: sqrt(3/8)");
    CHECK_REL(queue_window_correlation(&short_, &all, 1, 1), (1 - 1 / 2000.0) / sqrt(1 - 1 / 3000.0), 1e-12,
              "services of w / 1000: 0.99967");
    CHECK_REL(queue_window_correlation(&long_, &all, 1, 1), 0.5 / sqrt(1000 - 1 / 3.0), 1e-12,
              "services of 1000 w: 0.015814");
    static double quantile[2000], weight[2000];
    for (int i = 0; i < 2000; i++) {
        quantile[i] = -log(1 - (i + 0.5) / 2000);
        weight[i] = 1;
    }
    CHECK_REL(queue_window_correlation(quantile, weight, 2000, 1), sqrt(1 / (2 * exp(1))), 2e-3,
              "exponential services of mean w: sqrt(1 / (2 e))");
    CHECK(isnan(queue_window_correlation(&one, &all, 1, 0)), "an empty window: NaN");
    double fixed = window_sample(false), exponential = window_sample(true);
    check_near(fixed, sqrt(3.0 / 8), 0.03, "M/D/infinity, simulated: %.4f against sqrt(3/8) = 0.6124", fixed);
    check_near(exponential, sqrt(1 / (2 * exp(1))), 0.03, "M/M/infinity, simulated: %.4f against 0.4289", exponential);
}

int main(void)
{
    mg1();
    mm1_distribution();
    erlang_c();
    mgc();
    refusals();
    md1();
    normal();
    bisection();
    phases();
    occupancy();
    compound();
    clusters();
    cluster_law();
    windows();
    return tap_done();
}
