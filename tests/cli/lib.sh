# lib.sh - helpers of the rlctl shell tests (sourced, not run).
#
# A case runs rlctl once and checks its exit status plus any of: exact
# stdout, substrings of stdout/stderr, Python assertions on JSON output.
#
#   tcase NAME RC [CHECKS...] -- ARGS...
#     --out TEXT        stdout is exactly TEXT (plus one trailing newline;
#                       "" means empty)
#     --out-has TEXT    stdout contains TEXT        --out-lacks TEXT
#     --err-has TEXT    stderr contains TEXT        --err-empty
#     --json EXPR       python3: `d` is the parsed stdout; EXPR is a
#                       statement such as 'assert d["allowed"] is False'
#     --stdin FILE      stdin of rlctl (default /dev/null)
#   tassert NAME CMD... a case that passes when CMD succeeds
#   finish              prints the cmocka-style summary and exits
#
# Each failing case prints one line saying what differed.  The scratch
# directory $W is fresh per test file and removed on exit.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RLCTL=${RLCTL:-${BUILD:-build}/rlctl}
case $RLCTL in /*) ;; *) RLCTL=$ROOT/$RLCTL ;; esac
unset RLSTORE_DB
export LC_ALL=C
W=$(mktemp -d "${TMPDIR:-/tmp}/rlctl-test-XXXXXX") || exit 1
trap 'chmod -R u+w "$W" 2>/dev/null; rm -rf "$W"' EXIT
cd "$W" || exit 1
pass=0
fail=0
OUT=$W/.out
ERR=$W/.err

if [ ! -x "$RLCTL" ]; then
    echo "rlctl not found at $RLCTL"
    echo "[  PASSED  ] 0 test(s)."
    echo "[  FAILED  ] 1 test(s)"
    exit 1
fi

# rl ARGS...: rlctl with output to $OUT/$ERR, for setup steps.
rl() { "$RLCTL" "$@" </dev/null >"$OUT" 2>"$ERR"; }

_report() {  # NAME MESSAGES...
    local name=$1
    shift
    if [ $# -eq 0 ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        local IFS=';'
        echo "FAIL $name:$*"
    fi
}

tcase() {
    local name=$1 want=$2
    shift 2
    local out_set=0 out="" stdin=/dev/null err_empty=0
    local -a outhas=() outlacks=() errhas=() json=() msgs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        case $1 in
        --out) out_set=1; out=$2; shift 2 ;;
        --out-has) outhas+=("$2"); shift 2 ;;
        --out-lacks) outlacks+=("$2"); shift 2 ;;
        --err-has) errhas+=("$2"); shift 2 ;;
        --err-empty) err_empty=1; shift ;;
        --json) json+=("$2"); shift 2 ;;
        --stdin) stdin=$2; shift 2 ;;
        *) echo "tcase: bad check '$1' in $name"; fail=$((fail + 1)); return ;;
        esac
    done
    [ $# -gt 0 ] && shift
    "$RLCTL" "$@" <"$stdin" >"$OUT" 2>"$ERR"
    local rc=$?
    [ "$rc" = "$want" ] || msgs+=(" exit status $rc, expected $want (stderr: $(head -c 300 "$ERR" | tr '\n' ' '))")
    if [ $out_set = 1 ]; then
        if [ -z "$out" ]; then
            [ -s "$OUT" ] && msgs+=(" stdout should be empty, got '$(head -c 200 "$OUT" | tr '\n' '|')'")
        elif ! printf '%s\n' "$out" | cmp -s - "$OUT"; then
            msgs+=(" stdout differs: expected '$(printf '%s' "$out" | tr '\n' '|')', got '$(head -c 400 "$OUT" | tr '\n' '|')'")
        fi
    fi
    local s
    for s in "${outhas[@]+"${outhas[@]}"}"; do
        grep -qF -- "$s" "$OUT" || msgs+=(" stdout lacks '$s' (got '$(head -c 300 "$OUT" | tr '\n' '|')')")
    done
    for s in "${outlacks[@]+"${outlacks[@]}"}"; do
        grep -qF -- "$s" "$OUT" && msgs+=(" stdout contains '$s'")
    done
    for s in "${errhas[@]+"${errhas[@]}"}"; do
        grep -qF -- "$s" "$ERR" || msgs+=(" stderr lacks '$s' (got '$(head -c 300 "$ERR" | tr '\n' ' ')')")
    done
    [ $err_empty = 1 ] && [ -s "$ERR" ] && msgs+=(" stderr not empty: '$(head -c 200 "$ERR")'")
    for s in "${json[@]+"${json[@]}"}"; do
        local perr
        if ! perr=$(python3 -c '
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")
assert text.count("\n") == 1 and text.endswith("\n"), "not exactly one line of JSON"
d = json.loads(text)
exec(sys.argv[2])
' "$OUT" "$s" 2>&1); then
            msgs+=(" json check '$s' failed: $(printf '%s' "$perr" | tail -n 1) (stdout '$(head -c 300 "$OUT")')")
        fi
    done
    _report "$name" "${msgs[@]+"${msgs[@]}"}"
}

tassert() {
    local name=$1
    shift
    if "$@"; then
        _report "$name"
    else
        _report "$name" " '$*' is false"
    fi
}

finish() {
    echo "[  PASSED  ] $pass test(s)."
    if [ "$fail" -gt 0 ]; then
        echo "[  FAILED  ] $fail test(s)"
        exit 1
    fi
    exit 0
}

# A small rule set used by several files.
write_rules() {  # FILE [DAILY_LIMIT]
    cat >"$1" <<YAML
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
      - { name: daily, algorithm: fixed_window, limit: ${2:-3}, window: 1d }
    tiers:
      pro: [ { name: daily, limit: 10 } ]
  login:
    limits:
      - { name: burst, algorithm: fixed_window, limit: 2, window: 1m }
      - { name: hourly, algorithm: sliding_log, limit: 5, window: 1h }
YAML
}
