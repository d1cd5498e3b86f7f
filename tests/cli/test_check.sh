#!/usr/bin/env bash
# rlctl requests: check (JSON shape, exit codes), peek, refund, reserve,
# commit, cancel.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
write_rules rules.yaml 3
rl --db db init rules.yaml

SHAPE='
for k in ("allowed","action","key","limit","remaining","reset_ms","retry_after_ms","delay_ms","rule","reason","limits"):
    assert k in d, k
assert isinstance(d["allowed"], bool) and isinstance(d["limits"], list)
'
tcase "check json shape" 0 --json "$SHAPE" \
    --json 'assert d["allowed"] is True and d["action"] == "signup" and d["key"] == "192.0.2.1" and d["limit"] == 3 and d["remaining"] == 2 and d["retry_after_ms"] == 0 and d["delay_ms"] == 0 and d["rule"] == "daily" and d["reason"] == "ok" and d["reset_ms"] == 14*3600*1000' \
    --json 'l=d["limits"]; assert len(l) == 1 and l[0]["name"] == "daily" and l[0]["used"] == 1 and l[0]["remaining"] == 2 and l[0]["algorithm"] == "fixed_window"' \
    -- --db db check signup 192.0.2.1 --now "$T0" --json
tcase "check tsv" 0 --out "$(printf 'result\tallowed\naction\tsignup\nkey\t192.0.2.1\nrule\tdaily\nreason\tok\nlimit\t3\nremaining\t1\nreset_ms\t50400000\nretry_after_ms\t0\ndelay_ms\t0')" \
    -- --db db check signup 192.0.2.1 --now "$T0"
tcase "check peek charges nothing" 0 --json 'assert d["allowed"] and d["remaining"] == 1' \
    -- --db db check signup 192.0.2.1 --now "$T0" --json --peek
tcase "peek again same" 0 --json 'assert d["remaining"] == 1' -- --db db check signup 192.0.2.1 --now "$T0" --json --peek
tcase "check cost 2 denied" 1 --json 'assert d["allowed"] is False and d["reason"] == "limit" and d["retry_after_ms"] == 14*3600*1000' \
    -- --db db check signup 192.0.2.1 --now "$T0" --json --cost 2
tcase "check last unit" 0 --out "" -- --db db --quiet check signup 192.0.2.1 --now "$T0"
tcase "check denied exit 1" 1 --out-has "$(printf 'result\tdenied')" -- --db db check signup 192.0.2.1 --now "$T0"
tcase "check denied quiet" 1 --out "" --err-empty -- --db db check signup 192.0.2.1 --now "$T0" --quiet
tcase "cost exceeds capacity" 1 --json 'assert d["reason"] == "cost_exceeds_limit" and d["retry_after_ms"] == -1' \
    -- --db db check signup 192.0.2.99 --now "$T0" --json --cost 4
tcase "ipv4-mapped key normalised" 0 --json 'assert d["key"] == "192.0.2.50"' \
    -- --db db check signup ::ffff:192.0.2.50 --now "$T0" --json
tcase "unknown action" 3 --err-has "rlctl: cannot check 'nope' for 'k': action 'nope' is not defined" -- --db db check nope k
tcase "unknown action json" 3 --json 'assert d["error"]["code"] == "ENOACTION"' -- --db db check nope k --json
tcase "invalid key for action" 2 --err-has "key is not valid for action 'signup'" -- --db db check signup not-an-ip
tcase "empty key" 2 --err-has "cannot check 'login' for ''" -- --db db check login ""
# rlctl takes keys up to the largest max_key_len an application may open
# with (RLS_KEY_MAX_LIMIT, 4096): it must reach every key a database holds.
tcase "key too long" 2 -- --db db check login "$(head -c 4097 /dev/zero | tr '\0' k)"
tcase "key of 300 bytes (an application's larger max_key_len)" 0 -- --db db check login "$(head -c 300 /dev/zero | tr '\0' k)"
tcase "cost too large" 2 --err-has "invalid value for --cost" -- --db db check login k --cost 1000000001

# Keys with control bytes are printed escaped, never raw.
KEY=$'us\x01er\x1b[2J\\\xff'
tcase "control key escaped (tsv)" 0 --out-has 'us\x01er\x1b[2J\\\xff' -- --db db check login "$KEY" --now "$T0"
tassert "no raw control bytes in output" sh -c "! LC_ALL=C grep -q \$(printf '[\\001\\033\\377]') '$OUT'"
tcase "control key escaped (json)" 0 --json 'assert d["key"] == "us\\x01er\\x1b[2J\\\\\\xff"' -- --db db check login "$KEY" --now "$T0" --json
tcase "control key denied message" 1 -- --db db check login "$KEY" --now "$T0"
tcase "control key in error" 3 --err-has "for 'us\x01er" -- --db db check nope "$KEY"

# refund.
tcase "refund" 0 --out "refunded 1 unit(s) of 'signup' for '192.0.2.1'" -- --db db refund signup 192.0.2.1 --now "$T0"
tcase "refund made room" 0 --json 'assert d["remaining"] == 0' -- --db db check signup 192.0.2.1 --now "$T0" --json
tcase "refund json" 0 --json 'assert d == {"refunded": 2, "asked": 2, "action": "signup", "key": "192.0.2.1"}' \
    -- --db db refund signup 192.0.2.1 --cost 2 --now "$T0" --json
tcase "refund unknown action" 3 -- --db db refund nope k

# reserve, commit, cancel.
tcase "reserve prints id" 0 -- --db db reserve signup 192.0.2.2 --now "$T0"
ID1=$(cat "$OUT")
tassert "reserve id is a number" test "$ID1" -gt 0
tcase "reserve json" 0 --json "$SHAPE" --json 'assert d["allowed"] and isinstance(d["id"], int) and d["id"] > 0 and d["remaining"] == 1' \
    -- --db db reserve signup 192.0.2.2 --now "$T0" --json --ttl 10m
ID2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$OUT")
tcase "reserve cost 2 denied" 1 --out "" --err-has "reservation of 'signup' for '192.0.2.2' denied" \
    -- --db db reserve signup 192.0.2.2 --now "$T0" --cost 2
tcase "reserve denied json" 1 --json 'assert d["allowed"] is False and d["id"] is None' \
    -- --db db reserve signup 192.0.2.2 --now "$T0" --cost 2 --json
tcase "commit" 0 --out "committed reservation $ID1" -- --db db commit "$ID1" --now "$T0"
tcase "commit again" 3 --err-has "cannot commit reservation $ID1" -- --db db commit "$ID1" --now "$T0"
tcase "cancel" 0 --json "assert d == {'cancelled': $ID2}" -- --db db cancel "$ID2" --now "$T0" --json
tcase "cancel refunded" 0 --json 'assert d["remaining"] == 2 and d["limits"][0]["used"] == 1' -- --db db check signup 192.0.2.2 --now "$T0" --json --peek
tcase "cancel unknown" 3 --err-has "cannot cancel reservation 999999" -- --db db cancel 999999
tcase "reserve short ttl" 0 -- --db db reserve signup 192.0.2.3 --ttl 1s --now "$T0"
ID3=$(cat "$OUT")
tcase "commit after ttl" 3 --err-has "expired" -- --db db commit "$ID3" --now 2026-11-21T10:00:05Z
tcase "expired reservation refunded" 0 --json 'assert d["remaining"] == 3' \
    -- --db db check signup 192.0.2.3 --json --peek --now 2026-11-21T10:00:05Z

# Several ACTION KEY pairs: one atomic batch (rls_check_many).
tcase "batch admitted" 0 --out "$(printf 'signup\t192.0.2.70\tallowed\tok\tdaily\t2\t0\nlogin\tbatch\tallowed\tok\tburst\t1\t0')" \
    -- --db db check signup 192.0.2.70 login batch --now "$T0"
tcase "batch json, one item denies" 1 \
    --json 'assert d["allowed"] is False and [i["reason"] for i in d["items"]] == ["batch", "limit"]' \
    --json 'i=d["items"]; assert i[0]["retry_after_ms"] == i[1]["retry_after_ms"] > 0 and i[0]["action"] == "signup" and i[1]["key"] == "batch"' \
    -- --db db check signup 192.0.2.70 login batch --cost 2 --now "$T0" --json
tcase "batch denied charged nothing" 0 --json 'assert d["remaining"] == 2' \
    -- --db db check signup 192.0.2.70 --now "$T0" --json --peek
tcase "batch odd arguments" 2 --err-has "unexpected argument 'login': check takes ACTION KEY pairs" \
    -- --db db check signup 192.0.2.70 login --now "$T0"
tcase "batch peek refused" 2 --err-has "--peek takes one ACTION KEY" \
    -- --db db check signup 192.0.2.70 login batch --peek
tcase "batch same key refused" 2 --err-has "items 0 and 1 are the same action 'login'" \
    -- --db db check login k login k
tcase "batch invalid item names it" 3 --err-has "item 1: action 'nope' is not defined" \
    -- --db db check login k nope k

# A database without rules.
rl --db empty.db init
tcase "check without rules" 4 --err-has "no rules applied" -- --db empty.db check signup 1.2.3.4
tcase "check without rules json" 4 --json 'assert d["error"]["code"] == "ENORULES" and d["error"]["exit"] == 4' \
    -- --db empty.db check signup 1.2.3.4 --json

finish
