/* diag.c: see diag.h. */
#include "diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        fputs("rackplan: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        fputs("rackplan: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p) {
        fputs("rackplan: out of memory\n", stderr);
        abort();
    }
    return p;
}

char *xstrdup(const char *text)
{
    size_t n = strlen(text) + 1;
    char *p = xmalloc(n);
    memcpy(p, text, n);
    return p;
}

void diags_init(struct diags *d)
{
    d->entries = NULL;
    d->count = 0;
    d->dropped = 0;
}

void diags_release(struct diags *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++) {
        free(d->entries[i].path);
        free(d->entries[i].message);
    }
    free(d->entries);
    diags_init(d);
}

void diags_add(struct diags *d, const char *path, int line, int col, const char *fmt, ...)
{
    if (d->count >= DIAGS_MAX) {
        d->dropped++;
        return;
    }
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    d->entries = xrealloc(d->entries, (d->count + 1) * sizeof *d->entries);
    d->entries[d->count++] = (struct diag){
        .path = xstrdup(path ? path : "<input>"),
        .line = line,
        .col = col,
        .message = xstrdup(message),
    };
}

void diag_format(const struct diag *e, char *buffer, size_t size)
{
    if (e->line > 0 && e->col > 0)
        snprintf(buffer, size, "%s:%d:%d: error: %s", e->path, e->line, e->col, e->message);
    else if (e->line > 0)
        snprintf(buffer, size, "%s:%d: error: %s", e->path, e->line, e->message);
    else
        snprintf(buffer, size, "%s: error: %s", e->path, e->message);
}

void diags_print(const struct diags *d, FILE *out)
{
    char line[1400];
    for (size_t i = 0; i < d->count; i++) {
        diag_format(&d->entries[i], line, sizeof line);
        fprintf(out, "%s\n", line);
    }
    if (d->dropped)
        fprintf(out, "rackplan: %zu more errors not shown\n", d->dropped);
}

bool path_ends_with(const char *path, const char *suffix)
{
    size_t a = strlen(path), b = strlen(suffix);
    return a > b && strcmp(path + a - b, suffix) == 0;
}

int file_read_all(const char *path, size_t limit, char **data, size_t *size, struct diags *d)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        diags_add(d, path, 0, 0, "unable to open: %s", strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, length = 0;
    char *buffer = xmalloc(cap + 1);
    for (;;) {
        size_t got = fread(buffer + length, 1, cap - length, f);
        length += got;
        if (got == 0 || length > limit)
            break;
        if (length == cap) {
            cap *= 2;
            buffer = xrealloc(buffer, cap + 1);
        }
    }
    int saved = errno;
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        diags_add(d, path, 0, 0, "unable to read: %s", strerror(saved));
        free(buffer);
        return -1;
    }
    buffer[length] = '\0';
    *data = buffer;
    *size = length;
    return 0;
}

void text_position(const char *from, const char *to, int *line, int *col)
{
    for (const char *p = from; p < to; p++) {
        if (*p == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}
