/* traffic.h: how much of an expert placement's dispatch leaves the token's scale-up domain,
 * measured on a routing trace (the metrics of shared/data/moe-loads/README.md).
 *
 * Token t of a layer sits on device t mod G. Each of its k experts is served by one replica:
 * by a hash of (token, expert) among all replicas, or, with local routing (what a topology-aware
 * router does), among the replicas in the token's own domain when there are any.
 */
#ifndef RACKPLAN_TRAFFIC_H
#define RACKPLAN_TRAFFIC_H

#include "trace.h"

#include <stdbool.h>
#include <stdint.h>

struct traffic {
    double remote_dispatch_fraction; /* of (token, expert) dispatches, the share leaving the domain */
    double remote_domains_per_token; /* distinct other domains a token is sent to, on average */
};

/* `map`: layers x (devices x slots) logical expert ids (-1: empty slot), devices in order,
 * `devices_per_domain` consecutive devices forming a domain. The trace's layers must match. */
void traffic_measure(const struct trace *t, const int32_t *map, int64_t devices, int64_t slots,
                     int64_t devices_per_domain, int64_t experts, bool local_routing,
                     struct traffic *out);

#endif
