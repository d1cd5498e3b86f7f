#!/bin/sh
# tests/install/test_units.sh - the systemd units of dist/systemd that the
# Debian package rlstore-tools installs (rlstore-hold.service,
# rlstore-metrics.service and .timer; not rlstore-auth.service, whose own
# suite checks it).
#
#   1. systemd-analyze verify finds nothing wrong in them (but that
#      /usr/bin/rlctl is not installed on this machine);
#   2. each service runs rlctl as the user rlstore with the databases from
#      its Environment= lines, overridable in /etc/default/rlstore, and the
#      timer starts the metrics service;
#   3. their ExecStart lines work as written, with build/rlctl for
#      /usr/bin/rlctl and a scratch split deployment for the databases:
#      `rlctl hold` holds until SIGTERM (systemctl stop) and exits 0;
#      `rlctl metrics --output FILE` writes FILE whole (skipped, saying so,
#      while this rlctl has no metrics command).
. "$(dirname "$0")/suite.sh"

D=dist/systemd
HOLD=$D/rlstore-hold.service
MSVC=$D/rlstore-metrics.service
MTIM=$D/rlstore-metrics.timer
RLCTL=$BUILD_ABS/rlctl
for f in "$HOLD" "$MSVC" "$MTIM"; do
    [ -f "$f" ] || setup_fail "$f missing"
done

# ---- 1. systemd-analyze verify ------------------------------------------------------
if command -v systemd-analyze >/dev/null 2>&1; then
    for u in "$HOLD" "$MSVC" "$MTIM"; do
        systemd-analyze verify --man=no "$ROOT/$u" >"$TMP/verify.log" 2>&1
        grep -v 'Command /usr/bin/rlctl is not executable' "$TMP/verify.log" >"$TMP/verify.bad"
        [ -s "$TMP/verify.bad" ] && fail_lines "systemd-analyze verify $u" "$TMP/verify.bad" || pass
    done
else
    skip "systemd-analyze verify" "systemd-analyze is not installed"
fi

# ---- 2. what they say ---------------------------------------------------------------
# key UNIT KEY: the values of KEY=, one per line
key() { sed -n "s/^$2=//p" "$1"; }
for u in "$HOLD" "$MSVC"; do
    [ "$(key "$u" User)" = rlstore ] && [ "$(key "$u" EnvironmentFile)" = -/etc/default/rlstore ] &&
        key "$u" Environment | grep -qx 'RLSTORE_DB=/var/lib/rlstore/rules/rules.db' &&
        key "$u" Environment | grep -qx 'RLSTORE_COUNTERS=/var/lib/rlstore/counters/counters.db' &&
        pass || fail "$u: not User=rlstore with the databases of docs/SECURITY.md and /etc/default/rlstore"
    # the overrides come after the defaults (systemd: the file wins)
    awk '/^Environment=/ { e = NR } /^EnvironmentFile=/ { f = NR } END { exit !(e && f > e) }' "$u" &&
        pass || fail "$u: EnvironmentFile= must follow Environment= so that it overrides it"
done
[ "$(key "$HOLD" ExecStart)" = "/usr/bin/rlctl hold" ] && [ "$(key "$HOLD" Type)" = simple ] && pass ||
    fail "$HOLD: ExecStart '$(key "$HOLD" ExecStart)', Type '$(key "$HOLD" Type)'"
[ "$(key "$MSVC" ExecStart)" = '/usr/bin/rlctl metrics --output ${RLSTORE_METRICS_FILE}' ] &&
    [ "$(key "$MSVC" Type)" = oneshot ] && pass ||
    fail "$MSVC: ExecStart '$(key "$MSVC" ExecStart)', Type '$(key "$MSVC" Type)'"
key "$MTIM" OnUnitActiveSec | grep -q . && [ -z "$(key "$MTIM" Unit)" ] &&
    [ "$(key "$MTIM" WantedBy)" = timers.target ] && pass ||
    fail "$MTIM: no OnUnitActiveSec, another Unit= or not WantedBy=timers.target"

# ---- 3. the ExecStart lines, run ----------------------------------------------------
[ -x "$RLCTL" ] || { fail "$RLCTL is not built (run make)"; finish; }
# exec_of UNIT: its ExecStart with build/rlctl and ${VAR} from the environment
exec_of() { key "$1" ExecStart | sed "s|^/usr/bin/rlctl|$RLCTL|"; }
RLSTORE_DB=$TMP/rules.db
RLSTORE_COUNTERS=$TMP/counters.db
export RLSTORE_DB RLSTORE_COUNTERS
"$RLCTL" init examples/demo.yaml >"$TMP/init.log" 2>&1 || setup_fail "rlctl init of a split pair: $(head -n 1 "$TMP/init.log")"
: >"$TMP/hold.out"
# shellcheck disable=SC2046
$(exec_of "$HOLD") >"$TMP/hold.out" 2>&1 &
pid=$!
# wait for it to say it holds (or to end), then stop it as systemctl would
n=0
while ! grep -q holding "$TMP/hold.out" && kill -0 $pid 2>/dev/null && [ $n -lt 600 ]; do
    sleep 0.05
    n=$((n + 1))
done
if grep -q "holding '$TMP/rules.db' open" "$TMP/hold.out"; then
    kill -TERM $pid
    wait $pid
    st=$?
    [ $st = 0 ] && pass || fail "rlctl hold exited $st on SIGTERM"
else
    kill -KILL $pid 2>/dev/null
    fail "the ExecStart of $HOLD did not hold: $(head -c 300 "$TMP/hold.out")"
fi
if "$RLCTL" help metrics >/dev/null 2>&1; then
    RLSTORE_METRICS_FILE=$TMP/prom/rlstore.prom
    mkdir -p "$TMP/prom"
    cmd=$(exec_of "$MSVC" | sed "s|\${RLSTORE_METRICS_FILE}|$RLSTORE_METRICS_FILE|")
    # shellcheck disable=SC2086
    if $cmd >"$TMP/m.log" 2>&1 && grep -q '^# TYPE ' "$RLSTORE_METRICS_FILE" &&
        [ "$(ls "$TMP/prom")" = rlstore.prom ]; then
        pass
    else
        fail "the ExecStart of $MSVC: $(head -c 300 "$TMP/m.log")"
    fi
else
    skip "rlstore-metrics.service runs" "this rlctl has no metrics command yet"
fi
finish
