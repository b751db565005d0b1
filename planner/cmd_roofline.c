/* cmd_roofline.c: `rackplan roofline MODEL TOPOLOGY`: time per token against batch, each term. */
#include "cli.h"
#include "commands.h"
#include "graph.h"
#include "model.h"
#include "plan.h"
#include "roofline.h"
#include "serve.h"
#include "topology.h"

#include "../reports/json.h"
#include "../reports/plot.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct report {
    const struct model *model;
    const struct topology *topology;
    const struct options *options;
    const struct roof_setup *setup;
    const struct roof_point *points;
    const struct roof_point *bound_points; /* the same batches at efficiency 1; NULL: points are */
    const struct calibration *calibration; /* the row --estimate used, or NULL */
    int64_t count;
    double floor_s, ideal_floor_s, bound_floor_s;
    int64_t crossover;
    const struct serve_workload *serving; /* --isl/--osl: each point a serving step; NULL: bare decode */
    const struct cli_lengths *lengths;    /* what the serving workload's mix is */
    const struct serve_tail *tails;       /* serving decode points: TTFT and TPOT at p50 .. p99 (all 0
                                           * where the point does not fit); NULL: none */
};

static void write_tree(FILE *out, enum json_syntax syntax, const struct report *r)
{
    const struct layout *l = &r->setup->layout;
    const struct efficiency *e = &r->setup->efficiency;
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    cli_json_header(&j, r->model, r->topology, l->racks, l->devices);
    json_key(&j, "phase");
    json_string(&j, r->options->prefill ? "prefill" : "decode");
    json_key(&j, "kind");
    json_string(&j, r->bound_points ? "estimate" : "bound");
    json_key(&j, "layout");
    cli_json_parallel(&j, l);
    cli_json_precision(&j, &r->setup->workload);
    json_key(&j, "context");
    json_int(&j, r->setup->workload.context);
    json_key(&j, "attention_form");
    json_string(&j, model_attention_form_name(model_attention_form(
                        r->model, r->options->prefill ? ATTENTION_PASS_PREFILL : ATTENTION_PASS_DECODE)));
    if (r->serving) {
        json_key(&j, "workload");
        json_begin_object(&j);
        cli_json_serve_workload(&j, r->serving);
        cli_json_lengths(&j, r->lengths->description);
        json_end_object(&j);
    }
    json_key(&j, "efficiency");
    cli_json_efficiency(&j, e, r->calibration);
    json_key(&j, "latency_floor_s");
    json_number(&j, r->floor_s);
    if (r->bound_points) {
        json_key(&j, "bound_latency_floor_s");
        json_number(&j, r->bound_floor_s);
    }
    json_key(&j, "latency_floor_ideal_s");
    json_number(&j, r->ideal_floor_s);
    json_key(&j, "crossover_batch");
    json_positive_or_null(&j, (double)r->crossover);
    json_key(&j, "points");
    json_begin_array(&j);
    for (int64_t i = 0; i < r->count; i++) {
        const struct roof_point *p = &r->points[i];
        json_begin_object(&j);
        json_key(&j, "batch");
        json_int(&j, p->batch);
        const struct {
            const char *key;
            double value;
        } times[] = {{"step_s", p->step_s},       {"compute_s", p->compute_s},
                     {"weights_s", p->weights_s}, {"kv_s", p->kv_s},
                     {"comm_s", p->comm_s},       {"ep_scale_up_s", p->ep_scale_up_s},
                     {"ep_scale_out_s", p->ep_scale_out_s}, {"tp_s", p->tp_s},
                     {"pp_s", p->pp_s},           {"latency_s", p->latency_s},
                     {"overhead_s", p->overhead_s}, {"tokens_per_s", p->tokens_per_s},
                     {"tokens_per_s_per_device", p->tokens_per_s_per_device}};
        for (size_t k = 0; k < sizeof times / sizeof times[0]; k++) {
            json_key(&j, times[k].key);
            json_number(&j, times[k].value);
        }
        json_key(&j, "cost_per_mtok");
        json_positive_or_null(&j, p->cost_per_mtok);
        json_key(&j, "bound");
        json_string(&j, roof_term_name(p->bound));
        json_key(&j, "fits");
        json_bool(&j, p->fits);
        if (r->tails)
            cli_json_tail(&j, &r->tails[i]);
        if (r->bound_points) {
            json_key(&j, "roofline_bound");
            json_begin_object(&j);
            json_key(&j, "step_s");
            json_number(&j, r->bound_points[i].step_s);
            json_key(&j, "tokens_per_s");
            json_number(&j, r->bound_points[i].tokens_per_s);
            json_key(&j, "tokens_per_s_per_device");
            json_number(&j, r->bound_points[i].tokens_per_s_per_device);
            json_end_object(&j);
        }
        json_end_object(&j);
    }
    json_end_array(&j);
    json_end_object(&j);
    json_finish(&j);
}

static void write_csv(FILE *out, const struct report *r)
{
    fprintf(out, "batch,step_s,compute_s,weights_s,kv_s,comm_s,ep_scale_up_s,ep_scale_out_s,tp_s,"
                 "pp_s,tokens_per_s,tokens_per_s_per_device,cost_per_mtok,bound,fits%s\n",
            r->bound_points ? ",bound_step_s,bound_tokens_per_s" : "");
    for (int64_t i = 0; i < r->count; i++) {
        const struct roof_point *p = &r->points[i];
        fprintf(out, "%" PRId64 ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,", p->batch,
                p->step_s, p->compute_s, p->weights_s, p->kv_s, p->comm_s, p->ep_scale_up_s,
                p->ep_scale_out_s, p->tp_s, p->pp_s, p->tokens_per_s, p->tokens_per_s_per_device);
        if (p->cost_per_mtok > 0)
            fprintf(out, "%.9g", p->cost_per_mtok);
        fprintf(out, ",%s,%s", roof_term_name(p->bound), p->fits ? "true" : "false");
        if (r->bound_points)
            fprintf(out, ",%.9g,%.9g", r->bound_points[i].step_s, r->bound_points[i].tokens_per_s);
        fprintf(out, "\n");
    }
}

static void write_text(FILE *out, const struct report *r)
{
    const struct layout *l = &r->setup->layout;
    const struct efficiency *e = &r->setup->efficiency;
    char a[64];
    format_count((double)l->devices, a, sizeof a);
    fprintf(out, "%s on %s%s: %" PRId64 " scale-up domain%s, %s devices, %s\n", r->model->name,
            r->topology->name, r->topology->announced ? " (announced, not shipping)" : "",
            l->racks, l->racks == 1 ? "" : "s", a, r->options->prefill ? "prefill" : "decode");
    format_count((double)r->setup->workload.context, a, sizeof a);
    const struct workload *w = &r->setup->workload;
    fprintf(out, "  weights %s", precision_name(w->weights));
    if (w->expert_weights != w->weights)
        fprintf(out, " (routed experts %s)", precision_name(w->expert_weights));
    fprintf(out, ", KV %s, context %s tokens; layout TP %" PRId64 " x DP %" PRId64 " x PP %" PRId64 "%s",
            precision_name(w->kv), a, l->tp, l->dp, l->pp, model_is_moe(r->model) ? ", EP " : "");
    if (model_is_moe(r->model))
        fprintf(out, "%" PRId64, l->ep);
    fprintf(out, "\n");
    if (r->bound_points)
        cli_text_efficiency(out, e, r->calibration);
    else
        fprintf(out, "  bound: every device at peak FLOP/s, HBM and link bandwidth (efficiency 1)\n");
    if (r->serving && r->options->prefill) {
        fprintf(out, "  workload: prompts of %lld tokens, %.0f%% of them from a prefix cache; tokens/s counts the "
                     "prompt tokens computed\n",
                (long long)r->serving->isl, r->serving->prefix_hit * 100);
    } else if (r->serving) {
        fprintf(out, "  workload: %lld prompt and %lld output tokens a request; each step carries the batch's "
                     "decode (KV read at %lld tokens) and the prefill of the prompts that replace finished "
                     "requests; tokens/s counts output tokens",
                (long long)r->serving->isl, (long long)r->serving->osl,
                (long long)(r->serving->isl + r->serving->osl / 2));
        cli_text_mtp(out, r->model, r->serving);
        fprintf(out, "\n");
        cli_text_lengths(out, r->serving, r->lengths->description, r->lengths->classes);
    }
    if (r->options->prefill) {
        format_count((double)r->setup->workload.context, a, sizeof a);
        fprintf(out, "  prompts of %s tokens; each attends to half its prompt on average (causal)\n", a);
        if (model_attention_form(r->model, ATTENTION_PASS_PREFILL) == ATTENTION_FORM_EXPANDED) {
            format_count(model_attention_flops_layers(r->model, 1, 0, 1, ATTENTION_PASS_PREFILL), a, sizeof a);
            fprintf(out, "  MLA prefilled in its expanded form (%s FLOPs a key a layer; decode runs it absorbed)\n", a);
        }
    } else {
        fprintf(out, "  latency floor %.4g ms (batch 1, no context", r->floor_s * 1e3);
        if (r->bound_points)
            fprintf(out, "; bound %.4g ms", r->bound_floor_s * 1e3);
        fprintf(out, "); W / (G x BW) %.4g ms\n", r->ideal_floor_s * 1e3);
    }
    if (!r->options->prefill) {
        if (r->crossover > 0) {
            format_count((double)r->crossover, a, sizeof a);
            fprintf(out, "  compute reaches memory at batch %s\n", a);
        } else {
            fprintf(out, "  no crossover: memory binds at every batch (KV per sequence outgrows compute)\n");
        }
    }
    fprintf(out, "\n%10s %10s %9s %9s %9s %9s %12s %10s %9s  %-8s %s", "batch",
            r->options->prefill ? "ttft ms" : "step ms", "compute", "weights", "kv", "network",
            "tokens/s", "tok/s/dev", "$/Mtok", "bound", "fits");
    if (r->bound_points)
        fprintf(out, "  %10s %12s", "bound ms", "bound tok/s");
    fprintf(out, "\n");
    for (int64_t i = 0; i < r->count; i++) {
        const struct roof_point *p = &r->points[i];
        char batch[32], rate[32], per_device[32], cost[32];
        format_count((double)p->batch, batch, sizeof batch);
        format_count(p->tokens_per_s, rate, sizeof rate);
        format_count(p->tokens_per_s_per_device, per_device, sizeof per_device);
        if (p->cost_per_mtok > 0)
            snprintf(cost, sizeof cost, "%.4g", p->cost_per_mtok);
        else
            snprintf(cost, sizeof cost, "-");
        fprintf(out, "%10s %10.4g %9.4g %9.4g %9.4g %9.4g %12s %10s %9s  %-8s %s", batch,
                p->step_s * 1e3, p->compute_s * 1e3, p->weights_s * 1e3, p->kv_s * 1e3,
                p->comm_s * 1e3, rate, per_device, cost, roof_term_name(p->bound),
                r->bound_points ? (p->fits ? "yes " : "no  ") : p->fits ? "yes" : "no");
        if (r->bound_points) {
            format_count(r->bound_points[i].tokens_per_s, rate, sizeof rate);
            fprintf(out, " %10.4g %12s", r->bound_points[i].step_s * 1e3, rate);
        }
        fprintf(out, "\n");
    }
    if (r->bound_points)
        fprintf(out, "\ntimes in ms per step at the efficiency above, plus its fixed time per step; the bound "
                     "columns at efficiency 1%s\n",
                l->pp > 1 ? "; summed over the pipeline's micro-batches" : "");
    else
        fprintf(out, "\ntimes in ms per step; terms overlap, the step is the largest (a bound)%s\n",
                l->pp > 1 ? ", summed over the pipeline's micro-batches" : "");
}

/* The points in the format asked for (-o or standard output). */
static void write_output(FILE *out, const void *data)
{
    const struct report *r = data;
    enum json_syntax syntax;
    if (cli_tree_format(r->options->format, &syntax))
        write_tree(out, syntax, r);
    else if (r->options->format == FORMAT_CSV)
        write_csv(out, r);
    else
        write_text(out, r);
}

static void write_plot(FILE *out, const void *data)
{
    const struct report *r = data;
    plot_roofline(out, &r->setup->layout, r->model->name, r->topology->name, r->points, r->count, r->floor_s,
                  r->crossover, r->bound_points != NULL, r->options->prefill);
}

int cmd_roofline(int argc, char **argv)
{
    struct options o;
    struct model m;
    struct topology t;
    int status = cli_prepare(&command_roofline, argc, argv, &o, &m, &t);
    if (status >= 0)
        return status;

    struct roof_setup s = {.model = &m, .topology = &t};
    cli_workload(&o, &s.workload);
    s.workload.batch = 1; /* the layout is chosen for the weights; each point has its batch */
    struct serve_workload serving;
    struct cli_lengths lengths;
    if ((status = cli_serve_workload_checked(o.command, &o, &m, &serving, &lengths)) >= 0)
        return status;
    if (serving.isl > 0) /* HBM holds a sequence at its longest, isl + osl (--phase prefill: the prompt) */
        s.workload.context = o.prefill ? serving.isl : serve_held_context(&serving);
    int64_t devices = o.racks * t.domain_devices;
    if (!plan_choose_layout(&m, &t, o.racks, devices, &s.workload, &s.layout))
        return cli_usage_error(o.command, "no layout with the pinned TP/PP on %lld devices",
                               (long long)devices);
    const struct calibration *calibration;
    if (!cli_efficiency(&o, &t, o.positional[1], s.workload.weights, &s.efficiency, &calibration))
        return EXIT_USAGE;
    bool estimate = !efficiency_is_bound(&s.efficiency);
    struct graph_summary g;
    if (graph_analyse(&t, o.racks, &g) != GRAPH_OK) {
        fprintf(stderr, "rackplan roofline: the interconnect graph could not be built (out of memory)\n");
        return EXIT_IO;
    }
    s.graph = &g;
    if (o.shard_count && ((o.format != FORMAT_CSV && o.format != FORMAT_JSON) || o.plot))
        return cli_usage_error(o.command, "--shard writes rows for rackplan merge: add --format csv or json "
                                          "(or -o FILE.csv or FILE.json), without --plot");

    int64_t capacity = o.sweep_points > 0 ? o.sweep_points : 1;
    int64_t *batches = xcalloc((size_t)capacity, sizeof *batches);
    int64_t count = 1;
    if (o.sweep_points > 0)
        count = roof_sweep_batches(o.sweep_from, o.sweep_to, o.sweep_points, batches);
    else
        batches[0] = o.batch;
    int64_t first, end;
    cli_shard_range(&o, count, &first, &end);
    memmove(batches, batches + first, (size_t)(end - first) * sizeof *batches);
    count = end - first;
    struct roof_point *points = xcalloc((size_t)(count > 0 ? count : 1), sizeof *points);
    /* the bound beside an estimate; without --estimate the points are the bound */
    struct roof_point *bound_points =
        estimate ? xcalloc((size_t)(count > 0 ? count : 1), sizeof *bound_points) : NULL;
    struct serve_tail *tails = serving.isl > 0 && !o.prefill ? xcalloc((size_t)(count > 0 ? count : 1), sizeof *tails)
                                                              : NULL;
    struct roof_setup bound = s;
    bound.efficiency = EFFICIENCY_BOUND;
    struct serve_pool pool = {.model = &m, .topology = &t, .precisions = s.workload, .efficiency = s.efficiency,
                              .price_usd_per_hour = t.price_usd_per_hour};
    struct serve_pool bound_pool = pool;
    bound_pool.efficiency = EFFICIENCY_BOUND;
    for (int64_t i = 0; i < count && serving.isl > 0; i++) {
        if (o.prefill) {
            serve_prefill_step(&pool, &g, &s.layout, &serving, batches[i], &points[i]);
            if (estimate)
                serve_prefill_step(&bound_pool, &g, &s.layout, &serving, batches[i], &bound_points[i]);
        } else {
            serve_aggregated_step(&pool, &g, &s.layout, &serving, batches[i], &points[i]);
            if (estimate)
                serve_aggregated_step(&bound_pool, &g, &s.layout, &serving, batches[i], &bound_points[i]);
            /* the percentiles of the step as it comes (serve.h), where the batch fits */
            struct serve_point served;
            if (serve_aggregated(&pool, &g, &s.layout, &serving, batches[i], &served))
                tails[i] = served.tail;
        }
    }
    for (int64_t i = 0; i < count && serving.isl == 0; i++) {
        if (o.prefill) {
            roof_prefill(&s, batches[i], o.context, &points[i]);
            if (estimate)
                roof_prefill(&bound, batches[i], o.context, &bound_points[i]);
        } else {
            roof_decode(&s, batches[i], &points[i]);
            if (estimate)
                roof_decode(&bound, batches[i], &bound_points[i]);
        }
    }
    /* the crossover of the decode step at the mean KV a sequence holds */
    struct roof_setup mean = s;
    if (serving.isl > 0)
        mean.workload.context = serve_decode_context(&serving);
    struct report r = {.model = &m, .topology = &t, .options = &o, .setup = &s, .points = points,
                       .serving = serving.isl > 0 ? &serving : NULL, .lengths = &lengths, .tails = tails,
                       .bound_points = bound_points, .calibration = calibration,
                       .count = count, .floor_s = roof_latency_floor_s(&s),
                       .bound_floor_s = roof_latency_floor_s(&bound), .ideal_floor_s = roof_ideal_floor_s(&s),
                       .crossover = o.prefill ? 0 : roof_crossover_batch(&mean)};
    status = EXIT_OK;
    struct sink_batch outputs;
    sink_batch_init(&outputs);
    if (sink_batch_write(&outputs, o.output, write_output, &r) && o.plot)
        sink_batch_write(&outputs, o.plot, write_plot, &r);
    if (!sink_batch_finish(&outputs, true))
        status = EXIT_IO;
    free(points);
    free(bound_points);
    free(tails);
    free(batches);
    return status;
}
