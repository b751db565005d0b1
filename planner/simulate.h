/* simulate.h: a deterministic discrete-event simulation of LLM serving, request by request, to
 * check the analytic model (serve.h) where its means hide queueing: TTFT and TPOT percentiles,
 * output tokens/s and the batch an instance really runs, for a length mix arriving as a Poisson
 * stream, at a constant rate, or from a closed loop of clients.
 *
 * Step times come from the caller (struct sim_timing), so this module knows no hardware: a test
 * gives closed forms, the planner roofline steps. It needs libm only.
 *
 * Requests are numbered in arrival order from 0; the first `warmup` are simulated but not
 * measured. Every request draws a class (isl, osl) with probability weight / sum of weights. The
 * draws come request by request from one PRNG (xoshiro256** seeded through splitmix64 from
 * `seed`, u = the top 53 bits / 2^53, in [0, 1)), in this order:
 *   SIM_POISSON (open loop): a gap u, the class, an instance. Request i arrives at the sum of
 *     i + 1 gaps -ln(1 - u) / arrivals_per_s and goes to instance floor(u decode_instances);
 *     drawing the instance at arrival thins one Poisson stream into decode_instances
 *     independent ones.
 *   SIM_CONSTANT (open loop): the same three draws, the gap's and the instance's u unused:
 *     request i arrives at exactly (i + 1) / arrivals_per_s and goes to instance i mod
 *     decode_instances (a router's turn, so that each instance's arrivals are evenly spaced too,
 *     where a random instance would space them as a thinned stream's, squared coefficient of
 *     variation 1 - 1 / decode_instances), and a seed gives the classes it gives SIM_POISSON.
 *     One class is thus the same for every seed.
 *   SIM_CLOSED: the class alone; arrivals_per_s is not read. Each decode instance has
 *     `concurrency` clients of its own (aggregated: each replica; disaggregated: each decode
 *     instance, the prefill pool serving every client), each with one request at a time. At time
 *     0 the first min(concurrency x decode_instances, requests + warmup) requests arrive, request
 *     i from a client of instance i mod decode_instances; thereafter each completion sends, at
 *     that same moment, the next request from the same client to the same instance, until
 *     requests + warmup have been sent. Requests sent at one time are numbered in the order the
 *     event loop meets them (Determinism). With dispatch_group g > 1 (aggregated), instances
 *     come in groups of g consecutive ones sharing `concurrency` clients a group: request i of
 *     the first min(concurrency x decode_instances / g, requests + warmup) goes to group i mod
 *     (decode_instances / g), and every request, first or next, to the group's instances in
 *     turn (the j-th the group sends to its instance j mod g).
 * Of a prompt, p = max(1, round(isl (1 - prefix_hit))) tokens are computed; the other isl - p are
 * cached.
 *
 * Aggregated (SIM_AGGREGATED): each instance runs steps back to back while it has work; idle, it
 * waits for its next arrival and starts a step then. An instance has `ranks` data-parallel ranks
 * that step together, and its i-th request (from 0, in the order they reach it) goes to rank i
 * mod ranks (SGLang's data-parallel controller sends requests to its ranks in turn by default:
 * load_balance_method "round_robin", python/sglang/srt/server_args.py), which keeps it in a queue
 * of its own (each rank runs a scheduler of its own). At the start of a step the instance admits
 * waiting requests (those arrived at or before it, so a closed loop's request sent as a step ends
 * can join the next) first come, first served over the ranks whose admitted prompts not yet
 * prefilled leave some of the rank's budget of chunk_tokens (a prompt's KV is reserved when its
 * first chunk can be scheduled, as SGLang's prefill adder and vLLM's scheduler allocate it; a
 * rank whose budget is spent admits none, and the others go on), while the rank's requests in
 * flight (prefilling + decoding) < its share of max_sequences and the KV they reserve plus the
 * next request's reservation <= its share of kv_capacity_tokens (a reservation is isl + osl, or
 * isl + reserve_output_tokens where given (TensorRT-LLM's GUARANTEED_NO_EVICT reserving the
 * request's max_tokens), rounded up to kv_block_tokens: the engine admits only what can grow to
 * its full length); a
 * rank's share is the instance's cap over ranks, rounded down (max_sequences at least 1): each
 * rank holds its own requests' KV (data-parallel attention keeps a request's KV on its rank), so
 * a rank that is full makes its requests wait while another has room. A request that arrives
 * during a step waits for the next. The step carries every decoding
 * sequence and, on each rank, of its admitted prompts in order, up to chunk_tokens prefill
 * tokens, a prompt's remainder continuing next step and ending what the rank's step takes (a
 * rank's prompts finish in order; another rank's prompt does not wait for them). Its time is
 * step_s(step), which sees the busiest rank's tokens. A prompt whose last
 * chunk is in the step emits its first token at the step's end (TTFT = that end - arrival) and
 * decodes from the next step; each step adds tokens_per_step to each decoding sequence, which
 * completes at the end of its M-th decode step, M = ceil((osl - 1) / tokens_per_step) (computed
 * less a relative 1e-12 so that 999 / 1.85 is 540, not 541), releasing its slot and KV then.
 * osl = 1: done at the first token.
 * Disaggregated (SIM_DISAGGREGATED): the router sends the requests to the prefill_instances servers
 * in turn, request j (in arrival order, from 0) to server j mod prefill_instances (round-robin,
 * Dynamo's default routing), and each server keeps its own FCFS queue: free and with prompts
 * waiting, it takes them in order up to prefill_batch_tokens computed tokens, the prompt that
 * passes them split there: its first part in this batch, the rest heading the next (chunked
 * prefill: SGLang's PrefillAdder truncates the request that passes the remaining chunk budget and
 * carries it as its chunked request, python/sglang/srt/managers/schedule_policy.py at 00550cd1,
 * add_one_req and add_chunked_req; whole prompts only had lost the room a long prompt left, a
 * DeepSeek-R1 mix's server busier than its tokens make it); the batch takes prefill_s(prompts,
 * tokens), a split prompt one of its prompts. Each prompt's first token counts kv_transfer_s
 * after the batch that carries its last part ends (TTFT = batch end + kv_transfer_s - arrival),
 * when the request joins its decode instance, the instance's i-th join (from 0, in the order they
 * join) going to its rank i mod ranks (each rank holds its own requests' KV: data-parallel
 * attention), waiting FCFS there for a slot and KV on that rank's share as above (a full rank's
 * joins wait while another has room), and decodes osl - 1 tokens in steps whose prefill_tokens is
 * 0, from the first step that starts after it joins.
 *
 * Measures. TPOT of a request = (completion - first token) / (osl - 1), for osl > 1 only
 * (MLPerf's convention; a request of osl 1 has a TTFT and no TPOT). Disaggregated, a request's
 * wait for a decode slot (from the first step start that found it joined and had no room for it
 * or one ahead of it, to the step that admits it) is moved from TPOT to TTFT: the engines reserve
 * the decode KV before prefill starts (SGLang's decode PreallocQueue; Dynamo routes a request to
 * decode first), so the wait comes before the first token; the simulation keeps prefill first
 * and does not hold that KV during prefill. Percentiles by nearest rank:
 * the p-th of n values is the ceil(p n / 100)-th smallest. The window (first, last] runs from the
 * arrival of the first measured request to that of the last, in every arrival mode (closed: the
 * window is thus set by the requests the loop sent, and the drain after the last is outside it).
 * output_tokens_per_s counts the osl of every request (warm-up ones too) that completes after
 * its start and no later than its end, over its length (half-open, so a window of whole periods
 * counts each period's completions once), and mean_decoding_sequences is the time average
 * within it of the decoding sequences summed over the instances (a sequence decodes from the
 * start of its first decode step to its completion; divide by decode_instances for an
 * instance's mean); both are 0 when the window is empty (one request measured). So at steady
 * state Little's law holds: mean_decoding_sequences = the arrival rate x the mean of
 * (completion - first token).
 *
 * Determinism: the same config and seed give a bit-identical result on one build. Open loop:
 * nothing depends on the order instances are simulated: after routing instances never interact
 * and the prefill pool does not depend on decode, so the pool is simulated first and each
 * instance then alone. Closed loop: a completion sends the next request, so one event loop runs
 * everything in time order; events at one time go joins to a decode instance first (by
 * request), then instance steps (by instance index; a step's end then the next step's start,
 * its completions sending their requests between), then prefill batches.
 *
 * Cost: O(N log N) for N = requests + warmup (sorting and percentiles) plus O(log n) a sequence
 * and O(1) a step, amortised (the decoding sequences' context sum is kept from integer step
 * indices, their completions in a binary min-heap keyed by the instance's step index at which
 * each completes, and a step visits only the prompts whose chunks it carries),
 * and O(1) a prefill prompt (open loop: each server's requests are every x-th). Closed adds
 * O(log decode_instances) a step, O(log N) a request and O(log prefill_instances) a prefill
 * batch (the instances' next events, the joins and the servers whose next request has been sent
 * in heaps). A step and an admission also visit the instance's ranks: O(ranks) each.
 * Memory is O(N): about 100 bytes a request; closed adds about 160 bytes an instance with a client
 * (every instance in dispatch groups) and 80 bytes a rank of it, 40 bytes a client (its queue,
 * decode-heap and join entries; the first two g times over in dispatch groups of g, each
 * instance's holding room for all its group's clients, and the queue `ranks` times over: a
 * rank's unfinished prompts are each a client's, and the queue is read from the lowest rank's)
 * and 32 bytes a prefill server.
 */
#ifndef RACKPLAN_SIMULATE_H
#define RACKPLAN_SIMULATE_H

#include <stdint.h>

/* The most requests + warmup one simulation takes, and the most instances of either kind. */
#define SIM_MAX_REQUESTS 100000000
#define SIM_MAX_INSTANCES 1048576

/* One step of one instance. */
struct sim_step {
    int64_t sequences;        /* decoding sequences: each gains tokens_per_step (verifies K + 1
                               * with MTP; the callback knows K) */
    double context_tokens;    /* their mean KV length: isl + 1 + tokens_per_step x the decode
                               * steps each has run; 0 when sequences is 0 */
    int64_t prefill_tokens;   /* prompt tokens computed in the step (aggregated; 0 disaggregated) */
    int64_t prefill_busiest_tokens; /* of them, the most one rank computes (= prefill_tokens with
                                     * one rank): the rank that paces a step when ranks meet */
    double prefill_context_tokens; /* the mean over those tokens of the context each chunk attends
                                    * to: its prompt's cached and already prefilled tokens + half
                                    * the chunk; 0 when prefill_tokens is 0 */
};

/* Step times in seconds; each must return a finite value >= 0, else simulate fails with
 * SIM_BAD_TIME. `context` is passed back untouched. */
struct sim_timing {
    double (*step_s)(void *context, const struct sim_step *step); /* aggregated or decode step */
    double (*prefill_s)(void *context, int64_t prompts, int64_t tokens); /* a disaggregated prefill
                                                                          * batch: prompts and their
                                                                          * computed tokens; NULL
                                                                          * when aggregated */
    void *context;
};

enum sim_mode { SIM_AGGREGATED, SIM_DISAGGREGATED };

/* How requests arrive (the header's Requests): open loops at arrivals_per_s, or closed. */
enum sim_arrivals { SIM_POISSON, SIM_CONSTANT, SIM_CLOSED };

struct sim_config {
    enum sim_mode mode;
    enum sim_arrivals arrivals;
    int64_t requests;         /* measured, >= 1 */
    int64_t warmup;           /* simulated before them and not measured, >= 0 */
    uint64_t seed;
    double arrivals_per_s;    /* open loop: the whole deployment's rate, > 0 and finite; closed:
                               * not read (may be 0) */
    int64_t concurrency;      /* SIM_CLOSED: clients a decode instance (a replica when
                               * aggregated; a dispatch group's with dispatch_group > 1), in [1,
                               * SIM_MAX_REQUESTS]; open loop: not read */
    const int64_t *isl, *osl; /* a class's prompt and output tokens, in [1, 2^32] each */
    const double *weight;     /* a class's share, >= 0, not all 0 */
    int64_t classes;          /* >= 1 */
    double prefix_hit;        /* share of a prompt found cached, [0, 1) */
    double tokens_per_step;   /* tokens a decoding sequence gains a step, >= 1 (MTP's yield) */
    int64_t decode_instances; /* aggregated: replicas; disaggregated: decode instances; in
                               * [1, SIM_MAX_INSTANCES] */
    int64_t max_sequences;    /* an instance's cap on sequences in flight, its ranks' each an
                               * equal share; 0: none */
    int64_t kv_capacity_tokens; /* an instance's KV in tokens, its ranks' each an equal share;
                                 * 0: none. Every class's reservation must fit in a
                                 * rank's share */
    int64_t kv_block_tokens;  /* paged KV block; 0 is 1 */
    int64_t reserve_output_tokens; /* the output tokens admission reserves a request, at least
                                    * every class's osl (the requests' max_tokens); 0: its own osl */
    int64_t ranks;            /* an instance's data-parallel ranks that step together, each
                               * holding its own requests (aggregated: and chunking its own
                               * prompts), in [1, SIM_MAX_INSTANCES] */
    int64_t dispatch_group;   /* SIM_CLOSED, aggregated: instances in consecutive groups of this
                               * many (a replica's data-parallel ranks that step on their own,
                               * each simulated as an instance) share their clients: concurrency
                               * is a group's, and each request goes to the group's instances in
                               * turn; must divide decode_instances. 0 or 1: every instance alone */
    int64_t chunk_tokens;     /* aggregated: prefill tokens a step may carry on each rank; 0: no
                               * limit */
    int64_t prefill_instances;    /* disaggregated: prefill servers, in [1, SIM_MAX_INSTANCES] */
    int64_t prefill_batch_tokens; /* disaggregated: the most computed tokens a batch, >= 1 */
    double kv_transfer_s;     /* disaggregated: prefill end to decode instance, >= 0 */
};

struct sim_percentiles {
    double p50, p90, p99, mean;
};

struct sim_result {
    struct sim_percentiles ttft_s, tpot_s; /* over the measured requests (TPOT: those of osl > 1;
                                            * all 0 when there are none) */
    double output_tokens_per_s;      /* in the window (see the header) */
    double mean_decoding_sequences;  /* in the window, summed over the instances */
    double decoding_sequences_sd;    /* open loop: the sd over time of an instance's decoding
                                      * sequences in the window (each step that starts in it at
                                      * its own count for its length, an instance's idle time at
                                      * 0); closed loop: 0 */
    double simulated_s;              /* the last completion */
    int64_t max_decoding_sequences;  /* the most in one step of any instance */
    int64_t steps;                   /* instance steps, every instance */
    int64_t prefill_batches;         /* disaggregated */
    double slot_wait_share;          /* the measured requests that waited for a slot: a step start
                                      * found them ready and their rank admitted no more for want of
                                      * KV (or of the running-request cap), for them or one ahead on
                                      * it */
    int64_t measured;                /* = requests */
    int64_t tpot_measured;           /* measured requests with osl > 1 */
};

/* One class's share of the measured requests and its own percentiles. */
struct sim_class_result {
    int64_t measured, tpot_measured;
    double share;                    /* measured / requests */
    struct sim_percentiles ttft_s, tpot_s;
};

enum sim_status {
    SIM_OK = 0,
    SIM_INVALID = -1,   /* the config (sim_config_problem says what) or timing is not usable */
    SIM_NO_MEMORY = -2, /* an allocation failed */
    SIM_BAD_TIME = -3,  /* a callback returned a time that is negative or not finite */
};

/* Defaults: aggregated, Poisson, one instance of one rank, seed 1, one token a step, 16-token KV
 * blocks, a chunk of 8192 tokens, one prefill server of 16384 tokens a batch, no caps, no warm-up, concurrency 0;
 * the caller sets requests, the rate (or, closed, the concurrency) and the classes. */
void sim_config_init(struct sim_config *c);

/* NULL when `c` is usable, else a static string naming the first field that is not (e.g.
 * "arrivals_per_s must be > 0"). */
const char *sim_config_problem(const struct sim_config *c);

/* Runs the simulation. On SIM_OK fills *out and, when `classes` is not NULL, classes[0 ..
 * c->classes - 1]; on any other status neither is written. SIM_INVALID also when t or
 * t->step_s is NULL, or t->prefill_s is NULL in disaggregated mode. Allocates O(N) and frees it
 * before returning. */
enum sim_status simulate(const struct sim_config *c, const struct sim_timing *t, struct sim_result *out,
                         struct sim_class_result *classes);

#endif
