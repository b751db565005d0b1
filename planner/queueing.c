/* queueing.c: the formulas of queueing.h. */
#include "queueing.h"

#include <float.h>
#include <math.h>

/* E[S^2] may fall short of E[S]^2 by this part (rounding in a caller's sums), no more. */
#define MOMENT_SLACK 1e-12

static bool nonnegative(double x)
{
    return isfinite(x) && x >= 0;
}

static bool second_moment_valid(double mean, double second_moment)
{
    return nonnegative(second_moment) && second_moment >= mean * mean * (1 - MOMENT_SLACK);
}

bool queue_mg1(double arrivals_per_s, double service_mean_s, double service_second_moment_s2,
               struct queue_wait *out)
{
    if (!nonnegative(arrivals_per_s) || !nonnegative(service_mean_s) || service_mean_s == 0 ||
        !second_moment_valid(service_mean_s, service_second_moment_s2))
        return false;
    double rho = arrivals_per_s * service_mean_s;
    if (!(rho < 1))
        return false;
    *out = (struct queue_wait){.use = rho, .wait_probability = rho,
                               .mean_wait_s = arrivals_per_s * service_second_moment_s2 / (2 * (1 - rho))};
    return true;
}

double queue_erlang_c(int64_t servers, double offered_load)
{
    if (servers < 1 || !nonnegative(offered_load))
        return NAN;
    double a = offered_load, c = (double)servers;
    if (a == 0)
        return 0;
    if (a >= c)
        return 1;
    if (servers == 1)
        return a;
    /* r(k) = 1 / B(k), Erlang B's recursion B(k) = a B(k-1) / (k + a B(k-1)) inverted; started
     * far below a at the fluid value where the error it carries dies out (see the header) */
    double k0 = floor(a - 40 * sqrt(a)), r = 1;
    if (k0 > 0)
        r = a / (a - k0);
    else
        k0 = 0;
    for (int64_t k = (int64_t)k0 + 1; k <= servers; k++) {
        r = 1 + ((double)k / a) * r;
        if (r > 1e300)
            return 0;
    }
    double rho = a / c;
    return 1 / (rho + (1 - rho) * r);
}

bool queue_mgc(double arrivals_per_s, double service_mean_s, double service_scv, int64_t servers,
               struct queue_wait *out)
{
    if (servers < 1 || !nonnegative(arrivals_per_s) || !nonnegative(service_mean_s) || service_mean_s == 0 ||
        !nonnegative(service_scv))
        return false;
    double a = arrivals_per_s * service_mean_s, c = (double)servers;
    if (!(a < c))
        return false;
    double wait = queue_erlang_c(servers, a);
    *out = (struct queue_wait){.use = a / c, .wait_probability = wait,
                               .mean_wait_s = wait * service_mean_s / (c - a) * (1 + service_scv) / 2};
    return true;
}

double queue_wait_cdf(const struct queue_wait *q, double t_s)
{
    if (isnan(t_s))
        return NAN;
    if (t_s < 0)
        return 0;
    if (q->wait_probability <= 0 || q->mean_wait_s <= 0)
        return 1;
    if (q->phases > 0) {
        double above = 0;
        for (int i = 0; i < q->phases; i++)
            if (q->phase_probability[i] > 0 && q->phase_mean_s[i] > 0)
                above += q->phase_probability[i] * exp(-t_s / q->phase_mean_s[i]);
        return 1 - above;
    }
    double tail_mean = q->mean_wait_s / q->wait_probability;
    return 1 - q->wait_probability * exp(-t_s / tail_mean);
}

double queue_wait_tail_mean_s(const struct queue_wait *q)
{
    if (q->wait_probability <= 0 || q->mean_wait_s <= 0)
        return 0;
    if (q->phases == 0)
        return q->mean_wait_s / q->wait_probability;
    double longest = 0;
    for (int i = 0; i < q->phases; i++)
        if (q->phase_probability[i] > 0)
            longest = fmax(longest, q->phase_mean_s[i]);
    return longest;
}

static double wait_cdf_of(void *context, double t_s)
{
    return queue_wait_cdf(context, t_s);
}

double queue_wait_quantile(const struct queue_wait *q, double p)
{
    if (!(p >= 0 && p <= 1))
        return NAN;
    if (q->wait_probability <= 0 || q->mean_wait_s <= 0 || p <= 1 - q->wait_probability)
        return 0;
    if (p == 1)
        return INFINITY;
    if (q->phases > 0) /* between 0 and where the slowest phase alone would put it */
        return queue_quantile(wait_cdf_of, (void *)q, p, 0,
                              queue_wait_tail_mean_s(q) * log(q->wait_probability / (1 - p)) + 1e-300);
    double tail_mean = q->mean_wait_s / q->wait_probability;
    return tail_mean * log(q->wait_probability / (1 - p));
}

/* The positive root x of rho (e^x - 1) = x for 0 < rho < 1, by Newton's method from the right:
 * f is convex and increasing right of the root, so the iterates fall monotonically onto it. Both
 * starts are right of the root: at 2 (1 - rho) / rho since e^x - 1 >= x + x^2 / 2, and at
 * 2 ln(1 / rho) + 1 since e / rho - rho > 2 ln(1 / rho) + 1 for rho < 1. */
static double md1_decay(double rho)
{
    double x = fmin(2 * (1 - rho) / rho, 2 * log(1 / rho) + 1);
    for (int i = 0; i < 200; i++) {
        double f = rho * expm1(x) - x, slope = rho * exp(x) - 1;
        double next = x - f / slope;
        if (!(next < x))
            break;
        x = next;
    }
    return x;
}

double queue_md1_wait_cdf(double arrivals_per_s, double service_s, double t_s)
{
    if (!nonnegative(arrivals_per_s) || !nonnegative(service_s) || service_s == 0 || isnan(t_s))
        return NAN;
    double rho = arrivals_per_s * service_s;
    if (!(rho < 1))
        return NAN;
    if (t_s < 0)
        return 0;
    if (rho == 0)
        return 1;
    if (t_s < QUEUE_MD1_EXACT_SERVICES * service_s) {
        long double lambda = arrivals_per_s, sum = 0, factorial = 1;
        int64_t n = (int64_t)floor(t_s / service_s);
        for (int64_t k = 0; k <= n; k++) {
            if (k > 0)
                factorial *= (long double)k;
            long double x = lambda * ((long double)t_s - (long double)k * service_s); /* >= 0 */
            long double term = powl(x, (long double)k) / factorial * expl(x);
            sum += k % 2 ? -term : term;
        }
        double cdf = (double)((1 - (long double)rho) * sum);
        return fmin(fmax(cdf, 1 - rho), 1);
    }
    if (!isfinite(t_s))
        return 1;
    double x = md1_decay(rho);
    double tail = (1 - rho) / (x + rho - 1) * exp(-x * t_s / service_s); /* rho e^x - 1 = x + rho - 1 */
    return 1 - tail;
}

double queue_normal_cdf(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

/* Wichura's coefficients (AS 241, PPND16), lowest degree first. */
static double polynomial(const double *c, int n, double x)
{
    double v = c[n - 1];
    for (int i = n - 2; i >= 0; i--)
        v = v * x + c[i];
    return v;
}

double queue_normal_quantile(double p)
{
    static const double a[8] = {3.3871328727963666080e0, 1.3314166789178437745e+2, 1.9715909503065514427e+3,
                                1.3731693765509461125e+4, 4.5921953931549871457e+4, 6.7265770927008700853e+4,
                                3.3430575583588128105e+4, 2.5090809287301226727e+3};
    static const double b[8] = {1.0, 4.2313330701600911252e+1, 6.8718700749205790830e+2,
                                5.3941960214247511077e+3, 2.1213794301586595867e+4, 3.9307895800092710610e+4,
                                2.8729085735721942674e+4, 5.2264952788528545610e+3};
    static const double c[8] = {1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0,
                                3.64784832476320460504e0, 1.27045825245236838258e0, 2.41780725177450611770e-1,
                                2.27238449892691845833e-2, 7.74545014278341407640e-4};
    static const double d[8] = {1.0, 2.05319162663775882187e0, 1.67638483018380384940e0,
                                6.89767334985100004550e-1, 1.48103976427480074590e-1, 1.51986665636164571966e-2,
                                5.47593808499534494600e-4, 1.05075007164441684324e-9};
    static const double e[8] = {6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0,
                                2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3,
                                2.71155556874348757815e-5, 2.01033439929228813265e-7};
    static const double f[8] = {1.0, 5.99832206555887937690e-1, 1.36929880922735805310e-1,
                                1.48753612908506148525e-2, 7.86869131145613259100e-4, 1.84631831751005468180e-5,
                                1.42151175831644588870e-7, 2.04426310338993978564e-15};
    if (!(p >= 0 && p <= 1))
        return NAN;
    if (p == 0)
        return -INFINITY;
    if (p == 1)
        return INFINITY;
    double q = p - 0.5;
    if (fabs(q) <= 0.425) {
        double r = 0.180625 - q * q;
        return q * polynomial(a, 8, r) / polynomial(b, 8, r);
    }
    double r = sqrt(-log(q < 0 ? p : 1 - p)), value;
    if (r <= 5) {
        r -= 1.6;
        value = polynomial(c, 8, r) / polynomial(d, 8, r);
    } else {
        r -= 5;
        value = polynomial(e, 8, r) / polynomial(f, 8, r);
    }
    return q < 0 ? -value : value;
}

double queue_quantile(double (*cdf)(void *context, double x), void *context, double p, double lo,
                      double hi)
{
    if (!(p >= 0 && p <= 1) || !isfinite(lo) || !isfinite(hi) || !(hi > lo))
        return NAN;
    if (cdf(context, lo) >= p)
        return lo;
    double width = hi - lo;
    int expansions = 0;
    while (cdf(context, hi) < p) {
        if (++expansions > QUEUE_QUANTILE_EXPANSIONS)
            return INFINITY;
        lo = hi;
        width *= 2;
        hi = lo + width;
        if (!isfinite(hi))
            return INFINITY;
    }
    /* cdf(lo) < p <= cdf(hi) */
    for (int step = 0; step < QUEUE_QUANTILE_STEPS; step++) {
        if (hi - lo <= QUEUE_QUANTILE_TOLERANCE * fmax(fabs(lo), fabs(hi)))
            break;
        double mid = lo + (hi - lo) / 2;
        if (mid <= lo || mid >= hi)
            break;
        if (cdf(context, mid) >= p)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* integral_0^w (w - tau) (s - tau)+ d tau (see the header) */
static double window_integral(double s, double w)
{
    if (s >= w)
        return w * w * s / 2 - w * w * w / 6;
    return w * s * s / 2 - s * s * s / 6;
}

double queue_occupancy_window_variance(double arrivals_per_s, const double *service_s,
                                       const double *weight, int64_t n, double window_s)
{
    if (n < 1 || !nonnegative(arrivals_per_s) || !nonnegative(window_s) || window_s == 0)
        return NAN;
    double total = 0, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!nonnegative(service_s[i]) || !nonnegative(weight[i]))
            return NAN;
        total += weight[i];
        sum += weight[i] * window_integral(service_s[i], window_s);
    }
    if (!(total > 0) || !isfinite(total))
        return NAN;
    return 2 * arrivals_per_s / (window_s * window_s) * (sum / total);
}

bool queue_compound_poisson(double arrivals_per_s, double window_s, double amount_mean,
                            double amount_second_moment, struct queue_moments *out)
{
    if (!nonnegative(arrivals_per_s) || !nonnegative(window_s) || !nonnegative(amount_mean) ||
        !second_moment_valid(amount_mean, amount_second_moment))
        return false;
    double arrivals = arrivals_per_s * window_s;
    *out = (struct queue_moments){.mean = arrivals * amount_mean, .variance = arrivals * amount_second_moment};
    return true;
}

double queue_cluster_spread(double held, double hold_scv, double overlap)
{
    if (!(held >= 0) || !(hold_scv >= 0) || !isfinite(hold_scv) || !(overlap >= 0 && overlap <= 1))
        return NAN;
    if (held >= 1)
        return INFINITY;
    return 1 + held * (2 - held + held * hold_scv) * overlap / ((1 - held) * (1 - held));
}

double queue_cluster_increment(double log_ratio, double log_ratio_before, double spread)
{
    if (isnan(log_ratio) || !(spread >= 1))
        return NAN;
    if (isinf(spread))
        return 0;
    double increment = log_ratio - log(spread);
    if (isnan(log_ratio_before) || spread == 1)
        return increment;
    double x = log(spread - 1) - log_ratio_before; /* log((G - 1) / r_(m - 1)) */
    return increment + (x > QUEUE_CLUSTER_LARGE_LOG ? x + log1p(exp(-x)) : log1p(exp(x)));
}

bool queue_cluster_past_cap(double r, double spread, double *beyond, double *queued)
{
    if (!(r >= 0 && r < 1) || !(spread >= 1) || !isfinite(spread))
        return false;
    *beyond = (r + spread - 1) / (1 - r);
    *queued = (r * spread / (1 - r) + spread * (spread - 1)) / (1 - r);
    return true;
}

double queue_window_share(double x)
{
    if (!(x >= 0))
        return NAN;
    if (x < 1e-4)
        return 1 - x / 3 + x * x / 12;
    return 2 * (1 - -expm1(-x) / x) / x;
}

double queue_window_correlation(const double *service_s, const double *weight, int64_t n, double window_s)
{
    double variance = queue_occupancy_window_variance(1, service_s, weight, n, window_s);
    if (!isfinite(variance))
        return NAN;
    double total = 0, covariance = 0;
    for (int64_t i = 0; i < n; i++) {
        double s = service_s[i];
        total += weight[i];
        covariance += weight[i] * (s < window_s ? s * s / 2 + s * (window_s - s) : window_s * window_s / 2);
    }
    covariance /= total * window_s;
    return variance > 0 ? covariance / sqrt(variance * window_s) : 0;
}
