/* Benchmark: the serving simulation (simulate.h) on 100,000 measured requests (+ 10,000 warm-up)
 * of a three-class mix, at loads that keep about 10, 160 and 1,000 sequences an instance
 * decoding, aggregated and disaggregated (issue 26, item 5: well under a second on one core),
 * then as a closed loop of 10, 160 and 1,000 clients an instance; median of 5 runs each.
 * Run: build/bench/simulate */
#include "bench.h"
#include "simulate.h"

#include <stdio.h>

/* A roofline-like step: 8 ms of weights, 40 us a sequence, 20 us per 1000 tokens of context a
 * sequence, 0.1 us a prompt token. */
static double step_time(void *context, const struct sim_step *s)
{
    (void)context;
    return 0.008 + 4e-5 * (double)s->sequences + 2e-8 * (double)s->sequences * s->context_tokens +
           1e-7 * (double)s->prefill_tokens;
}

static double prefill_time(void *context, int64_t prompts, int64_t tokens)
{
    (void)context;
    return 0.01 + 1e-7 * (double)tokens + 1e-3 * (double)prompts;
}

int main(void)
{
    static const int64_t isl[] = {1000, 4000, 8000}, osl[] = {1000, 250, 4000};
    static const double weight[] = {0.5, 0.3, 0.2}; /* mean osl 1,375 */
    /* requests/s for 4 instances: about 10, 160 and 1,000 sequences decoding each */
    static const double rates[] = {3, 13, 17};
    static const int64_t clients[] = {10, 160, 1000};
    enum { RUNS = 5 };
    struct sim_timing timing = {.step_s = step_time, .prefill_s = prefill_time};
    for (int mode = 0; mode < 4; mode++)
        for (int i = 0; i < 3; i++) {
            struct sim_config c;
            sim_config_init(&c);
            c.mode = mode % 2 ? SIM_DISAGGREGATED : SIM_AGGREGATED;
            if (mode >= 2) {
                c.arrivals = SIM_CLOSED;
                c.concurrency = clients[i];
            }
            c.requests = 100000;
            c.warmup = 10000;
            c.arrivals_per_s = rates[i];
            c.isl = isl;
            c.osl = osl;
            c.weight = weight;
            c.classes = 3;
            c.decode_instances = 4;
            c.prefill_instances = 4;
            c.kv_transfer_s = 0.005;
            double seconds[RUNS];
            struct sim_result r = {0};
            for (int run = 0; run < RUNS; run++) {
                double start = monotonic_seconds();
                if (simulate(&c, &timing, &r, NULL) != SIM_OK)
                    return 1;
                seconds[run] = monotonic_seconds() - start;
            }
            double median = bench_median(seconds, RUNS); /* sorts: seconds[0] is the least */
            char load[40];
            if (mode >= 2)
                snprintf(load, sizeof load, "closed, %4lld clients", (long long)clients[i]);
            else
                snprintf(load, sizeof load, "%2.0f requests/s", rates[i]);
            printf("%s, %s: median %.3f s (min %.3f) | %.0f decoding an instance, %lld steps, "
                   "TTFT p99 %.3f s, TPOT p50 %.1f ms, %.0f tokens/s\n",
                   mode % 2 ? "disaggregated" : "aggregated", load, median, seconds[0],
                   r.mean_decoding_sequences / 4, (long long)r.steps, r.ttft_s.p99, r.tpot_s.p50 * 1e3,
                   r.output_tokens_per_s);
        }
    return 0;
}
