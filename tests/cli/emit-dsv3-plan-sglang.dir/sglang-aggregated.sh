#!/bin/sh
# Written by rackplan plan --emit sglang: what it planned, and the flags that carry it.
# model: DeepSeek-V3 (deepseek-ai/DeepSeek-V3); topology: GB200 NVL72
# workload: 4096 prompt and 1024 output tokens a request, MTP 1 draft accepted at 0.80
# targets: none
# predicted (roofline bound): TTFT 277.3 ms, TPOT 69.04 ms, 7891 output tokens/s per device, 568136 in all
# aggregated: 1 x 72 devices, TP 1 x DP 72 x PP 1, EP 72, batch 29592 (this file)
#   a device: weights 27.85 GB, KV 150.30 GB, activations 0.33 GB of 198.67 GB HBM
# flags checked against: SGLang main at 001067ff (python/sglang/srt/server_args.py)
exec python3 -m sglang.launch_server \
  --model-path 'deepseek-ai/DeepSeek-V3' \
  --host '0.0.0.0' \
  --port '30000' \
  --tp-size '72' \
  --dp-size '72' \
  --enable-dp-attention \
  --ep-size '72' \
  --moe-a2a-backend 'deepep' \
  --deepep-mode 'auto' \
  --ep-num-redundant-experts '32' \
  --init-expert-location '@WORK@/emitted/expert-map.json' \
  --max-running-requests '29592' \
  --cuda-graph-max-bs '411' \
  --chunked-prefill-size '589824' \
  --kv-cache-dtype 'bf16' \
  --mem-fraction-static '0.897' \
  --speculative-algorithm 'EAGLE' \
  --speculative-num-steps '1' \
  --speculative-eagle-topk '1' \
  --speculative-num-draft-tokens '2' \
  --nnodes '18' \
  --node-rank "${NODE_RANK:?set NODE_RANK to this host's rank}" \
  --dist-init-addr "${DIST_INIT_ADDR:?set DIST_INIT_ADDR to host 0's address:port}"
