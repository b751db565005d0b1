#!/usr/bin/env bash
# The evidence tools of bench/RESULTS.md's case b frontier: build/bench/anneal and
# build/bench/evaluate agree with each other, with what they claim of their search, and with
# DeepSeek's published EPLB run. TAP output.
# Arguments: RACKPLAN SOURCE_ROOT ANNEAL EVALUATE.
set -u
anneal=$3
evaluate=$4
. "$(dirname "$0")/tap.sh" "$@"

trace=loads/dsv3_topk.csv.gz
loads=loads/dsv3_load.csv
# field NAME LINE: the number after NAME in LINE
field() { awk -v name="$1" '{for (i = 1; i < NF; i++) if ($i == name) print $(i + 1)}' <<<"$2"; }
same() { [ "$1" = "$2" ] || { echo "# $1 != $2"; false; }; }
at_most() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}' || { echo "# $1 > $2"; false; }; }

# With no swap the annealer keeps its start, whole expert groups on nodes, which is the partition
# EPLB's hierarchical policy chose on case b: shared/data/moe-loads/eplb_results.csv, row
# b_dsv3_R256_G64_N8, gives node imbalance 1.1807, remote pairs 0.87526 and 3.47704 remote nodes
# per token (these depend only on which node holds each expert, not on the GPUs inside it).
start=$("$anneal" $trace 8 8 4 1 0 "$work/start.csv")
check "anneal with no swap exits 0" test $? -eq 0
score=$("$evaluate" "$work/start.csv" $loads 64 8 $trace)
check "... and its map scores EPLB hierarchical's node imbalance, 1.18070" same "$(field node_imb_avg "$score")" 1.18070
check "... EPLB hierarchical's remote pairs, 0.87526" same "$(field remote_pair "$score")" 0.87526
check "... and EPLB hierarchical's remote nodes per token, 3.47704" same "$(field nodes_per_tok "$score")" 3.47704
check "... the GPU floor is at most the packed GPU imbalance" \
    at_most "$(field gpu_floor_avg "$start")" "$(field gpu_imb_avg "$start")"

# A short search at weight 1: its cost, remote nodes + 1 x GPU floor, must fall below the start's
# (the best partition seen is kept), and evaluate must score its map as anneal reports it.
short=$("$anneal" $trace 8 8 4 1 3000 "$work/short.csv")
score=$("$evaluate" "$work/short.csv" $loads 64 8 $trace)
cost() { awk -v a="$(field nodes_per_tok "$1")" -v b="$(field gpu_floor_avg "$1")" 'BEGIN {printf "%.4f", a + b}'; }
start_cost=$(cost "$start")
short_cost=$(cost "$short")
check "3,000 swaps a layer lower remote nodes + GPU floor ($start_cost -> $short_cost)" \
    awk -v a="$short_cost" -v b="$start_cost" 'BEGIN {exit !(a < b)}'
check "... the GPU floor is at most the packed GPU imbalance" \
    at_most "$(field gpu_floor_avg "$short")" "$(field gpu_imb_avg "$short")"
check "... evaluate gives anneal's GPU imbalance" \
    same "$(printf %.4f "$(field gpu_imb_avg "$score")")" "$(field gpu_imb_avg "$short")"
check "... and anneal's remote nodes per token" \
    same "$(printf %.4f "$(field nodes_per_tok "$score")")" "$(field nodes_per_tok "$short")"
again=$("$anneal" $trace 8 8 4 1 3000 "$work/again.csv")
check "... and a second run gives the same bytes" cmp -s "$work/short.csv" "$work/again.csv"
check "... and the same figures" same "$again" "$short"

"$anneal" $trace 8 8 65 1 0 >/dev/null 2>"$work/err"
check "65 slots a GPU is refused with exit 2" test $? -eq 2
check "... saying why" grep -q "1 to 64 slots" "$work/err"
tap_finish
