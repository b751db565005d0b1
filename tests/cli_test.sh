#!/usr/bin/env bash
# CLI golden tests, TAP output. Each case tests/cli/NAME.args holds the arguments (shell words,
# paths relative to the source root); NAME.out, NAME.err and NAME.code hold the expected
# stdout, stderr and exit code. An argument @FILE@ is replaced by a temporary path, and the file
# written there is compared with NAME.file. UPDATE_GOLDEN=1 rewrites the expected files.
set -u
rackplan=$1
root=$2
cd "$root" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
failed=0
for args_file in tests/cli/*.args; do
    name=${args_file%.args}
    rm -f "$work/file"
    eval "set -- $(sed "s|@FILE@|$work/file|g" "$args_file")"
    "$rackplan" "$@" >"$work/out" 2>"$work/err" </dev/null
    echo $? >"$work/code"
    parts="out err code"
    if grep -q @FILE@ "$args_file"; then
        parts="$parts file"
    fi
    if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
        for part in $parts; do cp "$work/$part" "$name.$part"; done
    fi
    n=$((n + 1))
    problem=
    for part in $parts; do
        if ! cmp -s "$work/$part" "$name.$part"; then
            problem="$problem $part"
        fi
    done
    if [ -z "$problem" ]; then
        echo "ok $n - ${name#tests/cli/}"
    else
        failed=$((failed + 1))
        echo "not ok $n - ${name#tests/cli/}: differs in$problem"
        for part in $problem; do
            diff -u "$name.$part" "$work/$part" 2>&1 | head -20 | sed 's/^/# /'
        done
    fi
done
echo "1..$n"
[ "$failed" -eq 0 ]
