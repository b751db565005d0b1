/* calibrate.c: see calibrate.h. */
#include "calibrate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double lowest_efficiency = 0.01; /* the schema's floor */
static const double longest_overhead_s = 0.2;
/* Priors for the network factors, from DeepEP's published H800 measurements
 * (github.com/deepseek-ai/DeepEP, README and docs/legacy.md): normal kernels reach 153-158 GB/s
 * over NVLink of 200 GB/s per direction (~155: 0.775), and 43-58 GB/s over RDMA of a ~50 GB/s
 * NIC (its peak: 1). With a weight of 0.01 instead of 1 the deployments pull scale-up to
 * about 0.26, which no NVLink measurement supports and which makes TP-heavy estimates
 * network-bound, and the leave-one-out error rises (25% against 23%). */
static const double scale_up_prior = 0.775;
static const double scale_out_prior = 1;

bool calibrate_prepare(struct measurement *m, int count, char *why, size_t size)
{
    for (int i = 0; i < count; i++) {
        struct measurement *x = &m[i];
        if (x->devices > x->topology->domain_devices) {
            snprintf(why, size, "%s: %lld devices are more than a scale-up domain of %s (%lld): give racks",
                     x->id, (long long)x->devices, x->topology->name, (long long)x->topology->domain_devices);
            return false;
        }
        int64_t devices = x->devices > 0 ? x->devices : x->racks * x->topology->domain_devices;
        struct workload w = x->workload;
        w.batch = 1;
        if (!plan_choose_layout(x->model, x->topology, x->racks, devices, &w, &x->layout)) {
            snprintf(why, size, "%s: no layout with TP %lld and PP %lld on %lld devices", x->id,
                     (long long)w.tp, (long long)w.pp, (long long)devices);
            return false;
        }
        x->max_batch = plan_max_batch(x->model, x->topology, &x->layout, &x->workload);
        if (x->batch_limit > 0 && x->max_batch > x->batch_limit)
            x->max_batch = x->batch_limit;
        if (x->max_batch < 1 || (x->batch > 0 && !x->prefill && x->batch > x->max_batch)) {
            snprintf(why, size, "%s: %lld sequences of %lld tokens do not fit (at most %lld)", x->id,
                     (long long)(x->batch > 0 ? x->batch : 1), (long long)x->workload.context,
                     (long long)x->max_batch);
            return false;
        }
        if (graph_analyse(x->topology, x->racks, &x->graph) != GRAPH_OK) {
            snprintf(why, size, "%s: the interconnect graph could not be built (out of memory)", x->id);
            return false;
        }
        x->group = -1;
        for (int g = 0; g < i && x->group < 0; g++)
            if (strcmp(m[g].topology->accelerator, x->topology->accelerator) == 0 &&
                m[g].workload.weights == x->workload.weights)
                x->group = m[g].group;
        if (x->group < 0) {
            int groups = 0;
            for (int g = 0; g < i; g++)
                groups = m[g].group + 1 > groups ? m[g].group + 1 : groups;
            if (groups >= CALIBRATE_MAX_GROUPS) {
                snprintf(why, size, "%s: more than %d accelerator and precision groups", x->id,
                         CALIBRATE_MAX_GROUPS);
                return false;
            }
            x->group = groups;
        }
    }
    return true;
}

static struct roof_setup setup_of(const struct measurement *m, const struct efficiency *e)
{
    return (struct roof_setup){.model = m->model, .topology = m->topology, .graph = &m->graph,
                               .layout = m->layout, .workload = m->workload, .efficiency = *e};
}

/* Seconds of prefill per prompt token, cluster-wide, at 16,384 prompt tokens a device a step;
 * 0 when the devices do not prefill. */
static double prefill_s_per_token(const struct measurement *m, const struct roof_setup *s)
{
    if (m->prompt <= 0 || m->output <= 0)
        return 0;
    int64_t prompt = (int64_t)llround(m->prompt);
    double prompts = fmax(1, round((double)CALIBRATE_PREFILL_TOKENS_PER_DEVICE * (double)m->layout.devices / m->prompt));
    struct roof_point fill;
    roof_prefill(s, (int64_t)prompts, prompt, &fill);
    return fill.step_s / (prompts * (double)prompt);
}

/* A decode step of `batch` sequences with the prefill that keeps the batch full: each step
 * batch / output requests end and as many prompts are prefilled (chunked, within the step). */
static double step_with_prefill(const struct measurement *m, const struct roof_setup *s, int64_t batch,
                                double per_token_s)
{
    struct roof_point p;
    roof_decode(s, batch, &p);
    return p.step_s + (per_token_s > 0 ? (double)batch / m->output * m->prompt * per_token_s : 0);
}

/* The largest batch in [1, most] whose step is within tpot_s (it never falls as the batch
 * grows); 0: none. */
static int64_t batch_within(const struct measurement *m, const struct roof_setup *s, int64_t most,
                            double per_token_s)
{
    if (step_with_prefill(m, s, 1, per_token_s) > m->tpot_s)
        return 0;
    int64_t low = 1, high = most;
    while (low < high) {
        int64_t mid = low + (high - low + 1) / 2;
        if (step_with_prefill(m, s, mid, per_token_s) <= m->tpot_s)
            low = mid;
        else
            high = mid - 1;
    }
    return low;
}

double calibrate_predict(const struct measurement *m, const struct efficiency *e, bool with_prefill,
                         int64_t *batch_out)
{
    struct roof_setup s = setup_of(m, e);
    if (m->prefill) {
        struct roof_point p;
        if (batch_out)
            *batch_out = m->batch;
        roof_prefill(&s, m->batch, m->workload.context, &p);
        return p.tokens_per_s_per_device;
    }
    double per_token_s = with_prefill ? prefill_s_per_token(m, &s) : 0;
    int64_t batch = m->batch > 0   ? m->batch
                    : m->tpot_s > 0 ? batch_within(m, &s, m->max_batch, per_token_s)
                                    : m->max_batch;
    if (batch_out)
        *batch_out = batch;
    if (batch < 1)
        return 0;
    return (double)batch / step_with_prefill(m, &s, batch, per_token_s) / (double)m->layout.devices;
}

struct efficiency calibration_efficiency(const struct calibration_fit *f, int group)
{
    double compute = group >= 0 ? f->groups[group].compute : f->compute;
    double memory = group >= 0 ? f->groups[group].memory : f->memory;
    return (struct efficiency){compute, memory, f->scale_up, f->scale_out, f->step_overhead_s, f->experts};
}

/* The fit in progress: its factors and each measurement's squared log error under them. */
struct state {
    const struct measurement *m;
    int count;
    const bool *use;
    struct calibration_fit fit;
    double residual[CALIBRATE_MAX_MEASUREMENTS];
};

static double squared_log_error(const struct state *s, int i)
{
    struct efficiency e = calibration_efficiency(&s->fit, s->m[i].group);
    double predicted = calibrate_predict(&s->m[i], &e, true, NULL);
    double error = log(fmax(predicted, 1e-9) / s->m[i].measured);
    return error * error;
}

/* Recomputes the residuals of group `group` (-1: all). */
static void refresh(struct state *s, int group)
{
    for (int i = 0; i < s->count; i++)
        if ((!s->use || s->use[i]) && (group < 0 || s->m[i].group == group))
            s->residual[i] = squared_log_error(s, i);
}

static void pool(struct calibration_fit *f)
{
    double compute = 0, memory = 0;
    for (int g = 0; g < f->group_count; g++) {
        compute += log(f->groups[g].compute);
        memory += log(f->groups[g].memory);
    }
    f->compute = exp(compute / f->group_count);
    f->memory = exp(memory / f->group_count);
}

static double objective(const struct state *s)
{
    double sum = 0;
    for (int i = 0; i < s->count; i++)
        if (!s->use || s->use[i])
            sum += s->residual[i];
    const struct calibration_fit *f = &s->fit;
    for (int g = 0; g < f->group_count; g++) {
        double c = log(f->groups[g].compute / f->compute), m = log(f->groups[g].memory / f->memory);
        sum += CALIBRATE_SHRINK * (c * c + m * m);
    }
    double up = log(f->scale_up / scale_up_prior), out = log(f->scale_out / scale_out_prior);
    return sum + CALIBRATE_NETWORK_PRIOR * (up * up + out * out);
}

/* A direction the descent moves along: factors scaled together by e^v (clamped to [0.01, 1]),
 * or one factor set to v (the overhead, in seconds). */
struct move {
    double *factor[2 * CALIBRATE_MAX_GROUPS + 3];
    double base[2 * CALIBRATE_MAX_GROUPS + 3];
    int count;
    bool linear;
    int group; /* the measurements it touches: a group's, or -1: all */
};

static double try_value(struct state *s, const struct move *mv, double value)
{
    for (int i = 0; i < mv->count; i++)
        *mv->factor[i] = mv->linear ? value : fmin(1, fmax(lowest_efficiency, mv->base[i] * exp(value)));
    pool(&s->fit);
    refresh(s, mv->group);
    return objective(s);
}

/* Minimises along one move: the best of a grid over its range, then golden section between
 * that point's neighbours; stays put unless another point is lower. */
static bool descend(struct state *s, struct move *mv)
{
    enum { GRID = 21, GOLDEN = 24 };
    for (int i = 0; i < mv->count; i++)
        mv->base[i] = *mv->factor[i];
    double low = mv->linear ? 0 : log(lowest_efficiency), high = mv->linear ? longest_overhead_s : -low;
    double old = mv->linear ? *mv->factor[0] : 0;
    double best_value = old, best = try_value(s, mv, old);
    double start = best, spacing = (high - low) / (GRID - 1);
    for (int k = 0; k < GRID; k++) {
        double v = low + spacing * k;
        double f = try_value(s, mv, v);
        if (f < best - 1e-15) {
            best = f;
            best_value = v;
        }
    }
    {
        double a = fmax(low, best_value - spacing), b = fmin(high, best_value + spacing);
        const double ratio = (sqrt(5) - 1) / 2;
        double c = b - ratio * (b - a), d = a + ratio * (b - a);
        double fc = try_value(s, mv, c), fd = try_value(s, mv, d);
        for (int k = 0; k < GOLDEN; k++) {
            if (fc < fd) {
                b = d;
                d = c;
                fd = fc;
                c = b - ratio * (b - a);
                fc = try_value(s, mv, c);
            } else {
                a = c;
                c = d;
                fc = fd;
                d = a + ratio * (b - a);
                fd = try_value(s, mv, d);
            }
        }
        double v = fc < fd ? c : d, f = fc < fd ? fc : fd;
        if (f < best - 1e-15) {
            best = f;
            best_value = v;
        }
    }
    try_value(s, mv, best_value);
    return best < start - 1e-12;
}

static bool descend_one(struct state *s, double *factor, int group)
{
    struct move mv = {.factor = {factor}, .count = 1, .group = group};
    return descend(s, &mv);
}

static void open_state(struct state *s, const struct measurement *m, int count, const bool *use)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    s->count = count < CALIBRATE_MAX_MEASUREMENTS ? count : CALIBRATE_MAX_MEASUREMENTS;
    s->use = use;
}

double calibrate_objective(const struct measurement *m, int count, const bool *use, const struct calibration_fit *f)
{
    struct state s;
    open_state(&s, m, count, use);
    s.fit = *f;
    pool(&s.fit);
    refresh(&s, -1);
    return objective(&s);
}

/* One descent from every efficiency at `start`, or from the factors of `from`. */
static void descend_from(const struct measurement *m, int count, const bool *use, double start,
                         double experts_start, const struct calibration_fit *from, struct calibration_fit *out)
{
    struct state s;
    open_state(&s, m, count, use);
    struct calibration_fit *f = &s.fit;
    for (int i = 0; i < s.count; i++) {
        int g = m[i].group;
        if (g + 1 > f->group_count)
            f->group_count = g + 1;
        f->groups[g].topology = m[i].topology;
        f->groups[g].weights = m[i].workload.weights;
        f->groups[g].compute = from ? from->groups[g].compute : start;
        f->groups[g].memory = from ? from->groups[g].memory : start;
        if (!use || use[i])
            f->groups[g].measurements++;
    }
    f->scale_up = from ? from->scale_up : start;
    f->scale_out = from ? from->scale_out : start;
    f->step_overhead_s = from ? from->step_overhead_s : 0;
    f->experts = from ? from->experts : experts_start;
    pool(f);
    refresh(&s, -1);
    for (f->sweeps = 0; f->sweeps < 60; f->sweeps++) {
        double before = objective(&s);
        bool better = false;
        struct move all = {.group = -1};
        for (int g = 0; g < f->group_count; g++) {
            better |= descend_one(&s, &f->groups[g].compute, g);
            better |= descend_one(&s, &f->groups[g].memory, g);
            /* along the ridge where compute and memory bind in turn, neither moves alone */
            struct move both = {.factor = {&f->groups[g].compute, &f->groups[g].memory}, .count = 2, .group = g};
            better |= descend(&s, &both);
            all.factor[all.count++] = &f->groups[g].compute;
            all.factor[all.count++] = &f->groups[g].memory;
        }
        better |= descend_one(&s, &f->experts, -1);
        better |= descend_one(&s, &f->scale_up, -1);
        better |= descend_one(&s, &f->scale_out, -1);
        all.factor[all.count++] = &f->scale_up;
        all.factor[all.count++] = &f->scale_out;
        all.factor[all.count++] = &f->experts;
        better |= descend(&s, &all);
        struct move overhead = {.factor = {&f->step_overhead_s}, .count = 1, .linear = true, .group = -1};
        better |= descend(&s, &overhead);
        /* a sweep that gains under a millionth of the objective ends the descent: the tail of
         * tiny gains took most of the time and moved no estimate by 0.1% */
        if (!better || before - objective(&s) < 1e-6 * before)
            break;
    }
    f->objective = objective(&s);
    *out = *f;
}

void calibrate_fit(const struct measurement *m, int count, const bool *use, const struct calibration_fit *from,
                   struct calibration_fit *out)
{
    if (from) {
        descend_from(m, count, use, 0, 0, from, out);
        return;
    }
    /* the objective has several local minima (a max of terms, and flat directions): the best of
     * descents from low, middle and high efficiencies */
    /* the routed experts' factor starts at 1, what dense-only data leaves it at (no further
     * cut), and once at 0.5 */
    static const double starts[][2] = {{0.2, 1}, {0.5, 1}, {0.9, 1}, {0.5, 0.5}};
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        struct calibration_fit f;
        descend_from(m, count, use, starts[k][0], starts[k][1], NULL, &f);
        if (k == 0 || f.objective < out->objective - 1e-12)
            *out = f;
    }
}
