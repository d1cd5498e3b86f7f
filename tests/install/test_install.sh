#!/bin/sh
# tests/install/test_install.sh - `make install` and `make uninstall`.
#
#   1. make install DESTDIR=<staging> PREFIX=/usr puts every file where a
#      distribution would: header, shared library with its SONAME and links,
#      static library, rlstore.pc, rlctl (and rltop when it is built), the
#      manual pages with a .so stub per function, the bash completion;
#   2. a separate program compiles against the staged tree with
#      PKG_CONFIG_PATH/PKG_CONFIG_SYSROOT_DIR and `pkg-config --cflags --libs
#      rlstore`, and runs (LD_LIBRARY_PATH to the staged lib); the same with
#      `pkg-config --static` against librlstore.a, and fully static
#      (cc -static with exactly `pkg-config --static --cflags --libs`);
#   3. the installed rlctl has no build-tree rpath and works, and finds
#      the installed PostgreSQL driver module beside the library;
#   4. make uninstall removes every file install wrote;
#   5. the default PREFIX (/usr/local) and a multiarch LIBDIR.
#
# The inner make inherits the variables of an outer `make test` through
# MAKEFLAGS (so `make TUI_SRCS= test` installs without rltop).  Standalone:
# sh tests/install/test_install.sh  (BUILD=build-san for a SAN=1 build).
. "$(dirname "$0")/suite.sh"

VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)
MAJOR=$(sed -n 's/^SONAME_MAJOR *:= *//p' Makefile)
MAKE=${MAKE:-make}
stage=$TMP/stage
usr=$stage/usr

# ---- 1. install -------------------------------------------------------------
if ! $MAKE -s BUILD="$BUILD" install DESTDIR="$stage" PREFIX=/usr >"$TMP/install.log" 2>&1; then
    fail "make install DESTDIR=... PREFIX=/usr failed: $(grep -v '^make\[' "$TMP/install.log" | tail -n 3 | tr '\n' ' ')"
    finish
fi
pass

# file TYPE PATH: f regular file, l symlink
expect() {
    case $1 in
    f) [ -f "$2" ] && [ ! -L "$2" ] ;;
    l) [ -L "$2" ] ;;
    esac || { fail "not installed: ${2#"$stage"}"; return; }
    pass
}
expect f "$usr/include/rlstore.h"
expect f "$usr/lib/librlstore.so.$VERSION"
expect l "$usr/lib/librlstore.so.$MAJOR"
expect l "$usr/lib/librlstore.so"
expect f "$usr/lib/librlstore.a"
expect f "$usr/lib/rlstore/rlstore-pg.so"
expect f "$usr/lib/pkgconfig/rlstore.pc"
expect f "$usr/bin/rlctl"
expect f "$usr/share/bash-completion/completions/rlctl"
expect f "$usr/share/zsh/vendor-completions/_rlctl"
expect f "$usr/share/fish/vendor_completions.d/rlctl.fish"

[ "$(readlink "$usr/lib/librlstore.so.$MAJOR")" = "librlstore.so.$VERSION" ] &&
    [ "$(readlink "$usr/lib/librlstore.so")" = "librlstore.so.$MAJOR" ] && pass ||
    fail "library links: librlstore.so -> $(readlink "$usr/lib/librlstore.so")," \
         "librlstore.so.$MAJOR -> $(readlink "$usr/lib/librlstore.so.$MAJOR")"

soname=$(readelf -d "$usr/lib/librlstore.so.$VERSION" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "librlstore.so.$MAJOR" ] && pass ||
    fail "SONAME of the installed library is '$soname', expected librlstore.so.$MAJOR"

cmp -s include/rlstore.h "$usr/include/rlstore.h" && pass ||
    fail "installed rlstore.h differs from include/rlstore.h"
cmp -s include/rlstore_admin.h "$usr/include/rlstore_admin.h" && pass ||
    fail "installed rlstore_admin.h differs from include/rlstore_admin.h"

# modes: libraries, header, data 0644; programs 0755
modes_ok=1
for f in "$usr/include/rlstore.h" "$usr/lib/librlstore.so.$VERSION" "$usr/lib/librlstore.a" \
         "$usr/lib/rlstore/rlstore-pg.so" \
         "$usr/lib/pkgconfig/rlstore.pc" "$usr/share/bash-completion/completions/rlctl" \
         "$usr/share/zsh/vendor-completions/_rlctl" "$usr/share/fish/vendor_completions.d/rlctl.fish"; do
    m=$(stat -c %a "$f" 2>/dev/null)
    [ "$m" = 644 ] || { fail "mode of ${f#"$stage"} is $m, expected 644"; modes_ok=0; }
done
for f in "$usr"/bin/*; do
    m=$(stat -c %a "$f" 2>/dev/null)
    [ "$m" = 755 ] || { fail "mode of ${f#"$stage"} is $m, expected 755"; modes_ok=0; }
done
[ $modes_ok = 1 ] && pass

# manual pages: every page of docs/man in its section, and a .so stub per
# further function named in a section-3 page, resolving to an installed page
man_ok=1
for p in docs/man/*.[135]; do
    [ -f "$p" ] || continue
    b=${p##*/}
    s=${p##*.}
    if [ "$b" = rltop.1 ] && [ ! -f "$usr/bin/rltop" ]; then
        continue   # built without rltop
    fi
    cmp -s "$p" "$usr/share/man/man$s/$b" || { fail "manual page not installed: man$s/$b"; man_ok=0; }
done
[ $man_ok = 1 ] && pass
for s in 1 3 5; do
    ls "$usr/share/man/man$s/"*."$s" >/dev/null 2>&1 && pass || fail "no manual page in man$s"
done
[ -f "$usr/share/man/man3/librlstore.3" ] && pass || fail "librlstore(3) not installed"

nstub=0
stubs_ok=1
for f in "$usr"/share/man/man3/*.3; do
    first=$(head -n 1 "$f")
    case $first in
    .so\ *)
        nstub=$((nstub + 1))
        target=${first#.so }
        [ -f "$usr/share/man/$target" ] || { fail "${f#"$stage"}: '$first' names no installed page"; stubs_ok=0; } ;;
    esac
done
[ $stubs_ok = 1 ] && pass
[ "$nstub" -ge 40 ] && pass || fail "only $nstub .so stubs in man3; expected one per function (40 or more)"

# A stub renders as its page: groff resolves .so from the man directory.
if command -v groff >/dev/null 2>&1; then
    if (cd "$usr/share/man" && groff -man -Tutf8 -ww -P-c -P-b -P-u man3/rls_peek_at.3 2>&1) >"$TMP/stub.txt" &&
        grep -q 'rls_peek_at' "$TMP/stub.txt" && grep -q 'RETURN VALUE' "$TMP/stub.txt"; then
        pass
    else
        fail "man3/rls_peek_at.3 does not render as rls_check(3): $(head -c 200 "$TMP/stub.txt")"
    fi
else
    fail "groff is not installed (Debian/Ubuntu: apt-get install groff-base)"
fi
# man(1) finds a function by name in the staged tree.
if command -v man >/dev/null 2>&1; then
    # (man-db may name the stub or the page it points to)
    w=$(MANPATH="$usr/share/man" man -w rls_commit 2>/dev/null)
    case $w in
    "$usr/share/man/man3/rls_commit.3" | "$usr/share/man/man3/rls_reserve.3") pass ;;
    *) fail "MANPATH=<staged>/usr/share/man man -w rls_commit gives '$w'" ;;
    esac
fi

# ---- 2. a separate program, through pkg-config --------------------------------
export PKG_CONFIG_PATH="$usr/lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$stage"
v=$(pkg-config --modversion rlstore 2>&1)
[ "$v" = "$VERSION" ] && pass || fail "pkg-config --modversion rlstore: '$v', expected $VERSION"
p=$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=prefix rlstore 2>&1)
[ "$p" = /usr ] && pass || fail "rlstore.pc: prefix is '$p', expected /usr (not the staging directory)"
grep -q "$stage" "$usr/lib/pkgconfig/rlstore.pc" &&
    fail "rlstore.pc names the staging directory" || pass
pkg-config --print-requires-private rlstore 2>/dev/null | tr '\n' ' ' >"$TMP/req"
grep -q sqlite3 "$TMP/req" && grep -q yaml-0.1 "$TMP/req" && pass ||
    fail "rlstore.pc: Requires.private is '$(cat "$TMP/req")', expected sqlite3 yaml-0.1"

mkdir -p "$TMP/consumer"
cat >"$TMP/consumer/consumer.c" <<'EOF'
/* A program outside the source tree, built only through pkg-config. */
#include <rlstore.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    static const char rules[] =
        "version: 1\n"
        "actions:\n"
        "  signup:\n"
        "    key: ip\n"
        "    limits: [ { name: daily, limit: 2, window: 1d } ]\n";
    rls_db *db;
    rls_result res;
    int allowed = 0;

    if (argc != 2)
        return 2;
    if (rls_version() != RLS_VERSION_HEX ||
        strcmp(rls_version_string(), RLS_VERSION_STRING) != 0) {
        printf("version mismatch: header %s, library %s\n", RLS_VERSION_STRING,
               rls_version_string());
        return 1;
    }
    if (rls_open(&db, argv[1], NULL) != RLS_OK) {
        printf("open: %s\n", rls_errmsg(NULL));
        return 1;
    }
    if (rls_rules_apply(db, rules, strlen(rules), "consumer", NULL, NULL) != RLS_OK) {
        printf("apply: %s\n", rls_errmsg(db));
        rls_close(db);
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        if (rls_check(db, "signup", "192.0.2.1", 1, &res) != RLS_OK) {
            printf("check: %s\n", rls_errmsg(db));
            rls_close(db);
            return 1;
        }
        allowed += res.allowed;
    }
    rls_close(db);
    printf("librlstore %s: %d of 3 admitted\n", rls_version_string(), allowed);
    return allowed == 2 ? 0 : 1;
}
EOF
flags=$(pkg-config --cflags --libs rlstore 2>&1)
case $flags in
*"-I$usr/include"*"-L$usr/lib"*"-lrlstore"*) pass ;;
*) fail "pkg-config --cflags --libs rlstore: '$flags'" ;;
esac
# shellcheck disable=SC2086
if $CC -std=c99 -Wall -Wextra -Werror $SAN "$TMP/consumer/consumer.c" -o "$TMP/consumer/consumer" \
        $flags >"$TMP/cc.log" 2>&1; then
    pass
    LD_LIBRARY_PATH="$usr/lib" "$TMP/consumer/consumer" "$TMP/consumer/c.db" >"$TMP/run.log" 2>&1 &&
        grep -q "librlstore $VERSION: 2 of 3 admitted" "$TMP/run.log" && pass ||
        fail "the consumer program failed: $(head -c 300 "$TMP/run.log")"
    LD_LIBRARY_PATH="$usr/lib" ldd "$TMP/consumer/consumer" | grep -q "$usr/lib/librlstore.so.$MAJOR" &&
        pass || fail "the consumer program does not load $usr/lib/librlstore.so.$MAJOR"
else
    fail "cannot compile a program with \`pkg-config --cflags --libs rlstore\`: $(head -n 3 "$TMP/cc.log" | tr '\n' ' ')"
fi

# Static: librlstore.a plus what `pkg-config --static` adds (Libs.private and
# Requires.private) must be enough.
sflags=$(pkg-config --static --libs rlstore | sed 's/-lrlstore//')
# shellcheck disable=SC2086
if $CC -std=c99 -Wall -Wextra -Werror $SAN $(pkg-config --cflags rlstore) "$TMP/consumer/consumer.c" \
        -o "$TMP/consumer/consumer_static" "$usr/lib/librlstore.a" $sflags >"$TMP/cc.log" 2>&1; then
    if readelf -d "$TMP/consumer/consumer_static" | grep -q 'librlstore'; then
        fail "the static consumer still needs librlstore.so"
    elif "$TMP/consumer/consumer_static" "$TMP/consumer/s.db" >"$TMP/run.log" 2>&1; then
        pass
    else
        fail "the statically linked consumer failed: $(head -c 300 "$TMP/run.log")"
    fi
else
    fail "cannot link librlstore.a with \`pkg-config --static --libs rlstore\`: $(head -n 3 "$TMP/cc.log" | tr '\n' ' ')"
fi
# Fully static (cc -static): exactly the flags `pkg-config --static
# --libs rlstore` gives, no libpq among them (docs/ABI.md); the program
# has no dynamic section and runs on SQLite.  Not with the sanitizers
# (no static ASan runtime).
sall=$(pkg-config --static --cflags --libs rlstore 2>&1)
case " $sall " in
*" -lpq "*) fail "pkg-config --static --libs rlstore names libpq: $sall" ;;
*) pass ;;
esac
if [ -n "$SAN" ]; then
    skip "a fully static program" "sanitizers have no static runtime"
# shellcheck disable=SC2086
elif $CC -std=c99 -static "$TMP/consumer/consumer.c" -o "$TMP/consumer/consumer_full" $sall >"$TMP/cc.log" 2>&1; then
    if readelf -d "$TMP/consumer/consumer_full" 2>/dev/null | grep -q NEEDED; then
        fail "cc -static gave a program that needs shared libraries"
    elif "$TMP/consumer/consumer_full" "$TMP/consumer/full.db" >"$TMP/run.log" 2>&1 &&
        grep -q "librlstore $VERSION: 2 of 3 admitted" "$TMP/run.log"; then
        pass
    else
        fail "the fully static program failed: $(head -c 300 "$TMP/run.log")"
    fi
else
    fail "cc -static with \`pkg-config --static --cflags --libs rlstore\` failed: $(grep -v 'warning:' "$TMP/cc.log" | head -n 3 | tr '\n' ' ')"
fi
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

# ---- 3. the installed tools ---------------------------------------------------
for t in "$usr"/bin/*; do
    n=${t##*/}
    if readelf -d "$t" | grep -Eq '\((RPATH|RUNPATH)\)'; then
        fail "installed $n has an rpath: $(readelf -d "$t" | grep -E 'R(UN)?PATH' | tr -s ' ')"
    else
        pass
    fi
    out=$(LD_LIBRARY_PATH="$usr/lib" "$t" --version 2>&1)
    case $out in
    *"$VERSION"*) pass ;;
    *) fail "installed $n --version: '$out'" ;;
    esac
done
out=$(LD_LIBRARY_PATH="$usr/lib" "$usr/bin/rlctl" --db "$TMP/t.db" init examples/demo.yaml 2>&1) &&
    LD_LIBRARY_PATH="$usr/lib" "$usr/bin/rlctl" --db "$TMP/t.db" --quiet check signup 192.0.2.9 &&
    pass || fail "installed rlctl cannot init and check: $out"
# The installed library finds the installed driver module beside itself:
# a postgresql:// URI of a closed port gives libpq's error, not the
# driver's.
LD_LIBRARY_PATH="$usr/lib" "$usr/bin/rlctl" --db postgresql://rlstore@127.0.0.1:1/none \
    check signup 192.0.2.9 >/dev/null 2>"$TMP/pg.err"
! grep -q driver "$TMP/pg.err" && grep -Eqi 'connect|refused' "$TMP/pg.err" && pass ||
    fail "installed rlctl on a postgresql:// URI: $(head -c 300 "$TMP/pg.err")"
bash -c ". '$usr/share/bash-completion/completions/rlctl' && complete -p rlctl" >"$TMP/c.log" 2>&1 &&
    grep -q '_rlctl' "$TMP/c.log" && pass ||
    fail "the installed completion does not register for rlctl: $(cat "$TMP/c.log")"

# Installing again over an existing installation works (links replaced).
$MAKE -s BUILD="$BUILD" install DESTDIR="$stage" PREFIX=/usr >"$TMP/install2.log" 2>&1 && pass ||
    fail "a second make install fails: $(tail -n 2 "$TMP/install2.log" | tr '\n' ' ')"

# ---- 4. uninstall -------------------------------------------------------------
find "$stage" ! -type d | sort >"$TMP/installed"
if $MAKE -s BUILD="$BUILD" uninstall DESTDIR="$stage" PREFIX=/usr >"$TMP/uninstall.log" 2>&1; then
    pass
else
    fail "make uninstall failed: $(tail -n 2 "$TMP/uninstall.log" | tr '\n' ' ')"
fi
find "$stage" ! -type d | sort >"$TMP/left"
if [ -s "$TMP/left" ]; then
    fail "make uninstall left $(wc -l <"$TMP/left") file(s): $(head -n 3 "$TMP/left" | sed "s|$stage||" | tr '\n' ' ')"
else
    pass
fi
[ "$(wc -l <"$TMP/installed")" -ge 50 ] && pass ||
    fail "make install wrote only $(wc -l <"$TMP/installed") files"

# ---- 5. default PREFIX and a multiarch LIBDIR --------------------------------
stage2=$TMP/stage2
if $MAKE -s BUILD="$BUILD" install DESTDIR="$stage2" >"$TMP/i3.log" 2>&1 &&
    [ -f "$stage2/usr/local/include/rlstore.h" ] && [ -f "$stage2/usr/local/lib/librlstore.so.$VERSION" ] &&
    [ -f "$stage2/usr/local/bin/rlctl" ] && [ -f "$stage2/usr/local/share/man/man3/rls_open.3" ] &&
    grep -qx 'prefix=/usr/local' "$stage2/usr/local/lib/pkgconfig/rlstore.pc"; then
    pass
else
    fail "make install with the default PREFIX does not install under /usr/local: $(tail -n 2 "$TMP/i3.log" | tr '\n' ' ')"
fi
$MAKE -s BUILD="$BUILD" uninstall DESTDIR="$stage2" >/dev/null 2>&1
[ -z "$(find "$stage2" ! -type d)" ] && pass || fail "uninstall with the default PREFIX left files"

stage3=$TMP/stage3
ma=/usr/lib/x86_64-linux-gnu
if $MAKE -s BUILD="$BUILD" install DESTDIR="$stage3" PREFIX=/usr LIBDIR=$ma >"$TMP/i4.log" 2>&1 &&
    [ -f "$stage3$ma/librlstore.so.$VERSION" ] && [ -f "$stage3$ma/pkgconfig/rlstore.pc" ] &&
    [ "$(PKG_CONFIG_PATH="$stage3$ma/pkgconfig" pkg-config --variable=libdir rlstore)" = "$ma" ]; then
    pass
else
    fail "make install LIBDIR=$ma: library or rlstore.pc misplaced: $(tail -n 2 "$TMP/i4.log" | tr '\n' ' ')"
fi
$MAKE -s BUILD="$BUILD" uninstall DESTDIR="$stage3" PREFIX=/usr LIBDIR=$ma >/dev/null 2>&1
[ -z "$(find "$stage3" ! -type d)" ] && pass || fail "uninstall with LIBDIR=$ma left files"

finish
