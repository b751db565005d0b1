#!/bin/sh
# Written by rackplan serve --emit sglang: what it planned, and the flags that carry it.
# model: DeepSeek-V3 (deepseek-ai/DeepSeek-V3); topology: GB200 NVL72
# workload: 4096 prompt and 1024 output tokens a request, MTP 1 draft accepted at 0.80
# targets: TTFT <= 2000 ms, TPOT <= 20.0 ms
# predicted (roofline bound): TTFT 38.7 ms, TPOT 16.87 ms, 7734 output tokens/s per device, 309370 in all
# prefill: 6 x 4 devices, TP 2 x DP 2 x PP 1, EP 4, prompts a batch 2
#   a device: weights 175.02 GB, KV 0.29 GB, activations 0.00 GB of 198.67 GB HBM
# decode: 1 x 16 devices, TP 1 x DP 16 x PP 1, EP 16, batch 5216
#   a device: weights 59.03 GB, KV 119.22 GB, activations 0.26 GB of 198.67 GB HBM
# flags checked against: SGLang main at 001067ff (python/sglang/srt/server_args.py)
# router flags checked against: sglang_router (SGLang's router) router_args.py at 6614f984
# one --prefill (with its bootstrap port, SGLang's default 8998) and one --decode URL an instance:
# set each to its instance's head host
exec python3 -m sglang_router.launch_router \
  --pd-disaggregation \
  --prefill "http://${PREFILL_0:?set PREFILL_0 to prefill instance 0's head host}:30000" '8998' \
  --prefill "http://${PREFILL_1:?set PREFILL_1 to prefill instance 1's head host}:30000" '8998' \
  --prefill "http://${PREFILL_2:?set PREFILL_2 to prefill instance 2's head host}:30000" '8998' \
  --prefill "http://${PREFILL_3:?set PREFILL_3 to prefill instance 3's head host}:30000" '8998' \
  --prefill "http://${PREFILL_4:?set PREFILL_4 to prefill instance 4's head host}:30000" '8998' \
  --prefill "http://${PREFILL_5:?set PREFILL_5 to prefill instance 5's head host}:30000" '8998' \
  --decode "http://${DECODE_0:?set DECODE_0 to decode instance 0's head host}:30001" \
  --host '0.0.0.0' \
  --port '8000'
