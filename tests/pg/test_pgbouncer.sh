#!/bin/bash
# tests/pg/test_pgbouncer.sh - the library and the tools through PgBouncer
# in session mode (docs/SCALING.md "PgBouncer"), in front of the test
# server: rlctl creates the database and applies rules through it;
# processes acting as separate hosts, each checking through a pooled
# connection of its own, admit exactly the limit; the example traffic
# generator (checks, reservations, penalties: thousands of transactions on
# one handle's prepared statements) runs without an error; rltop -b lists
# the result.  Runs in the PostgreSQL pass of make test only (it needs
# RLSTORE_TEST_PG: a database of its own, whose public schema it uses,
# since PgBouncer 1.18 refuses the `options` startup parameter that gives
# the other suites a schema each).  Without RLSTORE_TEST_PG, or without
# pgbouncer installed, its tests are reported as skipped.  Summary lines
# are cmocka's, for tests/run_suites.sh.
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
B=$BUILD
RLCTL=$B/rlctl
NTESTS=5

[ -n "$PG" ] || skip_all $NTESTS "RLSTORE_TEST_PG is not set: PostgreSQL pass only"
tmp=$SCRATCH
bdir=""
on_exit() { [ -n "$bdir" ] && sh tests/pg/server.sh stop "$bdir"; }
sh tests/pg/server.sh bouncer "$RLSTORE_TEST_PG" session >"$tmp/b.out" 2>"$tmp/b.err"
case $? in
0) ;;
2) skip_all $NTESTS "$(tail -n 1 "$tmp/b.err")" ;;
*) bad "pgbouncer did not start" "$tmp/b.err"; finish ;;
esac
DB=$(sed -n 1p "$tmp/b.out")
bdir=$(sed -n 2p "$tmp/b.out")

cat >"$tmp/rules.yaml" <<'YAML'
version: 1
actions:
  api:
    limits:
      - { name: r, algorithm: fixed_window, limit: 30, window: 1h }
YAML

# 1. init and apply through the bouncer
if "$RLCTL" --db "$DB" --quiet init "$tmp/rules.yaml" >"$tmp/o1" 2>&1 &&
    "$RLCTL" --db "$DB" rules >>"$tmp/o1" 2>&1 && grep -q "^version[[:space:]]1$" "$tmp/o1"; then
    ok "rlctl init and apply through PgBouncer"
else
    bad "rlctl init through PgBouncer" "$tmp/o1"
fi

# 2. six processes, ten checks each, of one key: exactly the limit admitted
for p in 1 2 3 4 5 6; do
    ( for i in 1 2 3 4 5 6 7 8 9 10; do
          "$RLCTL" --db "$DB" --quiet check api shared 2>>"$tmp/err.$p"
          echo $?
      done >"$tmp/rc.$p" ) &
done
wait
admitted=$(cat "$tmp"/rc.* | grep -c '^0$')
denied=$(cat "$tmp"/rc.* | grep -c '^1$')
cat "$tmp"/err.* >"$tmp/errs"
if [ "$admitted" = 30 ] && [ "$denied" = 30 ] && [ ! -s "$tmp/errs" ]; then
    ok "six hosts through PgBouncer admit exactly 30 of 60"
else
    bad "six hosts: $admitted admitted, $denied denied of 60 (limit 30)" "$tmp/errs"
fi

# 3. the same count read directly from the server
if [ "$(psql -X -At "$RLSTORE_TEST_PG" -c "SELECT b FROM rls_state WHERE key = 'shared'::bytea" 2>&1)" = 30 ]; then
    ok "the server holds the count of 30"
else
    bad "stored count: $(psql -X -At "$RLSTORE_TEST_PG" -c "SELECT b FROM rls_state" 2>&1 | tr '\n' ' ')"
fi

# 4. long-lived handles: the example traffic, two at once, three seconds
"$RLCTL" --db "$DB" --quiet apply examples/demo.yaml >"$tmp/o4" 2>&1
for p in 1 2; do
    "$B/examples/simulate" --db "$DB" --rate 300 --duration 3 --seed "$p" 2>"$tmp/sim.$p" &
done
wait
if grep -q "^simulate: [1-9][0-9]* checks, [0-9]* denied, 0 errors" "$tmp/sim.1" &&
    grep -q "^simulate: [1-9][0-9]* checks, [0-9]* denied, 0 errors" "$tmp/sim.2" &&
    [ "$(psql -X -At "$RLSTORE_TEST_PG" -c "SELECT count(*) > 0 FROM rls_rulesets" 2>&1)" = t ]; then
    ok "two simulated applications through PgBouncer: $(cut -d: -f2 "$tmp/sim.1" | head -n 1)"
else
    cat "$tmp/o4" "$tmp/sim.1" "$tmp/sim.2" >"$tmp/o4b"
    bad "simulate through PgBouncer" "$tmp/o4b"
fi

# 5. rltop's batch view through the bouncer
if "$B/rltop" -b --db "$DB" </dev/null >"$tmp/o5" 2>&1 && grep -q "signup" "$tmp/o5"; then
    ok "rltop -b through PgBouncer"
else
    bad "rltop -b through PgBouncer" "$tmp/o5"
fi

finish
