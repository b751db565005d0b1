/* batch_queue.h: the wait for a batch at a disaggregated prefill pool whose router sends the
 * requests to its instances in turn, each instance serving its own queue in batches (issue 26).
 *
 * Why. A prefill instance takes what waits, up to a batch, and a batch's time is often mostly
 * fixed (DeepSeek-V3 at data-parallel attention on a GB200 NVL72: one prompt of 8,192 tokens
 * 128 ms, eight 187 ms). Priced as x servers each taking prompts one at a time at a full batch's
 * rate (M/G/x), the pool is less busy than it is: a free instance takes the few prompts that
 * wait, in nearly a full batch's time, and the next prompts wait for that. Routers do not share
 * one queue among the instances: Dynamo's frontend sends requests round-robin by default
 * (--router-mode, default "round-robin": ai-dynamo/dynamo,
 * components/src/dynamo/frontend/frontend_args.py at c6b40e78), SGLang's router picks one
 * prefill server a request as it arrives (its policies random, round_robin, cache_aware,
 * power_of_two). Round-robin makes each instance a single server of its own, whose arrivals are
 * every x-th of the pool's, and such a queue has an exact chain.
 *
 * The model. Requests arrive as a Poisson process of rate lambda; request j goes to instance
 * j mod x, so an instance sees every x-th event of that process (its gaps Erlang with x phases,
 * rate lambda / x). The chain follows m of those phases, events at nu = m lambda / x: m = x up to
 * BATCH_QUEUE_PHASES, and fewer where the elimination would take more than BATCH_QUEUE_WORK
 * multiply-adds at the levels the tail needs (below). With m < x the chain's gaps are more
 * variable than round-robin's (squared coefficient of variation 1 / m, not 1 / x) and its queue
 * longer (268 instances of one 187 ms prompt at 97% busy: p99 1,040 ms at 16 phases, the
 * simulation 223 ms), so the chain is solved again at up to ceil(m / 2) phases (m2, what its
 * work allows) and each wait is carried to x, linear in 1 / phases as Kingman's heavy-traffic
 * wait is in the arrivals' squared coefficient of variation: at its atom's level u of the law
 * (the middle of its chance), w(u) + (1 / x - 1 / m) / (1 / m - 1 / m2) (w(u) - w2(u)), never
 * below 0, w2 at u linear between the coarser chain's atoms; the own batches stay the finer
 * chain's (test_batch_queue: 68 and 268 instances of batches of 1 and 8 at 80-97% busy, TTFT
 * within 6% of the simulation at the mean, p50 and p99). Where a coarser chain does not fit its
 * levels, or the chain follows one phase only, the finer waits stand, pessimistic. Where a batch
 * costs no fixed time and holds several prompts (its time all in its prompts) the waits fall
 * faster than linearly as the gaps grow regular, and carried from the 7
 * to 10 phases such batches allow they stay long from 80% busy on (12 to 268 instances of
 * batches of 8 at 80-97%: p99 38-594% over the simulation, the mean 6-175%; at 50% within 6%); the
 * search rarely meets such pools, a batch of one prompt costing such an instance as little a
 * prompt. An instance, free with prompts waiting, takes k = min(q, b) of them and is busy for
 * t(k) (the caller's law: atoms of time and chance for each k, a length mix spreading them);
 * idle, it starts a batch of one as the next prompt arrives.
 * Embedded at batch starts: state (q >= 1 waiting, phi in [0, m) events since the instance's last
 * arrival); a batch of D gives n ~ Poisson(nu D) events, a = floor((phi + n) / m) arrivals, phi' =
 * (phi + n) mod m, q' = q - k + a; q' = 0 goes to (1, 0), the prompt that ends the idle time
 * starting a batch of its own. States to q = N, more lumped at the top. N is set before solving,
 * from the queue's reach r: from one prompt, the batch size k grows to while a batch of k brings
 * more than k (its arrivals at mean + 8 sd), at most b; N is at least r + 8 (a batch of r brings
 * at most r, so the queue stays within r: levels beyond it only lowered the phases the work
 * allows, a 2-instance pool of batches of 80 solved at one phase on 200 levels where 94 hold it
 * at its two, its p99 wait 14% longer). Where r reaches b, above b waiting the chain is a random
 * walk in the states s = (q - 1) m + phi, s -> s - b m + n (n the events in a full batch), whose law
 * falls as exp(-theta s), theta > 0 the root of E[exp(theta (n - b m))] = 1 (Cramer-Lundberg,
 * halved to the last bit); N is where that tail leaves the top level at most
 * BATCH_QUEUE_MOST_TOP (from b levels up by Lundberg's inequality, a level 1 - exp(-theta m) of
 * what lies above it, and the top what full batches carry past it, kept until one takes more than
 * it brings), at most BATCH_QUEUE_MOST_LEVELS. Where r stays below b no batch waits for b and
 * that walk is never met: N stays at r's, and the top's check below grows it if short (a GB200
 * or GB300 NVL72 prefill instance of the whole rack takes batches of up to 2,880 prompts; solved
 * on b + 4 levels where the queue reached a few dozen, one serve of DeepSeek-V3 with the MLPerf
 * DeepSeek-R1 mix and --estimate took 60 s of CPU and 2.1 GB, on its reach 6.5 s and 0.2 GB, the
 * chosen deployment the same; with a batch size's laws made as the gathering reaches it and
 * dropped for the next, not every size's held at once, and the joiners kept only for the places
 * the queue reaches, 1.8 s and 20 MB). m is then the most the work allows at N,
 * and N is set again for it until m holds (fewer phases, a slower fall). Solved once: over 3,097
 * pools (the search's, and batches of 1 to 256 prompts at 0.3 to 0.995 busy) the top held at most
 * 0.76 of BATCH_QUEUE_MOST_TOP and N was 1.01 to 1.84 times the fewest levels that would do (1.06
 * at the median); should the top hold more, N grows by half (at the phases that allow) and it is
 * solved again, up to BATCH_QUEUE_MOST_LEVELS. The stationary law by Grassmann-Taksar-Heyman
 * elimination (exact, stable), over the band the chain moves in (from s, to s - k m + n: down at
 * most k m states, up at most the most events a batch less k m).
 *
 * The wait. A prompt arriving during a batch of D that started at (q, phi) is the j-th arrival of
 * that batch (at event j m - phi, its time u Erlang: the batch's time cut into
 * BATCH_QUEUE_SHARES equal parts, each at its middle, with its exact chance). It is at place
 * p = q - k + j in the queue; the e = floor((p - 1) / b) batches before its own are full ones (b
 * prompts, t(b): their sum at its mean and, when t(b) varies, at mean -+ sqrt(3) sd with weights
 * 1/6, 2/3, 1/6), so it waits W = D - u + that, and its own batch holds min(b, p - e b + the
 * prompts arriving to it during W) prompts (a count from a fresh arrival: floor(n / m), n ~
 * Poisson(nu W); its mean and second moment on a grid of W, linear between). The prompt that ends
 * an idle time waits 0 in a batch of 1. The cases below BATCH_QUEUE_CASE_LEAST are left out; the
 * waits are gathered on a grid of BATCH_QUEUE_WAIT_BINS bins, each given at its weighted mean wait
 * and its own batch's mean and standard deviation.
 *
 * The take. An engine whose budget is tokens (SGLang's --chunked-prefill-size, vLLM's
 * --max-num-batched-tokens) takes prompts while their tokens fit and splits the one that passes
 * it, so where lengths vary a batch finishes K prompts, K random: many short ones, or none while a
 * long one spans budgets. Given a take law, the instance with q waiting finishes all q when q <= K
 * (an exhausted batch, its time batch_s row q) and otherwise K of them in a batch of the whole
 * budget (full_s): K is drawn afresh each batch (the caller's law is the count of a budget's window
 * in the token stream, equilibrium renewal: E[K] the budget over the mean prompt). Above
 * take_most waiting every batch is full, the walk's step -K m + n (its Cramer-Lundberg root taking
 * K's law too). A waiting prompt's full batches ahead are those before the one it starts in, e
 * with P(e >= i) = P(K_1 + .. + K_i <= p - 2) (the p - 1 ahead of it not all finished; at the head
 * none: the batches a long prompt spans are its own time, the caller's), exact to place
 * BATCH_QUEUE_EXACT_PLACES + 1 and beyond it normal, mean (p - 2) / E[K] + 1/2 and variance
 * (p - 2) Var(K) / E[K]^3 (the renewal count's); its place in its own batch is p - e b, within
 * [1, b + 1] (the prompts ahead not finished before it share its batch: up to a budget of them,
 * then itself). A law of K = b alone is the count's chain step for step (its waits differ where the
 * p - 1 ahead fill whole batches: the count knows the next starts afresh).
 *
 * Exact, to the grids, for x = 1 (M/G^[b]/1 with a batch time by size) and where m = x; b = 1 and
 * a fixed time is E_x/D/1, x = 1 with it M/D/1 (test_batch_queue); beyond m = x, carried.
 * Not modelled: a router that balances by load (join the shortest queue shares the instances
 * better when batches cost little fixed time), the take's K following the prompts that wait (drawn
 * afresh, not from the lengths the queue holds). Deterministic: no random numbers, fixed order. */
#ifndef RACKPLAN_BATCH_QUEUE_H
#define RACKPLAN_BATCH_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#define BATCH_QUEUE_PHASES 16
#define BATCH_QUEUE_WORK 8e6 /* multiply-adds the elimination may take, which sets the phases */
#define BATCH_QUEUE_ATOMS 8  /* time atoms a batch size */
#define BATCH_QUEUE_SHARES 8
#define BATCH_QUEUE_MOST_TOP 1e-9
#define BATCH_QUEUE_MOST_LEVELS 4096
/* The most an instance's load may be of what full batches serve, lambda / x x E[t(b)] / b:
 * beyond it the queue runs to thousands of batches (M/D/1 at 0.995 waits 100 services on
 * average) and past the chain's most levels; the pool is taken as not keeping up. */
#define BATCH_QUEUE_MOST_USE 0.995
#define BATCH_QUEUE_CASE_LEAST 1e-10
#define BATCH_QUEUE_WAIT_BINS 256
#define BATCH_QUEUE_MOST_TAKE 256
#define BATCH_QUEUE_EXACT_PLACES 128

struct batch_queue_input {
    double arrivals_per_s; /* lambda, the pool's */
    int64_t instances;     /* x >= 1 */
    int64_t batch;         /* b >= 1: the most prompts a batch takes */
    int atoms;             /* 1 .. BATCH_QUEUE_ATOMS */
    /* a batch of k prompts (1 <= k <= b; with a take law, 1 <= k <= take_most, the batches that
     * take every prompt waiting) takes batch_s[(k - 1) atoms + r] seconds (> 0, finite) with
     * chance batch_weight[(k - 1) atoms + r] (>= 0, summing to 1 over r < atoms) */
    const double *batch_s, *batch_weight;
    /* A token budget's take law ("The take" above); take NULL: none, every batch takes min(q, b).
     * take[j], j = 0 .. take_most (<= BATCH_QUEUE_MOST_TAKE), the chance a batch with more waiting
     * finishes j prompts (>= 0, summing to 1, its mean at least 0.5); full_s[r] and full_weight[r]
     * (r < atoms, as above) the time of a batch that spends its budget. */
    int64_t take_most;
    const double *take, *full_s, *full_weight;
};

/* The wait's law: `count` atoms of chance weight[i] (summing to 1), wait wait_s[i] and own batch
 * of own_prompts[i] prompts on average (in [1, b]; with a take law [1, b + 1], the last the prompt
 * itself after a budget's worth of others), own_sd[i] their standard deviation. */
struct batch_queue_waits {
    int64_t count;
    double weight[BATCH_QUEUE_WAIT_BINS + 1], wait_s[BATCH_QUEUE_WAIT_BINS + 1], own_prompts[BATCH_QUEUE_WAIT_BINS + 1],
        own_sd[BATCH_QUEUE_WAIT_BINS + 1];
    double mean_wait_s;
    double busy; /* an instance's share of time in batches */
    /* the chain solved: its levels, the phases it followed, how many times it was solved (1
     * unless the levels predicted fell short), the chance at its top level (at most
     * BATCH_QUEUE_MOST_TOP) and theta, its law's fall a state above b waiting (exp(-theta)) */
    int64_t levels, phases;
    int64_t carried_from; /* the phases of the coarser chain the waits were carried to x from (0:
                           * none, the chain followed every instance's phases) */
    int solves;
    double top, decay;
};

enum batch_queue_status {
    BATCH_QUEUE_OK,
    BATCH_QUEUE_UNSTABLE, /* an instance cannot keep up: lambda / x above BATCH_QUEUE_MOST_USE
                           * b / E[t(b)], or the top still holds more than BATCH_QUEUE_MOST_TOP at
                           * the most levels */
    BATCH_QUEUE_INVALID   /* an input outside its range */
};

enum batch_queue_status batch_queue_waits(const struct batch_queue_input *in, struct batch_queue_waits *out);

/* A budget of tokens' take law, from the prompts' lengths (the tokens each computes): on a grid of
 * BATCH_QUEUE_TAKE_CELLS cells a budget (a length at its nearest cell, at least one), the budget's
 * window of the token stream in equilibrium, its first prompt the residual of the one split
 * before it (the discrete renewal's, P(R = i) = P(L >= i) / E[L]): P(K >= j) = P(R + S_{j - 1} <=
 * budget), S the sum of j - 1 lengths, so E[K] is the budget over the mean length (to the grid), and
 * K = b exactly for prompts of budget / b alike on the grid. Kept to the last j whose chance is at
 * least BATCH_QUEUE_CASE_LEAST (at most BATCH_QUEUE_MOST_TAKE), the rest lumped there. An exhausted
 * batch of k takes S_k tokens given that they fit (it mostly follows another exhausted batch or an
 * idle time, so its first prompt is whole; R + S_{k - 1} where k whole ones never fit): its law cut
 * into BATCH_QUEUE_TAKE_ATOMS parts of equal chance, each at its mean. */
#define BATCH_QUEUE_TAKE_CELLS 64
#define BATCH_QUEUE_TAKE_ATOMS 4

struct batch_queue_take {
    int64_t most;                                /* take_most */
    double take[BATCH_QUEUE_MOST_TAKE + 1];      /* P(K = j), j = 0 .. most */
    double tokens[BATCH_QUEUE_MOST_TAKE][BATCH_QUEUE_TAKE_ATOMS]; /* [k - 1][a]: an exhausted batch of k */
};

/* Values value[i] (rising) of chance chance[i] (i < count >= 1, summing to total > 0) cut into
 * BATCH_QUEUE_TAKE_ATOMS parts of equal chance, each at its mean value, into part_mean: the take's
 * token atoms and its caller's full batch times. */
void batch_queue_equal_parts(const double *value, const double *chance, int64_t count, double total,
                             double *part_mean);

/* `count` lengths (> 0, finite) of chance weight (>= 0, some > 0) and the budget (> 0, finite), in
 * tokens. BATCH_QUEUE_INVALID for an input outside its range. */
enum batch_queue_status batch_queue_take_law(const double *tokens, const double *weight, int64_t count, double budget,
                                             struct batch_queue_take *out);

#endif
