#!/bin/sh
# bench/auth/run.sh [--quick] - the full proxied request through nginx with
# rlstore-auth (auth_request) against nginx's own limit_req, on this host,
# in one run (`make bench` runs it; `make bench-auth` alone).
#
# One nginx (its own prefix in a temporary folder, 127.0.0.1 only, two
# workers) serves an application (a server block answering 200 "ok") and,
# in front of it, three locations that proxy to it over keep-alive:
#   plain      no limit: what proxying costs
#   limit_req  limit_req zone keyed by $binary_remote_addr
#   rlstore    auth_request to rlstore-auth (keep-alive upstream), the
#              site of examples/nginx/rlstore-auth.conf
# Both limits admit every request (a limit far above the load): what is
# measured is the decision on the admitted path, a write per request for
# rlstore (SQLite, WAL, synchronous=NORMAL).  bench/auth/authload.c sends
# COUNT requests over CONNS keep-alive connections, each connection from
# its own loopback address (its own key), and reports throughput and
# latency percentiles.  The three scenarios run in turns, ROUNDS times;
# the medians are printed with the ratios rlstore / limit_req, and written
# to $BUILD/bench/auth.json.  A missing nginx or rlstore-auth skips in one
# line (exit 0).
BUILD=${BUILD:-build}
COUNT=60000 ROUNDS=3 CONNS=8 THREADS=${AUTH_THREADS:-4}
[ "${1:-}" = --quick ] && COUNT=10000 ROUNDS=2
AUTH=$BUILD/rlstore-auth LOAD=$BUILD/bench/authload RLCTL=$BUILD/rlctl
if ! command -v nginx >/dev/null 2>&1; then
    echo "bench-auth skipped: nginx not installed (apt-get install nginx-light)"; exit 0
fi
if [ ! -x "$AUTH" ]; then
    echo "bench-auth skipped: rlstore-auth not built (apt-get install libmicrohttpd-dev)"; exit 0
fi
d=$(mktemp -d "${TMPDIR:-/tmp}/rlstore-bench-auth.XXXXXX") || exit 1
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# until SECONDS CMD...: CMD succeeded within SECONDS
until_ok() {
    n=$(( $1 * 20 )); shift
    while [ "$n" -gt 0 ]; do "$@" 2>/dev/null && return 0; sleep 0.05; n=$((n - 1)); done
    return 1
}
up() { curl -s -o /dev/null "http://127.0.0.1:$1/"; }

cat >"$d/rules.yaml" <<'YAML'
version: 1
actions:
  bench:
    key: ip
    limits:
      - { name: per_ip, algorithm: gcra, limit: 1000000000, window: 1s }
YAML
"$RLCTL" --db "$d/limits.db" --quiet init "$d/rules.yaml" || exit 1
"$AUTH" --db "$d/limits.db" --listen 127.0.0.1:0 --trusted-proxy 127.0.0.1 \
    --threads "$THREADS" 2>"$d/auth.log" &
pids="$pids $!"
until_ok 30 grep -q 'listening on' "$d/auth.log" || { cat "$d/auth.log"; exit 1; }
AUTH_PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$d/auth.log")
APP=$(free_port) FRONT=$(free_port)
user=""; [ "$(id -u)" = 0 ] && user="user root;"
mkdir -p "$d/ngx/logs" "$d/ngx/tmp"
cat >"$d/ngx/nginx.conf" <<CONF
$user
worker_processes 2;
pid $d/ngx/nginx.pid;
error_log $d/ngx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $d/ngx/tmp/body;
    proxy_temp_path $d/ngx/tmp/proxy;
    fastcgi_temp_path $d/ngx/tmp/fastcgi;
    uwsgi_temp_path $d/ngx/tmp/uwsgi;
    scgi_temp_path $d/ngx/tmp/scgi;
    keepalive_requests 1000000;
    limit_req_zone \$binary_remote_addr zone=perip:10m rate=1000000r/s;
    upstream app { server 127.0.0.1:$APP; keepalive 64; }
    upstream rlstore_auth { server 127.0.0.1:$AUTH_PORT; keepalive 64; }
    server {
        listen 127.0.0.1:$APP;
        keepalive_requests 1000000;
        location / { return 200 "ok\n"; }
    }
    server {
        listen 127.0.0.1:$FRONT;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        location / { return 200 "front\n"; }
        location /plain/ { proxy_pass http://app; }
        location /limit_req/ {
            limit_req zone=perip burst=1000 nodelay;
            proxy_pass http://app;
        }
        location /rlstore/ {
            auth_request /_rlstore/bench;
            auth_request_set \$rlstore_limit \$upstream_http_ratelimit;
            error_page 403 = @denied;
            add_header RateLimit \$rlstore_limit always;
            proxy_pass http://app;
        }
        location /_rlstore/ {
            internal;
            proxy_pass http://rlstore_auth/check/;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Forwarded-For \$remote_addr;
            proxy_set_header X-Rlstore-Deny-Status 403;
            proxy_set_header Connection "";   # not inherited: keep-alive
        }
        location @denied { return 429; }
    }
}
CONF
nginx -p "$d/ngx" -e "$d/ngx/logs/error.log" -c "$d/ngx/nginx.conf" -g 'daemon off;' 2>"$d/ngx/logs/stderr" &
pids="$pids $!"
until_ok 30 up "$FRONT" && until_ok 30 up "$APP" || { cat "$d/ngx/logs/error.log" "$d/ngx/logs/stderr"; exit 1; }

echo "bench-auth: $ROUNDS rounds of $COUNT requests over $CONNS keep-alive connections, nginx 2 workers, rlstore-auth $THREADS threads, $(getconf _NPROCESSORS_ONLN) CPUs"
st=0
for r in $(seq "$ROUNDS"); do
    for s in plain limit_req rlstore; do
        out=$("$LOAD" "$FRONT" "/$s/x" "$COUNT" "$CONNS") || { echo "bench-auth: $s failed"; st=1; continue; }
        echo "$s $out" | tee -a "$d/runs"
        case $out in *non200=0) ;; *) echo "bench-auth: $s answered other statuses than 200"; st=1 ;; esac
    done
done
# the service's own view: the time from its reading a request to its answer
curl -s "http://127.0.0.1:$AUTH_PORT/metrics" | awk '
    /^rlstore_auth_check_seconds_sum / { sum = $2 }
    /^rlstore_auth_check_seconds_count / { n = $2 }
    END { if (n) printf "rlstore-auth: %d checks, mean %.1f us each inside the service\n", n, sum / n * 1e6 }'
mkdir -p "$BUILD/bench"
python3 - "$d/runs" "$BUILD/bench/auth.json" <<'PY' || st=1
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, *kv = line.split()
    runs.setdefault(name, []).append({k: float(v) for k, v in (x.split("=") for x in kv)})
med = {n: {k: statistics.median(r[k] for r in rs) for k in ("rps", "p50_us", "p99_us")}
       for n, rs in runs.items()}
print("%-10s %10s %9s %9s" % ("scenario", "req/s", "p50 us", "p99 us"))
for n in ("plain", "limit_req", "rlstore"):
    if n in med:
        m = med[n]
        print("%-10s %10.0f %9.0f %9.0f" % (n, m["rps"], m["p50_us"], m["p99_us"]))
if "rlstore" in med and "limit_req" in med:
    r, l = med["rlstore"], med["limit_req"]
    print("rlstore / limit_req: throughput %.2fx, p50 %.2fx, p99 %.2fx"
          % (r["rps"] / l["rps"], r["p50_us"] / l["p50_us"], r["p99_us"] / l["p99_us"]))
json.dump({"medians": med, "runs": runs}, open(sys.argv[2], "w"), indent=1)
PY
exit $st
