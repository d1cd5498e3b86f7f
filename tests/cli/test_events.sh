#!/usr/bin/env bash
# Issue #20 through rlctl, on both backends: penalty events (rlctl events,
# filters, typed JSON, prune), --syslog lines of check and of hold (a real
# datagram socket standing in for /dev/log), metrics checked against the
# counts of real checks and replaced atomically under a reader, audit
# prune, --reason, the bulk unblock and reset, and migrate.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
cat >rules.yaml <<'EOF'
version: 1
tiers: { free: {}, pro: {} }
defaults: { tier: free }
actions:
  login:
    limits:
      - { name: per_min, algorithm: fixed_window, limit: 2, window: 1m, block_for: [1m, 10m] }
      - { name: soft, algorithm: fixed_window, limit: 1, window: 1m, mode: shadow }
  api:
    limits: [ { name: rate, algorithm: fixed_window, limit: 5, window: 1m } ]
  probe:
    limits: [ { name: burst, algorithm: gcra, limit: 2, window: 1h, burst: 2, block_for: 1h } ]
EOF
rl --db db init rules.yaml

# ---- events ----
for i in 1 2 3; do rl --db db check login ann --now "$T0"; done
tcase "events lists the penalty" 0 \
    --out-has "$(printf '2026-11-21T10:00:00.000Z\tblock\tlogin\tann\tper_min\t0\t2026-11-21T10:01:00.000Z')" \
    -- --db db events
for i in 1 2 3; do rl --db db check login ann --now 2026-11-21T10:02:00Z; done
tcase "events json: escalation after the recorded end, typed" 0 \
    --json 'assert [e["event"] for e in d] == ["escalate", "expire", "block"], d' \
    --json 'assert all(type(e["id"]) is int and type(e["level"]) is int and type(e["time_ms"]) is int and e["time_at"].endswith("Z") for e in d)' \
    --json 'assert d[0]["level"] == 1 and d[0]["until_at"] == "2026-11-21T10:12:00.000Z" and d[0]["until_ms"] == d[0]["time_ms"] + 600000' \
    --json 'assert d[1]["time_at"] == "2026-11-21T10:01:00.000Z" and d[2]["key"] == "ann" and d[2]["rule"] == "per_min"' \
    -- --db db events --json
tcase "events --key of another key" 0 --json 'assert d == []' -- --db db events --key bob --json
tcase "events --action" 0 --json 'assert len(d) == 3' -- --db db events --action login --json
tcase "events --event expire" 0 --json 'assert [e["event"] for e in d] == ["expire"]' \
    -- --db db events --event expire --json
tcase "events --since TIME" 0 --json 'assert [e["event"] for e in d] == ["escalate"]' \
    -- --db db events --since 2026-11-21T10:01:30Z --json
tcase "events --since DUR" 0 --json 'assert len(d) == 2' -- --db db events --since 90s --json \
    --now 2026-11-21T10:02:30Z
tcase "events --limit" 0 --json 'assert len(d) == 1' -- --db db events --limit 1 --json
tcase "events bad --event" 2 --err-has "expected block, escalate or expire" -- --db db events --event ban
tcase "events bad --since" 2 --err-has "invalid value for --since" -- --db db events --since yesterday
tcase "events prune needs --older-than" 2 --err-has "needs --older-than" -- --db db events prune
tcase "events prune" 0 --out-has "deleted 2 event(s) older than 2026-11-21T10:01:30.000Z" \
    -- --db db events prune --older-than 90s --now 2026-11-21T10:03:00Z
tcase "events after prune" 0 --json 'assert [e["event"] for e in d] == ["escalate"]' -- --db db events --json
tcase "events prune audited" 0 --json 'assert d[0]["op"] == "events.prune" and d[0]["after"].startswith("2 event")' \
    -- --db db audit --limit 1 --json

# ---- --syslog: one datagram per ban, to the socket named by RLSTORE_SYSLOG ----
# listen SOCK N OUT: receives N datagrams into OUT (20 s at most), in the
# background; returns once the socket exists.
listen() {
    rm -f "$1" "$3"
    python3 - "$1" "$2" "$3" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
got = []
try:
    while len(got) < int(sys.argv[2]):
        got.append(s.recv(4096).decode())
except socket.timeout:
    pass
open(sys.argv[3], "w").write("".join(g + "\n" for g in got))
PY
    LISTENER=$!
    for _ in $(seq 200); do [ -S "$1" ] && return 0; python3 -c 'import time; time.sleep(0.05)'; done
    return 1
}
if skipping; then :; else
    listen "$W/log.sock" 1 "$W/log.txt" || report "syslog listener" "socket never appeared"
    for i in 1 2 3; do
        RLSTORE_SYSLOG=$W/log.sock rl --db db check login eve --syslog --now 2026-11-21T11:00:00Z
    done
    wait "$LISTENER"
    report "check --syslog: one fail2ban-like line per ban" $(python3 - "$W/log.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
want = r"<28>[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d rlstore\[\d+\]: BAN key=eve action=login until=2026-11-21T11:01:00.000Z level=0 rule=per_min"
if len(lines) != 1 or not re.fullmatch(want, lines[0]):
    print(" got %r" % lines)
PY
)
    # hold --syslog logs the events of every process
    listen "$W/hold.sock" 1 "$W/hold.txt" || report "syslog listener" "socket never appeared"
    db_of db
    RLSTORE_SYSLOG=$W/hold.sock "$RLCTL" --db "$REPLY" hold --syslog --for 60s >"$W/hold.out" 2>&1 &
    HOLD=$!
    for _ in $(seq 400); do grep -q holding "$W/hold.out" && break; python3 -c 'import time; time.sleep(0.05)'; done
    for i in 1 2 3; do rl --db db check probe p1; done
    wait "$LISTENER"
    kill "$HOLD" 2>/dev/null
    wait "$HOLD"
    report "hold --syslog logs another process's ban" $(python3 - "$W/hold.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
if len(lines) != 1 or not re.search(r"rlstore\[\d+\]: BAN key=p1 action=probe until=\S+Z level=0 rule=burst$", lines[0]):
    print(" got %r" % lines)
PY
)
fi

# ---- metrics: the counts of real checks ----
rl --db m.db init rules.yaml
for i in 1 2 3 4 5 6 7; do rl --db m.db check api k1 --now "$T0"; done          # 5 ok, 2 limit
for i in 1 2 3 4 5; do rl --db m.db check login u1 --now "$T0"; done             # ok, shadow, limit+penalty, blocked x2
rl --db m.db check api k2 --peek --now "$T0"                                       # not counted
rl --db m.db block u9 --action login --now "$T0"
tcase "metrics" 0 --out-has "# TYPE rlstore_check_duration_seconds histogram" -- --db m.db metrics --now "$T0"
tassert "metrics agree with the checks made" python3 - "$OUT" <<'PY'
import re, sys
series = {}
types = {}
for line in open(sys.argv[1]).read().splitlines():
    if line.startswith("# TYPE "):
        _, _, name, t = line.split()
        types[name] = t
        continue
    if line.startswith("#"):
        continue
    m = re.fullmatch(r'([a-z_]+)(\{(.*)\})? (-?[0-9.e+-]+)', line)
    assert m, line
    labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', m.group(3) or "")))
    series[(m.group(1), labels)] = float(m.group(4))
def v(name, **kw):
    return series.get((name, tuple(sorted(kw.items()))))
assert v("rlstore_checks_total", action="api", result="allowed") == 5
assert v("rlstore_checks_total", action="api", result="denied") == 2
assert v("rlstore_checks_total", action="login", result="allowed") == 2
assert v("rlstore_checks_total", action="login", result="denied") == 3
assert v("rlstore_check_reasons_total", action="api", reason="ok") == 5
assert v("rlstore_check_reasons_total", action="api", reason="limit") == 2
assert v("rlstore_check_reasons_total", action="login", reason="shadow") == 1
assert v("rlstore_check_reasons_total", action="login", reason="blocked") == 2
assert v("rlstore_denials_total", action="api", rule="rate") == 2
assert v("rlstore_denials_total", action="login", rule="per_min") == 1
assert v("rlstore_shadow_denials_total", action="login", rule="soft") == 2
assert v("rlstore_penalties_total", action="login") == 1
assert v("rlstore_blocks_active", action="login", kind="penalty") == 1
assert v("rlstore_blocks_active", action="login", kind="manual") == 1
assert v("rlstore_keys_tracked", action="api") == 1
assert v("rlstore_rules_version") == 1
for a, n in (("api", 7), ("login", 5)):
    assert v("rlstore_check_duration_seconds_count", action=a) == n
    assert v("rlstore_check_duration_seconds_bucket", action=a, le="+Inf") == n
    b = sorted((float(dict(l)["le"]), c) for (name, l), c in series.items()
               if name == "rlstore_check_duration_seconds_bucket" and dict(l)["action"] == a and dict(l)["le"] != "+Inf")
    assert [c for _, c in b] == sorted(c for _, c in b), b   # cumulative
    assert v("rlstore_check_duration_seconds_sum", action=a) > 0
for (name, _), _ in series.items():
    base = re.sub(r"_(bucket|sum|count)$", "", name) if name.startswith("rlstore_check_duration") else name
    assert base in types, name
assert types["rlstore_blocks_active"] == "gauge" and types["rlstore_checks_total"] == "counter"
PY
tcase "metrics --json refused" 2 --err-has "--json does not apply" -- --db m.db metrics --json

# --output: replaced whole by a rename (a new inode each time), never seen
# partial by a reader looping on it, no temporary file left
mkdir -p prom
rl --db m.db metrics --output prom/rlstore.prom
tassert "metrics --output writes the file" test -s prom/rlstore.prom
tassert "metrics --output: mode 0644" test "$(stat -c %a prom/rlstore.prom)" = 644
if skipping; then :; else
    python3 - prom/rlstore.prom "$W/done" >"$W/reader.txt" 2>&1 <<'PY' &
import os, sys
path, done = sys.argv[1], sys.argv[2]
reads = 0
while not os.path.exists(done):
    try:
        text = open(path).read()
    except FileNotFoundError:
        print("file missing"); sys.exit(1)
    lines = text.split("\n")
    if not (text.endswith("\n") and lines[0].startswith("# HELP rlstore_checks_total")
            and lines[-2].startswith("rlstore_check_duration_seconds_count")):
        print("partial read: %r" % text[-80:]); sys.exit(1)
    reads += 1
print("reads", reads)
PY
    READER=$!
    inodes=
    for i in $(seq 30); do
        rl --db m.db metrics --output prom/rlstore.prom || break
        inodes="$inodes $(stat -c %i prom/rlstore.prom)"
    done
    touch "$W/done"
    wait "$READER"
    rrc=$?
    report "a reader looping on the file never sees a partial one" \
        $([ $rrc = 0 ] && grep -q '^reads [1-9]' "$W/reader.txt" || echo " $(cat "$W/reader.txt")")
    report "each write is a new file renamed over the old one" \
        $([ "$(echo $inodes | tr ' ' '\n' | sort -u | wc -l)" -ge 2 ] || echo " inodes:$inodes")
fi
tassert "no temporary file left" test "$(ls -A prom)" = rlstore.prom
tcase "metrics --output into a missing folder" 5 --err-has "cannot create a temporary file" \
    -- --db m.db metrics --output nowhere/x.prom
tassert "nothing written there" test ! -e nowhere

# ---- audit prune, --reason, bulk changes ----
rl --db b.db init rules.yaml
rl --db b.db block k1 --now "$T0"
rl --db b.db block k2 --action api --now "$T0"
for i in 1 2 3; do rl --db b.db check login k3 --now "$T0"; done
tcase "unblock needs KEY or --all" 2 --err-has "needs KEY (or --all)" -- --db b.db unblock
tcase "unblock --all takes no KEY" 2 --err-has "takes no KEY" -- --db b.db unblock k1 --all
tcase "unblock --all --action" 0 --out "removed 1 active block(s) of 'api'" \
    -- --db b.db unblock --all --action api --now "$T0"
tcase "unblock --all" 0 --json 'assert d == {"unblocked": 2, "action": None}' \
    -- --db b.db unblock --all --reason "incident 42" --json --now "$T0"
tcase "blocks after unblock --all" 0 --json 'assert d == []' -- --db b.db blocks --json --now "$T0"
tcase "one audit row with its count and reason" 0 \
    --json 'assert d[0]["op"] == "unblock.all" and d[0]["after"] == "2 active block(s) removed" and d[0]["reason"] == "incident 42", d[0]' \
    -- --db b.db audit --limit 1 --json
for k in a b c; do rl --db b.db check api "$k" --now "$T0"; done
tcase "reset needs ACTION KEY or --action" 2 --err-has "needs ACTION KEY" -- --db b.db reset api
tcase "reset --action" 0 --out "reset the counters of 3 key(s) of 'api'" \
    -- --db b.db reset --action api --reason cleanup --now "$T0"
tcase "reset --action audited once" 0 \
    --json 'assert d[0]["op"] == "reset.action" and d[0]["reason"] == "cleanup" and d[0]["action"] == "api"' \
    -- --db b.db audit --limit 1 --json
tcase "reset --action of an unknown action" 3 -- --db b.db reset --action nope
tcase "usage after reset --action" 0 --json 'assert [r for r in d if r["action"] == "api"] == []' \
    -- --db b.db usage --json --now "$T0"
tcase "tier set --reason" 0 -- --db b.db tier set user:1 pro --reason "paid plan" --now "$T0"
tcase "the reason is audited" 0 --json 'assert d[0]["op"].startswith("tier") and d[0]["reason"] == "paid plan", d[0]' \
    -- --db b.db audit --limit 1 --json
tcase "override set --reason" 0 -- --db b.db override set api k9 rate 50 --reason "load test"
tcase "override reason audited" 0 --json 'assert d[0]["reason"] == "load test"' -- --db b.db audit --limit 1 --json
tcase "audit takes only prune" 2 --err-has "takes only 'prune'" -- --db b.db audit purge
tcase "--older-than is for audit prune" 2 --err-has "are for 'audit prune'" -- --db b.db audit --older-than 1d
tcase "audit prune needs --older-than" 2 --err-has "needs --older-than" -- --db b.db audit prune
tcase "audit prune" 0 --out-has "audit row(s) older than" \
    -- --db b.db audit prune --older-than 1d --reason retention --now 2026-12-31T00:00:00Z
tcase "audit prune leaves only its own row" 0 \
    --json 'assert len(d) == 1 and d[0]["op"] == "audit.prune" and d[0]["reason"] == "retention" and " audit row(s) before " in d[0]["after"], d' \
    -- --db b.db audit --json
tcase "audit still lists with --limit" 0 -- --db b.db audit --limit 5

# ---- migrate ----
tcase "migrate: up to date" 0 --out-has "the version this library needs: nothing to do" -- --db db migrate
tcase "migrate --dry-run: up to date" 0 --json 'assert d["from"] == d["to"] and d["upgrade_needed"] is False and d["dry_run"] is True' \
    -- --db db migrate --dry-run --json
tcase "migrate of a missing database" 3 -- --db nothere.db migrate
sqlite_only "makes an older schema with SQLite's own tools"
rl --db old.db init rules.yaml
rl --db old.db check api k --now "$T0"
older() {
    python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript(sys.argv[2])
c.close()' "$W/old.db" "$1"
}
user_version() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA user_version").fetchone()[0])' "$W/old.db"; }
skipping || older "DROP TABLE rls_events; DROP TABLE rls_counters; PRAGMA user_version = 4;"
tcase "rlctl does not upgrade implicitly" 5 --err-has "schema version 4" --err-has "rlctl migrate" \
    -- --db old.db blocks
tcase "migrate --dry-run says what it would do" 0 --out-has "has schema version 4; this library needs 5" \
    --out-has "migrations 5 to 5 in one transaction" -- --db old.db migrate --dry-run
tassert "a dry run changes nothing" test "$(user_version)" = 4
tcase "migrate" 0 --json 'assert d["from"] == 4 and d["to"] == 5 and d["upgraded"] is True and d["dry_run"] is False' \
    -- --db old.db migrate --json
tassert "upgraded" test "$(user_version)" = 5
tcase "counters kept across the upgrade" 0 --json 'assert d["remaining"] == 3' \
    -- --db old.db check api k --json --now "$T0"
# a split deployment: both files older, one migrate upgrades both
rl --db r.db --counters c.db init rules.yaml
for i in 1 2 3; do rl --db r.db --counters c.db check login sam --now "$T0"; done
tcase "split: the penalty's event is in the counters file" 0 --json 'assert [e["event"] for e in d] == ["block"]' \
    -- --db r.db --counters c.db events --json
tcase "split: unblock --all removes the penalty (counters file) too" 0 --json 'assert d["unblocked"] == 1' \
    -- --db r.db --counters c.db unblock --all --json --now "$T0"
tcase "split: no block left" 0 --json 'assert d == []' -- --db r.db --counters c.db blocks --json --now "$T0"
tcase "split: reset --action" 0 --json 'assert d["reset_keys"] == 1' \
    -- --db r.db --counters c.db reset --action login --json --now "$T0"
if ! skipping; then
    for f in r.db c.db; do
        python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("DROP TABLE rls_events; DROP TABLE rls_counters; PRAGMA user_version = 4;")
c.close()' "$W/$f"
    done
fi
tcase "split: older files refused by name" 5 --err-has "schema version 4" -- --db r.db --counters c.db blocks
tcase "split: migrate upgrades both files" 0 --json 'assert d["from"] == 4 and d["upgraded"] is True' \
    -- --db r.db --counters c.db migrate --json
tcase "split: usable again" 0 --json 'assert d == []' -- --db r.db --counters c.db events --json
skipping || older "PRAGMA user_version = 99;"
tcase "a newer schema names the version it needs" 5 --err-has "schema version 99" \
    -- --db old.db migrate
end_sqlite_only

finish
