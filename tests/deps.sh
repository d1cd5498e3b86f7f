#!/bin/sh
# Checks the build dependencies.  As root on Debian/Ubuntu, installs what is
# missing; otherwise prints the exact install line and fails.
# The PostgreSQL server (package postgresql: initdb, pg_ctl, postgres) is
# for the tests only, never a reason to fail: installed along with missing
# build dependencies (not on its own, so that a machine where it cannot be
# installed does not try at every make; .ci/run installs it).  Without it
# `make test` skips its PostgreSQL pass and says so (tests/pg/server.sh);
# likewise PgBouncer (package pgbouncer) for tests/pg/test_pgbouncer.sh.
# python3-limits likewise, and libmicrohttpd-dev and nginx-light (rlstore-auth).
pkgs=""
opt=""
pg_server() {
    command -v initdb >/dev/null 2>&1 && return 0
    for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && return 0; done
    return 1
}
pg_server || opt="postgresql"
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || opt="$opt pgbouncer"
# Python's `limits` (Debian's python3-limits), the peer of the differential
# suite tests/reliability/test_limits_diff.sh, which skips without it
/usr/bin/python3 -c 'import limits' 2>/dev/null || opt="$opt python3-limits"
# rlstore-auth (auth/) needs libmicrohttpd; without it the build skips it in
# one line and tests/auth skips.  nginx (nginx-light) is the proxy of
# tests/auth/test_nginx.sh and bench/auth, which skip without it
pkg-config --exists libmicrohttpd 2>/dev/null || opt="$opt libmicrohttpd-dev"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || opt="$opt nginx-light"
pkg-config --version >/dev/null 2>&1 || pkgs="$pkgs pkg-config"
need() { pkg-config --exists "$1" 2>/dev/null || pkgs="$pkgs $2"; }
if command -v pkg-config >/dev/null 2>&1; then
    need sqlite3 libsqlite3-dev
    need yaml-0.1 libyaml-dev
    need ncursesw libncurses-dev
    need cmocka libcmocka-dev
    need libpq libpq-dev
else
    pkgs="$pkgs libsqlite3-dev libyaml-dev libncurses-dev libcmocka-dev libpq-dev"
fi
command -v tmux >/dev/null 2>&1 || pkgs="$pkgs tmux"
command -v clang >/dev/null 2>&1 || pkgs="$pkgs clang libclang-rt-14-dev"
[ -d /usr/share/zoneinfo/Europe ] || pkgs="$pkgs tzdata"
command -v groff >/dev/null 2>&1 || pkgs="$pkgs groff-base"
command -v python3 >/dev/null 2>&1 || pkgs="$pkgs python3"
python3 -c 'import ensurepip' 2>/dev/null || pkgs="$pkgs python3-venv"
command -v curl >/dev/null 2>&1 || pkgs="$pkgs curl"
[ -z "$pkgs" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing build dependencies:$pkgs"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq $pkgs >/dev/null || {
        echo "deps: apt-get install failed for:$pkgs" >&2; exit 1; }
    if [ -n "$opt" ]; then
        echo "installing the PostgreSQL server for the tests: $opt"
        apt-get install -y -qq $opt >/dev/null ||
            echo "deps: apt-get install $opt failed: the PostgreSQL tests will be skipped" >&2
    fi
    exit 0
fi
echo "missing build dependencies; install them with:" >&2
echo "  sudo apt-get install$pkgs" >&2
exit 1
