/* cli.h: what every subcommand shares: exit codes, option parsing, number formats, and the
 * output sink (stdout, or a file written to a temporary name and renamed into place).
 *
 * Usage errors print one line naming the problem and a pointer to --help, and give
 * EXIT_USAGE. Help that was asked for goes to stdout with EXIT_OK.
 */
#ifndef RACKPLAN_CLI_H
#define RACKPLAN_CLI_H

#include "diag.h"
#include "lengths.h"
#include "json.h"
#include "precision.h"
#include "sink.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum exit_code {
    EXIT_OK = 0,       /* done; for fit: it fits */
    EXIT_NO_FIT = 1,   /* does not fit, or no feasible plan */
    EXIT_USAGE = 2,    /* bad command line */
    EXIT_INVALID = 3,  /* invalid input file */
    /* 4 is not used: a GLPK failure leaves the plan of the greedy search and the DP, whose
     * solver status says "failed"; 4 was "solver failure" once, so 5 keeps its number. */
    EXIT_IO = 5,       /* I/O or internal error */
};

#define CLI_DEFAULT_CONTEXT 8192
/* As in schemas/topology.xsd's fraction: under 1% of peak is no working system, and times
 * would grow without bound. */
#define CLI_MIN_EFFICIENCY 0.01
#define CLI_DEFAULT_BATCH 1
/* A cap, not a budget: the slowest shipped case (DeepSeek-V3 on 18 H800 nodes with a trace) takes
 * 8 s here and about 20 s under AddressSanitizer, so the searches' work limits end it first. */
#define CLI_DEFAULT_TIME_LIMIT_S 60

enum output_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_YAML, FORMAT_DOT, FORMAT_CSV, FORMAT_MD };

/* Which options a command takes. */
enum {
    OPTS_FORMAT = 1 << 0,    /* --format, -o/--output */
    OPTS_PRECISION = 1 << 1, /* --weights, --kv */
    OPTS_CONTEXT = 1 << 2,   /* --context */
    OPTS_RACKS = 1 << 3,     /* --racks */
    OPTS_BATCH = 1 << 4,     /* --batch */
    OPTS_FIT = 1 << 5,       /* --reserve, --tp, --pp */
    OPTS_DOT = 1 << 6,       /* --format dot */
    OPTS_ROOFLINE = 1 << 7,  /* --sweep, --phase, --plot, --eta-*, --format csv */
    OPTS_PLAN = 1 << 8,      /* --loads, --redundant, --ep, --time-limit, --expert-map */
    OPTS_COMPARE = 1 << 9,   /* --racks N[,N...], --tpot-ms, --price, --format csv|md */
    OPTS_MERGE = 1 << 10,    /* --format csv only */
    OPTS_WORKLOAD = 1 << 11, /* --isl, --osl, --prefix-hit, --mtp, --mtp-accept, --chunk */
    OPTS_TARGETS = 1 << 13,  /* with a workload: --ttft-ms, --tpot-ms; --mode where a mode is chosen
                              * (OPTS_SERVE, OPTS_COMPARE) */
    OPTS_SERVE = 1 << 12,    /* --rate, --prefill-topology, --price, --plot, --report, --estimate */
    OPTS_MTP_HELD = 1 << 14, /* --mtp K without a workload: the MTP modules held, nothing timed */
    OPTS_CALIBRATE = 1 << 15, /* --check */
    OPTS_EMIT = 1 << 16,      /* --emit ENGINE DIR (serve, plan) */
};

#define CLI_MAX_POSITIONALS 64
#define CLI_MAX_RACKS_LIST 16
#define CLI_MAX_PRICES 16
#define CLI_MAX_SHARDS 1000000
/* --estimate's header lists the measurements an efficiency row was fitted to when there are at
 * most this many, and counts them otherwise. */
#define CLI_FITTED_IDS_SHOWN 12
#define CLI_MAX_DEVICES 10000000 /* the interconnect graph of ten million devices still builds */

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const char *usage; /* after "usage: " */
    const char *help;  /* the rest of --help */
    unsigned options;
    int positionals;   /* exactly this many */
    bool more;         /* or more: at least `positionals` */
};

struct price {
    const char *device; /* a topology's file name without .xml, or its name; any case */
    double usd_per_hour;
};

struct options {
    const struct command *command;
    const char *positional[CLI_MAX_POSITIONALS];
    int positional_count;
    int64_t racks; /* 0 = the topology's default */
    int64_t racks_list[CLI_MAX_RACKS_LIST]; /* compare: each cluster size; racks_count 0: default */
    int racks_count;
    int64_t domain_sizes[CLI_MAX_RACKS_LIST]; /* compare: scale-up domain sizes; count 0: none */
    int domain_size_count;
    int64_t devices; /* compare --domain-sizes: devices in every row; 0: the sizes' lcm */
    double tpot_s; /* compare: time per output token target; 0: none */
    int64_t shard_index, shard_count; /* --shard I/N (1-based); count 0: the whole run */
    struct price prices[CLI_MAX_PRICES];
    int price_count;
    bool weights_set;
    enum precision weights;
    enum precision expert_weights; /* set by cli_resolve */
    bool kv_set;
    enum precision kv;
    int64_t context;
    bool context_set; /* given on the command line; else the default, capped at the model's maximum */
    int64_t batch;
    enum output_format format; /* without --format: from -o's extension (.json, .yaml, .yml; .csv, .md where written) */
    bool format_set;
    const char *output; /* NULL = stdout */
    double reserve_fraction;
    double reserve_bytes; /* < 0: use the fraction */
    int64_t tp, pp;       /* 0 = choose */
    int64_t sweep_from, sweep_to, sweep_points; /* sweep_points 0: no sweep */
    bool prefill;
    const char *plot; /* SVG path, or NULL */
    double eta_compute, eta_memory, eta_network; /* 0: not given */
    bool estimate;          /* --estimate: the topology's calibrated efficiency */
    const char *loads;      /* expert-load CSV, or NULL: uniform */
    const char *trace;      /* routing trace (.csv or .csv.gz), or NULL */
    int64_t redundant;      /* spare expert slots in total */
    bool redundant_auto;    /* as many as free HBM holds at the batch */
    int64_t ep;             /* 0 = choose */
    double time_limit_s;
    bool overlap;           /* MoE layer times: communication under compute (two micro-batches) */
    const char *expert_map; /* .csv or .json, or NULL */
    bool timings;           /* plan: the solver's seconds in JSON and YAML too */
    bool check;             /* calibrate: predict at the shipped rows, no fit */
    const char *report;     /* .md or .html, or NULL */
    bool batch_set;
    /* the workload (OPTS_WORKLOAD); isl 0: none given */
    int64_t isl, osl;
    double ttft_s;
    double prefix_hit;
    int64_t mtp;
    double mtp_accept; /* 0: not given */
    int64_t chunk_tokens;
    int64_t max_tokens; /* the requests' max_tokens the engine reserves KV for; 0: none given */
    int mode;          /* enum serve_mode */
    bool mode_set;
    double rate;       /* requests/s; 0: none */
    const char *prefill_topology;
    /* the requests' lengths (OPTS_WORKLOAD): a CSV, or a family a side beside --isl/--osl */
    const char *lengths;
    double osl_mean;   /* --osl-mean: the mix's outputs scaled to this mean; 0: as the file has them */
    struct length_family isl_dist, osl_dist;
    bool isl_dist_set, osl_dist_set;
    int arrivals;      /* enum serve_arrivals */
    double percentile; /* OPTS_TARGETS: the percentile the targets bound; 0: 50 */
    int64_t simulate;  /* serve: requests to simulate; 0: none */
    uint64_t seed;     /* serve --simulate */
    double reuse;      /* serve --reuse: share of a prompt that repeats a prefix */
    bool reuse_set;
    const char *reuse_interval; /* serve --reuse-interval: exp:MEAN_S or a CSV; NULL: not given */
    bool size_tiers;            /* serve --size-tiers */
    double tier_price[4];       /* serve --tier-price, by enum tier_kind: $ per GB-hour */
    bool tier_price_set[4];
    /* --emit ENGINE DIR: launch files for a serving engine (emit.h); emit_dir NULL: none */
    const char *emit_dir;
    int emit_engine, emit_inner; /* enum emit_engine */
};

/* Parses argv for `command`. Returns -1 to go on, or an exit code to return at once (help
 * printed: EXIT_OK; usage error printed: EXIT_USAGE). */
int cli_parse(const struct command *command, int argc, char **argv, struct options *out);

/* Prints "rackplan CMD: message" and the --help pointer to stderr; returns EXIT_USAGE. */
int cli_usage_error(const struct command *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Decimal gigabytes with 3 decimals ("26.123"). */
void format_gb(double bytes, char *buffer, size_t size);
/* An integer with thousands separators ("1,234,567"). */
void format_count(double value, char *buffer, size_t size);
/* A time to first token in ms, "152.6"; past 10^7 ms (a queue that does not drain, where it runs
 * to 10^16 and more) "9.51e+16". */
void format_ttft_ms(double ttft_s, char *buffer, size_t size);


struct model;
struct topology;

struct efficiency;
struct calibration;

/* The efficiency a run uses: the bound, or with --estimate the topology's calibrated row for
 * `weights`, and --eta-* over either. Writes the row used to *row (NULL: none). False, after
 * printing why, when --estimate finds no row. */
bool cli_efficiency(const struct options *o, const struct topology *t, const char *topology_path,
                    enum precision weights, struct efficiency *out, const struct calibration **row);

/* Reads the model and topology named on the command line, printing diagnostics. Return EXIT_OK
 * or the exit code to give. */
int cli_load_model(const char *path, struct model *out);
int cli_load_topology(const char *path, struct topology *out);

/* The start of every command that takes MODEL TOPOLOGY: parses argv, reads both files and
 * resolves the options against them. Returns -1 to go on, or the exit code to return. */
int cli_prepare(const struct command *command, int argc, char **argv, struct options *o,
                struct model *m, struct topology *t);

struct workload;
/* The workload the options describe (batch, context, precisions, reserve, pinned TP/PP). */
void cli_workload(const struct options *o, struct workload *out);

/* Whether --price `p` names the topology read from `path` (its file name without .xml, or its
 * name; any case). */
bool cli_price_names(const struct price *p, const char *path, const struct topology *t);
/* The --price given for that topology (the last that names it); 0: none. */
double cli_price(const struct options *o, const char *path, const struct topology *t);

struct serve_workload;
/* The serving workload the options describe (--isl, --osl, --lengths, --isl-dist, --osl-dist and
 * the rest), the length mix into *mix (count 0 with fixed --isl/--osl; the caller releases it).
 * Returns -1 to go on, or an exit code after printing the file's diagnostics (--lengths). */
int cli_serve_workload(const struct options *o, struct serve_workload *out, struct length_mix *mix);
struct model;
/* A usage error when a request of the workload (every class of a mix) is longer than the
 * model's maximum context; -1 otherwise. */
int cli_check_lengths(const struct command *c, const struct model *m, const struct serve_workload *w,
                      const struct length_mix *mix);
/* What a command that keeps the workload's summary of a mix, not the mix, says of it: the mix's
 * description (truncated to fit) and its classes; classes 0 with fixed --isl/--osl. */
struct cli_lengths {
    char description[1024];
    int64_t classes;
};
/* cli_serve_workload and, with a workload, cli_check_lengths, for a command that keeps the
 * workload's summary of the mix and not the mix (and, when `lengths` is not NULL, what to say of
 * the mix): -1 to go on, or an exit code. */
int cli_serve_workload_checked(const struct command *c, const struct options *o, const struct model *m,
                               struct serve_workload *out, struct cli_lengths *lengths);
/* "lengths: DESCRIPTION (mean I prompt and O output tokens, N classes)" when the workload has a mix
 * (description not NULL, classes > 0), then max_tokens, the percentile, the cohorts and the
 * arrivals when not the defaults; nothing more otherwise. */
void cli_text_lengths(FILE *out, const struct serve_workload *w, const char *description, int64_t classes);
struct json;
/* The key "lengths": the mix's description, or null without one (NULL or ""). */
void cli_json_lengths(struct json *j, const char *description);
/* The lines `serve` and `price` open with after the title: "workload: I prompt and O output tokens
 * a request" (the prefix hit and the drafts), "targets: TTFT ..., TPOT ...; mode; weights, KV",
 * and cli_text_lengths's. */
void cli_text_serve_workload(FILE *out, const struct model *m, const struct serve_workload *w,
                             const struct workload *precisions, const struct length_mix *mix);
struct serve_tail;
/* ttft_p50_s .. tpot_p99_s, the means and the mean prefill wait, into the open object. */
void cli_json_tail(struct json *j, const struct serve_tail *t);
/* The workload's keys (isl, osl, targets, prefix hit, MTP), into the open object. */
void cli_json_serve_workload(struct json *j, const struct serve_workload *w);

/* The text of a workload's drafts, to follow its description on the same line: nothing
 * without --mtp; else the drafts, their acceptance and tokens a step, and what the drafts cost:
 * the model's MTP modules, or nothing when it ships none. */
void cli_text_mtp(FILE *out, const struct model *m, const struct serve_workload *w);

/* Whether `format` writes the JSON tree (json or yaml), and in which syntax. */
bool cli_tree_format(enum output_format format, enum json_syntax *syntax);

/* The keys every MODEL TOPOLOGY report opens with: model, topology, announced, racks, devices. */
void cli_json_header(struct json *j, const struct model *m, const struct topology *t,
                     int64_t racks, int64_t devices);
struct layout;
/* An object {tp, ep, pp, dp} of a layout (the value of "parallel" or "layout"). */
void cli_json_parallel(struct json *j, const struct layout *l);
/* The efficiency's keys, into the open object. */
void cli_json_efficiency_fields(struct json *j, const struct efficiency *e);
/* The efficiency as an object, with the calibrated row's fitted_to and pooled when there is one. */
void cli_json_efficiency(struct json *j, const struct efficiency *e, const struct calibration *row);
/* "  estimate: compute 0.41, memory 0.62, ... of peak, 2.1 ms a step; fitted to ..." */
void cli_text_efficiency(FILE *out, const struct efficiency *e, const struct calibration *row);
/* "precision": {weights, expert_weights, kv} of a workload. */
void cli_json_precision(struct json *j, const struct workload *w);

/* A usage error when `racks` domains of `t` make more than 10,000,000 devices. */
/* The rows [*first, *end) of `count` that --shard I/N selects: the I-th of N equal parts (all
 * of them without --shard). */
void cli_shard_range(const struct options *o, int64_t count, int64_t *first, int64_t *end);

int cli_check_cluster(const struct command *c, int64_t racks, const struct topology *t);

/* Checks --context against the model's maximum and --racks; fills the precisions the model
 * runs at (the model's own unless overridden). Returns EXIT_OK or a usage error. */
int cli_resolve(struct options *o, const struct model *m, const struct topology *t);

struct emit_plan;
struct emit_output;
/* The model as serving engines name it: the Hugging Face id of its spec's source
 * (huggingface.co/ORG/NAME/...), else the path given on the command line. */
void cli_model_path(const struct model *m, const char *given, char *out, size_t size);
/* --emit: builds o->emit_engine's files for `p` into *out. Returns -1 to go on, or, after
 * printing why (a refusal names the engine's reason), EXIT_USAGE (refused) or EXIT_IO. */
int cli_emit_build(const struct options *o, const struct emit_plan *p, struct emit_output *out);
/* DIR/NAME for the --emit directory DIR (one slash between them) into out. */
void cli_emit_path(const struct options *o, const char *name, char *out, size_t size);
/* Adds every file of `out` to the run's outputs, as DIR/NAME (DIR made when missing). */
bool cli_emit_write(const struct options *o, const struct emit_output *out, struct sink_batch *b);
/* After the outputs were renamed into place: makes the scripts executable and prints on stderr
 * which files were written. */
void cli_emit_report(const struct options *o, const struct emit_output *out);
/* --emit in the output document: key "emitted", an array of {path, engine, role} for each file of
 * `out` (DIR/NAME, as written) and, when not NULL, the expert map at `expert_map` (engine sglang,
 * role expert-map); `out` NULL (nothing to write) gives an empty array. */
void cli_json_emitted(struct json *j, const struct options *o, const struct emit_output *out,
                      const char *expert_map);

#endif
