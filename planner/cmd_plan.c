/* cmd_plan.c: `rackplan plan MODEL TOPOLOGY`: the layout, layers on stages, experts on devices,
 * and the step time the placement implies. */
#include "cli.h"
#include "cluster.h"
#include "commands.h"
#include "diag.h"
#include "emit.h"
#include "experts.h"
#include "graph.h"
#include "loads.h"
#include "model.h"
#include "plan.h"
#include "roofline.h"
#include "serve.h"
#include "stages.h"
#include "topology.h"
#include "trace.h"
#include "traffic.h"

#include "../reports/document.h"
#include "../reports/json.h"
#include "../reports/plot.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct planned {
    struct layout layout;
    int64_t batch;
    struct stage_split split;
    struct lp_result stage_stats;
    bool have_stage_stats;
    bool moe;
    struct loads loads;
    bool uniform;
    int64_t ep_domains, ep_devices, slots;
    bool redundant_auto;
    struct cluster_placement experts;
    double expert_seconds;
    double time_limit_s;
    bool expert_time_limited; /* the cap cut the search: the placement depends on the machine */
    struct roof_point step;       /* at `efficiency`: the bound, or with --estimate the estimate */
    struct roof_point bound_step; /* an estimate's bound (efficiency 1) */
    struct efficiency efficiency;
    const struct calibration *calibration;
    bool estimate;
    struct device_memory memory;
    bool have_traffic;
    struct traffic hashed, local; /* replica by hash; a replica in the token's domain first */
    struct layer_time *layer_times, *naive_times; /* each MoE layer's, this placement and the naive one */
    bool overlap;
    double layer_tokens; /* tokens through a MoE layer in one step of the EP group */
    bool timings; /* the solver's seconds in JSON and YAML: they differ from run to run */
    const struct serve_workload *serving; /* --isl/--osl: step and rates are aggregated serving's */
    bool served;                         /* the batch fits and its prefill fits the chunk budget */
    struct serve_tail tail;              /* served: TTFT and TPOT at p50, p90, p99 */
    double ttft_s, tpot_s;
};

/* What a plan holds once it has been made: its placement, layer times, stage split, the LP's
 * solution and the loads. */
static void planned_release(struct planned *p)
{
    cluster_placement_release(&p->experts);
    free(p->layer_times);
    free(p->naive_times);
    stage_split_release(&p->split);
    free(p->stage_stats.x);
    loads_release(&p->loads);
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

/* The mean of each term over the MoE layers, their total, and the slowest layer. */
struct layer_time_summary {
    struct layer_time mean;
    double sum_s, worst_s;
};

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

static void json_layer_times(struct json *j, const struct layer_time *times, int64_t layers)
{
    struct layer_time_summary s = summarise_layer_times(times, layers);
    json_begin_object(j);
    json_key(j, "total_s");
    json_number(j, s.sum_s);
    json_key(j, "mean_layer_s");
    json_number(j, s.mean.total_s);
    json_key(j, "worst_layer_s");
    json_number(j, s.worst_s);
    json_key(j, "compute_s");
    json_number(j, s.mean.compute_s);
    json_key(j, "scale_up_s");
    json_number(j, s.mean.scale_up_s);
    json_key(j, "scale_out_s");
    json_number(j, s.mean.scale_out_s);
    json_key(j, "layers_s");
    json_begin_array(j);
    for (int64_t i = 0; i < layers; i++)
        json_number(j, times[i].total_s);
    json_end_array(j);
    json_end_object(j);
}

static void text_layer_times(FILE *out, const char *what, const struct layer_time *times, int64_t layers)
{
    struct layer_time_summary s = summarise_layer_times(times, layers);
    fprintf(out, "    %s: %.1f us a layer, %.3f ms in all; compute %.1f us, scale-up %.1f us, scale-out %.1f us "
                 "(means); slowest layer %.1f us\n",
            what, s.mean.total_s * 1e6, s.sum_s * 1e3, s.mean.compute_s * 1e6, s.mean.scale_up_s * 1e6,
            s.mean.scale_out_s * 1e6, s.worst_s * 1e6);
}

/* Says on stderr which stage does not fit, what fills its devices, by how much it is short, and
 * how many devices would hold the batch: the numbers a user needs to change the plan. */
static void explain_no_fit(const struct model *m, const struct topology *t, const struct workload *w,
                           const struct planned *p)
{
    int64_t worst = 0;
    struct device_memory worst_memory = {0};
    for (int64_t s = 0; s < p->layout.pp; s++) {
        struct device_memory memory;
        plan_stage_memory(m, t, &p->layout, w, s, &memory);
        if (s == 0 || memory.free_bytes < worst_memory.free_bytes) {
            worst = s;
            worst_memory = memory;
        }
    }
    const struct device_memory *d = &worst_memory;
    int64_t per_stage = p->layout.devices / p->layout.pp;
    int64_t first, end;
    plan_stage_layers(m, &p->layout, worst, &first, &end);
    char sequences[64], context[64], batch[64];
    format_count((double)d->sequences, sequences, sizeof sequences);
    format_count((double)w->context, context, sizeof context);
    format_count((double)w->batch, batch, sizeof batch);
    fprintf(stderr,
            "rackplan plan: stage %" PRId64 " (layers %" PRId64 "-%" PRId64 ", devices %" PRId64 "-%" PRId64
            ") does not fit: weights %.3f + %s %.3f (%s sequence%s x %s tokens) + activations %.3f + reserve "
            "%.3f = %.3f GB per device, %.3f GB more than its HBM (%.3f GB)\n",
            worst, first, end - 1, worst * per_stage, (worst + 1) * per_stage - 1, d->weights_bytes / 1e9,
            model_state_bytes_per_sequence(m) > 0 ? "KV and state" : "KV", d->kv_bytes / 1e9, sequences,
            d->sequences == 1 ? "" : "s", context, d->activation_bytes / 1e9,
            d->reserve_bytes / 1e9, (d->weights_bytes + d->kv_bytes + d->activation_bytes + d->reserve_bytes) / 1e9,
            -d->free_bytes / 1e9, d->hbm_bytes / 1e9);
    struct fit f;
    if (!plan_fit(m, t, p->layout.racks, w, &f))
        return;
    if (f.min_devices > p->layout.devices)
        fprintf(stderr, "rackplan plan: batch %s at %s tokens fits on %" PRId64 " devices (--racks %" PRId64
                        "); so might a smaller --batch, a shorter --context or a smaller --reserve\n",
                batch, context, f.min_devices, f.min_racks);
    else if (f.min_devices == 0)
        fprintf(stderr, "rackplan plan: no cluster of up to %d domains holds batch %s at %s tokens; a smaller "
                        "--batch or a shorter --context might\n",
                PLAN_MAX_RACKS, batch, context);
}

/* Layers on stages: each layer's weight bytes read per step over a stage's bandwidth is its
 * time, its weight bytes its memory; a stage holds a rack's HBM less the reserve. */
static void plan_stages(const struct model *m, const struct topology *t, const struct workload *w,
                        double time_limit_s, struct planned *p)
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

struct plan_output {
    const struct model *model;
    const struct topology *topology;
    const struct workload *workload;
    const struct planned *planned;
    enum output_format format;
    const struct options *options;
    const struct emit_output *emitted; /* --emit: the files written; NULL: none */
    const char *expert_map;            /* --emit's expert map, written beside them; NULL: none */
};

static void write_tree(FILE *out, enum json_syntax syntax, const struct model *m, const struct topology *t,
                       const struct workload *w, const struct planned *p, const struct plan_output *o)
{
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    cli_json_header(&j, m, t, p->layout.racks, p->layout.devices);
    json_key(&j, "batch");
    json_int(&j, p->batch);
    json_key(&j, "context");
    json_int(&j, w->context);
    json_key(&j, "parallel");
    cli_json_parallel(&j, &p->layout);
    json_key(&j, "stages");
    json_begin_array(&j);
    for (int64_t s = 0; s < p->layout.pp; s++) {
        int64_t first, end;
        plan_stage_layers(m, &p->layout, s, &first, &end);
        json_begin_object(&j);
        json_key(&j, "stage");
        json_int(&j, s);
        json_key(&j, "first_layer");
        json_int(&j, first);
        json_key(&j, "end_layer_exclusive");
        json_int(&j, end);
        json_key(&j, "first_device");
        json_int(&j, s * (p->layout.devices / p->layout.pp));
        json_key(&j, "devices");
        json_int(&j, p->layout.devices / p->layout.pp);
        json_end_object(&j);
    }
    json_end_array(&j);
    if (p->moe) {
        json_key(&j, "loads");
        json_string(&j, p->uniform ? "uniform" : "file");
        json_key(&j, "slots_per_device");
        json_int(&j, p->slots);
        json_key(&j, "redundant_slots");
        json_int(&j, p->ep_domains * p->ep_devices * p->slots - m->moe.experts);
        json_key(&j, "redundant_auto");
        json_bool(&j, p->redundant_auto);
        json_key(&j, "experts");
        json_begin_array(&j);
        int64_t moe_index = 0;
        int64_t group = p->ep_domains * p->ep_devices;
        for (int64_t layer = 0; layer < m->layers; layer++) {
            if (!model_layer_is_moe(m, layer))
                continue;
            json_begin_object(&j);
            json_key(&j, "layer");
            json_int(&j, layer);
            json_key(&j, "devices");
            json_begin_array(&j);
            for (int64_t d = 0; d < group; d++) {
                json_begin_array(&j);
                for (int64_t s = 0; s < p->slots; s++)
                    json_int(&j, p->experts.expert[(moe_index * group + d) * p->slots + s]);
                json_end_array(&j);
            }
            json_end_array(&j);
            json_end_object(&j);
            moe_index++;
        }
        json_end_array(&j);
        json_key(&j, "gpu_imbalance");
        json_begin_object(&j);
        json_key(&j, "mean");
        json_number(&j, p->experts.gpu_imbalance_mean);
        json_key(&j, "worst");
        json_number(&j, p->experts.gpu_imbalance_worst);
        json_end_object(&j);
        json_key(&j, "domain_imbalance");
        json_begin_object(&j);
        json_key(&j, "mean");
        json_number(&j, p->experts.domain_imbalance_mean);
        json_key(&j, "worst");
        json_number(&j, p->experts.domain_imbalance_worst);
        json_end_object(&j);
        json_key(&j, "solver");
        json_begin_object(&j);
        json_key(&j, "status");
        json_string(&j, p->experts.worst_gap <= 1e-9 ? "optimal"
                        : p->expert_time_limited      ? "time_limit"
                                                      : "feasible");
        char method[384];
        snprintf(method, sizeof method,
                 "greedy replicas, %sLPT, pairwise swaps, GLPK on the most loaded device's domain; "
                 "objective the mean GPU imbalance, bound the mean of max(mean load, heaviest copy, "
                 "and without spare slots the heaviest expert's full device) / mean load",
                 p->experts.priced ? "experts to domains and devices by swaps that lower the predicted "
                                     "layer time, " : "");
        json_key(&j, "method");
        json_string(&j, method);
        json_key(&j, "placed_by_layer_time");
        json_bool(&j, p->experts.priced);
        json_key(&j, "objective");
        json_number(&j, p->experts.gpu_imbalance_mean);
        json_key(&j, "bound");
        json_number(&j, p->experts.bound_mean);
        json_key(&j, "gap");
        json_number(&j, (p->experts.gpu_imbalance_mean - p->experts.bound_mean) / p->experts.gpu_imbalance_mean);
        json_key(&j, "worst_layer_gap");
        json_number(&j, p->experts.worst_gap);
        if (p->timings) {
            json_key(&j, "seconds");
            json_number(&j, round(p->expert_seconds * 1e3) / 1e3);
        }
        json_key(&j, "dealt_layers");
        json_number(&j, (double)p->experts.dealt_layers);
        json_key(&j, "glpk");
        json_begin_object(&j);
        json_key(&j, "problems");
        json_number(&j, (double)p->experts.ilp.problems);
        json_key(&j, "proven_optimal");
        json_number(&j, (double)p->experts.ilp.proven);
        json_key(&j, "improved");
        json_number(&j, (double)p->experts.ilp.improved);
        if (p->timings) {
            json_key(&j, "seconds");
            json_number(&j, round(p->experts.ilp.seconds * 1e3) / 1e3);
        }
        json_end_object(&j);
        json_end_object(&j);
    }
    if (p->have_traffic) {
        json_key(&j, "remote_dispatch_fraction");
        json_number(&j, p->hashed.remote_dispatch_fraction);
        json_key(&j, "remote_domains_per_token");
        json_number(&j, p->hashed.remote_domains_per_token);
        json_key(&j, "local_routing");
        json_begin_object(&j);
        json_key(&j, "remote_dispatch_fraction");
        json_number(&j, p->local.remote_dispatch_fraction);
        json_key(&j, "remote_domains_per_token");
        json_number(&j, p->local.remote_domains_per_token);
        json_end_object(&j);
    }
    if (p->layer_times) {
        json_key(&j, "moe_layer_time");
        json_begin_object(&j);
        json_key(&j, "step_tokens");
        json_number(&j, p->layer_tokens);
        json_key(&j, "overlap");
        json_bool(&j, p->overlap);
        json_key(&j, "placement");
        json_layer_times(&j, p->layer_times, p->experts.layers);
        json_key(&j, "naive");
        json_layer_times(&j, p->naive_times, p->experts.layers);
        json_end_object(&j);
    }
    if (p->have_stage_stats) {
        json_key(&j, "stages_solver");
        json_begin_object(&j);
        json_key(&j, "status");
        json_string(&j, lp_status_name(p->stage_stats.status));
        json_key(&j, "objective");
        json_number(&j, p->stage_stats.objective);
        json_key(&j, "bound");
        json_number(&j, p->stage_stats.bound);
        json_key(&j, "gap");
        json_number(&j, p->stage_stats.gap);
        json_end_object(&j);
    }
    json_key(&j, "per_device_memory");
    json_begin_object(&j);
    json_key(&j, "weights_bytes");
    json_number(&j, ceil(p->memory.weights_bytes));
    json_key(&j, "kv_bytes");
    json_number(&j, ceil(p->memory.kv_bytes));
    json_key(&j, "free_bytes");
    json_number(&j, floor(p->memory.free_bytes));
    json_end_object(&j);
    json_key(&j, "predicted");
    json_begin_object(&j);
    json_key(&j, "step_s");
    json_number(&j, p->step.step_s);
    json_key(&j, "tokens_per_s");
    json_number(&j, p->step.tokens_per_s);
    json_key(&j, "tokens_per_s_per_device");
    json_number(&j, p->step.tokens_per_s_per_device);
    json_key(&j, "bound");
    json_string(&j, roof_term_name(p->step.bound));
    if (p->serving) {
        json_key(&j, "workload");
        json_begin_object(&j);
        cli_json_serve_workload(&j, p->serving);
        json_end_object(&j);
        json_key(&j, "ttft_s");
        json_positive_or_null(&j, p->served ? p->ttft_s : 0);
        json_key(&j, "tpot_s");
        json_positive_or_null(&j, p->served ? p->tpot_s : 0);
        struct serve_tail none = {0};
        cli_json_tail(&j, p->served ? &p->tail : &none);
    }
    json_key(&j, "kind");
    json_string(&j, p->estimate ? "estimate" : "bound");
    if (p->estimate) {
        json_key(&j, "efficiency");
        cli_json_efficiency(&j, &p->efficiency, p->calibration);
        json_key(&j, "roofline_bound");
        json_begin_object(&j);
        json_key(&j, "step_s");
        json_number(&j, p->bound_step.step_s);
        json_key(&j, "tokens_per_s");
        json_number(&j, p->bound_step.tokens_per_s);
        json_key(&j, "tokens_per_s_per_device");
        json_number(&j, p->bound_step.tokens_per_s_per_device);
        json_end_object(&j);
    }
    json_end_object(&j);
    if (o->options->emit_dir)
        cli_json_emitted(&j, o->options, o->emitted, o->expert_map);
    json_end_object(&j);
    json_finish(&j);
}

static void write_text(FILE *out, const struct model *m, const struct topology *t,
                       const struct workload *w, const struct planned *p)
{
    char a[64], b[64];
    format_count((double)p->layout.devices, a, sizeof a);
    fprintf(out, "%s on %s%s: %" PRId64 " scale-up domain%s, %s devices\n", m->name, t->name,
            t->announced ? " (announced, not shipping)" : "", p->layout.racks,
            p->layout.racks == 1 ? "" : "s", a);
    format_count((double)p->batch, a, sizeof a);
    format_count((double)w->context, b, sizeof b);
    fprintf(out, "  batch %s sequences at %s tokens; TP %" PRId64 " x DP %" PRId64 " x PP %" PRId64
                 ", EP %" PRId64 "\n",
            a, b, p->layout.tp, p->layout.dp, p->layout.pp, p->layout.ep);
    fprintf(out, "\nstages\n");
    for (int64_t s = 0; s < p->layout.pp; s++) {
        int64_t first, end;
        plan_stage_layers(m, &p->layout, s, &first, &end);
        fprintf(out, "  stage %" PRId64 ": layers %" PRId64 "-%" PRId64 " on devices %" PRId64 "-%" PRId64 "\n",
                s, first, end - 1, s * (p->layout.devices / p->layout.pp),
                (s + 1) * (p->layout.devices / p->layout.pp) - 1);
    }
    if (p->have_stage_stats)
        fprintf(out, "  solver: %s, bottleneck %.4g ms, bound %.4g ms, gap %.2g%%, %.3f s\n",
                lp_status_name(p->stage_stats.status), p->stage_stats.objective * 1e3,
                p->stage_stats.bound * 1e3, p->stage_stats.gap * 100, p->stage_stats.seconds);
    if (p->moe) {
        fprintf(out, "\nexperts (%s loads): %" PRId64 " slots on each of %" PRId64 " devices, %" PRId64
                     " spare for replicas of hot experts%s\n",
                p->uniform ? "uniform" : "measured", p->slots, p->ep_domains * p->ep_devices,
                p->ep_domains * p->ep_devices * p->slots - m->moe.experts,
                p->redundant_auto ? " (auto: the slots HBM holds at this batch)" : "");
        fprintf(out, "  GPU imbalance (max / mean load)     mean %.4f, worst layer %.4f\n",
                p->experts.gpu_imbalance_mean, p->experts.gpu_imbalance_worst);
        if (p->ep_domains > 1)
            fprintf(out, "  domain imbalance                    mean %.4f, worst layer %.4f\n",
                    p->experts.domain_imbalance_mean, p->experts.domain_imbalance_worst);
        double objective = p->experts.gpu_imbalance_mean, bound = p->experts.bound_mean;
        fprintf(out, "  solver: mean GPU imbalance %.4f, bound %.4f, gap %.2f%% (worst layer %.2f%%), %.3f s\n",
                objective, bound, (objective - bound) / objective * 100, p->experts.worst_gap * 100,
                p->expert_seconds);
        if (p->expert_time_limited)
            fprintf(out, "  stopped at --time-limit %g s: this placement depends on the machine's speed, "
                         "a larger limit may lower it\n",
                    p->time_limit_s);
        if (p->experts.dealt_layers > 0)
            fprintf(out, "  %" PRId64 " of %" PRId64 " layers began after the limit and were dealt round-robin, "
                         "heaviest copy first, without search\n",
                    p->experts.dealt_layers, p->experts.layers);
        if (p->experts.ilp.problems > 0)
            fprintf(out, "  GLPK on the most loaded device's domain: %" PRId64 " problems, %" PRId64
                         " proven optimal, %" PRId64 " lowered a layer's maximum, %.3f s\n",
                    p->experts.ilp.problems, p->experts.ilp.proven, p->experts.ilp.improved,
                    p->experts.ilp.seconds);
        if (p->experts.priced)
            fprintf(out, "  placed to lower the MoE layer time below, experts picked together in one domain "
                         "(%.3f domains a token in the trace); the network sets %" PRId64 " of %" PRId64
                         " layers (no GLPK there)\n",
                    p->experts.domains_per_token, p->experts.network_bound, p->experts.layers);
        if (p->have_traffic)
            fprintf(out, "  dispatch leaving the token's domain: %.4f of pairs, %.3f domains per token "
                         "(local routing: %.4f, %.3f)\n",
                    p->hashed.remote_dispatch_fraction, p->hashed.remote_domains_per_token,
                    p->local.remote_dispatch_fraction, p->local.remote_domains_per_token);
        if (p->layer_times) {
            char tokens[32];
            format_count(p->layer_tokens, tokens, sizeof tokens);
            fprintf(out, "  MoE layer time, a decode step of %s tokens (bound; communication %s compute):\n",
                    tokens, p->overlap ? "under" : "after");
            text_layer_times(out, "this placement", p->layer_times, p->experts.layers);
            char naive[96];
            snprintf(naive, sizeof naive, "naive (expert e on device e mod %lld)", (long long)p->layout.ep);
            text_layer_times(out, naive, p->naive_times, p->experts.layers);
            int64_t lean = (m->moe.experts + p->layout.ep - 1) / p->layout.ep;
            struct layer_time_summary ours = summarise_layer_times(p->layer_times, p->experts.layers);
            struct layer_time_summary theirs = summarise_layer_times(p->naive_times, p->experts.layers);
            if (lean < p->slots && theirs.sum_s < ours.sum_s * (1 - 1e-9))
                fprintf(out, "    the naive placement is faster: at this batch reading a device's %lld copies, not %lld, "
                             "sets its compute; replicas of hot experts cost more than they balance (--redundant)\n",
                        (long long)p->slots, (long long)lean);
        }
        fprintf(out, "  the per-device expert lists: --format json or --expert-map FILE.csv\n");
    }
    char gb[32];
    format_gb(p->memory.free_bytes, gb, sizeof gb);
    fprintf(out, "\npredicted (%s, with the placement's imbalance)\n",
            p->estimate ? "calibrated estimate" : "roofline bound");
    if (p->estimate)
        cli_text_efficiency(out, &p->efficiency, p->calibration);
    format_count(p->step.tokens_per_s, a, sizeof a);
    format_count(p->step.tokens_per_s_per_device, b, sizeof b);
    if (p->serving)
        fprintf(out, "  serving %lld prompt and %lld output tokens a request: each step carries the decode batch and "
                     "the prefill of the prompts that replace finished requests; tokens/s are output tokens\n",
                (long long)p->serving->isl, (long long)p->serving->osl);
    fprintf(out, "  step %.4g ms, %s tokens/s, %s per device; %s binds; %s GB free per device\n",
            p->step.step_s * 1e3, a, b, roof_term_name(p->step.bound), gb);
    if (p->serving && p->served)
        fprintf(out, "  TTFT %.1f ms, TPOT %.2f ms; p50 / p90 / p99: TTFT %.1f / %.1f / %.1f ms, TPOT %.2f / %.2f / %.2f ms\n",
                p->ttft_s * 1e3, p->tpot_s * 1e3, p->tail.ttft_s[0] * 1e3, p->tail.ttft_s[1] * 1e3,
                p->tail.ttft_s[2] * 1e3, p->tail.tpot_s[0] * 1e3, p->tail.tpot_s[1] * 1e3, p->tail.tpot_s[2] * 1e3);
    else if (p->serving)
        fprintf(out, "  the batch's prefill exceeds the chunk budget (--chunk) or its KV does not fit\n");
    if (p->estimate) {
        format_count(p->bound_step.tokens_per_s, a, sizeof a);
        format_count(p->bound_step.tokens_per_s_per_device, b, sizeof b);
        fprintf(out, "  bound: step %.4g ms, %s tokens/s, %s per device (efficiency 1)\n",
                p->bound_step.step_s * 1e3, a, b);
    }
}

/* What the main output and the expert map are written from. */

static void write_output(FILE *out, const void *data)
{
    const struct plan_output *o = data;
    enum json_syntax syntax;
    if (cli_tree_format(o->format, &syntax))
        write_tree(out, syntax, o->model, o->topology, o->workload, o->planned, o);
    else
        write_text(out, o->model, o->topology, o->workload, o->planned);
}

/* The CSV has one row per MoE layer (EPLB's form). The JSON is SGLang's --init-expert-location
 * physical_to_logical_map: one row per model layer, indexed by layer id, so a dense layer gets
 * a trivial row (slot i holds expert i mod E). */
static void write_expert_map(FILE *out, bool json_format, const struct plan_output *o)
{
    const struct planned *p = o->planned;
    const struct model *m = o->model;
    int64_t rows = json_format ? m->layers : model_moe_layers(m);
    int64_t width = p->ep_domains * p->ep_devices * p->slots;
    if (json_format)
        fprintf(out, "{\"physical_to_logical_map\": [\n");
    int64_t moe_layer = 0;
    for (int64_t row = 0; row < rows; row++) {
        bool dense = json_format && !model_layer_is_moe(m, row);
        if (json_format)
            fprintf(out, "  [");
        for (int64_t k = 0; k < width; k++)
            fprintf(out, "%s%lld", k ? (json_format ? ", " : ",") : "",
                    dense ? (long long)(k % m->moe.experts) : (long long)p->experts.expert[moe_layer * width + k]);
        moe_layer += !dense;
        if (json_format)
            fprintf(out, "]%s\n", row + 1 < rows ? "," : "");
        else
            fprintf(out, "\n");
    }
    if (json_format)
        fprintf(out, "]}\n");
}

static void write_expert_map_csv(FILE *out, const void *data)
{
    write_expert_map(out, false, data);
}

static void write_expert_map_json(FILE *out, const void *data)
{
    write_expert_map(out, true, data);
}

/* The figures of a plan report, each drawn by one callback. */
struct batch_figure {
    const struct roof_setup *setup;
    const char *model, *topology;
    const struct roof_point *points;
    int64_t count;
};

static void draw_batch(FILE *out, const void *data)
{
    const struct batch_figure *f = data;
    plot_roofline(out, &f->setup->layout, f->model, f->topology, f->points, f->count,
                  roof_latency_floor_s(f->setup), roof_crossover_batch(f->setup), false, false);
}

struct memory_figure {
    const char *title;
    const struct plot_memory_bar *bars;
    int count;
};

static void draw_memory(FILE *out, const void *data)
{
    const struct memory_figure *f = data;
    plot_memory_bars(out, f->title, f->bars, f->count);
}

struct heat_figure {
    const char *title, *subtitle;
    const double *values;
    int64_t rows, columns;
};

static void draw_heat(FILE *out, const void *data)
{
    const struct heat_figure *f = data;
    plot_heat_map(out, f->title, f->subtitle, f->values, f->rows, f->columns, "MoE layer",
                  "device (expert-parallel rank)");
}

static void write_report_memory(struct document *d, const struct model *m, const struct topology *t,
                                const struct workload *w, const struct planned *p)
{
    int64_t stages = p->layout.pp;
    struct plot_memory_bar *bars = xcalloc((size_t)stages, sizeof *bars);
    char (*labels)[96] = xcalloc((size_t)stages, sizeof *labels);
    static const char *const headers[] = {"stage", "devices", "layers", "weights GB", "KV cache GB",
                                          "activations GB", "reserve GB", "free GB"};
    document_heading(d, "Memory per device");
    document_table_begin(d, 8, headers, "llrrrrrr");
    int64_t per_stage = p->layout.devices / stages;
    for (int64_t s = 0; s < stages; s++) {
        struct device_memory mem;
        plan_stage_memory(m, t, &p->layout, w, s, &mem);
        char stage[24], devices[48], layers[24], cell[5][32];
        snprintf(stage, sizeof stage, "%" PRId64, s);
        snprintf(devices, sizeof devices, "%" PRId64 "-%" PRId64, s * per_stage, (s + 1) * per_stage - 1);
        snprintf(layers, sizeof layers, "%" PRId64, mem.layers);
        double parts[5] = {mem.weights_bytes, mem.kv_bytes, mem.activation_bytes, mem.reserve_bytes,
                           mem.free_bytes};
        for (int i = 0; i < 5; i++) {
            format_gb(parts[i], cell[i], sizeof cell[i]);
            bars[s].gb[i] = parts[i] / 1e9;
        }
        const char *row[] = {stage, devices, layers, cell[0], cell[1], cell[2], cell[3], cell[4]};
        document_table_row(d, row);
        snprintf(labels[s], sizeof labels[s], "stage %" PRId64 ": devices %s", s, devices);
        bars[s].label = labels[s];
        bars[s].hbm_gb = mem.hbm_bytes / 1e9;
    }
    document_table_end(d);
    char batch[32];
    format_count((double)p->batch, batch, sizeof batch);
    char title[160];
    snprintf(title, sizeof title, "Memory per device at batch %s", batch);
    struct memory_figure figure = {title, bars, (int)stages};
    document_figure(d, "memory", "Memory per device, each pipeline stage", draw_memory, &figure);
    free(labels);
    free(bars);
}

static void write_report_step(struct document *d, const struct model *m, const struct topology *t,
                              const struct roof_setup *setup, const struct planned *p)
{
    document_heading(d, "Predicted decode step");
    static const char *const headers[] = {"batch", "step ms", "binds", "compute ms", "weights ms",
                                          "KV ms", "network ms", "tokens/s", "tokens/s per device"};
    document_table_begin(d, 9, headers, "rrlrrrrrr");
    char cell[9][32];
    format_count((double)p->batch, cell[0], sizeof cell[0]);
    snprintf(cell[1], sizeof cell[1], "%.4g", p->step.step_s * 1e3);
    snprintf(cell[2], sizeof cell[2], "%s", roof_term_name(p->step.bound));
    snprintf(cell[3], sizeof cell[3], "%.4g", p->step.compute_s * 1e3);
    snprintf(cell[4], sizeof cell[4], "%.4g", p->step.weights_s * 1e3);
    snprintf(cell[5], sizeof cell[5], "%.4g", p->step.kv_s * 1e3);
    snprintf(cell[6], sizeof cell[6], "%.4g", p->step.comm_s * 1e3);
    format_count(p->step.tokens_per_s, cell[7], sizeof cell[7]);
    format_count(p->step.tokens_per_s_per_device, cell[8], sizeof cell[8]);
    const char *row[9];
    for (int i = 0; i < 9; i++)
        row[i] = cell[i];
    document_table_row(d, row);
    document_table_end(d);
    if (p->estimate) {
        struct roof_setup bound = *setup;
        bound.efficiency = EFFICIENCY_BOUND;
        char rate[32];
        format_count(p->bound_step.tokens_per_s, rate, sizeof rate);
        document_paragraph(d, "Calibrated estimate: compute at %.3g, HBM at %.3g, scale-up at %.3g and scale-out "
                              "at %.3g of peak, routed experts at %.3g of those, plus %.3g ms a step, fitted by "
                              "rackplan calibrate to %s%s. The "
                              "roofline bound at the same batch: a step of %.4g ms, %s tokens/s; latency floor "
                              "(batch 1) %.4g ms estimated, %.4g ms bound.",
                           p->efficiency.compute, p->efficiency.memory, p->efficiency.scale_up,
                           p->efficiency.scale_out, p->efficiency.experts, p->efficiency.step_overhead_s * 1e3,
                           p->calibration ? p->calibration->fitted_to : "the --eta-* given",
                           p->calibration && p->calibration->pooled ? " (other hardware: none measured on this)" : "",
                           p->bound_step.step_s * 1e3, rate, roof_latency_floor_s(setup) * 1e3,
                           roof_latency_floor_s(&bound) * 1e3);
    } else {
        document_paragraph(d, "Roofline bound: each term at peak FLOP/s, HBM and link bandwidth; the step "
                              "is the largest of compute, memory (weights + KV read) and network%s, "
                              "times the pipeline stages, plus the pipeline sends. Latency floor (batch 1): %.4g ms.",
                           p->moe ? ", with the expert placement's mean GPU imbalance on the expert terms" : "",
                           roof_latency_floor_s(setup) * 1e3);
    }
    enum { POINTS = 40 };
    int64_t batches[POINTS];
    int64_t top = p->batch > 1 ? p->batch : 2;
    int64_t count = roof_sweep_batches(1, top, POINTS, batches);
    struct roof_point points[POINTS];
    for (int64_t i = 0; i < count; i++)
        roof_decode(setup, batches[i], &points[i]);
    struct batch_figure figure = {setup, m->name, t->name, points, count};
    document_figure(d, "batch", "Time per decode step and cost per token against batch, up to the plan's batch",
                    draw_batch, &figure);
}

static void write_report_experts(struct document *d, const struct planned *p)
{
    document_heading(d, "Experts on devices");
    const struct cluster_placement *e = &p->experts;
    document_paragraph(d, "%" PRId64 " slots on each of %" PRId64 " devices (%" PRId64 " scale-up domain%s of %" PRId64
                          "), %s loads. GPU imbalance (max / mean load): mean %.4f, worst layer %.4f; "
                          "lower bound %.4f, gap %.2f%%.",
                       p->slots, p->ep_domains * p->ep_devices, p->ep_domains, p->ep_domains == 1 ? "" : "s",
                       p->ep_devices, p->uniform ? "uniform" : "measured", e->gpu_imbalance_mean,
                       e->gpu_imbalance_worst, e->bound_mean,
                       (e->gpu_imbalance_mean - e->bound_mean) / e->gpu_imbalance_mean * 100);
    int64_t columns = e->domains * e->devices;
    double *values = xmalloc((size_t)(e->layers * columns) * sizeof *values);
    for (int64_t l = 0; l < e->layers; l++) {
        double mean = 0;
        for (int64_t c = 0; c < columns; c++)
            mean += e->device_load[l * columns + c];
        mean /= (double)columns;
        for (int64_t c = 0; c < columns; c++)
            values[l * columns + c] = mean > 0 ? e->device_load[l * columns + c] / mean : 1;
    }
    struct heat_figure figure = {"Expert load per device and MoE layer",
                                 "each cell: tokens the device's experts receive / the layer's mean",
                                 values, e->layers, columns};
    document_figure(d, "experts", "Expert load: MoE layers x devices, as a multiple of the layer's mean",
                    draw_heat, &figure);
    free(values);
}

static bool write_report(const char *path, const struct model *m, const struct topology *t,
                         const struct workload *w, const struct roof_setup *setup,
                         const struct planned *p, struct sink_batch *outputs)
{
    char title[300];
    snprintf(title, sizeof title, "%s on %s", m->name, t->name);
    struct document d;
    if (!document_open(&d, path, title)) {
        outputs->failed = true;
        return false;
    }
    char batch[32], context[32];
    format_count((double)p->batch, batch, sizeof batch);
    format_count((double)w->context, context, sizeof context);
    document_paragraph(&d, "%" PRId64 " devices in %" PRId64 " scale-up domain%s; TP %" PRId64 " x DP %" PRId64
                           " x PP %" PRId64 "%s; batch %s sequences at %s tokens of context. "
                           "Written by rackplan " RACKPLAN_VERSION ".",
                       p->layout.devices, p->layout.racks, p->layout.racks == 1 ? "" : "s", p->layout.tp,
                       p->layout.dp, p->layout.pp, p->moe ? ", experts spread over each stage" : "", batch,
                       context);
    write_report_memory(&d, m, t, w, p);
    write_report_step(&d, m, t, setup, p);
    if (p->moe)
        write_report_experts(&d, p);
    document_hold(&d, outputs);
    return !outputs->failed;
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

int cmd_plan(int argc, char **argv)
{
    struct options o;
    struct model m;
    struct topology t;
    int status = cli_prepare(&command_plan, argc, argv, &o, &m, &t);
    if (status >= 0)
        return status;
    struct workload w;
    cli_workload(&o, &w);
    struct planned p;
    memset(&p, 0, sizeof p);
    struct serve_workload serving;
    if ((status = cli_serve_workload_checked(o.command, &o, &m, &serving)) >= 0)
        return status;
    if (o.emit_dir && serving.isl <= 0)
        return cli_usage_error(o.command, "--emit sizes the engine's batch and chunk for a workload: give --isl and --osl");
    if (serving.isl > 0) {
        /* HBM holds a sequence at its longest */
        w.context = serve_held_context(&serving);
        p.serving = &serving;
    }
    if (!cli_efficiency(&o, &t, o.positional[1], w.weights, &p.efficiency, &p.calibration))
        return EXIT_USAGE;
    p.estimate = !efficiency_is_bound(&p.efficiency);
    p.moe = model_is_moe(&m);
    p.timings = o.timings;
    if (o.loads && !p.moe)
        return cli_usage_error(o.command, "--loads is for MoE models; %s is dense", m.name);
    if (p.moe) {
        struct diags d;
        diags_init(&d);
        if (o.loads) {
            enum loads_status read = loads_read(o.loads, &p.loads, &d);
            if (read == LOADS_OK && loads_check_model(&p.loads, &m, o.loads, &d) != LOADS_OK) {
                loads_release(&p.loads);
                read = LOADS_INVALID;
            }
            diags_print(&d, stderr);
            diags_release(&d);
            if (read != LOADS_OK)
                return read == LOADS_IO_ERROR ? EXIT_IO : EXIT_INVALID;
        } else {
            loads_uniform(&m, 1, &p.loads);
            p.uniform = true;
        }
    }

    int64_t devices = o.racks * t.domain_devices;
    w.batch = 1;
    if (!plan_choose_layout(&m, &t, o.racks, devices, &w, &p.layout)) {
        loads_release(&p.loads);
        return cli_usage_error(o.command, "no layout with the pinned TP/PP on %lld devices", (long long)devices);
    }
    if (o.ep && o.ep != p.layout.ep) {
        loads_release(&p.loads);
        return cli_usage_error(o.command,
                               "--ep %lld: experts spread over the %lld devices of a stage here (racks x domain "
                               "size / PP); choose --racks or --pp to match",
                               (long long)o.ep, (long long)p.layout.ep);
    }
    /* the batch: as asked, or the largest that fits this layout at the context (with a workload:
     * and whose serving step meets the targets) */
    p.layout.redundant = o.redundant;
    int64_t most = o.batch_set ? 0 : plan_max_batch(&m, &t, &p.layout, &w);
    struct graph_summary g;
    if (graph_analyse(&t, o.racks, &g) != GRAPH_OK) {
        loads_release(&p.loads);
        fprintf(stderr, "rackplan plan: the interconnect graph could not be built (out of memory)\n");
        return EXIT_IO;
    }
    struct serve_pool pool = {.model = &m, .topology = &t, .precisions = w, .efficiency = p.efficiency,
                              .price_usd_per_hour = t.price_usd_per_hour};
    if (p.serving && most > 0) {
        int64_t within = serve_largest_batch(&pool, &g, &p.layout, &serving, most);
        most = within > 0 ? within : 1;
    }
    p.batch = o.batch_set ? o.batch : (most > 0 ? most : 1);
    w.batch = p.batch;
    p.redundant_auto = o.redundant_auto && p.moe;
    if (p.redundant_auto)
        p.layout.redundant = redundant_that_fits(&m, &t, &p.layout, &w);
    plan_memory(&m, &t, &p.layout, &w, &p.memory);
    /* one --time-limit for all solving: the stages' ILP first, expert placement in what is left */
    double solving_start = monotonic_seconds();
    double deadline = o.time_limit_s > 0 ? solving_start + o.time_limit_s : 0;
    if (p.layout.pp > 1) {
        plan_stages(&m, &t, &w, o.time_limit_s, &p);
        p.layout.stage_start = p.split.start; /* memory and time on the solved stages */
        if (!o.batch_set) {
            most = plan_max_batch(&m, &t, &p.layout, &w);
            if (p.serving && most > 0) {
                pool.precisions = w;
                int64_t within = serve_largest_batch(&pool, &g, &p.layout, &serving, most);
                most = within > 0 ? within : 1;
            }
            p.batch = w.batch = most > 0 ? most : 1;
        }
        plan_memory(&m, &t, &p.layout, &w, &p.memory);
    }

    if (o.trace && !p.moe) {
        loads_release(&p.loads);
        return cli_usage_error(o.command, "--trace is for MoE models; %s is dense", m.name);
    }
    struct trace trace = {0};
    if (o.trace) {
        struct diags d;
        diags_init(&d);
        enum trace_status read = trace_read(o.trace, m.moe.experts, &trace, &d);
        if (read == TRACE_OK && (trace.layers != p.loads.layers || trace.k != m.moe.experts_per_token)) {
            diags_add(&d, o.trace, 0, 0, "the trace has %lld layers of top-%lld; %s has %lld MoE layers of top-%lld",
                      (long long)trace.layers, (long long)trace.k, m.name, (long long)p.loads.layers,
                      (long long)m.moe.experts_per_token);
            trace_release(&trace);
            read = TRACE_INVALID;
        }
        diags_print(&d, stderr);
        diags_release(&d);
        if (read != TRACE_OK) {
            loads_release(&p.loads);
            return read == TRACE_IO_ERROR ? EXIT_IO : EXIT_INVALID;
        }
    }

    if (p.moe) {
        int64_t group = p.layout.ep;
        p.ep_devices = group < t.domain_devices ? group : t.domain_devices;
        p.ep_domains = group / p.ep_devices;
        p.slots = (m.moe.experts + p.layout.redundant + group - 1) / group;
        struct model_params params;
        model_params(&m, &params);
        p.overlap = o.overlap;
        p.layer_tokens = (double)p.batch / (double)p.layout.pp;
        struct moe_layer_physics physics = {
            .step_tokens = p.layer_tokens,
            .flops_per_dispatch = 2 * params.routed_expert,
            .expert_bytes = params.routed_expert * precision_bytes(w.expert_weights),
            .hidden = (double)m.hidden_size,
            .peak_flops_per_s = topology_peak_flops_per_s(&t, w.expert_weights, NULL),
            .hbm_bytes_per_s = t.hbm_bytes_per_s,
            .nic_bytes_per_s = topology_scale_out_bytes_per_s(&t),
            .scale_up_bytes_per_s = topology_scale_up_bytes_per_s(&t),
            .overlap = o.overlap};
        bool priceable = physics.peak_flops_per_s > 0 && physics.hbm_bytes_per_s > 0 &&
                         physics.nic_bytes_per_s > 0 && physics.scale_up_bytes_per_s > 0;
        double start = monotonic_seconds();
        struct cluster_routing routing = {.chosen = trace.expert, .tokens = trace.tokens, .k = trace.k,
                                          .groups = m.moe.groups, .physics = priceable ? &physics : NULL,
                                          .deadline = deadline};
        bool placed = cluster_place(p.loads.tokens, p.loads.layers, p.loads.experts, p.ep_domains,
                                    p.ep_devices, p.slots, &routing, &p.experts);
        p.expert_seconds = monotonic_seconds() - start;
        p.time_limit_s = o.time_limit_s;
        p.expert_time_limited = deadline > 0 && monotonic_seconds() >= deadline;
        if (!placed) {
            loads_release(&p.loads);
            trace_release(&trace);
            fprintf(stderr, "rackplan plan: no placement of %lld experts on %lld devices x %lld slots\n",
                    (long long)m.moe.experts, (long long)group, (long long)p.slots);
            return EXIT_NO_FIT;
        }
        if (priceable) {
            int64_t layers = p.experts.layers, width = group * p.slots;
            p.layer_times = xmalloc((size_t)layers * sizeof *p.layer_times);
            p.naive_times = xmalloc((size_t)layers * sizeof *p.naive_times);
            int32_t *naive = xmalloc((size_t)(layers * width) * sizeof *naive);
            traffic_naive_map(layers, m.moe.experts, group, p.slots, naive);
            const struct trace *sample = o.trace ? &trace : NULL;
            struct timed_map ours = {.trace = sample, .loads = p.loads.tokens, .layers = layers,
                                     .map = p.experts.expert, .devices = group, .slots = p.slots,
                                     .devices_per_domain = p.ep_devices, .experts = m.moe.experts,
                                     .k = m.moe.experts_per_token, .physics = &physics, .out = p.layer_times,
                                     .hashed = &p.hashed};
            struct timed_map naive_job = ours;
            naive_job.map = naive;
            naive_job.out = p.naive_times;
            naive_job.hashed = NULL;
            pthread_t helper;
            bool helped = pthread_create(&helper, NULL, time_map, &naive_job) == 0;
            time_map(&ours);
            if (helped)
                pthread_join(helper, NULL);
            else
                time_map(&naive_job);
            free(naive);
        }
        if (o.trace) {
            if (!priceable)
                traffic_measure(&trace, p.experts.expert, group, p.slots, p.ep_devices, m.moe.experts, false,
                                &p.hashed);
            if (traffic_experts_whole(p.experts.expert, p.experts.layers, group, p.slots, p.ep_devices, m.moe.experts))
                p.local = p.hashed;
            else
                traffic_measure(&trace, p.experts.expert, group, p.slots, p.ep_devices, m.moe.experts, true,
                                &p.local);
            p.have_traffic = true;
        }
    }
    trace_release(&trace);

    struct roof_setup setup = {.model = &m, .topology = &t, .graph = &g, .layout = p.layout, .workload = w,
                               .efficiency = EFFICIENCY_BOUND,
                               .expert_imbalance = p.moe ? p.experts.gpu_imbalance_mean : 1};
    if (p.serving) {
        pool.precisions = w;
        pool.expert_imbalance = setup.expert_imbalance;
        struct serve_pool bound_pool = pool;
        bound_pool.efficiency = EFFICIENCY_BOUND;
        serve_aggregated_step(&bound_pool, &g, &p.layout, &serving, p.batch, &p.bound_step);
        serve_aggregated_step(&pool, &g, &p.layout, &serving, p.batch, &p.step);
        struct serve_point served;
        p.served = serve_aggregated(&pool, &g, &p.layout, &serving, p.batch, &served);
        if (p.served) {
            p.ttft_s = served.ttft_s;
            p.tpot_s = served.tpot_s;
            p.tail = served.tail;
        }
    } else {
        roof_decode(&setup, p.batch, &p.bound_step);
        setup.efficiency = p.efficiency;
        roof_decode(&setup, p.batch, &p.step);
    }
    setup.efficiency = p.efficiency;

    status = p.memory.free_bytes >= 0 ? EXIT_OK : EXIT_NO_FIT;
    struct plan_output output = {.model = &m, .topology = &t, .workload = &w, .planned = &p, .format = o.format,
                                 .options = &o};
    /* --emit: the plan as one aggregated instance (its expert map beside SGLang's scripts) */
    struct emit_output emitted = {0};
    char map_path[4096] = "";
    bool emitting = o.emit_dir && p.memory.free_bytes >= 0;
    if (o.emit_dir && !emitting)
        fprintf(stderr, "rackplan plan: --emit: the plan does not fit, so nothing is written\n");
    bool with_map = emitting && p.moe && o.emit_engine == EMIT_SGLANG && p.layout.ep > 1;
    if (emitting) {
        char model_path[512];
        cli_model_path(&m, o.positional[0], model_path, sizeof model_path);
        if (with_map)
            cli_emit_path(&o, "expert-map.json", map_path, sizeof map_path);
        struct emit_plan plan = {
            .command = "plan", .model_name = m.name, .model_path = model_path, .topology_name = t.name,
            .family = t.family, .domain_devices = t.domain_devices, .moe = p.moe,
            .experts = p.moe ? m.moe.experts : 0, .mtp_layers = m.mtp_layers, .kv = w.kv, .isl = serving.isl,
            .osl = serving.osl, .mtp = serving.mtp, .mtp_accept = serving.mtp_accept,
            .ttft_target_s = serving.ttft_s, .tpot_target_s = serving.tpot_s, .ttft_s = p.ttft_s,
            .tpot_s = p.tpot_s, .tokens_per_s_per_device = p.step.tokens_per_s_per_device,
            .tokens_per_s = p.step.tokens_per_s, .bound = !p.estimate, .role_count = 1,
            .expert_map = with_map ? map_path : NULL};
        plan.roles[0] = (struct emit_role){
            .kind = EMIT_AGGREGATED, .tp = p.layout.tp, .dp = p.layout.dp, .pp = p.layout.pp, .ep = p.layout.ep,
            .devices = p.layout.devices, .instances = 1, .batch = p.batch,
            .chunk_tokens = serving.chunk_tokens ? serving.chunk_tokens : SERVE_DEFAULT_CHUNK_TOKENS,
            .slots = p.moe ? p.slots : 0, .weights_bytes = p.memory.weights_bytes, .kv_bytes = p.memory.kv_bytes,
            .activation_bytes = p.memory.activation_bytes, .hbm_bytes = p.memory.hbm_bytes};
        output.emitted = &emitted;
        output.expert_map = with_map ? map_path : NULL;
        int refused = cli_emit_build(&o, &plan, &emitted);
        if (refused >= 0) {
            planned_release(&p);
            return refused;
        }
    }
    struct sink_batch outputs;
    sink_batch_init(&outputs);
    bool whole = sink_batch_write(&outputs, o.output, write_output, &output) &&
                 (!o.expert_map || !p.moe ||
                  sink_batch_write(&outputs, o.expert_map,
                                   path_ends_with(o.expert_map, ".json") ? write_expert_map_json
                                                                         : write_expert_map_csv,
                                   &output)) &&
                 (!o.report || write_report(o.report, &m, &t, &w, &setup, &p, &outputs)) &&
                 (!emitting || cli_emit_write(&o, &emitted, &outputs)) &&
                 (!with_map || sink_batch_write(&outputs, map_path, write_expert_map_json, &output));
    if (!sink_batch_finish(&outputs, whole))
        status = EXIT_IO;
    else if (emitting) {
        cli_emit_report(&o, &emitted);
        if (with_map)
            fprintf(stderr, "rackplan plan: wrote %s (SGLang's --init-expert-location, with "
                            "--ep-num-redundant-experts %lld: %lld slots over %lld experts)\n",
                    map_path, (long long)(p.slots * p.layout.ep - m.moe.experts),
                    (long long)(p.slots * p.layout.ep), (long long)m.moe.experts);
        else if (p.moe && p.layout.ep > 1)
            /* only SGLang's --init-expert-location was verified to load a placement: say what the
             * other engines' files lack rather than let them seem to carry it */
            fprintf(stderr, "rackplan plan: the expert placement (%lld slots over %lld experts) is not in these "
                            "files: no %s option verified here loads an expert map (--emit sglang writes it, "
                            "with --init-expert-location and --ep-num-redundant-experts)\n",
                    (long long)(p.slots * p.layout.ep), (long long)m.moe.experts,
                    o.emit_engine == EMIT_DYNAMO ? "Dynamo worker" : emit_engine_name((enum emit_engine)o.emit_engine));
    }
    emit_output_release(&emitted);
    if (p.memory.free_bytes < 0)
        explain_no_fit(&m, &t, &w, &p);
    planned_release(&p);
    return status;
}
