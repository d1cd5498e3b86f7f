#!/usr/bin/env bash
# rlctl copy-from: a database copied into another one (the rules, the
# operator entries, the counters and open reservations), its report (TSV,
# a table on a terminal, --json), --dry-run, the selectors, exit statuses,
# the source's password never shown.  With PostgreSQL (RLSTORE_TEST_PG)
# the databases are schemas, and a SQLite file is copied into PostgreSQL
# and back.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
write_rules rules.yaml 3
rl --db old init rules.yaml
for i in 1 2 3 4; do rl --db old check signup 192.0.2.1 --now "$T0"; done   # the 4th is denied
rl --db old check login alice --now "$T0"
rl --db old block user:9 --reason "card testing" --now "$T0"
rl --db old tier set 10.0.0.0/8 pro --now "$T0"
rl --db old override set login bob burst 5 --now "$T0"
rl --db old reserve signup 192.0.2.2 --now "$T0"
ID=$(cat "$OUT")
tassert "the source's reservation has an id" test "${ID:-0}" -gt 0
rl --db new init
rl --db empty init
db_of old
OLD=$REPLY   # the source as rlctl gets it: a file, or the schema's URI
db_of new
NEW=$REPLY
db_of empty
EMPTY=$REPLY

KINDS='["rules", "assignments", "overrides", "blocks", "states", "reservations"]'

# ---- a dry run reports and stores nothing ----
tcase "dry run: json report" 0 --json "assert [r['what'] for r in d] == $KINDS, d" \
    --json 'r = {x["what"]: x for x in d}; assert r["rules"]["copied"] == 1 and r["rules"]["detail"] == "version 1" and r["states"]["copied"] == 4 and r["blocks"]["copied"] == 1 and r["assignments"]["copied"] == 1 and r["overrides"]["copied"] == 1 and r["reservations"]["copied"] == 1, r' \
    --json 'assert all(set(x) == {"what", "copied", "kept", "dropped", "expired", "detail"} for x in d), d' \
    -- --db new copy-from "$OLD" --dry-run --json --now "$T0"
tcase "dry run: no rules stored" 4 --err-has "no rules" -- --db new check signup 192.0.2.1 --now "$T0"
tcase "dry run: no audit row" 0 --json 'assert all(r["op"] != "copy" for r in d), d' -- --db new audit --json

# ---- the copy ----
tcase "copy: TSV report" 0 --out-has "$(printf 'rules\t1\t0\t0\t0\tversion 1')" \
    --out-has "$(printf 'states\t4\t0\t0\t0\t-')" --out-has "$(printf 'reservations\t1\t0\t0\t0\t-')" \
    --out-lacks "WHAT" --err-empty -- --db new copy-from "$OLD" --now "$T0"
tcase "copy: counters carried over" 1 -- --db new --quiet check signup 192.0.2.1 --now "$T0"
tcase "copy: the source denies alike" 1 -- --db old --quiet check signup 192.0.2.1 --now "$T0"
tcase "copy: the block and its reason" 0 \
    --json 'assert [(b["key"], b["reason"], b["kind"]) for b in d] == [("user:9", "card testing", "manual")], d' \
    -- --db new blocks --json --now "$T0"
tcase "copy: the tier assignment" 0 --json 'assert [(t["pattern"], t["tier"]) for t in d if t["source"] == "operator"] == [("10.0.0.0/8", "pro")], d' \
    -- --db new tier list --json --now "$T0"
tcase "copy: the override" 0 --json 'assert [(o["key"], o["limit"]) for o in d] == [("bob", 5)], d' \
    -- --db new override list --json --now "$T0"
tcase "copy: the reservation commits by its id" 0 -- --db new commit "$ID" --now "$T0"
tcase "copy: audited" 0 --json 'c = [r for r in d if r["op"] == "copy"]; assert len(c) == 1 and c[0]["tool"] == "rlctl" and c[0]["reason"] == "from '"'"'old'"'"'" and "states 4 copied" in c[0]["after"], c' \
    -- --db new audit --json
tcase "copy: the rules' version audited" 0 --json 'assert [r["op"] for r in d].count("rules.copy") == 1, d' \
    -- --db new audit --json
rl --db old usage --json --now "$T0"
skipping || cp "$OUT" old-usage.json
tcase "copy: the same usage" 0 --json 'o = json.load(open("old-usage.json")); k = lambda r: (r["action"], r["key"], r["used"], r["remaining"], r["reset_ms"], r["state"]); assert sorted(map(k, d)) == sorted(map(k, o)) and len(d) == 5, (d, o)' \
    -- --db new usage --json --now "$T0"

# ---- again: the destination's rows are kept ----
tcase "again: kept" 0 --json 'r = {x["what"]: x for x in d}; assert r["rules"]["kept"] == 1 and r["rules"]["detail"] == "identical to version 1" and r["states"]["kept"] == 4 and r["states"]["copied"] == 0 and r["blocks"]["kept"] == 1, r' \
    -- --db new copy-from "$OLD" --json --now "$T0"

# ---- selectors ----
tcase "--counters alone" 0 --json 'assert [r["what"] for r in d] == ["states", "reservations"], d' \
    -- --db new copy-from "$OLD" --counters --json --now "$T0"
tcase "--rules --policy" 0 --json 'assert [r["what"] for r in d] == ["rules", "assignments", "overrides", "blocks"], d' \
    -- --db new copy-from "$OLD" --rules --policy --json --now "$T0"
tcase "quiet prints nothing" 0 --out "" -- --db new --quiet copy-from "$OLD" --policy --now "$T0"
tcase "expired rows are not copied" 0 --json 'r = {x["what"]: x for x in d}; assert r["states"]["expired"] == 4 and r["states"]["copied"] == 0, r' \
    -- --db empty copy-from "$OLD" --dry-run --json --now 2026-11-23T10:00:00Z

# ---- a table on a terminal ----
tassert "a table with a header on a terminal" python3 -c '
import os, pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=s, stderr=subprocess.STDOUT)
os.close(s)
out = b""
while True:
    try:
        b = os.read(m, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
t = out.decode()
assert p.returncode == 0, t
assert "dry run, nothing stored: would copy from" in t and "WHAT" in t and "DETAIL" in t, t
assert any(l.split()[:3] == ["states", "0", "4"] for l in t.splitlines()), t
' "$RLCTL" --db "$NEW" copy-from "$OLD" --counters --dry-run --now "$T0"

# ---- exit statuses ----
tcase "no such source" 3 --err-has "cannot open the source 'nowhere.db': no such database" \
    -- --db new copy-from nowhere.db
tcase "no such source: json" 3 --json 'assert d["error"]["code"] == "ENOTFOUND" and d["error"]["exit"] == 3, d' \
    -- --db new --json copy-from nowhere.db
tcase "the source is the destination" 2 --err-has "is the destination" -- --db new copy-from "$NEW"
tcase "a destination without rules" 4 --err-has "has no rules" -- --db empty copy-from "$OLD" --counters
tcase "a source without rules" 4 --err-has "has no rules to copy" -- --db new copy-from "$EMPTY" --rules
tcase "no such destination" "$NODB_RC" --err-has "$NODB_MSG" -- --db absent copy-from "$OLD"
tcase "unknown option" 2 --err-has "unknown option '--bogus'" -- --db new copy-from "$OLD" --bogus
tcase "no source" 2 --err-has "needs SRC" -- --db new copy-from
tcase "--from-counters with a URI" 2 --err-has "--from-counters" \
    -- --db new copy-from postgresql://u@127.0.0.1:1/x --from-counters c.db
tcase "the source's password is masked" 5 --err-has "cannot open the source 'postgresql://app:***@127.0.0.1:1/limits'" \
    -- --db new copy-from postgresql://app:s3cret@127.0.0.1:1/limits
tassert "no password in stderr" sh -c "! grep -q s3cret '$ERR'"

# ---- a split source (SQLite files) ----
sqlite_only "split deployments are SQLite files"
rl --db rules.db --counters counters.db init rules.yaml
rl --db rules.db --counters counters.db check signup 192.0.2.5 --now "$T0"
rl --db rules.db --counters counters.db block user:1 --reason split --now "$T0"
rl --db one.db init
tcase "a split source" 0 --json 'r = {x["what"]: x for x in d}; assert r["states"]["copied"] == 1 and r["blocks"]["copied"] == 1, r' \
    -- --db one.db copy-from rules.db --from-counters counters.db --json --now "$T0"
tcase "into a split deployment: refused" 2 --err-has "split deployment" \
    -- --db rules.db --counters counters.db copy-from one.db
tcase "a missing split counters file" 3 --err-has "no such database" \
    -- --db one.db copy-from rules.db --from-counters nothing.db
end_sqlite_only

# ---- SQLite into PostgreSQL and back ----
pg_only "copies between a SQLite file and PostgreSQL"
lite=$W/lite.db
"$RLCTL" --db "$lite" init rules.yaml >/dev/null 2>&1
for i in 1 2; do "$RLCTL" --db "$lite" --quiet check signup 198.51.100.1 --now "$T0"; done
rl --db pgdst init
tcase "a SQLite file into PostgreSQL" 0 --json 'r = {x["what"]: x for x in d}; assert r["rules"]["copied"] == 1 and r["states"]["copied"] == 1, r' \
    -- --db pgdst copy-from "$lite" --json --now "$T0"
tcase "... counts the same" 0 --json 'assert d["remaining"] == 0 and d["allowed"] is True, d' \
    -- --db pgdst check signup 198.51.100.1 --json --now "$T0"
back=$W/back.db
"$RLCTL" --db "$back" init >/dev/null 2>&1
tassert "PostgreSQL into a SQLite file" sh -c '"$1" --db "$2" copy-from "$3" --json --now "$4" | python3 -c "
import json, sys
r = {x[\"what\"]: x for x in json.load(sys.stdin)}
assert r[\"states\"][\"copied\"] == 4 and r[\"reservations\"][\"copied\"] == 1, r"' _ "$RLCTL" "$back" "$OLD" "$T0"
tassert "... and denies alike" sh -c '! "$1" --db "$2" --quiet check signup 192.0.2.1 --now "$3"' _ "$RLCTL" "$back" "$T0"
end_pg_only

finish
