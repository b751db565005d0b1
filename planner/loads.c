/* loads.c: see loads.h. */
#include "loads.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum loads_status loads_read_buffer(const char *path, const char *data, size_t size,
                                    struct loads *out, struct diags *d)
{
    if (size > LOADS_MAX_BYTES) {
        diags_add(d, path, 0, 0, "file is larger than %u MiB", LOADS_MAX_BYTES >> 20);
        return LOADS_INVALID;
    }
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

enum loads_status loads_check_model(const struct loads *l, const struct model *m,
                                    const char *path, struct diags *d)
{
    int64_t layers = model_moe_layers(m);
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
    diags_add(d, path, line, line ? 1 : 0,
              "the loads are %lld layers x %lld experts; %s has %lld MoE layers x %lld experts",
              (long long)l->layers, (long long)l->experts, m->name, (long long)layers,
              (long long)m->moe.experts);
    return LOADS_INVALID;
}
