/* main.c: rackplan's entry point and its table of subcommands. */
#include "cli.h"
#include "commands.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

#ifndef RACKPLAN_VERSION
#define RACKPLAN_VERSION "unknown"
#endif

const struct command command_model = {
    .name = "model",
    .run = cmd_model,
    .summary = "a model's parameters, weight bytes, KV bytes and FLOPs per token",
    .usage = "rackplan model FILE [--weights PREC] [--kv PREC] [--context N] [--format text|json] [-o FILE]",
    .help = "Reads a model spec (YAML, schemas/model.schema.yaml) or a Hugging Face config.json\n"
            "and prints what follows from it: total and active parameters, weight bytes at each\n"
            "precision, KV-cache bytes per token and per sequence, FLOPs per token.\n",
    .options = OPTS_FORMAT | OPTS_PRECISION | OPTS_CONTEXT,
    .positionals = 1,
};

const struct command command_topo = {
    .name = "topo",
    .run = cmd_topo,
    .summary = "a topology's devices, memory, compute and network",
    .usage = "rackplan topo FILE [--racks N] [--format text|json|dot] [-o FILE]",
    .help = "Reads a topology (XML, validated against schemas/topology.xsd) and prints its\n"
            "inventory: devices, scale-up domains, HBM, peak FLOP/s, scale-up and scale-out\n"
            "bandwidth per device (bytes/s per direction); the memory tiers, HBM then the\n"
            "<memory-tier> elements below it (host memory, local NVMe, remote storage), each\n"
            "with its capacity per device and in the cluster, read and write bandwidth per\n"
            "device and drain time (capacity / read bandwidth); then the interconnect graph:\n"
            "the domains it finds, bandwidth and hops per class of device pair, what a device\n"
            "can push in an all-to-all inside its domain and across the cluster, bisection\n"
            "and diameter. --format dot writes Graphviz (large systems one node per domain).\n",
    .options = OPTS_FORMAT | OPTS_RACKS | OPTS_DOT,
    .positionals = 1,
};

const struct command command_fit = {
    .name = "fit",
    .run = cmd_fit,
    .summary = "does a model fit a cluster: memory per device, max batch, min devices",
    .usage = "rackplan fit MODEL TOPOLOGY [--racks N] [--weights PREC] [--kv PREC] [--context N]\n"
             "                    [--batch N] [--reserve R] [--tp N] [--pp N] [--mtp K] [--format text|json] [-o FILE]",
    .help = "Per device: weights under the parallel layout it assumes (printed), the KV cache (and the\n"
            "fixed recurrent state of linear-attention and Mamba layers) of the batch at the context,\n"
            "activation workspace, runtime reserve and what is left. Also the largest batch that fits\n"
            "at that context, and the fewest devices (and racks) that hold the weights and the batch's\n"
            "KV. --mtp K (K >= 1 draft tokens) holds the model's MTP modules on the last stage, as\n"
            "speculative decoding does. Exit 0 when it fits, 1 when it does not.\n",
    .options = OPTS_FORMAT | OPTS_PRECISION | OPTS_CONTEXT | OPTS_RACKS | OPTS_BATCH | OPTS_FIT | OPTS_MTP_HELD,
    .positionals = 2,
};

const struct command command_roofline = {
    .name = "roofline",
    .run = cmd_roofline,
    .summary = "time per token against batch, every term of the roofline",
    .usage = "rackplan roofline MODEL TOPOLOGY [--racks N] [--context N] [--batch N | --sweep A:B[:N]]\n"
             "                         [--phase decode|prefill] [--weights PREC] [--kv PREC] [--tp N] [--pp N]\n"
             "                         [--eta-compute X] [--eta-memory X] [--eta-network X]\n"
             "                         [--isl N --osl N [--prefix-hit F] [--mtp K --mtp-accept P] [--chunk N]]\n"
             "                         [--format text|json|csv] [-o FILE] [--plot FILE.svg] [--shard I/N]",
    .help = "The decode step (or prefill) of a batch on the layout fit would choose: compute,\n"
            "weights read (only the experts the batch hits), KV read, and network (EP all-to-all\n"
            "inside and across scale-up domains, TP all-reduce, pipeline sends), which term binds,\n"
            "tokens/s, tokens/s per device and cost per million tokens when a price is known.\n"
            "Also the latency floor (batch 1, weights still stream) and the batch at which compute\n"
            "reaches memory (none when the KV read per sequence outgrows compute).\n"
            "With efficiency 1 (the default) every time is a lower bound; below 1, an estimate.\n"
            "With --isl/--osl each point is a serving step: the batch's decode at isl + osl/2 tokens\n"
            "of KV and the prefill of the prompts that replace finished requests; tokens/s are output\n"
            "tokens, prefill included (--phase prefill: prompts of --isl tokens).\n",
    .options = OPTS_FORMAT | OPTS_PRECISION | OPTS_CONTEXT | OPTS_RACKS | OPTS_BATCH | OPTS_FIT |
               OPTS_ROOFLINE | OPTS_WORKLOAD,
    .positionals = 2,
};

const struct command command_plan = {
    .name = "plan",
    .run = cmd_plan,
    .summary = "lay a model out: parallelism, layers on stages, experts on devices, predicted step",
    .usage = "rackplan plan MODEL TOPOLOGY [--racks N] [--loads FILE.csv] [--redundant N] [--ep N]\n"
             "                     [--tp N] [--pp N] [--batch N] [--context N] [--time-limit S]\n"
             "                     [--expert-map FILE.csv|FILE.json] [--report FILE.md|FILE.html] [--emit ENGINE DIR]\n"
             "                     [--isl N --osl N [--ttft-ms X] [--tpot-ms Y] [--prefix-hit F] [--mtp K --mtp-accept P]]\n"
             "                     [--format text|json] [-o FILE]",
    .help = "Chooses the layout fit would (pinned by --tp/--pp/--ep), splits layers into pipeline\n"
            "stages (exact DP, proven optimal by an ILP), places routed experts and replicas of hot\n"
            "experts on devices for the expert loads (uniform without --loads), and predicts the step\n"
            "from the roofline with the placement's load imbalance. The batch defaults to the largest\n"
            "that fits (with --isl/--osl: that fits at isl + osl tokens and whose serving step, prefill\n"
            "included, meets --ttft-ms and --tpot-ms). Exit 0 when the plan fits, 1 when it does not.\n",
    .options = OPTS_FORMAT | OPTS_PRECISION | OPTS_CONTEXT | OPTS_RACKS | OPTS_BATCH | OPTS_FIT |
               OPTS_PLAN | OPTS_WORKLOAD | OPTS_TARGETS | OPTS_EMIT,
    .positionals = 2,
};

const struct command command_compare = {
    .name = "compare",
    .run = cmd_compare,
    .summary = "one model on several topologies and cluster sizes: fit, latency, throughput, cost",
    .usage = "rackplan compare MODEL TOPOLOGY... [--racks N[,N...]] [--context N] [--tpot-ms X]\n"
             "                        [--price DEVICE=USD_PER_HOUR]... [--weights PREC] [--kv PREC]\n"
             "                        [--domain-sizes N[,N...] [--devices N]] [--plot FILE.svg]\n"
             "                        [--report FILE.md|FILE.html] [--shard I/N]\n"
             "                        [--isl N --osl N [--ttft-ms X] [--mode M] [--prefix-hit F] [--mtp K --mtp-accept P]]\n"
             "                        [--format text|json|yaml|csv|md] [-o FILE]",
    .help = "Which hardware to buy: for each topology and cluster size, whether the model fits (and\n"
            "the fewest devices that hold it), the latency floor (the decode step at batch 1), the\n"
            "largest batch whose decode step meets --tpot-ms (or that fits, without a target),\n"
            "tokens/s per device and per rack there, cost per million output tokens (the\n"
            "topology's <price> or --price), energy per token (its <power>), the scale-up domain\n"
            "size and the share of the MoE all-to-all that leaves it. Rows are sorted by cost per\n"
            "token; the best is marked. Each topology is laid out as fit and roofline would.\n"
            "--domain-sizes asks what a bigger scale-up domain buys: one topology's accelerator\n"
            "in domains of each size, on the same devices, rows in size order.\n"
            "With --isl/--osl each row is instead the best deployment rackplan serve finds on that\n"
            "hardware for the workload (mode, instance, batch, TTFT, TPOT, output tokens/s per device\n"
            "over every device used, prefill devices included), sorted by cost per token the same way;\n"
            "--racks N or --devices N is then each deployment's budget (both pools, every replica).\n"
            "Exit 0 when some row fits (and meets the target), 1 when none does.\n",
    .options = OPTS_FORMAT | OPTS_PRECISION | OPTS_CONTEXT | OPTS_COMPARE | OPTS_WORKLOAD | OPTS_TARGETS,
    .positionals = 2,
    .more = true,
};

const struct command command_merge = {
    .name = "merge",
    .run = cmd_merge,
    .summary = "join the CSV or JSON parts of a sharded roofline or compare run",
    .usage = "rackplan merge PART.csv|PART.json... [--format csv|json] [-o FILE]",
    .help = "Sweeps too big for one machine run as shards: `rackplan roofline ... --shard I/N` or\n"
            "`rackplan compare ... --shard I/N` with --format csv or json writes the I-th of N\n"
            "equal parts. merge joins the parts, in any order, into what the run without --shard\n"
            "writes, in the parts' format: roofline rows by batch; compare rows sorted by cost\n"
            "again and the best marked. CSV parts must share their header; JSON roofline parts\n"
            "everything but their points, JSON compare rows their keys, model, context and kind.\n"
            "A row given twice is an error. A JSON part holds at most 64 MiB.\n",
    .options = OPTS_FORMAT | OPTS_MERGE,
    .positionals = 1,
    .more = true,
};

const struct command command_calibrate = {
    .name = "calibrate",
    .run = cmd_calibrate,
    .summary = "fit efficiency factors to published measurements, for --estimate",
    .usage = "rackplan calibrate DATA.yaml [--check] [--format text|json|yaml] [-o FILE]",
    .help = "Reads measured throughputs of real deployments (calibration/measurements.yaml: model,\n"
            "topology, layout, precisions, context, the batch or time-per-token target, tokens/s per\n"
            "device and where it is published), predicts each with the roofline, and fits per\n"
            "accelerator family and weight precision a compute and a memory efficiency and a latency\n"
            "factor (times the topology's <latency> floors), shared scale-up, scale-out and routed-\n"
            "expert efficiencies and a host time a sequence a step, minimising the squared log errors\n"
            "(groups shrunk toward their geometric mean). Prints, per measurement, its class (offline,\n"
            "relaxed, interactive), the bound (efficiency 1), the estimate and its error, and the\n"
            "estimate refitted without it (leave-one-out), with the left-out error by class; then the\n"
            "<efficiency> rows for the topology files, which --estimate uses. With --check, no fit:\n"
            "each predicted at its topology's shipped row. Exit 0, or 1 when a bound is below its\n"
            "measurement (the model misses something).\n",
    .options = OPTS_FORMAT | OPTS_CALIBRATE,
    .positionals = 1,
};

const struct command command_serve = {
    .name = "serve",
    .run = cmd_serve,
    .summary = "serve a workload: the best deployment under TTFT/TPOT targets, its frontier, sizing",
    .usage = "rackplan serve MODEL TOPOLOGY (--isl N | --isl-dist D) (--osl N | --osl-dist D) | --lengths FILE\n"
             "                      [--osl-mean N] [--ttft-ms X] [--tpot-ms Y] [--percentile P] [--rate R]\n"
             "                      [--arrivals poisson|constant|closed] [--simulate N [--seed S]]\n"
             "                      [--mode aggregated|disaggregated|best] [--prefix-hit F]\n"
             "                      [--mtp K --mtp-accept P] [--chunk N] [--racks N | --devices N] [--estimate]\n"
             "                      [--prefill-topology FILE] [--price DEVICE=USD_PER_HOUR]...\n"
             "                      [--weights PREC] [--kv PREC] [--tp N] [--pp N] [--reserve R]\n"
             "                      [--plot FILE.svg] [--report FILE.md|FILE.html] [--emit ENGINE DIR]\n"
             "                      [--format text|json|yaml] [-o FILE]",
    .help = "What a deployment serves for requests of --isl prompt and --osl output tokens: output\n"
            "tokens/s per device with prefill included, on the best layout (instance size, TP or\n"
            "data-parallel attention, EP, PP) and batch, served aggregated (one pool, continuous\n"
            "batching with chunked prefill) or disaggregated (a prefill and a decode pool in the\n"
            "ratio that balances them, the KV crossing between them), within the time-to-first-token\n"
            "and time-per-output-token targets. Prints the chosen deployment, its TTFT, TPOT,\n"
            "tokens/s per device and per user, cost and energy per token, and the frontier of\n"
            "tokens/s per device against tokens/s per user. TTFT and TPOT are given at p50, p90 and\n"
            "p99: a fixed number of requests in flight (or --arrivals poisson: at random at the served\n"
            "rate), their lengths fixed or from a mix (--lengths, --isl-dist, --osl-dist); the targets bound\n"
            "--percentile P. --simulate N checks the analysis with a discrete-event simulation of the\n"
            "chosen deployment. --rate R sizes it: the fewest devices\n"
            "that serve R requests/s. --racks N or --devices N is the budget of the whole deployment\n"
            "(both pools, every replica); without either, the topology as written, and a line says\n"
            "what more hardware would buy. Every figure is a roofline bound, or with --estimate the\n"
            "topology's calibrated estimate beside the bound. Exit 0 when some deployment within the\n"
            "budget meets the targets (and serves --rate), 1 when the model does not fit the budget\n"
            "(how many devices would hold it is said) or none meets them (the binding target named).\n",
    .options = OPTS_FORMAT | OPTS_PRECISION | OPTS_RACKS | OPTS_FIT | OPTS_WORKLOAD | OPTS_TARGETS | OPTS_SERVE |
               OPTS_EMIT,
    .positionals = 2,
};

const struct command command_price = {
    .name = "price",
    .run = cmd_price,
    .summary = "the price sheet a deployment implies, or a published sheet run backwards",
    .usage = "rackplan price MODEL TOPOLOGY (--isl N | --isl-dist D) (--osl N | --osl-dist D) | --lengths FILE\n"
             "                      [--osl-mean N] [--ttft-ms X] [--tpot-ms Y] [--percentile P]\n"
             "                      [--arrivals poisson|constant|closed]\n"
             "                      [--mode aggregated|disaggregated|best] [--prefix-hit F] [--mtp K --mtp-accept P]\n"
             "                      [--chunk N] [--racks N | --devices N] [--price DEVICE=USD_PER_HOUR] [--estimate]\n"
             "                      [--weights PREC] [--kv PREC] [--tp N] [--pp N] [--reserve R]\n"
             "                      [--format text|json|yaml] [-o FILE]\n"
             "       rackplan price --from-prices FILE.yaml TOPOLOGY [--model MODEL [the workload and options above]]\n"
             "                      [--format text|json|yaml] [-o FILE]",
    .help = "What a provider serving the workload on the best deployment rackplan serve finds (the same\n"
            "search and targets) would charge at the topology's $ per device-hour, each token at the device\n"
            "time it takes: input (a cache miss: the prefill pool's, or in aggregated serving the prefill\n"
            "share of a step's, device time a prompt token), cached input by memory tier (the device time\n"
            "to load a token's KV from HBM, host memory, NVMe or remote storage, and whether that beats a\n"
            "recompute), output at the workload's lengths and at prompts of 8k, 32k, 128k, 200k and 1M\n"
            "tokens within the model's context (the decode layout's largest batch within the TPOT target\n"
            "and HBM there), storage per million tokens an hour by tier, the output/input ratio and the\n"
            "long-context step: the prompt length where output costs 1.5 times its price at the\n"
            "workload's. --from-prices runs a published sheet (prices/) backwards on TOPOLOGY: decode's\n"
            "memory-boundedness (output / input), the KV bytes a token its long-context step implies, the\n"
            "tier whose drain time matches each cache retention, and the tier its cache discount implies;\n"
            "with --model, rackplan's own sheet for that model (--isl 4096 --osl 512 unless given) beside\n"
            "it. JSON keys: README, \"Price sheets\". Exit 0 with a sheet; 1 when the topology has no\n"
            "price (give --price) or no deployment fits the budget or meets the targets.\n"
            "\n"
            "price's own options:\n"
            "  --from-prices FILE.yaml  a published price sheet to run backwards on TOPOLOGY\n"
            "  --model MODEL    with --from-prices: rackplan's sheet for MODEL beside the published one\n"
            "  --racks N, --devices N  the budget of the deployment in scale-up domains or devices;\n"
            "                   default: none (a provider buys what the best deployment takes)\n"
            "  --price D=USD    price per device-hour of topology D (its file name without .xml, or\n"
            "                   its name); default: the topology's <price>\n"
            "  --mode M         aggregated, disaggregated or best (default)\n"
            "  --estimate       times at the topology's calibrated <efficiency>; default: the bound\n",
    .options = OPTS_FORMAT | OPTS_PRECISION | OPTS_FIT | OPTS_WORKLOAD | OPTS_TARGETS,
    .positionals = 1,
    .more = true,
};

static const struct command *const commands[] = {&command_calibrate, &command_compare, &command_fit, &command_merge,
                                                 &command_model, &command_plan, &command_price, &command_roofline,
                                                 &command_serve, &command_topo};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void print_usage(FILE *out)
{
    fprintf(out, "usage: rackplan <command> [options] [files]\n"
                 "       rackplan --help | --version | help <command>\n\n"
                 "Plans large language model deployments on real accelerator hardware.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\n'rackplan <command> --help' shows a command's options.\n\n"
                 "exit codes:\n"
                 "  0  ok (fit: it fits)\n"
                 "  1  does not fit, or no feasible plan\n"
                 "  2  usage error\n"
                 "  3  invalid input file\n"
                 "  (4 is not used: when GLPK fails, a plan keeps its greedy result, solver status failed)\n"
                 "  5  I/O or internal error\n");
}

static const struct command *find(const char *name)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    /* Numbers are always written with a decimal point: never take LC_NUMERIC from the user. */
    setlocale(LC_ALL, "C");
    if (argc < 2) {
        fprintf(stderr, "rackplan: missing command\nTry 'rackplan --help'.\n");
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("rackplan %s\n", RACKPLAN_VERSION);
        return EXIT_OK;
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3) {
            print_usage(stdout);
            return EXIT_OK;
        }
        const struct command *c = find(argv[2]);
        if (!c) {
            fprintf(stderr, "rackplan: unknown command '%s'\nTry 'rackplan --help'.\n", argv[2]);
            return EXIT_USAGE;
        }
        char *help_argv[] = {argv[2], "--help", NULL};
        return c->run(2, help_argv);
    }
    const struct command *c = find(name);
    if (!c) {
        fprintf(stderr, "rackplan: unknown command '%s'\nTry 'rackplan --help'.\n", name);
        return EXIT_USAGE;
    }
    return c->run(argc - 1, argv + 1);
}
