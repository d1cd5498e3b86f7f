#!/bin/sh
# tests/install/test_completion.sh - completions/rlctl.bash against
# `rlctl --help`, so the completion cannot drift from the command table:
# the commands, the subcommands, each command's options (plus the global
# ones) and its positional arguments must be what the help lists.  Also the
# dynamic completions (actions, tiers and versions read from the database
# of --db or $RLSTORE_DB), option values, file names, and that words of the
# command line are never evaluated.  Needs bash.
. "$(dirname "$0")/suite.sh"

COMP=$ROOT/completions/rlctl.bash
RLCTL=$BUILD_ABS/rlctl
[ -x "$RLCTL" ] || { fail "$RLCTL is not built (run make)"; finish; }
command -v bash >/dev/null 2>&1 || { fail "bash is not installed"; finish; }
bash -n "$COMP" 2>"$TMP/err" && pass || { fail "$COMP: $(head -n 1 "$TMP/err")"; finish; }

# comp LINE: the completions bash would offer with the cursor at the end of
# LINE (words split at blanks; a trailing blank starts an empty word),
# sorted, one per line.  Runs in $TMP/cwd.
mkdir -p "$TMP/cwd"
comp() {
    (cd "$TMP/cwd" && PATH="$BUILD_ABS:$PATH" bash -c '
        . "$1" || exit 1
        line=$2
        read -ra COMP_WORDS <<<"$line"
        [[ $line == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE=$line
        COMP_POINT=${#line}
        _rlctl rlctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        ((${#COMPREPLY[@]})) && printf "%s\n" "${COMPREPLY[@]}" | sort
        exit 0' _ "$COMP" "$1")
}
# expect NAME LINE WORDS...: comp LINE offers exactly WORDS
expect() {
    _name=$1 _line=$2
    shift 2
    printf '%s\n' "$@" | sed '/^$/d' | sort >"$TMP/want"
    comp "$_line" >"$TMP/got" 2>&1
    if cmp -s "$TMP/want" "$TMP/got"; then
        pass
    else
        fail "$_name: '$_line' offers '$(tr '\n' ' ' <"$TMP/got")', expected '$(tr '\n' ' ' <"$TMP/want")'"
    fi
}

comp "rlctl " | grep -q . || { fail "the completion offers nothing: $(comp 'rlctl ' 2>&1 | head -n 1)"; finish; }
bash -c '. "$1" && complete -p rlctl' _ "$COMP" | grep -q -- '-F _rlctl rlctl$' && pass ||
    fail "the completion does not register _rlctl for rlctl"

# ---- the command table, from the help --------------------------------------------
"$RLCTL" --help >"$TMP/help" 2>&1
sed -n '/^Commands:/,/^$/p' "$TMP/help" | grep '^  [a-z]' | sed 's/^  //' >"$TMP/entries"
[ "$(wc -l <"$TMP/entries")" -ge 25 ] && pass || fail "parsed only $(wc -l <"$TMP/entries") commands from rlctl --help"
globals=$(sed -n '/^Global options/,/^$/p' "$TMP/help" | sed -n 's/^  \(--[a-z-]*\).*/\1/p' | tr '\n' ' ')
[ -n "$globals" ] && pass || fail "no global options found in rlctl --help"

# shellcheck disable=SC2046
expect "commands" "rlctl " $(cut -d' ' -f1 "$TMP/entries" | sort -u)
expect "commands after a global option" "rlctl --db x.db --json " $(cut -d' ' -f1 "$TMP/entries" | sort -u)
expect "command prefix" "rlctl ov" override

bad_args=
while IFS= read -r entry; do
    # options: the "[--name" groups; positional arguments: the other words
    opts=$(printf '%s\n' "$entry" | grep -o '\[--[a-z-]*' | tr -d '[' | tr '\n' ' ')
    set -- $(printf '%s\n' "$entry" | sed 's/\[--[^]]*\]//g' | tr -d '[]')
    cmd=$1
    shift
    sub=
    # a lower-case second word is a subcommand
    case ${1:-} in [a-z]*) sub=$1; shift ;; esac
    args=$*
    full="rlctl $cmd${sub:+ $sub}"
    # shellcheck disable=SC2086
    expect "options of '$cmd${sub:+ $sub}'" "$full --" $opts $globals
    kinds=$(bash -c '. "$1"; _rlctl_args "$2"' _ "$COMP" "$cmd${sub:+ $sub}")
    [ "$(echo $kinds)" = "$(echo $args)" ] || bad_args="$bad_args [$cmd${sub:+ $sub}: help '$(echo $args)', completion '$(echo $kinds)']"
done <"$TMP/entries"
[ -z "$bad_args" ] && pass || fail "positional arguments differ from the help:$bad_args"
for c in $(awk '$2 ~ /^[a-z]/ { print $1 }' "$TMP/entries" | sort -u); do
    # shellcheck disable=SC2046
    expect "subcommands of $c" "rlctl $c " $(awk -v c="$c" '$1 == c { print $2 }' "$TMP/entries")
done

# ---- values and dynamic completions -------------------------------------------------
db=$TMP/cwd/demo.db
"$RLCTL" --db "$db" init examples/demo.yaml >/dev/null 2>&1 || fail "rlctl init failed"
"$RLCTL" --db "$db" --quiet apply examples/demo.yaml --force --comment again >/dev/null 2>&1
# shellcheck disable=SC2046
expect "--sort values, as the help lists them" "rlctl usage --sort " \
    $(sed -n 's/.*--sort \([a-z|]*\)\].*/\1/p' "$TMP/help" | head -n 1 | tr '|' ' ')
expect "actions of --db" "rlctl --db $db check " api login mail.send signup
expect "actions, --db=PATH" "rlctl --db=$db explain s" signup
expect "actions, --db after the command" "rlctl reset --db $db m" mail.send
expect "--action values" "rlctl --db $db usage --action " api login mail.send signup
expect "tiers" "rlctl --db $db tier set user:1 " banned free pro staff
expect "versions" "rlctl --db $db rollback " 1 2
expect "override set: ACTION" "rlctl --db $db override set " api login mail.send signup
expect "override set: KEY is free text" "rlctl --db $db override set api "
expect "help COMMAND" "rlctl help ch" check
out=$(RLSTORE_DB=$db comp "rlctl check l")
[ "$out" = login ] && pass || fail "RLSTORE_DB is not used for the action names: '$out'"
expect "no database, no names" "rlctl --db $TMP/none.db check "
touch "$TMP/cwd/rules.yaml"
expect "files for --db" "rlctl --db ru" rules.yaml
expect "files for apply" "rlctl --db $db apply r" rules.yaml
expect "after --, no options" "rlctl -- --"
# Words of the command line are never evaluated.
comp 'rlctl --db $(:>pwned) check ' >/dev/null 2>&1
comp 'rlctl --db `:>pwned2` check ' >/dev/null 2>&1
comp 'rlctl --db=$(:>pwned3) check ' >/dev/null 2>&1
[ ! -e "$TMP/cwd/pwned" ] && [ ! -e "$TMP/cwd/pwned2" ] && [ ! -e "$TMP/cwd/pwned3" ] && pass ||
    fail "the completion evaluated a word of the command line"

finish
