/* cmd_compare.c: `rackplan compare MODEL TOPOLOGY...`: the model on each topology and cluster
 * size side by side, cheapest per token first. */
#include "arith.h"
#include "cli.h"
#include "commands.h"
#include "compare.h"
#include "model.h"
#include "topology.h"

#include "../reports/document.h"
#include "../reports/json.h"
#include "../reports/plot.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct report {
    const struct model *model;
    const struct options *options;
    const struct workload *workload;
    const struct compare_row *rows;
    const struct topology *const *topology_of; /* each row's topology */
    const int64_t *row_of; /* each row's place among all rows: topology given, then size */
    const int64_t *order;
    int64_t count;
    int64_t best;        /* the row marked best; -1: none fits (and meets the target) */
    bool by_domain_size; /* rows in --domain-sizes order, one topology's domain varied */
    const struct serve_workload *serving; /* --isl/--osl: rows are deployments; NULL: decode steps */
    const struct cli_lengths *lengths;    /* what the serving rows' mix is */
};

static bool is_best(const struct report *r, int64_t rank)
{
    return r->order[rank] == r->best;
}

static bool any_estimate(const struct report *r)
{
    for (int64_t i = 0; i < r->count; i++)
        if (r->rows[i].estimate)
            return true;
    return false;
}

/* A serving row's keys after model, topology and announced: the deployment serve finds. */
static void write_serving_fields(struct json *j, const struct report *r, const struct compare_row *x)
{
    const struct serve_point *p = &x->served;
    bool met = x->tpot_met;
    json_key(j, "racks");
    json_int(j, x->racks);
    json_key(j, "devices");
    json_int(j, met ? p->devices : 0);
    json_key(j, "domain_size");
    json_int(j, x->domain_size);
    json_key(j, "workload");
    json_begin_object(j);
    cli_json_serve_workload(j, r->serving);
    cli_json_lengths(j, r->lengths->description);
    json_end_object(j);
    json_key(j, "fits");
    json_bool(j, x->fits);
    json_key(j, "min_devices");
    json_int(j, x->min_devices);
    json_key(j, "tpot_met");
    json_bool(j, met);
    json_key(j, "chunks_on_ranks_in_step"); /* the "~" of the text */
    json_bool(j, met && serve_chunks_on_ranks_in_step(r->model, r->serving, &x->served));
    json_key(j, "binding_target"); /* serve's name for it */
    if (x->binding == SERVE_BINDS_NONE)
        json_null(j);
    else
        json_string(j, serve_binding_name(x->binding));
    json_key(j, "lowest_reachable_s");
    json_positive_or_null(j, x->reachable_s);
    json_key(j, "mode");
    if (met)
        json_string(j, serve_mode_name(p->mode));
    else
        json_null(j);
    json_key(j, "parallel");
    cli_json_parallel(j, &x->layout);
    json_key(j, "instance_devices");
    json_int(j, met ? p->decode.layout.devices : 0);
    json_key(j, "batch");
    json_int(j, x->batch);
    json_key(j, "latency_floor_s");
    json_positive_or_null(j, met ? x->latency_floor_s : 0);
    json_key(j, "step_s");
    json_number(j, met ? p->decode.step_s : 0);
    json_key(j, "bound_by");
    if (met)
        json_string(j, roof_term_name(p->decode.point.bound));
    else
        json_null(j);
    json_key(j, "ttft_s");
    json_positive_or_null(j, met ? p->ttft_s : 0);
    json_key(j, "tpot_s");
    json_positive_or_null(j, met ? p->tpot_s : 0);
    struct serve_tail none = {0};
    cli_json_tail(j, met ? &p->tail : &none);
    json_key(j, "tokens_per_s_per_user");
    json_number(j, met ? p->tokens_per_s_per_user : 0);
    json_key(j, "tokens_per_s");
    json_number(j, met ? x->point.tokens_per_s : 0);
    json_key(j, "tokens_per_s_per_device");
    json_number(j, met ? p->tokens_per_s_per_device : 0);
    json_key(j, "tokens_per_s_per_rack");
    json_number(j, met ? x->tokens_per_s_per_rack : 0);
    if (met && p->mode == SERVE_DISAGGREGATED) {
        json_key(j, "prefill_devices");
        json_int(j, p->prefill_instances * p->prefill.layout.devices);
        json_key(j, "decode_devices");
        json_int(j, p->decode_instances * p->decode.layout.devices);
        json_key(j, "decode_tokens_per_s_per_device");
        json_number(j, p->decode_tokens_per_s_per_device);
        json_key(j, "prefill_parallel");
        cli_json_parallel(j, &p->prefill.layout);
        json_key(j, "prefill_instance_devices");
        json_int(j, p->prefill.layout.devices);
        json_key(j, "kv_transfer_s");
        json_number(j, p->kv_transfer_s);
    }
    json_key(j, "price_usd_per_device_hour");
    json_positive_or_null(j, x->price_usd_per_hour);
    json_key(j, "cost_per_mtok");
    json_positive_or_null(j, x->cost_per_mtok);
    json_key(j, "joules_per_token");
    json_positive_or_null(j, x->joules_per_token);
    json_key(j, "all_to_all_outside_domain");
    json_number(j, x->all_to_all_outside);
}

static void write_tree(FILE *out, enum json_syntax syntax, const struct report *r)
{
    struct json j;
    json_init(&j, out, syntax);
    json_begin_array(&j);
    for (int64_t rank = 0; rank < r->count; rank++) {
        const struct topology *t = r->topology_of[r->order[rank]];
        const struct compare_row *x = &r->rows[r->order[rank]];
        if (x->serving) {
            json_begin_object(&j);
            json_key(&j, "best");
            json_bool(&j, is_best(r, rank));
            json_key(&j, "model");
            json_string(&j, r->model->name);
            json_key(&j, "topology");
            json_string(&j, t->name);
            json_key(&j, "announced");
            json_bool(&j, t->announced);
            write_serving_fields(&j, r, x);
            json_key(&j, "kind");
            json_string(&j, x->estimate ? "estimate" : "bound");
            if (x->estimate) {
                json_key(&j, "efficiency");
                cli_json_efficiency(&j, &x->efficiency, x->calibration);
                json_key(&j, "roofline_bound");
                json_begin_object(&j);
                json_key(&j, "tokens_per_s_per_device");
                json_number(&j, x->bound_tokens_per_s_per_device);
                json_end_object(&j);
            }
            json_key(&j, "row");
            json_int(&j, r->row_of[r->order[rank]]);
            json_end_object(&j);
            continue;
        }
        json_begin_object(&j);
        json_key(&j, "best");
        json_bool(&j, is_best(r, rank));
        json_key(&j, "model");
        json_string(&j, r->model->name);
        json_key(&j, "topology");
        json_string(&j, t->name);
        json_key(&j, "announced");
        json_bool(&j, t->announced);
        json_key(&j, "racks");
        json_int(&j, x->racks);
        json_key(&j, "devices");
        json_int(&j, x->devices);
        json_key(&j, "domain_size");
        json_int(&j, x->domain_size);
        json_key(&j, "context");
        json_int(&j, r->workload->context);
        json_key(&j, "parallel");
        cli_json_parallel(&j, &x->layout);
        json_key(&j, "fits");
        json_bool(&j, x->fits);
        json_key(&j, "max_batch");
        json_int(&j, x->max_batch);
        json_key(&j, "min_devices");
        json_int(&j, x->min_devices);
        json_key(&j, "latency_floor_s");
        if (x->fits)
            json_number(&j, x->latency_floor_s);
        else
            json_null(&j);
        json_key(&j, "tpot_s");
        json_positive_or_null(&j, r->options->tpot_s);
        json_key(&j, "tpot_met");
        json_bool(&j, x->tpot_met);
        json_key(&j, "batch");
        json_int(&j, x->batch);
        json_key(&j, "step_s");
        json_number(&j, x->point.step_s);
        json_key(&j, "bound_by");
        if (x->tpot_met)
            json_string(&j, roof_term_name(x->point.bound));
        else
            json_null(&j);
        json_key(&j, "tokens_per_s");
        json_number(&j, x->point.tokens_per_s);
        json_key(&j, "tokens_per_s_per_device");
        json_number(&j, x->point.tokens_per_s_per_device);
        json_key(&j, "tokens_per_s_per_rack");
        json_number(&j, x->tokens_per_s_per_rack);
        json_key(&j, "price_usd_per_device_hour");
        json_positive_or_null(&j, x->price_usd_per_hour);
        json_key(&j, "cost_per_mtok");
        json_positive_or_null(&j, x->cost_per_mtok);
        json_key(&j, "joules_per_token");
        json_positive_or_null(&j, x->joules_per_token);
        json_key(&j, "all_to_all_outside_domain");
        json_number(&j, x->all_to_all_outside);
        json_key(&j, "kind");
        json_string(&j, x->estimate ? "estimate" : "bound");
        if (x->estimate) {
            json_key(&j, "efficiency");
            cli_json_efficiency(&j, &x->efficiency, x->calibration);
            json_key(&j, "roofline_bound");
            json_begin_object(&j);
            json_key(&j, "latency_floor_s");
            json_number(&j, x->bound_latency_floor_s);
            json_key(&j, "tokens_per_s_per_device");
            json_number(&j, x->bound_tokens_per_s_per_device);
            json_end_object(&j);
        }
        json_key(&j, "row");
        json_int(&j, r->row_of[r->order[rank]]);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_finish(&j);
}

/* In double quotes, a quote doubled (RFC 4180): names hold commas ("GB200 NVL72, domain of 8"). */
static void csv_quoted(FILE *out, const char *text)
{
    fputc('"', out);
    for (const char *c = text; *c; c++) {
        if (*c == '"')
            fputc('"', out);
        fputc(*c, out);
    }
    fputc('"', out);
}

static void write_csv(FILE *out, const struct report *r)
{
    fprintf(out, "best,topology,announced,racks,devices,domain_size,tp,ep,pp,dp,fits,max_batch,"
                 "min_devices,latency_floor_s,tpot_met,batch,step_s,tokens_per_s,"
                 "tokens_per_s_per_device,tokens_per_s_per_rack,cost_per_mtok,joules_per_token,"
                 "all_to_all_outside_domain,kind,row%s\n",
            any_estimate(r) ? ",bound_latency_floor_s,bound_tokens_per_s_per_device" : "");
    for (int64_t rank = 0; rank < r->count; rank++) {
        const struct topology *t = r->topology_of[r->order[rank]];
        const struct compare_row *x = &r->rows[r->order[rank]];
        fprintf(out, "%s,", is_best(r, rank) ? "true" : "false");
        csv_quoted(out, t->name);
        fprintf(out, ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%.9g,%s,%" PRId64
                     ",%.9g,%.9g,%.9g,%.9g,",
                t->announced ? "true" : "false", x->racks, x->devices, x->domain_size,
                x->layout.tp, x->layout.ep, x->layout.pp, x->layout.dp, x->fits ? "true" : "false",
                x->max_batch, x->min_devices, x->fits ? x->latency_floor_s : 0,
                x->tpot_met ? "true" : "false",
                x->batch, x->point.step_s, x->point.tokens_per_s,
                x->point.tokens_per_s_per_device, x->tokens_per_s_per_rack);
        if (x->cost_per_mtok > 0)
            fprintf(out, "%.9g", x->cost_per_mtok);
        fprintf(out, ",");
        if (x->joules_per_token > 0)
            fprintf(out, "%.9g", x->joules_per_token);
        fprintf(out, ",%.9g,%s,%" PRId64, x->all_to_all_outside, x->estimate ? "estimate" : "bound",
                r->row_of[r->order[rank]]);
        if (any_estimate(r))
            fprintf(out, ",%.9g,%.9g", x->fits ? x->bound_latency_floor_s : 0, x->bound_tokens_per_s_per_device);
        fprintf(out, "\n");
    }
}

/* The table's cells for one row, as text (shared by the text and Markdown tables). */
struct cells {
    char name[160], racks[32], devices[32], domain[32], fits[48], floor[32], batch[32],
        per_device[32], per_rack[32], cost[32], energy[32], outside[32];
    char bound_floor[32], bound_per_device[32]; /* an estimate's bound; "-" for a bound */
};

static void row_cells(const struct report *r, int64_t rank, struct cells *c)
{
    const struct topology *t = r->topology_of[r->order[rank]];
    const struct compare_row *x = &r->rows[r->order[rank]];
    snprintf(c->name, sizeof c->name, "%s%s%s", is_best(r, rank) ? "* " : "", t->name,
             t->announced ? " (announced)" : "");
    format_count((double)x->racks, c->racks, sizeof c->racks);
    format_count((double)x->devices, c->devices, sizeof c->devices);
    format_count((double)x->domain_size, c->domain, sizeof c->domain);
    char count[32];
    format_count((double)x->min_devices, count, sizeof count);
    if (x->fits)
        snprintf(c->fits, sizeof c->fits, "yes (min %s)", count);
    else if (x->min_devices > 0)
        snprintf(c->fits, sizeof c->fits, "no (needs %s)", count);
    else
        snprintf(c->fits, sizeof c->fits, "no");
    if (x->fits)
        snprintf(c->floor, sizeof c->floor, "%.4g", x->latency_floor_s * 1e3);
    else
        snprintf(c->floor, sizeof c->floor, "-");
    if (x->tpot_met) {
        format_count((double)x->batch, c->batch, sizeof c->batch);
        format_count(x->point.tokens_per_s_per_device, c->per_device, sizeof c->per_device);
        format_count(x->tokens_per_s_per_rack, c->per_rack, sizeof c->per_rack);
    } else {
        snprintf(c->batch, sizeof c->batch, "%s", x->fits ? "misses TPOT" : "-");
        snprintf(c->per_device, sizeof c->per_device, "-");
        snprintf(c->per_rack, sizeof c->per_rack, "-");
    }
    if (x->cost_per_mtok > 0)
        snprintf(c->cost, sizeof c->cost, "%.4g", x->cost_per_mtok);
    else
        snprintf(c->cost, sizeof c->cost, "-");
    if (x->joules_per_token > 0)
        snprintf(c->energy, sizeof c->energy, "%.3g", x->joules_per_token);
    else
        snprintf(c->energy, sizeof c->energy, "-");
    snprintf(c->outside, sizeof c->outside, "%.0f%%", x->all_to_all_outside * 100);
    snprintf(c->bound_floor, sizeof c->bound_floor, "-");
    snprintf(c->bound_per_device, sizeof c->bound_per_device, "-");
    if (x->estimate && x->fits) {
        snprintf(c->bound_floor, sizeof c->bound_floor, "%.4g", x->bound_latency_floor_s * 1e3);
        if (x->bound_tokens_per_s_per_device > 0)
            format_count(x->bound_tokens_per_s_per_device, c->bound_per_device, sizeof c->bound_per_device);
    }
}

static void write_heading(FILE *out, const struct report *r)
{
    char context[32];
    format_count((double)r->workload->context, context, sizeof context);
    fprintf(out, "%s at %s tokens of context", r->model->name, context);
    if (r->options->tpot_s > 0)
        fprintf(out, ", time per output token <= %.4g ms", r->options->tpot_s * 1e3);
    fprintf(out, "\n");
}

static void serving_heading(FILE *out, const struct report *r)
{
    const struct serve_workload *w = r->serving;
    char isl[32], osl[32];
    format_count((double)w->isl, isl, sizeof isl);
    format_count((double)w->osl, osl, sizeof osl);
    fprintf(out, "%s serving %s prompt and %s output tokens a request", r->model->name, isl, osl);
    if (w->ttft_s > 0)
        fprintf(out, ", TTFT <= %.4g ms", w->ttft_s * 1e3);
    if (w->tpot_s > 0)
        fprintf(out, ", TPOT <= %.4g ms", w->tpot_s * 1e3);
    if (w->mode != SERVE_BEST)
        fprintf(out, ", %s only", serve_mode_name(w->mode));
    /* the budget of every row: --racks (the row's racks column) or --devices */
    if (r->options->racks_count > 0 && !r->by_domain_size) {
        fprintf(out, ", budget --racks ");
        for (int k = 0; k < r->options->racks_count; k++)
            fprintf(out, "%s%lld", k ? "," : "", (long long)r->options->racks_list[k]);
        fputs(r->options->racks_count > 1 ? " (a row each)" : "", out);
    }
    else if (r->options->devices > 0 && !r->by_domain_size)
        fprintf(out, ", budget --devices %lld", (long long)r->options->devices);
    fprintf(out, "\n");
    cli_text_lengths(out, w, r->lengths->description, r->lengths->classes);
}

/* A serving row's cells: the deployment serve finds. */
struct serving_cells {
    char name[160], mode[24], instance[48], devices[32], batch[32], ttft[32], tpot[32], user[32], per_device[32],
        cost[32], energy[32], bound[32];
};

static void serving_row_cells(const struct report *r, int64_t rank, struct serving_cells *c)
{
    const struct topology *t = r->topology_of[r->order[rank]];
    const struct compare_row *x = &r->rows[r->order[rank]];
    const struct serve_point *p = &x->served;
    snprintf(c->name, sizeof c->name, "%s%s%s", is_best(r, rank) ? "* " : "", t->name,
             t->announced ? " (announced)" : "");
    if (!x->tpot_met) {
        enum precision used;
        if (topology_peak_flops_per_s(t, r->workload->weights, &used) <= 0)
            snprintf(c->mode, sizeof c->mode, "no %s peak", precision_name(r->workload->weights));
        else if (!x->fits)
            snprintf(c->mode, sizeof c->mode, "does not fit");
        else
            snprintf(c->mode, sizeof c->mode, "%s",
                     x->binding == SERVE_BINDS_TPOT   ? "misses TPOT"
                     : x->binding == SERVE_BINDS_TTFT ? "misses TTFT"
                     : x->binding == SERVE_BINDS_BOTH ? "misses both"
                                                      : "misses targets");
        snprintf(c->instance, sizeof c->instance, "-");
        snprintf(c->devices, sizeof c->devices, "-");
        snprintf(c->batch, sizeof c->batch, "-");
        /* the binding target's cell: the lowest value of it any deployment reaches */
        bool ttft = x->binding == SERVE_BINDS_TTFT && x->reachable_s > 0;
        bool tpot = (x->binding == SERVE_BINDS_TPOT || x->binding == SERVE_BINDS_BOTH) && x->reachable_s > 0;
        if (ttft)
            snprintf(c->ttft, sizeof c->ttft, ">=%.1f", x->reachable_s * 1e3);
        else
            snprintf(c->ttft, sizeof c->ttft, "-");
        if (tpot)
            snprintf(c->tpot, sizeof c->tpot, ">=%.2f", x->reachable_s * 1e3);
        else
            snprintf(c->tpot, sizeof c->tpot, "-");
        snprintf(c->user, sizeof c->user, "-");
        snprintf(c->per_device, sizeof c->per_device, "-");
        snprintf(c->cost, sizeof c->cost, "-");
        snprintf(c->energy, sizeof c->energy, "-");
        snprintf(c->bound, sizeof c->bound, "-");
        return;
    }
    snprintf(c->mode, sizeof c->mode, "%s", p->mode == SERVE_AGGREGATED ? "aggregated" : "disagg");
    if (p->mode == SERVE_DISAGGREGATED)
        snprintf(c->instance, sizeof c->instance, "%lldP%lldD %lld+%lld", (long long)p->prefill_instances,
                 (long long)p->decode_instances, (long long)p->prefill.layout.devices,
                 (long long)p->decode.layout.devices);
    else
        snprintf(c->instance, sizeof c->instance, "%lld TP%lld DP%lld PP%lld", (long long)p->decode.layout.devices,
                 (long long)p->decode.layout.tp, (long long)p->decode.layout.dp, (long long)p->decode.layout.pp);
    format_count((double)p->devices, c->devices, sizeof c->devices);
    format_count((double)p->decode.batch, c->batch, sizeof c->batch);
    format_ttft_ms(p->ttft_s, c->ttft, sizeof c->ttft);
    if (serve_ttft_on_slot_waits(r->serving, p))
        strncat(c->ttft, "!", sizeof c->ttft - strlen(c->ttft) - 1);
    snprintf(c->tpot, sizeof c->tpot, "%.2f%s", p->tpot_s * 1e3,
             serve_chunks_on_ranks_in_step(r->model, r->serving, p) ? "~" : "");
    snprintf(c->user, sizeof c->user, "%.1f", p->tokens_per_s_per_user);
    format_count(p->tokens_per_s_per_device, c->per_device, sizeof c->per_device);
    if (x->cost_per_mtok > 0)
        snprintf(c->cost, sizeof c->cost, "%.4g", x->cost_per_mtok);
    else
        snprintf(c->cost, sizeof c->cost, "-");
    if (x->joules_per_token > 0)
        snprintf(c->energy, sizeof c->energy, "%.3g", x->joules_per_token);
    else
        snprintf(c->energy, sizeof c->energy, "-");
    if (x->estimate && x->bound_tokens_per_s_per_device > 0)
        format_count(x->bound_tokens_per_s_per_device, c->bound, sizeof c->bound);
    else
        snprintf(c->bound, sizeof c->bound, "-");
}

/* The note a TTFT marked "!" refers to, wrapped for the text table. */
#define SLOT_WAITS_NOTE                                                                                                 \
    "a quarter or more of the requests above the targets' percentile wait for a KV slot:\n"                             \
    "  aggregated, TTFT's percentile is that wait, a cliff which a few tenths of a percent more\n"                      \
    "  waiting move; disaggregated, it is the decode pool's, which the engines take before\n"                           \
    "  prefill (README, \"Tail latency\"): check the row with rackplan serve --simulate."

/* The note a TPOT marked "~" refers to (serve_chunks_on_ranks_in_step). */
#define CHUNKS_ON_RANKS_NOTE                                                                                            \
    "aggregated, prompts longer than a rank's chunk arriving at random on ranks that step together:\n"                  \
    "  there the analysis' TPOT has run 5-20% below the simulation's (README, \"Tail latency\"):\n"                     \
    "  check the row with rackplan serve --simulate."

static bool any_chunks_on_ranks(const struct report *r)
{
    for (int64_t i = 0; i < r->count; i++)
        if (r->rows[i].tpot_met && serve_chunks_on_ranks_in_step(r->model, r->serving, &r->rows[i].served))
            return true;
    return false;
}

/* Whether some row meeting the targets has its TTFT percentile set by waits for a KV slot. */
static bool any_slot_waits(const struct report *r)
{
    for (int64_t i = 0; i < r->count; i++)
        if (r->rows[i].tpot_met && serve_ttft_on_slot_waits(r->serving, &r->rows[i].served))
            return true;
    return false;
}

static void write_serving_text(FILE *out, const struct report *r)
{
    serving_heading(out, r);
    fprintf(out, "\n");
    bool estimates = any_estimate(r);
    fprintf(out, "%-40s %-14s %-22s %8s %8s %9s %8s %10s %10s %8s %7s", "topology", "mode", "instance (decode)",
            "devices", "batch", "TTFT ms", "TPOT ms", "tok/s/user", "tok/s/dev", "$/Mtok", "J/tok");
    if (estimates)
        fprintf(out, " %15s", "bound tok/s/dev");
    fprintf(out, "\n");
    for (int64_t rank = 0; rank < r->count; rank++) {
        struct serving_cells c;
        serving_row_cells(r, rank, &c);
        fprintf(out, "%-40s %-14s %-22s %8s %8s %9s %8s %10s %10s %8s %7s", c.name, c.mode, c.instance, c.devices,
                c.batch, c.ttft, c.tpot, c.user, c.per_device, c.cost, c.energy);
        if (estimates)
            fprintf(out, " %15s", c.bound);
        fprintf(out, "\n");
    }
    fprintf(out, "\n* cheapest per token among the rows that meet the targets; sorted by $/Mtok (unpriced rows\n"
                 "  after, by tok/s/dev). Each row is the best deployment rackplan serve finds: tok/s/dev is\n"
                 "  output tokens/s over every device, prefill devices included. %s\n",
            estimates ? "Estimates use each topology's efficiency\n  fitted to published measurements "
                        "(rackplan calibrate); the bound column is the roofline at efficiency 1."
                      : "Every number is a\n  roofline bound (efficiency 1).");
    if ((r->options->racks_count > 0 || r->options->devices > 0) && !r->by_domain_size)
        fprintf(out, "  The budget holds both pools and every replica; devices: those the deployment uses of it,\n"
                     "  over which tok/s/dev is counted.\n");
    if (any_slot_waits(r))
        fprintf(out, "! %s\n", SLOT_WAITS_NOTE);
    if (any_chunks_on_ranks(r))
        fprintf(out, "~ %s\n", CHUNKS_ON_RANKS_NOTE);
}

static void write_serving_markdown(FILE *out, const struct report *r)
{
    fprintf(out, "## ");
    serving_heading(out, r);
    bool estimates = any_estimate(r);
    fprintf(out, "\n| topology | mode | instance (decode) | devices | batch | TTFT ms | TPOT ms | tok/s/user | "
                 "tok/s/dev | $/Mtok | J/tok |%s\n"
                 "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |%s\n",
            estimates ? " bound tok/s/dev |" : "", estimates ? " ---: |" : "");
    for (int64_t rank = 0; rank < r->count; rank++) {
        struct serving_cells c;
        serving_row_cells(r, rank, &c);
        bool best = is_best(r, rank);
        fprintf(out, "| %s%s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", best ? "**" : "",
                best ? c.name + 2 : c.name, best ? "** (best)" : "", c.mode, c.instance, c.devices, c.batch, c.ttft,
                c.tpot, c.user, c.per_device, c.cost, c.energy);
        if (estimates)
            fprintf(out, " %s |", c.bound);
        fprintf(out, "\n");
    }
    fprintf(out, "\ntok/s/dev: output tokens/s over every device of the deployment, prefill devices included. %s\n",
            estimates ? "Rows are calibrated estimates; the bound column is the roofline at efficiency 1."
                      : "Every number is a roofline bound (efficiency 1).");
    if (any_slot_waits(r))
        fprintf(out, "\n! %s\n", SLOT_WAITS_NOTE);
    if (any_chunks_on_ranks(r))
        fprintf(out, "\n~ %s\n", CHUNKS_ON_RANKS_NOTE);
}

static void write_serving_csv(FILE *out, const struct report *r)
{
    fprintf(out, "best,topology,announced,racks,devices,domain_size,isl,osl,mode,instance_devices,tp,ep,pp,dp,"
                 "fits,min_devices,tpot_met,batch,ttft_s,tpot_s,tokens_per_s_per_user,tokens_per_s_per_device,"
                 "prefill_devices,decode_devices,decode_tokens_per_s_per_device,cost_per_mtok,joules_per_token,kind,"
                 "row%s\n",
            any_estimate(r) ? ",bound_tokens_per_s_per_device" : "");
    for (int64_t rank = 0; rank < r->count; rank++) {
        const struct topology *t = r->topology_of[r->order[rank]];
        const struct compare_row *x = &r->rows[r->order[rank]];
        const struct serve_point *p = &x->served;
        bool met = x->tpot_met, split = met && p->mode == SERVE_DISAGGREGATED;
        fprintf(out, "%s,", is_best(r, rank) ? "true" : "false");
        csv_quoted(out, t->name);
        fprintf(out, ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%s,%" PRId64 ",%.9g,%.9g,%.9g,%.9g,",
                t->announced ? "true" : "false", x->racks, met ? p->devices : 0, x->domain_size, r->serving->isl,
                r->serving->osl, met ? serve_mode_name(p->mode) : "", met ? p->decode.layout.devices : 0,
                x->layout.tp, x->layout.ep, x->layout.pp, x->layout.dp, x->fits ? "true" : "false", x->min_devices,
                met ? "true" : "false", x->batch, met ? p->ttft_s : 0, met ? p->tpot_s : 0,
                met ? p->tokens_per_s_per_user : 0, met ? p->tokens_per_s_per_device : 0);
        if (split)
            fprintf(out, "%" PRId64 ",%" PRId64 ",%.9g", p->prefill_instances * p->prefill.layout.devices,
                    p->decode_instances * p->decode.layout.devices, p->decode_tokens_per_s_per_device);
        else
            fprintf(out, ",,");
        fprintf(out, ",");
        if (x->cost_per_mtok > 0)
            fprintf(out, "%.9g", x->cost_per_mtok);
        fprintf(out, ",");
        if (x->joules_per_token > 0)
            fprintf(out, "%.9g", x->joules_per_token);
        fprintf(out, ",%s,%" PRId64, x->estimate ? "estimate" : "bound", r->row_of[r->order[rank]]);
        if (any_estimate(r))
            fprintf(out, ",%.9g", x->bound_tokens_per_s_per_device);
        fprintf(out, "\n");
    }
}

static void write_text(FILE *out, const struct report *r)
{
    write_heading(out, r);
    fprintf(out, "\n");
    bool estimates = any_estimate(r);
    if (estimates) {
        char over[256];
        snprintf(over, sizeof over, "%-40s %6s %8s %7s %-18s %9s %12s %10s %11s %8s", "", "", "", "", "",
                 "estimate", "estimate", "estimate", "estimate", "estimate");
        fprintf(out, "%s %7s %8s %9s %15s\n", over, "", "", "bound", "bound");
    }
    fprintf(out, "%-40s %6s %8s %7s %-18s %9s %12s %10s %11s %8s %7s %8s", "topology", "racks",
            "devices", "domain", "fits", "floor ms", "batch", "tok/s/dev", "tok/s/rack", "$/Mtok",
            "J/tok", "leaves");
    if (estimates)
        fprintf(out, " %9s %15s", "floor ms", "tok/s/dev");
    fprintf(out, "\n");
    for (int64_t rank = 0; rank < r->count; rank++) {
        struct cells c;
        row_cells(r, rank, &c);
        fprintf(out, "%-40s %6s %8s %7s %-18s %9s %12s %10s %11s %8s %7s %8s", c.name, c.racks,
                c.devices, c.domain, c.fits, c.floor, c.batch, c.per_device, c.per_rack, c.cost,
                c.energy, c.outside);
        if (estimates)
            fprintf(out, " %9s %15s", c.bound_floor, c.bound_per_device);
        fprintf(out, "\n");
    }
    fprintf(out, "\n* cheapest per token among the rows that fit%s;\n  %s.\n"
                 "  floor: the decode step at batch 1; leaves: share of the MoE all-to-all that\n"
                 "  crosses scale-up domains. %s\n",
            r->options->tpot_s > 0 ? " and meet the target" : "",
            r->by_domain_size ? "rows by domain size: the same accelerator, links per device and price"
                              : "sorted by $/Mtok (unpriced rows after, by tok/s/dev)",
            any_estimate(r) ? "Estimates use each topology's efficiency fitted to published measurements\n"
                              "  (rackplan calibrate); the bound columns are the roofline at efficiency 1."
                            : "Every number is a roofline bound (efficiency 1).");
}

static void write_markdown(FILE *out, const struct report *r)
{
    fprintf(out, "## ");
    write_heading(out, r);
    bool estimates = any_estimate(r);
    fprintf(out, "\n| topology | racks | devices | domain | fits | floor ms | batch | tok/s/dev | "
                 "tok/s/rack | $/Mtok | J/tok | all-to-all leaving the domain |%s\n"
                 "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |%s\n",
            estimates ? " bound floor ms | bound tok/s/dev |" : "", estimates ? " ---: | ---: |" : "");
    for (int64_t rank = 0; rank < r->count; rank++) {
        struct cells c;
        row_cells(r, rank, &c);
        bool best = is_best(r, rank);
        fprintf(out, "| %s%s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |",
                best ? "**" : "", best ? c.name + 2 : c.name, best ? "** (best)" : "", c.racks,
                c.devices, c.domain, c.fits, c.floor, c.batch, c.per_device, c.per_rack, c.cost,
                c.energy, c.outside);
        if (estimates)
            fprintf(out, " %s | %s |", c.bound_floor, c.bound_per_device);
        fprintf(out, "\n");
    }
    fprintf(out, "\n%s\n", estimates ? "Rows marked estimate use each topology's efficiency fitted to published "
                                        "measurements (rackplan calibrate); the bound columns are the roofline at "
                                        "efficiency 1."
                                      : "Every number is a roofline bound (efficiency 1).");
}

/* The rows' decode steps against batch, 1 to each row's largest batch that fits. */
enum { CURVE_POINTS = 40 };

struct curves {
    const struct report *report;
    struct roof_point (*points)[CURVE_POINTS];
    int64_t *count; /* per row; 0: the row does not fit */
    bool priced;
};

static bool sweep_rows(const struct report *r, struct curves *c)
{
    c->report = r;
    c->points = xcalloc((size_t)r->count, sizeof *c->points);
    c->count = xcalloc((size_t)r->count, sizeof *c->count);
    c->priced = false;
    for (int64_t i = 0; i < r->count; i++) {
        const struct compare_row *x = &r->rows[i];
        if (!x->fits)
            continue;
        int64_t batches[CURVE_POINTS];
        c->count[i] = roof_sweep_batches(1, x->max_batch > 1 ? x->max_batch : 2, CURVE_POINTS, batches);
        if (!compare_sweep(r->model, r->topology_of[i], x, r->workload, batches, c->count[i], c->points[i]))
            return false;
        c->priced |= x->price_usd_per_hour > 0;
    }
    return true;
}

static void curves_release(struct curves *c)
{
    free(c->points);
    free(c->count);
}

static void row_name(const struct report *r, int64_t row, char *out, size_t size)
{
    const struct compare_row *x = &r->rows[row];
    snprintf(out, size, "%s, %lld device%s", r->topology_of[row]->name, (long long)x->devices,
             x->devices == 1 ? "" : "s");
}

static void draw_batch_curves(FILE *out, const void *data)
{
    const struct curves *c = data;
    const struct report *r = c->report;
    int64_t n = r->count;
    struct plot_series *time = xcalloc((size_t)n, sizeof *time), *right = xcalloc((size_t)n, sizeof *right);
    double *values = xcalloc((size_t)(n * 3 * CURVE_POINTS), sizeof *values);
    char (*names)[200] = xcalloc((size_t)n, sizeof *names), (*priced_names)[216] = xcalloc((size_t)n, sizeof *priced_names);
    int lines = 0;
    for (int64_t rank = 0; rank < n; rank++) {
        int64_t i = r->order[rank];
        if (c->count[i] == 0)
            continue;
        double *x = values + i * 3 * CURVE_POINTS, *ms = x + CURVE_POINTS, *y = ms + CURVE_POINTS;
        for (int64_t k = 0; k < c->count[i]; k++) {
            const struct roof_point *p = &c->points[i][k];
            x[k] = (double)p->batch;
            ms[k] = p->step_s * 1e3;
            y[k] = c->priced ? p->cost_per_mtok : p->tokens_per_s_per_device;
        }
        row_name(r, i, names[i], sizeof names[i]);
        snprintf(priced_names[i], sizeof priced_names[i], "%s%s", names[i],
                 c->priced && r->rows[i].price_usd_per_hour <= 0 ? " (no price)" : "");
        time[lines] = (struct plot_series){names[i], x, ms, c->count[i]};
        right[lines++] = (struct plot_series){priced_names[i], x, y, c->count[i]};
    }
    struct plot_panel panels[2] = {
        {"Time per output token", "batch (sequences)", "milliseconds per decode step", time, lines},
        {c->priced ? "Cost per million output tokens" : "Throughput per device", "batch (sequences)",
         c->priced ? "USD per million tokens" : "tokens per second per device", right, lines}};
    char title[200];
    snprintf(title, sizeof title, "%s: decode against batch", r->model->name);
    plot_panels(out, title, "roofline bound at each topology's layout, up to the largest batch that fits",
                panels, 2);
    free(priced_names);
    free(names);
    free(values);
    free(right);
    free(time);
}

/* With a workload: each row's frontier, tokens/s per device against per user. */
static void draw_frontiers(FILE *out, const void *data)
{
    const struct report *r = data;
    int64_t n = r->count, total = 0;
    for (int64_t i = 0; i < n; i++)
        total += r->rows[i].frontier_count;
    struct plot_series *series = xcalloc((size_t)n, sizeof *series);
    double *values = xcalloc((size_t)(2 * total + 1), sizeof *values);
    char (*names)[200] = xcalloc((size_t)n, sizeof *names);
    int lines = 0;
    double *at = values;
    for (int64_t rank = 0; rank < n; rank++) {
        int64_t i = r->order[rank];
        const struct compare_row *x = &r->rows[i];
        if (x->frontier_count == 0)
            continue;
        double *users = at, *devices = at + x->frontier_count;
        for (int64_t k = 0; k < x->frontier_count; k++) {
            users[k] = x->frontier[k].tokens_per_s_per_user;
            devices[k] = x->frontier[k].tokens_per_s_per_device;
        }
        at += 2 * x->frontier_count;
        snprintf(names[i], sizeof names[i], "%s", r->topology_of[i]->name);
        series[lines++] = (struct plot_series){names[i], users, devices, x->frontier_count};
    }
    struct plot_panel panel = {"Throughput against interactivity", "output tokens/s per user (1 / TPOT)",
                               "output tokens/s per device", series, lines};
    char title[200], subtitle[200];
    snprintf(title, sizeof title, "%s: what each topology serves", r->model->name);
    snprintf(subtitle, sizeof subtitle, "%lld prompt and %lld output tokens a request; each row's Pareto points, %s",
             (long long)r->serving->isl, (long long)r->serving->osl,
             any_estimate(r) ? "calibrated estimates" : "roofline bounds");
    plot_panels(out, title, subtitle, &panel, 1);
    free(names);
    free(values);
    free(series);
}

static void draw_domain_sizes(FILE *out, const void *data)
{
    const struct report *r = data;
    int64_t n = r->count;
    double *values = xcalloc((size_t)(4 * n), sizeof *values);
    double *size = values, *floor_ms = size + n, *per_device = floor_ms + n, *cost = per_device + n;
    bool priced = false;
    for (int64_t i = 0; i < n; i++) {
        const struct compare_row *x = &r->rows[i];
        size[i] = (double)x->domain_size;
        floor_ms[i] = x->fits ? x->latency_floor_s * 1e3 : 0;
        per_device[i] = x->tpot_met ? x->point.tokens_per_s_per_device : 0;
        cost[i] = x->cost_per_mtok;
        priced |= cost[i] > 0;
    }
    const char *accelerator = r->topology_of[0]->accelerator;
    struct plot_series floor_line = {accelerator, size, floor_ms, n},
                       rate_line = {accelerator, size, per_device, n}, cost_line = {accelerator, size, cost, n};
    struct plot_panel panels[3] = {
        {"Latency floor", "scale-up domain size (devices)", "milliseconds (batch 1)", &floor_line, 1},
        {"Throughput per device", "scale-up domain size (devices)",
         r->options->tpot_s > 0 ? "tokens/s per device within the TPOT" : "tokens/s per device", &rate_line, 1},
        {"Cost per million output tokens", "scale-up domain size (devices)", "USD per million tokens",
         &cost_line, 1}};
    char title[320];
    char devices[32];
    format_count((double)r->rows[0].devices, devices, sizeof devices);
    snprintf(title, sizeof title, "%s on %s devices: what a bigger scale-up domain buys", r->model->name, devices);
    plot_panels(out, title, "the same accelerator, links per device, scale-out network and price; only the domain varies",
                panels, priced ? 3 : 2);
    free(values);
}

/* The table in the format asked for (-o or standard output). */
static void write_output(FILE *out, const void *data)
{
    const struct report *r = data;
    enum json_syntax syntax;
    if (cli_tree_format(r->options->format, &syntax))
        write_tree(out, syntax, r);
    else if (r->options->format == FORMAT_CSV)
        (r->serving ? write_serving_csv : write_csv)(out, r);
    else if (r->options->format == FORMAT_MD)
        (r->serving ? write_serving_markdown : write_markdown)(out, r);
    else
        (r->serving ? write_serving_text : write_text)(out, r);
}

static bool write_serving_report(struct document *d, const struct report *r, struct sink_batch *outputs)
{
    char heading[300];
    snprintf(heading, sizeof heading, "%s serving %lld prompt and %lld output tokens a request", r->model->name,
             (long long)r->serving->isl, (long long)r->serving->osl);
    document_heading(d, heading);
    if (r->serving->ttft_s > 0 || r->serving->tpot_s > 0)
        document_paragraph(d, "Targets: TTFT %s %.4g ms, TPOT %s %.4g ms.", r->serving->ttft_s > 0 ? "<=" : "none,",
                           r->serving->ttft_s * 1e3, r->serving->tpot_s > 0 ? "<=" : "none,", r->serving->tpot_s * 1e3);
    static const char *const headers[] = {"topology", "mode", "instance (decode)", "devices", "batch", "TTFT ms",
                                          "TPOT ms", "tok/s/user", "tok/s/dev", "$/Mtok", "J/tok", "bound tok/s/dev"};
    bool estimates = any_estimate(r);
    document_table_begin(d, estimates ? 12 : 11, headers, "lllrrrrrrrrr");
    for (int64_t rank = 0; rank < r->count; rank++) {
        struct serving_cells c;
        serving_row_cells(r, rank, &c);
        char name[sizeof c.name + 8];
        snprintf(name, sizeof name, "%.159s%s", is_best(r, rank) ? c.name + 2 : c.name,
                 is_best(r, rank) ? " (best)" : "");
        const char *row[] = {name, c.mode, c.instance, c.devices, c.batch, c.ttft, c.tpot, c.user, c.per_device,
                             c.cost, c.energy, c.bound};
        document_table_row(d, row);
    }
    document_table_end(d);
    document_paragraph(d, "Each row is the best deployment rackplan serve finds on that hardware (mode, instance, "
                          "batch) within the targets; tok/s/dev counts output tokens over every device, prefill "
                          "devices included. %s",
                       estimates ? "Rows are calibrated estimates; the bound column is the roofline at efficiency 1."
                                 : "Every number is a roofline bound (efficiency 1).");
    document_figure(d, "frontier", "Output tokens/s per device against per user, a line per topology", draw_frontiers, r);
    document_hold(d, outputs);
    return !outputs->failed;
}

static bool write_report(const char *path, const struct report *r, const struct curves *c,
                         struct sink_batch *outputs)
{
    char title[200];
    snprintf(title, sizeof title, "Which hardware for %s", r->model->name);
    struct document d;
    if (!document_open(&d, path, title)) {
        outputs->failed = true;
        return false;
    }
    char heading[300], context[32];
    format_count((double)r->workload->context, context, sizeof context);
    snprintf(heading, sizeof heading, "%s at %s tokens of context", r->model->name, context);
    if (r->serving)
        return write_serving_report(&d, r, outputs);
    document_heading(&d, heading);
    if (r->options->tpot_s > 0)
        document_paragraph(&d, "Target: time per output token <= %.4g ms.", r->options->tpot_s * 1e3);
    static const char *const headers[] = {"topology", "racks", "devices", "domain", "fits", "floor ms",
                                          "batch", "tok/s/dev", "tok/s/rack", "$/Mtok", "J/tok",
                                          "all-to-all leaving the domain", "bound floor ms", "bound tok/s/dev"};
    bool estimates = any_estimate(r);
    int columns = estimates ? 14 : 12;
    document_table_begin(&d, columns, headers, "lrrrlrrrrrrrrr");
    for (int64_t rank = 0; rank < r->count; rank++) {
        struct cells cell;
        row_cells(r, rank, &cell);
        char name[sizeof cell.name + 8];
        snprintf(name, sizeof name, "%.159s%s", is_best(r, rank) ? cell.name + 2 : cell.name,
                 is_best(r, rank) ? " (best)" : "");
        const char *row[] = {name, cell.racks, cell.devices, cell.domain, cell.fits, cell.floor, cell.batch,
                             cell.per_device, cell.per_rack, cell.cost, cell.energy, cell.outside,
                             cell.bound_floor, cell.bound_per_device};
        document_table_row(&d, row);
    }
    document_table_end(&d);
    document_paragraph(&d, "floor: the decode step at batch 1. batch: the largest whose decode step %s. "
                           "Best: the cheapest per token among the rows that fit%s. %s",
                       r->options->tpot_s > 0 ? "meets the target" : "fits in HBM",
                       r->options->tpot_s > 0 ? " and meet the target" : "",
                       estimates ? "Rows are calibrated estimates (each topology's efficiency fitted by "
                                   "rackplan calibrate to published measurements); the bound columns are the "
                                   "roofline at efficiency 1, at the bound's own batch."
                                 : "Every number is a roofline bound (efficiency 1).");
    if (r->by_domain_size)
        document_figure(&d, "domain-sizes", "Latency floor, throughput and cost against scale-up domain size",
                        draw_domain_sizes, r);
    document_figure(&d, "batch", "Time per output token and cost against batch, a line per row",
                    draw_batch_curves, c);
    document_hold(&d, outputs);
    return !outputs->failed;
}

/* --domain-sizes: one variant of `t` per size, all on the same devices. */
static int domain_variants(const struct options *o, const struct topology *t, struct topology *variants,
                           int64_t *racks)
{
    if (o->positional_count != 2)
        return cli_usage_error(o->command, "--domain-sizes varies one topology's domain; give one TOPOLOGY, not %d",
                               o->positional_count - 1);
    if (o->racks_count > 0)
        return cli_usage_error(o->command, "--domain-sizes sets the domains from --devices; drop --racks");
    if (t->kind == DOMAIN_TORUS)
        return cli_usage_error(o->command, "%s has a torus domain, whose shape sets its bandwidth; "
                                           "--domain-sizes varies switched and mesh domains",
                               t->name);
    int64_t devices = o->devices;
    if (devices == 0) {
        devices = 1;
        for (int k = 0; k < o->domain_size_count; k++) {
            devices = devices / arith_gcd(devices, o->domain_sizes[k]) * o->domain_sizes[k];
            if (devices > CLI_MAX_DEVICES)
                return cli_usage_error(o->command, "the domain sizes' least common multiple is more than %d "
                                                   "devices; give --devices N",
                                       CLI_MAX_DEVICES);
        }
    }
    for (int k = 0; k < o->domain_size_count; k++) {
        if (devices % o->domain_sizes[k] != 0)
            return cli_usage_error(o->command, "--devices %lld is not a whole number of domains of %lld",
                                   (long long)devices, (long long)o->domain_sizes[k]);
        topology_with_domain_size(t, o->domain_sizes[k], &variants[k]);
        racks[k] = devices / o->domain_sizes[k];
    }
    return EXIT_OK;
}

int cmd_compare(int argc, char **argv)
{
    struct options o;
    int status = cli_parse(&command_compare, argc, argv, &o);
    if (status >= 0)
        return status;
    if (o.devices && o.domain_size_count == 0 && !(o.isl || o.lengths || o.isl_dist_set))
        return cli_usage_error(o.command, "--devices goes with --domain-sizes, or with --isl/--osl as the budget of "
                                          "a deployment; --racks sets the cluster otherwise");
    if (o.devices && o.domain_size_count == 0 && o.racks_count > 0)
        return cli_usage_error(o.command, "--racks and --devices both set the budget: give one");
    struct model m;
    if ((status = cli_load_model(o.positional[0], &m)) != EXIT_OK)
        return status;
    int topologies = o.positional_count - 1;
    bool by_domain_size = o.domain_size_count > 0;
    int sizes = by_domain_size ? o.domain_size_count : o.racks_count > 0 ? o.racks_count : 1;
    int64_t first, end;
    cli_shard_range(&o, (int64_t)topologies * sizes, &first, &end);
    int64_t count = end - first;
    struct topology *loaded = xcalloc((size_t)topologies, sizeof *loaded);
    struct topology *variants = xcalloc((size_t)sizes, sizeof *variants);
    int64_t *variant_racks = xcalloc((size_t)sizes, sizeof *variant_racks);
    struct compare_row *rows = xcalloc((size_t)count + 1, sizeof *rows);
    struct compare_task *tasks = xcalloc((size_t)count + 1, sizeof *tasks);
    const struct calibration **calibrations = xcalloc((size_t)count + 1, sizeof *calibrations);
    const struct topology **topology_of = xcalloc((size_t)count + 1, sizeof *topology_of);
    int64_t *row_of = xcalloc((size_t)count + 1, sizeof *row_of);
    int64_t *order = xcalloc((size_t)count + 1, sizeof *order);
    struct curves curves = {0};
    for (int i = 0; i < topologies; i++)
        if ((status = cli_load_topology(o.positional[i + 1], &loaded[i])) != EXIT_OK)
            goto done;
    for (int p = 0; p < o.price_count; p++) {
        bool named = false;
        for (int i = 0; i < topologies; i++)
            named |= cli_price_names(&o.prices[p], o.positional[i + 1], &loaded[i]);
        if (!named) {
            status = cli_usage_error(o.command, "--price '%s' names none of the topologies given",
                                     o.prices[p].device);
            goto done;
        }
    }
    if (by_domain_size && (status = domain_variants(&o, &loaded[0], variants, variant_racks)) != EXIT_OK)
        goto done;
    if (o.shard_count && (o.isl > 0 || o.lengths || o.isl_dist_set)) {
        status = cli_usage_error(o.command, "--shard splits decode-step rows for rackplan merge; a workload's "
                                            "rows (--isl/--osl) are not sharded: each is one search of a second or less");
        goto done;
    }
    if (o.shard_count && ((o.format != FORMAT_CSV && o.format != FORMAT_JSON) || o.plot || o.report || by_domain_size)) {
        status = cli_usage_error(o.command, "--shard writes rows for rackplan merge: add --format csv or json "
                                            "(or -o FILE.csv or FILE.json), without --plot, --report or --domain-sizes");
        goto done;
    }
    if ((status = cli_resolve(&o, &m, NULL)) != EXIT_OK)
        goto done;
    struct workload w;
    cli_workload(&o, &w);
    struct serve_workload serving;
    struct cli_lengths lengths;
    if ((status = cli_serve_workload_checked(o.command, &o, &m, &serving, &lengths)) >= 0)
        goto done;
    status = EXIT_OK;
    for (int i = 0; i < topologies && status == EXIT_OK; i++) {
        double price = cli_price(&o, o.positional[i + 1], &loaded[i]);
        for (int k = 0; k < sizes; k++) {
            int64_t place = i * sizes + k, row = place - first;
            const struct topology *t = by_domain_size ? &variants[k] : &loaded[i];
            int64_t racks = by_domain_size         ? variant_racks[k]
                            : o.racks_count > 0    ? o.racks_list[k]
                                                   : loaded[i].default_domains;
            if ((status = cli_check_cluster(o.command, racks, t)) != EXIT_OK)
                break;
            if (place < first || place >= end)
                continue;
            topology_of[row] = t;
            row_of[row] = place;
            struct efficiency efficiency;
            const struct calibration *calibration;
            if (!cli_efficiency(&o, &loaded[i], o.positional[i + 1], w.weights, &efficiency, &calibration)) {
                status = EXIT_USAGE;
                break;
            }
            /* --racks or --devices with a workload: the whole deployment's budget; without either
             * no budget, instances spanning whole domains up to serve.h's default */
            int64_t budget = o.racks_count > 0 || by_domain_size ? racks * t->domain_devices
                             : o.devices > 0                     ? o.devices
                                                                 : 0;
            tasks[row] = (struct compare_task){.t = t, .racks = racks, .budget_devices = budget,
                                               .efficiency = efficiency, .price_usd_per_hour = price,
                                               .out = &rows[row]};
            calibrations[row] = calibration;
        }
    }
    if (status != EXIT_OK)
        goto done;
    if (!compare_rows(&m, &w, &serving, o.tpot_s, tasks, count)) {
        fprintf(stderr, "rackplan compare: the interconnect graph could not be built (out of memory)\n");
        status = EXIT_IO;
        goto done;
    }
    for (int64_t i = 0; i < count; i++)
        rows[i].calibration = calibrations[i];
    compare_order(rows, count, order);
    struct report r = {.model = &m, .options = &o, .workload = &w, .rows = rows, .topology_of = topology_of,
                       .row_of = row_of, .order = order, .count = count, .by_domain_size = by_domain_size,
                       .best = count > 0 && rows[order[0]].fits && rows[order[0]].tpot_met ? order[0] : -1,
                       .serving = serving.isl > 0 ? &serving : NULL, .lengths = &lengths};
    if (by_domain_size)
        for (int64_t i = 0; i < count; i++)
            order[i] = i;
    if (!r.serving && (o.report || (o.plot && !by_domain_size)) && !sweep_rows(&r, &curves)) {
        fprintf(stderr, "rackplan compare: the interconnect graph could not be built (out of memory)\n");
        status = EXIT_IO;
        goto done;
    }
    struct sink_batch outputs;
    sink_batch_init(&outputs);
    bool whole = sink_batch_write(&outputs, o.output, write_output, &r) &&
                 (!o.plot || (by_domain_size ? sink_batch_write(&outputs, o.plot, draw_domain_sizes, &r)
                              : r.serving    ? sink_batch_write(&outputs, o.plot, draw_frontiers, &r)
                                             : sink_batch_write(&outputs, o.plot, draw_batch_curves, &curves))) &&
                 (!o.report || write_report(o.report, &r, &curves, &outputs));
    if (!sink_batch_finish(&outputs, whole))
        status = EXIT_IO;
    else if (r.best < 0 && !o.shard_count) /* a shard's verdict waits for the merge */
        status = EXIT_NO_FIT;
done:
    for (int64_t i = 0; i < count; i++)
        compare_row_release(&rows[i]);
    curves_release(&curves);
    free(order);
    free(row_of);
    free(topology_of);
    free(tasks);
    free(calibrations);
    free(rows);
    free(variant_racks);
    free(variants);
    free(loaded);
    return status;
}
