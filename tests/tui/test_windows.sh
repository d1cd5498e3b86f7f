#!/usr/bin/env bash
# rltop shows windows as what they are (issue #20, item 4), in a real
# terminal (tmux): the rules view writes a calendar week "1w cal" and a
# 7-day window "7d", each with its zone; a key's detail says which period
# of which zone a calendar window is and how long the current one lasts
# (the wall clock's week in Europe/Berlin, computed here with Python's
# zoneinfo: 7 days, or 7 days and an hour around a change of the clocks).
. "$(dirname "$0")/lib.sh"

[ -f /usr/share/zoneinfo/Europe/Berlin ] || skip_all 7 "no zone data (Debian: apt-get install tzdata)"
test_db db || exit 1
DB=$REPLY
cat >w.yaml <<'YAML'
version: 1
actions:
  a:
    key: string
    limits:
      - { name: weekly, algorithm: fixed_window, limit: 50, window: 1w, timezone: Europe/Berlin }
      - { name: seven, algorithm: fixed_window, limit: 50, window: 7d }
YAML
"$RLCTL" --db "$DB" init w.yaml >/dev/null || setup_fail "rlctl init failed"
"$RLCTL" --db "$DB" --quiet check a walter
# the length of this week in Berlin, as rltop should say it
LEN=$(python3 -c '
import datetime as d, zoneinfo
z = zoneinfo.ZoneInfo("Europe/Berlin")
now = d.datetime.now(z)
mon = (now - d.timedelta(days=now.weekday())).date()
a = d.datetime.combine(mon, d.time(), z)
b = d.datetime.combine(mon + d.timedelta(days=7), d.time(), z)
h = int((b.timestamp() - a.timestamp()) // 3600)
print("7d" if h == 168 else "7d%dh" % (h - 168) if h > 168 else "6d%dh" % (h - 144))')

start_pane 160 40
txt "'$RLTOP' --db '$DB'; echo rc=\$?"
key Enter
expect "starts" "rules v1"
txt 2
expect "rules view: the calendar week as 1w cal" "1w cal  Europe/Berlin"
expect "rules view: the 7-day window as 7d, in UTC" "7d      UTC"
txt 1
expect "keys view lists the key" "walter"
key Enter
expect "detail: the week is the zone's ISO week, and its length now" \
    "weekly: 1w is the ISO week from Monday 00:00 in Europe/Berlin; this one lasts $LEN"
expect "detail: the window column says 1w cal" "1w cal"
key Escape
txt q
expect "q quits with status 0" "rc=0"
finish
