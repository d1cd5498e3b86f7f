# lib.sh - helpers of the rltop tests (sourced, not run).
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
#   test_db NAME         $REPLY = the database for NAME: the file NAME, or
#                        with RLSTORE_TEST_PG (the base URI of a live
#                        PostgreSQL database) the URI of a fresh schema of
#                        it, created with psql and dropped on exit;
#                        RLSTORE_TEST_PG_PREFIX (default t_tui) starts its name
# Each failing case prints one line; a failing wait also shows the screen.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
RLTOP=$B/rltop
RLCTL=$B/rlctl
unset RLSTORE_DB NO_COLOR
export LC_ALL=C.UTF-8
W=$(mktemp -d "${TMPDIR:-/tmp}/rltop-test-XXXXXX") || exit 1
TM_SOCK=$W/tmux.sock   # a private server; its socket goes with $W
pass=0
fail=0

PG=${RLSTORE_TEST_PG:-}
_pg_schemas=()
tm() { tmux -S "$TM_SOCK" -f /dev/null "$@"; }
cleanup() {
    tm kill-server >/dev/null 2>&1
    if [ ${#_pg_schemas[@]} -gt 0 ]; then
        local list
        list=$(printf '%s, ' "${_pg_schemas[@]}")
        psql -X -q "$PG" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS ${list%, } CASCADE" \
            </dev/null >/dev/null
    fi
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
cd "$W" || exit 1

_report() {  # NAME [MESSAGE]
    if [ $# -lt 2 ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $1: $2"
    fi
}

check() {
    local name=$1
    shift
    if "$@" >/dev/null 2>&1; then _report "$name"; else _report "$name" "'$*' is false"; fi
}

finish() {
    echo "[  PASSED  ] $pass test(s)."
    if [ "$fail" -gt 0 ]; then
        echo "[  FAILED  ] $fail test(s)"
        exit 1
    fi
    exit 0
}

for f in "$RLTOP" "$RLCTL"; do
    if [ ! -x "$f" ]; then
        echo "FAIL setup: $f not found (run make first)"
        echo "[  PASSED  ] 0 test(s)."
        echo "[  FAILED  ] 1 test(s)"
        exit 1
    fi
done
if ! command -v tmux >/dev/null 2>&1; then
    echo "FAIL setup: tmux is not installed (Debian: apt-get install tmux)"
    echo "[  PASSED  ] 0 test(s)."
    echo "[  FAILED  ] 1 test(s)"
    exit 1
fi

test_db() {  # NAME
    REPLY=$1
    [ -n "$PG" ] || return 0
    local schema
    schema=$(printf '%s_%d_%d' "${RLSTORE_TEST_PG_PREFIX:-t_tui}" $$ $((${#_pg_schemas[@]} + 1)))
    if ! psql -X -q "$PG" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema" \
        </dev/null >/dev/null; then
        echo "FAIL setup: cannot create the schema $schema in RLSTORE_TEST_PG"
        return 1
    fi
    _pg_schemas+=("$schema")
    case $PG in *\?*) REPLY="$PG&" ;; *) REPLY="$PG?" ;; esac
    REPLY="${REPLY}options=-csearch_path%3D$schema"
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
        _report "$1"
    else
        _report "$1" "'$2' did not appear; the screen was:"
        screen | sed 's/^/    | /'
    fi
}

expect_gone() {
    if wait_gone "$2" "${3:-30}"; then
        _report "$1"
    else
        _report "$1" "'$2' did not go away; the screen was:"
        screen | sed 's/^/    | /'
    fi
}

# A small rule set and a few keys in known states.
prepare_db() {  # FILE
    cat >rules.yaml <<'YAML'
version: 1
defaults: { tier: free, timezone: UTC }
tiers:
  free: {}
  pro: {}
  vip: { unlimited: true }
actions:
  signup:
    key: ip
    limits:
      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d }
    tiers:
      pro: [ { name: daily, limit: 10 } ]
  login:
    limits:
      - name: burst
        algorithm: fixed_window
        limit: 4
        window: 1h
      - { name: hourly, algorithm: sliding_log, limit: 5, window: 1h }
YAML
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
