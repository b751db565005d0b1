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

/* Whether every expert's copies sit in one domain, in every layer of `map`: then a token finds
 * either all of an expert's copies in its own domain or none, and local routing picks what
 * hashed routing picks. */
bool traffic_experts_whole(const int32_t *map, int64_t layers, int64_t devices, int64_t slots,
                           int64_t devices_per_domain, int64_t experts);

/* What one MoE layer of a decode step costs on a placement, in seconds, as roofline.h counts
 * it, the hottest resource of each kind setting the pace:
 * - compute: the most loaded device, the longer of its dispatches x flops_per_dispatch at the
 *   peak and its held copies' weights at the HBM rate;
 * - scale-out: the busiest domain's NICs (its devices' together), the larger of what they send
 *   and what they receive: a token's hidden state goes once to each other domain that serves
 *   one of its experts (1 B a value, FP8) and comes back combined (2 B, BF16);
 * - scale-up: the most loaded device's dispatches from tokens that sit on other devices, 3 B a
 *   value each way over its scale-up links;
 * - the layer: with two-micro-batch overlap (DeepEP and SGLang's TBO) the larger of compute and
 *   communication, without it their sum; the communication is the larger of scale-out and
 *   scale-up (DeepEP forwards over NVLink what arrives over the NIC while it arrives).
 * Token t sits on device t mod G and an expert's replica is picked by a hash of (token, expert)
 * (traffic_measure). Without a trace, from the loads alone: a device serves its copies' share of
 * each expert's load, and a token reaches domain j with probability 1 - (1 - s_j)^k, s_j the
 * domain's share of the layer's load. Counts scale to step_tokens. */
struct moe_layer_physics {
    double step_tokens;          /* tokens through the layer in one step of the EP group */
    double flops_per_dispatch;   /* 2 x one expert's parameters */
    double expert_bytes;         /* one copy's weights */
    double hidden;               /* values in a token's hidden state */
    double peak_flops_per_s, hbm_bytes_per_s;
    double nic_bytes_per_s;      /* a device's, each direction */
    double scale_up_bytes_per_s; /* a device's, each direction */
    bool overlap;
};

struct layer_time {
    double compute_s, scale_up_s, scale_out_s, total_s;
};

/* A layer's time from its hottest resources, counts already scaled to the step: the most
 * dispatches and the most held copies of any device, the most dispatches any device takes from
 * tokens on other devices, and the busiest domain's NIC bytes (the larger of sent and received).
 * Every other function here and the placement search (domains.h) price a layer through it. */
void traffic_layer_pace(const struct moe_layer_physics *physics, double most_dispatches, double most_copies,
                        double most_crossing, double busiest_nic_bytes, int64_t devices_per_domain,
                        struct layer_time *out);

/* One layer_time a layer into `out`; `trace` may be NULL (then `loads`, layers x experts). With
 * a trace, `hashed` (unless NULL) gets what traffic_measure gives with hashed routing, from the
 * same walk. */
void traffic_layer_times(const struct trace *trace, const double *loads, int64_t layers,
                         const int32_t *map, int64_t devices, int64_t slots, int64_t devices_per_domain,
                         int64_t experts, int64_t k, const struct moe_layer_physics *physics,
                         struct layer_time *out, struct traffic *hashed);

/* The placement a planner without loads makes: expert e on device e mod `devices`, slot e /
 * devices; no replicas, spare slots empty. `map` holds layers x devices x slots. */
void traffic_naive_map(int64_t layers, int64_t experts, int64_t devices, int64_t slots, int32_t *map);

#endif
