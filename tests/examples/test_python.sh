#!/bin/sh
# tests/examples/test_python.sh - the Python binding (bindings/python).
#
#   1. its unittest suite (bindings/python/tests) with the system python3,
#      against the source tree and $BUILD/librlstore.so.0 (one test per
#      unittest case);
#   2. `pip install ./bindings/python` into a fresh virtual environment,
#      offline (--no-index: the in-tree build backend needs nothing), then
#      the same suite against the installed package, from elsewhere;
#   3. an editable install (pip install -e) and pip uninstall.
#
# Needs python3 with the venv module and pip (Debian: apt-get install
# python3 python3-venv).  With a library built by make SAN=1, python3 runs
# with the sanitizer runtime preloaded and leak detection off (the
# interpreter's own allocations are not ours).
. "$(dirname "$0")/../install/suite.sh"

PY=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1   # leave no __pycache__ in the source tree
LIBSO=$BUILD_ABS/librlstore.so.0
PKG=$ROOT/bindings/python

if ! command -v "$PY" >/dev/null 2>&1; then
    fail "python3 is not installed (Debian: apt-get install python3)"
    finish
fi
[ -f "$LIBSO" ] || { fail "$LIBSO is not built (run make)"; finish; }
export RLSTORE_LIB="$LIBSO"

# The interpreter cannot load an ASan library unless the runtime comes first.
if [ -n "$SAN" ]; then
    asan=$($CC -print-file-name=libasan.so)
    ubsan=$($CC -print-file-name=libubsan.so)
    export LD_PRELOAD="$asan $ubsan"
    export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi

# run_suite WHAT PYTHON [PYTHONPATH]: the unittest suite, one test per case;
# failures one line each.
run_suite() {
    _what=$1 _py=$2
    (cd "$TMP" && PYTHONPATH=${3:-} "$_py" - "$PKG/tests" <<'EOF'
import sys, unittest
suite = unittest.defaultTestLoader.discover(sys.argv[1], top_level_dir=sys.argv[1])
result = unittest.TestResult()
suite.run(result)
for test, tb in result.failures + result.errors:
    last = [l for l in tb.strip().splitlines() if l.strip()][-1]
    print("FAIL\t%s: %s" % (test.id(), last))
for test, why in result.skipped:
    print("FAIL\t%s: skipped (%s)" % (test.id(), why))
bad = len(result.failures) + len(result.errors) + len(result.skipped)
print("COUNTS\t%d\t%d" % (result.testsRun - bad, bad))
EOF
    ) >"$TMP/suite.out" 2>&1
    if ! grep -q '^COUNTS' "$TMP/suite.out"; then
        fail "$_what: the unittest suite did not run: $(tail -n 3 "$TMP/suite.out" | tr '\n' ' ')"
        return
    fi
    while IFS="$(printf '\t')" read -r tag a b; do
        case $tag in
        FAIL) fail "$_what: $a" ;;
        COUNTS)
            pass "$a"
            # the FAIL lines counted themselves
            [ "$b" -ge 0 ] ;;
        esac
    done <"$TMP/suite.out"
    n=$(sed -n 's/^COUNTS\t\([0-9]*\)\t.*/\1/p' "$TMP/suite.out")
    [ "${n:-0}" -ge 20 ] || fail "$_what: only ${n:-0} unittest cases passed; expected 20 or more"
}

# ---- 1. against the source tree ------------------------------------------------
run_suite "source tree" "$PY" "$PKG"

# ---- 2. pip install into a virtual environment ----------------------------------
venv=$TMP/venv
if ! "$PY" -m venv "$venv" >"$TMP/venv.log" 2>&1; then
    fail "python3 -m venv failed (Debian: apt-get install python3-venv): $(tail -n 1 "$TMP/venv.log")"
    finish
fi
pass
vpy=$venv/bin/python
pip_() { "$vpy" -m pip --disable-pip-version-check --no-input "$@"; }
if pip_ install --no-index "$PKG" >"$TMP/pip.log" 2>&1; then
    pass
else
    fail "pip install --no-index ./bindings/python failed: $(grep -i error "$TMP/pip.log" | head -n 2 | tr '\n' ' ')"
    finish
fi
# The installed package is the one imported (not the source tree), and it
# carries its metadata.
where=$(cd "$TMP" && "$vpy" -c 'import rlstore, importlib.metadata as m; print(rlstore.__file__); print(m.version("rlstore"))' 2>&1)
VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)
case $where in
"$venv"/lib/python*/site-packages/rlstore/__init__.py*"$VERSION") pass ;;
*) fail "the installed rlstore (version $VERSION) is not imported from the venv: $(printf '%s' "$where" | tr '\n' ' ')" ;;
esac
[ -f "$(dirname "$(printf '%s' "$where" | head -n 1)")/py.typed" ] && pass ||
    fail "the installed package lacks py.typed"
run_suite "installed package" "$vpy"

# ---- 3. editable install and uninstall ------------------------------------------
if pip_ uninstall -y rlstore >"$TMP/pip.log" 2>&1 &&
    ! (cd "$TMP" && "$vpy" -c 'import rlstore' 2>/dev/null); then
    pass
else
    fail "pip uninstall rlstore left an importable package"
fi
if pip_ install --no-index -e "$PKG" >"$TMP/pip.log" 2>&1; then
    where=$(cd "$TMP" && "$vpy" -c 'import rlstore; print(rlstore.__file__)' 2>&1)
    [ "$where" = "$PKG/rlstore/__init__.py" ] && pass ||
        fail "pip install -e: rlstore imported from '$where', not the source tree"
else
    fail "pip install -e ./bindings/python failed: $(grep -i error "$TMP/pip.log" | head -n 2 | tr '\n' ' ')"
fi
# The library cannot be found: a clear error, at first use, not at import.
out=$(cd "$TMP" && RLSTORE_LIB=/nonexistent/librlstore.so.0 "$vpy" -c '
import rlstore
try:
    rlstore.Limiter.open("x.db")
except rlstore.LibraryNotFound as e:
    print("LibraryNotFound:", e)
' 2>&1)
case $out in
"LibraryNotFound: cannot load librlstore (set RLSTORE_LIB"*) pass ;;
*) fail "a missing library is not reported as LibraryNotFound: $out" ;;
esac
# No build artefacts left in the source tree.
left=$(cd "$PKG" && find . -name '*.egg-info' -o -name build -o -name dist | head -n 3)
[ -z "$left" ] && pass || fail "the install left build artefacts in bindings/python: $left"

finish
