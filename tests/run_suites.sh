#!/bin/sh
# Runs every test binary given, prints each suite's outcome and ends with one
# line "N passed, N failed" summing the individual tests of every suite.
# cmocka suites report "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)";
# skipped tests ("[  SKIPPED ] N test(s)") are shown but counted neither as
# passed nor as failed.  A suite that crashes or prints no summary counts as
# one failed test, as does one that neither passes nor skips a test.
# VALGRIND=1 runs each under memcheck (a report fails the suite).  Each
# line ends with the suite's wall-clock seconds, to see where time goes.
#
# The suites after an argument "--pg" run a second time against a throw-away
# PostgreSQL server (tests/pg/server.sh) with RLSTORE_TEST_PG set to the
# base URI of its database; their lines are named "pg:<suite>".  When the
# server binaries are missing, one line says the PostgreSQL suites were not
# run and why, and they count for nothing; a server that cannot start when
# they are there counts as one failed test.
here=$(cd "$(dirname "$0")" && pwd)
unset RLSTORE_TEST_PG   # the suites before "--pg" run on SQLite
passed=0; failed=0; bad=""; prefix=""; pgdir=""; skip_rest=0
out=$(mktemp)
cleanup() {
    rm -f "$out" "$out.err"
    if [ -n "$pgdir" ]; then sh "$here/pg/server.sh" stop "$pgdir"; pgdir=""; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Starts the server for the suites after "--pg"; sets RLSTORE_TEST_PG.
start_pg() {
    sh "$here/pg/server.sh" start --owner $$ >"$out" 2>"$out.err"
    rc=$?
    if [ "$rc" != 0 ]; then
        why=$(tail -n 1 "$out.err")
        if [ "$rc" = 2 ]; then
            echo "skip PostgreSQL suites not run: $why"
        else
            sed 's/^/    /' "$out.err"
            echo "FAIL pg: the PostgreSQL test server did not start"
            failed=$((failed + 1)); bad="$bad pg:server"
        fi
        rm -f "$out.err"
        skip_rest=1
        return
    fi
    rm -f "$out.err"
    RLSTORE_TEST_PG=$(sed -n 1p "$out")
    pgdir=$(sed -n 2p "$out")
    export RLSTORE_TEST_PG
    # PG_KNOBS: "NAME=VALUE ..." for the suites of this pass only
    for kv in ${PG_KNOBS:-}; do export "$kv"; done
    prefix=pg:
}

for t in "$@"; do
    if [ "$t" = --pg ]; then
        start_pg
        continue
    fi
    [ "$skip_rest" = 1 ] && continue
    t0=$(date +%s)
    if [ "${VALGRIND:-0}" = 1 ]; then
        valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --child-silent-after-fork=yes \
            "$t" >"$out" 2>&1; rc=$?
    else
        "$t" >"$out" 2>&1; rc=$?
    fi
    p=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    f=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
    if [ "$p" = 0 ] && [ "$f" = 0 ] && [ "$s" = 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
    name=$prefix${t#"${BUILD:-build}"/tests/}
    skipped=""
    [ "$s" != 0 ] && skipped=", $s skipped"
    secs=$(( $(date +%s) - t0 ))
    if [ "$f" != 0 ]; then
        bad="$bad $name"
        echo "FAIL $name ($p passed, $f failed$skipped, exit $rc) ${secs}s"
        sed 's/^/    /' "$out" | tail -n 40
    else
        echo "ok   $name ($p passed$skipped) ${secs}s"
    fi
done
[ -n "$bad" ] && echo "failed suites:$bad"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
