#!/bin/sh
# stress.sh - the long soak variants of the reliability suites (`make stress`).
#
# Runs test_exact, test_crash, test_clock, test_growth and test_race_open with the long
# sizes below (any of them can be overridden from the environment), and the
# suites that have no long sizes as in `make test` (hostile files, fault
# injection, out of memory); prints the figures each suite reports (the
# lines docs/RELIABILITY.md quotes), one line per failed suite, and ends
# with the cmocka-style summary lines.  A suite that is not built fails.
#
# The build directory comes from $BUILD (default build).
BUILD=${BUILD:-build}

: "${RLS_EXACT_REPEAT:=10}"         # runs of each exactness test
: "${RLS_EXACT_CAP:=3000}"          # capacity per hot key
: "${RLS_CRASH_ROUNDS:=3000}"       # SIGKILL rounds of two writers each
: "${RLS_CRASH_MAX_US:=30000}"      # longest life of a writer
: "${RLS_CRASH_CREATE_ROUNDS:=500}" # kills while creating a database
: "${RLS_APPLY_ROUNDS:=200}"        # kills of rlctl apply
: "${RLS_APPLY_ACTIONS:=6000}"      # actions in each rule file (1.4 MB)
: "${RLS_APPLY_BUDGET_MS:=100000000}" # no time limit
: "${RLS_CLOCK_TICKS:=400}"         # checks per window in the clock suite
: "${RLS_GROWTH_KEYS:=1000000}"     # distinct keys through the growth suite
: "${RLS_RACE_ROUNDS:=400}"         # rounds of racing first opens
export RLS_EXACT_REPEAT RLS_EXACT_CAP RLS_CRASH_ROUNDS RLS_CRASH_MAX_US \
    RLS_CRASH_CREATE_ROUNDS RLS_APPLY_ROUNDS RLS_APPLY_ACTIONS RLS_APPLY_BUDGET_MS \
    RLS_CLOCK_TICKS \
    RLS_GROWTH_KEYS RLS_RACE_ROUNDS

log=$(mktemp "${TMPDIR:-/tmp}/rlstore-stress-XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
passed=0
failed=0
started=$(date +%s)

for name in test_exact test_crash test_hostile_open test_hostile_fs test_clock \
    test_growth test_faults_calls test_faults_file test_oom_data test_oom_admin \
    test_race_open test_files_gone; do
    bin=$BUILD/tests/reliability/$name
    if [ ! -x "$bin" ]; then
        echo "FAIL $name: $bin is not built (make all first)"
        failed=$((failed + 1))
        continue
    fi
    t0=$(date +%s)
    "$bin" >"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    p=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
    f=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
    if [ "$p" = 0 ] && [ "$f" = 0 ]; then f=1; fi
    passed=$((passed + p))
    failed=$((failed + f))
    echo "== $name: $p passed, $f failed, $((t1 - t0)) s"
    # the figures: every line a suite prints that is not cmocka's own
    grep -v -e '^\[' -e '^ *$' -e 'FAILED TEST' -e 'SKIPPED TEST' "$log" | sed 's/^/   /'
    if [ "$f" != 0 ]; then
        echo "FAIL $name (exit $rc)"
        grep -e 'ERROR' -e 'FAILED' "$log" | sed 's/^/    /' | head -n 20
    fi
done

echo "stress: $(( $(date +%s) - started )) s"
echo "[  PASSED  ] $passed test(s)."
if [ "$failed" != 0 ]; then
    echo "[  FAILED  ] $failed test(s)"
    exit 1
fi
exit 0
