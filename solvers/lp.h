/* lp.h: mixed-integer linear programs, solved by GLPK. The only module that includes glpk.h.
 *
 * Build a problem with lp_new, lp_column and lp_row (1-based columns, as GLPK numbers them),
 * then lp_solve. A GLPK fatal error (which would abort the process) is caught and reported as
 * LP_FAILED; GLPK prints nothing. An lp is owned by its caller; lp_free accepts NULL.
 */
#ifndef RACKPLAN_LP_H
#define RACKPLAN_LP_H

#include <stdbool.h>

struct lp;

enum lp_status {
    LP_OPTIMAL,    /* proven optimal */
    LP_FEASIBLE,   /* an integer solution, not proven optimal (time limit) */
    LP_INFEASIBLE, /* proven to have no solution */
    LP_NO_SOLUTION, /* none found within the time limit */
    LP_FAILED,     /* GLPK reported an error */
};

struct lp_result {
    enum lp_status status;
    double objective; /* of the best integer solution */
    double bound;     /* best proven bound on the objective */
    double gap;       /* |objective - bound| / max(|objective|, 1e-9) */
    double seconds;
    double *x;        /* columns 1..n of the best solution (x[0] unused); caller frees */
};

struct lp *lp_new(int columns, bool minimise);
void lp_free(struct lp *lp);

/* Stops branch and bound after `nodes` nodes (0: no limit): unlike a time limit, the same
 * problem then always ends with the same solution, whatever the machine's speed. */
void lp_node_limit(struct lp *lp, int nodes);

/* Bounds (use +-INFINITY for none), integrality and objective coefficient of column `col`. */
void lp_column(struct lp *lp, int col, double lower, double upper, bool integer, double cost);

/* Adds lower <= sum coefs[k] x[cols[k]] <= upper. Columns must be in 1..columns, distinct. */
void lp_row(struct lp *lp, int count, const int *cols, const double *coefs, double lower,
            double upper);

/* Solves the LP relaxation, then branch and bound within `time_limit_s` seconds, offering
 * `warm_start` (1-based, may be NULL) as the first incumbent. Fills *out; returns false only
 * when GLPK failed (out->status LP_FAILED). */
bool lp_solve(struct lp *lp, const double *warm_start, double time_limit_s, struct lp_result *out);

const char *lp_status_name(enum lp_status status);

#endif
