/* Expert placement in one domain against EPLB's published results on the same loads
 * (shared/data/moe-loads/eplb_results.csv, EPLB commit d52c72d), and its invariants. */
#include "cluster.h"
#include "diag.h"
#include "experts.h"
#include "loads.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

struct result {
    double average, worst, worst_gap;
    bool valid;
};

/* Places every layer; checks each expert is placed, no device holds two copies of one expert,
 * and device loads add up to the layer's tokens. */
static struct result place_all(const char *path, int64_t devices, int64_t slots)
{
    struct loads l;
    struct diags d;
    diags_init(&d);
    struct result r = {0, 0, 0, true};
    if (loads_read(path, &l, &d) != LOADS_OK) {
        printf("Bail out! %s\n", path);
        exit(1);
    }
    for (int64_t i = 0; i < l.layers; i++) {
        const double *tokens = l.tokens + i * l.experts;
        struct layer_placement p;
        if (!experts_place_layer(tokens, l.experts, devices, slots, &p)) {
            r.valid = false;
            break;
        }
        int64_t *seen = calloc((size_t)l.experts, sizeof *seen);
        double placed = 0, total = 0;
        for (int64_t dv = 0; dv < devices; dv++) {
            for (int64_t s = 0; s < slots; s++) {
                int32_t e = p.expert[dv * slots + s];
                seen[e]++;
                for (int64_t t = 0; t < s; t++)
                    r.valid &= p.expert[dv * slots + t] != e;
            }
            placed += p.device_load[dv];
        }
        for (int64_t e = 0; e < l.experts; e++) {
            r.valid &= seen[e] >= 1;
            total += tokens[e];
        }
        r.valid &= placed > total * (1 - 1e-9) && placed < total * (1 + 1e-9);
        free(seen);
        double imbalance = layer_imbalance(&p);
        r.average += imbalance / (double)l.layers;
        if (imbalance > r.worst)
            r.worst = imbalance;
        double gap = p.max_load / p.lower_bound - 1;
        if (gap > r.worst_gap)
            r.worst_gap = gap;
        r.valid &= p.max_load >= p.lower_bound * (1 - 1e-12);
        layer_placement_release(&p);
    }
    loads_release(&l);
    return r;
}

/* The greedy of experts.h, one spare slot at a time by a scan: the reference the bulk hand-out
 * of experts_replicas must equal, copy for copy. */
static void replicas_by_scan(const double *tokens, int64_t experts, int64_t slots, int64_t max_copies,
                             int64_t *copies)
{
    for (int64_t e = 0; e < experts; e++)
        copies[e] = 1;
    for (int64_t spare = slots - experts; spare > 0; spare--) {
        int64_t pick = -1;
        for (int64_t e = 0; e < experts; e++)
            if (copies[e] < max_copies &&
                (pick < 0 || tokens[e] / (double)copies[e] > tokens[pick] / (double)copies[pick]))
                pick = e;
        if (pick < 0)
            break;
        copies[pick]++;
    }
}

static void check_replicas_against_greedy(void)
{
    enum { EXPERTS = 64 };
    double tokens[EXPERTS];
    int64_t fast[EXPERTS], slow[EXPERTS];
    uint64_t state = 12345;
    const char *kinds[] = {"random", "uniform", "random with zeros", "few distinct values"};
    for (int kind = 0; kind < 4; kind++) {
        for (int64_t e = 0; e < EXPERTS; e++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            double r = (double)(state >> 11) / 9007199254740992.0;
            tokens[e] = kind == 0 ? 1 + 1e6 * r : kind == 1 ? 1000 : kind == 2 ? (e % 3 == 0 ? 0 : 1e4 * r)
                                                                              : (double)(1 + (int)(r * 4) * 250);
        }
        bool same = true;
        int64_t sizes[] = {EXPERTS * 5, EXPERTS * 17 + 3, EXPERTS * 200 + 11};
        int64_t caps[] = {2, 9, 1000000};
        for (int i = 0; i < 3; i++)
            for (int c = 0; c < 3; c++) {
                experts_replicas(tokens, EXPERTS, sizes[i], caps[c], fast);
                replicas_by_scan(tokens, EXPERTS, sizes[i], caps[c], slow);
                for (int64_t e = 0; e < EXPERTS; e++)
                    same &= fast[e] == slow[e];
            }
        CHECK(same, "replica counts with hundreds of spare slots equal the one-at-a-time greedy (%s loads)",
              kinds[kind]);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    /* case a1: 288 slots (32 spare) on 72 GPUs in one NVL72 domain; EPLB 1.03341 average */
    struct result a1 = place_all("loads/dsv3_load.csv", 72, 4);
    CHECK(a1.valid, "a1: every expert placed, no two copies on one GPU, loads add up, max >= bound");
    CHECK(a1.average <= 1.01, "a1: GPU imbalance %.4f <= 1.01 (issue #5 bar; EPLB 1.0334)", a1.average);
    CHECK(a1.worst_gap <= 0.01, "a1: every layer within 1%% of its lower bound (%.2f%%)", a1.worst_gap * 100);
    /* case c: Kimi-K2-like, 432 slots on 72 GPUs; EPLB 1.01264 */
    struct result c = place_all("loads/kimik2_load.csv", 72, 6);
    CHECK(c.valid, "c: placement valid");
    CHECK(c.average <= 1.01, "c: GPU imbalance %.4f <= 1.01 (EPLB 1.0126)", c.average);
    /* case bg geometry (256 slots on 64 GPUs, no spare slot): EPLB's global policy 1.17898 */
    struct result b = place_all("loads/dsv3_load.csv", 64, 4);
    CHECK(b.valid, "no spare slots: placement valid");
    CHECK(b.average < 1.17898, "no spare slots: GPU imbalance %.4f below EPLB global's 1.179", b.average);
    /* a2g geometry, 288 slots on 32 GPUs: EPLB global 1.00847 */
    struct result a2 = place_all("loads/dsv3_load.csv", 32, 9);
    CHECK(a2.valid && a2.average < 1.00847, "288 slots on 32 GPUs: %.4f below EPLB global's 1.0085", a2.average);

    /* several domains (nodes of 8 GPUs), eplb_results.csv: a2 = 288 slots on 4 nodes (EPLB
     * hierarchical 1.03804), b = 256 slots on 8 nodes, no spare (EPLB hierarchical 1.32488;
     * issue #5 asks <= 1.15), d = 288 slots on 18 nodes (EPLB 1.05431) */
    struct loads l;
    struct diags d;
    diags_init(&d);
    loads_read("loads/dsv3_load.csv", &l, &d);
    struct cluster_placement cp;
    CHECK(cluster_place(l.tokens, l.layers, l.experts, 4, 8, 9, NULL, &cp) && cp.gpu_imbalance_mean < 1.01,
          "a2: GPU imbalance %.4f (EPLB 1.038)", cp.gpu_imbalance_mean);
    bool one_copy_per_device = true;
    for (int64_t slot = 0; slot < cp.layers * 32; slot++)
        for (int64_t i = 0; i < 9; i++)
            for (int64_t j = 0; j < i; j++)
                one_copy_per_device &= cp.expert[slot * 9 + i] != cp.expert[slot * 9 + j];
    CHECK(one_copy_per_device, "a2: no GPU holds two copies of one expert");
    cluster_placement_release(&cp);
    CHECK(cluster_place(l.tokens, l.layers, l.experts, 8, 8, 4, NULL, &cp) && cp.gpu_imbalance_mean <= 1.15,
          "b: GPU imbalance %.4f <= 1.15 (EPLB hierarchical 1.325)", cp.gpu_imbalance_mean);
    cluster_placement_release(&cp);
    /* two slots a GPU: the replica counts decide how copies pair up, so tuning them matters */
    bool d_placed = cluster_place(l.tokens, l.layers, l.experts, 18, 8, 2, NULL, &cp);
    CHECK(d_placed && cp.gpu_imbalance_mean <= 1.04, "d: GPU imbalance %.4f <= 1.04, clearly below EPLB's 1.0543",
          cp.gpu_imbalance_mean);
    cluster_placement_release(&cp);
    loads_release(&l);

    struct layer_placement p;
    double tokens[3] = {5, 1, 1};
    CHECK(!experts_place_layer(tokens, 3, 1, 2, &p), "too few slots for every expert: refused");
    CHECK(experts_place_layer(tokens, 3, 2, 2, &p) && p.max_load == 3.5 && p.lower_bound == 3.5,
          "hand case: expert 0 (5) split in two, 2.5 + 1 on each GPU: max 3.5 = bound");
    layer_placement_release(&p);
    /* Hand case for the replica tuning: loads 4, 4, 2 on 2 GPUs x 2 slots, one spare. The
     * greedy count gives the spare to expert 0 (copies 2, 2, 4, 2; the 4 must share a GPU with a
     * 2: max 6). Giving it to expert 2 instead pairs 4 + 1 and 4 + 1: max 5 = the mean. */
    double paired[3] = {4, 4, 2};
    bool paired_placed = experts_place_layer(paired, 3, 2, 2, &p);
    CHECK(paired_placed && p.max_load == 5 && p.lower_bound == 5,
          "hand case: the spare copy goes to the light expert, max %.1f = mean 5 (greedy: 6)", p.max_load);
    layer_placement_release(&p);

    /* Hand case for GLPK: loads 9 9 7 6 5 4 3 2 0 on 3 GPUs x 3 slots (mean 15). LPT gives
     * {9,6,0} 15, {9,5,2} 16, {7,4,3} 14, and no swap of two copies lowers the 16 (found by
     * brute force over small cases); {9,6,0} {9,4,2} {7,5,3} is 15 = the mean. */
    double stuck[9] = {9, 9, 7, 6, 5, 4, 3, 2, 0};
    struct cluster_placement local, ilp;
    bool local_placed = cluster_place(stuck, 1, 9, 1, 3, 3, NULL, &local);
    CHECK(local_placed && local.gpu_imbalance_mean == 16.0 / 15,
          "hand case: local search alone stops at max 16 (imbalance %.4f)", local.gpu_imbalance_mean);
    struct cluster_routing with_time = {.deadline = monotonic_seconds() + 60};
    bool ilp_placed = cluster_place(stuck, 1, 9, 1, 3, 3, &with_time, &ilp);
    CHECK(ilp_placed && ilp.gpu_imbalance_mean == 1 && ilp.ilp.improved == 1 && ilp.worst_gap == 0,
          "hand case: GLPK re-places the copies, max 15 = the mean, proven (imbalance %.4f, %lld improved)",
          ilp.gpu_imbalance_mean, (long long)ilp.ilp.improved);
    bool all_once = ilp_placed;
    for (int32_t e = 0; e < 9 && ilp_placed; e++) {
        int found = 0;
        for (int64_t slot = 0; slot < 9; slot++)
            found += ilp.expert[slot] == e;
        all_once &= found == 1;
    }
    CHECK(all_once, "hand case: GLPK's placement holds every expert once");
    cluster_placement_release(&local);
    cluster_placement_release(&ilp);

    check_replicas_against_greedy();

    /* Past the deadline every layer is dealt round-robin, heaviest copy first: copy i on device
     * i mod D, slot i / D. Hand cases: */
    struct cluster_routing late = {.deadline = 1e-9}; /* monotonic_seconds() is past it at once */
    struct cluster_placement dealt;
    /* loads 6 3 3 2, 2 GPUs x 2 slots, no spare: 6 and 3 on GPU 0 (9), 3 and 2 on GPU 1 (5),
     * imbalance 9 / 7 */
    double four[4] = {6, 3, 3, 2};
    bool four_dealt = cluster_place(four, 1, 4, 1, 2, 2, &late, &dealt);
    CHECK(four_dealt && dealt.dealt_layers == 1 && dealt.gpu_imbalance_mean == 9.0 / 7 &&
              dealt.expert[0] == 0 && dealt.expert[1] == 2 && dealt.expert[2] == 1 && dealt.expert[3] == 3,
          "dealt: 6 3 3 2 on 2 GPUs x 2 slots is {6, 3} {3, 2}, imbalance 9/7");
    if (four_dealt)
        cluster_placement_release(&dealt);
    /* loads 8 2 on 4 GPUs x 1 slot: the 2 spare slots go to expert 0 (8 -> 4, then 4 > 2 -> 2.67),
     * its 3 copies on GPUs 0-2, expert 1 on GPU 3: max 8/3, mean 2.5 */
    double two[2] = {8, 2};
    bool two_dealt = cluster_place(two, 1, 2, 1, 4, 1, &late, &dealt);
    CHECK(two_dealt && dealt.expert[0] == 0 && dealt.expert[1] == 0 && dealt.expert[2] == 0 &&
              dealt.expert[3] == 1 && fabs(dealt.gpu_imbalance_mean - (8.0 / 3) / 2.5) < 1e-12,
          "dealt: 8 2 on 4 GPUs is 8/3 x 3 and 2, imbalance 1.0667");
    if (two_dealt)
        cluster_placement_release(&dealt);
    /* loads 9 3 on 2 domains x 1 GPU x 2 slots: a copy of each on each GPU, never two of one */
    double pair[2] = {9, 3};
    bool pair_dealt = cluster_place(pair, 1, 2, 2, 1, 2, &late, &dealt);
    CHECK(pair_dealt && dealt.expert[0] == 0 && dealt.expert[1] == 1 && dealt.expert[2] == 0 &&
              dealt.expert[3] == 1 && dealt.gpu_imbalance_mean == 1 && dealt.domain_imbalance_mean == 1,
          "dealt: 9 3 with a replica each on 2 GPUs x 2 slots: {9/2, 3/2} on each GPU");
    if (pair_dealt)
        cluster_placement_release(&dealt);
    return tap_done();
}
