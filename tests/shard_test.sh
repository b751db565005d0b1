#!/usr/bin/env bash
# Sharded sweeps: the CSV or JSON parts of `roofline --shard` and `compare --shard`, merged in
# any order, equal the run without --shard byte for byte, exit code included; and merge refuses parts
# that do not belong together. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"
# sharded NAME FORMAT SHARDS ARGS...: runs ARGS whole and in SHARDS parts, merges the parts
# last first
sharded() {
    local name=$1 format=$2 shards=$3
    shift 3
    "$rackplan" "$@" --format "$format" >"$work/$name.whole" 2>/dev/null
    echo $? >"$work/$name.whole-code"
    local parts=()
    for i in $(seq "$shards" -1 1); do
        "$rackplan" "$@" --format "$format" --shard "$i/$shards" >"$work/$name.$i" || return 1
        parts+=("$work/$name.$i")
    done
    "$rackplan" merge "${parts[@]}" -o "$work/$name.merged"
    echo $? >"$work/$name.merged-code"
    cmp -s "$work/$name.whole" "$work/$name.merged" && cmp -s "$work/$name.whole-code" "$work/$name.merged-code"
}
dsv3=models/deepseek-v3.yaml
for format in csv json; do
    check "$format: roofline, 50 batches in 3 shards" \
        sharded r3-$format $format 3 roofline $dsv3 topologies/gb200-nvl72.xml --sweep 1:100000:50
    check "$format: roofline, 5 batches in 8 shards (some empty)" \
        sharded r8-$format $format 8 roofline $dsv3 topologies/hgx-h200.xml --sweep 1:64:5
    check "$format: prefill roofline in 4 shards" \
        sharded p4-$format $format 4 roofline $dsv3 topologies/gb200-nvl72.xml --phase prefill --sweep 1:64:9
    check "$format: compare, every topology x 3 sizes in 5 shards" \
        sharded c5-$format $format 5 compare $dsv3 topologies/*.xml --racks 1,2,4 --tpot-ms 30
    check "$format: compare where no row fits: merge exits 1 as the whole run does" \
        sharded none-$format $format 2 compare $dsv3 topologies/hgx-h100.xml topologies/hgx-h800.xml --racks 1
done
check "the whole compare run found a best row (CSV)" grep -q '^true,' "$work/c5-csv.whole"
check "... (JSON)" grep -q '"best": true' "$work/c5-json.whole"
check "the JSON shards each marked a best of their own, merge kept one" \
    test "$(cat "$work"/c5-json.[1-5] | grep -c '"best": true')" -gt 1 -a \
    "$(grep -c '"best": true' "$work/c5-json.merged")" -eq 1

"$rackplan" merge "$work/r3-csv.1" "$work/r3-csv.1" >/dev/null 2>"$work/err"
check "a shard given twice: exit 3" test $? -eq 3
check "... and says where" grep -q "r3-csv.1:2:1: error: batch .* is also in" "$work/err"
"$rackplan" merge "$work/r3-json.1" "$work/r3-json.1" >/dev/null 2>"$work/err"
check "a JSON shard given twice: exit 3" test $? -eq 3
check "... and says where (the point's line and column)" \
    grep -q "r3-json.1:[0-9]*:5: error: batch .* is also in" "$work/err"
"$rackplan" merge "$work/r3-csv.1" "$work/c5-csv.1" >/dev/null 2>"$work/err"
check "parts of different runs: exit 3" test $? -eq 3
check "... naming the header" grep -q "c5-csv.1:1:1: error: its header differs" "$work/err"
"$rackplan" roofline $dsv3 topologies/gb200-nvl72.xml --sweep 1:100000:50 --context 4096 --format json \
    --shard 2/3 >"$work/r3-json.other"
"$rackplan" merge "$work/r3-json.1" "$work/r3-json.other" >/dev/null 2>"$work/err"
check "JSON roofline parts of runs at different contexts: exit 3" test $? -eq 3
check "... naming the key" grep -q 'r3-json.other:[0-9]*:3: error: "context" differs' "$work/err"
"$rackplan" compare models/kimi-k2.yaml topologies/*.xml --racks 1,2,4 --tpot-ms 30 --format json \
    --shard 2/5 >"$work/c5-json.other"
"$rackplan" merge "$work/c5-json.1" "$work/c5-json.other" >/dev/null 2>"$work/err"
check "JSON compare parts of different models: exit 3" test $? -eq 3
check "... naming the key" grep -q 'c5-json.other:[0-9]*:[0-9]*: error: "model" differs' "$work/err"
"$rackplan" merge "$work/r3-json.1" "$work/r3-csv.2" >/dev/null 2>"$work/err"
check "a CSV part among JSON parts: exit 3" test $? -eq 3
check "... saying so" grep -q "r3-csv.2:1:1: error: CSV, but the first part is JSON" "$work/err"
"$rackplan" merge "$work/r3-json.1" "$work/c5-json.1" >/dev/null 2>"$work/err"
check "a roofline and a compare JSON part: exit 3" test $? -eq 3
"$rackplan" merge --format csv "$work/r3-json.1" >/dev/null 2>"$work/err"
check "--format csv with JSON parts: exit 3" test $? -eq 3
printf '{"points": [\n' >"$work/cut.json"
"$rackplan" merge "$work/cut.json" >/dev/null 2>"$work/err"
check "a cut JSON part: exit 3" test $? -eq 3
check "... with its line and column" grep -q "cut.json:2:1: error:" "$work/err"
printf 'not,a,rackplan,csv\n' >"$work/other.csv"
"$rackplan" merge "$work/other.csv" >/dev/null 2>"$work/err"
check "a CSV of something else: exit 3" test $? -eq 3
"$rackplan" merge "$work/absent.csv" >/dev/null 2>"$work/err"
check "a missing part: exit 5" test $? -eq 5
"$rackplan" compare $dsv3 topologies/gb200-nvl72.xml --shard 1/2 >/dev/null 2>&1
check "--shard in text: usage error" test $? -eq 2
"$rackplan" roofline $dsv3 topologies/gb200-nvl72.xml --sweep 1:10 --format csv --shard 3/2 >/dev/null 2>&1
check "--shard 3/2: usage error" test $? -eq 2
tap_finish
