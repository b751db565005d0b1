/* kvcache.c: the prefix cache's tiers and the hit rate they buy (kvcache.h has the model). */
#include "kvcache.h"

#include "model.h"
#include "plan.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KV_CSV_MAX_BYTES (1u << 20)

double kv_interval_cdf(const struct kv_reuse *r, double t)
{
    if (t <= 0)
        return 0;
    if (isinf(t))
        return r->kind == KV_INTERVAL_QUANTILES && r->count > 0 ? r->p[r->count - 1] : 1;
    switch (r->kind) {
    case KV_INTERVAL_EXP:
        return -expm1(-t / r->mean_s);
    case KV_INTERVAL_QUANTILES: {
        double p0 = 0, s0 = 0;
        for (int i = 0; i < r->count; i++) {
            if (t < r->s[i])
                return r->s[i] > s0 ? p0 + (r->p[i] - p0) * (t - s0) / (r->s[i] - s0) : p0;
            p0 = r->p[i];
            s0 = r->s[i];
        }
        return p0;
    }
    case KV_INTERVAL_NONE:
        break;
    }
    return 0;
}

bool kv_reuse_parse_interval(const char *text, struct kv_reuse *out, char *error, size_t error_size)
{
    if (strncmp(text, "exp:", 4) != 0) {
        snprintf(error, error_size, "a reuse interval is exp:MEAN_S or a CSV of quantiles, not '%s'", text);
        return false;
    }
    char *end;
    errno = 0;
    double mean = strtod(text + 4, &end);
    if (end == text + 4 || *end != '\0' || errno != 0 || !(mean > 0) || !isfinite(mean)) {
        snprintf(error, error_size, "exp:MEAN_S takes a mean in seconds above 0, not '%s'", text + 4);
        return false;
    }
    out->kind = KV_INTERVAL_EXP;
    out->mean_s = mean;
    out->count = 0;
    return true;
}

/* One number of a CSV field starting at `at`, ending at a comma, a newline or the end. */
static bool csv_number(const char *at, const char **next, double *value)
{
    char *end;
    errno = 0;
    *value = strtod(at, &end);
    if (end == at || errno != 0 || !isfinite(*value))
        return false;
    while (*end == ' ' || *end == '\t' || *end == '\r')
        end++;
    *next = end;
    return true;
}

bool kv_reuse_read_buffer(const char *path, const char *data, size_t size, struct kv_reuse *out, struct diags *d)
{
    struct kv_reuse r = {.kind = KV_INTERVAL_QUANTILES};
    bool header = false, ok = true;
    int line = 0;
    const char *at = data, *stop = data + size;
    while (at < stop) {
        line++;
        const char *eol = memchr(at, '\n', (size_t)(stop - at));
        if (!eol)
            eol = stop;
        const char *p = at;
        while (p < eol && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        if (p == eol || *p == '#') {
            at = eol + 1;
            continue;
        }
        const char *nul = memchr(p, '\0', (size_t)(eol - p));
        if (nul) {
            diags_add(d, path, line, (int)(nul - at) + 1, "a NUL byte in the file");
            return false;
        }
        if (!header) {
            const char *want = "quantile,seconds";
            size_t n = strlen(want);
            const char *q = eol;
            while (q > p && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r'))
                q--;
            if ((size_t)(q - p) != n || strncmp(p, want, n) != 0) {
                diags_add(d, path, line, (int)(p - at) + 1, "the first row must be the header 'quantile,seconds'");
                return false;
            }
            header = true;
            at = eol + 1;
            continue;
        }
        double q, s;
        const char *next;
        if (!csv_number(p, &next, &q) || *next != ',') {
            diags_add(d, path, line, (int)(p - at) + 1, "expected a quantile, then a comma");
            ok = false;
        } else if (!(q > 0 && q <= 1) || (r.count > 0 && q <= r.p[r.count - 1])) {
            diags_add(d, path, line, (int)(p - at) + 1,
                      "quantiles must lie in (0, 1] and increase from row to row, not %g", q);
            ok = false;
        } else {
            const char *field = next + 1;
            while (*field == ' ' || *field == '\t')
                field++;
            if (!csv_number(field, &next, &s) || next != eol) {
                diags_add(d, path, line, (int)(field - at) + 1, "expected seconds, then the end of the row");
                ok = false;
            } else if (!(s >= 0) || (r.count > 0 && s < r.s[r.count - 1])) {
                diags_add(d, path, line, (int)(field - at) + 1,
                          "seconds must be at least 0 and never fall from row to row, not %g", s);
                ok = false;
            } else if (r.count == KV_MAX_QUANTILES) {
                diags_add(d, path, line, 1, "more than %d quantiles", KV_MAX_QUANTILES);
                return false;
            } else {
                r.p[r.count] = q;
                r.s[r.count++] = s;
            }
        }
        at = eol + 1;
    }
    if (!header) {
        diags_add(d, path, 0, 0, "no header 'quantile,seconds'");
        return false;
    }
    if (ok && r.count == 0) {
        diags_add(d, path, line, 0, "no quantiles after the header");
        return false;
    }
    if (!ok)
        return false;
    r.share = out->share;
    *out = r;
    return true;
}

bool kv_reuse_read_csv(const char *path, struct kv_reuse *out, struct diags *d)
{
    char *data;
    size_t size;
    if (file_read_all(path, KV_CSV_MAX_BYTES, &data, &size, d) < 0)
        return false;
    if (size > KV_CSV_MAX_BYTES) {
        free(data);
        diags_add(d, path, 0, 0, "larger than %u bytes", KV_CSV_MAX_BYTES);
        return false;
    }
    bool ok = kv_reuse_read_buffer(path, data, size, out, d);
    free(data);
    return ok;
}

double kv_interval_survival_s(const struct kv_reuse *r, double t)
{
    if (!(t > 0))
        return 0;
    switch (r->kind) {
    case KV_INTERVAL_EXP:
        return isinf(t) ? r->mean_s : -r->mean_s * expm1(-t / r->mean_s);
    case KV_INTERVAL_QUANTILES: {
        /* the law is linear between the points, so Pr[I > u] is too: a trapezoid a segment */
        double p0 = 0, s0 = 0, area = 0;
        for (int i = 0; i < r->count && s0 < t; i++) {
            if (r->s[i] > s0) {
                double end = fmin(r->s[i], t), p_end = p0 + (r->p[i] - p0) * (end - s0) / (r->s[i] - s0);
                area += (end - s0) * (1 - (p0 + p_end) / 2);
            }
            p0 = r->p[i];
            s0 = r->s[i];
        }
        /* beyond the last point the law stays at its p: the rest is never reused within it */
        if (t > s0)
            area += p0 < 1 ? (t - s0) * (1 - p0) : 0;
        return area;
    }
    case KV_INTERVAL_NONE:
        break;
    }
    return t;
}

double kv_touched_tokens(const struct kv_reuse *r, double new_tokens_per_s, double reused_tokens_per_s, double t)
{
    if (!(t > 0))
        return 0;
    double reused = reused_tokens_per_s > 0 ? reused_tokens_per_s * kv_interval_survival_s(r, t) : 0;
    return (new_tokens_per_s > 0 ? new_tokens_per_s * t : 0) + reused;
}

double kv_residency_s(const struct kv_reuse *r, double new_tokens_per_s, double reused_tokens_per_s,
                      double capacity_tokens)
{
    if (!(capacity_tokens > 0))
        return 0;
    /* with no new tokens and every reuse within a finite time the touched set is bounded (the
     * working set): a cache at least that large keeps everything */
    if (!(kv_touched_tokens(r, new_tokens_per_s, reused_tokens_per_s, INFINITY) > capacity_tokens))
        return INFINITY;
    double lo = 0, hi = 1;
    while (kv_touched_tokens(r, new_tokens_per_s, reused_tokens_per_s, hi) < capacity_tokens)
        lo = hi, hi *= 2;
    /* monotone: bisection to the last bit, the same steps on every machine */
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
        double mid = lo + (hi - lo) / 2;
        if (kv_touched_tokens(r, new_tokens_per_s, reused_tokens_per_s, mid) < capacity_tokens)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

void kv_cache_tiers(const struct kv_cache_input *in, struct kv_cache_result *out)
{
    *out = (struct kv_cache_result){.tier_count = in->tier_count};
    double share = in->reuse.share, b = in->bytes_per_token;
    double new_per_s = in->new_tokens_per_s, reused_per_s = share * in->prompt_tokens_per_s;
    double prefix_bytes = share * in->prompt_tokens * b;
    double held_by_faster = 0; /* the longest residency of the worth-it tiers above */
    for (int i = 0; i < in->tier_count; i++) {
        const struct kv_tier_input *t = &in->tiers[i];
        struct kv_tier_result *r = &out->tiers[i];
        r->kind = t->kind;
        memcpy(r->name, t->name, sizeof r->name);
        r->capacity_bytes = t->capacity_bytes;
        r->residency_s = b > 0 ? kv_residency_s(&in->reuse, new_per_s, reused_per_s, t->capacity_bytes / b) : INFINITY;
        r->load_s = t->read_bytes_per_s > 0 ? prefix_bytes / t->read_bytes_per_s : INFINITY;
        r->recompute_s = in->recompute_s;
        r->worth_it = t->capacity_bytes > 0 && r->load_s < in->recompute_s;
        /* what the tier did not hold enters it: new tokens, and the reuses older than its residency
         * (recomputed, or loaded from another tier: a promotion into HBM is one) */
        double held = kv_interval_cdf(&in->reuse, r->residency_s);
        r->write_bytes_per_s = t->capacity_bytes > 0 ? (new_per_s + reused_per_s * (1 - held)) * b : 0;
        if (!r->worth_it || share <= 0)
            continue;
        double before = kv_interval_cdf(&in->reuse, held_by_faster);
        r->hit_share = share * fmax(held - before, 0);
        r->read_bytes_per_s = r->hit_share * in->prompt_tokens_per_s * b;
        held_by_faster = fmax(held_by_faster, r->residency_s);
        out->prefix_hit += r->hit_share;
        out->load_s += r->hit_share / share * r->load_s;
    }
}

/* A token's KV on one device of a layout: the sequence's bytes at the held context, a token's
 * share, over the devices that split one copy (GQA heads over TP, layers over PP). */
static double device_bytes_per_token(const struct serve_pool *pool, const struct layout *l, const struct serve_workload *w)
{
    int64_t context = serve_held_context(w);
    double per_token = context > 0 ? model_sequence_bytes(pool->model, pool->precisions.kv, context) / (double)context : 0;
    return per_token / (model_kv_split(pool->model, l->tp) * (double)l->pp);
}

bool kv_cache_input_of(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                       const struct serve_workload *w, const struct serve_point *p, const struct kv_reuse *reuse,
                       struct kv_cache_input *out)
{
    bool split = p->mode == SERVE_DISAGGREGATED;
    const struct serve_pool *pool = split && prefill_pool ? prefill_pool : decode_pool;
    const struct layout *l = split ? &p->prefill.layout : &p->decode.layout;
    *out = (struct kv_cache_input){.reuse = *reuse, .prompt_tokens = (double)w->isl};
    out->bytes_per_token = device_bytes_per_token(pool, l, w);
    /* requests a second on one DP rank's devices, each writing its share */
    double requests = split ? p->decode.requests_per_s * (double)p->decode_instances / (double)p->prefill_instances
                            : p->decode.requests_per_s;
    double per_rank = requests / (double)l->dp;
    /* a hit or a miss touches the reused prefix alike; what is new is the rest of the prompt and,
     * aggregated, the output a next turn would repeat (disaggregated, the prefill instances cache
     * the prompts only) */
    out->new_tokens_per_s = per_rank * ((double)w->isl * (1 - reuse->share) + (split ? 0 : (double)w->osl));
    out->prompt_tokens_per_s = per_rank * (double)w->isl;
    out->recompute_s = serve_prompt_prefill_s(pool, l, reuse->share * (double)w->isl);
    int64_t batch = split ? 0 : p->decode.batch;
    out->tiers[0] = (struct kv_tier_input){.kind = TIER_HBM};
    snprintf(out->tiers[0].name, sizeof out->tiers[0].name, "HBM");
    out->tiers[0].capacity_bytes = split ? serve_free_hbm_bytes(pool, l, w, p->prefill.batch)
                                         : serve_free_hbm_bytes(pool, l, w, batch);
    out->tiers[0].read_bytes_per_s = pool->topology->hbm_bytes_per_s;
    out->tier_count = 1;
    for (int i = 1; i < topology_tier_count(pool->topology) && out->tier_count < KV_MAX_TIERS; i++) {
        struct memory_tier t;
        if (!topology_tier(pool->topology, i, &t))
            continue;
        struct kv_tier_input *k = &out->tiers[out->tier_count++];
        *k = (struct kv_tier_input){.kind = t.kind, .capacity_bytes = t.bytes_per_device,
                                    .read_bytes_per_s = t.read_bytes_per_s_per_device};
        memcpy(k->name, t.name, sizeof k->name);
    }
    return out->bytes_per_token > 0;
}

/* The substitution for one workload: *settled false when it had not settled after
 * KV_SETTLE_ROUNDS searches. */
static bool settle(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                   const struct serve_workload *w, const struct kv_reuse *reuse, struct serve_result *out,
                   struct serve_workload *w_out, struct kv_cache_result *cache, bool *settled)
{
    struct serve_workload at = *w;
    *cache = (struct kv_cache_result){0};
    *settled = true;
    double last_step = 0; /* the last move of the hit */
    bool last_plain = false; /* that move was the substitution's own, neither extrapolated nor halved */
    /* the workload of the round whose deployment served the most among those whose tiers hold at
     * least the hit it was searched at: that deployment serves at least as much at its own hit */
    struct serve_workload held = at;
    double held_rate = -1;
    for (int round = 0;; round++) {
        if (!serve_search(decode_pool, prefill_pool, &at, out))
            return false;
        *w_out = at;
        struct kv_cache_input in;
        if (!out->found || !kv_cache_input_of(decode_pool, prefill_pool, &at, &out->best, reuse, &in))
            return true;
        kv_cache_tiers(&in, cache);
        /* a share of a prompt's tokens never reaches 1 (serve_workload: [0, 1)) */
        double hit = fmin(cache->prefix_hit, SERVE_MOST_PREFIX_HIT), step = hit - at.prefix_hit;
        if (fabs(step) < 1e-4 && fabs(cache->load_s - at.prefix_load_s) <= 1e-4 * cache->load_s)
            return true;
        if (step >= 0 && out->best.tokens_per_s_per_device > held_rate) {
            held = at;
            held_rate = out->best.tokens_per_s_per_device;
        }
        if (round + 1 == KV_SETTLE_ROUNDS) {
            if (held_rate < 0) {
                *settled = false;
                return true;
            }
            /* no fixed point: the best deployment flips as the hit moves; the one that holds what
             * it was searched at, again */
            serve_result_release(out);
            if (!serve_search(decode_pool, prefill_pool, &held, out))
                return false;
            *w_out = held;
            if (out->found && kv_cache_input_of(decode_pool, prefill_pool, &held, &out->best, reuse, &in))
                kv_cache_tiers(&in, cache);
            return true;
        }
        serve_result_release(out);
        /* moving on as before: Aitken's extrapolation of the geometric approach (the hit's
         * move shrinks by a ratio round to round), from two substitution steps only (after a halved
         * or extrapolated move the ratio is not the map's: a halving repeated gives 1, and the
         * extrapolation runs off to an end); turning back: halfway, since a search that moves to
         * another layout as the hit moves can make the substitution swing between two points */
        double next = hit, load = cache->load_s;
        if (last_step != 0 && step * last_step < 0) {
            next = at.prefix_hit + step / 2;
            load = (cache->load_s + at.prefix_load_s) / 2;
        } else if (last_plain && fabs(step) < fabs(last_step)) {
            double ratio = step / last_step;
            next = fmin(fmax(at.prefix_hit + step / (1 - ratio), 0), SERVE_MOST_PREFIX_HIT);
        }
        last_plain = next == hit && load == cache->load_s;
        last_step = next - at.prefix_hit;
        at.prefix_hit = next;
        at.prefix_load_s = load;
    }
}

bool serve_with_reuse(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                      const struct serve_workload *w, const struct kv_reuse *reuse, struct serve_result *out,
                      struct serve_workload *w_out, struct kv_cache_result *cache)
{
    bool settled;
    if (!settle(decode_pool, prefill_pool, w, reuse, out, w_out, cache, &settled))
        return false;
    if (settled || w->mode != SERVE_BEST || !out->found)
        return true;
    /* the best deployment flips between the modes as the hit moves, and each holds the cache in
     * another place: settle each mode alone and keep the one that serves more at its own hit */
    for (int m = 0; m < 2; m++) {
        struct serve_workload alone = *w, alone_used;
        alone.mode = m == 0 ? SERVE_AGGREGATED : SERVE_DISAGGREGATED;
        struct serve_result r;
        struct kv_cache_result c;
        bool alone_settled;
        if (!settle(decode_pool, prefill_pool, &alone, reuse, &r, &alone_used, &c, &alone_settled)) {
            serve_result_release(out);
            return false;
        }
        bool better = r.found && (alone_settled || !settled) &&
                      ((!settled && alone_settled) || r.best.tokens_per_s_per_device > out->best.tokens_per_s_per_device);
        if (better) {
            serve_result_release(out);
            *out = r;
            *w_out = alone_used;
            *cache = c;
            settled = alone_settled;
        } else {
            serve_result_release(&r);
        }
    }
    return true;
}

bool serve_warm_hit(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                    const struct serve_workload *cold, const struct kv_reuse *reuse, double *warm_hit)
{
    *warm_hit = -1;
    struct serve_workload warm = *cold, used;
    warm.prefix_hit = fmin(reuse->share, SERVE_MOST_PREFIX_HIT);
    warm.prefix_load_s = 0;
    struct serve_result result;
    struct kv_cache_result cache;
    if (!serve_with_reuse(decode_pool, prefill_pool, &warm, reuse, &result, &used, &cache))
        return false;
    if (result.found && used.prefix_hit > cold->prefix_hit + 1e-3)
        *warm_hit = used.prefix_hit;
    serve_result_release(&result);
    return true;
}

/* `t` with its tier of `kind` holding `bytes` a device (0: without it); false when it has none. */
static bool with_tier(const struct topology *t, enum tier_kind kind, double bytes, struct topology *out)
{
    *out = *t;
    for (int i = 0; i < t->tier_count; i++) {
        if (t->tiers[i].kind != kind)
            continue;
        if (bytes > 0) {
            out->tiers[i].bytes_per_device = bytes;
        } else {
            memmove(&out->tiers[i], &out->tiers[i + 1], (size_t)(t->tier_count - i - 1) * sizeof out->tiers[i]);
            out->tier_count--;
        }
        return true;
    }
    return false;
}

bool kv_size_tier(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                  const struct serve_workload *w, const struct kv_reuse *reuse, enum tier_kind kind,
                  double usd_per_gb_hour, struct kv_sizing *out)
{
    static const double multiples[KV_SIZING_POINTS] = {0, 0.25, 0.5, 1, 2, 4, 8, 16};
    const struct topology *t = decode_pool->topology;
    int index = -1;
    for (int i = 0; i < t->tier_count; i++)
        if (t->tiers[i].kind == kind)
            index = i;
    if (index < 0 || decode_pool->price_usd_per_hour <= 0)
        return false;
    *out = (struct kv_sizing){.kind = kind, .usd_per_gb_hour = usd_per_gb_hour, .best = -1};
    memcpy(out->name, t->tiers[index].name, sizeof out->name);
    double base = t->tiers[index].bytes_per_device;
    struct topology *decode_t = xmalloc(sizeof *decode_t), *prefill_t = xmalloc(sizeof *prefill_t);
    bool ok = true;
    for (int k = 0; k < KV_SIZING_POINTS && ok; k++) {
        double bytes = base * multiples[k];
        struct serve_pool d = *decode_pool, p = prefill_pool ? *prefill_pool : *decode_pool;
        with_tier(decode_pool->topology, kind, bytes, decode_t);
        d.topology = decode_t;
        if (prefill_pool) {
            if (!with_tier(prefill_pool->topology, kind, bytes, prefill_t))
                *prefill_t = *prefill_pool->topology;
            p.topology = prefill_t;
        }
        struct serve_result r;
        struct serve_workload used;
        struct kv_cache_result cache;
        struct kv_sizing_point *x = &out->points[out->count++];
        *x = (struct kv_sizing_point){.capacity_bytes = bytes};
        ok = serve_with_reuse(&d, prefill_pool ? &p : NULL, w, reuse, &r, &used, &cache);
        if (ok && r.found && r.best.tokens_per_s_per_device > 0) {
            x->found = true;
            x->prefix_hit = used.prefix_hit;
            x->tokens_per_s_per_device = r.best.tokens_per_s_per_device;
            x->usd_per_hour_per_device = decode_pool->price_usd_per_hour + bytes / 1e9 * usd_per_gb_hour;
            x->cost_per_mtok = x->usd_per_hour_per_device / (x->tokens_per_s_per_device * 3600) * 1e6;
            if (out->best < 0 || x->cost_per_mtok < out->points[out->best].cost_per_mtok * (1 - 1e-12))
                out->best = out->count - 1;
        }
        if (ok)
            serve_result_release(&r);
    }
    free(decode_t);
    free(prefill_t);
    return ok;
}
