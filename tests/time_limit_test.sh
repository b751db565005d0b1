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
tap_finish
