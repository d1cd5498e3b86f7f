#!/bin/sh
# tests/reliability/test_limits_diff.sh - rlstore against Python's `limits`
# (issue #17, defect 15): the same random per-action sequences decided by
# rlstore (through bindings/python and $BUILD/librlstore.so.0) and by
# `limits` 2.8 must agree on every decision, with a database per action and
# with one database for all (tests/reliability/limits_diff.py says how).
# Needs a python3 that can import `limits` (Debian: python3-limits): $PYTHON,
# else python3, else /usr/bin/python3; without one, the suite is skipped
# with one line.  Knobs: RLS_DIFF_CHECKS (per action, default 750),
# RLS_DIFF_SEED.  limits_diff.py prints the summary lines (cmocka's, for
# tests/run_suites.sh); a skip or a setup failure is counted by the harness.
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
NTESTS=2

py=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import limits' >/dev/null 2>&1; then
        py=$p
        break
    fi
done
[ -n "$py" ] || skip_all $NTESTS "python3 with the limits module is not installed (Debian: python3-limits)"
lib=$BUILD_ABS/librlstore.so.0
[ -f "$lib" ] || setup_fail "$lib is not built (run make)"
# A library built by make SAN=1 needs the sanitizer runtime first.
if ldd "$lib" 2>/dev/null | grep -q libasan; then
    cc=${CC:-cc}
    LD_PRELOAD="$($cc -print-file-name=libasan.so) $($cc -print-file-name=libubsan.so)"
    export LD_PRELOAD
    ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export ASAN_OPTIONS
fi
RLSTORE_LIB=$lib PYTHONPATH=bindings/python PYTHONDONTWRITEBYTECODE=1 \
    "$py" tests/reliability/limits_diff.py
exit $?
