/* prices.h: published API price sheets (YAML files in prices/) and the arithmetic that runs a sheet
 * backwards into what it implies about the hardware behind it (issue 27, item 4).
 *
 * A sheet is what one provider charged for one model on one date: $ per million input tokens
 * (a cache miss), cached input tokens (a cache hit), output tokens; the context at which those
 * prices step up, and the prices above the step; how long a cached prefix is kept; the price of
 * keeping it per hour; and the active parameters to assume for the model behind it (published for
 * open-weight models, an explicit assumption for the others). The reader validates everything: a
 * struct price_sheet it returned has positive input and output prices, a cached price no higher
 * than the input price, retentions in increasing order, and the fields flagged as present.
 *
 * The inversions below are pure functions of plain numbers in SI units ($, bytes, seconds,
 * FLOP/s); they know nothing of topologies or models, which the caller reads and passes in. Each
 * states its model; each returns NAN when an argument is outside its stated domain (never
 * aborts). The model, throughout: a provider prices a token in proportion to the device time it
 * takes (the same margin on every kind of token), so ratios of prices are ratios of device time.
 *
 * 1. Long-context step (prices_implied_kv_bytes_per_token). Decoding one token at context L reads
 *    the KV of L tokens, L * kv_bytes / hbm_bytes_per_s, and computes 2 * active_params FLOPs,
 *    2 N / flops_per_s. A provider that raises prices at L is taken to mark the context where the
 *    first overtakes the second: kv_bytes = 2 N hbm_bytes_per_s / (flops_per_s L). 100e9 active
 *    parameters and a 200k step on a B200 (8 TB/s, 4.5 PFLOP/s dense FP8) give 1,778 B a token.
 *
 * 2. Decode memory-boundedness (prices_decode_memory_bound_ratio). Prefill (input) does 2 N FLOPs
 *    a token at utilisation u_p of peak, device time 2 N / (F u_p); decode (output) does the same
 *    2 N FLOPs a token (attention aside) at utilisation u_d, 2 N / (F u_d). With prices in
 *    proportion to device time, output / input = u_p / u_d. decode_memory_bound_ratio is that
 *    ratio, output_per_mtok / input_per_mtok: how many times the device time of a prefill token a
 *    decode token takes, i.e. decode runs at 1/ratio of prefill's compute utilisation (at
 *    u_p = 1, a compute-bound prefill, decode's step is `ratio` times its compute time: the part
 *    beyond 1 is memory and overhead). prices_decode_utilisation gives u_d = u_p / ratio.
 *
 * 3. Retention tiers (prices_match_retentions). A memory tier's drain time is capacity / read
 *    bandwidth (per device): how long it takes to read, or to overwrite, all of it. A retention
 *    of R seconds is matched to the tier whose drain time is nearest R on a log scale
 *    (|ln(R / drain)| smallest; ties to the lower index). Tiers whose drain time is at least
 *    PRICES_FAR_BELOW_RATIO times shorter than R are named beside it with their ratio R / drain:
 *    written at full speed such a tier turns over that many times within the retention.
 *
 * 4. Storage (prices_storage_per_mtok_hour). Holding a million tokens for an hour in a tier costs
 *    the share of a device's tier those tokens fill times the device's price an hour:
 *    device_usd_per_hour * kv_bytes_per_token * 1e6 / tier capacity_bytes per device.
 *
 * 5. Cached-input discount (prices_cache_discount, prices_match_discount). The discount is
 *    cached_input / input. A hit loads a token's KV from a tier, kv_bytes / read_bytes_per_s of
 *    device time; a miss recomputes it, prefill_flops_per_token / flops_per_s. With prices in
 *    proportion to device time, discount = load time / recompute time, so the tier a discount
 *    implies is the one whose load-over-recompute ratio is nearest the discount on a log scale
 *    (ties to the lower index), and the bandwidth it implies is
 *    kv_bytes / (discount * prefill_flops_per_token / flops_per_s).
 *    DeepSeek-V3 (70,272 B a token at BF16, 61 x 576 x 2; ~8.4e10 FLOPs a token at a 4k prompt)
 *    on an H800 (1,979 TFLOP/s FP8) at 0.07 / 0.27: ~6.4 GB/s a GPU, a disk tier, not host memory.
 *
 * Ownership: a struct price_sheet holds no pointers. struct price_tier's name is the caller's.
 */
#ifndef RACKPLAN_PRICES_H
#define RACKPLAN_PRICES_H

#include "diag.h"

#include <stdbool.h>
#include <stddef.h>

#define PRICES_MAX_RETENTIONS 8
#define PRICES_MAX_TIERS 8
/* A tier that turns over at least this many times within a retention is named as far below it:
 * one decade on the log scale the match uses. */
#define PRICES_FAR_BELOW_RATIO 10.0
/* The largest price a sheet may give, $ per million tokens (or per million token-hours). */
#define PRICES_MAX_USD_PER_MTOK 1e4

struct price_sheet {
    char provider[64];
    char model[128];
    char source[512]; /* the URL the prices were read from */
    char date[11];    /* YYYY-MM-DD: when they were in effect */
    double active_params; /* the active parameters a token multiplies, to assume */

    /* $ per million tokens below the long-context step (everywhere when there is none) */
    double input_per_mtok;  /* a cache miss */
    double output_per_mtok;
    bool has_cached_input;
    double cached_input_per_mtok; /* a cache hit (read) */

    long long long_context_step_tokens; /* 0: no step */
    /* above the step; each present only with a step */
    bool has_input_long, has_output_long, has_cached_input_long;
    double input_long_per_mtok, output_long_per_mtok, cached_input_long_per_mtok;

    /* how long a cached prefix is kept, seconds, increasing; 0 entries when not published */
    int retention_count;
    double cache_retention_s[PRICES_MAX_RETENTIONS];
    /* $ per million tokens to write the cache for each retention (Anthropic's 5-minute and
     * 1-hour writes); absent when writes cost what input does */
    bool has_cache_write;
    double cache_write_per_mtok[PRICES_MAX_RETENTIONS];

    bool has_storage;
    double storage_per_mtok_hour; /* $ per million tokens held an hour */

    /* the KV bytes a token of the model caches, when its architecture is published (open-weight
     * models): what the cache-discount inversion (5) loads when no model is given */
    bool has_kv_bytes_per_token;
    double kv_bytes_per_token;
};

enum prices_status {
    PRICES_OK = 0,
    PRICES_INVALID = 3,  /* the content is wrong; diagnostics say where */
    PRICES_IO_ERROR = 5, /* the file could not be read; a diagnostic says why */
};

/* Reads a sheet. On PRICES_OK *out is filled; otherwise *out is untouched and at least one
 * diagnostic (`path:line:col: error: message`) says why. */
enum prices_status prices_load(const char *path, struct price_sheet *out, struct diags *d);

/* The same from a buffer of `size` bytes; `path` names it in messages. */
enum prices_status prices_load_buffer(const char *path, const char *data, size_t size,
                                      struct price_sheet *out, struct diags *d);

/* 1. Bytes of KV a token at which reading a context of `context_tokens` at `hbm_bytes_per_s`
 * takes as long as computing 2 * active_params FLOPs at `flops_per_s`. NAN unless every argument
 * is positive and finite. */
double prices_implied_kv_bytes_per_token(double active_params, double hbm_bytes_per_s,
                                         double flops_per_s, double context_tokens);

/* 2. output_per_mtok / input_per_mtok (see the contract above). NAN unless both are positive. */
double prices_decode_memory_bound_ratio(double output_per_mtok, double input_per_mtok);

/* 2. Decode's compute utilisation implied by the ratio at prefill's `prefill_utilisation`
 * (0 < u <= 1): u / ratio. NAN outside those domains. */
double prices_decode_utilisation(double decode_memory_bound_ratio, double prefill_utilisation);

/* A memory tier of one device (HBM, host memory, local NVMe, remote storage), filled by the
 * caller from a topology. */
struct price_tier {
    const char *name;        /* the caller's; not copied */
    double capacity_bytes;   /* per device */
    double read_bytes_per_s; /* per device */
};

/* capacity / read bandwidth, seconds; NAN unless both are positive and finite. */
double prices_tier_drain_s(const struct price_tier *tier);

struct price_retention_match {
    double retention_s;
    int tier;       /* index of the nearest tier; -1 when no tier has a drain time */
    double drain_s; /* that tier's drain time */
    double ratio;   /* retention_s / drain_s */
    /* other tiers whose drain time is at least PRICES_FAR_BELOW_RATIO times below the
     * retention, in tier order, with retention_s / their drain time */
    int far_below_count;
    int far_below[PRICES_MAX_TIERS];
    double far_below_ratio[PRICES_MAX_TIERS];
};

/* 3. One match a retention, out[i] for retention_s[i]. Tiers beyond PRICES_MAX_TIERS, and tiers
 * without a drain time (prices_tier_drain_s NAN), are ignored; a retention that is not positive
 * gets tier -1. Returns the number of matches written (retention_count, or 0 when it is negative
 * or above PRICES_MAX_RETENTIONS). */
int prices_match_retentions(const double *retention_s, int retention_count,
                            const struct price_tier *tiers, int tier_count,
                            struct price_retention_match *out);

/* 4. $ per million tokens held an hour in a tier of `tier_capacity_bytes` a device, at
 * `device_usd_per_hour`. NAN unless the price is >= 0 and the sizes positive. */
double prices_storage_per_mtok_hour(double device_usd_per_hour, double kv_bytes_per_token,
                                    double tier_capacity_bytes);

/* 5. cached_input / input; NAN unless input > 0 and cached >= 0. */
double prices_cache_discount(double cached_input_per_mtok, double input_per_mtok);

/* 5. Device seconds to load a token's KV from a tier over those to recompute it:
 * (kv_bytes / read_bytes_per_s) / (prefill_flops_per_token / flops_per_s). NAN unless every
 * argument is positive and finite. */
double prices_load_over_recompute(double kv_bytes_per_token, double read_bytes_per_s,
                                  double prefill_flops_per_token, double flops_per_s);

/* 5. The read bandwidth a device needs for loading a token to cost `discount` of recomputing it:
 * kv_bytes / (discount * prefill_flops_per_token / flops_per_s). NAN unless every argument is
 * positive and finite. */
double prices_discount_implied_bytes_per_s(double discount, double kv_bytes_per_token,
                                           double prefill_flops_per_token, double flops_per_s);

struct price_discount_match {
    double discount;
    int tier;     /* index of the tier whose load/recompute is nearest; -1 when none */
    double ratio; /* that tier's load/recompute */
    double implied_bytes_per_s;
};

/* 5. The tier a discount implies (see the contract). Returns false, with *out untouched, when
 * the discount or the model's numbers are outside their domains; tier -1 when no tier has a
 * positive bandwidth. */
bool prices_match_discount(double discount, double kv_bytes_per_token,
                           double prefill_flops_per_token, double flops_per_s,
                           const struct price_tier *tiers, int tier_count,
                           struct price_discount_match *out);

#endif
