/* serve.c: see serve.h. */
#include "serve.h"

#include "graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *serve_mode_name(enum serve_mode mode)
{
    static const char *const names[] = {"aggregated", "disaggregated", "best"};
    return names[mode];
}

double serve_tokens_per_step(const struct serve_workload *w)
{
    if (w->mtp <= 0)
        return 1;
    double p = w->mtp_accept, tokens = 1, term = 1;
    for (int64_t i = 0; i < w->mtp; i++) {
        term *= p;
        tokens += term;
    }
    return tokens;
}

static double prefilled_tokens(const struct serve_workload *w)
{
    return (double)w->isl * (1 - w->prefix_hit);
}

/* The mean context a decode token attends to: the KV grows from isl to isl + osl. */
static int64_t decode_context(const struct serve_workload *w)
{
    return w->isl + w->osl / 2;
}

/* A prompt token computed in prefill attends on average to the cached prefix and half of the
 * rest. */
static int64_t prefill_context(const struct serve_workload *w)
{
    int64_t context = (int64_t)llround((double)w->isl - prefilled_tokens(w) / 2);
    return context > 0 ? context : 1;
}

static struct roof_setup setup_of(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l)
{
    return (struct roof_setup){.model = pool->model, .topology = pool->topology, .graph = g, .layout = *l,
                               .workload = pool->precisions, .efficiency = pool->efficiency,
                               .expert_imbalance = pool->expert_imbalance};
}

/* Whether `sequences` sequences (or prompts) of `context` tokens fit in HBM on layout `l`. */
static bool holds(const struct serve_pool *pool, const struct topology *t, const struct layout *l, int64_t sequences,
                  int64_t context)
{
    struct workload w = pool->precisions;
    w.batch = sequences;
    w.context = context;
    struct device_memory mem;
    plan_memory(pool->model, t, l, &w, &mem);
    return mem.free_bytes >= 0;
}

static double cost_per_mtok(double usd_per_hour_all, double tokens_per_s)
{
    return usd_per_hour_all > 0 && tokens_per_s > 0 ? usd_per_hour_all / 3600 / tokens_per_s * 1e6 : 0;
}

/* A step's rates from the tokens it makes: in all, per device of layout `l`, and their cost. */
static void set_rates(const struct serve_pool *pool, const struct layout *l, double tokens, struct roof_point *out)
{
    out->tokens_per_s = tokens / out->step_s;
    out->tokens_per_s_per_device = out->tokens_per_s / (double)l->devices;
    out->cost_per_mtok = cost_per_mtok(pool->price_usd_per_hour * (double)l->devices, out->tokens_per_s);
}

/* A step of `batch` decode sequences (K + 1 tokens each with K drafts) and `prefill` prompt
 * tokens spread over the ranks, as whole prompts' worth of chunks at the mean prefill context. */
static struct roof_step mixed_step(const struct serve_workload *w, int64_t batch, double prefill)
{
    double computed = prefilled_tokens(w), drafts = (double)(w->mtp > 0 ? w->mtp : 0);
    return (struct roof_step){.sequences = (double)batch, .tokens_per_sequence = 1 + drafts, .draft_passes = drafts,
                              .context = decode_context(w), .prefill_prompts = computed > 0 ? prefill / computed : 0,
                              .prefill_tokens_per_prompt = computed, .prefill_context = prefill_context(w)};
}

/* The prompt tokens an aggregated step of `batch` sequences carries: y B isl_eff / osl. */
static double step_prefill_tokens(const struct serve_workload *w, int64_t batch)
{
    return serve_tokens_per_step(w) * (double)batch * prefilled_tokens(w) / (double)w->osl;
}

/* The aggregated step of `batch` sequences; *rank_prefill gets the prefill tokens a DP rank's
 * step carries. */
static void aggregated_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t batch, struct roof_point *out,
                            double *rank_prefill)
{
    double prefill = step_prefill_tokens(w, batch);
    *rank_prefill = prefill / (double)l->dp;
    struct roof_setup s = setup_of(pool, g, l);
    struct roof_step step = mixed_step(w, batch, prefill);
    roof_step(&s, &step, out);
    set_rates(pool, l, serve_tokens_per_step(w) * (double)batch, out);
}

/* An aggregated instance's time to first token: half the mean step `step_s` in progress when the
 * prompt arrives, then the steps that carry its chunks. Such a step holds the decode batch, the
 * chunk (on its rank, which then paces the step) and the rest of the step's mean prefill
 * spread over the ranks. Each chunk's step costs at least the chunk alone, so the sum is never
 * less than the prompt's prefill alone on the instance. The full chunks are priced as that many
 * steps at their mean context, one roof_step instead of one a chunk (a 256k prompt has 32): a
 * step's terms are linear in the chunk's context, so this is exact while one term binds every
 * chunk, below the sum where the binding term changes along the prompt (a max of linear terms
 * is convex), above it where a window or DSA's top-k caps the keys (concave); a prompt of one
 * or two chunks is priced exactly. */
static double chunk_step_s(const struct roof_setup *s, const struct serve_workload *w, int64_t batch, double prefill,
                           double tokens, double context)
{
    struct roof_step step = mixed_step(w, batch, fmax(prefill - tokens, 0));
    step.chunk_tokens = tokens;
    step.chunk_context = (int64_t)llround(context);
    struct roof_point r;
    roof_step(s, &step, &r);
    return r.step_s;
}

static double aggregated_ttft(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                              const struct serve_workload *w, int64_t batch, double step_s)
{
    double computed = prefilled_tokens(w), chunk = (double)w->chunk_tokens;
    double prefill = step_prefill_tokens(w, batch);
    double cached = (double)w->isl - computed;
    struct roof_setup s = setup_of(pool, g, l);
    double full = floor(computed / chunk), rest = computed - full * chunk;
    if (rest <= 0 && full > 0) { /* the last chunk is a full one: priced on its own like a remainder */
        full -= 1;
        rest = chunk;
    }
    double ttft = step_s / 2;
    if (full > 0) /* chunks 0 .. full - 1 at contexts cached + (i + 1/2) C: their mean */
        ttft += full * chunk_step_s(&s, w, batch, prefill, chunk, cached + full * chunk / 2);
    return ttft + chunk_step_s(&s, w, batch, prefill, rest, cached + full * chunk + rest / 2);
}

void serve_aggregated_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                           const struct serve_workload *w, int64_t batch, struct roof_point *out)
{
    double rank_prefill;
    aggregated_step(pool, g, l, w, batch, out, &rank_prefill);
    out->fits = holds(pool, pool->topology, l, batch, w->isl + w->osl) && rank_prefill <= (double)w->chunk_tokens;
}

bool serve_aggregated(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                      const struct serve_workload *w, int64_t batch, struct serve_point *out)
{
    if (batch < 1 || !holds(pool, pool->topology, l, batch, w->isl + w->osl))
        return false;
    struct serve_point p = {.mode = SERVE_AGGREGATED, .decode_instances = 1};
    double rank_prefill, chunk = (double)w->chunk_tokens;
    aggregated_step(pool, g, l, w, batch, &p.decode.point, &rank_prefill);
    if (rank_prefill > chunk)
        return false;
    p.decode.point.fits = true;
    p.decode.layout = *l;
    p.decode.batch = batch;
    double y = serve_tokens_per_step(w);
    double t = p.decode.step_s = p.decode.point.step_s;
    p.decode.requests_per_s = y * (double)batch / t / (double)w->osl;
    p.devices = l->devices;
    p.tpot_s = t / y;
    p.prefill_use = rank_prefill / chunk;
    p.ttft_s = aggregated_ttft(pool, g, l, w, batch, t);
    p.tokens_per_s_per_user = y / t;
    p.tokens_per_s_per_device = p.decode_tokens_per_s_per_device = p.decode.point.tokens_per_s_per_device;
    p.cost_per_mtok = p.decode.point.cost_per_mtok;
    if (pool->topology->power_watts > 0)
        p.joules_per_token = pool->topology->power_watts / p.tokens_per_s_per_device;
    p.meets = (w->ttft_s <= 0 || p.ttft_s <= w->ttft_s) && (w->tpot_s <= 0 || p.tpot_s <= w->tpot_s);
    *out = p;
    return true;
}

void serve_decode_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                       const struct serve_workload *w, int64_t batch, struct roof_point *out)
{
    struct roof_setup s = setup_of(pool, g, l);
    struct roof_step step = mixed_step(w, batch, 0);
    roof_step(&s, &step, out);
    set_rates(pool, l, serve_tokens_per_step(w) * (double)batch, out);
    out->fits = holds(pool, pool->topology, l, batch, w->isl + w->osl);
}

bool serve_decode_instance(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                           const struct serve_workload *w, int64_t batch, struct serve_instance *out)
{
    if (batch < 1)
        return false;
    struct serve_instance d = {.layout = *l, .batch = batch};
    serve_decode_step(pool, g, l, w, batch, &d.point);
    if (!d.point.fits)
        return false;
    d.step_s = d.point.step_s;
    d.requests_per_s = serve_tokens_per_step(w) * (double)batch / d.step_s / (double)w->osl;
    *out = d;
    return true;
}

/* Prompts a DP rank may take in one prefill batch. */
static int64_t prompts_per_rank(const struct serve_workload *w)
{
    int64_t computed = (int64_t)ceil(prefilled_tokens(w));
    int64_t most = computed > 0 ? SERVE_PREFILL_TOKENS_PER_RANK / computed : 1;
    return most > 0 ? most : 1;
}

void serve_prefill_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                        const struct serve_workload *w, int64_t prompts, struct roof_point *out)
{
    struct roof_setup s = setup_of(pool, g, l);
    struct roof_step step = {.sequences = (double)prompts, .tokens_per_sequence = prefilled_tokens(w),
                             .context = prefill_context(w), .prefilling = true};
    roof_step(&s, &step, out);
    set_rates(pool, l, (double)prompts * prefilled_tokens(w), out);
    int64_t rank_prompts = (prompts + l->dp * l->pp - 1) / (l->dp * l->pp);
    out->fits = rank_prompts <= prompts_per_rank(w) && holds(pool, pool->topology, l, prompts, w->isl);
}

bool serve_prefill_instance(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t prompts, struct serve_instance *out)
{
    if (prompts < 1)
        return false;
    struct serve_instance p = {.layout = *l, .batch = prompts};
    serve_prefill_step(pool, g, l, w, prompts, &p.point);
    if (!p.point.fits)
        return false;
    p.step_s = p.point.step_s;
    p.requests_per_s = (double)prompts / p.step_s;
    *out = p;
    return true;
}

/* Devices that hold one sequence's KV: its DP rank's TP group (GQA splits it by KV heads; an MLA
 * latent is whole on each, so one sends it) in every pipeline stage. */
static double kv_holders(const struct model *m, const struct layout *l)
{
    return model_kv_split(m, l->tp) * (double)l->pp;
}

double serve_kv_transfer_s(const struct serve_pool *prefill, const struct layout *pl, const struct serve_pool *decode,
                           const struct layout *dl, const struct serve_workload *w, bool *over_scale_up)
{
    const struct topology *pt = prefill->topology, *dt = decode->topology;
    double bytes = model_sequence_bytes(decode->model, decode->precisions.kv, w->isl);
    bool same_domain = pt == dt && pl->racks == 1 && dl->racks == 1 &&
                       pl->devices + dl->devices <= dt->domain_devices;
    double send, receive, latency;
    if (same_domain) {
        send = topology_scale_up_bytes_per_s(pt) * prefill->efficiency.scale_up;
        receive = topology_scale_up_bytes_per_s(dt) * decode->efficiency.scale_up;
        latency = pt->hop_latency_s;
    } else {
        send = topology_scale_out_bytes_per_s(pt) * prefill->efficiency.scale_out;
        receive = topology_scale_out_bytes_per_s(dt) * decode->efficiency.scale_out;
        latency = fmax(pt->scale_out_latency_s, dt->scale_out_latency_s);
    }
    if (over_scale_up)
        *over_scale_up = same_domain;
    double rate = fmin(kv_holders(prefill->model, pl) * send, kv_holders(decode->model, dl) * receive);
    return bytes / rate + latency;
}

/* The highest use of the prefill pool at which TTFT = S_p (1 + rho / 2) + t_kv meets the target;
 * 1 without a target, <= 0 when not even an idle pool meets it. */
static double prefill_use_limit(const struct serve_workload *w, double prefill_s, double transfer_s)
{
    if (w->ttft_s <= 0)
        return 1;
    return fmin(1, 2 * (w->ttft_s - transfer_s - prefill_s) / prefill_s);
}

static double price_of(const struct serve_pool *pool, double devices)
{
    return pool->price_usd_per_hour > 0 ? pool->price_usd_per_hour * devices : -INFINITY;
}

static void disaggregated_totals(const struct serve_pool *pp, const struct serve_pool *dp, double osl,
                                 struct serve_point *p)
{
    double prefill_devices = (double)(p->prefill_instances * p->prefill.layout.devices);
    double decode_devices = (double)(p->decode_instances * p->decode.layout.devices);
    double tokens_per_s = (double)p->decode_instances * p->decode.requests_per_s * osl;
    p->devices = (int64_t)(prefill_devices + decode_devices);
    p->prefill_use = (double)p->decode_instances * p->decode.requests_per_s /
                     ((double)p->prefill_instances * p->prefill.requests_per_s);
    p->ttft_s = p->prefill.step_s * (1 + p->prefill_use / 2) + p->kv_transfer_s;
    p->tokens_per_s_per_device = tokens_per_s / (prefill_devices + decode_devices);
    p->decode_tokens_per_s_per_device = tokens_per_s / decode_devices;
    double price = price_of(pp, prefill_devices) + price_of(dp, decode_devices);
    p->cost_per_mtok = price > 0 ? cost_per_mtok(price, tokens_per_s) : 0;
    double pw = pp->topology->power_watts, dw = dp->topology->power_watts;
    p->joules_per_token = pw > 0 && dw > 0 ? (pw * prefill_devices + dw * decode_devices) / tokens_per_s : 0;
}

/* Whether the two pools are held to one budget, the decode pool's: they are on one topology. */
static bool shared_budget(const struct serve_pool *prefill, const struct serve_pool *decode)
{
    return prefill->topology == decode->topology;
}

static bool budgeted(const struct serve_pool *prefill, const struct serve_pool *decode)
{
    return decode->budget_devices > 0 || (!shared_budget(prefill, decode) && prefill->budget_devices > 0);
}

/* Whether x prefill instances of n_p devices and y decode instances of n_d fit the budgets. */
static bool within_budget(const struct serve_pool *prefill, const struct serve_pool *decode, int64_t x, int64_t n_p,
                          int64_t y, int64_t n_d)
{
    if (shared_budget(prefill, decode))
        return decode->budget_devices <= 0 || x * n_p + y * n_d <= decode->budget_devices;
    return (decode->budget_devices <= 0 || y * n_d <= decode->budget_devices) &&
           (prefill->budget_devices <= 0 || x * n_p <= prefill->budget_devices);
}

/* How many copies of x prefill and y decode instances fit the budgets (at least 1: the caller
 * has checked that one does). */
static int64_t copies_within(const struct serve_pool *prefill, const struct serve_pool *decode, int64_t x, int64_t n_p,
                             int64_t y, int64_t n_d)
{
    int64_t k = INT64_MAX;
    if (shared_budget(prefill, decode)) {
        if (decode->budget_devices > 0)
            k = decode->budget_devices / (x * n_p + y * n_d);
    } else {
        if (decode->budget_devices > 0)
            k = decode->budget_devices / (y * n_d);
        if (prefill->budget_devices > 0 && prefill->budget_devices / (x * n_p) < k)
            k = prefill->budget_devices / (x * n_p);
    }
    return k == INT64_MAX || k < 1 ? 1 : k;
}

bool serve_disaggregated(const struct serve_pool *prefill_pool, const struct serve_instance *prefill,
                         const struct serve_pool *decode_pool, const struct serve_instance *decode,
                         const struct serve_workload *w, double rate, struct serve_point *out)
{
    struct serve_point p = {.mode = SERVE_DISAGGREGATED, .prefill = *prefill, .decode = *decode};
    p.kv_transfer_s = serve_kv_transfer_s(prefill_pool, &prefill->layout, decode_pool, &decode->layout, w,
                                          &p.kv_over_scale_up);
    double limit = prefill_use_limit(w, prefill->step_s, p.kv_transfer_s);
    if (limit <= 0)
        return false;
    double r_p = prefill->requests_per_s * limit, r_d = decode->requests_per_s;
    double osl = (double)w->osl;
    if (rate > 0) {
        p.decode_instances = (int64_t)ceil(rate / r_d);
        p.prefill_instances = (int64_t)ceil(rate / r_p);
        disaggregated_totals(prefill_pool, decode_pool, osl, &p);
        /* the rate, not the decode pool's capacity, is what reaches the prefill pool */
        p.prefill_use = rate / ((double)p.prefill_instances * prefill->requests_per_s);
        p.ttft_s = prefill->step_s * (1 + p.prefill_use / 2) + p.kv_transfer_s;
    } else {
        bool found = false, budget = budgeted(prefill_pool, decode_pool);
        int64_t n_p = prefill->layout.devices, n_d = decode->layout.devices;
        struct serve_point best = p;
        int64_t most = budget ? SERVE_MAX_BUDGET_DECODE_INSTANCES : SERVE_MAX_DECODE_INSTANCES;
        for (int64_t y = 1; y <= most; y++) {
            struct serve_point q = p;
            q.decode_instances = y;
            /* the fewest prefill instances that keep up within the use limit (a hair of slack
             * so that an exact ratio is not lost to rounding) */
            q.prefill_instances = (int64_t)ceil((double)y * r_d / r_p - 1e-9);
            if (q.prefill_instances < 1)
                q.prefill_instances = 1;
            /* x never falls as y grows, so a pair over the budget ends the ratios */
            if (!within_budget(prefill_pool, decode_pool, q.prefill_instances, n_p, y, n_d))
                break;
            disaggregated_totals(prefill_pool, decode_pool, osl, &q);
            if (!found || q.tokens_per_s_per_device > best.tokens_per_s_per_device * (1 + 1e-12)) {
                best = q;
                found = true;
            }
        }
        if (!found)
            return false;
        if (budget) { /* the pair replicated as often as the budget holds it */
            int64_t k = copies_within(prefill_pool, decode_pool, best.prefill_instances, n_p, best.decode_instances,
                                      n_d);
            if (k > 1) {
                best.prefill_instances *= k;
                best.decode_instances *= k;
                disaggregated_totals(prefill_pool, decode_pool, osl, &best);
            }
        }
        p = best;
    }
    p.tpot_s = decode->step_s / serve_tokens_per_step(w);
    p.tokens_per_s_per_user = 1 / p.tpot_s;
    p.meets = (w->ttft_s <= 0 || p.ttft_s <= w->ttft_s * (1 + 1e-12)) && (w->tpot_s <= 0 || p.tpot_s <= w->tpot_s);
    if (rate > 0 && !within_budget(prefill_pool, decode_pool, p.prefill_instances, prefill->layout.devices,
                                   p.decode_instances, decode->layout.devices))
        p.meets = false; /* sized beyond the budget */
    *out = p;
    return true;
}

/* ---- the search ---- */

/* An instance shape: n devices, part of one domain (racks 1) or whole domains, with the
 * topology it talks over and its interconnect graph. */
struct shape {
    int64_t devices, racks;
    struct topology topology;
    struct graph_summary graph;
};

/* A layout of a shape, with the most sequences it holds at isl + osl (decode) and prompts at
 * isl (prefill). */
struct candidate_layout {
    const struct shape *shape;
    struct layout layout;
    int64_t max_sequences, max_prompts;
};

struct layouts {
    struct shape *shapes;
    int64_t shape_count;
    struct candidate_layout *items;
    int64_t count;
};

static bool add_shape(struct layouts *ls, const struct topology *t, int64_t devices, int64_t racks)
{
    struct shape s = {.devices = devices, .racks = racks};
    if (racks == 1) {
        if (!topology_slice(t, devices, &s.topology))
            return true; /* a torus has no sub-box of this many chips: not a shape */
    } else {
        s.topology = *t;
    }
    if (graph_analyse(&s.topology, racks, &s.graph) != GRAPH_OK)
        return false;
    struct shape *grown = realloc(ls->shapes, (size_t)(ls->shape_count + 1) * sizeof *grown);
    if (!grown)
        return false;
    ls->shapes = grown;
    ls->shapes[ls->shape_count++] = s;
    return true;
}

/* The fewest whole domains on which some layout holds one sequence of isl + osl tokens; 0: none
 * up to PLAN_MAX_RACKS. */
static int64_t fewest_racks(const struct serve_pool *pool, const struct serve_workload *w)
{
    const struct topology *t = pool->topology;
    struct workload one = pool->precisions;
    one.batch = 1;
    one.context = w->isl + w->osl;
    for (int64_t r = 1; r <= PLAN_MAX_RACKS; r++) {
        struct layout l;
        struct device_memory mem;
        if (!plan_choose_layout(pool->model, t, r, r * t->domain_devices, &one, &l))
            continue;
        plan_memory(pool->model, t, &l, &one, &mem);
        if (mem.free_bytes >= 0)
            return r;
    }
    return 0;
}

/* Shapes for a pool: powers of two within a domain and the domain; with a budget of B devices
 * only those up to B, and B itself when it is part of one domain, then 2, 4, ... whole domains
 * and floor(B / domain) of them; without one 2, 4, ... whole domains up to
 * SERVE_DEFAULT_SPAN_DEVICES, and the fewest whole domains that hold the model when one domain
 * does not. */
static bool enumerate_shapes(const struct serve_pool *pool, const struct serve_workload *w, struct layouts *ls)
{
    const struct topology *t = pool->topology;
    int64_t domain = t->domain_devices, budget = pool->budget_devices;
    int64_t within = budget > 0 && budget < domain ? budget : domain; /* the largest shape in one domain */
    for (int64_t n = 1; n < within; n *= 2) /* (a power of two equal to `within` is added below) */
        if (!add_shape(ls, t, n, 1))
            return false;
    if (!add_shape(ls, t, within, 1))
        return false;
    if (budget > 0) {
        int64_t racks = budget / domain;
        for (int64_t r = 2; r < racks; r *= 2)
            if (!add_shape(ls, t, r * domain, r))
                return false;
        return racks < 2 || add_shape(ls, t, racks * domain, racks);
    }
    int64_t fewest = fewest_racks(pool, w);
    bool fewest_added = fewest <= 1;
    for (int64_t r = 2; r * domain <= SERVE_DEFAULT_SPAN_DEVICES; r *= 2) {
        if (!add_shape(ls, t, r * domain, r))
            return false;
        fewest_added |= r == fewest;
    }
    if (!fewest_added && fewest * domain <= SERVE_MAX_SPAN_DEVICES)
        return add_shape(ls, t, fewest * domain, fewest);
    return true;
}

static bool add_layout(struct layouts *ls, const struct candidate_layout *c)
{
    if (ls->count % 64 == 0) {
        struct candidate_layout *grown = realloc(ls->items, (size_t)(ls->count + 64) * sizeof *grown);
        if (!grown)
            return false;
        ls->items = grown;
    }
    ls->items[ls->count++] = *c;
    return true;
}

/* The most sequences of `context` tokens layout `l` holds: the plan's bisection. */
static int64_t most_held(const struct serve_pool *pool, const struct topology *t, const struct layout *l,
                         int64_t context)
{
    struct workload w = pool->precisions;
    w.context = context;
    return plan_max_batch(pool->model, t, l, &w);
}

static bool enumerate_layouts(const struct serve_pool *pool, const struct serve_workload *w, struct layouts *ls)
{
    if (!enumerate_shapes(pool, w, ls))
        return false;
    const struct model *m = pool->model;
    const struct topology *t = pool->topology;
    for (int64_t i = 0; i < ls->shape_count; i++) {
        const struct shape *s = &ls->shapes[i];
        int64_t n = s->devices;
        int64_t tp_limit = n < t->domain_devices ? n : t->domain_devices;
        for (int64_t pp = 1; pp <= s->racks; pp++) {
            if (s->racks % pp != 0 || (pool->precisions.pp && pp != pool->precisions.pp) || pp > m->layers)
                continue;
            for (int64_t tp = 1; tp <= tp_limit; tp++) {
                if (n % (tp * pp) != 0 || !model_splits_by(m, tp) ||
                    (pool->precisions.tp && tp != pool->precisions.tp))
                    continue;
                struct candidate_layout c = {.shape = s};
                c.layout = (struct layout){.racks = s->racks, .devices = n, .tp = tp, .pp = pp,
                                           .dp = n / (tp * pp), .ep = model_is_moe(m) ? n / pp : 1};
                /* the slice is the instance's topology: its domain is the instance's devices */
                struct serve_pool sliced = *pool;
                sliced.topology = &s->topology;
                c.max_sequences = most_held(&sliced, &s->topology, &c.layout, w->isl + w->osl);
                c.max_prompts = most_held(&sliced, &s->topology, &c.layout, w->isl);
                if (c.max_prompts < 1)
                    continue;
                if (!add_layout(ls, &c))
                    return false;
            }
        }
    }
    return true;
}

static void layouts_release(struct layouts *ls)
{
    free(ls->shapes);
    free(ls->items);
    *ls = (struct layouts){0};
}

/* A growing list of points. */
struct points {
    struct serve_point *items;
    int64_t count, room;
    bool failed;
};

static void points_add(struct points *ps, const struct serve_point *p)
{
    if (ps->failed)
        return;
    if (ps->count == ps->room) {
        int64_t room = ps->room ? 2 * ps->room : 256;
        struct serve_point *grown = realloc(ps->items, (size_t)room * sizeof *grown);
        if (!grown) {
            ps->failed = true;
            return;
        }
        ps->items = grown;
        ps->room = room;
    }
    ps->items[ps->count++] = *p;
}

/* The search's running state. */
struct search {
    const struct serve_workload *w;
    struct points all; /* points within the TTFT target, for the frontier */
    struct serve_result *result;
};

/* More tokens/s per device; within a part in a million (the same roofline term binding on two
 * layouts), more per user, then fewer devices. */
static bool better(const struct serve_point *a, const struct serve_point *b)
{
    double x = a->tokens_per_s_per_device, y = b->tokens_per_s_per_device;
    if (fabs(x - y) > 1e-6 * fmax(x, y))
        return x > y;
    if (a->tokens_per_s_per_user != b->tokens_per_s_per_user)
        return a->tokens_per_s_per_user > b->tokens_per_s_per_user;
    if (a->devices != b->devices)
        return a->devices < b->devices;
    return a->mode < b->mode;
}

/* Fewer devices for the rate, then more tokens/s per device. */
static bool smaller(const struct serve_point *a, const struct serve_point *b)
{
    if (a->devices != b->devices)
        return a->devices < b->devices;
    return a->tokens_per_s_per_device > b->tokens_per_s_per_device;
}

/* Lower `value` than the kept point's, ties to the better point. */
static bool lower(double value, double kept, const struct serve_point *p, const struct serve_point *k)
{
    return value < kept || (value == kept && better(p, k));
}

static void consider(struct search *s, const struct serve_point *p, const struct serve_point *sized)
{
    struct serve_result *r = s->result;
    r->points++;
    if (!(p->tokens_per_s_per_device > 0 && isfinite(p->tokens_per_s_per_device)))
        return; /* a step that takes forever (no peak at the precision) serves nothing */
    if (!r->reached || lower(p->tpot_s, r->lowest_tpot.tpot_s, p, &r->lowest_tpot))
        r->lowest_tpot = *p;
    if (!r->reached || lower(p->ttft_s, r->lowest_ttft.ttft_s, p, &r->lowest_ttft))
        r->lowest_ttft = *p;
    r->reached = true;
    bool within_ttft = s->w->ttft_s <= 0 || p->ttft_s <= s->w->ttft_s * (1 + 1e-12);
    if (within_ttft) {
        if (!r->tpot_within_ttft || lower(p->tpot_s, r->lowest_tpot_within_ttft.tpot_s, p, &r->lowest_tpot_within_ttft))
            r->lowest_tpot_within_ttft = *p;
        r->tpot_within_ttft = true;
        points_add(&s->all, p);
    }
    if (!p->meets)
        return;
    if (!r->found || better(p, &r->best)) {
        r->best = *p;
        r->found = true;
    }
    if (sized && sized->meets && (!r->sized || smaller(sized, &r->sized_point))) {
        r->sized_point = *sized;
        r->sized = true;
    }
}

/* The batches to try up to `most`: a log grid, the largest within the targets (`within`, 0:
 * none) and the largest multiple of `step` at or below it. Returns how many, into `out`
 * (room for SERVE_BATCH_POINTS + 2). */
static int64_t batches_to_try(int64_t most, int64_t within, int64_t step, int64_t *out)
{
    int64_t n = roof_sweep_batches(1, most, SERVE_BATCH_POINTS, out);
    if (within >= 1) {
        out[n++] = within;
        if (within / step * step >= 1 && within / step * step != within)
            out[n++] = within / step * step;
    }
    return n;
}

/* Whether `batch` meets the targets on an aggregated instance (and fits). */
static bool aggregated_within(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                              const struct serve_workload *w, int64_t batch)
{
    struct serve_point p;
    return serve_aggregated(pool, g, l, w, batch, &p) && p.meets;
}

static bool decode_within(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                          const struct serve_workload *w, int64_t batch)
{
    struct roof_point d;
    serve_decode_step(pool, g, l, w, batch, &d);
    return d.fits && (w->tpot_s <= 0 || d.step_s / serve_tokens_per_step(w) <= w->tpot_s);
}

/* The largest batch in [1, most] for which `ok` holds, `ok` holding for every batch below one
 * where it holds; 0: none. */
static int64_t largest_within(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                              const struct serve_workload *w, int64_t most,
                              bool (*ok)(const struct serve_pool *, const struct graph_summary *, const struct layout *,
                                         const struct serve_workload *, int64_t))
{
    if (most < 1 || !ok(pool, g, l, w, 1))
        return 0;
    int64_t low = 1, high = most;
    while (low < high) {
        int64_t mid = low + (high - low + 1) / 2;
        if (ok(pool, g, l, w, mid))
            low = mid;
        else
            high = mid - 1;
    }
    return low;
}

int64_t serve_largest_batch(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t most)
{
    return largest_within(pool, g, l, w, most, aggregated_within);
}

int64_t serve_largest_decode_batch(const struct serve_pool *pool, const struct graph_summary *g,
                                   const struct layout *l, const struct serve_workload *w, int64_t most)
{
    return largest_within(pool, g, l, w, most, decode_within);
}

/* A pool as one of its shapes sees it: the slice's topology. */
static struct serve_pool pool_on(const struct serve_pool *pool, const struct candidate_layout *c)
{
    struct serve_pool sliced = *pool;
    sliced.topology = &c->shape->topology;
    return sliced;
}

static void search_aggregated(struct search *s, const struct serve_pool *pool, const struct layouts *ls)
{
    const struct serve_workload *w = s->w;
    for (int64_t i = 0; i < ls->count; i++) {
        const struct candidate_layout *c = &ls->items[i];
        if (c->max_sequences < 1)
            continue;
        struct serve_pool on = pool_on(pool, c);
        int64_t within = largest_within(&on, &c->shape->graph, &c->layout, w, c->max_sequences, aggregated_within);
        int64_t batches[SERVE_BATCH_POINTS + 2];
        int64_t count = batches_to_try(c->max_sequences, within, c->layout.dp * c->layout.pp, batches);
        for (int64_t b = 0; b < count; b++) {
            struct serve_point p;
            if (!serve_aggregated(&on, &c->shape->graph, &c->layout, w, batches[b], &p))
                continue;
            struct serve_point sized = p;
            if (w->rate > 0) {
                sized.decode_instances = (int64_t)ceil(w->rate / p.decode.requests_per_s);
                sized.devices = sized.decode_instances * c->layout.devices;
                if (pool->budget_devices > 0 && sized.devices > pool->budget_devices)
                    sized.meets = false;
            }
            if (pool->budget_devices > 0) { /* as many replicas as the budget holds */
                p.decode_instances = pool->budget_devices / c->layout.devices;
                p.devices = p.decode_instances * c->layout.devices;
            }
            consider(s, &p, w->rate > 0 ? &sized : NULL);
        }
    }
}

/* A prefill option: an instance and its layout. */
struct prefill_option {
    const struct candidate_layout *layout;
    struct serve_instance instance;
};

static bool prefill_options(const struct serve_pool *pool, const struct layouts *ls, const struct serve_workload *w,
                            struct prefill_option **out, int64_t *count)
{
    *out = NULL;
    *count = 0;
    int64_t room = 0;
    for (int64_t i = 0; i < ls->count; i++) {
        const struct candidate_layout *c = &ls->items[i];
        struct serve_pool on = pool_on(pool, c);
        int64_t ranks = c->layout.dp * c->layout.pp;
        int64_t most = ranks * prompts_per_rank(w);
        if (most > c->max_prompts)
            most = c->max_prompts;
        int64_t per_rank[SERVE_PREFILL_POINTS];
        int64_t steps = roof_sweep_batches(1, most / ranks > 0 ? most / ranks : 1, SERVE_PREFILL_POINTS, per_rank);
        for (int64_t j = -1; j < steps; j++) {
            int64_t prompts = j < 0 ? 1 : per_rank[j] * ranks;
            if (j >= 0 && prompts == 1)
                continue;
            if (prompts > most)
                prompts = most;
            struct prefill_option o = {.layout = c};
            if (!serve_prefill_instance(&on, &c->shape->graph, &c->layout, w, prompts, &o.instance))
                continue;
            if (*count == room) {
                room = room ? 2 * room : 64;
                struct prefill_option *grown = realloc(*out, (size_t)room * sizeof *grown);
                if (!grown)
                    return false;
                *out = grown;
            }
            (*out)[(*count)++] = o;
        }
    }
    return true;
}

static void search_disaggregated(struct search *s, const struct serve_pool *decode_pool, const struct layouts *dls,
                                 const struct serve_pool *prefill_pool, const struct prefill_option *options,
                                 int64_t option_count)
{
    const struct serve_workload *w = s->w;
    for (int64_t i = 0; i < dls->count; i++) {
        const struct candidate_layout *c = &dls->items[i];
        if (c->max_sequences < 1)
            continue;
        struct serve_pool on = pool_on(decode_pool, c);
        /* the prefill option with the fewest device-seconds a request within the TTFT target */
        const struct prefill_option *chosen = NULL;
        double chosen_cost = INFINITY;
        for (int64_t j = 0; j < option_count; j++) {
            const struct prefill_option *o = &options[j];
            if (!within_budget(prefill_pool, decode_pool, 1, o->instance.layout.devices, 1, c->layout.devices))
                continue; /* one prefill and one decode instance must fit in the budget */
            double transfer = serve_kv_transfer_s(prefill_pool, &o->instance.layout, decode_pool, &c->layout, w, NULL);
            double limit = prefill_use_limit(w, o->instance.step_s, transfer);
            if (limit <= 0)
                continue;
            double cost = (double)o->instance.layout.devices / (o->instance.requests_per_s * limit);
            if (cost < chosen_cost * (1 - 1e-12)) {
                chosen = o;
                chosen_cost = cost;
            }
        }
        if (!chosen)
            continue;
        int64_t within = serve_largest_decode_batch(&on, &c->shape->graph, &c->layout, w, c->max_sequences);
        int64_t batches[SERVE_BATCH_POINTS + 2];
        int64_t count = batches_to_try(c->max_sequences, within, c->layout.dp * c->layout.pp, batches);
        for (int64_t b = 0; b < count; b++) {
            struct serve_instance d;
            if (!serve_decode_instance(&on, &c->shape->graph, &c->layout, w, batches[b], &d))
                continue;
            /* the whole pools, not the instances' slices: whether a prefill and a decode instance
             * share a domain is a question about the topology */
            struct serve_point p, sized;
            if (!serve_disaggregated(prefill_pool, &chosen->instance, decode_pool, &d, w, 0, &p))
                continue;
            bool sizing = w->rate > 0 &&
                          serve_disaggregated(prefill_pool, &chosen->instance, decode_pool, &d, w, w->rate, &sized);
            consider(s, &p, sizing ? &sized : NULL);
        }
    }
}

/* Pareto points of `ps` restricted to `mode` (SERVE_BEST: both): no other point has both more
 * tokens/s per device and more per user. Most tokens/s per device first. */
static int compare_user_rate(const void *a, const void *b)
{
    const struct serve_point *x = *(const struct serve_point *const *)a, *y = *(const struct serve_point *const *)b;
    if (x->tokens_per_s_per_user != y->tokens_per_s_per_user)
        return x->tokens_per_s_per_user > y->tokens_per_s_per_user ? -1 : 1;
    if (x->tokens_per_s_per_device != y->tokens_per_s_per_device)
        return x->tokens_per_s_per_device > y->tokens_per_s_per_device ? -1 : 1;
    return x < y ? -1 : x > y; /* enumeration order */
}

static bool close_to(double a, double b)
{
    return fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b));
}

/* The same batch per data-parallel rank: a / a_dp = b / b_dp. */
static bool same_rank_batch(int64_t a, int64_t a_dp, int64_t b, int64_t b_dp)
{
    return (double)a * (double)b_dp == (double)b * (double)a_dp;
}

/* One operating point (serve.h): the same mode, TP, PP and batch per DP rank (on both sides and
 * in the same x : y when disaggregated), and rates within a part in a million. */
static bool same_operating_point(const struct serve_point *a, const struct serve_point *b)
{
    const struct layout *ad = &a->decode.layout, *bd = &b->decode.layout;
    if (a->mode != b->mode || ad->tp != bd->tp || ad->pp != bd->pp ||
        !same_rank_batch(a->decode.batch, ad->dp, b->decode.batch, bd->dp) ||
        !close_to(a->tokens_per_s_per_device, b->tokens_per_s_per_device) ||
        !close_to(a->tokens_per_s_per_user, b->tokens_per_s_per_user))
        return false;
    if (a->mode == SERVE_AGGREGATED)
        return true;
    const struct layout *ap = &a->prefill.layout, *bp = &b->prefill.layout;
    return ap->tp == bp->tp && ap->pp == bp->pp && same_rank_batch(a->prefill.batch, ap->dp, b->prefill.batch, bp->dp) &&
           (double)a->prefill_instances * (double)b->decode_instances ==
               (double)b->prefill_instances * (double)a->decode_instances;
}

/* Of two copies of one operating point, whether `a` is the one to drop: more instance devices,
 * then more devices in all. */
static bool larger_copy(const struct serve_point *a, const struct serve_point *b)
{
    int64_t x = a->decode.layout.devices + a->prefill.layout.devices;
    int64_t y = b->decode.layout.devices + b->prefill.layout.devices;
    return x != y ? x > y : a->devices > b->devices;
}

static bool pareto(const struct points *ps, enum serve_mode mode, struct serve_point **out, int64_t *count)
{
    *out = NULL;
    *count = 0;
    const struct serve_point **order = malloc((size_t)(ps->count > 0 ? ps->count : 1) * sizeof *order);
    if (!order)
        return false;
    int64_t n = 0;
    for (int64_t i = 0; i < ps->count; i++)
        if (mode == SERVE_BEST || ps->items[i].mode == mode)
            order[n++] = &ps->items[i];
    qsort(order, (size_t)n, sizeof *order, compare_user_rate);
    /* one copy of each operating point: copies sit within a part in a million of each other in
     * tokens/s per user, so each point is held against those just after it in this order; a
     * dropped point becomes NULL */
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = i + 1; order[i] && j < n; j++) {
            if (!order[j])
                continue;
            if (order[j]->tokens_per_s_per_user < order[i]->tokens_per_s_per_user * (1 - 1e-6))
                break;
            if (same_operating_point(order[i], order[j])) {
                if (larger_copy(order[i], order[j]))
                    order[i] = NULL;
                else
                    order[j] = NULL;
            }
        }
    }
    struct serve_point *kept = malloc((size_t)(n > 0 ? n : 1) * sizeof *kept);
    if (!kept) {
        free(order);
        return false;
    }
    int64_t k = 0;
    double best_rate = -1;
    for (int64_t i = 0; i < n; i++)
        if (order[i] && order[i]->tokens_per_s_per_device > best_rate) {
            best_rate = order[i]->tokens_per_s_per_device;
            kept[k++] = *order[i];
        }
    free(order);
    for (int64_t i = 0; i < k / 2; i++) { /* most tokens/s per device first */
        struct serve_point swap = kept[i];
        kept[i] = kept[k - 1 - i];
        kept[k - 1 - i] = swap;
    }
    *out = kept;
    *count = k;
    return true;
}

/* The fewest devices of the pool's topology that hold the weights and one sequence of isl + osl
 * tokens (one prompt of isl for a prefill pool), as `fit` counts them; 0: none. */
static int64_t fewest_devices(const struct serve_pool *pool, const struct serve_workload *w, bool prefill)
{
    struct workload one = pool->precisions;
    one.batch = 1;
    one.context = prefill ? w->isl : w->isl + w->osl;
    struct fit f;
    return plan_fit(pool->model, pool->topology, 1, &one, &f) ? f.min_devices : 0;
}

enum serve_binding serve_binding_target(const struct serve_workload *w, const struct serve_result *r,
                                        const struct serve_point **reachable)
{
    *reachable = NULL;
    if (r->found || !r->reached || (w->ttft_s <= 0 && w->tpot_s <= 0))
        return SERVE_BINDS_NONE;
    if (w->tpot_s > 0 && r->lowest_tpot.tpot_s > w->tpot_s) {
        *reachable = &r->lowest_tpot;
        return SERVE_BINDS_TPOT;
    }
    if (w->ttft_s > 0 && r->lowest_ttft.ttft_s > w->ttft_s * (1 + 1e-12)) {
        *reachable = &r->lowest_ttft;
        return SERVE_BINDS_TTFT;
    }
    *reachable = r->tpot_within_ttft ? &r->lowest_tpot_within_ttft : NULL;
    return SERVE_BINDS_BOTH;
}

bool serve_search(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                  const struct serve_workload *w, struct serve_result *out)
{
    *out = (struct serve_result){0};
    struct search s = {.w = w, .result = out};
    struct layouts decode_layouts = {0}, prefill_layouts = {0};
    struct prefill_option *options = NULL;
    int64_t option_count = 0;
    bool ok = enumerate_layouts(decode_pool, w, &decode_layouts);
    const struct layouts *pls = &decode_layouts;
    const struct serve_pool *pp = prefill_pool ? prefill_pool : decode_pool;
    if (ok && prefill_pool) {
        ok = enumerate_layouts(prefill_pool, w, &prefill_layouts);
        pls = &prefill_layouts;
    }
    out->layouts = decode_layouts.count + (prefill_pool ? prefill_layouts.count : 0);
    for (int64_t i = 0; ok && i < decode_layouts.count; i++)
        out->fits |= decode_layouts.items[i].max_sequences >= 1;
    if (ok && out->fits && prefill_pool) {
        out->fits = prefill_layouts.count > 0; /* a prefill layout is kept when it holds a prompt */
        out->prefill_short = !out->fits;
    }
    if (ok && !out->fits)
        out->min_devices = fewest_devices(out->prefill_short ? prefill_pool : decode_pool, w, out->prefill_short);
    if (ok && w->mode != SERVE_DISAGGREGATED && !prefill_pool)
        search_aggregated(&s, decode_pool, &decode_layouts);
    if (ok && w->mode != SERVE_AGGREGATED) {
        ok = prefill_options(pp, pls, w, &options, &option_count);
        if (ok)
            search_disaggregated(&s, decode_pool, &decode_layouts, pp, options, option_count);
    }
    ok = ok && !s.all.failed && pareto(&s.all, SERVE_BEST, &out->frontier, &out->frontier_count) &&
         pareto(&s.all, SERVE_AGGREGATED, &out->mode_frontier[0], &out->mode_frontier_count[0]) &&
         pareto(&s.all, SERVE_DISAGGREGATED, &out->mode_frontier[1], &out->mode_frontier_count[1]);
    free(options);
    free(s.all.items);
    layouts_release(&decode_layouts);
    layouts_release(&prefill_layouts);
    if (!ok)
        serve_result_release(out);
    return ok;
}

void serve_result_release(struct serve_result *r)
{
    if (!r)
        return;
    free(r->frontier);
    free(r->mode_frontier[0]);
    free(r->mode_frontier[1]);
    r->frontier = r->mode_frontier[0] = r->mode_frontier[1] = NULL;
    r->frontier_count = r->mode_frontier_count[0] = r->mode_frontier_count[1] = 0;
}
