/* graph.h: how fast devices can talk, from a topology: the interconnect as a graph.
 *
 * The only module that includes igraph. The graph has one vertex per device, one per switch
 * chip of each switched domain, and, when there are several domains, one for the scale-out
 * fabric (a non-blocking leaf/spine, counted as one hop). Edges carry bytes/s per direction.
 * Summaries use the structure (closed forms for switches, meshes and tori), so 9,216-chip pods
 * need no all-pairs search; igraph builds the graph to find the scale-up domains, and computes
 * diameter (BFS) and bisection (max-flow) directly for cross-checking on small systems.
 * A hop is one link: device-switch-device is 2, torus neighbours 1, other domain 2.
 */
#ifndef RACKPLAN_GRAPH_H
#define RACKPLAN_GRAPH_H

#include "topology.h"

#include <stdint.h>
#include <stdio.h>

#define GRAPH_MAX_CLASSES 4

enum graph_status {
    GRAPH_OK = 0,
    GRAPH_TOO_LARGE = 2, /* more vertices than graph_build allows */
    GRAPH_FAILED = 5,    /* igraph reported an error (out of memory) */
};

struct pair_class {
    char name[40];
    double bytes_per_s; /* one pair alone, per direction, over a single route */
    int64_t hops;
    double latency_s;   /* hops x the file's hop latency (scale-out latency across domains);
                         * 0 when the file gives none */
};

struct graph_summary {
    int64_t devices;
    int64_t vertices; /* devices, switch chips and the scale-out fabric */
    int64_t edges;
    int64_t domains;     /* components over scale-up links, found by igraph */
    int64_t domain_size; /* devices in each (all equal) */
    int pair_class_count;
    struct pair_class pair_classes[GRAPH_MAX_CLASSES];
    double all_to_all_domain_bytes_per_s;  /* per device, among the devices of its domain */
    double all_to_all_cluster_bytes_per_s; /* per device, among all devices */
    double bisection_bytes_per_s;          /* per direction, first half of devices vs second */
    double domain_bisection_bytes_per_s;   /* the same inside one domain */
    int64_t diameter_hops;                 /* inside a domain, over scale-up links */
    double mean_hops_domain;               /* mean over pairs of distinct devices of a domain */
};

/* Summarises `domains` copies of the topology's scale-up domain. Builds the igraph graph to
 * count the domains when it has at most GRAPH_MAX_VERTICES vertices (beyond, edges is -1 and
 * the domains are counted by structure). */
#define GRAPH_MAX_VERTICES 4000000
enum graph_status graph_analyse(const struct topology *t, int64_t domains,
                                struct graph_summary *out);

/* Cross-checks on the graph itself, for small systems: the BFS diameter inside one domain, and
 * the max-flow between the first and the second half of the devices (per direction). */
enum graph_status graph_diameter_bfs(const struct topology *t, int64_t domains, int64_t *out);
enum graph_status graph_bisection_maxflow(const struct topology *t, int64_t domains,
                                          double *out);

/* Graphviz: small systems device by device; larger ones one node per domain, per switch plane
 * and for the scale-out fabric. */
enum graph_status graph_write_dot(const struct topology *t, int64_t domains, FILE *out);

#endif
