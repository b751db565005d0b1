/* cli.c: see cli.h. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "emit.h"

#include "../reports/document.h"
#include "../reports/json.h"
#include "model.h"
#include "plan.h"
#include "serve.h"
#include "topology.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_usage_error(const struct command *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rackplan %s: ", command->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'rackplan %s --help'.\n", command->name);
    va_end(ap);
    return EXIT_USAGE;
}

static bool parse_count(const char *text, int64_t min, int64_t max, int64_t *out)
{
    if (!text || *text < '0' || *text > '9')
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (*end || errno || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* "10%" (of HBM) or a size: "8GB", "8GiB", "512MB", "2e9" (bytes). */
/* "N[,N...]": at most `capacity` whole numbers from 1 to `max`. */
static bool parse_count_list(const char *text, int64_t max, int64_t *list, int capacity, int *count)
{
    *count = 0;
    const char *at = text;
    for (;;) {
        char piece[32];
        size_t length = strcspn(at, ",");
        if (length == 0 || length >= sizeof piece || *count == capacity)
            return false;
        memcpy(piece, at, length);
        piece[length] = 0;
        if (!parse_count(piece, 1, max, &list[(*count)++]))
            return false;
        if (at[length] == 0)
            return true;
        at += length + 1;
    }
}

static bool parse_reserve(const char *text, struct options *o)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !isfinite(v) || v < 0)
        return false;
    if (strcmp(end, "%") == 0) {
        if (v >= 100)
            return false;
        o->reserve_fraction = v / 100;
        o->reserve_bytes = -1;
        return true;
    }
    static const struct {
        const char *suffix;
        double scale;
    } units[] = {{"", 1},       {"B", 1},         {"KB", 1e3},        {"MB", 1e6},
                 {"GB", 1e9},   {"TB", 1e12},     {"KiB", 1024.0},    {"MiB", 1048576.0},
                 {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            o->reserve_bytes = v * units[i].scale;
            return o->reserve_bytes < 1e18;
        }
    }
    return false;
}

static void print_help(const struct command *c)
{
    printf("usage: %s\n\n%s", c->usage, c->help);
    if (c->options & (OPTS_RACKS | OPTS_PRECISION | OPTS_CONTEXT | OPTS_BATCH | OPTS_FORMAT | OPTS_COMPARE))
        printf("\noptions:\n");
    if (c->options & OPTS_COMPARE)
        printf("  --racks N[,N...] cluster sizes in scale-up domains, one row each per topology;\n"
               "                   default: each topology's <cluster domains>\n"
               "  --tpot-ms X      time per output token target: the largest batch whose decode\n"
               "                   step (with --isl/--osl: the serving step) is within X ms;\n"
               "                   default: the largest batch that fits\n"
               "  --price D=USD    price per device-hour for topology D (its file name without\n"
               "                   .xml, or its name); default: the topology's <price>\n"
               "  --domain-sizes N[,N...]  one row per scale-up domain size of the one TOPOLOGY's\n"
               "                   accelerator (same links per device and scale-out network), on\n"
               "                   the same number of devices: what a bigger domain buys\n"
               "  --devices N      with --domain-sizes: the devices in every row (a multiple of\n"
               "                   each size); default: the sizes' least common multiple; with\n"
               "                   --isl/--osl alone: every row's budget in devices\n"
               "  --plot FILE.svg  time per token and cost against batch, a line per row; with\n"
               "                   --domain-sizes: latency floor, throughput and cost against size\n"
               "  --shard I/N      only the I-th of N equal parts of the rows (topologies x sizes,\n"
               "                   in the order given), for rackplan merge to join\n");
    if (c->options & OPTS_SERVE)
        printf("  --racks N        the budget: at most N scale-up domains for the whole deployment\n"
               "                   (both pools, every replica); default: the topology as written\n"
               "                   (its <cluster domains>), with a line on what more would buy\n"
               "  --devices N      the budget in devices (part of a domain, or not whole domains)\n"
               "  --rate R         requests per second to serve: the fewest devices (whole\n"
               "                   instances) that serve R within the targets; beyond the topology\n"
               "                   as written without --racks/--devices (instances up to %d devices)\n"
               "  --prefill-topology FILE  disaggregated serving with prefill on this hardware and\n"
               "                   decode on TOPOLOGY, the KV crossing the scale-out network\n"
               "  --price D=USD    price per device-hour for topology D (its file name without\n"
               "                   .xml, or its name); default: the topology's <price>\n"
               "  --plot FILE.svg  the frontier: tokens/s per device against tokens/s per user, a\n"
               "                   line per mode, the chosen point marked\n"
               "  --simulate N     also simulate the best deployment (with --rate, the one sized\n"
               "                   for it) for N requests after N/5 of warm-up, and print its\n"
               "                   percentiles beside the analysis'\n"
               "  --seed S         the simulation's seed; default 0\n"
               "  --reuse F        share of a prompt's tokens that repeat an earlier prompt's\n"
               "                   prefix (system prompts, history, agent loops): the hit rate\n"
               "                   the topology's memory tiers then hold replaces --prefix-hit\n"
               "                   (which, given, overrides it), and each tier is reported\n"
               "  --reuse-interval exp:MEAN_S | FILE.csv  the time from a prefix's last use\n"
               "                   to its reuse: exponential of that mean, or quantiles\n"
               "                   (`quantile,seconds` rows); needed with --reuse\n"
               "  --size-tiers     with --reuse: each memory tier's capacity a device at 0 to 16\n"
               "                   times the topology's, the hit rate, tokens/s and $/Mtok of\n"
               "                   each, and the capacity that serves a token cheapest\n"
               "  --tier-price KIND=USD[,...]  a tier's price per GB and hour (KIND host, nvme,\n"
               "                   remote); default: the topology's usd_per_gb_hour\n",
               SERVE_DEFAULT_SPAN_DEVICES);
    else if (c->options & OPTS_RACKS)
        printf("  --racks N        scale-up domains (racks, nodes, pods) in the cluster;\n"
               "                   default: the topology's <cluster domains>\n");
    if (c->options & OPTS_WORKLOAD)
        printf("  --isl N, --osl N mean prompt (input) and output tokens a request: every figure is\n"
               "                   then output tokens/s with prefill included, the KV of a sequence\n"
               "                   read at isl + osl/2 and held at isl + osl\n"
               "  --isl-dist D, --osl-dist D  the lengths as a law instead: fixed:N, uniform:A:B or\n"
               "                   lognormal:MEAN:CV (cut into 16 classes a side, drawn independently)\n"
               "  --lengths FILE   the requests' lengths from a CSV: rows isl,osl,weight (classes)\n"
               "                   or isl,osl (requests); workloads/ has published datasets' mixes\n"
               "  --osl-mean N     with --lengths: every output scaled by one factor so their mean\n"
               "                   is N (none past --max-tokens), when the served model writes\n"
               "                   longer or shorter answers than the file's (MLPerf's Llama 2 70B\n"
               "                   writes 294.45 tokens where OpenOrca's GPT-4 answers hold 218.9)\n"
               "  --arrivals A     closed (default: a fixed number in flight, each replaced as it\n"
               "                   ends: a benchmark's concurrency, an offline batch, started\n"
               "                   together, so alike requests keep to cohorts), poisson\n"
               "                   (requests at random at the served rate: MLPerf's server scenario,\n"
               "                   production) or constant (evenly spaced)\n"
               "%s"
               "%s"
               "%s"
               "  --prefix-hit F   share of prompt tokens found in a prefix cache (not computed);\n"
               "                   default 0\n"
               "  --mtp K --mtp-accept P  multi-token prediction: K draft tokens a step, each\n"
               "                   accepted with probability P; a step verifies K + 1 tokens a\n"
               "                   sequence and yields 1 + P + ... + P^K; the model's MTP modules\n"
               "                   (mtp_layers) are held on the last stage and run once a draft\n"
               "%s"
               "  --chunk N        aggregated: prefill tokens a data-parallel rank's step may carry\n"
               "                   (chunked prefill); default %d (TensorRT-LLM's max_num_tokens)\n"
               "  --max-tokens N   the requests' max_tokens (at least every output), for an engine\n"
               "                   that reserves a request's KV for its prompt and N output tokens\n"
               "                   when it admits it (TensorRT-LLM's default GUARANTEED_NO_EVICT);\n"
               "                   default: its prompt and its own output\n",
               c->options & OPTS_TARGETS ? "  --ttft-ms X      time-to-first-token target; default: none\n" : "",
               c->options & OPTS_TARGETS ? "  --percentile P   the percentile of TTFT and TPOT the targets bound; default 50\n"
                                           "                   (MLPerf's limits are 99th percentiles)\n"
                                         : "",
               (c->options & OPTS_TARGETS) && !(c->options & OPTS_COMPARE)
                   ? "  --tpot-ms Y      time-per-output-token target; default: none (most throughput)\n"
                   : "",
               (c->options & OPTS_TARGETS) && (c->options & (OPTS_SERVE | OPTS_COMPARE))
                   ? "  --mode M         aggregated, disaggregated (prefill and decode pools) or best\n"
                     "                   (default)\n"
                   : "",
               SERVE_DEFAULT_CHUNK_TOKENS);
    if (c->options & OPTS_PRECISION)
        printf("  --weights PREC   weight precision for every weight (fp4, fp8, bf16, fp16, fp32);\n"
               "                   default: the model's (precision.weights / expert_weights)\n"
               "  --kv PREC        KV-cache precision; default: the model's (precision.kv)\n");
    if (c->options & OPTS_CONTEXT)
        printf("  --context N      tokens of KV per sequence; default %d, or the model's maximum\n"
               "                   when shorter\n", CLI_DEFAULT_CONTEXT);
    if (c->options & OPTS_BATCH)
        printf("  --batch N        sequences in flight; default %d\n", CLI_DEFAULT_BATCH);
    if (c->options & OPTS_ROOFLINE)
        printf("  --sweep A:B[:N]  N batches (default 50) spaced evenly in log from A to B\n"
               "  --phase P        decode (default; --batch sequences, one new token each) or\n"
               "                   prefill (--batch prompts of --context tokens: time to first token)\n"
               "  --plot FILE.svg  latency and cost per token against batch, log-log\n"
               "  --shard I/N      only the I-th of N equal parts of the sweep's batches, for\n"
               "                   rackplan merge to join\n"
               "  --eta-compute X, --eta-memory X, --eta-network X\n"
               "                   achieved fraction of peak (0.01 <= X <= 1; network: scale-up and\n"
               "                   scale-out), over --estimate's or 1 (a pure bound): an estimate\n");
    if (c->options & (OPTS_ROOFLINE | OPTS_PLAN | OPTS_COMPARE | OPTS_SERVE))
        printf("  --estimate       a calibrated estimate beside the bound: the topology's <efficiency>\n"
               "                   for the weights' precision (fitted by rackplan calibrate to\n"
               "                   published measurements); default: the bound alone\n");
    if (c->options & OPTS_CALIBRATE)
        printf("  --check          no fit: each measurement predicted at its topology's shipped\n"
               "                   <efficiency> row, the check of measurements held out of the fit\n");
    if (c->options & OPTS_PLAN)
        printf("  --loads FILE.csv expert loads: rows = MoE layers, columns = experts, token counts\n"
               "                   (no header, EPLB's form), or FILE.json with SGLang's logical_count\n"
               "                   (a row per model layer; a leading dimension is summed); default: uniform\n"
               "  --trace FILE     top-k routing trace (layer,token,e0..; .gz read too): experts that\n"
               "                   tokens pick together go to one scale-up domain, and the plan\n"
               "                   reports how much dispatch leaves the token's domain\n"
               "  --overlap on|off the MoE layer time that plan prints and, with --trace, minimises:\n"
               "                   on (default), communication hides under compute (two\n"
               "                   micro-batches, as DeepEP and SGLang run); off, they add\n"
               "  --redundant N    spare expert slots in total for replicas of hot experts (they\n"
               "                   take HBM); default 0 (whole slots per device may add a few);\n"
               "                   auto: whole slots per device while the batch still fits\n"
               "  --ep N           pin the expert-parallel degree (devices per stage)\n"
               "  --time-limit S   a cap in seconds on the stage ILP and on the expert search each\n"
               "                   (default 60); work limits decide the result, and a plan the cap cut\n"
               "                   says so (0: no ILP, the DP and the searches run to the end)\n"
               "  --expert-map F   write the placement as a physical-to-logical map (.csv or .json)\n"
               "  --timings        the solver's seconds in JSON and YAML too (the text always has\n"
               "                   them); without it two runs of one plan write the same bytes\n");
    if (c->options & OPTS_EMIT)
        printf("  --emit ENGINE DIR  launch files for ENGINE (sglang, vllm, trtllm; dynamo or\n"
               "                   dynamo-sglang|vllm|trtllm: a Kubernetes DynamoGraphDeployment) in\n"
               "                   DIR, flags from the plan (parallel sizes, batch, chunk, KV dtype,\n"
               "                   memory share, P/D roles, MTP), each file naming the engine version\n"
               "                   its flags were checked against; refused (exit 2) with the reason\n"
               "                   when the engine cannot run the plan\n");
    if (c->options & (OPTS_PLAN | OPTS_COMPARE | OPTS_SERVE))
        printf("  --report FILE    a report to read: FILE.md with its SVG plots beside it\n"
               "                   (FILE-NAME.svg), or FILE.html, one page with the plots inline\n");
    if (c->options & OPTS_FIT)
        printf("  --reserve R      runtime reserve per device: a share of HBM (\"10%%\") or a size\n"
               "                   (\"8GB\", \"6GiB\"); default %.0f%% (vLLM's gpu_memory_utilization 0.9)\n"
               "  --tp N, --pp N   pin tensor-parallel / pipeline degrees; default: chosen\n",
               PLAN_DEFAULT_RESERVE_FRACTION * 100);
    if (c->options & OPTS_MTP_HELD)
        printf("  --mtp K          hold the model's MTP modules (mtp_layers) on the last stage, as\n"
               "                   speculative decoding with K draft tokens does; default 0: not held\n");
    if (c->options & OPTS_FORMAT)
        printf("  --format F       %s\n", c->options & OPTS_MERGE      ? "csv or json (what the parts must be; default: theirs)"
                                     : c->options & OPTS_DOT        ? "text (default), json, yaml or dot (Graphviz)"
                                     : c->options & OPTS_ROOFLINE ? "text (default), json, yaml or csv"
                                     : c->options & OPTS_COMPARE  ? "text (default), json, yaml, csv or md"
                                                                  : "text (default), json or yaml");
    if (c->options & OPTS_MERGE)
        printf("  -o, --output F   write to F (atomically: a temporary file renamed into place)\n");
    else if (c->options & OPTS_FORMAT)
        printf("  -o, --output F   write to F (atomically: a temporary file renamed into place);\n"
               "                   F ending in %s sets the format when --format is not given\n",
               c->options & OPTS_COMPARE    ? ".json, .yaml, .yml, .csv or .md"
               : c->options & OPTS_ROOFLINE ? ".json, .yaml, .yml or .csv"
                                            : ".json, .yaml or .yml");
    printf("  -h, --help       this help\n");
    const char *verdict = strcmp(c->name, "fit") == 0    ? "0 fits, 1 does not fit"
                          : strcmp(c->name, "plan") == 0 ? "0 the plan fits, 1 it does not"
                          : c->options & OPTS_COMPARE    ? "0 some row fits, 1 none does"
                          : c->options & OPTS_SERVE      ? "0 some deployment within the budget meets the targets (and --rate),\n"
                                                           "            1 the model does not fit the budget or none does"
                          : c->options & OPTS_MERGE      ? "0 ok, 1 no merged compare row fits"
                                                         : "0 ok";
    printf("\nexit codes: %s, 2 usage error, 3 invalid input, 5 I/O or internal error\n", verdict);
}

enum { OPT_RACKS = 256, OPT_WEIGHTS, OPT_KV, OPT_CONTEXT, OPT_BATCH, OPT_FORMAT, OPT_RESERVE,
       OPT_TP, OPT_PP, OPT_SWEEP, OPT_PHASE, OPT_PLOT, OPT_ETA_COMPUTE, OPT_ETA_MEMORY,
       OPT_ETA_NETWORK, OPT_LOADS, OPT_REDUNDANT, OPT_EP, OPT_TIME_LIMIT, OPT_EXPERT_MAP, OPT_REPORT, OPT_TRACE,
       OPT_OVERLAP, OPT_TPOT_MS, OPT_PRICE, OPT_DOMAIN_SIZES, OPT_DEVICES, OPT_SHARD, OPT_ESTIMATE,
       OPT_ISL, OPT_OSL, OPT_TTFT_MS, OPT_PREFIX_HIT, OPT_MTP, OPT_MTP_ACCEPT, OPT_MODE, OPT_CHUNK, OPT_MAX_TOKENS, OPT_RATE,
       OPT_PREFILL_TOPOLOGY, OPT_TIMINGS, OPT_CHECK, OPT_LENGTHS, OPT_OSL_MEAN, OPT_ISL_DIST, OPT_OSL_DIST, OPT_ARRIVALS,
       OPT_PERCENTILE, OPT_SIMULATE, OPT_SEED, OPT_REUSE, OPT_REUSE_INTERVAL, OPT_SIZE_TIERS, OPT_EMIT,
       OPT_TIER_PRICE };

/* "A:B" or "A:B:N": N batches spaced evenly in log from A to B (default 50). */
static bool parse_sweep(const char *text, struct options *o)
{
    char copy[96];
    if (strlen(text) >= sizeof copy)
        return false;
    strcpy(copy, text);
    char *second = strchr(copy, ':');
    if (!second)
        return false;
    *second++ = '\0';
    char *third = strchr(second, ':');
    if (third)
        *third++ = '\0';
    o->sweep_points = 50;
    return parse_count(copy, 1, (int64_t)1 << 40, &o->sweep_from) &&
           parse_count(second, 1, (int64_t)1 << 40, &o->sweep_to) && o->sweep_from <= o->sweep_to &&
           (!third || parse_count(third, 1, 100000, &o->sweep_points));
}

static bool parse_fraction(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= CLI_MIN_EFFICIENCY && v <= 1))
        return false;
    *out = v;
    return true;
}

/* The format -o's extension names, among those `c` writes; text otherwise. */
static enum output_format format_of_path(const struct command *c, const char *path)
{
    if (path_ends_with(path, ".json"))
        return FORMAT_JSON;
    if (path_ends_with(path, ".yaml") || path_ends_with(path, ".yml"))
        return FORMAT_YAML;
    if (path_ends_with(path, ".csv") && (c->options & (OPTS_ROOFLINE | OPTS_COMPARE)))
        return FORMAT_CSV;
    if (path_ends_with(path, ".md") && (c->options & OPTS_COMPARE))
        return FORMAT_MD;
    return FORMAT_TEXT;
}

int cli_parse(const struct command *c, int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->command = c;
    o->context = CLI_DEFAULT_CONTEXT;
    o->batch = CLI_DEFAULT_BATCH;
    o->reserve_fraction = PLAN_DEFAULT_RESERVE_FRACTION;
    o->reserve_bytes = -1;
    o->time_limit_s = CLI_DEFAULT_TIME_LIMIT_S;
    o->overlap = true;
    o->arrivals = SERVE_CLOSED;
    const struct {
        struct option option;
        unsigned needs;
    } table[] = {
        {{"help", no_argument, NULL, 'h'}, 0},
        {{"racks", required_argument, NULL, OPT_RACKS}, OPTS_RACKS},
        {{"weights", required_argument, NULL, OPT_WEIGHTS}, OPTS_PRECISION},
        {{"kv", required_argument, NULL, OPT_KV}, OPTS_PRECISION},
        {{"context", required_argument, NULL, OPT_CONTEXT}, OPTS_CONTEXT},
        {{"batch", required_argument, NULL, OPT_BATCH}, OPTS_BATCH},
        {{"format", required_argument, NULL, OPT_FORMAT}, OPTS_FORMAT},
        {{"output", required_argument, NULL, 'o'}, OPTS_FORMAT},
        {{"reserve", required_argument, NULL, OPT_RESERVE}, OPTS_FIT},
        {{"tp", required_argument, NULL, OPT_TP}, OPTS_FIT},
        {{"pp", required_argument, NULL, OPT_PP}, OPTS_FIT},
        {{"sweep", required_argument, NULL, OPT_SWEEP}, OPTS_ROOFLINE},
        {{"phase", required_argument, NULL, OPT_PHASE}, OPTS_ROOFLINE},
        {{"plot", required_argument, NULL, OPT_PLOT}, OPTS_ROOFLINE},
        {{"eta-compute", required_argument, NULL, OPT_ETA_COMPUTE}, OPTS_ROOFLINE},
        {{"eta-memory", required_argument, NULL, OPT_ETA_MEMORY}, OPTS_ROOFLINE},
        {{"eta-network", required_argument, NULL, OPT_ETA_NETWORK}, OPTS_ROOFLINE},
        {{"estimate", no_argument, NULL, OPT_ESTIMATE}, OPTS_ROOFLINE},
        {{"estimate", no_argument, NULL, OPT_ESTIMATE}, OPTS_PLAN},
        {{"estimate", no_argument, NULL, OPT_ESTIMATE}, OPTS_COMPARE},
        {{"loads", required_argument, NULL, OPT_LOADS}, OPTS_PLAN},
        {{"trace", required_argument, NULL, OPT_TRACE}, OPTS_PLAN},
        {{"overlap", required_argument, NULL, OPT_OVERLAP}, OPTS_PLAN},
        {{"redundant", required_argument, NULL, OPT_REDUNDANT}, OPTS_PLAN},
        {{"ep", required_argument, NULL, OPT_EP}, OPTS_PLAN},
        {{"time-limit", required_argument, NULL, OPT_TIME_LIMIT}, OPTS_PLAN},
        {{"expert-map", required_argument, NULL, OPT_EXPERT_MAP}, OPTS_PLAN},
        {{"timings", no_argument, NULL, OPT_TIMINGS}, OPTS_PLAN},
        {{"check", no_argument, NULL, OPT_CHECK}, OPTS_CALIBRATE},
        {{"report", required_argument, NULL, OPT_REPORT}, OPTS_PLAN},
        {{"report", required_argument, NULL, OPT_REPORT}, OPTS_COMPARE},
        {{"racks", required_argument, NULL, OPT_RACKS}, OPTS_COMPARE},
        {{"tpot-ms", required_argument, NULL, OPT_TPOT_MS}, OPTS_COMPARE},
        {{"price", required_argument, NULL, OPT_PRICE}, OPTS_COMPARE},
        {{"domain-sizes", required_argument, NULL, OPT_DOMAIN_SIZES}, OPTS_COMPARE},
        {{"devices", required_argument, NULL, OPT_DEVICES}, OPTS_COMPARE},
        {{"plot", required_argument, NULL, OPT_PLOT}, OPTS_COMPARE},
        {{"shard", required_argument, NULL, OPT_SHARD}, OPTS_COMPARE},
        {{"shard", required_argument, NULL, OPT_SHARD}, OPTS_ROOFLINE},
        {{"isl", required_argument, NULL, OPT_ISL}, OPTS_WORKLOAD},
        {{"osl", required_argument, NULL, OPT_OSL}, OPTS_WORKLOAD},
        {{"ttft-ms", required_argument, NULL, OPT_TTFT_MS}, OPTS_TARGETS},
        {{"tpot-ms", required_argument, NULL, OPT_TPOT_MS}, OPTS_TARGETS},
        {{"prefix-hit", required_argument, NULL, OPT_PREFIX_HIT}, OPTS_WORKLOAD},
        {{"mtp", required_argument, NULL, OPT_MTP}, OPTS_WORKLOAD},
        {{"mtp", required_argument, NULL, OPT_MTP}, OPTS_MTP_HELD},
        {{"mtp-accept", required_argument, NULL, OPT_MTP_ACCEPT}, OPTS_WORKLOAD},
        {{"mode", required_argument, NULL, OPT_MODE}, OPTS_TARGETS | OPTS_SERVE},
        {{"mode", required_argument, NULL, OPT_MODE}, OPTS_TARGETS | OPTS_COMPARE},
        {{"chunk", required_argument, NULL, OPT_CHUNK}, OPTS_WORKLOAD},
        {{"max-tokens", required_argument, NULL, OPT_MAX_TOKENS}, OPTS_WORKLOAD},
        {{"rate", required_argument, NULL, OPT_RATE}, OPTS_SERVE},
        {{"lengths", required_argument, NULL, OPT_LENGTHS}, OPTS_WORKLOAD},
        {{"osl-mean", required_argument, NULL, OPT_OSL_MEAN}, OPTS_WORKLOAD},
        {{"isl-dist", required_argument, NULL, OPT_ISL_DIST}, OPTS_WORKLOAD},
        {{"osl-dist", required_argument, NULL, OPT_OSL_DIST}, OPTS_WORKLOAD},
        {{"arrivals", required_argument, NULL, OPT_ARRIVALS}, OPTS_WORKLOAD},
        {{"percentile", required_argument, NULL, OPT_PERCENTILE}, OPTS_TARGETS},
        {{"simulate", required_argument, NULL, OPT_SIMULATE}, OPTS_SERVE},
        {{"seed", required_argument, NULL, OPT_SEED}, OPTS_SERVE},
        {{"reuse", required_argument, NULL, OPT_REUSE}, OPTS_SERVE},
        {{"reuse-interval", required_argument, NULL, OPT_REUSE_INTERVAL}, OPTS_SERVE},
        {{"size-tiers", no_argument, NULL, OPT_SIZE_TIERS}, OPTS_SERVE},
        {{"emit", required_argument, NULL, OPT_EMIT}, OPTS_EMIT},
        {{"tier-price", required_argument, NULL, OPT_TIER_PRICE}, OPTS_SERVE},
        {{"devices", required_argument, NULL, OPT_DEVICES}, OPTS_SERVE},
        {{"prefill-topology", required_argument, NULL, OPT_PREFILL_TOPOLOGY}, OPTS_SERVE},
        {{"price", required_argument, NULL, OPT_PRICE}, OPTS_SERVE},
        {{"plot", required_argument, NULL, OPT_PLOT}, OPTS_SERVE},
        {{"report", required_argument, NULL, OPT_REPORT}, OPTS_SERVE},
        {{"estimate", no_argument, NULL, OPT_ESTIMATE}, OPTS_SERVE},
    };
    struct option longopts[sizeof table / sizeof table[0] + 1];
    int n = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if ((table[i].needs & c->options) == table[i].needs)
            longopts[n++] = table[i].option;
    longopts[n] = (struct option){0};
    const char *shortopts = (c->options & OPTS_FORMAT) ? ":ho:" : ":h";

    int positionals = 0;
    optind = 1;
    opterr = 0;
    for (;;) {
        int index = -1;
        int ch = getopt_long(argc, argv, shortopts, longopts, &index);
        if (ch == -1)
            break;
        const char *arg = optarg;
        switch (ch) {
        case 'h':
            print_help(c);
            return EXIT_OK;
        case OPT_RACKS:
            if (c->options & OPTS_COMPARE) {
                if (!parse_count_list(arg, PLAN_MAX_RACKS, o->racks_list, CLI_MAX_RACKS_LIST, &o->racks_count))
                    return cli_usage_error(c, "--racks takes up to %d whole numbers from 1 to %d "
                                              "separated by commas, not '%s'",
                                           CLI_MAX_RACKS_LIST, PLAN_MAX_RACKS, arg);
            } else if (!parse_count(arg, 1, PLAN_MAX_RACKS, &o->racks)) {
                return cli_usage_error(c, "--racks takes a whole number from 1 to %d, not '%s'",
                                       PLAN_MAX_RACKS, arg);
            }
            break;
        case OPT_DOMAIN_SIZES:
            if (!parse_count_list(arg, TOPOLOGY_MAX_DOMAIN_DEVICES, o->domain_sizes, CLI_MAX_RACKS_LIST,
                                  &o->domain_size_count))
                return cli_usage_error(c, "--domain-sizes takes up to %d whole numbers from 1 to %d "
                                          "separated by commas, not '%s'",
                                       CLI_MAX_RACKS_LIST, TOPOLOGY_MAX_DOMAIN_DEVICES, arg);
            break;
        case OPT_SHARD: {
            char *slash = strchr(arg, '/');
            char part[32];
            size_t length = slash ? (size_t)(slash - arg) : 0;
            bool ok = slash && length > 0 && length < sizeof part;
            if (ok) {
                memcpy(part, arg, length);
                part[length] = 0;
                ok = parse_count(part, 1, CLI_MAX_SHARDS, &o->shard_index) &&
                     parse_count(slash + 1, 1, CLI_MAX_SHARDS, &o->shard_count) &&
                     o->shard_index <= o->shard_count;
            }
            if (!ok)
                return cli_usage_error(c, "--shard takes I/N, the I-th of N parts (1 <= I <= N <= %d), not '%s'",
                                       CLI_MAX_SHARDS, arg);
            break;
        }
        case OPT_DEVICES:
            if (!parse_count(arg, 1, CLI_MAX_DEVICES, &o->devices))
                return cli_usage_error(c, "--devices takes a whole number from 1 to %d, not '%s'",
                                       CLI_MAX_DEVICES, arg);
            break;
        case OPT_TPOT_MS: {
            char *end;
            errno = 0;
            double ms = strtod(arg, &end);
            if (errno || end == arg || *end || !(ms > 0 && ms <= 1e7))
                return cli_usage_error(c, "--tpot-ms takes milliseconds above 0, not '%s'", arg);
            o->tpot_s = ms / 1e3;
            break;
        }
        case OPT_ISL:
        case OPT_OSL:
            if (!parse_count(arg, 1, 1073741824, ch == OPT_ISL ? &o->isl : &o->osl))
                return cli_usage_error(c, "--%s takes a whole number of tokens from 1 to 1073741824, not '%s'",
                                       ch == OPT_ISL ? "isl" : "osl", arg);
            break;
        case OPT_TTFT_MS: {
            char *end;
            errno = 0;
            double ms = strtod(arg, &end);
            if (errno || end == arg || *end || !(ms > 0 && ms <= 1e7))
                return cli_usage_error(c, "--ttft-ms takes milliseconds above 0, not '%s'", arg);
            o->ttft_s = ms / 1e3;
            break;
        }
        case OPT_PREFIX_HIT:
        case OPT_MTP_ACCEPT: {
            char *end;
            errno = 0;
            double share = strtod(arg, &end);
            bool hit = ch == OPT_PREFIX_HIT;
            if (errno || end == arg || *end || !(hit ? share >= 0 && share < 1 : share > 0 && share <= 1))
                return cli_usage_error(c, hit ? "--prefix-hit takes a share of prompt tokens from 0 to below 1, not '%s'"
                                              : "--mtp-accept takes a probability above 0 and at most 1, not '%s'",
                                       arg);
            *(hit ? &o->prefix_hit : &o->mtp_accept) = share;
            break;
        }
        case OPT_MTP:
            if (!parse_count(arg, 0, 16, &o->mtp))
                return cli_usage_error(c, "--mtp takes a number of draft tokens from 0 to 16, not '%s'", arg);
            break;
        case OPT_CHUNK:
            if (!parse_count(arg, 1, 1073741824, &o->chunk_tokens))
                return cli_usage_error(c, "--chunk takes a whole number of tokens from 1 to 1073741824, not '%s'", arg);
            break;
        case OPT_MAX_TOKENS:
            if (!parse_count(arg, 1, LENGTHS_MAX_TOKENS, &o->max_tokens))
                return cli_usage_error(c, "--max-tokens takes a whole number of output tokens from 1 to %d, not '%s'",
                                       LENGTHS_MAX_TOKENS, arg);
            break;
        case OPT_MODE:
            o->mode_set = true;
            if (strcmp(arg, "aggregated") == 0)
                o->mode = SERVE_AGGREGATED;
            else if (strcmp(arg, "disaggregated") == 0)
                o->mode = SERVE_DISAGGREGATED;
            else if (strcmp(arg, "best") == 0)
                o->mode = SERVE_BEST;
            else
                return cli_usage_error(c, "--mode takes aggregated, disaggregated or best, not '%s'", arg);
            break;
        case OPT_RATE: {
            char *end;
            errno = 0;
            double rate = strtod(arg, &end);
            if (errno || end == arg || *end || !(rate > 0 && rate <= 1e9))
                return cli_usage_error(c, "--rate takes requests per second above 0 and at most 10^9, not '%s'", arg);
            o->rate = rate;
            break;
        }
        case OPT_PREFILL_TOPOLOGY:
            o->prefill_topology = arg;
            break;
        case OPT_LENGTHS:
            o->lengths = arg;
            break;
        case OPT_OSL_MEAN: {
            char *end;
            errno = 0;
            double mean = strtod(arg, &end);
            if (errno || end == arg || *end || !(mean >= 1 && mean <= LENGTHS_MAX_TOKENS))
                return cli_usage_error(c, "--osl-mean takes the mean output tokens a request, from 1 to %d, not '%s'",
                                       LENGTHS_MAX_TOKENS, arg);
            o->osl_mean = mean;
            break;
        }
        case OPT_ISL_DIST:
        case OPT_OSL_DIST: {
            char why[160];
            bool prompt = ch == OPT_ISL_DIST;
            if (!length_family_parse(arg, prompt ? &o->isl_dist : &o->osl_dist, why, sizeof why))
                return cli_usage_error(c, "--%s: %s (fixed:N, uniform:A:B or lognormal:MEAN:CV)",
                                       prompt ? "isl-dist" : "osl-dist", why);
            *(prompt ? &o->isl_dist_set : &o->osl_dist_set) = true;
            break;
        }
        case OPT_ARRIVALS:
            if (strcmp(arg, "poisson") == 0)
                o->arrivals = SERVE_POISSON;
            else if (strcmp(arg, "constant") == 0)
                o->arrivals = SERVE_CONSTANT;
            else if (strcmp(arg, "closed") == 0)
                o->arrivals = SERVE_CLOSED;
            else
                return cli_usage_error(c, "--arrivals takes poisson, constant or closed, not '%s'", arg);
            break;
        case OPT_PERCENTILE: {
            char *end;
            errno = 0;
            double p = strtod(arg, &end);
            if (errno || end == arg || *end || !(p >= 1 && p <= 99.9))
                return cli_usage_error(c, "--percentile takes a percentile from 1 to 99.9, not '%s'", arg);
            o->percentile = p;
            break;
        }
        case OPT_SIMULATE:
            if (!parse_count(arg, 1, 10000000, &o->simulate))
                return cli_usage_error(c, "--simulate takes a number of requests from 1 to 10000000, not '%s'", arg);
            break;
        case OPT_REUSE: {
            char *end;
            errno = 0;
            double share = strtod(arg, &end);
            if (errno || end == arg || *end || !(share >= 0 && share <= 1))
                return cli_usage_error(c, "--reuse takes the share of a prompt's tokens that repeat an earlier "
                                          "prompt's prefix, from 0 to 1, not '%s'", arg);
            o->reuse = share;
            o->reuse_set = true;
            break;
        }
        case OPT_REUSE_INTERVAL:
            o->reuse_interval = arg;
            break;
        case OPT_SIZE_TIERS:
            o->size_tiers = true;
            break;
        case OPT_TIER_PRICE: {
            /* KIND=USD[,KIND=USD...], USD per GB (1e9 bytes) and hour */
            const char *at = arg;
            while (*at) {
                const char *equals = strchr(at, '='), *comma = strchr(at, ',');
                if (!comma)
                    comma = at + strlen(at);
                if (!equals || equals > comma)
                    return cli_usage_error(c, "--tier-price takes KIND=USD_PER_GB_HOUR (KIND host, nvme or remote), "
                                              "comma-separated, not '%s'", arg);
                size_t name = (size_t)(equals - at);
                int kind = name == 4 && strncmp(at, "host", 4) == 0     ? TIER_HOST
                           : name == 4 && strncmp(at, "nvme", 4) == 0   ? TIER_NVME
                           : name == 6 && strncmp(at, "remote", 6) == 0 ? TIER_REMOTE
                                                                        : TIER_HBM;
                char number[64];
                size_t digits = (size_t)(comma - equals - 1);
                char *end;
                double usd = -1;
                if (digits > 0 && digits < sizeof number) {
                    memcpy(number, equals + 1, digits);
                    number[digits] = '\0';
                    errno = 0;
                    usd = strtod(number, &end);
                    if (errno || end == number || *end)
                        usd = -1;
                }
                if (kind == TIER_HBM || !(usd >= 0) || !isfinite(usd))
                    return cli_usage_error(c, "--tier-price takes KIND=USD_PER_GB_HOUR (KIND host, nvme or remote; a "
                                              "price from 0), not '%s'", arg);
                o->tier_price[kind] = usd;
                o->tier_price_set[kind] = true;
                at = *comma ? comma + 1 : comma;
            }
            break;
        }
        case OPT_SEED: {
            int64_t seed;
            if (!parse_count(arg, 0, INT64_MAX, &seed))
                return cli_usage_error(c, "--seed takes a whole number from 0, not '%s'", arg);
            o->seed = (uint64_t)seed;
            break;
        }
        case OPT_PRICE: {
            const char *equals = strrchr(arg, '=');
            char *end;
            errno = 0;
            double usd = equals ? strtod(equals + 1, &end) : 0;
            if (!equals || equals == arg || errno || end == equals + 1 || *end || !(usd > 0 && usd < 1e6))
                return cli_usage_error(c, "--price takes DEVICE=USD_PER_HOUR (e.g. hgx-h100=2.99), not '%s'", arg);
            if (o->price_count == CLI_MAX_PRICES)
                return cli_usage_error(c, "at most %d --price options", CLI_MAX_PRICES);
            o->prices[o->price_count++] = (struct price){arg, usd};
            break;
        }
        case OPT_WEIGHTS:
        case OPT_KV: {
            enum precision p;
            if (!precision_parse(arg, &p))
                return cli_usage_error(c, "--%s takes fp4, fp8, bf16, fp16 or fp32, not '%s'",
                                       ch == OPT_KV ? "kv" : "weights", arg);
            if (ch == OPT_KV) {
                o->kv = p;
                o->kv_set = true;
            } else {
                o->weights = p;
                o->weights_set = true;
            }
            break;
        }
        case OPT_CONTEXT:
            o->context_set = true;
            if (!parse_count(arg, 1, 1073741824, &o->context))
                return cli_usage_error(c, "--context takes a whole number of tokens from 1 to 1073741824, not '%s'", arg);
            break;
        case OPT_BATCH:
            o->batch_set = true;
            if (!parse_count(arg, 1, (int64_t)1 << 40, &o->batch))
                return cli_usage_error(c, "--batch takes a whole number of sequences from 1 to 2^40, not '%s'", arg);
            break;
        case OPT_FORMAT:
            o->format_set = true;
            if (c->options & OPTS_MERGE) {
                if (strcmp(arg, "csv") != 0 && strcmp(arg, "json") != 0)
                    return cli_usage_error(c, "--format takes csv or json, the formats merge joins, not '%s'", arg);
                o->format = strcmp(arg, "csv") == 0 ? FORMAT_CSV : FORMAT_JSON;
            } else if (strcmp(arg, "text") == 0)
                o->format = FORMAT_TEXT;
            else if (strcmp(arg, "json") == 0)
                o->format = FORMAT_JSON;
            else if (strcmp(arg, "yaml") == 0)
                o->format = FORMAT_YAML;
            else if (strcmp(arg, "dot") == 0 && (c->options & OPTS_DOT))
                o->format = FORMAT_DOT;
            else if (strcmp(arg, "csv") == 0 && (c->options & (OPTS_ROOFLINE | OPTS_COMPARE)))
                o->format = FORMAT_CSV;
            else if (strcmp(arg, "md") == 0 && (c->options & OPTS_COMPARE))
                o->format = FORMAT_MD;
            else
                return cli_usage_error(c, "--format takes %s, not '%s'",
                                       c->options & OPTS_DOT        ? "text, json, yaml or dot"
                                       : c->options & OPTS_ROOFLINE ? "text, json, yaml or csv"
                                       : c->options & OPTS_COMPARE  ? "text, json, yaml, csv or md"
                                                                    : "text, json or yaml",
                                       arg);
            break;
        case 'o':
            o->output = arg;
            break;
        case OPT_RESERVE:
            if (!parse_reserve(arg, o))
                return cli_usage_error(c, "--reserve takes a share of HBM under 100%% like '10%%', or a size like '8GB', not '%s'", arg);
            break;
        case OPT_TP:
        case OPT_PP:
            if (!parse_count(arg, 1, 1000000, ch == OPT_TP ? &o->tp : &o->pp))
                return cli_usage_error(c, "--%s takes a whole number from 1 to 1000000, not '%s'",
                                       ch == OPT_TP ? "tp" : "pp", arg);
            break;
        case OPT_SWEEP:
            if (!parse_sweep(arg, o))
                return cli_usage_error(c, "--sweep takes FROM:TO or FROM:TO:POINTS (whole numbers, FROM <= TO), not '%s'", arg);
            break;
        case OPT_PHASE:
            if (strcmp(arg, "decode") == 0 || strcmp(arg, "prefill") == 0)
                o->prefill = arg[0] == 'p';
            else
                return cli_usage_error(c, "--phase takes decode or prefill, not '%s'", arg);
            break;
        case OPT_PLOT:
            o->plot = arg;
            break;
        case OPT_REPORT:
            if (!document_path_ok(arg))
                return cli_usage_error(c, "--report writes FILE.md (with its plots beside it as SVG) "
                                          "or FILE.html, not '%s'", arg);
            o->report = arg;
            break;
        case OPT_ETA_COMPUTE:
        case OPT_ETA_MEMORY:
        case OPT_ETA_NETWORK: {
            double *target = ch == OPT_ETA_COMPUTE  ? &o->eta_compute
                             : ch == OPT_ETA_MEMORY ? &o->eta_memory
                                                    : &o->eta_network;
            if (!parse_fraction(arg, target))
                return cli_usage_error(c, "--%s takes a fraction of peak from 0.01 to 1, not '%s'",
                                       longopts[index].name, arg);
            break;
        }
        case OPT_ESTIMATE:
            o->estimate = true;
            break;
        case OPT_LOADS:
            o->loads = arg;
            break;
        case OPT_TRACE:
            o->trace = arg;
            break;
        case OPT_REDUNDANT:
            o->redundant_auto = strcmp(arg, "auto") == 0;
            if (!o->redundant_auto && !parse_count(arg, 0, 100000000, &o->redundant))
                return cli_usage_error(c, "--redundant takes a number of spare expert slots or auto, not '%s'", arg);
            break;
        case OPT_EP:
            if (!parse_count(arg, 1, 1000000, &o->ep))
                return cli_usage_error(c, "--ep takes a whole number from 1 to 1000000, not '%s'", arg);
            break;
        case OPT_OVERLAP:
            if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0)
                return cli_usage_error(c, "--overlap takes on or off, not '%s'", arg);
            o->overlap = strcmp(arg, "on") == 0;
            break;
        case OPT_TIME_LIMIT: {
            char *end;
            errno = 0;
            o->time_limit_s = strtod(arg, &end);
            if (errno || end == arg || *end || !(o->time_limit_s >= 0 && o->time_limit_s <= 86400))
                return cli_usage_error(c, "--time-limit takes seconds from 0 to 86400, not '%s'", arg);
            break;
        }
        case OPT_CHECK:
            o->check = true;
            break;
        case OPT_TIMINGS:
            o->timings = true;
            break;
        case OPT_EMIT: {
            enum emit_engine engine, inner;
            if (!emit_engine_parse(arg, &engine, &inner))
                return cli_usage_error(c, "--emit takes an engine (sglang, vllm, trtllm, dynamo, dynamo-sglang, "
                                          "dynamo-vllm, dynamo-trtllm) and a directory, not '%s'", arg);
            if (optind >= argc || argv[optind][0] == 0 || (argv[optind][0] == '-' && argv[optind][1] != 0))
                return cli_usage_error(c, "--emit %s needs a directory to write into", arg);
            o->emit_engine = (int)engine;
            o->emit_inner = (int)inner;
            o->emit_dir = argv[optind++];
            break;
        }
        case OPT_EXPERT_MAP: {
            if (!path_ends_with(arg, ".csv") && !path_ends_with(arg, ".json"))
                return cli_usage_error(c, "--expert-map takes a file ending in .csv or .json, not '%s'", arg);
            o->expert_map = arg;
            break;
        }
        case ':':
            return cli_usage_error(c, "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error(c, "unknown option '%s'", argv[optind - 1]);
        }
    }
    /* getopt_long has moved the operands after the options. */
    for (int i = optind; i < argc; i++) {
        if (positionals >= CLI_MAX_POSITIONALS)
            return cli_usage_error(c, "too many arguments (at most %d)", CLI_MAX_POSITIONALS);
        o->positional[positionals++] = argv[i];
    }
    o->positional_count = positionals;
    if (c->more && positionals < c->positionals)
        return cli_usage_error(c, "expected at least %d arguments, got %d", c->positionals, positionals);
    if (!c->more && positionals != c->positionals)
        return cli_usage_error(c, "expected %d argument%s, got %d", c->positionals,
                               c->positionals == 1 ? "" : "s", positionals);
    if (!o->format_set && o->output)
        o->format = format_of_path(c, o->output);
    if (c->options & OPTS_WORKLOAD) {
        bool prompt = o->isl || o->isl_dist_set, output = o->osl || o->osl_dist_set;
        if (o->isl && o->isl_dist_set)
            return cli_usage_error(c, "--isl and --isl-dist both give the prompt lengths: give one");
        if (o->osl && o->osl_dist_set)
            return cli_usage_error(c, "--osl and --osl-dist both give the output lengths: give one");
        if (o->lengths && (prompt || output))
            return cli_usage_error(c, "--lengths gives both lengths: drop --isl, --osl, --isl-dist and --osl-dist");
        if (o->osl_mean > 0 && !o->lengths)
            return cli_usage_error(c, "--osl-mean scales the outputs of --lengths FILE; without a file, --osl N or "
                                      "--osl-dist D gives the mean");
        if (o->osl_mean > 0 && o->max_tokens > 0 && (double)o->max_tokens < o->osl_mean)
            return cli_usage_error(c, "--osl-mean %g is above --max-tokens %lld: no output passes its max_tokens",
                                   o->osl_mean, (long long)o->max_tokens);
        bool workload = o->lengths || prompt || output;
        if (!o->lengths && workload && !(prompt && output)) {
            if (!o->isl_dist_set && !o->osl_dist_set)
                return cli_usage_error(c, "--isl and --osl go together: mean prompt and output tokens a request");
            return cli_usage_error(c, "give both lengths: --isl N or --isl-dist D, and --osl N or --osl-dist D");
        }
        if (!workload && strcmp(c->name, "serve") == 0)
            return cli_usage_error(c, "give the workload: --isl N --osl N (mean prompt and output tokens a request)");
        const char *needs_workload = o->ttft_s > 0                                        ? "--ttft-ms"
                                     : o->tpot_s > 0 && !(c->options & OPTS_COMPARE) ? "--tpot-ms"
                                     : o->prefix_hit > 0                             ? "--prefix-hit"
                                     : o->mtp                                        ? "--mtp"
                                     : o->mtp_accept > 0                             ? "--mtp-accept"
                                     : o->mode_set                                   ? "--mode"
                                     : o->chunk_tokens                               ? "--chunk"
                                     : o->max_tokens                                 ? "--max-tokens"
                                     : o->percentile > 0                             ? "--percentile"
                                     : o->arrivals != SERVE_CLOSED                   ? "--arrivals"
                                     : o->simulate > 0                               ? "--simulate"
                                     : o->reuse_set                                  ? "--reuse"
                                                                                     : NULL;
        if (!workload && needs_workload)
            return cli_usage_error(c, "%s describes a workload: give --isl N --osl N too", needs_workload);
        if ((o->size_tiers || o->tier_price_set[1] || o->tier_price_set[2] || o->tier_price_set[3]) &&
            !(o->reuse_set && o->reuse > 0))
            return cli_usage_error(c, "%s sizes the prefix cache's tiers: give --reuse F and --reuse-interval too",
                                   o->size_tiers ? "--size-tiers" : "--tier-price");
        if (o->reuse_interval && !o->reuse_set)
            return cli_usage_error(c, "--reuse-interval goes with --reuse F, the share of a prompt that repeats a prefix");
        if (o->reuse_set && o->reuse > 0 && !o->reuse_interval)
            return cli_usage_error(c, "--reuse %g needs --reuse-interval exp:MEAN_S or FILE.csv: how long after a "
                                      "prefix is written it is used again", o->reuse);
        if (o->mtp > 0 && o->mtp_accept <= 0)
            return cli_usage_error(c, "--mtp %lld needs --mtp-accept P, the probability a draft token is accepted "
                                      "(DeepSeek reports 0.8 to 0.9 for its one MTP module)",
                                   (long long)o->mtp);
        if (o->mtp_accept > 0 && o->mtp == 0)
            return cli_usage_error(c, "--mtp-accept goes with --mtp K, the draft tokens a step");
        if (workload && o->context_set)
            return cli_usage_error(c, "--context and --isl/--osl both set the KV a sequence holds: give one");
        if (workload && o->batch_set && strcmp(c->name, "roofline") != 0)
            return cli_usage_error(c, "with --isl/--osl the batch is searched: drop --batch");
        if (!o->mode_set)
            o->mode = SERVE_BEST;
        if (!o->chunk_tokens)
            o->chunk_tokens = SERVE_DEFAULT_CHUNK_TOKENS;
    }
    return -1;
}

void format_gb(double bytes, char *buffer, size_t size)
{
    snprintf(buffer, size, "%.3f", bytes / 1e9);
}

void format_ttft_ms(double ttft_s, char *buffer, size_t size)
{
    double ms = ttft_s * 1e3;
    if (ms < 1e7)
        snprintf(buffer, size, "%.1f", ms);
    else
        snprintf(buffer, size, "%.2e", ms);
}

void format_count(double value, char *buffer, size_t size)
{
    char digits[64];
    snprintf(digits, sizeof digits, "%.0f", value);
    const char *p = digits;
    size_t out = 0;
    if (*p == '-' && out + 1 < size)
        buffer[out++] = *p++;
    size_t len = strlen(p);
    for (size_t i = 0; i < len && out + 1 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0 && out + 2 < size)
            buffer[out++] = ',';
        buffer[out++] = p[i];
    }
    buffer[out] = '\0';
}

int cli_load_model(const char *path, struct model *out)
{
    struct diags d;
    diags_init(&d);
    enum model_status status = model_load(path, out, &d);
    diags_print(&d, stderr);
    diags_release(&d);
    return status == MODEL_OK ? EXIT_OK : status == MODEL_IO_ERROR ? EXIT_IO : EXIT_INVALID;
}

bool cli_efficiency(const struct options *o, const struct topology *t, const char *topology_path,
                    enum precision weights, struct efficiency *out, const struct calibration **row)
{
    *out = EFFICIENCY_BOUND;
    *row = NULL;
    if (o->estimate) {
        *row = topology_calibration(t, weights);
        if (!*row) {
            fprintf(stderr, "rackplan %s: %s has no calibrated <efficiency> for %s weights (nor one for any "
                            "precision); fit one with rackplan calibrate, or give --eta-*\n",
                    o->command->name, topology_path, precision_name(weights));
            return false;
        }
        *out = (*row)->efficiency;
    }
    if (o->eta_compute > 0)
        out->compute = o->eta_compute;
    if (o->eta_memory > 0)
        out->memory = o->eta_memory;
    if (o->eta_network > 0)
        out->scale_up = out->scale_out = o->eta_network;
    return true;
}

int cli_load_topology(const char *path, struct topology *out)
{
    struct diags d;
    diags_init(&d);
    enum topology_status status = topology_load(path, out, &d);
    diags_print(&d, stderr);
    diags_release(&d);
    return status == TOPOLOGY_OK ? EXIT_OK : status == TOPOLOGY_IO_ERROR ? EXIT_IO : EXIT_INVALID;
}

void cli_shard_range(const struct options *o, int64_t count, int64_t *first, int64_t *end)
{
    if (o->shard_count == 0) {
        *first = 0;
        *end = count;
        return;
    }
    /* rows (at most 100,000 batches or 1,008 compare rows) x 1e6 shards fit in 64 bits */
    *first = count * (o->shard_index - 1) / o->shard_count;
    *end = count * o->shard_index / o->shard_count;
}

int cli_check_cluster(const struct command *c, int64_t racks, const struct topology *t)
{
    double devices = (double)racks * (double)t->domain_devices;
    if (devices > CLI_MAX_DEVICES)
        return cli_usage_error(c, "--racks %lld makes %.0f devices of %s, more than %d",
                               (long long)racks, devices, t->name, CLI_MAX_DEVICES);
    return EXIT_OK;
}

int cli_resolve(struct options *o, const struct model *m, const struct topology *t)
{
    if (m && m->max_context > 0 && !o->context_set && o->context > m->max_context)
        o->context = m->max_context; /* the default context, capped at what the model takes */
    if (m && m->max_context > 0 && o->context > m->max_context)
    {
        char context[32], maximum[32];
        format_count((double)o->context, context, sizeof context);
        format_count((double)m->max_context, maximum, sizeof maximum);
        return cli_usage_error(o->command, "--context %s is longer than %s's maximum of %s tokens",
                               context, m->name, maximum);
    }
    if (t && o->racks == 0)
        o->racks = t->default_domains;
    if (t && cli_check_cluster(o->command, o->racks, t) != EXIT_OK)
        return EXIT_USAGE;
    if (m && !o->weights_set)
        o->weights = m->weights_precision;
    if (m)
        o->expert_weights = o->weights_set ? o->weights : m->expert_weights_precision;
    if (m && !o->kv_set)
        o->kv = m->kv_precision;
    return EXIT_OK;
}

int cli_prepare(const struct command *command, int argc, char **argv, struct options *o,
                struct model *m, struct topology *t)
{
    int status = cli_parse(command, argc, argv, o);
    if (status >= 0)
        return status;
    if ((status = cli_load_model(o->positional[0], m)) != EXIT_OK)
        return status;
    if ((status = cli_load_topology(o->positional[1], t)) != EXIT_OK)
        return status;
    if ((status = cli_resolve(o, m, t)) != EXIT_OK)
        return status;
    return -1;
}

void cli_workload(const struct options *o, struct workload *out)
{
    /* zeroed whole, padding too: the serving engine's memos compare workloads byte for byte */
    memset(out, 0, sizeof *out);
    out->batch = o->batch;
    out->context = o->context;
    out->weights = o->weights;
    out->expert_weights = o->expert_weights;
    out->kv = o->kv;
    out->reserve_fraction = o->reserve_fraction;
    out->reserve_bytes = o->reserve_bytes;
    out->tp = o->tp;
    out->pp = o->pp;
    out->mtp = o->mtp > 0;
}

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

bool cli_price_names(const struct price *p, const char *path, const struct topology *t)
{
    size_t length = (size_t)(strrchr(p->device, '=') - p->device);
    char stem[256];
    file_stem(path, stem, sizeof stem);
    return (strlen(stem) == length && strncasecmp(stem, p->device, length) == 0) ||
           (strlen(t->name) == length && strncasecmp(t->name, p->device, length) == 0);
}

double cli_price(const struct options *o, const char *path, const struct topology *t)
{
    double price = 0;
    for (int p = 0; p < o->price_count; p++)
        if (cli_price_names(&o->prices[p], path, t))
            price = o->prices[p].usd_per_hour;
    return price;
}

/* Points a side's family is cut into: 16 x 16 classes when both vary. */
#define CLI_FAMILY_POINTS 16

int cli_serve_workload(const struct options *o, struct serve_workload *out, struct length_mix *mix)
{
    *mix = (struct length_mix){0};
    /* zeroed whole, padding too: the serving engine's memos compare workloads byte for byte */
    memset(out, 0, sizeof *out);
    out->isl = o->isl;
    out->osl = o->osl;
    out->ttft_s = o->ttft_s;
    out->tpot_s = o->tpot_s;
    out->prefix_hit = o->prefix_hit;
    out->mtp = o->mtp;
    out->mtp_accept = o->mtp_accept;
    out->chunk_tokens = o->chunk_tokens;
    out->max_tokens = o->max_tokens;
    out->mode = (enum serve_mode)o->mode;
    out->rate = o->rate;
    out->percentile = o->percentile;
    out->arrivals = (enum serve_arrivals)o->arrivals;
    if (o->lengths) {
        struct diags d;
        diags_init(&d);
        enum lengths_status status = length_mix_read_csv(o->lengths, mix, &d);
        diags_print(&d, stderr);
        diags_release(&d);
        if (status != LENGTHS_OK)
            return status == LENGTHS_IO_ERROR ? EXIT_IO : EXIT_INVALID;
        if (o->osl_mean > 0) { /* the mean was checked when parsed: from 1 up, at most max_tokens */
            bool scaled = length_mix_scale_osl(mix, o->osl_mean, o->max_tokens, NULL);
            assert(scaled);
            (void)scaled;
        }
    } else if (o->isl_dist_set || o->osl_dist_set) {
        struct length_family isl = o->isl_dist, osl = o->osl_dist;
        if (!o->isl_dist_set)
            isl = (struct length_family){.kind = LENGTH_FIXED, .a = (double)o->isl};
        if (!o->osl_dist_set)
            osl = (struct length_family){.kind = LENGTH_FIXED, .a = (double)o->osl};
        length_mix_from_families(&isl, &osl, CLI_FAMILY_POINTS, mix);
    } else {
        return -1;
    }
    serve_workload_set_lengths(out, mix);
    return -1;
}

int cli_check_lengths(const struct command *c, const struct model *m, const struct serve_workload *w,
                      const struct length_mix *mix)
{
    bool mixed = mix->count > 0;
    int64_t longest_output = mixed ? length_mix_osl_quantile(mix, 1) : w->osl,
            longest_prompt = mixed ? length_mix_isl_quantile(mix, 1) : w->isl;
    if (w->max_tokens > 0 && longest_output > w->max_tokens)
        return cli_usage_error(c, "--max-tokens %lld is below the longest output, %lld tokens: a request stops at its "
                                  "max_tokens",
                               (long long)w->max_tokens, (long long)longest_output);
    if (m->max_context <= 0)
        return -1;
    if (w->max_tokens > 0 && longest_prompt + w->max_tokens > m->max_context)
        return cli_usage_error(c, "a prompt of %lld tokens plus --max-tokens %lld is longer than %s's maximum of %lld "
                                  "tokens (an engine refuses such a request)",
                               (long long)longest_prompt, (long long)w->max_tokens, m->name,
                               (long long)m->max_context);
    if (mix->count == 0) {
        if (w->isl + w->osl > m->max_context)
            return cli_usage_error(c, "--isl %lld plus --osl %lld is longer than %s's maximum of %lld tokens",
                                   (long long)w->isl, (long long)w->osl, m->name, (long long)m->max_context);
        return -1;
    }
    for (int64_t i = 0; i < mix->count; i++)
        if (mix->classes[i].isl + mix->classes[i].osl > m->max_context)
            return cli_usage_error(c, "requests of %lld prompt and %lld output tokens are longer than %s's maximum of "
                                      "%lld tokens",
                                   (long long)mix->classes[i].isl, (long long)mix->classes[i].osl, m->name,
                                   (long long)m->max_context);
    return -1;
}

int cli_serve_workload_checked(const struct command *c, const struct options *o, const struct model *m,
                               struct serve_workload *out, struct cli_lengths *lengths)
{
    struct length_mix mix;
    int status = cli_serve_workload(o, out, &mix);
    if (status >= 0)
        return status;
    status = out->isl > 0 ? cli_check_lengths(c, m, out, &mix) : -1;
    if (lengths) {
        *lengths = (struct cli_lengths){.classes = mix.count};
        if (mix.count > 0)
            snprintf(lengths->description, sizeof lengths->description, "%s", mix.description);
    }
    length_mix_release(&mix);
    return status;
}

void cli_text_serve_workload(FILE *out, const struct model *m, const struct serve_workload *w,
                             const struct workload *precisions, const struct length_mix *mix)
{
    char isl[32], osl[32];
    format_count((double)w->isl, isl, sizeof isl);
    format_count((double)w->osl, osl, sizeof osl);
    fprintf(out, "  workload: %s prompt and %s output tokens a request", isl, osl);
    if (w->prefix_hit > 0)
        fprintf(out, ", %.0f%% of the prompt from a prefix cache", w->prefix_hit * 100);
    cli_text_mtp(out, m, w);
    fprintf(out, "\n  targets: TTFT ");
    if (w->ttft_s > 0)
        fprintf(out, "<= %.4g ms", w->ttft_s * 1e3);
    else
        fprintf(out, "none");
    fprintf(out, ", TPOT ");
    if (w->tpot_s > 0)
        fprintf(out, "<= %.4g ms", w->tpot_s * 1e3);
    else
        fprintf(out, "none");
    fprintf(out, "; mode %s; weights %s, KV %s\n", serve_mode_name(w->mode), precision_name(precisions->weights),
            precision_name(precisions->kv));
    bool mixed = mix && mix->count > 0;
    cli_text_lengths(out, w, mixed ? mix->description : NULL, mixed ? mix->count : 0);
}

void cli_text_lengths(FILE *out, const struct serve_workload *w, const char *description, int64_t classes)
{
    if (description && classes > 0)
        fprintf(out, "  lengths: %s (mean %lld prompt and %lld output tokens, %lld class%s)\n", description,
                (long long)w->isl, (long long)w->osl, (long long)classes, classes == 1 ? "" : "es");
    if (w->max_tokens > 0) {
        char most[32];
        format_count((double)w->max_tokens, most, sizeof most);
        fprintf(out, "  admission reserves a request's KV for its prompt and max_tokens %s (--max-tokens: TensorRT-LLM's\n"
                     "    GUARANTEED_NO_EVICT), not its own output\n", most);
    }
    if (w->percentile > 0 && w->percentile != 50)
        fprintf(out, "  targets bound the %gth percentile of TTFT and TPOT\n", w->percentile);
    if (serve_workload_in_cohorts(w) && w->mode != SERVE_DISAGGREGATED)
        fprintf(out, "  requests alike and started together (a closed loop): an aggregated instance prefills them in\n"
                     "    cohorts that fill its chunk budget, but on ranks that take them in turn (a dense model's\n"
                     "    data parallelism); lengths that vary, or --arrivals poisson, spread them\n");
    if (w->arrivals == SERVE_CONSTANT)
        fprintf(out, "  requests arrive evenly spaced (--arrivals constant)\n");
    else if (w->arrivals == SERVE_POISSON)
        fprintf(out, "  requests arrive at random, a Poisson process at the served rate (--arrivals poisson)\n");
}

void cli_text_mtp(FILE *out, const struct model *m, const struct serve_workload *w)
{
    if (w->mtp <= 0)
        return;
    fprintf(out, ", MTP %lld draft%s accepted at %.2f (%.3f tokens a step)", (long long)w->mtp,
            w->mtp == 1 ? "" : "s", w->mtp_accept, serve_tokens_per_step(w));
    if (m->mtp_layers == 0) {
        fprintf(out, "; the model ships no MTP module, so the drafts cost nothing here");
        return;
    }
    struct model_params p;
    model_params(m, &p);
    char params[32];
    format_count(p.mtp, params, sizeof params);
    fprintf(out, ";\n    its MTP module%s (%s parameters) held on the last stage's devices, run for each draft",
            m->mtp_layers == 1 ? "" : "s", params);
}

void cli_json_serve_workload(struct json *j, const struct serve_workload *w)
{
    json_key(j, "isl");
    json_int(j, w->isl);
    json_key(j, "osl");
    json_int(j, w->osl);
    json_key(j, "ttft_target_s");
    json_positive_or_null(j, w->ttft_s);
    json_key(j, "tpot_target_s");
    json_positive_or_null(j, w->tpot_s);
    json_key(j, "prefix_hit");
    json_number(j, w->prefix_hit);
    json_key(j, "mtp");
    json_int(j, w->mtp);
    json_key(j, "mtp_accept");
    json_number(j, w->mtp > 0 ? w->mtp_accept : 0);
    json_key(j, "chunk_tokens");
    json_int(j, w->chunk_tokens);
    json_key(j, "max_tokens");
    if (w->max_tokens > 0)
        json_int(j, w->max_tokens);
    else
        json_null(j);
    json_key(j, "percentile");
    json_number(j, w->percentile > 0 ? w->percentile : 50);
    json_key(j, "arrivals");
    json_string(j, serve_arrivals_name(w->arrivals));
}

void cli_json_lengths(struct json *j, const char *description)
{
    json_key(j, "lengths");
    if (description && *description)
        json_string(j, description);
    else
        json_null(j);
}

void cli_json_tail(struct json *j, const struct serve_tail *t)
{
    static const char *const ttft[SERVE_PERCENTILES] = {"ttft_p50_s", "ttft_p90_s", "ttft_p99_s"};
    static const char *const tpot[SERVE_PERCENTILES] = {"tpot_p50_s", "tpot_p90_s", "tpot_p99_s"};
    for (int i = 0; i < SERVE_PERCENTILES; i++) {
        json_key(j, ttft[i]);
        json_number(j, t->ttft_s[i]);
    }
    for (int i = 0; i < SERVE_PERCENTILES; i++) {
        json_key(j, tpot[i]);
        json_number(j, t->tpot_s[i]);
    }
    json_key(j, "ttft_mean_s");
    json_number(j, t->ttft_mean_s);
    json_key(j, "tpot_mean_s");
    json_number(j, t->tpot_mean_s);
    json_key(j, "prefill_wait_s");
    json_number(j, t->prefill_wait_s);
    json_key(j, "sequences_mean");
    json_number(j, t->sequences_mean);
    json_key(j, "sequences_sd");
    json_number(j, t->sequences_sd);
    json_key(j, "sequences_rate_elasticity");
    json_number(j, t->sequences_rate_elasticity);
    json_key(j, "slot_wait_probability");
    json_number(j, t->slot_wait_probability);
}

bool cli_tree_format(enum output_format format, enum json_syntax *syntax)
{
    *syntax = format == FORMAT_YAML ? SYNTAX_YAML : SYNTAX_JSON;
    return format == FORMAT_JSON || format == FORMAT_YAML;
}

void cli_json_header(struct json *j, const struct model *m, const struct topology *t,
                     int64_t racks, int64_t devices)
{
    json_key(j, "model");
    json_string(j, m->name);
    json_key(j, "topology");
    json_string(j, t->name);
    json_key(j, "announced");
    json_bool(j, t->announced);
    json_key(j, "racks");
    json_int(j, racks);
    json_key(j, "devices");
    json_int(j, devices);
}

void cli_json_efficiency_fields(struct json *j, const struct efficiency *e)
{
    json_key(j, "compute");
    json_number(j, e->compute);
    json_key(j, "memory");
    json_number(j, e->memory);
    json_key(j, "scale_up");
    json_number(j, e->scale_up);
    json_key(j, "scale_out");
    json_number(j, e->scale_out);
    json_key(j, "experts");
    json_number(j, e->experts);
    json_key(j, "step_overhead_s");
    json_number(j, e->step_overhead_s);
    json_key(j, "latency");
    json_number(j, e->latency);
    json_key(j, "sequence_s");
    json_number(j, e->sequence_s);
}

void cli_json_efficiency(struct json *j, const struct efficiency *e, const struct calibration *row)
{
    json_begin_object(j);
    cli_json_efficiency_fields(j, e);
    if (row) {
        json_key(j, "fitted_to");
        json_string(j, row->fitted_to);
        json_key(j, "pooled");
        json_bool(j, row->pooled);
    }
    json_end_object(j);
}

void cli_text_efficiency(FILE *out, const struct efficiency *e, const struct calibration *row)
{
    fprintf(out, "  estimate: compute %.3g, memory %.3g, scale-up %.3g, scale-out %.3g of peak, routed experts "
                 "%.3g of those, %.3g x the latency floors",
            e->compute, e->memory, e->scale_up, e->scale_out, e->experts, e->latency);
    if (e->sequence_s > 0)
        fprintf(out, ", %.3g us of host time a sequence", e->sequence_s * 1e6);
    if (e->step_overhead_s > 0)
        fprintf(out, ", %.3g ms a step", e->step_overhead_s * 1e3);
    const char *whose = row && row->pooled
                            ? "no measurements of this family at these weights: the prior, every group's geometric mean of"
                            : "fitted to";
    /* the ids whole when they are few; a long list (the prior names every measurement) by its
     * count, the topology file listing them */
    if (row && row->fitted_count <= CLI_FITTED_IDS_SHOWN && strlen(row->fitted_to) < sizeof row->fitted_to - 1)
        fprintf(out, "; %s %s", whose, row->fitted_to);
    else if (row)
        fprintf(out, "; %s %d measurements (their ids: the topology's <efficiency fitted_to>)", whose,
                row->fitted_count);
    fprintf(out, "\n");
}

void cli_json_parallel(struct json *j, const struct layout *l)
{
    json_begin_object(j);
    json_key(j, "tp");
    json_int(j, l->tp);
    json_key(j, "ep");
    json_int(j, l->ep);
    json_key(j, "pp");
    json_int(j, l->pp);
    json_key(j, "dp");
    json_int(j, l->dp);
    json_end_object(j);
}

void cli_json_precision(struct json *j, const struct workload *w)
{
    json_key(j, "precision");
    json_begin_object(j);
    json_key(j, "weights");
    json_string(j, precision_name(w->weights));
    json_key(j, "expert_weights");
    json_string(j, precision_name(w->expert_weights));
    json_key(j, "kv");
    json_string(j, precision_name(w->kv));
    json_end_object(j);
}

void cli_model_path(const struct model *m, const char *given, char *out, size_t size)
{
    const char *hf = strstr(m->source, "huggingface.co/");
    if (hf) {
        hf += strlen("huggingface.co/");
        const char *slash = strchr(hf, '/');
        const char *end = slash ? strchr(slash + 1, '/') : NULL;
        size_t n = end ? (size_t)(end - hf) : strlen(hf);
        if (slash && n > 0 && n < size) {
            memcpy(out, hf, n);
            out[n] = 0;
            return;
        }
    }
    snprintf(out, size, "%s", given);
}

int cli_emit_build(const struct options *o, const struct emit_plan *p, struct emit_output *out)
{
    char why[768];
    enum emit_status s = emit_build((enum emit_engine)o->emit_engine, (enum emit_engine)o->emit_inner, p, out, why,
                                    sizeof why);
    if (s == EMIT_OK)
        return -1;
    if (s == EMIT_REFUSED) {
        fprintf(stderr, "rackplan %s: --emit refused: %s\n", o->command->name, why);
        return EXIT_USAGE;
    }
    fprintf(stderr, "rackplan %s: --emit: out of memory writing YAML\n", o->command->name);
    return EXIT_IO;
}

static void write_text(FILE *out, const void *data)
{
    fputs(data, out);
}

void cli_emit_path(const struct options *o, const char *name, char *out, size_t size)
{
    size_t n = strlen(o->emit_dir);
    snprintf(out, size, "%s%s%s", o->emit_dir, n && o->emit_dir[n - 1] == '/' ? "" : "/", name);
}

bool cli_emit_write(const struct options *o, const struct emit_output *out, struct sink_batch *b)
{
    struct stat st;
    if (stat(o->emit_dir, &st) != 0 && mkdir(o->emit_dir, 0777) != 0) {
        fprintf(stderr, "rackplan %s: unable to make '%s': %s\n", o->command->name, o->emit_dir, strerror(errno));
        b->failed = true;
        return false;
    }
    for (int i = 0; i < out->count; i++) {
        char path[4096];
        cli_emit_path(o, out->files[i].name, path, sizeof path);
        if (!sink_batch_write(b, path, write_text, out->files[i].text))
            return false;
    }
    return true;
}

void cli_emit_report(const struct options *o, const struct emit_output *out)
{
    for (int i = 0; i < out->count; i++) {
        char path[4096];
        cli_emit_path(o, out->files[i].name, path, sizeof path);
        if (path_ends_with(path, ".sh"))
            chmod(path, 0755);
        fprintf(stderr, "rackplan %s: wrote %s\n", o->command->name, path);
    }
}

static void json_emitted_file(struct json *j, const char *path, const char *engine, const char *role)
{
    json_begin_object(j);
    json_key(j, "path");
    json_string(j, path);
    json_key(j, "engine");
    json_string(j, engine);
    json_key(j, "role");
    json_string(j, role);
    json_end_object(j);
}

void cli_json_emitted(struct json *j, const struct options *o, const struct emit_output *out,
                      const char *expert_map)
{
    json_key(j, "emitted");
    json_begin_array(j);
    for (int i = 0; out && i < out->count; i++) {
        char path[4096];
        cli_emit_path(o, out->files[i].name, path, sizeof path);
        json_emitted_file(j, path, out->files[i].engine, out->files[i].role);
    }
    if (out && expert_map)
        json_emitted_file(j, expert_map, "sglang", "expert-map");
    json_end_array(j);
}
