/* json.h: a streaming JSON writer with stable formatting (2-space indent, keys in the order
 * written), so the same data always gives the same bytes. Writes to a FILE the caller owns.
 * The same calls can write the tree as YAML instead (block style; an array whose first element
 * is a number or string is written inline, [1, 2, 3], so expert lists stay one line; strings
 * are double-quoted, as in JSON, which YAML reads the same way).
 * Misuse (a value without a key inside an object, unbalanced ends) is a programming error and
 * asserts. Non-finite numbers are written as null (JSON has no NaN). */
#ifndef RACKPLAN_JSON_H
#define RACKPLAN_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

enum json_syntax { SYNTAX_JSON, SYNTAX_YAML };

struct json {
    FILE *out;
    enum json_syntax syntax;
    int depth;
    bool first[JSON_MAX_DEPTH];
    bool in_object[JSON_MAX_DEPTH];
    bool inline_level[JSON_MAX_DEPTH]; /* YAML: this container is written inline, JSON-like */
    int column[JSON_MAX_DEPTH];        /* YAML: where the container's own lines start */
    bool after_dash;                   /* YAML: "- " written, the next line continues it */
    bool started;
    const char *pending_key;
};

void json_init(struct json *j, FILE *out, enum json_syntax syntax);

/* Sets the key of the next value (inside an object). */
void json_key(struct json *j, const char *key);

void json_begin_object(struct json *j);
void json_end_object(struct json *j);
void json_begin_array(struct json *j);
void json_end_array(struct json *j);

void json_string(struct json *j, const char *value);
void json_int(struct json *j, int64_t value);
void json_number(struct json *j, double value); /* up to 15 significant digits */
void json_bool(struct json *j, bool value);
void json_null(struct json *j);
/* A number, true, false or null exactly as it stood in a JSON file (the caller checked it). */
void json_literal(struct json *j, const char *text);
/* `value` when it is above 0, else null: rackplan's "not known" (no price, no crossover). */
void json_positive_or_null(struct json *j, double value);

/* Ends the document with a newline. */
void json_finish(struct json *j);

#endif
