#!/bin/sh
# Case b of shared/data/moe-loads (256 experts on 64 GPUs in 8 nodes, no spare slot): the
# balance-traffic frontier a long simulated annealing finds (build/bench/anneal, with its two
# relaxations in its favour), each map scored by build/bench/evaluate. Issue #5 asks for mean GPU
# imbalance <= 1.15 together with <= 3.48 remote nodes per token. One anneal of SWAPS proposals
# per layer and weight; about 8 minutes a weight at 10^6 on one core, 2 weights at a time.
# Usage: bench/b_frontier.sh [SWAPS] [WEIGHTS...] from the source root, after `ninja -C build`.
set -eu
swaps=${1:-1000000}
[ $# -gt 0 ] && shift
weights=${*:-"0.5 1 1.5 2 3 5"}
trace=loads/dsv3_topk.csv.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

running=0
for w in $weights; do
    (
        build/bench/anneal $trace 8 8 4 "$w" "$swaps" "$tmp/map-$w.csv" > "$tmp/anneal-$w"
        build/bench/evaluate "$tmp/map-$w.csv" loads/dsv3_load.csv 64 8 $trace > "$tmp/score-$w"
    ) &
    running=$((running + 1))
    if [ $running -eq 2 ]; then # one per core
        wait
        running=0
    fi
done
wait
for w in $weights; do
    echo "$(cat "$tmp/anneal-$w") | evaluate: $(cat "$tmp/score-$w")"
done
