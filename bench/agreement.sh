#!/usr/bin/env bash
# The analysis against the simulation on the shipped examples (issue 26, README "Tail latency"):
# each case is `rackplan serve ... --simulate N --seed 1` at the point serve chooses, Poisson
# arrivals, the targets at p99. Prints one Markdown row a case: the chosen deployment, then
# TTFT p50 and p99 and TPOT p50 and p99 as "analysis vs simulation (difference)", in ms.
# Usage: bench/agreement.sh [CASE...] from anywhere after `ninja -C build` (cases by number,
# default all; the DeepSeek-R1 mixes simulate 1,000,000 to 4,000,000 requests: minutes).
set -eu
cd "$(dirname "$0")/.."
rackplan=${RACKPLAN:-build/rackplan}
p99=(--arrivals poisson --percentile 99 --seed 1 --format json)

row() { # NAME ARGS...: serve ARGS with the options above, one table row
    local name=$1
    shift
    "$rackplan" serve "$@" "${p99[@]}" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["simulated"]
def cell(key, digits):
    a, b = d[key] * 1e3, s[key] * 1e3
    return "%.*f vs %.*f (%+.0f%%)" % (digits, a, digits, b, 100 * (a / b - 1))
if d["mode"] == "disaggregated":
    pre, dec = d["layout"]["prefill"], d["layout"]["decode"]
    what = "disaggregated %dP%dD, decode batch %d" % (pre["instances"], dec["instances"], dec["batch"])
else:
    lay = d["layout"]
    what = "%d x TP %d x DP %d, batch %d" % (d["instances"], lay["tp"], lay["dp"], d["batch"])
print("| %s (%s; %d requests) | %s | %s | %s | %s |" % (sys.argv[1], what, s["requests"], cell("ttft_p50_s", 1),
      cell("ttft_p99_s", 1), cell("tpot_p50_s", 2), cell("tpot_p99_s", 2)))' "$name"
}

cases=${*:-1 2 3 4 5 6 7 8 9 10 11 12}
echo '| case | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 |'
echo '| --- | ---: | ---: | ---: | ---: |'
for c in $cases; do
    case $c in
    1) row "Llama 3.1 70B, H200 node, 1,024/1,024, TPOT 20 ms / TTFT 500 ms" models/llama-3.1-70b.yaml \
        topologies/hgx-h200.xml --isl 1024 --osl 1024 --tpot-ms 20 --ttft-ms 500 --simulate 100000 ;;
    2) row "Qwen3-30B-A3B, H200 node, 2,048/512, TPOT 20 ms" models/qwen3-30b-a3b.yaml topologies/hgx-h200.xml \
        --isl 2048 --osl 512 --tpot-ms 20 --simulate 100000 ;;
    3) row "Llama 3.1 70B, H200 node, Azure 2023 conversation mix, TPOT 30 ms / TTFT 500 ms" \
        models/llama-3.1-70b.yaml topologies/hgx-h200.xml --lengths workloads/azure-2023-conversation.csv \
        --tpot-ms 30 --ttft-ms 500 --simulate 100000 ;;
    4) row "the same, Azure 2023 code mix, TTFT 600 ms" models/llama-3.1-70b.yaml topologies/hgx-h200.xml \
        --lengths workloads/azure-2023-code.csv --tpot-ms 30 --ttft-ms 600 --simulate 100000 ;;
    5) row "DeepSeek-V3, GB200 NVL72 (--racks 1), 8,192/1,024, TPOT 50 ms / TTFT 2 s" models/deepseek-v3.yaml \
        topologies/gb200-nvl72.xml --racks 1 --isl 8192 --osl 1024 --tpot-ms 50 --ttft-ms 2000 --simulate 400000 ;;
    6) row "Llama 2 70B, H200 node, MLPerf (OpenOrca) mix, TPOT 40 ms / TTFT 2 s" models/llama-2-70b.yaml \
        topologies/hgx-h200.xml --lengths workloads/mlperf-llama2-70b.csv --tpot-ms 40 --ttft-ms 2000 \
        --simulate 100000 ;;
    7) row "DeepSeek-V3, H200 node, MLPerf DeepSeek-R1 mix, TPOT 80 ms / TTFT 2 s" models/deepseek-v3.yaml \
        topologies/hgx-h200.xml --lengths workloads/mlperf-deepseek-r1.csv --tpot-ms 80 --ttft-ms 2000 \
        --simulate 4000000 ;;
    8) row "DeepSeek-V3, HGX B200 (FP4), MLPerf DeepSeek-R1 mix, --max-tokens 32768, TPOT 80 ms / TTFT 1 s" \
        models/deepseek-v3.yaml topologies/hgx-b200.xml --weights fp4 --lengths workloads/mlperf-deepseek-r1.csv \
        --max-tokens 32768 --tpot-ms 80 --ttft-ms 1000 --simulate 1000000 ;;
    9) row "DeepSeek-V3, GB300 NVL72, MLPerf DeepSeek-R1 mix, TPOT 40 ms / TTFT 2 s" models/deepseek-v3.yaml \
        topologies/gb300-nvl72.xml --lengths workloads/mlperf-deepseek-r1.csv --tpot-ms 40 --ttft-ms 2000 \
        --simulate 1000000 ;;
    10) row "Llama 3.1 405B, 4 MI300X platforms, Azure 2023 conversation mix, disaggregated, TPOT 50 ms / TTFT 2 s" \
        models/llama-3.1-405b.yaml topologies/mi300x.xml --racks 4 --mode disaggregated \
        --lengths workloads/azure-2023-conversation.csv --tpot-ms 50 --ttft-ms 2000 --simulate 200000 ;;
    11) row "Qwen3-30B-A3B, 2 H200 nodes, Azure 2023 conversation mix, disaggregated, TPOT 20 ms / TTFT 500 ms" \
        models/qwen3-30b-a3b.yaml topologies/hgx-h200.xml --racks 2 --mode disaggregated \
        --lengths workloads/azure-2023-conversation.csv --tpot-ms 20 --ttft-ms 500 --simulate 200000 ;;
    12) row "DeepSeek-V3, prefill HGX B200, decode GB200 NVL72 (--racks 1), Azure 2023 code mix, TPOT 50 ms / TTFT 3 s" \
        models/deepseek-v3.yaml topologies/gb200-nvl72.xml --prefill-topology topologies/hgx-b200.xml --racks 1 \
        --lengths workloads/azure-2023-code.csv --tpot-ms 50 --ttft-ms 3000 --simulate 200000 ;;
    *) echo "bench/agreement.sh: no case $c" >&2; exit 2 ;;
    esac
done
