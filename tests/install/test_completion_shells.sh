#!/bin/sh
# tests/install/test_completion_shells.sh - rlctl's zsh and fish
# completions, generated from rlctl's command table (completions/gen.sh
# reads `rlctl --help`), tried in the real shells: fish answers `complete
# -C LINE` without a terminal; zsh completes only in its line editor, so it
# runs interactively in tmux, Tab is typed and the screen read.  Every
# command of the help is offered, and each one's options; values of a set
# (--sort), action and tier names from the database of --db, subcommands
# and files.  A shell that is not installed skips its part in one line.
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh

RLCTL=$BUILD_ABS/rlctl
[ -x "$RLCTL" ] || setup_fail "$RLCTL is not built"
W=$SCRATCH
help=$("$RLCTL" --help)
commands=$(printf '%s\n' "$help" | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p' | sort -u)
[ "$(echo "$commands" | wc -l)" -ge 25 ] && pass || fail "parsed only $(echo "$commands" | wc -l) commands from the help"

sh completions/gen.sh zsh "$RLCTL" >"$W/_rlctl"
sh completions/gen.sh fish "$RLCTL" >"$W/rlctl.fish"
sh completions/gen.sh ksh "$RLCTL" >/dev/null 2>"$W/err"
[ $? = 2 ] && grep -q "unknown format 'ksh'" "$W/err" && pass || fail "gen.sh ksh: not refused"
"$RLCTL" --db "$W/demo.db" init examples/demo.yaml >/dev/null 2>&1 || setup_fail "rlctl init failed"
touch "$W/rules.yaml"

# ---- fish ---------------------------------------------------------------------
# fish_comp LINE: what fish offers (first column), sorted
fish_comp() {
    (cd "$W" && PATH="$BUILD_ABS:$PATH" fish --no-config -c \
        "source $W/rlctl.fish; complete -C '$1'" 2>&1) | cut -f1 | sort
}
# fish_expect NAME LINE WORDS...: fish offers exactly WORDS
fish_expect() {
    _n=$1 _l=$2
    shift 2
    got=$(fish_comp "$_l" | tr '\n' ' ')
    want=""
    [ $# -gt 0 ] && want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
    if [ "$got" = "$want" ]; then pass; else fail "fish: $_n: '$_l' offers '$got', expected '$want'"; fi
}
if command -v fish >/dev/null 2>&1; then
    fish --no-config -n "$W/rlctl.fish" 2>"$W/err" && pass || fail_lines "fish: the completion does not parse" "$W/err"
    # shellcheck disable=SC2086
    fish_expect "every command of the help" "rlctl " $commands
    fish_expect "a prefix" "rlctl ov" override
    fish_expect "--sort values from the help" "rlctl usage --sort " used key reset denied
    fish_expect "actions of --db" "rlctl --db demo.db check " api login mail.send signup
    fish_expect "check's ACTION KEY pairs: the third word is an action" \
        "rlctl --db demo.db check api k1 " api login mail.send signup
    fish_expect "a KEY is free text" "rlctl --db demo.db check api "
    fish_expect "subcommands" "rlctl tier " list set unset
    fish_expect "tiers of --db" "rlctl --db demo.db tier set user:1 " banned free pro staff
    fish_expect "versions of --db" "rlctl --db demo.db rollback " 1
    fish_expect "files for apply" "rlctl apply ru" rules.yaml
    # each command's options, as the help lists them, plus the global ones
    globals=$(printf '%s\n' "$help" | sed -n '/^Global options/,/^$/p' | sed -n 's/^  \(--[a-z-]*\).*/\1/p')
    miss=""
    for c in $commands; do
        line=$(printf '%s\n' "$help" | sed -n "s/^  $c \(.*\)/\1/p" | head -n 1)
        case $line in [a-z]*) continue ;; esac   # subcommands: below
        got=$(fish_comp "rlctl $c --")
        for o in $(printf '%s\n' "$line" | grep -o '\[--[a-z-]*' | tr -d '[') $globals; do
            printf '%s\n' "$got" | grep -qx -- "$o" || miss="$miss $c:$o"
        done
    done
    [ -z "$miss" ] && pass || fail "fish: options not offered:$miss"
else
    skip "fish completion" "fish is not installed"
fi

# ---- zsh, interactive in tmux -------------------------------------------------
S=rlcomp$$
on_exit() { tmux kill-session -t "$S" 2>/dev/null; }
screen() { tmux capture-pane -p -t "$S" 2>/dev/null; }
# zsh_wait TEXT: 0 once TEXT is on the screen (polls, up to 30 s)
zsh_wait() {
    i=0
    while [ $i -lt 300 ]; do
        screen | grep -qF -- "$1" && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
# zsh_expect NAME LINE TEXT...: typing LINE and Tab shows every TEXT
zsh_expect() {
    _n=$1 _l=$2
    shift 2
    tmux send-keys -t "$S" C-c
    tmux send-keys -t "$S" "clear" Enter
    zsh_wait "PROMPT>" || { fail "zsh: $_n: no prompt"; return; }
    tmux send-keys -t "$S" -l "$_l"
    tmux send-keys -t "$S" Tab
    _miss=""
    for t in "$@"; do zsh_wait "$t" || _miss="$_miss '$t'"; done
    [ -z "$_miss" ] && pass ||
        fail "zsh: $_n: '$_l<Tab>' did not show$_miss: $(screen | grep . | tr '\n' '|')"
}
if command -v zsh >/dev/null 2>&1 && command -v tmux >/dev/null 2>&1; then
    mkdir -p "$W/zf" "$W/zdot"
    cp "$W/_rlctl" "$W/zf/_rlctl"
    cat >"$W/zdot/.zshrc" <<EOF
fpath=($W/zf \$fpath)
autoload -Uz compinit && compinit -u -D
zstyle ':completion:*' list-rows-first true
PS1='PROMPT> '
EOF
    tmux new-session -d -s "$S" -x 200 -y 50 \
        "cd '$W' && env PATH='$BUILD_ABS:$PATH' ZDOTDIR='$W/zdot' HOME='$W/zdot' zsh -i" ||
        setup_fail "tmux cannot start zsh"
    zsh_wait "PROMPT>" || setup_fail "zsh shows no prompt: $(screen | tr '\n' '|')"
    zsh_expect "a unique prefix completes" "rlctl ov" "rlctl override"
    zsh_expect "commands" "rlctl re" refund reserve reset
    zsh_expect "--sort values from the help" "rlctl usage --sort " used key reset denied
    zsh_expect "actions of --db" "rlctl --db demo.db check " api login mail.send signup
    zsh_expect "tiers of --db" "rlctl --db demo.db tier set user:1 " banned free pro staff
    zsh_expect "subcommands" "rlctl override " set unset list
    zsh_expect "options of a command" "rlctl usage --" --action --key --top --sort --json
    zsh_expect "files for apply" "rlctl apply ru" "rlctl apply rules.yaml"
else
    skip "zsh completion" "zsh or tmux is not installed"
fi
finish
