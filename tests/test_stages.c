/* Layers to pipeline stages: the DP against hand cases, and the ILP proving the DP optimal. */
#include "fixtures.h"
#include "plan.h"
#include "stages.h"
#include "tap.h"

#include <stdlib.h>
#include <unistd.h>

static void hand_cases(void)
{
    double time[5] = {1, 2, 3, 4, 5}, memory[5] = {1, 1, 1, 1, 1};
    struct stage_problem p = {.layers = 5, .time = time, .memory = memory, .capacity = 100, .stages = 2};
    struct stage_split s;
    /* splits of 1..5 in two: {1,2,3 | 4,5} = max(6, 9) = 9 beats {1,2,3,4 | 5} = 10 and
     * {1,2 | 3,4,5} = 12 */
    CHECK(stages_dp(&p, &s) && s.max_time == 9 && s.start[1] == 3, "1..5 in two stages: [1,2,3 | 4,5], 9");
    stage_split_release(&s);
    /* with the LM head (time 4) on the last stage: {1,2,3,4 | 5 + 4} = 10 beats 6 | 13 */
    p.last_time = 4;
    CHECK(stages_dp(&p, &s) && s.max_time == 10 && s.start[1] == 4, "the last stage carries the head: [1..4 | 5 + head], 10");
    stage_split_release(&s);
    /* memory 3 per stage at most: 5 layers in 2 stages cannot fit */
    p.capacity = 2.5;
    CHECK(!stages_dp(&p, &s), "memory too small for any split: none");
    struct lp_result r;
    CHECK(!stages_ilp(&p, NULL, 5, &s, &r) && r.status == LP_INFEASIBLE, "and the ILP proves it infeasible");
    /* capacity 3 leaves one split: [1,2,3 | 4,5] (memory 3 + 2) */
    p.capacity = 3;
    p.last_time = 0;
    CHECK(stages_dp(&p, &s) && s.start[1] == 3 && s.max_time == 9, "capacity 3 forces [1,2,3 | 4,5]");
    stage_split_release(&s);
}

static void deepseek(void)
{
    double time[61], memory[61];
    struct stage_problem problem = fixture_deepseek_stages(time, memory);
    for (int64_t stages = 2; stages <= 8; stages++) {
        problem.stages = stages;
        struct stage_split dp, warm, cold;
        struct lp_result a, b;
        bool ok = stages_dp(&problem, &dp);
        ok = ok && stages_ilp(&problem, &dp, 10, &warm, &a) && stages_ilp(&problem, NULL, 10, &cold, &b);
        CHECK(ok && a.status == LP_OPTIMAL && a.gap == 0 && fabs(a.objective / dp.max_time - 1) < 1e-12 &&
                  b.status == LP_OPTIMAL && fabs(b.objective / dp.max_time - 1) < 1e-12,
              "DeepSeek-V3, 61 layers in %lld stages: the ILP proves the DP optimum (warm %.3f s, cold %.3f s)",
              (long long)stages, a.seconds, b.seconds);
        bool within = true;
        for (int64_t s = 0; ok && s < stages; s++)
            within &= stage_memory(&problem, &dp, s) <= problem.capacity && stage_time(&problem, &dp, s) <= dp.max_time;
        CHECK(within, "every stage within memory and the bottleneck");
        stage_split_release(&dp);
        stage_split_release(&warm);
        stage_split_release(&cold);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    hand_cases();
    deepseek();
    return tap_done();
}
