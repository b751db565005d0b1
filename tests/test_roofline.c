/* The roofline engine against the lecture's claims, with the arithmetic beside each. */
#include "fixtures.h"
#include "roofline.h"
#include "tap.h"

#include <unistd.h>

static struct roof_setup setup(const struct model *m, const struct topology *t,
                               struct graph_summary *g, int64_t racks, int64_t tp, int64_t pp,
                               int64_t context)
{
    struct roof_setup s = {.model = m, .topology = t, .graph = g};
    if (graph_analyse(t, racks, g) != GRAPH_OK)
        printf("Bail out! graph\n");
    s.workload = (struct workload){.batch = 1, .context = context, .weights = m->weights_precision,
                                   .expert_weights = m->expert_weights_precision,
                                   .kv = m->kv_precision, .reserve_fraction = 0.1,
                                   .reserve_bytes = -1, .tp = tp, .pp = pp};
    int64_t devices = racks * t->domain_devices;
    s.layout = (struct layout){.racks = racks, .devices = devices, .tp = tp, .pp = pp,
                               .dp = devices / (tp * pp),
                               .ep = model_is_moe(m) ? devices / pp : 1};
    s.efficiency = EFFICIENCY_BOUND;
    return s;
}

static void latency_floor(void)
{
    struct model m = fixture_model("models/llama-3.1-70b.yaml");
    struct topology t = fixture_topology("topologies/hgx-h100.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 1, 8, 1, 8192);
    struct model_params p;
    model_params(&m, &p);
    /* every weight but the embedding table (looked up, not streamed) read once per step, over
     * 8 GPUs by TP 8: (70.55e9 - 1.05e9) x 2 B / (8 x 3.35e12 B/s) = 5.19 ms */
    double hand = (p.total - p.embedding) * 2 / (8 * 3.35e12);
    CHECK_REL(roof_latency_floor_s(&s), hand, 1e-12, "Llama 3.1 70B BF16 on HGX H100: floor = streamed weights / (8 x 3.35 TB/s)");
    CHECK_EQ(roof_ideal_floor_s(&s), hand, "with TP over all 8 GPUs the floor is DESIGN's W / (G x BW)");
    /* the issue's ~141 GB / (8 x 3.35 TB/s) = 5.26 ms counts the 2.1 GB embedding table too */
    CHECK_REL(roof_latency_floor_s(&s), 5.26e-3, 0.015, "about 5.3 ms (issue #4)");
}

static void crossover(void)
{
    /* DeepSeek-V3 FP8 on one HGX H100 as TP 8 x EP 8 (a pure bound, memory fit aside), with no
     * context so there is no KV (at even 1 token, 5,400 sequences of MLA KV replicated over TP
     * are 380 MB per GPU, 0.45% of the weights: the formula's "KV negligible" is exact only at 0). Compute 2 x N_act x B / (8 x 1979e12) meets memory W / (8 x 3.35e12)
     * at B* = (F / BW) x (bytes_w / 2) x (N_total / N_act) = 590.7 x 0.5 x 18.3 = ~5,400, with
     * N_total the streamed weights (no embedding) and N_act the matmul weights plus norms. */
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/hgx-h100.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 1, 8, 1, 0);
    struct model_params p;
    model_params(&m, &p);
    double norms = 2.0 * 7168 * 61 + 7168;
    double expected = (1979e12 / 3.35e12) * (1.0 / 2) * ((p.total - p.embedding) / (p.active + norms));
    int64_t found = roof_crossover_batch(&s);
    CHECK(fabs((double)found - expected) <= 1, "DeepSeek-V3 crossover batch = (F/BW)(bytes/2)(N_total/N_act), to the batch");
    printf("# crossover %lld, formula %.1f\n", (long long)found, expected);
    struct roof_point below, above;
    roof_decode(&s, found - 10, &below);
    roof_decode(&s, found + 10, &above);
    CHECK(below.compute_s < below.weights_s && above.compute_s > above.weights_s,
          "compute below the weights' time before the crossover, above it after");
    /* TP 8 all-reduces 2 x 7/8 x 7168 x 2 B twice in each of 61 layers per token: 3.06 MB, so
     * 5,400 tokens take 36.7 ms at 450 GB/s, more than compute (25 ms): the network binds,
     * which is why DeepSeek serves attention data-parallel */
    CHECK(above.bound == ROOF_NETWORK, "and on TP 8 the all-reduces bind there");
    CHECK_REL(above.tp_s, 2 * 7.0 / 8 * (found + 10) * 7168 * 2 * 2 * 61 / 450e9, 1e-12,
              "TP all-reduce time = 2 (t-1)/t x tokens x d x 2 B x 2 per layer / scale-up");
}

static void long_context(void)
{
    /* At 128K tokens each DeepSeek-V3 sequence reads 131072 x 70,272 B = 9.2 GB of KV per token
     * (1.15 ms at 8 TB/s) while its attention is 278,528 x 61 x 131072 = 2.2 TFLOP (0.89 ms at
     * 2.5 PFLOP/s BF16): the KV term grows faster than compute, so no batch is compute-bound. */
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/gb200-nvl72.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 1, 1, 1, 131072);
    CHECK_EQ(roof_crossover_batch(&s), 0, "DeepSeek-V3 at 128K context: no crossover");
    struct roof_point r;
    roof_decode(&s, 100000, &r);
    CHECK(r.bound == ROOF_KV, "at a batch of 100,000 the KV read binds");
    s.workload.context = 16;
    CHECK(roof_crossover_batch(&s) > 0, "at 16 tokens of context a crossover exists");
}

static void pipeline(void)
{
    struct model m = fixture_model("models/llama-3.1-405b.yaml");
    struct topology t = fixture_topology("topologies/hgx-h100.xml");
    /* pipelining over 2 nodes halves the weight bytes per GPU; the stages need 2 micro-batches in
     * flight, so at the same micro-batch (64 sequences per stage) the KV per GPU is unchanged */
    struct layout one = {.racks = 1, .devices = 8, .tp = 8, .pp = 1, .dp = 1, .ep = 1};
    struct layout two = {.racks = 2, .devices = 16, .tp = 8, .pp = 2, .dp = 1, .ep = 1};
    struct workload w = {.batch = 64, .context = 4096, .weights = PREC_BF16, .expert_weights = PREC_BF16,
                         .kv = PREC_BF16, .reserve_fraction = 0.1, .reserve_bytes = -1};
    struct device_memory a, b;
    plan_memory(&m, &t, &one, &w, &a);
    w.batch = 128;
    plan_memory(&m, &t, &two, &w, &b);
    CHECK_REL(b.weights_bytes, a.weights_bytes / 2, 0.001, "PP 2: weight bytes per GPU halve");
    CHECK_EQ(b.kv_bytes, a.kv_bytes, "PP 2 at twice the batch: KV bytes per GPU unchanged");

    /* EP inside a rack vs the pipeline send across racks, per micro-batch and stage: the
     * all-to-all moves k x d x (1 + 2) B per token per MoE layer at 900 GB/s, the send d x 2 B
     * at 50 GB/s: ratio (3/2) x k x L_stage x BW_out / BW_up. DESIGN's 2 k L_stage BW_out / BW_up
     * is the same with one element width for dispatch, combine and the send. Qwen3-235B's 94
     * MoE layers split 47 + 47. */
    struct model q = fixture_model("models/qwen3-235b-a22b.yaml");
    struct topology gb = fixture_topology("topologies/gb200-nvl72.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&q, &gb, &g, 2, 1, 2, 4096);
    struct roof_point r;
    roof_decode(&s, 4096, &r);
    double ratio = (r.ep_scale_up_s / 2) / (r.pp_s / 1);
    CHECK_REL(ratio, 1.5 * 8 * 47 * 50e9 / 900e9, 1e-9, "PP scale-up/scale-out time ratio (3/2) k L_stage BW_out / BW_up");
    CHECK_EQ(r.ep_scale_out_s, 0, "EP inside each rack: nothing leaves it");
}

static void network(void)
{
    /* DeepSeek-V3 EP over 2 racks (pp 1, ep 144): 72 of 144 destinations are in the rack, so
     * half of k x d x 3 B per token per MoE layer is dispatched inside at the rack's rate. Over
     * the NIC (50 GB/s) a token goes once to the other rack when one of its experts is there:
     * it picks 4 of 8 expert groups, each rack holds 4, so it misses the other rack only when
     * all 4 are its own, 1 / C(8, 4) = 1/70: d x 3 B x 69/70 per token per MoE layer. */
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/gb200-nvl72.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 2, 1, 1, 4096);
    struct roof_point r;
    roof_decode(&s, 144 * 64, &r);
    double bytes = 64.0 * 8 * 7168 * 3 * 58; /* 64 tokens per GPU */
    CHECK_REL(r.ep_scale_out_s, bytes / 8 * 69 / 70 / 50e9, 1e-12,
              "EP across racks: a token once to the other rack, 69/70 of the time, at the NIC rate");
    CHECK_REL(r.ep_scale_up_s, bytes / 2 / g.all_to_all_domain_bytes_per_s, 1e-12, "and half at the rack's all-to-all rate");
    CHECK_REL(r.ep_scale_out_s / r.ep_scale_up_s, 18.0 * 2 / 8 * 69 / 70, 1e-12,
              "the NIC share takes 18 x 2/8 x 69/70 as long as the rack's");
    /* other cluster sizes, by hand: 4 domains hold 2 groups each, missed C(6,4)/C(8,4) = 15/70,
     * 3 x 55/70 = 2.357 remote domains (the shared trace measures 2.35 with EPLB's placement on 4
     * nodes, eplb_results.csv case a2); 18 domains do not hold whole groups: experts uniform,
     * 17 x (1 - prod_{i<8} (256 - 256/18 - i) / (256 - i)) = 6.3092 (the trace: 6.33, case d) */
    CHECK_REL(roof_remote_domains_per_token(&m, 4), 3.0 * 55 / 70, 1e-12, "4 domains: 2.357 remote domains a token");
    CHECK_REL(roof_remote_domains_per_token(&m, 18), 6.309239455852574, 1e-12, "18 domains: 6.309 remote domains a token");
    CHECK_EQ(roof_remote_domains_per_token(&m, 1), 0, "one domain: none remote");

    s.efficiency = (struct efficiency){0.5, 0.5, 0.5, 0.5, 0, 1, 1, 0};
    struct roof_point slow;
    roof_decode(&s, 144 * 64, &slow);
    /* an estimate runs the kernels in sequence: at least twice the bound's overlapped step */
    CHECK(slow.step_s >= 2 * r.step_s, "efficiency 0.5 everywhere: the step at least doubles");
    CHECK(slow.step_s <= (2 * (r.compute_s + r.weights_s + r.kv_s + r.comm_s) + slow.latency_s) * (1 + 1e-12),
          "and at most twice every term added up, plus its latency chain");
    CHECK(r.cost_per_mtok == 0, "no price in the GB200 file: no cost");
    struct topology h800 = fixture_topology("topologies/hgx-h800.xml");
    struct graph_summary g8;
    struct roof_setup d = setup(&m, &h800, &g8, 18, 1, 1, 4989);
    struct roof_point p;
    roof_decode(&d, 144 * 100, &p);
    /* $2 per GPU-hour (DeepSeek's costing): 144 x 2 / 3600 USD per second over the tokens/s */
    CHECK_REL(p.cost_per_mtok, 144 * 2.0 / 3600 / p.tokens_per_s * 1e6, 1e-12, "cost per million tokens from the price");
}

static void kernels_in_sequence(void)
{
    /* Llama 2 70B BF16 on one H200 (989 TFLOP/s BF16, 4.8 TB/s), efficiency 0.5 everywhere, no
     * step overhead. The bound overlaps every term; the estimate adds its kernels' times, each
     * the longer of its compute and its memory, doubled by the efficiency:
     * - one sequence, 4,096 of context: attention reads the KV, the matmuls stream the weights,
     *   memory binds both: 2 x (weights + KV), twice the bound's memory time;
     * - one 8,192-token prompt: compute binds both: 2 x compute, twice the bound again;
     * - 256 sequences at 4,096: the KV read (256 x 4,096 x 320 KiB = 344 GB, 72 ms) binds the
     *   attention and the matmuls' 2 x 69 G x 256 FLOP (36 ms) bind theirs: 2 x (KV + matmul),
     *   where the bound takes max(compute, weights + KV) = 100 ms alone. */
    struct model m = fixture_model("models/llama-2-70b.yaml");
    struct topology t = fixture_topology("topologies/hgx-h200.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 1, 1, 1, 4096);
    s.layout.devices = 1;
    s.layout.dp = 1;
    struct roof_setup half = s;
    half.efficiency = (struct efficiency){0.5, 0.5, 0.5, 0.5, 0, 1, 1, 0};
    struct roof_point bound, estimate;

    roof_decode(&s, 1, &bound);
    roof_decode(&half, 1, &estimate);
    CHECK(bound.weights_s + bound.kv_s > bound.compute_s, "one sequence: memory binds");
    /* the estimate adds the latency chain at its factor (1 here): HGX H200's floors */
    CHECK_REL(estimate.step_s, 2 * (bound.weights_s + bound.kv_s) + estimate.latency_s, 1e-12,
              "one sequence: the estimate is twice weights + KV, plus the latency chain");

    roof_prefill(&s, 1, 8192, &bound);
    roof_prefill(&half, 1, 8192, &estimate);
    CHECK(bound.compute_s > bound.weights_s + bound.kv_s, "one long prompt: compute binds");
    CHECK_REL(estimate.step_s, 2 * bound.compute_s + estimate.latency_s, 1e-12,
              "one long prompt: the estimate is twice the compute, plus the latency chain");

    roof_decode(&s, 256, &bound);
    roof_decode(&half, 256, &estimate);
    double attention = 256 * model_attention_flops_per_token(&m, 4096) / 989e12;
    double matmul = bound.compute_s - attention;
    CHECK(bound.kv_s > attention && matmul > bound.weights_s, "256 sequences: KV binds attention, compute the matmuls");
    CHECK_REL(bound.kv_s, 256.0 * 4096 * 80 * 8 * 128 * 2 * 2 / 4.8e12, 1e-12, "the KV read: 256 x 4,096 x 320 KiB at 4.8 TB/s");
    CHECK_REL(estimate.step_s, 2 * (bound.kv_s + matmul) + estimate.latency_s, 1e-12,
              "the estimate is twice KV + matmuls, plus the latency chain");
    CHECK_REL(bound.step_s, bound.weights_s + bound.kv_s, 1e-12, "where the bound overlaps them: weights + KV");
}

static void sparse_attention(void)
{
    /* DeepSeek-V3 and V3.2 decoding 72 x 16 sequences at 128K on one GB200 NVL72 (DP 72, 16 a
     * GPU; 8 TB/s, 2.5 PFLOP/s BF16, 5 PFLOP/s FP8). Per sequence V3 reads 61 x 131072 x 1,152 B
     * of latents; V3.2 reads 61 x (2048 x 1,152 + 131072 x 132) B, the top-2,048 latents and every
     * index key. V3's attention is 61 x 278,528 x 131072 FLOPs a token at BF16; V3.2's is
     * 61 x 278,528 x 2048 at BF16 and the indexer's 61 x 16,384 x 131072 at FP8. */
    struct model v3 = fixture_model("models/deepseek-v3.yaml");
    struct model v32 = fixture_model("models/deepseek-v3.2.yaml");
    struct topology t = fixture_topology("topologies/gb200-nvl72.xml");
    struct graph_summary g;
    struct roof_setup a = setup(&v3, &t, &g, 1, 1, 1, 131072);
    struct roof_setup b = setup(&v32, &t, &g, 1, 1, 1, 131072);
    struct roof_point dense, sparse;
    roof_decode(&a, 72 * 16, &dense);
    roof_decode(&b, 72 * 16, &sparse);
    CHECK_REL(dense.kv_s, 16 * 61 * 131072.0 * 1152 / 8e12, 1e-12, "V3 at 128K: 16 sequences' latents at 8 TB/s");
    CHECK_REL(sparse.kv_s, 16 * 61 * (2048.0 * 1152 + 131072.0 * 132) / 8e12, 1e-12,
              "V3.2 at 128K: top-2,048 latents and every index key");
    /* the compute differs by the attention and the indexers' projections, 61 x 13,959,424
     * parameters at FP8 for each of the 16 tokens */
    double v3_attention = 16 * 61 * 278528.0 * 131072 / 2.5e15;
    double v32_attention = 16 * 61 * 278528.0 * 2048 / 2.5e15 + 16 * 61 * 16384.0 * 131072 / 5e15;
    double projections = 2 * 16 * 61 * 13959424.0 / 5e15;
    CHECK_REL(sparse.compute_s - dense.compute_s, v32_attention + projections - v3_attention, 1e-9,
              "the compute differs by the attention's FLOPs and the indexers' matmuls");
    /* under TP 8 (HGX H200, 989 TFLOP/s BF16, 1,979 FP8; one DP rank of 8 sequences) MLA's heads
     * split 8 ways but the indexer runs whole on every GPU: its weights are replicated
     * (DeepSeek's Indexer, vLLM's and SGLang's ReplicatedLinear) and it scores every token */
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    struct graph_summary g8;
    struct roof_setup a8 = setup(&v3, &h200, &g8, 1, 8, 1, 131072);
    struct roof_setup b8 = setup(&v32, &h200, &g8, 1, 8, 1, 131072);
    struct roof_point dense8, sparse8;
    roof_decode(&a8, 8, &dense8);
    roof_decode(&b8, 8, &sparse8);
    double split_attention = 8 * 61 * 278528.0 / 8;
    CHECK_REL(sparse8.compute_s - dense8.compute_s,
              (split_attention * 2048 - split_attention * 131072) / 989e12 +
                  (8 * 61 * 16384.0 * 131072 + 2 * 8 * 61 * 13959424.0) / 1979e12,
              1e-9, "TP 8: MLA's attention split 8 ways, the indexer's FLOPs and weights whole on each GPU");
    CHECK_REL(sparse8.weights_s - dense8.weights_s, 61 * 13959424.0 / 4.8e12, 1e-9,
              "TP 8: every GPU streams all 61 indexers (851.5 MB at FP8)");
    double v3_time = dense.kv_s + v3_attention, v32_time = sparse.kv_s + v32_attention;
    CHECK(v32_time < 0.1 * v3_time, "V3.2's KV and attention time is %.1f%% of V3's at 128K", 100 * v32_time / v3_time);
    CHECK(dense.bound == ROOF_KV && sparse.step_s < 0.5 * dense.step_s,
          "V3 is bound by its KV read; V3.2's step takes %.0f%% of V3's", 100 * sparse.step_s / dense.step_s);
}

static void linear_attention(void)
{
    /* Qwen3-Next-80B-A3B at 256K on GB200 NVL72, 16 sequences a GPU (DP 72): a decode step reads
     * the KV of 12 full-attention layers, 262144 x 12 x 2,048 B, and reads and writes back the
     * 36 Gated DeltaNet states of 2,146,304 B each */
    struct model m = fixture_model("tests/data/hf/qwen3-next-80b-a3b.json");
    struct topology t = fixture_topology("topologies/gb200-nvl72.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 1, 1, 1, 262144);
    struct roof_point r;
    roof_decode(&s, 72 * 16, &r);
    double state = 32.0 * 128 * 128 * 4 + 8192.0 * 3 * 2;
    CHECK_REL(r.kv_s, 16 * (262144.0 * 12 * 2048 + 2 * 36 * state) / 8e12, 1e-12,
              "Qwen3-Next at 256K: 12 layers of KV and 36 states read and written");
}

static void drafts(void)
{
    /* DeepSeek-V3 with one MTP draft a step, batch 1 at 8K on one HGX H200 (TP 8, 4.8 TB/s):
     * the draft pass streams the MTP module's non-expert weights (attention 187,107,328, shared
     * expert 44,040,192, router 7168 x 256 + 256, eh_proj 2 x 7168^2, 5 norms) and the LM head
     * (129280 x 7168), over TP 8 at FP8; its one token hits 8 experts of the 256, and each GPU
     * holds 32 of them: 32 x (1 - (1 - 8/256)^1) = 1 expert of 44,040,192 B on the fullest; and
     * it reads the module's MLA latents, 8192 x 1,152 B, whole on every GPU. */
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/hgx-h200.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 1, 8, 1, 8192);
    struct roof_step plain = {.sequences = 1, .tokens_per_sequence = 2, .context = 8192};
    struct roof_step drafted = plain;
    drafted.draft_passes = 1;
    struct roof_point without, with;
    s.workload.mtp = true;
    roof_step(&s, &plain, &without);
    roof_step(&s, &drafted, &with);
    double expert = 3.0 * 7168 * 2048;
    double streamed = 187107328.0 + expert + 7168.0 * 256 + 256 + 2 * 7168.0 * 7168 + 5 * 7168 + 129280.0 * 7168;
    CHECK_REL(with.weights_s - without.weights_s, (streamed / 8 + 32 * (8.0 / 256) * expert) / 4.8e12, 1e-9,
              "a draft pass streams the MTP module and the LM head over TP 8 and the expert it hits");
    CHECK_REL(with.kv_s - without.kv_s, 8192.0 * 1152 / 4.8e12, 1e-9, "and reads the module's 8,192 latents");
    /* its compute: the streamed weights' matmuls at the FP8 peak (1,979 TFLOP/s), the 8 experts
     * of its token over EP 8 (one a GPU), and MLA over 8,192 tokens split by TP 8 at the BF16 peak
     * (989 TFLOP/s) */
    CHECK_REL(with.compute_s - without.compute_s,
              (2 * streamed / 8 + 2 * expert * 8 / 8) / 1979e12 + 278528.0 * 8192 / 8 / 989e12, 1e-9,
              "and computes the module's matmuls, its token's experts and its attention");
    /* and sends its token as a layer does: a TP all-reduce after its attention and after its FFN,
     * 2 x 7/8 x 7,168 x 2 B each, and an EP dispatch and combine of 8 x 7,168 x 3 B from each of
     * the 8 TP ranks' shares */
    CHECK_REL(with.tp_s - without.tp_s, 2 * 2 * 7.0 / 8 * 7168 * 2 / topology_scale_up_bytes_per_s(&t), 1e-9,
              "its two all-reduces over TP 8");
    CHECK_REL(with.ep_scale_up_s - without.ep_scale_up_s, 1.0 / 8 * 8 * 7168 * 3 / g.all_to_all_domain_bytes_per_s,
              1e-9, "its dispatch and combine over EP 8");
    s.workload.mtp = false;
    roof_step(&s, &drafted, &with);
    CHECK_EQ(with.step_s, without.step_s, "without --mtp nothing of the module is counted");
}

static void mla_prefill(void)
{
    /* DeepSeek-V3, 8 prompts of 8,192 tokens on one HGX H200 (DP 8, a prompt a GPU): engines
     * prefill MLA expanded, QK over 128 + 64 dims and PV over 128 a head, 2 x 128 x 320 = 81,920
     * FLOPs a cached token a layer (absorbed: 2 x 128 x (2 x 512 + 64) = 278,528). Issue 25's
     * hand figure: 65,536 tokens x (2 x N_act at FP8 1,979 TFLOP/s + 61 x 81,920 x 4,096 at BF16
     * 989 TFLOP/s) / 8 GPUs = 0.47 s, each token attending to half its prompt. */
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/hgx-h200.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 1, 1, 1, 8192);
    struct model_params p;
    model_params(&m, &p);
    CHECK(model_attention_form(&m, ATTENTION_PASS_PREFILL) == ATTENTION_FORM_EXPANDED, "DeepSeek-V3 prefills expanded");
    CHECK(model_attention_form(&m, ATTENTION_PASS_DECODE) == ATTENTION_FORM_ABSORBED, "and decodes absorbed");
    CHECK_EQ(model_attention_flops_layers(&m, 4096, 0, 61, ATTENTION_PASS_PREFILL), 61 * 81920.0 * 4096,
             "expanded: 81,920 FLOPs a cached token a layer");
    struct roof_point r;
    roof_prefill(&s, 8, 8192, &r);
    double attention = 8192.0 * 61 * 81920 * 4096 / 989e12;
    CHECK_REL(r.compute_s, 8192.0 * 2 * p.active / 1979e12 + attention, 1e-3,
              "the prefill's compute: a GPU's 8,192 tokens through 2 x N_act at FP8 and expanded MLA at BF16");
    CHECK(r.step_s <= 0.4727 * 1.001, "at most the hand figure's 0.47 s (was 0.88 s absorbed)");
    struct model v32 = fixture_model("models/deepseek-v3.2.yaml");
    CHECK(model_attention_form(&v32, ATTENTION_PASS_PREFILL) == ATTENTION_FORM_ABSORBED,
          "DSA keeps the absorbed (MQA) form in prefill: a key is shared across heads only as a latent");
    struct model llama = fixture_model("models/llama-3.1-70b.yaml");
    CHECK_EQ(model_attention_flops_layers(&llama, 1000, 0, 80, ATTENTION_PASS_PREFILL),
             model_attention_flops_layers(&llama, 1000, 0, 80, ATTENTION_PASS_DECODE), "GQA has one form");
}

static void latency_chain(void)
{
    /* DeepSeek-V3 FP8 decoding one sequence on one HGX B200 as TP 8 (DP 1, EP 8): the chain is
     * 3 dense layers of 2 + 7 + 2 = 11 kernels, 58 MoE layers of 2 + 7 + 4 = 13, the head's 4, at
     * 3.4 us each (hgx-b200.xml), and two all-reduces a layer at 7 us, each taking its norm's
     * kernel into it; with TP over the whole EP group no dispatch or combine:
     * (33 + 754 + 4) x 3.4 us + 122 x (7 - 3.4) us = 3.129 ms. It binds: the weights stream in
     * 1.66 ms. SGLang measured 9.16 ms a token at batch 1 (the bound is below it, as it must be). */
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/hgx-b200.xml");
    struct graph_summary g;
    struct roof_setup s = setup(&m, &t, &g, 1, 8, 1, 820);
    s.workload.weights = s.workload.expert_weights = PREC_FP8;
    CHECK_EQ(roof_layer_kernels(&m, 0), 11, "a dense DeepSeek layer: 11 kernels");
    CHECK_EQ(roof_layer_kernels(&m, 3), 13, "an MoE DeepSeek layer: 13, TensorRT-LLM's 13 modules");
    struct roof_point r;
    roof_decode(&s, 1, &r);
    CHECK_REL(r.latency_s, (33 + 754 + 4) * 3.4e-6 + 122 * (7e-6 - 3.4e-6), 1e-9,
              "the chain: 791 kernels, 122 of them norms inside all-reduces");
    CHECK(r.bound == ROOF_LATENCY && r.step_s == r.latency_s, "at batch 1 the chain binds the bound");
    CHECK(r.step_s < 9.16e-3, "below SGLang's 9.16 ms (sgl-cookbook DeepSeek-R1, 8 x B200, batch 1)");
    /* as DP 8 (EP 8 over data-parallel attention) every MoE layer adds a dispatch and a combine,
     * 18.9 + 31.0 us, and no all-reduce: 791 x 3.4 us + 58 x 49.9 us = 5.584 ms */
    struct roof_setup dp = setup(&m, &t, &g, 1, 1, 1, 820);
    dp.workload.weights = dp.workload.expert_weights = PREC_FP8;
    roof_decode(&dp, 1, &r);
    CHECK_REL(r.latency_s, 791 * 3.4e-6 + 58 * 49.9e-6, 1e-9, "DP 8: the chain adds 58 dispatches and combines");
    /* Llama 3.1 70B on HGX H100, TP 8: 80 layers of 2 + 4 + 2 = 8 kernels and the head's 4 at
     * 3.7 us, 160 all-reduces at 5.9 us holding a norm each: 2.383 + 160 x 2.2 us = 2.735 ms */
    struct model llama = fixture_model("models/llama-3.1-70b.yaml");
    struct topology h100 = fixture_topology("topologies/hgx-h100.xml");
    struct roof_setup l = setup(&llama, &h100, &g, 1, 8, 1, 1100);
    roof_decode(&l, 1, &r);
    CHECK_REL(r.latency_s, (80 * 8 + 4) * 3.7e-6 + 160 * (5.9e-6 - 3.7e-6), 1e-9,
              "Llama 70B TP 8: 644 kernels, 160 all-reduces holding its norms");
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    latency_floor();
    crossover();
    long_context();
    pipeline();
    network();
    kernels_in_sequence();
    sparse_attention();
    linear_attention();
    drafts();
    mla_prefill();
    latency_chain();
    return tap_done();
}
