/* kvcache.h: where a prompt's cached prefix lives, and the hit rate a rack's memory tiers buy
 * (issue 27, item 2).
 *
 * Reuse. A share F (`reuse`) of a prompt's tokens repeats an earlier prompt's prefix (a system
 * prompt, a conversation's history, an agent's loop); the time since that prefix was last
 * touched (written, or read by a hit), the reuse interval I, has a law: exponential of mean mu
 * (`exp:MEAN_S`), or given by quantiles (a CSV of `quantile,seconds` rows, linear between them,
 * the last taken as the most: the rest of the reuses come later than any tier keeps them).
 *
 * Tiers. HBM (what is left of it beside the weights, the batch's KV, activations and reserve),
 * host memory, local NVMe and remote storage, each with a capacity C_i and read (and write)
 * bandwidth per device (topology.h). Every token a request touches, computed or loaded, is in
 * every tier (write through, as SGLang HiCache, LMCache and Dynamo's KV block manager do by
 * default; a hit from a lower tier is loaded back into HBM and refreshed in every tier), and each
 * tier keeps the least recently touched out (LRU). So tier i holds what was touched in the last
 * R_i seconds, its characteristic time (Che's approximation, with renewal reuse intervals): the
 * distinct tokens touched in a window of T seconds a device are
 *   D(T) = integral from 0 to T of (n + F q Pr[I > u]) du = n T + F q integral_0^T Pr[I > u] du,
 * n the tokens touched for the first time a second (the prompts' rest and the outputs a next
 * turn repeats), q the prompt tokens a second (F q of them repeat a prefix: a reuse touched u
 * seconds ago is already in the window when I < u), and R_i solves C_i = D(R_i) b (infinite
 * when even D(infinity) fits: no new tokens and every reuse within a bounded time). So a prefix of
 * interval I is held by every tier with R_i > I, and served by the fastest of them. Every tier
 * sees the same touched stream, so each tier's R_i solves its own equation with the same D. A hit
 * in tier i loads the prefix's KV, F isl tokens of b bytes a device, in L_i = F isl b / read_i;
 * recomputing it takes P (the prefix's prefill on the instance). A tier is worth it when L_i < P;
 * a hit found only in tiers that are not is recomputed. The hit share of tier i (worth it) is
 *   h_i = F (Pr[I < R_i] - Pr[I < max R_j over the worth-it tiers j faster than i])^+,
 * and the workload's derived prefix hit is the sum of the h_i. A tier is read at
 * h_i x (prompt tokens a second a device) x b bytes/s, and written at what it did not hold,
 * (n + F q Pr[I > R_i]) b bytes/s: new tokens, and the reuses older than R_i, recomputed or
 * promoted from another tier.
 *
 * A hit and a miss touch the reused prefix alike (the miss recomputes it into the same place),
 * so at a given rate the hit does not change what the tiers hold; the rate, which the hit sets,
 * does: serve_with_reuse settles the two by substitution.
 *
 * Not modelled: tiers' latency per request (only bandwidth), sharing of one prefix by several DP
 * ranks, partial hits within a tier (a prefix is held whole or not: a reused prefix is touched
 * whole, so its tokens share one age, and a radix tree's leaf-first eviction, which keeps a
 * partly evicted prefix's head, is not), eviction by anything but recency, a stream that is not
 * stationary (a conversation's prefixes growing round by round).
 */
#ifndef RACKPLAN_KVCACHE_H
#define RACKPLAN_KVCACHE_H

#include "diag.h"
#include "serve.h"
#include "topology.h"

#include <stdbool.h>
#include <stdint.h>

#define KV_MAX_TIERS 4
#define KV_MAX_QUANTILES 64

enum kv_interval_kind { KV_INTERVAL_NONE, KV_INTERVAL_EXP, KV_INTERVAL_QUANTILES };

struct kv_reuse {
    double share; /* F in [0, 1] */
    enum kv_interval_kind kind;
    double mean_s;          /* exp */
    int count;              /* quantiles: count points (p, s), p increasing in [0, 1], s non-decreasing */
    double p[KV_MAX_QUANTILES], s[KV_MAX_QUANTILES];
};

/* Pr[I < t]: 0 for t <= 0; exp: 1 - e^(-t / mu); quantiles: linear between the points, 0 below
 * the first (from p = 0 at 0 s when the first point's p > 0), the last point's p beyond it. */
double kv_interval_cdf(const struct kv_reuse *r, double t);

/* The integral of Pr[I > u] from 0 to t, seconds (t may be infinite): exp mu (1 - e^(-t / mu));
 * quantiles a trapezoid a segment, (t - last s)(1 - last p) beyond the last point (infinite there
 * when t is and the last p < 1). 0 for t <= 0. */
double kv_interval_survival_s(const struct kv_reuse *r, double t);

/* D(T) above: the distinct tokens touched in T seconds, n T + reused_tokens_per_s x
 * kv_interval_survival_s(T) (reused_tokens_per_s is F q). */
double kv_touched_tokens(const struct kv_reuse *r, double new_tokens_per_s, double reused_tokens_per_s, double t);

/* The residency R solving D(R) = capacity_tokens: 0 with no capacity, infinite when D never
 * exceeds it; else by bisection to a relative 1e-15. */
double kv_residency_s(const struct kv_reuse *r, double new_tokens_per_s, double reused_tokens_per_s,
                      double capacity_tokens);

/* Parses `exp:MEAN_S` (MEAN_S > 0, seconds). False with a message in `error` otherwise. */
bool kv_reuse_parse_interval(const char *text, struct kv_reuse *out, char *error, size_t error_size);

/* Reads a CSV of `quantile,seconds` rows (a header `quantile,seconds` first; `#` comments and
 * blank lines skipped): quantiles in (0, 1], increasing; seconds >= 0, non-decreasing. Errors as
 * `path:line:col: error: message` diagnostics; false then, *out untouched. */
bool kv_reuse_read_csv(const char *path, struct kv_reuse *out, struct diags *d);

/* The same from `size` bytes of `data`; `path` names it in messages. out->share is kept. */
bool kv_reuse_read_buffer(const char *path, const char *data, size_t size, struct kv_reuse *out, struct diags *d);

struct kv_tier_input {
    enum tier_kind kind; /* TIER_HBM for the first */
    char name[64];
    double capacity_bytes;   /* per device, for the prefix cache */
    double read_bytes_per_s; /* per device */
};

struct kv_cache_input {
    int tier_count; /* fastest first */
    struct kv_tier_input tiers[KV_MAX_TIERS];
    struct kv_reuse reuse;
    double prompt_tokens;       /* isl */
    double bytes_per_token;     /* b: a token's KV on one device */
    double new_tokens_per_s;    /* n: per device, touched for the first time (the prompts' rest, outputs kept) */
    double prompt_tokens_per_s; /* q: per device, prompts' tokens arriving (F q repeat a prefix) */
    double recompute_s;         /* P: the reused prefix's prefill on the instance */
};

struct kv_tier_result {
    enum tier_kind kind;
    char name[64];
    double capacity_bytes; /* per device */
    double residency_s;    /* R_i: C_i = D(R_i) b; infinite when everything touched fits */
    double hit_share;      /* h_i: of a prompt's tokens */
    double load_s;         /* L_i: a hit's prefix loaded */
    double recompute_s;    /* P */
    double read_bytes_per_s, write_bytes_per_s; /* per device; written: (n + F q Pr[I > R_i]) b */
    bool worth_it;         /* L_i < P */
};

struct kv_cache_result {
    int tier_count;
    struct kv_tier_result tiers[KV_MAX_TIERS];
    double prefix_hit;  /* sum of the hit shares */
    double load_s;      /* a request's mean load time, sum h_i / F x L_i (0 when F = 0) */
};

/* The model above. in->tier_count in [1, KV_MAX_TIERS]; every number finite and >= 0. */
void kv_cache_tiers(const struct kv_cache_input *in, struct kv_cache_result *out);

/* The input for a serve point: its instance's tiers from the topology (HBM: the free bytes at the
 * point's batch), b, n and q from the model and the point's rate (aggregated: the instance, n the
 * prompts' unrepeated share and the outputs; disaggregated: the prefill instances, which compute
 * and so cache the prompts, n their unrepeated share only), P the prefix's prefill on that
 * instance. */
bool kv_cache_input_of(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                       const struct serve_workload *w, const struct serve_point *p, const struct kv_reuse *reuse,
                       struct kv_cache_input *out);

/* serve_search with the prefix hit the tiers give (at most SERVE_MOST_PREFIX_HIT): from w's
 * prefix_hit, the search, the tiers' hit at its best point, the search again at that hit (moving on
 * as before: extrapolated by Aitken's rule from two substitution steps; turning back: halfway),
 * until it moves by less than
 * 1e-4 (at most KV_SETTLE_ROUNDS searches). When it does not settle, the best deployment flips as
 * the hit moves (one that would serve more needs a hit it does not hold): the answer is then the
 * round whose deployment served the most among those whose tiers held at least the hit it was
 * searched at, a deployment that serves at least that much at its own hit (its loads, which only
 * TTFT sees, taken at the round's); its cache->prefix_hit is then above w_out's, the hit used. Failing that too, with w's mode
 * best, each mode is settled alone and the one that serves more kept, w_out's mode then that
 * mode. *w_out is the workload searched last and *out its result (to be released), *cache the
 * tiers at its best point (zero when none was found). False only when serve_search fails (out of
 * memory). */
#define KV_SETTLE_ROUNDS 16
bool serve_with_reuse(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                      const struct serve_workload *w, const struct kv_reuse *reuse, struct serve_result *out,
                      struct serve_workload *w_out, struct kv_cache_result *cache);

/* The hit settles by substitution from a cold cache (0). At a given rate the hit does not change
 * what the tiers hold, so a higher hit only shortens the residencies (more requests a second
 * touch more tokens): one steady state, unless the deployment flips as the hit moves and there
 * is none; then a settling from a warm cache (F) can end at another deployment and hit. The cold
 * one is the answer. serve_with_reuse from F at `cold` (the workload a cold settling used, its
 * prefix_hit the cold hit): *warm_hit that hit when it is above the cold one by more than 1e-3,
 * else -1. False only when a search fails (out of memory). */
bool serve_warm_hit(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                    const struct serve_workload *cold, const struct kv_reuse *reuse, double *warm_hit);

/* Tier sizing. The capacity of one tier kind a device, over KV_SIZING_POINTS multiples of the
 * topology's (0, 1/4, 1/2, 1, 2, 4, 8, 16 times; 0 removes the tier): at each, serve_with_reuse
 * on the topologies so changed (both pools' where they have the tier), and the cost of a device
 * an hour, the pool's price plus the tier's GB a device times usd_per_gb_hour; so $ per million
 * output tokens = that / (tokens/s per device x 3600) x 1e6. The best point has the least $/Mtok
 * (ties to the smaller capacity). A point where no deployment meets the targets has found false. */
#define KV_SIZING_POINTS 8

struct kv_sizing_point {
    bool found;
    double capacity_bytes; /* a device's */
    double prefix_hit, tokens_per_s_per_device, usd_per_hour_per_device, cost_per_mtok;
};

struct kv_sizing {
    enum tier_kind kind;
    char name[64];
    double usd_per_gb_hour;
    int count, best; /* best: -1 when no point was found */
    struct kv_sizing_point points[KV_SIZING_POINTS];
};

/* False when the decode pool's topology has no tier of `kind`, the pool has no price, or a search
 * fails (out of memory). */
bool kv_size_tier(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                  const struct serve_workload *w, const struct kv_reuse *reuse, enum tier_kind kind,
                  double usd_per_gb_hour, struct kv_sizing *out);

#endif
