#!/bin/sh
# tests/node/test_node.sh - the Node.js binding (bindings/node).
#
#   1. its node --test suites (bindings/node/test/*.test.js) against the
#      addon of this build ($BUILD/node/rlstore.node) with Express 4 on the
#      path, then the middleware and example suites again with Express 5;
#   2. `npm pack` of bindings/node and `npm install` of the tarball into a
#      fresh project, offline: the install script (build.js) compiles the
#      addon against this tree's library; the installed package is the one
#      loaded and it checks;
#   3. `npm install --install-links bindings/node` (a copy, not a link, so
#      nothing is built inside the source tree), offline, likewise;
#   4. an install that cannot find the library fails with one line;
#   and tsc --strict checks index.d.ts on bindings/node/test/types/use.ts
#   (typescript from the npm registry like Express; skipped without it).
# In make test's PostgreSQL pass (RLSTORE_TEST_PG set) it runs
# bindings/node/test/pg.test.js on a fresh schema instead.
#
# Express comes from the npm registry, installed once per build into
# $BUILD/node/express/<major> (not vendored: the binding itself has no
# dependency, and a cached copy keeps later runs offline).  When the
# registry cannot be reached and no copy is cached, the Express cases are
# skipped (one line; the suites count them as skipped, not passed) and the
# node:http + Connect-style cases still run.  Without node the suite skips
# with one line; with node's headers but no addon built it fails.
# Under SAN=1 the processes that load the addon run with the sanitizer
# runtimes preloaded and leak detection off (node's own allocations are
# not ours).
. "$(dirname "$0")/../install/suite.sh"

PKG=$ROOT/bindings/node
ADDON=$BUILD_ABS/node/rlstore.node

command -v node >/dev/null 2>&1 || skip_all 1 "node is not installed: the Node.js binding is not tested"
NODE_INC=$(node -p "require('path').resolve(process.execPath, '../../include/node')")
if [ ! -f "$ADDON" ]; then
    [ -f "$NODE_INC/node_api.h" ] || skip_all 1 "node's headers ($NODE_INC/node_api.h) are not installed: the addon is not built"
    setup_fail "$ADDON is not built (run make test-bins)"
fi

PRELOAD=
if [ -n "$SAN" ]; then
    PRELOAD="$($CC -print-file-name=libasan.so) $($CC -print-file-name=libubsan.so)"
fi
# node_ ARGS: node loading the addon (preloaded sanitizers under SAN=1).
node_() {
    LD_PRELOAD=$PRELOAD ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS} node "$@"
}

# npm_cached NAME CHECK PKG...: prints the node_modules of $BUILD/node/NAME
# holding PKG..., installing them from the npm registry when CHECK (a file
# in it) is missing; status 1 (and the reason in $TMP/npm.why) when it
# cannot.
npm_cached() {
    _d=$BUILD_ABS/node/$1
    _check=$2
    shift 2
    if [ ! -f "$_d/node_modules/$_check" ]; then
        if ! command -v npm >/dev/null 2>&1; then
            echo "npm is not installed" >"$TMP/npm.why"
            return 1
        fi
        rm -rf "$_d"
        mkdir -p "$_d"
        if ! npm install --prefix "$_d" --no-audit --no-fund --no-package-lock --fetch-retries=1 \
                "$@" >"$TMP/npm-cache.log" 2>&1; then
            rm -rf "$_d"
            echo "npm could not install $*: $(grep -m 1 -i 'err' "$TMP/npm-cache.log")" >"$TMP/npm.why"
            return 1
        fi
    fi
    echo "$_d/node_modules"
}
express_path() {
    npm_cached "express/$1" express/package.json "express@$1"
}

# run_tests WHAT NODE_PATH FILE...: node --test with the TAP reporter; its
# counts are this suite's, each failure one line.
run_tests() {
    _what=$1 _np=$2
    shift 2
    (cd "$TMP" && NODE_PATH=$_np RLSTORE_NODE_ADDON=$ADDON node_ --test --test-reporter=tap "$@") \
        >"$TMP/tap.out" 2>&1
    if ! grep -q '^# tests [0-9]' "$TMP/tap.out"; then
        fail "$_what: node --test did not run: $(tail -n 3 "$TMP/tap.out" | tr '\n' ' ')"
        return
    fi
    _p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$TMP/tap.out")
    _f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$TMP/tap.out")
    _c=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$TMP/tap.out")
    _s=$(sed -n 's/^# skipped \([0-9]*\)$/\1/p' "$TMP/tap.out")
    pass "${_p:-0}"
    grep '^ *not ok ' "$TMP/tap.out" | sed 's/^ *not ok [0-9]* - //' >"$TMP/failed.txt"
    _n=$(wc -l <"$TMP/failed.txt")
    if [ "$_n" -gt 0 ]; then
        fail_lines "$_what" "$TMP/failed.txt"
        [ "$_n" -gt 1 ] && fail_quiet $((_n - 1))
    fi
    # failures the runner counted without a "not ok" line of their own
    _extra=$((${_f:-0} + ${_c:-0} - _n))
    [ "$_extra" -gt 0 ] && fail_quiet "$_extra" && echo "FAIL: $_what: $_extra more failed or cancelled (see node --test)"
    if [ "${_s:-0}" -gt 0 ]; then
        # one line for them all (the same missing component)
        _i=1
        while [ "$_i" -lt "$_s" ]; do
            skip "$_what" >/dev/null
            _i=$((_i + 1))
        done
        skip "$_what: $_s test(s)" "$(sed -n 's/.* # SKIP //p' "$TMP/tap.out" | sort -u | head -n 1)"
    fi
    [ "${_p:-0}" -gt 0 ] || fail "$_what: no test passed"
}

# ---- PostgreSQL pass: the binding on a fresh schema, then done ---------------
# (the rest is the same whatever the backend: it ran in the SQLite pass)
if [ -n "$PG" ]; then
    pg_new_schema node || setup_fail "no schema of our own on RLSTORE_TEST_PG"
    pg_uri_of "$REPLY"
    RLSTORE_TEST_NODE_PG=$REPLY
    export RLSTORE_TEST_NODE_PG
    run_tests "node --test (PostgreSQL)" "" "$PKG/test/pg.test.js"
    finish
fi

# ---- 1. the suites, with Express 4 and 5 -----------------------------------
TESTS=$(ls "$PKG"/test/*.test.js | grep -v '/pg\.test\.js$')
if EX4=$(express_path 4); then :; else
    EX4=
    echo "skip Express 4: $(cat "$TMP/npm.why")"
fi
# shellcheck disable=SC2086
run_tests "node --test" "$EX4" $TESTS
if EX5=$(express_path 5); then
    run_tests "node --test (Express 5)" "$EX5" "$PKG/test/middleware.test.js" "$PKG/test/example.test.js"
else
    skip "Express 5" "$(cat "$TMP/npm.why")"
fi

# ---- TypeScript: index.d.ts accepts a program of the API, refuses misuse ----
# (typescript and the @types it needs from the npm registry, cached)
if TSM=$(npm_cached ts typescript/bin/tsc typescript@5 @types/node@20 @types/express@4); then
    mkdir -p "$TMP/ts/node_modules"
    ln -s "$PKG" "$TMP/ts/node_modules/rlstore"
    for e in "$TSM"/*; do ln -s "$e" "$TMP/ts/node_modules/"; done
    cp "$PKG/test/types/use.ts" "$TMP/ts/"
    echo '{"compilerOptions": {"strict": true, "noEmit": true, "module": "node16", "moduleResolution": "node16",
      "target": "es2020", "types": ["node"], "preserveSymlinks": true}, "files": ["use.ts"]}' >"$TMP/ts/tsconfig.json"
    if (cd "$TMP/ts" && node "$TSM/typescript/bin/tsc" -p .) >"$TMP/tsc.log" 2>&1; then
        pass
    else
        fail_lines "tsc --strict bindings/node/test/types/use.ts" "$TMP/tsc.log"
    fi
else
    skip "TypeScript declarations" "$(cat "$TMP/npm.why")"
fi

# ---- 2. npm pack, and npm install of the tarball, offline ----------------------
if ! command -v npm >/dev/null 2>&1; then
    skip_all 3 "npm is not installed: the package's install is not tested"
fi
npm_() { npm --offline --no-audit --no-fund --loglevel=error "$@"; }
# smoke DIR: the package installed in DIR is the one loaded, with its own
# addon, and it checks; prints what went wrong.
smoke() {
    (cd "$1" && RLSTORE_NODE_ADDON= node_ -e '
const path = require("path");
const rl = require("rlstore");
const where = require.resolve("rlstore");
const want = path.join(process.cwd(), "node_modules", "rlstore", "index.js");
if (where !== want) throw new Error("rlstore resolved to " + where);
const lim = rl.Limiter.open(path.join(process.cwd(), "t.db"));
lim.rules.apply("version: 1\nactions:\n  a:\n    key: string\n    limits: [ { name: m, algorithm: fixed_window, limit: 1, window: 1m } ]\n");
const a = lim.check("a", "k"), b = lim.check("a", "k");
if (!a.allowed || b.allowed) throw new Error("the limit does not hold");
try { lim.check("nope", "k"); throw new Error("no error"); } catch (e) { if (!(e instanceof rl.UnknownActionError)) throw e; }
if (rl.libraryVersion() !== require("rlstore/package.json").version) throw new Error("version " + rl.libraryVersion());
require("rlstore/middleware"); require("rlstore/flexible");
console.log("ok");
' 2>&1)
}
mkdir -p "$TMP/pack" "$TMP/app1" "$TMP/app2" "$TMP/app3"
VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)
if (cd "$TMP/pack" && npm_ pack "$PKG" >"$TMP/pack.log" 2>&1) && [ -f "$TMP/pack/rlstore-$VERSION.tgz" ]; then
    tar tzf "$TMP/pack/rlstore-$VERSION.tgz" | sort >"$TMP/files"
    missing=
    for f in package/package.json package/index.js package/index.d.ts package/build.js \
        package/src/nd.h package/src/nd_check.c package/middleware.js package/flexible.js; do
        grep -qx "$f" "$TMP/files" || missing="$missing $f"
    done
    stray=$(grep -E '^package/(test|build|node_modules)/' "$TMP/files" | head -n 3 | tr '\n' ' ')
    report "npm pack: the tarball's files" ${missing:+" lacks$missing"} ${stray:+" holds $stray"}
    if (cd "$TMP/app1" && echo '{"name":"app1","version":"1.0.0","private":true}' >package.json &&
        RLSTORE_INCLUDE=$ROOT/include RLSTORE_LIBDIR=$BUILD_ABS npm_ install "$TMP/pack/rlstore-$VERSION.tgz") \
        >"$TMP/i1.log" 2>&1; then
        out=$(smoke "$TMP/app1")
        [ "$out" = ok ] && [ -f "$TMP/app1/node_modules/rlstore/build/rlstore.node" ] && pass ||
            fail "npm install of the tarball: the installed package does not work: $out"
    else
        fail "npm install --offline rlstore-$VERSION.tgz failed: $(tail -n 3 "$TMP/i1.log" | tr '\n' ' ')"
    fi
else
    fail "npm pack bindings/node failed: $(tail -n 3 "$TMP/pack.log" | tr '\n' ' ')"
fi

# ---- 3. npm install --install-links of the folder -------------------------------
if (cd "$TMP/app2" && echo '{"name":"app2","version":"1.0.0","private":true}' >package.json &&
    RLSTORE_INCLUDE=$ROOT/include RLSTORE_LIBDIR=$BUILD_ABS npm_ install --install-links "$PKG") \
    >"$TMP/i2.log" 2>&1; then
    out=$(smoke "$TMP/app2")
    [ "$out" = ok ] && pass || fail "npm install --install-links bindings/node: the package does not work: $out"
    [ ! -L "$TMP/app2/node_modules/rlstore" ] && pass || fail "npm install --install-links made a link, not a copy"
else
    fail "npm install --offline --install-links bindings/node failed: $(tail -n 3 "$TMP/i2.log" | tr '\n' ' ')"
fi
left=$(cd "$PKG" && ls -d build node_modules ./*.tgz 2>/dev/null | head -n 3 | tr '\n' ' ')
[ -z "$left" ] && pass || fail "the installs left files in bindings/node: $left"

# ---- 4. an install without the library fails with a clear line --------------------
if (cd "$TMP/app3" && echo '{"name":"app3","version":"1.0.0","private":true}' >package.json &&
    RLSTORE_INCLUDE=$TMP/none RLSTORE_LIBDIR=$TMP/none npm_ install --install-links "$PKG") \
    >"$TMP/i3.log" 2>&1; then
    fail "npm install succeeded without librlstore"
else
    grep -q 'rlstore: .* failed to build the addon' "$TMP/i3.log" && pass ||
        fail "npm install without librlstore: no clear reason: $(tail -n 2 "$TMP/i3.log" | tr '\n' ' ')"
fi

finish
