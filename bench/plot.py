#!/usr/bin/env python3
"""plot.py RESULTS.json OUT.svg - draws rlbench results as an SVG.

One row per scenario, grouped as in the JSON.  Left: throughput (ops/s, log
scale).  Right: latency (us, log scale): a bar to p99.9 with a tick at p50
and a dot at the max.  Skipped scenarios are listed with their reason.
Standard library only; the SVG is written by hand.
"""
import json
import math
import sys
from xml.sax.saxutils import escape

COLORS = {
    "check": "#4e79a7", "algorithm": "#59a14f", "denied": "#e15759",
    "durability": "#b07aa1", "processes": "#f28e2b", "keys": "#76b7b2",
    "peers": "#9c755f",
}
GROUP_TITLES = {
    "check": "admitted checks vs the SQLite floor", "algorithm": "each algorithm (admitted)",
    "denied": "denied paths", "durability": "FULL durability (fsync per commit)",
    "processes": "processes on one file (total)", "keys": "many keys",
    "peers": "peers (same machine, same run)",
}

ROW, LABEL_W, PANEL_W, GAP, TOP = 18, 300, 330, 40, 70


def log_x(v, lo, hi, width):
    v = min(max(v, lo), hi)
    return width * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))


def human(v):
    if v >= 1e6:
        return "%.3gM" % (v / 1e6)
    if v >= 1e3:
        return "%.3gk" % (v / 1e3)
    return "%.3g" % v


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py RESULTS.json OUT.svg")
    with open(sys.argv[1]) as f:
        data = json.load(f)
    rows = []
    last = None
    for r in data["results"]:
        if r["group"] != last:
            rows.append(("group", r["group"]))
            last = r["group"]
        rows.append(("result", r))
    ops = [r["ops_per_s"] for k, r in rows if k == "result" and not r.get("skipped")]
    lats = [v for k, r in rows if k == "result" and not r.get("skipped")
            for v in (r["p50_us"], r["max_us"])]
    if not ops:
        sys.exit("plot.py: no results")
    olo = 10 ** math.floor(math.log10(max(min(ops), 1)))
    ohi = 10 ** math.ceil(math.log10(max(ops)))
    llo = 10 ** math.floor(math.log10(max(min(lats), 0.1)))
    lhi = 10 ** math.ceil(math.log10(max(lats)))
    width = LABEL_W + PANEL_W * 2 + GAP * 2
    height = TOP + ROW * len(rows) + 60
    x1 = LABEL_W
    x2 = LABEL_W + PANEL_W + GAP
    out = []
    add = out.append
    add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
        'font-family="sans-serif" font-size="11">' % (width, height))
    add('<rect width="100%" height="100%" fill="white"/>')
    m = data.get("machine", {})
    title = "rlbench: SQLite %s, librlstore %s, %s CPUs (%s)" % (
        data.get("sqlite", "?"), data.get("librlstore", "?"), m.get("cpus", "?"),
        escape(m.get("cpu", "?")))
    add('<text x="10" y="18" font-size="13" font-weight="bold">%s</text>' % title)
    add('<text x="%d" y="48" font-weight="bold">throughput, ops/s (log)</text>' % x1)
    add('<text x="%d" y="48" font-weight="bold">latency, us (log): bar to p99.9, '
        'tick p50, dot max</text>' % x2)
    # grid lines at powers of ten
    bottom = TOP + ROW * len(rows)
    for panel_x, lo, hi in ((x1, olo, ohi), (x2, llo, lhi)):
        e = math.log10(lo)
        while 10 ** e <= hi * 1.0001:
            x = panel_x + log_x(10 ** e, lo, hi, PANEL_W)
            add('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, TOP - 8, x, bottom))
            add('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>'
                % (x, TOP - 12, human(10 ** e)))
            e += 1
    y = TOP
    for kind, r in rows:
        if kind == "group":
            add('<text x="10" y="%d" font-weight="bold" fill="%s">%s</text>'
                % (y + 13, COLORS.get(r, "#333"), escape(GROUP_TITLES.get(r, r))))
            y += ROW
            continue
        color = COLORS.get(r["group"], "#888")
        add('<text x="20" y="%d">%s</text>' % (y + 13, escape(r["name"])))
        if r.get("skipped"):
            add('<text x="%d" y="%d" fill="#999">skipped: %s</text>'
                % (x1, y + 13, escape(r.get("note", ""))))
            y += ROW
            continue
        w = log_x(r["ops_per_s"], olo, ohi, PANEL_W)
        add('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (x1, y + 3, w, ROW - 6, color))
        label = human(r["ops_per_s"])
        if "ratio_to_baseline" in r and r["id"] != r.get("baseline"):
            label += "  %.2fx" % r["ratio_to_baseline"]
        add('<text x="%.1f" y="%d" fill="#222">%s</text>' % (x1 + w + 4, y + 13, label))
        w = log_x(r["p999_us"], llo, lhi, PANEL_W)
        add('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="0.55"/>'
            % (x2, y + 3, w, ROW - 6, color))
        p50 = x2 + log_x(r["p50_us"], llo, lhi, PANEL_W)
        add('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-width="2"/>'
            % (p50, y + 2, p50, y + ROW - 2))
        mx = x2 + log_x(r["max_us"], llo, lhi, PANEL_W)
        add('<circle cx="%.1f" cy="%d" r="3" fill="black"/>' % (mx, y + ROW // 2))
        add('<text x="%.1f" y="%d" fill="#222">%s / %s</text>'
            % (max(mx, x2 + w) + 6, y + 13, "%.3g" % r["p50_us"], "%.3g" % r["p999_us"]))
        y += ROW
    y += 20
    met = [t for t in data.get("targets", []) if t.get("met") is not None]
    summary = "targets met: %d of %d (see docs/PERFORMANCE.md)" % (
        sum(1 for t in met if t["met"]), len(met))
    add('<text x="10" y="%d" fill="#333">%s</text>' % (y, escape(summary)))
    add('</svg>')
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
