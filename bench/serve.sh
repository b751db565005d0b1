#!/usr/bin/env bash
# Benchmark: the serving search of issue 17. `rackplan serve` (one model, one topology: every
# layout and batch, aggregated and disaggregated, and the frontier) on the issue's case, with
# --estimate, and on the largest searches; `rackplan compare --isl/--osl` (one such search per
# topology, and its bound beside it) over every shipped topology. Prints the machine, then one
# Markdown row per case: what the search covered (layouts searched and points evaluated, from
# `rackplan serve --format json`; an --estimate search is followed by the bound's, so both are
# given; a compare row sums its topologies' searches), the frontier points (compare: the rows
# that meet the targets), the median, fastest and slowest of N runs of the wall time of the
# whole command (process start to exit, including /usr/bin/time) and the largest peak resident
# memory. Usage: bench/serve.sh [N] from anywhere, after `ninja -C build`; default N 5.
set -eu
cd "$(dirname "$0")/.."
runs=${1:-5}
rackplan=${RACKPLAN:-build/rackplan}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

dsv3=models/deepseek-v3.yaml
workload=(--isl 1024 --osl 1024 --tpot-ms 50)
topologies=(topologies/*.xml)

# a build that relinks the binary mid-run would mix two programs' times: refused at the end
built=$(stat -c %Y "$rackplan")
printf '# %s, %s cores, %s GB; %s at %s; %s runs each; load average before: %s\n' \
    "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)" "$(nproc)" \
    "$(free -g | awk '/^Mem:/ {print $2}')" "$("$rackplan" --version 2>/dev/null | head -n 1 || echo rackplan)" \
    "$(git describe --always --dirty 2>/dev/null || echo '?')" "$runs" "$(cut -d ' ' -f 1-3 /proc/loadavg)"
echo '| case | layouts | points | frontier | median | fastest - slowest | peak RSS |'
echo '| --- | --- | --- | --- | --- | --- | --- |'

# timed ARGS...: runs `rackplan ARGS` N times (exit 0, or 1 when nothing meets the targets);
# sets median, fastest, slowest (ms) and peak (MB)
timed() {
    local times=() top=0 start end status
    for _ in $(seq "$runs"); do
        status=0
        start=$(date +%s%N)
        /usr/bin/time -o "$tmp/time" -f '%M' "$rackplan" "$@" > /dev/null || status=$?
        end=$(date +%s%N)
        if [ "$status" -gt 1 ]; then
            echo "bench/serve.sh: rackplan $* exited $status" >&2
            exit 1
        fi
        times+=("$(( (end - start) / 1000 ))")
        kb=$(tail -n 1 "$tmp/time")
        [ "$kb" -gt "$top" ] && top=$kb
    done
    printf '%s\n' "${times[@]}" | sort -n > "$tmp/times"
    median=$(sed -n "$(( (runs + 1) / 2 ))p" "$tmp/times" | awk '{printf "%.1f", $1 / 1000}')
    fastest=$(head -n 1 "$tmp/times" | awk '{printf "%.1f", $1 / 1000}')
    slowest=$(tail -n 1 "$tmp/times" | awk '{printf "%.1f", $1 / 1000}')
    peak=$(awk -v kb="$top" 'BEGIN {printf "%.1f", kb / 1024}')
}

# searched ARGS...: `rackplan serve ARGS --format json`; sets layouts, points, frontier, found
# (all 0 when serve refuses the pair: a topology with no peak at the model's precision, which
# compare shows as a row without a deployment)
searched() {
    local status=0
    "$rackplan" serve "$@" --format json > "$tmp/serve.json" 2>/dev/null || status=$?
    if [ "$status" -eq 2 ]; then
        layouts=0 points=0 frontier=0 found=false
        return
    fi
    [ "$status" -le 1 ] || exit 1
    layouts=$(jq .layouts_searched "$tmp/serve.json")
    points=$(jq .points_evaluated "$tmp/serve.json")
    frontier=$(jq '.frontier | length' "$tmp/serve.json")
    found=$(jq .found "$tmp/serve.json")
}

# row NAME LAYOUTS POINTS FRONTIER: prints the case's row from the last `timed`
row() {
    printf '| %s | %s | %s | %s | %s ms | %s - %s ms | %s MB |\n' "$1" "$2" "$3" "$4" \
        "$median" "$fastest" "$slowest" "$peak"
}

# serve_case NAME ARGS...: times `rackplan serve ARGS` (text); with --estimate the bound's search too
serve_case() {
    local name=$1 bound=() a
    shift
    for a in "$@"; do
        [ "$a" = --estimate ] || bound+=("$a")
    done
    searched "$@"
    local l=$layouts p=$points f=$frontier
    [ "$found" = true ] || f="$f (none meets)"
    if [ ${#bound[@]} -lt $# ]; then
        searched "${bound[@]}"
        l="$l + $layouts" p="$p + $points"
    fi
    timed serve "$@"
    row "$name" "$l" "$p" "$f"
}

# compare_case NAME MODEL [--estimate]: times `rackplan compare MODEL topologies/*.xml` with the
# workload; the search is the sum over topologies of serve's (without --racks, as compare's is),
# with --estimate each followed by the bound's, which compare runs beside every estimated row
compare_case() {
    local name=$1 model=$2 estimate=("${@:3}") t l=0 p=0 lb=0 pb=0
    for t in "${topologies[@]}"; do
        searched "$model" "$t" "${workload[@]}" "${estimate[@]}"
        l=$((l + layouts)) p=$((p + points))
        if [ ${#estimate[@]} -gt 0 ]; then
            searched "$model" "$t" "${workload[@]}"
            lb=$((lb + layouts)) pb=$((pb + points))
        fi
    done
    "$rackplan" compare "$model" "${topologies[@]}" "${workload[@]}" "${estimate[@]}" --format json \
        > "$tmp/compare.json" || [ $? -eq 1 ]
    local met
    met="$(jq '[.[] | select(.tpot_met)] | length' "$tmp/compare.json") of $(jq length "$tmp/compare.json") rows meet"
    timed compare "$model" "${topologies[@]}" "${workload[@]}" "${estimate[@]}"
    if [ ${#estimate[@]} -gt 0 ]; then
        row "$name" "$l + $lb" "$p + $pb" "$met"
    else
        row "$name" "$l" "$p" "$met"
    fi
}

gb200=topologies/gb200-nvl72.xml
serve_case "serve DSV3 GB200 NVL72" $dsv3 $gb200 "${workload[@]}"
searched $dsv3 $gb200 "${workload[@]}"
timed serve $dsv3 $gb200 "${workload[@]}" --format json
row "serve DSV3 GB200 NVL72, json" "$layouts" "$points" "$frontier"
serve_case "serve DSV3 GB200 NVL72 --estimate" $dsv3 $gb200 "${workload[@]}" --estimate
serve_case "serve DSV3 Ironwood pod" $dsv3 topologies/tpu7x-ironwood-pod.xml "${workload[@]}"
serve_case "serve DSV3 Ironwood pod --estimate" $dsv3 topologies/tpu7x-ironwood-pod.xml "${workload[@]}" --estimate
serve_case "serve DSV3 HGX H100 --racks 16 --rate 100" $dsv3 topologies/hgx-h100.xml "${workload[@]}" \
    --racks 16 --rate 100
serve_case "serve DSV3 HGX H100 --racks 16 --rate 100 --estimate" $dsv3 topologies/hgx-h100.xml \
    "${workload[@]}" --racks 16 --rate 100 --estimate
# without --racks an 8-GPU box is searched at instances of 1 to 32 boxes (up to 256 devices):
# the most layouts and points of any single serve over the shipped topologies
serve_case "serve DSV3 MI355X" $dsv3 topologies/mi355x.xml "${workload[@]}"
serve_case "serve Qwen3-235B MI355X" models/qwen3-235b-a22b.yaml topologies/mi355x.xml "${workload[@]}"
serve_case "serve Qwen3-235B MI355X --estimate" models/qwen3-235b-a22b.yaml topologies/mi355x.xml \
    "${workload[@]}" --estimate
serve_case "serve DSV3 prefill HGX B200, decode GB200 NVL72, 8k/1k" $dsv3 $gb200 \
    --prefill-topology topologies/hgx-b200.xml --isl 8192 --osl 1024 --ttft-ms 2000
# the new model families (issue 19): sparse attention at a long context with its MTP module held
# and run, a linear-attention hybrid at its full context
serve_case "serve DeepSeek-V3.2 GB200 NVL72, 32k/2k, --mtp 1" models/deepseek-v3.2.yaml $gb200 \
    --isl 32768 --osl 2048 --tpot-ms 50 --mtp 1 --mtp-accept 0.8
serve_case "serve Qwen3-Next-80B-A3B HGX H200, 256k/4k" models/qwen3-next-80b-a3b.yaml topologies/hgx-h200.xml \
    --isl 258048 --osl 4096 --tpot-ms 50
# tails (issue 26): Poisson arrivals, targets on the 99th percentiles, a published length mix,
# and the simulation beside the analysis
serve_case "serve Llama 3.1 70B HGX H200, Poisson, p99" models/llama-3.1-70b.yaml topologies/hgx-h200.xml \
    --isl 1024 --osl 1024 --tpot-ms 20 --ttft-ms 500 --percentile 99 --arrivals poisson
serve_case "serve Llama 3.1 70B HGX H200, Azure conversation mix, Poisson, p99" models/llama-3.1-70b.yaml \
    topologies/hgx-h200.xml --lengths workloads/azure-2023-conversation.csv --tpot-ms 30 --ttft-ms 500 \
    --percentile 99 --arrivals poisson
serve_case "serve DSV3 GB200 NVL72, Poisson, p99" $dsv3 $gb200 "${workload[@]}" --ttft-ms 2000 --percentile 99 \
    --arrivals poisson
serve_case "serve Llama 3.1 70B HGX H200, Poisson, p99, --simulate 100000" models/llama-3.1-70b.yaml \
    topologies/hgx-h200.xml --isl 1024 --osl 1024 --tpot-ms 20 --ttft-ms 500 --percentile 99 --arrivals poisson \
    --simulate 100000
serve_case "serve Qwen3-30B-A3B HGX H200, 2k/512, Poisson, p99" models/qwen3-30b-a3b.yaml topologies/hgx-h200.xml \
    --isl 2048 --osl 512 --tpot-ms 20 --percentile 99 --arrivals poisson
# a length mix on a rack whose prefill instances span it (batches of up to 2,880 prompts), estimated
serve_case "serve DSV3 GB300 NVL72, MLPerf DeepSeek-R1 mix, Poisson, p99, --estimate" $dsv3 \
    topologies/gb300-nvl72.xml --lengths workloads/mlperf-deepseek-r1.csv --tpot-ms 40 --ttft-ms 2000 \
    --percentile 99 --arrivals poisson --estimate
# the prefix cache (issue 27): the hit the rack's tiers hold, settled with the deployment, and
# the host tier sized over eight capacities (each a settled search)
serve_case "serve DSV3 GB200 NVL72, 8k/1k, --reuse 0.8 exp:300" $dsv3 $gb200 --isl 8192 --osl 1024 --tpot-ms 50 \
    --reuse 0.8 --reuse-interval exp:300
serve_case "serve DSV3 GB200 NVL72, 8k/1k, --reuse 0.8 exp:300 --size-tiers" $dsv3 $gb200 --isl 8192 --osl 1024 \
    --tpot-ms 50 --reuse 0.8 --reuse-interval exp:300 --size-tiers --tier-price host=0.000285 --price gb200-nvl72=10.5
for model in deepseek-v3 qwen3-235b-a22b llama-3.1-405b; do
    compare_case "compare $model, ${#topologies[@]} topologies" models/$model.yaml
    compare_case "compare $model, ${#topologies[@]} topologies --estimate" models/$model.yaml --estimate
done
if [ "$(stat -c %Y "$rackplan")" != "$built" ]; then
    echo "bench/serve.sh: $rackplan was rebuilt during the run; run it again" >&2
    exit 1
fi
