/* The writer's YAML syntax: exact bytes for a document that has every shape rackplan writes,
 * and libyaml reading the YAML and the JSON of the same tree (JSON is YAML too) as the same
 * events. Then the same for a whole plan: the JSON and YAML goldens of one command. */
#include "json.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

static void sample(struct json *j)
{
    json_begin_object(j);
    json_key(j, "name");
    json_string(j, "a \"quoted\"\n\x01: # not a comment");
    json_key(j, "on"); /* a YAML 1.1 boolean when plain */
    json_int(j, 1);
    json_key(j, "list");
    json_begin_array(j);
    json_int(j, -3);
    json_number(j, 0.1);
    json_number(j, 671026404672.0);
    json_number(j, NAN);
    json_end_array(j);
    json_key(j, "empty");
    json_begin_object(j);
    json_end_object(j);
    json_key(j, "none_yet");
    json_begin_array(j);
    json_end_array(j);
    json_key(j, "stages");
    json_begin_array(j);
    for (int i = 0; i < 2; i++) {
        json_begin_object(j);
        json_key(j, "index");
        json_int(j, i);
        json_key(j, "layers");
        json_begin_array(j);
        json_int(j, i * 31);
        json_int(j, i * 30 + 30);
        json_end_array(j);
        json_end_object(j);
    }
    json_end_array(j);
    json_key(j, "experts");
    json_begin_array(j);
    json_begin_array(j);
    for (int device = 0; device < 2; device++) {
        json_begin_array(j);
        json_int(j, 2 * device + 1);
        json_int(j, 2 * device + 2);
        json_end_array(j);
    }
    json_end_array(j);
    json_begin_array(j);
    json_begin_array(j);
    json_end_array(j);
    json_end_array(j);
    json_end_array(j);
    json_key(j, "nested");
    json_begin_object(j);
    json_key(j, "inner");
    json_begin_object(j);
    json_key(j, "flag");
    json_bool(j, true);
    json_key(j, "none");
    json_null(j);
    json_end_object(j);
    json_end_object(j);
    json_key(j, "mixed");
    json_begin_array(j);
    json_string(j, "first");
    json_begin_object(j);
    json_key(j, "inside");
    json_begin_array(j);
    json_end_array(j);
    json_end_object(j);
    json_end_array(j);
    json_end_object(j);
    json_finish(j);
}

static char *written(void (*write)(struct json *), enum json_syntax syntax)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    struct json j;
    json_init(&j, out, syntax);
    write(&j);
    fclose(out);
    return text;
}

/* libyaml's events as one line each: structure, and scalars with their value and whether they
 * were quoted (a quoted "1" is a string, a plain 1 a number); mapping keys by value alone, since
 * JSON quotes every key. Values of keys named `skip` are left out. Returns NULL on a parse error. */
static char *events(const char *text, const char *skip)
{
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    char *list = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&list, &size);
    bool in_mapping[64] = {false}, at_key[64] = {false};
    int depth = 0;
    bool skipping = false, done = false, ok = true;
    while (!done && ok) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) {
            ok = false;
            break;
        }
        bool key = depth > 0 && in_mapping[depth] && at_key[depth];
        if (depth > 0 && in_mapping[depth] && event.type != YAML_MAPPING_END_EVENT)
            at_key[depth] = !at_key[depth];
        switch (event.type) {
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            fprintf(out, "%s\n", event.type == YAML_MAPPING_START_EVENT ? "{" : "[");
            if (depth + 1 < 64) {
                depth++;
                in_mapping[depth] = event.type == YAML_MAPPING_START_EVENT;
                at_key[depth] = true;
            }
            skipping = false;
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            fprintf(out, "%s\n", event.type == YAML_MAPPING_END_EVENT ? "}" : "]");
            depth--;
            break;
        case YAML_SCALAR_EVENT: {
            const char *value = (const char *)event.data.scalar.value;
            bool quoted = event.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
            if (key) {
                fprintf(out, "key %s\n", value);
                skipping = skip && strcmp(value, skip) == 0;
            } else {
                fprintf(out, "%s %s\n", quoted ? "string" : "plain", skipping ? "(skipped)" : value);
                skipping = false;
            }
            break;
        }
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&event);
    }
    fclose(out);
    yaml_parser_delete(&parser);
    if (!ok) {
        free(list);
        return NULL;
    }
    return list;
}

static char *slurp(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return NULL;
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    int c;
    while ((c = fgetc(in)) != EOF)
        fputc(c, out);
    fclose(in);
    fclose(out);
    return text;
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    char *yaml = written(sample, SYNTAX_YAML);
    CHECK_STR(yaml,
              "name: \"a \\\"quoted\\\"\\n\\u0001: # not a comment\"\n"
              "\"on\": 1\n"
              "list: [-3, 0.1, 671026404672, null]\n"
              "empty: {}\n"
              "none_yet: []\n"
              "stages:\n"
              "  - index: 0\n"
              "    layers: [0, 30]\n"
              "  - index: 1\n"
              "    layers: [31, 60]\n"
              "experts:\n"
              "  - - [1, 2]\n"
              "    - [3, 4]\n"
              "  - - []\n"
              "nested:\n"
              "  inner:\n"
              "    flag: true\n"
              "    none: null\n"
              "mixed: [\"first\", {\"inside\": []}]\n",
              "block style, inline scalar lists, quoted strings and risky keys, empty containers");
    char *json = written(sample, SYNTAX_JSON);
    char *from_yaml = events(yaml, NULL), *from_json = events(json, NULL);
    CHECK(from_yaml && from_json && strcmp(from_yaml, from_json) == 0,
          "libyaml reads the YAML and the JSON of the sample as the same tree");
    free(from_yaml);
    free(from_json);
    free(yaml);
    free(json);

    /* one plan command written both ways (tests/cli goldens); solver seconds differ by run */
    char *plan_json = slurp("tests/cli/plan-deepseek-v3-h800-case-b-json.out");
    char *plan_yaml = slurp("tests/cli/plan-deepseek-v3-h800-case-b-yaml.out");
    from_json = plan_json ? events(plan_json, "seconds") : NULL;
    from_yaml = plan_yaml ? events(plan_yaml, "seconds") : NULL;
    size_t lines = 0;
    for (const char *p = from_json; p && *p; p++)
        lines += *p == '\n';
    CHECK(from_yaml && from_json && strcmp(from_yaml, from_json) == 0 && lines > 1000,
          "the plan of case b as YAML is the same tree as its JSON (%zu events)", lines);
    free(from_yaml);
    free(from_json);
    free(plan_json);
    free(plan_yaml);
    return tap_done();
}
