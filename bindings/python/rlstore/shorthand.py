"""Flask-Limiter / slowapi style rate strings ("20/day", "5 per minute;
100/hour") as rlstore rules.

rlstore keeps its limits in the database, as a versioned YAML rule set
(rlstore.yaml(5)) that every process reads and an operator can change
without a deploy, not in decorators: so a shorthand does not live on a
view.  It is turned into rules once, which are then applied like any:

    from rlstore.shorthand import rules_yaml
    yaml = rules_yaml({"login": "5/minute;20/day", "api": "100/second"}, key="ip")
    limiter.rules_apply(yaml, name="from-flask-limiter")
    # or write it to rules.yaml and `rlctl apply rules.yaml`

    @limit(limiter, "login")          # the view names its action

Each rate becomes one limit of the action, all of which must admit a
request (as Flask-Limiter's several limits).  The strategy maps exactly
where an rlstore algorithm decides the same (tests/reliability/
test_limits_diff.sh checks it against `limits`, the library Flask-Limiter
and slowapi use): "fixed-window" (their default) is fixed_window with
anchor: first_hit (a key's window starts at its first request),
"moving-window" is sliding_log.  "fixed-window-aligned" is rlstore's own
calendar-aligned fixed_window (django-ratelimit's windows are aligned to
the clock too).  A year is refused: `limits` counts it as 360 days, which
no rlstore window spells honestly.
"""

import re
from typing import Dict, List, Mapping, Optional, Tuple

from .errors import InvalidArgument

__all__ = ["parse", "rules_yaml"]

UNITS = {"second": "s", "minute": "m", "hour": "h", "day": "d", "week": "w",
         "month": "mo"}
STRATEGIES = {
    "fixed-window": ("fixed_window", "first_hit"),
    "moving-window": ("sliding_log", None),
    "fixed-window-aligned": ("fixed_window", None),
}
_RATE = re.compile(r"^\s*(\d+)\s*(?:/|per)\s*(\d+)?\s*([a-z]+?)s?\s*$", re.I)
_KEYS = ("string", "ip", "email")


def parse(text: str) -> List[Tuple[int, str]]:
    """"20/day;5 per 10 minutes" -> [(20, "1d"), (5, "10m")] (limit,
    window).  Separators ";" or ","."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgument("a rate such as '20/day', not %r" % (text,))
    out = []
    for part in re.split(r"[;,]", text):
        if not part.strip():
            continue
        m = _RATE.match(part)
        unit = m.group(3).lower() if m else ""
        if not m or unit not in UNITS:
            raise InvalidArgument("cannot read the rate %r (such as '20/day', '5 per 10 "
                                  "minutes'; units %s)" % (part.strip(), ", ".join(UNITS)))
        limit, n = int(m.group(1)), int(m.group(2) or 1)
        if limit < 1 or n < 1:
            raise InvalidArgument("rate %r: counts start at 1" % part.strip())
        out.append((limit, "%d%s" % (n, UNITS[unit])))
    if not out:
        raise InvalidArgument("no rate in %r" % (text,))
    return out


def rules_yaml(actions: Mapping[str, str], *, key: str = "string",
               strategy: str = "fixed-window", keys: Optional[Dict[str, str]] = None) -> str:
    """A complete rule file (version 1) with one action per entry of
    actions (name -> rate string).  key: how keys are normalised ("string",
    "ip", "email"), for every action unless keys names one's own."""
    if strategy not in STRATEGIES:
        raise InvalidArgument("strategy must be one of %s" % ", ".join(STRATEGIES))
    algorithm, anchor = STRATEGIES[strategy]
    lines = ["# made by rlstore.shorthand.rules_yaml (strategy %s)" % strategy,
             "version: 1", "actions:"]
    for action, rate in actions.items():
        kind = (keys or {}).get(action, key)
        if kind not in _KEYS:
            raise InvalidArgument("key kind must be one of %s, not %r" % (", ".join(_KEYS), kind))
        if not re.match(r"^[A-Za-z0-9_.:-]{1,63}$", action):
            raise InvalidArgument("action name %r: 1 to 63 of A-Z a-z 0-9 _ . : -" % action)
        lines += ["  %s:" % action, "    key: %s" % kind, "    limits:"]
        seen = set()
        for limit, window in parse(rate):
            name = "%d_per_%s" % (limit, window)
            if name in seen:
                raise InvalidArgument("action %s: the rate %d/%s twice" % (action, limit, window))
            seen.add(name)
            extra = ", anchor: %s" % anchor if anchor else ""
            lines.append("      - { name: %s, algorithm: %s, limit: %d, window: %s%s }"
                         % (name, algorithm, limit, window, extra))
    return "\n".join(lines) + "\n"
