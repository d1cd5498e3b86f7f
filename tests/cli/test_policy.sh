#!/usr/bin/env bash
# rlctl per-key policy and views: block, unblock, blocks, tier, override,
# reset, usage, explain, audit (a row after every admin change).
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
write_rules rules.yaml 3
rl --db db init rules.yaml
audit_op() {  # NAME OP [PYTHON CONDITION ON r]
    tcase "audit after $1" 0 --json "r = d[0]; assert r['op'] == '$2' and r['tool'] == 'rlctl' and r['ts_ms'] > 0, r" \
        --json "r = d[0]; assert ${3:-True}, r" -- --db db audit --json --limit 1
}

# ---- blocks ----
tcase "block forever" 0 --out "blocked '198.51.100.1' for every action until unblocked" \
    -- --db db block 198.51.100.1 --reason "abuse" --now "$T0"
audit_op "block" block "r['key'] == '198.51.100.1' and r['reason'] == 'abuse'"
tcase "blocked key denied" 1 --json 'assert d["reason"] == "blocked" and d["retry_after_ms"] == -1' \
    -- --db db check signup 198.51.100.1 --now "$T0" --json
tcase "block for one action, timed" 0 --out "blocked 'bob' for 'login' until 2026-11-21T11:30:00.000Z" \
    -- --db db block bob --action login --for 1h30m --now "$T0"
tcase "blocks list tsv" 0 \
    --out "$(printf '198.51.100.1\t*\tforever\tmanual\t0\t-\tabuse\t%s\t2026-11-21T10:00:00.000Z\nbob\tlogin\t2026-11-21T11:30:00.000Z\tmanual\t0\t-\t-\t%s\t2026-11-21T10:00:00.000Z' "$(id -un)" "$(id -un)")" \
    -- --db db blocks --now "$T0"
tcase "blocks json" 0 --json 'assert [b["key"] for b in d] == ["198.51.100.1", "bob"] and d[0]["until_ms"] is None and d[0]["until_at"] is None and d[1]["action"] == "login" and d[1]["until_ms"] == 1795260600000' \
    -- --db db blocks --json --now "$T0"
tcase "timed block expired" 0 --json 'assert [b["key"] for b in d] == ["198.51.100.1"]' \
    -- --db db blocks --json --now 2026-11-21T12:00:00Z
tcase "unblock" 0 --out "unblocked '198.51.100.1' for every action" -- --db db unblock 198.51.100.1 --now "$T0"
audit_op "unblock" unblock "r['key'] == '198.51.100.1'"
tcase "unblocked key admitted" 0 -- --db db check signup 198.51.100.1 --now "$T0"
tcase "unblock not blocked" 3 --err-has "rlctl: cannot unblock '198.51.100.1' for every action: key is not blocked" \
    -- --db db unblock 198.51.100.1
# a block that has ended is not there to lift, swept or not (its row
# stays an hour for a clock that steps back, gc.c)
tcase "unblock of an ended block" 3 --err-has "key is not blocked for action login" \
    -- --db db unblock bob --action login --now 2026-11-21T11:30:00Z
tcase "unblock json" 0 --json 'assert d == {"unblocked": "bob", "action": "login"}' \
    -- --db db unblock bob --action login --json --now 2026-11-21T11:29:59.999Z
KEY=$'ctl\x07key\n'
tcase "block control key" 0 --out "blocked 'ctl\x07key\x0a' for every action until unblocked" -- --db db block "$KEY"
tcase "blocks shows it escaped" 0 --out-has 'ctl\x07key\x0a' --out-lacks $'\x07' -- --db db blocks
tcase "blocks json escaped" 0 --json 'assert d[0]["key"] == "ctl\\x07key\\x0a"' -- --db db blocks --json
tcase "audit key escaped" 0 --json 'assert d[0]["key"] == "ctl\\x07key\\x0a"' -- --db db audit --json
rl --db db unblock "$KEY"
tcase "json escapes control characters in text" 0 \
    --json 'assert d["reason"] == "bell\x07tab\tnul-free\x1f end"' \
    -- --db db block ctl2 --reason $'bell\x07tab\tnul-free\x1f end' --json
tassert "json control characters as \\u00XX" grep -q 'bell\\u0007tab\\tnul-free\\u001f end' "$OUT"
rl --db db audit --json --limit 1
cp "$OUT" audit.json
tcase "audit json control characters" 0 --json 'assert d[0]["reason"] == "bell\x07tab\tnul-free\x1f end"' -- --db db audit --json --limit 1
rl --db db unblock ctl2

# ---- tiers ----
tcase "tier set" 0 --out "assigned '192.0.2.0/24' to tier 'pro' until unassigned" -- --db db tier set 192.0.2.0/24 pro --now "$T0"
audit_op "tier set" tier.set "r['key'] == '192.0.2.0/24'"
tcase "tier applies" 0 --json 'assert d["limit"] == 10' -- --db db check signup 192.0.2.9 --now "$T0" --json
tcase "tier set timed" 0 --out-has "until 2026-11-28T10:00:00.000Z" -- --db db tier set 'user:*' vip --for 1w --now "$T0"
tcase "tier list" 0 --json 'm = {r["pattern"]: r for r in d}; assert m["192.0.2.0/24"]["tier"] == "pro" and m["192.0.2.0/24"]["kind"] == "cidr" and m["192.0.2.0/24"]["expires_ms"] is None and m["user:*"]["kind"] == "prefix" and m["user:*"]["expires_ms"] == 1795860000000' \
    -- --db db tier list --json --now "$T0"
tcase "tier list tsv" 0 --out-has "$(printf '192.0.2.0/24\tcidr\t*\tpro\tnever')" -- --db db tier list --now "$T0"
tcase "tier unknown" 3 --err-has "tier 'gold' is not defined" -- --db db tier set k gold
tcase "tier unset" 0 --out "removed the tier assignment of '192.0.2.0/24'" -- --db db tier unset 192.0.2.0/24 --now "$T0"
audit_op "tier unset" tier.unset "r['key'] == '192.0.2.0/24'"
tcase "tier unset again" 3 --err-has "cannot remove the tier of '192.0.2.0/24'" -- --db db tier unset 192.0.2.0/24
tcase "tier gone" 0 --json 'assert d["limit"] == 3' -- --db db check signup 192.0.2.10 --now "$T0" --json

# ---- overrides ----
tcase "override set" 0 --out "set 'burst' of 'login' for 'carol' to 7 until unset" \
    -- --db db override set login carol burst 7 --now "$T0"
audit_op "override set" override.set "r['action'] == 'login' and r['key'] == 'carol'"
tcase "override applies" 0 --json 'b = [l for l in d["limits"] if l["name"] == "burst"][0]; assert b["limit"] == 7 and b["overridden"] == 1' \
    -- --db db check login carol --now "$T0" --json
tcase "override list" 0 --json 'assert len(d) == 1 and d[0]["key"] == "carol" and d[0]["limit_name"] == "burst" and d[0]["limit"] == 7' \
    -- --db db override list --json --now "$T0"
tcase "override list filtered out" 0 --json 'assert d == []' -- --db db override list --action signup --json --now "$T0"
tcase "override list by key" 0 --out-has "$(printf 'login\tcarol\tburst\t7\tnever')" -- --db db override list --key carol --now "$T0"
tcase "override bad limit" 2 --err-has "invalid limit: 'many'" -- --db db override set login carol burst many
tcase "override unknown limit name" 3 -- --db db override unset login carol nosuch
tcase "override unset" 0 --out "removed the override 'burst' of 'login' for 'carol'" -- --db db override unset login carol burst --now "$T0"
audit_op "override unset" override.unset "r['key'] == 'carol'"
tcase "override timed json" 0 --json 'assert d["expires_ms"] == 1795255260000 and d["limit"] == 9' \
    -- --db db override set login dave hourly 9 --for 1m --now "$T0" --json

# ---- reset ----
rl --db db check login erin --now "$T0"
rl --db db check login erin --now "$T0"
tcase "login exhausted" 1 -- --db db check login erin --now "$T0"
tcase "reset" 0 --out "reset the counters of 'login' for 'erin'" -- --db db reset login erin --now "$T0"
audit_op "reset" reset "r['action'] == 'login' and r['key'] == 'erin'"
tcase "reset took effect" 0 --json 'assert d["remaining"] == 1' -- --db db check login erin --now "$T0" --json
# counters that have expired are as good as swept: nothing to reset
# (erin's newest is of 10:00; burst 1m, hourly 1h)
tcase "reset of expired counters" 3 --err-has "cannot reset 'login' for 'erin'" \
    -- --db db reset login erin --now 2026-11-21T11:00:00.001Z
tcase "reset of counters at their last instant" 0 -- --db db reset login erin --now 2026-11-21T11:00:00Z
rl --db db check login erin --now "$T0"
tcase "reset unknown key" 3 --err-has "cannot reset 'login' for 'nobody-here'" -- --db db reset login nobody-here --now "$T0"
tcase "reset unknown action" 3 -- --db db reset nope erin

# ---- usage ----
tcase "usage json" 0 --json 'k = {(r["action"], r["key"]): r for r in d}; r = k[("login", "erin")]; assert r["used"] == 1 and r["limit"] == 2 and r["state"] in ("ok", "near") and ("signup", "198.51.100.1") in k' \
    -- --db db usage --json --now "$T0"
tcase "usage --action" 0 --json 'assert d and all(r["action"] == "signup" for r in d)' -- --db db usage --action signup --json --now "$T0"
tcase "usage --key" 0 --json 'assert [r["key"] for r in d] == ["erin"]' -- --db db usage --key eri --json --now "$T0"
tcase "usage --top" 0 --json 'assert len(d) == 1' -- --db db usage --top 1 --json --now "$T0"
tcase "usage --sort key" 0 --json 'ks = [r["key"] for r in d]; assert ks == sorted(ks)' -- --db db usage --sort key --json --now "$T0"
tcase "tier set --action" 0 --json 'assert d["tier"] == "pro"' -- --db db tier set only-login pro --action login --json
tcase "tier list shows the action" 0 --json 'assert [r["action"] for r in d if r["pattern"] == "only-login"] == ["login"]' -- --db db tier list --json
tcase "tier unset without --action misses it" 3 -- --db db tier unset only-login
tcase "tier unset --action" 0 -- --db db tier unset only-login --action login
tcase "tier set --action unknown" 3 --err-has "'nope' is not defined" -- --db db tier set x pro --action nope
tcase "usage --sort denied" 0 --json 'n = [r["denied"] for r in d]; e = [r for r in d if r["key"] == "erin" and r["action"] == "login"][0]; assert n == sorted(n, reverse=True) and n[0] >= 1 and e["denied"] >= 1' \
    -- --db db usage --sort denied --json --now "$T0"
tcase "usage tsv" 0 --out-has "$(printf 'login\terin\tfree\tburst\t1\t2\t1\t50.0%%')" -- --db db usage --key erin --now "$T0"

# ---- explain ----
rl --db db block erin --action login --reason "explain me" --now "$T0"
tcase "explain json" 0 --json 'i = d["info"]; assert i["action"] == "login" and i["key"] == "erin" and i["tier"] == "free" and i["blocked"] == 1 and i["block_reason"] == "explain me"' \
    --json 'assert [l["name"] for l in d["limits"]] == ["burst", "hourly"]' \
    --json 'assert [a["op"] for a in d["audit"]][:2] == ["block", "reset"] and all(a["key"] == "erin" for a in d["audit"])' \
    -- --db db explain login erin --now "$T0" --json
tcase "explain tsv" 0 --out-has "$(printf 'tier\tfree')" --out-has "$(printf 'blocked\tyes')" \
    --out-has "$(printf 'burst\tfixed_window\t2\t2\t60000')" --out-has "explain me" -- --db db explain login erin --now "$T0"
tcase "explain no audit" 0 --json 'assert d["audit"] == []' -- --db db explain login erin --now "$T0" --json --audit 0
tcase "explain normalises" 0 --json 'assert d["info"]["key"] == "192.0.2.50"' -- --db db explain signup ::ffff:192.0.2.50 --json
tcase "explain unknown action" 3 -- --db db explain nope erin

# ---- audit ----
tcase "audit --key" 0 --json 'assert d and all(r["key"] == "erin" for r in d)' -- --db db audit --key erin --json
tcase "audit --limit" 0 --json 'assert len(d) == 2' -- --db db audit --limit 2 --json
tcase "audit tsv" 0 --out-has "$(printf 'rlctl\tblock\tlogin\terin')" -- --db db audit --limit 1

# ---- on a terminal: aligned tables with a header ----
if command -v script >/dev/null 2>&1; then
    rl --db db block a-much-longer-key-name --for 1h --now "$T0"
    db_of db
    DB=$(printf '%q' "$REPLY")
    script -qec "$(printf '%q' "$RLCTL") --db $DB blocks --now $T0" /dev/null >tty.txt 2>&1
    tassert "tty: exit 0" test $? = 0
    tassert "tty: aligned table with header" python3 -c '
import sys
lines = [l for l in open(sys.argv[1], encoding="utf-8").read().replace("\r", "").split("\n") if l]
assert lines[0].split() [:3] == ["KEY", "ACTION", "UNTIL"], lines[0]
col = lines[0].index("ACTION")
assert len(lines) == 3, lines
for l in lines[1:]:
    assert l[col - 2:col] == "  " and l[col] != " ", (l, col)
assert "\t" not in "".join(lines)
' tty.txt
    script -qec "$(printf '%q' "$RLCTL") --db $DB check login erin --now $T0" /dev/null >tty.txt 2>&1
    tassert "tty: check denied exit 1" test $? = 1
    tassert "tty: check shows limits table" grep -q "^LIMIT  *ALGORITHM  *USED" tty.txt
    tassert "tty: durations readable" grep -q "forever\|[0-9]m\|[0-9]s" tty.txt
else
    echo "note: script(1) not installed, terminal output not checked"
fi

finish
