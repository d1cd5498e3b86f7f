# lib.sh - helpers of the rltop tests (sourced, not run; bash): the layer
# over tests/suite_lib.sh that drives rltop in tmux.
#
# rltop runs in a private tmux server (its own socket in the scratch
# directory, killed on exit even after a failure) inside a shell, so the tests see what a person sees:
#   tm ARGS...           tmux on the private socket
#   start_pane W H       a pane of W x H running a plain shell
#   txt TEXT             send-keys TEXT literally;  key NAME...: tmux key names
#   screen               the pane's text now
#   wait_for TEXT [S]    polls the pane until TEXT is on it (S seconds, 30)
#   wait_gone TEXT [S]   polls until TEXT is gone
#   check NAME CMD...    a case that passes when CMD succeeds
#   finish               the cmocka-style summary; exit status
#                        (these two, report and the rest: tests/suite_lib.sh)
#   prepare_db DB        rules.yaml (tests/fixtures/rules-live.yaml) applied
#                        to DB, and a few keys in known states
#   test_db NAME         $REPLY = the database for NAME: the file NAME, or
#                        with RLSTORE_TEST_PG (the base URI of a live
#                        PostgreSQL database) the URI of a fresh schema of
#                        it, created with psql and dropped on exit;
#                        RLSTORE_TEST_PG_PREFIX (default t_tui) starts its name
# Each failing case prints one line; a failing wait also shows the screen.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
B=$BUILD_ABS
RLTOP=$B/rltop
RLCTL=$B/rlctl
unset RLSTORE_DB NO_COLOR
export LC_ALL=C.UTF-8
W=$SCRATCH
TM_SOCK=$W/tmux.sock   # a private server; its socket goes with $W
tm() { tmux -S "$TM_SOCK" -f /dev/null "$@"; }
on_exit() { tm kill-server >/dev/null 2>&1; }
cd "$W" || exit 1

for f in "$RLTOP" "$RLCTL"; do
    [ -x "$f" ] || setup_fail "$f not found (run make first)"
done
command -v tmux >/dev/null 2>&1 || setup_fail "tmux is not installed (Debian: apt-get install tmux)"

test_db() {  # NAME
    REPLY=$1
    [ -n "$PG" ] || return 0
    pg_new_schema "${RLSTORE_TEST_PG_PREFIX:-t_tui}" || setup_fail "cannot create a schema in RLSTORE_TEST_PG"
    pg_uri_of "$REPLY"
}

start_pane() {  # W H
    tm new-session -d -s t -x "$1" -y "$2" \
        "env -i PATH='$PATH' HOME='$W' TERM=screen LC_ALL=C.UTF-8 HISTFILE=/dev/null PS1='PROMPT\$ ' bash --norc --noprofile -i"
    wait_for 'PROMPT$' 20 >/dev/null
}

txt() { tm send-keys -t t -l -- "$1"; }
key() { tm send-keys -t t "$@"; }
screen() { tm capture-pane -p -t t 2>/dev/null; }

# A wait ends at its event; its bound only stops a hang, so it is never
# below WAIT_MIN seconds, whatever a caller asks: a loaded machine may take
# long to draw, and that must not fail a test.
WAIT_MIN=${RLS_TEST_WAIT_MIN:-120}
_bound() { if [ "${1:-0}" -gt "$WAIT_MIN" ]; then echo "$1"; else echo "$WAIT_MIN"; fi; }

wait_for() {  # TEXT [SECONDS]: 0 when TEXT is on the screen
    local end=$(( $(date +%s) + $(_bound "${2:-}") ))
    while [ "$(date +%s)" -le "$end" ]; do
        screen | grep -qF -- "$1" && return 0
        sleep 0.1
    done
    return 1
}

wait_gone() {  # TEXT [SECONDS]
    local end=$(( $(date +%s) + $(_bound "${2:-}") ))
    while [ "$(date +%s)" -le "$end" ]; do
        screen | grep -qF -- "$1" || return 0
        sleep 0.1
    done
    return 1
}

# expect NAME TEXT [SECONDS]: a case passing when TEXT shows up in time
expect() {
    if wait_for "$2" "${3:-30}"; then
        report "$1"
    else
        report "$1" "'$2' did not appear; the screen was:"
        screen | sed 's/^/    | /'
    fi
}

expect_gone() {
    if wait_gone "$2" "${3:-30}"; then
        report "$1"
    else
        report "$1" "'$2' did not go away; the screen was:"
        screen | sed 's/^/    | /'
    fi
}

# The shared rule set for the wall clock (tests/fixtures/rules-live.yaml)
# and a few keys in known states.
prepare_db() {  # FILE
    cp "$FIXTURES/rules-live.yaml" rules.yaml || return 1
    "$RLCTL" --db "$1" init rules.yaml >/dev/null || return 1
    local i
    for i in 1 2 3; do "$RLCTL" --db "$1" --quiet check signup 192.0.2.1; done
    "$RLCTL" --db "$1" --quiet check signup 192.0.2.2
    "$RLCTL" --db "$1" --quiet check login alice
    "$RLCTL" --db "$1" --quiet check login alice
    "$RLCTL" --db "$1" --quiet check login bob
    "$RLCTL" --db "$1" --quiet check login "$(printf 'ctl\007key')"
    "$RLCTL" --db "$1" --quiet block 192.0.2.9 --action signup --for 1h --reason "tmux test block"
    return 0
}
