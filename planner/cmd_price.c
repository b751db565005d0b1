/* cmd_price.c: `rackplan price MODEL TOPOLOGY --isl N --osl N`: the price sheet the best
 * deployment implies at the topology's $ per device-hour (price.h); and `rackplan price
 * --from-prices FILE.yaml TOPOLOGY [--model MODEL]`: a published sheet run backwards on that
 * hardware (prices.h), with rackplan's own sheet beside it when a model is given. */
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "price.h"
#include "prices.h"
#include "serve.h"
#include "topology.h"

#include "../reports/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The prompt and output lengths of rackplan's own sheet beside a published one when none are
 * given: a 4k prompt (the prefill FLOPs a token the discount is priced at) and serve's usual
 * 512-token answer. */
#define PRICE_DEFAULT_ISL 4096
#define PRICE_DEFAULT_OSL 512
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
/* A recompute is priced at a prompt of this many tokens (mean context half of it). */
#define PRICE_RECOMPUTE_PROMPT 4096

/* The options price reads itself (cli.h's parser knows serve's and compare's spellings of some
 * of them only with those commands' option sets, whose other options price does not take). */
struct own_options {
    const char *from_prices;
    const char *model;
    bool estimate;
    int64_t racks, devices; /* the budget; 0: none */
    bool mode_set;
    enum serve_mode mode;
    struct price prices[CLI_MAX_PRICES];
    char price_devices[CLI_MAX_PRICES][256]; /* the D=USD texts prices[] point at */
    int price_count;
};

/* The forward sheet and what it came from, for every writer. */
struct forward {
    const char *model_path, *topology_path;
    const struct model *model;
    const struct topology *topology;
    const struct options *options;
    const struct workload *precisions;
    const struct serve_workload *workload;
    const struct length_mix *mix;
    const struct serve_point *point;
    struct efficiency efficiency;
    const struct calibration *calibration;
    bool estimate;
    int64_t budget; /* devices; 0: none */
    const char *budget_source;
    const char *price_source; /* "--price" or "the topology's <price>" */
    struct price_sheet_forward sheet;
};

/* A published sheet run backwards, for every writer. */
struct inverse {
    const struct price_sheet *sheet;
    const char *sheet_path;
    const struct topology *topology;
    double flops_per_s;
    enum precision flops_precision;
    double implied_kv_bytes_per_token; /* NAN: no step */
    double ratio;                      /* decode_memory_bound_ratio */
    int tier_count;
    struct price_tier tiers[PRICES_MAX_TIERS];
    struct memory_tier tier_info[PRICES_MAX_TIERS];
    int retention_count;
    struct price_retention_match retentions[PRICES_MAX_RETENTIONS];
    bool has_discount;                 /* a cached price, a KV size and recompute FLOPs */
    double discount;                   /* NAN: the sheet has no cached price */
    double kv_bytes_per_token;         /* NAN: none known */
    char kv_from[256];
    double prefill_flops_per_token;
    char flops_from[256];
    double load_over_recompute[PRICES_MAX_TIERS];
    struct price_discount_match match;
    const struct forward *forward;     /* --model: rackplan's sheet; else NULL */
    const struct options *options;
};

/* ---- formatting ---- */

/* A price in $ with 3 significant digits at least, never in exponent form ("0.0236", "1.76"). */
static void format_usd(double usd, char *out, size_t size)
{
    if (isnan(usd))
        snprintf(out, size, "-");
    else if (usd == 0)
        snprintf(out, size, "0");
    else if (usd >= 100)
        snprintf(out, size, "%.0f", usd);
    else {
        int decimals = 2 - (int)floor(log10(usd));
        if (decimals < 2)
            decimals = 2;
        if (decimals > 12)
            decimals = 12;
        snprintf(out, size, "%.*f", decimals, usd);
    }
}

/* Bytes/s or bytes in the decimal unit that reads best ("3.35 TB", "5.37 GB"). */
static void format_bytes(double bytes, char *out, size_t size)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (u < 5 && bytes >= 1000) {
        bytes /= 1000;
        u++;
    }
    snprintf(out, size, "%.3g %s", bytes, units[u]);
}

static void format_duration(double seconds, char *out, size_t size)
{
    if (seconds < 1e-6)
        snprintf(out, size, "%.3g ns", seconds * 1e9);
    else if (seconds < 1e-3)
        snprintf(out, size, "%.3g us", seconds * 1e6);
    else if (seconds < 1)
        snprintf(out, size, "%.3g ms", seconds * 1e3);
    else if (seconds < 120)
        snprintf(out, size, "%.3g s", seconds);
    else if (seconds < 7200)
        snprintf(out, size, "%.3g min", seconds / 60);
    else
        snprintf(out, size, "%.3g h", seconds / 3600);
}

static void json_number_or_null(struct json *j, double value)
{
    if (isfinite(value))
        json_number(j, value);
    else
        json_null(j);
}

/* ---- the forward sheet ---- */

static void json_forward_prices(struct json *j, const struct price_sheet_forward *f)
{
    json_key(j, "kv_bytes_per_token");
    json_number(j, f->kv_bytes_per_token);
    json_key(j, "input_per_mtok");
    json_number(j, f->input_per_mtok);
    json_key(j, "cached_input_per_mtok");
    json_begin_object(j);
    for (int i = 0; i < f->tier_count; i++) {
        json_key(j, topology_tier_kind_name(f->tiers[i].tier.kind));
        json_number(j, f->tiers[i].cached_input_per_mtok);
    }
    json_end_object(j);
    json_key(j, "output_per_mtok");
    json_number(j, f->output_per_mtok);
    json_key(j, "output_per_mtok_at");
    json_begin_object(j);
    for (int i = 0; i < f->context_count; i++) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)f->context_tokens[i]);
        json_key(j, key);
        json_number_or_null(j, f->output_per_mtok_at[i]);
    }
    json_end_object(j);
    json_key(j, "storage_per_mtok_hour");
    json_begin_object(j);
    for (int i = 0; i < f->tier_count; i++) {
        json_key(j, topology_tier_kind_name(f->tiers[i].tier.kind));
        json_number_or_null(j, f->tiers[i].storage_per_mtok_hour);
    }
    json_end_object(j);
    json_key(j, "output_input_ratio");
    json_number_or_null(j, f->output_input_ratio);
    json_key(j, "long_context_step_tokens");
    if (f->long_context_step_tokens > 0)
        json_int(j, f->long_context_step_tokens);
    else
        json_null(j);
    /* where they come from */
    json_key(j, "usd_per_device_hour");
    json_number(j, f->usd_per_device_hour);
    json_key(j, "input_device_s_per_token");
    json_number(j, f->input_device_s_per_token);
    json_key(j, "output_device_s_per_token");
    json_number(j, f->output_device_s_per_token);
    json_key(j, "output_per_mtok_at_isl");
    json_number_or_null(j, f->base_output_per_mtok);
    json_key(j, "output_batch_at");
    json_begin_object(j);
    for (int i = 0; i < f->context_count; i++) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)f->context_tokens[i]);
        json_key(j, key);
        json_int(j, f->batch_at[i]);
    }
    json_end_object(j);
    json_key(j, "long_context_step_searched_to");
    json_int(j, f->step_searched_to);
    json_key(j, "tiers");
    json_begin_array(j);
    for (int i = 0; i < f->tier_count; i++) {
        const struct price_tier_cost *c = &f->tiers[i];
        json_begin_object(j);
        json_key(j, "tier");
        json_string(j, topology_tier_kind_name(c->tier.kind));
        json_key(j, "name");
        json_string(j, c->tier.name);
        json_key(j, "bytes_per_device");
        json_number(j, c->tier.bytes_per_device);
        json_key(j, "read_bytes_per_s_per_device");
        json_number(j, c->tier.read_bytes_per_s_per_device);
        json_key(j, "load_s_per_token");
        json_number(j, c->load_s_per_token);
        json_key(j, "cached_input_per_mtok");
        json_number(j, c->cached_input_per_mtok);
        json_key(j, "cheaper_than_recompute");
        json_bool(j, c->cheaper_than_recompute);
        json_key(j, "storage_per_mtok_hour");
        json_number_or_null(j, c->storage_per_mtok_hour);
        json_key(j, "storage_from");
        json_string(j, c->storage_from_tier_price ? "tier_price" : "device_price");
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_deployment(struct json *j, const struct serve_point *p)
{
    json_begin_object(j);
    json_key(j, "mode");
    json_string(j, serve_mode_name(p->mode));
    json_key(j, "devices");
    json_int(j, p->devices);
    json_key(j, "decode_instances");
    json_int(j, p->decode_instances);
    json_key(j, "decode_instance_devices");
    json_int(j, p->decode.layout.devices);
    json_key(j, "decode_layout");
    cli_json_parallel(j, &p->decode.layout);
    json_key(j, "decode_batch");
    json_int(j, p->decode.batch);
    json_key(j, "step_s");
    json_number(j, p->decode.step_s);
    json_key(j, "prefill_instances");
    json_int(j, p->prefill_instances);
    json_key(j, "prefill_instance_devices");
    if (p->mode == SERVE_DISAGGREGATED)
        json_int(j, p->prefill.layout.devices);
    else
        json_null(j);
    json_key(j, "ttft_s");
    json_number(j, p->ttft_s);
    json_key(j, "tpot_s");
    json_number(j, p->tpot_s);
    json_key(j, "tokens_per_s_per_device");
    json_number(j, p->tokens_per_s_per_device);
    json_end_object(j);
}

/* The forward keys into the open object. */
static void json_forward_fields(struct json *j, const struct forward *a)
{
    json_key(j, "model");
    json_string(j, a->model->name);
    json_key(j, "topology");
    json_string(j, a->topology->name);
    json_key(j, "announced");
    json_bool(j, a->topology->announced);
    json_key(j, "workload");
    json_begin_object(j);
    cli_json_serve_workload(j, a->workload);
    cli_json_lengths(j, a->mix && a->mix->count > 0 ? a->mix->description : NULL);
    json_key(j, "mode");
    json_string(j, serve_mode_name(a->workload->mode));
    json_end_object(j);
    cli_json_precision(j, a->precisions);
    json_key(j, "estimate");
    json_bool(j, a->estimate);
    json_key(j, "efficiency");
    cli_json_efficiency(j, &a->efficiency, a->calibration);
    json_key(j, "budget_devices");
    if (a->budget > 0)
        json_int(j, a->budget);
    else
        json_null(j);
    json_key(j, "price_from");
    json_string(j, a->price_source);
    json_key(j, "deployment");
    json_deployment(j, a->point);
    json_forward_prices(j, &a->sheet);
}

static void write_forward_tree(FILE *out, enum json_syntax syntax, const struct forward *a)
{
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    json_forward_fields(&j, a);
    json_end_object(&j);
    json_finish(&j);
}

static void text_deployment(FILE *out, const struct forward *a)
{
    const struct serve_point *p = a->point;
    char batch[32], devices[32], rate[32];
    format_count((double)p->decode.batch, batch, sizeof batch);
    format_count((double)p->devices, devices, sizeof devices);
    format_count(p->tokens_per_s_per_device, rate, sizeof rate);
    const struct layout *l = &p->decode.layout;
    if (p->mode == SERVE_AGGREGATED)
        fprintf(out, "  deployment: aggregated, %lld x %lld-device instance%s (TP %lld x DP %lld x PP %lld, EP %lld), "
                     "batch %s each\n",
                (long long)p->decode_instances, (long long)l->devices, p->decode_instances == 1 ? "" : "s",
                (long long)l->tp, (long long)l->dp, (long long)l->pp, (long long)l->ep, batch);
    else
        fprintf(out, "  deployment: disaggregated %lldP%lldD on %s devices: prefill %lld-device instances, decode "
                     "%lld-device (TP %lld x DP %lld x PP %lld, EP %lld), decode batch %s\n",
                (long long)p->prefill_instances, (long long)p->decode_instances, devices,
                (long long)p->prefill.layout.devices, (long long)l->devices, (long long)l->tp, (long long)l->dp,
                (long long)l->pp, (long long)l->ep, batch);
    fprintf(out, "    TTFT %.1f ms, TPOT %.2f ms, %s output tokens/s per device (%s)\n", p->ttft_s * 1e3,
            p->tpot_s * 1e3, rate, a->estimate ? "calibrated estimate" : "roofline bound");
}

/* The rows of the forward sheet (after the header). */
static void text_forward_prices(FILE *out, const struct forward *a)
{
    const struct price_sheet_forward *f = &a->sheet;
    const struct serve_point *p = a->point;
    const struct serve_workload *w = a->workload;
    char v[32], x[32], y[32], z[32];
    fprintf(out, "\n%-38s %12s  %s\n", "price ($ per million tokens)", "$/Mtok", "from");
    format_usd(f->input_per_mtok, v, sizeof v);
    if (p->mode == SERVE_DISAGGREGATED) {
        format_count((double)(p->prefill_instances * p->prefill.layout.devices), x, sizeof x);
        fprintf(out, "  %-36s %12s  the prefill pool's %s devices over the prompt tokens/s it serves: %.3g "
                     "device-s a token\n",
                "input (cache miss)", v, x, f->input_device_s_per_token);
    } else {
        fprintf(out, "  %-36s %12s  the prefill share of a step (mean step less the decode-only step) over its "
                     "prompt tokens: %.3g device-s a token\n",
                "input (cache miss)", v, f->input_device_s_per_token);
    }
    format_usd(f->output_per_mtok, v, sizeof v);
    format_count((double)p->decode.batch, x, sizeof x);
    char label[64];
    format_count((double)w->isl, y, sizeof y);
    snprintf(label, sizeof label, "output (%s-token prompts)", y);
    fprintf(out, "  %-36s %12s  %lld decode devices, a %.3g ms decode step of %s sequences: %.3g device-s a token\n",
            label, v, (long long)p->decode.layout.devices, p->decode.step_s * 1e3, x, f->output_device_s_per_token);
    if (isfinite(f->output_input_ratio))
        fprintf(out, "  %-36s %12.3f  output / input\n", "output / input ratio", f->output_input_ratio);
    else
        fprintf(out, "  %-36s %12s  no input price: prefill rides free in steps bound by decode\n",
                "output / input ratio", "-");

    fprintf(out, "\ncached input, by tier: a hit loads the token's KV (%s B) at the tier's read bandwidth a device\n",
            (format_count(f->kv_bytes_per_token, x, sizeof x), x));
    fprintf(out, "  %-7s %-22s %12s %12s %12s  %s\n", "tier", "name", "read/device", "load/token", "$/Mtok",
            "against a recompute (input)");
    for (int i = 0; i < f->tier_count; i++) {
        const struct price_tier_cost *c = &f->tiers[i];
        format_bytes(c->tier.read_bytes_per_s_per_device, x, sizeof x);
        strcat(x, "/s");
        format_duration(c->load_s_per_token, y, sizeof y);
        format_usd(c->cached_input_per_mtok, v, sizeof v);
        if (f->input_per_mtok > 0)
            snprintf(z, sizeof z, "%s (%.3g x input)", c->cheaper_than_recompute ? "cheaper" : "dearer",
                     c->cached_input_per_mtok / f->input_per_mtok);
        else
            snprintf(z, sizeof z, "dearer (input is free)");
        fprintf(out, "  %-7s %-22.22s %12s %12s %12s  %s\n", topology_tier_kind_name(c->tier.kind), c->tier.name, x, y,
                v, z);
    }

    fprintf(out, "\noutput by prompt length: the decode layout above at its largest batch within the TPOT target "
                 "and HBM\n");
    fprintf(out, "  %-14s %12s %12s\n", "prompt tokens", "$/Mtok", "batch");
    format_usd(f->base_output_per_mtok, v, sizeof v);
    format_count((double)f->base_batch, x, sizeof x);
    format_count((double)w->isl, y, sizeof y);
    fprintf(out, "  %-14s %12s %12s  the workload's prompt\n", y, v, f->base_batch > 0 ? x : "-");
    for (int i = 0; i < f->context_count; i++) {
        format_count((double)f->context_tokens[i], y, sizeof y);
        format_usd(f->output_per_mtok_at[i], v, sizeof v);
        format_count((double)f->batch_at[i], x, sizeof x);
        fprintf(out, "  %-14s %12s %12s%s\n", y, v, f->batch_at[i] > 0 ? x : "-",
                f->batch_at[i] > 0 ? "" : "  (not one sequence fits)");
    }
    if (f->context_count < PRICE_CONTEXTS && a->model->max_context > 0) {
        format_count((double)a->model->max_context, x, sizeof x);
        fprintf(out, "  (longer prompts than %s's maximum of %s tokens, less the output, are left out)\n",
                a->model->name, x);
    }
    format_count((double)w->isl, y, sizeof y);
    format_count((double)f->step_searched_to, z, sizeof z);
    if (f->long_context_step_tokens > 0) {
        format_count((double)f->long_context_step_tokens, x, sizeof x);
        fprintf(out, "  long-context step: %s-token prompts, where output costs %.1f x its price at %s\n", x,
                PRICE_STEP_FACTOR, y);
    } else {
        fprintf(out, "  long-context step: none: output stays below %.1f x its price at %s up to %s-token prompts\n",
                PRICE_STEP_FACTOR, y, z);
    }

    fprintf(out, "\nstorage, $ per million tokens held an hour, by tier\n");
    for (int i = 0; i < f->tier_count; i++) {
        const struct price_tier_cost *c = &f->tiers[i];
        format_usd(c->storage_per_mtok_hour, v, sizeof v);
        format_bytes(c->tier.bytes_per_device, x, sizeof x);
        if (c->storage_from_tier_price)
            fprintf(out, "  %-7s %-22.22s %12s  the tier's own $%.4g per GB-hour\n", topology_tier_kind_name(c->tier.kind),
                    c->tier.name, v, c->tier.usd_per_gb_hour);
        else
            fprintf(out, "  %-7s %-22.22s %12s  device $/h x a million tokens' KV / %s a device\n",
                    topology_tier_kind_name(c->tier.kind), c->tier.name, v, x);
    }
}

static void write_forward_text(FILE *out, const struct forward *a)
{
    const struct serve_workload *w = a->workload;
    fprintf(out, "%s on %s%s: the prices its best deployment implies\n", a->model->name, a->topology->name,
            a->topology->announced ? " (announced, not shipping)" : "");
    cli_text_serve_workload(out, a->model, w, a->precisions, a->mix);
    if (a->budget > 0) {
        char devices[32];
        format_count((double)a->budget, devices, sizeof devices);
        fprintf(out, "  budget: %s devices, set by %s\n", devices, a->budget_source);
    } else {
        fprintf(out, "  budget: none, as a provider buys what the best deployment takes (--racks N or --devices N "
                     "sets one)\n");
    }
    fprintf(out, "  price: $%.4g a device-hour (%s)\n", a->sheet.usd_per_device_hour, a->price_source);
    if (a->estimate)
        cli_text_efficiency(out, &a->efficiency, a->calibration);
    text_deployment(out, a);
    text_forward_prices(out, a);
    fprintf(out, "\nEach price is the device time a token takes at $%.4g a device-hour, no margin; %s\n",
            a->sheet.usd_per_device_hour,
            a->estimate ? "times are the topology's calibrated estimate." : "times are roofline bounds (efficiency 1): "
                                                                           "no engine serves cheaper.");
}

static void write_forward(FILE *out, const void *data)
{
    const struct forward *a = data;
    enum json_syntax syntax;
    if (cli_tree_format(a->options->format, &syntax))
        write_forward_tree(out, syntax, a);
    else
        write_forward_text(out, a);
}

/* ---- the inverse ---- */

static void write_inverse_tree(FILE *out, enum json_syntax syntax, const struct inverse *a)
{
    const struct price_sheet *s = a->sheet;
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    json_key(&j, "sheet");
    json_begin_object(&j);
    json_key(&j, "path");
    json_string(&j, a->sheet_path);
    json_key(&j, "provider");
    json_string(&j, s->provider);
    json_key(&j, "model");
    json_string(&j, s->model);
    json_key(&j, "date");
    json_string(&j, s->date);
    json_key(&j, "source");
    json_string(&j, s->source);
    json_key(&j, "active_params");
    json_number(&j, s->active_params);
    json_key(&j, "input_per_mtok");
    json_number(&j, s->input_per_mtok);
    json_key(&j, "cached_input_per_mtok");
    if (s->has_cached_input)
        json_number(&j, s->cached_input_per_mtok);
    else
        json_null(&j);
    json_key(&j, "output_per_mtok");
    json_number(&j, s->output_per_mtok);
    json_key(&j, "long_context_step_tokens");
    if (s->long_context_step_tokens > 0)
        json_int(&j, s->long_context_step_tokens);
    else
        json_null(&j);
    json_key(&j, "cache_retention_s");
    json_begin_array(&j);
    for (int i = 0; i < s->retention_count; i++)
        json_number(&j, s->cache_retention_s[i]);
    json_end_array(&j);
    json_key(&j, "kv_bytes_per_token");
    if (s->has_kv_bytes_per_token)
        json_number(&j, s->kv_bytes_per_token);
    else
        json_null(&j);
    json_end_object(&j);
    json_key(&j, "topology");
    json_string(&j, a->topology->name);
    json_key(&j, "hbm_bytes_per_s");
    json_number(&j, a->topology->hbm_bytes_per_s);
    json_key(&j, "flops_per_s");
    json_number(&j, a->flops_per_s);
    json_key(&j, "flops_precision");
    json_string(&j, precision_name(a->flops_precision));
    json_key(&j, "implied_kv_bytes_per_token");
    json_number_or_null(&j, a->implied_kv_bytes_per_token);
    json_key(&j, "decode_memory_bound_ratio");
    json_number_or_null(&j, a->ratio);
    json_key(&j, "retention_tiers");
    json_begin_array(&j);
    for (int i = 0; i < a->retention_count; i++) {
        const struct price_retention_match *r = &a->retentions[i];
        json_begin_object(&j);
        json_key(&j, "retention_s");
        json_number(&j, r->retention_s);
        json_key(&j, "tier");
        if (r->tier >= 0)
            json_string(&j, a->tiers[r->tier].name);
        else
            json_null(&j);
        json_key(&j, "tier_name");
        if (r->tier >= 0)
            json_string(&j, a->tier_info[r->tier].name);
        else
            json_null(&j);
        json_key(&j, "drain_s");
        json_number_or_null(&j, r->tier >= 0 ? r->drain_s : NAN);
        json_key(&j, "ratio");
        json_number_or_null(&j, r->tier >= 0 ? r->ratio : NAN);
        json_key(&j, "far_below");
        json_begin_array(&j);
        for (int k = 0; k < r->far_below_count; k++) {
            json_begin_object(&j);
            json_key(&j, "tier");
            json_string(&j, a->tiers[r->far_below[k]].name);
            json_key(&j, "ratio");
            json_number(&j, r->far_below_ratio[k]);
            json_end_object(&j);
        }
        json_end_array(&j);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_key(&j, "cache_discount");
    if (a->has_discount) {
        json_begin_object(&j);
        json_key(&j, "discount");
        json_number(&j, a->discount);
        json_key(&j, "kv_bytes_per_token");
        json_number(&j, a->kv_bytes_per_token);
        json_key(&j, "kv_from");
        json_string(&j, a->kv_from);
        json_key(&j, "prefill_flops_per_token");
        json_number(&j, a->prefill_flops_per_token);
        json_key(&j, "prefill_flops_from");
        json_string(&j, a->flops_from);
        json_key(&j, "load_over_recompute");
        json_begin_object(&j);
        for (int i = 0; i < a->tier_count; i++) {
            json_key(&j, a->tiers[i].name);
            json_number_or_null(&j, a->load_over_recompute[i]);
        }
        json_end_object(&j);
        json_key(&j, "implied_tier");
        if (a->match.tier >= 0)
            json_string(&j, a->tiers[a->match.tier].name);
        else
            json_null(&j);
        json_key(&j, "implied_read_bytes_per_s_per_device");
        json_number(&j, a->match.implied_bytes_per_s);
        json_end_object(&j);
    } else {
        json_null(&j);
    }
    json_key(&j, "rackplan");
    if (a->forward) {
        json_begin_object(&j);
        json_forward_fields(&j, a->forward);
        json_end_object(&j);
    } else {
        json_null(&j);
    }
    json_end_object(&j);
    json_finish(&j);
}

static void write_inverse_text(FILE *out, const struct inverse *a)
{
    const struct price_sheet *s = a->sheet;
    const struct topology *t = a->topology;
    char x[48], y[48], z[48];
    fprintf(out, "%s's price sheet for %s of %s, run backwards on %s%s\n", s->provider, s->model, s->date, t->name,
            t->announced ? " (announced, not shipping)" : "");
    fprintf(out, "  source: %s (%s)\n", s->source, a->sheet_path);
    format_usd(s->input_per_mtok, x, sizeof x);
    format_usd(s->output_per_mtok, y, sizeof y);
    fprintf(out, "  published, $ per million tokens: input %s (a cache miss)", x);
    if (s->has_cached_input) {
        format_usd(s->cached_input_per_mtok, z, sizeof z);
        fprintf(out, ", cached input %s", z);
    }
    fprintf(out, ", output %s", y);
    if (s->long_context_step_tokens > 0) {
        format_count((double)s->long_context_step_tokens, z, sizeof z);
        fprintf(out, "; a step above %s-token prompts", z);
    } else {
        fprintf(out, "; no long-context step");
    }
    fprintf(out, "\n");
    format_bytes(t->hbm_bytes_per_s, x, sizeof x);
    format_count(a->flops_per_s / 1e12, y, sizeof y);
    fprintf(out, "  the hardware a device: HBM %s/s, %s TFLOP/s dense at %s (%s)\n", x, y,
            precision_name(a->flops_precision),
            a->flops_precision == PREC_FP8 ? "the topology's FP8 peak" : "no FP8 peak: its BF16");
    format_count(s->active_params / 1e9, x, sizeof x);
    fprintf(out, "  assumed: %sB active parameters a token (the sheet's)\n", x);

    fprintf(out, "\ndecode_memory_bound_ratio %.3f: output / input, a decode token takes %.3g times a prefill "
                 "token's device time\n",
            a->ratio, a->ratio);
    fprintf(out, "  (decode at %.3g%% of prefill's compute utilisation, prefill compute-bound)\n",
            prices_decode_utilisation(a->ratio, 1) * 100);
    if (isfinite(a->implied_kv_bytes_per_token)) {
        format_count(a->implied_kv_bytes_per_token, x, sizeof x);
        format_count((double)s->long_context_step_tokens, y, sizeof y);
        fprintf(out, "implied_kv_bytes_per_token %s: at the %s-token step, reading a context's KV at HBM speed "
                     "takes as long as a token's 2 x %.4g FLOPs at peak\n",
                x, y, s->active_params);
    } else {
        fprintf(out, "implied_kv_bytes_per_token: none (the sheet has no long-context step)\n");
    }
    if (a->retention_count == 0) {
        fprintf(out, "retention_tiers: none (the sheet publishes no cache retention)\n");
    } else {
        fprintf(out, "retention_tiers: each retention against the tier whose drain time (capacity / read bandwidth "
                     "a device) is nearest\n");
        for (int i = 0; i < a->retention_count; i++) {
            const struct price_retention_match *r = &a->retentions[i];
            format_duration(r->retention_s, x, sizeof x);
            if (r->tier < 0) {
                fprintf(out, "  %-10s no tier\n", x);
                continue;
            }
            format_duration(r->drain_s, y, sizeof y);
            fprintf(out, "  %-10s %s (%s), drains in %s (retention %.3g x drain)", x, a->tiers[r->tier].name,
                    a->tier_info[r->tier].name, y, r->ratio);
            for (int k = 0; k < r->far_below_count; k++)
                fprintf(out, "%s%s turns over %.3g times", k == 0 ? "; far below: " : ", ",
                        a->tiers[r->far_below[k]].name, r->far_below_ratio[k]);
            fprintf(out, "\n");
        }
    }
    if (!s->has_cached_input) {
        fprintf(out, "cache discount: none (the sheet has no cached-input price)\n");
    } else if (!a->has_discount) {
        fprintf(out, "cache discount %.3f: no KV size to load (give --model MODEL, or kv_bytes_per_token in the "
                     "sheet)\n",
                a->discount);
    } else {
        fprintf(out, "cache discount %.3f: cached input / input, the share of a recompute a hit's load costs\n",
                a->discount);
        format_count(a->kv_bytes_per_token, x, sizeof x);
        fprintf(out, "  a token's KV: %s B (%s)\n", x, a->kv_from);
        format_duration(a->prefill_flops_per_token / a->flops_per_s, y, sizeof y);
        fprintf(out, "  its recompute: %.4g FLOPs (%s), %s of a device\n", a->prefill_flops_per_token, a->flops_from,
                y);
        fprintf(out, "  %-7s %-22s %14s %16s\n", "tier", "name", "read/device", "load/recompute");
        for (int i = 0; i < a->tier_count; i++) {
            format_bytes(a->tiers[i].read_bytes_per_s, x, sizeof x);
            strcat(x, "/s");
            fprintf(out, "  %-7s %-22.22s %14s %16.3g%s\n", a->tiers[i].name, a->tier_info[i].name, x,
                    a->load_over_recompute[i], i == a->match.tier ? "  <- the discount's tier" : "");
        }
        format_bytes(a->match.implied_bytes_per_s, x, sizeof x);
        if (a->match.tier >= 0) {
            format_bytes(a->tiers[a->match.tier].read_bytes_per_s, y, sizeof y);
            fprintf(out, "  implied: a hit at %.3g of a recompute reads %s/s a device: the %s tier (%s, %s/s a "
                         "device)\n",
                    a->discount, x, a->tiers[a->match.tier].name, a->tier_info[a->match.tier].name, y);
        } else {
            fprintf(out, "  implied: %s/s a device; no tier of %s has a bandwidth\n", x, t->name);
        }
    }
    if (a->forward) {
        const struct forward *f = a->forward;
        const struct price_sheet_forward *r = &f->sheet;
        char isl[32], osl[32];
        format_count((double)f->workload->isl, isl, sizeof isl);
        format_count((double)f->workload->osl, osl, sizeof osl);
        fprintf(out, "\nbeside it, rackplan's sheet for %s on %s (%s prompt and %s output tokens a request, $%.4g a "
                     "device-hour, %s)\n",
                f->model->name, t->name, isl, osl, r->usd_per_device_hour, f->estimate ? "estimate" : "roofline bound");
        fprintf(out, "  %-30s %12s %12s\n", "$ per million tokens", "published", "rackplan");
        format_usd(s->input_per_mtok, x, sizeof x);
        format_usd(r->input_per_mtok, y, sizeof y);
        fprintf(out, "  %-30s %12s %12s\n", "input", x, y);
        if (s->has_cached_input) {
            format_usd(s->cached_input_per_mtok, x, sizeof x);
            int tier = a->has_discount && a->match.tier >= 0 && a->match.tier < r->tier_count ? a->match.tier
                                                                                               : r->tier_count - 1;
            format_usd(r->tiers[tier].cached_input_per_mtok, y, sizeof y);
            char label[64];
            snprintf(label, sizeof label, "cached input (%s)", topology_tier_kind_name(r->tiers[tier].tier.kind));
            fprintf(out, "  %-30s %12s %12s\n", label, x, y);
        }
        format_usd(s->output_per_mtok, x, sizeof x);
        format_usd(r->output_per_mtok, y, sizeof y);
        fprintf(out, "  %-30s %12s %12s\n", "output", x, y);
        snprintf(x, sizeof x, "%.3f", a->ratio);
        if (isfinite(r->output_input_ratio))
            snprintf(y, sizeof y, "%.3f", r->output_input_ratio);
        else
            snprintf(y, sizeof y, "-");
        fprintf(out, "  %-30s %12s %12s\n", "output / input", x, y);
        if (s->long_context_step_tokens > 0)
            format_count((double)s->long_context_step_tokens, x, sizeof x);
        else
            snprintf(x, sizeof x, "none");
        if (r->long_context_step_tokens > 0)
            format_count((double)r->long_context_step_tokens, y, sizeof y);
        else
            snprintf(y, sizeof y, "none");
        fprintf(out, "  %-30s %12s %12s\n", "long-context step (tokens)", x, y);
        fprintf(out, "  (rackplan price %s %s with the same options prints its sheet whole)\n", f->model_path,
                f->topology_path);
    }
    fprintf(out, "\nThe model: prices in proportion to device time (prices.h), so ratios of prices are ratios of "
                 "device time.\n");
}

static void write_inverse(FILE *out, const void *data)
{
    const struct inverse *a = data;
    enum json_syntax syntax;
    if (cli_tree_format(a->options->format, &syntax))
        write_inverse_tree(out, syntax, a);
    else
        write_inverse_text(out, a);
}

/* ---- options ---- */

static bool parse_whole(const char *text, int64_t low, int64_t high, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < low || v > high)
        return false;
    *out = v;
    return true;
}

/* Takes price's own options out of argv into *own, leaving the rest (in order) for cli_parse in
 * kept[]; returns their count, or -(exit code) after a usage error. */
static int take_own_options(int argc, char **argv, struct own_options *own, char **kept)
{
    static const char *const names[] = {"--from-prices", "--model", "--racks", "--devices", "--mode", "--price",
                                        "--estimate"};
    int n = 0;
    kept[n++] = argv[0];
    bool ended = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (ended || strncmp(arg, "--", 2) != 0) {
            kept[n++] = argv[i];
            ended = ended || strcmp(arg, "--") == 0;
            continue;
        }
        int which = -1;
        const char *value = NULL;
        for (int k = 0; k < (int)(sizeof names / sizeof names[0]) && which < 0; k++) {
            size_t len = strlen(names[k]);
            if (strncmp(arg, names[k], len) == 0 && (arg[len] == 0 || arg[len] == '=')) {
                which = k;
                value = arg[len] == '=' ? arg + len + 1 : NULL;
            }
        }
        if (which < 0) {
            kept[n++] = argv[i];
            continue;
        }
        if (which == 6) { /* --estimate */
            if (value)
                return -cli_usage_error(&command_price, "option '--estimate' takes no value");
            own->estimate = true;
            continue;
        }
        if (!value) {
            if (i + 1 >= argc)
                return -cli_usage_error(&command_price, "option '%s' needs a value", names[which]);
            value = argv[++i];
        }
        switch (which) {
        case 0:
            own->from_prices = value;
            break;
        case 1:
            own->model = value;
            break;
        case 2:
            if (!parse_whole(value, 1, 1000000, &own->racks))
                return -cli_usage_error(&command_price, "--racks takes a whole number from 1 to 1000000, not '%s'",
                                        value);
            break;
        case 3:
            if (!parse_whole(value, 1, CLI_MAX_DEVICES, &own->devices))
                return -cli_usage_error(&command_price, "--devices takes a whole number from 1 to %d, not '%s'",
                                        CLI_MAX_DEVICES, value);
            break;
        case 4:
            own->mode_set = true;
            if (strcmp(value, "aggregated") == 0)
                own->mode = SERVE_AGGREGATED;
            else if (strcmp(value, "disaggregated") == 0)
                own->mode = SERVE_DISAGGREGATED;
            else if (strcmp(value, "best") == 0)
                own->mode = SERVE_BEST;
            else
                return -cli_usage_error(&command_price, "--mode takes aggregated, disaggregated or best, not '%s'",
                                        value);
            break;
        case 5: {
            const char *eq = strchr(value, '=');
            char *end;
            errno = 0;
            double usd = eq ? strtod(eq + 1, &end) : 0;
            if (!eq || eq == value || errno || end == eq + 1 || *end || !(usd > 0 && usd < 1e6))
                return -cli_usage_error(&command_price,
                                        "--price takes DEVICE=USD_PER_HOUR (e.g. hgx-h800=2), not '%s'", value);
            if (own->price_count >= CLI_MAX_PRICES)
                return -cli_usage_error(&command_price, "--price is given more than %d times", CLI_MAX_PRICES);
            char *device = own->price_devices[own->price_count];
            /* the whole D=USD, as cli.h's struct price holds it */
            if (strlen(value) >= sizeof own->price_devices[0])
                return -cli_usage_error(&command_price, "--price '%.32s...' is too long", value);
            strcpy(device, value);
            own->prices[own->price_count] = (struct price){device, usd};
            own->price_count++;
            break;
        }
        default:
            break;
        }
    }
    kept[n] = NULL;
    return n;
}

/* Whether the arguments give the requests' lengths. */
static bool gives_lengths(int argc, char **argv)
{
    static const char *const names[] = {"--isl", "--osl", "--isl-dist", "--osl-dist", "--lengths"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            size_t len = strlen(names[k]);
            if (strncmp(argv[i], names[k], len) == 0 && (argv[i][len] == 0 || argv[i][len] == '='))
                return true;
        }
    }
    return false;
}

/* ---- the run ---- */

/* The forward sheet of model `m` on `t` for the options' workload: searches, prices, and fills
 * *a (whose pointers are into the caller's storage). Returns -1 to go on or an exit code. */
struct forward_run {
    struct serve_workload workload;
    struct length_mix mix;
    struct workload precisions;
    struct serve_result result;
    struct forward answer;
    char budget_text[64];
};

static int run_forward(struct options *o, const struct own_options *own, const char *model_path,
                       const char *topology_path, const struct model *m, const struct topology *t, struct forward_run *run)
{
    const struct command *c = o->command;
    if (own->racks && own->devices)
        return cli_usage_error(c, "--racks and --devices both set the budget: give one");
    if (own->racks && cli_check_cluster(c, own->racks, t) != EXIT_OK)
        return EXIT_USAGE;
    for (int p = 0; p < own->price_count; p++)
        if (!cli_price_names(&own->prices[p], topology_path, t))
            return cli_usage_error(c, "--price '%s' does not name %s", own->prices[p].device, t->name);
    for (int p = 0; p < own->price_count; p++)
        o->prices[o->price_count++] = own->prices[p];
    cli_workload(o, &run->precisions);
    enum precision used;
    if (topology_peak_flops_per_s(t, run->precisions.weights, &used) <= 0)
        return cli_usage_error(c, "%s gives no peak FLOP/s for %s weights or any wider precision, so no step would "
                                  "end: give --weights at a precision it lists",
                               t->name, precision_name(run->precisions.weights));
    int status;
    if ((status = cli_serve_workload(o, &run->workload, &run->mix)) >= 0 ||
        (status = cli_check_lengths(c, m, &run->workload, &run->mix)) >= 0)
        return status;
    run->workload.mode = own->mode_set ? own->mode : SERVE_BEST;

    double price = cli_price(o, topology_path, t);
    const char *price_source = "--price";
    if (price <= 0) {
        price = t->price_usd_per_hour;
        price_source = "the topology's <price>";
    }
    if (price <= 0) {
        const char *base = strrchr(topology_path, '/');
        base = base ? base + 1 : topology_path;
        size_t len = strlen(base);
        if (len > 4 && strcmp(base + len - 4, ".xml") == 0)
            len -= 4;
        fprintf(stderr, "rackplan price: %s gives no <price> a device-hour, so no token has one: give --price "
                        "%.*s=USD_PER_HOUR\n",
                t->name, (int)len, base);
        return EXIT_NO_FIT;
    }
    int64_t budget = own->devices ? own->devices : own->racks * t->domain_devices;
    if (own->devices || own->racks)
        snprintf(run->budget_text, sizeof run->budget_text, "%s %lld", own->devices ? "--devices" : "--racks",
                 (long long)(own->devices ? own->devices : own->racks));
    struct serve_pool pool = {.model = m, .topology = t, .precisions = run->precisions, .budget_devices = budget,
                              .price_usd_per_hour = price, .efficiency = EFFICIENCY_BOUND};
    const struct calibration *row = NULL;
    o->estimate = own->estimate;
    if (own->estimate && !cli_efficiency(o, t, topology_path, run->precisions.weights, &pool.efficiency, &row))
        return EXIT_USAGE;
    if (!serve_search(&pool, NULL, &run->workload, &run->result)) {
        fprintf(stderr, "rackplan price: out of memory in the search\n");
        return EXIT_IO;
    }
    const struct serve_result *r = &run->result;
    if (!r->found) {
        if (!r->fits) {
            if (r->min_devices > 0)
                fprintf(stderr, "rackplan price: %s does not fit the budget of %lld devices: it takes %lld devices of "
                                "%s; give --devices %lld or more\n",
                        m->name, (long long)budget, (long long)r->min_devices, t->name, (long long)r->min_devices);
            else
                fprintf(stderr, "rackplan price: %s does not fit any cluster of %s\n", m->name, t->name);
        } else {
            const struct serve_point *reachable;
            enum serve_binding b = serve_binding_target(&run->workload, r, &reachable);
            fprintf(stderr, "rackplan price: no deployment of %s on %s meets the targets%s\n", m->name, t->name,
                    b == SERVE_BINDS_TPOT   ? " (the TPOT target binds: rackplan serve says what is reachable)"
                    : b == SERVE_BINDS_TTFT ? " (the TTFT target binds: rackplan serve says what is reachable)"
                                            : "");
        }
        return EXIT_NO_FIT;
    }
    struct price_sheet_forward sheet;
    enum price_status ps = price_forward(&pool, &run->workload, &r->best, &sheet);
    if (ps != PRICE_OK) {
        fprintf(stderr, "rackplan price: out of memory pricing the deployment\n");
        return EXIT_IO;
    }
    run->answer = (struct forward){.model_path = model_path, .topology_path = topology_path, .model = m, .topology = t, .options = o, .precisions = &run->precisions,
                                   .workload = &run->workload, .mix = &run->mix, .point = &r->best,
                                   .efficiency = pool.efficiency, .calibration = row, .estimate = own->estimate,
                                   .budget = budget, .budget_source = run->budget_text, .price_source = price_source,
                                   .sheet = sheet};
    return -1;
}

static void forward_release(struct forward_run *run)
{
    serve_result_release(&run->result);
    length_mix_release(&run->mix);
}

static int finish(const struct options *o, void (*write)(FILE *, const void *), const void *data)
{
    struct sink_batch outputs;
    sink_batch_init(&outputs);
    bool whole = sink_batch_write(&outputs, o->output, write, data);
    return sink_batch_finish(&outputs, whole) ? EXIT_OK : EXIT_IO;
}

static int run_inverse(struct options *o, const struct own_options *own)
{
    const struct command *c = o->command;
    if (o->positional_count != 1)
        return cli_usage_error(c, "with --from-prices give one TOPOLOGY, not %d argument%s", o->positional_count,
                               o->positional_count == 1 ? "" : "s");
    bool workload = o->isl || o->osl || o->lengths || o->isl_dist_set || o->osl_dist_set;
    if (!own->model && (workload || o->ttft_s > 0 || o->tpot_s > 0 || own->racks || own->devices || own->mode_set ||
                        own->estimate || own->price_count || o->weights_set || o->kv_set))
        return cli_usage_error(c, "the workload, targets, budget, --price, --estimate and precisions are for "
                                  "rackplan's own sheet: give --model MODEL too");
    struct price_sheet sheet;
    struct diags d;
    diags_init(&d);
    enum prices_status ps = prices_load(own->from_prices, &sheet, &d);
    diags_print(&d, stderr);
    diags_release(&d);
    if (ps != PRICES_OK)
        return ps == PRICES_IO_ERROR ? EXIT_IO : EXIT_INVALID;
    struct topology t;
    int status;
    if ((status = cli_load_topology(o->positional[0], &t)) != EXIT_OK)
        return status;
    struct model m;
    if (own->model) {
        if ((status = cli_load_model(own->model, &m)) != EXIT_OK)
            return status;
        if ((status = cli_resolve(o, &m, &t)) != EXIT_OK)
            return status;
    }

    static struct inverse a; /* its tables: kept off the stack */
    memset(&a, 0, sizeof a);
    a.sheet = &sheet;
    a.sheet_path = own->from_prices;
    a.topology = &t;
    a.options = o;
    a.flops_precision = t.peak_flops_per_s[PREC_FP8] > 0 ? PREC_FP8 : PREC_BF16;
    a.flops_per_s = t.peak_flops_per_s[a.flops_precision];
    if (!(a.flops_per_s > 0)) {
        fprintf(stderr, "rackplan price: %s gives no dense FP8 or BF16 peak, which the inversions divide by\n", t.name);
        return EXIT_INVALID;
    }
    a.implied_kv_bytes_per_token =
        sheet.long_context_step_tokens > 0
            ? prices_implied_kv_bytes_per_token(sheet.active_params, t.hbm_bytes_per_s, a.flops_per_s,
                                                (double)sheet.long_context_step_tokens)
            : NAN;
    a.ratio = prices_decode_memory_bound_ratio(sheet.output_per_mtok, sheet.input_per_mtok);
    a.tier_count = topology_tier_count(&t);
    if (a.tier_count > PRICES_MAX_TIERS)
        a.tier_count = PRICES_MAX_TIERS;
    for (int i = 0; i < a.tier_count; i++) {
        topology_tier(&t, i, &a.tier_info[i]);
        a.tiers[i] = (struct price_tier){topology_tier_kind_name(a.tier_info[i].kind), a.tier_info[i].bytes_per_device,
                                         a.tier_info[i].read_bytes_per_s_per_device};
    }
    a.retention_count =
        prices_match_retentions(sheet.cache_retention_s, sheet.retention_count, a.tiers, a.tier_count, a.retentions);

    a.discount = sheet.has_cached_input ? prices_cache_discount(sheet.cached_input_per_mtok, sheet.input_per_mtok) : NAN;
    a.kv_bytes_per_token = NAN;
    if (own->model) {
        a.kv_bytes_per_token = model_kv_bytes_per_token(&m, o->kv);
        snprintf(a.kv_from, sizeof a.kv_from, "%s at %s KV", m.name, precision_name(o->kv));
        int64_t context = PRICE_RECOMPUTE_PROMPT / 2;
        a.prefill_flops_per_token = model_matmul_flops_per_token(&m) +
                                    model_attention_flops_layers(&m, context, 0, m.layers, ATTENTION_PASS_PREFILL);
        snprintf(a.flops_from, sizeof a.flops_from, "%s's prefill at a %d-token prompt, attention included", m.name,
                 PRICE_RECOMPUTE_PROMPT);
    } else {
        if (sheet.has_kv_bytes_per_token) {
            a.kv_bytes_per_token = sheet.kv_bytes_per_token;
            snprintf(a.kv_from, sizeof a.kv_from, "the sheet's kv_bytes_per_token");
        } else if (isfinite(a.implied_kv_bytes_per_token)) {
            a.kv_bytes_per_token = a.implied_kv_bytes_per_token;
            snprintf(a.kv_from, sizeof a.kv_from, "implied by the long-context step");
        }
        a.prefill_flops_per_token = 2 * sheet.active_params;
        snprintf(a.flops_from, sizeof a.flops_from, "2 x the sheet's active parameters, attention left out");
    }
    if (isfinite(a.discount) && isfinite(a.kv_bytes_per_token)) {
        for (int i = 0; i < a.tier_count; i++)
            a.load_over_recompute[i] = prices_load_over_recompute(a.kv_bytes_per_token, a.tiers[i].read_bytes_per_s,
                                                                  a.prefill_flops_per_token, a.flops_per_s);
        a.has_discount = prices_match_discount(a.discount, a.kv_bytes_per_token, a.prefill_flops_per_token,
                                               a.flops_per_s, a.tiers, a.tier_count, &a.match);
    }

    static struct forward_run run; /* a search result and a mix: kept off the stack */
    memset(&run, 0, sizeof run);
    if (own->model) {
        status = run_forward(o, own, own->model, o->positional[0], &m, &t, &run);
        if (status >= 0) {
            forward_release(&run);
            return status;
        }
        a.forward = &run.answer;
    }
    status = finish(o, write_inverse, &a);
    if (own->model)
        forward_release(&run);
    return status;
}

int cmd_price(int argc, char **argv)
{
    struct own_options own = {0};
    char **kept = xcalloc((size_t)argc + 3, sizeof *kept);
    int n = take_own_options(argc, argv, &own, kept);
    if (n < 0) {
        free(kept);
        return -n;
    }
    if (own.from_prices && own.model && !gives_lengths(n, kept)) {
        /* rackplan's sheet beside a published one: the default workload */
        static char isl[] = "--isl=" STRINGIFY(PRICE_DEFAULT_ISL), osl[] = "--osl=" STRINGIFY(PRICE_DEFAULT_OSL);
        kept[n++] = isl;
        kept[n++] = osl;
        kept[n] = NULL;
    }
    struct options o;
    int status = cli_parse(&command_price, n, kept, &o);
    if (status >= 0) {
        free(kept);
        return status;
    }
    if (own.from_prices) {
        status = run_inverse(&o, &own);
        free(kept);
        return status;
    }
    if (own.model) {
        free(kept);
        return cli_usage_error(o.command, "--model goes with --from-prices FILE.yaml; without it give MODEL TOPOLOGY");
    }
    if (o.positional_count != 2) {
        free(kept);
        return cli_usage_error(o.command, "expected MODEL TOPOLOGY (or --from-prices FILE.yaml TOPOLOGY), got %d "
                                          "argument%s",
                               o.positional_count, o.positional_count == 1 ? "" : "s");
    }
    if (!o.isl && !o.lengths && !o.isl_dist_set) {
        free(kept);
        return cli_usage_error(o.command, "give the workload: --isl N --osl N (mean prompt and output tokens a "
                                          "request)");
    }
    struct model m;
    struct topology t;
    if ((status = cli_load_model(o.positional[0], &m)) != EXIT_OK ||
        (status = cli_load_topology(o.positional[1], &t)) != EXIT_OK ||
        (status = cli_resolve(&o, &m, &t)) != EXIT_OK) {
        free(kept);
        return status;
    }
    static struct forward_run run; /* a search result and a mix: kept off the stack */
    memset(&run, 0, sizeof run);
    status = run_forward(&o, &own, o.positional[0], o.positional[1], &m, &t, &run);
    if (status < 0)
        status = finish(&o, write_forward, &run.answer);
    forward_release(&run);
    free(kept);
    return status;
}
