/* emit.h: launch configurations for serving engines from rackplan's own plan (issue 28):
 * SGLang, vLLM and TensorRT-LLM command lines and option files, and a Dynamo Kubernetes
 * deployment over one of them. Pure: it builds the files' text in memory; the commands write
 * them (atomically, through a sink batch).
 *
 * The contract: from a plan to flags. An instance is a layout (tp, dp, pp, ep over `devices`
 * devices) holding `batch` sequences (decode, aggregated) or `batch` prompts a prefill batch;
 * `chunk_tokens` prefill tokens a DP rank's step; per-device memory as plan_memory counts it
 * (weights W, KV K, activations A, HBM H). B_r = ceil(batch / dp) is a DP rank's batch, y = 1 + K
 * draft tokens a step with --mtp K. Each flag below was checked against the engine version named
 * (tests/data/engine-options/ENGINE-VERSION.txt lists the options and where they were read):
 *
 * SGLang, main at 001067ff (python/sglang/srt/server_args.py), `python3 -m sglang.launch_server`:
 *   --tp-size        the instance's GPUs over one pipeline stage: tp x dp with DP attention
 *                    (a MoE model with dp > 1: SGLang's tp_size counts every GPU, attention
 *                    split dp ways), else tp; --dp-size dp; --enable-dp-attention when MoE and dp > 1
 *   --pp-size        pp, when > 1
 *   --ep-size        ep, when MoE and ep > 1; --moe-a2a-backend deepep (mori on AMD CDNA) and
 *                    --deepep-mode normal (prefill), low_latency (decode), auto (aggregated)
 *   --ep-num-redundant-experts  map slots - experts; --init-expert-location FILE.json with it,
 *                    the map `plan` writes (plan only; serve plans no placement)
 *   --max-running-requests  running_cap R: the batch, or under random arrivals what the KV
 *                    holds, as serve's analysis admits (global: SGLang divides it by dp under DP
 *                    attention)
 *   --chunked-prefill-size  chunk_tokens x dp (global: divided by dp under DP attention);
 *                    prefill role: its chunk_tokens are the plan's batch on a rank, ceil(batch /
 *                    dp) prompts of the mean's computed tokens (its memory and the pool's queue
 *                    are worked out at that batch; a longer prompt is split there, as the
 *                    simulation splits it)
 *   --cuda-graph-max-bs     B_r (aggregated, decode)
 *   --kv-cache-dtype bf16 | fp8_e4m3 | fp4_e2m1 (FP4 on Blackwell and later only)
 *   --mem-fraction-static   (W + K) / H rounded up to 0.001: SGLang's static pool is the weights
 *                    and the KV pool (its help text); activations and the reserve stay outside
 *   --disaggregation-mode prefill | decode, --disaggregation-transfer-backend mooncake
 *   --speculative-algorithm EAGLE (DeepSeek's NextN/MTP layers), --speculative-num-steps K,
 *                    --speculative-eagle-topk 1, --speculative-num-draft-tokens K + 1
 *   --nnodes, --node-rank, --dist-init-addr when an instance spans hosts (left to the shell:
 *                    $NODE_RANK, $DIST_INIT_ADDR)
 *   P/D router: `python3 -m sglang_router.launch_router --pd-disaggregation --prefill URL 8998
 *                    --decode URL --host --port` (router_args.py at 6614f984, in
 *                    sgl-model-gateway/bindings/python; 8998 is SGLang's default bootstrap port,
 *                    which the prefill servers keep)
 * vLLM, main at 99d7eb5d (vllm/engine/arg_utils.py, EngineArgs.add_cli_args; --port from
 * vllm/entrypoints/openai/cli_args.py FrontendArgs, read at 00522333), `vllm serve MODEL`:
 *   --tensor-parallel-size tp, --data-parallel-size dp, --pipeline-parallel-size pp (> 1),
 *   --enable-expert-parallel (MoE, ep > 1), --all2all-backend deepep_high_throughput (prefill) |
 *   deepep_low_latency (decode) on NVIDIA; --max-num-seqs R_r = ceil(R / dp) (vLLM's scheduler is
 *   per DP rank); --max-num-batched-tokens R_r y + chunk_tokens (the token budget holds decode
 *   tokens too; prefill role: its chunk_tokens, as SGLang's, which V1's chunked prefill, on by
 *   default (docs/configuration/optimization.md), splits a longer prompt at); --kv-cache-dtype
 *   auto (bf16) | fp8;
 *   --gpu-memory-utilization (W + K + A) / H rounded up to 0.001 (vLLM's share covers all it
 *   allocates); --speculative-config {"method":"deepseek_mtp","num_speculative_tokens":K};
 *   P/D: --kv-transfer-config {"kv_connector":"NixlConnector","kv_role":"kv_both"};
 *   multi-host DP: --data-parallel-size-local, --data-parallel-address, --data-parallel-start-rank
 * TensorRT-LLM 1.0.0, the release (LLM-API keys of tensorrt_llm/llmapi/llm_args.py: BaseLlmArgs,
 * TorchLlmArgs, KvCacheConfig, CudaGraphConfig, CacheTransceiverConfig, MTPDecodingConfig, as
 * 1.0.0's documentation renders it (built from ae8270b); the trtllm-serve CLI from 1.0.0's
 * trtllm-serve page, the disagg file's keys from its disaggregated-serving guide:
 * tests/data/engine-options/trtllm-1.0.0.txt quotes each):
 *   `trtllm-serve MODEL --backend pytorch --extra_llm_api_options FILE.yaml`, the YAML:
 *   tensor_parallel_size (tp x dp with attention DP, as SGLang), pipeline_parallel_size,
 *   moe_expert_parallel_size ep, enable_attention_dp, max_batch_size R_r, max_num_tokens as
 *   vLLM's batched tokens (a context server's SERVE_PREFILL_TOKENS_PER_RANK, not the plan's batch:
 *   1.0.0's BaseLLM._check_arguments refuses a prompt past max_num_tokens unless
 *   enable_chunked_prefill, a BaseLlmArgs key of default False, and whether 1.0.0's MLA context
 *   runs chunked was not read, so a batch's budget that splits prompts is not written),
 *   kv_cache_config {dtype auto | fp8, free_gpu_memory_fraction
 *   K / (H - W - A) rounded up to 0.001: its fraction is of the memory left after the weights and
 *   activations}, cuda_graph_config {enable_padding, max_batch_size B_r} (aggregated, decode),
 *   speculative_config {decoding_type MTP, num_nextn_predict_layers K}, scheduler_config
 *   {capacity_scheduler_policy MAX_UTILIZATION} for an aggregated or decode role unless the
 *   workload gives max_tokens (the default, GUARANTEED_NO_EVICT, reserves prompt + max_tokens a
 *   request, where the plan admits by each one's own length; the same in the 1.3.0rc25 YAMLs); P/D:
 *   cache_transceiver_config {max_tokens_in_buffer max(isl, max_num_tokens)} (its backend left to
 *   TensorRT-LLM's default, UCX at 1.0.0), the context server with disable_overlap_scheduler, and
 *   `trtllm-serve disaggregated -c disagg.yaml` {hostname, port, backend, context_servers,
 *   generation_servers: num_instances, urls}. moe_config {backend WIDEEP} for a MoE role with
 *   ep > 8 on GB200 NVL72 (the rule is the DeepSeek-R1 deployment guide's MoE backend matrix,
 *   TensorRT-LLM 1.2.0rc2.post2: WIDEEP is the only backend it lists there; 1.0.0's MoeConfig
 *   takes the value); elsewhere moe_config is not written (CUTLASS, the default, is kept).
 * TensorRT-LLM 1.3.0rc25 for the role YAMLs of a Dynamo deployment (the engine its image carries;
 * each key as 1.3.0rc25's own documentation writes it, tests/data/engine-options/trtllm-1.3.0rc25.txt
 * quotes the pages): the keys above but pipeline_parallel_size only when pp > 1, MTP as
 * speculative_config {decoding_type MTP, max_draft_len K} (its DeepSeek-R1 guide), moe_config
 * {backend CUTEDSL} (NVFP4 experts) or {backend DEEPGEMM} (fp8) for a MoE role with ep > 8 on
 * GB200 NVL72, and {backend DEEPGEMM} for fp8 experts at ep <= 8 on B200 or GB200 (that guide's
 * MoE backend support matrix; no WIDEEP; CUTLASS, the default, does not run fp8 experts on
 * Blackwell), moe_config {backend TRTLLM} on Blackwell or {backend TRITON} on Hopper for MXFP4
 * experts (a model's precision.fp4_format mxfp4; its gpt-oss guide's matrix), each role by its own
 * hardware (a prefill pool's under --prefill-topology), and P/D
 * cache_transceiver_config {backend DEFAULT} as Dynamo's 1.5.0-era TRT-LLM templates write it (no
 * 1.3.0rc25 page writes max_tokens_in_buffer, so the engine's default buffer is kept).
 * Dynamo 1.5.0 (nvidia.com/v1beta1 DynamoGraphDeployment, the version its DGD reference serves;
 *   keys from deploy/operator/api/v1beta1 as tests/data/engine-options/dynamo-1.5.0.txt says):
 *   spec.backendFramework, spec.components: Frontend (type frontend, 1 replica, the operator's
 *   default command) and a worker per role (type prefill | decode; aggregated: worker), replicas =
 *   the role's instances, multinode.nodeCount when an instance spans hosts, the pod's main
 *   container (podTemplate.spec.containers[name: main]) on the release's runtime image
 *   (nvcr.io/nvidia/ai-dynamo/{sglang,vllm,tensorrtllm}-runtime:1.5.0, the frontend's too) with
 *   resources.limits."nvidia.com/gpu" = GPUs a host the worker takes, running
 *   `python3 -m dynamo.ENGINE` with the engine's flags above and the role as Dynamo names it:
 *   SGLang's own --disaggregation-mode; vLLM's worker --disaggregation-mode prefill | decode
 *   (backend_args.py at d195d280); TensorRT-LLM's worker --model-path (the 1.5.0-era templates'
 *   spelling), --extra-engine-args /config/trtllm-ROLE.yaml (the role's LLM-API YAML, 1.3.0rc25's
 *   above, written beside the deployment and mounted from a ConfigMap) and --disaggregation-mode
 *   (backend_args.py at b6c87336). The operator launches a multinode worker itself, so none of the
 *   multi-host flags above is written there: SGLang's --nnodes, --node-rank, --dist-init-addr and vLLM's
 *   --data-parallel-size-local, --data-parallel-address, --data-parallel-start-rank (it appends
 *   them, and keeps the --data-parallel-size written). The images carry SGLang 0.5.18 and vLLM
 *   0.28.0, not the versions the engine flags were checked against: the file says so; and
 *   TensorRT-LLM 1.3.0rc25, the version its role YAMLs are written for.
 *
 * Hosts: an instance wider than a host runs on ceil(devices / host) hosts; a host has the
 * domain's devices up to 8 (HGX, MI300X), and 4 in a larger NVLink domain (GB200/GB300 NVL72
 * compute trays).
 *
 * Refusals (EMIT_REFUSED, with the reason in `why`): an accelerator family the engine does not
 * run on any role's hardware (TPU and Trainium for all three: SGLang's and TensorRT-LLM's flags
 * here are CUDA's, vLLM runs them through plugins whose options were not checked; AMD for
 * TensorRT-LLM); a KV precision the engine lacks there or whose value was not verified (fp16/fp32
 * everywhere, FP4 in vLLM and in TensorRT-LLM 1.0.0 and 1.3.0rc25, FP4 before Blackwell); under
 * Dynamo, a TensorRT-LLM role with ep > 8 on GB200 NVL72 whose routed experts are neither fp4 nor
 * fp8 (or MXFP4 on a family its gpt-oss guide does not list): 1.3.0rc25's matrices name no backend
 * for it; MTP on a model with no MTP layers (EAGLE would need a draft model rackplan did not plan); vLLM and
 * TensorRT-LLM with an instance's TP x PP wider than a host (they span hosts through Ray or MPI
 * launchers these files do not write). Never a file that fails at start-up for a reason known here.
 */
#ifndef RACKPLAN_EMIT_H
#define RACKPLAN_EMIT_H

#include "precision.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum emit_engine { EMIT_SGLANG, EMIT_VLLM, EMIT_TRTLLM, EMIT_DYNAMO, EMIT_ENGINE_COUNT };

enum emit_role_kind { EMIT_AGGREGATED, EMIT_PREFILL, EMIT_DECODE };

struct emit_role {
    enum emit_role_kind kind;
    int64_t tp, dp, pp, ep, devices; /* one instance */
    int64_t instances;
    int64_t batch;        /* sequences in flight an instance; prefill: prompts a batch */
    int64_t running_cap;  /* the most sequences an instance admits (>= batch): the batch, or
                           * under random arrivals what its KV holds (serve_occupancy.running_cap);
                           * prefill: the batch */
    int64_t chunk_tokens; /* prefill tokens a DP rank's step (prefill role: its batch's) */
    int64_t slots;        /* MoE: routed-expert slots a device (map width / ep); 0: no map */
    double weights_bytes, kv_bytes, activation_bytes, hbm_bytes; /* a device, plan_memory's */
    const char *topology_name; /* the role's topology (serve's --prefill-topology for prefill);
                                  NULL: the plan's */
    const char *family;        /* that topology's accelerator family; NULL: the plan's */
};

struct emit_plan {
    const char *command;       /* "serve" or "plan" */
    const char *model_name;
    const char *model_path;    /* a Hugging Face id or a path, as the engines take it */
    const char *topology_name;
    const char *family;        /* the topology's accelerator family ("Hopper", "TPU", ...) */
    int64_t domain_devices;
    bool moe;
    int64_t experts;           /* routed experts; 0: dense */
    int64_t mtp_layers;        /* the model's MTP modules */
    enum precision kv;
    enum precision expert_weights; /* the routed experts' weights (a MoE model's) */
    bool mxfp4_experts;            /* they are FP4 in MXFP4 (the model's fp4_format), not NVFP4 */
    int64_t isl, osl, mtp;
    int64_t max_tokens;        /* the workload's: admission reserves prompt + max_tokens; 0: own output */
    double mtp_accept;
    double ttft_target_s, tpot_target_s; /* 0: none */
    double ttft_s, tpot_s, tokens_per_s_per_device, tokens_per_s; /* predicted */
    bool bound;                /* the predictions are roofline bounds */
    int role_count;            /* 1 (aggregated) or 2 (prefill, decode) */
    struct emit_role roles[2];
    const char *expert_map;    /* the JSON map the commands load, as they will name it; NULL: none */
};

struct emit_file {
    char name[64];      /* within DIR */
    const char *engine; /* the program that reads it: "sglang", "vllm", "trtllm", "dynamo" (static) */
    const char *role;   /* "aggregated", "prefill", "decode", "router" or "deployment" (static) */
    char *text;
};

#define EMIT_MAX_FILES 8
struct emit_output {
    struct emit_file files[EMIT_MAX_FILES];
    int count;
};

enum emit_status {
    EMIT_OK = 0,
    EMIT_REFUSED = 1, /* the engine cannot run this plan: `why` says why; nothing built */
    EMIT_FAILED = 2,  /* libyaml's emitter failed (out of memory): nothing built */
};

struct model;
struct topology;
struct workload;
struct serve_workload;
struct serve_point;

/* The plan serve's point `p` implies for --emit: its roles (one aggregated, or prefill and
 * decode) with their layouts, instance counts, batches and a device's memory (plan_memory at the
 * role's batch, a prompt's context for prefill, the held context for decode) on `topology`, the
 * prefill role on `prefill_topology` (NULL: the same); `bound`: its times are roofline bounds. */
void emit_plan_of_serve(const struct model *m, const struct topology *topology, const struct topology *prefill_topology,
                        const struct workload *precisions, const struct serve_workload *w, const struct serve_point *p,
                        const char *model_path, bool bound, struct emit_plan *out);

/* Builds the files of `engine` (`inner`: the engine a Dynamo deployment runs; ignored
 * otherwise) for plan `p`. On EMIT_OK fills *out (release with emit_output_release); otherwise
 * leaves it empty and, on EMIT_REFUSED, writes the reason into `why` (one line, no full stop). */
enum emit_status emit_build(enum emit_engine engine, enum emit_engine inner, const struct emit_plan *p,
                            struct emit_output *out, char *why, size_t why_size);

void emit_output_release(struct emit_output *o);

/* "sglang", "vllm", "trtllm", "dynamo"; parsing takes these and "dynamo-sglang",
 * "dynamo-vllm", "dynamo-trtllm" (plain "dynamo" runs SGLang). False for anything else. */
bool emit_engine_parse(const char *text, enum emit_engine *engine, enum emit_engine *inner);
const char *emit_engine_name(enum emit_engine engine);
/* The engine version the flags were checked against ("main at 001067ff"). */
const char *emit_engine_version(enum emit_engine engine);

/* The GPUs a host of a domain of `domain_devices` (see the header). */
int64_t emit_host_devices(int64_t domain_devices);

#endif
