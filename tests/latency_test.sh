#!/usr/bin/env bash
# Batch-1 decode steps against published low-latency figures (issue 25): the shipped estimate
# (roofline --estimate, the topology's calibrated rows) within 30% of each, and the bound (the
# latency chain at its floors, efficiency 1) below each. None of these figures is in
# calibration/measurements.yaml: the fit never saw them. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"

# step NAME MEASURED_MS ARGS...: the estimate within 30% of MEASURED_MS, the bound at or below it;
# with TOLERANCE=none only the bound is asserted and the estimate's error printed
step() {
    local name=$1 measured=$2
    shift 2
    "$rackplan" roofline "$@" --batch 1 --estimate --format json >"$work/out.json" 2>"$work/err"
    check "$name: roofline runs" test $? -eq 0
    local what="estimate within 30% of $measured ms, the bound below it"
    [ "${TOLERANCE:-}" = none ] && what="the bound below $measured ms (the estimate printed)"
    check "$name: $what" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
measured = float(sys.argv[2]) / 1e3
estimate, bound = p["step_s"], p["roofline_bound"]["step_s"]
print("# estimate %.2f ms, bound %.2f ms, measured %.2f ms (%+.0f%%)" % (estimate * 1e3, bound * 1e3, measured * 1e3, (estimate / measured - 1) * 100))
within = sys.argv[3] == "none" or abs(estimate / measured - 1) <= 0.30
sys.exit(not (within and bound <= measured))' "$work/out.json" "$measured" "${TOLERANCE:-0.30}"
}

# DeepSeek-R1-0528 (DeepSeek-V3's architecture), FP8 checkpoint, 8 x B200, SGLang 0.5.6.post1,
# --tp 8, no speculative decoding, random 1000/1000 (mean 610 in, 421 out): TPOT 9.16 ms at
# concurrency 1 (sgl-project/sgl-cookbook docs/autoregressive/DeepSeek/DeepSeek-R1.md, section
# 5.1, commit 7b5bd9c); the KV a token attends to, 610 + 421 / 2 = 820
step "DeepSeek-V3 on 8 x B200, TP 8" 9.16 models/deepseek-v3.yaml topologies/hgx-b200.xml --weights fp8 --tp 8 \
    --context 820
# Llama 3.1 70B FP8 on 8 x H100, TensorRT-LLM 0.16.0, TP 8, one request of 128 in / 2,048 out:
# end-to-end 20,923 ms, so at most 10.2 ms a token (prefill included) (AMD's ROCm blog,
# rocm.blogs.amd.com/artificial-intelligence/LLM_Inference/README.html, its H100 column);
# context 128 + 2048 / 2 = 1,152
step "Llama 3.1 70B on 8 x H100, TP 8" 10.2 models/llama-3.1-70b.yaml topologies/hgx-h100.xml --weights fp8 --tp 8 \
    --context 1152
# The same table's MI300X column: vLLM (rocm/vllm-dev 20250112), TP 8, 19,089 ms: 9.3 ms a token
step "Llama 3.1 70B on 8 x MI300X, TP 8" 9.3 models/llama-3.1-70b.yaml topologies/mi300x.xml --weights fp8 --tp 8 \
    --context 1152
# DeepSeek-V3.2, 8 x B300, vLLM (2026, after its attention-path fusion: ~33 kernels a layer
# toward ~10), --tp 8, no MTP: 125 tok/s at concurrency 1, 8.0 ms a token (the vLLM blog,
# vllm-project/vllm-project.github.io _posts/2026-05-11-vllm-tops-artificial-analysis.md; facts
# row C21). Precision and lengths are not published: FP8 (the released checkpoint) and a context
# of 1,500 taken. The estimate is about +33% (10.7 ms): the chain counts DSA's indexer as 3
# kernels a layer more than DeepSeek-V3's 14, where this vLLM fused the indexer's norm and RoPE
# with the attention path's (README, "Latency"), so only the bound is asserted.
TOLERANCE=none step "DeepSeek-V3.2 on 8 x B300, TP 8 (bound only)" 8.0 models/deepseek-v3.2.yaml topologies/hgx-b300.xml --weights fp8 --tp 8 \
    --context 1500
# gpt-oss-120b, MXFP4, 8 x B200, SGLang 0.5.6 --tp 8, ShareGPT at concurrency 1 (mean 332 in,
# 213 out): TPOT 2.31 ms (sgl-cookbook docs/autoregressive/OpenAI/GPT-OSS.md, section 5.1.1).
# No primary source publishes gpt-oss-120b on one GPU at batch 1 (README, "Latency").
# The estimate misses both gpt-oss figures (about +100% and +75%), so only the bound is asserted:
# the MXFP4 groups' factors come from TensorRT-LLM's max-throughput runs (a memory efficiency
# of 0.42 on B200, 0.12 on Hopper, which reads dequantised MXFP4), and SGLang's fused gpt-oss
# layers take about 1.3 times the floors where the family's factor is 2.5-3 (README, "Latency").
TOLERANCE=none step "gpt-oss-120b on 8 x B200, TP 8 (bound only)" 2.31 models/gpt-oss-120b.yaml topologies/hgx-b200.xml --weights fp4 --tp 8 \
    --context 438
# gpt-oss-120b, MXFP4, 8 x H100, SGLang (triton attention), TP 8, one batch of 1, 1024 in / 512
# out: 318.53 tok/s, 3.14 ms a token (LMSYS, lmsys.org/blog/2025-08-27-gpt-oss)
TOLERANCE=none step "gpt-oss-120b on 8 x H100, TP 8 (bound only)" 3.14 models/gpt-oss-120b.yaml topologies/hgx-h100.xml --weights fp4 --tp 8 \
    --context 1280
tap_finish
