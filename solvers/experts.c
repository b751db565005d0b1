/* experts.c: see experts.h. */
#include "experts.h"

#include "diag.h"

#include <stdlib.h>
#include <string.h>

struct copy {
    int32_t expert;
    double load;
};

static int heavier_first(const void *a, const void *b)
{
    const struct copy *x = a, *y = b;
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

/* Lower bound for fixed slots: the mean load, and the heaviest copy under the best replica
 * counts (the greedy counts minimise the largest load per copy). */
static double bound(const double *tokens, const int64_t *copies, int64_t experts, int64_t devices)
{
    double total = 0, heaviest = 0;
    for (int64_t e = 0; e < experts; e++) {
        total += tokens[e];
        double per_copy = tokens[e] / (double)copies[e];
        if (per_copy > heaviest)
            heaviest = per_copy;
    }
    double mean = total / (double)devices;
    return heaviest > mean ? heaviest : mean;
}

/* Swaps a copy on the most loaded device with a lighter copy elsewhere while that lowers the
 * larger of the two devices' loads below the current maximum. */
static void improve(struct layer_placement *p, double *copy_load)
{
    int64_t n = p->devices, s = p->slots;
    for (int round = 0; round < 10000; round++) {
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

bool experts_place_layer(const double *tokens, int64_t experts, int64_t devices, int64_t slots,
                         struct layer_placement *out)
{
    int64_t total = devices * slots;
    if (experts <= 0 || devices <= 0 || slots <= 0 || total < experts)
        return false;
    /* replica counts: every spare slot to the expert with the most load per copy, no more
     * copies than devices */
    int64_t *copies = xmalloc((size_t)experts * sizeof *copies);
    for (int64_t e = 0; e < experts; e++)
        copies[e] = 1;
    for (int64_t spare = total - experts; spare > 0; spare--) {
        int64_t pick = -1;
        for (int64_t e = 0; e < experts; e++)
            if (copies[e] < devices &&
                (pick < 0 || tokens[e] / (double)copies[e] > tokens[pick] / (double)copies[pick]))
                pick = e;
        if (pick < 0)
            break;
        copies[pick]++;
    }
    struct copy *list = xmalloc((size_t)total * sizeof *list);
    int64_t count = 0;
    for (int64_t e = 0; e < experts; e++)
        for (int64_t c = 0; c < copies[e]; c++)
            list[count++] = (struct copy){(int32_t)e, tokens[e] / (double)copies[e]};
    qsort(list, (size_t)count, sizeof *list, heavier_first);

    struct layer_placement p = {.devices = devices, .slots = slots};
    p.expert = xmalloc((size_t)total * sizeof *p.expert);
    p.device_load = xcalloc((size_t)devices, sizeof *p.device_load);
    double *copy_load = xcalloc((size_t)total, sizeof *copy_load);
    int64_t *used = xcalloc((size_t)devices, sizeof *used);
    for (int64_t i = 0; i < total; i++)
        p.expert[i] = -1;
    bool placed = true;
    for (int64_t i = 0; i < count && placed; i++) {
        int64_t target = -1;
        for (int64_t d = 0; d < devices; d++) {
            if (used[d] == slots || holds(&p, d, list[i].expert, used[d]))
                continue;
            if (target < 0 || p.device_load[d] < p.device_load[target])
                target = d;
        }
        if (target < 0) {
            placed = false;
            break;
        }
        int64_t slot = target * slots + used[target]++;
        p.expert[slot] = list[i].expert;
        copy_load[slot] = list[i].load;
        p.device_load[target] += list[i].load;
    }
    if (placed) {
        improve(&p, copy_load);
        double sum = 0;
        p.max_load = 0;
        for (int64_t d = 0; d < devices; d++) {
            sum += p.device_load[d];
            if (p.device_load[d] > p.max_load)
                p.max_load = p.device_load[d];
        }
        p.mean_load = sum / (double)devices;
        p.lower_bound = bound(tokens, copies, experts, devices);
    }
    free(used);
    free(copy_load);
    free(list);
    free(copies);
    if (!placed) {
        layer_placement_release(&p);
        return false;
    }
    *out = p;
    return true;
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
