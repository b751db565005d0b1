/* cmd_merge.c: `rackplan merge PART...`: the CSV parts of a sharded roofline or compare run,
 * joined into what the run without --shard writes. */
#include "cli.h"
#include "commands.h"
#include "compare.h"
#include "diag.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A part bigger than this is not the output of one shard. */
#define MERGE_MAX_PART_BYTES ((size_t)1 << 30)

struct line {
    char *text;        /* without its newline */
    const char *path;  /* of its part */
    int number;        /* 1-based, in its part */
    double key;        /* roofline: the batch; compare: the row's place in the whole run */
    struct compare_row row;
};

struct lines {
    struct line *items;
    int64_t count, capacity;
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
        diags_add(&d, path, 0, 0, "larger than %zu bytes: not one shard's CSV", MERGE_MAX_PART_BYTES);
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

enum kind { KIND_ROOFLINE, KIND_COMPARE };

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

/* Writes the rows in the unsharded run's order: roofline by batch; compare as compare_order
 * sorts them (from the rows in run order, so that ties fall the same way), the first marked
 * best when it fits and meets the target. Returns whether some compare row is best. */
static bool write_rows(FILE *out, enum kind kind, const char *header, struct lines *rows)
{
    fprintf(out, "%s\n", header);
    qsort(rows->items, (size_t)rows->count, sizeof *rows->items, by_key);
    if (kind == KIND_ROOFLINE) {
        for (int64_t i = 0; i < rows->count; i++)
            fprintf(out, "%s\n", rows->items[i].text);
        return true;
    }
    int64_t n = rows->count;
    struct compare_row *list = xcalloc((size_t)n + 1, sizeof *list);
    int64_t *order = xcalloc((size_t)n + 1, sizeof *order);
    for (int64_t i = 0; i < n; i++)
        list[i] = rows->items[i].row;
    compare_order(list, n, order);
    bool best = n > 0 && list[order[0]].fits && list[order[0]].tpot_met;
    for (int64_t rank = 0; rank < n; rank++) {
        const char *rest = strchr(rows->items[order[rank]].text, ',');
        fprintf(out, "%s%s\n", rank == 0 && best ? "true" : "false", rest);
    }
    free(order);
    free(list);
    return best;
}

int cmd_merge(int argc, char **argv)
{
    struct options o;
    int status = cli_parse(&command_merge, argc, argv, &o);
    if (status >= 0)
        return status;
    int parts = o.positional_count;
    char **texts = xcalloc((size_t)parts, sizeof *texts);
    struct lines rows = {0};
    const char *header = NULL, *header_path = NULL;
    enum kind kind = KIND_ROOFLINE;
    status = EXIT_OK;
    for (int p = 0; p < parts && status == EXIT_OK; p++) {
        const char *path = o.positional[p];
        size_t size;
        if (!(texts[p] = read_part(path, &size))) {
            status = EXIT_IO;
            break;
        }
        if (strlen(texts[p]) != size) {
            fprintf(stderr, "%s: error: holds a NUL byte: not a CSV\n", path);
            status = EXIT_INVALID;
            break;
        }
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
            struct line item = {.text = line, .path = path, .number = number};
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
    if (status == EXIT_OK) {
        qsort(rows.items, (size_t)rows.count, sizeof *rows.items, by_key);
        for (int64_t i = 1; i < rows.count && status == EXIT_OK; i++) {
            if (rows.items[i].key == rows.items[i - 1].key) {
                fprintf(stderr, "%s:%d:1: error: %s %.0f is also in %s:%d: the same shard given twice?\n",
                        rows.items[i].path, rows.items[i].number, kind == KIND_ROOFLINE ? "batch" : "row",
                        rows.items[i].key, rows.items[i - 1].path, rows.items[i - 1].number);
                status = EXIT_INVALID;
            }
        }
    }
    if (status == EXIT_OK) {
        struct sink sink;
        if (!sink_open(&sink, o.output)) {
            status = EXIT_IO;
        } else {
            bool best = write_rows(sink.out, kind, header, &rows);
            if (!sink_commit(&sink))
                status = EXIT_IO;
            else if (!best)
                status = EXIT_NO_FIT;
        }
    }
    free(rows.items);
    for (int p = 0; p < parts; p++)
        free(texts[p]);
    free(texts);
    return status;
}
