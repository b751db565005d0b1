/* trace.h: a top-k routing trace: for every MoE layer and token, the experts it was routed to.
 *
 * CSV, optionally gzip-compressed (the only module that includes zlib.h): a header
 * `layer,token,e0,...,e{k-1}`, then one row per (layer, token); token ids are stable across
 * layers. A trace owns its arrays; trace_release frees them and accepts a zeroed struct.
 */
#ifndef RACKPLAN_TRACE_H
#define RACKPLAN_TRACE_H

#include "diag.h"

#include <stdint.h>

#define TRACE_MAX_ENTRIES 200000000 /* layers x tokens x k */

struct trace {
    int64_t layers;
    int64_t tokens;  /* token ids are 0 .. tokens - 1 */
    int64_t k;       /* experts per token */
    int32_t *expert; /* layers x tokens x k; -1 where a (layer, token) has no row */
};

enum trace_status { TRACE_OK = 0, TRACE_INVALID = 3, TRACE_IO_ERROR = 5 };

/* Reads `path`; `experts` bounds the expert ids (0 .. experts - 1). */
enum trace_status trace_read(const char *path, int64_t experts, struct trace *out, struct diags *d);
void trace_release(struct trace *t);

static inline const int32_t *trace_row(const struct trace *t, int64_t layer, int64_t token)
{
    return t->expert + (layer * t->tokens + token) * t->k;
}

#endif
