/* Price sheets (prices.h, issue 27 item 4) against hand arithmetic: the long-context inversion,
 * decode memory-boundedness, retention tiers, storage per Mtok-hour, the cached-input discount and
 * the tier it implies; every reader error with its exact `path:line:col` text (also an empty
 * file, a list instead of a mapping); and every shipped sheet in prices/.
 *
 * Every expected number is worked out beside its check; none is pasted from a run. */
#include "prices.h"
#include "tap.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- 1. the long-context step ---- */

static void long_context_step(void)
{
    /* The hand check: a 200k step with 100B active parameters.
     * B200, FP8 (topologies/hgx-b200.xml: 8.0 TB/s, 4.5 PFLOP/s dense FP8):
     *   kv = 2 x 100e9 x 8e12 / (4.5e15 x 200e3) = 1.6e24 / 9e20 = 1,777.8 B, "about 2 kB". */
    CHECK_REL(prices_implied_kv_bytes_per_token(100e9, 8e12, 4.5e15, 200e3), 1777.78, 1e-5,
              "100B active, 200k step, B200 FP8: 1,778 B of KV a token");
    /* H100, BF16 (3.35 TB/s, 989 TFLOP/s dense BF16):
     *   kv = 2 x 100e9 x 3.35e12 / (989e12 x 200e3) = 6.7e23 / 1.978e20 = 3,387.3 B. */
    CHECK_REL(prices_implied_kv_bytes_per_token(100e9, 3.35e12, 989e12, 200e3), 3387.26, 1e-5,
              "100B active, 200k step, H100 BF16: 3,387 B of KV a token");
    /* Halving the step doubles the KV a token: 2 x 1,777.8 = 3,555.6 B at 100k. */
    CHECK_REL(prices_implied_kv_bytes_per_token(100e9, 8e12, 4.5e15, 100e3), 3555.56, 1e-5,
              "a 100k step implies twice the KV of a 200k one");
    CHECK(isnan(prices_implied_kv_bytes_per_token(100e9, 8e12, 4.5e15, 0)), "no step: NAN");
    CHECK(isnan(prices_implied_kv_bytes_per_token(-1, 8e12, 4.5e15, 2e5)), "negative size: NAN");
    CHECK(isnan(prices_implied_kv_bytes_per_token(100e9, 8e12, INFINITY, 2e5)), "infinite FLOP/s: NAN");
}

/* ---- 2. decode memory-boundedness ---- */

static void decode_ratio(void)
{
    /* DeepSeek-V3: output / input = 1.10 / 0.27 = 4.0741: a decode token takes 4.07 times the
     * device time of a prefill token. */
    CHECK_REL(prices_decode_memory_bound_ratio(1.10, 0.27), 4.07407, 1e-5, "DeepSeek-V3: 1.10 / 0.27 = 4.074");
    /* Claude Sonnet 4: 15 / 3 = 5; Gemini 2.5 Pro: 10 / 1.25 = 8. */
    CHECK_EQ(prices_decode_memory_bound_ratio(15, 3), 5, "Sonnet 4: 15 / 3 = 5");
    CHECK_EQ(prices_decode_memory_bound_ratio(10, 1.25), 8, "Gemini 2.5 Pro: 10 / 1.25 = 8");
    /* At a compute-bound prefill (u_p = 1) decode runs at 1 / 5 = 0.2 of peak; at u_p = 0.5,
     * DeepSeek-V3's decode at 0.5 / 4.0741 = 0.5 x 0.27 / 1.10 = 0.12273. */
    CHECK_REL(prices_decode_utilisation(5, 1), 0.2, 1e-12, "ratio 5, u_p 1: decode at 0.2 of peak");
    CHECK_REL(prices_decode_utilisation(1.10 / 0.27, 0.5), 0.122727, 1e-5, "ratio 4.07, u_p 0.5: 0.1227");
    CHECK(isnan(prices_decode_memory_bound_ratio(1, 0)), "free input: NAN");
    CHECK(isnan(prices_decode_utilisation(5, 1.5)), "utilisation above 1: NAN");
    CHECK(isnan(prices_decode_utilisation(0, 0.5)), "ratio 0: NAN");
}

/* ---- 3. retention tiers ---- */

/* A device's tiers for the hand cases. The drain times: HBM 186 GB at 8 TB/s (23 ms),
 * host memory 480 GB at 0.5 TB/s (0.96 s); then a local NVMe share of 3.84 TB at 6 GB/s
 * (640 s) and remote storage of 100 TB at 2.5 GB/s (40,000 s). Illustrative, not a topology's. */
static const struct price_tier hand_tiers[] = {
    {"hbm", 186e9, 8e12},
    {"host", 480e9, 0.5e12},
    {"nvme", 3.84e12, 6e9},
    {"remote", 100e12, 2.5e9},
};

static void retention_tiers(void)
{
    CHECK_REL(prices_tier_drain_s(&hand_tiers[0]), 0.02325, 1e-12, "HBM: 186e9 / 8e12 = 23.25 ms");
    CHECK_REL(prices_tier_drain_s(&hand_tiers[1]), 0.96, 1e-12, "host: 480e9 / 0.5e12 = 0.96 s");
    CHECK_REL(prices_tier_drain_s(&hand_tiers[2]), 640, 1e-12, "NVMe: 3.84e12 / 6e9 = 640 s");
    CHECK_REL(prices_tier_drain_s(&hand_tiers[3]), 40000, 1e-12, "remote: 100e12 / 2.5e9 = 40,000 s");

    /* 300 s (Anthropic's 5 minutes): |ln(300 / d)| for d = 0.02325, 0.96, 640, 40000 is
     * ln 12,903 = 9.47, ln 312.5 = 5.74, |ln 0.469| = 0.76, |ln 0.0075| = 4.89: NVMe, ratio
     * 300 / 640 = 0.46875. Far below (ratio >= 10): HBM 300 / 0.02325 = 12,903.2 and host
     * 300 / 0.96 = 312.5. 1 h: ln(3600 / 640) = ln 5.625 = 1.73 against ln(40000 / 3600) = 2.41:
     * NVMe again, ratio 5.625; HBM 154,838.7 and host 3,750 far below.
     * 1 s: |ln(1 / 0.96)| = 0.04: host memory, ratio 1.0417; HBM 43.0 far below. */
    double retentions[] = {300, 3600, 1};
    struct price_retention_match m[3];
    CHECK_EQ(prices_match_retentions(retentions, 3, hand_tiers, 4, m), 3, "three matches");
    CHECK_EQ(m[0].tier, 2, "300 s: the NVMe tier");
    CHECK_REL(m[0].ratio, 0.46875, 1e-12, "300 s over 640 s = 0.46875");
    CHECK_EQ(m[0].far_below_count, 2, "300 s: HBM and host far below");
    CHECK(m[0].far_below[0] == 0 && m[0].far_below[1] == 1, "300 s: far below in tier order");
    CHECK_REL(m[0].far_below_ratio[0], 12903.2, 1e-5, "300 s over HBM's 23.25 ms = 12,903");
    CHECK_REL(m[0].far_below_ratio[1], 312.5, 1e-12, "300 s over host's 0.96 s = 312.5");
    CHECK_EQ(m[1].tier, 2, "3600 s: the NVMe tier");
    CHECK_REL(m[1].ratio, 5.625, 1e-12, "3600 s over 640 s = 5.625");
    CHECK_EQ(m[1].far_below_count, 2, "3600 s: HBM and host far below");
    CHECK_REL(m[1].far_below_ratio[0], 154838.7, 1e-6, "3600 s over 23.25 ms = 154,839");
    CHECK_REL(m[1].far_below_ratio[1], 3750, 1e-12, "3600 s over 0.96 s = 3,750");
    CHECK_EQ(m[2].tier, 1, "1 s: host memory");
    CHECK_REL(m[2].ratio, 1.041667, 1e-6, "1 s over 0.96 s = 1.0417");
    CHECK_EQ(m[2].far_below_count, 1, "1 s: HBM far below (1 / 0.02325 = 43.0)");
    CHECK_REL(m[2].far_below_ratio[0], 43.0108, 1e-5, "1 s over 23.25 ms = 43.01");

    /* Ties go to the lower index: two tiers draining in 10 s, a retention of 10 s. */
    const struct price_tier twins[] = {{"a", 10, 1}, {"b", 20, 2}};
    double ten[] = {10};
    prices_match_retentions(ten, 1, twins, 2, m);
    CHECK(m[0].tier == 0 && m[0].ratio == 1 && m[0].far_below_count == 0, "a tie goes to the first tier");
    /* A tier without a bandwidth has no drain time and is skipped; with no tier left, -1. */
    const struct price_tier broken[] = {{"no bandwidth", 1e9, 0}};
    prices_match_retentions(ten, 1, broken, 1, m);
    CHECK(m[0].tier == -1 && isnan(m[0].ratio) && m[0].far_below_count == 0, "no usable tier: -1");
    CHECK(isnan(prices_tier_drain_s(&broken[0])), "no bandwidth: no drain time");
    CHECK_EQ(prices_match_retentions(ten, -1, hand_tiers, 4, m), 0, "a negative count: nothing");
    double zero[] = {0};
    prices_match_retentions(zero, 1, hand_tiers, 4, m);
    CHECK(m[0].tier == -1, "a retention of 0: no tier");
}

/* ---- 4. storage ---- */

static void storage(void)
{
    /* DeepSeek-V3 at BF16, 70,272 B a token (61 layers x (512 + 64) x 2 B), a million tokens
     * = 70.272 GB. In the 80 GB of an H800 at DeepSeek's $2 a GPU-hour
     * (topologies/hgx-h800.xml): 2 x 70.272e9 / 80e9 = 2 x 0.8784 = $1.7568 per Mtok-hour. */
    CHECK_REL(prices_storage_per_mtok_hour(2, 70272, 80e9), 1.7568, 1e-12,
              "DeepSeek-V3 in H800 HBM: $1.7568 per Mtok-hour");
    /* In a 3.84 TB NVMe share of the same GPU-hour: 2 x 70.272e9 / 3.84e12 = $0.0366. */
    CHECK_REL(prices_storage_per_mtok_hour(2, 70272, 3.84e12), 0.0366, 1e-12,
              "in 3.84 TB of NVMe: $0.0366 per Mtok-hour");
    /* Issue 27's formula with round numbers: $10/h x (1,000 B x 1e6 / 100e9 B) = 10 x 0.01 = $0.1. */
    CHECK_REL(prices_storage_per_mtok_hour(10, 1000, 100e9), 0.1, 1e-12, "$10/h, 1 kB a token, 100 GB: $0.10");
    CHECK_EQ(prices_storage_per_mtok_hour(0, 1000, 100e9), 0, "a free device stores for free");
    CHECK(isnan(prices_storage_per_mtok_hour(2, 70272, 0)), "no capacity: NAN");
    CHECK(isnan(prices_storage_per_mtok_hour(-2, 70272, 80e9)), "a negative price: NAN");
}

/* ---- 5. the cached-input discount ---- */

static void discount(void)
{
    /* DeepSeek-V3's sheet: 0.07 / 0.27 = 0.259259. */
    CHECK_REL(prices_cache_discount(0.07, 0.27), 0.2592593, 1e-6, "DeepSeek-V3: 0.07 / 0.27 = 0.2593");
    CHECK_REL(prices_cache_discount(0.30, 3), 0.1, 1e-12, "Sonnet 4: 0.30 / 3 = 0.1");
    CHECK(isnan(prices_cache_discount(0.07, 0)), "free input: NAN");

    /* DeepSeek-V3's prefill FLOPs a token at a 4,096-token prompt (mean context 2,048):
     *   matmuls 2 x 37e9 = 7.4e10;
     *   attention, MLA in its prefill (non-absorbed) form, per layer per cached token
     *   2 x 128 heads x (192 + 128) (QK^T over qk_nope + qk_rope = 192, AV over v_head_dim = 128)
     *   = 81,920; x 61 layers x 2,048 = 10,234,101,760;
     *   total 84,234,101,760 FLOPs.
     * Recomputing on an H800 at 1,979 TFLOP/s FP8 (topologies/hgx-h800.xml):
     *   84,234,101,760 / 1.979e15 = 4.25640e-5 s a token. */
    double flops = 2 * 37e9 + 2.0 * 128 * (192 + 128) * 61 * 2048;
    CHECK_EQ(flops, 84234101760.0, "DeepSeek-V3 prefill: 84,234,101,760 FLOPs a token");
    const double h800 = 1.979e15, kv = 70272; /* 61 x 576 x 2 B */

    /* Loading 70,272 B over the tiers of an H800 GPU (capacity does not enter):
     *   HBM 3.35 TB/s: 70,272 / 3.35e12 = 2.09767e-8 s; / 4.25640e-5 = 4.9283e-4;
     *   host memory over PCIe Gen5 x16, 64 GB/s a direction: 1.09800e-6 s; ratio 0.025796;
     *   DeepSeek's 3FS KVCache, 40 GiB/s peak read a client node (github.com/deepseek-ai/3FS,
     *   README) over 8 GPUs = 5,368,709,120 B/s: 1.30892e-5 s; ratio 0.307518. */
    CHECK_REL(prices_load_over_recompute(kv, 3.35e12, flops, h800), 4.9283e-4, 1e-4, "HBM: 4.93e-4 of recompute");
    CHECK_REL(prices_load_over_recompute(kv, 64e9, flops, h800), 0.025796, 1e-4, "host: 0.0258 of recompute");
    CHECK_REL(prices_load_over_recompute(kv, 5368709120.0, flops, h800), 0.307518, 1e-5, "3FS: 0.3075 of recompute");

    /* Nearest 0.259259 on a log scale: |ln(0.259259 / x)| = 6.27 (HBM), 2.31 (host), 0.171 (3FS):
     * the disk tier, as DeepSeek says its cache is. The bandwidth the discount implies:
     * 70,272 / (0.259259 x 4.25640e-5) = 70,272 / 1.103511e-5 = 6.368e9 B/s a GPU. */
    const struct price_tier h800_tiers[] = {
        {"hbm", 80e9, 3.35e12}, {"host", 256e9, 64e9}, {"3fs", 1e13, 5368709120.0}};
    struct price_discount_match dm = {.tier = 99};
    CHECK(prices_match_discount(0.07 / 0.27, kv, flops, h800, h800_tiers, 3, &dm), "DeepSeek-V3's discount matches");
    CHECK_EQ(dm.tier, 2, "DeepSeek-V3's discount implies the disk (3FS) tier");
    CHECK_REL(dm.ratio, 0.307518, 1e-5, "its load/recompute 0.3075");
    CHECK_REL(dm.implied_bytes_per_s, 6.36804e9, 1e-5, "implied 6.37 GB/s a GPU");
    CHECK_REL(prices_discount_implied_bytes_per_s(0.07 / 0.27, kv, flops, h800), 6.36804e9, 1e-5,
              "implied bandwidth alone: 6.37 GB/s");
    /* Anthropic's 0.1 on the same hardware: 70,272 / (0.1 x 4.25640e-5) = 1.65097e10 B/s;
     * against 0.1, |ln| = 5.31, 1.36, 1.12: still 3FS, ratio 0.3075. */
    CHECK(prices_match_discount(0.1, kv, flops, h800, h800_tiers, 3, &dm) && dm.tier == 2,
          "a 0.1 discount on an H800: 3FS");
    CHECK_REL(dm.implied_bytes_per_s, 1.65097e10, 1e-5, "0.1 implies 16.5 GB/s a GPU");
    dm.tier = 99;
    CHECK(!prices_match_discount(0, kv, flops, h800, h800_tiers, 3, &dm) && dm.tier == 99,
          "a zero discount: false, *out untouched");
    CHECK(prices_match_discount(0.5, kv, flops, h800, h800_tiers, 0, &dm) && dm.tier == -1,
          "no tiers: -1");
}

/* ---- the reader ---- */

static const char base[] = "provider: Example\n"          /* 1 */
                           "model: M\n"                   /* 2 */
                           "source: https://example.com\n" /* 3 */
                           "date: 2025-01-02\n"           /* 4 */
                           "active_params: 37e9\n"        /* 5 */
                           "input: 0.27\n"                /* 6 */
                           "output: 1.10\n"               /* 7 */
                           "cached_input: 0.07\n";        /* 8 */

/* base with line `line` (1-based) replaced by `replacement` ("" drops it), then `extra`. */
static const char *edit(int line, const char *replacement, const char *extra)
{
    static char text[2048];
    text[0] = '\0';
    const char *p = base;
    for (int n = 1; *p; n++) {
        const char *end = strchr(p, '\n') + 1;
        if (n == line)
            strcat(text, replacement);
        else
            strncat(text, p, (size_t)(end - p));
        p = end;
    }
    strcat(text, extra);
    return text;
}

/* The first diagnostic of reading `text` as "t.yaml", formatted as printed; checks that *out
 * was left alone on failure. */
static const char *first_error(const char *text, enum prices_status *status, size_t *count)
{
    static char line[512];
    struct diags d;
    diags_init(&d);
    struct price_sheet s;
    memset(&s, 0, sizeof s);
    strcpy(s.provider, "untouched");
    *status = prices_load_buffer("t.yaml", text, strlen(text), &s, &d);
    line[0] = '\0';
    if (d.count)
        diag_format(&d.entries[0], line, sizeof line);
    *count = d.count;
    if (*status != PRICES_OK && strcmp(s.provider, "untouched") != 0)
        printf("# *out was written on failure\n");
    diags_release(&d);
    return line;
}

static void check_error(const char *text, const char *expected)
{
    enum prices_status status;
    size_t count;
    const char *got = first_error(text, &status, &count);
    CHECK(status == PRICES_INVALID, "refused: %s", expected);
    CHECK_STR(got, expected, expected);
}

static void reader(void)
{
    struct diags d;
    diags_init(&d);
    struct price_sheet s;
    CHECK(prices_load_buffer("t.yaml", base, strlen(base), &s, &d) == PRICES_OK && d.count == 0,
          "the base sheet reads");
    diags_release(&d);
    CHECK_STR(s.provider, "Example", "provider");
    CHECK_STR(s.date, "2025-01-02", "date");
    CHECK_EQ(s.active_params, 37e9, "active_params");
    CHECK(s.input_per_mtok == 0.27 && s.output_per_mtok == 1.10 && s.has_cached_input &&
              s.cached_input_per_mtok == 0.07, "prices");
    CHECK(s.long_context_step_tokens == 0 && !s.has_input_long && !s.has_output_long &&
              s.retention_count == 0 && !s.has_cache_write && !s.has_storage,
          "absent fields are absent");

    const char *full = edit(0, "", "long_context_step_tokens: 200000\n"
                                   "input_long: 0.5\n"
                                   "output_long: 2\n"
                                   "cached_input_long: 0.1\n"
                                   "cache_retention_s: [300, 3600]\n"
                                   "cache_write: [0.3, 0.5]\n"
                                   "storage_per_mtok_hour: 4.5\n");
    diags_init(&d);
    CHECK(prices_load_buffer("t.yaml", full, strlen(full), &s, &d) == PRICES_OK, "every field reads");
    diags_print(&d, stdout);
    diags_release(&d);
    CHECK(s.long_context_step_tokens == 200000 && s.has_input_long && s.input_long_per_mtok == 0.5 &&
              s.has_output_long && s.output_long_per_mtok == 2 && s.has_cached_input_long &&
              s.cached_input_long_per_mtok == 0.1, "the prices above the step");
    CHECK(s.retention_count == 2 && s.cache_retention_s[0] == 300 && s.cache_retention_s[1] == 3600 &&
              s.has_cache_write && s.cache_write_per_mtok[0] == 0.3 && s.cache_write_per_mtok[1] == 0.5,
          "retentions and their write prices");
    CHECK(s.has_storage && s.storage_per_mtok_hour == 4.5, "storage");

    /* the four kinds the brief names: unknown key, negative price, missing key, wrong type */
    check_error(edit(0, "", "inptu: 3\n"), "t.yaml:9:1: error: unknown field 'inptu' (did you mean 'input'?)");
    check_error(edit(0, "", "colour: red\n"), "t.yaml:9:1: error: unknown field 'colour'");
    check_error(edit(6, "input: -1\n", ""),
                "t.yaml:6:8: error: field 'input' is -1; it must be a price in $ per million tokens from 0 to 10000");
    check_error(edit(8, "cached_input: -0.07\n", ""),
                "t.yaml:8:15: error: field 'cached_input' is -0.07; it must be a price in $ per million tokens from 0 to 10000");
    check_error(edit(7, "", ""), "t.yaml:1:1: error: missing field 'output'");
    check_error(edit(5, "", ""), "t.yaml:1:1: error: missing field 'active_params'");
    check_error(edit(3, "", ""), "t.yaml:1:1: error: missing field 'source'");
    check_error(edit(7, "output: [1, 2]\n", ""), "t.yaml:7:9: error: field 'output' must be a number, not a list");
    check_error(edit(6, "input: '0.27'\n", ""), "t.yaml:6:8: error: field 'input' must be a number, not '0.27'");
    check_error(edit(6, "input: cheap\n", ""), "t.yaml:6:8: error: field 'input' must be a number, not 'cheap'");
    check_error(edit(1, "provider: {a: 1}\n", ""), "t.yaml:1:11: error: field 'provider' must be a string, not a mapping");

    /* the other checks */
    check_error(edit(6, "input: 0\n", ""), "t.yaml:6:8: error: field 'input' is 0; a sheet needs a positive input price");
    check_error(edit(8, "cached_input: 0.5\n", ""),
                "t.yaml:8:15: error: field 'cached_input' (0.5) is above 'input' (0.27); a cache hit cannot cost more than a miss");
    check_error(edit(6, "input: 20000\n", ""),
                "t.yaml:6:8: error: field 'input' is 20000; it must be a price in $ per million tokens from 0 to 10000");
    check_error(edit(6, "input: ~\n", ""), "t.yaml:6:8: error: field 'input' is null; leave it out when it is not published");
    check_error(edit(4, "date: 2025-13-01\n", ""), "t.yaml:4:7: error: field 'date' must be a date YYYY-MM-DD, not '2025-13-01'");
    check_error(edit(4, "date: [2025]\n", ""), "t.yaml:4:7: error: field 'date' must be a date YYYY-MM-DD, not a list");
    check_error(edit(5, "active_params: 0\n", ""),
                "t.yaml:5:16: error: field 'active_params' is 0; it must be a parameter count from 1 to 1e+15");
    check_error(edit(0, "", "output_long: 2\n"),
                "t.yaml:9:14: error: field 'output_long' needs 'long_context_step_tokens' (the context it applies above)");
    check_error(edit(0, "", "long_context_step_tokens: 2.5e5.1\n"),
                "t.yaml:9:27: error: field 'long_context_step_tokens' must be a number, not '2.5e5.1'");
    check_error(edit(0, "", "long_context_step_tokens: 1000.5\n"),
                "t.yaml:9:27: error: field 'long_context_step_tokens' must be a whole number, not 1000.5");
    check_error(edit(0, "", "cache_retention_s: 300\n"),
                "t.yaml:9:20: error: field 'cache_retention_s' must be a list, not a scalar");
    check_error(edit(0, "", "cache_retention_s: []\n"),
                "t.yaml:9:20: error: field 'cache_retention_s' has 0 entries; it needs 1 to 8");
    check_error(edit(0, "", "cache_retention_s: [3600, 300]\n"),
                "t.yaml:9:27: error: field 'cache_retention_s' must increase: 300 follows 3600");
    check_error(edit(0, "", "cache_retention_s: [300, -1]\n"),
                "t.yaml:9:26: error: field 'cache_retention_s[1]' is -1; it must be a number of seconds from 0.001 to 1e+09");
    check_error(edit(0, "", "cache_retention_s: [300, 3600]\ncache_write: [3.75]\n"),
                "t.yaml:10:14: error: field 'cache_write' has 1 price; 'cache_retention_s' has 2 retentions");
    check_error(edit(0, "", "cache_write: [3.75]\n"),
                "t.yaml:9:14: error: field 'cache_write' needs 'cache_retention_s' (one price for each retention)");
    check_error(edit(0, "", "storage_per_mtok_hour: -4.5\n"),
                "t.yaml:9:24: error: field 'storage_per_mtok_hour' is -4.5; it must be a price in $ per million tokens from 0 to 10000");

    /* every problem is reported, not only the first */
    enum prices_status status;
    size_t count;
    first_error("input: -1\noutput: x\nfoo: 1\n", &status, &count);
    /* foo unknown, input negative, output not a number, missing provider, model, source, date,
     * active_params: 8 */
    CHECK(status == PRICES_INVALID && count == 8, "eight problems, eight diagnostics (%zu)", count);

    /* fuzz-ish: shapes that are not a sheet at all */
    check_error("", "t.yaml: error: the file is empty");
    check_error("- 1\n- 2\n", "t.yaml:1:1: error: a price sheet must be a mapping, not a list");
    check_error("3\n", "t.yaml:1:1: error: a price sheet must be a mapping, not a scalar");
    check_error("{}\n", "t.yaml:1:1: error: missing field 'provider'");
    first_error("input: [1, [2, {3: 4}]]\n: :\n", &status, &count);
    CHECK(status == PRICES_INVALID && count >= 1, "garbage: refused with diagnostics");
    diags_init(&d);
    CHECK(prices_load_buffer("t.yaml", "input: \0\0", 9, &s, &d) == PRICES_INVALID && d.count >= 1,
          "NUL bytes: refused");
    diags_release(&d);

    /* an unreadable file */
    diags_init(&d);
    CHECK(prices_load("prices/no-such-sheet.yaml", &s, &d) == PRICES_IO_ERROR && d.count == 1,
          "a missing file: PRICES_IO_ERROR");
    diags_release(&d);
}

/* ---- the shipped sheets ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void shipped(void)
{
    DIR *dir = opendir("prices");
    if (!dir) {
        printf("Bail out! no prices/ folder\n");
        exit(1);
    }
    int files = 0;
    struct dirent *e;
    char names[64][300];
    while ((e = readdir(dir)) && files < 64)
        if (path_ends_with(e->d_name, ".yaml"))
            snprintf(names[files++], sizeof names[0], "prices/%s", e->d_name);
    closedir(dir);
    qsort(names, (size_t)files, sizeof names[0], by_name); /* readdir's order is the file system's */
    CHECK(files >= 4, "at least 4 shipped sheets (%d)", files);
    for (int i = 0; i < files; i++) {
        struct price_sheet s;
        struct diags d;
        diags_init(&d);
        bool ok = prices_load(names[i], &s, &d) == PRICES_OK;
        diags_print(&d, stdout);
        diags_release(&d);
        if (!CHECK(ok, "%s reads", names[i]))
            continue;
        CHECK(strncmp(s.source, "https://", 8) == 0, "%s: its source is a URL", names[i]);
        CHECK(strcmp(s.date, "2024-01-01") > 0, "%s: dated (%s)", names[i], s.date);
        CHECK(s.has_cached_input, "%s: a cached-input price", names[i]);
        /* the ratios every sheet must give: finite and above 1 (output costs more than input) */
        double ratio = prices_decode_memory_bound_ratio(s.output_per_mtok, s.input_per_mtok);
        CHECK(ratio > 1 && isfinite(ratio), "%s: output/input %.3g", names[i], ratio);
        if (s.long_context_step_tokens) {
            double kv = prices_implied_kv_bytes_per_token(s.active_params, 8e12, 4.5e15,
                                                          (double)s.long_context_step_tokens);
            CHECK(kv > 0 && isfinite(kv), "%s: implied KV %.0f B a token on a B200", names[i], kv);
        }
    }

    /* the numbers of two sheets, against their sources (quoted in each file) */
    struct price_sheet s;
    struct diags d;
    diags_init(&d);
    if (CHECK(prices_load("prices/deepseek-v3.yaml", &s, &d) == PRICES_OK, "DeepSeek-V3 reads")) {
        CHECK(s.input_per_mtok == 0.27 && s.cached_input_per_mtok == 0.07 && s.output_per_mtok == 1.10,
              "DeepSeek-V3: $0.27 miss, $0.07 hit, $1.10 output");
        CHECK_EQ(s.active_params, 37e9, "DeepSeek-V3: 37B active (published)");
        CHECK(s.retention_count == 0 && s.long_context_step_tokens == 0, "DeepSeek-V3: no retention, no step");
    }
    if (CHECK(prices_load("prices/anthropic-claude-sonnet-4.yaml", &s, &d) == PRICES_OK, "Sonnet 4 reads")) {
        CHECK(s.retention_count == 2 && s.cache_retention_s[0] == 300 && s.cache_retention_s[1] == 3600,
              "Sonnet 4: 5-minute and 1-hour caches");
        CHECK(s.cache_write_per_mtok[0] == 3.75 && s.cache_write_per_mtok[1] == 6, "Sonnet 4: writes $3.75 and $6");
        CHECK(s.long_context_step_tokens == 200000 && s.input_long_per_mtok == 6 && s.output_long_per_mtok == 22.5,
              "Sonnet 4: above 200K, $6 and $22.50");
    }
    if (CHECK(prices_load("prices/gemini-2.5-pro.yaml", &s, &d) == PRICES_OK, "Gemini 2.5 Pro reads")) {
        CHECK(s.long_context_step_tokens == 200000 && s.has_storage && s.storage_per_mtok_hour == 4.5,
              "Gemini 2.5 Pro: a 200k step, $4.50 per Mtok-hour of storage");
        /* its step at 100B active on a B200: 1,777.8 B a token (as in long_context_step) */
        CHECK_REL(prices_implied_kv_bytes_per_token(s.active_params, 8e12, 4.5e15, 200000), 1777.78, 1e-5,
                  "Gemini 2.5 Pro's step: 1,778 B a token on a B200");
    }
    diags_print(&d, stdout);
    diags_release(&d);
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    long_context_step();
    decode_ratio();
    retention_tiers();
    storage();
    discount();
    reader();
    shipped();
    return tap_done();
}
