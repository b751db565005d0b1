/* domains.c: see domains.h. */
#include "domains.h"

#include "diag.h"
#include "experts.h"
#include "traffic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Within this share of each part's time a cost still moves: a swap that leaves the binding part
 * alone but lowers another wins over one that changes nothing, so the search keeps balancing
 * devices while the network binds and keeps cutting traffic while compute does. */
#define TIE_BREAK 1e-3

/* A domain swap must gain this share of the price: each one re-counts every token of both
 * experts, and on EP144 three swaps in four gained under 0.02%, most of it tie-break terms. */
#define SWEEP_GAIN 1e-4

struct search {
    int64_t experts, domains, tokens, k;
    int64_t devices_per_domain, slots;
    const double *load;
    int64_t *copies; /* group_start and domains_place's tuning move replicas */
    int64_t max_copies; /* of one expert: one per device of its domain */
    int32_t *chosen; /* the routing sample's rows, each expert named once (repeats -1) */
    int64_t *domain_of;
    double *domain_load;
    int64_t *first, *user;  /* CSR: the tokens that chose each expert */
    uint8_t *count;         /* tokens x domains: the token's experts in that domain */
    /* The change in a domain's reach if expert e moved into domain y is absent[e][y], the tokens
     * of e that reach no expert in y; the change in its own domain's reach is -leaves[e], the
     * tokens it alone takes there. Kept up to date per token as experts move, Fiduccia-Mattheyses
     * style: a move changes two columns of a token's counts, so it touches k entries, not
     * k x domains. */
    int64_t *absent;        /* experts x domains */
    int64_t *leaves;        /* experts */
    int64_t *stamp;         /* tokens */
    int64_t now;
    double *reach;          /* domains: routed tokens with an expert there */
    int64_t distinct;       /* sum over tokens of the domains they reach */
    int64_t routed;         /* tokens with a row */
    double mean;            /* a device's load, on average */
    /* pricing (NULL: balance alone): step dispatches per unit of load, step tokens per routed
     * token, and the share of a device's dispatches that come from other devices */
    const struct moe_layer_physics *physics;
    double dispatch_scale, token_scale, crossing_share;
    /* traffic_layer_pace's rates per unit of what the search counts, read off it once: seconds
     * a unit of load on the hottest device (compute, scale-up), a held copy, and a unit of
     * (distinct + (2D - 3) x max reach) on the busiest domain's NICs */
    double compute_per_load, read_per_copy, up_per_load, nic_per_reach;
    double domain_copies;   /* most copies a device holds, at the domain level */
    /* the device phase */
    int32_t *map;
    double *device_load, *held;
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

static bool priced_traffic(const struct search *s)
{
    return s->physics && s->routed > 0 && s->domains > 1;
}

/* distinct + (2D - 3) x max reach: what the busiest domain's NICs carry in a step, in units of
 * nic_bytes_per_unit (priced() says why). */
static double nic_units(const struct search *s, double most_reach, int64_t distinct)
{
    return (double)distinct + (double)(2 * s->domains - 3) * most_reach;
}

/* The bytes one of nic_units carries over a step: a hidden state for each step token a sample
 * token stands for, shared over the D domains. */
static double nic_bytes_per_unit(const struct search *s)
{
    return s->physics->hidden * s->token_scale / (double)s->domains;
}

/* The layer's predicted time (traffic_layer_pace) with the hottest device carrying `most_load`
 * and holding `most_copies`, the busiest domain reached by `most_reach` tokens and `distinct`
 * domains reached in all, plus TIE_BREAK of its parts. With every token's home an even draw over
 * the devices, domain j receives reach_j (D - 1) / D dispatches and sends (distinct - reach_j) / D;
 * each goes out at 1 B a value and comes back at 2 B, so its NIC carries the larger of
 * out + 2 in and in + 2 out, which over all domains is (distinct + (2D - 3) max reach) / D. The
 * placement never uses which device a sample token sits on. Without physics: device imbalance. */
static double priced(const struct search *s, double most_load, double most_copies, double most_reach,
                     int64_t distinct)
{
    if (!s->physics)
        return most_load / s->mean;
    double compute = most_load * s->compute_per_load, reads = most_copies * s->read_per_copy;
    compute = compute > reads ? compute : reads;
    double up = most_load * s->up_per_load;
    double nic = nic_units(s, most_reach, distinct) * s->nic_per_reach;
    double comm = up > nic ? up : nic;
    double total = s->physics->overlap ? (compute > comm ? compute : comm) : compute + comm;
    return total + TIE_BREAK * (compute + up + nic);
}

/* Reads the rates of priced() off traffic_layer_pace, one input at a time (each part is linear
 * in its input), so that the search and the printed time cannot disagree. */
static void read_rates(struct search *s)
{
    struct layer_time unit;
    const struct moe_layer_physics *ph = s->physics;
    traffic_layer_pace(ph, s->dispatch_scale, 0, s->dispatch_scale * s->crossing_share, 0, s->devices_per_domain,
                       &unit);
    s->compute_per_load = unit.compute_s;
    s->up_per_load = unit.scale_up_s;
    traffic_layer_pace(ph, 0, 1, 0, 0, s->devices_per_domain, &unit);
    s->read_per_copy = unit.compute_s;
    if (priced_traffic(s)) {
        traffic_layer_pace(ph, 0, 0, 0, nic_bytes_per_unit(s), s->devices_per_domain, &unit);
        s->nic_per_reach = unit.scale_out_s;
    }
}

/* Adds token t's share of every move gain, of every domain's reach and of the distinct sum. */
static void account(struct search *s, int64_t t)
{
    const int32_t *row = row_of(s, t);
    const uint8_t *c = s->count + t * s->domains;
    for (int64_t y = 0; y < s->domains; y++) {
        s->distinct += c[y] > 0;
        s->reach[y] += c[y] > 0;
    }
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

/* When e (in x) and f (in y) trade domains, the least each domain's reach can change by:
 * f's tokens that reach nothing in x arrive, e's that only e took there leave. */
static void swap_gains(const struct search *s, int64_t e, int64_t f, int64_t *gain_x, int64_t *gain_y)
{
    int64_t x = s->domain_of[e], y = s->domain_of[f];
    *gain_x = s->absent[f * s->domains + x] - s->leaves[e];
    *gain_y = s->absent[e * s->domains + y] - s->leaves[f];
}

/* The exact changes: a token that chose both e and f keeps its counts in x and y, but the gains
 * took it as leaving wherever the departing expert was alone, so add those back. */
static void swap_reach(struct search *s, int64_t e, int64_t f, int64_t *change_x, int64_t *change_y)
{
    int64_t x = s->domain_of[e], y = s->domain_of[f];
    swap_gains(s, e, f, change_x, change_y);
    s->now++;
    for (int64_t i = s->first[f]; i < s->first[f + 1]; i++)
        s->stamp[s->user[i]] = s->now;
    for (int64_t i = s->first[e]; i < s->first[e + 1]; i++) {
        int64_t t = s->user[i];
        if (s->stamp[t] != s->now)
            continue;
        const uint8_t *c = s->count + t * s->domains;
        *change_x += c[x] == 1;
        *change_y += c[y] == 1;
    }
}

/* Token t's counts in x and y go from (cx, cy) to (nx, ny) as e moves x -> y and f y -> x: its
 * share of the distinct sum, the reaches, and its experts' absent and leaves entries change with
 * them, in one pass (the two homes that move, e's and f's, by hand). */
static void account_swap(struct search *s, int64_t t, int64_t e, int64_t f, int64_t x, int64_t y, int cx,
                         int cy, int nx, int ny)
{
    int reach_x = (nx > 0) - (cx > 0), reach_y = (ny > 0) - (cy > 0);
    s->distinct += reach_x + reach_y;
    s->reach[x] += reach_x;
    s->reach[y] += reach_y;
    int absent_x = (nx == 0) - (cx == 0), absent_y = (ny == 0) - (cy == 0);
    int alone_x = (nx == 1) - (cx == 1), alone_y = (ny == 1) - (cy == 1);
    const int32_t *row = row_of(s, t);
    for (int64_t j = 0; j < s->k; j++) {
        int64_t g = row[j];
        if (g < 0)
            continue;
        s->absent[g * s->domains + x] += absent_x;
        s->absent[g * s->domains + y] += absent_y;
        if (g == e)
            s->leaves[g] += (ny == 1) - (cx == 1);
        else if (g == f)
            s->leaves[g] += (nx == 1) - (cy == 1);
        else if (s->domain_of[g] == x)
            s->leaves[g] += alone_x;
        else if (s->domain_of[g] == y)
            s->leaves[g] += alone_y;
    }
}

static void apply_swap(struct search *s, int64_t e, int64_t f)
{
    int64_t x = s->domain_of[e], y = s->domain_of[f];
    if (x == y)
        return;
    /* stamp f's tokens; e's tokens that carry the stamp chose both and keep their counts */
    s->now++;
    int64_t both = s->now;
    for (int64_t i = s->first[f]; i < s->first[f + 1]; i++)
        s->stamp[s->user[i]] = both;
    s->now++;
    for (int64_t i = s->first[e]; i < s->first[e + 1]; i++) {
        int64_t t = s->user[i];
        uint8_t *c = s->count + t * s->domains;
        bool shared = s->stamp[t] == both;
        s->stamp[t] = s->now;
        int cx = c[x], cy = c[y];
        if (!shared) {
            c[x]--;
            c[y]++;
        }
        account_swap(s, t, e, f, x, y, cx, cy, c[x], c[y]);
    }
    for (int64_t i = s->first[f]; i < s->first[f + 1]; i++) {
        int64_t t = s->user[i];
        if (s->stamp[t] == s->now)
            continue;
        uint8_t *c = s->count + t * s->domains;
        int cx = c[x], cy = c[y];
        c[x]++;
        c[y]--;
        account_swap(s, t, e, f, x, y, cx, cy, c[x], c[y]);
    }
    s->domain_of[e] = y;
    s->domain_of[f] = x;
    s->domain_load[x] += s->load[f] - s->load[e];
    s->domain_load[y] += s->load[e] - s->load[f];
}

/* The three largest of `v`, so the maximum after changing two entries is found in O(1). */
static void top_three(const double *v, int64_t n, int64_t top[3])
{
    top[0] = top[1] = top[2] = -1;
    for (int64_t d = 0; d < n; d++) {
        double l = v[d];
        if (top[0] < 0 || l > v[top[0]]) {
            top[2] = top[1];
            top[1] = top[0];
            top[0] = d;
        } else if (top[1] < 0 || l > v[top[1]]) {
            top[2] = top[1];
            top[1] = d;
        } else if (top[2] < 0 || l > v[top[2]]) {
            top[2] = d;
        }
    }
}

static double peak_after(const double *v, const int64_t top[3], int64_t x, double vx, int64_t y, double vy)
{
    double peak = vx > vy ? vx : vy;
    for (int i = 0; i < 3; i++)
        if (top[i] >= 0 && top[i] != x && top[i] != y)
            return v[top[i]] > peak ? v[top[i]] : peak;
    return peak;
}

/* The price of trading e (in x) for f (in y) with the hottest device at `most_load` after it:
 * from the gains alone when `exact` is false (never above the exact price). */
static double trade_price(struct search *s, int64_t e, int64_t f, double most_load, double most_copies,
                          const int64_t reach_top[3], bool exact)
{
    int64_t x = s->domain_of[e], y = s->domain_of[f], gx, gy;
    if (exact)
        swap_reach(s, e, f, &gx, &gy);
    else
        swap_gains(s, e, f, &gx, &gy);
    double most_reach = peak_after(s->reach, reach_top, x, s->reach[x] + (double)gx, y, s->reach[y] + (double)gy);
    return priced(s, most_load, most_copies, most_reach, s->distinct + gx + gy);
}

/* One sweep over the experts: each trades domains with the partner that lowers the price most.
 * The gains bound each reach from below and the price only grows with reach, so a candidate is
 * checked exactly only when its bound beats the best exact change so far. Returns the swaps. */
static int64_t sweep(struct search *s, double deadline)
{
    int64_t swaps = 0;
    double per_device = (double)s->devices_per_domain;
    for (int64_t e = 0; e < s->experts; e++) {
        if (deadline > 0 && (e & 15) == 0 && monotonic_seconds() > deadline)
            break;
        int64_t load_top[3], reach_top[3];
        top_three(s->domain_load, s->domains, load_top);
        top_three(s->reach, s->domains, reach_top);
        double most_load_now = s->domain_load[load_top[0]];
        double price_now = priced(s, most_load_now / per_device, s->domain_copies, s->reach[reach_top[0]],
                                  s->distinct);
        int64_t x = s->domain_of[e];
        int64_t best = -1;
        double best_delta = -price_now * SWEEP_GAIN;
        for (int64_t f = 0; f < s->experts; f++) {
            int64_t y = s->domain_of[f];
            if (y == x || s->copies[f] != s->copies[e])
                continue;
            double lx = s->domain_load[x] - s->load[e] + s->load[f];
            double ly = s->domain_load[y] - s->load[f] + s->load[e];
            int64_t gx = 0, gy = 0;
            if (priced_traffic(s))
                swap_gains(s, e, f, &gx, &gy);
            /* the price only grows with its three inputs: unless one of them can fall, skip */
            bool load_may_fall = (x == load_top[0] && lx < most_load_now) || (y == load_top[0] && ly < most_load_now);
            bool reach_may_fall = (x == reach_top[0] && gx < 0) || (y == reach_top[0] && gy < 0);
            if (!load_may_fall && !reach_may_fall && gx + gy >= 0)
                continue;
            double most_load = peak_after(s->domain_load, load_top, x, lx, y, ly) / per_device;
            double delta = trade_price(s, e, f, most_load, s->domain_copies, reach_top, false) - price_now;
            if (delta >= best_delta)
                continue;
            if (priced_traffic(s))
                delta = trade_price(s, e, f, most_load, s->domain_copies, reach_top, true) - price_now;
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
    double domain_load[16] = {0}, reach[16] = {0};
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
        for (uint64_t rest = reached; rest; rest &= rest - 1)
            reach[__builtin_ctzll(rest)] += (double)g->tokens_with[m];
    }
    double most_reach = 0;
    for (int64_t d = 0; d < s->domains; d++)
        most_reach = reach[d] > most_reach ? reach[d] : most_reach;
    return priced(s, peak / (double)s->devices_per_domain, s->domain_copies, most_reach, distinct);
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
 * split with the lowest price (a domain's load spread evenly over its devices), tried one by one
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

static bool search_open(struct search *s, const double *tokens, int64_t *copies, int64_t experts,
                        const struct layer_routing *routing, const struct moe_layer_physics *physics,
                        int64_t groups, int64_t domains, int64_t devices_per_domain, int64_t slots,
                        int64_t *domain_of)
{
    int64_t capacity = devices_per_domain * slots;
    *s = (struct search){.experts = experts, .domains = domains, .devices_per_domain = devices_per_domain,
                         .slots = slots, .load = tokens, .copies = copies, .max_copies = devices_per_domain,
                         .domain_of = domain_of, .physics = physics};
    if (!fill_in_order(s, capacity) && !fill_by_size(s, capacity))
        return false;
    double total = 0;
    int64_t all_copies = 0;
    for (int64_t e = 0; e < experts; e++) {
        total += tokens[e];
        all_copies += copies[e];
    }
    int64_t devices = domains * devices_per_domain;
    s->mean = total > 0 ? total / (double)devices : 1;
    s->domain_copies = (double)((all_copies + devices - 1) / devices);
    s->reach = xcalloc((size_t)domains, sizeof *s->reach);
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
    }
    if (physics) {
        int64_t k = s->k > 0 ? s->k : 1;
        s->dispatch_scale = total > 0 ? physics->step_tokens * (double)k / total : 0;
        s->token_scale = s->routed > 0 ? physics->step_tokens / (double)s->routed : 0;
        s->crossing_share = 1 - 1 / (double)devices;
        read_rates(s);
    }
    if (s->routed > 0)
        group_start(s, groups, capacity);
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
    free(s->reach);
    free(s->held);
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
    out->swaps = swaps;
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
static double trade(struct search *s, int64_t i, int64_t j, bool apply)
{
    int32_t *map = s->map;
    int32_t e = map[i], f = map[j];
    int64_t slots = s->slots, capacity = s->devices_per_domain * slots;
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
        double la = s->device_load[a / slots] - shift, lb = s->device_load[b / slots] + shift;
        peak = la > peak ? la : peak;
        peak = lb > peak ? lb : peak;
        if (apply) {
            map[a] = f;
            map[b] = e;
            s->device_load[a / slots] = la;
            s->device_load[b / slots] = lb;
        }
    }
    if (apply)
        apply_swap(s, e, f);
    return peak;
}

static int64_t device_count(const struct search *s)
{
    return s->domains * s->devices_per_domain;
}

static int64_t hottest_device(const struct search *s)
{
    int64_t worst = 0;
    for (int64_t g = 1; g < device_count(s); g++)
        if (s->device_load[g] > s->device_load[worst])
            worst = g;
    return worst;
}

static double most_held(const struct search *s)
{
    double most = 0;
    for (int64_t g = 0; g < device_count(s); g++)
        most = s->held[g] > most ? s->held[g] : most;
    return most;
}

static void count_held(struct search *s)
{
    for (int64_t g = 0; g < device_count(s); g++) {
        s->held[g] = 0;
        for (int64_t i = g * s->slots; i < (g + 1) * s->slots; i++)
            s->held[g] += s->map[i] >= 0;
    }
}

/* Device level: swaps of a copy on the most loaded device with a lighter one elsewhere, within
 * its domain (no traffic change) or, as a trade of all copies, with an expert of as many copies
 * in another domain (traffic changes), while the price falls. A swap is judged on the devices it
 * touches: with several devices at the peak, each swap lowers one of them and the maximum falls
 * once the last one has moved. */
static int64_t refine_devices(struct search *s, double deadline)
{
    int64_t slots = s->slots, width = device_count(s) * slots, dpd = s->devices_per_domain;
    int32_t *map = s->map;
    int64_t swaps = 0;
    for (int round = 0; round < 100000; round++) {
        if (deadline > 0 && (round & 15) == 0 && monotonic_seconds() > deadline)
            break;
        int64_t worst = hottest_device(s), reach_top[3];
        top_three(s->reach, s->domains, reach_top);
        double peak = s->device_load[worst], most_copies = most_held(s);
        double price_now = priced(s, peak, most_copies, s->reach[reach_top[0]], s->distinct);
        int64_t best_i = -1, best_j = -1;
        double best_delta = -price_now * 1e-9;
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
                double new_worst = peak - li + lj, new_other = s->device_load[g] + li - lj;
                double most_load = new_worst > new_other ? new_worst : new_other;
                double copies_after = f < 0 && s->held[g] + 1 > most_copies ? s->held[g] + 1 : most_copies;
                double delta;
                if (g / dpd != worst / dpd) {
                    if (f < 0 || s->copies[e] != s->copies[f])
                        continue;
                    if (s->copies[e] > 1)
                        most_load = trade(s, i, j, false);
                    delta = trade_price(s, e, f, most_load, most_copies, reach_top, false) - price_now;
                    if (delta >= best_delta)
                        continue;
                    if (priced_traffic(s))
                        delta = trade_price(s, e, f, most_load, most_copies, reach_top, true) - price_now;
                } else {
                    if ((f >= 0 && on_device(map, slots, worst, f)) || on_device(map, slots, g, e))
                        continue;
                    delta = priced(s, most_load, copies_after, s->reach[reach_top[0]], s->distinct) - price_now;
                }
                if (delta >= best_delta)
                    continue;
                best_delta = delta;
                best_i = i;
                best_j = j;
            }
        }
        if (best_i < 0)
            break;
        int32_t e = map[best_i], f = map[best_j];
        int64_t g = best_j / slots;
        if (g / dpd != worst / dpd) {
            trade(s, best_i, best_j, true);
        } else {
            double li = s->load[e] / (double)s->copies[e];
            double lj = f >= 0 ? s->load[f] / (double)s->copies[f] : 0;
            map[best_i] = f;
            map[best_j] = e;
            s->device_load[worst] += lj - li;
            s->device_load[g] += li - lj;
            if (f < 0) {
                s->held[worst]--;
                s->held[g]++;
            }
        }
        swaps++;
    }
    return swaps;
}

/* Device level, anywhere: experts of equal copy counts trade places across domains when that
 * lowers the price, the hottest device taken as the larger of today's and the trade's own. A
 * trade that raises no domain's reach nor the distinct sum cannot lower it, and is passed over
 * without pricing. */
static int64_t untangle_devices(struct search *s, double deadline)
{
    int64_t width = device_count(s) * s->slots;
    if (!priced_traffic(s))
        return 0;
    int32_t *map = s->map;
    int64_t swaps = 0;
    for (int64_t i = 0; i < width; i++) {
        if (deadline > 0 && (i & 15) == 0 && monotonic_seconds() > deadline)
            break;
        int32_t e = map[i];
        if (e < 0)
            continue;
        int64_t x = s->domain_of[e], reach_top[3];
        top_three(s->reach, s->domains, reach_top);
        double peak = s->device_load[hottest_device(s)], most_copies = most_held(s);
        double price_now = priced(s, peak, most_copies, s->reach[reach_top[0]], s->distinct);
        int64_t best_j = -1;
        double best_delta = -price_now * 1e-9;
        for (int64_t j = 0; j < width; j++) {
            int32_t f = map[j];
            if (f < 0 || s->copies[f] != s->copies[e] || s->domain_of[f] == x)
                continue;
            int64_t gx, gy;
            swap_gains(s, e, f, &gx, &gy);
            if (gx >= 0 && gy >= 0)
                continue;
            if (trade_price(s, e, f, peak, most_copies, reach_top, false) - price_now >= best_delta)
                continue;
            double after = trade(s, i, j, false);
            double most_load = after > peak ? after : peak;
            if (trade_price(s, e, f, most_load, most_copies, reach_top, false) - price_now >= best_delta)
                continue;
            double delta = trade_price(s, e, f, most_load, most_copies, reach_top, true) - price_now;
            if (delta < best_delta) {
                best_delta = delta;
                best_j = j;
            }
        }
        if (best_j < 0)
            continue;
        trade(s, i, best_j, true);
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

static void install(struct search *s, int64_t d, const struct layer_placement *inner)
{
    int64_t per_domain = s->devices_per_domain;
    memcpy(s->map + d * per_domain * s->slots, inner->expert, (size_t)(per_domain * s->slots) * sizeof *s->map);
    memcpy(s->device_load + d * per_domain, inner->device_load, (size_t)per_domain * sizeof *s->device_load);
}

static int64_t refine_rounds(struct search *s, double deadline)
{
    int64_t swaps = 0;
    for (int round = 0; round < 20; round++) {
        int64_t made = refine_devices(s, deadline);
        made += untangle_devices(s, deadline);
        swaps += made;
        if (made == 0)
            break;
    }
    return swaps;
}

/* Each domain re-placed with its replicas tuned (experts_place_tuned), kept where that lowers
 * the domain's most loaded device. Replicas stay inside their domain, so traffic and domain
 * loads do not change. Returns the number of domains changed. */
static int64_t tune_domains(struct search *s, double deadline)
{
    int64_t per_domain = s->devices_per_domain;
    int32_t *ids = xmalloc((size_t)s->experts * sizeof *ids);
    int64_t *trial = xmalloc((size_t)s->experts * sizeof *trial);
    int64_t changed = 0;
    for (int64_t d = 0; d < s->domains; d++) {
        double most = 0;
        for (int64_t g = d * per_domain; g < (d + 1) * per_domain; g++)
            most = s->device_load[g] > most ? s->device_load[g] : most;
        int64_t n = experts_in(s, d, ids);
        memcpy(trial, s->copies, (size_t)s->experts * sizeof *trial);
        struct layer_placement inner;
        if (!experts_place_tuned(s->load, ids, n, trial, per_domain, per_domain, s->slots, deadline, &inner))
            continue;
        if (inner.max_load < most * (1 - 1e-12)) {
            install(s, d, &inner);
            for (int64_t i = 0; i < n; i++)
                s->copies[ids[i]] = trial[ids[i]];
            changed++;
        }
        layer_placement_release(&inner);
    }
    if (changed > 0)
        count_held(s);
    free(trial);
    free(ids);
    return changed;
}

/* With overlap, a layer whose NICs are slower than its hottest device's compute and scale-up
 * gains nothing from a lighter hottest device, and the domain search has already priced its
 * traffic: the device phase would only move the tie-break. */
static bool network_sets_time(const struct search *s, const struct layer_time *t)
{
    return s->physics && s->physics->overlap && priced_traffic(s) && t->scale_out_s >= fmax(t->compute_s, t->scale_up_s);
}

/* What the search arrived at, priced as traffic_layer_pace prices a placement. */
static void summarise(const struct search *s, struct domain_assignment *out)
{
    double peak = 0;
    for (int64_t d = 0; d < s->domains; d++)
        peak = s->domain_load[d] > peak ? s->domain_load[d] : peak;
    out->imbalance = peak / (s->mean * (double)s->devices_per_domain);
    out->domains_per_token = s->routed > 0 ? (double)s->distinct / (double)s->routed : 0;
    out->time = (struct layer_time){0};
    if (!s->physics)
        return;
    double dispatches = s->device_load[hottest_device(s)] * s->dispatch_scale, nic = 0;
    if (priced_traffic(s)) {
        int64_t reach_top[3];
        top_three(s->reach, s->domains, reach_top);
        nic = nic_units(s, s->reach[reach_top[0]], s->distinct) * nic_bytes_per_unit(s);
    }
    traffic_layer_pace(s->physics, dispatches, most_held(s), dispatches * s->crossing_share, nic,
                       s->devices_per_domain, &out->time);
    out->network_bound = network_sets_time(s, &out->time);
}

bool domains_place(const double *tokens, int64_t *copies, int64_t experts, const struct layer_routing *routing,
                   const struct moe_layer_physics *physics, int64_t groups, int64_t domains,
                   int64_t devices_per_domain, int64_t slots, double deadline, int32_t *map,
                   double *device_load, struct domain_assignment *out)
{
    int64_t capacity = devices_per_domain * slots;
    if (experts <= 0 || domains <= 0 || capacity <= 0)
        return false;
    int64_t *domain_of = xmalloc((size_t)experts * sizeof *domain_of);
    struct search s;
    if (!search_open(&s, tokens, copies, experts, routing, physics, groups, domains, devices_per_domain, slots,
                     domain_of)) {
        search_close(&s);
        free(domain_of);
        return false;
    }
    search_domains(&s, deadline, out);
    int32_t *members = xmalloc((size_t)experts * sizeof *members);
    int32_t *ids = xmalloc((size_t)capacity * sizeof *ids);
    double *loads = xmalloc((size_t)capacity * sizeof *loads);
    s.map = map;
    s.device_load = device_load;
    s.held = xcalloc((size_t)(domains * devices_per_domain), sizeof *s.held);
    bool ok = true;
    for (int64_t d = 0; d < domains && ok; d++) {
        int64_t n = experts_copy_list(tokens, copies, members, experts_in(&s, d, members), ids, loads);
        struct layer_placement inner;
        ok = experts_place_copies(ids, loads, n, devices_per_domain, slots, deadline, &inner);
        if (!ok)
            break;
        install(&s, d, &inner);
        layer_placement_release(&inner);
    }
    if (ok) {
        count_held(&s);
        summarise(&s, out);
        if (!out->network_bound) {
            out->swaps += refine_rounds(&s, deadline);
            for (int round = 0; round < 5; round++) {
                if (tune_domains(&s, deadline) == 0)
                    break;
                out->swaps += refine_rounds(&s, deadline);
            }
            summarise(&s, out);
        }
    }
    free(members);
    free(ids);
    free(loads);
    search_close(&s);
    free(domain_of);
    return ok;
}
