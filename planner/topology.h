/* topology.h: the hardware: one accelerator type, its scale-up domain, the scale-out network,
 * and how many domains form the default cluster.
 *
 * Read from XML (schemas/topology.xsd, embedded in the binary). This is the only module that
 * includes libxml2. Parsing never touches the network, never loads a DTD, never expands
 * entities and refuses a DOCTYPE. All quantities are SI base units; bandwidths are bytes/s per
 * direction; FLOP/s are dense.
 */
#ifndef RACKPLAN_TOPOLOGY_H
#define RACKPLAN_TOPOLOGY_H

#include "diag.h"
#include "precision.h"

#include <stdbool.h>
#include <stdint.h>

#define TOPOLOGY_MAX_DIMS 4
#define TOPOLOGY_MAX_BYTES (16u << 20)
#define TOPOLOGY_MAX_DOMAIN_DEVICES 1000000

enum domain_kind { DOMAIN_SWITCHED, DOMAIN_MESH, DOMAIN_TORUS };

/* Achieved fractions of peak, and a fixed time every step costs (kernel launches, scheduling,
 * sampling). EFFICIENCY_BOUND, every fraction 1 and no overhead, makes each time a lower bound. */
struct efficiency {
    double compute;   /* FLOP/s */
    double memory;    /* HBM bytes/s */
    double scale_up;  /* scale-up links: EP inside a domain, TP, pipeline sends inside a domain */
    double scale_out; /* NICs: EP across domains, pipeline sends across */
    double step_overhead_s;
    double experts;   /* routed experts' matmuls and weight reads, on top of compute and memory:
                       * grouped GEMMs of a few tokens each and scattered reads run slower */
    double latency;   /* times the topology's latency floors a step takes, >= 1 */
    double sequence_s; /* host time a step spends on each sequence of a data-parallel rank
                        * (scheduling, sampling, KV-cache bookkeeping), the batch's share of the
                        * host that no kernel fusion removes */
};

#define EFFICIENCY_BOUND ((struct efficiency){1, 1, 1, 1, 0, 1, 1, 0})

/* The fixed times of a decode step's pieces (the topology's <latency>); 0: not known. */
struct step_latency {
    double kernel_s;     /* one kernel, the shortest a step launches */
    double all_reduce_s; /* a small all-reduce over the scale-up domain */
    double dispatch_s;   /* a low-latency MoE dispatch inside the domain */
    double combine_s;    /* and its combine */
};

bool efficiency_is_bound(const struct efficiency *e);

/* One <efficiency> row of a topology file, fitted by `rackplan calibrate`. */
struct calibration {
    bool present;
    struct efficiency efficiency;
    char fitted_to[2048]; /* ids of the measurements fitted, separated by spaces (cut at 2,047 bytes) */
    int fitted_count;     /* how many ids the attribute lists (all of them, even past a cut) */
    bool pooled;         /* none of them ran on this hardware */
};

struct topology {
    char name[128];
    char accelerator[128];
    char family[64]; /* the architecture family calibrate groups by; the accelerator's name if unset */
    bool announced; /* not shipping yet */

    double hbm_bytes;
    double hbm_bytes_per_s;
    double peak_flops_per_s[PREC_COUNT]; /* 0 = not supported at that precision */
    double power_watts;                  /* 0 = unknown */
    double price_usd_per_hour;           /* per device; 0 = unknown */

    enum domain_kind kind;
    int64_t domain_devices;
    /* switched: links_per_device x link_bytes_per_s through `switches` switch chips;
     * mesh: one link of link_bytes_per_s to every other device */
    int64_t links_per_device;
    double link_bytes_per_s;
    int64_t switches;
    /* torus */
    int dims;
    int64_t dim_size[TOPOLOGY_MAX_DIMS];
    double dim_link_bytes_per_s[TOPOLOGY_MAX_DIMS];
    bool dim_wrap[TOPOLOGY_MAX_DIMS];
    double hop_latency_s; /* 0 = unknown */

    double nics_per_device;
    double nic_bytes_per_s;
    double scale_out_latency_s; /* 0 = unknown */

    int64_t default_domains;
    struct step_latency latency;

    /* calibrated efficiency by weight precision, and for any other precision */
    struct calibration calibrated[PREC_COUNT];
    struct calibration calibrated_any;
};

enum topology_status {
    TOPOLOGY_OK = 0,
    TOPOLOGY_INVALID = 3,  /* diagnostics say where */
    TOPOLOGY_IO_ERROR = 5, /* unreadable file */
};

enum topology_status topology_load(const char *path, struct topology *out, struct diags *d);
enum topology_status topology_load_buffer(const char *path, const char *data, size_t size,
                                          struct topology *out, struct diags *d);

/* What one device can send into its scale-up domain per direction: switched links x link
 * bandwidth; mesh (devices - 1) links; torus the sum over its links (2 per dimension, 1 in a
 * dimension of size 2 or an unwrapped line's end is not counted: the interior figure). */
double topology_scale_up_bytes_per_s(const struct topology *t);
double topology_scale_out_bytes_per_s(const struct topology *t);

/* `t` with a scale-up domain of `devices` devices: the same accelerator, links per device and
 * scale-out network, for the question what a bigger domain buys. A switched domain keeps its
 * switch chips per device; a mesh becomes switched with its links per device. False for a torus
 * (its shape, not only its size, sets its bandwidth). The name says the size. */
bool topology_with_domain_size(const struct topology *t, int64_t devices, struct topology *out);

/* `devices` devices of one domain of `t` as a domain of their own, what an instance on part of a
 * domain talks over: a switched domain keeps each device's links (and its share of the switch
 * chips), a mesh its links to the devices in the slice, a torus becomes the sub-box of that many
 * chips with the shortest longest side. False when devices is not in [1, domain size] or no
 * sub-box of a torus has that many chips. */
bool topology_slice(const struct topology *t, int64_t devices, struct topology *out);

/* "switched", "mesh", "torus". */
const char *topology_kind_name(enum domain_kind kind);

/* The calibrated row for weights at `weights`, else the row for any precision; NULL if neither. */
const struct calibration *topology_calibration(const struct topology *t, enum precision weights);

/* Highest peak at `p` or, when `p` is not supported, at the next wider precision the device has
 * (fp4 weights on H100 run fp8 matmuls; fp16 runs at the bf16 rate). 0 if none. Writes the
 * precision used to *used. */
double topology_peak_flops_per_s(const struct topology *t, enum precision p,
                                 enum precision *used);

#endif
