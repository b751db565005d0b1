/* domains.h: which scale-up domain each routed expert (with all its copies) lives in, for one
 * MoE layer, so that the experts a token picks together sit together and the domains stay
 * balanced.
 *
 * Cost = domain imbalance (max / mean domain load) + traffic_weight x (distinct domains a token
 * is sent to, on average over the routing sample). With a token's home domain independent of
 * the placement, the remote domains per token are (1 - 1/domains) times the distinct ones, so
 * the placement never uses which token sits where.
 *
 * Start: experts in id order, filling domain after domain (group-limited routers such as
 * DeepSeek's number their groups as contiguous id ranges, so this keeps groups whole). Then
 * pairwise swaps of experts with the same number of copies between domains, best first, while
 * the cost falls: each swap's traffic change is bounded from below by two per-expert move gains
 * kept up to date, and only candidates whose bound improves are evaluated exactly.
 * Deterministic: ties go to the lower expert id.
 */
#ifndef RACKPLAN_DOMAINS_H
#define RACKPLAN_DOMAINS_H

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
    double cost;
    int64_t swaps;
};

/* `copies[e]` slots of each expert go to one domain of `capacity` slots; the copies must fit.
 * `routing` may be NULL (balance only). Stops improving at `deadline` (seconds on
 * monotonic_seconds()'s clock; <= 0: no limit). Returns false when the copies cannot be packed. */
bool domains_assign(const double *tokens, const int64_t *copies, int64_t experts,
                    const struct layer_routing *routing, int64_t domains, int64_t capacity,
                    double traffic_weight, double deadline, int64_t *domain_of,
                    struct domain_assignment *out);

/* The whole layer on `domains` x `devices_per_domain` devices of `slots` slots, `copies[e]`
 * copies of each expert (`copies` is updated as replicas move):
 * 1. experts, with all their copies, to domains (domains_assign's search). When `groups` > 1
 *    divides the experts into id ranges and is a multiple of the domains, every split of whole
 *    groups over the domains is tried first (when there are at most 20,000), as group-limited
 *    routers pick groups before experts, and the spare slots are dealt again inside each
 *    domain (EPLB's hierarchical policy does the same);
 * 2. each domain's copies on its devices (experts_place_copies);
 * 3. swaps off the most loaded device (within its domain, or trading all copies with an expert
 *    of as many copies in another domain) while device imbalance + traffic_weight x traffic
 *    falls, alternating with traffic-only trades that raise no device above the maximum, and
 *    replicas tuned inside each domain (experts_place_tuned). Step 3 runs twice from the same
 *    start, once paying traffic for lowering any device at the peak and once only for lowering
 *    the maximum, and keeps the lower device imbalance + traffic_weight x traffic.
 * `map`: domains x devices_per_domain x slots logical ids (-1: empty); `device_load`: one per
 * device. out->imbalance is the final domain imbalance. */
bool domains_place(const double *tokens, int64_t *copies, int64_t experts,
                   const struct layer_routing *routing, int64_t groups, int64_t domains,
                   int64_t devices_per_domain, int64_t slots, double traffic_weight,
                   double deadline, int32_t *map, double *device_load,
                   struct domain_assignment *out);

#endif
