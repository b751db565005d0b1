/* model_read.c: model specs (YAML) and Hugging Face config.json files into struct model.
 *
 * Both readers walk a doc tree (doc.h) and report every problem with its position. The spec
 * reader is strict (unknown keys are errors); the HF reader takes the fields it knows and
 * ignores the rest, since config.json files carry many fields rackplan has no use for.
 */
#include "model.h"

#include "doc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_LAYERS 10000
#define LIMIT_WIDTH 1048576       /* hidden sizes, head dims, ranks */
#define LIMIT_FFN_WIDTH 4194304
#define LIMIT_VOCAB 100000000
#define LIMIT_HEADS 65536
#define LIMIT_EXPERTS 1000000
#define LIMIT_CONTEXT 1073741824  /* 2^30 tokens */
#define LIMIT_TOTAL_PARAMS 1e15   /* a thousand times the largest public model */

#define READER_MAX_FIELDS 64

/* Where a struct model field was read from, so checks across fields can point at it by the
 * file's own name for it. */
struct field_origin {
    const void *field;
    const struct doc_node *node;
    const char *display;
};

struct reader {
    struct doc_reader doc;
    struct field_origin origins[READER_MAX_FIELDS];
    int origin_count;
};

static void remember(struct reader *r, const void *field, const struct doc_node *node,
                     const char *display)
{
    for (int i = 0; i < r->origin_count; i++) {
        if (r->origins[i].field == field) {
            r->origins[i].node = node;
            r->origins[i].display = display;
            return;
        }
    }
    if (r->origin_count < READER_MAX_FIELDS)
        r->origins[r->origin_count++] = (struct field_origin){field, node, display};
}

static const struct field_origin *origin(const struct reader *r, const void *field)
{
    for (int i = 0; i < r->origin_count; i++)
        if (r->origins[i].field == field)
            return &r->origins[i];
    return NULL;
}

/* The file's name for a field, or `fallback` when it was not read (a default). */
static const char *field_name(const struct reader *r, const void *field, const char *fallback)
{
    const struct field_origin *o = origin(r, field);
    return o ? o->display : fallback;
}

/* The node a field was read from, or `fallback`. */
static const struct doc_node *field_node(const struct reader *r, const void *field,
                                         const struct doc_node *fallback)
{
    const struct field_origin *o = origin(r, field);
    return o ? o->node : fallback;
}

/* The value of `key`, or NULL when absent or null. A missing required field is reported at the
 * mapping that should hold it. */
static const struct doc_node *field(struct reader *r, const struct doc_node *map, const char *key,
                                    const char *display, bool required)
{
    const struct doc_node *n = doc_get(map, key);
    if (doc_is_null(n)) {
        if (required)
            doc_error_at(&r->doc, n, "field '%s' is null; it needs a value", display);
        return NULL;
    }
    if (!n && required)
        doc_error_at(&r->doc, map, "missing field '%s'", display);
    return n;
}

static bool parse_integer(const char *text, int64_t *out)
{
    if (!*text)
        return false;
    const char *p = text;
    if (*p == '-' || *p == '+')
        p++;
    if (*p < '0' || *p > '9')
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (*end != '\0')
        return false;
    if (errno == ERANGE)
        v = v < 0 ? INT64_MIN : INT64_MAX;
    *out = v;
    return true;
}

static bool read_int(struct reader *r, const struct doc_node *map, const char *key,
                     const char *display, bool required, int64_t min, int64_t max, int64_t *out)
{
    const struct doc_node *n = field(r, map, key, display, required);
    if (!n)
        return false;
    int64_t v;
    if (n->kind != DOC_SCALAR || n->quoted || !parse_integer(n->text, &v)) {
        doc_error_at(&r->doc, n, "field '%s' must be an integer, not %s%s%s%s", display, doc_kind_name(n),
                     n->kind == DOC_SCALAR ? " '" : "", n->kind == DOC_SCALAR ? n->text : "",
                     n->kind == DOC_SCALAR ? "'" : "");
        return false;
    }
    if (v < min || v > max) {
        doc_error_at(&r->doc, n, "field '%s' is %s; it must be between %" PRId64 " and %" PRId64, display, n->text, min,
                     max);
        return false;
    }
    *out = v;
    remember(r, out, n, display);
    return true;
}

static bool read_bool(struct reader *r, const struct doc_node *map, const char *key,
                      const char *display, bool *out)
{
    const struct doc_node *n = field(r, map, key, display, false);
    if (!n)
        return false;
    if (n->kind == DOC_SCALAR && !n->quoted &&
        (strcmp(n->text, "true") == 0 || strcmp(n->text, "false") == 0)) {
        *out = n->text[0] == 't';
        return true;
    }
    doc_error_at(&r->doc, n, "field '%s' must be true or false, not %s%s%s%s", display, doc_kind_name(n),
                 n->kind == DOC_SCALAR ? " '" : "", n->kind == DOC_SCALAR ? n->text : "",
                 n->kind == DOC_SCALAR ? "'" : "");
    return false;
}

static bool read_string(struct reader *r, const struct doc_node *map, const char *key,
                        const char *display, bool required, char *out, size_t size)
{
    const struct doc_node *n = field(r, map, key, display, required);
    if (!n)
        return false;
    if (n->kind != DOC_SCALAR) {
        doc_error_at(&r->doc, n, "field '%s' must be a string, not %s", display, doc_kind_name(n));
        return false;
    }
    if (strlen(n->text) >= size) {
        doc_error_at(&r->doc, n, "field '%s' is longer than %zu characters", display, size - 1);
        return false;
    }
    strcpy(out, n->text);
    return true;
}

static bool read_precision(struct reader *r, const struct doc_node *map, const char *key,
                           const char *display, enum precision *out)
{
    const struct doc_node *n = field(r, map, key, display, false);
    if (!n)
        return false;
    if (n->kind != DOC_SCALAR || !precision_parse(n->text, out)) {
        doc_error_at(&r->doc, n, "field '%s' must be one of fp4, fp8, bf16, fp16, fp32, not '%s'", display,
                     n->kind == DOC_SCALAR ? n->text : doc_kind_name(n));
        return false;
    }
    return true;
}

static const struct doc_node *read_map(struct reader *r, const struct doc_node *map,
                                       const char *key, const char *display, bool required)
{
    const struct doc_node *n = field(r, map, key, display, required);
    if (n && n->kind != DOC_MAP) {
        doc_error_at(&r->doc, n, "field '%s' must be a mapping, not %s", display, doc_kind_name(n));
        return NULL;
    }
    return n;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    size_t row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diagonal + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = up;
        }
    }
    return row[lb];
}

/* Reports keys of `map` that are not in the NULL-terminated `known`. */
static void check_keys(struct reader *r, const struct doc_node *map, const char *prefix,
                       const char *const *known)
{
    if (!map)
        return;
    for (size_t i = 0; i < map->count; i++) {
        const char *key = map->keys[i]->text;
        const char *nearest = NULL;
        size_t nearest_distance = 3;
        bool found = false;
        for (const char *const *k = known; *k; k++) {
            if (strcmp(*k, key) == 0) {
                found = true;
                break;
            }
            size_t distance = edit_distance(*k, key);
            if (distance < nearest_distance) {
                nearest_distance = distance;
                nearest = *k;
            }
        }
        if (found)
            continue;
        if (nearest)
            doc_error_at(&r->doc, map->keys[i], "unknown field '%s%s' (did you mean '%s%s'?)", prefix, key, prefix,
                         nearest);
        else
            doc_error_at(&r->doc, map->keys[i], "unknown field '%s%s'", prefix, key);
    }
}

static void set_defaults(struct model *m)
{
    memset(m, 0, sizeof *m);
    m->weights_precision = PREC_BF16;
    m->expert_weights_precision = PREC_BF16;
    m->kv_precision = PREC_BF16;
    /* SGLang keeps recurrent states in FP32 by default, and recent vLLM does for Nemotron-H and
     * Qwen3.5 (their configs ask for float32) */
    m->state_precision = PREC_FP32;
    m->attention.type = ATTENTION_GQA;
    m->attention.indexer.key_precision = PREC_FP8; /* DeepSeek's and vLLM's index-key cache */
    m->mamba.groups = 1;
    m->ffn.gated = true;
    m->moe.interleave = 1;
    m->moe.groups = 1;
    m->moe.groups_per_token = 1;
}

/* The layer pattern against the sections that describe each kind of layer. */
static void check_layer_kinds(struct reader *r, const struct doc_node *at, const struct model *m)
{
    struct {
        enum mixer kind;
        bool described;
        const char *section;
    } mixers[] = {{MIXER_LINEAR, m->linear.value_heads > 0, "linear_attention"},
                  {MIXER_MAMBA, m->mamba.heads > 0, "mamba"}};
    for (size_t i = 0; i < sizeof mixers / sizeof mixers[0]; i++) {
        int64_t layers = model_mixer_layers(m, mixers[i].kind);
        if (layers > 0 && !mixers[i].described)
            doc_error_at(&r->doc, at, "%" PRId64 " layers are %s but the model has no '%s' section", layers,
                         mixer_name(mixers[i].kind), mixers[i].section);
        else if (layers == 0 && mixers[i].described)
            doc_error_at(&r->doc, at, "the model has a '%s' section but no %s layer (see 'layer_pattern')",
                         mixers[i].section, mixer_name(mixers[i].kind));
    }
    bool seen_attention = false;
    for (int64_t i = 0; i < m->layers && i < MODEL_MAX_LAYER_PATTERN && m->pattern.length; i++) {
        enum mixer mixer = model_layer_mixer(m, i);
        bool shares = m->pattern.shares_indexer[i % m->pattern.length];
        if (mixer == MIXER_NONE && !model_layer_is_moe(m, i) && !model_layer_is_dense(m, i)) {
            doc_error_at(&r->doc, at, "layer %" PRId64 " has neither a mixer nor an FFN", i);
            return;
        }
        if (model_layer_is_moe(m, i) && !model_is_moe(m)) {
            doc_error_at(&r->doc, at, "layer %" PRId64 " is MoE but the model has no 'moe' section", i);
            return;
        }
        if (shares && (m->attention.indexer.heads == 0 || mixer != MIXER_ATTENTION)) {
            doc_error_at(&r->doc, at, "layer %" PRId64 " shares an indexer but is not a sparse attention layer", i);
            return;
        }
        if (shares && !seen_attention) {
            doc_error_at(&r->doc, at,
                         "layer %" PRId64 " shares the indexer of an earlier layer, and none comes before it", i);
            return;
        }
        seen_attention |= mixer == MIXER_ATTENTION;
    }
    if (m->linear.value_heads > 0 && m->linear.value_heads % m->linear.key_heads != 0)
        doc_error_at(&r->doc, field_node(r, &m->linear.key_heads, at),
                     "field '%s' (%" PRId64 ") must divide '%s' (%" PRId64 ")",
                     field_name(r, &m->linear.key_heads, "linear_attention.key_heads"), m->linear.key_heads,
                     field_name(r, &m->linear.value_heads, "linear_attention.value_heads"), m->linear.value_heads);
    if (m->mamba.heads > 0 && m->mamba.heads % m->mamba.groups != 0)
        doc_error_at(&r->doc, field_node(r, &m->mamba.groups, at),
                     "field '%s' (%" PRId64 ") must divide '%s' (%" PRId64 ")",
                     field_name(r, &m->mamba.groups, "mamba.groups"), m->mamba.groups,
                     field_name(r, &m->mamba.heads, "mamba.heads"), m->mamba.heads);
}

/* Checks that hold across fields, for both readers. `at` locates messages. */
static void check_model(struct reader *r, const struct doc_node *at, struct model *m)
{
    if (m->attention.type == ATTENTION_GQA && m->attention.kv_heads > 0 &&
        m->attention.heads % m->attention.kv_heads != 0)
        doc_error_at(&r->doc, field_node(r, &m->attention.kv_heads, at),
                     "field '%s' (%" PRId64 ") must divide '%s' (%" PRId64 ")",
                     field_name(r, &m->attention.kv_heads, "kv_heads"), m->attention.kv_heads,
                     field_name(r, &m->attention.heads, "heads"), m->attention.heads);
    if (m->moe.experts > 0) {
        if (m->moe.experts_per_token > m->moe.experts)
            doc_error_at(&r->doc, field_node(r, &m->moe.experts_per_token, at),
                         "field '%s' (%" PRId64 ") is more than '%s' (%" PRId64 ")",
                         field_name(r, &m->moe.experts_per_token, "experts_per_token"), m->moe.experts_per_token,
                         field_name(r, &m->moe.experts, "experts"), m->moe.experts);
        if (m->moe.first_dense_layers > m->layers)
            doc_error_at(&r->doc, field_node(r, &m->moe.first_dense_layers, at),
                         "field '%s' (%" PRId64 ") is more than '%s' (%" PRId64 ")",
                         field_name(r, &m->moe.first_dense_layers, "first_dense_layers"), m->moe.first_dense_layers,
                         field_name(r, &m->layers, "layers"), m->layers);
        if (m->moe.experts % m->moe.groups != 0)
            doc_error_at(&r->doc, field_node(r, &m->moe.groups, at),
                         "field '%s' (%" PRId64 ") must divide '%s' (%" PRId64 ")",
                         field_name(r, &m->moe.groups, "groups"), m->moe.groups,
                         field_name(r, &m->moe.experts, "experts"), m->moe.experts);
        if (m->moe.groups_per_token > m->moe.groups)
            doc_error_at(&r->doc, field_node(r, &m->moe.groups_per_token, at),
                         "field '%s' (%" PRId64 ") is more than '%s' (%" PRId64 ")",
                         field_name(r, &m->moe.groups_per_token, "groups_per_token"), m->moe.groups_per_token,
                         field_name(r, &m->moe.groups, "groups"), m->moe.groups);
        if (m->moe.shared_intermediate_size == 0)
            m->moe.shared_intermediate_size = m->moe.intermediate_size;
        if (r->doc.errors == 0 && model_moe_layers(m) == 0)
            doc_error_at(&r->doc, field_node(r, &m->moe.experts, at),
                         "the model has MoE settings but no MoE layer (check '%s' and '%s')",
                         field_name(r, &m->moe.first_dense_layers, "first_dense_layers"),
                         field_name(r, &m->moe.interleave, "interleave"));
    }
    if (r->doc.errors)
        return;
    check_layer_kinds(r, at, m);
    if (r->doc.errors)
        return;
    bool has_dense = false;
    for (int64_t i = 0; i < m->layers; i++)
        has_dense |= model_layer_is_dense(m, i);
    if (has_dense && m->ffn.intermediate_size == 0)
        doc_error_at(&r->doc, at, "missing field '%s' (the model has dense layers)",
                     field_name(r, &m->ffn.intermediate_size, "ffn.intermediate_size"));
    if (r->doc.errors)
        return;
    struct model_params p;
    model_params(m, &p);
    if (!(p.total <= LIMIT_TOTAL_PARAMS))
        doc_error_at(&r->doc, field_node(r, &m->layers, at),
                     "the model has %.3g parameters, more than the %.0e rackplan accepts; check the sizes", p.total,
                     LIMIT_TOTAL_PARAMS);
}

/* ---- rackplan model spec ---- */

static void read_window(struct reader *r, const struct doc_node *window, struct model *m)
{
    static const char *const known[] = {"tokens", "kind", "pattern", NULL};
    check_keys(r, window, "attention.window.", known);
    read_int(r, window, "tokens", "attention.window.tokens", true, 1, LIMIT_CONTEXT,
             &m->attention.window_tokens);
    const struct doc_node *kind = field(r, window, "kind", "attention.window.kind", true);
    if (kind) {
        if (kind->kind == DOC_SCALAR && strcmp(kind->text, "sliding") == 0)
            m->attention.window_kind = WINDOW_SLIDING;
        else if (kind->kind == DOC_SCALAR && strcmp(kind->text, "chunked") == 0)
            m->attention.window_kind = WINDOW_CHUNKED;
        else
            doc_error_at(&r->doc, kind, "field 'attention.window.kind' must be sliding or chunked, not '%s'",
                         kind->kind == DOC_SCALAR ? kind->text : doc_kind_name(kind));
    }
    const struct doc_node *pattern = field(r, window, "pattern", "attention.window.pattern", true);
    if (!pattern)
        return;
    if (pattern->kind != DOC_SEQ || pattern->count == 0 || pattern->count > MODEL_MAX_PATTERN) {
        doc_error_at(&r->doc, pattern, "field 'attention.window.pattern' must be a list of 1 to %d items, each 0 or 1",
                     MODEL_MAX_PATTERN);
        return;
    }
    bool any = false;
    for (size_t i = 0; i < pattern->count; i++) {
        const struct doc_node *item = pattern->items[i];
        if (item->kind != DOC_SCALAR || item->quoted ||
            (strcmp(item->text, "0") != 0 && strcmp(item->text, "1") != 0)) {
            doc_error_at(&r->doc, item, "items of 'attention.window.pattern' must be 0 or 1, not '%s'",
                         item->kind == DOC_SCALAR ? item->text : doc_kind_name(item));
            return;
        }
        m->attention.window_pattern[i] = item->text[0] == '1';
        any |= m->attention.window_pattern[i];
    }
    m->attention.window_pattern_length = (int)pattern->count;
    if (!any)
        doc_error_at(&r->doc, pattern, "field 'attention.window.pattern' has no windowed layer (no 1)");
}

static void read_attention(struct reader *r, const struct doc_node *a, struct model *m)
{
    static const char *const known[] = {
        "type",         "heads",       "kv_heads",         "head_dim",         "bias",
        "output_bias",  "qk_norm",     "sinks",            "q_lora_rank",      "kv_lora_rank",
        "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "window", "output_gate", "indexer", NULL};
    check_keys(r, a, "attention.", known);
    const struct doc_node *type = field(r, a, "type", "attention.type", true);
    if (type) {
        if (type->kind == DOC_SCALAR && strcmp(type->text, "gqa") == 0)
            m->attention.type = ATTENTION_GQA;
        else if (type->kind == DOC_SCALAR && strcmp(type->text, "mla") == 0)
            m->attention.type = ATTENTION_MLA;
        else {
            doc_error_at(
                &r->doc, type,
                "field 'attention.type' must be gqa or mla, not '%s' (MHA and MQA are gqa with kv_heads = heads or 1)",
                type->kind == DOC_SCALAR ? type->text : doc_kind_name(type));
            return;
        }
    }
    read_int(r, a, "heads", "attention.heads", true, 1, LIMIT_HEADS, &m->attention.heads);
    bool mla = m->attention.type == ATTENTION_MLA;
    const char *gqa_only[] = {"kv_heads", "head_dim", "output_gate", NULL};
    const char *mla_only[] = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                              "qk_rope_head_dim", "v_head_dim", NULL};
    for (const char **k = mla ? gqa_only : mla_only; *k; k++) {
        const struct doc_node *misplaced = doc_get(a, *k);
        if (misplaced)
            doc_error_at(&r->doc, misplaced, "field 'attention.%s' does not apply to %s attention", *k,
                         mla ? "mla" : "gqa");
    }
    if (mla) {
        read_int(r, a, "q_lora_rank", "attention.q_lora_rank", false, 0, LIMIT_WIDTH,
                 &m->attention.q_lora_rank);
        read_int(r, a, "kv_lora_rank", "attention.kv_lora_rank", true, 1, LIMIT_WIDTH,
                 &m->attention.kv_lora_rank);
        read_int(r, a, "qk_nope_head_dim", "attention.qk_nope_head_dim", true, 0, LIMIT_WIDTH,
                 &m->attention.qk_nope_head_dim);
        read_int(r, a, "qk_rope_head_dim", "attention.qk_rope_head_dim", true, 0, LIMIT_WIDTH,
                 &m->attention.qk_rope_head_dim);
        read_int(r, a, "v_head_dim", "attention.v_head_dim", true, 1, LIMIT_WIDTH,
                 &m->attention.v_head_dim);
    } else {
        read_int(r, a, "kv_heads", "attention.kv_heads", true, 1, LIMIT_HEADS,
                 &m->attention.kv_heads);
        read_int(r, a, "head_dim", "attention.head_dim", true, 1, LIMIT_WIDTH,
                 &m->attention.head_dim);
    }
    read_bool(r, a, "bias", "attention.bias", &m->attention.bias);
    read_bool(r, a, "output_bias", "attention.output_bias", &m->attention.output_bias);
    read_bool(r, a, "qk_norm", "attention.qk_norm", &m->attention.qk_norm);
    read_bool(r, a, "sinks", "attention.sinks", &m->attention.sinks);
    read_bool(r, a, "output_gate", "attention.output_gate", &m->attention.output_gate);
    const struct doc_node *window = read_map(r, a, "window", "attention.window", false);
    if (window)
        read_window(r, window, m);
    const struct doc_node *indexer = read_map(r, a, "indexer", "attention.indexer", false);
    if (indexer) {
        static const char *const known_indexer[] = {"heads", "head_dim", "topk", "key_precision", NULL};
        check_keys(r, indexer, "attention.indexer.", known_indexer);
        read_int(r, indexer, "heads", "attention.indexer.heads", true, 1, LIMIT_HEADS,
                 &m->attention.indexer.heads);
        read_int(r, indexer, "head_dim", "attention.indexer.head_dim", true, 1, LIMIT_WIDTH,
                 &m->attention.indexer.head_dim);
        read_int(r, indexer, "topk", "attention.indexer.topk", true, 1, LIMIT_CONTEXT,
                 &m->attention.indexer.topk);
        read_precision(r, indexer, "key_precision", "attention.indexer.key_precision",
                       &m->attention.indexer.key_precision);
    }
}

/* One list of `layer_pattern`: each item one of `names` (its index is the value stored). */
static int read_pattern_list(struct reader *r, const struct doc_node *list, const char *display,
                             const char *const *names, unsigned char *out)
{
    if (list->kind != DOC_SEQ || list->count == 0 || list->count > MODEL_MAX_LAYER_PATTERN) {
        doc_error_at(&r->doc, list, "field '%s' must be a list of 1 to %d items", display, MODEL_MAX_LAYER_PATTERN);
        return 0;
    }
    for (size_t i = 0; i < list->count; i++) {
        const struct doc_node *item = list->items[i];
        int value = -1;
        for (int k = 0; item->kind == DOC_SCALAR && names[k]; k++)
            if (strcmp(item->text, names[k]) == 0)
                value = k;
        if (value < 0) {
            char choices[200] = "";
            for (int k = 0; names[k]; k++)
                snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s",
                         k ? (names[k + 1] ? ", " : " or ") : "", names[k]);
            doc_error_at(&r->doc, item, "items of '%s' must be %s, not '%s'", display, choices,
                         item->kind == DOC_SCALAR ? item->text : doc_kind_name(item));
            return 0;
        }
        out[i] = (unsigned char)value;
    }
    return (int)list->count;
}

static void read_layer_pattern(struct reader *r, const struct doc_node *pattern, struct model *m)
{
    static const char *const known[] = {"mixer", "ffn", "indexer", NULL};
    static const char *const mixers[] = {"attention", "linear_attention", "mamba", "none", NULL};
    static const char *const ffns[] = {"rule", "dense", "moe", "none", NULL};
    static const char *const indexers[] = {"own", "shared", NULL};
    check_keys(r, pattern, "layer_pattern.", known);
    const struct {
        const char *key, *display;
        const char *const *names;
        unsigned char *out;
    } lists[] = {{"mixer", "layer_pattern.mixer", mixers, m->pattern.mixer},
                 {"ffn", "layer_pattern.ffn", ffns, m->pattern.ffn},
                 {"indexer", "layer_pattern.indexer", indexers, m->pattern.shares_indexer}};
    const char *first = NULL;
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        const struct doc_node *list = field(r, pattern, lists[i].key, lists[i].display, false);
        if (!list)
            continue;
        int length = read_pattern_list(r, list, lists[i].display, lists[i].names, lists[i].out);
        if (length == 0)
            return;
        if (first && length != m->pattern.length) {
            doc_error_at(&r->doc, list, "field '%s' has %d items but '%s' has %d; the lists go layer by layer together",
                         lists[i].display, length, first, m->pattern.length);
            return;
        }
        if (m->layers > 0 && length > m->layers) {
            doc_error_at(&r->doc, list, "field '%s' has %d items but the model has %" PRId64 " layers",
                         lists[i].display, length, m->layers);
            return;
        }
        if (!first)
            first = lists[i].display;
        m->pattern.length = length;
    }
    if (!first)
        doc_error_at(&r->doc, pattern, "field 'layer_pattern' needs at least one of 'mixer', 'ffn' or 'indexer'");
}

/* The integer fields of the recurrent mixers, by their spec and config.json names. */
struct mixer_field {
    const char *spec, *display, *hf; /* display: the spec key with its section, as messages name it */
    bool required;
    int64_t max;
    size_t offset; /* of the int64_t in struct model */
};

static const struct mixer_field linear_fields[] = {
    {"key_heads", "linear_attention.key_heads", "linear_num_key_heads", true, LIMIT_HEADS,
     offsetof(struct model, linear.key_heads)},
    {"value_heads", "linear_attention.value_heads", "linear_num_value_heads", true, LIMIT_HEADS,
     offsetof(struct model, linear.value_heads)},
    {"key_head_dim", "linear_attention.key_head_dim", "linear_key_head_dim", true, LIMIT_WIDTH,
     offsetof(struct model, linear.key_head_dim)},
    {"value_head_dim", "linear_attention.value_head_dim", "linear_value_head_dim", true, LIMIT_WIDTH,
     offsetof(struct model, linear.value_head_dim)},
    {"conv_kernel", "linear_attention.conv_kernel", "linear_conv_kernel_dim", true, 1024,
     offsetof(struct model, linear.conv_kernel)},
    {NULL, NULL, NULL, false, 0, 0}};

static const struct mixer_field mamba_fields[] = {
    {"heads", "mamba.heads", "mamba_num_heads", true, LIMIT_HEADS,
     offsetof(struct model, mamba.heads)},
    {"head_dim", "mamba.head_dim", "mamba_head_dim", true, LIMIT_WIDTH,
     offsetof(struct model, mamba.head_dim)},
    {"state_size", "mamba.state_size", "ssm_state_size", true, LIMIT_WIDTH,
     offsetof(struct model, mamba.state_size)},
    {"groups", "mamba.groups", "n_groups", false, LIMIT_HEADS,
     offsetof(struct model, mamba.groups)},
    {"conv_kernel", "mamba.conv_kernel", "conv_kernel", true, 1024,
     offsetof(struct model, mamba.conv_kernel)},
    {NULL, NULL, NULL, false, 0, 0}};

/* Reads `fields` from `map`: a spec section named `section` (its keys checked against the
 * fields and the NULL-ended `other_keys`), or with section NULL a config.json under the fields'
 * hf names. */
static void read_mixer_fields(struct reader *r, const struct doc_node *map, const char *section,
                              const struct mixer_field *fields, const char *const *other_keys,
                              struct model *m)
{
    const char *known[16];
    size_t n = 0;
    for (const struct mixer_field *f = fields; f->spec; f++)
        known[n++] = f->spec;
    for (size_t i = 0; other_keys && other_keys[i]; i++)
        known[n++] = other_keys[i];
    known[n] = NULL;
    if (section) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s.", section);
        check_keys(r, map, prefix, known);
    }
    for (const struct mixer_field *f = fields; f->spec; f++)
        read_int(r, map, section ? f->spec : f->hf, section ? f->display : f->hf, f->required, 1, f->max,
                 (int64_t *)((char *)m + f->offset));
}

static void read_spec(struct reader *r, const struct doc_node *root, struct model *m)
{
    static const char *const known[] = {"name",      "source",         "layers",
                                        "hidden_size", "vocab_size",   "tie_embeddings",
                                        "max_context", "precision",    "attention",
                                        "ffn",       "moe",            "layer_pattern",
                                        "linear_attention", "mamba",   "mtp_layers",
                                        NULL};
    check_keys(r, root, "", known);
    read_string(r, root, "name", "name", true, m->name, sizeof m->name);
    read_string(r, root, "source", "source", true, m->source, sizeof m->source);
    read_int(r, root, "layers", "layers", true, 1, LIMIT_LAYERS, &m->layers);
    read_int(r, root, "hidden_size", "hidden_size", true, 1, LIMIT_WIDTH, &m->hidden_size);
    read_int(r, root, "vocab_size", "vocab_size", true, 1, LIMIT_VOCAB, &m->vocab_size);
    read_bool(r, root, "tie_embeddings", "tie_embeddings", &m->tie_embeddings);
    read_int(r, root, "max_context", "max_context", false, 0, LIMIT_CONTEXT, &m->max_context);
    read_int(r, root, "mtp_layers", "mtp_layers", false, 0, 64, &m->mtp_layers);

    const struct doc_node *precision = read_map(r, root, "precision", "precision", false);
    if (precision) {
        static const char *const known_precision[] = {"weights", "expert_weights", "fp4_format", "kv", "state",
                                                      NULL};
        check_keys(r, precision, "precision.", known_precision);
        read_precision(r, precision, "weights", "precision.weights", &m->weights_precision);
        if (!read_precision(r, precision, "expert_weights", "precision.expert_weights",
                            &m->expert_weights_precision))
            m->expert_weights_precision = m->weights_precision;
        read_precision(r, precision, "kv", "precision.kv", &m->kv_precision);
        read_precision(r, precision, "state", "precision.state", &m->state_precision);
        const struct doc_node *format = field(r, precision, "fp4_format", "precision.fp4_format", false);
        if (format && (format->kind != DOC_SCALAR ||
                       (strcmp(format->text, "mxfp4") != 0 && strcmp(format->text, "nvfp4") != 0)))
            doc_error_at(&r->doc, format, "field 'precision.fp4_format' must be mxfp4 or nvfp4, not '%s'",
                         format->kind == DOC_SCALAR ? format->text : doc_kind_name(format));
        else if (format)
            m->fp4_mxfp4 = strcmp(format->text, "mxfp4") == 0;
    }
    const struct doc_node *pattern = read_map(r, root, "layer_pattern", "layer_pattern", false);
    if (pattern)
        read_layer_pattern(r, pattern, m);
    const struct doc_node *linear = read_map(r, root, "linear_attention", "linear_attention", false);
    if (linear)
        read_mixer_fields(r, linear, "linear_attention", linear_fields, NULL, m);
    const struct doc_node *mamba = read_map(r, root, "mamba", "mamba", false);
    if (mamba) {
        static const char *const flags[] = {"conv_bias", "bias", NULL};
        read_mixer_fields(r, mamba, "mamba", mamba_fields, flags, m);
        read_bool(r, mamba, "conv_bias", "mamba.conv_bias", &m->mamba.conv_bias);
        read_bool(r, mamba, "bias", "mamba.bias", &m->mamba.bias);
    }

    const struct doc_node *attention = read_map(r, root, "attention", "attention", true);
    if (attention)
        read_attention(r, attention, m);

    const struct doc_node *ffn = read_map(r, root, "ffn", "ffn", false);
    if (ffn) {
        static const char *const known_ffn[] = {"intermediate_size", "gated", "bias", NULL};
        check_keys(r, ffn, "ffn.", known_ffn);
        read_int(r, ffn, "intermediate_size", "ffn.intermediate_size", false, 1, LIMIT_FFN_WIDTH,
                 &m->ffn.intermediate_size);
        read_bool(r, ffn, "gated", "ffn.gated", &m->ffn.gated);
        read_bool(r, ffn, "bias", "ffn.bias", &m->ffn.bias);
    }

    const struct doc_node *moe = read_map(r, root, "moe", "moe", false);
    if (moe) {
        static const char *const known_moe[] = {
            "experts",        "experts_per_token", "shared_experts", "intermediate_size",
            "shared_intermediate_size", "first_dense_layers", "interleave", "router_bias",
            "groups",         "groups_per_token",  "shared_expert_gate", NULL};
        check_keys(r, moe, "moe.", known_moe);
        read_int(r, moe, "experts", "moe.experts", true, 1, LIMIT_EXPERTS, &m->moe.experts);
        read_int(r, moe, "experts_per_token", "moe.experts_per_token", true, 1, LIMIT_EXPERTS,
                 &m->moe.experts_per_token);
        read_int(r, moe, "shared_experts", "moe.shared_experts", false, 0, 1024,
                 &m->moe.shared_experts);
        read_int(r, moe, "intermediate_size", "moe.intermediate_size", true, 1, LIMIT_FFN_WIDTH,
                 &m->moe.intermediate_size);
        read_int(r, moe, "shared_intermediate_size", "moe.shared_intermediate_size", false, 1,
                 LIMIT_FFN_WIDTH, &m->moe.shared_intermediate_size);
        read_int(r, moe, "first_dense_layers", "moe.first_dense_layers", false, 0, LIMIT_LAYERS,
                 &m->moe.first_dense_layers);
        read_int(r, moe, "interleave", "moe.interleave", false, 1, LIMIT_LAYERS,
                 &m->moe.interleave);
        read_bool(r, moe, "router_bias", "moe.router_bias", &m->moe.router_bias);
        read_int(r, moe, "groups", "moe.groups", false, 1, LIMIT_EXPERTS, &m->moe.groups);
        read_int(r, moe, "groups_per_token", "moe.groups_per_token", false, 1, LIMIT_EXPERTS,
                 &m->moe.groups_per_token);
        read_bool(r, moe, "shared_expert_gate", "moe.shared_expert_gate", &m->moe.shared_expert_gate);
    }
}

/* ---- Hugging Face config.json ---- */

static const char *const hf_supported =
    "deepseek_v3, deepseek_v32, deepseek_v2, kimi_k2, glm_moe_dsa, qwen3, qwen3_moe, qwen3_next, qwen3_5, "
    "qwen3_5_moe, nemotron_h, llama, llama4, mixtral, gpt_oss, glm4_moe";

static bool hf_string_is(const struct doc_node *map, const char *key, const char *value)
{
    const struct doc_node *n = doc_get(map, key);
    return n && n->kind == DOC_SCALAR && strcmp(n->text, value) == 0;
}

/* Weight precision from `torch_dtype` and `quantization_config`. */
static void hf_precision(const struct doc_node *root, struct model *m)
{
    const struct doc_node *text = doc_get(root, "text_config"); /* Qwen3.5 keeps its dtype there */
    const struct doc_node *dtype = doc_get(root, "torch_dtype");
    if (!dtype)
        dtype = doc_get(root, "dtype");
    if (!dtype && text && text->kind == DOC_MAP)
        dtype = doc_get(text, "dtype");
    if (dtype && dtype->kind == DOC_SCALAR) {
        if (strcmp(dtype->text, "float16") == 0)
            m->weights_precision = PREC_FP16;
        else if (strcmp(dtype->text, "float32") == 0)
            m->weights_precision = PREC_FP32;
    }
    m->expert_weights_precision = m->weights_precision;
    const struct doc_node *q = doc_get(root, "quantization_config");
    if (hf_string_is(q, "quant_method", "fp8")) {
        m->weights_precision = PREC_FP8;
        m->expert_weights_precision = PREC_FP8;
    } else if (hf_string_is(q, "quant_method", "mxfp4")) {
        m->expert_weights_precision = PREC_FP4; /* gpt-oss: experts only, the rest stays bf16 */
        m->fp4_mxfp4 = true;
    }
}

/* Window pattern from a `layer_types` list: its shortest period. */
static void hf_layer_types(struct reader *r, const struct doc_node *types, struct model *m)
{
    if (types->kind != DOC_SEQ || (int64_t)types->count != m->layers) {
        doc_error_at(&r->doc, types, "field 'layer_types' must list one type for each of the %" PRId64 " layers",
                     m->layers);
        return;
    }
    for (size_t i = 0; i < types->count; i++) {
        const struct doc_node *t = types->items[i];
        if (t->kind != DOC_SCALAR || (strcmp(t->text, "sliding_attention") != 0 &&
                                      strcmp(t->text, "full_attention") != 0)) {
            doc_error_at(&r->doc, t, "unsupported layer type (rackplan reads sliding_attention and full_attention)");
            return;
        }
    }
    for (size_t period = 1; period <= MODEL_MAX_PATTERN && period <= types->count; period++) {
        bool repeats = true;
        for (size_t i = period; i < types->count && repeats; i++)
            repeats = strcmp(types->items[i]->text, types->items[i % period]->text) == 0;
        if (!repeats)
            continue;
        bool any = false;
        for (size_t i = 0; i < period; i++) {
            m->attention.window_pattern[i] = types->items[i]->text[0] == 's';
            any |= m->attention.window_pattern[i];
        }
        m->attention.window_pattern_length = (int)period;
        if (!any)
            m->attention.window_kind = WINDOW_NONE;
        return;
    }
    doc_error_at(&r->doc, types, "field 'layer_types' does not repeat with a period of at most %d layers",
                 MODEL_MAX_PATTERN);
}

/* `_name_or_path` when the file has one, else the file's name without ".json" (or the
 * model_type for a file called config.json). */
static void hf_name(const struct doc_node *root, const char *path, const char *type, char *out,
                    size_t size)
{
    const struct doc_node *name = doc_get(root, "_name_or_path");
    if (name && name->kind == DOC_SCALAR && name->text[0]) {
        snprintf(out, size, "%s", name->text);
        return;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t length = strlen(base);
    if (length > 5 && strcmp(base + length - 5, ".json") == 0)
        length -= 5;
    if ((length == 6 && strncmp(base, "config", 6) == 0) || length == 0)
        snprintf(out, size, "%s", type);
    else
        snprintf(out, size, "%.*s", (int)(length < size - 1 ? length : size - 1), base);
}

static void hf_common(struct reader *r, const struct doc_node *c, struct model *m)
{
    read_int(r, c, "num_hidden_layers", "num_hidden_layers", true, 1, LIMIT_LAYERS, &m->layers);
    read_int(r, c, "hidden_size", "hidden_size", true, 1, LIMIT_WIDTH, &m->hidden_size);
    read_int(r, c, "vocab_size", "vocab_size", true, 1, LIMIT_VOCAB, &m->vocab_size);
    read_bool(r, c, "tie_word_embeddings", "tie_word_embeddings", &m->tie_embeddings);
    read_int(r, c, "max_position_embeddings", "max_position_embeddings", false, 0, LIMIT_CONTEXT,
             &m->max_context);
    read_int(r, c, "num_attention_heads", "num_attention_heads", true, 1, LIMIT_HEADS,
             &m->attention.heads);
}

static void hf_gqa(struct reader *r, const struct doc_node *c, struct model *m)
{
    m->attention.type = ATTENTION_GQA;
    m->attention.kv_heads = m->attention.heads;
    read_int(r, c, "num_key_value_heads", "num_key_value_heads", false, 1, LIMIT_HEADS,
             &m->attention.kv_heads);
    if (!read_int(r, c, "head_dim", "head_dim", false, 1, LIMIT_WIDTH, &m->attention.head_dim) &&
        m->attention.heads > 0) {
        if (m->hidden_size % m->attention.heads != 0)
            doc_error_at(&r->doc, c, "missing field 'head_dim' (hidden_size is not a multiple of num_attention_heads)");
        m->attention.head_dim = m->hidden_size / m->attention.heads;
    }
    read_bool(r, c, "attention_bias", "attention_bias", &m->attention.bias);
}

static void hf_mla(struct reader *r, const struct doc_node *c, struct model *m)
{
    m->attention.type = ATTENTION_MLA;
    read_int(r, c, "q_lora_rank", "q_lora_rank", false, 0, LIMIT_WIDTH, &m->attention.q_lora_rank);
    read_int(r, c, "kv_lora_rank", "kv_lora_rank", true, 1, LIMIT_WIDTH, &m->attention.kv_lora_rank);
    read_int(r, c, "qk_nope_head_dim", "qk_nope_head_dim", true, 0, LIMIT_WIDTH,
             &m->attention.qk_nope_head_dim);
    read_int(r, c, "qk_rope_head_dim", "qk_rope_head_dim", true, 0, LIMIT_WIDTH,
             &m->attention.qk_rope_head_dim);
    read_int(r, c, "v_head_dim", "v_head_dim", true, 1, LIMIT_WIDTH, &m->attention.v_head_dim);
}

/* DeepSeek-style MoE fields (deepseek_v2/v3, kimi_k2, glm4_moe). */
static void hf_deepseek_moe(struct reader *r, const struct doc_node *c, struct model *m)
{
    read_int(r, c, "intermediate_size", "intermediate_size", false, 1, LIMIT_FFN_WIDTH,
             &m->ffn.intermediate_size);
    read_int(r, c, "n_routed_experts", "n_routed_experts", true, 1, LIMIT_EXPERTS, &m->moe.experts);
    read_int(r, c, "num_experts_per_tok", "num_experts_per_tok", true, 1, LIMIT_EXPERTS,
             &m->moe.experts_per_token);
    read_int(r, c, "n_shared_experts", "n_shared_experts", false, 0, 1024, &m->moe.shared_experts);
    read_int(r, c, "moe_intermediate_size", "moe_intermediate_size", true, 1, LIMIT_FFN_WIDTH,
             &m->moe.intermediate_size);
    read_int(r, c, "first_k_dense_replace", "first_k_dense_replace", false, 0, LIMIT_LAYERS,
             &m->moe.first_dense_layers);
    read_int(r, c, "moe_layer_freq", "moe_layer_freq", false, 1, LIMIT_LAYERS, &m->moe.interleave);
    read_int(r, c, "n_group", "n_group", false, 1, LIMIT_EXPERTS, &m->moe.groups);
    read_int(r, c, "topk_group", "topk_group", false, 1, LIMIT_EXPERTS, &m->moe.groups_per_token);
    m->moe.router_bias = hf_string_is(c, "topk_method", "noaux_tc");
}

/* Mixtral-style experts (mixtral, gpt_oss, llama4): num_local_experts experts of
 * intermediate_size, num_experts_per_tok per token (gpt-oss's original configs say
 * experts_per_token). */
static void hf_local_experts(struct reader *r, const struct doc_node *c, struct model *m)
{
    read_int(r, c, "num_local_experts", "num_local_experts", true, 1, LIMIT_EXPERTS,
             &m->moe.experts);
    const char *top_k = doc_get(c, "num_experts_per_tok") || !doc_get(c, "experts_per_token")
                            ? "num_experts_per_tok"
                            : "experts_per_token";
    read_int(r, c, top_k, top_k, true, 1, LIMIT_EXPERTS, &m->moe.experts_per_token);
    read_int(r, c, "intermediate_size", "intermediate_size", true, 1, LIMIT_FFN_WIDTH,
             &m->moe.intermediate_size);
}

/* DeepSeek sparse attention's indexer (deepseek_v32, glm_moe_dsa). */
static void hf_indexer(struct reader *r, const struct doc_node *c, struct model *m)
{
    read_int(r, c, "index_n_heads", "index_n_heads", true, 1, LIMIT_HEADS, &m->attention.indexer.heads);
    read_int(r, c, "index_head_dim", "index_head_dim", true, 1, LIMIT_WIDTH, &m->attention.indexer.head_dim);
    read_int(r, c, "index_topk", "index_topk", true, 1, LIMIT_CONTEXT, &m->attention.indexer.topk);
}

static bool hf_layers_fit_pattern(struct reader *r, const struct doc_node *at, const struct model *m)
{
    if (m->layers > MODEL_MAX_LAYER_PATTERN) {
        doc_error_at(&r->doc, at, "a hybrid model of %" PRId64 " layers; rackplan reads at most %d", m->layers,
                     MODEL_MAX_LAYER_PATTERN);
        return false;
    }
    return true;
}

/* IndexShare (GLM-5.x configs, vLLM's index_topk_freq): `indexer_types` ("full" runs the indexer,
 * "shared" reuses the previous
 * full layer's top-k), an `index_topk_pattern` string of F and S, or else the rule transformers
 * derives from `index_topk_freq` and `index_skip_topk_offset` (full when
 * max(i - offset + 1, 0) % freq == 0). Without any of them every layer is full. */
static void hf_indexer_sharing(struct reader *r, const struct doc_node *c, struct model *m)
{
    const struct doc_node *types = field(r, c, "indexer_types", "indexer_types", false);
    const struct doc_node *letters = field(r, c, "index_topk_pattern", "index_topk_pattern", false);
    int64_t freq = 1, offset = 2;
    read_int(r, c, "index_topk_freq", "index_topk_freq", false, 1, LIMIT_LAYERS, &freq);
    read_int(r, c, "index_skip_topk_offset", "index_skip_topk_offset", false, 0, LIMIT_LAYERS, &offset);
    if (!types && !letters && freq == 1)
        return;
    if (r->doc.errors || !hf_layers_fit_pattern(r, c, m))
        return;
    if (types && (types->kind != DOC_SEQ || (int64_t)types->count != m->layers)) {
        doc_error_at(&r->doc, types, "field 'indexer_types' must list one type for each of the %" PRId64 " layers",
                     m->layers);
        return;
    }
    if (!types && letters && (letters->kind != DOC_SCALAR || (int64_t)strlen(letters->text) != m->layers)) {
        doc_error_at(&r->doc, letters,
                     "field 'index_topk_pattern' must have one letter for each of the %" PRId64 " layers", m->layers);
        return;
    }
    m->pattern.length = (int)m->layers;
    for (int64_t i = 0; i < m->layers; i++) {
        bool shared;
        if (types) {
            const struct doc_node *t = types->items[i];
            if (t->kind != DOC_SCALAR || (strcmp(t->text, "full") != 0 && strcmp(t->text, "shared") != 0)) {
                doc_error_at(&r->doc, t, "items of 'indexer_types' must be full or shared");
                return;
            }
            shared = t->text[0] == 's';
        } else if (letters) {
            char letter = letters->text[i];
            if (letter != 'F' && letter != 'S') {
                doc_error_at(&r->doc, letters, "field 'index_topk_pattern' may hold only F (full) and S (shared)");
                return;
            }
            shared = letter == 'S';
        } else {
            int64_t from = i - offset + 1;
            shared = (from > 0 ? from : 0) % freq != 0;
        }
        m->pattern.shares_indexer[i] = shared;
    }
}

/* Gated DeltaNet layers of Qwen3-Next and Qwen3.5: `layer_types` (linear_attention or
 * full_attention per layer) or else every `full_attention_interval`-th layer full. */
static void hf_linear_attention(struct reader *r, const struct doc_node *c, struct model *m)
{
    read_mixer_fields(r, c, NULL, linear_fields, NULL, m);
    if (r->doc.errors || !hf_layers_fit_pattern(r, c, m))
        return;
    const struct doc_node *types = field(r, c, "layer_types", "layer_types", false);
    int64_t interval = 4; /* transformers' Qwen3NextConfig default */
    if (!types)
        read_int(r, c, "full_attention_interval", "full_attention_interval", false, 1, LIMIT_LAYERS, &interval);
    if (types && (types->kind != DOC_SEQ || (int64_t)types->count != m->layers)) {
        doc_error_at(&r->doc, types, "field 'layer_types' must list one type for each of the %" PRId64 " layers",
                     m->layers);
        return;
    }
    m->pattern.length = (int)m->layers;
    for (int64_t i = 0; i < m->layers; i++) {
        bool full = (i + 1) % interval == 0;
        if (types) {
            const struct doc_node *t = types->items[i];
            if (t->kind != DOC_SCALAR ||
                (strcmp(t->text, "linear_attention") != 0 && strcmp(t->text, "full_attention") != 0)) {
                doc_error_at(&r->doc, t,
                             "unsupported layer type (rackplan reads linear_attention and full_attention here)");
                return;
            }
            full = t->text[0] == 'f';
        }
        m->pattern.mixer[i] = full ? MIXER_ATTENTION : MIXER_LINEAR;
    }
}

/* Recurrent-state precision: Qwen3.5's `mamba_ssm_dtype`, Nemotron-H's `mamba_ssm_cache_dtype`. */
static void hf_state_precision(struct reader *r, const struct doc_node *c, const char *key, struct model *m)
{
    const struct doc_node *n = field(r, c, key, key, false);
    if (!n)
        return;
    if (n->kind == DOC_SCALAR && strcmp(n->text, "float32") == 0)
        m->state_precision = PREC_FP32;
    else if (n->kind == DOC_SCALAR && strcmp(n->text, "bfloat16") == 0)
        m->state_precision = PREC_BF16;
    else if (n->kind == DOC_SCALAR && strcmp(n->text, "float16") == 0)
        m->state_precision = PREC_FP16;
    else if (!(n->kind == DOC_SCALAR && strcmp(n->text, "auto") == 0))
        doc_error_at(&r->doc, n, "field '%s' must be float32, bfloat16, float16 or auto", key);
}

/* Qwen's `mlp_only_layers`: these layers have a dense FFN instead of the MoE. The layer pattern
 * already has an entry a layer. */
static void hf_mlp_only_layers(struct reader *r, const struct doc_node *c, struct model *m)
{
    const struct doc_node *list = field(r, c, "mlp_only_layers", "mlp_only_layers", false);
    if (!list)
        return;
    if (list->kind != DOC_SEQ) {
        doc_error_at(&r->doc, list, "field 'mlp_only_layers' must be a list of layer numbers");
        return;
    }
    for (size_t i = 0; i < list->count; i++) {
        const struct doc_node *item = list->items[i];
        char *end = NULL;
        long long layer = item->kind == DOC_SCALAR && !item->quoted ? strtoll(item->text, &end, 10) : -1;
        if (!end || *end != '\0' || layer < 0 || layer >= m->layers) {
            doc_error_at(&r->doc, item, "items of 'mlp_only_layers' must be layer numbers from 0 to %" PRId64,
                         m->layers - 1);
            return;
        }
        m->pattern.ffn[layer] = LAYER_FFN_DENSE;
    }
}

/* Qwen3-Next and Qwen3.5: gated full attention every few layers, Gated DeltaNet in between, an
 * MoE with one gated shared expert (or a dense FFN for Qwen3.5's dense models). */
static void hf_qwen3_hybrid(struct reader *r, const struct doc_node *c, bool moe, struct model *m)
{
    hf_common(r, c, m);
    hf_gqa(r, c, m);
    m->attention.qk_norm = true;
    m->attention.output_gate = true;
    read_bool(r, c, "attn_output_gate", "attn_output_gate", &m->attention.output_gate);
    read_int(r, c, "intermediate_size", "intermediate_size", !moe, 1, LIMIT_FFN_WIDTH, &m->ffn.intermediate_size);
    if (moe) {
        read_int(r, c, "num_experts", "num_experts", true, 1, LIMIT_EXPERTS, &m->moe.experts);
        read_int(r, c, "num_experts_per_tok", "num_experts_per_tok", true, 1, LIMIT_EXPERTS,
                 &m->moe.experts_per_token);
        read_int(r, c, "moe_intermediate_size", "moe_intermediate_size", true, 1, LIMIT_FFN_WIDTH,
                 &m->moe.intermediate_size);
        if (read_int(r, c, "shared_expert_intermediate_size", "shared_expert_intermediate_size", false, 0,
                     LIMIT_FFN_WIDTH, &m->moe.shared_intermediate_size) &&
            m->moe.shared_intermediate_size > 0) {
            m->moe.shared_experts = 1;
            m->moe.shared_expert_gate = true;
        }
        read_int(r, c, "decoder_sparse_step", "decoder_sparse_step", false, 1, LIMIT_LAYERS, &m->moe.interleave);
    }
    /* Qwen3-Next's checkpoints hold one mtp.* layer that its config does not declare; vLLM's
     * qwen3_next_mtp.py takes getattr(config, "num_nextn_predict_layers", 1) */
    m->mtp_layers = 1;
    if (!read_int(r, c, "mtp_num_hidden_layers", "mtp_num_hidden_layers", false, 0, 64, &m->mtp_layers))
        read_int(r, c, "num_nextn_predict_layers", "num_nextn_predict_layers", false, 0, 64, &m->mtp_layers);
    hf_state_precision(r, c, "mamba_ssm_dtype", m);
    if (r->doc.errors == 0)
        hf_linear_attention(r, c, m);
    if (r->doc.errors == 0 && moe)
        hf_mlp_only_layers(r, c, m);
}

/* Newer Nemotron-H configs (and transformers, saving one) list the blocks by name in
 * `layers_block_type` instead: spelt as hybrid_override_pattern's letters in `out`. Returns the
 * node, or NULL after an error. */
static const struct doc_node *hf_block_letters(struct reader *r, const struct doc_node *list, char *out)
{
    static const struct {
        const char *name;
        char letter;
    } blocks[] = {{"mamba", 'M'}, {"linear_attention", 'M'}, {"attention", '*'}, {"full_attention", '*'},
                  {"mlp", '-'}, {"moe", 'E'}};
    if (list->kind != DOC_SEQ || list->count == 0 || list->count > MODEL_MAX_LAYER_PATTERN) {
        doc_error_at(&r->doc, list, "field 'layers_block_type' must be a list of 1 to %d block types",
                     MODEL_MAX_LAYER_PATTERN);
        return NULL;
    }
    for (size_t i = 0; i < list->count; i++) {
        const struct doc_node *item = list->items[i];
        out[i] = 0;
        for (size_t k = 0; item->kind == DOC_SCALAR && k < sizeof blocks / sizeof blocks[0]; k++)
            if (strcmp(item->text, blocks[k].name) == 0)
                out[i] = blocks[k].letter;
        if (!out[i]) {
            doc_error_at(&r->doc, item, "items of 'layers_block_type' must be mamba, attention, mlp or moe");
            return NULL;
        }
    }
    out[list->count] = 0;
    return list;
}

/* Nemotron-H: one block per layer, its kind a letter of `hybrid_override_pattern`: M Mamba-2,
 * * attention, - MLP (up and down projections, squared ReLU), E MoE. */
static void hf_nemotron_h(struct reader *r, const struct doc_node *c, struct model *m)
{
    char letters_of_blocks[MODEL_MAX_LAYER_PATTERN + 1];
    const char *text = NULL;
    const struct doc_node *pattern = field(r, c, "hybrid_override_pattern", "hybrid_override_pattern", false);
    const struct doc_node *blocks = pattern ? NULL : field(r, c, "layers_block_type", "layers_block_type", false);
    if (pattern) {
        if (pattern->kind != DOC_SCALAR || pattern->text[0] == '\0') {
            doc_error_at(&r->doc, pattern, "field 'hybrid_override_pattern' must be a string of M, *, - and E");
            return;
        }
        text = pattern->text;
    } else if (blocks) {
        if (!(pattern = hf_block_letters(r, blocks, letters_of_blocks)))
            return;
        text = letters_of_blocks;
    } else {
        doc_error_at(&r->doc, c,
                     "missing field 'hybrid_override_pattern' (or 'layers_block_type'): the kind of each block");
        return;
    }
    const char *pattern_name = blocks ? "layers_block_type" : "hybrid_override_pattern";
    int64_t letters = (int64_t)strlen(text);
    if (!read_int(r, c, "num_hidden_layers", "num_hidden_layers", false, 1, LIMIT_LAYERS, &m->layers))
        m->layers = letters;
    if (m->layers != letters) {
        doc_error_at(&r->doc, pattern, "field '%s' has %" PRId64 " blocks but num_hidden_layers is %" PRId64,
                     pattern_name, letters, m->layers);
        return;
    }
    read_int(r, c, "hidden_size", "hidden_size", true, 1, LIMIT_WIDTH, &m->hidden_size);
    read_int(r, c, "vocab_size", "vocab_size", true, 1, LIMIT_VOCAB, &m->vocab_size);
    read_bool(r, c, "tie_word_embeddings", "tie_word_embeddings", &m->tie_embeddings);
    read_int(r, c, "max_position_embeddings", "max_position_embeddings", false, 0, LIMIT_CONTEXT, &m->max_context);
    read_int(r, c, "num_attention_heads", "num_attention_heads", true, 1, LIMIT_HEADS, &m->attention.heads);
    hf_gqa(r, c, m);
    if (!doc_get(c, "head_dim") && doc_get(c, "attention_head_dim")) /* the older remote-code name */
        read_int(r, c, "attention_head_dim", "attention_head_dim", true, 1, LIMIT_WIDTH, &m->attention.head_dim);
    m->mamba.groups = 8; /* transformers' NemotronHConfig n_groups default */
    read_mixer_fields(r, c, NULL, mamba_fields, NULL, m);
    read_bool(r, c, "use_conv_bias", "use_conv_bias", &m->mamba.conv_bias);
    read_bool(r, c, "use_bias", "use_bias", &m->mamba.bias);
    hf_state_precision(r, c, "mamba_ssm_cache_dtype", m);
    m->ffn.gated = false; /* NemotronHMLP and its experts: up_proj, relu2, down_proj */
    read_bool(r, c, "mlp_bias", "mlp_bias", &m->ffn.bias);
    bool moe = strchr(text, 'E') != NULL, mlp = strchr(text, '-') != NULL;
    if (mlp)
        read_int(r, c, "intermediate_size", "intermediate_size", true, 1, LIMIT_FFN_WIDTH, &m->ffn.intermediate_size);
    if (moe) {
        read_int(r, c, "n_routed_experts", "n_routed_experts", true, 1, LIMIT_EXPERTS, &m->moe.experts);
        read_int(r, c, "num_experts_per_tok", "num_experts_per_tok", true, 1, LIMIT_EXPERTS, &m->moe.experts_per_token);
        read_int(r, c, "moe_intermediate_size", "moe_intermediate_size", true, 1, LIMIT_FFN_WIDTH,
                 &m->moe.intermediate_size);
        read_int(r, c, "n_shared_experts", "n_shared_experts", false, 0, 1024, &m->moe.shared_experts);
        read_int(r, c, "moe_shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", false, 1,
                 LIMIT_FFN_WIDTH, &m->moe.shared_intermediate_size);
        read_int(r, c, "n_group", "n_group", false, 1, LIMIT_EXPERTS, &m->moe.groups);
        read_int(r, c, "topk_group", "topk_group", false, 1, LIMIT_EXPERTS, &m->moe.groups_per_token);
        m->moe.router_bias = true; /* NemotronHTopkRouter's e_score_correction_bias */
        const struct doc_node *latent = field(r, c, "moe_latent_size", "moe_latent_size", false);
        if (latent)
            doc_error_at(&r->doc, latent,
                         "field 'moe_latent_size' (experts in a latent space, Nemotron 3 Super) "
                         "is not supported");
    }
    read_int(r, c, "num_nextn_predict_layers", "num_nextn_predict_layers", false, 0, 64, &m->mtp_layers);
    if (r->doc.errors || !hf_layers_fit_pattern(r, pattern, m))
        return;
    m->pattern.length = (int)m->layers;
    for (int64_t i = 0; i < m->layers; i++) {
        char letter = text[i];
        const char *kinds = "M*-E";
        if (!strchr(kinds, letter)) {
            doc_error_at(&r->doc, pattern,
                         "field 'hybrid_override_pattern' has '%c' at layer %" PRId64
                         "; rackplan reads M (Mamba-2), * (attention), - (MLP) and E (MoE)",
                         letter, i);
            return;
        }
        m->pattern.mixer[i] = letter == 'M' ? MIXER_MAMBA : letter == '*' ? MIXER_ATTENTION : MIXER_NONE;
        m->pattern.ffn[i] = letter == '-' ? LAYER_FFN_DENSE : letter == 'E' ? LAYER_FFN_MOE : LAYER_FFN_NONE;
    }
}

static void read_hf(struct reader *r, const struct doc_node *root, struct model *m)
{
    const struct doc_node *type_node = doc_get(root, "model_type");
    if (!type_node || type_node->kind != DOC_SCALAR) {
        doc_error_at(&r->doc, type_node ? type_node : root,
                     "not a rackplan model spec, and no 'model_type' to read it as a Hugging Face config.json");
        return;
    }
    const char *type = type_node->text;
    const struct doc_node *c = root;
    hf_precision(root, m);
    hf_name(root, r->doc.path, type, m->name, sizeof m->name);
    snprintf(m->source, sizeof m->source, "%s", r->doc.path);

    if (strcmp(type, "deepseek_v3") == 0 || strcmp(type, "deepseek_v2") == 0 ||
        strcmp(type, "kimi_k2") == 0 || strcmp(type, "deepseek_v32") == 0 || strcmp(type, "glm_moe_dsa") == 0) {
        hf_common(r, c, m);
        hf_mla(r, c, m);
        hf_deepseek_moe(r, c, m);
        read_int(r, c, "num_nextn_predict_layers", "num_nextn_predict_layers", false, 0, 64, &m->mtp_layers);
        if (strcmp(type, "deepseek_v32") == 0 || strcmp(type, "glm_moe_dsa") == 0)
            hf_indexer(r, c, m);
        if (strcmp(type, "glm_moe_dsa") == 0 && r->doc.errors == 0)
            hf_indexer_sharing(r, c, m);
    } else if (strcmp(type, "qwen3_next") == 0) {
        hf_qwen3_hybrid(r, c, true, m);
    } else if (strcmp(type, "qwen3_5_moe") == 0 || strcmp(type, "qwen3_5") == 0 ||
               strcmp(type, "qwen3_5_moe_text") == 0 || strcmp(type, "qwen3_5_text") == 0) {
        if (!strstr(type, "_text")) {
            /* Qwen3.5 keeps tie_word_embeddings beside text_config, not in it */
            read_bool(r, root, "tie_word_embeddings", "tie_word_embeddings", &m->tie_embeddings);
            c = read_map(r, root, "text_config", "text_config", true);
            if (!c)
                return;
        }
        hf_qwen3_hybrid(r, c, strstr(type, "moe") != NULL, m);
    } else if (strcmp(type, "nemotron_h") == 0) {
        hf_nemotron_h(r, c, m);
    } else if (strcmp(type, "glm4_moe") == 0) {
        hf_common(r, c, m);
        hf_gqa(r, c, m);
        hf_deepseek_moe(r, c, m);
        m->moe.router_bias = true; /* Glm4MoeTopkRouter always has e_score_correction_bias */
        read_int(r, c, "num_nextn_predict_layers", "num_nextn_predict_layers", false, 0, 64, &m->mtp_layers);
        read_bool(r, c, "use_qk_norm", "use_qk_norm", &m->attention.qk_norm);
    } else if (strcmp(type, "qwen3") == 0 || strcmp(type, "qwen3_moe") == 0) {
        hf_common(r, c, m);
        hf_gqa(r, c, m);
        m->attention.qk_norm = true;
        read_int(r, c, "intermediate_size", "intermediate_size", true, 1, LIMIT_FFN_WIDTH,
                 &m->ffn.intermediate_size);
        if (strcmp(type, "qwen3_moe") == 0) {
            read_int(r, c, "num_experts", "num_experts", true, 1, LIMIT_EXPERTS, &m->moe.experts);
            read_int(r, c, "num_experts_per_tok", "num_experts_per_tok", true, 1, LIMIT_EXPERTS,
                     &m->moe.experts_per_token);
            read_int(r, c, "moe_intermediate_size", "moe_intermediate_size", true, 1,
                     LIMIT_FFN_WIDTH, &m->moe.intermediate_size);
            read_int(r, c, "decoder_sparse_step", "decoder_sparse_step", false, 1, LIMIT_LAYERS,
                     &m->moe.interleave);
            const struct doc_node *mlp_only = doc_get(c, "mlp_only_layers");
            if (mlp_only && mlp_only->kind == DOC_SEQ && mlp_only->count > 0)
                doc_error_at(&r->doc, mlp_only,
                             "field 'mlp_only_layers' is not supported (rackplan needs the dense layers to be a "
                             "leading block or an interleave)");
        }
        bool sliding = false;
        read_bool(r, c, "use_sliding_window", "use_sliding_window", &sliding);
        if (sliding)
            doc_error_at(
                &r->doc, doc_get(c, "use_sliding_window"),
                "field 'use_sliding_window' true is not supported for qwen3; write a model spec with attention.window");
    } else if (strcmp(type, "llama") == 0) {
        hf_common(r, c, m);
        hf_gqa(r, c, m);
        read_int(r, c, "intermediate_size", "intermediate_size", true, 1, LIMIT_FFN_WIDTH,
                 &m->ffn.intermediate_size);
        read_bool(r, c, "mlp_bias", "mlp_bias", &m->ffn.bias);
    } else if (strcmp(type, "mixtral") == 0) {
        hf_common(r, c, m);
        hf_gqa(r, c, m);
        hf_local_experts(r, c, m);
        int64_t window = 0;
        if (read_int(r, c, "sliding_window", "sliding_window", false, 1, LIMIT_CONTEXT, &window)) {
            m->attention.window_kind = WINDOW_SLIDING;
            m->attention.window_tokens = window;
            m->attention.window_pattern[0] = 1;
            m->attention.window_pattern_length = 1;
        }
    } else if (strcmp(type, "gpt_oss") == 0) {
        hf_common(r, c, m);
        hf_gqa(r, c, m);
        m->attention.output_bias = m->attention.bias;
        m->attention.sinks = true;
        m->ffn.bias = true;
        m->moe.router_bias = true;
        hf_local_experts(r, c, m);
        if (read_int(r, c, "sliding_window", "sliding_window", false, 1, LIMIT_CONTEXT,
                     &m->attention.window_tokens)) {
            m->attention.window_kind = WINDOW_SLIDING;
            const struct doc_node *types = doc_get(c, "layer_types");
            if (types && r->doc.errors == 0)
                hf_layer_types(r, types, m);
            else if (!types) {
                m->attention.window_pattern[0] = 1; /* transformers' default: even layers slide */
                m->attention.window_pattern[1] = 0;
                m->attention.window_pattern_length = 2;
            }
        }
    } else if (strcmp(type, "llama4") == 0 || strcmp(type, "llama4_text") == 0) {
        if (strcmp(type, "llama4") == 0) {
            c = read_map(r, root, "text_config", "text_config", true);
            if (!c)
                return;
        }
        hf_common(r, c, m);
        hf_gqa(r, c, m);
        read_bool(r, c, "use_qk_norm", "use_qk_norm", &m->attention.qk_norm);
        hf_local_experts(r, c, m);
        read_int(r, c, "intermediate_size_mlp", "intermediate_size_mlp", true, 1, LIMIT_FFN_WIDTH,
                 &m->ffn.intermediate_size);
        read_int(r, c, "interleave_moe_layer_step", "interleave_moe_layer_step", false, 1,
                 LIMIT_LAYERS, &m->moe.interleave);
        m->moe.shared_experts = 1; /* Llama 4 MoE layers always add one shared expert */
        int64_t chunk = 0;
        if (read_int(r, c, "attention_chunk_size", "attention_chunk_size", false, 1,
                     LIMIT_CONTEXT, &chunk)) {
            /* RoPE layers attend within chunks; every 4th layer (NoPE) attends to everything. */
            m->attention.window_kind = WINDOW_CHUNKED;
            m->attention.window_tokens = chunk;
            const struct doc_node *no_rope = doc_get(c, "no_rope_layers");
            if (no_rope && no_rope->kind == DOC_SEQ && (int64_t)no_rope->count == m->layers &&
                no_rope->count > 0) {
                size_t period = 4;
                for (size_t i = 0; i < no_rope->count; i++) {
                    bool rope = strcmp(no_rope->items[i]->text, "0") != 0;
                    bool expected = (i + 1) % period != 0;
                    if (rope != expected) {
                        doc_error_at(
                            &r->doc, no_rope->items[i],
                            "field 'no_rope_layers' is not every 4th layer; rackplan needs a repeating pattern");
                        return;
                    }
                }
            }
            int pattern[] = {1, 1, 1, 0};
            memcpy(m->attention.window_pattern, pattern, sizeof pattern);
            m->attention.window_pattern_length = 4;
        }
    } else {
        doc_error_at(&r->doc, type_node,
                     "unsupported model_type '%s': rackplan reads %s; for another architecture write a "
                     "model spec (schemas/model.schema.yaml)",
                     type, hf_supported);
        return;
    }
    if (m->moe.experts == 0) {
        memset(&m->moe, 0, sizeof m->moe);
        m->moe.interleave = 1;
        m->moe.groups = 1;
        m->moe.groups_per_token = 1;
    }
}

static bool looks_like_hf_config(const struct doc_node *root)
{
    return doc_get(root, "model_type") != NULL || doc_get(root, "architectures") != NULL ||
           doc_get(root, "num_hidden_layers") != NULL;
}

static enum model_status read_doc(const struct doc *doc, struct model *out, struct diags *d)
{
    struct reader r = {.doc = {.path = doc->path, .diags = d}};
    const struct doc_node *root = doc->root;
    if (root->kind != DOC_MAP) {
        doc_error_at(&r.doc, root, "a model must be a mapping, not %s", doc_kind_name(root));
        return MODEL_INVALID;
    }
    struct model m;
    set_defaults(&m);
    if (looks_like_hf_config(root))
        read_hf(&r, root, &m);
    else
        read_spec(&r, root, &m);
    if (r.doc.errors == 0)
        check_model(&r, root, &m);
    if (r.doc.errors)
        return MODEL_INVALID;
    *out = m;
    return MODEL_OK;
}

enum model_status model_load(const char *path, struct model *out, struct diags *d)
{
    struct doc *doc;
    int loaded = doc_load(path, &doc, d);
    if (loaded == DOC_IO_ERROR)
        return MODEL_IO_ERROR;
    if (loaded < 0)
        return MODEL_INVALID;
    enum model_status status = read_doc(doc, out, d);
    doc_free(doc);
    return status;
}

enum model_status model_load_buffer(const char *path, const char *data, size_t size,
                                    struct model *out, struct diags *d)
{
    struct doc *doc;
    if (doc_load_buffer(path, data, size, &doc, d) < 0)
        return MODEL_INVALID;
    enum model_status status = read_doc(doc, out, d);
    doc_free(doc);
    return status;
}
