#!/bin/sh
# peer_pg.sh TXNS KEYS - the PostgreSQL peer of rlbench.
#
# Starts a throwaway cluster in a temporary directory, listening on loopback
# only (synchronous_commit=off, so a commit does not wait for its WAL flush,
# like rlstore's synchronous=NORMAL), runs pgbench with one client and one
# "INSERT ... ON CONFLICT DO UPDATE ... RETURNING" per transaction over KEYS
# keys, and prints
#     result TXNS SECONDS P50 P99 P99.9 MAX      (latencies in microseconds)
# or  skip REASON
# Every step is bounded by timeout(1); the cluster is stopped and removed on
# exit.  As root, the server runs as the "postgres" user (initdb refuses root).
txns=${1:-20000}
keys=${2:-10000}

skip() { echo "skip $*"; exit 0; }
find_bin() {
    p=$(command -v "$1" 2>/dev/null)
    [ -z "$p" ] && p=$(ls /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | tail -n 1)
    echo "$p"
}
INITDB=$(find_bin initdb); PGCTL=$(find_bin pg_ctl); PGBENCH=$(find_bin pgbench); PSQL=$(find_bin psql)
[ -n "$INITDB" ] && [ -n "$PGCTL" ] && [ -n "$PGBENCH" ] && [ -n "$PSQL" ] ||
    skip "PostgreSQL (initdb, pg_ctl, pgbench, psql) is not installed"
command -v timeout >/dev/null 2>&1 || skip "timeout(1) is missing"

as=""
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 && command -v runuser >/dev/null 2>&1 ||
        skip "running as root and there is no postgres user to run the server"
    as="runuser -u postgres --"
fi

dir=$(mktemp -d /tmp/rlbench-pg-XXXXXX) || skip "cannot create a temporary directory"
started=0
cleanup() {
    [ "$started" = 1 ] && timeout 30 $as "$PGCTL" -D "$dir/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
[ -n "$as" ] && chown postgres "$dir"

timeout 120 $as "$INITDB" -D "$dir/data" -A trust -U bench --no-sync >"$dir/initdb.log" 2>&1 ||
    skip "initdb failed: $(tail -n 1 "$dir/initdb.log")"
port=0
for try in 1 2 3; do
    port=$(( ($$ * 7 + try * 7919) % 30000 + 20000 ))
    if timeout 60 $as "$PGCTL" -D "$dir/data" -w -t 30 -l "$dir/server.log" \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c shared_buffers=64MB" \
        start >/dev/null 2>&1; then
        started=1
        break
    fi
done
[ "$started" = 1 ] || skip "the server did not start: $(tail -n 1 "$dir/server.log" 2>/dev/null)"

timeout 30 $as "$PSQL" -q -h 127.0.0.1 -p "$port" -U bench -d postgres \
    -c "CREATE TABLE c(key text PRIMARY KEY, n bigint NOT NULL)" >/dev/null 2>&1 ||
    skip "cannot create the table"
cat >"$dir/upsert.sql" <<EOF
\\set k random(0, $((keys - 1)))
INSERT INTO c(key, n) VALUES ('10.' || :k, 1) ON CONFLICT (key) DO UPDATE SET n = c.n + 1 RETURNING n;
EOF
[ -n "$as" ] && chown postgres "$dir/upsert.sql"
cd "$dir" || skip "cannot enter $dir"
timeout 600 $as "$PGBENCH" -n -c 1 -j 1 -t "$txns" -M prepared -f "$dir/upsert.sql" \
    -l --log-prefix="$dir/lat" -h 127.0.0.1 -p "$port" -U bench postgres >"$dir/out" 2>&1 ||
    skip "pgbench failed: $(tail -n 1 "$dir/out")"
tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time).*/\1/p' "$dir/out")
[ -n "$tps" ] || skip "no tps in the pgbench output"
# per-transaction log: client transaction latency_us script epoch epoch_us
cat "$dir"/lat.* | awk '{print $3}' | sort -n | awk -v txns="$txns" -v tps="$tps" '
    { v[NR] = $1 }
    END {
        if (NR == 0) { print "skip empty latency log"; exit }
        printf "result %d %.6f %.1f %.1f %.1f %.1f\n", NR, NR / tps,
            v[int(NR * 0.5) + 1], v[int(NR * 0.99) + 1], v[int(NR * 0.999) + 1], v[NR]
    }'
