/* The routing trace reader and the traffic metrics, against the round-robin figures that
 * shared/data/moe-loads/eplb_results.csv records (no replicas, so no hashing is involved). */
#include "tap.h"
#include "trace.h"
#include "traffic.h"

#include <stdlib.h>
#include <unistd.h>

/* Writes `text` to trace-test.csv in the current directory and reads it as a trace of an
 * 8-expert model; the first diagnostic goes to `message`. */
static enum trace_status read_text(const char *text, char *message, size_t size)
{
    FILE *f = fopen("trace-test.csv", "w");
    fputs(text, f);
    fclose(f);
    struct trace t;
    struct diags d;
    diags_init(&d);
    enum trace_status status = trace_read("trace-test.csv", 8, &t, &d);
    message[0] = '\0';
    if (d.count)
        diag_format(&d.entries[0], message, size);
    diags_release(&d);
    if (status == TRACE_OK)
        trace_release(&t);
    return status;
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    struct trace t;
    struct diags d;
    diags_init(&d);
    CHECK(trace_read("loads/dsv3_topk.csv.gz", 256, &t, &d) == TRACE_OK, "the gzip trace reads");
    CHECK(t.layers == 58 && t.tokens == 8192 && t.k == 8, "58 layers x 8,192 tokens x top-8 (475,136 rows)");
    /* round robin: expert e on GPU e mod G, 4 slots per GPU */
    int64_t G = 64, slots = 4;
    int32_t *map = malloc((size_t)(t.layers * G * slots) * sizeof *map);
    for (int64_t layer = 0; layer < t.layers; layer++)
        for (int64_t e = 0; e < 256; e++)
            map[layer * G * slots + (e % G) * slots + e / G] = (int32_t)e;
    struct traffic r;
    traffic_measure(&t, map, G, slots, 8, 256, false, &r);
    /* case b, 8 nodes of 8 GPUs: rr_remote_pair 0.875083, rr_nodes_per_tok 4.53576 */
    CHECK_REL(r.remote_dispatch_fraction, 0.875083, 1e-5, "round robin on 8 nodes: remote fraction 0.875083 (eplb_results.csv)");
    CHECK_REL(r.remote_domains_per_token, 4.53576, 1e-5, "round robin on 8 nodes: 4.53576 remote nodes per token");
    traffic_measure(&t, map, G, slots, 64, 256, false, &r);
    CHECK(r.remote_dispatch_fraction == 0 && r.remote_domains_per_token == 0, "one domain: nothing leaves it");
    free(map);
    trace_release(&t);
    diags_release(&d);

    char directory[] = "/tmp/rackplan-trace-XXXXXX"; /* malformed files go outside the tree */
    if (!mkdtemp(directory) || chdir(directory) != 0)
        return 1;
    char message[256];
    CHECK(read_text("layer,token,e0,e1\n0,0,1,2\n0,1,3,3\n", message, sizeof message) == TRACE_INVALID,
          "an expert twice in one row is refused");
    CHECK_STR(message, "trace-test.csv:3:7: error: expert 3 appears twice in one row", "with its position");
    CHECK(read_text("layer,token,e0,e1\n0,0,1,9\n", message, sizeof message) == TRACE_INVALID,
          "an expert beyond the model is refused");
    CHECK_STR(message, "trace-test.csv:2:7: error: expert 9 is beyond the model's 8 experts", "with its position");
    CHECK(read_text("0,0,1,2\n", message, sizeof message) == TRACE_INVALID, "a trace without its header is refused");
    remove("trace-test.csv");
    rmdir(directory);
    return tap_done();
}
