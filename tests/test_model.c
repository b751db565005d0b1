/* Model derivations against hand arithmetic and published figures (sources beside each). */
#include "model.h"
#include "fixtures.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Published "active" figures differ in whether the input embedding counts (Meta and Qwen count
 * it, OpenAI does not). rackplan's active_params excludes it (a lookup, not a matmul), so a
 * published figure must lie between active and active + embedding, within 1% at either end. */
static void check_active(const char *name, const struct model_params *p, double published)
{
    bool ok = published >= p->active * 0.99 && published <= (p->active + p->embedding) * 1.01;
    if (!CHECK(ok, "%s: published %.4g active lies in [active, active + embedding]", name,
               published))
        printf("#   active %.6g, with embedding %.6g\n", p->active, p->active + p->embedding);
}

static void deepseek_v3(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct model_params p;
    model_params(&m, &p);
    /* MLA per layer: q down 7168x1536 + norm 1536 + q up 1536x(128 heads x 192) + kv down
     * 7168x(512+64) + norm 512 + kv up 512x(128 x (128+128)) + out (128x128)x7168 */
    double attention = 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512 +
                       512.0 * 128 * 256 + 128.0 * 128 * 7168;
    CHECK_EQ(attention, 187107328.0, "DeepSeek-V3 MLA parameters per layer (hand sum)");
    CHECK_EQ(model_attention_params_per_layer(&m), attention, "DeepSeek-V3 attention per layer");
    double expert = 3.0 * 7168 * 2048; /* gate, up, down */
    double total = 61 * attention                       /* attention */
                   + 3 * 3.0 * 7168 * 18432             /* 3 dense FFN layers */
                   + 58 * (256 + 1) * expert            /* 58 MoE layers, 256 routed + 1 shared */
                   + 58 * (7168.0 * 256 + 256)          /* routers with correction bias */
                   + 2 * 129280.0 * 7168                /* embedding and LM head */
                   + 2 * 7168.0 * 61 + 7168;            /* norms */
    CHECK_EQ(p.total, total, "DeepSeek-V3 total parameters equal the hand sum");
    /* 671B total, 37B activated: github.com/deepseek-ai/DeepSeek-V3 README */
    CHECK_REL(p.total, 671e9, 0.01, "DeepSeek-V3 total within 1% of the published 671B");
    check_active("DeepSeek-V3", &p, 37e9);
    CHECK_EQ(p.active, 61 * attention + 3 * 3.0 * 7168 * 18432 + 58 * 9 * expert +
                           58 * (7168.0 * 256 + 256) + 129280.0 * 7168,
             "DeepSeek-V3 active = attention + dense + 8 routed + 1 shared + routers + LM head");
    CHECK_EQ(model_moe_layers(&m), 58, "DeepSeek-V3 has 58 MoE layers (61 - first_k_dense 3)");
    /* 70,272 B: (512 + 64) x 2 B x 61 layers; arXiv 2505.09343 quotes 70.272 KB */
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_BF16), 70272, "DeepSeek-V3 MLA KV bytes per token at BF16");
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_FP8), 35136, "DeepSeek-V3 MLA KV bytes per token at FP8");
    CHECK_EQ(model_weight_bytes(&m, PREC_FP8, PREC_FP8), total, "DeepSeek-V3 FP8 weight bytes = parameters");
    CHECK_EQ(model_weight_bytes(&m, PREC_BF16, PREC_BF16), 2 * total, "DeepSeek-V3 BF16 weight bytes");
    CHECK_EQ(model_weight_bytes(&m, PREC_FP4, PREC_FP4), total / 2, "DeepSeek-V3 FP4 weight bytes");
    CHECK_EQ(model_weight_bytes(&m, PREC_FP32, PREC_FP32), 4 * total, "DeepSeek-V3 FP32 weight bytes");
    /* absorbed MLA: 2 x 128 x (2 x 512 + 64) = 278,528 FLOPs per cached token per layer
     * (DESIGN.md: "~278k for DeepSeek-V3") */
    CHECK_EQ(model_attention_flops_per_token(&m, 4096), 278528.0 * 4096 * 61,
             "DeepSeek-V3 attention FLOPs per token at 4096 tokens");
    CHECK_EQ(model_matmul_flops_per_token(&m), 2 * p.active, "matmul FLOPs are 2 x active parameters");
}

static void llama_405b(void)
{
    struct model m = fixture_model("models/llama-3.1-405b.yaml");
    struct model_params p;
    model_params(&m, &p);
    double attention = 16384.0 * 16384 + 2 * 16384.0 * 1024 + 16384.0 * 16384; /* q, k+v, o */
    double total = 126 * (attention + 3 * 16384.0 * 53248) + 2 * 128256.0 * 16384 +
                   2 * 16384.0 * 126 + 16384;
    CHECK_EQ(p.total, total, "Llama 3.1 405B total equals the hand sum");
    /* 405B: ai.meta.com/blog/meta-llama-3-1 */
    CHECK_REL(p.total, 405e9, 0.01, "Llama 3.1 405B within 1% of 405B");
    check_active("Llama 3.1 405B", &p, 405e9);
    /* 516,096 B: 2 x 8 KV heads x 128 x 2 B x 126 layers; arXiv 2505.09343 quotes 516.096 KB */
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_BF16), 516096, "Llama 3.1 405B GQA KV bytes per token at BF16");
    /* ~810 GB at BF16 (issue #2): 2 x 405.85e9 */
    CHECK_REL(model_weight_bytes(&m, PREC_BF16, PREC_BF16), 811.7e9, 0.001, "Llama 3.1 405B is ~812 GB at BF16");
    CHECK_EQ(model_attention_flops_per_token(&m, 1000), 4.0 * 128 * 128 * 1000 * 126,
             "GQA attention FLOPs: 4 x heads x head_dim per cached token per layer");
}

static void totals(void)
{
    struct {
        const char *path;
        double total, active;
        const char *source;
    } cases[] = {
        /* hf.co/meta-llama/Llama-3.1-70B model card: 70.6B */
        {"models/llama-3.1-70b.yaml", 70.6e9, 70.6e9, "Meta model card"},
        /* Qwen3 technical report (arXiv 2505.09388), Table 2: 235B total / 22B activated */
        {"models/qwen3-235b-a22b.yaml", 235e9, 22e9, "Qwen3 report"},
        /* same table: 30.5B total / 3.3B activated */
        {"models/qwen3-30b-a3b.yaml", 30.5e9, 3.3e9, "Qwen3 report"},
        /* mistral.ai/news/mixtral-8x22b: 141B total, 39B active */
        {"models/mixtral-8x22b.yaml", 141e9, 39e9, "Mistral"},
        /* OpenAI gpt-oss model card, Table 1: 116.83B total, 5.13B active (embedding excluded) */
        {"models/gpt-oss-120b.yaml", 116.83e9, 5.13e9, "OpenAI model card"},
        /* ai.meta.com/blog/llama-4-multimodal-intelligence: 400B total, 17B active */
        {"models/llama-4-maverick.yaml", 400e9, 17e9, "Meta"},
        /* Kimi K2 tech report (arXiv 2507.20534): 1.04T total, 32.6B activated */
        {"models/kimi-k2.yaml", 1.04e12, 32.6e9, "Kimi K2 report"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct model m = fixture_model(cases[i].path);
        struct model_params p;
        model_params(&m, &p);
        char name[320];
        snprintf(name, sizeof name, "%s total within %s of %.4g (%s)", m.name,
                 i == 6 ? "1.5%" : "1%", cases[i].total, cases[i].source);
        /* Kimi's 1.04T is given to 3 digits and its README says "1T"; our count, 1.0264T, is
         * the checkpoint's tensor count less its FP8 scales. 1.5% covers the rounding. */
        CHECK_REL(p.total, cases[i].total, i == 6 ? 0.015 : 0.01, name);
        check_active(m.name, &p, cases[i].active);
    }
    /* gpt-oss excludes the embedding from "active", so its figure is a direct comparison */
    struct model oss = fixture_model("models/gpt-oss-120b.yaml");
    struct model_params p;
    model_params(&oss, &p);
    CHECK_REL(p.active, 5.13e9, 0.01, "gpt-oss-120b active within 1% of 5.13B");
    /* GLM-4.5: 355B total (z.ai GLM-4.5 blog, which counts the MTP layer we leave out) */
    struct model glm = fixture_model("models/glm-4.5.yaml");
    model_params(&glm, &p);
    CHECK_REL(p.total, 355e9, 0.01, "GLM-4.5 total within 1% of 355B");
}

static void windows(void)
{
    struct model oss = fixture_model("models/gpt-oss-120b.yaml");
    /* 18 sliding layers keep 128 tokens, 18 full layers keep the context; 2 x 8 x 64 x 2 B =
     * 2,048 B per token per layer: 18 x 131072 x 2048 + 18 x 128 x 2048 (facts: ~4.8 GB) */
    CHECK_EQ(model_sequence_bytes(&oss, PREC_BF16, 131072),
             18.0 * 131072 * 2048 + 18.0 * 128 * 2048, "gpt-oss-120b KV per 128K sequence, windows capped");
    CHECK_EQ(model_sequence_bytes(&oss, PREC_BF16, 100), 36.0 * 100 * 2048,
             "gpt-oss-120b below the window every layer keeps every token");
    CHECK_EQ(model_kv_bytes_per_token(&oss, PREC_BF16), 73728, "gpt-oss-120b KV bytes per token uncapped (facts B2)");
    /* gpt-oss MXFP4 experts, BF16 elsewhere: (total - routed) x 2 + routed x 0.5 */
    struct model_params p;
    model_params(&oss, &p);
    CHECK_EQ(model_weight_bytes(&oss, oss.weights_precision, oss.expert_weights_precision),
             (p.total - p.routed_experts) * 2 + p.routed_experts * 0.5,
             "gpt-oss-120b weight bytes with MXFP4 experts");

    struct model maverick = fixture_model("models/llama-4-maverick.yaml");
    /* 36 chunked layers keep 8192 tokens, 12 NoPE layers keep everything; 4,096 B per token
     * per layer (2 x 8 x 128 x 2 B) */
    CHECK_EQ(model_sequence_bytes(&maverick, PREC_BF16, 131072),
             (36.0 * 8192 + 12.0 * 131072) * 4096, "Llama 4 Maverick KV per 128K sequence, chunks capped");
    CHECK_EQ(model_moe_layers(&maverick), 24, "Llama 4 Maverick has 24 MoE layers (interleave 2)");
    CHECK(model_layer_is_moe(&maverick, 1) && !model_layer_is_moe(&maverick, 0),
          "Llama 4 Maverick: layer 1 is MoE, layer 0 dense (HF: range(step - 1, L, step))");
    /* attention FLOPs follow the window too: 4 x 40 x 128 per cached token */
    CHECK_EQ(model_attention_flops_per_token(&maverick, 131072),
             4.0 * 40 * 128 * (36.0 * 8192 + 12.0 * 131072), "Llama 4 attention FLOPs capped by chunks");
}

/* A published total must lie within 2% of what rackplan counts (issue 19). */
static void check_total(const char *name, double counted, double published)
{
    CHECK(fabs(counted / published - 1) <= 0.02, "%s: %.4g counted, %+.2f%% from the published %.4g", name,
          counted, (counted / published - 1) * 100, published);
}

static void deepseek_v32(void)
{
    struct model v3 = fixture_model("models/deepseek-v3.yaml");
    struct model m = fixture_model("tests/data/hf/deepseek-v3.2.json");
    struct model_params p, p3;
    model_params(&m, &p);
    model_params(&v3, &p3);
    /* DeepSeek-V3.2's Indexer (inference/model.py): wq_b 1536 x (64 x 128) from the query latent,
     * wk 7168 x 128, k_norm LayerNorm weight and bias 2 x 128, weights_proj 7168 x 64 */
    double indexer = 1536.0 * 64 * 128 + 7168.0 * 128 + 2 * 128 + 7168.0 * 64;
    CHECK_EQ(indexer, 13959424, "DeepSeek-V3.2 indexer parameters per layer (hand sum)");
    CHECK_EQ(model_indexer_params_per_layer(&m), indexer, "DeepSeek-V3.2 indexer per layer");
    CHECK_EQ(p.indexer, 61 * indexer, "61 layers, each with its own indexer");
    CHECK_EQ(p.total, p3.total + 61 * indexer, "DeepSeek-V3.2 = DeepSeek-V3 + 61 indexers");
    CHECK_EQ(p.active, p3.active + 61 * indexer, "and every indexer is active");
    /* The MTP module: a whole MoE layer with its indexer, eh_proj 2 x 7168 x 7168, the layer's two
     * norms and enorm, hnorm and the shared head's norm; embedding and head shared with the model */
    double expert = 3.0 * 7168 * 2048, attention = 187107328;
    double module = attention + indexer + 257 * expert + (7168.0 * 256 + 256) + 2 * 7168.0 * 7168 + 5 * 7168.0;
    CHECK_EQ(p.mtp, module, "DeepSeek-V3.2 MTP module = MoE layer + indexer + 2d x d + 5 norms");
    /* The Hub's 685B (safetensors) counts the main model, the MTP module and the module's own
     * copies of the embedding and head (model.layers.61.embed_tokens, shared_head.head) */
    check_total("DeepSeek-V3.2 with MTP and its copies of embedding and head",
                p.total + p.mtp + 2 * 129280.0 * 7168, 685e9);
    check_total("DeepSeek-V3.2 without MTP (DeepSeek-V3's 671B)", p.total, 671e9);
    /* KV per token: V3's 70,272 B plus an FP8 index key of 128 B with one FP32 scale, 132 B a layer */
    CHECK_EQ(model_index_key_bytes(&m), 132, "index key: 128 FP8 values + a 4-byte scale");
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_BF16), 70272 + 61 * 132, "V3.2 KV per token = V3's + 61 x 132 B");
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_BF16), model_kv_bytes_per_token(&v3, PREC_BF16) + 61 * 132,
             "which is V3's KV per token plus the index keys");
    CHECK_EQ(model_state_bytes_per_sequence(&m), 0, "no fixed state: every layer is attention");
    /* At 128K the attention reads 2,048 tokens' latents and scores all 131,072 index keys:
     * per layer 2048 x 1152 + 131072 x 132 = 19,660,800 B against V3's 131072 x 1152 */
    double step = 61 * (2048.0 * 1152 + 131072.0 * 132);
    CHECK_EQ(model_step_cache_bytes_layers(&m, PREC_BF16, 131072, 0, 61, 1, 1), step,
             "V3.2 decode reads per sequence at 128K: top-2048 latents + every index key");
    CHECK_EQ(model_step_cache_bytes_layers(&v3, PREC_BF16, 131072, 0, 61, 1, 1), 61 * 131072.0 * 1152,
             "V3 reads every latent");
    CHECK(step < 0.14 * 61 * 131072.0 * 1152, "V3.2 reads 13%% of V3's KV at 128K");
    /* a prefill chunk of 8,192 prompt tokens (or 2 verified MTP tokens) picks a top-2,048 for
     * each: together they may read every cached latent (at most 8192 x 2048, more than held) */
    CHECK_EQ(model_step_cache_bytes_layers(&m, PREC_BF16, 131072, 0, 61, 1, 8192), 61 * 131072.0 * 1284,
             "a chunk of 8,192 queries reads every latent and index key");
    CHECK_EQ(model_step_cache_bytes_layers(&m, PREC_BF16, 131072, 0, 61, 1, 2), 61 * (4096.0 * 1152 + 131072.0 * 132),
             "two queries read at most 4,096 latents");
    CHECK_EQ(model_sequence_bytes(&m, PREC_BF16, 131072), 131072.0 * 78324, "but holds all of it, index keys too");
    /* FLOPs per new token at 128K, per layer: MLA over 2,048 tokens, 278,528 x 2048, and the
     * indexer over every token, 2 x 64 x 128 = 16,384 x 131072 */
    double flops = 61 * (278528.0 * 2048 + 16384.0 * 131072);
    CHECK_EQ(model_attention_flops_per_token(&m, 131072), flops, "V3.2 attention FLOPs at 128K (hand sum)");
    CHECK_EQ(model_indexer_flops_layers(&m, 131072, 0, 61), 61 * 16384.0 * 131072, "of which the indexers'");
    CHECK(flops < 0.08 * model_attention_flops_per_token(&v3, 131072), "7.4%% of V3's attention FLOPs at 128K");
    CHECK_EQ(model_attention_flops_per_token(&m, 2048),
             model_attention_flops_per_token(&v3, 2048) + 61 * 16384.0 * 2048,
             "at 2,048 tokens the attention is V3's, plus the indexer");
}

static void glm5(void)
{
    struct model m = fixture_model("tests/data/hf/glm-5.json");
    struct model_params p;
    model_params(&m, &p);
    /* indexer: wq_b 2048 x (32 x 128), wk 6144 x 128, k_norm 2 x 128, weights_proj 6144 x 32 */
    double indexer = 2048.0 * 32 * 128 + 6144.0 * 128 + 2 * 128 + 6144.0 * 32;
    CHECK_EQ(p.indexer, 78 * indexer, "GLM-5: 78 indexers of 9,371,904");
    /* "744B parameters (40B active)", github.com/zai-org/GLM-5 README, without the MTP layer */
    check_total("GLM-5", p.total, 744e9);
    /* its 40B active counts neither the embedding nor the LM head: 40.83B - 0.95B = 39.88B */
    CHECK_REL(p.active - p.lm_head, 40e9, 0.01, "GLM-5: active without the LM head within 1% of the published 40B");
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_BF16), 78 * ((512 + 64) * 2 + 132.0),
             "GLM-5 KV per token: 78 x (MLA latent 1,152 B + index key 132 B)");
    /* GLM-5.2's IndexShare: a shared layer reuses the previous layer's top-k, holds no index keys
     * and runs no indexer; its attention still reads the top-k */
    struct model shared = m;
    shared.pattern.length = 2;
    shared.pattern.shares_indexer[0] = 0;
    shared.pattern.shares_indexer[1] = 1;
    model_params(&shared, &p);
    CHECK_EQ(p.indexer, 78 * indexer, "indexers shared by pairs of layers keep their weights (all 78)");
    CHECK_EQ(model_kv_bytes_per_token(&shared, PREC_BF16), 78 * 1152.0 + 39 * 132, "and 39 layers of index keys");
    CHECK_EQ(model_attention_flops_per_token(&shared, 131072),
             78 * 2.0 * 64 * (2 * 512 + 64) * 2048 + 39 * 2.0 * 32 * 128 * 131072,
             "every layer attends to 2,048 tokens, half of them score all 131,072");
    /* the same read from a config.json: GLM-5's with index_topk_freq 2 and transformers' default
     * index_skip_topk_offset 2, so layer i runs its own indexer when max(i - 1, 0) is even:
     * layers 0 and 1, then every other one, 40 of the 78 */
    struct model freq = fixture_model("tests/data/hf-derived/glm-5-index-topk-freq-2.json");
    int64_t own = 0;
    for (int64_t i = 0; i < 78; i++)
        own += model_layer_has_indexer(&freq, i);
    CHECK(own == 40 && model_layer_has_indexer(&freq, 1) && !model_layer_has_indexer(&freq, 2) &&
              model_layer_has_indexer(&freq, 3),
          "index_topk_freq 2: 40 layers run their own indexer (0, 1, 3, 5, ...), 38 share");
    CHECK_EQ(model_kv_bytes_per_token(&freq, PREC_BF16), 78 * 1152.0 + 40 * 132,
             "78 latents and 40 index keys a token");
}

/* Gated DeltaNet of Qwen3-Next and Qwen3.5 (16 key heads, 32 value heads, heads of 128, a
 * 4-wide convolution, hidden 2048): per layer in_proj_qkvz 2048 x (2 x 2048 + 2 x 4096),
 * in_proj_ba 2048 x 64, conv 8,192 channels x 4, dt_bias and A_log 2 x 32, the gated norm 128,
 * out_proj 4096 x 2048. Its state: 32 x 128 x 128 at FP32 plus the convolution's last 3 inputs
 * of 8,192 channels at BF16. */
static const double gdn_params = 2048.0 * 12288 + 2048.0 * 64 + 8192.0 * 4 + 64 + 128 + 4096.0 * 2048;
static const double gdn_state = 32.0 * 128 * 128 * 4 + 8192.0 * 3 * 2;

static void qwen3_next(void)
{
    struct model m = fixture_model("tests/data/hf/qwen3-next-80b-a3b.json");
    struct model_params p;
    model_params(&m, &p);
    CHECK_EQ(model_mixer_layers(&m, MIXER_LINEAR), 36, "Qwen3-Next: 36 Gated DeltaNet layers");
    CHECK_EQ(model_mixer_layers(&m, MIXER_ATTENTION), 12, "and 12 full-attention layers, every fourth");
    CHECK(model_layer_mixer(&m, 3) == MIXER_ATTENTION && model_layer_mixer(&m, 2) == MIXER_LINEAR,
          "layer 3 attends, layer 2 is linear (full_attention_interval 4)");
    CHECK_EQ(model_linear_params_per_layer(&m), gdn_params, "Gated DeltaNet parameters per layer (hand sum)");
    /* gated attention: q and its gate 2048 x (2 x 16 x 256), k and v 2 x 2048 x 512, o 4096 x
     * 2048, q and k norms 2 x 256 */
    CHECK_EQ(model_attention_params_per_layer(&m), 2048.0 * 8192 + 2 * 2048.0 * 512 + 4096.0 * 2048 + 512,
             "gated attention parameters per layer");
    /* "80B parameters, 3B activated" (Qwen/Qwen3-Next-80B-A3B-Instruct model card) */
    check_total("Qwen3-Next-80B-A3B", p.total, 80e9);
    CHECK_EQ(p.linear_attention, 36 * gdn_params, "36 layers of linear attention");
    /* KV only in the 12 full-attention layers: 2 x 2 KV heads x 256 x 2 B = 2,048 B each */
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_BF16), 12 * 2048, "KV per token: 12 layers x 2,048 B");
    CHECK_EQ(model_layer_state_bytes(&m, 0), gdn_state, "a linear layer's state: 2,146,304 B");
    CHECK_EQ(model_state_bytes_per_sequence(&m), 36 * gdn_state, "fixed state per sequence: 36 x 2,146,304 B");
    CHECK_EQ(model_sequence_bytes(&m, PREC_BF16, 262144), 262144.0 * 24576 + 36 * gdn_state,
             "a 256K sequence: 6.44 GB of KV + 77 MB of state");
    CHECK_EQ(model_sequence_bytes(&m, PREC_BF16, 1), 24576 + 36 * gdn_state,
             "a 1-token sequence holds the state whole");
    /* TP 8 splits GQA's 2 KV heads 2 ways and the states' 32 value heads 8 ways */
    CHECK_EQ(model_sequence_bytes_layers(&m, PREC_BF16, 262144, 0, 48, 8), 262144.0 * 24576 / 2 + 36 * gdn_state / 8,
             "per device of TP 8: KV over 2 KV heads, states over 8");
    /* a decode step reads the attended KV and reads and writes back each state */
    CHECK_EQ(model_step_cache_bytes_layers(&m, PREC_BF16, 262144, 0, 48, 1, 1), 262144.0 * 24576 + 2 * 36 * gdn_state,
             "a decode step reads the KV, reads and writes the states");
    /* FLOPs per token: GQA 4 x 16 x 256 per cached token in 12 layers; Gated DeltaNet 7 x 32 x
     * 128 x 128 + the convolution 2 x 8192 x 4 in 36 */
    CHECK_EQ(model_attention_flops_per_token(&m, 262144),
             12 * 4.0 * 16 * 256 * 262144 + 36 * (7.0 * 32 * 128 * 128 + 2.0 * 8192 * 4),
             "Qwen3-Next attention FLOPs at 256K: full layers grow with context, linear layers do not");
    /* mlp_only_layers [0, 47]: those two layers take a dense FFN of intermediate_size 5,120 */
    struct model mixed = fixture_model("tests/data/hf-derived/qwen3-next-mlp-only.json");
    struct model_params q;
    model_params(&mixed, &q);
    CHECK(model_moe_layers(&mixed) == 46 && !model_layer_is_moe(&mixed, 0) && !model_layer_is_moe(&mixed, 47) &&
              model_layer_is_moe(&mixed, 1),
          "mlp_only_layers [0, 47]: 46 MoE layers");
    CHECK_EQ(q.dense_ffn, 2 * 3.0 * 2048 * 5120, "and two dense FFNs of 3 x 2048 x 5120");
}

static void qwen3_5(void)
{
    struct model m = fixture_model("tests/data/hf/qwen3.5-35b-a3b.json");
    struct model_params p;
    model_params(&m, &p);
    CHECK_EQ(model_mixer_layers(&m, MIXER_LINEAR), 30, "Qwen3.5-35B-A3B: 30 Gated DeltaNet layers of 40");
    /* "35B total, 3B activated" (Qwen/Qwen3.5-35B-A3B model card; the checkpoint's vision
     * encoder is not counted here) */
    check_total("Qwen3.5-35B-A3B", p.total, 35e9);
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_BF16), 10 * 2048, "KV per token: 10 full layers x 2,048 B");
    CHECK_EQ(model_state_bytes_per_sequence(&m), 30 * gdn_state, "fixed state: 30 x 2,146,304 B");
    CHECK_EQ(m.mtp_layers, 1, "one MTP module (mtp_num_hidden_layers)");
}

static void nemotron_h(void)
{
    struct model m = fixture_model("tests/data/hf/nemotron-3-nano-30b-a3b.json");
    struct model_params p;
    model_params(&m, &p);
    CHECK(model_mixer_layers(&m, MIXER_MAMBA) == 23 && model_mixer_layers(&m, MIXER_ATTENTION) == 6 &&
              model_moe_layers(&m) == 23,
          "Nemotron 3 Nano: 23 Mamba-2, 6 attention and 23 MoE blocks");
    /* Mamba-2, hidden 2688, 64 heads of 64, state 128, 8 groups, conv 4 with bias: in_proj
     * 2688 x (z 4096 + x 4096 + B, C 2 x 8 x 128 + dt 64), conv 6,144 channels x 4 + bias,
     * dt_bias, A_log and D 3 x 64, norm 4096, out_proj 4096 x 2688 */
    double mamba = 2688.0 * (4096 + 6144 + 64) + 6144.0 * 4 + 6144 + 3 * 64 + 4096 + 4096.0 * 2688;
    CHECK_EQ(model_mamba_params_per_layer(&m), mamba, "Mamba-2 parameters per layer (hand sum)");
    /* "31.6B total parameters ... approximately 3.2B active (3.6B including embeddings)"
     * (nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 model card) */
    check_total("Nemotron 3 Nano 30B-A3B", p.total, 31.6e9);
    CHECK_REL(p.active, 3.2e9, 0.02, "active within 2% of the published 3.2B");
    CHECK_EQ(model_kv_bytes_per_token(&m, PREC_BF16), 6 * 2 * 2 * 128 * 2.0, "KV per token: 6 layers x 1,024 B");
    /* state: 64 x 64 x 128 at FP32 + the convolution's last 3 inputs of 6,144 channels at BF16 */
    double state = 64.0 * 64 * 128 * 4 + 6144.0 * 3 * 2;
    CHECK_EQ(model_state_bytes_per_sequence(&m), 23 * state, "fixed state: 23 x 2,134,016 B");
    struct model listed = fixture_model("tests/data/hf-derived/nemotron-3-nano-layers-block-type.json");
    struct model_params q;
    model_params(&listed, &q);
    CHECK(listed.layers == 52 && q.total == p.total && q.active == p.active &&
              model_state_bytes_per_sequence(&listed) == model_state_bytes_per_sequence(&m),
          "the same blocks listed in layers_block_type read as the same model");
    CHECK_EQ(model_attention_flops_per_token(&m, 131072),
             6 * 4.0 * 32 * 128 * 131072 + 23 * (5.0 * 4096 * 128 + 2.0 * 6144 * 4),
             "attention FLOPs at 128K: 6 GQA layers and 23 Mamba-2 updates");
}

static void dense_hybrids(void)
{
    /* Qwen3.5-27B: a dense FFN, Gated DeltaNet of 16 key / 48 value heads of 128 in three layers
     * of four, gated attention of 24 / 4 heads of 256 in the fourth. A linear layer's state:
     * 48 x 128 x 128 at FP32 plus 3 inputs of 2 x 16 x 128 + 48 x 128 = 10,240 conv channels at
     * BF16 */
    struct model q = fixture_model("tests/data/hf/qwen3.5-27b.json");
    struct model_params p;
    model_params(&q, &p);
    CHECK(model_moe_layers(&q) == 0 && model_mixer_layers(&q, MIXER_LINEAR) == 48 && p.dense_ffn > 0,
          "Qwen3.5-27B: dense, 48 Gated DeltaNet layers of 64");
    /* "Number of Parameters: 27B" (Qwen/Qwen3.5-27B model card, Language Model; the checkpoint's
     * vision encoder and MTP module are not in it); the Hub's 27,781,427,952 holds both */
    check_total("Qwen3.5-27B", p.total, 27e9);
    CHECK_EQ(p.total + p.mtp + 460730096, 27781427952.0,
             "with its MTP module and the 460,730,096-parameter vision encoder: the Hub's safetensors total");
    CHECK_EQ(model_kv_bytes_per_token(&q, PREC_BF16), 16 * 2 * 4 * 256 * 2.0, "KV per token: 16 layers x 4,096 B");
    CHECK_EQ(model_state_bytes_per_sequence(&q), 48 * (48.0 * 128 * 128 * 4 + 10240.0 * 3 * 2),
             "fixed state: 48 x 3,207,168 B");

    /* NVIDIA Nemotron Nano 9B v2: Mamba-2 of 128 heads of 80 with a state of 128 and 8 groups,
     * 4 attention layers of 40 / 8 heads of 128, 25 MLP blocks of 15,680 (squared ReLU: up and
     * down). The fixture holds the shape fields only (tests/data/hf/SOURCES.md). */
    struct model n = fixture_model("tests/data/hf/nemotron-nano-9b-v2.json");
    model_params(&n, &p);
    CHECK(model_mixer_layers(&n, MIXER_MAMBA) == 27 && model_mixer_layers(&n, MIXER_ATTENTION) == 4 &&
              model_mixer_layers(&n, MIXER_NONE) == 25 && model_moe_layers(&n) == 0,
          "Nemotron Nano 9B v2: 27 Mamba-2, 4 attention and 25 MLP blocks");
    /* the Hub's safetensors total of nvidia/NVIDIA-Nemotron-Nano-9B-v2 (BF16, no MTP) */
    CHECK_EQ(p.total, 8888227328.0, "Nemotron Nano 9B v2: the Hub's 8,888,227,328 parameters exactly");
    CHECK_EQ(p.dense_ffn, 25 * 2 * 4480.0 * 15680, "25 ungated MLPs of 2 x 4480 x 15680");
    CHECK_EQ(model_state_bytes_per_sequence(&n), 27 * (128.0 * 80 * 128 * 4 + (128 * 80 + 2 * 8 * 128.0) * 3 * 2),
             "fixed state: 27 x 5,316,608 B");
}

/* The MoE layers of [first, last) counted by layer, for the closed form model_params uses. */
static int64_t moe_layers_by_layer(const struct model *m, int64_t first, int64_t last)
{
    int64_t n = 0;
    for (int64_t i = first; i < last; i++)
        n += model_layer_is_moe(m, i);
    return n;
}

static void moe_counts(void)
{
    /* DeepSeek-V3 with its 3 dense layers first, and as if interleaved every 2nd and 3rd layer
     * after 5 dense ones: every stage split's MoE count is the layer-by-layer count */
    struct model m = fixture_model("models/deepseek-v3.yaml");
    bool same = true;
    for (int shape = 0; shape < 3; shape++) {
        m.moe.interleave = shape == 0 ? 1 : shape + 1;
        m.moe.first_dense_layers = shape == 0 ? 3 : 5;
        for (int64_t first = 0; first <= 61; first++)
            for (int64_t last = first; last <= 61; last++) {
                struct layer_parts parts;
                same &= model_layers_parts(&m, first, last, &parts) == moe_layers_by_layer(&m, first, last);
            }
    }
    CHECK(same, "MoE layers of every range [first, last): the closed form agrees with the layers");
    m.moe.interleave = 2;
    m.moe.first_dense_layers = 5;
    struct layer_parts parts;
    /* layers 5-9: MoE where (i + 1) is even, 5, 7 and 9 */
    CHECK_EQ(model_layers_parts(&m, 4, 10, &parts), 3, "interleave 2 after 5 dense layers: 5, 7 and 9 of 4-9");
}

/* The layer walks (a layer standing for those a pattern's period apart, model.c) against the
 * layers one by one: for every shipped model, and each MoE one also as if its MoE layers came
 * every 2nd and every 3rd after 5 dense ones, every range [first, last) of its stack (every
 * stage split) sums to what its one-layer ranges sum to, for the layer kinds (exactly) and the
 * KV held, the KV read, the attention and indexer FLOPs at a context past every window (within
 * a part in 10^12: a product against a sum). */
static void layer_walk_case(const char *name, const struct model *m)
{
    const int64_t context = 100000;
    int64_t n = m->layers;
    double *held = calloc((size_t)n, sizeof *held), *read = calloc((size_t)n, sizeof *read);
    double *flops = calloc((size_t)n, sizeof *flops), *indexer = calloc((size_t)n, sizeof *indexer);
    struct layer_kinds *kinds = calloc((size_t)n, sizeof *kinds);
    for (int64_t l = 0; l < n; l++) {
        held[l] = model_sequence_bytes_layers(m, m->kv_precision, context, l, l + 1, 1);
        read[l] = model_step_cache_bytes_layers(m, m->kv_precision, context, l, l + 1, 1, 1);
        flops[l] = model_attention_flops_layers(m, context, l, l + 1, ATTENTION_PASS_DECODE);
        indexer[l] = model_indexer_flops_layers(m, context, l, l + 1);
        model_layer_kinds(m, l, l + 1, &kinds[l]);
    }
    bool kinds_same = true, sums_same = true;
    for (int64_t first = 0; first < n; first++) {
        struct layer_kinds by_layer = {0};
        double sums[4] = {0};
        for (int64_t last = first + 1; last <= n; last++) {
            const struct layer_kinds *k = &kinds[last - 1];
            for (int x = 0; x < MIXER_KINDS; x++)
                for (int f = 0; f <= LAYER_FFN_NONE; f++)
                    by_layer.count[x][f] += k->count[x][f];
            by_layer.indexers += k->indexers;
            sums[0] += held[last - 1];
            sums[1] += read[last - 1];
            sums[2] += flops[last - 1];
            sums[3] += indexer[last - 1];
            struct layer_kinds walked;
            model_layer_kinds(m, first, last, &walked);
            kinds_same &= memcmp(&walked, &by_layer, sizeof walked) == 0;
            double got[4] = {model_sequence_bytes_layers(m, m->kv_precision, context, first, last, 1),
                             model_step_cache_bytes_layers(m, m->kv_precision, context, first, last, 1, 1),
                             model_attention_flops_layers(m, context, first, last, ATTENTION_PASS_DECODE),
                             model_indexer_flops_layers(m, context, first, last)};
            for (int j = 0; j < 4; j++)
                sums_same &= fabs(got[j] - sums[j]) <= 1e-12 * fabs(sums[j]);
        }
    }
    CHECK(kinds_same, "%s: the layer kinds of every range [first, last) are its layers'", name);
    CHECK(sums_same, "%s: and its KV held and read, attention and indexer FLOPs at %lld tokens", name,
          (long long)context);
    free(held);
    free(read);
    free(flops);
    free(indexer);
    free(kinds);
}

static void layer_walks(void)
{
    const char *names[] = {"deepseek-v3", "deepseek-v3.2", "glm-4.5", "glm-5", "gpt-oss-120b", "kimi-k2",
                           "llama-2-70b", "llama-3.1-405b", "llama-3.1-70b", "llama-4-maverick", "mixtral-8x22b",
                           "nemotron-3-nano-30b-a3b", "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-next-80b-a3b",
                           "qwen3.5-35b-a3b"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[96], name[128];
        snprintf(path, sizeof path, "models/%s.yaml", names[i]);
        struct model m = fixture_model(path);
        layer_walk_case(names[i], &m);
        if (!model_is_moe(&m))
            continue;
        for (int64_t interleave = 2; interleave <= 3; interleave++) {
            m.moe.interleave = interleave;
            m.moe.first_dense_layers = 5;
            snprintf(name, sizeof name, "%s, a MoE layer every %lld after 5 dense", names[i], (long long)interleave);
            layer_walk_case(name, &m);
        }
    }
}

static void hf_configs(void)
{
    const char *names[] = {"deepseek-v3", "kimi-k2", "qwen3-235b-a22b", "qwen3-30b-a3b",
                           "llama-3.1-405b", "llama-3.1-70b", "llama-4-maverick",
                           "mixtral-8x22b", "gpt-oss-120b", "glm-4.5", "deepseek-v3.2", "glm-5",
                           "qwen3-next-80b-a3b", "qwen3.5-35b-a3b", "nemotron-3-nano-30b-a3b"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char spec_path[128], hf_path[128];
        snprintf(spec_path, sizeof spec_path, "models/%s.yaml", names[i]);
        snprintf(hf_path, sizeof hf_path, "tests/data/hf/%s.json", names[i]);
        struct model spec = fixture_model(spec_path), hf = fixture_model(hf_path);
        struct model_params a, b;
        model_params(&spec, &a);
        model_params(&hf, &b);
        CHECK(a.total == b.total && a.active == b.active &&
                  model_kv_bytes_per_token(&spec, PREC_BF16) == model_kv_bytes_per_token(&hf, PREC_BF16) &&
                  model_sequence_bytes(&spec, PREC_BF16, 200000) ==
                      model_sequence_bytes(&hf, PREC_BF16, 200000) &&
                  model_state_bytes_per_sequence(&spec) == model_state_bytes_per_sequence(&hf) &&
                  a.mtp == b.mtp && spec.weights_precision == hf.weights_precision &&
                  spec.expert_weights_precision == hf.expert_weights_precision && spec.fp4_mxfp4 == hf.fp4_mxfp4,
              "%s: config.json and model spec give the same parameters, KV, state, MTP and precisions", names[i]);
        /* gpt-oss's quantization_config.quant_method mxfp4, and its spec's fp4_format; NVFP4 elsewhere */
        CHECK(hf.fp4_mxfp4 == (strcmp(names[i], "gpt-oss-120b") == 0), "%s: FP4 format %s", names[i],
              hf.fp4_mxfp4 ? "mxfp4" : "nvfp4");
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    deepseek_v3();
    llama_405b();
    totals();
    windows();
    hf_configs();
    deepseek_v32();
    glm5();
    qwen3_next();
    qwen3_5();
    nemotron_h();
    dense_hybrids();
    moe_counts();
    layer_walks();
    return tap_done();
}
