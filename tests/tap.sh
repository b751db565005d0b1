# tap.sh: sourced by the TAP test scripts. `check WHAT COMMAND...` is one test that passes when
# COMMAND succeeds; `tap_finish` prints the plan and gives the scripts' exit status.
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
