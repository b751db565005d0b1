/* Experts to scale-up domains by co-activation: hand cases whose optimum is worked out below,
 * and the cases of shared/data/moe-loads/eplb_results.csv with the routing trace behind them. */
#include "cluster.h"
#include "domains.h"
#include "experts.h"
#include "fixtures.h"
#include "loads.h"
#include "tap.h"
#include "trace.h"
#include "traffic.h"

#include <stdlib.h>
#include <unistd.h>

static void hand_cases(void)
{
    /* four tokens of top-2: two pick {0, 2}, two pick {1, 3}; every expert carries 2 tokens.
     * The start (id order) puts {0, 1} and {2, 3} together, so every token reaches both
     * domains. Swapping 1 and 2 makes every token local to one domain at the same balance. */
    int32_t pairs[] = {0, 2, 0, 2, 1, 3, 1, 3};
    struct layer_routing routing = {4, 2, pairs};
    double even[] = {2, 2, 2, 2};
    int64_t one[] = {1, 1, 1, 1};
    int64_t domain_of[4];
    struct domain_assignment a;
    bool done = domains_assign(even, one, 4, &routing, 2, 2, 1, 0, domain_of, &a);
    CHECK(done && domain_of[0] == domain_of[2] && domain_of[1] == domain_of[3] && domain_of[0] != domain_of[1],
          "co-activated pairs share a domain: {0,2} and {1,3}");
    CHECK(a.domains_per_token == 1 && a.imbalance == 1, "one domain per token (%.3f), balance 1 (%.3f)",
          a.domains_per_token, a.imbalance);

    /* the trade-off: three tokens pick {0, 1}, one picks {2, 3}; loads 3, 3, 1, 1 (mean domain
     * load 4). Grouped {0,1} | {2,3}: imbalance 6/4 = 1.5 and 1 domain a token; balanced
     * {0,2} | {1,3}: imbalance 1 and 2 domains a token. Cost 1.5 + W against 1 + 2W: grouped
     * wins for W > 0.5, balanced for W < 0.5. */
    int32_t skewed[] = {0, 1, 0, 1, 0, 1, 2, 3};
    struct layer_routing topics = {4, 2, skewed};
    double loads[] = {3, 3, 1, 1};
    done = domains_assign(loads, one, 4, &topics, 2, 2, 0.25, 0, domain_of, &a);
    CHECK(done && a.imbalance == 1 &&
              a.domains_per_token == 2,
          "W = 0.25: balanced (imbalance %.3f, %.3f domains a token; hand: 1 and 2)", a.imbalance,
          a.domains_per_token);
    done = domains_assign(loads, one, 4, &topics, 2, 2, 1, 0, domain_of, &a);
    CHECK(done && a.imbalance == 1.5 &&
              a.domains_per_token == 1,
          "W = 1: grouped (imbalance %.3f, %.3f domains a token; hand: 1.5 and 1)", a.imbalance,
          a.domains_per_token);
    CHECK(!domains_assign(loads, one, 4, &topics, 2, 1, 1, 0, domain_of, &a),
          "four experts do not fit two domains of one slot: refused");
}

struct measured {
    double gpu, remote;
    bool valid;
};

/* Places every layer of dsv3_load.csv on domains x devices x slots with the trace, checks each
 * expert is placed with all copies in one domain, and measures EPLB's metrics. */
static struct measured place(const struct loads *l, const struct trace *t, int64_t domains,
                             int64_t devices, int64_t slots, double weight)
{
    struct cluster_routing routing = {t->expert, t->tokens, t->k, 8, weight, 0};
    struct cluster_placement cp;
    struct measured m = {0, 0, false};
    if (!cluster_place(l->tokens, l->layers, l->experts, domains, devices, slots, &routing, &cp))
        return m;
    m.valid = true;
    int64_t width = domains * devices * slots;
    for (int64_t layer = 0; layer < l->layers; layer++) {
        int64_t home[256];
        for (int64_t e = 0; e < 256; e++)
            home[e] = -1;
        for (int64_t s = 0; s < width; s++) {
            int32_t e = cp.expert[layer * width + s];
            if (e < 0)
                continue;
            int64_t d = s / (devices * slots);
            m.valid &= home[e] < 0 || home[e] == d;
            home[e] = d;
        }
        for (int64_t e = 0; e < 256; e++)
            m.valid &= home[e] >= 0;
    }
    struct traffic hashed;
    traffic_measure(t, cp.expert, domains * devices, slots, devices, l->experts, false, &hashed);
    m.gpu = cp.gpu_imbalance_mean;
    m.remote = hashed.remote_domains_per_token;
    cluster_placement_release(&cp);
    return m;
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    hand_cases();

    struct loads l;
    struct trace t;
    fixture_dsv3_sample(&l, &t);
    /* case b: 256 slots on 8 nodes of 8 GPUs, no spare. EPLB hierarchical: GPU 1.32488 at 3.47704
     * remote nodes a token; global: 1.17898 at 4.6448 (eplb_results.csv). */
    struct measured b = place(&l, &t, 8, 8, 4, 0.1);
    CHECK(b.valid, "b: every expert placed, all copies in one node");
    CHECK(b.gpu < 1.17898 && b.remote < 4.6448, "b, W = 0.1: GPU %.4f < 1.179 and %.3f remote nodes "
          "< 4.645 (beats EPLB global on both)", b.gpu, b.remote);
    struct measured whole = place(&l, &t, 8, 8, 4, 10);
    CHECK(whole.gpu < 1.32488 && whole.remote <= 3.47704 + 0.01, "b, W = 10: GPU %.4f < 1.325 at %.3f "
          "remote nodes (EPLB hierarchical 3.477)", whole.gpu, whole.remote);
    CHECK(whole.remote < b.remote && whole.gpu > b.gpu, "a larger weight trades balance for traffic");
    /* case a2: 288 slots on 4 nodes of 8 GPUs. EPLB hierarchical (a2) 1.03804 at 2.34962 remote
     * nodes, global (a2g) 1.00847 at 2.71197. Issue #5 asks for both no worse than hierarchical,
     * one clearly better. */
    struct measured a2 = place(&l, &t, 4, 8, 9, 0.1);
    CHECK(a2.valid && a2.gpu < 1.00847 && a2.remote < 2.71197,
          "a2, W = 0.1: GPU %.4f < 1.0085 and %.3f remote nodes < 2.712 (beats EPLB global on both)",
          a2.gpu, a2.remote);
    struct measured a2_traffic = place(&l, &t, 4, 8, 9, 1.5);
    CHECK(a2_traffic.valid && a2_traffic.gpu < 1.03804 - 0.01 && a2_traffic.remote <= 2.34962,
          "a2, W = 1.5: GPU %.4f < 1.028 (clearly below EPLB hierarchical's 1.038) and %.4f remote "
          "nodes <= 2.3496", a2_traffic.gpu, a2_traffic.remote);
    trace_release(&t);
    loads_release(&l);
    return tap_done();
}
