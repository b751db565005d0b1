/* traffic.c: see traffic.h. */
#include "traffic.h"

#include "diag.h"

#include <math.h>
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

/* The replica of expert e that token t is sent to, by the hash, among all of e's copies. */
static int64_t hashed_replica(const int64_t *first, const int64_t *holder, int64_t token, int64_t e)
{
    int64_t copies = first[e + 1] - first[e];
    return copies == 1 ? holder[first[e]] : holder[first[e] + (int64_t)(pick(token, e) % (uint64_t)copies)];
}

/* Per expert, the devices holding its replicas, in slot order: holder[first[e] .. first[e + 1]). */
static void replica_holders(const int32_t *row, int64_t width, int64_t slots, int64_t experts,
                            int64_t *first, int64_t *holder)
{
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
        replica_holders(row, width, slots, experts, first, holder);
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
                    device = hashed_replica(first, holder, token, e);
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

void traffic_layer_pace(const struct moe_layer_physics *ph, double most_dispatches, double most_copies,
                        double most_crossing, double busiest_nic_bytes, int64_t devices_per_domain,
                        struct layer_time *out)
{
    double compute = fmax(most_dispatches * ph->flops_per_dispatch / ph->peak_flops_per_s,
                          most_copies * ph->expert_bytes / ph->hbm_bytes_per_s);
    double up = most_crossing * ph->hidden * 3 / ph->scale_up_bytes_per_s;
    double nic = busiest_nic_bytes / ((double)devices_per_domain * ph->nic_bytes_per_s);
    double comm = fmax(up, nic);
    *out = (struct layer_time){.compute_s = compute, .scale_up_s = up, .scale_out_s = nic,
                               .total_s = ph->overlap ? fmax(compute, comm) : compute + comm};
}

bool traffic_experts_whole(const int32_t *map, int64_t layers, int64_t devices, int64_t slots,
                           int64_t devices_per_domain, int64_t experts)
{
    int64_t width = devices * slots;
    int64_t *home = xmalloc((size_t)(experts > 0 ? experts : 1) * sizeof *home);
    bool whole = true;
    for (int64_t layer = 0; layer < layers && whole; layer++) {
        for (int64_t e = 0; e < experts; e++)
            home[e] = -1;
        for (int64_t s = 0; s < width && whole; s++) {
            int32_t e = map[layer * width + s];
            if (e < 0 || e >= experts)
                continue;
            int64_t domain = s / slots / devices_per_domain;
            whole = home[e] < 0 || home[e] == domain;
            home[e] = domain;
        }
    }
    free(home);
    return whole;
}

/* The pace of one layer from its per-device and per-domain counts (already scaled to the step). */
static void layer_pace(const double *dispatched, const double *held, const double *crossing_up,
                       const double *sent, const double *received, int64_t devices,
                       int64_t devices_per_domain, const struct moe_layer_physics *ph, struct layer_time *out)
{
    double most_dispatches = 0, most_copies = 0, most_crossing = 0, busiest = 0;
    for (int64_t g = 0; g < devices; g++) {
        most_dispatches = fmax(most_dispatches, dispatched[g]);
        most_copies = fmax(most_copies, held[g]);
        most_crossing = fmax(most_crossing, crossing_up[g]);
    }
    int64_t domains = devices / devices_per_domain;
    for (int64_t j = 0; j < domains && domains > 1; j++)
        busiest = fmax(busiest, fmax(sent[j], received[j]));
    traffic_layer_pace(ph, most_dispatches, most_copies, most_crossing, busiest, devices_per_domain, out);
}

void traffic_layer_times(const struct trace *trace, const double *loads, int64_t layers,
                         const int32_t *map, int64_t devices, int64_t slots, int64_t devices_per_domain,
                         int64_t experts, int64_t k, const struct moe_layer_physics *ph,
                         struct layer_time *out, struct traffic *hashed)
{
    double all_dispatches = 0, all_remote = 0, all_remote_domains = 0, all_tokens = 0;
    int64_t width = devices * slots, domains = devices / devices_per_domain;
    int64_t *first = xmalloc((size_t)(experts + 1) * sizeof *first);
    int64_t *holder = xmalloc((size_t)(width > 0 ? width : 1) * sizeof *holder);
    int64_t *seen = xcalloc((size_t)domains, sizeof *seen);
    double *dispatched = xmalloc((size_t)devices * sizeof *dispatched);
    double *held = xmalloc((size_t)devices * sizeof *held);
    double *crossing_up = xmalloc((size_t)devices * sizeof *crossing_up);
    double *sent = xmalloc((size_t)domains * sizeof *sent);
    double *received = xmalloc((size_t)domains * sizeof *received);
    double *share = xmalloc((size_t)domains * sizeof *share);
    int64_t stamp = 0;
    for (int64_t layer = 0; layer < layers; layer++) {
        const int32_t *row = map + layer * width;
        replica_holders(row, width, slots, experts, first, holder);
        memset(held, 0, (size_t)devices * sizeof *held);
        for (int64_t e = 0; e < experts; e++)
            for (int64_t c = first[e]; c < first[e + 1]; c++)
                held[holder[c]]++;
        memset(dispatched, 0, (size_t)devices * sizeof *dispatched);
        memset(crossing_up, 0, (size_t)devices * sizeof *crossing_up);
        memset(sent, 0, (size_t)domains * sizeof *sent);
        memset(received, 0, (size_t)domains * sizeof *received);
        double tokens = 0;
        if (trace) {
            for (int64_t token = 0; token < trace->tokens; token++) {
                const int32_t *chosen = trace_row(trace, layer, token);
                if (chosen[0] < 0)
                    continue;
                tokens++;
                int64_t own = token % devices, home = own / devices_per_domain;
                stamp++;
                for (int64_t j = 0; j < trace->k; j++) {
                    int64_t e = chosen[j], copies = first[e + 1] - first[e];
                    if (copies == 0)
                        continue;
                    int64_t device = hashed_replica(first, holder, token, e);
                    int64_t domain = device / devices_per_domain;
                    dispatched[device]++;
                    all_dispatches++;
                    all_remote += domain != home;
                    if (device != own)
                        crossing_up[device]++;
                    if (domain != home && seen[domain] != stamp) {
                        seen[domain] = stamp;
                        all_remote_domains++;
                        sent[home] += ph->hidden * 1;     /* dispatch out */
                        received[domain] += ph->hidden * 1;
                        sent[domain] += ph->hidden * 2;   /* combine back */
                        received[home] += ph->hidden * 2;
                    }
                }
            }
        } else {
            const double *load = loads + layer * experts;
            double total = 0;
            memset(share, 0, (size_t)domains * sizeof *share);
            for (int64_t s = 0; s < width; s++) {
                if (row[s] < 0 || row[s] >= experts)
                    continue;
                double w = load[row[s]] / (double)(first[row[s] + 1] - first[row[s]]);
                dispatched[s / slots] += w;
                crossing_up[s / slots] += w * (1 - 1 / (double)devices);
                share[s / slots / devices_per_domain] += w;
                total += w;
            }
            tokens = total / (double)k;
            for (int64_t j = 0; j < domains && domains > 1 && total > 0; j++) {
                double reach = 1 - pow(1 - share[j] / total, (double)k); /* a token of another domain */
                double from_others = tokens * (1 - 1 / (double)domains) * reach;
                received[j] += from_others * ph->hidden * 1;
                sent[j] += from_others * ph->hidden * 2;
                for (int64_t h = 0; h < domains; h++)
                    if (h != j) {
                        sent[h] += from_others / (double)(domains - 1) * ph->hidden * 1;
                        received[h] += from_others / (double)(domains - 1) * ph->hidden * 2;
                    }
            }
        }
        all_tokens += trace ? tokens : 0;
        double scale = tokens > 0 ? ph->step_tokens / tokens : 0;
        for (int64_t g = 0; g < devices; g++) {
            dispatched[g] *= scale;
            crossing_up[g] *= scale;
        }
        for (int64_t j = 0; j < domains; j++) {
            sent[j] *= scale;
            received[j] *= scale;
        }
        layer_pace(dispatched, held, crossing_up, sent, received, devices, devices_per_domain, ph, &out[layer]);
    }
    if (hashed)
        *hashed = (struct traffic){.remote_dispatch_fraction = all_dispatches > 0 ? all_remote / all_dispatches : 0,
                                   .remote_domains_per_token = all_tokens > 0 ? all_remote_domains / all_tokens : 0};
    free(first);
    free(holder);
    free(seen);
    free(dispatched);
    free(held);
    free(crossing_up);
    free(sent);
    free(received);
    free(share);
}

void traffic_naive_map(int64_t layers, int64_t experts, int64_t devices, int64_t slots, int32_t *map)
{
    int64_t width = devices * slots;
    for (int64_t i = 0; i < layers; i++)
        for (int64_t s = 0; s < width; s++) {
            int64_t device = s / slots, slot = s % slots, e = slot * devices + device;
            map[i * width + s] = e < experts ? (int32_t)e : -1;
        }
}
