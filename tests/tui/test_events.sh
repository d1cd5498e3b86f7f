#!/usr/bin/env bash
# rltop's blocks view shows the penalty events (issue #20, item 7): a
# penalty imposed by another process appears under the blocks as a
# "block" event with its action, key, limit and level, and its row in the
# blocks list stays selectable above it.  With RLSTORE_TEST_PG the same
# runs against a PostgreSQL schema (lib.sh).
. "$(dirname "$0")/lib.sh"

test_db db || exit 1
DB=$REPLY
cat >rules.yaml <<'YAML'
version: 1
actions:
  login:
    limits:
      - { name: per_hour, algorithm: gcra, limit: 2, window: 1h, burst: 2, block_for: [1h, 1d] }
YAML
"$RLCTL" --db "$DB" init rules.yaml >/dev/null
for i in 1 2 3; do "$RLCTL" --db "$DB" --quiet check login mallory; done
"$RLCTL" --db "$DB" --quiet block 192.0.2.9 --action login --for 1h --reason "tmux test block"

start_pane 140 30
txt "$RLTOP --db '$DB'"
key Enter
expect "rltop started" "1 Keys" 30
key 3
expect "blocks view: the events section" "PENALTY EVENTS"
check "the penalty is shown as an event" sh -c "$(declare -f screen tm); TM_SOCK='$TM_SOCK'; screen | grep -E ' block +login +mallory +per_hour +0 '"
check "the blocks list still shows both blocks" sh -c "$(declare -f screen tm); TM_SOCK='$TM_SOCK'; screen | grep -q 'tmux test block' && screen | grep -E 'mallory +login +penalty'"
# a new penalty by another process shows up at the next sample
for i in 1 2 3; do "$RLCTL" --db "$DB" --quiet check login trudy; done
expect "a new event appears" "trudy"
key q
expect "rltop quit" 'PROMPT$'
finish
