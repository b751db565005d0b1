#!/bin/bash
# The closed-loop cases README "Cohorts" cites, seventeen, then six of prompts longer than the
# chunk on one rank and four on ranks that step together: each serve's chosen point, its analysis
# against a simulation of it (400,000 requests, enough for the largest case's 18,880 clients to
# start many lives), as percent differences of TTFT and TPOT at p50 and p99. Usage:
# tools/cohorts_against_simulation.sh [RACKPLAN], from the repository's root; about 20 s.
B=${1:-./build/rackplan}
H200=topologies/hgx-h200.xml
cases=(
"models/deepseek-v3.yaml $H200 --isl 3200 --osl 800 --tp 8 --mode aggregated --weights fp8 --kv bf16 --tpot-ms 17.2"
"models/deepseek-v3.yaml $H200 --isl 3200 --osl 800 --tp 8 --mode aggregated --weights fp8 --kv bf16 --tpot-ms 65.2"
"models/qwen3-235b-a22b.yaml topologies/mi355x.xml --isl 4096 --osl 512 --tpot-ms 25 --mode aggregated"
"models/deepseek-v3.yaml $H200 --isl 3200 --osl 800 --tp 1 --mode aggregated --weights fp8 --tpot-ms 40"
"models/llama-3.1-70b.yaml $H200 --isl 2048 --osl 512 --tp 4 --mode aggregated --tpot-ms 30"
"models/llama-3.1-70b.yaml $H200 --isl 1000 --osl 1000 --tp 8 --mode aggregated --tpot-ms 25"
"models/qwen3-30b-a3b.yaml $H200 --isl 2048 --osl 512 --mode aggregated --tpot-ms 20"
"models/deepseek-v3.yaml topologies/gb200-nvl72.xml --isl 4096 --osl 1024 --mode aggregated --tp 1 --mtp 1 --mtp-accept 0.8"
"models/deepseek-v3.yaml $H200 --isl 1000 --osl 1000 --tp 1 --mode aggregated --weights fp8 --tpot-ms 40"
"models/deepseek-v3.yaml $H200 --isl 6000 --osl 500 --tp 1 --mode aggregated --weights fp8 --tpot-ms 50"
"models/deepseek-v3.yaml topologies/hgx-b200.xml --isl 2000 --osl 2000 --tp 1 --mode aggregated --weights fp4 --tpot-ms 30"
"models/deepseek-v3.yaml topologies/gb200-nvl72.xml --isl 8192 --osl 1024 --mode aggregated --tpot-ms 50"
"models/qwen3-235b-a22b.yaml $H200 --isl 3000 --osl 300 --mode aggregated --tpot-ms 30"
"models/llama-3.1-70b.yaml topologies/hgx-h100.xml --isl 4000 --osl 250 --mode aggregated --tpot-ms 35"
"models/llama-3.1-70b.yaml topologies/mi300x.xml --isl 500 --osl 2000 --mode aggregated --tpot-ms 20"
"models/gpt-oss-120b.yaml topologies/hgx-b200.xml --isl 1024 --osl 1024 --weights fp4 --mode aggregated --tpot-ms 10"
"models/qwen3-30b-a3b.yaml $H200 --isl 1024 --osl 1024 --mode aggregated --tpot-ms 15 --prefix-hit 0.5"
# prompts longer than the chunk (8,192): a run of ceil(c / C) full steps on one rank
"models/llama-3.1-70b.yaml $H200 --isl 20000 --osl 500 --tp 8 --mode aggregated --tpot-ms 40"
"models/llama-3.1-70b.yaml $H200 --isl 12000 --osl 500 --tp 8 --mode aggregated --tpot-ms 40"
"models/llama-3.1-70b.yaml $H200 --isl 40000 --osl 1000 --tp 8 --mode aggregated --tpot-ms 40"
"models/llama-3.1-70b.yaml topologies/hgx-b200.xml --isl 9000 --osl 300 --tp 8 --mode aggregated --tpot-ms 30"
"models/qwen3-30b-a3b.yaml $H200 --isl 16000 --osl 400 --tp 8 --mode aggregated --tpot-ms 20"
"models/deepseek-v3.yaml $H200 --isl 30000 --osl 1000 --tp 8 --mode aggregated --weights fp8 --tpot-ms 40"
# prompts longer than the chunk on ranks that step together (data-parallel attention), each rank
# chunking its own: cohorts of dp in runs of full steps, a last cohort of B mod dp (or all of B <=
# dp) through its own chunks
"models/deepseek-v3.yaml $H200 --isl 20000 --osl 1000 --tp 1 --mode aggregated --weights fp8 --tpot-ms 30"
"models/deepseek-v3.yaml $H200 --isl 20000 --osl 1000 --tp 1 --mode aggregated --weights fp8 --tpot-ms 60"
"models/deepseek-v3.yaml $H200 --isl 30000 --osl 1000 --tp 1 --mode aggregated --weights fp8 --prefix-hit 0.2 --tpot-ms 80"
"models/qwen3-235b-a22b.yaml $H200 --isl 16000 --osl 400 --tp 1 --mode aggregated --tpot-ms 60"
)
echo "analysis against simulation: TTFT p50 p99, TPOT p50 p99 (percent) | the point"
for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    "$B" serve $c --simulate 400000 --estimate 2>&1 | awk '
        /^  aggregated:/ { point = $0; sub(/^  aggregated: /, "", point) }
        /^    TTFT/ { st50 = $2; st99 = $4 }
        /^    TPOT/ { sp50 = $2; sp99 = $4 }
        /analysis$/ { n++; if (n == 1) { at50 = $1; at99 = $3 } else { ap50 = $1; ap99 = $3 } }
        END { printf "%+6.1f %+6.1f %+6.1f %+6.1f | %s\n", (at50 / st50 - 1) * 100, (at99 / st99 - 1) * 100,
                     (ap50 / sp50 - 1) * 100, (ap99 / sp99 - 1) * 100, point }'
done
