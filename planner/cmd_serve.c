/* cmd_serve.c: `rackplan serve MODEL TOPOLOGY --isl N --osl N`: the best deployment for a
 * workload, its frontier, and with --rate the fewest devices that serve it (serve.h). */
#include "cli.h"
#include "commands.h"
#include "emit.h"
#include "model.h"
#include "serve.h"
#include "kvcache.h"
#include "simulate.h"
#include "topology.h"

#include "../reports/document.h"
#include "../reports/json.h"
#include "../reports/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the run found, for every writer. */
struct answer {
    const struct model *model;
    const struct topology *topology;         /* decode (and aggregated) */
    const struct topology *prefill_topology; /* NULL: the same */
    const struct options *options;
    const struct workload *precisions;
    const struct serve_workload *workload;
    const struct length_mix *mix;            /* the requests' lengths; count 0: fixed --isl/--osl */
    const struct sim_result *simulated;      /* --simulate: the deployment simulated; else NULL */
    const struct serve_point *simulated_point; /* which: the sized one with --rate, else the best */
    struct serve_settling settling;          /* what the simulation needs to settle */
    const struct serve_result *result;       /* the estimate with --estimate, else the bound */
    const struct serve_result *bound;        /* with --estimate: the bound's search; else NULL */
    const struct serve_result *open;         /* without --racks/--devices: the search with no budget, at
                                              * the result's efficiency (what more hardware buys, and
                                              * --rate's sizing); else NULL */
    const struct serve_result *sizing;       /* where --rate's answer comes from: result or open */
    int64_t budget;                          /* devices of TOPOLOGY the deployment may use */
    int64_t prefill_budget;                  /* with --prefill-topology: devices of it */
    const char *budget_source;               /* "--racks", "--devices" or NULL: the topology as written */
    struct efficiency efficiency;
    const struct calibration *calibration;
    double seconds;
    const struct kv_reuse *reuse;            /* --reuse: the prompts' reuse; else NULL */
    const struct kv_cache_result *cache;     /* its tiers at the best point; NULL without --reuse */
    bool hit_derived;                        /* the workload's prefix hit is the tiers' (no --prefix-hit) */
    double warm_hit;                         /* the hit a warm cache settles on when above the cold
                                              * one's (the answer); -1: the same */
    const struct kv_sizing *sizings;         /* --size-tiers: one a tier below HBM */
    int sizing_count;
    const struct emit_output *emitted;       /* --emit: the files written; NULL: none */
};

static void layout_text(const struct layout *l, char *out, size_t size)
{
    snprintf(out, size, "TP %lld x DP %lld x PP %lld, EP %lld", (long long)l->tp, (long long)l->dp,
             (long long)l->pp, (long long)l->ep);
}

static void json_instance(struct json *j, const struct serve_instance *x, int64_t instances)
{
    json_begin_object(j);
    json_key(j, "layout");
    cli_json_parallel(j, &x->layout);
    json_key(j, "instances");
    json_int(j, instances);
    json_key(j, "instance_devices");
    json_int(j, x->layout.devices);
    json_key(j, "batch");
    json_int(j, x->batch);
    json_key(j, "max_running_requests");
    json_int(j, x->occupancy.running_cap > 0 ? x->occupancy.running_cap : x->batch);
    json_key(j, "devices");
    json_int(j, instances * x->layout.devices);
    json_key(j, "step_s");
    json_number(j, x->step_s);
    json_key(j, "bound_by");
    json_string(j, roof_term_name(x->point.bound));
    json_key(j, "requests_per_s_per_instance");
    json_number(j, x->requests_per_s);
    json_end_object(j);
}

/* The keys of a deployment, into the open object. */
static void json_point_fields(struct json *j, const struct serve_point *p)
{
    json_key(j, "mode");
    json_string(j, serve_mode_name(p->mode));
    json_key(j, "devices");
    json_int(j, p->devices);
    json_key(j, "ttft_s");
    json_number(j, p->ttft_s);
    json_key(j, "tpot_s");
    json_number(j, p->tpot_s);
    cli_json_tail(j, &p->tail);
    json_key(j, "tokens_per_s_per_device");
    json_number(j, p->tokens_per_s_per_device);
    json_key(j, "tokens_per_s_per_user");
    json_number(j, p->tokens_per_s_per_user);
    json_key(j, "cost_per_mtok");
    json_positive_or_null(j, p->cost_per_mtok);
    json_key(j, "joules_per_token");
    json_positive_or_null(j, p->joules_per_token);
    json_key(j, "layout");
    if (p->mode == SERVE_AGGREGATED) {
        cli_json_parallel(j, &p->decode.layout);
        json_key(j, "instances");
        json_int(j, p->decode_instances);
        json_key(j, "instance_devices");
        json_int(j, p->decode.layout.devices);
        json_key(j, "batch");
        json_int(j, p->decode.batch);
        json_key(j, "max_running_requests");
        json_int(j, p->decode.occupancy.running_cap > 0 ? p->decode.occupancy.running_cap : p->decode.batch);
        json_key(j, "step_s");
        json_number(j, p->decode.step_s);
        json_key(j, "bound_by");
        json_string(j, roof_term_name(p->decode.point.bound));
        json_key(j, "prefill_chunk_use");
        json_number(j, p->prefill_use);
    } else {
        json_begin_object(j);
        json_key(j, "prefill");
        json_instance(j, &p->prefill, p->prefill_instances);
        json_key(j, "decode");
        json_instance(j, &p->decode, p->decode_instances);
        json_end_object(j);
        json_key(j, "prefill_devices");
        json_int(j, p->prefill_instances * p->prefill.layout.devices);
        json_key(j, "decode_devices");
        json_int(j, p->decode_instances * p->decode.layout.devices);
        json_key(j, "decode_tokens_per_s_per_device");
        json_number(j, p->decode_tokens_per_s_per_device);
        json_key(j, "kv_transfer_s");
        json_number(j, p->kv_transfer_s);
        json_key(j, "kv_transfer_over");
        json_string(j, p->kv_over_scale_up ? "scale-up" : "scale-out");
        json_key(j, "prefill_pool_use");
        json_number(j, p->prefill_use);
    }
}

/* `key`: the point's fields as an object, or null when there is none. */
static void json_point_or_null(struct json *j, const char *key, const struct serve_point *p)
{
    json_key(j, key);
    if (!p) {
        json_null(j);
        return;
    }
    json_begin_object(j);
    json_point_fields(j, p);
    json_end_object(j);
}

static void json_frontier_point(struct json *j, const struct serve_workload *w, const struct serve_point *p)
{
    json_begin_object(j);
    json_key(j, "mode");
    json_string(j, serve_mode_name(p->mode));
    json_key(j, "tokens_per_s_per_device");
    json_number(j, p->tokens_per_s_per_device);
    json_key(j, "tokens_per_s_per_user");
    json_number(j, p->tokens_per_s_per_user);
    json_key(j, "ttft_s");
    json_number(j, p->ttft_s);
    json_key(j, "tpot_s");
    json_number(j, p->tpot_s);
    cli_json_tail(j, &p->tail);
    json_key(j, "devices");
    json_int(j, p->devices);
    json_key(j, "instance_devices");
    json_int(j, p->decode.layout.devices);
    json_key(j, "layout");
    cli_json_parallel(j, &p->decode.layout);
    json_key(j, "batch");
    json_int(j, p->decode.batch);
    if (p->mode == SERVE_AGGREGATED) {
        json_key(j, "instances");
        json_int(j, p->decode_instances);
    } else {
        json_key(j, "prefill_instance_devices");
        json_int(j, p->prefill.layout.devices);
        json_key(j, "prefill_layout");
        cli_json_parallel(j, &p->prefill.layout);
        json_key(j, "prefill_batch");
        json_int(j, p->prefill.batch);
        json_key(j, "prefill_instances");
        json_int(j, p->prefill_instances);
        json_key(j, "decode_instances");
        json_int(j, p->decode_instances);
    }
    json_key(j, "cost_per_mtok");
    json_positive_or_null(j, p->cost_per_mtok);
    json_key(j, "meets_targets");
    json_bool(j, p->meets);
    json_key(j, "why_not_met");
    const char *misses = serve_point_misses(w, p);
    if (misses)
        json_string(j, misses);
    else
        json_null(j);
    json_end_object(j);
}

static void write_tree(FILE *out, enum json_syntax syntax, const struct answer *a)
{
    const struct serve_result *r = a->result;
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    json_key(&j, "model");
    json_string(&j, a->model->name);
    json_key(&j, "topology");
    json_string(&j, a->topology->name);
    json_key(&j, "announced");
    json_bool(&j, a->topology->announced);
    json_key(&j, "prefill_topology");
    if (a->prefill_topology)
        json_string(&j, a->prefill_topology->name);
    else
        json_null(&j);
    json_key(&j, "workload");
    json_begin_object(&j);
    cli_json_serve_workload(&j, a->workload);
    cli_json_lengths(&j, a->mix->count > 0 ? a->mix->description : NULL);
    json_key(&j, "rate");
    json_positive_or_null(&j, a->workload->rate);
    json_key(&j, "mode");
    json_string(&j, serve_mode_name(a->workload->mode));
    json_end_object(&j);
    cli_json_precision(&j, a->precisions);
    json_key(&j, "estimate");
    json_bool(&j, a->bound != NULL);
    json_key(&j, "efficiency");
    cli_json_efficiency(&j, &a->efficiency, a->calibration);
    json_key(&j, "budget");
    json_begin_object(&j);
    json_key(&j, "devices");
    json_int(&j, a->budget);
    json_key(&j, "given_by");
    if (a->budget_source)
        json_string(&j, a->budget_source);
    else
        json_null(&j);
    json_key(&j, "prefill_devices");
    if (a->prefill_topology)
        json_int(&j, a->prefill_budget);
    else
        json_null(&j);
    json_end_object(&j);
    json_key(&j, "fits");
    json_bool(&j, r->fits);
    json_key(&j, "devices_to_fit");
    if (!r->fits && r->min_devices > 0)
        json_int(&j, r->min_devices);
    else
        json_null(&j);
    json_key(&j, "found");
    json_bool(&j, r->found);
    if (r->found) {
        json_point_fields(&j, &r->best);
    } else {
        json_key(&j, "mode");
        json_null(&j);
    }
    const struct serve_point *reachable;
    enum serve_binding binding = serve_binding_target(a->workload, r, &reachable);
    json_key(&j, "binding_target");
    if (binding != SERVE_BINDS_NONE)
        json_string(&j, serve_binding_name(binding));
    else
        json_null(&j);
    json_key(&j, "reachable");
    if (reachable) {
        json_begin_object(&j);
        json_point_fields(&j, reachable);
        json_end_object(&j);
    } else {
        json_null(&j);
    }
    json_key(&j, "chunks_on_ranks_in_step"); /* the caution's: serve_chunks_on_ranks_in_step */
    json_bool(&j, r->found && serve_chunks_on_ranks_in_step(a->model, a->workload, &r->best));
    json_key(&j, "left_out_unsettled"); /* text_unsettled's point */
    if (r->found && r->unsettled &&
        r->unsettled_best.tokens_per_s_per_device > r->best.tokens_per_s_per_device * (1 + 1e-6)) {
        json_begin_object(&j);
        json_point_fields(&j, &r->unsettled_best);
        json_end_object(&j);
    } else {
        json_null(&j);
    }
    json_key(&j, "simulated");
    if (a->simulated) {
        const struct sim_result *x = a->simulated;
        json_begin_object(&j);
        json_key(&j, "requests");
        json_int(&j, a->options->simulate);
        json_key(&j, "seed");
        json_number(&j, (double)a->options->seed);
        const struct sim_percentiles *ttft = &x->ttft_s, *tpot = &x->tpot_s;
        const char *const keys[] = {"ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "ttft_mean_s",
                                    "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "tpot_mean_s"};
        const double values[] = {ttft->p50, ttft->p90, ttft->p99, ttft->mean, tpot->p50, tpot->p90, tpot->p99, tpot->mean};
        for (int i = 0; i < 8; i++) {
            json_key(&j, keys[i]);
            json_number(&j, values[i]);
        }
        json_key(&j, "tokens_per_s_per_device");
        json_number(&j, x->output_tokens_per_s / (double)a->simulated_point->devices);
        json_key(&j, "mean_decoding_sequences");
        json_number(&j, x->mean_decoding_sequences);
        json_key(&j, "decoding_sequences_sd");
        json_number(&j, x->decoding_sequences_sd);
        json_key(&j, "slot_wait_probability");
        json_number(&j, x->slot_wait_share);
        json_key(&j, "settles_at_requests");
        json_int(&j, a->settling.requests);
        json_end_object(&j);
    } else {
        json_null(&j);
    }
    if (a->reuse) {
        json_key(&j, "prefix_hit_derived");
        json_bool(&j, a->hit_derived);
        json_key(&j, "prefix_load_s");
        json_number(&j, a->workload->prefix_load_s);
        json_key(&j, "prefix_hit_warm");
        if (a->warm_hit >= 0)
            json_number(&j, a->warm_hit);
        else
            json_null(&j);
        json_key(&j, "kv_tiers");
        if (a->cache) {
            json_begin_array(&j);
            for (int i = 0; i < a->cache->tier_count; i++) {
                const struct kv_tier_result *t = &a->cache->tiers[i];
                json_begin_object(&j);
                json_key(&j, "tier");
                json_string(&j, topology_tier_kind_name(t->kind));
                json_key(&j, "name");
                json_string(&j, t->name);
                json_key(&j, "capacity_bytes");
                json_number(&j, t->capacity_bytes);
                json_key(&j, "residency_s");
                json_positive_or_null(&j, isfinite(t->residency_s) ? t->residency_s : 0);
                json_key(&j, "hit_share");
                json_number(&j, t->hit_share);
                json_key(&j, "load_s");
                json_number(&j, t->load_s);
                json_key(&j, "recompute_s");
                json_number(&j, t->recompute_s);
                json_key(&j, "read_bytes_per_s");
                json_number(&j, t->read_bytes_per_s);
                json_key(&j, "write_bytes_per_s");
                json_number(&j, t->write_bytes_per_s);
                json_key(&j, "worth_it");
                json_bool(&j, t->worth_it);
                json_end_object(&j);
            }
            json_end_array(&j);
        } else {
            json_null(&j);
        }
    }
    if (a->options->size_tiers) {
        json_key(&j, "tier_sizing");
        json_begin_array(&j);
        for (int i = 0; i < a->sizing_count; i++) {
            const struct kv_sizing *z = &a->sizings[i];
            json_begin_object(&j);
            json_key(&j, "tier");
            json_string(&j, topology_tier_kind_name(z->kind));
            json_key(&j, "name");
            json_string(&j, z->name);
            json_key(&j, "usd_per_gb_hour");
            json_number(&j, z->usd_per_gb_hour);
            json_key(&j, "best_capacity_bytes");
            if (z->best >= 0)
                json_number(&j, z->points[z->best].capacity_bytes);
            else
                json_null(&j);
            json_key(&j, "curve");
            json_begin_array(&j);
            for (int k = 0; k < z->count; k++) {
                const struct kv_sizing_point *x = &z->points[k];
                json_begin_object(&j);
                json_key(&j, "capacity_bytes");
                json_number(&j, x->capacity_bytes);
                json_key(&j, "found");
                json_bool(&j, x->found);
                json_key(&j, "prefix_hit");
                json_number(&j, x->prefix_hit);
                json_key(&j, "tokens_per_s_per_device");
                json_number(&j, x->tokens_per_s_per_device);
                json_key(&j, "usd_per_hour_per_device");
                json_number(&j, x->usd_per_hour_per_device);
                json_key(&j, "cost_per_mtok");
                json_number(&j, x->cost_per_mtok);
                json_end_object(&j);
            }
            json_end_array(&j);
            json_end_object(&j);
        }
        json_end_array(&j);
    }
    bool more = a->open && a->open->found;
    json_point_or_null(&j, "more_hardware", more ? &a->open->best : NULL);
    json_point_or_null(&j, "more_hardware_near_best", more ? &a->open->near_best : NULL);
    if (a->workload->rate > 0) {
        const struct serve_result *z = a->sizing;
        json_key(&j, "min_devices");
        if (z->sized)
            json_int(&j, z->sized_point.devices);
        else
            json_null(&j);
        json_key(&j, "sized");
        if (z->sized) {
            json_begin_object(&j);
            json_point_fields(&j, &z->sized_point);
            json_end_object(&j);
        } else {
            json_null(&j);
        }
    }
    if (a->bound) {
        json_key(&j, "roofline_bound");
        json_begin_object(&j);
        json_key(&j, "found");
        json_bool(&j, a->bound->found);
        if (a->bound->found) {
            const struct serve_point *b = &a->bound->best;
            json_key(&j, "mode");
            json_string(&j, serve_mode_name(b->mode));
            json_key(&j, "tokens_per_s_per_device");
            json_number(&j, b->tokens_per_s_per_device);
            json_key(&j, "tokens_per_s_per_user");
            json_number(&j, b->tokens_per_s_per_user);
            json_key(&j, "ttft_s");
            json_number(&j, b->ttft_s);
            json_key(&j, "tpot_s");
            json_number(&j, b->tpot_s);
            json_key(&j, "instance_devices");
            json_int(&j, b->decode.layout.devices);
        }
        json_end_object(&j);
    }
    json_key(&j, "layouts_searched");
    json_int(&j, r->layouts);
    json_key(&j, "points_evaluated");
    json_int(&j, r->points);
    json_key(&j, "frontier");
    json_begin_array(&j);
    for (int64_t i = 0; i < r->frontier_count; i++)
        json_frontier_point(&j, a->workload, &r->frontier[i]);
    json_end_array(&j);
    if (a->options->emit_dir)
        cli_json_emitted(&j, a->options, a->emitted, NULL);
    json_end_object(&j);
    json_finish(&j);
}

static void text_point(FILE *out, const struct answer *a, const struct serve_point *p)
{
    char layout[96], prefill_layout[96], count[32];
    layout_text(&p->decode.layout, layout, sizeof layout);
    if (p->mode == SERVE_AGGREGATED) {
        format_count((double)p->decode.batch, count, sizeof count);
        fprintf(out, "  aggregated: %lld instance%s of %lld devices, %s, batch %s sequences each\n",
                (long long)p->decode_instances, p->decode_instances == 1 ? "" : "s",
                (long long)p->decode.layout.devices, layout, count);
        fprintf(out, "    a step of %.3f ms carries the decode batch and %.0f%% of the prefill chunk budget; bound by %s\n",
                p->decode.step_s * 1e3, p->prefill_use * 100, roof_term_name(p->decode.point.bound));
    } else {
        layout_text(&p->prefill.layout, prefill_layout, sizeof prefill_layout);
        fprintf(out, "  disaggregated %lldP%lldD: %lld devices\n", (long long)p->prefill_instances,
                (long long)p->decode_instances, (long long)p->devices);
        format_count((double)p->prefill.batch, count, sizeof count);
        fprintf(out, "    prefill: %lld x %lld devices%s, %s, %s prompts a batch of %.3f ms (pool %.0f%% busy)\n",
                (long long)p->prefill_instances, (long long)p->prefill.layout.devices,
                a->prefill_topology ? " on the prefill topology" : "", prefill_layout, count, p->prefill.step_s * 1e3,
                p->prefill_use * 100);
        format_count((double)p->decode.batch, count, sizeof count);
        fprintf(out, "    decode:  %lld x %lld devices, %s, batch %s sequences, a step of %.3f ms; bound by %s\n",
                (long long)p->decode_instances, (long long)p->decode.layout.devices, layout, count,
                p->decode.step_s * 1e3, roof_term_name(p->decode.point.bound));
        fprintf(out, "    KV of a prompt moves in %.3f ms over %s\n", p->kv_transfer_s * 1e3,
                p->kv_over_scale_up ? "the scale-up domain" : "the NICs");
    }
    char rate[32];
    format_count(p->tokens_per_s_per_device, rate, sizeof rate);
    fprintf(out, "  TTFT %.1f ms, TPOT %.2f ms (%.1f tokens/s per user), %s output tokens/s per device",
            p->ttft_s * 1e3, p->tpot_s * 1e3, p->tokens_per_s_per_user, rate);
    if (p->mode == SERVE_DISAGGREGATED) {
        format_count(p->decode_tokens_per_s_per_device, rate, sizeof rate);
        fprintf(out, " (%s per decode device)", rate);
    }
    fprintf(out, "\n");
    const struct serve_tail *t = &p->tail;
    fprintf(out, "  percentiles (ms): TTFT p50 %.1f, p90 %.1f, p99 %.1f (mean %.1f, %.1f of it waiting for prefill); "
                 "TPOT p50 %.2f, p90 %.2f, p99 %.2f\n",
            t->ttft_s[0] * 1e3, t->ttft_s[1] * 1e3, t->ttft_s[2] * 1e3, t->ttft_mean_s * 1e3, t->prefill_wait_s * 1e3,
            t->tpot_s[0] * 1e3, t->tpot_s[1] * 1e3, t->tpot_s[2] * 1e3);
    if (serve_ttft_on_slot_waits(a->workload, p)) {
        if (p->mode == SERVE_AGGREGATED)
            fprintf(out,
                    "  caution: %.3g%% of requests wait for a KV slot, which sets TTFT's p%g: a cliff, which a few "
                    "tenths of a percent more waiting move from a prefill's time to seconds (README, \"Tail "
                    "latency\"): check it with --simulate\n",
                    t->slot_wait_probability * 100, serve_workload_percentile(a->workload));
        else
            fprintf(out,
                    "  caution: %.3g%% of requests wait for a KV slot at the decode pool (reserved before "
                    "prefill), which sets TTFT's p%g (README, \"Tail latency\"): check it with --simulate\n",
                    t->slot_wait_probability * 100, serve_workload_percentile(a->workload));
    }
    if (serve_chunks_on_ranks_in_step(a->model, a->workload, p))
        fprintf(out, "  caution: prompts of %.3g chunks arriving at random on %lld ranks that step together: here the "
                     "analysis' TPOT has run 5-20%% below the simulation's, the sequences in flight with it (README, "
                     "\"Tail latency\"): check it with --simulate\n",
                serve_prompt_chunks(a->workload),
                (long long)p->decode.layout.dp);
    if (p->cost_per_mtok > 0)
        fprintf(out, "  $%.3f per million output tokens", p->cost_per_mtok);
    else
        fprintf(out, "  cost unknown (no price)");
    if (p->joules_per_token > 0)
        fprintf(out, ", %.3f J per output token\n", p->joules_per_token);
    else
        fprintf(out, ", energy unknown (no power)\n");
}

/* "aggregated, 2 x 32-device instances, batch 1,024 each" or "disaggregated 1P1D, 8+64 devices,
 * decode batch 512": where a point stands, for one-line answers. */
static void point_where(const struct serve_point *p, char *out, size_t size)
{
    char batch[32];
    format_count((double)p->decode.batch, batch, sizeof batch);
    if (p->mode == SERVE_AGGREGATED && p->decode_instances == 1)
        snprintf(out, size, "aggregated, one %lld-device instance, batch %s", (long long)p->decode.layout.devices, batch);
    else if (p->mode == SERVE_AGGREGATED)
        snprintf(out, size, "aggregated, %lld x %lld-device instances, batch %s each", (long long)p->decode_instances,
                 (long long)p->decode.layout.devices, batch);
    else
        snprintf(out, size, "disaggregated %lldP%lldD, %lld+%lld-device instances, decode batch %s",
                 (long long)p->prefill_instances, (long long)p->decode_instances, (long long)p->prefill.layout.devices,
                 (long long)p->decode.layout.devices, batch);
}

/* The better point the search left out because its batch does not settle, if any. */
static void text_unsettled(FILE *out, const struct serve_result *r)
{
    const struct serve_point *u = &r->unsettled_best;
    if (!r->unsettled || u->tokens_per_s_per_device <= r->best.tokens_per_s_per_device * (1 + 1e-6))
        return;
    char rate[32], where[160];
    format_count(u->tokens_per_s_per_device, rate, sizeof rate);
    point_where(u, where, sizeof where);
    fprintf(out, "  left out: %s output tokens/s per device (+%.1f%%; %s), within the targets, but its batch does "
                 "not settle: a percent more traffic moves it %.0f%%, more than %.0f%% (README, \"Near saturation\")\n",
            rate, (u->tokens_per_s_per_device / r->best.tokens_per_s_per_device - 1) * 100, where,
            u->tail.sequences_rate_elasticity, SERVE_MOST_RATE_ELASTICITY);
}

/* The budget as the header states it. */
static void text_budget(FILE *out, const struct answer *a)
{
    char devices[32];
    format_count((double)a->budget, devices, sizeof devices);
    const struct topology *t = a->topology;
    fprintf(out, "  budget: %s device%s", devices, a->budget == 1 ? "" : "s");
    char domain[32];
    format_count((double)t->domain_devices, domain, sizeof domain);
    if (a->budget % t->domain_devices == 0)
        fprintf(out, " (%lld domain%s of %s)", (long long)(a->budget / t->domain_devices),
                a->budget / t->domain_devices == 1 ? "" : "s", domain);
    if (a->budget_source)
        fprintf(out, ", set by %s", a->budget_source);
    else
        fprintf(out, ", the topology as written (--racks N or --devices N sets it)");
    if (a->prefill_topology) {
        format_count((double)a->prefill_budget, devices, sizeof devices);
        fprintf(out, "; prefill: %s devices as written", devices);
    }
    fprintf(out, "\n");
}

/* Why there is no best deployment, on one line (and a second with the way out): the model does
 * not fit the budget, no deployment fits it in the mode asked, or a target binds. */
static void text_none(FILE *out, const struct answer *a)
{
    const struct serve_result *r = a->result;
    const struct serve_workload *w = a->workload;
    char where[160];
    if (!r->fits) {
        const struct topology *t = r->prefill_short ? a->prefill_topology : a->topology;
        int64_t budget = r->prefill_short ? a->prefill_budget : a->budget;
        char context[32];
        format_count((double)(r->prefill_short ? w->isl : serve_held_context(w)), context, sizeof context);
        if (r->min_devices > 0) {
            int64_t domains = (r->min_devices + t->domain_devices - 1) / t->domain_devices;
            fprintf(out, "does not fit: %s's weights and one %s of %s tokens need %lld devices of %s (%lld domain%s); "
                         "the %sbudget is %lld\n",
                    a->model->name, r->prefill_short ? "prompt" : "sequence", context, (long long)r->min_devices,
                    t->name, (long long)domains, domains == 1 ? "" : "s", r->prefill_short ? "prefill pool's " : "",
                    (long long)budget);
            if (!r->prefill_short && r->min_devices % t->domain_devices == 0)
                fprintf(out, "  give --racks %lld (or --devices %lld)\n", (long long)domains,
                        (long long)r->min_devices);
            else if (!r->prefill_short)
                fprintf(out, "  give --devices %lld\n", (long long)r->min_devices);
            else
                fprintf(out, "  (the prefill pool is held to its topology as written, its <cluster domains>)\n");
        } else {
            fprintf(out, "does not fit: no cluster of up to %d domains of %s holds %s's weights and one %s of %s "
                         "tokens\n",
                    PLAN_MAX_RACKS, t->name, a->model->name, r->prefill_short ? "prompt" : "sequence", context);
        }
        return;
    }
    const struct serve_point *reachable;
    enum serve_binding binding = serve_binding_target(w, r, &reachable);
    if (binding == SERVE_BINDS_NONE) {
        fprintf(out, "no %sdeployment fits in %lld devices%s\n",
                w->mode == SERVE_BEST ? "" : w->mode == SERVE_AGGREGATED ? "aggregated " : "disaggregated ",
                (long long)a->budget,
                w->mode == SERVE_DISAGGREGATED ? ": a prefill and a decode instance together take more" : "");
        return;
    }
    if (reachable)
        point_where(reachable, where, sizeof where);
    if (binding == SERVE_BINDS_TPOT)
        fprintf(out, "no deployment meets the targets: TPOT <= %.4g ms binds; the lowest TPOT reachable is %.2f ms "
                     "(%s)\n",
                w->tpot_s * 1e3, reachable->tpot_s * 1e3, where);
    else if (binding == SERVE_BINDS_TTFT)
        fprintf(out, "no deployment meets the targets: TTFT <= %.4g ms binds; the lowest TTFT reachable is %.1f ms "
                     "(%s)\n",
                w->ttft_s * 1e3, reachable->ttft_s * 1e3, where);
    else if (reachable)
        fprintf(out, "no deployment meets the targets: each is reachable, not both; within TTFT <= %.4g ms the "
                     "lowest TPOT reachable is %.2f ms (%s)\n",
                w->ttft_s * 1e3, reachable->tpot_s * 1e3, where);
    else
        fprintf(out, "no deployment meets the targets together\n");
}

/* Without --racks/--devices: what the search with no budget finds beyond the topology as
 * written, in one line. */
static void text_more_hardware(FILE *out, const struct answer *a)
{
    const struct serve_result *r = a->result, *o = a->open;
    if (!o)
        return;
    if (!o->found) {
        fprintf(out, "  more hardware: no deployment on more %s meets the targets either\n", a->topology->name);
        return;
    }
    char rate[32], devices[32], where[160];
    format_count(o->best.tokens_per_s_per_device, rate, sizeof rate);
    format_count((double)o->best.devices, devices, sizeof devices);
    point_where(&o->best, where, sizeof where);
    if (!r->found)
        fprintf(out, "  more hardware: %s output tokens/s per device on %s devices (%s)", rate, devices, where);
    else if (o->best.tokens_per_s_per_device > r->best.tokens_per_s_per_device * (1 + 1e-6))
        fprintf(out, "  more hardware: %s output tokens/s per device (+%.1f%%) on %s devices (%s)", rate,
                (o->best.tokens_per_s_per_device / r->best.tokens_per_s_per_device - 1) * 100, devices, where);
    else {
        fprintf(out, "  more hardware: no more output tokens/s per device (the best beyond the budget is %s on %s "
                     "devices)\n",
                rate, devices);
        return;
    }
    const struct serve_point *n = &o->near_best;
    if (r->found && n->tokens_per_s_per_device <= r->best.tokens_per_s_per_device * (1 + 1e-6))
        fprintf(out, "; the deployment above is within %.0f%% of it", (1 - SERVE_NEAR_BEST) * 100);
    else if (n->devices < o->best.devices) {
        format_count(n->tokens_per_s_per_device, rate, sizeof rate);
        format_count((double)n->devices, devices, sizeof devices);
        point_where(n, where, sizeof where);
        fprintf(out, "; %.0f%% of it, %s", SERVE_NEAR_BEST * 100, rate);
        if (r->found)
            fprintf(out, " (+%.1f%%)", (n->tokens_per_s_per_device / r->best.tokens_per_s_per_device - 1) * 100);
        fprintf(out, ", already on %s devices (%s)", devices, where);
    }
    fputc('\n', out);
}

/* The simulation beside the analysis, percentile by percentile. */
static void text_kv_tiers(FILE *out, const struct answer *a)
{
    const struct kv_reuse *r = a->reuse;
    const struct kv_cache_result *c = a->cache;
    char interval[96];
    if (r->kind == KV_INTERVAL_EXP)
        snprintf(interval, sizeof interval, "exponential, mean %.4g s", r->mean_s);
    else
        snprintf(interval, sizeof interval, "%d quantiles from %s", r->count, a->options->reuse_interval);
    fprintf(out, "  prefix cache: %.0f%% of a prompt repeats a prefix, reused after a time %s; the tiers hold "
                 "%.1f%% of the prompt's tokens%s\n",
            r->share * 100, interval, c->prefix_hit * 100,
            a->hit_derived ? " (the prefix hit used)" : " (--prefix-hit overrides it)");
    if (a->hit_derived)
        fprintf(out, "    loading a request's cached prefix takes %.3f ms on average, in its TTFT\n",
                a->workload->prefix_load_s * 1e3);
    if (a->hit_derived && fabs(c->prefix_hit - a->workload->prefix_hit) > 1e-4)
        fprintf(out, "    no hit is its own deployment's (the best one flips as the hit moves): %.1f%% used, a deployment "
                     "whose tiers hold at least that\n",
                a->workload->prefix_hit * 100);
    if (a->warm_hit >= 0)
        fprintf(out, "    a cache started warm settles elsewhere, at %.1f%% (another deployment, as the best one flips "
                     "with the hit); from cold, as here, %.1f%%\n",
                a->warm_hit * 100, a->workload->prefix_hit * 100);
    fprintf(out, "    %-8s %-20s %10s %11s %8s %10s %12s %10s %10s  %s\n", "tier", "name", "GB/device", "residency",
            "hit", "load ms", "recompute ms", "read GB/s", "write GB/s", "worth it");
    for (int i = 0; i < c->tier_count; i++) {
        const struct kv_tier_result *t = &c->tiers[i];
        char residency[32];
        if (!isfinite(t->residency_s))
            snprintf(residency, sizeof residency, "forever");
        else if (t->residency_s < 1)
            snprintf(residency, sizeof residency, "%.1f ms", t->residency_s * 1e3);
        else if (t->residency_s < 600)
            snprintf(residency, sizeof residency, "%.1f s", t->residency_s);
        else
            snprintf(residency, sizeof residency, "%.1f min", t->residency_s / 60);
        fprintf(out, "    %-8s %-20.20s %10.1f %11s %7.1f%% %10.3f %12.3f %10.3f %10.3f  %s\n",
                topology_tier_kind_name(t->kind), t->name, t->capacity_bytes / 1e9, residency, t->hit_share * 100,
                t->load_s * 1e3, t->recompute_s * 1e3, t->read_bytes_per_s / 1e9, t->write_bytes_per_s / 1e9,
                t->capacity_bytes <= 0 ? "no room" : t->worth_it ? "yes" : "no: slower than recomputing");
    }
}

static void text_sizing(FILE *out, const struct kv_sizing *z)
{
    fprintf(out, "  sizing the %s tier (%s) at $%.4g per GB-hour, the capacity a device at 0 to 16 times the "
                 "topology's:\n",
            topology_tier_kind_name(z->kind), z->name, z->usd_per_gb_hour);
    fprintf(out, "    %10s %8s %12s %12s %10s\n", "GB/device", "hit", "tok/s/dev", "$/h/device", "$/Mtok");
    for (int i = 0; i < z->count; i++) {
        const struct kv_sizing_point *x = &z->points[i];
        if (!x->found) {
            fprintf(out, "    %10.1f  no deployment meets the targets\n", x->capacity_bytes / 1e9);
            continue;
        }
        char rate[32];
        format_count(x->tokens_per_s_per_device, rate, sizeof rate);
        fprintf(out, "    %10.1f %7.1f%% %12s %12.4f %10.4f%s\n", x->capacity_bytes / 1e9, x->prefix_hit * 100, rate,
                x->usd_per_hour_per_device, x->cost_per_mtok, i == z->best ? "  <- cheapest a token" : "");
    }
}

/* The share of requests waiting for a KV slot below which the simulated line leaves it out. */
#define SHOWN_SLOT_WAITS 1e-4

static void text_simulated(FILE *out, const struct answer *a)
{
    const struct sim_result *x = a->simulated;
    const struct serve_point *p = a->simulated_point;
    char requests[32], rate[32];
    format_count((double)a->options->simulate, requests, sizeof requests);
    format_count(x->output_tokens_per_s / (double)p->devices, rate, sizeof rate);
    fprintf(out, "  simulated (%s requests, seed %llu): %s output tokens/s per device, %.1f sequences decoding in "
                 "an instance on average",
            requests, (unsigned long long)a->options->seed, rate,
            x->mean_decoding_sequences / (double)p->decode_instances);
    if (a->options->arrivals != SERVE_CLOSED)
        fprintf(out, " (sd %.1f; the analysis %.1f, sd %.1f)", x->decoding_sequences_sd, p->tail.sequences_mean,
                p->tail.sequences_sd);
    fputc('\n', out);
    if (x->slot_wait_share >= SHOWN_SLOT_WAITS || p->tail.slot_wait_probability >= SHOWN_SLOT_WAITS)
        fprintf(out, "  %.3g%% of the simulated requests waited for a KV slot (the analysis %.3g%%)\n",
                x->slot_wait_share * 100, p->tail.slot_wait_probability * 100);
    if (a->options->simulate < a->settling.requests) {
        char settles[32];
        format_count((double)a->settling.requests, settles, sizeof settles);
        fprintf(out, "  not settled: its warm-up (a fifth of the requests) should span %d x the longer of a request's "
                     "life (%.1f s) and the batch's relaxation time (%.1f s); --simulate %s or more\n",
                SERVE_SIM_SETTLE, a->settling.life_s, a->settling.relaxation_s, settles);
    }
    fprintf(out, "    %-6s %12s %12s %12s %12s\n", "ms", "p50", "p90", "p99", "mean");
    const struct sim_percentiles *sim[2] = {&x->ttft_s, &x->tpot_s};
    const double *analytic[2] = {p->tail.ttft_s, p->tail.tpot_s};
    const double means[2] = {p->tail.ttft_mean_s, p->tail.tpot_mean_s};
    const char *names[2] = {"TTFT", "TPOT"};
    for (int i = 0; i < 2; i++) {
        fprintf(out, "    %-6s %12.2f %12.2f %12.2f %12.2f  simulated\n", names[i], sim[i]->p50 * 1e3, sim[i]->p90 * 1e3,
                sim[i]->p99 * 1e3, sim[i]->mean * 1e3);
        fprintf(out, "    %-6s %12.2f %12.2f %12.2f %12.2f  analysis\n", "", analytic[i][0] * 1e3, analytic[i][1] * 1e3,
                analytic[i][2] * 1e3, means[i] * 1e3);
    }
}

static void write_text(FILE *out, const struct answer *a)
{
    const struct serve_workload *w = a->workload;
    const struct serve_result *r = a->result;
    fprintf(out, "%s on %s%s%s%s%s\n", a->model->name, a->topology->name,
            a->topology->announced ? " (announced, not shipping)" : "", a->prefill_topology ? ", prefill on " : "",
            a->prefill_topology ? a->prefill_topology->name : "",
            a->prefill_topology && a->prefill_topology->announced ? " (announced, not shipping)" : "");
    cli_text_serve_workload(out, a->model, w, a->precisions, a->mix);
    text_budget(out, a);
    if (a->bound)
        cli_text_efficiency(out, &a->efficiency, a->calibration);
    fprintf(out, "  searched %lld layouts, %lld points\n\n", (long long)r->layouts, (long long)r->points);
    if (r->found) {
        fprintf(out, "best deployment (%s)\n", a->bound ? "calibrated estimate" : "roofline bound");
        text_point(out, a, &r->best);
        char used[32], budget[32], total[32];
        format_count((double)r->best.devices, used, sizeof used);
        format_count((double)a->budget, budget, sizeof budget);
        format_count(r->best.tokens_per_s_per_device * (double)r->best.devices, total, sizeof total);
        fprintf(out, "  uses %s of the budget's %s devices: %s output tokens/s in all\n", used, budget, total);
        text_unsettled(out, r);
        if (a->bound && a->bound->found) {
            char rate[32];
            format_count(a->bound->best.tokens_per_s_per_device, rate, sizeof rate);
            fprintf(out, "  bound: %s output tokens/s per device (%s, %lld-device instances, TPOT %.2f ms)\n",
                    rate, serve_mode_name(a->bound->best.mode), (long long)a->bound->best.decode.layout.devices,
                    a->bound->best.tpot_s * 1e3);
        }
        if (a->simulated)
            text_simulated(out, a);
        if (a->cache)
            text_kv_tiers(out, a);
        for (int i = 0; i < a->sizing_count; i++)
            text_sizing(out, &a->sizings[i]);
    } else {
        text_none(out, a);
    }
    text_more_hardware(out, a);
    if (w->rate > 0) {
        const struct serve_result *z = a->sizing;
        fprintf(out, "\nfor %.4g requests/s%s\n", w->rate,
                a->budget_source ? "" : " (beyond the topology as written when it takes more)");
        if (z->sized) {
            fprintf(out, "  fewest devices: %lld\n", (long long)z->sized_point.devices);
            text_point(out, a, &z->sized_point);
        } else {
            fprintf(out, "  no deployment serves it within the targets%s\n",
                    a->budget_source ? " and the budget" : "");
        }
    }
    if (!r->fits) {
        fprintf(out, "\n%s\n", a->bound ? "Estimates use the topology's efficiency fitted to published measurements "
                                          "(rackplan calibrate)."
                                        : "Every number is a roofline bound (efficiency 1): no engine serves more.");
        return;
    }
    fprintf(out, "\nfrontier (output tokens/s per device against per user; Pareto points, most per device first)\n");
    fprintf(out, "  %-13s %-32s %9s %10s %10s %12s %12s %9s\n", "mode", "instance (decode)", "batch", "TTFT ms", "TPOT ms",
            "tok/s/user", "tok/s/dev", "$/Mtok");
    for (int64_t i = 0; i < r->frontier_count; i++) {
        const struct serve_point *p = &r->frontier[i];
        char instance[128], batch[32], per_device[32], cost[32];
        if (p->mode == SERVE_DISAGGREGATED)
            snprintf(instance, sizeof instance, "%lldP%lldD, %lld+%lld dev", (long long)p->prefill_instances,
                     (long long)p->decode_instances, (long long)p->prefill.layout.devices,
                     (long long)p->decode.layout.devices);
        else if (p->decode_instances > 1)
            snprintf(instance, sizeof instance, "%lld x %lld dev, TP %lld DP %lld PP %lld", (long long)p->decode_instances,
                     (long long)p->decode.layout.devices, (long long)p->decode.layout.tp,
                     (long long)p->decode.layout.dp, (long long)p->decode.layout.pp);
        else
            snprintf(instance, sizeof instance, "%lld dev, TP %lld DP %lld PP %lld", (long long)p->decode.layout.devices,
                     (long long)p->decode.layout.tp, (long long)p->decode.layout.dp, (long long)p->decode.layout.pp);
        format_count((double)p->decode.batch, batch, sizeof batch);
        format_count(p->tokens_per_s_per_device, per_device, sizeof per_device);
        if (p->cost_per_mtok > 0)
            snprintf(cost, sizeof cost, "%.3f", p->cost_per_mtok);
        else
            snprintf(cost, sizeof cost, "-");
        const char *misses = serve_point_misses(w, p);
        char ttft[32];
        format_ttft_ms(p->ttft_s, ttft, sizeof ttft);
        fprintf(out, "  %-13s %-32.32s %9s %10s %10.2f %12.1f %12s %9s%s%s%s\n", serve_mode_name(p->mode), instance,
                batch, ttft, p->tpot_s * 1e3, p->tokens_per_s_per_user, per_device, cost,
                misses ? "  (" : "", misses ? misses : "", misses ? ")" : "");
    }
    fprintf(out, "\n%s\n", a->bound ? "Estimates use the topology's efficiency fitted to published measurements "
                                      "(rackplan calibrate); the bound line is the roofline at efficiency 1."
                                    : "Every number is a roofline bound (efficiency 1): no engine serves more.");
}

static void write_output(FILE *out, const void *data)
{
    const struct answer *a = data;
    enum json_syntax syntax;
    if (cli_tree_format(a->options->format, &syntax))
        write_tree(out, syntax, a);
    else
        write_text(out, a);
}

static void draw_frontier(FILE *out, const void *data)
{
    const struct answer *a = data;
    const struct serve_result *r = a->result;
    int64_t total = r->mode_frontier_count[0] + r->mode_frontier_count[1] + 1;
    double *values = xcalloc((size_t)(2 * total), sizeof *values);
    struct plot_series series[3];
    int lines = 0;
    double *at = values;
    static const char *const names[2] = {"aggregated", "disaggregated"};
    for (int mode = 0; mode < 2; mode++) {
        int64_t n = r->mode_frontier_count[mode];
        if (n == 0)
            continue;
        double *x = at, *y = at + n;
        for (int64_t i = 0; i < n; i++) {
            x[i] = r->mode_frontier[mode][i].tokens_per_s_per_user;
            y[i] = r->mode_frontier[mode][i].tokens_per_s_per_device;
        }
        series[lines++] = (struct plot_series){names[mode], x, y, n};
        at += 2 * n;
    }
    if (r->found) {
        at[0] = r->best.tokens_per_s_per_user;
        at[1] = r->best.tokens_per_s_per_device;
        series[lines++] = (struct plot_series){"chosen", &at[0], &at[1], 1};
    }
    struct plot_panel panel = {"Throughput against interactivity", "output tokens/s per user (1 / TPOT)",
                               "output tokens/s per device", series, lines};
    char title[300], subtitle[200];
    snprintf(title, sizeof title, "%s on %s", a->model->name, a->topology->name);
    snprintf(subtitle, sizeof subtitle, "%lld prompt and %lld output tokens a request; %s; Pareto points of each mode",
             (long long)a->workload->isl, (long long)a->workload->osl,
             a->bound ? "calibrated estimate" : "roofline bound");
    plot_panels(out, title, subtitle, &panel, 1);
    free(values);
}

static bool write_report(const char *path, const struct answer *a, struct sink_batch *outputs)
{
    char title[300];
    snprintf(title, sizeof title, "Serving %s on %s", a->model->name, a->topology->name);
    struct document d;
    if (!document_open(&d, path, title)) {
        outputs->failed = true;
        return false;
    }
    const struct serve_workload *w = a->workload;
    const struct serve_result *r = a->result;
    document_heading(&d, "Workload");
    document_paragraph(&d, "%lld prompt and %lld output tokens a request; TTFT target %s%.4g ms, TPOT target %s%.4g ms; "
                           "prefix cache hits %.0f%%; MTP %lld draft tokens.",
                       (long long)w->isl, (long long)w->osl, w->ttft_s > 0 ? "" : "none ", w->ttft_s * 1e3,
                       w->tpot_s > 0 ? "" : "none ", w->tpot_s * 1e3, w->prefix_hit * 100, (long long)w->mtp);
    document_heading(&d, "Best deployment");
    if (r->found) {
        const struct serve_point *p = &r->best;
        char layout[96];
        layout_text(&p->decode.layout, layout, sizeof layout);
        document_paragraph(&d, "%s serving: %lld devices; decode instances of %lld devices (%s), batch %lld; "
                               "TTFT %.1f ms, TPOT %.2f ms, %.1f output tokens/s per device, %.1f per user; %s.",
                           serve_mode_name(p->mode), (long long)p->devices, (long long)p->decode.layout.devices, layout,
                           (long long)p->decode.batch, p->ttft_s * 1e3, p->tpot_s * 1e3, p->tokens_per_s_per_device,
                           p->tokens_per_s_per_user, a->bound ? "a calibrated estimate" : "a roofline bound");
    } else {
        char why[1024] = "";
        FILE *f = fmemopen(why, sizeof why - 1, "w");
        if (f) {
            text_none(f, a);
            fclose(f);
        }
        char joined[2 * sizeof why], *to = joined; /* one paragraph: lines joined by "; " */
        for (const char *c = why; *c; c++) {
            if (*c == '\n') {
                while (c[1] == ' ')
                    c++;
                if (c[1]) {
                    *to++ = ';';
                    *to++ = ' ';
                }
            } else {
                *to++ = *c;
            }
        }
        *to = 0;
        document_paragraph(&d, "%s", joined);
    }
    document_heading(&d, "Frontier");
    static const char *const headers[] = {"mode", "instance devices", "batch", "TTFT ms", "TPOT ms", "tok/s/user",
                                          "tok/s/dev", "$/Mtok"};
    document_table_begin(&d, 8, headers, "lrrrrrrr");
    for (int64_t i = 0; i < r->frontier_count; i++) {
        const struct serve_point *p = &r->frontier[i];
        char devices[32], batch[32], ttft[32], tpot[32], user[32], device[32], cost[32];
        snprintf(devices, sizeof devices, "%lld", (long long)p->decode.layout.devices);
        snprintf(batch, sizeof batch, "%lld", (long long)p->decode.batch);
        format_ttft_ms(p->ttft_s, ttft, sizeof ttft);
        snprintf(tpot, sizeof tpot, "%.2f", p->tpot_s * 1e3);
        snprintf(user, sizeof user, "%.1f", p->tokens_per_s_per_user);
        snprintf(device, sizeof device, "%.1f", p->tokens_per_s_per_device);
        if (p->cost_per_mtok > 0)
            snprintf(cost, sizeof cost, "%.3f", p->cost_per_mtok);
        else
            snprintf(cost, sizeof cost, "-");
        const char *row[] = {serve_mode_name(p->mode), devices, batch, ttft, tpot, user, device, cost};
        document_table_row(&d, row);
    }
    document_table_end(&d);
    document_figure(&d, "frontier", "Output tokens/s per device against per user, a line per mode", draw_frontier, a);
    document_hold(&d, outputs);
    return !outputs->failed;
}

/* A pool on `t` as the options describe it, held to `budget` devices (0: none). */
static int pool_of(const struct options *o, const struct model *m, const struct topology *t, const char *path,
                   int64_t budget, const struct workload *precisions, bool bound, struct serve_pool *out,
                   const struct calibration **row)
{
    *out = (struct serve_pool){.model = m, .topology = t, .precisions = *precisions, .budget_devices = budget};
    out->price_usd_per_hour = cli_price(o, path, t);
    if (out->price_usd_per_hour <= 0)
        out->price_usd_per_hour = t->price_usd_per_hour;
    if (bound) {
        out->efficiency = EFFICIENCY_BOUND;
        return EXIT_OK;
    }
    return cli_efficiency(o, t, path, precisions->weights, &out->efficiency, row) ? EXIT_OK : EXIT_USAGE;
}

int cmd_serve(int argc, char **argv)
{
    struct options o;
    struct model m;
    struct topology t, prefill_topology;
    int status = cli_parse(&command_serve, argc, argv, &o);
    if (status >= 0)
        return status;
    if (o.racks && o.devices)
        return cli_usage_error(o.command, "--racks and --devices both set the budget: give one");
    /* the budget: --racks N domains or --devices N; without either the topology as written */
    char given[64];
    snprintf(given, sizeof given, "%s %lld", o.racks ? "--racks" : "--devices", (long long)(o.racks ? o.racks : o.devices));
    const char *budget_source = o.racks || o.devices ? given : NULL;
    int64_t racks = o.racks;
    if ((status = cli_load_model(o.positional[0], &m)) != EXIT_OK ||
        (status = cli_load_topology(o.positional[1], &t)) != EXIT_OK)
        return status;
    if (o.prefill_topology && (status = cli_load_topology(o.prefill_topology, &prefill_topology)) != EXIT_OK)
        return status;
    if ((status = cli_resolve(&o, &m, &t)) != EXIT_OK)
        return status;
    if (o.prefill_topology && o.mode_set && o.mode == SERVE_AGGREGATED)
        return cli_usage_error(o.command, "--prefill-topology is disaggregated serving; drop --mode aggregated");
    for (int p = 0; p < o.price_count; p++)
        if (!cli_price_names(&o.prices[p], o.positional[1], &t) &&
            !(o.prefill_topology && cli_price_names(&o.prices[p], o.prefill_topology, &prefill_topology)))
            return cli_usage_error(o.command, "--price '%s' names neither topology given", o.prices[p].device);
    struct workload precisions;
    cli_workload(&o, &precisions);
    enum precision used;
    const struct topology *hardware[2] = {&t, o.prefill_topology ? &prefill_topology : NULL};
    for (int i = 0; i < 2; i++)
        if (hardware[i] && topology_peak_flops_per_s(hardware[i], precisions.weights, &used) <= 0)
            return cli_usage_error(o.command, "%s gives no peak FLOP/s for %s weights or any wider precision, so no "
                                              "step would end: give --weights at a precision it lists",
                                   hardware[i]->name, precision_name(precisions.weights));
    struct serve_workload w;
    struct length_mix mix;
    if ((status = cli_serve_workload(&o, &w, &mix)) >= 0 || (status = cli_check_lengths(o.command, &m, &w, &mix)) >= 0) {
        length_mix_release(&mix);
        return status;
    }
    if (o.prefill_topology)
        w.mode = SERVE_DISAGGREGATED;
    struct kv_reuse reuse = {.share = o.reuse};
    bool reusing = o.reuse_set && o.reuse > 0;
    if (reusing) {
        char error[256];
        struct diags d;
        diags_init(&d);
        bool read = strncmp(o.reuse_interval, "exp:", 4) == 0
                        ? kv_reuse_parse_interval(o.reuse_interval, &reuse, error, sizeof error)
                        : kv_reuse_read_csv(o.reuse_interval, &reuse, &d);
        if (!read) {
            bool usage = d.count == 0;
            if (usage)
                cli_usage_error(o.command, "--reuse-interval: %s", error);
            else
                diags_print(&d, stderr);
            diags_release(&d);
            length_mix_release(&mix);
            return usage ? EXIT_USAGE : EXIT_INVALID;
        }
        diags_release(&d);
    }
    /* the tiers' hit replaces the workload's unless --prefix-hit gave one */
    bool derive = reusing && o.prefix_hit <= 0;
    double tier_price[4] = {0};
    if (o.size_tiers) {
        if (t.tier_count == 0) {
            length_mix_release(&mix);
            return cli_usage_error(o.command, "--size-tiers: %s lists no memory tier below HBM to size", t.name);
        }
        for (int i = 0; i < t.tier_count; i++) {
            enum tier_kind kind = t.tiers[i].kind;
            tier_price[kind] = o.tier_price_set[kind] ? o.tier_price[kind] : t.tiers[i].usd_per_gb_hour;
            if (!o.tier_price_set[kind] && t.tiers[i].usd_per_gb_hour <= 0) {
                length_mix_release(&mix);
                return cli_usage_error(o.command, "--size-tiers: %s gives no price for its %s tier (%s): give "
                                                  "--tier-price %s=USD_PER_GB_HOUR",
                                       t.name, topology_tier_kind_name(kind), t.tiers[i].name,
                                       topology_tier_kind_name(kind));
            }
        }
    }

    int64_t budget = o.devices ? o.devices : (racks ? racks : t.default_domains) * t.domain_devices;
    int64_t prefill_budget = o.prefill_topology ? prefill_topology.default_domains * prefill_topology.domain_devices : 0;
    struct serve_pool decode, prefill, decode_bound, prefill_bound;
    const struct calibration *row = NULL, *prefill_row = NULL;
    if ((status = pool_of(&o, &m, &t, o.positional[1], budget, &precisions, false, &decode, &row)) != EXIT_OK ||
        (status = pool_of(&o, &m, &t, o.positional[1], budget, &precisions, true, &decode_bound, NULL)) != EXIT_OK)
        return status;
    if (o.prefill_topology &&
        ((status = pool_of(&o, &m, &prefill_topology, o.prefill_topology, prefill_budget, &precisions, false, &prefill,
                           &prefill_row)) != EXIT_OK ||
         (status = pool_of(&o, &m, &prefill_topology, o.prefill_topology, prefill_budget, &precisions, true,
                           &prefill_bound, NULL)) != EXIT_OK))
        return status;
    bool estimate = !efficiency_is_bound(&decode.efficiency) ||
                    (o.prefill_topology && !efficiency_is_bound(&prefill.efficiency));
    /* without a budget given, the same search with none: what more hardware buys, and --rate's
     * sizing, which goes beyond the topology as written */
    struct serve_pool decode_open = decode, prefill_open = prefill;
    decode_open.budget_devices = prefill_open.budget_devices = 0;

    struct serve_result result = {0}, bound = {0}, open = {0};
    struct kv_cache_result cache = {0};
    struct serve_workload searched = w;
    /* what more hardware buys is a search of its own: beside the others, unless the derived hit
     * rate it would take is not known yet */
    struct serve_background beside;
    struct serve_workload open_w = w; /* its own copy: w is written below while it runs */
    bool open_beside = !budget_source && !derive;
    if (open_beside)
        serve_background_start(&beside, &decode_open, o.prefill_topology ? &prefill_open : NULL, &open_w, true,
                               &open);
    /* the bound's search, which --estimate adds, beside the estimate's too unless it waits on the
     * hit the estimate's settles */
    struct serve_background bound_beside;
    struct serve_workload bound_w = w;
    bool bound_in_background = estimate && !derive;
    if (bound_in_background)
        serve_background_start(&bound_beside, &decode_bound, o.prefill_topology ? &prefill_bound : NULL, &bound_w,
                               false, &bound);
    bool ok = (derive ? serve_with_reuse(&decode, o.prefill_topology ? &prefill : NULL, &w, &reuse, &result, &searched,
                                         &cache)
                      : serve_search(&decode, o.prefill_topology ? &prefill : NULL, &w, &result));
    w = searched;
    double warm_hit = -1;
    if (ok && derive && result.found)
        ok = serve_warm_hit(&decode, o.prefill_topology ? &prefill : NULL, &w, &reuse, &warm_hit);
    if (ok && reusing && !derive && result.found) {
        struct kv_cache_input in;
        if (kv_cache_input_of(&decode, o.prefill_topology ? &prefill : NULL, &w, &result.best, &reuse, &in))
            kv_cache_tiers(&in, &cache);
    }
    if (bound_in_background)
        ok = serve_background_join(&bound_beside) && ok;
    else
        ok = ok && (!estimate || serve_search(&decode_bound, o.prefill_topology ? &prefill_bound : NULL, &w, &bound));
    if (open_beside)
        ok = serve_background_join(&beside) && ok;
    else
        ok = ok && (budget_source ||
                    serve_search_best(&decode_open, o.prefill_topology ? &prefill_open : NULL, &w, &open));
    if (!ok) {
        fprintf(stderr, "rackplan serve: out of memory in the search\n");
        serve_result_release(&result);
        serve_result_release(&bound);
        serve_result_release(&open);
        length_mix_release(&mix);
        return EXIT_IO;
    }
    struct kv_sizing sizings[TOPOLOGY_MAX_TIERS];
    int sizing_count = 0;
    if (o.size_tiers && result.found) {
        if (decode.price_usd_per_hour <= 0) {
            fprintf(stderr, "rackplan serve: --size-tiers weighs a tier against the devices' price: %s has none, "
                            "give --price %s=USD\n", t.name, t.name);
            status = EXIT_USAGE;
        }
        for (int i = 0; i < t.tier_count && status != EXIT_USAGE; i++) {
            enum tier_kind kind = t.tiers[i].kind;
            if (!kv_size_tier(&decode, o.prefill_topology ? &prefill : NULL, &w, &reuse, kind, tier_price[kind],
                              &sizings[sizing_count++])) {
                fprintf(stderr, "rackplan serve: out of memory sizing the tiers\n");
                status = EXIT_IO;
                break;
            }
        }
        if (status == EXIT_USAGE || status == EXIT_IO) {
            serve_result_release(&result);
            serve_result_release(&bound);
            serve_result_release(&open);
            length_mix_release(&mix);
            return status;
        }
    }
    /* the deployment simulated: with --rate the one sized for it, at that rate; else the best, at
     * its served rate */
    const struct serve_result *sizing = budget_source ? &result : &open;
    const struct serve_point *simulated_point = w.rate > 0 ? &sizing->sized_point : &result.best;
    struct sim_result simulated;
    bool simulating = o.simulate > 0 && (w.rate > 0 ? sizing->sized : result.found);
    if (simulating) {
        enum serve_sim_status sim = serve_simulate(&decode, &w, &mix, simulated_point, o.simulate, o.seed, &simulated);
        if (sim != SERVE_SIM_OK) {
            fprintf(stderr, "rackplan serve: %s in the simulation\n",
                    sim == SERVE_SIM_NO_MEMORY ? "out of memory" : "internal error");
            serve_result_release(&result);
            serve_result_release(&bound);
            serve_result_release(&open);
            length_mix_release(&mix);
            return EXIT_IO;
        }
    }
    struct answer a = {.model = &m, .topology = &t, .prefill_topology = o.prefill_topology ? &prefill_topology : NULL,
                       .options = &o, .precisions = &precisions, .workload = &w, .result = &result,
                       .bound = estimate ? &bound : NULL, .open = budget_source ? NULL : &open,
                       .sizing = budget_source ? &result : &open, .budget = budget, .prefill_budget = prefill_budget,
                       .budget_source = budget_source, .efficiency = decode.efficiency, .calibration = row,
                       .mix = &mix, .simulated = simulating ? &simulated : NULL,
                       .simulated_point = simulated_point,
                       .settling = simulating ? serve_simulation_settles(&w, simulated_point) : (struct serve_settling){0},
                       .reuse = reusing ? &reuse : NULL,
                       .cache = reusing && result.found ? &cache : NULL, .hit_derived = derive,
                       .sizings = sizings, .sizing_count = sizing_count, .warm_hit = warm_hit};
    /* --emit: the best deployment's launch files, refused before anything is written */
    struct emit_output emitted = {0};
    bool emitting = o.emit_dir && result.found;
    if (o.emit_dir && !result.found)
        fprintf(stderr, "rackplan serve: --emit: no deployment meets the targets, so none is written\n");
    if (emitting) {
        a.emitted = &emitted;
        char model_path[512];
        struct emit_plan plan;
        cli_model_path(&m, o.positional[0], model_path, sizeof model_path);
        emit_plan_of_serve(a.model, a.topology, a.prefill_topology, a.precisions, a.workload, &a.result->best,
                           model_path, a.bound == NULL && efficiency_is_bound(&a.efficiency), &plan);
        if ((status = cli_emit_build(&o, &plan, &emitted)) >= 0) {
            serve_result_release(&result);
            serve_result_release(&bound);
            serve_result_release(&open);
            length_mix_release(&mix);
            return status;
        }
    }
    struct sink_batch outputs;
    sink_batch_init(&outputs);
    bool whole = sink_batch_write(&outputs, o.output, write_output, &a) &&
                 (!o.plot || sink_batch_write(&outputs, o.plot, draw_frontier, &a)) &&
                 (!o.report || write_report(o.report, &a, &outputs)) &&
                 (!emitting || cli_emit_write(&o, &emitted, &outputs));
    if (!sink_batch_finish(&outputs, whole))
        status = EXIT_IO;
    else if (!result.found || (w.rate > 0 && !a.sizing->sized))
        status = EXIT_NO_FIT;
    else
        status = EXIT_OK;
    if (emitting && status != EXIT_IO)
        cli_emit_report(&o, &emitted);
    emit_output_release(&emitted);
    serve_result_release(&result);
    serve_result_release(&bound);
    serve_result_release(&open);
    length_mix_release(&mix);
    return status;
}
