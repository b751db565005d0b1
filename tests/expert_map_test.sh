#!/usr/bin/env bash
# The JSON expert map loads in a serving engine as it is (issue 18): SGLang's
# --init-expert-location takes {"physical_to_logical_map": rows} and
# ExpertLocationMetadata.init_by_mapping checks that there is one row per model layer
# (num_hidden_layers, indexed by layer id), that the physical slots divide by the EP size and
# that every logical expert has a slot in every layer. This script makes the maps rackplan
# writes pass those checks, holds the CSV to one row per MoE layer (EPLB's form), and reads
# SGLang's record of expert loads (logical_count) with --loads. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"

# engine_checks MAP LAYERS EXPERTS EP: the engine's checks on MAP, plus rackplan's own: dense
# layers (DeepSeek's first 3) hold expert i in slot i mod E
engine_checks() {
    python3 - "$@" <<'PY'
import json, sys
path, layers, experts, ep, dense = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rows = json.load(open(path))["physical_to_logical_map"]
width = len(rows[0])
problems = []
if len(rows) != layers:
    problems.append(f"{len(rows)} rows, not one per model layer ({layers})")
if any(len(r) != width for r in rows):
    problems.append("rows of different lengths")
if width % ep:
    problems.append(f"{width} physical slots do not divide by EP {ep}")
for i, r in enumerate(rows):
    if set(r) != set(range(experts)):
        problems.append(f"layer {i}: not every logical expert 0..{experts - 1} has a slot, or one is out of range")
        break
for i in range(dense):
    if rows[i] != [k % experts for k in range(width)]:
        problems.append(f"dense layer {i} is not the trivial row")
print("# " + ("; ".join(problems) if problems else f"{len(rows)} rows of {width} slots"))
sys.exit(1 if problems else 0)
PY
}

"$rackplan" plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv \
    --expert-map "$work/dsv3.json" >/dev/null
check "DeepSeek-V3 on GB200 NVL72: --expert-map .json exits 0" test $? -eq 0
# 61 model layers (3 dense, 58 MoE), 256 experts, EP 72
check "... 61 rows (3 dense, trivial), 256 experts each, slots divide by EP 72" engine_checks "$work/dsv3.json" 61 256 72 3

"$rackplan" plan models/deepseek-v3.yaml topologies/hgx-h800.xml --racks 8 --ep 64 --loads loads/dsv3_load.csv \
    --redundant 64 --expert-map "$work/h800.json" >/dev/null
check "DeepSeek-V3 on 8 H800 nodes with 64 spare slots: --expert-map .json exits 0" test $? -eq 0
check "... 61 rows, every expert placed, 320 slots divide by EP 64" engine_checks "$work/h800.json" 61 256 64 3

"$rackplan" plan models/kimi-k2.yaml topologies/gb300-nvl72.xml --loads loads/kimik2_load.csv --redundant 48 \
    --batch 1024 --expert-map "$work/kimi.json" >/dev/null
# Kimi K2: 61 layers, the first dense, 384 experts
check "Kimi K2 on GB300 NVL72: 61 rows (1 dense), 384 experts, slots divide by EP 72" \
    engine_checks "$work/kimi.json" 61 384 72 1

"$rackplan" plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv \
    --expert-map "$work/dsv3.csv" >/dev/null
check "the CSV keeps one row per MoE layer (58), EPLB's form" test "$(wc -l <"$work/dsv3.csv")" -eq 58

# --loads reads SGLang's own record: {"logical_count": ...} with one row per model layer (the 3
# dense ones zero), here with a leading dimension of two ranks that each saw part of the CSV's
# counts; summed over the ranks it is the CSV, so the plan is the same file
python3 - loads/dsv3_load.csv "$work/count.json" <<'PY'
import json, sys
rows = [[int(float(v)) for v in line.split(",")] for line in open(sys.argv[1]) if line.strip()]
layers = [[0] * len(rows[0])] * 3 + rows
json.dump({"logical_count": [[[v // 2 for v in r] for r in layers], [[v - v // 2 for v in r] for r in layers]]},
          open(sys.argv[2], "w"))
PY
"$rackplan" plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads "$work/count.json" --format json \
    >"$work/from-count.json"
check "--loads reads a logical_count JSON (61 layers x 256 experts over 2 ranks)" test $? -eq 0
"$rackplan" plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv --format json \
    >"$work/from-csv.json"
check "... and plans exactly as from the CSV it sums to" cmp -s "$work/from-count.json" "$work/from-csv.json"
tap_finish
