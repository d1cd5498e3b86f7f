# suite.sh - helpers shared by the script suites of tests/install and
# tests/examples (sourced, not run).
#
# After sourcing, the working directory is the top of the source tree and
#   ROOT, BUILD (default build), BUILD_ABS   paths
#   CC                                       the C compiler (default cc)
#   SAN                                      -fsanitize flags when the library
#                                            was built with make SAN=1, else ""
#   TMP                                      a scratch directory, removed on exit
#   pass / fail TEXT / check NAME CMD...     count one test each
#   finish                                   prints the cmocka-style summary
#                                            ("[  PASSED  ] N test(s)." and, on
#                                            failure, "[  FAILED  ] M test(s)")
#                                            and exits non-zero on failure
# Every failure prints exactly one line starting with "FAIL: ".

cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) BUILD_ABS=$BUILD ;; *) BUILD_ABS=$ROOT/$BUILD ;; esac
CC=${CC:-cc}
export LC_ALL=C
passed=0
failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rlstore-$(basename "$0" .sh).XXXXXX") || exit 2
# Suites may define on_exit() to stop what they started.
on_exit() { :; }
trap 'on_exit; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

pass() { passed=$((passed + 1)); }
fail() {
    failed=$((failed + 1))
    printf 'FAIL: %s\n' "$*" | tr -d '\r' | head -n 1
}
# check NAME CMD...: one test, passed when CMD exits 0; on failure the line
# ends with the last lines CMD printed.
check() {
    _name=$1
    shift
    if "$@" >"$TMP/.check" 2>&1; then
        pass
    else
        fail "$_name ($(tail -n 3 "$TMP/.check" | tr '\n' ' ' | cut -c1-300))"
    fi
}
finish() {
    echo "[  PASSED  ] $passed test(s)."
    if [ "$failed" -gt 0 ]; then
        echo "[  FAILED  ] $failed test(s)"
        exit 1
    fi
    exit 0
}

# A library built with make SAN=1 needs sanitised programs.
SAN=
if [ -f "$BUILD/librlstore.so" ] && ldd "$BUILD/librlstore.so" 2>/dev/null | grep -q libasan; then
    SAN="-fsanitize=address,undefined"
fi
