#!/usr/bin/env bash
# Windows shown as what they are (issue #20, item 4): a calendar week ("1w",
# ISO Monday in the rule's zone) is not a 7-day fixed window ("7d"), and
# every limit shows its zone, in `rlctl rules` (plain and on a terminal)
# and `rlctl explain`; a calendar window's true length on the days the
# clocks change (23 and 25 hours in Europe/Berlin, a week of 7 days and an
# hour) is what check's window_ms, explain's window_now_ms and the
# RateLimit-Policy header's w say.
. "$(dirname "$0")/lib.sh"

cat >w.yaml <<'EOF'
version: 1
actions:
  a:
    key: string
    limits:
      - { name: weekly, algorithm: fixed_window, limit: 5, window: 1w, timezone: Europe/Berlin }
      - { name: seven, algorithm: fixed_window, limit: 5, window: 7d }
  d:
    key: string
    limits:
      - { name: daily, algorithm: fixed_window, limit: 1, window: 1d, timezone: Europe/Berlin }
EOF
[ -f /usr/share/zoneinfo/Europe/Berlin ] || skip_all 9 "no zone data (Debian: apt-get install tzdata)"
T0=2026-10-25T10:00:00Z     # Berlin's 25-hour day, in its week of 7 days 1 hour
rl --db db init w.yaml --now "$T0"

# ---- rules -----------------------------------------------------------------------
tcase "rules: CALENDAR and ZONE columns, plain" 0 \
    --out-has "$(printf 'a\t*\tweekly\tfixed_window\t5\t5\t604800000\tenforce\tyes\tEurope/Berlin')" \
    --out-has "$(printf 'a\t*\tseven\tfixed_window\t5\t5\t604800000\tenforce\tno\tUTC')" -- --db db rules
tcase "rules --json: window as written, calendar, timezone" 0 --json '
l = {x["name"]: x for a in d["actions"] for x in a["limits"]}
assert l["weekly"]["window"] == "1w" and l["seven"]["window"] == "7d", l
assert l["weekly"]["calendar"] in (1, True) and l["seven"]["calendar"] in (0, False), l
assert l["weekly"]["timezone"] == "Europe/Berlin" and l["seven"]["timezone"] == "UTC", l' -- --db db rules --json
db_of db
DB=$(printf '%q' "$REPLY")
script -qec "$(printf '%q' "$RLCTL") --db $DB rules" /dev/null >tty.txt 2>&1
tassert "rules on a terminal: 1w and 7d apart, with their zones" python3 -c '
import re, sys
rows = {l.split()[2]: l.split() for l in open(sys.argv[1]) if re.match(r"^a\s", l)}
assert rows["weekly"][6:] == ["1w", "enforce", "yes", "Europe/Berlin"], rows
assert rows["seven"][6:] == ["7d", "enforce", "no", "UTC"], rows' tty.txt

# ---- explain and check on the days the clocks change ----------------------------------
tcase "explain: the week of the 25-hour day lasts 7 days and one hour" 0 --json '
l = {x["name"]: x for x in d["limits"]}
assert l["weekly"]["window_now_ms"] == 169 * 3600000, l["weekly"]
assert l["seven"]["window_now_ms"] == 168 * 3600000, l["seven"]
assert l["weekly"]["window"] == "1w" and l["weekly"]["timezone"] == "Europe/Berlin"' \
    -- --db db explain a k1 --json --now "$T0"
script -qec "$(printf '%q' "$RLCTL") --db $DB explain a k1 --audit 0 --now $T0" /dev/null >tty.txt 2>&1
tassert "explain on a terminal: WINDOW, CALENDAR, LENGTH, ZONE" python3 -c '
import sys
t = open(sys.argv[1]).read()
assert t.splitlines()[0].split()[-3:] == ["CALENDAR", "LENGTH", "ZONE"] or "CALENDAR  LENGTH  ZONE" in t, t
w = [l.split() for l in t.splitlines() if l.startswith("weekly")][0]
s = [l.split() for l in t.splitlines() if l.startswith("seven")][0]
assert w[4] == "1w" and w[-3:] == ["yes", "7d1h", "Europe/Berlin"], w
assert s[4] == "7d" and s[-3:] == ["no", "7d", "UTC"], s' tty.txt
tcase "check on the 25-hour day: window_ms is 25 hours" 0 \
    --json 'assert d["rule"] == "daily" and d["window_ms"] == 25 * 3600000, d' \
    -- --db db check d k1 --json --now "$T0"
tcase "check on the 23-hour day: window_ms is 23 hours" 0 \
    --json 'assert d["window_ms"] == 23 * 3600000, d' -- --db db check d k2 --json --now 2026-03-29T10:00:00Z
tcase "check on an ordinary day: 24 hours" 0 \
    --json 'assert d["window_ms"] == 24 * 3600000, d' -- --db db check d k3 --json --now 2026-11-02T10:00:00Z
tcase "a denial on the 25-hour day says so too" 1 \
    --json 'assert d["allowed"] is False or d["allowed"] == 0; assert d["window_ms"] == 25 * 3600000, d' \
    -- --db db check d k1 --json --now 2026-10-25T11:00:00Z
finish
