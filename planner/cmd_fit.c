/* cmd_fit.c: `rackplan fit MODEL TOPOLOGY`: does it fit, and how much room is left. */
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "plan.h"
#include "topology.h"

#include "../reports/json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Memory is reported in whole bytes, rounded up: a fit is never claimed on a fraction. */
static void json_bytes(struct json *j, const char *key, double bytes)
{
    json_key(j, key);
    json_number(j, bytes >= 0 ? ceil(bytes) : -ceil(-bytes));
}

static void layout_description(const struct model *m, const struct layout *l, char *buffer,
                               size_t size)
{
    char dense[160];
    if (l->tp == 1)
        snprintf(dense, sizeof dense, "whole on every device (DP %" PRId64 ")", l->dp);
    else if (l->dp == 1)
        snprintf(dense, sizeof dense, "split %" PRId64 " ways by TP", l->tp);
    else
        snprintf(dense, sizeof dense, "split %" PRId64 " ways by TP, replicated over DP %" PRId64,
                 l->tp, l->dp);
    const char *sequences = l->dp > 1 ? "; sequences split over DP" : "";
    double experts = plan_experts_per_device(m, l);
    char spread[160];
    if (experts >= 1)
        snprintf(spread, sizeof spread, "at most %.0f per layer on one device", experts);
    else
        snprintf(spread, sizeof spread, "each sliced over %.0f devices", 1 / experts);
    if (model_is_moe(m))
        snprintf(buffer, size,
                 "routed experts spread over the %" PRId64 " devices of each stage, %s; "
                 "attention, dense and shared weights %s%s",
                 l->ep, spread, dense, sequences);
    else
        snprintf(buffer, size, "weights %s%s", dense, sequences);
    if (l->pp > 1) {
        size_t n = strlen(buffer);
        snprintf(buffer + n, size - n, "; %" PRId64 " pipeline stages of contiguous layers",
                 l->pp);
    }
}

static void json_layout(struct json *j, const struct model *m, const struct layout *l)
{
    char description[512];
    layout_description(m, l, description, sizeof description);
    json_begin_object(j);
    json_key(j, "racks");
    json_int(j, l->racks);
    json_key(j, "devices");
    json_int(j, l->devices);
    json_key(j, "tp");
    json_int(j, l->tp);
    json_key(j, "pp");
    json_int(j, l->pp);
    json_key(j, "dp");
    json_int(j, l->dp);
    json_key(j, "ep");
    json_int(j, l->ep);
    json_key(j, "description");
    json_string(j, description);
    json_end_object(j);
}

static void write_tree(FILE *out, enum json_syntax syntax, const struct model *m, const struct topology *t,
                       const struct options *o, const struct workload *w, const struct fit *f)
{
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    cli_json_header(&j, m, t, o->racks, f->layout.devices);
    cli_json_precision(&j, w);
    json_key(&j, "context");
    json_int(&j, w->context);
    json_key(&j, "batch");
    json_int(&j, w->batch);
    json_key(&j, "mtp_modules_held");
    json_int(&j, w->mtp ? m->mtp_layers : 0);
    json_key(&j, "layout");
    json_layout(&j, m, &f->layout);
    json_key(&j, "fits");
    json_bool(&j, f->fits);
    json_key(&j, "per_device");
    json_begin_object(&j);
    json_bytes(&j, "weights_bytes", f->memory.weights_bytes);
    json_bytes(&j, "kv_bytes", f->memory.kv_bytes);
    json_bytes(&j, "activation_bytes", f->memory.activation_bytes);
    json_bytes(&j, "reserve_bytes", f->memory.reserve_bytes);
    json_bytes(&j, "used_bytes", f->memory.hbm_bytes - f->memory.free_bytes);
    json_bytes(&j, "hbm_bytes", f->memory.hbm_bytes);
    json_bytes(&j, "free_bytes", f->memory.free_bytes);
    json_key(&j, "sequences");
    json_int(&j, f->memory.sequences);
    json_key(&j, "layers");
    json_int(&j, f->memory.layers);
    json_end_object(&j);
    json_key(&j, "max_batch");
    json_int(&j, f->max_batch);
    json_key(&j, "min_devices");
    json_positive_or_null(&j, (double)f->min_devices);
    json_key(&j, "min_racks");
    json_positive_or_null(&j, (double)f->min_racks);
    json_key(&j, "min_layout");
    if (f->min_devices)
        json_layout(&j, m, &f->min_layout);
    else
        json_null(&j);
    json_end_object(&j);
    json_finish(&j);
}

static void row(FILE *out, const char *label, double bytes)
{
    char gb[64];
    format_gb(bytes, gb, sizeof gb);
    fprintf(out, "  %-34s %12s\n", label, gb);
}

static void write_text(FILE *out, const struct model *m, const struct topology *t,
                       const struct options *o, const struct workload *w, const struct fit *f)
{
    char a[64], b[64], label[128], description[512];
    const struct device_memory *mem = &f->memory;
    format_count((double)f->layout.devices, a, sizeof a);
    fprintf(out, "%s on %s%s: %" PRId64 " scale-up domain%s, %s devices\n", m->name, t->name,
            t->announced ? " (announced, not shipping)" : "", o->racks, o->racks == 1 ? "" : "s",
            a);
    format_count((double)w->context, a, sizeof a);
    format_count((double)w->batch, b, sizeof b);
    fprintf(out, "  weights %s", precision_name(w->weights));
    if (w->expert_weights != w->weights)
        fprintf(out, " (routed experts %s)", precision_name(w->expert_weights));
    fprintf(out, ", KV %s, context %s tokens, batch %s sequence%s\n", precision_name(w->kv), a, b,
            w->batch == 1 ? "" : "s");
    fprintf(out, "  layout: TP %" PRId64 " x DP %" PRId64 " x PP %" PRId64, f->layout.tp,
            f->layout.dp, f->layout.pp);
    if (model_is_moe(m))
        fprintf(out, ", EP %" PRId64, f->layout.ep);
    layout_description(m, &f->layout, description, sizeof description);
    fprintf(out, "\n    (%s)\n", description);
    if (w->mtp) {
        struct model_params p;
        model_params(m, &p);
        format_count(p.mtp, a, sizeof a);
        if (m->mtp_layers > 0)
            fprintf(out, "  MTP: %" PRId64 " module%s of %s parameters held on the last stage's devices, "
                         "with a layer of KV a sequence\n",
                    m->mtp_layers, m->mtp_layers == 1 ? "" : "s", a);
        else
            fprintf(out, "  MTP: the model ships no MTP module; nothing more is held\n");
    }
    fprintf(out, "\n");

    fprintf(out, "per device (the most loaded)            GB\n");
    row(out, "weights", mem->weights_bytes);
    format_count((double)mem->sequences, a, sizeof a);
    snprintf(label, sizeof label, "%s (%s sequence%s)",
             model_state_bytes_per_sequence(m) > 0 ? "KV cache and state" : "KV cache", a,
             mem->sequences == 1 ? "" : "s");
    row(out, label, mem->kv_bytes);
    row(out, "activations", mem->activation_bytes);
    if (w->reserve_bytes >= 0)
        snprintf(label, sizeof label, "runtime reserve");
    else
        snprintf(label, sizeof label, "runtime reserve (%.0f%% of HBM)", w->reserve_fraction * 100);
    row(out, label, mem->reserve_bytes);
    row(out, "used", mem->hbm_bytes - mem->free_bytes);
    row(out, "HBM", mem->hbm_bytes);
    row(out, mem->free_bytes >= 0 ? "free" : "short by", fabs(mem->free_bytes));

    fprintf(out, "\n%s\n", f->fits ? "fits" : "does not fit");
    format_count((double)f->max_batch, a, sizeof a);
    format_count((double)w->context, b, sizeof b);
    if (f->max_batch > 0)
        fprintf(out, "max batch: %s sequences of %s tokens on this layout\n", a, b);
    else
        fprintf(out, "max batch: none (the weights and reserve alone do not fit this layout)\n");
    format_count((double)w->batch, b, sizeof b);
    if (f->min_devices) {
        format_count((double)f->min_devices, a, sizeof a);
        fprintf(out, "min devices: %s (%" PRId64 " domain%s) for batch %s, as TP %" PRId64 " x DP %" PRId64
                     " x PP %" PRId64 "\n",
                a, f->min_racks, f->min_racks == 1 ? "" : "s", b, f->min_layout.tp,
                f->min_layout.dp, f->min_layout.pp);
    } else {
        fprintf(out, "min devices: more than %d domains would be needed for batch %s\n",
                PLAN_MAX_RACKS, b);
    }
}

int cmd_fit(int argc, char **argv)
{
    struct options o;
    struct model m;
    struct topology t;
    int status = cli_prepare(&command_fit, argc, argv, &o, &m, &t);
    if (status >= 0)
        return status;
    struct workload w;
    cli_workload(&o, &w);
    if (w.reserve_bytes >= t.hbm_bytes)
        return cli_usage_error(o.command, "--reserve is more than the %.0f bytes of HBM per device",
                               t.hbm_bytes);
    struct fit f;
    if (!plan_fit(&m, &t, o.racks, &w, &f)) {
        char pinned[64] = "";
        if (o.tp && o.pp)
            snprintf(pinned, sizeof pinned, "TP %lld and PP %lld", (long long)o.tp, (long long)o.pp);
        else
            snprintf(pinned, sizeof pinned, "%s %lld", o.tp ? "TP" : "PP", (long long)(o.tp ? o.tp : o.pp));
        char heads[160];
        int n = snprintf(heads, sizeof heads, "the %lld attention heads", (long long)m.attention.heads);
        if (m.linear.value_heads > 0)
            n += snprintf(heads + n, sizeof heads - (size_t)n,
                          ", the %lld key and %lld value heads of linear attention",
                          (long long)m.linear.key_heads, (long long)m.linear.value_heads);
        if (m.mamba.heads > 0 && m.mamba.groups > 1)
            snprintf(heads + n, sizeof heads - (size_t)n, ", the %lld Mamba-2 heads and their %lld groups",
                     (long long)m.mamba.heads, (long long)m.mamba.groups);
        else if (m.mamba.heads > 0)
            snprintf(heads + n, sizeof heads - (size_t)n, ", the %lld Mamba-2 heads", (long long)m.mamba.heads);
        return cli_usage_error(o.command,
                               "no layout with %s on %lld devices: TP must divide %s; it must be at most "
                               "the domain size (%lld); and TP x PP must divide the devices",
                               pinned, (long long)(o.racks * t.domain_devices), heads, (long long)t.domain_devices);
    }
    struct sink sink;
    if (!sink_open(&sink, o.output))
        return EXIT_IO;
    enum json_syntax syntax;
    if (cli_tree_format(o.format, &syntax))
        write_tree(sink.out, syntax, &m, &t, &o, &w, &f);
    else
        write_text(sink.out, &m, &t, &o, &w, &f);
    if (!sink_commit(&sink))
        return EXIT_IO;
    return f.fits ? EXIT_OK : EXIT_NO_FIT;
}
