/* diag.h: diagnostics about user input, collected with their source location.
 *
 * Every problem in a file a user gave us becomes one entry, printed as
 * `path:line:col: error: message` (or `path:line: error: message` when the column is unknown,
 * or `path: error: message` when the line is). Lines and columns are 1-based; 0 means unknown.
 * A diags list owns copies of its strings. Collection stops after DIAGS_MAX entries, and a final
 * "too many errors" entry says so. Allocation failure aborts (there is nothing useful to do).
 */
#ifndef RACKPLAN_DIAG_H
#define RACKPLAN_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define DIAGS_MAX 20

struct diag {
    char *path;
    int line;
    int col;
    char *message;
};

struct diags {
    struct diag *entries;
    size_t count;
    size_t dropped;
};

void diags_init(struct diags *d);
void diags_release(struct diags *d);

/* Moves the 1-based (*line, *col) of `from` on to that of `to`, counting bytes. */
void text_position(const char *from, const char *to, int *line, int *col);

void diags_add(struct diags *d, const char *path, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Prints every entry, one a line, to `out`. */
void diags_print(const struct diags *d, FILE *out);

/* The i-th entry formatted as printed, in a buffer of `size` bytes (truncated if needed). */
void diag_format(const struct diag *entry, char *buffer, size_t size);

/* Reads a whole file into *data (NUL-terminated, caller frees) and its length into *size,
 * stopping after limit + 1 bytes so that callers can refuse an oversize file without reading
 * it all. Returns 0, or -1 after adding a diagnostic (unable to open or read). */
int file_read_all(const char *path, size_t limit, char **data, size_t *size, struct diags *d);

/* Does `path` end in `suffix` (after at least one other character)? */
bool path_ends_with(const char *path, const char *suffix);

/* Seconds on a monotonic clock, for time limits and timings. */
double monotonic_seconds(void);

/* malloc/realloc/strdup that abort on failure. */
void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *text);

#endif
