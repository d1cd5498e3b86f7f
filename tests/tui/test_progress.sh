#!/usr/bin/env bash
# Long operations of rlctl show progress on a terminal and stay quiet in
# scripts (issue #20, item 10): copy-from of a database of 3,000 keys
# counts the rows it read on stderr in a tmux pane, and says nothing on
# stderr when stderr is a file; migrate on a terminal says from which
# schema to which and how long it took, and nothing of that in a script.
# SQLite files only (the older schema is made with SQLite's own tools).
. "$(dirname "$0")/lib.sh"

cat >rules.yaml <<'YAML'
version: 1
actions:
  api:
    limits: [ { name: rate, algorithm: fixed_window, limit: 100, window: 1h } ]
YAML
"$RLCTL" --db src.db init rules.yaml >/dev/null
python3 - "$W/keys.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(0, 3000, 64):
        f.write(" ".join("api k%d" % j for j in range(i, min(i + 64, 3000))) + "\n")
PY
while read -r line; do
    # shellcheck disable=SC2086
    "$RLCTL" --db src.db --quiet check $line || true
done <"$W/keys.txt"
check "3000 keys in the source" test "$("$RLCTL" --db src.db usage --top 5000 | wc -l)" = 3000

# in a script: nothing on stderr
"$RLCTL" --db dst1.db init >/dev/null
"$RLCTL" --db dst1.db copy-from src.db >"$W/copy.out" 2>"$W/copy.err"
check "copy-from in a script: copied" grep -q 3000 "$W/copy.out"
check "copy-from in a script: stderr stays empty" test ! -s "$W/copy.err"

# on a terminal: the rows it read
"$RLCTL" --db dst2.db init >/dev/null
start_pane 120 20
txt "'$RLCTL' --db '$W/dst2.db' copy-from '$W/src.db' >/dev/null; echo COPY-DONE"
key Enter
expect "copy-from on a terminal ends" "COPY-DONE"
expect "copy-from on a terminal shows the rows read" "rows read."

# migrate: an older schema, upgraded on a terminal and in a script
older() {
    cp "$1" "$2"
    python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("DROP TABLE rls_events; DROP TABLE rls_counters; PRAGMA user_version = 4;")
c.close()' "$2"
}
older dst1.db old1.db
older dst1.db old2.db
"$RLCTL" --db old1.db migrate >"$W/mig.out" 2>"$W/mig.err"
check "migrate in a script: its result on stdout" grep -q "migrated 'old1.db' from schema version 4 to 5" "$W/mig.out"
check "migrate in a script: stderr stays empty" test ! -s "$W/mig.err"
txt "clear; '$RLCTL' --db '$W/old2.db' migrate >/dev/null; echo MIG-DONE"
key Enter
expect "migrate on a terminal ends" "MIG-DONE"
expect "migrate on a terminal says what it does" "from schema 4 to 5 ..."
expect "migrate on a terminal says how long it took" "migrated in"
finish
