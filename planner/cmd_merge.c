/* cmd_merge.c: `rackplan merge PART...`: the CSV or JSON parts of a sharded roofline or compare
 * run, joined into what the run without --shard writes. */
#include "cli.h"
#include "commands.h"
#include "compare.h"
#include "diag.h"
#include "doc.h"
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A part bigger than this is not the output of one shard. */
#define MERGE_MAX_PART_BYTES ((size_t)1 << 30)

/* A row of a part: a CSV line or a JSON object. */
struct line {
    char *text;                 /* CSV: without its newline */
    const struct doc_node *node; /* JSON */
    const char *path;           /* of its part */
    int number, column;         /* where it starts in its part, 1-based */
    double key;        /* roofline: the batch; compare: the row's place in the whole run */
    struct compare_row row;
};

struct lines {
    struct line *items;
    int64_t count, capacity;
};

enum kind { KIND_ROOFLINE, KIND_COMPARE };

/* The parts, read: every row, and what the rows of one run share. */
struct merged {
    enum kind kind;
    struct lines rows;
    bool json;
    const char *header;         /* CSV: the parts' first line */
    const struct doc_node *run; /* JSON: the first part's root (a roofline's keys around its points) */
    struct doc **docs;          /* JSON: every part's tree, which the rows point into */
};

static void lines_push(struct lines *l, struct line item)
{
    if (l->count == l->capacity) {
        l->capacity = l->capacity ? 2 * l->capacity : 256;
        l->items = xrealloc(l->items, (size_t)l->capacity * sizeof *l->items);
    }
    l->items[l->count++] = item;
}

/* The whole file, NUL-terminated; NULL (after printing why) when unreadable or too big. */
static char *read_part(const char *path, size_t *size)
{
    struct diags d;
    diags_init(&d);
    char *text = NULL;
    if (file_read_all(path, MERGE_MAX_PART_BYTES, &text, size, &d) == 0 && *size > MERGE_MAX_PART_BYTES) {
        diags_add(&d, path, 0, 0, "larger than %zu bytes: not one shard's part", MERGE_MAX_PART_BYTES);
        free(text);
        text = NULL;
    }
    diags_print(&d, stderr);
    diags_release(&d);
    return text;
}

/* The `index`-th field of a CSV line (fields in double quotes may hold commas), unquoted, into
 * `out`; false when the line has fewer fields. */
static bool csv_field(const char *line, int index, char *out, size_t size)
{
    const char *at = line;
    for (int field = 0;; field++) {
        size_t n = 0;
        bool quoted = *at == '"';
        if (quoted)
            at++;
        while (*at && (quoted ? !(*at == '"' && at[1] != '"') : *at != ',')) {
            if (quoted && *at == '"')
                at++; /* "" is one quote */
            if (field == index && n + 1 < size)
                out[n++] = *at;
            at++;
        }
        if (quoted && *at == '"')
            at++;
        if (field == index) {
            out[n] = 0;
            return true;
        }
        if (*at != ',')
            return false;
        at++;
    }
}

static bool number_field(const char *line, int index, double *out)
{
    char text[64];
    if (!csv_field(line, index, text, sizeof text))
        return false;
    if (!*text) {
        *out = 0; /* an unknown cost is written empty */
        return true;
    }
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    return !*end && !errno;
}

/* The columns a compare row is ordered by (compare.h), and its place in the whole run. */
enum { COMPARE_FITS = 10, COMPARE_TPOT_MET = 14, COMPARE_PER_DEVICE = 18, COMPARE_COST = 20,
       COMPARE_ROW = 24 };

static bool parse_row(enum kind kind, struct line *l)
{
    if (kind == KIND_ROOFLINE)
        return number_field(l->text, 0, &l->key) && l->key >= 1;
    char fits[8], met[8];
    double per_device, cost;
    if (!csv_field(l->text, COMPARE_FITS, fits, sizeof fits) ||
        !csv_field(l->text, COMPARE_TPOT_MET, met, sizeof met) ||
        !number_field(l->text, COMPARE_PER_DEVICE, &per_device) ||
        !number_field(l->text, COMPARE_COST, &cost) || !number_field(l->text, COMPARE_ROW, &l->key) ||
        l->key < 0)
        return false;
    l->row = (struct compare_row){.fits = strcmp(fits, "true") == 0, .tpot_met = strcmp(met, "true") == 0,
                                  .cost_per_mtok = cost, .point = {.tokens_per_s_per_device = per_device}};
    return true;
}

static int by_key(const void *a, const void *b)
{
    double x = ((const struct line *)a)->key, y = ((const struct line *)b)->key;
    return (x > y) - (x < y);
}

/* Sorts the rows by key; false (after saying where) when two share one. */
static bool sort_unique(struct lines *rows, enum kind kind)
{
    qsort(rows->items, (size_t)rows->count, sizeof *rows->items, by_key);
    for (int64_t i = 1; i < rows->count; i++) {
        const struct line *this = &rows->items[i], *before = &rows->items[i - 1];
        if (this->key == before->key) {
            fprintf(stderr, "%s:%d:%d: error: %s %.0f is also in %s:%d:%d: the same shard given twice?\n",
                    this->path, this->number, this->column, kind == KIND_ROOFLINE ? "batch" : "row",
                    this->key, before->path, before->number, before->column);
            return false;
        }
    }
    return true;
}

/* The order the unsharded run gives the compare rows (each row's .row filled), and whether the
 * first of them is best: it fits and meets the target. `order` holds rows->count places. */
static bool compare_rank(const struct lines *rows, int64_t *order)
{
    int64_t n = rows->count;
    struct compare_row *list = xcalloc((size_t)n + 1, sizeof *list);
    for (int64_t i = 0; i < n; i++)
        list[i] = rows->items[i].row;
    compare_order(list, n, order);
    bool best = n > 0 && list[order[0]].fits && list[order[0]].tpot_met;
    free(list);
    return best;
}

/* Writes the rows in the unsharded run's order: roofline by batch; compare as compare_order
 * sorts them (from the rows in run order, so that ties fall the same way), the first marked
 * best when it fits and meets the target. Returns whether some compare row is best. */
static bool write_csv(FILE *out, const struct merged *m)
{
    const struct lines *rows = &m->rows;
    fprintf(out, "%s\n", m->header);
    if (m->kind == KIND_ROOFLINE) {
        for (int64_t i = 0; i < rows->count; i++)
            fprintf(out, "%s\n", rows->items[i].text);
        return true;
    }
    int64_t *order = xcalloc((size_t)rows->count + 1, sizeof *order);
    bool best = compare_rank(rows, order);
    for (int64_t rank = 0; rank < rows->count; rank++) {
        const char *rest = strchr(rows->items[order[rank]].text, ',');
        fprintf(out, "%s%s\n", rank == 0 && best ? "true" : "false", rest);
    }
    free(order);
    return best;
}

/* Reads CSV parts: their header the same, rows keyed by batch or by place in the run. */
static int read_csv(const struct options *o, char **texts, struct merged *m)
{
    int parts = o->positional_count;
    struct lines rows = {0};
    const char *header = NULL, *header_path = NULL;
    enum kind kind = KIND_ROOFLINE;
    int status = EXIT_OK;
    for (int p = 0; p < parts && status == EXIT_OK; p++) {
        const char *path = o->positional[p];
        char *save = NULL;
        int number = 0;
        for (char *line = strtok_r(texts[p], "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            number++;
            size_t n = strlen(line);
            if (n && line[n - 1] == '\r')
                line[n - 1] = 0;
            if (number == 1) {
                if (!header) {
                    header = line;
                    header_path = path;
                    bool roofline = strncmp(line, "batch,step_s,", 13) == 0;
                    bool compare = strncmp(line, "best,topology,", 14) == 0 &&
                                   n > 4 && strcmp(line + strlen(line) - 4, ",row") == 0;
                    if (!roofline && !compare) {
                        fprintf(stderr, "%s:1:1: error: not the CSV of `rackplan roofline --shard` or "
                                        "`rackplan compare --shard`\n", path);
                        status = EXIT_INVALID;
                        break;
                    }
                    kind = roofline ? KIND_ROOFLINE : KIND_COMPARE;
                } else if (strcmp(line, header) != 0) {
                    fprintf(stderr, "%s:1:1: error: its header differs from %s's: parts of one run share it\n",
                            path, header_path);
                    status = EXIT_INVALID;
                    break;
                }
                continue;
            }
            struct line item = {.text = line, .path = path, .number = number, .column = 1};
            if (!parse_row(kind, &item)) {
                fprintf(stderr, "%s:%d:1: error: not a row of the %s CSV\n", path, number,
                        kind == KIND_ROOFLINE ? "roofline" : "compare");
                status = EXIT_INVALID;
                break;
            }
            lines_push(&rows, item);
        }
        if (status == EXIT_OK && number == 0) {
            fprintf(stderr, "%s:1:1: error: empty: a shard writes at least its header\n", path);
            status = EXIT_INVALID;
        }
    }
    *m = (struct merged){.kind = kind, .rows = rows, .header = header};
    return status;
}

/* Deeper than any roofline or compare JSON nests, and within what json.h writes. */
#define MERGE_MAX_JSON_DEPTH 8

static int depth_of(const struct doc_node *n)
{
    int deepest = 0;
    for (size_t i = 0; n->kind != DOC_SCALAR && i < n->count; i++) {
        int d = depth_of(n->items[i]);
        deepest = d > deepest ? d : deepest;
    }
    return deepest + 1;
}

static bool same_node(const struct doc_node *a, const struct doc_node *b)
{
    if (a->kind != b->kind || a->count != b->count)
        return false;
    if (a->kind == DOC_SCALAR)
        return a->quoted == b->quoted && strcmp(a->text, b->text) == 0;
    for (size_t i = 0; i < a->count; i++)
        if ((a->kind == DOC_MAP && strcmp(a->keys[i]->text, b->keys[i]->text) != 0) ||
            !same_node(a->items[i], b->items[i]))
            return false;
    return true;
}

/* Writes `n` as it was read: strings escaped as rackplan escapes them, numbers as they stood.
 * A map's "best" is written as `best` says when `best` is not NULL. */
static void write_node(struct json *j, const struct doc_node *n, const bool *best)
{
    if (n->kind == DOC_SCALAR) {
        if (n->quoted)
            json_string(j, n->text);
        else
            json_literal(j, n->text);
        return;
    }
    if (n->kind == DOC_SEQ) {
        json_begin_array(j);
        for (size_t i = 0; i < n->count; i++)
            write_node(j, n->items[i], NULL);
        json_end_array(j);
        return;
    }
    json_begin_object(j);
    for (size_t i = 0; i < n->count; i++) {
        json_key(j, n->keys[i]->text);
        if (best && strcmp(n->keys[i]->text, "best") == 0)
            json_bool(j, *best);
        else
            write_node(j, n->items[i], NULL);
    }
    json_end_object(j);
}

static bool json_flag(const struct doc_node *n, bool *out)
{
    if (!n || n->kind != DOC_SCALAR || n->quoted)
        return false;
    *out = strcmp(n->text, "true") == 0;
    return *out || strcmp(n->text, "false") == 0;
}

/* A number; null reads as 0, rackplan's "not known" (no price). */
static bool json_amount(const struct doc_node *n, double *out)
{
    if (!n || n->kind != DOC_SCALAR || n->quoted)
        return false;
    if (strcmp(n->text, "null") == 0) {
        *out = 0;
        return true;
    }
    char *end;
    errno = 0;
    *out = strtod(n->text, &end);
    return !*end && !errno && end != n->text;
}

/* A point of a roofline part (keyed by its batch) or a row of a compare part (keyed by its
 * place in the run, with what compare_order needs). */
static bool parse_json_row(enum kind kind, const struct doc_node *first_row, struct line *l)
{
    const struct doc_node *n = l->node;
    if (n->kind != DOC_MAP || !first_row || n->count != first_row->count)
        return false;
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->keys[i]->text, first_row->keys[i]->text) != 0)
            return false;
    if (kind == KIND_ROOFLINE)
        return json_amount(doc_get(n, "batch"), &l->key) && l->key >= 1;
    bool fits, met;
    double per_device, cost;
    if (!json_flag(doc_get(n, "fits"), &fits) || !json_flag(doc_get(n, "tpot_met"), &met) ||
        !json_amount(doc_get(n, "tokens_per_s_per_device"), &per_device) ||
        !json_amount(doc_get(n, "cost_per_mtok"), &cost) || !json_amount(doc_get(n, "row"), &l->key) ||
        l->key < 0)
        return false;
    l->row = (struct compare_row){.fits = fits, .tpot_met = met, .cost_per_mtok = cost,
                                  .point = {.tokens_per_s_per_device = per_device}};
    return true;
}

/* Writes the merged JSON: the run's roofline object with every point, or the compare rows in the
 * unsharded run's order, the first marked best when it fits and meets the target. Returns
 * whether some compare row is best. */
static bool write_json(FILE *out, const struct merged *m)
{
    struct json j;
    json_init(&j, out, SYNTAX_JSON);
    bool best = true;
    if (m->kind == KIND_ROOFLINE) {
        json_begin_object(&j);
        for (size_t i = 0; i < m->run->count; i++) {
            json_key(&j, m->run->keys[i]->text);
            if (strcmp(m->run->keys[i]->text, "points") != 0) {
                write_node(&j, m->run->items[i], NULL);
                continue;
            }
            json_begin_array(&j);
            for (int64_t r = 0; r < m->rows.count; r++)
                write_node(&j, m->rows.items[r].node, NULL);
            json_end_array(&j);
        }
        json_end_object(&j);
    } else {
        int64_t *order = xcalloc((size_t)m->rows.count + 1, sizeof *order);
        best = compare_rank(&m->rows, order);
        json_begin_array(&j);
        for (int64_t rank = 0; rank < m->rows.count; rank++) {
            bool marked = rank == 0 && best;
            write_node(&j, m->rows.items[order[rank]].node, &marked);
        }
        json_end_array(&j);
        free(order);
    }
    json_finish(&j);
    return best;
}

/* Reads JSON parts: a roofline part is an object whose "points" are its share of the sweep,
 * everything else the same in every part; a compare part is a list of rows. */
static int read_json(const struct options *o, char **texts, const size_t *sizes, struct merged *m)
{
    int parts = o->positional_count;
    struct doc **docs = xcalloc((size_t)parts, sizeof *docs);
    struct lines rows = {0};
    const struct doc_node *first_row = NULL, *first_root = NULL;
    const char *first_path = NULL;
    enum kind kind = KIND_ROOFLINE;
    int status = EXIT_OK;
    for (int p = 0; p < parts && status == EXIT_OK; p++) {
        const char *path = o->positional[p];
        struct diags d;
        diags_init(&d);
        if (doc_load_buffer(path, texts[p], sizes[p], &docs[p], &d) != 0)
            status = EXIT_INVALID;
        diags_print(&d, stderr);
        diags_release(&d);
        if (status != EXIT_OK)
            break;
        const struct doc_node *root = docs[p]->root;
        const struct doc_node *points = doc_get(root, "points");
        bool roofline = points && points->kind == DOC_SEQ, compare = root->kind == DOC_SEQ;
        if ((!roofline && !compare) || depth_of(root) > MERGE_MAX_JSON_DEPTH) {
            fprintf(stderr, "%s:%d:%d: error: not the JSON of `rackplan roofline --shard` or "
                            "`rackplan compare --shard`\n", path, root->line, root->col);
            status = EXIT_INVALID;
            break;
        }
        if (!first_root) {
            first_root = root;
            first_path = path;
            kind = roofline ? KIND_ROOFLINE : KIND_COMPARE;
        } else if ((kind == KIND_ROOFLINE) != roofline) {
            fprintf(stderr, "%s:%d:%d: error: a %s part, but %s is a %s part: parts of one run share their command\n",
                    path, root->line, root->col, roofline ? "roofline" : "compare", first_path,
                    roofline ? "compare" : "roofline");
            status = EXIT_INVALID;
            break;
        }
        if (roofline) {
            /* Everything but the points is the run's: the same keys, in order, the same values. */
            bool same = root->count == first_root->count;
            for (size_t i = 0; same && i < root->count; i++) {
                const char *key = root->keys[i]->text;
                same = strcmp(key, first_root->keys[i]->text) == 0 &&
                       (strcmp(key, "points") == 0 || same_node(root->items[i], first_root->items[i]));
                if (!same)
                    fprintf(stderr, "%s:%d:%d: error: \"%s\" differs from %s's: parts of one run share "
                                    "everything but their points\n",
                            path, root->keys[i]->line, root->keys[i]->col, key, first_path);
            }
            if (!same && root->count != first_root->count)
                fprintf(stderr, "%s:%d:%d: error: %zu keys, %s has %zu: parts of one run share everything "
                                "but their points\n",
                        path, root->line, root->col, root->count, first_path, first_root->count);
            if (!same) {
                status = EXIT_INVALID;
                break;
            }
        }
        const struct doc_node *list = roofline ? points : root;
        for (size_t i = 0; i < list->count; i++) {
            struct line item = {.node = list->items[i], .path = path, .number = list->items[i]->line,
                                .column = list->items[i]->col};
            if (!first_row)
                first_row = item.node;
            if (!parse_json_row(kind, first_row, &item)) {
                fprintf(stderr, "%s:%d:%d: error: not a %s of the %s JSON (or its keys differ from %s's)\n",
                        path, item.number, item.column, kind == KIND_ROOFLINE ? "point" : "row",
                        kind == KIND_ROOFLINE ? "roofline" : "compare", first_path);
                status = EXIT_INVALID;
                break;
            }
            if (kind == KIND_COMPARE) {
                static const char *const run_keys[] = {"model", "context", "kind"};
                for (size_t k = 0; k < sizeof run_keys / sizeof *run_keys && status == EXIT_OK; k++) {
                    const struct doc_node *mine = doc_get(item.node, run_keys[k]);
                    const struct doc_node *theirs = doc_get(first_row, run_keys[k]);
                    if (mine && theirs && !same_node(mine, theirs)) {
                        fprintf(stderr, "%s:%d:%d: error: \"%s\" differs from %s's: parts of one run share it\n",
                                path, mine->line, mine->col, run_keys[k], first_path);
                        status = EXIT_INVALID;
                    }
                }
                if (status != EXIT_OK)
                    break;
            }
            lines_push(&rows, item);
        }
    }
    *m = (struct merged){.kind = kind, .rows = rows, .json = true, .run = first_root, .docs = docs};
    return status;
}

/* JSON when the first thing in the part opens an object or a list; CSV otherwise. */
static bool looks_like_json(const char *text)
{
    text += strspn(text, " \t\r\n");
    return *text == '{' || *text == '[';
}

int cmd_merge(int argc, char **argv)
{
    struct options o;
    int status = cli_parse(&command_merge, argc, argv, &o);
    if (status >= 0)
        return status;
    int parts = o.positional_count;
    char **texts = xcalloc((size_t)parts, sizeof *texts);
    size_t *sizes = xcalloc((size_t)parts, sizeof *sizes);
    bool json = false;
    status = EXIT_OK;
    for (int p = 0; p < parts && status == EXIT_OK; p++) {
        const char *path = o.positional[p];
        if (!(texts[p] = read_part(path, &sizes[p]))) {
            status = EXIT_IO;
            break;
        }
        if (strlen(texts[p]) != sizes[p]) {
            fprintf(stderr, "%s: error: holds a NUL byte: not a CSV or JSON part\n", path);
            status = EXIT_INVALID;
            break;
        }
        bool this_json = looks_like_json(texts[p]);
        if (p == 0)
            json = this_json;
        const char *wanted = o.format_set ? (o.format == FORMAT_JSON ? "JSON" : "CSV")
                             : p > 0      ? (json ? "JSON" : "CSV")
                                          : NULL;
        if (wanted && strcmp(wanted, this_json ? "JSON" : "CSV") != 0) {
            fprintf(stderr, "%s:1:1: error: %s, but %s %s: parts of one run share their format\n", path,
                    this_json ? "JSON" : "CSV", o.format_set ? "--format asks for" : "the first part is",
                    wanted);
            status = EXIT_INVALID;
        }
    }
    struct merged m = {0};
    if (status == EXIT_OK)
        status = json ? read_json(&o, texts, sizes, &m) : read_csv(&o, texts, &m);
    if (status == EXIT_OK && !sort_unique(&m.rows, m.kind))
        status = EXIT_INVALID;
    struct sink sink;
    if (status == EXIT_OK && !sink_open(&sink, o.output)) {
        status = EXIT_IO;
    } else if (status == EXIT_OK) {
        bool best = m.json ? write_json(sink.out, &m) : write_csv(sink.out, &m);
        if (!sink_commit(&sink))
            status = EXIT_IO;
        else if (!best)
            status = EXIT_NO_FIT;
    }
    free(m.rows.items);
    for (int p = 0; m.docs && p < parts; p++)
        doc_free(m.docs[p]);
    free(m.docs);
    for (int p = 0; p < parts; p++)
        free(texts[p]);
    free(texts);
    free(sizes);
    return status;
}
