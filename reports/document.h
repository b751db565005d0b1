/* document.h: a report a person reads, as Markdown with its figures written beside it as SVG
 * files, or as one self-contained HTML page with the SVG inline. The format follows the path's
 * extension (.md, .html or .htm). Every file is written through a sink (sink.h): a failure
 * never leaves a half-written file. Text is escaped for the format; numbers are the caller's. */
#ifndef RACKPLAN_DOCUMENT_H
#define RACKPLAN_DOCUMENT_H

#include "sink.h"

#include <stdbool.h>
#include <stdio.h>

enum document_format { DOCUMENT_MARKDOWN, DOCUMENT_HTML };

struct document {
    enum document_format format;
    struct sink sink;
    const char *path;
    int columns; /* of the open table */
    /* Markdown's figures, written and closed but renamed into place only with the report, so
     * that a failed report leaves no new file and every old one as it was. */
    struct sink_batch files;
};

/* `text` with <, >, & and " escaped, for HTML and SVG. */
void document_escape_xml(FILE *out, const char *text);

/* Is `path` a report path (.md, .html, .htm)? */
bool document_path_ok(const char *path);

/* Opens the report; `title` heads it. On failure prints why and returns false. */
bool document_open(struct document *d, const char *path, const char *title);
void document_heading(struct document *d, const char *text);
void document_paragraph(struct document *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `align` has one letter a column: 'l' or 'r'. */
void document_table_begin(struct document *d, int columns, const char *const *headers, const char *align);
void document_table_row(struct document *d, const char *const *cells);
void document_table_end(struct document *d);
/* A figure drawn by `draw(out, data)`: for Markdown into PATH-STEM-`name`.svg beside the report,
 * linked with `caption`; for HTML inline. */
void document_figure(struct document *d, const char *name, const char *caption,
                     void (*draw)(FILE *out, const void *data), const void *data);
/* Ends the report and hands its figures, then it, to `outputs` (sink.h), to be renamed into
 * place with the run's other files; the report never links a figure that is not there yet. */
void document_hold(struct document *d, struct sink_batch *outputs);
/* document_hold into a batch of its own, finished at once. False, after printing why, when the
 * report or a figure could not be written: then no file was renamed. */
bool document_commit(struct document *d);

#endif
