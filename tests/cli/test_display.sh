#!/usr/bin/env bash
# What rlctl shows of text it does not control: keys holding characters
# that reorder or hide text (U+202E, U+200B, U+FEFF...) are escaped in
# every table and JSON listing, like control bytes; a library message that
# escaped its input already is not escaped twice; the ranges stated for
# numbers are the library's; doctor names a sticky world-writable directory
# for what it is.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
write_rules rules.yaml
rl --db db init rules.yaml --now "$T0"
RTL=$(printf 'rtl\342\200\256evil\342\200\254end')   # U+202E ... U+202C
RTL_ESC='rtl\xe2\x80\xaeevil\xe2\x80\xacend'
ZW=$(printf 'zw\342\200\213sp\357\273\277')            # U+200B, U+FEFF
ZW_ESC='zw\xe2\x80\x8bsp\xef\xbb\xbf'

# Passes when FILE holds no format character (Cf) nor U+2028/U+2029.
no_format() {
    python3 - "$1" <<'PY'
import sys, unicodedata
t = open(sys.argv[1], "rb").read().decode("utf-8")
bad = sorted({"U+%04X" % ord(c) for c in t if unicodedata.category(c) in ("Cf", "Zl", "Zp")})
sys.exit("raw: " + " ".join(bad) if bad else 0)
PY
}

# ---- keys with format characters ---------------------------------------------
tcase "check a key with U+202E" 0 --out-has "$RTL_ESC" -- --db db check login "$RTL" --now "$T0"
tassert "check: no raw format character" no_format "$OUT"
rl --db db check login "$ZW" --now "$T0"
rl --db db block "$RTL" --action login --for 1h --reason "$(printf 'see \342\201\246x\342\201\251')" --now "$T0"
tassert "block: no raw format character" no_format "$OUT"
for cmd in "usage" "blocks" "audit" "explain login $RTL" "tier list" "override list"; do
    # shellcheck disable=SC2086
    set -- $cmd
    [ "$1" = explain ] && set -- explain login "$RTL"
    tcase "$1 (table)" 0 -- --db db "$@" --now "$T0"
    tassert "$1 (table): no raw format character" no_format "$OUT"
    tcase "$1 (json)" 0 -- --db db "$@" --now "$T0" --json
    tassert "$1 (json): no raw format character" no_format "$OUT"
done
tcase "usage shows the keys escaped" 0 --out-has "$RTL_ESC" --out-has "$ZW_ESC" -- --db db usage --now "$T0"
tcase "blocks: key and reason escaped" 0 --out-has "$RTL_ESC" --out-has 'see \xe2\x81\xa6x\xe2\x81\xa9' \
    -- --db db blocks --now "$T0"
tcase "usage json: the key as escaped text" 0 \
    --json 'assert sorted(r["key"] for r in d if r["key"].startswith(("rtl", "zw"))) == [r"rtl\xe2\x80\xaeevil\xe2\x80\xacend", r"zw\xe2\x80\x8bsp\xef\xbb\xbf"], d' \
    -- --db db usage --now "$T0" --json
# a terminal: the table's columns line up (script(1) gives rlctl a tty)
if command -v script >/dev/null 2>&1 && ! skipping; then
    db_of db
    script -qec "$(printf '%q ' "$RLCTL" --db "$REPLY" usage --now "$T0")" /dev/null </dev/null >tty.out 2>&1
    tassert "usage on a terminal: no raw format character" no_format tty.out
    tassert "usage on a terminal: columns line up" python3 - tty.out <<'PY'
import sys
lines = [l.rstrip("\r") for l in open(sys.argv[1], encoding="utf-8").read().splitlines() if l.strip()]
head = lines[0]
col = head.index("TIER")
rows = [l for l in lines[1:] if l.startswith(("login ", "signup "))]
assert len(rows) >= 2 and all(len(l) > col and l[col - 1] == " " and l[col] != " " for l in rows), lines
PY
fi

# ---- library messages are escaped once ---------------------------------------
printf 'version: 1\nactions:\n  a:\n    limits:\n      - { name: "x\\e[31my", algorithm: fixed_window, limit: 3, window: 1m }\n' >esc.yaml
tcase "a name with ESC: escaped once" 4 --err-has "got 'x\\x1B[31my'" -- --db db apply esc.yaml
tassert "a name with ESC: not escaped twice" sh -c '! grep -qF "x\\\\x1B" "$1"' _ "$ERR"
tcase "a name with ESC: json message escaped once" 4 \
    --json 'assert d["error"]["errors"][0]["message"].endswith(r"got '"'"'x\x1B[31my'"'"'"), d' -- --db db apply esc.yaml --json
tcase "a raw ESC in a library message is escaped" 3 --err-has "'x\\x1b[31m'" \
    -- --db db override set login k "$(printf 'x\033[31m')" 5
tassert "no raw ESC on stderr" sh -c '! grep -q "$(printf "\033")" "$1"' _ "$ERR"

# ---- numbers: the library's ranges --------------------------------------------
tcase "override: not a number" 2 --err-has "invalid limit: 'abc' (expected an integer from 1 to 1000000000000)" \
    -- --db db override set login k burst abc
tcase "override: 0" 2 --err-has "from 1 to 1000000000000" -- --db db override set login k burst 0
tcase "override: 10^12 + 1" 2 --err-has "from 1 to 1000000000000" -- --db db override set login k burst 1000000000001
tcase "override: 10^12 accepted" 0 -- --db db override set login k burst 1000000000000 --now "$T0"
tcase "override: 1 accepted" 0 -- --db db override set login k burst 1 --now "$T0"
tcase "check: cost range" 2 --err-has "from 1 to 1000000000)" -- --db db check login k --cost 0

# ---- doctor: a sticky world-writable directory -------------------------------------
sqlite_only "file permissions"
if ! skipping; then
    mkdir -m 1777 tmpdir
    chmod 1777 tmpdir
fi
rl --db tmpdir/db init rules.yaml
tcase "doctor: 1777 is writable by every user, not by its group" 0 \
    --json 'c = {x["check"]: x for x in d["checks"]}; m = c["dir_mode"]; assert m["status"] == "warn" and "every user" in m["detail"] and "sticky" in m["detail"] and "group," not in m["detail"].split("group 0")[-1] and "by its group" not in m["detail"], m' \
    -- --db tmpdir/db doctor --json
skipping || chmod 1770 tmpdir
tcase "doctor: 1770 is writable by its group" 0 \
    --json 'c = {x["check"]: x for x in d["checks"]}; m = c["dir_mode"]; assert m["status"] == "warn" and "by its group" in m["detail"] and "every user" not in m["detail"], m' \
    -- --db tmpdir/db doctor --json
end_sqlite_only

finish
