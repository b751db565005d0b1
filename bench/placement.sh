#!/bin/sh
# Expert placement on the cases of shared/data/moe-loads/eplb_results.csv: rackplan plans each
# case, writes its physical-to-logical map, and build/bench/evaluate scores the map with EPLB's
# metrics. Wall time is the median of RUNS runs of the whole `rackplan plan` command (reading the
# model, topology, loads and trace included). With the trace, each layer's placement minimises
# its predicted time under --overlap on and off. Usage: bench/placement.sh [RUNS] from the source
# root, after `ninja -C build`.
set -eu
runs=${1:-5}
rp=build/rackplan
ev=build/bench/evaluate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# case GPUS NODES LOADS ARGS...: times `rackplan plan ARGS` and scores its map
case_row() {
    name=$1 gpus=$2 nodes=$3 loads=$4 sample=$5
    shift 5
    i=0
    while [ $i -lt "$runs" ]; do
        start=$(date +%s.%N)
        "$rp" plan "$@" --expert-map "$tmp/map.csv" > /dev/null
        end=$(date +%s.%N)
        echo "$end - $start" | bc
        i=$((i + 1))
    done > "$tmp/times"
    t=$(median < "$tmp/times")
    if [ -n "$sample" ]; then
        score=$("$ev" "$tmp/map.csv" "$loads" "$gpus" "$nodes" "$sample")
    else
        score=$("$ev" "$tmp/map.csv" "$loads" "$gpus" "$nodes")
    fi
    echo "$name $score seconds $t"
}

dsv3=models/deepseek-v3.yaml
kimi=models/kimi-k2.yaml
trace=loads/dsv3_topk.csv.gz
for tl in 0 10; do
    case_row "a1 tl=$tl" 72 1 loads/dsv3_load.csv "" $dsv3 topologies/gb200-nvl72.xml --redundant 32 \
        --loads loads/dsv3_load.csv --time-limit $tl
    case_row "c tl=$tl" 72 1 loads/kimik2_load.csv "" $kimi topologies/gb200-nvl72.xml --redundant 48 \
        --loads loads/kimik2_load.csv --time-limit $tl
done
# greedy and local search alone (no GLPK), balance only: issue #5's --time-limit 0 bar
case_row "a2 tl=0" 32 4 loads/dsv3_load.csv $trace $dsv3 topologies/hgx-h800.xml --racks 4 --redundant 32 \
    --loads loads/dsv3_load.csv --time-limit 0
case_row "b tl=0" 64 8 loads/dsv3_load.csv $trace $dsv3 topologies/hgx-h800.xml --racks 8 --ep 64 \
    --loads loads/dsv3_load.csv --time-limit 0
case_row "d tl=0" 144 18 loads/dsv3_load.csv $trace $dsv3 topologies/hgx-h800.xml --racks 18 --ep 144 \
    --redundant 32 --loads loads/dsv3_load.csv --time-limit 0
for overlap in on off; do
    case_row "a2 overlap=$overlap" 32 4 loads/dsv3_load.csv $trace $dsv3 topologies/hgx-h800.xml --racks 4 \
        --redundant 32 --loads loads/dsv3_load.csv --trace $trace --overlap $overlap
    case_row "b overlap=$overlap" 64 8 loads/dsv3_load.csv $trace $dsv3 topologies/hgx-h800.xml --racks 8 --ep 64 \
        --loads loads/dsv3_load.csv --trace $trace --overlap $overlap
    case_row "d overlap=$overlap" 144 18 loads/dsv3_load.csv $trace $dsv3 topologies/hgx-h800.xml --racks 18 \
        --ep 144 --redundant 32 --loads loads/dsv3_load.csv --trace $trace --overlap $overlap
done
