/* Topology reader: shipped files against the facts they cite, and hostile XML. */
#include "fixtures.h"
#include "tap.h"
#include "topology.h"

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
                           "mi355x",          "trn2-ultraserver"};
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

    /* facts A1/A2/D3: GB200 NVL72, 72 GPUs of 186 GB at 8 TB/s, NVLink 18 x 50 GB/s = 900 GB/s
     * per direction, one 400 Gb/s NIC = 50 GB/s: 18x slower */
    struct topology gb200 = fixture_topology("topologies/gb200-nvl72.xml");
    CHECK_EQ(gb200.domain_devices, 72, "GB200 NVL72 has 72 GPUs in its domain");
    CHECK_EQ(gb200.hbm_bytes, 186e9, "GB200 HBM 186 GB");
    CHECK_EQ(gb200.hbm_bytes_per_s, 8e12, "GB200 HBM 8 TB/s");
    CHECK_EQ(topology_scale_up_bytes_per_s(&gb200), 900e9, "GB200 NVLink 900 GB/s per direction");
    CHECK_EQ(topology_scale_out_bytes_per_s(&gb200), 50e9, "GB200 scale-out 50 GB/s per direction");
    CHECK_EQ(topology_scale_up_bytes_per_s(&gb200) / topology_scale_out_bytes_per_s(&gb200), 18,
             "GB200 NVL72: leaving the rack is 18x slower (facts D3)");
    CHECK_EQ(gb200.peak_flops_per_s[PREC_FP8], 5e15, "GB200 dense FP8 5 PFLOP/s");
    CHECK(!gb200.announced && gb200.kind == DOMAIN_SWITCHED, "GB200 ships, switched fabric");

    /* issue #2: one HGX H100 holds 640 GB, one HGX H200 1,128 GB */
    struct topology h100 = fixture_topology("topologies/hgx-h100.xml");
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    CHECK_EQ(h100.domain_devices * h100.hbm_bytes, 640e9, "HGX H100: 8 x 80 GB = 640 GB");
    CHECK_EQ(h200.domain_devices * h200.hbm_bytes, 1128e9, "HGX H200: 8 x 141 GB = 1,128 GB");
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
    enum precision used;
    CHECK(topology_peak_flops_per_s(&h100, PREC_FP4, &used) == 1979e12 && used == PREC_FP8,
          "H100 has no FP4: FP4 weights run FP8 matmuls");
}

static const char *valid_tail =
    "<scale-up><switched devices='8' links_per_device='18' link_bytes_per_s='25e9' switches='4'/></scale-up>\n"
    "<scale-out nics_per_device='1' nic_bytes_per_s='50e9'/>\n<cluster domains='1'/>\n</topology>\n";

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
    hostile();
    return tap_done();
}
