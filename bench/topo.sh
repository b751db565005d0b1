#!/usr/bin/env bash
# Benchmark: load and analyse the largest pods (`rackplan topo --format json`), N runs each;
# prints the median wall time (process start to exit, including /usr/bin/time) and the largest peak resident memory. Usage: bench/topo.sh [N]
set -eu
cd "$(dirname "$0")/.."
runs=${1:-11}
rackplan=${RACKPLAN:-build/rackplan}
for case in "topologies/tpu7x-ironwood-pod.xml" "topologies/tpu-v5p-pod.xml" \
            "topologies/gb200-nvl72.xml --racks 64" "topologies/hgx-h100.xml --racks 1024"; do
    times=()
    peak=0
    for _ in $(seq "$runs"); do
        start=$(date +%s%N)
        kb=$( { /usr/bin/time -f '%M' $rackplan topo $case --format json >/dev/null; } 2>&1 )
        end=$(date +%s%N)
        times+=("$(( (end - start) / 1000 ))")
        [ "$kb" -gt "$peak" ] && peak=$kb
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
    printf '%-42s median %8.2f ms  peak RSS %6.1f MB  (%d runs)\n' "$case" "$(echo "$median / 1000" | bc -l)" "$(echo "$peak / 1024" | bc -l)" "$runs"
done
