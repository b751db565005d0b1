/* Memory fit against hand arithmetic (issue #2's cases and the layout rules of plan.h). */
#include "plan.h"
#include "fixtures.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static struct workload workload(const struct model *m, int64_t batch, int64_t context)
{
    return (struct workload){.batch = batch, .context = context, .weights = m->weights_precision,
                             .expert_weights = m->expert_weights_precision, .kv = m->kv_precision,
                             .reserve_fraction = PLAN_DEFAULT_RESERVE_FRACTION, .reserve_bytes = -1};
}

static void llama_405b(void)
{
    struct model m = fixture_model("models/llama-3.1-405b.yaml");
    struct model_params p;
    model_params(&m, &p);
    struct topology h100 = fixture_topology("topologies/hgx-h100.xml");
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    struct workload w = workload(&m, 1, 4096);
    struct fit f;

    /* ~811.7 GB at BF16 over 8 GPUs by TP 8 = 101.5 GB per GPU > the H100's 85.5 GB (81,559 MiB,
     * topologies/hgx-h100.xml): no fit on one HGX H100 */
    CHECK(plan_fit(&m, &h100, 1, &w, &f), "Llama 3.1 405B on HGX H100: a layout exists");
    CHECK(!f.fits, "Llama 3.1 405B BF16 does not fit one HGX H100 (811.7 GB > 684.2 GB)");
    CHECK(f.layout.tp == 8 && f.layout.pp == 1, "dense model: TP 8 across the node");
    CHECK_EQ(f.memory.weights_bytes, p.total * 2 / 8, "weights per GPU = 2 B x 405.85e9 / 8");
    CHECK_EQ(f.max_batch, 0, "no batch fits when the weights alone do not");
    CHECK(f.min_devices == 16 && f.min_racks == 2 && f.min_layout.pp == 2,
          "min devices: 16 (two nodes, pipelined): 811.7 GB / 16 = 50.7 GB per GPU");

    /* On one HGX H200 (143,771 MiB = 150,754,820,096 B a GPU): free for KV = 150.75e9 x 0.9 -
     * 101.46e9 = 34.22e9.
     * Per sequence of 4,096 tokens: KV 4096 x 516,096 / 8 (8 KV heads over TP 8) = 264,241,152 B
     * plus activations 2 B x (2 x 16384 + 2 x 53248 / 8) + 4 B x 128256 / 8 = 156,288 B. */
    CHECK(plan_fit(&m, &h200, 1, &w, &f) && f.fits,
          "Llama 3.1 405B BF16 fits one HGX H200 with a small batch at 4k context");
    double per_sequence = 4096.0 * 516096 / 8 + 2 * (2 * 16384.0 + 2 * 53248.0 / 8) + 4 * 128256.0 / 8;
    CHECK_EQ(plan_activation_bytes_per_token(&m, &f.layout), 156288, "activation bytes per token, 405B TP 8");
    double free_for_batch = 150754820096.0 * 0.9 - p.total * 2 / 8;
    CHECK_EQ(f.max_batch, floor(free_for_batch / per_sequence), "max batch = free / bytes per sequence (~129)");
    CHECK(f.max_batch >= 125 && f.max_batch <= 133, "max batch at 4k on H200 is about 129 (%lld)", (long long)f.max_batch);

    /* Pipelining over two nodes halves weights per GPU; the heavier stage holds 63 layers and
     * the LM head plus the final norm (the first holds the same-sized embedding). */
    struct fit two;
    CHECK(plan_fit(&m, &h100, 2, &w, &two) && two.fits && two.layout.pp == 2,
          "on two HGX H100 nodes 405B fits as TP 8 x PP 2");
    double layer = 16384.0 * 16384 * 2 + 2 * 16384.0 * 1024 + 3 * 16384.0 * 53248 + 2 * 16384;
    CHECK_EQ(two.memory.weights_bytes, (63 * layer + 128256.0 * 16384 + 16384) * 2 / 8,
             "PP 2 stage weights: 63 layers + LM head + final norm, over TP 8");
    CHECK_EQ(two.memory.kv_bytes, 4096.0 * 63 * 4096 / 8, "PP 2 stage KV: 63 of the 126 layers");
}

static void deepseek_v3(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct model_params p;
    model_params(&m, &p);
    struct topology gb200 = fixture_topology("topologies/gb200-nvl72.xml");
    struct workload w = workload(&m, 1, 8192);
    struct fit f;
    CHECK(plan_fit(&m, &gb200, 1, &w, &f) && f.fits, "DeepSeek-V3 FP8 fits one GB200 NVL72");
    CHECK(f.layout.tp == 1 && f.layout.dp == 72 && f.layout.ep == 72,
          "MoE: data-parallel attention, experts over all 72 GPUs");
    /* FP8, 1 B per parameter: everything but routed experts on every GPU, and whole experts:
     * 256 experts over 72 GPUs puts ceil(256 / 72) = 4 of each of the 58 MoE layers on the
     * fullest GPU (as the 288-slot layouts of EPLB case a1 do) */
    double expert = 3.0 * 7168 * 2048;
    double weights = (p.total - p.routed_experts) + 58 * 4 * expert;
    CHECK_EQ(f.memory.weights_bytes, weights, "weights per GPU: 17.1 GB replicated + 58 x 4 experts");
    CHECK_REL(weights, 27.34e9, 0.005, "which is about 27.3 GB");
    /* activations per token: 2 B x (2 x 7168 + 2 x 18432 dense) + 8 x 7168 x (1 + 2) dispatch
     * + 4 B x 129280 logits = 791,552 B; KV per 8k sequence: 8192 x 70,272 B */
    CHECK_EQ(plan_activation_bytes_per_token(&m, &f.layout), 791552, "DeepSeek-V3 activation bytes per token");
    double per_sequence = 8192.0 * 70272 + 791552;
    double per_gpu = floor((198674743296.0 * 0.9 - weights) / per_sequence); /* 189,471 MiB a GB200 */
    CHECK_EQ(f.max_batch, 72 * per_gpu, "max batch = 72 GPUs x floor(free / per sequence)");
    CHECK(f.max_batch > 10000, "room for thousands of 8k-token sequences (%lld)", (long long)f.max_batch);
    /* fewest GPUs: at TP 2 x DP 2 the 17.12e9 not in routed experts halves, and 8.56e9 + 58 x 64
     * x 44.04e6 (163.5e9) + 0.58e9 of KV fits 198.67e9 x 0.9 = 178.8e9 on 4 GPUs; on 3, 86
     * experts a layer (219.7e9) do not. vLLM serves DeepSeek-V3.2 (the same weights) on 4 GB200s
     * (facts row C20: vllm-project.github.io, 2026-05-11, 109.3 tok/s at TP 4) */
    CHECK(f.min_devices == 4 && f.min_layout.tp == 2 && f.min_layout.dp == 2,
          "min devices for one sequence: 4 GPUs, TP 2 x DP 2 (%lld, TP %lld x DP %lld)", (long long)f.min_devices,
          (long long)f.min_layout.tp, (long long)f.min_layout.dp);

    /* MLA's latent is shared by all heads: TP replicates it instead of dividing it */
    w.tp = 8;
    w.batch = 72;
    CHECK(plan_fit(&m, &gb200, 1, &w, &f) && f.layout.tp == 8 && f.layout.dp == 9,
          "pinned TP 8 on 72 GPUs gives DP 9");
    CHECK_EQ(f.memory.kv_bytes, 8 * 8192.0 * 70272, "MLA KV under TP 8: 72 / 9 = 8 whole sequences per GPU");
}

static void experts_whole(void)
{
    struct model m = fixture_model("models/qwen3-30b-a3b.yaml");
    struct layout l = {.racks = 1, .devices = 8960, .tp = 1, .pp = 1, .dp = 8960, .ep = 8960};
    /* 128 experts over 8,960 chips: each expert sliced over floor(8960 / 128) = 70 chips */
    CHECK_EQ(plan_experts_per_device(&m, &l), 1.0 / 70, "EP beyond the expert count slices experts");
    l.ep = l.dp = l.devices = 72;
    CHECK_EQ(plan_experts_per_device(&m, &l), 2, "128 experts over 72 devices: 2 on the fullest");
    /* replicas take slots: 128 + 88 spare = 216 slots over 72 devices is 3 a device */
    l.redundant = 88;
    CHECK_EQ(plan_experts_per_device(&m, &l), 3, "128 experts + 88 spare slots over 72 devices: 3 each");
}

/* A spare slot holds one routed expert in each MoE layer: DeepSeek-V3 at FP8 on EP144 (case d,
 * 18 HGX H800 nodes) goes from 2 slots a device (288 slots: the 32 spare of DeepSeek's decode
 * deployment) to 3 (432 slots, 176 spare), 58 x 3 x 7168 x 2048 B = 2,554,331,136 B more. */
static void replica_memory(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology h800 = fixture_topology("topologies/hgx-h800.xml");
    struct workload w = workload(&m, 11376, 8192);
    struct layout l = {.racks = 18, .devices = 144, .tp = 1, .pp = 1, .dp = 144, .ep = 144, .redundant = 32};
    struct device_memory two, three;
    plan_memory(&m, &h800, &l, &w, &two);
    l.redundant = 176;
    plan_memory(&m, &h800, &l, &w, &three);
    CHECK_EQ(three.weights_bytes - two.weights_bytes, 58.0 * 3 * 7168 * 2048,
             "one more expert slot a device: 2.55 GB of FP8 weights");
}

static void gqa_kv_split(void)
{
    struct model m = fixture_model("models/llama-3.1-70b.yaml");
    struct topology gb200 = fixture_topology("topologies/gb200-nvl72.xml");
    struct workload w = workload(&m, 9, 1000);
    w.tp = 64; /* 64 heads; 8 KV heads: beyond TP 8 the KV heads are replicated */
    struct fit f;
    bool ok = plan_fit(&m, &gb200, 1, &w, &f);
    CHECK(!ok, "TP 64 does not divide 72 GPUs: no layout");
    w.tp = 8;
    CHECK(plan_fit(&m, &gb200, 1, &w, &f) && f.layout.dp == 9, "TP 8 x DP 9 on NVL72");
    CHECK_EQ(f.memory.kv_bytes, 1000.0 * 327680 / 8, "GQA KV divided by TP 8 over 8 KV heads: one sequence per DP rank");

    struct workload reserve = workload(&m, 1, 1000);
    reserve.reserve_bytes = 8e9;
    CHECK(plan_fit(&m, &gb200, 1, &reserve, &f) && f.memory.reserve_bytes == 8e9,
          "an absolute reserve is used as given");
}

static void recurrent_state(void)
{
    /* Qwen3-Next-80B-A3B (BF16) at 256K on one HGX H200: TP 1 x DP 8, the 512 experts over EP 8,
     * 64 of each of the 48 MoE layers on a GPU. A sequence holds KV only in its 12 full-attention
     * layers, 262144 x 12 x 2,048 B = 6.44 GB, and 36 Gated DeltaNet states of 2,146,304 B
     * (32 x 128 x 128 at FP32 + 3 x 8,192 conv inputs at BF16), whatever its length. */
    struct model m = fixture_model("tests/data/hf/qwen3-next-80b-a3b.json");
    struct model_params p;
    model_params(&m, &p);
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    struct workload w = workload(&m, 1, 262144);
    struct fit f;
    CHECK(plan_fit(&m, &h200, 1, &w, &f) && f.fits && f.layout.tp == 1 && f.layout.dp == 8 && f.layout.ep == 8,
          "Qwen3-Next fits one HGX H200 as TP 1 x DP 8, EP 8");
    /* the non-expert part: 79,674,391,296 in all less 48 x 512 experts of 3 x 2048 x 512
     * (77,309,411,328) = 2,364,979,968 parameters, whole on each GPU */
    double expert = 3.0 * 2048 * 512;
    double weights = 2364979968.0 * 2 + 48 * 64 * expert * 2;
    CHECK_EQ(p.total, 79674391296.0, "Qwen3-Next's 79,674,391,296 parameters (test_model)");
    CHECK_EQ(f.memory.weights_bytes, weights, "weights per GPU: the non-expert part and 48 x 64 experts at BF16");
    double state = 36 * (32.0 * 128 * 128 * 4 + 8192.0 * 3 * 2);
    CHECK_EQ(f.memory.kv_bytes, 262144.0 * 12 * 2048 + state, "one sequence: 12 layers of KV + 36 states");
    double per_sequence = 262144.0 * 12 * 2048 + state + plan_activation_bytes_per_token(&m, &f.layout);
    double per_gpu = floor((150754820096.0 * 0.9 - weights) / per_sequence);
    CHECK_EQ(f.max_batch, 8 * per_gpu, "max batch at 256K = 8 GPUs x floor(free / (KV + state + activations))");
    /* read as 48 full-attention layers, as rackplan did before, a sequence would hold
     * 262144 x 48 x 2,048 B = 25.8 GB and a GPU 4 of them instead of 17 */
    double as_attention = floor((150754820096.0 * 0.9 - weights) / (262144.0 * 48 * 2048));
    CHECK(per_gpu >= 4 * as_attention,
          "the linear layers' fixed state lets %.0f sequences a GPU where full attention fits %.0f",
          per_gpu, as_attention);
}

static void indexer_whole(void)
{
    /* DeepSeek-V3.2 against V3 pinned to TP 8 on one HGX H200: the 61 indexers of 13,959,424
     * parameters are replicated on every GPU, not split (DeepSeek's Indexer builds them whole;
     * vLLM and SGLang use ReplicatedLinear), 851,524,864 B more at FP8 */
    struct model v3 = fixture_model("models/deepseek-v3.yaml");
    struct model v32 = fixture_model("models/deepseek-v3.2.yaml");
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    struct workload w = workload(&v3, 8, 8192);
    w.tp = 8;
    struct fit a, b;
    CHECK(plan_fit(&v3, &h200, 1, &w, &a) && plan_fit(&v32, &h200, 1, &w, &b) && b.layout.tp == 8,
          "DeepSeek-V3 and V3.2 at TP 8 on HGX H200");
    CHECK_EQ(b.memory.weights_bytes - a.memory.weights_bytes, 851524864.0,
             "V3.2 holds all 61 indexers on each GPU: 61 x 13,959,424 B");
    /* its KV: 8 sequences of 8,192 tokens, 61 x (1,152 + 132) B a token, whole on each GPU */
    CHECK_EQ(b.memory.kv_bytes, 8 * 8192.0 * 61 * 1284, "and every sequence's latents and index keys");
}

static void mtp_memory(void)
{
    /* DeepSeek-V3 with its MTP module held (speculative decoding on), FP8 on one GB200 NVL72
     * (DP 72, EP 72): every GPU of the last (only) stage holds the module's non-expert weights
     * (attention 187,107,328, shared expert, router, eh_proj 2 x 7168^2 and 5 norms), 4 of its
     * 256 experts like any MoE layer, and a 62nd layer of MLA latents for each sequence */
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology gb200 = fixture_topology("topologies/gb200-nvl72.xml");
    struct workload w = workload(&m, 72, 8192);
    struct device_memory plain, held;
    struct fit f;
    CHECK(plan_fit(&m, &gb200, 1, &w, &f) && f.layout.dp == 72, "DeepSeek-V3 on NVL72: DP 72");
    plan_memory(&m, &gb200, &f.layout, &w, &plain);
    w.mtp = true;
    plan_memory(&m, &gb200, &f.layout, &w, &held);
    double expert = 3.0 * 7168 * 2048;
    double module = 187107328.0 + expert + 7168.0 * 256 + 256 + 2 * 7168.0 * 7168 + 5 * 7168;
    CHECK_EQ(held.weights_bytes - plain.weights_bytes, module + 4 * expert,
             "the MTP module adds its non-expert weights and 4 experts a GPU at FP8");
    CHECK_EQ(held.kv_bytes - plain.kv_bytes, 8192.0 * 1152, "and one layer of MLA latents for the GPU's sequence");
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    llama_405b();
    deepseek_v3();
    experts_whole();
    replica_memory();
    gqa_kv_split();
    recurrent_state();
    indexer_whole();
    mtp_memory();
    return tap_done();
}
