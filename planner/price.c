/* price.c: the price sheet a deployment implies (price.h is the contract). */
#include "price.h"

#include "prices.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const int64_t price_contexts[PRICE_CONTEXTS] = {8192, 32768, 131072, 200000, 1048576};

/* The largest batch price_output_at looks for: far above what any device's HBM holds at a
 * prompt of one token (the batch search stops at what fits). */
#define PRICE_MOST_BATCH ((int64_t)1 << 30)

bool price_decode_init(struct price_decode *out, const struct serve_pool *pool, const struct layout *l,
                       const struct serve_workload *w)
{
    const struct topology *t = pool->topology;
    /* the instance's shape as the search built it: part of one domain, or whole domains */
    int64_t racks = l->devices > t->domain_devices ? (l->devices + t->domain_devices - 1) / t->domain_devices : 1;
    memset(out, 0, sizeof *out);
    if (racks == 1) {
        if (!topology_slice(t, l->devices, &out->topology))
            return false;
    } else {
        out->topology = *t;
    }
    if (graph_analyse(&out->topology, racks, &out->graph) != GRAPH_OK)
        return false;
    out->pool = *pool;
    out->pool.topology = NULL; /* set to &out->topology at each call */
    out->layout = *l;
    out->workload = *w;
    return true;
}

double price_output_at(const struct price_decode *d, int64_t prompt_tokens, int64_t *batch)
{
    if (batch)
        *batch = 0;
    struct serve_pool pool = d->pool;
    pool.topology = &d->topology;
    if (!(pool.price_usd_per_hour > 0) || prompt_tokens < 1)
        return NAN;
    /* fixed lengths: prompt_tokens and the workload's osl, nothing to size */
    struct serve_workload w = d->workload;
    w.isl = prompt_tokens;
    w.lengths = (struct serve_lengths){0};
    w.rate = 0;
    int64_t b = serve_largest_decode_batch(&pool, &d->graph, &d->layout, &w, PRICE_MOST_BATCH);
    struct serve_instance instance;
    if (b < 1 || !serve_decode_instance(&pool, &d->graph, &d->layout, &w, b, &instance))
        return NAN;
    if (batch)
        *batch = b;
    double device_s = (double)d->layout.devices * instance.step_s / (serve_tokens_per_step(&w) * (double)b);
    return device_s * pool.price_usd_per_hour / 3600 * 1e6;
}

/* Whether the price at `prompt` has reached `target`; no batch at all is a price beyond any. */
static bool reached(const struct price_decode *d, int64_t prompt, double target)
{
    double price = price_output_at(d, prompt, NULL);
    return isnan(price) || price >= target;
}

int64_t price_step_context(const struct price_decode *d, double base, double factor, int64_t from, int64_t to)
{
    if (!(base > 0) || !(factor > 0) || from < 1 || to < from)
        return 0;
    double target = base * factor;
    if (!reached(d, to, target))
        return 0;
    if (reached(d, from, target))
        return from;
    int64_t below = from, at = to; /* below < target <= at */
    while (at - below > 1) {
        int64_t mid = below + (at - below) / 2;
        if (reached(d, mid, target))
            at = mid;
        else
            below = mid;
    }
    return at;
}

int price_tiers(const struct topology *t, double usd_per_device_hour, double kv_bytes_per_token,
                double input_per_mtok, struct price_tier_cost out[TOPOLOGY_MAX_TIERS])
{
    int count = topology_tier_count(t);
    if (count > TOPOLOGY_MAX_TIERS)
        count = TOPOLOGY_MAX_TIERS;
    for (int i = 0; i < count; i++) {
        struct price_tier_cost *c = &out[i];
        memset(c, 0, sizeof *c);
        topology_tier(t, i, &c->tier);
        c->load_s_per_token = kv_bytes_per_token / c->tier.read_bytes_per_s_per_device;
        c->cached_input_per_mtok = c->load_s_per_token * usd_per_device_hour / 3600 * 1e6;
        c->cheaper_than_recompute = input_per_mtok > 0 && c->cached_input_per_mtok < input_per_mtok;
        if (c->tier.usd_per_gb_hour > 0) {
            c->storage_per_mtok_hour = c->tier.usd_per_gb_hour * kv_bytes_per_token * 1e6 / 1e9;
            c->storage_from_tier_price = true;
        } else {
            c->storage_per_mtok_hour =
                prices_storage_per_mtok_hour(usd_per_device_hour, kv_bytes_per_token, c->tier.bytes_per_device);
        }
    }
    return count;
}

enum price_status price_forward(const struct serve_pool *decode_pool, const struct serve_workload *w,
                                const struct serve_point *p, struct price_sheet_forward *out)
{
    double usd_per_hour = decode_pool->price_usd_per_hour;
    if (!(usd_per_hour > 0))
        return PRICE_NO_PRICE;
    struct price_decode *held = malloc(sizeof *held); /* a topology: kept off the stack */
    if (!held || !price_decode_init(held, decode_pool, &p->decode.layout, w)) {
        free(held);
        return PRICE_NO_MEMORY;
    }
    const struct price_decode *d = held;
    struct price_sheet_forward f;
    memset(&f, 0, sizeof f);
    f.usd_per_device_hour = usd_per_hour;
    const struct model *m = decode_pool->model;
    f.kv_bytes_per_token = model_kv_bytes_per_token(m, decode_pool->precisions.kv);
    double per_device_s = usd_per_hour / 3600;
    double y = serve_tokens_per_step(w);
    double computed = (double)w->isl * (1 - w->prefix_hit); /* prompt tokens a request computes */
    double batch = (double)p->decode.batch, devices = (double)p->decode.layout.devices;
    if (p->mode == SERVE_AGGREGATED) {
        struct serve_pool pool = d->pool;
        pool.topology = &d->topology;
        struct roof_point decode_only;
        serve_decode_step(&pool, &d->graph, &d->layout, w, p->decode.batch, &decode_only);
        double step = p->decode.step_s, decode_step = decode_only.step_s;
        double prefill_tokens = y * batch * computed / (double)w->osl;
        f.input_device_s_per_token =
            step > decode_step && prefill_tokens > 0 ? (step - decode_step) / prefill_tokens * devices : 0;
        f.output_device_s_per_token = devices * decode_step / (y * batch);
    } else {
        double requests_per_s = p->tokens_per_s_per_device * (double)p->devices / (double)w->osl;
        double prefill_devices = (double)(p->prefill_instances * p->prefill.layout.devices);
        f.input_device_s_per_token = prefill_devices / (requests_per_s * computed);
        f.output_device_s_per_token = devices * p->decode.step_s / (y * batch);
    }
    f.input_per_mtok = f.input_device_s_per_token * per_device_s * 1e6;
    f.output_per_mtok = f.output_device_s_per_token * per_device_s * 1e6;
    f.output_input_ratio = f.input_per_mtok > 0 ? f.output_per_mtok / f.input_per_mtok : NAN;

    for (int i = 0; i < PRICE_CONTEXTS; i++) {
        int64_t context = price_contexts[i];
        if (m->max_context > 0 && context + w->osl > m->max_context)
            continue;
        f.context_tokens[f.context_count] = context;
        f.output_per_mtok_at[f.context_count] = price_output_at(d, context, &f.batch_at[f.context_count]);
        f.context_count++;
    }
    f.base_output_per_mtok = price_output_at(d, w->isl, &f.base_batch);
    f.step_searched_to = m->max_context > 0 ? m->max_context - w->osl : PRICE_MAX_CONTEXT;
    if (!isnan(f.base_output_per_mtok))
        f.long_context_step_tokens =
            price_step_context(d, f.base_output_per_mtok, PRICE_STEP_FACTOR, w->isl, f.step_searched_to);
    f.tier_count = price_tiers(decode_pool->topology, usd_per_hour, f.kv_bytes_per_token, f.input_per_mtok, f.tiers);
    free(held);
    *out = f;
    return PRICE_OK;
}
