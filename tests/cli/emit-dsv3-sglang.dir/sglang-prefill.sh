#!/bin/sh
# Written by rackplan serve --emit sglang: what it planned, and the flags that carry it.
# model: DeepSeek-V3 (deepseek-ai/DeepSeek-V3); topology: GB200 NVL72
# workload: 4096 prompt and 1024 output tokens a request, MTP 1 draft accepted at 0.80
# targets: TTFT <= 2000 ms, TPOT <= 20.0 ms
# predicted (roofline bound): TTFT 38.7 ms, TPOT 16.87 ms, 7734 output tokens/s per device, 309370 in all
# prefill: 6 x 4 devices, TP 2 x DP 2 x PP 1, EP 4, prompts a batch 2 (this file)
#   a device: weights 175.02 GB, KV 0.29 GB, activations 0.00 GB of 198.67 GB HBM
# decode: 1 x 16 devices, TP 1 x DP 16 x PP 1, EP 16, batch 5216
#   a device: weights 59.03 GB, KV 119.22 GB, activations 0.26 GB of 198.67 GB HBM
# flags checked against: SGLang main at 001067ff (python/sglang/srt/server_args.py)
# run 6 instances of this, each on its own 4 devices
exec python3 -m sglang.launch_server \
  --model-path 'deepseek-ai/DeepSeek-V3' \
  --host '0.0.0.0' \
  --port '30000' \
  --tp-size '4' \
  --dp-size '2' \
  --enable-dp-attention \
  --ep-size '4' \
  --moe-a2a-backend 'deepep' \
  --deepep-mode 'normal' \
  --chunked-prefill-size '8192' \
  --kv-cache-dtype 'bf16' \
  --mem-fraction-static '0.883' \
  --disaggregation-mode 'prefill' \
  --disaggregation-transfer-backend 'mooncake' \
  --speculative-algorithm 'EAGLE' \
  --speculative-num-steps '1' \
  --speculative-eagle-topk '1' \
  --speculative-num-draft-tokens '2'
