/* prefill_chain.c: the prompt tokens an aggregated instance's steps carry, as a Markov chain
 * (prefill_chain.h has the model). */
#include "prefill_chain.h"

#include "diag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOP (CHAIN_STATES - 1)
#define NEGLIGIBLE 1e-15

/* T at a fractional number of units, linear between the grid's points, the full step's beyond. */
static double step_at(const struct prefill_chain *c, double units)
{
    if (units <= 0)
        return c->step_s[0];
    if (units >= c->budget)
        return c->step_s[c->budget];
    int i = (int)units;
    double f = units - i;
    return c->step_s[i] + f * (c->step_s[i + 1] - c->step_s[i]);
}

/* The compound Poisson law of the units arriving with `mean_prompts` prompts on average, each of
 * c->size_pmf's law (Panjer's recursion, which holds with mass at size 0), into out[0 .. TOP], the
 * mass past TOP lumped there; returns the last index with mass. */
static int compound(const struct prefill_chain *c, double mean_prompts, double *out)
{
    double none = c->size_pmf[0];
    out[0] = exp(-mean_prompts * (1 - none));
    double total = out[0];
    int last = 0;
    for (int k = 1; k < TOP; k++) {
        double sum = 0;
        for (int i = 0; i < c->size_count && c->size_units[i] <= k; i++) {
            int j = c->size_units[i];
            sum += j * c->size_pmf[j] * out[k - j];
        }
        out[k] = mean_prompts / k * sum;
        total += out[k];
        if (out[k] > NEGLIGIBLE)
            last = k;
    }
    out[TOP] = fmax(1 - total, 0);
    if (out[TOP] > NEGLIGIBLE)
        last = TOP;
    return last;
}

/* next = this state law after one step. */
static void advance(const struct prefill_chain *c, const double *law, double *next)
{
    memset(next, 0, sizeof(double) * CHAIN_STATES);
    for (int x = 0; x < CHAIN_STATES; x++) {
        double p = law[x];
        if (p <= 0)
            continue;
        int s = x < c->budget ? x : c->budget, rest = x - s;
        const double *a = c->arrive[s];
        for (int k = 0; k <= c->arrive_top[s]; k++) {
            int y = rest + k < TOP ? rest + k : TOP;
            next[y] += p * a[k];
        }
    }
}

/* pi = pi P, sum pi = 1: (I - P)^T pi = 0 with the last equation replaced by the sum, solved by
 * Gaussian elimination with partial pivoting (N^3 / 3 steps, fewer than iterating to the
 * tolerance where the queue drains slowly). False when the system is singular. */
static bool stationary_law(const struct prefill_chain *c, double *law)
{
    enum { N = CHAIN_STATES };
    double(*a)[N + 1] = xmalloc(sizeof(double[N][N + 1]));
    for (int i = 0; i < N; i++)
        for (int j = 0; j <= N; j++)
            a[i][j] = i == j ? 1 : 0;
    for (int x = 0; x < N; x++) { /* row y of (I - P)^T gets -P(x, y) in column x */
        int s = x < c->budget ? x : c->budget, rest = x - s;
        for (int k = 0; k <= c->arrive_top[s]; k++) {
            int y = rest + k < TOP ? rest + k : TOP;
            a[y][x] -= c->arrive[s][k];
        }
    }
    for (int j = 0; j < N; j++)
        a[N - 1][j] = 1;
    a[N - 1][N] = 1;
    bool ok = true;
    for (int col = 0; col < N && ok; col++) {
        int pivot = col;
        for (int i = col + 1; i < N; i++)
            if (fabs(a[i][col]) > fabs(a[pivot][col]))
                pivot = i;
        if (fabs(a[pivot][col]) < 1e-300) {
            ok = false;
            break;
        }
        if (pivot != col)
            for (int j = col; j <= N; j++) {
                double t = a[col][j];
                a[col][j] = a[pivot][j];
                a[pivot][j] = t;
            }
        for (int i = col + 1; i < N; i++) {
            double f = a[i][col] / a[col][col];
            if (f == 0)
                continue;
            for (int j = col; j <= N; j++)
                a[i][j] -= f * a[col][j];
        }
    }
    for (int i = N - 1; ok && i >= 0; i--) {
        double sum = a[i][N];
        for (int j = i + 1; j < N; j++)
            sum -= a[i][j] * law[j];
        law[i] = sum / a[i][i];
    }
    free(a);
    if (!ok)
        return false;
    double total = 0;
    for (int x = 0; x < N; x++) {
        law[x] = fmax(law[x], 0); /* rounding below zero where the law is ~0 */
        total += law[x];
    }
    for (int x = 0; x < N; x++)
        law[x] /= total;
    return total > 0;
}

static enum chain_status build_at(const struct chain_input *in, int budget, struct prefill_chain *c);

enum chain_status prefill_chain_build(const struct chain_input *in, struct prefill_chain *c)
{
    if (!(in->arrivals_per_s > 0 && in->budget_tokens > 0 && in->rank_tokens > 0 && in->sizes >= 1 && in->step_s))
        return CHAIN_UNSUPPORTED;
    /* the grid: CHAIN_UNITS to a budget, coarser where prompts are long, so that the states reach
     * 8 mean prompts and twice the longest (a budget always a whole number of units); where the
     * queue still reaches the top, half as many units to a budget, twice as far, down to 4 */
    double mean_tokens = 0, longest = 0, weights = 0;
    for (int i = 0; i < in->sizes; i++) {
        if (!(in->size_weight[i] >= 0 && in->size_tokens[i] >= 0 && isfinite(in->size_tokens[i])))
            return CHAIN_UNSUPPORTED;
        mean_tokens += in->size_weight[i] * in->size_tokens[i];
        weights += in->size_weight[i];
        if (in->size_weight[i] > 0)
            longest = fmax(longest, in->size_tokens[i]);
    }
    if (!(weights > 0))
        return CHAIN_UNSUPPORTED;
    mean_tokens /= weights;
    double finest = fmax(in->budget_tokens / CHAIN_UNITS, fmax(8 * mean_tokens, 2 * longest) / (CHAIN_STATES - 1));
    int budget = (int)fmax(floor(in->budget_tokens / finest * (1 + 1e-12)), 1);
    enum chain_status status = build_at(in, budget, c);
    while (status == CHAIN_UNSTABLE && c->top_mass > CHAIN_MOST_TOP && budget >= 8)
        status = build_at(in, budget /= 2, c);
    return status;
}

/* The chain at K = `budget` units to the budget. */
static enum chain_status build_at(const struct chain_input *in, int budget, struct prefill_chain *c)
{
    memset(c, 0, sizeof *c);
    c->budget = budget;
    c->unit_tokens = in->budget_tokens / c->budget;
    c->rank_units = fmin(in->rank_tokens / c->unit_tokens, c->budget);
    c->arrivals_per_s = in->arrivals_per_s;
    double total = 0;
    for (int i = 0; i < in->sizes; i++) {
        double w = in->size_weight[i], u = in->size_tokens[i] / c->unit_tokens;
        if (!(w >= 0 && u >= 0 && isfinite(u)))
            return CHAIN_UNSUPPORTED;
        total += w;
        u = fmin(u, TOP);
        int low = (int)floor(u);
        double f = u - low;
        c->size_pmf[low] += w * (1 - f);
        if (f > 0)
            c->size_pmf[low + 1] += w * f;
        c->mean_size_units += w * u;
    }
    if (!(total > 0))
        return CHAIN_UNSUPPORTED;
    for (int k = 0; k < CHAIN_STATES; k++) {
        c->size_pmf[k] /= total;
        if (k > 0 && c->size_pmf[k] > 0 && c->size_count < CHAIN_STATES)
            c->size_units[c->size_count++] = k;
    }
    c->mean_size_units /= total;
    for (int s = 0; s <= c->budget; s++) {
        c->step_s[s] = in->step_s(in->context, s * c->unit_tokens);
        if (!(c->step_s[s] > 0 && isfinite(c->step_s[s])) || (s > 0 && c->step_s[s] < c->step_s[s - 1] * (1 - 1e-9)))
            return CHAIN_UNSUPPORTED;
    }
    /* a full step's arrivals must average less than it serves, or the queue grows without end */
    if (in->arrivals_per_s * c->step_s[c->budget] * c->mean_size_units >= c->budget)
        return CHAIN_UNSTABLE;
    for (int s = 0; s <= c->budget; s++) {
        double m = in->arrivals_per_s * c->step_s[s];
        if (m > 700) /* exp(-m) underflows: too many prompts a step for this grid */
            return CHAIN_UNSUPPORTED;
        c->arrive_top[s] = compound(c, m, c->arrive[s]);
    }

    double law[CHAIN_STATES];
    if (!stationary_law(c, law))
        return CHAIN_UNSUPPORTED;
    c->top_mass = law[TOP];
    if (law[TOP] > CHAIN_MOST_TOP)
        return CHAIN_UNSTABLE;
    memcpy(c->stationary, law, sizeof law);

    double mean = 0, second = 0;
    for (int x = 0; x < CHAIN_STATES; x++) {
        double t = c->step_s[x < c->budget ? x : c->budget];
        mean += law[x] * t;
        second += law[x] * t * t;
    }
    c->step_mean_s = mean;
    c->step_variance_s2 = fmax(second - mean * mean, 0);

    /* what is ahead of a prompt landing at share v of the step in progress, by the step's class */
    double part[CHAIN_STATES];
    for (int v = 0; v < CHAIN_SHARES; v++) {
        double share = (v + 0.5) / CHAIN_SHARES;
        for (int s = 0; s <= c->budget; s++) {
            int top = compound(c, in->arrivals_per_s * share * c->step_s[s], part);
            double weight = law[s] * c->step_s[s] / mean / CHAIN_SHARES;
            for (int k = 0; k <= top; k++)
                c->ahead[v][s][k] = weight * part[k];
            if (s == c->budget) /* and the full steps with more waiting: what waits is ahead too */
                for (int x = c->budget + 1; x < CHAIN_STATES; x++) {
                    double wx = law[x] * c->step_s[s] / mean / CHAIN_SHARES;
                    if (wx <= 0)
                        continue;
                    for (int k = 0; k <= top; k++) {
                        int y = x - c->budget + k < TOP ? x - c->budget + k : TOP;
                        c->ahead[v][c->budget + 1][y] += wx * part[k];
                    }
                }
        }
    }
    return CHAIN_OK;
}

/* The geometric grid TTFT's cases are gathered on. */
struct time_bins {
    double origin_s;
    double weight[CHAIN_TIME_BINS], weighted_s[CHAIN_TIME_BINS];
};

static void bin_add(struct time_bins *b, double weight, double t)
{
    int i = t <= b->origin_s ? 0 : (int)(log(t / b->origin_s) / log(CHAIN_TIME_RATIO));
    if (i >= CHAIN_TIME_BINS)
        i = CHAIN_TIME_BINS - 1;
    b->weight[i] += weight;
    b->weighted_s[i] += weight * t;
}

/* The time from the end of the step in progress to a prompt's first token: the steps serving
 * `ahead` units, then its own `own` (at most the rank's share a step), then, in its last step,
 * those `behind` it (the units arriving during the rest of that step, `behind_s`, and during each
 * step after, at their mean) within the budget. */
static double served_s(const struct prefill_chain *c, double ahead, double own, double behind_s)
{
    double t = 0, behind = c->arrivals_per_s * behind_s * c->mean_size_units;
    for (int steps = 0; own > 1e-9 && steps < 100000; steps++) {
        double room = c->budget, first = fmin(ahead, room);
        room -= first;
        double mine = fmin(fmin(own, c->rank_units), room);
        room -= mine;
        double after = own - mine <= 1e-9 ? fmin(behind, room) : 0;
        double step = step_at(c, first + mine + after);
        t += step;
        ahead -= first;
        own -= mine;
        behind += c->arrivals_per_s * step * c->mean_size_units - after;
    }
    return t;
}

void prefill_chain_ttft(const struct prefill_chain *c, double tokens,
                        void (*add)(void *context, double weight, double time_s), void *context)
{
    struct time_bins bins = {0};
    bins.origin_s = c->step_s[0] / 2;
    double own = tokens / c->unit_tokens;
    for (int v = 0; v < CHAIN_SHARES; v++) {
        double rest = 1 - (v + 0.5) / CHAIN_SHARES;
        for (int s = 0; s <= c->budget + 1; s++) {
            double step = c->step_s[s <= c->budget ? s : c->budget];
            const double *ahead = c->ahead[v][s];
            for (int k = 0; k < CHAIN_STATES; k++) {
                if (ahead[k] <= NEGLIGIBLE)
                    continue;
                double t = rest * step + served_s(c, k, own, rest * step);
                bin_add(&bins, ahead[k], t);
            }
        }
    }
    double total = 0;
    for (int i = 0; i < CHAIN_TIME_BINS; i++)
        total += bins.weight[i];
    for (int i = 0; i < CHAIN_TIME_BINS; i++)
        if (bins.weight[i] > 0)
            add(context, bins.weight[i] / total, bins.weighted_s[i] / bins.weight[i]);
}

/* out(x) = sum over y of P(x, y) v(y). */
static void expect_next(const struct prefill_chain *c, const double *v, double *out)
{
    for (int x = 0; x < CHAIN_STATES; x++) {
        int s = x < c->budget ? x : c->budget, rest = x - s;
        const double *a = c->arrive[s];
        double sum = 0;
        for (int k = 0; k <= c->arrive_top[s]; k++)
            sum += a[k] * v[rest + k < TOP ? rest + k : TOP];
        out[x] = sum;
    }
}

/* sigma, and the moments of the sums of 1 .. CHAIN_WINDOW steps from it. */
static void windows_work_out(struct prefill_chain *c)
{
    double served[CHAIN_STATES], weight = 0;
    for (int x = 0; x < CHAIN_STATES; x++) {
        served[x] = c->stationary[x] * (x < c->budget ? x : c->budget);
        weight += served[x];
    }
    if (weight <= 0) { /* no prompt ever waits: the steps after a first token are as any */
        memcpy(c->start, c->stationary, sizeof c->start);
    } else {
        for (int x = 0; x < CHAIN_STATES; x++)
            served[x] /= weight;
        advance(c, served, c->start);
    }
    double t[CHAIN_STATES], m1[CHAIN_STATES] = {0}, m2[CHAIN_STATES] = {0}, m3[CHAIN_STATES] = {0};
    double p1[CHAIN_STATES], p2[CHAIN_STATES], p3[CHAIN_STATES];
    for (int x = 0; x < CHAIN_STATES; x++)
        t[x] = c->step_s[x < c->budget ? x : c->budget];
    for (int n = 1; n <= CHAIN_WINDOW; n++) {
        /* E[S_n^j | X_1 = x] from the sums of n - 1 steps after the first */
        expect_next(c, m1, p1);
        expect_next(c, m2, p2);
        expect_next(c, m3, p3);
        double e1 = 0, e2 = 0, e3 = 0;
        for (int x = 0; x < CHAIN_STATES; x++) {
            double tx = t[x];
            m3[x] = tx * tx * tx + 3 * tx * tx * p1[x] + 3 * tx * p2[x] + p3[x];
            m2[x] = tx * tx + 2 * tx * p1[x] + p2[x];
            m1[x] = tx + p1[x];
            e1 += c->start[x] * m1[x];
            e2 += c->start[x] * m2[x];
            e3 += c->start[x] * m3[x];
        }
        c->window_mean_s[n] = e1;
        c->window_variance_s2[n] = fmax(e2 - e1 * e1, 0);
        c->window_third_s3[n] = e3 - 3 * e1 * e2 + 2 * e1 * e1 * e1;
    }
    c->windows = true;
}

void prefill_chain_window(struct prefill_chain *c, double steps, double *mean_s, double *variance_s2,
                          double *third_s3)
{
    if (!c->windows)
        windows_work_out(c);
    steps = fmax(steps, 1);
    const double *moments[3] = {c->window_mean_s, c->window_variance_s2, c->window_third_s3};
    double *out[3] = {mean_s, variance_s2, third_s3};
    for (int j = 0; j < 3; j++) {
        const double *k = moments[j];
        double value;
        if (steps >= CHAIN_WINDOW) {
            /* the mean goes on at the stationary step (the last step's may still be relaxing
             * where the queue drains slowly); the spread at its last step's rate */
            double rate = j == 0 ? c->step_mean_s : k[CHAIN_WINDOW] - k[CHAIN_WINDOW - 1];
            value = k[CHAIN_WINDOW] + (steps - CHAIN_WINDOW) * rate;
        } else {
            int n = (int)steps;
            double f = steps - n;
            value = f > 0 ? k[n] + f * (k[n + 1] - k[n]) : k[n];
        }
        *out[j] = value;
    }
    *variance_s2 = fmax(*variance_s2, 0);
}
