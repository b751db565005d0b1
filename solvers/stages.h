/* stages.h: contiguous blocks of layers to pipeline stages (racks), each within its memory,
 * minimising the largest stage time.
 *
 * Exact dynamic programming, and an integer program (GLPK, warm-started with the DP answer) that
 * proves the optimum independently. The first stage also carries `first_time`/`first_memory`
 * (the embedding), the last `last_time`/`last_memory` (the LM head).
 */
#ifndef RACKPLAN_STAGES_H
#define RACKPLAN_STAGES_H

#include "lp.h"

#include <stdbool.h>
#include <stdint.h>

struct stage_problem {
    int64_t layers;
    const double *time;   /* per layer */
    const double *memory; /* per layer */
    double capacity;      /* memory per stage */
    int64_t stages;
    double first_time, first_memory, last_time, last_memory;
};

struct stage_split {
    int64_t stages;
    int64_t *start; /* stages + 1 entries: stage s holds layers [start[s], start[s + 1]) */
    double max_time;
};

/* The optimal split, or false when no split fits the memory (or stages > layers). */
bool stages_dp(const struct stage_problem *p, struct stage_split *out);

/* The same problem by integer programming. A stage's time is one of finitely many block sums, so
 * the optimum is the least candidate T for which a split with every stage <= T exists; that
 * question is an ILP over the layered graph of blocks (one unit of flow from stage 0, layer 0 to
 * stage P - 1, layer L, through blocks of time <= T and memory within capacity), whose LP is a
 * network flow and so integral. GLPK answers it for the candidates a bisection asks about; with a
 * warm start it first asks about the candidate just below the warm value, which proves the warm
 * split optimal at once when it is. stats: objective, proven bound, gap, seconds. */
bool stages_ilp(const struct stage_problem *p, const struct stage_split *warm, double time_limit_s,
                struct stage_split *out, struct lp_result *stats);

void stage_split_release(struct stage_split *s);

/* Time and memory of stage s of a split. */
double stage_time(const struct stage_problem *p, const struct stage_split *s, int64_t stage);
double stage_memory(const struct stage_problem *p, const struct stage_split *s, int64_t stage);

#endif
