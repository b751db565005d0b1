/* roofline.h: the time of a decode step (and of a prefill) on a parallel layout, term by term.
 *
 * DESIGN.md, "The equations". For the most loaded device of the heaviest pipeline stage:
 * - compute: matmul FLOPs (2 x weights used, routed experts by the tokens they receive) at the
 *   weights' precision, attention FLOPs at the KV precision;
 * - weights: every non-expert weight of the stage (split by TP) plus the routed experts the batch
 *   actually hits: an expert is hit with probability 1 - (1 - k/E)^tokens (uniform routing);
 *   the embedding table is looked up, not streamed;
 * - KV: the cached tokens of the device's sequences (windowed layers capped);
 * - network: the EP all-to-all, k x hidden x (1 B dispatch + 2 B combine) per token per MoE
 *   layer, its in-domain share at the domain all-to-all rate and the rest at the NIC rate
 *   (interconnect graph); TP all-reduces 2 (t-1)/t x tokens x hidden x 2 B, twice per layer,
 *   over scale-up; pipeline sends of tokens x hidden x 2 B per stage boundary.
 * - latency: the chain of fixed times no batch hides, each layer's kernels one after another
 *   (a kernel takes at least the topology's kernel_s) and its collectives' floors (all_reduce_s
 *   a TP all-reduce, dispatch_s + combine_s an EP all-to-all): roof_step_latency_s.
 * In a bound the terms overlap: a stage takes the longest of compute, memory (weights + KV), its
 * network time and its latency chain. With pp stages the batch runs as pp micro-batches, so a step is pp stage
 * times plus the pp - 1 sends each token waits for. Efficiency factors (topology.h; 1 for a
 * bound) divide the peaks. An estimate (any factor below 1) runs a stage's kernels in sequence,
 *   stage = max(attention, KV) + max(dense matmuls, their weights)
 *         + max(routed experts, their weights) + EP all-to-all + TP all-reduces
 *         + latency factor x latency chain,
 * and adds its host time to every step (sequence_s for each sequence of a DP rank, and a fixed
 * overhead if a row gives one); with EFFICIENCY_BOUND every time is a lower bound.
 */
#ifndef RACKPLAN_ROOFLINE_H
#define RACKPLAN_ROOFLINE_H

#include "graph.h"
#include "model.h"
#include "plan.h"
#include "topology.h"

#include <stdbool.h>
#include <stdint.h>

struct roof_setup {
    const struct model *model;
    const struct topology *topology;
    const struct graph_summary *graph;
    struct layout layout;
    struct workload workload; /* precisions, context; batch is per call */
    struct efficiency efficiency;
    double expert_imbalance; /* max / mean routed-expert load per device (0 or 1: balanced) */
};

enum roof_term { ROOF_COMPUTE, ROOF_WEIGHTS, ROOF_KV, ROOF_NETWORK, ROOF_LATENCY, ROOF_TERMS };

struct roof_point {
    int64_t batch;     /* sequences in the step (decode) or prompts (prefill) */
    double compute_s;  /* each term as it adds up over the pp micro-batches */
    double weights_s;
    double kv_s;
    double comm_s;     /* EP + TP + pipeline sends */
    double ep_scale_up_s, ep_scale_out_s, tp_s, pp_s;
    double latency_s;  /* the step's chain of fixed times (roof_step_latency_s), at the estimate's
                        * latency factor */
    double overhead_s; /* the estimate's host time a step: fixed, and per sequence of a DP rank;
                        * 0 in a bound */
    double step_s;
    double tokens_per_s;
    double tokens_per_s_per_device;
    double cost_per_mtok; /* USD per million tokens; 0 when no price is known */
    enum roof_term bound;
    bool fits; /* the batch's memory fits the layout */
};

const char *roof_term_name(enum roof_term term);

/* The expected domains other than its own that a token's experts sit in, with the experts
 * spread over `domains` scale-up domains: what crosses the NICs per token per MoE layer, in
 * units of one token's hidden state (DeepEP sends a token to a remote domain once). */
double roof_remote_domains_per_token(const struct model *m, double domains);

/* What one step carries: decode sequences, each with `tokens_per_sequence` new tokens (1, or
 * 1 + the draft tokens verified with multi-token prediction) attending to `context` cached
 * tokens; and, in a serving engine's mixed step, chunks of `prefill_prompts` prompts (a mean:
 * may be fractional) of `prefill_tokens_per_prompt` tokens each, attending to `prefill_context`
 * tokens on average. The step reads the weights once for all of them. */
struct roof_step {
    double sequences;
    double tokens_per_sequence;
    int64_t context;
    double prefill_prompts;
    double prefill_tokens_per_prompt;
    int64_t prefill_context;
    double draft_passes; /* MTP module passes over each decode sequence (speculative drafts) */
    bool prefilling;     /* the sequences' tokens are their prompts: attention in its prefill form
                          * (model_attention_form), as the prefill chunks' always is */
    /* one more chunk of `chunk_tokens` prompt tokens attending to `chunk_context` on average, on
     * one data-parallel rank (which then paces the step): the chunk of the prompt whose time to
     * first token is asked; 0 tokens: none */
    double chunk_tokens;
    int64_t chunk_context;
};

/* Kernels a decode step launches in one layer, in sequence on its stream, as fused serving
 * engines run it: two norms (each fused with its residual add, and its all-reduce under TP);
 * a GQA mixer 4 (QKV GEMM, RoPE and cache write, attention, output GEMM), MLA 7 (TensorRT-LLM's
 * min-latency DeepSeek layer: fused down-projections, q up-projection, k absorb, RoPE and cache,
 * attention, v absorb, output GEMM), a DSA indexer 3 more (its projections, scores, top-k), a
 * linear-attention or Mamba mixer 5 (in-projection, convolution, scan, gated norm,
 * out-projection); an MoE FFN 4 (router and top-k, two grouped GEMMs, finalize; the shared
 * expert runs on a second stream), a dense FFN 2 (gate-up with its activation, down). DeepSeek's
 * MoE layer is then 13 kernels, the 13 modules of TensorRT-LLM's fused layer (its tech blog 1,
 * "Pushing Latency Boundaries ... on NVIDIA B200"). */
double roof_layer_kernels(const struct model *m, int64_t layer);

/* The latency chain of one pipeline stage's pass on layout `l`: each layer's kernels at
 * kernel_s, TP all-reduces (one a mixer or an FFN) at all_reduce_s, each holding a norm's
 * kernel (TensorRT-LLM's fused all-reduce + RMSNorm), an MoE layer's EP dispatch
 * and combine when attention is data-parallel (dp > 1; under TP alone the all-reduce combines);
 * the last stage adds the head's kernels (final norm, LM head, sampling, and the
 * embedding lookup) and `draft_passes` MTP passes, each a layer's kernels and collectives plus the
 * head's. Seconds, at the topology's floors (0 where it gives none). */
double roof_stage_latency_s(const struct model *m, const struct topology *t, const struct layout *l, int64_t first,
                            int64_t last, double draft_passes);

/* The step's times; tokens_per_s counts one token per decode sequence, and `fits` is not set
 * (the caller knows what the step holds in memory). */
void roof_step(const struct roof_setup *s, const struct roof_step *step, struct roof_point *out);

/* A decode step of `batch` sequences, one new token each, at the setup's context. */
void roof_decode(const struct roof_setup *s, int64_t batch, struct roof_point *out);

/* A prefill of `batch` prompts of `prompt` tokens: step_s is the time to first token and
 * tokens_per_s counts prompt tokens. */
void roof_prefill(const struct roof_setup *s, int64_t batch, int64_t prompt,
                  struct roof_point *out);

/* The decode step as the batch goes to 1 sequence with no context: the weights still stream. */
double roof_latency_floor_s(const struct roof_setup *s);

/* DESIGN's ideal floor W / (G x BW): every streamed weight read once, spread over all devices. */
double roof_ideal_floor_s(const struct roof_setup *s);

/* The smallest batch at which compute time reaches memory time, or 0 when it never does (the
 * KV read per sequence outgrows the compute per sequence). Searched up to 2^40. */
int64_t roof_crossover_batch(const struct roof_setup *s);

/* The batches of a sweep: `points` values spaced evenly in log from `from` to `to`, rounded,
 * without repeats. Returns how many were written to `out` (room for `points`). */
int64_t roof_sweep_batches(int64_t from, int64_t to, int64_t points, int64_t *out);

#endif
