# tests/suite_lib.sh - counting for the shell suites that report tests one
# by one (sourced, POSIX sh): ok NAME, bad NAME [FILE] (its last 30 lines
# shown), skip NAME, then summary, which prints cmocka's summary lines for
# tests/run_suites.sh and exits 0 when nothing failed.
passed=0
failed=0
skipped=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() {
    failed=$((failed + 1))
    echo "FAIL $1"
    [ -n "${2:-}" ] && sed 's/^/    /' "$2" | tail -n 30
}
skip() { skipped=$((skipped + 1)); echo "skip $1"; }
summary() {
    echo "[  PASSED  ] $passed test(s)."
    [ "$skipped" -gt 0 ] && echo "[  SKIPPED ] $skipped test(s)."
    [ "$failed" -gt 0 ] && echo "[  FAILED  ] $failed test(s), listed above"
    [ "$failed" = 0 ]
    exit $?
}
