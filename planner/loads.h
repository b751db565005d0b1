/* loads.h: expert-load matrices: rows = MoE layers, columns = experts, values = tokens routed.
 * Two forms are read: the CSV DeepSeek's EPLB takes (no header, one row per MoE layer), and
 * SGLang's record of expert loads, a JSON object whose `logical_count` holds one row per model
 * layer (dense layers' rows all zero), or a leading dimension of ranks or steps to sum over, as
 * its expert-distribution recorder writes and `--init-expert-location` reads.
 *
 * A loads owns its matrix; loads_release frees it and accepts a zeroed struct. Readers add a
 * diagnostic with line and column for every problem and leave *out untouched on failure.
 */
#ifndef RACKPLAN_LOADS_H
#define RACKPLAN_LOADS_H

#include "diag.h"
#include "model.h"

#include <stdbool.h>
#include <stdint.h>

#define LOADS_MAX_BYTES (256u << 20)
#define LOADS_MAX_CELLS 100000000
/* More tokens than any trace holds, and few enough that sums of a million cells stay exact
 * far beyond what the placement compares. */
#define LOADS_MAX_TOKENS 1e15

struct loads {
    int64_t layers;
    int64_t experts;
    double *tokens; /* layers x experts, row-major */
    int *lines;     /* the file's line of each row, for messages; NULL when not read from a file */
    int *columns;   /* and its column, when rows share lines (JSON); NULL: column 1 */
    bool model_layers; /* one row per model layer (logical_count): loads_check_model drops the
                        * dense layers' rows */
};

enum loads_status { LOADS_OK = 0, LOADS_INVALID = 3, LOADS_IO_ERROR = 5 };

enum loads_status loads_read(const char *path, struct loads *out, struct diags *d);
enum loads_status loads_read_buffer(const char *path, const char *data, size_t size,
                                    struct loads *out, struct diags *d);
void loads_release(struct loads *l);

/* Uniform loads: every expert of every MoE layer gets `tokens`. */
void loads_uniform(const struct model *m, double tokens, struct loads *out);

/* The matrix must have one row per MoE layer and one column per routed expert of `m`; read
 * from a logical_count, one row per model layer, the dense layers' rows all zero, which are
 * then dropped. */
enum loads_status loads_check_model(struct loads *l, const struct model *m, const char *path,
                                    struct diags *d);

static inline double loads_at(const struct loads *l, int64_t layer, int64_t expert)
{
    return l->tokens[layer * l->experts + expert];
}

#endif
