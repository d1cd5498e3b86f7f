"""jsonshape.py - the JSON shapes of rlctl (tests/cli/json-shapes.json).

    import jsonshape; jsonshape.check(d, "tier list")   # AssertionError naming the path
    python3 tests/cli/jsonshape.py --man                 # the section of rlctl(1)
    python3 tests/cli/jsonshape.py --check-man FILE      # exit 1 if FILE's section differs

check() is strict: an object must have exactly the documented members, an int is
never a bool, a time is ISO-8601 UTC with milliseconds, and a NAME_at member
must be the time of its NAME_ms twin.  Only python3's standard library.
"""
import datetime
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "json-shapes.json"), encoding="utf-8") as f:
    SPEC = json.load(f)
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
WRAP = 66


def _iso(ms):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def _scalar_ok(v, t):
    if t == "null":
        return v is None
    if t == "bool":
        return isinstance(v, bool)
    if t == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "str":
        return isinstance(v, str)
    if t == "time":
        return isinstance(v, str) and TIME.match(v) is not None
    raise ValueError("unknown type %r in json-shapes.json" % t)


def _check(v, shape, path):
    if isinstance(shape, str) and shape.startswith("$"):
        return _check(v, SPEC["shapes"][shape[1:]], path)
    if isinstance(shape, str):
        alts = shape.split("|")
        if not any(_scalar_ok(v, t) for t in alts):
            raise AssertionError("%s: %r is not %s" % (path or "value", v, shape))
        return
    if isinstance(shape, list):
        if not isinstance(v, list):
            raise AssertionError("%s: %r is not a list" % (path or "value", v))
        for i, x in enumerate(v):
            _check(x, shape[0], "%s[%d]" % (path, i))
        return
    if not isinstance(v, dict):
        raise AssertionError("%s: %r is not an object" % (path or "value", v))
    if list(shape) == ["*"]:
        for k, x in v.items():
            _check(x, shape["*"], "%s.%s" % (path, k))
        return
    missing = [k for k in shape if k not in v]
    extra = [k for k in v if k not in shape]
    if missing or extra:
        raise AssertionError("%s: members differ: missing %s, undocumented %s"
                             % (path or "object", missing, extra))
    for k in shape:
        _check(v[k], shape[k], "%s.%s" % (path, k) if path else k)
    for k in shape:
        if k.endswith("_at") and k[:-3] + "_ms" in v and v[k] is not None:
            ms = v[k[:-3] + "_ms"]
            if ms is None or _iso(ms) != v[k]:
                raise AssertionError("%s.%s: %r is not the time of %s_ms %r"
                                     % (path, k, v[k], k[:-3], ms))
        if k.endswith("_at") and k[:-3] + "_ms" in v and v[k] is None \
                and v[k[:-3] + "_ms"] is not None:
            raise AssertionError("%s.%s: null but %s_ms is %r" % (path, k, k[:-3], v[k[:-3] + "_ms"]))


def check(value, command):
    """Raises AssertionError unless value has the documented shape of command."""
    if command not in SPEC["commands"]:
        raise AssertionError("no documented shape for %r" % command)
    _check(value, SPEC["commands"][command], "")


# ---- the man page -------------------------------------------------------------

def _render(shape):
    if isinstance(shape, str):
        return shape[1:] if shape.startswith("$") else shape
    if isinstance(shape, list):
        return "[" + _render(shape[0]) + "]"
    if list(shape) == ["*"]:
        return "{NAME: " + _render(shape["*"]) + "}"
    return "{" + ", ".join("%s: %s" % (k, _render(t)) for k, t in shape.items()) + "}"


def _wrap(text):
    """Breaks after ", " so that lines stay within WRAP columns; a continued
    line is indented by one space."""
    lines, cur = [], ""
    for part in re.split(r"(?<=, )", text):
        if cur and len(cur) + len(part.rstrip()) > WRAP:
            lines.append(cur.rstrip())
            cur = " "
        cur += part
    lines.append(cur.rstrip())
    return lines


def _roff(text):
    return text.replace("\\", "\\e").replace("-", "\\-")


def man():
    out = [".SS Shared shapes"]
    for name, shape in SPEC["shapes"].items():
        out += [".TP", ".I " + _roff(name), ".nf"] + [_roff(l) for l in _wrap(_render(shape))] + [".fi"]
    out.append(".SS Commands")
    for name, shape in SPEC["commands"].items():
        out += [".TP", ".B " + _roff(name) if " " not in name else '.B "%s"' % _roff(name), ".nf"]
        out += [_roff(l) for l in _wrap(_render(shape))] + [".fi"]
    return "\n".join(out) + "\n"


BEGIN = '.\\" BEGIN JSON SHAPES'
END = '.\\" END JSON SHAPES'


def man_section(path):
    text = open(path, encoding="utf-8").read()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        return None
    a = text.index("\n", a) + 1
    return text[a:b]


if __name__ == "__main__":
    if sys.argv[1:] == ["--man"]:
        sys.stdout.write(man())
    elif len(sys.argv) == 3 and sys.argv[1] == "--check-man":
        got = man_section(sys.argv[2])
        if got != man():
            sys.stderr.write("%s: the JSON SHAPES section differs from json-shapes.json; "
                             "regenerate it with: python3 tests/cli/jsonshape.py --man\n"
                             % sys.argv[2])
            sys.exit(1)
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
