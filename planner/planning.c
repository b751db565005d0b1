/* planning.c: a whole plan, as planning.h says. */
#include "planning.h"

#include "diag.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Layers on stages: each layer's bytes read per step over a stage's bandwidth is its time, its
 * bytes its memory; a stage holds its devices' HBM less the reserve. */
static void split_stages(const struct model *m, const struct topology *t, const struct workload *w,
                        double time_limit_s, struct planning_result *p)
{
    int64_t L = m->layers, P = p->layout.pp;
    double *time = xmalloc((size_t)L * sizeof *time), *memory = xmalloc((size_t)L * sizeof *memory);
    struct model_params params;
    model_params(m, &params);
    double per_device = (double)(p->layout.devices / P);
    double bandwidth = per_device * t->hbm_bytes_per_s;
    for (int64_t i = 0; i < L; i++) {
        struct layer_params layer;
        plan_layer_params(m, i, &layer);
        double bytes = layer.replicated * precision_bytes(w->weights) +
                       layer.routed_experts * precision_bytes(w->expert_weights);
        bytes += (double)w->batch * model_sequence_bytes_layers(m, w->kv, w->context, i, i + 1, 1);
        time[i] = bytes / bandwidth;
        memory[i] = bytes;
    }
    double reserve = w->reserve_bytes >= 0 ? w->reserve_bytes : w->reserve_fraction * t->hbm_bytes;
    double last = params.lm_head * precision_bytes(w->weights);
    /* the last stage holds the MTP modules, pipelined with a copy of the embedding */
    if (w->mtp && m->mtp_layers > 0) {
        struct layer_parts module;
        model_mtp_parts(m, &module);
        last += (double)m->mtp_layers *
                ((layer_parts_sum(&module) - module.routed_experts) * precision_bytes(w->weights) +
                 module.routed_experts * precision_bytes(w->expert_weights));
        if (P > 1)
            last += params.embedding * precision_bytes(w->weights);
    }
    struct stage_problem problem = {
        .layers = L, .time = time, .memory = memory,
        .capacity = per_device * (t->hbm_bytes - reserve), .stages = P,
        .first_time = params.embedding * precision_bytes(w->weights) / bandwidth,
        .first_memory = params.embedding * precision_bytes(w->weights),
        .last_time = last / bandwidth,
        .last_memory = last};
    struct stage_split dp;
    if (stages_dp(&problem, &dp)) {
        struct stage_split proven;
        if (time_limit_s > 0 && stages_ilp(&problem, &dp, time_limit_s, &proven, &p->stage_stats)) {
            p->have_stage_stats = true;
            stage_split_release(&dp);
            p->split = proven;
        } else {
            p->split = dp;
        }
    }
    free(time);
    free(memory);
}

/* --redundant auto: whole spare slots per device (at most as many as the experts already
 * there, doubling them) while the batch still fits; each slot holds one routed expert in every
 * MoE layer of the stage. Returns the spare slots over the EP group beyond the experts. */
static int64_t redundant_that_fits(const struct model *m, const struct topology *t,
                                   const struct layout *l, const struct workload *w)
{
    int64_t base = (m->moe.experts + l->ep - 1) / l->ep;
    if (l->ep > m->moe.experts)
        return 0;
    struct layout trial = *l;
    int64_t best = base * l->ep - m->moe.experts;
    for (int64_t extra = 1; extra <= base; extra++) {
        trial.redundant = (base + extra) * l->ep - m->moe.experts;
        struct device_memory mem;
        plan_memory(m, t, &trial, w, &mem);
        if (mem.free_bytes < 0)
            break;
        best = trial.redundant;
    }
    return best;
}

/* The hardware the serving step runs on, balanced experts. */
static struct serve_pool serving_pool(const struct planning_request *r, const struct workload *w)
{
    return (struct serve_pool){.model = r->model, .topology = r->topology, .precisions = *w,
                               .efficiency = r->efficiency, .price_usd_per_hour = r->topology->price_usd_per_hour};
}

/* The largest batch in [1, most] whose serving step on the plan's layout meets the targets, or 1
 * when none does. */
static int64_t serving_batch(const struct planning_request *r, const struct planning_result *p, int64_t most)
{
    struct serve_pool pool = serving_pool(r, &p->workload);
    int64_t within = serve_largest_batch(&pool, &p->graph, &p->layout, r->serving, most);
    return within > 0 ? within : 1;
}

/* The batch the plan takes when none is asked for: the largest that fits the layout at the
 * context and, with a serve workload, whose serving step meets the targets; at least 1. */
static int64_t largest_batch(const struct planning_request *r, const struct planning_result *p)
{
    int64_t most = plan_max_batch(r->model, r->topology, &p->layout, &p->workload);
    if (r->serving && most > 0)
        most = serving_batch(r, p, most);
    return most > 0 ? most : 1;
}

/* traffic_layer_times' arguments, so that the naive map is timed on a second thread while this
 * placement is timed on the first (each walks the whole trace). */
struct timed_map {
    const struct trace *trace;
    const double *loads;
    int64_t layers;
    const int32_t *map;
    int64_t devices, slots, devices_per_domain, experts, k;
    const struct moe_layer_physics *physics;
    struct layer_time *out;
    struct traffic *hashed;
};

static void *time_map(void *data)
{
    const struct timed_map *j = data;
    traffic_layer_times(j->trace, j->loads, j->layers, j->map, j->devices, j->slots, j->devices_per_domain,
                        j->experts, j->k, j->physics, j->out, j->hashed);
    return NULL;
}

static struct layer_time_summary summarise_layer_times(const struct layer_time *times, int64_t layers)
{
    struct layer_time_summary s = {0};
    for (int64_t i = 0; i < layers; i++) {
        s.mean.compute_s += times[i].compute_s / (double)layers;
        s.mean.scale_up_s += times[i].scale_up_s / (double)layers;
        s.mean.scale_out_s += times[i].scale_out_s / (double)layers;
        s.mean.total_s += times[i].total_s / (double)layers;
        s.sum_s += times[i].total_s;
        s.worst_s = fmax(s.worst_s, times[i].total_s);
    }
    return s;
}

/* This placement's layer times and the naive map's, each on its own thread, and with a trace
 * the hashed routing's traffic from the same walk. */
static void time_placement(const struct planning_request *r, const double *loads,
                           const struct moe_layer_physics *physics, struct planning_result *p)
{
    const struct model *m = r->model;
    int64_t group = p->layout.ep, layers = p->experts.layers, width = group * p->slots;
    p->layer_times = xmalloc((size_t)layers * sizeof *p->layer_times);
    p->naive_times = xmalloc((size_t)layers * sizeof *p->naive_times);
    int32_t *naive = xmalloc((size_t)(layers * width) * sizeof *naive);
    traffic_naive_map(layers, m->moe.experts, group, p->slots, naive);
    struct timed_map ours = {.trace = r->trace, .loads = loads, .layers = layers, .map = p->experts.expert,
                             .devices = group, .slots = p->slots, .devices_per_domain = p->ep_devices,
                             .experts = m->moe.experts, .k = m->moe.experts_per_token, .physics = physics,
                             .out = p->layer_times, .hashed = &p->hashed};
    struct timed_map naive_job = ours;
    naive_job.map = naive;
    naive_job.out = p->naive_times;
    naive_job.hashed = NULL;
    pthread_t helper;
    bool helped = pthread_create(&helper, NULL, time_map, &naive_job) == 0;
    time_map(&ours);
    if (helped)
        pthread_join(helper, NULL);
    else
        time_map(&naive_job);
    free(naive);
    p->placement_summary = summarise_layer_times(p->layer_times, layers);
    p->naive_summary = summarise_layer_times(p->naive_times, layers);
    p->naive_copies = (m->moe.experts + group - 1) / group;
    p->naive_faster = p->naive_copies < p->slots &&
                      p->naive_summary.sum_s < p->placement_summary.sum_s * (1 - 1e-9);
}

/* Every MoE layer's experts on the EP group by `deadline` (<= 0: none), then what the placement
 * takes and sends. False when they do not go on its slots. */
static bool place_experts(const struct planning_request *r, const struct loads *loads, double deadline,
                          struct planning_result *p)
{
    const struct model *m = r->model;
    const struct topology *t = r->topology;
    const struct workload *w = &p->workload;
    int64_t group = p->layout.ep;
    p->ep_devices = group < t->domain_devices ? group : t->domain_devices;
    p->ep_domains = group / p->ep_devices;
    p->slots = (m->moe.experts + p->layout.redundant + group - 1) / group;
    struct model_params params;
    model_params(m, &params);
    p->layer_tokens = (double)w->batch / (double)p->layout.pp;
    struct moe_layer_physics physics = {
        .step_tokens = p->layer_tokens,
        .flops_per_dispatch = 2 * params.routed_expert,
        .expert_bytes = params.routed_expert * precision_bytes(w->expert_weights),
        .hidden = (double)m->hidden_size,
        .peak_flops_per_s = topology_peak_flops_per_s(t, w->expert_weights, NULL),
        .hbm_bytes_per_s = t->hbm_bytes_per_s,
        .nic_bytes_per_s = topology_scale_out_bytes_per_s(t),
        .scale_up_bytes_per_s = topology_scale_up_bytes_per_s(t),
        .overlap = r->overlap};
    bool priceable = physics.peak_flops_per_s > 0 && physics.hbm_bytes_per_s > 0 &&
                     physics.nic_bytes_per_s > 0 && physics.scale_up_bytes_per_s > 0;
    struct cluster_routing routing = {.groups = m->moe.groups, .physics = priceable ? &physics : NULL,
                                      .deadline = deadline};
    if (r->trace) {
        routing.chosen = r->trace->expert;
        routing.tokens = r->trace->tokens;
        routing.k = r->trace->k;
    }
    double start = monotonic_seconds();
    bool placed = cluster_place(loads->tokens, loads->layers, loads->experts, p->ep_domains, p->ep_devices,
                                p->slots, &routing, &p->experts);
    p->expert_seconds = monotonic_seconds() - start;
    p->expert_time_limited = deadline > 0 && monotonic_seconds() >= deadline;
    if (!placed)
        return false;
    if (priceable)
        time_placement(r, loads->tokens, &physics, p);
    if (r->trace) {
        if (!priceable)
            traffic_measure(r->trace, p->experts.expert, group, p->slots, p->ep_devices, m->moe.experts, false,
                            &p->hashed);
        if (traffic_experts_whole(p->experts.expert, p->experts.layers, group, p->slots, p->ep_devices,
                                  m->moe.experts))
            p->local = p->hashed;
        else
            traffic_measure(r->trace, p->experts.expert, group, p->slots, p->ep_devices, m->moe.experts, true,
                            &p->local);
        p->have_traffic = true;
    }
    return true;
}

void planning_roof_setup(const struct planning_request *r, const struct planning_result *p, struct roof_setup *out)
{
    *out = (struct roof_setup){.model = r->model, .topology = r->topology, .graph = &p->graph,
                               .layout = p->layout, .workload = p->workload, .efficiency = r->efficiency,
                               .expert_imbalance = p->moe ? p->experts.gpu_imbalance_mean : 1};
}

/* The step at the plan's batch, bound and at the request's efficiency. */
static void price_step(const struct planning_request *r, struct planning_result *p)
{
    struct roof_setup setup;
    planning_roof_setup(r, p, &setup);
    int64_t batch = p->workload.batch;
    if (r->serving) {
        struct serve_pool pool = serving_pool(r, &p->workload);
        pool.expert_imbalance = setup.expert_imbalance;
        struct serve_pool bound_pool = pool;
        bound_pool.efficiency = EFFICIENCY_BOUND;
        serve_aggregated_step(&bound_pool, &p->graph, &p->layout, r->serving, batch, &p->bound_step);
        serve_aggregated_step(&pool, &p->graph, &p->layout, r->serving, batch, &p->step);
        struct serve_point served;
        p->served = serve_aggregated(&pool, &p->graph, &p->layout, r->serving, batch, &served);
        if (p->served) {
            p->ttft_s = served.ttft_s;
            p->tpot_s = served.tpot_s;
            p->tail = served.tail;
        }
    } else {
        struct roof_setup bound = setup;
        bound.efficiency = EFFICIENCY_BOUND;
        roof_decode(&bound, batch, &p->bound_step);
        roof_decode(&setup, batch, &p->step);
    }
}

enum planning_status planning_solve(const struct planning_request *r, struct planning_result *p)
{
    const struct model *m = r->model;
    const struct topology *t = r->topology;
    memset(p, 0, sizeof *p);
    struct workload *w = &p->workload;
    *w = r->workload;
    if (r->serving) /* HBM holds a sequence at its longest */
        w->context = serve_held_context(r->serving);
    p->moe = model_is_moe(m);
    p->uniform = p->moe && !r->loads;

    int64_t devices = r->racks * t->domain_devices;
    w->batch = 1;
    if (!plan_choose_layout(m, t, r->racks, devices, w, &p->layout))
        return PLANNING_NO_LAYOUT;
    if (r->ep && r->ep != p->layout.ep)
        return PLANNING_EP_MISMATCH;
    p->layout.redundant = r->redundant;
    if (graph_analyse(t, r->racks, &p->graph) != GRAPH_OK)
        return PLANNING_NO_GRAPH;
    w->batch = r->batch ? r->batch : largest_batch(r, p);
    p->redundant_auto = r->redundant_auto && p->moe;
    if (p->redundant_auto)
        p->layout.redundant = redundant_that_fits(m, t, &p->layout, w);
    plan_memory(m, t, &p->layout, w, &p->memory);
    /* one limit for all solving: the stages' ILP first, expert placement in what is left */
    double deadline = r->time_limit_s > 0 ? monotonic_seconds() + r->time_limit_s : 0;
    if (p->layout.pp > 1) {
        split_stages(m, t, w, r->time_limit_s, p);
        p->layout.stage_start = p->split.start; /* memory and time on the solved stages */
        if (!r->batch)
            w->batch = largest_batch(r, p);
        plan_memory(m, t, &p->layout, w, &p->memory);
    }

    if (p->moe) {
        struct loads uniform = {0};
        const struct loads *loads = r->loads;
        if (!loads) {
            loads_uniform(m, 1, &uniform);
            loads = &uniform;
        }
        bool placed = place_experts(r, loads, deadline, p);
        loads_release(&uniform);
        if (!placed)
            return PLANNING_NO_PLACEMENT;
    }
    price_step(r, p);
    return PLANNING_OK;
}

void planning_result_release(struct planning_result *p)
{
    cluster_placement_release(&p->experts);
    free(p->layer_times);
    free(p->naive_times);
    stage_split_release(&p->split);
    free(p->stage_stats.x);
    memset(p, 0, sizeof *p);
}

void planning_shortfall(const struct planning_request *r, const struct planning_result *p,
                        struct planning_shortfall *out)
{
    memset(out, 0, sizeof *out);
    for (int64_t s = 0; s < p->layout.pp; s++) {
        struct device_memory memory;
        plan_stage_memory(r->model, r->topology, &p->layout, &p->workload, s, &memory);
        if (s == 0 || memory.free_bytes < out->memory.free_bytes) {
            out->stage = s;
            out->memory = memory;
        }
    }
    plan_stage_layers(r->model, &p->layout, out->stage, &out->first_layer, &out->end_layer);
    out->have_fit = plan_fit(r->model, r->topology, p->layout.racks, &p->workload, &out->fit);
}

void planning_emit_plan(const struct planning_request *r, const struct planning_result *p, const char *model_path,
                        const char *expert_map, struct emit_plan *out)
{
    const struct model *m = r->model;
    const struct topology *t = r->topology;
    const struct serve_workload *s = r->serving;
    *out = (struct emit_plan){
        .command = "plan", .model_name = m->name, .model_path = model_path, .topology_name = t->name,
        .family = t->family, .domain_devices = t->domain_devices, .moe = p->moe,
        .experts = p->moe ? m->moe.experts : 0, .mtp_layers = m->mtp_layers, .kv = p->workload.kv,
        .expert_weights = p->workload.expert_weights,
        .mxfp4_experts = p->workload.expert_weights == PREC_FP4 && m->fp4_mxfp4, .isl = s->isl,
        .osl = s->osl, .mtp = s->mtp, .max_tokens = s->max_tokens, .mtp_accept = s->mtp_accept, .ttft_target_s = s->ttft_s,
        .tpot_target_s = s->tpot_s, .ttft_s = p->ttft_s, .tpot_s = p->tpot_s,
        .tokens_per_s_per_device = p->step.tokens_per_s_per_device, .tokens_per_s = p->step.tokens_per_s,
        .bound = efficiency_is_bound(&r->efficiency), .role_count = 1, .expert_map = expert_map};
    out->roles[0] = (struct emit_role){
        .kind = EMIT_AGGREGATED, .tp = p->layout.tp, .dp = p->layout.dp, .pp = p->layout.pp, .ep = p->layout.ep,
        .devices = p->layout.devices, .instances = 1, .batch = p->workload.batch,
        .running_cap = p->workload.batch,
        .chunk_tokens = s->chunk_tokens ? s->chunk_tokens : SERVE_DEFAULT_CHUNK_TOKENS,
        .slots = p->moe ? p->slots : 0, .weights_bytes = p->memory.weights_bytes, .kv_bytes = p->memory.kv_bytes,
        .activation_bytes = p->memory.activation_bytes, .hbm_bytes = p->memory.hbm_bytes};
}
