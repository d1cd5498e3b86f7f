#!/bin/bash
# tests/meta/test_run_suites.sh - the runner of make test (tests/run_suites.sh)
# on made-up suites, since every other count rests on it: passed, failed
# and skipped tests add up as documented; a crash, a missing summary or a
# suite that runs nothing counts as one failure and shows its output; the
# exit status follows; suites really run side by side (two that each wait
# for the other would never end one at a time) and TEST_JOBS=1 runs them
# one at a time; "--pg" without server binaries says so once and counts
# nothing, "--sqlite" runs the suites after it again; a runner stopped by a
# signal leaves no suite's process behind.  With PostgreSQL's
# binaries, the suites of the "--pg" part each get a database of their own
# and PG_KNOBS, the others neither.  Summary lines are cmocka's.
cd "$(dirname "$0")/../.." || exit 2
runner=tests/run_suites.sh
. tests/suite_lib.sh
tmp=$SCRATCH

# suite NAME BODY: a made-up suite, a script running BODY
suite() {
    printf '#!/bin/sh\n%s\n' "$2" >"$tmp/$1"
    chmod +x "$tmp/$1"
}
suite pass3 'echo "[  PASSED  ] 3 test(s)."'
suite mixed 'echo "[  PASSED  ] 2 test(s)."; echo "[  SKIPPED ] 4 test(s)."
echo "[  FAILED  ] 1 test(s), listed above"; echo "the reason of mixed"; exit 1'
suite skips 'echo "[  SKIPPED ] 2 test(s)."'
suite crash 'echo "[  PASSED  ] 5 test(s)."; echo "crash output"; kill -SEGV $$'
suite silent 'echo "nothing to count"'
suite exit1 'echo "[  PASSED  ] 1 test(s)."; exit 3'
# each waits (up to 300 s) for the other's file: only side by side do both pass
suite ping 'touch "$(dirname "$0")/ping.here"; i=0
while [ ! -e "$(dirname "$0")/pong.here" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$(dirname "$0")/pong.here" ] && echo "[  PASSED  ] 1 test(s)." || echo "[  FAILED  ] 1 test(s)"'
suite pong 'touch "$(dirname "$0")/pong.here"; i=0
while [ ! -e "$(dirname "$0")/ping.here" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$(dirname "$0")/ping.here" ] && echo "[  PASSED  ] 1 test(s)." || echo "[  FAILED  ] 1 test(s)"'
# what a suite sees of the database it is given and of PG_KNOBS
suite env 'echo "uri=${RLSTORE_TEST_PG:-none} knob=${RLS_TEST_KNOB:-none}"; echo "[  PASSED  ] 1 test(s)."'

run() {  # OUT ARGS...: the runner's output in OUT, its status in $rc
    local out=$1
    shift
    env "$@" >"$out" 2>&1
    rc=$?
}

# 1. counts of passing, skipping and failing suites; exit status
run "$tmp/o1" TEST_JOBS=3 bash "$runner" "$tmp/pass3" "$tmp/mixed" "$tmp/skips"
if [ "$rc" != 0 ] && [ "$(tail -n 1 "$tmp/o1")" = "5 passed, 1 failed, 6 skipped" ] &&
    grep -q "^ok   .*pass3 (3 passed) [0-9]*s$" "$tmp/o1" &&
    grep -q "^ok   .*skips (0 passed, 2 skipped) [0-9]*s$" "$tmp/o1" &&
    grep -q "^FAIL .*mixed (2 passed, 1 failed, 4 skipped, exit 1)" "$tmp/o1" &&
    grep -q "^    the reason of mixed$" "$tmp/o1" &&
    grep -q "^failed suites: .*mixed$" "$tmp/o1"; then
    ok "passed, failed and skipped tests add up; a failing suite's output is shown"
else
    bad "counts of pass3, mixed, skips (exit $rc)" "$tmp/o1"
fi

# 2. a crash, no summary, or a non-zero exit with no failure: one failure each
run "$tmp/o2" TEST_JOBS=2 bash "$runner" "$tmp/crash" "$tmp/silent" "$tmp/exit1" "$tmp/pass3"
if [ "$rc" != 0 ] && [ "$(tail -n 1 "$tmp/o2")" = "9 passed, 3 failed, 0 skipped" ] &&
    grep -q "^FAIL .*crash (5 passed, 1 failed, exit 139)" "$tmp/o2" &&
    grep -q "^    crash output$" "$tmp/o2" &&
    grep -q "^FAIL .*silent (0 passed, 1 failed, exit 0)" "$tmp/o2" &&
    grep -q "^FAIL .*exit1 (1 passed, 1 failed, exit 3)" "$tmp/o2"; then
    ok "a crash, a suite without a summary and a bad exit status count as failures"
else
    bad "crash, silent, exit1 (exit $rc)" "$tmp/o2"
fi

# 3. all passing: status 0
run "$tmp/o3" bash "$runner" "$tmp/pass3" "$tmp/pass3"
if [ "$rc" = 0 ] && [ "$(tail -n 1 "$tmp/o3")" = "6 passed, 0 failed, 0 skipped" ]; then
    ok "all passing: 0 failed and exit status 0"
else
    bad "two passing suites (exit $rc)" "$tmp/o3"
fi

# 4. side by side: ping and pong wait for each other
rm -f "$tmp"/*.here
run "$tmp/o4" TEST_JOBS=2 bash "$runner" "$tmp/ping" "$tmp/pong"
if [ "$rc" = 0 ] && [ "$(tail -n 1 "$tmp/o4")" = "2 passed, 0 failed, 0 skipped" ]; then
    ok "TEST_JOBS=2 runs two suites at once"
else
    bad "ping and pong side by side (exit $rc)" "$tmp/o4"
fi

# 5. one at a time: pong starts only after ping gave up waiting
rm -f "$tmp"/*.here
suite ping_quick 'touch "$(dirname "$0")/ping.here"
[ -e "$(dirname "$0")/pong.here" ] && echo "[  FAILED  ] 1 test(s)" || echo "[  PASSED  ] 1 test(s)."'
run "$tmp/o5" TEST_JOBS=1 bash "$runner" "$tmp/ping_quick" "$tmp/pong"
if [ "$rc" = 0 ] && [ "$(tail -n 1 "$tmp/o5")" = "2 passed, 0 failed, 0 skipped" ]; then
    ok "TEST_JOBS=1 runs one suite after the other"
else
    bad "ping_quick then pong one at a time (exit $rc)" "$tmp/o5"
fi

# 6. a bad TEST_JOBS is refused
run "$tmp/o6" TEST_JOBS=x bash "$runner" "$tmp/pass3"
if [ "$rc" = 2 ] && grep -q "TEST_JOBS must be a number" "$tmp/o6"; then
    ok "TEST_JOBS=x is refused"
else
    bad "TEST_JOBS=x (exit $rc)" "$tmp/o6"
fi

# 7. no server binaries: one line, nothing counted; --sqlite runs on SQLite
mkdir "$tmp/nobin"
run "$tmp/o7" RLSTORE_PG_BINDIR="$tmp/nobin" bash "$runner" --pg "$tmp/pass3" "$tmp/env" \
    --sqlite "$tmp/env" --pg "$tmp/pass3"
if [ "$rc" = 0 ] && [ "$(tail -n 1 "$tmp/o7")" = "1 passed, 0 failed, 0 skipped" ] &&
    [ "$(grep -c '^skip PostgreSQL suites not run: ' "$tmp/o7")" = 1 ] &&
    ! grep -q "pg:" "$tmp/o7" && grep -q "^ok   .*env (1 passed)" "$tmp/o7"; then
    ok "without PostgreSQL the --pg parts are skipped in one line, --sqlite runs"
else
    bad "--pg without server binaries (exit $rc)" "$tmp/o7"
fi

# 7b. a runner stopped by a signal ends its suites and what they started
suite sleeper 'sleep 60 & echo $! >"$(dirname "$0")/sleeper.pid"; wait'
bash "$runner" "$tmp/sleeper" >"$tmp/o7b" 2>&1 &
runner_pid=$!
for _ in $(seq 3000); do [ -s "$tmp/sleeper.pid" ] && break; sleep 0.1; done
kill -TERM "$runner_pid"
wait "$runner_pid"
rc=$?
gone=0
for _ in $(seq 3000); do
    # a child of a killed suite may linger as a zombie: that is gone too
    st=$(cut -d' ' -f3 "/proc/$(cat "$tmp/sleeper.pid")/stat" 2>/dev/null)
    case $st in "" | Z*) gone=1; break ;; esac
    sleep 0.1
done
if [ -s "$tmp/sleeper.pid" ] && [ "$rc" != 0 ] && [ "$gone" = 1 ]; then
    ok "a runner stopped by SIGTERM stops its suites' processes"
else
    kill "$(cat "$tmp/sleeper.pid" 2>/dev/null)" 2>/dev/null
    bad "sleep 60 of a suite outlived its runner (exit $rc)" "$tmp/o7b"
fi

# 8. with a server: a database of its own for each suite of the --pg part,
# PG_KNOBS for them alone, and nothing of either for the SQLite part
if sh tests/pg/server.sh check >/dev/null 2>&1; then
    # the runner shows a suite's output only when it fails: a suite that
    # prints what it saw, then fails
    suite show 'd=$(dirname "$0"); "$d/env"; echo "[  FAILED  ] 1 test(s)"'
    run "$tmp/o8" TEST_JOBS=2 PG_KNOBS="RLS_TEST_KNOB=7" RLSTORE_TEST_PG=postgresql://stale/nothing \
        bash "$runner" --pg "$tmp/show" "$tmp/show" --sqlite "$tmp/show"
    uris=$(sed -n 's/^    uri=\(postgresql:[^ ]*\) knob=7$/\1/p' "$tmp/o8" | sort -u)
    if [ "$(echo "$uris" | grep -c .)" = 2 ] &&
        ! echo "$uris" | grep -q stale &&
        [ "$(grep -c '^FAIL pg:' "$tmp/o8")" = 2 ] &&
        grep -q '^    uri=none knob=none$' "$tmp/o8" &&
        [ "$(tail -n 1 "$tmp/o8")" = "3 passed, 3 failed, 0 skipped" ]; then
        ok "each PostgreSQL suite gets its own database and PG_KNOBS, SQLite ones neither"
    else
        bad "databases of the --pg part (exit $rc)" "$tmp/o8"
    fi
else
    skip "PostgreSQL's server binaries are not installed: no test of the --pg part's databases"
fi

finish
