#!/usr/bin/env bash
# The shipped calibration (issue 8): rackplan calibrate on calibration/measurements.yaml keeps
# every bound at or above its measurement and most left-out estimates within 25% (issue 17), the
# topology files carry exactly the rows it fits,
# and --estimate on a calibration deployment gives the estimate calibrate reports. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"

"$rackplan" calibrate calibration/measurements.yaml --format json >"$work/fit.json" 2>"$work/err"
check "calibrate on the shipped measurements exits 0" test $? -eq 0
check "... with every bound at or above its measurement" \
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not all(m["bound"] >= m["measured"] and m["bound_at_or_above"] for m in d["measurements"]))' "$work/fit.json"
check "... and every estimate and left-out estimate a number" \
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not all(m["estimate"] > 0 and m["left_out"] >= 0 for m in d["measurements"]))' "$work/fit.json"
# issue 17: left out one at a time, the estimate is within 25% of most measurements (18 of 30
# when the kernels of a step were first run in sequence; the README table lists them)
check "... and most left-out estimates within 25% of their measurement" \
    python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["measurements"]; sys.exit(not 2 * sum(abs(x["left_out_error"]) <= 0.25 for x in m) > len(m))' "$work/fit.json"

# the rows in topologies/ are what the fit gives now: rewrite a copy and compare
mkdir "$work/tree"
cp -r topologies models calibration tools "$work/tree/"
(cd "$work/tree" && python3 tools/apply_calibration.py "$rackplan" "$work/fit.json") 2>"$work/err"
check "the topology files carry exactly the rows calibrate fits (tools/apply_calibration.py)" \
    diff -r topologies "$work/tree/topologies"

# --estimate on the DeepSeek H800 decode deployment reproduces calibrate's estimate (decode
# alone there: PD-disaggregated)
"$rackplan" roofline models/deepseek-v3.yaml topologies/hgx-h800.xml --racks 18 --tp 1 --context 4989 \
    --batch 18432 --estimate --format json >"$work/roofline.json"
check "roofline --estimate gives calibrate's estimate for deepseek-h800-decode" \
    python3 -c '
import json, sys
fit = {m["id"]: m for m in json.load(open(sys.argv[1]))["measurements"]}["deepseek-h800-decode"]
point = json.load(open(sys.argv[2]))["points"][0]
sys.exit(not (abs(point["tokens_per_s_per_device"] / fit["estimate"] - 1) < 1e-9 and
              abs(point["roofline_bound"]["tokens_per_s_per_device"] / fit["bound"] - 1) < 1e-9))' \
    "$work/fit.json" "$work/roofline.json"

# a topology without rows: --estimate is a usage error naming the file
sed '/<efficiency /d' topologies/hgx-h100.xml >"$work/bare.xml"
"$rackplan" roofline models/llama-3.1-70b.yaml "$work/bare.xml" --estimate >/dev/null 2>"$work/err"
status=$?
check "--estimate on a topology without <efficiency> rows exits 2" test $status -eq 2
check "... saying which file and what to do" grep -q "bare.xml has no calibrated <efficiency> for bf16 weights" "$work/err"
"$rackplan" roofline models/llama-3.1-70b.yaml "$work/bare.xml" >/dev/null 2>&1
check "... and without --estimate the bound needs none" test $? -eq 0
tap_finish
