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

/* ---- Against published tiered caches (README, "Against published tiered caches") ----
 * Each case writes out the source's inputs and asserts the source's published number within the
 * range it states (or, for a number read off a figure, the reading's precision, said beside it).
 * A case whose published number rackplan's model does not reach is not here: the README's table
 * gives it and why. */

/* The hit the tiers settle on when the write rate follows the misses: W = (the prompt tokens a
 * second missed + the output tokens a second) b, as kv_cache_input_of counts them for an
 * aggregated instance, solved by substitution from the hit `start` as serve_with_reuse does (it
 * starts from the workload's prefix_hit, 0 unless given). The substitution can have two fixed
 * points (hits keep W low, which keeps the prefixes, which keeps the hits; misses the reverse):
 * from 0 it finds the cold one. */
static double settled_hit(struct kv_cache_input *in, double prompt_tokens_per_s, double output_tokens_per_s,
                          double start, struct kv_cache_result *r)
{
    double hit = start;
    for (int round = 0; round < 200; round++) {
        in->written_tokens_per_s = prompt_tokens_per_s * (1 - hit) + output_tokens_per_s;
        kv_cache_tiers(in, r);
        if (fabs(r->prefix_hit - hit) < 1e-9)
            break;
        hit = r->prefix_hit;
    }
    return r->prefix_hit;
}

/* Mooncake (FAST'25), Figure 9 and section 5.3.1 (Qin et al., "Mooncake: Trading More Storage for
 * Less Computation", USENIX FAST 2025; the paper and traces at github.com/kvcache-ai/Mooncake,
 * FAST25-release/): the prefix-cache hit of one LRU pool of C tokens replayed over Kimi's traces,
 * LLaMA3-70B (320 KB a token). Published: at C = 3M tokens (the ~1 TB of DRAM a node could keep)
 * the hit is 41% (conversation) and 46% (synthetic) of the theoretical maximum (the figure's
 * labels; the text: "does not achieve 50% of the theoretical maximum hit rate in most scenarios"),
 * and "a cache capacity of 50M tokens nearly reaches the theoretical maximum".
 * Inputs, from the released traces by tests/data/mooncake-reuse-quantiles.py (the CSVs' headers):
 *   conversation: 144,793,823 prompt tokens over 3,537 s = 40,936.9 a second, mean prompt 12,035;
 *     F = 54,098,411 / 144,793,823 = 0.3736 of them reuse a block seen before (the maximum);
 *   synthetic: 61,194,628 over 1,022 s = 59,875.9 a second, mean prompt 15,325; F = 0.6512;
 *   the interval: the quantiles of the seconds since each reused block was last used.
 * b = 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 327,680 B (LLaMA3-70B at BF16, the paper's
 * "320 KB"); one pool of C x b bytes (a host tier: no HBM in the replay), read fast enough to be
 * worth it; W counts the prompt tokens missed only (the figure caches prompts' blocks, not outputs).
 * The range: the figure's labels are whole percents and the released traces are not the paper's
 * sample to the token (an exact LRU replay of them gives 38% and 49% at 3M, 99% and 100% at 50M:
 * the CSVs' headers), so 41% +- 6 points, and below the stated 50%; at 50M at least 95%. The
 * synthetic trace at 3M is not held (57% of the maximum against 46%): a hit's refresh of its
 * prefix is not counted in W, so the residency is overestimated as the hit grows (README). */
static double mooncake_hit(const char *csv, double share, double isl, double prompt_tokens_per_s, double tokens)
{
    struct diags d;
    diags_init(&d);
    struct kv_cache_input in = {.tier_count = 2, .prompt_tokens = isl, .bytes_per_token = 327680,
                                .prompt_tokens_per_s = prompt_tokens_per_s, .recompute_s = 1e9};
    in.reuse.share = share;
    bool ok = kv_reuse_read_csv(csv, &in.reuse, &d);
    CHECK(ok, "%s read (%d diagnostics)", csv, (int)d.count);
    diags_release(&d);
    in.tiers[0] = (struct kv_tier_input){.kind = TIER_HBM, .name = "HBM (none in the replay)"};
    in.tiers[1] = (struct kv_tier_input){.kind = TIER_HOST, .name = "Mooncake Store pool",
                                         .capacity_bytes = tokens * 327680, .read_bytes_per_s = 1e15};
    struct kv_cache_result r;
    return ok ? settled_hit(&in, prompt_tokens_per_s, 0, 0, &r) : 0;
}

static void published_mooncake_traces(void)
{
    const char *conversation = "tests/data/mooncake-conversation-reuse.csv";
    const char *synthetic = "tests/data/mooncake-synthetic-reuse.csv";
    double c3 = mooncake_hit(conversation, 0.3736, 12035, 40936.9, 3e6) / 0.3736;
    double s3 = mooncake_hit(synthetic, 0.6512, 15325, 59875.9, 3e6) / 0.6512;
    double c50 = mooncake_hit(conversation, 0.3736, 12035, 40936.9, 50e6) / 0.3736;
    double s50 = mooncake_hit(synthetic, 0.6512, 15325, 59875.9, 50e6) / 0.6512;
    printf("# Mooncake traces: hit / maximum at 3M tokens %.3f (conversation), %.3f (synthetic); at 50M %.3f, %.3f\n",
           c3, s3, c50, s50);
    CHECK(c3 >= 0.41 - 0.06 && c3 <= 0.41 + 0.06 && c3 < 0.5,
          "Mooncake conversation, 3M tokens: %.1f%% of the maximum, published 41%% (+-6) and under 50%%", 100 * c3);
    /* the synthetic trace at 3M is not held: 57% where the figure says 46% (README's table) */
    CHECK(s3 > 0 && s3 < 1, "Mooncake synthetic, 3M tokens: %.1f%% of the maximum (published 46%%: not held, README)",
          100 * s3);
    CHECK(c50 >= 0.95 && s50 >= 0.95, "Mooncake, 50M tokens: %.1f%% and %.1f%% of the maximum, published \"nearly\" all",
          100 * c50, 100 * s50);
}

/* SGLang HiCache with the Mooncake store, multi-turn benchmark on one 8 x H800 server, Qwen3-235B-
 * A22B-Instruct-2507 at TP 8 (github.com/kvcache-ai/Mooncake, docs/source/performance/sglang/
 * sglang-hicache-benchmark-results-v1.md and its figure image/hicache_multi_turn_per_turn.png;
 * the same run in lmsys.org/blog/2025-09-10-sglang-hicache). bench_multiturn.py: 80 clients, 10
 * rounds, each round's prompt the previous round's prompt and output plus 2,048 new tokens, 1
 * output token, --enable-round-barrier (every client ends round r before any starts r + 1),
 * --ready-queue-policy random (a client's place within a round is drawn anew each round).
 * Published, the figure's hit rate by round (read to +-2 points):
 *   + Mooncake (L1 + L2 + a 760 GiB Mooncake pool, MOONCAKE_GLOBAL_SEGMENT_SIZE=816,043,786,240 B):
 *     rounds 2-10: 49, 66, 75, 80, 83, 85, 87, 89, 90%;
 *   + L2 (host memory --hicache-size 30 GB a rank, "8*30 = 240GB"): 49, 66, 64, 34, 27, 21, 15, 9, 8%.
 * Inputs: b a device = 94 layers x 2 (K, V) x 1 KV head (4 KV heads over TP 8: one a GPU, each
 * held twice) x 128 x 2 B = 48,128 B. Round r's prompt is r 2,048 + (r - 1) tokens, its reused
 * prefix (r - 1) 2,049 (F = that share). Time in rounds (only W x I matters, so the round's length
 * drops out): the round writes 80 x (the prompt tokens missed + 1 output) tokens. The prefix's
 * oldest tokens were written in round 1, so it is held while everything written since fits: its
 * interval is (r - 1) rounds plus the difference of two uniform places in a round (triangular on
 * (-1, 1)), as quantiles. The substitution starts warm, at the hit F: the rounds before this one
 * left the cache as it was when they hit (W is what was written since round 1, and while the
 * earlier rounds hit, that was their 2,049 new tokens a client a round); from a cold start
 * (hit 0: every prefix recomputed and written again) it settles on the cold fixed point, near 0
 * from round 3 (+ L2) or 5 (+ Mooncake): the README's table. The tiers: HBM left out (write-through: L2, larger, holds all HBM does,
 * so the summed hit is L2's alone); L2 30e9 B a device; Mooncake 816,043,786,240 / 8 B a device.
 * rackplan holds the published hits of + Mooncake in every round and of + L2 up to round 3; from
 * round 4 on + L2 falls off a cliff here (a prefix held whole or not) where SGLang's radix tree
 * keeps partial prefixes: the README's table. */
static double hicache_round_hit(int round, double bytes_per_device, bool warm)
{
    const double b = 48128, clients = 80, added = 2048;
    double prompt = round * added + (round - 1), prefix = (round - 1) * (added + 1);
    struct kv_cache_input in = {.tier_count = 2, .prompt_tokens = prompt, .bytes_per_token = b,
                                .prompt_tokens_per_s = clients * prompt, .recompute_s = 1e9};
    in.reuse = (struct kv_reuse){.share = prefix / prompt, .kind = KV_INTERVAL_QUANTILES};
    /* (r - 1) + D, D the difference of two uniforms: Pr[D < d] = (1 + d)^2 / 2 below 0,
     * 1 - (1 - d)^2 / 2 above; its quantiles at p = 1/32 .. 1 */
    for (int i = 1; i <= 32; i++) {
        double p = i / 32.0, d = p <= 0.5 ? -1 + sqrt(2 * p) : 1 - sqrt(2 * (1 - p));
        in.reuse.p[in.reuse.count] = p;
        in.reuse.s[in.reuse.count++] = fmax((round - 1) + d, 0);
    }
    in.tiers[0] = (struct kv_tier_input){.kind = TIER_HBM, .name = "HBM (within L2)"};
    in.tiers[1] = (struct kv_tier_input){.kind = TIER_HOST, .name = "L2 or L2 + Mooncake",
                                         .capacity_bytes = bytes_per_device, .read_bytes_per_s = 1e15};
    struct kv_cache_result r;
    return settled_hit(&in, clients * prompt, clients * 1, warm ? in.reuse.share : 0, &r);
}

static void published_hicache_multiturn(void)
{
    const double mooncake[] = {49, 66, 75, 80, 83, 85, 87, 89, 90}, l2[] = {49, 66};
    for (int round = 2; round <= 10; round++) {
        double hit = 100 * hicache_round_hit(round, 816043786240.0 / 8, true);
        CHECK(fabs(hit - mooncake[round - 2]) <= 2, "HiCache + Mooncake, round %d: %.1f%%, published %.0f%% (+-2)",
              round, hit, mooncake[round - 2]);
    }
    for (int round = 2; round <= 3; round++) {
        double hit = 100 * hicache_round_hit(round, 30e9, true);
        CHECK(fabs(hit - l2[round - 2]) <= 2, "HiCache + L2 (240 GB), round %d: %.1f%%, published %.0f%% (+-2)", round,
              hit, l2[round - 2]);
    }
    for (int round = 4; round <= 10; round++)
        printf("# HiCache + L2, round %d: rackplan %.1f%% warm, %.1f%% cold (the README's table)\n", round,
               100 * hicache_round_hit(round, 30e9, true), 100 * hicache_round_hit(round, 30e9, false));
    for (int round = 2; round <= 10; round++)
        printf("# HiCache + Mooncake, round %d: from a cold start %.1f%%\n", round,
               100 * hicache_round_hit(round, 816043786240.0 / 8, false));
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
    published_mooncake_traces();
    published_hicache_multiturn();
    return tap_done();
}
