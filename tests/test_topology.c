/* Topology reader: shipped files against the facts they cite, and hostile XML. */
#include "fixtures.h"
#include "tap.h"
#include "topology.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

/* Loads `xml` and returns the first diagnostic, formatted, in `message`. */
static enum topology_status load_text(const char *xml, char *message, size_t size)
{
    struct topology t;
    struct diags d;
    diags_init(&d);
    enum topology_status status = topology_load_buffer("t.xml", xml, strlen(xml), &t, &d);
    message[0] = '\0';
    if (d.count)
        diag_format(&d.entries[0], message, size);
    diags_release(&d);
    return status;
}

static void shipped(void)
{
    const char *files[] = {"hgx-h100",        "hgx-h200",     "hgx-h800",       "hgx-b200",
                           "gb200-nvl72",     "gb300-nvl72",  "vr200-nvl144",   "rubin-ultra-nvl576",
                           "tpu-v5p-pod",     "tpu-v6e-256",  "tpu7x-ironwood-pod", "mi300x",
                           "mi355x",          "trn2-ultraserver", "hgx-b300",   "mi325x"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "topologies/%s.xml", files[i]);
        struct topology t;
        struct diags d;
        diags_init(&d);
        CHECK(topology_load(path, &t, &d) == TOPOLOGY_OK, "%s loads and validates", path);
        diags_print(&d, stdout);
        diags_release(&d);
    }

    /* facts A1/A2/D3: GB200 NVL72, 72 GPUs of "186 GB" (189,471 MiB as the driver counts it,
     * topologies/gb200-nvl72.xml) at 8 TB/s, NVLink 18 x 50 GB/s = 900 GB/s
     * per direction, one 400 Gb/s NIC = 50 GB/s: 18x slower */
    struct topology gb200 = fixture_topology("topologies/gb200-nvl72.xml");
    CHECK_EQ(gb200.domain_devices, 72, "GB200 NVL72 has 72 GPUs in its domain");
    CHECK_EQ(gb200.hbm_bytes, 189471.0 * 1048576, "GB200 HBM 189,471 MiB");
    CHECK_EQ(gb200.hbm_bytes_per_s, 8e12, "GB200 HBM 8 TB/s");
    CHECK_EQ(topology_scale_up_bytes_per_s(&gb200), 900e9, "GB200 NVLink 900 GB/s per direction");
    CHECK_EQ(topology_scale_out_bytes_per_s(&gb200), 50e9, "GB200 scale-out 50 GB/s per direction");
    CHECK_EQ(topology_scale_up_bytes_per_s(&gb200) / topology_scale_out_bytes_per_s(&gb200), 18,
             "GB200 NVL72: leaving the rack is 18x slower (facts D3)");
    CHECK_EQ(gb200.peak_flops_per_s[PREC_FP8], 5e15, "GB200 dense FP8 5 PFLOP/s");
    CHECK(!gb200.announced && gb200.kind == DOMAIN_SWITCHED, "GB200 ships, switched fabric");

    /* issue #2: one HGX H100 holds 640 GB, one HGX H200 1,128 GB, as their datasheets round them;
     * the driver counts 81,559 and 143,771 MiB a GPU (the files' sources), 684.2 and 1,206.0 GB */
    struct topology h100 = fixture_topology("topologies/hgx-h100.xml");
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    CHECK_EQ(h100.domain_devices * h100.hbm_bytes, 8 * 81559.0 * 1048576, "HGX H100: 8 x 81,559 MiB = 684.2 GB");
    CHECK_EQ(h200.domain_devices * h200.hbm_bytes, 8 * 143771.0 * 1048576, "HGX H200: 8 x 143,771 MiB = 1,206.0 GB");
    CHECK_EQ(topology_scale_up_bytes_per_s(&h100), 450e9, "H100 NVLink 18 x 25 GB/s = 450 GB/s per direction");
    struct topology h800 = fixture_topology("topologies/hgx-h800.xml");
    CHECK_EQ(topology_scale_up_bytes_per_s(&h800), 200e9, "H800 NVLink 400 GB/s both ways = 200 per direction");

    /* facts A2: v5p pod 16 x 20 x 28 = 8,960 chips; Ironwood 9,216 */
    struct topology v5p = fixture_topology("topologies/tpu-v5p-pod.xml");
    CHECK(v5p.kind == DOMAIN_TORUS && v5p.dims == 3 && v5p.dim_size[0] == 16 &&
              v5p.dim_size[1] == 20 && v5p.dim_size[2] == 28 && v5p.dim_wrap[0],
          "TPU v5p pod is a 16x20x28 torus with wrap-around");
    CHECK_EQ(v5p.domain_devices, 8960, "TPU v5p pod has 8,960 chips");
    CHECK_EQ(v5p.hbm_bytes, 95.0 * 1073741824, "TPU v5p 95 GiB usable HBM");
    CHECK_EQ(fixture_topology("topologies/tpu7x-ironwood-pod.xml").domain_devices, 9216, "Ironwood pod has 9,216 chips");
    CHECK(fixture_topology("topologies/vr200-nvl144.xml").announced && fixture_topology("topologies/rubin-ultra-nvl576.xml").announced,
          "Vera Rubin NVL144 and Rubin Ultra NVL576 are marked announced");
    struct topology mi300x = fixture_topology("topologies/mi300x.xml");
    CHECK(mi300x.kind == DOMAIN_MESH && topology_scale_up_bytes_per_s(&mi300x) == 7 * 64e9,
          "MI300X: Infinity Fabric mesh, 7 links x 64 GB/s per direction");

    /* HGX B300 (topologies/hgx-b300.xml): 275,040 MiB a GPU as the driver counts it, the datasheet's
     * "270 GB" and the board's "Total Memory 2.1 TB" in binary units (8 x 268.6 GiB = 2.1 TiB);
     * FP4 108 PF dense a board / 8 = 13.5 PF; NVLink 5 as B200's, 900 GB/s per direction;
     * ConnectX-8 800 Gb/s = 100 GB/s: 9x slower (facts D3) */
    struct topology b300 = fixture_topology("topologies/hgx-b300.xml");
    CHECK_EQ(b300.domain_devices * b300.hbm_bytes, 8 * 275040.0 * 1048576, "HGX B300: 8 x 275,040 MiB = 2,307.2 GB");
    CHECK_EQ(b300.peak_flops_per_s[PREC_FP4], 108e15 / 8, "B300 dense FP4 108 PF a board / 8");
    CHECK_EQ(topology_scale_up_bytes_per_s(&b300) / topology_scale_out_bytes_per_s(&b300), 9,
             "HGX B300: leaving the node is 9x slower");
    CHECK(!b300.announced && b300.tier_count == 1 && b300.tiers[0].bytes_per_device == 250e9,
          "HGX B300 ships; DGX B300's 2 TB of host memory is 250 GB a GPU");
    /* MI325X (topologies/mi325x.xml): the MI300X's die and fabric, 256 GiB at 6 TB/s: 2 TiB a platform */
    struct topology mi325x = fixture_topology("topologies/mi325x.xml");
    CHECK_EQ(mi325x.domain_devices * mi325x.hbm_bytes, 2048.0 * 1073741824, "MI325X platform: 8 x 256 GiB = 2,048 GiB");
    CHECK(mi325x.kind == DOMAIN_MESH && topology_scale_up_bytes_per_s(&mi325x) == topology_scale_up_bytes_per_s(&mi300x) &&
              mi325x.peak_flops_per_s[PREC_FP8] == 2614.9e12 && strcmp(mi325x.family, mi300x.family) == 0,
          "MI325X: the MI300X's mesh, FP8 peak and family (its efficiency rows)");
    enum precision used;
    CHECK(topology_peak_flops_per_s(&h100, PREC_FP4, &used) == 1979e12 && used == PREC_FP8,
          "H100 has no FP4: FP4 weights run FP8 matmuls");
}

static const char *valid_tail =
    "<scale-up><switched devices='8' links_per_device='18' link_bytes_per_s='25e9' switches='4'/></scale-up>\n"
    "<scale-out nics_per_device='1' nic_bytes_per_s='50e9'/>\n<cluster domains='1'/>\n</topology>\n";

/* A minimal topology whose <cluster> (line 7) is followed by `tiers`, from line 8 on. */
static void tiered(const char *tiers, char *xml, size_t size)
{
    snprintf(xml, size,
             "<topology name='x' status='shipping'>\n<accelerator name='a'>\n"
             "<hbm bytes='186e9' bytes_per_s='8e12'/><peak precision='bf16' flops_per_s='1e15'/>\n"
             "</accelerator>\n%.*s%s</topology>\n",
             (int)(strstr(valid_tail, "</topology>") - valid_tail), valid_tail, tiers);
}

static bool load_tiered(const char *tiers, struct topology *t)
{
    char xml[4096];
    tiered(tiers, xml, sizeof xml);
    struct diags d;
    diags_init(&d);
    bool ok = topology_load_buffer("t.xml", xml, strlen(xml), t, &d) == TOPOLOGY_OK;
    diags_release(&d);
    return ok;
}

/* The first diagnostic of loading `tiers` after <cluster>, formatted. */
static const char *tier_error(const char *tiers)
{
    static char message[1024];
    char xml[4096];
    tiered(tiers, xml, sizeof xml);
    if (load_text(xml, message, sizeof message) != TOPOLOGY_INVALID)
        snprintf(message, sizeof message, "(loaded)");
    return message;
}

static void tiers(void)
{
    /* HBM is tier 0: GB200's 198.67 GB (189,471 MiB) at 8 TB/s drains in 198.67e9 / 8e12 = 24.83 ms */
    struct topology gb200 = fixture_topology("topologies/gb200-nvl72.xml");
    struct memory_tier m;
    CHECK(topology_tier(&gb200, 0, &m) && m.kind == TIER_HBM && strcmp(m.name, "HBM") == 0 && m.bytes_per_device == 189471.0 * 1048576 &&
              m.read_bytes_per_s_per_device == 8e12,
          "tier 0 is HBM: 189,471 MiB at 8 TB/s");
    CHECK_REL(topology_tier_drain_s(&gb200, 0), 0.024834342912, 1e-12, "GB200 HBM drains in 198.67e9 / 8e12 = 24.83 ms");
    /* one Grace (480 GB LPDDR5X, 18.4 TB/s / 36 = 511 GB/s) per two GPUs: 240 GB and 255.5 GB/s a GPU, under the
     * NVLink-C2C share 900 GB/s bidirectional / 2 directions / 2 GPUs = 225 GB/s; 240e9 / 225e9 = 1.0667 s */
    CHECK_EQ(topology_tier_count(&gb200), 2, "GB200 NVL72: HBM and Grace LPDDR5X");
    CHECK(topology_tier(&gb200, 1, &m) && m.kind == TIER_HOST && m.bytes_per_device == 240e9 &&
              m.read_bytes_per_s_per_device == 225e9 && m.write_bytes_per_s_per_device == 225e9 &&
              m.link_bytes_per_s_per_device == 225e9,
          "GB200 host tier: 480 GB / 2 = 240 GB a GPU, min(511 / 2, 225) = 225 GB/s");
    CHECK_REL(topology_tier_drain_s(&gb200, 1), 240.0 / 225.0, 1e-12, "GB200 host tier drains in 240 / 225 = 1.067 s");
    CHECK(!topology_tier(&gb200, 2, &m) && !topology_tier(&gb200, -1, &m) && topology_tier_drain_s(&gb200, 2) == 0,
          "no tier 2 on GB200, none at -1: false, drain 0");
    CHECK_STR(topology_tier_kind_name(TIER_NVME), "nvme", "kind names: nvme");

    /* DGX H100: 2 TB DDR5 / 8 = 250 GB a GPU; 614.4 GB/s / 8 = 76.8 over a 64 GB/s PCIe link: 64; 250 / 64 = 3.906 s.
     * 30.72 TB NVMe / 8 = 3.84 TB at 50 / 8 = 6.25 GB/s: 614.4 s */
    struct topology h100 = fixture_topology("topologies/hgx-h100.xml");
    CHECK(topology_tier_count(&h100) == 3 && topology_tier(&h100, 2, &m) && m.kind == TIER_NVME &&
              m.bytes_per_device == 3.84e12 && m.read_bytes_per_s_per_device == 6.25e9 && m.write_bytes_per_s_per_device == 0,
          "DGX H100: host, then NVMe 3.84 TB a GPU at 6.25 GB/s, write not known");
    CHECK_REL(topology_tier_drain_s(&h100, 1), 250.0 / 64.0, 1e-12, "DGX H100 host tier drains in 250 / 64 = 3.906 s");
    CHECK_REL(topology_tier_drain_s(&h100, 2), 614.4, 1e-12, "DGX H100 NVMe drains in 3840 / 6.25 = 614.4 s");

    /* the hand case: 480 GB at 0.5 TB/s is 0.96 s, per Grace or per GPU (240 GB at 250 GB/s) */
    struct topology t;
    CHECK(load_tiered("<memory-tier kind='host' name='LPDDR5X' devices_per_node='2' bytes_per_node='480e9' "
                      "read_bytes_per_s_per_node='500e9'/>\n", &t) &&
              t.tier_count == 1 && t.tiers[0].bytes_per_device == 240e9 && t.tiers[0].read_bytes_per_s_per_device == 250e9,
          "per node over devices_per_node: 480 GB and 500 GB/s for 2 devices = 240 GB and 250 GB/s each");
    CHECK_REL(topology_tier_drain_s(&t, 1), 0.96, 1e-12, "480 GB at 0.5 TB/s drains in 0.96 s");
    CHECK(load_tiered("<memory-tier kind='host' name='h' bytes_per_device='240e9' read_bytes_per_s_per_device='250e9' "
                      "write_bytes_per_s_per_device='250e9' link_bytes_per_s_per_device='100e9' usd_per_gb_hour='0.001'/>\n"
                      "<memory-tier kind='nvme' name='n' bytes_per_device='4e12' read_bytes_per_s_per_device='7e9'/>\n"
                      "<memory-tier kind='remote' name='r' bytes_per_device='20e12' read_bytes_per_s_per_device='5e9'/>\n",
                      &t) &&
              t.tier_count == 3 && t.tiers[0].read_bytes_per_s_per_device == 100e9 &&
              t.tiers[0].write_bytes_per_s_per_device == 100e9 && t.tiers[0].usd_per_gb_hour == 0.001 &&
              t.tiers[1].kind == TIER_NVME && t.tiers[2].kind == TIER_REMOTE && t.tiers[1].usd_per_gb_hour == 0,
          "a 100 GB/s link bounds 250 GB/s of read and write; host, nvme, remote in order; price where given");
    CHECK_REL(topology_tier_drain_s(&t, 1), 2.4, 1e-12, "240 GB over its 100 GB/s link: 2.4 s");
    struct topology sliced;
    CHECK(topology_slice(&t, 4, &sliced) && sliced.tier_count == 3 && sliced.tiers[2].bytes_per_device == 20e12,
          "a slice keeps the tiers per device");

    /* bad tiers: path:line:col at the attribute; "<memory-tier " is 13 characters, kind in column 14 */
    CHECK_STR(tier_error("<memory-tier kind='disk' name='x' bytes_per_device='1e9' read_bytes_per_s_per_device='1e9'/>\n"),
              "t.xml:8:14: error: Element 'memory-tier', attribute 'kind': [facet 'enumeration'] The value 'disk' is not an "
              "element of the set {'host', 'nvme', 'remote'}.",
              "an unknown kind is refused at its attribute");
    /* "<memory-tier kind='host' name='x' " is 34 characters: bytes_per_device in column 35 */
    CHECK(strncmp(tier_error("<memory-tier kind='host' name='x' bytes_per_device='0' read_bytes_per_s_per_device='1e9'/>\n"),
                  "t.xml:8:35: error: Element 'memory-tier', attribute 'bytes_per_device': [facet 'minInclusive']", 91) == 0,
          "zero capacity is refused at its attribute: %s", tier_error("<memory-tier kind='host' name='x' bytes_per_device='0' read_bytes_per_s_per_device='1e9'/>\n"));
    CHECK(strncmp(tier_error("<memory-tier kind='host' name='x' bytes_per_device='1e9' read_bytes_per_s_per_device='-5'/>\n"),
                  "t.xml:8:58: error: Element 'memory-tier', attribute 'read_bytes_per_s_per_device': [facet 'minInclusive']",
                  102) == 0,
          "a negative bandwidth is refused at its attribute");
    CHECK_STR(tier_error("<memory-tier kind='host' name='x' bytes_per_device='1e9' read_bytes_per_s_per_device='1e9'/>\n"
                         "<memory-tier kind='host' name='y' bytes_per_device='1e9' read_bytes_per_s_per_device='1e9'/>\n"),
              "t.xml:9:14: error: a second <memory-tier kind='host'>", "a second tier of one kind is refused at its kind");
    CHECK_STR(tier_error("<memory-tier kind='nvme' name='x' bytes_per_device='1e9' read_bytes_per_s_per_device='1e9'/>\n"
                         "<memory-tier kind='host' name='y' bytes_per_device='1e9' read_bytes_per_s_per_device='1e9'/>\n"),
              "t.xml:9:14: error: <memory-tier kind='host'> after kind='nvme': tiers are listed fastest first (host, nvme, remote)",
              "tiers out of order are refused");
    CHECK_STR(tier_error("<memory-tier kind='host' name='x' bytes_per_device='1e9' bytes_per_node='8e9' devices_per_node='8' "
                         "read_bytes_per_s_per_device='1e9'/>\n"),
              "t.xml:8:58: error: <memory-tier> gives both 'bytes_per_device' and 'bytes_per_node'; give one",
              "a quantity given both per device and per node is refused");
    CHECK_STR(tier_error("<memory-tier kind='host' name='x' bytes_per_node='8e9' read_bytes_per_s_per_device='1e9'/>\n"),
              "t.xml:8:35: error: 'bytes_per_node' needs 'devices_per_node', the devices that share the node's tier",
              "a per-node quantity without devices_per_node is refused");
    CHECK_STR(tier_error("<memory-tier kind='host' name='x' bytes_per_device='1e9'/>\n"),
              "t.xml:8:1: error: <memory-tier> needs 'read_bytes_per_s_per_device' or 'read_bytes_per_s_per_node'",
              "a tier without a read bandwidth is refused");
    CHECK(strncmp(tier_error("<memory-tier kind='host' name='x' bytes_per_device='NaN' read_bytes_per_s_per_device='1e9'/>\n"),
                  "t.xml:8:35: ", 12) == 0,
          "NaN capacity is refused at its attribute");
    CHECK(strncmp(tier_error("<memory-tier kind='host' name='x' bytes_per_device='1e9' read_bytes_per_s_per_device='1e9'/>\n"
                             "<latency kernel_s='1e-6'/>\n<memory-tier kind='nvme' name='y' bytes_per_device='1e9' "
                             "read_bytes_per_s_per_device='1e9'/>\n"),
                  "t.xml:10:", 9) == 0,
          "a tier after <latency> is out of the schema's sequence");
}

static void hostile(void)
{
    char xml[4096], message[1024];
    snprintf(xml, sizeof xml,
             "<topology name='x' status='shipping'>\n<accelerator name='a'>\n"
             "<hbm bytes='80e9' bytes_per_s='3.35e12'/><peak precision='bf16' flops_per_s='1e15'/>\n"
             "</accelerator>\n%s", valid_tail);
    CHECK(load_text(xml, message, sizeof message) == TOPOLOGY_OK, "a minimal topology loads");

    char with_efficiency[4096];
    snprintf(with_efficiency, sizeof with_efficiency,
             "%.*s<efficiency precision='fp8' compute='0.4' memory='0.92' scale_up='0.8' scale_out='0.7' experts='0.9' "
             "step_overhead_s='0.002' fitted_to='a b'/>\n"
             "<efficiency compute='0.3' memory='0.5' scale_up='0.6' scale_out='0.5' experts='1' step_overhead_s='0' "
             "fitted_to='c' pooled='true'/>\n</topology>\n",
             (int)(strstr(xml, "</topology>") - xml), xml);
    struct topology measured;
    struct diags none;
    diags_init(&none);
    bool loaded = topology_load_buffer("t.xml", with_efficiency, strlen(with_efficiency), &measured, &none) == TOPOLOGY_OK;
    const struct calibration *fp8 = loaded ? topology_calibration(&measured, PREC_FP8) : NULL;
    const struct calibration *bf16 = loaded ? topology_calibration(&measured, PREC_BF16) : NULL;
    CHECK(fp8 && fp8->efficiency.compute == 0.4 && fp8->efficiency.memory == 0.92 && fp8->efficiency.scale_up == 0.8 &&
              fp8->efficiency.scale_out == 0.7 && fp8->efficiency.experts == 0.9 && fp8->efficiency.step_overhead_s == 0.002 &&
              strcmp(fp8->fitted_to, "a b") == 0 && !fp8->pooled,
          "<efficiency precision='fp8'> is the row for FP8 weights, every field read");
    CHECK(bf16 && bf16->efficiency.compute == 0.3 && bf16->pooled && strcmp(bf16->fitted_to, "c") == 0,
          "the row without a precision serves any other precision, pooled said");
    bool bare = topology_load_buffer("t.xml", xml, strlen(xml), &measured, &none) == TOPOLOGY_OK &&
                !topology_calibration(&measured, PREC_FP8);
    diags_release(&none);
    CHECK(bare, "without <efficiency> rows there is no calibration (the bound alone)");
    snprintf(with_efficiency, sizeof with_efficiency,
             "%.*s<efficiency compute='0.4' memory='1.2' scale_up='1' scale_out='1' experts='1' step_overhead_s='0' "
             "fitted_to='x'/>\n</topology>\n",
             (int)(strstr(xml, "</topology>") - xml), xml);
    CHECK(load_text(with_efficiency, message, sizeof message) == TOPOLOGY_INVALID, "an efficiency above 1 is refused");
    snprintf(with_efficiency, sizeof with_efficiency,
             "%.*s<efficiency precision='fp8' compute='0.4' memory='0.5' scale_up='1' scale_out='1' "
             "experts='1' step_overhead_s='0' fitted_to='x'/>\n<efficiency precision='fp8' compute='0.4' memory='0.5' "
             "scale_up='1' scale_out='1' experts='1' step_overhead_s='0' fitted_to='x'/>\n</topology>\n",
             (int)(strstr(xml, "</topology>") - xml), xml);
    CHECK(load_text(with_efficiency, message, sizeof message) == TOPOLOGY_INVALID &&
              strstr(message, "a second <efficiency> row for fp8 weights"),
          "two rows for one precision are refused: %s", message);

    snprintf(xml, sizeof xml,
             "<topology name='x' status='shipping'>\n<accelerator name='a'>\n"
             "<hbm bytes='80e9'/><peak precision='bf16' flops_per_s='1e15'/>\n"
             "</accelerator>\n%s", valid_tail);
    CHECK(load_text(xml, message, sizeof message) == TOPOLOGY_INVALID, "a missing attribute is invalid");
    CHECK_STR(message, "t.xml:3:1: error: Element 'hbm': The attribute 'bytes_per_s' is required but missing.",
              "the schema error names the element, the attribute, and where the element starts");

    /* "<hbm bytes='80e9' " is 18 characters: bytes_per_s starts in column 19 */
    snprintf(xml, sizeof xml,
             "<topology name='x' status='shipping'>\n<accelerator name='a'>\n"
             "<hbm bytes='80e9' bytes_per_s='0.5'/><peak precision='bf16' flops_per_s='1e15'/>\n"
             "</accelerator>\n%s", valid_tail);
    CHECK(load_text(xml, message, sizeof message) == TOPOLOGY_INVALID, "half a byte per second is refused");
    CHECK(strncmp(message, "t.xml:3:19: error: Element 'hbm', attribute 'bytes_per_s': [facet 'minInclusive']", 80) == 0,
          "at the attribute's line and column");

    snprintf(xml, sizeof xml,
             "<topology name='x' status='shipping'>\n<accelerator name='a'>\n"
             "<hbm bytes='80e9' bytes_per_s='NaN'/><peak precision='bf16' flops_per_s='1e15'/>\n"
             "</accelerator>\n%s", valid_tail);
    CHECK(load_text(xml, message, sizeof message) == TOPOLOGY_INVALID, "NaN bandwidth is refused");
    CHECK(strstr(message, "t.xml:3:") && strstr(message, "bytes_per_s"), "NaN: line and attribute named (%s)", message);

    const char *laughs =
        "<?xml version='1.0'?>\n<!DOCTYPE topology [\n<!ENTITY a 'aaaaaaaaaa'>\n"
        "<!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'>\n<!ENTITY c '&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;'>\n]>\n"
        "<topology name='&c;' status='shipping'/>\n";
    CHECK(load_text(laughs, message, sizeof message) == TOPOLOGY_INVALID, "entity declarations are refused");
    CHECK(strstr(message, "DOCTYPE"), "the error says DOCTYPE is not allowed (%s)", message);

    const char *external =
        "<?xml version='1.0'?>\n<!DOCTYPE topology [<!ENTITY x SYSTEM 'file:///etc/passwd'>]>\n"
        "<topology name='&x;' status='shipping'/>\n";
    CHECK(load_text(external, message, sizeof message) == TOPOLOGY_INVALID, "an external entity is refused");
    CHECK(!strstr(message, "root:"), "nothing from /etc/passwd reaches the message");

    CHECK(load_text("<topology name='x'>\n<accelerator>\n</topology>\n", message, sizeof message) ==
              TOPOLOGY_INVALID, "mismatched tags are invalid");
    CHECK(strncmp(message, "t.xml:3:", 8) == 0, "the syntax error has the line of the bad tag (%s)", message);

    size_t big = (size_t)TOPOLOGY_MAX_BYTES + 10;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    struct topology t;
    struct diags d;
    diags_init(&d);
    CHECK(topology_load_buffer("big.xml", huge, big, &t, &d) == TOPOLOGY_INVALID,
          "a file over 16 MiB is refused before parsing");
    diags_release(&d);
    free(huge);
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    shipped();
    tiers();
    hostile();
    return tap_done();
}
