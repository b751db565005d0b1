/* price.h: the price sheet a deployment implies (issue 27, item 4): what a provider that serves a
 * workload on the deployment `serve` chooses would have to charge per million input, cached input
 * and output tokens, and per million tokens cached an hour, at the hardware's $ per device-hour.
 *
 * The model (a contract for `rackplan price`): a token is priced at the device time it takes,
 * device-seconds x $ per device-second (price_usd_per_hour / 3600), with no margin and nothing
 * idle left unpriced: a request's input and output prices add up to the device time of the whole
 * deployment serving it. Every time is the serve search's (serve.h), a roofline bound at
 * EFFICIENCY_BOUND or an estimate at calibrated efficiencies, so the prices are bounds or
 * estimates in the same sense. "A token" of input is a prompt token computed: c = isl (1 -
 * prefix_hit) of a prompt's isl; y is the output tokens a decode step yields a sequence (1, or
 * more with MTP drafts).
 *
 * - input_per_mtok, a cache miss: the device-seconds a computed prompt token costs on the chosen
 *   deployment's prefill side, times $/device-s, times 1e6.
 *     Disaggregated: the prefill pool's devices over the prompt tokens/s it serves, x n_p / (R c),
 *     R the deployment's requests/s (output tokens/s over osl); the pool's idle share (1 - rho)
 *     is charged to input.
 *     Aggregated: the prefill share of the step, (T - T_d) / P x n, T the mean step with its
 *     prefill chunks, T_d the decode-only step of the same batch (serve_decode_step), P = y B c /
 *     osl the prefill tokens a step, n the instance's devices. 0 when prefill rides free in a
 *     step bound by something else (then output_input_ratio is not defined: NAN).
 * - output_per_mtok, at the workload's lengths: the decode share of device time over output
 *   tokens/s: n_d T_d / (y B) device-s a token (aggregated: T_d the decode-only step of the
 *   chosen batch, n_d the instance's devices).
 * - output_per_mtok_at[L], for a prompt of L tokens (L in price_contexts, those with L + osl
 *   within the model's maximum context; all when it is unknown): the chosen decode layout (its
 *   instance's devices, TP, EP, PP, on the same slice of the topology), its largest batch B_L
 *   within the TPOT target and HBM for requests of L prompt and osl output tokens
 *   (serve_largest_decode_batch), n_d T_d(B_L) / (y B_L). NAN when not even one sequence fits.
 *   The same at the workload's own prompt, isl, is `base_output_per_mtok` (the largest batch
 *   there, which the chosen point's batch may be below).
 * - long_context_step_tokens: the smallest prompt length L >= isl at which the price above,
 *   output_at(L), reaches PRICE_STEP_FACTOR x output_at(isl) (the price rises by half), found by
 *   bisection over whole tokens up to the model's maximum context less osl (PRICE_MAX_CONTEXT when
 *   it is unknown); output_at is taken as never falling with L (a longer context holds fewer
 *   sequences and reads more KV each). 0 when not reached within that range.
 * - kv_bytes_per_token: model_kv_bytes_per_token at the KV precision (all layers, index keys
 *   included), the bytes a cached token holds and a hit loads.
 * - per tier i of the topology (topology_tier: HBM, host, NVMe, remote):
 *   load_s_per_token = kv_bytes_per_token / read_bytes_per_s_per_device: one device reads the
 *   token's whole KV at its share of the tier's bandwidth (exact for a data-parallel attention
 *   rank, which holds a sequence's whole KV, and for KV split by heads or by pipeline stage; a
 *   lower bound for an MLA latent that every device of a TP group reads whole);
 *   cached_input_per_mtok = load_s_per_token x $/device-s x 1e6; cheaper_than_recompute when it
 *   is below input_per_mtok;
 *   storage_per_mtok_hour = the tier's own usd_per_gb_hour x kv_bytes x 1e6 / 1e9 when the
 *   topology gives one, else prices_storage_per_mtok_hour(device $/h, kv_bytes, the tier's
 *   bytes_per_device): the share of a device's tier a million tokens fill, times the device's
 *   price an hour.
 * - output_input_ratio = output_per_mtok / input_per_mtok; NAN when input is 0.
 *
 * Ownership: a struct price_sheet_forward holds no pointers. price_decode_init copies what it
 * needs; a struct price_decode owns nothing on the heap (release is not needed).
 */
#ifndef RACKPLAN_PRICE_H
#define RACKPLAN_PRICE_H

#include "graph.h"
#include "serve.h"
#include "topology.h"

#include <stdbool.h>
#include <stdint.h>

/* The prompt lengths output_per_mtok_at is given at: 8k, 32k, 128k, 200k and 1M tokens. */
#define PRICE_CONTEXTS 5
extern const int64_t price_contexts[PRICE_CONTEXTS];
/* The long-context step: where the output price has risen by half. */
#define PRICE_STEP_FACTOR 1.5
/* The longest prompt the step is looked for at when the model gives no maximum context. */
#define PRICE_MAX_CONTEXT 1048576

/* The chosen decode layout as its instance sees the hardware, for pricing it at other contexts. */
struct price_decode {
    struct serve_pool pool;      /* the decode pool; its topology is replaced by `topology` below
                                  * at every call (the struct may be copied) */
    struct topology topology;    /* the instance's slice of the pool's topology, or the topology
                                  * when the instance spans whole domains */
    struct graph_summary graph;
    struct layout layout;
    struct serve_workload workload;
};

/* Sets *out up for layout `l` of `pool` and workload `w`. False (out of memory, or a slice the
 * topology does not have) leaves *out unusable. */
bool price_decode_init(struct price_decode *out, const struct serve_pool *pool, const struct layout *l,
                       const struct serve_workload *w);

/* $ per million output tokens for requests of `prompt_tokens` prompt tokens and the workload's
 * osl on the layout, at its largest batch within the TPOT target and HBM (the contract's
 * output_at); the batch to *batch (may be NULL). NAN, *batch 0, when no batch fits or the pool has
 * no price. */
double price_output_at(const struct price_decode *d, int64_t prompt_tokens, int64_t *batch);

/* The smallest prompt length in [from, to] at which price_output_at reaches `factor` x `base`,
 * by bisection; a length at which not one sequence fits (NAN) counts as a price beyond any. 0 when
 * price_output_at(to) stays below it (or base or factor is not positive), `from` when it is
 * already there. */
int64_t price_step_context(const struct price_decode *d, double base, double factor, int64_t from, int64_t to);

/* One memory tier's prices. */
struct price_tier_cost {
    struct memory_tier tier;      /* a copy of topology_tier's */
    double load_s_per_token;      /* device-seconds to load a token's KV from the tier */
    double cached_input_per_mtok; /* $ */
    bool cheaper_than_recompute;  /* below input_per_mtok */
    double storage_per_mtok_hour; /* $ */
    bool storage_from_tier_price; /* from the tier's usd_per_gb_hour, not the device's price */
};

struct price_sheet_forward {
    double usd_per_device_hour;
    double kv_bytes_per_token;
    double input_device_s_per_token, output_device_s_per_token; /* the chosen deployment's */
    double input_per_mtok;   /* $ per million computed prompt tokens */
    double output_per_mtok;  /* $ per million output tokens at the workload's lengths */
    double base_output_per_mtok; /* price_output_at the workload's isl (the step's reference) */
    int64_t base_batch;
    int context_count;       /* the price_contexts within the model's maximum, in order */
    int64_t context_tokens[PRICE_CONTEXTS];
    double output_per_mtok_at[PRICE_CONTEXTS]; /* NAN: no batch fits */
    int64_t batch_at[PRICE_CONTEXTS];
    int tier_count;
    struct price_tier_cost tiers[TOPOLOGY_MAX_TIERS];
    double output_input_ratio;         /* NAN when input_per_mtok is 0 */
    int64_t long_context_step_tokens;  /* 0: not reached */
    int64_t step_searched_to;          /* the longest prompt the step was looked for at */
};

enum price_status {
    PRICE_OK = 0,
    PRICE_NO_PRICE,  /* the pool has no $ per device-hour */
    PRICE_NO_MEMORY, /* the instance's graph could not be built */
};

/* The sheet of point `p` (found by serve_search on `decode_pool`, prefill on the same hardware)
 * for workload `w`, as the contract above says. On PRICE_OK *out is filled; otherwise it is
 * untouched. */
enum price_status price_forward(const struct serve_pool *decode_pool, const struct serve_workload *w,
                                const struct serve_point *p, struct price_sheet_forward *out);

/* The tier costs alone (the contract's per-tier lines), for `t`'s tiers at `usd_per_device_hour`
 * with the KV of a token `kv_bytes_per_token` and a miss at `input_per_mtok` (0: unknown, nothing
 * is cheaper): writes topology_tier_count(t) entries and returns their number. */
int price_tiers(const struct topology *t, double usd_per_device_hour, double kv_bytes_per_token,
                double input_per_mtok, struct price_tier_cost out[TOPOLOGY_MAX_TIERS]);

#endif
