#!/usr/bin/env python3
"""plot.py - an SVG of an rlbench result file (standard library only).

usage: python3 bench/plot.py RESULTS.json OUT.svg

Three panels: throughput per scenario (checks or requests per second, log
scale), tail latency per scenario (p50, p99.9 and max in microseconds, log
scale), and every target with its measured value and whether it was met;
a fourth when the run has the "pg" group: rlstore on PostgreSQL side by side
with its pgbench floor and with SQLite (checks/s, p50, p99, CPU per check).
Skipped and failed scenarios are listed with their status instead of a bar.
"""
import json
import math
import sys
from xml.sax.saxutils import escape

WIDTH = 1100
LABEL_W = 330          # scenario names
PLOT_X = LABEL_W + 20
PLOT_W = WIDTH - PLOT_X - 90
ROW_H = 18
COLORS = {             # by group
    "core": "#4878a8", "denied": "#6aa84f", "durability": "#8e7cc3",
    "multi": "#e69138", "big": "#45818e", "redis": "#cc4125", "postgresql": "#a64d79",
    "pg": "#674ea7", "memory": "#b45f06",
}
BASELINES = {"floor", "floor_fsync", "redis", "postgresql", "pg_floor_1", "pg_floor_n",
             "floor_inproc_hash", "floor_shm_hash", "floor_shm_hash_4"}
LAT_COLORS = [("p50_us", "p50", "#9fc5e8"), ("p999_us", "p99.9", "#3d85c6"),
              ("max_us", "max", "#073763")]


def log_axis(lo, hi):
    """Decades covering lo..hi (both > 0)."""
    a = math.floor(math.log10(lo))
    b = math.ceil(math.log10(hi))
    if b <= a:
        b = a + 1
    return a, b


def xpos(v, a, b):
    v = max(v, 10 ** a)
    return PLOT_X + (math.log10(v) - a) / (b - a) * PLOT_W


def fmt(v):
    if v >= 1e6:
        return "%.2fM" % (v / 1e6)
    if v >= 1e4:
        return "%.0fk" % (v / 1e3)
    if v >= 1e3:
        return "%.1fk" % (v / 1e3)
    if v >= 10:
        return "%.0f" % v
    if v < 1:
        return "%.2g" % v   # a memory-class latency: tens of nanoseconds
    return "%.1f" % v


def text(x, y, s, size=11, anchor="start", weight="normal", fill="#222"):
    return ('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" font-weight="%s" '
            'fill="%s">%s</text>' % (x, y, size, anchor, weight, fill, escape(s)))


def axis(out, y0, y1, a, b, unit):
    for d in range(a, b + 1):
        x = xpos(10 ** d, a, b)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>' % (x, y0, x, y1))
        out.append(text(x, y1 + 14, fmt(10 ** d) + unit, 10, "middle", fill="#555"))


def label(s):
    name = s["name"]
    if s["id"] in BASELINES:
        name += "  [baseline]"
    return name


def throughput_panel(out, y, scen):
    rows = [s for s in scen if s.get("ops_per_s") or s["status"] != "ok"]
    vals = [s["ops_per_s"] for s in rows if s.get("ops_per_s")]
    out.append(text(20, y + 14, "Throughput per scenario (operations/s, log scale)", 14, weight="bold"))
    y += 26
    if not vals:
        out.append(text(PLOT_X, y + 12, "no measurements"))
        return y + 30
    a, b = log_axis(min(vals) / 1.5, max(vals) * 1.5)
    top = y
    for s in rows:
        out.append(text(LABEL_W, y + 13, label(s), 11, "end"))
        if s.get("ops_per_s"):
            x1 = xpos(s["ops_per_s"], a, b)
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"/>'
                       % (PLOT_X, y + 3, max(x1 - PLOT_X, 1), ROW_H - 5,
                          COLORS.get(s["group"], "#888")))
            out.append(text(x1 + 4, y + 13, fmt(s["ops_per_s"]) + "/s", 10))
        else:
            out.append(text(PLOT_X + 4, y + 13, "%s: %s" % (s["status"], s.get("note", ""))[:110],
                            10, fill="#999"))
        y += ROW_H
    axis(out, top, y, a, b, "")
    return y + 30


def latency_panel(out, y, scen):
    rows = [s for s in scen if s.get("max_us") or s["status"] != "ok"]
    rows = [s for s in rows if s["id"] not in ("rss_per_handle", "size_per_state")]
    vals = [s[k] for s in rows for k, _, _ in LAT_COLORS if s.get(k)]
    out.append(text(20, y + 14, "Latency per operation: p50, p99.9, max (microseconds, log scale)",
                    14, weight="bold"))
    lx = PLOT_X
    for _, name, color in LAT_COLORS:
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>' % (lx + 420, y + 5, color))
        out.append(text(lx + 434, y + 14, name, 10))
        lx += 60
    y += 26
    if not vals:
        out.append(text(PLOT_X, y + 12, "no measurements"))
        return y + 30
    a, b = log_axis(max(min(vals) / 1.5, 0.1), max(vals) * 1.5)
    top = y
    h = 5
    for s in rows:
        out.append(text(LABEL_W, y + 13, label(s), 11, "end"))
        if s.get("max_us"):
            for i, (k, _, color) in enumerate(LAT_COLORS):
                x1 = xpos(s[k], a, b)
                out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"/>'
                           % (PLOT_X, y + 2 + i * h, max(x1 - PLOT_X, 1), h - 1, color))
            out.append(text(xpos(s["max_us"], a, b) + 4, y + 13,
                            "p99.9 %s, max %s us" % (fmt(s["p999_us"]), fmt(s["max_us"])), 10))
        else:
            out.append(text(PLOT_X + 4, y + 13, s["status"], 10, fill="#999"))
        y += ROW_H
    axis(out, top, y, a, b, "")
    return y + 30


def targets_panel(out, y, ratios):
    out.append(text(20, y + 14, "Targets (ratios against baselines of the same run)", 14,
                    weight="bold"))
    y += 26
    for r in ratios:
        if r.get("op") is None:
            continue
        v = r.get("value")
        if v is None:
            val, state, color = "n/a", "not measured", "#999"
        else:
            digits = 2 if r.get("baseline") else 1
            # more digits when the rounded value would equal a missed target
            while not r.get("met") and digits < 6 and abs(round(v, digits) - r["target"]) < 1e-9:
                digits += 1
            val = "%.*f%s" % (digits, v, "x" if r.get("baseline") else "")
            state, color = ("met", "#38761d") if r.get("met") else ("NOT met", "#cc0000")
        tgt = "%s %g%s" % (r["op"], r["target"], "x" if r.get("baseline") else "")
        out.append(text(LABEL_W, y + 13, r["scenario"], 11, "end"))
        out.append(text(PLOT_X, y + 13, r["what"], 11))
        out.append(text(PLOT_X + 300, y + 13, val, 11, "end"))
        out.append(text(PLOT_X + 320, y + 13, "target " + tgt, 11))
        out.append(text(PLOT_X + 470, y + 13, state, 11, weight="bold", fill=color))
        y += ROW_H
    return y + 20


def pg_panel(out, y, scen):
    """rlstore on PostgreSQL next to its floor and SQLite, 1 and N connections."""
    by = {s["id"]: s for s in scen}
    if not any(i.startswith("pg_") for i in by):
        return y
    out.append(text(20, y + 14, "PostgreSQL backend: the same checks on SQLite, on PostgreSQL, "
                    "and the pgbench UPSERT floor", 14, weight="bold"))
    y += 30
    cols = [("", 20, "start"), ("SQLite checks/s", 300, "end"), ("PG checks/s", 420, "end"),
            ("PG floor/s", 540, "end"), ("PG / floor", 640, "end"), ("PG p50 / p99 us", 790, "end"),
            ("floor p50 / p99 us", 940, "end"), ("PG CPU us/check", 1080, "end")]
    for name, x, anchor in cols:
        out.append(text(x, y + 13, name, 11, anchor, weight="bold"))
    y += ROW_H
    for label, sq, pg, fl in (("1 connection", "pg_sqlite_1", "pg_check_1", "pg_floor_1"),
                              ("N connections", "pg_sqlite_n", "pg_check_n", "pg_floor_n")):
        s, p, f = by.get(sq, {}), by.get(pg, {}), by.get(fl, {})
        if p.get("extra", {}).get("connections"):
            label = "%d connection%s" % (p["extra"]["connections"],
                                         "" if p["extra"]["connections"] == 1 else "s")
        def rate(x):
            return fmt(x["ops_per_s"]) if x.get("ops_per_s") else x.get("status", "n/a")

        def lat(x):
            return ("%s / %s" % (fmt(x["p50_us"]), fmt(x["p99_us"]))) if x.get("p50_us") else "n/a"
        ratio = "n/a"
        met = None
        if p.get("ops_per_s") and f.get("ops_per_s"):
            v = p["ops_per_s"] / f["ops_per_s"]
            ratio, met = "%.2fx" % v, v >= 0.8
        ex = p.get("extra", {})
        cpu = "n/a"
        if ex.get("client_cpu_us_per_op") is not None:
            cpu = "%s + %s" % (fmt(ex["client_cpu_us_per_op"]),
                               fmt(ex["server_cpu_us_per_op"])
                               if ex.get("server_cpu_us_per_op") is not None else "n/a")
        vals = [label, rate(s), rate(p), rate(f), ratio, lat(p), lat(f), cpu]
        for (name, x, anchor), v in zip(cols, vals):
            color = "#222"
            if name == "PG / floor" and met is not None:
                color = "#38761d" if met else "#cc0000"
            out.append(text(x, y + 13, v, 11, anchor, fill=color))
        y += ROW_H
    out.append(text(20, y + 13, "target: PG >= 0.8x the floor with as many clients; CPU is "
                    "client + server (every cluster process) per check", 10, fill="#555"))
    return y + 30


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: plot.py RESULTS.json OUT.svg\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        data = json.load(f)
    scen = data.get("scenarios", [])
    m = data.get("machine", {})
    body = []
    y = 10
    body.append(text(20, y + 16, "rlbench results (%s run, %s)" % (data.get("mode", "?"),
                                                                  data.get("date", "?")),
                     16, weight="bold"))
    body.append(text(20, y + 34, "%s CPUs (%s), %s, SQLite %s, %s, %s" % (
        m.get("nproc", "?"), m.get("cpu_model", "?"), m.get("kernel", "?"), m.get("sqlite", "?"),
        m.get("compiler", "?"), m.get("filesystem", "?")), 11, fill="#555"))
    y += 50
    y = throughput_panel(body, y, scen)
    y = latency_panel(body, y, scen)
    y = targets_panel(body, y, data.get("ratios", []))
    y = pg_panel(body, y, scen)
    svg = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="DejaVu Sans, Arial, sans-serif">' % (WIDTH, y, WIDTH, y),
           '<rect width="100%" height="100%" fill="white"/>'] + body + ["</svg>"]
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(svg) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
