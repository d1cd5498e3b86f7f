#!/bin/sh
# shellcheck disable=SC1091,SC2086 # lib.sh is sourced; target lists split on purpose
# tests/fuzz/test_fuzz_smoke.sh - the short fuzzing suite of make test.
#
# Builds every libFuzzer target (see lib.sh), and for each one: replays the
# saved reproducers of tests/fuzz/regressions/<target>/ (each must pass),
# then fuzzes for FUZZ_SMOKE_SECONDS (default 6) over the seed corpus
# (which runs every seed first).  Two targets run at a time; the whole
# suite takes well under 90 s on 2 cores.  One test per target; the summary
# lines are cmocka's, for tests/run_suites.sh.  Without clang's libFuzzer
# the suite FAILS, naming the packages to install: it never skips.
cd "$(dirname "$0")/../.." || exit 2
. tests/fuzz/lib.sh

secs=${FUZZ_SMOKE_SECONDS:-6}
targets=$(fuzz_targets)
ntargets=$(echo $targets | wc -w)
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
. tests/suite_lib.sh

if ! fuzz_toolchain_ok; then
    echo "FAIL fuzz smoke: clang with libFuzzer is required (Debian: apt-get install $FUZZ_PACKAGES)"
    fail_quiet "$ntargets"
    finish
fi

# Build two at a time.
mkdir -p "$FUZZ_OUT"
set -- $targets
while [ $# -gt 0 ]; do
    fuzz_build "$1" >"$FUZZ_OUT/$1.build.log" 2>&1 &
    p1=$!
    p2=""
    if [ $# -gt 1 ]; then
        fuzz_build "$2" >"$FUZZ_OUT/$2.build.log" 2>&1 &
        p2=$!
    fi
    wait $p1
    [ -n "$p2" ] && wait $p2
    shift
    [ $# -gt 0 ] && shift
done

# One target: regressions, then the timed run.  Prints its line; exit 0/1.
one() {
    t=$1
    if [ ! -x "$FUZZ_OUT/$t" ]; then
        echo "FAIL $t: does not build:"
        sed 's/^/    /' "$FUZZ_OUT/$t.build.log" | tail -n 15
        return 1
    fi
    regs=$(fuzz_replay "$t")
    rrc=$?
    nreg=$(find "$FUZZ_DIR/regressions/$t" -type f 2>/dev/null | wc -l)
    fuzz_run "$t" "$secs" "$FUZZ_OUT/$t.smoke.log"
    rc=$?
    s=$(fuzz_stats "$FUZZ_OUT/$t.smoke.log")
    seeds=$(find "$FUZZ_DIR/corpus/$t" -type f | wc -l)
    line=$(printf '%-14s %9s executions in %ss, %s seeds -> %s units, %s reproducer(s)' \
        "$t" "${s% *}" "$secs" "$seeds" "${s#* }" "$nreg")
    if [ "$rc" = 0 ] && [ "$rrc" = 0 ]; then
        echo "ok   $line"
        return 0
    fi
    echo "FAIL $line"
    [ "$rrc" != 0 ] && echo "$regs"
    if [ "$rc" != 0 ]; then
        echo "    fuzzing crashed (exit $rc); input saved under $FUZZ_OUT/crashes/$t/:"
        fuzz_excerpt "$FUZZ_OUT/$t.smoke.log" | sed 's/^/      /'
    fi
    return 1
}

set -- $targets
while [ $# -gt 0 ]; do
    one "$1" >"$FUZZ_OUT/$1.smoke.out" 2>&1 &
    p1=$!
    p2=""
    if [ $# -gt 1 ]; then
        one "$2" >"$FUZZ_OUT/$2.smoke.out" 2>&1 &
        p2=$!
    fi
    for p in $p1 $p2; do
        # one() printed the target's line: count it only
        if wait "$p"; then pass; else fail_quiet; fi
    done
    cat "$FUZZ_OUT/$1.smoke.out"
    [ -n "$p2" ] && cat "$FUZZ_OUT/$2.smoke.out"
    shift
    [ $# -gt 0 ] && shift
done
finish
