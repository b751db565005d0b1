#!/usr/bin/env bash
# Benchmark: `rackplan plan` of DeepSeek-V3 on ever larger GB200 NVL72 clusters (EP over every
# GPU, one expert slot each, the rest spare for replicas) under --time-limit 1 and 5: does the
# cap hold? Every MoE layer begun after the cap is dealt without search, so the expert placement
# may overrun the cap by one layer's greedy start at most. Prints, per case, the median of N
# runs of the wall time of the whole command and of the expert placement's own seconds, the
# layers dealt, and the largest peak resident memory. Usage: bench/cluster_plan.sh [N]
set -eu
cd "$(dirname "$0")/.."
runs=${1:-5}
rackplan=${RACKPLAN:-build/rackplan}
median() { sort -n | sed -n "$(( (runs + 1) / 2 ))p"; }
for limit in 1 5; do
    for racks in 16 256 1024 4096; do
        walls=() solves=() peak=0 dealt=
        for _ in $(seq "$runs"); do
            start=$(date +%s%N)
            text=$( { /usr/bin/time -f 'peak-kb %M' $rackplan plan models/deepseek-v3.yaml \
                        topologies/gb200-nvl72.xml --racks "$racks" --time-limit "$limit"; } 2>&1 )
            end=$(date +%s%N)
            walls+=("$(( (end - start) / 1000000 ))")
            solves+=("$(sed -n 's/.*solver: mean GPU imbalance.*, \([0-9.]*\) s$/\1/p' <<<"$text")")
            kb=$(sed -n 's/^peak-kb //p' <<<"$text")
            [ "$kb" -gt "$peak" ] && peak=$kb
            dealt=$(sed -n 's/^  \([0-9]*\) of \([0-9]*\) layers began after the limit.*/\1 of \2/p' <<<"$text")
        done
        printf '| %s | %s (%s GPUs) | %.2f s | %.3f s | %s | %.0f MB |\n' "$limit" "$racks" "$((racks * 72))" \
            "$(printf '%s\n' "${walls[@]}" | median | awk '{print $1 / 1000}')" \
            "$(printf '%s\n' "${solves[@]}" | median)" "${dealt:-none}" "$(echo "$peak / 1024" | bc -l)"
    done
done
