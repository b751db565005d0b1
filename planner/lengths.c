/* lengths.c: see lengths.h. */
#include "lengths.h"

#include "queueing.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- families ---- */

/* Is `text` -?[0-9]+ and within int64? Then *out is its value. */
static bool whole_number(const char *text, int64_t *out, bool *too_large)
{
    const char *p = text;
    if (*p == '-')
        p++;
    if (!*p)
        return false;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return false;
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    *too_large = errno == ERANGE;
    *out = (int64_t)v;
    return true;
}

/* A finite decimal number filling `text`. */
static bool real_number(const char *text, double *out)
{
    if (!*text)
        return false;
    char *after;
    errno = 0;
    double v = strtod(text, &after);
    if (*after != '\0' || errno == ERANGE || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* A length of tokens for a family: a whole number 1 .. LENGTHS_MAX_TOKENS. */
static bool family_length(const char *whole, const char *name, const char *field, double *out, char *error,
                          size_t error_size)
{
    int64_t v;
    bool too_large = false;
    if (!whole_number(field, &v, &too_large)) {
        snprintf(error, error_size, "length family '%s': %s must be a whole number of tokens, not '%s'", whole,
                 name, field);
        return false;
    }
    if (!too_large && v < 1) {
        snprintf(error, error_size, "length family '%s': %s must be at least 1 token", whole, name);
        return false;
    }
    if (too_large || v > LENGTHS_MAX_TOKENS) {
        snprintf(error, error_size, "length family '%s': %s is above 10^8 tokens", whole, name);
        return false;
    }
    *out = (double)v;
    return true;
}

bool length_family_parse(const char *text, struct length_family *out, char *error, size_t error_size)
{
    char buffer[128];
    if (strlen(text) >= sizeof buffer) {
        snprintf(error, error_size, "length family '%.40s...' is too long", text);
        return false;
    }
    strcpy(buffer, text);
    char *parts[4];
    int n = 0;
    for (char *p = buffer;; p++) {
        if (n < 4)
            parts[n] = p;
        n++;
        p = strchr(p, ':');
        if (!p)
            break;
        *p = '\0';
    }
    struct length_family f = {.kind = LENGTH_FIXED};
    if (strcmp(parts[0], "fixed") == 0) {
        if (n != 2) {
            snprintf(error, error_size, "length family '%s': expected fixed:N", text);
            return false;
        }
        if (!family_length(text, "N", parts[1], &f.a, error, error_size))
            return false;
    } else if (strcmp(parts[0], "uniform") == 0) {
        f.kind = LENGTH_UNIFORM;
        if (n != 3) {
            snprintf(error, error_size, "length family '%s': expected uniform:A:B", text);
            return false;
        }
        if (!family_length(text, "A", parts[1], &f.a, error, error_size) ||
            !family_length(text, "B", parts[2], &f.b, error, error_size))
            return false;
        if (f.a > f.b) {
            snprintf(error, error_size, "length family '%s': A must not exceed B", text);
            return false;
        }
    } else if (strcmp(parts[0], "lognormal") == 0) {
        f.kind = LENGTH_LOGNORMAL;
        if (n != 3) {
            snprintf(error, error_size, "length family '%s': expected lognormal:MEAN:CV", text);
            return false;
        }
        if (!real_number(parts[1], &f.a) || f.a <= 0 || f.a > LENGTHS_MAX_TOKENS) {
            snprintf(error, error_size,
                     "length family '%s': MEAN must be a number of tokens above 0 and at most 10^8, not '%s'", text,
                     parts[1]);
            return false;
        }
        if (!real_number(parts[2], &f.b) || f.b < 0 || f.b > 100) {
            snprintf(error, error_size, "length family '%s': CV must be a number from 0 to 100, not '%s'", text,
                     parts[2]);
            return false;
        }
    } else {
        snprintf(error, error_size,
                 "unknown length family '%s': expected fixed:N, uniform:A:B or lognormal:MEAN:CV", text);
        return false;
    }
    *out = f;
    return true;
}

double length_family_quantile(const struct length_family *f, double q)
{
    switch (f->kind) {
    case LENGTH_FIXED:
        return f->a;
    case LENGTH_UNIFORM:
        return f->a + q * (f->b - f->a);
    case LENGTH_LOGNORMAL: {
        double sigma2 = log1p(f->b * f->b);
        double mu = log(f->a) - sigma2 / 2;
        return exp(mu + sqrt(sigma2) * queue_normal_quantile(q));
    }
    }
    assert(!"unknown length family");
    return 1;
}

static int64_t whole_tokens(double x)
{
    if (!(x >= 1))
        return 1;
    if (x >= LENGTHS_MAX_TOKENS)
        return LENGTHS_MAX_TOKENS;
    return (int64_t)llround(x);
}

static void family_text(const struct length_family *f, char *buffer, size_t size)
{
    switch (f->kind) {
    case LENGTH_FIXED:
        snprintf(buffer, size, "fixed:%.0f", f->a);
        break;
    case LENGTH_UNIFORM:
        snprintf(buffer, size, "uniform:%.0f:%.0f", f->a, f->b);
        break;
    case LENGTH_LOGNORMAL:
        snprintf(buffer, size, "lognormal:%g:%g", f->a, f->b);
        break;
    }
}

/* ---- classes: sorting, merging, binning ---- */

static int by_isl_osl(const void *x, const void *y)
{
    const struct length_class *a = x, *b = y;
    if (a->isl != b->isl)
        return a->isl < b->isl ? -1 : 1;
    return (a->osl > b->osl) - (a->osl < b->osl);
}

static int by_osl_isl(const void *x, const void *y)
{
    const struct length_class *a = x, *b = y;
    if (a->osl != b->osl)
        return a->osl < b->osl ? -1 : 1;
    return (a->isl > b->isl) - (a->isl < b->isl);
}

/* Sorts by (isl, osl) and merges equal pairs (weights added); returns the new count. */
static int64_t sort_merge(struct length_class *c, int64_t n)
{
    if (n == 0)
        return 0;
    qsort(c, (size_t)n, sizeof *c, by_isl_osl);
    int64_t kept = 0;
    for (int64_t i = 1; i < n; i++) {
        if (c[i].isl == c[kept].isl && c[i].osl == c[kept].osl)
            c[kept].weight += c[i].weight;
        else
            c[++kept] = c[i];
    }
    return kept + 1;
}

/* The group (of LENGTHS_BIN_GRID) of an item whose cumulative weight runs from `before` to
 * before + w, out of `total`: the one holding its midpoint. */
static int bin_of(double before, double w, double total)
{
    double g = floor((before + w / 2) * LENGTHS_BIN_GRID / total);
    return g < 0 ? 0 : g >= LENGTHS_BIN_GRID ? LENGTHS_BIN_GRID - 1 : (int)g;
}

/* Bins n distinct classes sorted by (isl, osl) to at most LENGTHS_MAX_CLASSES (lengths.h);
 * returns the new count, the classes written over the first of `c`. */
static int64_t bin_classes(struct length_class *c, int64_t n)
{
    double total = 0;
    for (int64_t i = 0; i < n; i++)
        total += c[i].weight;
    struct cell {
        double weight, isl, osl;
    } *cells = xcalloc((size_t)LENGTHS_BIN_GRID * LENGTHS_BIN_GRID, sizeof *cells);
    double before = 0;
    int64_t start = 0;
    int group = n ? bin_of(0, c[0].weight, total) : 0;
    for (int64_t i = 0; i <= n; i++) {
        int g = i < n ? bin_of(before, c[i].weight, total) : -1;
        if (i < n)
            before += c[i].weight;
        if (i < n && g == group)
            continue;
        /* the group [start, i): by osl into cells */
        qsort(c + start, (size_t)(i - start), sizeof *c, by_osl_isl);
        double group_total = 0, inner = 0;
        for (int64_t j = start; j < i; j++)
            group_total += c[j].weight;
        for (int64_t j = start; j < i; j++) {
            struct cell *cell = &cells[group * LENGTHS_BIN_GRID + bin_of(inner, c[j].weight, group_total)];
            inner += c[j].weight;
            cell->weight += c[j].weight;
            cell->isl += c[j].weight * (double)c[j].isl;
            cell->osl += c[j].weight * (double)c[j].osl;
        }
        start = i;
        group = g;
    }
    int64_t count = 0;
    for (int64_t k = 0; k < (int64_t)LENGTHS_BIN_GRID * LENGTHS_BIN_GRID; k++) {
        if (cells[k].weight <= 0)
            continue;
        c[count++] = (struct length_class){.isl = whole_tokens(cells[k].isl / cells[k].weight),
                                           .osl = whole_tokens(cells[k].osl / cells[k].weight),
                                           .weight = cells[k].weight};
    }
    free(cells);
    return sort_merge(c, count);
}

/* Sorted, merged, binned if needed, normalised: the classes of a mix. Returns the count. */
static int64_t finish_classes(struct length_class *c, int64_t n)
{
    n = sort_merge(c, n);
    if (n > LENGTHS_MAX_CLASSES)
        n = bin_classes(c, n);
    double total = 0;
    for (int64_t i = 0; i < n; i++)
        total += c[i].weight;
    for (int64_t i = 0; i < n; i++)
        c[i].weight /= total;
    return n;
}

/* ---- building mixes ---- */

void length_mix_from_families(const struct length_family *isl, const struct length_family *osl, int points,
                              struct length_mix *out)
{
    assert(points >= 1 && points <= LENGTHS_MAX_POINTS);
    int ni = isl->kind == LENGTH_FIXED ? 1 : points, no = osl->kind == LENGTH_FIXED ? 1 : points;
    int64_t qi[LENGTHS_MAX_POINTS], qo[LENGTHS_MAX_POINTS];
    for (int i = 0; i < ni; i++)
        qi[i] = whole_tokens(length_family_quantile(isl, (i + 0.5) / ni));
    for (int j = 0; j < no; j++)
        qo[j] = whole_tokens(length_family_quantile(osl, (j + 0.5) / no));
    struct length_class *c = xmalloc((size_t)(ni * no) * sizeof *c);
    for (int i = 0; i < ni; i++)
        for (int j = 0; j < no; j++)
            c[i * no + j] = (struct length_class){.isl = qi[i], .osl = qo[j], .weight = 1.0 / (ni * no)};
    int64_t n = finish_classes(c, (int64_t)ni * no);
    char ti[64], to[64], description[256];
    family_text(isl, ti, sizeof ti);
    family_text(osl, to, sizeof to);
    snprintf(description, sizeof description,
             "isl %s x osl %s, independent, each cut into %d equal-probability classes", ti, to, points);
    *out = (struct length_mix){.classes = c, .count = n, .description = xstrdup(description)};
}

void length_mix_fixed(int64_t isl, int64_t osl, struct length_mix *out)
{
    assert(isl >= 1 && osl >= 1);
    struct length_class *c = xmalloc(sizeof *c);
    *c = (struct length_class){.isl = isl, .osl = osl, .weight = 1};
    char description[128];
    snprintf(description, sizeof description, "every request %lld prompt and %lld output tokens", (long long)isl,
             (long long)osl);
    *out = (struct length_mix){.classes = c, .count = 1, .description = xstrdup(description)};
}

/* ---- the CSV reader ---- */

struct field {
    char text[64];
    int col;   /* 1-based column of its first non-blank character (or of where it starts) */
    bool long_; /* longer than text holds */
};

/* Splits [p, stop) at commas into at most `max` fields (trimmed); returns how many there are
 * (which may exceed max: those beyond are counted, their column kept in extra_col). */
static int split_fields(const char *line, const char *stop, struct field *fields, int max, int *extra_col)
{
    int n = 0;
    const char *q = line;
    for (;;) {
        const char *start = q;
        while (q < stop && (*q == ' ' || *q == '\t'))
            q++;
        const char *text = q;
        while (q < stop && *q != ',')
            q++;
        const char *end = q;
        while (end > text && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (n < max) {
            struct field *f = &fields[n];
            size_t len = (size_t)(end - text);
            f->long_ = len >= sizeof f->text;
            if (f->long_)
                len = sizeof f->text - 1;
            memcpy(f->text, text, len);
            f->text[len] = '\0';
            f->col = (int)((text < stop ? text : start) - line) + 1;
        } else if (n == max) {
            *extra_col = (int)((text < stop ? text : start) - line) + 1;
        }
        n++;
        if (q >= stop)
            return n;
        q++; /* the comma */
    }
}

static bool length_field(const char *path, int line, const struct field *f, const char *name, int64_t *out,
                         struct diags *d)
{
    int64_t v;
    bool too_large = false;
    if (f->long_ || !whole_number(f->text, &v, &too_large)) {
        diags_add(d, path, line, f->col, "expected a whole number of tokens for %s, not '%s%s'", name, f->text,
                  f->long_ ? "..." : "");
        return false;
    }
    if (!too_large && v <= 0) {
        diags_add(d, path, line, f->col, "%s %s is not a positive number of tokens", name, f->text);
        return false;
    }
    if (too_large || v > LENGTHS_MAX_TOKENS) {
        diags_add(d, path, line, f->col, "%s %s is above 10^8 tokens", name, f->text);
        return false;
    }
    *out = v;
    return true;
}

static bool weight_field(const char *path, int line, const struct field *f, double *out, struct diags *d)
{
    double v;
    if (f->long_ || !real_number(f->text, &v)) {
        diags_add(d, path, line, f->col, "expected a weight (a number >= 0), not '%s%s'", f->text,
                  f->long_ ? "..." : "");
        return false;
    }
    if (v < 0) {
        diags_add(d, path, line, f->col, "weight %s is negative", f->text);
        return false;
    }
    if (v > LENGTHS_MAX_WEIGHT) {
        diags_add(d, path, line, f->col, "weight %s is above 10^15", f->text);
        return false;
    }
    *out = v;
    return true;
}

/* Appends `text` to the description being gathered, a space between parts. */
static void append_description(char **description, const char *text, size_t length)
{
    size_t old = *description ? strlen(*description) : 0;
    *description = xrealloc(*description, old + length + 2);
    if (old)
        (*description)[old++] = ' ';
    memcpy(*description + old, text, length);
    (*description)[old + length] = '\0';
}

enum lengths_status length_mix_read_buffer(const char *path, const char *data, size_t size, struct length_mix *out,
                                           struct diags *d)
{
    if (size > LENGTHS_MAX_BYTES) {
        diags_add(d, path, 0, 0, "file is larger than %u MiB", LENGTHS_MAX_BYTES >> 20);
        return LENGTHS_INVALID;
    }
    const char *nul = memchr(data, '\0', size);
    if (nul) {
        int line = 1, col = 1;
        text_position(data, nul, &line, &col);
        diags_add(d, path, line, col, "a NUL byte: not a CSV of request lengths");
        return LENGTHS_INVALID;
    }
    static const char *const names[] = {"isl", "osl", "weight"};
    size_t cap = 1024;
    int64_t n = 0;
    struct length_class *c = xmalloc(cap * sizeof *c);
    char *description = NULL;
    int columns = 0, header_columns = 0, line = 0, weight_line = 0, weight_col = 0;
    int64_t rows = 0;
    bool any_weight = false;
    const char *p = data, *end = data + size;
    enum lengths_status status = LENGTHS_OK;
    for (; p < end && status == LENGTHS_OK; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *stop = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        const char *here = p;
        p = eol + 1;
        const char *q = here;
        while (q < stop && (*q == ' ' || *q == '\t'))
            q++;
        if (q == stop)
            continue;
        if (*q == '#') {
            static const char key[] = "description:";
            q++;
            while (q < stop && (*q == ' ' || *q == '\t'))
                q++;
            if (columns == 0 && (size_t)(stop - q) >= sizeof key - 1 && memcmp(q, key, sizeof key - 1) == 0) {
                q += sizeof key - 1;
                while (q < stop && (*q == ' ' || *q == '\t'))
                    q++;
                const char *e = stop;
                while (e > q && (e[-1] == ' ' || e[-1] == '\t'))
                    e--;
                if (e > q)
                    append_description(&description, q, (size_t)(e - q));
            }
            continue;
        }
        struct field f[3];
        int extra_col = 0;
        int fields = split_fields(here, stop, f, 3, &extra_col);
        int at = line + 1;
        if (columns == 0 && n == 0 && strcmp(f[0].text, "isl") == 0) { /* the header */
            if (fields < 2 || fields > 3) {
                diags_add(d, path, at, fields > 3 ? extra_col : (int)(stop - here) + 1,
                          "expected a header isl,osl or isl,osl,weight");
                status = LENGTHS_INVALID;
                break;
            }
            for (int i = 1; i < fields; i++)
                if (strcmp(f[i].text, names[i]) != 0) {
                    diags_add(d, path, at, f[i].col, "header: expected '%s', not '%s'", names[i], f[i].text);
                    status = LENGTHS_INVALID;
                }
            header_columns = columns = fields;
            continue;
        }
        if (columns == 0) {
            if (fields < 2 || fields > 3) {
                diags_add(d, path, at, fields > 3 ? extra_col : (int)(stop - here) + 1,
                          "expected isl,osl (a request) or isl,osl,weight (a class), not %d field%s", fields,
                          fields == 1 ? "" : "s");
                status = LENGTHS_INVALID;
                break;
            }
            columns = fields;
        } else if (fields != columns) {
            diags_add(d, path, at, fields > columns ? (columns < 3 ? f[columns].col : extra_col) : (int)(stop - here) + 1,
                      "%d fields here; the %s has %d", fields, header_columns ? "header" : "first row", columns);
            status = LENGTHS_INVALID;
            break;
        }
        rows++;
        struct length_class k = {.weight = 1};
        if (!length_field(path, at, &f[0], "isl", &k.isl, d) || !length_field(path, at, &f[1], "osl", &k.osl, d) ||
            (columns == 3 && !weight_field(path, at, &f[2], &k.weight, d))) {
            status = LENGTHS_INVALID;
            break;
        }
        if (columns == 3 && !weight_line) {
            weight_line = at;
            weight_col = f[2].col;
        }
        if (k.weight > 0)
            any_weight = true;
        else
            continue; /* a class of weight 0 is no class */
        if ((size_t)n == cap) {
            cap *= 2;
            c = xrealloc(c, cap * sizeof *c);
        }
        c[n++] = k;
    }
    if (status == LENGTHS_OK && rows == 0) {
        diags_add(d, path, 0, 0, "no request lengths: the file has no data rows");
        status = LENGTHS_INVALID;
    } else if (status == LENGTHS_OK && !any_weight) {
        diags_add(d, path, weight_line, weight_col, "every weight is 0");
        status = LENGTHS_INVALID;
    }
    if (status != LENGTHS_OK) {
        free(c);
        free(description);
        return status;
    }
    n = finish_classes(c, n);
    if (!description) {
        size_t length = strlen(path) + 32;
        description = xmalloc(length);
        snprintf(description, length, "lengths from %s", path);
    }
    *out = (struct length_mix){.classes = xrealloc(c, (size_t)n * sizeof *c), .count = n,
                               .description = description};
    return LENGTHS_OK;
}

enum lengths_status length_mix_read_csv(const char *path, struct length_mix *out, struct diags *d)
{
    char *data;
    size_t size;
    if (file_read_all(path, LENGTHS_MAX_BYTES, &data, &size, d) < 0)
        return LENGTHS_IO_ERROR;
    enum lengths_status status = length_mix_read_buffer(path, data, size, out, d);
    free(data);
    return status;
}

/* ---- statistics ---- */

static double mean_of(const struct length_mix *m, bool osl)
{
    double sum = 0, total = 0;
    for (int64_t i = 0; i < m->count; i++) {
        sum += m->classes[i].weight * (double)(osl ? m->classes[i].osl : m->classes[i].isl);
        total += m->classes[i].weight;
    }
    return total > 0 ? sum / total : 0;
}

double length_mix_mean_isl(const struct length_mix *m)
{
    return mean_of(m, false);
}

double length_mix_mean_osl(const struct length_mix *m)
{
    return mean_of(m, true);
}

static int64_t quantile_of(const struct length_mix *m, double p, bool osl)
{
    assert(m->count >= 1);
    struct length_class *c = xmalloc((size_t)m->count * sizeof *c);
    memcpy(c, m->classes, (size_t)m->count * sizeof *c);
    if (osl)
        qsort(c, (size_t)m->count, sizeof *c, by_osl_isl);
    double total = 0;
    for (int64_t i = 0; i < m->count; i++)
        total += c[i].weight;
    double target = p * total - 1e-12 * total, cumulative = 0;
    int64_t value = osl ? c[m->count - 1].osl : c[m->count - 1].isl;
    for (int64_t i = 0; i < m->count; i++) {
        cumulative += c[i].weight;
        if (cumulative >= target) {
            value = osl ? c[i].osl : c[i].isl;
            break;
        }
    }
    free(c);
    return value;
}

int64_t length_mix_isl_quantile(const struct length_mix *m, double p)
{
    return quantile_of(m, p, false);
}

int64_t length_mix_osl_quantile(const struct length_mix *m, double p)
{
    return quantile_of(m, p, true);
}

/* ---- scaling the outputs ---- */

static int64_t scaled_osl(int64_t osl, double factor, int64_t cap)
{
    int64_t tokens = whole_tokens(factor * (double)osl);
    return cap > 0 && tokens > cap ? cap : tokens;
}

static double scaled_mean_osl(const struct length_mix *m, double factor, int64_t cap)
{
    double sum = 0, total = 0;
    for (int64_t i = 0; i < m->count; i++) {
        sum += m->classes[i].weight * (double)scaled_osl(m->classes[i].osl, factor, cap);
        total += m->classes[i].weight;
    }
    return sum / total;
}

bool length_mix_scale_osl(struct length_mix *m, double mean, int64_t cap, double *factor)
{
    assert(m->count >= 1);
    if (!(mean >= 1) || mean > LENGTHS_MAX_TOKENS || (cap > 0 && (double)cap < mean))
        return false;
    double shortest = (double)length_mix_osl_quantile(m, 0), before = length_mix_mean_osl(m);
    /* The scaled mean is a step function of the factor, nondecreasing: bisect for the least
     * factor that reaches `mean`, every class at least mean + 1/2 (or at the cap) at `high`. */
    double low = 0, high = (cap > 0 ? (double)cap : mean + 1) / shortest + 1;
    for (int i = 0; i < 200 && high - low > 1e-12 * high; i++) {
        double middle = (low + high) / 2;
        if (scaled_mean_osl(m, middle, cap) >= mean)
            high = middle;
        else
            low = middle;
    }
    double chosen = mean - scaled_mean_osl(m, low, cap) < scaled_mean_osl(m, high, cap) - mean ? low : high;
    for (int64_t i = 0; i < m->count; i++)
        m->classes[i].osl = scaled_osl(m->classes[i].osl, chosen, cap);
    m->count = finish_classes(m->classes, m->count);
    char text[256];
    int written = snprintf(text, sizeof text, "; outputs scaled x%.4g to a mean of %.1f tokens (from %.1f)%s", chosen,
                           length_mix_mean_osl(m), before, cap > 0 ? ", none past max_tokens" : "");
    size_t length = strlen(m->description);
    m->description = xrealloc(m->description, length + (size_t)written + 1);
    memcpy(m->description + length, text, (size_t)written + 1);
    if (factor)
        *factor = chosen;
    return true;
}

void length_mix_release(struct length_mix *m)
{
    if (!m)
        return;
    free(m->classes);
    free(m->description);
    memset(m, 0, sizeof *m);
}
