/* model.h: a transformer's architecture and what follows from it: parameters, weight bytes,
 * what a sequence holds (KV cache per token, fixed recurrent state) and FLOPs per token.
 *
 * A layer is a token mixer followed by an FFN. The mixer is full attention (GQA or MLA, possibly
 * windowed, possibly sparse through a DSA indexer), linear attention (Gated DeltaNet) or a Mamba-2
 * state-space block; hybrids say which layer is which with a layer pattern, and a layer may have
 * no mixer or no FFN (Nemotron-H's blocks are one of the two). Attention layers cache keys and
 * values per token; linear-attention and Mamba layers hold a fixed state per sequence instead.
 *
 * A model comes from a rackplan model spec (YAML, schemas/model.schema.yaml) or a Hugging Face
 * config.json (told apart by content). Readers validate everything: a struct model that a reader
 * returned satisfies every range check, so the derivations below cannot overflow or divide by 0.
 * Parameter counts are doubles holding whole numbers (exact below 2^53, 9e15).
 */
#ifndef RACKPLAN_MODEL_H
#define RACKPLAN_MODEL_H

#include "diag.h"
#include "precision.h"

#include <stdbool.h>
#include <stdint.h>

#define MODEL_MAX_PATTERN 64
#define MODEL_MAX_LAYER_PATTERN 1024

enum attention_type { ATTENTION_GQA, ATTENTION_MLA };
enum window_kind { WINDOW_NONE, WINDOW_SLIDING, WINDOW_CHUNKED };
enum mixer { MIXER_ATTENTION, MIXER_LINEAR, MIXER_MAMBA, MIXER_NONE, MIXER_KINDS };
/* LAYER_FFN_RULE: dense or MoE by moe.first_dense_layers and moe.interleave */
enum layer_ffn { LAYER_FFN_RULE, LAYER_FFN_DENSE, LAYER_FFN_MOE, LAYER_FFN_NONE };

struct model {
    char name[128];
    char source[512];
    int64_t layers;
    int64_t hidden_size;
    int64_t vocab_size;
    bool tie_embeddings;
    int64_t max_context; /* tokens; 0 = unknown */

    enum precision weights_precision;
    enum precision expert_weights_precision;
    bool fp4_mxfp4; /* the model's FP4 checkpoint is MXFP4 (OCP microscaling: 32-element blocks,
                     * E8M0 scales; gpt-oss), not NVFP4 (16-element blocks, FP8 scales) */
    enum precision kv_precision;
    enum precision state_precision; /* linear-attention and SSM recurrent states */

    /* Repeats over the layers from layer 0; length 0: every layer is attention + RULE. */
    struct {
        int length;
        unsigned char mixer[MODEL_MAX_LAYER_PATTERN]; /* enum mixer */
        unsigned char ffn[MODEL_MAX_LAYER_PATTERN];   /* enum layer_ffn */
        /* 1: a sparse attention layer reuses the previous layer's top-k (IndexShare): it caches
         * no index keys and runs no indexer, though its indexer's weights are counted */
        unsigned char shares_indexer[MODEL_MAX_LAYER_PATTERN];
    } pattern;

    struct {
        enum attention_type type;
        int64_t heads;
        int64_t kv_heads; /* gqa */
        int64_t head_dim; /* gqa */
        bool bias, output_bias, qk_norm, sinks;
        int64_t q_lora_rank; /* mla; 0 = full-rank query */
        int64_t kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; /* mla */
        enum window_kind window_kind;
        int64_t window_tokens;
        int window_pattern[MODEL_MAX_PATTERN]; /* 1 = windowed layer; repeats over layers */
        int window_pattern_length;
        bool output_gate; /* a sigmoid gate on the output, from a doubled query projection (Qwen3-Next) */
        /* DeepSeek sparse attention: a lightning indexer scores every cached token with `heads`
         * small heads of `head_dim` over one cached index key per token, and the attention reads
         * only the `topk` best. heads 0 = dense attention. */
        struct {
            int64_t heads, head_dim, topk;
            enum precision key_precision; /* FP8 or FP4 keys carry an FP32 scale per 128 elements */
        } indexer;
    } attention;

    /* Gated DeltaNet (Qwen3-Next, Qwen3.5): per value head a key_head_dim x value_head_dim state. */
    struct {
        int64_t key_heads, value_heads, key_head_dim, value_head_dim, conv_kernel;
    } linear;

    /* Mamba-2 (Nemotron-H): heads x head_dim channels, each with a state_size state; B and C
     * shared within `groups`. */
    struct {
        int64_t heads, head_dim, state_size, groups, conv_kernel;
        bool conv_bias, bias;
    } mamba;

    /* Multi-token prediction modules beyond `layers` (DeepSeek's num_nextn_predict_layers): each is
     * a projection of [embedding; hidden] (2d x d), three norms and one attention + FFN layer.
     * Counted only when speculative decoding runs them. */
    int64_t mtp_layers;

    struct {
        int64_t intermediate_size; /* dense layers; 0 when every layer is MoE */
        bool gated;
        bool bias;
    } ffn;

    struct {
        int64_t experts; /* 0 = dense model */
        int64_t experts_per_token;
        int64_t shared_experts;
        int64_t intermediate_size;
        int64_t shared_intermediate_size;
        int64_t first_dense_layers;
        int64_t interleave;
        bool router_bias;
        int64_t groups;
        int64_t groups_per_token;
        bool shared_expert_gate; /* a d -> 1 sigmoid gate on the shared expert (Qwen3-Next) */
    } moe;
};

/* Parameters by role. `active` is what one token multiplies (see schemas/model.schema.yaml). */
struct model_params {
    double embedding;      /* input table (lookup, not a matmul) */
    double lm_head;        /* 0 when tied to the embedding */
    double attention;      /* all attention layers, with biases, q/k norms, sinks, gates */
    double indexer;        /* DSA indexers */
    double linear_attention; /* Gated DeltaNet layers */
    double mamba;          /* Mamba-2 layers */
    double dense_ffn;      /* dense layers' FFNs */
    double shared_experts; /* all MoE layers */
    double routed_experts; /* all MoE layers, all experts */
    double routers;
    double norms;
    double routed_expert;  /* one routed expert of one layer */
    int64_t moe_layers;
    double total;  /* without MTP modules, as DeepSeek's 671B */
    double active;
    double mtp;    /* all MTP modules; embedding and LM head shared with the model */
};

/* One layer's parameters by part. */
struct layer_parts {
    double attention, indexer, linear_attention, mamba;
    double dense_ffn, shared_experts, routers, routed_experts, norms;
    double projection; /* an MTP module's 2d x d */
};

enum model_status {
    MODEL_OK = 0,
    MODEL_INVALID = 3,  /* the content is wrong; diagnostics say where */
    MODEL_IO_ERROR = 5, /* the file could not be read; a diagnostic says why */
};

/* Reads a model spec or HF config.json. On MODEL_OK *out is filled; otherwise *out is untouched
 * and diagnostics say why. */
enum model_status model_load(const char *path, struct model *out, struct diags *d);

/* The same from a buffer; `path` names it in messages. */
enum model_status model_load_buffer(const char *path, const char *data, size_t size,
                                    struct model *out, struct diags *d);

bool model_is_moe(const struct model *m);
enum mixer model_layer_mixer(const struct model *m, int64_t layer);
bool model_layer_is_moe(const struct model *m, int64_t layer);
bool model_layer_is_dense(const struct model *m, int64_t layer); /* has a dense FFN */
int64_t model_moe_layers(const struct model *m);
int64_t model_mixer_layers(const struct model *m, enum mixer kind);
/* Whether tensor parallelism of degree `tp` splits every set of heads evenly: the attention
 * heads, a Gated DeltaNet's key and value heads, Mamba-2's heads and its groups (unless one
 * group, which every rank keeps), as vLLM and SGLang require. */
bool model_splits_by(const struct model *m, int64_t tp);

/* Mixers and FFNs in the layers [first, last): each ends in a tensor-parallel all-reduce
 * (two a layer, one a Nemotron-H block). */
int64_t model_sublayers(const struct model *m, int64_t first, int64_t last);
bool model_layer_is_windowed(const struct model *m, int64_t layer);
/* An attention layer that runs its own DSA indexer (and caches index keys). */
bool model_layer_has_indexer(const struct model *m, int64_t layer);
const char *mixer_name(enum mixer kind);

/* Attention parameters of one attention layer (without its indexer). */
double model_attention_params_per_layer(const struct model *m);
double model_indexer_params_per_layer(const struct model *m);
double model_linear_params_per_layer(const struct model *m);
double model_mamba_params_per_layer(const struct model *m);
void model_layer_parts(const struct model *m, int64_t layer, struct layer_parts *out);
/* Layers [first, last) by kind: count[mixer][ffn] (ffn LAYER_FFN_DENSE, LAYER_FFN_MOE or
 * LAYER_FFN_NONE), and how many attention layers have a DSA indexer of their own. Counted in
 * closed form where every layer is attention (no pattern), else layer by layer. */
struct layer_kinds {
    int64_t count[MIXER_KINDS][LAYER_FFN_NONE + 1];
    int64_t indexers;
};
void model_layer_kinds(const struct model *m, int64_t first, int64_t last, struct layer_kinds *out);

/* The parts of layers [first, last) summed; returns how many of them are MoE layers. */
int64_t model_layers_parts(const struct model *m, int64_t first, int64_t last, struct layer_parts *out);
/* One MTP module: its layer (attention with an indexer where the model has one, and the FFN of
 * the model's MoE layers), the 2d x d projection and its norms. */
void model_mtp_parts(const struct model *m, struct layer_parts *out);
double layer_parts_sum(const struct layer_parts *p);
void model_params(const struct model *m, struct model_params *out);

/* Weight bytes: routed experts at `expert_weights`, everything else at `weights`. */
double model_weight_bytes(const struct model *m, enum precision weights,
                          enum precision expert_weights);

/* KV-cache elements one token adds to one attention layer: GQA 2 * kv_heads * head_dim, MLA
 * kv_lora_rank + qk_rope_head_dim. */
double model_kv_elements_per_token_layer(const struct model *m);

/* How many ways a `tp`-way group divides a sequence's KV: GQA by KV heads (at most kv_heads
 * ways), MLA not at all (its latent is shared by every head). */
double model_kv_split(const struct model *m, int64_t tp);

/* Bytes of the index key a DSA indexer caches per token: head_dim at the key precision, plus
 * an FP32 scale per 128 elements when that is FP8 or FP4 (DeepSeek's kernels). */
double model_index_key_bytes(const struct model *m);

/* Bytes one token adds to one layer's caches: attention KV plus index keys; 0 for the layers
 * that hold a fixed state. Windows ignored. */
double model_layer_kv_bytes_per_token(const struct model *m, int64_t layer, enum precision kv);

/* Fixed bytes one sequence holds in one layer: Gated DeltaNet value_heads x key_head_dim x
 * value_head_dim, Mamba-2 heads x head_dim x state_size, at the state precision, plus the
 * short convolution's last conv_kernel - 1 inputs at BF16. 0 for attention layers. */
double model_layer_state_bytes(const struct model *m, int64_t layer);

/* KV bytes one token adds over all layers (index keys included), ignoring windows. */
double model_kv_bytes_per_token(const struct model *m, enum precision kv);

/* Fixed state bytes one sequence holds over all layers. */
double model_state_bytes_per_sequence(const struct model *m);

/* Bytes one sequence of `context` tokens holds: its KV (windowed layers keep at most their
 * window) and its fixed state. */
double model_sequence_bytes(const struct model *m, enum precision kv, int64_t context);

/* The same for the layers [first, last) only (a pipeline stage), on one device of a `tp`-way
 * tensor-parallel group: GQA KV split by KV heads (at most kv_heads ways), states by heads, an
 * MLA latent and index keys whole on every device. */
double model_sequence_bytes_layers(const struct model *m, enum precision kv, int64_t context,
                                   int64_t first, int64_t last, int64_t tp);

/* Bytes one step reads (and, for states, writes) for one sequence at `context` tokens in the
 * layers [first, last) on one device of a `tp`-way group, the sequence bringing `queries` new
 * tokens: attention the KV of the tokens it attends to (a window; in a DSA layer the top-k of
 * each query, at most queries x topk latents together, plus every index key), recurrent layers
 * their state read and written back. */
double model_step_cache_bytes_layers(const struct model *m, enum precision kv, int64_t context,
                                     int64_t first, int64_t last, int64_t tp, double queries);

/* The MTP modules, which hold HBM only when speculative decoding runs them: the KV their
 * attention layers cache for one sequence of `context` tokens (index keys included where the
 * model is sparse), on one device of a `tp`-way group; what one pass of one module reads of it
 * in a decode step; the FLOPs of that pass's attention for one token, and its indexer's share. */
double model_mtp_sequence_bytes(const struct model *m, enum precision kv, int64_t context, int64_t tp);
double model_mtp_step_cache_bytes(const struct model *m, enum precision kv, int64_t context, int64_t tp);
double model_mtp_attention_flops(const struct model *m, int64_t context);
double model_mtp_indexer_flops(const struct model *m, int64_t context);

/* FLOPs of matmuls per token: 2 * active parameters. */
double model_matmul_flops_per_token(const struct model *m);

/* Attention FLOPs for one new token attending to `context` cached tokens, all layers; windowed
 * layers attend to at most their window. GQA/MHA 4 * heads * head_dim per cached token per
 * layer; MLA (absorbed decode form) 2 * heads * (2 * kv_lora_rank + qk_rope_head_dim). DSA: the
 * indexer 2 * index heads * index head_dim per cached token, the attention over at most topk.
 * Gated DeltaNet 7 * value_heads * key_head_dim * value_head_dim per token (decay 1, S^T k 2,
 * rank-1 update 2, S^T q 2), Mamba-2 5 * heads * head_dim * state_size (decay 1, update 2,
 * read-out 2), each plus its convolution, 2 * channels * conv_kernel. */
double model_attention_flops_per_token(const struct model *m, int64_t context);

/* A pass over the model: a decode step's new tokens, or a prompt's being prefilled. */
enum attention_pass { ATTENTION_PASS_DECODE, ATTENTION_PASS_PREFILL };

/* How an attention layer is computed: heads (GQA/MHA, one form); MLA absorbed (decode: the
 * query against the cached latent) or expanded (prefill: keys and values up-projected per head,
 * 2 * heads * (qk_nope + qk_rope + v_head_dim) per key, 81,920 for DeepSeek-V3 against 278,528
 * absorbed; the up-projection is the kv_b matmul every token already pays). Engines prefill MLA
 * expanded (FlashMLA's and FlashInfer's prefill kernels, SGLang's and vLLM's MLA backends) and
 * decode it absorbed; a pass takes the cheaper form its kernels offer. A sparse (DSA) layer
 * stays absorbed in both. */
enum attention_form { ATTENTION_FORM_HEADS, ATTENTION_FORM_ABSORBED, ATTENTION_FORM_EXPANDED };

enum attention_form model_attention_form(const struct model *m, enum attention_pass pass);
const char *model_attention_form_name(enum attention_form form);

/* The FLOPs of model_attention_flops_per_token for the layers [first, last) only, in the form
 * `pass` computes them in (model_attention_form). */
double model_attention_flops_layers(const struct model *m, int64_t context, int64_t first, int64_t last,
                                    enum attention_pass pass);

/* The DSA indexers' share of model_attention_flops_layers: they run at the index keys'
 * precision (FP8 in DeepSeek's kernels) whatever the KV's. */
double model_indexer_flops_layers(const struct model *m, int64_t context, int64_t first, int64_t last);

#endif
