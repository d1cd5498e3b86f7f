#!/usr/bin/env bash
# rlctl --json: every command's output against its documented shape
# (issue #20).  tests/cli/json-shapes.json holds the shapes, rlctl(1)'s
# JSON OUTPUT section is made from it (checked here), and every command of
# rlctl's table is run with --json in states that give both the null and
# the non-null form of its members where there are two (a block forever
# and one with an end, a penalty with its rule, an assignment of the file
# and one of an operator, ...).  jsonshape.check is strict: exactly the
# documented members, booleans as booleans, times as NAME_ms and NAME_at
# that agree.  A change of a shape fails here until json-shapes.json, the
# man page and the readers of the output change with it.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
SHAPES=$ROOT/tests/cli
MAN=$ROOT/docs/man/rlctl.1
shape() {  # COMMAND-SHAPE: a --json check of the output against it
    printf 'import sys; sys.path.insert(0, %s); import jsonshape; jsonshape.check(d, %s)' \
        "'$SHAPES'" "'$1'"
}

tassert "rlctl(1)'s JSON SHAPES section is made from json-shapes.json" \
    python3 "$SHAPES/jsonshape.py" --check-man "$MAN"

# Every command of rlctl's table has a documented shape.
"$RLCTL" help --json >help.json 2>/dev/null
tassert "every command has a documented shape" python3 -c '
import json, sys
sys.path.insert(0, sys.argv[1]); import jsonshape
docs = [n.split(":")[0] for k in jsonshape.SPEC["commands"] for n in k.split(", ")]
missing = []
for c in json.load(open("help.json"))["commands"]:
    name = c["name"] + (" " + c["sub"] if c["sub"] else "")
    if not any(d == name or d.startswith(name + " ") for d in docs):
        missing.append(name)
assert not missing, "no shape for: %s" % missing' "$SHAPES"

# The checker itself fails on what it must refuse.
tassert "the checker refuses 1 for a bool, a missing and an extra member, a bad time" python3 -c '
import sys; sys.path.insert(0, sys.argv[1]); import jsonshape
good = {"blocked": "k", "action": None, "until_ms": 1795258800000,
        "until_at": "2026-11-21T11:00:00.000Z", "reason": None}
jsonshape.check(good, "block")
bad = [dict(good, until_at="2026-11-21T11:00:00Z"), dict(good, until_at="2026-11-21T11:00:00.001Z"),
       dict(good, until_ms=None), dict(good, extra=1), {k: v for k, v in good.items() if k != "reason"},
       dict(good, until_ms=True), dict(good, until_at=None), dict(good, action=1)]
for b in bad:
    try:
        jsonshape.check(b, "block")
    except AssertionError:
        continue
    raise SystemExit("accepted %r" % b)
try:
    jsonshape.check({"reset": 1, "action": "a", "key": "k"}, "reset")
    raise SystemExit("accepted 1 as a bool")
except AssertionError:
    pass' "$SHAPES"

cat >rules.yaml <<'EOF'
version: 1
defaults: { tier: free }
tiers: { free: {}, pro: {}, staff: { unlimited: true } }
actions:
  signup:
    key: ip
    limits:
      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d, block_for: 1h }
    tiers:
      pro: [ { name: daily, limit: 10 } ]
  login:
    limits:
      - { name: burst, algorithm: gcra, limit: 5, window: 1m }
assignments:
  - { key: "10.0.0.0/8", action: signup, tier: staff }
EOF
sed 's/limit: 3,/limit: 2,/' rules.yaml >lower.yaml
printf '# the same rules\n' | cat - rules.yaml >same.yaml
printf 'version: 1\nactions:\n  a:\n    limits: [ { name: x, limt: 1, window: 1s } ]\n' >bad.yaml

# ---- rule sets ----
tcase "init" 0 --json "$(shape init)" --json 'assert d["created"] is True and d["changed"] is True and d["counters"] is None' \
    -- --db db init rules.yaml --json --now "$T0"
tcase "init again: unchanged" 0 --json "$(shape init)" --json 'assert d["created"] is False and d["changed"] is False and d["version"] == 1' \
    -- --db db init same.yaml --json --now "$T0"
tcase "apply unchanged" 0 --json "$(shape apply)" --json 'assert d == {"file": "same.yaml", "version": 1, "changed": False}' \
    -- --db db apply same.yaml --json --now "$T0"
for i in 1 2 3; do rl --db db check signup 192.0.2.1 --now "$T0"; done
tcase "apply --dry-run" 0 --json "$(shape 'apply --dry-run')" \
    --json 'assert d["changed"] is True and d["over"][0]["tier"] is None and d["over"][0]["used"] == 3' \
    -- --db db apply --dry-run lower.yaml --json --now "$T0"
tcase "lint, valid" 0 --json "$(shape 'lint, apply --check')" --json 'assert d["valid"] is True and d["errors"] == []' \
    -- lint rules.yaml --json
tcase "lint, invalid" 4 --json "$(shape 'lint, apply --check')" \
    --json 'e = d["errors"]; assert d["valid"] is False and len(e) == 2 and e[0]["line"] == 4' \
    -- lint bad.yaml --json
tcase "apply --check" 4 --json "$(shape 'lint, apply --check')" -- apply --check bad.yaml --json
tcase "lint, empty file: no place" 4 --json "$(shape 'lint, apply --check')" \
    --json 'assert d["errors"][0]["line"] is None and d["errors"][0]["path"] is None' -- lint /dev/null --json
tcase "apply, invalid rules" 4 --json "$(shape 'init, apply, apply --dry-run: invalid rules')" \
    --json 'assert d["error"]["code"] == "ECONFIG" and len(d["error"]["errors"]) == 2' \
    -- --db db apply bad.yaml --json
tcase "apply --dry-run, invalid rules" 4 --json "$(shape 'init, apply, apply --dry-run: invalid rules')" \
    -- --db db apply --dry-run bad.yaml --json
tcase "init, invalid rules" 4 --json "$(shape 'init, apply, apply --dry-run: invalid rules')" \
    -- --db db2 init bad.yaml --json
tcase "apply" 0 --json "$(shape apply)" --json 'assert d["changed"] is True and d["version"] == 2' \
    -- --db db apply lower.yaml --json --now "$T0" --comment "two a day"
tcase "export" 0 --json "$(shape export)" --json 'assert d["version"] == 2' -- --db db export --json
tcase "export VERSION" 0 --json "$(shape export)" --json 'assert d["version"] == 1' -- --db db export 1 --json
tcase "rules" 0 --json "$(shape rules)" \
    --json 'a = {x["name"]: x for x in d["actions"]}; assert a["signup"]["tiers"]["pro"][0]["tier"] == "pro" and a["signup"]["limits"][0]["tier"] is None' \
    -- --db db rules --json
tcase "versions" 0 --json "$(shape versions)" \
    --json 'assert d[0]["active"] is True and d[0]["comment"] == "two a day" and d[1]["active"] is False' \
    -- --db db versions --json
tcase "rollback" 0 --json "$(shape rollback)" -- --db db rollback 1 --json --now "$T0"
tcase "set-limit" 0 --json "$(shape set-limit)" --json 'assert d["tier"] is None' \
    -- --db db set-limit signup daily 3 --json --now "$T0"
tcase "set-limit --tier" 0 --json "$(shape set-limit)" --json 'assert d["tier"] == "pro"' \
    -- --db db set-limit signup daily 11 --tier pro --json --now "$T0"

# ---- checks ----
tcase "check, denied into a penalty" 1 --json "$(shape check)" \
    --json 'assert d["allowed"] is False and d["limits"][0]["allowed"] is False and d["limits"][0]["last_at"]' \
    -- --db db check signup 192.0.2.1 --json --now "$T0"
tcase "check, blocked" 1 --json "$(shape check)" --json 'assert d["reason"] == "blocked"' \
    -- --db db check signup 192.0.2.1 --json --now "$T0"
tcase "check, a fresh key" 0 --json "$(shape check)" --json 'assert d["allowed"] is True and d["rule"] == "burst"' \
    -- --db db check login u1 --json --now "$T0"
tcase "check, several" 0 --json "$(shape 'check (several)')" --json 'assert len(d["items"]) == 2' \
    -- --db db check login u2 signup 192.0.2.2 --json --now "$T0"
tcase "refund" 0 --json "$(shape refund)" -- --db db refund login u2 --json --now "$T0"
tcase "reserve" 0 --json "$(shape reserve)" --json 'assert d["id"] > 0' \
    -- --db db reserve signup 192.0.2.3 --json --now "$T0"
ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$OUT")
tcase "commit" 0 --json "$(shape commit)" -- --db db commit "$ID" --json --now "$T0"
tcase "reserve, cost over the capacity" 1 --json "$(shape reserve)" --json 'assert d["id"] is None' \
    -- --db db reserve signup 192.0.2.4 --cost 9 --json --now "$T0"
tcase "reserve again" 0 --json "$(shape reserve)" -- --db db reserve signup 192.0.2.4 --json --now "$T0"
ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$OUT")
tcase "cancel" 0 --json "$(shape cancel)" -- --db db cancel "$ID" --json --now "$T0"

# ---- per-key policy ----
tcase "block forever" 0 --json "$(shape block)" --json 'assert d["until_ms"] is None and d["action"] is None and d["reason"] == "abuse"' \
    -- --db db block bad:1 --reason abuse --json --now "$T0"
tcase "block for an hour" 0 --json "$(shape block)" --json 'assert d["until_at"] == "2026-11-21T11:00:00.000Z" and d["reason"] is None' \
    -- --db db block bad:2 --action login --for 1h --json --now "$T0"
tcase "blocks" 0 --json "$(shape blocks)" \
    --json 'k = {b["key"]: b for b in d}; assert k["192.0.2.1"]["rule"] == "daily" and k["bad:1"]["until_ms"] is None and k["bad:2"]["action"] == "login"' \
    -- --db db blocks --json --now "$T0"
tcase "usage" 0 --json "$(shape usage)" --json 'assert any(r["blocked"] is True and r["block_until_at"] for r in d)' \
    -- --db db usage --json --now "$T0"
tcase "explain, penalised" 0 --json "$(shape explain)" \
    --json 'i = d["info"]; assert i["blocked"] is True and i["block_rule"] == "daily" and i["block_until_at"] == "2026-11-21T11:00:00.000Z"' \
    -- --db db explain signup 192.0.2.1 --json --now "$T0"
tcase "unblock" 0 --json "$(shape unblock)" -- --db db unblock bad:2 --action login --json --now "$T0"
tcase "tier set" 0 --json "$(shape 'tier set')" --json 'assert d["expires_ms"] is None and d["action"] is None' \
    -- --db db tier set user:* pro --json --now "$T0"
tcase "tier set, for a day" 0 --json "$(shape 'tier set')" --json 'assert d["expires_at"] == "2026-11-22T10:00:00.000Z" and d["action"] == "login"' \
    -- --db db tier set alice pro --action login --for 1d --json --now "$T0"
tcase "tier list" 0 --json "$(shape 'tier list')" \
    --json 's = {r["pattern"]: r["source"] for r in d}; assert s == {"10.0.0.0/8": "file", "alice": "operator", "user:*": "operator"}, s' \
    -- --db db tier list --json --now "$T0"
tcase "explain, by a pattern" 0 --json "$(shape explain)" --json 'assert d["info"]["tier_pattern"] == "user:*" and d["info"]["block_reason"] is None' \
    -- --db db explain login user:7 --json --now "$T0"
tcase "tier unset" 0 --json "$(shape 'tier unset')" -- --db db tier unset alice --action login --json --now "$T0"
tcase "override set" 0 --json "$(shape 'override set')" -- --db db override set login u1 burst 9 --for 1d --json --now "$T0"
tcase "override set, forever" 0 --json "$(shape 'override set')" --json 'assert d["expires_at"] is None' \
    -- --db db override set login u3 burst 9 --json --now "$T0"
tcase "override list" 0 --json "$(shape 'override list')" -- --db db override list --json --now "$T0"
tcase "explain, overridden" 0 --json "$(shape explain)" --json 'assert d["limits"][0]["overridden"] is True and d["audit"]' \
    -- --db db explain login u1 --json --now "$T0"
tcase "override unset" 0 --json "$(shape 'override unset')" -- --db db override unset login u1 burst --json --now "$T0"
tcase "reset" 0 --json "$(shape reset)" -- --db db reset login u1 --json --now "$T0"

# ---- events, bulk changes, upkeep (issue #20 items 7, 10) ----
for i in 1 2; do rl --db db check signup 192.0.2.9 --now "$T0"; done
tcase "events" 0 --json "$(shape events)" --json 'assert any(e["until_at"] and e["rule"] == "daily" for e in d)' \
    -- --db db events --json --now "$T0"
tcase "events prune" 0 --json "$(shape 'events prune, audit prune')" \
    -- --db db events prune --older-than 1d --json --now "$T0"
tcase "audit prune" 0 --json "$(shape 'events prune, audit prune')" \
    --json 'assert d["before_at"] == "2026-11-20T10:00:00.000Z"' -- --db db audit prune --older-than 1d --json --now "$T0"
tcase "unblock --all" 0 --json "$(shape 'unblock --all')" --json 'assert d["unblocked"] >= 1 and d["action"] is None' \
    -- --db db unblock --all --json --now "$T0"
tcase "reset --action" 0 --json "$(shape 'reset --action')" -- --db db reset --action login --json --now "$T0"
tcase "metrics refuses --json" 2 --json "$(shape metrics)" -- --db db metrics --json
tcase "migrate --dry-run" 0 --json "$(shape migrate)" --json 'assert d["dry_run"] is True and d["upgraded"] is False' \
    -- --db db migrate --dry-run --json

# ---- the rest ----
tcase "audit" 0 --json "$(shape audit)" --json 'assert any(r["action"] is None for r in d) and any(r["reason"] == "abuse" for r in d)' \
    -- --db db audit --json
tcase "gc" 0 --json "$(shape gc)" -- --db db gc --json --now "$T0"
tcase "stats" 0 --json "$(shape stats)" --json 'assert d["totals"] and d["recent"] and isinstance(d["totals"][0]["allowed"], int)' \
    -- --db db stats --json --now "$T0"
tcase "doctor" 0 --json "$(shape doctor)" -- --db db doctor --json
rl --db src init rules.yaml --now "$T0"
db_of src
tcase "copy-from" 0 --json "$(shape copy-from)" -- --db db copy-from "$REPLY" --dry-run --json --now "$T0"
tcase "hold" 0 --json "$(shape hold)" -- --db db hold --for 10ms --json
tcase "help" 0 --json "$(shape help)" -- help --json
tcase "help COMMAND" 0 --json "$(shape help)" --json 'assert [c["sub"] for c in d["commands"]] == ["set", "unset", "list"]' \
    -- help tier --json
tcase "a failure" 3 --json "$(shape 'any command, on failure')" -- --db db check nope k --json
tcase "a usage error" 2 --json "$(shape 'any command, on failure')" -- chek --json
finish
