/* stages.c: see stages.h. */
#include "stages.h"

#include "diag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double block_sum(const double *prefix, int64_t a, int64_t b) { return prefix[b] - prefix[a]; }

static double extra(const struct stage_problem *p, int64_t stage, bool memory)
{
    double v = 0;
    if (stage == 0)
        v += memory ? p->first_memory : p->first_time;
    if (stage == p->stages - 1)
        v += memory ? p->last_memory : p->last_time;
    return v;
}

double stage_time(const struct stage_problem *p, const struct stage_split *s, int64_t stage)
{
    double t = extra(p, stage, false);
    for (int64_t i = s->start[stage]; i < s->start[stage + 1]; i++)
        t += p->time[i];
    return t;
}

double stage_memory(const struct stage_problem *p, const struct stage_split *s, int64_t stage)
{
    double m = extra(p, stage, true);
    for (int64_t i = s->start[stage]; i < s->start[stage + 1]; i++)
        m += p->memory[i];
    return m;
}

bool stages_dp(const struct stage_problem *p, struct stage_split *out)
{
    int64_t L = p->layers, P = p->stages;
    if (P < 1 || P > L)
        return false;
    double *time_prefix = xcalloc((size_t)L + 1, sizeof *time_prefix);
    double *memory_prefix = xcalloc((size_t)L + 1, sizeof *memory_prefix);
    for (int64_t i = 0; i < L; i++) {
        time_prefix[i + 1] = time_prefix[i] + p->time[i];
        memory_prefix[i + 1] = memory_prefix[i] + p->memory[i];
    }
    /* best[s][j]: the least bottleneck of layers [0, j) in stages 0..s; from[s][j] its cut */
    double *best = xmalloc((size_t)(P * (L + 1)) * sizeof *best);
    int64_t *from = xmalloc((size_t)(P * (L + 1)) * sizeof *from);
    for (int64_t k = 0; k < P * (L + 1); k++) {
        best[k] = INFINITY;
        from[k] = -1;
    }
    for (int64_t s = 0; s < P; s++) {
        for (int64_t j = s + 1; j <= L; j++) {
            for (int64_t i = s; i < j; i++) {
                if (s == 0 && i != 0)
                    break;
                double before = s == 0 ? 0 : best[(s - 1) * (L + 1) + i];
                if (!isfinite(before))
                    continue;
                double time = block_sum(time_prefix, i, j) + extra(p, s, false);
                double memory = block_sum(memory_prefix, i, j) + extra(p, s, true);
                /* the last stage ends at L: only then does it carry the last extra */
                if (s == P - 1 && j != L)
                    continue;
                if (memory > p->capacity)
                    continue;
                double bottleneck = before > time ? before : time;
                if (bottleneck < best[s * (L + 1) + j]) {
                    best[s * (L + 1) + j] = bottleneck;
                    from[s * (L + 1) + j] = i;
                }
            }
        }
    }
    bool found = isfinite(best[(P - 1) * (L + 1) + L]);
    if (found) {
        out->stages = P;
        out->start = xmalloc((size_t)(P + 1) * sizeof *out->start);
        out->start[P] = L;
        for (int64_t s = P - 1, j = L; s >= 0; s--) {
            out->start[s] = from[s * (L + 1) + j];
            j = out->start[s];
        }
        /* the split's own time, summed as stage_time sums it (prefix differences round) */
        out->max_time = 0;
        for (int64_t s = 0; s < P; s++)
            out->max_time = fmax(out->max_time, stage_time(p, out, s));
    }
    free(best);
    free(from);
    free(time_prefix);
    free(memory_prefix);
    return found;
}

/* The blocks (stage s covers layers [a, b)) whose memory fits: the arcs of a layered graph from
 * (stage 0, layer 0) to (stage P - 1, layer L). */
struct arc {
    int64_t stage, a, b;
    double time;
};

static int64_t block_arcs(const struct stage_problem *p, struct arc **out)
{
    int64_t L = p->layers, P = p->stages, count = 0, cap = 1024;
    struct arc *arcs = xmalloc((size_t)cap * sizeof *arcs);
    for (int64_t s = 0; s < P; s++) {
        for (int64_t a = s; a < L; a++) {
            if (s == 0 && a != 0)
                break;
            double time = extra(p, s, false), memory = extra(p, s, true);
            for (int64_t b = a + 1; b <= L - (P - 1 - s); b++) {
                time += p->time[b - 1];
                memory += p->memory[b - 1];
                if (memory > p->capacity)
                    break;
                if (s == P - 1 && b != L)
                    continue;
                if (count == cap) {
                    cap *= 2;
                    arcs = xrealloc(arcs, (size_t)cap * sizeof *arcs);
                }
                arcs[count++] = (struct arc){s, a, b, time};
            }
        }
    }
    *out = arcs;
    return count;
}

/* Is there a split whose every stage takes at most `limit`? One unit of flow through the arcs
 * of time <= limit; the LP of a network flow is integral, so GLPK settles it at the root.
 * Returns the lp status; on LP_OPTIMAL fills `split`. */
static enum lp_status split_within(const struct stage_problem *p, const struct arc *arcs,
                                   int64_t count, double limit, double time_limit_s,
                                   struct stage_split *split, double *seconds)
{
    int64_t L = p->layers, P = p->stages;
    int64_t *index = xmalloc((size_t)count * sizeof *index);
    int n = 0;
    for (int64_t k = 0; k < count; k++)
        index[k] = arcs[k].time <= limit ? ++n : 0;
    enum lp_status status = LP_INFEASIBLE;
    if (n == 0) {
        free(index);
        return status;
    }
    struct lp *lp = lp_new(n, true);
    for (int64_t k = 0; k < count; k++)
        if (index[k])
            lp_column(lp, (int)index[k], 0, 1, true, 0);
    int *cols = xmalloc((size_t)count * sizeof *cols);
    double *coefs = xmalloc((size_t)count * sizeof *coefs);
    /* flow conservation at (stage s, layer j): what ends there continues in stage s + 1 */
    for (int64_t s = 0; s <= P - 1; s++) {
        for (int64_t j = 0; j <= L; j++) {
            int k = 0;
            for (int64_t e = 0; e < count; e++) {
                if (!index[e])
                    continue;
                if (arcs[e].stage == s && arcs[e].b == j) {
                    cols[k] = (int)index[e];
                    coefs[k++] = 1;
                } else if (s + 1 < P && arcs[e].stage == s + 1 && arcs[e].a == j) {
                    cols[k] = (int)index[e];
                    coefs[k++] = -1;
                }
            }
            double want = s == P - 1 ? (j == L ? 1 : 0) : 0;
            if (k)
                lp_row(lp, k, cols, coefs, want, want);
            else if (want > 0)
                goto done; /* nothing reaches the end: infeasible */
        }
    }
    { /* the flow starts once at (stage 0, layer 0) */
        int k = 0;
        for (int64_t e = 0; e < count; e++) {
            if (index[e] && arcs[e].stage == 0) {
                cols[k] = (int)index[e];
                coefs[k++] = 1;
            }
        }
        if (k == 0)
            goto done;
        lp_row(lp, k, cols, coefs, 1, 1);
    }
    struct lp_result r;
    lp_solve(lp, NULL, time_limit_s, &r);
    *seconds += r.seconds;
    status = r.status;
    if (status == LP_OPTIMAL || status == LP_FEASIBLE) {
        split->stages = P;
        split->start = xmalloc((size_t)(P + 1) * sizeof *split->start);
        split->start[P] = L;
        for (int64_t e = 0; e < count; e++)
            if (index[e] && r.x[index[e]] > 0.5)
                split->start[arcs[e].stage] = arcs[e].a;
        split->max_time = 0;
        for (int64_t s = 0; s < P; s++)
            split->max_time = fmax(split->max_time, stage_time(p, split, s));
    }
    free(r.x);
done:
    lp_free(lp);
    free(cols);
    free(coefs);
    free(index);
    return status;
}

static int by_time(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

bool stages_ilp(const struct stage_problem *p, const struct stage_split *warm, double time_limit_s,
                struct stage_split *out, struct lp_result *stats)
{
    memset(stats, 0, sizeof *stats);
    if (p->stages < 1 || p->stages > p->layers)
        return false;
    struct arc *arcs;
    int64_t count = block_arcs(p, &arcs);
    /* every stage time is one of these: the optimum is the least for which a split exists */
    double *times = xmalloc((size_t)(count > 0 ? count : 1) * sizeof *times);
    for (int64_t k = 0; k < count; k++)
        times[k] = arcs[k].time;
    qsort(times, (size_t)count, sizeof *times, by_time);
    int64_t unique = 0;
    for (int64_t k = 0; k < count; k++)
        if (unique == 0 || times[k] != times[unique - 1])
            times[unique++] = times[k];
    /* bisect over candidates: low is known infeasible (-1: none), high feasible */
    int64_t low = -1, high = unique; /* high == unique: not yet shown feasible */
    struct stage_split best = {0};
    double seconds = 0;
    bool failed = false;
    if (warm) { /* test the warm start's value and the candidate just below it */
        int64_t at = 0;
        while (at < unique && times[at] < warm->max_time)
            at++;
        if (at < unique) {
            high = at;
            best.stages = warm->stages;
            best.start = xmalloc((size_t)(warm->stages + 1) * sizeof *best.start);
            memcpy(best.start, warm->start, (size_t)(warm->stages + 1) * sizeof *best.start);
            best.max_time = warm->max_time;
            low = at - 1;
            if (low >= 0) {
                struct stage_split probe = {0};
                enum lp_status st = split_within(p, arcs, count, times[low], time_limit_s, &probe, &seconds);
                if (st == LP_OPTIMAL || st == LP_FEASIBLE) {
                    stage_split_release(&best);
                    best = probe;
                    high = low;
                    low = -1;
                } else if (st != LP_INFEASIBLE) {
                    failed = true;
                }
            }
        }
    }
    while (!failed && high - low > 1 && seconds < time_limit_s) {
        int64_t mid = low + (high - low) / 2;
        struct stage_split probe = {0};
        enum lp_status st = split_within(p, arcs, count, times[mid], time_limit_s - seconds, &probe, &seconds);
        if (st == LP_OPTIMAL || st == LP_FEASIBLE) {
            stage_split_release(&best);
            best = probe;
            high = mid;
        } else if (st == LP_INFEASIBLE) {
            low = mid;
        } else {
            failed = true;
        }
    }
    bool proven = !failed && high - low <= 1;
    stats->seconds = seconds;
    if (high < unique && best.start) {
        stats->status = proven ? LP_OPTIMAL : LP_FEASIBLE;
        stats->objective = best.max_time;
        stats->bound = low >= 0 ? (proven ? best.max_time : times[low]) : (proven ? best.max_time : 0);
        stats->gap = fabs(stats->objective - stats->bound) / fmax(fabs(stats->objective), 1e-300);
        *out = best;
    } else {
        stats->status = failed ? LP_FAILED : proven ? LP_INFEASIBLE : LP_NO_SOLUTION;
        stage_split_release(&best);
    }
    free(times);
    free(arcs);
    return stats->status == LP_OPTIMAL || stats->status == LP_FEASIBLE;
}

void stage_split_release(struct stage_split *s)
{
    if (!s)
        return;
    free(s->start);
    memset(s, 0, sizeof *s);
}
