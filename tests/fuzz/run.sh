#!/bin/sh
# shellcheck disable=SC1091,SC2086 # lib.sh is sourced; target lists split on purpose
# tests/fuzz/run.sh SECONDS - long fuzzing runs (make fuzz).
#
# Builds every libFuzzer target into $BUILD/fuzz/ (BUILD defaults to build),
# replays the saved reproducers of tests/fuzz/regressions/<target>/, then
# fuzzes each target for SECONDS over its seed corpus tests/fuzz/corpus/<target>/
# (new corpus units go to a temporary directory, never into the repository).
# FUZZ_PARALLEL targets run at a time (default 2).  Prints executions and
# corpus size per target and any crash; crash inputs are kept under
# $BUILD/fuzz/crashes/<target>/.  Exits non-zero on a crash, a failing
# reproducer or a missing toolchain.  FUZZ_TARGETS limits the targets,
# FUZZ_EXTRA adds libFuzzer flags (e.g. "-seed=1").
cd "$(dirname "$0")/../.." || exit 2
. tests/fuzz/lib.sh

secs=${1:-60}
case $secs in
'' | *[!0-9]*) echo "usage: $0 SECONDS" >&2; exit 2 ;;
esac
targets=${FUZZ_TARGETS:-$(fuzz_targets)}
par=${FUZZ_PARALLEL:-2}
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

fuzz_toolchain_ok || exit 2
echo "fuzz: building $(echo $targets | wc -w) targets into $FUZZ_OUT/"
for t in $targets; do
    if ! fuzz_build "$t"; then
        echo "fuzz: building $t failed" >&2
        exit 2
    fi
done

failed=""
for t in $targets; do
    if ! fuzz_replay "$t"; then
        failed="$failed $t(regressions)"
    fi
    [ "$FUZZ_NREG" -gt 0 ] && echo "fuzz: $t: $FUZZ_NREG reproducer(s) replayed"
done

echo "fuzz: $secs s per target, $par at a time"
set -- $targets
while [ $# -gt 0 ]; do
    batch=""
    i=0
    while [ $# -gt 0 ] && [ $i -lt "$par" ]; do
        batch="$batch $1"
        fuzz_run "$1" "$secs" "$FUZZ_OUT/$1.log" &
        eval "pid_$1=\$!"
        shift
        i=$((i + 1))
    done
    for t in $batch; do
        eval "wait \$pid_$t"
        rc=$?
        s=$(fuzz_stats "$FUZZ_OUT/$t.log")
        execs=${s% *}
        corp=${s#* }
        seeds=$(find "$FUZZ_DIR/corpus/$t" -type f | wc -l)
        if [ "$rc" = 0 ]; then
            printf 'ok    %-14s %10s executions in %ss, corpus %s seeds -> %s units\n' \
                "$t" "$execs" "$secs" "$seeds" "$corp"
        else
            printf 'CRASH %-14s %10s executions, exit %s (log %s)\n' "$t" "$execs" "$rc" \
                "$FUZZ_OUT/$t.log"
            fuzz_excerpt "$FUZZ_OUT/$t.log" | sed 's/^/    /'
            failed="$failed $t"
        fi
    done
done

if [ -n "$failed" ]; then
    echo "fuzz: FAILED:$failed (crash inputs under $FUZZ_OUT/crashes/)"
    exit 1
fi
echo "fuzz: no crashes"
