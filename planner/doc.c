/* doc.c: see doc.h. The only file that includes yaml.h. */
#include "doc.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static struct doc_node *node_new(enum doc_kind kind, const yaml_mark_t *mark)
{
    struct doc_node *n = xcalloc(1, sizeof *n);
    n->kind = kind;
    n->line = (int)mark->line + 1;
    n->col = (int)mark->column + 1;
    return n;
}

static void node_free(struct doc_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->count; i++) {
        if (n->keys)
            node_free(n->keys[i]);
        node_free(n->items[i]);
    }
    free(n->keys);
    free(n->items);
    free(n->text);
    free(n);
}

struct reader {
    yaml_parser_t parser;
    const char *path;
    struct diags *diags;
};

static void syntax_error(struct reader *r)
{
    const yaml_parser_t *p = &r->parser;
    const yaml_mark_t *mark = p->context ? &p->context_mark : &p->problem_mark;
    if (p->problem)
        mark = &p->problem_mark;
    diags_add(r->diags, r->path, (int)mark->line + 1, (int)mark->column + 1, "%s%s%s",
              p->context ? p->context : "", p->context ? ": " : "",
              p->problem ? p->problem : "malformed YAML");
}

/* Parses the node that `first` opens. Returns NULL after adding a diagnostic. */
static struct doc_node *parse_node(struct reader *r, yaml_event_t *first, int depth);

static int next_event(struct reader *r, yaml_event_t *event)
{
    if (!yaml_parser_parse(&r->parser, event)) {
        syntax_error(r);
        return -1;
    }
    return 0;
}

static void append(struct doc_node *parent, struct doc_node *key, struct doc_node *item)
{
    size_t n = parent->count + 1;
    if (parent->kind == DOC_MAP)
        parent->keys = xrealloc(parent->keys, n * sizeof *parent->keys);
    parent->items = xrealloc(parent->items, n * sizeof *parent->items);
    if (parent->kind == DOC_MAP)
        parent->keys[parent->count] = key;
    parent->items[parent->count] = item;
    parent->count = n;
}

static struct doc_node *parse_collection(struct reader *r, struct doc_node *node, int depth)
{
    yaml_event_type_t end =
        node->kind == DOC_MAP ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
    for (;;) {
        yaml_event_t event;
        if (next_event(r, &event) < 0)
            goto fail;
        if (event.type == end) {
            yaml_event_delete(&event);
            return node;
        }
        struct doc_node *key = NULL;
        if (node->kind == DOC_MAP) {
            key = parse_node(r, &event, depth + 1);
            yaml_event_delete(&event);
            if (!key)
                goto fail;
            if (key->kind != DOC_SCALAR) {
                diags_add(r->diags, r->path, key->line, key->col, "mapping keys must be scalars");
                node_free(key);
                goto fail;
            }
            for (size_t i = 0; i < node->count; i++) {
                if (strcmp(node->keys[i]->text, key->text) == 0) {
                    diags_add(r->diags, r->path, key->line, key->col,
                              "duplicate key '%s' (first at line %d)", key->text,
                              node->keys[i]->line);
                    node_free(key);
                    goto fail;
                }
            }
            if (next_event(r, &event) < 0) {
                node_free(key);
                goto fail;
            }
        }
        struct doc_node *item = parse_node(r, &event, depth + 1);
        yaml_event_delete(&event);
        if (!item) {
            node_free(key);
            goto fail;
        }
        append(node, key, item);
    }
fail:
    node_free(node);
    return NULL;
}

static struct doc_node *parse_node(struct reader *r, yaml_event_t *event, int depth)
{
    if (depth > DOC_MAX_DEPTH) {
        diags_add(r->diags, r->path, (int)event->start_mark.line + 1,
                  (int)event->start_mark.column + 1, "nesting deeper than %d levels",
                  DOC_MAX_DEPTH);
        return NULL;
    }
    switch (event->type) {
    case YAML_SCALAR_EVENT: {
        if (event->data.scalar.anchor) {
            diags_add(r->diags, r->path, (int)event->start_mark.line + 1,
                      (int)event->start_mark.column + 1, "anchors and aliases are not supported");
            return NULL;
        }
        struct doc_node *n = node_new(DOC_SCALAR, &event->start_mark);
        n->text = xmalloc(event->data.scalar.length + 1);
        memcpy(n->text, event->data.scalar.value, event->data.scalar.length);
        n->text[event->data.scalar.length] = '\0';
        if (strlen(n->text) != event->data.scalar.length) {
            diags_add(r->diags, r->path, n->line, n->col, "NUL character in a string");
            node_free(n);
            return NULL;
        }
        n->quoted = event->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    event->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ||
                    event->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
                    event->data.scalar.style == YAML_FOLDED_SCALAR_STYLE ||
                    event->data.scalar.tag != NULL; /* "!!str 4" is a string, not 4 */
        return n;
    }
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: {
        const yaml_char_t *anchor = event->type == YAML_MAPPING_START_EVENT
                                        ? event->data.mapping_start.anchor
                                        : event->data.sequence_start.anchor;
        if (anchor) {
            diags_add(r->diags, r->path, (int)event->start_mark.line + 1,
                      (int)event->start_mark.column + 1, "anchors and aliases are not supported");
            return NULL;
        }
        struct doc_node *n = node_new(
            event->type == YAML_MAPPING_START_EVENT ? DOC_MAP : DOC_SEQ, &event->start_mark);
        return parse_collection(r, n, depth);
    }
    case YAML_ALIAS_EVENT:
        diags_add(r->diags, r->path, (int)event->start_mark.line + 1,
                  (int)event->start_mark.column + 1, "anchors and aliases are not supported");
        return NULL;
    default:
        diags_add(r->diags, r->path, (int)event->start_mark.line + 1,
                  (int)event->start_mark.column + 1, "unexpected YAML event");
        return NULL;
    }
}

/* A JSON grammar check. libyaml reads JSON as YAML flow style, which also accepts what JSON
 * does not (trailing commas, unquoted keys, comments); a file that opens with { or [ is held
 * to JSON. */
struct json_scan {
    const char *p, *end, *start;
    const char *error;
    const char *error_at;
};

static void json_skip_space(struct json_scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool json_fail(struct json_scan *s, const char *message)
{
    if (!s->error) {
        s->error = message;
        s->error_at = s->p;
    }
    return false;
}

static bool json_literal(struct json_scan *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return json_fail(s, "invalid JSON value");
    s->p += n;
    return true;
}

static bool json_string_token(struct json_scan *s)
{
    s->p++; /* opening quote */
    while (s->p < s->end && *s->p != '"') {
        if ((unsigned char)*s->p < 0x20)
            return json_fail(s, "control character in a JSON string");
        if (*s->p == '\\') {
            s->p++;
            if (s->p >= s->end || !strchr("\"\\/bfnrtu", *s->p))
                return json_fail(s, "invalid escape in a JSON string");
        }
        s->p++;
    }
    if (s->p >= s->end)
        return json_fail(s, "unterminated JSON string");
    s->p++;
    return true;
}

static bool json_number_token(struct json_scan *s)
{
    const char *begin = s->p;
    if (*s->p == '-')
        s->p++;
    if (s->p >= s->end || *s->p < '0' || *s->p > '9')
        return json_fail(s, "invalid JSON value");
    while (s->p < s->end && strchr("0123456789.eE+-", *s->p))
        s->p++;
    return s->p > begin;
}

static bool json_value(struct json_scan *s, int depth);

static bool json_container(struct json_scan *s, int depth, char close)
{
    s->p++;
    json_skip_space(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return true;
    }
    for (;;) {
        json_skip_space(s);
        if (close == '}') {
            if (s->p >= s->end || *s->p != '"')
                return json_fail(s, s->p < s->end && *s->p == '}' ? "trailing comma in a JSON object"
                                                                   : "expected a quoted key in a JSON object");
            if (!json_string_token(s))
                return false;
            json_skip_space(s);
            if (s->p >= s->end || *s->p != ':')
                return json_fail(s, "expected ':' after a JSON key");
            s->p++;
            json_skip_space(s);
        } else if (s->p < s->end && *s->p == ']') {
            return json_fail(s, "trailing comma in a JSON list");
        }
        if (!json_value(s, depth + 1))
            return false;
        json_skip_space(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return true;
        }
        return json_fail(s, close == '}' ? "expected ',' or '}' in a JSON object"
                                         : "expected ',' or ']' in a JSON list");
    }
}

static bool json_value(struct json_scan *s, int depth)
{
    if (depth > DOC_MAX_DEPTH)
        return json_fail(s, "nesting deeper than 64 levels");
    json_skip_space(s);
    if (s->p >= s->end)
        return json_fail(s, "unexpected end of JSON");
    switch (*s->p) {
    case '{':
        return json_container(s, depth, '}');
    case '[':
        return json_container(s, depth, ']');
    case '"':
        return json_string_token(s);
    case 't':
        return json_literal(s, "true");
    case 'f':
        return json_literal(s, "false");
    case 'n':
        return json_literal(s, "null");
    /* Python's json module writes the non-standard Infinity and NaN, and real config.json files
     * carry them (Nemotron-H's "time_step_limit": [0.0, Infinity]); YAML reads them as words */
    case 'I':
        return json_literal(s, "Infinity");
    case 'N':
        return json_literal(s, "NaN");
    default:
        if (s->end - s->p > 1 && s->p[0] == '-' && s->p[1] == 'I') {
            s->p++;
            return json_literal(s, "Infinity");
        }
        return json_number_token(s);
    }
}

/* Returns true when `data` is not JSON-shaped or is valid JSON; otherwise adds a diagnostic. */
static bool json_check(const char *path, const char *data, size_t size, struct diags *d)
{
    struct json_scan s = {.p = data, .end = data + size, .start = data};
    if (size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        s.p += 3;
    json_skip_space(&s);
    if (s.p >= s.end || (*s.p != '{' && *s.p != '['))
        return true;
    if (json_value(&s, 1)) {
        json_skip_space(&s);
        if (s.p == s.end)
            return true;
        json_fail(&s, "text after the end of the JSON document");
    }
    int line = 1, col = 1;
    text_position(data, s.error_at, &line, &col);
    diags_add(d, path, line, col, "%s", s.error);
    return false;
}

int doc_load_buffer(const char *path, const char *data, size_t size, struct doc **out,
                    struct diags *d)
{
    if (size > DOC_MAX_BYTES) {
        diags_add(d, path, 0, 0, "file is larger than %u MiB", DOC_MAX_BYTES >> 20);
        return -1;
    }
    if (!json_check(path, data, size, d))
        return DOC_SYNTAX_ERROR;
    struct reader r = {.path = path, .diags = d};
    yaml_parser_initialize(&r.parser);
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)data, size);
    struct doc_node *root = NULL;
    int documents = 0;
    int status = -1;
    for (;;) {
        yaml_event_t event;
        if (next_event(&r, &event) < 0)
            goto done;
        yaml_event_type_t type = event.type;
        if (type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&event);
            break;
        }
        if (type == YAML_DOCUMENT_START_EVENT) {
            if (++documents > 1) {
                diags_add(d, path, (int)event.start_mark.line + 1,
                          (int)event.start_mark.column + 1, "more than one document in the file");
                yaml_event_delete(&event);
                goto done;
            }
        } else if (type != YAML_STREAM_START_EVENT && type != YAML_DOCUMENT_END_EVENT) {
            root = parse_node(&r, &event, 1);
            yaml_event_delete(&event);
            if (!root)
                goto done;
            continue;
        }
        yaml_event_delete(&event);
    }
    if (!root) {
        diags_add(d, path, 0, 0, "the file is empty");
        goto done;
    }
    struct doc *doc = xcalloc(1, sizeof *doc);
    doc->path = xstrdup(path);
    doc->root = root;
    root = NULL;
    *out = doc;
    status = 0;
done:
    node_free(root);
    yaml_parser_delete(&r.parser);
    return status;
}

int doc_load(const char *path, struct doc **out, struct diags *d)
{
    char *data;
    size_t size;
    if (file_read_all(path, DOC_MAX_BYTES, &data, &size, d) < 0)
        return DOC_IO_ERROR;
    int status = doc_load_buffer(path, data, size, out, d);
    free(data);
    return status;
}

void doc_free(struct doc *doc)
{
    if (!doc)
        return;
    node_free(doc->root);
    free(doc->path);
    free(doc);
}

const struct doc_node *doc_get(const struct doc_node *map, const char *key)
{
    if (!map || map->kind != DOC_MAP)
        return NULL;
    for (size_t i = 0; i < map->count; i++)
        if (strcmp(map->keys[i]->text, key) == 0)
            return map->items[i];
    return NULL;
}

bool doc_is_null(const struct doc_node *n)
{
    return n && n->kind == DOC_SCALAR && !n->quoted &&
           (strcmp(n->text, "null") == 0 || strcmp(n->text, "~") == 0 || n->text[0] == '\0');
}

void doc_error_at(struct doc_reader *r, const struct doc_node *at, const char *fmt, ...)
{
    char message[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    diags_add(r->diags, r->path, at ? at->line : 0, at ? at->col : 0, "%s", message);
    r->errors++;
}

const char *doc_kind_name(const struct doc_node *node)
{
    switch (node->kind) {
    case DOC_MAP:
        return "a mapping";
    case DOC_SEQ:
        return "a list";
    default:
        return node->quoted ? "a string" : "a scalar";
    }
}

struct doc_node *doc_new_map(void)
{
    struct doc_node *n = xcalloc(1, sizeof *n);
    n->kind = DOC_MAP;
    return n;
}

struct doc_node *doc_new_seq(void)
{
    struct doc_node *n = xcalloc(1, sizeof *n);
    n->kind = DOC_SEQ;
    return n;
}

struct doc_node *doc_new_scalar(const char *text, bool quoted)
{
    struct doc_node *n = xcalloc(1, sizeof *n);
    n->kind = DOC_SCALAR;
    n->text = xstrdup(text);
    n->quoted = quoted;
    return n;
}

struct doc_node *doc_map_put(struct doc_node *map, const char *key, struct doc_node *value)
{
    assert(map->kind == DOC_MAP);
    append(map, doc_new_scalar(key, false), value);
    return value;
}

struct doc_node *doc_seq_push(struct doc_node *seq, struct doc_node *item)
{
    assert(seq->kind == DOC_SEQ);
    append(seq, NULL, item);
    return item;
}

void doc_node_free(struct doc_node *node)
{
    node_free(node);
}

struct emitted {
    char *data;
    size_t size, capacity;
};

static int emit_write(void *context, unsigned char *buffer, size_t size)
{
    struct emitted *e = context;
    if (e->size + size + 1 > e->capacity) {
        e->capacity = (e->size + size + 1) * 2;
        e->data = xrealloc(e->data, e->capacity);
    }
    memcpy(e->data + e->size, buffer, size);
    e->size += size;
    e->data[e->size] = 0;
    return 1;
}

static bool emit_node(yaml_emitter_t *em, const struct doc_node *n)
{
    yaml_event_t event;
    switch (n->kind) {
    case DOC_SCALAR:
        if (!yaml_scalar_event_initialize(&event, NULL, NULL, (yaml_char_t *)n->text, (int)strlen(n->text),
                                          !n->quoted, n->quoted,
                                          n->quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE))
            return false;
        return yaml_emitter_emit(em, &event) != 0;
    case DOC_MAP:
        if (!yaml_mapping_start_event_initialize(&event, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
            !yaml_emitter_emit(em, &event))
            return false;
        for (size_t i = 0; i < n->count; i++)
            if (!emit_node(em, n->keys[i]) || !emit_node(em, n->items[i]))
                return false;
        if (!yaml_mapping_end_event_initialize(&event))
            return false;
        return yaml_emitter_emit(em, &event) != 0;
    case DOC_SEQ:
        if (!yaml_sequence_start_event_initialize(&event, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(em, &event))
            return false;
        for (size_t i = 0; i < n->count; i++)
            if (!emit_node(em, n->items[i]))
                return false;
        if (!yaml_sequence_end_event_initialize(&event))
            return false;
        return yaml_emitter_emit(em, &event) != 0;
    }
    return false;
}

char *doc_emit_yaml(const struct doc_node *root, const char *preamble)
{
    struct emitted e = {0};
    if (preamble)
        emit_write(&e, (unsigned char *)preamble, strlen(preamble));
    yaml_emitter_t em;
    if (!yaml_emitter_initialize(&em))
        return free(e.data), NULL;
    yaml_emitter_set_output(&em, emit_write, &e);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    yaml_event_t event;
    bool ok = yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING) && yaml_emitter_emit(&em, &event) &&
              yaml_document_start_event_initialize(&event, NULL, NULL, NULL, 1) && yaml_emitter_emit(&em, &event) &&
              emit_node(&em, root) && yaml_document_end_event_initialize(&event, 1) &&
              yaml_emitter_emit(&em, &event) && yaml_stream_end_event_initialize(&event) &&
              yaml_emitter_emit(&em, &event) && yaml_emitter_flush(&em);
    yaml_emitter_delete(&em);
    if (!ok) {
        free(e.data);
        return NULL;
    }
    return e.data ? e.data : xstrdup("");
}
