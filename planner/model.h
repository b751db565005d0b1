/* model.h: a transformer's architecture and what follows from it: parameters, weight bytes,
 * KV-cache bytes and FLOPs per token.
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

enum attention_type { ATTENTION_GQA, ATTENTION_MLA };
enum window_kind { WINDOW_NONE, WINDOW_SLIDING, WINDOW_CHUNKED };

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
    enum precision kv_precision;

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
    } attention;

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
    } moe;
};

/* Parameters by role. `active` is what one token multiplies (see schemas/model.schema.yaml). */
struct model_params {
    double embedding;      /* input table (lookup, not a matmul) */
    double lm_head;        /* 0 when tied to the embedding */
    double attention;      /* all layers, with biases, q/k norms, sinks */
    double dense_ffn;      /* dense layers' FFNs */
    double shared_experts; /* all MoE layers */
    double routed_experts; /* all MoE layers, all experts */
    double routers;
    double norms;
    double routed_expert;  /* one routed expert of one layer */
    int64_t moe_layers;
    double total;
    double active;
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
bool model_layer_is_moe(const struct model *m, int64_t layer);
int64_t model_moe_layers(const struct model *m);
bool model_layer_is_windowed(const struct model *m, int64_t layer);

/* Attention parameters of one layer. */
double model_attention_params_per_layer(const struct model *m);
void model_params(const struct model *m, struct model_params *out);

/* Weight bytes: routed experts at `expert_weights`, everything else at `weights`. */
double model_weight_bytes(const struct model *m, enum precision weights,
                          enum precision expert_weights);

/* KV-cache elements one token adds to one layer: GQA 2 * kv_heads * head_dim, MLA
 * kv_lora_rank + qk_rope_head_dim. */
double model_kv_elements_per_token_layer(const struct model *m);

/* KV bytes one token adds over all layers, ignoring windows. */
double model_kv_bytes_per_token(const struct model *m, enum precision kv);

/* KV bytes one sequence of `context` tokens holds: windowed layers keep at most their window. */
double model_kv_bytes_per_sequence(const struct model *m, enum precision kv, int64_t context);

/* The same for the layers [first, last) only (a pipeline stage). */
double model_kv_bytes_per_sequence_layers(const struct model *m, enum precision kv,
                                          int64_t context, int64_t first, int64_t last);

/* FLOPs of matmuls per token: 2 * active parameters. */
double model_matmul_flops_per_token(const struct model *m);

/* Attention FLOPs for one new token attending to `context` cached tokens, all layers; windowed
 * layers attend to at most their window. GQA/MHA 4 * heads * head_dim per cached token per
 * layer; MLA (absorbed decode form) 2 * heads * (2 * kv_lora_rank + qk_rope_head_dim). */
double model_attention_flops_per_token(const struct model *m, int64_t context);

#endif
