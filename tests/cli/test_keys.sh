#!/usr/bin/env bash
# rlctl and what an application stored (issue #17): keys longer than the
# default max_key_len (defect 8), expired reservations seen by peek,
# explain and usage as the next check sees them (defect 7), usage past the
# capacity under an unlimited tier and under overage, and the units a
# refund really gave back (defect 11).  The application is the Python
# binding over the library of this build, opened with max_key_len 1000.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
T0_MS=1795255200000
cat >rules.yaml <<'EOF'
version: 1
tiers: { free: {}, staff: { unlimited: true } }
actions:
  api:
    limits: [ { name: l, algorithm: fixed_window, limit: 2, window: 1h, block_for: 1h } ]
  soft:
    limits: [ { name: l, algorithm: fixed_window, limit: 10, window: 1h, overage: 50 } ]
EOF
rl --db db init rules.yaml
db_of db
DB=$REPLY
LIB=$(dirname "$RLCTL")/librlstore.so
LONG=$(head -c 600 /dev/zero | tr '\0' k)
# The application: python3 with the Python binding (py, tests/pyapp.sh).
. "$ROOT/tests/pyapp.sh"

app() {  # PYTHON: runs with `db` an application's handle (max_key_len 1000)
    py -c "
import rlstore
db = rlstore.Limiter.open('$DB', max_key_len=1000, tool='app')
LONG = '$LONG'
T0 = $T0_MS
$1
db.close()"
}

if py -c 'import rlstore._ffi; rlstore._ffi.get()' 2>/dev/null; then
# ---- defect 8: a 600-byte key of an application opened with max_key_len 1000 ----
tassert "application stores a 600-byte key, penalised" app "
for i in range(3): db.check('api', LONG, now_ms=T0)
assert not db.check('api', LONG, now_ms=T0).allowed"
tcase "blocks lists it" 0 --json 'assert [b["key"] for b in d] == ["k" * 600] and d[0]["kind"] == "penalty"' \
    -- --db db blocks --json --now "$T0"
tcase "usage lists it" 0 --json 'assert [r["key"] for r in d] == ["k" * 600] and d[0]["blocked"] == 1' \
    -- --db db usage --json --now "$T0"
tcase "explain of it" 0 --json 'assert d["info"]["key"] == "k" * 600 and d["info"]["blocked"] == 1' \
    -- --db db explain api "$LONG" --json --now "$T0"
tcase "unblock of it" 0 -- --db db unblock "$LONG" --now "$T0"
tcase "reset of it" 0 -- --db db reset api "$LONG" --now "$T0"
tcase "block of it" 0 -- --db db block "$LONG" --action api --now "$T0"
tcase "unblock of it, for the action" 0 -- --db db unblock "$LONG" --action api --now "$T0"
tcase "tier of it" 0 -- --db db tier set "$LONG" staff --now "$T0"
tassert "the application sees the tier" app "
r = db.check('api', LONG, now_ms=T0)
assert r.allowed, r"
tcase "tier unset of it" 0 -- --db db tier unset "$LONG" --now "$T0"
tcase "override of it" 0 -- --db db override set api "$LONG" l 7 --now "$T0"
tcase "explain shows the override" 0 --json 'assert d["limits"][0]["limit"] == 7' \
    -- --db db explain api "$LONG" --json --now "$T0"

else
    skip "the cases of a long key" "the Python binding cannot load $LIB"
fi

# ---- defect 7: two reservations of 10 s, 11 s later ----
tcase "reserve 1" 0 -- --db db reserve api r1 --ttl 10s --now "$T0"
tcase "reserve 2" 0 -- --db db reserve api r1 --ttl 10s --now "$T0"
tcase "peek before the TTL: denied" 1 -- --db db check --peek api r1 --now "$T0"
T11=2026-11-21T10:00:11Z
tcase "peek after the TTL: admitted, as the check will" 0 \
    --json 'assert d["allowed"] is True and d["remaining"] == 2' \
    -- --db db check --peek api r1 --json --now "$T11"
tcase "explain after the TTL" 0 --json 'assert d["info"]["allowed"] == 1 and d["limits"][0]["used"] == 0' \
    -- --db db explain api r1 --json --now "$T11"
tcase "usage after the TTL" 0 --json 'r = [x for x in d if x["key"] == "r1"][0]; assert r["used"] == 0 and r["state"] == "ok", r' \
    -- --db db usage --action api --json --now "$T11"
tcase "the check admits" 0 -- --db db check api r1 --now "$T11"

# ---- defect 11: usage past the capacity stays visible ----
tcase "staff tier" 0 -- --db db tier set u7 staff --now "$T0"
for i in 1 2 3 4 5 6 7; do rl --db db check api u7 --now "$T0"; done
tcase "usage shows 7 of 2" 0 --json 'r = [x for x in d if x["key"] == "u7"][0]; assert r["used"] == 7 and r["limit"] == 2 and r["fraction_ppm"] == 3500000, r' \
    -- --db db usage --action api --json --now "$T0"
tcase "usage tsv shows 7" 0 --out-has "$(printf 'api\tu7\tstaff\tl\t7\t2\t0\t')" -- --db db usage --action api --now "$T0"
tcase "explain shows 7 used" 0 --json 'assert d["limits"][0]["used"] == 7 and d["limits"][0]["remaining"] == 0' \
    -- --db db explain api u7 --json --now "$T0"
for i in $(seq 1 14); do rl --db db check soft o14 --now "$T0"; done
tcase "overage: 14 of 10 shown" 0 --json 'r = [x for x in d if x["key"] == "o14"][0]; assert r["used"] == 14 and r["limit"] == 10, r' \
    -- --db db usage --action soft --json --now "$T0"

# ---- defect 11: a refund says what it gave back ----
rl --db db check soft f1 --now "$T0"
tcase "refund of 5 gives back 1" 0 --out "refunded 1 unit(s) of 'soft' for 'f1' (asked for 5)" \
    -- --db db refund soft f1 --cost 5 --now "$T0"
tcase "refund of nothing in use" 0 --json 'assert d["refunded"] == 0 and d["asked"] == 1' \
    -- --db db refund soft f1 --json --now "$T0"
tcase "refund in a later window gives back nothing" 0 --json 'assert d["refunded"] == 0' \
    -- --db db refund soft o14 --json --now 2026-11-21T11:00:01Z
tcase "refund of what was used" 0 --json 'assert d["refunded"] == 3 and d["asked"] == 3' \
    -- --db db refund soft o14 --cost 3 --json --now "$T0"

finish
