#!/usr/bin/env bash
# CLI golden tests, TAP output. Each case tests/cli/NAME.args holds the arguments (shell words,
# paths relative to the source root); NAME.out, NAME.err and NAME.code hold the expected
# stdout, stderr and exit code. @FILE@ in the arguments is replaced by a temporary path (an
# extension may follow: @FILE@.csv), and the file written there is compared with NAME.file.
# UPDATE_GOLDEN=1 rewrites the expected files. Solver wall-clock seconds (the one value that
# differs between runs) are masked before comparing.
set -u
. "$(dirname "$0")/tap.sh" "$@"
mask() { sed -E 's/"seconds": [0-9.e+-]+/"seconds": S/; s/^( *)seconds: [0-9.e+-]+$/\1seconds: S/; s/[0-9]+\.[0-9]+ s$/S s/' "$1"; }
for args_file in tests/cli/*.args; do
    name=${args_file%.args}
    rm -f "$work"/file "$work"/produced*
    eval "set -- $(sed "s|@FILE@|$work/produced|g" "$args_file")"
    "$rackplan" "$@" >"$work/out" 2>"$work/err" </dev/null
    echo $? >"$work/code"
    # the file the arguments name (a report's figures beside it are not compared)
    extension=$(grep -o '@FILE@[.a-z]*' "$args_file" | head -n 1 | sed 's/@FILE@//')
    [ -e "$work/produced$extension" ] && cp "$work/produced$extension" "$work/file"
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
        mask "$work/$part" >"$work/$part.masked"
        mask "$name.$part" >"$work/$part.expected"
        if ! cmp -s "$work/$part.masked" "$work/$part.expected"; then
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
tap_finish
