/* serve.h: what a deployment serves for a workload: output tokens/s per device for a prompt and
 * output length, under time-to-first-token and time-per-output-token targets, on the best
 * layout, aggregated or with prefill and decode disaggregated; the throughput-interactivity
 * frontier; and the fewest devices for a request rate.
 *
 * Every time is a roofline step (roofline.h, roof_step) at the pool's efficiency, so a search at
 * EFFICIENCY_BOUND bounds what any engine can serve and one at calibrated factors estimates it.
 *
 * Workload: isl prompt and osl output tokens a request (means; a length mix, serve_lengths,
 * sets them to its means and its classes set the tails below); a share `prefix_hit` of the
 * prompt is found in a prefix cache and not computed, so c = isl_eff = isl (1 - prefix_hit)
 * tokens are prefilled; loading the cached part takes prefix_load_s, added to TTFT (the device's
 * copy engines load while other requests compute: no step is lengthened). A sequence's KV grows from isl to isl + osl: decode reads it at the mean,
 * S = isl + osl / 2 (a mix: E[osl (isl + osl / 2)] / E[osl]), and HBM must hold what admission
 * reserves for it, r = isl + osl, or isl + max_tokens where the engine reserves the requests'
 * max_tokens (serve_workload.max_tokens; a mix: E[osl r] / E[osl], the sequences in flight weighed
 * by their lives). With multi-token prediction (K draft tokens, each accepted
 * with probability P in turn) a decode step verifies K + 1 tokens a sequence and yields
 * y = 1 + P + ... + P^K = (1 - P^(K+1)) / (1 - P) of them (Leviathan et al., 2023); else y = 1.
 *
 * Arrivals (serve_workload.arrivals): closed (a fixed number in flight, each replaced as it
 * ends, started together), poisson (at random at the served rate) or constant (evenly spaced).
 *
 * Steps as they come. A step carries the prompts that joined it, whole: units of u = min(c, C)
 * tokens (a prompt, or a C-token chunk of a longer one), m = y B / osl x c / u of them a step on
 * average, Poisson(m) (in clumps of E[c^2] / E[c]^2 units when the lengths vary) under Poisson
 * arrivals or varying lengths, else the two whole counts about m; closed-loop alike requests
 * (serve_workload.spread_starts false) in cohorts: started together, as a benchmark's clients are,
 * the prompts one step's budget took end their lives in one step and their successors arrive
 * together, so a step carries a cohort or none: K fills each rank's budget with whole prompts,
 * floor(C / c) of them, or a chunk of a longer prompt, on every rank that steps with the others
 * (each rank chunking its own prompts), within the batch (min(B, dp floor(C / c)) or min(B, dp)
 * units). B = q K + r go as q cohorts of K and, where r > 0, one of r: of the steps, m q / B
 * carry a cohort of K and m / B that of r (where m < K and those fit; else r is spread over the
 * cohorts of K, m / K of the steps). A request's first token comes at the end of its cohort's
 * step, and every life holds the other cohorts' steps once, so TPOT is the same for all of a
 * cohort's size (the mean step less (c / u) (T(K) - T(0)) (1 - m / K) / n over its n steps
 * where r = 0; with r > 0, (n T(0) + (c / u) ((q - 1) (T(K) - T(0)) + T(r) - T(0))) / n in a
 * cohort of K and (n T(0) + (c / u) q (T(K) - T(0))) / n in that of r, the share r / B of the
 * requests: the TPOT law two atoms, each percentile the nearest rank's); a prompt longer than C,
 * on a rank of its own (dp 1 and a batch of more than one, or a dense model's independent ranks
 * holding B / dp > 1 clients each, B a multiple of dp) or in a cohort of dp on ranks that step
 * together (B > dp), goes through a run of full steps, its TTFT ceil(c / C) of them (the steps of
 * a unit on it, of dp units); a cohort of r, the last of a round, or of B <= dp on ranks that
 * step together through its own chunks, r or B a step; elsewhere it keeps its own chunks as
 * below. No cohorts where the requests do not stay in step: on a dense model's ranks that step
 * on their own any prompt (the ranks take the requests in turn, so a cohort's successors are
 * dealt to every rank, whose steps drift apart); alike requests there, and evenly spaced ones,
 * come one by one (the two counts about m; where m < 1 every life still holds each other
 * client's prompt once: TPOT the same for all, as for a cohort of K = 1 unit). A step of k
 * units: each unit on one data-parallel rank in turn, the busiest rank pacing the step when the
 * ranks meet at every
 * MoE layer (so past each multiple of dp the busiest holds a unit more: T is priced at both
 * counts about each such jump, linear between); a dense model's ranks step on their own, each
 * carrying its share. T(B, k) = roof_step(B, K + 1, S; the k units so placed); where the ranks
 * meet and prompt lengths vary (each within C), the busiest's tokens are (j - 1) mean prompts and
 * the longest of the h ranks holding j = ceil(k / dp), and T(B, k) the mean over that longest's
 * law (a step is convex in its busiest rank's tokens). The mean step T = E_k[T(B, k)], plus,
 * where the law of k passes the full budget K, the units past it, which wait and are carried
 * later, each at (T(B, K) - T(B, 0)) / K (work conservation: the steps carry all that arrives).
 *
 * Aggregated (one pool, continuous batching with chunked prefill), an instance of n devices, dp
 * data-parallel ranks, B sequences:
 *   P = y B isl_eff / osl prefill tokens a step on average, P / dp <= C a rank (the chunk
 *   budget), rho = P / (dp C) its use; the roof_point's terms are those of the mean step
 *   roof_step(B, K + 1, S; P spread) and its step_s the mean step as it comes, T.
 *   TPOT = T / y at the mean, tokens/s per user = y / T, tokens/s per device = y B / T / n.
 *   TTFT: the waits (below), the rest of the step in progress (open loop: a length-biased step,
 *   a uniform share of it), then the steps that carry the prompt's chunks: the first beside the
 *   units that came with it (the composition at 1 + K), the others beside the mean prefill,
 *   each chunk on its rank; never less than the prompt's prefill alone on the instance; the
 *   full chunks after the first priced at their mean context (exact while one term binds);
 *   closed-loop the steps of a prompt's later chunks carry the other B - 1 sequences' share of the
 *   mean prefill beside them.
 *   Prefill-bound: when even B = 1 overruns the budget (y isl_eff / osl > dp C, a long prompt and
 *   a short output), the instance serves a request every osl' = ceil(y isl_eff / (dp C)) steps
 *   instead (priced as a workload of osl' outputs of which osl are counted: output tokens/s
 *   y osl / (osl' T n)); closed-loop its one sequence decodes alone, TPOT = the decode step of
 *   batch 1; at random arrivals osl' grows by a quarter at a time (at most 24 tries) until the
 *   chunks' queue keeps up (the prefill chain's; where it is not built, a rank holding a prompt
 *   for c / C steps that each carry a whole chunk, not the mean step) and the TTFT target, if
 *   any, is met. There a request's few decode steps land behind whole chunks more often than
 *   the chain's start says: TPOT's tail is below the simulation's (serve --simulate).
 * Disaggregated (a prefill pool and a decode pool, each its own layout and batch):
 *   prefill instance: b prompts a batch, S_p = roof_step(b, isl_eff, isl - isl_eff / 2), at most
 *   SERVE_PREFILL_TOKENS_PER_RANK tokens a DP rank; it serves r_p = b / S_p requests/s.
 *   decode instance: T_d = roof_step(B, K + 1, S), r_d = y B / (T_d osl) requests/s,
 *   TPOT = T_d / y at the mean; a sequence joining it after its first token waits out the step in
 *   progress first (none when the instance is idle, Poisson pi(0); else the rest of a
 *   length-biased step, T_d / 2 for steps alike), which counts in its TPOT over its osl - 1 tokens
 *   (as a client times it: the first token comes from prefill).
 *   KV transfer: the prompt's KV (isl tokens) from the devices that hold one sequence's KV on
 *   the prefill side to those on the decode side, over scale-up when a prefill and a decode
 *   instance fit in one domain of the same topology, else over the NICs:
 *   t_kv = bytes / min(senders x link, receivers x link) + the link's latency.
 *   x prefill and y decode instances (xPyD): TTFT = W + (its own batch's time) + t_kv, W the wait
 *   for a prefill batch (below); for each y up to SERVE_MAX_DECODE_INSTANCES the fewest x whose
 *   TTFT at the workload's percentile meets the target is taken (TTFT falls as x grows: found by
 *   doubling, then halving, within the budget), a y whose pair cannot beat the best so far even
 *   with the fewest x that keep up skipped, and the (x, y) with the most tokens/s per device
 *   kept: tokens/s per device = y r_d osl / (x n_p + y n_d); the prefill pool's use is
 *   rho = y r_d / (x r_p).
 *
 * Percentiles (serve_tail: p50, p90, p99 and the means; ttft_s and tpot_s at the workload's
 * percentile, 50 unless given, which the targets bound):
 *   the batch: closed or constant, B exactly; Poisson, the birth-death process of continuous
 *   batching as processor sharing, pi(n) ~ prod lambda / X(k), X(n) = y n / (T(n) osl), T(n) the
 *   steps' mean at n with the prompts lambda T(n) brings, widened where an arrival's prefill
 *   holds every sequence back: the requests that arrive during a hold join with it, in clusters
 *   (a Galton-Watson tree of held share m = lambda delay, delay what one more prompt adds to a
 *   step), so pi is the clusters' law (queueing.h: clusters of geometric size, mean G =
 *   queue_cluster_spread(m, the computed prompt tokens' scv, serve_lengths.life_overlap), at
 *   lambda / G; pi(n) / pi(n - 1) = a_n (1 + p / a_(n - 1)), a = lambda / (G X), p = 1 - 1 / G:
 *   negative binomial where X(n) = n mu, its upper tail exponential), and pi tilted by
 *   e^{theta n} until its departures balance the arrivals, E[X(n)] = lambda (Newton's steps, each
 *   shifting the mean by at most half an sd, until one shifts it by under a hundredth of one; 8
 *   at most); at the HBM cap requests wait for a slot (one at a time, and the clusters begun below
 *   the cap go on past it: queue_cluster_past_cap; the wait for a slot, below); a dense model's
 *   data-parallel ranks step on their own, each a replica with its own scheduler, so each is
 *   such a process of its own at lambda / dp (the ranks' requests taken as the Poisson stream
 *   thinned), its step at n_r the instance's at dp n_r, every rank alike, its cap N / dp; the
 *   instance holds the ranks' sum (mean and variance dp times a rank's); an instance's ranks
 *   that step together (data-parallel attention, aggregated or decode) are one such process at
 *   the instance's count, but each holds its own requests' KV, so the wait for a slot is a
 *   rank's: the same process per rank at lambda / dp, cap N / dp, one prompt more a whole one on
 *   the instance's step, a rank's count n stepping as the instance at n + (dp - 1)(m + rho (n -
 *   m)), m a rank's mean and rho the ranks' correlation in [0, 1], what the instance's variance
 *   holds over that of dp ranks apart, each with the others at their mean (where rho = 1 gives a
 *   wait a chance under 1e-8, that law alone), and, aggregated, the requests dealt to the ranks
 *   in turn: a rank's arrivals Erlang-dp, its count z = 1 + (1 / dp - 1) k times as variable
 *   about its mean as a Poisson stream's (k = serve_lengths.life_overlap, 1 for alike lives:
 *   the variance of GI/GI/infinity's heavy-traffic limit), so its law is reached at the cap m + (N_r - m) / sqrt(z)
 *   (a decode instance's requests join in prefill batches: not narrowed): its wait probability,
 *   mean and phases, the rest from the instance's; the batch's rate elasticity Var / (G mean) (a rank's where they step
 *   alone): a point past SERVE_MOST_RATE_ELASTICITY does not settle and does not meet the
 *   targets (the search leaves it out of the best and the frontiers and keeps the best such
 *   point, serve_result.unsettled);
 *   T(n) settled at 12 counts from 1 to the cap, then at up to 12 of a grid 3% apart where pi's
 *   mass lies (its mean +- 6 sd, twice), unless the chord there is within 0.1% of T;
 *   the steps' prompts under Poisson arrivals: those that arrive during a step join the next, so
 *   the units a step carries are U' ~ Poisson(lambda T(U)) of the step before, a branching
 *   process: consecutive steps correlate by rho = lambda b (b the mean step's growth a unit) and
 *   the counts vary 1 / (1 - rho^2) times a Poisson count's: their clumps grow by that factor,
 *   settled with T (rho <= 0.95);
 *   TPOT: the mean of a request's n = (osl - 1) / y steps: the batch's quantile shrunk to what a
 *   life of that length keeps (relaxation Var(n) / (lambda G), G the clusters' spread) and the
 *   steps' own variance V / n times the correlated sum's (1 + rho) / (1 - rho) - 2 rho (1 - rho^n)
 *   / (n (1 - rho)^2), the two sds added with the correlation a run of arrivals gives them, that
 *   of the mean number present over the life with the arrivals in it in the M/G/infinity system
 *   of the output-length bins' lives stretched to the occupancy's relaxation
 *   (queue_window_correlation), after the request's own prompt's delay delta carried into its
 *   steps, delta rho^j at the j-th (its TPOT + delta rho (1 - rho^n) / ((1 - rho) n y)); a
 *   length mix's quantiles those of the mixture over output-length bins, each a lognormal shifted
 *   to the mean, variance and skewness of the bin's TPOT (the steps' units a compound Poisson sum,
 *   Poisson(n m / s_n) clumps of s_n = s g units, g the correlated factor above);
 *   the wait for a slot: a sequence reserves its prompt and output (the engine admits a request
 *   only while its KV can grow to its own length; or to its prompt and max_tokens, where given:
 *   serve_workload.max_tokens), so with lengths that vary the sequences the
 *   KV holds move with those in flight, slowly: about the cap N at the mean reservation m, sd
 *   sqrt(N) s / m (s the reservation's sd; both over the sequences in flight, weighed by osl:
 *   serve_lengths.held_sd), over relaxation_s = E[osl^2 r^2] / (2 E[osl r^2]) output tokens of
 *   steps (the integrated autocorrelation of an M/G/infinity population's reserved sum, r = isl +
 *   osl); aggregated, a prompt reserves its KV when its first chunk is scheduled, so the prompts
 *   being prefilled hold lambda (delta + k T) held_prefilling_context / m of the cap N (counted at
 *   the mean reservation m; Little's law at the settled step about the batch: delta what a prompt
 *   adds to the steps, k its chunks; each reserves its own KV, the longer ones for longer), and
 *   the decoding sequences the rest, N'; where prompts' holds gather arrivals in clusters (G > 1),
 *   the sequences in excess of the occupancy's mean are for a share 1 - 1 / G those of clusters,
 *   whose holds pick long prompts, each reserving serve_lengths.held_prompt_context, so N' is
 *   reached at mean + (N' - mean) m / (m + (1 - 1 / G) (held_prompt_context - m)), the law worked
 *   out again at that cap, whole. The wait is a mixture over 15 caps c at N and -+
 *   0.5 .. 3.5 sd (a normal law's weights), each a phase of queue_wait: a request waits with the
 *   birth-death law's chance at c (1 where lambda >= X(c)); the sequences holding a cap below N
 *   are the longer ones, which leave at X_c = X(c) c / N (tests/data/kv-slot-replica.py, a
 *   replica of the simulation's admission: while requests wait, completions run 6% below X(n)
 *   and the reservation in flight 6% above its mean), so it has r / (1 - r) requests ahead at r =
 *   lambda / X_c, no more than a composition's life lets a queue near balance grow (a random walk,
 *   sqrt(2 (lambda + X_c) relaxation_s / pi), past it (lambda - X_c) relaxation_s / 2 more), and
 *   waits (ahead + 1) / X_c; alike requests: one cap, the mass past it alone, its wait by Little's
 *   law on the count queued there (queue_cluster_past_cap);
 *   waits: for a slot, and for a chunk budget (floor(dp C / c) prompts a step, an M/G/c queue)
 *   or, closed-loop or evenly spaced, a prefill instance (M/G/x of service 1 / r_p, a prompt's own
 *   batch a full one of b), Erlang C with Allen-Cunneen's (c_a^2 + c_s^2) / 2 (exact P-K at one
 *   server), its law an atom at 0 and an exponential tail (queueing.h);
 *   disaggregated, first the wait for a slot at the decode instance (the engines reserve a
 *   request's KV there before its prefill starts: SGLang's decode PreallocQueue, Dynamo
 *   routing to decode first), left out where fewer wait than SERVE_SLOT_WAIT_SHARE of those
 *   above the workload's percentile; a search sizes the prefill pool without it and works TTFT
 *   out with it where it is not left out; then, under Poisson arrivals, the router sending the
 *   requests to the x prefill instances in turn (round-robin) and each instance taking what
 *   waits, up to b prompts, the wait and the prompts of its own batch from batch_queue.h's chain
 *   (exact for one instance; a pool of more instances than BATCH_QUEUE_PHASES priced at the
 *   regularity of the fewest on its step of a grid of SERVE_REGULAR_INSTANCES steps in 1 / x,
 *   below):
 *   a batch of k prompts takes S_p(k) (kept at SERVE_PREFILL_BATCH_POINTS counts, linear
 *   between; a length mix spreads it, the sum of k prompts drawn in to the mean by sqrt(k)),
 *   a prompt's own time S_p(K) ((K - 1) isl + its own tokens) / (K isl) at its batch's K (mean
 *   -+ sd) and at the prompt bins finer toward the longest (serve_lengths), plus t_kv;
 *   TTFT's quantiles those of the wait after the own times, weighted atoms over the length-biased
 *   step (its lognormal law cut at 0.3, 0.6, 0.85, 0.95, 0.985, 0.995, 0.999, finer toward the
 *   tail that p99 reads; a length mix at 0.7, 0.95, 0.995), the share waited and K. A search that
 *   only asks whether a point meets the targets works out the target's percentile alone. Where a
 *   request may wait for a slot, TTFT meets its target only where the target's percentile also
 *   does with SERVE_SLOT_WAIT_MARGIN times as many waiting, each wait's law the same
 *   (serve_point.ttft_margin_s; a search skips a disaggregated decode batch whose wait so scaled
 *   alone passes the target).
 *   Aggregated under Poisson arrivals, the prefill queue as a Markov chain (prefill_chain.h) in
 *   place of the composition's laws and the chunk-budget queue: the prompt tokens waiting at a
 *   step's start, the step carrying at most the budget (dp C when the ranks step together, one
 *   rank's C at lambda / dp when they step alone; a prompt at most C a step where the budget is
 *   several ranks' and prompts run longer than C) at the composition's price at the occupancy's
 *   mean (above B near the compute plateau, below it where a TPOT target holds the rate under
 *   what B serves), so that runs of full steps and the queue behind
 *   them are followed; TTFT the wait for a slot, then the chain's (the rest of the step in
 *   progress, what is ahead, its own tokens, first come first served); TPOT's bins their sums' mean, variance and third moment from the chain, started
 *   where a first token leaves it, with the batch's own variation in quadrature as above. A
 *   queue that does not keep up refuses the point; where the chain cannot be built (more prompts
 *   a step than its grid follows) the laws above stand.
 * Not modelled: retries, priorities, preemption, the KV a disaggregated request holds at its
 * decode instance while its prefill runs (reserved first, as below), the variation of
 * accepted drafts, a rate-sized decode instance below its planned batch, and a router that
 * balances the prefill instances by load (round-robin is Dynamo's default; joining
 * the shortest queue shares them better where a batch costs little fixed time).
 *
 * The budget (serve_pool.budget_devices, B; 0: none): the most devices the whole deployment
 * may use, every replica and both pools counted (on one topology x n_p + y n_d <= B; a prefill
 * pool on other hardware is held to its own pool's budget, x n_p <= B_p, and the decode pool
 * to y n_d <= B_d). Aggregated: floor(B / n) replicas of the instance. Disaggregated: for each
 * y from 1 (at most SERVE_MAX_BUDGET_DECODE_INSTANCES) while the fewest x that keeps up fits,
 * the (x, y) with the most tokens/s per device, then that pair replicated as often as it fits
 * (k x P k y D). Tokens/s per device is over the devices the deployment uses (its `devices`),
 * not over the budget: devices of the budget that no instance uses are idle, and the answer
 * says how many are used of how many. Without a budget (the engine's own contract; the
 * commands always give one, see cmd_serve.c) an aggregated deployment is one instance and an
 * xPyD pair takes y up to SERVE_MAX_DECODE_INSTANCES, as large as the ratio wants. `--rate`
 * sizing (rate > 0) takes ceil(R / r) instances and misses when that exceeds the budget.
 *
 * The search (exact over what it enumerates, deterministic): per topology, instance shapes of n
 * devices (powers of two within a domain and the whole domain, those that hold the weights; with
 * a budget of B devices those up to B, B itself when it is part of one domain, then R = floor(B /
 * domain) whole domains: 2, 4, 8 ... and R; without one 2, 4, 8 ... whole domains up to
 * SERVE_DEFAULT_SPAN_DEVICES, and the fewest that hold the model if more), every
 * TP degree that divides n and the attention heads within a domain (TP 1 is data-parallel
 * attention), PP over whole domains; per layout the batches of a log grid up to what HBM holds
 * at isl + osl, plus the largest batch within the targets (bisection: step time, TPOT and TTFT
 * never fall as the batch grows) and the largest multiple of dp x pp below it (a rank's load
 * steps at those). The best point under the targets has the most tokens/s per device; ties
 * (within a part in a million) go to more tokens/s per user, fewer devices, aggregated serving,
 * then enumeration order.
 *
 * The frontier is the Pareto set of the points within the TTFT target (tokens/s per device
 * against per user), one row per operating point: two points of the same mode whose rates agree
 * within a part in a million, with the same TP, PP and batch per data-parallel rank (and on the
 * prefill side the same, and the same x : y) are one, and the one on the fewest instance devices
 * stays (a 256-device instance of 32 data-parallel replicas is the 8-device one 32 times).
 */
#ifndef RACKPLAN_SERVE_H
#define RACKPLAN_SERVE_H

/* The largest prefix hit a workload takes: a prompt computes at least a part in a thousand (its
 * last token at least, which the first output token needs). */
#define SERVE_MOST_PREFIX_HIT 0.999

#include "model.h"
#include "plan.h"
#include "queueing.h"
#include "roofline.h"
#include "topology.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct length_mix; /* lengths.h */

/* TensorRT-LLM's default max_num_tokens (its LLM API reference, nvidia.github.io/TensorRT-LLM):
 * the tokens one scheduler puts in a step. */
#define SERVE_DEFAULT_CHUNK_TOKENS 8192
/* DeepSeek's prefill profile runs 16,384 tokens a GPU (github.com/deepseek-ai/profile-data);
 * a prefill batch holds at most that many prompt tokens a DP rank (one prompt if longer). */
#define SERVE_PREFILL_TOKENS_PER_RANK 16384
#define SERVE_MAX_DECODE_INSTANCES 8
/* With a budget, the most decode instances one xPyD ratio takes before it is replicated: enough
 * for the ratio's rounding to cost under a part in a thousand of a prefill instance. */
#define SERVE_MAX_BUDGET_DECODE_INSTANCES 1024
#define SERVE_MAX_SPAN_DEVICES 65536
/* Without a cluster, instances span whole domains up to this many devices: DeepSeek's production
 * decode unit is 144 GPUs (EP144 over 18 nodes, open-infra-index day 6), the largest published;
 * 256 is the power of two above it. */
#define SERVE_DEFAULT_SPAN_DEVICES 256
#define SERVE_BATCH_POINTS 32
#define SERVE_PREFILL_POINTS 12

enum serve_mode { SERVE_AGGREGATED, SERVE_DISAGGREGATED, SERVE_BEST };

/* The percentiles every point reports: p50, p90, p99. */
#define SERVE_PERCENTILES 3
extern const double serve_percentile_levels[SERVE_PERCENTILES];

/* A length mix as the tails read it (serve_workload_set_lengths): its classes binned by output
 * length and, apart, by prompt length, each bin at its weighted mean length (exact while a mix
 * has at most SERVE_LENGTH_BINS distinct lengths), and the moments the means need. bins 0: every
 * request isl and osl. The prompts are binned twice: in even shares, and in shares finer toward
 * the longest (serve_prompt_tail_cuts: the last bin the longest 0.5%), for a disaggregated
 * prompt's TTFT, whose p99 the longest prompts set. */
#define SERVE_LENGTH_BINS 32
#define SERVE_PROMPT_BINS 8
#define SERVE_PROMPT_TAIL_BINS 16
extern const double serve_prompt_tail_cuts[SERVE_PROMPT_TAIL_BINS];
struct serve_lengths {
    int64_t bins, prompt_bins, prompt_tail_bins;
    double osl[SERVE_LENGTH_BINS], osl_weight[SERVE_LENGTH_BINS];
    double isl[SERVE_PROMPT_BINS], isl_weight[SERVE_PROMPT_BINS];
    double isl_tail[SERVE_PROMPT_TAIL_BINS], isl_tail_weight[SERVE_PROMPT_TAIL_BINS];
    double isl_second_moment;   /* E[isl^2] */
    int64_t decode_context;     /* E[osl (isl + osl / 2)] / E[osl]: the KV a decode token attends to */
    /* r = isl + the output tokens admission reserves: serve_workload.max_tokens where given, else
     * the request's own osl */
    int64_t held_context;       /* E[osl r] / E[osl]: the KV a sequence in flight reserves */
    double held_sd;             /* its standard deviation over the sequences in flight (weighed by osl) */
    double held_prompt_context; /* E[isl osl r] / E[isl osl]: the same weighed by the prompt
                                 * too, as a prompt's prefill hold brings the requests of a cluster */
    double held_prefilling_context; /* E[isl r] / E[isl]: what a prompt being prefilled
                                     * reserves, weighed by how long its prefill holds it */
    double held_relaxation_tokens; /* E[osl^2 r^2] / (2 E[osl r^2]): how long, in
                                    * output tokens, the KV reserved in flight keeps its deviations */
    double life_overlap;        /* E[min(osl1, osl2)] / E[osl] over two requests: how long two that
                                 * start together stay together, in shares of a life */
};

/* How requests arrive: a Poisson process at the served rate (open loop: MLPerf's server
 * scenario, production), evenly spaced (open loop), or a fixed number in flight, each client
 * sending its next request when its last one ends (closed loop: benchmark clients at a
 * concurrency, an offline batch). */
enum serve_arrivals { SERVE_POISSON, SERVE_CONSTANT, SERVE_CLOSED };

struct serve_workload {
    int64_t isl, osl;   /* mean prompt and output tokens a request (a mix's means, rounded) */
    struct serve_lengths lengths;
    double percentile;  /* the percentile the targets bound, (0, 100); 0: 50 */
    enum serve_arrivals arrivals; /* how requests arrive (see the header); 0: Poisson */
    double ttft_s;      /* 0: no target */
    double tpot_s;      /* 0: no target */
    double prefix_hit;  /* share of prompt tokens found in a prefix cache, [0, SERVE_MOST_PREFIX_HIT] */
    double prefix_load_s; /* a request's mean time to load its cached prefix from the tier that holds
                           * it (kvcache.h), added to its TTFT; 0: in HBM or none */
    int64_t mtp;        /* draft tokens a step; 0: none */
    double mtp_accept;  /* probability each draft token is accepted, (0, 1] */
    int64_t chunk_tokens; /* aggregated: prefill tokens a DP rank's step may carry */
    int64_t max_tokens; /* the requests' max_tokens, at least every osl, where the engine reserves a
                         * request's KV for its prompt and max_tokens when it admits it (TensorRT-LLM's
                         * default capacity scheduler, GUARANTEED_NO_EVICT); 0: for its prompt and
                         * its own output, as an engine that knew each length would. Set it before
                         * serve_workload_set_lengths, which reads it */
    enum serve_mode mode;
    double rate;        /* requests/s to size for; 0: no sizing */
    bool spread_starts; /* closed loop, alike requests: their starts spread over a life, as where
                         * isl and osl are the means of lengths that vary (a calibration row's),
                         * not the cohorts of requests started together (false, serve's) */
};

/* The percentile the workload's targets bound: w->percentile, or 50 when it is 0. */
double serve_workload_percentile(const struct serve_workload *w);

/* Whether an aggregated instance runs the workload's requests in cohorts ("Steps as they come"):
 * closed-loop, alike, started together (not spread_starts). */
bool serve_workload_in_cohorts(const struct serve_workload *w);

/* The hardware one pool runs on. */
struct serve_pool {
    const struct model *model;
    const struct topology *topology;
    struct workload precisions; /* weights, expert_weights, kv, reserve; tp and pp pinned or 0 */
    struct efficiency efficiency;
    int64_t budget_devices;     /* the most devices the deployment may use (see the header); 0: no
                                 * budget (instances span up to SERVE_DEFAULT_SPAN_DEVICES,
                                 * deployments are not capped) */
    double price_usd_per_hour;  /* per device; 0: unknown */
    double expert_imbalance;    /* max / mean routed-expert load per device (0 or 1: balanced) */
};

/* The sequences in flight of an instance as its arrivals hold them (serve.c, occupancy_of): their
 * mean and variance, how fast they relax, the step's token-weighted mean and variance and its
 * longest (at the cap), and a request's wait for a slot. Not stable: the instance cannot keep up. */
struct serve_occupancy {
    bool stable;
    double sequences_mean, sequences_variance, relaxation_s;
    double rate_elasticity; /* d ln sequences_mean / d ln lambda = relaxation_s lambda / sequences_mean:
                             * how many percent the batch moves a percent more traffic (0: held) */
    int64_t running_cap;    /* the most sequences the instance admits, the engine's running-request
                             * cap its launch files set: under Poisson arrivals what its KV holds at
                             * the held context (the law's cap, never below the batch), else the
                             * batch; 0 for a prefill instance */
    double step_mean_s, step_variance_s2, step_max_s;
    double step_third_s3;                       /* the step's third central moment over the occupancy */
    double composition_variance_s2;             /* of a step about its occupancy's mean: its prompts */
    double composition_correlation;             /* of one step's prompts with the next's (Poisson
                                                 * arrivals: a long step gathers more) */
    double prompt_delay_s;                      /* what one prompt more adds to a step */
    double composition_units, composition_clump; /* units of prompts a step carries on average, and
                                                  * the clumps they come in (0: not at random) */
    double cohort_excess_s; /* alike requests in cohorts (or one by one, K = 1, m < 1): the steps of
                             * a request's own prompt (c / u units) less their share of the mean,
                             * (c / u) (T(K) - T(0)) (1 - m / K), which its TPOT does not hold (its
                             * first token ends them); 0: none. With a cohort of r beside those of K
                             * (B = q K + r), those of K's: n (T - T(0)) - (c / u) ((q - 1) (T(K) -
                             * T(0)) + T(r) - T(0)) over the n steps of a life */
    double cohort_remainder_share;    /* the requests in that cohort of r, r / B; 0: none */
    double cohort_remainder_excess_s; /* theirs: n (T - T(0)) - (c / u) q (T(K) - T(0)) */
    double step_quantile_s[SERVE_PERCENTILES + 1]; /* the occupancy's at p50, p90, p99, the workload's */
    double wait_probability, mean_wait_s; /* a request's wait for a slot at the KV cap */
    int slot_caps; /* the caps that wait is a mixture over (the wait for a slot): 1 for alike requests */
    double idle_probability; /* that no sequence is in flight (Poisson: pi(0); else 0) */
};

/* Under Poisson arrivals a prefill batch's time is kept at this many prompt counts from 1 to the
 * batch (all of them when fewer), for the pool's queue (batch_queue.h), linear between; else at
 * the batch alone. */
#define SERVE_PREFILL_BATCH_POINTS 8
/* Where prompt lengths vary a prefill batch's time is also kept at this many lengths a prompt
 * other than the mean's (the shortest prompt bin's, and the longest tail bin's and two between,
 * evenly in its log), linear between: a batch's time is its prompts' step at their tokens, which
 * where the weights' read binds does not grow with them (serve_prefill_batch_at). */
#define SERVE_PREFILL_LENGTH_POINTS 4
/* Under Poisson arrivals and a TTFT target, the fewest prefill instances are sought from those
 * that keep the pool at most this busy (of what full batches serve): beyond it a prompt waits
 * many batches (M/D/1 at 0.97: 16 services on average), which no TTFT target a deployment is
 * planned for allows, and the pool's chain is long to work out. */
#define SERVE_PREFILL_TARGET_USE 0.97

/* From BATCH_QUEUE_PHASES prefill instances on, a round-robin pool is priced at the regularity of
 * the instances on a grid of this many steps in 1 / x (serve.c, priced_instances), and a search
 * finds where each grid point stops meeting a TTFT target, by one instance's share of the
 * arrivals, to this relative precision (a share within it of that edge is worked out at itself). */
#define SERVE_REGULAR_INSTANCES 256
#define SERVE_SHARE_PRECISION 1e-4
/* Under Poisson arrivals a point whose decode batch moves more than this many percent for a percent
 * more traffic (serve_occupancy.rate_elasticity) does not meet the targets: on the compute plateau
 * the step grows nearly as fast as the batch, the departures hardly rise with it, and the batch
 * wanders over hundreds of lives (the simulation of Llama 2 70B's MLPerf mix at elasticity 29 puts
 * 317, 505 and 459 sequences in flight over 10^5, 10^6 and 4 x 10^6 requests). Its latency is
 * then only as good as the step's price to a part in a thousand, or the traffic's rate; at 5 a
 * percent's error in either moves the batch by at most 5%, half the 10% the analysis is held to
 * (at 10 the Llama 2 mix took batch 233 at 9.7, TPOT p50 20% above the simulation's). The shipped
 * examples otherwise run at 0.6 to 3. */
#define SERVE_MOST_RATE_ELASTICITY 5.0
/* A decode instance's wait for a KV slot is left out of a disaggregated TTFT where fewer requests
 * wait than this share of those above the workload's percentile (at p99, 1 in 10,000): it moves
 * that percentile no further than to the next 1% of the tail above it (p99 to p99.01). */
#define SERVE_SLOT_WAIT_SHARE 0.01
/* Where a request may wait for a KV slot, TTFT's target is met only where it also holds with this
 * many times as many requests waiting (the same waits): near the percentile's share the waiters
 * decide it, a cliff between a prefill's time and seconds of waiting, and the chance itself is not
 * known that well (the simulation of the MLPerf DeepSeek-R1 mix at batch 263, where the analysis
 * has 1.3% waiting: 1.76% and 0.97% over 1,000,000 requests of seeds 1 and 2, and TTFT p99 6.1 s
 * and 64 ms). */
#define SERVE_SLOT_WAIT_MARGIN 2.0

struct serve_instance {
    struct layout layout;
    struct serve_occupancy occupancy; /* decode: at the instance's own served rate */
    struct queue_wait slot_wait;      /* decode: a request's wait for a KV slot there (disaggregated,
                                       * the first of TTFT's waits; none where rarer than
                                       * SERVE_SLOT_WAIT_SHARE allows) */
    int64_t batch;         /* sequences (decode, aggregated) or prompts a batch (prefill) */
    double step_s;         /* a step, or a prefill batch */
    double requests_per_s; /* one instance */
    struct roof_point point; /* the step's terms */
    int batch_points;      /* prefill: a batch of batch_prompts[i] prompts takes batch_times_s[i] */
    int64_t batch_prompts[SERVE_PREFILL_BATCH_POINTS];
    double batch_times_s[SERVE_PREFILL_BATCH_POINTS];
    /* prefill, prompts whose lengths vary: a batch of batch_prompts[i] prompts each of
     * length_ratio[j] times the mean's computed tokens takes length_times_s[i][j] (ratios rising,
     * 1 not among them: that is batch_times_s); none (length_points 0) for prompts alike */
    int length_points;
    double length_ratio[SERVE_PREFILL_LENGTH_POINTS];
    double length_times_s[SERVE_PREFILL_BATCH_POINTS][SERVE_PREFILL_LENGTH_POINTS];
};

/* A point's times at serve_percentile_levels and their means; ttft_s and tpot_s in serve_point are
 * these at the workload's percentile. */
struct serve_tail {
    double ttft_s[SERVE_PERCENTILES], tpot_s[SERVE_PERCENTILES];
    double ttft_mean_s, tpot_mean_s;
    double prefill_wait_s; /* the mean wait for a slot and a prefill server (chunk budget or pool) */
    double sequences_mean; /* sequences in flight an instance, on average */
    double sequences_sd;   /* and their sd over time (0 when the batch is held fixed) */
    double sequences_rate_elasticity; /* serve_occupancy.rate_elasticity of the decode instance */
    double slot_wait_probability; /* the chance a request waits for a KV slot (the wait for a slot
                                   * above): aggregated, before its prefill; disaggregated, at the
                                   * decode pool, before its prefill too (TTFT's first wait) */
};

struct serve_point {
    enum serve_mode mode;            /* aggregated or disaggregated */
    struct serve_instance decode;    /* aggregated: the one pool */
    struct serve_instance prefill;   /* disaggregated */
    int64_t decode_instances, prefill_instances; /* aggregated: prefill_instances 0; with a budget
                                                  * the replicas that fit in it */
    int64_t devices;                 /* of those instances: the devices the deployment uses */
    double ttft_s, tpot_s;           /* at the workload's percentile */
    struct serve_tail tail;
    double kv_transfer_s;            /* disaggregated */
    bool kv_over_scale_up;
    double prefill_use;              /* rho of the prefill budget or pool */
    double tokens_per_s_per_device;  /* output tokens, over every device the deployment uses */
    double tokens_per_s_per_user;
    double decode_tokens_per_s_per_device;
    double cost_per_mtok;            /* USD per million output tokens; 0: a price unknown */
    double joules_per_token;         /* 0: a power unknown */
    double ttft_margin_s;            /* TTFT at the workload's percentile with SERVE_SLOT_WAIT_MARGIN
                                      * times as many waiting for a KV slot (0: none waits) */
    bool meets;                      /* within both targets (TTFT with the slot's margin too), and
                                      * settled (SERVE_MOST_RATE_ELASTICITY); with no TTFT target,
                                      * TTFT's percentile not on waits for KV slots
                                      * (serve_ttft_on_slot_waits) */
    bool unsettled;                  /* its batch past SERVE_MOST_RATE_ELASTICITY: it does not meet */
    double prefill_arrivals_per_s;   /* disaggregated: the requests/s into the prefill pool */
    bool ttft_deferred;              /* within a search only: TTFT not yet worked out (the pool
                                      * was sized to the TTFT target, or there is none, so the
                                      * search decides nothing on it); every point a search
                                      * returns has it */
};

struct serve_result {
    bool fits;               /* some instance within the budget holds the weights and one sequence
                              * of isl + osl tokens (and, with a prefill pool on other hardware,
                              * one there holds a prompt) */
    int64_t min_devices;     /* when it does not: the fewest devices of the decode (or, with
                              * prefill_short, the prefill) topology that hold them, as `fit` counts
                              * (plan_fit); 0: none up to PLAN_MAX_RACKS domains */
    bool prefill_short;      /* the prefill pool on other hardware is what does not fit */
    bool found;              /* some point meets the targets */
    struct serve_point best;
    /* The fewest devices whose point meets the targets at SERVE_NEAR_BEST of best's tokens/s per
     * device or more (ties to the better point): a search without a budget finds its best in
     * thousands of devices when a finer prefill-to-decode ratio or a wider instance gains a few
     * percent, and this is where most of that gain is already had. Found with best. */
    struct serve_point near_best;
    struct serve_point *frontier; /* Pareto points over both modes, most tokens/s per device first */
    int64_t frontier_count;
    struct serve_point *mode_frontier[2]; /* the same for each mode alone */
    int64_t mode_frontier_count[2];
    int64_t layouts, points; /* layouts tried, points evaluated */
    bool sized;              /* a rate was given and some deployment serves it */
    struct serve_point sized_point; /* the fewest devices for the rate */
    /* Whatever the targets, the points with the lowest TPOT and the lowest TTFT evaluated, and
     * the lowest TPOT among those within the TTFT target (reached false: no point evaluated;
     * tpot_within_ttft false: none within it): what serve_binding_target reports. A search does
     * not work out the TTFT of a pool it sized to the target (ttft_deferred), so where one was,
     * lowest_ttft is one such point, within the target, not the lowest. */
    bool reached, tpot_within_ttft;
    struct serve_point lowest_tpot, lowest_ttft, lowest_tpot_within_ttft;
    /* The best point within both targets whose batch does not settle (SERVE_MOST_RATE_ELASTICITY),
     * left out of best and the frontiers; unsettled false: none was evaluated. */
    bool unsettled;
    struct serve_point unsettled_best;
};

#define SERVE_NEAR_BEST 0.95

enum serve_binding { SERVE_BINDS_NONE, SERVE_BINDS_TPOT, SERVE_BINDS_TTFT, SERVE_BINDS_BOTH };

/* Which target keeps every point out when none meets them: TPOT when no point reaches it
 * (*reachable: the point with the lowest TPOT), else TTFT when no point reaches it (the lowest
 * TTFT), else the two together (the lowest TPOT within the TTFT target, or NULL when no point is
 * within it). SERVE_BINDS_NONE when some point meets them, no target is set or nothing was
 * evaluated. */
enum serve_binding serve_binding_target(const struct serve_workload *w, const struct serve_result *r,
                                        const struct serve_point **reachable);

/* What keeps a point from meeting the targets, as a reader would say it ("misses TPOT", "misses
 * TTFT with twice the KV-slot waits", "does not settle", "beyond the budget", ...); NULL where it
 * meets them. */
const char *serve_point_misses(const struct serve_workload *w, const struct serve_point *p);

/* Sets w's isl and osl to the mix's means and w->lengths to its summary (see serve_lengths). */
void serve_workload_set_lengths(struct serve_workload *w, const struct length_mix *m);

/* The mean KV a decode token attends to, isl + osl / 2 (a mix: E[osl (isl + osl / 2)] / E[osl]),
 * and the KV a sequence in flight holds room for, isl + osl (a mix: E[osl (isl + osl)] / E[osl]):
 * long outputs stay in the batch longer. */
int64_t serve_decode_context(const struct serve_workload *w);
int64_t serve_held_context(const struct serve_workload *w);

/* The expected tokens a decode step yields a sequence: 1 + P + ... + P^K. */
double serve_tokens_per_step(const struct serve_workload *w);

/* One aggregated instance of layout `l` (graph `g`) with `batch` sequences. False when the batch
 * does not fit in HBM at isl + osl or its prefill exceeds the chunk budget. */
bool serve_aggregated(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                      const struct serve_workload *w, int64_t batch, struct serve_point *out);

/* Output tokens/s per device of an aggregated instance at `batch`, its step as it comes (the
 * prompts that join it, see the header) as serve_aggregated prices it, without the tails; whether
 * the batch fits is not asked. */
double serve_aggregated_rate(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                             const struct serve_workload *w, int64_t batch);

/* The same step as a roofline point whatever the batch: its terms, step_s, tokens_per_s counting
 * output tokens (y B / T) and per device, cost per million of them; fits false when the batch
 * does not fit at isl + osl or its prefill exceeds the chunk budget. */
void serve_aggregated_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                           const struct serve_workload *w, int64_t batch, struct roof_point *out);

/* A decode step (no prefill) of `batch` sequences as a roofline point: tokens_per_s counts output
 * tokens (y B / T); fits false when the batch does not fit at isl + osl. */
void serve_decode_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                       const struct serve_workload *w, int64_t batch, struct roof_point *out);

/* One decode instance (no prefill) and one prefill instance of a disaggregated deployment. False
 * when the batch does not fit. */
bool serve_decode_instance(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                           const struct serve_workload *w, int64_t batch, struct serve_instance *out);
bool serve_prefill_instance(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t prompts, struct serve_instance *out);

/* A prefill instance's batch of k prompts (fractional between the kept counts) whose mean length
 * is `ratio` times the workload's mean: the step of k prompts of that length (their tokens and the
 * context they attend to), linear between the kept counts and lengths, on along the last two
 * lengths above them and the shortest's time below; more prompts than the instance's batch (short
 * ones a token budget packs together, as the simulation's batches do) as the batch's count at the
 * same tokens. It is not
 * the mean's batch scaled by its tokens: where the weights' read binds that was wrong both ways
 * (DeepSeek-V3 on 4 GB300s at data-parallel attention: one prompt of the DeepSeek-R1 mix's mean
 * 804 tokens or of its longest bin's 1,487 takes 22.5 ms, scaled 41.6; eight of 100 tokens 22.5
 * ms, scaled 3.1); where compute binds the two agree. Prompts alike (length_points 0): the mean's
 * batch times ratio. The pool's chain (round-robin, the batch's prompts drawn in to the mean by
 * sqrt(k)), a prompt's own batch and the simulation's batches all read it. */
double serve_prefill_batch_at(const struct serve_instance *p, double k, double ratio);

/* A prefill batch of `prompts` prompts as a roofline point: tokens_per_s counts computed prompt
 * tokens; fits false when a DP rank would take more than SERVE_PREFILL_TOKENS_PER_RANK tokens
 * (one prompt if longer) or the prompts do not fit at isl. */
void serve_prefill_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                        const struct serve_workload *w, int64_t prompts, struct roof_point *out);

/* Seconds to move one request's KV from a prefill to a decode instance (see the header). */
double serve_kv_transfer_s(const struct serve_pool *prefill, const struct layout *pl, const struct serve_pool *decode,
                           const struct layout *dl, const struct serve_workload *w, bool *over_scale_up);

/* A disaggregated point from a prefill and a decode instance: with rate 0 the best xPyD for
 * tokens/s per device within the TTFT target and the pools' budget (replicated as often as it
 * fits, see the header), else the fewest instances that serve `rate` (meets false when they
 * exceed the budget). The pools share one budget, the decode pool's, when they are on one
 * topology (the same pointer). False when the TTFT target cannot be met or, at rate 0, no pair
 * fits in the budget. */
bool serve_disaggregated(const struct serve_pool *prefill_pool, const struct serve_instance *prefill,
                         const struct serve_pool *decode_pool, const struct serve_instance *decode,
                         const struct serve_workload *w, double rate, struct serve_point *out);

/* The largest aggregated batch in [1, most] on layout `l` that fits and meets the targets (step
 * time, TPOT and TTFT never fall as the batch grows); 0: none. */
int64_t serve_largest_batch(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t most);

/* The largest batch in [1, most] of a decode instance (no prefill) on layout `l` that fits and
 * meets the TPOT target; 0: none. */
int64_t serve_largest_decode_batch(const struct serve_pool *pool, const struct graph_summary *g,
                                   const struct layout *l, const struct serve_workload *w, int64_t most);

/* The search. `prefill_pool` NULL: prefill runs on the decode pool's hardware. False when out of
 * memory (the interconnect graph or the frontier); otherwise `out` is filled (found false when
 * nothing meets the targets) and must be released. */
bool serve_search(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                  const struct serve_workload *w, struct serve_result *out);

/* The same for its best, near_best and sized points only: an aggregated layout is tried at its
 * largest batch within the targets (tokens/s per device, and so a replica's rate, rise with the
 * batch) and at the fewest sequences that make as much within a part in a million (where compute
 * binds the rate is flat: those serve as much with more per user), not along its log grid; and
 * without a rate, once a point meets the targets, nothing
 * that cannot reach SERVE_NEAR_BEST of the best so far is worked out: not an aggregated layout
 * whose fewest sequences that reach it miss the targets (no larger batch meets them), nor a
 * disaggregated batch whose step makes too few tokens even with the fewest prefill devices that
 * keep up with it (r_d osl / (n_d + n_p r_d / r_p)). So the frontiers and the lowest_* points hold
 * those points only and `points` counts fewer. For what more hardware buys, where every point on
 * a grid would cost as much as the search the answer prints. */
bool serve_search_best(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                       const struct serve_workload *w, struct serve_result *out);

/* A search on a helper thread, so that independent searches (serve's answer, the bound's beside
 * an estimate, and what more hardware buys) use the cores there are: serve_background_start runs
 * serve_search, or with best_only serve_search_best, into *out on a new thread (or, when none can
 * be started, at the join); serve_background_join waits for it and returns what the search
 * returned. The pools and the workload must outlive the join. Searches share nothing but
 * graph.c's calls into igraph, which it serializes, and their memos are the thread's own: the
 * answer is the one the search gives alone. */
struct serve_background {
    const struct serve_pool *decode_pool, *prefill_pool;
    const struct serve_workload *w;
    bool best_only, started, ok;
    struct serve_result *out;
    pthread_t thread; /* where started */
};
void serve_background_start(struct serve_background *b, const struct serve_pool *decode_pool,
                            const struct serve_pool *prefill_pool, const struct serve_workload *w, bool best_only,
                            struct serve_result *out);
bool serve_background_join(struct serve_background *b);

void serve_result_release(struct serve_result *r);

/* One prompt of `tokens` computed tokens prefilled alone on an instance of layout `l` (its slice
 * of the pool's topology): roof_step of one sequence at half its length of context; 0 for no
 * tokens or a shape that cannot be built. */
double serve_prompt_prefill_s(const struct serve_pool *pool, const struct layout *l, double tokens);

/* HBM left on the most loaded device of an instance of layout `l` holding `batch` sequences at
 * the workload's held context (plan_memory's free bytes, 0 when none). */
double serve_free_hbm_bytes(const struct serve_pool *pool, const struct layout *l, const struct serve_workload *w,
                            int64_t batch);

/* The paged KV block the simulation admits requests by: vLLM's default block_size (its engine
 * arguments, docs.vllm.ai) and SGLang's page size of 1 rounded to it. */
#define SERVE_KV_BLOCK_TOKENS 16

enum serve_sim_status { SERVE_SIM_OK, SERVE_SIM_NO_MEMORY, SERVE_SIM_INVALID };

/* Whether the TTFT percentile the workload's targets bound (w->percentile) is set by the wait for
 * a KV slot: at least 1 / SERVE_SLOT_WAITS_NEAR of the requests above that percentile wait for one,
 * P(wait) >= (1 - P / 100) / SERVE_SLOT_WAITS_NEAR (serve_tail.slot_wait_probability). Aggregated,
 * TTFT's percentile then sits on a cliff (a prefill's time or seconds of waiting) which a few
 * tenths of a percent more waiting move (README, "Tail latency": Llama 3.1 405B at 4,096/685 with
 * an FP8 KV cache, +4% at the batch its targets allow, 2.3 times the simulation's past it; the
 * MLPerf Llama 3.1 405B mix, -5% to -7%; the MLPerf DeepSeek-R1 mix, whose simulation's own p99
 * is 59 ms over 4,000,000 requests and 1,096 ms over the first 1,000,000); disaggregated, the wait
 * is the decode pool's, which the engines take before prefill. Either way `serve` says to
 * simulate it and `compare` marks the row. */
#define SERVE_SLOT_WAITS_NEAR 4
bool serve_ttft_on_slot_waits(const struct serve_workload *w, const struct serve_point *p);

/* Whether point `p` is served where the analysis has stood furthest from the simulation (README,
 * "Tail latency", "Not modelled"): aggregated, under Poisson arrivals, prompts whose mean computed
 * tokens pass a rank's chunk budget, on data-parallel ranks that step together (an MoE model's,
 * dp > 1). A step's chunks are taken as clumped Poisson units there, and TPOT has come 5% to 20%
 * below the simulation's, the sequences in flight with it (DeepSeek-V3 at 16,000/1,000 on a GB200
 * NVL72, 4 x TP 4 x DP 4: TPOT p50 -10%, 297 sequences against 341; at 20,000/1,000 on 8 H200
 * ranks: p50 -9%, p99 -13%). `serve` says so and to simulate it. */
bool serve_chunks_on_ranks_in_step(const struct model *m, const struct serve_workload *w, const struct serve_point *p);
/* The chunks a mean prompt's computed tokens fill: isl (1 - prefix_hit) / chunk_tokens. */
double serve_prompt_chunks(const struct serve_workload *w);

/* The requests a simulation of point `p` needs before what it measures is the steady state: its
 * warm-up, a fifth of them, spanning SERVE_SIM_SETTLE times the longer of a request's life (its
 * mean TTFT and osl - 1 tokens at the mean TPOT) and the decode occupancy's relaxation time
 * (serve_occupancy.relaxation_s: near the compute plateau, where the batch drifts slowly, far
 * longer than a life), at the point's arrival rate (w->rate, or what it serves). */
#define SERVE_SIM_SETTLE 2
struct serve_settling {
    double life_s, relaxation_s;
    int64_t requests; /* INT64_MAX: beyond counting */
};
struct serve_settling serve_simulation_settles(const struct serve_workload *w, const struct serve_point *p);

struct sim_result;
/* Simulates point `p` of a search for `requests` requests after requests / 5 of warm-up
 * (simulate.h: continuous batching with chunked prefill, or the P/D pools; Poisson arrivals at the
 * point's served rate, or w->rate; the mix's lengths, or isl and osl): each instance admits what
 * its KV holds (the most sequences of the workload's mean reservation that fit in HBM, in tokens,
 * paged in SERVE_KV_BLOCK_TOKENS blocks). A step is priced by roof_step at its exact batch, on the
 * instance's layout and pool. Where the ranks meet (or there is one), the simulation's ranks are
 * the layout's dp, each holding a dp-th of the KV (aggregated or decode) and with the chunk budget
 * C, taking the requests in turn, and a step that carries prompts is roof_step's at its prompt
 * tokens, its busiest rank's and their context; where a dense model's ranks step on their own,
 * under Poisson arrivals each rank is an instance of its own (a dp-th of the KV, the budget C, its
 * requests the stream thinned, a step of b sequences the instance's at dp b, every rank alike), and
 * otherwise one queue with the budget dp C, a step's prompt tokens spread over the ranks as the
 * composition's whole counts, linear between. The decode context enters linearly about the
 * workload's mean (the derivative from one more roof_step at that batch, cached); a prefill batch
 * as the analysis prices it on the point's prefill instance (serve_prefill_batch_at, whatever
 * hardware that instance is on). Deterministic for a seed. */
enum serve_sim_status serve_simulate(const struct serve_pool *decode_pool, const struct serve_workload *w,
                                     const struct length_mix *mix, const struct serve_point *p, int64_t requests,
                                     uint64_t seed, struct sim_result *out);

const char *serve_mode_name(enum serve_mode mode);
const char *serve_arrivals_name(enum serve_arrivals arrivals);
/* "tpot", "ttft", "both"; NULL for SERVE_BINDS_NONE (JSON's null). */
const char *serve_binding_name(enum serve_binding binding);

#endif
