#!/bin/sh
# make demo: a fresh database with the rules of examples/demo.yaml, traffic
# from examples/simulate in the background (with two minutes of history
# replayed first), and rltop watching it.  Quitting rltop stops the
# simulator and removes the database.  When standard output is not a
# terminal (CI, a pipe), rltop prints a few plain-text snapshots instead.
#
#   sh examples/demo.sh [BUILD_DIR]
set -eu
build=${1:-build}
for f in "$build/rlctl" "$build/rltop" "$build/examples/simulate"; do
    if [ ! -x "$f" ]; then
        echo "demo: $f is missing; run 'make' first" >&2
        exit 1
    fi
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/rlstore-demo-XXXXXX")
sim=
cleanup() {
    if [ -n "$sim" ]; then
        kill "$sim" 2>/dev/null || :
        wait "$sim" 2>/dev/null || :
    fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

db=$dir/demo.db
"$build/rlctl" --db "$db" init examples/demo.yaml >/dev/null
# the simulator replays two minutes of history, then runs in real time
"$build/examples/simulate" --db "$db" --warmup 120 2>"$dir/simulate.log" &
sim=$!
echo "== rlstore demo: replaying two minutes of traffic into $db ..."
# wait until the history is in and real-time traffic flows (at most ~60 s)
i=0
while [ $i -lt 300 ] && ! "$build/rlctl" --db "$db" --json stats --seconds 3 2>/dev/null |
        grep -q '"time_ms"'; do
    kill -0 "$sim" 2>/dev/null || break
    sleep 0.2
    i=$((i + 1))
done
if ! kill -0 "$sim" 2>/dev/null; then
    echo "demo: the simulator stopped:" >&2
    cat "$dir/simulate.log" >&2
    exit 1
fi
if [ -t 1 ] && [ -t 0 ]; then
    "$build/rltop" --db "$db"
else
    echo "== rlstore demo: stdout is not a terminal, so three snapshots of rltop -b"
    "$build/rltop" --db "$db" -b -n 3 -d 2 --rows 15
fi
