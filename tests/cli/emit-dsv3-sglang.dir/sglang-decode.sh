#!/bin/sh
# Written by rackplan serve --emit sglang: what it planned, and the flags that carry it.
# model: DeepSeek-V3 (deepseek-ai/DeepSeek-V3); topology: GB200 NVL72
# workload: 4096 prompt and 1024 output tokens a request, MTP 1 draft accepted at 0.80
# targets: TTFT <= 2000 ms, TPOT <= 20.0 ms
# predicted (roofline bound): TTFT 38.7 ms, TPOT 16.87 ms, 7734 output tokens/s per device, 309370 in all
# prefill: 6 x 4 devices, TP 2 x DP 2 x PP 1, EP 4, prompts a batch 2
#   a device: weights 175.02 GB, KV 0.29 GB, activations 0.00 GB of 198.67 GB HBM
# decode: 1 x 16 devices, TP 1 x DP 16 x PP 1, EP 16, batch 5216 (this file)
#   a device: weights 59.03 GB, KV 119.22 GB, activations 0.26 GB of 198.67 GB HBM
# flags checked against: SGLang main at 001067ff (python/sglang/srt/server_args.py)
exec python3 -m sglang.launch_server \
  --model-path 'deepseek-ai/DeepSeek-V3' \
  --host '0.0.0.0' \
  --port '30001' \
  --tp-size '16' \
  --dp-size '16' \
  --enable-dp-attention \
  --ep-size '16' \
  --moe-a2a-backend 'deepep' \
  --deepep-mode 'low_latency' \
  --max-running-requests '5216' \
  --cuda-graph-max-bs '326' \
  --kv-cache-dtype 'bf16' \
  --mem-fraction-static '0.898' \
  --disaggregation-mode 'decode' \
  --disaggregation-transfer-backend 'mooncake' \
  --speculative-algorithm 'EAGLE' \
  --speculative-num-steps '1' \
  --speculative-eagle-topk '1' \
  --speculative-num-draft-tokens '2' \
  --nnodes '4' \
  --node-rank "${NODE_RANK:?set NODE_RANK to this host's rank}" \
  --dist-init-addr "${DIST_INIT_ADDR:?set DIST_INIT_ADDR to host 0's address:port}"
