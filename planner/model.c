/* model.c: what follows from a model's architecture. See model.h and
 * schemas/model.schema.yaml for the conventions. */
#include "model.h"

bool model_is_moe(const struct model *m) { return m->moe.experts > 0; }

bool model_layer_is_moe(const struct model *m, int64_t layer)
{
    return m->moe.experts > 0 && layer >= m->moe.first_dense_layers &&
           (layer + 1) % m->moe.interleave == 0;
}

int64_t model_moe_layers(const struct model *m)
{
    int64_t n = 0;
    for (int64_t i = 0; i < m->layers; i++)
        n += model_layer_is_moe(m, i);
    return n;
}

bool model_layer_is_windowed(const struct model *m, int64_t layer)
{
    if (m->attention.window_kind == WINDOW_NONE || m->attention.window_pattern_length == 0)
        return false;
    return m->attention.window_pattern[layer % m->attention.window_pattern_length] != 0;
}

double model_attention_params_per_layer(const struct model *m)
{
    double d = (double)m->hidden_size;
    double h = (double)m->attention.heads;
    double p = 0;
    if (m->attention.type == ATTENTION_MLA) {
        double q_head = (double)(m->attention.qk_nope_head_dim + m->attention.qk_rope_head_dim);
        double rank = (double)m->attention.q_lora_rank;
        double kv_rank = (double)m->attention.kv_lora_rank;
        if (rank > 0)
            p += d * rank + rank + rank * h * q_head; /* down, its norm, up */
        else
            p += d * h * q_head;
        p += d * (kv_rank + (double)m->attention.qk_rope_head_dim) + kv_rank; /* down + norm */
        p += kv_rank * h * (double)(m->attention.qk_nope_head_dim + m->attention.v_head_dim);
        p += h * (double)m->attention.v_head_dim * d; /* output */
        return p;
    }
    double q = h * (double)m->attention.head_dim;
    double kv = (double)m->attention.kv_heads * (double)m->attention.head_dim;
    p = d * q + 2 * d * kv + q * d;
    if (m->attention.bias)
        p += q + 2 * kv;
    if (m->attention.output_bias)
        p += d;
    if (m->attention.qk_norm)
        p += 2 * (double)m->attention.head_dim;
    if (m->attention.sinks)
        p += h;
    return p;
}

static double ffn_params(const struct model *m, int64_t intermediate)
{
    double d = (double)m->hidden_size, f = (double)intermediate;
    double matrices = m->ffn.gated ? 3 : 2;
    double p = matrices * d * f;
    if (m->ffn.bias)
        p += (matrices - 1) * f + d;
    return p;
}

void model_params(const struct model *m, struct model_params *out)
{
    struct model_params p = {0};
    double d = (double)m->hidden_size;
    int64_t moe_layers = model_moe_layers(m);
    double dense_layers = (double)(m->layers - moe_layers);

    p.embedding = (double)m->vocab_size * d;
    p.lm_head = m->tie_embeddings ? 0 : p.embedding;
    p.attention = model_attention_params_per_layer(m) * (double)m->layers;
    p.dense_ffn = dense_layers * ffn_params(m, m->ffn.intermediate_size);
    p.norms = 2 * d * (double)m->layers + d;
    p.moe_layers = moe_layers;
    if (moe_layers > 0) {
        double e = (double)m->moe.experts;
        p.routed_expert = ffn_params(m, m->moe.intermediate_size);
        p.routed_experts = (double)moe_layers * e * p.routed_expert;
        p.shared_experts = (double)moe_layers * (double)m->moe.shared_experts *
                           ffn_params(m, m->moe.shared_intermediate_size);
        p.routers = (double)moe_layers * (d * e + (m->moe.router_bias ? e : 0));
    }
    p.total = p.embedding + p.lm_head + p.attention + p.dense_ffn + p.shared_experts +
              p.routed_experts + p.routers + p.norms;
    double head = m->tie_embeddings ? p.embedding : p.lm_head;
    p.active = p.attention + p.dense_ffn + p.shared_experts + p.routers + head +
               (double)moe_layers * (double)m->moe.experts_per_token * p.routed_expert;
    *out = p;
}

double model_weight_bytes(const struct model *m, enum precision weights,
                          enum precision expert_weights)
{
    struct model_params p;
    model_params(m, &p);
    return (p.total - p.routed_experts) * precision_bytes(weights) +
           p.routed_experts * precision_bytes(expert_weights);
}

double model_kv_elements_per_token_layer(const struct model *m)
{
    if (m->attention.type == ATTENTION_MLA)
        return (double)(m->attention.kv_lora_rank + m->attention.qk_rope_head_dim);
    return 2.0 * (double)m->attention.kv_heads * (double)m->attention.head_dim;
}

double model_kv_bytes_per_token(const struct model *m, enum precision kv)
{
    return model_kv_elements_per_token_layer(m) * precision_bytes(kv) * (double)m->layers;
}

static int64_t tokens_seen(const struct model *m, int64_t layer, int64_t context)
{
    if (model_layer_is_windowed(m, layer) && context > m->attention.window_tokens)
        return m->attention.window_tokens;
    return context;
}

double model_kv_bytes_per_sequence_layers(const struct model *m, enum precision kv,
                                          int64_t context, int64_t first, int64_t last)
{
    double per_token_layer = model_kv_elements_per_token_layer(m) * precision_bytes(kv);
    double tokens = 0;
    for (int64_t layer = first; layer < last; layer++)
        tokens += (double)tokens_seen(m, layer, context);
    return tokens * per_token_layer;
}

double model_kv_bytes_per_sequence(const struct model *m, enum precision kv, int64_t context)
{
    return model_kv_bytes_per_sequence_layers(m, kv, context, 0, m->layers);
}

double model_matmul_flops_per_token(const struct model *m)
{
    struct model_params p;
    model_params(m, &p);
    return 2.0 * p.active;
}

double model_attention_flops_per_token(const struct model *m, int64_t context)
{
    double per_cached_token;
    double h = (double)m->attention.heads;
    if (m->attention.type == ATTENTION_MLA)
        per_cached_token =
            2.0 * h * (2.0 * (double)m->attention.kv_lora_rank + (double)m->attention.qk_rope_head_dim);
    else
        per_cached_token = 4.0 * h * (double)m->attention.head_dim;
    double tokens = 0;
    for (int64_t layer = 0; layer < m->layers; layer++)
        tokens += (double)tokens_seen(m, layer, context);
    return per_cached_token * tokens;
}
