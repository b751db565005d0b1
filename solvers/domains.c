/* domains.c: see domains.h. */
#include "domains.h"

#include "diag.h"
#include "experts.h"

#include <stdlib.h>
#include <string.h>

struct search {
    int64_t experts, domains, tokens, k;
    const double *load;
    int64_t *copies; /* group_start and domains_place's tuning move replicas */
    int64_t max_copies; /* of one expert: one per device of its domain */
    int32_t *chosen; /* the routing sample's rows, each expert named once (repeats -1) */
    int64_t *domain_of;
    double *domain_load;
    int64_t *first, *user;  /* CSR: the tokens that chose each expert */
    uint8_t *count;         /* tokens x domains: the token's experts in that domain */
    /* The change in the distinct sum if expert e moved to domain y is absent[e][y] - leaves[e]:
     * its tokens that reach no expert in y, less those it alone takes to its own domain. Kept
     * up to date per token as experts move, Fiduccia-Mattheyses style: a move changes two
     * columns of a token's counts, so it touches k entries, not k x domains. */
    int64_t *absent;        /* experts x domains */
    int64_t *leaves;        /* experts */
    int64_t *stamp;         /* tokens */
    int64_t now;
    int64_t distinct;       /* sum over tokens of the domains they reach */
    int64_t routed;         /* tokens with a row */
    double mean, weight;
    bool peak_only; /* refine_devices pays traffic only for a lower maximum */
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

static int64_t move_gain(const struct search *s, int64_t e, int64_t y)
{
    return s->absent[e * s->domains + y] - s->leaves[e];
}

/* Adds token t's share of every move gain and of the distinct sum. */
static void account(struct search *s, int64_t t)
{
    const int32_t *row = row_of(s, t);
    const uint8_t *c = s->count + t * s->domains;
    for (int64_t y = 0; y < s->domains; y++)
        s->distinct += c[y] > 0;
    for (int64_t j = 0; j < s->k; j++) {
        if (row[j] < 0)
            continue;
        int64_t e = row[j];
        s->leaves[e] += c[s->domain_of[e]] == 1;
        int64_t *a = s->absent + e * s->domains;
        for (int64_t y = 0; y < s->domains; y++)
            a[y] += c[y] == 0;
    }
}

/* Adds (sign +1) or removes (-1) token t's share in columns x and y, the two a swap changes,
 * and its experts' leaves (whose homes may be x or y, or move). */
static void account_columns(struct search *s, int64_t t, int64_t x, int64_t y, int sign)
{
    const int32_t *row = row_of(s, t);
    const uint8_t *c = s->count + t * s->domains;
    s->distinct += sign * ((c[x] > 0) + (c[y] > 0));
    for (int64_t j = 0; j < s->k; j++) {
        if (row[j] < 0)
            continue;
        int64_t e = row[j];
        s->leaves[e] += sign * (c[s->domain_of[e]] == 1);
        s->absent[e * s->domains + x] += sign * (c[x] == 0);
        s->absent[e * s->domains + y] += sign * (c[y] == 0);
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
    int64_t delta = move_gain(s, e, y) + move_gain(s, f, x);
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
    if (x == y)
        return;
    s->now++;
    int64_t lists[2] = {e, f};
    for (int l = 0; l < 2; l++)
        for (int64_t i = s->first[lists[l]]; i < s->first[lists[l] + 1]; i++)
            if (s->stamp[s->user[i]] != s->now) {
                s->stamp[s->user[i]] = s->now;
                account_columns(s, s->user[i], x, y, -1);
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
                account_columns(s, s->user[i], x, y, +1);
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
            int64_t bound = move_gain(s, e, y) + move_gain(s, f, x);
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

/* Whole groups to domains: the groups' loads, the tokens' group masks as a histogram over
 * masks, and the split being built (`where`: group -> domain, -1 while unplaced). */
struct grouping {
    const struct search *s;
    int64_t groups, per_domain;
    const double *load;
    const int64_t *tokens_with; /* 2^groups: tokens whose chosen groups are exactly that mask */
    int64_t *where, *best_where;
    double best;
};

static double grouping_cost(const struct grouping *g)
{
    const struct search *s = g->s;
    double domain_load[16] = {0};
    for (int64_t x = 0; x < g->groups; x++)
        domain_load[g->where[x]] += g->load[x];
    double peak = 0;
    for (int64_t d = 0; d < s->domains; d++)
        peak = domain_load[d] > peak ? domain_load[d] : peak;
    int64_t distinct = 0;
    for (uint64_t m = 1; m < (1ull << g->groups); m++) {
        if (g->tokens_with[m] == 0)
            continue;
        uint64_t reached = 0;
        for (uint64_t rest = m; rest; rest &= rest - 1)
            reached |= 1ull << g->where[__builtin_ctzll(rest)];
        distinct += g->tokens_with[m] * __builtin_popcountll(reached);
    }
    return peak / s->mean + traffic_term(s, distinct);
}

/* Every way to split the groups into domains of per_domain groups each: the lowest unplaced
 * group opens domain `domain`, which takes per_domain - 1 more from the groups above it. */
static void enumerate(struct grouping *g, int64_t domain, int64_t first, int64_t left)
{
    if (left == 0) {
        if (domain + 1 == g->s->domains) {
            double cost = grouping_cost(g);
            if (g->best < 0 || cost < g->best - 1e-12) {
                g->best = cost;
                memcpy(g->best_where, g->where, (size_t)g->groups * sizeof *g->where);
            }
            return;
        }
        int64_t open = 0;
        while (open < g->groups && g->where[open] >= 0)
            open++;
        g->where[open] = domain + 1;
        enumerate(g, domain + 1, open + 1, g->per_domain - 1);
        g->where[open] = -1;
        return;
    }
    for (int64_t x = first; x < g->groups; x++)
        if (g->where[x] < 0) {
            g->where[x] = domain;
            enumerate(g, domain, x + 1, left - 1);
            g->where[x] = -1;
        }
}

/* How many ways enumerate visits: groups! / (per_domain!^domains x domains!). */
static double groupings(int64_t groups, int64_t domains)
{
    double count = 1;
    int64_t per = groups / domains;
    for (int64_t i = 2; i <= groups; i++)
        count *= (double)i;
    for (int64_t d = 0; d < domains; d++)
        for (int64_t i = 2; i <= per; i++)
            count /= (double)i;
    for (int64_t i = 2; i <= domains; i++)
        count /= (double)i;
    return count;
}

enum { GROUPINGS_TRIED = 20000 };

/* The replicas dealt again once experts have their domains: as many spare slots as before,
 * shared evenly among the domains (within each one's free slots), and inside a domain each to
 * the expert with the most load per copy, as experts_replicas does for the whole layer. */
static void replicas_within_domains(struct search *s, int64_t capacity)
{
    int64_t spare = 0;
    int64_t *members = xcalloc((size_t)s->domains, sizeof *members);
    for (int64_t e = 0; e < s->experts; e++) {
        spare += s->copies[e] - 1;
        s->copies[e] = 1;
        members[s->domain_of[e]]++;
    }
    for (int64_t d = 0; d < s->domains; d++) {
        int64_t share = spare / (s->domains - d);
        if (share > capacity - members[d])
            share = capacity - members[d];
        spare -= share;
        for (; share > 0; share--) {
            int64_t pick = -1;
            for (int64_t e = 0; e < s->experts; e++)
                if (s->domain_of[e] == d && s->copies[e] < s->max_copies &&
                    (pick < 0 || s->load[e] / (double)s->copies[e] > s->load[pick] / (double)s->copies[pick]))
                    pick = e;
            if (pick < 0)
                break;
            s->copies[pick]++;
        }
        spare += share;
    }
    free(members);
}

/* Whole expert groups to domains, when the router picks groups first (DeepSeek's group-limited
 * routing: groups are contiguous id ranges) and the groups divide evenly among the domains: the
 * split with the lowest domain imbalance + weight x distinct domains per token, tried one by one
 * (8 groups on 4 domains: 105 splits); then the replicas are dealt within each domain, as
 * EPLB's hierarchical policy does. At this grain a token's distinct domains follow from its
 * group mask. */
static void group_start(struct search *s, int64_t groups, int64_t capacity)
{
    if (groups <= s->domains || groups > 16 || groups % s->domains != 0 ||
        s->experts % groups != 0 || s->experts / s->domains > capacity ||
        groupings(groups, s->domains) > GROUPINGS_TRIED)
        return;
    int64_t size = s->experts / groups;
    double load[16] = {0};
    int64_t where[16], best_where[16];
    int64_t *tokens_with = xcalloc((size_t)1 << groups, sizeof *tokens_with);
    for (int64_t e = 0; e < s->experts; e++)
        load[e / size] += s->load[e];
    for (int64_t t = 0; t < s->tokens; t++) {
        uint64_t mask = 0;
        for (int64_t j = 0; j < s->k; j++) {
            int32_t e = row_of(s, t)[j];
            if (e >= 0 && e < s->experts)
                mask |= 1ull << (e / size);
        }
        tokens_with[mask]++;
    }
    for (int64_t x = 0; x < groups; x++)
        where[x] = -1;
    where[0] = 0;
    struct grouping g = {.s = s, .groups = groups, .per_domain = groups / s->domains,
                         .load = load, .tokens_with = tokens_with, .where = where,
                         .best_where = best_where, .best = -1};
    enumerate(&g, 0, 1, g.per_domain - 1);
    for (int64_t e = 0; e < s->experts; e++)
        s->domain_of[e] = best_where[e / size];
    replicas_within_domains(s, capacity);
    free(tokens_with);
}

static bool search_open(struct search *s, const double *tokens, int64_t *copies,
                        int64_t max_copies, int64_t experts, const struct layer_routing *routing,
                        int64_t groups, int64_t domains, int64_t capacity, double traffic_weight,
                        int64_t *domain_of)
{
    *s = (struct search){.experts = experts, .domains = domains, .load = tokens, .copies = copies,
                         .max_copies = max_copies,
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
        s->chosen = xmalloc((size_t)(s->tokens * s->k > 0 ? s->tokens * s->k : 1) * sizeof *s->chosen);
        for (int64_t t = 0; t < s->tokens; t++) {
            const int32_t *row = routing->chosen + t * s->k;
            for (int64_t j = 0; j < s->k; j++)
                s->chosen[t * s->k + j] = row[0] < 0 || first_mention(row, j, experts) ? row[j] : -1;
            s->routed += row[0] >= 0;
        }
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
            if (row[j] >= 0)
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
            if (row[j] < 0)
                continue;
            s->user[fill[row[j]]++] = t;
            s->count[t * domains + domain_of[row[j]]]++;
        }
    }
    free(fill);
    s->absent = xcalloc((size_t)(experts * domains), sizeof *s->absent);
    s->leaves = xcalloc((size_t)experts, sizeof *s->leaves);
    s->stamp = xcalloc((size_t)(s->tokens > 0 ? s->tokens : 1), sizeof *s->stamp);
    for (int64_t t = 0; t < s->tokens; t++)
        if (row_of(s, t)[0] >= 0)
            account(s, t);
    return true;
}

static void search_close(struct search *s)
{
    free(s->domain_load);
    free(s->first);
    free(s->user);
    free(s->chosen);
    free(s->count);
    free(s->absent);
    free(s->leaves);
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
    int64_t *own = xmalloc((size_t)experts * sizeof *own); /* without groups none move */
    memcpy(own, copies, (size_t)experts * sizeof *own);
    bool ok = search_open(&s, tokens, own, capacity, experts, routing, 0, domains, capacity,
                          traffic_weight, domain_of);
    if (ok) {
        search_domains(&s, deadline, out);
        search_close(&s);
    }
    free(own);
    return ok;
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
        double peak = device_load[worst], runner_up = 0;
        for (int64_t g = 0; g < devices; g++)
            if (g != worst && device_load[g] > runner_up)
                runner_up = device_load[g];
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
                        if (s->peak_only) {
                            double after = peak + delta * mean;
                            delta = ((after > runner_up ? after : runner_up) - peak) / mean;
                            if (delta >= best_delta)
                                continue;
                        }
                        int64_t bound = move_gain(s, e, s->domain_of[f]) + move_gain(s, f, s->domain_of[e]);
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
            if (move_gain(s, e, s->domain_of[f]) + move_gain(s, f, x) >= best_delta)
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

/* The experts of domain d (their ids into `ids`); returns how many. */
static int64_t experts_in(const struct search *s, int64_t d, int32_t *ids)
{
    int64_t n = 0;
    for (int64_t e = 0; e < s->experts; e++)
        if (s->domain_of[e] == d)
            ids[n++] = (int32_t)e;
    return n;
}

static void install(int64_t d, int64_t devices_per_domain, int64_t slots,
                    const struct layer_placement *inner, int32_t *map, double *device_load)
{
    memcpy(map + d * devices_per_domain * slots, inner->expert,
           (size_t)(devices_per_domain * slots) * sizeof *map);
    memcpy(device_load + d * devices_per_domain, inner->device_load,
           (size_t)devices_per_domain * sizeof *device_load);
}

static int64_t refine_rounds(struct search *s, int64_t devices_per_domain, int64_t slots,
                             int32_t *map, double *device_load, double deadline)
{
    int64_t swaps = 0;
    for (int round = 0; round < 20; round++) {
        int64_t made = refine_devices(s, devices_per_domain, slots, map, device_load, deadline);
        made += untangle_devices(s, devices_per_domain, slots, map, device_load, deadline);
        swaps += made;
        if (made == 0)
            break;
    }
    return swaps;
}

/* Each domain re-placed with its replicas tuned (experts_place_tuned), kept where that lowers
 * the domain's most loaded device. Replicas stay inside their domain, so traffic and domain
 * loads do not change. Returns the number of domains changed. */
static int64_t tune_domains(struct search *s, int64_t devices_per_domain, int64_t slots,
                            int32_t *map, double *device_load, double deadline)
{
    int32_t *ids = xmalloc((size_t)s->experts * sizeof *ids);
    int64_t *trial = xmalloc((size_t)s->experts * sizeof *trial);
    int64_t changed = 0;
    for (int64_t d = 0; d < s->domains; d++) {
        double most = 0;
        for (int64_t g = d * devices_per_domain; g < (d + 1) * devices_per_domain; g++)
            most = device_load[g] > most ? device_load[g] : most;
        int64_t n = experts_in(s, d, ids);
        memcpy(trial, s->copies, (size_t)s->experts * sizeof *trial);
        struct layer_placement inner;
        if (!experts_place_tuned(s->load, ids, n, trial, devices_per_domain, devices_per_domain,
                                 slots, deadline, &inner))
            continue;
        if (inner.max_load < most * (1 - 1e-12)) {
            install(d, devices_per_domain, slots, &inner, map, device_load);
            for (int64_t i = 0; i < n; i++)
                s->copies[ids[i]] = trial[ids[i]];
            changed++;
        }
        layer_placement_release(&inner);
    }
    free(trial);
    free(ids);
    return changed;
}

/* Everything the device phase changes, to try it two ways from the same start. */
struct snapshot {
    int64_t *domain_of, *copies, *absent, *leaves, distinct;
    uint8_t *count;
    double *domain_load, *device_load;
    int32_t *map;
};

static void *duplicate(const void *from, size_t bytes)
{
    void *to = xmalloc(bytes > 0 ? bytes : 1);
    memcpy(to, from, bytes);
    return to;
}

static void snapshot_take(const struct search *s, const int32_t *map, const double *device_load,
                          int64_t devices, int64_t slots, struct snapshot *out)
{
    size_t experts = (size_t)s->experts, domains = (size_t)s->domains;
    out->domain_of = duplicate(s->domain_of, experts * sizeof *s->domain_of);
    out->copies = duplicate(s->copies, experts * sizeof *s->copies);
    out->absent = duplicate(s->absent, experts * domains * sizeof *s->absent);
    out->leaves = duplicate(s->leaves, experts * sizeof *s->leaves);
    out->count = duplicate(s->count, (size_t)s->tokens * domains * sizeof *s->count);
    out->domain_load = duplicate(s->domain_load, domains * sizeof *s->domain_load);
    out->device_load = duplicate(device_load, (size_t)devices * sizeof *device_load);
    out->map = duplicate(map, (size_t)(devices * slots) * sizeof *map);
    out->distinct = s->distinct;
}

static void snapshot_restore(struct search *s, int32_t *map, double *device_load, int64_t devices,
                             int64_t slots, const struct snapshot *from)
{
    size_t experts = (size_t)s->experts, domains = (size_t)s->domains;
    memcpy(s->domain_of, from->domain_of, experts * sizeof *s->domain_of);
    memcpy(s->copies, from->copies, experts * sizeof *s->copies);
    memcpy(s->absent, from->absent, experts * domains * sizeof *s->absent);
    memcpy(s->leaves, from->leaves, experts * sizeof *s->leaves);
    memcpy(s->count, from->count, (size_t)s->tokens * domains * sizeof *s->count);
    memcpy(s->domain_load, from->domain_load, domains * sizeof *s->domain_load);
    memcpy(device_load, from->device_load, (size_t)devices * sizeof *device_load);
    memcpy(map, from->map, (size_t)(devices * slots) * sizeof *map);
    s->distinct = from->distinct;
}

static void snapshot_release(struct snapshot *p)
{
    free(p->domain_of);
    free(p->copies);
    free(p->absent);
    free(p->leaves);
    free(p->count);
    free(p->domain_load);
    free(p->device_load);
    free(p->map);
}

/* The device phase: swaps and trades, then replicas tuned inside domains, until neither helps.
 * Returns the placement's cost: device imbalance + weight x distinct domains per token. */
static double finish(struct search *s, int64_t devices_per_domain, int64_t slots, int32_t *map,
                     double *device_load, double deadline, int64_t *swaps)
{
    *swaps += refine_rounds(s, devices_per_domain, slots, map, device_load, deadline);
    for (int round = 0; round < 5; round++) {
        if (tune_domains(s, devices_per_domain, slots, map, device_load, deadline) == 0)
            break;
        *swaps += refine_rounds(s, devices_per_domain, slots, map, device_load, deadline);
    }
    int64_t devices = s->domains * devices_per_domain;
    double most = 0, total = 0;
    for (int64_t g = 0; g < devices; g++) {
        total += device_load[g];
        most = device_load[g] > most ? device_load[g] : most;
    }
    return (total > 0 ? most / (total / (double)devices) : 1) + traffic_term(s, s->distinct);
}

bool domains_place(const double *tokens, int64_t *copies, int64_t experts,
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
    if (!search_open(&s, tokens, copies, devices_per_domain, experts, routing, groups, domains, capacity,
                     traffic_weight, domain_of)) {
        free(domain_of);
        return false;
    }
    search_domains(&s, deadline, out);
    int32_t *members = xmalloc((size_t)experts * sizeof *members);
    int32_t *ids = xmalloc((size_t)capacity * sizeof *ids);
    double *loads = xmalloc((size_t)capacity * sizeof *loads);
    bool ok = true;
    for (int64_t d = 0; d < domains && ok; d++) {
        int64_t n = experts_copy_list(tokens, copies, members, experts_in(&s, d, members), ids, loads);
        struct layer_placement inner;
        ok = experts_place_copies(ids, loads, n, devices_per_domain, slots, deadline, &inner);
        if (!ok)
            break;
        install(d, devices_per_domain, slots, &inner, map, device_load);
        layer_placement_release(&inner);
    }
    if (ok) {
        /* Two ways to spend traffic on device balance, both judged by the placement's cost:
         * trades that lower one device at the peak (several devices at the peak fall one by
         * one) or only trades that lower the maximum itself. Neither wins everywhere: on
         * DeepSeek's EP144 (case d) the first balances devices to 1.047 where the second stays
         * at 1.13, on EP32 (case a2) the second keeps 2.35 remote nodes where the first pays
         * 2.39 for about 0.02 of balance. */
        int64_t devices = domains * devices_per_domain, before = out->swaps;
        bool traffic = s.routed > 0 && s.weight > 0; /* without it both ways are the same */
        struct snapshot start;
        if (traffic)
            snapshot_take(&s, map, device_load, devices, slots, &start);
        double first_cost = finish(&s, devices_per_domain, slots, map, device_load, deadline,
                                   &out->swaps);
        if (traffic) {
            struct snapshot first;
            int64_t first_swaps = out->swaps;
            snapshot_take(&s, map, device_load, devices, slots, &first);
            snapshot_restore(&s, map, device_load, devices, slots, &start);
            s.peak_only = true;
            out->swaps = before;
            double second_cost = finish(&s, devices_per_domain, slots, map, device_load, deadline,
                                        &out->swaps);
            if (first_cost <= second_cost) {
                snapshot_restore(&s, map, device_load, devices, slots, &first);
                out->swaps = first_swaps;
            }
            snapshot_release(&start);
            snapshot_release(&first);
        }
        summarise(&s, out);
    }
    free(members);
    free(ids);
    free(loads);
    search_close(&s);
    free(domain_of);
    return ok;
}
