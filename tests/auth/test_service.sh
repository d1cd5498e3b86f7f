#!/usr/bin/env bash
# tests/auth/test_service.sh - rlstore-auth on its own, asked directly with
# curl as nginx, Traefik or Caddy would ask it (their headers), from
# distinct loopback addresses (127.0.0.1 is the trusted proxy, 127.0.0.2 a
# client that is not):
#   - the command line: usage errors, the exit status of a missing database,
#     one without rules, one of a newer version, a busy port; one line each;
#   - the key: the peer's address; X-Forwarded-For (walked from the right
#     past trusted proxies) and X-Real-IP only from a trusted peer;
#     --key-header;
#   - the action: the path, X-Rlstore-Action on a bare /check, --route on
#     X-Forwarded-Uri/-Method (Traefik, Caddy) and X-Original-URI (nginx);
#   - bad input, a 400 with one line each: a malformed or repeated header,
#     an oversized key, an unknown or invalid action, a path that walks;
#   - garbage on the wire (tests/auth/garbage.py): no crash, no 2xx;
#   - X-Rlstore-Deny-Status, /healthz, 404, HEAD, a request with a body,
#     keep-alive, IPv6, SIGTERM.
# A missing rlstore-auth or curl skips the suite in one line.
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
. tests/auth/lib.sh
IFS=$'\n'   # one message per line of a $(...): report gets none when all is well

[ -x "$AUTH" ] || skip_all 1 "rlstore-auth not built (libmicrohttpd missing: apt-get install libmicrohttpd-dev)"
command -v curl >/dev/null 2>&1 || skip_all 1 "curl not installed"
command -v python3 >/dev/null 2>&1 || skip_all 1 "python3 not installed"

DB=$SCRATCH/limits.db
"$RLCTL" --db "$DB" --quiet init tests/auth/rules.yaml || setup_fail "rlctl init"

# ---- the command line --------------------------------------------------------
# exits NAME STATUS TEXT ARGS...: rlstore-auth ARGS exits with STATUS and one
# line on stderr containing TEXT
exits() {
    local name=$1 want=$2 text=$3 rc
    shift 3
    "$AUTH" "$@" >"$SCRATCH/out" 2>"$SCRATCH/err" </dev/null
    rc=$?
    report "$name" $([ "$rc" = "$want" ] || echo "exit $rc, not $want") \
        $([ "$(wc -l <"$SCRATCH/err")" = 1 ] || echo "$(wc -l <"$SCRATCH/err") lines on stderr") \
        $(grep -qF -- "$text" "$SCRATCH/err" || echo "stderr: $(head -c 200 "$SCRATCH/err")")
}
exits "no --db: usage, 2" 2 "--db PATH|URI is required"
exits "unknown option: 2" 2 "unknown option '--frobnicate'" --db "$DB" --frobnicate
exits "bad --trusted-proxy: 2" 2 "'10.0.0.0/33' is not an address or CIDR" --db "$DB" --trusted-proxy 10.0.0.0/33
exits "bad --listen: 2" 2 "--listen 'localhost:80'" --db "$DB" --listen localhost:80
exits "bad --key-header: 2" 2 "is not a header name" --db "$DB" --key-header 'X User'
exits "bad --route: 2" 2 "expected '[METHOD ]/PREFIX=ACTION'" --db "$DB" --route 'api=api'
exits "bad --timeout: 2" 2 "--timeout: 'soon'" --db "$DB" --timeout soon
exits "bad --deny-status: 2" 2 "'200' is not 429, 403 or 401" --db "$DB" --deny-status 200
exits "missing database: 3" 3 "cannot open '$SCRATCH/none.db'" --db "$SCRATCH/none.db"
"$RLCTL" --db "$SCRATCH/empty.db" --quiet init
exits "database without rules: 4" 4 "ENORULES" --db "$SCRATCH/empty.db"
echo "not a database, clearly not one at all, just some text" >"$SCRATCH/text.db"
exits "not a database: 5" 5 "ENOTDB" --db "$SCRATCH/text.db"
cp "$DB" "$SCRATCH/newer.db"
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA user_version = 9999"); c.commit()' "$SCRATCH/newer.db"
exits "database of a newer version: 5" 5 "ENEWER" --db "$SCRATCH/newer.db"
exits "a URI's password is not shown" 3 "user:***@" --db "postgresql://user:secret@127.0.0.1:1/x?connect_timeout=1"
"$AUTH" --help >"$SCRATCH/out" 2>&1
report "--help: 0, the options" $([ $? = 0 ] || echo "exit $?") $(grep -q -- '--trusted-proxy' "$SCRATCH/out" || echo "no --trusted-proxy")

# ---- a running service ---------------------------------------------------------
auth_start main --db "$DB" --timeout 500ms --trusted-proxy 127.0.0.1/32,10.0.0.0/8 --route '/api/=api' \
    --route 'POST /login=login' --route '/=user' ||
    setup_fail "rlstore-auth did not start: $(tail -n 2 "$SCRATCH/main.log")"
U=http://127.0.0.1:$AUTH_PORT
MAIN_PID=$AUTH_PID
exits "a busy port: 6" 6 "cannot listen on 127.0.0.1:$AUTH_PORT" --db "$DB" --listen "127.0.0.1:$AUTH_PORT"

# remaining ARGS...: the r= of the answer's RateLimit (or the status)
remaining() {
    local h
    h=$(curl -s -D - -o /dev/null "$@" | tr -d '\r')
    echo "$h" | sed -n 's/^RateLimit: .*;r=\([0-9]*\);.*/\1/p' | grep . || echo "$h" | head -n 1
}
# answer ARGS...: "STATUS BODY" of the answer
answer() { curl -s -w ' %{http_code}' "$@" | tr -d '\n'; }

r=$(remaining "$U/check/api")
report "the key is the peer's address (19 left)" $([ "$r" = 19 ] || echo "got '$r'")
r=$(remaining --interface 127.0.0.2 "$U/check/api")
report "another peer is another key" $([ "$r" = 19 ] || echo "got '$r'")
r=$(remaining --interface 127.0.0.2 "$U/check/api" -H 'X-Forwarded-For: 198.51.100.1')
report "X-Forwarded-For from an untrusted peer is ignored" $([ "$r" = 18 ] || echo "got '$r'")
r=$(remaining --interface 127.0.0.2 "$U/check/api" -H 'X-Real-IP: 198.51.100.1')
report "X-Real-IP from an untrusted peer is ignored" $([ "$r" = 17 ] || echo "got '$r'")
r=$(remaining "$U/check/api" -H 'X-Forwarded-For: 198.51.100.1')
report "X-Forwarded-For from a trusted peer is the key" $([ "$r" = 19 ] || echo "got '$r'")
r=$(remaining "$U/check/api" -H 'X-Forwarded-For: 203.0.113.5, 198.51.100.1, 10.1.2.3')
report "X-Forwarded-For: walked from the right past trusted proxies" $([ "$r" = 18 ] || echo "got '$r'")
r=$(remaining "$U/check/api" -H 'X-Forwarded-For: 203.0.113.5' -H 'X-Forwarded-For: 198.51.100.1')
report "X-Forwarded-For given twice: the lines are one list" $([ "$r" = 17 ] || echo "got '$r'")
r=$(remaining "$U/check/api" -H 'X-Real-IP: 198.51.100.1')
report "X-Real-IP from a trusted peer is the key" $([ "$r" = 16 ] || echo "got '$r'")
r=$(remaining "$U/check/api" -H 'X-Forwarded-For: 10.0.0.1, 127.0.0.1')
report "X-Forwarded-For of trusted proxies only: the leftmost" $([ "$r" = 19 ] || echo "got '$r'")
r=$(remaining "$U/check/api" -H 'X-Forwarded-For: 2001:db8::1')
r2=$(remaining "$U/check/api" -H 'X-Forwarded-For: [2001:db8::1]')
report "an IPv6 X-Forwarded-For, bracketed or not, is one key" \
    $([ "$r" = 19 ] && [ "$r2" = 18 ] || echo "got '$r' then '$r2'")

# ---- the action ------------------------------------------------------------------
r=$(remaining "$U/check" -H 'X-Rlstore-Action: login' -H 'X-Forwarded-For: 192.0.2.1')
report "bare /check: X-Rlstore-Action names the action" $([ "$r" = 2 ] || echo "got '$r'")
r=$(remaining "$U/check" -H 'X-Forwarded-Uri: /api/items?x=1' -H 'X-Forwarded-Method: GET' -H 'X-Forwarded-For: 192.0.2.1')
report "Traefik/Caddy: --route on X-Forwarded-Uri" $([ "$r" = 19 ] || echo "got '$r'")
r=$(remaining "$U/check" -H 'X-Forwarded-Uri: /login' -H 'X-Forwarded-Method: POST' -H 'X-Forwarded-For: 192.0.2.1')
report "a route of one method wins" $([ "$r" = 1 ] || echo "got '$r'")
r=$(answer "$U/check" -H 'X-Forwarded-Uri: /login' -H 'X-Forwarded-Method: GET' -H 'X-Forwarded-For: 192.0.2.1')
report "another method takes the route of '/' (key: string)" $([ "$r" = " 204" ] || echo "got '$r'")
r=$(remaining "$U/check" -H 'X-Original-URI: /api/x' -H 'X-Forwarded-For: 192.0.2.1')
report "nginx: --route on X-Original-URI" $([ "$r" = 18 ] || echo "got '$r'")
r=$(remaining "$U/check" -H 'X-Forwarded-Uri: /api2' -H 'X-Forwarded-For: 192.0.2.9')
report "a prefix matches whole segments (/api/ is not /api2)" $([ "$r" = 1 ] || echo "got '$r'")

# ---- bad input: 400 and one line -----------------------------------------------
# bad NAME TEXT ARGS...: a 400 whose body is one line containing TEXT
bad400() {
    local name=$1 text=$2 s
    shift 2
    s=$(curl -s -o "$SCRATCH/body" -w '%{http_code}' "$@")
    report "$name" $([ "$s" = 400 ] || echo "status $s") \
        $([ "$(wc -l <"$SCRATCH/body")" = 1 ] && [ "$(tail -c 1 "$SCRATCH/body" | wc -l)" = 1 ] ||
          echo "the body is not one line") \
        $(grep -qF -- "$text" "$SCRATCH/body" || echo "body: $(head -c 200 "$SCRATCH/body")")
}
bad400 "malformed X-Forwarded-For" "malformed header X-Forwarded-For" "$U/check/api" -H 'X-Forwarded-For: 1.2.3.4, not-an-ip'
bad400 "X-Forwarded-For with an empty element" "malformed header X-Forwarded-For" "$U/check/api" -H 'X-Forwarded-For: 1.2.3.4,,5.6.7.8'
bad400 "X-Forwarded-For with a port" "malformed header X-Forwarded-For" "$U/check/api" -H 'X-Forwarded-For: 1.2.3.4:80'
bad400 "malformed X-Real-IP" "malformed header X-Real-IP" "$U/check/api" -H 'X-Real-IP: 1.2.3'
bad400 "X-Real-IP twice" "given more than once" "$U/check/api" -H 'X-Real-IP: 1.2.3.4' -H 'X-Real-IP: 1.2.3.5'
bad400 "unknown action" "ENOACTION: action 'nope' is not defined" "$U/check/nope"
bad400 "invalid action name" "invalid action name in the path" "$U/check/a%20b"
bad400 "an action name too long" "invalid action name" "$U/check/$(printf 'a%.0s' $(seq 64))"
bad400 "invalid X-Rlstore-Action" "invalid action name in X-Rlstore-Action" "$U/check" -H 'X-Rlstore-Action: a/b'
bad400 "bare /check without action" "no action" "$U/check" -H 'X-Forwarded-Method: GET'
bad400 "a forwarded path that walks" "not a plain absolute path" "$U/check" -H 'X-Forwarded-Uri: /public/../api/x'
bad400 "an encoded dot" "not a plain absolute path" "$U/check" -H 'X-Forwarded-Uri: /public/%2e%2E/api/x'
bad400 "an empty segment" "not a plain absolute path" "$U/check" -H 'X-Forwarded-Uri: //api/x'
bad400 "bad X-Rlstore-Deny-Status" "X-Rlstore-Deny-Status" "$U/check/api" -H 'X-Rlstore-Deny-Status: 200'
s=$(http_status "$U/check/api" -H "X-Forwarded-For: 1.2.3.4, $(printf '10.0.0.1, %.0s' $(seq 900))10.0.0.2")
report "an X-Forwarded-For over 8 KiB: 400 or 431, no crash" $([ "$s" = 400 ] || [ "$s" = 431 ] || echo "status $s")
s=$(http_status "$U/check/api" -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' a)")
report "a head over the memory limit: refused, no crash" $([ "${s#4}" != "$s" ] || [ "$s" = 000 ] || echo "status $s")
s=$(http_status "$U/healthz")
report "the service lives on after bad input" $([ "$s" = 200 ] || echo "status $s")

python3 tests/auth/garbage.py "$AUTH_PORT" >"$SCRATCH/garbage" 2>&1
# (bare LF line ends are a request RFC 9112 lets a server accept)
report "garbage on the wire: no 2xx, every connection answered or closed" \
    $(grep -v '^bare LF' "$SCRATCH/garbage" | grep -E ': HTTP/1\.[01] 2') \
    $([ "$(wc -l <"$SCRATCH/garbage")" = 10 ] || echo "the client failed: $(tail -n 1 "$SCRATCH/garbage")")
s=$(http_status "$U/healthz")
report "the service lives on after garbage" $([ "$s" = 200 ] || echo "status $s") \
    $(kill -0 "$MAIN_PID" || echo "the process is gone")

# ---- --key-header -----------------------------------------------------------------
auth_start keyed --db "$DB" --key-header X-User --action-header '' ||
    setup_fail "rlstore-auth --key-header did not start: $(tail -n 2 "$SCRATCH/keyed.log")"
K=http://127.0.0.1:$AUTH_PORT
r=$(remaining "$K/check/user" -H 'X-User: alice')
r2=$(remaining "$K/check/user" -H 'X-User: bob')
report "--key-header: the header is the key, keys independent" $([ "$r$r2" = 11 ] || echo "got '$r' '$r2'")
bad400 "--key-header missing" "missing header X-User" "$K/check/user"
bad400 "--key-header oversized key" "EKEY" "$K/check/user" -H "X-User: $(printf 'k%.0s' $(seq 300))"
bad400 "--key-header not an IP for a 'key: ip' action" "EKEY" "$K/check/api" -H "X-User: alice"
bad400 "--action-header '': no action from a header" "no action" "$K/check" -H 'X-Rlstore-Action: user' -H 'X-User: carol'
curl -s -o /dev/null "$K/check/user" -H 'X-User: alice'
s=$(answer "$K/check/user" -H 'X-User: alice')
report "--key-header: over the limit, 429" $([ "$s" = "rate limited (limit) 429" ] || echo "got '$s'")
s=$(answer "$K/check/user" -H 'X-User: alice' -H 'X-Rlstore-Deny-Status: 403')
report "X-Rlstore-Deny-Status: 403 denies with 403" $([ "$s" = "rate limited (limit) 403" ] || echo "got '$s'")

# ---- HTTP odds and ends -------------------------------------------------------------
s=$(http_status "$U/nowhere")
report "an unknown path: 404" $([ "$s" = 404 ] || echo "status $s")
s=$(http_status -I "$K/check/user" -H 'X-User: dave')
report "HEAD is a check" $([ "$s" = 204 ] || echo "status $s")
s=$(http_status -X POST --data 'a body that an auth request does not have' "$K/check/user" -H 'X-User: erin')
report "a request with a body is answered" $([ "$s" = 204 ] || echo "status $s")
n=$(curl -sv "$K/check/user" "$K/check/user" -H 'X-User: frank' 2>&1 | grep -c 'Re-using existing connection')
report "keep-alive: a second request on the same connection" $([ "$n" = 1 ] || echo "connection not reused")
m=$(curl -s "$U/metrics")
report "/metrics: bad requests counted without an action label" \
    $(echo "$m" | grep -qE '^rlstore_auth_checks_total\{action="",result="bad_request"\} [1-9]' || echo "no bad_request count") \
    $(echo "$m" | grep -q 'action="nope"' && echo "an unknown action became a label")
if python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
    "$AUTH" --db "$DB" --listen '[::1]:0' 2>"$SCRATCH/v6.log" &
    V6=$!
    _started="$_started $V6"
    _v6() { grep -q 'listening on' "$SCRATCH/v6.log" || ! kill -0 $V6; }
    wait_until _v6
    p=$(sed -n 's/.*listening on \[::1\]:\([0-9]*\)$/\1/p' "$SCRATCH/v6.log")
    r=$(remaining -g "http://[::1]:$p/check/api")
    report "IPv6: listens on [::1], the key is ::1" $([ "$r" = 19 ] || echo "got '$r' ($(cat "$SCRATCH/v6.log"))")
else
    skip "IPv6" "no IPv6 loopback"
fi

# ---- storage failure with requests side by side ----------------------------------
# The database locked from outside: each of 4 requests at once is answered
# by its action's policy (login allows, api denies), none waits for ever.
if lock_db "$DB"; then
    for i in 1 2 3 4; do
        a=login; [ $((i % 2)) = 0 ] && a=api
        curl -s -o /dev/null -D "$SCRATCH/h$i" -w "$a %{http_code}\n" -H "X-Forwarded-For: 192.0.2.6$i" \
            "$U/check/$a" >"$SCRATCH/s$i" &
    done
    _answered() { [ "$(cat "$SCRATCH"/s[1-4] 2>/dev/null | wc -l)" = 4 ]; }
    wait_until _answered
    unlock_db
    got=$(cat "$SCRATCH"/s[1-4] | sort | tr '\n' ' ')
    report "locked database, 4 requests at once: each action's policy" \
        $([ "$got" = "api 503 api 503 login 204 login 204 " ] || echo "got '$got'") \
        $([ "$(grep -l '^X-Rlstore-Degraded: EBUSY' "$SCRATCH"/h[1-4] | wc -l)" = 4 ] ||
          echo "not every answer has X-Rlstore-Degraded: EBUSY")
else
    fail "locked database: the lock holder did not start: $(cat "$SCRATCH/lock.out")"
fi
s=$(http_status "$U/check/api")
report "the lock gone: checks work again" $([ "$s" = 204 ] || echo "status $s")

# ---- SIGTERM ----------------------------------------------------------------------
kill -TERM "$MAIN_PID"
wait "$MAIN_PID"
rc=$?
report "SIGTERM: exit 0 and a line" $([ "$rc" = 0 ] || echo "exit $rc") \
    $(grep -q 'stopping on signal 15' "$SCRATCH/main.log" || echo "no 'stopping' line")
report "no line on stderr but the expected ones (and libmicrohttpd's)" \
    $(grep -vE 'listening on|stopping on signal|rlstore-auth: http: |check of .* failed: EBUSY' "$SCRATCH/main.log" | head -n 3)
finish
