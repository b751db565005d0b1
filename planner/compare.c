/* compare.c: see compare.h. */
#include "compare.h"

#include "graph.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* The largest batch in [1, most] whose decode step is within tpot_s: step time never falls as
 * the batch grows (every term is non-decreasing in it), so bisection finds it. 0: none. */
static int64_t batch_within(const struct roof_setup *s, int64_t most, double tpot_s)
{
    struct roof_point p;
    roof_decode(s, 1, &p);
    if (p.step_s > tpot_s)
        return 0;
    int64_t low = 1, high = most; /* low meets the target */
    while (low < high) {
        int64_t mid = low + (high - low + 1) / 2;
        roof_decode(s, mid, &p);
        if (p.step_s <= tpot_s)
            low = mid;
        else
            high = mid - 1;
    }
    return low;
}

bool compare_row(const struct model *m, const struct topology *t, int64_t racks,
                 const struct workload *w, const struct efficiency *e, double tpot_s,
                 double price_usd_per_hour, struct compare_row *out)
{
    *out = (struct compare_row){.racks = racks, .devices = racks * t->domain_devices,
                                .domain_size = t->domain_devices};
    struct workload one = *w;
    one.batch = 1;
    struct roof_setup s = {.model = m, .topology = t, .workload = one,
                           .efficiency = e ? *e : EFFICIENCY_BOUND};
    out->efficiency = s.efficiency;
    out->estimate = !efficiency_is_bound(&s.efficiency);
    struct fit fit;
    if (!plan_fit(m, t, racks, &one, &fit))
        return true; /* no valid layout: the row does not fit */
    s.layout = out->layout = fit.layout;
    out->min_devices = fit.min_devices;
    out->max_batch = fit.max_batch;
    struct graph_summary g;
    if (graph_analyse(t, racks, &g) != GRAPH_OK)
        return false;
    s.graph = &g;
    out->fits = out->max_batch >= 1;
    out->latency_floor_s = roof_latency_floor_s(&s);
    if (model_is_moe(m) && s.layout.ep > t->domain_devices) /* bytes sent over the NICs / bytes dispatched */
        out->all_to_all_outside = roof_remote_domains_per_token(m, (double)s.layout.ep / (double)t->domain_devices) /
                                  (double)m->moe.experts_per_token;
    out->price_usd_per_hour = price_usd_per_hour > 0 ? price_usd_per_hour : t->price_usd_per_hour;
    if (!out->fits)
        return true;
    out->batch = tpot_s > 0 ? batch_within(&s, out->max_batch, tpot_s) : out->max_batch;
    out->tpot_met = out->batch >= 1;
    if (!out->tpot_met)
        return true;
    roof_decode(&s, out->batch, &out->point);
    double rate = out->point.tokens_per_s;
    out->tokens_per_s_per_rack = rate / (double)racks;
    if (out->price_usd_per_hour > 0 && rate > 0)
        out->cost_per_mtok = out->price_usd_per_hour * (double)out->devices / 3600 / rate * 1e6;
    if (t->power_watts > 0 && rate > 0)
        out->joules_per_token = t->power_watts * (double)out->devices / rate;
    return true;
}

bool compare_serving_row(const struct model *m, const struct topology *t, int64_t budget_devices, const struct workload *w,
                         const struct serve_workload *sw, const struct efficiency *e, double price_usd_per_hour,
                         struct compare_row *out)
{
    int64_t racks = (budget_devices + t->domain_devices - 1) / t->domain_devices;
    *out = (struct compare_row){.racks = racks > 0 ? racks : t->default_domains, .domain_size = t->domain_devices,
                                .serving = true};
    out->devices = out->budget_devices = budget_devices > 0 ? budget_devices : out->racks * t->domain_devices;
    if (budget_devices <= 0)
        out->budget_devices = 0;
    out->efficiency = e ? *e : EFFICIENCY_BOUND;
    out->estimate = !efficiency_is_bound(&out->efficiency);
    out->price_usd_per_hour = price_usd_per_hour > 0 ? price_usd_per_hour : t->price_usd_per_hour;
    struct workload held = *w;
    held.batch = 1;
    held.context = sw->isl + sw->osl;
    struct fit fit;
    if (plan_fit(m, t, out->racks, &held, &fit))
        out->min_devices = fit.min_devices;
    struct serve_pool pool = {.model = m, .topology = t, .precisions = *w, .efficiency = out->efficiency,
                              .budget_devices = budget_devices, .price_usd_per_hour = out->price_usd_per_hour};
    struct serve_result r;
    if (!serve_search(&pool, NULL, sw, &r))
        return false;
    out->fits = r.reached || r.frontier_count > 0 || r.found; /* some deployment holds it */
    out->tpot_met = r.found;
    const struct serve_point *reachable;
    out->binding = serve_binding_target(sw, &r, &reachable);
    if (reachable)
        out->reachable_s = out->binding == SERVE_BINDS_TTFT ? reachable->ttft_s : reachable->tpot_s;
    out->frontier = r.frontier;
    out->frontier_count = r.frontier_count;
    r.frontier = NULL;
    r.frontier_count = 0;
    serve_result_release(&r);
    if (!r.found)
        return true;
    out->served = r.best;
    out->layout = r.best.decode.layout;
    out->batch = r.best.decode.batch;
    out->point = r.best.decode.point;
    out->point.tokens_per_s_per_device = r.best.tokens_per_s_per_device;
    out->point.tokens_per_s = r.best.tokens_per_s_per_device * (double)r.best.devices;
    out->point.cost_per_mtok = r.best.cost_per_mtok;
    out->devices = r.best.devices;
    out->max_batch = out->batch;
    out->cost_per_mtok = r.best.cost_per_mtok;
    out->joules_per_token = r.best.joules_per_token;
    out->tokens_per_s_per_rack = r.best.tokens_per_s_per_device * (double)t->domain_devices;
    /* the floor of the chosen decode instance, on the links it has (serve.h's shapes) */
    struct topology instance = *t; /* topology_slice writes it only when it slices */
    if (out->layout.racks == 1)
        topology_slice(t, out->layout.devices, &instance);
    struct graph_summary g;
    if (graph_analyse(&instance, out->layout.racks, &g) != GRAPH_OK)
        return false;
    struct roof_setup s = {.model = m, .topology = &instance, .graph = &g, .layout = out->layout, .workload = held,
                           .efficiency = out->efficiency};
    out->latency_floor_s = roof_latency_floor_s(&s);
    if (model_is_moe(m) && out->layout.ep > t->domain_devices)
        out->all_to_all_outside = roof_remote_domains_per_token(m, (double)out->layout.ep / (double)t->domain_devices) /
                                  (double)m->moe.experts_per_token;
    return true;
}

bool compare_row_with_bound(const struct model *m, const struct topology *t, int64_t racks, int64_t budget_devices,
                            const struct workload *w, const struct serve_workload *sw, const struct efficiency *e,
                            double tpot_s, double price_usd_per_hour, struct compare_row *out)
{
    bool serving = sw && sw->isl > 0, estimated = e && !efficiency_is_bound(e);
    struct compare_row bound;
    bool built = serving ? compare_serving_row(m, t, budget_devices, w, sw, e, price_usd_per_hour, out)
                         : compare_row(m, t, racks, w, e, tpot_s, price_usd_per_hour, out);
    if (!built)
        return false;
    if (estimated && !(serving ? compare_serving_row(m, t, budget_devices, w, sw, NULL, price_usd_per_hour, &bound)
                               : compare_row(m, t, racks, w, NULL, tpot_s, price_usd_per_hour, &bound))) {
        compare_row_release(&bound); /* both fill it before they can fail */
        return false;
    }
    if (!estimated)
        bound = *out;
    out->bound_tokens_per_s_per_device = bound.point.tokens_per_s_per_device;
    out->bound_latency_floor_s = bound.latency_floor_s;
    if (estimated)
        compare_row_release(&bound);
    return true;
}

struct rows_job {
    const struct model *m;
    const struct workload *w;
    const struct serve_workload *sw;
    double tpot_s;
    struct compare_task *tasks;
    int64_t count, first, stride;
    bool ok;
};

static void *rows_work(void *arg)
{
    struct rows_job *j = arg;
    j->ok = true;
    for (int64_t i = j->first; i < j->count; i += j->stride) {
        struct compare_task *k = &j->tasks[i];
        j->ok &= compare_row_with_bound(j->m, k->t, k->racks, k->budget_devices, j->w, j->sw, &k->efficiency,
                                        j->tpot_s, k->price_usd_per_hour, k->out);
    }
    return NULL;
}

bool compare_rows(const struct model *m, const struct workload *w, const struct serve_workload *sw, double tpot_s,
                  struct compare_task *tasks, int64_t count)
{
    struct rows_job jobs[COMPARE_THREADS];
    pthread_t threads[COMPARE_THREADS];
    bool started[COMPARE_THREADS] = {false};
    int64_t n = count < COMPARE_THREADS ? count : COMPARE_THREADS;
    for (int64_t i = 0; i < n; i++) {
        jobs[i] = (struct rows_job){.m = m, .w = w, .sw = sw, .tpot_s = tpot_s, .tasks = tasks, .count = count,
                                    .first = i, .stride = n};
        if (i > 0)
            started[i] = pthread_create(&threads[i], NULL, rows_work, &jobs[i]) == 0;
    }
    for (int64_t i = 0; i < n; i++)
        if (!started[i]) /* this thread's share, and any a helper could not take */
            rows_work(&jobs[i]);
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        if (started[i])
            pthread_join(threads[i], NULL);
        ok &= jobs[i].ok;
    }
    return ok;
}

void compare_row_release(struct compare_row *row)
{
    free(row->frontier);
    row->frontier = NULL;
    row->frontier_count = 0;
}

bool compare_sweep(const struct model *m, const struct topology *t, const struct compare_row *row,
                   const struct workload *w, const int64_t *batches, int64_t count,
                   struct roof_point *out)
{
    struct graph_summary g;
    if (graph_analyse(t, row->racks, &g) != GRAPH_OK)
        return false;
    struct roof_setup s = {.model = m, .topology = t, .graph = &g, .layout = row->layout, .workload = *w,
                           .efficiency = row->efficiency};
    for (int64_t i = 0; i < count; i++) {
        roof_decode(&s, batches[i], &out[i]);
        double rate = out[i].tokens_per_s;
        out[i].cost_per_mtok = row->price_usd_per_hour > 0 && rate > 0
                                   ? row->price_usd_per_hour * (double)row->devices / 3600 / rate * 1e6
                                   : 0;
    }
    return true;
}

/* A number as the CSV shows it (9 significant digits): rows are ordered by these, so that
 * rackplan merge rebuilds the order of a sharded run from its CSV. */
static double shown(double value)
{
    char text[32];
    snprintf(text, sizeof text, "%.9g", value);
    return strtod(text, NULL);
}

static const struct compare_row *sorted_rows;

static int better_first(const void *a, const void *b)
{
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    const struct compare_row *x = &sorted_rows[i], *y = &sorted_rows[j];
    bool x_ok = x->fits && x->tpot_met, y_ok = y->fits && y->tpot_met;
    if (x_ok != y_ok)
        return x_ok ? -1 : 1;
    if (x_ok) {
        bool x_cost = x->cost_per_mtok > 0, y_cost = y->cost_per_mtok > 0;
        if (x_cost != y_cost)
            return x_cost ? -1 : 1;
        double xc = shown(x->cost_per_mtok), yc = shown(y->cost_per_mtok);
        if (x_cost && xc != yc)
            return xc < yc ? -1 : 1;
        double xr = shown(x->point.tokens_per_s_per_device), yr = shown(y->point.tokens_per_s_per_device);
        if (xr != yr)
            return xr > yr ? -1 : 1;
    }
    return i < j ? -1 : i > j;
}

void compare_order(const struct compare_row *rows, int64_t count, int64_t *order)
{
    for (int64_t i = 0; i < count; i++)
        order[i] = i;
    sorted_rows = rows;
    qsort(order, (size_t)count, sizeof *order, better_first);
    sorted_rows = NULL;
}
