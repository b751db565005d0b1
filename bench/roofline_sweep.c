/* Benchmark: a 200-point decode sweep from batch 1 to 1,000,000 for DeepSeek-V3 on 4 GB200
 * NVL72 racks (issue #4: well under 10 ms), plus the crossover search; median of 21 runs.
 * Run from the source root: build/bench/roofline_sweep */
#include "bench.h"
#include "fixtures.h"
#include "roofline.h"

#include <math.h>

int main(void)
{
    struct model m = fixture_model("models/deepseek-v3.yaml");
    struct topology t = fixture_topology("topologies/gb200-nvl72.xml");
    struct graph_summary g;
    if (graph_analyse(&t, 4, &g) != GRAPH_OK)
        return 1;
    struct roof_setup s = {.model = &m, .topology = &t, .graph = &g, .efficiency = EFFICIENCY_BOUND};
    s.workload = (struct workload){.batch = 1, .context = 8192, .weights = PREC_FP8,
                                   .expert_weights = PREC_FP8, .kv = PREC_BF16,
                                   .reserve_fraction = 0.1, .reserve_bytes = -1};
    if (!plan_choose_layout(&m, &t, 4, 288, &s.workload, &s.layout))
        return 1;
    enum { RUNS = 21, POINTS = 200 };
    double sweep[RUNS], crossover[RUNS], checksum = 0;
    for (int run = 0; run < RUNS; run++) {
        double start = monotonic_seconds();
        for (int i = 0; i < POINTS; i++) {
            int64_t batch = (int64_t)llround(exp(log(1e6) * i / (POINTS - 1)));
            struct roof_point p;
            roof_decode(&s, batch, &p);
            checksum += p.step_s;
        }
        double middle = monotonic_seconds();
        checksum += (double)roof_crossover_batch(&s);
        crossover[run] = monotonic_seconds() - middle;
        sweep[run] = middle - start;
    }
    qsort(sweep, RUNS, sizeof sweep[0], bench_by_value);
    qsort(crossover, RUNS, sizeof crossover[0], bench_by_value);
    printf("200-point sweep, DeepSeek-V3 on 4 x GB200 NVL72: median %.3f ms (min %.3f, max %.3f) over %d runs\n",
           sweep[RUNS / 2] * 1e3, sweep[0] * 1e3, sweep[RUNS - 1] * 1e3, RUNS);
    printf("crossover search: median %.3f ms\n", crossover[RUNS / 2] * 1e3);
    printf("(checksum %.6g)\n", checksum);
    return 0;
}
