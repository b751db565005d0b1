/* The YAML/JSON document tree: positions, JSON through libyaml, and what it refuses. */
#include "doc.h"
#include "tap.h"

static int load(const char *text, struct doc **doc, char *message, size_t size)
{
    struct diags d;
    diags_init(&d);
    int status = doc_load_buffer("in.yaml", text, strlen(text), doc, &d);
    message[0] = '\0';
    if (d.count)
        diag_format(&d.entries[0], message, size);
    diags_release(&d);
    return status;
}

int main(void)
{
    struct doc *doc = NULL;
    char message[512];

    CHECK(load("a: 1\nb:\n  c: [x, \"7\"]\n", &doc, message, sizeof message) == 0, "YAML loads");
    const struct doc_node *c = doc_get(doc_get(doc->root, "b"), "c");
    CHECK(c && c->kind == DOC_SEQ && c->count == 2, "nested list found");
    CHECK(c && c->line == 3 && c->col == 6, "positions are 1-based line and column (3:6)");
    CHECK(c && !c->items[0]->quoted && c->items[1]->quoted, "quoted scalars are marked");
    CHECK(doc_get(doc->root, "missing") == NULL && doc_get(NULL, "a") == NULL, "absent keys give NULL");
    doc_free(doc);
    doc_free(NULL);

    CHECK(load("{\"n\":61,\"t\":[1,2],\n\t\"s\":\"x\\u00e9\"}", &doc, message, sizeof message) == 0,
          "compact JSON with tabs and escapes loads");
    CHECK_STR(doc_get(doc->root, "s")->text, "x\xc3\xa9", "JSON \\u escapes decode to UTF-8");
    CHECK(doc_get(doc->root, "s")->line == 2, "JSON positions are kept");
    doc_free(doc);

    CHECK(load("a: &x 1\nb: *x\n", &doc, message, sizeof message) != 0, "anchors are refused");
    CHECK_STR(message, "in.yaml:1:4: error: anchors and aliases are not supported", "anchor message");
    CHECK(load("a: 1\na: 2\n", &doc, message, sizeof message) != 0, "duplicate keys are refused");
    CHECK_STR(message, "in.yaml:2:1: error: duplicate key 'a' (first at line 1)", "duplicate key message");
    CHECK(load("a: 1\n---\nb: 2\n", &doc, message, sizeof message) != 0, "two documents are refused");
    CHECK(load("", &doc, message, sizeof message) != 0, "an empty file is refused");
    CHECK_STR(message, "in.yaml: error: the file is empty", "empty file message");
    CHECK(load("a: [1, 2\n", &doc, message, sizeof message) != 0, "an unclosed list is a syntax error");
    CHECK(strncmp(message, "in.yaml:2:1: error: ", 20) == 0, "syntax error at its position (%s)", message);

    char deep[400];
    size_t n = 0;
    for (int i = 0; i < 100; i++)
        deep[n++] = '[';
    for (int i = 0; i < 100; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    CHECK(load(deep, &doc, message, sizeof message) != 0, "100-deep nesting is refused");
    CHECK(strstr(message, "nesting deeper than 64 levels") != NULL, "nesting message (%s)", message);

    struct diags d;
    diags_init(&d);
    CHECK(doc_load("no/such/file.yaml", &doc, &d) == DOC_IO_ERROR, "a missing file is an I/O error");
    diags_release(&d);
    return tap_done();
}
