/* plan.h: a parallel layout of a model on a cluster, and what it puts in each device's memory.
 *
 * The cluster is `racks` scale-up domains of a topology. A layout has `pp` pipeline stages of
 * contiguous layers; each stage spans devices / pp devices, split `tp` ways by tensor
 * parallelism and `dp` ways by data parallelism (tp * dp * pp = devices). Routed experts are
 * spread over all devices of a stage (ep = devices / pp), whole experts per device, so the most
 * loaded device holds ceil(experts / ep) of each MoE layer (a slice of one when ep > experts);
 * everything else is split by tp and replicated over dp. Sequences are split over dp; a sequence's KV lives on its stage's devices,
 * divided over tp by KV heads (GQA: at most kv_heads ways, MLA: not divided, its latent is shared
 * by all heads).
 *
 * Memory is for the most loaded device. Nothing here allocates; every function is pure.
 */
#ifndef RACKPLAN_PLAN_H
#define RACKPLAN_PLAN_H

#include "model.h"
#include "topology.h"

#include <stdbool.h>
#include <stdint.h>

/* A runtime reserve of 10% of HBM: vLLM's default gpu_memory_utilization is 0.9
 * (docs.vllm.ai, engine arguments), which leaves that much for the CUDA context, NCCL
 * buffers and allocator fragmentation. */
#define PLAN_DEFAULT_RESERVE_FRACTION 0.10

#define PLAN_MAX_RACKS 4096

struct workload {
    int64_t batch;   /* sequences in flight */
    int64_t context; /* tokens of KV per sequence */
    enum precision weights;
    enum precision expert_weights;
    enum precision kv;
    double reserve_fraction; /* of HBM; used when reserve_bytes < 0 */
    double reserve_bytes;    /* < 0: use reserve_fraction */
    int64_t tp;              /* 0 = choose */
    int64_t pp;              /* 0 = choose */
    bool mtp; /* speculative decoding runs the model's MTP modules: the last stage holds them */
};

struct layout {
    int64_t racks;
    int64_t devices;
    int64_t tp, pp, dp, ep;
    int64_t redundant; /* spare routed-expert slots over the EP group, for replicas; they take HBM */
    const int64_t *stage_start; /* pp + 1 layer indices from a stage solver, or NULL: even split;
                                 * borrowed, not owned */
};

struct device_memory {
    double weights_bytes;
    double kv_bytes;
    double activation_bytes;
    double reserve_bytes;
    double hbm_bytes;
    double free_bytes; /* negative when it does not fit */
    int64_t sequences; /* on this device */
    int64_t layers;    /* in its pipeline stage */
};

struct fit {
    struct layout layout;
    struct device_memory memory;
    bool fits;
    int64_t max_batch;   /* most sequences at the context that fit this layout; 0: not even one */
    int64_t min_devices; /* fewest devices holding the weights and the batch's KV; 0: none found */
    int64_t min_racks;
    struct layout min_layout;
};

/* One layer's parameters: those split by TP and replicated over DP (the mixer, norms, and the
 * dense FFN or the MoE layer's shared experts and router), and its routed experts (0 when dense). */
struct layer_params {
    double replicated;
    double routed_experts;
};

void plan_layer_params(const struct model *m, int64_t layer, struct layer_params *out);

/* What one pipeline stage holds: layers [first, last), the parameters split by TP and
 * replicated over DP (attention, dense FFN, shared experts, routers, norms, and the embedding on
 * the first stage, LM head on the last), and its MoE layers. */
struct stage {
    int64_t first, last;
    double replicated_params;
    double embedding_params; /* part of replicated_params: looked up, not streamed */
    /* part of replicated_params that every TP rank holds whole: the DSA indexers, which
     * DeepSeek's reference and vLLM and SGLang replicate rather than split */
    double unsplit_params;
    int64_t moe_layers;
};

void plan_stage(const struct model *m, const struct layout *l, int64_t index, struct stage *out);

/* The layers of pipeline stage `index`: first .. end - 1 (the stage solver's, or an even split). */
void plan_stage_layers(const struct model *m, const struct layout *l, int64_t index, int64_t *first,
                       int64_t *end);

/* Routed experts (or a slice of one) that one MoE layer puts on the most loaded device. */
double plan_experts_per_device(const struct model *m, const struct layout *l);

/* Per-token activation workspace on a device (bytes), see plan.c for the terms. */
double plan_activation_bytes_per_token(const struct model *m, const struct layout *l);

/* What one rank of a `tp`-way group carries of `all` (parameters or FLOPs) of which `whole` every
 * rank carries in full (a DSA indexer's, replicated) and the rest is split. */
double plan_per_rank(double all, double whole, int64_t tp);

/* What the model's MTP modules (m->mtp_layers of them) put on each device of the last stage
 * when w->mtp: their weights (attention, projection and norms split by TP as the layers' are,
 * an indexer whole; routed experts spread over EP as an MoE layer's; and, pipelined, a copy of
 * the embedding they share with the first stage) and their KV for `sequences`. */
void plan_mtp_memory(const struct model *m, const struct layout *l, const struct workload *w,
                     int64_t sequences, double *weights_bytes, double *kv_bytes);

/* Memory of each device of pipeline stage `index` (they hold the same). */
void plan_stage_memory(const struct model *m, const struct topology *t, const struct layout *l,
                       const struct workload *w, int64_t index, struct device_memory *out);

/* Memory of the most loaded device of `l`. */
void plan_memory(const struct model *m, const struct topology *t, const struct layout *l,
                 const struct workload *w, struct device_memory *out);

/* The layout rackplan assumes on `devices` devices (racks whole domains, or part of one when
 * racks == 1 and devices < domain size): among valid (tp, pp) it takes one that fits, preferring
 * fewer pipeline stages, then for MoE models the least tensor parallelism (data-parallel
 * attention, as DeepSeek serves) and for dense models the most (within the domain). When none
 * fits it takes the one with the most free memory. Returns false when no layout is valid (a
 * pinned tp or pp that does not divide). */
bool plan_choose_layout(const struct model *m, const struct topology *t, int64_t racks,
                        int64_t devices, const struct workload *w, struct layout *out);

/* Most sequences at the workload's context that fit layout `l`; 0 when not even one does. */
int64_t plan_max_batch(const struct model *m, const struct topology *t, const struct layout *l,
                       const struct workload *w);

/* The whole fit answer for `racks` domains. Returns false when the pinned tp/pp is invalid. */
bool plan_fit(const struct model *m, const struct topology *t, int64_t racks,
              const struct workload *w, struct fit *out);

#endif
