#!/bin/sh
# tests/examples/test_examples.sh - runs the example programs and checks what
# they promise.
#
#   quickstart  admits 3 sign-ups of 5, as its rule says;
#   signup      counts only sign-ups that created an account (a cancelled
#               reservation costs nothing, an abandoned one is refunded
#               after its TTL), per day and per week, per IPv6 /64; runs
#               again on the same database with the same output; rlctl
#               sees the same counters;
#   http429     on loopback, driven with curl: 200 with RateLimit headers,
#               then 429 with RateLimit, RateLimit-Policy and Retry-After;
#               HEAD, malformed requests, X-Forwarded-For only when trusted,
#               a rule change by rlctl while it runs, --requests N, SIGTERM,
#               and the stats it leaves behind.
#
# Needs the examples built (make) and curl; without curl the HTTP cases use
# python3's http.client instead (Debian: apt-get install curl).
. "$(dirname "$0")/../install/suite.sh"

EX=$BUILD/examples
RLCTL=$BUILD/rlctl
for p in quickstart signup http429; do
    [ -x "$EX/$p" ] || { fail "$EX/$p is not built (run make)"; }
done
[ -x "$RLCTL" ] || fail "$RLCTL is not built (run make)"
[ "$failed" = 0 ] || finish

# ---- quickstart -----------------------------------------------------------------
if "$EX/quickstart" "$TMP/q.db" >"$TMP/q.out" 2>&1 &&
    [ "$(grep -c ': allowed' "$TMP/q.out")" = 3 ] && [ "$(grep -c ': denied' "$TMP/q.out")" = 2 ]; then
    pass
else
    fail "quickstart: expected 3 allowed and 2 denied: $(tr '\n' '|' <"$TMP/q.out" | cut -c1-300)"
fi

# ---- signup -----------------------------------------------------------------------
# has TEXT: the signup output contains the line fragment TEXT
has() {
    if grep -qF -- "$1" "$TMP/s.out"; then pass; else fail "signup: output lacks '$1'"; fi
}
if "$EX/signup" "$TMP/s.db" >"$TMP/s.out" 2>"$TMP/s.err"; then
    pass
else
    fail "signup exited with status $?: $(head -n 2 "$TMP/s.err" | tr '\n' ' ')"
fi
has "alice   created, committed (daily: 2 left)"
has "bob     failed (user name taken), cancelled: not counted"
has "carol   created, committed (daily: 1 left)"
has "dave    failed (e-mail address rejected), cancelled: not counted"
has "erin    created, committed (daily: 0 left)"
has "frank   denied by 'daily': try again in 14h10m"
has "3 accounts created from 203.0.113.7 today"
has "heidi   created, committed (weekly: 0 left)"
has "ivan    denied by 'weekly': try again in 5d14h40m"
has "judy    created, committed (daily: 2 left)"
has "oscar   created, committed (daily: 1 left)"
has "peggy   reserved (daily: 1 left), then its process dies"
has "rupert  created, committed (daily: 1 left)"
if grep -Eq "peggy   a late commit returns (ENOTFOUND|EEXPIRED): it was refunded" "$TMP/s.out"; then
    pass
else
    fail "signup: a commit after the TTL is not reported as ENOTFOUND or EEXPIRED"
fi
# The same counters through rlctl: after Tuesday, 203.0.113.7 has used the
# week (5 accounts: the two failures were not counted).
if "$RLCTL" --db "$TMP/s.db" --json --now 2026-11-25T09:00:00Z check signup 203.0.113.7 --peek \
        >"$TMP/peek.json" 2>&1; then
    fail "rlctl: 203.0.113.7 should be over its weekly limit on Wednesday: $(cat "$TMP/peek.json")"
elif python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["allowed"] is False and d["rule"] == "weekly", d
' "$TMP/peek.json" 2>"$TMP/py.err"; then
    pass
else
    fail "rlctl check --peek after the example: $(tail -n 1 "$TMP/py.err")"
fi
# And again on the same database: the same story.
if "$EX/signup" "$TMP/s.db" >"$TMP/s2.out" 2>&1 && cmp -s "$TMP/s.out" "$TMP/s2.out"; then
    pass
else
    fail "signup: a second run on the same database differs: $(diff "$TMP/s.out" "$TMP/s2.out" | head -n 3 | tr '\n' ' ')"
fi

# ---- http429 ------------------------------------------------------------------------
# get PATH [CURL OPTIONS...]: prints the status line, the header lines and
# the body of a request to the server on $port, CRs removed.
if command -v curl >/dev/null 2>&1; then
    get() {
        _path=$1
        shift
        curl -s -i --max-time 10 "$@" "http://127.0.0.1:$port$_path" | tr -d '\r'
    }
else
    echo "note: curl is not installed; using python3 http.client (Debian: apt-get install curl)"
    get() {
        python3 - "$port" "$@" <<'EOF'
import http.client, sys
port, path, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
method, headers = "GET", {}
i = 0
while i < len(args):
    if args[i] == "-I":
        method = "HEAD"
    elif args[i] == "-H":
        i += 1
        k, v = args[i].split(":", 1)
        headers[k.strip()] = v.strip()
    i += 1
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
c.request(method, path, headers=headers)
r = c.getresponse()
print("HTTP/1.1 %d %s" % (r.status, r.reason))
for k, v in r.getheaders():
    print("%s: %s" % (k, v))
print()
sys.stdout.write(r.read().decode())
EOF
    }
fi

server_pid=
on_exit() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; }

# start_server NAME ARGS...: starts http429 ARGS with output in $TMP/NAME.log
# and sets $port; 0 when it listens.
start_server() {
    _log=$TMP/$1.log
    shift
    "$EX/http429" "$@" >"$_log" 2>&1 &
    server_pid=$!
    port=
    for _i in $(seq 1 2400); do
        port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9][0-9]*\)/$|\1|p' "$_log")
        [ -n "$port" ] && return 0
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    fail "http429 $* did not start: $(head -n 2 "$_log" | tr '\n' ' ')"
    return 1
}

# stop_server: SIGTERM, then the exit status must be 0 (a hang fails after 120 s).
stop_server() {
    kill -TERM "$server_pid" 2>/dev/null
    for _i in $(seq 1 2400); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        fail "http429 did not exit within 120 s of SIGTERM"
        kill -KILL "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
    elif wait "$server_pid"; then
        pass
    else
        fail "http429 exited with status $? on SIGTERM"
    fi
    server_pid=
}

# expect_resp NAME FILE STATUS [PATTERN...]: the response in FILE has the
# status code and a line matching each extended regular expression.
expect_resp() {
    _name=$1 _f=$2 _st=$3
    shift 3
    _msg=
    head -n 1 "$_f" | grep -q "^HTTP/1\.1 $_st " || _msg="status '$(head -n 1 "$_f")', expected $_st"
    for _p in "$@"; do
        grep -Eq -- "$_p" "$_f" || _msg="$_msg; no line matches '$_p'"
    done
    if [ -z "$_msg" ]; then pass; else fail "http429 $_name: ${_msg#; } (got: $(tr '\n' '|' <"$_f" | cut -c1-240))"; fi
}

if start_server main "$TMP/h.db" 0; then
    pass
    for i in 1 2 3 4 5; do
        get /hello >"$TMP/r$i"
    done
    expect_resp "request 1" "$TMP/r1" 200 '^RateLimit-Policy: "per_ip";q=5;w=60$' \
        '^RateLimit: "per_ip";r=4;t=[0-9]+$' '^hello 127\.0\.0\.1'
    ok=1
    for i in 2 3 4 5; do
        grep -q "^RateLimit: \"per_ip\";r=$((5 - i));t=" "$TMP/r$i" && head -n 1 "$TMP/r$i" | grep -q ' 200 ' || ok=0
    done
    [ $ok = 1 ] && pass || fail "http429: requests 2-5 are not 200 with r=3..0"
    get /hello >"$TMP/r6"
    expect_resp "request 6 (over the limit)" "$TMP/r6" 429 '^RateLimit-Policy: "per_ip";q=5;w=60$' \
        '^RateLimit: "per_ip";r=0;t=[0-9]+$' '^Retry-After: [0-9]+$' '^too many requests: retry in [0-9]+ s$'
    ra=$(sed -n 's/^Retry-After: //p' "$TMP/r6")
    t=$(sed -n 's/^RateLimit: .*;t=//p' "$TMP/r6")
    if [ -n "$ra" ] && [ "$ra" -ge 1 ] && [ "$ra" -le 12 ] && [ "$t" = "$ra" ]; then
        pass
    else
        fail "http429: Retry-After '$ra' should be 1..12 s (one emission interval) and equal t '$t'"
    fi
    get /hello -I >"$TMP/r7"
    expect_resp "HEAD over the limit" "$TMP/r7" 429 '^Retry-After: [0-9]+$'
    grep -q '^too many' "$TMP/r7" && fail "http429: a HEAD response has a body" || pass
    # Without --trust-forwarded, X-Forwarded-For changes nothing.
    get /hello -H 'X-Forwarded-For: 198.51.100.1' >"$TMP/r8"
    expect_resp "X-Forwarded-For not trusted" "$TMP/r8" 429
    # A request that is not HTTP/1.x gets 400 and is not counted.
    python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"hello there\r\n\r\n")
sys.stdout.write(s.recv(4096).decode())
' "$port" | tr -d '\r' >"$TMP/r9" 2>&1
    expect_resp "malformed request" "$TMP/r9" 400
    # A rule change made with rlctl while the server runs applies within a
    # second (the library's contract; a denial may be served from memory
    # until then).
    cat >"$TMP/strict.yaml" <<'EOF'
version: 1
actions:
  http:
    key: ip
    limits:
      - { name: strict, algorithm: sliding_log, limit: 1, window: 1h }
EOF
    if "$RLCTL" --db "$TMP/h.db" --quiet apply "$TMP/strict.yaml" >"$TMP/apply.log" 2>&1; then
        sleep 2
        get /hello >"$TMP/r10"
        expect_resp "after rlctl apply" "$TMP/r10" 200 '^RateLimit-Policy: "strict";q=1;w=3600$'
        get /hello >"$TMP/r11"
        expect_resp "after rlctl apply, second request" "$TMP/r11" 429 '^RateLimit: "strict";r=0;t=[0-9]+$'
    else
        fail "rlctl apply while http429 runs: $(cat "$TMP/apply.log")"
    fi
    stop_server
    grep -q '^served 11 request(s), stopped by a signal$' "$TMP/main.log" && pass ||
        fail "http429: last line '$(tail -n 1 "$TMP/main.log")', expected 'served 11 request(s), stopped by a signal'"
    # Its checks are in the statistics of the database (flushed at close).
    if "$RLCTL" --db "$TMP/h.db" --json stats >"$TMP/stats.json" 2>&1 && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = {r["action"]: r for r in d["totals"]}
assert t["http"]["allowed"] == 6 and t["http"]["denied"] == 4, t
' "$TMP/stats.json" 2>"$TMP/py.err"; then
        pass
    else
        fail "rlctl stats after http429: $(tail -n 1 "$TMP/py.err") $(head -c 200 "$TMP/stats.json")"
    fi
fi

# --trust-forwarded: the proxy's last address is the client; --requests N.
if start_server proxy --requests 4 --trust-forwarded "$TMP/p.db" 0; then
    pass
    get /a -H 'X-Forwarded-For: 203.0.113.9, 198.51.100.7' >"$TMP/p1"
    expect_resp "trusted X-Forwarded-For" "$TMP/p1" 200 '^hello 198\.51\.100\.7:' '^RateLimit: "per_ip";r=4;'
    get /a -H 'X-Forwarded-For: 198.51.100.8' >"$TMP/p2"
    expect_resp "another forwarded client" "$TMP/p2" 200 '^hello 198\.51\.100\.8:' '^RateLimit: "per_ip";r=4;'
    get /a -H 'X-Forwarded-For: not-an-address' >"$TMP/p3"
    expect_resp "a forwarded address that is not one" "$TMP/p3" 400
    get /a >"$TMP/p4"
    expect_resp "the fourth request" "$TMP/p4" 200
    for _i in $(seq 1 2400); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        fail "http429 --requests 4 still runs after 4 requests"
        stop_server
    elif wait "$server_pid" && grep -q '^served 4 request(s)$' "$TMP/proxy.log"; then
        pass
    else
        fail "http429 --requests 4: $(tail -n 1 "$TMP/proxy.log")"
    fi
    server_pid=
fi

# Usage errors exit 2; a port in use is an error, not a hang.
"$EX/http429" >/dev/null 2>&1
[ $? = 2 ] && pass || fail "http429 without arguments should exit 2"
"$EX/http429" "$TMP/u.db" 70000 >/dev/null 2>&1
[ $? = 2 ] && pass || fail "http429 with port 70000 should exit 2"

finish
