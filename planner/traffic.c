/* traffic.c: see traffic.h. */
#include "traffic.h"

#include "diag.h"

#include <stdlib.h>
#include <string.h>

/* A fixed mix of (token, expert): the same replica for the same pair on every run. */
static uint64_t pick(int64_t token, int64_t expert)
{
    uint64_t x = (uint64_t)token * 0x9E3779B97F4A7C15ull ^ (uint64_t)expert * 0xC2B2AE3D27D4EB4Full;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

void traffic_measure(const struct trace *t, const int32_t *map, int64_t devices, int64_t slots,
                     int64_t devices_per_domain, int64_t experts, bool local_routing,
                     struct traffic *out)
{
    int64_t width = devices * slots;
    int64_t domains = devices / devices_per_domain;
    /* per expert: the devices holding a replica (CSR) */
    int64_t *first = xmalloc((size_t)(experts + 1) * sizeof *first);
    int64_t *holder = xmalloc((size_t)width * sizeof *holder);
    int64_t *local = xmalloc((size_t)width * sizeof *local);
    int64_t *seen = xcalloc((size_t)domains, sizeof *seen);
    double dispatches = 0, remote = 0, remote_domains = 0, tokens = 0;
    int64_t stamp = 0;
    for (int64_t layer = 0; layer < t->layers; layer++) {
        const int32_t *row = map + layer * width;
        memset(first, 0, (size_t)(experts + 1) * sizeof *first);
        for (int64_t s = 0; s < width; s++)
            if (row[s] >= 0 && row[s] < experts)
                first[row[s] + 1]++;
        for (int64_t e = 0; e < experts; e++)
            first[e + 1] += first[e];
        int64_t *fill = xmalloc((size_t)experts * sizeof *fill);
        memcpy(fill, first, (size_t)experts * sizeof *fill);
        for (int64_t s = 0; s < width; s++)
            if (row[s] >= 0 && row[s] < experts)
                holder[fill[row[s]]++] = s / slots;
        free(fill);
        for (int64_t token = 0; token < t->tokens; token++) {
            const int32_t *chosen = trace_row(t, layer, token);
            if (chosen[0] < 0)
                continue;
            int64_t home = (token % devices) / devices_per_domain;
            stamp++;
            int64_t away = 0;
            for (int64_t j = 0; j < t->k; j++) {
                int64_t e = chosen[j];
                int64_t copies = first[e + 1] - first[e];
                if (copies == 0)
                    continue;
                int64_t device;
                int64_t near = 0;
                if (local_routing)
                    for (int64_t c = first[e]; c < first[e + 1]; c++)
                        if (holder[c] / devices_per_domain == home)
                            local[near++] = holder[c];
                if (near > 0)
                    device = local[pick(token, e) % (uint64_t)near];
                else
                    device = holder[first[e] + (int64_t)(pick(token, e) % (uint64_t)copies)];
                int64_t domain = device / devices_per_domain;
                dispatches++;
                if (domain != home) {
                    remote++;
                    if (seen[domain] != stamp) {
                        seen[domain] = stamp;
                        away++;
                    }
                }
            }
            remote_domains += (double)away;
            tokens++;
        }
    }
    out->remote_dispatch_fraction = dispatches > 0 ? remote / dispatches : 0;
    out->remote_domains_per_token = tokens > 0 ? remote_domains / tokens : 0;
    free(first);
    free(holder);
    free(local);
    free(seen);
}
