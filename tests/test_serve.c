/* The serving engine (serve.h) against hand arithmetic (issue 17): MTP tokens a step, one
 * aggregated instance term by term, the chunk budget, a disaggregated xPyD pair and its KV
 * transfer, then the search: the frontier's shape, --rate sizing, an exhaustive brute force on a
 * small case, determinism, and a TPU pod that must not be served as one instance; then the budget
 * (issue 25): xPyD pairs within it by hand, a rack's search in both modes within its 72 GPUs, the
 * model that does not fit (and on how many devices it would), the target that binds, and one
 * frontier row per operating point.
 *
 * Every expected number is worked out beside its check from the model and topology files'
 * published figures, or is a closed form stated beside it; none is pasted from a run. */
#include "batch_queue.h"
#include "fixtures.h"
#include "roofline.h"
#include "lengths.h"
#include "serve.h"
#include "simulate.h"
#include "tap.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

/* A pool on `t` at the model's own precisions, the default reserve, and efficiency 1, so that
 * each time is a roofline bound the hand arithmetic below can reproduce exactly. */
static struct serve_pool pool_of(const struct model *m, const struct topology *t)
{
    struct workload precisions = {.batch = 1, .weights = m->weights_precision,
                                  .expert_weights = m->expert_weights_precision, .kv = m->kv_precision,
                                  .reserve_fraction = PLAN_DEFAULT_RESERVE_FRACTION, .reserve_bytes = -1};
    return (struct serve_pool){.model = m, .topology = t, .precisions = precisions,
                               .efficiency = EFFICIENCY_BOUND};
}

/* isl/osl with no targets, no prefix cache, no MTP, the default chunk and both modes; a closed
 * loop (a fixed number in flight), whose steps the hand arithmetic below can follow; the open
 * loop's queueing has its own section. */
static struct serve_workload workload(int64_t isl, int64_t osl)
{
    return (struct serve_workload){.isl = isl, .osl = osl, .mtp_accept = 1,
                                   .chunk_tokens = SERVE_DEFAULT_CHUNK_TOKENS, .mode = SERVE_BEST,
                                   .arrivals = SERVE_CLOSED};
}

/* The roof_setup serve.c must be using for a pool and layout (serve.h: every time is roof_step at
 * the pool's efficiency); built here field by field rather than borrowed from the engine. */
static struct roof_setup setup_of(const struct serve_pool *pool, const struct graph_summary *g,
                                  const struct layout *l)
{
    return (struct roof_setup){.model = pool->model, .topology = pool->topology, .graph = g, .layout = *l,
                               .workload = pool->precisions, .efficiency = pool->efficiency};
}

static void analyse(const struct topology *t, int64_t racks, struct graph_summary *g)
{
    if (graph_analyse(t, racks, g) != GRAPH_OK) {
        printf("Bail out! cannot analyse %s\n", t->name);
        exit(1);
    }
}

/* An H200 node and a GB200 rack at the HBM the cases near a KV cap were worked out at: the
 * datasheets' GB read as decimal bytes, 6.5% below the drivers' totals the shipped files hold
 * (README, "How `fit` counts memory"). Their edge batches (slot waits, the largest batch within the
 * targets) came from simulations of millions of requests; each file says why it is kept. */
static const char h200_at_141e9[] = "tests/data/topologies/hgx-h200-141e9.xml";
static const char gb200_at_186e9[] = "tests/data/topologies/gb200-nvl72-186e9.xml";

/* Llama 3.1 70B on an H200 node, the case most sections work by hand: the pool at efficiency 1
 * (pool_of) on the node's graph; the pool points at *m and *t. */
static void llama_h200(struct model *m, struct topology *t, struct graph_summary *g, struct serve_pool *pool)
{
    *m = fixture_model("models/llama-3.1-70b.yaml");
    *t = fixture_topology(h200_at_141e9);
    analyse(t, 1, g);
    *pool = pool_of(m, t);
}

/* The whole node as one TP 8 instance. */
static const struct layout node_tp8 = {.racks = 1, .devices = 8, .tp = 8, .pp = 1, .dp = 1, .ep = 1};

/* Llama 3.1 405B (BF16 weights, FP8 KV) on one node of a topology, 4,096/685 requests at random,
 * targets at p99 TTFT 6 s / TPOT 175 ms: prefill three quarters of the machine's time. The pool
 * points at the model and topology beside it, so the case stays where it was filled. */
struct prefill_heavy {
    struct model model;
    struct topology topology;
    struct graph_summary g;
    struct serve_pool pool;
    struct serve_workload w;
};

static void llama405b_fp8(const char *topology, struct prefill_heavy *c)
{
    c->model = fixture_model("models/llama-3.1-405b.yaml");
    c->topology = fixture_topology(topology);
    analyse(&c->topology, 1, &c->g);
    c->pool = pool_of(&c->model, &c->topology);
    c->pool.precisions.kv = PREC_FP8;
    c->w = workload(4096, 685);
    c->w.arrivals = SERVE_POISSON;
    c->w.percentile = 99;
    c->w.ttft_s = 6;
    c->w.tpot_s = 0.175;
}

/* ---- 1. multi-token prediction ---- */

static void mtp(void)
{
    struct serve_workload w = workload(1000, 250);
    CHECK_EQ(serve_tokens_per_step(&w), 1, "no MTP: one token a step");
    w.mtp = 1;
    w.mtp_accept = 0.85;
    CHECK_REL(serve_tokens_per_step(&w), 1.85, 1e-15, "K=1, P=0.85: 1 + 0.85 = 1.85");
    w.mtp = 3;
    w.mtp_accept = 0.8;
    CHECK_REL(serve_tokens_per_step(&w), 2.952, 1e-15, "K=3, P=0.8: 1 + 0.8 + 0.64 + 0.512 = 2.952");
    /* the same by the closed form (1 - P^(K+1)) / (1 - P) = (1 - 0.4096) / 0.2 */
    CHECK_REL(serve_tokens_per_step(&w), (1 - pow(0.8, 4)) / (1 - 0.8), 1e-14,
              "K=3, P=0.8 equals (1 - P^(K+1)) / (1 - P)");
    w.mtp = 2;
    w.mtp_accept = 1;
    CHECK_EQ(serve_tokens_per_step(&w), 3, "K=2, P=1: every draft accepted, 3 tokens a step");
}

/* ---- 2. one aggregated instance by hand ---- */

/* Llama 3.1 70B (dense, GQA 64 heads / 8 KV heads x 128, 80 layers, d 8192, BF16) on one HGX H200
 * (4.8 TB/s, 989 TFLOP/s BF16, NVLink 18 x 25 GB/s = 450 GB/s): TP 8 over the 8 GPUs. */
static void aggregated_by_hand(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    const struct layout l = node_tp8;
    struct model_params p;
    model_params(&m, &p);
    /* every weight but the embedding table streams once a step (pp 1: one stage holds the
     * attention, FFNs, norms, LM head; the embedding is looked up) */
    double streamed = p.total - p.embedding;
    const double hbm = 4.8e12, flops = 989e12, nvlink = 18 * 25e9;
    /* GQA attention: 4 x heads x head_dim FLOPs per cached token per layer = 4 x 64 x 128 = 32,768;
     * KV: 2 x 8 KV heads x 128 x 2 B = 4,096 B per token per layer, 80 layers = 327,680 B,
     * split 8 ways over TP 8 (8 KV heads) */
    const double attention_per_token_layer = 4.0 * 64 * 128, kv_per_token = 2.0 * 8 * 128 * 2 * 80;

    /* B = 64 sequences, isl 1000, osl 250: each step 64/250 requests end and as many prompts
     * start, so P = y B isl / osl = 64 x 1000 / 250 = 256 prefill tokens a step (0.256 prompts
     * of 1000 tokens). Decode context S = 1000 + 250/2 = 1125; prefill context 1000 - 1000/2 = 500. */
    struct serve_workload w = workload(1000, 250);
    w.spread_starts = true; /* starts spread over a life (calibrate's reading); cohorts: tails() */
    struct serve_point a;
    CHECK(serve_aggregated(&pool, &g, &l, &w, 64, &a), "Llama 70B TP 8, batch 64, isl 1000 osl 250: fits");
    CHECK_REL(a.prefill_use * 8192, 256, 1e-12, "prefill tokens a step = B isl / osl = 256 (rho x C)");
    struct roof_setup s = setup_of(&pool, &g, &l);
    struct roof_step step = {.sequences = 64, .tokens_per_sequence = 1, .context = 1125,
                             .prefill_prompts = 256.0 / 1000, .prefill_tokens_per_prompt = 1000,
                             .prefill_context = 500};
    struct roof_point r;
    roof_step(&s, &step, &r);
    double mean_field = r.step_s;
    CHECK_REL(a.decode.point.compute_s, r.compute_s, 1e-12,
              "the point's terms: roof_step(64 x 1 token at 1125; 0.256 prompts x 1000 at 500)");
    /* the steps as they come (serve.h, "Steps that vary"): closed-loop with alike requests, a
     * request ends every 250 / 64 steps and its replacement's prompt rides whole in the next step:
     * 25.6% of steps carry one prompt of 1,000 tokens, the others none */
    struct roof_step none = {.sequences = 64, .tokens_per_sequence = 1, .context = 1125};
    struct roof_step one = {.sequences = 64, .tokens_per_sequence = 1, .context = 1125, .chunk_tokens = 1000,
                            .chunk_context = 500};
    struct roof_point r0, r1;
    roof_step(&s, &none, &r0);
    roof_step(&s, &one, &r1);
    double T = 0.744 * r0.step_s + 0.256 * r1.step_s;
    CHECK_REL(a.decode.step_s, T, 1e-12, "step = 0.744 x the decode step + 0.256 x the step carrying a prompt");
    CHECK(T > mean_field, "the prompt on its step costs more than its share spread over every step (%.4f > %.4f ms)",
          T * 1e3, mean_field * 1e3);

    /* the terms by hand:
     * weights = 69.5e9 streamed params x 2 B / TP 8 / 4.8 TB/s ~ 3.62 ms */
    double weights = streamed * 2 / 8 / hbm;
    CHECK_REL(a.decode.point.weights_s, weights, 1e-12, "weights = (params - embedding) x 2 B / TP 8 / 4.8 TB/s");
    /* compute = (2 x streamed / 8 x (64 + 256) tokens + 32,768 x 80 x (64 x 1125 + 256 x 500) / 8)
     *         = (5.56e12 + 6.6e10) FLOPs / 989 TFLOP/s ~ 5.69 ms */
    double compute = (2 * streamed / 8 * (64 + 256) +
                      attention_per_token_layer * 80 * (64.0 * 1125 + 256.0 * 500) / 8) / flops;
    CHECK_REL(a.decode.point.compute_s, compute, 1e-12, "compute = matmuls of 320 tokens + attention, / TP 8 / 989 TF");
    /* KV read: 64 sequences at 1125 tokens and 0.256 prompts at 500, 327,680 B a token, / 8 ~ 0.61 ms */
    double kv = (64.0 * 1125 + 0.256 * 500) * kv_per_token / 8 / hbm;
    CHECK_REL(a.decode.point.kv_s, kv, 1e-12, "KV = (64 x 1125 + 0.256 x 500) tokens x 327,680 B / 8 / 4.8 TB/s");
    /* TP all-reduce: 2 x 7/8 x 320 tokens x 8192 x 2 B, twice a layer, 80 layers, at 450 GB/s ~ 3.3 ms */
    double allreduce = 2 * 7.0 / 8 * 320 * 8192 * 2 * 2 * 80 / nvlink;
    CHECK_REL(a.decode.point.tp_s, allreduce, 1e-12, "TP all-reduce of 320 tokens over NVLink");
    /* 5.69 ms of compute beats 3.62 + 0.62 ms of memory and 3.26 ms of network: compute binds */
    CHECK_REL(mean_field, fmax(fmax(compute, weights + kv), allreduce), 1e-12,
              "the mean step = max(compute, weights + KV, network)");
    CHECK(a.decode.point.bound == ROOF_COMPUTE, "the prefill share makes the step compute-bound");

    /* the prefill tokens' share: against the decode-only step of the same batch, compute grows by
     * exactly 256 tokens' matmuls (2 x streamed / 8 each) and their attention at context 500 */
    struct serve_instance d;
    CHECK(serve_decode_instance(&pool, &g, &l, &w, 64, &d), "the same batch as a decode-only instance");
    double prefill_flops = 2 * streamed / 8 * 256 + attention_per_token_layer * 80 * 500 * 256 / 8;
    CHECK_REL(a.decode.point.compute_s - d.point.compute_s, prefill_flops / flops, 1e-9,
              "compute grows by the 256 prefill tokens' FLOPs (matmuls + attention at 500) / 989 TF");
    CHECK_REL(a.decode.point.weights_s, d.point.weights_s, 1e-15, "the weights stream once for both");

    /* serve.h's aggregated equations, y = 1, C = 8192, n = 8 */
    CHECK_REL(a.tpot_s, T, 1e-15, "TPOT = T / y = T (p50: the mean)");
    /* a request's TPOT is the mean of its 249 steps, each independently one with a prompt or not:
     * variance 0.256 x 0.744 x (T_1 - T_0)^2 / 249, its p99 2.3263 standard deviations above */
    double spread = sqrt(0.256 * 0.744 * (r1.step_s - r0.step_s) * (r1.step_s - r0.step_s) / 249);
    CHECK_REL(a.tail.tpot_s[2], T + 2.3263478740408408 * spread, 1e-9, "TPOT p99 = T + z_0.99 x that spread");
    /* alike requests one by one (evenly spaced here): the 64 lives are alike, so in the 249 steps
     * of one each of the 63 others' prompts comes exactly once, and its own rode the step before
     * its first token: 63 of its steps carry a prompt, 186 none, for every request (the mean step
     * less its own prompt's share, T - 0.744 (T_1 - T_0) / 249: a cohort of one unit) */
    struct serve_workload even = workload(1000, 250);
    even.arrivals = SERVE_CONSTANT;
    struct serve_point e;
    CHECK(serve_aggregated(&pool, &g, &l, &even, 64, &e), "evenly spaced, batch 64: a point");
    double one_by_one = (186 * r0.step_s + 63 * r1.step_s) / 249;
    CHECK_REL(e.tail.tpot_s[0], one_by_one, 1e-12, "one by one: TPOT p50 = (186 T_0 + 63 T_1) / 249");
    CHECK_REL(e.tail.tpot_s[2], one_by_one, 1e-12, "and its p99 the same: every life alike");
    CHECK_REL(e.decode.step_s, T, 1e-12, "the mean step T as when the starts spread");
    /* TTFT closed-loop: the request is sent as one ends, at a step's end, and its prompt rides
     * whole (1000 <= C) in the next step beside the 64 decode sequences: compute = matmuls of
     * 64 + 1000 tokens and attention (64 at 1125, 1000 at 500), / TP 8 / 989 TF */
    struct roof_point c = r1;
    CHECK_REL(c.compute_s,
              (2 * streamed / 8 * (64 + 1000) + attention_per_token_layer * 80 * (64.0 * 1125 + 1000.0 * 500) / 8) /
                  flops,
              1e-12, "the chunk's step: matmuls of 1,064 tokens and their attention");
    CHECK_REL(a.ttft_s, c.step_s, 1e-12, "TTFT p50 = the step carrying the 1,000-token chunk");
    /* requests end 0.256 a step, evenly: a step never starts two of them, so the prompt's step
     * carries it alone at every percentile */
    CHECK_REL(a.tail.ttft_s[2], c.step_s, 1e-12, "TTFT p99 = the same step: no other prompt rides with it");
    struct roof_point alone;
    roof_prefill(&s, 1, 1000, &alone);
    CHECK(a.ttft_s >= alone.step_s, "TTFT is at least the prompt's prefill alone on the instance");
    /* a 65,536-token prompt in 8 chunks of 8,192 beside 8 sequences: the chunks priced at their
     * mean context (serve.c) still cost at least the prompt alone, 8 x its matmuls over TP 8
     * with the weights read 8 times, not once */
    struct serve_workload long_prompt = workload(65536, 1024);
    struct serve_point lp;
    CHECK(serve_aggregated(&pool, &g, &l, &long_prompt, 8, &lp), "Llama 70B TP 8, 8 sequences of 64k + 1k: fits");
    roof_prefill(&s, 1, 65536, &alone);
    CHECK(lp.ttft_s >= alone.step_s, "a 64k prompt's TTFT %.3f s is at least its prefill alone, %.3f s", lp.ttft_s,
          alone.step_s);
    CHECK_REL(a.tokens_per_s_per_device, 64 / T / 8, 1e-12, "tokens/s per device = y B / T / n = 64 / T / 8");
    CHECK_REL(a.tokens_per_s_per_user, 1 / T, 1e-12, "tokens/s per user = 1 / TPOT");
    CHECK_REL(a.decode.requests_per_s, 64 / T / 250, 1e-12, "requests/s = y B / (T osl)");
    /* 700 W a GPU (hgx-h200.xml) over its tokens/s; no price in the pool: no cost */
    CHECK_REL(a.joules_per_token, 700 / (64 / T / 8), 1e-12, "J/token = 700 W / tokens/s per device");
    CHECK(a.cost_per_mtok == 0 && a.meets && a.devices == 8 && a.decode_instances == 1 && a.prefill_instances == 0,
          "no price: no cost; no targets: meets; one instance of 8 devices");

    /* With MTP (K = 1, P = 0.85: y = 1.85), half the prompt cached (isl_eff = 500) and a chunk of
     * 256: P = 1.85 x 64 x 500 / 250 = 236.8 tokens (0.4736 prompts of 500), each decode sequence
     * verifies 2 tokens, prefill context 1000 - 500/2 = 750; rho = 236.8 / 256 = 0.925; the prompt
     * takes ceil(500 / 256) = 2 chunks: TTFT = 2.5 T. */
    struct serve_workload v = workload(1000, 250);
    v.spread_starts = true;
    v.mtp = 1;
    v.mtp_accept = 0.85;
    v.prefix_hit = 0.5;
    v.chunk_tokens = 256;
    struct serve_point b;
    CHECK(serve_aggregated(&pool, &g, &l, &v, 64, &b), "with MTP and a prefix hit: fits (236.8 <= 256)");
    struct roof_step mixed = {.sequences = 64, .tokens_per_sequence = 2, .context = 1125,
                              .prefill_prompts = 236.8 / 500, .prefill_tokens_per_prompt = 500,
                              .prefill_context = 750};
    roof_step(&s, &mixed, &r);
    CHECK_REL(b.decode.point.compute_s, r.compute_s, 1e-12,
              "the point's terms: roof_step(64 x 2 tokens at 1125; 0.4736 prompts x 500 at 750)");
    double mixed_compute = (2 * streamed / 8 * (128 + 236.8) +
                            attention_per_token_layer * 80 * (128.0 * 1125 + 236.8 * 750) / 8) / flops;
    CHECK_REL(b.decode.point.compute_s, mixed_compute, 1e-12,
              "compute = matmuls of 128 + 236.8 tokens + attention (128 at 1125, 236.8 at 750)");
    CHECK_REL(b.prefill_use, 0.925, 1e-12, "rho = 236.8 / 256 = 0.925");
    /* the steps as they come: a 500-token prompt goes in chunks of C = 256, so a step carries units
     * of 256 tokens, 0.4736 x 500 / 256 = 0.925 of them on average: 92.5% of steps carry a chunk
     * of 256 (at the prompts' mean prefill context, 750), 7.5% none */
    struct roof_step bare = {.sequences = 64, .tokens_per_sequence = 2, .draft_passes = 1, .context = 1125};
    struct roof_step unit = bare;
    unit.chunk_tokens = 256;
    unit.chunk_context = 750;
    struct roof_point u0, u1;
    roof_step(&s, &bare, &u0);
    roof_step(&s, &unit, &u1);
    double U = 0.075 * u0.step_s + 0.925 * u1.step_s;
    CHECK_REL(b.decode.step_s, U, 1e-12, "step = 0.075 x the bare step + 0.925 x one carrying a chunk of 256");
    CHECK_REL(b.tpot_s, U / 1.85, 1e-12, "TPOT = T / 1.85");
    /* the 500 computed tokens go in two chunks, 256 at 500 + 128 = 628 (the first, alone beside the
     * decode batch) and 244 at 500 + 256 + 122 = 878, beside what the budget leaves of the step's
     * mean prefill, 256 - 244 = 12 tokens (of prompts at 750); a second unit never joins the first
     * chunk's step, the budget being full: TTFT = the two steps, at every percentile */
    struct roof_step first = {.sequences = 64, .tokens_per_sequence = 2, .draft_passes = 1, .context = 1125,
                              .chunk_tokens = 256, .chunk_context = 628};
    struct roof_step second = first;
    second.chunk_tokens = 244;
    second.chunk_context = 878;
    second.prefill_prompts = 12.0 / 500;
    second.prefill_tokens_per_prompt = 500;
    second.prefill_context = 750;
    struct roof_point c1, c2;
    roof_step(&s, &first, &c1);
    roof_step(&s, &second, &c2);
    CHECK_REL(b.ttft_s, c1.step_s + c2.step_s, 1e-12, "TTFT = the steps of its chunks of 256 and 244");
    CHECK_REL(b.tail.ttft_s[2], b.ttft_s, 1e-12, "and its p99 the same");
    CHECK_REL(b.tokens_per_s_per_device, 1.85 * 64 / U / 8, 1e-12, "tokens/s per device = 1.85 x 64 / T / 8");
}

/* ---- 3. the chunk budget ---- */

static void chunk_budget(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    struct serve_point p;

    /* TP 8 (one DP rank), isl 1000 / osl 250: a batch of B carries 4 B prefill tokens. At C = 256,
     * B = 64 is exactly the budget (256, rho 1) and B = 65 is over it (260). */
    const struct layout tp8 = node_tp8;
    struct serve_workload w = workload(1000, 250);
    w.chunk_tokens = 256;
    CHECK(serve_aggregated(&pool, &g, &tp8, &w, 64, &p) && fabs(p.prefill_use - 1) < 1e-12,
          "chunk 256: batch 64 carries 256 prefill tokens, the whole budget");
    CHECK(serve_aggregated(&pool, &g, &tp8, &w, 63, &p), "batch 63 (252 tokens) is under it");
    CHECK(!serve_aggregated(&pool, &g, &tp8, &w, 65, &p), "batch 65 (260 tokens > 256) is refused");
    w.chunk_tokens = 260;
    CHECK(serve_aggregated(&pool, &g, &tp8, &w, 65, &p), "and at chunk 260 it fits: the budget refused it, not HBM");

    /* The budget is a DP rank's: TP 2 x DP 4, isl 100 / osl 25 (4 B tokens a step, B a rank). */
    struct layout dp4 = {.racks = 1, .devices = 8, .tp = 2, .pp = 1, .dp = 4, .ep = 1};
    struct serve_workload v = workload(100, 25);
    v.chunk_tokens = 1024;
    CHECK(serve_aggregated(&pool, &g, &dp4, &v, 1024, &p), "DP 4, chunk 1024: batch 1024 puts 1024 tokens on each rank");
    CHECK(!serve_aggregated(&pool, &g, &dp4, &v, 1025, &p), "batch 1025 puts 1025 on a rank: refused");
    v.chunk_tokens = 1025;
    CHECK(serve_aggregated(&pool, &g, &dp4, &v, 1025, &p), "and fits at chunk 1025");

    /* Prefill-bound (serve.h): TP 8, isl 20,000 / osl 2, C = 8,192: one sequence brings
     * 20,000 / 2 = 10,000 prompt tokens a step > C, so the instance serves a request every
     * osl' = ceil(2 x 10,000 / 8,192) = 3 steps (budget use 20,000 / 3 / 8,192 = 0.8138), and
     * counts 2 of the 3 decode tokens those steps make */
    struct serve_workload bound = workload(20000, 2);
    bound.chunk_tokens = 8192;
    CHECK(serve_aggregated(&pool, &g, &tp8, &bound, 1, &p), "prefill-bound: batch 1 is served, not refused");
    CHECK_REL(p.decode.requests_per_s * 3 * p.decode.step_s, 1, 1e-12, "a request every 3 steps");
    CHECK_REL(p.prefill_use, 20000.0 / 3 / 8192, 1e-12, "the budget's use 20,000 / 3 / 8,192");
    CHECK_REL(p.tokens_per_s_per_device, 2 * p.decode.requests_per_s / 8, 1e-12,
              "output tokens/s per device: 2 a request, over 8 devices");
    struct roof_point alone;
    serve_decode_step(&pool, &g, &tp8, &bound, 1, &alone);
    CHECK_REL(p.tpot_s, alone.step_s, 1e-12, "closed-loop its one sequence decodes alone: TPOT is its decode step");
    double prefill_alone = serve_prompt_prefill_s(&pool, &tp8, 20000);
    CHECK(p.ttft_s >= prefill_alone * (1 - 1e-9) && p.ttft_s <= 1.2 * prefill_alone,
          "TTFT %.1f ms: the prompt's prefill alone (%.1f ms) in three chunks, nothing beside them", p.ttft_s * 1e3,
          prefill_alone * 1e3);
    CHECK(!serve_aggregated(&pool, &g, &tp8, &bound, 2, &p), "batch 2 (20,000 tokens a step) is refused");
    bound.arrivals = SERVE_POISSON;
    /* at random arrivals the rank's chunk queue must keep up: lambda x 20,000 / 8,192 chunks x a
     * chunk's step (at least an 8,192-token prompt's prefill alone) below 1 */
    double chunk_alone = serve_prompt_prefill_s(&pool, &tp8, 8192);
    CHECK(serve_aggregated(&pool, &g, &tp8, &bound, 1, &p) &&
              p.decode.requests_per_s * 20000 / 8192 * chunk_alone < 1 && isfinite(p.tail.prefill_wait_s),
          "Poisson: the chunk queue keeps up (%.3f of a rank's time in whole chunks), its wait finite (%.1f ms)",
          p.decode.requests_per_s * 20000 / 8192 * chunk_alone, p.tail.prefill_wait_s * 1e3);

    /* HBM at isl + osl: the plan's largest batch fits, one more does not (budget out of the way) */
    struct workload held = pool.precisions;
    held.context = 1250;
    int64_t most = plan_max_batch(&m, &t, &tp8, &held);
    w.chunk_tokens = 1 << 30;
    CHECK(most > 1 && serve_aggregated(&pool, &g, &tp8, &w, most, &p) &&
              !serve_aggregated(&pool, &g, &tp8, &w, most + 1, &p),
          "HBM: the plan's most sequences at 1250 tokens (%lld) fit, one more does not", (long long)most);
    CHECK(!serve_aggregated(&pool, &g, &tp8, &w, 0, &p), "batch 0 is refused");
}

/* ---- 4. disaggregated: the KV transfer and the xPyD ratio ---- */

static void kv_transfer(void)
{
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    /* a GB200 rack with latencies set (the file has none), so that the link's latency shows:
     * 1 us a hop on NVLink, 5 us over the NICs */
    struct topology rack = fixture_topology("topologies/gb200-nvl72.xml");
    rack.hop_latency_s = 1e-6;
    rack.scale_out_latency_s = 5e-6;
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    struct serve_pool on_rack = pool_of(&ds, &rack), on_h200 = pool_of(&ds, &h200);
    struct serve_workload w = workload(1024, 1024);
    struct layout p8 = {.racks = 1, .devices = 8, .tp = 1, .pp = 1, .dp = 8, .ep = 8};
    struct layout d64 = {.racks = 1, .devices = 64, .tp = 1, .pp = 1, .dp = 64, .ep = 64};
    struct layout d72 = {.racks = 1, .devices = 72, .tp = 1, .pp = 1, .dp = 72, .ep = 72};
    struct layout h8 = {.racks = 1, .devices = 8, .tp = 1, .pp = 1, .dp = 8, .ep = 8};
    /* MLA KV at BF16: 61 layers x (512 + 64) elements x 2 B = 70,272 B a token; a 1024-token
     * prompt 71,958,528 B, whole on each device of its rank (kv_split 1), pp 1: one sender */
    const double bytes = 1024.0 * 70272;
    bool up = false;
    /* 8 + 64 = 72 devices fit the rack: NVLink 18 x 50 GB/s = 900 GB/s + 1 us ~ 80.95 us */
    double t = serve_kv_transfer_s(&on_rack, &p8, &on_rack, &d64, &w, &up);
    CHECK(up, "8 prefill + 64 decode devices fit one 72-GPU rack: KV over NVLink");
    CHECK_REL(t, bytes / 900e9 + 1e-6, 1e-12, "t_kv = 71,958,528 B / 900 GB/s + 1 us");
    /* 8 + 72 = 80 > 72: over the NICs, 50 GB/s a GPU + 5 us ~ 1.444 ms */
    t = serve_kv_transfer_s(&on_rack, &p8, &on_rack, &d72, &w, &up);
    CHECK(!up, "8 + 72 devices do not fit one rack: KV over the NICs");
    CHECK_REL(t, bytes / 50e9 + 5e-6, 1e-12, "t_kv = 71,958,528 B / 50 GB/s + 5 us");
    /* prefill on the rack, decode on an HGX H200: two topologies, always the NICs; the latency is
     * the larger of the two (5 us and the H200's unknown 0) */
    t = serve_kv_transfer_s(&on_rack, &p8, &on_h200, &h8, &w, &up);
    CHECK(!up, "prefill on GB200, decode on HGX H200: over the NICs");
    CHECK_REL(t, bytes / 50e9 + 5e-6, 1e-12, "t_kv = 71,958,528 B / min(1 x 50, 1 x 50) GB/s + max(5 us, 0)");

    /* GQA: Llama 3.1 70B's KV is split over min(tp, 8 KV heads) devices, each sending its share,
     * in every pipeline stage. isl 1000: 1000 x 327,680 B = 327.68 MB. Prefill TP 8 on an H200
     * node (8 senders), decode TP 4 x DP 2 on an H100 node (4 receivers): min(8, 4) x 50 GB/s. */
    struct model llama = fixture_model("models/llama-3.1-70b.yaml");
    struct topology h100 = fixture_topology("topologies/hgx-h100.xml");
    struct serve_pool l200 = pool_of(&llama, &h200), l100 = pool_of(&llama, &h100);
    struct serve_workload v = workload(1000, 250);
    const struct layout tp8 = node_tp8;
    struct layout tp4 = {.racks = 1, .devices = 8, .tp = 4, .pp = 1, .dp = 2, .ep = 1};
    struct layout tp4pp2 = {.racks = 2, .devices = 16, .tp = 4, .pp = 2, .dp = 2, .ep = 1};
    t = serve_kv_transfer_s(&l200, &tp8, &l100, &tp4, &v, &up);
    CHECK_REL(t, 1000.0 * 327680 / (4 * 50e9), 1e-12, "GQA: 327.68 MB over min(8, 4) x 50 GB/s = 1.6384 ms");
    /* the same decode TP 4 pipelined over 2 nodes: 4 x 2 = 8 receivers, min(8, 8) x 50 GB/s */
    t = serve_kv_transfer_s(&l200, &tp8, &l100, &tp4pp2, &v, &up);
    CHECK_REL(t, 1000.0 * 327680 / (8 * 50e9), 1e-12, "GQA with PP 2 on decode: 8 receivers, 0.8192 ms");
}

/* The (x, y) serve.h's rate-0 search keeps: for y = 1 .. SERVE_MAX_DECODE_INSTANCES the fewest
 * x with x r_p >= y r_d, the most y r_d osl / (x n_p + y n_d); on a tie (the same x : y) the
 * fewer instances, which come first. */
static void best_ratio(double r_p, double r_d, double osl, double n_p, double n_d, int64_t *x_out,
                       int64_t *y_out, double *rate_out)
{
    double best = -1;
    *x_out = *y_out = 0;
    for (int64_t y = 1; y <= SERVE_MAX_DECODE_INSTANCES; y++) {
        double x = ceil((double)y * r_d / r_p);
        double rate = (double)y * r_d * osl / (x * n_p + (double)y * n_d);
        if (rate > best * (1 + 1e-9)) {
            best = rate;
            *x_out = (int64_t)x;
            *y_out = y;
        }
    }
    *rate_out = best;
}

static void disaggregated_by_hand(void)
{
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct topology rack = fixture_topology("topologies/gb200-nvl72.xml");
    struct graph_summary g;
    analyse(&rack, 1, &g);
    struct serve_pool pool = pool_of(&ds, &rack);
    struct serve_workload w = workload(1024, 1024);
    struct layout p8 = {.racks = 1, .devices = 8, .tp = 1, .pp = 1, .dp = 8, .ep = 8};
    struct layout d64 = {.racks = 1, .devices = 64, .tp = 1, .pp = 1, .dp = 64, .ep = 64};

    /* a prefill batch holds at most 16,384 tokens a DP rank: 16 prompts of 1024, so 128 on DP 8 */
    struct serve_instance pre, dec;
    CHECK(serve_prefill_instance(&pool, &g, &p8, &w, 128, &pre), "prefill DP 8: 128 prompts (16 a rank) fit");
    CHECK(!serve_prefill_instance(&pool, &g, &p8, &w, 129, &pre), "129 prompts put 17 x 1024 > 16,384 on a rank");
    CHECK(serve_prefill_instance(&pool, &g, &p8, &w, 64, &pre), "prefill DP 8: 64 prompts");
    /* S_p = roof_step(64 prompts of 1024 tokens at context 1024 - 512 = 512); r_p = 64 / S_p */
    struct roof_setup s = setup_of(&pool, &g, &p8);
    struct roof_step prompts = {.sequences = 64, .tokens_per_sequence = 1024, .context = 512, .prefilling = true};
    struct roof_point r;
    roof_step(&s, &prompts, &r);
    double S_p = r.step_s, r_p = 64 / S_p;
    CHECK_REL(pre.step_s, S_p, 1e-12, "S_p = roof_step(64 x 1024 tokens at 512)");
    CHECK_REL(pre.requests_per_s, r_p, 1e-12, "r_p = 64 / S_p");

    /* decode 64 GPUs DP 64, B = 4096: T_d = roof_step(4096 x 1 at 1024 + 512), r_d = B / (T_d osl) */
    CHECK(serve_decode_instance(&pool, &g, &d64, &w, 4096, &dec), "decode DP 64: batch 4096");
    s = setup_of(&pool, &g, &d64);
    struct roof_step decode = {.sequences = 4096, .tokens_per_sequence = 1, .context = 1536};
    roof_step(&s, &decode, &r);
    double T_d = r.step_s, r_d = 4096 / (T_d * 1024);
    CHECK_REL(dec.step_s, T_d, 1e-12, "T_d = roof_step(4096 x 1 token at 1536)");
    CHECK_REL(dec.requests_per_s, r_d, 1e-12, "r_d = 4096 / (T_d x 1024)");
    CHECK_REL(dec.point.kv_s, 64 * 1536.0 * 70272 / 8e12, 1e-12,
             "decode KV read: 64 sequences a rank x 1536 tokens x 70,272 B / 8 TB/s");

    /* 8 + 64 GPUs in one rack: KV over NVLink, 71,958,528 B / 900 GB/s (no hop latency in the file) */
    double t_kv = 1024.0 * 70272 / 900e9;
    struct serve_point p;
    CHECK(serve_disaggregated(&pool, &pre, &pool, &dec, &w, 0, &p), "xPyD with no target");
    int64_t x = 0, y = 0;
    double rate = 0;
    best_ratio(r_p, r_d, 1024, 8, 64, &x, &y, &rate);
    printf("# r_p %.3f req/s, r_d %.3f req/s: %lldP%lldD by hand\n", r_p, r_d, (long long)x, (long long)y);
    CHECK(p.prefill_instances == x && p.decode_instances == y,
          "x = ceil(y r_d / r_p) at the best y: %lldP%lldD (got %lldP%lldD)", (long long)x, (long long)y,
          (long long)p.prefill_instances, (long long)p.decode_instances);
    CHECK_REL(p.tokens_per_s_per_device, rate, 1e-12, "tokens/s per device = y r_d osl / (x n_p + y n_d)");
    CHECK_EQ(p.devices, x * 8 + y * 64, "devices = 8 x + 64 y");
    double rho = (double)y * r_d / ((double)x * r_p);
    CHECK_REL(p.prefill_use, rho, 1e-12, "rho = y r_d / (x r_p)");
    CHECK(p.kv_over_scale_up, "KV over the rack's NVLink");
    CHECK_REL(p.kv_transfer_s, t_kv, 1e-12, "t_kv = 71,958,528 B / 900 GB/s");
    CHECK_REL(p.ttft_s, S_p + t_kv, 1e-12, "TTFT = S_p + t_kv: closed-loop, alike prompts come evenly and never wait");

    /* A length mix, half of the prompts 512 tokens and half 1,536 (mean 1,024): a prompt's own batch
     * holds 63 others at the mean and its own tokens, its time and its KV's in proportion, so the
     * long half's own time is S_p (63 x 1,024 + 1,536) / (64 x 1,024) + 1.5 t_kv and the short
     * half's S_p (63 x 1,024 + 512) / (64 x 1,024) + 0.5 t_kv; their mean S_p + t_kv, plus the
     * wait. p99 is at least the long half's, p50 at most the short half's plus the p50 wait. */
    {
        const char *csv = "isl,osl,weight\n512,1024,1\n1536,1024,1\n";
        struct length_mix two;
        struct diags d;
        diags_init(&d);
        bool read = length_mix_read_buffer("two.csv", csv, strlen(csv), &two, &d) == LENGTHS_OK;
        diags_release(&d);
        struct serve_workload mixed = w;
        if (read) {
            serve_workload_set_lengths(&mixed, &two);
            length_mix_release(&two);
        }
        double longer = S_p * (63.0 * 1024 + 1536) / (64.0 * 1024) + 1.5 * t_kv;
        bool made = read && serve_disaggregated(&pool, &pre, &pool, &dec, &mixed, 0, &p);
        CHECK(made && p.tail.ttft_s[2] >= longer * (1 - 1e-12),
              "a two-length mix: p99 TTFT %.2f ms at least the long half's own %.2f ms", p.tail.ttft_s[2] * 1e3,
              longer * 1e3);
        CHECK_REL(p.tail.ttft_mean_s - p.tail.prefill_wait_s, S_p + t_kv, 1e-9,
                  "and its mean TTFT less the mean wait S_p + t_kv, the halves' own times averaging to it");
    }
    /* a sequence joins the running decode instance after its first token and waits out the step in
     * progress, half a step on average (closed loop: always one, every step T_d): over its 1,023
     * tokens after the first, TPOT = T_d + (T_d / 2) / 1023 */
    CHECK_REL(p.tpot_s, T_d * (1 + 0.5 / 1023), 1e-12, "TPOT = T_d + T_d / 2 / 1023 (no MTP)");
    CHECK_REL(p.decode_tokens_per_s_per_device, (double)y * r_d * 1024 / (64.0 * (double)y),
              1e-12, "per decode device: y r_d osl / (64 y)");

    /* a target below S_p + t_kv cannot be met by even an idle prefill pool */
    struct serve_workload capped = w;
    capped.ttft_s = S_p + t_kv - 1e-6;
    CHECK(!serve_disaggregated(&pool, &pre, &pool, &dec, &capped, 0, &p), "TTFT below S_p + t_kv: none");

    /* Sized for R = 1000 requests/s: ceil(R / r_d) decode and ceil(R / r_p) prefill instances,
     * the prefill pool at rho = R / (x r_p); closed-loop, no wait. */
    CHECK(serve_disaggregated(&pool, &pre, &pool, &dec, &w, 1000, &p), "sized for 1000 requests/s");
    int64_t xd = (int64_t)ceil(1000 / r_d), xp = (int64_t)ceil(1000 / r_p);
    CHECK(p.decode_instances == xd && p.prefill_instances == xp,
          "R = 1000: %lld decode = ceil(R / r_d), %lld prefill = ceil(R / r_p) (got %lld, %lld)", (long long)xd,
          (long long)xp, (long long)p.decode_instances, (long long)p.prefill_instances);
    CHECK_EQ(p.devices, xp * 8 + xd * 64, "devices = 8 ceil(R / r_p) + 64 ceil(R / r_d)");
    CHECK_REL(p.ttft_s, S_p + t_kv, 1e-12, "TTFT = S_p + t_kv");

    /* Poisson arrivals at R = 1000/s: the router sends the requests to the x prefill instances in
     * turn, each a batch queue of its own (batch_queue.h, whose chain test_batch_queue holds to
     * closed forms and the simulation). Under a p99 TTFT target of 1.2 S_p + t_kv, x is the fewest
     * whose p99 meets it: the point meets it and keeps up (x r_p > R), its mean wait is the
     * chain's for R, x and the batch's times by size (the instance's points, linear between), and
     * a target a hair below that p99 takes more instances. */
    struct serve_workload open = w;
    open.arrivals = SERVE_POISSON;
    open.percentile = 99;
    open.ttft_s = 1.2 * S_p + t_kv;
    struct serve_instance open_pre; /* under Poisson arrivals it keeps its batch's time by size */
    CHECK(serve_prefill_instance(&pool, &g, &p8, &open, 64, &open_pre) && open_pre.step_s == S_p,
          "the prefill instance of 64 prompts again, for Poisson arrivals");
    CHECK(serve_disaggregated(&pool, &open_pre, &pool, &dec, &open, 1000, &p) && p.meets,
          "Poisson at 1000/s under a p99 TTFT target of 1.2 S_p + t_kv");
    CHECK(p.ttft_s <= open.ttft_s * (1 + 1e-12), "p99 TTFT %.4f ms within the target %.4f ms", p.ttft_s * 1e3,
          open.ttft_s * 1e3);
    CHECK((double)p.prefill_instances * r_p > 1000, "%lld prefill instances keep up with 1000/s (r_p %.1f)",
          (long long)p.prefill_instances, r_p);
    {
        double times[64], chances[64];
        for (int64_t k = 1; k <= 64; k++) {
            int i = 1;
            while (i < open_pre.batch_points - 1 && open_pre.batch_prompts[i] < k)
                i++;
            double k0 = (double)open_pre.batch_prompts[i - 1], k1 = (double)open_pre.batch_prompts[i];
            times[k - 1] = open_pre.batch_times_s[i - 1] +
                           (open_pre.batch_times_s[i] - open_pre.batch_times_s[i - 1]) * ((double)k - k0) / (k1 - k0);
            chances[k - 1] = 1;
        }
        CHECK(open_pre.batch_points == SERVE_PREFILL_BATCH_POINTS && open_pre.batch_prompts[0] == 1 &&
                  open_pre.batch_prompts[open_pre.batch_points - 1] == 64 &&
                  open_pre.batch_times_s[open_pre.batch_points - 1] == S_p,
              "the batch's time kept at %d counts from 1 to 64, S_p at 64", SERVE_PREFILL_BATCH_POINTS);
        CHECK(pre.batch_points == 1 && pre.batch_times_s[0] == S_p, "closed-loop, at the batch alone");
        struct batch_queue_input in = {.arrivals_per_s = 1000, .instances = p.prefill_instances, .batch = 64,
                                       .atoms = 1, .batch_s = times, .batch_weight = chances};
        struct batch_queue_waits waits;
        CHECK(batch_queue_waits(&in, &waits) == BATCH_QUEUE_OK, "the chain at R, x, b = 64");
        CHECK_REL(p.tail.prefill_wait_s, waits.mean_wait_s, 1e-12, "the point's mean wait is the chain's");
    }
    struct serve_point tighter;
    struct serve_workload below = open;
    below.ttft_s = p.ttft_s * (1 - 1e-6);
    bool sized = serve_disaggregated(&pool, &open_pre, &pool, &dec, &below, 1000, &tighter);
    CHECK(sized && tighter.meets && tighter.prefill_instances > p.prefill_instances,
          "a target a hair below that p99: more prefill instances (%lld, was %lld)",
          sized ? (long long)tighter.prefill_instances : 0LL, (long long)p.prefill_instances);

    /* ---- the budget (serve.h): x n_p + y n_d <= B for both pools on the rack ----
     * With a = r_d / r_p, x(y) = ceil(y a). The expected pairs below hold for 10/7 < a <= 13/9,
     * checked first: then x(1..10) = 2, 3, 5, 6, 8, 9, 11, 12, 13, 15 and the pairs take
     * 8 x + 64 y = 80, 152, 232, 304, 384, 456, 536, 608, 680, 760 devices, i.e. 80, 76, 77.3,
     * 76, 76.8, 76, 76.6, 76, 75.6, 76 devices a decode instance. */
    double a = r_d / r_p;
    CHECK(a > 10.0 / 7 && a <= 13.0 / 9, "r_d / r_p = %.4f lies in (10/7, 13/9], where the pairs below hold", a);
    struct serve_pool budgeted = pool;
    /* B = 72, one NVL72 rack: the smallest pair, 2P1D, takes 80 > 72 devices: no deployment */
    budgeted.budget_devices = 72;
    CHECK(!serve_disaggregated(&budgeted, &pre, &budgeted, &dec, &w, 0, &p),
          "budget 72: 8 x 2 + 64 = 80 devices for 2P1D do not fit, so no 8+64 deployment does");
    /* B = 144: 2P1D (80) fits, 3P2D (152) does not; 80 devices, not replicated (2 x 80 > 144) */
    budgeted.budget_devices = 144;
    bool made = serve_disaggregated(&budgeted, &pre, &budgeted, &dec, &w, 0, &p);
    CHECK(made && p.prefill_instances == 2 && p.decode_instances == 1 && p.devices == 80,
          "budget 144: 2P1D on 80 devices (got %lldP%lldD on %lld)", (long long)p.prefill_instances,
          (long long)p.decode_instances, (long long)p.devices);
    CHECK_REL(p.tokens_per_s_per_device, r_d * 1024 / 80, 1e-12,
              "and tokens/s per device = r_d osl / 80, over the devices used, not the 144 of the budget");
    /* B = 700: pairs up to 9 decode instances fit (680), 15P10D (760) does not; 13P9D has the
     * fewest devices a decode instance (75.6), and floor(700 / 680) = 1 copy */
    budgeted.budget_devices = 700;
    made = serve_disaggregated(&budgeted, &pre, &budgeted, &dec, &w, 0, &p);
    CHECK(made && p.prefill_instances == 13 && p.decode_instances == 9 && p.devices == 680,
          "budget 700: 13P9D on 680 devices (got %lldP%lldD on %lld)", (long long)p.prefill_instances,
          (long long)p.decode_instances, (long long)p.devices);
    CHECK_REL(p.tokens_per_s_per_device, 9 * r_d * 1024 / 680, 1e-12, "tokens/s per device = 9 r_d osl / 680");
    CHECK_REL(p.prefill_use, 9 * r_d / (13 * r_p), 1e-12, "rho = 9 r_d / (13 r_p)");
    /* --rate within and beyond the budget: R = 1000 takes 8 ceil(R / r_p) + 64 ceil(R / r_d) =
     * 8 x 3 + 64 x 2 = 152 devices (checked above), within 700 and beyond 144 */
    made = serve_disaggregated(&budgeted, &pre, &budgeted, &dec, &w, 1000, &p);
    CHECK(made && p.meets && p.devices == 152, "sized for 1000 requests/s within 700: 152 devices (got %lld)",
          (long long)p.devices);
    budgeted.budget_devices = 144;
    made = serve_disaggregated(&budgeted, &pre, &budgeted, &dec, &w, 1000, &p);
    CHECK(made && !p.meets && p.devices == 152, "and beyond a budget of 144 it misses");
}

/* ---- 5, 6, 8: the search on DeepSeek-V3 and a GB200 NVL72 rack ---- */

/* Every numeric field of two points, bit for bit (memcmp per field: the struct's padding is not
 * compared). */
static bool same_instance(const struct serve_instance *a, const struct serve_instance *b)
{
#define SAME(f) (memcmp(&a->f, &b->f, sizeof a->f) == 0)
    return SAME(layout.racks) && SAME(layout.devices) && SAME(layout.tp) && SAME(layout.pp) && SAME(layout.dp) &&
           SAME(layout.ep) && SAME(layout.redundant) && SAME(batch) && SAME(step_s) && SAME(requests_per_s) &&
           SAME(point.compute_s) && SAME(point.weights_s) && SAME(point.kv_s) && SAME(point.comm_s) &&
           SAME(point.step_s) && SAME(point.bound);
}

static bool same_point(const struct serve_point *a, const struct serve_point *b)
{
    return SAME(mode) && same_instance(&a->decode, &b->decode) && same_instance(&a->prefill, &b->prefill) &&
           SAME(decode_instances) && SAME(prefill_instances) && SAME(devices) && SAME(ttft_s) && SAME(tpot_s) &&
           SAME(kv_transfer_s) && SAME(kv_over_scale_up) && SAME(prefill_use) && SAME(tokens_per_s_per_device) &&
           SAME(tokens_per_s_per_user) && SAME(decode_tokens_per_s_per_device) && SAME(cost_per_mtok) &&
           SAME(joules_per_token) && SAME(meets);
#undef SAME
}

/* serve.h: Pareto points, most tokens/s per device first; so tokens/s per device falls and per
 * user rises strictly along it (an equal coordinate would make one point dominate the other). */
static bool monotone(const struct serve_point *f, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        if (!(f[i].tokens_per_s_per_device < f[i - 1].tokens_per_s_per_device &&
              f[i].tokens_per_s_per_user > f[i - 1].tokens_per_s_per_user))
            return false;
    return true;
}

static void frontier(const struct serve_pool *pool, const struct serve_workload *w)
{
    struct serve_result a, b;
    if (!serve_search(pool, NULL, w, &a) || !serve_search(pool, NULL, w, &b)) {
        printf("Bail out! serve_search out of memory\n");
        exit(1);
    }
    printf("# DeepSeek-V3 on GB200: %lld layouts, %lld points, frontier %lld (%lld aggregated, %lld disaggregated)\n",
           (long long)a.layouts, (long long)a.points, (long long)a.frontier_count,
           (long long)a.mode_frontier_count[0], (long long)a.mode_frontier_count[1]);
    CHECK(a.found && a.frontier_count >= 5, "a frontier of at least 5 points (%lld)", (long long)a.frontier_count);
    CHECK(monotone(a.frontier, a.frontier_count),
          "frontier: tokens/s per device strictly falls while tokens/s per user strictly rises");
    for (int k = 0; k < 2; k++) {
        bool modes = a.mode_frontier_count[k] >= 1;
        for (int64_t i = 0; i < a.mode_frontier_count[k]; i++)
            modes = modes && a.mode_frontier[k][i].mode == (enum serve_mode)k;
        CHECK(modes, "every point of the %s frontier is %s", serve_mode_name((enum serve_mode)k),
              serve_mode_name((enum serve_mode)k));
        CHECK(monotone(a.mode_frontier[k], a.mode_frontier_count[k]), "and it is monotone too");
    }
    /* a point on the joint frontier is undominated among its own mode's points as well */
    bool in_own = true;
    for (int64_t i = 0; i < a.frontier_count; i++) {
        const struct serve_point *p = &a.frontier[i];
        bool found = false;
        for (int64_t j = 0; j < a.mode_frontier_count[p->mode]; j++)
            found = found || same_point(p, &a.mode_frontier[p->mode][j]);
        in_own = in_own && found;
    }
    CHECK(in_own, "each frontier point is on its own mode's frontier");
    CHECK(a.best.meets && a.best.tpot_s <= w->tpot_s && a.best.ttft_s <= w->ttft_s,
          "the best point meets TPOT %.0f ms (%.2f) and TTFT %.0f ms (%.2f)", w->tpot_s * 1e3, a.best.tpot_s * 1e3,
          w->ttft_s * 1e3, a.best.ttft_s * 1e3);
    /* no frontier point within the targets serves more per device (ties: a part in a million) */
    bool highest = true;
    for (int64_t i = 0; i < a.frontier_count; i++)
        if (a.frontier[i].meets)
            highest = highest && a.best.tokens_per_s_per_device >= a.frontier[i].tokens_per_s_per_device * (1 - 1e-6);
    CHECK(highest, "the best point has the most tokens/s per device of the frontier's points within the targets");
    CHECK_REL(a.best.tokens_per_s_per_device, a.best.mode == SERVE_AGGREGATED
                                                  ? (double)a.best.decode.batch / a.best.decode.step_s /
                                                        (double)a.best.decode.layout.devices
                                                  : (double)a.best.decode_instances * a.best.decode.requests_per_s *
                                                        1024 / (double)a.best.devices,
              1e-12, "its tokens/s per device follows from its instance (y B / T / n, or y r_d osl / devices)");

    /* serve.h: near_best, the fewest devices within SERVE_NEAR_BEST of the best's tokens/s per
     * device; no frontier point that meets the targets on fewer devices reaches it */
    const struct serve_point *n = &a.near_best;
    CHECK(n->meets && n->devices <= a.best.devices &&
              n->tokens_per_s_per_device >= SERVE_NEAR_BEST * a.best.tokens_per_s_per_device,
          "near the best: %lld devices (best %lld) at %.0f tokens/s per device, at least 95%% of %.0f",
          (long long)n->devices, (long long)a.best.devices, n->tokens_per_s_per_device,
          a.best.tokens_per_s_per_device);
    bool fewest = true;
    for (int64_t i = 0; i < a.frontier_count; i++)
        if (a.frontier[i].meets && a.frontier[i].devices < n->devices)
            fewest = fewest && a.frontier[i].tokens_per_s_per_device < SERVE_NEAR_BEST * a.best.tokens_per_s_per_device;
    CHECK(fewest, "and no frontier point within the targets on fewer devices is within 95%% of the best");

    /* 8. determinism */
    bool same = same_point(&a.best, &b.best) && same_point(&a.near_best, &b.near_best) && a.frontier_count == b.frontier_count &&
                a.mode_frontier_count[0] == b.mode_frontier_count[0] &&
                a.mode_frontier_count[1] == b.mode_frontier_count[1] && a.points == b.points &&
                a.layouts == b.layouts;
    for (int64_t i = 0; same && i < a.frontier_count; i++)
        same = same_point(&a.frontier[i], &b.frontier[i]);
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; same && i < a.mode_frontier_count[k]; i++)
            same = same_point(&a.mode_frontier[k][i], &b.mode_frontier[k][i]);
    CHECK(same, "two searches: the same best and frontiers, field for field");

    /* The KV of a disaggregated point moves over the rack's NVLink when its prefill and decode
     * instances fit in one 72-GPU domain (serve.h; serve_kv_transfer_s does so above): e.g. 8 + 64
     * devices, 71,958,528 B at 900 GB/s = 79.95 us (the file gives no hop latency), where the NICs
     * would take 71,958,528 B / 50 GB/s = 1.439 ms. */
    int64_t pairs = 0, over_nvlink = 0;
    double worst = 0;
    for (int64_t i = 0; i < a.mode_frontier_count[1]; i++) {
        const struct serve_point *p = &a.mode_frontier[1][i];
        if (p->prefill.layout.racks == 1 && p->decode.layout.racks == 1 &&
            p->prefill.layout.devices + p->decode.layout.devices <= 72) {
            pairs++;
            over_nvlink += p->kv_over_scale_up && fabs(p->kv_transfer_s - 1024.0 * 70272 / 900e9) <= 1e-12;
            worst = fmax(worst, p->kv_transfer_s);
        }
    }
    CHECK(pairs > 0 && over_nvlink == pairs,
          "search: %lld of %lld disaggregated frontier points whose prefill + decode instance fit one rack "
          "move the KV over NVLink in 79.95 us (slowest %.3f ms)",
          (long long)over_nvlink, (long long)pairs, worst * 1e3);
    serve_result_release(&a);
    serve_result_release(&b);
}

static void rate_sizing(const struct serve_pool *pool, const struct serve_workload *base)
{
    const double rates[] = {1, 10, 100, 1000, 10000};
    int64_t previous = 0;
    bool rising = true, serves = true, counted = true, all_sized = true;
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        struct serve_workload w = *base;
        w.rate = rates[i];
        struct serve_result r;
        if (!serve_search(pool, NULL, &w, &r)) {
            printf("Bail out! serve_search out of memory\n");
            exit(1);
        }
        const struct serve_point *z = &r.sized_point;
        printf("# rate %g: %s, %lld devices (%lld decode x %lld, %lld prefill x %lld)\n", rates[i],
               r.sized ? serve_mode_name(z->mode) : "not sized", (long long)z->devices,
               (long long)z->decode_instances, (long long)z->decode.layout.devices, (long long)z->prefill_instances,
               (long long)z->prefill.layout.devices);
        all_sized = all_sized && r.sized && z->meets;
        rising = rising && z->devices >= previous;
        previous = z->devices;
        /* both pools keep up with R (the prefill pool's r_p is at most its capacity) */
        serves = serves && (double)z->decode_instances * z->decode.requests_per_s >= rates[i] &&
                 (z->mode == SERVE_AGGREGATED ||
                  (double)z->prefill_instances * z->prefill.requests_per_s >= rates[i]);
        counted = counted && z->devices == z->decode_instances * z->decode.layout.devices +
                                               z->prefill_instances * z->prefill.layout.devices;
        serve_result_release(&r);
    }
    CHECK(all_sized, "every rate from 1 to 10,000 requests/s is sized within the targets");
    CHECK(rising, "the sized deployment's devices never fall as the rate rises");
    CHECK(serves, "instances x requests/s >= R for the decode pool and the prefill pool");
    CHECK(counted, "sized devices = decode instances x n_d + prefill instances x n_p");
}

static void search_deepseek(void)
{
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct topology rack = fixture_topology("topologies/gb200-nvl72.xml");
    struct serve_pool pool = pool_of(&ds, &rack);
    struct serve_workload w = workload(1024, 1024);
    w.tpot_s = 0.050;
    w.ttft_s = 0.100;
    frontier(&pool, &w);
    rate_sizing(&pool, &w);
}

/* ---- 7. exhaustive against brute force ---- */

/* Every layout serve.h enumerates for one 8-GPU node (instances of 1, 2, 4, 8 devices, each a
 * slice of the node with its own links; TP dividing n and the 64 heads; PP 1 in one domain;
 * DP n / TP) and every batch from 1 until serve_aggregated refuses one (HBM and the chunk budget
 * only grow with the batch): the most tokens/s per device within the targets. */
static double brute_force(const struct serve_pool *pool, const struct serve_workload *w, int64_t *evaluated)
{
    const struct topology *node = pool->topology;
    double best = 0;
    *evaluated = 0;
    for (int64_t n = 1; n <= node->domain_devices; n *= 2) {
        struct topology slice;
        struct graph_summary g;
        if (!topology_slice(node, n, &slice))
            continue;
        analyse(&slice, 1, &g);
        struct serve_pool on = *pool;
        on.topology = &slice;
        for (int64_t tp = 1; tp <= n; tp++) {
            if (n % tp != 0 || pool->model->attention.heads % tp != 0)
                continue;
            /* a MoE model's routed experts spread over the stage's devices (plan.h) */
            struct layout l = {.racks = 1, .devices = n, .tp = tp, .pp = 1, .dp = n / tp,
                               .ep = model_is_moe(pool->model) ? n : 1};
            struct serve_point p;
            for (int64_t b = 1; serve_aggregated(&on, &g, &l, w, b, &p); b++) {
                ++*evaluated;
                if (p.meets && p.tokens_per_s_per_device > best)
                    best = p.tokens_per_s_per_device;
            }
        }
    }
    return best;
}

static void exhaustive_case(const struct serve_pool *pool, const struct serve_workload *w, const char *name)
{
    int64_t evaluated;
    double expected = brute_force(pool, w, &evaluated);
    struct serve_result r;
    if (!serve_search(pool, NULL, w, &r)) {
        printf("Bail out! serve_search out of memory\n");
        exit(1);
    }
    printf("# %s: brute force %lld points, best %.6f tok/s/device; search %lld points, best %.6f "
           "(%lld devices TP %lld DP %lld, batch %lld)\n",
           name, (long long)evaluated, expected, (long long)r.points, r.best.tokens_per_s_per_device,
           (long long)r.best.decode.layout.devices, (long long)r.best.decode.layout.tp,
           (long long)r.best.decode.layout.dp, (long long)r.best.decode.batch);
    CHECK(expected > 0 && r.found && r.best.mode == SERVE_AGGREGATED, "%s: some point meets the targets", name);
    CHECK_REL(r.best.tokens_per_s_per_device, expected, 1e-9, name);
    serve_result_release(&r);
}

static void exhaustive(void)
{
    struct model m = fixture_model("models/llama-3.1-70b.yaml");
    struct topology node = fixture_topology("topologies/hgx-h200.xml");
    struct serve_pool pool = pool_of(&m, &node);
    /* a budget of one node (8 GPUs): the search's shapes are then the powers of two within it and
     * the node, which the brute force enumerates (without a budget it would also try 2, 4, ...
     * nodes); aggregated points are then floor(8 / n) replicas of an instance, whose tokens/s per
     * device is the instance's */
    pool.budget_devices = 8;
    /* Streaming 69.5e9 params x 2 B takes 139 GB / 4.8 TB/s = 29 ms a GPU: 14.5 ms a step on TP 2,
     * 7.2 ms on TP 4, 3.6 ms on TP 8. A 4 ms TPOT leaves TP 8 a few sequences' worth of time (the
     * target, not compute, caps the batch); at 15 ms TP 2 and TP 4 qualify too and the batch
     * grows until compute (5 tokens a sequence a step, 1 decode + 4 prefill) limits it. */
    struct serve_workload w = workload(1000, 250);
    w.mode = SERVE_AGGREGATED;
    w.tpot_s = 0.004;
    exhaustive_case(&pool, &w, "Llama 70B on HGX H200, TPOT 4 ms: search best = brute force");
    w.tpot_s = 0.015;
    exhaustive_case(&pool, &w, "Llama 70B on HGX H200, TPOT 15 ms: search best = brute force");
    /* with MTP, a prefix cache, a small chunk (TTFT several steps) and both targets */
    w.mtp = 2;
    w.mtp_accept = 0.7;
    w.prefix_hit = 0.25;
    w.chunk_tokens = 512;
    w.tpot_s = 0.006;
    w.ttft_s = 0.040;
    exhaustive_case(&pool, &w, "with MTP 2, prefix hit 0.25, chunk 512, TPOT 6 ms, TTFT 40 ms: the same");

    /* a MoE model, where data-parallel attention (DP > 1, so a rank's load steps at multiples of
     * DP) and EP over the instance enter: Qwen3-30B-A3B, long outputs, a 10 ms TPOT */
    struct model qwen = fixture_model("models/qwen3-30b-a3b.yaml");
    struct serve_pool moe = pool_of(&qwen, &node);
    moe.budget_devices = 8; /* one node, as above */
    struct serve_workload v = workload(1000, 2000);
    v.mode = SERVE_AGGREGATED;
    v.tpot_s = 0.010;
    exhaustive_case(&moe, &v, "Qwen3-30B-A3B on HGX H200, isl 1000 osl 2000, TPOT 10 ms: the same");
    /* short outputs (62.5 prompt tokens a sequence a step) under a tight TPOT: here the best batch
     * is a multiple of DP below the largest within the target, which the search must try too */
    v = workload(1000, 16);
    v.mode = SERVE_AGGREGATED;
    v.tpot_s = 0.004;
    exhaustive_case(&moe, &v, "Qwen3-30B-A3B on HGX H200, isl 1000 osl 16, TPOT 4 ms: the same");
}

/* ---- 10. the budget in the search, what it says when nothing fits, and one row per point ---- */

static struct serve_result searched(const struct serve_pool *pool, const struct serve_workload *w)
{
    struct serve_result r;
    if (!serve_search(pool, NULL, w, &r)) {
        printf("Bail out! serve_search out of memory\n");
        exit(1);
    }
    return r;
}

/* Whether p's devices are its instances' (serve.h: decode instances x n_d + prefill x n_p) and
 * within `budget`. */
static bool held(const struct serve_point *p, int64_t budget)
{
    return p->devices == p->decode_instances * p->decode.layout.devices +
                             p->prefill_instances * p->prefill.layout.devices &&
           p->devices <= budget;
}

/* DeepSeek-V3 on one GB200 NVL72 rack (72 GPUs, the file's one domain), a 50 ms TPOT: in
 * each mode the best deployment and every frontier point use at most the rack's 72 GPUs (the
 * issue's case answered 824: 40P7D of 8 + 72). */
static void budget_search(void)
{
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct topology rack = fixture_topology("topologies/gb200-nvl72.xml");
    struct serve_pool pool = pool_of(&ds, &rack);
    pool.budget_devices = 72;
    const enum serve_mode modes[] = {SERVE_AGGREGATED, SERVE_DISAGGREGATED};
    for (int k = 0; k < 2; k++) {
        struct serve_workload w = workload(1024, 1024);
        w.tpot_s = 0.050;
        w.mode = modes[k];
        struct serve_result r = searched(&pool, &w);
        bool all_held = r.frontier_count > 0;
        for (int64_t i = 0; i < r.frontier_count; i++)
            all_held = all_held && held(&r.frontier[i], 72) && r.frontier[i].mode == modes[k];
        CHECK(r.fits && r.found && held(&r.best, 72), "%s, budget 72: the best uses %lld devices, at most 72",
              serve_mode_name(modes[k]), (long long)r.best.devices);
        CHECK(all_held, "and each of the %lld frontier points at most 72", (long long)r.frontier_count);
        if (modes[k] == SERVE_AGGREGATED)
            /* as many replicas as the rack holds: floor(72 / n) */
            CHECK(r.best.decode_instances == 72 / r.best.decode.layout.devices,
                  "aggregated: %lld replicas of %lld devices = floor(72 / n)", (long long)r.best.decode_instances,
                  (long long)r.best.decode.layout.devices);
        serve_result_release(&r);
    }
    /* --rate within a budget: at most best tokens/s per device x 72 / osl requests/s fit in 72
     * devices (no point within the targets makes more a device); 10,000 requests/s of 1,024
     * tokens is more, so none is sized */
    struct serve_workload w = workload(1024, 1024);
    w.tpot_s = 0.050;
    w.rate = 10000;
    struct serve_result r = searched(&pool, &w);
    CHECK(r.found && 10000 > r.best.tokens_per_s_per_device * 72 / 1024 && !r.sized,
          "10,000 requests/s > %.0f (the best %.0f tokens/s a device x 72 / 1,024): not sized within 72",
          r.best.tokens_per_s_per_device * 72 / 1024, r.best.tokens_per_s_per_device);
    serve_result_release(&r);
}

/* DeepSeek-V3 on one HGX H100 node: 671.026 GB of FP8 weights (rackplan model) against 8 x 80 GB
 * less the 10% reserve = 576 GB, so no instance of at most 8 GPUs holds it; `fit` then tries
 * whole domains, and 16 GPUs hold 671.026 / 16 = 41.9 GB each plus 8 GB of reserve in 80 GB.
 * Without targets nothing binds: the answer is that it does not fit, on 16 devices. */
static void no_fit(void)
{
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct topology node = fixture_topology("topologies/hgx-h100.xml");
    struct serve_pool pool = pool_of(&ds, &node);
    pool.budget_devices = 8;
    struct serve_workload w = workload(1024, 1024);
    struct serve_result r = searched(&pool, &w);
    const struct serve_point *reachable;
    CHECK(!r.fits && !r.found && r.points == 0 && r.frontier_count == 0,
          "DeepSeek-V3 on 8 H100s: does not fit, nothing evaluated");
    CHECK_EQ(r.min_devices, 16, "the fewest devices that hold it: 16 (2 domains), as fit says");
    CHECK(serve_binding_target(&w, &r, &reachable) == SERVE_BINDS_NONE && !reachable,
          "no target set: none binds");
    serve_result_release(&r);
    pool.budget_devices = 16; /* the answer given, it fits */
    r = searched(&pool, &w);
    CHECK(r.fits && r.found && r.best.devices <= 16, "with a budget of 16 it fits and is served");
    serve_result_release(&r);
}

/* What a point misses, as the frontier prints it: the DeepSeek-R1 mix's batch 259 was marked
 * "misses TPOT" at a TPOT of 23.5 ms against 80, where its TTFT held only without the slot's
 * margin (serve.h, SERVE_SLOT_WAIT_MARGIN). Targets TTFT 2 s, TPOT 80 ms; each point by hand. */
static void misses(void)
{
    struct serve_workload w = workload(1024, 1024);
    w.ttft_s = 2;
    w.tpot_s = 0.080;
    struct serve_point p = {.ttft_s = 0.055, .ttft_margin_s = 2.5, .tpot_s = 0.0235};
    CHECK(strcmp(serve_point_misses(&w, &p), "misses TTFT with twice the KV-slot waits") == 0,
          "TTFT 55 ms, 2.5 s with twice the waits, TPOT 23.5 ms: %s", serve_point_misses(&w, &p));
    p.tpot_s = 0.081;
    CHECK(strcmp(serve_point_misses(&w, &p), "misses TPOT, and TTFT with twice the KV-slot waits") == 0,
          "and TPOT 81 ms: %s", serve_point_misses(&w, &p));
    p.ttft_margin_s = 0;
    CHECK(strcmp(serve_point_misses(&w, &p), "misses TPOT") == 0, "TPOT 81 ms alone: %s", serve_point_misses(&w, &p));
    p.ttft_s = 2.1;
    CHECK(strcmp(serve_point_misses(&w, &p), "misses TTFT and TPOT") == 0, "TTFT 2.1 s too: %s",
          serve_point_misses(&w, &p));
    p.tpot_s = 0.0235;
    CHECK(strcmp(serve_point_misses(&w, &p), "misses TTFT") == 0, "TTFT 2.1 s alone: %s", serve_point_misses(&w, &p));
    p.ttft_s = 0.055;
    CHECK(strcmp(serve_point_misses(&w, &p), "beyond the budget") == 0, "within both, yet not met: %s",
          serve_point_misses(&w, &p));
    p.unsettled = true;
    CHECK(strcmp(serve_point_misses(&w, &p), "does not settle") == 0, "unsettled: %s", serve_point_misses(&w, &p));
    p.meets = true;
    CHECK(serve_point_misses(&w, &p) == NULL, "met: nothing");
}

/* Which target binds: on the rack, a TPOT no step reaches binds (0.01 ms: a step reads at least
 * the 36.6e9 active FP8 weights, 36.6 GB / (72 x 8 TB/s) = 0.064 ms on all 72 GPUs), and the best
 * reachable is at a batch of one (step time never falls as the batch grows); a TTFT no prompt
 * reaches binds when it is the only target (1 us: a prompt's 1,024 x 2 x 36.6e9 = 75 TFLOP would
 * need 75 EFLOP/s). */
static void binding_target(void)
{
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct topology rack = fixture_topology(gb200_at_186e9);
    struct serve_pool pool = pool_of(&ds, &rack);
    pool.budget_devices = 72;
    struct serve_workload w = workload(1024, 1024);
    w.tpot_s = 0.01e-3;
    struct serve_result r = searched(&pool, &w);
    const struct serve_point *reachable;
    enum serve_binding b = serve_binding_target(&w, &r, &reachable);
    CHECK(!r.found && b == SERVE_BINDS_TPOT && reachable && reachable->tpot_s > w.tpot_s,
          "TPOT 0.01 ms: TPOT binds, the lowest reachable %.3f ms", reachable ? reachable->tpot_s * 1e3 : 0);
    /* the latency chain makes small batches' steps equally short: the lowest TPOT is at batch 1
     * or where the chain binds */
    CHECK(reachable && (reachable->decode.batch == 1 || reachable->decode.point.bound == ROOF_LATENCY),
          "at a batch of 1, or where the latency chain binds (batch %lld)",
          reachable ? (long long)reachable->decode.batch : 0LL);
    /* with no TTFT target every point is on the frontier's ground, so its last row (the most
     * tokens/s per user) has the lowest TPOT */
    CHECK(reachable && r.frontier_count > 0 &&
              reachable->tpot_s <= 1 / r.frontier[r.frontier_count - 1].tokens_per_s_per_user * (1 + 1e-12),
          "no frontier point has a lower TPOT");
    serve_result_release(&r);
    w = workload(1024, 1024);
    w.ttft_s = 1e-6;
    r = searched(&pool, &w);
    b = serve_binding_target(&w, &r, &reachable);
    CHECK(!r.found && b == SERVE_BINDS_TTFT && reachable && reachable->ttft_s > w.ttft_s,
          "TTFT 1 us: TTFT binds, the lowest reachable %.3f ms", reachable ? reachable->ttft_s * 1e3 : 0);
    serve_result_release(&r);
}

/* serve.h: one frontier row per operating point. Llama 3.1 70B (dense, so data-parallel replicas
 * share nothing) at TP 8 on two HGX H200 nodes: a 16-GPU instance of TP 8 x DP 2 with a batch of
 * 2 is the 8-GPU TP 8 instance with a batch of 1, twice; both are searched (each is its log
 * grid's first batch) and the row kept is the 8-GPU one. */
static bool copies(const struct serve_point *a, const struct serve_point *b)
{
    const struct layout *x = &a->decode.layout, *y = &b->decode.layout;
    return a->mode == b->mode && x->tp == y->tp && x->pp == y->pp &&
           a->decode.batch * y->dp == b->decode.batch * x->dp &&
           fabs(a->tokens_per_s_per_device - b->tokens_per_s_per_device) <= 1e-6 * a->tokens_per_s_per_device &&
           fabs(a->tokens_per_s_per_user - b->tokens_per_s_per_user) <= 1e-6 * a->tokens_per_s_per_user;
}

static void one_row_per_point(void)
{
    struct model m = fixture_model("models/llama-3.1-70b.yaml");
    struct topology node = fixture_topology("topologies/hgx-h200.xml");
    struct serve_pool pool = pool_of(&m, &node);
    pool.precisions.tp = 8;
    pool.budget_devices = 16;
    struct serve_workload w = workload(1024, 1024);
    w.mode = SERVE_AGGREGATED;
    w.tpot_s = 0.030;
    /* the two copies, evaluated here as the search does */
    struct graph_summary g1, g2;
    analyse(&node, 1, &g1);
    analyse(&node, 2, &g2);
    struct layout one = {.racks = 1, .devices = 8, .tp = 8, .pp = 1, .dp = 1, .ep = 1};
    struct layout two = {.racks = 2, .devices = 16, .tp = 8, .pp = 1, .dp = 2, .ep = 1};
    struct serve_point a, b;
    bool both = serve_aggregated(&pool, &g1, &one, &w, 1, &a) && serve_aggregated(&pool, &g2, &two, &w, 2, &b);
    CHECK(both && copies(&a, &b),
          "TP 8 on 8 GPUs at batch 1 and TP 8 x DP 2 on 16 at batch 2: one operating point (%.9g and %.9g "
          "tokens/s per device)",
          a.tokens_per_s_per_device, b.tokens_per_s_per_device);
    struct serve_result r = searched(&pool, &w);
    bool distinct = true, small_kept = false, large_kept = false;
    for (int64_t i = 0; i < r.frontier_count; i++) {
        const struct serve_point *p = &r.frontier[i];
        for (int64_t j = i + 1; j < r.frontier_count; j++)
            distinct = distinct && !copies(p, &r.frontier[j]);
        small_kept |= p->decode.layout.devices == 8 && p->decode.batch == 1;
        large_kept |= p->decode.layout.devices == 16 && p->decode.layout.dp == 2 && p->decode.batch == 2;
    }
    CHECK(distinct, "no two of the %lld frontier rows are copies of one point", (long long)r.frontier_count);
    CHECK(small_kept && !large_kept, "the 8-GPU copy is the row kept, not the 16-GPU one");
    serve_result_release(&r);
}

/* ---- 9. a TPU pod is not one instance ---- */

static void tpu_pod(void)
{
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct topology pod = fixture_topology("topologies/tpu7x-ironwood-pod.xml");
    struct serve_pool pool = pool_of(&ds, &pod);
    struct serve_workload w = workload(1024, 1024);
    struct serve_result r;
    if (!serve_search(&pool, NULL, &w, &r)) {
        printf("Bail out! serve_search out of memory\n");
        exit(1);
    }
    /* 16 x 24 x 24 = 9,216 chips in the file's torus */
    CHECK_EQ(pod.domain_devices, 9216, "the Ironwood pod is one 9,216-chip domain");
    CHECK(r.found && r.best.decode.layout.devices < 9216,
          "DeepSeek-V3 on an Ironwood pod: the best instance is %lld chips, not the whole pod",
          (long long)r.best.decode.layout.devices);
    serve_result_release(&r);
}

/* ---- 9. tails: lengths, arrivals, percentiles (issue 26) ---- */

/* Llama 3.1 70B on one HGX H200 at TP 8, as section 2. */
static void tails(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    const struct layout l = node_tp8;
    struct roof_setup s = setup_of(&pool, &g, &l);

    /* Alike requests, closed-loop, B = osl = 250: one request ends every step, so every step
     * carries exactly one 1,000-token prompt: no step differs from another, and every
     * percentile is the mean, TPOT = TTFT = that step (the prompt rides in the step after its
     * request is sent, beside no other). */
    struct serve_workload w = workload(1000, 250);
    w.spread_starts = true; /* their starts spread over a life; started together: below */
    struct serve_point a;
    CHECK(serve_aggregated(&pool, &g, &l, &w, 250, &a), "250 sequences of 1000 + 250: fits");
    struct roof_step one = {.sequences = 250, .tokens_per_sequence = 1, .context = 1125, .chunk_tokens = 1000,
                            .chunk_context = 500};
    struct roof_point r;
    roof_step(&s, &one, &r);
    CHECK_REL(a.tpot_s, r.step_s, 1e-12, "TPOT = the step carrying one prompt");
    CHECK(a.tail.tpot_s[0] == a.tail.tpot_s[1] && a.tail.tpot_s[1] == a.tail.tpot_s[2] &&
              a.tail.tpot_s[2] == a.tail.tpot_mean_s,
          "TPOT p50 = p90 = p99 = mean");
    CHECK_REL(a.tail.ttft_s[0], r.step_s, 1e-12, "TTFT = that step");
    CHECK(a.tail.ttft_s[0] == a.tail.ttft_s[2] && a.tail.ttft_s[2] == a.tail.ttft_mean_s,
          "TTFT p50 = p99 = mean");

    /* The requests started together, as a benchmark's clients at fixed lengths are (serve.h,
     * "Steps as they come"), 64 of 1000/250: the chunk budget first takes floor(8192 / 1000) = 8
     * whole prompts a step, those 8 end their lives in one step and their successors arrive
     * together, so the 64 run as 8 cohorts of 8. A request ends 0.256 a step, so a cohort's step
     * is 0.256 / 8 = 3.2% of the steps, the others carry none. */
    {
        struct serve_workload together = workload(1000, 250);
        struct serve_point c;
        CHECK(serve_aggregated(&pool, &g, &l, &together, 64, &c), "64 sequences of 1000 + 250 started together");
        /* a cohort's step: the 64 decode sequences beside 8 prompts of 1,000 tokens (8,000 at the
         * prompts' mean context 500) */
        struct roof_step none = {.sequences = 64, .tokens_per_sequence = 1, .context = 1125};
        struct roof_step eight = none, single = none;
        eight.chunk_tokens = 8000;
        eight.chunk_context = single.chunk_context = 500;
        single.chunk_tokens = 1000;
        struct roof_point r0, r1, r8;
        roof_step(&s, &none, &r0);
        roof_step(&s, &single, &r1);
        roof_step(&s, &eight, &r8);
        double T = 0.968 * r0.step_s + 0.032 * r8.step_s;
        CHECK_REL(c.decode.step_s, T, 1e-12, "step = 0.968 x the decode step + 0.032 x a cohort's step");
        CHECK_REL(c.tokens_per_s_per_device, 64 / T / 8, 1e-12, "tokens/s per device = 64 / T / 8");
        /* a request's first token ends its cohort's step; it is sent as its predecessor ends, at a
         * step's end, and its cohort's step is the next: TTFT that step at every percentile */
        CHECK_REL(c.ttft_s, r8.step_s, 1e-12, "TTFT = the cohort's step of 8 prompts");
        CHECK_REL(c.tail.ttft_s[2], r8.step_s, 1e-12, "TTFT p99 = the same step");
        CHECK(c.ttft_s > 2 * r1.step_s, "a cohort's TTFT %.1f ms is over twice one prompt's step %.1f ms",
              c.ttft_s * 1e3, r1.step_s * 1e3);
        /* a life is its cohort's step and 249 after it, 250 steps, 8 of them cohorts' (8 x 0.032 x
         * 250): its 249 hold the 7 other cohorts' steps, so TPOT = (242 T_0 + 7 T_8) / 249 for
         * every request, which is serve.h's mean step less (T_8 - T_0) (1 - 0.032) / 249 */
        double tpot = (242 * r0.step_s + 7 * r8.step_s) / 249;
        CHECK_REL(tpot, T - (r8.step_s - r0.step_s) * (1 - 0.032) / 249, 1e-12, "(242 T_0 + 7 T_8) / 249 is that");
        CHECK_REL(c.tpot_s, tpot, 1e-12, "TPOT = (242 T_0 + 7 T_8) / 249");
        CHECK_REL(c.tail.tpot_s[0], tpot, 1e-12, "TPOT p50 = that");
        CHECK_REL(c.tail.tpot_s[2], tpot, 1e-12, "TPOT p99 = that: every life holds the same steps");
    }

    /* 68 started together: 8 cohorts of 8 and one of 4 (serve.c, cohorts_of), whose requests end
     * together too. A request ends 0.272 a step: 8 x 0.272 / 68 = 3.2% of the steps carry a cohort
     * of 8, 0.272 / 68 = 0.4% the cohort of 4 */
    {
        struct serve_workload together = workload(1000, 250);
        struct serve_point c;
        CHECK(serve_aggregated(&pool, &g, &l, &together, 68, &c), "68 sequences of 1000 + 250 started together");
        struct roof_step none = {.sequences = 68, .tokens_per_sequence = 1, .context = 1125};
        struct roof_step eight = none, four = none;
        eight.chunk_tokens = 8000;
        four.chunk_tokens = 4000;
        eight.chunk_context = four.chunk_context = 500;
        struct roof_point r0, r4, r8;
        roof_step(&s, &none, &r0);
        roof_step(&s, &four, &r4);
        roof_step(&s, &eight, &r8);
        double T = 0.964 * r0.step_s + 0.032 * r8.step_s + 0.004 * r4.step_s;
        CHECK_REL(c.decode.step_s, T, 1e-12, "step = 0.964 T_0 + 0.032 T_8 + 0.004 T_4");
        /* TTFT: a cohort's step, T_8 for 64 of the 68 and T_4 for 4: p50 and p99 T_8 */
        CHECK_REL(c.tail.ttft_s[0], r8.step_s, 1e-12, "TTFT p50 = T_8");
        CHECK_REL(c.tail.ttft_s[2], r8.step_s, 1e-12, "TTFT p99 = T_8");
        CHECK_REL(c.tail.ttft_mean_s, (64 * r8.step_s + 4 * r4.step_s) / 68, 1e-12, "TTFT mean (64 T_8 + 4 T_4) / 68");
        /* a life's 249 steps after its first token: in a cohort of 8 the 7 other cohorts of 8 and
         * the one of 4, TPOT (241 T_0 + 7 T_8 + T_4) / 249 for 64 of the 68 (p50, p90); in that of
         * 4 the 8 cohorts of 8, (241 T_0 + 8 T_8) / 249 for 4 (5.9%: p99) */
        double of8 = (241 * r0.step_s + 7 * r8.step_s + r4.step_s) / 249, of4 = (241 * r0.step_s + 8 * r8.step_s) / 249;
        CHECK_REL(c.tail.tpot_s[0], of8, 1e-12, "TPOT p50 = (241 T_0 + 7 T_8 + T_4) / 249");
        CHECK_REL(c.tail.tpot_s[1], of8, 1e-12, "TPOT p90 = the same");
        CHECK_REL(c.tail.tpot_s[2], of4, 1e-12, "TPOT p99 = (241 T_0 + 8 T_8) / 249");
        CHECK_REL(c.tail.tpot_mean_s, (64 * of8 + 4 * of4) / 68, 1e-12, "TPOT mean (64 x that + 4 x this) / 68");
    }

    /* The same under Poisson arrivals at the same rate: the batch now fluctuates and prompts come
     * in bunches, so p99 is above p50 and p50 at most the mean step's growth away; a target at
     * p99 never lets more through than the same target at p50. */
    struct serve_workload open = w;
    open.arrivals = SERVE_POISSON;
    struct serve_point b;
    CHECK(serve_aggregated(&pool, &g, &l, &open, 250, &b), "the same batch under Poisson arrivals");
    CHECK(b.tail.tpot_s[2] > b.tail.tpot_s[0] && b.tail.ttft_s[2] > b.tail.ttft_s[0],
          "Poisson: TPOT p99 %.3f > p50 %.3f ms, TTFT p99 %.3f > p50 %.3f ms", b.tail.tpot_s[2] * 1e3,
          b.tail.tpot_s[0] * 1e3, b.tail.ttft_s[2] * 1e3, b.tail.ttft_s[0] * 1e3);
    open.tpot_s = b.tail.tpot_s[1];
    int64_t at50 = serve_largest_batch(&pool, &g, &l, &open, 2000);
    open.percentile = 99;
    int64_t at99 = serve_largest_batch(&pool, &g, &l, &open, 2000);
    CHECK(at99 >= 1 && at99 < at50, "a TPOT target at p99 holds fewer sequences (%lld) than at p50 (%lld)",
          (long long)at99, (long long)at50);

    /* A mix of two classes, half 1,000 / 100 and half 3,000 / 300 (serve.h, serve_lengths): means
     * 2,000 and 200; a decode token attends on average E[osl (isl + osl / 2)] / E[osl] = (0.5 x 100 x
     * 1050 + 0.5 x 300 x 3150) / 200 = 2,625 tokens, and a sequence in flight holds E[osl (isl +
     * osl)] / E[osl] = (0.5 x 100 x 1100 + 0.5 x 300 x 3300) / 200 = 2,750: longer outputs stay in
     * the batch longer */
    struct length_class classes[2] = {{1000, 100, 0.5}, {3000, 300, 0.5}};
    struct length_mix mix = {.classes = classes, .count = 2, .description = "two classes"};
    struct serve_workload mixed = workload(1, 1);
    serve_workload_set_lengths(&mixed, &mix);
    CHECK(mixed.isl == 2000 && mixed.osl == 200, "means 2000 / 200 (got %lld / %lld)", (long long)mixed.isl,
          (long long)mixed.osl);
    CHECK_EQ(mixed.lengths.decode_context, 2625, "decode context (0.5 x 100 x 1050 + 0.5 x 300 x 3150) / 200");
    CHECK_EQ(mixed.lengths.held_context, 2750, "held context (0.5 x 100 x 1100 + 0.5 x 300 x 3300) / 200");
    CHECK_REL(mixed.lengths.isl_second_moment, 0.5 * 1e6 + 0.5 * 9e6, 1e-15, "E[isl^2] = 5e6");
    CHECK(mixed.lengths.bins == 2 && mixed.lengths.prompt_bins == 2, "two output and two prompt bins");
    struct serve_point c;
    CHECK(serve_aggregated(&pool, &g, &l, &mixed, 64, &c), "64 sequences of the mix fit");
    /* the step's KV: at least 64 sequences at 2,625 tokens, 327,680 B a token (80 layers x 2 x 8 x
     * 128 x 2 B) over TP 8, at 4.8 TB/s (the prompts it carries read theirs too) */
    CHECK(c.decode.point.kv_s >= 64.0 * 2625 * 327680 / 8 / 4.8e12 * (1 - 1e-12),
          "the step reads at least 64 x 2,625 tokens of KV");
    struct roof_setup plain = s;
    struct roof_step decode_only = {.sequences = 64, .tokens_per_sequence = 1, .context = 2625};
    roof_step(&plain, &decode_only, &r);
    CHECK(c.decode.point.kv_s >= r.kv_s * (1 - 1e-12), "at least the decode's KV at 2,625 tokens a sequence");
    CHECK(c.tail.tpot_s[2] > c.tail.tpot_s[0], "lengths that vary spread TPOT even closed-loop");
}

/* ---- 10. the prefill pool as an M/D/1 queue, and the simulation beside it ---- */

static void md1(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    const struct layout tp8 = node_tp8;
    struct serve_workload w = workload(1024, 256);
    w.arrivals = SERVE_POISSON;
    struct serve_instance pre, dec;
    CHECK(serve_prefill_instance(&pool, &g, &tp8, &w, 1, &pre) && serve_decode_instance(&pool, &g, &tp8, &w, 64, &dec),
          "a one-prompt prefill instance and a decode instance of 64");
    /* one prefill instance at half its rate: an M/D/1 queue of service S = 1 / r_p, rho = 0.5, its
     * mean wait rho / (2 mu (1 - rho)) = 0.5 S / (2 x 0.5) = S / 2 (the batch queue's chain is exact
     * there, to its queue cut where less than 1e-9 of it lies beyond: 1e-7) */
    double S = 1 / pre.requests_per_s, R = 0.5 * pre.requests_per_s;
    struct serve_point p;
    CHECK(serve_disaggregated(&pool, &pre, &pool, &dec, &w, R, &p) && p.prefill_instances == 1,
          "at R = r_p / 2: one prefill instance");
    CHECK_REL(p.tail.prefill_wait_s, 0.5 / (2 * pre.requests_per_s * 0.5), 1e-7,
              "mean wait rho / (2 mu (1 - rho)) = S / 2");
    CHECK_REL(p.tail.ttft_mean_s, pre.step_s + p.kv_transfer_s + S / 2, 1e-7, "mean TTFT = S_p + t_kv + S / 2");
    /* a decode instance at the most sequences its KV holds: under Poisson arrivals at its own rate
     * its requests wait for a slot there, and the engines reserve that KV before prefill starts
     * (SGLang's decode PreallocQueue), so the wait is TTFT's: the mean adds the slot's mean wait
     * (independent of the prefill pool's), and every percentile is at least the one without it */
    int64_t most = 1; /* the most the KV holds (beyond the batches a search keeps: they settle) */
    for (int64_t high = 1 << 20; most < high;) {
        int64_t mid = most + (high - most + 1) / 2;
        struct serve_instance tried;
        if (serve_decode_instance(&pool, &g, &tp8, &w, mid, &tried))
            most = mid;
        else
            high = mid - 1;
    }
    struct serve_instance full, unwaited;
    struct serve_point waited, alone;
    bool made = serve_decode_instance(&pool, &g, &tp8, &w, most, &full);
    unwaited = full;
    unwaited.slot_wait = (struct queue_wait){0};
    made = made && serve_disaggregated(&pool, &pre, &pool, &full, &w, R, &waited) &&
           serve_disaggregated(&pool, &pre, &pool, &unwaited, &w, R, &alone);
    if (CHECK(made && full.slot_wait.wait_probability > 0.01,
              "decode at its KV cap (%lld sequences): %.1f%% of requests wait for a slot, %.1f ms on average",
              (long long)most, made ? 100 * full.slot_wait.wait_probability : 0,
              made ? 1e3 * full.slot_wait.mean_wait_s : 0)) {
        check_near(waited.tail.ttft_mean_s, alone.tail.ttft_mean_s + full.slot_wait.mean_wait_s, 1e-12,
                  "mean TTFT %.2f ms = %.2f ms without the slot's wait + its mean %.2f ms",
                  waited.tail.ttft_mean_s * 1e3, alone.tail.ttft_mean_s * 1e3, full.slot_wait.mean_wait_s * 1e3);
        CHECK(waited.ttft_margin_s >= waited.ttft_s && alone.ttft_margin_s == 0,
              "with twice as many waiting TTFT's percentile %.1f ms, at least its own %.1f; none without a wait",
              waited.ttft_margin_s * 1e3, waited.ttft_s * 1e3);
        bool above = true;
        for (int l = 0; l < SERVE_PERCENTILES; l++)
            above &= waited.tail.ttft_s[l] >= alone.tail.ttft_s[l];
        CHECK(above && waited.tail.ttft_s[SERVE_PERCENTILES - 1] > alone.tail.ttft_s[SERVE_PERCENTILES - 1],
              "TTFT p50 %.1f, p90 %.1f, p99 %.1f ms with the slot's wait; %.1f, %.1f, %.1f without",
              waited.tail.ttft_s[0] * 1e3, waited.tail.ttft_s[1] * 1e3, waited.tail.ttft_s[2] * 1e3,
              alone.tail.ttft_s[0] * 1e3, alone.tail.ttft_s[1] * 1e3, alone.tail.ttft_s[2] * 1e3);
    }

    /* the simulation of that deployment, 100,000 requests: its mean TTFT within 3% of the
     * analysis' (M/D/1 is exact in the mean; 3% is several standard errors at this count, see
     * test_simulate), byte for byte the same on a second run with its seed */
    struct sim_result x, y;
    w.rate = R; /* the simulation's arrivals: the rate it was sized for */
    CHECK(serve_simulate(&pool, &w, NULL, &p, 100000, 7, &x) == SERVE_SIM_OK &&
              serve_simulate(&pool, &w, NULL, &p, 100000, 7, &y) == SERVE_SIM_OK,
          "the point simulated twice");
    CHECK(memcmp(&x, &y, sizeof x) == 0, "the same seed: the same result");
    CHECK(fabs(x.ttft_s.mean / p.tail.ttft_mean_s - 1) <= 0.03, "simulated mean TTFT %.3f ms, analysis %.3f ms",
          x.ttft_s.mean * 1e3, p.tail.ttft_mean_s * 1e3);
    /* the decode instance is sized for R, so it runs below its planned batch of 64, which the
     * analysis prices: the simulated TPOT is at most the analysis' */
    CHECK(x.tpot_s.mean <= p.tail.tpot_mean_s * 1.01, "simulated mean TPOT %.3f ms, at most the analysis' %.3f ms",
          x.tpot_s.mean * 1e3, p.tail.tpot_mean_s * 1e3);
}

/* ---- 11. an aggregated instance under Poisson arrivals, against its simulation ---- */

/* The analysis' p50 and p99 TTFT and TPOT each within `within` of the simulation's. */
/* A shipped length mix (workloads/), checked to read. */
static bool mix_read(const char *path, const char *name, struct length_mix *mix)
{
    struct diags d;
    diags_init(&d);
    bool read = length_mix_read_csv(path, mix, &d) == LENGTHS_OK;
    diags_release(&d);
    return CHECK(read, "the %s mix reads", name);
}

/* A mix's workload under Poisson arrivals, the targets (0: none) on the 99th percentiles. */
static struct serve_workload mix_workload(const struct length_mix *mix, double ttft_s, double tpot_s)
{
    struct serve_workload w = workload(0, 0);
    serve_workload_set_lengths(&w, mix);
    w.arrivals = SERVE_POISSON;
    w.percentile = 99;
    w.ttft_s = ttft_s;
    w.tpot_s = tpot_s;
    return w;
}

static void tails_within(const char *label, const struct serve_point *p, const struct sim_result *x, double within)
{
    CHECK(fabs(p->tail.ttft_s[0] / x->ttft_s.p50 - 1) <= within, "%sTTFT p50: analysis %.2f ms, simulation %.2f ms",
          label, p->tail.ttft_s[0] * 1e3, x->ttft_s.p50 * 1e3);
    CHECK(fabs(p->tail.ttft_s[2] / x->ttft_s.p99 - 1) <= within, "%sTTFT p99: analysis %.2f ms, simulation %.2f ms",
          label, p->tail.ttft_s[2] * 1e3, x->ttft_s.p99 * 1e3);
    CHECK(fabs(p->tail.tpot_s[0] / x->tpot_s.p50 - 1) <= within, "%sTPOT p50: analysis %.3f ms, simulation %.3f ms",
          label, p->tail.tpot_s[0] * 1e3, x->tpot_s.p50 * 1e3);
    CHECK(fabs(p->tail.tpot_s[2] / x->tpot_s.p99 - 1) <= within, "%sTPOT p99: analysis %.3f ms, simulation %.3f ms",
          label, p->tail.tpot_s[2] * 1e3, x->tpot_s.p99 * 1e3);
}

/* Closed-loop alike requests started together against the simulation, which starts its clients at
 * once: the cohorts (tails) are what it runs. Before them the analysis put TTFT at one
 * prompt's step, an eighth to a quarter of the simulation's, and spread TPOT that the simulation
 * holds alike. A dense model's data-parallel ranks take the requests in turn (the simulation's
 * dispatch group), which deals a cohort's successors to both ranks: no cohorts there, the prompts
 * one by one and every TPOT alike (at 40 sequences the simulation's TTFT is one prompt's step, a
 * quarter of a cohort's, and the two counts' spread had put TPOT p99 14% above it). */
static void cohorts_against_simulation(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    const struct layout tp8 = node_tp8, tp4dp2 = {.racks = 1, .devices = 8, .tp = 4, .pp = 1, .dp = 2, .ep = 1};
    /* the last a prompt of 20,000 tokens in chunks of 8,192: a run of ceil(20,000 / 8,192) = 3
     * full steps (serve.c, aggregated_tails), where the prompt's own chunks had been 16% short */
    struct {
        const char *label;
        const struct layout *l;
        int64_t isl, osl, batch;
        double within;
    } cases[] = {{"TP 8, 64 x 1000/250: ", &tp8, 1000, 250, 64, 0.02},
                 {"TP 8, 90 x 1000/1000: ", &tp8, 1000, 1000, 90, 0.02},
                 {"TP 4 x DP 2, 40 x 2048/512: ", &tp4dp2, 2048, 512, 40, 0.02},
                 {"TP 8, 7 x 20000/500: ", &tp8, 20000, 500, 7, 0.03},
                 /* the ranks take the requests in turn: the analysis one by one (issue 26's 10%);
                  * TTFT p99 -8% (now and then two prompts meet on a rank) */
                 {"TP 4 x DP 2, 41 x 2048/512: ", &tp4dp2, 2048, 512, 41, 0.10},
                 /* prompts longer than the chunk: runs of full steps where the ranks hold as many
                  * clients each (8, 16: TTFT 0% to +4%), their own chunks where they do not (3, 7:
                  * within 1%, where a run is 22% above; TPOT 4-7% below, the ranks holding 2 and
                  * 1 or 4 and 3 sequences where the analysis holds their mean) */
                 {"TP 4 x DP 2, 8 x 20000/500: ", &tp4dp2, 20000, 500, 8, 0.10},
                 {"TP 4 x DP 2, 16 x 20000/500: ", &tp4dp2, 20000, 500, 16, 0.10},
                 {"TP 4 x DP 2, 3 x 20000/500: ", &tp4dp2, 20000, 500, 3, 0.10},
                 {"TP 4 x DP 2, 7 x 20000/500: ", &tp4dp2, 20000, 500, 7, 0.10},
                 /* cohorts of 8 and one of 4: TPOT p99 the cohort of 4's (5.9% of the requests) */
                 {"TP 8, 68 x 1000/250: ", &tp8, 1000, 250, 68, 0.02}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct serve_workload w = workload(cases[i].isl, cases[i].osl);
        struct serve_point p;
        struct sim_result x;
        if (!CHECK(serve_aggregated(&pool, &g, cases[i].l, &w, cases[i].batch, &p) &&
                       serve_simulate(&pool, &w, NULL, &p, 20000, 1, &x) == SERVE_SIM_OK,
                   "%sthe point and its simulation", cases[i].label))
            continue;
        tails_within(cases[i].label, &p, &x, cases[i].within);
    }
    /* the run by hand: 3 steps, each a chunk of 8,192 at the prompts' mean prefill context
     * (20,000 - 20,000 / 2 = 10,000) beside the 7 decode sequences at 20,000 + 500 / 2 */
    struct serve_workload w = workload(20000, 500);
    struct serve_point p;
    struct roof_setup s = setup_of(&pool, &g, &tp8);
    struct roof_step chunk = {.sequences = 7, .tokens_per_sequence = 1, .context = 20250, .chunk_tokens = 8192,
                              .chunk_context = 10000};
    struct roof_point r;
    roof_step(&s, &chunk, &r);
    CHECK(serve_aggregated(&pool, &g, &tp8, &w, 7, &p) && fabs(p.ttft_s / (3 * r.step_s) - 1) <= 1e-12,
          "TTFT %.1f ms = 3 full steps of %.1f ms", p.ttft_s * 1e3, r.step_s * 1e3);

    /* An MoE model's ranks step together (data-parallel attention), each with its own queue of
     * chunks (SGLang's ranks each run a scheduler; the simulation's lanes): Qwen3-30B-A3B on DP 8 x
     * EP 8 at 20,000/500, prompts of 3 chunks. 5 sequences: one cohort, a prompt a rank, its own
     * chunks 5 a step; 11: a cohort of 8 and one of 3; 16: two of 8; 19: two of 8 and one of 3,
     * whose TPOT p99 is the cohort of 3's. The simulation had kept the ranks in one queue taken in
     * order, so a rank's prompt waited behind another's chunks. */
    struct model qwen = fixture_model("models/qwen3-30b-a3b.yaml");
    struct serve_pool qwen_pool = pool_of(&qwen, &t);
    const struct layout dp8 = {.racks = 1, .devices = 8, .tp = 1, .pp = 1, .dp = 8, .ep = 8};
    static const int64_t together[] = {5, 11, 16, 19};
    for (size_t i = 0; i < sizeof together / sizeof *together; i++) {
        char label[64];
        snprintf(label, sizeof label, "DP 8 x EP 8, %lld x 20000/500: ", (long long)together[i]);
        struct sim_result x;
        if (CHECK(serve_aggregated(&qwen_pool, &g, &dp8, &w, together[i], &p) &&
                      serve_simulate(&qwen_pool, &w, NULL, &p, 20000, 1, &x) == SERVE_SIM_OK,
                  "%sthe point and its simulation", label))
            tails_within(label, &p, &x, 0.10);
    }
}

/* With no TTFT target a point whose TTFT percentile rests on waits for KV slots is not taken: Llama
 * 3.1 70B 1k/1k on an H200 node, TP 4 x DP 2 at 1,059 sequences, Poisson, TPOT 60 ms at p99: within
 * the TPOT target, but 0.25% or more of its requests wait for a slot and its p99 TTFT is minutes;
 * a TTFT target that long takes it. */
static void slot_queue_without_ttft_target(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    const struct layout tp4dp2 = {.racks = 1, .devices = 8, .tp = 4, .pp = 1, .dp = 2, .ep = 1};
    struct serve_workload w = workload(1024, 1024);
    w.arrivals = SERVE_POISSON;
    w.percentile = 99;
    w.tpot_s = 0.06;
    struct serve_point p;
    if (!CHECK(serve_aggregated(&pool, &g, &tp4dp2, &w, 1059, &p), "TP 4 x DP 2 at 1,059, Poisson: a point"))
        return;
    CHECK(p.tpot_s <= w.tpot_s && serve_ttft_on_slot_waits(&w, &p) && p.ttft_s > 60,
          "within TPOT (%.2f ms), its p99 TTFT %.0f s on waits for KV slots (%.2f%% wait)", p.tpot_s * 1e3, p.ttft_s,
          p.tail.slot_wait_probability * 100);
    const char *misses = serve_point_misses(&w, &p);
    CHECK(!p.meets && misses && strcmp(misses, "its TTFT on waits for KV slots") == 0,
          "no TTFT target: it does not meet (%s)", misses ? misses : "meets");
    w.ttft_s = 2 * fmax(p.ttft_s, p.ttft_margin_s);
    CHECK(serve_aggregated(&pool, &g, &tp4dp2, &w, 1059, &p) && p.meets,
          "a TTFT target above its TTFT (with the slot's margin) takes it");
}

/* Llama 3.1 70B on an H200 node, TP 8, 1,024/1,024 at 400 sequences, requests at random at the
 * rate that batch serves: the analysis' p50 and p99 TTFT and TPOT within 10% of a simulation of
 * 100,000 requests (issue 26's tolerance; README, "Tail latency": the analysis of this case is
 * within 2-11% of the simulation). Steps carry Poisson counts of prompts whose steps correlate
 * (a long step gathers more for the next: serve.c, settle_once); without that correlation the
 * analysis' batch came out 13% above the simulation's on Qwen3-30B-A3B and its TPOT p99 -67%
 * below on the Azure mix (the README's table before it). */
static void poisson_against_simulation(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    const struct layout tp8 = node_tp8;
    struct serve_workload w = workload(1024, 1024);
    w.arrivals = SERVE_POISSON;
    w.percentile = 99;
    struct serve_point p;
    CHECK(serve_aggregated(&pool, &g, &tp8, &w, 400, &p), "400 sequences, Poisson arrivals: a point");
    struct sim_result x;
    CHECK(serve_simulate(&pool, &w, NULL, &p, 100000, 1, &x) == SERVE_SIM_OK, "the point simulated");
    const double within = 0.10;
    tails_within("", &p, &x, within);
    CHECK(fabs(p.tail.sequences_mean / (x.mean_decoding_sequences / (double)p.decode_instances) - 1) <= within,
          "sequences in flight: analysis %.1f, simulation %.1f", p.tail.sequences_mean,
          x.mean_decoding_sequences / (double)p.decode_instances);
    /* and their spread over time: prompts hold the batch back 44% of the time, and the requests
     * that arrive meanwhile join it together, in clusters (queueing.h); the birth-death law's jump
     * (an arrival holding each sequence back for its prefill) had put the sd 28% below the
     * simulation's (46.5 against 64.2 at 422 sequences) */
    CHECK(fabs(p.tail.sequences_sd / x.decoding_sequences_sd - 1) <= within,
          "their sd: analysis %.1f, simulation %.1f", p.tail.sequences_sd, x.decoding_sequences_sd);
    CHECK(!serve_ttft_on_slot_waits(&w, &p), "the KV holds 1,300: hardly anyone waits for a slot (%.2g)",
          p.tail.slot_wait_probability);
    /* a simulation settles when its warm-up, a fifth of its requests, spans twice the longer of a
     * request's life (TTFT + 1,023 tokens at the mean TPOT) and the batch's relaxation time:
     * requests = 5 x lambda x 2 x that, lambda what the point serves */
    struct serve_settling settling = serve_simulation_settles(&w, &p);
    double life = p.tail.ttft_mean_s + 1023 * p.tail.tpot_mean_s, lambda = p.decode.requests_per_s;
    double by_hand = ceil(5 * lambda * 2 * fmax(life, p.decode.occupancy.relaxation_s));
    CHECK(settling.life_s == life && settling.requests == (int64_t)by_hand,
          "settles at %lld requests: 10 x %.2f req/s x max(life %.2f s, relaxation %.2f s) = %.0f",
          (long long)settling.requests, lambda, life, p.decode.occupancy.relaxation_s, by_hand);
    CHECK(settling.requests <= 100000, "the 100,000 simulated here settle (%lld needed)", (long long)settling.requests);

    /* Qwen3-30B-A3B on the node, DP 8 x EP 8, 2,048/512 at random, at the batch serve chooses for
     * p99 TPOT 20 ms, 2,278: a step carries 4-5 prompts on average, each on one rank in turn (the
     * simulation's ranks take them so, and each step there is priced at its busiest rank's
     * tokens), and past 8 the busiest rank holds two, which nearly doubles its compute. With the
     * composition's points at 8, 12, 18 prompts, the steps of 9 to 11 were priced as if the busiest
     * rank held one: the analysis' TPOT p99 came out 18% below the simulation, its p50 10%. */
    struct model qwen = fixture_model("models/qwen3-30b-a3b.yaml");
    struct serve_pool qwen_pool = pool_of(&qwen, &t);
    const struct layout dp8 = {.racks = 1, .devices = 8, .tp = 1, .pp = 1, .dp = 8, .ep = 8};
    struct serve_workload qw = workload(2048, 512);
    qw.arrivals = SERVE_POISSON;
    qw.percentile = 99;
    CHECK(serve_aggregated(&qwen_pool, &g, &dp8, &qw, 2278, &p), "Qwen3-30B-A3B, 2,278 sequences: a point");
    CHECK(serve_simulate(&qwen_pool, &qw, NULL, &p, 100000, 1, &x) == SERVE_SIM_OK, "the point simulated");
    tails_within("Qwen3-30B-A3B ", &p, &x, within);

    /* Qwen3-235B-A22B on the node, DP 8 x EP 8, 16,000/1,000 at random, at the batch serve
     * chooses for p99 TPOT 60 ms, 58 (a pin: serve's own answer when this was written; the
     * tolerance against the simulation is the check): each prompt two chunks of 8,192, each rank
     * chunking its own, so a step that carries any pays a rank's whole chunk. The prefill chain
     * had served the instance's prompts as one queue of 8 chunks a step (a lone prompt in one
     * step, its busiest rank at one chunk) and was priced at the batch where the occupancy keeps
     * below it: TPOT p50 20% and p99 28% below the simulation, which chose 108 sequences
     * (prefill_chain.h) */
    struct model big = fixture_model("models/qwen3-235b-a22b.yaml");
    struct serve_pool big_pool = pool_of(&big, &t);
    struct serve_workload long_prompts = workload(16000, 1000);
    long_prompts.arrivals = SERVE_POISSON;
    long_prompts.percentile = 99;
    if (CHECK(serve_aggregated(&big_pool, &g, &dp8, &long_prompts, 58, &p) &&
                  serve_simulate(&big_pool, &long_prompts, NULL, &p, 100000, 1, &x) == SERVE_SIM_OK,
              "Qwen3-235B-A22B, 16,000/1,000, 58 sequences: a point, simulated"))
        tails_within("Qwen3-235B-A22B 16,000/1,000 ", &p, &x, within);

    /* The Azure 2023 conversation mix (workloads/, heavy-tailed: prompts to 14,050 tokens) at the
     * batch serve chooses for p99 TTFT 500 ms / TPOT 30 ms, 75: its tails come from runs of full
     * chunk-budget steps that the prefill chain follows (prefill_chain.h); before it, p99 TTFT and
     * TPOT were 22-23% below the simulation (README, "Tail latency"). */
    struct length_mix mix;
    if (!mix_read("workloads/azure-2023-conversation.csv", "Azure conversation", &mix))
        return;
    struct serve_workload azure = mix_workload(&mix, 0, 0);
    CHECK(serve_aggregated(&pool, &g, &tp8, &azure, 75, &p), "Azure mix, 75 sequences, Poisson arrivals: a point");
    CHECK(serve_simulate(&pool, &azure, &mix, &p, 100000, 1, &x) == SERVE_SIM_OK, "the point simulated");
    length_mix_release(&mix);
    tails_within("Azure ", &p, &x, within);

    /* The Azure 2023 code mix (outputs of 28 tokens on average) served disaggregated on the node,
     * TP 2 instances, one prompt a prefill batch, decode batch 2, as serve chooses it for p99 TTFT
     * 600 ms / TPOT 30 ms: 3P1D (at 500 ms none on the node meets p99 TTFT: the longest 1% of the
     * prompts alone take about that; the simulation gives 533 ms at 3P1D). A sequence waits out the
     * decode step in progress when it joins, which short outputs feel in TPOT: without that wait
     * TPOT p99 was 14% below the simulation (README, "Tail latency"). Its prompts' own times at the
     * bins finer toward the longest: at eight even ones TTFT p99 read the longest eighth's mean,
     * 14% below the simulation. */
    if (!mix_read("workloads/azure-2023-code.csv", "Azure code", &mix))
        return;
    struct serve_workload code = mix_workload(&mix, 0.6, 0.030);
    struct topology pair;
    struct graph_summary pair_graph;
    CHECK(topology_slice(&t, 2, &pair), "two devices of the node");
    analyse(&pair, 1, &pair_graph);
    const struct layout tp2 = {.racks = 1, .devices = 2, .tp = 2, .pp = 1, .dp = 1, .ep = 1};
    struct serve_pool node = pool;
    node.budget_devices = 8;
    struct serve_instance pre, dec;
    bool made = serve_prefill_instance(&node, &pair_graph, &tp2, &code, 1, &pre) &&
                serve_decode_instance(&node, &pair_graph, &tp2, &code, 2, &dec) &&
                serve_disaggregated(&node, &pre, &node, &dec, &code, 0, &p);
    CHECK(made && p.prefill_instances == 3 && p.decode_instances == 1, "Azure code mix: 3P1D on the node (got %lldP%lldD)",
          (long long)p.prefill_instances, (long long)p.decode_instances);
    bool simulated = made && serve_simulate(&node, &code, &mix, &p, 100000, 1, &x) == SERVE_SIM_OK;
    length_mix_release(&mix);
    if (!CHECK(simulated, "the disaggregated point simulated"))
        return;
    tails_within("code ", &p, &x, within);
}

/* A search case: a pool, and a workload's lengths, targets and arrivals. */
struct search_case {
    const char *name;
    const struct serve_pool *pool;
    int64_t isl, osl;
    double ttft_s, tpot_s;
    enum serve_arrivals arrivals;
};

static struct serve_workload case_workload(const struct search_case *c)
{
    struct serve_workload w = workload(c->isl, c->osl);
    w.ttft_s = c->ttft_s;
    w.tpot_s = c->tpot_s;
    w.arrivals = c->arrivals;
    return w;
}

/* ---- 12. a stricter percentile serves no more (issue 26) ----
 * The targets bound the workload's percentile of TTFT and TPOT; p99 >= p50 point by point, so the
 * best deployment whose p99 meets them serves at most what the best whose p50 meets them serves,
 * whatever the efficiency: at the bound and at an estimate's (its factors as a fit gives them,
 * below 1 with a host time a sequence). */
static void percentile_order(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    pool.budget_devices = 8;
    struct model qwen = fixture_model("models/qwen3-30b-a3b.yaml");
    struct serve_pool moe = pool_of(&qwen, &t);
    moe.budget_devices = 8;
    struct serve_pool estimate = pool;
    estimate.efficiency = (struct efficiency){.compute = 0.55, .memory = 0.8, .scale_up = 0.7, .scale_out = 0.6,
                                              .experts = 0.7, .latency = 1.5, .sequence_s = 20e-6};
    const struct search_case cases[] = {
        {"Llama 3.1 70B 1k/1k, TTFT 500 / TPOT 30 ms, closed", &pool, 1024, 1024, 0.5, 0.03, SERVE_CLOSED},
        {"the same, Poisson", &pool, 1024, 1024, 0.5, 0.03, SERVE_POISSON},
        {"the same at an estimate's efficiency, Poisson", &estimate, 1024, 1024, 0.5, 0.03, SERVE_POISSON},
        {"Qwen3-30B-A3B 2k/512, TPOT 20 ms, Poisson", &moe, 2048, 512, 0, 0.02, SERVE_POISSON},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct serve_workload w = case_workload(&cases[i]);
        struct serve_result at50, at99;
        w.percentile = 50;
        bool ok = serve_search(cases[i].pool, NULL, &w, &at50);
        w.percentile = 99;
        ok = ok && serve_search(cases[i].pool, NULL, &w, &at99);
        CHECK(ok && at50.found && at99.found &&
                  at99.best.tokens_per_s_per_device <= at50.best.tokens_per_s_per_device * (1 + 1e-12),
              "%s: %.0f tokens/s per device at p99 <= %.0f at p50", cases[i].name, at99.best.tokens_per_s_per_device,
              at50.best.tokens_per_s_per_device);
        serve_result_release(&at50);
        serve_result_release(&at99);
    }
}

/* ---- 13. the best-only search ---- */

/* serve_search_best works out only what can be the best or near it (serve.h): without a budget,
 * its best and near_best are the whole search's, for an aggregated and a disaggregated answer,
 * closed-loop and at p99 under Poisson arrivals, while it evaluates fewer points. */
static void best_only(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool llama;
    llama_h200(&m, &t, &g, &llama);
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct topology rack = fixture_topology("topologies/gb200-nvl72.xml");
    struct serve_pool deepseek = pool_of(&ds, &rack);
    const struct search_case cases[] = {
        {"Llama 3.1 70B on HGX H200 1k/1k, TTFT 500 / TPOT 30 ms, closed", &llama, 1024, 1024, 0.5, 0.03,
         SERVE_CLOSED},
        {"the same at p99, Poisson", &llama, 1024, 1024, 0.5, 0.03, SERVE_POISSON},
        {"DeepSeek-V3 on GB200 NVL72 1k/1k, TPOT 50 ms, closed", &deepseek, 1024, 1024, 0, 0.05, SERVE_CLOSED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct serve_workload w = case_workload(&cases[i]);
        w.percentile = w.arrivals == SERVE_POISSON ? 99 : 50;
        struct serve_result all, best;
        if (!serve_search(cases[i].pool, NULL, &w, &all) || !serve_search_best(cases[i].pool, NULL, &w, &best)) {
            printf("Bail out! serve_search out of memory\n");
            exit(1);
        }
        /* equal within the part in a million at which the search calls two points' rates a tie
         * (serve.c better(), which then prefers more per user: a grid point the best-only search
         * does not try may win that way) */
        CHECK(all.found && best.found &&
                  fabs(best.best.tokens_per_s_per_device - all.best.tokens_per_s_per_device) <=
                      1e-6 * all.best.tokens_per_s_per_device &&
                  best.best.devices == all.best.devices && best.best.mode == all.best.mode,
              "%s: best %.9g tokens/s per device on %lld devices (%s), the whole search's %.9g on %lld", cases[i].name,
              best.best.tokens_per_s_per_device, (long long)best.best.devices, serve_mode_name(best.best.mode),
              all.best.tokens_per_s_per_device, (long long)all.best.devices);
        CHECK(best.near_best.devices == all.near_best.devices &&
                  fabs(best.near_best.tokens_per_s_per_device - all.near_best.tokens_per_s_per_device) <=
                      1e-6 * all.near_best.tokens_per_s_per_device,
              "and near best %.1f on %lld devices, the whole search's %.1f on %lld",
              best.near_best.tokens_per_s_per_device, (long long)best.near_best.devices,
              all.near_best.tokens_per_s_per_device, (long long)all.near_best.devices);
        CHECK(best.points < all.points, "from %lld points against %lld", (long long)best.points,
              (long long)all.points);
        serve_result_release(&all);
        serve_result_release(&best);
    }
}

/* ---- 14. the occupancy's skew in a mix's TPOT ---- */

/* MLPerf's Llama 2 70B mix (workloads/mlperf-llama2-70b.csv) on an H200 node at TP 8, batch 245
 * (what serve chose for TPOT 40 ms / TTFT 2 s at p99 under Poisson arrivals before it asked the
 * batch to settle, 14b): near the compute
 * plateau the batch wanders far above the batch searched, slowly, and a request's TPOT follows
 * the occupancy it lives through, whose step law is skewed to the right. The simulation of this
 * point over 4,000,000 requests (seeds 1-5, README "Tail latency") puts the median TPOT 12.3-13.4
 * ms against a mean of 14.3-15.9, 13-19% below it; the analysis must carry that skew into the
 * mix's TPOT (its median at least 5% below its mean; without the occupancy's skew, 0.2%). */
static void occupancy_skew(void)
{
    struct model m = fixture_model("models/llama-2-70b.yaml");
    struct topology node = fixture_topology("topologies/hgx-h200.xml");
    struct graph_summary g;
    analyse(&node, 1, &g);
    struct serve_pool pool = pool_of(&m, &node);
    struct length_mix mix;
    if (!mix_read("workloads/mlperf-llama2-70b.csv", "MLPerf Llama 2", &mix))
        return;
    struct serve_workload w = mix_workload(&mix, 2, 0.040);
    struct serve_point p;
    bool made = serve_aggregated(&pool, &g, &node_tp8, &w, 245, &p);
    length_mix_release(&mix);
    if (!CHECK(made, "MLPerf Llama 2 mix, 245 sequences: a point"))
        return;
    double median = p.tail.tpot_s[0], mean = p.tail.tpot_mean_s;
    CHECK(p.decode.occupancy.step_third_s3 > 0 && median <= 0.95 * mean,
          "TPOT p50 %.2f ms at least 5%% below its mean %.2f ms (the occupancy's step law: third moment %.3g s^3)",
          median * 1e3, mean * 1e3, p.decode.occupancy.step_third_s3);
}

/* ---- 14b. the batch that settles ----
 * Under Poisson arrivals the sequences in flight are a birth-death process; how many percent its
 * mean moves for a percent more traffic is Var / (G mean) (serve_occupancy.rate_elasticity). Where
 * a step does not grow with the batch the process is M/G/infinity's: its law Poisson, Var = mean,
 * no prompts to cluster (G = 1), so the elasticity is exactly 1. Near the compute plateau it is
 * large, and serve plans no point past SERVE_MOST_RATE_ELASTICITY. */
static void settling(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    /* a decode instance of 16-token prompts and 32-token outputs at 8 sequences: its steps read the
     * 70B weights (141 GB over the node's HBM) and KV of a few hundred tokens, so they hardly grow
     * with the batch */
    struct serve_workload tiny = workload(16, 32);
    tiny.arrivals = SERVE_POISSON;
    struct serve_instance d;
    if (CHECK(serve_decode_instance(&pool, &g, &node_tp8, &tiny, 8, &d), "a decode instance of 8 sequences"))
        CHECK(fabs(d.occupancy.rate_elasticity - 1) <= 0.01 &&
                  fabs(d.occupancy.sequences_variance / d.occupancy.sequences_mean - 1) <= 0.01,
              "M/G/infinity: elasticity %.4f, variance / mean %.4f (both 1)", d.occupancy.rate_elasticity,
              d.occupancy.sequences_variance / d.occupancy.sequences_mean);

    /* MLPerf's Llama 2 70B mix at p99 TPOT 40 ms / TTFT 2 s: at TP 8 the batch of 239 is within
     * both targets by the analysis, but a percent more traffic moves its batch by more than 10%;
     * the simulation of that point ran 317, 505 and 459 sequences in flight over 10^5, 10^6 and
     * 4 x 10^6 requests (README, "Near saturation"). serve leaves it out and says so. */
    struct model l2 = fixture_model("models/llama-2-70b.yaml");
    struct serve_pool node = pool_of(&l2, &t);
    struct length_mix mix;
    if (!mix_read("workloads/mlperf-llama2-70b.csv", "MLPerf Llama 2", &mix))
        return;
    struct serve_workload w = mix_workload(&mix, 2, 0.040);
    struct serve_point at;
    if (CHECK(serve_aggregated(&node, &g, &node_tp8, &w, 239, &at), "MLPerf Llama 2 mix, TP 8, 239 sequences"))
        CHECK(at.tail.tpot_s[2] <= w.tpot_s && at.tail.ttft_s[2] <= w.ttft_s && at.unsettled && !at.meets &&
                  at.tail.sequences_rate_elasticity > 10,
              "within both targets (TPOT p99 %.1f ms), elasticity %.1f: unsettled, not met", at.tail.tpot_s[2] * 1e3,
              at.tail.sequences_rate_elasticity);
    struct serve_result r;
    if (!serve_search(&node, NULL, &w, &r)) {
        printf("Bail out! serve_search out of memory\n");
        exit(1);
    }
    bool left_out = r.found && r.unsettled &&
                    r.unsettled_best.tokens_per_s_per_device > r.best.tokens_per_s_per_device;
    CHECK(left_out && r.best.tail.sequences_rate_elasticity <= SERVE_MOST_RATE_ELASTICITY,
          "the best settles (elasticity %.2f, %.0f tokens/s per device); the better point left out does not (%.1f, "
          "%.0f)",
          r.best.tail.sequences_rate_elasticity, r.best.tokens_per_s_per_device,
          r.unsettled_best.tail.sequences_rate_elasticity, r.unsettled_best.tokens_per_s_per_device);
    bool frontier_settles = true;
    for (int64_t i = 0; i < r.frontier_count; i++)
        frontier_settles &= !r.frontier[i].unsettled;
    CHECK(frontier_settles, "no frontier point is unsettled");
    /* where it settles, the analysis holds: within 10% of the simulation (400,000 requests) at p50
     * and p99 of TTFT and TPOT */
    struct sim_result x;
    if (r.found && CHECK(serve_simulate(&node, &w, &mix, &r.best, 400000, 1, &x) == SERVE_SIM_OK,
                         "the best point simulated"))
        tails_within("MLPerf Llama 2 mix, the point serve chooses: ", &r.best, &x, 0.10);
    serve_result_release(&r);
    length_mix_release(&mix);

    /* a dense model's data-parallel ranks are replicas that step on their own (each its own
     * scheduler): TP 4 x DP 2 at 2b sequences is two TP 4 instances of b, each with half the
     * requests, so the same TTFT and TPOT at every level, twice the sequences in flight and twice
     * their variance (the ranks' sum); to 1e-3, for the steps are settled on grids of either
     * instance's counts and linear between, and the variance to 3e-3: the clusters' law
     * (queueing.h) takes the spread at every count from those grids' interpolated delays, which
     * puts the two variances 0.25% apart (the Poisson law's factors taken to the power 1 / G, the
     * law before, 0.02%) */
    const struct layout tp4dp2 = {.racks = 1, .devices = 8, .tp = 4, .pp = 1, .dp = 2, .ep = 1},
                        tp4 = {.racks = 1, .devices = 4, .tp = 4, .pp = 1, .dp = 1, .ep = 1};
    struct serve_workload k1 = workload(1024, 1024);
    k1.arrivals = SERVE_POISSON;
    k1.percentile = 99;
    struct serve_point two, one;
    if (CHECK(serve_aggregated(&pool, &g, &tp4dp2, &k1, 400, &two) && serve_aggregated(&pool, &g, &tp4, &k1, 200, &one),
              "Llama 3.1 70B 1k/1k: TP 4 x DP 2 at 400, TP 4 at 200")) {
        bool same = fabs(two.decode.requests_per_s / one.decode.requests_per_s - 2) <= 1e-9;
        for (int l = 0; l < SERVE_PERCENTILES; l++)
            same &= fabs(two.tail.ttft_s[l] / one.tail.ttft_s[l] - 1) <= 1e-3 &&
                    fabs(two.tail.tpot_s[l] / one.tail.tpot_s[l] - 1) <= 1e-3;
        CHECK(same, "TTFT p99 %.3f and %.3f ms, TPOT p99 %.4f and %.4f ms", two.tail.ttft_s[2] * 1e3,
              one.tail.ttft_s[2] * 1e3, two.tail.tpot_s[2] * 1e3, one.tail.tpot_s[2] * 1e3);
        CHECK(fabs(two.tail.sequences_mean / one.tail.sequences_mean / 2 - 1) <= 1e-3 &&
                  fabs(two.tail.sequences_sd * two.tail.sequences_sd / (one.tail.sequences_sd * one.tail.sequences_sd) /
                       2 - 1) <= 3e-3,
              "sequences in flight %.2f (sd %.2f) and %.2f (sd %.2f)", two.tail.sequences_mean, two.tail.sequences_sd,
              one.tail.sequences_mean, one.tail.sequences_sd);
    }
}

/* ---- 15. the TTFT a search defers ----
 * Under Poisson arrivals a search sizes each disaggregated prefill pool to the TTFT target from
 * what it learnt of the pool's chain (serve.c prefill_verdicts: by instances below
 * BATCH_QUEUE_PHASES, by one instance's share from there) and works TTFT out only for the points
 * it returns. Each returned point must be what serve_disaggregated, which learns nothing across
 * calls, makes of the same prefill and decode instances at the same arrivals: the same fewest
 * prefill instances, the same TTFT at every level, within the target where the point meets it. */
static void deferred_ttft(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    struct length_mix mix;
    if (!mix_read("workloads/azure-2023-conversation.csv", "Azure 2023 conversation", &mix))
        return;
    const struct search_case llama = {"Llama 3.1 70B 1k/1k", &pool, 1024, 1024, 0.5, 0.03, SERVE_POISSON};
    struct serve_workload fixed = case_workload(&llama), mixed = mix_workload(&mix, 0.5, 0.03);
    fixed.percentile = 99; /* mix_workload's */
    fixed.mode = mixed.mode = SERVE_DISAGGREGATED;
    const struct serve_workload *cases[] = {&fixed, &mixed};
    const char *names[] = {"Llama 3.1 70B 1k/1k", "Llama 3.1 70B, Azure conversation mix"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const struct serve_workload *w = cases[c];
        struct serve_result r;
        if (!serve_search(&pool, NULL, w, &r)) {
            printf("Bail out! serve_search out of memory\n");
            exit(1);
        }
        int64_t checked = 0, wide = 0, differ = 0;
        for (int64_t i = -1; i < r.frontier_count; i++) {
            const struct serve_point *p = i < 0 ? &r.best : &r.frontier[i];
            struct serve_point direct;
            bool made = serve_disaggregated(&pool, &p->prefill, &pool, &p->decode, w, p->prefill_arrivals_per_s,
                                            &direct);
            bool same = made && !p->ttft_deferred && direct.prefill_instances == p->prefill_instances &&
                        (!p->meets || p->ttft_s <= w->ttft_s * (1 + 1e-12));
            for (int l = 0; same && l < SERVE_PERCENTILES; l++)
                same = fabs(direct.tail.ttft_s[l] - p->tail.ttft_s[l]) <= 1e-12 * direct.tail.ttft_s[l];
            if (!same && differ++ < 3)
                printf("# %s: %lld prefill instances, TTFT p99 %.6f s; serve_disaggregated %lld, %.6f s\n",
                       names[c], (long long)p->prefill_instances, p->ttft_s, (long long)direct.prefill_instances,
                       made ? direct.ttft_s : NAN);
            checked++;
            wide += p->prefill_instances >= BATCH_QUEUE_PHASES;
        }
        CHECK(r.found && differ == 0 && wide > 0,
              "%s, TTFT 500 ms / TPOT 30 ms at p99: the best and %lld frontier points (%lld of %lld pools of %d "
              "instances or more) as serve_disaggregated makes them",
              names[c], (long long)r.frontier_count, (long long)wide, (long long)checked, BATCH_QUEUE_PHASES);
        serve_result_release(&r);
    }
    length_mix_release(&mix);
}

/* ---- 15b. max_tokens reserved at admission ----
 * TensorRT-LLM's GUARANTEED_NO_EVICT admits a request only when the KV holds its prompt and its
 * max_tokens (kvCacheManager.h, getRemainingBlocksToCompletion: "for maxNewTokens"), so the batch
 * is what the HBM holds at isl + max_tokens, while each step reads the KV the sequences really
 * have. */
static void max_tokens_reservation(void)
{
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    struct serve_workload own = workload(1024, 1024), reserving = own, longer = workload(1024, 4096);
    reserving.max_tokens = 4096;
    struct workload at = pool.precisions;
    at.context = 1024 + 1024;
    int64_t own_cap = plan_max_batch(&m, &t, &node_tp8, &at);
    at.context = 1024 + 4096;
    int64_t reserved_cap = plan_max_batch(&m, &t, &node_tp8, &at);
    int64_t most = (int64_t)1 << 20;
    int64_t own_batch = serve_largest_batch(&pool, &g, &node_tp8, &own, most),
            reserved_batch = serve_largest_batch(&pool, &g, &node_tp8, &reserving, most),
            longer_batch = serve_largest_batch(&pool, &g, &node_tp8, &longer, most);
    /* 2,048 against 5,120 tokens a sequence: the batch about 2.5 times smaller (pages and the
     * activations' share aside) */
    CHECK(own_batch == own_cap && reserved_batch == reserved_cap && longer_batch == reserved_cap &&
              reserved_cap < own_cap && fabs((double)own_cap / (double)reserved_cap - 2.5) < 0.1,
          "no targets: the batch is what the KV holds at 2,048 tokens a sequence (%lld of %lld) and at "
          "1,024 + max_tokens 4,096 (%lld, as outputs of 4,096: %lld, of %lld)",
          (long long)own_batch, (long long)own_cap, (long long)reserved_batch, (long long)longer_batch,
          (long long)reserved_cap);
    /* at a given batch the reservation changes no step: each reads the KV its sequence has, 1,024 +
     * 512 tokens on average, reserving or not (the longer outputs' 1,024 + 2,048 read twice that) */
    struct serve_point a, b, c;
    bool made = serve_aggregated(&pool, &g, &node_tp8, &reserving, reserved_batch, &a) &&
                serve_aggregated(&pool, &g, &node_tp8, &own, reserved_batch, &b) &&
                serve_aggregated(&pool, &g, &node_tp8, &longer, reserved_batch, &c);
    CHECK(made && a.decode.point.step_s == b.decode.point.step_s && a.decode.point.kv_s == b.decode.point.kv_s &&
              a.tokens_per_s_per_device == b.tokens_per_s_per_device &&
              fabs(c.decode.point.kv_s / a.decode.point.kv_s - 2) < 0.05,
          "max_tokens reserves, it does not lengthen a step: KV read %.3f ms, as without (%.3f), half the "
          "longer outputs' (%.3f)",
          a.decode.point.kv_s * 1e3, b.decode.point.kv_s * 1e3, c.decode.point.kv_s * 1e3);
    /* The MLPerf DeepSeek-R1 mix on one HGX B200 (FP4 weights, FP8 KV, DP 8 x EP 8), TPOT 80 ms
     * and TTFT 300 ms at p99, each request reserving max_tokens 32,768 (the dataset's longest
     * output): the batch is within what the ranks' KV holds at 33,400 tokens a sequence (632 of
     * prompt weighed by its life, and 32,768), less the room the waits for a slot need (0.4% of the
     * requests wait; the simulation's requests, dealt to the ranks in turn, 0.3%: the dealing's
     * regularity is in the analysis, dealt_peakedness), and the analysis stays within 10% of a
     * simulation that admits by the same reservation, p50 and p99 alike. (At the scenario's TTFT
     * 2 s the search goes on to where 1.5% wait, a p99 on the cliff README's "Tail latency"
     * cautions about.) */
    struct topology b200 = fixture_topology("topologies/hgx-b200.xml");
    struct graph_summary gb;
    analyse(&b200, 1, &gb);
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct serve_pool fp4 = pool_of(&ds, &b200);
    fp4.precisions.weights = fp4.precisions.expert_weights = PREC_FP4;
    fp4.precisions.kv = PREC_FP8;
    struct length_mix mix;
    if (!mix_read("workloads/mlperf-deepseek-r1.csv", "MLPerf DeepSeek-R1", &mix))
        return;
    struct serve_workload r1 = workload(0, 0);
    r1.max_tokens = 32768;
    serve_workload_set_lengths(&r1, &mix);
    r1.arrivals = SERVE_POISSON;
    r1.percentile = 99;
    r1.ttft_s = 0.3;
    r1.tpot_s = 0.08;
    const struct layout dp8 = {.racks = 1, .devices = 8, .tp = 1, .pp = 1, .dp = 8, .ep = 8};
    at = fp4.precisions;
    at.context = serve_held_context(&r1);
    int64_t r1_cap = plan_max_batch(&ds, &b200, &dp8, &at);
    int64_t r1_batch = serve_largest_batch(&fp4, &gb, &dp8, &r1, 4096);
    struct serve_point r1_point;
    struct sim_result x = {0};
    made = r1_batch > 0 && serve_aggregated(&fp4, &gb, &dp8, &r1, r1_batch, &r1_point) &&
           serve_simulate(&fp4, &r1, &mix, &r1_point, 100000, 1, &x) == SERVE_SIM_OK;
    length_mix_release(&mix);
    if (!CHECK(made && r1_point.meets && r1_batch <= r1_cap,
               "DeepSeek-R1 mix, max_tokens 32,768, on HGX B200: batch %lld within what the KV holds at %lld "
               "tokens a sequence (%lld), the targets met, simulated",
               (long long)r1_batch, (long long)at.context, (long long)r1_cap))
        return;
    tails_within("max_tokens 32,768: ", &r1_point, &x, 0.10);
}

/* ---- 16. the wait for a KV slot when lengths vary ----
 * A sequence in flight reserves its prompt and output, so the count the KV holds moves with the
 * lengths in flight (serve.h, "the wait for a slot"). */
static void kv_slot_wait(void)
{
    /* Two classes of equal weight, 1,000 + 1,000 and 1,000 + 3,000 tokens: weighed by output
     * (E[osl] = 2,000), a sequence in flight holds (0.5 x 1,000 x 2,000 + 0.5 x 3,000 x 4,000) /
     * 2,000 = 3,500 tokens; E[osl r^2] / E[osl] = (0.5 x 1,000 x 4e6 + 0.5 x 3,000 x 16e6) / 2,000
     * = 13e6, so its sd is sqrt(13e6 - 3,500^2) = sqrt(750,000) = 866.03; its deviations last
     * E[osl^2 r^2] / (2 E[osl r^2]) = (0.5 x 1e6 x 4e6 + 0.5 x 9e6 x 16e6) / (2 x 13e9) =
     * 74e12 / 52e9 = 1,423.08 output tokens. */
    struct length_class two[] = {{1000, 1000, 0.5}, {1000, 3000, 0.5}};
    struct length_mix pair = {.classes = two, .count = 2};
    struct serve_workload w = workload(0, 0);
    serve_workload_set_lengths(&w, &pair);
    CHECK(w.lengths.held_context == 3500 && fabs(w.lengths.held_sd - sqrt(750000.0)) <= 1e-9 * 866 &&
              fabs(w.lengths.held_relaxation_tokens - 74e12 / 52e9) <= 1e-9 * 1423,
          "two classes: held %lld tokens, sd %.4f (866.0254), deviations over %.4f tokens (1,423.0769)",
          (long long)w.lengths.held_context, w.lengths.held_sd, w.lengths.held_relaxation_tokens);
    /* The same requests where the engine reserves max_tokens 4,000 for every output (TensorRT-LLM's
     * GUARANTEED_NO_EVICT): each holds 1,000 + 4,000 = 5,000 tokens whatever its length, so the
     * reservation in flight is 5,000 with sd 0; weighed by its prompt too (E[isl osl r] / E[isl
     * osl]) and by its prefill (E[isl r] / E[isl]) 5,000 as well. The decode context (what a token
     * reads) stays E[osl (isl + osl / 2)] / E[osl] = (0.5 x 1,000 x 1,500 + 0.5 x 3,000 x 2,500) /
     * 2,000 = 2,250. Without a mix, 1,000 + 4,000 too. */
    struct serve_workload reserving = workload(0, 0);
    reserving.max_tokens = 4000;
    serve_workload_set_lengths(&reserving, &pair);
    CHECK(reserving.lengths.held_context == 5000 && reserving.lengths.held_sd == 0 &&
              reserving.lengths.held_prompt_context == 5000 && reserving.lengths.held_prefilling_context == 5000 &&
              reserving.lengths.decode_context == 2250 && serve_held_context(&reserving) == 5000,
          "max_tokens 4,000: every sequence holds 5,000 (held %lld, sd %g, prompt-weighed %g, prefilling %g), "
          "reads 2,250 (%lld)",
          (long long)reserving.lengths.held_context, reserving.lengths.held_sd,
          reserving.lengths.held_prompt_context, reserving.lengths.held_prefilling_context,
          (long long)reserving.lengths.decode_context);
    struct serve_workload reserving_fixed = workload(1000, 2000);
    reserving_fixed.max_tokens = 4000;
    CHECK_EQ(serve_held_context(&reserving_fixed), 5000, "fixed lengths, max_tokens 4,000: 1,000 + 4,000 held");
    /* two requests that start together stay together E[min(osl1, osl2)] = 0.25 x 1,000 x 3 + 0.25 x
     * 3,000 = 1,500 output tokens of E[osl] = 2,000: an overlap of 0.75 (queueing.h, clusters) */
    CHECK_REL(w.lengths.life_overlap, 0.75, 1e-15, "two classes: lives overlap 0.75");
    struct length_class one[] = {{1000, 700, 3}};
    struct length_mix alike = {.classes = one, .count = 1};
    serve_workload_set_lengths(&w, &alike);
    CHECK_REL(w.lengths.life_overlap, 1, 1e-15, "one class: lives overlap wholly, 1");

    /* Alike requests: one cap, the birth-death's own geometric wait (no phases), as before. */
    struct model m;
    struct topology t;
    struct graph_summary g;
    struct serve_pool pool;
    llama_h200(&m, &t, &g, &pool);
    struct serve_workload fixed = workload(1024, 1024);
    fixed.arrivals = SERVE_POISSON;
    struct serve_point p;
    bool made = serve_aggregated(&pool, &g, &node_tp8, &fixed, 400, &p);
    CHECK(made && p.decode.occupancy.slot_caps == 1, "alike requests: one cap (%d)",
          made ? p.decode.occupancy.slot_caps : -1);

    /* MLPerf's DeepSeek-R1 mix (outputs to 32,768 tokens) on an H200 node, DP 8 x EP 8, p99 TTFT 6 s /
     * TPOT 80 ms. The KV holds 312 sequences at the mean reservation, -+ 11.4 with the lengths in
     * flight, and the longest hold it for minutes; near the cap requests wait for a slot behind
     * them. Each rank holds its own requests' KV, 39 of them (data-parallel attention), and takes
     * the requests in turn: a rank that is full makes its own wait. With the KV pooled over the
     * ranks serve chose 267, where ranks of their own have 43% of the requests wait, 16 s on
     * average: the analysis' mean TTFT within 20% of three simulations' of 1,000,000 requests
     * (seeds 1 to 3), which admit each request while its own reservation fits its rank's share. */
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct serve_pool node = pool_of(&ds, &t);
    struct length_mix mix;
    if (!mix_read("workloads/mlperf-deepseek-r1.csv", "MLPerf DeepSeek-R1", &mix))
        return;
    struct serve_workload r1 = mix_workload(&mix, 6, 0.08);
    const struct layout dp8 = {.racks = 1, .devices = 8, .tp = 1, .pp = 1, .dp = 8, .ep = 8};
    struct serve_point chosen;
    made = serve_aggregated(&node, &g, &dp8, &r1, 267, &p) && serve_aggregated(&node, &g, &dp8, &r1, 182, &chosen);
    double simulated = 0, chosen_ttft = 0, chosen_tpot = 0, chosen_waits = 0;
    int runs = 0;
    for (uint64_t seed = 1; made && seed <= 3; seed++) {
        struct sim_result x, y;
        if (serve_simulate(&node, &r1, &mix, &p, 1000000, seed, &x) == SERVE_SIM_OK &&
            serve_simulate(&node, &r1, &mix, &chosen, 1000000, seed, &y) == SERVE_SIM_OK) {
            simulated += x.ttft_s.mean / 3;
            chosen_ttft += y.ttft_s.p99 / 3;
            chosen_tpot += y.tpot_s.mean / 3;
            chosen_waits += y.slot_wait_share / 3;
            runs++;
        }
    }
    length_mix_release(&mix);
    if (!CHECK(made && runs == 3, "DeepSeek-R1 mix, 267 and 182 sequences: points, simulated three times each"))
        return;
    CHECK(p.decode.occupancy.slot_caps > 1 && fabs(p.tail.ttft_mean_s / simulated - 1) <= 0.20,
          "267: mean TTFT %.1f ms against the simulations' %.1f ms (%d caps; %.2f%% of requests wait for a slot, %.0f "
          "ms on average)",
          p.tail.ttft_mean_s * 1e3, simulated * 1e3, p.decode.occupancy.slot_caps,
          100 * p.decode.occupancy.wait_probability, p.decode.occupancy.mean_wait_s * 1e3);
    /* over 1% wait for a slot, above the 1% a p99 leaves: serve cautions that TTFT's p99 is theirs */
    CHECK(p.tail.slot_wait_probability == p.decode.occupancy.wait_probability && serve_ttft_on_slot_waits(&r1, &p),
          "267: TTFT's p99 set by the slot's waits (%.2f%% wait)", 100 * p.tail.slot_wait_probability);

    /* 182, what serve chooses now. A step that carries a prompt is paced by the rank that holds
     * it, and a rank's step is convex in its tokens: the mix's prompts (mean 804) cost 23.0 ms on
     * one rank at the mean length and 25.0 on average over the mix's eighths (the longest 33.9).
     * Priced at the mean, the analysis' TPOT mean was 0.7% below the simulation's, which prices
     * each step at its busiest rank; TTFT p99 within 10%. The simulation deals a rank every
     * dp-th request, more regularly than a Poisson stream thinned: taken as such a stream, the
     * analysis had 0.64% waiting at 171 against 0.13% in the three, and serve chose 171; with the
     * dealing's peakedness (a rank's count 0.60 times as variable about its mean here) it has
     * 0.59% at 182 against 0.33%, still the likelier, the side that keeps a target met. Its
     * ranks barely move together (rho 0.01): a rank's count taken as dp times its own stepped the
     * instance as dp sequences a sequence, and serve chose 168, 0.67% waiting. */
    CHECK(fabs(chosen.tail.tpot_mean_s / chosen_tpot - 1) <= 0.003,
          "182: mean TPOT %.3f ms against the simulations' %.3f ms", chosen.tail.tpot_mean_s * 1e3, chosen_tpot * 1e3);
    CHECK(fabs(chosen.tail.ttft_s[2] / chosen_ttft - 1) <= 0.10, "182: TTFT p99 %.1f ms against the simulations' %.1f ms",
          chosen.tail.ttft_s[2] * 1e3, chosen_ttft * 1e3);
    CHECK(chosen.tail.slot_wait_probability >= chosen_waits,
          "182: %.2f%% wait for a slot by the analysis, %.2f%% in the simulations", 100 * chosen.tail.slot_wait_probability,
          100 * chosen_waits);

    /* the margin (SERVE_SLOT_WAIT_MARGIN): a TTFT target where requests may wait for a slot is
     * met only where it holds with twice as many waiting, each as long: at 183 TTFT p99 is a
     * prefill's time, within 6 s, but with twice as many waiting past it; at 182, which serve
     * chooses, it holds either way (183 and 182 are pins, serve's own edge when this was
     * written; the rule is what is checked) */
    struct serve_point edge, kept;
    if (CHECK(serve_aggregated(&node, &g, &dp8, &r1, 183, &edge) && serve_aggregated(&node, &g, &dp8, &r1, 182, &kept),
              "DeepSeek-R1 mix at 183 and 182 sequences: points")) {
        CHECK(edge.ttft_s <= r1.ttft_s && edge.ttft_margin_s > r1.ttft_s && !edge.meets,
              "183: TTFT p99 %.0f ms, %.0f ms with twice as many waiting (%.2f%%): not met", edge.ttft_s * 1e3,
              edge.ttft_margin_s * 1e3, 100 * edge.tail.slot_wait_probability);
        CHECK(kept.ttft_margin_s >= kept.ttft_s && kept.ttft_margin_s <= r1.ttft_s && kept.meets,
              "182: TTFT p99 %.0f ms, %.0f ms with twice as many waiting (%.2f%%): met", kept.ttft_s * 1e3,
              kept.ttft_margin_s * 1e3, 100 * kept.tail.slot_wait_probability);
    }

    /* the rule by hand: at p99, at least a quarter of the 1% above it waiting, 0.25%; at the
     * default p50, 12.5% */
    struct serve_point at = {0};
    struct serve_workload p99 = workload(1000, 100);
    p99.percentile = 99;
    at.tail.slot_wait_probability = 0.0026;
    CHECK(serve_ttft_on_slot_waits(&p99, &at), "p99, 0.26%% wait: set by the waits");
    at.tail.slot_wait_probability = 0.0024;
    CHECK(!serve_ttft_on_slot_waits(&p99, &at), "p99, 0.24%% wait: not");
    struct serve_workload p50 = workload(1000, 100);
    at.tail.slot_wait_probability = 0.13;
    CHECK(serve_ttft_on_slot_waits(&p50, &at), "p50 (percentile 0), 13%% wait: set by the waits");
    at.tail.slot_wait_probability = 0.12;
    CHECK(!serve_ttft_on_slot_waits(&p50, &at), "p50, 12%% wait: not");

    /* where serve cautions that the analysis has run below the simulation (README, "Tail latency"):
     * aggregated, Poisson, an MoE model on dp > 1 ranks, prompts past the 8,192-token chunk; each
     * condition dropped in turn, not */
    struct model dense = fixture_model("models/llama-3.1-70b.yaml");
    struct serve_workload long_prompts = workload(16000, 1000);
    long_prompts.arrivals = SERVE_POISSON;
    struct serve_point ranks = {.mode = SERVE_AGGREGATED, .decode.layout = {.tp = 4, .dp = 4, .pp = 1, .ep = 16}};
    CHECK(serve_chunks_on_ranks_in_step(&ds, &long_prompts, &ranks),
          "DeepSeek-V3, 16,000-token prompts (1.95 chunks), Poisson, TP 4 x DP 4: cautioned");
    CHECK(!serve_chunks_on_ranks_in_step(&dense, &long_prompts, &ranks), "a dense model's ranks step on their own: not");
    struct serve_point one_rank = ranks, disaggregated = ranks;
    one_rank.decode.layout.dp = 1;
    disaggregated.mode = SERVE_DISAGGREGATED;
    CHECK(!serve_chunks_on_ranks_in_step(&ds, &long_prompts, &one_rank) &&
              !serve_chunks_on_ranks_in_step(&ds, &long_prompts, &disaggregated),
          "one rank, or disaggregated: not");
    struct serve_workload closed = long_prompts, short_prompts = long_prompts, hit = long_prompts;
    closed.arrivals = SERVE_CLOSED;
    short_prompts.isl = 8192;
    hit.prefix_hit = 0.5; /* 8,000 computed tokens, within the chunk */
    CHECK(!serve_chunks_on_ranks_in_step(&ds, &closed, &ranks) &&
              !serve_chunks_on_ranks_in_step(&ds, &short_prompts, &ranks) &&
              !serve_chunks_on_ranks_in_step(&ds, &hit, &ranks),
          "closed loop, a prompt of one chunk (8,192), or half of 16,000 from a prefix cache: not");
}

/* The same mix served disaggregated on two H200 nodes, 1P1D (prefill DP 8 x EP 8, 8 prompts a
 * batch; decode DP 8 x EP 8), p99 TTFT 2 s / TPOT 80 ms. A decode instance's ranks hold their own
 * requests' KV as an aggregated instance's do, a rank that is full making its own requests wait
 * (before prefill: the engines reserve the decode KV first). With the KV pooled over the ranks
 * serve chose 259 sequences, where the analysis had 0.67% of the requests wait for a slot and
 * TTFT p99 54 ms; a simulation of ranks of their own has 22% wait and TTFT p99 119 s (100,000
 * requests, seed 1, as below). At 259 the analysis now has more than 1% wait, so TTFT's p99 is theirs and
 * the target is missed; at 149, what serve chooses now, the analysis is within 5% of the
 * simulation's TTFT p99 and 1% of its mean TPOT, and its share waiting is not below the
 * simulation's (Poisson-thinned against dealt in turn: the analysis the more conservative). */
static void decode_ranks_own_kv(void)
{
    struct topology t = fixture_topology(h200_at_141e9);
    struct graph_summary g;
    analyse(&t, 1, &g);
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct serve_pool two = pool_of(&ds, &t);
    two.budget_devices = 16;
    struct length_mix mix;
    if (!mix_read("workloads/mlperf-deepseek-r1.csv", "MLPerf DeepSeek-R1", &mix))
        return;
    struct serve_workload r1 = mix_workload(&mix, 2, 0.08);
    const struct layout dp8 = {.racks = 1, .devices = 8, .tp = 1, .pp = 1, .dp = 8, .ep = 8};
    struct serve_instance pre, pooled_choice, chosen_decode;
    struct serve_point full, chosen;
    bool made = serve_prefill_instance(&two, &g, &dp8, &r1, 8, &pre) &&
                serve_decode_instance(&two, &g, &dp8, &r1, 259, &pooled_choice) &&
                serve_decode_instance(&two, &g, &dp8, &r1, 149, &chosen_decode) &&
                serve_disaggregated(&two, &pre, &two, &pooled_choice, &r1, 0, &full) &&
                serve_disaggregated(&two, &pre, &two, &chosen_decode, &r1, 0, &chosen);
    struct sim_result x = {0}, y = {0};
    made = made && full.prefill_instances == 1 && full.decode_instances == 1 && chosen.prefill_instances == 1 &&
           chosen.decode_instances == 1 &&
           serve_simulate(&two, &r1, &mix, &full, 100000, 1, &x) == SERVE_SIM_OK &&
           serve_simulate(&two, &r1, &mix, &chosen, 400000, 1, &y) == SERVE_SIM_OK;
    length_mix_release(&mix);
    if (!CHECK(made, "DeepSeek-R1 mix, 1P1D on two H200 nodes at 259 and 149 decode sequences: points, simulated"))
        return;
    CHECK(full.tail.slot_wait_probability > 0.01 && x.slot_wait_share > 0.01 && serve_ttft_on_slot_waits(&r1, &full) &&
              !full.meets,
          "259: %.2f%% wait for a slot by the analysis, %.1f%% in the simulation; TTFT p99 %.0f ms (simulated %.0f): "
          "missed",
          100 * full.tail.slot_wait_probability, 100 * x.slot_wait_share, full.tail.ttft_s[2] * 1e3,
          x.ttft_s.p99 * 1e3);
    CHECK(chosen.meets && fabs(chosen.tail.ttft_s[2] / y.ttft_s.p99 - 1) <= 0.05 &&
              fabs(chosen.tail.tpot_mean_s / y.tpot_s.mean - 1) <= 0.01,
          "149: TTFT p99 %.1f ms against the simulation's %.1f, mean TPOT %.2f ms against %.2f", chosen.tail.ttft_s[2] * 1e3,
          y.ttft_s.p99 * 1e3, chosen.tail.tpot_mean_s * 1e3, y.tpot_s.mean * 1e3);
    CHECK(chosen.tail.slot_wait_probability >= y.slot_wait_share,
          "149: %.3f%% wait for a slot by the analysis, %.3f%% in the simulation", 100 * chosen.tail.slot_wait_probability,
          100 * y.slot_wait_share);

    /* A rank's count beside the others' (serve.h, the occupancy): a decode instance of 32 H200
     * ranks at 1,024/1,024 whose KV holds 19,744 sequences (`rackplan fit ... --racks 4 --context
     * 2048`: 617 a rank) runs 5,880 (184 a rank, sd 14). Taken as 32 times a rank's count, one
     * sequence more on a rank moved the step as 32 more, and the law put 1% of the requests
     * waiting 1 s for a slot 31 sd away (serve's frontier: "its TTFT on waits for KV slots"); the
     * ranks barely move together here (rho 0.09), and nobody waits. */
    struct topology four = t;
    struct graph_summary g4;
    analyse(&four, 4, &g4);
    struct serve_pool pool4 = pool_of(&ds, &four);
    struct serve_workload even = workload(1024, 1024);
    even.arrivals = SERVE_POISSON;
    even.percentile = 99;
    const struct layout dp32 = {.racks = 4, .devices = 32, .tp = 1, .pp = 1, .dp = 32, .ep = 32};
    struct serve_instance wide;
    if (CHECK(serve_decode_instance(&pool4, &g4, &dp32, &even, 5880, &wide), "DP 32 x EP 32 at 5,880: an instance"))
        CHECK(wide.occupancy.wait_probability < 1e-6, "5,880 of 19,744: %.2g of requests wait for a slot",
              wide.occupancy.wait_probability);
}

/* Llama 3.1 405B (BF16 weights, FP8 KV) on an H200 node, 4,096/685 at random at batch 111, what
 * serve chooses for p99 TTFT 6 s / TPOT 175 ms: a prompt is half the 8,192-token budget and
 * prefill takes three quarters of the machine's time, so the budget often has more waiting than a
 * step carries. What waits is carried by the steps after, so on average the steps carry all that
 * arrives (work conservation). Priced as if the count past the budget vanished, the steps the
 * occupancy law settles at came out 85.0 ms against the prefill chain's 93.3, and its mean
 * occupancy 105 sequences where Little's law on its own TPOT (lambda (osl - 1) TPOT) gives 119;
 * the simulation, 200,000 requests, seed 1: 117.8. Both must now agree within 2%. */
static void work_conserving(void)
{
    struct prefill_heavy c;
    llama405b_fp8(h200_at_141e9, &c);
    struct serve_workload w = c.w;
    const struct graph_summary *g = &c.g;
    struct serve_point p;
    if (!CHECK(serve_aggregated(&c.pool, g, &node_tp8, &w, 111, &p), "Llama 3.1 405B, 111 sequences: a point"))
        return;
    double little = p.decode.requests_per_s * 684 * p.tail.tpot_mean_s;
    CHECK(fabs(p.tail.sequences_mean / little - 1) <= 0.02,
          "the occupancy's mean %.1f against Little's law on its TPOT %.1f (%.4f req/s x 684 x %.2f ms)",
          p.tail.sequences_mean, little, p.decode.requests_per_s, p.tail.tpot_mean_s * 1e3);
    struct sim_result x;
    if (!CHECK(serve_simulate(&c.pool, &w, NULL, &p, 200000, 1, &x) == SERVE_SIM_OK, "the point simulated"))
        return;
    double simulated = x.mean_decoding_sequences / (double)p.decode_instances;
    CHECK(fabs(p.tail.sequences_mean / simulated - 1) <= 0.02, "the occupancy's mean %.1f against the simulation's %.1f",
          p.tail.sequences_mean, simulated);
}

/* The same case where the KV cache decides who waits (cap 164 sequences): prompts held back
 * together arrive in clusters, so the occupancy's upper tail is exponential (queueing.h, the
 * clusters' law). Its Poisson factors taken to the power 1 / G, as before, gave the same sd but a
 * thin tail: at batch 111, 3.7% of requests waiting for a slot where 200,000 simulated requests
 * have 16-20%, and TTFT p99 5.0 s against 12-15 s, so serve took 111 for a 6 s target. Now the
 * largest batch within p99 TTFT 6 s and TPOT 175 ms is 76 (77 before prefilling_slots), and there
 * the analysis is within 10% of the simulation at TTFT p50, p90, p99 and TPOT p50, p99 (README,
 * "Prefill-heavy, at the KV cap"); at 111 the share waiting is within 1.5 times the simulation's,
 * and TTFT p99 is not below it. */
static void clustered_cap(void)
{
    struct prefill_heavy c;
    llama405b_fp8(h200_at_141e9, &c);
    struct serve_workload w = c.w;
    const struct graph_summary *g = &c.g;
    int64_t batch = serve_largest_batch(&c.pool, g, &node_tp8, &w, 1000);
    CHECK(batch >= 70 && batch <= 85, "the largest batch within the targets: %lld", (long long)batch);
    struct serve_point p;
    struct sim_result x;
    if (!CHECK(serve_aggregated(&c.pool, g, &node_tp8, &w, batch, &p), "a point at that batch") ||
        !CHECK(serve_simulate(&c.pool, &w, NULL, &p, 200000, 1, &x) == SERVE_SIM_OK, "the point simulated"))
        return;
    tails_within("at the targets: ", &p, &x, 0.10);
    CHECK(fabs(p.tail.ttft_s[1] / x.ttft_s.p90 - 1) <= 0.10, "TTFT p90: analysis %.0f ms, simulation %.0f ms",
          p.tail.ttft_s[1] * 1e3, x.ttft_s.p90 * 1e3);
    if (!CHECK(serve_aggregated(&c.pool, g, &node_tp8, &w, 111, &p), "111 sequences: a point") ||
        !CHECK(serve_simulate(&c.pool, &w, NULL, &p, 200000, 1, &x) == SERVE_SIM_OK, "111 simulated"))
        return;
    double share = p.tail.slot_wait_probability / x.slot_wait_share;
    CHECK(share >= 1 / 1.5 && share <= 1.5, "at 111, waiting for a slot: analysis %.1f%%, simulation %.1f%%",
          p.tail.slot_wait_probability * 100, x.slot_wait_share * 100);
    CHECK(p.tail.ttft_s[2] >= x.ttft_s.p99, "at 111, TTFT p99 %.0f ms, not below the simulation's %.0f",
          p.tail.ttft_s[2] * 1e3, x.ttft_s.p99 * 1e3);

    /* MLPerf's Llama 3.1 405B mix (BF16 KV, cap 39 at the mean reservation): the sequences in
     * excess of the occupancy's mean came with clusters, whose holds pick long prompts, so where it
     * runs high each holds more KV (serve.c, clustered_cap: 36 of the 39), and the prompts being
     * prefilled hold theirs too (prefilling_slots: 0.5 on average; in 400,000 simulated requests
     * 0.7 when one is held back). Counted at the mean reservation the analysis had 0.55% waiting
     * for a slot at batch 14 where the simulation has 1.32%, and TTFT p99 9% low; with the clusters
     * alone 1.13% and 5% low, and batch 14, whose simulated TTFT p99 (6.10 s) missed the 6 s
     * target. Now the largest batch is 13, the share waiting within 1.25 times the simulation's
     * and TTFT p99 within 10%, and the simulation meets the target there. */
    struct length_mix mix;
    if (!mix_read("workloads/mlperf-llama3.1-405b.csv", "MLPerf Llama 3.1 405B", &mix))
        return;
    struct serve_pool bf16 = pool_of(&c.model, &c.topology);
    struct serve_workload mw = mix_workload(&mix, 6, 0.175);
    int64_t largest = serve_largest_batch(&bf16, g, &node_tp8, &mw, 100);
    CHECK(largest == 13, "the MLPerf 405B mix: the largest batch within the targets %lld, 13", (long long)largest);
    if (CHECK(serve_aggregated(&bf16, g, &node_tp8, &mw, largest, &p), "the mix at that batch: a point") &&
        CHECK(serve_simulate(&bf16, &mw, &mix, &p, 400000, 1, &x) == SERVE_SIM_OK, "the mix simulated")) {
        share = p.tail.slot_wait_probability / x.slot_wait_share;
        CHECK(share >= 1 / 1.25 && share <= 1.25, "the mix, waiting for a slot: analysis %.2f%%, simulation %.2f%%",
              p.tail.slot_wait_probability * 100, x.slot_wait_share * 100);
        CHECK(fabs(p.tail.ttft_s[2] / x.ttft_s.p99 - 1) <= 0.10, "the mix, TTFT p99: analysis %.0f ms, simulation %.0f",
              p.tail.ttft_s[2] * 1e3, x.ttft_s.p99 * 1e3);
        CHECK(x.ttft_s.p99 <= mw.ttft_s, "the mix, the simulation's TTFT p99 %.0f ms within the 6 s target",
              x.ttft_s.p99 * 1e3);
    }
    length_mix_release(&mix);
}

/* The settled step is a fixed point in two unknowns, the step and the clumps of prompts it
 * gathers, found by substitution sped up by Aitken's step. Where the clumps still settle, two
 * substitutions can look alike and Aitken's step leap: Llama 3.1 405B (FP8 KV) on an MI300X node
 * at 4,096/685, batch 152, circled the step at 126 sequences for 80 rounds and kept 0.0762 s where
 * F(T) = T at 0.0925 (its neighbours 0.0877 at 91 and 0.0995 at 175), so the occupancy's mean came
 * out 138.9 where 153 gave 166.8 and 400,000 simulated requests 166.0. Now the mean grows with the
 * batch from 149 to 153 and is within 3% of the simulation's at 152. */
static void settles_with_clumps(void)
{
    struct prefill_heavy c;
    llama405b_fp8("topologies/mi300x.xml", &c);
    struct serve_workload w = c.w;
    const struct graph_summary *g = &c.g;
    double last = 0;
    bool grows = true;
    struct serve_point p;
    for (int64_t batch = 149; batch <= 153; batch++) {
        if (!CHECK(serve_aggregated(&c.pool, g, &node_tp8, &w, batch, &p), "405B on MI300X, %lld sequences: a point",
                   (long long)batch))
            return;
        grows &= p.tail.sequences_mean > last;
        last = p.tail.sequences_mean;
    }
    CHECK(grows, "the occupancy's mean grows with the batch, 149 to 153 (%.1f at 153)", last);
    struct sim_result x;
    if (CHECK(serve_aggregated(&c.pool, g, &node_tp8, &w, 152, &p), "152 sequences") &&
        CHECK(serve_simulate(&c.pool, &w, NULL, &p, 200000, 1, &x) == SERVE_SIM_OK, "152 simulated")) {
        double simulated = x.mean_decoding_sequences / (double)p.decode_instances;
        CHECK(fabs(p.tail.sequences_mean / simulated - 1) <= 0.03, "at 152: the occupancy's mean %.1f, simulated %.1f",
              p.tail.sequences_mean, simulated);
    }
}

/* ---- a prefill batch at its prompts' length (serve_prefill_batch_at) ---- */

static void prefill_batch_lengths(void)
{
    /* by hand: a batch of 8 kept at 1 and 8 prompts, ratios 0.5 and 2 beside the mean's 1. One
     * prompt: knots (0.5, 18 ms), (1, 20), (2, 32); at 1.5 halfway, 26 ms; below 0.5 the
     * shortest's 18; at 3 on along the last two, 32 + 12 = 44. Four and a half prompts, halfway
     * between the kept counts: (0.5, 22), (1, 25), (2, 41); at 0.75, 23.5 ms */
    struct serve_instance t = {.batch = 8, .batch_points = 2, .batch_prompts = {1, 8}, .batch_times_s = {0.020, 0.030},
                               .length_points = 2, .length_ratio = {0.5, 2},
                               .length_times_s = {{0.018, 0.032}, {0.026, 0.050}}};
    CHECK_REL(serve_prefill_batch_at(&t, 1, 1.5), 0.026, 1e-12, "one prompt at 1.5 x the mean: 26 ms");
    CHECK_REL(serve_prefill_batch_at(&t, 1, 0.25), 0.018, 1e-12, "below the shortest kept: its 18 ms");
    CHECK_REL(serve_prefill_batch_at(&t, 1, 3), 0.044, 1e-12, "above the longest kept: on along the last two, 44 ms");
    CHECK_REL(serve_prefill_batch_at(&t, 4.5, 0.75), 0.0235, 1e-12, "4.5 prompts at 0.75: 23.5 ms");
    CHECK_REL(serve_prefill_batch_at(&t, 8, 1), 0.030, 1e-12, "the mean's kept batch at 1");
    /* sixteen prompts of half the mean (a token budget packing short ones): eight at the mean's
     * tokens, 30 ms */
    CHECK_REL(serve_prefill_batch_at(&t, 16, 0.5), 0.030, 1e-12, "16 prompts at 0.5 past a batch of 8: 8 at 1");
    t.length_points = 0;
    CHECK_REL(serve_prefill_batch_at(&t, 4.5, 1.5), 0.025 * 1.5, 1e-12, "prompts alike: the mean's batch x the ratio");

    /* the roofline's: DeepSeek-V3 on 4 GPUs of a GB300 NVL72 at data-parallel attention, the
     * MLPerf DeepSeek-R1 mix (mean 804 tokens). One prompt's 804 tokens pick 8 of 256 routed
     * experts each, so the step reads about every weight and the read binds: a prompt of the
     * longest tail bin costs what the mean's does (scaled by its tokens it had been charged its
     * ratio over). Eight prompts are compute-bound, and at the longest bin's length they compute
     * more than its ratio times the mean's (attention grows with the square of the length). */
    struct model ds = fixture_model("models/deepseek-v3.yaml");
    struct topology rack = fixture_topology("topologies/gb300-nvl72.xml"), slice;
    struct graph_summary g;
    struct length_mix mix;
    if (!mix_read("workloads/mlperf-deepseek-r1.csv", "DeepSeek-R1", &mix) ||
        !CHECK(topology_slice(&rack, 4, &slice), "4 GPUs of the rack"))
        return;
    analyse(&slice, 1, &g);
    struct serve_pool pool = pool_of(&ds, &slice);
    struct serve_workload w = mix_workload(&mix, 0, 0);
    const struct layout dp4 = {.racks = 1, .devices = 4, .tp = 1, .pp = 1, .dp = 4, .ep = 4};
    struct serve_instance pre;
    if (CHECK(serve_prefill_instance(&pool, &g, &dp4, &w, 8, &pre) && pre.length_points == 4 &&
                  pre.length_ratio[0] < 1 && pre.length_ratio[3] > 1.5,
              "8 prompts a batch: 4 lengths kept, the shortest below the mean, the longest above 1.5 x")) {
        double top = pre.length_ratio[3];
        double one = serve_prefill_batch_at(&pre, 1, 1), one_long = serve_prefill_batch_at(&pre, 1, top);
        CHECK(one_long <= one * 1.001, "one prompt: %.2f ms at %.2f x the mean's length, %.2f ms at the mean",
              one_long * 1e3, top, one * 1e3);
        double eight = serve_prefill_batch_at(&pre, 8, 1), eight_long = serve_prefill_batch_at(&pre, 8, top);
        CHECK(pre.point.bound == ROOF_COMPUTE && eight_long >= top * eight,
              "eight prompts, compute-bound: %.2f ms at %.2f x, at least %.2f x the mean's %.2f ms", eight_long * 1e3,
              top, top, eight * 1e3);
    }
    length_mix_release(&mix);
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    mtp();
    aggregated_by_hand();
    chunk_budget();
    kv_transfer();
    disaggregated_by_hand();
    search_deepseek();
    exhaustive();
    tpu_pod();
    budget_search();
    no_fit();
    binding_target();
    misses();
    one_row_per_point();
    cohorts_against_simulation();
    slot_queue_without_ttft_target();
    poisson_against_simulation();
    tails();
    md1();
    percentile_order();
    best_only();
    occupancy_skew();
    settling();
    deferred_ttft();
    max_tokens_reservation();
    kv_slot_wait();
    decode_ranks_own_kv();
    work_conserving();
    clustered_cap();
    settles_with_clumps();
    prefill_batch_lengths();
    return tap_done();
}
