#!/bin/sh
# bench/compare.sh - `make bench-compare`: rlbench before and after a change,
# on the same machine, interleaved, with the run-to-run noise of each side.
#
# "Before" is a git revision (--base REV; default: where this branch left
# main, `git merge-base HEAD main`), checked out into a temporary
# `git worktree` that is removed afterwards; "after" is this working tree,
# uncommitted changes included.  Both are built the same way (same make, same
# SAN), each rlbench against its own librlstore.so (rpath $ORIGIN/..).  The
# two then run in turns, base then after (A B A B ...), --rounds times,
# each run writing its own JSON file (and its CPU time); bench/compare.py
# reads them and prints per scenario the median of each side, the ratio
# after/base, the noise of each side ((max - min) / median over its rounds)
# and a verdict.
#
# Usage: sh bench/compare.sh [--base REV] [--rounds N] [--quick | --smoke]
#                            [--pg] [--only GROUP,...] [--out DIR] [--jobs N]
# Environment: BUILD (the "after" build directory, default build), SAN=1
# (both sides built with the sanitizers: for testing this script, not for
# figures).  Results: DIR (default $BUILD/bench/compare): base-N.json,
# after-N.json, base-N.cpu and after-N.cpu (user, sys and wall seconds of
# the whole run), the runs' and builds' output, table.txt.
#
# Groups: core, denied, durability, multi and big by default (rlstore on
# SQLite, no peer: the peers measure other programs, which a change here does
# not touch); --pg adds the pg group (rlstore on PostgreSQL, on a private
# cluster rlbench starts itself; skipped when PostgreSQL is not installed).
#
# Exit status: 0 when both sides were built and every run succeeded, whatever
# the verdicts (a verdict is for a person to read: on a shared machine a
# verdict must not make CI flaky); 1 when a build, a run or the comparison
# failed; 2 on usage errors (a BASE that is not a commit, --rounds below 2).
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)
me=bench-compare
B=${BUILD:-build}
base=
rounds=5
mode=full
groups=core,denied,durability,multi,big
pg=0
out=
jobs=2

usage() {
    echo "usage: sh bench/compare.sh [--base REV] [--rounds N] [--quick | --smoke] [--pg]" >&2
    echo "                           [--only GROUP,...] [--out DIR] [--jobs N]" >&2
    exit 2
}
count() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
while [ $# -gt 0 ]; do
    case $1 in
        --base) [ $# -ge 2 ] || usage; base=$2; shift ;;
        --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift ;;
        --quick) mode=quick ;;
        --smoke) mode=smoke ;;
        --pg) pg=1 ;;
        --only) [ $# -ge 2 ] || usage; groups=$2; shift ;;
        --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
        --jobs) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
        *) usage ;;
    esac
    shift
done
# The noise of a side is the spread of its rounds: one round has none.
if ! count "$rounds" || [ "$rounds" -lt 2 ] || [ "$rounds" -gt 50 ]; then
    echo "$me: ROUNDS must be a number from 2 to 50, not '$rounds' (the noise needs two rounds)" >&2
    exit 2
fi
count "$jobs" && [ "$jobs" -ge 1 ] || { echo "$me: JOBS must be a number >= 1, not '$jobs'" >&2; exit 2; }
[ "$pg" = 1 ] && groups="$groups,pg"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "$me: $root is not a git checkout: the base revision is built from git" >&2
    exit 2
fi
if [ -z "$base" ]; then
    if ! base=$(git merge-base HEAD main 2>/dev/null); then
        echo "$me: no branch 'main' to start from: give BASE=<revision>" >&2
        exit 2
    fi
fi
if ! rev=$(git rev-parse --verify --quiet "$base^{commit}"); then
    echo "$me: BASE '$base' is not a commit of this repository" >&2
    exit 2
fi
short=$(git rev-parse --short "$rev")
if ! command -v python3 >/dev/null 2>&1; then
    echo "$me: python3 is needed for the comparison (bench/compare.py)" >&2
    exit 1
fi

out=${out:-$B/bench/compare}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd) || exit 1
# only the files of an earlier comparison: DIR may hold others
rm -f "$out"/base-*.json "$out"/after-*.json "$out"/base-*.cpu "$out"/after-*.cpu \
    "$out"/base-*.log "$out"/after-*.log "$out"/build-*.log "$out"/worktree.log "$out"/table.txt
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlbench-compare-XXXXXX") || exit 1
wt=$tmp/base
cleanup() {
    if [ -d "$wt" ]; then
        # prune only when remove failed: it would also forget the
        # worktrees of others whose folders are gone
        git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 ||
            { rm -rf "$wt"; git -C "$root" worktree prune >/dev/null 2>&1; }
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# build DIR BUILD LOG: rlbench and its library (and rltop, which the big
# group runs, when that tree has it), with a clean make environment: the
# variables of a calling make (MAKEFLAGS) must not reach the base's build.
build() {
    san=
    [ "${SAN:-}" = 1 ] && san=SAN=1
    targets="$2/bench/rlbench"
    ls "$1"/tui/*.c >/dev/null 2>&1 && targets="$targets $2/rltop"
    # shellcheck disable=SC2086  # $san and $targets are word lists
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$1" -j"$jobs" BUILD="$2" $san $targets >"$3" 2>&1
}
fail_build() {
    echo "$me: building $1 failed (log: $2):" >&2
    tail -n 15 "$2" | sed 's/^/    /' >&2
    exit 1
}

echo "$me: base $short ($base), after: this working tree; $mode runs, $rounds rounds, groups $groups"
if ! git worktree add --detach "$wt" "$rev" >"$out/worktree.log" 2>&1; then
    fail_build "the base's worktree" "$out/worktree.log"
fi
echo "$me: building base $short in a temporary worktree"
build "$wt" build "$out/build-base.log" || fail_build "base $short" "$out/build-base.log"
echo "$me: building after in $B"
build "$root" "$B" "$out/build-after.log" || fail_build "this tree" "$out/build-after.log"
bin_a=$wt/build/bench/rlbench
bin_b=$root/$B/bench/rlbench
case $B in /*) bin_b=$B/bench/rlbench ;; esac

# run SIDE BIN ROUND: one rlbench run, its JSON and output kept; secs is
# how long it took.  A run that fails (a scenario failed) still writes its
# JSON: the comparison then shows that scenario as failed.
# The run's CPU time (user + sys, its children included) and wall time go
# to a .cpu file beside: CPU time depends much less on what else the
# machine runs than the wall-clock figures of the scenarios do.
timed='import resource, subprocess, sys, time
t = time.monotonic()
with open(sys.argv[2], "w") as log:
    rc = subprocess.call(sys.argv[3:], stdout=log, stderr=subprocess.STDOUT)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write("%.3f %.3f %.3f\n" % (ru.ru_utime, ru.ru_stime, time.monotonic() - t))
sys.exit(rc)'
failed=0
run() {
    t0=$(date +%s)
    if ! python3 -c "$timed" "$out/$1-$3.cpu" "$out/$1-$3.log" \
        "$2" "--$mode" --no-peers --only "$groups" --json "$out/$1-$3.json"; then
        echo "$me: the $1 run of round $3 failed (log: $out/$1-$3.log)" >&2
        failed=1
    fi
    if [ ! -s "$out/$1-$3.json" ]; then
        echo "$me: the $1 run of round $3 wrote no result (log: $out/$1-$3.log)" >&2
        exit 1
    fi
    secs=$(($(date +%s) - t0))
}
i=1
while [ "$i" -le "$rounds" ]; do
    run base "$bin_a" "$i"
    ta=$secs
    run after "$bin_b" "$i"
    echo "$me: round $i/$rounds: base $ta s, after $secs s"
    i=$((i + 1))
done

set --
i=1
while [ "$i" -le "$rounds" ]; do set -- "$@" "$out/base-$i.json"; i=$((i + 1)); done
set -- "$@" --
i=1
while [ "$i" -le "$rounds" ]; do set -- "$@" "$out/after-$i.json"; i=$((i + 1)); done
python3 bench/compare.py --labels "base $short" "after" "$@" >"$out/table.txt"
st=$?
cat "$out/table.txt"
echo "$me: runs and table in $out"
[ "$st" = 0 ] && [ "$failed" = 0 ] || exit 1
exit 0
