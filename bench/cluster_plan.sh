#!/usr/bin/env bash
# Benchmark: `rackplan plan` of DeepSeek-V3 on ever larger GB200 NVL72 clusters (EP over every
# GPU, one expert slot each, the rest spare for replicas), N runs each, with --time-limit 5; the
# greedy start (replicas, then copies on devices) is the part no time limit can cut, so its
# time is the floor of a plan's. Prints the median wall time and the largest peak resident
# memory. Usage: bench/cluster_plan.sh [N]
set -eu
cd "$(dirname "$0")/.."
runs=${1:-3}
rackplan=${RACKPLAN:-build/rackplan}
for racks in 16 256 1024 4096; do
    times=()
    peak=0
    for _ in $(seq "$runs"); do
        start=$(date +%s%N)
        kb=$( { /usr/bin/time -f '%M' $rackplan plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml \
                  --racks "$racks" --time-limit 5 >/dev/null; } 2>&1 )
        end=$(date +%s%N)
        times+=("$(( (end - start) / 1000 ))")
        [ "$kb" -gt "$peak" ] && peak=$kb
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
    printf 'racks %-5s (%7d GPUs)  median %8.2f s  peak RSS %6.1f MB  (%d runs)\n' "$racks" "$((racks * 72))" \
        "$(echo "$median / 1000000" | bc -l)" "$(echo "$peak / 1024" | bc -l)" "$runs"
done
