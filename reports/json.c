/* json.c: see json.h. */
#include "json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>

void json_init(struct json *j, FILE *out)
{
    j->out = out;
    j->depth = 0;
    j->first[0] = true;
    j->in_object[0] = false;
    j->pending_key = NULL;
}

static void indent(struct json *j)
{
    fputc('\n', j->out);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->out);
}

static void write_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* Separator, indentation and key before a value. */
static void before_value(struct json *j)
{
    if (j->depth > 0) {
        if (!j->first[j->depth])
            fputc(',', j->out);
        indent(j);
    }
    j->first[j->depth] = false;
    if (j->in_object[j->depth]) {
        assert(j->pending_key && "a value inside an object needs a key");
        write_string(j->out, j->pending_key);
        fputs(": ", j->out);
    } else {
        assert(!j->pending_key && "a key outside an object");
    }
    j->pending_key = NULL;
}

void json_key(struct json *j, const char *key) { j->pending_key = key; }

static void begin(struct json *j, char open, bool object)
{
    before_value(j);
    fputc(open, j->out);
    assert(j->depth + 1 < JSON_MAX_DEPTH);
    j->depth++;
    j->first[j->depth] = true;
    j->in_object[j->depth] = object;
}

static void end(struct json *j, char close)
{
    assert(j->depth > 0);
    bool empty = j->first[j->depth];
    j->depth--;
    if (!empty)
        indent(j);
    fputc(close, j->out);
}

void json_begin_object(struct json *j) { begin(j, '{', true); }
void json_end_object(struct json *j) { end(j, '}'); }
void json_begin_array(struct json *j) { begin(j, '[', false); }
void json_end_array(struct json *j) { end(j, ']'); }

void json_string(struct json *j, const char *value)
{
    before_value(j);
    write_string(j->out, value);
}

void json_int(struct json *j, int64_t value)
{
    before_value(j);
    fprintf(j->out, "%" PRId64, value);
}

void json_number(struct json *j, double value)
{
    before_value(j);
    if (!isfinite(value))
        fputs("null", j->out);
    else if (value == floor(value) && fabs(value) < 1e21)
        fprintf(j->out, "%.0f", value);
    else
        fprintf(j->out, "%.15g", value);
}

void json_bool(struct json *j, bool value)
{
    before_value(j);
    fputs(value ? "true" : "false", j->out);
}

void json_null(struct json *j)
{
    before_value(j);
    fputs("null", j->out);
}

void json_positive_or_null(struct json *j, double value)
{
    if (value > 0)
        json_number(j, value);
    else
        json_null(j);
}

void json_finish(struct json *j)
{
    assert(j->depth == 0);
    fputc('\n', j->out);
}
