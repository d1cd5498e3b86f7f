#!/usr/bin/env bash
# tests/auth/test_nginx.sh - rlstore-auth behind a real nginx.
#
# nginx (Debian's package; its own prefix, config and logs in a temporary
# folder, not a daemon, on a free 127.0.0.1 port) runs the site of
# examples/nginx/rlstore-auth.conf unchanged but for its addresses, in
# front of a test application (upstream.py) and rlstore-auth; the clients
# are distinct loopback addresses (127.0.0.2, ...), so each is its own key.
#   - a burst that crosses the limit: exactly the limit admitted, the rest
#     429 with RateLimit, RateLimit-Policy and Retry-After, and only the
#     admitted requests reach the application;
#   - two clients are independent; a client's own X-Forwarded-For is not
#     believed;
#   - the database locked (storage failure): an action whose policy denies
#     answers 503, one whose policy allows lets the request through;
#   - `nginx -s reload` in the middle of traffic: the counts stay exact;
#   - /metrics counts what happened;
#   - rlstore-auth gone: the limited locations fail closed (500).
# A missing nginx, python3 or rlstore-auth skips the suite in one line.
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
. tests/auth/lib.sh

[ -x "$AUTH" ] || skip_all 1 "rlstore-auth not built (libmicrohttpd missing: apt-get install libmicrohttpd-dev)"
command -v nginx >/dev/null 2>&1 || skip_all 1 "nginx not installed (apt-get install nginx-light)"
command -v python3 >/dev/null 2>&1 || skip_all 1 "python3 not installed"
command -v curl >/dev/null 2>&1 || skip_all 1 "curl not installed"

DB=$SCRATCH/limits.db
"$RLCTL" --db "$DB" --quiet init tests/auth/rules.yaml || setup_fail "rlctl init"
auth_start auth --db "$DB" --trusted-proxy 127.0.0.1 --timeout 300ms ||
    setup_fail "rlstore-auth did not start: $(tail -n 2 "$SCRATCH/auth.log")"
upstream_start || setup_fail "the test application did not start"
sed -e "s/server 127\.0\.0\.1:9090;/server 127.0.0.1:$AUTH_PORT;/" \
    -e "s/server 127\.0\.0\.1:8080;/server 127.0.0.1:$APP_PORT;/" \
    -e "s/listen 80;/listen NGX_LISTEN;/" examples/nginx/rlstore-auth.conf >"$SCRATCH/site.conf"
grep -q NGX_LISTEN "$SCRATCH/site.conf" || setup_fail "the example's 'listen 80;' line is gone"
nginx_start "$SCRATCH/site.conf" ||
    setup_fail "nginx did not start: $(tail -n 3 "$SCRATCH/nginx/logs/error.log" 2>/dev/null | tr '\n' ' ')"
BASE=http://127.0.0.1:$NGX_PORT
client() { python3 tests/auth/client.py "$@"; }
# one message per line of a $(...): report gets none when all is well
IFS=$'\n'

# expect NAME OUTPUT-FILE "STATUS N"...: the client's counts are exactly these
expect_counts() {
    local name=$1 out=$2 want
    shift 2
    want=$(printf '%s\n' "$@" | sort)
    got=$(grep -v '^429-headers' "$out" | sort)
    if [ "$got" = "$want" ]; then report "$name"; else
        report "$name" "expected '$(echo "$want" | tr '\n' ' ')', got '$(echo "$got" | tr '\n' ' ')'"; fi
}

# ---- a burst crossing the limit ------------------------------------------------
client "$BASE/api/items" 25 --source 127.0.0.2 >"$SCRATCH/burst" 2>&1
expect_counts "burst: exactly the limit (20) admitted, then 429" "$SCRATCH/burst" "200 20" "429 5"
report "burst: every 429 carries RateLimit, RateLimit-Policy, Retry-After" \
    $(grep -q '^429-headers 5$' "$SCRATCH/burst" || echo "$(grep 429-headers "$SCRATCH/burst")")
n=$(hits /api/items)
report "burst: only the admitted requests reached the application" \
    $([ "$n" = 20 ] || echo "the application saw $n, not 20")
h=$(curl -s -D - -o /dev/null --interface 127.0.0.2 "$BASE/api/items" | tr -d '\r')
report "burst: the 429's fields say the limit and the wait" \
    $(echo "$h" | grep -q '^HTTP/1.1 429' || echo "status: $(echo "$h" | head -n 1)") \
    $(echo "$h" | grep -q '^RateLimit-Policy: "per_ip";q=20;w=3600$' || echo "no RateLimit-Policy q=20") \
    $(echo "$h" | grep -q '^RateLimit: "per_ip";r=0;t=[0-9]' || echo "no RateLimit r=0") \
    $(echo "$h" | grep -qE '^Retry-After: [1-9][0-9]*$' || echo "no Retry-After")
h=$(curl -s -D - -o /dev/null --interface 127.0.0.3 "$BASE/api/one" | tr -d '\r')
report "an admitted request carries RateLimit (remaining 19)" \
    $(echo "$h" | grep -q '^HTTP/1.1 200' || echo "status: $(echo "$h" | head -n 1)") \
    $(echo "$h" | grep -q '^RateLimit: "per_ip";r=19;' || echo "no RateLimit r=19")

# ---- independent keys, a forged X-Forwarded-For ---------------------------------
client "$BASE/api/other" 3 --source 127.0.0.4 >"$SCRATCH/k2" 2>&1
expect_counts "a second client has its own budget" "$SCRATCH/k2" "200 3"
client "$BASE/api/forged" 2 --source 127.0.0.2 -H "X-Forwarded-For: 198.51.100.9" \
    -H "X-Real-IP: 198.51.100.9" >"$SCRATCH/forged" 2>&1
expect_counts "a client's own X-Forwarded-For/X-Real-IP is not its key" "$SCRATCH/forged" "429 2"
client "$BASE/api/action" 1 --source 127.0.0.2 -H "X-Rlstore-Action: login" \
    -H "X-Rlstore-Deny-Status: 200" >"$SCRATCH/act" 2>&1
expect_counts "a client's X-Rlstore-Action/-Deny-Status change nothing" "$SCRATCH/act" "429 1"
s=$(http_status --interface 127.0.0.2 "$BASE/_rlstore/api")
report "the sub-request location is internal" $([ "$s" = 404 ] || echo "status $s")
s=$(http_status --interface 127.0.0.2 "$BASE/free")
report "an unlimited location passes" $([ "$s" = 200 ] || echo "status $s")

# ---- storage failure: the failure policy ----------------------------------------
# A writer holds the database's write lock: every check waits its 300 ms
# deadline and fails (EBUSY).
if lock_db "$DB"; then
    h=$(curl -s -D - -o /dev/null --interface 127.0.0.6 "$BASE/api/locked" | tr -d '\r')
    report "storage failure, policy deny: 503" \
        $(echo "$h" | grep -q '^HTTP/1.1 503' || echo "status: $(echo "$h" | head -n 1)")
    s=$(http_status --interface 127.0.0.6 "$BASE/login")
    report "storage failure, policy allow: the request passes" $([ "$s" = 200 ] || echo "status $s")
    h=$(curl -s -D - --interface 127.0.0.1 "http://127.0.0.1:$AUTH_PORT/check/api" -H 'X-Forwarded-For: 192.0.2.77' | tr -d '\r')
    report "storage failure, direct: 503, X-Rlstore-Degraded and a one-line reason" \
        $(echo "$h" | grep -q '^HTTP/1.1 503' || echo "status: $(echo "$h" | head -n 1)") \
        $(echo "$h" | grep -q '^X-Rlstore-Degraded: EBUSY' || echo "no X-Rlstore-Degraded: EBUSY") \
        $(echo "$h" | grep -q '^storage failure, the failure policy denies: EBUSY' || echo "no reason line")
else
    fail "storage failure: the lock holder did not start: $(cat "$SCRATCH/lock.out")"
fi
unlock_db
s=$(http_status --interface 127.0.0.6 "$BASE/api/after")
report "the database back: checks work again" $([ "$s" = 200 ] || echo "status $s")

# ---- nginx -s reload in the middle of traffic ------------------------------------
before=$(ngx_workers)
# The client stops after 10 answers until the reload is signalled, and
# after 30 until the new workers run: answers 11..30 cross the change.
client "$BASE/api/reload" 60 --source 127.0.0.5 --progress "$SCRATCH/progress" \
    --pause "10:$SCRATCH/hup-sent" --pause "30:$SCRATCH/new-workers" >"$SCRATCH/reload" 2>&1 &
CL=$!
_at() { [ "$(cat "$SCRATCH/progress" 2>/dev/null || echo 0)" -ge "$1" ]; }
_reloaded() {
    local w
    w=$(ngx_workers)
    [ -n "$w" ] && [ "$w" != "$before" ] && ! echo " $w" | grep -q " ${before%% *} "
}
if wait_until _at 10; then
    nginx_cmd -s reload
    touch "$SCRATCH/hup-sent"
    wait_until _reloaded
    report "nginx reloaded during the traffic (new workers)" \
        $(_reloaded || echo "the workers are still $before")
    touch "$SCRATCH/new-workers"
else
    fail "reload: the client made no progress"
fi
wait "$CL"
expect_counts "reload: exactly the limit admitted across it" "$SCRATCH/reload" "200 20" "429 40"
n=$(hits /api/reload)
report "reload: the application saw exactly the admitted requests" $([ "$n" = 20 ] || echo "it saw $n")

# ---- /metrics --------------------------------------------------------------------
m=$(curl -s "http://127.0.0.1:$AUTH_PORT/metrics")
# admitted api checks: 20 burst + 1 one + 3 k2 + 1 after + 20 reload
metric() { echo "$m" | sed -n "s/^rlstore_auth_checks_total{action=\"$1\",result=\"$2\"} //p"; }
report "/metrics: api allowed 45" $([ "$(metric api allowed)" = 45 ] || echo "got '$(metric api allowed)'")
report "/metrics: api denied 49" $([ "$(metric api denied)" = 49 ] || echo "got '$(metric api denied)'")
report "/metrics: api error_denied 2, login error_allowed 1" \
    $([ "$(metric api error_denied)" = 2 ] || echo "api error_denied '$(metric api error_denied)'") \
    $([ "$(metric login error_allowed)" = 1 ] || echo "login error_allowed '$(metric login error_allowed)'")
report "/metrics: a latency histogram" \
    $(echo "$m" | grep -q '^rlstore_auth_check_seconds_bucket{le="+Inf"} [1-9]' || echo "no histogram")

# ---- rlstore-auth gone: the limited locations fail closed ------------------------
kill -TERM "$AUTH_PID"
wait "$AUTH_PID"
n0=$(hits /api/gone)
s=$(http_status --interface 127.0.0.7 "$BASE/api/gone")
report "rlstore-auth down: a limited location answers 500" $([ "$s" = 500 ] || echo "status $s") \
    $([ "$(hits /api/gone)" = "$n0" ] || echo "the application saw the request")
s=$(http_status --interface 127.0.0.7 "$BASE/free")
report "rlstore-auth down: the rest of the site is served" $([ "$s" = 200 ] || echo "status $s")
finish
