/* compare.h: one model on one topology at one cluster size, reduced to what a buyer compares:
 * does it fit, the latency floor, the batch a time-per-output-token target allows, throughput
 * per device and per rack, cost and energy per token, and how much of the MoE all-to-all leaves
 * the scale-up domain. Every number comes from the roofline (roofline.h) and the memory plan
 * (plan.h) on the layout they choose. */
#ifndef RACKPLAN_COMPARE_H
#define RACKPLAN_COMPARE_H

#include "model.h"
#include "plan.h"
#include "roofline.h"
#include "serve.h"
#include "topology.h"

#include <stdbool.h>
#include <stdint.h>

struct compare_row {
    int64_t racks, devices, domain_size;
    struct layout layout;
    bool fits;            /* one sequence at the context fits */
    int64_t max_batch;    /* sequences that fit at the context */
    int64_t min_devices;  /* fewest devices that hold the weights and one sequence; 0: none */
    double latency_floor_s;
    bool tpot_met;        /* some batch meets the target (true without a target when it fits) */
    int64_t batch;        /* the batch the row reports: the largest within the target and HBM */
    struct roof_point point; /* the decode step at `batch` */
    double tokens_per_s_per_rack;
    double price_usd_per_hour; /* per device; 0: unknown */
    double cost_per_mtok;      /* USD per million output tokens; 0: unknown */
    double joules_per_token;   /* 0: power unknown */
    double all_to_all_outside; /* share of the EP all-to-all bytes that leave the domain */
    struct efficiency efficiency;
    const struct calibration *calibration; /* the topology's row used, or NULL */
    bool estimate;             /* efficiency below 1 somewhere: an estimate, not a bound */
    double bound_tokens_per_s_per_device; /* an estimate's bound, at the bound's own batch */
    double bound_latency_floor_s;
    /* With a workload (compare_serving_row): the best deployment serve.h finds; `layout`,
     * `batch`, `point` and the rates above are its decode instance's and the whole deployment's. */
    bool serving;
    int64_t budget_devices;        /* the devices the deployment may use; 0: no budget */
    struct serve_point served;     /* valid when tpot_met */
    /* where it fits and nothing meets the targets: which binds (serve_binding_target) and the
     * lowest value of it reachable (TPOT for TPOT or both, TTFT for TTFT; 0: none reachable) */
    enum serve_binding binding;
    double reachable_s;
    struct serve_point *frontier;  /* owned: compare_row_release */
    int64_t frontier_count;
};

/* Fills `out` for `racks` domains of `t`. `w` gives context and precisions (its batch is
 * ignored); `e` the efficiency (NULL: the bound); tpot_s 0 means no target;
 * price_usd_per_hour 0 means the topology's. Returns false when the interconnect graph could
 * not be built (out of memory). */
bool compare_row(const struct model *m, const struct topology *t, int64_t racks,
                 const struct workload *w, const struct efficiency *e, double tpot_s,
                 double price_usd_per_hour, struct compare_row *out);

/* The same row for a workload: the best deployment serve_search finds on `t` within a budget of
 * `budget_devices` devices for the whole deployment (serve.h; 0: no budget, instances span whole
 * domains up to SERVE_DEFAULT_SPAN_DEVICES and an xPyD pair is as large as its ratio wants)
 * within the workload's targets; tpot_met says whether one meets them. The row's tokens/s per
 * device is output tokens/s over every device the deployment uses (prefill devices included),
 * its devices those, its racks the budget's domains (rounded up; with no budget the topology's
 * default cluster). False when out of memory. */
bool compare_serving_row(const struct model *m, const struct topology *t, int64_t budget_devices, const struct workload *w,
                         const struct serve_workload *sw, const struct efficiency *e, double price_usd_per_hour,
                         struct compare_row *out);

/* The row a comparison prints: compare_serving_row within `budget_devices` when `sw` holds a
 * workload (isl > 0), else compare_row at `racks` domains within tpot_s; at efficiency `e` (NULL:
 * the bound), with bound_tokens_per_s_per_device and bound_latency_floor_s from the same row at
 * the bound (for an estimate a second search, for a bound the row itself). False when out of
 * memory. Either way *out is released with compare_row_release. */
bool compare_row_with_bound(const struct model *m, const struct topology *t, int64_t racks, int64_t budget_devices,
                            const struct workload *w, const struct serve_workload *sw, const struct efficiency *e,
                            double tpot_s, double price_usd_per_hour, struct compare_row *out);
void compare_row_release(struct compare_row *row);

/* One row of compare_rows: compare_row_with_bound's arguments that differ from row to row. */
struct compare_task {
    const struct topology *t;
    int64_t racks, budget_devices;
    struct efficiency efficiency;
    double price_usd_per_hour;
    struct compare_row *out;
};

/* compare_row_with_bound for each of `count` tasks, on up to COMPARE_THREADS threads (the rows
 * share nothing but graph.c's igraph calls, which it serializes: each row is the one it is
 * alone). False when any row could not be built (out of memory); every row is then still
 * released with compare_row_release. */
#define COMPARE_THREADS 2
bool compare_rows(const struct model *m, const struct workload *w, const struct serve_workload *sw, double tpot_s,
                  struct compare_task *tasks, int64_t count);

/* The decode step of `row`'s layout at each of `count` batches, at the row's efficiency, its
 * cost per million tokens at the row's price. False when the interconnect graph could not be built. */
bool compare_sweep(const struct model *m, const struct topology *t, const struct compare_row *row,
                   const struct workload *w, const int64_t *batches, int64_t count,
                   struct roof_point *out);

/* Sorts rows for a buyer: fitting rows that meet the target first, by cost per token (rows
 * with a known cost before those without), then by tokens/s per device, each as the CSV shows
 * it (9 significant digits); the rest after, in their order. `order` receives row indices. */
void compare_order(const struct compare_row *rows, int64_t count, int64_t *order);

#endif
