#!/usr/bin/env bash
# Runs every test binary given, prints each suite's outcome and ends with one
# line "N passed, N failed, N skipped" summing the individual tests of every
# suite.  cmocka suites report "[  PASSED  ] N test(s)." and "[  FAILED  ] N
# test(s)"; skipped tests ("[  SKIPPED ] N test(s)") are counted apart,
# neither as passed nor as failed, so that a run that skipped half its tests
# says so in its last line.  A suite that crashes or prints no summary counts as
# one failed test, as does one that neither passes nor skips a test.
# VALGRIND=1 runs each under memcheck (a report fails the suite).  Each
# line ends with the suite's wall-clock seconds, to see where time goes.
#
# Suites run side by side, TEST_JOBS at a time (default: one more than the
# number of processors, at most 4; TEST_JOBS=1 runs them one after the
# other).  A
# suite's line is printed when it ends, so the lines come in the order the
# suites end; each suite's output is kept apart and shown (its last 40
# lines) only when it fails.  Every suite makes its own scratch files
# (mkdtemp), so none sees another's.
#
# The suites after an argument "--pg" run a second time against a throw-away
# PostgreSQL server (tests/pg/server.sh) with RLSTORE_TEST_PG set to the
# base URI of a database of their own on it (server.sh newdb), so that a
# suite that looks at the server's sessions or locks sees only its own;
# their lines are named "pg:<suite>".  When the server binaries are
# missing, one line says the PostgreSQL suites were not run and why, and
# they count for nothing; a server that cannot start when they are there
# counts as one failed test.  An argument "--sqlite" ends such a part: the
# suites after it run on SQLite again (make test puts the PostgreSQL part
# first, where its slowest suites do not end the run alone).
here=$(cd "$(dirname "$0")" && pwd)
unset RLSTORE_TEST_PG   # the suites before "--pg" run on SQLite
passed=0; failed=0; skipped_all=0; bad=""; prefix=""; pgdir=""; pgbase=""; pg_tried=""; skip_rest=0

max=${TEST_JOBS:-}
if [ -z "$max" ]; then
    # one more than the processors: many suites spend much of their time
    # waiting (on fsync, on the server, on sleeps between processes)
    max=$(( $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) + 1 ))
    [ "$max" -gt 4 ] && max=4
fi
case $max in '' | *[!0-9]* | 0) echo "TEST_JOBS must be a number >= 1, not '$max'" >&2; exit 2 ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/rlstore-suites.XXXXXX") || exit 2
declare -A name_of=() start_of=() out_of=()
running=0; seq=0

cleanup() {
    # a suite still running (after a signal) ends with the runner
    for pid in "${!out_of[@]}"; do
        kill -- "$pid" "-$(cat "${out_of[$pid]}.pid" 2>/dev/null)" 2>/dev/null
    done
    wait 2>/dev/null
    if [ -n "$pgdir" ]; then sh "$here/pg/server.sh" stop "$pgdir"; pgdir=""; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Counts a failure that is not a suite's (the server did not start, ...).
fail_setup() {  # NAME WHY-FILE
    sed 's/^/    /' "$2"
    echo "FAIL $1"
    failed=$((failed + 1)); bad="$bad $1"
}

# Starts the server for the suites after "--pg"; sets pgbase and pgdir, or
# prints why not.
start_pg() {
    sh "$here/pg/server.sh" start --owner $$ >"$work/pg.out" 2>"$work/pg.err"
    rc=$?
    if [ "$rc" != 0 ]; then
        if [ "$rc" = 2 ]; then
            echo "skip PostgreSQL suites not run: $(tail -n 1 "$work/pg.err")"
        else
            fail_setup "pg: the PostgreSQL test server did not start" "$work/pg.err"
        fi
        return
    fi
    pgbase=$(sed -n 1p "$work/pg.out")
    pgdir=$(sed -n 2p "$work/pg.out")
}

# Runs suite $1 with its output in $2, then writes its exit status to $2.rc
# (a file, not wait: a job that ends while a command substitution runs can
# be reaped by bash there, and `wait -n` would not see it end).
# The suite runs in a process group of its own, whose id goes to $2.pid:
# cleanup ends it with every process it started.
run_suite() {  # SUITE OUTPUT
    set -m
    if [ "${VALGRIND:-0}" = 1 ]; then
        valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            --child-silent-after-fork=yes "$1" >"$2" 2>&1 </dev/null &
    else
        "$1" >"$2" 2>&1 </dev/null &
    fi
    echo $! >"$2.pid"
    wait $!
    echo $? >"$2.rc.new" && mv "$2.rc.new" "$2.rc"
}

# Starts suite $1 in the background, numbered $seq.
launch() {
    local t=$1 name=$prefix${1#"${BUILD:-build}"/tests/} out=$work/$seq.out
    if [ -n "$prefix" ]; then
        local uri
        if ! uri=$(sh "$here/pg/server.sh" newdb "$pgbase" "rlstore_test_s$seq" 2>"$out"); then
            fail_setup "$name (no database of its own: server.sh newdb)" "$out"
            return
        fi
        # PG_KNOBS: "NAME=VALUE ..." for the suites of this pass only
        ( export RLSTORE_TEST_PG=$uri
          for kv in ${PG_KNOBS:-}; do export "${kv?}"; done
          run_suite "$t" "$out" ) &
    else
        run_suite "$t" "$out" &
    fi
    name_of[$!]=$name; start_of[$!]=$(date +%s); out_of[$!]=$out
    running=$((running + 1))
}

# Waits for one suite to end and prints its line.
reap() {
    local pid="" q p rc f s out name secs skipped=""
    while :; do
        for q in "${!out_of[@]}"; do
            [ -e "${out_of[$q]}.rc" ] && { pid=$q; break 2; }
        done
        sleep 0.1
    done
    wait "$pid" 2>/dev/null
    out=${out_of[$pid]}; name=${name_of[$pid]}; rc=$(cat "$out.rc")
    secs=$(( $(date +%s) - ${start_of[$pid]} ))
    unset "name_of[$pid]" "start_of[$pid]" "out_of[$pid]"
    running=$((running - 1))
    p=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    f=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
    if [ "$p" = 0 ] && [ "$f" = 0 ] && [ "$s" = 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f)); skipped_all=$((skipped_all + s))
    [ "$s" != 0 ] && skipped=", $s skipped"
    if [ "$f" != 0 ]; then
        bad="$bad $name"
        echo "FAIL $name ($p passed, $f failed$skipped, exit $rc) ${secs}s"
        sed 's/^/    /' "$out" | tail -n 40
    else
        echo "ok   $name ($p passed$skipped) ${secs}s"
    fi
    rm -f "$out" "$out.rc" "$out.pid"
}

for t in "$@"; do
    if [ "$t" = --pg ]; then
        [ -z "$pg_tried" ] && start_pg   # once: it sets pgbase, or says why not
        pg_tried=1
        if [ -n "$pgbase" ]; then prefix=pg:; else skip_rest=1; fi
        continue
    fi
    if [ "$t" = --sqlite ]; then
        prefix=""; skip_rest=0
        continue
    fi
    [ "$skip_rest" = 1 ] && continue
    while [ "$running" -ge "$max" ]; do reap; done
    seq=$((seq + 1))
    launch "$t"
done
while [ "$running" -gt 0 ]; do reap; done
[ -n "$bad" ] && echo "failed suites:$bad"
echo "$passed passed, $failed failed, $skipped_all skipped"
[ "$failed" = 0 ]
