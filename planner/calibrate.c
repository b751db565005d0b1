/* calibrate.c: see calibrate.h. */
#include "calibrate.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const double lowest_efficiency = 0.01; /* the schema's floor */
static const double highest_latency = 100; /* the schema's ceiling */
/* 200 us of host time a sequence a step: vLLM 0.5.3 spent 62% of a Llama 3 8B step on one H100
 * on the host (blog.vllm.ai/2024/09/05/perf-update.html), a few ms over its batch */
static const double longest_sequence_s = 200e-6;
/* Priors for the network factors, from DeepEP's published H800 measurements
 * (github.com/deepseek-ai/DeepEP, README and docs/legacy.md): normal kernels reach 153-158 GB/s
 * over NVLink of 200 GB/s per direction (~155: 0.775), and 43-58 GB/s over RDMA of a ~50 GB/s
 * NIC (its peak: 1). With a weight of 0.01 instead of 1 the deployments pull scale-up to
 * about 0.26, which no NVLink measurement supports and which makes TP-heavy estimates
 * network-bound, and the leave-one-out error rises (25% against 23%). */
static const double scale_up_prior = 0.775;
static const double scale_out_prior = 1;
/* The latency factor's prior: measured batch-1 steps leave 95-125 us a layer beyond streaming the
 * weights on H100 and MI300X (facts B2: Llama 3.1 405B and 70B, TensorRT-LLM and vLLM), where the
 * chain of roofline.h counts 41-42 us a layer (8 kernels at 3.7 us, two all-reduces at 5.9-6.3
 * us): about 2.5 times the floors. */
static const double latency_prior = 2.5;

static struct serve_workload workload_of(const struct measurement *m);

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
        if (x->isl > 0) { /* HBM holds a sequence at its longest (a mix: the reservation's mean) */
            struct serve_workload sw = workload_of(x);
            x->workload.context = serve_held_context(&sw);
        }
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
            if (strcmp(m[g].topology->family, x->topology->family) == 0 &&
                m[g].workload.weights == x->workload.weights)
                x->group = m[g].group;
        if (x->group < 0) {
            int groups = 0;
            for (int g = 0; g < i; g++)
                groups = m[g].group + 1 > groups ? m[g].group + 1 : groups;
            if (groups >= CALIBRATE_MAX_GROUPS) {
                snprintf(why, size, "%s: more than %d family and precision groups", x->id,
                         CALIBRATE_MAX_GROUPS);
                return false;
            }
            x->group = groups;
        }
    }
    return true;
}

enum calibration_class calibrate_class(const struct measurement *m)
{
    if (m->prefill || (m->batch < 1 && m->tpot_s <= 0))
        return CALIBRATION_OFFLINE;
    double tpot = m->tpot_s;
    if (m->batch >= 1) {
        double devices = (double)(m->devices > 0 ? m->devices : m->racks * m->topology->domain_devices);
        tpot = (double)m->batch / (m->measured * devices);
    }
    return tpot <= CALIBRATE_INTERACTIVE_S ? CALIBRATION_INTERACTIVE : CALIBRATION_RELAXED;
}

const char *calibration_class_name(enum calibration_class c)
{
    static const char *const names[CALIBRATION_CLASSES] = {"offline", "relaxed", "interactive"};
    return names[c];
}

/* The measurement as the serving engine sees it: its pool and its workload. A decode measurement
 * without isl and osl (a disaggregated decode pool) reads its KV at `context`; a prefill one
 * prefills prompts of `context` tokens. */
static struct serve_pool pool_of(const struct measurement *m, const struct efficiency *e)
{
    return (struct serve_pool){.model = m->model, .topology = m->topology, .precisions = m->workload,
                               .efficiency = *e};
}

static struct serve_workload workload_of(const struct measurement *m)
{
    if (m->isl > 0) {
        struct serve_workload w = {.isl = m->isl, .osl = m->osl, .ttft_s = m->ttft_s, .tpot_s = m->tpot_s,
                                   .chunk_tokens = m->chunk_tokens > 0 ? m->chunk_tokens : SERVE_DEFAULT_CHUNK_TOKENS,
                                   .mode = SERVE_AGGREGATED, .arrivals = m->arrivals, .percentile = m->percentile,
                                   .max_tokens = m->max_tokens,
                                   /* a row's isl and osl are the means of its requests' lengths,
                                    * which vary in every published run but a few fixed-length ones
                                    * (serve.h, "Steps as they come") */
                                   .spread_starts = true};
        if (m->lengths)
            serve_workload_set_lengths(&w, m->lengths);
        return w;
    }
    /* osl 0: a decode step reads the KV at isl + 0 = context; a decode unit measured as a whole
     * holds its batch (closed) */
    return (struct serve_workload){.isl = m->workload.context, .osl = 0, .tpot_s = m->tpot_s,
                                   .chunk_tokens = SERVE_DEFAULT_CHUNK_TOKENS, .mode = SERVE_DISAGGREGATED,
                                   .arrivals = SERVE_CLOSED};
}

/* Tokens/s per device at `batch`: aggregated serving's output tokens (prefill included), a
 * decode pool's, or a prefill's prompt tokens. */
static double rate_at(const struct measurement *m, const struct serve_pool *pool, const struct serve_workload *w,
                      int64_t batch)
{
    struct roof_point p;
    if (m->isl > 0) /* the steps as they come, not their mean */
        return serve_aggregated_rate(pool, &m->graph, &m->layout, w, batch);
    if (m->prefill)
        serve_prefill_step(pool, &m->graph, &m->layout, w, batch, &p);
    else
        serve_decode_step(pool, &m->graph, &m->layout, w, batch, &p);
    return p.tokens_per_s_per_device;
}

double calibrate_predict(const struct measurement *m, const struct efficiency *e, int64_t *batch_out)
{
    struct serve_pool pool = pool_of(m, e);
    struct serve_workload w = workload_of(m);
    /* aggregated serving: the largest batch that fits, whose prefill fits the chunk budget and
     * whose step meets the targets; a decode pool: the largest within its TPOT */
    int64_t batch = m->batch;
    if (batch < 1 && m->isl > 0)
        batch = serve_largest_batch(&pool, &m->graph, &m->layout, &w, m->max_batch);
    else if (batch < 1 && m->tpot_s > 0)
        batch = serve_largest_decode_batch(&pool, &m->graph, &m->layout, &w, m->max_batch);
    else if (batch < 1)
        batch = m->max_batch;
    if (batch_out)
        *batch_out = batch;
    return batch < 1 ? 0 : rate_at(m, &pool, &w, batch);
}

struct efficiency calibration_efficiency(const struct calibration_fit *f, int group)
{
    double compute = group >= 0 ? f->groups[group].compute : f->compute;
    double memory = group >= 0 ? f->groups[group].memory : f->memory;
    double latency = group >= 0 ? f->groups[group].latency : f->latency;
    double sequence_s = group >= 0 ? f->groups[group].sequence_s : f->sequence_s;
    return (struct efficiency){compute, memory, f->scale_up, f->scale_out, f->step_overhead_s, f->experts, latency,
                               sequence_s};
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
    double predicted = calibrate_predict(&s->m[i], &e, NULL);
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
    double compute = 0, memory = 0, latency = 0;
    for (int g = 0; g < f->group_count; g++) {
        compute += log(f->groups[g].compute);
        memory += log(f->groups[g].memory);
        latency += log(f->groups[g].latency);
    }
    f->compute = exp(compute / f->group_count);
    f->memory = exp(memory / f->group_count);
    f->latency = exp(latency / f->group_count);
    double host = 0;
    for (int g = 0; g < f->group_count; g++)
        host += f->groups[g].sequence_s;
    f->sequence_s = host / f->group_count;
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
        double l = log(f->groups[g].latency / f->latency), p = log(f->groups[g].latency / latency_prior);
        sum += CALIBRATE_SHRINK * (c * c + m * m + l * l) + CALIBRATE_LATENCY_PRIOR * p * p;
    }
    double up = log(f->scale_up / scale_up_prior), out = log(f->scale_out / scale_out_prior);
    return sum + CALIBRATE_NETWORK_PRIOR * (up * up + out * out);
}

/* A direction the descent moves along: factors scaled together by e^v, clamped to [0.01, 1]
 * (efficiencies) or, with `latency`, to [1, 100] (latency factors). */
struct move {
    double *factor[2 * CALIBRATE_MAX_GROUPS + 3];
    double base[2 * CALIBRATE_MAX_GROUPS + 3];
    int count;
    bool latency;
    bool linear; /* the factors set to v in [0, longest_sequence_s]: the host time a sequence */
    int group;   /* the measurements it touches: a group's, or -1: all */
};
static double try_value(struct state *s, const struct move *mv, double value)
{
    for (int i = 0; i < mv->count; i++)
        *mv->factor[i] = mv->linear    ? value
                         : mv->latency ? fmin(highest_latency, fmax(1, mv->base[i] * exp(value)))
                                       : fmin(1, fmax(lowest_efficiency, mv->base[i] * exp(value)));
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
    double low = mv->linear ? 0 : log(lowest_efficiency), high = mv->linear ? longest_sequence_s : -low;
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
        f->groups[g].latency = from ? from->groups[g].latency : 1;
        f->groups[g].sequence_s = from ? from->groups[g].sequence_s : 0;
        if (!use || use[i])
            f->groups[g].measurements++;
    }
    f->scale_up = from ? from->scale_up : start;
    f->scale_out = from ? from->scale_out : start;
    f->step_overhead_s = 0;
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
            struct move latency = {.factor = {&f->groups[g].latency}, .count = 1, .latency = true, .group = g};
            better |= descend(&s, &latency);
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
        /* one host time for every group: the same serving stacks' schedulers and samplers */
        struct move host = {.linear = true, .group = -1};
        for (int g = 0; g < f->group_count; g++)
            host.factor[host.count++] = &f->groups[g].sequence_s;
        better |= descend(&s, &host);
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

struct left_out_work {
    const struct measurement *m;
    int count;
    const struct calibration_fit *fit;
    void (*round)(struct calibration_fit *);
    double *out;
    atomic_int next;
};

static void *left_out_worker(void *data)
{
    struct left_out_work *w = data;
    bool use[CALIBRATE_MAX_MEASUREMENTS];
    for (;;) {
        int i = atomic_fetch_add(&w->next, 1);
        if (i >= w->count)
            break;
        for (int k = 0; k < w->count; k++)
            use[k] = k != i;
        struct calibration_fit without;
        calibrate_fit(w->m, w->count, use, w->fit, &without);
        if (w->round)
            w->round(&without);
        int group = w->m[i].group;
        struct efficiency e = calibration_efficiency(&without, without.groups[group].measurements > 0 ? group : -1);
        w->out[i] = calibrate_predict(&w->m[i], &e, NULL);
    }
    return NULL;
}

void calibrate_left_out(const struct measurement *m, int count, const struct calibration_fit *fit,
                        void (*round)(struct calibration_fit *), double *out)
{
    enum { MOST_THREADS = 8 };
    struct left_out_work w = {.m = m, .count = count < CALIBRATE_MAX_MEASUREMENTS ? count : CALIBRATE_MAX_MEASUREMENTS,
                              .fit = fit, .round = round, .out = out};
    atomic_init(&w.next, 0);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores < 1 ? 1 : cores > MOST_THREADS ? MOST_THREADS : (int)cores;
    pthread_t helper[MOST_THREADS];
    int started = 0;
    while (started + 1 < threads && pthread_create(&helper[started], NULL, left_out_worker, &w) == 0)
        started++;
    left_out_worker(&w);
    for (int i = 0; i < started; i++)
        pthread_join(helper[i], NULL);
}
