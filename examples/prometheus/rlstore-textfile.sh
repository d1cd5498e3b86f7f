#!/bin/sh
# rlstore-textfile.sh - export the check counters of an rlstore database for
# Prometheus, through node_exporter's textfile collector.
#
#   rlstore-textfile.sh [-d DATABASE] [-o DIRECTORY] [-n NAME] [-i SECONDS]
#
# Writes `rlctl stats --prometheus` to DIRECTORY/NAME (default
# /var/lib/node_exporter/textfile_collector/rlstore.prom) atomically: into a
# temporary file in the same directory, renamed over the old one, so the
# collector never reads half a file.  On failure the previous file stays
# (node_exporter's node_textfile_mtime_seconds shows its age) and the exit
# status is 1.  With -i the export repeats every SECONDS until SIGTERM
# (for a service); without, it runs once (for cron or a systemd timer).
#
# DATABASE defaults to $RLSTORE_DB.  RLCTL names the rlctl binary (default:
# rlctl from PATH).  Run it as the application's user (or a member of its
# group): SQLite in WAL mode writes the database's -shm file even to read.
set -u

db=${RLSTORE_DB:-}
dir=/var/lib/node_exporter/textfile_collector
name=rlstore.prom
interval=
rlctl=${RLCTL:-rlctl}

usage() {
    echo "usage: rlstore-textfile.sh [-d DATABASE] [-o DIRECTORY] [-n NAME] [-i SECONDS]" >&2
    exit 2
}
while getopts d:o:n:i:h opt; do
    case $opt in
    d) db=$OPTARG ;;
    o) dir=$OPTARG ;;
    n) name=$OPTARG ;;
    i) interval=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# = 0 ] || usage
[ -n "$db" ] || { echo "rlstore-textfile.sh: no database: use -d or set RLSTORE_DB" >&2; exit 2; }
case $name in */* | .* | "") echo "rlstore-textfile.sh: -n takes a plain file name" >&2; exit 2 ;; esac
case $interval in "" | *[!0-9]* | 0) [ -z "$interval" ] || usage ;; esac

tmp=
sleeper=
trap '[ -n "$tmp" ] && rm -f "$tmp"' EXIT
trap '[ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null; exit 0' TERM INT

# One export; 0 on success.
export_once() {
    # The collector reads only files ending in .prom, so the temporary file
    # is invisible to it until the rename.
    tmp=$(mktemp "$dir/.$name.XXXXXX") || return 1
    if err=$("$rlctl" --db "$db" stats --prometheus 2>&1 >"$tmp") &&
        chmod 0644 "$tmp" && mv -f "$tmp" "$dir/$name"; then
        tmp=
        return 0
    fi
    echo "rlstore-textfile.sh: ${err:-cannot write $dir/$name}" >&2
    rm -f "$tmp"
    tmp=
    return 1
}

if [ -z "$interval" ]; then
    export_once
    exit
fi
while :; do
    export_once
    sleep "$interval" &
    sleeper=$!
    wait "$sleeper"
    sleeper=
done
