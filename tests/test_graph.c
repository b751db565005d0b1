/* Interconnect summaries against hand arithmetic, published figures, and igraph's own BFS and
 * max-flow on the built graph. */
#include "graph.h"
#include "fixtures.h"
#include "tap.h"

#include <stdlib.h>
#include <unistd.h>

static struct topology torus(int64_t a, int64_t b, int64_t c, double link, bool wrap)
{
    struct topology t;
    memset(&t, 0, sizeof t);
    t.kind = DOMAIN_TORUS;
    t.dims = 3;
    int64_t sizes[3] = {a, b, c};
    t.domain_devices = 1;
    for (int d = 0; d < 3; d++) {
        t.dim_size[d] = sizes[d];
        t.dim_link_bytes_per_s[d] = link;
        t.dim_wrap[d] = wrap;
        t.domain_devices *= sizes[d];
    }
    t.nics_per_device = 1;
    t.nic_bytes_per_s = 1e9;
    return t;
}

static struct graph_summary analyse(const struct topology *t, int64_t domains)
{
    struct graph_summary s;
    if (graph_analyse(t, domains, &s) != GRAPH_OK) {
        printf("Bail out! graph_analyse failed\n");
        exit(1);
    }
    return s;
}

static void gb200(void)
{
    struct topology t = fixture_topology("topologies/gb200-nvl72.xml");
    struct graph_summary one = analyse(&t, 1), two = analyse(&t, 2);
    CHECK(one.domains == 1 && one.domain_size == 72, "GB200 NVL72: one scale-up domain of 72 GPUs");
    CHECK(two.domains == 2 && two.domain_size == 72, "two racks: igraph finds two components of 72");
    CHECK_EQ(one.pair_classes[0].bytes_per_s, 900e9, "same rack: 900 GB/s per direction (18 x 50 GB/s)");
    CHECK_EQ(one.pair_classes[0].hops, 2, "same rack: GPU, NVLink switch, GPU = 2 hops");
    CHECK(two.pair_class_count == 2, "two racks: two classes of pairs");
    CHECK_EQ(two.pair_classes[1].bytes_per_s, 50e9, "other rack: 50 GB/s (one 400 Gb/s NIC)");
    CHECK_EQ(two.pair_classes[0].bytes_per_s / two.pair_classes[1].bytes_per_s, 18, "leaving the rack is 18x slower");
    CHECK_EQ(one.bisection_bytes_per_s, 36 * 900e9, "a rack's bisection is 36 x 900 GB/s");
    CHECK_EQ(one.all_to_all_domain_bytes_per_s, 900e9, "all-to-all inside the rack runs at injection rate");
    /* two racks: a GPU's traffic to the other rack is 72 / 143 of its all-to-all; its NIC
     * carries 50 GB/s, so it can push 50 x 143 / 72 = 99.3 GB/s in all */
    CHECK_REL(two.all_to_all_cluster_bytes_per_s, 50e9 * 143 / 72, 1e-12, "cluster all-to-all is NIC-bound: 99.3 GB/s");
    CHECK_EQ(two.bisection_bytes_per_s, 72 * 50e9, "two racks' bisection: 72 NICs x 50 GB/s");
    double flow = 0;
    CHECK(graph_bisection_maxflow(&t, 1, &flow) == GRAPH_OK && flow == one.bisection_bytes_per_s,
          "igraph max-flow between the rack's halves equals 36 x 900 GB/s");
    CHECK(graph_bisection_maxflow(&t, 2, &flow) == GRAPH_OK && flow == two.bisection_bytes_per_s,
          "igraph max-flow between two racks equals 72 x 50 GB/s");
}

static void tori(void)
{
    struct topology t = torus(4, 4, 4, 100e9, true);
    struct graph_summary s = analyse(&t, 1);
    int64_t bfs = 0;
    CHECK_EQ(s.diameter_hops, 6, "4x4x4 torus with wrap-around: diameter 2 + 2 + 2 = 6");
    CHECK(graph_diameter_bfs(&t, 1, &bfs) == GRAPH_OK && bfs == 6, "igraph BFS diameter of the 4x4x4 torus is 6");
    /* cut across one dimension: 16 links in each of 2 planes (the wrap closes the ring) */
    CHECK_EQ(s.bisection_bytes_per_s, 2 * 16 * 100e9, "4x4x4 bisection: 2 x 16 links");
    double flow = 0;
    CHECK(graph_bisection_maxflow(&t, 1, &flow) == GRAPH_OK && flow == s.bisection_bytes_per_s,
          "igraph max-flow of the 4x4x4 torus equals the formula");
    /* mean distance on a ring of 4 over all 4 nodes is 1 per dimension; over the 63 others
     * 3 x 64 / 63 hops; the all-to-all is bisection-bound at 4 x 3.2 TB/s / 64 = 200 GB/s,
     * just above the per-dimension limit 2 links x 100 GB/s / (64 / 63) = 196.9 GB/s */
    CHECK_REL(s.mean_hops_domain, 3.0 * 64 / 63, 1e-12, "4x4x4 mean hops 3 x 64 / 63");
    CHECK_REL(s.all_to_all_domain_bytes_per_s, 2 * 100e9 * 63 / 64, 1e-12, "4x4x4 all-to-all per device");

    struct topology line = torus(3, 5, 2, 10e9, false);
    struct graph_summary l = analyse(&line, 1);
    CHECK(graph_diameter_bfs(&line, 1, &bfs) == GRAPH_OK && bfs == l.diameter_hops && bfs == 2 + 4 + 1,
          "3x5x2 mesh without wrap: diameter 7 by formula and by BFS");
    CHECK(graph_bisection_maxflow(&line, 1, &flow) == GRAPH_OK && flow == l.bisection_bytes_per_s &&
              flow == 15 * 10e9,
          "3x5x2 without wrap: cut across the last dimension, 15 links");
    struct topology odd = torus(3, 3, 6, 10e9, true);
    struct graph_summary o = analyse(&odd, 1);
    CHECK(graph_diameter_bfs(&odd, 1, &bfs) == GRAPH_OK && bfs == o.diameter_hops && bfs == 1 + 1 + 3,
          "3x3x6 torus: diameter 5 by formula and by BFS");
    CHECK(graph_bisection_maxflow(&odd, 1, &flow) == GRAPH_OK && flow == o.bisection_bytes_per_s,
          "3x3x6 torus: max-flow equals 2 x 9 links");

    /* published bisections: TPU v6e-256 3.2 TB/s (docs.cloud.google.com/tpu/docs/v6e) */
    struct topology v6e = fixture_topology("topologies/tpu-v6e-256.xml");
    CHECK_EQ(analyse(&v6e, 1).bisection_bytes_per_s, 3.2e12, "TPU v6e-256 bisection 16 x 2 x 100 GB/s = 3.2 TB/s (Google)");
    struct topology v5p = fixture_topology("topologies/tpu-v5p-pod.xml");
    struct graph_summary p = analyse(&v5p, 1);
    CHECK(p.domains == 1 && p.domain_size == 8960, "TPU v5p pod: igraph finds one domain of 8,960 chips");
    CHECK_EQ(p.diameter_hops, 8 + 10 + 14, "v5p 16x20x28 with wrap: diameter 32");
    CHECK_EQ(p.bisection_bytes_per_s, 8960.0 / 28 * 2 * 90e9, "v5p cut across the 28-chip dimension: 640 links x 90 GB/s");
    /* ~1 us per ICI hop (jax-ml.github.io/scaling-book/tpus): the farthest pair is 32 us away */
    CHECK_REL(p.pair_classes[1].latency_s, 32e-6, 1e-12, "v5p farthest pair: 32 hops x 1 us");
}

static void small_systems(void)
{
    struct topology h100 = fixture_topology("topologies/hgx-h100.xml");
    double flow = 0;
    for (int64_t racks = 1; racks <= 3; racks++) {
        struct graph_summary s = analyse(&h100, racks);
        CHECK(graph_bisection_maxflow(&h100, racks, &flow) == GRAPH_OK && flow == s.bisection_bytes_per_s,
              "%lld HGX H100: max-flow bisection %.4g equals the formula %.4g", (long long)racks, flow,
              s.bisection_bytes_per_s);
    }
    /* three nodes: 12 NICs x 50 GB/s + the split middle node's 4 x 450 GB/s = 2.4 TB/s */
    CHECK_EQ(analyse(&h100, 3).bisection_bytes_per_s, 2.4e12, "3 HGX H100: 600 GB/s of NICs + 1.8 TB/s NVLink");
    struct topology mi300x = fixture_topology("topologies/mi300x.xml");
    struct graph_summary m = analyse(&mi300x, 1);
    CHECK(m.diameter_hops == 1 && m.pair_classes[0].bytes_per_s == 64e9,
          "MI300X mesh: every pair 1 hop over one 64 GB/s link");
    CHECK(graph_bisection_maxflow(&mi300x, 1, &flow) == GRAPH_OK && flow == 16 * 64e9 &&
              m.bisection_bytes_per_s == flow,
          "MI300X bisection: 4 x 4 links x 64 GB/s");
    CHECK_EQ(m.all_to_all_domain_bytes_per_s, 7 * 64e9, "MI300X all-to-all: 7 links at once");
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    gb200();
    tori();
    small_systems();
    return tap_done();
}
