#!/usr/bin/env bash
# tests/auth/test_pg.sh - rlstore-auth on PostgreSQL (--db postgresql://...),
# in the PostgreSQL pass of make test only (RLSTORE_TEST_PG, a schema of
# its own): every request has a handle of its own there, so checks run side
# by side; 4 clients at once on one key admit exactly the limit, a burst
# crosses it exactly, a schema without rlstore's tables exits 3, and the
# URI's password never shows.  Without RLSTORE_TEST_PG, rlstore-auth or
# python3 it skips in one line.
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
. tests/auth/lib.sh
IFS=$'\n'   # one message per line of a $(...): report gets none when all is well

[ -n "$PG" ] || skip_all 1 "RLSTORE_TEST_PG is not set: PostgreSQL pass only"
[ -x "$AUTH" ] || skip_all 1 "rlstore-auth not built (libmicrohttpd missing: apt-get install libmicrohttpd-dev)"
command -v python3 >/dev/null 2>&1 || skip_all 1 "python3 not installed"
pg_reachable || setup_fail "psql does not reach RLSTORE_TEST_PG"
pg_new_schema auth || setup_fail "no schema"
pg_uri_of "$REPLY"
DB=$REPLY
"$RLCTL" --db "$DB" --quiet init tests/auth/rules.yaml || setup_fail "rlctl init on PostgreSQL"
pg_new_schema auth_empty || setup_fail "no schema"
pg_uri_of "$REPLY"
"$AUTH" --db "$REPLY" >/dev/null 2>"$SCRATCH/err"
rc=$?
report "a schema without rlstore's tables: exit 3, one line" $([ "$rc" = 3 ] || echo "exit $rc") \
    $([ "$(wc -l <"$SCRATCH/err")" = 1 ] || echo "$(wc -l <"$SCRATCH/err") lines")

auth_start pg --db "$DB" --trusted-proxy 127.0.0.1 --timeout 5s ||
    setup_fail "rlstore-auth did not start: $(tail -n 2 "$SCRATCH/pg.log")"
U=http://127.0.0.1:$AUTH_PORT
client() { python3 tests/auth/client.py "$@"; }

client "$U/check/api" 25 -H 'X-Forwarded-For: 198.51.100.1' >"$SCRATCH/burst"
got=$(grep -v 429-headers "$SCRATCH/burst" | tr '\n' ' ')
report "a burst: exactly the limit admitted" $([ "$got" = "204 20 429 5 " ] || echo "got '$got'")

for i in 1 2 3 4; do
    client "$U/check/api" 10 -H 'X-Forwarded-For: 198.51.100.2' >"$SCRATCH/c$i" &
done
_done() { [ "$(cat "$SCRATCH"/c[1-4] 2>/dev/null | grep -c 429-headers)" = 4 ]; }
wait_until _done
ok_n=$(cat "$SCRATCH"/c[1-4] | awk '$1 == 204 { n += $2 } END { print n + 0 }')
no_n=$(cat "$SCRATCH"/c[1-4] | awk '$1 == 429 { n += $2 } END { print n + 0 }')
report "4 clients at once on one key: exactly 20 of 40 admitted" \
    $([ "$ok_n/$no_n" = 20/20 ] || echo "admitted $ok_n, denied $no_n")
m=$(curl -s "$U/metrics")
report "/metrics: 40 admitted, 25 denied" \
    $(echo "$m" | grep -q '^rlstore_auth_checks_total{action="api",result="allowed"} 40$' || echo "allowed: $(echo "$m" | grep 'api",result="allowed')") \
    $(echo "$m" | grep -q '^rlstore_auth_checks_total{action="api",result="denied"} 25$' || echo "denied: $(echo "$m" | grep 'api",result="denied')")
kill -TERM "$AUTH_PID"
wait "$AUTH_PID"
report "SIGTERM: exit 0" $([ $? = 0 ] || echo "exit $?")
finish
