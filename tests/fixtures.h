/* fixtures.h: loading the shipped models and topologies in tests; a file that does not load
 * ends the test program with a TAP "Bail out!" and its diagnostics. */
#ifndef RACKPLAN_FIXTURES_H
#define RACKPLAN_FIXTURES_H

#include "loads.h"
#include "model.h"
#include "plan.h"
#include "stages.h"
#include "topology.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>

static inline struct model fixture_model(const char *path)
{
    struct model m;
    struct diags d;
    diags_init(&d);
    if (model_load(path, &m, &d) != MODEL_OK) {
        diags_print(&d, stdout);
        printf("Bail out! cannot load %s\n", path);
        exit(1);
    }
    diags_release(&d);
    return m;
}

static inline struct topology fixture_topology(const char *path)
{
    struct topology t;
    struct diags d;
    diags_init(&d);
    if (topology_load(path, &t, &d) != TOPOLOGY_OK) {
        diags_print(&d, stdout);
        printf("Bail out! cannot load %s\n", path);
        exit(1);
    }
    diags_release(&d);
    return t;
}

/* The shipped DeepSeek-V3-like sample: loads/dsv3_load.csv (58 MoE layers x 256 experts) and
 * the routing trace behind it. */
static inline void fixture_dsv3_sample(struct loads *l, struct trace *t)
{
    struct diags d;
    diags_init(&d);
    if (loads_read("loads/dsv3_load.csv", l, &d) != LOADS_OK ||
        trace_read("loads/dsv3_topk.csv.gz", 256, t, &d) != TRACE_OK) {
        diags_print(&d, stdout);
        printf("Bail out! loads/dsv3_load.csv or loads/dsv3_topk.csv.gz\n");
        exit(1);
    }
    diags_release(&d);
}

/* DeepSeek-V3's 61 layers on GB200 NVL72 racks (the caller sets .stages): each layer's time is its FP8 weight
 * bytes (a byte each) over one rack's 72 x 8 TB/s (dense layers ~0.58 GB, MoE layers ~11.5 GB);
 * a stage holds 90% of 72 x 186 GB. `time` and `memory` hold 61 entries and back the problem. */
static inline struct stage_problem fixture_deepseek_stages(double *time, double *memory)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct model_params p;
    model_params(&m, &p);
    for (int64_t i = 0; i < 61; i++) {
        struct layer_params layer;
        plan_layer_params(&m, i, &layer);
        memory[i] = layer.replicated + layer.routed_experts;
        time[i] = memory[i] / (72 * 8e12);
    }
    return (struct stage_problem){.layers = 61, .time = time, .memory = memory,
                                  .capacity = 0.9 * 72 * 186e9,
                                  .first_time = p.embedding / (72 * 8e12), .first_memory = p.embedding,
                                  .last_time = p.lm_head / (72 * 8e12), .last_memory = p.lm_head};
}

#endif
