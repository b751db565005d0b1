#!/usr/bin/env bash
# The man page and the bash completion against the binary, TAP output: a command or an option
# added to rackplan without them fails here. Run as tests/doc_test.sh BUILD/rackplan SOURCE_ROOT.
#
# A command's options are the long options of its usage and "options:" lines, not of its prose:
# a description may name another command's options ("merge joins the outputs of --shard runs").
set -u
rackplan=$1
root=$2
cd "$root" || exit 1
man=doc/rackplan.1
completion=doc/rackplan.bash
n=0
failed=0

# check DESCRIPTION PROBLEM: ok when PROBLEM is empty; otherwise PROBLEM's lines follow as comments.
check() {
    n=$((n + 1))
    if [ -z "$2" ]; then
        echo "ok $n - $1"
    else
        failed=$((failed + 1))
        echo "not ok $n - $1"
        printf '%s\n' "$2" | head -20 | sed 's/^/# /'
    fi
}

# The man page's text as a reader sees it, so that "\-\-format" is found as "--format".
plain() {
    sed -E 's/\\[%&]//g; s/\\-/-/g; s/\\f(\[[^]]*\]|\(..|.)//g'
}

# The body of the .SS of command $1 under COMMANDS, up to the next heading.
man_section() {
    awk -v cmd="$1" '
        /^\.S[HS]([ \t]|$)/ { inside = $0 ~ ("^\\.SS[ \t]+\"?(rackplan[ \t]+)?" cmd "([ \t\"]|$)"); next }
        inside' "$man" | plain
}

# What _rackplan offers for the words given (the last is the one being completed), one a line.
complete_words() {
    (
        # shellcheck source=/dev/null
        source "$completion" || exit 1
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        _rackplan
        printf '%s\n' "${COMPREPLY[@]}"
    ) 2>&1
}

# The long options a command's help defines: its usage lines and its options block.
help_options() {
    awk '/^usage:/ { keep = 1 } /^$/ { keep = 0 } /^options:/ { keep = 1 } /^exit codes:/ { keep = 0 } keep' |
        grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

# The formats a command's help names for --format, in its usage ("--format text|json") and on
# its option line ("--format F  text (default), json or yaml").
help_formats() {
    sed -nE 's/.*--format ([a-z]+(\|[a-z]+)+).*/\1/p; s/^ +--format F +//p' |
        sed -E 's/\([^)]*\)//g' | tr -s ' |,' '\n' | grep -vxE 'or|' | sort -u
}

commands=$("$rackplan" --help | awk '/^commands:/ { keep = 1; next } /^$/ { keep = 0 } keep { print $1 }')
check "rackplan --help lists commands" "$([ -n "$commands" ] || echo "no command found under 'commands:'")"

check "bash -n $completion" "$(bash -n "$completion" 2>&1)"
check "$completion registers _rackplan for rackplan" \
    "$(bash -c 'source "$1" && complete -p rackplan' _ "$completion" 2>&1 | grep -v -- '-F _rackplan rackplan$')"

offered=$(complete_words rackplan "")
for cmd in $commands; do
    problem=
    grep -qxF -- "$cmd" <<<"$offered" || problem="'rackplan <TAB>' offers: $(tr '\n' ' ' <<<"$offered")"
    check "completion offers the command $cmd" "$problem"

    section=$(man_section "$cmd")
    check "$man has a .SS for $cmd" "$([ -n "$section" ] || echo "no '.SS $cmd' under COMMANDS")"

    help=$("$rackplan" "$cmd" --help 2>&1)
    status=$?
    check "rackplan $cmd --help exits 0" "$([ "$status" -eq 0 ] || echo "exit $status: $help")"

    options=$(help_options <<<"$help")
    missing_man=
    missing_completion=
    offered_options=$(complete_words rackplan "$cmd" -)
    for option in $options; do
        grep -qE -- "(^|[^a-z0-9-])$option([^a-z0-9-]|\$)" <<<"$section" ||
            missing_man="$missing_man $option"
        grep -qxF -- "$option" <<<"$offered_options" || missing_completion="$missing_completion $option"
    done
    check "every option of rackplan $cmd --help is in its section of $man" \
        "${missing_man:+missing:$missing_man}"
    check "every option of rackplan $cmd --help is completed" \
        "${missing_completion:+missing:$missing_completion}"

    if grep -q -- '--format' <<<"$options"; then
        offered_formats=$(complete_words rackplan "$cmd" --format "")
        missing=
        for format in $(help_formats <<<"$help"); do
            grep -qxF -- "$format" <<<"$offered_formats" || missing="$missing $format"
        done
        check "every format rackplan $cmd --help names is completed" "${missing:+missing:$missing}"
        # --format is parsed before --help, so a format the command refuses is a usage error
        refused=
        for format in $offered_formats; do
            "$rackplan" "$cmd" --format "$format" --help >/dev/null 2>&1 || refused="$refused $format"
        done
        check "rackplan $cmd takes every format completion offers" "${refused:+refused:$refused}"
    fi
done

# The exit codes are what planner/cli.h's enum exit_code says, whatever its order.
codes=$(sed -n '/^enum exit_code {/,/^};/p' planner/cli.h | sed -nE 's/^ *EXIT_[A-Z_]+ *= *([0-9]+).*/\1/p')
check "planner/cli.h's enum exit_code has codes" "$([ -n "$codes" ] || echo "no 'EXIT_X = N' in enum exit_code")"
# The tags of the .TP entries under EXIT STATUS.
listed=$(awk '/^\.SH/ { inside = $0 ~ /^\.SH[ \t]+"?EXIT STATUS"?[ \t]*$/; next }
              inside && after_tp { print } { after_tp = inside && /^\.TP/ }' "$man" |
    plain | sed -E 's/^\.[A-Z]+[ \t]+//; s/"//g')
missing=
for code in $codes; do
    grep -qxF -- "$code" <<<"$listed" || missing="$missing $code"
done
check "every exit code of planner/cli.h is under EXIT STATUS" "${missing:+missing:$missing}"
extra=
for code in $listed; do
    grep -qxF -- "$code" <<<"$codes" || extra="$extra $code"
done
check "EXIT STATUS lists no code planner/cli.h lacks" "${extra:+not in enum exit_code:$extra}"

if command -v groff >/dev/null 2>&1; then
    check "groff -man -Tutf8 -ww -z $man has no warning" "$(groff -man -Tutf8 -ww -z "$man" 2>&1)"
else
    n=$((n + 1))
    echo "ok $n - groff -man -Tutf8 -ww -z $man has no warning # SKIP groff not installed"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
