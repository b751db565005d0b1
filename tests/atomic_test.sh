#!/usr/bin/env bash
# Every file rackplan writes (-o, --report .md with its figures and .html, --expert-map .csv and
# .json, --plot) appears whole or not at all, and the files of one run together or not at all
# (reports/sink.c, reports/document.c): a write that
# fails midway exits 5, says which file and why on stderr, and leaves its directory as it was,
# with no temporary file, no partial or new file (no figure of a failed report either) and every
# old file with its old bytes. TAP output.
#
# The failure: a cap on file size (ulimit -f, in KiB) with SIGXFSZ ignored, so that write()
# fails with EFBIG instead of killing rackplan, on outputs several times the cap. It works as
# root too (CI runs as root, whom a read-only directory does not stop; that case is skipped).
set -u
. "$(dirname "$0")/tap.sh" "$@"
qwen=models/qwen3-30b-a3b.yaml
h200=topologies/hgx-h200.xml
cap=8

# state DIR: its files and directories, with each file's checksum
state() { (cd "$1" && find . -mindepth 1 -printf '%y %P\n' | sort && find . -type f -exec md5sum {} + | sort); }
# capped KIB COMMAND...: COMMAND under the cap, stdout discarded (/dev/null is not capped),
# stderr in $work/err, exit code in $work/code
capped() {
    local kib=$1
    shift
    (
        trap '' XFSZ
        ulimit -f "$kib"
        "$@" >/dev/null 2>"$work/err"
    )
    echo $? >"$work/code"
}
bigger_than() { test "$(stat -c %s "$1" 2>/dev/null || echo 0)" -gt $(($2 * 1024)); }
# wrote STATUS FILE KIB: exit 0, FILE larger than KIB and no temporary file beside it
wrote() { test "$1" -eq 0 && bigger_than "$2" "$3" && ! find "$(dirname "$2")" -name '*.tmp.*' | grep -q .; }
# exited STATUS CODE MESSAGE: exit CODE with MESSAGE the line on stderr
exited() { test "$1" -eq "$2" && grep -qxF "$3" "$work/err"; }

# fails_whole NAME DIR FILE KIB COMMAND...: COMMAND fails writing FILE under a cap of KIB and
# leaves DIR as it was
fails_whole() {
    local name=$1 dir=$2 file=$3 kib=$4
    shift 4
    local before
    before=$(state "$dir")
    capped "$kib" "$@"
    check "$name: exits 5" test "$(cat "$work/code")" -eq 5
    check "$name: says on stderr which file and why" \
        grep -qxF "rackplan: unable to write '$file': File too large" "$work/err"
    check "$name: leaves no temporary, partial or new file and old files as they were" \
        test "$before" = "$(state "$dir")"
}

# writes NAME FILE KIB COMMAND...: uncapped, COMMAND writes FILE, larger than KIB so that the
# capped run cannot complete it, and leaves no temporary file
writes() {
    local name=$1 file=$2 kib=$3
    shift 3
    "$@" >/dev/null 2>"$work/err"
    check "$name: uncapped, exits 0 and writes more than $kib KiB" wrote $? "$file" "$kib"
}

# -o, an old file in its place
mkdir "$work/o" "$work/o-ok"
echo old >"$work/o/plan.json"
writes "plan -o" "$work/o-ok/plan.json" $cap "$rackplan" plan $qwen $h200 -o "$work/o-ok/plan.json"
fails_whole "plan -o" "$work/o" "$work/o/plan.json" $cap "$rackplan" plan $qwen $h200 -o "$work/o/plan.json"
echo old >"$work/o/sweep.csv"
sweep=(roofline $qwen $h200 --sweep 1:100000:200)
writes "roofline -o" "$work/o-ok/sweep.csv" $cap "$rackplan" "${sweep[@]}" -o "$work/o-ok/sweep.csv"
fails_whole "roofline -o" "$work/o" "$work/o/sweep.csv" $cap "$rackplan" "${sweep[@]}" -o "$work/o/sweep.csv"

# --expert-map, both forms
for form in csv json; do
    mkdir "$work/map-$form" "$work/map-$form-ok"
    echo old >"$work/map-$form/map.$form"
    writes "--expert-map .$form" "$work/map-$form-ok/map.$form" $cap \
        "$rackplan" plan $qwen $h200 --expert-map "$work/map-$form-ok/map.$form"
    fails_whole "--expert-map .$form" "$work/map-$form" "$work/map-$form/map.$form" $cap \
        "$rackplan" plan $qwen $h200 --expert-map "$work/map-$form/map.$form"
done

# --plot: roofline's, and compare's (smaller, so under a smaller cap)
mkdir "$work/plot" "$work/plot-ok"
echo old >"$work/plot/roofline.svg"
writes "roofline --plot" "$work/plot-ok/roofline.svg" $cap "$rackplan" "${sweep[@]}" --plot "$work/plot-ok/roofline.svg"
fails_whole "roofline --plot" "$work/plot" "$work/plot/roofline.svg" $cap \
    "$rackplan" "${sweep[@]}" --plot "$work/plot/roofline.svg"
echo old >"$work/plot/compare.svg"
versus=(compare $qwen $h200 topologies/gb200-nvl72.xml)
writes "compare --plot" "$work/plot-ok/compare.svg" 4 "$rackplan" "${versus[@]}" --plot "$work/plot-ok/compare.svg"
fails_whole "compare --plot" "$work/plot" "$work/plot/compare.svg" 4 \
    "$rackplan" "${versus[@]}" --plot "$work/plot/compare.svg"

# --report .html: one file with the figures inline
mkdir "$work/html" "$work/html-ok"
echo old >"$work/html/report.html"
writes "--report .html" "$work/html-ok/report.html" $cap "$rackplan" plan $qwen $h200 --report "$work/html-ok/report.html"
fails_whole "--report .html" "$work/html" "$work/html/report.html" $cap \
    "$rackplan" plan $qwen $h200 --report "$work/html/report.html"

# --report .md: the figures before the expert map's fit under a cap the expert map's does not,
# so the failure comes midway, after files of the report were complete
md_cap=16
mkdir "$work/md" "$work/md-ok" "$work/md-old"
writes "--report .md" "$work/md-ok/report-experts.svg" $md_cap \
    "$rackplan" plan $qwen $h200 --report "$work/md-ok/report.md"
check "--report .md: its other files fit under the cap" \
    eval '! bigger_than "$work/md-ok/report.md" $md_cap && ! bigger_than "$work/md-ok/report-memory.svg" $md_cap &&
        ! bigger_than "$work/md-ok/report-batch.svg" $md_cap'
fails_whole "--report .md, none before" "$work/md" "$work/md/report-experts.svg" $md_cap \
    "$rackplan" plan $qwen $h200 --report "$work/md/report.md"
for file in report.md report-memory.svg report-batch.svg report-experts.svg; do
    echo "old $file" >"$work/md-old/$file"
done
fails_whole "--report .md over an older report" "$work/md-old" "$work/md-old/report-experts.svg" $md_cap \
    "$rackplan" plan $qwen $h200 --report "$work/md-old/report.md"

# one run, several files: they appear together or not at all, so a failure after -o (or after
# -o and the expert map) were complete leaves neither
mkdir "$work/run" "$work/run-ok"
echo old >"$work/run/plan.txt"
run=(plan $qwen $h200 -o "$work/run/plan.txt" --expert-map "$work/run/map.csv")
writes "plan -o with --expert-map and --report" "$work/run-ok/report-experts.svg" 24 \
    "$rackplan" plan $qwen $h200 -o "$work/run-ok/plan.txt" --expert-map "$work/run-ok/map.csv" \
    --report "$work/run-ok/report.md"
check "... its -o and expert map fit under 24 KiB, the map not under $md_cap" \
    eval '! bigger_than "$work/run-ok/plan.txt" 24 && ! bigger_than "$work/run-ok/map.csv" 24 &&
        bigger_than "$work/run-ok/map.csv" $md_cap'
fails_whole "plan -o then --expert-map, the map cut" "$work/run" "$work/run/map.csv" $md_cap \
    "$rackplan" "${run[@]}"
fails_whole "plan -o, --expert-map, then --report .md, a figure cut" "$work/run" "$work/run/report-experts.svg" 24 \
    "$rackplan" "${run[@]}" --report "$work/run/report.md"
mkdir -p "$work/run/sweep.svg" "$work/run/compare-batch.svg"
before=$(state "$work/run")
"$rackplan" "${sweep[@]}" -o "$work/run/sweep.csv" --plot "$work/run/sweep.svg" >/dev/null 2>"$work/err"
check "roofline -o, then --plot a directory: exits 5" test $? -eq 5
"$rackplan" "${versus[@]}" -o "$work/run/compare.csv" --format csv --report "$work/run/compare.md" \
    >/dev/null 2>"$work/err"
check "compare -o, then --report .md whose figure's path is a directory: exits 5" test $? -eq 5
check "... and neither leaves its -o" test "$before" = "$(state "$work/run")"

# serve: -o, --plot and --report .md of one run appear together; the report's frontier figure
# whose path is a directory fails the run and leaves neither -o nor the plot
serving=(serve models/deepseek-v3.yaml topologies/gb200-nvl72.xml --isl 1024 --osl 1024 --tpot-ms 50)
mkdir -p "$work/serve" "$work/serve-ok" "$work/serve/serve-frontier.svg"
echo old >"$work/serve/serve.json"
writes "serve -o .json" "$work/serve-ok/serve.json" $cap "$rackplan" "${serving[@]}" -o "$work/serve-ok/serve.json"
fails_whole "serve -o .json" "$work/serve" "$work/serve/serve.json" $cap \
    "$rackplan" "${serving[@]}" -o "$work/serve/serve.json"
before=$(state "$work/serve")
"$rackplan" "${serving[@]}" -o "$work/serve/serve.json" --plot "$work/serve/frontier.svg" \
    --report "$work/serve/serve.md" >/dev/null 2>"$work/err"
check "serve -o, --plot, then --report .md whose figure's path is a directory: exits 5" test $? -eq 5
check "... and leaves neither the -o nor the plot" test "$before" = "$(state "$work/serve")"

# a target that is a directory: refused before anything is written
mkdir -p "$work/dir/plan.json" "$work/dir/report-batch.svg"
before=$(state "$work/dir")
"$rackplan" plan $qwen $h200 -o "$work/dir/plan.json" >/dev/null 2>"$work/err"
check "-o a directory: exits 5" test $? -eq 5
check "... saying so" grep -qxF "rackplan: unable to write '$work/dir/plan.json': Is a directory" "$work/err"
"$rackplan" plan $qwen $h200 --report "$work/dir/report.md" >/dev/null 2>"$work/err"
check "--report .md whose figure's path is a directory: exits 5" test $? -eq 5
check "... saying so" grep -qxF "rackplan: unable to write '$work/dir/report-batch.svg': Is a directory" "$work/err"
check "... and neither leaves a file" test "$before" = "$(state "$work/dir")"

# a directory rackplan may not write in
mkdir "$work/ro"
chmod 555 "$work/ro"
if [ "$(id -u)" -eq 0 ]; then
    n=$((n + 1))
    echo "ok $n - -o in a read-only directory # SKIP root writes there anyway"
else
    "$rackplan" plan $qwen $h200 -o "$work/ro/plan.json" >/dev/null 2>"$work/err"
    check "-o in a read-only directory: exits 5 saying so" \
        exited $? 5 "rackplan: unable to write '$work/ro/plan.json': Permission denied"
    check "... and leaves nothing" test -z "$(ls -A "$work/ro")"
fi
chmod 755 "$work/ro"

"$rackplan" plan $qwen $h200 >/dev/full 2>"$work/err"
check "a full standard output: exits 5" test $? -eq 5
check "... saying so" grep -q "^rackplan: unable to write to standard output: No space left on device" "$work/err"
tap_finish
