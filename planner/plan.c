/* plan.c: see plan.h. */
#include "plan.h"

#include <math.h>

/* Bytes of transient activations per token in flight on a device, a decode step's peak:
 * - the residual stream in and out, 2 x hidden at BF16;
 * - the widest intermediate: the gate and up outputs of the dense FFN split by tp
 *   (2 x intermediate / tp), or of the k routed experts a token visits (2 x k x moe
 *   intermediate), or the query projection (heads x head width / tp), at BF16;
 * - MoE dispatch and combine buffers: k x hidden at FP8 out and BF16 back (DeepSeek's DeepEP);
 * - the logits of the last stage, vocab / tp at FP32.
 * It is an estimate of what an engine keeps live, not a measurement; the reserve covers slack. */
double plan_activation_bytes_per_token(const struct model *m, const struct layout *l)
{
    const double bf16 = 2, fp32 = 4, fp8 = 1;
    double d = (double)m->hidden_size;
    double tp = (double)l->tp;
    double widest = 0;
    if (model_moe_layers(m) < m->layers)
        widest = 2 * (double)m->ffn.intermediate_size / tp;
    double dispatch = 0;
    if (model_is_moe(m)) {
        double k = (double)m->moe.experts_per_token;
        double experts = 2 * k * (double)m->moe.intermediate_size;
        if (experts > widest)
            widest = experts;
        dispatch = k * d * (fp8 + bf16);
    }
    double head_width = m->attention.type == ATTENTION_MLA
                            ? (double)(m->attention.qk_nope_head_dim + m->attention.qk_rope_head_dim)
                            : (double)m->attention.head_dim;
    double query = (double)m->attention.heads * head_width / tp;
    if (query > widest)
        widest = query;
    return bf16 * (2 * d + widest) + dispatch + fp32 * (double)m->vocab_size / tp;
}

static double ceil_div(double a, double b) { return ceil(a / b); }

/* Routed experts of one MoE layer on the most loaded device: whole experts, ceil(E / ep), when
 * there are at least as many experts as devices; otherwise each expert is sliced over
 * floor(ep / E) devices (expert tensor parallelism) and a device holds one slice. */
double plan_experts_per_device(const struct model *m, const struct layout *l)
{
    double experts = (double)m->moe.experts, ep = (double)l->ep;
    if (experts <= 0)
        return 0;
    if (ep <= experts)
        return ceil((experts + (double)l->redundant) / ep);
    return 1.0 / floor(ep / experts);
}

void plan_layer_params(const struct model *m, int64_t layer, struct layer_params *out)
{
    struct layer_parts parts;
    model_layer_parts(m, layer, &parts);
    out->routed_experts = parts.routed_experts;
    out->replicated = layer_parts_sum(&parts) - parts.routed_experts;
}

void plan_stage_layers(const struct model *m, const struct layout *l, int64_t index, int64_t *first,
                       int64_t *end)
{
    *first = l->stage_start ? l->stage_start[index] : index * m->layers / l->pp;
    *end = l->stage_start ? l->stage_start[index + 1] : (index + 1) * m->layers / l->pp;
}

void plan_stage(const struct model *m, const struct layout *l, int64_t index, struct stage *out)
{
    struct model_params p;
    model_params(m, &p);
    struct stage st = {0};
    plan_stage_layers(m, l, index, &st.first, &st.last);
    struct layer_parts parts;
    st.moe_layers = model_layers_parts(m, st.first, st.last, &parts);
    st.replicated_params = layer_parts_sum(&parts) - parts.routed_experts;
    st.unsplit_params = parts.indexer;
    if (index == 0) {
        st.replicated_params += p.embedding;
        st.embedding_params = p.embedding;
    }
    if (index == l->pp - 1)
        st.replicated_params += p.lm_head + (double)m->hidden_size; /* head and final norm */
    *out = st;
}

double plan_per_rank(double all, double whole, int64_t tp)
{
    return (all - whole) / (double)tp + whole;
}

void plan_mtp_memory(const struct model *m, const struct layout *l, const struct workload *w,
                     int64_t sequences, double *weights_bytes, double *kv_bytes)
{
    *weights_bytes = *kv_bytes = 0;
    if (!w->mtp || m->mtp_layers == 0)
        return;
    struct model_params p;
    model_params(m, &p);
    struct layer_parts module;
    model_mtp_parts(m, &module);
    double modules = (double)m->mtp_layers;
    double params = modules * plan_per_rank(layer_parts_sum(&module) - module.routed_experts, module.indexer, l->tp);
    if (l->pp > 1)
        params += p.embedding / (double)l->tp;
    *weights_bytes = params * precision_bytes(w->weights);
    if (module.routed_experts > 0)
        *weights_bytes += modules * plan_experts_per_device(m, l) * p.routed_expert *
                          precision_bytes(w->expert_weights);
    *kv_bytes = (double)sequences * model_mtp_sequence_bytes(m, w->kv, w->context, l->tp);
}

void plan_stage_memory(const struct model *m, const struct topology *t, const struct layout *l,
                       const struct workload *w, int64_t index, struct device_memory *out)
{
    struct model_params p;
    model_params(m, &p);
    double routed_bytes = p.routed_expert * precision_bytes(w->expert_weights);
    int64_t sequences = (int64_t)ceil_div((double)w->batch, (double)l->dp);
    struct stage st;
    plan_stage(m, l, index, &st);
    struct device_memory mem = {0};
    mem.layers = st.last - st.first;
    mem.sequences = sequences;
    mem.weights_bytes = plan_per_rank(st.replicated_params, st.unsplit_params, l->tp) * precision_bytes(w->weights) +
                        (double)st.moe_layers * plan_experts_per_device(m, l) * routed_bytes;
    mem.kv_bytes = (double)sequences *
                   model_sequence_bytes_layers(m, w->kv, w->context, st.first, st.last, l->tp);
    if (index == l->pp - 1) {
        double mtp_weights, mtp_kv;
        plan_mtp_memory(m, l, w, sequences, &mtp_weights, &mtp_kv);
        mem.weights_bytes += mtp_weights;
        mem.kv_bytes += mtp_kv;
    }
    mem.activation_bytes = (double)sequences * plan_activation_bytes_per_token(m, l);
    mem.hbm_bytes = t->hbm_bytes;
    mem.reserve_bytes = w->reserve_bytes >= 0 ? w->reserve_bytes : w->reserve_fraction * t->hbm_bytes;
    mem.free_bytes = mem.hbm_bytes -
                     (mem.weights_bytes + mem.kv_bytes + mem.activation_bytes + mem.reserve_bytes);
    *out = mem;
}

void plan_memory(const struct model *m, const struct topology *t, const struct layout *l,
                 const struct workload *w, struct device_memory *out)
{
    struct device_memory worst = {0};
    for (int64_t index = 0; index < l->pp; index++) {
        struct device_memory mem;
        plan_stage_memory(m, t, l, w, index, &mem);
        if (index == 0 || mem.free_bytes < worst.free_bytes)
            worst = mem;
    }
    *out = worst;
}

static bool valid_layout(const struct model *m, int64_t devices, int64_t domain, int64_t tp,
                         int64_t pp)
{
    return devices % (tp * pp) == 0 && tp <= domain && model_splits_by(m, tp) && pp <= m->layers;
}

/* Is `a` preferred to `b` (both fit, or neither)? */
static bool preferred(const struct model *m, const struct layout *a, const struct layout *b)
{
    if (a->pp != b->pp)
        return a->pp < b->pp;
    return model_is_moe(m) ? a->tp < b->tp : a->tp > b->tp;
}

bool plan_choose_layout(const struct model *m, const struct topology *t, int64_t racks,
                        int64_t devices, const struct workload *w, struct layout *out)
{
    int64_t domain = devices < t->domain_devices ? devices : t->domain_devices;
    /* TP must divide the heads, so no degree above the head count can qualify. */
    int64_t tp_limit = domain < m->attention.heads ? domain : m->attention.heads;
    bool found = false, found_fits = false;
    struct layout best = {0};
    double best_free = -INFINITY;
    /* Pipeline stages span whole racks (or, on one rack, the devices given). */
    int64_t pp_span = racks > 1 ? racks : 1;
    for (int64_t pp = 1; pp <= pp_span; pp++) {
        if (pp_span % pp != 0 || (w->pp && pp != w->pp))
            continue;
        for (int64_t tp = 1; tp <= tp_limit; tp++) {
            if ((w->tp && tp != w->tp) || !valid_layout(m, devices, domain, tp, pp))
                continue;
            struct layout l = {.racks = racks, .devices = devices, .tp = tp, .pp = pp};
            l.dp = devices / (tp * pp);
            l.ep = model_is_moe(m) ? devices / pp : 1;
            struct device_memory mem;
            plan_memory(m, t, &l, w, &mem);
            bool fits = mem.free_bytes >= 0;
            bool better;
            if (!found)
                better = true;
            else if (fits != found_fits)
                better = fits;
            else if (fits)
                better = preferred(m, &l, &best);
            else
                better = mem.free_bytes > best_free;
            if (better) {
                best = l;
                best_free = mem.free_bytes;
                found_fits = fits;
                found = true;
            }
        }
    }
    /* A pinned pp larger than the racks (pipelining inside a rack) is honoured as given. */
    if (!found && w->pp > pp_span) {
        for (int64_t tp = 1; tp <= tp_limit; tp++) {
            if ((w->tp && tp != w->tp) || !valid_layout(m, devices, domain, tp, w->pp))
                continue;
            struct layout l = {.racks = racks, .devices = devices, .tp = tp, .pp = w->pp};
            l.dp = devices / (tp * w->pp);
            l.ep = model_is_moe(m) ? devices / w->pp : 1;
            if (!found || preferred(m, &l, &best))
                best = l;
            found = true;
        }
    }
    if (found)
        *out = best;
    return found;
}

static bool fits_on(const struct model *m, const struct topology *t, int64_t racks,
                    int64_t devices, const struct workload *w, struct layout *layout)
{
    struct layout l;
    if (!plan_choose_layout(m, t, racks, devices, w, &l))
        return false;
    struct device_memory mem;
    plan_memory(m, t, &l, w, &mem);
    if (mem.free_bytes < 0)
        return false;
    *layout = l;
    return true;
}

int64_t plan_max_batch(const struct model *m, const struct topology *t, const struct layout *l,
                       const struct workload *w)
{
    /* memory grows with the batch, so bisect */
    struct workload probe = *w;
    struct device_memory mem;
    probe.batch = 1;
    plan_memory(m, t, l, &probe, &mem);
    if (mem.free_bytes < 0)
        return 0;
    int64_t low = 1, high = 2;
    for (;;) {
        probe.batch = high;
        plan_memory(m, t, l, &probe, &mem);
        if (mem.free_bytes < 0 || high >= ((int64_t)1 << 50))
            break;
        low = high;
        high *= 2;
    }
    while (high - low > 1) {
        int64_t mid = low + (high - low) / 2;
        probe.batch = mid;
        plan_memory(m, t, l, &probe, &mem);
        if (mem.free_bytes >= 0)
            low = mid;
        else
            high = mid;
    }
    return low;
}

bool plan_fit(const struct model *m, const struct topology *t, int64_t racks,
              const struct workload *w, struct fit *out)
{
    struct fit f = {0};
    int64_t devices = racks * t->domain_devices;
    if (!plan_choose_layout(m, t, racks, devices, w, &f.layout))
        return false;
    plan_memory(m, t, &f.layout, w, &f.memory);
    f.fits = f.memory.free_bytes >= 0;

    f.max_batch = plan_max_batch(m, t, &f.layout, w);

    /* Fewest devices for the requested batch: part of one domain, then whole domains. */
    struct workload pinned_free = *w;
    pinned_free.tp = 0;
    pinned_free.pp = 0;
    for (int64_t n = 1; n <= t->domain_devices && !f.min_devices; n++)
        if (fits_on(m, t, 1, n, &pinned_free, &f.min_layout))
            f.min_devices = n;
    for (int64_t r = 2; r <= PLAN_MAX_RACKS && !f.min_devices; r++)
        if (fits_on(m, t, r, r * t->domain_devices, &pinned_free, &f.min_layout))
            f.min_devices = r * t->domain_devices;
    if (f.min_devices)
        f.min_racks = (f.min_devices + t->domain_devices - 1) / t->domain_devices;
    *out = f;
    return true;
}
