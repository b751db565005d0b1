/* anneal: how far a long search can push case b of shared/data/moe-loads (the experts exactly
 * fill the slots, so no replicas) toward low GPU imbalance AND few remote nodes per token at
 * once. Evidence for bench/RESULTS.md, not part of rackplan.
 *
 *   anneal TRACE.csv.gz NODES GPUS_PER_NODE SLOTS WEIGHT SWAPS [MAP.csv]
 *
 * Per layer, simulated annealing over which node holds each expert (a move swaps two experts of
 * different nodes, so every node keeps GPUS_PER_NODE x SLOTS experts), minimising
 *     remote nodes per token + WEIGHT x GPU floor / mean GPU load,
 * with two relaxations in the search's favour:
 * - remote nodes are counted against the evaluator's token homes (token t on GPU t mod G), which
 *   no real placement can know in advance;
 * - the GPU term is a lower bound on every packing of the node's experts on its GPUs:
 *   max(node load / GPUS_PER_NODE, hottest expert + the SLOTS - 1 lightest others), as every
 *   slot is filled.
 * It starts from whole expert groups on nodes (contiguous ids, the partition EPLB's hierarchical
 * policy uses), SWAPS proposals per layer, temperature falling geometrically from START_TEMP to
 * START_TEMP / 1000; the best partition seen is kept. Then rackplan's own packer
 * (experts_place_copies: LPT, then swaps) puts each node's experts on its GPUs, and MAP.csv gets
 * the physical-to-logical map that `evaluate` scores.
 * Prints the means over layers of the GPU floor, the packed GPU imbalance, the node imbalance and
 * the remote nodes per token. Deterministic: a fixed xorshift seed per layer.
 */
#include "experts.h"
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* About one swap's change of the cost on case b: a moved expert carries ~256 of 8,192 tokens,
 * ~0.2 remote nodes each (bench/b_estimate.py), so ~0.006 remote nodes per token. */
#define START_TEMP 0.005
#define NODE_MAX_EXPERTS 4096

struct layer {
    int64_t experts, nodes, per_node, gpus_per_node, slots, tokens, k;
    const int32_t *chosen; /* tokens x k */
    double *load;          /* experts: dispatches in the trace */
    int64_t *first, *user; /* CSR: the tokens that chose each expert */
    uint8_t *count;        /* tokens x nodes: the token's experts on that node */
    int64_t *home;         /* tokens: the node of GPU t mod G */
    int64_t *node_of, *member, *position; /* member: nodes x per_node expert ids */
    double *node_load, *floor;
    int64_t remote; /* sum over tokens of the remote nodes they reach */
};

static uint64_t xorshift(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static bool named_before(const int32_t *row, int64_t j)
{
    for (int64_t i = 0; i < j; i++)
        if (row[i] == row[j])
            return true;
    return false;
}

static double floor_of(const struct layer *s, int64_t node)
{
    const int64_t *m = s->member + node * s->per_node;
    int64_t hottest = 0;
    for (int64_t i = 1; i < s->per_node; i++)
        if (s->load[m[i]] > s->load[m[hottest]])
            hottest = i;
    double lightest[64]; /* the SLOTS - 1 lightest others, ascending */
    int64_t kept = 0, want = s->slots - 1;
    for (int64_t i = 0; i < s->per_node; i++) {
        if (i == hottest)
            continue;
        double x = s->load[m[i]];
        if (kept == want && (want == 0 || x >= lightest[kept - 1]))
            continue;
        int64_t j = kept < want ? kept++ : kept - 1;
        while (j > 0 && lightest[j - 1] > x) {
            lightest[j] = lightest[j - 1];
            j--;
        }
        lightest[j] = x;
    }
    double packed = s->load[m[hottest]];
    for (int64_t i = 0; i < kept; i++)
        packed += lightest[i];
    double spread = s->node_load[node] / (double)s->gpus_per_node;
    return packed > spread ? packed : spread;
}

static void move(struct layer *s, int64_t e, int64_t to)
{
    int64_t from = s->node_of[e];
    for (int64_t i = s->first[e]; i < s->first[e + 1]; i++) {
        int64_t t = s->user[i], home = s->home[t];
        uint8_t *c = s->count + t * s->nodes;
        if (--c[from] == 0 && from != home)
            s->remote--;
        if (c[to]++ == 0 && to != home)
            s->remote++;
    }
    s->node_of[e] = to;
    s->node_load[from] -= s->load[e];
    s->node_load[to] += s->load[e];
}

static void swap_experts(struct layer *s, int64_t a, int64_t b)
{
    int64_t na = s->node_of[a], nb = s->node_of[b];
    move(s, a, nb);
    move(s, b, na);
    int64_t pa = s->position[a], pb = s->position[b];
    s->member[na * s->per_node + pa] = b;
    s->member[nb * s->per_node + pb] = a;
    s->position[a] = pb;
    s->position[b] = pa;
}

static double peak(const struct layer *s)
{
    double top = 0;
    for (int64_t n = 0; n < s->nodes; n++)
        top = s->floor[n] > top ? s->floor[n] : top;
    return top;
}

static void anneal_layer(struct layer *s, double weight, int64_t swaps, uint64_t seed, int64_t *best_node)
{
    double mean_gpu = 0;
    for (int64_t e = 0; e < s->experts; e++)
        mean_gpu += s->load[e];
    mean_gpu /= (double)(s->nodes * s->gpus_per_node);
    double per_token = 1.0 / (double)s->tokens;
#define COST(top) ((double)s->remote * per_token + weight * (top) / mean_gpu)
    for (int64_t n = 0; n < s->nodes; n++)
        s->floor[n] = floor_of(s, n);
    double cost = COST(peak(s)), best = cost;
    memcpy(best_node, s->node_of, (size_t)s->experts * sizeof *best_node);
    for (int64_t i = 0; i < swaps; i++) {
        double temp = START_TEMP * pow(1e-3, (double)i / (double)swaps);
        int64_t a = (int64_t)(xorshift(&seed) % (uint64_t)s->experts);
        int64_t b = (int64_t)(xorshift(&seed) % (uint64_t)s->experts);
        int64_t na = s->node_of[a], nb = s->node_of[b];
        if (na == nb)
            continue;
        swap_experts(s, a, b);
        double fa = floor_of(s, na), fb = floor_of(s, nb);
        double top = fa > fb ? fa : fb;
        for (int64_t n = 0; n < s->nodes; n++)
            if (n != na && n != nb && s->floor[n] > top)
                top = s->floor[n];
        double next = COST(top);
        double draw = (double)(xorshift(&seed) >> 11) / 9007199254740992.0;
        if (next <= cost || draw < exp((cost - next) / temp)) {
            cost = next;
            s->floor[na] = fa;
            s->floor[nb] = fb;
            if (cost < best) {
                best = cost;
                memcpy(best_node, s->node_of, (size_t)s->experts * sizeof *best_node);
            }
        } else {
            swap_experts(s, a, b);
        }
    }
#undef COST
}

/* Rebuilds the members, node loads, counts and remote sum from node_of. */
static void settle(struct layer *s)
{
    int64_t *filled = calloc((size_t)s->nodes, sizeof *filled);
    memset(s->node_load, 0, (size_t)s->nodes * sizeof *s->node_load);
    for (int64_t e = 0; e < s->experts; e++) {
        int64_t n = s->node_of[e];
        s->position[e] = filled[n]++;
        s->member[n * s->per_node + s->position[e]] = e;
        s->node_load[n] += s->load[e];
    }
    free(filled);
    memset(s->count, 0, (size_t)(s->tokens * s->nodes));
    s->remote = 0;
    for (int64_t t = 0; t < s->tokens; t++) {
        const int32_t *row = s->chosen + t * s->k;
        for (int64_t j = 0; j < s->k && row[0] >= 0; j++)
            if (!named_before(row, j) && s->count[t * s->nodes + s->node_of[row[j]]]++ == 0 &&
                s->node_of[row[j]] != s->home[t])
                s->remote++;
    }
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: anneal TRACE.csv.gz NODES GPUS_PER_NODE SLOTS WEIGHT SWAPS [MAP.csv]\n");
        return 2;
    }
    struct layer s = {.nodes = atoll(argv[2]), .gpus_per_node = atoll(argv[3]), .slots = atoll(argv[4])};
    double weight = atof(argv[5]);
    int64_t swaps = atoll(argv[6]);
    if (s.nodes < 2 || s.gpus_per_node < 1 || s.slots < 1 || s.slots > 64 || swaps < 0 ||
        s.gpus_per_node * s.slots > NODE_MAX_EXPERTS) {
        fprintf(stderr, "anneal: need at least 2 nodes, 1 to 64 slots a GPU and at most %d experts a node\n",
                NODE_MAX_EXPERTS);
        return 2;
    }
    s.per_node = s.gpus_per_node * s.slots;
    s.experts = s.nodes * s.per_node;
    struct trace trace;
    struct diags d;
    diags_init(&d);
    if (trace_read(argv[1], s.experts, &trace, &d) != TRACE_OK) {
        diags_print(&d, stderr);
        return 3;
    }
    s.tokens = trace.tokens;
    s.k = trace.k;
    if (s.k > UINT8_MAX) {
        fprintf(stderr, "anneal: %lld experts a token; at most %d\n", (long long)s.k, UINT8_MAX);
        return 2;
    }
    s.load = malloc((size_t)s.experts * sizeof *s.load);
    s.first = malloc((size_t)(s.experts + 1) * sizeof *s.first);
    s.user = malloc((size_t)(s.tokens * s.k) * sizeof *s.user);
    s.count = malloc((size_t)(s.tokens * s.nodes));
    s.home = malloc((size_t)s.tokens * sizeof *s.home);
    s.node_of = malloc((size_t)s.experts * sizeof *s.node_of);
    s.member = malloc((size_t)s.experts * sizeof *s.member);
    s.position = malloc((size_t)s.experts * sizeof *s.position);
    s.node_load = malloc((size_t)s.nodes * sizeof *s.node_load);
    s.floor = malloc((size_t)s.nodes * sizeof *s.floor);
    int64_t *best_node = malloc((size_t)s.experts * sizeof *best_node);
    int64_t gpus = s.nodes * s.gpus_per_node;
    for (int64_t t = 0; t < s.tokens; t++)
        s.home[t] = t % gpus / s.gpus_per_node;
    int32_t *map = malloc((size_t)(trace.layers * s.experts) * sizeof *map);
    double sum_floor = 0, sum_gpu = 0, sum_node = 0, sum_remote = 0;
    for (int64_t layer = 0; layer < trace.layers; layer++) {
        s.chosen = trace_row(&trace, layer, 0);
        memset(s.first, 0, (size_t)(s.experts + 1) * sizeof *s.first);
        for (int64_t t = 0; t < s.tokens; t++) {
            const int32_t *row = s.chosen + t * s.k;
            for (int64_t j = 0; j < s.k && row[0] >= 0; j++)
                if (!named_before(row, j))
                    s.first[row[j] + 1]++;
        }
        for (int64_t e = 0; e < s.experts; e++) {
            s.load[e] = (double)s.first[e + 1];
            s.first[e + 1] += s.first[e];
        }
        int64_t *fill = best_node; /* scratch until the search */
        memcpy(fill, s.first, (size_t)s.experts * sizeof *fill);
        for (int64_t t = 0; t < s.tokens; t++) {
            const int32_t *row = s.chosen + t * s.k;
            for (int64_t j = 0; j < s.k && row[0] >= 0; j++)
                if (!named_before(row, j))
                    s.user[fill[row[j]]++] = t;
        }
        for (int64_t e = 0; e < s.experts; e++)
            s.node_of[e] = e / s.per_node;
        settle(&s);
        anneal_layer(&s, weight, swaps, 0x9E3779B97F4A7C15ull ^ (uint64_t)(layer + 1), best_node);
        memcpy(s.node_of, best_node, (size_t)s.experts * sizeof *s.node_of);
        settle(&s);
        double total = 0, top_floor = 0, top_gpu = 0, top_node = 0;
        for (int64_t n = 0; n < s.nodes; n++) {
            total += s.node_load[n];
            double f = floor_of(&s, n);
            top_floor = f > top_floor ? f : top_floor;
            top_node = s.node_load[n] > top_node ? s.node_load[n] : top_node;
            int32_t ids[NODE_MAX_EXPERTS];
            double loads[NODE_MAX_EXPERTS];
            for (int64_t i = 0; i < s.per_node; i++) {
                ids[i] = (int32_t)s.member[n * s.per_node + i];
                loads[i] = s.load[ids[i]];
            }
            struct layer_placement p;
            if (!experts_place_copies(ids, loads, s.per_node, s.gpus_per_node, s.slots, 0, &p)) {
                fprintf(stderr, "anneal: cannot pack node %lld\n", (long long)n);
                return 4;
            }
            top_gpu = p.max_load > top_gpu ? p.max_load : top_gpu;
            memcpy(map + layer * s.experts + n * s.per_node, p.expert, (size_t)s.per_node * sizeof *map);
            layer_placement_release(&p);
        }
        double mean_gpu = total / (double)gpus;
        sum_floor += top_floor / mean_gpu;
        sum_gpu += top_gpu / mean_gpu;
        sum_node += top_node / (total / (double)s.nodes);
        sum_remote += (double)s.remote / (double)s.tokens;
    }
    double layers = (double)trace.layers;
    printf("weight %g swaps %lld: gpu_floor_avg %.4f gpu_imb_avg %.4f node_imb_avg %.4f nodes_per_tok %.4f\n",
           weight, (long long)swaps, sum_floor / layers, sum_gpu / layers, sum_node / layers, sum_remote / layers);
    if (argc > 7) {
        FILE *f = fopen(argv[7], "w");
        for (int64_t layer = 0; f && layer < trace.layers; layer++)
            for (int64_t i = 0; i < s.experts; i++)
                fprintf(f, "%d%c", map[layer * s.experts + i], i + 1 < s.experts ? ',' : '\n');
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "anneal: cannot write %s\n", argv[7]);
            return 5;
        }
    }
    free(map);
    free(best_node);
    free(s.floor);
    free(s.node_load);
    free(s.position);
    free(s.member);
    free(s.node_of);
    free(s.home);
    free(s.count);
    free(s.user);
    free(s.first);
    free(s.load);
    trace_release(&trace);
    return 0;
}
