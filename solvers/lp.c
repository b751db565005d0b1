/* lp.c: see lp.h. The only file that includes glpk.h. */
#include "lp.h"

#include "diag.h"

#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

struct lp {
    glp_prob *prob;
    int columns;
    int node_limit; /* 0: none */
};

static jmp_buf *failure; /* where a GLPK fatal error returns to */

static void on_glpk_error(void *info)
{
    (void)info;
    if (failure)
        longjmp(*failure, 1);
}

static int silent(void *info, const char *text)
{
    (void)info;
    (void)text;
    return 1; /* GLPK's log never reaches stdout, which carries rackplan's data */
}

struct lp *lp_new(int columns, bool minimise)
{
    glp_term_out(GLP_OFF);
    glp_term_hook(silent, NULL);
    struct lp *lp = xcalloc(1, sizeof *lp);
    lp->prob = glp_create_prob();
    lp->columns = columns;
    glp_set_obj_dir(lp->prob, minimise ? GLP_MIN : GLP_MAX);
    if (columns > 0)
        glp_add_cols(lp->prob, columns);
    return lp;
}

void lp_free(struct lp *lp)
{
    if (!lp)
        return;
    glp_delete_prob(lp->prob);
    free(lp);
}

static int bound_type(double lower, double upper)
{
    bool has_lower = isfinite(lower), has_upper = isfinite(upper);
    if (has_lower && has_upper)
        return lower == upper ? GLP_FX : GLP_DB;
    return has_lower ? GLP_LO : has_upper ? GLP_UP : GLP_FR;
}

void lp_node_limit(struct lp *lp, int nodes)
{
    lp->node_limit = nodes;
}

void lp_column(struct lp *lp, int col, double lower, double upper, bool integer, double cost)
{
    if (col < 1 || col > lp->columns)
        abort(); /* a programming error: GLPK would abort anyway */
    glp_set_col_bnds(lp->prob, col, bound_type(lower, upper), isfinite(lower) ? lower : 0,
                     isfinite(upper) ? upper : 0);
    glp_set_col_kind(lp->prob, col, integer ? GLP_IV : GLP_CV);
    glp_set_obj_coef(lp->prob, col, cost);
}

void lp_row(struct lp *lp, int count, const int *cols, const double *coefs, double lower,
            double upper)
{
    for (int k = 0; k < count; k++)
        if (cols[k] < 1 || cols[k] > lp->columns)
            abort(); /* a programming error: GLPK would abort anyway */
    int row = glp_add_rows(lp->prob, 1);
    glp_set_row_bnds(lp->prob, row, bound_type(lower, upper), isfinite(lower) ? lower : 0,
                     isfinite(upper) ? upper : 0);
    int *index = xmalloc((size_t)(count + 1) * sizeof *index);
    double *value = xmalloc((size_t)(count + 1) * sizeof *value);
    for (int k = 0; k < count; k++) {
        index[k + 1] = cols[k];
        value[k + 1] = coefs[k];
    }
    glp_set_mat_row(lp->prob, row, count, index, value);
    free(index);
    free(value);
}

struct search {
    const double *warm_start;
    bool offered;
    int node_limit;
    int nodes;
    double bound;
    bool have_bound;
};

static void callback(glp_tree *tree, void *info)
{
    struct search *s = info;
    int reason = glp_ios_reason(tree);
    if (reason == GLP_IHEUR && s->warm_start && !s->offered) {
        glp_ios_heur_sol(tree, s->warm_start);
        s->offered = true;
    }
    if (reason == GLP_ISELECT && s->node_limit > 0 && ++s->nodes > s->node_limit)
        glp_ios_terminate(tree);
    int best = glp_ios_best_node(tree);
    if (best) {
        s->bound = glp_ios_node_bound(tree, best);
        s->have_bound = true;
    }
}

bool lp_solve(struct lp *lp, const double *warm_start, double time_limit_s, struct lp_result *out)
{
    memset(out, 0, sizeof *out);
    double start = monotonic_seconds();
    jmp_buf here;
    failure = &here;
    glp_error_hook(on_glpk_error, NULL);
    if (setjmp(here)) {
        /* GLPK's state is unusable after a fatal error: drop it all (lp->prob with it). */
        failure = NULL;
        glp_error_hook(NULL, NULL);
        glp_free_env();
        lp->prob = glp_create_prob();
        out->status = LP_FAILED;
        out->seconds = monotonic_seconds() - start;
        return false;
    }
    struct search s = {.warm_start = warm_start, .node_limit = lp->node_limit};
    glp_smcp simplex;
    glp_init_smcp(&simplex);
    simplex.msg_lev = GLP_MSG_OFF;
    simplex.presolve = GLP_OFF; /* the warm start needs the original columns */
    simplex.tm_lim = (int)fmin(time_limit_s * 1000, 2e9);
    glp_scale_prob(lp->prob, GLP_SF_AUTO);
    int code = glp_simplex(lp->prob, &simplex);
    if (code == 0 && glp_get_status(lp->prob) == GLP_NOFEAS) {
        out->status = LP_INFEASIBLE; /* not even the relaxation has a solution */
        goto finish;
    }
    glp_iocp mip;
    glp_init_iocp(&mip);
    mip.msg_lev = GLP_MSG_OFF;
    mip.presolve = GLP_OFF;
    mip.cb_func = callback;
    mip.cb_info = &s;
    double remaining = time_limit_s - (monotonic_seconds() - start);
    mip.tm_lim = (int)fmax(1, fmin(remaining * 1000, 2e9));
    code = glp_intopt(lp->prob, &mip);
    int status = glp_mip_status(lp->prob);
    if (status == GLP_OPT) {
        out->status = LP_OPTIMAL;
    } else if (status == GLP_FEAS) {
        out->status = LP_FEASIBLE;
    } else if (status == GLP_NOFEAS) {
        out->status = LP_INFEASIBLE;
    } else {
        out->status = code == GLP_ETMLIM || code == GLP_ESTOP || code == GLP_EROOT ? LP_NO_SOLUTION : LP_FAILED;
    }
    if (out->status == LP_OPTIMAL || out->status == LP_FEASIBLE) {
        int n = glp_get_num_cols(lp->prob);
        out->x = xcalloc((size_t)n + 1, sizeof *out->x);
        for (int j = 1; j <= n; j++)
            out->x[j] = glp_mip_col_val(lp->prob, j);
        out->objective = glp_mip_obj_val(lp->prob);
        out->bound = out->status == LP_OPTIMAL ? out->objective
                     : s.have_bound             ? s.bound
                                                : glp_get_obj_val(lp->prob);
        out->gap = fabs(out->objective - out->bound) / fmax(fabs(out->objective), 1e-9);
    }
finish:
    failure = NULL;
    glp_error_hook(NULL, NULL);
    out->seconds = monotonic_seconds() - start;
    return out->status != LP_FAILED;
}

const char *lp_status_name(enum lp_status status)
{
    static const char *const names[] = {"optimal", "feasible", "infeasible", "no solution",
                                        "failed"};
    return names[status];
}
