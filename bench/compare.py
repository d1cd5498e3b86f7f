#!/usr/bin/env python3
"""compare.py - rlbench result files of two builds, side by side (standard
library only); `make bench-compare` (bench/compare.sh) runs it.

usage: python3 bench/compare.py [--labels BASE AFTER] BASE.json... -- AFTER.json...

Each side is two or more rlbench JSON files of the same mode, one per round.
Per scenario and figure: the median of each side, the ratio after/base, the
noise of each side, (max - min) / median over its rounds, and a verdict.
The figures: throughput (ops/s, higher is better) and the p50 and p99
latencies (us, lower is better) of every timed scenario; MB per handle and
bytes per state for the two size scenarios (lower is better).  p99.9 and
max are left out: at a quick run's operation counts they are a handful of
samples and mostly measure the machine.  When each file X.json has an
X.cpu beside it (user, sys and wall seconds of the run; compare.sh writes
them), a last row "whole_run" compares the CPU time (user + sys) and the
wall time of the whole runs: CPU time depends much less than wall time on
what else a shared machine runs.

A figure is worse "beyond noise" when after/base is off 1 in the bad
direction by more than the two sides' noises added (each median may be off
by its own side's noise): throughput after < base * (1 - noise), latency
and size after > base * (1 + noise).  Better beyond noise likewise, else
within noise.  A scenario is "slower beyond noise" (a size scenario "larger
beyond noise") when one of its figures is worse beyond noise, "faster"
("smaller") beyond noise when none is worse and one is better, else "within
noise"; "skipped" or "failed" when it did not run in every round of both sides.

Exit status: 0 compared (whatever the verdicts), 1 a scenario failed in a
run, 2 usage errors or files that cannot be compared.
"""
import json
import statistics
import sys

# (key in the scenario, label, +1 higher is better / -1 lower is better)
TIMED = [("ops_per_s", "ops/s", +1), ("p50_us", "p50 us", -1), ("p99_us", "p99 us", -1)]
SIZED = {"rss_per_handle": ("mb_per_handle", "MB/handle"),
         "size_per_state": ("bytes_per_state", "B/state")}
# The verdicts, in the order of the closing count.
WORDS = ["slower beyond noise", "larger beyond noise", "faster beyond noise",
         "smaller beyond noise", "within noise", "no figure to compare", "skipped", "failed"]
UNASKED = {"skipped: not selected by --only", "skipped: peers disabled by --no-peers"}
# The whole rlbench run (compare.sh's .cpu files), last.
WHOLE = [("cpu_s", "CPU s", -1), ("wall_s", "wall s", -1)]


def die(msg, code=2):
    print("compare.py: " + msg, file=sys.stderr)
    sys.exit(code)


def load(path):
    try:
        with open(path) as f:
            d = json.load(f)
        return d, {s["id"]: s for s in d["scenarios"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        die("cannot read '%s': %s" % (path, e))


def whole_run(path):
    """The CPU and wall seconds of the run that wrote path (its .cpu file,
    written by compare.sh: user, sys and wall seconds) as a scenario, or
    None."""
    try:
        with open(path[:-len(".json")] + ".cpu" if path.endswith(".json") else "") as f:
            user, sys_, wall = (float(x) for x in f.read().split())
    except (OSError, ValueError):
        return None
    return {"id": "whole_run", "status": "ok", "cpu_s": user + sys_, "wall_s": wall}


def figure_values(scen, key):
    """The figure's value in a scenario that ran, or None."""
    if key in scen:
        v = scen[key]
    else:
        v = scen.get("extra", {}).get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def noise(vals):
    """Infinite when the median is not above 0 (an RSS growth of 0 kB per
    handle): no ratio can be judged then."""
    m = statistics.median(vals)
    return (max(vals) - min(vals)) / m if m > 0 else float("inf")


def judge(med_a, med_b, nz, sense):
    """'worse', 'better' or '' for one figure."""
    if sense > 0:
        if med_b < med_a * (1 - nz):
            return "worse"
        if med_b > med_a * (1 + nz):
            return "better"
    else:
        if med_b > med_a * (1 + nz):
            return "worse"
        if med_b < med_a * (1 - nz):
            return "better"
    return ""


def fmt(v):
    if abs(v) >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v


def pct(v):
    return "%.1f%%" % (100 * v) if v != float("inf") else "inf"


def not_run(sid, runs_a, runs_b, labels):
    """The verdict of a scenario that did not run everywhere, or None."""
    for label, runs in zip(labels, (runs_a, runs_b)):
        for i, s in enumerate(runs, 1):
            if s is None:
                return "failed: not in the %s result of round %d" % (label, i)
            if s.get("status") not in ("ok", "skipped"):
                return "failed: %s round %d: %s" % (label, i, s.get("note") or s.get("status"))
    for label, runs in zip(labels, (runs_a, runs_b)):
        for s in runs:
            if s["status"] == "skipped":
                return "skipped: %s" % (s.get("note") or label)
    return None


def compare_one(sid, runs_a, runs_b, rows):
    """Appends the figure rows of one scenario; returns its verdict."""
    if sid in SIZED:
        key, label = SIZED[sid]
        figs, words = [(key, label, -1)], ("larger", "smaller")
    elif sid == "whole_run":
        figs, words = WHOLE, ("slower", "faster")
    else:
        figs, words = TIMED, ("slower", "faster")
    marks = []
    for key, label, sense in figs:
        va = [figure_values(s, key) for s in runs_a]
        vb = [figure_values(s, key) for s in runs_b]
        if None in va or None in vb:
            continue
        med_a, med_b = statistics.median(va), statistics.median(vb)
        na, nb = noise(va), noise(vb)
        mark = judge(med_a, med_b, na + nb, sense) if med_a > 0 and med_b > 0 else ""
        ratio = "%.3f" % (med_b / med_a) if med_a > 0 else "n/a"
        marks.append((mark, label))
        rows.append(("" if marks[1:] else sid, label, fmt(med_a), fmt(med_b), ratio, pct(na),
                     pct(nb), mark and mark + " beyond noise"))
    if not marks:
        return "no figure to compare"
    worse = [label for mark, label in marks if mark == "worse"]
    better = [label for mark, label in marks if mark == "better"]
    if worse:
        return "%s beyond noise (%s)" % (words[0], ", ".join(worse))
    if better:
        return "%s beyond noise (%s)" % (words[1], ", ".join(better))
    return "within noise"


def main(argv):
    labels = ["base", "after"]
    if argv[:1] == ["--labels"]:
        if len(argv) < 3:
            die("usage: compare.py [--labels BASE AFTER] BASE.json... -- AFTER.json...")
        labels, argv = argv[1:3], argv[3:]
    if "--" not in argv:
        die("usage: compare.py [--labels BASE AFTER] BASE.json... -- AFTER.json...")
    cut = argv.index("--")
    paths_a, paths_b = argv[:cut], argv[cut + 1:]
    if len(paths_a) < 2 or len(paths_b) < 2:
        die("each side needs two rounds or more: the noise is their spread")
    files_a = [load(p) for p in paths_a]
    files_b = [load(p) for p in paths_b]
    first = files_a[0][0]
    for d, _ in files_a + files_b:
        if d.get("mode") != first.get("mode") or d.get("config") != first.get("config"):
            die("the files are not runs of the same mode and settings")

    m = first.get("machine", {})
    print("rlbench before and after: %s vs %s, %d + %d %s runs interleaved; %s, %s CPUs"
          % (labels[0], labels[1], len(files_a), len(files_b), first.get("mode"),
             m.get("cpu_model", "?"), m.get("nproc", "?")))
    print("noise: (max - min) / median of one side's rounds; beyond noise: after/base off 1 "
          "by more than the two noises added")
    print()
    whole = [whole_run(p) for p in paths_a + paths_b]
    if None not in whole:
        for (_, by), w in zip(files_a + files_b, whole):
            by["whole_run"] = w
    order = [s["id"] for s in first["scenarios"]] + (["whole_run"] if None not in whole else [])
    rows, verdicts = [], []
    for sid in order:
        runs_a = [by.get(sid) for _, by in files_a]
        runs_b = [by.get(sid) for _, by in files_b]
        v = not_run(sid, runs_a, runs_b, labels)
        if v is None:
            v = compare_one(sid, runs_a, runs_b, rows)
        verdicts.append((sid, v))
    head = ("scenario", "figure", labels[0] + " median", labels[1] + " median", "after/base",
            "noise " + labels[0].split()[0], "noise " + labels[1].split()[0], "figure verdict")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
        cells += [r[i].rjust(widths[i]) for i in range(2, 7)]
        print("  ".join(cells + [r[7]]).rstrip())
    print()
    # the groups not asked for, on one line
    unasked = [sid for sid, v in verdicts if v in UNASKED]
    verdicts = [(sid, v) for sid, v in verdicts if v not in UNASKED]
    counts = {}
    for sid, v in verdicts:
        print("verdict %-22s %s" % (sid, v))
        word = v.split(":")[0].split(" (")[0]
        counts[word] = counts.get(word, 0) + 1
    print()
    if unasked:
        print("not run (group not selected, or a peer): " + " ".join(unasked))
    print("%d scenarios: %s" % (len(verdicts), ", ".join(
        "%d %s" % (counts[w], w) for w in sorted(counts, key=WORDS.index))))
    return 1 if counts.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
