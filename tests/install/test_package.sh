#!/bin/sh
# tests/install/test_package.sh - the Debian packages (debian/).
#
#   1. `dpkg-buildpackage -us -uc -b` builds them offline from a copy of
#      the source tree (the files git knows, nothing of build/): librlstore0,
#      librlstore0-pg, librlstore-dev, rlstore-tools, python3-rlstore;
#   2. lintian reports no error (warnings are printed, not counted);
#   3. each package holds what it should (dpkg-deb -c) and depends on what
#      it should (dpkg-deb -f): librlstore0 not on libpq, the driver on
#      libpq and on the library of exactly its version, the tools on no
#      -dev package;
#   4. unpacked as dpkg would place them (dpkg -x into a scratch root):
#      the tools run, init and check a SQLite database; without
#      librlstore0-pg a postgresql:// URI says the driver is not installed,
#      with it the driver is found beside the library (the error is then
#      the server's); a program builds with the -dev package's pkg-config
#      file and runs; python3 imports the binding and checks;
#   5. with --install (make package-test, as root only): dpkg -i for real,
#      first the library and the tools, then the rest; the installed
#      programs run from /usr/bin with nothing set, the units pass
#      systemd-analyze verify; dpkg --purge removes every file.  The
#      packages must not be installed before (they are not ours to remove).
#
# Needs dpkg-buildpackage, debhelper, dh-python and lintian (tests/deps.sh
# lists them); without them it says so and skips.  The build takes about
# 40 s on two cores; under SAN=1 it is skipped (it builds its own plain
# objects, the same as in the plain pass).
. "$(dirname "$0")/suite.sh"

INSTALL=0
[ "${1:-}" = --install ] && INSTALL=1
NTESTS=23
missing=
for c in dpkg-buildpackage dh dh_python3 lintian dpkg-deb; do
    command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
[ -z "$missing" ] || skip_all $NTESTS "Debian packages: missing$missing (apt-get install debhelper dh-python lintian)"
[ -z "$SAN" ] || [ $INSTALL = 1 ] || skip_all $NTESTS "Debian packages: built in the plain pass (they ignore SAN=1)"
if ! dpkg-checkbuilddeps >"$TMP/bd.log" 2>&1; then
    skip_all $NTESTS "Debian packages: $(head -n 1 "$TMP/bd.log")"
fi
VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)
DV=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' debian/changelog)
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# ---- 1. build ---------------------------------------------------------------------
src=$TMP/src/rlstore-$VERSION
mkdir -p "$src"
if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # committed and new files alike, as they are in the working tree
    git ls-files -co --exclude-standard -z | xargs -0 tar cf - 2>"$TMP/tar.err" | tar xf - -C "$src"
else
    tar cf - --exclude='./build*' . | tar xf - -C "$src"
fi
[ -f "$src/debian/rules" ] || setup_fail "cannot copy the source tree: $(head -n 1 "$TMP/tar.err")"
rm -rf "$src"/build "$src"/build-*
start=$(date +%s)
# (not the variables of an outer make: SAN=1 or BUILD would reach debian/rules)
if (cd "$src" && unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES &&
        DEB_BUILD_OPTIONS="parallel=2 ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc -b) >"$TMP/build.log" 2>&1; then
    pass
    echo "note: dpkg-buildpackage -us -uc -b took $(($(date +%s) - start)) s"
else
    fail_lines "dpkg-buildpackage -us -uc -b failed" "$TMP/build.log"
    finish
fi
deb() { echo "$TMP/src/$1_${DV}_$2.deb"; }
LIB=$(deb librlstore0 "$ARCH")
PG=$(deb librlstore0-pg "$ARCH")
DEV=$(deb librlstore-dev "$ARCH")
TOOLS=$(deb rlstore-tools "$ARCH")
PY=$(deb python3-rlstore all)
for f in "$LIB" "$PG" "$DEV" "$TOOLS" "$PY"; do
    [ -f "$f" ] && pass || fail "not built: ${f##*/}"
done

# ---- 2. lintian ------------------------------------------------------------------
lintian "$TMP/src/rlstore_${DV}_$ARCH.changes" >"$TMP/lintian.log" 2>&1
grep '^E: ' "$TMP/lintian.log" >"$TMP/lintian.err"
if [ -s "$TMP/lintian.err" ]; then
    fail_lines "lintian" "$TMP/lintian.err"
else
    pass
fi
grep '^W: ' "$TMP/lintian.log" | sed 's/^/note: lintian: /'

# ---- 3. contents and dependencies ------------------------------------------------
# has DEB PATH...: every PATH (as dpkg-deb -c shows it, without ./) is in DEB
has() {
    d=$1
    shift
    dpkg-deb -c "$d" | awk '{ print $6 }' | sed 's|^\./||' >"$TMP/list"
    for p in "$@"; do
        grep -qx "$p" "$TMP/list" || { fail "${d##*/} lacks $p"; return; }
    done
    pass
}
L=usr/lib/$MA
has "$LIB" "$L/librlstore.so.$VERSION"
has "$PG" "$L/rlstore/rlstore-pg.so"
has "$DEV" usr/include/rlstore.h "$L/librlstore.a" "$L/pkgconfig/rlstore.pc" \
    usr/share/man/man3/rls_open.3.gz
has "$TOOLS" usr/bin/rlctl usr/bin/rltop usr/share/man/man1/rlctl.1.gz \
    usr/share/man/man5/rlstore.yaml.5.gz lib/systemd/system/rlstore-hold.service \
    lib/systemd/system/rlstore-metrics.service lib/systemd/system/rlstore-metrics.timer
has "$PY" usr/lib/python3/dist-packages/rlstore/__init__.py usr/lib/python3/dist-packages/rlstore/_ffi.py
dep() { dpkg-deb -f "$1" Depends; }
case "$(dep "$LIB")" in
*libpq*) fail "librlstore0 depends on libpq: $(dep "$LIB")" ;;
*libsqlite3-0*) pass ;;
*) fail "librlstore0's Depends: $(dep "$LIB")" ;;
esac
case "$(dep "$PG")" in
*"librlstore0 (= $DV)"*libpq5*) pass ;;
*) fail "librlstore0-pg's Depends: '$(dep "$PG")', expected librlstore0 (= $DV) and libpq5" ;;
esac
case "$(dep "$TOOLS")" in
*-dev* | *libpq*) fail "rlstore-tools' Depends: $(dep "$TOOLS")" ;;
*librlstore0*) pass ;;
*) fail "rlstore-tools' Depends: $(dep "$TOOLS")" ;;
esac
case "$(dep "$PY")" in
*librlstore0*) pass ;;
*) fail "python3-rlstore's Depends: $(dep "$PY")" ;;
esac

# ---- 4. unpacked into a scratch root ---------------------------------------------
# run ROOT CMD...: CMD with ROOT's libraries and Python packages first
run() {
    r=$1
    shift
    LD_LIBRARY_PATH="$r/$L" PYTHONPATH="$r/usr/lib/python3/dist-packages" "$@"
}
URI=postgresql://rlstore@127.0.0.1:1/none   # a closed port: libpq's own error
R=$TMP/root
for d in "$LIB" "$TOOLS"; do dpkg -x "$d" "$R"; done
out=$(run "$R" "$R/usr/bin/rlctl" --version 2>&1)
case $out in *"$VERSION"*) pass ;; *) fail "unpacked rlctl --version: '$out'" ;; esac
out=$(run "$R" "$R/usr/bin/rltop" --version 2>&1)
case $out in *"$VERSION"*) pass ;; *) fail "unpacked rltop --version: '$out'" ;; esac
run "$R" "$R/usr/bin/rlctl" --db "$TMP/u.db" init examples/demo.yaml >"$TMP/u.log" 2>&1 &&
    run "$R" "$R/usr/bin/rlctl" --db "$TMP/u.db" --quiet check signup 192.0.2.7 >>"$TMP/u.log" 2>&1 &&
    pass || fail_lines "unpacked rlctl on SQLite" "$TMP/u.log"
run "$R" "$R/usr/bin/rlctl" --db "$URI" check signup 192.0.2.7 >/dev/null 2>"$TMP/nodrv.err"
grep -q "PostgreSQL driver not installed: no $R/$L/rlstore/rlstore-pg.so nor /$L/rlstore/rlstore-pg.so" "$TMP/nodrv.err" &&
    pass || fail "without librlstore0-pg: '$(head -c 300 "$TMP/nodrv.err")'"
dpkg -x "$PG" "$R"
run "$R" "$R/usr/bin/rlctl" --db "$URI" check signup 192.0.2.7 >/dev/null 2>"$TMP/drv.err"
if ! grep -q driver "$TMP/drv.err" && grep -Eqi 'connect|refused' "$TMP/drv.err"; then
    pass
else
    fail "with librlstore0-pg: '$(head -c 300 "$TMP/drv.err")' (expected a connection error)"
fi
dpkg -x "$DEV" "$R"
cat >"$TMP/c.c" <<'C'
#include <rlstore.h>
#include <stdio.h>
int main(void) { puts(rls_version_string()); return 0; }
C
flags=$(PKG_CONFIG_PATH="$R/$L/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$R" pkg-config --cflags --libs rlstore 2>&1)
# shellcheck disable=SC2086
if $CC "$TMP/c.c" -o "$TMP/c" $flags >"$TMP/cc.log" 2>&1 && [ "$(run "$R" "$TMP/c")" = "$VERSION" ]; then
    pass
else
    fail "a program built with the -dev package's pkg-config ($flags): $(head -n 2 "$TMP/cc.log")"
fi
dpkg -x "$PY" "$R"
# (the package and the library it loads; the binding's own behaviour is
# tests/examples/test_python.sh's)
out=$(cd "$TMP" && run "$R" python3 -c '
import rlstore
print(rlstore.__file__, rlstore.library_version())
' 2>&1)
case $out in
"$R/usr/lib/python3/dist-packages/rlstore/__init__.py $VERSION") pass ;;
*) fail "python3-rlstore unpacked: '$(printf '%s' "$out" | tr '\n' '|')'" ;;
esac

# ---- 5. installed for real -------------------------------------------------------
if [ $INSTALL = 0 ]; then
    finish
fi
if [ "$(id -u)" != 0 ]; then
    skip "dpkg -i" "needs root"
    finish
fi
for p in librlstore0 librlstore0-pg librlstore-dev rlstore-tools python3-rlstore; do
    if dpkg -s "$p" >/dev/null 2>&1; then
        skip "dpkg -i" "$p is already installed: not ours to remove"
        finish
    fi
done
purge() { dpkg --purge python3-rlstore librlstore-dev rlstore-tools librlstore0-pg librlstore0 >>"$TMP/purge.log" 2>&1; }
trap 'purge' EXIT
if dpkg -i "$LIB" "$TOOLS" >"$TMP/dpkg1.log" 2>&1; then
    pass
else
    fail_lines "dpkg -i librlstore0 rlstore-tools" "$TMP/dpkg1.log"
    finish
fi
(cd "$TMP" && env -i PATH=/usr/bin:/bin rlctl --db i.db init "$ROOT/examples/demo.yaml" &&
    env -i PATH=/usr/bin:/bin rlctl --db i.db --quiet check signup 192.0.2.8) >"$TMP/i.log" 2>&1 &&
    pass || fail_lines "installed rlctl on SQLite" "$TMP/i.log"
[ "$(command -v rlctl)" = /usr/bin/rlctl ] || echo "note: rlctl on PATH is $(command -v rlctl)"
env -i PATH=/usr/bin:/bin rlctl --db "$URI" check signup 192.0.2.8 >/dev/null 2>"$TMP/i1.err"
# (beside the library as the dynamic linker found it: /lib/... or /usr/lib/...)
grep -q "PostgreSQL driver not installed: no /[a-z/]*$MA/rlstore/rlstore-pg.so" "$TMP/i1.err" && pass ||
    fail "installed, without librlstore0-pg: '$(head -c 300 "$TMP/i1.err")'"
if dpkg -i "$PG" "$DEV" "$PY" >"$TMP/dpkg2.log" 2>&1; then
    pass
else
    fail_lines "dpkg -i librlstore0-pg librlstore-dev python3-rlstore" "$TMP/dpkg2.log"
fi
env -i PATH=/usr/bin:/bin rlctl --db "$URI" check signup 192.0.2.8 >/dev/null 2>"$TMP/i2.err"
! grep -q driver "$TMP/i2.err" && grep -Eqi 'connect|refused' "$TMP/i2.err" && pass ||
    fail "installed, with librlstore0-pg: '$(head -c 300 "$TMP/i2.err")'"
# shellcheck disable=SC2046
$CC "$TMP/c.c" -o "$TMP/ci" $(pkg-config --cflags --libs rlstore) >"$TMP/cci.log" 2>&1 &&
    [ "$(env -i "$TMP/ci")" = "$VERSION" ] && pass ||
    fail "a program against the installed -dev package: $(head -n 2 "$TMP/cci.log")"
out=$(cd "$TMP" && env -i PATH=/usr/bin:/bin python3 -c 'import rlstore; print(rlstore.library_version())' 2>&1)
[ "$out" = "$VERSION" ] && pass || fail "installed python3-rlstore: '$out'"
if command -v systemd-analyze >/dev/null 2>&1; then
    systemd-analyze verify --man=no /lib/systemd/system/rlstore-hold.service \
        /lib/systemd/system/rlstore-metrics.service /lib/systemd/system/rlstore-metrics.timer \
        >"$TMP/verify.log" 2>&1 && [ ! -s "$TMP/verify.log" ] && pass ||
        fail_lines "systemd-analyze verify of the installed units" "$TMP/verify.log"
fi
dpkg -L librlstore0 librlstore0-pg librlstore-dev rlstore-tools python3-rlstore 2>/dev/null |
    while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done >"$TMP/files"
trap - EXIT
purge && pass || fail_lines "dpkg --purge" "$TMP/purge.log"
left=$(while IFS= read -r f; do [ -e "$f" ] && echo "$f"; done <"$TMP/files" | head -n 3)
[ -s "$TMP/files" ] && [ -z "$left" ] && pass || fail "dpkg --purge left: $left"
ldconfig -p | grep -q 'librlstore\.so' && fail "ldconfig still knows librlstore after the purge" || pass
finish
