/* graph.c: see graph.h. The only file that includes igraph. */
#include "graph.h"

#include <igraph.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

/* The igraph this is built with is not thread-safe (igraph_threading.h: IGRAPH_THREAD_SAFE 0:
 * its error handlers and scratch state are global), and searches may run on several threads
 * (serve_background_start): every call into it goes through this lock. */
static pthread_mutex_t igraph_lock = PTHREAD_MUTEX_INITIALIZER;

/* igraph's default handler aborts the process; ours returns the error code to the caller. */
static void install_handlers(void)
{
    static int installed;
    if (!installed) {
        igraph_set_error_handler(igraph_error_handler_ignore);
        igraph_set_warning_handler(igraph_warning_handler_ignore);
        installed = 1;
    }
}

static int64_t domain_devices(const struct topology *t) { return t->domain_devices; }

/* Links a device has in torus dimension d: none in a dimension of size 1, one in size 2 (both
 * neighbours are the same chip), two otherwise (an unwrapped line's ends have one). */
static int links_in_dimension(const struct topology *t, int d)
{
    return t->dim_size[d] == 1 ? 0 : t->dim_size[d] == 2 ? 1 : 2;
}

/* Mean distance from a node of a ring (wrap) or line of k nodes to all k nodes, itself too. */
static double mean_distance(int64_t k, bool wrap)
{
    double n = (double)k;
    if (k <= 1)
        return 0;
    if (wrap)
        return k % 2 == 0 ? n / 4 : (n * n - 1) / (4 * n);
    return (n * n - 1) / (3 * n);
}

static int64_t switch_vertices_per_domain(const struct topology *t)
{
    return t->kind == DOMAIN_SWITCHED ? t->switches : 0;
}

struct built {
    igraph_t graph;
    igraph_vector_t capacity;
    int64_t devices;
    int64_t vertices;
};

struct edge_list {
    igraph_vector_int_t ends;
    igraph_vector_t capacity;
};

static igraph_error_t add_edge(struct edge_list *e, int64_t a, int64_t b, double bytes_per_s)
{
    IGRAPH_CHECK(igraph_vector_int_push_back(&e->ends, a));
    IGRAPH_CHECK(igraph_vector_int_push_back(&e->ends, b));
    IGRAPH_CHECK(igraph_vector_push_back(&e->capacity, bytes_per_s));
    return IGRAPH_SUCCESS;
}

/* Edges of domain `d` whose devices start at `first`. */
static igraph_error_t add_domain(struct edge_list *e, const struct topology *t, int64_t first,
                                 int64_t first_switch)
{
    int64_t n = domain_devices(t);
    switch (t->kind) {
    case DOMAIN_SWITCHED: {
        double per_switch = (double)t->links_per_device * t->link_bytes_per_s / (double)t->switches;
        for (int64_t i = 0; i < n; i++)
            for (int64_t s = 0; s < t->switches; s++)
                IGRAPH_CHECK(add_edge(e, first + i, first_switch + s, per_switch));
        break;
    }
    case DOMAIN_MESH:
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = i + 1; j < n; j++)
                IGRAPH_CHECK(add_edge(e, first + i, first + j, t->link_bytes_per_s));
        break;
    case DOMAIN_TORUS:
        for (int64_t i = 0; i < n; i++) {
            int64_t stride = 1;
            for (int d = 0; d < t->dims; d++) {
                int64_t k = t->dim_size[d];
                int64_t coordinate = (i / stride) % k;
                bool last = coordinate == k - 1;
                /* each link once: from a chip to its + neighbour, the wrap link from the last */
                if (k > 1 && (!last || (t->dim_wrap[d] && k > 2))) {
                    int64_t neighbour = last ? i - coordinate * stride : i + stride;
                    IGRAPH_CHECK(add_edge(e, first + i, first + neighbour, t->dim_link_bytes_per_s[d]));
                }
                stride *= k;
            }
        }
        break;
    }
    return IGRAPH_SUCCESS;
}

/* The graph of `domains` domains; with `scale_out` the fabric vertex and NIC edges; with
 * `terminals` two extra vertices joined to the first and second half of the devices with
 * unlimited capacity (for max-flow). */
static igraph_error_t build(const struct topology *t, int64_t domains, bool scale_out,
                            bool terminals, struct built *b)
{
    int64_t n = domain_devices(t);
    int64_t devices = n * domains;
    int64_t switches = switch_vertices_per_domain(t);
    int64_t vertices = devices + switches * domains;
    int64_t fabric = scale_out && domains > 1 ? vertices++ : -1;
    int64_t source = terminals ? vertices++ : -1;
    int64_t sink = terminals ? vertices++ : -1;
    struct edge_list e;
    IGRAPH_CHECK(igraph_vector_int_init(&e.ends, 0));
    IGRAPH_FINALLY(igraph_vector_int_destroy, &e.ends);
    IGRAPH_CHECK(igraph_vector_init(&e.capacity, 0));
    IGRAPH_FINALLY(igraph_vector_destroy, &e.capacity);
    for (int64_t d = 0; d < domains; d++)
        IGRAPH_CHECK(add_domain(&e, t, d * n, devices + d * switches));
    if (fabric >= 0)
        for (int64_t i = 0; i < devices; i++)
            IGRAPH_CHECK(add_edge(&e, i, fabric, topology_scale_out_bytes_per_s(t)));
    if (terminals)
        for (int64_t i = 0; i < devices; i++)
            IGRAPH_CHECK(add_edge(&e, i < devices / 2 ? source : sink, i, 1e30));
    IGRAPH_CHECK(igraph_create(&b->graph, &e.ends, vertices, IGRAPH_UNDIRECTED));
    igraph_vector_int_destroy(&e.ends);
    IGRAPH_FINALLY_CLEAN(2);
    b->capacity = e.capacity;
    b->devices = devices;
    b->vertices = vertices;
    return IGRAPH_SUCCESS;
}

static void release(struct built *b)
{
    igraph_destroy(&b->graph);
    igraph_vector_destroy(&b->capacity);
}

static bool too_large(const struct topology *t, int64_t domains)
{
    double vertices = (double)domains * (double)(domain_devices(t) + switch_vertices_per_domain(t));
    double mesh_edges = t->kind == DOMAIN_MESH
                            ? (double)domains * (double)t->domain_devices * (double)t->domain_devices / 2
                            : 0;
    return vertices > GRAPH_MAX_VERTICES || mesh_edges > GRAPH_MAX_VERTICES;
}

/* ---- closed forms ---- */

static int64_t domain_diameter(const struct topology *t)
{
    switch (t->kind) {
    case DOMAIN_SWITCHED:
        return t->domain_devices > 1 ? 2 : 0;
    case DOMAIN_MESH:
        return t->domain_devices > 1 ? 1 : 0;
    default: {
        int64_t hops = 0;
        for (int d = 0; d < t->dims; d++)
            hops += t->dim_wrap[d] ? t->dim_size[d] / 2 : t->dim_size[d] - 1;
        return hops;
    }
    }
}

/* Cut between the first and second half of a domain's devices, per direction. A torus is cut
 * across its last dimension of even size (device order runs dimension 0 fastest), crossing
 * devices / size links in each of the (wrap ? 2 : 1) planes. */
static double domain_bisection(const struct topology *t)
{
    double n = (double)t->domain_devices;
    double half = floor(n / 2);
    switch (t->kind) {
    case DOMAIN_SWITCHED:
        return half * topology_scale_up_bytes_per_s(t);
    case DOMAIN_MESH:
        return half * (n - half) * t->link_bytes_per_s;
    default:
        for (int d = t->dims - 1; d >= 0; d--) {
            if (t->dim_size[d] > 1) {
                double k = (double)t->dim_size[d];
                int planes = t->dim_wrap[d] && t->dim_size[d] > 2 ? 2 : 1;
                return n / k * planes * t->dim_link_bytes_per_s[d];
            }
        }
        return 0;
    }
}

/* Mean hops between distinct devices of a domain. */
static double domain_mean_hops(const struct topology *t)
{
    double n = (double)t->domain_devices;
    if (n <= 1)
        return 0;
    if (t->kind != DOMAIN_TORUS)
        return (double)domain_diameter(t);
    double total = 0;
    for (int d = 0; d < t->dims; d++)
        total += mean_distance(t->dim_size[d], t->dim_wrap[d]);
    return total * n / (n - 1);
}

/* What one device can send in a uniform all-to-all among the n devices of its domain: at most
 * its injection bandwidth, 4 x bisection / n (a quarter of the traffic crosses each way), and
 * on a torus, for each dimension, its links there / mean distance travelled there. */
static double domain_all_to_all(const struct topology *t)
{
    double n = (double)t->domain_devices;
    if (n <= 1)
        return 0;
    double rate = topology_scale_up_bytes_per_s(t);
    double bisection_limit = 4 * domain_bisection(t) / n;
    if (bisection_limit < rate)
        rate = bisection_limit;
    if (t->kind == DOMAIN_TORUS) {
        for (int d = 0; d < t->dims; d++) {
            double distance = mean_distance(t->dim_size[d], t->dim_wrap[d]) * n / (n - 1);
            if (distance <= 0)
                continue;
            double limit = links_in_dimension(t, d) * t->dim_link_bytes_per_s[d] / distance;
            if (limit < rate)
                rate = limit;
        }
    }
    return rate;
}

static void pair_classes(const struct topology *t, int64_t domains, struct graph_summary *s)
{
    int c = 0;
    if (t->domain_devices > 1) {
        if (t->kind == DOMAIN_TORUS) {
            double fastest = 0, slowest = INFINITY;
            for (int d = 0; d < t->dims; d++) {
                if (t->dim_size[d] <= 1)
                    continue;
                if (t->dim_link_bytes_per_s[d] > fastest)
                    fastest = t->dim_link_bytes_per_s[d];
                if (t->dim_link_bytes_per_s[d] < slowest)
                    slowest = t->dim_link_bytes_per_s[d];
            }
            s->pair_classes[c++] =
                (struct pair_class){"same domain, neighbours", fastest, 1, t->hop_latency_s};
            s->pair_classes[c++] = (struct pair_class){"same domain, farthest", slowest, domain_diameter(t),
                                                       (double)domain_diameter(t) * t->hop_latency_s};
        } else {
            double bytes = t->kind == DOMAIN_MESH ? t->link_bytes_per_s : topology_scale_up_bytes_per_s(t);
            s->pair_classes[c++] = (struct pair_class){"same domain", bytes, domain_diameter(t),
                                                       (double)domain_diameter(t) * t->hop_latency_s};
        }
    }
    if (domains > 1)
        s->pair_classes[c++] = (struct pair_class){"other domain", topology_scale_out_bytes_per_s(t),
                                                   2, t->scale_out_latency_s};
    s->pair_class_count = c;
}

static enum graph_status graph_analyse_locked(const struct topology *t, int64_t domains,
                                struct graph_summary *out)
{
    install_handlers();
    struct graph_summary s;
    memset(&s, 0, sizeof s);
    int64_t n = t->domain_devices;
    s.devices = n * domains;

    /* The domains are what the scale-up links connect: igraph counts the components (beyond
     * GRAPH_MAX_VERTICES the structure says it: one per domain). */
    s.domains = domains;
    s.domain_size = n;
    s.vertices = domains * (n + switch_vertices_per_domain(t)) + (domains > 1 ? 1 : 0);
    s.edges = -1;
    if (!too_large(t, domains)) {
        struct built b;
        if (build(t, domains, false, false, &b) != IGRAPH_SUCCESS)
            return GRAPH_FAILED;
        igraph_vector_int_t sizes;
        igraph_integer_t components = 0;
        igraph_error_t status = igraph_vector_int_init(&sizes, 0);
        if (status == IGRAPH_SUCCESS) {
            status = igraph_connected_components(&b.graph, NULL, &sizes, &components, IGRAPH_WEAK);
            if (status == IGRAPH_SUCCESS && components > 0)
                s.domain_size = VECTOR(sizes)[0] - switch_vertices_per_domain(t);
            igraph_vector_int_destroy(&sizes);
        }
        s.edges = (int64_t)igraph_ecount(&b.graph) + (domains > 1 ? s.devices : 0);
        release(&b);
        if (status != IGRAPH_SUCCESS)
            return GRAPH_FAILED;
        s.domains = components;
    }

    s.diameter_hops = domain_diameter(t);
    s.mean_hops_domain = domain_mean_hops(t);
    s.domain_bisection_bytes_per_s = domain_bisection(t);
    s.all_to_all_domain_bytes_per_s = domain_all_to_all(t);
    double devices = (double)s.devices;
    double nic = topology_scale_out_bytes_per_s(t);
    if (domains == 1) {
        s.bisection_bytes_per_s = s.domain_bisection_bytes_per_s;
        s.all_to_all_cluster_bytes_per_s = s.all_to_all_domain_bytes_per_s;
    } else {
        /* Halves of the device list: whole domains on each side when their count is even;
         * otherwise the middle domain is split, and its halves also talk over scale-up. */
        double half = floor(devices / 2);
        s.bisection_bytes_per_s = half * nic + (domains % 2 ? s.domain_bisection_bytes_per_s : 0);
        double outside = (devices - (double)n) / (devices - 1);
        double inside = ((double)n - 1) / (devices - 1);
        double rate = nic / outside;
        if (inside > 0 && s.all_to_all_domain_bytes_per_s / inside < rate)
            rate = s.all_to_all_domain_bytes_per_s / inside;
        if (4 * s.bisection_bytes_per_s / devices < rate)
            rate = 4 * s.bisection_bytes_per_s / devices;
        s.all_to_all_cluster_bytes_per_s = rate;
    }
    pair_classes(t, domains, &s);
    *out = s;
    return GRAPH_OK;
}

static enum graph_status graph_diameter_bfs_locked(const struct topology *t, int64_t domains, int64_t *out)
{
    install_handlers();
    if (too_large(t, domains))
        return GRAPH_TOO_LARGE;
    struct built b;
    if (build(t, 1, false, false, &b) != IGRAPH_SUCCESS)
        return GRAPH_FAILED;
    igraph_real_t diameter = 0;
    igraph_error_t status = igraph_diameter(&b.graph, &diameter, NULL, NULL, NULL, NULL,
                                            IGRAPH_UNDIRECTED, true);
    release(&b);
    if (status != IGRAPH_SUCCESS)
        return GRAPH_FAILED;
    *out = (int64_t)diameter;
    return GRAPH_OK;
}

static enum graph_status graph_bisection_maxflow_locked(const struct topology *t, int64_t domains, double *out)
{
    install_handlers();
    if (too_large(t, domains))
        return GRAPH_TOO_LARGE;
    struct built b;
    if (build(t, domains, true, true, &b) != IGRAPH_SUCCESS)
        return GRAPH_FAILED;
    igraph_real_t flow = 0;
    igraph_error_t status = igraph_maxflow_value(&b.graph, &flow, b.vertices - 2, b.vertices - 1,
                                                 &b.capacity, NULL);
    release(&b);
    if (status != IGRAPH_SUCCESS)
        return GRAPH_FAILED;
    *out = flow;
    return GRAPH_OK;
}

/* ---- Graphviz ---- */

#define DOT_DEVICE_LIMIT 128

static enum graph_status graph_write_dot_locked(const struct topology *t, int64_t domains, FILE *out)
{
    int64_t n = t->domain_devices;
    double devices = (double)n * (double)domains;
    fprintf(out, "graph \"%s\" {\n  node [shape=box, fontname=\"Helvetica\"];\n", t->name);
    if (devices > DOT_DEVICE_LIMIT) {
        /* one node per domain (up to 16 of them drawn), one for the scale-out fabric */
        int64_t drawn = domains < 16 ? domains : 16;
        for (int64_t d = 0; d < drawn; d++) {
            fprintf(out, "  domain%lld [label=\"domain %lld\\n%lld x %s\\n%s", (long long)d,
                    (long long)d, (long long)n, t->accelerator, topology_kind_name(t->kind));
            if (t->kind == DOMAIN_TORUS) {
                fprintf(out, " ");
                for (int i = 0; i < t->dims; i++)
                    fprintf(out, "%s%lld", i ? "x" : "", (long long)t->dim_size[i]);
            } else if (t->kind == DOMAIN_SWITCHED) {
                fprintf(out, ", %lld switch chips", (long long)t->switches);
            }
            fprintf(out, "\\n%.4g GB/s per device\"];\n", topology_scale_up_bytes_per_s(t) / 1e9);
        }
        if (drawn < domains)
            fprintf(out, "  more [label=\"%lld more domains\", shape=plaintext];\n",
                    (long long)(domains - drawn));
        if (domains > 1) {
            fprintf(out, "  fabric [label=\"scale-out fabric\\n%.4g GB/s per device\", shape=ellipse];\n",
                    topology_scale_out_bytes_per_s(t) / 1e9);
            for (int64_t d = 0; d < drawn; d++)
                fprintf(out, "  domain%lld -- fabric [label=\"%lld NICs\"];\n", (long long)d,
                        (long long)n);
        }
        fprintf(out, "}\n");
        return GRAPH_OK;
    }
    install_handlers();
    struct built b;
    if (build(t, domains, true, false, &b) != IGRAPH_SUCCESS)
        return GRAPH_FAILED;
    int64_t switches = switch_vertices_per_domain(t) * domains;
    for (int64_t v = 0; v < b.vertices; v++) {
        if (v < b.devices)
            fprintf(out, "  v%lld [label=\"device %lld\"];\n", (long long)v, (long long)v);
        else if (v < b.devices + switches)
            fprintf(out, "  v%lld [label=\"switch %lld\", shape=ellipse];\n", (long long)v,
                    (long long)(v - b.devices));
        else
            fprintf(out, "  v%lld [label=\"scale-out fabric\", shape=ellipse];\n", (long long)v);
    }
    for (igraph_integer_t e = 0; e < igraph_ecount(&b.graph); e++)
        fprintf(out, "  v%lld -- v%lld [label=\"%.4g GB/s\"];\n", (long long)IGRAPH_FROM(&b.graph, e),
                (long long)IGRAPH_TO(&b.graph, e), VECTOR(b.capacity)[e] / 1e9);
    fprintf(out, "}\n");
    release(&b);
    return GRAPH_OK;
}

enum graph_status graph_analyse(const struct topology *t, int64_t domains,
                                struct graph_summary *out)
{
    pthread_mutex_lock(&igraph_lock);
    enum graph_status status = graph_analyse_locked(t, domains, out);
    pthread_mutex_unlock(&igraph_lock);
    return status;
}

enum graph_status graph_diameter_bfs(const struct topology *t, int64_t domains, int64_t *out)
{
    pthread_mutex_lock(&igraph_lock);
    enum graph_status status = graph_diameter_bfs_locked(t, domains, out);
    pthread_mutex_unlock(&igraph_lock);
    return status;
}

enum graph_status graph_bisection_maxflow(const struct topology *t, int64_t domains, double *out)
{
    pthread_mutex_lock(&igraph_lock);
    enum graph_status status = graph_bisection_maxflow_locked(t, domains, out);
    pthread_mutex_unlock(&igraph_lock);
    return status;
}

enum graph_status graph_write_dot(const struct topology *t, int64_t domains, FILE *out)
{
    pthread_mutex_lock(&igraph_lock);
    enum graph_status status = graph_write_dot_locked(t, domains, out);
    pthread_mutex_unlock(&igraph_lock);
    return status;
}
