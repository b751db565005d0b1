/* experts.h: routed experts (and replicas of hot experts) on the devices of a domain, one MoE
 * layer at a time, minimising the load of the most loaded device.
 *
 * The greedy of SOLVERS.md: replica counts first (each spare slot to the expert with the most
 * load per copy), then longest-processing-time placement (heaviest copy to the least loaded
 * device with a free slot that does not hold that expert yet), then pairwise swaps off the most
 * loaded device while they lower it. A copy of an expert with load w and c copies carries w / c.
 * Deterministic: ties go to the lower expert id and the lower device index.
 */
#ifndef RACKPLAN_EXPERTS_H
#define RACKPLAN_EXPERTS_H

#include <stdbool.h>
#include <stdint.h>

struct layer_placement {
    int64_t devices;
    int64_t slots;       /* per device */
    int32_t *expert;     /* devices x slots: the logical expert in each physical slot */
    double *device_load; /* devices */
    double max_load;
    double mean_load;
    double lower_bound;  /* no placement with these slots can have a lower max_load */
};

/* Places `experts` experts with loads `tokens` on `devices` devices of `slots` slots each
 * (devices x slots >= experts, slots x devices <= experts x devices). Returns false when the
 * slots cannot hold every expert once. The caller frees with layer_placement_release. */
bool experts_place_layer(const double *tokens, int64_t experts, int64_t devices, int64_t slots,
                         struct layer_placement *out);

/* Replica counts for `slots` slots: one copy each, then every spare slot to the expert with the
 * most load per copy, at most `max_copies` copies of one expert. */
void experts_replicas(const double *tokens, int64_t experts, int64_t slots, int64_t max_copies,
                      int64_t *copies);

/* One entry per copy of the `n` experts in `ids` (NULL: experts 0 .. n-1): its expert in
 * `list_ids`, its share tokens[e] / copies[e] in `list_loads`. Returns the entries written. */
int64_t experts_copy_list(const double *tokens, const int64_t *copies, const int32_t *ids,
                          int64_t n, int32_t *list_ids, double *list_loads);

/* Places `count` given copies (expert id and load each) on `devices` x `slots` slots, by LPT and
 * swaps (which stop at `deadline`, <= 0: none); lower_bound is max(mean load, heaviest copy). */
bool experts_place_copies(const int32_t *expert, const double *load, int64_t count,
                          int64_t devices, int64_t slots, double deadline, struct layer_placement *out);

/* Places the copies of the `n` experts in `ids` (`tokens` and `copies` indexed by expert id),
 * then moves one replica at a time, from an expert that keeps one to spare to an expert on the
 * most loaded device, while that lowers the most loaded device. The greedy counts minimise the
 * heaviest copy, not the heaviest device: with few slots a device (e.g. 2 slots on DeepSeek's
 * EP144) pairs copies, and other counts pair better. `copies` is updated; at most `max_copies`
 * of one expert; the tuning stops at `deadline` (<= 0: none). */
bool experts_place_tuned(const double *tokens, const int32_t *ids, int64_t n, int64_t *copies,
                         int64_t max_copies, int64_t devices, int64_t slots, double deadline,
                         struct layer_placement *out);

void layer_placement_release(struct layer_placement *p);

/* max / mean device load: 1 is perfect balance. */
double layer_imbalance(const struct layer_placement *p);


/* Every MoE layer of a cluster of `domains` domains x `devices` devices x `slots` slots:
 * replica counts (at most one copy of an expert per domain when there are several), copies to
 * domains by LPT and swaps (domains as bins of devices x slots), then each domain's copies to its
 * devices. `expert` is the physical-to-logical map: layer-major, then devices in order (domain
 * by domain), then slots. */
/* GLPK's part in a cluster placement: problems solved, how many it proved optimal, how many
 * lowered the layer's most loaded device. */
struct expert_ilp_stats {
    int64_t problems, proven, improved;
    double seconds;
};

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
    double traffic_weight;    /* the weight that steered the placement; 0: balance alone */
};

/* With a routing sample (layers x tokens x k expert ids, the trace's layout) and a positive
 * traffic_weight on several domains, each layer is placed by domains_place (domains.h) to lower
 * domain imbalance + traffic_weight x distinct domains per token instead; `groups` is the
 * router's expert groups (1: none). The search stops improving at `deadline` (<= 0: none), and
 * every layer begun after it is dealt round-robin (heaviest copy first, one device after the
 * other) in time linear in the slots, so that a deadline holds on any cluster size.
 * With a deadline, GLPK then re-places the copies on the most loaded device and the devices of
 * its domain (or the lightest of them, at most 8 devices) while that lowers the layer's maximum;
 * copies never leave their domain, so the traffic is unchanged. */
struct cluster_routing {
    const int32_t *chosen;
    int64_t tokens, k;
    int64_t groups;
    double traffic_weight;
    double deadline;
};

bool experts_place_cluster(const double *tokens, int64_t layers, int64_t experts, int64_t domains,
                           int64_t devices, int64_t slots, const struct cluster_routing *routing,
                           struct cluster_placement *out);
void cluster_placement_release(struct cluster_placement *p);

#endif
