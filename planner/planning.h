/* planning.h: a whole plan of a model on `racks` scale-up domains of a topology: the layout and
 * the batch, layers on pipeline stages, routed experts on devices, what a MoE layer then takes,
 * and the step the plan implies.
 *
 * The layout is plan_choose_layout's for one sequence (plan.h); a pinned EP must be what it
 * gives, every device of a stage (ep = devices / pp). With a serve workload a sequence is held at
 * its longest, serve_held_context. The batch is the one asked for, or the largest that fits the
 * layout at that context (plan_max_batch) and, with a serve workload, whose serving step meets
 * the targets (serve_largest_batch); never below 1. redundant_auto (MoE only) takes whole spare
 * slots a device, at most as many as the experts already there, while that batch fits.
 *
 * Stages (pp > 1): a layer costs the bytes a step reads of it, its weights at their precisions
 * and the batch's KV of that layer, in time over the stage's HBM bandwidth (devices / pp x the
 * device's) and in memory as they are; a stage holds devices / pp x (HBM - reserve); the first
 * stage also holds the embedding, the last the LM head and, when the MTP modules run, those
 * modules and (pipelined) a copy of the embedding. Compute, network and activations do not enter
 * the split. The DP's split is exact; GLPK's integer program (stages.h), given the time limit,
 * proves it or finds one as good and is taken then. The memory, and an unasked batch, are then
 * taken again on the solved stages.
 *
 * Experts (MoE): the EP group of a stage is ep_devices = min(ep, domain size) devices in each of
 * ep_domains = ep / ep_devices domains, each device with slots = ceil((experts + redundant) / ep)
 * slots; cluster_place (cluster.h) puts every MoE layer's copies on them from the loads (uniform
 * when none are given) and, with a trace, several domains and a topology whose peak, HBM, NIC and
 * scale-up rates are all known, by each layer's predicted time (moe_layer_physics, traffic.h) at
 * step_tokens = batch / pp tokens a layer. One time limit bounds all solving: the stages' ILP
 * first, the placement in what is left.
 *
 * A MoE layer's time (when those rates are known), on the trace or else the loads: this
 * placement's and the naive map's (expert e on device e mod ep), both as traffic_layer_times
 * prices them; with a trace, the share of dispatch that leaves a token's domain under hashed and
 * under local routing. These describe the placement; the step below sees it only through its
 * mean GPU imbalance on the expert terms.
 *
 * The step: a roofline decode step (roofline.h) at the batch, or with a serve workload the
 * aggregated serving step that also carries the prefill of the prompts replacing finished
 * requests, with its TTFT and TPOT tails (serve.h); at the request's efficiency and, apart, at
 * EFFICIENCY_BOUND. Times are seconds, memory bytes per device, loads tokens.
 *
 * Deterministic but for a cut search: a placement stopped by the time limit (expert_time_limited)
 * depends on the machine's speed, and the solver seconds differ from run to run. The threads
 * (the placement's, and the naive map timed beside this one) change nothing else.
 */
#ifndef RACKPLAN_PLANNING_H
#define RACKPLAN_PLANNING_H

#include "cluster.h"
#include "emit.h"
#include "graph.h"
#include "loads.h"
#include "model.h"
#include "plan.h"
#include "roofline.h"
#include "serve.h"
#include "stages.h"
#include "topology.h"
#include "trace.h"
#include "traffic.h"

#include <stdbool.h>
#include <stdint.h>

struct planning_request {
    const struct model *model;
    const struct topology *topology;
    int64_t racks;
    struct workload workload;             /* its batch is not read: see batch */
    const struct serve_workload *serving; /* NULL: a decode step alone */
    struct efficiency efficiency;
    const struct loads *loads;            /* MoE: one row a MoE layer (loads_check_model); NULL: uniform */
    const struct trace *trace;            /* MoE: the routing sample, its layers the loads'; NULL: none */
    double time_limit_s;                  /* <= 0: no limit, and no ILP on the stages */
    bool overlap;                         /* a MoE layer's communication under its compute */
    int64_t batch;                        /* 0: the largest, as the header says */
    int64_t redundant;                    /* spare expert slots over the EP group */
    bool redundant_auto;                  /* MoE: as many as fit instead */
    int64_t ep;                           /* 0: the layout's */
};

/* Over a placement's MoE layers: the mean of each term, their total, and the slowest layer. */
struct layer_time_summary {
    struct layer_time mean;
    double sum_s, worst_s;
};

struct planning_result {
    struct workload workload; /* the request's at the planned batch and context */
    struct layout layout;     /* pipelined: stage_start is split.start, when the split fits */
    struct device_memory memory; /* the most loaded device (free_bytes < 0: the plan does not fit) */
    struct graph_summary graph;
    struct stage_split split;
    bool have_stage_stats;    /* GLPK found a split within the limit (stage_stats: proven or not) */
    struct lp_result stage_stats;
    bool moe;
    bool uniform;             /* no loads were given */
    bool redundant_auto;
    int64_t ep_domains, ep_devices, slots;
    struct cluster_placement experts;
    double expert_seconds;
    bool expert_time_limited; /* the limit cut the search: the placement depends on the machine */
    double layer_tokens;      /* tokens through a MoE layer in one step of the EP group */
    struct layer_time *layer_times, *naive_times; /* NULL when a rate is unknown */
    struct layer_time_summary placement_summary, naive_summary;
    int64_t naive_copies;     /* the copies a device holds in the naive map: ceil(experts / ep) */
    /* the naive map is faster: at this batch a device's compute is set by reading its copies,
     * and the replicas this placement adds cost more than they balance */
    bool naive_faster;
    bool have_traffic;        /* a trace was given */
    struct traffic hashed, local; /* replica by hash; a replica in the token's domain first */
    struct roof_point step;       /* at the request's efficiency */
    struct roof_point bound_step; /* at EFFICIENCY_BOUND */
    bool served;                  /* serving: the batch fits and its prefill fits the chunk budget */
    struct serve_tail tail;       /* served: TTFT and TPOT at p50, p90, p99 */
    double ttft_s, tpot_s;        /* served: at the workload's percentile */
};

enum planning_status {
    PLANNING_OK = 0,       /* a plan, which may not fit (memory.free_bytes < 0) */
    PLANNING_NO_LAYOUT,    /* the pinned TP or PP does not divide the devices */
    PLANNING_EP_MISMATCH,  /* the pinned EP is not the layout's (layout holds the layout's) */
    PLANNING_NO_GRAPH,     /* the interconnect graph could not be built (out of memory) */
    PLANNING_NO_PLACEMENT, /* the experts do not go on ep x slots (layout and slots say how many) */
};

/* Plans `r` into *out, which planning_result_release frees whatever the status; r's loads and
 * trace are not kept. */
enum planning_status planning_solve(const struct planning_request *r, struct planning_result *out);

void planning_result_release(struct planning_result *p);

/* The roofline setup the plan's decode step was priced on, at the request's efficiency; it
 * borrows p's graph. */
void planning_roof_setup(const struct planning_request *r, const struct planning_result *p, struct roof_setup *out);

/* Why a plan does not fit: the pipeline stage with the least free memory (the first of equals),
 * its layers [first_layer, end_layer) and memory, and where the batch would fit (have_fit false
 * when plan_fit finds no valid layout). */
struct planning_shortfall {
    int64_t stage, first_layer, end_layer;
    struct device_memory memory;
    bool have_fit;
    struct fit fit;
};

void planning_shortfall(const struct planning_request *r, const struct planning_result *p,
                        struct planning_shortfall *out);

/* The plan as one aggregated instance for emit_build: r must have a serve workload, which sizes
 * the engine's batch and chunk. Borrows the strings; `expert_map` is the map's path, NULL: none. */
void planning_emit_plan(const struct planning_request *r, const struct planning_result *p, const char *model_path,
                        const char *expert_map, struct emit_plan *out);

#endif
