/* rackplan compare's rows against hand arithmetic: cost and energy per token from the price and
 * power in the topology files, the batch a TPOT target allows, the all-to-all share that leaves
 * the domain, and the buyer's order. */
#include "compare.h"
#include "fixtures.h"
#include "tap.h"

#include <math.h>
#include <unistd.h>

static struct workload workload(const struct model *m, int64_t context)
{
    return (struct workload){.batch = 1, .context = context, .weights = m->weights_precision,
                             .expert_weights = m->expert_weights_precision, .kv = m->kv_precision,
                             .reserve_fraction = PLAN_DEFAULT_RESERVE_FRACTION, .reserve_bytes = -1};
}

static void priced_row(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    struct workload w = workload(&m, 8192);
    struct compare_row r;
    CHECK(compare_row(&m, &h200, 1, &w, NULL, 0, 0, &r) && r.fits, "DeepSeek-V3 on one HGX H200 fits");
    struct fit f;
    plan_fit(&m, &h200, 1, &w, &f);
    CHECK(r.batch == f.max_batch && r.batch == r.max_batch,
          "no target: the row runs the largest batch that fits (%lld)", (long long)r.batch);
    /* hgx-h200.xml's <price> $3.29 per GPU-hour and <power> 700 W (sources beside them); 8 GPUs.
     * $/Mtok = 3.29 x 8 $/h / (tokens/s x 3600 s/h) x 1e6; J/token = 700 W x 8 / tokens/s. */
    double rate = r.point.tokens_per_s;
    double cost = 3.29 * 8 / (rate * 3600) * 1e6, energy = 700.0 * 8 / rate;
    CHECK(fabs(r.cost_per_mtok - cost) < 1e-9 * cost, "cost %.6f $/Mtok = $26.32/h over %.0f tok/s",
          r.cost_per_mtok, rate);
    CHECK(fabs(r.joules_per_token - energy) < 1e-9 * energy, "energy %.6f J/token = 5,600 W over %.0f tok/s",
          r.joules_per_token, rate);
    CHECK(fabs(r.tokens_per_s_per_rack - rate) < 1e-9 * rate, "one rack: tokens/s per rack = tokens/s");
    CHECK(r.all_to_all_outside == 0, "EP 8 inside one 8-GPU node: no all-to-all leaves it");

    struct compare_row priced;
    compare_row(&m, &h200, 1, &w, NULL, 0, 6.58, &priced);
    CHECK(fabs(priced.cost_per_mtok - 2 * r.cost_per_mtok) < 1e-9 * priced.cost_per_mtok,
          "--price 6.58 (twice the file's 3.29) doubles the cost per token");

    /* a 10 ms target (HBM alone allows a 26 ms step): the largest batch within 10 ms */
    struct compare_row t;
    compare_row(&m, &h200, 1, &w, NULL, 0.010, 0, &t);
    struct roof_point next;
    struct graph_summary g;
    graph_analyse(&h200, 1, &g);
    struct roof_setup s = {.model = &m, .topology = &h200, .graph = &g, .layout = t.layout,
                           .workload = w, .efficiency = EFFICIENCY_BOUND};
    roof_decode(&s, t.batch + 1, &next);
    CHECK(t.tpot_met && t.batch < t.max_batch && t.point.step_s <= 0.010 && next.step_s > 0.010,
          "10 ms: batch %lld steps in %.3f ms, one more sequence %.3f ms", (long long)t.batch,
          t.point.step_s * 1e3, next.step_s * 1e3);
    struct compare_row none;
    compare_row(&m, &h200, 1, &w, NULL, 1e-4, 0, &none);
    CHECK(none.fits && !none.tpot_met && none.batch == 0 && none.cost_per_mtok == 0,
          "0.1 ms is below the latency floor (%.2f ms): no batch, no cost", none.latency_floor_s * 1e3);
}

static void outside_share(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology h800 = fixture_topology("topologies/hgx-h800.xml");
    struct workload w = workload(&m, 4096);
    struct compare_row r;
    compare_row(&m, &h800, 18, &w, NULL, 0, 0, &r);
    /* EP 144 over 18 nodes of 8: a token goes once to each other node holding one of its 8
     * experts (18 nodes do not hold whole expert groups: experts uniform), 17 x (1 - prod_{i<8}
     * (256 - 256/18 - i) / (256 - i)) = 6.3092 nodes, of 8 copies dispatched: 0.78865 */
    CHECK(r.layout.ep == 144 && fabs(r.all_to_all_outside - 6.309239455852574 / 8) < 1e-12,
          "18 H800 nodes, EP %lld: %.4f of the all-to-all bytes leave the node (6.309 nodes of 8 copies)",
          (long long)r.layout.ep, r.all_to_all_outside);
    compare_row(&m, &h800, 1, &w, NULL, 0, 0, &r);
    CHECK(!r.fits && r.min_devices == 16 && r.batch == 0,
          "one H800 node cannot hold DeepSeek-V3 (671e9 B at FP8 > 8 x 80 GB x 0.9): needs %lld",
          (long long)r.min_devices);
}

static void domain_sizes(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology nvl72 = fixture_topology("topologies/gb200-nvl72.xml");
    struct topology eight, whole;
    /* gb200-nvl72.xml: 72 GPUs, 18 links of 50 GB/s each, 18 switch chips: one chip per 4 GPUs */
    bool made = topology_with_domain_size(&nvl72, 8, &eight);
    CHECK(made && eight.domain_devices == 8 && eight.switches == 2 && eight.links_per_device == 18 &&
              eight.link_bytes_per_s == 50e9 && eight.hbm_bytes == nvl72.hbm_bytes,
          "a domain of 8: the same links and HBM per GPU, 8 x 18 / 72 = 2 switch chips (%lld)",
          (long long)eight.switches);
    topology_with_domain_size(&nvl72, 576, &whole);
    CHECK(whole.switches == 144, "a domain of 576: 576 x 18 / 72 = 144 switch chips (%lld)",
          (long long)whole.switches);
    struct topology mi300x = fixture_topology("topologies/mi300x.xml"), switched;
    topology_with_domain_size(&mi300x, 64, &switched);
    CHECK(switched.kind == DOMAIN_SWITCHED &&
              topology_scale_up_bytes_per_s(&switched) == topology_scale_up_bytes_per_s(&mi300x),
          "a mesh grown to 64 devices keeps each device's 7 links, through a switch");
    struct topology tpu = fixture_topology("topologies/tpu-v5p-pod.xml"), refused;
    CHECK(!topology_with_domain_size(&tpu, 64, &refused), "a torus's domain is not resized");

    struct workload w = workload(&m, 8192);
    struct compare_row r8, r576;
    compare_row(&m, &eight, 72, &w, NULL, 0, 0, &r8);
    compare_row(&m, &whole, 1, &w, NULL, 0, 0, &r576);
    /* 576 GPUs either way; EP 576 over 72 domains of 8: 71 x (1 - prod_{i<8} (256 - 256/72 - i)
     * / (256 - i)) = 7.6156 remote domains a token, of 8 copies: 0.95194 */
    CHECK(r8.devices == 576 && r8.layout.ep == 576 && fabs(r8.all_to_all_outside - 7.6155562186755414 / 8) < 1e-12,
          "72 domains of 8, EP %lld: %.5f of the all-to-all bytes leave the domain (7.616 domains of 8 copies)",
          (long long)r8.layout.ep, r8.all_to_all_outside);
    CHECK(r576.devices == 576 && r576.all_to_all_outside == 0, "one domain of 576: none leaves it");
    CHECK(r576.point.tokens_per_s_per_device > r8.point.tokens_per_s_per_device,
          "the all-to-all inside NVLink: more tokens/s per GPU (%.0f) than across 72 domains (%.0f)",
          r576.point.tokens_per_s_per_device, r8.point.tokens_per_s_per_device);
}

static void order(void)
{
    struct compare_row rows[5] = {
        {.fits = true, .tpot_met = true, .cost_per_mtok = 2},
        {.fits = true, .tpot_met = true, .cost_per_mtok = 1},
        {.fits = true, .tpot_met = true, .point = {.tokens_per_s_per_device = 100}},
        {.fits = false},
        {.fits = true, .tpot_met = true, .point = {.tokens_per_s_per_device = 200}},
    };
    int64_t got[5];
    compare_order(rows, 5, got);
    CHECK(got[0] == 1 && got[1] == 0 && got[2] == 4 && got[3] == 2 && got[4] == 3,
          "order: $1, $2, then unpriced by tok/s/dev (200, 100), then what does not fit");
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    priced_row();
    outside_share();
    domain_sizes();
    order();
    return tap_done();
}
