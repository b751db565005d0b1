/* lengths.h: request length distributions: a mix of (prompt, output) token-length classes with
 * weights, read from a CSV, built from parametric families, or one fixed pair.
 *
 * A mix is a list of classes, each a prompt length `isl` and an output length `osl` in whole
 * tokens (1 <= isl, osl <= LENGTHS_MAX_TOKENS) and a weight: the share of requests of that class.
 * Invariants of every mix this module returns: 1 <= count <= LENGTHS_MAX_CLASSES; the classes
 * are sorted by (isl, osl) and no two are equal; every weight is > 0 and they sum to 1 (within
 * rounding). `description` says what the mix is and where it comes from, one line, for commands
 * to print ("MLPerf Inference Llama 2 70B (OpenOrca), ..."). A mix owns its classes and its
 * description; length_mix_release frees both and accepts a zeroed mix or NULL. Everything here is
 * deterministic: the same input gives the same classes, bit for bit.
 *
 * CSV form (length_mix_read_csv):
 *   - blank lines are skipped; a line whose first non-blank character is '#' is a comment;
 *   - comment lines of the form `# description: TEXT` that come before the first data row give
 *     the description (the TEXTs of several such lines joined by one space); without one the
 *     description is "lengths from PATH". Other comments are for the reader;
 *   - an optional header line, before any data row: `isl,osl` or `isl,osl,weight`;
 *   - every data row has the same number of fields, 2 or 3, separated by commas (spaces and tabs
 *     around a field are ignored):
 *       3 fields `isl,osl,weight`: classes; weights >= 0, not all 0, normalised to sum to 1
 *         (rows of weight 0 are dropped, equal pairs are merged);
 *       2 fields `isl,osl`: raw requests, one a row, each of equal weight; equal pairs merge
 *         into one class weighted by their count.
 * Binning: when more than LENGTHS_MAX_CLASSES distinct pairs remain, they are binned to at
 * most LENGTHS_MAX_CLASSES classes by a two-level weighted quantile grid of
 * LENGTHS_BIN_GRID x LENGTHS_BIN_GRID cells: pairs sorted by (isl, osl) go to one of
 * LENGTHS_BIN_GRID isl groups of equal weight (a pair to the group holding the midpoint of its
 * cumulative weight; a pair is never split); within a group, pairs sorted by (osl, isl) go to
 * LENGTHS_BIN_GRID osl cells the same way. A cell becomes one class: its total weight, and its
 * weighted mean isl and osl rounded to whole tokens (cells that round to the same pair merge).
 * Total weight is kept exactly, so each mean moves by at most half a token (the rounding).
 *
 * Errors (the readers): every problem in a file is a diagnostic (diag.h) with the 1-based line
 * and the 1-based column of the bad field: a field that is not a whole number (isl, osl) or a
 * number (weight), a length <= 0 or above LENGTHS_MAX_TOKENS, a negative or non-finite weight,
 * a weight above LENGTHS_MAX_WEIGHT, weights all 0 (at the first row's weight), a row whose
 * field count differs from the first row's (at its first extra field, or at the end of a short
 * row), a first row of 1 or more than 3 fields, a header that is not `isl,osl[,weight]`, a NUL
 * byte; a file without data rows or larger than LENGTHS_MAX_BYTES is one diagnostic with the
 * path alone. The first problem stops the read. On failure *out is left untouched.
 */
#ifndef RACKPLAN_LENGTHS_H
#define RACKPLAN_LENGTHS_H

#include "diag.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LENGTHS_MAX_CLASSES 4096
#define LENGTHS_BIN_GRID 64            /* LENGTHS_BIN_GRID^2 = LENGTHS_MAX_CLASSES */
#define LENGTHS_MAX_BYTES (64u << 20)  /* 64 MiB */
/* 10^8 tokens: a hundred times the longest context any model here takes, so that sums of
 * millions of lengths stay exact in a double. */
#define LENGTHS_MAX_TOKENS 100000000
#define LENGTHS_MAX_WEIGHT 1e15
/* Points a family is cut into: LENGTHS_MAX_POINTS^2 = LENGTHS_MAX_CLASSES. */
#define LENGTHS_MAX_POINTS 64

struct length_class {
    int64_t isl, osl; /* prompt and output tokens */
    double weight;    /* share of requests; a mix's weights sum to 1 */
};

struct length_mix {
    struct length_class *classes; /* count of them, sorted by (isl, osl), owned */
    int64_t count;
    char *description;            /* one line: what the mix is, its source; owned */
};

enum lengths_status { LENGTHS_OK = 0, LENGTHS_INVALID = 3, LENGTHS_IO_ERROR = 5 };

/* A family of lengths for one side (prompt or output), in tokens. */
enum length_family_kind {
    LENGTH_FIXED,     /* a = N: every request N tokens */
    LENGTH_UNIFORM,   /* a = A, b = B, whole numbers 1 <= A <= B: uniform on [A, B] */
    LENGTH_LOGNORMAL, /* a = MEAN > 0 tokens, b = CV >= 0 (standard deviation / mean):
                       * sigma^2 = ln(1 + CV^2), mu = ln MEAN - sigma^2 / 2 */
};

struct length_family {
    enum length_family_kind kind;
    double a, b;
};

/* Parses "fixed:N", "uniform:A:B" or "lognormal:MEAN:CV" (lengths as above, at most
 * LENGTHS_MAX_TOKENS; CV at most 100). On success fills *out and returns true; otherwise
 * returns false, leaves *out untouched and writes a one-line reason (lowercase, no full stop,
 * naming the text) to `error` (truncated to error_size), for a command's usage error. */
bool length_family_parse(const char *text, struct length_family *out, char *error, size_t error_size);

/* The q-quantile of a family, in tokens before rounding: fixed N; uniform A + q (B - A) (the
 * continuous uniform on [A, B], whose mean (A + B) / 2 is that of the whole numbers A..B);
 * lognormal exp(mu + sigma z(q)), z the standard normal quantile (queueing.h). 0 < q < 1. */
double length_family_quantile(const struct length_family *f, double q);

/* The mix of isl and osl drawn independently: each family cut into `points` classes of equal
 * probability at the quantile midpoints q_i = (i + 1/2) / points, i = 0 .. points - 1, each
 * rounded to whole tokens (half away from zero), at least 1 and at most LENGTHS_MAX_TOKENS; a
 * fixed family is one point. The isl x osl product, each class of weight 1 / (n_isl n_osl),
 * equal pairs merged. 1 <= points <= LENGTHS_MAX_POINTS (asserted: check user input first).
 * *out is overwritten (release it first if it held a mix). */
void length_mix_from_families(const struct length_family *isl, const struct length_family *osl, int points,
                              struct length_mix *out);

/* One class: every request isl prompt and osl output tokens (both >= 1, asserted). */
void length_mix_fixed(int64_t isl, int64_t osl, struct length_mix *out);

/* Reads a CSV (see above). LENGTHS_OK and *out filled; LENGTHS_INVALID or LENGTHS_IO_ERROR
 * (unable to open or read) after adding diagnostics, *out untouched. */
enum lengths_status length_mix_read_csv(const char *path, struct length_mix *out, struct diags *d);
/* The same from `size` bytes in memory (NUL-terminated or not); `path` names them in messages. */
enum lengths_status length_mix_read_buffer(const char *path, const char *data, size_t size, struct length_mix *out,
                                           struct diags *d);

/* Weighted means, in tokens. */
double length_mix_mean_isl(const struct length_mix *m);
double length_mix_mean_osl(const struct length_mix *m);

/* The weighted p-quantile: the smallest isl (osl) whose cumulative weight is >= p of the total
 * (within a part in 10^12, so that p = 0.5 of two equal classes is the first). p <= 0 gives the
 * smallest, p >= 1 the largest. */
int64_t length_mix_isl_quantile(const struct length_mix *m, double p);
int64_t length_mix_osl_quantile(const struct length_mix *m, double p);

/* Scales every class's output length by one factor f, each rounded to whole tokens (half away
 * from zero), at least 1 and, when cap > 0, at most cap (a request stops at its max_tokens);
 * f is the factor whose mix's mean output is nearest `mean` (on a tie, the one reaching it),
 * found by bisection since that mean is a nondecreasing step function of f. For a dataset whose
 * published outputs are another model's (OpenOrca's are GPT-4's: 218.9 tokens a request where
 * Llama 2 70B writes 294.45, MLPerf's TOKENS_PER_SAMPLE): the shape kept, the mean the served
 * model's. The classes are re-sorted and equal pairs merged (the mix's invariants hold); the
 * description gains "; outputs scaled xF to a mean of M tokens (from M0)". *factor (when not
 * NULL) gets f. Returns false, the mix untouched, when mean is below 1 or above
 * LENGTHS_MAX_TOKENS, or cap > 0 and cap < mean (unreachable). The mix must have a class. */
bool length_mix_scale_osl(struct length_mix *m, double mean, int64_t cap, double *factor);

/* Frees the classes and the description and zeroes the mix; accepts a zeroed mix or NULL. */
void length_mix_release(struct length_mix *m);

#endif
