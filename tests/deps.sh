#!/bin/sh
# `make deps`: checks the build dependencies.  As root on Debian/Ubuntu,
# installs what is missing; otherwise prints the exact install line and
# fails.  Only `make deps` runs it: `make` and `make test` never install
# anything.  Package names carry no version (clang's runtime is
# libclang-rt-dev, not libclang-rt-NN-dev), so the list outlives a release.
# The test-only packages are never a reason to fail (their suites skip
# without them, saying so): the PostgreSQL server (package postgresql:
# initdb, pg_ctl, postgres) for the PostgreSQL pass (tests/pg/server.sh),
# PgBouncer for tests/pg/test_pgbouncer.sh, python3-limits for
# tests/reliability/test_limits_diff.sh, and debhelper, dh-python and
# lintian for tests/install/test_package.sh (the Debian packages).
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
# zsh and fish, in which tests/install/test_completion_shells.sh tries
# rlctl's generated completions (it skips a shell that is missing)
command -v zsh >/dev/null 2>&1 || opt="$opt zsh"
command -v fish >/dev/null 2>&1 || opt="$opt fish"
# Node.js for tests/node/test_node.sh (the Node.js binding), which skips
# without it.  The machine image brings node with its headers; Debian's
# nodejs has none (they are in libnode-dev, which conflicts with the
# image's node): there the addon is not built and the suite skips.
command -v node >/dev/null 2>&1 || opt="$opt nodejs"
# building and checking the Debian packages (tests/install/test_package.sh)
command -v dh >/dev/null 2>&1 || opt="$opt debhelper"
command -v dh_python3 >/dev/null 2>&1 || opt="$opt dh-python"
command -v lintian >/dev/null 2>&1 || opt="$opt lintian"
# The web frameworks of tests/examples/test_python_web.sh (the Python
# binding's WSGI/ASGI/Flask/Django glue), which skips one it cannot import
/usr/bin/python3 -c 'import flask' 2>/dev/null || opt="$opt python3-flask"
/usr/bin/python3 -c 'import django' 2>/dev/null || opt="$opt python3-django"
/usr/bin/python3 -c 'import starlette, httpx, uvicorn' 2>/dev/null ||
    opt="$opt python3-starlette python3-httpx python3-uvicorn"
# mypy: the type check of the Python binding in the same suite
/usr/bin/python3 -m mypy --version >/dev/null 2>&1 || opt="$opt mypy"
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
# clang and its runtime (libFuzzer, sanitizers) for the fuzzing suites
command -v clang >/dev/null 2>&1 || pkgs="$pkgs clang libclang-rt-dev"
[ -d /usr/share/zoneinfo/Europe ] || pkgs="$pkgs tzdata"
command -v groff >/dev/null 2>&1 || pkgs="$pkgs groff-base"
command -v python3 >/dev/null 2>&1 || pkgs="$pkgs python3"
python3 -c 'import ensurepip' 2>/dev/null || pkgs="$pkgs python3-venv"
command -v curl >/dev/null 2>&1 || pkgs="$pkgs curl"
[ -z "$pkgs$opt" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || { echo "deps: apt-get update failed" >&2; exit 1; }
    if [ -n "$pkgs" ]; then
        echo "installing build dependencies:$pkgs"
        apt-get install -y -qq $pkgs >/dev/null || {
            echo "deps: apt-get install failed for:$pkgs" >&2; exit 1; }
    fi
    if [ -n "$opt" ]; then
        echo "installing what some tests need:$opt"
        apt-get install -y -qq $opt >/dev/null ||
            echo "deps: apt-get install$opt failed: the tests that need them will be skipped" >&2
    fi
    exit 0
fi
if [ -n "$pkgs" ]; then
    echo "missing build dependencies; install them with:" >&2
    echo "  sudo apt-get install$pkgs" >&2
    [ -z "$opt" ] || echo "and, for the tests that skip without them:  sudo apt-get install$opt" >&2
    exit 1
fi
echo "the tests that need them skip without:$opt (sudo apt-get install$opt)"
exit 0
