/* experts.c: see experts.h. */
#include "experts.h"

#include "diag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int expert_copy_heavier_first(const void *a, const void *b)
{
    const struct expert_copy *x = a, *y = b;
    if (x->load != y->load)
        return x->load > y->load ? -1 : 1;
    return x->expert - y->expert;
}

static bool holds(const struct layer_placement *p, int64_t device, int32_t expert, int64_t used)
{
    for (int64_t s = 0; s < used; s++)
        if (p->expert[device * p->slots + s] == expert)
            return true;
    return false;
}

/* Indices by their value in `load`, then by index: a binary min-heap (devices by load; experts
 * by minus their tokens per copy). */
struct device_heap {
    const double *load;
    int64_t *items;
    int64_t count;
};

static bool lighter(const struct device_heap *h, int64_t a, int64_t b)
{
    return h->load[a] < h->load[b] || (h->load[a] == h->load[b] && a < b);
}

static void heap_push(struct device_heap *h, int64_t device)
{
    int64_t at = h->count++;
    while (at > 0 && lighter(h, device, h->items[(at - 1) / 2])) {
        h->items[at] = h->items[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    h->items[at] = device;
}

static int64_t heap_pop(struct device_heap *h)
{
    int64_t top = h->items[0], last = h->items[--h->count], at = 0;
    for (;;) {
        int64_t child = 2 * at + 1;
        if (child >= h->count)
            break;
        if (child + 1 < h->count && lighter(h, h->items[child + 1], h->items[child]))
            child++;
        if (!lighter(h, h->items[child], last))
            break;
        h->items[at] = h->items[child];
        at = child;
    }
    if (h->count > 0)
        h->items[at] = last;
    return top;
}

static int lighter_token_first(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Lower bound for fixed slots: the mean load, and the heaviest copy under the best replica
 * counts (the greedy counts minimise the largest load per copy). Without spare slots every
 * device is full and there is one copy an expert, so the heaviest expert's device also holds
 * slots - 1 others, at least the lightest ones. */
double experts_lower_bound(const double *tokens, const int64_t *copies, int64_t experts, int64_t devices,
                    int64_t slots)
{
    double total = 0, heaviest = 0;
    for (int64_t e = 0; e < experts; e++) {
        total += tokens[e];
        double per_copy = tokens[e] / (double)copies[e];
        if (per_copy > heaviest)
            heaviest = per_copy;
    }
    double mean = total / (double)devices, best = heaviest > mean ? heaviest : mean;
    if (experts == devices * slots && slots > 1) {
        double *sorted = xmalloc((size_t)experts * sizeof *sorted);
        memcpy(sorted, tokens, (size_t)experts * sizeof *sorted);
        qsort(sorted, (size_t)experts, sizeof *sorted, lighter_token_first);
        double full = sorted[experts - 1];
        for (int64_t i = 0; i < slots - 1; i++)
            full += sorted[i];
        best = full > best ? full : best;
        free(sorted);
    }
    return best;
}

/* Swaps a copy on the most loaded device with a lighter copy elsewhere while that lowers the
 * larger of the two devices' loads below the current maximum, until `deadline` (<= 0: none). */
static void improve(struct layer_placement *p, double *copy_load, double deadline)
{
    int64_t n = p->devices, s = p->slots;
    for (int round = 0; round < 10000; round++) {
        if (deadline > 0 && (round & 15) == 15 && monotonic_seconds() > deadline)
            return;
        int64_t worst = 0;
        for (int64_t d = 1; d < n; d++)
            if (p->device_load[d] > p->device_load[worst])
                worst = d;
        double best_gain = 0;
        int64_t best_i = -1, best_j = -1;
        for (int64_t i = worst * s; i < (worst + 1) * s; i++) {
            for (int64_t j = 0; j < n * s; j++) {
                int64_t other = j / s;
                if (other == worst || copy_load[j] >= copy_load[i])
                    continue;
                double delta = copy_load[i] - copy_load[j];
                double after = p->device_load[other] + delta;
                double worst_after = p->device_load[worst] - delta;
                double peak = after > worst_after ? after : worst_after;
                double gain = p->device_load[worst] - peak;
                if (gain <= best_gain * (1 + 1e-12) || gain <= 1e-12)
                    continue;
                if (holds(p, other, p->expert[i], s) || holds(p, worst, p->expert[j], s))
                    continue;
                best_gain = gain;
                best_i = i;
                best_j = j;
            }
        }
        if (best_i < 0)
            return;
        int64_t other = best_j / s;
        double delta = copy_load[best_i] - copy_load[best_j];
        p->device_load[worst] -= delta;
        p->device_load[other] += delta;
        int32_t expert = p->expert[best_i];
        p->expert[best_i] = p->expert[best_j];
        p->expert[best_j] = expert;
        double load = copy_load[best_i];
        copy_load[best_i] = copy_load[best_j];
        copy_load[best_j] = load;
    }
}

int64_t experts_copy_list(const double *tokens, const int64_t *copies, const int32_t *ids,
                          int64_t n, int32_t *list_ids, double *list_loads)
{
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t e = ids ? ids[i] : (int32_t)i;
        for (int64_t c = 0; c < copies[e]; c++) {
            list_ids[count] = e;
            list_loads[count++] = tokens[e] / (double)copies[e];
        }
    }
    return count;
}

/* How many copies beyond the first expert `tokens` gets when every share tokens / c (c = 1, 2,
 * ...) above `threshold` earns one, at most max_copies - 1. */
static int64_t copies_above(double tokens, double threshold, int64_t max_copies)
{
    if (max_copies <= 1 || !(tokens > threshold))
        return 0;
    double estimate = threshold > 0 ? floor(tokens / threshold) : (double)max_copies;
    if (estimate >= (double)(max_copies - 1))
        estimate = (double)(max_copies - 1);
    int64_t n = (int64_t)estimate;
    while (n < max_copies - 1 && tokens / (double)(n + 1) > threshold)
        n++;
    while (n > 0 && !(tokens / (double)n > threshold))
        n--;
    return n;
}

void experts_replicas(const double *tokens, int64_t experts, int64_t slots, int64_t max_copies,
                      int64_t *copies)
{
    /* Each spare slot goes to the expert with the most tokens per copy (the lowest index among
     * equals) still under max_copies: a heap on minus that share, as tens of thousands of spare
     * slots times hundreds of experts took seconds per layer. The shares handed out fall, so
     * every share above a threshold goes first whatever the order: those are counted per expert
     * in one pass, the threshold found by bisection, and the heap hands out the rest in its
     * order (300,000 spare slots a layer took 20 ms of heap pops). */
    int64_t spare = slots - experts;
    for (int64_t e = 0; e < experts; e++)
        copies[e] = 1;
    if (spare > 4 * experts) {
        double low = 0, high = 0;
        for (int64_t e = 0; e < experts; e++)
            high = tokens[e] > high ? tokens[e] : high;
        for (int i = 0; i < 200 && low < high; i++) {
            double middle = low + (high - low) / 2;
            if (middle <= low || middle >= high)
                break;
            int64_t handed = 0;
            for (int64_t e = 0; e < experts && handed <= spare; e++)
                handed += copies_above(tokens[e], middle, max_copies);
            if (handed <= spare)
                high = middle;
            else
                low = middle;
        }
        for (int64_t e = 0; e < experts; e++) {
            copies[e] += copies_above(tokens[e], high, max_copies);
            spare -= copies[e] - 1;
        }
    }
    double *minus_share = xmalloc((size_t)(experts > 0 ? experts : 1) * sizeof *minus_share);
    struct device_heap heap = {.load = minus_share, .items = xmalloc((size_t)(experts > 0 ? experts : 1) * sizeof *heap.items)};
    for (int64_t e = 0; e < experts; e++) {
        minus_share[e] = -(tokens[e] / (double)copies[e]);
        if (copies[e] < max_copies)
            heap_push(&heap, e);
    }
    for (; spare > 0 && heap.count > 0; spare--) {
        int64_t pick = heap_pop(&heap);
        copies[pick]++;
        minus_share[pick] = -(tokens[pick] / (double)copies[pick]);
        if (copies[pick] < max_copies)
            heap_push(&heap, pick);
    }
    free(heap.items);
    free(minus_share);
}

bool experts_place_copies(const int32_t *expert, const double *load, int64_t count,
                          int64_t devices, int64_t slots, double deadline, struct layer_placement *out)
{
    int64_t total = devices * slots;
    if (count > total || devices <= 0 || slots <= 0)
        return false;
    struct expert_copy *list = xmalloc((size_t)(count > 0 ? count : 1) * sizeof *list);
    for (int64_t i = 0; i < count; i++)
        list[i] = (struct expert_copy){expert[i], load[i]};
    qsort(list, (size_t)count, sizeof *list, expert_copy_heavier_first);

    struct layer_placement p = {.devices = devices, .slots = slots};
    p.expert = xmalloc((size_t)total * sizeof *p.expert);
    p.device_load = xcalloc((size_t)devices, sizeof *p.device_load);
    double *copy_load = xcalloc((size_t)total, sizeof *copy_load);
    int64_t *used = xcalloc((size_t)devices, sizeof *used);
    for (int64_t i = 0; i < total; i++)
        p.expert[i] = -1;
    /* Each copy goes to the least loaded device (the lowest index among equals) that has a free
     * slot and no copy of its expert yet. A heap of the devices with free slots finds it in
     * log time: a scan of every device per copy took a minute on 256 racks. */
    struct device_heap heap = {.load = p.device_load, .items = xmalloc((size_t)devices * sizeof *heap.items)};
    for (int64_t d = 0; d < devices; d++)
        heap_push(&heap, d);
    int64_t *skipped = xmalloc((size_t)devices * sizeof *skipped);
    bool placed = true;
    for (int64_t i = 0; i < count && placed; i++) {
        int64_t target = -1, skips = 0;
        while (target < 0 && heap.count > 0) {
            int64_t d = heap_pop(&heap);
            if (holds(&p, d, list[i].expert, used[d]))
                skipped[skips++] = d;
            else
                target = d;
        }
        for (int64_t k = 0; k < skips; k++)
            heap_push(&heap, skipped[k]);
        if (target < 0) {
            placed = false;
            break;
        }
        int64_t slot = target * slots + used[target]++;
        p.expert[slot] = list[i].expert;
        copy_load[slot] = list[i].load;
        p.device_load[target] += list[i].load;
        if (used[target] < slots)
            heap_push(&heap, target);
    }
    free(skipped);
    free(heap.items);
    if (placed) {
        improve(&p, copy_load, deadline);
        double sum = 0, heaviest = 0;
        p.max_load = 0;
        for (int64_t d = 0; d < devices; d++) {
            sum += p.device_load[d];
            if (p.device_load[d] > p.max_load)
                p.max_load = p.device_load[d];
        }
        for (int64_t i = 0; i < count; i++)
            heaviest = load[i] > heaviest ? load[i] : heaviest;
        p.mean_load = sum / (double)devices;
        p.lower_bound = p.mean_load > heaviest ? p.mean_load : heaviest;
    }
    free(used);
    free(copy_load);
    free(list);
    if (!placed) {
        layer_placement_release(&p);
        return false;
    }
    *out = p;
    return true;
}

struct candidate {
    int32_t expert;
    double load; /* sort key: load per copy after the move (negated for receivers: heaviest first) */
};

static int lighter_first(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->load != y->load)
        return x->load < y->load ? -1 : 1;
    return x->expert - y->expert;
}

/* The neighbourhood of one tuning step: receivers are the experts on the most loaded device, then
 * the experts heaviest per copy; donors the experts lightest per copy once they give one away. */
enum { RECEIVERS_TRIED = 16, DONORS_TRIED = 4 };


static int64_t receivers_of(const double *tokens, const int32_t *ids, int64_t n,
                            const int64_t *copies, int64_t max_copies,
                            const struct layer_placement *p, struct candidate *out)
{
    int64_t worst = 0, count = 0;
    for (int64_t d = 1; d < p->devices; d++)
        if (p->device_load[d] > p->device_load[worst])
            worst = d;
    for (int64_t s = 0; s < p->slots; s++) {
        int32_t e = p->expert[worst * p->slots + s];
        if (e >= 0 && copies[e] < max_copies)
            out[count++] = (struct candidate){e, 0};
    }
    int64_t on_worst = count;
    for (int64_t i = 0; i < n; i++) {
        int32_t e = ids[i];
        bool seen = false;
        for (int64_t j = 0; j < on_worst; j++)
            seen |= out[j].expert == e;
        if (!seen && copies[e] < max_copies)
            out[count++] = (struct candidate){e, -tokens[e] / (double)(copies[e] + 1)};
    }
    qsort(out + on_worst, (size_t)(count - on_worst), sizeof *out, lighter_first);
    int64_t limit = on_worst + RECEIVERS_TRIED;
    return count < limit ? count : limit;
}

static int heavier_load_first(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

/* Device loads heaviest first, compared element by element: a placement that keeps the maximum
 * but has fewer devices at it (or lighter ones just below) is better, which lets the tuning walk
 * across plateaus where several devices share the maximum. */
static bool lighter_placement(const struct layer_placement *a, const struct layer_placement *b,
                              double *scratch_a, double *scratch_b)
{
    memcpy(scratch_a, a->device_load, (size_t)a->devices * sizeof *scratch_a);
    memcpy(scratch_b, b->device_load, (size_t)b->devices * sizeof *scratch_b);
    qsort(scratch_a, (size_t)a->devices, sizeof *scratch_a, heavier_load_first);
    qsort(scratch_b, (size_t)b->devices, sizeof *scratch_b, heavier_load_first);
    for (int64_t d = 0; d < a->devices; d++) {
        if (scratch_a[d] < scratch_b[d] * (1 - 1e-12))
            return true;
        if (scratch_a[d] > scratch_b[d] * (1 + 1e-12))
            return false;
    }
    return false;
}

bool experts_place_tuned(const double *tokens, const int32_t *ids, int64_t n, int64_t *copies,
                         int64_t max_copies, int64_t devices, int64_t slots, double deadline,
                         struct layer_placement *out)
{
    int64_t total = devices * slots;
    int32_t *list_ids = xmalloc((size_t)(total > 0 ? total : 1) * sizeof *list_ids);
    double *list_loads = xmalloc((size_t)(total > 0 ? total : 1) * sizeof *list_loads);
    struct candidate *donors = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *donors);
    struct candidate *receivers = xmalloc((size_t)(n + slots) * sizeof *receivers);
    double *scratch_a = xmalloc((size_t)devices * sizeof *scratch_a);
    double *scratch_b = xmalloc((size_t)devices * sizeof *scratch_b);
    int64_t count = experts_copy_list(tokens, copies, ids, n, list_ids, list_loads);
    bool ok = count <= total && experts_place_copies(list_ids, list_loads, count, devices, slots, deadline, out);
    if (max_copies > devices)
        max_copies = devices;
    for (int round = 0; ok && round < 100000; round++) {
        if (deadline > 0 && monotonic_seconds() > deadline)
            break;
        if (out->max_load <= out->mean_load * (1 + EXPERTS_CLOSE_ENOUGH))
            break;
        int64_t receiver_count = receivers_of(tokens, ids, n, copies, max_copies, out, receivers);
        int64_t donor_count = 0;
        for (int64_t i = 0; i < n; i++)
            if (copies[ids[i]] > 1)
                donors[donor_count++] = (struct candidate){ids[i], tokens[ids[i]] / (double)(copies[ids[i]] - 1)};
        qsort(donors, (size_t)donor_count, sizeof *donors, lighter_first);
        bool improved = false;
        for (int64_t r = 0; r < receiver_count && !improved; r++) {
            int32_t receiver = receivers[r].expert;
            for (int64_t i = 0, tried = 0; i < donor_count && tried < DONORS_TRIED && !improved; i++) {
                int32_t donor = donors[i].expert;
                if (donor == receiver)
                    continue;
                tried++;
                copies[receiver]++;
                copies[donor]--;
                experts_copy_list(tokens, copies, ids, n, list_ids, list_loads);
                struct layer_placement trial = {0};
                if (experts_place_copies(list_ids, list_loads, count, devices, slots, deadline, &trial) &&
                    lighter_placement(&trial, out, scratch_a, scratch_b)) {
                    layer_placement_release(out);
                    *out = trial;
                    improved = true;
                } else {
                    if (trial.expert)
                        layer_placement_release(&trial);
                    copies[receiver]--;
                    copies[donor]++;
                }
            }
        }
        if (!improved)
            break;
    }
    free(scratch_b);
    free(scratch_a);
    free(receivers);
    free(donors);
    free(list_loads);
    free(list_ids);
    return ok;
}

/* Every expert on `devices` x `slots`, from the greedy counts `greedy`, tuned by
 * experts_place_tuned; the tuned counts are copied to `tuned` unless it is NULL. */
bool experts_place_all_tuned(const double *tokens, int64_t experts, const int64_t *greedy,
                            int64_t max_copies, int64_t devices, int64_t slots, double deadline,
                            int64_t *tuned, struct layer_placement *out)
{
    int32_t *every = xmalloc((size_t)experts * sizeof *every);
    int64_t *counts = xmalloc((size_t)experts * sizeof *counts);
    for (int64_t e = 0; e < experts; e++)
        every[e] = (int32_t)e;
    memcpy(counts, greedy, (size_t)experts * sizeof *counts);
    bool placed = experts_place_tuned(tokens, every, experts, counts, max_copies, devices, slots,
                                      deadline, out);
    if (tuned)
        memcpy(tuned, counts, (size_t)experts * sizeof *tuned);
    free(counts);
    free(every);
    return placed;
}

bool experts_place_layer(const double *tokens, int64_t experts, int64_t devices, int64_t slots,
                         struct layer_placement *out)
{
    int64_t total = devices * slots;
    if (experts <= 0 || devices <= 0 || slots <= 0 || total < experts)
        return false;
    int64_t *copies = xmalloc((size_t)experts * sizeof *copies);
    experts_replicas(tokens, experts, total, devices, copies);
    bool placed = experts_place_all_tuned(tokens, experts, copies, devices, devices, slots, 0, NULL, out);
    if (placed) /* the greedy counts give the bound: no counts have a lighter heaviest copy */
        out->lower_bound = experts_lower_bound(tokens, copies, experts, devices, slots);
    free(copies);
    return placed;
}

void layer_placement_release(struct layer_placement *p)
{
    if (!p)
        return;
    free(p->expert);
    free(p->device_load);
    memset(p, 0, sizeof *p);
}

double layer_imbalance(const struct layer_placement *p)
{
    return p->mean_load > 0 ? p->max_load / p->mean_load : 1;
}
