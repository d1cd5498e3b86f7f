#!/usr/bin/env bash
# rltop and a key longer than the default max_key_len (issue #17, defect
# 8): an application opened with max_key_len 1000 (the Python binding over
# this build's library) stores a 600-byte key and earns it a penalty; rltop
# lists it, unblocks it and resets its counters (each verified through
# rlctl).  With RLSTORE_TEST_PG the same runs against a PostgreSQL schema.
. "$(dirname "$0")/lib.sh"

LIB=$B/librlstore.so
# The application: python3 with the Python binding (py, tests/pyapp.sh).
. "$ROOT/tests/pyapp.sh"
if ! py -c 'import rlstore._ffi; rlstore._ffi.get()' 2>/dev/null; then
    echo "skip: the Python binding cannot load $LIB: the application side needs it"
    finish
fi

test_db db || exit 1
DB=$REPLY
cat >rules.yaml <<'YAML'
version: 1
actions:
  api:
    limits: [ { name: hourly, algorithm: fixed_window, limit: 2, window: 1h, block_for: 1h } ]
YAML
"$RLCTL" --db "$DB" init rules.yaml >/dev/null
LONG=$(head -c 597 /dev/zero | tr '\0' k)END
py -c "
import rlstore
db = rlstore.Limiter.open('$DB', max_key_len=1000, tool='app')
for i in range(3):
    db.check('api', '$LONG')
assert db.check('api', '$LONG').reason == 'blocked'
db.close()"
check "the application stored the key, blocked" sh -c "'$RLCTL' --db '$DB' --json blocks | grep -q kkkkEND"

start_pane 120 30
check "tmux pane started" wait_for 'PROMPT$' 5
txt "$RLTOP --db '$DB' -d 0.5; echo \"rc=\$?\""
key Enter
expect "starts" "rules v1"
expect "the long key is listed" "api"
expect "the long key is shown blocked" "blocked"
txt u
expect "unblock asks first" "Unblock 'kkkk"
txt y
expect "unblock done" "unblocked 'kkkk"
"$RLCTL" --db "$DB" --json blocks >blocks.json
check "unblock: rlctl blocks no longer lists it" python3 -c '
import json; d = json.load(open("blocks.json")); assert d == [], d'
txt r
expect "reset asks first" "Reset the counters of 'kkkk"
txt y
expect "reset done" "reset the counters of 'kkkk"
"$RLCTL" --db "$DB" --json usage >usage.json
check "reset: rlctl usage shows nothing used" python3 -c '
import json; d = json.load(open("usage.json")); assert all(r["used"] == 0 for r in d), d'
txt q
expect "q quits with status 0" "rc=0"
finish
