#!/usr/bin/env bash
# rltop and keys holding characters that show nothing but reorder or hide
# text (Unicode format characters: U+202E right-to-left override, U+202C,
# U+2066..U+2069 isolates, zero-width U+200B, U+FEFF): every view shows
# them escaped, as it shows control bytes, so no such character reaches
# the terminal, the key table's columns stay where its header puts them
# and a dialog's borders stay straight.  Checked on what tmux shows (a
# terminal that reorders text would move the columns of a raw U+202E; tmux
# keeps the character, so its presence is what is checked).
. "$(dirname "$0")/lib.sh"

test_db db || exit 1
DB=$REPLY
prepare_db "$DB" || exit 1
RTL=$(printf 'rtl\342\200\256evil\342\200\254end')        # U+202E ... U+202C
ZW=$(printf 'zw\342\200\213sp\357\273\277')                 # U+200B, U+FEFF
ISO=$(printf 'iso\342\201\246x\342\201\251')                # U+2066 ... U+2069
for k in "$RTL" "$ZW" "$ISO"; do "$RLCTL" --db "$DB" --quiet check login "$k"; done
"$RLCTL" --db "$DB" --quiet block "$RTL" --action login --for 1h \
    --reason "$(printf 'why \342\200\256 not')"

# Passes when the screen holds no format character (category Cf) and no
# line or paragraph separator.
no_format_chars() {
    screen >screen.txt
    python3 - screen.txt <<'PY'
import sys, unicodedata
text = open(sys.argv[1], encoding="utf-8").read()
bad = sorted({"U+%04X" % ord(c) for c in text if unicodedata.category(c) in ("Cf", "Zl", "Zp")})
sys.exit("raw format characters on the screen: " + " ".join(bad) if bad else 0)
PY
}

# Passes when every row of the key table starts its ACTION cell at the
# column of the ACTION header (columns counted as a terminal does: wide
# characters 2, format and combining characters 0).
columns_aligned() {
    screen >screen.txt
    python3 - screen.txt <<'PY'
import sys, unicodedata
def width(s):
    w = 0
    for c in s:
        if unicodedata.category(c) in ("Cf", "Mn", "Me"):
            continue
        w += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
    return w
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
head = next(i for i, l in enumerate(lines) if l.startswith("KEY ") and " ACTION " in l)
col = width(lines[head][:lines[head].index(" ACTION ") + 1])
rows = [l for l in lines[head + 1:] if " login " in l or " signup " in l]
assert len(rows) >= 3, lines
for l in rows:
    at = min(i for i in (l.find(" login "), l.find(" signup ")) if i >= 0) + 1
    assert width(l[:at]) == col, "ACTION at column %d, header at %d: %r" % (width(l[:at]), col, l)
PY
}

# Passes when the dialog's left and right borders (U+2502) sit in the same
# two columns on every line of the box.
borders_aligned() {
    screen >screen.txt
    python3 - screen.txt <<'PY'
import sys, unicodedata
def width(s):
    return sum(0 if unicodedata.category(c) in ("Cf", "Mn", "Me") else 1 for c in s)
lines = [l for l in open(sys.argv[1], encoding="utf-8").read().splitlines() if l.count("\u2502") >= 2]
assert len(lines) >= 3, lines
cols = {(width(l[:l.index("\u2502")]), width(l[:l.rindex("\u2502")])) for l in lines}
assert len(cols) == 1, "borders at %s" % sorted(cols)
PY
}

start_pane 120 30
check "tmux pane started" wait_for 'PROMPT$'
txt "$RLTOP --db '$DB' -d 0.5"
key Enter
expect "rltop starts" "rules v1"
expect "U+202E shown escaped" 'rtl\xe2\x80\xaeevil\xe2\x80\xac'
expect "U+200B and U+FEFF shown escaped" 'zw\xe2\x80\x8bsp\xef\xbb\xbf'
expect "U+2066 and U+2069 shown escaped" 'iso\xe2\x81\xa6x\xe2\x81\xa9'
check "keys: no raw format character" no_format_chars
check "keys: columns aligned" columns_aligned

txt "/"
expect "filter dialog" "Filter keys"
txt rtl
key Enter
expect_gone "filter dialog closes" "Filter keys"
txt b
expect "block dialog names the key escaped" "Block 'rtl\\xe2\\x80\\xaeevil"
check "block dialog: no raw format character" no_format_chars
check "block dialog: borders aligned" borders_aligned
key Escape
expect_gone "block dialog closes" "for every action"
key Enter
expect "detail pane" "tier free"
check "detail: no raw format character" no_format_chars
key Escape
txt 3
expect "blocks view: the reason escaped" 'why \xe2\x80\xae n'
check "blocks view: no raw format character" no_format_chars
txt 4
expect "audit view" "block"
check "audit view: no raw format character" no_format_chars
txt q
expect "rltop quits" "PROMPT$"
finish
