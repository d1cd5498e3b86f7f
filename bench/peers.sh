#!/bin/sh
# bench/peers.sh - installs the peers `make bench` compares rlstore with,
# so that a newcomer's first run measures them instead of skipping them
# (issue #19): redis-server (with redis-benchmark, its dependency
# redis-tools) for the redis group, and the PostgreSQL server (initdb,
# pg_ctl, pgbench) for the postgresql and pg groups.  Run by `make bench`
# only: plain `make` and `make test` never install a peer.
#
# As tests/deps.sh does: as root on Debian/Ubuntu, apt-get installs what is
# missing (the distribution's current package, never a pinned version);
# otherwise, or when apt-get fails, one line says what is missing and how
# to install it, and the run goes on: rlbench then reports those figures
# as MISSING (never faked, never silently left out).  Always exits 0:
# a missing peer is a missing figure, not a failed benchmark.
# RLBENCH_NO_INSTALL=1 only reports (for a machine that must not change).
pkgs=""
redis_ok() {
    command -v redis-server >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1
}
pg_ok() {
    command -v initdb >/dev/null 2>&1 && command -v pgbench >/dev/null 2>&1 && return 0
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && [ -x "$d/pgbench" ] && return 0
    done
    return 1
}
redis_ok || pkgs="redis-server"
pg_ok || pkgs="$pkgs postgresql"
pkgs=${pkgs# }
[ -z "$pkgs" ] && exit 0
if [ "${RLBENCH_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" = 0 ] &&
    command -v apt-get >/dev/null 2>&1; then
    echo "bench: installing the peers it compares with: $pkgs"
    export DEBIAN_FRONTEND=noninteractive
    # the package's default cluster is not needed (rlbench makes its own)
    case " $pkgs " in *" postgresql "*)
        mkdir -p /etc/postgresql-common/createcluster.d 2>/dev/null &&
            echo "create_main_cluster = false" \
                >/etc/postgresql-common/createcluster.d/rlstore-bench.conf 2>/dev/null ;;
    esac
    if { apt-get install -y -qq $pkgs >/dev/null 2>&1 ||
         { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $pkgs >/dev/null 2>&1; }; }
    then
        # a service the package may have started is not ours to keep running
        if command -v systemctl >/dev/null 2>&1; then
            systemctl disable --now redis-server >/dev/null 2>&1 || true
        fi
        exit 0
    fi
    echo "bench: apt-get install $pkgs failed: their figures will be reported MISSING" >&2
    exit 0
fi
echo "bench: not installed: $pkgs (their figures will be reported MISSING); install with: sudo apt-get install $pkgs" >&2
exit 0
