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

/* One copy of an expert and the load it carries; sorted heaviest first, the lower expert id
 * among equals. */
struct expert_copy {
    int32_t expert;
    double load;
};
int expert_copy_heavier_first(const void *a, const void *b);

/* Within 0.1% of a lower bound a search stops: each tuning step re-places every copy, and on a
 * 72-device domain the last 0.1% costs seconds (a1: 1.0018 -> 1.0009 took 2 s). */
#define EXPERTS_CLOSE_ENOUGH 1e-3

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

/* The replica counts of `copies` and the loads `tokens` on `devices` x `slots`: no placement
 * has a lighter most loaded device (the mean load, the heaviest copy, and with every slot full
 * the heaviest expert beside the lightest ones). */
double experts_lower_bound(const double *tokens, const int64_t *copies, int64_t experts, int64_t devices,
                           int64_t slots);

/* Every expert on `devices` x `slots`, from the greedy counts `greedy`, tuned by
 * experts_place_tuned; the tuned counts are copied to `tuned` unless it is NULL. */
bool experts_place_all_tuned(const double *tokens, int64_t experts, const int64_t *greedy,
                             int64_t max_copies, int64_t devices, int64_t slots, double deadline,
                             int64_t *tuned, struct layer_placement *out);

void layer_placement_release(struct layer_placement *p);

/* max / mean device load: 1 is perfect balance. */
double layer_imbalance(const struct layer_placement *p);


#endif
