#!/usr/bin/env bash
# Determinism: every command, run twice on the same shipped inputs, writes the same bytes: its
# stdout, stderr and exit code, and every file it writes (the -o file, a report and the figures
# beside it, the expert map, a plot). The one exception is the solver's wall-clock seconds,
# which plan's text prints (and its JSON and YAML with --timings); they are masked as
# tests/cli_test.sh masks them (mask, tests/tap.sh), except in the unmasked JSON and YAML check.
# Placements are decided by work limits, not by the clock (--time-limit only caps them), so
# nothing else may differ. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"
dsv3=models/deepseek-v3.yaml
gb200=topologies/gb200-nvl72.xml

# same A B: the masked files A and B are equal; otherwise their first differences are comments
same() {
    if cmp -s <(mask "$1") <(mask "$2"); then
        return 0
    fi
    diff <(mask "$1") <(mask "$2") | head -n 6 | cut -c 1-200 | sed "s|^|# ${2##*/}: |"
    return 1
}

# twice NAME ARGS...: rackplan ARGS run twice, both times with @DIR@ in ARGS an empty directory
# at the same path (an output may name its own path), then one check that the first run exited
# 0 and the second wrote the same
twice() {
    local name=$1 run part file
    shift
    local runs=$work/run-$((n + 1))
    for run in 1 2; do
        rm -rf "$work/out"
        mkdir "$work/out"
        "$rackplan" "${@//@DIR@/$work/out}" >"$runs.$run.stdout" 2>"$runs.$run.stderr" </dev/null
        echo $? >"$runs.$run.code"
        mv "$work/out" "$runs.$run"
    done
    local problem=
    [ "$(cat "$runs.1.code")" -eq 0 ] || problem="; exit $(cat "$runs.1.code")"
    for part in stdout stderr code; do
        same "$runs.1.$part" "$runs.2.$part" || problem="$problem; $part differs"
    done
    local written
    written=$(cd "$runs.1" && find . -type f -printf '%P\n' | sort)
    if [ "$written" != "$(cd "$runs.2" && find . -type f -printf '%P\n' | sort)" ]; then
        problem="$problem; the files written differ"
        diff <(echo "$written") <(cd "$runs.2" && find . -type f -printf '%P\n' | sort) | sed 's/^/# files: /'
    else
        for file in $written; do
            same "$runs.1/$file" "$runs.2/$file" || problem="$problem; $file differs"
        done
    fi
    check "$name: the same twice${written:+ (and $(echo $written))}$problem" test -z "$problem"
}

for model in models/*.yaml; do
    twice "model $(basename "$model" .yaml)" model "$model"
done
twice "model --format yaml" model $dsv3 --format yaml -o @DIR@/model.yaml
for topology in topologies/*.xml; do
    twice "topo $(basename "$topology" .xml)" topo "$topology"
done
twice "topo --format dot" topo topologies/hgx-h800.xml --racks 4 --format dot -o @DIR@/cluster.dot
twice "topo --format json" topo $gb200 --format json
twice "fit" fit $dsv3 $gb200 --context 32768 --batch 1024
twice "fit -o .yaml" fit models/kimi-k2.yaml topologies/hgx-h200.xml --racks 4 -o @DIR@/fit.yaml
twice "roofline --sweep --plot" roofline $dsv3 $gb200 --sweep 1:100000:50 --plot @DIR@/roofline.svg
twice "roofline --phase prefill -o .csv" roofline $dsv3 topologies/hgx-h200.xml --phase prefill --sweep 1:64:9 \
    -o @DIR@/prefill.csv --plot @DIR@/prefill.svg
twice "plan --loads --trace --expert-map .csv --report .md -o .json" \
    plan $dsv3 topologies/hgx-h800.xml --racks 8 --ep 64 --loads loads/dsv3_load.csv \
    --trace loads/dsv3_topk.csv.gz --expert-map @DIR@/map.csv --report @DIR@/report.md -o @DIR@/plan.json
twice "plan --redundant auto --expert-map .json --report .html" \
    plan $dsv3 $gb200 --loads loads/dsv3_load.csv --redundant auto --expert-map @DIR@/map.json \
    --report @DIR@/report.html
twice "plan --time-limit 0 (no ILP) --format yaml" \
    plan $dsv3 $gb200 --loads loads/dsv3_load.csv --time-limit 0 --format yaml
twice "plan, dense model, pipeline stages" plan models/llama-3.1-405b.yaml topologies/hgx-h100.xml --racks 4
twice "calibrate" calibrate tests/data/calibration/small.yaml
twice "roofline --estimate" roofline $dsv3 topologies/hgx-h800.xml --racks 18 --estimate --batch 4096
twice "compare --plot --report .md" compare $dsv3 topologies/*.xml --racks 1,2 --tpot-ms 50 \
    --plot @DIR@/compare.svg --report @DIR@/compare.md
twice "compare --domain-sizes --plot --report .html" compare $dsv3 $gb200 --domain-sizes 8,72,144,576 \
    --tpot-ms 50 --plot @DIR@/domains.svg --report @DIR@/domains.html
for format in json yaml csv md; do
    twice "compare --format $format" compare models/qwen3-235b-a22b.yaml topologies/*.xml --racks 1,4 \
        --format $format
done
twice "serve --plot --report .md -o .json" serve $dsv3 $gb200 --isl 1024 --osl 1024 --tpot-ms 50 \
    --plot @DIR@/frontier.svg --report @DIR@/serve.md -o @DIR@/serve.json
twice "serve --estimate --rate --format yaml" serve $dsv3 topologies/hgx-h200.xml --isl 8192 --osl 1024 \
    --ttft-ms 2000 --tpot-ms 100 --rate 20 --estimate --format yaml
twice "serve --prefill-topology --report .html" serve $dsv3 $gb200 --prefill-topology topologies/hgx-b200.xml \
    --isl 4096 --osl 512 --report @DIR@/hetero.html
twice "compare --isl --osl --plot --report .md" compare $dsv3 topologies/*.xml --isl 1024 --osl 1024 --tpot-ms 50 \
    --estimate --plot @DIR@/serving.svg --report @DIR@/serving.md
for format in json csv; do
    twice "compare --isl --osl --format $format" compare models/qwen3-235b-a22b.yaml topologies/*.xml \
        --isl 2048 --osl 512 --format $format
done
twice "roofline --isl --osl --estimate" roofline $dsv3 $gb200 --isl 1024 --osl 1024 --sweep 1:20000:9 --estimate

# plan's JSON and YAML carry no clock unless --timings asks: two runs give the same bytes, not
# masked (a plan kept in git changes only when the plan does)
for format in json yaml; do
    for run in 1 2; do
        "$rackplan" plan $dsv3 topologies/hgx-h800.xml --racks 8 --ep 64 --loads loads/dsv3_load.csv \
            --trace loads/dsv3_topk.csv.gz --format $format >"$work/plan-$run.$format" 2>/dev/null
    done
    check "plan --format $format twice: the same bytes, unmasked" cmp -s "$work/plan-1.$format" "$work/plan-2.$format"
    check "... with no solver seconds in them" eval '! grep -q seconds "$work/plan-1.$format"'
done
"$rackplan" plan $dsv3 $gb200 --loads loads/dsv3_load.csv --format json --timings >"$work/timed.json"
check "plan --timings puts the solver's seconds back" grep -q '"seconds": ' "$work/timed.json"

# merge: the parts written once, merged twice
for i in 1 2 3; do
    "$rackplan" compare $dsv3 topologies/*.xml --racks 1,2 --tpot-ms 50 --shard $i/3 -o "$work/part-$i.json"
    "$rackplan" roofline $dsv3 $gb200 --sweep 1:100000:50 --shard $i/3 -o "$work/part-$i.csv"
done
twice "merge JSON parts" merge "$work/part-3.json" "$work/part-1.json" "$work/part-2.json" -o @DIR@/merged.json
twice "merge CSV parts" merge "$work/part-2.csv" "$work/part-1.csv" "$work/part-3.csv"
tap_finish
