#!/bin/sh
# tests/bench/test_compare.sh - `make bench-compare` (bench/compare.sh and
# bench/compare.py), cheaply: the verdicts on made-up result files whose
# answer is known (a scenario twice as slow is "slower beyond noise", one
# inside a wide spread is not, a failed run exits 1, ...), the usage errors
# (a BASE that is not a commit: one line, exit 2, no worktree left), and one
# real comparison of HEAD with this tree in --smoke mode, two rounds: both
# sides build and run, every scenario gets a verdict, the sizes (which do
# not depend on the machine's load) compare at about 1, and the temporary
# worktree is gone afterwards.  No timing figure is asserted: the machine
# is shared.  Summary lines are cmocka's, for tests/run_suites.sh.
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
B=$BUILD
tmp=$SCRATCH

if ! command -v python3 >/dev/null 2>&1; then
    setup_fail "python3 is required (bench/compare.py)"
fi

# ---- compare.py on made-up files -------------------------------------------
# mk.py SIDE ROUND FILE: one result file; each scenario's ops/s, p50 and p99
# per side and round, so that the verdicts below are known.
cat >"$tmp/mk.py" <<'EOF'
import json, sys
side, rnd, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
mode = sys.argv[4] if len(sys.argv) > 4 else "smoke"
# id: (base ops/s by round, after ops/s by round, base p99, after p99)
T = {
    "same": ([1000, 1010, 990], [1005, 995, 1000], [10, 10, 10], [10, 10, 10]),
    "slow": ([1000, 1010, 990], [500, 505, 495], [10, 10, 10], [10, 10, 10]),
    "noisy": ([1000, 1400, 700], [800, 1100, 600], [10, 10, 10], [10, 10, 10]),
    "tail": ([1000, 1010, 990], [1000, 1010, 990], [10, 10.2, 9.9], [30, 31, 29]),
    "fast": ([1000, 1010, 990], [2000, 2020, 1980], [10, 10, 10], [10, 10, 10]),
}
sc = []
for sid, (a, b, pa, pb) in T.items():
    ops = (a if side == "base" else b)[rnd - 1]
    p99 = (pa if side == "base" else pb)[rnd - 1]
    sc.append({"id": sid, "group": "core", "name": sid, "status": "ok", "note": "",
               "ops": 1000, "secs": 1000.0 / ops, "ops_per_s": ops, "p50_us": 5.0,
               "p99_us": p99, "p999_us": 50.0, "max_us": 60.0, "extra": {}})
size = 50.0 if side == "base" else 60.0
sc.append({"id": "size_per_state", "group": "big", "name": "size", "status": "ok", "note": "",
           "extra": {"bytes_per_state": size}})
sc.append({"id": "redis", "group": "redis", "name": "redis", "status": "skipped",
           "note": "peers disabled by --no-peers", "extra": {}})
sc.append({"id": "pg_check_1", "group": "pg", "name": "pg", "status": "skipped",
           "note": "not installed (pg_ctl)", "extra": {}})
if side == "after" and rnd == 2 and "--fail" in sys.argv:
    sc[0]["status"], sc[0]["note"] = "failed", "disk full"
json.dump({"format": 1, "mode": mode, "machine": {"cpu_model": "test", "nproc": 2},
           "config": {"ops": 1000}, "scenarios": sc, "ratios": []}, open(path, "w"))
EOF
for s in base after; do
    for r in 1 2 3; do
        python3 "$tmp/mk.py" $s $r "$tmp/$s-$r.json"
        python3 "$tmp/mk.py" $s $r "$tmp/f-$s-$r.json" smoke --fail
    done
done
python3 "$tmp/mk.py" after 1 "$tmp/quick.json" quick

# 1. the verdicts on the made-up files
python3 bench/compare.py "$tmp"/base-*.json -- "$tmp"/after-*.json >"$tmp/out" 2>&1
rc=$?
want="same:within noise
slow:slower beyond noise (ops/s)
noisy:within noise
tail:slower beyond noise (p99 us)
fast:faster beyond noise (ops/s)
size_per_state:larger beyond noise (B/state)
pg_check_1:skipped: not installed (pg_ctl)"
got=$(sed -n 's/^verdict \([^ ]*\) *\(.*\)$/\1:\2/p' "$tmp/out")
if [ "$rc" = 0 ] && [ "$got" = "$want" ] &&
    grep -q '^not run (group not selected, or a peer): redis$' "$tmp/out" &&
    grep -q '^7 scenarios: 2 slower beyond noise, 1 larger beyond noise, 1 faster beyond noise, 2 within noise, 1 skipped$' "$tmp/out"; then
    ok "compare.py: verdicts of known differences"
else
    printf 'exit %s; expected:\n%s\n' "$rc" "$want" >>"$tmp/out"
    bad "compare.py: verdicts" "$tmp/out"
fi

# 2. the table: medians, ratio and noise of each side, as computed by hand
#    (slow: base median 1000, after 500, ratio 0.500, noise 2.0% each)
if grep -Eq '^slow +ops/s +1000 +500 +0\.500 +2\.0% +2\.0% +worse beyond noise$' "$tmp/out" &&
    grep -Eq '^noisy +ops/s +1000 +800 +0\.800 +70\.0% +62\.5%$' "$tmp/out"; then
    ok "compare.py: medians, ratios and noise"
else
    bad "compare.py: table rows" "$tmp/out"
fi

# 3. a scenario that failed in one run: named, and exit 1
python3 bench/compare.py "$tmp"/f-base-*.json -- "$tmp"/f-after-*.json >"$tmp/out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q '^verdict same  *failed: after round 2: disk full$' "$tmp/out"; then
    ok "compare.py: a failed run is reported and exits 1"
else
    bad "compare.py: failed run (exit $rc)" "$tmp/out"
fi

# 4. files that cannot be compared: one round a side, or different modes
python3 bench/compare.py "$tmp/base-1.json" -- "$tmp/after-1.json" >"$tmp/out" 2>&1
rc1=$?
python3 bench/compare.py "$tmp/base-1.json" "$tmp/base-2.json" -- "$tmp/after-1.json" \
    "$tmp/quick.json" >>"$tmp/out" 2>&1
rc2=$?
if [ "$rc1" = 2 ] && [ "$rc2" = 2 ] && [ "$(wc -l <"$tmp/out")" = 2 ]; then
    ok "compare.py: one round or mixed modes are usage errors"
else
    bad "compare.py: usage errors (exit $rc1, $rc2)" "$tmp/out"
fi

# ---- compare.sh ---------------------------------------------------------------
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    skip "compare.sh: not a git checkout"
    finish
fi
worktrees() { git worktree list --porcelain | grep -c '^worktree '; }
n0=$(worktrees)

# 5. usage errors: a BASE that is not a commit, too few rounds
BUILD=$B sh bench/compare.sh --base no-such-revision-x --smoke --out "$tmp/o" >"$tmp/out" 2>&1
rc1=$?
BUILD=$B sh bench/compare.sh --base HEAD --rounds 1 --out "$tmp/o" >>"$tmp/out" 2>&1
rc2=$?
if [ "$rc1" = 2 ] && [ "$rc2" = 2 ] && [ "$(wc -l <"$tmp/out")" = 2 ] &&
    grep -q "^bench-compare: BASE 'no-such-revision-x' is not a commit" "$tmp/out" &&
    [ "$(worktrees)" = "$n0" ]; then
    ok "compare.sh: a bad BASE or ROUNDS is one line and exit 2"
else
    bad "compare.sh: usage errors (exit $rc1, $rc2)" "$tmp/out"
fi

# 6. HEAD against this tree, smoke, two rounds, through the make target.
#    MAKEFLAGS of the calling `make test` are dropped: this is a make of
#    its own.  Not in the sanitizer pass: it builds the base sanitized too,
#    minutes for what the plain pass already shows of the script.
if ldd "$BUILD_ABS/librlstore.so.0" 2>/dev/null | grep -q libasan; then
    skip "make bench-compare BASE=HEAD SMOKE=1" "a sanitized build (the plain pass runs it)"
    skip "compare.sh removes its worktree" "nothing was made"
    finish
fi
mkdir "$tmp/t"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL TMPDIR="$tmp/t" \
    make --no-print-directory BUILD="$B" bench-compare BASE=HEAD SMOKE=1 ROUNDS=2 \
    COMPARE_DIR="$tmp/o" >"$tmp/out" 2>&1
rc=$?
cat >"$tmp/check.py" <<'EOF'
import re, sys
out = open(sys.argv[1]).read()
err = []
want = ["floor", "fixed_window_10k", "two_limits", "batch_2", "algo_fixed_window", "algo_sliding_window",
        "algo_sliding_log", "algo_token_bucket", "algo_gcra", "algo_leaky_bucket",
        "denied_over_limit", "denied_blocked", "floor_fsync", "full_durability", "multi_1",
        "multi_2", "multi_4", "fill_big", "fixed_window_big", "rltop_during_load",
        "rss_per_handle", "size_per_state", "whole_run"]
verdicts = dict(re.findall(r"^verdict (\S+) +(.*)$", out, re.M))
for sid in want:
    v = verdicts.get(sid, "missing")
    if not re.match(r"(within noise|(slower|faster|larger|smaller) beyond noise)", v):
        err.append("%s: %s" % (sid, v))
rows = re.findall(r"^(\S*) +(ops/s|p50 us|p99 us|MB/handle|B/state|CPU s|wall s) +\S+ +\S+ +(\S+) ",
                  out, re.M)
if len(rows) != 3 * 20 + 2 + 2:
    err.append("%d figure rows" % len(rows))
for sid, fig, ratio in rows:
    # RSS per handle is a whole-process reading, which may not grow at all
    if fig != "MB/handle" and not float(ratio) > 0:
        err.append("%s %s: ratio %s" % (sid, fig, ratio))
size = [float(r) for s, f, r in rows if f == "B/state"]
# the same code on both sides: bytes per state do not depend on the load
if not size or not 0.9 <= size[0] <= 1.1:
    err.append("bytes per state: after/base %s" % size)
print("\n".join(err))
sys.exit(1 if err else 0)
EOF
if [ "$rc" = 0 ] && python3 "$tmp/check.py" "$tmp/out" >>"$tmp/out" 2>&1 &&
    [ "$(ls "$tmp"/o/base-*.json "$tmp"/o/after-*.json | wc -l)" = 4 ]; then
    ok "make bench-compare BASE=HEAD SMOKE=1: every scenario compared"
else
    bad "make bench-compare BASE=HEAD SMOKE=1 (exit $rc)" "$tmp/out"
fi

# 7. the temporary worktree and folder are gone
if [ "$(worktrees)" = "$n0" ] && [ -z "$(ls -A "$tmp/t")" ]; then
    ok "compare.sh removes its worktree"
else
    git worktree list >"$tmp/out"
    ls -A "$tmp/t" >>"$tmp/out"
    bad "compare.sh left a worktree or files" "$tmp/out"
fi

finish
