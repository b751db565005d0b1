# tap.sh: sourced by the TAP test scripts with their arguments, RACKPLAN SOURCE_ROOT: sets
# $rackplan, moves to the source root and makes $work, a directory removed on exit.
# `check WHAT COMMAND...` is one test that passes when COMMAND succeeds; `tap_finish` prints
# the plan and gives the script's exit status.
rackplan=$1
root=$2
cd "$root" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
failed=0
check() {
    local what=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $what"; else failed=$((failed + 1)); echo "not ok $n - $what"; fi
}
tap_finish() {
    echo "1..$n"
    [ "$failed" -eq 0 ]
}
