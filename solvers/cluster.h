/* cluster.h: the routed experts of every MoE layer on a cluster of scale-up domains: the replica
 * counts, the domain split (domains.h) for a routing sample, each domain's devices (experts.h),
 * and GLPK on the most loaded device's domain. The layers above: cluster calls domains, domains
 * calls the device packer in experts, and experts calls neither.
 */
#ifndef RACKPLAN_CLUSTER_H
#define RACKPLAN_CLUSTER_H

#include "traffic.h"

#include <stdbool.h>
#include <stdint.h>

/* GLPK's part in a cluster placement: problems solved, how many it proved optimal, how many
 * lowered the layer's most loaded device. */
struct expert_ilp_stats {
    int64_t problems, proven, improved;
    double seconds;
};

/* Every MoE layer of a cluster of `domains` domains x `devices` devices x `slots` slots:
 * replica counts (at most one copy of an expert per domain when there are several), copies to
 * domains by LPT and swaps (domains as bins of devices x slots), then each domain's copies to its
 * devices. `expert` is the physical-to-logical map: layer-major, then devices in order (domain
 * by domain), then slots. */
struct cluster_placement {
    int64_t layers, domains, devices, slots; /* devices per domain */
    int32_t *expert;
    double *device_load; /* layers x (domains x devices) */
    double gpu_imbalance_mean, gpu_imbalance_worst;
    double domain_imbalance_mean, domain_imbalance_worst;
    double worst_gap; /* largest (max load / lower bound - 1) over layers */
    double bound_mean; /* no placement has a lower gpu_imbalance_mean (lower bound / mean, averaged) */
    struct expert_ilp_stats ilp;
    double domains_per_token; /* distinct domains a token reaches, mean over the searched layers (routing only) */
    int64_t dealt_layers;     /* layers reached after the deadline, dealt without search (see below) */
    int64_t swaps;            /* improving swaps of the traffic search */
    bool priced;              /* placed by predicted layer time (routing and physics given) */
    int64_t network_bound;    /* searched layers whose time the network sets (GLPK skipped) */
};

/* With a routing sample (layers x tokens x k expert ids, the trace's layout) and the layer's
 * physics on several domains, each layer is placed by domains_place (domains.h) to lower its
 * predicted time instead; `groups` is the router's expert groups (1: none). The search stops
 * improving at `deadline` (<= 0: none), and every layer begun after it is dealt round-robin
 * (heaviest copy first, one device after the other) in time linear in the slots, so that a
 * deadline holds on any cluster size. With a deadline, GLPK then re-places the copies on the
 * most loaded device and the devices of its domain (or the lightest of them, at most 8 devices)
 * while that lowers the layer's maximum; copies never leave their domain, so the traffic is
 * unchanged. It is skipped on a searched layer whose predicted time the network sets (overlap
 * on and the NICs slower than the hottest device's compute and scale-up): a lighter hottest
 * device would not make that layer faster. The layers are placed on every core, each on its own
 * inputs alone, so the placement does not depend on the number of cores; GLPK runs after them,
 * on one. */
struct cluster_routing {
    const int32_t *chosen;
    int64_t tokens, k;
    int64_t groups;
    const struct moe_layer_physics *physics;
    double deadline;
};

bool cluster_place(const double *tokens, int64_t layers, int64_t experts, int64_t domains,
                   int64_t devices, int64_t slots, const struct cluster_routing *routing,
                   struct cluster_placement *out);
void cluster_placement_release(struct cluster_placement *p);

#endif
