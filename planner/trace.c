/* trace.c: see trace.h. The only file that includes zlib.h. */
#include "trace.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define LINE_MAX_BYTES 65536
/* A row as kept until the matrix's size is known: layer, token, line, then the k experts. */
#define ROW_HEAD 3

struct row {
    int64_t layer, token;
    int32_t experts[64];
};

/* Parses one unsigned integer field at *p; returns false when there is none or it has more than
 * 18 significant digits (beyond any range a trace accepts). By hand rather than strtoll: a trace
 * holds millions of fields and this is most of its reading. */
static bool field(const char **p, int64_t *out)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    if (*s < '0' || *s > '9')
        return false;
    int64_t v = 0;
    int significant = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        significant += v > 0 || *s != '0';
        if (significant > 18)
            return false;
        v = v * 10 + (*s - '0');
    }
    while (*s == ' ' || *s == '\r' || *s == '\n')
        s++;
    *out = v;
    *p = s;
    return true;
}

static enum trace_status header(const char *path, const char *line, int64_t *k, struct diags *d)
{
    if (strncmp(line, "layer,token", 11) != 0) {
        diags_add(d, path, 1, 1, "the first line must be the header 'layer,token,e0,...,e{k-1}'");
        return TRACE_INVALID;
    }
    const char *p = line + 11;
    *k = 0;
    while (*p == ',') {
        char name[24];
        snprintf(name, sizeof name, "e%lld", (long long)*k);
        size_t n = strlen(name);
        if (strncmp(p + 1, name, n) != 0 || (p[1 + n] != ',' && p[1 + n] != '\0' && p[1 + n] != '\n' &&
                                             p[1 + n] != '\r')) {
            diags_add(d, path, 1, (int)(p - line) + 2, "expected column '%s'", name);
            return TRACE_INVALID;
        }
        p += 1 + n;
        (*k)++;
    }
    if (*k == 0 || *k > 64) {
        diags_add(d, path, 1, 1, "the header names %lld expert columns; 1 to 64 are supported", (long long)*k);
        return TRACE_INVALID;
    }
    return TRACE_OK;
}

enum trace_status trace_read(const char *path, int64_t experts, struct trace *out, struct diags *d)
{
    gzFile file = gzopen(path, "rb");
    if (!file) {
        diags_add(d, path, 0, 0, "unable to open: %s", strerror(errno ? errno : ENOMEM));
        return TRACE_IO_ERROR;
    }
    char *line = xmalloc(LINE_MAX_BYTES);
    enum trace_status status = TRACE_OK;
    int64_t k = 0;
    if (!gzgets(file, line, LINE_MAX_BYTES)) {
        diags_add(d, path, 0, 0, "the trace is empty");
        status = TRACE_INVALID;
    } else {
        status = header(path, line, &k, d);
    }
    size_t cap = 0, count = 0;
    int32_t *rows = NULL; /* packed: layer, token, k experts */
    int64_t layers = 0, tokens = 0;
    int line_number = 1;
    while (status == TRACE_OK && gzgets(file, line, LINE_MAX_BYTES)) {
        if (line_number == INT_MAX) { /* blank lines count too, and a gzip holds billions */
            diags_add(d, path, line_number, 1, "more than %d lines", INT_MAX);
            status = TRACE_INVALID;
            break;
        }
        line_number++;
        size_t length = strlen(line);
        if (length == LINE_MAX_BYTES - 1 && line[length - 1] != '\n') {
            diags_add(d, path, line_number, 1, "a line longer than %d bytes", LINE_MAX_BYTES - 1);
            status = TRACE_INVALID;
            break;
        }
        if (line[0] == '\n' || line[0] == '\r' || line[0] == '\0')
            continue;
        struct row r;
        const char *p = line;
        int64_t value;
        for (int64_t c = 0; c < k + 2 && status == TRACE_OK; c++) {
            int col = (int)(p - line) + 1;
            if (!field(&p, &value) || (c < k + 1 && *p != ',') || (c == k + 1 && *p != '\0')) {
                diags_add(d, path, line_number, col, "expected %lld whole numbers: layer, token and %lld experts",
                          (long long)(k + 2), (long long)k);
                status = TRACE_INVALID;
                break;
            }
            if (c < k + 1)
                p++;
            if (c == 0)
                r.layer = value;
            else if (c == 1)
                r.token = value;
            else if (value >= experts) {
                diags_add(d, path, line_number, col, "expert %lld is beyond the model's %lld experts",
                          (long long)value, (long long)experts);
                status = TRACE_INVALID;
            } else {
                for (int64_t e = 0; e < c - 2; e++) {
                    if (r.experts[e] == value) {
                        diags_add(d, path, line_number, col, "expert %lld appears twice in one row", (long long)value);
                        status = TRACE_INVALID;
                    }
                }
                r.experts[c - 2] = (int32_t)value;
            }
        }
        if (status != TRACE_OK)
            break;
        if (r.layer >= 100000 || r.token >= 100000000) {
            diags_add(d, path, line_number, 1, "layer %lld or token %lld is out of range", (long long)r.layer,
                      (long long)r.token);
            status = TRACE_INVALID;
            break;
        }
        layers = r.layer + 1 > layers ? r.layer + 1 : layers;
        tokens = r.token + 1 > tokens ? r.token + 1 : tokens;
        if ((double)layers * (double)tokens * (double)k > TRACE_MAX_ENTRIES) {
            diags_add(d, path, line_number, 1, "more than %d routing entries", TRACE_MAX_ENTRIES);
            status = TRACE_INVALID;
            break;
        }
        /* Repeated rows would otherwise grow the list without bound (a small gzip can hold
         * billions); more rows than cells means some (layer, token) repeats. */
        if ((double)(count + 1) * (double)k > TRACE_MAX_ENTRIES) {
            diags_add(d, path, line_number, 1, "more than %d routing entries", TRACE_MAX_ENTRIES);
            status = TRACE_INVALID;
            break;
        }
        if (count == cap) {
            cap = cap ? 2 * cap : 65536;
            rows = xrealloc(rows, cap * (size_t)(k + ROW_HEAD) * sizeof *rows);
        }
        int32_t *packed = rows + count * (size_t)(k + ROW_HEAD);
        packed[0] = (int32_t)r.layer;
        packed[1] = (int32_t)r.token;
        packed[2] = line_number;
        memcpy(packed + ROW_HEAD, r.experts, (size_t)k * sizeof *packed);
        count++;
    }
    int gz_error = 0;
    const char *gz_message = gzerror(file, &gz_error);
    if (status == TRACE_OK && gz_error != Z_OK && gz_error != Z_STREAM_END) {
        diags_add(d, path, line_number, 0, "unable to read: %s", gz_message);
        status = gz_error == Z_ERRNO ? TRACE_IO_ERROR : TRACE_INVALID;
    }
    gzclose(file);
    free(line);
    if (status == TRACE_OK && count == 0) {
        diags_add(d, path, 0, 0, "the trace has no rows");
        status = TRACE_INVALID;
    }
    if (status != TRACE_OK) {
        free(rows);
        return status;
    }
    /* A few rows with far-apart ids would make a matrix of hundreds of MB from a few bytes;
     * a real trace routes every token of a batch through every layer, so rows fill it. */
    if ((double)layers * (double)tokens > 16.0 * (double)count + 65536) {
        diags_add(d, path, 0, 0, "%zu rows for %lld layers x %lld tokens: ids must run from 0 with few gaps",
                  count, (long long)layers, (long long)tokens);
        free(rows);
        return TRACE_INVALID;
    }
    struct trace t = {.layers = layers, .tokens = tokens, .k = k};
    size_t entries = (size_t)(layers * tokens * k);
    t.expert = xmalloc(entries * sizeof *t.expert);
    for (size_t i = 0; i < entries; i++)
        t.expert[i] = -1;
    for (size_t i = 0; i < count; i++) {
        const int32_t *packed = rows + i * (size_t)(k + ROW_HEAD);
        int32_t *cell = t.expert + ((int64_t)packed[0] * tokens + packed[1]) * k;
        if (cell[0] >= 0) {
            diags_add(d, path, packed[2], 1, "layer %d, token %d is routed twice: once per token and layer",
                      packed[0], packed[1]);
            free(rows);
            free(t.expert);
            return TRACE_INVALID;
        }
        memcpy(cell, packed + ROW_HEAD, (size_t)k * sizeof *t.expert);
    }
    free(rows);
    *out = t;
    return TRACE_OK;
}

void trace_release(struct trace *t)
{
    if (!t)
        return;
    free(t->expert);
    memset(t, 0, sizeof *t);
}
