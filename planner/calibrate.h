/* calibrate.h: efficiency factors fitted to published measurements of real deployments.
 *
 * Each measurement is modelled as published (model, hardware, layout, precisions, the workload,
 * the batch or the time-per-token target it ran at) and predicted by the serving engine
 * (serve.h), the same code serve and compare predict with:
 * - aggregated serving (isl and osl given: the same devices prefill and decode, as MLPerf and
 *   TensorRT-LLM's offline runs do): output tokens/s per device of serve_aggregated_step at the
 *   batch, or the largest that fits at isl + osl, whose prefill share fits the engine's chunk
 *   budget and whose step meets the TPOT and TTFT targets (serve_largest_batch);
 * - a disaggregated decode pool (no isl and osl): serve_decode_step at `context`;
 * - prefill: prompt tokens/s per device of serve_prefill_step for prompts of `context` tokens.
 * The bound is the same prediction at efficiency 1: no deployment can beat it. The estimate uses
 * the fitted efficiency.
 *
 * The fit: one compute and one memory efficiency and one latency factor per group (an
 * accelerator family, the topology's family attribute, at a weight precision: H100, H200 and H800
 * are Hopper), shared scale-up and scale-out efficiencies, a shared further efficiency of the
 * routed experts' matmuls and weight reads (grouped GEMMs of a few tokens each, scattered
 * reads); the latency factor (>= 1) multiplies the topology's latency floors (roofline.h), which
 * replace the single fixed time per step fitted before. It minimises
 * sum (ln estimate - ln measured)^2 + SHRINK x sum over groups of (ln eta_g - ln pooled eta)^2
 * + NETWORK_PRIOR x ((ln scale_up / 0.775)^2 + (ln scale_out / 1)^2), where the pooled eta is
 * the groups' geometric mean (a group's factor leaves it only as far as its own measurements
 * pull, and a group left without measurements takes it) and the network's priors are DeepEP's
 * measured fractions (calibrate.c), the latency factors shrunk alike and held by LATENCY_PRIOR x
 * (ln latency_g / 2.5)^2 to the factor measured batch-1 steps show (calibrate.c); and one host
 * time a sequence a step for every group, what grows with the batch. Coordinate descent (each
 * factor, each group's two together, all together), a grid then golden section along each, until a sweep gains
 * next to nothing, from four starting points: deterministic. */
#ifndef RACKPLAN_CALIBRATE_H
#define RACKPLAN_CALIBRATE_H

#include "graph.h"
#include "model.h"
#include "plan.h"
#include "roofline.h"
#include "serve.h"
#include "topology.h"

#include <stdbool.h>
#include <stdint.h>

#define CALIBRATE_SHRINK 0.01
#define CALIBRATE_NETWORK_PRIOR 1.0
#define CALIBRATE_LATENCY_PRIOR 1.0
#define CALIBRATE_MAX_GROUPS 32
#define CALIBRATE_MAX_MEASUREMENTS 256

struct measurement {
    const char *id;
    const struct model *model;
    const struct topology *topology;
    int64_t racks;
    int64_t devices;          /* with racks 1, part of one domain; 0: every device of the racks */
    struct workload workload; /* precisions, context (set from isl + osl when given), tp, pp, reserve */
    bool prefill;
    int64_t batch;    /* > 0: given */
    double tpot_s;    /* > 0: the largest batch whose step is within it; else with batch 0: max */
    double ttft_s;    /* > 0: with isl and osl, a time-to-first-token target too */
    int64_t batch_limit; /* > 0: the serving engine's most sequences, a cap on max and tpot_s */
    int64_t isl, osl; /* mean prompt and output tokens: aggregated serving; 0: a decode pool alone */
    const struct length_mix *lengths; /* with isl and osl: the requests' lengths, whose means they are
                                       * (serve_workload_set_lengths); NULL: every request isl and osl */
    int64_t chunk_tokens; /* the engine's prefill tokens a DP rank's step may carry; 0: serve.h's default */
    int64_t max_tokens;   /* the requests' max_tokens the engine reserves KV for (serve_workload.max_tokens);
                           * 0: each its own output */
    enum serve_arrivals arrivals; /* with isl and osl: how requests came (closed-loop unless said) */
    double percentile;    /* the percentile tpot_s and ttft_s bound; 0: 50 */
    double measured;  /* tokens/s per device */
    /* set by calibrate_prepare */
    struct layout layout;
    struct graph_summary graph;
    int64_t max_batch;
    int group;
};

struct calibration_group {
    const struct topology *topology; /* the first measured of its family */
    enum precision weights;
    double compute, memory, latency;
    double sequence_s; /* host time a sequence a step (one for every group) */
    int measurements;  /* in the fit */
};

struct calibration_fit {
    int group_count;
    struct calibration_group groups[CALIBRATE_MAX_GROUPS];
    double compute, memory, latency; /* pooled: the groups' geometric mean */
    double sequence_s;               /* pooled: the groups' mean */
    double scale_up, scale_out, step_overhead_s;
    double experts;
    double objective;
    int sweeps;
};

/* Where on the throughput-interactivity frontier a measurement sits: offline (the largest batch
 * that fits, or a prefill), a relaxed time per token, or an interactive one (at most
 * CALIBRATE_INTERACTIVE_S a token: a TPOT target that low, or a given batch whose measured
 * tokens/s put a token of each sequence that often: batch / (measured x devices)). */
enum calibration_class { CALIBRATION_OFFLINE, CALIBRATION_RELAXED, CALIBRATION_INTERACTIVE, CALIBRATION_CLASSES };
#define CALIBRATE_INTERACTIVE_S 0.040

enum calibration_class calibrate_class(const struct measurement *m);
const char *calibration_class_name(enum calibration_class c);

/* Lays each measurement out and builds its interconnect graph; groups them. False, with why in
 * `why`, when one has no valid layout, does not fit, or there are too many groups. */
bool calibrate_prepare(struct measurement *m, int count, char *why, size_t size);

/* Tokens/s per device under `e` (EFFICIENCY_BOUND: the bound). *batch_out (may be NULL) gets the
 * batch used; 0 when none meets the target. */
double calibrate_predict(const struct measurement *m, const struct efficiency *e, int64_t *batch_out);

/* Fits to the measurements with use[i] (NULL: all; at most CALIBRATE_MAX_MEASUREMENTS): the
 * best of descents from four starting points, or one from the factors of `from` (a fit to
 * all of them, to refit without one). */
void calibrate_fit(const struct measurement *m, int count, const bool *use, const struct calibration_fit *from,
                   struct calibration_fit *out);

/* Each measurement's estimate with it left out, into out[i]: the fit redone from the factors of
 * `fit` without it, rounded by `round` (NULL: not), at its group's factors, or at the prior when
 * it was its group's only measurement. The refits run on every core (at most 8), each into its
 * own slot: the same answer as one after another. */
void calibrate_left_out(const struct measurement *m, int count, const struct calibration_fit *fit,
                        void (*round)(struct calibration_fit *), double *out);

/* The fit's objective at the factors of `f` (its pooled factors recomputed), for the
 * measurements with use[i] (NULL: all). */
double calibrate_objective(const struct measurement *m, int count, const bool *use, const struct calibration_fit *f);

/* A group's efficiency (group < 0: the pooled one for other hardware). */
struct efficiency calibration_efficiency(const struct calibration_fit *f, int group);

#endif
