/* The price sheet a deployment implies (price.h, issue 27 item 4) against hand arithmetic: storage
 * per Mtok-hour by the formula, the cached-input load cost of DeepSeek-V3's KV on the H800's
 * tiers, the output/input ratio and the contract's bookkeeping (a request's input and output prices
 * add up to the device time of the deployment serving it), and the long-context step, checked by
 * pricing output at the step and a token before it.
 *
 * Every expected number is worked out beside its check; none is pasted from a run. */
#include "fixtures.h"
#include "price.h"
#include "prices.h"
#include "serve.h"
#include "tap.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

static struct serve_pool pool_of(const struct model *m, const struct topology *t)
{
    struct workload precisions = {.batch = 1, .weights = m->weights_precision,
                                  .expert_weights = m->expert_weights_precision, .kv = m->kv_precision,
                                  .reserve_fraction = PLAN_DEFAULT_RESERVE_FRACTION, .reserve_bytes = -1};
    return (struct serve_pool){.model = m, .topology = t, .precisions = precisions,
                               .efficiency = EFFICIENCY_BOUND, .price_usd_per_hour = t->price_usd_per_hour};
}

static struct serve_workload workload(int64_t isl, int64_t osl)
{
    return (struct serve_workload){.isl = isl, .osl = osl, .mtp_accept = 1,
                                   .chunk_tokens = SERVE_DEFAULT_CHUNK_TOKENS, .mode = SERVE_BEST,
                                   .arrivals = SERVE_CLOSED};
}

/* ---- the KV of a token, and the tiers ---- */

static void tiers(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/hgx-h800.xml");
    /* DeepSeek-V3's MLA caches kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements a token a
     * layer, 61 layers, BF16: 61 x 576 x 2 = 70,272 B. */
    double kv = model_kv_bytes_per_token(&m, PREC_BF16);
    CHECK_EQ(kv, 70272, "DeepSeek-V3: 61 x 576 x 2 = 70,272 B of KV a token at BF16");

    struct price_tier_cost c[TOPOLOGY_MAX_TIERS];
    /* the H800 node: HBM (tier 0) and 3FS (remote); DeepSeek's published miss, $0.27 */
    int n = price_tiers(&t, 2, kv, 0.27, c);
    CHECK_EQ(n, 2, "the H800 node has HBM and a remote tier");
    CHECK(c[0].tier.kind == TIER_HBM && c[1].tier.kind == TIER_REMOTE, "HBM first, then 3FS");

    /* Load time: kv / read bandwidth a device.
     *   HBM: 70,272 / 3.35e12 = 2.09767e-8 s;
     *   3FS: 42.9e9 B/s a node of 8 GPUs = 5.3625e9 a GPU; 70,272 / 5.3625e9 = 1.31044e-5 s. */
    CHECK_REL(c[0].load_s_per_token, 2.09767e-8, 1e-5, "HBM: 70,272 B / 3.35 TB/s = 20.98 ns a token");
    CHECK_REL(c[1].load_s_per_token, 1.31044e-5, 1e-5, "3FS: 70,272 B / 5.3625 GB/s = 13.10 us a token");
    /* Cached input: load time x $2 / 3600 s x 1e6 tokens.
     *   HBM: 2.09767e-8 x 555.556 = 1.16537e-5 $/Mtok;
     *   3FS: 1.31044e-5 x 555.556 = 7.28022e-3 $/Mtok. */
    CHECK_REL(c[0].cached_input_per_mtok, 1.16537e-5, 1e-5, "HBM hit: $0.0000117 a million tokens at $2/h");
    CHECK_REL(c[1].cached_input_per_mtok, 7.28022e-3, 1e-5, "3FS hit: $0.00728 a million tokens at $2/h");
    CHECK(c[0].cheaper_than_recompute && c[1].cheaper_than_recompute, "both below a $0.27 miss");
    /* Against a recompute priced at $0.005 the 3FS load ($0.00728) is dearer, HBM's still cheaper. */
    price_tiers(&t, 2, kv, 0.005, c);
    CHECK(c[0].cheaper_than_recompute && !c[1].cheaper_than_recompute, "3FS dearer than a $0.005 recompute");

    /* Storage per Mtok-hour = device $/h x (bytes a token x 1e6 / tier capacity per device):
     *   HBM: 2 x 70,272e6 / 85,520,809,984 (81,559 MiB) = 2 x 0.82169474322 = 1.64338948645 $;
     *   3FS: 2 x 70,272e6 / 19.93e12 = 2 x 3.52594e-3 = 7.05188e-3 $. */
    CHECK_REL(c[0].storage_per_mtok_hour, 1.64338948645, 1e-9, "HBM: $2 x 70.272 GB / 85.52 GB = $1.6434 a Mtok-hour");
    CHECK_REL(c[1].storage_per_mtok_hour, 7.05188e-3, 1e-5, "3FS: $2 x 70.272 GB / 19.93 TB = $0.00705");
    CHECK(!c[0].storage_from_tier_price && !c[1].storage_from_tier_price, "no tier price: the device's share");
    /* A tier with its own price: $0.01 a GB-hour x 70.272 GB a million tokens = $0.70272. */
    t.tiers[0].usd_per_gb_hour = 0.01;
    price_tiers(&t, 2, kv, 0.27, c);
    CHECK_REL(c[1].storage_per_mtok_hour, 0.70272, 1e-12, "a tier's own $0.01/GB-h: $0.70272 a Mtok-hour");
    CHECK(c[1].storage_from_tier_price, "and says so");
}

/* The sheets' optional kv_bytes_per_token: DeepSeek's gives V3's 61 x 576 x 2 = 70,272 B; 0 B is
 * refused where it stands. */
static void sheet_kv(void)
{
    struct price_sheet sheet;
    struct diags d;
    diags_init(&d);
    CHECK(prices_load("prices/deepseek-v3.yaml", &sheet, &d) == PRICES_OK, "DeepSeek's sheet reads");
    CHECK(sheet.has_kv_bytes_per_token && sheet.kv_bytes_per_token == 61 * 576 * 2,
          "its kv_bytes_per_token: 61 x 576 x 2 = 70,272");
    diags_release(&d);
    static const char text[] = "provider: P\nmodel: M\nsource: https://example.com\ndate: 2025-01-01\n"
                               "active_params: 1e9\ninput: 1\noutput: 2\nkv_bytes_per_token: 0\n";
    diags_init(&d);
    CHECK(prices_load_buffer("t.yaml", text, sizeof text - 1, &sheet, &d) == PRICES_INVALID, "0 B a token refused");
    char buffer[512] = "";
    FILE *f = fmemopen(buffer, sizeof buffer - 1, "w");
    if (f) {
        diags_print(&d, f);
        fclose(f);
    }
    CHECK(strncmp(buffer, "t.yaml:8:21: error:", 19) == 0, "at its value, t.yaml:8:21: %s", buffer);
    diags_release(&d);
}

/* ---- the forward sheet ---- */

/* The bookkeeping of the contract for point `p`: input x computed tokens + output x osl =
 * the deployment's device-seconds a request, devices / requests/s = osl / tokens/s per device. */
static void check_books(const struct price_sheet_forward *f, const struct serve_point *p,
                        const struct serve_workload *w, const char *what)
{
    double computed = (double)w->isl * (1 - w->prefix_hit);
    double request_s = f->input_device_s_per_token * computed + f->output_device_s_per_token * (double)w->osl;
    char name[200];
    snprintf(name, sizeof name, "%s: input and output add up to the deployment's device time a request", what);
    CHECK_REL(request_s, (double)w->osl / p->tokens_per_s_per_device, 1e-9, name);
    /* $ per Mtok = device-s a token x $/h / 3600 x 1e6 */
    snprintf(name, sizeof name, "%s: input $/Mtok = device-s x $%g / 3600 x 1e6", what, f->usd_per_device_hour);
    CHECK_REL(f->input_per_mtok, f->input_device_s_per_token * f->usd_per_device_hour / 3600 * 1e6, 1e-12, name);
    snprintf(name, sizeof name, "%s: output/input ratio is output $ over input $", what);
    CHECK_REL(f->output_input_ratio, f->output_per_mtok / f->input_per_mtok, 1e-12, name);
}

static void forward_deepseek(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/hgx-h800.xml");
    struct serve_pool pool = pool_of(&m, &t);
    struct serve_workload w = workload(4096, 512);
    struct serve_result r = {0};
    if (!CHECK(serve_search(&pool, NULL, &w, &r) && r.found, "DeepSeek-V3 on H800s: a deployment (no budget)")) {
        serve_result_release(&r);
        return;
    }
    struct price_sheet_forward f;
    if (!CHECK(price_forward(&pool, &w, &r.best, &f) == PRICE_OK, "priced")) {
        serve_result_release(&r);
        return;
    }
    const struct serve_point *p = &r.best;
    CHECK(p->mode == SERVE_DISAGGREGATED, "disaggregated, as serve chooses");
    CHECK_EQ(f.kv_bytes_per_token, 70272, "the sheet's KV: 70,272 B a token");
    check_books(&f, p, &w, "DeepSeek-V3 disaggregated");
    /* Disaggregated input: x n_p devices over R c prompt tokens/s, R = output tokens/s / osl. */
    double requests_per_s = p->tokens_per_s_per_device * (double)p->devices / 512;
    CHECK_REL(f.input_device_s_per_token,
              (double)(p->prefill_instances * p->prefill.layout.devices) / (requests_per_s * 4096), 1e-12,
              "input: the prefill pool's devices over the prompt tokens/s it serves");
    /* Output: n_d T_d / B (no MTP: y = 1). */
    CHECK_REL(f.output_device_s_per_token, (double)p->decode.layout.devices * p->decode.step_s / (double)p->decode.batch,
              1e-12, "output: the decode instance's devices x its step over its batch");
    CHECK_EQ(f.usd_per_device_hour, 2, "the H800's $2 a GPU-hour (DeepSeek's costing)");
    /* the cached-input rows are price_tiers' at the sheet's input: 3FS's load $0.00728 */
    CHECK_REL(f.tiers[1].cached_input_per_mtok, 7.28022e-3, 1e-5, "3FS hit: $0.00728 a million tokens");

    /* Contexts: DeepSeek-V3's 163,840 tokens hold 8k, 32k and 128k prompts with 512 out, not 200k
     * (200,512 > 163,840) nor 1M. */
    CHECK_EQ(f.context_count, 3, "8k, 32k and 128k within DeepSeek-V3's context");
    CHECK_EQ(f.context_tokens[2], 131072, "the third is 128k");
    struct price_decode *d = malloc(sizeof *d);
    if (CHECK(d && price_decode_init(d, &pool, &p->decode.layout, &w), "the decode layout set up")) {
        CHECK_REL(price_output_at(d, 131072, NULL), f.output_per_mtok_at[2], 1e-12, "the 128k price is price_output_at's");
        double base = price_output_at(d, 4096, NULL);
        CHECK_REL(base, f.base_output_per_mtok, 1e-12, "the step's reference: the price at the workload's 4,096");
        /* A longer prompt holds fewer sequences and reads more KV each: the price rises. */
        CHECK(f.output_per_mtok_at[0] > base && f.output_per_mtok_at[1] > f.output_per_mtok_at[0] &&
                  f.output_per_mtok_at[2] > f.output_per_mtok_at[1],
              "output dearer at 8k than 4k, at 32k than 8k, at 128k than 32k");
        /* The step: the price reaches 1.5 x the 4k price there, and not a token before. */
        int64_t step = f.long_context_step_tokens;
        CHECK(step > 4096 && step <= 163840 - 512, "a long-context step within the context");
        CHECK(price_output_at(d, step, NULL) >= 1.5 * base, "at the step, output costs 1.5 x its 4k price or more");
        CHECK(price_output_at(d, step - 1, NULL) < 1.5 * base, "a token before it, less");
        /* price_step_context with a factor never reached within the range: 0 */
        CHECK_EQ(price_step_context(d, base, 1e6, 4096, 8192), 0, "a millionfold rise is not reached by 8k");
        CHECK_EQ(price_step_context(d, base, 0.5, 4096, 8192), 4096, "half the price is reached at once");
    }
    free(d);
    /* No price: nothing to sheet. */
    struct serve_pool free_pool = pool;
    free_pool.price_usd_per_hour = 0;
    CHECK(price_forward(&free_pool, &w, &r.best, &f) == PRICE_NO_PRICE, "no $/device-hour: PRICE_NO_PRICE");
    serve_result_release(&r);
}

static void forward_aggregated(void)
{
    struct model m = fixture_model("models/llama-3.1-70b.yaml");
    struct topology t = fixture_topology("topologies/hgx-h100.xml");
    struct serve_pool pool = pool_of(&m, &t);
    if (pool.price_usd_per_hour <= 0)
        pool.price_usd_per_hour = 2.5;
    struct serve_workload w = workload(2048, 256);
    w.mode = SERVE_AGGREGATED;
    w.tpot_s = 0.03;
    struct serve_result r = {0};
    if (!CHECK(serve_search(&pool, NULL, &w, &r) && r.found, "Llama 3.1 70B on H100s, aggregated: a deployment")) {
        serve_result_release(&r);
        return;
    }
    struct price_sheet_forward f;
    if (CHECK(price_forward(&pool, &w, &r.best, &f) == PRICE_OK, "priced")) {
        check_books(&f, &r.best, &w, "Llama 3.1 70B aggregated");
        CHECK(f.input_per_mtok > 0 && f.output_per_mtok > 0, "prefill takes a share of the step");
        /* Llama 3.1 70B takes 128k (131,072): 8k and 32k prompts with 256 out, not 128k. */
        CHECK_EQ(f.context_count, 2, "8k and 32k within Llama's 131,072 tokens");
        for (int i = 0; i < f.context_count; i++)
            CHECK(isnan(f.output_per_mtok_at[i]) || f.batch_at[i] > 0, "a price at a context has a batch");
    }
    serve_result_release(&r);
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    tiers();
    sheet_kv();
    forward_deepseek();
    forward_aggregated();
    return tap_done();
}
