/* The prefix cache's tiers (kvcache.h, issue 27 item 2) against hand arithmetic: residency times
 * from capacity and write rate, hit shares from an exponential and a quantile law of the reuse
 * interval, DeepSeek-V3's load-versus-recompute crossover, the reader's errors with their exact
 * `path:line:col` text, and serve_with_reuse settling on the hit its own tiers give.
 *
 * Every expected number is worked out beside its check; none is pasted from a run. */
#include "fixtures.h"
#include "graph.h"
#include "kvcache.h"
#include "tap.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

static struct kv_cache_input two_tiers(double share, double mean_s)
{
    struct kv_cache_input in = {.tier_count = 2, .prompt_tokens = 1000, .bytes_per_token = 1e5,
                                .written_tokens_per_s = 1e4, .prompt_tokens_per_s = 2e4, .recompute_s = 0.1};
    in.tiers[0] = (struct kv_tier_input){.kind = TIER_HBM, .name = "HBM", .capacity_bytes = 10e9,
                                         .read_bytes_per_s = 4e12};
    in.tiers[1] = (struct kv_tier_input){.kind = TIER_HOST, .name = "DDR5", .capacity_bytes = 240e9,
                                         .read_bytes_per_s = 64e9};
    in.reuse = (struct kv_reuse){.share = share, .kind = KV_INTERVAL_EXP, .mean_s = mean_s};
    return in;
}

static void residency_and_hits(void)
{
    /* W = 1e4 tokens/s x 1e5 B = 1 GB/s a device: HBM's 10 GB last 10 s, the host's 240 GB 240 s */
    struct kv_cache_input in = two_tiers(0.5, 60);
    struct kv_cache_result r;
    kv_cache_tiers(&in, &r);
    CHECK_REL(r.tiers[0].residency_s, 10, 1e-12, "HBM residency 10e9 B / 1e9 B/s = 10 s");
    CHECK_REL(r.tiers[1].residency_s, 240, 1e-12, "host residency 240e9 / 1e9 = 240 s");
    /* exponential intervals of mean 60 s: HBM holds those under 10 s, 1 - e^(-1/6) = 0.1535183;
     * the host those from 10 to 240 s, e^(-1/6) - e^(-4) = 0.8464817 - 0.0183156 = 0.8281661;
     * each times F = 0.5 */
    CHECK_REL(r.tiers[0].hit_share, 0.5 * 0.15351827510938587, 1e-12, "HBM hit 0.5 x (1 - e^-1/6)");
    CHECK_REL(r.tiers[1].hit_share, 0.5 * (0.8464817248906141 - 0.01831563888873418), 1e-12,
              "host hit 0.5 x (e^-1/6 - e^-4)");
    CHECK_REL(r.prefix_hit, 0.5 * (1 - 0.01831563888873418), 1e-12, "prefix hit 0.5 x (1 - e^-4)");
    /* a hit's prefix: 0.5 x 1000 tokens x 1e5 B = 5e7 B; from the host at 64 GB/s 0.78125 ms,
     * from HBM at 4 TB/s 12.5 us */
    CHECK_REL(r.tiers[1].load_s, 5e7 / 64e9, 1e-12, "host load 5e7 B / 64 GB/s = 0.78125 ms");
    CHECK_REL(r.tiers[0].load_s, 5e7 / 4e12, 1e-12, "HBM load 5e7 B / 4 TB/s = 12.5 us");
    /* the host is read at its hit share of the 2e4 prompt tokens a second, 1e5 B each */
    CHECK_REL(r.tiers[1].read_bytes_per_s, r.tiers[1].hit_share * 2e4 * 1e5, 1e-12, "host read h x 2e4 x 1e5 B/s");
    CHECK_REL(r.tiers[1].write_bytes_per_s, 1e9, 1e-12, "every tier written at W = 1 GB/s (write through)");
    /* mean load a request: (h_hbm L_hbm + h_host L_host) / F */
    CHECK_REL(r.load_s, (r.tiers[0].hit_share * r.tiers[0].load_s + r.tiers[1].hit_share * r.tiers[1].load_s) / 0.5,
              1e-12, "mean load over the hits");
    /* no reuse: no hit */
    in.reuse.share = 0;
    kv_cache_tiers(&in, &r);
    CHECK(r.prefix_hit == 0 && r.tiers[1].hit_share == 0, "F = 0: no hit");
}

static void quantile_interval(void)
{
    /* 50% of reuses within 30 s, 90% within 600 s (linear from 0 at 0 s): HBM (10 s) holds
     * 0.5 x 10 / 30 = 1/6; the host (240 s) 0.5 + 0.4 x (240 - 30) / 570 = 0.6473684 */
    struct kv_cache_input in = two_tiers(1, 1);
    in.reuse = (struct kv_reuse){.share = 1, .kind = KV_INTERVAL_QUANTILES, .count = 2, .p = {0.5, 0.9}, .s = {30, 600}};
    CHECK_REL(kv_interval_cdf(&in.reuse, 10), 1.0 / 6, 1e-12, "Pr[I < 10 s] = 0.5 x 10 / 30");
    CHECK_REL(kv_interval_cdf(&in.reuse, 1e6), 0.9, 1e-12, "beyond the last point: its quantile, 0.9");
    struct kv_cache_result r;
    kv_cache_tiers(&in, &r);
    CHECK_REL(r.tiers[0].hit_share, 1.0 / 6, 1e-12, "HBM hit 1/6");
    CHECK_REL(r.tiers[1].hit_share, 0.5 + 0.4 * 210.0 / 570 - 1.0 / 6, 1e-12, "host hit 0.6473684 - 1/6");
}

static void deepseek_crossover(void)
{
    /* DeepSeek-V3's MLA KV: 61 layers x (512 + 64) x 2 B = 70,272 B a token at BF16. Recomputing
     * a token on an H800 at its FP8 peak: 2 x 37e9 FLOPs / 1,979e12 FLOP/s = 37.39 us. So a tier
     * is worth reading below 70,272 / 37.39e-6 = 1.879 GB/s a device: 1.5 GB/s is slower than
     * recomputing, 2.5 GB/s faster. */
    double per_token_s = 2 * 37e9 / 1979e12, bytes = 61 * 576 * 2, crossover = bytes / per_token_s;
    CHECK_REL(bytes, 70272, 0, "61 x 576 x 2 = 70,272 B");
    CHECK_REL(crossover, 1.8794e9, 1e-4, "crossover 1.879 GB/s");
    struct kv_cache_input in = {.tier_count = 3, .prompt_tokens = 4096, .bytes_per_token = bytes,
                                .written_tokens_per_s = 1e3, .prompt_tokens_per_s = 1e3};
    in.reuse = (struct kv_reuse){.share = 1, .kind = KV_INTERVAL_EXP, .mean_s = 60};
    in.recompute_s = 4096 * per_token_s;
    in.tiers[0] = (struct kv_tier_input){.kind = TIER_HBM, .capacity_bytes = 1e9, .read_bytes_per_s = 3.35e12};
    in.tiers[1] = (struct kv_tier_input){.kind = TIER_NVME, .capacity_bytes = 1e12, .read_bytes_per_s = 1.5e9};
    in.tiers[2] = (struct kv_tier_input){.kind = TIER_REMOTE, .capacity_bytes = 1e13, .read_bytes_per_s = 2.5e9};
    struct kv_cache_result r;
    kv_cache_tiers(&in, &r);
    CHECK(!r.tiers[1].worth_it && r.tiers[1].hit_share == 0, "1.5 GB/s: slower than recomputing, no hits");
    CHECK(r.tiers[2].worth_it, "2.5 GB/s: worth reading");
    /* the remote tier serves what HBM does not hold and it does: W = 1e3 x 70,272 B/s; HBM
     * 1e9 / 7.0272e7 = 14.23 s, remote 1e13 / 7.0272e7 = 142,304 s */
    double w = 1e3 * bytes, hbm = 1e9 / w, remote = 1e13 / w;
    CHECK_REL(r.tiers[2].hit_share, exp(-hbm / 60) - exp(-remote / 60), 1e-12, "remote hit e^(-14.2/60) - e^(-142304/60)");
}

static const char *first_error(const char *text)
{
    static char line[512];
    struct diags d;
    diags_init(&d);
    struct kv_reuse r = {.share = 0.25, .count = 7};
    bool ok = kv_reuse_read_buffer("r.csv", text, strlen(text), &r, &d);
    line[0] = '\0';
    if (d.count)
        diag_format(&d.entries[0], line, sizeof line);
    if (!ok && r.count != 7)
        printf("# *out was written on failure\n");
    diags_release(&d);
    return ok ? "ok" : line;
}

static void reader(void)
{
    struct diags d;
    diags_init(&d);
    const char *good = "# reuse intervals\nquantile,seconds\n0.5,30\n0.9, 600\n";
    struct kv_reuse r = {.share = 0.25};
    CHECK(kv_reuse_read_buffer("r.csv", good, strlen(good), &r, &d) && r.count == 2 && r.p[1] == 0.9 &&
              r.s[1] == 600 && r.share == 0.25 && r.kind == KV_INTERVAL_QUANTILES,
          "a header, two rows, the share kept");
    diags_release(&d);
    CHECK_STR(first_error("q,s\n0.5,3\n"), "r.csv:1:1: error: the first row must be the header 'quantile,seconds'",
              "a wrong header");
    CHECK_STR(first_error("quantile,seconds\n0.5;3\n"), "r.csv:2:1: error: expected a quantile, then a comma",
              "no comma");
    CHECK_STR(first_error("quantile,seconds\n0.5,3\n0.4,9\n"),
              "r.csv:3:1: error: quantiles must lie in (0, 1] and increase from row to row, not 0.4", "falling quantile");
    CHECK_STR(first_error("quantile,seconds\n0.5,30\n0.6,9\n"),
              "r.csv:3:5: error: seconds must be at least 0 and never fall from row to row, not 9", "falling seconds");
    CHECK_STR(first_error("quantile,seconds\n0.5,3 x\n"), "r.csv:2:5: error: expected seconds, then the end of the row",
              "trailing text");
    CHECK_STR(first_error("quantile,seconds\n"), "r.csv:1: error: no quantiles after the header", "no rows");
    CHECK_STR(first_error(""), "r.csv: error: no header 'quantile,seconds'", "empty");
    char error[256];
    struct kv_reuse e = {0};
    CHECK(kv_reuse_parse_interval("exp:300", &e, error, sizeof error) && e.kind == KV_INTERVAL_EXP && e.mean_s == 300,
          "exp:300");
    CHECK(!kv_reuse_parse_interval("exp:-1", &e, error, sizeof error) &&
              strcmp(error, "exp:MEAN_S takes a mean in seconds above 0, not '-1'") == 0,
          "exp:-1 refused: %s", error);
}

/* DeepSeek-V3 on a GB200 NVL72, 8k/1k, 80% of a prompt reused after an exponential 300 s: the
 * hit the search settles on is the one its best point's tiers give (to 1e-4), and within [0, F]. */
static void settles(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/gb200-nvl72.xml");
    struct workload precisions = {.batch = 1, .weights = m.weights_precision,
                                  .expert_weights = m.expert_weights_precision, .kv = m.kv_precision,
                                  .reserve_fraction = PLAN_DEFAULT_RESERVE_FRACTION, .reserve_bytes = -1};
    struct serve_pool pool = {.model = &m, .topology = &t, .precisions = precisions, .efficiency = EFFICIENCY_BOUND,
                              .budget_devices = 72};
    struct serve_workload w = {.isl = 8192, .osl = 1024, .mtp_accept = 1, .chunk_tokens = SERVE_DEFAULT_CHUNK_TOKENS,
                               .mode = SERVE_BEST, .arrivals = SERVE_CLOSED, .tpot_s = 0.05};
    struct kv_reuse reuse = {.share = 0.8, .kind = KV_INTERVAL_EXP, .mean_s = 300};
    struct serve_result result;
    struct serve_workload used;
    struct kv_cache_result cache;
    CHECK(serve_with_reuse(&pool, NULL, &w, &reuse, &result, &used, &cache) && result.found, "a deployment found");
    struct kv_cache_input in;
    struct kv_cache_result again;
    CHECK(kv_cache_input_of(&pool, NULL, &used, &result.best, &reuse, &in), "its tiers' input");
    kv_cache_tiers(&in, &again);
    CHECK(fabs(again.prefix_hit - used.prefix_hit) < 1e-4, "settled: the tiers give %.5f, the search used %.5f",
          again.prefix_hit, used.prefix_hit);
    CHECK(used.prefix_hit > 0 && used.prefix_hit <= 0.8, "the hit %.4f within (0, F]", used.prefix_hit);
    CHECK(cache.tier_count == 2 && cache.tiers[1].kind == TIER_HOST, "HBM and the Grace LPDDR5X");
    serve_result_release(&result);
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    residency_and_hits();
    quantile_interval();
    deepseek_crossover();
    reader();
    settles();
    return tap_done();
}
