#!/bin/sh
# Written by rackplan serve --emit vllm: what it planned, and the flags that carry it.
# model: DeepSeek-V3 (deepseek-ai/DeepSeek-V3); topology: GB200 NVL72
# workload: 4096 prompt and 1024 output tokens a request, MTP 1 draft accepted at 0.80
# targets: TTFT <= 2000 ms, TPOT <= 20.0 ms
# predicted (roofline bound): TTFT 38.7 ms, TPOT 16.87 ms, 7734 output tokens/s per device, 309370 in all
# prefill: 6 x 4 devices, TP 2 x DP 2 x PP 1, EP 4, prompts a batch 2 (this file)
#   a device: weights 175.02 GB, KV 0.29 GB, activations 0.00 GB of 198.67 GB HBM
# decode: 1 x 16 devices, TP 1 x DP 16 x PP 1, EP 16, batch 5216
#   a device: weights 59.03 GB, KV 119.22 GB, activations 0.26 GB of 198.67 GB HBM
# flags checked against: vLLM main at 99d7eb5d (vllm/engine/arg_utils.py; vllm serve --port from entrypoints/openai/cli_args.py at 00522333)
# run 6 instances of this, each on its own 4 devices
exec vllm serve 'deepseek-ai/DeepSeek-V3' \
  --port '8100' \
  --tensor-parallel-size '2' \
  --data-parallel-size '2' \
  --enable-expert-parallel \
  --all2all-backend 'deepep_high_throughput' \
  --max-num-seqs '1' \
  --max-num-batched-tokens '4096' \
  --kv-cache-dtype 'auto' \
  --gpu-memory-utilization '0.883' \
  --speculative-config '{"method":"deepseek_mtp","num_speculative_tokens":1}' \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
