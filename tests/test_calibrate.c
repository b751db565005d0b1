/* The calibration's prediction of a deployment against the roofline worked by hand, and its
 * fit on measurements made from known efficiencies (it must find them again). */
#include "calibrate.h"
#include "fixtures.h"
#include "lengths.h"
#include "tap.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

static struct measurement llama2_h200(const struct model *m, const struct topology *t)
{
    return (struct measurement){
        .id = "llama2-h200", .model = m, .topology = t, .racks = 1, .devices = 1,
        .workload = {.weights = PREC_FP8, .expert_weights = PREC_FP8, .kv = PREC_FP8,
                     .reserve_fraction = PLAN_DEFAULT_RESERVE_FRACTION, .reserve_bytes = -1, .tp = 1},
        .batch = 64, .isl = 512, .osl = 294, .measured = 1, .arrivals = SERVE_CLOSED};
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    struct model llama = fixture_model("models/llama-2-70b.yaml");
    struct model dsv3 = fixture_model("models/deepseek-v3.yaml");
    struct topology h200 = fixture_topology("topologies/hgx-h200.xml");
    struct topology h800 = fixture_topology("topologies/hgx-h800.xml");
    struct topology b200 = fixture_topology("topologies/hgx-b200.xml");
    struct topology mi300x = fixture_topology("topologies/mi300x.xml");

    /* By hand: with prefill on the same device, each step 64 / 294 requests end and as many
     * prompts of 512 tokens start, so one step carries the 64 sequences' decode, reading the KV
     * at the mean 512 + 294 / 2 = 659 tokens, and 64 x 512 / 294 = 111.5 prompt tokens, which
     * attend to 256 tokens on average (causal); one device, so tokens/s per device = 64 / step. */
    struct measurement one = llama2_h200(&llama, &h200);
    char why[256];
    bool laid = calibrate_prepare(&one, 1, why, sizeof why);
    CHECK(laid, "Llama 2 70B on one H200 lays out %s", laid ? "" : why);
    CHECK_EQ(one.workload.context, 512 + 294, "HBM holds each sequence at isl + osl = 806 tokens");
    struct efficiency bound = EFFICIENCY_BOUND;
    struct roof_setup s = {.model = &llama, .topology = &h200, .graph = &one.graph, .layout = one.layout,
                           .workload = one.workload, .efficiency = bound};
    struct roof_step carried = {.sequences = 64, .tokens_per_sequence = 1, .context = 659,
                             .prefill_prompts = 64.0 / 294, .prefill_tokens_per_prompt = 512, .prefill_context = 256};
    struct roof_point mixed, decode;
    roof_step(&s, &carried, &mixed);
    s.workload.context = 659;
    roof_decode(&s, 64, &decode);
    /* the steps as they come (serve.h): closed-loop, 64 / 294 = 0.2177 prompts start a step, each
     * riding whole in one step, so 21.77% of steps carry a 512-token chunk (at 256) and the rest
     * none; tokens/s per device = 64 / the mean step */
    struct roof_step bare = {.sequences = 64, .tokens_per_sequence = 1, .context = 659};
    struct roof_step chunk = bare;
    chunk.chunk_tokens = 512;
    chunk.chunk_context = 256;
    struct roof_point t0, t1;
    roof_step(&s, &bare, &t0);
    roof_step(&s, &chunk, &t1);
    double f = 64.0 / 294;
    int64_t batch;
    CHECK_REL(calibrate_predict(&one, &bound, &batch), 64 / ((1 - f) * t0.step_s + f * t1.step_s), 1e-12,
              "serving: 64 / (78.2%% decode-only steps and 21.8%% carrying a 512-token prompt)");
    CHECK(64 / ((1 - f) * t0.step_s + f * t1.step_s) <= 64 / mixed.step_s * (1 + 1e-12),
          "no more than its mean step spread over every step (111.5 prompt tokens each) would serve");
    CHECK(mixed.compute_s > decode.compute_s && mixed.step_s >= decode.step_s,
          "the prefill share adds compute (%.4g ms over %.4g ms) and never shortens the step",
          mixed.compute_s * 1e3, decode.compute_s * 1e3);
    /* A measurement of a length mix (the `lengths` field): a mix of one class, 512 and 294,
     * predicts what the fixed lengths do; half 256/100 and half 768/488 (the same means) holds
     * E[osl (isl + osl)] / E[osl] = (0.5 x 100 x 356 + 0.5 x 488 x 1,256) / 294 = 1,102.9 -> 1,103
     * tokens a sequence in HBM, reads the KV at E[osl (isl + osl / 2)] / E[osl] = 891.9 tokens
     * rather than 659, and so serves less at batch 64. */
    {
        const char *alike_csv = "isl,osl,weight\n512,294,1\n", *two_csv = "isl,osl,weight\n256,100,1\n768,488,1\n";
        struct length_mix alike, two;
        struct diags d;
        diags_init(&d);
        bool read = length_mix_read_buffer("alike.csv", alike_csv, strlen(alike_csv), &alike, &d) == LENGTHS_OK &&
                    length_mix_read_buffer("two.csv", two_csv, strlen(two_csv), &two, &d) == LENGTHS_OK;
        diags_release(&d);
        if (CHECK(read, "the two mixes read")) {
            struct measurement fixed = llama2_h200(&llama, &h200), one_class = fixed, of_two = fixed;
            one_class.lengths = &alike;
            of_two.lengths = &two;
            bool prepared = calibrate_prepare(&fixed, 1, why, sizeof why) &&
                            calibrate_prepare(&one_class, 1, why, sizeof why) &&
                            calibrate_prepare(&of_two, 1, why, sizeof why);
            CHECK(prepared, "the three measurements lay out");
            double at_fixed = calibrate_predict(&fixed, &bound, NULL), at_one = calibrate_predict(&one_class, &bound, NULL);
            double at_two = calibrate_predict(&of_two, &bound, NULL);
            CHECK(at_one == at_fixed, "a one-class mix predicts as its fixed lengths: %.2f and %.2f tokens/s", at_one,
                  at_fixed);
            CHECK_EQ(of_two.workload.context, 1103, "the mix holds 1,103 tokens a sequence");
            CHECK(at_two < at_fixed, "and serves less at batch 64: %.2f against %.2f tokens/s", at_two, at_fixed);
            length_mix_release(&alike);
            length_mix_release(&two);
        }
    }

    /* a time-per-token target picks the largest batch whose whole step meets it */
    one.batch = 0;
    one.tpot_s = 0.040;
    double within = calibrate_predict(&one, &bound, &batch);
    struct measurement next = one;
    next.batch = batch + 1;
    next.tpot_s = 0;
    double step = batch / within, longer = (batch + 1) / calibrate_predict(&next, &bound, NULL);
    CHECK(batch > 1 && step <= 0.040 && longer > 0.040,
          "40 ms a token: batch %lld steps %.4f s, one more %.4f s", (long long)batch, step, longer);

    /* Measurements made from known efficiencies, one group each on H800 (DeepSeek-V3, decode
     * over 2 nodes and prefill) and H200 (Llama 2 70B, offline and at 40 ms a token), with the
     * network at its priors: the fit must find estimates within 2% of every one. */
    struct measurement m[6];
    m[0] = (struct measurement){.id = "dsv3-decode", .model = &dsv3, .topology = &h800, .racks = 2,
                                .workload = {.context = 4096, .weights = PREC_FP8, .expert_weights = PREC_FP8,
                                             .kv = PREC_BF16, .reserve_fraction = 0.1, .reserve_bytes = -1,
                                             .tp = 1},
                                .batch = 512};
    m[1] = m[0];
    m[1].id = "dsv3-prefill";
    m[1].prefill = true;
    m[1].batch = 32;
    m[2] = llama2_h200(&llama, &mi300x);
    m[2].id = "llama2-offline";
    m[2].batch = 0;
    m[3] = llama2_h200(&llama, &mi300x);
    m[3].id = "llama2-40ms";
    m[3].batch = 0;
    m[3].tpot_s = 0.040;
    m[4] = llama2_h200(&llama, &b200);
    m[4].id = "llama2-b200";
    m[4].workload.weights = m[4].workload.expert_weights = PREC_FP4;
    m[4].batch = 0;
    m[5] = m[4];
    m[5].id = "llama2-b200-40ms";
    m[5].tpot_s = 0.040;
    laid = calibrate_prepare(m, 6, why, sizeof why);
    CHECK(laid, "six synthetic measurements lay out %s", laid ? "" : why);
    CHECK(m[0].group == m[1].group && m[2].group == m[3].group && m[4].group == m[5].group &&
              m[0].group != m[2].group && m[2].group != m[4].group,
          "grouped by family and weight precision: Hopper (H800) fp8, CDNA3 (MI300X) fp8, Blackwell (B200) fp4");
    /* the latency factor at its prior's 2.5 (calibrate.c), where the prior costs the truth nothing */
    const struct efficiency truth[3] = {{0.35, 0.45, 0.775, 1, 0, 0.8, 2.5, 0},
                                        {0.7, 0.55, 0.775, 1, 0, 0.8, 2.5, 0},
                                        {0.6, 0.3, 0.775, 1, 0, 0.8, 2.5, 0}};
    for (int i = 0; i < 6; i++)
        m[i].measured = calibrate_predict(&m[i], &truth[m[i].group], NULL);
    struct calibration_fit fit;
    calibrate_fit(m, 6, NULL, NULL, &fit);
    double worst = 0;
    for (int i = 0; i < 6; i++) {
        struct efficiency e = calibration_efficiency(&fit, m[i].group);
        double error = fabs(calibrate_predict(&m[i], &e, NULL) / m[i].measured - 1);
        worst = error > worst ? error : worst;
    }
    /* the shrinkage toward the pooled factors costs the truth its deviations, so the fit may
     * trade a little error for less of them, and must do no worse than the truth itself */
    struct calibration_fit truth_fit = fit;
    for (int g = 0; g < 3; g++) {
        truth_fit.groups[g].compute = truth[g].compute;
        truth_fit.groups[g].memory = truth[g].memory;
        truth_fit.groups[g].latency = truth[g].latency;
    }
    truth_fit.scale_up = 0.775;
    truth_fit.scale_out = 1;
    truth_fit.step_overhead_s = 0;
    truth_fit.experts = 0.8;
    double at_truth = calibrate_objective(m, 6, NULL, &truth_fit);
    CHECK(fit.objective <= at_truth * (1 + 1e-9), "the fit's objective %.6f is no worse than the truth's %.6f",
          fit.objective, at_truth);
    CHECK(worst < 0.03, "and reproduces measurements made from known efficiencies within %.2f%% (3%%)", worst * 100);
    struct calibration_fit again;
    calibrate_fit(m, 6, NULL, NULL, &again);
    CHECK(memcmp(&fit, &again, sizeof fit) == 0, "the fit is deterministic: the same factors twice");
    bool use[6] = {true, true, false, false, true, true};
    struct calibration_fit without;
    calibrate_fit(m, 6, use, &fit, &without);
    CHECK(without.groups[m[2].group].measurements == 0 &&
              fabs(without.groups[m[2].group].compute / without.compute - 1) < 0.01,
          "a group left without measurements takes the pooled factors (%.3f vs %.3f)",
          without.groups[m[2].group].compute, without.compute);
    return tap_done();
}
