#!/bin/sh
# server.sh - a throw-away PostgreSQL server for the test suites.
#
#   server.sh run CMD [ARGS...]
#       starts a server, runs CMD with RLSTORE_TEST_PG set to the base URI
#       of its test database, stops the server and exits with CMD's status.
#   server.sh start [--owner PID]
#       starts a server and prints two lines: the base URI of its test
#       database ("postgresql://rlstore@127.0.0.1:PORT/rlstore_test") and
#       the server's directory, the argument of `stop`.  With --owner, a
#       watchdog stops the server once process PID has ended.
#   server.sh stop DIR
#       stops the server of DIR and removes DIR.
#   server.sh check
#       exits 0 when the server binaries are found, otherwise prints why
#       not and exits 2.
#   server.sh bouncer URI MODE
#       starts PgBouncer (pool_mode MODE: session or transaction) on a free
#       port of 127.0.0.1 in front of the server of URI, trusting URI's
#       user, and prints two lines: URI with the bouncer's port, and the
#       bouncer's directory (stop it with `stop DIR`).  Exit status 2
#       (after one line saying why) when pgbouncer is not installed.
#   server.sh newdb URI NAME
#       creates the database NAME on the server whose test database has
#       the base URI (as printed by start) and prints the base URI of NAME:
#       suites run side by side each get a database of their own.
#
# The cluster is created by initdb in a fresh temporary directory, which
# also holds the server's log and its Unix socket; the server listens on a
# free TCP port of 127.0.0.1 only, with trust authentication (pg_hba.conf
# of initdb -A trust: local socket and loopback addresses), fsync off.
# Two roles of the test tables' owner's group log in otherwise, for the
# tests of libpq's settings: rlstore_pw over TCP with the password
# pw-s3cret-test only, rlstore_tls over TLS only (ssl on, with a
# self-signed certificate, when openssl is installed).  The
# binaries are found in RLSTORE_PG_BINDIR when it is set, else in PATH or
# in /usr/lib/postgresql/<version>/bin (the newest).  PostgreSQL refuses to run as root: as root, the cluster belongs
# to the user "postgres" and its commands run through runuser.
#
# Exit status 2 (after one line on stderr saying why) means the server
# binaries are missing: callers skip the PostgreSQL suites.  Any other
# failure prints the tail of the server's log and exits 1.
set -u

PG_USER_NAME=postgres
DB=rlstore_test
ROLE=rlstore
PW_ROLE=rlstore_pw            # see pg_start; the tests know these names
PW_SECRET=pw-s3cret-test
TLS_ROLE=rlstore_tls

die() { echo "pg server: $*" >&2; exit 1; }

# Sets BIN to the directory holding initdb, pg_ctl and postgres.
find_bin() {
    BIN=""
    if [ -n "${RLSTORE_PG_BINDIR:-}" ]; then
        BIN=$RLSTORE_PG_BINDIR
    elif command -v initdb >/dev/null 2>&1; then
        BIN=$(dirname "$(command -v initdb)")
    else
        for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n); do
            [ -x "$d/initdb" ] && BIN=$d
        done
    fi
    for t in initdb pg_ctl postgres; do
        if [ -z "$BIN" ] || [ ! -x "$BIN/$t" ]; then
            echo "no PostgreSQL server binaries (initdb, pg_ctl, postgres) in" \
                "${RLSTORE_PG_BINDIR:-PATH or /usr/lib/postgresql/*/bin}: install the" \
                "Debian package postgresql" >&2
            exit 2
        fi
    done
    PSQL=$BIN/psql
    [ -x "$PSQL" ] || PSQL=$(command -v psql) || {
        echo "PostgreSQL client psql not found (Debian package postgresql-client)" >&2; exit 2; }
    if [ "$(id -u)" = 0 ]; then
        if ! id -u "$PG_USER_NAME" >/dev/null 2>&1 || [ "$(id -u "$PG_USER_NAME")" = 0 ]; then
            echo "running as root and there is no unprivileged user '$PG_USER_NAME' to run" \
                "PostgreSQL (Debian package postgresql creates it)" >&2
            exit 2
        fi
        command -v runuser >/dev/null 2>&1 || {
            echo "running as root and runuser (util-linux) is missing" >&2; exit 2; }
    fi
}

# as_pg CMD...: runs CMD as the cluster's owner.
as_pg() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$PG_USER_NAME" -- "$@"
    else
        "$@"
    fi
}

# A TCP port nobody listens on (checked in /proc/net/tcp*), 20000-59999.
pick_port() {
    while :; do
        n=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
        p=$((20000 + n % 40000))
        hex=$(printf '%04X' "$p")
        if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2}' |
            grep -qi ":$hex\$"; then
            echo "$p"
            return
        fi
    done
}

pg_stop() {  # DIR
    dir=$1
    [ -d "$dir" ] || return 0
    if [ -f "$dir/pgbouncer.ini" ]; then   # a bouncer's (bouncer_start)
        kill "$(cat "$dir/pgbouncer.pid" 2>/dev/null)" 2>/dev/null
        rm -rf "$dir"
        return 0
    fi
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_pg "$BIN/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
            kill -9 "$(head -n 1 "$dir/data/postmaster.pid")" 2>/dev/null
    fi
    rm -rf "$dir"
}

# Starts a cluster; sets DIR and URI.  Cleans up and exits on failure.
pg_start() {
    base=${TMPDIR:-/tmp}
    DIR=$(mktemp -d "$base/rlstore-pg-XXXXXX") || die "mktemp in $base failed"
    if [ "$(id -u)" = 0 ]; then
        chown "$PG_USER_NAME" "$DIR" || { rm -rf "$DIR"; die "chown $DIR failed"; }
        if ! as_pg test -w "$DIR"; then  # TMPDIR not reachable by postgres
            rm -rf "$DIR"
            DIR=$(mktemp -d /tmp/rlstore-pg-XXXXXX) || die "mktemp in /tmp failed"
            chown "$PG_USER_NAME" "$DIR" || { rm -rf "$DIR"; die "chown $DIR failed"; }
        fi
    fi
    trap 'pg_stop "$DIR"; exit 1' INT TERM HUP
    if ! as_pg "$BIN/initdb" -D "$DIR/data" -A trust -U "$ROLE" -E UTF8 --locale=C --no-sync \
        >"$DIR/initdb.log" 2>&1 </dev/null; then
        tail -n 5 "$DIR/initdb.log" >&2
        pg_stop "$DIR"
        die "initdb failed"
    fi
    # Two more roles for the tests of libpq's own settings: PW_ROLE logs in
    # over TCP with a password only (scram-sha-256), TLS_ROLE over TLS
    # only, with a self-signed certificate made here (when openssl is
    # there).  Both are members of ROLE, the owner of the test tables.
    ssl_opt=""
    if command -v openssl >/dev/null 2>&1 &&
        openssl req -new -x509 -days 7 -nodes -subj /CN=127.0.0.1 \
            -keyout "$DIR/server.key" -out "$DIR/server.crt" >"$DIR/openssl.log" 2>&1 </dev/null; then
        chmod 600 "$DIR/server.key"
        [ "$(id -u)" = 0 ] && chown "$PG_USER_NAME" "$DIR/server.key" "$DIR/server.crt"
        ssl_opt="-c ssl=on -c ssl_cert_file=$DIR/server.crt -c ssl_key_file=$DIR/server.key"
    fi
    hba=$DIR/data/pg_hba.conf
    { printf 'hostssl all %s 127.0.0.1/32 trust\n' "$TLS_ROLE"
      printf 'host all %s 127.0.0.1/32 reject\n' "$TLS_ROLE"
      printf 'host all %s 127.0.0.1/32 scram-sha-256\n' "$PW_ROLE"
      cat "$hba"; } >"$DIR/hba.new" && as_pg cp "$DIR/hba.new" "$hba" && rm -f "$DIR/hba.new" ||
        { pg_stop "$DIR"; die "cannot write pg_hba.conf"; }
    tries=0
    while :; do
        PORT=$(pick_port)
        opts="-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DIR $ssl_opt"
        opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        opts="$opts -c shared_buffers=32MB -c max_connections=200 -c max_locks_per_transaction=256"
        if as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/data/server.log" -w -t 60 -o "$opts" \
            start >"$DIR/pg_ctl.log" 2>&1 </dev/null; then
            break
        fi
        tries=$((tries + 1))
        # another process took the port between the check and the start
        if [ "$tries" -lt 5 ] && grep -q "could not bind\|could not create any TCP" \
            "$DIR/data/server.log" 2>/dev/null; then
            continue
        fi
        tail -n 5 "$DIR/data/server.log" "$DIR/pg_ctl.log" >&2 2>/dev/null
        pg_stop "$DIR"
        die "pg_ctl start failed"
    done
    if ! PGCONNECT_TIMEOUT=10 "$PSQL" -X -q -h 127.0.0.1 -p "$PORT" -U "$ROLE" -d postgres \
            -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB" \
            -c "CREATE ROLE $PW_ROLE LOGIN PASSWORD '$PW_SECRET' IN ROLE $ROLE" \
            -c "CREATE ROLE $TLS_ROLE LOGIN IN ROLE $ROLE" >"$DIR/psql.log" 2>&1 </dev/null; then
        tail -n 5 "$DIR/psql.log" >&2
        pg_stop "$DIR"
        die "CREATE DATABASE $DB failed"
    fi
    URI="postgresql://$ROLE@127.0.0.1:$PORT/$DB"
    trap - INT TERM HUP
}

# Starts PgBouncer in front of the server of URI $1, pool_mode $2; sets DIR
# and URI (the bouncer's).  Exits 2 without pgbouncer, 1 on failure.
bouncer_start() {
    pgb=$(command -v pgbouncer 2>/dev/null)
    [ -z "$pgb" ] && [ -x /usr/sbin/pgbouncer ] && pgb=/usr/sbin/pgbouncer
    [ -n "$pgb" ] || { echo "pgbouncer not found (Debian package pgbouncer)" >&2; exit 2; }
    rest=${1#*://}
    user=${rest%%@*}
    hostport=${rest#*@}
    hostport=${hostport%%/*}
    dbpart=${rest#*/}
    DIR=$(mktemp -d "${TMPDIR:-/tmp}/rlstore-pgb-XXXXXX") || die "mktemp failed"
    bport=$(pick_port)
    { echo "[databases]"
      echo "* = host=${hostport%:*} port=${hostport##*:}"
      echo "[pgbouncer]"
      echo "listen_addr = 127.0.0.1"
      echo "listen_port = $bport"
      echo "unix_socket_dir ="
      echo "auth_type = trust"
      echo "auth_file = $DIR/users.txt"
      echo "pool_mode = $2"
      echo "max_client_conn = 200"
      echo "default_pool_size = 40"
      echo "logfile = $DIR/pgbouncer.log"
      echo "pidfile = $DIR/pgbouncer.pid"; } >"$DIR/pgbouncer.ini"
    printf '"%s" ""\n' "$user" >"$DIR/users.txt"
    [ "$(id -u)" = 0 ] && chown -R "$PG_USER_NAME" "$DIR"
    # PgBouncer refuses to run as root: it runs as the server does
    if ! as_pg "$pgb" -d -q "$DIR/pgbouncer.ini" </dev/null >"$DIR/start.log" 2>&1; then
        cat "$DIR/start.log" >&2
        rm -rf "$DIR"
        die "pgbouncer did not start"
    fi
    URI="postgresql://$user@127.0.0.1:$bport/$dbpart"
    tries=0
    until PGCONNECT_TIMEOUT=5 "$PSQL" -X -q "$URI" -c "SELECT 1" </dev/null >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ "$tries" -ge 600 ]; then   # 120 s: a bound against a hang only
            tail -n 5 "$DIR/pgbouncer.log" >&2
            pg_stop "$DIR"
            die "pgbouncer does not answer on port $bport"
        fi
        sleep 0.2
    done
}

# A watchdog that stops the server of DIR once process OWNER has ended (also
# when the server is stopped otherwise: then it finds DIR gone and ends).
# It runs in a session of its own, as the server does (pg_ctl), so that
# killing the caller's process group, even with SIGKILL, leaves it to clean
# up.
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
watch_owner() {  # OWNER DIR
    if command -v setsid >/dev/null 2>&1; then
        setsid sh "$SELF" watch "$1" "$2" </dev/null >/dev/null 2>&1 &
    else
        sh "$SELF" watch "$1" "$2" </dev/null >/dev/null 2>&1 &
    fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
check)
    find_bin
    ;;
start)
    owner=""
    if [ "${1:-}" = --owner ]; then owner=${2:?--owner needs a pid}; fi
    find_bin
    pg_start
    [ -n "$owner" ] && watch_owner "$owner" "$DIR"
    echo "$URI"
    echo "$DIR"
    ;;
stop)
    [ $# -eq 1 ] || die "usage: server.sh stop DIR"
    case $1 in */rlstore-pg-* | */rlstore-pgb-*) ;; *) die "not a server directory: $1" ;; esac
    find_bin
    pg_stop "$1"
    ;;
watch)   # internal: the watchdog of watch_owner
    [ $# -eq 2 ] || die "usage: server.sh watch OWNER DIR"
    trap '' INT HUP
    find_bin
    while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done
    pg_stop "$2"
    ;;
bouncer)
    [ $# -eq 2 ] || die "usage: server.sh bouncer URI MODE"
    find_bin
    bouncer_start "$1" "$2"
    echo "$URI"
    echo "$DIR"
    ;;
newdb)
    [ $# -eq 2 ] || die "usage: server.sh newdb URI NAME"
    case $2 in *[!a-z0-9_]* | "") die "not a database name: $2" ;; esac
    find_bin
    PGCONNECT_TIMEOUT=10 "$PSQL" -X -q -v ON_ERROR_STOP=1 "$1" -c "CREATE DATABASE $2" \
        </dev/null >/dev/null || die "CREATE DATABASE $2 failed"
    echo "${1%/*}/$2"
    ;;
run)
    [ $# -gt 0 ] || die "usage: server.sh run CMD [ARGS...]"
    find_bin
    pg_start
    watch_owner $$ "$DIR"
    trap 'pg_stop "$DIR"' EXIT
    trap 'exit 1' INT TERM HUP
    RLSTORE_TEST_PG=$URI "$@"
    exit $?
    ;;
*)
    echo "usage: server.sh run CMD [ARGS...] | start [--owner PID] | stop DIR | bouncer URI MODE | newdb URI NAME | check" >&2
    exit 1
    ;;
esac
