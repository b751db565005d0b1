#!/usr/bin/env bash
# CLI golden tests, TAP output. Each case tests/cli/NAME.args holds the arguments (shell words,
# paths relative to the source root); NAME.out, NAME.err and NAME.code hold the expected
# stdout, stderr and exit code. @FILE@ in the arguments is replaced by a temporary path (an
# extension may follow: @FILE@.csv), and the file written there is compared with NAME.file.
# A line of NAME.args that starts with # is a comment (the shell drops it): where the expected
# values come from. @DIR@ is replaced by a temporary directory (--emit's), and every file written
# there is compared with the one of the same name in NAME.dir/, as are the files' set; there, and
# in stdout and stderr, the temporary path reads @WORK@, so the goldens hold no path of this run.
# UPDATE_GOLDEN=1 rewrites the expected files. Solver wall-clock seconds (the one value that
# differs between runs) are masked before comparing (mask, tests/tap.sh). Under
# RACKPLAN_WRAPPER (tests/tap.sh) a case also fails when the wrapper reports anything, and its
# time follows as a TAP comment.
set -u
. "$(dirname "$0")/tap.sh" "$@"
for args_file in tests/cli/*.args; do
    name=${args_file%.args}
    rm -rf "$work"/file "$work"/produced* "$work"/emitted "$work"/dir
    eval "set -- $(sed "s|@FILE@|$work/produced|g; s|@DIR@|$work/emitted|g" "$args_file")"
    # A wrapper as slow as valgrind (10 to 20 times) makes plan's default --time-limit of 60 s
    # cut searches that take seconds plain, and a cut placement differs from the golden; the
    # cap only stops work the work limits would let finish, so lifting it changes nothing else.
    if [ -n "${RACKPLAN_WRAPPER:-}" ] && [ "${1:-}" = plan ] && [ "$(cat "$name.code" 2>/dev/null || echo 2)" -le 1 ] &&
        ! grep -q -- --time-limit "$args_file"; then
        set -- "$@" --time-limit 86400
    fi
    start=$EPOCHREALTIME
    "$rackplan" "$@" >"$work/out" 2>"$work/err" </dev/null
    echo $? >"$work/code"
    seconds=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    # the file the arguments name (a report's figures beside it are not compared)
    extension=$(grep -o '@FILE@[.a-z]*' "$args_file" | head -n 1 | sed 's/@FILE@//')
    [ -e "$work/produced$extension" ] && cp "$work/produced$extension" "$work/file"
    parts="out err code"
    if grep -q @FILE@ "$args_file"; then
        parts="$parts file"
    fi
    emits=false
    if grep -q @DIR@ "$args_file"; then
        emits=true
        sed -i "s|$work|@WORK@|g" "$work/out" "$work/err"
        mkdir "$work/dir"
        for f in "$work"/emitted/*; do
            [ -e "$f" ] && sed "s|$work|@WORK@|g" "$f" >"$work/dir/$(basename "$f")"
        done
    fi
    if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
        for part in $parts; do cp "$work/$part" "$name.$part"; done
        if $emits; then rm -rf "$name.dir" && cp -r "$work/dir" "$name.dir"; fi
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
    if $emits && ! diff -r "$name.dir" "$work/dir" >"$work/dir.diff" 2>&1; then
        problem="$problem dir"
    fi
    reported=
    if [ -n "${RACKPLAN_WRAPPER:-}" ] && ! wrapper_clean; then
        reported="; ${RACKPLAN_WRAPPER%% *} reported the above"
    fi
    if [ -z "$problem$reported" ]; then
        echo "ok $n - ${name#tests/cli/}"
    else
        failed=$((failed + 1))
        echo "not ok $n - ${name#tests/cli/}: differs in${problem:- nothing}$reported"
        for part in $problem; do
            if [ "$part" = dir ]; then
                head -20 "$work/dir.diff" | sed 's/^/# /'
            else
                diff -u "$name.$part" "$work/$part" 2>&1 | head -20 | sed 's/^/# /'
            fi
        done
    fi
    if [ -n "${RACKPLAN_WRAPPER:-}" ]; then
        echo "# ${name#tests/cli/}: $seconds s"
    fi
done
tap_finish
