/* model.c: what follows from a model's architecture. See model.h and
 * schemas/model.schema.yaml for the conventions. */
#include "model.h"
#include "arith.h"

#include <math.h>

bool model_is_moe(const struct model *m) { return m->moe.experts > 0; }

const char *mixer_name(enum mixer kind)
{
    static const char *const names[MIXER_KINDS] = {"attention", "linear_attention", "mamba", "none"};
    return names[kind];
}

enum mixer model_layer_mixer(const struct model *m, int64_t layer)
{
    if (m->pattern.length == 0)
        return MIXER_ATTENTION;
    return (enum mixer)m->pattern.mixer[layer % m->pattern.length];
}

static enum layer_ffn layer_ffn(const struct model *m, int64_t layer)
{
    enum layer_ffn ffn = m->pattern.length ? (enum layer_ffn)m->pattern.ffn[layer % m->pattern.length]
                                           : LAYER_FFN_RULE;
    if (ffn != LAYER_FFN_RULE)
        return ffn;
    bool moe = m->moe.experts > 0 && layer >= m->moe.first_dense_layers &&
               (layer + 1) % m->moe.interleave == 0;
    return moe ? LAYER_FFN_MOE : LAYER_FFN_DENSE;
}

bool model_layer_is_moe(const struct model *m, int64_t layer)
{
    return layer_ffn(m, layer) == LAYER_FFN_MOE;
}

bool model_layer_is_dense(const struct model *m, int64_t layer)
{
    return layer_ffn(m, layer) == LAYER_FFN_DENSE;
}

int64_t model_moe_layers(const struct model *m)
{
    struct layer_kinds k;
    model_layer_kinds(m, 0, m->layers, &k);
    int64_t n = 0;
    for (int mixer = 0; mixer < MIXER_KINDS; mixer++)
        n += k.count[mixer][LAYER_FFN_MOE];
    return n;
}

int64_t model_mixer_layers(const struct model *m, enum mixer kind)
{
    struct layer_kinds k;
    model_layer_kinds(m, 0, m->layers, &k);
    int64_t n = 0;
    for (int ffn = 0; ffn <= LAYER_FFN_NONE; ffn++)
        n += k.count[kind][ffn];
    return n;
}

bool model_splits_by(const struct model *m, int64_t tp)
{
    if (m->attention.heads % tp != 0)
        return false;
    if (m->linear.value_heads > 0 && (m->linear.key_heads % tp != 0 || m->linear.value_heads % tp != 0))
        return false;
    if (m->mamba.heads > 0 && (m->mamba.heads % tp != 0 || (m->mamba.groups > 1 && m->mamba.groups % tp != 0)))
        return false;
    return true;
}

int64_t model_sublayers(const struct model *m, int64_t first, int64_t last)
{
    if (m->pattern.length == 0)
        return 2 * (last - first);
    int64_t n = 0;
    for (int64_t i = first; i < last; i++)
        n += (model_layer_mixer(m, i) != MIXER_NONE) + (layer_ffn(m, i) != LAYER_FFN_NONE);
    return n;
}

bool model_layer_is_windowed(const struct model *m, int64_t layer)
{
    if (m->attention.window_kind == WINDOW_NONE || m->attention.window_pattern_length == 0 ||
        model_layer_mixer(m, layer) != MIXER_ATTENTION)
        return false;
    return m->attention.window_pattern[layer % m->attention.window_pattern_length] != 0;
}

static bool sparse_attention(const struct model *m) { return m->attention.indexer.heads > 0; }

bool model_layer_has_indexer(const struct model *m, int64_t layer)
{
    if (!sparse_attention(m) || model_layer_mixer(m, layer) != MIXER_ATTENTION)
        return false;
    return m->pattern.length == 0 || !m->pattern.shares_indexer[layer % m->pattern.length];
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
    p = d * q * (m->attention.output_gate ? 2 : 1) + 2 * d * kv + q * d;
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

/* DeepSeek-V3.2's Indexer: wq_b from the query latent (the hidden state without one) to
 * heads x head_dim, wk from the hidden state to one key head, its LayerNorm (weight and bias)
 * and weights_proj, a weight per head. */
double model_indexer_params_per_layer(const struct model *m)
{
    double d = (double)m->hidden_size, h = (double)m->attention.indexer.heads;
    double dim = (double)m->attention.indexer.head_dim;
    double query_in = m->attention.q_lora_rank > 0 ? (double)m->attention.q_lora_rank : d;
    return query_in * h * dim + d * dim + 2 * dim + d * h;
}

static double linear_key_dim(const struct model *m)
{
    return (double)(m->linear.key_heads * m->linear.key_head_dim);
}

static double linear_value_dim(const struct model *m)
{
    return (double)(m->linear.value_heads * m->linear.value_head_dim);
}

static double linear_conv_channels(const struct model *m)
{
    return 2 * linear_key_dim(m) + linear_value_dim(m); /* q, k and v pass the convolution */
}

/* Qwen3-Next's Gated DeltaNet: in_proj_qkvz (q, k, v and the output gate z), in_proj_ba (the
 * update strength beta and decay a per value head), the depthwise convolution (no bias),
 * dt_bias and A_log per value head, the gated RMSNorm over a value head and out_proj. */
double model_linear_params_per_layer(const struct model *m)
{
    double d = (double)m->hidden_size, keys = linear_key_dim(m), values = linear_value_dim(m);
    double heads = (double)m->linear.value_heads;
    return d * (2 * keys + 2 * values) + d * 2 * heads + linear_conv_channels(m) * (double)m->linear.conv_kernel +
           2 * heads + (double)m->linear.value_head_dim + values * d;
}

static double mamba_inner(const struct model *m) { return (double)(m->mamba.heads * m->mamba.head_dim); }

static double mamba_conv_channels(const struct model *m)
{
    return mamba_inner(m) + 2 * (double)(m->mamba.groups * m->mamba.state_size); /* x, B and C */
}

/* Mamba-2: in_proj to the gate z, x, B, C and dt per head; the depthwise convolution over x, B
 * and C; dt_bias, A_log and D per head; the gated RMSNorm over the inner width; out_proj. */
double model_mamba_params_per_layer(const struct model *m)
{
    double d = (double)m->hidden_size, inner = mamba_inner(m), conv = mamba_conv_channels(m);
    double heads = (double)m->mamba.heads;
    double in_width = inner + conv + heads;
    double p = d * in_width + conv * (double)m->mamba.conv_kernel + 3 * heads + inner + inner * d;
    if (m->mamba.conv_bias)
        p += conv;
    if (m->mamba.bias)
        p += in_width + d;
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

static void moe_parts(const struct model *m, struct layer_parts *out)
{
    double d = (double)m->hidden_size, e = (double)m->moe.experts;
    out->shared_experts = (double)m->moe.shared_experts * ffn_params(m, m->moe.shared_intermediate_size) +
                          (m->moe.shared_expert_gate ? d : 0);
    out->routers = d * e + (m->moe.router_bias ? e : 0);
    out->routed_experts = e * ffn_params(m, m->moe.intermediate_size);
}

/* A layer's parameters follow from its mixer and its FFN. A sparse attention layer that shares
 * another's top-k keeps its indexer's weights: transformers' glm_moe_dsa builds an indexer in
 * every layer, and vLLM's index_topk_freq skips running the ones DeepSeek-V3.2 ships. */
static void parts_of(const struct model *m, enum mixer mixer, enum layer_ffn ffn, struct layer_parts *out)
{
    struct layer_parts p = {0};
    double d = (double)m->hidden_size;
    if (mixer == MIXER_ATTENTION) {
        p.attention = model_attention_params_per_layer(m);
        if (sparse_attention(m))
            p.indexer = model_indexer_params_per_layer(m);
    } else if (mixer == MIXER_LINEAR) {
        p.linear_attention = model_linear_params_per_layer(m);
    } else if (mixer == MIXER_MAMBA) {
        p.mamba = model_mamba_params_per_layer(m);
    }
    if (ffn == LAYER_FFN_MOE)
        moe_parts(m, &p);
    else if (ffn == LAYER_FFN_DENSE)
        p.dense_ffn = ffn_params(m, m->ffn.intermediate_size);
    p.norms = d * ((mixer != MIXER_NONE) + (ffn != LAYER_FFN_NONE));
    *out = p;
}

void model_layer_parts(const struct model *m, int64_t layer, struct layer_parts *out)
{
    parts_of(m, model_layer_mixer(m, layer), layer_ffn(m, layer), out);
}

static void add_parts(struct layer_parts *sum, const struct layer_parts *p, double times)
{
    sum->attention += times * p->attention;
    sum->indexer += times * p->indexer;
    sum->linear_attention += times * p->linear_attention;
    sum->mamba += times * p->mamba;
    sum->dense_ffn += times * p->dense_ffn;
    sum->shared_experts += times * p->shared_experts;
    sum->routers += times * p->routers;
    sum->routed_experts += times * p->routed_experts;
    sum->norms += times * p->norms;
    sum->projection += times * p->projection;
}

/* ---- the layers by position ---- */

/* A layer's mixer, FFN, window and indexer repeat with period P, the least common multiple of the
 * pattern's and the window pattern's lengths and the MoE interleave, within each side of the
 * dense prefix: so a layer stands for those P apart, and a walk over [first, last) visits at most
 * P layers a side instead of every one (the search prices each layout's stack at every batch). */
#define LAYER_PERIOD_MOST 256

struct layer_walk {
    int64_t layer, times;   /* the layer visited, and how many of [first, last) it stands for */
    int64_t period;         /* INT64_MAX: every layer for itself */
    int64_t side_start, side_end, end, next;
};

static void layer_walk_start(const struct model *m, int64_t first, int64_t last, struct layer_walk *w)
{
    int64_t lengths[3] = {m->pattern.length,
                          m->attention.window_kind != WINDOW_NONE ? m->attention.window_pattern_length : 0,
                          model_is_moe(m) ? m->moe.interleave : 0};
    int64_t period = 1;
    for (int i = 0; i < 3 && period <= LAYER_PERIOD_MOST; i++)
        if (lengths[i] > 1)
            period = period / arith_gcd(period, lengths[i]) * lengths[i];
    int64_t dense = model_is_moe(m) ? m->moe.first_dense_layers : 0;
    *w = (struct layer_walk){.period = period <= LAYER_PERIOD_MOST ? period : INT64_MAX, .side_start = first,
                             .side_end = dense > first && dense < last ? dense : last, .end = last, .next = first};
}

/* The next layer of the walk into w->layer and w->times; false when the walk is done. */
static bool layer_walk_next(struct layer_walk *w)
{
    for (;;) {
        int64_t offset = w->next - w->side_start;
        if (w->next < w->side_end && offset < w->period) {
            w->layer = w->next++;
            w->times = w->period == INT64_MAX ? 1 : (w->side_end - 1 - w->layer) / w->period + 1;
            return true;
        }
        if (w->side_end >= w->end)
            return false;
        w->side_start = w->next = w->side_end;
        w->side_end = w->end;
    }
}

/* The layers are counted by kind first: the search prices thousands of layouts, and a kind's
 * parameters are the same in every layer of it. */
void model_layer_kinds(const struct model *m, int64_t first, int64_t last, struct layer_kinds *out)
{
    *out = (struct layer_kinds){0};
    if (m->pattern.length == 0) {
        /* every layer attention, MoE by the rule: the multiples of interleave among layer + 1
         * past the dense prefix */
        int64_t moe = 0;
        if (model_is_moe(m)) {
            int64_t from = first > m->moe.first_dense_layers ? first : m->moe.first_dense_layers;
            int64_t i = m->moe.interleave;
            moe = from < last ? last / i - from / i : 0;
        }
        out->count[MIXER_ATTENTION][LAYER_FFN_MOE] = moe;
        out->count[MIXER_ATTENTION][LAYER_FFN_DENSE] = last - first - moe;
        out->indexers = sparse_attention(m) ? last - first : 0;
        return;
    }
    struct layer_walk w;
    layer_walk_start(m, first, last, &w);
    while (layer_walk_next(&w)) {
        out->count[model_layer_mixer(m, w.layer)][layer_ffn(m, w.layer)] += w.times;
        out->indexers += model_layer_has_indexer(m, w.layer) ? w.times : 0;
    }
}

int64_t model_layers_parts(const struct model *m, int64_t first, int64_t last, struct layer_parts *out)
{
    struct layer_kinds kinds;
    model_layer_kinds(m, first, last, &kinds);
    struct layer_parts sum = {0};
    int64_t moe_layers = 0;
    for (int mixer = 0; mixer < MIXER_KINDS; mixer++)
        for (int ffn = 0; ffn <= LAYER_FFN_NONE; ffn++) {
            int64_t n = kinds.count[mixer][ffn];
            if (n == 0)
                continue;
            struct layer_parts p;
            parts_of(m, (enum mixer)mixer, (enum layer_ffn)ffn, &p);
            add_parts(&sum, &p, (double)n);
            moe_layers += ffn == LAYER_FFN_MOE ? n : 0;
        }
    *out = sum;
    return moe_layers;
}

void model_mtp_parts(const struct model *m, struct layer_parts *out)
{
    double d = (double)m->hidden_size;
    parts_of(m, MIXER_ATTENTION, model_is_moe(m) ? LAYER_FFN_MOE : LAYER_FFN_DENSE, out);
    out->projection = 2 * d * d;
    out->norms += 3 * d; /* the embedding's, the hidden state's and the output's */
}

double layer_parts_sum(const struct layer_parts *p)
{
    return p->attention + p->indexer + p->linear_attention + p->mamba + p->dense_ffn + p->shared_experts +
           p->routers + p->routed_experts + p->norms + p->projection;
}

void model_params(const struct model *m, struct model_params *out)
{
    struct model_params p = {0};
    double d = (double)m->hidden_size;
    p.embedding = (double)m->vocab_size * d;
    p.lm_head = m->tie_embeddings ? 0 : p.embedding;
    struct layer_parts l;
    p.moe_layers = model_layers_parts(m, 0, m->layers, &l);
    p.attention = l.attention;
    p.indexer = l.indexer;
    p.linear_attention = l.linear_attention;
    p.mamba = l.mamba;
    p.dense_ffn = l.dense_ffn;
    p.shared_experts = l.shared_experts;
    p.routers = l.routers;
    p.routed_experts = l.routed_experts;
    p.norms = l.norms + d; /* and the final norm */
    if (p.moe_layers > 0)
        p.routed_expert = ffn_params(m, m->moe.intermediate_size);
    p.total = p.embedding + p.lm_head + p.attention + p.indexer + p.linear_attention + p.mamba + p.dense_ffn +
              p.shared_experts + p.routed_experts + p.routers + p.norms;
    double head = m->tie_embeddings ? p.embedding : p.lm_head;
    p.active = p.attention + p.indexer + p.linear_attention + p.mamba + p.dense_ffn + p.shared_experts +
               p.routers + head + (double)p.moe_layers * (double)m->moe.experts_per_token * p.routed_expert;
    if (m->mtp_layers > 0) {
        struct layer_parts mtp;
        model_mtp_parts(m, &mtp);
        p.mtp = (double)m->mtp_layers * layer_parts_sum(&mtp);
    }
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

double model_index_key_bytes(const struct model *m)
{
    double dim = (double)m->attention.indexer.head_dim;
    enum precision key = m->attention.indexer.key_precision;
    double scales = key == PREC_FP8 || key == PREC_FP4 ? 4 * ceil(dim / 128) : 0;
    return dim * precision_bytes(key) + scales;
}


static const double conv_state_bytes = 2; /* the convolution's inputs stay in BF16 */

double model_layer_state_bytes(const struct model *m, int64_t layer)
{
    double state = precision_bytes(m->state_precision);
    switch (model_layer_mixer(m, layer)) {
    case MIXER_LINEAR:
        return (double)(m->linear.value_heads * m->linear.key_head_dim * m->linear.value_head_dim) * state +
               linear_conv_channels(m) * (double)(m->linear.conv_kernel - 1) * conv_state_bytes;
    case MIXER_MAMBA:
        return mamba_inner(m) * (double)m->mamba.state_size * state +
               mamba_conv_channels(m) * (double)(m->mamba.conv_kernel - 1) * conv_state_bytes;
    default:
        return 0;
    }
}

double model_kv_bytes_per_token(const struct model *m, enum precision kv)
{
    double bytes = 0;
    struct layer_walk w;
    layer_walk_start(m, 0, m->layers, &w);
    while (layer_walk_next(&w))
        bytes += (double)w.times * model_layer_kv_bytes_per_token(m, w.layer, kv);
    return bytes;
}

double model_state_bytes_per_sequence(const struct model *m)
{
    double bytes = 0;
    struct layer_walk w;
    layer_walk_start(m, 0, m->layers, &w);
    while (layer_walk_next(&w))
        bytes += (double)w.times * model_layer_state_bytes(m, w.layer);
    return bytes;
}

/* Tokens a layer keeps in its cache at `context`. */
static int64_t tokens_held(const struct model *m, int64_t layer, int64_t context)
{
    if (model_layer_is_windowed(m, layer) && context > m->attention.window_tokens)
        return m->attention.window_tokens;
    return context;
}

/* Tokens whose KV an attention layer holding `held` reads for `queries` new tokens: a DSA layer
 * only each query's top-k, at most queries x topk together. */
static double tokens_attended(const struct model *m, int64_t held, double queries)
{
    if (sparse_attention(m))
        return fmin((double)held, queries * (double)m->attention.indexer.topk);
    return (double)held;
}

double model_kv_split(const struct model *m, int64_t tp)
{
    if (m->attention.type == ATTENTION_MLA)
        return 1;
    return (double)(tp < m->attention.kv_heads ? tp : m->attention.kv_heads);
}

static double state_split(const struct model *m, int64_t layer, int64_t tp)
{
    int64_t heads = model_layer_mixer(m, layer) == MIXER_LINEAR ? m->linear.value_heads : m->mamba.heads;
    return (double)(tp < heads ? tp : heads);
}

/* Every layer alike: unwindowed attention, each with its own indexer when the model is sparse.
 * The layer loops below then reduce to a product. */
static bool uniform_attention(const struct model *m)
{
    return m->pattern.length == 0 &&
           (m->attention.window_kind == WINDOW_NONE || m->attention.window_pattern_length == 0);
}

/* What one attention layer costs per token, on one device of a `tp`-way group: worked out once
 * per call, as the layer loops below run for every layout the search prices. */
struct attention_costs {
    double kv_bytes;          /* per held token */
    double index_key_bytes;   /* per held token, in a layer with its own indexer */
    double attended_flops;    /* per attended token */
    double indexed_flops;     /* per held token, in a layer with its own indexer */
};

/* MLA's two forms, FLOPs per head per attended key: absorbed, the query against the 576-wide
 * latent (kv_lora_rank + rope) and the output over the latent (kv_lora_rank); expanded, the
 * keys and values up-projected per head: QK over qk_nope + qk_rope, PV over v_head_dim. */
static double mla_absorbed_flops(const struct model *m)
{
    return 2.0 * (double)(2 * m->attention.kv_lora_rank + m->attention.qk_rope_head_dim);
}

static double mla_expanded_flops(const struct model *m)
{
    return 2.0 * (double)(m->attention.qk_nope_head_dim + m->attention.qk_rope_head_dim + m->attention.v_head_dim);
}

enum attention_form model_attention_form(const struct model *m, enum attention_pass pass)
{
    if (m->attention.type != ATTENTION_MLA)
        return ATTENTION_FORM_HEADS;
    /* DSA selects keys per query, so a key is shared only in the latent (MQA) form: DeepSeek-V3.2
     * runs it absorbed in prefill too (its report, "DSA under MLA's MQA mode") */
    if (pass == ATTENTION_PASS_PREFILL && !sparse_attention(m) && mla_expanded_flops(m) < mla_absorbed_flops(m))
        return ATTENTION_FORM_EXPANDED;
    return ATTENTION_FORM_ABSORBED;
}

const char *model_attention_form_name(enum attention_form form)
{
    static const char *const names[] = {"heads", "absorbed", "expanded"};
    return names[form];
}

/* FLOPs an attention layer spends on one attended key in `pass`, in the form it takes there. */
static double attended_flops(const struct model *m, enum attention_pass pass)
{
    double h = (double)m->attention.heads;
    switch (model_attention_form(m, pass)) {
    case ATTENTION_FORM_ABSORBED:
        return h * mla_absorbed_flops(m);
    case ATTENTION_FORM_EXPANDED:
        return h * mla_expanded_flops(m);
    default:
        return h * 4.0 * (double)m->attention.head_dim;
    }
}

/* The decode pass's costs: a prefill pass differs only in attended_flops (model_attention_form). */
static struct attention_costs attention_costs(const struct model *m, enum precision kv, int64_t tp)
{
    return (struct attention_costs){
        .kv_bytes = model_kv_elements_per_token_layer(m) * precision_bytes(kv) / model_kv_split(m, tp),
        .index_key_bytes = sparse_attention(m) ? model_index_key_bytes(m) : 0,
        .attended_flops = attended_flops(m, ATTENTION_PASS_DECODE),
        .indexed_flops = 2.0 * (double)(m->attention.indexer.heads * m->attention.indexer.head_dim),
    };
}

/* An attention layer holding `held` tokens: what it caches, what a decode step reads of it, and
 * the FLOPs of one new token (the indexer's alone in indexer_flops). */
static double attention_held_bytes(const struct attention_costs *c, int64_t held, bool indexer)
{
    return (double)held * (c->kv_bytes + (indexer ? c->index_key_bytes : 0));
}

double model_layer_kv_bytes_per_token(const struct model *m, int64_t layer, enum precision kv)
{
    if (model_layer_mixer(m, layer) != MIXER_ATTENTION)
        return 0;
    struct attention_costs c = attention_costs(m, kv, 1);
    return attention_held_bytes(&c, 1, model_layer_has_indexer(m, layer));
}

static double attention_read_bytes(const struct model *m, const struct attention_costs *c, int64_t held,
                                   bool indexer, double queries)
{
    return tokens_attended(m, held, queries) * c->kv_bytes + (indexer ? (double)held * c->index_key_bytes : 0);
}

static double indexer_flops(const struct attention_costs *c, int64_t held)
{
    return c->indexed_flops * (double)held;
}

static double attention_flops(const struct model *m, const struct attention_costs *c, int64_t held, bool indexer)
{
    return c->attended_flops * tokens_attended(m, held, 1) + (indexer ? indexer_flops(c, held) : 0);
}

double model_sequence_bytes_layers(const struct model *m, enum precision kv, int64_t context,
                                   int64_t first, int64_t last, int64_t tp)
{
    struct attention_costs c = attention_costs(m, kv, tp);
    if (uniform_attention(m))
        return (double)(last - first) * attention_held_bytes(&c, context, sparse_attention(m));
    double bytes = 0;
    struct layer_walk w;
    layer_walk_start(m, first, last, &w);
    while (layer_walk_next(&w)) {
        int64_t layer = w.layer;
        enum mixer mixer = model_layer_mixer(m, layer);
        if (mixer == MIXER_ATTENTION)
            bytes += (double)w.times *
                     attention_held_bytes(&c, tokens_held(m, layer, context), model_layer_has_indexer(m, layer));
        else if (mixer != MIXER_NONE)
            bytes += (double)w.times * model_layer_state_bytes(m, layer) / state_split(m, layer, tp);
    }
    return bytes;
}

double model_sequence_bytes(const struct model *m, enum precision kv, int64_t context)
{
    return model_sequence_bytes_layers(m, kv, context, 0, m->layers, 1);
}

double model_step_cache_bytes_layers(const struct model *m, enum precision kv, int64_t context,
                                     int64_t first, int64_t last, int64_t tp, double queries)
{
    struct attention_costs c = attention_costs(m, kv, tp);
    if (uniform_attention(m))
        return (double)(last - first) * attention_read_bytes(m, &c, context, sparse_attention(m), queries);
    double bytes = 0;
    struct layer_walk w;
    layer_walk_start(m, first, last, &w);
    while (layer_walk_next(&w)) {
        int64_t layer = w.layer;
        enum mixer mixer = model_layer_mixer(m, layer);
        if (mixer == MIXER_ATTENTION)
            bytes += (double)w.times * attention_read_bytes(m, &c, tokens_held(m, layer, context),
                                                            model_layer_has_indexer(m, layer), queries);
        else if (mixer != MIXER_NONE)
            bytes += (double)w.times * 2 * model_layer_state_bytes(m, layer) / state_split(m, layer, tp);
    }
    return bytes;
}

double model_mtp_sequence_bytes(const struct model *m, enum precision kv, int64_t context, int64_t tp)
{
    struct attention_costs c = attention_costs(m, kv, tp);
    return (double)m->mtp_layers * attention_held_bytes(&c, context, sparse_attention(m));
}

double model_mtp_step_cache_bytes(const struct model *m, enum precision kv, int64_t context, int64_t tp)
{
    struct attention_costs c = attention_costs(m, kv, tp);
    return attention_read_bytes(m, &c, context, sparse_attention(m), 1);
}

double model_mtp_attention_flops(const struct model *m, int64_t context)
{
    struct attention_costs c = attention_costs(m, m->kv_precision, 1);
    return attention_flops(m, &c, context, sparse_attention(m));
}

double model_mtp_indexer_flops(const struct model *m, int64_t context)
{
    struct attention_costs c = attention_costs(m, m->kv_precision, 1);
    return sparse_attention(m) ? indexer_flops(&c, context) : 0;
}

double model_matmul_flops_per_token(const struct model *m)
{
    struct model_params p;
    model_params(m, &p);
    return 2.0 * p.active;
}

double model_attention_flops_layers(const struct model *m, int64_t context, int64_t first, int64_t last,
                                    enum attention_pass pass)
{
    struct attention_costs c = attention_costs(m, m->kv_precision, 1);
    c.attended_flops = attended_flops(m, pass);
    double linear = 7.0 * (double)(m->linear.value_heads * m->linear.key_head_dim * m->linear.value_head_dim) +
                    2.0 * linear_conv_channels(m) * (double)m->linear.conv_kernel;
    double mamba = 5.0 * mamba_inner(m) * (double)m->mamba.state_size +
                   2.0 * mamba_conv_channels(m) * (double)m->mamba.conv_kernel;
    if (uniform_attention(m))
        return (double)(last - first) * attention_flops(m, &c, context, sparse_attention(m));
    double flops = 0;
    struct layer_walk w;
    layer_walk_start(m, first, last, &w);
    while (layer_walk_next(&w)) {
        int64_t layer = w.layer;
        switch (model_layer_mixer(m, layer)) {
        case MIXER_ATTENTION:
            flops += (double)w.times *
                     attention_flops(m, &c, tokens_held(m, layer, context), model_layer_has_indexer(m, layer));
            break;
        case MIXER_LINEAR:
            flops += (double)w.times * linear;
            break;
        case MIXER_MAMBA:
            flops += (double)w.times * mamba;
            break;
        default:
            break;
        }
    }
    return flops;
}

double model_indexer_flops_layers(const struct model *m, int64_t context, int64_t first, int64_t last)
{
    struct attention_costs c = attention_costs(m, m->kv_precision, 1);
    if (!sparse_attention(m))
        return 0;
    if (uniform_attention(m))
        return (double)(last - first) * indexer_flops(&c, context);
    double flops = 0;
    struct layer_walk w;
    layer_walk_start(m, first, last, &w);
    while (layer_walk_next(&w))
        if (model_layer_has_indexer(m, w.layer))
            flops += (double)w.times * indexer_flops(&c, tokens_held(m, w.layer, context));
    return flops;
}

double model_attention_flops_per_token(const struct model *m, int64_t context)
{
    return model_attention_flops_layers(m, context, 0, m->layers, ATTENTION_PASS_DECODE);
}
