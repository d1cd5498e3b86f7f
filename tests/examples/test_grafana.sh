#!/bin/sh
# tests/examples/test_grafana.sh - examples/grafana: the dashboard is valid
# JSON of unique panels on the grid, and every rlstore series it queries is
# one that `rlctl metrics` writes for a real database (so a renamed metric
# cannot leave the dashboard empty).
. "$(dirname "$0")/../install/suite.sh"

DASH=$ROOT/examples/grafana/rlstore-dashboard.json
RLCTL=$BUILD_ABS/rlctl
[ -x "$RLCTL" ] || { fail "$RLCTL is not built (run make)"; finish; }
db=$TMP/limits.db
"$RLCTL" --db "$db" init examples/demo.yaml >/dev/null 2>&1 || fail "rlctl init failed"
for i in 1 2 3; do "$RLCTL" --db "$db" --quiet check signup 203.0.113.7; done
"$RLCTL" --db "$db" metrics >"$TMP/metrics.prom" 2>"$TMP/err" && pass ||
    fail "rlctl metrics failed: $(cat "$TMP/err")"
check "the dashboard queries only series rlctl metrics writes" python3 - "$DASH" "$TMP/metrics.prom" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
types = {l.split()[2] for l in open(sys.argv[2]) if l.startswith("# TYPE ")}
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)) and len(ids) >= 8, ids
for p in d["panels"]:
    g = p["gridPos"]
    assert g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
    assert p["targets"], p["title"]
    for t in p["targets"]:
        for m in re.findall(r"\b(rlstore_[a-z_]+)", t["expr"]):
            base = re.sub(r"_(bucket|sum|count)$", "", m) if m.startswith("rlstore_check_duration") else m
            assert base in types, "%s: %s is not written by rlctl metrics" % (p["title"], m)
assert d["templating"]["list"][0]["name"] == "action"
PY
finish
