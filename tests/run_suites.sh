#!/bin/sh
# Runs every test binary given, prints each suite's outcome and ends with one
# line "N passed, N failed" summing the individual tests of every suite.
# cmocka suites report "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)";
# a suite that crashes or prints no summary counts as one failed test.
# VALGRIND=1 runs each under memcheck (a report fails the suite).
passed=0; failed=0; bad=""
out=$(mktemp); trap 'rm -f "$out"' EXIT
for t in "$@"; do
    if [ "${VALGRIND:-0}" = 1 ]; then
        valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --child-silent-after-fork=yes \
            "$t" >"$out" 2>&1; rc=$?
    else
        "$t" >"$out" 2>&1; rc=$?
    fi
    p=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    f=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
    if [ "$p" = 0 ] && [ "$f" = 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
    name=${t#"${BUILD:-build}"/tests/}
    if [ "$f" != 0 ]; then
        bad="$bad $name"
        echo "FAIL $name ($p passed, $f failed, exit $rc)"
        sed 's/^/    /' "$out" | tail -n 40
    else
        echo "ok   $name ($p passed)"
    fi
done
[ -n "$bad" ] && echo "failed suites:$bad"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
