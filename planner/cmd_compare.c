/* cmd_compare.c: `rackplan compare MODEL TOPOLOGY...`: the model on each topology and cluster
 * size side by side, cheapest per token first. */
#include "cli.h"
#include "commands.h"
#include "compare.h"
#include "model.h"
#include "topology.h"

#include "../reports/json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct report {
    const struct model *model;
    const struct options *options;
    const struct workload *workload;
    const struct compare_row *rows;
    const struct topology *const *topology_of; /* each row's topology */
    const int64_t *order;
    int64_t count;
};

/* The file name without directories and without ".xml". */
static void file_stem(const char *path, char *out, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, size, "%s", base);
    size_t n = strlen(out);
    if (n > 4 && strcasecmp(out + n - 4, ".xml") == 0)
        out[n - 4] = 0;
}

static bool price_names(const struct price *p, const char *path, const struct topology *t)
{
    size_t length = (size_t)(strrchr(p->device, '=') - p->device);
    char stem[256];
    file_stem(path, stem, sizeof stem);
    return (strlen(stem) == length && strncasecmp(stem, p->device, length) == 0) ||
           (strlen(t->name) == length && strncasecmp(t->name, p->device, length) == 0);
}

static bool is_best(const struct report *r, int64_t rank)
{
    const struct compare_row *x = &r->rows[r->order[rank]];
    return rank == 0 && x->fits && x->tpot_met;
}

static void write_tree(FILE *out, enum json_syntax syntax, const struct report *r)
{
    struct json j;
    json_init(&j, out, syntax);
    json_begin_array(&j);
    for (int64_t rank = 0; rank < r->count; rank++) {
        const struct topology *t = r->topology_of[r->order[rank]];
        const struct compare_row *x = &r->rows[r->order[rank]];
        json_begin_object(&j);
        json_key(&j, "best");
        json_bool(&j, is_best(r, rank));
        json_key(&j, "model");
        json_string(&j, r->model->name);
        json_key(&j, "topology");
        json_string(&j, t->name);
        json_key(&j, "announced");
        json_bool(&j, t->announced);
        json_key(&j, "racks");
        json_int(&j, x->racks);
        json_key(&j, "devices");
        json_int(&j, x->devices);
        json_key(&j, "domain_size");
        json_int(&j, x->domain_size);
        json_key(&j, "context");
        json_int(&j, r->workload->context);
        json_key(&j, "parallel");
        cli_json_parallel(&j, &x->layout);
        json_key(&j, "fits");
        json_bool(&j, x->fits);
        json_key(&j, "max_batch");
        json_int(&j, x->max_batch);
        json_key(&j, "min_devices");
        json_int(&j, x->min_devices);
        json_key(&j, "latency_floor_s");
        if (x->fits)
            json_number(&j, x->latency_floor_s);
        else
            json_null(&j);
        json_key(&j, "tpot_s");
        json_positive_or_null(&j, r->options->tpot_s);
        json_key(&j, "tpot_met");
        json_bool(&j, x->tpot_met);
        json_key(&j, "batch");
        json_int(&j, x->batch);
        json_key(&j, "step_s");
        json_number(&j, x->point.step_s);
        json_key(&j, "bound_by");
        if (x->tpot_met)
            json_string(&j, roof_term_name(x->point.bound));
        else
            json_null(&j);
        json_key(&j, "tokens_per_s");
        json_number(&j, x->point.tokens_per_s);
        json_key(&j, "tokens_per_s_per_device");
        json_number(&j, x->point.tokens_per_s_per_device);
        json_key(&j, "tokens_per_s_per_rack");
        json_number(&j, x->tokens_per_s_per_rack);
        json_key(&j, "price_usd_per_device_hour");
        json_positive_or_null(&j, x->price_usd_per_hour);
        json_key(&j, "cost_per_mtok");
        json_positive_or_null(&j, x->cost_per_mtok);
        json_key(&j, "joules_per_token");
        json_positive_or_null(&j, x->joules_per_token);
        json_key(&j, "all_to_all_outside_domain");
        json_number(&j, x->all_to_all_outside);
        json_key(&j, "kind");
        json_string(&j, x->estimate ? "estimate" : "bound");
        json_end_object(&j);
    }
    json_end_array(&j);
    json_finish(&j);
}

static void write_csv(FILE *out, const struct report *r)
{
    fprintf(out, "best,topology,announced,racks,devices,domain_size,tp,ep,pp,dp,fits,max_batch,"
                 "min_devices,latency_floor_s,tpot_met,batch,step_s,tokens_per_s,"
                 "tokens_per_s_per_device,tokens_per_s_per_rack,cost_per_mtok,joules_per_token,"
                 "all_to_all_outside_domain,kind\n");
    for (int64_t rank = 0; rank < r->count; rank++) {
        const struct topology *t = r->topology_of[r->order[rank]];
        const struct compare_row *x = &r->rows[r->order[rank]];
        fprintf(out, "%s,\"%s\",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%.9g,%s,%" PRId64
                     ",%.9g,%.9g,%.9g,%.9g,",
                is_best(r, rank) ? "true" : "false", t->name,
                t->announced ? "true" : "false", x->racks, x->devices, x->domain_size,
                x->layout.tp, x->layout.ep, x->layout.pp, x->layout.dp, x->fits ? "true" : "false",
                x->max_batch, x->min_devices, x->fits ? x->latency_floor_s : 0,
                x->tpot_met ? "true" : "false",
                x->batch, x->point.step_s, x->point.tokens_per_s,
                x->point.tokens_per_s_per_device, x->tokens_per_s_per_rack);
        if (x->cost_per_mtok > 0)
            fprintf(out, "%.9g", x->cost_per_mtok);
        fprintf(out, ",");
        if (x->joules_per_token > 0)
            fprintf(out, "%.9g", x->joules_per_token);
        fprintf(out, ",%.9g,%s\n", x->all_to_all_outside, x->estimate ? "estimate" : "bound");
    }
}

/* The table's cells for one row, as text (shared by the text and Markdown tables). */
struct cells {
    char name[160], racks[32], devices[32], domain[32], fits[48], floor[32], batch[32],
        per_device[32], per_rack[32], cost[32], energy[32], outside[32];
};

static void row_cells(const struct report *r, int64_t rank, struct cells *c)
{
    const struct topology *t = r->topology_of[r->order[rank]];
    const struct compare_row *x = &r->rows[r->order[rank]];
    snprintf(c->name, sizeof c->name, "%s%s%s", is_best(r, rank) ? "* " : "", t->name,
             t->announced ? " (announced)" : "");
    format_count((double)x->racks, c->racks, sizeof c->racks);
    format_count((double)x->devices, c->devices, sizeof c->devices);
    format_count((double)x->domain_size, c->domain, sizeof c->domain);
    char count[32];
    format_count((double)x->min_devices, count, sizeof count);
    if (x->fits)
        snprintf(c->fits, sizeof c->fits, "yes (min %s)", count);
    else if (x->min_devices > 0)
        snprintf(c->fits, sizeof c->fits, "no (needs %s)", count);
    else
        snprintf(c->fits, sizeof c->fits, "no");
    if (x->fits)
        snprintf(c->floor, sizeof c->floor, "%.4g", x->latency_floor_s * 1e3);
    else
        snprintf(c->floor, sizeof c->floor, "-");
    if (x->tpot_met) {
        format_count((double)x->batch, c->batch, sizeof c->batch);
        format_count(x->point.tokens_per_s_per_device, c->per_device, sizeof c->per_device);
        format_count(x->tokens_per_s_per_rack, c->per_rack, sizeof c->per_rack);
    } else {
        snprintf(c->batch, sizeof c->batch, "%s", x->fits ? "misses TPOT" : "-");
        snprintf(c->per_device, sizeof c->per_device, "-");
        snprintf(c->per_rack, sizeof c->per_rack, "-");
    }
    if (x->cost_per_mtok > 0)
        snprintf(c->cost, sizeof c->cost, "%.4g", x->cost_per_mtok);
    else
        snprintf(c->cost, sizeof c->cost, "-");
    if (x->joules_per_token > 0)
        snprintf(c->energy, sizeof c->energy, "%.3g", x->joules_per_token);
    else
        snprintf(c->energy, sizeof c->energy, "-");
    snprintf(c->outside, sizeof c->outside, "%.0f%%", x->all_to_all_outside * 100);
}

static void write_heading(FILE *out, const struct report *r)
{
    char context[32];
    format_count((double)r->workload->context, context, sizeof context);
    fprintf(out, "%s at %s tokens of context", r->model->name, context);
    if (r->options->tpot_s > 0)
        fprintf(out, ", time per output token <= %.4g ms", r->options->tpot_s * 1e3);
    fprintf(out, "\n");
}

static bool any_estimate(const struct report *r)
{
    for (int64_t i = 0; i < r->count; i++)
        if (r->rows[i].estimate)
            return true;
    return false;
}

static void write_text(FILE *out, const struct report *r)
{
    write_heading(out, r);
    fprintf(out, "\n%-40s %6s %8s %7s %-18s %9s %12s %10s %11s %8s %7s %8s\n", "topology", "racks",
            "devices", "domain", "fits", "floor ms", "batch", "tok/s/dev", "tok/s/rack", "$/Mtok",
            "J/tok", "leaves");
    for (int64_t rank = 0; rank < r->count; rank++) {
        struct cells c;
        row_cells(r, rank, &c);
        fprintf(out, "%-40s %6s %8s %7s %-18s %9s %12s %10s %11s %8s %7s %8s\n", c.name, c.racks,
                c.devices, c.domain, c.fits, c.floor, c.batch, c.per_device, c.per_rack, c.cost,
                c.energy, c.outside);
    }
    fprintf(out, "\n* cheapest per token among the rows that fit%s; sorted by $/Mtok (unpriced rows\n"
                 "  after, by tok/s/dev). floor: the decode step at batch 1; leaves: share of the MoE\n"
                 "  all-to-all that crosses scale-up domains. %s\n",
            r->options->tpot_s > 0 ? " and meet the target" : "",
            any_estimate(r) ? "Rows marked estimate in JSON use measured efficiency; the others are bounds."
                            : "Every number is a roofline bound (efficiency 1).");
}

static void write_markdown(FILE *out, const struct report *r)
{
    fprintf(out, "## ");
    write_heading(out, r);
    fprintf(out, "\n| topology | racks | devices | domain | fits | floor ms | batch | tok/s/dev | "
                 "tok/s/rack | $/Mtok | J/tok | all-to-all leaving the domain |\n"
                 "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int64_t rank = 0; rank < r->count; rank++) {
        struct cells c;
        row_cells(r, rank, &c);
        bool best = is_best(r, rank);
        fprintf(out, "| %s%s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                best ? "**" : "", best ? c.name + 2 : c.name, best ? "** (best)" : "", c.racks,
                c.devices, c.domain, c.fits, c.floor, c.batch, c.per_device, c.per_rack, c.cost,
                c.energy, c.outside);
    }
    fprintf(out, "\n%s\n", any_estimate(r) ? "Some rows are estimates from measured efficiency."
                                            : "Every number is a roofline bound (efficiency 1).");
}

int cmd_compare(int argc, char **argv)
{
    struct options o;
    int status = cli_parse(&command_compare, argc, argv, &o);
    if (status >= 0)
        return status;
    struct model m;
    if ((status = cli_load_model(o.positional[0], &m)) != EXIT_OK)
        return status;
    int topologies = o.positional_count - 1;
    int sizes = o.racks_count > 0 ? o.racks_count : 1;
    struct topology *loaded = xcalloc((size_t)topologies, sizeof *loaded);
    for (int i = 0; i < topologies; i++)
        if ((status = cli_load_topology(o.positional[i + 1], &loaded[i])) != EXIT_OK)
            goto loaded_done;
    for (int p = 0; p < o.price_count; p++) {
        bool named = false;
        for (int i = 0; i < topologies; i++)
            named |= price_names(&o.prices[p], o.positional[i + 1], &loaded[i]);
        if (!named) {
            status = cli_usage_error(o.command, "--price '%s' names none of the topologies given",
                                     o.prices[p].device);
            goto loaded_done;
        }
    }
    if ((status = cli_resolve(&o, &m, NULL)) != EXIT_OK)
        goto loaded_done;
    struct workload w;
    cli_workload(&o, &w);
    int64_t count = (int64_t)topologies * sizes;
    struct compare_row *rows = xcalloc((size_t)count, sizeof *rows);
    const struct topology **topology_of = xcalloc((size_t)count, sizeof *topology_of);
    int64_t *order = xcalloc((size_t)count, sizeof *order);
    status = EXIT_OK;
    for (int i = 0; i < topologies && status == EXIT_OK; i++) {
        double price = 0;
        for (int p = 0; p < o.price_count; p++)
            if (price_names(&o.prices[p], o.positional[i + 1], &loaded[i]))
                price = o.prices[p].usd_per_hour;
        for (int k = 0; k < sizes; k++) {
            int64_t row = i * sizes + k;
            topology_of[row] = &loaded[i];
            int64_t racks = o.racks_count > 0 ? o.racks_list[k] : loaded[i].default_domains;
            if ((status = cli_check_cluster(o.command, racks, &loaded[i])) != EXIT_OK)
                break;
            if (!compare_row(&m, &loaded[i], racks, &w, o.tpot_s, price, &rows[row])) {
                fprintf(stderr, "rackplan compare: the interconnect graph could not be built (out of memory)\n");
                status = EXIT_IO;
                break;
            }
        }
    }
    if (status == EXIT_OK) {
        compare_order(rows, count, order);
        struct report r = {.model = &m, .options = &o, .workload = &w, .rows = rows,
                           .topology_of = topology_of, .order = order, .count = count};
        struct sink sink;
        if (!sink_open(&sink, o.output)) {
            status = EXIT_IO;
        } else {
            enum json_syntax syntax;
            if (cli_tree_format(o.format, &syntax))
                write_tree(sink.out, syntax, &r);
            else if (o.format == FORMAT_CSV)
                write_csv(sink.out, &r);
            else if (o.format == FORMAT_MD)
                write_markdown(sink.out, &r);
            else
                write_text(sink.out, &r);
            if (!sink_commit(&sink))
                status = EXIT_IO;
            else if (!is_best(&r, 0))
                status = EXIT_NO_FIT;
        }
    }
    free(order);
    free(topology_of);
    free(rows);
loaded_done:
    free(loaded);
    return status;
}
