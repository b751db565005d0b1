/* queueing.h: the queueing and distribution math behind tail latency: how long a prompt waits
 * for a prefill server, the wait's quantiles, and how much a decode batch fluctuates.
 *
 * Pure functions of their arguments: no allocation, no global state, deterministic. Times are
 * seconds, rates per second. A function returning bool writes *out only when it returns true;
 * one returning double returns NaN for invalid arguments (a negative, NaN or infinite rate or
 * time, a probability outside [0, 1], fewer than one server).
 *
 * Requests arrive as a Poisson process of rate lambda; a service time S has mean E[S], second
 * moment E[S^2] and squared coefficient of variation scv = Var[S] / E[S]^2 (0 deterministic, 1
 * exponential). Use rho = lambda E[S] / c on c servers; every queue needs rho < 1 and is
 * refused (false) at rho >= 1, where no stationary wait exists.
 *
 * M/G/1, first come first served (Pollaczek 1930, Khinchine 1932), EXACT:
 *   P(W > 0) = rho,  E[W] = lambda E[S^2] / (2 (1 - rho)).
 *   M/D/1 (E[S^2] = D^2): E[W] = rho D / (2 (1 - rho)); M/M/1 (E[S^2] = 2 E[S]^2): rho E[S] / (1 - rho).
 * M/M/c (Erlang 1917), EXACT; M/G/c by Allen-Cunneen (A. O. Allen, Probability, Statistics and
 * Queueing Theory, 2nd ed., 1990), an APPROXIMATION:
 *   a = lambda E[S] offered load, C(c, a) the Erlang C probability of waiting,
 *   P(W > 0) = C(c, a),  E[W] = C(c, a) E[S] / (c - a) x (1 + scv) / 2.
 *   At c = 1 this is P-K exactly (C(1, a) = a); for c > 1 it is exact at scv = 1 only. Kingman's
 *   heavy-traffic bound for G/G/1, E[W] ~ E[S] rho / (1 - rho) (ca^2 + cs^2) / 2, is the same
 *   scaling with Poisson arrivals (ca^2 = 1); for c > 1 the factor's error is small near scv = 1 and
 *   grows with |scv - 1| and as rho falls (Whitt, Prod. Oper. Manag. 2, 1993).
 * The wait's distribution, an atom 1 - P(W > 0) at zero and an exponential tail of mean
 *   E[W] / P(W > 0):  P(W > t) = P(W > 0) exp(-t P(W > 0) / E[W]); or, where the caller knows
 *   the wait as a mixture of such queues (struct queue_wait's phases), the mixture of their
 *   exponentials, P(W > t) = sum_i p_i exp(-t / m_i).
 *   EXACT for M/M/1 (rho e^{-(mu - lambda) t}) and M/M/c (C e^{-(c mu - lambda) t}); for any
 *   other service it is an APPROXIMATION with the right atom and mean. For M/D/1 use the exact
 *   CDF below: there the exponential's decay rate 2 (1 - rho) / D is below the exact x / D
 *   (x > 2 (1 - rho), the root below), so its tail is too heavy far out and its high quantiles
 *   conservative.
 * M/D/1 waiting-time CDF (Erlang 1909; Crommelin 1932), EXACT up to rounding:
 *   P(W <= t) = (1 - rho) sum_{k=0}^{floor(t/D)} (lambda (k D - t))^k / k! e^{-lambda (k D - t)}.
 *   Its terms alternate and grow like e^{lambda t}, so the sum is evaluated in long double only for
 *   t < QUEUE_MD1_EXACT_SERVICES x D; beyond, the Cramer-Lundberg asymptote
 *   P(W > t) ~ (1 - rho) / (rho e^{x} - 1) e^{-x t / D}, x > 0 the root of rho (e^x - 1) = x,
 *   whose relative error there is below 1e-10 at rho >= 0.5 (the next roots decay faster by about
 *   (rho / 2 pi)^{t/D}); at small rho, where it converges more slowly, the tail there is tiny. Against an
 *   80-digit evaluation of the sum, for rho from 0.05 to 0.999 and t up to 60 D, the CDF is
 *   within 2e-14 (absolute) on either side of the switch.
 * M/G/infinity (a decode batch: requests arrive at lambda and each stays its service time S),
 *   EXACT: the number in the system N is Poisson with mean lambda E[S]; its autocovariance is
 *   R(tau) = lambda E[(S - tau)+], so the time average of N over a window of w seconds has
 *   variance (2 / w^2) integral_0^w (w - tau) R(tau) d tau. For S = s_i with probability p_i,
 *   integral_0^w (w - tau)(s - tau)+ d tau = w^2 s / 2 - w^3 / 6 when s >= w, w s^2 / 2 - s^3 / 6
 *   when s < w, so the variance is (2 lambda / w^2) sum_i p_i of that: lambda s at w -> 0,
 *   2 lambda w / 3 at s = w, lambda E[S^2] / w as w -> infinity.
 * A compound Poisson sum (arrivals at lambda over w seconds, each bringing an amount X):
 *   mean lambda w E[X], variance lambda w E[X^2], EXACT.
 * Arrivals in clusters (a decode batch whose steps a prompt's prefill holds back: counted in
 *   decode steps, the requests that arrive during a hold of d seconds come at one instant,
 *   Poisson(lambda d) of them, and each holds the batch back again). The cluster is a
 *   Galton-Watson tree whose offspring have mean m = lambda E[d] (the share of time held) and
 *   variance m + m^2 scv_d, so its size C has E[C] = 1 / (1 - m) and
 *   E[C^2] / E[C] = (m + m^2 scv_d) / (1 - m)^2 + 1 / (1 - m), EXACT for m < 1. In an
 *   M^X/G/infinity system the number present has variance / mean
 *   1 + (E[C^2] / E[C] - 1) phi, phi = E[min(S1, S2)] / E[S] (two members' lives overlap: 1 for
 *   a fixed S, 1/2 exponential), EXACT for lives independent of the cluster (Campbell's theorem).
 *   So a cluster widens the number present's variance over a Poisson arrival's by
 *   1 + m (2 - m + m scv_d) phi / (1 - m)^2.
 * The law of the number present under clusters (queue_cluster_increment): clusters of geometric
 *   size, mean G (P(C > k) = p^k, p = 1 - 1 / G), at rate lambda / G, leaving one at a time at
 *   X(n). Level n is crossed upward by a cluster begun at j <= n with more than n - j members,
 *   at (lambda / G) S(n), S(n) = sum_{j <= n} pi(j) p^(n - j) = p S(n - 1) + pi(n), and
 *   downward at X(n + 1) pi(n + 1), so pi(m) / pi(m - 1) = a_m (1 + p / a_(m - 1)), a = lambda /
 *   (G X), and a_1 at m = 1 (S(0) = pi(0)), EXACT. At X(n) = n mu it is the negative binomial law
 *   C(n + k - 1, n) p^n (1 - p)^k, k = lambda / (mu (G - 1)): the number present in an M^X/M/infinity
 *   system, variance G times the mean (the spread above at phi = 1/2). Where X has stopped
 *   changing a count multiplies by 1 + (r - 1) / G, r = lambda / X, so the upper tail is
 *   exponential (ratio p where X >> lambda): taking each factor of the Poisson law to the power
 *   1 / G instead gives the same variance about the mode but a tail that falls as n log n.
 * Past a cap N where arrivals queue one at a time (queue_cluster_past_cap): the clusters begun
 *   below N go on past it, N + k crossed at lambda pi(N + k) + (lambda / G) p^(k + 1) S(N - 1),
 *   and X(N) pi(N) = (lambda / G) S(N - 1), so pi(N + k + 1) = r pi(N + k) + p^(k + 1) pi(N), r =
 *   lambda / X(N) < 1: summed, sum_{k >= 1} pi(N + k) = pi(N) (r + G - 1) / (1 - r) and
 *   sum_{k >= 1} k pi(N + k) = pi(N) (r G / (1 - r) + G (G - 1)) / (1 - r), EXACT; at G = 1 the
 *   M/M/1 queue's r / (1 - r) and r / (1 - r)^2.
 */
#ifndef RACKPLAN_QUEUEING_H
#define RACKPLAN_QUEUEING_H

#include <stdbool.h>
#include <stdint.h>

/* Below this many service times t / D the M/D/1 CDF is the exact alternating sum; from it on,
 * the Cramer-Lundberg asymptote (see the header). At 13 the sum's cancellation in long double and
 * the asymptote's error are both about 1e-14. */
#define QUEUE_MD1_EXACT_SERVICES 13
/* queue_quantile: bisection stops when the bracket is within this part of its upper end, or
 * after QUEUE_QUANTILE_STEPS halvings; the bracket's upper end doubles its width at most
 * QUEUE_QUANTILE_EXPANSIONS times. */
#define QUEUE_QUANTILE_TOLERANCE 1e-13
#define QUEUE_QUANTILE_STEPS 200
#define QUEUE_QUANTILE_EXPANSIONS 1000

#define QUEUE_WAIT_PHASES 16
/* Past this log((G - 1) / r) a cluster's increment is its logarithm plus a correction (exp would
 * overflow) */
#define QUEUE_CLUSTER_LARGE_LOG 30

struct queue_wait {
    double use;              /* rho, per server */
    double wait_probability; /* P(W > 0) */
    double mean_wait_s;      /* E[W] */
    /* 0: one exponential tail of mean E[W] / P(W > 0); else the tail is `phases` exponentials,
     * phase_probability[i] of mean phase_mean_s[i] (summing to P(W > 0) and E[W]) */
    int phases;
    double phase_probability[QUEUE_WAIT_PHASES], phase_mean_s[QUEUE_WAIT_PHASES];
};

/* M/G/1 FCFS by Pollaczek-Khinchine (exact). False, *out untouched, when rho >= 1, a rate or
 * moment is negative or not finite, E[S] is 0, or E[S^2] < E[S]^2 (1 - 1e-12): no distribution
 * has that variance (the margin forgives rounding in a caller's sum of moments). */
bool queue_mg1(double arrivals_per_s, double service_mean_s, double service_second_moment_s2,
               struct queue_wait *out);

/* M/G/c FCFS by Erlang C and Allen-Cunneen (exact for scv = 1 or servers = 1). False, *out
 * untouched, when rho >= 1, servers < 1, E[S] is 0, or a rate, E[S] or scv is negative or not
 * finite. */
bool queue_mgc(double arrivals_per_s, double service_mean_s, double service_scv, int64_t servers,
               struct queue_wait *out);

/* Erlang C: the probability that an arrival to M/M/c waits, with offered load a = lambda E[S].
 * By the Erlang B recursion in its reciprocal, r(k) = 1 + (k / a) r(k - 1) (r = 1 / B, r(0) = 1),
 * C = 1 / (rho + (1 - rho) r(c)): no factorial or power overflows, every step positive. For large
 * a the recursion starts at k0 = a - 40 sqrt(a) from the fluid value r = a / (a - k0); a relative
 * error at k0 shrinks by a factor 1 - B(k) each step, below e^{-800} by k = a, so the result is the
 * exact one to rounding in O(sqrt(a)) steps (servers up to 1e6 and beyond). Exactly a at c = 1;
 * 1 when a >= c (every arrival waits); 0 when a = 0 or B(c) falls below 1e-300. NaN when
 * servers < 1 or a is negative or not finite. */
double queue_erlang_c(int64_t servers, double offered_load);

/* P(W <= t) of the atom-plus-exponential wait, or of its phases (see the header): 0 for t < 0,
 * 1 - P(W > 0) at 0; 1 for t >= 0 when E[W] or P(W > 0) is 0. NaN when t is NaN. */
double queue_wait_cdf(const struct queue_wait *q, double t_s);

/* Its p-quantile: 0 when p <= 1 - P(W > 0), else (E[W] / P) ln(P / (1 - p)) with P = P(W > 0)
 * (with phases, by queue_quantile on the CDF); infinity at p = 1 (unless nobody waits); NaN for p
 * outside [0, 1]. */
double queue_wait_quantile(const struct queue_wait *q, double p);

/* The mean of its slowest exponential: E[W] / P(W > 0), or the longest phase's; 0 when nobody
 * waits. */
double queue_wait_tail_mean_s(const struct queue_wait *q);

/* The exact M/D/1 FCFS waiting-time CDF P(W <= t) for arrivals at lambda and a deterministic
 * service of D seconds (see the header for the sum and the asymptote beyond
 * QUEUE_MD1_EXACT_SERVICES x D). 0 for t < 0, 1 - rho at t = 0. NaN when rho >= 1, D <= 0, or an
 * argument is negative (except t) or not finite. */
double queue_md1_wait_cdf(double arrivals_per_s, double service_s, double t_s);

/* The standard normal quantile by Wichura's AS 241 (Appl. Statist. 37, 1988, PPND16: relative
 * error about 1e-16): -infinity at 0, infinity at 1, NaN outside [0, 1]. */
double queue_normal_quantile(double p);

/* The standard normal CDF, erfc(-x / sqrt 2) / 2 (full relative precision in the lower tail). */
double queue_normal_cdf(double x);

/* The p-quantile of a nondecreasing CDF, the smallest x >= lo with cdf(x) >= p to
 * QUEUE_QUANTILE_TOLERANCE (the returned x has cdf(x) >= p): lo itself when cdf(lo) >= p; else
 * [lo, hi] widened by doubling hi - lo until cdf(hi) >= p (infinity when it never is in
 * QUEUE_QUANTILE_EXPANSIONS doublings), then bisected. Deterministic: the same calls to cdf every
 * time. NaN when p is outside [0, 1], lo or hi is not finite, or hi <= lo. */
double queue_quantile(double (*cdf)(void *context, double x), void *context, double p, double lo,
                      double hi);

/* The variance of the time-averaged number in an M/G/infinity system over a window of w seconds,
 * for service times service_s[i] with weights weight[i] (any nonnegative scale: divided by their
 * sum), n of them; exact (see the header). NaN when n < 1, a service time or weight is negative
 * or not finite, the weights sum to 0, the rate is negative or not finite, or w <= 0. */
double queue_occupancy_window_variance(double arrivals_per_s, const double *service_s,
                                       const double *weight, int64_t n, double window_s);

/* The factor by which holds widen the variance of the number present (see the header, "Arrivals
 * in clusters"): 1 + m (2 - m + m scv_d) phi / (1 - m)^2 for held share m in [0, 1), the holds'
 * squared coefficient of variation scv_d >= 0 and the lives' overlap phi in [0, 1]. Infinity at
 * m >= 1 (the clusters never end); NaN when an argument is NaN, scv_d is infinite, or one is
 * outside its range. */
double queue_cluster_spread(double held, double hold_scv, double overlap);

/* The variance of an Ornstein-Uhlenbeck process's mean over a window x relaxation times, over
 * its own variance: (2 / x) (1 - (1 - e^-x) / x) (by its series below x = 1e-4, where that
 * cancels). NaN for x < 0 or NaN. */
double queue_window_share(double x);

/* In an M/G/infinity system (services service_s[i] with weights weight[i], as for
 * queue_occupancy_window_variance), the correlation of the number present, averaged over a window
 * of w seconds, with the arrivals in that window, EXACT: an arrival x before the window ends adds
 * E[min(S, x)] / w to the mean (Campbell), so Cov = (lambda / w) sum_i p_i int_0^w min(s_i, x) dx,
 * int = s^2 / 2 + s (w - s) for s < w and w^2 / 2 beyond, Var(arrivals) = lambda w, and the mean's
 * variance queue_occupancy_window_variance's; lambda cancels. sqrt(3/8) = 0.612 for services all
 * w long; toward 1 for services far shorter than w (the mean then counts the window's arrivals),
 * toward 0 for far longer (they are a small part of those present); exponential services of mean
 * w, whose departures' own chance decorrelates the two further, sqrt(1 / (2 e)) = 0.429. NaN as
 * queue_occupancy_window_variance. */
double queue_window_correlation(const double *service_s, const double *weight, int64_t n, double window_s);

/* log pi(m) / pi(m - 1) of the clusters' law (see the header, "The law of the number present
 * under clusters"): log r_m - log G + log(1 + (G - 1) / r_(m - 1)), r = lambda / X, given as
 * log_ratio = log r_m and log_ratio_before = log r_(m - 1), or NaN at m = 1 (then log r_1 - log
 * G); log r_m at G = 1, the birth-death law; 0 at G infinite (clusters that never end: flat).
 * NaN when G < 1 or an argument is NaN (but log_ratio_before). */
double queue_cluster_increment(double log_ratio, double log_ratio_before, double spread);

/* The mass past a cap N and the count queued there, each over pi(N) (see the header, "Past a
 * cap"): *beyond = (r + G - 1) / (1 - r), *queued = (r G / (1 - r) + G (G - 1)) / (1 - r), r =
 * lambda / X(N) in [0, 1), G >= 1 finite. False, both untouched, when r or G is out of range
 * (clusters that never end have no mass past a cap that is finite). */
bool queue_cluster_past_cap(double r, double spread, double *beyond, double *queued);

struct queue_moments {
    double mean;
    double variance;
};

/* The total of a compound Poisson sum over a window: arrivals at lambda for window_s seconds,
 * each bringing an amount X with E[X] and E[X^2] (exact). False, *out untouched, when an argument
 * is negative or not finite or E[X^2] < E[X]^2 (1 - 1e-12). */
bool queue_compound_poisson(double arrivals_per_s, double window_s, double amount_mean,
                            double amount_second_moment, struct queue_moments *out);

#endif
