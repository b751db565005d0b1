/* sink.h: an output being written: stdout, or a temporary file in the same directory renamed
 * over its path on success, so that a failed or interrupted run never leaves a half-written
 * file behind. */
#ifndef RACKPLAN_SINK_H
#define RACKPLAN_SINK_H

#include <stdbool.h>
#include <stdio.h>

struct sink {
    FILE *out; /* NULL once closed */
    const char *path;
    char *temp_path;
};

/* Opens the sink for `path` (NULL: stdout). On failure, such as `path` being a directory,
 * prints why and returns false. */
bool sink_open(struct sink *s, const char *path);
/* Flushes, syncs and closes the temporary file without renaming it, so that several files can
 * be finished before any replaces its path. On failure removes it, prints why and returns false
 * (the sink is then done with). Stdout is flushed and stays open. */
bool sink_close(struct sink *s);
/* Closes (when sink_close has not) and renames into place. On failure removes the temporary
 * file, leaves any existing file untouched, prints why and returns false. */
bool sink_commit(struct sink *s);
/* Abandons the output: removes the temporary file. */
void sink_abort(struct sink *s);
/* The whole file at `path`, written by `write(out, data)` through a sink. */
bool sink_write(const char *path, void (*write)(FILE *out, const void *data), const void *data);

#endif
