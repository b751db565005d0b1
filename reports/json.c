/* json.c: see json.h. */
#include "json.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <strings.h>

void json_init(struct json *j, FILE *out, enum json_syntax syntax)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->syntax = syntax;
    j->first[0] = true;
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

/* YAML keys plain when they cannot be read as anything else (YAML 1.1 readers take on, no,
 * y ... for booleans), else double-quoted. */
static void write_key(FILE *out, const char *key)
{
    static const char *const words[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"};
    bool plain = key[0] && (isalpha((unsigned char)key[0]) || key[0] == '_');
    for (const char *p = key; *p && plain; p++)
        plain = isalnum((unsigned char)*p) || *p == '_';
    for (size_t i = 0; i < sizeof words / sizeof *words && plain; i++)
        plain = strcasecmp(key, words[i]) != 0;
    if (plain)
        fputs(key, out);
    else
        write_string(out, key);
}

static void yaml_line(struct json *j, int column)
{
    if (j->after_dash) {
        j->after_dash = false;
        return;
    }
    if (j->started)
        fputc('\n', j->out);
    j->started = true;
    for (int i = 0; i < column; i++)
        fputc(' ', j->out);
}

/* YAML: carries on the current line, after "key:" with a space, after "- " or at the start of
 * the document without one. */
static void yaml_continue(struct json *j)
{
    if (j->started && !j->after_dash)
        fputc(' ', j->out);
    j->after_dash = false;
    j->started = true;
}

/* YAML: what goes before a value (a container when `container`) at the current level. */
static void yaml_before(struct json *j, bool container)
{
    int d = j->depth;
    /* a block-level array's first element decides whether it is written inline */
    if (d > 0 && !j->in_object[d] && !j->inline_level[d] && j->first[d]) {
        j->inline_level[d] = !container;
        if (!container) {
            yaml_continue(j);
            fputc('[', j->out);
        }
    }
    if (d > 0 && j->inline_level[d]) {
        if (!j->first[d])
            fputs(", ", j->out);
        j->first[d] = false;
        if (j->in_object[d]) {
            assert(j->pending_key && "a value inside an object needs a key");
            write_string(j->out, j->pending_key);
            fputs(": ", j->out);
        }
        j->pending_key = NULL;
        return;
    }
    j->first[d] = false;
    if (d > 0) {
        yaml_line(j, j->column[d]);
        if (j->in_object[d]) {
            assert(j->pending_key && "a value inside an object needs a key");
            write_key(j->out, j->pending_key);
            fputs(container ? ":" : ": ", j->out);
        } else {
            assert(!j->pending_key && "a key outside an object");
            fputs("- ", j->out);
            j->after_dash = container;
        }
    }
    j->pending_key = NULL;
}

/* Separator, indentation and key before a value. */
static void before_value(struct json *j)
{
    if (j->syntax == SYNTAX_YAML) {
        yaml_before(j, false);
        return;
    }
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

static void yaml_begin(struct json *j, char open, bool object)
{
    yaml_before(j, true);
    int d = j->depth;
    bool inside_inline = d > 0 && j->inline_level[d];
    assert(d + 1 < JSON_MAX_DEPTH);
    j->depth++;
    j->first[j->depth] = true;
    j->in_object[j->depth] = object;
    j->inline_level[j->depth] = inside_inline;
    j->column[j->depth] = d == 0 ? 0 : j->column[d] + 2;
    if (inside_inline)
        fputc(open, j->out);
}

static void yaml_end(struct json *j, char open, char close)
{
    int d = j->depth;
    if (j->inline_level[d]) {
        fputc(close, j->out);
    } else if (j->first[d]) { /* empty: nothing said yet after "key:" or "- " */
        yaml_continue(j);
        fputc(open, j->out);
        fputc(close, j->out);
    }
    j->depth--;
}

static void begin(struct json *j, char open, bool object)
{
    if (j->syntax == SYNTAX_YAML) {
        yaml_begin(j, open, object);
        return;
    }
    before_value(j);
    fputc(open, j->out);
    assert(j->depth + 1 < JSON_MAX_DEPTH);
    j->depth++;
    j->first[j->depth] = true;
    j->in_object[j->depth] = object;
}

static void end(struct json *j, char open, char close)
{
    assert(j->depth > 0);
    if (j->syntax == SYNTAX_YAML) {
        yaml_end(j, open, close);
        return;
    }
    bool empty = j->first[j->depth];
    j->depth--;
    if (!empty)
        indent(j);
    fputc(close, j->out);
}

void json_begin_object(struct json *j) { begin(j, '{', true); }
void json_end_object(struct json *j) { end(j, '{', '}'); }
void json_begin_array(struct json *j) { begin(j, '[', false); }
void json_end_array(struct json *j) { end(j, '[', ']'); }

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

void json_literal(struct json *j, const char *text)
{
    before_value(j);
    fputs(text, j->out);
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
