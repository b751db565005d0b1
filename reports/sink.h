/* sink.h: an output being written: stdout, or a temporary file in the same directory renamed
 * over its path on success, so that a failed or interrupted run never leaves a half-written
 * file behind. */
#ifndef RACKPLAN_SINK_H
#define RACKPLAN_SINK_H

#include <stdbool.h>
#include <stdio.h>

struct sink {
    FILE *out;       /* NULL once closed */
    char *path;      /* a copy; NULL for stdout */
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

/* The outputs of one run (-o, --expert-map, --plot, --report and its figures), each written and
 * closed in turn, then renamed into place together, so that a run that fails midway leaves no
 * new file and every existing one as it was. */
struct sink_batch {
    struct sink *held;
    int count;
    bool failed;
};

void sink_batch_init(struct sink_batch *b);
/* Closes `s` (sink_close) and holds it for sink_batch_finish; a failure, or a sink that could
 * not be opened (`opened` false), fails the batch, and a failed batch removes `s` at once.
 * Returns whether the batch is still whole. */
bool sink_batch_add(struct sink_batch *b, struct sink *s, bool opened);
/* Moves every file `from` holds (and its failure) to the end of `into`. */
void sink_batch_adopt(struct sink_batch *into, struct sink_batch *from);
/* The whole file at `path`, written by `write(out, data)`, held in the batch. */
bool sink_batch_write(struct sink_batch *b, const char *path, void (*write)(FILE *out, const void *data),
                      const void *data);
/* Renames every held file into place, in the order added, when the batch is whole and `keep`;
 * otherwise removes them all. Returns whether they were renamed (a rename can still fail, which
 * takes a path turned into a directory meanwhile: the files renamed before it stay). */
bool sink_batch_finish(struct sink_batch *b, bool keep);

#endif
