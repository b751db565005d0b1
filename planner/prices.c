/* prices.c: price sheets (YAML, through doc.h) into struct price_sheet, and the inversions of
 * prices.h. The reader is strict: unknown keys, wrong types, negative or out-of-range prices and
 * missing required keys are errors with their position; every problem is reported, not only the
 * first. */
#include "prices.h"

#include "doc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_ACTIVE_PARAMS 1e15 /* a thousand times the largest public model */
#define LIMIT_STEP_TOKENS 1073741824LL /* 2^30 tokens */
#define LIMIT_RETENTION_S 1e9 /* about 30 years */
#define LIMIT_KV_BYTES 1e8 /* 100 MB a token: a thousand times the largest model's KV */

/* The value of `key`, or NULL when absent (reported when required). A null value is an error:
 * a field that is not known is left out, not written as null. */
static const struct doc_node *field(struct doc_reader *r, const struct doc_node *map, const char *key, bool required)
{
    const struct doc_node *n = doc_get(map, key);
    if (doc_is_null(n)) {
        doc_error_at(r, n, "field '%s' is null; leave it out when it is not published", key);
        return NULL;
    }
    if (!n && required)
        doc_error_at(r, map, "missing field '%s'", key);
    return n;
}

/* A number in [low, high] from a plain (unquoted) scalar; reported otherwise. */
static bool number_of(struct doc_reader *r, const struct doc_node *n, const char *display, double low, double high,
                      const char *unit, double *out)
{
    if (n->kind != DOC_SCALAR) {
        doc_error_at(r, n, "field '%s' must be a number, not %s", display, doc_kind_name(n));
        return false;
    }
    char *end;
    errno = 0;
    double v = strtod(n->text, &end);
    if (n->quoted || !*n->text || *end || errno || !isfinite(v)) {
        doc_error_at(r, n, "field '%s' must be a number, not '%s'", display, n->text);
        return false;
    }
    if (v < low || v > high) {
        doc_error_at(r, n, "field '%s' is %s; it must be %s from %g to %g", display, n->text, unit, low, high);
        return false;
    }
    *out = v;
    return true;
}

static bool read_number(struct doc_reader *r, const struct doc_node *map, const char *key, bool required, double low,
                        double high, const char *unit, double *out)
{
    const struct doc_node *n = field(r, map, key, required);
    return n && number_of(r, n, key, low, high, unit, out);
}

static bool read_price(struct doc_reader *r, const struct doc_node *map, const char *key, bool required, double *out)
{
    return read_number(r, map, key, required, 0, PRICES_MAX_USD_PER_MTOK,
                       "a price in $ per million tokens", out);
}

static void read_text(struct doc_reader *r, const struct doc_node *map, const char *key, char *out, size_t size)
{
    const struct doc_node *n = field(r, map, key, true);
    if (!n)
        return;
    if (n->kind != DOC_SCALAR) {
        doc_error_at(r, n, "field '%s' must be a string, not %s", key, doc_kind_name(n));
        return;
    }
    if (!*n->text || strlen(n->text) >= size) {
        doc_error_at(r, n, "field '%s' must be 1 to %zu characters", key, size - 1);
        return;
    }
    strcpy(out, n->text);
}

static bool is_date(const char *text)
{
    if (strlen(text) != 10 || text[4] != '-' || text[7] != '-')
        return false;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && (text[i] < '0' || text[i] > '9'))
            return false;
    int month = (text[5] - '0') * 10 + (text[6] - '0');
    int day = (text[8] - '0') * 10 + (text[9] - '0');
    return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

/* A list of at most PRICES_MAX_RETENTIONS numbers in [low, high]; returns the count or -1. */
static int read_list(struct doc_reader *r, const struct doc_node *map, const char *key, double low, double high,
                     const char *unit, double *out)
{
    const struct doc_node *n = field(r, map, key, false);
    if (!n)
        return -1;
    if (n->kind != DOC_SEQ) {
        doc_error_at(r, n, "field '%s' must be a list, not %s", key, doc_kind_name(n));
        return -1;
    }
    if (n->count == 0 || n->count > PRICES_MAX_RETENTIONS) {
        doc_error_at(r, n, "field '%s' has %zu entries; it needs 1 to %d", key, n->count, PRICES_MAX_RETENTIONS);
        return -1;
    }
    bool ok = true;
    for (size_t i = 0; i < n->count; i++) {
        char display[80];
        snprintf(display, sizeof display, "%s[%zu]", key, i);
        ok = number_of(r, n->items[i], display, low, high, unit, &out[i]) && ok;
    }
    return ok ? (int)n->count : -1;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    size_t row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = up;
        }
    }
    return row[lb];
}

static const char *const known_fields[] = {
    "provider", "model", "source", "date", "active_params", "input", "output", "cached_input",
    "long_context_step_tokens", "input_long", "output_long", "cached_input_long",
    "cache_retention_s", "cache_write", "storage_per_mtok_hour", "kv_bytes_per_token", NULL};

static void check_keys(struct doc_reader *r, const struct doc_node *map)
{
    for (size_t i = 0; i < map->count; i++) {
        const char *key = map->keys[i]->text;
        const char *nearest = NULL;
        size_t nearest_distance = 3;
        bool found = false;
        for (const char *const *k = known_fields; *k && !found; k++) {
            found = strcmp(*k, key) == 0;
            size_t distance = edit_distance(*k, key);
            if (distance < nearest_distance) {
                nearest_distance = distance;
                nearest = *k;
            }
        }
        if (found)
            continue;
        if (nearest)
            doc_error_at(r, map->keys[i], "unknown field '%s' (did you mean '%s'?)", key, nearest);
        else
            doc_error_at(r, map->keys[i], "unknown field '%s'", key);
    }
}

static void read_sheet(struct doc_reader *r, const struct doc_node *root, struct price_sheet *s)
{
    check_keys(r, root);
    read_text(r, root, "provider", s->provider, sizeof s->provider);
    read_text(r, root, "model", s->model, sizeof s->model);
    read_text(r, root, "source", s->source, sizeof s->source);
    const struct doc_node *date = field(r, root, "date", true);
    if (date && (date->kind != DOC_SCALAR || !is_date(date->text)))
        doc_error_at(r, date, "field 'date' must be a date YYYY-MM-DD, not %s%s%s", date->kind == DOC_SCALAR ? "'" : "",
                     date->kind == DOC_SCALAR ? date->text : doc_kind_name(date), date->kind == DOC_SCALAR ? "'" : "");
    else if (date)
        strcpy(s->date, date->text);
    read_number(r, root, "active_params", true, 1, LIMIT_ACTIVE_PARAMS, "a parameter count",
                &s->active_params);
    if (read_price(r, root, "input", true, &s->input_per_mtok) && s->input_per_mtok <= 0)
        doc_error_at(r, doc_get(root, "input"), "field 'input' is %s; a sheet needs a positive input price",
                     doc_get(root, "input")->text);
    if (read_price(r, root, "output", true, &s->output_per_mtok) && s->output_per_mtok <= 0)
        doc_error_at(r, doc_get(root, "output"), "field 'output' is %s; a sheet needs a positive output price",
                     doc_get(root, "output")->text);
    s->has_cached_input = read_price(r, root, "cached_input", false, &s->cached_input_per_mtok);
    if (s->has_cached_input && s->input_per_mtok > 0 && s->cached_input_per_mtok > s->input_per_mtok)
        doc_error_at(r, doc_get(root, "cached_input"),
                     "field 'cached_input' (%g) is above 'input' (%g); a cache hit cannot cost more than a miss",
                     s->cached_input_per_mtok, s->input_per_mtok);

    double step = 0;
    const struct doc_node *step_node = field(r, root, "long_context_step_tokens", false);
    if (step_node && number_of(r, step_node, "long_context_step_tokens", 1,
                               (double)LIMIT_STEP_TOKENS, "a number of tokens", &step)) {
        if (step != floor(step))
            doc_error_at(r, step_node, "field 'long_context_step_tokens' must be a whole number, not %s",
                         step_node->text);
        else
            s->long_context_step_tokens = (long long)step;
    }
    static const struct {
        const char *key;
        size_t has, value;
    } long_prices[] = {
        {"input_long", offsetof(struct price_sheet, has_input_long),
         offsetof(struct price_sheet, input_long_per_mtok)},
        {"output_long", offsetof(struct price_sheet, has_output_long),
         offsetof(struct price_sheet, output_long_per_mtok)},
        {"cached_input_long", offsetof(struct price_sheet, has_cached_input_long),
         offsetof(struct price_sheet, cached_input_long_per_mtok)},
    };
    for (size_t i = 0; i < sizeof long_prices / sizeof long_prices[0]; i++) {
        double *value = (double *)((char *)s + long_prices[i].value);
        bool *has = (bool *)((char *)s + long_prices[i].has);
        *has = read_price(r, root, long_prices[i].key, false, value);
        if (*has && !step_node)
            doc_error_at(r, doc_get(root, long_prices[i].key),
                         "field '%s' needs 'long_context_step_tokens' (the context it applies above)",
                         long_prices[i].key);
    }

    int retentions = read_list(r, root, "cache_retention_s", 1e-3, LIMIT_RETENTION_S,
                               "a number of seconds", s->cache_retention_s);
    if (retentions > 0) {
        s->retention_count = retentions;
        for (int i = 1; i < retentions; i++)
            if (s->cache_retention_s[i] <= s->cache_retention_s[i - 1]) {
                doc_error_at(r, doc_get(root, "cache_retention_s")->items[i],
                             "field 'cache_retention_s' must increase: %g follows %g", s->cache_retention_s[i],
                             s->cache_retention_s[i - 1]);
                break;
            }
    }
    int writes = read_list(r, root, "cache_write", 0, PRICES_MAX_USD_PER_MTOK,
                           "a price in $ per million tokens", s->cache_write_per_mtok);
    if (writes > 0) {
        s->has_cache_write = true;
        if (writes != retentions && retentions >= 0)
            doc_error_at(r, doc_get(root, "cache_write"),
                         "field 'cache_write' has %d price%s; 'cache_retention_s' has %d retention%s", writes,
                         writes == 1 ? "" : "s", retentions, retentions == 1 ? "" : "s");
        else if (!doc_get(root, "cache_retention_s"))
            doc_error_at(r, doc_get(root, "cache_write"),
                         "field 'cache_write' needs 'cache_retention_s' (one price for each retention)");
    }
    s->has_storage = read_price(r, root, "storage_per_mtok_hour", false, &s->storage_per_mtok_hour);
    s->has_kv_bytes_per_token = read_number(r, root, "kv_bytes_per_token", false, 1, LIMIT_KV_BYTES, "a number of bytes",
                                            &s->kv_bytes_per_token);
}

static enum prices_status read_doc(const struct doc *doc, struct price_sheet *out, struct diags *d)
{
    struct doc_reader r = {.path = doc->path, .diags = d};
    const struct doc_node *root = doc->root;
    if (root->kind != DOC_MAP) {
        doc_error_at(&r, root, "a price sheet must be a mapping, not %s", doc_kind_name(root));
        return PRICES_INVALID;
    }
    struct price_sheet s;
    memset(&s, 0, sizeof s);
    read_sheet(&r, root, &s);
    if (r.errors)
        return PRICES_INVALID;
    *out = s;
    return PRICES_OK;
}

enum prices_status prices_load(const char *path, struct price_sheet *out, struct diags *d)
{
    struct doc *doc;
    int loaded = doc_load(path, &doc, d);
    if (loaded == DOC_IO_ERROR)
        return PRICES_IO_ERROR;
    if (loaded < 0)
        return PRICES_INVALID;
    enum prices_status status = read_doc(doc, out, d);
    doc_free(doc);
    return status;
}

enum prices_status prices_load_buffer(const char *path, const char *data, size_t size,
                                      struct price_sheet *out, struct diags *d)
{
    struct doc *doc;
    if (doc_load_buffer(path, data, size, &doc, d) < 0)
        return PRICES_INVALID;
    enum prices_status status = read_doc(doc, out, d);
    doc_free(doc);
    return status;
}

/* ---- the inversions ---- */

static bool positive(double x)
{
    return isfinite(x) && x > 0;
}

double prices_implied_kv_bytes_per_token(double active_params, double hbm_bytes_per_s,
                                         double flops_per_s, double context_tokens)
{
    if (!positive(active_params) || !positive(hbm_bytes_per_s) || !positive(flops_per_s) ||
        !positive(context_tokens))
        return NAN;
    return 2 * active_params * hbm_bytes_per_s / (flops_per_s * context_tokens);
}

double prices_decode_memory_bound_ratio(double output_per_mtok, double input_per_mtok)
{
    if (!positive(output_per_mtok) || !positive(input_per_mtok))
        return NAN;
    return output_per_mtok / input_per_mtok;
}

double prices_decode_utilisation(double decode_memory_bound_ratio, double prefill_utilisation)
{
    if (!positive(decode_memory_bound_ratio) || !positive(prefill_utilisation) ||
        prefill_utilisation > 1)
        return NAN;
    return prefill_utilisation / decode_memory_bound_ratio;
}

double prices_tier_drain_s(const struct price_tier *tier)
{
    if (!tier || !positive(tier->capacity_bytes) || !positive(tier->read_bytes_per_s))
        return NAN;
    return tier->capacity_bytes / tier->read_bytes_per_s;
}

int prices_match_retentions(const double *retention_s, int retention_count,
                            const struct price_tier *tiers, int tier_count,
                            struct price_retention_match *out)
{
    if (retention_count < 0 || retention_count > PRICES_MAX_RETENTIONS)
        return 0;
    if (tier_count > PRICES_MAX_TIERS)
        tier_count = PRICES_MAX_TIERS;
    for (int i = 0; i < retention_count; i++) {
        struct price_retention_match m = {.retention_s = retention_s[i], .tier = -1,
                                          .drain_s = NAN, .ratio = NAN};
        if (positive(retention_s[i])) {
            double best = INFINITY;
            for (int t = 0; t < tier_count; t++) {
                double drain = prices_tier_drain_s(&tiers[t]);
                if (isnan(drain))
                    continue;
                double distance = fabs(log(retention_s[i] / drain));
                if (distance < best) {
                    best = distance;
                    m.tier = t;
                    m.drain_s = drain;
                    m.ratio = retention_s[i] / drain;
                }
            }
            for (int t = 0; t < tier_count; t++) {
                double drain = prices_tier_drain_s(&tiers[t]);
                if (t == m.tier || isnan(drain) || retention_s[i] / drain < PRICES_FAR_BELOW_RATIO)
                    continue;
                m.far_below[m.far_below_count] = t;
                m.far_below_ratio[m.far_below_count++] = retention_s[i] / drain;
            }
        }
        out[i] = m;
    }
    return retention_count;
}

double prices_storage_per_mtok_hour(double device_usd_per_hour, double kv_bytes_per_token,
                                    double tier_capacity_bytes)
{
    if (!isfinite(device_usd_per_hour) || device_usd_per_hour < 0 ||
        !positive(kv_bytes_per_token) || !positive(tier_capacity_bytes))
        return NAN;
    return device_usd_per_hour * (kv_bytes_per_token * 1e6 / tier_capacity_bytes);
}

double prices_cache_discount(double cached_input_per_mtok, double input_per_mtok)
{
    if (!isfinite(cached_input_per_mtok) || cached_input_per_mtok < 0 || !positive(input_per_mtok))
        return NAN;
    return cached_input_per_mtok / input_per_mtok;
}

double prices_load_over_recompute(double kv_bytes_per_token, double read_bytes_per_s,
                                  double prefill_flops_per_token, double flops_per_s)
{
    if (!positive(kv_bytes_per_token) || !positive(read_bytes_per_s) ||
        !positive(prefill_flops_per_token) || !positive(flops_per_s))
        return NAN;
    return (kv_bytes_per_token / read_bytes_per_s) / (prefill_flops_per_token / flops_per_s);
}

double prices_discount_implied_bytes_per_s(double discount, double kv_bytes_per_token,
                                           double prefill_flops_per_token, double flops_per_s)
{
    if (!positive(discount) || !positive(kv_bytes_per_token) ||
        !positive(prefill_flops_per_token) || !positive(flops_per_s))
        return NAN;
    return kv_bytes_per_token / (discount * prefill_flops_per_token / flops_per_s);
}

bool prices_match_discount(double discount, double kv_bytes_per_token,
                           double prefill_flops_per_token, double flops_per_s,
                           const struct price_tier *tiers, int tier_count,
                           struct price_discount_match *out)
{
    double implied = prices_discount_implied_bytes_per_s(discount, kv_bytes_per_token,
                                                         prefill_flops_per_token, flops_per_s);
    if (isnan(implied))
        return false;
    struct price_discount_match m = {.discount = discount, .tier = -1, .ratio = NAN,
                                     .implied_bytes_per_s = implied};
    double best = INFINITY;
    for (int t = 0; t < tier_count && t < PRICES_MAX_TIERS; t++) {
        double ratio = prices_load_over_recompute(kv_bytes_per_token, tiers[t].read_bytes_per_s,
                                                  prefill_flops_per_token, flops_per_s);
        if (isnan(ratio))
            continue;
        double distance = fabs(log(ratio / discount));
        if (distance < best) {
            best = distance;
            m.tier = t;
            m.ratio = ratio;
        }
    }
    *out = m;
    return true;
}
