#!/bin/sh
# tests/bench/test_bench.sh - the benchmark harness itself, cheaply (a few
# seconds): `rlbench --smoke` runs every scenario with tiny op counts (the
# peers too when installed) and must write a JSON result file that parses,
# describes the machine, and names every scenario with its figures, every
# ratio with its target; bench/plot.py must turn it into a valid SVG.  A
# second run with --only/--no-peers must record the groups it did not run
# as skipped.  Timing targets are never asserted here: only that the
# harness measures and reports.  Needs python3 (the plot script's
# language); without it the suite fails.  Summary lines are cmocka's, for
# tests/run_suites.sh.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}
bin=$B/bench/rlbench
. tests/suite_lib.sh
tmp=$SCRATCH

if ! command -v python3 >/dev/null 2>&1; then
    bad "python3 is required to check the JSON and run bench/plot.py"
    finish
fi
if [ ! -x "$bin" ]; then
    bad "$bin is not built (make BUILD=$B $bin)"
    finish
fi

# 1. a smoke run of every scenario succeeds and prints the report
mkdir "$tmp/d"
if "$bin" --smoke --dir "$tmp/d" --json "$tmp/r.json" >"$tmp/out" 2>&1 &&
    grep -q '^Results' "$tmp/out" && grep -q '^targets: [0-9]* met' "$tmp/out"; then
    ok "rlbench --smoke runs and prints the report"
else
    bad "rlbench --smoke failed" "$tmp/out"
fi

# 2. it leaves no database behind in its directory
if [ -z "$(ls -A "$tmp/d")" ]; then
    ok "rlbench removes its databases"
else
    bad "files left in --dir: $(ls -A "$tmp/d" | tr '\n' ' ')"
fi

# 3-5. the JSON: machine, every scenario with consistent figures, ratios
cat >"$tmp/check.py" <<'EOF'
import json, sys
what, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
SCEN = ["floor", "fixed_window_10k", "two_limits", "batch_2", "algo_fixed_window", "algo_sliding_window",
        "algo_sliding_log", "algo_token_bucket", "algo_gcra", "algo_leaky_bucket",
        "denied_over_limit", "denied_blocked", "floor_fsync", "full_durability", "multi_1",
        "multi_2", "multi_4", "fill_big", "fixed_window_big", "rltop_during_load",
        "rss_per_handle", "size_per_state", "redis", "postgresql",
        "pg_floor_1", "pg_floor_n", "pg_check_1", "pg_check_1_cold", "pg_check_n",
        "pg_check_n_shared", "pg_sqlite_1", "pg_sqlite_n",
        "floor_inproc_hash", "floor_shm_hash", "floor_shm_hash_4", "shm_table", "shm_table_4"]
# ok, or skipped with the reason when the peer's programs are not installed
PEERS = {"redis", "postgresql", "pg_floor_1", "pg_floor_n", "pg_check_1", "pg_check_1_cold",
         "pg_check_n", "pg_check_n_shared", "pg_sqlite_1", "pg_sqlite_n"}
NOLAT = {"rss_per_handle": "mb_per_handle", "size_per_state": "bytes_per_state"}
err = []
by = {s["id"]: s for s in d["scenarios"]}
if what == "machine":
    m = d["machine"]
    for k in ("nproc", "cpu_model", "kernel", "sqlite", "compiler"):
        if not m.get(k):
            err.append("machine." + k + " missing")
    if d.get("mode") != "smoke":
        err.append("mode is %r" % d.get("mode"))
elif what == "scenarios":
    for i in SCEN:
        s = by.get(i)
        if not s:
            err.append(i + ": missing")
            continue
        if i in PEERS:
            if s["status"] not in ("ok", "skipped"):
                err.append("%s: status %s: %s" % (i, s["status"], s["note"]))
            if s["status"] == "skipped" and not s["note"]:
                err.append(i + ": skipped without a reason")
            if s["status"] != "ok":
                continue
        elif s["status"] != "ok":
            err.append("%s: status %s: %s" % (i, s["status"], s["note"]))
            continue
        if i in NOLAT:
            v = s["extra"].get(NOLAT[i])
            if not isinstance(v, (int, float)) or v <= 0:
                err.append("%s: no %s" % (i, NOLAT[i]))
            continue
        if not (s["ops"] > 0 and s["ops_per_s"] > 0):
            err.append(i + ": no operations")
        if not (0 < s["p50_us"] <= s["p99_us"] <= s["p999_us"] <= s["max_us"]):
            err.append(i + ": percentiles out of order")
    for i in ("multi_4", "floor_shm_hash_4", "shm_table_4"):
        m4 = by.get(i, {})
        if m4.get("status") == "ok" and len(m4.get("processes", [])) != 4:
            err.append(i + ": not 4 process entries")
    for i in ("floor_inproc_hash", "floor_shm_hash", "shm_table"):
        if by.get(i, {}).get("group") != "memory":
            err.append(i + ": not in the memory group")
        if not isinstance(by.get(i, {}).get("extra", {}).get("clock_read_ns"), (int, float)):
            err.append(i + ": no clock_read_ns")
    rt = by.get("rltop_during_load", {}).get("extra", {})
    for k in ("cpu_ms_per_refresh", "throughput_drop_pct"):
        if k not in rt:
            err.append("rltop_during_load: no " + k)
elif what == "ratios":
    if not d["ratios"]:
        err.append("no ratios")
    for r in d["ratios"]:
        if r["scenario"] not in by or (r["baseline"] and r["baseline"] not in by):
            err.append("ratio names an unknown scenario: %r" % r)
        if r["op"] in (">=", "<=") and r["value"] is not None and r["met"] is not True \
                and r["met"] is not False:
            err.append("target without a verdict: %r" % r)
        if r["op"] is not None and r["value"] is not None:
            want = r["value"] >= r["target"] if r["op"] == ">=" else r["value"] <= r["target"]
            if want != r["met"]:
                err.append("wrong verdict: %r" % r)
    need = [("fixed_window_10k", "floor"), ("fixed_window_10k", "redis"),
            ("denied_blocked", "fixed_window_10k"), ("full_durability", "floor_fsync"),
            ("multi_4", "multi_1"), ("fixed_window_10k", "floor_inproc_hash"),
            ("fixed_window_10k", "floor_shm_hash"), ("floor_shm_hash", "fixed_window_10k"),
            ("shm_table", "floor_shm_hash"), ("floor_shm_hash_4", "floor_shm_hash"),
            ("batch_2", "fixed_window_10k")]
    have = {(r["scenario"], r["baseline"]) for r in d["ratios"]}
    for n in need:
        if n not in have:
            err.append("no ratio %s vs %s" % n)
elif what == "skipped":
    for i in SCEN:
        s = by.get(i)
        want = "ok" if i in ("floor", "fixed_window_10k", "two_limits", "batch_2") \
            or i.startswith("algo_") \
            else "skipped"
        if not s or s["status"] != want:
            err.append("%s: %s, expected %s" % (i, s and s["status"], want))
    if "--no-peers" not in by["redis"]["note"]:
        err.append("redis note: %r" % by["redis"]["note"])
for e in err:
    print(e)
sys.exit(1 if err else 0)
EOF
for what in machine scenarios ratios; do
    if python3 "$tmp/check.py" "$what" "$tmp/r.json" >"$tmp/py" 2>&1; then
        ok "JSON: $what"
    else
        bad "JSON: $what" "$tmp/py"
    fi
done

# 6. the plot: an SVG that parses, with bars and every measured scenario
if python3 bench/plot.py "$tmp/r.json" "$tmp/r.svg" >"$tmp/py" 2>&1 &&
    python3 - "$tmp/r.svg" "$tmp/r.json" >>"$tmp/py" 2>&1 <<'EOF'
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
rects = list(root.iter("{http://www.w3.org/2000/svg}rect"))
d = json.load(open(sys.argv[2]))
measured = [s for s in d["scenarios"] if s.get("ops_per_s")]
assert len(rects) > 2 * len(measured), len(rects)
for s in measured:
    assert s["name"] in texts, s["name"]
EOF
then
    ok "plot.py writes a valid SVG"
else
    bad "plot.py" "$tmp/py"
fi

# 7. groups not run are recorded as skipped, with the reason
if "$bin" --smoke --only core --no-peers --dir "$tmp/d" --json "$tmp/s.json" >"$tmp/out" 2>&1 &&
    python3 "$tmp/check.py" skipped "$tmp/s.json" >"$tmp/py" 2>&1; then
    ok "--only and --no-peers record the rest as skipped"
else
    cat "$tmp/py" >>"$tmp/out"
    bad "--only core --no-peers" "$tmp/out"
fi

# 8. a peer that is not installed is reported skipped, never faked: with a
#    PATH that holds only rm, redis-server and redis-benchmark are missing
mkdir "$tmp/bin"
ln -s "$(command -v rm)" "$tmp/bin/rm"
if PATH="$tmp/bin" "$bin" --smoke --only redis --dir "$tmp/d" --json "$tmp/p.json" \
    >"$tmp/out" 2>&1 &&
    grep -q '^  redis .*skipped (not installed' "$tmp/out" &&
    grep -q '^MISSING: redis figures (not installed' "$tmp/out" &&
    python3 -c 'import json,sys; s=[x for x in json.load(open(sys.argv[1]))["scenarios"] if x["id"]=="redis"][0]; sys.exit(not (s["status"]=="skipped" and s["note"].startswith("not installed") and "ops" not in s))' \
        "$tmp/p.json" >>"$tmp/out" 2>&1; then
    ok "a missing peer is reported skipped (not installed)"
else
    bad "missing peer" "$tmp/out"
fi

# 8b. bench/peers.sh (run by `make bench`): a peer it may not install is
#    one line on stderr naming it and the install line, and exit 0
PATH="$tmp/bin" RLBENCH_NO_INSTALL=1 /bin/sh bench/peers.sh >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
    grep -q '^bench: not installed: redis-server.*apt-get install redis-server' "$tmp/err"; then
    ok "bench/peers.sh: a peer it cannot install is one line"
else
    cat "$tmp/err" >>"$tmp/out"
    bad "bench/peers.sh: exit $rc" "$tmp/out"
fi

# 9. without PostgreSQL's server programs the pg group is reported skipped
#    (not installed), scenario by scenario, and the run still succeeds
if RLBENCH_PG_BIN="$tmp/nonexistent" "$bin" --smoke --only pg --dir "$tmp/d" \
    --json "$tmp/g.json" >"$tmp/out" 2>&1 &&
    python3 -c 'import json,sys; s=[x for x in json.load(open(sys.argv[1]))["scenarios"] if x["id"].startswith("pg_")]; sys.exit(not (len(s)==8 and all(x["status"]=="skipped" and x["note"].startswith("not installed") for x in s)))' \
        "$tmp/g.json" >>"$tmp/out" 2>&1; then
    ok "PostgreSQL not installed: the pg group is reported skipped"
else
    bad "pg group without PostgreSQL" "$tmp/out"
fi

# 10. bad arguments are usage errors (exit 2)
"$bin" --only nosuch >"$tmp/out" 2>&1
rc1=$?
"$bin" --ops x >>"$tmp/out" 2>&1
rc2=$?
if [ "$rc1" = 2 ] && [ "$rc2" = 2 ]; then
    ok "usage errors exit 2"
else
    bad "usage errors: exit $rc1 and $rc2" "$tmp/out"
fi

finish
