/* cmd_plan.c: `rackplan plan MODEL TOPOLOGY`: the layout, layers on stages, experts on devices,
 * and the step time the placement implies (planning.h makes the plan; this prints it). */
#include "cli.h"
#include "commands.h"
#include "diag.h"
#include "emit.h"
#include "loads.h"
#include "model.h"
#include "plan.h"
#include "planning.h"
#include "roofline.h"
#include "serve.h"
#include "topology.h"
#include "trace.h"

#include "../reports/document.h"
#include "../reports/json.h"
#include "../reports/plot.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

static void json_layer_times(struct json *j, const struct layer_time_summary *s, const struct layer_time *times,
                             int64_t layers)
{
    json_begin_object(j);
    json_key(j, "total_s");
    json_number(j, s->sum_s);
    json_key(j, "mean_layer_s");
    json_number(j, s->mean.total_s);
    json_key(j, "worst_layer_s");
    json_number(j, s->worst_s);
    json_key(j, "compute_s");
    json_number(j, s->mean.compute_s);
    json_key(j, "scale_up_s");
    json_number(j, s->mean.scale_up_s);
    json_key(j, "scale_out_s");
    json_number(j, s->mean.scale_out_s);
    json_key(j, "layers_s");
    json_begin_array(j);
    for (int64_t i = 0; i < layers; i++)
        json_number(j, times[i].total_s);
    json_end_array(j);
    json_end_object(j);
}

static void text_layer_times(FILE *out, const char *what, const struct layer_time_summary *s)
{
    fprintf(out, "    %s: %.1f us a layer, %.3f ms in all; compute %.1f us, scale-up %.1f us, scale-out %.1f us "
                 "(means); slowest layer %.1f us\n",
            what, s->mean.total_s * 1e6, s->sum_s * 1e3, s->mean.compute_s * 1e6, s->mean.scale_up_s * 1e6,
            s->mean.scale_out_s * 1e6, s->worst_s * 1e6);
}

/* Says on stderr which stage does not fit, what fills its devices, by how much it is short, and
 * how many devices would hold the batch: the numbers a user needs to change the plan. */
static void explain_no_fit(const struct planning_request *r, const struct planning_result *p)
{
    const struct model *m = r->model;
    const struct workload *w = &p->workload;
    struct planning_shortfall shortfall;
    planning_shortfall(r, p, &shortfall);
    const struct device_memory *d = &shortfall.memory;
    int64_t worst = shortfall.stage;
    int64_t per_stage = p->layout.devices / p->layout.pp;
    char sequences[64], context[64], batch[64];
    format_count((double)d->sequences, sequences, sizeof sequences);
    format_count((double)w->context, context, sizeof context);
    format_count((double)w->batch, batch, sizeof batch);
    fprintf(stderr,
            "rackplan plan: stage %" PRId64 " (layers %" PRId64 "-%" PRId64 ", devices %" PRId64 "-%" PRId64
            ") does not fit: weights %.3f + %s %.3f (%s sequence%s x %s tokens) + activations %.3f + reserve "
            "%.3f = %.3f GB per device, %.3f GB more than its HBM (%.3f GB)\n",
            worst, shortfall.first_layer, shortfall.end_layer - 1, worst * per_stage, (worst + 1) * per_stage - 1,
            d->weights_bytes / 1e9, model_state_bytes_per_sequence(m) > 0 ? "KV and state" : "KV", d->kv_bytes / 1e9,
            sequences, d->sequences == 1 ? "" : "s", context, d->activation_bytes / 1e9,
            d->reserve_bytes / 1e9, (d->weights_bytes + d->kv_bytes + d->activation_bytes + d->reserve_bytes) / 1e9,
            -d->free_bytes / 1e9, d->hbm_bytes / 1e9);
    if (!shortfall.have_fit)
        return;
    const struct fit *f = &shortfall.fit;
    if (f->min_devices > p->layout.devices)
        fprintf(stderr, "rackplan plan: batch %s at %s tokens fits on %" PRId64 " devices (--racks %" PRId64
                        "); so might a smaller --batch, a shorter --context or a smaller --reserve\n",
                batch, context, f->min_devices, f->min_racks);
    else if (f->min_devices == 0)
        fprintf(stderr, "rackplan plan: no cluster of up to %d domains holds batch %s at %s tokens; a smaller "
                        "--batch or a shorter --context might\n",
                PLAN_MAX_RACKS, batch, context);
}

struct plan_output {
    const struct planning_request *request;
    const struct planning_result *planned;
    const struct calibration *calibration; /* what the efficiency was fitted to; NULL: not fitted */
    bool estimate;                         /* the step at calibrated factors, not the bound */
    enum output_format format;
    const struct options *options;
    const struct emit_output *emitted; /* --emit: the files written; NULL: none */
    const char *expert_map;            /* --emit's expert map, written beside them; NULL: none */
    const struct cli_lengths *lengths; /* what the serving workload's mix is */
};

static void write_tree(FILE *out, enum json_syntax syntax, const struct plan_output *o)
{
    const struct planning_request *r = o->request;
    const struct planning_result *p = o->planned;
    const struct model *m = r->model;
    const struct workload *w = &p->workload;
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    cli_json_header(&j, m, r->topology, p->layout.racks, p->layout.devices);
    json_key(&j, "batch");
    json_int(&j, w->batch);
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
        if (o->options->timings) {
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
        if (o->options->timings) {
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
        json_bool(&j, r->overlap);
        json_key(&j, "placement");
        json_layer_times(&j, &p->placement_summary, p->layer_times, p->experts.layers);
        json_key(&j, "naive");
        json_layer_times(&j, &p->naive_summary, p->naive_times, p->experts.layers);
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
    if (r->serving) {
        json_key(&j, "workload");
        json_begin_object(&j);
        cli_json_serve_workload(&j, r->serving);
        cli_json_lengths(&j, o->lengths->description);
        json_end_object(&j);
        json_key(&j, "ttft_s");
        json_positive_or_null(&j, p->served ? p->ttft_s : 0);
        json_key(&j, "tpot_s");
        json_positive_or_null(&j, p->served ? p->tpot_s : 0);
        struct serve_tail none = {0};
        cli_json_tail(&j, p->served ? &p->tail : &none);
    }
    json_key(&j, "kind");
    json_string(&j, o->estimate ? "estimate" : "bound");
    if (o->estimate) {
        json_key(&j, "efficiency");
        cli_json_efficiency(&j, &r->efficiency, o->calibration);
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

static void write_text(FILE *out, const struct plan_output *o)
{
    const struct planning_request *r = o->request;
    const struct planning_result *p = o->planned;
    const struct model *m = r->model;
    const struct topology *t = r->topology;
    const struct workload *w = &p->workload;
    char a[64], b[64];
    format_count((double)p->layout.devices, a, sizeof a);
    fprintf(out, "%s on %s%s: %" PRId64 " scale-up domain%s, %s devices\n", m->name, t->name,
            t->announced ? " (announced, not shipping)" : "", p->layout.racks,
            p->layout.racks == 1 ? "" : "s", a);
    format_count((double)w->batch, a, sizeof a);
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
                    r->time_limit_s);
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
                    tokens, r->overlap ? "under" : "after");
            text_layer_times(out, "this placement", &p->placement_summary);
            char naive[96];
            snprintf(naive, sizeof naive, "naive (expert e on device e mod %lld)", (long long)p->layout.ep);
            text_layer_times(out, naive, &p->naive_summary);
            if (p->naive_faster)
                fprintf(out, "    the naive placement is faster: at this batch reading a device's %lld copies, not %lld, "
                             "sets its compute; replicas of hot experts cost more than they balance (--redundant)\n",
                        (long long)p->slots, (long long)p->naive_copies);
        }
        fprintf(out, "  the per-device expert lists: --format json or --expert-map FILE.csv\n");
    }
    char gb[32];
    format_gb(p->memory.free_bytes, gb, sizeof gb);
    fprintf(out, "\npredicted (%s, with the placement's imbalance)\n",
            o->estimate ? "calibrated estimate" : "roofline bound");
    if (o->estimate)
        cli_text_efficiency(out, &r->efficiency, o->calibration);
    format_count(p->step.tokens_per_s, a, sizeof a);
    format_count(p->step.tokens_per_s_per_device, b, sizeof b);
    if (r->serving) {
        fprintf(out, "  serving %lld prompt and %lld output tokens a request: each step carries the decode batch and "
                     "the prefill of the prompts that replace finished requests; tokens/s are output tokens\n",
                (long long)r->serving->isl, (long long)r->serving->osl);
        cli_text_lengths(out, r->serving, o->lengths->description, o->lengths->classes);
    }
    fprintf(out, "  step %.4g ms, %s tokens/s, %s per device; %s binds; %s GB free per device\n",
            p->step.step_s * 1e3, a, b, roof_term_name(p->step.bound), gb);
    if (r->serving && p->served)
        fprintf(out, "  TTFT %.1f ms, TPOT %.2f ms; p50 / p90 / p99: TTFT %.1f / %.1f / %.1f ms, TPOT %.2f / %.2f / %.2f ms\n",
                p->ttft_s * 1e3, p->tpot_s * 1e3, p->tail.ttft_s[0] * 1e3, p->tail.ttft_s[1] * 1e3,
                p->tail.ttft_s[2] * 1e3, p->tail.tpot_s[0] * 1e3, p->tail.tpot_s[1] * 1e3, p->tail.tpot_s[2] * 1e3);
    else if (r->serving)
        fprintf(out, "  the batch's prefill exceeds the chunk budget (--chunk) or its KV does not fit\n");
    if (o->estimate) {
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
        write_tree(out, syntax, o);
    else
        write_text(out, o);
}

/* The CSV has one row per MoE layer (EPLB's form). The JSON is SGLang's --init-expert-location
 * physical_to_logical_map: one row per model layer, indexed by layer id, so a dense layer gets
 * a trivial row (slot i holds expert i mod E). */
static void write_expert_map(FILE *out, bool json_format, const struct plan_output *o)
{
    const struct planning_result *p = o->planned;
    const struct model *m = o->request->model;
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
                                const struct planning_result *p)
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
        plan_stage_memory(m, t, &p->layout, &p->workload, s, &mem);
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
    format_count((double)p->workload.batch, batch, sizeof batch);
    char title[160];
    snprintf(title, sizeof title, "Memory per device at batch %s", batch);
    struct memory_figure figure = {title, bars, (int)stages};
    document_figure(d, "memory", "Memory per device, each pipeline stage", draw_memory, &figure);
    free(labels);
    free(bars);
}

static void write_report_step(struct document *d, const struct plan_output *o, const struct roof_setup *setup)
{
    const struct planning_result *p = o->planned;
    const struct efficiency *e = &o->request->efficiency;
    const struct calibration *calibration = o->calibration;
    document_heading(d, "Predicted decode step");
    static const char *const headers[] = {"batch", "step ms", "binds", "compute ms", "weights ms",
                                          "KV ms", "network ms", "tokens/s", "tokens/s per device"};
    document_table_begin(d, 9, headers, "rrlrrrrrr");
    char cell[9][32];
    format_count((double)p->workload.batch, cell[0], sizeof cell[0]);
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
    if (o->estimate) {
        struct roof_setup bound = *setup;
        bound.efficiency = EFFICIENCY_BOUND;
        char rate[32];
        format_count(p->bound_step.tokens_per_s, rate, sizeof rate);
        document_paragraph(d, "Calibrated estimate: compute at %.3g, HBM at %.3g, scale-up at %.3g and scale-out "
                              "at %.3g of peak, routed experts at %.3g of those, plus %.3g ms a step, fitted by "
                              "rackplan calibrate to %s%s. The "
                              "roofline bound at the same batch: a step of %.4g ms, %s tokens/s; latency floor "
                              "(batch 1) %.4g ms estimated, %.4g ms bound.",
                           e->compute, e->memory, e->scale_up, e->scale_out, e->experts, e->step_overhead_s * 1e3,
                           calibration ? calibration->fitted_to : "the --eta-* given",
                           calibration && calibration->pooled ? " (other hardware: none measured on this)" : "",
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
    int64_t top = p->workload.batch > 1 ? p->workload.batch : 2;
    int64_t count = roof_sweep_batches(1, top, POINTS, batches);
    struct roof_point points[POINTS];
    for (int64_t i = 0; i < count; i++)
        roof_decode(setup, batches[i], &points[i]);
    struct batch_figure figure = {setup, setup->model->name, setup->topology->name, points, count};
    document_figure(d, "batch", "Time per decode step and cost per token against batch, up to the plan's batch",
                    draw_batch, &figure);
}

static void write_report_experts(struct document *d, const struct planning_result *p)
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

static bool write_report(const char *path, const struct plan_output *o, struct sink_batch *outputs)
{
    const struct planning_result *p = o->planned;
    const struct model *m = o->request->model;
    const struct topology *t = o->request->topology;
    const struct workload *w = &p->workload;
    char title[300];
    snprintf(title, sizeof title, "%s on %s", m->name, t->name);
    struct document d;
    if (!document_open(&d, path, title)) {
        outputs->failed = true;
        return false;
    }
    char batch[32], context[32];
    format_count((double)w->batch, batch, sizeof batch);
    format_count((double)w->context, context, sizeof context);
    document_paragraph(&d, "%" PRId64 " devices in %" PRId64 " scale-up domain%s; TP %" PRId64 " x DP %" PRId64
                           " x PP %" PRId64 "%s; batch %s sequences at %s tokens of context. "
                           "Written by rackplan " RACKPLAN_VERSION ".",
                       p->layout.devices, p->layout.racks, p->layout.racks == 1 ? "" : "s", p->layout.tp,
                       p->layout.dp, p->layout.pp, p->moe ? ", experts spread over each stage" : "", batch,
                       context);
    struct roof_setup setup;
    planning_roof_setup(o->request, p, &setup);
    write_report_memory(&d, m, t, p);
    write_report_step(&d, o, &setup);
    if (p->moe)
        write_report_experts(&d, p);
    document_hold(&d, outputs);
    return !outputs->failed;
}

/* --loads, checked against the model: -1 when read, else the exit code to give. */
static int read_loads(const struct options *o, const struct model *m, struct loads *out)
{
    struct diags d;
    diags_init(&d);
    enum loads_status read = loads_read(o->loads, out, &d);
    if (read == LOADS_OK && loads_check_model(out, m, o->loads, &d) != LOADS_OK) {
        loads_release(out);
        read = LOADS_INVALID;
    }
    diags_print(&d, stderr);
    diags_release(&d);
    if (read != LOADS_OK)
        return read == LOADS_IO_ERROR ? EXIT_IO : EXIT_INVALID;
    return -1;
}

/* --trace, checked against the model's MoE layers: -1 when read, else the exit code to give. */
static int read_trace(const struct options *o, const struct model *m, struct trace *out)
{
    struct diags d;
    diags_init(&d);
    int64_t layers = model_moe_layers(m);
    enum trace_status read = trace_read(o->trace, m->moe.experts, out, &d);
    if (read == TRACE_OK && (out->layers != layers || out->k != m->moe.experts_per_token)) {
        diags_add(&d, o->trace, 0, 0, "the trace has %lld layers of top-%lld; %s has %lld MoE layers of top-%lld",
                  (long long)out->layers, (long long)out->k, m->name, (long long)layers,
                  (long long)m->moe.experts_per_token);
        trace_release(out);
        read = TRACE_INVALID;
    }
    diags_print(&d, stderr);
    diags_release(&d);
    if (read != TRACE_OK)
        return read == TRACE_IO_ERROR ? EXIT_IO : EXIT_INVALID;
    return -1;
}

/* Says why no plan was made; returns the exit code. */
static int explain_unplanned(const struct options *o, const struct planning_request *r, enum planning_status status,
                             const struct planning_result *p)
{
    switch (status) {
    case PLANNING_NO_LAYOUT:
        return cli_usage_error(o->command, "no layout with the pinned TP/PP on %lld devices",
                               (long long)(r->racks * r->topology->domain_devices));
    case PLANNING_EP_MISMATCH:
        return cli_usage_error(o->command,
                               "--ep %lld: experts spread over the %lld devices of a stage here (racks x domain "
                               "size / PP); choose --racks or --pp to match",
                               (long long)r->ep, (long long)p->layout.ep);
    case PLANNING_NO_GRAPH:
        fprintf(stderr, "rackplan plan: the interconnect graph could not be built (out of memory)\n");
        return EXIT_IO;
    case PLANNING_NO_PLACEMENT:
        fprintf(stderr, "rackplan plan: no placement of %lld experts on %lld devices x %lld slots\n",
                (long long)r->model->moe.experts, (long long)p->layout.ep, (long long)p->slots);
        return EXIT_NO_FIT;
    case PLANNING_OK:
        break;
    }
    return EXIT_OK;
}

/* Plans `r` and writes what the options ask for; returns the exit code. */
static int plan_and_write(const struct options *o, const struct planning_request *r,
                          const struct calibration *calibration, const struct cli_lengths *lengths)
{
    const struct model *m = r->model;
    struct planning_result p;
    enum planning_status planned = planning_solve(r, &p);
    if (planned != PLANNING_OK) {
        int status = explain_unplanned(o, r, planned, &p);
        planning_result_release(&p);
        return status;
    }
    int status = p.memory.free_bytes >= 0 ? EXIT_OK : EXIT_NO_FIT;
    struct plan_output output = {.request = r, .planned = &p, .calibration = calibration,
                                 .estimate = !efficiency_is_bound(&r->efficiency), .format = o->format,
                                 .options = o, .lengths = lengths};
    /* --emit: the plan as one aggregated instance (its expert map beside SGLang's scripts) */
    struct emit_output emitted = {0};
    char map_path[4096] = "";
    bool emitting = o->emit_dir && p.memory.free_bytes >= 0;
    if (o->emit_dir && !emitting)
        fprintf(stderr, "rackplan plan: --emit: the plan does not fit, so nothing is written\n");
    bool with_map = emitting && p.moe && o->emit_engine == EMIT_SGLANG && p.layout.ep > 1;
    if (emitting) {
        char model_path[512];
        cli_model_path(m, o->positional[0], model_path, sizeof model_path);
        if (with_map)
            cli_emit_path(o, "expert-map.json", map_path, sizeof map_path);
        struct emit_plan plan;
        planning_emit_plan(r, &p, model_path, with_map ? map_path : NULL, &plan);
        output.emitted = &emitted;
        output.expert_map = with_map ? map_path : NULL;
        int refused = cli_emit_build(o, &plan, &emitted);
        if (refused >= 0) {
            planning_result_release(&p);
            return refused;
        }
    }
    struct sink_batch outputs;
    sink_batch_init(&outputs);
    bool whole = sink_batch_write(&outputs, o->output, write_output, &output) &&
                 (!o->expert_map || !p.moe ||
                  sink_batch_write(&outputs, o->expert_map,
                                   path_ends_with(o->expert_map, ".json") ? write_expert_map_json
                                                                          : write_expert_map_csv,
                                   &output)) &&
                 (!o->report || write_report(o->report, &output, &outputs)) &&
                 (!emitting || cli_emit_write(o, &emitted, &outputs)) &&
                 (!with_map || sink_batch_write(&outputs, map_path, write_expert_map_json, &output));
    if (!sink_batch_finish(&outputs, whole))
        status = EXIT_IO;
    else if (emitting) {
        cli_emit_report(o, &emitted);
        if (with_map)
            fprintf(stderr, "rackplan plan: wrote %s (SGLang's --init-expert-location, with "
                            "--ep-num-redundant-experts %lld: %lld slots over %lld experts)\n",
                    map_path, (long long)(p.slots * p.layout.ep - m->moe.experts),
                    (long long)(p.slots * p.layout.ep), (long long)m->moe.experts);
        else if (p.moe && p.layout.ep > 1)
            /* only SGLang's --init-expert-location was verified to load a placement: say what the
             * other engines' files lack rather than let them seem to carry it */
            fprintf(stderr, "rackplan plan: the expert placement (%lld slots over %lld experts) is not in these "
                            "files: no %s option verified here loads an expert map (--emit sglang writes it, "
                            "with --init-expert-location and --ep-num-redundant-experts)\n",
                    (long long)(p.slots * p.layout.ep), (long long)m->moe.experts,
                    o->emit_engine == EMIT_DYNAMO ? "Dynamo worker"
                                                  : emit_engine_name((enum emit_engine)o->emit_engine));
    }
    emit_output_release(&emitted);
    if (p.memory.free_bytes < 0)
        explain_no_fit(r, &p);
    planning_result_release(&p);
    return status;
}

int cmd_plan(int argc, char **argv)
{
    struct options o;
    struct model m;
    struct topology t;
    int status = cli_prepare(&command_plan, argc, argv, &o, &m, &t);
    if (status >= 0)
        return status;
    struct serve_workload serving;
    struct cli_lengths lengths;
    if ((status = cli_serve_workload_checked(o.command, &o, &m, &serving, &lengths)) >= 0)
        return status;
    if (o.emit_dir && serving.isl <= 0)
        return cli_usage_error(o.command, "--emit sizes the engine's batch and chunk for a workload: give --isl and --osl");
    struct planning_request request = {
        .model = &m, .topology = &t, .racks = o.racks, .serving = serving.isl > 0 ? &serving : NULL,
        .time_limit_s = o.time_limit_s, .overlap = o.overlap, .batch = o.batch_set ? o.batch : 0,
        .redundant = o.redundant, .redundant_auto = o.redundant_auto, .ep = o.ep};
    cli_workload(&o, &request.workload);
    const struct calibration *calibration = NULL;
    if (!cli_efficiency(&o, &t, o.positional[1], request.workload.weights, &request.efficiency, &calibration))
        return EXIT_USAGE;
    bool moe = model_is_moe(&m);
    if (o.loads && !moe)
        return cli_usage_error(o.command, "--loads is for MoE models; %s is dense", m.name);
    if (o.trace && !moe)
        return cli_usage_error(o.command, "--trace is for MoE models; %s is dense", m.name);
    struct loads loads = {0};
    if (o.loads) {
        if ((status = read_loads(&o, &m, &loads)) >= 0)
            return status;
        request.loads = &loads;
    }
    struct trace trace = {0};
    if (o.trace) {
        if ((status = read_trace(&o, &m, &trace)) >= 0) {
            loads_release(&loads);
            return status;
        }
        request.trace = &trace;
    }
    status = plan_and_write(&o, &request, calibration, &lengths);
    loads_release(&loads);
    trace_release(&trace);
    return status;
}
