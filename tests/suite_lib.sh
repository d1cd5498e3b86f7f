# tests/suite_lib.sh - the one harness of the shell suites (sourced, not
# run; POSIX sh: dash runs it, and bash for tests/cli and tests/tui, whose
# lib.sh add what only they need).  Source it from the top of the tree:
#     cd "$(dirname "$0")/../.." || exit 2
#     . tests/suite_lib.sh
#
# Paths: ROOT (the top of the tree, the working directory when sourced),
# BUILD (default build) and BUILD_ABS (absolute), FIXTURES (tests/fixtures:
# the rule sets the tool suites share, see its README), SCRATCH (a fresh
# directory of this suite, removed on exit).
#
# Counting, one test a call:
#   pass [N]              N (default 1) passed tests, silently
#   fail_quiet [N]        N (default 1) failed tests whose lines the suite
#                         printed itself
#   ok NAME               a passed test, shown as "ok   NAME"
#   fail TEXT...          a failed test, shown as one line "FAIL: TEXT"
#   bad NAME [FILE]       a failed test, "FAIL NAME" and FILE's last 30 lines
#   fail_lines WHAT FILE  a failed test, "FAIL: WHAT: LINE" per line of FILE
#   report NAME [MSG...]  passed without MSG, else failed: "FAIL NAME: MSG; MSG"
#   check NAME CMD...     passed when CMD exits 0, else failed with the last
#                         lines CMD printed (its output goes nowhere else)
#   skip NAME [WHY]       a skipped test, shown as "skip NAME[: WHY]"
#   skip_all N WHY        N tests skipped: the suite ends (exit 0)
#   setup_fail TEXT       the suite cannot run: one failed test, then finish
#   finish                the summary lines below; exits 0 when none failed
# The summary lines are cmocka's, which tests/run_suites.sh adds up:
#   [  PASSED  ] N test(s).
#   [  SKIPPED ] N test(s).                 (when N > 0)
#   [  FAILED  ] N test(s), listed above    (when N > 0)
# No suite counts or prints these lines on its own (tests/lint.sh checks).
#
# PostgreSQL: PG is RLSTORE_TEST_PG, the base URI of a live server's
# database (no password in it: PGPASSWORD or ~/.pgpass), or empty.
#   pg_reachable          psql reaches PG
#   pg_new_schema PREFIX  a fresh schema of PG for one test database, named
#                         PREFIX_<pid>_<nnn> (zero-padded: no schema's URI
#                         is a prefix of another's); $REPLY = its name.  It
#                         is dropped on exit.  Status 1 (after one line)
#                         when psql cannot create it.
#   pg_uri_of SCHEMA      $REPLY = the URI that opens PG in SCHEMA
# On exit, on_exit runs first (a suite or a layer may define it to stop
# what it started), then the schemas are dropped and SCRATCH removed.

ROOT=$(pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) BUILD_ABS=$BUILD ;; *) BUILD_ABS=$ROOT/$BUILD ;; esac
FIXTURES=$ROOT/tests/fixtures
PG=${RLSTORE_TEST_PG:-}
passed=0
failed=0
skipped=0
_pg_schemas=""
_pg_n=0

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/rlstore-$(basename "$0" .sh).XXXXXX") || exit 2
on_exit() { :; }
_suite_exit() {
    on_exit
    if [ -n "$_pg_schemas" ]; then
        psql -X -q "$PG" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS ${_pg_schemas%, } CASCADE" \
            </dev/null >/dev/null
    fi
    # a test may have left a read-only directory in it
    chmod -R u+w "$SCRATCH" 2>/dev/null
    rm -rf "$SCRATCH"
}
trap _suite_exit EXIT
trap 'exit 130' INT TERM HUP

pass() { passed=$((passed + ${1:-1})); }
fail_quiet() { failed=$((failed + ${1:-1})); }
ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() {
    failed=$((failed + 1))
    printf 'FAIL: %s\n' "$*" | tr -d '\r' | head -n 1
}
bad() {
    failed=$((failed + 1))
    echo "FAIL $1"
    [ -n "${2:-}" ] && sed 's/^/    /' "$2" | tail -n 30
    return 0
}
# (printf, not echo: dash's echo would interpret backslashes.)
fail_lines() {  # WHAT FILE
    failed=$((failed + 1))
    while IFS= read -r _l; do printf 'FAIL: %s: %s\n' "$1" "$_l"; done <"$2"
}
report() {  # NAME [MSG...]: each MSG may start with one space
    _rn=$1
    shift
    if [ $# -eq 0 ]; then
        passed=$((passed + 1))
        return 0
    fi
    _rm=
    for _m in "$@"; do
        _rm="$_rm${_rm:+; }${_m# }"
    done
    failed=$((failed + 1))
    printf 'FAIL %s: %s\n' "$_rn" "$_rm"
}
check() {  # NAME CMD...
    _cn=$1
    shift
    if "$@" >"$SCRATCH/.check" 2>&1; then
        passed=$((passed + 1))
    else
        fail "$_cn ('$*' failed: $(tail -n 3 "$SCRATCH/.check" | tr '\n' ' ' | cut -c1-300))"
    fi
}
skip() {  # NAME [WHY]
    skipped=$((skipped + 1))
    echo "skip $1${2:+: $2}"
}
skip_all() {  # N WHY
    skipped=$((skipped + $1))
    echo "skip $2"
    finish
}
setup_fail() {
    fail "setup: $*"
    finish
}
finish() {
    echo "[  PASSED  ] $passed test(s)."
    [ "$skipped" -gt 0 ] && echo "[  SKIPPED ] $skipped test(s)."
    if [ "$failed" -gt 0 ]; then
        echo "[  FAILED  ] $failed test(s), listed above"
        exit 1
    fi
    exit 0
}

pg_reachable() {
    command -v psql >/dev/null 2>&1 && psql -X -q "$PG" -c "SELECT 1" </dev/null >/dev/null
}
pg_new_schema() {  # PREFIX
    _pg_n=$((_pg_n + 1))
    REPLY=$(printf '%s_%d_%03d' "$1" $$ "$_pg_n")
    if ! psql -X -q "$PG" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $REPLY CASCADE; CREATE SCHEMA $REPLY" \
        </dev/null >/dev/null; then
        echo "suite_lib.sh: cannot create the schema $REPLY in RLSTORE_TEST_PG"
        return 1
    fi
    _pg_schemas="$_pg_schemas$REPLY, "
}
pg_uri_of() {  # SCHEMA
    case $PG in *\?*) REPLY="$PG&" ;; *) REPLY="$PG?" ;; esac
    REPLY="${REPLY}options=-csearch_path%3D$1"
}
