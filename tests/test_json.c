/* The JSON writer: exact bytes for a small document. */
#include "json.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>

int main(void)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    struct json j;
    json_init(&j, out, SYNTAX_JSON);
    json_begin_object(&j);
    json_key(&j, "name");
    json_string(&j, "a \"quoted\"\n\x01");
    json_key(&j, "list");
    json_begin_array(&j);
    json_int(&j, -3);
    json_number(&j, 0.1);
    json_number(&j, 671026404672.0);
    json_number(&j, NAN);
    json_end_array(&j);
    json_key(&j, "empty");
    json_begin_object(&j);
    json_end_object(&j);
    json_key(&j, "flag");
    json_bool(&j, true);
    json_key(&j, "none");
    json_null(&j);
    json_end_object(&j);
    json_finish(&j);
    fclose(out);
    CHECK_STR(text,
              "{\n  \"name\": \"a \\\"quoted\\\"\\n\\u0001\",\n  \"list\": [\n    -3,\n    0.1,\n"
              "    671026404672,\n    null\n  ],\n  \"empty\": {},\n  \"flag\": true,\n  \"none\": null\n}\n",
              "indentation, escapes, whole numbers without exponent, NaN as null");
    free(text);

    out = open_memstream(&text, &size);
    json_init(&j, out, SYNTAX_JSON);
    json_begin_array(&j);
    json_positive_or_null(&j, 144);
    json_positive_or_null(&j, 0);
    json_positive_or_null(&j, -1);
    json_end_array(&j);
    json_finish(&j);
    fclose(out);
    CHECK_STR(text, "[\n  144,\n  null,\n  null\n]\n", "positive values as numbers, 0 and below as null (unknown)");
    free(text);
    return tap_done();
}
