/* cmd_model.c: `rackplan model FILE`: a model's architecture and derived sizes. */
#include "cli.h"
#include "commands.h"
#include "model.h"

#include "../reports/json.h"

#include <inttypes.h>

static const char *attention_name(const struct model *m)
{
    if (m->attention.type == ATTENTION_MLA)
        return "mla";
    if (m->attention.kv_heads == m->attention.heads)
        return "mha";
    return m->attention.kv_heads == 1 ? "mqa" : "gqa";
}

static int64_t windowed_layers(const struct model *m)
{
    int64_t n = 0;
    for (int64_t i = 0; i < m->layers; i++)
        n += model_layer_is_windowed(m, i);
    return n;
}

/* Layers that hold the same per token and per sequence, printed in this order. */
enum layer_kind {
    KIND_ATTENTION,
    KIND_WINDOWED,
    KIND_SPARSE,
    KIND_SPARSE_SHARED,
    KIND_LINEAR,
    KIND_MAMBA,
    KIND_FFN_ONLY,
    KIND_COUNT
};

struct kind_summary {
    int64_t layers;
    double kv_bytes_per_token;  /* one layer, uncapped */
    double index_key_bytes;     /* one layer's share of that */
    double state_bytes;         /* one layer */
    double sequence_bytes;      /* all its layers, one sequence at the context */
};

static enum layer_kind layer_kind(const struct model *m, int64_t layer)
{
    switch (model_layer_mixer(m, layer)) {
    case MIXER_LINEAR:
        return KIND_LINEAR;
    case MIXER_MAMBA:
        return KIND_MAMBA;
    case MIXER_NONE:
        return KIND_FFN_ONLY;
    default: /* a kind's bytes per token are alike in all its layers (a window caps the tokens) */
        if (m->attention.indexer.heads > 0)
            return model_layer_has_indexer(m, layer) ? KIND_SPARSE : KIND_SPARSE_SHARED;
        return model_layer_is_windowed(m, layer) ? KIND_WINDOWED : KIND_ATTENTION;
    }
}

static const char *const kind_names[KIND_COUNT] = {
    "attention", "windowed attention", "sparse attention", "sparse attention (shared indexer)",
    "linear attention", "Mamba-2", "FFN-only"};

static const char *const kind_keys[KIND_COUNT] = {"attention",        "windowed_attention", "sparse_attention",
                                                  "sparse_attention_shared_indexer", "linear_attention",
                                                  "mamba",            "ffn_only"};

static void summarise_kinds(const struct model *m, enum precision kv, int64_t context,
                            struct kind_summary out[KIND_COUNT])
{
    for (int k = 0; k < KIND_COUNT; k++)
        out[k] = (struct kind_summary){0};
    for (int64_t layer = 0; layer < m->layers; layer++) {
        struct kind_summary *s = &out[layer_kind(m, layer)];
        s->layers++;
        s->kv_bytes_per_token = model_layer_kv_bytes_per_token(m, layer, kv);
        s->index_key_bytes = model_layer_has_indexer(m, layer) ? model_index_key_bytes(m) : 0;
        s->state_bytes = model_layer_state_bytes(m, layer);
        s->sequence_bytes += model_sequence_bytes_layers(m, kv, context, layer, layer + 1, 1);
    }
}

static void write_tree(FILE *out, enum json_syntax syntax, const struct model *m, const struct options *o)
{
    struct model_params p;
    model_params(m, &p);
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    json_key(&j, "name");
    json_string(&j, m->name);
    json_key(&j, "source");
    json_string(&j, m->source);
    json_key(&j, "layers");
    json_int(&j, m->layers);
    json_key(&j, "moe_layers");
    json_int(&j, model_moe_layers(m));
    json_key(&j, "hidden_size");
    json_int(&j, m->hidden_size);
    json_key(&j, "vocab_size");
    json_int(&j, m->vocab_size);
    json_key(&j, "attention");
    json_string(&j, attention_name(m));
    json_key(&j, "heads");
    json_int(&j, m->attention.heads);
    json_key(&j, "windowed_layers");
    json_int(&j, windowed_layers(m));
    json_key(&j, "window_tokens");
    if (windowed_layers(m))
        json_int(&j, m->attention.window_tokens);
    else
        json_null(&j);
    json_key(&j, "experts");
    json_int(&j, m->moe.experts);
    json_key(&j, "experts_per_token");
    json_int(&j, m->moe.experts_per_token);
    json_key(&j, "shared_experts");
    json_int(&j, m->moe.shared_experts);
    json_key(&j, "total_params");
    json_number(&j, p.total);
    json_key(&j, "active_params");
    json_number(&j, p.active);
    json_key(&j, "embedding_params");
    json_number(&j, p.embedding);
    json_key(&j, "mtp_layers");
    json_int(&j, m->mtp_layers);
    json_key(&j, "total_params_with_mtp");
    json_number(&j, p.total + p.mtp);
    json_key(&j, "params");
    json_begin_object(&j);
    const struct {
        const char *key;
        double value;
    } parts[] = {{"embedding", p.embedding},         {"lm_head", p.lm_head},
                 {"attention", p.attention},         {"indexer", p.indexer},
                 {"linear_attention", p.linear_attention}, {"mamba", p.mamba},
                 {"dense_ffn", p.dense_ffn},
                 {"shared_experts", p.shared_experts}, {"routed_experts", p.routed_experts},
                 {"routers", p.routers},             {"norms", p.norms},
                 {"mtp", p.mtp}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        json_key(&j, parts[i].key);
        json_number(&j, parts[i].value);
    }
    json_end_object(&j);
    json_key(&j, "precision");
    json_begin_object(&j);
    json_key(&j, "weights");
    json_string(&j, precision_name(o->weights));
    json_key(&j, "expert_weights");
    json_string(&j, precision_name(o->expert_weights));
    json_key(&j, "kv");
    json_string(&j, precision_name(o->kv));
    json_key(&j, "state");
    json_string(&j, precision_name(m->state_precision));
    json_end_object(&j);
    json_key(&j, "weight_bytes");
    json_number(&j, model_weight_bytes(m, o->weights, o->expert_weights));
    json_key(&j, "weight_bytes_by_precision");
    json_begin_object(&j);
    for (int q = 0; q < PREC_COUNT; q++) {
        json_key(&j, precision_name((enum precision)q));
        json_number(&j, model_weight_bytes(m, (enum precision)q, (enum precision)q));
    }
    json_end_object(&j);
    json_key(&j, "kv_bytes_per_token");
    json_number(&j, model_kv_bytes_per_token(m, o->kv));
    json_key(&j, "state_bytes_per_sequence");
    json_number(&j, model_state_bytes_per_sequence(m));
    json_key(&j, "context");
    json_int(&j, o->context);
    json_key(&j, "kv_bytes_per_sequence");
    json_number(&j, model_sequence_bytes(m, o->kv, o->context) - model_state_bytes_per_sequence(m));
    json_key(&j, "bytes_per_sequence");
    json_number(&j, model_sequence_bytes(m, o->kv, o->context));
    struct kind_summary kinds[KIND_COUNT];
    summarise_kinds(m, o->kv, o->context, kinds);
    json_key(&j, "layer_kinds");
    json_begin_array(&j);
    for (int k = 0; k < KIND_COUNT; k++) {
        if (kinds[k].layers == 0)
            continue;
        json_begin_object(&j);
        json_key(&j, "kind");
        json_string(&j, kind_keys[k]);
        json_key(&j, "layers");
        json_int(&j, kinds[k].layers);
        json_key(&j, "kv_bytes_per_token_layer");
        json_number(&j, kinds[k].kv_bytes_per_token);
        json_key(&j, "index_key_bytes_per_token_layer");
        json_number(&j, kinds[k].index_key_bytes);
        json_key(&j, "state_bytes_per_sequence_layer");
        json_number(&j, kinds[k].state_bytes);
        json_key(&j, "bytes_per_sequence");
        json_number(&j, kinds[k].sequence_bytes);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_key(&j, "matmul_flops_per_token");
    json_number(&j, model_matmul_flops_per_token(m));
    json_key(&j, "attention_flops_per_token");
    json_number(&j, model_attention_flops_per_token(m, o->context));
    json_key(&j, "flops_per_token");
    json_number(&j, model_matmul_flops_per_token(m) + model_attention_flops_per_token(m, o->context));
    json_key(&j, "max_context");
    json_positive_or_null(&j, (double)m->max_context);
    json_end_object(&j);
    json_finish(&j);
}

static void write_text(FILE *out, const struct model *m, const struct options *o)
{
    struct model_params p;
    model_params(m, &p);
    char a[64], b[64], c[64];
    fprintf(out, "%s\n  source: %s\n", m->name, m->source);
    fprintf(out, "  %" PRId64 " layers (%" PRId64 " MoE), hidden %" PRId64 ", vocab %" PRId64 "\n",
            m->layers, model_moe_layers(m), m->hidden_size, m->vocab_size);
    if (m->attention.type == ATTENTION_MLA)
        fprintf(out, "  attention: MLA, %" PRId64 " heads, KV latent %" PRId64 " + rope %" PRId64 "\n",
                m->attention.heads, m->attention.kv_lora_rank, m->attention.qk_rope_head_dim);
    else
        fprintf(out, "  attention: %s, %" PRId64 " query / %" PRId64 " KV heads of %" PRId64 "\n",
                attention_name(m), m->attention.heads, m->attention.kv_heads,
                m->attention.head_dim);
    if (windowed_layers(m))
    {
        format_count((double)m->attention.window_tokens, a, sizeof a);
        fprintf(out, "  %" PRId64 " layers attend to a %s window of %s tokens\n",
                windowed_layers(m),
                m->attention.window_kind == WINDOW_CHUNKED ? "chunked" : "sliding", a);
    }
    if (m->attention.indexer.heads > 0) {
        format_count((double)m->attention.indexer.topk, a, sizeof a);
        fprintf(out, "  sparse attention (DSA): an indexer of %" PRId64 " heads of %" PRId64
                     " scores every cached token; attention reads the top %s\n",
                m->attention.indexer.heads, m->attention.indexer.head_dim, a);
    }
    if (m->linear.value_heads > 0)
        fprintf(out, "  linear attention (Gated DeltaNet): %" PRId64 " key / %" PRId64 " value heads, "
                     "state %" PRId64 " x %" PRId64 " per value head, conv %" PRId64 "\n",
                m->linear.key_heads, m->linear.value_heads, m->linear.key_head_dim, m->linear.value_head_dim,
                m->linear.conv_kernel);
    if (m->mamba.heads > 0)
        fprintf(out, "  Mamba-2: %" PRId64 " heads of %" PRId64 ", state %" PRId64 ", %" PRId64
                     " groups, conv %" PRId64 "\n",
                m->mamba.heads, m->mamba.head_dim, m->mamba.state_size, m->mamba.groups, m->mamba.conv_kernel);
    if (model_is_moe(m)) {
        fprintf(out, "  experts: %" PRId64 " routed (%" PRId64 " per token)", m->moe.experts,
                m->moe.experts_per_token);
        if (m->moe.shared_experts)
            fprintf(out, " + %" PRId64 " shared", m->moe.shared_experts);
        fprintf(out, " per MoE layer\n");
    }
    format_count(p.total, a, sizeof a);
    format_count(p.active, b, sizeof b);
    format_count(p.embedding, c, sizeof c);
    fprintf(out, "\nparameters\n  total        %s\n  active       %s per token (matmul weights)\n"
                 "  embedding    %s (a lookup, not counted as active)\n",
            a, b, c);
    const struct {
        const char *name;
        double value;
    } mixers[] = {{"DSA indexers", p.indexer},
                  {"linear attention (Gated DeltaNet)", p.linear_attention},
                  {"Mamba-2 layers", p.mamba}};
    for (size_t i = 0; i < sizeof mixers / sizeof mixers[0]; i++) {
        if (mixers[i].value <= 0)
            continue;
        format_count(mixers[i].value, a, sizeof a);
        fprintf(out, "  of which     %s in %s\n", a, mixers[i].name);
    }
    if (m->mtp_layers > 0) {
        format_count(p.mtp, a, sizeof a);
        format_count(p.total + p.mtp, b, sizeof b);
        fprintf(out, "  MTP          %s in %" PRId64 " module%s, apart from the total (%s with %s); "
                     "held only with --mtp\n",
                a, m->mtp_layers, m->mtp_layers == 1 ? "" : "s", b, m->mtp_layers == 1 ? "it" : "them");
    }
    format_gb(model_weight_bytes(m, o->weights, o->expert_weights), a, sizeof a);
    fprintf(out, "\nweights: %s GB at %s", a, precision_name(o->weights));
    if (o->expert_weights != o->weights)
        fprintf(out, " (routed experts %s)", precision_name(o->expert_weights));
    fprintf(out, "\n");
    for (int q = 0; q < PREC_COUNT; q++) {
        format_gb(model_weight_bytes(m, (enum precision)q, (enum precision)q), a, sizeof a);
        fprintf(out, "  all %-5s %12s GB\n", precision_name((enum precision)q), a);
    }
    format_count(model_kv_bytes_per_token(m, o->kv), a, sizeof a);
    double state = model_state_bytes_per_sequence(m);
    format_gb(model_sequence_bytes(m, o->kv, o->context) - state, b, sizeof b);
    format_count((double)o->context, c, sizeof c);
    fprintf(out, "\nKV cache at %s: %s bytes per token; %s GB per %s-token sequence",
            precision_name(o->kv), a, b, c);
    if (windowed_layers(m) && o->context > m->attention.window_tokens)
        fprintf(out, " (windowed layers keep %" PRId64 " tokens)", m->attention.window_tokens);
    fprintf(out, "\n");
    if (state > 0) {
        format_count(state, a, sizeof a);
        format_gb(model_sequence_bytes(m, o->kv, o->context), b, sizeof b);
        fprintf(out, "fixed state at %s: %s bytes per sequence, whatever its length; %s GB per sequence in all\n",
                precision_name(m->state_precision), a, b);
    }
    struct kind_summary kinds[KIND_COUNT];
    summarise_kinds(m, o->kv, o->context, kinds);
    if (kinds[KIND_ATTENTION].layers < m->layers) {
        fprintf(out, "  by layer kind, per layer:\n");
        for (int k = 0; k < KIND_COUNT; k++) {
            if (kinds[k].layers == 0)
                continue;
            fprintf(out, "    %3" PRId64 " %-34s", kinds[k].layers, kind_names[k]);
            if (kinds[k].state_bytes > 0) {
                format_count(kinds[k].state_bytes, a, sizeof a);
                fprintf(out, " %s bytes of state per sequence", a);
            } else if (kinds[k].kv_bytes_per_token > 0) {
                format_count(kinds[k].kv_bytes_per_token, a, sizeof a);
                fprintf(out, " %s bytes per token", a);
                if (kinds[k].index_key_bytes > 0) {
                    format_count(kinds[k].index_key_bytes, b, sizeof b);
                    fprintf(out, " (%s of them index keys)", b);
                }
            } else {
                fprintf(out, " nothing per sequence");
            }
            fprintf(out, "\n");
        }
    }
    fprintf(out, "FLOPs per token: %.4g matmul + %.4g attention at %s tokens\n",
            model_matmul_flops_per_token(m), model_attention_flops_per_token(m, o->context), c);
}

int cmd_model(int argc, char **argv)
{
    struct options o;
    int status = cli_parse(&command_model, argc, argv, &o);
    if (status >= 0)
        return status;
    struct model m;
    if ((status = cli_load_model(o.positional[0], &m)) != EXIT_OK)
        return status;
    if ((status = cli_resolve(&o, &m, NULL)) != EXIT_OK)
        return status;
    struct sink sink;
    if (!sink_open(&sink, o.output))
        return EXIT_IO;
    enum json_syntax syntax;
    if (cli_tree_format(o.format, &syntax))
        write_tree(sink.out, syntax, &m, &o);
    else
        write_text(sink.out, &m, &o);
    return sink_commit(&sink) ? EXIT_OK : EXIT_IO;
}
