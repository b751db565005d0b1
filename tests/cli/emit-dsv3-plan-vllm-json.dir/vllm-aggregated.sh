#!/bin/sh
# Written by rackplan plan --emit vllm: what it planned, and the flags that carry it.
# model: DeepSeek-V3 (deepseek-ai/DeepSeek-V3); topology: GB200 NVL72
# workload: 4096 prompt and 1024 output tokens a request
# targets: none
# predicted (roofline bound): TTFT 258.3 ms, TPOT 68.93 ms, 8266 output tokens/s per device, 595150 in all
# aggregated: 1 x 72 devices, TP 1 x DP 72 x PP 1, EP 72, batch 30240 (this file)
#   a device: weights 27.33 GB, KV 151.11 GB, activations 0.33 GB of 198.67 GB HBM
# flags checked against: vLLM main at 99d7eb5d (vllm/engine/arg_utils.py; vllm serve --port from entrypoints/openai/cli_args.py at 00522333)
exec vllm serve 'deepseek-ai/DeepSeek-V3' \
  --port '8100' \
  --tensor-parallel-size '1' \
  --data-parallel-size '72' \
  --data-parallel-size-local '4' \
  --data-parallel-address "${DP_ADDRESS:?set DP_ADDRESS to host 0's address}" \
  --data-parallel-start-rank "${DP_START_RANK:?set DP_START_RANK to this host's first DP rank}" \
  --enable-expert-parallel \
  --max-num-seqs '420' \
  --max-num-batched-tokens '8612' \
  --kv-cache-dtype 'auto' \
  --gpu-memory-utilization '0.900'
