#!/bin/sh
# tests/examples/test_prometheus.sh - examples/prometheus: the textfile
# exporter script against a real database, its sample file, its failure
# behaviour and its service mode.
. "$(dirname "$0")/../install/suite.sh"

SCRIPT=$ROOT/examples/prometheus/rlstore-textfile.sh
SAMPLE=$ROOT/examples/prometheus/rlstore.prom.sample
RLCTL=$BUILD_ABS/rlctl
export RLCTL
[ -x "$RLCTL" ] || { fail "$RLCTL is not built (run make)"; finish; }
sh -n "$SCRIPT" && pass || fail "$SCRIPT: syntax error"

# valid_prom FILE: the text exposition format, as far as this metric goes.
valid_prom() {
    python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
assert lines[-1] == "", "no final newline"
metric = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\})? -?[0-9]+(\.[0-9]+)?$')
seen_type = set()
for n, l in enumerate(lines[:-1], 1):
    if l.startswith("# HELP ") or l.startswith("# TYPE "):
        if l.startswith("# TYPE "):
            seen_type.add(l.split()[2])
        continue
    assert metric.match(l), "line %d: %r" % (n, l)
    assert l.split("{")[0] in seen_type, "line %d: no TYPE before %r" % (n, l)
PY
}

db=$TMP/limits.db
out=$TMP/collector
mkdir -p "$out"
"$RLCTL" --db "$db" init examples/demo.yaml >/dev/null 2>&1 || fail "rlctl init failed"
for i in 1 2 3; do "$RLCTL" --db "$db" --quiet check signup 203.0.113.7; done
for i in 1 2 3 4 5 6 7; do "$RLCTL" --db "$db" --quiet check login 'user:ann'; done

if sh "$SCRIPT" -d "$db" -o "$out" 2>"$TMP/err"; then
    pass
else
    fail "rlstore-textfile.sh failed: $(cat "$TMP/err")"
fi
f=$out/rlstore.prom
[ -f "$f" ] && pass || { fail "$f was not written"; finish; }
check "the exported file is valid exposition format" valid_prom "$f"
grep -qx 'rlstore_checks_total{action="signup",result="allowed"} 3' "$f" &&
    grep -qx 'rlstore_checks_total{action="login",result="allowed"} 5' "$f" &&
    grep -qx 'rlstore_checks_total{action="login",result="denied"} 2' "$f" && pass ||
    fail "exported counters differ from the checks made: $(tr '\n' '|' <"$f")"
"$RLCTL" --db "$db" stats --prometheus >"$TMP/direct" 2>&1
cmp -s "$f" "$TMP/direct" && pass || fail "the file differs from rlctl stats --prometheus"
[ "$(stat -c %a "$f")" = 644 ] && pass || fail "mode of the exported file is $(stat -c %a "$f"), expected 644"
[ -z "$(ls -A "$out" | grep -v '^rlstore.prom$')" ] && pass ||
    fail "temporary files left in the collector directory: $(ls -A "$out" | tr '\n' ' ')"

# The sample shows what the real output looks like.
check "the sample is valid exposition format" valid_prom "$SAMPLE"
[ "$(grep '^#' "$SAMPLE")" = "$(grep '^#' "$f")" ] && pass ||
    fail "the HELP/TYPE lines of $SAMPLE differ from rlctl's"
# every series of the real export (actions of demo.yaml) is in the sample
sed -n 's/} [0-9]*$/}/p' "$f" | sort >"$TMP/series.real"
sed -n 's/} [0-9]*$/}/p' "$SAMPLE" | sort >"$TMP/series.sample"
missing=$(comm -23 "$TMP/series.real" "$TMP/series.sample" | tr '\n' ' ')
[ -z "$missing" ] && pass || fail "series missing from $SAMPLE: $missing"

# A failing export keeps the previous file and exits 1.
cp "$f" "$TMP/before"
if sh "$SCRIPT" -d "$TMP/missing.db" -o "$out" 2>"$TMP/err"; then
    fail "an export from a missing database succeeded"
else
    grep -q 'no such database' "$TMP/err" && cmp -s "$f" "$TMP/before" &&
        [ -z "$(ls -A "$out" | grep -v '^rlstore.prom$')" ] && pass ||
        fail "a failed export: '$(cat "$TMP/err")', file kept: $(cmp -s "$f" "$TMP/before" && echo yes || echo no)"
fi
sh "$SCRIPT" -d "$db" -o "$out" -n ../x.prom >/dev/null 2>&1
[ $? = 2 ] && pass || fail "-n with a path should be a usage error"
RLSTORE_DB= sh "$SCRIPT" -o "$out" >/dev/null 2>&1
[ $? = 2 ] && pass || fail "no database should be a usage error"
RLSTORE_DB=$db sh "$SCRIPT" -o "$out" -n env.prom 2>/dev/null && [ -f "$out/env.prom" ] && pass ||
    fail "RLSTORE_DB is not used as the default database"

# Service mode: exports every interval, stops on SIGTERM with status 0.
rm -f "$out"/*.prom
sh "$SCRIPT" -d "$db" -o "$out" -i 1 2>"$TMP/err" &
pid=$!
on_exit() { kill "$pid" 2>/dev/null; }
# Every wait below ends at its event; its bound (120 s) only stops a hang.
for i in $(seq 1 2400); do [ -f "$out/rlstore.prom" ] && break; sleep 0.05; done
"$RLCTL" --db "$db" --quiet check signup 203.0.113.8
for i in $(seq 1 2400); do
    grep -qx 'rlstore_checks_total{action="signup",result="allowed"} 4' "$out/rlstore.prom" 2>/dev/null && break
    sleep 0.05
done
grep -qx 'rlstore_checks_total{action="signup",result="allowed"} 4' "$out/rlstore.prom" 2>/dev/null && pass ||
    fail "-i 1: the file is not refreshed: $(tr '\n' '|' <"$out/rlstore.prom" 2>/dev/null)"
kill -TERM "$pid"
for i in $(seq 1 2400); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$pid" 2>/dev/null; then
    fail "-i 1: still running 120 s after SIGTERM"
else
    wait "$pid" && pass || fail "-i 1: exit status $? after SIGTERM"
fi
pid=

finish
