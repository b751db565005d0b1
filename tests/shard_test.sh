#!/usr/bin/env bash
# Sharded sweeps: the parts of `roofline --shard` and `compare --shard`, merged in any order,
# equal the run without --shard byte for byte, exit code included; and merge refuses parts
# that do not belong together. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"
# sharded NAME SHARDS ARGS...: runs ARGS whole and in SHARDS parts, merges the parts last first
sharded() {
    local name=$1 shards=$2
    shift 2
    "$rackplan" "$@" --format csv >"$work/$name.whole" 2>/dev/null
    echo $? >"$work/$name.whole-code"
    local parts=()
    for i in $(seq "$shards" -1 1); do
        "$rackplan" "$@" --format csv --shard "$i/$shards" >"$work/$name.$i" || return 1
        parts+=("$work/$name.$i")
    done
    "$rackplan" merge "${parts[@]}" -o "$work/$name.merged"
    echo $? >"$work/$name.merged-code"
    cmp -s "$work/$name.whole" "$work/$name.merged" && cmp -s "$work/$name.whole-code" "$work/$name.merged-code"
}
dsv3=models/deepseek-v3.yaml
check "roofline, 50 batches in 3 shards" sharded r3 3 roofline $dsv3 topologies/gb200-nvl72.xml --sweep 1:100000:50
check "roofline, 5 batches in 8 shards (some empty)" sharded r8 8 roofline $dsv3 topologies/hgx-h200.xml --sweep 1:64:5
check "compare, every topology x 3 sizes in 5 shards" sharded c5 5 compare $dsv3 topologies/*.xml --racks 1,2,4 --tpot-ms 30
check "compare where no row fits: merge exits 1 as the whole run does" sharded none 2 compare $dsv3 \
    topologies/hgx-h100.xml topologies/hgx-h800.xml --racks 1
check "the whole compare run found a best row" grep -q '^true,' "$work/c5.whole"

"$rackplan" merge "$work/r3.1" "$work/r3.1" >/dev/null 2>"$work/err"
check "a shard given twice: exit 3" test $? -eq 3
check "... and says where" grep -q "r3.1:2:1: error: batch .* is also in" "$work/err"
"$rackplan" merge "$work/r3.1" "$work/c5.1" >/dev/null 2>"$work/err"
check "parts of different runs: exit 3" test $? -eq 3
check "... naming the header" grep -q "c5.1:1:1: error: its header differs" "$work/err"
printf 'not,a,rackplan,csv\n' >"$work/other.csv"
"$rackplan" merge "$work/other.csv" >/dev/null 2>"$work/err"
check "a CSV of something else: exit 3" test $? -eq 3
"$rackplan" merge "$work/absent.csv" >/dev/null 2>"$work/err"
check "a missing part: exit 5" test $? -eq 5
"$rackplan" compare $dsv3 topologies/gb200-nvl72.xml --shard 1/2 >/dev/null 2>&1
check "--shard without CSV: usage error" test $? -eq 2
"$rackplan" roofline $dsv3 topologies/gb200-nvl72.xml --sweep 1:10 --format csv --shard 3/2 >/dev/null 2>&1
check "--shard 3/2: usage error" test $? -eq 2
tap_finish
