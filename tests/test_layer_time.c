/* The predicted time of a MoE layer on a placement (traffic.h): a case small enough to add up by
 * hand, with a trace and from the loads alone, and rackplan's default placement against EPLB's
 * map of every shared case (loads/eplb-maps, from shared/data/moe-loads/eplb-maps), both scored
 * by the one function `plan` prints. */
#include "cluster.h"
#include "diag.h"
#include "fixtures.h"
#include "loads.h"
#include "tap.h"
#include "trace.h"
#include "traffic.h"

#include <math.h>
#include <unistd.h>

static void by_hand(void)
{
    /* Two domains of one device with one slot each, expert 0 on device 0, expert 1 on device 1,
     * top-1; token 0 sits on device 0 and token 1 on device 1 (t mod G), both pick expert 1.
     * Unit rates and one value a hidden state, so the times are counts:
     * - compute: device 1 serves 2 dispatches at 1 FLOP each: 2 s;
     * - scale-up: token 0's dispatch reaches device 1 from another device: 3 B (1 out, 2 back): 3 s;
     * - scale-out: token 0 goes to domain 1 (1 B) and comes back (2 B): each domain sends and
     *   receives 1 and 2 B, the larger 2 B over one device's NIC: 2 s;
     * - the layer: max(2, max(3, 2)) = 3 s with overlap, 2 + 3 = 5 s without. */
    int32_t map[2] = {0, 1};
    int32_t chosen[2] = {1, 1};
    struct trace t = {.layers = 1, .tokens = 2, .k = 1, .expert = chosen};
    struct moe_layer_physics ph = {.step_tokens = 2, .flops_per_dispatch = 1, .expert_bytes = 0, .hidden = 1,
                                   .peak_flops_per_s = 1, .hbm_bytes_per_s = 1, .nic_bytes_per_s = 1,
                                   .scale_up_bytes_per_s = 1, .overlap = true};
    struct layer_time time;
    traffic_layer_times(&t, NULL, 1, map, 2, 1, 1, 2, 1, &ph, &time, NULL);
    CHECK(time.compute_s == 2 && time.scale_up_s == 3 && time.scale_out_s == 2 && time.total_s == 3,
          "by hand, from the trace: compute 2, scale-up 3, scale-out 2, layer 3 (got %g %g %g %g)", time.compute_s,
          time.scale_up_s, time.scale_out_s, time.total_s);
    ph.overlap = false;
    traffic_layer_times(&t, NULL, 1, map, 2, 1, 1, 2, 1, &ph, &time, NULL);
    CHECK(time.total_s == 5, "without overlap the layer is compute + communication: 5 (got %g)", time.total_s);
    /* from the loads alone: expert 1 carries both tokens; half of them sit elsewhere (1 crosses
     * the scale-up links), domain 1 holds all the load so the other domain's token reaches it */
    double loads[2] = {0, 2};
    ph.overlap = true;
    traffic_layer_times(NULL, loads, 1, map, 2, 1, 1, 2, 1, &ph, &time, NULL);
    CHECK(time.compute_s == 2 && time.scale_up_s == 3 && time.scale_out_s == 2 && time.total_s == 3,
          "by hand, from the loads: the same 2, 3, 2 and 3 (got %g %g %g %g)", time.compute_s, time.scale_up_s,
          time.scale_out_s, time.total_s);
    /* the naive map: expert e on device e mod D, slot e / D; spare slots empty */
    int32_t naive[6];
    traffic_naive_map(1, 5, 2, 3, naive);
    CHECK(naive[0] == 0 && naive[1] == 2 && naive[2] == 4 && naive[3] == 1 && naive[4] == 3 && naive[5] == -1,
          "naive map of 5 experts on 2 devices x 3 slots: device 0 holds 0 2 4, device 1 holds 1 3 and a spare");
}

/* EPLB's map (layers x slots, read as a matrix of numbers). */
static int32_t *eplb_map(const char *path, int64_t layers, int64_t width)
{
    struct loads m;
    struct diags d;
    diags_init(&d);
    if (loads_read(path, &m, &d) != LOADS_OK || m.layers != layers || m.experts != width) {
        printf("Bail out! %s\n", path);
        exit(1);
    }
    int32_t *map = xmalloc((size_t)(layers * width) * sizeof *map);
    for (int64_t i = 0; i < layers * width; i++)
        map[i] = (int32_t)m.tokens[i];
    loads_release(&m);
    diags_release(&d);
    return map;
}

static double total(const struct layer_time *times, int64_t layers)
{
    double sum = 0;
    for (int64_t i = 0; i < layers; i++)
        sum += times[i].total_s;
    return sum;
}

struct eplb_case {
    const char *name, *map, *model, *topology;
    int64_t domains, devices, slots; /* devices per domain, slots per device */
};

/* One case of shared/data/moe-loads: the model on `domains` x `devices` GPUs, a decode step of
 * 128 sequences a GPU (DeepSeek's decode unit), rackplan's default placement (priced by the
 * layer time under the overlap scored, GLPK on, as plan runs it) against EPLB's map, both
 * scored by traffic_layer_times on the trace (from the loads alone without one). rackplan's
 * total must be no slower; where the network binds (scale-out is what sets the time), faster. */
static void against_eplb(const struct eplb_case *c, const struct loads *l, const struct trace *t)
{
    struct model m = fixture_model(c->model);
    struct topology top = fixture_topology(c->topology);
    struct model_params p;
    model_params(&m, &p);
    int64_t devices = c->domains * c->devices, width = devices * c->slots;
    struct moe_layer_physics ph = {.step_tokens = 128.0 * (double)devices,
                                   .flops_per_dispatch = 2 * p.routed_expert,
                                   .expert_bytes = p.routed_expert * 1,
                                   .hidden = (double)m.hidden_size,
                                   .peak_flops_per_s = topology_peak_flops_per_s(&top, PREC_FP8, NULL),
                                   .hbm_bytes_per_s = top.hbm_bytes_per_s,
                                   .nic_bytes_per_s = topology_scale_out_bytes_per_s(&top),
                                   .scale_up_bytes_per_s = topology_scale_up_bytes_per_s(&top)};
    int32_t *eplb = eplb_map(c->map, l->layers, width);
    struct layer_time *ours = xmalloc((size_t)l->layers * sizeof *ours);
    struct layer_time *theirs = xmalloc((size_t)l->layers * sizeof *theirs);
    for (int overlap = 1; overlap >= 0; overlap--) {
        ph.overlap = overlap;
        struct cluster_routing routing = {t ? t->expert : NULL, t ? t->tokens : 0, t ? t->k : 0, m.moe.groups,
                                          &ph, monotonic_seconds() + 600};
        struct cluster_placement cp;
        if (!cluster_place(l->tokens, l->layers, l->experts, c->domains, c->devices, c->slots, &routing, &cp)) {
            printf("Bail out! %s: no placement\n", c->name);
            exit(1);
        }
        traffic_layer_times(t, l->tokens, l->layers, cp.expert, devices, c->slots, c->devices, l->experts,
                            m.moe.experts_per_token, &ph, ours, NULL);
        traffic_layer_times(t, l->tokens, l->layers, eplb, devices, c->slots, c->devices, l->experts,
                            m.moe.experts_per_token, &ph, theirs, NULL);
        double a = total(ours, l->layers), b = total(theirs, l->layers), network = 0;
        for (int64_t i = 0; i < l->layers; i++)
            network += theirs[i].scale_out_s >= fmax(theirs[i].compute_s, theirs[i].scale_up_s);
        bool network_binds = network * 2 > (double)l->layers;
        if (network_binds)
            CHECK(a < b * (1 - 1e-3), "%s, overlap %s, the network binds on %.0f of %lld layers: rackplan %.1f us, "
                  "EPLB %.1f us (%.1f%% faster)", c->name, overlap ? "on" : "off", network, (long long)l->layers,
                  a * 1e6, b * 1e6, (b - a) / b * 100);
        else
            CHECK(a <= b, "%s, overlap %s: rackplan %.1f us over %lld layers, EPLB %.1f us (%.2f%% faster)", c->name,
                  overlap ? "on" : "off", a * 1e6, (long long)l->layers, b * 1e6, (b - a) / b * 100);
        cluster_placement_release(&cp);
    }
    free(ours);
    free(theirs);
    free(eplb);
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    by_hand();
    struct loads l;
    struct trace t;
    fixture_dsv3_sample(&l, &t);
    /* the cases of shared/data/moe-loads/eplb_results.csv that have a map in eplb-maps/ */
    static const struct eplb_case dsv3[] = {
        {"a1 (one NVL72 rack, 288 slots)", "loads/eplb-maps/a1_dsv3_R288_G72_N1_phy2log.csv",
         "models/deepseek-v3.yaml", "topologies/gb200-nvl72.xml", 1, 72, 4},
        {"a2 (4 H800 nodes, 288 slots)", "loads/eplb-maps/a2_dsv3_R288_G32_N4_phy2log.csv",
         "models/deepseek-v3.yaml", "topologies/hgx-h800.xml", 4, 8, 9},
        {"b (8 H800 nodes, 256 slots, EPLB hierarchical)", "loads/eplb-maps/b_dsv3_R256_G64_N8_phy2log.csv",
         "models/deepseek-v3.yaml", "topologies/hgx-h800.xml", 8, 8, 4},
        {"bg (8 H800 nodes, 256 slots, EPLB global)", "loads/eplb-maps/bg_dsv3_R256_G64_N1v8_phy2log.csv",
         "models/deepseek-v3.yaml", "topologies/hgx-h800.xml", 8, 8, 4},
        {"d (18 H800 nodes, 288 slots)", "loads/eplb-maps/d_dsv3_R288_G144_N18_phy2log.csv",
         "models/deepseek-v3.yaml", "topologies/hgx-h800.xml", 18, 8, 2},
    };
    for (size_t i = 0; i < sizeof dsv3 / sizeof dsv3[0]; i++)
        against_eplb(&dsv3[i], &l, &t);
    trace_release(&t);
    loads_release(&l);
    struct loads kimi;
    struct diags d;
    diags_init(&d);
    if (loads_read("loads/kimik2_load.csv", &kimi, &d) != LOADS_OK) {
        printf("Bail out! loads/kimik2_load.csv\n");
        return 1;
    }
    diags_release(&d);
    static const struct eplb_case c = {"c (Kimi K2, one NVL72 rack, 432 slots, no trace)",
                                       "loads/eplb-maps/c_kimik2_R432_G72_N1_phy2log.csv", "models/kimi-k2.yaml",
                                       "topologies/gb200-nvl72.xml", 1, 72, 6};
    against_eplb(&c, &kimi, NULL);
    loads_release(&kimi);
    return tap_done();
}
