#!/bin/sh
# tests/install/test_version.sh - one version everywhere (docs/ABI.md,
# "Versions"): the header's RLS_VERSION_* macros, the Makefile's VERSION
# and SONAME_MAJOR, rls_version_string() and rls_version() of the built
# library, the tools' --version, rlstore.pc as make install writes it, the
# Python package (pyproject.toml and rlstore.__version__), the Node package, the .TH line of
# every manual page, the ABI document's version block and the upstream
# part of debian/changelog's latest entry.  Each disagreement is one
# failure naming the file.
. "$(dirname "$0")/suite.sh"

HDR=include/rlstore.h
macro() { sed -n "s/^#define RLS_VERSION_$1 \\([0-9]*\\)\$/\\1/p" "$HDR"; }
major=$(macro MAJOR)
V="$major.$(macro MINOR).$(macro PATCH)"
case $V in
*[!0-9.]* | .* | *..* | *.) setup_fail "cannot read RLS_VERSION_MAJOR/MINOR/PATCH from $HDR ('$V')" ;;
esac
# same NAME FOUND: FOUND must be $V
same() {
    [ "$2" = "$V" ] && pass || fail "$1 says '$2', the header's RLS_VERSION_* say $V"
}
same "$HDR RLS_VERSION_STRING" "$(sed -n 's/^#define RLS_VERSION_STRING "\(.*\)"$/\1/p' "$HDR")"
same "Makefile VERSION" "$(sed -n 's/^VERSION *:= *//p' Makefile)"
[ "$(sed -n 's/^SONAME_MAJOR *:= *//p' Makefile)" = "$major" ] && pass ||
    fail "Makefile SONAME_MAJOR differs from RLS_VERSION_MAJOR $major"
same bindings/python/pyproject.toml "$(sed -n 's/^version *= *"\(.*\)"$/\1/p' bindings/python/pyproject.toml)"
same bindings/node/package.json "$(sed -n 's/^  "version": "\(.*\)",$/\1/p' bindings/node/package.json)"
same bindings/python/rlstore/__init__.py "$(sed -n 's/^__version__ *= *"\(.*\)"$/\1/p' bindings/python/rlstore/__init__.py)"
same "docs/ABI.md version block" "$(sed -n 's/^#define RLS_VERSION_STRING "\(.*\)"$/\1/p' docs/ABI.md)"
same "docs/man/rls_version.3 synopsis" "$(sed -n 's/^#define RLS_VERSION_STRING "\(.*\)"$/\1/p' docs/man/rls_version.3)"
nman=0
for p in docs/man/*.[0-9]; do
    [ -f "$p" ] || continue
    nman=$((nman + 1))
    th=$(grep -m 1 '^\.TH ' "$p")
    same "$p .TH" "$(printf '%s\n' "$th" | sed -n 's/.*"rlstore \([0-9][^"]*\)".*/\1/p')"
done
[ "$nman" -ge 10 ] && pass || fail "only $nman manual pages in docs/man"
if [ -f debian/changelog ]; then
    # "rlstore (0.2.0-1) unstable; urgency=medium": upstream part before the last '-'
    dv=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' debian/changelog)
    same "debian/changelog (upstream part of $dv)" "${dv%-*}"
else
    fail "debian/changelog missing"
fi

# rlstore.pc as make install writes it
sed -e 's|@prefix@|/usr|' -e 's|@libdir@|${prefix}/lib|' -e 's|@includedir@|${prefix}/include|' \
    -e "s|@version@|$(sed -n 's/^VERSION *:= *//p' Makefile)|" rlstore.pc.in >"$TMP/rlstore.pc"
same "rlstore.pc (pkg-config --modversion)" "$(PKG_CONFIG_PATH=$TMP pkg-config --modversion rlstore 2>&1)"

# the built library and tools
cat >"$TMP/v.c" <<'C'
#include <rlstore.h>
#include <stdio.h>
int main(void)
{
    unsigned v = rls_version();
    printf("%s %u.%u.%u\n", rls_version_string(), v >> 16, (v >> 8) & 0xff, v & 0xff);
    return 0;
}
C
if [ -f "$BUILD/librlstore.so" ] &&
    $CC -std=c11 $SAN -Iinclude "$TMP/v.c" -o "$TMP/v" -L"$BUILD" -lrlstore -Wl,-rpath,"$BUILD_ABS" >"$TMP/cc.log" 2>&1; then
    same "rls_version_string() and rls_version()" "$("$TMP/v" | awk '$1 == $2 { print $1 }')"
else
    fail "cannot build a program against $BUILD/librlstore.so: $(head -n 2 "$TMP/cc.log" 2>/dev/null)"
fi
for t in rlctl rltop; do
    [ -x "$BUILD/$t" ] || { skip "$t --version" "$BUILD/$t is not built"; continue; }
    out=$("$BUILD/$t" --version 2>&1)
    case " $out " in
    *[!0-9.]"$V"[!0-9.]*) pass ;;
    *) fail "$BUILD/$t --version says '$out', expected $V" ;;
    esac
done
finish
