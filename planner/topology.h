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
/* HBM and the tiers below it a topology may list: host memory, local NVMe, remote storage. */
#define TOPOLOGY_MAX_TIERS 4

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

/* Where a device's data (a KV cache) can live, fastest first. HBM is always there; the others
 * are the topology's <memory-tier> elements, at most one of each kind. */
enum tier_kind { TIER_HBM, TIER_HOST, TIER_NVME, TIER_REMOTE };

/* One memory tier as one device sees it. A tier shared by several devices (a Grace CPU's
 * LPDDR5X for two GPUs, a node's NVMe for eight) counts each device's share: capacity / devices
 * and bandwidth / devices, read and write each no more than the device's link to the tier.
 *
 * The model (a contract for the commands that use it): a device reads its share of the tier at
 * read_bytes_per_s_per_device and writes it at write_bytes_per_s_per_device, every device at
 * once; the tier's drain time, capacity / read bandwidth, is how long reading all of it takes,
 * which bounds how quickly a tier full of KV cache can be turned over (issue 27). */
struct memory_tier {
    enum tier_kind kind;
    char name[64];                       /* "LPDDR5X (Grace)"; "HBM" for tier 0 */
    double bytes_per_device;             /* > 0 */
    double read_bytes_per_s_per_device;  /* > 0, after the link's bound */
    double write_bytes_per_s_per_device; /* 0: not known */
    double link_bytes_per_s_per_device;  /* per direction; 0: not given (read and write as written) */
    double usd_per_gb_hour;              /* the tier's price per GB (1e9 bytes) and hour; 0: not known */
};

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

    /* the tiers below HBM, in the file's order, which is the kinds' order (host, nvme, remote);
     * topology_tier() numbers them from 1, HBM being tier 0 */
    int tier_count;
    struct memory_tier tiers[TOPOLOGY_MAX_TIERS - 1];

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

/* How many memory tiers a device has: 1 (HBM) + the topology's <memory-tier> elements. */
int topology_tier_count(const struct topology *t);

/* Tier `i` of `t` into *out: 0 is HBM (hbm_bytes, read and write at hbm_bytes_per_s, no link,
 * no price), 1.. the <memory-tier> elements in order. False, *out unchanged, when i is not in
 * [0, topology_tier_count(t)). */
bool topology_tier(const struct topology *t, int i, struct memory_tier *out);

/* Tier i's drain time in seconds: bytes_per_device / read_bytes_per_s_per_device, how long a
 * device takes to read its whole share of the tier (GB200's HBM: 186e9 / 8e12 = 23.25 ms).
 * 0 when i is out of range. */
double topology_tier_drain_s(const struct topology *t, int i);

/* "hbm", "host", "nvme", "remote". */
const char *topology_tier_kind_name(enum tier_kind kind);

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
