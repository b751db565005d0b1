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
        int s = c->serve[x], rest = x - s;
        const double *a = c->arrive[s];
        for (int k = 0; k <= c->arrive_top[s]; k++) {
            int y = rest + k < TOP ? rest + k : TOP;
            next[y] += p * a[k];
        }
    }
}

/* pi = pi P, sum pi = 1: (I - P)^T pi = 0 with the last equation replaced by the sum, solved by
 * Gaussian elimination without pivoting: (I - P)^T is diagonally dominant by columns (a column's
 * entries off the diagonal sum to at most its diagonal, 1 - P(x, x), since P's rows sum to 1),
 * which elimination keeps, so no pivot is small; and a row y has entries only in columns x <=
 * y + K (the queue falls by at most K units a step), which elimination keeps too, so a column's
 * elimination touches K + 1 columns and the sums. False when a pivot vanishes. */
static bool stationary_law(const struct prefill_chain *c, double *law)
{
    enum { N = CHAIN_STATES };
    double(*a)[N + 1] = xmalloc(sizeof(double[N][N + 1]));
    for (int i = 0; i < N; i++)
        for (int j = 0; j <= N; j++)
            a[i][j] = i == j ? 1 : 0;
    for (int x = 0; x < N; x++) { /* row y of (I - P)^T gets -P(x, y) in column x */
        int s = c->serve[x], rest = x - s;
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
        if (!(fabs(a[col][col]) > 1e-300)) {
            ok = false;
            break;
        }
        double inverse = 1 / a[col][col];
        int last = col + c->budget < N - 1 ? col + c->budget : N - 1;
        for (int i = col + 1; i < N; i++) {
            if (a[i][col] == 0)
                continue;
            double f = a[i][col] * inverse;
            for (int j = col; j <= last; j++)
                a[i][j] -= f * a[col][j];
            a[i][N] -= f * a[col][N];
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

static enum chain_status build_at(const struct chain_input *in, int budget, double unit, struct prefill_chain *c);

enum chain_status prefill_chain_build(const struct chain_input *in, struct prefill_chain *c)
{
    if (!(in->arrivals_per_s > 0 && in->budget_tokens > 0 && in->rank_tokens > 0 && in->sizes >= 1 && in->step_s))
        return CHAIN_UNSUPPORTED;
    /* the grid (see the header): g = c / m, K = floor(B / g), m the most that keeps K at most
     * CHAIN_UNITS_FINE, or 1;
     * where the queue still reaches the top, half as many units to a budget, twice as far, down
     * to 4 */
    double mean_tokens = 0, weights = 0;
    for (int i = 0; i < in->sizes; i++) {
        if (!(in->size_weight[i] >= 0 && in->size_tokens[i] >= 0 && isfinite(in->size_tokens[i])))
            return CHAIN_UNSUPPORTED;
        mean_tokens += in->size_weight[i] * in->size_tokens[i];
        weights += in->size_weight[i];
    }
    if (!(weights > 0))
        return CHAIN_UNSUPPORTED;
    mean_tokens /= weights;
    if (!(mean_tokens > 0))
        return CHAIN_UNSUPPORTED;
    double prompts = in->budget_tokens / mean_tokens; /* mean prompts a budget */
    if (prompts >= CHAIN_UNITS + 1)
        return CHAIN_UNSUPPORTED;
    double parts = fmax(floor((CHAIN_UNITS_FINE + 1) / prompts * (1 - 1e-12)), 1), unit = mean_tokens / parts;
    int budget = (int)floor(in->budget_tokens / unit * (1 + 1e-12));
    enum chain_status status = build_at(in, budget, unit, c);
    while (status == CHAIN_UNSTABLE && c->top_mass > CHAIN_MOST_TOP && budget >= 8)
        status = build_at(in, budget /= 2, unit *= 2, c);
    return status;
}

/* The chain at K = `budget` units of `unit` tokens to the budget. */
static enum chain_status build_at(const struct chain_input *in, int budget, double unit, struct prefill_chain *c)
{
    memset(c, 0, sizeof *c);
    c->budget = budget;
    c->unit_tokens = unit;
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
    /* a prompt at most a rank's chunk a step where the budget is several ranks' and prompts run
     * longer than a chunk (the header) */
    bool capped = c->rank_units < c->budget && c->mean_size_units > c->rank_units;
    for (int x = 0; x < CHAIN_STATES; x++) {
        int s = x < c->budget ? x : c->budget;
        if (capped) {
            double prompts = fmax(ceil(x / c->mean_size_units - 1e-9), 1);
            int most = (int)fmax(round(c->rank_units * prompts), 1);
            s = s < most ? s : most;
        }
        c->serve[x] = s;
    }
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
        double t = c->step_s[c->serve[x]];
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
            double weight = c->serve[s] == s ? law[s] * c->step_s[s] / mean / CHAIN_SHARES : 0;
            for (int k = 0; k <= top; k++)
                c->ahead[v][s][k] = weight * part[k];
            c->ahead_top[v][s] = top;
            /* the states whose step carries s with more waiting, what waits ahead too: a full
             * step's (class K + 1), or one a prompt's cap holds below what waits (the header) */
            int to = s < c->budget ? s : c->budget + 1;
            for (int x = s + 1; x < CHAIN_STATES; x++) {
                double wx = c->serve[x] == s ? law[x] * c->step_s[s] / mean / CHAIN_SHARES : 0;
                if (wx <= 0)
                    continue;
                for (int k = 0; k <= top; k++) {
                    int y = x - s + k < TOP ? x - s + k : TOP;
                    c->ahead[v][to][y] += wx * part[k];
                    if (y > c->ahead_top[v][to])
                        c->ahead_top[v][to] = y;
                }
            }
        }
    }
    return CHAIN_OK;
}

/* The geometric grid TTFT's cases are gathered on. */
struct time_bins {
    double origin_s, per_log; /* 1 / ln CHAIN_TIME_RATIO */
    int low, high;            /* the bins touched, [low, high]; the others are not cleared */
    double weight[CHAIN_TIME_BINS], weighted_s[CHAIN_TIME_BINS];
};

/* ln x to about 1e-4 (frexp and three terms of the atanh series on the mantissa): enough to pick a
 * bin 1% wide, and a fraction of libm's cost in the loop that gathers TTFT's cases. */
static double rough_log(double x)
{
    int e;
    double m = frexp(x, &e), z = (m - 1) / (m + 1), z2 = z * z;
    return e * 0.69314718055994531 + 2 * z * (1 + z2 / 3 + z2 * z2 / 5);
}

static void bin_add(struct time_bins *b, double weight, double t)
{
    int i = t <= b->origin_s ? 0 : (int)(rough_log(t / b->origin_s) * b->per_log);
    if (i >= CHAIN_TIME_BINS)
        i = CHAIN_TIME_BINS - 1;
    if (b->high < b->low) {
        b->low = b->high = i;
        b->weight[i] = b->weighted_s[i] = 0;
    }
    for (; i < b->low; b->low--)
        b->weight[b->low - 1] = b->weighted_s[b->low - 1] = 0;
    for (; i > b->high; b->high++)
        b->weight[b->high + 1] = b->weighted_s[b->high + 1] = 0;
    b->weight[i] += weight;
    b->weighted_s[i] += weight * t;
}

static inline double least(double a, double b)
{
    return a < b ? a : b;
}

/* The steps from the end of the step in progress up to a prompt's last one: those serving `ahead`
 * units, then its own `own` (at most the rank's share a step); their time, and what its last step
 * carries of them (*last_units) and has room for beside (*room). */
static double served_before(const struct prefill_chain *c, double ahead, double own, double *last_units, double *room)
{
    double t = 0;
    for (int steps = 0; steps < 100000; steps++) {
        double left = c->budget, first = least(ahead, left);
        left -= first;
        double mine = least(least(own, c->rank_units), left);
        left -= mine;
        if (own - mine <= 1e-9) {
            *last_units = first + mine;
            *room = left;
            return t;
        }
        t += step_at(c, first + mine);
        ahead -= first;
        own -= mine;
    }
    *last_units = c->budget;
    *room = 0;
    return t;
}

/* The prompts that arrive behind a prompt before its last step starts, over `window_s`: a Poisson
 * count of mean-size prompts, as atoms of units[j] units with chance pmf[j]; one atom at the mean
 * past CHAIN_BEHIND_MOST prompts on average, where the count hardly varies. */
struct behind {
    int terms;
    double units[CHAIN_BEHIND_TERMS], pmf[CHAIN_BEHIND_TERMS];
};

static void behind_law(const struct prefill_chain *c, double window_s, double room, struct behind *b)
{
    double mean = c->arrivals_per_s * window_s;
    if (!(mean > 0) || mean > CHAIN_BEHIND_MOST) {
        b->units[0] = mean > 0 ? mean * c->mean_size_units : 0;
        b->pmf[0] = 1;
        b->terms = 1;
        return;
    }
    /* none behind, on its own; the rest in CHAIN_BEHIND_ATOMS - 1 runs of counts of about equal
     * chance, each at its mean count; the tail past CHAIN_CASE_LEAST, or past the count that fills
     * the `room` (all of which end alike), in the last */
    double fill = c->mean_size_units > 0 ? ceil(room / c->mean_size_units - 1e-9) : INFINITY;
    double p = exp(-mean), left = 1 - p, part = left / (CHAIN_BEHIND_ATOMS - 1), run = 0, count = 0;
    b->units[0] = 0;
    b->pmf[0] = p;
    b->terms = 1;
    for (int n = 1; n < CHAIN_BEHIND_TERMS && left > CHAIN_CASE_LEAST; n++) {
        p *= mean / n;
        left -= p;
        run += p;
        count += p * n;
        bool end = left <= CHAIN_CASE_LEAST || n == CHAIN_BEHIND_TERMS - 1 || n >= fill;
        if (run >= part * (1 - 1e-12) || end) {
            if (left > 0 && end) {
                run += left; /* the tail, at the last count */
                count += left * n;
            }
            b->units[b->terms] = count / run * c->mean_size_units;
            b->pmf[b->terms++] = run;
            run = count = 0;
            if (end)
                break;
        }
    }
}

/* A prompt's case of chance `weight`: `waited` to the end of the step in progress, `before` in its
 * steps up to its last, which carries `last_units` of what is ahead and its own and, of the room
 * left, those behind it (law b). The atoms' times grow with their units, so those within a time
 * bin of the first of them (CHAIN_TIME_RATIO) are added as one at their weighted mean, and the
 * atoms that fill the room (which end alike) or whose chance left is below CHAIN_CASE_LEAST with
 * the first of them. */
static void case_add(const struct prefill_chain *c, struct time_bins *bins, double weight, double waited,
                     double before, double last_units, double room, const struct behind *b)
{
    double left = 1, group = 0, group_s = 0, first_s = 0;
    for (int n = 0; n < b->terms; n++) {
        double pmf = b->pmf[n];
        left -= pmf;
        bool last = n == b->terms - 1 || b->units[n] >= room || weight * left <= CHAIN_CASE_LEAST;
        if (last)
            pmf += left > 0 ? left : 0;
        double t = waited + before + step_at(c, last_units + least(b->units[n], room));
        if (group > 0 && t > first_s * CHAIN_TIME_RATIO) {
            if (weight * group > CHAIN_CASE_LEAST)
                bin_add(bins, weight * group, group_s / group);
            group = group_s = 0;
        }
        if (group == 0)
            first_s = t;
        group += pmf;
        group_s += pmf * t;
        if (last)
            break;
    }
    if (group > 0 && weight * group > CHAIN_CASE_LEAST)
        bin_add(bins, weight * group, group_s / group);
}

void prefill_chain_ttft(const struct prefill_chain *c, int sizes, const double *tokens, const double *weights,
                        void (*add)(void *context, double weight, double time_s), void *context)
{
    struct time_bins bins;
    bins.origin_s = c->step_s[0] / 2;
    bins.per_log = 1 / log(CHAIN_TIME_RATIO);
    bins.low = 1;
    bins.high = 0;
    double sum = 0, own[CHAIN_STATES], share[CHAIN_STATES];
    sizes = sizes < CHAIN_STATES ? sizes : CHAIN_STATES;
    for (int i = 0; i < sizes; i++)
        sum += weights[i];
    for (int i = 0; i < sizes; i++) {
        own[i] = tokens[i] / c->unit_tokens;
        share[i] = weights[i] / sum;
    }
    struct behind during, later;
    for (int v = 0; v < CHAIN_SHARES; v++) {
        double rest = 1 - (v + 0.5) / CHAIN_SHARES;
        for (int s = 0; s <= c->budget + 1; s++) {
            double waited = rest * c->step_s[s <= c->budget ? s : c->budget];
            const double *ahead = c->ahead[v][s];
            behind_law(c, waited, INFINITY, &during); /* those behind a prompt whose next step is its last */
            for (int k = 0; k <= c->ahead_top[v][s]; k++) {
                if (ahead[k] <= CHAIN_CASE_LEAST)
                    continue;
                for (int i = 0; i < sizes; i++) {
                    double weight = ahead[k] * share[i];
                    /* most often all that is ahead and its own fit the next step: that step alone */
                    if (k + own[i] <= c->budget && own[i] <= c->rank_units) {
                        case_add(c, &bins, weight, waited, 0, k + own[i], c->budget - k - own[i], &during);
                        continue;
                    }
                    double last_units, room, before = served_before(c, k, own[i], &last_units, &room);
                    behind_law(c, waited + before, room, &later);
                    case_add(c, &bins, weight, waited, before, last_units, room, &later);
                }
            }
        }
    }
    double total = 0;
    for (int i = bins.low; i <= bins.high; i++)
        total += bins.weight[i];
    for (int i = bins.low; i <= bins.high; i++)
        if (bins.weight[i] > 0)
            add(context, bins.weight[i] / total, bins.weighted_s[i] / bins.weight[i]);
}

/* out_j(x) = sum over y of P(x, y) v_j(y), for the three v_j at once. */
static void expect_next(const struct prefill_chain *c, const double *v1, const double *v2, const double *v3,
                        double *out1, double *out2, double *out3)
{
    for (int x = 0; x < CHAIN_STATES; x++) {
        int s = c->serve[x], rest = x - s;
        const double *a = c->arrive[s];
        double sum1 = 0, sum2 = 0, sum3 = 0;
        int whole = TOP - rest; /* k below it lands below the top */
        int last = c->arrive_top[s] < whole ? c->arrive_top[s] : whole - 1;
        for (int k = 0; k <= last; k++) {
            sum1 += a[k] * v1[rest + k];
            sum2 += a[k] * v2[rest + k];
            sum3 += a[k] * v3[rest + k];
        }
        for (int k = last + 1; k <= c->arrive_top[s]; k++) {
            sum1 += a[k] * v1[TOP];
            sum2 += a[k] * v2[TOP];
            sum3 += a[k] * v3[TOP];
        }
        out1[x] = sum1;
        out2[x] = sum2;
        out3[x] = sum3;
    }
}

/* sigma, and the moments of the sums of 1 .. CHAIN_WINDOW steps from it. */
static void windows_work_out(struct prefill_chain *c)
{
    double served[CHAIN_STATES], weight = 0;
    for (int x = 0; x < CHAIN_STATES; x++) {
        served[x] = c->stationary[x] * c->serve[x];
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
        t[x] = c->step_s[c->serve[x]];
    for (int n = 1; n <= CHAIN_WINDOW; n++) {
        /* E[S_n^j | X_1 = x] from the sums of n - 1 steps after the first */
        expect_next(c, m1, m2, m3, p1, p2, p3);
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
