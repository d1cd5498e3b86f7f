#!/usr/bin/env bash
# rltop in a real terminal (tmux): it starts and shows the keys of a
# prepared database, filters, opens the detail pane, unblocks, blocks,
# changes a tier, overrides a limit, resets counters, edits a limit of a
# tier and rolls the rules back (each verified through rlctl), shows the
# help, survives resizes, uses colours unless NO_COLOR is set, and leaves
# the terminal as it found it after q and after SIGTERM.  With
# RLSTORE_TEST_PG the same runs against a PostgreSQL schema (lib.sh).
. "$(dirname "$0")/lib.sh"

test_db db || exit 1
DB=$REPLY
prepare_db "$DB"
check "database prepared" "$RLCTL" --db "$DB" export
cp rules.yaml rules.orig
start_pane 100 30
check "tmux pane started" wait_for 'PROMPT$' 5

RUN="S=\$(stty -g); $RLTOP --db '$DB' -d 0.5; echo \"rc=\$?\"; [ \"\$(stty -g)\" = \"\$S\" ] && echo TTY-SAME || echo TTY-CHANGED"
txt "$RUN"
key Enter
expect "starts: header with the rules version" "rules v1"
expect "starts: a key of the database" "192.0.2.1"
expect "keys are shown escaped" 'ctl\x07key'
expect "a blocked key is shown as blocked" "blocked"
check "colours are used" sh -c "tmux -S $TM_SOCK capture-pane -p -e -t t | grep -q \$(printf '\\033')'\\[3[0-7]m'"

filter() {  # TEXT: set the key filter
    txt "/"
    wait_for "Filter keys" 10 >/dev/null
    key C-u
    txt "$1"
    key Enter
    wait_gone "Filter keys" 10 >/dev/null
}

# ---- filter ----
filter 192.0.2.2
expect "filter: the matching key stays" "192.0.2.2"
expect_gone "filter: other keys go" "alice"
check "filter: shown in the header" wait_for "key~192.0.2.2" 5

# ---- detail pane ----
filter alice
expect "filtered to alice" "alice"
key Enter
expect "detail: the key's tier and its source" "tier free (default)"
expect "detail: every limit with its algorithm" "sliding_log"
key Escape
expect_gone "detail: Esc closes it" "sliding_log"

# ---- unblock ----
filter 192.0.2.9
expect "blocked key listed" "blocked"
txt u
expect "unblock asks first" "Unblock '192.0.2.9'?"
txt y
expect "unblock done" "unblocked '192.0.2.9'"
"$RLCTL" --db "$DB" --json blocks >blocks.json
check "unblock: rlctl blocks no longer lists it" python3 -c '
import json; d = json.load(open("blocks.json")); assert all(b["key"] != "192.0.2.9" for b in d), d'
"$RLCTL" --db "$DB" --json audit --limit 1 >audit.json
check "unblock: audited as rltop" python3 -c '
import json; d = json.load(open("audit.json")); assert d[0]["tool"] == "rltop" and d[0]["op"] == "unblock", d'

# ---- tier ----
filter alice
expect "alice listed" "alice"
txt t
expect "tier menu" "Assign 'alice'"
key Down
key Enter
expect "tier asks for an end" "Until when?"
key Enter
expect "tier assigned" "assigned 'alice' to tier 'pro'"
"$RLCTL" --db "$DB" --json tier list >tiers.json
check "tier: rlctl tier list has alice on pro" python3 -c '
import json; d = json.load(open("tiers.json"))
assert any(t["pattern"] == "alice" and t["tier"] == "pro" for t in d), d'

# ---- override ----
txt o
expect "override menu lists the limits" "capacity"
key Enter
expect "override asks for a capacity" "New capacity of limit 'burst'"
key C-u
txt 9
key Enter
expect "override asks for an end" "Until when?"
key Enter
expect "override set" "is now 9"
"$RLCTL" --db "$DB" --json override list >ov.json
check "override: rlctl override list has it" python3 -c '
import json; d = json.load(open("ov.json"))
assert any(o["key"] == "alice" and o["limit_name"] == "burst" and o["limit"] == 9 for o in d), d'

# ---- block ----
filter bob
expect "bob listed" "bob"
txt b
expect "block asks the scope" "for 'login' only"
key Enter
expect "block asks how long" "For how long?"
key C-u
txt 10m
key Enter
expect "block asks a reason" "Reason"
txt "tmux reason"
key Enter
expect "block asks first" "Block 'bob' for 'login'"
txt y
expect "block done" "blocked 'bob'"
"$RLCTL" --db "$DB" --json blocks >blocks.json
check "block: rlctl blocks has it with the reason" python3 -c '
import json; d = json.load(open("blocks.json"))
assert any(b["key"] == "bob" and b["action"] == "login" and b["reason"] == "tmux reason" and b["until_ms"] > 0 for b in d), d'

# ---- reset ----
filter 192.0.2.1
expect "192.0.2.1 listed" "192.0.2.1"
txt r
expect "reset asks first" "Reset the counters of '192.0.2.1'"
txt y
expect "reset done" "reset the counters of '192.0.2.1'"
"$RLCTL" --db "$DB" --json usage --key 192.0.2.1 >usage.json
check "reset: rlctl usage shows nothing used" python3 -c '
import json; d = json.load(open("usage.json")); assert all(r["used"] == 0 for r in d), d'

# ---- edit a limit of a tier, then roll back ----
filter ""
txt e
expect "edit lists the limits" "(default)"
key Home
key Enter
expect "edit asks the new capacity" "New capacity of limit 'daily' of action 'signup'"
key C-u
txt 7
key Enter
expect "edit confirms with the change" "3 -> 7"
txt y
expect "edit applied as version 2" "applied rule-set version 2"
"$RLCTL" --db "$DB" export >v2.yaml
check "edit: exactly one line changed" sh -c '[ "$(diff rules.orig v2.yaml | grep -c "^[<>]")" = 2 ]'
check "edit: the new line" grep -q "limit: 7, window: 1d" v2.yaml
txt 2
expect "rules view lists versions" "VERSION"
key Down
txt R
expect "rollback asks first" "Roll back the rules to version 1"
txt y
expect "rolled back" "rolled back to version 1 as version 3"
"$RLCTL" --db "$DB" export >v3.yaml
check "rollback: rules as at first" cmp -s rules.orig v3.yaml
txt 1

# ---- help ----
txt "?"
expect "help opens with the key table" "select the previous row"
key End
expect "help scrolls to its end" "show or hide this help"
key Escape
expect_gone "help closes" "show or hide this help"

# ---- resize ----
tm resize-window -t t -x 80 -y 24
expect "80x24: header" "1 Keys"
check "80x24: nothing wider than the pane" sh -c "[ \$(tmux -S $TM_SOCK capture-pane -p -t t | wc -L) -le 80 ]"
tm resize-window -t t -x 30 -y 8
expect "tiny terminal: says so" "too small"
tm resize-window -t t -x 160 -y 50
expect "160x50: all tabs" "4 Audit"
expect "160x50: keys" "alice"

# ---- quit ----
txt q
expect "q quits with status 0" "rc=0"
expect "terminal settings restored after q" "TTY-SAME"

# ---- SIGTERM restores the terminal too; NO_COLOR ----
key C-l
txt "clear; S=\$(stty -g); NO_COLOR=1 sh -c 'echo \$\$ > pid; exec $RLTOP --db \"$DB\"'; echo \"rc=\$?\"; [ \"\$(stty -g)\" = \"\$S\" ] && echo TTY2-SAME || echo TTY2-CHANGED"
key Enter
expect "second run starts" "rules v3"
check "NO_COLOR: no colours" sh -c "! tmux -S $TM_SOCK capture-pane -p -e -t t | grep -q \$(printf '\\033')'\\[[34][0-7]m'"
kill -TERM "$(cat pid)"
expect "SIGTERM: dies of the signal" "rc=143"
expect "SIGTERM: terminal settings restored" "TTY2-SAME"

finish
