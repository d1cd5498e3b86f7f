# lib.sh - helpers of the rlctl shell tests (sourced, not run; bash): the
# layer over tests/suite_lib.sh (counting, summary, scratch directory,
# PostgreSQL schemas) for the suites that run rlctl.
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
#                       (suite_lib.sh, as are report, skip and the rest)
#   write_rules FILE [N] the shared rule set tests/fixtures/rules.yaml,
#                       the daily limit of signup set to N (default 3)
#
# Each failing case prints one line saying what differed.  The scratch
# directory $W (suite_lib.sh's SCRATCH) is the working directory, fresh per
# test file and removed on exit.
#
# PostgreSQL: with RLSTORE_TEST_PG set to the base URI of a live server's
# database (no password in it: use PGPASSWORD or ~/.pgpass), every test
# database becomes a fresh schema of it.  The names the tests give --db
# (and RLSTORE_DB) stay file names: tcase and rl pass rlctl
# <base>?options=-csearch_path%3D<schema> instead, the schema created with
# psql at the first use of the name and dropped on exit, and turn that URI
# in rlctl's output back into the name, so the same expectations hold for
# both backends.  RLSTORE_TEST_PG_PREFIX (default t_cli) starts the schema
# names.  Helpers:
#   db_of NAME          $REPLY = what --db NAME means (for running rlctl
#                       directly); prints nothing
#   db_exists NAME      the database exists (a file; the schema's rlstore
#                       tables)            db_absent NAME: it does not
#   sqlite_only REASON  the cases up to end_sqlite_only are about SQLite
#                       files: with PostgreSQL each is reported as skipped
#                       (never as passed) and rl does nothing
#   pg_only REASON      the cases up to end_pg_only need PostgreSQL: skipped
#                       without it
#   skipping            true inside a skipped part
#   NODB_RC, NODB_MSG   exit status and message of a command on a database
#                       that does not exist
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
RLCTL=${RLCTL:-$BUILD/rlctl}
case $RLCTL in /*) ;; *) RLCTL=$ROOT/$RLCTL ;; esac
unset RLSTORE_DB
export LC_ALL=C
W=$SCRATCH
PG_PREFIX=${RLSTORE_TEST_PG_PREFIX:-t_cli}
declare -A _pg_schema=()   # test database name -> schema
cd "$W" || exit 1
_skip_reason=
OUT=$W/.out
ERR=$W/.err

[ -x "$RLCTL" ] || setup_fail "rlctl not found at $RLCTL"
if [ -n "$PG" ]; then
    pg_reachable || setup_fail "RLSTORE_TEST_PG is set but psql cannot reach that database"
fi
case $PG in *\?*) _pg_sep='&' ;; *) _pg_sep='?' ;; esac   # test_uri.sh
NODB_RC=3
NODB_MSG="no such database"

db_of() {  # NAME: $REPLY = what --db NAME means in this mode
    REPLY=$1
    if [ -z "$PG" ] || [ -n "$_skip_reason" ]; then return 0; fi
    case $1 in postgres://* | postgresql://*) return 0 ;; esac
    local schema=${_pg_schema[$1]-}
    if [ -z "$schema" ]; then
        # zero-padded: no URI is a prefix of another one (see _pg_unmap)
        pg_new_schema "$PG_PREFIX" || echo "lib.sh: no schema for '$1'"
        schema=$REPLY
        _pg_schema[$1]=$schema
    fi
    pg_uri_of "$schema"
}

# _rlctl ARGS...: rlctl with the test's database names (--db, RLSTORE_DB)
# turned into their URIs in PostgreSQL mode; output as the caller redirects.
_rlctl() {
    if [ -z "$PG" ]; then
        "$RLCTL" "$@"
        return
    fi
    local -a a=()
    local x prev= opts=1 env_db=${RLSTORE_DB-}
    for x in "$@"; do
        if [ $opts = 1 ]; then
            if [ "$prev" = --db ]; then
                db_of "$x"
                x=$REPLY
            elif [ "${x#--db=}" != "$x" ]; then
                db_of "${x#--db=}"
                x=--db=$REPLY
            elif [ "$x" = -- ]; then
                opts=0
            fi
        fi
        a+=("$x")
        prev=$x
    done
    if [ -n "$env_db" ]; then
        db_of "$env_db"
        RLSTORE_DB=$REPLY "$RLCTL" "${a[@]}"
    else
        "$RLCTL" "${a[@]}"
    fi
}

# _pg_unmap FILE: the URIs of the test's databases, as rlctl shows them,
# back to the names the test gave.
_pg_unmap() {
    [ -n "$PG" ] && [ -s "$1" ] && grep -qF "://" "$1" || return 0
    local text name
    IFS= read -r -d '' text <"$1"
    for name in "${!_pg_schema[@]}"; do
        pg_uri_of "${_pg_schema[$name]}"
        text=${text//"$REPLY"/"$name"}
    done
    printf '%s' "$text" >"$1"
}

# Number of tables in the schema of NAME ($REPLY; 0 if it has none).
_pg_tables() {
    REPLY=0
    local schema=${_pg_schema[$1]-}
    [ -n "$schema" ] || return 0
    REPLY=$(psql -X -At "$PG" -c "SELECT count(*) FROM pg_tables WHERE schemaname = '$schema'" </dev/null)
}

db_exists() {  # NAME
    if [ -z "$PG" ]; then
        test -e "$1"
        return
    fi
    _pg_tables "$1"
    [ "$REPLY" -gt 0 ]
}

db_absent() {  # NAME
    ! db_exists "$1"
}

skipping() { [ -n "$_skip_reason" ]; }
sqlite_only() { [ -z "$PG" ] || _skip_reason="with PostgreSQL: $1"; }
end_sqlite_only() { _skip_reason=; }
pg_only() { [ -n "$PG" ] || _skip_reason="without PostgreSQL (RLSTORE_TEST_PG): $1"; }
end_pg_only() { _skip_reason=; }

_skip() {  # NAME
    skip "$1" "$_skip_reason"
}

# rl ARGS...: rlctl with output to $OUT/$ERR, for setup steps (nothing in
# a skipped part).
rl() {
    if skipping; then
        : >"$OUT"
        : >"$ERR"
        return 0
    fi
    _rlctl "$@" </dev/null >"$OUT" 2>"$ERR"
    local rc=$?
    _pg_unmap "$OUT"
    _pg_unmap "$ERR"
    return $rc
}

tcase() {
    local name=$1 want=$2
    shift 2
    if skipping; then
        _skip "$name"
        return
    fi
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
        *) report "$name" " tcase: bad check '$1'"; return ;;
        esac
    done
    [ $# -gt 0 ] && shift
    _rlctl "$@" <"$stdin" >"$OUT" 2>"$ERR"
    local rc=$?
    _pg_unmap "$OUT"
    _pg_unmap "$ERR"
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
    report "$name" "${msgs[@]+"${msgs[@]}"}"
}

tassert() {
    local name=$1
    shift
    if skipping; then
        _skip "$name"
        return
    fi
    if "$@"; then
        report "$name"
    else
        report "$name" " '$*' is false"
    fi
}

# A small rule set used by several files: the shared fixture
# (tests/fixtures/rules.yaml), its daily limit of signup set to DAILY_LIMIT.
write_rules() {  # FILE [DAILY_LIMIT]
    sed "s/^\(      - { name: daily, .* limit: \)3,/\1${2:-3},/" "$FIXTURES/rules.yaml" >"$1"
}

AS=()
OTHER_RLCTL=$RLCTL
OTHER_SKIP=
# other_user: prepares running rlctl as a user without this one's rights,
# for the tests of permissions.  Sets AS (the command prefix: as root,
# setpriv to nobody; otherwise empty, the modes then do the work) and
# OTHER_RLCTL (the rlctl that user runs).  Another user may not reach the
# build directory (a checkout in root's home or under `mktemp -d` is mode
# 0700), so as root rlctl and its library are copied into $W/.bin, and $W
# is made traversable.  Returns 1, with OTHER_SKIP saying why in one line,
# when that user cannot run it.
other_user() {
    AS=()
    OTHER_RLCTL=$RLCTL
    OTHER_SKIP=
    [ "$(id -u)" = 0 ] || return 0
    if ! command -v setpriv >/dev/null; then
        OTHER_SKIP="running as root without setpriv (util-linux) to become nobody"
        return 1
    fi
    AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
    local bin=$W/.bin lib
    lib=$(dirname "$RLCTL")/librlstore.so.0
    # (and the PostgreSQL driver module, found beside the library)
    drv=$(dirname "$RLCTL")/rlstore/rlstore-pg.so
    if [ ! -d "$bin" ]; then
        mkdir -m 755 "$bin" && cp "$RLCTL" "$bin/rlctl" && cp -L "$lib" "$bin/" &&
            { [ ! -f "$drv" ] || { mkdir -m 755 "$bin/rlstore" && cp "$drv" "$bin/rlstore/"; }; } &&
            chmod 755 "$W" "$bin/rlctl" && chmod 644 "$bin/librlstore.so.0" || {
            OTHER_SKIP="cannot copy rlctl and $lib into $bin"
            return 1
        }
    fi
    OTHER_RLCTL=$bin/rlctl
    if ! "${AS[@]}" "$OTHER_RLCTL" --version >/dev/null 2>&1; then
        OTHER_SKIP="user nobody cannot run $OTHER_RLCTL (is ${TMPDIR:-/tmp} closed to other users?)"
        return 1
    fi
    return 0
}
