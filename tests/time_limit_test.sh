#!/usr/bin/env bash
# A plan the --time-limit cap cut must say so (its placement depends on the machine's speed),
# and one the cap did not cut must not. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"
# 144 devices x 61 layers of local search take seconds; 1 ms cannot hold them.
case_b=(plan models/deepseek-v3.yaml topologies/hgx-h800.xml --racks 18 --ep 144 --loads loads/dsv3_load.csv)
text=$("$rackplan" "${case_b[@]}" --time-limit 0.001)
check "a cut plan exits 0" test $? -eq 0
check "a cut plan says so in text" grep -q "stopped at --time-limit 0.001 s" <<<"$text"
json=$("$rackplan" "${case_b[@]}" --time-limit 0.001 --format json)
check "a cut plan's solver status is time_limit" grep -q '"status": "time_limit"' <<<"$json"
text=$("$rackplan" plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv)
check "an uncut plan does not mention the cap" bash -c '! grep -q "stopped at --time-limit" <<<"$1"' _ "$text"
# Layers begun after the cap are dealt without search, and the plan says how many: 4,608 GPUs
# x 58 MoE layers cannot all be searched in 1 ms.
big=(plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --racks 64 --time-limit 0.001)
text=$("$rackplan" "${big[@]}")
check "a cut plan on 4,608 GPUs exits 0" test $? -eq 0
check "a cut plan names the layers it dealt" grep -Eq "^  [1-9][0-9]* of 58 layers began after the limit and were dealt" <<<"$text"
json=$("$rackplan" "${big[@]}" --format json)
check "a cut plan's JSON counts its dealt layers" grep -Eq '"dealt_layers": [1-9]' <<<"$json"
check "a plan the cap did not cut dealt no layer" bash -c '"$1" plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --format json | grep -q "\"dealt_layers\": 0,"' _ "$rackplan"
tap_finish
