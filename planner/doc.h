/* doc.h: a YAML or JSON file read into a tree of nodes that remember where they stood.
 *
 * The only module that includes yaml.h (libyaml reads JSON too: JSON is YAML flow style).
 * Anchors and aliases are refused (no billion laughs), nesting is capped at DOC_MAX_DEPTH,
 * files at DOC_MAX_BYTES, and a file must hold exactly one document.
 * A doc owns all its nodes and strings; doc_free releases them and accepts NULL.
 */
#ifndef RACKPLAN_DOC_H
#define RACKPLAN_DOC_H

#include "diag.h"

#include <stdbool.h>
#include <stddef.h>

#define DOC_MAX_DEPTH 64
#define DOC_MAX_BYTES (64u << 20)

enum doc_kind { DOC_SCALAR, DOC_MAP, DOC_SEQ };

struct doc_node {
    enum doc_kind kind;
    int line; /* 1-based */
    int col;  /* 1-based */
    char *text;  /* DOC_SCALAR: the value; map keys are scalars too */
    bool quoted; /* DOC_SCALAR quoted or explicitly tagged: a string, never a number or boolean */
    size_t count;
    struct doc_node **keys;  /* DOC_MAP: count keys */
    struct doc_node **items; /* DOC_MAP: values; DOC_SEQ: items */
};

struct doc {
    char *path;
    struct doc_node *root;
};

#define DOC_SYNTAX_ERROR (-1)
#define DOC_IO_ERROR (-2)

/* Reads `path`. On success returns 0 and sets *out; on failure leaves *out alone, adds at least
 * one diagnostic and returns DOC_IO_ERROR (unreadable file) or DOC_SYNTAX_ERROR (syntax error
 * with its position, alias, nesting, size). */
int doc_load(const char *path, struct doc **out, struct diags *d);

/* The same, from a buffer of `size` bytes; `path` is only used in messages. */
int doc_load_buffer(const char *path, const char *data, size_t size, struct doc **out,
                    struct diags *d);

void doc_free(struct doc *doc);

/* The value under `key` in a map, or NULL (also when `map` is NULL or not a map). */
const struct doc_node *doc_get(const struct doc_node *map, const char *key);

/* "a mapping", "a list", "a string", ... for messages. */
const char *doc_kind_name(const struct doc_node *node);

/* A plain (unquoted) null, ~ or empty scalar: YAML's null, which a reader takes as "not given". */
bool doc_is_null(const struct doc_node *node);

/* A reader of one file's tree: where its errors go and how many it has found. */
struct doc_reader {
    const char *path;
    struct diags *diags;
    int errors;
};

/* An error at `at`'s line and column (0:0 without a node), added to r's diagnostics and counted. */
void doc_error_at(struct doc_reader *r, const struct doc_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writing: a tree built from these (line and col 0), each node owned by the collection it is
 * added to; doc_node_free releases a tree and accepts NULL. Adding to a node of the wrong kind is
 * an internal error (assert). */
struct doc_node *doc_new_map(void);
struct doc_node *doc_new_seq(void);
/* A scalar; `quoted`: always a string (written quoted), else plain where YAML allows it. */
struct doc_node *doc_new_scalar(const char *text, bool quoted);
/* Adds `value` under `key` (copied) to `map` and returns `value`. */
struct doc_node *doc_map_put(struct doc_node *map, const char *key, struct doc_node *value);
struct doc_node *doc_seq_push(struct doc_node *seq, struct doc_node *item);
void doc_node_free(struct doc_node *node);

/* `root` as one YAML document in block style through libyaml's emitter, after `preamble` (lines
 * of comments, written as given; NULL: none). Returns a NUL-terminated string the caller frees,
 * or NULL when the emitter fails (out of memory). */
char *doc_emit_yaml(const struct doc_node *root, const char *preamble);

#endif
