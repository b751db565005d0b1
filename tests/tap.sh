# tap.sh: sourced by the TAP test scripts with their arguments, RACKPLAN SOURCE_ROOT: sets
# $rackplan, moves to the source root and makes $work, a directory removed on exit.
# `check WHAT COMMAND...` is one test that passes when COMMAND succeeds; `tap_finish` prints
# the plan and gives the script's exit status.
#
# RACKPLAN_WRAPPER (environment, empty by default) is a command prefix every run of $rackplan
# goes through, such as valgrind (make test-valgrind). It writes its reports to files named
# $RACKPLAN_WRAPPER_LOG.* (valgrind: --log-file=%q{RACKPLAN_WRAPPER_LOG}.%p), not to stderr,
# so the outputs are still compared as they are; a report that is not empty is a failure,
# of the check `wrapper_clean` runs in (cli_test.sh: each case), else of tap_finish's last.
rackplan=$1
root=$2
cd "$root" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
failed=0
if [ -n "${RACKPLAN_WRAPPER:-}" ]; then
    export RACKPLAN_WRAPPER_LOG="$work/wrapper-log"
    case $rackplan in /*) ;; *) rackplan=$PWD/$rackplan ;; esac
    # a script, so that "$rackplan" stays one word in the scripts and in what they run
    printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$RACKPLAN_WRAPPER" "$rackplan" >"$work/rackplan"
    chmod +x "$work/rackplan"
    rackplan=$work/rackplan
fi
# mask FILE: FILE with the solver's wall-clock seconds, which plan prints and which differ
# from run to run (text "... 0.363 s" at a line's end, JSON "seconds": X, YAML seconds: X),
# replaced by S; nothing else rackplan writes may differ.
mask() { sed -E 's/"seconds": [0-9.e+-]+/"seconds": S/; s/^( *)seconds: [0-9.e+-]+$/\1seconds: S/; s/[0-9]+\.[0-9]+ s$/S s/' "$1"; }
check() {
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $what"; else failed=$((failed + 1)); echo "not ok $n - $what"; fi
}
# wrapper_clean: true when the wrapper reported nothing since the last call; otherwise prints
# the reports as TAP comments. Either way removes them.
wrapper_clean() {
    local report clean=true
    for report in "$work"/wrapper-log.*; do
        [ -e "$report" ] || continue
        if [ -s "$report" ]; then
            clean=false
            head -n 200 "$report" | sed 's/^/# /'
        fi
        rm -f "$report"
    done
    $clean
}
tap_finish() {
    if [ -n "${RACKPLAN_WRAPPER:-}" ]; then
        check "no report from the wrapper, ${RACKPLAN_WRAPPER%% *}" wrapper_clean
    fi
    echo "1..$n"
    [ "$failed" -eq 0 ]
}
