#!/usr/bin/env bash
# rltop as htop users expect (issue #20, item 9): the header's blocked
# count agrees with the rows (a key of a blocked tier counts as blocked),
# a key of an unlimited tier past its limit is "ok", never "near"; F3
# searches as it is typed and F3 again goes to the next match; F4 filters
# as it is typed, shows the filter in the status line, Esc clears it; F6
# is a sort menu, < and > change the sort column, I inverts it; k does
# not move; dialogs wrap their text at 40 and at 160 columns; F10 quits.
# With RLSTORE_TEST_PG the same runs against a PostgreSQL schema (lib.sh).
. "$(dirname "$0")/lib.sh"

test_db db || exit 1
DB=$REPLY
# the shared rules plus a blocked tier
sed 's/^  vip: { unlimited: true }$/&\n  banned: { blocked: true }/' "$FIXTURES/rules-live.yaml" >rules.yaml
check "rules with a blocked tier" grep -q "banned: { blocked: true }" rules.yaml
"$RLCTL" --db "$DB" init rules.yaml >/dev/null
"$RLCTL" --db "$DB" --quiet tier set staff1 vip --action login
"$RLCTL" --db "$DB" --quiet tier set mallory banned --action login
for i in 1 2 3 4 5 6 7; do "$RLCTL" --db "$DB" --quiet check login staff1; done
"$RLCTL" --db "$DB" --quiet check login mallory
"$RLCTL" --db "$DB" --quiet check login alice
"$RLCTL" --db "$DB" --quiet block 192.0.2.9 --action signup --for 1h --reason "tmux test block"

# ---- the counts, in batch mode and in the library ----
"$RLTOP" --db "$DB" -b --rows 50 >snap.txt
check "batch: the header's blocked count is the rows shown blocked (tier-blocked too)" python3 -c '
import re
t = open("snap.txt").read().splitlines()
n = int(re.search(r"(\d+) blocked", t[2]).group(1))
rows = [l for l in t[5:] if l.strip() and not l.startswith("(")]
b = sum(1 for l in rows if re.search(r"\sblocked( \S+)?$", l))
assert n == b == 2, (n, b, t)
assert any(" mallory " in l and l.rstrip().endswith("blocked") for l in rows), t'
check "batch: the unlimited key past its limit is ok, not near" python3 -c '
t = [l for l in open("snap.txt").read().splitlines() if " staff1 " in l]
assert len(t) == 1 and t[0].split()[4:6] == ["7", "4"] and t[0].rstrip().endswith(" ok"), t'
"$RLCTL" --db "$DB" --json usage --key staff1 >usage.json
check "library: the usage row of the unlimited key says ok" python3 -c '
import json; d = json.load(open("usage.json"))
assert [r["state"] for r in d] == ["ok"] and d[0]["used"] == 7, d'
"$RLCTL" --db "$DB" --json usage --action login >usage.json
check "library: the unlimited key past its limit sorts after a key using 1 of 5" python3 -c '
import json; d = [r["key"] for r in json.load(open("usage.json"))]
assert "alice" in d and "staff1" in d and d.index("alice") < d.index("staff1"), d'

start_pane 100 30
check "tmux pane started" wait_for 'PROMPT$' 5
txt "$RLTOP --db '$DB' -d 0.5; echo \"rc=\$?\""
key Enter
expect "starts" "rules v1"
expect "the keys are listed" "staff1"

# The header's count and the rows shown blocked agree on the screen too.
check "screen: header count = rows shown blocked" sh -c "
tmux -S '$TM_SOCK' capture-pane -p -t t | python3 -c '
import re, sys
t = sys.stdin.read().splitlines()
n = int(re.search(r\"(\d+) blocked\", t[2]).group(1))
rows = [l for l in t[5:-1] if re.search(r\"\sblocked( \S+)?\s*$\", l)]
assert n == len(rows) == 2, (n, rows)'"
check "screen: the unlimited key is not near" sh -c "
tmux -S '$TM_SOCK' capture-pane -p -t t | grep 'staff1 ' | grep -v near | grep -q ' ok'"

# ---- k does not move (htop's kill); Up does ----
key Home
expect "home: first row" " 1/4"
key Down
expect "down: second row" " 2/4"
txt k
key Down
expect "k did not move up: Down went on to the third row" " 3/4"
key Up
expect "Up moves up" " 2/4"

# ---- F3: incremental search, F3 next, wraps, Esc keeps the selection ----
key Home
expect "back at the first row" " 1/4"
key F3
expect "F3 opens the search bar in the status line" "Search: "
txt l
expect "search as typed: first match (mallory)" " 2/4"
key F3
expect "F3 again: next match (alice)" " 3/4"
key F3
expect "F3 again: wraps to the first match" " 2/4"
txt zz
expect "no match: says so" "not found"
key BSpace
key BSpace
expect_gone "the text matches again" "not found"
key Escape
expect_gone "Esc closes the search bar" "Search: "
expect "the selection stays where the search left it" " 2/4"

# ---- F4: a filter as it is typed, in the status line; Esc clears ----
key F4
expect "F4 opens the filter bar" "Filter keys: "
txt staff
expect "filter as typed: the matching key stays" " 1/1"
expect_gone "filter as typed: other keys go" "alice"
key Enter
expect_gone "Enter keeps the filter, the bar closes" "Filter keys: "
expect "the status line shows the filter" "filter: staff"
check "still filtered" wait_gone "alice" 5
key F4
expect "F4 again: the bar shows the filter" "Filter keys: staff"
key Escape
expect "Esc clears the filter" "alice"
expect_gone "the status line no longer shows it" "filter: staff"
txt /
expect "/ is the filter bar too" "Filter keys: "
key Escape
expect_gone "Esc closes it" "Filter keys: "
txt '\'
expect "a backslash is the filter bar too, as in htop" "Filter keys: "
txt "staff"
key Enter
expect "the backslash's filter narrows the list" "filter: staff"
txt '\'
expect "the backslash again: the bar shows the filter" "Filter keys: staff"
key Escape
expect "Esc clears it" "alice"

# ---- sorting: > < F6 I ----
txt ">"
expect "> sorts by the next column (denials)" "sort:denied"
txt "<"
expect "< goes back (use)" "sort:use"
txt "<"
expect "< again: the key column" "sort:key"
txt "<"
expect "< wraps to the last column (reset)" "sort:reset"
key F6
expect "F6 opens the sort menu" "Sort by"
key Home
key Down
key Enter
expect "the menu's choice is used" "sort:use"
# expect_row1 NAME TEXT: a case passing when the first row of the list
# (the screen's line 6: four header lines, the column titles) shows TEXT
expect_row1() {
    local end=$(( $(date +%s) + WAIT_MIN ))
    while [ "$(date +%s)" -le "$end" ]; do
        screen | sed -n 6p | grep -qF -- "$2" && { report "$1"; return; }
        sleep 0.1
    done
    report "$1" "the first row is: $(screen | sed -n 6p)"
}
expect_row1 "sort by use: a blocked key first" 192.0.2.9
txt I
expect "I inverts the order" "sort:use inverted"
expect_row1 "inverted: the last row (staff1, unlimited: never under pressure) comes first" staff1
txt I
expect_gone "I again: as listed" "inverted"
expect_row1 "as listed: the blocked key first again" 192.0.2.9

# ---- dialogs wrap their text at any width ----
for size in "40 24" "160 40"; do
    set -- $size
    tm resize-window -t t -x "$1" -y "$2"
    expect "$1 columns: keys view" "1 Keys"
    key Home
    txt b
    expect "$1 columns: the block menu's hint wraps, not cut" "cancel"
    key Enter
    expect "$1 columns: the duration dialog" "For how long?"
    expect "$1 columns: its text wraps to the end" "unblocked)."
    check "$1 columns: nothing in the dialog cut (no ellipsis)" sh -c "! tmux -S '$TM_SOCK' capture-pane -p -t t | grep '│' | grep -q '…'"
    check "$1 columns: nothing wider than the pane" sh -c "[ \$(tmux -S '$TM_SOCK' capture-pane -p -t t | wc -L) -le $1 ]"
    key Escape
    expect_gone "$1 columns: Esc cancels" "For how long?"
done
"$RLCTL" --db "$DB" --json blocks >blocks.json
check "the cancelled blocks changed nothing" python3 -c '
import json; d = json.load(open("blocks.json")); assert [b["key"] for b in d] == ["192.0.2.9"], d'

# ---- F10 quits ----
key F10
expect "F10 quits with status 0" "rc=0"

finish
