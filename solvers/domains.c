/* domains.c: see domains.h. */
#include "domains.h"

#include "diag.h"
#include "experts.h"

#include <stdlib.h>
#include <string.h>

struct search {
    int64_t experts, domains, tokens, k;
    const double *load;
    const int64_t *copies;
    const int32_t *chosen;
    int64_t *domain_of;
    double *domain_load;
    int64_t *first, *user;  /* CSR: the tokens that chose each expert */
    uint8_t *count;         /* tokens x domains: the token's experts in that domain */
    int64_t *gain;          /* experts x domains: change in distinct domains if moved there */
    int64_t *stamp;         /* tokens */
    int64_t now;
    int64_t distinct;       /* sum over tokens of the domains they reach */
    int64_t routed;         /* tokens with a row */
    double mean, weight;
};

static const int32_t *row_of(const struct search *s, int64_t t)
{
    return s->chosen + t * s->k;
}

/* row[j] is an expert id in range that the row has not named before it. */
static bool first_mention(const int32_t *row, int64_t j, int64_t experts)
{
    if (row[j] < 0 || row[j] >= experts)
        return false;
    for (int64_t i = 0; i < j; i++)
        if (row[i] == row[j])
            return false;
    return true;
}

/* Adds (sign +1) or removes (-1) token t's share of every move gain and of the distinct sum. */
static void account(struct search *s, int64_t t, int sign)
{
    const int32_t *row = row_of(s, t);
    const uint8_t *c = s->count + t * s->domains;
    for (int64_t y = 0; y < s->domains; y++)
        s->distinct += sign * (c[y] > 0);
    for (int64_t j = 0; j < s->k; j++) {
        if (!first_mention(row, j, s->experts))
            continue;
        int64_t e = row[j];
        int64_t home = s->domain_of[e];
        int64_t leaves = c[home] == 1;
        int64_t *g = s->gain + e * s->domains;
        for (int64_t y = 0; y < s->domains; y++)
            if (y != home)
                g[y] += sign * ((c[y] == 0) - leaves);
    }
}

static void move_counts(struct search *s, int64_t e, int64_t from, int64_t to)
{
    for (int64_t i = s->first[e]; i < s->first[e + 1]; i++) {
        uint8_t *c = s->count + s->user[i] * s->domains;
        c[from]--;
        c[to]++;
    }
}

/* Exact change in the distinct sum when e (in x) and f (in y) trade domains: the two move gains
 * count every token that chose both as if the other stayed, so add those back. */
static int64_t swap_traffic(struct search *s, int64_t e, int64_t f)
{
    int64_t x = s->domain_of[e], y = s->domain_of[f];
    int64_t delta = s->gain[e * s->domains + y] + s->gain[f * s->domains + x];
    s->now++;
    for (int64_t i = s->first[f]; i < s->first[f + 1]; i++)
        s->stamp[s->user[i]] = s->now;
    for (int64_t i = s->first[e]; i < s->first[e + 1]; i++) {
        int64_t t = s->user[i];
        if (s->stamp[t] != s->now)
            continue;
        const uint8_t *c = s->count + t * s->domains;
        delta += (c[x] == 1) + (c[y] == 1);
    }
    return delta;
}

static void apply_swap(struct search *s, int64_t e, int64_t f)
{
    int64_t x = s->domain_of[e], y = s->domain_of[f];
    s->now++;
    int64_t lists[2] = {e, f};
    for (int l = 0; l < 2; l++)
        for (int64_t i = s->first[lists[l]]; i < s->first[lists[l] + 1]; i++)
            if (s->stamp[s->user[i]] != s->now) {
                s->stamp[s->user[i]] = s->now;
                account(s, s->user[i], -1);
            }
    move_counts(s, e, x, y);
    move_counts(s, f, y, x);
    s->domain_of[e] = y;
    s->domain_of[f] = x;
    s->domain_load[x] += s->load[f] - s->load[e];
    s->domain_load[y] += s->load[e] - s->load[f];
    s->now++;
    for (int l = 0; l < 2; l++)
        for (int64_t i = s->first[lists[l]]; i < s->first[lists[l] + 1]; i++)
            if (s->stamp[s->user[i]] != s->now) {
                s->stamp[s->user[i]] = s->now;
                account(s, s->user[i], +1);
            }
}

static double traffic_term(const struct search *s, int64_t distinct)
{
    return s->routed > 0 ? s->weight * (double)distinct / (double)s->routed : 0;
}

/* The three most loaded domains, so the maximum after changing two is found in O(1). */
static void top_three(const struct search *s, int64_t top[3])
{
    top[0] = top[1] = top[2] = -1;
    for (int64_t d = 0; d < s->domains; d++) {
        double l = s->domain_load[d];
        if (top[0] < 0 || l > s->domain_load[top[0]]) {
            top[2] = top[1];
            top[1] = top[0];
            top[0] = d;
        } else if (top[1] < 0 || l > s->domain_load[top[1]]) {
            top[2] = top[1];
            top[1] = d;
        } else if (top[2] < 0 || l > s->domain_load[top[2]]) {
            top[2] = d;
        }
    }
}

static double peak_after(const struct search *s, const int64_t top[3], int64_t x, double lx,
                         int64_t y, double ly)
{
    double peak = lx > ly ? lx : ly;
    for (int i = 0; i < 3; i++)
        if (top[i] >= 0 && top[i] != x && top[i] != y) {
            double l = s->domain_load[top[i]];
            return l > peak ? l : peak;
        }
    return peak;
}

/* One sweep over the experts: each trades places with its best partner when that lowers the
 * cost. Returns the number of swaps made. */
static int64_t sweep(struct search *s, double deadline)
{
    int64_t swaps = 0;
    for (int64_t e = 0; e < s->experts; e++) {
        if (deadline > 0 && (e & 15) == 0 && monotonic_seconds() > deadline)
            break;
        int64_t top[3];
        top_three(s, top);
        double peak = s->domain_load[top[0]];
        double cost_now = peak / s->mean;
        int64_t x = s->domain_of[e];
        int64_t best = -1;
        double best_delta = -1e-12;
        /* the swap bound never overstates the gain, so a candidate is checked exactly only
         * when its bound beats the best exact delta so far */
        for (int64_t f = 0; f < s->experts; f++) {
            int64_t y = s->domain_of[f];
            if (y == x || s->copies[f] != s->copies[e])
                continue;
            double lx = s->domain_load[x] - s->load[e] + s->load[f];
            double ly = s->domain_load[y] - s->load[f] + s->load[e];
            double balance = peak_after(s, top, x, lx, y, ly) / s->mean - cost_now;
            int64_t bound = s->gain[e * s->domains + y] + s->gain[f * s->domains + x];
            double delta = balance + traffic_term(s, bound);
            if (delta >= best_delta)
                continue;
            if (s->routed > 0 && s->weight > 0)
                delta = balance + traffic_term(s, swap_traffic(s, e, f));
            if (delta < best_delta) {
                best_delta = delta;
                best = f;
            }
        }
        if (best >= 0) {
            apply_swap(s, e, best);
            swaps++;
        }
    }
    return swaps;
}

/* Experts in id order, each to the current domain while it has room, else the next with room. */
static bool fill_in_order(struct search *s, int64_t capacity)
{
    int64_t *used = xcalloc((size_t)s->domains, sizeof *used);
    int64_t d = 0;
    bool ok = true;
    for (int64_t e = 0; e < s->experts && ok; e++) {
        int64_t tries = 0;
        while (tries < s->domains && used[d] + s->copies[e] > capacity) {
            d = (d + 1) % s->domains;
            tries++;
        }
        if (tries == s->domains) {
            ok = false;
            break;
        }
        s->domain_of[e] = d;
        used[d] += s->copies[e];
    }
    free(used);
    return ok;
}

/* Most copies first, each to the domain with the most free slots (the fallback when the id
 * order leaves slots stranded). */
static bool fill_by_size(struct search *s, int64_t capacity)
{
    int64_t *used = xcalloc((size_t)s->domains, sizeof *used);
    bool *done = xcalloc((size_t)s->experts, sizeof *done);
    bool ok = true;
    for (int64_t n = 0; n < s->experts && ok; n++) {
        int64_t e = -1;
        for (int64_t i = 0; i < s->experts; i++)
            if (!done[i] && (e < 0 || s->copies[i] > s->copies[e]))
                e = i;
        int64_t d = 0;
        for (int64_t i = 1; i < s->domains; i++)
            if (used[i] < used[d])
                d = i;
        if (used[d] + s->copies[e] > capacity)
            ok = false;
        done[e] = true;
        s->domain_of[e] = d;
        used[d] += s->copies[e];
    }
    free(done);
    free(used);
    return ok;
}

/* Whole expert groups to domains, when the router picks groups first (DeepSeek's group-limited
 * routing: groups are contiguous id ranges) and the groups divide evenly among the domains:
 * pairwise swaps of groups between domains while domain imbalance + weight x distinct domains
 * per token falls. At this grain a token's distinct domains follow from its group mask. */
static void group_start(struct search *s, int64_t groups, int64_t capacity)
{
    if (groups <= s->domains || groups > 64 || groups % s->domains != 0 || s->experts % groups != 0)
        return;
    int64_t per_domain = groups / s->domains, size = s->experts / groups;
    int64_t *where = xmalloc((size_t)groups * sizeof *where);
    double *group_load = xcalloc((size_t)groups, sizeof *group_load);
    int64_t *group_slots = xcalloc((size_t)groups, sizeof *group_slots);
    int64_t *used = xcalloc((size_t)s->domains, sizeof *used);
    uint64_t *mask = xcalloc((size_t)(s->tokens > 0 ? s->tokens : 1), sizeof *mask);
    for (int64_t g = 0; g < groups; g++)
        where[g] = g / per_domain;
    for (int64_t e = 0; e < s->experts; e++) {
        group_load[e / size] += s->load[e];
        group_slots[e / size] += s->copies[e];
    }
    bool fits = true;
    for (int64_t g = 0; g < groups; g++)
        used[where[g]] += group_slots[g];
    for (int64_t d = 0; d < s->domains; d++)
        fits &= used[d] <= capacity;
    for (int64_t t = 0; t < s->tokens; t++)
        for (int64_t j = 0; j < s->k; j++) {
            int32_t e = row_of(s, t)[j];
            if (e >= 0 && e < s->experts)
                mask[t] |= 1ull << (e / size);
        }
    double *domain_load = xcalloc((size_t)s->domains, sizeof *domain_load);
    double best = 0;
    for (int pass = 0, improved = fits; improved && pass < 100; pass++) {
        improved = 0;
        for (int64_t a = 0; a < groups; a++)
            for (int64_t b = a + 1; b <= groups; b++) {
                /* b == groups scores the current assignment first */
                if (b < groups && where[a] == where[b])
                    continue;
                if (b < groups && (used[where[a]] - group_slots[a] + group_slots[b] > capacity ||
                                   used[where[b]] - group_slots[b] + group_slots[a] > capacity))
                    continue;
                if (b < groups) {
                    int64_t t = where[a];
                    where[a] = where[b];
                    where[b] = t;
                }
                memset(domain_load, 0, (size_t)s->domains * sizeof *domain_load);
                double peak = 0;
                for (int64_t g = 0; g < groups; g++)
                    domain_load[where[g]] += group_load[g];
                for (int64_t d = 0; d < s->domains; d++)
                    peak = domain_load[d] > peak ? domain_load[d] : peak;
                int64_t distinct = 0;
                for (int64_t t = 0; t < s->tokens; t++) {
                    uint64_t reached = 0;
                    for (uint64_t m = mask[t]; m; m &= m - 1)
                        reached |= 1ull << where[__builtin_ctzll(m)];
                    distinct += __builtin_popcountll(reached);
                }
                double cost = peak / s->mean + traffic_term(s, distinct);
                if (b == groups) {
                    if (a == 0)
                        best = cost;
                    continue;
                }
                if (cost < best - 1e-12) {
                    best = cost;
                    improved = 1;
                    used[where[a]] += group_slots[a] - group_slots[b];
                    used[where[b]] += group_slots[b] - group_slots[a];
                } else {
                    int64_t t = where[a];
                    where[a] = where[b];
                    where[b] = t;
                }
            }
    }
    if (fits)
        for (int64_t e = 0; e < s->experts; e++)
            s->domain_of[e] = where[e / size];
    free(used);
    free(group_slots);
    free(domain_load);
    free(mask);
    free(group_load);
    free(where);
}

static bool search_open(struct search *s, const double *tokens, const int64_t *copies,
                        int64_t experts, const struct layer_routing *routing, int64_t groups,
                        int64_t domains, int64_t capacity, double traffic_weight,
                        int64_t *domain_of)
{
    *s = (struct search){.experts = experts, .domains = domains, .load = tokens, .copies = copies,
                         .domain_of = domain_of, .weight = traffic_weight};
    if (!fill_in_order(s, capacity) && !fill_by_size(s, capacity))
        return false;
    double total = 0;
    for (int64_t e = 0; e < experts; e++)
        total += tokens[e];
    s->mean = total > 0 ? total / (double)domains : 1;
    if (routing && routing->k <= 255) {
        s->tokens = routing->tokens;
        s->k = routing->k;
        s->chosen = routing->chosen;
        for (int64_t t = 0; t < s->tokens; t++)
            s->routed += row_of(s, t)[0] >= 0;
        group_start(s, groups, capacity);
    }
    s->domain_load = xcalloc((size_t)domains, sizeof *s->domain_load);
    for (int64_t e = 0; e < experts; e++)
        s->domain_load[domain_of[e]] += tokens[e];
    s->first = xcalloc((size_t)experts + 1, sizeof *s->first);
    for (int64_t t = 0; t < s->tokens; t++) {
        const int32_t *row = row_of(s, t);
        if (row[0] < 0)
            continue;
        for (int64_t j = 0; j < s->k; j++)
            if (first_mention(row, j, experts))
                s->first[row[j] + 1]++;
    }
    for (int64_t e = 0; e < experts; e++)
        s->first[e + 1] += s->first[e];
    s->user = xmalloc((size_t)(s->first[experts] > 0 ? s->first[experts] : 1) * sizeof *s->user);
    s->count = xcalloc((size_t)(s->tokens * domains > 0 ? s->tokens * domains : 1), sizeof *s->count);
    int64_t *fill = xmalloc((size_t)experts * sizeof *fill);
    memcpy(fill, s->first, (size_t)experts * sizeof *fill);
    for (int64_t t = 0; t < s->tokens; t++) {
        const int32_t *row = row_of(s, t);
        if (row[0] < 0)
            continue;
        for (int64_t j = 0; j < s->k; j++) {
            if (!first_mention(row, j, experts))
                continue;
            s->user[fill[row[j]]++] = t;
            s->count[t * domains + domain_of[row[j]]]++;
        }
    }
    free(fill);
    s->gain = xcalloc((size_t)(experts * domains), sizeof *s->gain);
    s->stamp = xcalloc((size_t)(s->tokens > 0 ? s->tokens : 1), sizeof *s->stamp);
    for (int64_t t = 0; t < s->tokens; t++)
        if (row_of(s, t)[0] >= 0)
            account(s, t, +1);
    return true;
}

static void search_close(struct search *s)
{
    free(s->domain_load);
    free(s->first);
    free(s->user);
    free(s->count);
    free(s->gain);
    free(s->stamp);
}

/* Domain imbalance, distinct domains per routed token and the cost, as they stand. */
static void summarise(const struct search *s, struct domain_assignment *out)
{
    double peak = 0;
    for (int64_t d = 0; d < s->domains; d++)
        peak = s->domain_load[d] > peak ? s->domain_load[d] : peak;
    out->imbalance = peak / s->mean;
    out->domains_per_token = s->routed > 0 ? (double)s->distinct / (double)s->routed : 0;
    out->cost = out->imbalance + traffic_term(s, s->distinct);
}

static void search_domains(struct search *s, double deadline, struct domain_assignment *out)
{
    int64_t swaps = 0;
    for (int pass = 0; pass < 100; pass++) {
        int64_t made = sweep(s, deadline);
        swaps += made;
        if (made == 0 || (deadline > 0 && monotonic_seconds() > deadline))
            break;
    }
    summarise(s, out);
    out->swaps = swaps;
}

bool domains_assign(const double *tokens, const int64_t *copies, int64_t experts,
                    const struct layer_routing *routing, int64_t domains, int64_t capacity,
                    double traffic_weight, double deadline, int64_t *domain_of,
                    struct domain_assignment *out)
{
    if (experts <= 0 || domains <= 0 || capacity <= 0)
        return false;
    struct search s;
    if (!search_open(&s, tokens, copies, experts, routing, 0, domains, capacity, traffic_weight,
                     domain_of))
        return false;
    search_domains(&s, deadline, out);
    search_close(&s);
    return true;
}

static bool on_device(const int32_t *map, int64_t slots, int64_t device, int32_t expert)
{
    for (int64_t i = device * slots; i < (device + 1) * slots; i++)
        if (map[i] == expert)
            return true;
    return false;
}

/* Experts e (at slot i) and f (at slot j) of equal copy counts in different domains trade all
 * their copies: i with j, the others in slot order, so an expert never leaves copies behind.
 * Returns the largest load of a device that changes; with `apply` it also makes the trade. */
static double trade(struct search *s, int64_t devices_per_domain, int64_t slots, int32_t *map,
                    double *device_load, int64_t i, int64_t j, bool apply)
{
    int32_t e = map[i], f = map[j];
    int64_t capacity = devices_per_domain * slots;
    int64_t from_x = i / capacity * capacity, from_y = j / capacity * capacity;
    double shift = (s->load[e] - s->load[f]) / (double)s->copies[e];
    double peak = 0;
    int64_t a = i, b = j, next_x = from_x, next_y = from_y;
    for (int64_t c = 0; c < s->copies[e]; c++) {
        if (c > 0) {
            while (next_x < from_x + capacity && (map[next_x] != e || next_x == i))
                next_x++;
            while (next_y < from_y + capacity && (map[next_y] != f || next_y == j))
                next_y++;
            if (next_x == from_x + capacity || next_y == from_y + capacity)
                break;
            a = next_x++;
            b = next_y++;
        }
        double la = device_load[a / slots] - shift, lb = device_load[b / slots] + shift;
        peak = la > peak ? la : peak;
        peak = lb > peak ? lb : peak;
        if (apply) {
            map[a] = f;
            map[b] = e;
            device_load[a / slots] = la;
            device_load[b / slots] = lb;
        }
    }
    if (apply)
        apply_swap(s, e, f);
    return peak;
}

/* Device level: swaps of a copy on the most loaded device with a lighter one elsewhere, within
 * its domain (no traffic change) or, as a trade of all copies, with an expert of as many copies
 * in another domain (traffic changes), while cost = device imbalance + weight x traffic falls. */
static int64_t refine_devices(struct search *s, int64_t devices_per_domain, int64_t slots,
                              int32_t *map, double *device_load, double deadline)
{
    int64_t devices = s->domains * devices_per_domain, width = devices * slots;
    double total = 0;
    for (int64_t g = 0; g < devices; g++)
        total += device_load[g];
    double mean = total > 0 ? total / (double)devices : 1;
    int64_t swaps = 0;
    for (int round = 0; round < 100000; round++) {
        if (deadline > 0 && (round & 15) == 0 && monotonic_seconds() > deadline)
            break;
        int64_t worst = 0;
        for (int64_t g = 1; g < devices; g++)
            if (device_load[g] > device_load[worst])
                worst = g;
        double peak = device_load[worst];
        int64_t best_i = -1, best_j = -1;
        double best_delta = -1e-12;
        for (int64_t i = worst * slots; i < (worst + 1) * slots; i++) {
            int32_t e = map[i];
            if (e < 0)
                continue;
            double li = s->load[e] / (double)s->copies[e];
            for (int64_t j = 0; j < width; j++) {
                int64_t g = j / slots;
                int32_t f = map[j];
                double lj = f >= 0 ? s->load[f] / (double)s->copies[f] : 0;
                if (g == worst || lj >= li)
                    continue;
                double new_worst = peak - li + lj, new_other = device_load[g] + li - lj;
                /* judged on the two devices alone: with several devices at the peak, each
                 * swap lowers one of them and the maximum falls once the last one has moved */
                double delta = ((new_worst > new_other ? new_worst : new_other) - peak) / mean;
                if (delta >= best_delta)
                    continue;
                bool across = g / devices_per_domain != worst / devices_per_domain;
                if (across) {
                    if (f < 0 || s->copies[e] != s->copies[f])
                        continue;
                    if (s->copies[e] > 1) {
                        double after = trade(s, devices_per_domain, slots, map, device_load, i, j, false);
                        delta = (after - peak) / mean;
                        if (delta >= best_delta)
                            continue;
                    }
                    if (s->routed > 0 && s->weight > 0) {
                        int64_t bound = s->gain[e * s->domains + s->domain_of[f]] +
                                        s->gain[f * s->domains + s->domain_of[e]];
                        if (delta + traffic_term(s, bound) >= best_delta)
                            continue;
                        delta += traffic_term(s, swap_traffic(s, e, f));
                        if (delta >= best_delta)
                            continue;
                    }
                } else if ((f >= 0 && on_device(map, slots, worst, f)) || on_device(map, slots, g, e)) {
                    continue;
                }
                best_delta = delta;
                best_i = i;
                best_j = j;
            }
        }
        if (best_i < 0)
            break;
        int32_t e = map[best_i], f = map[best_j];
        int64_t g = best_j / slots;
        if (g / devices_per_domain != worst / devices_per_domain) {
            trade(s, devices_per_domain, slots, map, device_load, best_i, best_j, true);
        } else {
            double li = s->load[e] / (double)s->copies[e];
            double lj = f >= 0 ? s->load[f] / (double)s->copies[f] : 0;
            map[best_i] = f;
            map[best_j] = e;
            device_load[worst] += lj - li;
            device_load[g] += li - lj;
        }
        swaps++;
    }
    return swaps;
}

/* Device level, traffic only: experts of equal copy counts trade places across domains when
 * that lowers the traffic and no device ends above the current most loaded one. */
static int64_t untangle_devices(struct search *s, int64_t devices_per_domain, int64_t slots,
                                int32_t *map, double *device_load, double deadline)
{
    int64_t devices = s->domains * devices_per_domain, width = devices * slots;
    if (s->routed == 0 || s->weight <= 0)
        return 0;
    double peak = 0;
    for (int64_t g = 0; g < devices; g++)
        peak = device_load[g] > peak ? device_load[g] : peak;
    int64_t swaps = 0;
    for (int64_t i = 0; i < width; i++) {
        if (deadline > 0 && (i & 15) == 0 && monotonic_seconds() > deadline)
            break;
        int32_t e = map[i];
        if (e < 0)
            continue;
        int64_t x = s->domain_of[e];
        int64_t best_j = -1, best_delta = 0;
        for (int64_t j = 0; j < width; j++) {
            int32_t f = map[j];
            if (f < 0 || s->copies[f] != s->copies[e] || s->domain_of[f] == x)
                continue;
            if (s->gain[e * s->domains + s->domain_of[f]] + s->gain[f * s->domains + x] >= best_delta)
                continue;
            if (trade(s, devices_per_domain, slots, map, device_load, i, j, false) > peak)
                continue;
            int64_t delta = swap_traffic(s, e, f);
            if (delta < best_delta) {
                best_delta = delta;
                best_j = j;
            }
        }
        if (best_j < 0)
            continue;
        trade(s, devices_per_domain, slots, map, device_load, i, best_j, true);
        swaps++;
    }
    return swaps;
}

bool domains_place(const double *tokens, const int64_t *copies, int64_t experts,
                   const struct layer_routing *routing, int64_t groups, int64_t domains,
                   int64_t devices_per_domain, int64_t slots, double traffic_weight,
                   double deadline, int32_t *map, double *device_load,
                   struct domain_assignment *out)
{
    int64_t capacity = devices_per_domain * slots;
    if (experts <= 0 || domains <= 0 || capacity <= 0)
        return false;
    int64_t *domain_of = xmalloc((size_t)experts * sizeof *domain_of);
    struct search s;
    if (!search_open(&s, tokens, copies, experts, routing, groups, domains, capacity,
                     traffic_weight, domain_of)) {
        free(domain_of);
        return false;
    }
    search_domains(&s, deadline, out);
    int32_t *ids = xmalloc((size_t)capacity * sizeof *ids);
    double *loads = xmalloc((size_t)capacity * sizeof *loads);
    bool ok = true;
    for (int64_t d = 0; d < domains && ok; d++) {
        int64_t n = 0;
        for (int64_t e = 0; e < experts; e++)
            if (domain_of[e] == d)
                for (int64_t c = 0; c < copies[e]; c++) {
                    ids[n] = (int32_t)e;
                    loads[n++] = tokens[e] / (double)copies[e];
                }
        struct layer_placement inner;
        ok = experts_place_copies(ids, loads, n, devices_per_domain, slots, &inner);
        if (!ok)
            break;
        memcpy(map + d * capacity, inner.expert, (size_t)capacity * sizeof *map);
        memcpy(device_load + d * devices_per_domain, inner.device_load,
               (size_t)devices_per_domain * sizeof *device_load);
        layer_placement_release(&inner);
    }
    if (ok) {
        for (int round = 0; round < 20; round++) {
            int64_t made = refine_devices(&s, devices_per_domain, slots, map, device_load, deadline);
            made += untangle_devices(&s, devices_per_domain, slots, map, device_load, deadline);
            out->swaps += made;
            if (made == 0)
                break;
        }
        summarise(&s, out);
    }
    free(ids);
    free(loads);
    search_close(&s);
    free(domain_of);
    return ok;
}
