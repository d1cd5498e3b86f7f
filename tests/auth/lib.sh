# tests/auth/lib.sh - what the rlstore-auth suites share (sourced after
# tests/suite_lib.sh, bash): starting rlstore-auth, the test application
# and nginx on free loopback ports, and waiting for them.  Every wait is
# for an event (a line in a log, a file, a port that answers, a pid set
# that changes), polled in a loop bounded by WAIT_S seconds.
AUTH=$BUILD_ABS/rlstore-auth
RLCTL=$BUILD_ABS/rlctl
WAIT_S=${RLS_TEST_WAIT_MIN:-60}
_started=""

# wait_until CMD...: 0 when CMD succeeds within WAIT_S seconds
wait_until() {
    local end=$(( $(date +%s) + WAIT_S ))
    while [ "$(date +%s)" -le "$end" ]; do
        "$@" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# port_open PORT: something accepts connections on 127.0.0.1:PORT
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# auth_start NAME ARGS...: rlstore-auth on a free port, stderr in
# $SCRATCH/NAME.log; sets AUTH_PORT and AUTH_PID, status 1 when it did
# not come up (its log says why).
auth_start() {
    local name=$1 log=$SCRATCH/$1.log
    shift
    "$AUTH" --listen 127.0.0.1:0 "$@" 2>"$log" &
    AUTH_PID=$!
    _started="$_started $AUTH_PID"
    _listening() { grep -q 'listening on' "$1" || ! kill -0 "$2"; }
    wait_until _listening "$log" "$AUTH_PID"
    AUTH_PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$log")
    [ -n "$AUTH_PORT" ]
}

# upstream_start: the test application; sets APP_PORT, its hits in $SCRATCH/app.out
upstream_start() {
    python3 "$ROOT/tests/auth/upstream.py" "$SCRATCH/app.port" >"$SCRATCH/app.out" 2>&1 &
    _started="$_started $!"
    wait_until test -s "$SCRATCH/app.port" || return 1
    APP_PORT=$(cat "$SCRATCH/app.port")
}

# hits PATH-PREFIX: the requests the application received under it
hits() { grep -c "^hit $1" "$SCRATCH/app.out"; }

# nginx_start CONF-BODY-FILE: nginx (not a daemon, master and two workers)
# with its own prefix $SCRATCH/nginx, the http block's contents from the
# file, its server on a free port NGX_PORT (the file says "listen NGX_LISTEN;").
# Sets NGX_PORT and NGX_PID.
nginx_start() {
    local d=$SCRATCH/nginx try t IFS=" "
    mkdir -p "$d/tmp" "$d/logs"
    for try in 1 2 3 4 5; do
        NGX_PORT=$(free_port)
        {
            [ "$(id -u)" = 0 ] && echo "user root;"
            echo "worker_processes 2;"
            echo "pid $d/nginx.pid;"
            echo "error_log $d/logs/error.log notice;"
            echo "events { worker_connections 512; }"
            echo "http {"
            echo "    access_log $d/logs/access.log;"
            for t in client_body proxy fastcgi uwsgi scgi; do
                echo "    ${t}_temp_path $d/tmp/$t;"
            done
            sed "s/NGX_LISTEN/127.0.0.1:$NGX_PORT/" "$1"
            echo "}"
        } >"$d/nginx.conf"
        rm -f "$d/nginx.pid"
        nginx -p "$d" -e "$d/logs/error.log" -c "$d/nginx.conf" -g 'daemon off;' \
            >"$d/logs/stdout" 2>&1 &
        NGX_PID=$!
        _started="$_started $NGX_PID"
        _ngx_up() { port_open "$NGX_PORT" && [ -s "$1/nginx.pid" ] || ! kill -0 "$NGX_PID"; }
        wait_until _ngx_up "$d" || return 1
        kill -0 "$NGX_PID" && return 0
        grep -q 'Address already in use' "$d/logs/error.log" "$d/logs/stdout" || return 1
    done
    return 1
}

nginx_cmd() { nginx -p "$SCRATCH/nginx" -e "$SCRATCH/nginx/logs/error.log" -c "$SCRATCH/nginx/nginx.conf" "$@"; }
ngx_workers() { pgrep -P "$NGX_PID" | sort | tr '\n' ' '; }

on_exit() {
    local p IFS=" "
    for p in $_started; do kill "$p" 2>/dev/null; done
    for p in $_started; do wait "$p" 2>/dev/null; done
}

# http_status ARGS...: the status curl got (000 when none)
http_status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# lock_db DB: a process (LOCK_PID) holds DB's write lock, as a writer
# stuck in a long transaction would, until it is killed; status 1 when it
# did not get the lock
lock_db() {
    python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()' "$1" >"$SCRATCH/lock.out" 2>&1 < <(sleep infinity) &
    LOCK_PID=$!
    _started="$_started $LOCK_PID"
    wait_until grep -q locked "$SCRATCH/lock.out"
}
unlock_db() { kill "$LOCK_PID" 2>/dev/null; wait "$LOCK_PID" 2>/dev/null; }
