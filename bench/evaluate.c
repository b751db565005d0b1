/* evaluate: EPLB's placement metrics (shared/data/moe-loads/README.md) for any physical-to-
 * logical expert map, so rackplan's placements and EPLB's are scored by one program.
 *
 *   evaluate MAP.csv LOADS.csv GPUS NODES [TRACE.csv.gz]
 *
 * MAP.csv: one row per MoE layer, one column per physical slot, slots of GPU 0 first, nodes as
 * contiguous blocks of GPUs (rackplan's --expert-map, EPLB's output). Prints GPU and node
 * imbalance (mean and worst over layers; a logical expert of load w with c replicas puts w / c on
 * each), and with a trace the remote dispatch share and remote nodes per token, with replicas
 * picked by hash and with local routing. */
#include "loads.h"
#include "trace.h"
#include "traffic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t *read_map(const char *path, int64_t layers, int64_t width)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    int32_t *map = malloc((size_t)(layers * width) * sizeof *map);
    int64_t n = 0;
    long value;
    while (n < layers * width && fscanf(f, "%ld", &value) == 1) {
        map[n++] = (int32_t)value;
        int c = fgetc(f);
        if (c != ',' && c != '\n' && c != EOF && c != '\r') {
            n = -1;
            break;
        }
    }
    fclose(f);
    if (n != layers * width) {
        free(map);
        return NULL;
    }
    return map;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: evaluate MAP.csv LOADS.csv GPUS NODES [TRACE.csv.gz]\n");
        return 2;
    }
    struct loads l;
    struct diags d;
    diags_init(&d);
    if (loads_read(argv[2], &l, &d) != LOADS_OK) {
        diags_print(&d, stderr);
        return 3;
    }
    int64_t gpus = atoll(argv[3]), nodes = atoll(argv[4]);
    /* the slot count per GPU from the map's first row */
    FILE *f = fopen(argv[1], "r");
    int64_t columns = 1;
    for (int c; f && (c = fgetc(f)) != EOF && c != '\n';)
        columns += c == ',';
    if (f)
        fclose(f);
    if (gpus <= 0 || nodes <= 0 || gpus % nodes || columns % gpus) {
        fprintf(stderr, "evaluate: %lld columns do not split over %lld GPUs in %lld nodes\n",
                (long long)columns, (long long)gpus, (long long)nodes);
        return 2;
    }
    int64_t slots = columns / gpus, per_node = gpus / nodes;
    int32_t *map = read_map(argv[1], l.layers, columns);
    if (!map) {
        fprintf(stderr, "evaluate: %s is not %lld rows of %lld expert ids\n", argv[1], (long long)l.layers,
                (long long)columns);
        return 3;
    }
    double *gpu = calloc((size_t)gpus, sizeof *gpu), *node = calloc((size_t)nodes, sizeof *node);
    int64_t *copies = calloc((size_t)l.experts, sizeof *copies);
    double gpu_mean = 0, gpu_worst = 0, node_mean = 0, node_worst = 0;
    for (int64_t layer = 0; layer < l.layers; layer++) {
        const int32_t *row = map + layer * columns;
        memset(copies, 0, (size_t)l.experts * sizeof *copies);
        memset(gpu, 0, (size_t)gpus * sizeof *gpu);
        memset(node, 0, (size_t)nodes * sizeof *node);
        for (int64_t s = 0; s < columns; s++)
            if (row[s] >= 0 && row[s] < l.experts)
                copies[row[s]]++;
        double total = 0;
        for (int64_t s = 0; s < columns; s++) {
            if (row[s] < 0 || row[s] >= l.experts)
                continue;
            double w = loads_at(&l, layer, row[s]) / (double)copies[row[s]];
            gpu[s / slots] += w;
            node[s / slots / per_node] += w;
            total += w;
        }
        double gmax = 0, nmax = 0;
        for (int64_t g = 0; g < gpus; g++)
            gmax = gpu[g] > gmax ? gpu[g] : gmax;
        for (int64_t n = 0; n < nodes; n++)
            nmax = node[n] > nmax ? node[n] : nmax;
        double gi = gmax / (total / (double)gpus), ni = nmax / (total / (double)nodes);
        gpu_mean += gi / (double)l.layers;
        node_mean += ni / (double)l.layers;
        gpu_worst = gi > gpu_worst ? gi : gpu_worst;
        node_worst = ni > node_worst ? ni : node_worst;
    }
    printf("gpu_imb_avg %.5f gpu_imb_worst %.5f node_imb_avg %.5f node_imb_worst %.5f", gpu_mean, gpu_worst,
           node_mean, node_worst);
    if (argc > 5) {
        struct trace t;
        if (trace_read(argv[5], l.experts, &t, &d) != TRACE_OK) {
            diags_print(&d, stderr);
            return 3;
        }
        struct traffic hashed, local;
        traffic_measure(&t, map, gpus, slots, per_node, l.experts, false, &hashed);
        traffic_measure(&t, map, gpus, slots, per_node, l.experts, true, &local);
        printf(" remote_pair %.5f nodes_per_tok %.5f local_remote_pair %.5f local_nodes_per_tok %.5f",
               hashed.remote_dispatch_fraction, hashed.remote_domains_per_token, local.remote_dispatch_fraction,
               local.remote_domains_per_token);
        trace_release(&t);
    }
    printf("\n");
    free(map);
    free(gpu);
    free(node);
    free(copies);
    loads_release(&l);
    return 0;
}
