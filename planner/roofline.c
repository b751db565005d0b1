/* roofline.c: see roofline.h. */
#include "roofline.h"

#include <math.h>

static const double activation_bytes = 2; /* BF16 activations for TP and pipeline traffic */
static const double dispatch_bytes = 1;   /* DeepSeek dispatches in FP8 ... */
static const double combine_bytes = 2;    /* ... and combines in BF16 */

const char *roof_term_name(enum roof_term term)
{
    static const char *const names[ROOF_TERMS] = {"compute", "weights", "kv", "network", "latency"};
    return names[term];
}

/* The expected number of domains other than its own that a token's k experts sit in, the
 * experts spread evenly over `domains` scale-up domains. Routing limited to groups_per_token of
 * the model's expert groups (DeepSeek's node-limited routing) counts groups when each domain
 * holds whole groups; otherwise the k experts are taken as uniform without replacement. A
 * token crosses to each such domain once: DeepEP sends it over the NIC once and forwards it to
 * the experts' devices over the scale-up links, and combines the same way. (Counting k copies
 * instead made the bound slower than SGLang's measured EP32 prefill on 4 H100 nodes.) */
double roof_remote_domains_per_token(const struct model *m, double domains)
{
    if (domains <= 1)
        return 0;
    double missed = 1;
    int64_t groups = m->moe.groups, chosen = m->moe.groups_per_token;
    if (groups > 1 && chosen > 0 && chosen < groups && fmod((double)groups, domains) == 0) {
        double outside = (double)groups - (double)groups / domains;
        for (int64_t i = 0; i < chosen; i++)
            missed *= fmax(outside - (double)i, 0) / (double)(groups - i);
    } else {
        double experts = (double)m->moe.experts, outside = experts - experts / domains;
        for (int64_t i = 0; i < m->moe.experts_per_token; i++)
            missed *= fmax(outside - (double)i, 0) / (experts - (double)i);
    }
    return (domains - 1) * (1 - missed);
}

/* Kernels of a layer of `mixer` and `ffn` (roofline.h, roof_layer_kernels), its DSA indexer's
 * apart. */
static double kernels_of(const struct model *m, enum mixer mixer, enum layer_ffn ffn)
{
    double kernels = 2;
    if (mixer == MIXER_ATTENTION)
        kernels += m->attention.type == ATTENTION_MLA ? 7 : 4;
    else if (mixer == MIXER_LINEAR || mixer == MIXER_MAMBA)
        kernels += 5;
    if (ffn == LAYER_FFN_MOE)
        kernels += 4;
    else if (ffn == LAYER_FFN_DENSE)
        kernels += 2;
    return kernels;
}

static const double indexer_kernels = 3;

double roof_layer_kernels(const struct model *m, int64_t layer)
{
    struct layer_kinds k;
    model_layer_kinds(m, layer, layer + 1, &k);
    double kernels = (double)k.indexers * indexer_kernels;
    for (int mixer = 0; mixer < MIXER_KINDS; mixer++)
        for (int ffn = LAYER_FFN_DENSE; ffn <= LAYER_FFN_NONE; ffn++)
            if (k.count[mixer][ffn])
                kernels += kernels_of(m, (enum mixer)mixer, (enum layer_ffn)ffn);
    return kernels;
}

/* The head of a step: final norm, LM head, sampling, and the embedding lookup. */
static const double head_kernels = 4;

/* The chain of layers [first, last), by their kinds: no walk over the layers where they follow the
 * dense-then-MoE rule, as a step prices it for every batch the search tries. */
static double layers_latency_s(const struct model *m, const struct topology *t, const struct layout *l, int64_t first,
                               int64_t last)
{
    const struct step_latency *f = &t->latency;
    struct layer_kinds k;
    model_layer_kinds(m, first, last, &k);
    double kernels = (double)k.indexers * indexer_kernels, sublayers = 0, moe = 0;
    for (int mixer = 0; mixer < MIXER_KINDS; mixer++) {
        for (int ffn = LAYER_FFN_DENSE; ffn <= LAYER_FFN_NONE; ffn++) {
            double n = (double)k.count[mixer][ffn];
            if (n == 0)
                continue;
            kernels += n * kernels_of(m, (enum mixer)mixer, (enum layer_ffn)ffn);
            sublayers += n * ((mixer != MIXER_NONE) + (ffn != LAYER_FFN_NONE));
            moe += ffn == LAYER_FFN_MOE ? n : 0;
        }
    }
    double s = kernels * f->kernel_s;
    if (l->tp > 1) /* each norm runs inside its all-reduce (TensorRT-LLM's fused AR + RMSNorm) */
        s += sublayers * (f->all_reduce_s - f->kernel_s);
    /* with data-parallel attention the ranks exchange tokens (dispatch, combine); with TP over the
     * whole EP group every rank already holds every token and the TP all-reduce combines */
    if (l->ep > 1 && l->dp > 1)
        s += moe * (f->dispatch_s + f->combine_s);
    return s;
}

double roof_stage_latency_s(const struct model *m, const struct topology *t, const struct layout *l, int64_t first,
                            int64_t last, double draft_passes)
{
    double s = layers_latency_s(m, t, l, first, last);
    if (last == m->layers) {
        s += head_kernels * t->latency.kernel_s;
        if (draft_passes > 0 && m->mtp_layers > 0) /* a pass of the module: a layer like the last */
            s += draft_passes * (layers_latency_s(m, t, l, m->layers - 1, m->layers) + head_kernels * t->latency.kernel_s);
    }
    return s;
}

/* One pipeline stage's times for a micro-batch. Data-parallel ranks hold whole sequences:
 * a rank gets ceil(sequences / dp) of them, each bringing `tokens_per_sequence` new tokens that
 * attend to `context` cached ones. Prefill chunks riding in the same step are spread evenly over
 * the ranks (each rank's scheduler fills its own token budget): prompts / dp of them, each
 * bringing `prefill_tokens_per_prompt` tokens that attend to `prefill_context` on average and
 * reading that prompt's cached KV once. */
struct stage_times {
    double compute, weights, kv, ep_up, ep_out, tp, latency;
    /* compute and weights split by kernel: attention (whose memory is the KV), the dense
     * matmuls, the routed experts */
    double attention, dense, experts, dense_weights, expert_weights;
};

/* Speculative decoding's drafts on the last stage, on the most loaded device: `draft_passes`
 * passes of one MTP module and the LM head over one token of each decode sequence (DeepSeek's
 * and SGLang's MTP reuse one module for every draft), each reading the module's weights, the
 * routed experts its tokens hit and the module's KV, and sending its tokens over EP and TP as a
 * layer does. FLOPs, bytes and tokens, in the units of stage_times' own terms. Nothing when the
 * model has no MTP module or the workload runs none. The engines' draft-extend pass over the
 * accepted tokens is not counted: K one-token passes are the least a step runs. */
struct drafts {
    double matmul, expert_matmul, attention, indexer, dense_bytes, expert_bytes, cache_bytes;
    double moe_tokens;      /* tokens through an MoE layer: each dispatched and combined over EP */
    double sublayer_tokens; /* tokens through a mixer or an FFN: each all-reduced over TP */
};

static void draft_work(const struct roof_setup *s, const struct roof_step *load, struct drafts *out)
{
    const struct model *m = s->model;
    const struct layout *l = &s->layout;
    const struct workload *w = &s->workload;
    if (!w->mtp || m->mtp_layers == 0 || load->draft_passes <= 0)
        return;
    struct model_params p;
    model_params(m, &p);
    struct layer_parts module;
    model_mtp_parts(m, &module);
    double passes = load->draft_passes;
    double rank_sequences = ceil(load->sequences / (double)l->dp);
    double head = m->tie_embeddings ? p.embedding : p.lm_head;
    double streamed = plan_per_rank(layer_parts_sum(&module) - module.routed_experts + head, module.indexer, l->tp);
    out->matmul = 2 * streamed * rank_sequences * passes;
    out->indexer = model_mtp_indexer_flops(m, load->context) * rank_sequences * passes;
    out->attention = plan_per_rank(model_mtp_attention_flops(m, load->context) * rank_sequences * passes,
                                   out->indexer, l->tp);
    out->dense_bytes = passes * streamed * precision_bytes(w->weights);
    out->cache_bytes = passes * rank_sequences * model_mtp_step_cache_bytes(m, w->kv, load->context, l->tp);
    out->sublayer_tokens = 2 * passes * rank_sequences;
    if (module.routed_experts > 0) {
        double k = (double)m->moe.experts_per_token;
        double imbalance = s->expert_imbalance > 1 ? s->expert_imbalance : 1;
        double hit = 1 - pow(1 - k / (double)m->moe.experts, load->sequences);
        out->moe_tokens = passes * rank_sequences;
        out->expert_matmul = 2 * p.routed_expert * load->sequences * k / (double)l->ep * imbalance * passes /
                             s->efficiency.experts;
        out->expert_bytes = passes * plan_experts_per_device(m, l) * hit * p.routed_expert *
                            precision_bytes(w->expert_weights) / s->efficiency.experts;
    }
}

/* The attention FLOPs of `tokens` new tokens at `context` in a stage, on one TP rank: the heads
 * split, a DSA indexer whole on every rank (its weights are replicated), its share added to
 * *indexer. */
static double rank_attention(const struct model *m, const struct stage *st, int64_t context, double tokens,
                             enum attention_pass pass, int64_t tp, double *indexer)
{
    double whole = model_indexer_flops_layers(m, context, st->first, st->last) * tokens;
    *indexer += whole;
    return plan_per_rank(model_attention_flops_layers(m, context, st->first, st->last, pass) * tokens, whole, tp);
}

static void stage_times(const struct roof_setup *s, const struct stage *st, const struct roof_step *load,
                        struct stage_times *out)
{
    const struct model *m = s->model;
    const struct topology *t = s->topology;
    const struct layout *l = &s->layout;
    const struct workload *w = &s->workload;
    struct model_params p;
    model_params(m, &p);
    double d = (double)m->hidden_size;
    double tp = (double)l->tp, ep = (double)l->ep;
    double rank_sequences = ceil(load->sequences / (double)l->dp);
    double rank_prompts = load->prefill_prompts / (double)l->dp;
    double rank_decode_tokens = rank_sequences * load->tokens_per_sequence;
    double rank_prefill_tokens = rank_prompts * load->prefill_tokens_per_prompt;
    double rank_tokens = rank_decode_tokens + rank_prefill_tokens + load->chunk_tokens;
    double tokens = load->sequences * load->tokens_per_sequence +
                    load->prefill_prompts * load->prefill_tokens_per_prompt + load->chunk_tokens;

    /* compute: non-expert matmuls on the rank's tokens, split by TP; routed experts get
     * tokens x k / ep on average; attention over the cached tokens, split by TP */
    double streamed = plan_per_rank(st->replicated_params - st->embedding_params, st->unsplit_params, l->tp);
    double matmul = 2 * streamed * rank_tokens;
    double k = (double)m->moe.experts_per_token;
    double imbalance = s->expert_imbalance > 1 ? s->expert_imbalance : 1;
    double expert_matmul = 0;
    if (st->moe_layers) /* the most loaded device gets imbalance x the mean share */
        expert_matmul = 2 * p.routed_expert * tokens * k / ep * imbalance * (double)st->moe_layers / s->efficiency.experts;
    double indexer = 0;
    double attention = rank_attention(m, st, load->context, rank_decode_tokens,
                                      load->prefilling ? ATTENTION_PASS_PREFILL : ATTENTION_PASS_DECODE, l->tp, &indexer);
    struct drafts drafts = {0};
    if (st->last == m->layers)
        draft_work(s, load, &drafts);
    matmul += drafts.matmul;
    expert_matmul += drafts.expert_matmul;
    attention += drafts.attention;
    indexer += drafts.indexer;
    if (rank_prefill_tokens > 0)
        attention += rank_attention(m, st, load->prefill_context, rank_prefill_tokens, ATTENTION_PASS_PREFILL, l->tp,
                                    &indexer);
    if (load->chunk_tokens > 0)
        attention += rank_attention(m, st, load->chunk_context, load->chunk_tokens, ATTENTION_PASS_PREFILL, l->tp,
                                    &indexer);
    enum precision used;
    double peak_weights = topology_peak_flops_per_s(t, w->weights, &used);
    double peak_kv = topology_peak_flops_per_s(t, w->kv, &used);
    if (peak_kv <= 0)
        peak_kv = peak_weights;
    double peak_index = indexer > 0 ? topology_peak_flops_per_s(t, m->attention.indexer.key_precision, &used) : 0;
    if (peak_index <= 0)
        peak_index = peak_kv;
    /* no indexer, no term: 0 / 0 would make a topology without the peak look as fast as any */
    double attention_s = (attention - indexer) / peak_kv + (indexer > 0 ? indexer / peak_index : 0);
    out->dense = matmul / peak_weights / s->efficiency.compute;
    out->experts = expert_matmul / peak_weights / s->efficiency.compute;
    out->attention = attention_s / s->efficiency.compute;
    out->compute = ((matmul + expert_matmul) / peak_weights + attention_s) / s->efficiency.compute;

    /* weights: streamed non-expert weights, and the experts this device holds that the
     * micro-batch hits */
    double bandwidth = t->hbm_bytes_per_s * s->efficiency.memory;
    double dense_bytes = streamed * precision_bytes(w->weights);
    double expert_bytes = 0;
    if (st->moe_layers) {
        double hit = 1 - pow(1 - k / (double)m->moe.experts, tokens);
        expert_bytes = (double)st->moe_layers * plan_experts_per_device(m, l) * hit *
                       p.routed_expert * precision_bytes(w->expert_weights) / s->efficiency.experts;
    }
    dense_bytes += drafts.dense_bytes;
    expert_bytes += drafts.expert_bytes;
    out->dense_weights = dense_bytes / bandwidth;
    out->expert_weights = expert_bytes / bandwidth;
    out->weights = (dense_bytes + expert_bytes) / bandwidth;
    double kv_bytes = rank_sequences *
                      model_step_cache_bytes_layers(m, w->kv, load->context, st->first, st->last, l->tp,
                                                    load->tokens_per_sequence);
    if (rank_prompts > 0)
        kv_bytes += rank_prompts *
                    model_step_cache_bytes_layers(m, w->kv, load->prefill_context, st->first, st->last, l->tp,
                                                  load->prefill_tokens_per_prompt);
    if (load->chunk_tokens > 0)
        kv_bytes += model_step_cache_bytes_layers(m, w->kv, load->chunk_context, st->first, st->last, l->tp,
                                                  load->chunk_tokens);
    kv_bytes += drafts.cache_bytes;
    out->kv = kv_bytes / bandwidth;

    out->latency = roof_stage_latency_s(m, t, l, st->first, st->last,
                                        w->mtp && st->last == m->layers ? load->draft_passes : 0);

    /* network */
    out->ep_up = out->ep_out = out->tp = 0;
    double moe_tokens = rank_tokens * (double)st->moe_layers + drafts.moe_tokens; /* token-layers */
    if (moe_tokens > 0 && l->ep > 1) {
        /* the tokens of a DP rank are dispatched once, each TP rank sending its share */
        double bytes = moe_tokens / tp * k * d * (dispatch_bytes + combine_bytes);
        double inside = (double)t->domain_devices / ep;
        if (inside > 1)
            inside = 1;
        out->ep_up = bytes * inside / (s->graph->all_to_all_domain_bytes_per_s * s->efficiency.scale_up);
        if (inside < 1) {
            double remote = roof_remote_domains_per_token(m, ep / (double)t->domain_devices);
            out->ep_out = bytes / k * remote / (topology_scale_out_bytes_per_s(t) * s->efficiency.scale_out);
        }
    }
    if (l->tp > 1) {
        double bytes = 2 * (tp - 1) / tp * d * activation_bytes *
                       (rank_tokens * (double)model_sublayers(m, st->first, st->last) + drafts.sublayer_tokens);
        out->tp = bytes / (topology_scale_up_bytes_per_s(t) * s->efficiency.scale_up);
    }
}

/* Runs the pipeline: the step's load goes through as pp micro-batches; the heaviest stage sets
 * the pace. `produced` tokens come out of the step. A bound lets every term of a stage overlap
 * every other. An estimate runs a stage's kernels one after another, as one GPU stream does:
 * attention, bound by its compute or its KV read, then the dense matmuls, by their compute or
 * their weights, then the experts likewise, then the collectives; fitted to the calibration
 * measurements, this left-out error is 30% against 35% for the estimate that overlapped them. */
static void run(const struct roof_setup *s, const struct roof_step *step, double produced,
                struct roof_point *out)
{
    const struct layout *l = &s->layout;
    double pp = (double)l->pp;
    struct roof_step micro = *step;
    micro.sequences = ceil(step->sequences / pp);
    micro.prefill_prompts = step->prefill_prompts / pp;
    micro.chunk_tokens = step->chunk_tokens / pp;
    struct roof_point r = {.batch = (int64_t)step->sequences};
    bool estimate = !efficiency_is_bound(&s->efficiency);
    double worst = -1;
    for (int64_t index = 0; index < l->pp; index++) {
        struct stage st;
        plan_stage(s->model, l, index, &st);
        struct stage_times times;
        stage_times(s, &st, &micro, &times);
        double network = fmax(times.ep_up, times.ep_out) + times.tp;
        double latency = s->efficiency.latency * times.latency;
        double stage = estimate ? fmax(times.attention, times.kv) + fmax(times.dense, times.dense_weights) +
                                      fmax(times.experts, times.expert_weights) + network + latency
                                : fmax(fmax(times.compute, times.weights + times.kv), fmax(network, latency));
        if (stage > worst) {
            worst = stage;
            r.compute_s = pp * times.compute;
            r.weights_s = pp * times.weights;
            r.kv_s = pp * times.kv;
            r.ep_scale_up_s = pp * times.ep_up;
            r.ep_scale_out_s = pp * times.ep_out;
            r.tp_s = pp * times.tp;
            r.latency_s = pp * latency;
        }
    }
    if (l->pp > 1) {
        double rank_tokens = ceil(micro.sequences / (double)l->dp) * micro.tokens_per_sequence +
                             micro.prefill_prompts / (double)l->dp * micro.prefill_tokens_per_prompt +
                             micro.chunk_tokens;
        double bytes = rank_tokens * (double)s->model->hidden_size * activation_bytes;
        double link = l->racks > 1 ? topology_scale_out_bytes_per_s(s->topology) * s->efficiency.scale_out
                                   : topology_scale_up_bytes_per_s(s->topology) * s->efficiency.scale_up;
        r.pp_s = (pp - 1) * bytes / link;
    }
    r.comm_s = fmax(r.ep_scale_up_s, r.ep_scale_out_s) + r.tp_s + r.pp_s;
    r.overhead_s = s->efficiency.step_overhead_s + s->efficiency.sequence_s * ceil(step->sequences / (double)l->dp);
    r.step_s = pp * worst + r.pp_s + r.overhead_s;
    double terms[ROOF_TERMS] = {r.compute_s, r.weights_s, r.kv_s, r.comm_s, r.latency_s};
    r.bound = ROOF_COMPUTE;
    for (int i = 1; i < ROOF_TERMS; i++)
        if (terms[i] > terms[r.bound])
            r.bound = (enum roof_term)i;
    /* memory is one roof: weights and KV share the HBM bandwidth */
    if ((r.bound == ROOF_COMPUTE || r.bound == ROOF_NETWORK || r.bound == ROOF_LATENCY) &&
        r.weights_s + r.kv_s > terms[r.bound])
        r.bound = r.weights_s >= r.kv_s ? ROOF_WEIGHTS : ROOF_KV;
    r.tokens_per_s = produced / r.step_s;
    r.tokens_per_s_per_device = r.tokens_per_s / (double)l->devices;
    if (s->topology->price_usd_per_hour > 0)
        r.cost_per_mtok = s->topology->price_usd_per_hour * (double)l->devices / 3600 /
                          r.tokens_per_s * 1e6;
    *out = r;
}

void roof_step(const struct roof_setup *s, const struct roof_step *step, struct roof_point *out)
{
    run(s, step, step->sequences, out);
}

void roof_decode(const struct roof_setup *s, int64_t batch, struct roof_point *out)
{
    struct roof_step step = {.sequences = (double)batch, .tokens_per_sequence = 1,
                             .context = s->workload.context};
    run(s, &step, (double)batch, out);
    struct workload w = s->workload;
    w.batch = batch;
    struct device_memory mem;
    plan_memory(s->model, s->topology, &s->layout, &w, &mem);
    out->fits = mem.free_bytes >= 0;
}

void roof_prefill(const struct roof_setup *s, int64_t batch, int64_t prompt,
                  struct roof_point *out)
{
    /* causal attention: the i-th prompt token attends to i tokens, prompt / 2 on average,
     * taken as `prompt` tokens attending to a context of prompt / 2 */
    int64_t half = prompt / 2 > 0 ? prompt / 2 : 1;
    struct roof_step step = {.sequences = (double)batch, .tokens_per_sequence = (double)prompt, .context = half,
                             .prefilling = true};
    run(s, &step, (double)batch * (double)prompt, out);
    struct workload w = s->workload;
    w.batch = batch;
    w.context = prompt;
    struct device_memory mem;
    plan_memory(s->model, s->topology, &s->layout, &w, &mem);
    out->fits = mem.free_bytes >= 0;
}

double roof_latency_floor_s(const struct roof_setup *s)
{
    struct roof_setup bare = *s;
    bare.workload.context = 0;
    struct roof_point r;
    struct roof_step one = {.sequences = 1, .tokens_per_sequence = 1, .context = 0};
    run(&bare, &one, 1, &r);
    return r.step_s;
}

double roof_ideal_floor_s(const struct roof_setup *s)
{
    struct model_params p;
    model_params(s->model, &p);
    double streamed = (p.total - p.embedding - p.routed_experts) * precision_bytes(s->workload.weights) +
                      p.routed_experts * precision_bytes(s->workload.expert_weights);
    return streamed / ((double)s->layout.devices * s->topology->hbm_bytes_per_s * s->efficiency.memory);
}

static double compute_minus_memory(const struct roof_setup *s, int64_t batch)
{
    struct roof_point r; /* the time terms only: whether the batch fits does not matter here */
    struct roof_step step = {.sequences = (double)batch, .tokens_per_sequence = 1, .context = s->workload.context};
    run(s, &step, (double)batch, &r);
    return r.compute_s - (r.weights_s + r.kv_s);
}

int64_t roof_crossover_batch(const struct roof_setup *s)
{
    const int64_t limit = (int64_t)1 << 40;
    int64_t high = 1;
    while (high < limit && compute_minus_memory(s, high) < 0)
        high *= 2;
    if (compute_minus_memory(s, high) < 0)
        return 0;
    int64_t low = high / 2; /* memory-bound at low (or low is 0) */
    if (low < 1)
        return 1;
    while (high - low > 1) {
        int64_t mid = low + (high - low) / 2;
        if (compute_minus_memory(s, mid) < 0)
            low = mid;
        else
            high = mid;
    }
    return high;
}

int64_t roof_sweep_batches(int64_t from, int64_t to, int64_t points, int64_t *out)
{
    int64_t n = 0;
    for (int64_t i = 0; i < points; i++) {
        double f = points == 1 ? 0 : (double)i / (double)(points - 1);
        int64_t b = (int64_t)llround(exp(log((double)from) + f * (log((double)to) - log((double)from))));
        if (b < from)
            b = from;
        if (b > to)
            b = to;
        if (n == 0 || b != out[n - 1])
            out[n++] = b;
    }
    return n;
}
