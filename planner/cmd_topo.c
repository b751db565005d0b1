/* cmd_topo.c: `rackplan topo FILE`: the hardware inventory of a topology. */
#include "cli.h"
#include "commands.h"
#include "graph.h"
#include "topology.h"

#include "../reports/json.h"

#include <inttypes.h>

/* The topology's <latency> floors, in the order both outputs list them. */
enum { LATENCY_FLOORS = 4 };
struct latency_floor {
    const char *key, *name;
    double seconds;
};

static void latency_floors(const struct topology *t, struct latency_floor out[LATENCY_FLOORS])
{
    const struct step_latency *f = &t->latency;
    out[0] = (struct latency_floor){"kernel_s", "kernel", f->kernel_s};
    out[1] = (struct latency_floor){"all_reduce_s", "all-reduce", f->all_reduce_s};
    out[2] = (struct latency_floor){"dispatch_s", "dispatch", f->dispatch_s};
    out[3] = (struct latency_floor){"combine_s", "combine", f->combine_s};
}

/* A quantity with at most 4 significant digits, thousands separated from 1,000 up ("8,000",
 * "225", "3.84"). */
static void format_figure(double value, char *buffer, size_t size)
{
    if (value >= 1000)
        format_count(value, buffer, size);
    else
        snprintf(buffer, size, "%.4g", value);
}

/* A time in the unit that reads best: ms under a second, s under two minutes, min under two
 * hours, h beyond. */
static void format_duration(double seconds, char *buffer, size_t size)
{
    if (seconds < 1)
        snprintf(buffer, size, "%.4g ms", seconds * 1e3);
    else if (seconds < 120)
        snprintf(buffer, size, "%.4g s", seconds);
    else if (seconds < 7200)
        snprintf(buffer, size, "%.4g min", seconds / 60);
    else
        snprintf(buffer, size, "%.4g h", seconds / 3600);
}

static void write_tiers_tree(struct json *j, const struct topology *t, double devices)
{
    json_key(j, "memory_tiers");
    json_begin_array(j);
    for (int i = 0; i < topology_tier_count(t); i++) {
        struct memory_tier m;
        topology_tier(t, i, &m);
        json_begin_object(j);
        json_key(j, "tier");
        json_string(j, topology_tier_kind_name(m.kind));
        json_key(j, "name");
        json_string(j, m.name);
        json_key(j, "capacity_bytes_per_device");
        json_number(j, m.bytes_per_device);
        json_key(j, "capacity_bytes_total");
        json_number(j, m.bytes_per_device * devices);
        json_key(j, "read_bytes_per_s_per_device");
        json_number(j, m.read_bytes_per_s_per_device);
        json_key(j, "write_bytes_per_s_per_device");
        json_positive_or_null(j, m.write_bytes_per_s_per_device);
        json_key(j, "link_bytes_per_s_per_device");
        json_positive_or_null(j, m.link_bytes_per_s_per_device);
        json_key(j, "drain_s");
        json_number(j, topology_tier_drain_s(t, i));
        json_key(j, "usd_per_gb_hour");
        json_positive_or_null(j, m.usd_per_gb_hour);
        json_end_object(j);
    }
    json_end_array(j);
}

static void write_tiers_text(FILE *out, const struct topology *t, double devices)
{
    fprintf(out, "\nmemory tiers, per device (drain: capacity / read bandwidth)\n");
    fprintf(out, "  %-7s %-26s %10s %12s %11s %11s %10s %8s\n", "tier", "name", "GB", "cluster GB", "read GB/s",
            "write GB/s", "drain", "$/GB-h");
    for (int i = 0; i < topology_tier_count(t); i++) {
        struct memory_tier m;
        topology_tier(t, i, &m);
        char gb[32], total[32], read[32], write[32] = "-", drain[32], price[32] = "-";
        format_figure(m.bytes_per_device / 1e9, gb, sizeof gb);
        format_figure(m.bytes_per_device * devices / 1e9, total, sizeof total);
        format_figure(m.read_bytes_per_s_per_device / 1e9, read, sizeof read);
        if (m.write_bytes_per_s_per_device > 0)
            format_figure(m.write_bytes_per_s_per_device / 1e9, write, sizeof write);
        format_duration(topology_tier_drain_s(t, i), drain, sizeof drain);
        if (m.usd_per_gb_hour > 0)
            snprintf(price, sizeof price, "%.3g", m.usd_per_gb_hour);
        fprintf(out, "  %-7s %-26.26s %10s %12s %11s %11s %10s %8s\n", topology_tier_kind_name(m.kind), m.name, gb, total,
                read, write, drain, price);
    }
    if (t->tier_count == 0)
        fprintf(out, "  (no tier below HBM: the topology lists none; its file says why)\n");
}

static void write_tree(FILE *out, enum json_syntax syntax, const struct topology *t, int64_t racks,
                       const struct graph_summary *g)
{
    double devices = (double)racks * (double)t->domain_devices;
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    json_key(&j, "name");
    json_string(&j, t->name);
    json_key(&j, "status");
    json_string(&j, t->announced ? "announced" : "shipping");
    json_key(&j, "accelerator");
    json_string(&j, t->accelerator);
    json_key(&j, "devices");
    json_number(&j, devices);
    json_key(&j, "domains");
    json_int(&j, racks);
    json_key(&j, "domain_size");
    json_int(&j, t->domain_devices);
    json_key(&j, "domain_kind");
    json_string(&j, topology_kind_name(t->kind));
    if (t->kind == DOMAIN_TORUS) {
        json_key(&j, "torus_dims");
        json_begin_array(&j);
        for (int i = 0; i < t->dims; i++)
            json_int(&j, t->dim_size[i]);
        json_end_array(&j);
    }
    json_key(&j, "hbm_bytes_per_device");
    json_number(&j, t->hbm_bytes);
    json_key(&j, "hbm_bytes_total");
    json_number(&j, t->hbm_bytes * devices);
    json_key(&j, "hbm_bytes_per_s_per_device");
    json_number(&j, t->hbm_bytes_per_s);
    write_tiers_tree(&j, t, devices);
    json_key(&j, "peak_flops_per_s_per_device");
    json_begin_object(&j);
    for (int p = 0; p < PREC_COUNT; p++) {
        if (t->peak_flops_per_s[p] > 0) {
            json_key(&j, precision_name((enum precision)p));
            json_number(&j, t->peak_flops_per_s[p]);
        }
    }
    json_end_object(&j);
    json_key(&j, "scale_up_bytes_per_s_per_device");
    json_number(&j, topology_scale_up_bytes_per_s(t));
    json_key(&j, "scale_out_bytes_per_s_per_device");
    json_number(&j, topology_scale_out_bytes_per_s(t));
    json_key(&j, "scale_up_to_scale_out");
    json_number(&j, topology_scale_up_bytes_per_s(t) / topology_scale_out_bytes_per_s(t));
    json_key(&j, "scale_up_domains");
    json_begin_object(&j);
    json_key(&j, "count");
    json_int(&j, g->domains);
    json_key(&j, "size");
    json_int(&j, g->domain_size);
    json_end_object(&j);
    json_key(&j, "pair_classes");
    json_begin_array(&j);
    for (int i = 0; i < g->pair_class_count; i++) {
        json_begin_object(&j);
        json_key(&j, "class");
        json_string(&j, g->pair_classes[i].name);
        json_key(&j, "bytes_per_s");
        json_number(&j, g->pair_classes[i].bytes_per_s);
        json_key(&j, "hops");
        json_int(&j, g->pair_classes[i].hops);
        json_key(&j, "latency_s");
        json_positive_or_null(&j, g->pair_classes[i].latency_s);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_key(&j, "all_to_all_bytes_per_s_per_device");
    json_begin_object(&j);
    json_key(&j, "domain");
    json_number(&j, g->all_to_all_domain_bytes_per_s);
    json_key(&j, "cluster");
    json_number(&j, g->all_to_all_cluster_bytes_per_s);
    json_end_object(&j);
    json_key(&j, "bisection_bytes_per_s");
    json_number(&j, g->bisection_bytes_per_s);
    json_key(&j, "domain_bisection_bytes_per_s");
    json_number(&j, g->domain_bisection_bytes_per_s);
    json_key(&j, "diameter_hops");
    json_int(&j, g->diameter_hops);
    json_key(&j, "mean_hops_in_domain");
    json_number(&j, g->mean_hops_domain);
    json_key(&j, "graph");
    json_begin_object(&j);
    json_key(&j, "vertices");
    json_int(&j, g->vertices);
    json_key(&j, "edges");
    if (g->edges >= 0)
        json_int(&j, g->edges);
    else
        json_null(&j);
    json_end_object(&j);
    json_key(&j, "power_watts_per_device");
    json_positive_or_null(&j, t->power_watts);
    json_key(&j, "price_usd_per_device_hour");
    json_positive_or_null(&j, t->price_usd_per_hour);
    json_key(&j, "family");
    json_string(&j, t->family);
    json_key(&j, "latency");
    json_begin_object(&j);
    struct latency_floor floors[LATENCY_FLOORS];
    latency_floors(t, floors);
    for (int i = 0; i < LATENCY_FLOORS; i++) {
        json_key(&j, floors[i].key);
        json_positive_or_null(&j, floors[i].seconds);
    }
    json_end_object(&j);
    json_end_object(&j);
    json_finish(&j);
}

static void write_text(FILE *out, const struct topology *t, int64_t racks,
                       const struct graph_summary *g)
{
    double devices = (double)racks * (double)t->domain_devices;
    char a[64], b[64];
    format_count(devices, a, sizeof a);
    fprintf(out, "%s%s: %s devices of %s\n", t->name,
            t->announced ? " (announced, not shipping)" : "", a, t->accelerator);
    format_count((double)t->domain_devices, b, sizeof b);
    fprintf(out, "  %" PRId64 " scale-up domain%s of %s devices, %s", racks, racks == 1 ? "" : "s",
            b, topology_kind_name(t->kind));
    if (t->kind == DOMAIN_TORUS) {
        fprintf(out, " ");
        for (int i = 0; i < t->dims; i++)
            fprintf(out, "%s%" PRId64, i ? "x" : "", t->dim_size[i]);
    }
    fprintf(out, "\n\nper device\n");
    format_gb(t->hbm_bytes, a, sizeof a);
    fprintf(out, "  HBM            %s GB at %.4g TB/s\n", a, t->hbm_bytes_per_s / 1e12);
    for (int p = 0; p < PREC_COUNT; p++) {
        if (t->peak_flops_per_s[p] > 0) {
            format_count(t->peak_flops_per_s[p] / 1e12, a, sizeof a);
            fprintf(out, "  peak %-5s     %s TFLOP/s dense\n", precision_name((enum precision)p), a);
        }
    }
    fprintf(out, "  scale-up       %.4g GB/s per direction\n", topology_scale_up_bytes_per_s(t) / 1e9);
    fprintf(out, "  scale-out      %.4g GB/s per direction (%.3gx slower)\n",
            topology_scale_out_bytes_per_s(t) / 1e9,
            topology_scale_up_bytes_per_s(t) / topology_scale_out_bytes_per_s(t));
    if (t->power_watts > 0)
        fprintf(out, "  power          %.4g W\n", t->power_watts);
    if (t->price_usd_per_hour > 0)
        fprintf(out, "  price          $%.2f per hour\n", t->price_usd_per_hour);
    fprintf(out, "  family         %s\n", t->family);
    struct latency_floor floors[LATENCY_FLOORS];
    latency_floors(t, floors);
    fprintf(out, "  latency floors");
    bool any = false;
    for (int i = 0; i < LATENCY_FLOORS; i++) {
        if (floors[i].seconds > 0) {
            fprintf(out, "%s%s %.3g us", any ? ", " : " ", floors[i].name, floors[i].seconds * 1e6);
            any = true;
        }
    }
    fprintf(out, "%s\n", any ? "" : " none published (a step's kernels and collectives add no floor)");
    write_tiers_text(out, t, devices);
    format_count(t->hbm_bytes * devices / 1e9, a, sizeof a);
    fprintf(out, "\ncluster\n  HBM            %s GB\n", a);
    format_count((double)g->domains, a, sizeof a);
    format_count((double)g->domain_size, b, sizeof b);
    fprintf(out, "  scale-up domains  %s of %s devices (components of the graph)\n", a, b);
    fprintf(out, "  pairs of devices\n");
    for (int i = 0; i < g->pair_class_count; i++) {
        fprintf(out, "    %-26s %10.4g GB/s per direction, %lld hop%s", g->pair_classes[i].name,
                g->pair_classes[i].bytes_per_s / 1e9, (long long)g->pair_classes[i].hops,
                g->pair_classes[i].hops == 1 ? "" : "s");
        if (g->pair_classes[i].latency_s > 0)
            fprintf(out, ", %.3g us", g->pair_classes[i].latency_s * 1e6);
        fprintf(out, "\n");
    }
    fprintf(out, "  all-to-all per device: %.4g GB/s in a domain, %.4g GB/s across the cluster\n",
            g->all_to_all_domain_bytes_per_s / 1e9, g->all_to_all_cluster_bytes_per_s / 1e9);
    format_count(g->bisection_bytes_per_s / 1e9, a, sizeof a);
    format_count(g->domain_bisection_bytes_per_s / 1e9, b, sizeof b);
    fprintf(out, "  bisection: %s GB/s per direction (one domain: %s GB/s)\n", a, b);
    fprintf(out, "  diameter: %lld hops inside a domain (mean %.3g)\n", (long long)g->diameter_hops,
            g->mean_hops_domain);
}

int cmd_topo(int argc, char **argv)
{
    struct options o;
    int status = cli_parse(&command_topo, argc, argv, &o);
    if (status >= 0)
        return status;
    struct topology t;
    if ((status = cli_load_topology(o.positional[0], &t)) != EXIT_OK)
        return status;
    if ((status = cli_resolve(&o, NULL, &t)) != EXIT_OK)
        return status;
    struct graph_summary g;
    if (o.format != FORMAT_DOT && graph_analyse(&t, o.racks, &g) != GRAPH_OK) {
        fprintf(stderr, "rackplan topo: the interconnect graph could not be built (out of memory)\n");
        return EXIT_IO;
    }
    struct sink sink;
    if (!sink_open(&sink, o.output))
        return EXIT_IO;
    bool written = true;
    enum json_syntax syntax;
    if (cli_tree_format(o.format, &syntax))
        write_tree(sink.out, syntax, &t, o.racks, &g);
    else if (o.format == FORMAT_DOT)
        written = graph_write_dot(&t, o.racks, sink.out) == GRAPH_OK;
    else
        write_text(sink.out, &t, o.racks, &g);
    if (!written) {
        sink_abort(&sink);
        fprintf(stderr, "rackplan topo: the interconnect graph could not be built (out of memory)\n");
        return EXIT_IO;
    }
    return sink_commit(&sink) ? EXIT_OK : EXIT_IO;
}
