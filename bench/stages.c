/* Benchmark: DeepSeek-V3's 61 layers into 2-8 pipeline stages (GB200 NVL72 racks): the exact DP,
 * and the ILP proving it optimal, warm-started and cold; median of 11 runs each.
 * Run from the source root: build/bench/stages */
#include "bench.h"
#include "fixtures.h"
#include "plan.h"
#include "stages.h"


int main(void)
{
    double time[61], memory[61];
    struct stage_problem problem = fixture_deepseek_stages(time, memory);
    printf("stages   DP (us)   ILP warm (ms)   ILP cold (ms)   status\n");
    for (int64_t stages = 2; stages <= 8; stages++) {
        problem.stages = stages;
        enum { RUNS = 11 };
        double dp[RUNS], warm[RUNS], cold[RUNS];
        const char *status = "";
        for (int run = 0; run < RUNS; run++) {
            struct stage_split a, b, c;
            struct lp_result ra, rb;
            double t0 = monotonic_seconds();
            stages_dp(&problem, &a);
            double t1 = monotonic_seconds();
            stages_ilp(&problem, &a, 10, &b, &ra);
            double t2 = monotonic_seconds();
            stages_ilp(&problem, NULL, 10, &c, &rb);
            double t3 = monotonic_seconds();
            dp[run] = t1 - t0;
            warm[run] = t2 - t1;
            cold[run] = t3 - t2;
            status = ra.status == LP_OPTIMAL && rb.status == LP_OPTIMAL ? "proven optimal, gap 0" : "NOT proven";
            stage_split_release(&a);
            stage_split_release(&b);
            stage_split_release(&c);
        }
        qsort(dp, RUNS, sizeof dp[0], bench_by_value);
        qsort(warm, RUNS, sizeof warm[0], bench_by_value);
        qsort(cold, RUNS, sizeof cold[0], bench_by_value);
        printf("%6lld %9.1f %15.2f %15.2f   %s\n", (long long)stages, dp[RUNS / 2] * 1e6,
               warm[RUNS / 2] * 1e3, cold[RUNS / 2] * 1e3, status);
    }
    return 0;
}
