#!/usr/bin/env bash
# rlctl (and rltop) in a split deployment: --counters / $RLSTORE_COUNTERS,
# init --mode/--group, checks and penalties in the counters file, admin
# changes in the rules file, listings of both, doctor of both, the roles
# refused, and an application user who may not write the rules: its checks
# work, its changes fail with EREADONLY.  (docs/SECURITY.md)
# With PostgreSQL (RLSTORE_TEST_PG) every case is skipped: a split
# deployment is one of SQLite files (test_uri.sh: --counters is refused).
. "$(dirname "$0")/lib.sh"
sqlite_only "a split deployment is one of SQLite files"

T0=2026-11-21T10:00:00Z
RLTOP=$(dirname "$RLCTL")/rltop
# (in a skipped part: nothing, for the arguments of skipped cases)
sq() {  # FILE SQL: one value, read-only
    skipping && return
    python3 -c 'import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print(c.execute(sys.argv[2]).fetchone()[0])' "$1" "$2"
}
mode_of() { skipping || stat -c %a "$1"; }
group_of() { skipping || stat -c %g "$1"; }

cat >rules.yaml <<'YAML'
version: 1
defaults: { tier: free }
tiers: { free: {}, pro: {} }
actions:
  api:
    key: ip
    limits: [ { name: day, algorithm: fixed_window, limit: 3, window: 1d } ]
    tiers:
      pro: [ { name: day, limit: 6 } ]
  login:
    limits: [ { name: burst, algorithm: fixed_window, limit: 2, window: 1m, block_for: 1h } ]
YAML

# A group the user may give files to.
if [ "$(id -u)" = 0 ]; then GRP=daemon; GID=$(getent group daemon | cut -d: -f3); else GID=$(id -g); GRP=$GID; fi

# ---- init -----------------------------------------------------------------
mkdir -p r c
skipping || chmod 755 r
skipping || chmod 777 c
S=(--db r/rules.db --counters c/counters.db)
tcase "init --mode bad" 2 --err-has "invalid value for --mode: '999'" -- "${S[@]}" init --mode 999
tcase "init --group unknown" 2 --err-has "group 'rlstore-no-such-group' does not exist" \
    -- "${S[@]}" init rules.yaml --group rlstore-no-such-group
tassert "nothing created by a failed init" test ! -e r/rules.db -a ! -e c/counters.db
tcase "init split" 0 --json 'assert d == {"db": "r/rules.db", "counters": "c/counters.db", "created": True, "version": 1, "changed": True}, d' \
    -- "${S[@]}" init rules.yaml --mode 0666 --group "$GRP" --json
tassert "rules never group- or world-writable" test "$(mode_of r/rules.db)" = 644
tassert "counters take --mode" test "$(mode_of c/counters.db)" = 666
tassert "rules take --group" test "$(group_of r/rules.db)" = "$GID"
tassert "counters take --group" test "$(group_of c/counters.db)" = "$GID"
tassert "rules -shm kept for readers" test -e r/rules.db-shm -a -e r/rules.db-wal
tassert "rules -shm in the rules' group and mode" \
    test "$(group_of r/rules.db-shm)" = "$GID" -a "$(mode_of r/rules.db-shm)" = 644
tassert "rule set stored in the rules file" test "$(sq r/rules.db 'SELECT count(*) FROM rls_rulesets')" = 1
tassert "no rule set in the counters file" test "$(sq c/counters.db 'SELECT count(*) FROM rls_rulesets')" = 0
tcase "init again: existing pair" 0 --out "opened existing rules database 'r/rules.db' with counters database 'c/counters.db'" \
    -- "${S[@]}" init

# ---- checks, penalties, blocks ----------------------------------------------
for i in 1 2 3; do rl "${S[@]}" check api 192.0.2.1 --now "$T0"; done
tcase "fourth check denied" 1 --json 'assert d["allowed"] is False and d["reason"] == "limit"' \
    -- "${S[@]}" check api 192.0.2.1 --now "$T0" --json
tassert "counters in the counters file" test "$(sq c/counters.db 'SELECT count(*) FROM rls_state')" = 1
tassert "no counters in the rules file" test "$(sq r/rules.db 'SELECT count(*) FROM rls_state')" = 0
export RLSTORE_COUNTERS=c/counters.db
rl --db r/rules.db check login bob --now "$T0"
rl --db r/rules.db check login bob --now "$T0"
tcase "\$RLSTORE_COUNTERS: penalty" 1 --json 'assert d["reason"] == "limit"' \
    -- --db r/rules.db check login bob --now "$T0" --json
unset RLSTORE_COUNTERS
tassert "penalty in the counters file" test "$(sq c/counters.db 'SELECT count(*) FROM rls_blocks WHERE kind = 1')" = 1
tcase "block manual" 0 --out "blocked '10.0.0.9' for every action until unblocked" \
    -- "${S[@]}" block 10.0.0.9 --reason abuse --now "$T0"
tassert "manual block in the rules file" test "$(sq r/rules.db 'SELECT count(*) FROM rls_blocks')" = 1
tcase "blocks lists both files" 0 \
    --json 'assert [(b["key"], b["kind"]) for b in d] == [("10.0.0.9", "manual"), ("bob", "penalty")], d' \
    -- "${S[@]}" blocks --now "$T0" --json
tcase "usage sees both" 0 \
    --json 'assert {(r["action"], r["key"], r["state"]) for r in d} >= {("api", "10.0.0.9", "blocked"), ("login", "bob", "blocked"), ("api", "192.0.2.1", "limited")}, d' \
    -- "${S[@]}" usage --now "$T0" --json
tcase "explain a penalty" 0 --json 'assert d["info"]["blocked"] == 1 and d["info"]["block_rule"] == "burst", d' \
    -- "${S[@]}" explain login bob --now "$T0" --json
tcase "unblock a penalty" 0 -- "${S[@]}" unblock bob --action login --now "$T0"
tassert "penalty gone" test "$(sq c/counters.db 'SELECT count(*) FROM rls_blocks')" = 0
tcase "tier set" 0 -- "${S[@]}" tier set 10.1.0.0/16 pro --now "$T0"
tcase "pro tier decides" 0 --json 'assert d["limit"] == 6, d' -- "${S[@]}" check api 10.1.2.3 --now "$T0" --json
tcase "reset" 0 -- "${S[@]}" reset api 192.0.2.1 --now "$T0"
tcase "reset counters gone" 0 --json 'assert d["allowed"] is True and d["remaining"] == 2, d' \
    -- "${S[@]}" check api 192.0.2.1 --now "$T0" --json
tcase "audit in the rules file" 0 \
    --json 'assert [r["op"] for r in d][:4] == ["reset", "tier.set", "unblock", "block"], d' \
    -- "${S[@]}" audit --json
tassert "no audit in the counters file" test "$(sq c/counters.db 'SELECT count(*) FROM rls_audit')" = 0
tcase "reserve and commit" 0 -- "${S[@]}" reserve api 192.0.2.77 --now "$T0" --quiet
tassert "reservation in the counters file" test "$(sq c/counters.db 'SELECT count(*) FROM rls_reservations')" = 1
tcase "commit" 0 -- "${S[@]}" commit "$(cat "$OUT")" --now "$T0"

# ---- doctor ----------------------------------------------------------------------
tcase "doctor reports both files" 0 \
    --json 'c = {x["check"]: x for x in d["checks"]}; assert c["role"]["detail"].startswith("split deployment") and c["rules_side_files"]["status"] == "ok" and c["counters_schema_version"]["status"] == "ok" and c["counters_quick_check"]["status"] == "ok", c' \
    --json 'c = {x["check"]: x for x in d["checks"]}; assert c["counters_file_mode"]["status"] == "warn" and "every user" in c["counters_file_mode"]["detail"], c' \
    -- "${S[@]}" doctor --json
# the layout of docs/SECURITY.md: counters shared with a group, setgid directory
skipping || chmod 660 c/counters.db
skipping || chgrp "$GID" c
skipping || chmod 2770 c
tcase "doctor: group-shared counters are fine" 0 \
    --json 'c = {x["check"]: x for x in d["checks"]}; assert c["counters_file_mode"]["status"] == "ok" and c["counters_dir_mode"]["status"] == "ok" and "counters_dir_group" not in c, c' \
    -- "${S[@]}" doctor --json
skipping || chmod 755 c
tcase "doctor warns: applications cannot create -wal" 0 \
    --json 'c = {x["check"]: x for x in d["checks"]}; assert c["counters_dir_group"]["status"] == "warn", c' \
    -- "${S[@]}" doctor --json
skipping || chmod 777 c
skipping || chmod 666 c/counters.db
skipping || chmod 664 r/rules.db
tcase "doctor warns: group-writable rules" 0 \
    --json 'c = {x["check"]: x for x in d["checks"]}; assert c["file_mode"]["status"] == "warn" and "change the rules" in c["file_mode"]["detail"], c' \
    -- "${S[@]}" doctor --json
skipping || chmod 644 r/rules.db

# ---- roles ------------------------------------------------------------------------
tcase "rules file alone" 5 --json 'assert d["error"]["code"] == "EROLE", d' -- --db r/rules.db check api 1.2.3.4 --json
tcase "counters file alone" 5 --err-has "counters database of a split deployment" -- --db c/counters.db rules
tcase "files swapped" 5 --err-has "is a counters database, not a rules database" \
    -- --db c/counters.db --counters r/rules.db rules
tcase "unrelated rules" 5 --err-has "another rules database" -- --db other.db --counters c/counters.db init
tassert "no file left by the refused init" test ! -e other.db
tcase "missing counters" 3 --err-has "cannot open 'c/nope.db': no such database" \
    -- --db r/rules.db --counters c/nope.db rules

# ---- an application user that may not write the rules ------------------------
# As root: the checks run as nobody (the rules are the admin's, 644 in a
# 755 directory; the counters 666 in a 777 directory).  As another user: the
# rules file and its directory lose the owner's write permission.  When
# nobody cannot run rlctl (lib.sh, other_user), these cases are skipped.
_sqlite_skip=$_skip_reason
app_skip() { [ -n "$_sqlite_skip" ] || [ -z "$OTHER_SKIP" ] || _skip_reason=$OTHER_SKIP; }
app_end() { _skip_reason=$_sqlite_skip; }
if [ "$(id -u)" = 0 ]; then
    skipping || other_user
    app() { skipping || "${AS[@]}" -- "$OTHER_RLCTL" "$@"; }
    skipping || [ -n "$OTHER_SKIP" ] || chown nobody c/counters.db
else
    app() { skipping || "$RLCTL" "$@"; }
    skipping || chmod 444 r/rules.db r/rules.db-wal r/rules.db-shm
    skipping || chmod 555 r
fi
skipping || chmod 755 "$W"
app_skip
app "${S[@]}" check api 203.0.113.6 --now "$T0" --json >"$OUT" 2>"$ERR"
tassert "application user checks" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["allowed"] is True' "$OUT"
for i in 1 2 3; do app "${S[@]}" check api 203.0.113.7 --now "$T0" >/dev/null 2>&1; done
app "${S[@]}" check api 203.0.113.7 --now "$T0" --json >"$OUT" 2>"$ERR"
tassert "application user: exact" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["allowed"] is False and d["reason"] == "limit"' "$OUT"
app "${S[@]}" block 203.0.113.7 --now "$T0" --json >"$OUT" 2>"$ERR"
rc=$?
tassert "application user: block refused (exit 5)" test "$rc" = 5
tassert "application user: EREADONLY named" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["error"]["code"] == "EREADONLY" and "rules_read_only" in d["error"]["message"], d' "$OUT"
app "${S[@]}" apply rules.yaml >"$OUT" 2>"$ERR"
tassert "application user: apply refused" test $? = 5
app "${S[@]}" blocks --json --now "$T0" >"$OUT" 2>"$ERR"
tassert "application user: lists blocks" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [b["key"] for b in d] == ["10.0.0.9"], d' "$OUT"
tassert "application user changed no rule" test "$(sq r/rules.db 'SELECT count(*) FROM rls_blocks')" = 1
[ "$(id -u)" = 0 ] || skipping || { chmod 755 r; chmod 644 r/rules.db r/rules.db-wal r/rules.db-shm; }
# the admin's block reaches the application's next check
rl "${S[@]}" block 203.0.113.8 --now "$T0"
app "${S[@]}" check api 203.0.113.8 --now "$T0" --json >"$OUT" 2>"$ERR"
tassert "application sees the admin's block" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["reason"] == "blocked", d' "$OUT"
app_end

# ---- hold ---------------------------------------------------------------------------
tcase "hold --for" 0 --out "holding 'r/rules.db' open" -- "${S[@]}" hold --for 200ms
if ! skipping; then
    "$RLCTL" "${S[@]}" hold >hold.out 2>&1 &
    hold_pid=$!
    for i in $(seq 3000); do [ -s hold.out ] && break; sleep 0.1; done
fi
app_skip
app "${S[@]}" check api 203.0.113.9 --now "$T0" --json >"$OUT" 2>"$ERR"
tassert "application checks while an admin holds the rules" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["allowed"] is True, d' "$OUT"
app_end
if ! skipping; then
    kill -TERM "$hold_pid"
    wait "$hold_pid"
fi
tassert "hold ends with exit 0 at SIGTERM" test $? = 0
tassert "hold says what it holds" grep -qF "holding 'r/rules.db' open until interrupted" hold.out

# ---- rltop --------------------------------------------------------------------------
if [ -x "$RLTOP" ]; then
    skipping || "$RLTOP" -b --db r/rules.db --counters c/counters.db --rows 50 >"$OUT" 2>"$ERR"
    tassert "rltop --counters: batch snapshot" test $? = 0
    tassert "rltop shows a key of the counters file" grep -qF 203.0.113.7 "$OUT"
    skipping || RLSTORE_COUNTERS=c/counters.db "$RLTOP" -b --db r/rules.db >"$OUT" 2>"$ERR"
    tassert "rltop \$RLSTORE_COUNTERS" test $? = 0
    skipping || "$RLTOP" -b --db r/rules.db >"$OUT" 2>"$ERR"
    tassert "rltop: rules file alone refused" grep -qF "rules database of a split deployment" "$ERR"
else
    report "rltop built" " $RLTOP is missing"
fi
end_sqlite_only
finish
