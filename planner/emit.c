/* emit.c: see emit.h. */
#include "emit.h"

#include "diag.h"
#include "doc.h"
#include "serve.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const engine_names[EMIT_ENGINE_COUNT] = {"sglang", "vllm", "trtllm", "dynamo"};
static const char *const engine_versions[EMIT_ENGINE_COUNT] = {
    "SGLang main at 001067ff (python/sglang/srt/server_args.py)",
    "vLLM main at 99d7eb5d (vllm/engine/arg_utils.py; vllm serve --port from entrypoints/openai/cli_args.py at 00522333)",
    "TensorRT-LLM 1.0.0 (release; LLM-API keys of tensorrt_llm/llmapi/llm_args.py: TorchLlmArgs, KvCacheConfig, "
    "CudaGraphConfig, CacheTransceiverConfig, MTPDecodingConfig)",
    "Dynamo 1.5.0, DynamoGraphDeployment nvidia.com/v1beta1 (the v1.5.0 DGD reference; keys of "
    "deploy/operator/api/v1beta1 at 0fddc01b, 006b6e10 and bd2fc6d6); worker flags from "
    "components/src/dynamo/{vllm,trtllm}/backend_args.py at d195d280 and b6c87336, not tied to 1.5.0"};
/* The engine YAMLs of a Dynamo TRT-LLM deployment target the TensorRT-LLM its image carries
 * (dynamo_image_engines), not 1.0.0: each key as 1.3.0rc25's own documentation writes it
 * (tests/data/engine-options/trtllm-1.3.0rc25.txt quotes the pages) */
static const char trtllm_dynamo_version[] =
    "TensorRT-LLM 1.3.0rc25, the engine of Dynamo 1.5.0's tensorrtllm-runtime image (its documentation, built from "
    "785c948: deployment-guide/deployment-guide-for-deepseek-r1-on-trtllm.html and -gpt-oss-on-trtllm.html, "
    "commands/trtllm-serve/trtllm-serve.html, examples/llm_inference_distributed.html, "
    "torch/features/overlap_scheduler; cache_transceiver_config.backend from Dynamo's 1.5.0-era TRT-LLM templates)";
/* sgl-model-gateway/bindings/python/src/sglang_router/router_args.py at 6614f984 (and its predecessor
 * sgl-router/py_src/sglang_router/router_args.py at 083d6013): --pd-disaggregation, --prefill URL
 * [BOOTSTRAP_PORT], --decode URL, --host, --port */
static const char router_version[] = "sglang_router (SGLang's router) router_args.py at 6614f984";
/* SGLang's ServerArgs.disaggregation_bootstrap_port default: the prefill servers' bootstrap port,
 * given to the router explicitly (the router's own default for it is none) */
#define SGLANG_BOOTSTRAP_PORT 8998

const char *emit_engine_name(enum emit_engine engine)
{
    return engine_names[engine];
}

const char *emit_engine_version(enum emit_engine engine)
{
    return engine_versions[engine];
}

bool emit_engine_parse(const char *text, enum emit_engine *engine, enum emit_engine *inner)
{
    for (int e = 0; e < EMIT_ENGINE_COUNT; e++)
        if (strcmp(text, engine_names[e]) == 0) {
            *engine = (enum emit_engine)e;
            *inner = e == EMIT_DYNAMO ? EMIT_SGLANG : (enum emit_engine)e;
            return true;
        }
    if (strncmp(text, "dynamo-", 7) == 0)
        for (int e = 0; e < EMIT_DYNAMO; e++)
            if (strcmp(text + 7, engine_names[e]) == 0) {
                *engine = EMIT_DYNAMO;
                *inner = (enum emit_engine)e;
                return true;
            }
    return false;
}

int64_t emit_host_devices(int64_t domain_devices)
{
    return domain_devices <= 8 ? domain_devices : 4;
}

/* ---- text ---- */

struct text {
    char *data;
    size_t size, capacity;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (t->size + (size_t)n + 1 > t->capacity) {
        t->capacity = (t->size + (size_t)n + 1) * 2;
        t->data = xrealloc(t->data, t->capacity);
    }
    vsnprintf(t->data + t->size, (size_t)n + 1, fmt, ap);
    t->size += (size_t)n;
    va_end(ap);
}

/* One command's arguments: flags with their values, in order. */
#define MAX_ARGS 64
struct args {
    const char *program;          /* "python3 -m sglang.launch_server MODEL"... */
    char flag[MAX_ARGS][48];
    char value[MAX_ARGS][160];    /* "" for a switch */
    bool shell[MAX_ARGS];         /* the value is for the shell to expand ("${NODE_RANK:?}") */
    char value2[MAX_ARGS][16];    /* a second, literal value ("--prefill URL 8998"); "" for none */
    int count;
};

static void arg(struct args *a, const char *flag, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void arg(struct args *a, const char *flag, const char *fmt, ...)
{
    if (a->count >= MAX_ARGS)
        return;
    snprintf(a->flag[a->count], sizeof a->flag[0], "%s", flag);
    a->value[a->count][0] = 0;
    a->value2[a->count][0] = 0;
    a->shell[a->count] = false;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->value[a->count], sizeof a->value[0], fmt, ap);
        va_end(ap);
    }
    a->count++;
}

static void arg_shell(struct args *a, const char *flag, const char *value)
{
    arg(a, flag, "%s", value);
    a->shell[a->count - 1] = true;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* A fraction rounded up to 0.001, at most 1. */
static double fraction_up(double x)
{
    double r = ceil(x * 1000 - 1e-9) / 1000;
    return r > 1 ? 1 : r;
}

static const char *role_name(enum emit_role_kind k)
{
    return k == EMIT_PREFILL ? "prefill" : k == EMIT_DECODE ? "decode" : "aggregated";
}

/* The TensorRT-LLM LLM-API YAML of a role, as trtllm-serve's scripts and Dynamo's workers name it. */
static void trtllm_role_file(const struct emit_role *r, char *out, size_t size)
{
    snprintf(out, size, "trtllm-%s.yaml", role_name(r->kind));
}

/* `dynamo`: a TensorRT-LLM role's file inside a Dynamo deployment, written by --emit dynamo-trtllm for
 * the image's TensorRT-LLM (trtllm_dynamo_version); else the engine's own (engine_versions) */
static void comment_header(struct text *t, enum emit_engine engine, const struct emit_plan *p,
                           const struct emit_role *r, bool dynamo)
{
    text_add(t, "# Written by rackplan %s --emit %s%s: what it planned, and the flags that carry it.\n", p->command,
             dynamo ? "dynamo-" : "", engine_names[engine]);
    text_add(t, "# model: %s (%s); topology: %s\n", p->model_name, p->model_path, p->topology_name);
    text_add(t, "# workload: %lld prompt and %lld output tokens a request", (long long)p->isl, (long long)p->osl);
    if (p->mtp > 0)
        text_add(t, ", MTP %lld draft%s accepted at %.2f", (long long)p->mtp, p->mtp == 1 ? "" : "s", p->mtp_accept);
    if (p->max_tokens > 0)
        text_add(t, "\n# admission reserves a request's KV for its prompt and max_tokens %lld: send max_tokens <= %lld",
                 (long long)p->max_tokens, (long long)p->max_tokens);
    text_add(t, "\n# targets: ");
    if (p->ttft_target_s > 0)
        text_add(t, "TTFT <= %.0f ms", p->ttft_target_s * 1e3);
    if (p->tpot_target_s > 0)
        text_add(t, "%sTPOT <= %.1f ms", p->ttft_target_s > 0 ? ", " : "", p->tpot_target_s * 1e3);
    if (p->ttft_target_s <= 0 && p->tpot_target_s <= 0)
        text_add(t, "none");
    text_add(t, "\n# predicted (%s): TTFT %.1f ms, TPOT %.2f ms, %.0f output tokens/s per device, %.0f in all\n",
             p->bound ? "roofline bound" : "calibrated estimate", p->ttft_s * 1e3, p->tpot_s * 1e3,
             p->tokens_per_s_per_device, p->tokens_per_s);
    for (int i = 0; i < p->role_count; i++) {
        const struct emit_role *x = &p->roles[i];
        text_add(t, "# %s: %lld x %lld devices, TP %lld x DP %lld x PP %lld, EP %lld, %s %lld%s\n",
                 role_name(x->kind), (long long)x->instances, (long long)x->devices, (long long)x->tp,
                 (long long)x->dp, (long long)x->pp, (long long)x->ep,
                 x->kind == EMIT_PREFILL ? "prompts a batch" : "batch", (long long)x->batch,
                 x == r ? " (this file)" : "");
        if (x->running_cap > x->batch)
            text_add(t, "#   admits up to %lld sequences an instance: what its KV holds, as the analysis of random "
                        "arrivals takes it\n",
                     (long long)x->running_cap);
        text_add(t, "#   a device: weights %.2f GB, KV %.2f GB, activations %.2f GB of %.2f GB HBM\n",
                 x->weights_bytes / 1e9, x->kv_bytes / 1e9, x->activation_bytes / 1e9, x->hbm_bytes / 1e9);
    }
    text_add(t, "# flags checked against: %s\n", dynamo ? trtllm_dynamo_version : engine_versions[engine]);
}

static void shell_command(struct text *t, const struct args *a)
{
    text_add(t, "exec %s", a->program);
    for (int i = 0; i < a->count; i++) {
        text_add(t, " \\\n  %s", a->flag[i]);
        if (a->value[i][0])
            text_add(t, a->shell[i] ? " \"%s\"" : " '%s'", a->value[i]);
        if (a->value2[i][0])
            text_add(t, " '%s'", a->value2[i]);
    }
    text_add(t, "\n");
}

/* ---- refusals ---- */

static bool family_is(const char *family, const char *name)
{
    return strstr(family, name) != NULL;
}

static bool blackwell_or_later(const char *family)
{
    return family_is(family, "Blackwell") || family_is(family, "Rubin");
}

/* The topology and family a role runs on: its own (--prefill-topology), else the plan's. */
static const char *role_topology(const struct emit_plan *p, const struct emit_role *r)
{
    return r->topology_name ? r->topology_name : p->topology_name;
}

static const char *role_family(const struct emit_plan *p, const struct emit_role *r)
{
    return r && r->family ? r->family : p->family;
}

static bool refuse(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return true;
}

/* The MoE role runs expert parallelism wider than 8 on GB200 NVL72: the case TensorRT-LLM's
 * DeepSeek-R1 guides give a MoE backend of its own ("GB200 NVL72 EP>8" in their MoE backend
 * support matrix), the default CUTLASS not among them (see trtllm_wide_ep_backend and
 * trtllm_dynamo_wide_ep_backend). */
static bool wide_ep(const struct emit_plan *p, const struct emit_role *r)
{
    const char *topology = role_topology(p, r);
    return p->moe && r->ep > 8 && topology && strcmp(topology, "GB200 NVL72") == 0;
}

/* The moe_config.backend of MXFP4 experts in TensorRT-LLM 1.3.0rc25: its gpt-oss deployment
 * guide's "MoE Backend Support Matrix" lists "B200/GB200/B300/GB300 | MXFP8 | MXFP4 | TRTLLM" and
 * "H200 | BF16 | MXFP4 | TRITON" ("For Blackwell, the default MoE backend is TRTLLM. For Hopper,
 * the default MoE backend is TRITON"), and its curated YAMLs write the backend out. NULL: another
 * family, which it does not list. */
static const char *trtllm_dynamo_mxfp4_backend(const struct emit_plan *p, const struct emit_role *r)
{
    const char *family = role_family(p, r);
    return family_is(family, "Blackwell") ? "TRTLLM" : family_is(family, "Hopper") ? "TRITON" : NULL;
}

/* The moe_config.backend of a wide-EP role (wide_ep) in TensorRT-LLM 1.3.0rc25, by the routed
 * experts' weights: its DeepSeek-R1 deployment guide's "MoE Backend Support Matrix" lists for
 * "GB200 NVL72 EP>8" CUTEDSL with an NVFP4 checkpoint and DEEPGEMM with FP8, and no other row
 * there; MXFP4 experts take the gpt-oss guide's (trtllm_dynamo_mxfp4_backend), which no EP bounds.
 * NULL: the guides list none for the precision. */
static const char *trtllm_dynamo_wide_ep_backend(const struct emit_plan *p, const struct emit_role *r)
{
    if (p->mxfp4_experts)
        return trtllm_dynamo_mxfp4_backend(p, r);
    return p->expert_weights == PREC_FP4 ? "CUTEDSL" : p->expert_weights == PREC_FP8 ? "DEEPGEMM" : NULL;
}

/* The moe_config.backend of a wide-EP role (wide_ep) in TensorRT-LLM 1.0.0: its DeepSeek-R1
 * deployment guide (1.2.0rc2.post2, "MoE Backend Support Matrix") lists on GB200 NVL72 with EP > 8
 * only WIDEEP (NVFP4; FP8 "WIDEEP without EPLB"), the default being CUTLASS; 1.0.0's
 * MoeConfig.backend Literal has WIDEEP (the option list quotes it); no load balancer is written.
 * NULL (the default, CUTLASS) for MXFP4 experts: WideEPMoE takes NVFP4, FP8 (block scales or per
 * tensor), INT4 weights per group or none, and raises "unsupported quantization mode" for any
 * other (tensorrt_llm/_torch/modules/fused_moe/fused_moe_wide_ep.py, _check_configs, at commit
 * 01303b38 of July 2025 and alike at a later one), and the gpt-oss quick-start recipe of that time
 * lists "B200/GB200 | MXFP8 | MXFP4 | CUTLASS | Max Throughput", CUTLASS being the default. */
static const char *trtllm_wide_ep_backend(const struct emit_plan *p)
{
    return p->mxfp4_experts ? NULL : "WIDEEP";
}

/* A role on B200 or GB200 whose routed experts are FP8 at EP <= 8: TensorRT-LLM 1.3.0rc25's
 * DeepSeek-R1 guide's matrix row "B200/GB200 EP<=8 | FP8 | DEEPGEMM", CUTLASS, the default, not
 * among them ("for the combination which is not supported by CUTLASS, one must set the
 * moe_config.backend explicitly to run the model"). */
static bool blackwell_fp8_experts(const struct emit_plan *p, const struct emit_role *r)
{
    const char *topology = role_topology(p, r);
    return p->moe && p->expert_weights == PREC_FP8 && !wide_ep(p, r) && topology &&
           (strcmp(topology, "HGX B200") == 0 || strcmp(topology, "GB200 NVL72") == 0);
}

/* `dynamo`: the engine runs inside a Dynamo deployment, on the TensorRT-LLM of Dynamo's image
 * (1.3.0rc25) rather than 1.0.0 */
static bool refused(enum emit_engine e, bool dynamo, const struct emit_plan *p, char *why, size_t size)
{
    const char *name = e == EMIT_SGLANG ? "SGLang" : e == EMIT_VLLM ? "vLLM" : "TensorRT-LLM";
    /* every role's hardware: the plan's, and a prefill pool's own under --prefill-topology */
    for (int i = -1; i < p->role_count; i++) {
        const char *family = role_family(p, i < 0 ? NULL : &p->roles[i]);
        if (family_is(family, "TPU") || family_is(family, "Trainium"))
            return refuse(why, size,
                          "%s: %s's flags are for GPUs (CUDA%s); %s %s runs through a separate plugin whose "
                          "options were not checked",
                          engine_names[e], name, e == EMIT_TRTLLM ? " only" : ", ROCm", family,
                          e == EMIT_VLLM ? "in vLLM" : "has no backend here");
        if (e == EMIT_TRTLLM && family_is(family, "CDNA"))
            return refuse(why, size, "trtllm: TensorRT-LLM runs on NVIDIA GPUs only, not %s (AMD)", family);
    }
    if (p->kv == PREC_FP16 || p->kv == PREC_FP32)
        return refuse(why, size, "%s: a %s KV cache is not among %s's KV dtypes here (bf16, fp8%s); plan with --kv bf16 "
                      "or fp8",
                      engine_names[e], precision_name(p->kv), name, e == EMIT_SGLANG ? ", fp4 on Blackwell" : "");
    if (p->kv == PREC_FP4 && e == EMIT_VLLM)
        return refuse(why, size, "vllm: vLLM's --kv-cache-dtype has no FP4 (auto, bfloat16, fp8 and its variants); "
                      "plan with --kv fp8");
    if (p->kv == PREC_FP4 && e == EMIT_TRTLLM && !dynamo)
        return refuse(why, size, "trtllm: TensorRT-LLM 1.0.0's kv_cache_config.dtype maps only auto and fp8 to a KV "
                      "quantisation (any other value is warned about, not applied); plan with --kv fp8");
    /* 1.3.0rc25: trtllm-serve's --kv_cache_dtype flag lists nvfp4, but no page writes it as a
     * kv_cache_config.dtype value (trtllm-1.3.0rc25.txt) */
    if (p->kv == PREC_FP4 && e == EMIT_TRTLLM)
        return refuse(why, size, "trtllm: TensorRT-LLM 1.3.0rc25's documentation writes kv_cache_config.dtype auto and "
                      "fp8 only (its nvfp4 is a trtllm-serve flag's value, not shown in the YAML); plan with --kv fp8");
    for (int i = -1; p->kv == PREC_FP4 && i < p->role_count; i++) {
        const char *family = role_family(p, i < 0 ? NULL : &p->roles[i]);
        if (!blackwell_or_later(family))
            return refuse(why, size, "%s: an FP4 KV cache needs Blackwell or later in %s, not %s", engine_names[e],
                          name, family);
    }
    if (p->mtp > 0 && p->mtp_layers == 0)
        return refuse(why, size,
                      "%s: --mtp %lld was planned but %s ships no MTP layers: %s's EAGLE would need a draft "
                      "model rackplan did not plan",
                      engine_names[e], (long long)p->mtp, p->model_name, name);
    if (e != EMIT_SGLANG) {
        int64_t host = emit_host_devices(p->domain_devices);
        for (int i = 0; i < p->role_count; i++) {
            const struct emit_role *r = &p->roles[i];
            if (r->tp * r->pp > host)
                return refuse(why, size,
                              "%s: the %s instance's TP %lld x PP %lld spans %lld hosts of %lld GPUs; %s does "
                              "that only under a Ray or MPI launcher these files do not write (SGLang's "
                              "--nnodes does: --emit sglang)",
                              engine_names[e], role_name(r->kind), (long long)r->tp, (long long)r->pp,
                              (long long)ceil_div(r->tp * r->pp, host), (long long)host, name);
        }
    }
    /* a wide-EP role needs the backend 1.3.0rc25's matrix names: without one (CUTLASS, the
     * default, is not listed there) the file would not run for a reason known here */
    for (int i = 0; e == EMIT_TRTLLM && dynamo && i < p->role_count; i++) {
        const struct emit_role *r = &p->roles[i];
        if (!wide_ep(p, r) || trtllm_dynamo_wide_ep_backend(p, r))
            continue;
        if (p->mxfp4_experts)
            return refuse(why, size,
                          "trtllm: the %s role's MXFP4 experts on %s: TensorRT-LLM 1.3.0rc25's gpt-oss guide lists "
                          "a MoE backend for them on Blackwell (TRTLLM) and Hopper (TRITON) only",
                          role_name(r->kind), role_family(p, r));
        return refuse(why, size,
                      "trtllm: the %s role's EP %lld on GB200 NVL72 needs a moe_config.backend, and TensorRT-LLM "
                      "1.3.0rc25's DeepSeek-R1 guide lists one there for NVFP4 (CUTEDSL) and FP8 (DEEPGEMM) "
                      "experts only, not %s; plan with --weights fp8 or fp4",
                      role_name(r->kind), (long long)r->ep, precision_name(p->expert_weights));
    }
    return false;
}

/* ---- SGLang ---- */

static const char *sglang_kv(enum precision kv)
{
    return kv == PREC_FP8 ? "fp8_e4m3" : kv == PREC_FP4 ? "fp4_e2m1" : "bf16";
}

static int role_port(const struct emit_role *r)
{
    return r->kind == EMIT_DECODE ? 30001 : 30000;
}

static void sglang_args(const struct emit_plan *p, const struct emit_role *r, bool dynamo, struct args *a)
{
    bool dp_attention = p->moe && r->dp > 1;
    int64_t rank_batch = ceil_div(r->batch, r->dp);
    int64_t host = emit_host_devices(p->domain_devices);
    arg(a, "--model-path", "%s", p->model_path);
    if (!dynamo) {
        arg(a, "--host", "0.0.0.0");
        arg(a, "--port", "%d", role_port(r));
    }
    arg(a, "--tp-size", "%lld", (long long)(dp_attention ? r->tp * r->dp : r->tp));
    if (r->dp > 1)
        arg(a, "--dp-size", "%lld", (long long)r->dp);
    if (dp_attention)
        arg(a, "--enable-dp-attention", NULL);
    if (r->pp > 1)
        arg(a, "--pp-size", "%lld", (long long)r->pp);
    if (p->moe && r->ep > 1) {
        arg(a, "--ep-size", "%lld", (long long)r->ep);
        arg(a, "--moe-a2a-backend", "%s", family_is(role_family(p, r), "CDNA") ? "mori" : "deepep");
        arg(a, "--deepep-mode", "%s",
            r->kind == EMIT_PREFILL ? "normal" : r->kind == EMIT_DECODE ? "low_latency" : "auto");
        if (r->slots > 0 && p->expert_map) {
            arg(a, "--ep-num-redundant-experts", "%lld", (long long)(r->slots * r->ep - p->experts));
            arg(a, "--init-expert-location", "%s", p->expert_map);
        }
    }
    if (r->kind != EMIT_PREFILL) {
        arg(a, "--max-running-requests", "%lld", (long long)r->running_cap);
        arg(a, "--cuda-graph-max-bs", "%lld", (long long)rank_batch);
    }
    if (r->kind != EMIT_DECODE)
        arg(a, "--chunked-prefill-size", "%lld", (long long)(r->chunk_tokens * r->dp));
    arg(a, "--kv-cache-dtype", "%s", sglang_kv(p->kv));
    arg(a, "--mem-fraction-static", "%.3f", fraction_up((r->weights_bytes + r->kv_bytes) / r->hbm_bytes));
    if (r->kind != EMIT_AGGREGATED) {
        arg(a, "--disaggregation-mode", "%s", role_name(r->kind));
        arg(a, "--disaggregation-transfer-backend", "mooncake");
    }
    if (p->mtp > 0) {
        arg(a, "--speculative-algorithm", "EAGLE");
        arg(a, "--speculative-num-steps", "%lld", (long long)p->mtp);
        arg(a, "--speculative-eagle-topk", "1");
        arg(a, "--speculative-num-draft-tokens", "%lld", (long long)(p->mtp + 1));
    }
    /* Under Dynamo the operator adds these itself to every multinode SGLang worker
     * (deploy/operator/internal/dynamo/backend_sglang.go at 7caca066, getMultinodeFlags: the
     * leader's address at port 29500, multinode.nodeCount, the pod's rank), after the args
     * written here: a second copy would only be overridden */
    if (r->devices > host && !dynamo) {
        arg(a, "--nnodes", "%lld", (long long)ceil_div(r->devices, host));
        arg_shell(a, "--node-rank", "${NODE_RANK:?set NODE_RANK to this host's rank}");
        arg_shell(a, "--dist-init-addr", "${DIST_INIT_ADDR:?set DIST_INIT_ADDR to host 0's address:port}");
    }
}

/* ---- vLLM ---- */

static int64_t batched_tokens(const struct emit_plan *p, const struct emit_role *r)
{
    if (r->kind == EMIT_PREFILL)
        return r->chunk_tokens; /* V1 chunks the prompt that passes it, as its default */
    int64_t tokens = ceil_div(r->running_cap, r->dp) * (1 + p->mtp);
    return tokens + (r->kind == EMIT_AGGREGATED ? r->chunk_tokens : 0);
}

static void vllm_args(const struct emit_plan *p, const struct emit_role *r, bool dynamo, struct args *a)
{
    int64_t host = emit_host_devices(p->domain_devices);
    if (dynamo)
        arg(a, "--model", "%s", p->model_path);
    else
        arg(a, "--port", "%d", role_port(r) - 30000 + 8100);
    arg(a, "--tensor-parallel-size", "%lld", (long long)r->tp);
    if (r->pp > 1)
        arg(a, "--pipeline-parallel-size", "%lld", (long long)r->pp);
    if (r->dp > 1)
        arg(a, "--data-parallel-size", "%lld", (long long)r->dp);
    /* Under Dynamo the operator launches a DP instance wider than its container's GPUs itself
     * (deploy/operator/internal/dynamo/backend_vllm.go at 18bda510, injectDataParallelLaunchFlags):
     * it appends --data-parallel-hybrid-lb, --data-parallel-size-local (the container's GPUs over
     * TP x PP), --data-parallel-start-rank (0, or local x the pod's rank), --data-parallel-address
     * (the leader's host) and --data-parallel-rpc-port, and skips only --data-parallel-size when
     * present; so the Dynamo worker passes --data-parallel-size alone */
    if (r->devices > host && r->dp > 1 && !dynamo) {
        arg(a, "--data-parallel-size-local", "%lld", (long long)(host / (r->tp * r->pp)));
        arg_shell(a, "--data-parallel-address", "${DP_ADDRESS:?set DP_ADDRESS to host 0's address}");
        arg_shell(a, "--data-parallel-start-rank", "${DP_START_RANK:?set DP_START_RANK to this host's first DP rank}");
    }
    if (p->moe && r->ep > 1) {
        arg(a, "--enable-expert-parallel", NULL);
        if (!family_is(role_family(p, r), "CDNA") && r->kind != EMIT_AGGREGATED)
            arg(a, "--all2all-backend", "%s",
                r->kind == EMIT_PREFILL ? "deepep_high_throughput" : "deepep_low_latency");
    }
    arg(a, "--max-num-seqs", "%lld", (long long)ceil_div(r->running_cap, r->dp));
    arg(a, "--max-num-batched-tokens", "%lld", (long long)batched_tokens(p, r));
    arg(a, "--kv-cache-dtype", "%s", p->kv == PREC_FP8 ? "fp8" : "auto");
    arg(a, "--gpu-memory-utilization", "%.3f",
        fraction_up((r->weights_bytes + r->kv_bytes + r->activation_bytes) / r->hbm_bytes));
    if (p->mtp > 0)
        arg(a, "--speculative-config", "{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":%lld}",
            (long long)p->mtp);
    if (r->kind != EMIT_AGGREGATED && !dynamo)
        arg(a, "--kv-transfer-config", "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}");
    /* Dynamo's vLLM worker (backend_args.py at d195d280): --disaggregation-mode agg | prefill |
     * decode; --is-prefill-worker and --is-decode-worker are deprecated there */
    if (dynamo && r->kind != EMIT_AGGREGATED)
        arg(a, "--disaggregation-mode", "%s", role_name(r->kind));
}

/* ---- TensorRT-LLM ---- */

static void put_int(struct doc_node *map, const char *key, int64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)v);
    doc_map_put(map, key, doc_new_scalar(s, false));
}

static void put_number(struct doc_node *map, const char *key, double v)
{
    char s[32];
    snprintf(s, sizeof s, "%.3f", v);
    doc_map_put(map, key, doc_new_scalar(s, false));
}

static void put_string(struct doc_node *map, const char *key, const char *v)
{
    doc_map_put(map, key, doc_new_scalar(v, true));
}

static void put_bool(struct doc_node *map, const char *key, bool v)
{
    doc_map_put(map, key, doc_new_scalar(v ? "true" : "false", false));
}

/* The role's LLM-API YAML. Standalone (trtllm-serve's --extra_llm_api_options): keys of
 * TensorRT-LLM 1.0.0 (tests/data/engine-options/trtllm-1.0.0.txt); every nested config is a
 * StrictBaseModel there (extra "forbid"), so a key 1.0.0 lacks fails the server at start-up and only
 * listed keys are written. `dynamo` (Dynamo's worker, --extra-engine-args): the TensorRT-LLM 1.3.0rc25
 * its image carries, each key as that version's pages write it (trtllm-1.3.0rc25.txt); where they
 * differ from 1.0.0 the comments below say so. refused() has turned away what neither can carry. */
static struct doc_node *trtllm_options(const struct emit_plan *p, const struct emit_role *r, bool dynamo)
{
    bool attention_dp = p->moe && r->dp > 1;
    int64_t rank_batch = ceil_div(r->batch, r->dp);
    /* a context server's budget stays a rank's whole: 1.0.0 refuses a prompt past max_num_tokens
     * unless enable_chunked_prefill (off by default; emit.h) */
    int64_t num_tokens = r->kind == EMIT_PREFILL ? SERVE_PREFILL_TOKENS_PER_RANK : batched_tokens(p, r);
    struct doc_node *root = doc_new_map();
    /* no `backend` key: deprecated in 1.0.0's BaseLlmArgs, trtllm-serve's --backend sets it */
    put_int(root, "tensor_parallel_size", attention_dp ? r->tp * r->dp : r->tp);
    /* 1.3.0rc25's YAMLs never write pipeline_parallel_size (its pages name it only as an LLM()
     * argument and trtllm-serve's --pipeline_parallel_size), so it is written only when PP needs it */
    if (!dynamo || r->pp > 1)
        put_int(root, "pipeline_parallel_size", r->pp);
    if (p->moe)
        put_int(root, "moe_expert_parallel_size", r->ep);
    put_bool(root, "enable_attention_dp", attention_dp);
    put_int(root, "max_batch_size", ceil_div(r->running_cap, r->dp));
    put_int(root, "max_num_tokens", num_tokens);
    /* the KV dtype is KvCacheConfig.dtype (1.0.0: the PyTorch backend's; auto = the model's; the
     * 1.3.0rc25 DeepSeek-R1 guide writes "dtype: fp8", its default "auto") */
    struct doc_node *kv = doc_map_put(root, "kv_cache_config", doc_new_map());
    put_string(kv, "dtype", p->kv == PREC_FP8 ? "fp8" : "auto");
    double left = r->hbm_bytes - r->weights_bytes - r->activation_bytes;
    put_number(kv, "free_gpu_memory_fraction", fraction_up(left > 0 ? r->kv_bytes / left : 1));
    /* a wide-EP role's backend; Dynamo's: refused() turned away a precision without one */
    const char *wide_backend = !wide_ep(p, r) ? NULL
                               : dynamo       ? trtllm_dynamo_wide_ep_backend(p, r)
                                              : trtllm_wide_ep_backend(p);
    if (wide_backend) {
        put_string(doc_map_put(root, "moe_config", doc_new_map()), "backend", wide_backend);
    } else if (dynamo && blackwell_fp8_experts(p, r)) {
        put_string(doc_map_put(root, "moe_config", doc_new_map()), "backend", "DEEPGEMM");
    } else if (dynamo && p->moe && p->mxfp4_experts && trtllm_dynamo_mxfp4_backend(p, r)) {
        put_string(doc_map_put(root, "moe_config", doc_new_map()), "backend", trtllm_dynamo_mxfp4_backend(p, r));
    }
    if (r->kind != EMIT_PREFILL) {
        /* CUDA graphs through cuda_graph_config (1.0.0: the flat use_cuda_graph / cuda_graph_*
         * keys are gone; 1.3.0rc25's guides write enable_padding and max_batch_size there);
         * padding rounds a batch up to a captured size, so every batch up to B_r runs a graph.
         * A prefill server's batches are not decode-only, which graphs need. */
        struct doc_node *graphs = doc_map_put(root, "cuda_graph_config", doc_new_map());
        put_bool(graphs, "enable_padding", true);
        put_int(graphs, "max_batch_size", rank_batch);
    }
    if (p->mtp > 0) {
        /* the draft length: 1.0.0's MTPDecodingConfig.num_nextn_predict_layers; 1.3.0rc25's
         * DeepSeek-R1 guide writes "decoding_type: MTP / max_draft_len: 1" */
        struct doc_node *spec = doc_map_put(root, "speculative_config", doc_new_map());
        put_string(spec, "decoding_type", "MTP");
        put_int(spec, dynamo ? "max_draft_len" : "num_nextn_predict_layers", p->mtp);
    }
    if (r->kind != EMIT_AGGREGATED) {
        /* P/D: a cache transceiver on both sides. Standalone: its buffer fits a prompt's tokens and
         * a step's; backend is left unset: None is valid at 1.0.0 (Literal DEFAULT | UCX | NIXL |
         * MPI) and selects the engine's default, UCX by 1.0.0's disaggregated-serving guide; the plan
         * has no reason to pick another, and the Literal's spelling differs across releases.
         * Dynamo: no 1.3.0rc25 page writes max_tokens_in_buffer or the backend key, so the buffer
         * is the engine's default and the backend what Dynamo's 1.5.0-era TRT-LLM templates write
         * for these workers, DEFAULT (prefill.yaml and decode.yaml of disagg-multinode.yaml) */
        struct doc_node *cache = doc_map_put(root, "cache_transceiver_config", doc_new_map());
        if (dynamo)
            put_string(cache, "backend", "DEFAULT");
        else
            put_int(cache, "max_tokens_in_buffer", p->isl > num_tokens ? p->isl : num_tokens);
        /* the context server runs without the overlap scheduler, as TensorRT-LLM's disaggregated
         * examples configure it (not supported there in disaggregated context servers; Dynamo's
         * template: "Overlap scheduler not currently supported in prefill only workers"; the key
         * 1.3.0rc25's overlap-scheduler page names, "set disable_overlap_scheduler=True") */
        if (r->kind == EMIT_PREFILL)
            put_bool(root, "disable_overlap_scheduler", true);
    }
    if (r->kind != EMIT_PREFILL && p->max_tokens == 0) {
        /* the plan admits a request while the KV can grow to its own length; the default capacity
         * scheduler, GUARANTEED_NO_EVICT, reserves prompt + max_tokens for each (a request without
         * max_tokens: the rest of max_seq_len), far fewer sequences than planned. MAX_UTILIZATION
         * admits by what the KV holds now and pauses a request when it runs out, the nearer of
         * the two (1.0.0: SchedulerConfig.capacity_scheduler_policy, status "prototype"; 1.3.0rc25's
         * runtime-options page passes the same to LLM()); serve --max-tokens plans for the
         * default instead */
        struct doc_node *scheduler = doc_map_put(root, "scheduler_config", doc_new_map());
        put_string(scheduler, "capacity_scheduler_policy", "MAX_UTILIZATION");
    }
    return root;
}

/* ---- files ---- */

static void add_file(struct emit_output *out, const char *name, enum emit_engine e, const char *role, char *text)
{
    assert(out->count < EMIT_MAX_FILES);
    snprintf(out->files[out->count].name, sizeof out->files[0].name, "%s", name);
    out->files[out->count].engine = engine_names[e];
    out->files[out->count].role = role;
    out->files[out->count].text = text;
    out->count++;
}

static void add_script(struct emit_output *out, enum emit_engine e, const struct emit_plan *p,
                       const struct emit_role *r, const char *name, const struct args *a)
{
    struct text t = {0};
    text_add(&t, "#!/bin/sh\n");
    comment_header(&t, e, p, r, false);
    if (r && r->instances > 1)
        text_add(&t, "# run %lld instances of this, each on its own %lld devices\n", (long long)r->instances,
                 (long long)r->devices);
    shell_command(&t, a);
    add_file(out, name, e, r ? role_name(r->kind) : "router", t.data);
}

/* `root` written as YAML under the file's comment header (`dynamo`: a role's file inside a
 * Dynamo deployment, comment_header; and `note`, a comment line, when not NULL), as the file
 * `name`; `root` is freed. */
static bool add_yaml(struct emit_output *out, enum emit_engine e, const struct emit_plan *p,
                     const struct emit_role *r, bool dynamo, const char *note, const char *name,
                     struct doc_node *root)
{
    struct text t = {0};
    comment_header(&t, e, p, r, dynamo);
    if (note)
        text_add(&t, "%s", note);
    char *yaml = doc_emit_yaml(root, t.data);
    free(t.data);
    doc_node_free(root);
    if (!yaml)
        return false;
    add_file(out, name, e, e == EMIT_DYNAMO ? "deployment" : r ? role_name(r->kind) : "router", yaml);
    return true;
}

static void router_script(struct emit_output *out, enum emit_engine e, const struct emit_plan *p)
{
    struct args a = {.program = "python3 -m sglang_router.launch_router"};
    arg(&a, "--pd-disaggregation", NULL);
    for (int i = 0; i < p->roles[0].instances && i < 16; i++) {
        arg(&a, "--prefill", "http://${PREFILL_%d:?set PREFILL_%d to prefill instance %d's head host}:30000", i, i, i);
        a.shell[a.count - 1] = true;
        snprintf(a.value2[a.count - 1], sizeof a.value2[0], "%d", SGLANG_BOOTSTRAP_PORT);
    }
    for (int i = 0; i < p->roles[1].instances && i < 16; i++) {
        arg(&a, "--decode", "http://${DECODE_%d:?set DECODE_%d to decode instance %d's head host}:30001", i, i, i);
        a.shell[a.count - 1] = true;
    }
    arg(&a, "--host", "0.0.0.0");
    arg(&a, "--port", "8000");
    struct text t = {0};
    text_add(&t, "#!/bin/sh\n");
    comment_header(&t, e, p, NULL, false);
    text_add(&t, "# router flags checked against: %s\n", router_version);
    text_add(&t, "# one --prefill (with its bootstrap port, SGLang's default %d) and one --decode URL an instance:\n"
                 "# set each to its instance's head host\n",
             SGLANG_BOOTSTRAP_PORT);
    shell_command(&t, &a);
    add_file(out, "sglang-router.sh", e, "router", t.data);
}

static enum emit_status build_engine(enum emit_engine e, const struct emit_plan *p, struct emit_output *out)
{
    char name[64];
    for (int i = 0; i < p->role_count; i++) {
        const struct emit_role *r = &p->roles[i];
        struct args a = {0};
        char program[600];
        switch (e) {
        case EMIT_SGLANG:
            a.program = "python3 -m sglang.launch_server";
            sglang_args(p, r, false, &a);
            snprintf(name, sizeof name, "sglang-%s.sh", role_name(r->kind));
            add_script(out, e, p, r, name, &a);
            break;
        case EMIT_VLLM:
            snprintf(program, sizeof program, "vllm serve '%s'", p->model_path);
            a.program = program;
            vllm_args(p, r, false, &a);
            snprintf(name, sizeof name, "vllm-%s.sh", role_name(r->kind));
            add_script(out, e, p, r, name, &a);
            break;
        case EMIT_TRTLLM: {
            char options[64];
            trtllm_role_file(r, options, sizeof options);
            if (!add_yaml(out, e, p, r, false, NULL, options, trtllm_options(p, r, false)))
                return EMIT_FAILED;
            snprintf(program, sizeof program, "trtllm-serve '%s'", p->model_path);
            a.program = program;
            arg(&a, "--host", "0.0.0.0");
            arg(&a, "--port", "%d", role_port(r) - 30000 + 8100);
            arg(&a, "--backend", "pytorch");
            arg_shell(&a, "--extra_llm_api_options", "$(dirname \"$0\")/");
            snprintf(a.value[a.count - 1], sizeof a.value[0], "$(dirname \"$0\")/%s", options);
            snprintf(name, sizeof name, "trtllm-%s.sh", role_name(r->kind));
            add_script(out, e, p, r, name, &a);
            break;
        }
        default:
            return EMIT_FAILED;
        }
    }
    if (p->role_count == 2 && e == EMIT_SGLANG)
        router_script(out, e, p);
    if (p->role_count == 2 && e == EMIT_TRTLLM) {
        struct doc_node *root = doc_new_map();
        put_string(root, "hostname", "0.0.0.0");
        put_int(root, "port", 8000);
        put_string(root, "backend", "pytorch");
        const char *keys[2] = {"context_servers", "generation_servers"};
        for (int i = 0; i < 2; i++) {
            struct doc_node *servers = doc_map_put(root, keys[i], doc_new_map());
            put_int(servers, "num_instances", p->roles[i].instances);
            struct doc_node *urls = doc_map_put(servers, "urls", doc_new_seq());
            for (int64_t k = 0; k < p->roles[i].instances; k++) {
                char url[64];
                snprintf(url, sizeof url, "%s-%lld:%d", role_name(p->roles[i].kind), (long long)k,
                         role_port(&p->roles[i]) - 30000 + 8100);
                doc_seq_push(urls, doc_new_scalar(url, true));
            }
        }
        if (!add_yaml(out, e, p, NULL, false, NULL, "trtllm-disagg.yaml", root))
            return EMIT_FAILED;
        struct args a = {.program = "trtllm-serve disaggregated"};
        arg_shell(&a, "-c", "$(dirname \"$0\")/trtllm-disagg.yaml");
        struct text t = {0};
        text_add(&t, "#!/bin/sh\n");
        comment_header(&t, e, p, NULL, false);
        text_add(&t, "# trtllm-disagg.yaml names each server as ROLE-N:PORT: set them to the instances' hosts\n");
        shell_command(&t, &a);
        add_file(out, "trtllm-router.sh", e, "router", t.data);
    }
    return EMIT_OK;
}

/* where a Dynamo TRT-LLM worker finds its engine YAML (the ConfigMap's mount) */
#define DYNAMO_CONFIG_DIR "/config"

/* Dynamo 1.5.0's runtime images, one a framework, and the engine each carries: the release
 * artifacts page (docs.nvidia.com/dynamo/reference/release-artifacts, v1.5.0 its current release,
 * "Everything pinned to v1.5.0"). SGLang's and vLLM's flags were checked against other versions of
 * them (engine_versions), which each deployment's header says; TensorRT-LLM's role YAMLs are written
 * for the image's own (trtllm_dynamo_version). */
static const char *const dynamo_images[3] = {"nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.5.0",
                                             "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0",
                                             "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.5.0"};
static const char *const dynamo_image_engines[3] = {"SGLang 0.5.18", "vLLM 0.28.0", "TensorRT-LLM 1.3.0rc25"};

/* A component's main container (v1beta1: podTemplate.spec.containers[name: main]; the operator
 * merges its defaults into the container of that name); returns the container. */
static struct doc_node *dynamo_main_container(struct doc_node *component, const char *image,
                                              struct doc_node **pod_spec)
{
    struct doc_node *spec = doc_map_put(doc_map_put(component, "podTemplate", doc_new_map()), "spec", doc_new_map());
    struct doc_node *main = doc_seq_push(doc_map_put(spec, "containers", doc_new_seq()), doc_new_map());
    put_string(main, "name", "main");
    put_string(main, "image", image);
    if (pod_spec)
        *pod_spec = spec;
    return main;
}

static enum emit_status build_dynamo(enum emit_engine inner, const struct emit_plan *p, struct emit_output *out)
{
    static const char *const frameworks[3] = {"sglang", "vllm", "trtllm"};
    static const char *const workers[3] = {"Sglang", "Vllm", "Trtllm"};
    int64_t host = emit_host_devices(p->domain_devices);
    struct doc_node *root = doc_new_map();
    put_string(root, "apiVersion", "nvidia.com/v1beta1");
    put_string(root, "kind", "DynamoGraphDeployment");
    struct doc_node *meta = doc_map_put(root, "metadata", doc_new_map());
    char name[64];
    snprintf(name, sizeof name, "rackplan-%s-%s", frameworks[inner], p->role_count == 2 ? "disagg" : "agg");
    put_string(meta, "name", name);
    char config_map[80];
    snprintf(config_map, sizeof config_map, "%s-engine-config", name);
    struct doc_node *spec = doc_map_put(root, "spec", doc_new_map());
    put_string(spec, "backendFramework", frameworks[inner]);
    struct doc_node *components = doc_map_put(spec, "components", doc_new_seq());
    /* The frontend runs on the backend's runtime image, as Dynamo's v1beta1 templates of the 1.5.0
     * era do (recipes/kubernetes-templates/dgd/tensor-rt-llm: Frontend on tensorrtllm-runtime);
     * with no command: the operator's frontend default is `python3` `-m dynamo.frontend`
     * (component_frontend.go), and a command written here would run beside those args. */
    struct doc_node *frontend = doc_seq_push(components, doc_new_map());
    put_string(frontend, "name", "Frontend");
    put_string(frontend, "type", "frontend");
    put_int(frontend, "replicas", 1);
    dynamo_main_container(frontend, dynamo_images[inner], NULL);
    bool multinode = false;
    for (int i = 0; i < p->role_count; i++) {
        const struct emit_role *r = &p->roles[i];
        char service[64];
        snprintf(service, sizeof service, "%s%sWorker", workers[inner],
                 r->kind == EMIT_PREFILL ? "Prefill" : r->kind == EMIT_DECODE ? "Decode" : "");
        struct doc_node *w = doc_seq_push(components, doc_new_map());
        put_string(w, "name", service);
        /* v1beta1's component type names the role itself (prefill and decode are first-class) */
        put_string(w, "type", r->kind == EMIT_AGGREGATED ? "worker" : role_name(r->kind));
        put_int(w, "replicas", r->instances);
        if (r->devices > host) {
            put_int(doc_map_put(w, "multinode", doc_new_map()), "nodeCount", ceil_div(r->devices, host));
            multinode = true;
        }
        struct doc_node *pod_spec;
        struct doc_node *main = dynamo_main_container(w, dynamo_images[inner], &pod_spec);
        struct doc_node *cmd = doc_map_put(main, "command", doc_new_seq());
        char module[32];
        snprintf(module, sizeof module, "dynamo.%s", frameworks[inner]);
        doc_seq_push(cmd, doc_new_scalar("python3", true));
        doc_seq_push(cmd, doc_new_scalar("-m", true));
        doc_seq_push(cmd, doc_new_scalar(module, true));
        struct args a = {0};
        if (inner == EMIT_SGLANG)
            sglang_args(p, r, true, &a);
        else if (inner == EMIT_VLLM)
            vllm_args(p, r, true, &a);
        else {
            /* Dynamo's TRT-LLM worker (backend_args.py at b6c87336): --model-path (its
             * obsolete_flag for --model; the 1.5.0-era templates pass --model-path, so that is
             * written), --extra-engine-args, --disaggregation-mode prefill | decode
             * (prefill_and_decode, the default, for aggregated) */
            arg(&a, "--model-path", "%s", p->model_path);
            char role_file[64];
            trtllm_role_file(r, role_file, sizeof role_file);
            arg(&a, "--extra-engine-args", "%s/%s", DYNAMO_CONFIG_DIR, role_file);
            if (r->kind != EMIT_AGGREGATED)
                arg(&a, "--disaggregation-mode", "%s", role_name(r->kind));
        }
        struct doc_node *args = doc_map_put(main, "args", doc_new_seq());
        for (int k = 0; k < a.count; k++) {
            /* the operator writes the multinode flags, so no value is left for a shell */
            assert(!a.shell[k]);
            doc_seq_push(args, doc_new_scalar(a.flag[k], true));
            if (a.value[k][0])
                doc_seq_push(args, doc_new_scalar(a.value[k], true));
        }
        int64_t gpus = r->devices < host ? r->devices : host;
        char count[32];
        snprintf(count, sizeof count, "%lld", (long long)gpus);
        put_string(doc_map_put(doc_map_put(main, "resources", doc_new_map()), "limits", doc_new_map()),
                   "nvidia.com/gpu", count);
        if (inner == EMIT_TRTLLM) {
            /* the role's engine YAML, written beside the deployment, reaches the pod as a ConfigMap
             * volume mounted into the main container (core/v1 PodSpec.volumes, volumeMounts) */
            struct doc_node *mount = doc_seq_push(doc_map_put(main, "volumeMounts", doc_new_seq()), doc_new_map());
            put_string(mount, "name", "engine-config");
            put_string(mount, "mountPath", DYNAMO_CONFIG_DIR);
            struct doc_node *volume = doc_seq_push(doc_map_put(pod_spec, "volumes", doc_new_seq()), doc_new_map());
            put_string(volume, "name", "engine-config");
            put_string(doc_map_put(volume, "configMap", doc_new_map()), "name", config_map);
        }
    }
    char file[64];
    snprintf(file, sizeof file, "dynamo-%s.yaml", frameworks[inner]);
    static const char *const launchers[3] = {
        "SGLang's --dist-init-addr, --nnodes and --node-rank",
        "vLLM's --data-parallel-size-local,\n# --data-parallel-start-rank, --data-parallel-address, --data-parallel-rpc-port and\n"
        "# --data-parallel-hybrid-lb",
        "its mpirun across the pods"};
    char note[2048];
    /* SGLang's and vLLM's flags were checked against other versions than the images carry, which
     * the file says; TRT-LLM's role YAMLs are written for the image's own 1.3.0rc25 */
    int n = inner == EMIT_TRTLLM
                ? snprintf(note, sizeof note,
                           "# workers run `python3 -m dynamo.%s` on the image %s,\n"
                           "# which carries %s (Dynamo 1.5.0's release artifacts); their engine YAMLs\n"
                           "# are written for that version, each key as its documentation writes it (their headers\n"
                           "# name the pages)\n",
                           frameworks[inner], dynamo_images[inner], dynamo_image_engines[inner])
                : snprintf(note, sizeof note,
                           "# workers run `python3 -m dynamo.%s` with the engine flags checked against %s\n"
                           "# the image %s carries %s (Dynamo 1.5.0's release\n"
                           "# artifacts), not the version above: check the engine flags against the image's\n",
                           frameworks[inner], engine_versions[inner], dynamo_images[inner],
                           dynamo_image_engines[inner]);
    if (multinode)
        n += snprintf(note + n, sizeof note - (size_t)n,
                      "# a multinode worker gets %s from the operator, not from this file\n", launchers[inner]);
    if (inner == EMIT_TRTLLM) {
        n += snprintf(note + n, sizeof note - (size_t)n,
                      "# the workers read their engine YAMLs from the ConfigMap %s:\n"
                      "#   kubectl create configmap %s",
                      config_map, config_map);
        for (int i = 0; i < p->role_count && n < (int)sizeof note; i++) {
            char role_file[64];
            trtllm_role_file(&p->roles[i], role_file, sizeof role_file);
            n += snprintf(note + n, sizeof note - (size_t)n, " --from-file=%s", role_file);
        }
        if (n < (int)sizeof note)
            snprintf(note + n, sizeof note - (size_t)n, "\n");
    }
    if (!add_yaml(out, EMIT_DYNAMO, p, NULL, false, note, file, root))
        return EMIT_FAILED;
    for (int i = 0; inner == EMIT_TRTLLM && i < p->role_count; i++) {
        const struct emit_role *r = &p->roles[i];
        char options[64];
        trtllm_role_file(r, options, sizeof options);
        if (!add_yaml(out, EMIT_TRTLLM, p, r, true,
                      "# Dynamo's TRT-LLM worker reads this as --extra-engine-args\n", options,
                      trtllm_options(p, r, true)))
            return EMIT_FAILED;
    }
    return EMIT_OK;
}

enum emit_status emit_build(enum emit_engine engine, enum emit_engine inner, const struct emit_plan *p,
                            struct emit_output *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    enum emit_engine runs = engine == EMIT_DYNAMO ? inner : engine;
    if (refused(runs, engine == EMIT_DYNAMO, p, why, why_size)) {
        if (engine == EMIT_DYNAMO) {
            char inner_why[512];
            snprintf(inner_why, sizeof inner_why, "%s", why);
            snprintf(why, why_size, "dynamo over %s", inner_why);
        }
        return EMIT_REFUSED;
    }
    enum emit_status s = engine == EMIT_DYNAMO ? build_dynamo(inner, p, out) : build_engine(engine, p, out);
    if (s != EMIT_OK)
        emit_output_release(out);
    return s;
}

/* A role of serve's point: its instance, count and a device's memory at its batch. */
static void role_of_serve(const struct model *m, const struct topology *t, const struct workload *precisions,
                          const struct serve_workload *w, const struct serve_instance *x, int64_t instances,
                          enum emit_role_kind kind, struct emit_role *out)
{
    int64_t cap = x->occupancy.running_cap, admitted = kind != EMIT_PREFILL && cap > x->batch ? cap : x->batch;
    struct workload at = *precisions;
    at.batch = admitted; /* the KV of every sequence it admits */
    at.context = kind == EMIT_PREFILL ? w->isl : serve_held_context(w);
    at.mtp = w->mtp > 0;
    struct device_memory memory;
    plan_memory(m, t, &x->layout, &at, &memory);
    /* a prefill batch's tokens on a DP rank: the plan's batch (its memory and the pool's queue
     * are worked out at it), a prompt that passes it split there */
    int64_t computed = (int64_t)ceil((double)w->isl * (1 - w->prefix_hit));
    int64_t chunk = kind == EMIT_PREFILL ? (x->batch + x->layout.dp - 1) / x->layout.dp * (computed > 0 ? computed : 1)
                    : w->chunk_tokens              ? w->chunk_tokens
                                                   : SERVE_DEFAULT_CHUNK_TOKENS;
    *out = (struct emit_role){.kind = kind, .tp = x->layout.tp, .dp = x->layout.dp, .pp = x->layout.pp,
                              .ep = x->layout.ep, .devices = x->layout.devices, .instances = instances,
                              .batch = x->batch, .running_cap = admitted, .chunk_tokens = chunk,
                              .weights_bytes = memory.weights_bytes, .kv_bytes = memory.kv_bytes,
                              .activation_bytes = memory.activation_bytes, .hbm_bytes = memory.hbm_bytes,
                              .topology_name = t->name, .family = t->family};
}

void emit_plan_of_serve(const struct model *m, const struct topology *topology, const struct topology *prefill_topology,
                        const struct workload *precisions, const struct serve_workload *w, const struct serve_point *p,
                        const char *model_path, bool bound, struct emit_plan *out)
{
    *out = (struct emit_plan){.command = "serve", .model_name = m->name, .model_path = model_path,
                              .topology_name = topology->name, .family = topology->family,
                              .domain_devices = topology->domain_devices, .moe = model_is_moe(m),
                              .experts = model_is_moe(m) ? m->moe.experts : 0, .mtp_layers = m->mtp_layers,
                              .kv = precisions->kv, .expert_weights = precisions->expert_weights,
                              .mxfp4_experts = precisions->expert_weights == PREC_FP4 && m->fp4_mxfp4,
                              .isl = w->isl, .osl = w->osl, .mtp = w->mtp, .max_tokens = w->max_tokens,
                              .mtp_accept = w->mtp_accept, .ttft_target_s = w->ttft_s, .tpot_target_s = w->tpot_s,
                              .ttft_s = p->ttft_s, .tpot_s = p->tpot_s,
                              .tokens_per_s_per_device = p->tokens_per_s_per_device,
                              .tokens_per_s = p->tokens_per_s_per_device * (double)p->devices, .bound = bound};
    if (p->mode == SERVE_DISAGGREGATED) {
        out->role_count = 2;
        role_of_serve(m, prefill_topology ? prefill_topology : topology, precisions, w, &p->prefill,
                      p->prefill_instances, EMIT_PREFILL, &out->roles[0]);
        role_of_serve(m, topology, precisions, w, &p->decode, p->decode_instances, EMIT_DECODE, &out->roles[1]);
    } else {
        out->role_count = 1;
        role_of_serve(m, topology, precisions, w, &p->decode, p->decode_instances, EMIT_AGGREGATED, &out->roles[0]);
    }
}

void emit_output_release(struct emit_output *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->count; i++)
        free(o->files[i].text);
    memset(o, 0, sizeof *o);
}
