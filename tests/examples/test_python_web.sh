#!/bin/sh
# tests/examples/test_python_web.sh - the framework glue of the Python
# binding (rlstore.wsgi, rlstore.asgi, rlstore.flask, rlstore.django) and
# examples/flask_app, against the real frameworks: Debian's python3-flask,
# python3-django, python3-starlette (with python3-httpx for its TestClient
# and python3-uvicorn for a real server).  They install for the system
# interpreter, so this suite runs $PYTHON_WEB (default /usr/bin/python3,
# else python3).
#
#   1. each framework's suite (bindings/python/tests/frameworks/test_*.py)
#      against the source tree, one test per unittest case; a framework the
#      interpreter lacks skips its suite with one line;
#   2. the package installed offline from the tree into a virtual
#      environment that sees the system's frameworks (--system-site-packages;
#      pip install --no-index --no-build-isolation ./bindings/python), and
#      the same suites against the installed package, run from elsewhere;
#   3. mypy --strict on the package, and on a typed program using the
#      installed package (its py.typed), which must refuse a wrong one
#      (skipped with one line without mypy).
. "$(dirname "$0")/../install/suite.sh"

PY=${PYTHON_WEB:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
export PYTHONDONTWRITEBYTECODE=1
LIBSO=$BUILD_ABS/librlstore.so.0
PKG=$ROOT/bindings/python
FW=$PKG/tests/frameworks

command -v "$PY" >/dev/null 2>&1 || skip_all 1 "python3 is not installed (Debian: apt-get install python3)"
[ -f "$LIBSO" ] || setup_fail "$LIBSO is not built (run make)"
export RLSTORE_LIB="$LIBSO"
if [ -n "$SAN" ]; then
    LD_PRELOAD="$($CC -print-file-name=libasan.so) $($CC -print-file-name=libubsan.so)"
    export LD_PRELOAD
    export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi

# The frameworks each suite needs, and the Debian packages that bring them.
needs() {
    case $1 in
    flask) echo "flask|python3-flask" ;;
    django) echo "django|python3-django" ;;
    asgi) echo "starlette httpx uvicorn|python3-starlette python3-httpx python3-uvicorn" ;;
    esac
}

# run_fw WHAT PYTHON PYTHONPATH SUITE: one framework suite, one test per
# unittest case; each failure one line.
run_fw() {
    _what=$1 _py=$2 _pp=$3 _suite=$4
    (cd "$TMP" && PYTHONPATH=$_pp "$_py" - "$FW" "test_$_suite.py" <<'PYEOF'
import sys, unittest
sys.path.insert(0, sys.argv[1])
suite = unittest.defaultTestLoader.discover(sys.argv[1], pattern=sys.argv[2],
                                            top_level_dir=sys.argv[1])
result = unittest.TestResult()
suite.run(result)
for test, tb in result.failures + result.errors:
    last = [l for l in tb.strip().splitlines() if l.strip()][-1]
    print("FAIL\t%s: %s" % (test.id(), last))
for test, why in result.skipped:
    print("FAIL\t%s: skipped (%s)" % (test.id(), why))
bad = len(result.failures) + len(result.errors) + len(result.skipped)
print("COUNTS\t%d\t%d" % (result.testsRun - bad, bad))
PYEOF
    ) >"$TMP/fw.out" 2>&1
    if ! grep -q '^COUNTS' "$TMP/fw.out"; then
        fail "$_what $_suite: the suite did not run: $(tail -n 3 "$TMP/fw.out" | tr '\n' ' ')"
        return
    fi
    while IFS="$(printf '\t')" read -r tag a b; do
        case $tag in
        FAIL) fail "$_what: $a" ;;
        COUNTS)
            pass "$a"
            [ "$a" -ge 3 ] || fail "$_what $_suite: only $a cases passed; expected 3 or more" ;;
        esac
    done <"$TMP/fw.out"
}

SUITES=""
for s in flask django asgi; do
    spec=$(needs $s)
    mods=${spec%%|*}
    debs=${spec#*|}
    missing=""
    for m in $mods; do
        "$PY" -c "import $m" >/dev/null 2>&1 || missing="$missing $m"
    done
    if [ -n "$missing" ]; then
        skip "python $s suite" "$PY cannot import$missing (Debian: apt-get install $debs)"
    else
        SUITES="$SUITES $s"
    fi
done

# ---- 1. against the source tree ------------------------------------------------
for s in $SUITES; do
    run_fw "source tree" "$PY" "$PKG" "$s"
done

# ---- 2. installed offline into a virtual environment ---------------------------
[ -n "$SUITES" ] || finish
venv=$TMP/venv
if ! "$PY" -m venv --system-site-packages "$venv" >"$TMP/venv.log" 2>&1; then
    fail "$PY -m venv failed (Debian: apt-get install python3-venv): $(tail -n 1 "$TMP/venv.log")"
    finish
fi
vpy=$venv/bin/python
if "$vpy" -m pip --disable-pip-version-check --no-input install --no-index \
        --no-build-isolation "$PKG" >"$TMP/pip.log" 2>&1; then
    pass
else
    fail "pip install --no-index --no-build-isolation failed: $(grep -i error "$TMP/pip.log" | head -n 2 | tr '\n' ' ')"
    finish
fi
where=$(cd "$TMP" && "$vpy" -c 'import rlstore.flask, rlstore.asgi, rlstore.django; print(rlstore.__file__)' 2>&1)
case $where in
"$venv"/lib/python*/site-packages/rlstore/__init__.py) pass ;;
*) fail "the installed rlstore is not the one imported: $where" ;;
esac
for s in $SUITES; do
    run_fw "installed package" "$vpy" "" "$s"
done
# ---- 3. types: py.typed and the hints, checked by mypy --strict ------------------
if "$PY" -m mypy --version >/dev/null 2>&1; then
    mypy_() { (cd "$TMP" && "$PY" -m mypy --strict --cache-dir="$TMP/mypy-cache" "$@") >"$TMP/mypy.out" 2>&1; }
    mypy_ --ignore-missing-imports "$PKG/rlstore" && pass ||
        fail "mypy --strict bindings/python/rlstore: $(head -n 3 "$TMP/mypy.out" | tr '\n' ' ')"
    # a typed program against the installed package: needs its py.typed
    cp "$PKG/tests/typecheck/usage.py" "$PKG/tests/typecheck/wrong.py" "$TMP/"
    mypy_ --python-executable "$vpy" usage.py && pass ||
        fail "mypy --strict of a typed program using the installed package: $(head -n 3 "$TMP/mypy.out" | tr '\n' ' ')"
    if mypy_ --python-executable "$vpy" wrong.py; then
        fail "mypy accepts retry_after (Optional[float]) as a float"
    else
        grep -q 'has type "Optional\[float\]", variable has type "float"' "$TMP/mypy.out" && pass ||
            fail "mypy on wrong.py: $(head -n 2 "$TMP/mypy.out" | tr '\n' ' ')"
    fi
else
    skip "python typing" "$PY has no mypy (Debian: apt-get install mypy)"
fi
left=$(cd "$PKG" && find . -name '*.egg-info' -o -name build -o -name dist -o -name .mypy_cache | head -n 3)
[ -z "$left" ] && pass || fail "the install left build artefacts in bindings/python: $left"

finish
