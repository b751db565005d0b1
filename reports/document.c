/* document.c: see document.h. */
#include "document.h"

#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

bool document_path_ok(const char *path)
{
    return path_ends_with(path, ".md") || path_ends_with(path, ".html") || path_ends_with(path, ".htm");
}

void document_escape_xml(FILE *out, const char *text)
{
    for (const char *c = text; *c; c++) {
        if (*c == '<')
            fputs("&lt;", out);
        else if (*c == '>')
            fputs("&gt;", out);
        else if (*c == '&')
            fputs("&amp;", out);
        else if (*c == '"')
            fputs("&quot;", out);
        else
            fputc(*c, out);
    }
}

/* In a Markdown table cell a '|' would end the cell. */
static void put_markdown(FILE *out, const char *text, bool in_table)
{
    for (const char *c = text; *c; c++) {
        if (in_table && *c == '|')
            fputs("\\|", out);
        else if (*c == '\n' && in_table)
            fputc(' ', out);
        else
            fputc(*c, out);
    }
}

static void put(struct document *d, const char *text, bool in_table)
{
    if (d->format == DOCUMENT_HTML)
        document_escape_xml(d->sink.out, text);
    else
        put_markdown(d->sink.out, text, in_table);
}

bool document_open(struct document *d, const char *path, const char *title)
{
    memset(d, 0, sizeof *d);
    d->path = path;
    d->format = path_ends_with(path, ".md") ? DOCUMENT_MARKDOWN : DOCUMENT_HTML;
    if (!sink_open(&d->sink, path))
        return false;
    FILE *out = d->sink.out;
    if (d->format == DOCUMENT_MARKDOWN) {
        fputs("# ", out);
        put(d, title, false);
        fputs("\n\n", out);
        return true;
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", out);
    put(d, title, false);
    fputs("</title>\n<style>\n"
          "body { font-family: Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px; "
          "color: #222; }\n"
          "table { border-collapse: collapse; margin: 1em 0; }\n"
          "th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; }\n"
          "th { background: #f0f0f0; }\n"
          "td.r { text-align: right; font-variant-numeric: tabular-nums; }\n"
          "figure { margin: 1.5em 0; }\n"
          "figure svg { max-width: 100%; height: auto; }\n"
          "figcaption { color: #555; }\n"
          "</style>\n</head>\n<body>\n<h1>", out);
    put(d, title, false);
    fputs("</h1>\n", out);
    return true;
}

void document_heading(struct document *d, const char *text)
{
    fputs(d->format == DOCUMENT_HTML ? "<h2>" : "## ", d->sink.out);
    put(d, text, false);
    fputs(d->format == DOCUMENT_HTML ? "</h2>\n" : "\n\n", d->sink.out);
}

void document_paragraph(struct document *d, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    va_list copy;
    va_copy(copy, args);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    char *text = xmalloc((size_t)(n > 0 ? n : 0) + 1);
    vsnprintf(text, (size_t)n + 1, fmt, args);
    va_end(args);
    fputs(d->format == DOCUMENT_HTML ? "<p>" : "", d->sink.out);
    put(d, text, false);
    fputs(d->format == DOCUMENT_HTML ? "</p>\n" : "\n\n", d->sink.out);
    free(text);
}

void document_table_begin(struct document *d, int columns, const char *const *headers, const char *align)
{
    FILE *out = d->sink.out;
    d->columns = columns;
    if (d->format == DOCUMENT_HTML) {
        fputs("<table>\n<tr>", out);
        for (int i = 0; i < columns; i++) {
            fputs("<th>", out);
            put(d, headers[i], true);
            fputs("</th>", out);
        }
        fputs("</tr>\n", out);
        return;
    }
    fputs("|", out);
    for (int i = 0; i < columns; i++) {
        fputs(" ", out);
        put(d, headers[i], true);
        fputs(" |", out);
    }
    fputs("\n|", out);
    for (int i = 0; i < columns; i++)
        fputs(align[i] == 'r' ? " ---: |" : " --- |", out);
    fputs("\n", out);
}

void document_table_row(struct document *d, const char *const *cells)
{
    FILE *out = d->sink.out;
    fputs(d->format == DOCUMENT_HTML ? "<tr>" : "|", out);
    for (int i = 0; i < d->columns; i++) {
        if (d->format == DOCUMENT_HTML) {
            /* right-aligned when it reads as a number */
            bool numeric = cells[i][0] && strchr("0123456789-.", cells[i][0]);
            fputs(numeric ? "<td class=\"r\">" : "<td>", out);
            put(d, cells[i], true);
            fputs("</td>", out);
        } else {
            fputs(" ", out);
            put(d, cells[i], true);
            fputs(" |", out);
        }
    }
    fputs(d->format == DOCUMENT_HTML ? "</tr>\n" : "\n", out);
}

void document_table_end(struct document *d)
{
    fputs(d->format == DOCUMENT_HTML ? "</table>\n" : "\n", d->sink.out);
    d->columns = 0;
}

void document_figure(struct document *d, const char *name, const char *caption,
                     void (*draw)(FILE *out, const void *data), const void *data)
{
    FILE *out = d->sink.out;
    if (d->format == DOCUMENT_HTML) {
        fputs("<figure>\n", out);
        draw(out, data);
        fputs("<figcaption>", out);
        put(d, caption, false);
        fputs("</figcaption>\n</figure>\n", out);
        return;
    }
    size_t stem = strlen(d->path) - strlen(".md");
    size_t size = stem + strlen(name) + 8;
    char *svg_path = xmalloc(size);
    snprintf(svg_path, size, "%.*s-%s.svg", (int)stem, d->path, name);
    const char *base = strrchr(svg_path, '/');
    base = base ? base + 1 : svg_path;
    fputs("![", out);
    put(d, caption, false);
    fprintf(out, "](%s)\n\n", base);
    struct sink figure;
    bool opened = !d->files.failed && sink_open(&figure, svg_path);
    if (opened)
        draw(figure.out, data);
    sink_batch_add(&d->files, &figure, opened);
    free(svg_path);
}

void document_hold(struct document *d, struct sink_batch *outputs)
{
    if (d->format == DOCUMENT_HTML)
        fputs("</body>\n</html>\n", d->sink.out);
    /* the figures first: the report never links a figure that is not there yet */
    sink_batch_adopt(outputs, &d->files);
    sink_batch_add(outputs, &d->sink, true);
}

bool document_commit(struct document *d)
{
    struct sink_batch outputs;
    sink_batch_init(&outputs);
    document_hold(d, &outputs);
    return sink_batch_finish(&outputs, true);
}
