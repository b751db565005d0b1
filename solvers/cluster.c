/* cluster.c: see cluster.h. */
#include "cluster.h"

#include "diag.h"
#include "domains.h"
#include "experts.h"
#include "lp.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* GLPK's neighbourhood: at most 8 devices (e.g. one HGX node; 32 copies at 4 slots is 228
 * binaries), branch and bound cut after a fixed number of nodes so that the result does not
 * depend on the machine's speed, and a few rounds per layer (each lowers the maximum or ends). */
enum { NEIGHBOURHOOD_DEVICES = 8, ILP_NODES = 100, ILP_ROUNDS = 16 };

/* Re-places every copy held by the `k` devices in `chosen` on those devices by an ILP minimising
 * their largest load: x(i, d) = copy i on device d, each copy once, `slots` a device, one copy of
 * an expert a device. Copies are sorted heaviest first and copy i may only use devices 0..i,
 * which removes the devices' symmetry without losing a solution (number the devices in the
 * order of their heaviest copy). Returns true when the largest load went down. */
static bool reassign_devices(const double *copy_load, int32_t *map, double *device_load,
                             int64_t slots, const int64_t *chosen, int64_t k, double seconds,
                             struct expert_ilp_stats *stats)
{
    int64_t capacity = k * slots;
    struct expert_copy *list = xmalloc((size_t)capacity * sizeof *list);
    int64_t n = 0;
    double before = 0, total = 0;
    for (int64_t d = 0; d < k; d++) {
        before = device_load[chosen[d]] > before ? device_load[chosen[d]] : before;
        for (int64_t s = 0; s < slots; s++) {
            int32_t e = map[chosen[d] * slots + s];
            if (e >= 0) {
                list[n++] = (struct expert_copy){e, copy_load[e]};
                total += copy_load[e];
            }
        }
    }
    if (n == 0 || k < 2) {
        free(list);
        return false;
    }
    qsort(list, (size_t)n, sizeof *list, expert_copy_heavier_first);
    int64_t *first_column = xmalloc((size_t)(n + 1) * sizeof *first_column);
    int64_t columns = 0;
    for (int64_t i = 0; i < n; i++) {
        first_column[i] = columns + 1;
        columns += i + 1 < k ? i + 1 : k;
    }
    int64_t peak = columns + 1;
    struct lp *lp = lp_new((int)peak, true);
    for (int64_t c = 1; c < peak; c++)
        lp_column(lp, (int)c, 0, 1, true, 0);
    /* the peak is at least the mean, the heaviest copy, and on full devices the heaviest copy
     * with the lightest others beside it */
    double least = list[0].load > total / (double)k ? list[0].load : total / (double)k;
    if (n == capacity) {
        double full = list[0].load;
        for (int64_t i = n - 1; i > n - slots; i--)
            full += list[i].load;
        least = full > least ? full : least;
    }
    if (before <= least * (1 + EXPERTS_CLOSE_ENOUGH)) { /* optimal already, or too close to gain */
        lp_free(lp);
        free(first_column);
        free(list);
        return false;
    }
    lp_column(lp, (int)peak, least, INFINITY, false, 1);
    int *cols = xmalloc((size_t)(n + 1) * sizeof *cols);
    double *coefs = xmalloc((size_t)(n + 1) * sizeof *coefs);
    for (int64_t i = 0; i < n; i++) {
        int64_t reach = i + 1 < k ? i + 1 : k;
        for (int64_t d = 0; d < reach; d++) {
            cols[d] = (int)(first_column[i] + d);
            coefs[d] = 1;
        }
        lp_row(lp, (int)reach, cols, coefs, 1, 1);
    }
    for (int64_t d = 0; d < k; d++) {
        int count = 0;
        for (int64_t i = d; i < n; i++) {
            cols[count] = (int)(first_column[i] + d);
            coefs[count++] = list[i].load;
        }
        cols[count] = (int)peak;
        coefs[count] = -1;
        lp_row(lp, count + 1, cols, coefs, -INFINITY, 0);
        for (int c = 0; c < count; c++)
            coefs[c] = 1;
        lp_row(lp, count, cols, coefs, 0, (double)slots);
        for (int64_t i = d; i < n; i++) { /* copies of one expert are adjacent: equal loads */
            if (i > d && list[i - 1].expert == list[i].expert)
                continue;
            int same = 0;
            for (int64_t j = i; j < n && list[j].expert == list[i].expert; j++) {
                cols[same] = (int)(first_column[j] + d);
                coefs[same++] = 1;
            }
            if (same > 1)
                lp_row(lp, same, cols, coefs, 0, 1);
        }
    }
    /* the current placement as the first incumbent, devices renumbered by their heaviest copy */
    double *warm = xcalloc((size_t)peak + 1, sizeof *warm);
    int64_t *label = xmalloc((size_t)k * sizeof *label);
    int32_t *holder = xmalloc((size_t)capacity * sizeof *holder);
    for (int64_t d = 0; d < k; d++) {
        label[d] = -1;
        for (int64_t s = 0; s < slots; s++)
            holder[d * slots + s] = map[chosen[d] * slots + s];
    }
    int64_t labels = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t d = 0; /* the first device still holding a copy of this expert */
        while (d < k) {
            int64_t s = 0;
            while (s < slots && holder[d * slots + s] != list[i].expert)
                s++;
            if (s < slots) {
                holder[d * slots + s] = -1;
                break;
            }
            d++;
        }
        if (label[d] < 0)
            label[d] = labels++;
        warm[first_column[i] + label[d]] = 1;
    }
    warm[peak] = before;
    lp_node_limit(lp, ILP_NODES);
    struct lp_result r;
    lp_solve(lp, warm, seconds, &r);
    stats->problems++;
    stats->proven += r.status == LP_OPTIMAL;
    stats->seconds += r.seconds;
    bool improved = (r.status == LP_OPTIMAL || r.status == LP_FEASIBLE) &&
                    r.objective < before * (1 - 1e-9);
    if (improved) {
        int64_t *used = xcalloc((size_t)k, sizeof *used);
        for (int64_t d = 0; d < k; d++) {
            device_load[chosen[d]] = 0;
            for (int64_t s = 0; s < slots; s++)
                map[chosen[d] * slots + s] = -1;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t reach = i + 1 < k ? i + 1 : k, d = 0;
            while (d + 1 < reach && r.x[first_column[i] + d] < 0.5)
                d++;
            map[chosen[d] * slots + used[d]++] = list[i].expert;
            device_load[chosen[d]] += list[i].load;
        }
        free(used);
        stats->improved++;
    }
    free(r.x);
    free(holder);
    free(label);
    free(warm);
    free(coefs);
    free(cols);
    lp_free(lp);
    free(first_column);
    free(list);
    return improved;
}

/* GLPK on the most loaded device's domain (all of it, or the device and the lightest others),
 * while that lowers the layer's maximum, the maximum is not within EXPERTS_CLOSE_ENOUGH of the layer's
 * lower bound `lower`, and time is left. */
static void reassign_worst(const double *tokens, int64_t experts, int64_t domains, int64_t devices,
                           int64_t slots, double lower, int32_t *map, double *device_load,
                           double deadline, struct expert_ilp_stats *stats)
{
    int64_t all = domains * devices;
    double *copy_load = xcalloc((size_t)experts, sizeof *copy_load);
    for (int64_t i = 0; i < all * slots; i++)
        if (map[i] >= 0)
            copy_load[map[i]]++;
    for (int64_t e = 0; e < experts; e++)
        copy_load[e] = copy_load[e] > 0 ? tokens[e] / copy_load[e] : 0;
    int64_t *order = xmalloc((size_t)devices * sizeof *order);
    int64_t k = devices < NEIGHBOURHOOD_DEVICES ? devices : NEIGHBOURHOOD_DEVICES;
    for (int round = 0; round < ILP_ROUNDS; round++) {
        double left = deadline - monotonic_seconds();
        if (left <= 0)
            break;
        int64_t worst = 0;
        for (int64_t d = 1; d < all; d++)
            if (device_load[d] > device_load[worst])
                worst = d;
        if (device_load[worst] <= lower * (1 + EXPERTS_CLOSE_ENOUGH))
            break;
        /* the worst device and the k - 1 lightest others of its domain (insertion sort: stable) */
        int64_t base = worst / devices * devices, others = 0;
        for (int64_t g = base; g < base + devices; g++) {
            if (g == worst)
                continue;
            int64_t at = others++;
            while (at > 0 && device_load[order[at - 1]] > device_load[g]) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = g;
        }
        order[k - 1] = worst;
        if (!reassign_devices(copy_load, map, device_load, slots, order, k, left, stats))
            break;
    }
    free(order);
    free(copy_load);
}

/* max / mean of the domains' summed device loads. */
static double domain_spread(const double *device_load, int64_t domains, int64_t devices)
{
    double most = 0, sum = 0;
    for (int64_t d = 0; d < domains; d++) {
        double domain = 0;
        for (int64_t g = 0; g < devices; g++)
            domain += device_load[d * devices + g];
        most = domain > most ? domain : most;
        sum += domain;
    }
    return sum > 0 ? most / (sum / (double)domains) : 1;
}

static bool place_cluster_layer(const double *tokens, int64_t experts, int64_t domains,
                                int64_t devices, int64_t slots, double deadline, int32_t *map,
                                double *device_load, double *domain_imbalance, double *lower)
{
    int64_t per_domain = devices * slots;
    int64_t total = domains * per_domain;
    int64_t *copies = xmalloc((size_t)experts * sizeof *copies);
    int64_t max_copies = domains > 1 ? domains : devices;
    experts_replicas(tokens, experts, total, max_copies, copies);
    *lower = experts_lower_bound(tokens, copies, experts, domains * devices, slots);
    /* flat: every device of the cluster as one bin set (what balances devices best) */
    struct layer_placement flat;
    if (!experts_place_all_tuned(tokens, experts, copies, max_copies, domains * devices, slots, deadline, NULL, &flat)) {
        free(copies);
        return false;
    }
    memcpy(map, flat.expert, (size_t)total * sizeof *map);
    memcpy(device_load, flat.device_load, (size_t)(domains * devices) * sizeof *device_load);
    *domain_imbalance = domain_spread(flat.device_load, domains, devices);
    bool out_of_time = deadline > 0 && monotonic_seconds() > deadline;
    if (domains > 1 && !out_of_time) {
        /* hierarchical: copies to domains as bins of per_domain slots, then each domain's to its
         * devices; kept when its most loaded device is no heavier than the flat one's */
        int32_t *ids = xmalloc((size_t)total * sizeof *ids);
        double *loads = xmalloc((size_t)total * sizeof *loads);
        int64_t count = experts_copy_list(tokens, copies, NULL, experts, ids, loads);
        struct layer_placement top;
        if (experts_place_copies(ids, loads, count, domains, per_domain, deadline, &top)) {
            int32_t *domain_map = xmalloc((size_t)total * sizeof *domain_map);
            double *domain_device_load = xmalloc((size_t)(domains * devices) * sizeof *domain_device_load);
            double worst = 0;
            bool ok = true;
            for (int64_t d = 0; d < domains && ok; d++) {
                int64_t n = 0;
                for (int64_t s = 0; s < per_domain; s++) {
                    int32_t e = top.expert[d * per_domain + s];
                    if (e < 0)
                        continue;
                    ids[n] = e;
                    loads[n++] = tokens[e] / (double)copies[e];
                }
                struct layer_placement inner;
                ok = experts_place_copies(ids, loads, n, devices, slots, deadline, &inner);
                if (!ok)
                    break;
                memcpy(domain_map + d * per_domain, inner.expert, (size_t)per_domain * sizeof *map);
                memcpy(domain_device_load + d * devices, inner.device_load, (size_t)devices * sizeof *device_load);
                worst = inner.max_load > worst ? inner.max_load : worst;
                layer_placement_release(&inner);
            }
            if (ok && worst <= flat.max_load) {
                memcpy(map, domain_map, (size_t)total * sizeof *map);
                memcpy(device_load, domain_device_load, (size_t)(domains * devices) * sizeof *device_load);
                *domain_imbalance = layer_imbalance(&top);
            }
            free(domain_device_load);
            free(domain_map);
            layer_placement_release(&top);
        }
        free(ids);
        free(loads);
    }
    layer_placement_release(&flat);
    free(copies);
    return true;
}

/* A layer placed once the deadline has passed, in time linear in the slots: the replica counts
 * of experts_replicas, then the copies, heaviest expert first (the lower id among equals), dealt
 * in turn to devices 0, 1, ... and round again: copy i on device i mod D, slot i / D. An expert's
 * copies are consecutive and at most D, so no device gets two of them. With one slot a device
 * this is the LPT placement; with more, the first devices of each round get the heavier copies. */
static void deal_layer(const double *tokens, int64_t experts, int64_t domains, int64_t devices,
                       int64_t slots, int32_t *map, double *device_load, double *domain_imbalance,
                       double *lower)
{
    int64_t all = domains * devices, total = all * slots;
    int64_t *copies = xmalloc((size_t)experts * sizeof *copies);
    experts_replicas(tokens, experts, total, domains > 1 ? domains : devices, copies);
    *lower = experts_lower_bound(tokens, copies, experts, all, slots);
    struct expert_copy *order = xmalloc((size_t)experts * sizeof *order);
    for (int64_t e = 0; e < experts; e++)
        order[e] = (struct expert_copy){(int32_t)e, tokens[e] / (double)copies[e]};
    qsort(order, (size_t)experts, sizeof *order, expert_copy_heavier_first);
    for (int64_t i = 0; i < total; i++)
        map[i] = -1;
    memset(device_load, 0, (size_t)all * sizeof *device_load);
    int64_t i = 0;
    for (int64_t k = 0; k < experts; k++)
        for (int64_t c = 0; c < copies[order[k].expert]; c++, i++) {
            map[(i % all) * slots + i / all] = order[k].expert;
            device_load[i % all] += order[k].load;
        }
    *domain_imbalance = domain_spread(device_load, domains, devices);
    free(order);
    free(copies);
}

/* What placing one layer gave, kept until every layer is placed. */
struct layer_outcome {
    double domain_imbalance, lower, domains_per_token;
    int64_t swaps;
    bool ok, dealt, searched, network_bound;
};

/* Co-activation aware: every copy of an expert in one domain, at most one copy a device. */
static bool place_routed_layer(const double *tokens, int64_t experts, int64_t domains,
                               int64_t devices, int64_t slots, const struct layer_routing *routing,
                               const struct cluster_routing *options, int32_t *map,
                               double *device_load, struct layer_outcome *out)
{
    int64_t total = domains * devices * slots;
    int64_t *copies = xmalloc((size_t)experts * sizeof *copies);
    int64_t *moved = xmalloc((size_t)experts * sizeof *moved); /* domains_place moves replicas */
    experts_replicas(tokens, experts, total, devices, copies);
    memcpy(moved, copies, (size_t)experts * sizeof *moved);
    struct domain_assignment a;
    bool ok = domains_place(tokens, moved, experts, routing, options->physics, options->groups, domains,
                            devices, slots, options->deadline, map, device_load, &a);
    free(moved);
    if (ok) {
        out->domain_imbalance = a.imbalance;
        out->lower = experts_lower_bound(tokens, copies, experts, domains * devices, slots);
        out->domains_per_token = a.domains_per_token;
        out->swaps = a.swaps;
        out->network_bound = a.network_bound;
    }
    free(copies);
    return ok;
}

/* The layers shared among the threads: each takes the next unplaced one. A layer's placement
 * depends on nothing but its own inputs, so the result does not depend on the threads. */
struct cluster_work {
    const double *tokens;
    int64_t layers, experts, domains, devices, slots;
    const struct cluster_routing *routing;
    bool routed;
    struct cluster_placement *p;
    struct layer_outcome *outcome;
    atomic_llong next;
};

static void place_layer(struct cluster_work *w, int64_t i)
{
    const struct cluster_routing *routing = w->routing;
    int64_t all = w->domains * w->devices, experts = w->experts;
    double *loads = w->p->device_load + i * all;
    int32_t *map = w->p->expert + i * all * w->slots;
    const double *tokens = w->tokens + i * experts;
    struct layer_outcome *o = &w->outcome[i];
    *o = (struct layer_outcome){.domain_imbalance = 1, .ok = true};
    double deadline = routing ? routing->deadline : 0;
    if (deadline > 0 && monotonic_seconds() > deadline) {
        deal_layer(tokens, experts, w->domains, w->devices, w->slots, map, loads, &o->domain_imbalance, &o->lower);
        o->dealt = true;
    } else if (w->routed) {
        struct layer_routing layer = {routing->tokens, routing->k, routing->chosen + i * routing->tokens * routing->k};
        o->searched = true;
        o->ok = place_routed_layer(tokens, experts, w->domains, w->devices, w->slots, &layer, routing, map, loads, o);
    } else {
        o->ok = place_cluster_layer(tokens, experts, w->domains, w->devices, w->slots, deadline, map, loads,
                                    &o->domain_imbalance, &o->lower);
    }
}

static void *place_layers(void *data)
{
    struct cluster_work *w = data;
    for (;;) {
        long long i = atomic_fetch_add(&w->next, 1);
        if (i >= w->layers)
            return NULL;
        place_layer(w, i);
    }
}

/* One thread per core (at most 8 and the layers), the calling thread among them; fewer when a
 * thread cannot start, down to the caller alone. */
static void place_in_parallel(struct cluster_work *w)
{
    enum { MOST_THREADS = 8 };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t threads = cores < 1 ? 1 : cores > MOST_THREADS ? MOST_THREADS : cores;
    threads = threads > w->layers ? w->layers : threads;
    pthread_t helper[MOST_THREADS];
    int64_t started = 0;
    while (started + 1 < threads && pthread_create(&helper[started], NULL, place_layers, w) == 0)
        started++;
    place_layers(w);
    for (int64_t i = 0; i < started; i++)
        pthread_join(helper[i], NULL);
}

bool cluster_place(const double *tokens, int64_t layers, int64_t experts, int64_t domains,
                   int64_t devices, int64_t slots, const struct cluster_routing *routing,
                   struct cluster_placement *out)
{
    bool routed = routing && routing->chosen && routing->physics && domains > 1;
    int64_t all = domains * devices;
    if (layers <= 0 || experts <= 0 || all * slots < experts)
        return false;
    struct cluster_placement p = {.layers = layers, .domains = domains, .devices = devices, .slots = slots,
                                  .priced = routed};
    p.expert = xmalloc((size_t)(layers * all * slots) * sizeof *p.expert);
    p.device_load = xmalloc((size_t)(layers * all) * sizeof *p.device_load);
    struct cluster_work work = {.tokens = tokens, .layers = layers, .experts = experts, .domains = domains,
                                .devices = devices, .slots = slots, .routing = routing, .routed = routed, .p = &p};
    work.outcome = xmalloc((size_t)layers * sizeof *work.outcome);
    atomic_init(&work.next, 0);
    place_in_parallel(&work);
    bool ok = true;
    int64_t searched = 0;
    /* GLPK is not thread-safe: it runs here, layer by layer, after the threads */
    for (int64_t i = 0; i < layers && ok; i++) {
        const struct layer_outcome *o = &work.outcome[i];
        ok = o->ok;
        if (!ok)
            break;
        double *loads = p.device_load + i * all;
        int32_t *map = p.expert + i * all * slots;
        p.dealt_layers += o->dealt;
        searched += o->searched;
        p.network_bound += o->network_bound;
        p.domains_per_token += o->domains_per_token;
        p.swaps += o->swaps;
        if (routing && routing->deadline > 0 && !o->network_bound)
            reassign_worst(tokens + i * experts, experts, domains, devices, slots, o->lower, map, loads,
                           routing->deadline, &p.ilp);
        double sum = 0, max = 0;
        for (int64_t d = 0; d < all; d++) {
            sum += loads[d];
            max = loads[d] > max ? loads[d] : max;
        }
        double mean = sum / (double)all;
        double gpu = sum > 0 ? max / mean : 1;
        double gap = o->lower > 0 ? max / o->lower - 1 : 0;
        p.bound_mean += (sum > 0 ? o->lower / mean : 1) / (double)layers;
        p.gpu_imbalance_mean += gpu / (double)layers;
        p.gpu_imbalance_worst = gpu > p.gpu_imbalance_worst ? gpu : p.gpu_imbalance_worst;
        p.domain_imbalance_mean += o->domain_imbalance / (double)layers;
        p.domain_imbalance_worst = o->domain_imbalance > p.domain_imbalance_worst ? o->domain_imbalance
                                                                                  : p.domain_imbalance_worst;
        p.worst_gap = gap > p.worst_gap ? gap : p.worst_gap;
    }
    free(work.outcome);
    if (!ok) {
        cluster_placement_release(&p);
        return false;
    }
    if (searched > 0)
        p.domains_per_token /= (double)searched;
    *out = p;
    return true;
}

void cluster_placement_release(struct cluster_placement *p)
{
    if (!p)
        return;
    free(p->expert);
    free(p->device_load);
    memset(p, 0, sizeof *p);
}
