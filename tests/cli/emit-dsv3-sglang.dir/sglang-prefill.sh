#!/bin/sh
# Written by rackplan serve --emit sglang: what it planned, and the flags that carry it.
# model: DeepSeek-V3 (deepseek-ai/DeepSeek-V3); topology: GB200 NVL72
# workload: 4096 prompt and 1024 output tokens a request, MTP 1 draft accepted at 0.80
# targets: TTFT <= 2000 ms, TPOT <= 20.0 ms
# predicted (roofline bound): TTFT 77.1 ms, TPOT 15.27 ms, 7734 output tokens/s per device, 309370 in all
# prefill: 3 x 8 devices, TP 1 x DP 8 x PP 1, EP 8, prompts a batch 8 (this file)
#   a device: weights 100.60 GB, KV 0.29 GB, activations 0.00 GB of 186.00 GB HBM
# decode: 1 x 16 devices, TP 1 x DP 16 x PP 1, EP 16, batch 4720
#   a device: weights 59.03 GB, KV 107.88 GB, activations 0.23 GB of 186.00 GB HBM
# flags checked against: SGLang main at 001067ff (python/sglang/srt/server_args.py)
# run 3 instances of this, each on its own 8 devices
exec python3 -m sglang.launch_server \
  --model-path 'deepseek-ai/DeepSeek-V3' \
  --host '0.0.0.0' \
  --port '30000' \
  --tp-size '8' \
  --dp-size '8' \
  --enable-dp-attention \
  --ep-size '8' \
  --moe-a2a-backend 'deepep' \
  --deepep-mode 'normal' \
  --chunked-prefill-size '131072' \
  --kv-cache-dtype 'bf16' \
  --mem-fraction-static '0.543' \
  --disaggregation-mode 'prefill' \
  --disaggregation-transfer-backend 'mooncake' \
  --speculative-algorithm 'EAGLE' \
  --speculative-num-steps '1' \
  --speculative-eagle-topk '1' \
  --speculative-num-draft-tokens '2' \
  --nnodes '2' \
  --node-rank "${NODE_RANK:?set NODE_RANK to this host's rank}" \
  --dist-init-addr "${DIST_INIT_ADDR:?set DIST_INIT_ADDR to host 0's address:port}"
