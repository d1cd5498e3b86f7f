#!/usr/bin/env bash
# rlctl set-limit: one value written in the active rules changed in place
# (rls_rules_set_limit_at): only its digits change, the library enforces
# it, what a tier inherits is refused, --if-version guards a lost update.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
write_rules v1.yaml 3
printf '# operators edit this file\n' >>v1.yaml
rl --db db init v1.yaml

tcase "default limit" 0 --out "set the limit of 'daily' of action 'signup' (default limits) to 2: version 2" \
    -- --db db set-limit signup daily 2 --now "$T0"
rl --db db export
cp "$OUT" v2.yaml
tassert "one line changed" sh -c '[ "$(diff v1.yaml v2.yaml | grep -c "^[<>]")" = 2 ]'
tassert "the new line" grep -qF -- "- { name: daily, algorithm: fixed_window, limit: 2, window: 1d }" v2.yaml
tassert "the comment kept" grep -qF "# operators edit this file" v2.yaml
rl --db db check signup 192.0.2.9 --now "$T0"
rl --db db check signup 192.0.2.9 --now "$T0"
tcase "the new limit is enforced" 1 --json 'assert d["limit"] == 2 and d["allowed"] is False' \
    -- --db db check signup 192.0.2.9 --now "$T0" --json
tcase "a tier's replacement, json" 0 \
    --json 'assert d == {"version": 3, "action": "signup", "tier": "pro", "name": "daily", "field": "limit", "value": 11}' \
    -- --db db set-limit signup daily 11 --tier pro --comment "pro needs more" --json --now "$T0"
tcase "audited" 0 --json 'assert d[0]["op"] == "rules.set_limit" and d[0]["reason"] == "pro needs more" and d[0]["after"] == "version 3"' \
    -- --db db audit --json --limit 1
tcase "versions: source" 0 --json 'assert d[0]["version"] == 3 and d[0]["source"] == "rlctl set-limit"' \
    -- --db db versions --json
tcase "inherited by the tier" 3 --err-has "the tier uses the default limits" \
    -- --db db set-limit login burst 4 --tier pro
tcase "no such action" 3 --err-has "action 'nope' is not in the active rules" -- --db db set-limit nope daily 4
tcase "a burst not written" 3 --err-has "has no 'burst:' of its own" -- --db db set-limit signup daily 4 --burst
tcase "zero" 2 --err-has "invalid limit" -- --db db set-limit signup daily 0
tcase "invalid for the algorithm" 4 --err-has "sliding_log" -- --db db set-limit login hourly 100000000
tcase "if-version: stale" 5 --err-has "the active rules are version 3, not 2" \
    -- --db db set-limit signup daily 5 --if-version 2
tcase "if-version: current" 0 --out-has "version 4" -- --db db set-limit signup daily 5 --if-version 3
tcase "nothing stored by the refusals" 0 --json 'assert [v["version"] for v in d] == [4, 3, 2, 1]' \
    -- --db db versions --json

finish
