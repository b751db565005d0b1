#!/bin/sh
# Written by rackplan serve --emit trtllm: what it planned, and the flags that carry it.
# model: Llama 3.1 70B (meta-llama/Llama-3.1-70B); topology: HGX H200
# workload: 2048 prompt and 512 output tokens a request
# targets: TPOT <= 50.0 ms
# predicted (roofline bound): TTFT 156.3 ms, TPOT 49.96 ms, 1301 output tokens/s per device, 10404 in all
# aggregated: 1 x 8 devices, TP 8 x DP 1 x PP 1, EP 1, batch 522 (this file)
#   a device: weights 17.64 GB, KV 54.74 GB, activations 0.06 GB of 150.75 GB HBM
# flags checked against: TensorRT-LLM 1.0.0 (release; LLM-API keys of tensorrt_llm/llmapi/llm_args.py: TorchLlmArgs, KvCacheConfig, CudaGraphConfig, CacheTransceiverConfig, MTPDecodingConfig)
exec trtllm-serve 'meta-llama/Llama-3.1-70B' \
  --host '0.0.0.0' \
  --port '8100' \
  --backend 'pytorch' \
  --extra_llm_api_options "$(dirname "$0")/trtllm-aggregated.yaml"
