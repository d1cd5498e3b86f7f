#!/bin/sh
# make demo: builds a demo database from examples/demo.yaml and shows
# librlstore deciding real requests.  (rltop, the live console, replaces
# this walk-through once it exists.)
set -eu
build=${1:-build}
dir=$(mktemp -d "${TMPDIR:-/tmp}/rlstore-demo-XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "== rlstore demo: database $dir/demo.db"
"$build/examples/quickstart" "$dir/demo.db"
echo
echo "The counters are durable: running it again on the same database"
echo "continues where it stopped (the rules are re-applied, the counts stay):"
"$build/examples/quickstart" "$dir/demo.db"
