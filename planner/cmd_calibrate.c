/* cmd_calibrate.c: `rackplan calibrate DATA.yaml`: efficiency factors fitted to published
 * measurements (calibrate.h), each measurement's bound, estimate and leave-one-out estimate,
 * and the <efficiency> rows for the topology files. */
#include "calibrate.h"
#include "cli.h"
#include "commands.h"
#include "doc.h"
#include "lengths.h"
#include "model.h"
#include "topology.h"

#include "../reports/json.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PATH_SIZE = 1024 };

struct entry {
    char id[64];
    char model_path[PATH_SIZE], topology_path[PATH_SIZE], lengths_path[PATH_SIZE]; /* lengths: "" none */
    struct model model;
    struct topology topology;
    struct length_mix lengths;
    int max_tokens_line, max_tokens_col; /* where max_tokens is given, to check it against the lengths */
    double osl_mean;                      /* the lengths' outputs scaled to this mean; 0: as the file has them */
};

static void entries_release(struct entry *entries, int count)
{
    for (int i = 0; entries && i < count; i++)
        length_mix_release(&entries[i].lengths);
    free(entries);
}

static const struct doc_node *scalar(struct doc_reader *r, const struct doc_node *map, const char *key, bool required)
{
    const struct doc_node *n = doc_get(map, key);
    if (!n) {
        if (required)
            doc_error_at(r, map, "missing field '%s'", key);
        return NULL;
    }
    if (n->kind != DOC_SCALAR) {
        doc_error_at(r, n, "field '%s' must be a value, not %s", key, doc_kind_name(n));
        return NULL;
    }
    return n;
}

/* A number in [low, high]; false (reported) when absent and required, or not such a number. */
static bool read_number(struct doc_reader *r, const struct doc_node *map, const char *key, bool required, double low,
                        double high, double *out)
{
    const struct doc_node *n = scalar(r, map, key, required);
    if (!n)
        return false;
    char *end;
    errno = 0;
    double v = strtod(n->text, &end);
    if (n->quoted || !*n->text || *end || errno || !isfinite(v) || v < low || v > high) {
        doc_error_at(r, n, "field '%s' is '%s'; it must be a number from %g to %g", key, n->text, low, high);
        return false;
    }
    *out = v;
    return true;
}

static bool read_count(struct doc_reader *r, const struct doc_node *map, const char *key, bool required, int64_t high,
                       int64_t *out)
{
    double v;
    if (!read_number(r, map, key, required, 1, (double)high, &v))
        return false;
    if (v != floor(v)) {
        doc_error_at(r, doc_get(map, key), "field '%s' must be a whole number, not %g", key, v);
        return false;
    }
    *out = (int64_t)v;
    return true;
}

static bool read_text(struct doc_reader *r, const struct doc_node *map, const char *key, bool required, char *out,
                      size_t size)
{
    const struct doc_node *n = scalar(r, map, key, required);
    if (!n)
        return false;
    if (!*n->text || strlen(n->text) >= size) {
        doc_error_at(r, n, "field '%s' must be 1 to %zu characters", key, size - 1);
        return false;
    }
    strcpy(out, n->text);
    return true;
}

static bool read_precision(struct doc_reader *r, const struct doc_node *map, const char *key, enum precision *out)
{
    const struct doc_node *n = scalar(r, map, key, true);
    if (!n)
        return false;
    if (!precision_parse(n->text, out)) {
        doc_error_at(r, n, "field '%s' must be one of fp4, fp8, bf16, fp16, fp32, not '%s'", key, n->text);
        return false;
    }
    return true;
}

/* A path in the data file, relative to the data file's directory. */
static void relative_to(const char *data_path, const char *path, char *out, size_t size)
{
    const char *slash = strrchr(data_path, '/');
    if (path[0] == '/' || !slash)
        snprintf(out, size, "%s", path);
    else
        snprintf(out, size, "%.*s/%s", (int)(slash - data_path), data_path, path);
}

static const char *const known_keys[] = {"id", "source", "note", "assumed", "model", "topology", "racks",
                                         "devices", "tp", "pp", "weights", "kv", "phase", "context",
                                         "batch", "max_batch", "tpot_ms", "ttft_ms", "isl", "osl", "chunk", "measured",
                                         "arrivals", "percentile", "lengths", "osl_mean", "max_tokens"};

static void read_measurement(struct doc_reader *r, const struct doc_node *item, struct entry *e, struct measurement *m)
{
    if (item->kind != DOC_MAP) {
        doc_error_at(r, item, "a measurement must be a mapping, not %s", doc_kind_name(item));
        return;
    }
    for (size_t k = 0; k < item->count; k++) {
        bool known = false;
        for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++)
            known |= strcmp(item->keys[k]->text, known_keys[i]) == 0;
        if (!known)
            doc_error_at(r, item->keys[k], "unknown field '%s'", item->keys[k]->text);
    }
    read_text(r, item, "id", true, e->id, sizeof e->id);
    char source[2048];
    read_text(r, item, "source", true, source, sizeof source);
    char path[PATH_SIZE];
    if (read_text(r, item, "model", true, path, sizeof path))
        relative_to(r->path, path, e->model_path, sizeof e->model_path);
    if (read_text(r, item, "topology", true, path, sizeof path))
        relative_to(r->path, path, e->topology_path, sizeof e->topology_path);
    *m = (struct measurement){.id = e->id, .racks = 1};
    struct workload *w = &m->workload;
    *w = (struct workload){.reserve_fraction = PLAN_DEFAULT_RESERVE_FRACTION, .reserve_bytes = -1};
    if ((doc_get(item, "racks") != NULL) == (doc_get(item, "devices") != NULL))
        doc_error_at(r, item, "give racks (whole scale-up domains) or devices (part of one), one of them");
    else if (doc_get(item, "racks"))
        read_count(r, item, "racks", true, 1000000, &m->racks);
    else
        read_count(r, item, "devices", true, 1000000, &m->devices);
    read_count(r, item, "tp", false, 1000000, &w->tp);
    read_count(r, item, "pp", false, 1000000, &w->pp);
    if (read_precision(r, item, "weights", &w->weights))
        w->expert_weights = w->weights;
    read_precision(r, item, "kv", &w->kv);
    const struct doc_node *phase = scalar(r, item, "phase", true);
    if (phase && strcmp(phase->text, "decode") != 0 && strcmp(phase->text, "prefill") != 0)
        doc_error_at(r, phase, "field 'phase' must be decode or prefill, not '%s'", phase->text);
    m->prefill = phase && strcmp(phase->text, "prefill") == 0;
    const struct doc_node *lengths = doc_get(item, "lengths");
    if (lengths && (doc_get(item, "isl") || doc_get(item, "osl")))
        doc_error_at(r, lengths,
                     "lengths gives the requests' prompt and output tokens, and isl and osl their means: "
                     "drop isl and osl");
    else if (lengths && read_text(r, item, "lengths", true, path, sizeof path))
        relative_to(r->path, path, e->lengths_path, sizeof e->lengths_path);
    bool serving = doc_get(item, "isl") || doc_get(item, "osl") || lengths;
    if (serving && doc_get(item, "context"))
        doc_error_at(r, doc_get(item, "context"),
                     "with isl and osl the KV a sequence holds follows from them "
                     "(read at isl + osl/2, held at isl + osl): drop context");
    else if (!serving)
        read_count(r, item, "context", true, 1073741824, &w->context);
    const struct doc_node *batch = doc_get(item, "batch");
    bool tpot = doc_get(item, "tpot_ms") != NULL;
    if (batch && tpot)
        doc_error_at(r, batch, "give batch or tpot_ms, not both");
    else if (!batch && !tpot)
        doc_error_at(r, item, "missing field 'batch' (a number or max) or 'tpot_ms'");
    else if (batch && !(batch->kind == DOC_SCALAR && strcmp(batch->text, "max") == 0))
        read_count(r, item, "batch", true, (int64_t)1 << 40, &m->batch);
    if (tpot && read_number(r, item, "tpot_ms", true, 0.001, 1e6, &m->tpot_s))
        m->tpot_s /= 1e3;
    if (doc_get(item, "max_batch") && m->batch > 0)
        doc_error_at(r, doc_get(item, "max_batch"), "max_batch caps batch: max or tpot_ms, not a number");
    else
        read_count(r, item, "max_batch", false, (int64_t)1 << 40, &m->batch_limit);
    if (m->prefill && m->batch < 1 && (batch || tpot))
        doc_error_at(r, batch ? batch : item, "a prefill measurement needs its batch of prompts as a number");
    if ((doc_get(item, "isl") != NULL) != (doc_get(item, "osl") != NULL)) {
        doc_error_at(r, item, "give isl and osl together (the requests' mean prompt and output tokens), or neither");
    } else {
        read_count(r, item, "isl", false, 1073741824, &m->isl);
        read_count(r, item, "osl", false, 1073741824, &m->osl);
    }
    if (serving && m->prefill)
        doc_error_at(r, lengths ? lengths : doc_get(item, "isl"),
                     "isl and osl (or lengths) describe aggregated serving; "
                     "a prefill measurement gives its prompt length as context");
    if (doc_get(item, "chunk") && !serving)
        doc_error_at(r, doc_get(item, "chunk"), "chunk is aggregated serving's prefill budget: give isl and osl too");
    else
        read_count(r, item, "chunk", false, 1073741824, &m->chunk_tokens);
    if (doc_get(item, "ttft_ms") && !serving)
        doc_error_at(r, doc_get(item, "ttft_ms"), "ttft_ms is a serving target: give isl and osl too");
    else if (read_number(r, item, "ttft_ms", false, 0.001, 1e7, &m->ttft_s))
        m->ttft_s /= 1e3;
    /* how the benchmark sent its requests: closed-loop (a concurrency, an offline batch) unless
     * said; MLPerf's server and interactive scenarios are Poisson, their limits 99th percentiles */
    m->arrivals = SERVE_CLOSED;
    const struct doc_node *arrivals = doc_get(item, "arrivals") ? scalar(r, item, "arrivals", false) : NULL;
    if (arrivals && !serving)
        doc_error_at(r, arrivals, "arrivals describe aggregated serving: give isl and osl too");
    else if (arrivals && strcmp(arrivals->text, "poisson") == 0)
        m->arrivals = SERVE_POISSON;
    else if (arrivals && strcmp(arrivals->text, "constant") == 0)
        m->arrivals = SERVE_CONSTANT;
    else if (arrivals && strcmp(arrivals->text, "closed") != 0)
        doc_error_at(r, arrivals, "field 'arrivals' must be poisson, constant or closed, not '%s'", arrivals->text);
    const struct doc_node *max_tokens = doc_get(item, "max_tokens");
    if (max_tokens && !serving) {
        doc_error_at(r, max_tokens, "max_tokens is of the requests an engine admits: give isl and osl too");
    } else if (read_count(r, item, "max_tokens", false, LENGTHS_MAX_TOKENS, &m->max_tokens) && max_tokens) {
        if (m->osl > m->max_tokens)
            doc_error_at(r, max_tokens, "max_tokens %lld is below osl %lld: a request stops at its max_tokens",
                         (long long)m->max_tokens, (long long)m->osl);
        e->max_tokens_line = max_tokens->line;
        e->max_tokens_col = max_tokens->col;
    }
    const struct doc_node *osl_mean = doc_get(item, "osl_mean");
    if (osl_mean && !lengths)
        doc_error_at(r, osl_mean, "osl_mean scales the outputs of lengths (a CSV): without one, osl is the mean");
    else if (read_number(r, item, "osl_mean", false, 1, LENGTHS_MAX_TOKENS, &e->osl_mean) && osl_mean &&
             m->max_tokens > 0 && (double)m->max_tokens < e->osl_mean)
        doc_error_at(r, osl_mean, "osl_mean %g is above max_tokens %lld: no output passes its max_tokens",
                     e->osl_mean, (long long)m->max_tokens);
    if (doc_get(item, "percentile") && !serving)
        doc_error_at(r, doc_get(item, "percentile"), "percentile is of a serving target: give isl and osl too");
    else
        read_number(r, item, "percentile", false, 1, 99.9, &m->percentile);
    read_number(r, item, "measured", true, 1e-6, 1e12, &m->measured);
}

/* The measurements of the data file, their models and topologies loaded. Returns an exit code. */
static int load(const char *path, struct entry **entries, struct measurement **measurements, int *count)
{
    struct diags d;
    diags_init(&d);
    struct doc *doc = NULL;
    int status = doc_load(path, &doc, &d);
    struct doc_reader r = {.path = path, .diags = &d};
    *count = 0;
    *entries = NULL;
    *measurements = NULL;
    if (status == 0) {
        const struct doc_node *list = doc->root && doc->root->kind == DOC_MAP ? doc_get(doc->root, "measurements") : NULL;
        if (!list || list->kind != DOC_SEQ || list->count == 0) {
            doc_error_at(&r, list ? list : doc->root,
                         "the file needs a list 'measurements' of at least one measurement");
        } else if (list->count > CALIBRATE_MAX_MEASUREMENTS) {
            doc_error_at(&r, list, "%zu measurements; at most %d are fitted", list->count, CALIBRATE_MAX_MEASUREMENTS);
        } else {
            *entries = xcalloc(list->count, sizeof **entries);
            *measurements = xcalloc(list->count, sizeof **measurements);
            for (size_t i = 0; i < list->count; i++) {
                read_measurement(&r, list->items[i], &(*entries)[i], &(*measurements)[i]);
                for (size_t j = 0; j < i && (*entries)[i].id[0]; j++)
                    if (strcmp((*entries)[i].id, (*entries)[j].id) == 0)
                        doc_error_at(&r, doc_get(list->items[i], "id"), "id '%s' is given twice", (*entries)[i].id);
            }
            *count = (int)list->count;
        }
    }
    diags_print(&d, stderr);
    diags_release(&d);
    doc_free(doc);
    if (status == DOC_IO_ERROR)
        return EXIT_IO;
    if (status != 0 || r.errors > 0)
        return EXIT_INVALID;
    for (int i = 0; i < *count; i++) {
        struct entry *e = &(*entries)[i];
        int loaded = cli_load_model(e->model_path, &e->model);
        if (loaded == EXIT_OK)
            loaded = cli_load_topology(e->topology_path, &e->topology);
        if (loaded != EXIT_OK)
            return loaded;
        (*measurements)[i].model = &e->model;
        (*measurements)[i].topology = &e->topology;
        if (e->lengths_path[0]) { /* the requests' lengths: isl and osl are their means */
            diags_init(&d);
            enum lengths_status read = length_mix_read_csv(e->lengths_path, &e->lengths, &d);
            diags_print(&d, stderr);
            diags_release(&d);
            if (read != LENGTHS_OK)
                return read == LENGTHS_IO_ERROR ? EXIT_IO : EXIT_INVALID;
            if (e->osl_mean > 0) { /* checked when read: from 1 up, at most max_tokens */
                bool scaled = length_mix_scale_osl(&e->lengths, e->osl_mean, (*measurements)[i].max_tokens, NULL);
                assert(scaled);
                (void)scaled;
            }
            int64_t longest = length_mix_osl_quantile(&e->lengths, 1);
            if ((*measurements)[i].max_tokens > 0 && longest > (*measurements)[i].max_tokens) {
                diags_init(&d);
                diags_add(&d, path, e->max_tokens_line, e->max_tokens_col,
                          "max_tokens %lld is below the longest output of %s, %lld tokens: a request stops at its "
                          "max_tokens",
                          (long long)(*measurements)[i].max_tokens, e->lengths_path, (long long)longest);
                diags_print(&d, stderr);
                diags_release(&d);
                return EXIT_INVALID;
            }
            struct serve_workload means = {0};
            serve_workload_set_lengths(&means, &e->lengths);
            (*measurements)[i].isl = means.isl;
            (*measurements)[i].osl = means.osl;
            (*measurements)[i].lengths = &e->lengths;
        }
    }
    return EXIT_OK;
}

/* Three significant digits, as the topology files carry them. */
static double three_digits(double value)
{
    char text[32];
    snprintf(text, sizeof text, "%.3g", value);
    return strtod(text, NULL);
}

static void round_fit(struct calibration_fit *f)
{
    for (int g = 0; g < f->group_count; g++) {
        f->groups[g].compute = three_digits(f->groups[g].compute);
        f->groups[g].memory = three_digits(f->groups[g].memory);
        f->groups[g].latency = three_digits(f->groups[g].latency);
        f->groups[g].sequence_s = three_digits(f->groups[g].sequence_s);
    }
    f->latency = three_digits(f->latency);
    f->sequence_s = three_digits(f->sequence_s);
    f->compute = three_digits(f->compute);
    f->memory = three_digits(f->memory);
    f->scale_up = three_digits(f->scale_up);
    f->scale_out = three_digits(f->scale_out);
    f->experts = three_digits(f->experts);
}

struct result {
    double bound, estimate, left_out; /* tokens/s per device */
    int64_t bound_batch, batch;
};

static double error_of(double predicted, double measured)
{
    return predicted / measured - 1;
}

/* The ids fitted in group `group` (-1: all), space-separated. */
static void fitted_ids(const struct measurement *m, int count, int group, char *out, size_t size)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < count && used < size; i++)
        if (group < 0 || m[i].group == group)
            used += (size_t)snprintf(out + used, size - used, "%s%s", used ? " " : "", m[i].id);
}

static void write_row(FILE *out, const char *precision, const struct efficiency *e, const char *ids, bool pooled)
{
    fprintf(out, "<efficiency%s%s%s compute=\"%.3g\" memory=\"%.3g\" scale_up=\"%.3g\" scale_out=\"%.3g\" "
                 "experts=\"%.3g\" latency=\"%.3g\" sequence_s=\"%.3g\" fitted_to=\"%s\"%s/>\n",
            precision ? " precision=\"" : "", precision ? precision : "", precision ? "\"" : "", e->compute,
            e->memory, e->scale_up, e->scale_out, e->experts, e->latency, e->sequence_s, ids,
            pooled ? " pooled=\"true\"" : "");
}

/* The |errors| of the estimates (or, with `left_out`, the left-out estimates): mean, median,
 * within 25%, overall and by class. */
struct error_summary {
    double mean, median;
    int within, count;
    double class_error[CALIBRATION_CLASSES];
    int class_count[CALIBRATION_CLASSES], class_within[CALIBRATION_CLASSES];
};

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summarise(const struct measurement *m, const struct result *r, int count, bool left_out,
                      struct error_summary *s)
{
    *s = (struct error_summary){.count = count};
    double *errors = xcalloc((size_t)(count > 0 ? count : 1), sizeof *errors);
    for (int i = 0; i < count; i++) {
        double e = fabs(error_of(left_out ? r[i].left_out : r[i].estimate, m[i].measured));
        enum calibration_class c = calibrate_class(&m[i]);
        errors[i] = e;
        s->mean += e / count;
        s->within += e <= 0.25;
        s->class_error[c] += e;
        s->class_count[c]++;
        s->class_within[c] += e <= 0.25;
    }
    qsort(errors, (size_t)count, sizeof *errors, compare_doubles);
    if (count > 0)
        s->median = count % 2 ? errors[count / 2] : (errors[count / 2 - 1] + errors[count / 2]) / 2;
    free(errors);
}

/* "LABEL offline 23.2% (12 of 22 within 25%); ..." and the class bound on its own line. */
static void write_classes(FILE *out, const char *label, const struct error_summary *s)
{
    fprintf(out, "%s", label);
    const char *sep = " ";
    for (int c = 0; c < CALIBRATION_CLASSES; c++) {
        if (s->class_count[c]) {
            fprintf(out, "%s%s %.1f%% (%d of %d within 25%%)", sep, calibration_class_name((enum calibration_class)c),
                    s->class_error[c] / s->class_count[c] * 100, s->class_within[c], s->class_count[c]);
            sep = "; ";
        }
    }
    fprintf(out, "\n(interactive: at most %.0f ms a token)\n", CALIBRATE_INTERACTIVE_S * 1e3);
}

static void write_text(FILE *out, const struct measurement *m, const struct entry *entries, int count,
                       const struct calibration_fit *f, const struct result *r)
{
    fprintf(out, "%d measurement%s in %d group%s (accelerator family and weight precision); fitted in %d sweep%s, "
                 "objective %.4g\n\n",
            count, count == 1 ? "" : "s", f->group_count, f->group_count == 1 ? "" : "s", f->sweeps,
            f->sweeps == 1 ? "" : "s", f->objective);
    fprintf(out, "%-32s %10s %10s %10s %8s %13s %8s\n", "measurement (tokens/s per device)", "measured", "bound",
            "estimate", "error", "left out", "error");
    double fitted = 0, left = 0;
    int below = 0;
    for (int i = 0; i < count; i++) {
        char measured[32], bound[32], estimate[32], left_out[32];
        format_count(m[i].measured, measured, sizeof measured);
        format_count(r[i].bound, bound, sizeof bound);
        format_count(r[i].estimate, estimate, sizeof estimate);
        format_count(r[i].left_out, left_out, sizeof left_out);
        double e = error_of(r[i].estimate, m[i].measured), l = error_of(r[i].left_out, m[i].measured);
        fitted += fabs(e) / count;
        left += fabs(l) / count;
        below += r[i].bound < m[i].measured;
        fprintf(out, "%-32s %10s %10s %10s %+7.1f%% %13s %+7.1f%%%s\n", m[i].id, measured, bound, estimate, e * 100,
                left_out, l * 100, r[i].bound < m[i].measured ? "  BOUND BELOW MEASURED" : "");
    }
    struct error_summary left_out;
    summarise(m, r, count, true, &left_out);
    fprintf(out, "\n");
    write_classes(out, "left out, by class:", &left_out);
    fprintf(out, "mean |error|: %.1f%% fitted, %.1f%% left out (each refitted without it)\n", fitted * 100,
            left * 100);
    if (below)
        fprintf(out, "%d bound%s below the measured throughput: the model misses something there\n", below,
                below == 1 ? " is" : "s are");
    else
        fprintf(out, "every bound is at or above its measurement\n");
    fprintf(out, "\n%-44s %8s %8s %8s %8s  %s\n", "efficiency (fraction of peak)", "compute", "memory", "latency",
            "host us", "fitted to");
    for (int g = 0; g < f->group_count; g++) {
        char label[160], ids[1024];
        snprintf(label, sizeof label, "%.36s, %s", f->groups[g].topology->family,
                 precision_name(f->groups[g].weights));
        fitted_ids(m, count, g, ids, sizeof ids);
        fprintf(out, "%-44s %8.3g %8.3g %8.3g %8.3g  %s\n", label, f->groups[g].compute, f->groups[g].memory,
                f->groups[g].latency, f->groups[g].sequence_s * 1e6, ids);
    }
    fprintf(out, "%-44s %8.3g %8.3g %8.3g %8.3g  every group (geometric mean; host time: mean)\n",
            "prior, for families not measured", f->compute, f->memory, f->latency, f->sequence_s * 1e6);
    fprintf(out, "scale-up %.3g and scale-out %.3g of peak; routed experts %.3g of compute and memory's (every "
                 "group); latency: times the topology's <latency> floors; host us: host time a sequence a "
                 "step\n",
            f->scale_up, f->scale_out, f->experts);
    fprintf(out, "\n<efficiency> rows for the topology files:\n");
    char all[4096];
    fitted_ids(m, count, -1, all, sizeof all);
    struct efficiency pooled = calibration_efficiency(f, -1);
    for (int i = 0; i < count; i++) {
        bool first = true;
        for (int j = 0; j < i; j++)
            first &= strcmp(entries[j].topology_path, entries[i].topology_path) != 0;
        if (!first)
            continue;
        fprintf(out, "%s\n", entries[i].topology_path);
        for (int g = 0; g < f->group_count; g++) {
            if (strcmp(f->groups[g].topology->family, m[i].topology->family) != 0)
                continue;
            char ids[1024];
            fitted_ids(m, count, g, ids, sizeof ids);
            struct efficiency e = calibration_efficiency(f, g);
            fprintf(out, "  ");
            write_row(out, precision_name(f->groups[g].weights), &e, ids, false);
        }
        fprintf(out, "  ");
        write_row(out, NULL, &pooled, all, true);
    }
    fprintf(out, "every other topology\n  ");
    write_row(out, NULL, &pooled, all, true);
}

/* One measurement's object: with `fitted`, its group, the bound's batch and the left-out
 * estimate too. */
static void write_measurement(struct json *j, const struct measurement *m, const struct entry *e,
                              const struct result *r, bool fitted)
{
    json_begin_object(j);
    json_key(j, "id");
    json_string(j, m->id);
    json_key(j, "topology");
    json_string(j, e->topology_path);
    if (fitted) {
        json_key(j, "group");
        json_int(j, m->group);
    }
    json_key(j, "class");
    json_string(j, calibration_class_name(calibrate_class(m)));
    json_key(j, "measured");
    json_number(j, m->measured);
    json_key(j, "bound");
    json_number(j, r->bound);
    if (fitted) {
        json_key(j, "bound_batch");
        json_int(j, r->bound_batch);
    }
    json_key(j, "estimate");
    json_number(j, r->estimate);
    json_key(j, "batch");
    json_int(j, r->batch);
    json_key(j, "error");
    json_number(j, error_of(r->estimate, m->measured));
    if (fitted) {
        json_key(j, "left_out");
        json_number(j, r->left_out);
        json_key(j, "left_out_error");
        json_number(j, error_of(r->left_out, m->measured));
    }
    json_key(j, "bound_at_or_above");
    json_bool(j, r->bound >= m->measured);
    json_end_object(j);
}

static void write_tree(FILE *out, enum json_syntax syntax, const struct measurement *m, const struct entry *entries,
                       int count, const struct calibration_fit *f, const struct result *r)
{
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    json_key(&j, "measurements");
    json_begin_array(&j);
    for (int i = 0; i < count; i++)
        write_measurement(&j, &m[i], &entries[i], &r[i], true);
    json_end_array(&j);
    json_key(&j, "groups");
    json_begin_array(&j);
    for (int g = 0; g < f->group_count; g++) {
        json_begin_object(&j);
        json_key(&j, "family");
        json_string(&j, f->groups[g].topology->family);
        json_key(&j, "weights");
        json_string(&j, precision_name(f->groups[g].weights));
        struct efficiency e = calibration_efficiency(f, g);
        cli_json_efficiency_fields(&j, &e);
        char ids[1024];
        fitted_ids(m, count, g, ids, sizeof ids);
        json_key(&j, "fitted_to");
        json_string(&j, ids);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_key(&j, "pooled");
    json_begin_object(&j);
    struct efficiency pooled = calibration_efficiency(f, -1);
    cli_json_efficiency_fields(&j, &pooled);
    char all[4096];
    fitted_ids(m, count, -1, all, sizeof all);
    json_key(&j, "fitted_to");
    json_string(&j, all);
    json_end_object(&j);
    double fitted = 0, left = 0;
    for (int i = 0; i < count; i++) {
        fitted += fabs(error_of(r[i].estimate, m[i].measured)) / count;
        left += fabs(error_of(r[i].left_out, m[i].measured)) / count;
    }
    json_key(&j, "mean_abs_error");
    json_number(&j, fitted);
    json_key(&j, "left_out_mean_abs_error");
    json_number(&j, left);
    json_key(&j, "objective");
    json_number(&j, f->objective);
    json_key(&j, "sweeps");
    json_int(&j, f->sweeps);
    json_end_object(&j);
    json_finish(&j);
}

static void write_check_text(FILE *out, const struct measurement *m, int count, const struct result *r)
{
    fprintf(out, "%d measurement%s, each at its topology's shipped <efficiency> row (no fit)\n\n", count,
            count == 1 ? "" : "s");
    fprintf(out, "%-40s %-12s %10s %10s %10s %8s\n", "measurement (tokens/s per device)", "class", "measured", "bound",
            "estimate", "error");
    for (int i = 0; i < count; i++) {
        char measured[32], bound[32], estimate[32];
        format_count(m[i].measured, measured, sizeof measured);
        format_count(r[i].bound, bound, sizeof bound);
        format_count(r[i].estimate, estimate, sizeof estimate);
        fprintf(out, "%-40s %-12s %10s %10s %10s %+7.1f%%%s\n", m[i].id,
                calibration_class_name(calibrate_class(&m[i])), measured, bound, estimate,
                error_of(r[i].estimate, m[i].measured) * 100,
                r[i].bound < m[i].measured ? "  BOUND BELOW MEASURED" : "");
    }
    struct error_summary s;
    summarise(m, r, count, false, &s);
    fprintf(out, "\n|error|: mean %.1f%%, median %.1f%%; %d of %d within 25%%\n", s.mean * 100, s.median * 100,
            s.within, s.count);
    write_classes(out, "by class:", &s);
}

static void write_check_tree(FILE *out, enum json_syntax syntax, const struct measurement *m,
                             const struct entry *entries, int count, const struct result *r)
{
    struct json j;
    json_init(&j, out, syntax);
    json_begin_object(&j);
    json_key(&j, "measurements");
    json_begin_array(&j);
    for (int i = 0; i < count; i++)
        write_measurement(&j, &m[i], &entries[i], &r[i], false);
    json_end_array(&j);
    struct error_summary s;
    summarise(m, r, count, false, &s);
    json_key(&j, "mean_abs_error");
    json_number(&j, s.mean);
    json_key(&j, "median_abs_error");
    json_number(&j, s.median);
    json_key(&j, "within_25_percent");
    json_int(&j, s.within);
    json_end_object(&j);
    json_finish(&j);
}

/* What the output is written from. */
struct calibration_output {
    const struct measurement *measurements;
    const struct entry *entries;
    int count;
    const struct calibration_fit *fit;
    const struct result *results;
    enum output_format format;
    bool check;
};

static void write_output(FILE *out, const void *data)
{
    const struct calibration_output *o = data;
    enum json_syntax syntax;
    if (o->check && cli_tree_format(o->format, &syntax))
        write_check_tree(out, syntax, o->measurements, o->entries, o->count, o->results);
    else if (o->check)
        write_check_text(out, o->measurements, o->count, o->results);
    else if (cli_tree_format(o->format, &syntax))
        write_tree(out, syntax, o->measurements, o->entries, o->count, o->fit, o->results);
    else
        write_text(out, o->measurements, o->entries, o->count, o->fit, o->results);
}

int cmd_calibrate(int argc, char **argv)
{
    struct options o;
    int status = cli_parse(&command_calibrate, argc, argv, &o);
    if (status >= 0)
        return status;
    struct entry *entries;
    struct measurement *m;
    int count;
    status = load(o.positional[0], &entries, &m, &count);
    char why[512];
    if (status == EXIT_OK && !calibrate_prepare(m, count, why, sizeof why)) {
        fprintf(stderr, "rackplan calibrate: %s\n", why);
        status = EXIT_INVALID;
    }
    for (int i = 0; status == EXIT_OK && o.check && i < count; i++) {
        if (!topology_calibration(m[i].topology, m[i].workload.weights)) {
            fprintf(stderr, "rackplan calibrate: %s: %s has no calibrated <efficiency> for %s weights\n", m[i].id,
                    entries[i].topology_path, precision_name(m[i].workload.weights));
            status = EXIT_USAGE;
        }
    }
    if (status != EXIT_OK) {
        free(m);
        entries_release(entries, count);
        return status;
    }
    struct calibration_fit fit = {0};
    struct result *r = xcalloc((size_t)count, sizeof *r);
    double *left_out = xcalloc((size_t)count, sizeof *left_out);
    if (!o.check) {
        calibrate_fit(m, count, NULL, NULL, &fit);
        struct calibration_fit unrounded = fit;
        round_fit(&fit);
        calibrate_left_out(m, count, &unrounded, round_fit, left_out);
    }
    struct efficiency bound = EFFICIENCY_BOUND;
    int below = 0;
    for (int i = 0; i < count; i++) {
        r[i].bound = calibrate_predict(&m[i], &bound, &r[i].bound_batch);
        struct efficiency e = o.check ? topology_calibration(m[i].topology, m[i].workload.weights)->efficiency
                                      : calibration_efficiency(&fit, m[i].group);
        r[i].estimate = calibrate_predict(&m[i], &e, &r[i].batch);
        r[i].left_out = left_out[i];
        below += r[i].bound < m[i].measured;
    }
    struct calibration_output output = {.measurements = m, .entries = entries, .count = count, .fit = &fit,
                                        .results = r, .format = o.format, .check = o.check};
    struct sink_batch outputs;
    sink_batch_init(&outputs);
    sink_batch_write(&outputs, o.output, write_output, &output);
    status = !sink_batch_finish(&outputs, true) ? EXIT_IO : below ? EXIT_NO_FIT : EXIT_OK;
    if (below && status == EXIT_NO_FIT)
        fprintf(stderr, "rackplan calibrate: %d bound%s below the measured throughput: the model misses "
                        "something there\n",
                below, below == 1 ? " is" : "s are");
    free(left_out);
    free(r);
    free(m);
    entries_release(entries, count);
    return status;
}
