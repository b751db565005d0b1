/* domains.h: which scale-up domain each routed expert (with all its copies) lives in, and on
 * which of the domain's devices, for one MoE layer, so that the layer's predicted time is least.
 *
 * The price of a placement is the time traffic.h predicts for the layer on the plan's own batch
 * (traffic_layer_pace: compute and weight reads of the hottest device, its scale-up dispatches,
 * the busiest domain's NICs, with or without overlap), plus a thousandth of each part so that a
 * move that leaves the binding part alone but lowers another still counts. Which domains a
 * token reaches comes from a routing sample; its home device does not: with homes an even draw,
 * a domain's NIC bytes follow from how many tokens reach it and how many domains all tokens
 * reach, so the placement never uses which device a sample token sits on.
 *
 * Start: experts in id order, filling domain after domain (group-limited routers such as
 * DeepSeek's number their groups as contiguous id ranges, so this keeps groups whole). Then
 * pairwise swaps of experts with the same number of copies between domains, best first, while
 * the price falls: each swap's change in a domain's reach is bounded from below by per-expert
 * move gains kept up to date, and only candidates whose bound improves are evaluated exactly.
 * Deterministic: ties go to the lower expert id.
 */
#ifndef RACKPLAN_DOMAINS_H
#define RACKPLAN_DOMAINS_H

#include "traffic.h"

#include <stdbool.h>
#include <stdint.h>

/* One layer's routing sample: tokens x k expert ids; a row starting with -1 is absent. */
struct layer_routing {
    int64_t tokens;
    int64_t k;
    const int32_t *chosen;
};

struct domain_assignment {
    double imbalance;         /* max / mean domain load */
    double domains_per_token; /* distinct domains a routed token reaches */
    struct layer_time time;   /* the search's own prediction (physics given), homes an even draw */
    bool network_bound;       /* with overlap, the NICs set `time`: a lighter hottest device would
                               * not lower it, so the device phase was skipped */
    int64_t swaps;
};

/* The whole layer on `domains` x `devices_per_domain` devices of `slots` slots, `copies[e]`
 * copies of each expert (`copies` is updated as replicas move), priced by `physics` (NULL:
 * device imbalance alone, and the routing sample is not used):
 * 1. experts, with all their copies, to domains by the swaps above. When `groups` > 1 divides
 *    the experts into id ranges and is a multiple of the domains, every split of whole groups
 *    over the domains is tried first (when there are at most 20,000), as group-limited routers
 *    pick groups before experts, and the spare slots are dealt again inside each domain (EPLB's
 *    hierarchical policy does the same);
 * 2. each domain's copies on its devices (experts_place_copies);
 * 3. swaps off the most loaded device (within its domain, or trading all copies with an expert
 *    of as many copies in another domain), alternating with trades anywhere across domains,
 *    while the price falls, and replicas tuned inside each domain (experts_place_tuned).
 * Stops improving at `deadline` (seconds on monotonic_seconds()'s clock; <= 0: no limit).
 * `map`: domains x devices_per_domain x slots logical ids (-1: empty); `device_load`: one per
 * device. Returns false when the copies cannot be packed. */
bool domains_place(const double *tokens, int64_t *copies, int64_t experts, const struct layer_routing *routing,
                   const struct moe_layer_physics *physics, int64_t groups, int64_t domains,
                   int64_t devices_per_domain, int64_t slots, double deadline, int32_t *map,
                   double *device_load, struct domain_assignment *out);

#endif
