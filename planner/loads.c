/* loads.c: see loads.h. */
#include "loads.h"

#include "doc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A token count in a logical_count: a plain number, finite, not negative, at most 10^15. */
static bool count_value(const char *path, const struct doc_node *n, double *out, struct diags *d)
{
    char *after = NULL;
    errno = 0;
    double v = n->kind == DOC_SCALAR && !n->quoted && n->text[0] ? strtod(n->text, &after) : NAN;
    if (!after || *after != '\0' || errno == ERANGE || !isfinite(v)) {
        diags_add(d, path, n->line, n->col, "expected a token count, not %s",
                  n->kind == DOC_SCALAR ? n->text : doc_kind_name(n));
        return false;
    }
    if (v < 0) {
        diags_add(d, path, n->line, n->col, "token count %s is negative", n->text);
        return false;
    }
    if (v > LOADS_MAX_TOKENS) {
        diags_add(d, path, n->line, n->col, "token count %s is above 10^15, more than any trace holds", n->text);
        return false;
    }
    *out = v;
    return true;
}

/* Adds one layers x experts slice of a logical_count into `sum` (allocated by the first
 * slice, which sets the shape). */
static bool add_slice(const char *path, const struct doc_node *slice, int64_t *layers, int64_t *experts,
                      double **sum, int **lines, int **columns, struct diags *d)
{
    if (slice->kind != DOC_SEQ || slice->count == 0) {
        diags_add(d, path, slice->line, slice->col, "logical_count: expected a list of layers, each a list of "
                                                    "token counts an expert, not %s", doc_kind_name(slice));
        return false;
    }
    if (!*sum) {
        const struct doc_node *first = slice->items[0];
        if (first->kind != DOC_SEQ || first->count == 0) {
            diags_add(d, path, first->line, first->col, "logical_count: a layer is a list of token counts an "
                                                        "expert, not %s", doc_kind_name(first));
            return false;
        }
        *layers = (int64_t)slice->count;
        *experts = (int64_t)first->count;
        if (*layers * *experts > LOADS_MAX_CELLS) {
            diags_add(d, path, slice->line, slice->col, "more than %d values", LOADS_MAX_CELLS);
            return false;
        }
        *sum = xcalloc((size_t)(*layers * *experts), sizeof **sum);
        *lines = xmalloc((size_t)*layers * sizeof **lines);
        *columns = xmalloc((size_t)*layers * sizeof **columns);
        for (int64_t i = 0; i < *layers; i++) {
            (*lines)[i] = slice->items[i]->line;
            (*columns)[i] = slice->items[i]->col;
        }
    }
    if ((int64_t)slice->count != *layers) {
        diags_add(d, path, slice->line, slice->col, "logical_count: %zu layers here, %lld in the first",
                  slice->count, (long long)*layers);
        return false;
    }
    for (int64_t i = 0; i < *layers; i++) {
        const struct doc_node *row = slice->items[i];
        if (row->kind != DOC_SEQ || (int64_t)row->count != *experts) {
            diags_add(d, path, row->line, row->col, "logical_count: a layer of %lld experts was expected, not %s",
                      (long long)*experts, row->kind == DOC_SEQ ? "a different count" : doc_kind_name(row));
            return false;
        }
        for (int64_t e = 0; e < *experts; e++) {
            double v;
            if (!count_value(path, row->items[e], &v, d))
                return false;
            (*sum)[i * *experts + e] += v;
        }
    }
    return true;
}

/* SGLang's logical_count: layers x experts, or N x layers x experts summed over N. */
static enum loads_status read_logical_count(const char *path, const char *data, size_t size,
                                            struct loads *out, struct diags *d)
{
    struct doc *doc;
    if (doc_load_buffer(path, data, size, &doc, d) != 0)
        return LOADS_INVALID;
    const struct doc_node *count = doc_get(doc->root, "logical_count");
    if (!count) {
        diags_add(d, path, doc->root->line, doc->root->col,
                  "a JSON loads file holds logical_count (layers x experts token counts, as SGLang "
                  "records them); this one does not");
        doc_free(doc);
        return LOADS_INVALID;
    }
    int64_t layers = 0, experts = 0;
    double *sum = NULL;
    int *lines = NULL, *columns = NULL;
    bool ok = count->kind == DOC_SEQ && count->count > 0;
    if (!ok)
        diags_add(d, path, count->line, count->col, "logical_count: expected a list of layers, not %s",
                  doc_kind_name(count));
    bool stacked = ok && count->items[0]->kind == DOC_SEQ && count->items[0]->count > 0 &&
                   count->items[0]->items[0]->kind == DOC_SEQ;
    if (ok && stacked) {
        for (size_t i = 0; i < count->count && ok; i++)
            ok = add_slice(path, count->items[i], &layers, &experts, &sum, &lines, &columns, d);
    } else if (ok) {
        ok = add_slice(path, count, &layers, &experts, &sum, &lines, &columns, d);
    }
    doc_free(doc);
    if (!ok) {
        free(sum);
        free(lines);
        free(columns);
        return LOADS_INVALID;
    }
    *out = (struct loads){.layers = layers, .experts = experts, .tokens = sum, .lines = lines,
                          .columns = columns, .model_layers = true};
    return LOADS_OK;
}

static bool looks_like_json(const char *data, size_t size)
{
    size_t i = 0;
    while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    return i < size && data[i] == '{';
}

enum loads_status loads_read_buffer(const char *path, const char *data, size_t size,
                                    struct loads *out, struct diags *d)
{
    if (size > LOADS_MAX_BYTES) {
        diags_add(d, path, 0, 0, "file is larger than %u MiB", LOADS_MAX_BYTES >> 20);
        return LOADS_INVALID;
    }
    if (looks_like_json(data, size))
        return read_logical_count(path, data, size, out, d);
    const char *nul = memchr(data, '\0', size);
    if (nul) { /* it would end the field it is in silently */
        int line = 1, col = 1;
        text_position(data, nul, &line, &col);
        diags_add(d, path, line, col, "a NUL byte: not a CSV of token counts");
        return LOADS_INVALID;
    }
    size_t cap = 1024, count = 0, lines_cap = 64;
    double *values = xmalloc(cap * sizeof *values);
    int *lines = xmalloc(lines_cap * sizeof *lines);
    int64_t columns = -1, rows = 0;
    int line = 0;
    const char *p = data, *end = data + size;
    enum loads_status status = LOADS_OK;
    while (p < end && status == LOADS_OK) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        line++;
        const char *stop = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        const char *q = p;
        while (q < stop && (*q == ' ' || *q == '\t'))
            q++;
        if (q == stop) { /* a blank line */
            p = eol + 1;
            continue;
        }
        int64_t fields = 0;
        double row_sum = 0;
        for (;;) {
            const char *field = q;
            while (q < stop && (*q == ' ' || *q == '\t'))
                q++;
            char text[64];
            size_t n = 0;
            while (q < stop && *q != ',' && n + 1 < sizeof text)
                text[n++] = *q++;
            text[n] = '\0';
            if (q < stop && *q != ',') {
                diags_add(d, path, line, (int)(field - p) + 1, "a value longer than %zu characters",
                          sizeof text - 1);
                status = LOADS_INVALID;
                break;
            }
            while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
                text[--n] = '\0';
            int col = (int)(field - p) + 1;
            char *after;
            errno = 0;
            double v = n ? strtod(text, &after) : NAN;
            if (n == 0 || *after != '\0' || errno == ERANGE || !isfinite(v)) {
                diags_add(d, path, line, col,
                          n == 0 ? "empty field: expected a token count"
                                 : "expected a token count, not '%s' (load files have no header)",
                          text);
                status = LOADS_INVALID;
                break;
            }
            if (v < 0) {
                diags_add(d, path, line, col, "token count %s is negative", text);
                status = LOADS_INVALID;
                break;
            }
            if (v > LOADS_MAX_TOKENS) {
                diags_add(d, path, line, col, "token count %s is above 10^15, more than any trace holds", text);
                status = LOADS_INVALID;
                break;
            }
            if (count == cap) {
                cap *= 2;
                values = xrealloc(values, cap * sizeof *values);
            }
            if (count >= LOADS_MAX_CELLS) {
                diags_add(d, path, line, col, "more than %d values", LOADS_MAX_CELLS);
                status = LOADS_INVALID;
                break;
            }
            values[count++] = v;
            row_sum += v;
            fields++;
            if (q < stop && *q == ',') {
                q++;
                continue;
            }
            break;
        }
        if (status != LOADS_OK)
            break;
        if (columns < 0) {
            columns = fields;
        } else if (fields != columns) {
            diags_add(d, path, line, (int)(stop - p) + 1,
                      "row has %lld values; the first row has %lld", (long long)fields,
                      (long long)columns);
            status = LOADS_INVALID;
            break;
        }
        if (row_sum == 0) {
            diags_add(d, path, line, 1, "every token count of the row is 0; every token passes every MoE layer, "
                                        "so each layer routes some");
            status = LOADS_INVALID;
            break;
        }
        if ((size_t)rows == lines_cap) {
            lines_cap *= 2;
            lines = xrealloc(lines, lines_cap * sizeof *lines);
        }
        lines[rows++] = line;
        p = eol + 1;
    }
    if (status == LOADS_OK && rows == 0) {
        diags_add(d, path, 0, 0, "no rows of expert loads");
        status = LOADS_INVALID;
    }
    if (status != LOADS_OK) {
        free(values);
        free(lines);
        return status;
    }
    *out = (struct loads){.layers = rows, .experts = columns, .tokens = values, .lines = lines};
    return LOADS_OK;
}

enum loads_status loads_read(const char *path, struct loads *out, struct diags *d)
{
    char *data;
    size_t size;
    if (file_read_all(path, LOADS_MAX_BYTES, &data, &size, d) < 0)
        return LOADS_IO_ERROR;
    enum loads_status status = loads_read_buffer(path, data, size, out, d);
    free(data);
    return status;
}

void loads_release(struct loads *l)
{
    if (!l)
        return;
    free(l->tokens);
    free(l->lines);
    free(l->columns);
    memset(l, 0, sizeof *l);
}

void loads_uniform(const struct model *m, double tokens, struct loads *out)
{
    int64_t layers = model_moe_layers(m), experts = m->moe.experts;
    out->layers = layers;
    out->experts = experts;
    out->tokens = xmalloc((size_t)(layers * experts > 0 ? layers * experts : 1) * sizeof *out->tokens);
    for (int64_t i = 0; i < layers * experts; i++)
        out->tokens[i] = tokens;
}

/* A logical_count's rows, one a model layer, down to the MoE layers' rows. */
static enum loads_status drop_dense_rows(struct loads *l, const struct model *m, const char *path,
                                         struct diags *d)
{
    if (l->layers != m->layers) {
        diags_add(d, path, l->lines[0], l->columns[0],
                  "logical_count has %lld layers; %s has %lld (one row a model layer, dense ones all zero, "
                  "as SGLang records them)",
                  (long long)l->layers, m->name, (long long)m->layers);
        return LOADS_INVALID;
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < l->layers; i++) {
        double sum = 0;
        for (int64_t e = 0; e < l->experts; e++)
            sum += loads_at(l, i, e);
        bool moe = model_layer_is_moe(m, i);
        if (!moe && sum > 0) {
            diags_add(d, path, l->lines[i], l->columns[i], "layer %lld of %s is dense, yet %g tokens are routed in it",
                      (long long)i, m->name, sum);
            return LOADS_INVALID;
        }
        if (moe && sum == 0) {
            diags_add(d, path, l->lines[i], l->columns[i], "every token count of MoE layer %lld is 0; every token passes "
                                               "every MoE layer, so each layer routes some", (long long)i);
            return LOADS_INVALID;
        }
        if (!moe)
            continue;
        memmove(l->tokens + kept * l->experts, l->tokens + i * l->experts, (size_t)l->experts * sizeof *l->tokens);
        l->lines[kept] = l->lines[i];
        l->columns[kept++] = l->columns[i];
    }
    l->layers = kept;
    l->model_layers = false;
    return LOADS_OK;
}

enum loads_status loads_check_model(struct loads *l, const struct model *m, const char *path,
                                    struct diags *d)
{
    int64_t layers = model_moe_layers(m);
    if (l->model_layers && l->experts == m->moe.experts)
        return drop_dense_rows(l, m, path, d);
    if (l->layers == layers && l->experts == m->moe.experts)
        return LOADS_OK;
    /* Point at the first row too many, the line after the last row when rows are missing, and
     * the first row when the width is wrong. */
    int line = 0;
    if (l->lines && l->layers > layers)
        line = l->lines[layers];
    else if (l->lines && l->layers < layers)
        line = l->lines[l->layers - 1] + 1;
    else if (l->lines)
        line = l->lines[0];
    int column = line ? 1 : 0;
    if (l->columns) { /* a logical_count's rows share lines: its first row, where it stands */
        line = l->lines[0];
        column = l->columns[0];
    }
    diags_add(d, path, line, column,
              "the loads are %lld layers x %lld experts; %s has %lld MoE layers x %lld experts",
              (long long)l->layers, (long long)l->experts, m->name, (long long)layers,
              (long long)m->moe.experts);
    return LOADS_INVALID;
}
