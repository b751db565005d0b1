/* serve.c: see serve.h. */
#include "serve.h"

#include "arith.h"
#include "graph.h"
#include "batch_queue.h"
#include "lengths.h"
#include "prefill_chain.h"
#include "queueing.h"
#include "simulate.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const char *serve_mode_name(enum serve_mode mode)
{
    static const char *const names[] = {"aggregated", "disaggregated", "best"};
    return names[mode];
}

const char *serve_arrivals_name(enum serve_arrivals arrivals)
{
    static const char *const names[] = {"poisson", "constant", "closed"};
    return names[arrivals];
}

const char *serve_binding_name(enum serve_binding binding)
{
    static const char *const names[] = {NULL, "tpot", "ttft", "both"};
    return names[binding];
}

double serve_tokens_per_step(const struct serve_workload *w)
{
    if (w->mtp <= 0)
        return 1;
    double p = w->mtp_accept, tokens = 1, term = 1;
    for (int64_t i = 0; i < w->mtp; i++) {
        term *= p;
        tokens += term;
    }
    return tokens;
}

const double serve_percentile_levels[SERVE_PERCENTILES] = {50, 90, 99};

/* ---- the requests' lengths ---- */

struct weighted {
    double value, weight;
};

static int compare_weighted(const void *a, const void *b)
{
    double x = ((const struct weighted *)a)->value, y = ((const struct weighted *)b)->value;
    return (x > y) - (x < y);
}

/* The prompt bins a disaggregated prompt's own time is read at: finer where TTFT's percentiles
 * are read (a twentieth about the median, p90 and p99 each in a bin's middle), for a level at a
 * bin's edge reads the bin above or below it whole: with tenths and p90 and p99 on edges, the
 * Azure code mix's TTFT p50 was 7% above 100,000 simulated requests, now within 1%. */
const double serve_prompt_tail_cuts[SERVE_PROMPT_TAIL_BINS] = {0.1, 0.2,  0.3,  0.4,  0.45,  0.5,   0.55, 0.6,
                                                                0.7, 0.82, 0.88, 0.92, 0.96, 0.985, 0.995, 1};

/* Bins `n` weighted values (weights summing to 1) into at most `most`: equal values merged, then,
 * when more remain, each value in the bin its cumulative midpoint falls in, the bins of equal
 * weight or, given `cuts` (most increasing shares, the last 1), bin i up to cuts[i]; a bin at its
 * weighted mean. Returns the bins (those with weight). `items` is sorted in place. */
static int64_t bin_lengths(struct weighted *items, int64_t n, int64_t most, const double *cuts, double *value,
                           double *weight)
{
    qsort(items, (size_t)n, sizeof *items, compare_weighted);
    int64_t distinct = 0;
    for (int64_t i = 0; i < n; i++)
        distinct += i == 0 || items[i].value != items[i - 1].value;
    int64_t bins = distinct <= most ? distinct : most, b = -1;
    double below = 0, last = -1;
    for (int64_t i = 0; i < bins; i++)
        value[i] = weight[i] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t to;
        if (distinct <= most)
            to = items[i].value != last ? ++b : b;
        else if (cuts) /* the first bin whose cut is above the item's middle share */
            for (to = 0; to < most - 1 && below + items[i].weight / 2 >= cuts[to]; to++)
                ;
        else
            to = (int64_t)fmin((double)most - 1, floor((below + items[i].weight / 2) * (double)most));
        last = items[i].value;
        below += items[i].weight;
        value[to] += items[i].value * items[i].weight;
        weight[to] += items[i].weight;
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < bins; i++) {
        if (weight[i] <= 0)
            continue;
        value[kept] = value[i] / weight[i];
        weight[kept++] = weight[i];
    }
    return kept;
}

/* E[min(S1, S2)] / E[S] of two independent draws of the weighted values, sorted by value (weights
 * summing to 1): a pair's minimum is the earlier one's value, so each value counts its own weight
 * squared and twice its weight times all the weight after it. */
static double lives_overlap(const struct weighted *sorted, int64_t n)
{
    double after = 1, together = 0, mean = 0;
    for (int64_t i = 0; i < n; i++) {
        after = fmax(after - sorted[i].weight, 0);
        together += sorted[i].weight * sorted[i].value * (sorted[i].weight + 2 * after);
        mean += sorted[i].weight * sorted[i].value;
    }
    return mean > 0 ? together / mean : 1;
}

/* The output tokens admission reserves a request of `osl`: the workload's max_tokens where given
 * (serve_workload.max_tokens), else its own. */
static int64_t reserved_output(const struct serve_workload *w, int64_t osl)
{
    return w->max_tokens > 0 ? w->max_tokens : osl;
}

void serve_workload_set_lengths(struct serve_workload *w, const struct length_mix *m)
{
    struct serve_lengths *s = &w->lengths;
    memset(s, 0, sizeof *s);
    struct weighted *items = xmalloc((size_t)m->count * sizeof *items);
    double total = 0, isl = 0, osl = 0, isl2 = 0, decode = 0, held = 0, held2 = 0, held2_long = 0, both = 0,
           held_both = 0, held_prefilling = 0;
    for (int64_t i = 0; i < m->count; i++)
        total += m->classes[i].weight;
    for (int64_t i = 0; i < m->count; i++) {
        const struct length_class *c = &m->classes[i];
        double p = c->weight / total, in = (double)c->isl, out = (double)c->osl,
               reserved = (double)reserved_output(w, c->osl);
        isl += p * in;
        osl += p * out;
        isl2 += p * in * in;
        decode += p * out * (in + out / 2);
        held += p * out * (in + reserved);
        held2 += p * out * (in + reserved) * (in + reserved);
        held2_long += p * out * out * (in + reserved) * (in + reserved);
        both += p * in * out;
        held_both += p * in * out * (in + reserved);
        held_prefilling += p * in * (in + reserved);
        items[i] = (struct weighted){out, p};
    }
    s->bins = bin_lengths(items, m->count, SERVE_LENGTH_BINS, NULL, s->osl, s->osl_weight);
    s->life_overlap = lives_overlap(items, m->count);
    for (int64_t i = 0; i < m->count; i++)
        items[i] = (struct weighted){(double)m->classes[i].isl, m->classes[i].weight / total};
    s->prompt_bins = bin_lengths(items, m->count, SERVE_PROMPT_BINS, NULL, s->isl, s->isl_weight);
    s->prompt_tail_bins =
        bin_lengths(items, m->count, SERVE_PROMPT_TAIL_BINS, serve_prompt_tail_cuts, s->isl_tail, s->isl_tail_weight);
    free(items);
    s->isl_second_moment = isl2;
    s->decode_context = (int64_t)llround(decode / osl);
    s->held_context = (int64_t)llround(held / osl);
    s->held_sd = sqrt(fmax(held2 / osl - (held / osl) * (held / osl), 0));
    s->held_prompt_context = both > 0 ? held_both / both : held / osl;
    s->held_prefilling_context = isl > 0 ? held_prefilling / isl : held / osl;
    s->held_relaxation_tokens = held2 > 0 ? held2_long / (2 * held2) : 0;
    w->isl = (int64_t)llround(isl) > 0 ? (int64_t)llround(isl) : 1;
    w->osl = (int64_t)llround(osl) > 0 ? (int64_t)llround(osl) : 1;
}

static double prefilled_tokens(const struct serve_workload *w)
{
    return (double)w->isl * (1 - w->prefix_hit);
}

int64_t serve_decode_context(const struct serve_workload *w)
{
    return w->lengths.bins > 0 ? w->lengths.decode_context : w->isl + w->osl / 2;
}

int64_t serve_held_context(const struct serve_workload *w)
{
    return w->lengths.bins > 0 ? w->lengths.held_context : w->isl + reserved_output(w, w->osl);
}

/* A prompt token computed in prefill attends on average to the cached prefix and half of the
 * rest. */
static int64_t prefill_context(const struct serve_workload *w)
{
    int64_t context = (int64_t)llround((double)w->isl - prefilled_tokens(w) / 2);
    return context > 0 ? context : 1;
}

static struct roof_setup setup_of(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l)
{
    return (struct roof_setup){.model = pool->model, .topology = pool->topology, .graph = g, .layout = *l,
                               .workload = pool->precisions, .efficiency = pool->efficiency,
                               .expert_imbalance = pool->expert_imbalance};
}

/* Whether `sequences` sequences (or prompts) of `context` tokens fit in HBM on layout `l`. */
static bool holds(const struct serve_pool *pool, const struct topology *t, const struct layout *l, int64_t sequences,
                  int64_t context)
{
    struct workload w = pool->precisions;
    w.batch = sequences;
    w.context = context;
    struct device_memory mem;
    plan_memory(pool->model, t, l, &w, &mem);
    return mem.free_bytes >= 0;
}

/* The last answer a thread gave, for the search asks the same of a layout batch after batch; compared
 * byte for byte, so a hit is the same question. */
struct held_memo {
    bool valid;
    const struct model *model;
    struct topology topology;
    struct layout layout;
    struct workload workload;
    int64_t sequences;
};
static _Thread_local struct held_memo last_held;

/* The most sequences (or prompts) of `context` tokens that fit in HBM on layout `l`. */
static int64_t most_held(const struct serve_pool *pool, const struct topology *t, const struct layout *l,
                         int64_t context)
{
    struct workload w = pool->precisions;
    w.context = context;
    struct held_memo *m = &last_held;
    if (m->valid && m->model == pool->model && memcmp(&m->layout, l, sizeof *l) == 0 &&
        memcmp(&m->workload, &w, sizeof w) == 0 && memcmp(&m->topology, t, sizeof *t) == 0)
        return m->sequences;
    m->sequences = plan_max_batch(pool->model, t, l, &w);
    m->model = pool->model;
    memcpy(&m->topology, t, sizeof *t);
    m->layout = *l;
    m->workload = w;
    m->valid = true;
    return m->sequences;
}

static double cost_per_mtok(double usd_per_hour_all, double tokens_per_s)
{
    return usd_per_hour_all > 0 && tokens_per_s > 0 ? usd_per_hour_all / 3600 / tokens_per_s * 1e6 : 0;
}

/* A step's rates from the tokens it makes: in all, per device of layout `l`, and their cost. */
static void set_rates(const struct serve_pool *pool, const struct layout *l, double tokens, struct roof_point *out)
{
    out->tokens_per_s = tokens / out->step_s;
    out->tokens_per_s_per_device = out->tokens_per_s / (double)l->devices;
    out->cost_per_mtok = cost_per_mtok(pool->price_usd_per_hour * (double)l->devices, out->tokens_per_s);
}

/* The requests a second `batch` sequences finish at a step of `step_s`: y tokens each a step, osl
 * tokens a request. */
static double finished_per_s(const struct serve_workload *w, int64_t batch, double step_s)
{
    return serve_tokens_per_step(w) * (double)batch / step_s / (double)w->osl;
}

/* A step of `batch` decode sequences (K + 1 tokens each with K drafts) and `prefill` prompt
 * tokens spread over the ranks, as whole prompts' worth of chunks at the mean prefill context. */
static struct roof_step mixed_step(const struct serve_workload *w, int64_t batch, double prefill)
{
    double computed = prefilled_tokens(w), drafts = (double)(w->mtp > 0 ? w->mtp : 0);
    return (struct roof_step){.sequences = (double)batch, .tokens_per_sequence = 1 + drafts, .draft_passes = drafts,
                              .context = serve_decode_context(w), .prefill_prompts = computed > 0 ? prefill / computed : 0,
                              .prefill_tokens_per_prompt = computed, .prefill_context = prefill_context(w)};
}

/* The prompt tokens an aggregated step of `batch` sequences carries: y B isl_eff / osl. */
static double step_prefill_tokens(const struct serve_workload *w, int64_t batch)
{
    return serve_tokens_per_step(w) * (double)batch * prefilled_tokens(w) / (double)w->osl;
}

/* The aggregated step of `batch` sequences; *rank_prefill gets the prefill tokens a DP rank's
 * step carries. */
static void aggregated_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t batch, struct roof_point *out,
                            double *rank_prefill)
{
    double prefill = step_prefill_tokens(w, batch);
    *rank_prefill = prefill / (double)l->dp;
    struct roof_setup s = setup_of(pool, g, l);
    struct roof_step step = mixed_step(w, batch, prefill);
    roof_step(&s, &step, out);
    set_rates(pool, l, serve_tokens_per_step(w) * (double)batch, out);
}

/* An aggregated prompt's own steps, those that carry its chunks: the first beside the decode batch
 * alone (the prompts that come with it are the composition's, aggregated_tails), the others beside
 * the step's mean prefill spread over the ranks; each chunk on its rank, which then paces the step.
 * Each costs at least the chunk alone, so the sum is never less than the prompt's prefill alone on
 * the instance. Full chunks after the first are priced as that many steps at their mean context,
 * one roof_step instead of one a chunk (a 256k prompt has 32): a step's terms are linear in the
 * chunk's context, so this is exact while one term binds every chunk, below the sum where the
 * binding term changes along the prompt (a max of linear terms is convex), above it where a
 * window or DSA's top-k caps the keys (concave); a prompt of one or two chunks is priced exactly. */
static void chunk_point(const struct roof_setup *s, const struct serve_workload *w, int64_t batch, double prefill,
                        double tokens, double context, struct roof_point *out)
{
    struct roof_step step = mixed_step(w, batch, fmax(prefill - tokens, 0));
    step.chunk_tokens = tokens;
    step.chunk_context = (int64_t)llround(context);
    roof_step(s, &step, out);
}

static double chunk_step_s(const struct roof_setup *s, const struct serve_workload *w, int64_t batch, double prefill,
                           double tokens, double context)
{
    struct roof_point r;
    chunk_point(s, w, batch, prefill, tokens, context, &r);
    return r.step_s;
}

/* The prompt tokens a step carries beside a given request's later chunks: at random arrivals the
 * mean (what arrives does not see itself); closed-loop the other batch - 1 sequences' share of it
 * (a prefill-bound instance's one sequence has none beside it). */
static double others_prefill_tokens(const struct serve_workload *w, int64_t batch)
{
    double mean = step_prefill_tokens(w, batch);
    return w->arrivals == SERVE_CLOSED ? mean * (double)(batch - 1) / (double)batch : mean;
}

/* A prompt's `computed` tokens in chunks of `chunk`: *full whole chunks before its last, and the
 * last's *rest (a last chunk that is a full one is priced on its own like a remainder). */
static void chunks_of(double computed, double chunk, double *full, double *rest)
{
    *full = floor(computed / chunk);
    *rest = computed - *full * chunk;
    if (*rest <= 0 && *full > 0) {
        *full -= 1;
        *rest = chunk;
    }
}

static double aggregated_ttft(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                              const struct serve_workload *w, int64_t batch, double prompt)
{
    double computed = prompt * (1 - w->prefix_hit), chunk = (double)w->chunk_tokens;
    double others = others_prefill_tokens(w, batch), cached = prompt - computed;
    struct roof_setup s = setup_of(pool, g, l);
    double full, rest;
    chunks_of(computed, chunk, &full, &rest);
    if (full == 0)
        return chunk_step_s(&s, w, batch, rest, rest, cached + rest / 2);
    double room = (double)l->dp * chunk; /* the other prompts ride within the ranks' budgets */
    double ttft = chunk_step_s(&s, w, batch, chunk, chunk, cached + chunk / 2);
    if (full > 1) /* chunks 1 .. full - 1 at contexts cached + (i + 1/2) C: their mean */
        ttft += (full - 1) * chunk_step_s(&s, w, batch, chunk + fmin(others, room - chunk), chunk,
                                          cached + (full + 1) * chunk / 2);
    return ttft + chunk_step_s(&s, w, batch, rest + fmin(others, room - rest), rest, cached + full * chunk + rest / 2);
}

/* A prompt's own chunks in step with those of the k - 1 others of its cohort, each on a rank of
 * its own (a cohort of k <= dp on ranks that step together, every rank chunking its own prompt):
 * each step carries k chunks, the last k remainders, beside the batch's other sequences decoding. */
static double lockstep_ttft(const struct roof_setup *s, const struct serve_workload *w, int64_t batch, double prompt,
                            double k)
{
    double computed = prompt * (1 - w->prefix_hit), chunk = (double)w->chunk_tokens, cached = prompt - computed;
    double full, rest;
    chunks_of(computed, chunk, &full, &rest);
    int64_t decoding = batch - (int64_t)k > 0 ? batch - (int64_t)k : 0;
    double ttft = chunk_step_s(s, w, decoding, k * rest, rest, cached + full * chunk + rest / 2);
    if (full > 0) /* chunks 0 .. full - 1 at contexts cached + (i + 1/2) C: their mean */
        ttft += full * chunk_step_s(s, w, decoding, k * chunk, chunk, cached + full * chunk / 2);
    return ttft;
}

/* ---- the requests' times: what every tail reads ---- */

/* A tail is computed at serve_percentile_levels and then at the workload's percentile. */
#define TAIL_LEVELS (SERVE_PERCENTILES + 1)

double serve_workload_percentile(const struct serve_workload *w)
{
    return w->percentile > 0 ? w->percentile : 50;
}

static void tail_levels(const struct serve_workload *w, double *levels)
{
    for (int i = 0; i < SERVE_PERCENTILES; i++)
        levels[i] = serve_percentile_levels[i] / 100;
    levels[SERVE_PERCENTILES] = serve_workload_percentile(w) / 100;
}

/* E[c^2] of the tokens a prompt computes. */
static double computed_second_moment(const struct serve_workload *w)
{
    double kept = 1 - w->prefix_hit;
    double isl2 = w->lengths.bins > 0 ? w->lengths.isl_second_moment : (double)w->isl * (double)w->isl;
    return kept * kept * isl2;
}

/* The squared coefficient of variation of the tokens a prompt computes (0 when all alike): its
 * hold's, a step growing with the prompt tokens it carries. */
static double prompt_scv(const struct serve_workload *w)
{
    double mean = prefilled_tokens(w);
    return mean > 0 ? fmax(computed_second_moment(w) / (mean * mean) - 1, 0) : 0;
}

/* A side's bins as the tails read them (`count` of them, or, when none, the one fixed length):
 * their lengths and weights into `length` and `weight`; returns how many. */
static int64_t length_bins(int64_t count, const double *lengths, const double *weights, int64_t fixed,
                           double *length, double *weight)
{
    if (count == 0) {
        length[0] = (double)fixed;
        weight[0] = 1;
        return 1;
    }
    memcpy(length, lengths, (size_t)count * sizeof *length);
    memcpy(weight, weights, (size_t)count * sizeof *weight);
    return count;
}

static int64_t output_bins(const struct serve_workload *w, double *osl, double *weight)
{
    return length_bins(w->lengths.bins, w->lengths.osl, w->lengths.osl_weight, w->osl, osl, weight);
}

static int64_t prompt_bins(const struct serve_workload *w, double *isl, double *weight)
{
    return length_bins(w->lengths.prompt_bins, w->lengths.isl, w->lengths.isl_weight, w->isl, isl, weight);
}

/* The prompt bins finer toward the longest (serve_lengths; room for SERVE_PROMPT_TAIL_BINS). */
static int64_t prompt_tail_bins(const struct serve_workload *w, double *isl, double *weight)
{
    return length_bins(w->lengths.prompt_tail_bins, w->lengths.isl_tail, w->lengths.isl_tail_weight, w->isl, isl,
                       weight);
}

/* prompt_bins as the tokens a prompt computes (the prefix cache's share taken off). */
static int64_t computed_bins(const struct serve_workload *w, double *computed, double *weight)
{
    int64_t bins = prompt_bins(w, computed, weight);
    for (int64_t i = 0; i < bins; i++)
        computed[i] *= 1 - w->prefix_hit;
    return bins;
}

/* How variable the arrivals of prompts are, as a squared coefficient of variation: Poisson 1;
 * evenly spaced or closed-loop 0 while every request is alike, 1 when their lengths vary (the
 * ends of requests of different lengths come unevenly). */
static double arrival_scv(const struct serve_workload *w)
{
    if (w->arrivals == SERVE_POISSON)
        return 1;
    return w->lengths.bins > 1 || w->lengths.prompt_bins > 1 ? 1 : 0;
}

/* ---- steps as they come (serve.h, "Steps that vary") ---- */

/* The counts of prompts a step's price is taken at: every count to 8, then half again each, to
 * the count that fills every rank's budget; between them the step is linear in the count. */
#define COMPOSITION_EXACT 8
#define COMPOSITION_POINTS 40

/* A step of n sequences at counts of prompts from 0 to where the budgets fill, priced lazily
 * (each count at its first use: a closed loop of alike requests reads two counts, a Poisson one
 * a few about its mean). */
struct composition {
    const struct roof_setup *setup;
    const struct serve_workload *workload;
    int64_t sequences;
    int count;
    double prompts[COMPOSITION_POINTS], step_s[COMPOSITION_POINTS]; /* step_s NAN until priced */
    double full;  /* units that fill every rank's budget: more join no step */
};

/* What a step carries of prompts comes in units: a prompt of the mean computed length c, or a
 * chunk C of one longer than C (which takes c / C steps), u = min(c, C) tokens. */
static double unit_tokens(const struct serve_workload *w)
{
    return fmin(prefilled_tokens(w), (double)w->chunk_tokens);
}

static bool ranks_independent(const struct roof_setup *s);

/* Units a step carries when `prompts` prompts join the instance's: a rank's share when its ranks
 * step on their own (ranks_independent). */
static double units_of(const struct roof_setup *s, const struct serve_workload *w, double prompts)
{
    double u = unit_tokens(w), units = u > 0 ? prompts * prefilled_tokens(w) / u : 0;
    return ranks_independent(s) ? units / (double)s->layout.dp : units;
}

/* Whether an instance's data-parallel ranks step on their own: a dense model's are replicas that
 * never wait for one another; an MoE model's meet at every MoE layer (the all-to-all), so the rank
 * carrying the most prefill paces all. */
static bool ranks_independent(const struct roof_setup *s)
{
    return s->layout.dp > 1 && !model_is_moe(s->model);
}

/* A step of n sequences carrying `total` prompt tokens, `busiest` of them on one rank: its time and
 * the roofline term that binds it. */
static void bin_step(const struct roof_setup *s, const struct serve_workload *w, int64_t n, double total,
                     double busiest, double *step_s, enum roof_term *bound)
{
    struct roof_point r;
    chunk_point(s, w, n, total, busiest, prefill_context(w), &r);
    *step_s = r.step_s;
    *bound = r.bound;
}

/* Ranks in step, prompts of lengths that vary, each whole within a rank's budget C: the k
 * prompts go to the ranks in turn, so the h = k - (j - 1) dp ranks that hold j = ceil(k / dp)
 * hold the most, and the busiest of them paces the step. Its tokens taken as (j - 1) mean prompts
 * and the longest of h drawn from the prompt bins (P(longest <= x) = F(x)^h); the step's whole as
 * k mean prompts moved by what that longest adds and by the other h - 1 drawn below it. The
 * step's mean over the longest's law: a step's time is convex in its busiest rank's tokens (a
 * max of linear terms), so pricing the mean prompt's step fell short: MLPerf's DeepSeek-R1 prompts
 * (mean 804 tokens) on one of 8 H200 ranks cost 23.0 ms at the mean and 25.0 on average over
 * the mix, the longest eighth 33.9. */
static double mixed_lengths_step_s(const struct roof_setup *s, const struct serve_workload *w, int64_t n, double k)
{
    double tokens[SERVE_PROMPT_BINS], weight[SERVE_PROMPT_BINS];
    int64_t bins = computed_bins(w, tokens, weight); /* by length (bin_lengths) */
    double sum = 0;
    for (int64_t i = 0; i < bins; i++)
        sum += weight[i];
    double dp = (double)s->layout.dp, budget = (double)w->chunk_tokens, mean = prefilled_tokens(w);
    double held = ceil(k / dp), holding = k - (held - 1) * dp;
    /* the longest's law over the bins that can be it, and each such step's tokens */
    double longest[SERVE_PROMPT_BINS], chance[SERVE_PROMPT_BINS], total[SERVE_PROMPT_BINS], busiest[SERVE_PROMPT_BINS];
    double step_s[SERVE_PROMPT_BINS];
    enum roof_term bound[SERVE_PROMPT_BINS];
    int m = 0;
    double below = 0, below_tokens = 0;
    for (int64_t i = 0; i < bins; i++) {
        double before = below;
        below += weight[i] / sum;
        below_tokens += tokens[i] * weight[i] / sum;
        double p = pow(fmin(below, 1), holding) - pow(before, holding);
        if (p <= 0)
            continue;
        longest[m] = tokens[i];
        chance[m] = p;
        busiest[m] = fmin((held - 1) * mean + tokens[i], budget);
        total[m] = k * mean + (tokens[i] - mean) + (holding - 1) * (below_tokens / below - mean);
        total[m] = fmin(fmax(total[m], busiest[m]), dp * budget);
        step_s[m++] = NAN;
    }
    /* The step is a max of terms linear in the tokens (roofline.h), so where one term binds at
     * both ends of a run of bins it binds between them and the step is linear there: priced at
     * the ends, and halved where the ends differ (a few roof_steps, not one a bin). */
    int stack[2 * SERVE_PROMPT_BINS][2], top = 0;
    if (m > 0)
        bin_step(s, w, n, total[0], busiest[0], &step_s[0], &bound[0]);
    if (m > 1)
        bin_step(s, w, n, total[m - 1], busiest[m - 1], &step_s[m - 1], &bound[m - 1]);
    if (m > 2) {
        stack[top][0] = 0;
        stack[top++][1] = m - 1;
    }
    while (top > 0) {
        int a = stack[--top][0], b = stack[top][1];
        if (b - a < 2)
            continue;
        if (bound[a] == bound[b]) {
            for (int i = a + 1; i < b; i++) {
                double f = longest[b] > longest[a] ? (longest[i] - longest[a]) / (longest[b] - longest[a]) : 0;
                step_s[i] = step_s[a] + f * (step_s[b] - step_s[a]);
            }
            continue;
        }
        int mid = (a + b) / 2;
        bin_step(s, w, n, total[mid], busiest[mid], &step_s[mid], &bound[mid]);
        stack[top][0] = a;
        stack[top++][1] = mid;
        stack[top][0] = mid;
        stack[top++][1] = b;
    }
    double expected = 0, mass = 0;
    for (int i = 0; i < m; i++) {
        expected += chance[i] * step_s[i];
        mass += chance[i];
    }
    return expected / mass;
}

/* The step of n decode sequences that carries k units of u tokens (at the prompts' mean prefill
 * context). Ranks in step: each unit on one rank, the ranks taking them in turn, so the busiest
 * holds ceil(k / dp) of them, at most its chunk budget C, the rest spread over the others; at
 * most dp C tokens in all. Independent ranks: k units on each rank (a composition of one rank,
 * which every rank runs alike). */
static double carrying_step_s(const struct roof_setup *s, const struct serve_workload *w, int64_t n, double k)
{
    double c = unit_tokens(w), budget = (double)w->chunk_tokens, dp = (double)s->layout.dp;
    if (k <= 0 || c <= 0) {
        struct roof_step step = mixed_step(w, n, 0);
        struct roof_point r;
        roof_step(s, &step, &r);
        return r.step_s;
    }
    if (ranks_independent(s)) {
        double each = fmin(k * c, budget); /* spread evenly: each rank's share is `each` */
        return chunk_step_s(s, w, n, each * dp, 0, prefill_context(w));
    }
    if (dp > 1 && w->lengths.prompt_bins > 1 && prefilled_tokens(w) <= budget)
        return mixed_lengths_step_s(s, w, n, k);
    double total = fmin(k * c, dp * budget), busiest = fmin(ceil(k / dp) * c, budget);
    return chunk_step_s(s, w, n, total, fmin(busiest, total), prefill_context(w));
}


/* The counts a composition of n sequences is priced at, up to `most` prompts (capped where the
 * budgets fill); `s` and `w` must outlive it. A decode pool's steps (most 0) carry none. Ranks
 * that step together take the units in turn, so the busiest one's share rises by a unit past
 * each multiple of dp: both counts about each such jump are points (a chord across one priced
 * Qwen3-30B-A3B's steps of 9 to 11 prompts on 8 ranks as if the busiest held one, and its TPOT
 * p99 came out 18% below the simulation's), with the last point kept within reach. */
static void composition_init(struct composition *out, const struct roof_setup *s, const struct serve_workload *w,
                             int64_t n, double most)
{
    double c = unit_tokens(w);
    *out = (struct composition){.setup = s, .workload = w, .sequences = n};
    double ranks = ranks_independent(s) ? 1 : (double)s->layout.dp;
    out->full = c > 0 ? ceil(ranks * (double)w->chunk_tokens / c) : 0;
    double last = fmin(ceil(most), out->full);
    for (double k = 0; out->count < COMPOSITION_POINTS;) {
        out->prompts[out->count] = k;
        out->step_s[out->count++] = NAN;
        if (k >= last)
            break;
        double next = k < COMPOSITION_EXACT ? k + 1 : ceil(k * 1.5);
        if (ranks > 1 && k >= ranks) { /* the next jump: past a multiple of dp, or the multiple */
            double jump = floor(k / ranks) * ranks;
            next = fmin(next, k == jump ? k + 1 : jump + ranks);
        } else if (ranks > 1 && next > ranks) {
            next = ranks;
        }
        k = out->count >= COMPOSITION_POINTS - 1 ? last : fmin(next, last);
    }
}

static double composition_step(struct composition *c, int i)
{
    if (isnan(c->step_s[i]))
        c->step_s[i] = carrying_step_s(c->setup, c->workload, c->sequences, c->prompts[i]);
    return c->step_s[i];
}

static double composition_at(struct composition *c, double k)
{
    if (k >= c->prompts[c->count - 1])
        return composition_step(c, c->count - 1);
    /* counts 0 .. COMPOSITION_EXACT are the first points, one apart */
    int i = k <= COMPOSITION_EXACT ? (int)fmax(ceil(k), 1) : COMPOSITION_EXACT + 1;
    while (c->prompts[i] < k)
        i++;
    double f = (k - c->prompts[i - 1]) / (c->prompts[i] - c->prompts[i - 1]);
    double low = composition_step(c, i - 1);
    return f > 0 ? low + f * (composition_step(c, i) - low) : low;
}

/* The prompts a step carries when m join a step on average: Poisson(m) under Poisson arrivals or
 * when lengths vary, else the two whole counts about m (prompts come as evenly as requests end). */
static bool prompts_poisson(const struct serve_workload *w)
{
    return arrival_scv(w) > 0;
}

/* Closed-loop alike requests started together stay in cohorts (serve.h, "Steps as they come"): a
 * benchmark's clients at fixed lengths, started at once, keep the groups the chunk budget first
 * made, since alike lives end in one step and the successors arrive together. Llama 3.1 70B,
 * 1,000/1,000 at 93 sequences on an H200 node: its simulation's TTFT is the step of 8 prompts
 * (711 ms), where one prompt's is 103 ms. */
bool serve_workload_in_cohorts(const struct serve_workload *w)
{
    return w->arrivals == SERVE_CLOSED && !prompts_poisson(w) && !w->spread_starts;
}

/* The units a cohort brings a step: whole prompts that fill a rank's budget, floor(C / c) of them,
 * or a chunk of a longer prompt, on every rank that steps with the others and holds one, no more
 * than the batch's prompts: min(B, dp floor(C / c)) or min(B, dp). Each rank chunks its own
 * prompts (SGLang's ranks each run a scheduler), so a longer prompt's chunks go beside the other
 * ranks' (DeepSeek-V3 at 20,000/1,000 on 8 H200 ranks). 0 (no cohorts): a dense model's ranks
 * that step on their own, which take the requests in turn, so that a cohort's successors are
 * dealt to every rank and the ranks' steps drift apart (Llama 3.1 70B, 2,048/512 at 40 sequences
 * on TP 4 x DP 2: the simulation's TTFT one prompt's step, a quarter of a cohort's). */
static double cohort_units(const struct roof_setup *s, const struct serve_workload *w, int64_t batch)
{
    double c = prefilled_tokens(w), budget = (double)w->chunk_tokens;
    if (!(c > 0) || !(unit_tokens(w) > 0) || ranks_independent(s))
        return 0;
    double rank = c <= budget ? floor(budget / c) : 1;
    return fmin((double)batch, (double)s->layout.dp * rank);
}

/* B alike requests in cohorts of K units (cohort_units) go as q = floor(B / K) cohorts of K and,
 * where r = B - q K > 0, one of r, whose steps carry r units (its prompts' chunks on r ranks): the
 * requests a cohort's steps leave out end together, and their successors are dealt to the
 * ranks as one (DeepSeek-V3 at 20,000/1,000 on 8 H200 ranks, 9 sequences: a cohort of 8 and one
 * of 1, each taking its 3 steps). Of the steps, m q / B carry a cohort of K and m / B that of r
 * (each cohort's prompts take c / u steps of the L = osl / y a cycle of lives takes, m = B (c / u)
 * / L), so that they carry m units on average. False where the cohorts would not fit in the
 * steps (m >= K, or more carrying steps than there are). */
struct cohorts {
    double k, q, r;
    double share_k, share_r; /* of the steps: those that carry a cohort of K, of r */
};

static bool cohorts_of(const struct roof_setup *s, const struct serve_workload *w, int64_t batch, double m,
                       struct cohorts *out)
{
    double k = cohort_units(s, w, batch);
    if (!(m > 0) || !(m < k))
        return false;
    double b = (double)batch, q = floor(b / k), r = b - q * k;
    *out = (struct cohorts){.k = k, .q = q, .r = r, .share_k = m / k};
    if (r > 0 && m * (q + 1) / b <= 1) {
        out->share_k = m * q / b;
        out->share_r = m / b;
    } else {
        out->r = 0; /* its units spread over the cohorts of K */
    }
    return true;
}

/* How much more the units a step carries vary than a Poisson count of them: E[c^2] / E[c]^2 of
 * the prompts' computed tokens, 1 when they are alike. */
static double prompt_clump(const struct serve_workload *w)
{
    double c1 = prefilled_tokens(w);
    return c1 > 0 ? fmax(computed_second_moment(w) / (c1 * c1), 1) : 1;
}

/* The mean and variance of the step over its prompt count, `offset` prompts more than the count
 * drawn (1: the step that carries a given prompt and those that came with it). */
static void composed_with(struct composition *c, const struct serve_workload *w, double m, double offset,
                          double clump, double *mean_s, double *variance_s2);

static void composed(struct composition *c, const struct serve_workload *w, double m, double *mean_s,
                     double *variance_s2)
{
    composed_with(c, w, m, 0, 0, mean_s, variance_s2);
}

/* A count past the full budget does not vanish: what waits is carried by the steps after, so the
 * steps carry `units` on average, not the capped law's `carried`. The shortfall is priced at a
 * unit's share of the full budget's prompts: with a budget of one unit (a prompt longer than the
 * chunk), exactly a full step for an empty one, in the share of steps work conservation asks.
 * Without it, Llama 3.1 405B's steps with prompts of 4,096 tokens at the budget settled at 85.0
 * ms at batch 111, below the prefill chain's 93.3. */
static double carried_over_s(struct composition *c, double units, double carried)
{
    double short_units = units - carried, most = c->count > 1 ? c->prompts[c->count - 1] : 0;
    if (!(short_units > 1e-9 * (units + 1)) || most <= 0)
        return 0; /* none to speak of: the full step is not priced for it */
    return short_units * (composition_step(c, c->count - 1) - composition_step(c, 0)) / most;
}

/* The step's first two moments when clumps of `clump` units come Poisson(m / clump) a step, `offset`
 * units more than the count drawn; *next_s the mean with one clump more (the slope), *carried_out
 * the units a step carries on average (a count past the composition's last point, its last). From
 * its mode outward, until what is left is below a part in 10^15. */
static void poisson_composed(struct composition *c, double m, double offset, double clump, double *t1_out,
                             double *t2_out, double *next_s, double *carried_out)
{
    double t1 = 0, t2 = 0, t3 = 0, carried = 0;
    m /= clump;
    offset /= clump;
    double mode = floor(m), log_mode = mode * log(m) - m - arith_log_factorial(mode), mass = 0;
    for (int side = 0; side < 2; side++) {
        double p = exp(log_mode), k = side ? mode - 1 : mode;
        if (side)
            p *= mode / m;
        for (; k >= 0 && p > 1e-13; k += side ? -1 : 1) {
            double t = composition_at(c, (k + offset) * clump);
            mass += p;
            carried += p * fmin((k + offset) * clump, c->prompts[c->count - 1]);
            t1 += p * t;
            t2 += p * t * t;
            if (next_s)
                t3 += p * composition_at(c, (k + 1 + offset) * clump);
            p *= side ? k / m : m / (k + 1);
            if (!side && k > c->full && k > m)
                break; /* every larger count costs the full budget's step */
        }
    }
    if (mass < 1 - 1e-12 && c->count > 0) { /* beyond the loop: the full budget's step */
        double t = composition_step(c, c->count - 1);
        t1 += (1 - mass) * t;
        t2 += (1 - mass) * t * t;
        t3 += (1 - mass) * t;
        carried += (1 - mass) * c->prompts[c->count - 1];
    }
    *t1_out = t1;
    *t2_out = t2;
    if (carried_out)
        *carried_out = carried;
    if (next_s)
        *next_s = t3;
}

/* Prompts that arrive at random in time join the next step, so a long step (one that carries many)
 * brings more to the next: units U' ~ Poisson(lambda T) of the step before, T ~ a + b U, a
 * branching process whose counts correlate from step to step by rho = lambda b (lambda in units a
 * second, b what a unit adds to the mean step) and vary 1 / (1 - rho^2) times what one step's
 * Poisson count does: its clumps grow by that much (settle_once). rho is capped at
 * COMPOSITION_MOST_CORRELATED (a prefill that leaves decode no time). */
#define COMPOSITION_MOST_CORRELATED 0.95

static void composed_with(struct composition *c, const struct serve_workload *w, double m, double offset,
                          double clump, double *mean_s, double *variance_s2)
{
    double t1 = 0, t2 = 0, carried = m + offset, most = c->count > 0 ? c->prompts[c->count - 1] : 0;
    struct cohorts h;
    if (m <= 0) {
        t1 = composition_at(c, offset);
        t2 = t1 * t1;
        carried = fmin(offset, most);
    } else if (offset == 0 && serve_workload_in_cohorts(w) && cohorts_of(c->setup, w, c->sequences, m, &h)) {
        double a = composition_at(c, 0), b = composition_at(c, h.k), d = h.r > 0 ? composition_at(c, h.r) : 0;
        double idle = 1 - h.share_k - h.share_r;
        t1 = idle * a + h.share_k * b + h.share_r * d;
        t2 = idle * a * a + h.share_k * b * b + h.share_r * d * d;
        carried = h.share_k * fmin(h.k, most) + h.share_r * fmin(h.r, most);
    } else if (!prompts_poisson(w)) {
        double low = floor(m), f = m - low, a = composition_at(c, low + offset),
               b = composition_at(c, low + 1 + offset);
        t1 = (1 - f) * a + f * b;
        t2 = (1 - f) * a * a + f * b * b;
        carried = (1 - f) * fmin(low + offset, most) + f * fmin(low + 1 + offset, most);
    } else {
        /* prompts of lengths that vary come as clumps: m / s counts of s units each, s = E[c^2] /
         * E[c]^2 (or as the caller grew it), so that the units' variance is the compound Poisson
         * sum's, m E[c^2] / E[c]^2 */
        poisson_composed(c, m, offset, clump > 0 ? clump : prompt_clump(w), &t1, &t2, NULL, &carried);
    }
    *mean_s = t1 + carried_over_s(c, m + offset, carried);
    *variance_s2 = fmax(t2 - t1 * t1, 0);
}

/* The prompts a step sees on average at the mean c tokens each, most for a composition. */
static double prompts_most(double m)
{
    return m + 5 * sqrt(m) + 5;
}

/* ---- the occupancy of an instance (serve.h, "Arrivals") ---- */

/* An instance's steps at numbers of sequences in flight from 1 to its cap, geometrically, a part in
 * OCCUPANCY_DENSE_STEP apart (at most OCCUPANCY_DENSE of them); linear between them. The
 * occupancy's law is found first from OCCUPANCY_GRID of them spread over the whole range, then
 * again from those where its mass lies (OCCUPANCY_FINE_SD standard deviations either side of its
 * mean, at most OCCUPANCY_FINE of them), twice: the step settles convexly in n (each count of
 * prompts costs the larger of a compute and a memory time, and prompts that join a longer step
 * lengthen it more), which a chord over a factor of 2 overprices by several percent, and the
 * birth-death law turns that into a batch larger by several times as much where the throughput
 * flattens with n. Each point's steps are priced once a layout (the table below). */
#define OCCUPANCY_GRID 12
#define OCCUPANCY_DENSE 512
#define OCCUPANCY_DENSE_STEP 0.03
#define OCCUPANCY_FINE 12
#define OCCUPANCY_FINE_SD 6
#define OCCUPANCY_FINE_ROUNDS 2
/* Sequences summed one by one; above, in runs of n / OCCUPANCY_EXACT (a relative step of
 * 1 / OCCUPANCY_EXACT, over which the ratio below is constant to that part). */
#define OCCUPANCY_EXACT 128
/* Past its mode, the distribution is summed until pi(n) falls below e^-45 of its largest: the
 * rest moves no sum by a part in 10^19. */
#define OCCUPANCY_TAIL 45
/* The held share the clusters' spread is taken at, at most: at 1 a cluster never ends (the steps
 * that near it have diverged already, settled_step). */
#define OCCUPANCY_MOST_HELD 0.99
/* Newton's steps at most that balance the departures (balance_departures). */
#define OCCUPANCY_BALANCE_STEPS 8
/* settled_step: Aitken's step only where the substitution contracts by at most this a round */
#define SETTLE_MOST_CONTRACTION 0.95

/* Each grid point's composition; a function of the setup, the workload and the cap alone, so one
 * table a thread is kept for the layout priced last (the search prices a layout's batches in
 * turn): the results are the same with it or without it. */
struct occupancy_table {
    struct roof_setup setup;
    struct serve_workload workload;
    int64_t cap;
    bool valid, prefilling;
    double most; /* prompts the compositions are priced to */
    int count;
    double sequences[OCCUPANCY_DENSE];
    struct composition steps[OCCUPANCY_DENSE]; /* count 0 until first used */
};

static _Thread_local struct occupancy_table last_table;

static bool same_table(const struct occupancy_table *t, const struct roof_setup *s, const struct serve_workload *w,
                       int64_t cap, bool prefilling)
{
    return t->valid && t->cap == cap && t->prefilling == prefilling && memcmp(&t->setup, s, sizeof *s) == 0 &&
           memcmp(&t->workload, w, sizeof *w) == 0;
}

/* `prefilling` false: a decode pool's steps, which carry no prompts. */
static struct occupancy_table *occupancy_table_of(const struct roof_setup *s, const struct serve_workload *w,
                                                        int64_t cap, bool prefilling)
{
    struct occupancy_table *t = &last_table;
    if (same_table(t, s, w, cap, prefilling))
        return t;
    memset(t, 0, sizeof *t);
    t->setup = *s;
    t->workload = *w;
    t->cap = cap;
    t->prefilling = prefilling;
    /* prompts a step may carry at the cap: y N / osl join it on average */
    double most = prefilling ? prompts_most(units_of(s, w, serve_tokens_per_step(w) * (double)cap / (double)w->osl)) : 0;
    t->most = most;
    int points = cap > 1 ? (int)fmin(ceil(log((double)cap) / log1p(OCCUPANCY_DENSE_STEP)) + 1, OCCUPANCY_DENSE) : 1;
    for (int i = 0; i < points; i++) {
        double n = points > 1 ? round(exp(log((double)cap) * i / (points - 1))) : 1;
        if (t->count > 0 && n <= t->sequences[t->count - 1])
            continue;
        t->sequences[t->count++] = n;
    }
    t->valid = true;
    return t;
}

static struct composition *table_step(struct occupancy_table *t, int i)
{
    if (t->steps[i].count == 0)
        composition_init(&t->steps[i], &t->setup, &t->workload, (int64_t)t->sequences[i], t->most);
    return &t->steps[i];
}

/* One evaluation of F(T) for settled_step: the mean step and its variance when lambda T prompts
 * join, in clumps *clump; then, when `correlated`, the clumps that step's correlation grows. */
static void settle_once(struct composition *c, const struct serve_workload *w, double arrivals_per_s, double t,
                        double plain, bool correlated, double *clump, double *rho, double *mean_s,
                        double *variance_s2)
{
    double m = units_of(c->setup, w, arrivals_per_s * t);
    if (!correlated || m <= 0) {
        composed_with(c, w, m, 0, *clump, mean_s, variance_s2);
        return;
    }
    double t1, t2, next, carried;
    poisson_composed(c, m, 0, *clump, &t1, &t2, &next, &carried);
    *mean_s = t1 + carried_over_s(c, m, carried);
    *variance_s2 = fmax(t2 - t1 * t1, 0);
    double slope = (next - t1) / *clump; /* a unit's share of the mean step */
    *rho = t1 > 0 ? fmin(fmax(m * slope / t1, 0), COMPOSITION_MOST_CORRELATED) : 0;
    *clump = plain / (1 - *rho * *rho);
}

/* A grid point's mean step and its variance when requests arrive at lambda: m = lambda T prompts
 * join a step of mean T, solved by substitution (a contraction while prefill leaves decode time);
 * infinite when it does not settle. */
static void settled_step(struct composition *c, const struct serve_workload *w, double arrivals_per_s,
                         const double *near, double *mean_s, double *variance_s2, double *correlation,
                         double *delay_s)
{
    /* T = F(T) = E[step | m = lambda T]: substitution, sped up by Steffensen's step (Aitken's delta
     * squared), which converges in a few rounds where plain substitution crawls (lambda c tau near
     * 1). Prompts at random: each evaluation also gives the slope, so the correlation, that grows
     * the clumps of the next, and the two settle together. */
    double alone = composition_step(c, 0), t = alone, v = 0, rho = 0;
    if (c->count <= 1) { /* steps that carry no prompts (a decode pool's) */
        *mean_s = alone;
        *variance_s2 = *correlation = *delay_s = 0;
        return;
    }
    double plain = prompt_clump(w), clump = plain;
    bool correlated = w->arrivals == SERVE_POISSON && prompts_poisson(w);
    if (near && isfinite(near[0]) && near[0] > alone) { /* a neighbour's answer: the iteration starts there */
        t = near[0];
        clump = correlated ? plain / (1 - near[1] * near[1]) : plain;
    }
    for (int i = 0; i < 80; i++) {
        double f1, f2, v2, before = clump;
        settle_once(c, w, arrivals_per_s, t, plain, correlated, &clump, &rho, &f1, &v);
        if ((fabs(f1 - t) <= 1e-7 * f1 && fabs(clump - before) <= 1e-5 * clump) || f1 > 1e6 * alone) {
            t = f1;
            break;
        }
        settle_once(c, w, arrivals_per_s, f1, plain, correlated, &clump, &rho, &f2, &v2);
        /* Aitken's step t + (f1 - t) / (1 - q) where the substitution contracts by q = (f2 - f1) /
         * (f1 - t); where q is near 1 (the clumps still settling make two steps look alike) the
         * step would leap anywhere, and from there the iteration can circle the answer for good
         * (Llama 3.1 405B on MI300X at 126 sequences: 80 rounds between 0.063 and 0.095 s, the
         * answer 0.0925, ending at 0.0762): there the substitution's own f2 */
        double q = (f2 - f1) / (f1 - t);
        double next = isfinite(q) && fabs(q) < SETTLE_MOST_CONTRACTION ? t + (f1 - t) / (1 - q) : f2;
        t = next > alone && isfinite(next) ? next : f2;
        if (t > 1e6 * alone)
            break;
    }
    if (t > 1e6 * alone)
        t = INFINITY;
    *mean_s = t;
    *variance_s2 = v;
    *correlation = rho;
    /* what one more prompt adds to the step, over the prompts it finds there */
    double with_one, unused;
    double m = units_of(c->setup, w, arrivals_per_s * fmin(t, 1e6 * alone));
    composed_with(c, w, m, units_of(c->setup, w, 1), clump, &with_one, &unused);
    composed_with(c, w, m, 0, clump, &t, &unused);
    *delay_s = fmax(with_one - t, 0);
}

#define SETTLED_POINTS (OCCUPANCY_GRID + OCCUPANCY_FINE + 4) /* the fine points, their last, and the coarse ones */

struct settled {
    int count;
    double sequences[SETTLED_POINTS], step_s[SETTLED_POINTS], variance_s2[SETTLED_POINTS];
    double correlation[SETTLED_POINTS]; /* of one step's prompts with the next's */
    double delay_s[SETTLED_POINTS];     /* what one more prompt adds to a step */
};

/* The settled step at n sequences, linear between the points; *from: the point to look from (n
 * grows from call to call), moved on. */
static void settled_at(const struct settled *g, double n, int *from, double *step_s, double *variance_s2,
                       double *correlation, double *delay_s)
{
    int i = *from > 1 ? *from : 1;
    if (g->count == 1) {
        *step_s = g->step_s[0];
        *variance_s2 = g->variance_s2[0];
        *correlation = g->correlation[0];
        *delay_s = g->delay_s[0];
        return;
    }
    while (i < g->count - 1 && g->sequences[i] < n)
        i++;
    *from = i;
    double f = (n - g->sequences[i - 1]) / (g->sequences[i] - g->sequences[i - 1]);
    *step_s = g->step_s[i - 1] + f * (g->step_s[i] - g->step_s[i - 1]);
    *variance_s2 = g->variance_s2[i - 1] + f * (g->variance_s2[i] - g->variance_s2[i - 1]);
    *correlation = g->correlation[i - 1] + f * (g->correlation[i] - g->correlation[i - 1]);
    *delay_s = g->delay_s[i - 1] + f * (g->delay_s[i] - g->delay_s[i - 1]);
}

/* The sequences in flight of an instance fed by Poisson arrivals at lambda: each of n sequences
 * gains y tokens a step of mean T(n), so requests end at X(n) = y n / (T(n) E[osl]) and n is a
 * birth-death process, pi(n) = pi(0) prod_{k <= n} lambda / X(k), insensitive to how output
 * lengths vary (Kelly 1979: continuous batching is processor sharing, a symmetric queue). Where
 * prompts hold the batch back (a share m = lambda delay of the time), the requests that arrive
 * during a hold join with it, in clusters, which widen the law's variance by G =
 * queue_cluster_spread(m, the prompts' scv, the lives' overlap): pi is the law of clusters of
 * geometric size, mean G (queueing.h, queue_cluster_increment), tilted so that its departures
 * balance the arrivals over the runs. At the cap N a request waits for a slot: beyond it n - N
 * wait, the clusters begun below N going on past it (queue_cluster_past_cap, r = lambda / X(N));
 * stable while r < 1. The moments of the step are over pi (what a request finds on arriving,
 * PASTA), its quantiles those of T at pi's quantiles of n (T grows with n); the wait for a slot
 * from Little's law on the queue (mean) and PASTA (its probability); the relaxation time
 * Var(n) / (lambda G) an Ornstein-Uhlenbeck process's (one request's life when X(k) = k mu and
 * arrivals come alone, G = 1; clusters widen the law by G, not how fast it forgets). */
/* A run of sequence counts summed as one: its middle count, step, step variance, length, the
 * increment of log pi a count over it, and its mass. */
struct occupancy_run {
    double middle, step_s, variance_s2, correlation, delay_s, spread, length, increment, mass;
};

/* The clusters' spread where one more prompt adds delay_s to a step: at the held share
 * lambda delay_s, at most OCCUPANCY_MOST_HELD. */
static double spread_at(double arrivals_per_s, double delay_s, double hold_scv, double overlap)
{
    return queue_cluster_spread(fmin(arrivals_per_s * delay_s, OCCUPANCY_MOST_HELD), hold_scv, overlap);
}

/* The mass past the cap and the count queued there, over pi(N), at r = lambda / X(N) < 1
 * (queueing.h): with the clusters of spread G, or as single arrivals where G is not a finite
 * number (spread_at keeps it finite: its held share at most OCCUPANCY_MOST_HELD). */
static void past_the_cap(double r, double spread, double *beyond, double *queued)
{
    if (!queue_cluster_past_cap(r, spread, beyond, queued))
        queue_cluster_past_cap(r, 1, beyond, queued);
}

/* A run's mass, the sum of exp(first + k increment) over k = 0 .. length - 1: `first` its first
 * count's log mass (over e^top), `increment` log pi's step a count. */
static double run_mass(double first, double increment, double length)
{
    if (fabs(increment) < 1e-12)
        return length * exp(first);
    if (increment < 0)
        return exp(first) * expm1(increment * length) / expm1(increment);
    double last = first + increment * (length - 1); /* summed from its largest term, which cannot overflow */
    return exp(last) * expm1(-increment * length) / expm1(-increment);
}

/* Tilts the runs' law by e^{theta n} so that its departures balance the arrivals, E[X(n)] =
 * lambda: every request that comes leaves, which the clusters' law keeps exactly count by count
 * but only nearly over runs whose ratio is their middle's (Llama 3.1 405B at 4,096/685 with an FP8
 * KV cache at batch 111, held 74% of the time: the mean 119.3 sequences untilted, 118.1 tilted,
 * the simulation's 117.8; with each Poisson factor taken to the power 1 / G, as before the
 * clusters' law, 111.5 untilted). Newton's steps, the slope Cov(X, n), each kept within half a
 * standard deviation's shift of the mean (where X hardly grows with n, at a compute plateau, the
 * balance does not pin the mean), until a step moves the mean by under a hundredth of a standard
 * deviation. The queue past the cap (`beyond`: past_the_cap at the cap's spread) sits at the cap's
 * X. Returns the new top of log pi within the cap. */
static double balance_departures(struct occupancy_run *runs, int64_t within, int64_t count, double cap,
                                 double cap_departures, double r, double cap_spread, double arrivals_per_s,
                                 double y, double osl)
{
    double past, queued;
    past_the_cap(r, cap_spread, &past, &queued);
    double theta = 0;
    for (int step = 0; step < OCCUPANCY_BALANCE_STEPS; step++) {
        /* the sums over pi at theta, each over e^top, top the largest log pi so far (rescaled as it
         * grows, so one pass does) */
        double log_pi = 0, top = 0, all = 1, flow = 0, n1 = 0, n2 = 0, flow_n = 0;
        for (int64_t i = 0; i < within; i++) {
            double increment = runs[i].increment + theta, end = log_pi + increment * runs[i].length;
            if (end > top) {
                double scale = exp(top - end);
                all *= scale;
                flow *= scale;
                n1 *= scale;
                n2 *= scale;
                flow_n *= scale;
                top = end;
            }
            double x = runs[i].middle / runs[i].step_s * y / osl;
            double mass = run_mass(log_pi + increment - top, increment, runs[i].length);
            log_pi = end;
            all += mass;
            flow += mass * x;
            n1 += mass * runs[i].middle;
            n2 += mass * runs[i].middle * runs[i].middle;
            flow_n += mass * x * runs[i].middle;
        }
        double beyond = exp(log_pi - top) * past;
        all += beyond;
        flow += beyond * cap_departures;
        n1 += beyond * cap;
        n2 += beyond * cap * cap;
        flow_n += beyond * cap_departures * cap;
        double gap = flow / all - arrivals_per_s, slope = flow_n / all - flow / all * n1 / all;
        double sd = sqrt(fmax(n2 / all - n1 / all * n1 / all, 0));
        if (!(slope > 0) || !(sd > 0))
            break;
        double move = fmax(fmin(gap / slope, 0.5 / sd), -0.5 / sd);
        theta -= move;
        if (fabs(move) * sd < 0.01)
            break;
    }
    double log_pi = 0, top = 0;
    for (int64_t i = 0; i < count; i++) {
        runs[i].increment += theta;
        log_pi += runs[i].increment * runs[i].length;
        if (i < within)
            top = fmax(top, log_pi);
    }
    return top;
}

/* The sequences the KV cache holds (serve.h, "the wait for a slot"): a sequence in flight
 * reserves its prompt and output, so when lengths vary the count that fits moves with those in
 * flight, slowly: about the cap N at the mean reservation, sd sqrt(N) s / m. The wait is taken
 * over caps at N and -+ 0.5 .. 3.5 sd, a normal law's weights at those points. */
#define SLOT_CAP_NODES 15
#define SLOT_CAP_STEP_SD 0.5

struct slot_caps {
    int count;
    int64_t most; /* the largest, or the cap at the mean when larger */
    int64_t cap[SLOT_CAP_NODES];
    double weight[SLOT_CAP_NODES];
};

/* The caps about `cap` (sd cap_sd), equal ones merged: one, `cap`, when the sd is 0. */
static void slot_caps_of(int64_t cap, double cap_sd, struct slot_caps *out)
{
    *out = (struct slot_caps){.most = cap};
    double total = 0;
    for (int i = 0; i < SLOT_CAP_NODES; i++) {
        double z = SLOT_CAP_STEP_SD * (double)(i - SLOT_CAP_NODES / 2);
        int64_t c = cap_sd > 0 ? (int64_t)llround((double)cap + z * cap_sd) : cap;
        if (c < 1)
            c = 1;
        double weight = exp(-z * z / 2);
        total += weight;
        if (out->count > 0 && out->cap[out->count - 1] == c) {
            out->weight[out->count - 1] += weight;
            continue;
        }
        out->cap[out->count] = c;
        out->weight[out->count++] = weight;
        out->most = c > out->most ? c : out->most;
    }
    for (int i = 0; i < out->count; i++)
        out->weight[i] /= total;
}

/* The wait for a slot over the caps (serve.h): at each cap c, the chance a request waits is the
 * birth-death law's own there (pi to c from the runs, within a run its ratio a count, and the
 * mass past c, past_the_cap; 1 where lambda >= X(c)); the requests ahead of it are the geometric
 * tail's, r / (1 - r) at r = lambda / X_c, but the sequences that hold such a cap are the longer
 * ones, so they leave at X_c = X(c) c / N, and a composition lasts about relaxation_s, over which
 * a queue near balance grows only as a random walk, sqrt(2 (lambda + X_c) t / pi), and one past
 * it by (lambda - X_c) t / 2 on average: the fewer of the two; its wait (ahead + 1) / X_c. */
static void slot_wait_of(const struct settled *g, const struct occupancy_run *runs, int64_t count, double top,
                         double arrivals_per_s, double log_rate, int64_t cap, double relaxation_s,
                         double hold_scv, double overlap, const struct slot_caps *caps, struct queue_wait *out)
{
    *out = (struct queue_wait){0};
    double pi0 = exp(-top), mass = 0, log_pi = 0; /* through the runs before run i (their masses
                                                   * over e^top, as occupancy_of left them) */
    int64_t i = 0, start = 1;                     /* run i covers start .. start + length - 1 */
    for (int k = 0; k < caps->count; k++) {
        int64_t c = caps->cap[k];
        while (i < count && start + (int64_t)runs[i].length - 1 < c) {
            mass += runs[i].mass;
            log_pi += runs[i].increment * runs[i].length;
            start += (int64_t)runs[i].length;
            i++;
        }
        double at = 0, through = mass;
        if (i < count) { /* c within run i: its first c - start + 1 counts */
            double first = log_pi + runs[i].increment - top, inc = runs[i].increment, part = (double)(c - start + 1);
            through += run_mass(first, inc, part);
            at = exp(log_pi + inc * part - top);
        }
        double t, variance, correlation, delay;
        int from = 1;
        settled_at(g, (double)c, &from, &t, &variance, &correlation, &delay);
        double r = exp(log_rate - log((double)c / t)); /* lambda / X(c) */
        double waits = 1;
        if (r < 1) {
            double past, queued;
            past_the_cap(r, spread_at(arrivals_per_s, delay, hold_scv, overlap), &past, &queued);
            double beyond = at * past;
            waits = (at + beyond) / (pi0 + through + beyond);
        }
        double leaving = arrivals_per_s / r * (double)c / (double)cap, over = arrivals_per_s / leaving;
        double episode = sqrt(2 * (arrivals_per_s + leaving) * relaxation_s / M_PI) +
                         fmax(arrivals_per_s - leaving, 0) * relaxation_s / 2;
        double ahead = over < 1 ? fmin(over / (1 - over), episode) : episode;
        double wait_s = (ahead + 1) / leaving;
        if (waits > 0) {
            out->wait_probability += caps->weight[k] * waits;
            out->mean_wait_s += caps->weight[k] * waits * wait_s;
            out->phase_probability[out->phases] = caps->weight[k] * waits;
            out->phase_mean_s[out->phases++] = wait_s;
        }
    }
}

static void occupancy_of(const struct settled *g, int64_t cap, double cap_sd, double cap_relaxation_tokens,
                         double arrivals_per_s, double osl, double y, double hold_scv, double overlap,
                         const double *levels, struct serve_occupancy *out, struct queue_wait *slot)
{
    *slot = (struct queue_wait){0};
    double last, last_variance, last_correlation, last_delay;
    int from = 1;
    settled_at(g, (double)cap, &from, &last, &last_variance, &last_correlation, &last_delay);
    from = 1;
    *out = (struct serve_occupancy){.step_max_s = last};
    double log_rate = log(arrivals_per_s * osl / y);
    double r = exp(log_rate - log((double)cap / last)); /* lambda / X(N) */
    if (!(r < 1) || !isfinite(last))
        return;
    struct slot_caps caps;
    slot_caps_of(cap, cap_sd, &caps);
    /* the runs, up to the cap (and the largest of the caps) or to where pi has fallen out of
     * every sum past its mode */
    int64_t room = 0, count = 0, within = 0;
    struct occupancy_run *runs = NULL;
    double log_pi = 0, top = 0, ratio_before = NAN;
    bool reached_cap = true;
    for (int64_t n = 1; n <= caps.most;) {
        int64_t length = n <= OCCUPANCY_EXACT ? 1 : n / OCCUPANCY_EXACT;
        if (n <= cap && n + length - 1 > cap)
            length = cap - n + 1;
        if (n + length - 1 > caps.most)
            length = caps.most - n + 1;
        double middle = (double)n + (double)(length - 1) / 2, t, v, rho, delay;
        settled_at(g, middle, &from, &t, &v, &rho, &delay);
        /* log (lambda / X(n)), and the clusters' law (queueing.h) at the spread of the share held
         * here */
        double spread = spread_at(arrivals_per_s, delay, hold_scv, overlap);
        /* the run's first count follows the last run's ratio, its others (where it has more than
         * one) its own */
        double log_ratio = log_rate - log(middle / t);
        double increment = queue_cluster_increment(log_ratio, ratio_before, spread);
        if (length > 1)
            increment = (increment + (double)(length - 1) * queue_cluster_increment(log_ratio, log_ratio, spread)) /
                        (double)length;
        ratio_before = log_ratio;
        if (increment < 0 && log_pi + increment * (double)length < top - OCCUPANCY_TAIL) {
            reached_cap &= n > cap; /* past the mode (X never falls as n grows): nothing left to add */
            break;
        }
        if (count == room) {
            room = room ? 2 * room : 1024;
            runs = xrealloc(runs, (size_t)room * sizeof *runs);
        }
        runs[count++] = (struct occupancy_run){middle, t, v, rho, delay, spread, (double)length, increment, 0};
        within += n <= cap;
        log_pi += increment * (double)length;
        top = n <= cap ? fmax(top, log_pi) : top;
        n += length;
    }
    double cap_spread = spread_at(arrivals_per_s, last_delay, hold_scv, overlap);
    top = balance_departures(runs, within, count, (double)cap, (double)cap / last * y / osl, r, cap_spread,
                             arrivals_per_s, y, osl);
    double mass = 0, n1 = 0, n2 = 0, t1 = 0, t2 = 0, t3 = 0, v1 = 0, vr = 0, d1 = 0, g1 = 0;
    log_pi = 0;
    for (int64_t i = 0; i < within; i++) {
        struct occupancy_run *x = &runs[i];
        x->mass = run_mass(log_pi + x->increment - top, x->increment, x->length);
        log_pi += x->increment * x->length;
        mass += x->mass;
        n1 += x->mass * x->middle;
        n2 += x->mass * x->middle * x->middle;
        t1 += x->mass * x->step_s;
        t2 += x->mass * x->step_s * x->step_s;
        t3 += x->mass * x->step_s * x->step_s * x->step_s;
        v1 += x->mass * x->variance_s2;
        vr += x->mass * x->variance_s2 * x->correlation;
        d1 += x->mass * x->delay_s;
        g1 += x->mass * x->spread;
    }
    double at_cap = reached_cap ? exp(log_pi - top) : 0; /* pi(N), unnormalised */
    double pi0 = exp(-top);                                /* pi(0): no step runs */
    double past, ahead;
    past_the_cap(r, cap_spread, &past, &ahead);
    double beyond = at_cap * past;  /* pi(n > N) */
    double queued = at_cap * ahead; /* sum (n - N) pi(n) */
    n1 += beyond * (double)cap;
    n2 += beyond * (double)cap * (double)cap;
    t1 += beyond * last;
    t2 += beyond * last * last;
    t3 += beyond * last * last * last;
    v1 += beyond * last_variance;
    vr += beyond * last_variance * last_correlation;
    d1 += beyond * last_delay;
    g1 += beyond * cap_spread;
    double busy = mass + beyond, all = busy + pi0;
    out->stable = true;
    out->sequences_mean = n1 / all;
    out->sequences_variance = fmax(n2 / all - out->sequences_mean * out->sequences_mean, 0);
    /* an Ornstein-Uhlenbeck process's 1 / slope = 2 Var / D, D = 2 lambda G: the clusters widen
     * the law, not how fast it forgets */
    out->relaxation_s = out->sequences_variance / (arrivals_per_s * (busy > 0 ? g1 / busy : 1));
    out->rate_elasticity = out->sequences_mean > 0 ? out->relaxation_s * arrivals_per_s / out->sequences_mean : 0;
    out->step_mean_s = t1 / busy; /* a step runs only while some sequence is in flight */
    out->step_variance_s2 = fmax(t2 / busy - out->step_mean_s * out->step_mean_s, 0);
    double m = out->step_mean_s;
    out->step_third_s3 = t3 / busy - 3 * m * t2 / busy + 2 * m * m * m;
    out->composition_variance_s2 = v1 / busy;
    out->composition_correlation = v1 > 0 ? vr / v1 : 0;
    out->prompt_delay_s = d1 / busy;
    if (caps.count > 1) {
        for (int64_t i = within; i < count; i++) { /* the runs past the cap that some caps reach */
            runs[i].mass = run_mass(log_pi + runs[i].increment - top, runs[i].increment, runs[i].length);
            log_pi += runs[i].increment * runs[i].length;
        }
        slot_wait_of(g, runs, count, top, arrivals_per_s, log_rate, cap, cap_relaxation_tokens / y * last, hold_scv,
                     overlap, &caps, slot);
    } else {
        slot->wait_probability = (at_cap + beyond) / all;
        slot->mean_wait_s = queued / all / arrivals_per_s;
    }
    out->wait_probability = slot->wait_probability;
    out->mean_wait_s = slot->mean_wait_s;
    out->slot_caps = caps.count;
    out->idle_probability = pi0 / all;
    for (int l = 0; l < TAIL_LEVELS; l++) {
        double below = 0;
        out->step_quantile_s[l] = last;
        for (int64_t i = 0; i < within; i++) {
            below += runs[i].mass;
            if (below >= levels[l] * busy) {
                out->step_quantile_s[l] = runs[i].step_s;
                break;
            }
        }
    }
    free(runs);
}

/* The count the KV holds where the occupancy runs high (serve.h, "the wait for a slot"): the
 * sequences in excess of its mean came with clusters, which a prompt's prefill hold gathers, so a
 * share 1 - 1 / G of them (the variance the clusters add) reserve the KV of sequences weighed by
 * their prompt too, held_prompt_context, the rest the mean reservation m; the cap N (counted at m)
 * is reached at mean + (N - mean) m / m_excess. The MLPerf Llama 3.1 405B mix on an H200 node at
 * batch 14 (G 3.1, m 9,975 tokens, 11,856 by prompt): 36 of the 39, where the simulation holds a
 * request back with 35 decoding at the mode, its reservation a sequence 10,553 tokens at 32-35 in
 * flight against 10,048 on average. N itself where lengths are alike or nothing clusters. */
static int64_t clustered_cap(const struct serve_workload *w, const struct serve_occupancy *o, int64_t cap)
{
    double mean = o->sequences_mean, m = (double)serve_held_context(w);
    if (w->lengths.bins == 0 || !o->stable || !(mean > 0) || !(o->rate_elasticity > 0) || mean >= (double)cap)
        return cap;
    double spread = o->sequences_variance / (mean * o->rate_elasticity); /* the clusters' G over the law */
    double excess = m + fmax(1 - 1 / spread, 0) * fmax(w->lengths.held_prompt_context - m, 0);
    int64_t held = (int64_t)floor(mean + ((double)cap - mean) * m / excess);
    return held < 1 ? 1 : held < cap ? held : cap;
}

/* The slots of the cap (each the mean reservation m) the prompts being prefilled hold: an engine
 * reserves a prompt's KV when its first chunk is scheduled, so by Little's law lambda E[hold x
 * reservation], the hold its steps, delta (what the prompt adds to them) + T for each of its
 * chunks, longer for a longer prompt, so each reserves held_prefilling_context. The MLPerf Llama
 * 3.1 405B mix at batch 14 on an H200 node: 0.5 prompts, as in the simulation (0.7 when a request
 * is held back). */
static double prefilling_slots(const struct serve_workload *w, double arrivals_per_s, double delay_s, double step_s)
{
    double m = (double)serve_held_context(w);
    double reserves = w->lengths.bins > 0 ? w->lengths.held_prefilling_context : m;
    double chunks = fmax(prefilled_tokens(w) / unit_tokens(w), 1);
    return arrivals_per_s * (delay_s + chunks * step_s) * reserves / m;
}

/* A dense point's settled step, found once a call (it depends on lambda), from the nearest point
 * below already found. */
struct settled_point {
    bool done;
    double step_s, variance_s2, correlation, delay_s;
};

static void settle_point(struct occupancy_table *table, struct settled_point *at, const struct serve_workload *w,
                         double arrivals_per_s, int i)
{
    if (at[i].done)
        return;
    int below = i - 1;
    while (below >= 0 && !at[below].done)
        below--;
    double near[2] = {below >= 0 ? at[below].step_s : NAN, below >= 0 ? at[below].correlation : 0};
    settled_step(table_step(table, i), w, arrivals_per_s, near, &at[i].step_s, &at[i].variance_s2,
                 &at[i].correlation, &at[i].delay_s);
    at[i].done = true;
}

/* Whether the chord between the settled points about n is within OCCUPANCY_CHORD of the step
 * settled at the dense point nearest n: then the finer points would move nothing that matters. */
#define OCCUPANCY_CHORD 1e-3

static bool chord_holds(struct occupancy_table *table, struct settled_point *at, const struct serve_workload *w,
                        double arrivals_per_s, double n)
{
    int nearest = 0;
    for (int i = 1; i < table->count; i++)
        if (fabs(table->sequences[i] - n) < fabs(table->sequences[nearest] - n))
            nearest = i;
    int below = nearest - 1, above = nearest + 1;
    while (below >= 0 && !at[below].done)
        below--;
    while (above < table->count && !at[above].done)
        above++;
    if (at[nearest].done || below < 0 || above >= table->count)
        return true; /* a settled point itself, or beyond them: no chord to check */
    settle_point(table, at, w, arrivals_per_s, nearest);
    double x0 = table->sequences[below], x1 = table->sequences[above], x = table->sequences[nearest];
    double chord = at[below].step_s + (x - x0) / (x1 - x0) * (at[above].step_s - at[below].step_s);
    return isfinite(chord) && fabs(chord - at[nearest].step_s) <= OCCUPANCY_CHORD * at[nearest].step_s;
}

/* A rank's chance of waiting for a slot below which its law is not refined (instance_occupancy):
 * a millionth of the 1% a p99 target leaves */
#define SLOT_WAIT_NEGLIGIBLE 1e-8

/* What an instance's occupancy is asked at (instance_occupancy). */
struct occupancy_ask {
    const struct serve_workload *w;
    int64_t batch, cap;
    double cap_sd, arrivals_per_s, y;
    bool prefilling;
    const double *levels;
    /* a rank's law where the instance deals its requests to its ranks in turn: the rank's mean
     * count and the peakedness of its arrivals (dealt_peakedness; 1: a Poisson stream) */
    double rank_mean, peakedness;
};

/* The peakedness (variance over mean) of the count of a rank that takes every dp-th of a
 * Poisson stream of requests, as an instance's controller deals them to its ranks in turn
 * (SGLang's round-robin default): its arrivals are Erlang-dp, c_a^2 = 1 / dp, and an
 * infinite-server system's count varies z = 1 + (c_a^2 - 1) k times its mean, k = E[min(S1, S2)]
 * / E[S] = integral of P(S > t)^2 dt / E[S] over two lives (1 for lives alike: a window of dp-th
 * arrivals; 1/2 for exponential lives, z = (1 + c_a^2) / 2): the variance of GI/GI/infinity's
 * heavy-traffic limit, lambda (integral of G^c - G^c^2 + c_a^2 integral of G^c^2) (Borovkov 1967;
 * Whitt 1982), which the simulation's ranks bear out (README, "Requests dealt to the ranks"). */
static double dealt_peakedness(const struct serve_workload *w, double dp)
{
    double overlap = w->lengths.bins > 0 ? w->lengths.life_overlap : 1;
    return dp > 1 ? 1 + (1 / dp - 1) * overlap : 1;
}

/* The occupancy of `ranks` queues alike, each at lambda / ranks with a ranks-th of the cap, from
 * the instance's settled steps `all`, a rank's count n stepping as the instance at fixed + slope
 * n. Where the ranks step on their own (`apart`: fixed 0, slope ranks, every rank alike) one
 * prompt more is a whole one on a rank's step; where they step together one on the instance's.
 * *out in the instance's sequences (the ranks' sum). */
static void occupancy_over_ranks(const struct settled *all, const struct occupancy_ask *a, double ranks, bool apart,
                                 double fixed, double slope, struct serve_occupancy *out, struct queue_wait *slot)
{
    const struct serve_workload *w = a->w;
    struct settled g = *all;
    for (int i = 0; i < g.count; i++) {
        g.sequences[i] = (g.sequences[i] - fixed) / slope;
        g.delay_s[i] *= apart ? ranks : 1;
    }
    int64_t rank_cap = a->cap / (int64_t)ranks;
    if (a->prefilling) { /* less what the prompts being prefilled hold, at the settled step about the batch */
        double t, v, rho, delay;
        int from = 1;
        settled_at(&g, fmin((double)a->batch / ranks, (double)rank_cap), &from, &t, &v, &rho, &delay);
        double kept = floor((double)rank_cap - prefilling_slots(w, a->arrivals_per_s / ranks, delay, t));
        if (kept < (double)rank_cap) /* not where the step did not settle (NaN) */
            rank_cap = kept > 1 ? (int64_t)kept : 1;
    }
    for (int shifted = 0; shifted < 2; shifted++) {
        /* arrivals dealt in turn narrow a rank's count by sqrt(z) about its mean: the birth-death
         * law of Poisson arrivals, reached at a cap as many of its sd away as the rank's cap is of
         * the narrower law's (the cap's own sd alike) */
        double stretch = !apart && a->peakedness > 0 && a->peakedness < 1 ? 1 / sqrt(a->peakedness) : 1;
        int64_t law_cap = rank_cap;
        if (stretch > 1 && (double)rank_cap > a->rank_mean)
            law_cap = (int64_t)llround(a->rank_mean + ((double)rank_cap - a->rank_mean) * stretch);
        occupancy_of(&g, law_cap > 1 ? law_cap : 1, a->cap_sd / sqrt(ranks) * stretch,
                     w->lengths.held_relaxation_tokens, a->arrivals_per_s / ranks, (double)w->osl, a->y,
                     prompt_scv(w), w->lengths.bins > 0 ? w->lengths.life_overlap : 1, a->levels, out, slot);
        int64_t held = a->prefilling ? clustered_cap(w, out, rank_cap) : rank_cap;
        if (held >= rank_cap)
            break;
        rank_cap = held;
    }
    out->sequences_mean *= ranks;
    out->sequences_variance *= ranks;
    out->running_cap = a->cap;
}

/* The occupancy an instance of layout `l` (setup `s`) holds when requests arrive at
 * `arrivals_per_s` and it runs `batch` sequences on average: under Poisson arrivals the
 * birth-death process above, otherwise exactly `batch`, its steps those of `at_batch` (the
 * batch's own composition); *slot the wait for a slot, with its phases (none where nobody waits).
 * False when the instance cannot keep up. */
static bool instance_occupancy(const struct serve_pool *pool, const struct roof_setup *s, const struct layout *l,
                               const struct serve_workload *w, int64_t batch, struct composition *at_batch,
                               bool prefilling, double arrivals_per_s, struct serve_occupancy *out,
                               struct queue_wait *slot)
{
    *slot = (struct queue_wait){0};
    double levels[TAIL_LEVELS];
    tail_levels(w, levels);
    double y = serve_tokens_per_step(w);
    if (w->arrivals != SERVE_POISSON) {
        double mean, variance;
        double units = prefilling ? units_of(s, w, y * (double)batch / (double)w->osl) : 0;
        composed(at_batch, w, units, &mean, &variance);
        /* alike requests not at random come in cohorts or one by one, a cohort of one unit (each
         * life then holds every other client's prompt once: Llama 3.1 70B, 2,048/512 at 40
         * sequences on TP 4 x DP 2, the simulation's TPOT the same for all, where the two counts'
         * spread had put its p99 14% above); spread starts read lengths that vary about their means
         * (calibrate), whose lives are not alike */
        bool alike = prefilling && !prompts_poisson(w) && !w->spread_starts;
        double cohort = alike && serve_workload_in_cohorts(w) ? cohort_units(s, w, batch) : 0, excess = 0;
        double remainder_share = 0, remainder_excess = 0;
        if (alike && cohort <= 0)
            cohort = 1;
        struct cohorts h;
        if (units > 0 && units < cohort) {
            /* every life holds the other cohorts' steps once, not those of its own prompt's units
             * (c / u of them): the same TPOT for all */
            variance = 0;
            double own = prefilled_tokens(w) / unit_tokens(w), t0 = composition_at(at_batch, 0);
            excess = own * (composition_at(at_batch, cohort) - t0) * (1 - units / cohort);
            if (serve_workload_in_cohorts(w) && cohorts_of(s, w, batch, units, &h) && h.r > 0) {
                /* with a cohort of r beside them, a life of n steps holds the other cohorts' steps:
                 * in one of K, q - 1 of K and the one of r; in that of r, q of K. Its excess is what
                 * the mean steps hold over those */
                double n = fmax((double)w->osl - 1, 1) / y, tk = composition_at(at_batch, h.k) - t0,
                       tr = composition_at(at_batch, h.r) - t0, held = n * (mean - t0);
                excess = held - own * ((h.q - 1) * tk + tr);
                remainder_excess = held - own * h.q * tk;
                remainder_share = h.r / (double)batch;
            }
        }
        *out = (struct serve_occupancy){.stable = isfinite(mean), .sequences_mean = (double)batch,
                                        .running_cap = batch, .step_mean_s = mean,
                                        .step_max_s = mean, .composition_variance_s2 = variance,
                                        .composition_units = units, .cohort_excess_s = excess,
                                        .cohort_remainder_share = remainder_share,
                                        .cohort_remainder_excess_s = remainder_excess,
                                        .composition_clump = prompts_poisson(w) ? prompt_clump(w) : 0};
        for (int i = 0; i < TAIL_LEVELS; i++)
            out->step_quantile_s[i] = mean;
        return out->stable;
    }
    int64_t cap = most_held(pool, pool->topology, l, serve_held_context(w));
    if (cap < batch)
        cap = batch;
    /* the count the KV holds, as the reservations in flight vary (slot_caps) */
    double cap_sd = w->lengths.bins > 0 ? sqrt((double)cap) * w->lengths.held_sd / (double)serve_held_context(w) : 0;
    /* a dense model's ranks step on their own: each is a queue of its own at lambda / dp (the
     * requests sent to the ranks in turn, taken as a Poisson stream thinned), its step at n the
     * instance's at dp n, every rank alike; the instance holds the ranks' sum, and where its
     * steps lie is a rank's count times dp (sd sqrt(dp) times the sum's). The ranks of an
     * instance that step together (data-parallel attention, aggregated or decode) step at the
     * instance's count, the ranks' sum, but each holds its own requests' KV, a dp-th of its, and
     * takes the requests in turn (SGLang's controller), so each fills its share and waits for a
     * slot on its own: the wait for a slot is a rank's (DeepSeek-V3 on 8 H200 ranks, the MLPerf
     * DeepSeek-R1 mix at 258 sequences: a KV pooled over the ranks had 0.6% of the requests
     * wait, where the simulation of ranks each with their own has 22% and TTFT p99 124 s; served
     * 1P1D on two nodes at 259, 0.67% against 22% and 119 s) */
    double ranks = ranks_independent(s) ? (double)l->dp : 1;
    bool together = !ranks_independent(s) && l->dp > 1;
    struct occupancy_table *table = occupancy_table_of(s, w, cap, prefilling);
    /* each point settled once a call (the law depends on lambda), at the coarse points first */
    struct settled_point *at = xcalloc((size_t)table->count, sizeof *at);
    bool coarse[OCCUPANCY_DENSE] = {false};
    for (int g = 0; g < OCCUPANCY_GRID; g++)
        coarse[table->count > 1 ? (int)round((double)(table->count - 1) * g / (OCCUPANCY_GRID - 1)) : 0] = true;
    double last_mean = NAN;
    for (int pass = 0; pass <= OCCUPANCY_FINE_ROUNDS; pass++) {
        bool use[OCCUPANCY_DENSE];
        memcpy(use, coarse, sizeof use);
        if (pass > 0) {
            double sd = sqrt(out->sequences_variance * ranks);
            if (pass > 1 && fabs(out->sequences_mean - last_mean) <= sd)
                break; /* the mass lies where the last pass looked already */
            last_mean = out->sequences_mean;
            /* the points where the last law's mass lies, and the coarse points beyond them */
            double lo = out->sequences_mean - OCCUPANCY_FINE_SD * sd,
                   hi = out->sequences_mean + OCCUPANCY_FINE_SD * sd;
            int first = 0, last = table->count - 1;
            while (first < last && table->sequences[first + 1] <= lo)
                first++;
            while (last > first && table->sequences[last - 1] >= hi)
                last--;
            if (pass == 1 && chord_holds(table, at, w, arrivals_per_s, out->sequences_mean))
                break; /* the steps are linear enough where the mass lies */
            int stride = (last - first) / OCCUPANCY_FINE + 1;
            for (int i = first; i <= last; i += stride)
                use[i] = true;
            use[last] = true;
        }
        struct settled g = {0};
        for (int i = 0; i < table->count && g.count < SETTLED_POINTS; i++) {
            if (!use[i])
                continue;
            settle_point(table, at, w, arrivals_per_s, i);
            g.sequences[g.count] = table->sequences[i];
            g.step_s[g.count] = at[i].step_s;
            g.variance_s2[g.count] = at[i].variance_s2;
            g.correlation[g.count] = at[i].correlation;
            g.delay_s[g.count++] = at[i].delay_s;
        }
        struct occupancy_ask ask = {.w = w, .batch = batch, .cap = cap, .cap_sd = cap_sd,
                                    .arrivals_per_s = arrivals_per_s, .y = y, .prefilling = prefilling,
                                    .levels = levels};
        occupancy_over_ranks(&g, &ask, ranks, true, 0, ranks, out, slot);
        if (together && out->stable) {
            /* the slots a rank's own: its wait for one from its share of the KV and the requests.
             * Beside a rank's n the others hold (dp - 1)(m + rho (n - m)), m a rank's mean and rho
             * the ranks' correlation: what the instance's variance holds over dp ranks alike
             * apart, each at the others' mean (a rank's law then), clipped to [0, 1]. The common
             * step couples them: where prompts of several chunks make the steps' time swing, all
             * ranks' counts rise and fall together (rho 1: Qwen3-235B-A22B at 16,000/1,000, whose
             * instance's sd the simulation's within 2%), where the steps barely vary they are
             * apart (rho 0.01-0.05: the MLPerf DeepSeek-R1 mix on 8 H200 ranks, aggregated or
             * decode; taken as dp n there, the law was sqrt(dp) too wide, 0.54% waiting where the
             * simulation has 0.07%) */
            struct serve_occupancy by_rank, widest;
            struct queue_wait rank_slot, widest_slot;
            double dp = (double)l->dp, m = out->sequences_mean / dp;
            ask.rank_mean = m;
            /* aggregated, each request joins as it arrives, dealt to the next rank; a decode
             * instance's join in its prefill batches, clumps that dealing spreads but does not
             * make regular: a Poisson stream thinned there */
            ask.peakedness = prefilling ? dealt_peakedness(w, dp) : 1;
            /* rho 1 first: its tail the widest, where it has next to no waits none has */
            occupancy_over_ranks(&g, &ask, dp, false, 0, dp, &widest, &widest_slot);
            by_rank = widest;
            rank_slot = widest_slot;
            if (!widest.stable || widest.wait_probability >= SLOT_WAIT_NEGLIGIBLE) {
                occupancy_over_ranks(&g, &ask, dp, false, (dp - 1) * m, 1, &by_rank, &rank_slot);
                double rho = by_rank.stable && by_rank.sequences_variance > 0
                                 ? (out->sequences_variance / by_rank.sequences_variance - 1) / (dp - 1)
                                 : 1;
                rho = isfinite(rho) ? fmin(fmax(rho, 0), 1) : 1;
                if (rho >= 1) { /* the widest law, already worked out */
                    by_rank = widest;
                    rank_slot = widest_slot;
                } else if (rho > 0) {
                    occupancy_over_ranks(&g, &ask, dp, false, (dp - 1) * (1 - rho) * m, 1 + (dp - 1) * rho, &by_rank,
                                         &rank_slot);
                }
            }
            out->stable = by_rank.stable;
            out->wait_probability = by_rank.wait_probability;
            out->mean_wait_s = by_rank.mean_wait_s;
            out->slot_caps = by_rank.slot_caps;
            *slot = rank_slot;
        }
        if (!out->stable)
            break;
    }
    free(at);
    if (out->stable && prefilling) {
        out->composition_units = units_of(s, w, arrivals_per_s * out->step_mean_s);
        double rho = out->composition_correlation;
        out->composition_clump = prompts_poisson(w) ? prompt_clump(w) / (1 - rho * rho) : 0;
    }
    return out->stable;
}

/* ---- percentiles (serve.h, "Percentiles") ---- */

/* The sd of a request's TPOT from its occupancy's part and its steps' prompts', correlated by
 * `together` (queue_window_correlation): a run of arrivals lengthens both. */
static double combined_sd(double occupancy_sd, double steps_sd, double together)
{
    return sqrt(occupancy_sd * occupancy_sd + steps_sd * steps_sd + 2 * together * occupancy_sd * steps_sd);
}

/* The variance of the mean of n steps whose prompts correlate by rho from one step to the next
 * (an AR(1) sequence), over that of n independent ones: (1 + rho) / (1 - rho) less the ends'
 * share, 2 rho (1 - rho^n) / (n (1 - rho)^2); 1 at n = 1 or rho = 0. */
static double correlated_share(double rho, double n)
{
    if (rho <= 0 || n <= 1)
        return 1;
    return (1 + rho) / (1 - rho) - 2 * rho * -expm1(n * log(rho)) / (n * (1 - rho) * (1 - rho));
}

/* TPOT at the levels (see the header). A request's TPOT is the mean of the steps of its life,
 * n = (osl - 1) / y of them: about the mean step over the occupancy / y, it deviates by the
 * occupancy's quantile shrunk to the share of its variance a life of that length keeps
 * (queue_window_share of the relaxation time), and by the steps' own variation (the prompts they
 * carry), independent from step to step, a normal law of variance V / n; the two added past the
 * median with the correlation a run of arrivals gives them (queue_window_correlation). Per
 * output-length bin, the quantiles averaged by weight (exact for one length). */
/* Laws of TPOT, one an output-length bin, mixed by weight: each the occupancy's normal part and
 * the sum of the prompts its steps carry, a compound Poisson law, skewed (a few long prompts make
 * a short life slow): together a lognormal shifted to their mean, variance and skewness (normal
 * where they are not skewed). */
struct skewed_mix {
    int64_t count;
    double weight[SERVE_LENGTH_BINS];
    double shift[SERVE_LENGTH_BINS], mu[SERVE_LENGTH_BINS], sigma[SERVE_LENGTH_BINS]; /* x = shift + e^(mu + sigma Z) */
    double mean[SERVE_LENGTH_BINS], sd[SERVE_LENGTH_BINS];                            /* sigma 0: normal */
};

/* A shifted lognormal of mean `mean`, standard deviation `sd` and skewness `skew` >= 0: e^sigma^2 =
 * 1 + u^2 with u^3 + 3 u = skew (Cardano), e^mu from the variance, the shift from the mean. */
static void skewed_add(struct skewed_mix *m, double weight, double mean, double sd, double skew)
{
    int64_t i = m->count++;
    m->weight[i] = weight;
    m->mean[i] = mean;
    m->sd[i] = sd;
    m->sigma[i] = 0;
    if (!(skew > 1e-3) || !(sd > 0))
        return;
    double root = sqrt(skew * skew / 4 + 1), u = cbrt(skew / 2 + root) + cbrt(skew / 2 - root);
    double s2 = log1p(u * u), scale = sd / (u * sqrt(1 + u * u)); /* sd = e^mu sqrt((w - 1) w) */
    m->sigma[i] = sqrt(s2);
    m->mu[i] = log(scale);
    m->shift[i] = mean - scale * exp(s2 / 2);
}

static void skewed_at(const struct skewed_mix *m, double x, double *cdf, double *density)
{
    double below = 0, dens = 0, total = 0;
    for (int64_t i = 0; i < m->count; i++) {
        if (m->weight[i] <= 0)
            continue;
        total += m->weight[i];
        if (m->sigma[i] > 0) {
            if (x <= m->shift[i])
                continue;
            double z = (log(x - m->shift[i]) - m->mu[i]) / m->sigma[i];
            below += m->weight[i] * queue_normal_cdf(z);
            dens += m->weight[i] * exp(-z * z / 2) / (m->sigma[i] * (x - m->shift[i]) * 2.5066282746310002);
        } else if (m->sd[i] > 0) {
            double z = (x - m->mean[i]) / m->sd[i];
            below += m->weight[i] * queue_normal_cdf(z);
            dens += m->weight[i] * exp(-z * z / 2) / (m->sd[i] * 2.5066282746310002);
        } else if (x >= m->mean[i]) {
            below += m->weight[i];
        }
    }
    *cdf = total > 0 ? below / total : 1;
    *density = total > 0 ? dens / total : 0;
}

/* The mixture's p-quantile by Newton's method on its CDF from x, kept within a shrinking bracket
 * [lo, hi] that bisection takes over from when a step would leave it; to a part in 10^9 of x. */
static double skewed_quantile(const struct skewed_mix *m, double p, double x, double lo, double hi)
{
    for (int step = 0; step < 200 && hi - lo > 1e-9 * fabs(x); step++) {
        double below, density;
        skewed_at(m, x, &below, &density);
        if (below < p)
            lo = x;
        else
            hi = x;
        double next = density > 0 ? x - (below - p) / density : (lo + hi) / 2;
        if (!(next > lo && next < hi))
            next = (lo + hi) / 2;
        if (fabs(next - x) <= 1e-9 * fabs(x))
            return next;
        x = next;
    }
    return x;
}

/* Where only the workload's percentile was asked for (`target_only`), the levels not worked out
 * take its value. */
static void fill_unasked(bool target_only, double *at)
{
    for (int i = 0; target_only && i < SERVE_PERCENTILES; i++)
        at[i] = at[SERVE_PERCENTILES];
}

/* The wait of a sequence that joins a running decode instance (disaggregated) for the step in
 * progress to end, D: none when the instance is idle, else the rest of a length-biased step, U T
 * (U uniform, T of the steps' mean m and variance v, normal past them): E[D^k] = (1 - idle)
 * E[T^(k+1)] / ((k + 1) m). Its mean, variance and third central moment. */
static void join_moments(const struct serve_occupancy *o, double *mean, double *variance, double *third)
{
    double m = o->step_mean_s, v = o->step_variance_s2, busy = 1 - o->idle_probability;
    if (!(m > 0)) {
        *mean = *variance = *third = 0;
        return;
    }
    double t2 = m * m + v, t3 = m * m * m + 3 * m * v, t4 = m * m * m * m + 6 * m * m * v + 3 * v * v;
    double d1 = busy * t2 / (2 * m), d2 = busy * t3 / (3 * m), d3 = busy * t4 / (4 * m);
    *mean = d1;
    *variance = fmax(d2 - d1 * d1, 0);
    *third = d3 - 3 * d1 * d2 + 2 * d1 * d1 * d1;
}

/* TPOT at the levels. `joins`: the sequence joins a running decode instance after its first token
 * (disaggregated), whose step in progress it waits out before its own first step: that wait, D
 * (join_moments), is part of its TPOT, (D + the steps) / (osl - 1), as a client measures it. */
static void tpot_tail(const struct serve_workload *w, const struct serve_occupancy *o, struct prefill_chain *chain,
                      bool joins, bool target_only, double *at, double *mean_s)
{
    double y = serve_tokens_per_step(w), levels[TAIL_LEVELS];
    tail_levels(w, levels);
    double osl[SERVE_LENGTH_BINS], weight[SERVE_LENGTH_BINS];
    int64_t bins = output_bins(w, osl, weight);
    double mean = o->step_mean_s / y;
    double join_mean = 0, join_variance = 0, join_third = 0;
    if (joins)
        join_moments(o, &join_mean, &join_variance, &join_third);
    struct skewed_mix mix = {0};
    double keep[SERVE_LENGTH_BINS], spread[SERVE_LENGTH_BINS], together[SERVE_LENGTH_BINS], lives[SERVE_LENGTH_BINS];
    double widest = 0, shifted = 0, counted = 0, mean_life = 0, weights = 0;
    double own_remainder = 0; /* alike requests in cohorts: the cohort of r's TPOT over the others' */
    for (int64_t b = 0; b < bins; b++) {
        lives[b] = fmax(osl[b] - 1, 1) / y * o->step_mean_s;
        mean_life += weight[b] * lives[b];
        weights += weight[b];
    }
    mean_life /= weights > 0 ? weights : 1;
    /* the M/G/infinity system whose relaxation is the occupancy's (its mean life): near a compute
     * plateau, where the batch drifts for longer than a life, the lives stretched to it */
    double stretch = mean_life > 0 && o->relaxation_s > 0 ? o->relaxation_s / mean_life : 0;
    double stretched[SERVE_LENGTH_BINS];
    for (int64_t b = 0; b < bins; b++)
        stretched[b] = lives[b] * stretch;
    /* the prompts' units a step, as a compound Poisson law: Poisson(m / s) clumps of s units, each
     * unit adding b to the step, b^2 m s = the composition's variance V */
    double m = o->composition_units, clump = o->composition_clump;
    bool compound = m > 0 && clump > 0 && o->composition_variance_s2 > 0;
    for (int64_t b = 0; b < bins; b++) {
        double n = fmax(osl[b] - 1, 1) / y, life = lives[b];
        double correlated = correlated_share(o->composition_correlation, n);
        keep[b] = o->relaxation_s > 0 ? sqrt(queue_window_share(life / o->relaxation_s)) : 0;
        /* a run of arrivals brings the prompts a life's steps carry and raises the occupancy it
         * lives through: the two correlate as the arrivals in a window and the mean number present
         * over it do in that M/G/infinity system */
        together[b] = life > 0 && stretch > 0 ? queue_window_correlation(stretched, weight, bins, life) : 0;
        if (!isfinite(together[b]))
            together[b] = 0;
        spread[b] = sqrt(o->composition_variance_s2 / n * correlated) / y;
        double occupancy_sd = keep[b] * sqrt(o->step_variance_s2) / y;
        double sd = combined_sd(occupancy_sd, spread[b], together[b]);
        /* the occupancy a request lives through moves its steps together: its share keep of the
         * occupancy's step law, with that law's skew (right-skewed where the batch wanders near
         * the compute plateau) */
        double occupancy_third = keep[b] * keep[b] * keep[b] * o->step_third_s3 / (y * y * y);
        /* the units of n steps, Poisson(n m / s_n) clumps of s_n = s g(rho, n) (their variance the
         * correlated sum's): third central moment n m s_n^2 units^3, at (b / (n y))^3 */
        double skew = sd > 0 ? occupancy_third / (sd * sd * sd) : 0;
        if (compound && sd > 0) {
            double per_unit = sqrt(o->composition_variance_s2 / (m * clump)), s_n = clump * correlated;
            double third = n * m * s_n * s_n * pow(per_unit / (n * y), 3);
            skew += third / (sd * sd * sd);
        }
        /* its own prompt lengthened the step before its first token by delta, and a step's prompts
         * come in proportion to the step before (rho): its j-th step is longer by delta rho^j on
         * average, its TPOT by delta rho (1 - rho^n) / ((1 - rho) n y) */
        double rho = o->composition_correlation, own = -o->cohort_excess_s / (n * y);
        double remainder = o->cohort_remainder_share;
        if (remainder > 0) /* the cohort of r beside those of K: its requests' TPOT an atom of their own */
            own_remainder = -o->cohort_remainder_excess_s / (n * y) - own;
        if (rho > 0 && o->prompt_delay_s > 0)
            own += o->prompt_delay_s * rho * -expm1(n * log(rho)) / ((1 - rho) * n * y);
        if (chain) {
            /* the chain's sum of the n steps after the first token (prefill_chain.h): its runs of
             * full steps, and the state a first token leaves, in place of the compound law */
            double sum_mean, sum_variance, sum_third;
            prefill_chain_window(chain, n, &sum_mean, &sum_variance, &sum_third);
            own = sum_mean / (n * y) - mean;
            spread[b] = sqrt(sum_variance) / (n * y);
            sd = combined_sd(occupancy_sd, spread[b], together[b]);
            skew = sd > 0 ? (sum_third / pow(n * y, 3) + occupancy_third) / (sd * sd * sd) : 0;
        }
        if (joins && osl[b] > 1) { /* the wait to join, spread over its osl - 1 tokens */
            double tokens = osl[b] - 1, third = skew * sd * sd * sd + join_third / (tokens * tokens * tokens);
            own += join_mean / tokens;
            sd = sqrt(sd * sd + join_variance / (tokens * tokens));
            skew = sd > 0 ? third / (sd * sd * sd) : 0;
            if (bins == 1)
                spread[b] = sqrt(spread[b] * spread[b] + join_variance / (tokens * tokens));
        }
        /* a request of one token has no TPOT */
        skewed_add(&mix, osl[b] > 1 ? weight[b] : 0, mean + own, sd, skew);
        shifted += (osl[b] > 1 ? weight[b] : 0) * (own + remainder * own_remainder);
        counted += osl[b] > 1 ? weight[b] : 0;
        widest = fmax(widest, sd);
    }
    /* a request's mean TPOT, over requests: the steps' mean and what its own prompt adds */
    mean += counted > 0 ? shifted / counted : 0;
    *mean_s = mean;
    if (bins > 1) {
        /* lengths that vary: the mixture's own quantiles (a quantile of a mixture is no mix of its
         * parts' quantiles) */
        /* each level from the one below it where that is higher (the levels rise but for the
         * workload's, last) */
        for (int i = target_only ? SERVE_PERCENTILES : 0; i < TAIL_LEVELS; i++) {
            double from = i > 0 && !target_only && levels[i] >= levels[i - 1] ? fmax(at[i - 1], mean) : mean;
            at[i] = widest > 0 ? fmax(skewed_quantile(&mix, levels[i], from, mean - 12 * widest, mean + 40 * widest), 0)
                               : mean;
        }
        fill_unasked(target_only, at);
        return;
    }
    /* one length: the occupancy's own quantile (skewed where the batch nears its cap), and the steps'
     * normal spread added to it past the median, with their correlation (queue_window_correlation) where
     * both lie on one side */
    for (int i = 0; i < TAIL_LEVELS; i++) {
        double occupancy = keep[0] * (o->step_quantile_s[i] - o->step_mean_s) / y;
        double steps = levels[i] == 0.5 ? 0 : queue_normal_quantile(levels[i]) * spread[0];
        double both = combined_sd(occupancy, steps, occupancy * steps > 0 ? together[0] : 0);
        double deviation = levels[i] > 0.5 ? fmax(occupancy, 0) + both - fabs(occupancy)
                           : levels[i] < 0.5 ? occupancy - (both - fabs(occupancy))
                                             : occupancy;
        /* cohorts of K and one of r: its requests' atom own_remainder from the others', the lower
         * atom the level's where it holds that share (nearest rank) */
        double r = o->cohort_remainder_share, below = own_remainder > 0 ? 1 - r : r;
        double atom = r <= 0 ? 0 : (levels[i] <= below) == (own_remainder > 0) ? -r * own_remainder
                                                                                  : (1 - r) * own_remainder;
        at[i] = osl[0] > 1 ? fmax(mean + atom + deviation, 0) : mean;
    }
}

/* TTFT as a wait (an atom at 0 and an exponential tail, queueing.h) after an own time given as
 * weighted atoms. */
struct ttft_mix {
    const struct queue_wait *wait;
    int64_t count, room;
    double *weight, *own_s;
};

static void ttft_mix_add(struct ttft_mix *m, double weight, double own_s)
{
    if (m->count == m->room) {
        m->room = m->room ? 2 * m->room : 256;
        m->weight = xrealloc(m->weight, (size_t)m->room * sizeof *m->weight);
        m->own_s = xrealloc(m->own_s, (size_t)m->room * sizeof *m->own_s);
    }
    m->weight[m->count] = weight;
    m->own_s[m->count++] = own_s;
}

static void ttft_mix_release(struct ttft_mix *m)
{
    free(m->weight);
    free(m->own_s);
}

struct weighted_time {
    double time_s, weight;
};

static int compare_time(const void *a, const void *b)
{
    const struct weighted_time *x = a, *y = b;
    return (x->time_s > y->time_s) - (x->time_s < y->time_s);
}

/* TTFT's CDF with a wait of chance P: the 1 - P that do not wait at the own times themselves
 * (sorted, `through` their cumulative weights), those that wait at the own times merged (so the
 * merging moves the CDF by at most P times what it moves a merged atom's: a rare wait leaves the
 * quantiles those of the own times, and continuous in the load). */
struct split_cdf {
    const struct weighted_time *sorted;
    const double *through;
    int64_t count;
    double total;
    const struct ttft_mix *merged;
    double merged_total; /* of the merged atoms' weights */
    const struct queue_wait *wait;
};

static double split_cdf(void *context, double t)
{
    const struct split_cdf *c = context;
    const struct queue_wait *wait = c->wait;
    double p = wait->wait_probability;
    int64_t lo = 0, hi = c->count; /* the first own time above t */
    while (lo < hi) {
        int64_t middle = lo + (hi - lo) / 2;
        if (c->sorted[middle].time_s <= t)
            lo = middle + 1;
        else
            hi = middle;
    }
    double exact = lo > 0 ? c->through[lo - 1] / c->total : 0, waited = 0;
    for (int64_t i = 0; i < c->merged->count; i++)
        if (t >= c->merged->own_s[i])
            waited += c->merged->weight[i] * (queue_wait_cdf(wait, t - c->merged->own_s[i]) - (1 - p));
    return (1 - p) * exact + (c->merged_total > 0 ? waited / c->merged_total : 0);
}

/* The quantiles: with no wait, the atoms' own (sorted, the smallest whose cumulative weight
 * reaches the level); else by bisection on the mixture's CDF (split_cdf). `margin` (NULL: none):
 * another wait after the same own times, whose quantile at the workload's percentile goes to
 * *margin_s (the slot's margin, SERVE_SLOT_WAIT_MARGIN). */
static void ttft_tail(const struct serve_workload *w, const struct ttft_mix *m, bool target_only, double *at,
                      double *mean_s, const struct queue_wait *margin, double *margin_s)
{
    double levels[TAIL_LEVELS], low = INFINITY, high = 0, own = 0, total = 0;
    tail_levels(w, levels);
    for (int64_t i = 0; i < m->count; i++) {
        low = fmin(low, m->own_s[i]);
        high = fmax(high, m->own_s[i]);
        own += m->weight[i] * m->own_s[i];
        total += m->weight[i];
    }
    *mean_s = own / total + m->wait->mean_wait_s;
    struct weighted_time *sorted = xmalloc((size_t)m->count * sizeof *sorted);
    for (int64_t i = 0; i < m->count; i++)
        sorted[i] = (struct weighted_time){m->own_s[i], m->weight[i]};
    qsort(sorted, (size_t)m->count, sizeof *sorted, compare_time);
    if (!margin && (m->wait->wait_probability <= 0 || m->wait->mean_wait_s <= 0)) {
        for (int i = target_only ? SERVE_PERCENTILES : 0; i < TAIL_LEVELS; i++) {
            double below = 0;
            int64_t j = 0;
            while (j < m->count - 1 && (below += sorted[j].weight) < levels[i] * total * (1 - 1e-12))
                j++;
            at[i] = sorted[j].time_s;
        }
        fill_unasked(target_only, at);
        free(sorted);
        return;
    }
    /* with a wait, the own times first merged into TTFT_MERGED atoms, finer toward the tail (a
     * share of 1 / 32 below p90, 1 / 160 to p99, 1 / 1600 above), each at its weighted mean */
    struct ttft_mix merged = {.wait = m->wait};
    double below = 0, edge = 0, sum = 0, weight = 0;
    for (int64_t i = 0; i < m->count; i++) {
        if (weight == 0) {
            double at_share = below / total;
            edge = at_share < 0.9 ? at_share + 1.0 / 32 : at_share < 0.99 ? at_share + 1.0 / 160 : at_share + 1.0 / 1600;
        }
        sum += sorted[i].time_s * sorted[i].weight;
        weight += sorted[i].weight;
        below += sorted[i].weight;
        if (below / total >= edge * (1 - 1e-12) || i == m->count - 1) {
            ttft_mix_add(&merged, weight, sum / weight);
            sum = weight = 0;
        }
    }
    double *through = xmalloc((size_t)m->count * sizeof *through);
    for (int64_t i = 0; i < m->count; i++)
        through[i] = (i > 0 ? through[i - 1] : 0) + sorted[i].weight;
    struct split_cdf split = {.sorted = sorted, .through = through, .count = m->count, .total = total,
                              .merged = &merged, .wait = m->wait};
    for (int64_t i = 0; i < merged.count; i++)
        split.merged_total += merged.weight[i];
    double tail = queue_wait_tail_mean_s(m->wait);
    for (int i = target_only ? SERVE_PERCENTILES : 0; i < TAIL_LEVELS; i++)
        at[i] = queue_quantile(split_cdf, &split, levels[i], low, high + 50 * tail + 1e-12);
    fill_unasked(target_only, at);
    if (margin) {
        split.wait = margin;
        *margin_s = queue_quantile(split_cdf, &split, levels[SERVE_PERCENTILES], low,
                                   high + 50 * queue_wait_tail_mean_s(margin) + 1e-12);
    }
    free(through);
    free(sorted);
    ttft_mix_release(&merged);
}

/* Points the length-biased step and the uniform share of it an arrival waits out are cut into. */
/* Above this many prompts a step, K's Poisson law is taken at TTFT_COUNT_POINTS normal points. */
#define TTFT_NORMAL_COUNT 24
#define TTFT_COUNT_POINTS 12
#define TTFT_SHARE_POINTS 3
/* The length-biased step's law cut at these shares (a mix of prompt lengths, which spreads the
 * own times already: the coarser cut), each part at its middle share: finer toward the tail, which
 * sets TTFT's p99 (even sixths put the longest step at its 92nd percentile). */
static const double ttft_step_cuts[] = {0, 0.3, 0.6, 0.85, 0.95, 0.985, 0.995, 0.999, 1};
static const double ttft_step_cuts_mix[] = {0, 0.7, 0.95, 0.995, 1};

/* Adds a prompt's own times, of weight `weight`, to the mix (see aggregated_tails): over L, a
 * lognormal law of mean `biased` and variance `biased_variance` at its quantile midpoints, and
 * the share U of it (closed-loop: no L, no U), K ~ Poisson(lambda L) prompts with it (closed-loop
 * with alike requests: the two counts about the mean), and `own_s`, its own steps, with its first
 * chunk's step grown from the batch's composition at one prompt to that at 1 + K. */
static void ttft_own_add(struct ttft_mix *mix, const struct serve_workload *w, struct composition *at_batch,
                         double weight, double own_s, double slower, double arrivals_per_s, double biased,
                         double biased_variance, bool open, double joining)
{
    double base = own_s - composition_at(at_batch, 1) * slower;
    /* a mix of prompt lengths spreads the own times already: half the points a bin */
    int thin = w->lengths.prompt_bins > 1 ? 2 : 1;
    const double *cuts = thin > 1 ? ttft_step_cuts_mix : ttft_step_cuts;
    int steps = !open ? 1 : thin > 1 ? (int)(sizeof ttft_step_cuts_mix / sizeof *cuts) - 1
                                     : (int)(sizeof ttft_step_cuts / sizeof *cuts) - 1;
    int shares = open ? (TTFT_SHARE_POINTS + 1) / thin : 1;
    double cv2 = biased > 0 ? biased_variance / (biased * biased) : 0;
    double sigma = sqrt(log1p(cv2)), mu = log(fmax(biased, 1e-300)) - sigma * sigma / 2;
    for (int i = 0; i < steps; i++) {
        double length = open ? exp(mu + sigma * queue_normal_quantile((cuts[i] + cuts[i + 1]) / 2)) : 0;
        double m = open ? units_of(at_batch->setup, w, arrivals_per_s * length) : joining;
        double wi = open ? weight * (cuts[i + 1] - cuts[i]) : weight;
        /* K ~ Poisson(m), the others beside a given prompt (Palm); alike requests that do not
         * arrive at random come m a step, the two counts about m, a step's count seen from a
         * prompt in it weighted by the count (k P(k)): K = that count less the prompt */
        double k_low = 0, k_high, p, mode = floor(m);
        if (!prompts_poisson(w)) {
            double f = m - mode, low = (1 - f) * mode, high = f * (mode + 1);
            for (int j = 0; j < shares; j++) {
                double waited = open ? length * (j + 0.5) / shares : 0;
                if (low > 0)
                    ttft_mix_add(mix, wi * low / (low + high) / shares,
                                 base + waited + composition_at(at_batch, mode) * slower);
                if (high > 0)
                    ttft_mix_add(mix, wi * high / (low + high) / shares,
                                 base + waited + composition_at(at_batch, mode + 1) * slower);
            }
            continue;
        }
        if (m > TTFT_NORMAL_COUNT) {
            /* many a step: Poisson(m) as the normal law it nears, at its quantile midpoints (its
             * point probabilities would underflow from exp(-m) past m ~ 745) */
            for (int q = 0; q < TTFT_COUNT_POINTS; q++) {
                double k = fmax(round(m + sqrt(m) * queue_normal_quantile((q + 0.5) / TTFT_COUNT_POINTS)), 0);
                double step = composition_at(at_batch, 1 + k) * slower;
                for (int j = 0; j < shares; j++)
                    ttft_mix_add(mix, wi / TTFT_COUNT_POINTS / shares,
                                 base + step + (open ? length * (j + 0.5) / shares : 0));
            }
            continue;
        }
        k_high = m + 5 * sqrt(m) + 4;
        p = exp(-m); /* P(0), then P(k + 1) = P(k) m / (k + 1) */
        for (double k = k_low; k <= k_high; p *= m / (k + 1), k++) {
            if (p < 1e-9)
                continue;
            double step = composition_at(at_batch, 1 + k) * slower;
            for (int j = 0; j < shares; j++)
                ttft_mix_add(mix, wi * p / shares, base + step + (open ? length * (j + 0.5) / shares : 0));
        }
    }
}

/* The wait of prompts arriving at `arrivals_per_s` for `servers` prefill servers, each taking
 * service_s a prompt on average (the prompts' lengths set its variation); arrivals less variable
 * than Poisson scale the mean by (c_a^2 + c_s^2) / (1 + c_s^2) (Allen-Cunneen). False when the
 * servers cannot keep up. */
static bool prefill_wait(const struct serve_workload *w, double arrivals_per_s, double service_s, int64_t servers,
                         struct queue_wait *out)
{
    *out = (struct queue_wait){0};
    if (arrivals_per_s <= 0 || service_s <= 0)
        return true;
    double c1 = prefilled_tokens(w), scv = c1 > 0 ? fmax(computed_second_moment(w) / (c1 * c1) - 1, 0) : 0;
    double ca2 = arrival_scv(w);
    if (ca2 == 0 && scv == 0) { /* D/D/c: alike prompts evenly spaced wait for nothing while the servers keep up */
        out->use = arrivals_per_s * service_s / (double)servers;
        return out->use <= 1 + 1e-12;
    }
    if (!queue_mgc(arrivals_per_s, service_s, scv, servers, out))
        return false;
    if (ca2 < 1) {
        double scale = scv > 0 ? (ca2 + scv) / (1 + scv) : 0;
        out->mean_wait_s *= scale;
        if (scale <= 0)
            out->wait_probability = 0;
    }
    return true;
}

/* The wait for a slot with SERVE_SLOT_WAIT_MARGIN times as many waiting (at most all), each as
 * long as before: its chance and every phase's scaled alike. */
static struct queue_wait slot_wait_margin(const struct queue_wait *slot)
{
    struct queue_wait more = *slot;
    double scale = slot->wait_probability > 0 ? fmin(SERVE_SLOT_WAIT_MARGIN, 1 / slot->wait_probability) : 1;
    more.wait_probability *= scale;
    more.mean_wait_s *= scale;
    for (int i = 0; i < more.phases; i++)
        more.phase_probability[i] *= scale;
    return more;
}

/* Two independent waits one after the other, as one atom-and-exponential wait of their summed
 * mean that is 0 only when both are; when the first is a mixture (phases: the slot's), each of
 * its phases with the second's mean added, and the second's own where the first is 0 (the same
 * chance of waiting and the same mean). */
static struct queue_wait waits_added(const struct queue_wait *a, const struct queue_wait *b)
{
    double none = (1 - a->wait_probability) * (1 - b->wait_probability);
    struct queue_wait sum = {.use = fmax(a->use, b->use), .wait_probability = 1 - none,
                             .mean_wait_s = a->mean_wait_s + b->mean_wait_s};
    if (a->phases == 0 || b->phases > 0)
        return sum;
    for (int i = 0; i < a->phases; i++) {
        sum.phase_probability[sum.phases] = a->phase_probability[i];
        sum.phase_mean_s[sum.phases++] = a->phase_mean_s[i] + b->mean_wait_s;
    }
    if (b->wait_probability > 0 && b->mean_wait_s > 0) {
        sum.phase_probability[sum.phases] = (1 - a->wait_probability) * b->wait_probability;
        sum.phase_mean_s[sum.phases++] = b->mean_wait_s / b->wait_probability;
    }
    return sum;
}

/* A point's TTFT (or TPOT) at the levels and its mean: the percentiles into its tail, the
 * workload's into ttft_s (tpot_s). */
static void set_ttft(const double *ttft, double ttft_mean, struct serve_point *p)
{
    for (int i = 0; i < SERVE_PERCENTILES; i++)
        p->tail.ttft_s[i] = ttft[i];
    p->tail.ttft_mean_s = ttft_mean;
    p->ttft_s = ttft[SERVE_PERCENTILES];
}

static void set_tpot(const double *tpot, double tpot_mean, struct serve_point *p)
{
    for (int i = 0; i < SERVE_PERCENTILES; i++)
        p->tail.tpot_s[i] = tpot[i];
    p->tail.tpot_mean_s = tpot_mean;
    p->tpot_s = tpot[SERVE_PERCENTILES];
}

static void set_tail(const double *ttft, double ttft_mean, const double *tpot, double tpot_mean, struct serve_point *p)
{
    set_ttft(ttft, ttft_mean, p);
    set_tpot(tpot, tpot_mean, p);
}

/* ---- the chain of an aggregated instance's prefill queue (prefill_chain.h) ---- */

struct chain_pricing {
    struct composition full; /* priced to the count that fills the budgets */
    double unit_tokens;
};

static double chain_step_s(void *context, double tokens)
{
    struct chain_pricing *p = context;
    return composition_at(&p->full, p->unit_tokens > 0 ? tokens / p->unit_tokens : 0);
}

/* The chain of an instance at `batch` under Poisson arrivals at `arrivals` requests/s: one queue
 * over the instance's budget dp C when its ranks step together, one rank's (C, arrivals / dp)
 * when they step on their own; its steps the composition's at `batch` (the caller's: the
 * occupancy's mean, which the rate settles at; whether the instance keeps up with that rate is
 * the occupancy's law's to say). NULL, with the reason in *status, when the chain cannot be
 * built. */
static struct prefill_chain *chain_of(const struct roof_setup *s, const struct serve_workload *w, int64_t batch,
                                      double arrivals, enum chain_status *status)
{
    double computed[SERVE_PROMPT_BINS], weight[SERVE_PROMPT_BINS];
    int64_t bins = computed_bins(w, computed, weight);
    bool alone = ranks_independent(s);
    double dp = (double)s->layout.dp, chunk = (double)w->chunk_tokens;
    struct chain_pricing pricing = {.unit_tokens = unit_tokens(w)};
    composition_init(&pricing.full, s, w, batch, INFINITY);
    struct chain_input in = {.arrivals_per_s = alone ? arrivals / dp : arrivals,
                             .budget_tokens = alone ? chunk : dp * chunk,
                             .rank_tokens = chunk,
                             .sizes = (int)bins,
                             .size_tokens = computed,
                             .size_weight = weight,
                             .step_s = chain_step_s,
                             .context = &pricing};
    struct prefill_chain *c = xmalloc(sizeof *c);
    *status = prefill_chain_build(&in, c);
    if (*status != CHAIN_OK) {
        free(c);
        return NULL;
    }
    return c;
}

/* TTFT's atoms from the chain. */
struct chain_atoms {
    struct ttft_mix *mix;
    double offset_s;
};

static void chain_ttft_add(void *context, double weight, double time_s)
{
    struct chain_atoms *a = context;
    ttft_mix_add(a->mix, weight, time_s + a->offset_s);
}

/* An aggregated point's tails, its occupancy `o` and its batch's composition given: TPOT as
 * tpot_tail; under Poisson arrivals TTFT the wait for a slot, then the prefill chain's
 * (chain_of); otherwise the wait for a slot, then for a chunk budget (below), then, open-loop, the
 * rest of the length-biased step in progress and the step carrying the prompt with what came
 * during it (ttft_own_add), closed-loop none of the rest and the prompts that start with it, then
 * its later chunks; its own steps priced at the batch searched and stretched by the occupancy's
 * mean step over that batch's. `judging`: only whether the targets are met is asked (TTFT left out
 * where it cannot change that). False when the budgets cannot keep up. */
static bool aggregated_tails(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                             const struct serve_workload *w, int64_t batch, const struct serve_occupancy *o,
                             const struct queue_wait *slot, struct composition *at_batch, bool judging,
                             struct serve_point *p)
{
    double arrivals = p->decode.requests_per_s, step_s = p->decode.step_s, slower = o->step_mean_s / step_s;
    double tpot[TAIL_LEVELS], tpot_mean, ttft[TAIL_LEVELS] = {0}, ttft_mean = 0;
    /* at random arrivals the prefill queue as a chain (prefill_chain.h); where it cannot be built
     * (too many prompts a step for its grid), the composition's laws below */
    struct prefill_chain *chain = NULL;
    enum chain_status status = CHAIN_OK;
    /* priced at the occupancy's mean: near the compute plateau the batch drifts far above the
     * batch searched, and its steps with it; where a TPOT target holds the rate below what the
     * batch serves, the batch is a cap the occupancy keeps well under (DeepSeek-V3 at 20,000/1,000
     * on 8 H200 ranks, TPOT 150 ms at p99: a cap of 144, 35 on average, whose steps priced at 144
     * put TPOT p50 39% above the simulation's; at the mean, 7% below) */
    int64_t typical = (int64_t)llround(fmax(o->sequences_mean, 1));
    if (w->arrivals == SERVE_POISSON && !(chain = chain_of(at_batch->setup, w, typical, arrivals, &status)) &&
        status == CHAIN_UNSTABLE)
        return false; /* the prefill queue does not keep up: no wait is finite */
    tpot_tail(w, o, chain, false, judging, tpot, &tpot_mean);
    if (judging && (w->ttft_s <= 0 || (w->tpot_s > 0 && tpot[SERVE_PERCENTILES] > w->tpot_s))) {
        /* only whether it meets the targets is asked, and TTFT cannot change the answer */
        set_tail(ttft, ttft_mean, tpot, tpot_mean, p);
        free(chain);
        return true;
    }
    struct queue_wait wait = *slot, budget = {0};
    struct ttft_mix mix = {.wait = &wait};
    double isl[SERVE_PROMPT_BINS], weight[SERVE_PROMPT_BINS];
    int64_t bins = prompt_bins(w, isl, weight);
    if (chain) {
        /* the wait for a slot, then the chain's: the step in progress, what is ahead, its own */
        double computed[SERVE_PROMPT_BINS];
        computed_bins(w, computed, weight);
        struct chain_atoms atoms = {.mix = &mix, .offset_s = w->prefix_load_s};
        prefill_chain_ttft(chain, (int)bins, computed, weight, chain_ttft_add, &atoms);
        free(chain);
    } else {
        /* the budgets as servers: floor(dp C / c) prompts a step, each held for a step scaled so
         * that they take dp C tokens a step, no more; a longer prompt holds its rank for c / C
         * steps, each of which carries a whole chunk (the mean step, which counts the steps that
         * carry none, would let a rank that is never idle keep up) */
        double chunk = (double)w->chunk_tokens, c = prefilled_tokens(w), steps = c > chunk ? c / chunk : 1;
        double servers = c > chunk ? (double)l->dp : fmax(floor((double)l->dp * chunk / c), 1);
        double service = c > chunk ? steps * fmax(o->step_mean_s, composition_at(at_batch, 1) * fmax(slower, 1))
                                   : o->step_mean_s * servers * c / ((double)l->dp * chunk);
        if (!prefill_wait(w, arrivals, service, (int64_t)servers, &budget))
            return false;
        wait = waits_added(slot, &budget);
        /* An open-loop arrival lands in a step of length-biased length L (the step a gamma law of
         * its mean m and variance v: E[L] = E[T^2] / m, E[L^2] = E[T^3] / m, E[T^3] = m^3 + 3 m v +
         * 2 v^2 / m), waits out a uniform share of it, and its first chunk's step carries the K ~
         * Poisson(lambda L) prompts that arrived with it: the two move together. Closed-loop a
         * request starts as one ends: no wait, K about the mean, or its cohort. Later chunks'
         * steps are priced at the mean. */
        double m = o->step_mean_s, v = o->composition_variance_s2 + o->step_variance_s2;
        double biased = (m * m + v) / m, biased2 = (m * m * m + 3 * m * v + 2 * v * v / m) / m;
        double biased_variance = fmax(biased2 - biased * biased, 0);
        bool open = w->arrivals != SERVE_CLOSED;
        double cohort = serve_workload_in_cohorts(w) && c <= chunk ? cohort_units(at_batch->setup, w, batch) : 0;
        double joining = cohort > 0 ? cohort
                                    : units_of(at_batch->setup, w,
                                               open ? arrivals * biased : step_prefill_tokens(w, batch) / fmax(c, 1));
        /* in cohorts a prompt longer than the chunk goes through a run of full steps on one rank,
         * its chunks sharing the first and the last with the prompts before and after it:
         * ceil(c / C) of them (Llama 3.1 70B on an H200 node at TP 8, 12,000 to 40,000 tokens:
         * +2.2% to +2.4% of the simulation, where its own chunks alone were -23% to +0.5%). So
         * too on a dense model's ranks that take the requests in turn and hold as many clients
         * each (TP 4 x DP 2 at 20,000/500, 8 and 16 sequences: 0% to +4%); where those hold
         * unequal numbers, a rank's arrivals follow the other's ends, and the runs break up, and
         * a lone sequence has no prompts beside it: its own chunks there (3, 7 and 9 sequences:
         * within 1%, where a run would be 22% above). On ranks that step together every rank
         * runs its own queue of chunks, so the cohorts of K = dp go through runs of full steps a
         * chunk a rank, and a cohort of r, the last of a round, or of B <= dp through their own
         * chunks, r or B a step (DeepSeek-V3 on 8 H200 ranks at 20,000/1,000, 5 to 132 sequences,
         * and 24,000 computed tokens of 30,000, 8 to 56; Qwen3-235B-A22B at 16,000/400, 10 to 48:
         * 0% to +3.5%; 9 and 10 sequences, where the cohort of 8 runs its own chunks, +8% to
         * +9.4%) */
        bool independent = ranks_independent(at_batch->setup);
        bool chunked_cohort = serve_workload_in_cohorts(w) && c > chunk;
        bool together = chunked_cohort && l->dp > 1 && !independent;
        bool run = chunked_cohort && batch > l->dp && (l->dp == 1 || together || batch % l->dp == 0);
        double cohort_k = together ? cohort_units(at_batch->setup, w, batch) : 1;
        /* beside cohorts of K, one of r (cohorts_of), the last of a round: its own chunks */
        double remainder = o->cohort_remainder_share, r = round(remainder * (double)batch);
        for (int64_t i = 0; i < bins; i++) {
            if (run) {
                double full_steps = ceil(c / chunk) * composition_at(at_batch, cohort_k);
                ttft_mix_add(&mix, weight[i] * (1 - remainder), full_steps * slower + w->prefix_load_s);
                if (remainder > 0)
                    ttft_mix_add(&mix, weight[i] * remainder,
                                 lockstep_ttft(at_batch->setup, w, batch, isl[i], r) * slower + w->prefix_load_s);
                continue;
            }
            if (together) { /* a cohort of B <= dp, a prompt a rank */
                double own = lockstep_ttft(at_batch->setup, w, batch, isl[i], cohort_k) * slower + w->prefix_load_s;
                ttft_mix_add(&mix, weight[i], own);
                continue;
            }
            double own = aggregated_ttft(pool, g, l, w, batch, isl[i]) * slower + w->prefix_load_s;
            ttft_own_add(&mix, w, at_batch, weight[i] * (1 - remainder), own, slower, arrivals, biased,
                         biased_variance, open, joining);
            if (remainder > 0)
                ttft_own_add(&mix, w, at_batch, weight[i] * remainder, own, slower, arrivals, biased, biased_variance,
                             open, r);
        }
    }
    /* the same own times, more of them waiting for a slot */
    struct queue_wait more = slot_wait_margin(slot), margin = waits_added(&more, &budget);
    p->ttft_margin_s = 0;
    ttft_tail(w, &mix, judging, ttft, &ttft_mean, slot->wait_probability > 0 ? &margin : NULL, &p->ttft_margin_s);
    ttft_mix_release(&mix);
    set_tail(ttft, ttft_mean, tpot, tpot_mean, p);
    p->tail.prefill_wait_s = wait.mean_wait_s;
    p->tail.sequences_mean = o->sequences_mean;
    p->tail.sequences_sd = sqrt(o->sequences_variance);
    p->tail.sequences_rate_elasticity = o->rate_elasticity;
    p->tail.slot_wait_probability = slot->wait_probability;
    p->tokens_per_s_per_user = 1 / tpot_mean;
    return true;
}

void serve_aggregated_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                           const struct serve_workload *w, int64_t batch, struct roof_point *out)
{
    double rank_prefill;
    aggregated_step(pool, g, l, w, batch, out, &rank_prefill);
    out->fits = holds(pool, pool->topology, l, batch, serve_held_context(w)) && rank_prefill <= (double)w->chunk_tokens;
}

/* The mean step of `batch` sequences as it comes: the prompts that join it, y B / osl on average,
 * whole; the batch's composition (which refers to `s`) into *out. */
static double step_as_it_comes(const struct roof_setup *s, const struct serve_workload *w, int64_t batch,
                               struct composition *out)
{
    double joining = units_of(s, w, serve_tokens_per_step(w) * (double)batch / (double)w->osl), step_s, variance;
    double cohort = serve_workload_in_cohorts(w) ? cohort_units(s, w, batch) : 0;
    composition_init(out, s, w, batch, fmax(prompts_most(2 * joining) + 1, cohort));
    composed(out, w, joining, &step_s, &variance);
    return step_s;
}

double serve_aggregated_rate(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                             const struct serve_workload *w, int64_t batch)
{
    struct roof_setup s = setup_of(pool, g, l);
    struct composition at_batch;
    return serve_tokens_per_step(w) * (double)batch / step_as_it_comes(&s, w, batch, &at_batch) / (double)l->devices;
}

/* Whether a TTFT or a TPOT is within its target (none set: within); a part in 10^12 over it still
 * is (a pool sized to the TTFT target lands on it). */
static bool within_ttft(const struct serve_workload *w, double ttft_s)
{
    return w->ttft_s <= 0 || ttft_s <= w->ttft_s * (1 + 1e-12);
}

static bool within_tpot(const struct serve_workload *w, double tpot_s)
{
    return w->tpot_s <= 0 || tpot_s <= w->tpot_s;
}

/* With no TTFT target a deployment still may not have its TTFT's percentile set by requests queued
 * for KV slots (serve_ttft_on_slot_waits): that queue sits on a cliff, which a little more traffic
 * turns into hours (Llama 3.1 70B 1k/1k on H200 at TPOT 30 ms, p99, no budget: a 2,034-GPU
 * deployment 3% above the next whose p99 request waited 59 minutes for a slot). */
static bool queues_for_slots(const struct serve_workload *w, const struct serve_point *p)
{
    return w->ttft_s <= 0 && serve_ttft_on_slot_waits(w, p);
}

/* serve_point.meets, budget aside: TTFT with the slot's margin too, TPOT, settled, and without a
 * TTFT target no queue for KV slots. */
static bool point_meets(const struct serve_workload *w, const struct serve_point *p)
{
    return within_ttft(w, fmax(p->ttft_s, p->ttft_margin_s)) && within_tpot(w, p->tpot_s) && !p->unsettled &&
           !queues_for_slots(w, p);
}

const char *serve_point_misses(const struct serve_workload *w, const struct serve_point *p)
{
    if (p->meets)
        return NULL;
    if (p->unsettled)
        return "does not settle";
    bool tpot = !within_tpot(w, p->tpot_s), ttft = !within_ttft(w, p->ttft_s),
         margin = !ttft && !within_ttft(w, p->ttft_margin_s);
    if (tpot && ttft)
        return "misses TTFT and TPOT";
    if (tpot && margin)
        return "misses TPOT, and TTFT with twice the KV-slot waits";
    if (tpot)
        return "misses TPOT";
    if (ttft)
        return "misses TTFT";
    if (margin)
        return "misses TTFT with twice the KV-slot waits";
    if (queues_for_slots(w, p))
        return "its TTFT on waits for KV slots";
    return "beyond the budget";
}

/* Whether an instance's batch settles (SERVE_MOST_RATE_ELASTICITY); a held batch always does. */
static bool settles(const struct serve_occupancy *o)
{
    return o->rate_elasticity <= SERVE_MOST_RATE_ELASTICITY;
}

/* serve_aggregated; `judging`: only p.meets is read (the tails a target does not bound are not
 * worked out). */
static bool aggregated_point(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                             const struct serve_workload *w, int64_t batch, bool judging, struct serve_point *out);

bool serve_aggregated(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                      const struct serve_workload *w, int64_t batch, struct serve_point *out)
{
    return aggregated_point(pool, g, l, w, batch, false, out);
}

/* aggregated_point; `counted`: the share of the decode tokens that are output tokens (1 but in
 * the prefill-bound regime, see the header). */
static bool aggregated_counted(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                               const struct serve_workload *w, int64_t batch, bool judging, double counted,
                               struct serve_point *out);

#define PREFILL_BOUND_TRIES 24

static bool aggregated_point(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                             const struct serve_workload *w, int64_t batch, bool judging, struct serve_point *out)
{
    if (batch == 1 && w->lengths.bins == 0 && w->osl >= 1) {
        double rank_prefill = step_prefill_tokens(w, 1) / (double)l->dp, chunk = (double)w->chunk_tokens;
        if (rank_prefill > chunk) {
            /* prefill-bound: one sequence's prompts overrun the chunk budget, so the instance
             * serves a request every osl' steps, its decode slot idle for osl' - osl of them */
            struct serve_workload bound = *w;
            double full = (double)w->osl * rank_prefill / chunk;
            bool made = false;
            /* at random arrivals a budget always full is a queue that never empties: the requests
             * come less often (osl' grows by a quarter a try) until it keeps up and, with a TTFT
             * target, until it is met */
            for (int k = 0; k < PREFILL_BOUND_TRIES && (k == 0 || w->arrivals != SERVE_CLOSED); k++) {
                bound.osl = (int64_t)ceil(full * pow(1.25, k) * (1 - 1e-12));
                struct serve_point tried;
                if (aggregated_counted(pool, g, l, &bound, 1, judging, (double)w->osl / (double)bound.osl, &tried)) {
                    if (!made || (tried.meets && !out->meets)) /* the first that keeps up, or that meets */
                        *out = tried;
                    made = true;
                    if (tried.meets || w->ttft_s <= 0)
                        break;
                }
            }
            if (!made)
                return false;
            if (w->arrivals == SERVE_CLOSED) {
                /* closed-loop its one sequence decodes alone: no other prompt is in flight */
                struct roof_point alone;
                serve_decode_step(pool, g, l, w, 1, &alone);
                double tpot = alone.step_s / serve_tokens_per_step(w);
                for (int i = 0; i < SERVE_PERCENTILES; i++)
                    out->tail.tpot_s[i] = tpot;
                out->tail.tpot_mean_s = out->tpot_s = tpot;
                out->tokens_per_s_per_user = 1 / tpot;
                out->meets = within_ttft(w, out->ttft_s) && within_tpot(w, tpot);
            }
            return true;
        }
    }
    return aggregated_counted(pool, g, l, w, batch, judging, 1, out);
}

static bool aggregated_counted(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                               const struct serve_workload *w, int64_t batch, bool judging, double counted,
                               struct serve_point *out)
{
    if (batch < 1 || !holds(pool, pool->topology, l, batch, serve_held_context(w)))
        return false;
    struct serve_point p = {.mode = SERVE_AGGREGATED, .decode_instances = 1};
    double rank_prefill, chunk = (double)w->chunk_tokens;
    aggregated_step(pool, g, l, w, batch, &p.decode.point, &rank_prefill);
    if (rank_prefill > chunk)
        return false;
    p.decode.point.fits = true;
    p.decode.layout = *l;
    p.decode.batch = batch;
    struct roof_setup s = setup_of(pool, g, l);
    struct composition at_batch;
    double y = serve_tokens_per_step(w);
    p.decode.point.step_s = step_as_it_comes(&s, w, batch, &at_batch);
    set_rates(pool, l, y * (double)batch * counted, &p.decode.point);
    double t = p.decode.step_s = p.decode.point.step_s;
    p.decode.requests_per_s = finished_per_s(w, batch, t);
    p.devices = l->devices;
    p.prefill_use = rank_prefill / chunk;
    if (!instance_occupancy(pool, &s, l, w, batch, &at_batch, true, p.decode.requests_per_s, &p.decode.occupancy,
                            &p.decode.slot_wait) ||
        !aggregated_tails(pool, g, l, w, batch, &p.decode.occupancy, &p.decode.slot_wait, &at_batch, judging, &p))
        return false;
    p.tokens_per_s_per_device = p.decode_tokens_per_s_per_device = p.decode.point.tokens_per_s_per_device;
    p.cost_per_mtok = p.decode.point.cost_per_mtok;
    if (pool->topology->power_watts > 0)
        p.joules_per_token = pool->topology->power_watts / p.tokens_per_s_per_device;
    p.unsettled = !settles(&p.decode.occupancy);
    p.meets = point_meets(w, &p);
    *out = p;
    return true;
}

void serve_decode_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                       const struct serve_workload *w, int64_t batch, struct roof_point *out)
{
    struct roof_setup s = setup_of(pool, g, l);
    struct roof_step step = mixed_step(w, batch, 0);
    roof_step(&s, &step, out);
    set_rates(pool, l, serve_tokens_per_step(w) * (double)batch, out);
    out->fits = holds(pool, pool->topology, l, batch, serve_held_context(w));
}

bool serve_decode_instance(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                           const struct serve_workload *w, int64_t batch, struct serve_instance *out)
{
    if (batch < 1)
        return false;
    struct serve_instance d = {.layout = *l, .batch = batch};
    serve_decode_step(pool, g, l, w, batch, &d.point);
    if (!d.point.fits)
        return false;
    d.step_s = d.point.step_s;
    d.requests_per_s = finished_per_s(w, batch, d.step_s);
    struct roof_setup s = setup_of(pool, g, l);
    struct composition alone = {.count = 1, .prompts = {0}, .step_s = {d.step_s}};
    if (!instance_occupancy(pool, &s, l, w, batch, &alone, false, d.requests_per_s, &d.occupancy, &d.slot_wait))
        return false;
    if (d.slot_wait.wait_probability < SERVE_SLOT_WAIT_SHARE * (1 - serve_workload_percentile(w) / 100))
        d.slot_wait = (struct queue_wait){0}; /* its chance is still reported (the occupancy's) */
    *out = d;
    return true;
}

/* Prompts a DP rank may take in one prefill batch. */
static int64_t prompts_per_rank(const struct serve_workload *w)
{
    int64_t computed = (int64_t)ceil(prefilled_tokens(w));
    int64_t most = computed > 0 ? SERVE_PREFILL_TOKENS_PER_RANK / computed : 1;
    return most > 0 ? most : 1;
}

/* The prefill of `prompts` prompts each `ratio` times the mean's length (its computed tokens and
 * the context they attend to alike). */
static void prefill_step_at(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t prompts, double ratio, struct roof_point *out)
{
    struct roof_setup s = setup_of(pool, g, l);
    int64_t context = ratio == 1 ? prefill_context(w) : (int64_t)llround((double)prefill_context(w) * ratio);
    struct roof_step step = {.sequences = (double)prompts, .tokens_per_sequence = prefilled_tokens(w) * ratio,
                             .context = context > 0 ? context : 1, .prefilling = true};
    roof_step(&s, &step, out);
    set_rates(pool, l, (double)prompts * prefilled_tokens(w) * ratio, out);
}

void serve_prefill_step(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                        const struct serve_workload *w, int64_t prompts, struct roof_point *out)
{
    prefill_step_at(pool, g, l, w, prompts, 1, out);
    int64_t rank_prompts = (prompts + l->dp * l->pp - 1) / (l->dp * l->pp);
    out->fits = rank_prompts <= prompts_per_rank(w) && holds(pool, pool->topology, l, prompts, w->isl);
}

/* The lengths a prefill batch's time is kept at besides the mean's (serve_instance): the shortest
 * prompt bin's and the longest tail bin's, with two between evenly in its log, as ratios to the
 * mean; none for prompts alike. */
static int prefill_length_ratios(const struct serve_workload *w, double *ratio)
{
    double isl[SERVE_PROMPT_TAIL_BINS], weight[SERVE_PROMPT_TAIL_BINS], mean = (double)w->isl;
    int64_t bins = prompt_tail_bins(w, isl, weight);
    double shortest = INFINITY, longest = 0;
    for (int64_t i = 0; i < bins; i++) {
        shortest = fmin(shortest, isl[i]);
        longest = fmax(longest, isl[i]);
    }
    bins = prompt_bins(w, isl, weight);
    for (int64_t i = 0; i < bins; i++)
        shortest = fmin(shortest, isl[i]);
    int n = 0;
    if (!(mean > 0) || bins < 2)
        return 0;
    if (shortest / mean < 1 - 1e-9)
        ratio[n++] = shortest / mean;
    if (longest / mean > 1 + 1e-9) {
        double top = longest / mean;
        ratio[n++] = cbrt(top);
        ratio[n++] = cbrt(top) * cbrt(top);
        ratio[n++] = top;
    }
    return n;
}

bool serve_prefill_instance(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t prompts, struct serve_instance *out)
{
    if (prompts < 1)
        return false;
    struct serve_instance p = {.layout = *l, .batch = prompts};
    serve_prefill_step(pool, g, l, w, prompts, &p.point);
    if (!p.point.fits)
        return false;
    p.step_s = p.point.step_s;
    p.requests_per_s = (double)prompts / p.step_s;
    /* the batch's time by size only where the pool's chain reads it (Poisson arrivals) */
    p.batch_points = w->arrivals != SERVE_POISSON ? 1
                     : prompts < SERVE_PREFILL_BATCH_POINTS ? (int)prompts
                                                           : SERVE_PREFILL_BATCH_POINTS;
    p.length_points = prefill_length_ratios(w, p.length_ratio);
    for (int i = 0; i < p.batch_points; i++) {
        int64_t k = p.batch_points == 1 ? prompts : 1 + (prompts - 1) * i / (p.batch_points - 1);
        struct roof_point at;
        if (k == prompts)
            at = p.point;
        else
            serve_prefill_step(pool, g, l, w, k, &at);
        p.batch_prompts[i] = k;
        p.batch_times_s[i] = at.step_s;
        for (int j = 0; j < p.length_points; j++) {
            prefill_step_at(pool, g, l, w, k, p.length_ratio[j], &at);
            p.length_times_s[i][j] = at.step_s;
        }
    }
    *out = p;
    return true;
}

/* The kept time of batch_prompts[i] prompts at the kept length `length` (-1: the mean's, else
 * length_ratio[length]). */
static double kept_s(const struct serve_instance *p, int i, int length)
{
    return length < 0 ? p->batch_times_s[i] : p->length_times_s[i][length];
}

/* A prefill batch of k prompts (fractional between the kept counts; beyond them, on along the
 * last two) at the kept length `length`: its time, linear between the kept counts. */
static double kept_batch_s(const struct serve_instance *p, double k, int length)
{
    if (p->batch_points == 1)
        return kept_s(p, 0, length);
    int i = 1;
    while (i < p->batch_points - 1 && (double)p->batch_prompts[i] < k)
        i++;
    double k0 = (double)p->batch_prompts[i - 1], k1 = (double)p->batch_prompts[i];
    double t0 = kept_s(p, i - 1, length), t1 = kept_s(p, i, length);
    return t0 + (t1 - t0) * (k - k0) / (k1 - k0);
}

/* A prefill batch of k prompts at the mean's length. */
static double prefill_batch_s(const struct serve_instance *p, double k)
{
    return kept_batch_s(p, k, -1);
}

double serve_prefill_batch_at(const struct serve_instance *p, double k, double ratio)
{
    if (p->batch > 0 && k > (double)p->batch) { /* more prompts than the batch: its count, the same tokens */
        ratio *= k / (double)p->batch;
        k = (double)p->batch;
    }
    if (p->length_points == 0)
        return prefill_batch_s(p, k) * ratio; /* prompts alike: a batch off the mean only by a split */
    /* the kept lengths by rising ratio, the mean's 1 among them; only the two about `ratio` are
     * read (the pool's chain and the simulation ask at every batch) */
    double x[SERVE_PREFILL_LENGTH_POINTS + 1];
    int length[SERVE_PREFILL_LENGTH_POINTS + 1], n = 0;
    bool mean_in = false;
    for (int j = 0; j < p->length_points; j++) {
        if (!mean_in && p->length_ratio[j] > 1) {
            x[n] = 1;
            length[n++] = -1;
            mean_in = true;
        }
        x[n] = p->length_ratio[j];
        length[n++] = j;
    }
    if (!mean_in) {
        x[n] = 1;
        length[n++] = -1;
    }
    if (ratio <= x[0])
        return kept_batch_s(p, k, length[0]); /* a shorter prompt (a split's part) as the shortest bin's */
    int i = 1;
    while (i < n - 1 && x[i] < ratio)
        i++;
    double y0 = kept_batch_s(p, k, length[i - 1]), y1 = kept_batch_s(p, k, length[i]);
    return fmax(y0 + (y1 - y0) * (ratio - x[i - 1]) / (x[i] - x[i - 1]), 0);
}

/* Devices that hold one sequence's KV: its DP rank's TP group (GQA splits it by KV heads; an MLA
 * latent is whole on each, so one sends it) in every pipeline stage. */
static double kv_holders(const struct model *m, const struct layout *l)
{
    return model_kv_split(m, l->tp) * (double)l->pp;
}

double serve_kv_transfer_s(const struct serve_pool *prefill, const struct layout *pl, const struct serve_pool *decode,
                           const struct layout *dl, const struct serve_workload *w, bool *over_scale_up)
{
    const struct topology *pt = prefill->topology, *dt = decode->topology;
    double bytes = model_sequence_bytes(decode->model, decode->precisions.kv, w->isl);
    bool same_domain = pt == dt && pl->racks == 1 && dl->racks == 1 &&
                       pl->devices + dl->devices <= dt->domain_devices;
    double send, receive, latency;
    if (same_domain) {
        send = topology_scale_up_bytes_per_s(pt) * prefill->efficiency.scale_up;
        receive = topology_scale_up_bytes_per_s(dt) * decode->efficiency.scale_up;
        latency = pt->hop_latency_s;
    } else {
        send = topology_scale_out_bytes_per_s(pt) * prefill->efficiency.scale_out;
        receive = topology_scale_out_bytes_per_s(dt) * decode->efficiency.scale_out;
        latency = fmax(pt->scale_out_latency_s, dt->scale_out_latency_s);
    }
    if (over_scale_up)
        *over_scale_up = same_domain;
    double rate = fmin(kv_holders(prefill->model, pl) * send, kv_holders(decode->model, dl) * receive);
    return bytes / rate + latency;
}

/* A decode instance's TPOT at the levels: its occupancy, no prefill, and the wait to join it. */
static void decode_tpot(const struct serve_workload *w, const struct serve_instance *d, bool target_only, double *at,
                        double *mean_s)
{
    tpot_tail(w, &d->occupancy, NULL, true, target_only, at, mean_s);
}

/* A prompt of isl tokens (mean isl_mean) in a prefill batch of k prompts, the others at the mean:
 * the batch's time at its prompts' mean length. */
static double own_batch_s(const struct serve_instance *prefill, double k, double isl, double isl_mean)
{
    double ratio = isl_mean > 0 && k >= 1 ? ((k - 1) * isl_mean + isl) / (k * isl_mean) : 1;
    return serve_prefill_batch_at(prefill, k, ratio);
}

/* The instances whose arrivals' regularity a round-robin pool of x is priced at: x up to
 * BATCH_QUEUE_PHASES; from there, where the chain's phases no longer grow with x and only the
 * carrying to 1 / x does (batch_queue.h), 1 / x rounded up to a grid of SERVE_REGULAR_INSTANCES
 * steps, ceil(S / ceil(S / x)) (16, 18, 19, 20, 22, 24, 26, 29, 32, 37, 43, 52, 64, 86, 128, 256
 * at S = 256 and 16 phases): a search then keeps a verdict a grid point and finds each one's
 * edge by halving (prefill_verdicts), and a pool is priced a little less regular than it is (by
 * at most 1 / S in 1 / x). */
static int64_t priced_instances(int64_t x)
{
    if (x <= BATCH_QUEUE_PHASES)
        return x;
    int64_t steps = (SERVE_REGULAR_INSTANCES + x - 1) / x;
    return (SERVE_REGULAR_INSTANCES + steps - 1) / steps; /* the fewest instances at its step */
}

/* A prefill server's budget of tokens a batch at batches of b: b prompts' computed tokens at the
 * mean (the engine flags emit writes: SGLang's --chunked-prefill-size, vLLM's
 * --max-num-batched-tokens). */
static double prefill_budget_tokens(const struct serve_workload *w, int64_t b)
{
    return ceil((double)b * prefilled_tokens(w));
}

/* The take law of a prefill server's budget (batch_queue_take_law) over the prompts' computed
 * tokens at their tail bins. */
static struct batch_queue_take *prefill_take(const struct serve_workload *w, const struct serve_instance *prefill)
{
    double isl[SERVE_PROMPT_TAIL_BINS], weight[SERVE_PROMPT_TAIL_BINS];
    int64_t bins = prompt_tail_bins(w, isl, weight);
    for (int64_t i = 0; i < bins; i++)
        isl[i] = fmax(isl[i] * (1 - w->prefix_hit), 1);
    struct batch_queue_take *take = xmalloc(sizeof *take);
    if (batch_queue_take_law(isl, weight, bins, prefill_budget_tokens(w, prefill->batch), take) != BATCH_QUEUE_OK)
        abort(); /* the bins and the budget are positive and finite */
    return take;
}

/* A batch that spends its budget (take's K finished, the prompt after them split: K + 1 prompts,
 * the budget's tokens; the simulation's prefill_batch) at BATCH_QUEUE_TAKE_ATOMS parts of K's law
 * of equal chance, each its part's mean time, into full_s. */
static void full_batch_atoms(const struct serve_workload *w, const struct serve_instance *prefill,
                             const struct batch_queue_take *take, double *full_s)
{
    double budget = prefill_budget_tokens(w, prefill->batch), mean = prefilled_tokens(w);
    double t[BATCH_QUEUE_MOST_TAKE + 1];
    for (int64_t j = 0; j <= take->most; j++) {
        double prompts = (double)(j + 1);
        t[j] = serve_prefill_batch_at(prefill, prompts, mean > 0 ? budget / (prompts * mean) : 1);
    }
    batch_queue_equal_parts(t, take->take, take->most + 1, 1, full_s);
}

/* Under Poisson arrivals the pool's wait, round-robin over its instances (batch_queue.h): prompts
 * alike, a batch of k prompts takes their count's time; lengths that vary, the engine's budget of
 * tokens takes them (prefill_take: a batch that takes every prompt waiting at their lengths, one
 * that spends the budget at the count it touches, full_batch_atoms). Each prompt's own batch from
 * the chain. False when an instance cannot keep up. */
static bool round_robin_ttft(const struct serve_workload *w, const struct serve_instance *prefill, double transfer_s,
                             double arrivals_per_s, int64_t instances, struct ttft_mix *mix, double *wait_s)
{
    double mean = (double)w->isl;
    const int64_t b = prefill->batch;
    int64_t priced = priced_instances(instances); /* the same share, at the regularity priced */
    struct batch_queue_input in = {.arrivals_per_s = arrivals_per_s * (double)priced / (double)instances,
                                   .instances = priced, .batch = b, .atoms = 1};
    struct batch_queue_take *take = NULL;
    double full_s[BATCH_QUEUE_TAKE_ATOMS], full_weight[BATCH_QUEUE_TAKE_ATOMS], *times, *chances;
    if (w->lengths.prompt_tail_bins > 1) {
        take = prefill_take(w, prefill);
        const double computed = prefilled_tokens(w);
        times = xmalloc((size_t)(take->most * BATCH_QUEUE_TAKE_ATOMS) * sizeof *times);
        chances = xmalloc((size_t)(take->most * BATCH_QUEUE_TAKE_ATOMS) * sizeof *chances);
        for (int64_t k = 1; k <= take->most; k++)
            for (int a = 0; a < BATCH_QUEUE_TAKE_ATOMS; a++) {
                times[(k - 1) * BATCH_QUEUE_TAKE_ATOMS + a] =
                    serve_prefill_batch_at(prefill, (double)k, take->tokens[k - 1][a] / ((double)k * computed));
                chances[(k - 1) * BATCH_QUEUE_TAKE_ATOMS + a] = 1.0 / BATCH_QUEUE_TAKE_ATOMS;
            }
        full_batch_atoms(w, prefill, take, full_s);
        for (int a = 0; a < BATCH_QUEUE_TAKE_ATOMS; a++)
            full_weight[a] = 1.0 / BATCH_QUEUE_TAKE_ATOMS;
        in.atoms = BATCH_QUEUE_TAKE_ATOMS;
        in.take_most = take->most;
        in.take = take->take;
        in.full_s = full_s;
        in.full_weight = full_weight;
    } else {
        times = xmalloc((size_t)b * sizeof *times);
        chances = xmalloc((size_t)b * sizeof *chances);
        for (int64_t k = 1; k <= b; k++) {
            times[k - 1] = serve_prefill_batch_at(prefill, (double)k, 1);
            chances[k - 1] = 1;
        }
    }
    in.batch_s = times;
    in.batch_weight = chances;
    struct batch_queue_waits *waits = xmalloc(sizeof *waits);
    bool kept_up = batch_queue_waits(&in, waits) == BATCH_QUEUE_OK;
    if (kept_up) {
        /* each prompt's own time at the bins finer toward the longest, which set the tail */
        double own_isl[SERVE_PROMPT_TAIL_BINS], own_weight[SERVE_PROMPT_TAIL_BINS];
        int64_t own_bins = prompt_tail_bins(w, own_isl, own_weight);
        for (int64_t i = 0; i < waits->count; i++)
            for (int side = 0; side < 2; side++) { /* its batch's prompts at their mean -+ their sd */
                double own = waits->own_prompts[i] + (side ? 1 : -1) * waits->own_sd[i];
                own = fmin(fmax(own, 1), (double)(take ? b + 1 : b)); /* a budget's others, then itself */
                for (int64_t j = 0; j < own_bins; j++) {
                    double kv = mean > 0 ? own_isl[j] / mean : 1;
                    ttft_mix_add(mix, waits->weight[i] * own_weight[j] / 2,
                                 waits->wait_s[i] + own_batch_s(prefill, own, own_isl[j], mean) + transfer_s * kv +
                                     w->prefix_load_s);
                }
            }
        *wait_s = waits->mean_wait_s;
    }
    free(waits);
    free(take);
    free(times);
    free(chances);
    return kept_up;
}

/* A disaggregated point's TTFT at the levels: the wait for a decode slot (`slot`, the decode
 * instance's: the engine reserves a request's KV there before its prefill starts; NULL: none),
 * then under Poisson arrivals the round-robin pool's (above); otherwise the wait for one of x
 * prefill instances, each serving 1 / r_p seconds a request (its batch's time over its prompts),
 * then its batch S_p. Then the KV's transfer. *wait_s the waits' mean. False when the pool cannot
 * keep up. */
static bool disaggregated_ttft(const struct serve_workload *w, const struct serve_instance *prefill, double transfer_s,
                               const struct queue_wait *slot, double arrivals_per_s, int64_t instances,
                               bool target_only, double *at, double *mean_s, double *wait_s, double *margin_s)
{
    static const struct queue_wait none = {0};
    if (!slot)
        slot = &none;
    struct queue_wait more = slot_wait_margin(slot);
    bool asked = margin_s && slot->wait_probability > 0;
    if (margin_s)
        *margin_s = 0;
    if (w->arrivals == SERVE_POISSON && arrivals_per_s > 0) {
        struct ttft_mix mix = {.wait = slot}; /* the pool's waits are the chain's, among the own times */
        bool kept_up = round_robin_ttft(w, prefill, transfer_s, arrivals_per_s, instances, &mix, wait_s);
        if (kept_up) {
            ttft_tail(w, &mix, target_only, at, mean_s, asked ? &more : NULL, margin_s);
            *wait_s += slot->mean_wait_s;
        }
        ttft_mix_release(&mix);
        return kept_up;
    }
    struct queue_wait pool;
    if (!prefill_wait(w, arrivals_per_s, 1 / prefill->requests_per_s, instances, &pool))
        return false;
    struct queue_wait wait = waits_added(slot, &pool), margin = waits_added(&more, &pool);
    struct ttft_mix mix = {.wait = &wait};
    /* a prompt's own batch: the b - 1 others at the mean and its own tokens, the batch's time and
     * its KV's transfer in proportion to the tokens (a length mix spreads them) */
    double isl[SERVE_PROMPT_BINS], weight[SERVE_PROMPT_BINS], mean = (double)w->isl;
    int64_t bins = prompt_bins(w, isl, weight);
    for (int64_t i = 0; i < bins; i++) {
        double kv = mean > 0 ? isl[i] / mean : 1;
        ttft_mix_add(&mix, weight[i],
                     own_batch_s(prefill, (double)prefill->batch, isl[i], mean) + transfer_s * kv + w->prefix_load_s);
    }
    ttft_tail(w, &mix, target_only, at, mean_s, asked ? &margin : NULL, margin_s);
    ttft_mix_release(&mix);
    *wait_s = wait.mean_wait_s;
    return true;
}

/* A verdict's place: the priced instances' rank among those a pool can be priced at. */
#define VERDICT_PLACES (BATCH_QUEUE_PHASES + SERVE_REGULAR_INSTANCES / BATCH_QUEUE_PHASES + 1)

static int64_t verdict_place(int64_t priced)
{
    if (priced <= BATCH_QUEUE_PHASES)
        return priced;
    int64_t steps = (SERVE_REGULAR_INSTANCES + priced - 1) / priced;
    return BATCH_QUEUE_PHASES + (SERVE_REGULAR_INSTANCES + BATCH_QUEUE_PHASES - 1) / BATCH_QUEUE_PHASES - steps;
}

/* What a search learned of one prefill option at one KV transfer time, its workload fixed, in
 * one instance's share of the arrivals, s = lambda / x, and the instances its regularity is
 * priced at, k = priced_instances(x): at k's place, the shares up to met meet the TTFT target
 * (sized without a decode slot's wait) and those from failed on do not. TTFT rises with the
 * share and, at one share, falls as k grows (each instance's arrivals, every x-th of the pool's,
 * grow more regular), so a verdict holds for lower shares and more instances (met) and for higher
 * shares and fewer instances (failed). */
struct prefill_verdicts {
    double transfer_s;
    double met[VERDICT_PLACES], failed[VERDICT_PLACES]; /* by place: 0 and INFINITY where nothing is known */
    struct prefill_verdicts *next;
};

static void verdicts_release(struct prefill_verdicts *v)
{
    while (v) {
        struct prefill_verdicts *next = v->next;
        free(v);
        v = next;
    }
}

/* The verdicts kept at transfer_s in the list at *list, made when there are none. */
static struct prefill_verdicts *verdicts_at(struct prefill_verdicts **list, double transfer_s)
{
    for (struct prefill_verdicts *v = *list; v; v = v->next)
        if (v->transfer_s == transfer_s)
            return v;
    struct prefill_verdicts *v = xmalloc(sizeof *v);
    *v = (struct prefill_verdicts){.transfer_s = transfer_s, .next = *list};
    for (int i = 0; i < VERDICT_PLACES; i++)
        v->failed[i] = INFINITY;
    *list = v;
    return v;
}

/* The shares known to meet the target at k priced instances (0: none) and known not to (INFINITY:
 * none), from every verdict that holds there. */
static void verdict_edges(const struct prefill_verdicts *v, int64_t k, double *met, double *failed)
{
    *met = 0;
    *failed = INFINITY;
    int64_t place = verdict_place(k);
    for (int64_t i = 1; v && i < VERDICT_PLACES; i++) {
        if (i <= place)
            *met = fmax(*met, v->met[i]);
        if (i >= place)
            *failed = fmin(*failed, v->failed[i]);
    }
}

static void verdict_keep(struct prefill_verdicts *v, double arrivals_per_s, int64_t x, bool meets)
{
    if (!v)
        return;
    int64_t place = verdict_place(priced_instances(x));
    double share = arrivals_per_s / (double)x;
    if (meets)
        v->met[place] = fmax(v->met[place], share);
    else
        v->failed[place] = fmin(v->failed[place], share);
}

/* Whether TTFT at the workload's percentile is within its target (set) with x prefill instances. */
static bool ttft_within(const struct serve_workload *w, const struct serve_instance *prefill, double transfer_s,
                        double arrivals_per_s, int64_t x)
{
    double at[TAIL_LEVELS], mean, wait;
    return disaggregated_ttft(w, prefill, transfer_s, NULL, arrivals_per_s, x, true, at, &mean, &wait, NULL) &&
           at[SERVE_PERCENTILES] <= w->ttft_s * (1 + 1e-12);
}

/* Whether x prefill instances keep TTFT at the workload's percentile within the target (with
 * none, whether they keep up: at random, within BATCH_QUEUE_MOST_USE of their rate); `verdicts`
 * (NULL: none) what is known already, and what is learnt. */
static bool prefill_meets(const struct serve_workload *w, const struct serve_instance *prefill, double transfer_s,
                          double arrivals_per_s, int64_t x, struct prefill_verdicts *verdicts)
{
    if (w->ttft_s <= 0) {
        double rate = (double)x * prefill->requests_per_s; /* closed-loop or evenly spaced: up to it */
        return w->arrivals == SERVE_POISSON ? arrivals_per_s <= BATCH_QUEUE_MOST_USE * rate
                                            : arrivals_per_s <= rate * (1 + 1e-12);
    }
    int64_t k = priced_instances(x);
    double share = arrivals_per_s / (double)x, met, failed;
    verdict_edges(verdicts, k, &met, &failed);
    for (;;) {
        if (share <= met || share >= failed)
            return share <= met; /* what is known decides it */
        /* every pool priced at k is one instance's share (prefill_verdicts): the share where the
         * target stops being met there, bracketed, is found by halving the bracket, to
         * SERVE_SHARE_PRECISION; a share within that of it is worked out at itself, so each
         * verdict is the chain's */
        if (!verdicts || k < BATCH_QUEUE_PHASES || !isfinite(failed) || failed - met <= SERVE_SHARE_PRECISION * failed)
            break;
        double middle = (met + failed) / 2, was_met = met, was_failed = failed;
        verdict_keep(verdicts, middle * (double)k, k, ttft_within(w, prefill, transfer_s, middle * (double)k, k));
        verdict_edges(verdicts, k, &met, &failed);
        if (met == was_met && failed == was_failed)
            break; /* the bracket no longer narrows (the last bits of a share) */
    }
    bool meets = ttft_within(w, prefill, transfer_s, arrivals_per_s, x);
    verdict_keep(verdicts, arrivals_per_s, x, meets);
    return meets;
}

/* The fewest prefill instances, from `from` to `most` (-1: up to twice those that keep up, and
 * 64 more), whose TTFT at the workload's percentile meets the target for `arrivals_per_s`; 0
 * when none does (an idle pool's TTFT is already over it). TTFT falls as instances are added,
 * so the first that meets it is found by doubling the step from the last that does not, then
 * halving the gap. */
static int64_t fewest_prefill(const struct serve_workload *w, const struct serve_instance *prefill, double transfer_s,
                              double arrivals_per_s, int64_t from, int64_t most, struct prefill_verdicts *verdicts)
{
    double most_use = w->arrivals != SERVE_POISSON ? 1
                      : w->ttft_s > 0                ? SERVE_PREFILL_TARGET_USE
                                                     : BATCH_QUEUE_MOST_USE;
    int64_t x = (int64_t)ceil(arrivals_per_s / (most_use * prefill->requests_per_s) - 1e-9);
    if (x < from)
        x = from;
    if (x < 1)
        x = 1;
    if (most < 0)
        most = 2 * x + 64;
    if (x > most)
        return 0;
    if (prefill_meets(w, prefill, transfer_s, arrivals_per_s, x, verdicts))
        return x;
    /* alike prompts evenly spaced or closed-loop take whole batches; at random a prompt's batch
     * may hold fewer, down to itself alone */
    if (w->arrivals != SERVE_POISSON && prefill->step_s + transfer_s > w->ttft_s)
        return 0;
    int64_t fails = x, meets = 0;
    for (int64_t step = 1; meets == 0; step *= 2) {
        int64_t next = fails + step < most ? fails + step : most;
        if (prefill_meets(w, prefill, transfer_s, arrivals_per_s, next, verdicts))
            meets = next;
        else if (next == most)
            return 0;
        else
            fails = next;
    }
    while (meets - fails > 1) {
        int64_t middle = fails + (meets - fails) / 2;
        if (prefill_meets(w, prefill, transfer_s, arrivals_per_s, middle, verdicts))
            meets = middle;
        else
            fails = middle;
    }
    return meets;
}

static double price_of(const struct serve_pool *pool, double devices)
{
    return pool->price_usd_per_hour > 0 ? pool->price_usd_per_hour * devices : -INFINITY;
}

static void disaggregated_totals(const struct serve_pool *pp, const struct serve_pool *dp, const struct serve_workload *w,
                                 struct serve_point *p)
{
    double osl = (double)w->osl;
    double prefill_devices = (double)(p->prefill_instances * p->prefill.layout.devices);
    double decode_devices = (double)(p->decode_instances * p->decode.layout.devices);
    double tokens_per_s = (double)p->decode_instances * p->decode.requests_per_s * osl;
    p->devices = (int64_t)(prefill_devices + decode_devices);
    p->prefill_use = (double)p->decode_instances * p->decode.requests_per_s /
                     ((double)p->prefill_instances * p->prefill.requests_per_s);
    p->tokens_per_s_per_device = tokens_per_s / (prefill_devices + decode_devices);
    p->decode_tokens_per_s_per_device = tokens_per_s / decode_devices;
    double price = price_of(pp, prefill_devices) + price_of(dp, decode_devices);
    p->cost_per_mtok = price > 0 ? cost_per_mtok(price, tokens_per_s) : 0;
    double pw = pp->topology->power_watts, dw = dp->topology->power_watts;
    p->joules_per_token = pw > 0 && dw > 0 ? (pw * prefill_devices + dw * decode_devices) / tokens_per_s : 0;
}

/* Whether the two pools are held to one budget, the decode pool's: they are on one topology. */
static bool shared_budget(const struct serve_pool *prefill, const struct serve_pool *decode)
{
    return prefill->topology == decode->topology;
}

static bool budgeted(const struct serve_pool *prefill, const struct serve_pool *decode)
{
    return decode->budget_devices > 0 || (!shared_budget(prefill, decode) && prefill->budget_devices > 0);
}

/* Whether x prefill instances of n_p devices and y decode instances of n_d fit the budgets. */
static bool within_budget(const struct serve_pool *prefill, const struct serve_pool *decode, int64_t x, int64_t n_p,
                          int64_t y, int64_t n_d)
{
    if (shared_budget(prefill, decode))
        return decode->budget_devices <= 0 || x * n_p + y * n_d <= decode->budget_devices;
    return (decode->budget_devices <= 0 || y * n_d <= decode->budget_devices) &&
           (prefill->budget_devices <= 0 || x * n_p <= prefill->budget_devices);
}

/* The most prefill instances of n_p devices that fit the budgets beside y decode instances of n_d
 * (0 when none do: -1 when no budget holds them). */
static int64_t most_prefill(const struct serve_pool *prefill, const struct serve_pool *decode, int64_t n_p, int64_t y,
                            int64_t n_d)
{
    if (shared_budget(prefill, decode)) {
        if (decode->budget_devices <= 0)
            return -1;
        int64_t left = decode->budget_devices - y * n_d;
        return left > 0 ? left / n_p : 0;
    }
    if (decode->budget_devices > 0 && y * n_d > decode->budget_devices)
        return 0;
    return prefill->budget_devices > 0 ? prefill->budget_devices / n_p : -1;
}

/* How many copies of x prefill and y decode instances fit the budgets (at least 1: the caller
 * has checked that one does). */
static int64_t copies_within(const struct serve_pool *prefill, const struct serve_pool *decode, int64_t x, int64_t n_p,
                             int64_t y, int64_t n_d)
{
    int64_t k = INT64_MAX;
    if (shared_budget(prefill, decode)) {
        if (decode->budget_devices > 0)
            k = decode->budget_devices / (x * n_p + y * n_d);
    } else {
        if (decode->budget_devices > 0)
            k = decode->budget_devices / (y * n_d);
        if (prefill->budget_devices > 0 && prefill->budget_devices / (x * n_p) < k)
            k = prefill->budget_devices / (x * n_p);
    }
    return k == INT64_MAX || k < 1 ? 1 : k;
}

/* A disaggregated point's TTFT at every level, into its tail; false when the pool cannot keep up. */
static bool disaggregated_point_ttft(const struct serve_workload *w, struct serve_point *p)
{
    double ttft[TAIL_LEVELS], ttft_mean;
    if (!disaggregated_ttft(w, &p->prefill, p->kv_transfer_s, &p->decode.slot_wait, p->prefill_arrivals_per_s,
                            p->prefill_instances, false, ttft, &ttft_mean, &p->tail.prefill_wait_s,
                            &p->ttft_margin_s))
        return false;
    set_ttft(ttft, ttft_mean, p);
    p->ttft_deferred = false;
    return true;
}

/* serve_disaggregated; within a search (`verdicts` not NULL: the search's for this prefill option
 * at this point's KV transfer time) TTFT is left to disaggregated_point_ttft where the pool's
 * chain is what would be worked out (Poisson arrivals) and the pool is known to meet the TTFT
 * target (prefill_meets) or only held to keep up where there is none, and the verdicts on the
 * target are kept. */
static bool disaggregated_point(const struct serve_pool *prefill_pool, const struct serve_instance *prefill,
                                const struct serve_pool *decode_pool, const struct serve_instance *decode,
                                const struct serve_workload *w, double rate, struct prefill_verdicts *verdicts,
                                struct serve_point *out);

bool serve_disaggregated(const struct serve_pool *prefill_pool, const struct serve_instance *prefill,
                         const struct serve_pool *decode_pool, const struct serve_instance *decode,
                         const struct serve_workload *w, double rate, struct serve_point *out)
{
    return disaggregated_point(prefill_pool, prefill, decode_pool, decode, w, rate, NULL, out);
}

static bool disaggregated_point(const struct serve_pool *prefill_pool, const struct serve_instance *prefill,
                                const struct serve_pool *decode_pool, const struct serve_instance *decode,
                                const struct serve_workload *w, double rate, struct prefill_verdicts *verdicts,
                                struct serve_point *out)
{
    struct serve_point p = {.mode = SERVE_DISAGGREGATED, .prefill = *prefill, .decode = *decode};
    p.kv_transfer_s = serve_kv_transfer_s(prefill_pool, &prefill->layout, decode_pool, &decode->layout, w,
                                          &p.kv_over_scale_up);
    double r_d = decode->requests_per_s;
    if (rate > 0) {
        p.decode_instances = (int64_t)ceil(rate / r_d);
        p.prefill_instances = fewest_prefill(w, prefill, p.kv_transfer_s, rate, 1, -1, verdicts);
        if (p.prefill_instances < 1)
            return false;
        disaggregated_totals(prefill_pool, decode_pool, w, &p);
        /* the rate, not the decode pool's capacity, is what reaches the prefill pool */
        p.prefill_use = rate / ((double)p.prefill_instances * prefill->requests_per_s);
    } else {
        bool found = false, budget = budgeted(prefill_pool, decode_pool);
        int64_t n_p = prefill->layout.devices, n_d = decode->layout.devices;
        struct serve_point best = p;
        int64_t most = budget ? SERVE_MAX_BUDGET_DECODE_INSTANCES : SERVE_MAX_DECODE_INSTANCES, x = 1;
        for (int64_t y = 1; y <= most; y++) {
            struct serve_point q = p;
            q.decode_instances = y;
            /* with the fewest prefill instances that keep up, x r_p >= y r_d, the pair makes at
             * most this; a ratio that cannot beat the best so far is not worked out */
            int64_t keep_up = (int64_t)ceil((double)y * r_d / prefill->requests_per_s - 1e-9);
            double bound = (double)y * r_d * (double)w->osl / (double)((keep_up > x ? keep_up : x) * n_p + y * n_d);
            if (found && bound <= best.tokens_per_s_per_device * (1 + 1e-12))
                continue;
            /* the fewest prefill instances whose wait keeps TTFT within the target, within the
             * budget; it never falls as y grows, so none ends the ratios */
            x = fewest_prefill(w, prefill, p.kv_transfer_s, (double)y * r_d, x,
                               most_prefill(prefill_pool, decode_pool, n_p, y, n_d), verdicts);
            if (x < 1)
                break;
            q.prefill_instances = x;
            disaggregated_totals(prefill_pool, decode_pool, w, &q);
            if (!found || q.tokens_per_s_per_device > best.tokens_per_s_per_device * (1 + 1e-12)) {
                best = q;
                found = true;
            }
        }
        if (!found)
            return false;
        if (budget) { /* the pair replicated as often as the budget holds it */
            int64_t k = copies_within(prefill_pool, decode_pool, best.prefill_instances, n_p, best.decode_instances,
                                      n_d);
            if (k > 1) {
                best.prefill_instances *= k;
                best.decode_instances *= k;
                disaggregated_totals(prefill_pool, decode_pool, w, &best);
            }
        }
        p = best;
    }
    p.prefill_arrivals_per_s = rate > 0 ? rate : (double)p.decode_instances * r_d;
    /* within a search under Poisson arrivals the pool was sized to keep up or, with a TTFT target,
     * to meet it (fewest_prefill; a replicated pair is asked again at its own instances): the
     * search decides nothing on TTFT's value, which is left to the points it returns; but where a
     * request may wait for a decode slot, which the sizing leaves out, whether the point meets
     * the target rests on TTFT with that wait, so it is worked out now */
    bool deferred = verdicts && w->arrivals == SERVE_POISSON && decode->slot_wait.wait_probability <= 0;
    if (deferred && w->ttft_s <= 0) {
        if (!prefill_meets(w, prefill, p.kv_transfer_s, p.prefill_arrivals_per_s, p.prefill_instances, NULL))
            return false;
        p.ttft_deferred = true;
    } else if (deferred &&
               prefill_meets(w, prefill, p.kv_transfer_s, p.prefill_arrivals_per_s, p.prefill_instances, verdicts)) {
        p.ttft_deferred = true;
    } else if (!disaggregated_point_ttft(w, &p)) {
        return false;
    }
    double tpot[TAIL_LEVELS], tpot_mean;
    decode_tpot(w, decode, false, tpot, &tpot_mean);
    set_tpot(tpot, tpot_mean, &p);
    p.tail.sequences_mean = decode->occupancy.sequences_mean;
    p.tail.sequences_sd = sqrt(decode->occupancy.sequences_variance);
    p.tail.sequences_rate_elasticity = decode->occupancy.rate_elasticity;
    p.tail.slot_wait_probability = decode->occupancy.wait_probability;
    p.tokens_per_s_per_user = 1 / tpot_mean;
    p.unsettled = !settles(&decode->occupancy);
    p.meets = point_meets(w, &p);
    if (rate > 0 && !within_budget(prefill_pool, decode_pool, p.prefill_instances, prefill->layout.devices,
                                   p.decode_instances, decode->layout.devices))
        p.meets = false; /* sized beyond the budget */
    *out = p;
    return true;
}

/* ---- the search ---- */

/* An instance shape: n devices, part of one domain (racks 1) or whole domains, with the
 * topology it talks over and its interconnect graph. */
struct shape {
    int64_t devices, racks;
    struct topology topology;
    struct graph_summary graph;
};

/* A layout of a shape, with the most sequences it holds at isl + osl (decode) and prompts at
 * isl (prefill). */
struct candidate_layout {
    const struct shape *shape;
    struct layout layout;
    int64_t max_sequences, max_prompts;
};

struct layouts {
    struct shape *shapes;
    int64_t shape_count;
    struct candidate_layout *items;
    int64_t count;
};

static bool add_shape(struct layouts *ls, const struct topology *t, int64_t devices, int64_t racks)
{
    struct shape s = {.devices = devices, .racks = racks};
    if (racks == 1) {
        if (!topology_slice(t, devices, &s.topology))
            return true; /* a torus has no sub-box of this many chips: not a shape */
    } else {
        s.topology = *t;
    }
    if (graph_analyse(&s.topology, racks, &s.graph) != GRAPH_OK)
        return false;
    struct shape *grown = realloc(ls->shapes, (size_t)(ls->shape_count + 1) * sizeof *grown);
    if (!grown)
        return false;
    ls->shapes = grown;
    ls->shapes[ls->shape_count++] = s;
    return true;
}

/* The fewest whole domains on which some layout holds one sequence of isl + osl tokens; 0: none
 * up to PLAN_MAX_RACKS. */
static int64_t fewest_racks(const struct serve_pool *pool, const struct serve_workload *w)
{
    const struct topology *t = pool->topology;
    struct workload one = pool->precisions;
    one.batch = 1;
    one.context = serve_held_context(w);
    for (int64_t r = 1; r <= PLAN_MAX_RACKS; r++) {
        struct layout l;
        struct device_memory mem;
        if (!plan_choose_layout(pool->model, t, r, r * t->domain_devices, &one, &l))
            continue;
        plan_memory(pool->model, t, &l, &one, &mem);
        if (mem.free_bytes >= 0)
            return r;
    }
    return 0;
}

/* Shapes for a pool: powers of two within a domain and the domain; with a budget of B devices
 * only those up to B, and B itself when it is part of one domain, then 2, 4, ... whole domains
 * and floor(B / domain) of them; without one 2, 4, ... whole domains up to
 * SERVE_DEFAULT_SPAN_DEVICES, and the fewest whole domains that hold the model when one domain
 * does not. */
static bool enumerate_shapes(const struct serve_pool *pool, const struct serve_workload *w, struct layouts *ls)
{
    const struct topology *t = pool->topology;
    int64_t domain = t->domain_devices, budget = pool->budget_devices;
    int64_t within = budget > 0 && budget < domain ? budget : domain; /* the largest shape in one domain */
    for (int64_t n = 1; n < within; n *= 2) /* (a power of two equal to `within` is added below) */
        if (!add_shape(ls, t, n, 1))
            return false;
    if (!add_shape(ls, t, within, 1))
        return false;
    if (budget > 0) {
        int64_t racks = budget / domain;
        for (int64_t r = 2; r < racks; r *= 2)
            if (!add_shape(ls, t, r * domain, r))
                return false;
        return racks < 2 || add_shape(ls, t, racks * domain, racks);
    }
    int64_t fewest = fewest_racks(pool, w);
    bool fewest_added = fewest <= 1;
    for (int64_t r = 2; r * domain <= SERVE_DEFAULT_SPAN_DEVICES; r *= 2) {
        if (!add_shape(ls, t, r * domain, r))
            return false;
        fewest_added |= r == fewest;
    }
    if (!fewest_added && fewest * domain <= SERVE_MAX_SPAN_DEVICES)
        return add_shape(ls, t, fewest * domain, fewest);
    return true;
}

static bool add_layout(struct layouts *ls, const struct candidate_layout *c)
{
    if (ls->count % 64 == 0) {
        struct candidate_layout *grown = realloc(ls->items, (size_t)(ls->count + 64) * sizeof *grown);
        if (!grown)
            return false;
        ls->items = grown;
    }
    ls->items[ls->count++] = *c;
    return true;
}

/* The most sequences of `context` tokens layout `l` holds: the plan's bisection. */

static bool enumerate_layouts(const struct serve_pool *pool, const struct serve_workload *w, struct layouts *ls)
{
    if (!enumerate_shapes(pool, w, ls))
        return false;
    const struct model *m = pool->model;
    const struct topology *t = pool->topology;
    for (int64_t i = 0; i < ls->shape_count; i++) {
        const struct shape *s = &ls->shapes[i];
        int64_t n = s->devices;
        int64_t tp_limit = n < t->domain_devices ? n : t->domain_devices;
        for (int64_t pp = 1; pp <= s->racks; pp++) {
            if (s->racks % pp != 0 || (pool->precisions.pp && pp != pool->precisions.pp) || pp > m->layers)
                continue;
            for (int64_t tp = 1; tp <= tp_limit; tp++) {
                if (n % (tp * pp) != 0 || !model_splits_by(m, tp) ||
                    (pool->precisions.tp && tp != pool->precisions.tp))
                    continue;
                struct candidate_layout c = {.shape = s};
                c.layout = (struct layout){.racks = s->racks, .devices = n, .tp = tp, .pp = pp,
                                           .dp = n / (tp * pp), .ep = model_is_moe(m) ? n / pp : 1};
                /* the slice is the instance's topology: its domain is the instance's devices */
                struct serve_pool sliced = *pool;
                sliced.topology = &s->topology;
                c.max_sequences = most_held(&sliced, &s->topology, &c.layout, serve_held_context(w));
                c.max_prompts = most_held(&sliced, &s->topology, &c.layout, w->isl);
                if (c.max_prompts < 1)
                    continue;
                if (!add_layout(ls, &c))
                    return false;
            }
        }
    }
    return true;
}

static void layouts_release(struct layouts *ls)
{
    free(ls->shapes);
    free(ls->items);
    *ls = (struct layouts){0};
}

/* A growing list of points. */
struct points {
    struct serve_point *items;
    int64_t count, room;
    bool failed;
};

static void points_add(struct points *ps, const struct serve_point *p)
{
    if (ps->failed)
        return;
    if (ps->count == ps->room) {
        int64_t room = ps->room ? 2 * ps->room : 256;
        struct serve_point *grown = realloc(ps->items, (size_t)room * sizeof *grown);
        if (!grown) {
            ps->failed = true;
            return;
        }
        ps->items = grown;
        ps->room = room;
    }
    ps->items[ps->count++] = *p;
}

/* The search's running state. */
struct search {
    const struct serve_workload *w;
    struct points all; /* points within the TTFT target, for the frontier */
    struct serve_result *result;
    bool best_only;    /* serve_search_best */
};

/* More tokens/s per device; within a part in a million (the same roofline term binding on two
 * layouts), more per user, then fewer devices. */
static bool better(const struct serve_point *a, const struct serve_point *b)
{
    double x = a->tokens_per_s_per_device, y = b->tokens_per_s_per_device;
    if (fabs(x - y) > 1e-6 * fmax(x, y))
        return x > y;
    if (a->tokens_per_s_per_user != b->tokens_per_s_per_user)
        return a->tokens_per_s_per_user > b->tokens_per_s_per_user;
    if (a->devices != b->devices)
        return a->devices < b->devices;
    return a->mode < b->mode;
}

/* Fewer devices for the rate, then more tokens/s per device. */
static bool smaller(const struct serve_point *a, const struct serve_point *b)
{
    if (a->devices != b->devices)
        return a->devices < b->devices;
    return a->tokens_per_s_per_device > b->tokens_per_s_per_device;
}

/* Lower `value` than the kept point's, ties to the better point. */
static bool lower(double value, double kept, const struct serve_point *p, const struct serve_point *k)
{
    return value < kept || (value == kept && better(p, k));
}

static void consider(struct search *s, const struct serve_point *p, const struct serve_point *sized)
{
    struct serve_result *r = s->result;
    r->points++;
    if (!(p->tokens_per_s_per_device > 0 && isfinite(p->tokens_per_s_per_device)))
        return; /* a step that takes forever (no peak at the precision) serves nothing */
    if (!r->reached || lower(p->tpot_s, r->lowest_tpot.tpot_s, p, &r->lowest_tpot))
        r->lowest_tpot = *p;
    if (!r->reached || lower(p->ttft_s, r->lowest_ttft.ttft_s, p, &r->lowest_ttft))
        r->lowest_ttft = *p;
    r->reached = true;
    bool within_ttft = s->w->ttft_s <= 0 || p->ttft_s <= s->w->ttft_s * (1 + 1e-12);
    if (p->unsettled) { /* no deployment to plan: its latency is the hour's traffic's */
        bool within_tpot = s->w->tpot_s <= 0 || p->tpot_s <= s->w->tpot_s;
        if (within_ttft && within_tpot && (!r->unsettled || better(p, &r->unsettled_best))) {
            r->unsettled_best = *p;
            r->unsettled = true;
        }
        return;
    }
    if (within_ttft) {
        if (!r->tpot_within_ttft || lower(p->tpot_s, r->lowest_tpot_within_ttft.tpot_s, p, &r->lowest_tpot_within_ttft))
            r->lowest_tpot_within_ttft = *p;
        r->tpot_within_ttft = true;
        points_add(&s->all, p);
    }
    if (!p->meets)
        return;
    if (!r->found || better(p, &r->best)) {
        r->best = *p;
        r->found = true;
    }
    if (sized && sized->meets && (!r->sized || smaller(sized, &r->sized_point))) {
        r->sized_point = *sized;
        r->sized = true;
    }
}

/* The batches to try up to `most`: a log grid (`grid`: false for none), the largest within the
 * targets (`within`, 0: none) and the largest multiple of `step` at or below it. Returns how
 * many, into `out` (room for SERVE_BATCH_POINTS + 2). */
static int64_t batches_to_try(int64_t most, int64_t within, int64_t step, bool grid, int64_t *out)
{
    int64_t n = grid ? roof_sweep_batches(1, most, SERVE_BATCH_POINTS, out) : 0;
    if (within >= 1) {
        out[n++] = within;
        if (within / step * step >= 1 && within / step * step != within)
            out[n++] = within / step * step;
    }
    return n;
}

/* Whether `batch` meets the targets on an aggregated instance (and fits). */
static bool aggregated_within(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                              const struct serve_workload *w, int64_t batch)
{
    if (w->ttft_s <= 0 && w->tpot_s <= 0 && w->arrivals != SERVE_POISSON) {
        /* no target, and no queue that could fail to keep up: what fits is within */
        struct roof_point step;
        serve_aggregated_step(pool, g, l, w, batch, &step);
        return step.fits;
    }
    struct serve_point p;
    return aggregated_point(pool, g, l, w, batch, true, &p) && p.meets;
}

static bool decode_within(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                          const struct serve_workload *w, int64_t batch)
{
    struct serve_instance d;
    if (!serve_decode_instance(pool, g, l, w, batch, &d))
        return false;
    if (!settles(&d.occupancy))
        return false;
    if (w->tpot_s <= 0)
        return true;
    double tpot[TAIL_LEVELS], mean;
    decode_tpot(w, &d, true, tpot, &mean);
    return tpot[SERVE_PERCENTILES] <= w->tpot_s;
}

/* The largest batch in [1, most] for which `ok` holds, `ok` holding for every batch below one
 * where it holds; 0: none. */
static int64_t largest_within(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                              const struct serve_workload *w, int64_t most,
                              bool (*ok)(const struct serve_pool *, const struct graph_summary *, const struct layout *,
                                         const struct serve_workload *, int64_t))
{
    if (most < 1 || !ok(pool, g, l, w, 1))
        return 0;
    int64_t low = 1, high = most;
    while (low < high) {
        int64_t mid = low + (high - low + 1) / 2;
        if (ok(pool, g, l, w, mid))
            low = mid;
        else
            high = mid - 1;
    }
    return low;
}

int64_t serve_largest_batch(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                            const struct serve_workload *w, int64_t most)
{
    return largest_within(pool, g, l, w, most, aggregated_within);
}

int64_t serve_largest_decode_batch(const struct serve_pool *pool, const struct graph_summary *g,
                                   const struct layout *l, const struct serve_workload *w, int64_t most)
{
    return largest_within(pool, g, l, w, most, decode_within);
}

/* A pool as one of its shapes sees it: the slice's topology. */
static struct serve_pool pool_on(const struct serve_pool *pool, const struct candidate_layout *c)
{
    struct serve_pool sliced = *pool;
    sliced.topology = &c->shape->topology;
    return sliced;
}

/* In a best-only search without a rate, the tokens/s per device below which a point can be
 * neither the best nor near it (SERVE_NEAR_BEST of the best so far, which only rises); 0 where
 * every point counts. */
static double worth_working_out(const struct search *s)
{
    if (!s->best_only || s->w->rate > 0 || !s->result->found)
        return 0;
    return SERVE_NEAR_BEST * s->result->best.tokens_per_s_per_device * (1 - 1e-9);
}

/* The fewest sequences in [1, most] whose aggregated step makes `floor` tokens/s per device (they
 * rise with the batch); 0: none. */
static int64_t fewest_reaching(const struct serve_pool *pool, const struct graph_summary *g, const struct layout *l,
                               const struct serve_workload *w, int64_t most, double floor)
{
    if (most < 1 || serve_aggregated_rate(pool, g, l, w, most) < floor)
        return 0;
    int64_t low = 1, high = most;
    while (low < high) {
        int64_t mid = low + (high - low) / 2;
        if (serve_aggregated_rate(pool, g, l, w, mid) >= floor)
            high = mid;
        else
            low = mid + 1;
    }
    return low;
}

static void search_aggregated(struct search *s, const struct serve_pool *pool, const struct layouts *ls)
{
    const struct serve_workload *w = s->w;
    for (int64_t i = 0; i < ls->count; i++) {
        const struct candidate_layout *c = &ls->items[i];
        if (c->max_sequences < 1)
            continue;
        struct serve_pool on = pool_on(pool, c);
        /* best only: a layout is not worth the tails' work when the fewest sequences that reach the
         * floor do not meet the targets (no larger batch does), or when none reaches it */
        double floor = worth_working_out(s);
        if (floor > 0) {
            int64_t least = fewest_reaching(&on, &c->shape->graph, &c->layout, w, c->max_sequences, floor);
            if (least < 1 || !aggregated_within(&on, &c->shape->graph, &c->layout, w, least))
                continue;
        }
        int64_t within = largest_within(&on, &c->shape->graph, &c->layout, w, c->max_sequences, aggregated_within);
        /* best only: the layout's most tokens/s within the targets, no grid */
        int64_t batches[SERVE_BATCH_POINTS + 2];
        int64_t count = batches_to_try(c->max_sequences, within, c->layout.dp * c->layout.pp, !s->best_only, batches);
        if (s->best_only && within > 1) {
            /* where compute binds, the rate holds over a run of batches up to that one: the run's
             * first serves as much a device (within better()'s part in a million, its tie) and the
             * most per user, which better() prefers and the whole search's grid may land on */
            double rate = serve_aggregated_rate(&on, &c->shape->graph, &c->layout, w, within);
            int64_t first = fewest_reaching(&on, &c->shape->graph, &c->layout, w, within, rate * (1 - 1e-6));
            if (first >= 1 && first < within)
                batches[count++] = first;
        }
        for (int64_t b = 0; b < count; b++) {
            struct serve_point p;
            if (!serve_aggregated(&on, &c->shape->graph, &c->layout, w, batches[b], &p))
                continue;
            struct serve_point sized = p;
            if (w->rate > 0) {
                sized.decode_instances = (int64_t)ceil(w->rate / p.decode.requests_per_s);
                sized.devices = sized.decode_instances * c->layout.devices;
                if (pool->budget_devices > 0 && sized.devices > pool->budget_devices)
                    sized.meets = false;
            }
            if (pool->budget_devices > 0) { /* as many replicas as the budget holds */
                p.decode_instances = pool->budget_devices / c->layout.devices;
                p.devices = p.decode_instances * c->layout.devices;
            }
            consider(s, &p, w->rate > 0 ? &sized : NULL);
        }
    }
}

/* A prefill option: an instance and its layout. */
struct prefill_option {
    const struct candidate_layout *layout;
    struct serve_instance instance;
    struct prefill_verdicts *verdicts; /* the search's, by KV transfer time */
};

static bool prefill_options(const struct serve_pool *pool, const struct layouts *ls, const struct serve_workload *w,
                            struct prefill_option **out, int64_t *count)
{
    *out = NULL;
    *count = 0;
    int64_t room = 0;
    for (int64_t i = 0; i < ls->count; i++) {
        const struct candidate_layout *c = &ls->items[i];
        struct serve_pool on = pool_on(pool, c);
        int64_t ranks = c->layout.dp * c->layout.pp;
        int64_t most = ranks * prompts_per_rank(w);
        if (most > c->max_prompts)
            most = c->max_prompts;
        int64_t per_rank[SERVE_PREFILL_POINTS];
        int64_t steps = roof_sweep_batches(1, most / ranks > 0 ? most / ranks : 1, SERVE_PREFILL_POINTS, per_rank);
        for (int64_t j = -1; j < steps; j++) {
            int64_t prompts = j < 0 ? 1 : per_rank[j] * ranks;
            if (j >= 0 && prompts == 1)
                continue;
            if (prompts > most)
                prompts = most;
            struct prefill_option o = {.layout = c};
            if (!serve_prefill_instance(&on, &c->shape->graph, &c->layout, w, prompts, &o.instance))
                continue;
            if (*count == room) {
                room = room ? 2 * room : 64;
                struct prefill_option *grown = realloc(*out, (size_t)room * sizeof *grown);
                if (!grown)
                    return false;
                *out = grown;
            }
            (*out)[(*count)++] = o;
        }
    }
    return true;
}

/* The most tokens/s per device a disaggregated pair with decode instances of layout `c` at `batch`
 * and prefill instances `prefill` can make: each decode instance's requests/s r_d need r_d / r_p
 * prefill instances at least, so tokens/s per device is at most r_d osl / (n_d + n_p r_d / r_p)
 * (whole instances and the TTFT target take more). */
static double pair_rate_bound(const struct serve_pool *decode_pool, const struct candidate_layout *c,
                              const struct serve_workload *w, int64_t batch, const struct serve_instance *prefill)
{
    struct roof_point step;
    serve_decode_step(decode_pool, &c->shape->graph, &c->layout, w, batch, &step);
    double r_d = finished_per_s(w, batch, step.step_s);
    double devices = (double)c->layout.devices + (double)prefill->layout.devices * r_d / prefill->requests_per_s;
    return r_d * (double)w->osl / devices;
}

static void search_disaggregated(struct search *s, const struct serve_pool *decode_pool, const struct layouts *dls,
                                 const struct serve_pool *prefill_pool, struct prefill_option *options,
                                 int64_t option_count)
{
    const struct serve_workload *w = s->w;
    for (int64_t i = 0; i < dls->count; i++) {
        const struct candidate_layout *c = &dls->items[i];
        if (c->max_sequences < 1)
            continue;
        struct serve_pool on = pool_on(decode_pool, c);
        /* the prefill option with the fewest device-seconds a request within the TTFT target */
        struct prefill_option *chosen = NULL;
        double chosen_cost = INFINITY, chosen_transfer = 0;
        for (int64_t j = 0; j < option_count; j++) {
            struct prefill_option *o = &options[j];
            if (!within_budget(prefill_pool, decode_pool, 1, o->instance.layout.devices, 1, c->layout.devices))
                continue; /* one prefill and one decode instance must fit in the budget */
            double transfer = serve_kv_transfer_s(prefill_pool, &o->instance.layout, decode_pool, &c->layout, w, NULL);
            if (w->ttft_s > 0 && o->instance.step_s + transfer > w->ttft_s)
                continue; /* not even an idle pool meets the target */
            double cost = (double)o->instance.layout.devices / o->instance.requests_per_s;
            if (cost < chosen_cost * (1 - 1e-12)) {
                chosen = o;
                chosen_cost = cost;
                chosen_transfer = transfer;
            }
        }
        if (!chosen)
            continue;
        /* best only: a batch whose pair cannot reach the floor (pair_rate_bound) is not worked out,
         * nor a layout whose largest batch's cannot (the bound rises with the batch) */
        double floor = worth_working_out(s);
        if (floor > 0 && pair_rate_bound(&on, c, w, c->max_sequences, &chosen->instance) < floor)
            continue;
        int64_t within = serve_largest_decode_batch(&on, &c->shape->graph, &c->layout, w, c->max_sequences);
        int64_t batches[SERVE_BATCH_POINTS + 2];
        int64_t count = batches_to_try(c->max_sequences, within, c->layout.dp * c->layout.pp, true, batches);
        struct prefill_verdicts *verdicts = verdicts_at(&chosen->verdicts, chosen_transfer);
        for (int64_t b = 0; b < count; b++) {
            struct serve_instance d;
            floor = worth_working_out(s);
            if ((floor > 0 && pair_rate_bound(&on, c, w, batches[b], &chosen->instance) < floor) ||
                !serve_decode_instance(&on, &c->shape->graph, &c->layout, w, batches[b], &d))
                continue;
            struct queue_wait more = slot_wait_margin(&d.slot_wait);
            if (w->ttft_s > 0 && queue_wait_quantile(&more, serve_workload_percentile(w) / 100) > w->ttft_s)
                continue; /* the wait for a decode slot alone passes the TTFT target (TTFT is at least it) */
            /* the whole pools, not the instances' slices: whether a prefill and a decode instance
             * share a domain is a question about the topology */
            struct serve_point p, sized;
            if (!disaggregated_point(prefill_pool, &chosen->instance, decode_pool, &d, w, 0, verdicts, &p))
                continue;
            bool sizing = w->rate > 0 && disaggregated_point(prefill_pool, &chosen->instance, decode_pool, &d, w,
                                                             w->rate, verdicts, &sized);
            consider(s, &p, sizing ? &sized : NULL);
        }
    }
}

/* Pareto points of `ps` restricted to `mode` (SERVE_BEST: both): no other point has both more
 * tokens/s per device and more per user. Most tokens/s per device first. */
static int compare_user_rate(const void *a, const void *b)
{
    const struct serve_point *x = *(const struct serve_point *const *)a, *y = *(const struct serve_point *const *)b;
    if (x->tokens_per_s_per_user != y->tokens_per_s_per_user)
        return x->tokens_per_s_per_user > y->tokens_per_s_per_user ? -1 : 1;
    if (x->tokens_per_s_per_device != y->tokens_per_s_per_device)
        return x->tokens_per_s_per_device > y->tokens_per_s_per_device ? -1 : 1;
    return x < y ? -1 : x > y; /* enumeration order */
}

static bool close_to(double a, double b)
{
    return fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b));
}

/* The same batch per data-parallel rank: a / a_dp = b / b_dp. */
static bool same_rank_batch(int64_t a, int64_t a_dp, int64_t b, int64_t b_dp)
{
    return (double)a * (double)b_dp == (double)b * (double)a_dp;
}

/* One operating point (serve.h): the same mode, TP, PP and batch per DP rank (on both sides and
 * in the same x : y when disaggregated), and rates within a part in a million. */
static bool same_operating_point(const struct serve_point *a, const struct serve_point *b)
{
    const struct layout *ad = &a->decode.layout, *bd = &b->decode.layout;
    if (a->mode != b->mode || ad->tp != bd->tp || ad->pp != bd->pp ||
        !same_rank_batch(a->decode.batch, ad->dp, b->decode.batch, bd->dp) ||
        !close_to(a->tokens_per_s_per_device, b->tokens_per_s_per_device) ||
        !close_to(a->tokens_per_s_per_user, b->tokens_per_s_per_user))
        return false;
    if (a->mode == SERVE_AGGREGATED)
        return true;
    const struct layout *ap = &a->prefill.layout, *bp = &b->prefill.layout;
    return ap->tp == bp->tp && ap->pp == bp->pp && same_rank_batch(a->prefill.batch, ap->dp, b->prefill.batch, bp->dp) &&
           (double)a->prefill_instances * (double)b->decode_instances ==
               (double)b->prefill_instances * (double)a->decode_instances;
}

/* Of two copies of one operating point, whether `a` is the one to drop: more instance devices,
 * then more devices in all. */
static bool larger_copy(const struct serve_point *a, const struct serve_point *b)
{
    int64_t x = a->decode.layout.devices + a->prefill.layout.devices;
    int64_t y = b->decode.layout.devices + b->prefill.layout.devices;
    return x != y ? x > y : a->devices > b->devices;
}

static bool pareto(const struct points *ps, enum serve_mode mode, struct serve_point **out, int64_t *count)
{
    *out = NULL;
    *count = 0;
    const struct serve_point **order = malloc((size_t)(ps->count > 0 ? ps->count : 1) * sizeof *order);
    if (!order)
        return false;
    int64_t n = 0;
    for (int64_t i = 0; i < ps->count; i++)
        if (mode == SERVE_BEST || ps->items[i].mode == mode)
            order[n++] = &ps->items[i];
    qsort(order, (size_t)n, sizeof *order, compare_user_rate);
    /* one copy of each operating point: copies sit within a part in a million of each other in
     * tokens/s per user, so each point is held against those just after it in this order; a
     * dropped point becomes NULL */
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = i + 1; order[i] && j < n; j++) {
            if (!order[j])
                continue;
            if (order[j]->tokens_per_s_per_user < order[i]->tokens_per_s_per_user * (1 - 1e-6))
                break;
            if (same_operating_point(order[i], order[j])) {
                if (larger_copy(order[i], order[j]))
                    order[i] = NULL;
                else
                    order[j] = NULL;
            }
        }
    }
    struct serve_point *kept = malloc((size_t)(n > 0 ? n : 1) * sizeof *kept);
    if (!kept) {
        free(order);
        return false;
    }
    int64_t k = 0;
    double best_rate = -1;
    for (int64_t i = 0; i < n; i++)
        if (order[i] && order[i]->tokens_per_s_per_device > best_rate) {
            best_rate = order[i]->tokens_per_s_per_device;
            kept[k++] = *order[i];
        }
    free(order);
    for (int64_t i = 0; i < k / 2; i++) { /* most tokens/s per device first */
        struct serve_point swap = kept[i];
        kept[i] = kept[k - 1 - i];
        kept[k - 1 - i] = swap;
    }
    *out = kept;
    *count = k;
    return true;
}

/* The fewest devices of the pool's topology that hold the weights and one sequence of isl + osl
 * tokens (one prompt of isl for a prefill pool), as `fit` counts them; 0: none. */
static int64_t fewest_devices(const struct serve_pool *pool, const struct serve_workload *w, bool prefill)
{
    struct workload one = pool->precisions;
    one.batch = 1;
    one.context = prefill ? w->isl : serve_held_context(w);
    struct fit f;
    return plan_fit(pool->model, pool->topology, 1, &one, &f) ? f.min_devices : 0;
}

enum serve_binding serve_binding_target(const struct serve_workload *w, const struct serve_result *r,
                                        const struct serve_point **reachable)
{
    *reachable = NULL;
    if (r->found || !r->reached || (w->ttft_s <= 0 && w->tpot_s <= 0))
        return SERVE_BINDS_NONE;
    if (w->tpot_s > 0 && r->lowest_tpot.tpot_s > w->tpot_s) {
        *reachable = &r->lowest_tpot;
        return SERVE_BINDS_TPOT;
    }
    if (w->ttft_s > 0 && r->lowest_ttft.ttft_s > w->ttft_s * (1 + 1e-12)) {
        *reachable = &r->lowest_ttft;
        return SERVE_BINDS_TTFT;
    }
    *reachable = r->tpot_within_ttft ? &r->lowest_tpot_within_ttft : NULL;
    return SERVE_BINDS_BOTH;
}

/* serve_result.near_best among the points kept (every one within the TTFT target, so every one
 * that meets the targets); `best` is one of them. */
static struct serve_point fewest_near_best(const struct points *all, const struct serve_point *best)
{
    struct serve_point kept = *best;
    double least = SERVE_NEAR_BEST * best->tokens_per_s_per_device;
    for (int64_t i = 0; i < all->count; i++) {
        const struct serve_point *p = &all->items[i];
        if (p->meets && p->tokens_per_s_per_device >= least &&
            (p->devices < kept.devices || (p->devices == kept.devices && better(p, &kept))))
            kept = *p;
    }
    return kept;
}

static bool search_with(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                        const struct serve_workload *w, bool best_only, struct serve_result *out);

bool serve_search(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                  const struct serve_workload *w, struct serve_result *out)
{
    return search_with(decode_pool, prefill_pool, w, false, out);
}

bool serve_search_best(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                       const struct serve_workload *w, struct serve_result *out)
{
    return search_with(decode_pool, prefill_pool, w, true, out);
}

static void *background_search(void *arg)
{
    struct serve_background *b = arg;
    b->ok = search_with(b->decode_pool, b->prefill_pool, b->w, b->best_only, b->out);
    return NULL;
}

void serve_background_start(struct serve_background *b, const struct serve_pool *decode_pool,
                            const struct serve_pool *prefill_pool, const struct serve_workload *w, bool best_only,
                            struct serve_result *out)
{
    *b = (struct serve_background){.decode_pool = decode_pool, .prefill_pool = prefill_pool, .w = w,
                                   .best_only = best_only, .out = out};
    b->started = pthread_create(&b->thread, NULL, background_search, b) == 0;
}

bool serve_background_join(struct serve_background *b)
{
    if (b->started)
        pthread_join(b->thread, NULL);
    else
        background_search(b);
    return b->ok;
}

/* Whether two disaggregated points put the same prompts on the same prefill pool. */
static bool same_prefill(const struct serve_point *a, const struct serve_point *b)
{
    return a->prefill_instances == b->prefill_instances && a->prefill_arrivals_per_s == b->prefill_arrivals_per_s &&
           a->kv_transfer_s == b->kv_transfer_s && a->prefill.batch == b->prefill.batch &&
           a->prefill.step_s == b->prefill.step_s &&
           memcmp(&a->prefill.layout, &b->prefill.layout, sizeof a->prefill.layout) == 0;
}

/* The TTFT a search deferred (disaggregated_point), worked out for the points it returns, once
 * for each pool (the frontiers and the best repeat points). A point whose pool then does not keep
 * up cannot occur: it was held within BATCH_QUEUE_MOST_USE (prefill_meets), where the chain
 * solves. */
static void ttft_worked_out(const struct serve_workload *w, struct serve_result *r)
{
    int64_t count = 6 + r->frontier_count + r->mode_frontier_count[0] + r->mode_frontier_count[1], n = 0, done = 0;
    struct serve_point **points = xmalloc((size_t)count * sizeof *points);
    struct serve_point *single[] = {&r->best, &r->near_best, &r->sized_point, &r->lowest_tpot, &r->lowest_ttft,
                                    &r->lowest_tpot_within_ttft};
    for (size_t i = 0; i < sizeof single / sizeof *single; i++)
        points[n++] = single[i];
    for (int64_t i = 0; i < r->frontier_count; i++)
        points[n++] = &r->frontier[i];
    for (int m = 0; m < 2; m++)
        for (int64_t i = 0; i < r->mode_frontier_count[m]; i++)
            points[n++] = &r->mode_frontier[m][i];
    for (int64_t i = 0; i < n; i++) {
        struct serve_point *p = points[i];
        if (!p->ttft_deferred)
            continue;
        int64_t j = 0;
        while (j < done && !same_prefill(points[j], p))
            j++;
        if (j < done) {
            p->tail.prefill_wait_s = points[j]->tail.prefill_wait_s;
            memcpy(p->tail.ttft_s, points[j]->tail.ttft_s, sizeof p->tail.ttft_s);
            p->tail.ttft_mean_s = points[j]->tail.ttft_mean_s;
            p->ttft_s = points[j]->ttft_s;
            p->ttft_deferred = false;
        } else {
            disaggregated_point_ttft(w, p);
        }
        points[i] = points[done]; /* the worked-out points first */
        points[done++] = p;
    }
    free(points);
}

static bool search_with(const struct serve_pool *decode_pool, const struct serve_pool *prefill_pool,
                        const struct serve_workload *w, bool best_only, struct serve_result *out)
{
    *out = (struct serve_result){0};
    struct search s = {.w = w, .result = out, .best_only = best_only};
    struct layouts decode_layouts = {0}, prefill_layouts = {0};
    struct prefill_option *options = NULL;
    int64_t option_count = 0;
    bool ok = enumerate_layouts(decode_pool, w, &decode_layouts);
    const struct layouts *pls = &decode_layouts;
    const struct serve_pool *pp = prefill_pool ? prefill_pool : decode_pool;
    if (ok && prefill_pool) {
        ok = enumerate_layouts(prefill_pool, w, &prefill_layouts);
        pls = &prefill_layouts;
    }
    out->layouts = decode_layouts.count + (prefill_pool ? prefill_layouts.count : 0);
    for (int64_t i = 0; ok && i < decode_layouts.count; i++)
        out->fits |= decode_layouts.items[i].max_sequences >= 1;
    if (ok && out->fits && prefill_pool) {
        out->fits = prefill_layouts.count > 0; /* a prefill layout is kept when it holds a prompt */
        out->prefill_short = !out->fits;
    }
    if (ok && !out->fits)
        out->min_devices = fewest_devices(out->prefill_short ? prefill_pool : decode_pool, w, out->prefill_short);
    if (ok && w->mode != SERVE_DISAGGREGATED && !prefill_pool)
        search_aggregated(&s, decode_pool, &decode_layouts);
    if (ok && w->mode != SERVE_AGGREGATED) {
        ok = prefill_options(pp, pls, w, &options, &option_count);
        if (ok)
            search_disaggregated(&s, decode_pool, &decode_layouts, pp, options, option_count);
    }
    if (ok && out->found)
        out->near_best = fewest_near_best(&s.all, &out->best);
    ok = ok && !s.all.failed && pareto(&s.all, SERVE_BEST, &out->frontier, &out->frontier_count) &&
         pareto(&s.all, SERVE_AGGREGATED, &out->mode_frontier[0], &out->mode_frontier_count[0]) &&
         pareto(&s.all, SERVE_DISAGGREGATED, &out->mode_frontier[1], &out->mode_frontier_count[1]);
    if (ok)
        ttft_worked_out(w, out);
    for (int64_t i = 0; i < option_count; i++)
        verdicts_release(options[i].verdicts);
    free(options);
    free(s.all.items);
    layouts_release(&decode_layouts);
    layouts_release(&prefill_layouts);
    if (!ok)
        serve_result_release(out);
    return ok;
}

void serve_result_release(struct serve_result *r)
{
    if (!r)
        return;
    free(r->frontier);
    free(r->mode_frontier[0]);
    free(r->mode_frontier[1]);
    r->frontier = r->mode_frontier[0] = r->mode_frontier[1] = NULL;
    r->frontier_count = r->mode_frontier_count[0] = r->mode_frontier_count[1] = 0;
}

/* ---- the simulation of a point (serve.h, serve_simulate) ---- */

/* What a simulated step costs, priced by the roofline at each batch the simulation reaches (see
 * the header): a step that carries prompts, where the ranks step together (or there is one),
 * as the roofline prices its busiest rank's tokens beside the others' at their own context (a
 * step's price kept by sequences, tokens, the busiest rank's and the context: prompts of a mix
 * come back at a few lengths); where the ranks step on their own, the batch's composition at
 * whole prompt counts, linear between them. Either way the decode step's growth with the
 * context, linear about the workload's mean. */
struct step_price {
    int64_t sequences, tokens, busiest, context; /* tokens 0: empty */
    double step_s;
};

enum { SIM_PRICES_KEPT = 1 << 16, SIM_PRICE_PROBES = 16 };

struct sim_prices {
    const struct serve_workload *w;
    struct roof_setup decode;
    const struct serve_instance *prefill; /* disaggregated: the point's prefill instance */
    int64_t room;                      /* entries of the caches, by sequences */
    struct composition *steps;         /* count 0 until priced */
    double *context_slope_s;
    struct step_price *kept;           /* SIM_PRICES_KEPT, open addressing; NULL: none kept */
    bool prefilling;                   /* aggregated: steps carry prompts */
    int64_t rank_instances;            /* a dense model's ranks simulated as instances of their own:
                                        * dp (a step of b sequences priced as the instance's of
                                        * b dp, every rank alike); else 1 */
    bool short_of_memory;
};

/* A step carrying prompts as the roofline prices it, kept for the next step alike. */
static double carrying_price(struct sim_prices *p, int64_t sequences, int64_t tokens, int64_t busiest, int64_t context)
{
    uint64_t h = (uint64_t)sequences * 0x9e3779b97f4a7c15u ^ (uint64_t)tokens * 0xbf58476d1ce4e5b9u ^
                 (uint64_t)busiest * 0x94d049bb133111ebu ^ (uint64_t)context * 0xd6e8feb86659fd93u;
    struct step_price *slot = NULL;
    for (int i = 0; p->kept && i < SIM_PRICE_PROBES; i++) {
        struct step_price *e = &p->kept[(h + (uint64_t)i) & (SIM_PRICES_KEPT - 1)];
        if (e->tokens == 0) {
            slot = e;
            break;
        }
        if (e->sequences == sequences && e->tokens == tokens && e->busiest == busiest && e->context == context)
            return e->step_s;
    }
    double t = chunk_step_s(&p->decode, p->w, sequences, (double)tokens, (double)busiest, (double)context);
    if (slot)
        *slot = (struct step_price){sequences, tokens, busiest, context, t};
    return t;
}

static double sim_step_price(void *context, const struct sim_step *step)
{
    struct sim_prices *p = context;
    int64_t b = step->sequences * p->rank_instances;
    if (b >= p->room) {
        int64_t room = 2 * b + 64;
        struct composition *steps = realloc(p->steps, (size_t)room * sizeof *steps);
        double *slopes = steps ? realloc(p->context_slope_s, (size_t)room * sizeof *slopes) : NULL;
        if (steps)
            p->steps = steps;
        if (!steps || !slopes) {
            p->short_of_memory = true;
            return NAN; /* the simulation stops with SIM_BAD_TIME */
        }
        p->context_slope_s = slopes;
        for (int64_t i = p->room; i < room; i++)
            p->steps[i].count = 0;
        p->room = room;
    }
    struct composition *c = &p->steps[b];
    if (c->count == 0) {
        const struct serve_workload *w = p->w;
        double most = p->prefilling ? (double)(p->decode.layout.dp * w->chunk_tokens) / fmax(unit_tokens(w), 1) : 0;
        composition_init(c, &p->decode, w, b, most);
        struct roof_step longer = mixed_step(w, b, 0);
        struct roof_point r;
        longer.context = serve_decode_context(w) * 5 / 4 + 1;
        roof_step(&p->decode, &longer, &r);
        p->context_slope_s[b] = (r.step_s - composition_step(c, 0)) / (double)(longer.context - serve_decode_context(w));
    }
    double t;
    if (step->prefill_tokens > 0 && !ranks_independent(&p->decode)) {
        t = carrying_price(p, b, step->prefill_tokens, step->prefill_busiest_tokens,
                           (int64_t)llround(step->prefill_context_tokens));
    } else {
        double unit = unit_tokens(p->w), units = unit > 0 ? (double)step->prefill_tokens / unit : 0;
        t = composition_at(c, units);
    }
    if (b > 0)
        t += p->context_slope_s[b] * (step->context_tokens - (double)serve_decode_context(p->w));
    return fmax(t, 0);
}

/* A prefill batch of `prompts` prompts and `tokens` computed tokens: the analysis' batch of that
 * many prompts at their mean length (serve_prefill_batch_at), so that the simulation checks the
 * queue, not the step. */
static double sim_prefill_price(void *context, int64_t prompts, int64_t tokens)
{
    struct sim_prices *p = context;
    double mean = (double)prompts * prefilled_tokens(p->w);
    return serve_prefill_batch_at(p->prefill, (double)prompts, mean > 0 ? (double)tokens / mean : 1);
}

/* A simulation's warm-up is requests / SIM_WARMUP_PARTS of them (serve.h). */
enum { SIM_WARMUP_PARTS = 5 };

/* The requests a second a simulation of `p` sends: w->rate, or what the point serves. */
static double simulated_arrivals_per_s(const struct serve_workload *w, const struct serve_point *p)
{
    return w->rate > 0 ? w->rate : (double)p->decode_instances * p->decode.requests_per_s;
}

bool serve_ttft_on_slot_waits(const struct serve_workload *w, const struct serve_point *p)
{
    return p->tail.slot_wait_probability >= (1 - serve_workload_percentile(w) / 100) / SERVE_SLOT_WAITS_NEAR;
}

double serve_prompt_chunks(const struct serve_workload *w)
{
    return prefilled_tokens(w) / (double)w->chunk_tokens;
}

bool serve_chunks_on_ranks_in_step(const struct model *m, const struct serve_workload *w, const struct serve_point *p)
{
    return p->mode == SERVE_AGGREGATED && w->arrivals == SERVE_POISSON && model_is_moe(m) &&
           p->decode.layout.dp > 1 && serve_prompt_chunks(w) > 1;
}

struct serve_settling serve_simulation_settles(const struct serve_workload *w, const struct serve_point *p)
{
    struct serve_settling s = {.life_s = p->tail.ttft_mean_s + fmax((double)w->osl - 1, 0) * p->tail.tpot_mean_s,
                               .relaxation_s = p->decode.occupancy.relaxation_s};
    double requests = SIM_WARMUP_PARTS * simulated_arrivals_per_s(w, p) * SERVE_SIM_SETTLE *
                      fmax(s.life_s, s.relaxation_s);
    s.requests = isfinite(requests) && requests < 1e15 ? (int64_t)ceil(requests) : INT64_MAX;
    return s;
}

/* The topology and graph an instance of layout `l` on `t` talks over, as the search built them. */
static bool instance_shape(const struct topology *t, const struct layout *l, struct shape *out)
{
    int64_t racks = l->devices > t->domain_devices ? (l->devices + t->domain_devices - 1) / t->domain_devices : 1;
    out->devices = l->devices;
    out->racks = racks;
    if (racks == 1) {
        if (!topology_slice(t, l->devices, &out->topology))
            return false;
    } else {
        out->topology = *t;
    }
    return graph_analyse(&out->topology, racks, &out->graph) == GRAPH_OK;
}

double serve_prompt_prefill_s(const struct serve_pool *pool, const struct layout *l, double tokens)
{
    struct shape shape;
    if (tokens <= 0 || !instance_shape(pool->topology, l, &shape))
        return 0;
    struct serve_pool on = *pool;
    on.topology = &shape.topology;
    struct roof_setup s = setup_of(&on, &shape.graph, l);
    struct roof_step step = {.sequences = 1, .tokens_per_sequence = tokens, .context = tokens / 2, .prefilling = true};
    struct roof_point r;
    roof_step(&s, &step, &r);
    return r.step_s;
}

double serve_free_hbm_bytes(const struct serve_pool *pool, const struct layout *l, const struct serve_workload *w,
                            int64_t batch)
{
    struct shape shape;
    if (!instance_shape(pool->topology, l, &shape))
        return 0;
    struct workload at = pool->precisions;
    at.batch = batch;
    at.context = serve_held_context(w);
    struct device_memory memory;
    plan_memory(pool->model, &shape.topology, l, &at, &memory);
    return fmax(memory.free_bytes, 0);
}

enum serve_sim_status serve_simulate(const struct serve_pool *decode_pool, const struct serve_workload *w,
                                     const struct length_mix *mix, const struct serve_point *p, int64_t requests,
                                     uint64_t seed, struct sim_result *out)
{
    struct shape decode_shape;
    if (!instance_shape(decode_pool->topology, &p->decode.layout, &decode_shape))
        return SERVE_SIM_NO_MEMORY;
    struct serve_pool decode_on = *decode_pool;
    decode_on.topology = &decode_shape.topology;
    struct sim_prices prices = {.w = w, .prefilling = p->mode == SERVE_AGGREGATED, .rank_instances = 1,
                                .prefill = &p->prefill};
    prices.decode = setup_of(&decode_on, &decode_shape.graph, &p->decode.layout);
    const struct layout *l = &p->decode.layout;

    int64_t classes = mix && mix->count > 0 ? mix->count : 1;
    int64_t *isl = xmalloc((size_t)classes * sizeof *isl), *osl = xmalloc((size_t)classes * sizeof *osl);
    double *weight = xmalloc((size_t)classes * sizeof *weight);
    for (int64_t i = 0; i < classes; i++) {
        bool fixed = !mix || mix->count == 0;
        isl[i] = fixed ? w->isl : mix->classes[i].isl;
        osl[i] = fixed ? w->osl : mix->classes[i].osl;
        weight[i] = fixed ? 1 : mix->classes[i].weight;
    }
    struct sim_config c;
    sim_config_init(&c);
    c.mode = p->mode == SERVE_AGGREGATED ? SIM_AGGREGATED : SIM_DISAGGREGATED;
    c.requests = requests;
    c.warmup = requests / SIM_WARMUP_PARTS;
    c.seed = seed;
    c.arrivals_per_s = simulated_arrivals_per_s(w, p);
    c.arrivals = w->arrivals == SERVE_CLOSED ? SIM_CLOSED : w->arrivals == SERVE_CONSTANT ? SIM_CONSTANT : SIM_POISSON;
    c.concurrency = p->decode.batch;
    c.isl = isl;
    c.osl = osl;
    c.weight = weight;
    c.classes = classes;
    c.prefix_hit = w->prefix_hit;
    c.tokens_per_step = serve_tokens_per_step(w);
    /* ranks that step on their own are replicas, each with its own scheduler (SGLang's
     * data-parallel controller sends a dense model's requests to them in turn): each is simulated
     * as an instance of its own with a dp-th of the KV; under Poisson arrivals its requests the
     * stream thinned, as the analysis takes them; evenly spaced, every dp-th (every instance's in
     * turn); closed-loop the replica's clients dealt to its ranks in turn (a dispatch group), so
     * that a prompt longer than the chunk takes one rank's chunk a step. A disaggregated decode
     * instance's ranks stay one instance but under Poisson arrivals (its clients are the
     * instance's, whose joins the ranks share) */
    bool alone = ranks_independent(&prices.decode) && (p->mode == SERVE_AGGREGATED || w->arrivals == SERVE_POISSON);
    if (alone)
        prices.rank_instances = l->dp;
    if (alone && w->arrivals == SERVE_CLOSED)
        c.dispatch_group = l->dp;
    c.decode_instances = p->decode_instances * prices.rank_instances;
    /* the engine admits what its KV holds: the most sequences of the mean reservation, each in
     * whole pages (a reservation is rounded up to them: in tokens alone the KV held one fewer,
     * and a rank's share one fewer a rank) */
    int64_t held = serve_held_context(w), paged = (held + SERVE_KV_BLOCK_TOKENS - 1) / SERVE_KV_BLOCK_TOKENS *
                                                  SERVE_KV_BLOCK_TOKENS;
    c.kv_capacity_tokens = most_held(&decode_on, &decode_shape.topology, l, held) / prices.rank_instances * paged;
    c.kv_block_tokens = SERVE_KV_BLOCK_TOKENS;
    c.reserve_output_tokens = w->max_tokens;
    int64_t longest = 0;
    for (int64_t i = 0; i < classes; i++) {
        int64_t reserved = isl[i] + reserved_output(w, osl[i]);
        longest = reserved > longest ? reserved : longest;
    }
    /* ranks that step together are the simulation's ranks, each holding its own requests' KV, a
     * dp-th of the instance's; ranks that step on their own its instances (above) */
    bool together = !ranks_independent(&prices.decode);
    c.ranks = together ? l->dp : 1;
    if (c.kv_capacity_tokens < (longest + SERVE_KV_BLOCK_TOKENS) * c.ranks) /* the longest is admitted alone */
        c.kv_capacity_tokens = (longest + SERVE_KV_BLOCK_TOKENS) * c.ranks;
    c.chunk_tokens = p->mode == SERVE_AGGREGATED ? w->chunk_tokens : 0;
    if (c.mode == SIM_AGGREGATED && together)
        prices.kept = calloc(SIM_PRICES_KEPT, sizeof *prices.kept); /* none kept: each priced anew */
    if (p->mode == SERVE_DISAGGREGATED) {
        c.prefill_instances = p->prefill_instances;
        c.prefill_batch_tokens = (int64_t)prefill_budget_tokens(w, p->prefill.batch);
        if (c.prefill_batch_tokens < 1)
            c.prefill_batch_tokens = 1;
        c.kv_transfer_s = p->kv_transfer_s;
    }
    struct sim_timing timing = {.step_s = sim_step_price,
                                .prefill_s = p->mode == SERVE_DISAGGREGATED ? sim_prefill_price : NULL,
                                .context = &prices};
    enum sim_status status = simulate(&c, &timing, out, NULL);
    if (status == SIM_OK)
        out->decoding_sequences_sd *= sqrt((double)prices.rank_instances); /* an instance's: its ranks' sum */
    free(isl);
    free(osl);
    free(weight);
    free(prices.steps);
    free(prices.context_slope_s);
    free(prices.kept);
    if (status == SIM_OK)
        return SERVE_SIM_OK;
    return status == SIM_NO_MEMORY || prices.short_of_memory ? SERVE_SIM_NO_MEMORY : SERVE_SIM_INVALID;
}
