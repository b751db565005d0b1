#!/usr/bin/env bash
# The HTML reports render: headless Chromium draws each to a PNG, which must not be blank (some
# share of its pixels differ from the background, in many colours), and the page must load
# nothing from elsewhere. TAP output. RENDER_DIR keeps the PNGs to look at.
set -u
. "$(dirname "$0")/tap.sh" "$@"
keep=${RENDER_DIR:-$work}
mkdir -p "$keep"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
render() { # page.html picture.png
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --user-data-dir="$work/profile" --window-size=1280,3200 --screenshot="$2" "file://$1" \
        >/dev/null 2>&1 && [ -s "$2" ]
}
not_blank() { # picture.png: at least 5% ink in at least 16 colours
    local stats
    stats=$(python3 tests/png_ink.py "$1") || return 1
    echo "# $1: $stats"
    awk '{ exit !($2 >= 0.05 && $4 >= 16) }' <<<"$stats"
}
self_contained() { ! grep -Eq '(src|href)=|@import|url\(' "$1"; }

"$rackplan" plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv \
    --report "$work/plan.html" >/dev/null
check "plan --report writes HTML" test -s "$work/plan.html"
"$rackplan" compare models/deepseek-v3.yaml topologies/gb200-nvl72.xml topologies/hgx-h200.xml \
    topologies/vr200-nvl144.xml --tpot-ms 50 --report "$work/compare.html" >/dev/null
check "compare --report writes HTML" test -s "$work/compare.html"
"$rackplan" serve models/deepseek-v3.yaml topologies/gb200-nvl72.xml --isl 1024 --osl 1024 --tpot-ms 50 \
    --report "$work/serve.html" >/dev/null
check "serve --report writes HTML" test -s "$work/serve.html"
"$rackplan" compare models/deepseek-v3.yaml topologies/gb200-nvl72.xml topologies/hgx-h200.xml \
    topologies/tpu7x-ironwood-pod.xml --isl 1024 --osl 1024 --tpot-ms 50 --report "$work/serving.html" >/dev/null
check "compare --isl --osl --report writes HTML" test -s "$work/serving.html"
for page in plan compare serve serving; do
    check "$page report loads nothing from elsewhere" self_contained "$work/$page.html"
    if [ -z "$browser" ]; then
        check "$page report renders (no Chromium: install the chromium package)" false
        continue
    fi
    check "$page report renders in headless Chromium" render "$work/$page.html" "$keep/$page.png"
    check "$page report's picture is not blank" not_blank "$keep/$page.png"
done
tap_finish
